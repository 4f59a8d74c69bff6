/* The training commands (train, eval, predict) and the commands that open
 * the devices (info, place) as a user meets them: outputs checked, strict
 * JSON, checkpoints that are not overwritten by accident, splits checked at
 * the start, the printed plan is the plan that runs, bad features and a
 * diverging loss stop the run, small graphs train with the default batch,
 * a resumed run keeps its sampling. */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "data/hs_npy.h"
#include "hs_test_util.h"
#include "json_check.h"
#include "tool_run.h"

static char *scratch, *ds;

/* Small and quick: 300 vertices, 8 features. */
#define SMALL "--epochs 1 --batch 64 --hidden 16 --fanouts 5,5 -q"

static char *make_dataset(const char *name, const char *extra) {
  char *dst = tu_path(scratch, name);
  char args[1024], out[4096];
  snprintf(args, sizeof args, "generate --kind sbm --vertices 300 --features 8 --quiet %s %s",
           extra ? extra : "", dst);
  cr_assert_eq(tool_run("", args, out, sizeof out), 0, "%s", out);
  return dst;
}

static void setup(void) {
  scratch = tu_mkdtemp();
  ds = make_dataset("g", NULL);
}

static void teardown(void) {
  free(ds);
  tu_rmtree(scratch);
}

TestSuite(cli_train, .init = setup, .fini = teardown, .timeout = 900);

/* Run; assert the exit status; stdout into out. */
static void run_ok(const char *args, char *out, size_t cap) {
  char err[16384];
  int rc = tool_run2("", args, out, cap, err, sizeof err);
  cr_assert_eq(rc, 0, "'%s' exited %d: %s", args, rc, err);
}

/* ---- outputs ----------------------------------------------------------------- */

static void expect_full_disk_fails(const char *args) {
  char cmd[2048], err[16384];
  snprintf(cmd, sizeof cmd, "%s >/dev/full", args);
  int rc = tool_run2("", cmd, NULL, 0, err, sizeof err);
  cr_expect_neq(rc, 0, "'%s' to a full disk exited 0", args);
  cr_expect(strstr(err, "writing "), "'%s': %s", args, err);
}

Test(cli_train, every_output_is_checked) {
  char args[2048], ckpt[512];
  snprintf(ckpt, sizeof ckpt, "%s/ck", scratch);
  snprintf(args, sizeof args, "train --dataset %s " SMALL " --checkpoint %s", ds, ckpt);
  run_ok(args, NULL, 0);
  snprintf(args, sizeof args, "predict --dataset %s --checkpoint %s --ids 1,2,3", ds, ckpt);
  expect_full_disk_fails(args);
  snprintf(args, sizeof args, "predict --dataset %s --checkpoint %s --ids 1,2,3 --json", ds, ckpt);
  expect_full_disk_fails(args);
  snprintf(args, sizeof args, "eval --dataset %s --checkpoint %s --json", ds, ckpt);
  expect_full_disk_fails(args);
  snprintf(args, sizeof args, "train --dataset %s " SMALL " --json", ds);
  expect_full_disk_fails(args);
  expect_full_disk_fails("info --json");
  expect_full_disk_fails("place --json");
  /* Files named on the command line: a full disk fails the run. */
  snprintf(args, sizeof args, "train --dataset %s " SMALL " --stats-json /dev/full", ds);
  expect_full_disk_fails(args);
  snprintf(args, sizeof args, "train --dataset %s " SMALL " --log-json /dev/full", ds);
  expect_full_disk_fails(args);
}

Test(cli_train, every_json_output_is_strict_json) {
  char args[2048], ckpt[512], stats[512], log[512];
  static char out[1 << 16];
  snprintf(ckpt, sizeof ckpt, "%s/ck", scratch);
  snprintf(stats, sizeof stats, "%s/stats.json", scratch);
  snprintf(log, sizeof log, "%s/log.json", scratch);
  snprintf(args, sizeof args,
           "train --dataset %s --epochs 2 --batch 64 --hidden 16 --fanouts 5,5 -q --json "
           "--checkpoint %s --stats-json %s --log-json %s", ds, ckpt, stats, log);
  run_ok(args, out, sizeof out);
  hs__json_free(json_doc(out, "train --json"));
  char *text = tool_slurp(stats);
  cr_expect_eq(json_lines(text, "--stats-json"), 2);
  free(text);
  text = tool_slurp(log);
  cr_expect_eq(json_lines(text, "--log-json"), 2);
  free(text);
  /* Resumed at the end: nothing trains, the final loss is unknown (null). */
  snprintf(args, sizeof args, "train --dataset %s --epochs 2 --batch 64 --hidden 16 "
           "--fanouts 5,5 -q --json --checkpoint %s --resume", ds, ckpt);
  run_ok(args, out, sizeof out);
  hs_json *v = json_doc(out, "train --json (resumed at the end)");
  cr_expect_eq(hs__json_get(v, "final_loss")->type, HS_JSON_NULL, "%s", out);
  hs__json_free(v);
  snprintf(args, sizeof args, "eval --dataset %s --checkpoint %s --json", ds, ckpt);
  run_ok(args, out, sizeof out);
  hs__json_free(json_doc(out, "eval --json"));
  snprintf(args, sizeof args, "predict --dataset %s --checkpoint %s --ids 0,5,7 --json", ds, ckpt);
  run_ok(args, out, sizeof out);
  hs__json_free(json_doc(out, "predict --json"));
  run_ok("info --json", out, sizeof out);
  hs__json_free(json_doc(out, "info --json"));
  run_ok("place --json", out, sizeof out);
  hs__json_free(json_doc(out, "place --json"));
}

/* ---- checkpoints ----------------------------------------------------------------- */

Test(cli_train, an_earlier_runs_checkpoints_are_not_overwritten) {
  char args[2048], ckpt[512], err[16384];
  snprintf(ckpt, sizeof ckpt, "%s/ck", scratch);
  snprintf(args, sizeof args, "train --dataset %s " SMALL " --checkpoint %s", ds, ckpt);
  run_ok(args, NULL, 0);
  char *best = tu_path(ckpt, "best.ckpt");
  char *before = tool_slurp(best);
  struct stat sb;
  cr_assert_eq(stat(best, &sb), 0);
  size_t size = (size_t)sb.st_size;
  /* A second fresh run into the same folder is refused, untouched. */
  snprintf(args, sizeof args, "train --dataset %s " SMALL " --seed 9 --checkpoint %s", ds, ckpt);
  int rc = tool_run2("", args, NULL, 0, err, sizeof err);
  cr_expect_eq(rc, 2, "%s", err);
  cr_expect(strstr(err, "--resume") && strstr(err, "--force"), "%s", err);
  char *after = tool_slurp(best);
  cr_expect_arr_eq(before, after, size, "best.ckpt was changed");
  free(after);
  /* --force replaces them. */
  snprintf(args, sizeof args, "train --dataset %s " SMALL " --seed 9 --checkpoint %s --force",
           ds, ckpt);
  run_ok(args, NULL, 0);
  after = tool_slurp(best);
  cr_expect(memcmp(before, after, size) != 0, "--force did not train afresh");
  free(after);
  free(before);
  free(best);
}

/* A failed run leaves the outputs it was given as they were; --force
 * removes the earlier run's checkpoints before training, so that a forced
 * run that fails leaves none of them for eval to take; a --checkpoint that
 * is a file is refused before any work. */
Test(cli_train, a_failed_run_leaves_its_outputs_untouched) {
  char args[2048], err[16384], ckpt[512];
  tu_write_bytes(scratch, "keep.txt", "precious\n", 9);
  char *keep = tu_path(scratch, "keep.txt");
  snprintf(args, sizeof args, "train --dataset %s/nosuch " SMALL " --stats-json %s --log-json %s",
           scratch, keep, keep);
  cr_expect_neq(tool_run2("", args, NULL, 0, err, sizeof err), 0, "%s", err);
  char *text = tool_slurp(keep);
  cr_expect_str_eq(text, "precious\n", "a failed run emptied its --stats-json");
  free(text);
  /* --force, then a failure after the first epoch's training (a full
   * device at the first record): the earlier best.ckpt is gone. */
  snprintf(ckpt, sizeof ckpt, "%s/fck", scratch);
  snprintf(args, sizeof args, "train --dataset %s " SMALL " --checkpoint %s", ds, ckpt);
  run_ok(args, NULL, 0);
  cr_assert(tu_exists(ckpt, "best.ckpt") && tu_exists(ckpt, "best.json"));
  snprintf(args, sizeof args, "train --dataset %s " SMALL " --checkpoint %s --force "
           "--stats-json /dev/full", ds, ckpt);
  cr_expect_eq(tool_run2("", args, NULL, 0, err, sizeof err), 1, "%s", err);
  cr_expect(!tu_exists(ckpt, "best.ckpt"), "--force left the earlier run's best.ckpt");
  cr_expect(!tu_exists(ckpt, "best.json"), "--force left the earlier run's best.json");
  /* A file as the checkpoint folder. */
  snprintf(args, sizeof args, "train --dataset %s " SMALL " --checkpoint %s --stats-json %s/st.json",
           ds, keep, scratch);
  cr_expect_eq(tool_run2("", args, NULL, 0, err, sizeof err), 1, "%s", err);
  cr_expect(strstr(err, "not a folder"), "%s", err);
  cr_expect(!tu_exists(scratch, "st.json"), "an epoch ran before the error");
  free(keep);
}

/* A resumed run none of whose epochs beats its checkpoint's best (or that
 * has none left) reports the best checkpoint, as eval would, not its last
 * model. */
