/* hetsage train --task ctr --distributed under the MPI launcher the build
 * uses ($HS_MPIEXEC), on small generated data: one rank prints what one
 * process prints, two ranks repeat their results and learn as one process
 * of twice the batch does, options not built are refused. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "hs_test_util.h"

static char *dir;

static const char *env_or_skip(const char *name) {
  const char *v = getenv(name);
  if (!v || !*v) cr_skip_test("%s is not set (no MPI in this build)", name);
  return v;
}

static char *slurp(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return calloc(1, 1);
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *buf = calloc(1, (size_t)n + 1);
  if (n > 0 && fread(buf, 1, (size_t)n, f) != (size_t)n) buf[0] = '\0';
  fclose(f);
  return buf;
}

/* Run `args` (after the tool, or after "mpiexec -n N tool" when n > 0) in
 * dir, bounded in time; stdout into NAME.out, stderr into NAME.err.
 * Returns the exit status; *out the output (the caller frees it). */
static int run(int n, const char *args, const char *name, char **out) {
  const char *hs = env_or_skip("HS_HETSAGE");
  const char *mpiexec = n > 0 ? env_or_skip("HS_MPIEXEC") : "";
  char cmd[4096], launch[1200] = "";
  if (n > 0) snprintf(launch, sizeof launch, "%s -n %d ", mpiexec, n);
  snprintf(cmd, sizeof cmd, "cd %s && timeout -k 5 240 %s%s %s > %s.out 2> %s.err", dir, launch,
           hs, args, name, name);
  int rc = system(cmd);
  rc = WIFEXITED(rc) ? WEXITSTATUS(rc) : 128;
  char path[1200];
  snprintf(path, sizeof path, "%s/%s.out", dir, name);
  *out = slurp(path);
  if (rc != 0) {
    snprintf(path, sizeof path, "%s/%s.err", dir, name);
    char *err = slurp(path);
    cr_log_info("%s: exit %d\n%s", cmd, rc, err);
    free(err);
  }
  return rc;
}

/* The JSON result without its timings (the two lines that vary). */
static void strip_times(char *json) {
  static const char *const keys[] = {"\"train_examples_per_s\"", "\"train_s\""};
  for (size_t k = 0; k < 2; k++) {
    char *p = strstr(json, keys[k]);
    if (!p) continue;
    char *e = strchr(p, '\n');
    if (e) memmove(p, e + 1, strlen(e + 1) + 1);
  }
}

static double number(const char *json, const char *key) {
  char k[64];
  snprintf(k, sizeof k, "\"%s\": ", key);
  const char *p = strstr(json, k);
  return p ? strtod(p + strlen(k), NULL) : NAN;
}

static void setup(void) {
  dir = tu_mkdtemp();
  const char *hs = getenv("HS_HETSAGE");
  if (!hs || !*hs) return; /* each test skips */
  char cmd[2048];
  snprintf(cmd, sizeof cmd, "cd %s && %s generate --kind ctr --rows 8000 --signal 2.0 --quiet d > gen.log",
           dir, hs);
  cr_assert_eq(system(cmd), 0, "%s", cmd);
}

static void teardown(void) { tu_rmtree(dir); }

TestSuite(ctr_dist_cli, .init = setup, .fini = teardown, .timeout = 900);

#define MODEL "--task ctr --data d --model dlrm --dim 8 --hidden 32,16 --bottom 16 --lr 0.01 --json -q"

Test(ctr_dist_cli, one_rank_prints_what_one_process_prints) {
  char *alone, *one;
  cr_assert_eq(run(0, "train " MODEL " --batch-size 256", "alone", &alone), 0);
  cr_assert_eq(run(1, "train " MODEL " --batch-size 256 --distributed", "one", &one), 0);
  strip_times(alone);
  strip_times(one);
  cr_assert(strstr(alone, "\"test_auc\""), "%s", alone);
  cr_assert_str_eq(one, alone);
  free(alone);
  free(one);
}

Test(ctr_dist_cli, two_ranks_repeat_and_learn) {
  char *a, *b, *alone;
  cr_assert_eq(run(2, "train " MODEL " --batch-size 256 --distributed", "two_a", &a), 0);
  cr_assert_eq(run(2, "train " MODEL " --batch-size 256 --distributed", "two_b", &b), 0);
  cr_assert_eq(run(0, "train " MODEL " --batch-size 512", "alone512", &alone), 0);
  strip_times(a);
  strip_times(b);
  cr_assert_str_eq(a, b, "two runs of 2 ranks differ");
  /* One result, printed by rank 0 alone. */
  int results = 0;
  for (const char *p = strstr(a, "\"test_auc\""); p; p = strstr(p + 1, "\"test_auc\"")) results++;
  cr_assert_eq(results, 1, "%s", a);
  double auc = number(a, "test_auc"), auc1 = number(alone, "test_auc");
  cr_assert_gt(auc, 0.57, "2 ranks: test AUC %.4f (0.5 untrained)", auc);
  cr_assert_lt(fabs(auc - auc1), 2e-3, "2 ranks of 256: AUC %.6f; one process of 512: %.6f", auc,
               auc1);
  cr_assert_eq(number(a, "embed_rows"), number(alone, "embed_rows"));
  free(a);
  free(b);
  free(alone);
}

Test(ctr_dist_cli, what_is_not_built_is_refused) {
  char *out;
  cr_assert_eq(run(0, "train " MODEL " --distributed --checkpoint ck", "ckpt", &out), 2);
  free(out);
  char path[1200];
  snprintf(path, sizeof path, "%s/ckpt.err", dir);
  char *err = slurp(path);
  cr_assert(strstr(err, "--checkpoint is not supported with --distributed"), "%s", err);
  free(err);
  cr_assert_eq(run(0, "train " MODEL " --distributed --sync ps", "ps", &out), 2);
  free(out);
  snprintf(path, sizeof path, "%s/ps.err", dir);
  err = slurp(path);
  cr_assert(strstr(err, "--sync allreduce --compress none"), "%s", err);
  free(err);
  cr_assert_eq(run(0, "train " MODEL " --sync allreduce", "nodist", &out), 2);
  free(out);
}
