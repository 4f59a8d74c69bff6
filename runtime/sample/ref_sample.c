/* Plain-C reference of the sampler and the reindexer: single-threaded,
 * written to be obviously right rather than fast. Every device kernel is
 * checked against it bit for bit (see hs_sample.h for the rules). */
#include <float.h>
#include <stdlib.h>
#include <string.h>

#include "hs_base.h"
#include "hs_sample.h"
#include "rng/philox.h"

#include "cl_kernels/hs_sample_rng.h"

#if !defined(FLT_EVAL_METHOD) || FLT_EVAL_METHOD != 0
#error "the weighted reference needs float arithmetic evaluated in float"
#endif

static uint32_t weight_bits(const hs_csr *g, int64_t e) {
  uint32_t bits;
  memcpy(&bits, &g->weights[e], sizeof bits);
  return bits;
}

typedef struct keyed_edge {
  uint64_t key;
  int64_t pos; /* relative to the row start */
} keyed_edge;

static int cmp_keyed(const void *a, const void *b) {
  const keyed_edge *x = a, *y = b;
  if (x->key != y->key) return x->key < y->key ? -1 : 1;
  return (x->pos > y->pos) - (x->pos < y->pos);
}

/* Whether edge `e` takes part: eligible weight, or above the threshold. */
static bool edge_counts(const hs_csr *g, const hs_sample_cfg *cfg, int hop, int64_t e) {
  if (cfg->mode == HS_SAMPLE_UNIFORM) return true;
  uint32_t w = weight_bits(g, e);
  if (cfg->mode == HS_SAMPLE_WEIGHTED) return hs_weight_ok(w);
  uint32_t t;
  memcpy(&t, &cfg->threshold[hop], sizeof t);
  return hs_weight_above(w, t);
}

/* Every counting edge of the row, in row order. */
static int64_t whole_row(const hs_csr *g, const hs_sample_cfg *cfg, int hop, int64_t start,
                         int64_t end, int64_t *out) {
  int64_t n = 0;
  for (int64_t e = start; e < end; e++)
    if (edge_counts(g, cfg, hop, e)) out[n++] = e;
  return n;
}

/* Floyd's algorithm: for t = d-k .. d-1 draw r in [0, t]; take r, or t if
 * r was taken already. Gives a uniform k-subset. */
static int64_t floyd(hs_rng_stream *s, int64_t start, int64_t d, int64_t k, int64_t *out) {
  for (int64_t j = 0; j < k; j++) {
    int64_t t = d - k + j;
    int64_t r = hs_philox_below(hs_rng_word(s, (uint32_t)j), (uint32_t)(t + 1));
    bool taken = false;
    for (int64_t i = 0; i < j; i++)
      if (out[i] == start + r) taken = true;
    out[j] = start + (taken ? t : r);
  }
  return k;
}

/* The k smallest keys among counting edges, in key order. */
static int64_t smallest_keys(const hs_csr *g, const hs_sample_cfg *cfg, int hop,
                             hs_rng_stream *s, int64_t start, int64_t d, int64_t k,
                             int64_t *out) {
  keyed_edge *all = malloc(sizeof *all * (size_t)d);
  if (!all) return -1;
  int64_t m = 0;
  for (int64_t i = 0; i < d; i++) {
    if (!edge_counts(g, cfg, hop, start + i)) continue;
    uint32_t word = hs_rng_word(s, (uint32_t)i);
    all[m].key = cfg->mode == HS_SAMPLE_WEIGHTED ? hs_race_key(word, weight_bits(g, start + i))
                                                 : hs_uniform_key(word);
    all[m].pos = i;
    m++;
  }
  qsort(all, (size_t)m, sizeof *all, cmp_keyed);
  int64_t n = m < k ? m : k;
  for (int64_t j = 0; j < n; j++) out[j] = start + all[j].pos;
  free(all);
  return n;
}

/* Inverse CDF: the first edge whose running weight sum exceeds u * total. */
static int64_t inverse_cdf(const hs_csr *g, hs_rng_stream *s, int64_t start, int64_t d,
                           int64_t k, int64_t *out) {
  float total = 0.0f;
  int64_t last = -1;
  for (int64_t i = 0; i < d; i++) {
    uint32_t w = weight_bits(g, start + i);
    if (hs_weight_ok(w)) {
      total += g->weights[start + i];
      last = i;
    }
  }
  if (last < 0) return 0;
  for (int64_t j = 0; j < k; j++) {
    float x = hs_philox_unit(hs_rng_word(s, (uint32_t)j)) * total;
    float acc = 0.0f;
    int64_t pick = last; /* x may round up to the total */
    for (int64_t i = 0; i < d; i++) {
      if (!hs_weight_ok(weight_bits(g, start + i))) continue;
      acc += g->weights[start + i];
      if (acc > x) {
        pick = i;
        break;
      }
    }
    out[j] = start + pick;
  }
  return k;
}

