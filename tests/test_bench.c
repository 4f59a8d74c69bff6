/* Benchmarks: summaries; saved runs load back; comparison
 * flags a regression beyond the spread (and only that); `hetsage bench
 * --compare` on two saved runs; the self-contained HTML report. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/hs_json.h"
#include "bench/hs_measure.h"
#include "hetsage.h"
#include "hetsage/bench.h"
#include "tool_run.h"

Test(bench, summaries_are_median_min_max) {
  double v[] = {5, 1, 4, 2, 3};
  hs_summary s = hs__summarize(v, 5);
  cr_expect_eq(s.median, 3);
  cr_expect_eq(s.min, 1);
  cr_expect_eq(s.max, 5);
  cr_expect_eq(v[0], 5, "the input is left alone");
  s = hs__summarize(v, 4);
  cr_expect_eq(s.median, 3.0); /* (2 + 4) / 2 */
  double lim[] = {10, 2, 8, 4, 6};
  s = hs__summarize_ratio(v, lim, 5);
  cr_expect_eq(s.median, 0.5);
  cr_expect_eq(s.min, 0.5);
  cr_expect_eq(s.max, 0.5);
  unsigned w;
  cr_expect_eq(hs_bench_workloads_parse("sample,gemm", &w), HS_OK);
  cr_expect_eq(w, (unsigned)(HS_BENCH_SAMPLE | HS_BENCH_GEMM));
  cr_expect_eq(hs_bench_workloads_parse("all", &w), HS_OK);
  cr_expect_eq(w, (unsigned)HS_BENCH_ALL);
  cr_expect_eq(hs_bench_workloads_parse("gemm,bogus", &w), HS_ERR_INVALID_ARG);
}

/* ---- saved runs and comparison ---------------------------------------------------- */

/* A saved run with two figures; `ratios` and `epoch` fill in the
 * sampling figure's ratios and the epoch figure's median, min, max. */
static const char run_template[] =
    "{\"hetsage_bench\": 1, \"runs\": 3, \"warmup\": 1, \"batch\": 256, \"fanouts\": [15, 10, 5],"
    " \"dataset\": \"/x\", \"figures\": [\n"
    " {\"workload\": \"sample\", \"device\": \"dev0\", \"figure\": \"sampled_edges_per_s\","
    "  \"unit\": \"edges/s\", \"better\": \"higher\", \"runs\": 3, \"median\": 100, \"min\": 90,"
    "  \"max\": 110, \"limit\": \"random_reads_per_s\", \"limit_median\": 1000, \"limit_min\": 900,"
    "  \"limit_max\": 1100, %s},\n"
    " {\"workload\": \"train\", \"device\": \"dev0\", \"figure\": \"epoch_s\", \"unit\": \"s\","
    "  \"better\": \"lower\", %s, \"limit\": null,"
    "  \"ratio_median\": null}]}\n";

static const char base_ratios[] = "\"ratio_median\": 0.1, \"ratio_min\": 0.09, \"ratio_max\": 0.11";
static const char base_epoch[] = "\"median\": 2, \"min\": 1.9, \"max\": 2.1";

static hs_bench_results *load_text(const char *text) {
  char path[512];
  tool_tmp(path, sizeof path, "run.json");
  FILE *f = fopen(path, "w");
  cr_assert_not_null(f);
  fputs(text, f);
  fclose(f);
  hs_bench_results *r = NULL;
  hs_status st = hs_bench_results_load(path, &r);
  unlink(path);
  cr_assert_eq(st, HS_OK, "%s", hs_last_error());
  return r;
}