Test(cli_train, a_resumed_run_reports_its_best_checkpoint) {
  char args[2048], out[4096], ckpt[512];
  snprintf(ckpt, sizeof ckpt, "%s/rb", scratch);
  const char *o = "--batch 50 --model gcn --hidden 16 --fanouts 5,3 --patience 2 -q --json";
  snprintf(args, sizeof args, "train --dataset %s %s --epochs 11 --checkpoint %s", ds, o, ckpt);
  run_ok(args, NULL, 0);
  char *bj = tu_path(ckpt, "best.json");
  char *best = tool_slurp(bj);
  hs_json *b = json_doc(best, "best.json");
  double epoch = hs__json_number(b, "epoch", -1), valid = hs__json_number(b, "valid_acc", -1);
  hs__json_free(b);
  cr_assert(valid == 1.0, "the run needs a best it cannot beat: %s", best);
  for (int k = 0; k < 2; k++) {
    snprintf(args, sizeof args, "train --dataset %s %s --epochs %d --checkpoint %s --resume", ds,
             o, k ? 12 : 20, ckpt);
    run_ok(args, out, sizeof out);
    hs_json *v = json_doc(out, "train --json");
    cr_expect_eq(hs__json_number(v, "best_epoch", -1), epoch, "%s", out);
    cr_expect_eq(hs__json_number(v, "valid_acc", -1), valid, "%s", out);
    cr_expect_gt(hs__json_number(v, "epochs", -1), epoch, "%s", out);
    hs__json_free(v);
    char *after = tool_slurp(bj);
    cr_expect_str_eq(after, best, "best.json changed");
    free(after);
  }
  free(best);
  free(bj);
}

/* Trains one epoch on a 200 k-vertex graph (2% training, 49% validation
 * and test) in folder `name` with `env` and `opts`, interrupts it once its
 * stats line (after the validation, before the test pass) appears, and
 * expects the run to end with 130 in the test evaluation, saving nothing
 * of the epoch. */
static void expect_signal_stops_the_test_pass(const char *name, const char *env,
                                              const char *opts) {
  const char *exe = getenv("HS_HETSAGE");
  if (!exe) cr_skip_test("HS_HETSAGE is not set");
  char *big = tu_path(scratch, name);
  char args[1024], out[8192];
  snprintf(args, sizeof args, "generate --kind sbm --vertices 200000 --features 16 "
           "--split 0.02,0.49,0.49 --quiet %s", big);
  cr_assert_eq(tool_run("", args, out, sizeof out), 0, "%s", out);
  static char cmd[4096];
  snprintf(cmd, sizeof cmd,
           "cd %s && { %s %s train --dataset %s --epochs 1 %s -q --checkpoint %s.ck "
           "--stats-json %s.json & pid=$!; i=0; while [ $i -lt 2400 ] && [ ! -s %s.json ]; do "
           "sleep 0.05; i=$((i+1)); done; [ -s %s.json ] && echo started; kill -INT $pid; "
           "wait $pid; echo status $?; } 2>&1",
           scratch, env, exe, big, opts, name, name, name, name);
  FILE *p = popen(cmd, "r");
  cr_assert(p);
  size_t n = fread(out, 1, sizeof out - 1, p);
  out[n] = '\0';
  pclose(p);
  cr_assert(strstr(out, "started"), "no validation record appeared: %s", out);
  cr_expect(strstr(out, "status 130"), "%s", out);
  cr_expect(strstr(out, "interrupted during the test evaluation"), "%s", out);
  char ckname[64];
  snprintf(ckname, sizeof ckname, "%s.ck", name);
  char *ck = tu_path(scratch, ckname);
  cr_expect(!tu_exists(ck, "last.ckpt") && !tu_exists(ck, "best.ckpt"), "%s", out);
  free(ck);
  free(big);
}

/* Ctrl-C during the test evaluation (sampled, of 98 k vertices: over a
 * second) stops the run with 130 and saves nothing of the epoch, where it
 * was taken only after the evaluation, or not at all after the last
 * epoch. */
Test(cli_train, a_signal_during_evaluation_stops_the_run) {
  expect_signal_stops_the_test_pass("ev", "", "--hidden 256 --eval sampled");
}

/* The same with the evaluation layer-wise over the whole graph (--eval
 * full, HETSAGE_FULL_INFERENCE=layerwise; three layers 512 wide, seconds a
 * pass): the signal ends it between layers, where the pass ran to its end
 * and the run then finished with 0. */
Test(cli_train, a_signal_during_layerwise_evaluation_stops_the_run) {
  expect_signal_stops_the_test_pass("evl", "HETSAGE_FULL_INFERENCE=layerwise",
                                    "--hidden 512 --fanouts 2,2,2 --eval full");
}

/* ---- splits ------------------------------------------------------------------------ */

Test(cli_train, missing_splits_are_said_at_the_start) {
  char args[2048], err[16384], ckpt[512];
  static char out[1 << 14];
  char *nov = make_dataset("novalid", NULL);
  char *f = tu_path(nov, "valid_idx.npy");
  cr_assert_eq(unlink(f), 0);
  free(f);
  /* Early stopping needs validation: refused before any epoch. */
  snprintf(args, sizeof args, "train --dataset %s " SMALL " --patience 2", nov);
  int rc = tool_run2("", args, NULL, 0, err, sizeof err);
  cr_expect_eq(rc, 2, "%s", err);
  cr_expect(strstr(err, "valid_idx.npy is missing"), "%s", err);
  /* Without: every epoch trains, the last model is saved as best.ckpt. */
  snprintf(ckpt, sizeof ckpt, "%s/ck", scratch);
  snprintf(args, sizeof args, "train --dataset %s --epochs 2 --batch 64 --hidden 16 "
           "--fanouts 5,5 -q --json --checkpoint %s", nov, ckpt);
  rc = tool_run2("", args, out, sizeof out, err, sizeof err);
  cr_assert_eq(rc, 0, "%s", err);
  cr_expect(strstr(err, "valid_idx.npy is missing: no validation"), "%s", err);
  hs_json *v = json_doc(out, "train --json without validation");
  cr_expect_eq(hs__json_get(v, "valid_acc")->type, HS_JSON_NULL);
  cr_expect_eq(hs__json_number(v, "epochs", 0), 2);
  cr_expect_eq(hs__json_get(v, "test_acc")->type, HS_JSON_NUMBER);
  hs__json_free(v);
  char *best = tu_path(ckpt, "best.ckpt");
  cr_expect(access(best, R_OK) == 0, "no best.ckpt without a validation split");
  free(best);
  /* An empty test split: no test accuracy, said at the start. */
  char *not = make_dataset("notest", NULL);
  f = tu_path(not, "test_idx.npy");
  unlink(f);
  uint64_t zero[1] = {0};
  cr_assert_eq(hs__npy_write(f, HS_DTYPE_INT32, 1, zero, ""), HS_OK, "%s", hs_last_error());
  free(f);
  snprintf(args, sizeof args, "train --dataset %s " SMALL " --json", not);
  rc = tool_run2("", args, out, sizeof out, err, sizeof err);
  cr_assert_eq(rc, 0, "%s", err);
  cr_expect(strstr(err, "test_idx.npy is empty: no test accuracy"), "%s", err);
  v = json_doc(out, "train --json without a test split");
  cr_expect_eq(hs__json_get(v, "test_acc")->type, HS_JSON_NULL);
  hs__json_free(v);
  free(nov);
  free(not);
}

/* ---- the printed plan -------------------------------------------------------------- */

Test(cli_train, the_printed_plan_is_the_plan_that_runs) {
  char args[2048], err[32768];
  snprintf(args, sizeof args,
           "train --dataset %s --epochs 1 --batch 64 --hidden 16 --fanouts 5,5 "
           "--memory-budget 8K --mode threads --depth 2 --cache-rows 100 --cache-fill degree "
           "--stats-json %s/s.json", ds, scratch);
  int rc = tool_run2("", args, NULL, 0, err, sizeof err);
  cr_assert_eq(rc, 0, "%s", err);
  cr_expect(strstr(err, "pipeline: threads, depth 2\n"), "%s", err);
  cr_expect(strstr(err, "budget 8.0 KiB\n"), "%s", err);
  cr_expect(strstr(err, "cache: 100 trainer row(s), host 4.0 KiB, fill degree\n"), "%s", err);
  cr_expect(!strstr(err, "so they stay in memory"), "%s", err);
  cr_expect(strstr(err, "features: read through the host tier"), "%s", err);
  /* And that is what ran. */
  char p[600];
  snprintf(p, sizeof p, "%s/s.json", scratch);
  char *text = tool_slurp(p);
  hs_json *v = json_doc(text, "--stats-json");
  cr_expect_str_eq(hs__json_text(v, "pipeline", ""), "threads");
  cr_expect_eq(hs__json_number(v, "depth", 0), 2);
  cr_expect_eq(hs__json_number(v, "cache_rows", 0), 100);
  cr_expect_gt(hs__json_number(v, "host_lookups", 0), 0);
  hs__json_free(v);
  free(text);
}

/* ---- bad features, divergence, small graphs ----------------------------------------- */

Test(cli_train, a_nan_feature_stops_training_naming_the_row) {
  char args[2048], err[16384], ckpt[512];
  char *bad = make_dataset("nanfeat", NULL);
  /* Row 7, feature 3 of the float32 [300, 8] matrix becomes NaN. */
  char *f = tu_path(bad, "feat.npy");
  int fd = open(f, O_RDWR);
  cr_assert(fd >= 0);
  float nan_v = __builtin_nanf("");
  cr_assert_eq(pwrite(fd, &nan_v, 4, 128 + (7 * 8 + 3) * 4), 4);
  close(fd);
  snprintf(ckpt, sizeof ckpt, "%s/ck", scratch);
  snprintf(args, sizeof args, "train --dataset %s " SMALL " --batch 300 --checkpoint %s", bad,
           ckpt);
  int rc = tool_run2("", args, NULL, 0, err, sizeof err);
  cr_expect_eq(rc, 1, "%s", err);
  cr_expect(strstr(err, "feat.npy: row 7, feature 3: NaN"), "%s", err);
  char *best = tu_path(ckpt, "best.ckpt"), *last = tu_path(ckpt, "last.ckpt");
  cr_expect(access(best, F_OK) != 0 && access(last, F_OK) != 0, "a checkpoint was saved");
  free(best);
  free(last);
  free(f);
  free(bad);
}

