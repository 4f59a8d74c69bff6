/* hetsage place: where the sampler and trainer go on this machine, and why. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

static void usage(FILE *f) {
  fprintf(f,
          "usage: hetsage place [--board NAME|FILE] [--topology-bytes N]\n"
          "                     [--feature-bytes N] [--row-bytes N]\n"
          "                     [--sampler X] [--trainer X] [--host-cores N] "
          "[--json]\n"
          "\n"
          "Discover this machine's devices, apply a board profile and print the\n"
          "placement plan with the reason for every choice.\n"
          "\n"
          "  --board B           profile name (boards/B.ini along the search\n"
          "                      path) or a path to a .ini file; default %s\n"
          "  --topology-bytes N  size of the graph topology (CSR), e.g. 512M\n"
          "  --feature-bytes N   size of the feature matrix, e.g. 2G\n"
          "  --row-bytes N       size of one feature row (sizes the caches)\n"
          "  --sampler X         put the sampler on X: an inventory index, a\n"
          "                      type (cpu, gpu, accelerator), a profile device\n"
          "                      id or part of a device name; beats\n"
          "                      HETSAGE_SAMPLER, which beats the profile\n"
          "  --trainer X         the same for the trainer (HETSAGE_TRAINER)\n"
          "  --host-cores N      host cores to plan for (default: hwloc's count)\n"
          "  --json              machine-readable output on stdout\n"
          "  -h, --help\n"
          "\n"
          "Sizes take K, M, G or T suffixes (powers of 1024). Unknown sizes are\n"
          "left out of the fit checks. Profiles are documented in "
          "boards/README.md.\n",
          HS_BOARD_DEFAULT);
}

static void human_bytes(uint64_t b, char *buf, size_t len) {
  const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  double v = (double)b;
  int u = 0;
  while (v >= 1024.0 && u < 5) {
    v /= 1024.0;
    u++;
  }
  snprintf(buf, len, u ? "%.1f %s" : "%.0f %s", v, units[u]);
}

typedef struct place_args {
  const char *board;
  uint64_t topology, features, row;
  const char *sampler, *trainer;
  int host_cores;
  bool json;
} place_args;

/* "--name value" or "--name=value"; advances *i past what it used. */
static const char *option_value(int argc, char **argv, int *i,
                                const char *name, bool *bad) {
  size_t n = strlen(name);
  const char *a = argv[*i];
  if (strncmp(a, name, n) != 0) return NULL;
  if (a[n] == '=') return a + n + 1;
  if (a[n] != '\0') return NULL;
  if (*i + 1 >= argc) {
    *bad = true;
    return NULL;
  }
  return argv[++*i];
}

static int bad_size(const char *opt, const char *v) {
  return cli_usage_error("place", "%s '%s': expected a byte count with an optional K, M, G, T "
                         "suffix (powers of 1024)", opt, v);
}

static int parse_args(int argc, char **argv, place_args *a) {
  for (int i = 1; i < argc; i++) {
    bool missing = false;
    const char *v;
    uint64_t u;
    if (strcmp(argv[i], "--json") == 0) {
      a->json = true;
    } else if ((v = option_value(argc, argv, &i, "--board", &missing))) {
      a->board = v;
    } else if ((v = option_value(argc, argv, &i, "--sampler", &missing))) {
      a->sampler = v;
    } else if ((v = option_value(argc, argv, &i, "--trainer", &missing))) {
      a->trainer = v;
    } else if ((v = option_value(argc, argv, &i, "--topology-bytes", &missing))) {
      if (!cli_parse_size(v, &a->topology)) return bad_size("--topology-bytes", v);
    } else if ((v = option_value(argc, argv, &i, "--feature-bytes", &missing))) {
      if (!cli_parse_size(v, &a->features)) return bad_size("--feature-bytes", v);
    } else if ((v = option_value(argc, argv, &i, "--row-bytes", &missing))) {
      if (!cli_parse_size(v, &a->row)) return bad_size("--row-bytes", v);
    } else if ((v = option_value(argc, argv, &i, "--host-cores", &missing))) {
      if (!cli_opt_u64("place", "--host-cores", v, 1, 65536, &u)) return 2;
      a->host_cores = (int)u;
    } else if (missing) {
      return cli_usage_error("place", "%s needs a value", argv[i]);
    } else {
      return cli_usage_error("place", "unknown option '%s'", argv[i]);
    }
    if (missing) return cli_usage_error("place", "%s needs a value", argv[i]);
  }
  return 0;
}

static const char *type_name(hs_device_type t) { return hs_device_type_name(t); }

