/* hetsage train --distributed under the MPI launcher the build uses
 * ($HS_MPIEXEC): one rank equals one process bit for bit, 2 and 4 ranks
 * are deterministic, resume continues exactly, ranks started differently
 * refuse to start, a killed or stalled rank ends the run naming it. Small
 * runs of the bundled Cora, checkpoints compared byte for byte. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "hs_test_util.h"

#define HS_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

static const char *env_or_skip(const char *name) {
  const char *v = getenv(name);
  if (!v || !*v) cr_skip_test("%s is not set (no MPI in this build)", name);
  return v;
}

/* Start `cmd` in its own process group with stdout and stderr into file
 * `log`; returns the pid. */
static pid_t start(const char *cmd, const char *log) {
  pid_t pid = fork();
  cr_assert(pid >= 0);
  if (pid == 0) {
    setpgid(0, 0);
    int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) _exit(127);
    dup2(fd, 1);
    dup2(fd, 2);
    execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
    _exit(127);
  }
  setpgid(pid, pid);
  return pid;
}

/* Wait up to `limit` seconds; then the whole group is killed and the test
 * fails (a run that does not end is the defect these tests look for).
 * Returns the exit status (128 + signal when killed by one). */
static int finish(pid_t pid, double limit, const char *what, double *took) {
  struct timespec t0, t;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (;;) {
    int status;
    pid_t r = waitpid(pid, &status, WNOHANG);
    clock_gettime(CLOCK_MONOTONIC, &t);
    double el = (double)(t.tv_sec - t0.tv_sec) + 1e-9 * (double)(t.tv_nsec - t0.tv_nsec);
    if (took) *took = el;
    if (r == pid) return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    if (el > limit) {
      kill(-pid, SIGKILL);
      waitpid(pid, &status, 0);
      cr_assert_fail("%s did not end within %.0f s", what, limit);
    }
    struct timespec nap = {0, 50 * 1000 * 1000};
    nanosleep(&nap, NULL);
  }
}

