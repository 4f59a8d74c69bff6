/* The links and the exchanges of distributed training, under mpiexec:
 *
 *   mpiexec -n N bench_dist [--params P,...] [--steps S] [--servers K]
 *
 * 1. The link, by ping-pong between rank 0 and rank 1 through the
 *    communication module: alpha (half the round trip of 8 bytes) and beta
 *    (bytes per second of 4 MiB messages), medians of repeated trips.
 * 2. For each parameter count P (default: GraphSAGE on Facebook, 1.21 M,
 *    and a papers100M-sized 3-layer model, 0.29 M), the distributed step of
 *    every mode (allreduce, ps with K servers, local every 8 steps), with
 *    and without 1-bit compression, on a model that computes nothing: the
 *    exchange's time per step and the payload bytes each rank sends, beside
 *    what the alpha-beta model of the same links predicts for it
 *    (ratio model/measured: 1.0 = the exchange runs at the link's limit):
 *      allreduce  2 (alpha + (N-1)/N * V / beta)      every rank
 *      ps         2 (alpha + W * V / (K * beta))       the servers' links
 *      local      allreduce of V every 8 steps
 *    with V the bytes of P values (as floats, or 1-bit codes: P/8 plus a
 *    scale per 128 values) and W = N - K workers.
 * Rank 0 prints one JSON object. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/hs_engine.h"

enum { TAG_PING = 7, MAX_P = 8 };

static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_d);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static hs_status pingpong(hs_comm *c, size_t bytes, int trips, double *half_rtt) {
  int r = hs__comm_rank(c);
  uint8_t *buf = calloc(1, bytes + 1);
  double *t = calloc((size_t)trips, sizeof *t);
  hs_status st = buf && t ? HS_OK : hs__fail(HS_ERR_NOMEM, "ping-pong");
  for (int i = 0; i < trips && st == HS_OK; i++) {
    double t0 = hs__now();
    if (r == 0) {
      st = hs__comm_send(c, 1, TAG_PING, buf, bytes, "ping");
      if (st == HS_OK) st = hs__comm_recv(c, 1, TAG_PING, buf, bytes, NULL, "pong");
    } else if (r == 1) {
      st = hs__comm_recv(c, 0, TAG_PING, buf, bytes, NULL, "ping");
      if (st == HS_OK) st = hs__comm_send(c, 0, TAG_PING, buf, bytes, "pong");
    }
    t[i] = (hs__now() - t0) / 2;
  }
  if (st == HS_OK) *half_rtt = median(t, trips);
  free(buf);
  free(t);
  return st;
}

/* A model that computes nothing: its gradients are fixed values. */
typedef struct null_model {
  size_t n;
  float *p;
} null_model;

static hs_status nm_begin(void *ctx, float *grads) {
  null_model *m = ctx;
  for (size_t i = 0; i < m->n; i++) grads[i] = (i % 7 == 0 ? -0.01f : 0.02f);
  return HS_OK;
}
static hs_status nm_poll(void *ctx, int t, bool *ready) {
  (void)ctx;
  (void)t;
  *ready = true;
  return HS_OK;
}
static hs_status nm_apply(void *ctx, const float *g) {
  (void)ctx;
  (void)g;
  return HS_OK;
}
static hs_status nm_step(void *ctx) {
  (void)ctx;
  return HS_OK;
}
static hs_status nm_get(void *ctx, float *p) {
  null_model *m = ctx;
  memcpy(p, m->p, m->n * sizeof *p);
  return HS_OK;
}
static hs_status nm_set(void *ctx, const float *p) {
  null_model *m = ctx;
  memcpy(m->p, p, m->n * sizeof *p);
  return HS_OK;
}

typedef struct result {
  double comm_s, bytes; /* per step: the slowest rank's time, rank 0's bytes (worst rank for ps) */
} result;

static hs_status run_mode(hs_comm *c, size_t n, hs_sync_mode mode, bool onebit, int servers,
                          int steps, result *out) {
  null_model m = {.n = n, .p = calloc(n, sizeof(float))};
  /* Two tensors in the order a 3-layer model's backward produces them;
   * the bias-sized one stays uncompressed. */
  hs_dist_tensor t[2] = {{.off = 0, .n = 256}, {.off = 256, .n = n - 256}};
  hs_dist_config cfg;
  hs_dist_config_init(&cfg);
  cfg.sync = mode;
  cfg.servers = servers;
  cfg.compress = onebit ? HS_COMPRESS_1BIT : HS_COMPRESS_NONE;
  cfg.period = 8;
  hs_optim_cfg oc = {.kind = HS_OPTIM_SGD, .lr = 0.01f};
  hs_dist_model dm = {.n_params = n, .tensors = t, .n_tensors = 2, .optim = oc, .params = m.p};
  hs_dist *d = NULL;
  hs_status st = m.p ? hs__dist_create(c, &cfg, &dm, &d) : hs__fail(HS_ERR_NOMEM, "model");
  hs_dist_trainer tr = {.ctx = &m, .grads_begin = nm_begin, .grads_poll = nm_poll,
                        .apply = nm_apply, .step = nm_step, .get_params = nm_get,
                        .set_params = nm_set};
  hs_dist_stats ds = {0};
  for (int e = 0; st == HS_OK && e < 2; e++) { /* epoch 0 warms up */
    if (hs__dist_is_server(d)) {
      int64_t done;
      bool stopped;
      st = hs__dist_serve(d, &done, &stopped);
    } else {
      bool stop = false;
      for (int s = 0; s < steps && st == HS_OK; s++)
        st = hs__dist_step(d, &tr, (int64_t)e * steps + s, 10, false, &stop);
      if (st == HS_OK) st = hs__dist_epoch_end(d, &tr, steps, false);
    }
    hs__dist_stats_take(d, &ds);
  }
  if (st == HS_OK) {
    double v[2] = {ds.comm_s / steps, (double)ds.bytes_sent / steps};
    st = hs__comm_max_f64(c, v, 2, "the results");
    out->comm_s = v[0];
    out->bytes = v[1];
  }
  hs__dist_destroy(d);
  free(m.p);
  return st;
}