static void print_role(const char *role, const hs_role_plan *r,
                       const hs_runtime *rt) {
  const hs_device_info *d = hs_runtime_device(rt, r->device);
  char b[32];
  human_bytes(r->budget_bytes, b, sizeof b);
  printf("%-10s device %d (%s), %s '%s'%s", role, r->device, d->selector,
         type_name(d->type), d->name, d->simulator ? " (simulator)" : "");
  if (r->profile_id[0]) printf(" [device.%s]", r->profile_id);
  if (r->cores) printf("; sub-device of %" PRIu32 " compute unit(s)", r->cores);
  else printf("; whole device");
  printf("; budget %s\n", b);
  if (r->binary)
    printf("%-10s prebuilt binary %s%s\n", "", r->binary,
           access(r->binary, R_OK) == 0 ? "" : " (MISSING: not readable)");
}

static void print_human(const place_args *a, const hs_board_profile *prof,
                        const hs_runtime *rt, int n,
                        const hs_placement *pl) {
  char x[32], y[32], z[32];
  printf("board     %s (%s)\n", hs_board_profile_name(prof),
         hs_board_profile_path(prof));
  if (hs_board_profile_description(prof)[0])
    printf("          %s\n", hs_board_profile_description(prof));
  for (int i = 0; i < n; i++) {
    const hs_device_info *d = hs_runtime_device(rt, i);
    human_bytes(d->global_mem_bytes, x, sizeof x);
    printf("%-10s %d (%s): %s '%s', %" PRIu32 " compute unit(s), %s%s%s\n",
           i ? "" : "devices", i, d->selector, type_name(d->type), d->name,
           d->compute_units, x, d->simulator ? ", simulator" : "",
           d->available ? "" : " (unavailable)");
  }
  human_bytes(a->topology, x, sizeof x);
  human_bytes(a->features, y, sizeof y);
  human_bytes(a->row, z, sizeof z);
  printf("dataset   topology %s, features %s, row %s\n",
         a->topology ? x : "unknown", a->features ? y : "unknown",
         a->row ? z : "unknown");
  printf("\n");
  print_role("sampler", &pl->sampler, rt);
  print_role("trainer", &pl->trainer, rt);
  printf("%-10s %s: blocks go %s\n", "link", hs_role_link_name(pl->link),
         pl->shared_context ? "device to device" : "through the host");
  printf("%-10s %s, depth %d\n", "pipeline", hs_pipeline_mode_name(pl->pipeline),
         pl->depth);
  human_bytes(pl->host_budget_bytes, x, sizeof x);
  printf("%-10s %d core(s), %d kept for host threads, %d gather thread(s), "
         "budget %s\n",
         "host", pl->host_cores, pl->host_reserved_cores, pl->gather_threads,
         pl->host_budget_bytes ? x : "none");
  human_bytes(pl->cache_host_bytes, y, sizeof y);
  printf("%-10s trainer %" PRIu64 " row(s), host %s, fill %s\n", "cache",
         pl->cache_trainer_rows, y, hs_cache_fill_name(pl->cache_fill));
  printf("%-10s %s\n", "zero-copy", pl->zero_copy ? "yes" : "no");
  printf("\nwhy:\n");
  for (size_t i = 0; i < pl->reason_count; i++)
    printf("  %-9s %s\n", pl->reasons[i].topic, pl->reasons[i].text);
}

static void json_role(const char *name, const hs_role_plan *r,
                      const hs_runtime *rt) {
  const hs_device_info *d = hs_runtime_device(rt, r->device);
  printf("  \"%s\": {\"device\": %d, \"type\": \"%s\", \"name\": ", name,
         r->device, type_name(d->type));
  cli_json_string(stdout, d->name);
  printf(", \"profile_id\": ");
  if (r->profile_id[0]) cli_json_string(stdout, r->profile_id);
  else printf("null");
  printf(", \"cores\": %" PRIu32 ", \"budget_bytes\": %" PRIu64
         ", \"binary\": ",
         r->cores, r->budget_bytes);
  if (r->binary) cli_json_string(stdout, r->binary);
  else printf("null");
  if (r->binary)
    printf(", \"binary_readable\": %s", access(r->binary, R_OK) == 0 ? "true" : "false");
  printf("},\n");
}

