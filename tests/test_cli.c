/* The hetsage command as a user meets it, for the commands that need no
 * OpenCL kernel: every output checked (a full disk is an error), strict JSON,
 * one rule for bad option values, special files that must not hang, dataset
 * directories with the umask's mode, temporaries cleaned on signals and on
 * the next run. (Training commands: test_cli_train.c.) */
#include <criterion/criterion.h>
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hs_test_util.h"
#include "json_check.h"
#include "tool_run.h"

static char *scratch;

static void setup(void) { scratch = tu_mkdtemp(); }
static void teardown(void) { tu_rmtree(scratch); }

TestSuite(cli, .init = setup, .fini = teardown, .timeout = 300);

/* A small generated SBM dataset at scratch/name. */
static char *make_dataset(const char *name, const char *extra) {
  char *dst = tu_path(scratch, name);
  char args[1024], out[4096];
  snprintf(args, sizeof args, "generate --kind sbm --vertices 300 --features 8 --quiet %s %s",
           extra ? extra : "", dst);
  cr_assert_eq(tool_run("", args, out, sizeof out), 0, "%s", out);
  return dst;
}

/* ---- every output is checked ---------------------------------------------- */

static void expect_write_failure(const char *args) {
  char cmd[2048], err[4096];
  snprintf(cmd, sizeof cmd, "%s >/dev/full", args);
  int rc = tool_run2("", cmd, NULL, 0, err, sizeof err);
  cr_expect_neq(rc, 0, "'%s' to a full disk exited 0", args);
  cr_expect(strstr(err, "writing standard output: ") != NULL, "'%s': %s", args, err);
}

Test(cli, writes_to_a_full_disk_fail) {
  char *ds = make_dataset("g", NULL);
  char args[1024];
  snprintf(args, sizeof args, "stats %s", ds);
  expect_write_failure(args);
  snprintf(args, sizeof args, "stats --json %s", ds);
  expect_write_failure(args);
  expect_write_failure("version");
  expect_write_failure("--help");
  expect_write_failure("train --help");
  char *dst = tu_path(scratch, "g2");
  snprintf(args, sizeof args, "generate --kind sbm --vertices 100 --features 8 --quiet --json %s",
           dst);
  expect_write_failure(args);
  char *src = tu_path(getenv("HS_TEST_DATA"), "linqs_tiny");
  char *dst3 = tu_path(scratch, "c3");
  snprintf(args, sizeof args, "convert --from linqs --quiet --json %s %s", src, dst3);
  expect_write_failure(args);
  free(ds);
  free(dst);
  free(src);
  free(dst3);
}

/* ---- strict JSON ------------------------------------------------------------ */

