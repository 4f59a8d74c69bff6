/* hetsage bench: the same workloads, measured the same way, on every
 * device; comparison with a saved run; an HTML report. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench_report.h"
#include "cli.h"

static void usage(FILE *f) {
  fprintf(f,
          "usage: hetsage bench [--devices all|I,J] [--workload sample|gather|gemm|train|all]\n"
          "                     [--runs N] [--warmup N] [--quick] [--no-sub-devices]\n"
          "                     [--board B] [--json F] [--compare BASELINE.json]\n"
          "                     [--load RUN.json] [--report DIR] [--no-peer] [-q]\n"
          "                     [--model sage|gcn|gat] [--heads N]\n"
          "                     [--jsonl F] [--implementations LIST [--matrix FILE]]\n"
          "\n"
          "Run the same workloads with the same data and seeds on every device (whole,\n"
          "and a sub-device of half of each CPU), each figure the median of --runs\n"
          "steady-state runs after --warmup, with min and max, beside its same-run\n"
          "limit as a ratio: sampled edges/s vs a random-read probe over a\n"
          "topology-sized array; gather bytes/s vs a STREAM-style copy; GEMM FLOP/s vs\n"
          "OpenBLAS sgemm on the same shapes and cores (CPU devices); training: an\n"
          "epoch vs its busiest pipeline stage, a step vs its GEMMs at OpenBLAS speed.\n"
          "\n"
          "  --devices D       'all' (default), or inventory indices or selectors\n"
          "                    (pocl:0,rusticl:0: see hetsage info)\n"
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
          "  --jsonl F         each figure as a JSON line the moment it is measured\n"
          "                    ('-': stdout), so a killed run keeps what it measured\n"
          "  --implementations LIST\n"
          "                    the first device of each OpenCL implementation named\n"
          "                    (pocl,rusticl,oclgrind or all; whole devices only)\n"
          "  --matrix FILE     with --implementations: one Markdown table, a column per\n"
          "                    implementation, with the command that made it\n"
          "  -q, --quiet       no table\n"
          "  -h, --help\n"
          "\n"
          "A peer (DGL or PyG doing the same sampling on the same graph) runs when\n"
          "$HS_PEER_PYTHON (default python3) can import dgl or torch_geometric: one of\n"
          "its batches after each of hetsage's runs on each device, with that device's\n"
          "compute units as threads, summarised the same way (peer.dgl@dev0); a peer\n"
          "that fails is left out with the tail of its error.\n"
          "\n"
          "Exit status: 0 done, 1 a regression against --compare or a failure,\n"
          "2 bad usage.\n");
}

/* Where figures go as they are made: the table (NULL: quiet) and, with
 * --jsonl, one JSON object per line, flushed, so that a run killed part-way
 * keeps what it measured. */
typedef struct sink {
  FILE *out, *jsonl;
} sink;

static void json_num(FILE *f, const char *key, double v) {
  if (isfinite(v)) fprintf(f, ", \"%s\": %.9g", key, v);
  else fprintf(f, ", \"%s\": null", key);
}

static void figure_jsonl(FILE *f, const hs_bench_figure *g) {
  fputs("{\"workload\": ", f);
  cli_json_string(f, g->workload);
  fputs(", \"device\": ", f);
  cli_json_string(f, g->device);
  fputs(", \"device_name\": ", f);
  cli_json_string(f, g->device_name);
  fputs(", \"name\": ", f);
  cli_json_string(f, g->name);
  fputs(", \"unit\": ", f);
  cli_json_string(f, g->unit);
  json_num(f, "median", g->median);
  json_num(f, "min", g->min);
  json_num(f, "max", g->max);
  fputs(", \"limit\": ", f);
  cli_json_string(f, g->limit);
  json_num(f, "limit_median", g->limit_median);
  json_num(f, "ratio_median", g->ratio_median);
  json_num(f, "ratio_min", g->ratio_min);
  json_num(f, "ratio_max", g->ratio_max);
  fprintf(f, ", \"runs\": %d, \"note\": ", g->runs);
  cli_json_string(f, g->note);
  fputs("}\n", f);
  fflush(f);
}