static void print_json(const place_args *a, const hs_board_profile *prof,
                       const hs_runtime *rt, int n,
                       const hs_placement *pl) {
  printf("{\n  \"board\": {\"name\": ");
  cli_json_string(stdout, hs_board_profile_name(prof));
  printf(", \"path\": ");
  cli_json_string(stdout, hs_board_profile_path(prof));
  printf(", \"description\": ");
  cli_json_string(stdout, hs_board_profile_description(prof));
  printf("},\n  \"dataset\": {\"topology_bytes\": %" PRIu64
         ", \"feature_bytes\": %" PRIu64 ", \"feature_row_bytes\": %" PRIu64
         "},\n",
         a->topology, a->features, a->row);
  printf("  \"devices\": [");
  for (int i = 0; i < n; i++) {
    printf("%s\n    {\"index\": %d, \"type\": \"%s\", \"name\": ", i ? "," : "",
           i, type_name(hs_runtime_device(rt, i)->type));
    cli_json_string(stdout, hs_runtime_device(rt, i)->name);
    printf(", \"compute_units\": %" PRIu32 ", \"global_mem_bytes\": %" PRIu64
           ", \"available\": %s}",
           hs_runtime_device(rt, i)->compute_units, hs_runtime_device(rt, i)->global_mem_bytes,
           hs_runtime_device(rt, i)->available ? "true" : "false");
  }
  printf("\n  ],\n");
  json_role("sampler", &pl->sampler, rt);
  json_role("trainer", &pl->trainer, rt);
  printf("  \"link\": \"%s\",\n  \"shared_context\": %s,\n"
         "  \"zero_copy\": %s,\n",
         hs_role_link_name(pl->link), pl->shared_context ? "true" : "false",
         pl->zero_copy ? "true" : "false");
  printf("  \"pipeline\": {\"mode\": \"%s\", \"depth\": %d},\n",
         hs_pipeline_mode_name(pl->pipeline), pl->depth);
  printf("  \"host\": {\"cores\": %d, \"reserved_cores\": %d, "
         "\"gather_threads\": %d, \"budget_bytes\": %" PRIu64 "},\n",
         pl->host_cores, pl->host_reserved_cores, pl->gather_threads,
         pl->host_budget_bytes);
  printf("  \"cache\": {\"trainer_rows\": %" PRIu64 ", \"host_bytes\": %" PRIu64
         ", \"fill\": \"%s\"},\n",
         pl->cache_trainer_rows, pl->cache_host_bytes,
         hs_cache_fill_name(pl->cache_fill));
  printf("  \"reasons\": [");
  for (size_t i = 0; i < pl->reason_count; i++) {
    printf("%s\n    {\"topic\": ", i ? "," : "");
    cli_json_string(stdout, pl->reasons[i].topic);
    printf(", \"text\": ");
    cli_json_string(stdout, pl->reasons[i].text);
    printf("}");
  }
  printf("\n  ]\n}\n");
}

int cmd_place(int argc, char **argv) {
  if (cli_wants_help(argc, argv)) {
    usage(stdout);
    return 0;
  }
  place_args a = {0};
  int rc = parse_args(argc, argv, &a);
  if (rc) return rc;

  hs_board_profile *prof = NULL;
  hs_runtime *rt = NULL;
  hs_placement *pl = NULL;
  rc = 1;
  hs_status st = hs_board_profile_load_from(cli_settings()->boards_dir, a.board, &prof);
  if (st != HS_OK) {
    cli_report("place", "cannot load the board profile", st);
    goto done;
  }
  st = hs_runtime_open(&rt, NULL);
  if (st != HS_OK) {
    cli_report("place", "device discovery failed", st);
    goto done;
  }
  int n = hs_runtime_device_count(rt);
  hs_placement_request rq;
  hs_placement_request_init(&rq);
  /* The inventory as an array of its own stride (hs_runtime_device). */
  rq.devices = hs_runtime_device(rt, 0);
  rq.device_count = n;
  rq.profile = prof;
  rq.topology_bytes = a.topology;
  rq.feature_bytes = a.features;
  rq.feature_row_bytes = a.row;
  rq.host_cores = a.host_cores ? a.host_cores : hs_runtime_host_cores(rt);
  rq.sampler = a.sampler;
  rq.sampler_source = "--sampler";
  rq.trainer = a.trainer;
  rq.trainer_source = "--trainer";
  hs_placement_request_settings(&rq, hs_runtime_settings(rt));
  st = hs_placement_make(&rq, &pl);
  if (st != HS_OK) {
    cli_report("place", "placement failed", st);
    goto done;
  }
  if (a.json) print_json(&a, prof, rt, n, pl);
  else print_human(&a, prof, rt, n, pl);
  rc = 0;
done:
  hs_placement_free(pl);
  hs_runtime_close(rt);
  hs_board_profile_free(prof);
  return rc;
}
