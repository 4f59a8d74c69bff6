/* The sampler's view of a graph: compressed sparse rows, one row per
 * vertex listing the vertices it aggregates from. The arrays are borrowed
 * (from an open dataset, hs__csr_of_graph, or built by a caller); nothing
 * here owns them. */
#ifndef HS_CSR_H
#define HS_CSR_H

#include <stdint.h>

#include "data/hs_graph.h"
#include "hetsage/status.h"

typedef struct hs_csr {
  int64_t n;              /* vertices; ids are 0..n-1 and fit in int32 */
  int64_t e;              /* edges = indptr[n] */
  const int64_t *indptr;  /* n + 1 offsets, indptr[0] = 0, non-decreasing */
  const int32_t *indices; /* e neighbour ids in [0, n) */
  const float *weights;   /* e edge weights, or NULL for an unweighted graph */
} hs_csr;

/* The sampler's view of an open dataset's graph (borrowed from it). */
static inline hs_csr hs__csr_of_graph(const hs_graph *g) {
  hs_csr c = {g->n, g->e, g->indptr, g->indices, g->weights};
  return c;
}

/* Check the invariants above (O(n + e)); HS_ERR_FORMAT with the first
 * offending position otherwise. */
hs_status hs__csr_validate(const hs_csr *g);
/* Largest row length. */
int64_t hs__csr_max_degree(const hs_csr *g);

#endif