Test(bench, saved_runs_load_and_compare) {
  char text[sizeof run_template + 256];
  snprintf(text, sizeof text, run_template, base_ratios, base_epoch);
  hs_bench_results *base = load_text(text);
  cr_assert_eq(hs_bench_results_count(base), 2);
  const hs_bench_figure *f = hs_bench_results_figure(base, 0);
  cr_expect_str_eq(f->limit, "random_reads_per_s");
  cr_expect_eq(f->ratio_max, 0.11);
  cr_expect(hs_bench_results_figure(base, 1)->lower_is_better);
  cr_expect(isnan(hs_bench_results_figure(base, 1)->ratio_median));
  int fan[4];
  cr_expect_eq(hs_bench_results_fanouts(base, fan, 4), 3);
  cr_expect_eq(fan[2], 5);

  /* The sampling figure's ratio drops beyond the spread; the epoch gets a
   * little slower, within the spread. */
  snprintf(text, sizeof text, run_template,
           "\"ratio_median\": 0.05, \"ratio_min\": 0.04, \"ratio_max\": 0.06",
           "\"median\": 2.1, \"min\": 2.0, \"max\": 2.2");
  hs_bench_results *cur = load_text(text);
  hs_bench_delta d[2];
  cr_assert_eq(hs_bench_compare(cur, base, d, 2), 2);
  cr_expect(d[0].regression);
  cr_expect(!d[0].improvement);
  cr_expect_float_eq(d[0].limit_ratio, 0.5, 1e-9);
  cr_expect(!d[1].regression, "overlapping spreads are not a regression");
  /* the other way round it is an improvement */
  cr_assert_eq(hs_bench_compare(base, cur, d, 2), 2);
  cr_expect(d[0].improvement && !d[0].regression);
  /* a slower epoch beyond the spread regresses (lower is better) */
  hs_bench_results_free(cur);
  snprintf(text, sizeof text, run_template, base_ratios,
           "\"median\": 3, \"min\": 2.9, \"max\": 3.1");
  cur = load_text(text);
  cr_assert_eq(hs_bench_compare(cur, base, d, 2), 2);
  cr_expect(d[1].regression);
  cr_expect(!d[0].regression);
  cr_expect_float_eq(d[1].figure_ratio, 1.5, 1e-9);
  hs_bench_results_free(cur);
  hs_bench_results_free(base);

  /* not a saved run, or a broken one */
  char path[512];
  tool_tmp(path, sizeof path, "bad.json");
  static const char *const bad[] = {
      "{\"figures\": []}",
      "{\"hetsage_bench\": 1, \"figures\": [{\"workload\": \"x\"}]}",
      "{\"hetsage_bench\": 1, \"figures\": [{\"workload\": \"a\", \"device\": \"d\", \"figure\": "
      "\"f\", \"unit\": \"u\", \"better\": \"sideways\", \"median\": 1, \"min\": 1, \"max\": 1}]}",
      "{\"hetsage_bench\": 1, \"figures\": [",
      /* runs that no int holds, or not a count (fuzz: a float-to-int overflow) */
      "{\"hetsage_bench\": 1, \"figures\": [{\"workload\": \"a\", \"device\": \"d\", \"figure\": "
      "\"f\", \"unit\": \"u\", \"better\": \"lower\", \"median\": 1, \"min\": 1, \"max\": 1, "
      "\"runs\": 1.3e56}]}",
      "{\"hetsage_bench\": 1, \"figures\": [{\"workload\": \"a\", \"device\": \"d\", \"figure\": "
      "\"f\", \"unit\": \"u\", \"better\": \"lower\", \"median\": 1, \"min\": 1, \"max\": 1, "
      "\"runs\": -1}]}",
      "{\"hetsage_bench\": 1, \"figures\": [{\"workload\": \"a\", \"device\": \"d\", \"figure\": "
      "\"f\", \"unit\": \"u\", \"better\": \"lower\", \"median\": 1, \"min\": 1, \"max\": 1, "
      "\"runs\": 2.5}]}",
      /* the run's own counts and fanouts likewise (fuzz: 1.1e20 in fanouts) */
      "{\"hetsage_bench\": 1, \"runs\": 1e20, \"figures\": []}",
      "{\"hetsage_bench\": 1, \"warmup\": -2, \"figures\": []}",
      "{\"hetsage_bench\": 1, \"batch\": 0.5, \"figures\": []}",
      "{\"hetsage_bench\": 1, \"fanouts\": [15, 1.11111e20], \"figures\": []}",
      "{\"hetsage_bench\": 1, \"fanouts\": [-2], \"figures\": []}",
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    FILE *fh = fopen(path, "w");
    fputs(bad[i], fh);
    fclose(fh);
    hs_bench_results *r = NULL;
    cr_expect_eq(hs_bench_results_load(path, &r), HS_ERR_FORMAT, "accepted %s", bad[i]);
    cr_expect_null(r);
  }
  unlink(path);
}

/* ---- the command ---------------------------------------------------------------- */

static void skip_without_device(void) {
  hs_runtime *rt = NULL;
  if (hs_runtime_open(&rt, NULL) != HS_OK) cr_skip_test("no OpenCL device: %s", hs_last_error());
  hs_runtime_close(rt);
}