Test(cli, json_outputs_are_strict_json) {
  char *ds = make_dataset("g", NULL);
  char args[1024], out[16384], err[4096];
  snprintf(args, sizeof args, "stats --json %s", ds);
  cr_assert_eq(tool_run2("", args, out, sizeof out, err, sizeof err), 0, "%s", err);
  hs__json_free(json_doc(out, "stats --json"));
  char *meta = tu_path(ds, "meta.json");
  char *text = tool_slurp(meta);
  hs__json_free(json_doc(text, "meta.json"));
  free(text);
  free(meta);
  /* R-MAT has no one-hop accuracy: null, not nan. */
  char *dst = tu_path(scratch, "r");
  snprintf(args, sizeof args, "generate --kind rmat --scale 8 --features 8 --quiet --json %s",
           dst);
  cr_assert_eq(tool_run2("", args, out, sizeof out, err, sizeof err), 0, "%s", err);
  hs_json *v = json_doc(out, "generate --json");
  cr_expect_eq(hs__json_get(v, "one_hop_accuracy")->type, HS_JSON_NULL);
  hs__json_free(v);
  meta = tu_path(dst, "meta.json");
  text = tool_slurp(meta);
  hs__json_free(json_doc(text, "meta.json (R-MAT)"));
  free(text);
  free(meta);
  /* CTR data without a test split has no Bayes figures: null, not nan
   * (and -q is --quiet: nothing on stderr). */
  char *dst4 = tu_path(scratch, "ctr");
  snprintf(args, sizeof args, "generate --kind ctr --rows 50 --split 1,0,0 -q --json %s", dst4);
  cr_assert_eq(tool_run2("", args, out, sizeof out, err, sizeof err), 0, "%s", err);
  cr_expect_eq(err[0], 0, "stderr: %s", err);
  v = json_doc(out, "generate --kind ctr --json");
  cr_expect_eq(hs__json_get(v, "bayes_auc")->type, HS_JSON_NULL);
  cr_expect_eq(hs__json_get(hs__json_get(v, "positive_rate"), "test")->type, HS_JSON_NULL);
  hs__json_free(v);
  meta = tu_path(dst4, "meta.json");
  text = tool_slurp(meta);
  hs__json_free(json_doc(text, "meta.json (CTR)"));
  free(text);
  free(meta);
  free(dst4);
  char *src = tu_path(getenv("HS_TEST_DATA"), "linqs_tiny");
  char *dst3 = tu_path(scratch, "c3");
  snprintf(args, sizeof args, "convert --from linqs --quiet --json %s %s", src, dst3);
  cr_assert_eq(tool_run2("", args, out, sizeof out, err, sizeof err), 0, "%s", err);
  hs__json_free(json_doc(out, "convert --json"));
  free(ds);
  free(dst);
  free(src);
  free(dst3);
}

/* ---- one rule for bad values ------------------------------------------------- */

/* `args` is refused with status 2 and a message naming `opt` and `range`. */
static void expect_refused(const char *args, const char *opt, const char *range) {
  char err[4096];
  int rc = tool_run2("", args, NULL, 0, err, sizeof err);
  cr_expect_eq(rc, 2, "'%s' exited %d: %s", args, rc, err);
  cr_expect(strstr(err, opt) != NULL, "'%s': the message does not name %s: %s", args, opt, err);
  cr_expect(strstr(err, range) != NULL, "'%s': the message does not give '%s': %s", args, range,
            err);
}

/* The command runs OpenBLAS on the kernel set hs_blas_kernels_suggested()
 * names where OpenBLAS fell back to an older one on this CPU (its own pick
 * otherwise), and an OPENBLAS_CORETYPE the user set is left alone. */
Test(cli, openblas_runs_the_kernels_this_cpu_runs_best) {
  if (!hs_blas_kernels()) cr_skip_test("this build has no CBLAS");
  if (getenv("OPENBLAS_CORETYPE")) cr_skip_test("OPENBLAS_CORETYPE is set for the tests");
  const char *own = hs_blas_kernels(), *best = hs_blas_kernels_suggested();
  char out[16384], err[4096], want[160];
  cr_assert_eq(tool_run2("env -u OPENBLAS_CORETYPE", "info --json", out, sizeof out, err, sizeof err),
               0, "%s", err);
  hs_json *v = json_doc(out, "info --json");
  const hs_json *k = hs__json_get(v, "blas_kernels");
  cr_assert(k && k->type == HS_JSON_STRING, "%s", out);
  cr_expect_str_eq(k->string, best ? best : own, "OpenBLAS picked %s here", own);
  hs__json_free(v);
  cr_assert_eq(tool_run2("env -u OPENBLAS_CORETYPE", "info", out, sizeof out, err, sizeof err), 0,
               "%s", err);
  snprintf(want, sizeof want, "CPU products: OpenBLAS, its %s kernels\n", best ? best : own);
  cr_expect(strstr(out, want), "%s", out);
#if defined(__x86_64__)
  /* The user's choice stays (Prescott: SSE3, which every x86-64 CPU has). */
  cr_assert_eq(tool_run2("OPENBLAS_CORETYPE=Prescott", "info --json", out, sizeof out, err,
                         sizeof err), 0, "%s", err);
  v = json_doc(out, "info --json");
  k = hs__json_get(v, "blas_kernels");
  cr_assert(k && k->type == HS_JSON_STRING, "%s", out);
  cr_expect_str_eq(k->string, "Prescott");
  hs__json_free(v);
#endif
}

