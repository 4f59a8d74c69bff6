/* The program registry, `hetsage kernels emit` and bundles of prebuilt
 * binaries (compiles kernels). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/hs_json.h"
#include "cl_fixture.h"
#include "hetsage.h"
#include "hs_programs.h"
#include "hs_test_util.h"
#include "tool_run.h"

/* Whether the ';'-separated `list` holds exactly the names of `want`. */
static bool same_kernels(const char *list, const char *const *want, char *why, size_t cap) {
  int n_want = 0, n_got = 0;
  for (; want[n_want]; n_want++)
    if (!strstr(list, want[n_want])) {
      snprintf(why, cap, "the program lacks kernel %s", want[n_want]);
      return false;
    }
  char *copy = strdup(list), *save = NULL;
  for (char *t = strtok_r(copy, ";", &save); t; t = strtok_r(NULL, ";", &save), n_got++) {
    bool listed = false;
    for (int i = 0; want[i]; i++) listed |= strcmp(want[i], t) == 0;
    if (!listed) {
      snprintf(why, cap, "kernel %s is not in the registry's list", t);
      free(copy);
      return false;
    }
  }
  free(copy);
  snprintf(why, cap, "%d kernels, registry %d", n_got, n_want);
  return n_got == n_want;
}

static unsigned char *read_all(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  cr_assert_not_null(f, "cannot open %s", path);
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  unsigned char *buf = malloc((size_t)n + 1);
  cr_assert_not_null(buf);
  cr_assert_eq(fread(buf, 1, (size_t)n, f), (size_t)n);
  buf[n] = '\0';
  fclose(f);
  *len = (size_t)n;
  return buf;
}

static void write_all(const char *path, const void *data, size_t len) {
  FILE *f = fopen(path, "wb");
  cr_assert_not_null(f, "cannot write %s", path);
  cr_assert_eq(fwrite(data, 1, len, f), len);
  fclose(f);
}

static void kernel_names(cl_program p, char *buf, size_t cap) {
  size_t got = 0;
  cr_assert_eq(clGetProgramInfo(p, CL_PROGRAM_KERNEL_NAMES, cap, buf, &got), CL_SUCCESS);
}

Test(kernels, registry_lists_every_kernel_of_each_program, .timeout = 900) {
  cl_fixture f;
  clf_open(&f);
  for (int i = 0; i < HS_PROG_COUNT_; i++) {
    const hs__program_def *d = hs__program_def_of((hs_prog)i);
    cl_program p;
    cr_assert_eq(hs__program_get(&f.ctx, &f.dev, (hs_prog)i, &p), HS_OK, "%s", hs_last_error());
    char names[4096], why[128];
    kernel_names(p, names, sizeof names);
    cr_expect(same_kernels(names, d->kernels, why, sizeof why), "%s: %s (%s)", d->name, why,
              names);
    cr_expect_eq(hs__program_find(d->name), i);
    clReleaseProgram(p);
  }
  cr_expect_eq(hs__program_find("nope"), -1);
  clf_close(&f);
}

Test(kernels, roles_need_their_programs) {
  cr_expect(hs__program_needed(HS_PROG_SAMPLE, HS_PROG_ROLE_SAMPLER, NULL));
  cr_expect_not(hs__program_needed(HS_PROG_TRAIN_SAGE, HS_PROG_ROLE_SAMPLER, NULL));
  cr_expect(hs__program_needed(HS_PROG_TRAIN_SAGE, HS_PROG_ROLE_TRAINER, NULL));
  cr_expect(hs__program_needed(HS_PROG_TRAIN_SAGE, HS_PROG_ROLE_TRAINER, "sage"));
  cr_expect_not(hs__program_needed(HS_PROG_TRAIN_SAGE, HS_PROG_ROLE_TRAINER, "other"));
  cr_expect(hs__program_needed(HS_PROG_GATHER, HS_PROG_ROLE_TRAINER, NULL));
  cr_expect_not(hs__program_needed(HS_PROG_PROBE, HS_PROG_ROLE_TRAINER, NULL));
  cr_expect(hs__program_needed(HS_PROG_PROBE, HS_PROG_ROLE_BRINGUP, NULL));
  cr_expect_eq(hs_program_count(), HS_PROG_COUNT_);
  cr_expect_str_eq(hs_program_name(HS_PROG_SAMPLE), "sample");
  cr_expect_null(hs_program_name(-1));
  cr_expect_null(hs_program_name(HS_PROG_COUNT_));
}

