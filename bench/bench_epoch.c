/* Whole training runs beside a peer framework: hetsage trains a model
 * (GraphSAGE, GCN or GAT: --model) on a dataset for N epochs through the
 * public session API, then (when python3 can import it) DGL trains the same
 * model (SAGEConv, GraphConv, GATConv) with the same data,
 * fanouts, batch size and hyper-parameters on the same machine in the same
 * run (bench/peer_train.py). Reported side by side: time per epoch (median
 * over epochs 2..N: the first carries one-time costs on both sides), test
 * accuracy after the last epoch with full neighbourhoods, and the ratios
 * peer epoch time / hetsage epoch time (> 1: hetsage is faster) and
 * hetsage accuracy - peer accuracy, and each side's peak resident set
 * (getrusage of this process, all rounds; of the peer's process, the
 * largest over its runs) with their ratio. hetsage's own limit is printed
 * too: epoch wall / busiest stage's busy time (1.0 = perfect overlap).
 *
 * usage: bench_epoch [--dataset DIR] [--epochs N] [--fanouts 25,10]
 *                    [--batch B] [--hidden H] [--lr X] [--weight-decay X]
 *                    [--dropout P] [--seed S] [--mode threads|async|off]
 *                    [--rounds R] [--no-peer] [--model sage|gcn|gat] [--heads K]
 * R rounds (default 3) alternate a hetsage run and a peer run; figures are
 * medians over all rounds' epochs 2..N and mean test accuracies.
 * With no --dataset: the bundled Cora. The peer runs with as many threads
 * as the machine has cores and with one, and its faster setting is the
 * figure ($HS_PEER_THREADS sets a single count); its python is
 * $HS_PEER_PYTHON or python3. */
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
          "hetsage and (when importable) DGL train the same model on the same data;\n"
          "JSON on stdout: epoch times, test accuracy, and their ratios.\n");
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

static int parse(int argc, char **argv, opts *o) {
  hs_session_config_init(&o->cfg);
  o->epochs = 10;
  o->rounds = 3;
  o->peer = true;
  snprintf(o->fanouts, sizeof o->fanouts, "25,10");
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "-h") || !strcmp(a, "--help")) exit(usage(stdout, 0));
    if (!strcmp(a, "--no-peer")) {
      o->peer = false;
      continue;
    }
    if (!v) return -1;
    i++;
    if (!strcmp(a, "--dataset")) o->dataset = v;
    else if (!strcmp(a, "--epochs")) o->epochs = atoi(v);
    else if (!strcmp(a, "--rounds")) o->rounds = atoi(v);
    else if (!strcmp(a, "--fanouts")) snprintf(o->fanouts, sizeof o->fanouts, "%s", v);
    else if (!strcmp(a, "--batch")) o->cfg.batch_size = atoi(v);
    else if (!strcmp(a, "--hidden")) o->cfg.hidden = atoi(v);
    else if (!strcmp(a, "--lr")) o->cfg.lr = strtof(v, NULL);
    else if (!strcmp(a, "--weight-decay")) o->cfg.weight_decay = strtof(v, NULL);
    else if (!strcmp(a, "--dropout")) o->cfg.dropout = strtof(v, NULL);
    else if (!strcmp(a, "--seed")) o->cfg.seed = strtoull(v, NULL, 10);
    else if (!strcmp(a, "--model")) {
      if (hs_model_kind_parse(v, &o->cfg.model) != HS_OK) return -1;
    } else if (!strcmp(a, "--heads")) o->cfg.heads = atoi(v);
    else if (!strcmp(a, "--mode")) {
      if (!strcmp(v, "threads")) o->cfg.pipeline = HS_PIPELINE_THREADS;
      else if (!strcmp(v, "async")) o->cfg.pipeline = HS_PIPELINE_ASYNC;
      else if (!strcmp(v, "off")) o->cfg.pipeline = HS_PIPELINE_OFF;
      else return -1;
    } else return -1;
  }
  if (o->epochs < 2 || o->epochs > MAX_EPOCHS || o->rounds < 1 || o->rounds > MAX_ROUNDS || o->cfg.batch_size < 1 || o->cfg.hidden < 1 || o->cfg.heads < 1)
    return -1;
  return parse_fanouts(o->fanouts, &o->cfg);
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

typedef struct peer_result {
  bool ran;
  double median, min, max, test_acc;
  double peak_rss_kb; /* the peer process's peak resident set; 0: not reported */
  int epochs;
  char version[64];
  char why[128];
} peer_result;

static const char *peer_python(void) {
  const char *p = getenv("HS_PEER_PYTHON");
  return p && *p ? p : "python3";
}

/* peer_train.py prints "epoch_s MEDIAN MIN MAX EPOCHS TEST_ACC VERSION
 * PEAK_RSS_KB" on its last line. */