Test(cli, lists_with_empty_items_are_refused) {
  static const char *const fanouts[] = {"1,,2", "25,10,", ",25", ",", "", "25,,"};
  char args[256];
  for (size_t i = 0; i < sizeof fanouts / sizeof fanouts[0]; i++) {
    snprintf(args, sizeof args, "train --fanouts '%s'", fanouts[i]);
    expect_refused(args, "--fanouts", "[1, 1000000]");
  }
  expect_refused("predict --checkpoint x.ckpt --ids 1,,2", "--ids", "1,,2");
  expect_refused("predict --checkpoint x.ckpt --ids 1,2,", "--ids", "1,2,");
  expect_refused("predict --checkpoint x.ckpt --ids ,1", "--ids", ",1");
  expect_refused("generate --kind sbm --split 0.6,,0.2 /tmp/x", "--split", "0.6,,0.2");
  expect_refused("convert --from linqs --split 0.6,0.2,0.2, a b", "--split", "0.6,0.2,0.2,");
}

Test(cli, bad_values_name_the_option_and_the_range) {
  expect_refused("train --lr 100", "--lr", "(0, 100)");
  expect_refused("train --lr 0", "--lr", "(0, 100)");
  expect_refused("train --lr nan", "--lr", "(0, 100)");
  expect_refused("train --lr inf", "--lr", "(0, 100)");
  expect_refused("train --dropout 1", "--dropout", "[0, 1)");
  expect_refused("train --weight-decay -0.1", "--weight-decay", "[0, 1)");
  expect_refused("train --batch 0", "--batch", "[1, 16777216]");
  expect_refused("train --hidden ' 12'", "--hidden", "[1, 65536]");
  expect_refused("train --depth 65", "--depth", "[1, 64]");
  expect_refused("train --seed -1", "--seed", "[0, 18446744073709551615]");
  expect_refused("train --epochs 0", "--epochs", "[1, 1000000]");
  expect_refused("train --patience x", "--patience", "[1, ");
  expect_refused("train --target-acc 1.5", "--target-acc", "(0, 1]");
  expect_refused("train --mode fast", "--mode", "threads, async, off, auto or on");
  expect_refused("train --cache-fill all", "--cache-fill", "first, degree or presample");
  expect_refused("train --memory-budget 0", "--memory-budget", "at least 1 byte");
  expect_refused("generate --kind sbm --sigma 0 /tmp/x", "--sigma", "(0, ");
  expect_refused("generate --kind sbm --homophily 2 /tmp/x", "--homophily", "[0, 1]");
  expect_refused("generate --kind sbm --edges 0 /tmp/x", "--edges", "[1, ");
  expect_refused("generate --kind sbm --p-in 0.5 --edges 10 /tmp/x", "--p-in", "--edges");
  expect_refused("generate --kind sbm --homophily 0.5 --p-in 0.5 /tmp/x", "--p-in", "--homophily");
  expect_refused("generate --kind sbm --margin nan /tmp/x", "--margin", "[0, ");
  expect_refused("generate --kind sbm --vertices 0 /tmp/x", "--vertices", "[1, 2147483647]");
  expect_refused("generate --kind sbm --features 10 --words 50 /tmp/x", "--words", "--features");
  expect_refused("eval --checkpoint /tmp/x --lr 0.1", "--lr", "training only");
  expect_refused("predict --checkpoint /tmp/x --dropout 0.5", "--dropout", "training only");
  expect_refused("embed --checkpoint /tmp/x --out /tmp/y --optimizer sgd", "--optimizer",
                 "training only");
  expect_refused("eval --checkpoint /tmp/x --weight-decay 0.1", "--weight-decay", "training only");
  expect_refused("bringup --soak-seconds 0", "--soak-seconds", "(0, ");
  expect_refused("place --host-cores 0", "--host-cores", "[1, 65536]");
  expect_refused("place --feature-bytes 12Q", "--feature-bytes", "K, M, G, T");
}

