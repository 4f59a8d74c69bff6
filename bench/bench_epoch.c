/* Whole training runs beside a peer framework: hetsage trains a model
 * (GraphSAGE, GCN or GAT: --model) on a dataset for N epochs through the
 * public session API, then (when $HS_PEER_PYTHON, default python3, can
 * import it) DGL trains the same model (SAGEConv, GraphConv, GATConv) with
 * the same data, fanouts, batch size and hyper-parameters on the same
 * machine in the same run (bench/peer_train.py).
 *
 * Both sides are measured by the same rules, so that the ratios can be
 * trusted:
 *  - rounds alternate: hetsage trains, then the peer, R times, so that a
 *    change of the machine's load lands on both sides;
 *  - a round's figure is the median of its epochs 2..N (the first carries
 *    one-time costs on both sides); the summary is the median of the
 *    rounds' medians, with their min and max;
 *  - threads: every core of the machine on both sides (hetsage's default
 *    placement, torch.set_num_threads(cores) for the peer);
 *    $HS_PEER_THREADS sets the peer's count instead, and is reported;
 *  - seeds: round r (from 0) runs with seed S + r on both sides (hetsage's
 *    session seed; the peer's torch and DGL sampler seeds), so that rounds
 *    are independent draws and both sides see the same seeds;
 *  - accuracy: after every epoch, outside the timing, validation and test
 *    accuracy with full neighbourhoods; reported are the test accuracy
 *    after the last epoch and at the epoch of best validation accuracy,
 *    each the mean over rounds with its standard deviation, and the mean
 *    of the rounds' differences (hetsage - peer, paired by seed) with its
 *    standard error.
 * hetsage's own limit is printed too: epoch wall / busiest stage's busy
 * time (1.0 = perfect overlap); and each side's peak resident set
 * (getrusage of this process, all rounds; of the peer's process, the
 * largest over its runs) with their ratio.
 *
 * Output: JSON Lines on stdout, each line flushed as it is made: one per
 * side per round as the round ends (a killed run keeps what it measured),
 * then the summary line ("bench": "epoch"). A peer that fails is skipped
 * with its error (the tail of its stderr) in the summary and on stderr.
 *
 * usage: bench_epoch [--dataset DIR] [--epochs N] [--fanouts 25,10]
 *                    [--batch B] [--hidden H] [--lr X] [--weight-decay X]
 *                    [--dropout P] [--seed S] [--mode threads|async|off]
 *                    [--rounds R] [--no-peer] [--model sage|gcn|gat] [--heads K]
 * With no --dataset: the bundled Cora. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hetsage.h"

#define MAX_EPOCHS 1000
#define MAX_ROUNDS 16

typedef struct opts {
  const char *dataset;
  int epochs;
  char fanouts[64];
  hs_session_config cfg;
  int rounds;
  bool peer;
} opts;

static int usage(FILE *f, int rc) {
  fprintf(f,
          "usage: bench_epoch [--dataset DIR] [--epochs N] [--fanouts 25,10] [--batch B]\n"
          "                   [--hidden H] [--lr X] [--weight-decay X] [--dropout P]\n"
          "                   [--seed S] [--mode threads|async|off] [--rounds R] [--no-peer]\n"
          "                   [--model sage|gcn|gat] [--heads K]\n"
          "hetsage and (when importable) DGL train the same model on the same data in\n"
          "alternating rounds, measured by the same rules; JSON Lines on stdout: one line\n"
          "per side per round as it ends, then the summary (epoch times, test accuracy\n"
          "after the last epoch and at the best validation epoch, and their ratios).\n"
          "  --epochs N   2..%d (epoch 1 carries one-time costs and is not timed)\n"
          "  --rounds R   1..%d\n"
          "The peer's python is $HS_PEER_PYTHON (default python3); its threads are the\n"
          "machine's cores, or $HS_PEER_THREADS.\n",
          MAX_EPOCHS, MAX_ROUNDS);
  return rc;
}

static int parse_fanouts(const char *s, hs_session_config *c) {
  int n = 0;
  const char *p = s;
  while (*p) {
    char *end;
    long v = strtol(p, &end, 10);
    if (end == p || n == HS_MAX_LAYERS || v == 0 || v < -1 || v > 1000000) return -1;
    c->fanouts[n++] = (int32_t)v;
    p = *end == ',' ? end + 1 : end;
    if (*end && *end != ',') return -1;
  }
  c->n_layers = n;
  return n ? 0 : -1;
}

/* A whole-string integer in [lo, hi]. */
static bool int_in(const char *v, long lo, long hi, int *out) {
  char *end;
  long x = strtol(v, &end, 10);
  if (end == v || *end || x < lo || x > hi) return false;
  *out = (int)x;
  return true;
}

