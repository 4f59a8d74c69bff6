/* The device training step beside its GEMM floor (see hs_measure.h):
 * batches sampled uniformly from a graph of the shape's size (ids drawn at
 * random, reindexed seeds first like the sampler's output); step time is
 * wall clock from enqueue to clFinish, phases come from a second pass with
 * profiling events; the floor is the same GEMMs run by OpenBLAS on the
 * host with the device's compute units as threads. */
#include <stdlib.h>
#include <string.h>

#include "bench/hs_measure.h"
#include "hs_config.h"
#include "core/hs_engine.h"

#if HS_HAVE_CBLAS
#include <cblas.h>
#endif

const hs_train_shape hs__train_shapes[] = {
    {"cora-like", 2708, 2, 1433, 128, 7, {25, 10}, 256},
    {"products-like", 2449029, 3, 100, 256, 47, {15, 10, 5}, 1024},
};
const size_t hs__train_shape_count = HS_ARRAY_LEN(hs__train_shapes);

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

static void batch_free(batch_store *b) {
  for (int l = 0; l < HS_NN_MAX_LAYERS; l++) free(b->rp[l]), free(b->col[l]);
  free(b->feat), free(b->labels);
  memset(b, 0, sizeof *b);
}

static hs_status sample(const hs_train_shape *c, uint64_t seed, batch_store *out) {
  memset(out, 0, sizeof *out);
  idmap m = {.local = malloc(sizeof(int32_t) * (size_t)c->graph_vertices)};
  if (!m.local) return hs__fail(HS_ERR_NOMEM, "training benchmark batch");
  for (int64_t v = 0; v < c->graph_vertices; v++) m.local[v] = -1;
  uint64_t s = seed;
  while (m.n < c->batch) local_of(&m, (int64_t)(rng_next(&s) % (uint64_t)c->graph_vertices));
  for (int hop = 0; hop < c->n_layers; hop++) {
    int l = c->n_layers - 1 - hop, f = c->fanout_from_seeds[hop];
    int32_t n_dst = m.n;
    out->rp[l] = malloc(4 * ((size_t)n_dst + 1));
    out->col[l] = malloc(4 * (size_t)n_dst * (size_t)f + 4);
    if (!out->rp[l] || !out->col[l]) goto nomem;
    out->rp[l][0] = 0;
    for (int32_t i = 0; i < n_dst; i++) {
      for (int k = 0; k < f; k++)
        out->col[l][(size_t)i * (size_t)f + (size_t)k] =
            local_of(&m, (int64_t)(rng_next(&s) % (uint64_t)c->graph_vertices));
      out->rp[l][i + 1] = (i + 1) * f;
    }
    out->blocks[l] = (hs_nn_block){.n_dst = n_dst, .n_src = m.n, .row_ptr = out->rp[l],
                                   .col = out->col[l]};
  }
  size_t n_feat = (size_t)m.n * (size_t)c->in_dim;
  out->feat = malloc(4 * n_feat);
  out->labels = malloc(4 * (size_t)c->batch);
  if (!out->feat || !out->labels) goto nomem;
  uint32_t x = (uint32_t)seed;
  for (size_t e = 0; e < n_feat; e++) {
    x = x * 1664525u + 1013904223u;
    out->feat[e] = (float)(x >> 8) * (1.0f / 16777216.0f) - 0.5f;
  }
  for (int32_t i = 0; i < c->batch; i++)
    out->labels[i] = (int32_t)(rng_next(&s) % (uint64_t)c->n_classes);
  free(m.local);
  return HS_OK;
nomem:
  free(m.local);
  batch_free(out);
  return hs__fail(HS_ERR_NOMEM, "training benchmark batch");
}

#if HS_HAVE_CBLAS
/* The GEMMs of one step of layer l, by model kind: GraphSAGE multiplies
 * [self | mean] (n_dst x 2 d_in) by W (2 d_in x d_out); GCN and GAT
 * multiply first, H (n_src x d_in) by W (d_in x width), width the
 * layer's heads times features for GAT. Forward, weight gradient and
 * (above layer 0) input gradient. */
typedef struct step_gemms {
  int64_t rows, k, n;
} step_gemms;

static step_gemms layer_gemms(const hs_model_shape *sh, const hs_nn_block *blocks, int l) {
  step_gemms g;
  if (sh->kind == HS_NN_SAGE) {
    g.rows = blocks[l].n_dst;
    g.k = 2 * sh->dims[l];
    g.n = sh->dims[l + 1];
  } else {
    g.rows = blocks[l].n_src;
    g.k = sh->dims[l];
    g.n = sh->kind == HS_NN_GAT && l == sh->n_layers - 1 ? sh->heads * sh->dims[l + 1]
                                                          : sh->dims[l + 1];
  }
  return g;
}
#endif