/* What `kernels emit` writes is built by OpenCL alone, with the options of
 * the manifest: nothing of hetsage's is needed to compile it. */
Test(kernels, emitted_sources_compile_stand_alone, .timeout = 900) {
  hs_runtime *rt;
  hs_status st = hs_runtime_open(&rt, NULL);
  if (st == HS_ERR_NO_DEVICE) cr_skip_test("no OpenCL device");
  cr_assert_eq(st, HS_OK, "%s", hs_last_error());
  cl_fixture f;
  clf_open(&f);
  char *dir = tu_mkdtemp();
  cr_assert_eq(hs_kernels_emit(rt, f.dev.info.index, dir), HS_OK, "%s", hs_last_error());
  char path[1024];
  snprintf(path, sizeof path, "%s/manifest.json", dir);
  hs_json *m = NULL;
  cr_assert_eq(hs__json_parse_file(path, &m), HS_OK, "%s", hs_last_error());
  cr_expect_str_eq(hs__json_text(m, "hetsage", ""), hs_version());
  const hs_json *dev = hs__json_get(m, "device");
  cr_expect_str_eq(hs__json_text(dev, "name", ""), f.dev.info.name);
  const hs_json *progs = hs__json_get(m, "programs");
  cr_assert(progs && progs->type == HS_JSON_ARRAY);
  cr_expect_eq(progs->n, (size_t)HS_PROG_COUNT_);
  for (size_t i = 0; i < progs->n; i++) {
    const hs_json *p = &progs->items[i];
    const char *name = hs__json_text(p, "program", "");
    int id = hs__program_find(name);
    cr_assert_geq(id, 0, "manifest names an unknown program '%s'", name);
    char want_opts[256];
    hs__program_options((hs_prog)id, &f.dev.info, want_opts, sizeof want_opts);
    cr_expect_str_eq(hs__json_text(p, "options", "?"), want_opts);
    snprintf(path, sizeof path, "%s/%s", dir, hs__json_text(p, "file", ""));
    size_t text_len;
    char *text = (char *)read_all(path, &text_len);
    cl_int err;
    const char *src = text;
    cl_program prog = clCreateProgramWithSource(f.ctx.ctx, 1, &src, NULL, &err);
    cr_assert_eq(err, CL_SUCCESS);
    err = clBuildProgram(prog, 1, &f.dev.id, hs__json_text(p, "options", ""), NULL, NULL);
    char log[2048] = "";
    if (err != CL_SUCCESS)
      clGetProgramBuildInfo(prog, f.dev.id, CL_PROGRAM_BUILD_LOG, sizeof log - 1, log, NULL);
    cr_expect_eq(err, CL_SUCCESS, "%s does not build stand-alone:\n%s", path, log);
    if (err == CL_SUCCESS) {
      char names[4096], why[128];
      kernel_names(prog, names, sizeof names);
      const hs_json *ks = hs__json_get(p, "kernels");
      cr_assert(ks && ks->type == HS_JSON_ARRAY);
      const char *want[64] = {0};
      for (size_t k = 0; k < ks->n && k < 63; k++) want[k] = ks->items[k].string;
      cr_expect(same_kernels(names, want, why, sizeof why), "%s: %s", name, why);
    }
    clReleaseProgram(prog);
    free(text);
  }
  hs__json_free(m);
  tu_rmtree(dir);
  clf_close(&f);
  hs_runtime_close(rt);
}

/* A device that does not compile, given a bundle: programs come from it,
 * those it lacks are refused by name, and a damaged bundle is refused. */
