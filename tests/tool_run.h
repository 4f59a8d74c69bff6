/* Running the hetsage command from a test: $HS_HETSAGE (set by
 * tests/meson.build) with arguments, its output captured. Header-only. */
#ifndef HS_TEST_TOOL_RUN_H
#define HS_TEST_TOOL_RUN_H

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "hetsage/runtime.h"

/* The hetsage command executes itself again on another OpenBLAS kernel set
 * where OpenBLAS fell back to an older one on this CPU (hs_blas_reexec):
 * run from a test, it keeps this process's set, so that what it computes
 * compares bit for bit with what the test computes itself. An `env` that
 * sets or unsets OPENBLAS_CORETYPE comes after, and wins. */
static inline void tool_blas_env(char *buf, size_t cap) {
  const char *k = hs_blas_kernels();
  snprintf(buf, cap, "%s%s", k ? "OPENBLAS_CORETYPE=" : "", k ? k : "");
}

/* Run "env $HS_HETSAGE args" (env: "VAR=value ..." or ""), stdout and
 * stderr into `out` (cap bytes, may be NULL). Returns the exit status. */
static inline int tool_run(const char *env, const char *args, char *out, size_t cap) {
  const char *exe = getenv("HS_HETSAGE");
  if (!exe) cr_skip_test("HS_HETSAGE (the hetsage executable) is not set");
  char cmd[4096], blas[96];
  tool_blas_env(blas, sizeof blas);
  snprintf(cmd, sizeof cmd, "%s %s %s %s 2>&1", blas, env, exe, args);
  FILE *p = popen(cmd, "r");
  cr_assert_not_null(p, "cannot run %s", cmd);
  size_t n = 0;
  char buf[4096];
  size_t got;
  while ((got = fread(buf, 1, sizeof buf, p)) > 0) {
    if (out && n + 1 < cap) {
      size_t take = got < cap - 1 - n ? got : cap - 1 - n;
      memcpy(out + n, buf, take);
      n += take;
    }
  }
  if (out && cap) out[n] = '\0';
  int rc = pclose(p);
  cr_assert(WIFEXITED(rc), "%s: did not exit", cmd);
  return WEXITSTATUS(rc);
}

/* A path for a scratch file of this test process. */
static inline void tool_tmp(char *buf, size_t cap, const char *name);
static inline char *tool_slurp(const char *path);

/* As tool_run, with standard output into `out` and standard error into
 * `err` apart (each cap bytes, may be NULL). */
static inline int tool_run2(const char *env, const char *args, char *out, size_t cap, char *err,
                            size_t errcap) {
  char errpath[256], full[4096];
  tool_tmp(errpath, sizeof errpath, "stderr.txt");
  snprintf(full, sizeof full, "%s 2>%s", args, errpath);
  const char *exe = getenv("HS_HETSAGE");
  if (!exe) cr_skip_test("HS_HETSAGE (the hetsage executable) is not set");
  char cmd[4700], blas[96];
  tool_blas_env(blas, sizeof blas);
  snprintf(cmd, sizeof cmd, "%s %s %s %s", blas, env, exe, full);
  FILE *p = popen(cmd, "r");
  cr_assert_not_null(p, "cannot run %s", cmd);
  size_t n = 0, got;
  char buf[4096];
  while ((got = fread(buf, 1, sizeof buf, p)) > 0) {
    if (out && n + 1 < cap) {
      size_t take = got < cap - 1 - n ? got : cap - 1 - n;
      memcpy(out + n, buf, take);
      n += take;
    }
  }
  if (out && cap) out[n] = '\0';
  int rc = pclose(p);
  char *e = tool_slurp(errpath);
  if (err && errcap) snprintf(err, errcap, "%s", e);
  free(e);
  remove(errpath);
  cr_assert(WIFEXITED(rc), "%s: did not exit", cmd);
  return WEXITSTATUS(rc);
}

static inline void tool_tmp(char *buf, size_t cap, const char *name) {
  const char *dir = getenv("TMPDIR");
  snprintf(buf, cap, "%s/hs-test-%d-%s", dir && *dir ? dir : "/tmp", (int)getpid(), name);
}

static inline char *tool_slurp(const char *path) {
  FILE *f = fopen(path, "rb");
  cr_assert_not_null(f, "cannot open %s", path);
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *buf = malloc((size_t)n + 1);
  cr_assert_not_null(buf);
  cr_assert_eq(fread(buf, 1, (size_t)n, f), (size_t)n);
  buf[n] = '\0';
  fclose(f);
  return buf;
}

#endif