int64_t hs__ref_sample_row(const hs_csr *g, const hs_sample_cfg *cfg, int hop, uint32_t epoch,
                           uint32_t batch, int32_t v, int64_t *out) {
  int64_t start = g->indptr[v], d = g->indptr[v + 1] - start;
  int64_t k = cfg->fanout[hop];
  if (k < 0) return whole_row(g, cfg, hop, start, start + d, out);
  uint32_t purpose;
  if (cfg->mode == HS_SAMPLE_UNIFORM) purpose = cfg->replace ? HS_RNG_UNIFORM_REPLACE : HS_RNG_UNIFORM;
  else if (cfg->mode == HS_SAMPLE_WEIGHTED) purpose = cfg->replace ? HS_RNG_WEIGHTED_REPLACE : HS_RNG_WEIGHTED;
  else purpose = HS_RNG_THRESHOLD;
  hs_rng_stream s = hs_rng_open(cfg->seed, epoch, batch, (uint32_t)hop, purpose, (uint32_t)v);

  if (cfg->replace) {
    if (cfg->mode == HS_SAMPLE_WEIGHTED) return inverse_cdf(g, &s, start, d, k, out);
    if (d == 0) return 0;
    for (int64_t j = 0; j < k; j++)
      out[j] = start + hs_philox_below(hs_rng_word(&s, (uint32_t)j), (uint32_t)d);
    return k;
  }
  if (d <= k) return whole_row(g, cfg, hop, start, start + d, out);
  if (cfg->mode == HS_SAMPLE_UNIFORM) return floyd(&s, start, d, k, out);
  return smallest_keys(g, cfg, hop, &s, start, d, k, out);
}

hs_status hs__ref_sample_batch(const hs_csr *g, const hs_sample_cfg *cfg, const int32_t *seeds,
                               int32_t n_seeds, uint32_t epoch, uint32_t batch, hs_batch *out) {
  hs_status st = hs__sample_cfg_check(cfg, g);
  if (st != HS_OK) return st;
  const hs_batch_caps *caps = &out->caps;
  if (cfg->n_layers != caps->n_layers || n_seeds < 1 || n_seeds > caps->seeds)
    return hs__fail(HS_ERR_INVALID_ARG, "batch of %d seeds, %d layers does not fit its storage",
                    n_seeds, cfg->n_layers);
  if (cfg->max_vertices > 0 && n_seeds > cfg->max_vertices)
    return hs__fail(HS_ERR_INVALID_ARG, "%d seeds exceed the vertex budget %lld", n_seeds,
                    (long long)cfg->max_vertices);
  /* local[v]: local id of original vertex v, -1 not met, -2 met after the
   * budget was full (and so never admitted). */
  int32_t *local = malloc(sizeof(int32_t) * (size_t)g->n);
  int64_t *picked = malloc(sizeof(int64_t) * (size_t)caps->row_max);
  if (!local || !picked) {
    st = hs__fail(HS_ERR_NOMEM, "reference sampler");
    goto fail;
  }
  for (int64_t v = 0; v < g->n; v++) local[v] = -1;
  st = hs__seeds_check(seeds, n_seeds, g->n, out->ids);
  if (st != HS_OK) goto fail;
  int32_t n = 0;
  for (; n < n_seeds; n++) {
    out->ids[n] = seeds[n];
    local[seeds[n]] = n;
  }
  int64_t budget = cfg->max_vertices > 0 ? cfg->max_vertices : INT64_MAX;
  for (int h = 0; h < cfg->n_layers; h++) {
    hs_block *b = hs__batch_hop(out, h);
    b->n_dst = n;
    b->row_ptr[0] = 0;
    int32_t nnz = 0;
    for (int32_t i = 0; i < b->n_dst; i++) {
      int64_t got = hs__ref_sample_row(g, cfg, h, epoch, batch, out->ids[i], picked);
      if (got < 0) {
        st = hs__fail(HS_ERR_NOMEM, "reference sampler");
        goto fail;
      }
      for (int64_t j = 0; j < got; j++) {
        int32_t u = g->indices[picked[j]];
        if (local[u] == -1) {
          if (n < budget) {
            local[u] = n;
            out->ids[n++] = u;
          } else {
            local[u] = -2;
          }
        }
        if (local[u] < 0) continue;
        if (nnz >= caps->edges[h]) {
          st = hs__fail(HS_ERR_RANGE, "hop %d: more edges than its capacity %d", h,
                        caps->edges[h]);
          goto fail;
        }
        b->col[nnz++] = local[u];
      }
      b->row_ptr[i + 1] = nnz;
    }
    b->n_src = n;
  }
  out->n_seeds = n_seeds;
  out->n_vertices = n;
fail:
  free(local);
  free(picked);
  return st;
}