static char *tool_slurp_or_empty(const char *path) {
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

typedef struct run_dir {
  char *dir;
  char log[512];
} run_dir;

/* mpiexec -n N hetsage train --distributed ARGS, in `dir`; its output in
 * dir/LOGNAME.log. */
static int mpi_train(const run_dir *d, int n, const char *args, const char *logname,
                     char *out, size_t cap) {
  const char *mpiexec = env_or_skip("HS_MPIEXEC");
  const char *hs = env_or_skip("HS_HETSAGE");
  char cmd[4096], log[600];
  snprintf(log, sizeof log, "%s/%s.log", d->dir, logname);
  snprintf(cmd, sizeof cmd, "cd %s && %s -n %d %s train --distributed -q --eval sampled %s",
           d->dir, mpiexec, n, hs, args);
  int rc = finish(start(cmd, log), 240, cmd, NULL);
  if (out) {
    char *text = tool_slurp_or_empty(log);
    snprintf(out, cap, "%s", text);
    free(text);
  }
  return rc;
}

static bool same_file(const char *a, const char *b) {
  char *x = tool_slurp_or_empty(a), *y = tool_slurp_or_empty(b);
  struct stat sa, sb;
  bool same = stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_size == sb.st_size &&
              sa.st_size > 0 && memcmp(x, y, (size_t)sa.st_size) == 0;
  free(x);
  free(y);
  return same;
}

static void ckpt(const run_dir *d, const char *name, char *path, size_t len) {
  snprintf(path, len, "%s/%s/last.ckpt", d->dir, name);
}

static run_dir scratch(void) {
  run_dir d = {.dir = tu_mkdtemp()};
  return d;
}

#define SMALL "--batch 256 --epochs 2 "

Test(dist_cli, one_rank_equals_one_process) {
  run_dir d = scratch();
  const char *hs = env_or_skip("HS_HETSAGE");
  char cmd[2048], log[600], a[600], b[600], out[8192];
  snprintf(log, sizeof log, "%s/single.log", d.dir);
  snprintf(cmd, sizeof cmd, "cd %s && %s train -q --eval sampled " SMALL "--checkpoint single",
           d.dir, hs);
  cr_assert_eq(finish(start(cmd, log), 240, cmd, NULL), 0);
  ckpt(&d, "single", a, sizeof a);
  /* Every mode reduces to the plain step on one rank, compression too
   * (a lone rank sends nothing, so compresses nothing): 1-bit Adam on one
   * rank is plain Adam, its second moment never frozen. */
  const char *modes[] = {"--sync allreduce", "--sync local --period 2",
                         "--sync allreduce --compress 1bit --compress-min 1",
                         "--sync allreduce --compress 1bit --compress-min 1 --compress-warmup 1"};
  for (size_t i = 0; i < HS_ARRAY_LEN(modes); i++) {
    char args[512], name[32];
    snprintf(name, sizeof name, "one%zu", i);
    snprintf(args, sizeof args, SMALL "%s --checkpoint %s", modes[i], name);
    cr_assert_eq(mpi_train(&d, 1, args, name, out, sizeof out), 0, "%s", out);
    ckpt(&d, name, b, sizeof b);
    cr_assert(same_file(a, b), "-n 1 %s differs from the single-process run", modes[i]);
  }
  tu_rmtree(d.dir);
}

Test(dist_cli, two_and_four_ranks_are_deterministic) {
  run_dir d = scratch();
  char a[600], b[600], out[8192];
  for (int n = 2; n <= 4; n += 2) {
    /* The second run drives its pipeline with threads: results do not
     * depend on the driver, nor on the MPI library's timing. */
    char args[512];
    snprintf(args, sizeof args, SMALL "--checkpoint r%da", n);
    cr_assert_eq(mpi_train(&d, n, args, "a", out, sizeof out), 0, "%s", out);
    snprintf(args, sizeof args, SMALL "--mode threads --checkpoint r%db", n);
    cr_assert_eq(mpi_train(&d, n, args, "b", out, sizeof out), 0, "%s", out);
    char na[16], nb[16];
    snprintf(na, sizeof na, "r%da", n);
    snprintf(nb, sizeof nb, "r%db", n);
    ckpt(&d, na, a, sizeof a);
    ckpt(&d, nb, b, sizeof b);
    cr_assert(same_file(a, b), "%d ranks: two runs differ", n);
  }
  tu_rmtree(d.dir);
}

/* 1-bit Adam (the default optimizer, compressed after a warm-up of 3 of
 * the 8 steps): two runs give the same bits, the second with another
 * pipeline driver; every step after the warm-up was compressed (4 in
 * epoch 2), and the result differs from the uncompressed run's. */
Test(dist_cli, two_ranks_one_bit_adam_is_deterministic) {
  run_dir d = scratch();
  char a[600], b[600], out[8192], path[600];
  const char *oba = SMALL "--compress 1bit --compress-min 64 --compress-warmup 3";
  char args[512];
  snprintf(args, sizeof args, "%s --stats-json sa.json --checkpoint oa", oba);
  cr_assert_eq(mpi_train(&d, 2, args, "a", out, sizeof out), 0, "%s", out);
  snprintf(args, sizeof args, "%s --mode threads --checkpoint ob", oba);
  cr_assert_eq(mpi_train(&d, 2, args, "b", out, sizeof out), 0, "%s", out);
  ckpt(&d, "oa", a, sizeof a);
  ckpt(&d, "ob", b, sizeof b);
  cr_assert(same_file(a, b), "1-bit Adam on 2 ranks: two runs differ");
  snprintf(path, sizeof path, "%s/sa.json", d.dir);
  char *stats = tool_slurp_or_empty(path);
  const char *e1 = strstr(stats, "{\"epoch\": 2,");
  cr_assert(strstr(stats, "\"compressed_steps\": 1,") && e1 &&
                strstr(e1, "\"compressed_steps\": 4,"),
            "1 compressed step in epoch 1 and 4 in epoch 2: %s", stats);
  free(stats);
  cr_assert_eq(mpi_train(&d, 2, SMALL "--checkpoint plain", "c", out, sizeof out), 0, "%s", out);
  ckpt(&d, "plain", b, sizeof b);
  cr_assert(!same_file(a, b), "1-bit Adam gave the uncompressed run's bits");
  tu_rmtree(d.dir);
}

/* 1-bit Adam freezes the second moment it estimated in the warm-up: no
 * warm-up is refused, with the reason. */
Test(dist_cli, one_bit_adam_without_warmup_is_refused) {
  run_dir d = scratch();
  char out[8192];
  int rc = mpi_train(&d, 2, SMALL "--compress 1bit --compress-warmup 0", "w", out, sizeof out);
  cr_assert_neq(rc, 0, "%s", out);
  cr_assert(strstr(out, "warm-up of 0 steps"), "the refusal gives the reason: %s", out);
  tu_rmtree(d.dir);
}

/* Three epochs straight, against one epoch then a resume to three. */
static void resume_case(int n, const char *mode) {
  run_dir d = scratch();
  char args[512], a[600], b[600], out[8192];
  snprintf(args, sizeof args, "--batch 128 --epochs 3 %s --checkpoint straight", mode);
  cr_assert_eq(mpi_train(&d, n, args, "straight", out, sizeof out), 0, "%s", out);
  snprintf(args, sizeof args, "--batch 128 --epochs 1 %s --checkpoint resumed", mode);
  cr_assert_eq(mpi_train(&d, n, args, "first", out, sizeof out), 0, "%s", out);
  snprintf(args, sizeof args, "--batch 128 --epochs 3 %s --checkpoint resumed --resume", mode);
  cr_assert_eq(mpi_train(&d, n, args, "rest", out, sizeof out), 0, "%s", out);
  ckpt(&d, "straight", a, sizeof a);
  ckpt(&d, "resumed", b, sizeof b);
  cr_assert(same_file(a, b), "%s on %d ranks: the resumed run differs", mode, n);
  tu_rmtree(d.dir);
}

/* 1-bit Adam: the resumed processes take the frozen state from the
 * checkpoint in the middle of the compressed phase (warm-up 3 of the
 * first epoch's 7 steps). */
Test(dist_cli, resume_continues_exactly_allreduce_1bit) {
  resume_case(2, "--compress 1bit --compress-min 64 --compress-warmup 3");
}

Test(dist_cli, resume_continues_exactly_parameter_server) {
  /* Adam: 1-bit Adam on the server, resumed in its compressed phase. */
  resume_case(3, "--sync ps --compress 1bit --compress-min 64 --compress-warmup 3");
}

/* ps 1-bit Adam resumed with another warm-up than the checkpoint's. A
 * checkpoint of the warm-up (not frozen) resumed past a lower warm-up
 * would start compressing with no frozen denominators on any rank (the
 * answer carrying them would be 1-bit coded); a frozen one resumed under
 * a later warm-up would have the servers move m and v again while the
 * workers keep the m and den of the checkpoint. Both are refused with the
 * cause. */
static void ps_warmup_mismatch(const char *first, const char *rest) {
  run_dir d = scratch();
  char args[512], out[8192];
  snprintf(args, sizeof args, "--batch 128 --epochs 1 --sync ps --compress 1bit --compress-min 64 "
           "%s --checkpoint c", first);
  cr_assert_eq(mpi_train(&d, 3, args, "first", out, sizeof out), 0, "%s", out);
  snprintf(args, sizeof args, "--batch 128 --epochs 2 --sync ps --compress 1bit --compress-min 64 "
           "%s --checkpoint c --resume", rest);
  int rc = mpi_train(&d, 3, args, "rest", out, sizeof out);
  cr_assert_neq(rc, 0, "%s then %s: the resume ran: %s", first, rest, out);
  cr_assert(strstr(out, "--compress-warmup"), "the refusal names the option: %s", out);
  tu_rmtree(d.dir);
}

Test(dist_cli, ps_one_bit_adam_resume_past_a_lower_warmup_is_refused) {
  /* 7 steps an epoch: warm-up 10 is not over at the checkpoint. */
  ps_warmup_mismatch("--compress-warmup 10", "--compress-warmup 3");
}

Test(dist_cli, ps_one_bit_adam_resume_of_a_frozen_run_under_a_later_warmup_is_refused) {
  ps_warmup_mismatch("--compress-warmup 3", "--compress-warmup 10");
}

Test(dist_cli, resume_continues_exactly_local_sgd) {
  resume_case(2, "--sync local --period 3");
}

Test(dist_cli, ranks_started_differently_refuse_to_start) {
  run_dir d = scratch();
  const char *mpiexec = env_or_skip("HS_MPIEXEC");
  const char *hs = env_or_skip("HS_HETSAGE");
  char cmd[4096], log[600];
  snprintf(log, sizeof log, "%s/mismatch.log", d.dir);
  /* The launcher's ':' gives each rank its own command line. */
  snprintf(cmd, sizeof cmd,
           "cd %s && %s -n 1 %s train --distributed -q --epochs 1 --lr 0.01 : "
           "-n 1 %s train --distributed -q --epochs 1 --lr 0.05",
           d.dir, mpiexec, hs, hs);
  int rc = finish(start(cmd, log), 240, cmd, NULL);
  char *out = tool_slurp_or_empty(log);
  cr_assert_neq(rc, 0, "%s", out);
  cr_assert(strstr(out, "rank 1 has 'learning rate=0.0500000007'") &&
                strstr(out, "rank 0 has 'learning rate=0.00999999978'"),
            "the refusal names the rank and the option: %s", out);
  free(out);
  tu_rmtree(d.dir);
}

Test(dist_cli, ranks_with_different_datasets_refuse_to_start) {
  run_dir d = scratch();
  const char *mpiexec = env_or_skip("HS_MPIEXEC");
  const char *hs = env_or_skip("HS_HETSAGE");
  char cmd[4096], log[600];
  snprintf(log, sizeof log, "%s/gen.log", d.dir);
  /* Two small SBM graphs that differ in their edges only. */
  for (int k = 0; k < 2; k++) {
    snprintf(cmd, sizeof cmd, "%s generate --kind sbm --vertices 600 --classes 4 --features 8 "
             "--edge-factor %d %s/g%d", hs, 4 + k, d.dir, k);
    cr_assert_eq(finish(start(cmd, log), 120, cmd, NULL), 0);
  }
  snprintf(log, sizeof log, "%s/mismatch.log", d.dir);
  snprintf(cmd, sizeof cmd,
           "cd %s && %s -n 1 %s train --distributed -q --epochs 1 --dataset g0 : "
           "-n 1 %s train --distributed -q --epochs 1 --dataset g1",
           d.dir, mpiexec, hs, hs);
  int rc = finish(start(cmd, log), 240, cmd, NULL);
  char *out = tool_slurp_or_empty(log);
  cr_assert_neq(rc, 0, "%s", out);
  cr_assert(strstr(out, "rank 1 has 'dataset edges="), "the refusal names the dataset: %s", out);
  free(out);
  tu_rmtree(d.dir);
}

/* A run of 3 ranks with many small steps; once rank 2 printed its pid,
 * send it `sig`. Returns the exit status; the output in *out. */
static int fault_run(run_dir *d, int sig, const char *extra, char **out, double *took) {
  const char *mpiexec = env_or_skip("HS_MPIEXEC");
  const char *hs = env_or_skip("HS_HETSAGE");
  char cmd[4096];
  snprintf(d->log, sizeof d->log, "%s/fault.log", d->dir);
  snprintf(cmd, sizeof cmd, "cd %s && %s -n 3 %s train --distributed --eval sampled --batch 16 "
           "--epochs 200 %s", d->dir, mpiexec, hs, extra);
  pid_t pid = start(cmd, d->log);
  int victim = 0;
  for (int i = 0; i < 2400 && !victim; i++) { /* up to 120 s for start-up */
    char *text = tool_slurp_or_empty(d->log);
    const char *p = strstr(text, "[rank 2] rank:");
    const char *q = p ? strstr(p, "(pid ") : NULL;
    /* Wait for training to be under way: the first epoch line. */
    if (q && strstr(text, "epoch   1")) victim = atoi(q + 5);
    free(text);
    struct timespec nap = {0, 50 * 1000 * 1000};
    if (!victim) nanosleep(&nap, NULL);
  }
  if (!victim) {
    kill(-pid, SIGKILL);
    waitpid(pid, NULL, 0);
    cr_assert_fail("rank 2 never started training");
  }
  kill(victim, sig);
  int rc = finish(pid, 90, "the run after a fault", took);
  if (sig == SIGSTOP) kill(victim, SIGKILL); /* if the launcher left it */
  *out = tool_slurp_or_empty(d->log);
  char pid_text[32];
  snprintf(pid_text, sizeof pid_text, "%d", victim);
  cr_assert(strstr(*out, "rank 2") && (strstr(*out, pid_text) || sig == SIGSTOP),
            "the output names rank 2 (pid %d): %s", victim, *out);
  return rc;
}

Test(dist_cli, killed_rank_ends_the_run) {
  run_dir d = scratch();
  char *out;
  double took;
  int rc = fault_run(&d, SIGKILL, "--dist-timeout 10", &out, &took);
  /* The launcher sees the death at once; otherwise the others' timeout. */
  cr_assert_neq(rc, 0, "%s", out);
  cr_assert(took < 10 + 30, "the run took %.0f s to end", took);
  free(out);
  tu_rmtree(d.dir);
}

Test(dist_cli, stalled_rank_is_named_within_the_timeout) {
  run_dir d = scratch();
  char *out;
  double took;
  int rc = fault_run(&d, SIGSTOP, "--dist-timeout 5", &out, &took);
  cr_assert_neq(rc, 0, "%s", out);
  /* Whichever peer's wait runs out first names rank 2: one waiting to
   * receive from it ("sent nothing"), or one whose sends it never took
   * ("received nothing"). */
  cr_assert(strstr(out, "rank 2 sent nothing for 5 s") ||
                strstr(out, "rank 2 received nothing for 5 s"),
            "the others name rank 2: %s", out);
  cr_assert(took >= 5 && took < 5 + 30, "the run ended %.0f s after the stall", took);
  free(out);
  tu_rmtree(d.dir);
}

static double json_number(const char *text, const char *key) {
  char k[64];
  snprintf(k, sizeof k, "\"%s\": ", key);
  const char *p = strstr(text, k);
  return p ? atof(p + strlen(k)) : -1;
}

Test(dist_cli, every_mode_learns) {
  run_dir d = scratch();
  static const struct {
    int n;
    const char *args;
  } runs[] = {
      {3, "--sync ps --staleness 2"},
      {3, "--sync ps --servers 2 --compress 1bit --compress-min 64 --compress-warmup 4"},
      {2, "--sync local --period 4"},
      {4, "--compress 1bit --compress-min 64 --compress-warmup 4"},
  };
  /* Cora reaches about 0.8 test accuracy in a few epochs; a mode that
   * does not learn stays near 0.3. */
  for (size_t i = 0; i < HS_ARRAY_LEN(runs); i++) {
    char args[512], out[16384];
    snprintf(args, sizeof args, "--batch 128 --epochs 4 --json --stats-json stats%zu.json %s", i,
             runs[i].args);
    cr_assert_eq(mpi_train(&d, runs[i].n, args, "learn", out, sizeof out), 0, "%s", out);
    double acc = json_number(out, "test_acc");
    cr_assert(acc > 0.6, "%s on %d ranks: test accuracy %.3f", runs[i].args, runs[i].n, acc);
    char path[600];
    snprintf(path, sizeof path, "%s/stats%zu.json", d.dir, i);
    char *stats = tool_slurp_or_empty(path);
    cr_assert(strstr(stats, "\"dist\": {\"world_size\": ") &&
                  json_number(stats, "bytes_sent_per_step") > 0,
              "stats name each rank's bytes: %s", stats);
    free(stats);
  }
  tu_rmtree(d.dir);
}