static int bad(const char *opt, const char *v, const char *what) {
  fprintf(stderr, "bench_epoch: %s '%s': %s\n", opt, v ? v : "(missing)", what);
  return -1;
}

static int parse(int argc, char **argv, opts *o) {
  hs_session_config_init(&o->cfg);
  o->epochs = 10;
  o->rounds = 3;
  o->peer = true;
  snprintf(o->fanouts, sizeof o->fanouts, "25,10");
  char range[96];
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "-h") || !strcmp(a, "--help")) exit(usage(stdout, 0));
    if (!strcmp(a, "--no-peer")) {
      o->peer = false;
      continue;
    }
    if (!v) return bad(a, v, "unknown option or missing value");
    i++;
    if (!strcmp(a, "--dataset")) o->dataset = v;
    else if (!strcmp(a, "--epochs")) {
      snprintf(range, sizeof range, "2..%d (epoch 1 carries one-time costs and is not timed)",
               MAX_EPOCHS);
      if (!int_in(v, 2, MAX_EPOCHS, &o->epochs)) return bad(a, v, range);
    } else if (!strcmp(a, "--rounds")) {
      snprintf(range, sizeof range, "1..%d", MAX_ROUNDS);
      if (!int_in(v, 1, MAX_ROUNDS, &o->rounds)) return bad(a, v, range);
    } else if (!strcmp(a, "--fanouts")) {
      snprintf(o->fanouts, sizeof o->fanouts, "%s", v);
      if (parse_fanouts(o->fanouts, &o->cfg))
        return bad(a, v, "1 to 8 comma-separated counts, each >= 1 or -1 (all)");
    } else if (!strcmp(a, "--batch")) {
      if (!int_in(v, 1, 1 << 24, &o->cfg.batch_size)) return bad(a, v, "1..16777216");
    } else if (!strcmp(a, "--hidden")) {
      if (!int_in(v, 1, 1 << 16, &o->cfg.hidden)) return bad(a, v, "1..65536");
    } else if (!strcmp(a, "--lr")) o->cfg.lr = strtof(v, NULL);
    else if (!strcmp(a, "--weight-decay")) o->cfg.weight_decay = strtof(v, NULL);
    else if (!strcmp(a, "--dropout")) o->cfg.dropout = strtof(v, NULL);
    else if (!strcmp(a, "--seed")) o->cfg.seed = strtoull(v, NULL, 10);
    else if (!strcmp(a, "--model")) {
      if (hs_model_kind_parse(v, &o->cfg.model) != HS_OK) return bad(a, v, "sage, gcn or gat");
    } else if (!strcmp(a, "--heads")) {
      if (!int_in(v, 1, 64, &o->cfg.heads)) return bad(a, v, "1..64");
    }
    else if (!strcmp(a, "--mode")) {
      if (!strcmp(v, "threads")) o->cfg.pipeline = HS_PIPELINE_THREADS;
      else if (!strcmp(v, "async")) o->cfg.pipeline = HS_PIPELINE_ASYNC;
      else if (!strcmp(v, "off")) o->cfg.pipeline = HS_PIPELINE_OFF;
      else return bad(a, v, "threads, async or off");
    } else return bad(a, v, "unknown option");
  }
  return parse_fanouts(o->fanouts, &o->cfg);
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Median, min and max of v[0..n) (sorted in place). */
typedef struct summary {
  double median, min, max;
} summary;