/* Payload bytes of P values as floats or as 1-bit codes (a scale per
 * block of HS_ONEBIT_BLOCK values). */
static double payload(double p, bool onebit) {
  return onebit ? p / 8 + 4.0 * ceil(p / HS_ONEBIT_BLOCK) : 4 * p;
}

static double model_s(hs_sync_mode mode, bool onebit, double p, int n, int servers, double alpha,
                      double beta) {
  if (mode == HS_SYNC_PS) {
    int w = n - servers;
    return 2 * (alpha + w * payload(p / servers, onebit) / beta);
  }
  double ar = 2 * (alpha + (double)(n - 1) / n * payload(p, onebit) / beta);
  return mode == HS_SYNC_LOCAL ? ar / 8 : ar;
}

int main(int argc, char **argv) {
  /* OpenBLAS on the kernel set this CPU runs best where it fell back to an older one. */
  hs_blas_reexec(argv);
  hs_comm *c;
  if (hs__comm_open_world(&argc, &argv, &c) != HS_OK) {
    fprintf(stderr, "bench_dist: %s\n", hs_last_error());
    return 1;
  }
  int n = hs__comm_size(c), rank = hs__comm_rank(c), steps = 20, servers = 1;
  size_t params[MAX_P] = {1208068, 285356};
  int n_params = 2;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--steps") == 0 && i + 1 < argc) steps = atoi(argv[++i]);
    else if (strcmp(argv[i], "--servers") == 0 && i + 1 < argc) servers = atoi(argv[++i]);
    else if (strcmp(argv[i], "--params") == 0 && i + 1 < argc) {
      n_params = 0;
      char *save = NULL;
      for (char *t = strtok_r(argv[++i], ",", &save); t && n_params < MAX_P;
           t = strtok_r(NULL, ",", &save))
        params[n_params++] = (size_t)atol(t);
    } else {
      if (rank == 0)
        fprintf(stderr, "usage: mpiexec -n N bench_dist [--params P,...] [--steps S] "
                        "[--servers K]\n");
      hs__comm_destroy(c);
      return 2;
    }
  }
  if (n < 2) {
    if (rank == 0) fprintf(stderr, "bench_dist: run it on 2 or more ranks (mpiexec -n N)\n");
    hs__comm_destroy(c);
    return 2;
  }
  hs__comm_set_timeout(c, 300);
  double alpha = 0, big = 0;
  size_t big_bytes = (size_t)4 << 20;
  hs_status st = pingpong(c, 8, 200, &alpha);
  if (st == HS_OK) st = pingpong(c, big_bytes, 8, &big);
  double beta = big > alpha ? (double)big_bytes / (big - alpha) : 0;
  if (st == HS_OK) st = hs__comm_bcast(c, 0, &alpha, sizeof alpha, "link");
  if (st == HS_OK) st = hs__comm_bcast(c, 0, &beta, sizeof beta, "link");
  if (rank == 0 && st == HS_OK) {
    char host[128];
    hs__comm_host(c, host, sizeof host);
    printf("{\"bench\": \"dist\", \"ranks\": %d, \"servers\": %d, \"steps\": %d, "
           "\"mpi\": \"%s\", \"link\": {\"alpha_us\": %.2f, \"beta_mb_per_s\": %.2f}, "
           "\"exchanges\": [",
           n, servers, steps, hs__comm_library(), alpha * 1e6, beta / 1e6);
  }
  bool first = true;
  for (int k = 0; k < n_params && st == HS_OK; k++)
    for (int mode = 0; mode < 3 && st == HS_OK; mode++)
      for (int cmp = 0; cmp < 2 && st == HS_OK; cmp++) {
        result r = {0, 0};
        st = run_mode(c, params[k], (hs_sync_mode)mode, cmp, servers, steps, &r);
        if (st != HS_OK || rank != 0) continue;
        double pred = model_s((hs_sync_mode)mode, cmp, (double)params[k], n, servers, alpha,
                              beta);
        printf("%s\n  {\"params\": %zu, \"sync\": \"%s\", \"compress\": \"%s\", "
               "\"comm_ms_per_step\": %.3f, \"bytes_sent_per_step\": %.0f, "
               "\"model_ms_per_step\": %.3f, \"ratio_model_to_measured\": %.3f}",
               first ? "" : ",", params[k], hs_sync_mode_name((hs_sync_mode)mode),
               cmp ? "1bit" : "none", r.comm_s * 1e3, r.bytes, pred * 1e3,
               r.comm_s > 0 ? pred / r.comm_s : 0);
        first = false;
        fflush(stdout);
      }
  if (st != HS_OK) {
    fprintf(stderr, "bench_dist: rank %d: %s\n", rank, hs_last_error());
    hs__comm_abort(c, 1);
  }
  if (rank == 0) printf("\n]}\n");
  hs__comm_destroy(c);
  return 0;
}