/* A real quick run of two workloads on device 0, saved to `path`. */
static void measure_run(const char *path) {
  char args[1024], out[16384];
  snprintf(args, sizeof args,
           "bench --quick --runs 3 --workload gather,gemm --devices 0 --no-sub-devices "
           "--no-peer --json %s",
           path);
  int rc = tool_run("", args, out, sizeof out);
  cr_assert_eq(rc, 0, "%s", out);
  cr_expect_not_null(strstr(out, "sgemm_flops_per_s"), "%s", out);
}

Test(bench, compare_flags_an_injected_regression, .timeout = 300) {
  skip_without_device();
  char a[512], b[512], args[2048], out[65536];
  tool_tmp(a, sizeof a, "a.json");
  tool_tmp(b, sizeof b, "b.json");
  measure_run(a);
  hs_bench_results *run = NULL;
  cr_assert_eq(hs_bench_results_load(a, &run), HS_OK, "%s", hs_last_error());
  size_t n = hs_bench_results_count(run);
  cr_assert_geq(n, 3);
  /* The injected regression: the host gather at a third of its rate,
   * figure and ratio alike. */
  size_t victim = n;
  for (size_t i = 0; i < n; i++)
    if (!strcmp(hs_bench_results_figure(run, i)->name, "gather_bytes_per_s")) victim = i;
  cr_assert_lt(victim, n);
  hs_bench_results *copy = NULL;
  cr_assert_eq(hs_bench_results_load(a, &copy), HS_OK);
  hs_bench_figure *v = (hs_bench_figure *)hs_bench_results_figure(copy, victim);
  double k = 1.0 / 3.0 * v->ratio_min / v->ratio_max;
  v->median *= k, v->min *= k, v->max *= k;
  v->ratio_median *= k, v->ratio_min *= k, v->ratio_max *= k;
  FILE *f = fopen(b, "w");
  cr_assert_eq(hs_bench_results_write_json(copy, f), HS_OK);
  fclose(f);
  snprintf(args, sizeof args, "bench --load %s --compare %s", b, a);
  cr_expect_eq(tool_run("", args, out, sizeof out), 1, "%s", out);
  cr_expect_not_null(strstr(out, "REGRESSION"), "%s", out);
  cr_expect_not_null(strstr(out, "1 of "), "exactly one figure regressed: %s", out);
  /* a run against itself: nothing regressed */
  snprintf(args, sizeof args, "bench --load %s --compare %s", a, a);
  cr_expect_eq(tool_run("", args, out, sizeof out), 0, "%s", out);
  cr_expect_null(strstr(out, "REGRESSION"), "%s", out);
  cr_expect_eq(tool_run("", "bench --compare /nonexistent.json --load /nonexistent.json", NULL, 0),
               2);
  cr_expect_eq(tool_run("", "bench --workload nothing", NULL, 0), 2);
  cr_expect_eq(tool_run("", "bench --runs 0", NULL, 0), 2);
  hs_bench_results_free(run);
  hs_bench_results_free(copy);
  unlink(a);
  unlink(b);
}

static int count(const char *hay, const char *needle) {
  int n = 0;
  for (const char *p = hay; (p = strstr(p, needle)) != NULL; p += strlen(needle)) n++;
  return n;
}

Test(bench, html_report_has_a_chart_per_workload_and_nothing_external, .timeout = 300) {
  skip_without_device();
  char a[512], dir[512], args[2048], out[16384], index[600];
  tool_tmp(a, sizeof a, "r.json");
  tool_tmp(dir, sizeof dir, "report");
  measure_run(a);
  snprintf(args, sizeof args, "bench --load %s --compare %s --report %s", a, a, dir);
  cr_assert_eq(tool_run("", args, out, sizeof out), 0, "%s", out);
  snprintf(index, sizeof index, "%s/index.html", dir);
  char *html = tool_slurp(index);
  cr_expect_eq(count(html, "<svg"), 2, "one chart per workload (gather, gemm)");
  cr_expect_eq(count(html, "</svg>"), 2);
  cr_expect_eq(count(html, "<h2>gather</h2>"), 1);
  cr_expect_eq(count(html, "<h2>gemm</h2>"), 1);
  cr_expect_gt(count(html, "<rect"), 3, "bars");
  cr_expect_gt(count(html, "class=\"limit\""), 0, "the limit line");
  static const char *const external[] = {"http", "src=", "href=", "<script", "<link",
                                         "@import", "url(", "<img", "<iframe"};
  for (size_t i = 0; i < sizeof external / sizeof external[0]; i++)
    cr_expect_eq(count(html, external[i]), 0, "the page refers outside itself: %s", external[i]);
  cr_expect_not_null(strstr(html, "vs baseline"));
  free(html);
  unlink(index);
  rmdir(dir);
  unlink(a);
}

