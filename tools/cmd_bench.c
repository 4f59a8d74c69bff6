/* hetsage bench: the same workloads, measured the same way, on every
 * device; comparison with a saved run; an HTML report. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_report.h"
#include "cli.h"

static void usage(FILE *f) {
  fprintf(f,
          "usage: hetsage bench [--devices all|I,J] [--workload sample|gather|gemm|train|all]\n"
          "                     [--runs N] [--warmup N] [--quick] [--no-sub-devices]\n"
          "                     [--board B] [--json F] [--compare BASELINE.json]\n"
          "                     [--load RUN.json] [--report DIR] [--no-peer] [-q]\n"
          "                     [--model sage|gcn|gat] [--heads N]\n"
          "\n"
          "Run the same workloads with the same data and seeds on every device (whole,\n"
          "and a sub-device of half of each CPU), each figure the median of --runs\n"
          "steady-state runs after --warmup, with min and max, beside its same-run\n"
          "limit as a ratio: sampled edges/s vs a random-read probe over a\n"
          "topology-sized array; gather bytes/s vs a STREAM-style copy; GEMM FLOP/s vs\n"
          "OpenBLAS sgemm on the same shapes and cores (CPU devices); training: an\n"
          "epoch vs its busiest pipeline stage, a step vs its GEMMs at OpenBLAS speed.\n"
          "\n"
          "  --devices D       'all' (default) or inventory indices (hetsage info)\n"
          "  --workload W      one or more of sample,gather,gemm,train, or all (default)\n"
          "  --runs N          steady-state runs per figure, 1..64 (default 5)\n"
          "  --warmup N        runs dropped first, 0..16 (default 1)\n"
          "  --quick           small graphs, tables and shapes (a smoke run)\n"
          "  --no-sub-devices  whole devices only\n"
          "  --board B         profile whose rules place the training sessions\n"
          "  --model M         the model the train workload trains: sage (default),\n"
          "                    gcn or gat\n"
          "  --heads N         GAT's attention heads (default 4)\n"
          "  --json F          save the run ('-': stdout; the table goes to stderr)\n"
          "  --compare F       ratio of each figure to a saved run; regressions beyond\n"
          "                    the spread are flagged, and make the exit status 1\n"
          "  --load F          use a saved run instead of measuring (with --compare,\n"
          "                    --report or --json)\n"
          "  --report DIR      write DIR/index.html: a self-contained page with one\n"
          "                    chart per workload\n"
          "  --no-peer         do not run DGL / PyG beside the sampling workload\n"
          "  -q, --quiet       no table\n"
          "  -h, --help\n"
          "\n"
          "A peer column (DGL or PyG doing the same sampling on the same graph) is\n"
          "added when python3 can import dgl or torch_geometric.\n"
          "\n"
          "Exit status: 0 done, 1 a regression against --compare or a failure,\n"
          "2 bad usage.\n");
}

static void on_figure(void *user, const hs_bench_figure *g) {
  FILE *out = user;
  if (!out) return;
  char m[32], l[32];
  bench_fmt_si(g->median, m, sizeof m);
  bench_fmt_si(g->limit_median, l, sizeof l);
  fprintf(out, "%-7s %-11s %-34s %10s%-8s", g->workload, g->device, g->name, m, g->unit);
  if (g->limit[0])
    fprintf(out, "  %-24s %10s  ratio %.3g [%.3g .. %.3g]\n", g->limit, l, g->ratio_median,
            g->ratio_min, g->ratio_max);
  else
    fputc('\n', out);
  fflush(out);
}

/* ---- peers --------------------------------------------------------------------------- */

static bool importable(const char *module) {
  char cmd[256];
  snprintf(cmd, sizeof cmd, "python3 -c 'import %s' >/dev/null 2>&1", module);
  return system(cmd) == 0;
}

static const char *bench_dir(void) {
  const char *dir = cli_settings()->bench_dir;
  return dir ? dir : HS_BENCH_DIR;
}

/* The peer script prints "edges_per_s MEDIAN MIN MAX EDGES_PER_BATCH RUNS
 * VERSION" on its last line. */
