/* Device training-step time per batch on Cora-like and products-like
 * shapes, split into GEMM / aggregation / element-wise / optimizer, beside
 * the step's GEMM floor: the same GEMMs run by OpenBLAS on the host with the
 * device's compute units as threads, right after each timed step (DESIGN.md
 * §9; ratio 1.0 = the step costs no more than its GEMMs at OpenBLAS speed).
 *
 * usage: bench_train [--config cora|products|all] [--reps N] [--wg N]
 * Batches are sampled uniformly from a graph of the named size (ids drawn
 * at random, reindexed seeds first, like the sampler's output). Step time is
 * wall clock from enqueue to clFinish, after warm-up steps; phases come from
 * a second pass with profiling events. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hs_config.h"
#include "hs_launch.h"
#include "nn/trainer.h"

#if HS_HAVE_CBLAS
#include <cblas.h>
#endif

typedef struct config {
  const char *name;
  int64_t graph_vertices;
  int n_layers;
  int in_dim, hidden, n_classes;
  int fanout_out_first[HS_NN_MAX_LAYERS]; /* hop 1 (the seeds' block) first */
  int32_t batch;
} config;

static const config configs[] = {
    {"cora-like", 2708, 2, 1433, 128, 7, {25, 10}, 256},
    {"products-like", 2449029, 3, 100, 256, 47, {15, 10, 5}, 1024},
};

/* ---- a uniform sampler ------------------------------------------------------ */

typedef struct batch_store {
  hs_nn_block blocks[HS_NN_MAX_LAYERS];
  int32_t *rp[HS_NN_MAX_LAYERS], *col[HS_NN_MAX_LAYERS];
  float *feat;
  int32_t *labels;
} batch_store;

static uint64_t rng_next(uint64_t *s) {
  uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/* Original id -> local id, numbering new vertices in first-appearance
 * order (seeds first, then hop by hop). */
typedef struct idmap {
  int32_t *local; /* per original vertex, -1 if not sampled */
  int32_t n;
} idmap;

static int32_t local_of(idmap *m, int64_t v) {
  if (m->local[v] < 0) m->local[v] = m->n++;
  return m->local[v];
}

static void sample(const config *c, uint64_t seed, batch_store *out) {
  memset(out, 0, sizeof *out);
  idmap m = {.local = malloc(sizeof(int32_t) * (size_t)c->graph_vertices)};
  for (int64_t v = 0; v < c->graph_vertices; v++) m.local[v] = -1;
  uint64_t s = seed;
  while (m.n < c->batch) local_of(&m, (int64_t)(rng_next(&s) % (uint64_t)c->graph_vertices));
  for (int hop = 0; hop < c->n_layers; hop++) {
    int l = c->n_layers - 1 - hop, f = c->fanout_out_first[hop];
    int32_t n_dst = m.n;
    out->rp[l] = malloc(4 * ((size_t)n_dst + 1));
    out->col[l] = malloc(4 * (size_t)n_dst * (size_t)f);
    out->rp[l][0] = 0;
    for (int32_t i = 0; i < n_dst; i++) {
      for (int k = 0; k < f; k++)
        out->col[l][(size_t)i * f + k] =
            local_of(&m, (int64_t)(rng_next(&s) % (uint64_t)c->graph_vertices));
      out->rp[l][i + 1] = (i + 1) * f;
    }
    out->blocks[l] = (hs_nn_block){.n_dst = n_dst, .n_src = m.n, .row_ptr = out->rp[l], .col = out->col[l]};
  }
  size_t n_feat = (size_t)m.n * (size_t)c->in_dim;
  out->feat = malloc(4 * n_feat);
  uint32_t x = (uint32_t)seed;
  for (size_t e = 0; e < n_feat; e++) {
    x = x * 1664525u + 1013904223u;
    out->feat[e] = (float)(x >> 8) * (1.0f / 16777216.0f) - 0.5f;
  }
  out->labels = malloc(4 * (size_t)c->batch);
  for (int32_t i = 0; i < c->batch; i++) out->labels[i] = (int32_t)(rng_next(&s) % (uint64_t)c->n_classes);
  free(m.local);
}

static void batch_free(batch_store *b) {
  for (int l = 0; l < HS_NN_MAX_LAYERS; l++) free(b->rp[l]), free(b->col[l]);
  free(b->feat), free(b->labels);
}

/* ---- statistics ------------------------------------------------------------------- */

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median(double *t, int n) {
  qsort(t, (size_t)n, sizeof *t, cmp_double);
  return n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]);
}

/* ---- the GEMM floor ------------------------------------------------------------- */

/* Host buffers for the GEMM floor: large enough for either batch. */
typedef struct floor_bufs {
  float *a, *b, *c, *w, *g;
} floor_bufs;

