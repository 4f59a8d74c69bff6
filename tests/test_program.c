/* Program build, binary cache and prebuilt binaries (compiles kernels). */
#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hs_test_cl.h"

static const char *const SRC[] = {"hs_common.h", "selftest.cl"};

typedef struct fixture {
  hs_inventory inv;
  hs_dev cpu;
  const hs_dev *dev;
  hs__dev_settings settings; /* a binary cache of the test's own */
  hs_ctx ctx;
  cl_command_queue q;
  char dir[64];
} fixture;

static void setup(fixture *f) {
  snprintf(f->dir, sizeof f->dir, "/tmp/hs-cache-XXXXXX");
  cr_assert(mkdtemp(f->dir));
  f->cpu = *hs_test_pick_device(&f->inv, HS_DEVICE_CPU);
  f->settings = (hs__dev_settings){.cache_dir = f->dir};
  f->cpu.settings = &f->settings;
  f->dev = &f->cpu;
  cr_assert_eq(hs__ctx_create(f->dev, 1, &f->ctx), HS_OK);
  cr_assert_eq(hs__queue_create(&f->ctx, f->dev, 0, &f->q), HS_OK);
}

static void teardown(fixture *f) {
  clReleaseCommandQueue(f->q);
  hs__ctx_release(&f->ctx);
  hs__inventory_release(&f->inv);
  DIR *d = opendir(f->dir);
  struct dirent *e;
  char p[512];
  while (d && (e = readdir(d)))
    if (e->d_name[0] != '.') {
      snprintf(p, sizeof p, "%s/%s", f->dir, e->d_name);
      unlink(p);
    }
  if (d) closedir(d);
  rmdir(f->dir);
}

/* The single cache entry's path. */
static void cache_entry(const fixture *f, char *out, size_t len) {
  DIR *d = opendir(f->dir);
  struct dirent *e;
  int n = 0;
  while ((e = readdir(d)))
    if (strstr(e->d_name, ".bin")) {
      snprintf(out, len, "%s/%s", f->dir, e->d_name);
      n++;
    }
  closedir(d);
  cr_assert_eq(n, 1, "expected one cache entry, found %d", n);
}

/* Run axpy through a built program and check the result. */
static void check_axpy(fixture *f, cl_program prog) {
  cl_kernel k;
  cr_assert_eq(hs__kernel_create(prog, "hs_selftest_axpy", f->dev, &k), HS_OK);
  enum { N = 1000 };
  float x[N], y[N];
  for (int i = 0; i < N; i++) {
    x[i] = (float)i;
    y[i] = 1.0f;
  }
  cl_int err;
  cl_mem bx = clCreateBuffer(f->ctx.ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, sizeof x, x, &err);
  cl_mem by = clCreateBuffer(f->ctx.ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, sizeof y, y, &err);
  float a = 2.0f;
  cl_uint n = N;
  clSetKernelArg(k, 0, sizeof a, &a);
  clSetKernelArg(k, 1, sizeof bx, &bx);
  clSetKernelArg(k, 2, sizeof by, &by);
  clSetKernelArg(k, 3, sizeof n, &n);
  size_t g = 1024;
  cr_assert_eq(clEnqueueNDRangeKernel(f->q, k, 1, NULL, &g, NULL, 0, NULL, NULL), CL_SUCCESS);
  cr_assert_eq(clEnqueueReadBuffer(f->q, by, CL_TRUE, 0, sizeof y, y, 0, NULL, NULL), CL_SUCCESS);
  for (int i = 0; i < N; i++) cr_assert_float_eq(y[i], 2.0f * (float)i + 1.0f, 0.0f);
  clReleaseMemObject(bx);
  clReleaseMemObject(by);
  clReleaseKernel(k);
}

Test(program, second_build_is_a_faster_cache_hit) {
  fixture f;
  setup(&f);
  cl_program p1, p2;
  bool hit = true;
  double t0 = hs__now();
  cr_assert_eq(hs__program_build(&f.ctx, f.dev, SRC, 2, "", &p1, &hit), HS_OK, "%s", hs_last_error());
  double t_miss = hs__now() - t0;
  cr_expect_not(hit);
  t0 = hs__now();
  cr_assert_eq(hs__program_build(&f.ctx, f.dev, SRC, 2, "", &p2, &hit), HS_OK, "%s", hs_last_error());
  double t_hit = hs__now() - t0;
  cr_expect(hit);
  cr_expect_lt(t_hit, t_miss, "cache hit %.3f s vs build %.3f s", t_hit, t_miss);
  check_axpy(&f, p2);
  /* Other options are another key: a miss. */
  cl_program p3;
  cr_assert_eq(hs__program_build(&f.ctx, f.dev, SRC, 2, "-DHS_UNUSED=1", &p3, &hit), HS_OK);
  cr_expect_not(hit);
  clReleaseProgram(p1);
  clReleaseProgram(p2);
  clReleaseProgram(p3);
  teardown(&f);
}