static void run_peer(const opts *o, const char *dataset, int threads, peer_result *r) {
  memset(r, 0, sizeof *r);
  char cmd[4096];
  snprintf(cmd, sizeof cmd, "%s -c 'import dgl' >/dev/null 2>&1", peer_python());
  if (system(cmd) != 0) {
    snprintf(r->why, sizeof r->why, "not installed (%s cannot import dgl)", peer_python());
    return;
  }
  snprintf(cmd, sizeof cmd,
           "%s '%s/peer_train.py' --peer dgl --dataset '%s' --fanouts %s --batch %d --hidden %d "
           "--lr %g --weight-decay %g --dropout %g --epochs %d --threads %d --seed %llu "
           "--model %s --heads %d",
           peer_python(), HS_BENCH_DIR, dataset, o->fanouts, o->cfg.batch_size, o->cfg.hidden,
           (double)o->cfg.lr, (double)o->cfg.weight_decay, (double)o->cfg.dropout, o->epochs,
           threads, (unsigned long long)o->cfg.seed, hs_model_kind_name(o->cfg.model),
           o->cfg.heads);
  fprintf(stderr, "bench_epoch: peer: %s\n", cmd);
  FILE *p = popen(cmd, "r");
  char line[512], last[512] = "";
  while (p && fgets(line, sizeof line, p)) snprintf(last, sizeof last, "%s", line);
  int rc = p ? pclose(p) : -1;
  int got = sscanf(last, "epoch_s %lf %lf %lf %d %lf %63s %lf", &r->median, &r->min, &r->max,
                   &r->epochs, &r->test_acc, r->version, &r->peak_rss_kb);
  if (rc != 0 || got < 6) {
    snprintf(r->why, sizeof r->why, "the peer script failed (exit %d)", rc);
    return;
  }
  r->ran = true;
}

/* One hetsage training run: epochs 2..N appended to wall/ratio at *n. */
static int run_hetsage(const opts *o, hs_runtime *rt, hs_dataset *ds, double *wall,
                       double *ratio, int *n, double *acc, hs_epoch_stats *last) {
  hs_session *s = NULL;
  if (hs_session_create(rt, ds, &o->cfg, &s)) {
    fprintf(stderr, "bench_epoch: %s\n", hs_last_error());
    return 1;
  }
  for (int e = 0; e < o->epochs; e++) {
    if (hs_session_train_epoch(s, last)) {
      fprintf(stderr, "bench_epoch: epoch %d: %s\n", e, hs_last_error());
      hs_session_destroy(s);
      return 1;
    }
    double busiest = 0;
    for (int k = 0; k < HS_STAGE_COUNT_; k++) busiest = fmax(busiest, last->stage_busy_s[k]);
    fprintf(stderr, "bench_epoch: hetsage epoch %d: %.3f s, loss %.4f\n", e, last->wall_s,
            last->loss);
    if (e == 0) continue;
    wall[*n] = last->wall_s;
    ratio[*n] = busiest > 0 ? last->wall_s / busiest : NAN;
    (*n)++;
  }
  int rc = hs_session_evaluate_full(s, HS_SPLIT_TEST, acc) ? 1 : 0;
  if (rc) fprintf(stderr, "bench_epoch: evaluation: %s\n", hs_last_error());
  hs_session_destroy(s);
  return rc;
}

