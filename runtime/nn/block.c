/* Block checks, the deterministic transpose, and full-neighbour blocks. */
#include <stdlib.h>
#include <string.h>

#include "nn/hs_nn_block.h"

hs_status hs__nn_block_validate(const hs_nn_block *b, int layer) {
  if (!b->row_ptr || (b->n_dst > 0 && !b->col && b->row_ptr[b->n_dst] > 0))
    return hs__fail(HS_ERR_INVALID_ARG, "block %d: missing row_ptr or col", layer);
  if (b->n_dst < 0 || b->n_src < b->n_dst)
    return hs__fail(HS_ERR_FORMAT, "block %d: n_dst %d, n_src %d (need 0 <= n_dst <= n_src)",
                    layer, b->n_dst, b->n_src);
  if (b->row_ptr[0] != 0)
    return hs__fail(HS_ERR_FORMAT, "block %d: row_ptr[0] is %d, not 0", layer, b->row_ptr[0]);
  for (int32_t i = 0; i < b->n_dst; i++)
    if (b->row_ptr[i + 1] < b->row_ptr[i])
      return hs__fail(HS_ERR_FORMAT, "block %d: row_ptr decreases at dst %d (%d -> %d)", layer,
                      i, b->row_ptr[i], b->row_ptr[i + 1]);
  int32_t n_edges = b->row_ptr[b->n_dst];
  for (int32_t e = 0; e < n_edges; e++)
    if (b->col[e] < 0 || b->col[e] >= b->n_src)
      return hs__fail(HS_ERR_FORMAT, "block %d: edge %d names src %d, outside 0..%d", layer, e,
                      b->col[e], b->n_src - 1);
  return HS_OK;
}

hs_status hs__nn_sparse_validate(const hs_nn_sparse *x, int32_t n_rows, int32_t d) {
  if (!x->ptr || x->n_rows != n_rows)
    return hs__fail(HS_ERR_FORMAT, "sparse features: %d rows, the batch has %d", x->n_rows,
                    n_rows);
  if (x->ptr[0] != 0)
    return hs__fail(HS_ERR_FORMAT, "sparse features: ptr[0] is %d, not 0", x->ptr[0]);
  if (!x->col && (x->val || x->t_ptr))
    return hs__fail(HS_ERR_FORMAT, "sparse features: values or column lists without column ids");
  for (int32_t i = 0; i < n_rows; i++) {
    if (x->ptr[i + 1] < x->ptr[i])
      return hs__fail(HS_ERR_FORMAT, "sparse features: ptr decreases at row %d", i);
    if (!x->col) continue; /* entries assembled on the device */
    for (int32_t e = x->ptr[i]; e < x->ptr[i + 1]; e++) {
      if (x->col[e] < 0 || x->col[e] >= d || (e > x->ptr[i] && x->col[e] <= x->col[e - 1]))
        return hs__fail(HS_ERR_FORMAT, "sparse features: row %d entry %d: column %d (need "
                        "0..%d, increasing)", i, e, x->col[e], d - 1);
      if (x->val && !(x->val[e] - x->val[e] == 0.0f))
        return hs__fail(HS_ERR_FORMAT, "sparse features: row %d entry %d: value not finite", i,
                        e);
    }
  }
  if (!x->t_ptr) return HS_OK;
  /* Column lists: offsets monotone over the same entries, rows in range
   * and increasing within a column, the split inside its column. */
  int32_t nnz = x->ptr[n_rows];
  if (x->t_ptr[0] != 0 || x->t_ptr[d] != nnz || !x->t_mid || !x->t_row || (x->val && !x->t_val))
    return hs__fail(HS_ERR_FORMAT, "sparse features: column lists do not cover the %d entries",
                    nnz);
  for (int32_t c = 0; c < d; c++) {
    if (x->t_ptr[c + 1] < x->t_ptr[c] || x->t_mid[c] < x->t_ptr[c] ||
        x->t_mid[c] > x->t_ptr[c + 1])
      return hs__fail(HS_ERR_FORMAT, "sparse features: column %d's list is malformed", c);
    for (int32_t p = x->t_ptr[c]; p < x->t_ptr[c + 1]; p++)
      if (x->t_row[p] < 0 || x->t_row[p] >= n_rows ||
          (p > x->t_ptr[c] && x->t_row[p] <= x->t_row[p - 1]))
        return hs__fail(HS_ERR_FORMAT, "sparse features: column %d entry %d: row %d", c, p,
                        x->t_row[p]);
  }
  return HS_OK;
}