Test(bench, peer_column_from_an_importable_module, .timeout = 300) {
  skip_without_device();
  const char *data = getenv("HS_TEST_DATA");
  if (!data) cr_skip_test("HS_TEST_DATA is not set");
  /* The peer's python: $HS_PEER_PYTHON, as the tool uses it, else python3. */
  const char *py = getenv("HS_PEER_PYTHON") ? getenv("HS_PEER_PYTHON") : "python3";
  char check[600];
  snprintf(check, sizeof check, "'%s' -c 'import numpy' >/dev/null 2>&1", py);
  if (system(check) != 0) cr_skip_test("%s cannot import numpy", py);
  char a[512], env[1024], args[1024], out[16384];
  tool_tmp(a, sizeof a, "peer.json");
  snprintf(args, sizeof args,
           "bench --quick --runs 2 --workload sample --devices 0 --no-sub-devices --json %s", a);
  /* Stand-in dgl and torch modules (tests/data/fake_peer) make the column. */
  snprintf(env, sizeof env, "PYTHONDONTWRITEBYTECODE=1 PYTHONPATH=%s/fake_peer", data);
  cr_assert_eq(tool_run(env, args, out, sizeof out), 0, "%s", out);
  hs_bench_results *r = NULL;
  cr_assert_eq(hs_bench_results_load(a, &r), HS_OK, "%s", hs_last_error());
  const hs_bench_figure *peer = NULL, *ours = NULL;
  for (size_t i = 0; i < hs_bench_results_count(r); i++) {
    const hs_bench_figure *f = hs_bench_results_figure(r, i);
    if (!strcmp(f->device, "peer.dgl@dev0")) peer = f;
    if (!strcmp(f->device, "dev0") && !strcmp(f->name, "sampled_edges_per_s")) ours = f;
  }
  cr_assert_not_null(ours, "%s", out);
  cr_assert_not_null(peer, "no peer column: %s", out);
  cr_expect_str_eq(peer->workload, "sample");
  cr_expect_gt(peer->median, 0);
  cr_expect_eq(peer->runs, 2);
  cr_expect_not_null(strstr(peer->device_name, "0.0-test"));
  cr_expect_not_null(strstr(peer->note, "alternating with dev0"), "%s", peer->note);
  hs_bench_results_free(r);
  /* A peer that fails is left out, and its error shown. */
  snprintf(env, sizeof env,
           "FAKE_PEER_FAIL=1 PYTHONDONTWRITEBYTECODE=1 PYTHONPATH=%s/fake_peer", data);
  cr_assert_eq(tool_run(env, args, out, sizeof out), 0, "%s", out);
  cr_expect_not_null(strstr(out, "fake peer failure requested by the test"), "%s", out);
  cr_assert_eq(hs_bench_results_load(a, &r), HS_OK);
  for (size_t i = 0; i < hs_bench_results_count(r); i++)
    cr_expect_null(strstr(hs_bench_results_figure(r, i)->device, "peer."));
  hs_bench_results_free(r);
  /* HS_PEER_PYTHON names the peer's interpreter. */
  snprintf(env, sizeof env, "HS_PEER_PYTHON=/nonexistent/python PYTHONPATH=%s/fake_peer", data);
  cr_assert_eq(tool_run(env, args, out, sizeof out), 0, "%s", out);
  cr_expect_not_null(strstr(out, "/nonexistent/python cannot import"), "%s", out);
  /* Without the modules the column is skipped, and said so (where no real
   * peer is installed). */
  snprintf(check, sizeof check, "'%s' -c 'import dgl' >/dev/null 2>&1", py);
  char check2[600];
  snprintf(check2, sizeof check2, "'%s' -c 'import torch_geometric' >/dev/null 2>&1", py);
  if (system(check) == 0 || system(check2) == 0) {
    unlink(a);
    return;
  }
  snprintf(env, sizeof env, "PYTHONPATH=/nonexistent");
  cr_assert_eq(tool_run(env, args, out, sizeof out), 0, "%s", out);
  cr_expect_not_null(strstr(out, "peer column skipped"), "%s", out);
  cr_assert_eq(hs_bench_results_load(a, &r), HS_OK);
  for (size_t i = 0; i < hs_bench_results_count(r); i++)
    cr_expect_null(strstr(hs_bench_results_figure(r, i)->device, "peer."));
  hs_bench_results_free(r);
  unlink(a);
}

