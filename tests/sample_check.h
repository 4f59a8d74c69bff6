/* Invariants every sampled batch must hold, whatever produced it. Each
 * check returns NULL or a description of the first violation (in a static
 * buffer), so tests can assert on it and print it. */
#ifndef HS_TEST_SAMPLE_CHECK_H
#define HS_TEST_SAMPLE_CHECK_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sample/hs_sample.h"

static char sc_msg[512];

#define SC_FAIL(...)                                    \
  do {                                                  \
    snprintf(sc_msg, sizeof sc_msg, __VA_ARGS__);       \
    free(seen);                                         \
    return sc_msg;                                      \
  } while (0)

/* Does row v of g contain u? Rows may be unsorted: linear scan. */
static inline bool sc_has_edge(const hs_csr *g, int32_t v, int32_t u) {
  for (int64_t i = g->indptr[v]; i < g->indptr[v + 1]; i++)
    if (g->indices[i] == u) return true;
  return false;
}

/* Structure: seeds first, ids distinct and in range (a bijection onto
 * 0..n-1), blocks chained (dst = previous src prefix), rows within fanout,
 * every edge in the graph, new vertices numbered in first-appearance order,
 * no repeated neighbour in a row without replacement (rows of g are
 * duplicate-free), the budget respected. */
static inline const char *sc_check_batch(const hs_csr *g, const hs_sample_cfg *cfg,
                                         const int32_t *seeds, int32_t n_seeds,
                                         const hs_batch *b) {
  char *seen = calloc((size_t)g->n, 1);
  if (!seen) SC_FAIL("out of memory");
  if (b->n_seeds != n_seeds) SC_FAIL("n_seeds %d != %d", b->n_seeds, n_seeds);
  if (b->n_vertices != b->blocks[0].n_src)
    SC_FAIL("n_vertices %d != blocks[0].n_src %d", b->n_vertices, b->blocks[0].n_src);
  if (cfg->max_vertices > 0 && b->n_vertices > cfg->max_vertices)
    SC_FAIL("%d vertices over the budget %lld", b->n_vertices, (long long)cfg->max_vertices);
  for (int32_t i = 0; i < n_seeds; i++)
    if (b->ids[i] != seeds[i]) SC_FAIL("local %d is %d, not seed %d", i, b->ids[i], seeds[i]);
  for (int32_t i = 0; i < b->n_vertices; i++) {
    if (b->ids[i] < 0 || b->ids[i] >= g->n) SC_FAIL("ids[%d] = %d out of range", i, b->ids[i]);
    if (seen[b->ids[i]]) SC_FAIL("vertex %d has two local ids", b->ids[i]);
    seen[b->ids[i]] = 1;
  }
  int32_t n_dst = n_seeds;
  for (int h = 0; h < cfg->n_layers; h++) {
    const hs_block *blk = &b->blocks[b->n_layers - 1 - h];
    if (blk->n_dst != n_dst) SC_FAIL("hop %d: n_dst %d, expected %d", h, blk->n_dst, n_dst);
    if (blk->n_src < blk->n_dst) SC_FAIL("hop %d: n_src %d < n_dst", h, blk->n_src);
    if (blk->row_ptr[0] != 0) SC_FAIL("hop %d: row_ptr[0] = %d", h, blk->row_ptr[0]);
    int32_t next_new = blk->n_dst;
    for (int32_t v = 0; v < blk->n_dst; v++) {
      int32_t b0 = blk->row_ptr[v], b1 = blk->row_ptr[v + 1];
      if (b1 < b0) SC_FAIL("hop %d: row_ptr decreases at %d", h, v);
      int64_t deg = g->indptr[b->ids[v] + 1] - g->indptr[b->ids[v]];
      int32_t k = cfg->fanout[h];
      if (k >= 0 && b1 - b0 > k) SC_FAIL("hop %d: row %d has %d > fanout %d", h, v, b1 - b0, k);
      if (!cfg->replace && b1 - b0 > deg)
        SC_FAIL("hop %d: row %d has %d > degree %lld", h, v, b1 - b0, (long long)deg);
      for (int32_t i = b0; i < b1; i++) {
        int32_t c = blk->col[i];
        if (c < 0 || c >= blk->n_src) SC_FAIL("hop %d: col %d out of [0,%d)", h, c, blk->n_src);
        if (c >= next_new) {
          if (c != next_new)
            SC_FAIL("hop %d: new vertex %d appears before %d", h, c, next_new);
          next_new++;
        }
        if (!sc_has_edge(g, b->ids[v], b->ids[c]))
          SC_FAIL("hop %d: edge %d -> %d not in the graph", h, b->ids[v], b->ids[c]);
        if (!cfg->replace)
          for (int32_t j = b0; j < i; j++)
            if (blk->col[j] == c) SC_FAIL("hop %d: row %d repeats %d", h, v, c);
      }
    }
    if (next_new != blk->n_src)
      SC_FAIL("hop %d: %d sources but %d met", h, blk->n_src, next_new);
    n_dst = blk->n_src;
  }
  free(seen);
  return NULL;
}

/* Bit-for-bit equality of two batches. */
static inline const char *sc_same_batch(const hs_batch *a, const hs_batch *b) {
  char *seen = NULL;
  if (a->n_layers != b->n_layers || a->n_seeds != b->n_seeds || a->n_vertices != b->n_vertices)
    SC_FAIL("shape differs: %d/%d/%d vs %d/%d/%d", a->n_layers, a->n_seeds, a->n_vertices,
            b->n_layers, b->n_seeds, b->n_vertices);
  for (int32_t i = 0; i < a->n_vertices; i++)
    if (a->ids[i] != b->ids[i]) SC_FAIL("ids[%d]: %d vs %d", i, a->ids[i], b->ids[i]);
  for (int l = 0; l < a->n_layers; l++) {
    const hs_block *x = &a->blocks[l], *y = &b->blocks[l];
    if (x->n_dst != y->n_dst || x->n_src != y->n_src)
      SC_FAIL("block %d: %d x %d vs %d x %d", l, x->n_dst, x->n_src, y->n_dst, y->n_src);
    for (int32_t v = 0; v <= x->n_dst; v++)
      if (x->row_ptr[v] != y->row_ptr[v])
        SC_FAIL("block %d: row_ptr[%d] %d vs %d", l, v, x->row_ptr[v], y->row_ptr[v]);
    for (int32_t i = 0; i < x->row_ptr[x->n_dst]; i++)
      if (x->col[i] != y->col[i]) SC_FAIL("block %d: col[%d] %d vs %d", l, i, x->col[i], y->col[i]);
  }
  return NULL;
}

#undef SC_FAIL

#endif