static summary summarize(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  summary s = {n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]), v[0], v[n - 1]};
  return s;
}

/* One side's round: the median of its epochs 2..N and its accuracies. */
typedef struct round_result {
  summary epoch_s;
  double test_last, test_best; /* after the last epoch; at the best validation */
  int best_epoch;              /* from 1 */
  double wall_over_busiest;    /* hetsage only */
  double peak_rss_kb;          /* the peer's process; 0: not reported */
} round_result;

typedef struct peer_state {
  bool ok;
  char version[64];
  char why[512];
} peer_state;

static const char *peer_python(void) {
  const char *p = getenv("HS_PEER_PYTHON");
  return p && *p ? p : "python3";
}

/* The last `max` lines of a file, on one line joined by " | ". */
static void tail_of(const char *path, char *out, size_t cap, int max) {
  char lines[8][256];
  int n = 0;
  FILE *f = fopen(path, "r");
  out[0] = '\0';
  if (!f) return;
  char line[256];
  while (fgets(line, sizeof line, f)) {
    line[strcspn(line, "\r\n")] = '\0';
    if (!line[0]) continue;
    snprintf(lines[n % 8], sizeof lines[0], "%s", line);
    n++;
  }
  fclose(f);
  if (max > 8) max = 8;
  for (int i = n > max ? n - max : 0; i < n; i++) {
    size_t used = strlen(out);
    snprintf(out + used, cap - used, "%s%s", used ? " | " : "", lines[i % 8]);
  }
}

/* peer_train.py prints "epoch_s MEDIAN MIN MAX EPOCHS TEST_LAST TEST_BEST
 * BEST_EPOCH VERSION PEAK_RSS_KB" on its last line; its stderr is kept to
 * show why it failed. */
static bool run_peer(const opts *o, uint64_t seed, const char *dataset, int threads,
                     peer_state *ps, round_result *r) {
  char cmd[4096], errpath[64] = "/tmp/hs-bench-peer-XXXXXX";
  int fd = mkstemp(errpath);
  if (fd < 0) {
    snprintf(ps->why, sizeof ps->why, "cannot make a file for the peer's stderr");
    return false;
  }
  close(fd);
  snprintf(cmd, sizeof cmd,
           "%s '%s/peer_train.py' --peer dgl --dataset '%s' --fanouts %s --batch %d --hidden %d "
           "--lr %g --weight-decay %g --dropout %g --epochs %d --threads %d --seed %llu "
           "--model %s --heads %d 2>'%s'",
           peer_python(), HS_BENCH_DIR, dataset, o->fanouts, o->cfg.batch_size, o->cfg.hidden,
           (double)o->cfg.lr, (double)o->cfg.weight_decay, (double)o->cfg.dropout, o->epochs,
           threads, (unsigned long long)seed, hs_model_kind_name(o->cfg.model),
           o->cfg.heads, errpath);
  fprintf(stderr, "bench_epoch: peer: %s\n", cmd);
  FILE *p = popen(cmd, "r");
  char line[512], last[512] = "";
  while (p && fgets(line, sizeof line, p)) snprintf(last, sizeof last, "%s", line);
  int rc = p ? pclose(p) : -1;
  bool ok = rc == 0 &&
            sscanf(last, "epoch_s %lf %lf %lf %*d %lf %lf %d %63s %lf", &r->epoch_s.median,
                   &r->epoch_s.min, &r->epoch_s.max, &r->test_last, &r->test_best,
                   &r->best_epoch, ps->version, &r->peak_rss_kb) >= 7;
  if (!ok) {
    char tail[400];
    tail_of(errpath, tail, sizeof tail, 3);
    snprintf(ps->why, sizeof ps->why, "the peer script failed (exit status %d): %s",
             WIFEXITED(rc) ? WEXITSTATUS(rc) : rc, tail[0] ? tail : "no output");
    fprintf(stderr, "bench_epoch: %s\n", ps->why);
  }
  unlink(errpath);
  return ok;
}