/* The sampling workload calls its hook after every run on a device scope,
 * warm-up runs first (run < 0), in order, outside the timing: a peer driven
 * from it alternates with hetsage run by run. */
typedef struct hook_log {
  char seq[16][48];
  int n;
  bool info_ok;
} hook_log;

static void record_hook(void *user, const hs_bench_run_info *in) {
  hook_log *l = user;
  if (l->n < 16) snprintf(l->seq[l->n++], sizeof l->seq[0], "%s:%d", in->scope, in->run);
  l->info_ok &= in->dataset && in->dataset[0] && in->n_fanouts == 3 && in->batch > 0 &&
                in->compute_units > 0;
}

Test(bench, sample_hook_runs_after_every_run, .timeout = 300) {
  skip_without_device();
  hs_runtime *rt = NULL;
  cr_assert_eq(hs_runtime_open(&rt, NULL), HS_OK, "%s", hs_last_error());
  hs_bench_options o;
  hs_bench_options_init(&o);
  o.quick = true;
  o.workloads = HS_BENCH_SAMPLE;
  o.runs = 3;
  o.warmup = 1;
  o.devices = "0";
  o.sub_devices = false;
  hook_log log = {.info_ok = true};
  o.sample_hook = record_hook;
  o.sample_hook_user = &log;
  hs_bench_results *r = NULL;
  cr_assert_eq(hs_bench_run(rt, &o, NULL, NULL, &r), HS_OK, "%s", hs_last_error());
  static const char *const want[] = {"dev0:-1", "dev0:0", "dev0:1", "dev0:2"};
  cr_assert_eq(log.n, 4, "%d hook calls", log.n);
  for (int i = 0; i < 4; i++) cr_expect_str_eq(log.seq[i], want[i]);
  cr_expect(log.info_ok, "the hook was not told what was sampled");
  hs_bench_results_free(r);
  hs_runtime_close(rt);
}

/* --jsonl writes each figure as it is made; --implementations with
 * --matrix writes one table with a column per implementation and the
 * command that made it. */
Test(bench, jsonl_and_implementations_matrix, .timeout = 300) {
  skip_without_device();
  char j[512], m[512], a[512], args[2048], out[16384];
  tool_tmp(j, sizeof j, "figs.jsonl");
  tool_tmp(m, sizeof m, "matrix.md");
  tool_tmp(a, sizeof a, "matrix.json");
  snprintf(args, sizeof args,
           "bench --quick --runs 2 --workload sample --no-peer --implementations pocl "
           "--matrix %s --jsonl %s --json %s",
           m, j, a);
  int rc = tool_run("", args, out, sizeof out);
  if (rc == 2 && strstr(out, "no device of 'pocl'")) cr_skip_test("PoCL is not installed");
  cr_assert_eq(rc, 0, "%s", out);
  hs_bench_results *r = NULL;
  cr_assert_eq(hs_bench_results_load(a, &r), HS_OK, "%s", hs_last_error());
  char *lines = tool_slurp(j);
  size_t n = 0;
  for (char *p = lines; (p = strstr(p, "{\"workload\": ")) != NULL; p++) n++;
  cr_expect_eq(n, hs_bench_results_count(r), "%zu JSON lines for %zu figures", n,
               hs_bench_results_count(r));
  char *md = tool_slurp(m);
  cr_expect_not_null(strstr(md, "hetsage bench --quick"), "%s", md);
  cr_expect_not_null(strstr(md, "| workload | figure | unit | pocl |"), "%s", md);
  cr_expect_not_null(strstr(md, "| sample | sampled_edges_per_s | edges/s |"), "%s", md);
  free(lines), free(md);
  hs_bench_results_free(r);
  cr_expect_neq(tool_run("", "bench --matrix x.md", out, sizeof out), 0);
  cr_expect_not_null(strstr(out, "--matrix needs --implementations"), "%s", out);
  unlink(j), unlink(m), unlink(a);
}

/* bench_epoch with no --dataset trains the bundled Cora and hands the peer
 * the same folder. The peer's python is a stand-in that imports anything
 * and answers as peer_train.py does only when --dataset names a dataset. */
