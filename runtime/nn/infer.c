/* Full-neighbour inference on the host: layer-wise over the whole graph,
 * or on the receptive field of a few vertices. */
#include <stdlib.h>
#include <string.h>

#include "nn/infer.h"
#include "nn/model_ops.h"
#include "nn/ref_nn.h"

static float *alloc_floats(size_t rows, size_t cols) {
  size_t n;
  if (!hs__mul_size(rows, cols, &n) || !hs__mul_size(n, sizeof(float), &n)) return NULL;
  return malloc(n ? n : sizeof(float));
}

/* Two n x hidden arrays in turn; each layer is the model's (its table). */
hs_status hs__infer_full(const hs_model_shape *shape, const float *params, const hs_csr_view *g,
                         const float *feat, float *logits) {
  float *ping = NULL, *pong = NULL;
  hs_status st = hs__csr_view_validate(g);
  if (st != HS_OK) return st;
  int L = shape->n_layers;
  size_t n = (size_t)g->n_vertices;
  if (L > 1) {
    ping = alloc_floats(n, (size_t)shape->dims[1]);
    pong = alloc_floats(n, (size_t)shape->dims[1]);
    if (!ping || !pong) {
      st = hs__fail(HS_ERR_NOMEM, "inference: %zu vertices", n);
      goto fail;
    }
  }
  const float *in = feat;
  for (int l = 0; l < L && st == HS_OK; l++) {
    float *out = l == L - 1 ? logits : (l % 2 == 0 ? ping : pong);
    st = shape->ops->ref_layer(shape, params, l, g, in, out);
    in = out;
  }
fail:
  free(ping);
  free(pong);
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
