/* Checks of a borrowed CSR view before a sampler trusts it. */
#include "hs_csr.h"

#include "hs_base.h"

hs_status hs__csr_validate(const hs_csr *g) {
  if (g->n < 0 || g->n > INT32_MAX)
    return hs__fail(HS_ERR_FORMAT, "graph: %lld vertices do not fit 32-bit ids", (long long)g->n);
  if (!g->indptr || (g->e > 0 && !g->indices))
    return hs__fail(HS_ERR_INVALID_ARG, "graph: missing indptr or indices");
  if (g->indptr[0] != 0)
    return hs__fail(HS_ERR_FORMAT, "graph: indptr[0] = %lld, not 0", (long long)g->indptr[0]);
  for (int64_t v = 0; v < g->n; v++)
    if (g->indptr[v + 1] < g->indptr[v])
      return hs__fail(HS_ERR_FORMAT, "graph: indptr decreases at %lld", (long long)v);
  if (g->indptr[g->n] != g->e)
    return hs__fail(HS_ERR_FORMAT, "graph: indptr[n] = %lld but %lld edges",
                    (long long)g->indptr[g->n], (long long)g->e);
  for (int64_t i = 0; i < g->e; i++)
    if (g->indices[i] < 0 || g->indices[i] >= g->n)
      return hs__fail(HS_ERR_FORMAT, "graph: indices[%lld] = %d outside [0, %lld)",
                      (long long)i, g->indices[i], (long long)g->n);
  return HS_OK;
}

int64_t hs__csr_max_degree(const hs_csr *g) {
  int64_t m = 0;
  for (int64_t v = 0; v < g->n; v++)
    if (g->indptr[v + 1] - g->indptr[v] > m) m = g->indptr[v + 1] - g->indptr[v];
  return m;
}