/* Every checkpoint left in `dir` evaluates to a finite accuracy (a
 * diverged model would not). */
static void expect_checkpoints_finite(const char *dir) {
  static const char *const names[] = {"best.ckpt", "last.ckpt"};
  for (int i = 0; i < 2; i++) {
    char *p = tu_path(dir, names[i]);
    if (access(p, F_OK) == 0) {
      char args[2048], out[4096];
      snprintf(args, sizeof args, "eval --dataset %s --checkpoint %s --json --sampled", ds, p);
      run_ok(args, out, sizeof out);
      hs_json *v = json_doc(out, "eval --json");
      cr_expect_eq(hs__json_get(v, "accuracy")->type, HS_JSON_NUMBER, "%s: %s", p, out);
      hs__json_free(v);
    }
    free(p);
  }
}

Test(cli_train, a_diverging_loss_stops_training_and_saves_nothing_diverged) {
  char args[2048], err[16384], ckpt[512];
  snprintf(ckpt, sizeof ckpt, "%s/ck", scratch);
  /* SGD at a learning rate of 99 overflows within a few batches. */
  snprintf(args, sizeof args, "train --dataset %s --epochs 3 --batch 16 --hidden 16 "
           "--fanouts 5,5 -q --optimizer sgd --lr 99 --weight-decay 0 --checkpoint %s",
           ds, ckpt);
  int rc = tool_run2("", args, NULL, 0, err, sizeof err);
  cr_expect_eq(rc, 1, "%s", err);
  cr_expect(strstr(err, "diverged"), "%s", err);
  expect_checkpoints_finite(ckpt);
}

Test(cli_train, small_graphs_train_with_the_default_batch) {
  char args[2048];
  /* 300 vertices, 180 training seeds, the default batch of 1024. */
  snprintf(args, sizeof args, "train --dataset %s --epochs 1 --hidden 16 -q", ds);
  run_ok(args, NULL, 0);
}

/* ---- resuming ------------------------------------------------------------------ */

Test(cli_train, resume_restores_the_runs_options_and_refuses_conflicts) {
  char args[2048], err[16384], a_dir[512], b_dir[512];
  static const char opts[] = "--batch 64 --hidden 16 --fanouts 5,5 --lr 0.02 --seed 3 "
                             "--dropout 0.3 --weight-decay 0.001 --optimizer adam -q";
  snprintf(a_dir, sizeof a_dir, "%s/a", scratch);
  snprintf(b_dir, sizeof b_dir, "%s/b", scratch);
  snprintf(args, sizeof args, "train --dataset %s %s --epochs 2 --checkpoint %s", ds, opts, a_dir);
  run_ok(args, NULL, 0);
  snprintf(args, sizeof args, "train --dataset %s %s --epochs 1 --checkpoint %s", ds, opts, b_dir);
  run_ok(args, NULL, 0);
  /* The hint the command prints: --checkpoint DIR --resume, nothing else. */
  snprintf(args, sizeof args, "train --dataset %s --epochs 2 -q --checkpoint %s --resume", ds,
           b_dir);
  run_ok(args, NULL, 0);
  char *pa = tu_path(a_dir, "last.ckpt"), *pb = tu_path(b_dir, "last.ckpt");
  char *ca = tool_slurp(pa), *cb = tool_slurp(pb);
  struct stat sa, sb;
  cr_assert_eq(stat(pa, &sa), 0);
  cr_assert_eq(stat(pb, &sb), 0);
  cr_expect_eq(sa.st_size, sb.st_size);
  cr_expect_arr_eq(ca, cb, (size_t)sa.st_size,
                   "1 epoch + resume to 2 differs from 2 epochs uninterrupted");
  free(ca);
  free(cb);
  /* Options that would change the run are refused, each named. */
  static const char *const conflicts[][2] = {
      {"--seed 4", "--seed 4"},         {"--batch 32", "--batch 32"},
      {"--fanouts 10,5", "--fanouts 10,5"}, {"--dropout 0.1", "--dropout 0.1"},
      {"--lr 0.05", "--new-lr"},         {"--hidden 32", "--hidden 32"},
      {"--weight-decay 0", "--weight-decay 0"}, {"--optimizer sgd", "--optimizer sgd"},
      {"--model gcn", "--model gcn"},
  };
  for (size_t i = 0; i < sizeof conflicts / sizeof conflicts[0]; i++) {
    snprintf(args, sizeof args, "train --dataset %s --epochs 3 -q --checkpoint %s --resume %s",
             ds, b_dir, conflicts[i][0]);
    int rc = tool_run2("", args, NULL, 0, err, sizeof err);
    cr_expect_eq(rc, 2, "%s: %s", conflicts[i][0], err);
    cr_expect(strstr(err, conflicts[i][1]) && strstr(err, "conflicts with the checkpoint"),
              "%s: %s", conflicts[i][0], err);
  }
  /* The same value given again is no conflict; a new learning rate needs
   * its own flag, and is said. */
  snprintf(args, sizeof args, "train --dataset %s --epochs 3 -q --checkpoint %s --resume "
           "--seed 3 --new-lr 0.01", ds, b_dir);
  int rc = tool_run2("", args, NULL, 0, err, sizeof err);
  cr_expect_eq(rc, 0, "%s", err);
  cr_expect(strstr(err, "resuming with learning rate 0.01 (the checkpoint's run used 0.02)"), "%s",
            err);
  /* Another dataset is refused by the library, naming it. */
  char *other = make_dataset("other", "--seed 9");
  snprintf(args, sizeof args, "train --dataset %s --epochs 4 -q --checkpoint %s --resume", other,
           b_dir);
  rc = tool_run2("", args, NULL, 0, err, sizeof err);
  cr_expect_eq(rc, 1, "%s", err);
  cr_expect(strstr(err, "dataset of"), "%s", err);
  free(other);
  free(pa);
  free(pb);
}

/* A dataset of `name` with weights.npy: each edge's weight a fixed
 * function of its position, in (0, 1]. */
static char *make_weighted_dataset(const char *name) {
  char *dir = make_dataset(name, NULL);
  hs_dataset *d;
  cr_assert_eq(hs_dataset_open(dir, &d), HS_OK, "%s", hs_last_error());
  hs_dataset_info info;
  hs_dataset_info_init(&info);
  cr_assert_eq(hs_dataset_get_info(d, &info), HS_OK, "%s", hs_last_error());
  hs_dataset_close(d);
  uint64_t e = (uint64_t)info.num_edges;
  float *w = malloc(sizeof(float) * (e ? e : 1));
  cr_assert(w);
  for (uint64_t k = 0; k < e; k++) w[k] = (float)((k * 2654435761u) % 1000u + 1u) / 1000.0f;
  char *path = tu_path(dir, "weights.npy");
  cr_assert_eq(hs__npy_write(path, HS_DTYPE_FLOAT32, 1, &e, w), HS_OK, "%s", hs_last_error());
  free(path);
  free(w);
  return dir;
}

/* `opts` for 2 epochs into DIR/a; 1 epoch into DIR/b, resumed to 2 with
 * --checkpoint and --resume alone: both last.ckpt the same bytes. */
static void expect_resume_equals_uninterrupted(const char *data, const char *opts,
                                               const char *a_dir, const char *b_dir) {
  char args[2048];
  snprintf(args, sizeof args, "train --dataset %s %s --epochs 2 --checkpoint %s", data, opts,
           a_dir);
  run_ok(args, NULL, 0);
  snprintf(args, sizeof args, "train --dataset %s %s --epochs 1 --checkpoint %s", data, opts,
           b_dir);
  run_ok(args, NULL, 0);
  snprintf(args, sizeof args, "train --dataset %s --epochs 2 -q --checkpoint %s --resume", data,
           b_dir);
  run_ok(args, NULL, 0);
  char *pa = tu_path(a_dir, "last.ckpt"), *pb = tu_path(b_dir, "last.ckpt");
  struct stat sa, sb;
  cr_assert_eq(stat(pa, &sa), 0);
  cr_assert_eq(stat(pb, &sb), 0);
  char *ca = tool_slurp(pa), *cb = tool_slurp(pb);
  cr_assert_eq(sa.st_size, sb.st_size, "%s", opts);
  cr_expect_arr_eq(ca, cb, (size_t)sa.st_size,
                   "%s: 1 epoch + resume to 2 differs from 2 epochs uninterrupted", opts);
  free(ca);
  free(cb);
  free(pa);
  free(pb);
}

/* Resume `dir` with `extra`: refused as bad usage (or by the library,
 * status 1, when `library`), the message naming `name`. */
static void expect_resume_refused(const char *data, const char *dir, const char *extra,
                                  const char *env, int status, const char *name) {
  char args[2048], err[16384];
  snprintf(args, sizeof args, "train --dataset %s --epochs 3 -q --checkpoint %s --resume %s", data,
           dir, extra);
  int rc = tool_run2(env, args, NULL, 0, err, sizeof err);
  cr_expect_eq(rc, status, "%s %s: %s", env, extra, err);
  cr_expect(strstr(err, name), "%s %s: %s", env, extra, err);
}

