/* hetsage train --task ctr --distributed under the MPI launcher the build
 * uses ($HS_MPIEXEC), on small generated data: one rank prints what one
 * process prints, two ranks repeat their results and learn as one process
 * of twice the batch does, options not built are refused. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>
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

/* (And with standardized integers: one rank takes the data's first
 * batch's statistics, as one process does.) */
Test(ctr_dist_cli, one_rank_prints_what_one_process_prints) {
  static const char *const extra[] = {"", " --standardize-dense"};
  for (int k = 0; k < 2; k++) {
    char *alone, *one, a1[512], a2[512];
    snprintf(a1, sizeof a1, "train " MODEL " --batch-size 256%s", extra[k]);
    snprintf(a2, sizeof a2, "train " MODEL " --batch-size 256 --distributed%s", extra[k]);
    cr_assert_eq(run(0, a1, k ? "alone_std" : "alone", &alone), 0);
    cr_assert_eq(run(1, a2, k ? "one_std" : "one", &one), 0);
    strip_times(alone);
    strip_times(one);
    cr_assert(strstr(alone, "\"test_auc\""), "%s", alone);
    cr_assert_str_eq(one, alone, "%s", extra[k]);
    free(alone);
    free(one);
  }
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

/* The process of the run whose command line holds `marker` and whose
 * launcher made it rank `rank` (MPICH: PMI_RANK; Open MPI:
 * OMPI_COMM_WORLD_RANK); 0 when there is none yet. */
static pid_t rank_pid(const char *marker, int rank) {
  char want[2][64];
  snprintf(want[0], sizeof want[0], "PMI_RANK=%d", rank);
  snprintf(want[1], sizeof want[1], "OMPI_COMM_WORLD_RANK=%d", rank);
  DIR *d = opendir("/proc");
  if (!d) return 0;
  pid_t found = 0;
  for (struct dirent *e; !found && (e = readdir(d));) {
    char *end;
    long pid = strtol(e->d_name, &end, 10);
    if (*end || pid <= 0) continue;
    char path[64], buf[8192];
    snprintf(path, sizeof path, "/proc/%ld/cmdline", pid);
    FILE *f = fopen(path, "rb");
    if (!f) continue;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    bool mine = false, hetsage = false;
    for (size_t i = 0; i < n; i += strlen(buf + i) + 1) {
      buf[n] = '\0';
      mine = mine || strcmp(buf + i, marker) == 0;
      hetsage = hetsage || strcmp(buf + i, "train") == 0;
    }
    if (!mine || !hetsage || strstr(buf, "mpiexec") || strstr(buf, "timeout")) continue;
    snprintf(path, sizeof path, "/proc/%ld/environ", pid);
    if (!(f = fopen(path, "rb"))) continue;
    n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    for (size_t i = 0; i < n && !found; i += strlen(buf + i) + 1)
      if (strcmp(buf + i, want[0]) == 0 || strcmp(buf + i, want[1]) == 0) found = (pid_t)pid;
  }
  closedir(d);
  return found;
}

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

Test(ctr_dist_cli, a_stalled_rank_is_named_within_the_timeout) {
  const char *hs = env_or_skip("HS_HETSAGE");
  const char *mpiexec = env_or_skip("HS_MPIEXEC");
  char data[1100], cmd[4096], err_path[1200];
  snprintf(data, sizeof data, "%s/big", dir);
  /* Long enough (small batches) that the stall comes during training. */
  snprintf(cmd, sizeof cmd, "%s generate --kind ctr --rows 60000 --quiet %s > /dev/null", hs, data);
  cr_assert_eq(system(cmd), 0, "%s", cmd);
  snprintf(err_path, sizeof err_path, "%s/stall.err", dir);
  snprintf(cmd, sizeof cmd, "exec %s -n 2 %s train --task ctr --data %s "
           "--model lr --batch-size 16 --distributed --dist-timeout 3 --dist-start-timeout 60 "
           "> %s/stall.out 2> %s", mpiexec, hs, data, dir, err_path);
  pid_t sh = fork();
  cr_assert(sh >= 0);
  if (sh == 0) {
    setpgid(0, 0);
    execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
    _exit(127);
  }
  setpgid(sh, sh);
  /* Rank 0 describes its session once both are up (the option check is
   * collective); then rank 1 is stopped. */
  pid_t victim = 0;
  double t0 = now_s();
  while (now_s() - t0 < 90) {
    char *err = slurp(err_path);
    bool up = strstr(err, "distributed: rank 0 of 2") != NULL;
    free(err);
    if (up && (victim = rank_pid(data, 1)) > 0) break;
    usleep(100 * 1000);
  }
  if (victim > 0) kill(victim, SIGSTOP);
  /* Rank 0 names rank 1, waiting to receive from it or on sends it never
   * took, once the timeout has passed. */
  double stalled = now_s(), took = 0;
  char *err = NULL;
  bool named = false;
  while (victim > 0 && !named && (took = now_s() - stalled) < 60) {
    free(err);
    err = slurp(err_path);
    named = strstr(err, "rank 1 sent nothing for 3 s") || strstr(err, "rank 1 received nothing for 3 s");
    if (!named) usleep(50 * 1000);
  }
  /* A stopped process outlives the launcher's end of the run (MPICH's
   * hydra waits for it): ended here. */
  if (victim > 0) {
    kill(victim, SIGKILL);
    kill(victim, SIGCONT);
  }
  int status = 0;
  pid_t r = 0;
  double t1 = now_s();
  while ((r = waitpid(sh, &status, WNOHANG)) == 0 && now_s() - t1 < 30) usleep(50 * 1000);
  if (r == 0) {
    kill(-sh, SIGKILL);
    waitpid(sh, &status, 0);
  }
  free(err);
  err = slurp(err_path);
  cr_assert_gt(victim, 0, "rank 1 of the run was not found: %s", err);
  cr_assert(named, "rank 0 does not name rank 1 within 60 s of the stall: %s", err);
  cr_assert(took >= 3 && took < 3 + 30, "rank 1 was named %.1f s after the stall", took);
  cr_assert(!(WIFEXITED(status) && WEXITSTATUS(status) == 0), "the run succeeded: %s", err);
  free(err);
}