/* One hetsage training run. Accuracies are measured after every epoch,
 * outside the epoch's timing, exactly as the peer measures them. */
static int run_hetsage(const opts *o, uint64_t seed, hs_runtime *rt, hs_dataset *ds,
                       round_result *r, hs_epoch_stats *last) {
  hs_session *s = NULL;
  hs_session_config cfg = o->cfg;
  cfg.seed = seed;
  if (hs_session_create(rt, ds, &cfg, &s)) {
    fprintf(stderr, "bench_epoch: %s\n", hs_last_error());
    return 1;
  }
  double wall[MAX_EPOCHS], ratio[MAX_EPOCHS], best_valid = -1.0;
  int n = 0;
  memset(r, 0, sizeof *r);
  for (int e = 0; e < o->epochs; e++) {
    double valid = 0, test = 0;
    if (hs_session_train_epoch(s, last) ||
        hs_session_evaluate_full(s, HS_SPLIT_VALID, &valid) ||
        hs_session_evaluate_full(s, HS_SPLIT_TEST, &test)) {
      fprintf(stderr, "bench_epoch: epoch %d: %s\n", e + 1, hs_last_error());
      hs_session_destroy(s);
      return 1;
    }
    double busiest = 0;
    for (int k = 0; k < HS_STAGE_COUNT_; k++) busiest = fmax(busiest, last->stage_busy_s[k]);
    fprintf(stderr, "bench_epoch: hetsage epoch %d: %.3f s, loss %.4f, valid acc %.4f\n", e,
            last->wall_s, last->loss, valid);
    r->test_last = test;
    if (valid > best_valid) {
      best_valid = valid;
      r->test_best = test;
      r->best_epoch = e + 1;
    }
    if (e == 0) continue;
    wall[n] = last->wall_s;
    ratio[n] = busiest > 0 ? last->wall_s / busiest : NAN;
    n++;
  }
  r->epoch_s = summarize(wall, n);
  r->wall_over_busiest = summarize(ratio, n).median;
  hs_session_destroy(s);
  return 0;
}

static void print_round(const char *side, int round, int threads, const round_result *r) {
  printf("{\"bench\": \"epoch_round\", \"side\": \"%s\", \"round\": %d, \"threads\": %d, "
         "\"epoch_s\": {\"median\": %.6f, \"min\": %.6f, \"max\": %.6f}, \"test_acc_last\": %.4f, "
         "\"test_acc_best_valid\": %.4f, \"best_valid_epoch\": %d}\n",
         side, round + 1, threads, r->epoch_s.median, r->epoch_s.min, r->epoch_s.max,
         r->test_last, r->test_best, r->best_epoch);
  fflush(stdout);
}

/* Mean and sample standard deviation (0 for one value). */
typedef struct mean_sd {
  double mean, sd;
} mean_sd;

static mean_sd mean_sd_of(const double *v, int n) {
  mean_sd m = {0, 0};
  for (int i = 0; i < n; i++) m.mean += v[i] / n;
  if (n < 2) return m;
  double ss = 0;
  for (int i = 0; i < n; i++) ss += (v[i] - m.mean) * (v[i] - m.mean);
  m.sd = sqrt(ss / (n - 1));
  return m;
}

/* Median of the rounds' medians, mean accuracies with their spread. */
typedef struct side_summary {
  summary epoch_s;
  mean_sd test_last, test_best;
} side_summary;

static side_summary summarize_side(const round_result *r, int n) {
  double med[MAX_ROUNDS], last[MAX_ROUNDS], best[MAX_ROUNDS];
  side_summary s;
  for (int i = 0; i < n; i++) {
    med[i] = r[i].epoch_s.median;
    last[i] = r[i].test_last;
    best[i] = r[i].test_best;
  }
  s.epoch_s = summarize(med, n);
  s.test_last = mean_sd_of(last, n);
  s.test_best = mean_sd_of(best, n);
  return s;
}