Test(cli_train, resume_keeps_the_sampling_mode_and_refuses_another) {
  char *wds = make_weighted_dataset("w");
  char a_dir[512], b_dir[512], c_dir[512], d_dir[512];
  snprintf(a_dir, sizeof a_dir, "%s/wa", scratch);
  snprintf(b_dir, sizeof b_dir, "%s/wb", scratch);
  snprintf(c_dir, sizeof c_dir, "%s/ta", scratch);
  snprintf(d_dir, sizeof d_dir, "%s/tb", scratch);
  /* Weighted with replacement, a vertex budget and a GEMM thread count;
   * threshold sampling: each resumed without its options is the
   * uninterrupted run. */
  expect_resume_equals_uninterrupted(wds, "--batch 64 --hidden 16 --fanouts 5,5 --seed 2 "
                                     "--sampling weighted --replace --vertex-budget 200 "
                                     "--gemm-threads 2 -q", a_dir, b_dir);
  expect_resume_equals_uninterrupted(wds, "--batch 64 --hidden 16 --fanouts 5,5 --seed 2 "
                                     "--sampling threshold --threshold 0.3,0.6 -q",
                                     c_dir, d_dir);
  /* Another way of drawing is refused, naming the option. */
  static const char *const conflicts[][2] = {
      {"--sampling uniform", "--sampling"},
      {"--sampling threshold --threshold 0.3", "--sampling"},
      {"--vertex-budget 100", "--vertex-budget"},
      {"--gemm-threads 3", "--gemm-threads"},
  };
  for (size_t i = 0; i < sizeof conflicts / sizeof conflicts[0]; i++)
    expect_resume_refused(wds, b_dir, conflicts[i][0], "", 2, conflicts[i][1]);
  expect_resume_refused(wds, d_dir, "--threshold 0.3", "", 2, "--threshold");
  expect_resume_refused(wds, d_dir, "--replace", "", 2, "--replace");
  /* The same options again are no conflict. */
  char args[2048], err[16384];
  snprintf(args, sizeof args, "train --dataset %s --epochs 3 -q --checkpoint %s --resume "
           "--sampling threshold --threshold 0.3,0.6", wds, d_dir);
  int rc = tool_run2("", args, NULL, 0, err, sizeof err);
  cr_expect_eq(rc, 0, "%s", err);
  /* The library compares what the session resolves: a thread count from
   * the setting where the run had none. */
  expect_resume_refused(wds, d_dir, "", "HETSAGE_GEMM_THREADS=3", 1, "GEMM threads");
  free(wds);
}

/* ---- click-through-rate training ------------------------------------------------ */

/* A small CTR dataset (1600 training, 200 validation, 200 test examples). */
static char *make_ctr_dataset(const char *name) {
  char *dst = tu_path(scratch, name);
  char args[1024], out[4096];
  snprintf(args, sizeof args, "generate --kind ctr --rows 2000 --big-vocab 500 --quiet %s", dst);
  cr_assert_eq(tool_run("", args, out, sizeof out), 0, "%s", out);
  return dst;
}

#define CTR_SMALL "--task ctr -q"

/* generate --kind ctr: --head-ranks and --tail-decay reach the generator
 * (meta.json records them) and out-of-range values are usage errors that
 * name the option and write nothing. */
Test(cli_train, ctr_generate_head_and_tail_options) {
  char *dst = tu_path(scratch, "ctr_ht");
  char args[1024], out[4096], err[4096];
  static const char *const bad[][2] = {{"--head-ranks 0", "--head-ranks"},
                                       {"--head-ranks 4294967297", "--head-ranks"},
                                       {"--tail-decay 4.5", "--tail-decay"},
                                       {"--tail-decay -1", "--tail-decay"},
                                       {"--tail-decay x", "--tail-decay"}};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    snprintf(args, sizeof args, "generate --kind ctr --rows 200 --quiet %s %s", bad[i][0], dst);
    int rc = tool_run2("", args, NULL, 0, err, sizeof err);
    cr_expect_eq(rc, 2, "%s: %s", bad[i][0], err);
    cr_expect(strstr(err, bad[i][1]), "%s: %s", bad[i][0], err);
    struct stat sb;
    cr_expect_neq(stat(dst, &sb), 0, "%s: %s was written", bad[i][0], dst);
  }
  snprintf(args, sizeof args,
           "generate --kind ctr --rows 200 --big-vocab 500 --head-ranks 30 --tail-decay 2 --quiet %s",
           dst);
  cr_assert_eq(tool_run("", args, out, sizeof out), 0, "%s", out);
  char *meta_path = tu_path(dst, "meta.json");
  char *meta = tool_slurp(meta_path);
  cr_expect(strstr(meta, "\"head_ranks\": 30,") && strstr(meta, "\"tail_decay\": 2,"), "%s", meta);
  free(meta);
  free(meta_path);
  free(dst);
}

/* The GNN path's rules: an earlier run's checkpoints are not replaced
 * without --resume or --force; --resume takes the run's options from its
 * checkpoint (one given that differs is refused by name) and continues it
 * bit for bit; a resumed run keeps a better best.ckpt. */
Test(cli_train, ctr_checkpoints_are_kept_and_resume_continues_the_run) {
  char *data = make_ctr_dataset("ctr");
  char args[2048], err[16384], a_dir[512], b_dir[512];
  snprintf(a_dir, sizeof a_dir, "%s/ca", scratch);
  snprintf(b_dir, sizeof b_dir, "%s/cb", scratch);
  static const char opts[] = "--model lr --lr 0.01 --sparse-lr 0.1 --seed 4 --batch-size 128 "
                             "--sparse-init-acc 0.1 --expire-after 9 --gemm-threads 1";
  snprintf(args, sizeof args, "train " CTR_SMALL " --data %s %s --epochs 2 --checkpoint %s", data,
           opts, a_dir);
  run_ok(args, NULL, 0);
  snprintf(args, sizeof args, "train " CTR_SMALL " --data %s %s --epochs 1 --checkpoint %s", data,
           opts, b_dir);
  run_ok(args, NULL, 0);
  /* Again into the same folder: refused, the models kept. */
  char *best = tu_path(b_dir, "best.ckpt");
  char *before = tool_slurp(best);
  struct stat sb;
  cr_assert_eq(stat(best, &sb), 0);
  int rc = tool_run2("", args, NULL, 0, err, sizeof err);
  cr_expect_eq(rc, 2, "%s", err);
  cr_expect(strstr(err, "--resume") && strstr(err, "--force"), "%s", err);
  char *after = tool_slurp(best);
  cr_expect_arr_eq(before, after, (size_t)sb.st_size, "best.ckpt was replaced");
  free(before);
  free(after);
  /* --resume alone continues the run: the same bytes as 2 epochs at once. */
  snprintf(args, sizeof args, "train " CTR_SMALL " --data %s --epochs 2 --checkpoint %s --resume",
           data, b_dir);
  run_ok(args, NULL, 0);
  char *pa = tu_path(a_dir, "last.ckpt"), *pb = tu_path(b_dir, "last.ckpt");
  struct stat sa;
  cr_assert_eq(stat(pa, &sa), 0);
  cr_assert_eq(stat(pb, &sb), 0);
  cr_assert_eq(sa.st_size, sb.st_size);
  char *ca = tool_slurp(pa), *cb = tool_slurp(pb);
  cr_expect_arr_eq(ca, cb, (size_t)sa.st_size,
                   "1 epoch + resume to 2 differs from 2 epochs uninterrupted");
  free(ca);
  free(cb);
  /* An option the checkpoint records, given otherwise: refused by name. */
  static const char *const conflicts[][2] = {
      {"--lr 0.02", "--lr"},       {"--seed 5", "--seed"},     {"--model deepfm", "--model"},
      {"--sparse-lr 0.2", "--sparse-lr"}, {"--init-range 0.1", "--init-range"},
      {"--batch-size 256", "--batch-size"}, {"--expire-after 5", "--expire-after"},
      {"--sparse-init-acc 0", "--sparse-init-acc"},
  };
  for (size_t i = 0; i < sizeof conflicts / sizeof conflicts[0]; i++) {
    snprintf(args, sizeof args, "train " CTR_SMALL " --data %s --epochs 3 --checkpoint %s "
             "--resume %s", data, b_dir, conflicts[i][0]);
    rc = tool_run2("", args, NULL, 0, err, sizeof err);
    cr_expect_eq(rc, 2, "%s: %s", conflicts[i][0], err);
    cr_expect(strstr(err, conflicts[i][1]) && strstr(err, "conflicts with the checkpoint"),
              "%s: %s", conflicts[i][0], err);
  }
  /* Another GEMM thread count is no conflict (the products' bits do not
   * depend on it: ctr_session::same_bits_whatever_the_gemm_threads), and
   * the checkpoint then records it. */
  snprintf(args, sizeof args, "train " CTR_SMALL " --data %s --epochs 3 --checkpoint %s "
           "--resume --gemm-threads 2", data, b_dir);
  run_ok(args, NULL, 0);
  hs_ctr_config back;
  hs_ctr_config_init(&back);
  cr_assert_eq(hs_ctr_config_from_checkpoint(pb, &back), HS_OK, "%s", hs_last_error());
  cr_expect_eq(back.gemm_threads, 2);
  /* --force trains afresh into it. */
  snprintf(args, sizeof args, "train " CTR_SMALL " --data %s --model lr --epochs 1 --checkpoint "
           "%s --force", data, b_dir);
  run_ok(args, NULL, 0);
  /* A resumed run's best so far is its checkpoint's: best.json says it. */
  char *bj = tu_path(b_dir, "best.json");
  char *text = tool_slurp(bj);
  cr_expect(text && strstr(text, "\"valid_auc\": "), "%s", text ? text : "(no best.json)");
  free(text);
  free(bj);
  free(pa);
  free(pb);
  free(best);
  free(data);
}

