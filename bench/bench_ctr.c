/* CTR training against its peer: hetsage's pipeline and the same model in
 * PyTorch (bench/peer_ctr.py, nn.EmbeddingBag) on the same generated data
 * and split, with the same hyper-parameters, alternating sides; examples/s
 * and test AUC side by side, beside the Bayes AUC the generator recorded.
 *
 * usage: bench_ctr run --data DIR [--model deepfm|dlrm|lr] [--epochs N]
 *                      [--repeat R] [--peer] [--python PY]
 *                      [--peer-sparse-optimizer NAME] [--seed S] [model options]
 *        bench_ctr dump --out PREFIX FILE...
 *
 * `dump` writes the array set of Criteo-layout files (hs_ctr_write_arrays:
 * PREFIX_label.npy int32, PREFIX_dense.npy float32 [N, 13], PREFIX_ids.npy
 * int64 [N, 26]): what the peer trains on, so both sides see the same
 * values. `run` dumps DIR's train and test files once (into DIR/peer/)
 * when --peer or --input arrays is given; with --input arrays hetsage
 * reads those sets too (no text to parse, the same bits). The peer's
 * python is --python, else $HS_PEER_PYTHON, else python3. Prints one JSON
 * document. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench/hs_measure.h"
#include "core/hs_engine.h"
#include "hetsage.h"

#ifndef HS_BENCH_DIR
#define HS_BENCH_DIR "bench"
#endif

static int dump(const char *prefix, const char *const *files, int n) {
  int64_t total = 0;
  if (hs_ctr_write_arrays(files, n, prefix, NULL, NULL, NULL, &total) != HS_OK) {
    fprintf(stderr, "bench_ctr: %s\n", hs_last_error());
    return 1;
  }
  fprintf(stderr, "bench_ctr: %lld examples into %s_*.npy\n", (long long)total, prefix);
  return 0;
}

static double load_avg(void) {
  double l = NAN;
  FILE *f = fopen("/proc/loadavg", "r");
  if (f) {
    if (fscanf(f, "%lf", &l) != 1) l = NAN;
    fclose(f);
  }
  return l;
}

/* The host's CPU time so far (/proc/stat's first line, in ticks): all of
 * it and the part stolen by the hypervisor for other guests. */
static void cpu_ticks(unsigned long long *total, unsigned long long *steal) {
  unsigned long long v[8] = {0};
  *total = *steal = 0;
  FILE *f = fopen("/proc/stat", "r");
  if (!f) return;
  if (fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3],
             &v[4], &v[5], &v[6], &v[7]) == 8) {
    for (int i = 0; i < 8; i++) *total += v[i];
    *steal = v[7];
  }
  fclose(f);
}

/* The share of the CPU stolen between two cpu_ticks readings (NAN
 * without /proc/stat). */
static double steal_share(const unsigned long long a[2], const unsigned long long b[2]) {
  return b[0] > a[0] ? (double)(b[1] - a[1]) / (double)(b[0] - a[0]) : NAN;
}

/* A number, or null where it is not finite (strict JSON). */
static void json_num(double x, int digits) {
  if (isfinite(x)) printf("%.*f", digits, x);
  else printf("null");
}

static double recorded_bayes(const char *dir) {
  char p[4200], buf[16384];
  snprintf(p, sizeof p, "%s/meta.json", dir);
  FILE *f = fopen(p, "r");
  if (!f) return NAN;
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = '\0';
  const char *k = strstr(buf, "\"bayes_auc\":");
  return k ? strtod(k + 12, NULL) : NAN;
}

typedef struct side {
  double ex_s[16]; /* per epoch */
  double auc, logloss, train_s;
  int epochs;
  hs_pipeline_mode pipeline; /* the driver the session ran */
} side;

