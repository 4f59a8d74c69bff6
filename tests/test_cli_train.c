/* The training commands (train, eval, predict) and the commands that open
 * the devices (info, place) as a user meets them: outputs checked, strict
 * JSON, checkpoints that are not overwritten by accident, splits checked at
 * the start, the printed plan is the plan that runs, bad features and a
 * diverging loss stop the run, small graphs train with the default batch. */
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