static void run_peer(hs_bench_results *r, const char *peer, const char *module, FILE *out) {
  int fan[8];
  int nf = hs_bench_results_fanouts(r, fan, 8);
  char fans[64] = "";
  for (int i = 0; i < nf && i < 8; i++)
    snprintf(fans + strlen(fans), sizeof fans - strlen(fans), "%s%d", i ? "," : "", fan[i]);
  char cmd[4096];
  snprintf(cmd, sizeof cmd,
           "python3 '%s/peer_sample.py' --peer %s --dataset '%s' --fanouts %s --batch %d "
           "--runs %d 2>/dev/null",
           bench_dir(), peer, hs_bench_results_dataset(r), fans, hs_bench_results_batch(r),
           hs_bench_results_runs(r));
  FILE *p = popen(cmd, "r");
  char line[512], last[512] = "";
  while (p && fgets(line, sizeof line, p)) snprintf(last, sizeof last, "%s", line);
  int rc = p ? pclose(p) : -1;
  hs_bench_figure g;
  memset(&g, 0, sizeof g);
  char version[64] = "?";
  double edges = 0;
  int runs = 0;
  if (rc != 0 || sscanf(last, "edges_per_s %lf %lf %lf %lf %d %63s", &g.median, &g.min, &g.max,
                        &edges, &runs, version) < 5) {
    if (out) fprintf(out, "peer %s: the script failed; column skipped\n", peer);
    return;
  }
  snprintf(g.workload, sizeof g.workload, "sample");
  snprintf(g.device, sizeof g.device, "peer.%s", peer);
  snprintf(g.device_name, sizeof g.device_name, "%s %s on the host CPU", module, version);
  snprintf(g.name, sizeof g.name, "sampled_edges_per_s");
  snprintf(g.unit, sizeof g.unit, "edges/s");
  g.limit_median = g.limit_min = g.limit_max = NAN;
  g.ratio_median = g.ratio_min = g.ratio_max = NAN;
  g.runs = runs;
  snprintf(g.note, sizeof g.note, "the same graph, fanouts and batch size; %.0f edges a batch",
           edges);
  if (hs_bench_results_add(r, &g) == HS_OK) on_figure(out, &g);
}

static void peers(hs_bench_results *r, FILE *out) {
  if (!hs_bench_results_dataset(r)[0]) return;
  /* PyG samples through pyg-lib or torch-sparse: without one of them
   * torch_geometric imports but its NeighborLoader cannot run. */
  static const char *const names[][3] = {
      {"dgl", "dgl", "dgl"},
      {"pyg", "torch_geometric",
       "torch_geometric, importlib.util as u; assert u.find_spec(\"pyg_lib\") or "
       "u.find_spec(\"torch_sparse\")"}};
  int ran = 0;
  for (int i = 0; i < 2; i++) {
    if (!importable(names[i][2])) continue;
    run_peer(r, names[i][0], names[i][1], out);
    ran++;
  }
  if (!ran && out)
    fprintf(out, "peer column skipped: python3 cannot import dgl or torch_geometric\n");
}

/* ---- comparison ------------------------------------------------------------------------ */

static int compare(const hs_bench_results *cur, const hs_bench_results *base, FILE *out) {
  size_t n = hs_bench_compare(cur, base, NULL, 0);
  hs_bench_delta *d = calloc(n + 1, sizeof *d);
  if (!d) return -1;
  hs_bench_compare(cur, base, d, n);
  int regressions = 0, matched = 0;
  if (out) fprintf(out, "\nagainst the baseline (current / baseline; 'limit' = of the ratios to the limit):\n");
  for (size_t i = 0; i < n; i++) {
    const hs_bench_delta *x = &d[i];
    if (!x->baseline) {
      if (out)
        fprintf(out, "  %-7s %-11s %-34s new (not in the baseline)\n", x->current->workload,
                x->current->device, x->current->name);
      continue;
    }
    matched++;
    regressions += x->regression;
    if (!out) continue;
    fprintf(out, "  %-7s %-11s %-34s figure %6.3f", x->current->workload, x->current->device,
            x->current->name, x->figure_ratio);
    if (isfinite(x->limit_ratio)) fprintf(out, "  limit %6.3f", x->limit_ratio);
    else fprintf(out, "  %-12s", "");
    fprintf(out, "  %s\n", x->regression ? "REGRESSION (beyond the spread)"
                           : x->improvement ? "better (beyond the spread)"
                                            : "within the spread");
  }
  if (out)
    fprintf(out, "%d of %d compared figure(s) regressed\n", regressions, matched);
  free(d);
  return regressions;
}