/* Every output checked and every JSON strict: stats and log files on a
 * full disk fail naming the path; without validation files the AUC is
 * null, not nan. */
Test(cli_train, ctr_outputs_are_checked_and_strict_json) {
  char *data = make_ctr_dataset("ctr");
  char args[2048], err[16384];
  static const char *const outs[] = {"--stats-json /dev/full", "--log-json /dev/full"};
  for (size_t i = 0; i < 2; i++) {
    snprintf(args, sizeof args, "train " CTR_SMALL " --data %s/train.txt --model lr --epochs 1 %s",
             data, outs[i]);
    int rc = tool_run2("", args, NULL, 0, err, sizeof err);
    cr_expect_eq(rc, 1, "%s: %s", outs[i], err);
    cr_expect(strstr(err, "writing /dev/full"), "%s: %s", outs[i], err);
  }
  /* Training files alone: no validation, no test. */
  char *stats = tu_path(scratch, "ctr-stats.json"), *log = tu_path(scratch, "ctr-log.json");
  char out[16384];
  snprintf(args, sizeof args, "train " CTR_SMALL " --data %s/train.txt --model lr --epochs 1 "
           "--json --stats-json %s --log-json %s", data, stats, log);
  run_ok(args, out, sizeof out);
  hs_json *v = json_doc(out, "train --task ctr --json");
  hs__json_free(v);
  char *text = tool_slurp(stats);
  cr_expect_eq(json_lines(text, "--stats-json"), 1);
  free(text);
  text = tool_slurp(log);
  cr_expect(strstr(text, "\"valid_auc\": null"), "%s", text);
  cr_expect_eq(json_lines(text, "--log-json"), 1);
  free(text);
  /* eval --json of a model on its own files. */
  char ck[512];
  snprintf(ck, sizeof ck, "%s/ctr-ck", scratch);
  snprintf(args, sizeof args, "train " CTR_SMALL " --data %s --model lr --epochs 1 --checkpoint %s",
           data, ck);
  run_ok(args, NULL, 0);
  snprintf(args, sizeof args, "eval --task ctr --checkpoint %s --data %s --json", ck, data);
  run_ok(args, out, sizeof out);
  v = json_doc(out, "eval --task ctr --json");
  hs__json_free(v);
  snprintf(args, sizeof args, "predict --task ctr --checkpoint %s --data %s/test.txt --output "
           "/dev/full", ck, data);
  int rc = tool_run2("", args, NULL, 0, err, sizeof err);
  cr_expect_eq(rc, 1, "%s", err);
  cr_expect(strstr(err, "/dev/full"), "%s", err);
  free(stats);
  free(log);
  free(data);
}

/* SIGTERM stops a CTR run as Ctrl-C does: last.ckpt saved, status 130, no
 * temporary left in the checkpoint folder. */
Test(cli_train, ctr_sigterm_saves_and_leaves_no_temporaries) {
  const char *exe = getenv("HS_HETSAGE");
  if (!exe) cr_skip_test("HS_HETSAGE is not set");
  char *data = make_ctr_dataset("ctr");
  char cmd[4096], out[8192];
  snprintf(cmd, sizeof cmd,
           "cd %s && { %s train " CTR_SMALL " --data %s --model lr --epochs 100000 "
           "--checkpoint ck & pid=$!; i=0; while [ $i -lt 600 ] && [ ! -e ck/last.ckpt ]; "
           "do sleep 0.1; i=$((i+1)); done; [ -e ck/last.ckpt ] && echo started; "
           "kill -TERM $pid; wait $pid; echo status $?; } 2>&1",
           scratch, exe, data);
  FILE *p = popen(cmd, "r");
  cr_assert(p);
  size_t n = fread(out, 1, sizeof out - 1, p);
  out[n] = '\0';
  pclose(p);
  cr_assert(strstr(out, "started"), "no checkpoint appeared: %s", out);
  cr_expect(strstr(out, "status 130"), "SIGTERM: %s", out);
  cr_expect(strstr(out, "interrupted"), "%s", out);
  char *ck = tu_path(scratch, "ck");
  static const char *const tmp[] = {"last.ckpt.tmp", "best.ckpt.tmp", "best.json.tmp"};
  for (size_t i = 0; i < 3; i++)
    cr_expect_eq(tu_count_prefix(ck, tmp[i]), 0, "%s* left behind: %s", tmp[i], out);
  cr_expect_eq(tu_count_prefix(ck, "last.ckpt"), 1, "%s", out);
  free(ck);
  free(data);
}

/* predict --output is written atomically: a bad checkpoint or a data error
 * leaves an existing file as it was and no file where there was none (and
 * no temporary); the input may be the output. */
Test(cli_train, ctr_predict_output_is_atomic) {
  char *data = make_ctr_dataset("ctr");
  char args[2048], err[16384], ck[512], dir[512];
  snprintf(ck, sizeof ck, "%s/pck", scratch);
  snprintf(dir, sizeof dir, "%s/pout", scratch);
  cr_assert_eq(mkdir(dir, 0755), 0);
  snprintf(args, sizeof args, "train " CTR_SMALL " --data %s --model lr --checkpoint %s", data, ck);
  run_ok(args, NULL, 0);
  tu_write_bytes(dir, "kept.txt", "old\n", 4);
  char *kept = tu_path(dir, "kept.txt");
  snprintf(args, sizeof args, "predict --task ctr --checkpoint %s/none.ckpt --data %s/test.txt "
           "--output %s", scratch, data, kept);
  int rc = tool_run2("", args, NULL, 0, err, sizeof err);
  cr_expect_eq(rc, 1, "%s", err);
  char *text = tool_slurp(kept);
  cr_expect_str_eq(text, "old\n", "a bad checkpoint changed the output file");
  free(text);
  /* A data error at line 150: no file, no temporary. */
  char *bad = tu_path(dir, "bad.txt"), *test = tu_path(data, "test.txt");
  char *good = tool_slurp(test);
  char *nl = good;
  for (int i = 0; i < 149; i++) nl = strchr(nl, '\n') + 1;
  FILE *f = fopen(bad, "w");
  cr_assert(f);
  fwrite(good, 1, (size_t)(nl - good), f);
  fputs("x\n", f);
  fputs(nl, f);
  fclose(f);
  snprintf(args, sizeof args, "predict --task ctr --checkpoint %s --data %s --output %s/new.txt",
           ck, bad, dir);
  rc = tool_run2("", args, NULL, 0, err, sizeof err);
  cr_expect_eq(rc, 1, "%s", err);
  cr_expect(strstr(err, ":150:"), "%s", err);
  cr_expect_eq(tu_count_prefix(dir, "new.txt"), 0, "a failed predict left an output behind");
  /* The input as the output: replaced by its probabilities. */
  char *same = tu_path(dir, "same.txt");
  tu_write_bytes(dir, "same.txt", good, strlen(good));
  snprintf(args, sizeof args, "predict --task ctr --checkpoint %s --data %s --output %s", ck, same,
           same);
  run_ok(args, NULL, 0);
  text = tool_slurp(same);
  int lines = 0;
  for (char *p = text; *p; p++) lines += *p == '\n';
  cr_expect_eq(lines, 200, "%d lines", lines);
  cr_expect(strtod(text, NULL) > 0 && strtod(text, NULL) < 1, "%.40s", text);
  free(text);
  cr_expect_eq(tu_count_prefix(dir, "same.txt.tmp"), 0);
  /* Through a symbolic link: the target replaced, the link kept, the
   * target's permissions too. */
  tu_write_bytes(dir, "target.txt", "old\n", 4);
  char *target = tu_path(dir, "target.txt"), *link = tu_path(dir, "link.txt");
  cr_assert_eq(chmod(target, 0600), 0);
  cr_assert_eq(symlink("target.txt", link), 0);
  snprintf(args, sizeof args, "predict --task ctr --checkpoint %s --data %s --output %s", ck, test,
           link);
  run_ok(args, NULL, 0);
  struct stat sb;
  cr_assert_eq(lstat(link, &sb), 0);
  cr_expect(S_ISLNK(sb.st_mode), "the link was replaced by a file");
  cr_assert_eq(stat(target, &sb), 0);
  cr_expect_eq(sb.st_mode & 0777, 0600, "mode %o", (unsigned)(sb.st_mode & 0777));
  text = tool_slurp(target);
  cr_expect(strtod(text, NULL) > 0 && strtod(text, NULL) < 1, "%.40s", text);
  free(text);
  cr_expect_eq(tu_count_prefix(dir, "target.txt.tmp"), 0);
  free(target);
  free(link);
  free(same);
  free(good);
  free(bad);
  free(test);
  free(kept);
  free(data);
}

/* Ctrl-C (SIGINT) during validation or the test evaluation stops the run
 * as during training: status 130, last.ckpt of the epoch saved. */