/* A generated split with no training vertex is written (eval and predict
 * take it) with a warning that names the dataset; one with training
 * vertices has none. */
Test(cli, a_split_without_training_vertices_is_warned) {
  char args[1024], out[4096], err[4096];
  char *dst = tu_path(scratch, "no_train");
  snprintf(args, sizeof args, "generate --kind sbm --vertices 100 --split 0,0.5,0.5 -q %s", dst);
  cr_assert_eq(tool_run2("", args, out, sizeof out, err, sizeof err), 0, "%s", err);
  cr_expect(strstr(err, "warning") && strstr(err, "no training vertex") && strstr(err, dst),
            "%s", err);
  char *dst2 = tu_path(scratch, "with_train");
  snprintf(args, sizeof args, "generate --kind sbm --vertices 100 -q %s", dst2);
  cr_assert_eq(tool_run2("", args, out, sizeof out, err, sizeof err), 0, "%s", err);
  cr_expect(!strstr(err, "warning"), "%s", err);
  free(dst);
  free(dst2);
}

/* ---- special files never hang -------------------------------------------- */

/* `args` (run under a 60 s timeout) fails promptly, saying `path` is a FIFO. */
static void expect_fifo_refused(const char *args, const char *path) {
  char err[4096];
  int rc = tool_run2("timeout 60", args, NULL, 0, err, sizeof err);
  cr_expect_neq(rc, 124, "'%s' hung on the FIFO %s", args, path);
  cr_expect_neq(rc, 0, "'%s' accepted the FIFO %s", args, path);
  cr_expect(strstr(err, path) && strstr(err, "not a regular file (a FIFO)"), "'%s': %s", args,
            err);
}

Test(cli, fifos_are_refused_without_blocking) {
  static const char *const files[] = {"feat.npy", "indptr.npy", "label.npy", "valid_idx.npy",
                                      "weights.npy"};
  char args[1024];
  for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
    char *ds = make_dataset("g", NULL);
    char *f = tu_path(ds, files[i]);
    unlink(f);
    cr_assert_eq(mkfifo(f, 0644), 0);
    snprintf(args, sizeof args, "stats %s", ds);
    expect_fifo_refused(args, f);
    free(f);
    tu_rmtree(ds);
  }
  /* Importer inputs (through the gzip-capable text reader). */
  char *src = tu_path(scratch, "linqs");
  cr_assert_eq(mkdir(src, 0755), 0);
  char *content = tu_path(src, "tiny.content");
  char *cites = tu_path(src, "tiny.cites");
  cr_assert_eq(mkfifo(content, 0644), 0);
  tu_write_bytes(src, "tiny.cites", "", 0);
  snprintf(args, sizeof args, "convert --from linqs --quiet %s %s/out", content, scratch);
  expect_fifo_refused(args, content);
  /* A checkpoint, a saved benchmark run, a board profile. */
  char *fifo = tu_path(scratch, "x.ckpt");
  cr_assert_eq(mkfifo(fifo, 0644), 0);
  snprintf(args, sizeof args, "eval --checkpoint %s", fifo);
  expect_fifo_refused(args, fifo);
  char *json = tu_path(scratch, "run.json");
  cr_assert_eq(mkfifo(json, 0644), 0);
  snprintf(args, sizeof args, "bench --load %s", json);
  expect_fifo_refused(args, json);
  char *ini = tu_path(scratch, "board.ini");
  cr_assert_eq(mkfifo(ini, 0644), 0);
  snprintf(args, sizeof args, "bringup --board %s", ini);
  expect_fifo_refused(args, ini);
  free(src);
  free(content);
  free(cites);
  free(fifo);
  free(json);
  free(ini);
}

/* ---- modes, signals, stale temporaries ------------------------------------ */

static mode_t mode_of(const char *path) {
  struct stat sb;
  cr_assert_eq(stat(path, &sb), 0, "%s", path);
  return sb.st_mode & 07777;
}

