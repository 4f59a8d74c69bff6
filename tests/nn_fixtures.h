/* Small hand-made and generated batches shared by the nn tests. Header-only
 * (static functions) so each test program takes what it uses. */
#ifndef HS_TEST_NN_FIXTURES_H
#define HS_TEST_NN_FIXTURES_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "nn/hs_nn_block.h"

/* splitmix64: test data only. */
static inline uint64_t fx_next(uint64_t *s) {
  uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}
/* Uniform in [-1, 1). */
static inline float fx_uniform(uint64_t *s) {
  return (float)((double)(fx_next(s) >> 11) * (2.0 / 9007199254740992.0) - 1.0);
}
static inline void fx_fill(float *x, size_t n, uint64_t *s, float scale) {
  for (size_t i = 0; i < n; i++) x[i] = scale * fx_uniform(s);
}

/* The hand-made 2-layer batch: 3 seeds, 6 vertices one hop out, 9 two hops
 * out. It has a zero-degree dst in both blocks, repeated neighbours, and
 * src that no dst names. */
static const int32_t fx_rp1[] = {0, 3, 3, 6};
static const int32_t fx_col1[] = {3, 4, 1, 5, 5, 0};
static const int32_t fx_rp0[] = {0, 1, 3, 4, 7, 7, 10};
static const int32_t fx_col0[] = {6, 7, 2, 8, 0, 6, 7, 1, 1, 8};

static inline void fx_hand_blocks(hs_nn_block blocks[2]) {
  blocks[0] = (hs_nn_block){.n_dst = 6, .n_src = 9, .row_ptr = fx_rp0, .col = fx_col0};
  blocks[1] = (hs_nn_block){.n_dst = 3, .n_src = 6, .row_ptr = fx_rp1, .col = fx_col1};
}

/* Generated blocks: `n_seeds` seeds, `fanout[l]` random neighbours (with
 * repeats) per dst of layer l, where each neighbour is an existing vertex
 * with probability 1/3, else a new one; every `zero_every`-th dst has none. */
typedef struct fx_batch {
  int n_layers;
  hs_nn_block blocks[HS_NN_MAX_LAYERS];
  int32_t *rp[HS_NN_MAX_LAYERS], *col[HS_NN_MAX_LAYERS];
  float *feat;
  int32_t *labels;
} fx_batch;

static inline void fx_batch_make(fx_batch *fb, int n_layers, int32_t n_seeds, const int *fanout,
                                 int in_dim, int n_classes, uint64_t seed) {
  memset(fb, 0, sizeof *fb);
  fb->n_layers = n_layers;
  uint64_t s = seed;
  int32_t n = n_seeds;
  for (int l = n_layers - 1; l >= 0; l--) {
    int32_t n_dst = n, f = fanout[l];
    fb->rp[l] = malloc(sizeof(int32_t) * ((size_t)n_dst + 1));
    fb->col[l] = malloc(sizeof(int32_t) * ((size_t)n_dst * (size_t)f + 1));
    int32_t e = 0;
    fb->rp[l][0] = 0;
    for (int32_t i = 0; i < n_dst; i++) {
      if (i % 7 != 3)
        for (int32_t k = 0; k < f; k++) {
          if (fx_next(&s) % 3 == 0)
            fb->col[l][e++] = (int32_t)(fx_next(&s) % (uint64_t)n);
          else
            fb->col[l][e++] = n++;
        }
      fb->rp[l][i + 1] = e;
    }
    fb->blocks[l] = (hs_nn_block){.n_dst = n_dst, .n_src = n, .row_ptr = fb->rp[l], .col = fb->col[l]};
  }
  fb->feat = malloc(sizeof(float) * (size_t)n * (size_t)in_dim);
  fx_fill(fb->feat, (size_t)n * (size_t)in_dim, &s, 1.0f);
  fb->labels = malloc(sizeof(int32_t) * (size_t)n_seeds);
  for (int32_t i = 0; i < n_seeds; i++) fb->labels[i] = (int32_t)(fx_next(&s) % (uint64_t)n_classes);
}

static inline hs_nn_batch fx_batch_view(const fx_batch *fb) {
  return (hs_nn_batch){.n_layers = fb->n_layers, .blocks = fb->blocks, .feat = fb->feat,
                    .labels = fb->labels};
}

static inline void fx_batch_free(fx_batch *fb) {
  for (int l = 0; l < HS_NN_MAX_LAYERS; l++) {
    free(fb->rp[l]);
    free(fb->col[l]);
  }
  free(fb->feat);
  free(fb->labels);
  memset(fb, 0, sizeof *fb);
}

/* A planted-partition graph with class-dependent features: vertex v is in
 * class v % n_classes, links mostly within its class, and its features are
 * a noisy one-hot of the class. CSR arrays owned by the caller (free). */
typedef struct fx_graph {
  int64_t n;
  int64_t *indptr;
  int32_t *indices;
  float *feat;
  int32_t *labels;
  int dim;
} fx_graph;

static inline void fx_graph_make(fx_graph *g, int64_t n, int n_classes, int dim, int degree,
                                 uint64_t seed) {
  uint64_t s = seed;
  g->n = n;
  g->dim = dim;
  g->indptr = malloc(sizeof(int64_t) * (size_t)(n + 1));
  g->indices = malloc(sizeof(int32_t) * (size_t)(n * degree));
  g->feat = malloc(sizeof(float) * (size_t)(n * dim));
  g->labels = malloc(sizeof(int32_t) * (size_t)n);
  g->indptr[0] = 0;
  for (int64_t v = 0; v < n; v++) {
    int c = (int)(v % n_classes);
    g->labels[v] = c;
    for (int k = 0; k < degree; k++) {
      int64_t u = (int64_t)(fx_next(&s) % (uint64_t)(n / n_classes)) * n_classes;
      if (fx_next(&s) % 10 < 8) u += c; /* same class */
      else u += (int64_t)(fx_next(&s) % (uint64_t)n_classes);
      if (u >= n) u = c;
      g->indices[v * degree + k] = (int32_t)u;
    }
    g->indptr[v + 1] = (v + 1) * degree;
    for (int k = 0; k < dim; k++)
      g->feat[v * dim + k] = (k % n_classes == c ? 0.6f : 0.0f) + 1.2f * fx_uniform(&s);
  }
}

static inline void fx_graph_free(fx_graph *g) {
  free(g->indptr);
  free(g->indices);
  free(g->feat);
  free(g->labels);
}

#endif