static int run_hetsage(hs_runtime *rt, const hs_ctr_config *c, const char *train, const char *test,
                       int epochs, side *out) {
  hs_ctr_session *s;
  hs_status st = hs_ctr_session_create(rt, c, &s);
  if (st != HS_OK) {
    fprintf(stderr, "bench_ctr: %s\n", hs_last_error());
    return 1;
  }
  const char *tr[1] = {train}, *te[1] = {test};
  memset(out, 0, sizeof *out);
  for (int e = 0; e < epochs && st == HS_OK; e++) {
    hs_ctr_epoch_stats es;
    hs_ctr_epoch_stats_init(&es);
    if ((st = hs_ctr_session_train_epoch(s, tr, 1, &es)) != HS_OK) break;
    out->ex_s[e] = es.examples_per_s;
    out->pipeline = es.pipeline;
    out->train_s += es.wall_s;
    out->epochs = e + 1;
    fprintf(stderr, "bench_ctr: hetsage epoch %d: %.0f examples/s (read %.1f s, lookup %.1f s, "
            "train %.1f s busy, of which %.1f s applying row gradients; %.1f s wall; %.1f%% of "
            "the rows looked up copied after the previous batch's update)\n", e + 1,
            es.examples_per_s, es.stage_busy_s[0], es.stage_busy_s[1], es.stage_busy_s[2],
            es.update_s, es.wall_s,
            es.unique_rows ? 100.0 * (double)es.deferred_rows / (double)es.unique_rows : 0.0);
  }
  hs_ctr_eval ev;
  hs_ctr_eval_init(&ev);
  if (st == HS_OK) st = hs_ctr_session_evaluate(s, te, 1, &ev);
  if (st == HS_OK) {
    out->auc = ev.auc;
    out->logloss = ev.logloss;
  } else {
    fprintf(stderr, "bench_ctr: %s\n", hs_last_error());
  }
  hs_ctr_session_destroy(s);
  return st == HS_OK ? 0 : 1;
}

static int widths(char *b, size_t n, const int32_t *w, int k) {
  int at = 0;
  b[0] = '\0';
  for (int i = 0; i < k && at >= 0 && (size_t)at < n; i++)
    at += snprintf(b + at, n - (size_t)at, "%s%d", i ? "," : "", w[i]);
  return at;
}

/* Run the peer; its last stdout line is a JSON object, parsed for the
 * figures. */
static int run_peer(const char *py, const char *dir, const hs_ctr_config *c, const char *sparse,
                    int epochs, int threads, side *out, char *version, size_t vlen) {
  char hid[64], bot[64], cmd[8192];
  widths(hid, sizeof hid, c->hidden, c->n_hidden);
  widths(bot, sizeof bot, c->bottom, c->n_bottom);
  snprintf(cmd, sizeof cmd,
           "%s %s/peer_ctr.py --train %s/peer/train --test %s/peer/test --model %s --dim %d "
           "--hidden '%s' --bottom '%s' --batch %d --lr %g --sparse-optimizer %s --sparse-lr %g "
           "--sparse-init-acc %g --init-range %g --epochs %d --threads %d --seed %llu%s",
           py, HS_BENCH_DIR, dir, dir, hs_ctr_model_name(c->model), c->dim, hid, bot,
           c->batch_size, (double)c->lr, sparse, (double)c->sparse_lr,
           (double)c->sparse_initial_accumulator, (double)c->init_range, epochs, threads,
           (unsigned long long)c->seed, c->standardize_dense ? " --standardize-dense" : "");
  fprintf(stderr, "bench_ctr: %s\n", cmd);
  FILE *p = popen(cmd, "r");
  if (!p) return 1;
  char line[65536], last[65536] = "";
  while (fgets(line, sizeof line, p)) snprintf(last, sizeof last, "%s", line);
  int rc = pclose(p);
  if (rc != 0 || !last[0]) {
    fprintf(stderr, "bench_ctr: the peer failed (status %d)\n", rc);
    return 1;
  }
  memset(out, 0, sizeof *out);
  const char *k = last;
  while ((k = strstr(k, "\"examples_per_s\":")) && out->epochs < 16) {
    out->ex_s[out->epochs++] = strtod(k + 17, NULL);
    k += 17;
  }
  for (k = last; (k = strstr(k, "\"seconds\":")); k += 10) out->train_s += strtod(k + 10, NULL);
  const char *a = strstr(last, "\"test_auc\":"), *l = strstr(last, "\"test_logloss\":");
  const char *v = strstr(last, "\"version\": \"");
  out->auc = a ? strtod(a + 11, NULL) : NAN;
  out->logloss = l ? strtod(l + 15, NULL) : NAN;
  if (v) {
    v += 12;
    size_t i = 0;
    while (v[i] && v[i] != '"' && i + 1 < vlen) version[i] = v[i], i++;
    version[i] = '\0';
  }
  return 0;
}

static double median(const double *v, int n) {
  double t[16];
  memcpy(t, v, (size_t)n * sizeof *t);
  for (int i = 1; i < n; i++)
    for (int j = i; j > 0 && t[j - 1] > t[j]; j--) {
      double x = t[j];
      t[j] = t[j - 1];
      t[j - 1] = x;
    }
  return n ? (n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2])) : NAN;
}

static bool parse_w(const char *v, int32_t *w, int *n) {
  int k = 0;
  char *end;
  for (const char *q = v; *q && k < HS_CTR_MAX_HIDDEN; q = *end ? end + 1 : end) {
    w[k++] = (int32_t)strtol(q, &end, 10);
    if (end == q) return false;
  }
  *n = k;
  return true;
}