Test(cli, dataset_directories_take_the_umask) {
  static const struct {
    const char *umask;
    mode_t dir, file;
  } cases[] = {{"022", 0755, 0644}, {"027", 0750, 0640}, {"077", 0700, 0600}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char env[64], args[1024], out[4096];
    char *dst = tu_path(scratch, cases[i].umask);
    snprintf(env, sizeof env, "umask %s;", cases[i].umask);
    snprintf(args, sizeof args, "generate --kind sbm --vertices 100 --features 8 --quiet %s", dst);
    cr_assert_eq(tool_run(env, args, out, sizeof out), 0, "%s", out);
    cr_expect_eq(mode_of(dst), cases[i].dir, "umask %s: directory mode %o", cases[i].umask,
                 mode_of(dst));
    char *feat = tu_path(dst, "feat.npy");
    cr_expect_eq(mode_of(feat), cases[i].file, "umask %s: file mode %o", cases[i].umask,
                 mode_of(feat));
    char *conv = tu_path(scratch, "conv");
    char *src = tu_path(getenv("HS_TEST_DATA"), "linqs_tiny");
    snprintf(args, sizeof args, "convert --from linqs --quiet --force %s %s", src, conv);
    cr_assert_eq(tool_run(env, args, out, sizeof out), 0, "%s", out);
    cr_expect_eq(mode_of(conv), cases[i].dir, "convert, umask %s: mode %o", cases[i].umask,
                 mode_of(conv));
    free(feat);
    free(dst);
    free(conv);
    free(src);
  }
}

/* Start a large generate into scratch/big in the background, wait until its
 * temporary exists, send `sig`; the shell's status line goes to `out`. */
static int generate_and_signal(const char *sig, char *out, size_t cap) {
  const char *exe = getenv("HS_HETSAGE");
  if (!exe) cr_skip_test("HS_HETSAGE is not set");
  char cmd[2048];
  snprintf(cmd, sizeof cmd,
           "cd %s && { %s generate --kind sbm --vertices 1500000 --edge-factor 8 --features 16 "
           "--quiet big & pid=$!; i=0; while [ $i -lt 600 ] && ! ls -d big.tmp-* >/dev/null 2>&1; "
           "do sleep 0.1; i=$((i+1)); done; ls -d big.tmp-* >/dev/null 2>&1 && echo started; "
           "kill -%s $pid; wait $pid; echo status $?; } 2>&1",
           scratch, exe, sig);
  FILE *p = popen(cmd, "r");
  cr_assert(p);
  size_t n = fread(out, 1, cap - 1, p);
  out[n] = '\0';
  return pclose(p);
}

Test(cli, a_signal_stops_generate_and_leaves_nothing, .timeout = 600) {
  char out[4096];
  generate_and_signal("TERM", out, sizeof out);
  cr_assert(strstr(out, "started"), "the temporary never appeared: %s", out);
  cr_expect(strstr(out, "status 130"), "SIGTERM: %s", out);
  cr_expect(strstr(out, "interrupted"), "%s", out);
  cr_expect_eq(tu_count_prefix(scratch, "big"), 0, "left behind after SIGTERM: %s", out);
}

Test(cli, the_next_run_removes_temporaries_of_a_killed_one, .timeout = 600) {
  char out[4096];
  generate_and_signal("KILL", out, sizeof out);
  cr_assert(strstr(out, "started"), "the temporary never appeared: %s", out);
  cr_assert_eq(tu_count_prefix(scratch, "big.tmp-"), 1, "SIGKILL cannot clean: %s", out);
  char args[1024], *dst = tu_path(scratch, "big");
  snprintf(args, sizeof args, "generate --kind sbm --vertices 100 --features 8 --quiet %s", dst);
  cr_assert_eq(tool_run("", args, out, sizeof out), 0, "%s", out);
  cr_expect_eq(tu_count_prefix(scratch, "big.tmp-"), 0, "the killed run's temporary stayed");
  cr_expect_eq(tu_count_prefix(scratch, "big"), 1);
  free(dst);
}