/* Seconds OpenBLAS takes for every GEMM of one step (median of runs). */
static double gemm_floor(const hs_model_shape *sh, const hs_nn_block *blocks, int threads,
                         int runs) {
#if HS_HAVE_CBLAS
  size_t biggest = 0, wmax = 0;
  for (int l = 0; l < sh->n_layers; l++) {
    step_gemms g = layer_gemms(sh, blocks, l);
    size_t rows = (size_t)g.rows, k = (size_t)g.k, n = (size_t)g.n;
    size_t need = rows * k > rows * n ? rows * k : rows * n;
    if (need > biggest) biggest = need;
    if (k * n > wmax) wmax = k * n;
  }
  float *a = calloc(biggest, 4), *b = calloc(biggest, 4), *cbuf = calloc(biggest, 4);
  float *w = calloc(wmax, 4), *g = calloc(wmax, 4);
  double t[HS_MEASURE_MAX_RUNS];
  double m = 0.0;
  if (a && b && cbuf && w && g) {
    openblas_set_num_threads(threads);
    for (int r = -1; r < runs; r++) {
      double t0 = hs__now();
      for (int l = 0; l < sh->n_layers; l++) {
        step_gemms s = layer_gemms(sh, blocks, l);
        blasint rows = (blasint)s.rows, k2 = (blasint)s.k, d_out = (blasint)s.n;
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, rows, d_out, k2, 1.0f, a, k2, w,
                    d_out, 0.0f, cbuf, d_out);
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, k2, d_out, rows, 1.0f, a, k2, b,
                    d_out, 0.0f, g, d_out);
        if (l > 0)
          cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, rows, k2, d_out, 1.0f, b, d_out, w,
                      d_out, 0.0f, cbuf, k2);
      }
      if (r >= 0) t[r] = hs__now() - t0;
    }
    m = hs__summarize(t, runs).median;
  }
  free(a), free(b), free(cbuf), free(w), free(g);
  return m;
#else
  (void)sh, (void)blocks, (void)threads, (void)runs;
  return 0.0;
#endif
}

/* One pass of steps on a fresh queue; `profile` fills out->phase_s. */
static hs_status pass(const hs_ctx *ctx, const hs_dev *dev, const hs_model *m,
                      const hs_nn_batch *batches, size_t wg, int warmup, int runs, bool profile,
                      hs_train_runs *out) {
  cl_command_queue q = NULL;
  hs_trainer *t = NULL;
  hs_trainer_opts o = {.wg = wg, .profile = profile};
  hs_status st = hs__queue_create(ctx, dev, profile ? HS_QUEUE_PROFILING : 0, &q);
  if (st == HS_OK) st = hs__trainer_create(ctx, dev, q, m, &o, &t);
  if (st == HS_OK) out->gemm = hs__trainer_gemm_kind(t);
  hs_train_times tm;
  for (int r = -warmup; st == HS_OK && r < runs; r++) {
    const hs_nn_batch *b = &batches[(r + warmup) % 2];
    double t0 = hs__now();
    if ((st = hs__trainer_upload(t, b)) != HS_OK) break;
    double t1 = hs__now();
    if ((st = hs__trainer_step(t, 0, (uint32_t)(r + warmup))) != HS_OK ||
        (st = hs__queue_finish(q)) != HS_OK)
      break;
    double t2 = hs__now();
    if (profile && (st = hs__trainer_times(t, &tm)) != HS_OK) break;
    if (r < 0) continue;
    if (profile) {
      for (int p = 0; p < HS_PHASE_COUNT_; p++) out->phase_s[p][r] = tm.seconds[p];
    } else {
      out->step_s[r] = t2 - t1;
      out->upload_s[r] = t1 - t0;
    }
  }
  hs__trainer_destroy(t);
  hs__queue_release(&q);
  return st;
}

hs_status hs__measure_train_step(const hs_ctx *ctx, const hs_dev *dev,
                                 const hs_train_shape *shape, int kind, int heads, size_t wg,
                                 int warmup, int runs, hs_train_runs *out) {
  memset(out, 0, sizeof *out);
  if (runs < 1 || runs > HS_MEASURE_MAX_RUNS)
    return hs__fail(HS_ERR_INVALID_ARG, "training benchmark: %d runs", runs);
  out->runs = runs;
  hs_model_cfg cfg;
  hs__model_cfg_defaults(&cfg);
  cfg.kind = (hs_nn_kind)kind;
  cfg.heads = heads;
  cfg.n_layers = shape->n_layers;
  cfg.in_dim = shape->in_dim;
  cfg.hidden = shape->hidden;
  cfg.n_classes = shape->n_classes;
  cfg.seed = 1;
  hs_model m;
  memset(&m, 0, sizeof m);
  batch_store bs[2];
  memset(bs, 0, sizeof bs);
  hs_status st = hs__model_create(&cfg, &m);
  for (int i = 0; st == HS_OK && i < 2; i++) st = sample(shape, 17 + (uint64_t)i, &bs[i]);
  if (st != HS_OK) goto done;
  hs_nn_batch batches[2];
  for (int i = 0; i < 2; i++)
    batches[i] = (hs_nn_batch){.n_layers = shape->n_layers, .blocks = bs[i].blocks,
                               .feat = bs[i].feat, .labels = bs[i].labels};
  if ((st = pass(ctx, dev, &m, batches, wg, warmup, runs, false, out)) != HS_OK) goto done;
  if (dev->info.queue_profiling &&
      (st = pass(ctx, dev, &m, batches, wg, warmup, runs, true, out)) != HS_OK)
    goto done;
  int threads = (int)(dev->info.compute_units ? dev->info.compute_units : 1);
  out->gemm_floor_s = gemm_floor(&m.shape, bs[0].blocks, threads, runs);
  for (int l = 0; l < shape->n_layers; l++) out->block_src[l] = bs[0].blocks[l].n_src;
  for (int l = 0; l <= shape->n_layers; l++) out->dims[l] = m.shape.dims[l];
done:
  for (int i = 0; i < 2; i++) batch_free(&bs[i]);
  hs__model_destroy(&m);
  return st;
}
