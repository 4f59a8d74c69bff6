/* Choosing the rows of a prefill (DEGREE, PRESAMPLE), and the row source
 * over a host table (see hs_cache.h, hs_rows.h). */
#include <stdlib.h>
#include <string.h>

#include "hs_cache.h"

void hs__coo_in_degree(const hs_csr *g, uint64_t *out) {
  memset(out, 0, sizeof *out * (size_t)g->n);
  for (int64_t i = 0; i < g->e; i++) out[g->indices[i]]++;
}

hs_status hs__coo_count_accesses(int64_t n_vertices, hs_coo_batch_fn next, void *ctx,
                                 uint64_t *counts) {
  for (int64_t b = 0;; b++) {
    const int32_t *ids = NULL;
    int32_t n = next(ctx, &ids);
    if (n < 0) return hs__fail_context(HS_ERR_INVALID_ARG, "presampling batch %lld: ",
                                       (long long)b);
    if (n == 0) return HS_OK;
    for (int32_t i = 0; i < n; i++) {
      if (ids[i] < 0 || ids[i] >= n_vertices)
        return hs__fail(HS_ERR_RANGE, "presampling batch %lld: id %d at %d is outside [0, %lld)",
                        (long long)b, ids[i], i, (long long)n_vertices);
      counts[ids[i]]++;
    }
  }
}

typedef struct ranked {
  uint64_t score;
  int32_t id;
} ranked;

static int cmp_ranked(const void *a, const void *b) {
  const ranked *x = a, *y = b;
  if (x->score != y->score) return x->score > y->score ? -1 : 1;
  return (x->id > y->id) - (x->id < y->id);
}

hs_status hs__coo_rank(const uint64_t *score, int64_t n, int64_t count, int32_t *out) {
  if (n < 0 || n > INT32_MAX || count < 0 || count > n)
    return hs__fail(HS_ERR_INVALID_ARG, "cache: rank %lld of %lld vertices", (long long)count,
                    (long long)n);
  if (count == 0) return HS_OK;
  ranked *r = malloc(sizeof *r * (size_t)n);
  if (!r) return hs__fail(HS_ERR_NOMEM, "cache: ranking %lld vertices", (long long)n);
  for (int64_t v = 0; v < n; v++) r[v] = (ranked){score[v], (int32_t)v};
  /* The comparison is total (ids are distinct), so the order does not
   * depend on the sort's stability. */
  qsort(r, (size_t)n, sizeof *r, cmp_ranked);
  for (int64_t j = 0; j < count; j++) out[j] = r[j].id;
  free(r);
  return HS_OK;
}

/* Sparse rows: keep, in rank order, the ranked ids whose entries still
 * fit, up to the row capacity; returns how many. */
static int64_t fitting(const hs_coo *c, int32_t *ids, int64_t n) {
  const int64_t *ptr = hs__coo_row_ptr(c);
  int64_t k = 0, ent = 0, rows = hs__coo_capacity(c), cap = hs__coo_entry_capacity(c);
  for (int64_t j = 0; j < n && k < rows; j++) {
    int64_t len = ptr[ids[j] + 1] - ptr[ids[j]];
    if (ent + len > cap) continue;
    ent += len;
    ids[k++] = ids[j];
  }
  return k;
}

hs_status hs__coo_prefill_by_score(hs_coo *c, const uint64_t *score) {
  int64_t k = hs__coo_capacity(c);
  if (k == 0) return HS_OK;
  /* Sparse rows rank every vertex: a row too long for the entries left
   * gives its place to the next that fits. */
  int64_t n_ranked = hs__coo_sparse(c) ? hs__coo_vertices(c) : k;
  int32_t *ids = malloc(sizeof *ids * (size_t)n_ranked);
  if (!ids) return hs__fail(HS_ERR_NOMEM, "cache: prefill list of %lld rows", (long long)n_ranked);
  hs_status s = hs__coo_rank(score, hs__coo_vertices(c), n_ranked, ids);
  if (s == HS_OK && hs__coo_sparse(c)) k = fitting(c, ids, n_ranked);
  if (s == HS_OK) s = hs__coo_prefill(c, ids, k);
  free(ids);
  return s;
}

static hs_status table_read(void *ctx, const int32_t *ids, int32_t n, void *out) {
  const hs_row_table *t = ctx;
  for (int32_t i = 0; i < n; i++)
    if (ids[i] < 0 || ids[i] >= t->n_rows)
      return hs__fail(HS_ERR_RANGE, "row table: id %d is outside [0, %lld)", ids[i],
                      (long long)t->n_rows);
  for (int32_t i = 0; i < n; i++)
    memcpy((char *)out + (size_t)i * t->row_bytes,
           (const char *)t->rows + (size_t)ids[i] * t->row_bytes, t->row_bytes);
  return HS_OK;
}

hs_row_source hs__row_table_source(const hs_row_table *t) {
  return (hs_row_source){table_read, (void *)t};
}