/* The rounds' paired differences a - b: their mean and its standard error
 * (0 for one round). */
static mean_sd paired_diff(const round_result *a, const round_result *b, int n, bool best) {
  double d[MAX_ROUNDS];
  for (int i = 0; i < n; i++)
    d[i] = best ? a[i].test_best - b[i].test_best : a[i].test_last - b[i].test_last;
  mean_sd m = mean_sd_of(d, n);
  m.sd /= sqrt((double)n);
  return m;
}

int main(int argc, char **argv) {
  /* OpenBLAS on the kernel set this CPU runs best where it fell back to an older one. */
  hs_blas_reexec(argv);
  opts o;
  memset(&o, 0, sizeof o);
  if (parse(argc, argv, &o)) return usage(stderr, 2);
  char bundled[1024];
  const char *dataset = o.dataset;
  hs_runtime *rt = NULL;
  hs_dataset *ds = NULL;
  int rc = 1;
  static round_result hr[MAX_ROUNDS], pr[MAX_ROUNDS];
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  const char *thr = getenv("HS_PEER_THREADS");
  int threads = thr && atoi(thr) > 0 ? atoi(thr) : cores > 0 ? (int)cores : 1;
  int peer_rounds = 0;
  peer_state ps = {.ok = o.peer};
  snprintf(ps.why, sizeof ps.why, "skipped (--no-peer)");
  hs_epoch_stats st;
  hs_epoch_stats_init(&st);
  if (o.peer) {
    char cmd[512];
    snprintf(cmd, sizeof cmd, "%s -c 'import dgl' >/dev/null 2>&1", peer_python());
    if (system(cmd) != 0) {
      ps.ok = false;
      snprintf(ps.why, sizeof ps.why, "not installed (%s cannot import dgl)", peer_python());
    }
  }
  if (hs_runtime_open(&rt, NULL) ||
      (!dataset && hs_dataset_bundled(rt, "cora", bundled, sizeof bundled)) ||
      hs_dataset_open(dataset ? dataset : bundled, &ds)) {
    fprintf(stderr, "bench_epoch: %s\n", hs_last_error());
    goto done;
  }
  if (!dataset) dataset = bundled; /* the peer reads the same files */
  for (int r = 0; r < o.rounds; r++) {
    uint64_t seed = o.cfg.seed + (uint64_t)r;
    if (run_hetsage(&o, seed, rt, ds, &hr[r], &st)) goto done;
    print_round("hetsage", r, (int)cores, &hr[r]);
    if (!ps.ok) continue;
    if (!run_peer(&o, seed, dataset, threads, &ps, &pr[peer_rounds])) {
      ps.ok = false;
      continue;
    }
    print_round("peer", r, threads, &pr[peer_rounds]);
    peer_rounds++;
  }
  side_summary h = summarize_side(hr, o.rounds);
  double ratio[MAX_ROUNDS];
  for (int r = 0; r < o.rounds; r++) ratio[r] = hr[r].wall_over_busiest;
  double med_ratio = summarize(ratio, o.rounds).median;
  printf("{\"bench\": \"epoch\", \"dataset\": \"%s\", ", dataset);
  printf("\"config\": {\"model\": \"%s\", \"heads\": %d, \"fanouts\": \"%s\", \"batch\": %d, "
         "\"hidden\": %d, \"lr\": %g, \"weight_decay\": %g, \"dropout\": %g, \"epochs\": %d, "
         "\"seed\": %llu, \"rounds\": %d, \"round_seeds\": \"seed + round - 1\"}, ",
         hs_model_kind_name(o.cfg.model), o.cfg.model == HS_MODEL_GAT ? o.cfg.heads : 1,
         o.fanouts, o.cfg.batch_size, o.cfg.hidden, (double)o.cfg.lr, (double)o.cfg.weight_decay,
         (double)o.cfg.dropout, o.epochs, (unsigned long long)o.cfg.seed, o.rounds);
  printf("\"rules\": {\"epoch_s\": \"median of each round's epochs 2..N, then the median of "
         "the rounds\", \"test_acc\": \"full neighbourhoods after every epoch, outside the "
         "timing; mean over rounds (sd: their sample standard deviation; diff: mean of the "
         "rounds' hetsage - peer, paired by seed, with its standard error)\", \"threads\": {\"hetsage\": %ld, \"peer\": %d, "
         "\"peer_set_by\": \"%s\"}}, ",
         cores, threads, thr && atoi(thr) > 0 ? "HS_PEER_THREADS" : "the machine's cores");
  printf("\"hetsage\": {\"epoch_s\": {\"median\": %.6f, \"min\": %.6f, \"max\": %.6f}, "
         "\"test_acc_last\": %.4f, \"test_acc_last_sd\": %.4f, \"test_acc_best_valid\": %.4f, "
         "\"test_acc_best_valid_sd\": %.4f, \"wall_over_busiest_stage\": %.3f, \"pipeline\": \"%s\", \"depth\": %d, "
         "\"peak_rss_bytes\": %llu}, ",
         h.epoch_s.median, h.epoch_s.min, h.epoch_s.max, h.test_last.mean, h.test_last.sd,
         h.test_best.mean, h.test_best.sd, med_ratio,
         hs_pipeline_mode_name(st.pipeline), st.depth, (unsigned long long)st.peak_rss_bytes);
  if (peer_rounds == o.rounds) {
    side_summary p = summarize_side(pr, peer_rounds);
    mean_sd dl = paired_diff(hr, pr, peer_rounds, false), db = paired_diff(hr, pr, peer_rounds, true);
    double rss_kb = 0;
    for (int r = 0; r < peer_rounds; r++) rss_kb = fmax(rss_kb, pr[r].peak_rss_kb);
    char rss[64] = "null", rss_ratio[64] = "null";
    if (rss_kb > 0) {
      snprintf(rss, sizeof rss, "%.0f", rss_kb * 1024.0);
      snprintf(rss_ratio, sizeof rss_ratio, "%.3f",
               (double)st.peak_rss_bytes / (rss_kb * 1024.0));
    }
    printf("\"peer\": {\"name\": \"dgl\", \"version\": \"%s\", \"rounds\": %d, "
           "\"epoch_s\": {\"median\": %.6f, \"min\": %.6f, \"max\": %.6f}, "
           "\"test_acc_last\": %.4f, \"test_acc_last_sd\": %.4f, \"test_acc_best_valid\": %.4f, "
           "\"test_acc_best_valid_sd\": %.4f, \"peak_rss_bytes\": %s, "
           "\"ratio_peer_epoch_to_hetsage\": %.3f, \"test_acc_last_hetsage_minus_peer\": %.4f, "
           "\"test_acc_last_diff_se\": %.4f, \"test_acc_best_valid_hetsage_minus_peer\": %.4f, "
           "\"test_acc_best_valid_diff_se\": %.4f, \"ratio_hetsage_peak_rss_to_peer\": %s}}\n",
           ps.version, peer_rounds, p.epoch_s.median, p.epoch_s.min, p.epoch_s.max,
           p.test_last.mean, p.test_last.sd, p.test_best.mean, p.test_best.sd, rss,
           p.epoch_s.median / h.epoch_s.median, dl.mean, dl.sd, db.mean, db.sd, rss_ratio);
  } else {
    /* A peer that failed part-way has no summary: its rounds are above. */
    char why[600];
    size_t k = 0;
    for (const char *c = ps.why; *c && k + 2 < sizeof why; c++) {
      if (*c == '"' || *c == '\\') why[k++] = '\\';
      why[k++] = (unsigned char)*c < 0x20 ? ' ' : *c;
    }
    why[k] = '\0';
    printf("\"peer\": {\"name\": \"dgl\", \"skipped\": \"%s\"}}\n", why);
  }
  rc = 0;
done:
  hs_dataset_close(ds);
  hs_runtime_close(rt);
  return rc;
}