void hs__nn_sparse_columns(hs_nn_sparse *x, int32_t n_dst, int32_t d, int32_t *t_ptr,
                           int32_t *t_mid, int32_t *t_row, float *t_val, int32_t *cursor) {
  memset(t_ptr, 0, sizeof *t_ptr * ((size_t)d + 1));
  int32_t nnz = hs__nn_sparse_nnz(x), rows = x->n_rows, split = n_dst < rows ? n_dst : rows;
  for (int32_t e = 0; e < nnz; e++) t_ptr[x->col[e] + 1]++;
  for (int32_t c = 0; c < d; c++) t_ptr[c + 1] += t_ptr[c];
  /* Rows visited in increasing order: every column's list comes out
   * sorted, its rows below n_dst first; the cursors after those rows mark
   * each column's split. */
  memcpy(cursor, t_ptr, sizeof *cursor * (size_t)d);
  for (int32_t r = 0; r < rows; r++) {
    if (r == split) memcpy(t_mid, cursor, sizeof *t_mid * (size_t)d);
    for (int32_t e = x->ptr[r]; e < x->ptr[r + 1]; e++) {
      int32_t at = cursor[x->col[e]]++;
      t_row[at] = r;
      if (x->val) t_val[at] = x->val[e];
    }
  }
  if (split == rows) memcpy(t_mid, cursor, sizeof *t_mid * (size_t)d);
  x->t_ptr = t_ptr;
  x->t_mid = t_mid;
  x->t_row = t_row;
  x->t_val = x->val ? t_val : NULL;
}

hs_status hs__nn_batch_validate(const hs_nn_batch *b, int n_classes) {
  if (b->n_layers < 1 || b->n_layers > HS_NN_MAX_LAYERS || !b->blocks ||
      (!b->feat && !b->sfeat))
    return hs__fail(HS_ERR_INVALID_ARG, "batch: %d layers (1..%d) or missing blocks/features",
                    b->n_layers, HS_NN_MAX_LAYERS);
  for (int l = 0; l < b->n_layers; l++) {
    hs_status st = hs__nn_block_validate(&b->blocks[l], l);
    if (st != HS_OK) return st;
    if (l > 0 && b->blocks[l].n_src != b->blocks[l - 1].n_dst)
      return hs__fail(HS_ERR_FORMAT, "batch: block %d has %d src but block %d has %d dst", l,
                      b->blocks[l].n_src, l - 1, b->blocks[l - 1].n_dst);
  }
  if (b->labels) {
    const hs_nn_block *out = &b->blocks[b->n_layers - 1];
    for (int32_t i = 0; i < out->n_dst; i++)
      if (b->labels[i] < 0 || b->labels[i] >= n_classes)
        return hs__fail(HS_ERR_FORMAT, "batch: seed %d has label %d, outside 0..%d", i,
                        b->labels[i], n_classes - 1);
  }
  return HS_OK;
}

void hs__nn_block_transpose(const hs_nn_block *b, int32_t *t_ptr, int32_t *t_dst) {
  memset(t_ptr, 0, sizeof *t_ptr * ((size_t)b->n_src + 1));
  int32_t n_edges = hs__nn_block_edges(b);
  for (int32_t e = 0; e < n_edges; e++) t_ptr[b->col[e] + 1]++;
  for (int32_t s = 0; s < b->n_src; s++) t_ptr[s + 1] += t_ptr[s];
  /* Visiting dst in increasing order makes every list sorted: the stable
   * counting sort that the device version reproduces by sorting lists. */
  int32_t *cursor = t_ptr; /* advanced in place, then shifted back */
  for (int32_t i = 0; i < b->n_dst; i++)
    for (int32_t e = b->row_ptr[i]; e < b->row_ptr[i + 1]; e++) t_dst[cursor[b->col[e]]++] = i;
  for (int32_t s = b->n_src; s > 0; s--) t_ptr[s] = t_ptr[s - 1];
  t_ptr[0] = 0;
}

void hs__nn_block_transpose_eid(const hs_nn_block *b, int32_t *t_ptr, int32_t *t_eid,
                                int32_t *edst) {
  memset(t_ptr, 0, sizeof *t_ptr * ((size_t)b->n_src + 1));
  int32_t n_edges = hs__nn_block_edges(b);
  for (int32_t e = 0; e < n_edges; e++) t_ptr[b->col[e] + 1]++;
  for (int32_t s = 0; s < b->n_src; s++) t_ptr[s + 1] += t_ptr[s];
  /* Edges visited in order: every list comes out increasing. */
  for (int32_t e = 0; e < n_edges; e++) t_eid[t_ptr[b->col[e]]++] = e;
  for (int32_t s = b->n_src; s > 0; s--) t_ptr[s] = t_ptr[s - 1];
  t_ptr[0] = 0;
  if (edst)
    for (int32_t i = 0; i < b->n_dst; i++)
      for (int32_t e = b->row_ptr[i]; e < b->row_ptr[i + 1]; e++) edst[e] = i;
}