Test(kernels, bundles_hold_programs_for_devices_that_do_not_compile, .timeout = 900) {
  cl_fixture f;
  clf_open(&f);
  char *dir = tu_mkdtemp(), path[1024], cache[1024];
  snprintf(path, sizeof path, "%s/sampler.hsk", dir);
  char names[256];
  cr_assert_eq(hs__bundle_build(&f.ctx, &f.dev, HS_PROG_ROLE_SAMPLER, NULL, path, names,
                                sizeof names),
               HS_OK, "%s", hs_last_error());
  cr_expect_str_eq(names, "sample");
  cr_expect(hs__bundle_is(path));
  bool has = false;
  cr_assert_eq(hs__bundle_has(path, "sample", &has), HS_OK, "%s", hs_last_error());
  cr_expect(has);
  cr_assert_eq(hs__bundle_has(path, "train_sage", &has), HS_OK);
  cr_expect_not(has);

  /* An empty binary cache, so that only the bundle can serve. */
  snprintf(cache, sizeof cache, "%s/cache", dir);
  hs__dev_settings empty = {.cache_dir = cache};
  hs__prog_files files = {.no_compiler = true, .bundle = path};
  hs_dev dev = f.dev;
  dev.progs = &files;
  dev.settings = &empty;
  cr_expect_not(hs__dev_compiles(&dev));
  cl_program p = NULL;
  cr_assert_eq(hs__program_get(&f.ctx, &dev, HS_PROG_SAMPLE, &p), HS_OK, "%s", hs_last_error());
  cl_kernel k;
  cr_expect_eq(hs__kernel_create(p, "hs_sample_count", &dev, &k), HS_OK, "%s", hs_last_error());
  clReleaseKernel(k);
  clReleaseProgram(p);
  cr_expect_eq(hs__program_get(&f.ctx, &dev, HS_PROG_GATHER, &p), HS_ERR_UNSUPPORTED);
  cr_expect(strstr(hs_last_error(), "program 'gather'"), "%s", hs_last_error());
  cr_expect_eq(hs__prog_files_check(&files, HS_PROG_ROLE_SAMPLER, NULL, "x"), HS_OK, "%s",
               hs_last_error());
  cr_expect_eq(hs__prog_files_check(&files, HS_PROG_ROLE_TRAINER, NULL, "Dev X"),
               HS_ERR_PLACEMENT);
  cr_expect(strstr(hs_last_error(), "Dev X") && strstr(hs_last_error(), "program 'gather'"),
            "%s", hs_last_error());

  /* One flipped byte: refused, naming the file. */
  size_t len = 0;
  unsigned char *data = read_all(path, &len);
  data[len / 2] ^= 0x5a;
  write_all(path, data, len);
  cr_expect_eq(hs__program_get(&f.ctx, &dev, HS_PROG_SAMPLE, &p), HS_ERR_CHECKSUM);
  cr_expect(strstr(hs_last_error(), path), "%s", hs_last_error());
  /* Not a bundle at all (one program's binary named as if it were). */
  write_all(path, "not a bundle", 12);
  cr_expect_eq(hs__program_get(&f.ctx, &dev, HS_PROG_SAMPLE, &p), HS_ERR_FORMAT);
  cr_expect(strstr(hs_last_error(), "<device>.<program>"), "%s", hs_last_error());
  free(data);
  tu_rmtree(dir);
  clf_close(&f);
}

Test(kernels, command_line) {
  char out[4096], args[1024];
  cr_expect_eq(tool_run("", "kernels list", out, sizeof out), 0, "%s", out);
  cr_expect(strstr(out, "sample\n") && strstr(out, "train_sage\n"), "%s", out);
  cr_expect_eq(tool_run("", "kernels emit", out, sizeof out), 2, "%s", out);
  cr_expect(strstr(out, "--out"), "%s", out);
  cr_expect_eq(tool_run("", "kernels build --out x --roles nobody", out, sizeof out), 2);
  cr_expect_eq(tool_run("", "kernels build --out x --device no-such-device", out, sizeof out), 2,
               "%s", out);
  char *dir = tu_mkdtemp();
  snprintf(args, sizeof args, "kernels build --device cpu --roles sampler --out %s/s.hsk", dir);
  int rc = tool_run("", args, out, sizeof out);
  if (strstr(out, "no OpenCL") || strstr(out, "no device")) cr_skip_test("%s", out);
  cr_expect_eq(rc, 0, "%s", out);
  cr_expect(strstr(out, ": sample"), "%s", out);
  cr_expect_eq(tool_run("", "kernels --help", out, sizeof out), 0);
  tu_rmtree(dir);
}