static void corrupt_and_rebuild(long offset_from_end, bool cut) {
  fixture f;
  setup(&f);
  cl_program p;
  bool hit;
  cr_assert_eq(hs__program_build(&f.ctx, f.dev, SRC, 2, "", &p, &hit), HS_OK);
  clReleaseProgram(p);
  char path[512];
  cache_entry(&f, path, sizeof path);
  if (cut) {
    cr_assert_eq(truncate(path, 100), 0);
  } else {
    FILE *fp = fopen(path, "r+b");
    fseek(fp, -offset_from_end, SEEK_END);
    int c = fgetc(fp);
    fseek(fp, -offset_from_end, SEEK_END);
    fputc(c ^ 0x5a, fp);
    fclose(fp);
  }
  cr_assert_eq(hs__program_build(&f.ctx, f.dev, SRC, 2, "", &p, &hit), HS_OK, "%s", hs_last_error());
  cr_expect_not(hit, "a damaged entry must not be used");
  check_axpy(&f, p);
  clReleaseProgram(p);
  /* The rebuilt entry replaced the damaged one. */
  cr_assert_eq(hs__program_build(&f.ctx, f.dev, SRC, 2, "", &p, &hit), HS_OK);
  cr_expect(hit);
  clReleaseProgram(p);
  teardown(&f);
}

Test(program, corrupted_cache_entry_is_rebuilt) { corrupt_and_rebuild(50, false); }
Test(program, truncated_cache_entry_is_rebuilt) { corrupt_and_rebuild(0, true); }

Test(program, binary_round_trip) {
  fixture f;
  setup(&f);
  cl_program p, q;
  cr_assert_eq(hs__program_build(&f.ctx, f.dev, SRC, 2, "", &p, NULL), HS_OK);
  char path[128];
  snprintf(path, sizeof path, "%s/selftest.pocl.bin", f.dir);
  cr_assert_eq(hs__program_save_binary(p, f.dev, path), HS_OK, "%s", hs_last_error());
  clReleaseProgram(p);
  cr_assert_eq(hs__program_from_binary_file(&f.ctx, f.dev, path, "", &q), HS_OK, "%s",
               hs_last_error());
  check_axpy(&f, q);
  clReleaseProgram(q);

  /* A file that is not a binary for this device is refused clearly. */
  FILE *fp = fopen(path, "wb");
  fputs("not a program binary", fp);
  fclose(fp);
  cr_expect_eq(hs__program_from_binary_file(&f.ctx, f.dev, path, "", &q), HS_ERR_FORMAT);
  cr_expect(strstr(hs_last_error(), path) != NULL, "%s", hs_last_error());
  cr_expect_eq(hs__program_from_binary_file(&f.ctx, f.dev, "/nonexistent/x.bin", "", &q),
               HS_ERR_IO);
  teardown(&f);
}

Test(program, build_failure_reports_the_log) {
  fixture f;
  setup(&f);
  cl_program p;
  hs_status st = hs__program_build(&f.ctx, f.dev, SRC, 2, "-DHS_SELFTEST_BROKEN", &p, NULL);
  cr_expect_eq(st, HS_ERR_BUILD);
  cr_expect(strstr(hs_last_error(), "undeclared_name") != NULL, "%s", hs_last_error());
  cr_expect(strstr(hs_last_error(), f.dev->info.name) != NULL);
  cr_expect_eq(hs__program_build(&f.ctx, f.dev, (const char *const[]){"nope.cl"}, 1, "", &p,
                                 NULL),
               HS_ERR_NOT_FOUND);
  teardown(&f);
}

/* A speed-up the device's compiler rejects is dropped and the build
 * retried: the program builds, runs, and the note says what happened and
 * why. Speed-ups it accepts stay, with no note. A program broken without
 * them still fails. */
Test(program, rejected_speedups_are_dropped_and_said) {
  fixture f;
  setup(&f);
  cl_program p = NULL;
  hs_build_note note;
  cr_assert_eq(hs__program_build_fast(&f.ctx, f.dev, SRC, 2, "", "-DHS_SELFTEST_BROKEN", &p,
                                      &note),
               HS_OK, "%s", hs_last_error());
  cr_expect(note.without_speedups);
  cr_expect(strstr(note.why, "undeclared_name") != NULL, "%s", note.why);
  cr_expect_null(strchr(note.why, '\n'));
  cl_kernel k;
  cr_expect_eq(hs__kernel_create(p, "hs_selftest_axpy", f.dev, &k), HS_OK);
  clReleaseKernel(k);
  cr_expect_neq(hs__kernel_create(p, "hs_selftest_broken", f.dev, &k), HS_OK,
                "the program kept the rejected variant");
  clReleaseProgram(p);

  cr_assert_eq(hs__program_build_fast(&f.ctx, f.dev, SRC, 2, "", "-DHS_UNUSED=2", &p, &note),
               HS_OK, "%s", hs_last_error());
  cr_expect_not(note.without_speedups);
  cr_expect_str_eq(note.why, "");
  clReleaseProgram(p);

  cr_expect_eq(hs__program_build_fast(&f.ctx, f.dev, SRC, 2, "-DHS_SELFTEST_BROKEN",
                                      "-DHS_UNUSED=3", &p, &note),
               HS_ERR_BUILD);
  cr_expect_not(note.without_speedups);
  teardown(&f);
}