Test(cli_train, ctr_sigint_during_validation_stops_the_run) {
  const char *exe = getenv("HS_HETSAGE");
  if (!exe) cr_skip_test("HS_HETSAGE is not set");
  char *data = make_ctr_dataset("ctr");
  /* 64 validation files of 20 copies of the training file (2 M examples,
   * seconds of validation: the stop lands in it) and 64 test files. */
  char many[12000] = "", make[2048];
  snprintf(make, sizeof make, "for i in $(seq 20); do cat %s/train.txt; done > %s/long.txt", data,
           scratch);
  cr_assert_eq(system(make), 0);
  size_t at = 0;
  for (int i = 0; i < 64; i++)
    at += (size_t)snprintf(many + at, sizeof many - at, " --valid %s/long.txt --test %s/train.txt",
                           scratch, data);
  static char cmd[16384];
  char out[8192];
  snprintf(cmd, sizeof cmd,
           "cd %s && { %s train " CTR_SMALL " --data %s/train.txt %s --checkpoint ick & pid=$!; "
           "i=0; while [ $i -lt 1200 ] && [ ! -e ick/last.ckpt ]; do sleep 0.05; i=$((i+1)); "
           "done; [ -e ick/last.ckpt ] && echo started; kill -INT $pid; wait $pid; "
           "echo status $?; } 2>&1",
           scratch, exe, data, many);
  FILE *p = popen(cmd, "r");
  cr_assert(p);
  size_t n = fread(out, 1, sizeof out - 1, p);
  out[n] = '\0';
  pclose(p);
  cr_assert(strstr(out, "started"), "no checkpoint appeared: %s", out);
  cr_expect(strstr(out, "status 130"), "SIGINT during validation: %s", out);
  cr_expect(strstr(out, "interrupted during the validation"), "%s", out);
  char *ck = tu_path(scratch, "ick");
  cr_expect_eq(tu_count_prefix(ck, "last.ckpt"), 1, "%s", out);
  /* The epoch saved waits for its validation: --resume runs it first (its
   * --log-json record, best.ckpt and best.json), though no epoch is left. */
  cr_expect(tu_exists(ck, "validation.pending"), "%s", out);
  cr_expect(!tu_exists(ck, "best.ckpt"));
  char *log = tu_path(scratch, "ick-log.json");
  snprintf(cmd, sizeof cmd, "train " CTR_SMALL " --data %s/train.txt --valid %s/valid.txt "
           "--checkpoint %s --resume --log-json %s --json", data, data, ck, log);
  run_ok(cmd, out, sizeof out);
  cr_expect(!tu_exists(ck, "validation.pending"));
  cr_expect(tu_exists(ck, "best.ckpt") && tu_exists(ck, "best.json"));
  char *text = tool_slurp(log);
  cr_expect_eq(json_lines(text, "--log-json"), 1, "%s", text);
  cr_expect(strstr(text, "\"epoch\": 1") && strstr(text, "\"valid_auc\": 0."), "%s", text);
  free(text);
  free(log);
  free(ck);
  /* The same during the test files' evaluation (no validation). */
  at = 0;
  for (int i = 0; i < 64; i++)
    at += (size_t)snprintf(many + at, sizeof many - at, " --test %s/train.txt", data);
  snprintf(cmd, sizeof cmd,
           "cd %s && { %s train " CTR_SMALL " --data %s/train.txt %s --checkpoint tck & pid=$!; "
           "i=0; while [ $i -lt 1200 ] && [ ! -e tck/last.ckpt ]; do sleep 0.05; i=$((i+1)); "
           "done; [ -e tck/last.ckpt ] && echo started; kill -INT $pid; wait $pid; "
           "echo status $?; } 2>&1",
           scratch, exe, data, many);
  p = popen(cmd, "r");
  cr_assert(p);
  n = fread(out, 1, sizeof out - 1, p);
  out[n] = '\0';
  pclose(p);
  cr_assert(strstr(out, "started"), "no checkpoint appeared: %s", out);
  cr_expect(strstr(out, "status 130"), "SIGINT during the test evaluation: %s", out);
  cr_expect(strstr(out, "interrupted during the test"), "%s", out);
  free(data);
}

/* --force removes the earlier run's checkpoints: a run without validation
 * leaves no best.ckpt of the earlier one for eval to take. */
Test(cli_train, ctr_force_removes_the_earlier_runs_checkpoints) {
  char *data = make_ctr_dataset("ctr");
  char args[2048], out[4096], ck[512];
  snprintf(ck, sizeof ck, "%s/fck", scratch);
  snprintf(args, sizeof args, "train " CTR_SMALL " --data %s --model lr --checkpoint %s", data, ck);
  run_ok(args, NULL, 0);
  cr_assert(tu_exists(ck, "best.ckpt") && tu_exists(ck, "best.json"));
  tu_write_bytes(ck, "notes.txt", "mine\n", 5);
  snprintf(args, sizeof args, "train " CTR_SMALL " --data %s/train.txt --model deepfm --dim 4 "
           "--hidden 8 --checkpoint %s --force", data, ck);
  run_ok(args, NULL, 0);
  cr_expect(!tu_exists(ck, "best.ckpt"), "the earlier run's best.ckpt is left");
  cr_expect(!tu_exists(ck, "best.json"), "the earlier run's best.json is left");
  cr_expect(tu_exists(ck, "last.ckpt"));
  cr_expect(tu_exists(ck, "notes.txt"), "--force removed a file not its own");
  snprintf(args, sizeof args, "train " CTR_SMALL " --data %s --checkpoint %s --resume --json", data,
           ck);
  run_ok(args, out, sizeof out);
  cr_expect(strstr(out, "\"model\": \"deepfm\""), "%s", out);
  free(data);
}

/* A file's text, or "" when there is none (freed by the caller). */
static char *text_or_empty(const char *path) {
  struct stat sb;
  if (stat(path, &sb) != 0) return strdup("");
  return tool_slurp(path);
}

/* A run that fails before its first record leaves --stats-json and
 * --log-json files as they were, and no checkpoint folder it created. */
Test(cli_train, ctr_a_failed_run_leaves_its_outputs_untouched) {
  char *data = make_ctr_dataset("ctr");
  char args[2048], err[16384], ck[512];
  snprintf(ck, sizeof ck, "%s/eck", scratch);
  tu_write_bytes(scratch, "kstats.json", "keep\n", 5);
  tu_write_bytes(scratch, "klog.json", "keep\n", 5);
  snprintf(args, sizeof args, "train " CTR_SMALL " --data %s --embed-budget 10K --checkpoint %s "
           "--stats-json %s/kstats.json --log-json %s/klog.json", data, ck, scratch, scratch);
  int rc = tool_run2("", args, NULL, 0, err, sizeof err);
  cr_expect_eq(rc, 1, "%s", err);
  static const char *const names[] = {"kstats.json", "klog.json"};
  for (int i = 0; i < 2; i++) {
    char *p = tu_path(scratch, names[i]);
    char *text = text_or_empty(p);
    cr_expect_str_eq(text, "keep\n", "%s was changed", names[i]);
    free(text);
    free(p);
  }
  struct stat sb;
  cr_expect_neq(stat(ck, &sb), 0, "the failed run left %s", ck);
  free(data);
}

/* Missing or malformed --valid and --test files and a --checkpoint that is
 * a file are said before training (no epoch's record written). */
Test(cli_train, ctr_inputs_are_checked_before_training) {
  char *data = make_ctr_dataset("ctr");
  char args[2048], err[16384], stats[512];
  snprintf(stats, sizeof stats, "%s/pstats.json", scratch);
  tu_write_bytes(scratch, "mal.txt", "1\t2\t3\n", 6);
  tu_write_bytes(scratch, "afile", "x", 1);
  static const char *const cases[][2] = {
      {"--valid %s/none.txt", "none.txt"},
      {"--test %s/mal.txt", "mal.txt:1:"},
      {"--checkpoint %s/afile", "not a folder"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char opt[600];
    snprintf(opt, sizeof opt, cases[i][0], scratch);
    snprintf(args, sizeof args, "train " CTR_SMALL " --data %s/train.txt --model lr %s "
             "--stats-json %s", data, opt, stats);
    int rc = tool_run2("", args, NULL, 0, err, sizeof err);
    cr_expect_eq(rc, 1, "%s: %s", opt, err);
    cr_expect(strstr(err, cases[i][1]), "%s: %s", opt, err);
    struct stat sb;
    cr_expect_neq(stat(stats, &sb), 0, "%s: an epoch ran before the error", opt);
    unlink(stats);
  }
  /* gzip or not by the content, as the reader decides, not by the name: a
   * gzip file without .gz and a plain file named .gz are data. */
  char src[600], cmd[2048];
  snprintf(src, sizeof src, "%s/train.txt", data);
  snprintf(cmd, sizeof cmd, "gzip -c %s > %s/zipped.dat && cp %s %s/plain.gz", src, scratch, src,
           scratch);
  cr_assert_eq(system(cmd), 0);
  snprintf(args, sizeof args, "train " CTR_SMALL " --data %s/zipped.dat --valid %s/plain.gz "
           "--model lr", scratch, scratch);
  run_ok(args, NULL, 0);
  free(data);
}

/* Training files that hold no example are an error naming them (an empty
 * plain file, and a gzip file of no lines), before any epoch is written or
 * a checkpoint folder left; a run without test files, or whose test files
 * hold none, says so where the test AUC would be. */
Test(cli_train, ctr_no_examples_to_train_on_is_an_error) {
  char *data = make_ctr_dataset("ctr");
  char args[2048], out[8192], err[16384], stats[512], ck[512], cmd[1024];
  snprintf(stats, sizeof stats, "%s/nstats.json", scratch);
  snprintf(ck, sizeof ck, "%s/nck", scratch);
  tu_write_bytes(scratch, "empty.txt", "", 0);
  snprintf(cmd, sizeof cmd, "gzip -c < /dev/null > %s/empty.gz", scratch);
  cr_assert_eq(system(cmd), 0);
  static const char *const files[] = {"empty.txt", "empty.gz", "empty.txt --data %s/empty.gz"};
  for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
    char file[700];
    snprintf(file, sizeof file, files[i], scratch);
    snprintf(args, sizeof args, "train " CTR_SMALL " --data %s/%s --model lr --stats-json %s "
             "--checkpoint %s", scratch, file, stats, ck);
    int rc = tool_run2("", args, out, sizeof out, err, sizeof err);
    cr_expect_eq(rc, 1, "%s: %s", file, err);
    cr_expect(strstr(err, "hold no examples"), "%s: %s", file, err);
    cr_expect(strstr(err, i == 1 ? "empty.gz)" : i == 0 ? "empty.txt)" : "empty.txt and the others)"),
              "%s: %s", file, err);
    cr_expect(!strstr(out, "AUC"), "%s: %s", file, out);
    struct stat sb;
    cr_expect_neq(stat(stats, &sb), 0, "%s: an epoch's stats were written", file);
    cr_expect_neq(stat(ck, &sb), 0, "%s: the checkpoint folder was left", file);
  }
  snprintf(args, sizeof args, "train " CTR_SMALL " --data %s/train.txt --model lr", data);
  run_ok(args, out, sizeof out);
  cr_expect(strstr(out, "no test AUC: no --test files"), "%s", out);
  cr_expect(!strstr(out, "nan"), "%s", out);
  snprintf(args, sizeof args, "train " CTR_SMALL " --data %s/train.txt --test %s/empty.txt "
           "--model lr", data, scratch);
  run_ok(args, out, sizeof out);
  cr_expect(strstr(out, "no test AUC: the test files hold no examples"), "%s", out);
  cr_expect(!strstr(out, "nan"), "%s", out);
  /* eval: no examples is an error; one class only has no AUC, said so. */
  snprintf(args, sizeof args, "train " CTR_SMALL " --data %s/train.txt --model lr --checkpoint %s",
           data, ck);
  run_ok(args, NULL, 0);
  snprintf(args, sizeof args, "eval --task ctr --checkpoint %s --data %s/empty.txt", ck, scratch);
  int rc = tool_run2("", args, out, sizeof out, err, sizeof err);
  cr_expect_eq(rc, 1, "%s", err);
  cr_expect(strstr(err, "the files hold no examples") && strstr(err, "empty.txt"), "%s", err);
  cr_expect_eq(out[0], '\0', "%s", out);
  char line[256];
  snprintf(cmd, sizeof cmd, "%s/train.txt", data);
  FILE *f = fopen(cmd, "r");
  cr_assert(f);
  while (fgets(line, sizeof line, f) && line[0] != '0') {
  }
  fclose(f);
  cr_assert_eq(line[0], '0');
  tu_write_bytes(scratch, "neg.txt", line, strlen(line));
  snprintf(args, sizeof args, "eval --task ctr --checkpoint %s --data %s/neg.txt", ck, scratch);
  run_ok(args, out, sizeof out);
  cr_expect(strstr(out, "no AUC (the labels are all 0), logloss "), "%s", out);
  free(data);
}