static const char usage[] =
    "usage: bench_ctr run --data DIR [options]\n"
    "       bench_ctr dump --out PREFIX FILE...\n"
    "run: trains on DIR/train.txt, tests on DIR/test.txt (a `hetsage generate --kind ctr`\n"
    "folder), and with --peer the same model in PyTorch (bench/peer_ctr.py) on the same\n"
    "split, alternating; prints one JSON document (examples/s, test AUC, logloss, the\n"
    "recorded Bayes AUC, the 1-min load before and after, the share of the CPU the\n"
    "hypervisor gave other guests during each side, steal_share, the BLAS kernel set).\n"
    "  --model deepfm|dlrm|lr  --epochs N (1..16)  --repeat R (1..8)  --seed S\n"
    "  --dim D  --hidden W,W  --bottom W,W  --batch-size B  --lr X  --sparse-lr X\n"
    "  --sparse-optimizer NAME  --sparse-init-acc A  --init-range R  --admit-after K\n"
    "  --embed-budget BYTES  --standardize-dense (both sides)\n"
    "  --threads N  --gemm-threads N  --pipeline async|threads|off  --depth N (batches in flight)\n"
    "  --host-nice N (0..19: how much nicer the read and lookup threads run; default 10)\n"
    "  --peer  --python PY ($HS_PEER_PYTHON, else python3)  --peer-threads N\n"
    "  --peer-sparse-optimizer NAME (default: the same as hetsage's)\n"
    "  --input text|arrays (hetsage reads DIR's text files, the default, or the array\n"
    "                       sets the peer reads, DIR/peer/{train,test}_*.npy)\n"
    "dump: writes PREFIX_label.npy, PREFIX_dense.npy, PREFIX_ids.npy from Criteo-layout\n"
    "files with hetsage's parser (what the peer reads).\n";

