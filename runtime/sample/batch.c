/* Sampling configuration checks, batch capacities and storage, block
 * transposition. */
#include <stdlib.h>
#include <string.h>

#include "hs_base.h"
#include "hs_sample.h"

hs_status hs__sample_cfg_check(const hs_sample_cfg *cfg, const hs_csr *g) {
  if (cfg->n_layers < 1 || cfg->n_layers > HS_SAMPLE_MAX_LAYERS)
    return hs__fail(HS_ERR_INVALID_ARG, "sampling: %d layers (1 to %d)", cfg->n_layers,
                    HS_SAMPLE_MAX_LAYERS);
  for (int h = 0; h < cfg->n_layers; h++)
    if (cfg->fanout[h] < -1)
      return hs__fail(HS_ERR_INVALID_ARG, "sampling: fanout %d of hop %d (-1 means all)",
                      cfg->fanout[h], h);
  switch (cfg->mode) {
  case HS_SAMPLE_UNIFORM:
    break;
  case HS_SAMPLE_THRESHOLD:
    if (cfg->replace)
      return hs__fail(HS_ERR_INVALID_ARG, "sampling: threshold sampling is without replacement");
    /* fallthrough */
  case HS_SAMPLE_WEIGHTED:
    if (!g->weights)
      return hs__fail(HS_ERR_INVALID_ARG, "sampling: %s sampling needs edge weights",
                      cfg->mode == HS_SAMPLE_WEIGHTED ? "weighted" : "threshold");
    break;
  default:
    return hs__fail(HS_ERR_INVALID_ARG, "sampling: unknown mode %d", (int)cfg->mode);
  }
  if (cfg->max_vertices < 0)
    return hs__fail(HS_ERR_INVALID_ARG, "sampling: negative vertex budget");
  return HS_OK;
}

static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

hs_status hs__batch_caps(const hs_sample_cfg *cfg, const hs_csr *g, int64_t max_degree,
                         int32_t max_seeds, hs_batch_caps *out) {
  memset(out, 0, sizeof *out);
  if (max_seeds < 1 || max_seeds > g->n)
    return hs__fail(HS_ERR_INVALID_ARG, "batch of %d seeds on a graph of %lld vertices",
                    max_seeds, (long long)g->n);
  out->n_layers = cfg->n_layers;
  out->seeds = max_seeds;
  int64_t limit = g->n;
  if (cfg->max_vertices > 0) limit = min64(limit, cfg->max_vertices);
  int64_t n = max_seeds, row_max = 0;
  for (int h = 0; h < cfg->n_layers; h++) {
    int64_t k = cfg->fanout[h], e;
    /* Without replacement a hop takes each edge at most once (frontier
     * vertices are distinct); with replacement only k per row bounds it. */
    if (k < 0) e = min64(n * max_degree, g->e);
    else if (cfg->replace) e = n * k;
    else e = min64(n * min64(k, max_degree), g->e);
    int64_t row = k < 0 ? max_degree : (cfg->replace ? k : min64(k, max_degree));
    if (row > row_max) row_max = row;
    if (e >= INT32_MAX)
      return hs__fail(HS_ERR_RANGE, "sampling: hop %d may yield %lld edges, more than 32-bit "
                      "local offsets allow; use smaller batches or fanouts", h, (long long)e);
    out->dst[h] = (int32_t)n;
    out->edges[h] = (int32_t)e;
    n = min64(n + e, limit);
  }
  out->vertices = (int32_t)n;
  out->row_max = (int32_t)(row_max > 0 ? row_max : 1);
  return HS_OK;
}

hs_status hs__batch_alloc(const hs_batch_caps *caps, hs_batch *out) {
  memset(out, 0, sizeof *out);
  out->caps = *caps;
  out->n_layers = caps->n_layers;
  out->ids = malloc(sizeof(int32_t) * (size_t)caps->vertices);
  bool ok = out->ids != NULL;
  for (int h = 0; h < caps->n_layers && ok; h++) {
    hs_block *b = hs__batch_hop(out, h);
    b->row_ptr = malloc(sizeof(int32_t) * ((size_t)caps->dst[h] + 1));
    b->col = malloc(sizeof(int32_t) * ((size_t)caps->edges[h] + 1));
    ok = b->row_ptr && b->col;
  }
  if (!ok) {
    hs__batch_free(out);
    return hs__fail(HS_ERR_NOMEM, "batch of %d vertices", caps->vertices);
  }
  return HS_OK;
}

void hs__batch_free(hs_batch *b) {
  free(b->ids);
  for (int i = 0; i < HS_SAMPLE_MAX_LAYERS; i++) {
    free(b->blocks[i].row_ptr);
    free(b->blocks[i].col);
  }
  memset(b, 0, sizeof *b);
}

static int cmp_i32(const void *a, const void *b) {
  int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
  return (x > y) - (x < y);
}

hs_status hs__seeds_check(const int32_t *seeds, int32_t n, int64_t n_vertices,
                          int32_t *scratch) {
  for (int32_t i = 0; i < n; i++)
    if (seeds[i] < 0 || seeds[i] >= n_vertices)
      return hs__fail(HS_ERR_RANGE, "seed %d = %d outside [0, %lld)", i, seeds[i],
                      (long long)n_vertices);
  memcpy(scratch, seeds, sizeof(int32_t) * (size_t)n);
  qsort(scratch, (size_t)n, sizeof(int32_t), cmp_i32);
  for (int32_t i = 1; i < n; i++)
    if (scratch[i] == scratch[i - 1])
      return hs__fail(HS_ERR_INVALID_ARG, "seed %d appears twice", scratch[i]);
  return HS_OK;
}

void hs__block_transpose(const hs_block *b, int32_t *t_ptr, int32_t *t_col) {
  int32_t nnz = b->row_ptr[b->n_dst];
  memset(t_ptr, 0, sizeof(int32_t) * ((size_t)b->n_src + 1));
  for (int32_t i = 0; i < nnz; i++) t_ptr[b->col[i] + 1]++;
  for (int32_t u = 0; u < b->n_src; u++) t_ptr[u + 1] += t_ptr[u];
  /* Stable counting sort: destinations come out ascending per source. The
   * cursor of source u lives in t_ptr[u] and is walked back afterwards. */
  for (int32_t v = 0; v < b->n_dst; v++)
    for (int32_t i = b->row_ptr[v]; i < b->row_ptr[v + 1]; i++) t_col[t_ptr[b->col[i]]++] = v;
  for (int32_t u = b->n_src; u > 0; u--) t_ptr[u] = t_ptr[u - 1];
  t_ptr[0] = 0;
}