/* --resume compares the values the run uses: --admit-after 1 is the
 * default's admission; a decimal that differs beyond 6 digits is refused;
 * so is --standardize-dense for a run that did not standardize. */
Test(cli_train, ctr_resume_compares_exact_values) {
  char *data = make_ctr_dataset("ctr");
  char args[2048], err[16384], ck[512];
  snprintf(ck, sizeof ck, "%s/rck", scratch);
  snprintf(args, sizeof args, "train " CTR_SMALL " --data %s/train.txt --model lr "
           "--sparse-init-acc 1e-6 --checkpoint %s", data, ck);
  run_ok(args, NULL, 0);
  snprintf(args, sizeof args, "train " CTR_SMALL " --data %s/train.txt --checkpoint %s --resume "
           "--admit-after 1 --lr 0.001 --init-range 0.05 --sparse-init-acc 1e-6", data, ck);
  run_ok(args, NULL, 0);
  static const char *const conflicts[][2] = {
      {"--lr 0.001000001", "--lr"},
      {"--sparse-init-acc 1.000001e-6", "--sparse-init-acc"},
      {"--init-range 0.05000001", "--init-range"},
      {"--admit-after 2", "--admit-after"},
      {"--standardize-dense", "--standardize-dense"},
  };
  for (size_t i = 0; i < sizeof conflicts / sizeof conflicts[0]; i++) {
    snprintf(args, sizeof args, "train " CTR_SMALL " --data %s/train.txt --checkpoint %s --resume "
             "%s", data, ck, conflicts[i][0]);
    int rc = tool_run2("", args, NULL, 0, err, sizeof err);
    cr_expect_eq(rc, 2, "%s: %s", conflicts[i][0], err);
    cr_expect(strstr(err, conflicts[i][1]) && strstr(err, "conflicts with the checkpoint"),
              "%s: %s", conflicts[i][0], err);
  }
  free(data);
}

/* A checkpoint with a corrupt header is said to be one, naming it (1), not
 * a bad option (2). */
Test(cli_train, ctr_corrupt_checkpoint_header_is_a_bad_file) {
  char *data = make_ctr_dataset("ctr");
  char args[2048], err[16384], ck[512];
  snprintf(ck, sizeof ck, "%s/cck", scratch);
  snprintf(args, sizeof args, "train " CTR_SMALL " --data %s/train.txt --dim 4 --hidden 8 "
           "--checkpoint %s", data, ck);
  run_ok(args, NULL, 0);
  char *last = tu_path(ck, "last.ckpt");
  int fd = open(last, O_WRONLY);
  cr_assert_geq(fd, 0);
  static const unsigned char zero[4] = {0};
  cr_assert_eq(pwrite(fd, zero, 4, 16), 4); /* the embedding dim */
  close(fd);
  snprintf(args, sizeof args, "eval --task ctr --checkpoint %s --data %s", last, data);
  int rc = tool_run2("", args, NULL, 0, err, sizeof err);
  cr_expect_eq(rc, 1, "%s", err);
  cr_expect(strstr(err, last) && strstr(err, "not a valid CTR checkpoint"), "%s", err);
  snprintf(args, sizeof args, "train " CTR_SMALL " --data %s/train.txt --epochs 2 --checkpoint %s "
           "--resume", data, ck);
  rc = tool_run2("", args, NULL, 0, err, sizeof err);
  cr_expect_eq(rc, 1, "%s", err);
  cr_expect(strstr(err, last) && strstr(err, "not a valid CTR checkpoint"), "%s", err);
  free(last);
  free(data);
}

/* Resumed at the end, train --json has no figures of training (null) and
 * the store's real size. */
Test(cli_train, ctr_resumed_at_the_end_json) {
  char *data = make_ctr_dataset("ctr");
  char args[2048], out[8192], ck[512];
  snprintf(ck, sizeof ck, "%s/jck", scratch);
  snprintf(args, sizeof args, "train " CTR_SMALL " --data %s --model lr --checkpoint %s --json",
           data, ck);
  run_ok(args, out, sizeof out);
  hs_json *v = json_doc(out, "train --json");
  double rows = hs__json_number(v, "embed_rows", -1);
  hs__json_free(v);
  cr_assert_gt(rows, 0);
  snprintf(args, sizeof args, "train " CTR_SMALL " --data %s --checkpoint %s --resume --json",
           data, ck);
  run_ok(args, out, sizeof out);
  v = json_doc(out, "train --json (resumed at the end)");
  static const char *const nulls[] = {"loss", "train_examples_per_s", "train_s"};
  for (int i = 0; i < 3; i++)
    cr_expect_eq(hs__json_get(v, nulls[i])->type, HS_JSON_NULL, "%s: %s", nulls[i], out);
  cr_expect_eq(hs__json_number(v, "embed_rows", -1), rows, "%s", out);
  hs__json_free(v);
  free(data);
}

/* eval and predict do what their help says or refuse the option; the
 * GNN commands' help names --task ctr, and a CTR checkpoint given without
 * it is said to be one; a 65th --valid or --test is refused. */
Test(cli_train, ctr_options_do_what_help_says) {
  char *data = make_ctr_dataset("ctr");
  char args[16384], out[16384], err[16384], ck[512];
  snprintf(ck, sizeof ck, "%s/hck", scratch);
  snprintf(args, sizeof args, "train " CTR_SMALL " --data %s --model lr --checkpoint %s", data, ck);
  run_ok(args, out, sizeof out);
  static const char *const refused[][2] = {
      {"predict --task ctr --checkpoint %s --data %s/test.txt --json", "--json"},
      {"predict --task ctr --checkpoint %s --data %s/test.txt --valid x.txt", "--valid"},
      {"eval --task ctr --checkpoint %s --test %s/test.txt", "--test"},
      {"eval --task ctr --checkpoint %s --data %s --test x.txt", "--test"},
      {"eval --task ctr --checkpoint %s --data %s --pipeline threads", "--pipeline"},
      {"predict --task ctr --checkpoint %s --data %s/test.txt --depth 2", "--depth"},
  };
  for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
    snprintf(args, sizeof args, refused[i][0], ck, data);
    int rc = tool_run2("", args, out, sizeof out, err, sizeof err);
    cr_expect_eq(rc, 2, "%s: %s", args, err);
    cr_expect(strstr(err, refused[i][1]), "%s: %s", args, err);
  }
  /* Every --data is evaluated: the folder's test file and the extra one. */
  snprintf(args, sizeof args, "eval --task ctr --checkpoint %s --data %s --data %s/valid.txt --json",
           ck, data, data);
  run_ok(args, out, sizeof out);
  hs_json *v = json_doc(out, "eval --json");
  cr_expect_eq(hs__json_number(v, "examples", -1), 400, "%s", out);
  hs__json_free(v);
  run_ok("eval --help", out, sizeof out);
  cr_expect(strstr(out, "--task ctr"), "%s", out);
  run_ok("predict --help", out, sizeof out);
  cr_expect(strstr(out, "--task ctr"), "%s", out);
  snprintf(args, sizeof args, "eval --checkpoint %s --dataset %s", ck, ds);
  int rc = tool_run2("", args, NULL, 0, err, sizeof err);
  cr_expect_neq(rc, 0);
  cr_expect(strstr(err, "--task ctr"), "%s", err);
  /* A 65th --valid, a 65th --test. */
  static const char *const opt[] = {"--valid", "--test"};
  for (int k = 0; k < 2; k++) {
    int at = snprintf(args, sizeof args, "train " CTR_SMALL " --data %s/train.txt --model lr", data);
    for (int i = 0; i < 65; i++)
      at += snprintf(args + at, sizeof args - (size_t)at, " %s %s/valid.txt", opt[k], data);
    rc = tool_run2("", args, NULL, 0, err, sizeof err);
    cr_expect_eq(rc, 2, "65 %s: %s", opt[k], err);
    cr_expect(strstr(err, opt[k]) && strstr(err, "64"), "%s", err);
  }
  free(data);
}

