/* hetsage kernels: the OpenCL programs, as sources for vendors' offline
 * compilers (emit) or as one bundle of binaries for [binaries] (build). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cli.h"

static void usage(FILE *f) {
  fprintf(f,
          "usage: hetsage kernels list\n"
          "       hetsage kernels emit --out DIR [--device D]\n"
          "       hetsage kernels build --out FILE [--device D] [--roles R]\n"
          "\n"
          "The OpenCL programs hetsage runs, for devices that cannot compile at run\n"
          "time (FPGAs, locked-down accelerators):\n"
          "\n"
          "  list    the programs' names\n"
          "  emit    write each program's complete source (every included file inlined)\n"
          "          as DIR/<program>.cl, and DIR/manifest.json: per program its file,\n"
          "          kernels, build options for the device, and the roles that need it,\n"
          "          with the hetsage version. Feed them to the vendor's offline compiler\n"
          "          and name each binary in the board profile as\n"
          "          [binaries] <device id>.<program> = FILE.\n"
          "  build   build every program the roles need on the device and write them\n"
          "          into one bundle FILE, named in the board profile as\n"
          "          [binaries] <device id> = FILE.\n"
          "\n"
          "  --device D   inventory index (hetsage info), type (cpu, gpu, accelerator)\n"
          "               or part of the device name; default: device 0\n"
          "  --roles R    comma-separated: sampler, trainer, bringup, or all\n"
          "               (default sampler,trainer)\n"
          "  --out P      output folder (emit) or file (build)\n"
          "  -h, --help\n"
          "\n"
          "Exit status: 0 done, 1 failed, 2 bad usage.\n");
}

/* An inventory index, a type name (the first device of that type), or a
 * case-insensitive part of a device name; -1 when nothing matches. */
static int find_device(const hs_runtime *rt, int n, const char *spec) {
  char *end = NULL;
  long v = strtol(spec, &end, 10);
  if (*spec && end && !*end) return v >= 0 && v < n ? (int)v : -1;
  for (int i = 0; i < n; i++)
    if (strcasecmp(spec, hs_device_type_name(hs_runtime_device(rt, i)->type)) == 0 ||
        (strcasecmp(spec, "fpga") == 0 && hs_runtime_device(rt, i)->type == HS_DEVICE_ACCELERATOR))
      return i;
  size_t sl = strlen(spec);
  for (int i = 0; i < n; i++)
    for (const char *p = hs_runtime_device(rt, i)->name; *p; p++)
      if (strncasecmp(p, spec, sl) == 0) return i;
  return -1;
}

static bool parse_roles(const char *s, unsigned *out) {
  char buf[128];
  snprintf(buf, sizeof buf, "%s", s);
  *out = 0;
  char *save = NULL;
  for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
    if (strcmp(t, "sampler") == 0) *out |= HS_KERNELS_SAMPLER;
    else if (strcmp(t, "trainer") == 0) *out |= HS_KERNELS_TRAINER;
    else if (strcmp(t, "bringup") == 0) *out |= HS_KERNELS_BRINGUP;
    else if (strcmp(t, "all") == 0) *out |= HS_KERNELS_ALL;
    else return false;
  }
  return *out != 0;
}

int cmd_kernels(int argc, char **argv) {
  if (cli_wants_help(argc, argv)) {
    usage(stdout);
    return 0;
  }
  if (argc < 2) return cli_usage_error("kernels", "expected list, emit or build");
  const char *verb = argv[1], *out = NULL, *device = "0";
  unsigned roles = HS_KERNELS_SAMPLER | HS_KERNELS_TRAINER;
  for (int i = 2; i < argc; i++) {
    const char *a = argv[i];
    if (i + 1 >= argc && (!strcmp(a, "--out") || !strcmp(a, "--device") || !strcmp(a, "--roles")))
      return cli_usage_error("kernels", "%s needs a value", a);
    if (strcmp(a, "--out") == 0) out = argv[++i];
    else if (strcmp(a, "--device") == 0) device = argv[++i];
    else if (strcmp(a, "--roles") == 0) {
      if (!parse_roles(argv[++i], &roles))
        return cli_usage_error("kernels", "--roles '%s': expected sampler, trainer, bringup "
                               "or all, comma-separated", argv[i]);
    } else
      return cli_usage_error("kernels", "unknown option '%s'", a);
  }
  if (strcmp(verb, "list") == 0) {
    for (int i = 0; i < hs_program_count(); i++) printf("%s\n", hs_program_name(i));
    return 0;
  }
  if (strcmp(verb, "emit") != 0 && strcmp(verb, "build") != 0)
    return cli_usage_error("kernels", "unknown action '%s' (list, emit or build)", verb);
  if (!out) return cli_usage_error("kernels", "%s needs --out", verb);

  hs_runtime *rt = NULL;
  hs_status st = hs_runtime_open(&rt, NULL);
  if (st != HS_OK) {
    cli_report("kernels", "opening the runtime", st);
    return 1;
  }
  int n = hs_runtime_device_count(rt);
  int d = find_device(rt, n, device);
  if (d < 0) {
    hs_runtime_close(rt);
    return cli_usage_error("kernels", "--device '%s' names no device (hetsage info lists %d)",
                           device, n);
  }
  char names[512] = "";
  if (strcmp(verb, "emit") == 0) {
    st = hs_kernels_emit(rt, d, out);
    if (st == HS_OK)
      printf("wrote %d programs for device %d (%s) and manifest.json to %s\n",
             hs_program_count(), d, hs_runtime_device(rt, d)->name, out);
  } else {
    st = hs_kernels_build(rt, d, roles, out, names, sizeof names);
    if (st == HS_OK) printf("wrote %s for device %d (%s): %s\n", out, d, hs_runtime_device(rt, d)->name, names);
  }
  if (st != HS_OK) cli_report("kernels", verb, st);
  hs_runtime_close(rt);
  return st == HS_OK ? 0 : 1;
}
