/* Full-neighbour inference on the host: layer-wise over the whole graph,
 * or on the receptive field of a few vertices. */
#include <stdlib.h>
#include <string.h>

#include "nn/infer.h"

#include "nn/ref_nn.h"

enum { INFER_CHUNK_ROWS = 1024 };

static float *alloc_floats(size_t rows, size_t cols) {
  size_t n;
  if (!hs__mul_size(rows, cols, &n) || !hs__mul_size(n, sizeof(float), &n)) return NULL;
  return malloc(n ? n : sizeof(float));
}

hs_status hs__infer_full(const hs_model_shape *shape, const float *params, const hs_csr_view *g,
                         const float *feat, float *logits) {
  float *ping = NULL, *pong = NULL, *cat = NULL;
  hs_status st = hs__csr_view_validate(g);
  if (st != HS_OK) return st;
  int L = shape->n_layers;
  size_t n = (size_t)g->n_vertices;
  int32_t max_in = 0;
  for (int l = 0; l < L; l++)
    if (shape->dims[l] > max_in) max_in = shape->dims[l];
  if (L > 1) {
    ping = alloc_floats(n, (size_t)shape->dims[1]);
    pong = alloc_floats(n, (size_t)shape->dims[1]);
  }
  cat = alloc_floats(INFER_CHUNK_ROWS, 2 * (size_t)max_in);
  if (!cat || (L > 1 && (!ping || !pong))) {
    st = hs__fail(HS_ERR_NOMEM, "inference: %zu vertices", n);
    goto fail;
  }
  const float *in = feat;
  for (int l = 0; l < L; l++) {
    size_t d_in = (size_t)shape->dims[l], d_out = (size_t)shape->dims[l + 1];
    float *out = l == L - 1 ? logits : (l % 2 == 0 ? ping : pong);
    for (size_t r0 = 0; r0 < n; r0 += INFER_CHUNK_ROWS) {
      size_t rows = n - r0 < INFER_CHUNK_ROWS ? n - r0 : INFER_CHUNK_ROWS;
      for (size_t i = 0; i < rows; i++) {
        size_t v = r0 + i;
        float *row = cat + i * 2 * d_in;
        memcpy(row, in + v * d_in, sizeof(float) * d_in);
        int64_t lo = g->indptr[v], hi = g->indptr[v + 1];
        /* Neighbour rows are summed in edge order for every column, as the
         * column-at-a-time form would, but reading whole rows. */
        float *mean = row + d_in;
        memset(mean, 0, sizeof(float) * d_in);
        for (int64_t e = lo; e < hi; e++) {
          const float *nb = in + (size_t)g->indices[e] * d_in;
          for (size_t k = 0; k < d_in; k++) mean[k] += nb[k];
        }
        if (hi > lo)
          for (size_t k = 0; k < d_in; k++) mean[k] /= (float)(hi - lo);
      }
      float *dst = out + r0 * d_out;
      hs__ref_gemm(false, false, rows, d_out, 2 * d_in, 1.0f, cat, 2 * d_in,
                   params + shape->w_off[l], d_out, 0.0f, dst, d_out);
      hs__ref_bias_act_fwd(dst, (int32_t)rows, (int32_t)d_out, params + shape->b_off[l],
                           l < L - 1, 0.0f, 0, 0, 0, (uint32_t)l);
    }
    in = out;
  }
fail:
  free(ping);
  free(pong);
  free(cat);
  return st;
}

hs_status hs__infer_ids(const hs_model_shape *shape, const float *params, const hs_csr_view *g,
                        const float *feat, const int32_t *ids, int32_t n_ids, float *logits) {
  hs_nn_block_set set = {0};
  float *x = NULL, *out = NULL;
  hs_status st = hs__csr_view_validate(g);
  if (st != HS_OK) return st;
  int L = shape->n_layers;
  st = hs__full_blocks_build(g, ids, n_ids, L, &set);
  if (st != HS_OK) goto fail;
  size_t d0 = (size_t)shape->dims[0], c = (size_t)shape->dims[L];
  int32_t n_src = set.blocks[0].n_src, n_out = set.blocks[L - 1].n_dst;
  x = alloc_floats((size_t)n_src, d0);
  out = alloc_floats((size_t)n_out, c);
  if (!x || !out) {
    st = hs__fail(HS_ERR_NOMEM, "inference: receptive field of %d vertices", n_src);
    goto fail;
  }
  for (int32_t i = 0; i < n_src; i++)
    memcpy(x + (size_t)i * d0, feat + (size_t)set.ids[i] * d0, sizeof(float) * d0);
  hs_nn_batch b = {.n_layers = L, .blocks = set.blocks, .feat = x, .labels = NULL};
  st = hs__ref_forward(shape, params, &b, out);
  if (st != HS_OK) goto fail;
  for (int32_t i = 0; i < n_ids; i++)
    memcpy(logits + (size_t)i * c, out + (size_t)set.seed_local[i] * c, sizeof(float) * c);
fail:
  hs__block_set_free(&set);
  free(x);
  free(out);
  return st;
}

double hs__accuracy(const float *logits, int32_t n_classes, const int32_t *labels,
                    const int32_t *ids, int64_t n_ids) {
  if (n_ids <= 0) return 0.0;
  int64_t hits = 0;
  for (int64_t i = 0; i < n_ids; i++) {
    const float *row = logits + (size_t)ids[i] * (size_t)n_classes;
    int32_t arg = 0;
    for (int32_t k = 1; k < n_classes; k++)
      if (row[k] > row[arg]) arg = k;
    hits += arg == labels[ids[i]];
  }
  return (double)hits / (double)n_ids;
}