static void on_figure(void *user, const hs_bench_figure *g) {
  const sink *k = user;
  if (k->jsonl) figure_jsonl(k->jsonl, g);
  FILE *out = k->out;
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

/* ---- peers ------------------------------------------------------------------------------ */

/* A peer (DGL, PyG) samples the same graph with the same fanouts and batch
 * size as the sampling workload, in a long-lived bench/peer_sample.py
 * --serve process: one of its batches after each of hetsage's runs on each
 * device scope (the library's sample hook), with as many threads as that
 * scope has compute units. Its figure for scope S ("peer.dgl@dev0") is
 * then summarised exactly as hetsage's for S: the median, min and max of
 * the per-run rates of the steady-state runs. */
#define MAX_PEERS 2
#define MAX_SCOPES 64

typedef struct peer_scope {
  char scope[32];
  unsigned threads;
  double rate[64];
  int runs;
  double edges;
} peer_scope;

typedef struct peer_proc {
  const char *name, *module;
  bool wanted, started, failed;
  pid_t pid;
  FILE *to, *from;
  char errpath[64];
  char version[64];
  char why[600];
  peer_scope scopes[MAX_SCOPES];
  int n_scopes;
} peer_proc;

typedef struct peers {
  peer_proc p[MAX_PEERS];
  FILE *out;
  sink *figures;
} peers;

static const char *peer_python(void) {
  const char *p = cli_settings()->peer_python;
  return p && *p ? p : "python3";
}

static bool importable(const char *module) {
  char cmd[512];
  snprintf(cmd, sizeof cmd, "'%s' -c '%s' >/dev/null 2>&1", peer_python(), module);
  return system(cmd) == 0;
}

static const char *bench_dir(void) {
  const char *dir = cli_settings()->bench_dir;
  return dir ? dir : HS_BENCH_DIR;
}

/* The last lines of the peer's stderr, on one line. */
static void peer_tail(const peer_proc *pp, char *out, size_t cap) {
  char lines[4][200];
  int n = 0;
  char line[200];
  out[0] = '\0';
  FILE *f = fopen(pp->errpath, "r");
  while (f && fgets(line, sizeof line, f)) {
    line[strcspn(line, "\r\n")] = '\0';
    if (line[0]) snprintf(lines[n++ % 4], sizeof lines[0], "%s", line);
  }
  if (f) fclose(f);
  for (int i = n > 4 ? n - 4 : 0; i < n; i++)
    snprintf(out + strlen(out), cap - strlen(out), "%s%s", out[0] ? " | " : "", lines[i % 4]);
}

static void peer_fail(peers *ps, peer_proc *pp, const char *what) {
  char tail[400];
  peer_tail(pp, tail, sizeof tail);
  snprintf(pp->why, sizeof pp->why, "%s%s%s", what, tail[0] ? ": " : "", tail);
  pp->failed = true;
  if (ps->out) fprintf(ps->out, "peer %s: %s; its column is left out\n", pp->name, pp->why);
}

/* Start `peer_sample.py --serve` with pipes both ways. */
static bool peer_start(peers *ps, peer_proc *pp, const hs_bench_run_info *in) {
  pp->started = true;
  snprintf(pp->errpath, sizeof pp->errpath, "/tmp/hs-bench-peer-XXXXXX");
  int efd = mkstemp(pp->errpath);
  int to[2], from[2];
  if (efd < 0 || pipe(to) || pipe(from)) {
    peer_fail(ps, pp, "cannot make its pipes");
    return false;
  }
  char script[1024], fans[64] = "", batch[16];
  snprintf(script, sizeof script, "%s/peer_sample.py", bench_dir());
  for (int i = 0; i < in->n_fanouts; i++)
    snprintf(fans + strlen(fans), sizeof fans - strlen(fans), "%s%d", i ? "," : "", in->fanouts[i]);
  snprintf(batch, sizeof batch, "%d", in->batch);
  pp->pid = fork();
  if (pp->pid == 0) {
    dup2(to[0], 0), dup2(from[1], 1), dup2(efd, 2);
    close(to[1]), close(from[0]);
    execlp(peer_python(), peer_python(), script, "--peer", pp->name, "--dataset", in->dataset,
           "--fanouts", fans, "--batch", batch, "--serve", (char *)NULL);
    fprintf(stderr, "cannot run %s: %s\n", peer_python(), strerror(errno));
    _exit(127);
  }
  close(to[0]), close(from[1]), close(efd);
  pp->to = fdopen(to[1], "w");
  pp->from = fdopen(from[0], "r");
  char line[256];
  if (pp->pid < 0 || !pp->to || !pp->from || !fgets(line, sizeof line, pp->from) ||
      sscanf(line, "ready %63s", pp->version) != 1) {
    peer_fail(ps, pp, "the script did not start");
    return false;
  }
  return true;
}

static bool peer_ask(peer_proc *pp, const char *req, char *reply, size_t cap) {
  if (fprintf(pp->to, "%s\n", req) < 0 || fflush(pp->to) != 0) return false;
  return fgets(reply, (int)cap, pp->from) != NULL;
}

static void peer_hook(void *user, const hs_bench_run_info *in) {
  peers *ps = user;
  for (int k = 0; k < MAX_PEERS; k++) {
    peer_proc *pp = &ps->p[k];
    if (!pp->wanted || pp->failed) continue;
    if (!pp->started && !peer_start(ps, pp, in)) continue;
    peer_scope *sc = pp->n_scopes ? &pp->scopes[pp->n_scopes - 1] : NULL;
    char reply[256], req[64];
    if (!sc || strcmp(sc->scope, in->scope) != 0) {
      if (pp->n_scopes == MAX_SCOPES) continue;
      sc = &pp->scopes[pp->n_scopes++];
      memset(sc, 0, sizeof *sc);
      snprintf(sc->scope, sizeof sc->scope, "%s", in->scope);
      sc->threads = in->compute_units ? in->compute_units : 1;
      snprintf(req, sizeof req, "threads %u", sc->threads);
      if (!peer_ask(pp, req, reply, sizeof reply) || strncmp(reply, "ok", 2) != 0) {
        peer_fail(ps, pp, "it stopped answering");
        continue;
      }
    }
    /* The same seeds index as hetsage's run: warm-up runs count from 0. */
    snprintf(req, sizeof req, "run %d", in->run + 1000);
    double edges, secs;
    if (!peer_ask(pp, req, reply, sizeof reply) ||
        sscanf(reply, "run %lf %lf", &edges, &secs) != 2 || secs <= 0) {
      peer_fail(ps, pp, "it stopped answering");
      continue;
    }
    if (in->run < 0 || in->run >= 64) continue;
    sc->rate[in->run] = edges / secs;
    sc->edges = edges;
    if (in->run + 1 > sc->runs) sc->runs = in->run + 1;
  }
}

static void peers_init(peers *ps, sink *figures) {
  memset(ps, 0, sizeof *ps);
  ps->out = figures->out;
  ps->figures = figures;
  FILE *out = ps->out;
  /* PyG samples through pyg-lib or torch-sparse: without one of them
   * torch_geometric imports but its NeighborLoader cannot run. */
  static const char *const names[MAX_PEERS][3] = {
      {"dgl", "dgl", "import dgl"},
      {"pyg", "torch_geometric",
       "import torch_geometric, importlib.util as u; assert u.find_spec(\"pyg_lib\") or "
       "u.find_spec(\"torch_sparse\")"}};
  int n = 0;
  for (int i = 0; i < MAX_PEERS; i++) {
    ps->p[i].name = names[i][0];
    ps->p[i].module = names[i][1];
    ps->p[i].wanted = importable(names[i][2]);
    n += ps->p[i].wanted;
  }
  if (!n && out)
    fprintf(out, "peer column skipped: %s cannot import dgl or torch_geometric "
                 "(HS_PEER_PYTHON names another python)\n",
            peer_python());
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* End the peers and add one figure per peer and scope. */
static void peers_finish(peers *ps, hs_bench_results *r) {
  for (int k = 0; k < MAX_PEERS; k++) {
    peer_proc *pp = &ps->p[k];
    if (!pp->started) continue;
    if (pp->to) fclose(pp->to);
    if (pp->from) fclose(pp->from);
    int status = 0;
    if (pp->pid > 0) waitpid(pp->pid, &status, 0);
    if (!pp->failed && (!WIFEXITED(status) || WEXITSTATUS(status) != 0))
      peer_fail(ps, pp, "the script ended with an error");
    unlink(pp->errpath);
    if (pp->failed || !r) continue;
    for (int i = 0; i < pp->n_scopes; i++) {
      peer_scope *sc = &pp->scopes[i];
      if (sc->runs < 1) continue;
      double v[64];
      memcpy(v, sc->rate, sizeof v[0] * (size_t)sc->runs);
      qsort(v, (size_t)sc->runs, sizeof v[0], cmp_double);
      hs_bench_figure g;
      memset(&g, 0, sizeof g);
      snprintf(g.workload, sizeof g.workload, "sample");
      snprintf(g.device, sizeof g.device, "peer.%s@%s", pp->name, sc->scope);
      snprintf(g.device_name, sizeof g.device_name, "%s %s on the host CPU, %u thread(s)",
               pp->module, pp->version, sc->threads);
      snprintf(g.name, sizeof g.name, "sampled_edges_per_s");
      snprintf(g.unit, sizeof g.unit, "edges/s");
      g.median = sc->runs % 2 ? v[sc->runs / 2] : 0.5 * (v[sc->runs / 2 - 1] + v[sc->runs / 2]);
      g.min = v[0];
      g.max = v[sc->runs - 1];
      g.limit_median = g.limit_min = g.limit_max = NAN;
      g.ratio_median = g.ratio_min = g.ratio_max = NAN;
      g.runs = sc->runs;
      snprintf(g.note, sizeof g.note,
               "the same graph, fanouts and batch; run by run alternating with %s, with its "
               "%u thread(s); %.0f edges a batch",
               sc->scope, sc->threads, sc->edges);
      if (hs_bench_results_add(r, &g) == HS_OK) on_figure(ps->figures, &g);
    }
  }
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

/* ---- the implementations matrix --------------------------------------------------------- */

#define MAX_IMPLS 8

typedef struct impl_col {
  char key[32];   /* platform key: pocl, rusticl, oclgrind */
  char scope[32]; /* "dev<index>" of its first device */
  char name[HS_NAME_MAX];
  bool simulator;
} impl_col;

/* The first device of each listed implementation ("all": of every
 * platform), as --devices selectors; columns in the order given. */
static int pick_implementations(const hs_runtime *rt, const char *list, impl_col *cols,
                                char *devices, size_t cap) {
  int n = hs_runtime_device_count(rt), nc = 0;
  devices[0] = '\0';
  bool all = strcmp(list, "all") == 0;
  for (int i = 0; i < n && nc < MAX_IMPLS; i++) {
    const hs_device_info *d = hs_runtime_device(rt, i);
    bool first = true, asked = all;
    for (int j = 0; j < i; j++)
      first &= strcmp(hs_runtime_device(rt, j)->platform_key, d->platform_key) != 0;
    for (const char *s = list; !all && *s;) {
      size_t len = strcspn(s, ",");
      asked |= strlen(d->platform_key) == len && strncmp(s, d->platform_key, len) == 0;
      s += len + (s[len] == ',');
    }
    if (!first || !asked) continue;
    impl_col *c = &cols[nc++];
    snprintf(c->key, sizeof c->key, "%s", d->platform_key);
    snprintf(c->scope, sizeof c->scope, "dev%d", d->index);
    snprintf(c->name, sizeof c->name, "%s", d->name);
    c->simulator = d->simulator;
    snprintf(devices + strlen(devices), cap - strlen(devices), "%s%s", nc > 1 ? "," : "",
             d->selector);
  }
  for (const char *s = list; !all && *s;) {
    size_t len = strcspn(s, ",");
    bool found = false;
    for (int c = 0; c < nc; c++)
      found |= strlen(cols[c].key) == len && strncmp(s, cols[c].key, len) == 0;
    if (!found) {
      fprintf(stderr,
              "hetsage bench: --implementations: no device of '%.*s' (hetsage info lists the "
              "implementations; tools/with-opencl.sh makes rusticl and oclgrind visible)\n",
              (int)len, s);
      return -1;
    }
    s += len + (s[len] == ',');
  }
  return nc;
}

/* One Markdown table: a row per figure, a column per implementation (the
 * median, with its ratio to the same-run limit where it has one). */
static bool write_matrix(const char *path, const hs_bench_results *r, const impl_col *cols,
                         int nc, const char *command) {
  FILE *f = fopen(path, "w");
  if (!f) {
    fprintf(stderr, "hetsage bench: cannot write %s: %s\n", path, strerror(errno));
    return false;
  }
  fprintf(f, "# The same workloads on each OpenCL implementation\n\n");
  fprintf(f, "Made by `%s`. Each cell is the median of the steady-state runs, with its\n"
             "ratio to the same-run limit in brackets where the figure has one; peers\n"
             "(when importable) ran run by run alternating with each device.\n\n",
          command);
  fprintf(f, "| implementation | device |\n| --- | --- |\n");
  for (int c = 0; c < nc; c++)
    fprintf(f, "| %s | %s (%s)%s |\n", cols[c].key, cols[c].name, cols[c].scope,
            cols[c].simulator ? ", a simulator: its speed says nothing about hardware" : "");
  fprintf(f, "\n| workload | figure | unit |");
  for (int c = 0; c < nc; c++) fprintf(f, " %s |", cols[c].key);
  fprintf(f, "\n| --- | --- | --- |");
  for (int c = 0; c < nc; c++) fprintf(f, " --- |");
  fputc('\n', f);
  size_t n = hs_bench_results_count(r);
  for (size_t i = 0; i < n; i++) {
    const hs_bench_figure *g = hs_bench_results_figure(r, i);
    int col = -1;
    for (int c = 0; c < nc; c++)
      if (strcmp(g->device, cols[c].scope) == 0) col = c;
    if (col < 0) continue;
    /* The first figure of each (workload, name) starts its row. */
    bool seen = false;
    for (size_t j = 0; j < i && !seen; j++) {
      const hs_bench_figure *h = hs_bench_results_figure(r, j);
      bool in = false;
      for (int c = 0; c < nc; c++) in |= strcmp(h->device, cols[c].scope) == 0;
      seen = in && strcmp(h->workload, g->workload) == 0 && strcmp(h->name, g->name) == 0;
    }
    if (seen) continue;
    fprintf(f, "| %s | %s | %s |", g->workload, g->name, g->unit);
    for (int c = 0; c < nc; c++) {
      const hs_bench_figure *x = NULL;
      for (size_t j = i; j < n && !x; j++) {
        const hs_bench_figure *h = hs_bench_results_figure(r, j);
        if (strcmp(h->device, cols[c].scope) == 0 && strcmp(h->workload, g->workload) == 0 &&
            strcmp(h->name, g->name) == 0)
          x = h;
      }
      char m[32];
      if (!x) {
        fprintf(f, " — |");
        continue;
      }
      bench_fmt_si(x->median, m, sizeof m);
      if (isfinite(x->ratio_median)) fprintf(f, " %s (%.3g) |", m, x->ratio_median);
      else fprintf(f, " %s |", m);
    }
    fputc('\n', f);
  }
  bool ok = fclose(f) == 0;
  if (!ok) fprintf(stderr, "hetsage bench: cannot write %s\n", path);
  return ok;
}

int cmd_bench(int argc, char **argv) {
  hs_bench_options o;
  hs_bench_options_init(&o);
  const char *json = NULL, *base_path = NULL, *load = NULL, *report = NULL, *board = NULL;
  const char *jsonl = NULL, *impls = NULL, *matrix = NULL;
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
    } else if (strcmp(a, "--jsonl") == 0 && has) {
      jsonl = argv[++i];
    } else if (strcmp(a, "--implementations") == 0 && has) {
      impls = argv[++i];
    } else if (strcmp(a, "--matrix") == 0 && has) {
      matrix = argv[++i];
    } else if (strcmp(a, "-q") == 0 || strcmp(a, "--quiet") == 0) {
      quiet = true;
    } else {
      return cli_usage_error("bench", "unknown option or missing value: '%s'", a);
    }
  }
  if (matrix && !impls)
    return cli_usage_error("bench", "--matrix needs --implementations (its columns)");
  if (impls && o.devices)
    return cli_usage_error("bench", "--implementations chooses the devices: no --devices");
  FILE *out = quiet ? NULL : (json && strcmp(json, "-") == 0) ? stderr : stdout;
  sink figures = {out, NULL};
  if (jsonl && !(figures.jsonl = strcmp(jsonl, "-") == 0 ? stdout : fopen(jsonl, "w"))) {
    fprintf(stderr, "hetsage bench: cannot write %s: %s\n", jsonl, strerror(errno));
    return 1;
  }
  impl_col cols[MAX_IMPLS];
  int n_cols = 0;
  char devices[512];
  peers ps;
  memset(&ps, 0, sizeof ps);
  char command[1024] = "hetsage bench";
  for (int i = 1; i < argc; i++)
    snprintf(command + strlen(command), sizeof command - strlen(command), " %s", argv[i]);
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
      on_figure(&figures, hs_bench_results_figure(r, i));
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
    if (impls) {
      n_cols = pick_implementations(rt, impls, cols, devices, sizeof devices);
      if (n_cols <= 0) {
        rc = 2;
        goto done;
      }
      o.devices = devices;
      o.sub_devices = false;
      if (out) fprintf(out, "implementations: %s (devices %s)\n", impls, devices);
    }
    if (peer && (!o.workloads || (o.workloads & HS_BENCH_SAMPLE))) {
      peers_init(&ps, &figures);
      o.sample_hook = peer_hook;
      o.sample_hook_user = &ps;
    }
    if (out)
      fprintf(out, "%-7s %-11s %-34s %18s  %-24s %10s\n", "", "device", "figure", "median",
              "limit", "median");
    st = hs_bench_run(rt, &o, on_figure, &figures, &r);
    if (st == HS_OK) peers_finish(&ps, r);
    else peers_finish(&ps, NULL);
    if (st != HS_OK) {
      cli_report("bench", "benchmark", st);
      rc = st == HS_ERR_INVALID_ARG ? 2 : 1;
      goto done;
    }
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
  if (matrix && r && !write_matrix(matrix, r, cols, n_cols, command)) rc = 1;
  if (matrix && out) fprintf(out, "matrix: %s\n", matrix);
  if (report && out) fprintf(out, "report: %s/index.html\n", report);
  if (base) {
    int reg = compare(r, base, out ? out : stderr);
    if (reg != 0) rc = 1;
  }
done:
  if (figures.jsonl && figures.jsonl != stdout) fclose(figures.jsonl);
  hs_bench_results_free(r);
  hs_bench_results_free(base);
  hs_runtime_close(rt);
  hs_board_profile_free(prof);
  return rc;
}