int main(int argc, char **argv) {
  /* OpenBLAS on the kernel set this CPU runs best where it fell back to an older one. */
  hs_blas_reexec(argv);
  for (int i = 1; i < argc; i++)
    if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
      fputs(usage, stdout);
      return 0;
    }
  if (argc >= 2 && strcmp(argv[1], "dump") == 0) {
    if (argc < 5 || strcmp(argv[2], "--out") != 0) {
      fprintf(stderr, "usage: bench_ctr dump --out PREFIX FILE...\n");
      return 2;
    }
    return dump(argv[3], (const char *const *)argv + 4, argc - 4);
  }
  if (argc < 2 || strcmp(argv[1], "run") != 0) {
    fputs(usage, stderr);
    return 2;
  }
  hs_ctr_config c;
  hs_ctr_config_init(&c);
  const char *dir = NULL, *py = getenv("HS_PEER_PYTHON");
  if (!py || !*py) py = "python3";
  int epochs = 1, repeat = 1, peer_threads = 0;
  bool peer = false, arrays = false;
  /* The peer runs the sparse optimizer of the same name (its "adagrad" is
   * row-wise, as ours; its "elementwise-adagrad" torch's Adagrad, the rule
   * of ours of that name; both with our eps, 1e-8) unless told otherwise.
   * The seed is passed on, but the two sides draw their initial values from
   * different generators: DLRM under element-wise Adagrad moves by ~0.03
   * test AUC from one seed to another at 10^6 rows, so compare its AUC over
   * several seeds (bench/ctr_step_check.py checks the steps themselves). */
  const char *peer_sparse = NULL;
  for (int i = 2; i < argc; i++) {
    const char *o = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(o, "--peer")) {
      peer = true;
      continue;
    }
    if (!strcmp(o, "--standardize-dense")) {
      c.standardize_dense = 1;
      continue;
    }
    if (!v) {
      fprintf(stderr, "bench_ctr: %s needs a value\n", o);
      return 2;
    }
    i++;
    if (!strcmp(o, "--data")) dir = v;
    else if (!strcmp(o, "--python")) py = v;
    else if (!strcmp(o, "--input")) {
      if (strcmp(v, "text") && strcmp(v, "arrays")) {
        fprintf(stderr, "bench_ctr: --input %s: text or arrays\n", v);
        return 2;
      }
      arrays = !strcmp(v, "arrays");
    }
    else if (!strcmp(o, "--model")) {
      if (hs_ctr_model_parse(v, &c.model) != HS_OK) return 2;
    } else if (!strcmp(o, "--epochs")) epochs = atoi(v);
    else if (!strcmp(o, "--repeat")) repeat = atoi(v);
    else if (!strcmp(o, "--dim")) c.dim = atoi(v);
    else if (!strcmp(o, "--batch-size")) c.batch_size = atoi(v);
    else if (!strcmp(o, "--lr")) c.lr = strtof(v, NULL);
    else if (!strcmp(o, "--sparse-lr")) c.sparse_lr = strtof(v, NULL);
    else if (!strcmp(o, "--init-range")) c.init_range = strtof(v, NULL);
    else if (!strcmp(o, "--sparse-init-acc")) c.sparse_initial_accumulator = strtof(v, NULL);
    else if (!strcmp(o, "--seed")) c.seed = strtoull(v, NULL, 10);
    else if (!strcmp(o, "--sparse-optimizer")) {
      if (hs_sparse_optimizer_parse(v, &c.sparse_optimizer) != HS_OK) return 2;
    } else if (!strcmp(o, "--hidden")) {
      if (!parse_w(v, c.hidden, &c.n_hidden)) return 2;
    } else if (!strcmp(o, "--bottom")) {
      if (!parse_w(v, c.bottom, &c.n_bottom)) return 2;
    } else if (!strcmp(o, "--threads")) c.threads = atoi(v);
    else if (!strcmp(o, "--gemm-threads")) c.gemm_threads = atoi(v);
    else if (!strcmp(o, "--depth")) c.depth = atoi(v);
    else if (!strcmp(o, "--host-nice")) c.host_nice = atoi(v);
    else if (!strcmp(o, "--peer-threads")) peer_threads = atoi(v);
    else if (!strcmp(o, "--peer-sparse-optimizer")) peer_sparse = v;
    else if (!strcmp(o, "--admit-after")) c.admit_after = (uint32_t)atoi(v);
    else if (!strcmp(o, "--embed-budget")) c.embed_budget = strtoull(v, NULL, 10);
    else if (!strcmp(o, "--pipeline")) {
      if (!strcmp(v, "threads")) c.pipeline = HS_PIPELINE_THREADS;
      else if (!strcmp(v, "off")) c.pipeline = HS_PIPELINE_OFF;
      else if (!strcmp(v, "async")) c.pipeline = HS_PIPELINE_ASYNC;
      else {
        fprintf(stderr, "bench_ctr: --pipeline %s: async, threads or off\n", v);
        return 2;
      }
    } else {
      fprintf(stderr, "bench_ctr: unknown option %s\n", o);
      return 2;
    }
  }
  if (!dir || epochs < 1 || epochs > 16 || repeat < 1 || repeat > 8) {
    fprintf(stderr, "bench_ctr: --data DIR needed; --epochs 1..16, --repeat 1..8\n");
    return 2;
  }
  if (!peer_sparse) peer_sparse = hs_sparse_optimizer_name(c.sparse_optimizer);
  char train[4200], test[4200];
  snprintf(train, sizeof train, "%s/train.txt", dir);
  snprintf(test, sizeof test, "%s/test.txt", dir);
  hs_runtime *rt;
  if (hs_runtime_open(&rt, NULL) != HS_OK) {
    fprintf(stderr, "bench_ctr: %s\n", hs_last_error());
    return 1;
  }
  int host_threads = hs_runtime_host_cores(rt);
  if (peer_threads <= 0) peer_threads = host_threads > 0 ? host_threads : 1;
  if (peer || arrays) {
    char pd[4300], prefix[4400];
    snprintf(pd, sizeof pd, "%s/peer", dir);
    mkdir(pd, 0755);
    snprintf(prefix, sizeof prefix, "%s/train_label.npy", pd);
    if (access(prefix, R_OK) != 0) {
      snprintf(prefix, sizeof prefix, "%s/train", pd);
      const char *f[1] = {train};
      if (dump(prefix, f, 1)) return 1;
      snprintf(prefix, sizeof prefix, "%s/test", pd);
      f[0] = test;
      if (dump(prefix, f, 1)) return 1;
    }
  }
  if (arrays) {
    snprintf(train, sizeof train, "%s/peer/train_ids.npy", dir);
    snprintf(test, sizeof test, "%s/peer/test_ids.npy", dir);
  }
  side hs[8], pe[8];
  double load[8][2], steal[8][2];
  char version[64] = "";
  int rc = 0;
  for (int r = 0; r < repeat && rc == 0; r++) {
    unsigned long long t[3][2];
    load[r][0] = load_avg();
    cpu_ticks(&t[0][0], &t[0][1]);
    rc = run_hetsage(rt, &c, train, test, epochs, &hs[r]);
    cpu_ticks(&t[1][0], &t[1][1]);
    load[r][1] = load_avg();
    steal[r][0] = steal_share(t[0], t[1]);
    steal[r][1] = NAN;
    if (rc == 0 && peer) {
      rc = run_peer(py, dir, &c, peer_sparse, epochs, peer_threads, &pe[r], version,
                    sizeof version);
      cpu_ticks(&t[2][0], &t[2][1]);
      steal[r][1] = steal_share(t[1], t[2]);
    }
  }
  hs_runtime_close(rt);
  if (rc) return rc;
  double bayes = recorded_bayes(dir), hsx[8], pex[8];
  const char *blas = hs_blas_kernels(), *timeout = getenv("OPENBLAS_THREAD_TIMEOUT");
  char hid[64], bot[64];
  widths(hid, sizeof hid, c.hidden, c.n_hidden);
  widths(bot, sizeof bot, c.bottom, c.n_bottom);
  printf("{\n  \"bench\": \"ctr\",\n  \"data\": \"%s\",\n  \"model\": \"%s\",\n  \"dim\": %d,\n"
         "  \"hidden\": \"%s\",\n  \"bottom\": \"%s\",\n  \"batch\": %d,\n  \"lr\": %g,\n"
         "  \"sparse_optimizer\": \"%s\",\n  \"sparse_lr\": %g,\n"
         "  \"sparse_initial_accumulator\": %g,\n  \"init_range\": %g,\n"
         "  \"standardize_dense\": %s,\n  \"epochs\": %d,\n"
         "  \"seed\": %llu,\n  \"input\": \"%s\",\n  \"blas_core\": %s%s%s,\n  \"openblas_thread_timeout\": %s%s%s,\n"
         "  \"pipeline\": \"%s\",\n  \"host_nice\": %d,\n"
         "  \"bayes_auc\": %.6f,\n"
         "  \"runs\": [\n",
         dir, hs_ctr_model_name(c.model), c.dim, hid, bot, c.batch_size, (double)c.lr,
         hs_sparse_optimizer_name(c.sparse_optimizer), (double)c.sparse_lr,
         (double)c.sparse_initial_accumulator, (double)c.init_range,
         c.standardize_dense ? "true" : "false", epochs,
         (unsigned long long)c.seed, arrays ? "arrays" : "text",
         blas ? "\"" : "", blas ? blas : "null", blas ? "\"" : "",
         timeout ? "\"" : "", timeout ? timeout : "null", timeout ? "\"" : "",
         hs_pipeline_mode_name(hs[0].pipeline), hs[0].pipeline == HS_PIPELINE_THREADS ? c.host_nice : 0,
         bayes);
  for (int r = 0; r < repeat; r++) {
    double ex = 0;
    for (int e = 0; e < hs[r].epochs; e++) ex += hs[r].ex_s[e] > 0 ? 1.0 / hs[r].ex_s[e] : 0;
    hsx[r] = ex > 0 ? hs[r].epochs / ex : 0; /* examples/s over the run */
    printf("    {\"hetsage\": {\"examples_per_s\": %.1f, \"test_auc\": %.6f, \"test_logloss\": %.6f, "
           "\"gap_to_bayes\": %.6f, \"load_before\": %.2f, \"load_after\": %.2f, "
           "\"steal_share\": ",
           hsx[r], hs[r].auc, hs[r].logloss, bayes - hs[r].auc, load[r][0], load[r][1]);
    json_num(steal[r][0], 4);
    printf("}");
    if (peer) {
      ex = 0;
      for (int e = 0; e < pe[r].epochs; e++) ex += pe[r].ex_s[e] > 0 ? 1.0 / pe[r].ex_s[e] : 0;
      pex[r] = ex > 0 ? pe[r].epochs / ex : 0;
      printf(", \"peer\": {\"name\": \"pytorch %s\", \"threads\": %d, \"sparse_optimizer\": "
             "\"%s\", \"examples_per_s\": %.1f, \"test_auc\": %.6f, \"test_logloss\": %.6f, "
             "\"steal_share\": ",
             version, peer_threads, peer_sparse, pex[r], pe[r].auc, pe[r].logloss);
      json_num(steal[r][1], 4);
      printf("}, \"examples_per_s_ratio\": %.3f", pex[r] > 0 ? hsx[r] / pex[r] : 0);
    }
    printf("}%s\n", r + 1 < repeat ? "," : "");
  }
  printf("  ],\n  \"hetsage_examples_per_s_median\": %.1f", median(hsx, repeat));
  if (peer)
    printf(",\n  \"peer_examples_per_s_median\": %.1f,\n  \"ratio_of_medians\": %.3f",
           median(pex, repeat), median(hsx, repeat) / median(pex, repeat));
  printf("\n}\n");
  return 0;
}