hs_status hs__csr_view_validate(const hs_csr_view *g) {
  if (g->n_vertices < 0 || !g->indptr || (g->n_vertices > 0 && !g->indices && g->indptr[g->n_vertices] > 0))
    return hs__fail(HS_ERR_INVALID_ARG, "graph: missing indptr or indices");
  if (g->n_vertices > INT32_MAX)
    return hs__fail(HS_ERR_RANGE, "graph: %lld vertices exceed 32-bit ids",
                    (long long)g->n_vertices);
  if (g->indptr[0] != 0)
    return hs__fail(HS_ERR_FORMAT, "graph: indptr[0] is %lld, not 0", (long long)g->indptr[0]);
  for (int64_t v = 0; v < g->n_vertices; v++)
    if (g->indptr[v + 1] < g->indptr[v])
      return hs__fail(HS_ERR_FORMAT, "graph: indptr decreases at vertex %lld", (long long)v);
  for (int64_t e = 0; e < g->indptr[g->n_vertices]; e++)
    if (g->indices[e] < 0 || g->indices[e] >= g->n_vertices)
      return hs__fail(HS_ERR_FORMAT, "graph: edge %lld names vertex %d, outside 0..%lld",
                      (long long)e, g->indices[e], (long long)g->n_vertices - 1);
  return HS_OK;
}

void hs__block_set_free(hs_nn_block_set *s) {
  for (int l = 0; l < HS_NN_MAX_LAYERS; l++) {
    free(s->row_ptr[l]);
    free(s->col[l]);
  }
  free(s->ids);
  free(s->seed_local);
  memset(s, 0, sizeof *s);
}

/* Give `v` a local id if it has none yet (first appearance order). */
static int32_t local_of(int32_t v, int32_t *map, int32_t *ids, int32_t *n) {
  if (map[v] < 0) {
    map[v] = *n;
    ids[(*n)++] = v;
  }
  return map[v];
}

hs_status hs__full_blocks_build(const hs_csr_view *g, const int32_t *ids, int32_t n_ids,
                                int n_layers, hs_nn_block_set *out) {
  hs_status st = HS_OK;
  memset(out, 0, sizeof *out);
  int32_t *map = NULL;
  if (n_layers < 1 || n_layers > HS_NN_MAX_LAYERS || n_ids < 0 || g->n_vertices > INT32_MAX)
    return hs__fail(HS_ERR_INVALID_ARG, "full blocks: %d layers, %d ids, %lld vertices",
                    n_layers, n_ids, (long long)g->n_vertices);
  size_t nv = (size_t)g->n_vertices;
  map = malloc(sizeof *map * (nv ? nv : 1));
  out->ids = malloc(sizeof *out->ids * (nv ? nv : 1));
  out->seed_local = malloc(sizeof *out->seed_local * (n_ids ? (size_t)n_ids : 1));
  if (!map || !out->ids || !out->seed_local) {
    st = hs__fail(HS_ERR_NOMEM, "full blocks: %zu vertices", nv);
    goto fail;
  }
  for (size_t v = 0; v < nv; v++) map[v] = -1;
  out->n_layers = n_layers;
  out->n_requested = n_ids;
  int32_t n = 0;
  for (int32_t i = 0; i < n_ids; i++) {
    if (ids[i] < 0 || ids[i] >= g->n_vertices) {
      st = hs__fail(HS_ERR_RANGE, "full blocks: id %d (position %d) outside 0..%lld", ids[i], i,
                    (long long)g->n_vertices - 1);
      goto fail;
    }
    out->seed_local[i] = local_of(ids[i], map, out->ids, &n);
  }
  /* Output layer first: each block's dst are every vertex numbered so far. */
  for (int l = n_layers - 1; l >= 0; l--) {
    int32_t n_dst = n;
    int64_t n_edges = 0;
    for (int32_t i = 0; i < n_dst; i++)
      n_edges += g->indptr[out->ids[i] + 1] - g->indptr[out->ids[i]];
    if (n_edges > INT32_MAX) {
      st = hs__fail(HS_ERR_RANGE, "full blocks: layer %d has %lld edges (> 2^31-1)", l,
                    (long long)n_edges);
      goto fail;
    }
    out->row_ptr[l] = malloc(sizeof(int32_t) * ((size_t)n_dst + 1));
    out->col[l] = malloc(sizeof(int32_t) * (n_edges ? (size_t)n_edges : 1));
    if (!out->row_ptr[l] || !out->col[l]) {
      st = hs__fail(HS_ERR_NOMEM, "full blocks: layer %d, %lld edges", l, (long long)n_edges);
      goto fail;
    }
    int32_t e = 0;
    out->row_ptr[l][0] = 0;
    for (int32_t i = 0; i < n_dst; i++) {
      int32_t v = out->ids[i];
      for (int64_t k = g->indptr[v]; k < g->indptr[v + 1]; k++)
        out->col[l][e++] = local_of(g->indices[k], map, out->ids, &n);
      out->row_ptr[l][i + 1] = e;
    }
    out->blocks[l] = (hs_nn_block){.n_dst = n_dst, .n_src = n, .row_ptr = out->row_ptr[l],
                                .col = out->col[l]};
  }
  free(map);
  return HS_OK;
fail:
  free(map);
  hs__block_set_free(out);
  return st;
}