int main(int argc, char **argv) {
  opts o;
  memset(&o, 0, sizeof o);
  if (parse(argc, argv, &o)) return usage(stderr, 2);
  char bundled[1024];
  const char *dataset = o.dataset;
  hs_runtime *rt = NULL;
  hs_dataset *ds = NULL;
  int rc = 1;
  static double wall[MAX_ROUNDS * MAX_EPOCHS], ratio[MAX_ROUNDS * MAX_EPOCHS];
  double acc[MAX_ROUNDS];
  /* The peer runs at each thread count in `threads`; its figure is the
   * faster one's. PyTorch's OpenMP threads spin: on a shared machine one
   * thread can beat two by several times, and the peer gets its best. */
  int threads[2], n_threads = 0;
  const char *thr = getenv("HS_PEER_THREADS");
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  if (thr && *thr) threads[n_threads++] = atoi(thr) > 0 ? atoi(thr) : 1;
  else {
    threads[n_threads++] = cores > 0 ? (int)cores : 1;
    if (threads[0] > 1) threads[n_threads++] = 1;
  }
  double peer_med[2][MAX_ROUNDS], peer_acc[2][MAX_ROUNDS], peer_rss_kb = 0;
  int n = 0, peer_runs = 0;
  peer_result pr;
  memset(&pr, 0, sizeof pr);
  snprintf(pr.why, sizeof pr.why, "skipped (--no-peer)");
  hs_epoch_stats st;
  hs_epoch_stats_init(&st);
  if (hs_runtime_open(&rt, NULL) ||
      (!dataset && hs_dataset_bundled(rt, "cora", bundled, sizeof bundled)) ||
      hs_dataset_open(dataset ? dataset : bundled, &ds)) {
    fprintf(stderr, "bench_epoch: %s\n", hs_last_error());
    goto done;
  }
  if (!dataset) dataset = bundled; /* the peer reads the same files */
  /* Rounds alternate hetsage and the peer, so that a change in the
   * machine's load during the run falls on both sides. */
  for (int r = 0; r < o.rounds; r++) {
    if (run_hetsage(&o, rt, ds, wall, ratio, &n, &acc[r], &st)) goto done;
    if (!o.peer) continue;
    for (int t = 0; t < n_threads && o.peer; t++) {
      run_peer(&o, dataset, threads[t], &pr);
      if (!pr.ran) {
        o.peer = false;
        break;
      }
      peer_med[t][peer_runs] = pr.median;
      peer_acc[t][peer_runs] = pr.test_acc;
      if (pr.peak_rss_kb > peer_rss_kb) peer_rss_kb = pr.peak_rss_kb;
    }
    if (o.peer) peer_runs++;
  }
  double acc_mean = 0;
  for (int r = 0; r < o.rounds; r++) acc_mean += acc[r] / o.rounds;
  double med = median(wall, n), med_ratio = median(ratio, n);
  double lo = wall[0], hi = wall[n - 1]; /* median sorted them */
  printf("{\n  \"bench\": \"epoch\",\n  \"dataset\": \"%s\",\n", dataset);
  printf("  \"config\": {\"model\": \"%s\", \"heads\": %d, \"fanouts\": \"%s\", \"batch\": %d, "
         "\"hidden\": %d, \"lr\": %g, \"weight_decay\": %g, \"dropout\": %g, \"epochs\": %d, "
         "\"seed\": %llu, \"rounds\": %d},\n",
         hs_model_kind_name(o.cfg.model), o.cfg.model == HS_MODEL_GAT ? o.cfg.heads : 1,
         o.fanouts, o.cfg.batch_size, o.cfg.hidden, (double)o.cfg.lr, (double)o.cfg.weight_decay,
         (double)o.cfg.dropout, o.epochs, (unsigned long long)o.cfg.seed, o.rounds);
  printf("  \"hetsage\": {\"epoch_s\": {\"median\": %.6f, \"min\": %.6f, \"max\": %.6f}, "
         "\"test_acc\": %.4f, \"wall_over_busiest_stage\": %.3f, \"pipeline\": \"%s\", "
         "\"depth\": %d, \"peak_rss_bytes\": %llu},\n",
         med, lo, hi, acc_mean, med_ratio, hs_pipeline_mode_name(st.pipeline), st.depth,
         (unsigned long long)st.peak_rss_bytes);
  if (peer_runs) {
    double pmed[2], pacc = 0;
    int best = 0;
    printf("  \"peer\": {\"name\": \"dgl\", \"version\": \"%s\", \"runs\": %d, \"epoch_s_median_by_threads\": {",
           pr.version, peer_runs);
    for (int t = 0; t < n_threads; t++) {
      pmed[t] = median(peer_med[t], peer_runs);
      if (pmed[t] < pmed[best]) best = t;
      printf("%s\"%d\": %.6f", t ? ", " : "", threads[t], pmed[t]);
    }
    for (int r = 0; r < peer_runs; r++) pacc += peer_acc[best][r] / peer_runs;
    char rss[64] = "null", rss_ratio[64] = "null";
    if (peer_rss_kb > 0) {
      snprintf(rss, sizeof rss, "%.0f", peer_rss_kb * 1024.0);
      snprintf(rss_ratio, sizeof rss_ratio, "%.3f",
               (double)st.peak_rss_bytes / (peer_rss_kb * 1024.0));
    }
    printf("},\n           \"threads\": %d, \"epoch_s_median\": %.6f, \"test_acc\": %.4f,\n"
           "           \"peak_rss_bytes\": %s, \"ratio_peer_epoch_to_hetsage\": %.3f, "
           "\"test_acc_hetsage_minus_peer\": %.4f,\n"
           "           \"ratio_hetsage_peak_rss_to_peer\": %s}\n}\n",
           threads[best], pmed[best], pacc, rss, pmed[best] / med, acc_mean - pacc, rss_ratio);
  } else {
    printf("  \"peer\": {\"name\": \"dgl\", \"skipped\": \"%s\"}\n}\n", pr.why);
  }
  rc = 0;
done:
  hs_dataset_close(ds);
  hs_runtime_close(rt);
  return rc;
}