Test(bench, epoch_bench_gives_the_peer_the_bundled_dataset) {
  const char *exe = getenv("HS_BENCH_EPOCH");
  if (!exe) cr_skip_test("HS_BENCH_EPOCH (the bench_epoch executable) is not set");
  char py[512], cmd[2048];
  tool_tmp(py, sizeof py, "peer-python");
  FILE *f = fopen(py, "w");
  cr_assert_not_null(f);
  fputs("#!/bin/sh\n"
        "[ \"$1\" = -c ] && exit 0\n"
        "ds=\n"
        "while [ $# -gt 0 ]; do [ \"$1\" = --dataset ] && ds=$2; shift; done\n"
        "[ -f \"$ds/indptr.npy\" ] || { echo \"no dataset at '$ds'\" >&2; exit 3; }\n"
        "echo 'epoch_s 0.5 0.4 0.6 2 0.75 0.75 2 stand-in 1024'\n",
        f);
  cr_assert_eq(fclose(f), 0);
  cr_assert_eq(chmod(py, 0755), 0);
  snprintf(cmd, sizeof cmd,
           "HS_PEER_PYTHON=%s HS_PEER_THREADS=1 %s --epochs 2 --rounds 1 --hidden 16 "
           "--batch 512 --model gcn 2>/dev/null",
           py, exe);
  FILE *p = popen(cmd, "r");
  cr_assert_not_null(p);
  char out[8192];
  size_t n = fread(out, 1, sizeof out - 1, p);
  out[n] = '\0';
  cr_assert_eq(pclose(p), 0, "%s", out);
  unlink(py);
  cr_expect_null(strstr(out, "(null)"), "%s", out);
  cr_expect_null(strstr(out, "skipped"), "the peer did not run: %s", out);
  cr_expect_not_null(strstr(out, "\"version\": \"stand-in\""), "%s", out);
  cr_expect_not_null(strstr(out, "\"model\": \"gcn\""), "%s", out);
}

/* Round r runs the peer with seed S + r, and the summary gives the mean of
 * the rounds' accuracies with their standard deviation. The stand-in peer
 * answers test accuracy 0.7 + seed / 100. */
Test(bench, epoch_bench_rounds_take_successive_seeds) {
  const char *exe = getenv("HS_BENCH_EPOCH");
  if (!exe) cr_skip_test("HS_BENCH_EPOCH (the bench_epoch executable) is not set");
  char py[512], cmd[2048];
  tool_tmp(py, sizeof py, "peer-python-seeds");
  FILE *f = fopen(py, "w");
  cr_assert_not_null(f);
  fputs("#!/bin/sh\n"
        "[ \"$1\" = -c ] && exit 0\n"
        "seed=\n"
        "while [ $# -gt 0 ]; do [ \"$1\" = --seed ] && seed=$2; shift; done\n"
        "acc=$(awk -v s=\"$seed\" 'BEGIN { printf \"%.2f\", 0.7 + s / 100 }')\n"
        "echo \"epoch_s 0.5 0.4 0.6 2 $acc $acc 2 stand-in 1024\"\n",
        f);
  cr_assert_eq(fclose(f), 0);
  cr_assert_eq(chmod(py, 0755), 0);
  snprintf(cmd, sizeof cmd,
           "HS_PEER_PYTHON=%s HS_PEER_THREADS=1 %s --epochs 2 --rounds 2 --seed 5 --hidden 16 "
           "--batch 512 2>/dev/null",
           py, exe);
  FILE *p = popen(cmd, "r");
  cr_assert_not_null(p);
  char out[16384];
  size_t n = fread(out, 1, sizeof out - 1, p);
  out[n] = '\0';
  cr_assert_eq(pclose(p), 0, "%s", out);
  unlink(py);
  const char *peer = strstr(out, "\"peer\": {\"name\": \"dgl\"");
  cr_assert_not_null(peer, "%s", out);
  cr_expect_not_null(strstr(peer, "\"test_acc_last\": 0.7550, \"test_acc_last_sd\": 0.0071"), "%s",
                     peer);
  cr_expect_not_null(strstr(out, "\"side\": \"peer\", \"round\": 1, \"threads\": 1, \"epoch_s\": "
                                 "{\"median\": 0.500000, \"min\": 0.400000, \"max\": 0.600000}, "
                                 "\"test_acc_last\": 0.7500"),
                     "%s", out);
  cr_expect_not_null(strstr(out, "\"test_acc_last_diff_se\": "), "%s", out);
  cr_expect_not_null(strstr(out, "\"round_seeds\": \"seed + round - 1\""), "%s", out);
}