static void floor_open(floor_bufs *f, const hs_model_shape *sh, const batch_store *bs, int n_bs) {
  size_t biggest = 1;
  for (int i = 0; i < n_bs; i++)
    for (int l = 0; l < sh->n_layers; l++) {
      size_t rows = (size_t)bs[i].blocks[l].n_dst, d_in = (size_t)sh->dims[l];
      size_t d_out = (size_t)sh->dims[l + 1];
      size_t need = rows * 2 * d_in > rows * d_out ? rows * 2 * d_in : rows * d_out;
      if (need > biggest) biggest = need;
    }
  f->a = calloc(biggest, 4), f->b = calloc(biggest, 4), f->c = calloc(biggest, 4);
  f->w = calloc(sh->n_params, 4), f->g = calloc(sh->n_params, 4);
}

static void floor_close(floor_bufs *f) { free(f->a), free(f->b), free(f->c), free(f->w), free(f->g); }

/* Seconds OpenBLAS takes for every GEMM of one step on `blocks` (the
 * forward, weight-gradient and input-gradient products), 0 without CBLAS. */
static double floor_once(floor_bufs *f, const hs_model_shape *sh, const hs_nn_block *blocks,
                         int threads) {
#if HS_HAVE_CBLAS
  openblas_set_num_threads(threads);
  double t0 = hs__now();
  for (int l = 0; l < sh->n_layers; l++) {
    blasint rows = blocks[l].n_dst, k2 = 2 * sh->dims[l], d_out = sh->dims[l + 1];
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, rows, d_out, k2, 1.0f, f->a, k2,
                f->w + sh->w_off[l], d_out, 0.0f, f->c, d_out);
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, k2, d_out, rows, 1.0f, f->a, k2, f->b,
                d_out, 0.0f, f->g + sh->w_off[l], d_out);
    if (l > 0)
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, rows, k2, d_out, 1.0f, f->b, d_out,
                  f->w + sh->w_off[l], d_out, 0.0f, f->c, k2);
  }
  return hs__now() - t0;
#else
  (void)f, (void)sh, (void)blocks, (void)threads;
  return 0.0;
#endif
}

/* ---- one configuration ------------------------------------------------------------- */

static int run_config(const config *c, const hs_ctx *ctx, const hs_dev *dev, int reps, size_t wg,
                      bool first) {
  hs_model_cfg cfg;
  hs__model_cfg_defaults(&cfg);
  cfg.n_layers = c->n_layers;
  cfg.in_dim = c->in_dim;
  cfg.hidden = c->hidden;
  cfg.n_classes = c->n_classes;
  cfg.seed = 1;
  hs_model m;
  if (hs__model_create(&cfg, &m) != HS_OK) return 1;
  batch_store bs[2];
  for (int i = 0; i < 2; i++) sample(c, 17 + (uint64_t)i, &bs[i]);
  hs_nn_batch batches[2];
  for (int i = 0; i < 2; i++)
    batches[i] = (hs_nn_batch){.n_layers = c->n_layers, .blocks = bs[i].blocks, .feat = bs[i].feat,
                            .labels = bs[i].labels};
  int threads = (int)(dev->info.compute_units ? dev->info.compute_units : 1);
  double *step_s = malloc(sizeof(double) * (size_t)reps), *up_s = malloc(sizeof(double) * (size_t)reps);
  double *floor_s = malloc(sizeof(double) * (size_t)reps), *ratio = malloc(sizeof(double) * (size_t)reps);
  floor_bufs fb;
  floor_open(&fb, &m.shape, bs, 2);
  double *ph[HS_PHASE_COUNT_];
  for (int p = 0; p < HS_PHASE_COUNT_; p++) ph[p] = malloc(sizeof(double) * (size_t)reps);
  int rc = 1;
  const char *gemm_name = "?";
  for (int pass = 0; pass < 2; pass++) {
    bool profile = pass == 1;
    cl_command_queue q;
    hs_trainer *t;
    if (hs__queue_create(ctx, dev, profile ? HS_QUEUE_PROFILING : 0, &q) != HS_OK) goto done;
    hs_trainer_opts o = {.wg = wg, .profile = profile};
    if (hs__trainer_create(ctx, dev, q, &m, &o, &t) != HS_OK) {
      clReleaseCommandQueue(q);
      goto done;
    }
    gemm_name = hs__gemm_kind_name(hs__trainer_gemm_kind(t));
    hs_train_times tm;
    for (int r = -2; r < reps; r++) { /* two warm-up steps */
      hs_nn_batch *b = &batches[(r + 2) % 2];
      double t0 = hs__now();
      if (hs__trainer_upload(t, b) != HS_OK) goto fail_pass;
      double t1 = hs__now();
      if (hs__trainer_step(t, 0, (uint32_t)(r + 2)) != HS_OK || hs__queue_finish(q) != HS_OK)
        goto fail_pass;
      double t2 = hs__now();
      if (profile && hs__trainer_times(t, &tm) != HS_OK) goto fail_pass;
      if (r < 0) continue;
      if (!profile) {
        step_s[r] = t2 - t1;
        up_s[r] = t1 - t0;
        /* The limit right after the step, on the same shapes: drift of a
         * shared machine hits both alike. */
        floor_s[r] = floor_once(&fb, &m.shape, b->blocks, threads);
        ratio[r] = floor_s[r] / step_s[r];
      } else {
        for (int p = 0; p < HS_PHASE_COUNT_; p++) ph[p][r] = tm.seconds[p];
      }
    }
    hs__trainer_destroy(t);
    clReleaseCommandQueue(q);
    continue;
  fail_pass:
    fprintf(stderr, "bench_train: %s: %s\n", c->name, hs_last_error());
    hs__trainer_destroy(t);
    clReleaseCommandQueue(q);
    goto done;
  }
  double lo = 1e30, hi = 0;
  for (int r = 0; r < reps; r++) lo = step_s[r] < lo ? step_s[r] : lo, hi = step_s[r] > hi ? step_s[r] : hi;
  double step_med = median(step_s, reps);
  printf("%s\n  {\"config\": \"%s\", \"gemm\": \"%s\", \"layers\": %d, \"dims\": [", first ? "" : ",",
         c->name, gemm_name, c->n_layers);
  for (int l = 0; l <= c->n_layers; l++) printf("%s%d", l ? ", " : "", m.shape.dims[l]);
  printf("], \"fanouts_from_seeds\": [");
  for (int l = 0; l < c->n_layers; l++) printf("%s%d", l ? ", " : "", c->fanout_out_first[l]);
  printf("], \"batch\": %d, \"block_src\": [", c->batch);
  for (int l = 0; l < c->n_layers; l++) printf("%s%d", l ? ", " : "", bs[0].blocks[l].n_src);
  printf("], \"step_ms\": %.2f, \"step_ms_min\": %.2f, \"step_ms_max\": %.2f, \"upload_ms\": %.2f",
         step_med * 1e3, lo * 1e3, hi * 1e3, median(up_s, reps) * 1e3);
  static const char *const names[HS_PHASE_COUNT_] = {"gemm", "aggregation", "elementwise", "optimizer"};
  printf(", \"phases_ms\": {");
  for (int p = 0; p < HS_PHASE_COUNT_; p++) printf("%s\"%s\": %.2f", p ? ", " : "", names[p], median(ph[p], reps) * 1e3);
  printf("}");
  double floor_med = median(floor_s, reps);
  if (floor_med > 0) {
    double r_med = median(ratio, reps);
    printf(", \"gemm_floor_ms\": %.2f, \"ratio_gemm_floor_to_step\": %.3f, "
           "\"ratio_min\": %.3f, \"ratio_max\": %.3f}",
           floor_med * 1e3, r_med, ratio[0], ratio[reps - 1]);
  } else
    printf(", \"gemm_floor_ms\": null, \"ratio_gemm_floor_to_step\": null}");
  fflush(stdout);
  rc = 0;
done:
  for (int i = 0; i < 2; i++) batch_free(&bs[i]);
  for (int p = 0; p < HS_PHASE_COUNT_; p++) free(ph[p]);
  free(step_s), free(up_s), free(floor_s), free(ratio);
  floor_close(&fb);
  hs__model_destroy(&m);
  return rc;
}