/* The Bayes AUC a generated folder records is its own test file's: printed
 * against that file only. */
Test(cli_train, ctr_bayes_gap_only_against_the_folders_test_file) {
  char *data = make_ctr_dataset("ctr");
  char args[2048], out[8192];
  snprintf(args, sizeof args, "train " CTR_SMALL " --data %s --model lr", data);
  run_ok(args, out, sizeof out);
  cr_expect(strstr(out, "Bayes AUC"), "%s", out);
  snprintf(args, sizeof args, "train " CTR_SMALL " --data %s --model lr --test %s/valid.txt", data,
           data);
  run_ok(args, out, sizeof out);
  cr_expect(!strstr(out, "Bayes"), "%s", out);
  snprintf(args, sizeof args, "train " CTR_SMALL " --data %s --model lr --json --test %s/valid.txt",
           data, data);
  run_ok(args, out, sizeof out);
  cr_expect(!strstr(out, "bayes"), "%s", out);
  free(data);
}

/* embed --out naming a file in the dataset's folder (its features, or a
 * new name beside them) is refused before any work and the folder is left
 * as it was; a file elsewhere is written. */
Test(cli_train, embed_does_not_write_into_the_dataset) {
  char args[2048], out[4096], err[4096];
  char *ck = tu_path(scratch, "ck_embed"), *feat = tu_path(ds, "feat.npy");
  char *beside = tu_path(ds, "emb.npy"), *fine = tu_path(scratch, "emb.npy");
  snprintf(args, sizeof args, "train --dataset %s " SMALL " --checkpoint %s", ds, ck);
  cr_assert_eq(tool_run2("", args, out, sizeof out, err, sizeof err), 0, "%s", err);
  char *before = tool_slurp(feat);
  const char *bad[] = {feat, beside};
  for (int k = 0; k < 2; k++) {
    snprintf(args, sizeof args, "embed --checkpoint %s --dataset %s --out %s", ck, ds, bad[k]);
    cr_expect_eq(tool_run2("", args, out, sizeof out, err, sizeof err), 2, "%s", err);
    cr_expect(strstr(err, "dataset's folder") && strstr(err, bad[k]), "%s", err);
  }
  char *after = tool_slurp(feat);
  cr_expect(before && after && strcmp(before, after) == 0, "feat.npy changed");
  cr_expect_not(tu_exists(ds, "emb.npy"));
  snprintf(args, sizeof args, "embed --checkpoint %s --dataset %s --out %s", ck, ds, fine);
  cr_expect_eq(tool_run2("", args, out, sizeof out, err, sizeof err), 0, "%s", err);
  cr_expect(tu_exists(scratch, "emb.npy"));
  free(before), free(after), free(ck), free(feat), free(beside), free(fine);
}

/* --patience counts across a resume: the epochs after the folder's best
 * (best.json) count as epochs without improvement, so a resumed run stops
 * where one run would have, and a run that stopped for it stops again
 * without training. */
Test(cli_train, patience_counts_across_a_resume) {
  char args[2048], out[4096], ckpt[512];
  snprintf(ckpt, sizeof ckpt, "%s/pat", scratch);
  const char *o = "--batch 50 --hidden 16 --fanouts 5,3 -q --json";
  snprintf(args, sizeof args, "train --dataset %s %s --epochs 3 --checkpoint %s", ds, o, ckpt);
  run_ok(args, NULL, 0);
  /* A best at epoch 1 that nothing beats: epochs 2 and 3 did not improve. */
  char *bj = tu_path(ckpt, "best.json");
  FILE *f = fopen(bj, "w");
  cr_assert_not_null(f);
  fputs("{\"valid_acc\": 1.0, \"epoch\": 1}\n", f);
  fclose(f);
  /* Patience 2 is spent already: no epoch. */
  snprintf(args, sizeof args, "train --dataset %s %s --epochs 10 --patience 2 --checkpoint %s "
           "--resume", ds, o, ckpt);
  run_ok(args, out, sizeof out);
  hs_json *v = json_doc(out, "train --json");
  cr_expect_eq(hs__json_number(v, "epochs", -1), 3, "%s", out);
  cr_expect(strstr(out, "\"stopped_by\": \"no validation improvement\""), "%s", out);
  hs__json_free(v);
  /* Patience 3: one more epoch (the third without improvement), not three. */
  snprintf(args, sizeof args, "train --dataset %s %s --epochs 10 --patience 3 --checkpoint %s "
           "--resume", ds, o, ckpt);
  run_ok(args, out, sizeof out);
  v = json_doc(out, "train --json");
  cr_expect_eq(hs__json_number(v, "epochs", -1), 4, "%s", out);
  cr_expect(strstr(out, "\"stopped_by\": \"no validation improvement\""), "%s", out);
  hs__json_free(v);
  free(bj);
}

/* convert --from criteo writes a folder of array sets (nothing at DST
 * until complete; an existing DST needs --force), and training, eval and
 * predict read it to the bits the text gives. */
Test(cli_train, ctr_converted_arrays_train_as_the_text_does) {
  char *data = make_ctr_dataset("ctr");
  char *arr = tu_path(scratch, "ctr-arrays");
  char args[4096], out[16384], err[16384];
  snprintf(args, sizeof args, "convert --from criteo --json --quiet %s %s", data, arr);
  run_ok(args, out, sizeof out);
  hs_json *v = json_doc(out, "convert --from criteo --json");
  hs__json_free(v);
  cr_expect(strstr(out, "\"name\": \"train\"") && strstr(out, "\"examples\": 1600"), "%s", out);
  static const char *const files[] = {"train_label.npy", "train_dense.npy", "train_ids.npy",
                                      "valid_ids.npy", "test_label.npy", "meta.json"};
  for (size_t i = 0; i < sizeof files / sizeof files[0]; i++)
    cr_expect(tu_exists(arr, files[i]), "%s not written", files[i]);
  cr_expect_eq(tu_count_prefix(scratch, "ctr-arrays.tmp-"), 0);
  snprintf(args, sizeof args, "convert --from criteo --quiet %s %s", data, arr);
  int rc = tool_run2("", args, NULL, 0, err, sizeof err);
  cr_expect_eq(rc, 2, "%s", err);
  cr_expect(strstr(err, "--force"), "%s", err);
  /* a bad line: status 1, the file and line named, nothing left */
  char *bad = tu_path(scratch, "bad.txt"), *bad_dst = tu_path(scratch, "bad-arrays");
  FILE *f = fopen(bad, "w");
  fputs("1\t2\t3\n", f);
  fclose(f);
  snprintf(args, sizeof args, "convert --from criteo --quiet %s %s", bad, bad_dst);
  rc = tool_run2("", args, NULL, 0, err, sizeof err);
  cr_expect_eq(rc, 1, "%s", err);
  cr_expect(strstr(err, "bad.txt:1"), "%s", err);
  struct stat sb;
  cr_expect_neq(stat(bad_dst, &sb), 0, "%s was written", bad_dst);
  cr_expect_eq(tu_count_prefix(scratch, "bad-arrays.tmp-"), 0);
  /* the same model trained from either, predicting from either */
  char ck[2][512], pred[4][512];
  const char *from[2] = {data, arr};
  for (int k = 0; k < 2; k++) {
    snprintf(ck[k], sizeof ck[k], "%s/ctr-arr-ck%d", scratch, k);
    snprintf(args, sizeof args,
             "train " CTR_SMALL " --data %s --model deepfm --dim 4 --epochs 2 --checkpoint %s --json",
             from[k], ck[k]);
    run_ok(args, out, sizeof out);
    v = json_doc(out, "train --task ctr --json");
    cr_expect(hs__json_number(v, "test_examples", 0) == 200, "%s", out);
    hs__json_free(v);
  }
  const char *test_of[2] = {"test.txt", "test_ids.npy"};
  for (int k = 0; k < 4; k++) {
    snprintf(pred[k], sizeof pred[k], "%s/ctr-arr-pred%d.txt", scratch, k);
    snprintf(args, sizeof args, "predict --task ctr --checkpoint %s --data %s/%s --output %s",
             ck[k / 2], from[k % 2], test_of[k % 2], pred[k]);
    run_ok(args, NULL, 0);
  }
  char *p0 = tool_slurp(pred[0]);
  for (int k = 1; k < 4; k++) {
    char *pk = tool_slurp(pred[k]);
    cr_expect_str_eq(pk, p0, "prediction %d differs from the text-trained model's on text", k);
    free(pk);
  }
  cr_expect_gt(strlen(p0), 200u);
  free(p0);
  /* eval on the folder of sets */
  snprintf(args, sizeof args, "eval --task ctr --checkpoint %s --data %s --json", ck[1], arr);
  run_ok(args, out, sizeof out);
  v = json_doc(out, "eval --task ctr --json");
  hs__json_free(v);
  free(bad), free(bad_dst), free(arr), free(data);
}