int cmd_bench(int argc, char **argv) {
  hs_bench_options o;
  hs_bench_options_init(&o);
  const char *json = NULL, *base_path = NULL, *load = NULL, *report = NULL, *board = NULL;
  bool quiet = false, peer = true;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    bool has = i + 1 < argc;
    uint64_t v;
    if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
      usage(stdout);
      return 0;
    } else if (strcmp(a, "--devices") == 0 && has) {
      o.devices = argv[++i];
    } else if (strcmp(a, "--workload") == 0 && has) {
      if (hs_bench_workloads_parse(argv[++i], &o.workloads) != HS_OK)
        return cli_usage_error("bench", "--workload '%s': %s", argv[i], hs_last_error());
    } else if (strcmp(a, "--runs") == 0 && has) {
      if (!cli_opt_u64("bench", a, argv[++i], 1, 64, &v)) return 2;
      o.runs = (int)v;
    } else if (strcmp(a, "--warmup") == 0 && has) {
      if (!cli_opt_u64("bench", a, argv[++i], 0, 16, &v)) return 2;
      o.warmup = (int)v;
    } else if (strcmp(a, "--quick") == 0) {
      o.quick = true;
    } else if (strcmp(a, "--no-sub-devices") == 0) {
      o.sub_devices = false;
    } else if (strcmp(a, "--board") == 0 && has) {
      board = argv[++i];
    } else if (strcmp(a, "--json") == 0 && has) {
      json = argv[++i];
    } else if (strcmp(a, "--compare") == 0 && has) {
      base_path = argv[++i];
    } else if (strcmp(a, "--load") == 0 && has) {
      load = argv[++i];
    } else if (strcmp(a, "--report") == 0 && has) {
      report = argv[++i];
    } else if (strcmp(a, "--model") == 0 && has) {
      if (hs_model_kind_parse(argv[++i], &o.model) != HS_OK)
        return cli_usage_error("bench", "--model '%s': expected sage, gcn or gat", argv[i]);
    } else if (strcmp(a, "--heads") == 0 && has) {
      uint64_t h;
      if (!cli_parse_u64(argv[++i], &h) || h < 1 || h > 64)
        return cli_usage_error("bench", "--heads '%s': 1..64", argv[i]);
      o.heads = (int)h;
    } else if (strcmp(a, "--no-peer") == 0) {
      peer = false;
    } else if (strcmp(a, "-q") == 0 || strcmp(a, "--quiet") == 0) {
      quiet = true;
    } else {
      return cli_usage_error("bench", "unknown option or missing value: '%s'", a);
    }
  }
  FILE *out = quiet ? NULL : (json && strcmp(json, "-") == 0) ? stderr : stdout;
  hs_bench_results *r = NULL, *base = NULL;
  hs_runtime *rt = NULL;
  hs_board_profile *prof = NULL;
  int rc = 1;
  hs_status st;
  if (base_path && (st = hs_bench_results_load(base_path, &base)) != HS_OK) {
    cli_report("bench", "reading the baseline", st);
    return 2;
  }
  if (load) {
    if ((st = hs_bench_results_load(load, &r)) != HS_OK) {
      cli_report("bench", "reading the saved run", st);
      rc = 2;
      goto done;
    }
    for (size_t i = 0; i < hs_bench_results_count(r); i++)
      on_figure(out, hs_bench_results_figure(r, i));
  } else {
    if (board && (st = hs_board_profile_load_from(cli_settings()->boards_dir, board, &prof)) != HS_OK) {
      cli_report("bench", "loading the board profile", st);
      rc = 2;
      goto done;
    }
    o.profile = prof;
    if ((st = hs_runtime_open(&rt, NULL)) != HS_OK) {
      cli_report("bench", "device discovery", st);
      goto done;
    }
    if (out)
      fprintf(out, "%-7s %-11s %-34s %18s  %-24s %10s\n", "", "device", "figure", "median",
              "limit", "median");
    if ((st = hs_bench_run(rt, &o, on_figure, out, &r)) != HS_OK) {
      cli_report("bench", "benchmark", st);
      rc = st == HS_ERR_INVALID_ARG ? 2 : 1;
      goto done;
    }
    if (peer && (o.workloads & HS_BENCH_SAMPLE)) peers(r, out);
  }
  rc = 0;
  if (json) {
    bool to_stdout = strcmp(json, "-") == 0;
    FILE *f = to_stdout ? stdout : fopen(json, "w");
    if (!f) {
      fprintf(stderr, "hetsage bench: cannot write %s: %s\n", json, strerror(errno));
      rc = 1;
    } else {
      if ((st = hs_bench_results_write_json(r, f)) != HS_OK) {
        cli_report("bench", json, st);
        rc = 1;
      }
      if (!(to_stdout ? cli_file_check("bench", f, "standard output")
                      : cli_file_close("bench", f, json)))
        rc = 1;
    }
  }
  if (report && !bench_report_html(report, r, base)) rc = 1;
  if (report && out) fprintf(out, "report: %s/index.html\n", report);
  if (base) {
    int reg = compare(r, base, out ? out : stderr);
    if (reg != 0) rc = 1;
  }
done:
  hs_bench_results_free(r);
  hs_bench_results_free(base);
  hs_runtime_close(rt);
  hs_board_profile_free(prof);
  return rc;
}