int main(int argc, char **argv) {
  const char *which = "all";
  int reps = 7;
  size_t wg = 0;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--config") == 0 && i + 1 < argc) which = argv[++i];
    else if (strcmp(argv[i], "--reps") == 0 && i + 1 < argc) reps = atoi(argv[++i]);
    else if (strcmp(argv[i], "--wg") == 0 && i + 1 < argc) wg = (size_t)atoi(argv[++i]);
    else {
      fprintf(stderr, "usage: bench_train [--config cora|products|all] [--reps N] [--wg N]\n");
      return 2;
    }
  }
  if (reps < 1) reps = 1;
  hs_inventory inv;
  if (hs__inventory_discover(&inv) != HS_OK || inv.n_devs == 0) {
    fprintf(stderr, "bench_train: %s\n", hs_last_error());
    return 1;
  }
  int pick = 0; /* the first CPU device, else the first device */
  for (int i = inv.n_devs - 1; i >= 0; i--)
    if (inv.devs[i].info.type == HS_DEVICE_CPU) pick = i;
  hs_dev *dev = &inv.devs[pick];
  hs_ctx ctx;
  if (hs__ctx_create(dev, 1, &ctx) != HS_OK) {
    fprintf(stderr, "bench_train: %s\n", hs_last_error());
    return 1;
  }
  printf("{\"bench\": \"train\", \"device\": \"%s\", \"compute_units\": %u, \"reps\": %d, \"wg\": %zu, "
         "\"limit\": \"the step's GEMMs by OpenBLAS on the host, same threads\", \"configs\": [",
         dev->info.name, dev->info.compute_units, reps, wg);
  int rc = 0;
  bool first = true;
  for (size_t i = 0; i < HS_ARRAY_LEN(configs); i++) {
    if (strcmp(which, "all") != 0 && strncmp(configs[i].name, which, strlen(which)) != 0) continue;
    rc |= run_config(&configs[i], &ctx, dev, reps, wg, first);
    first = false;
  }
  printf("\n]}\n");
  hs__ctx_release(&ctx);
  hs__inventory_release(&inv);
  return rc;
}
