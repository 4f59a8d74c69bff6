/* Layer-wise full-neighbour inference on the trainer device: every
 * vertex's layer-l representation from all of its neighbours, layer by
 * layer, with the training kernels (dropout off). The graph's CSR is the
 * block of each layer (every vertex a destination); the model's table
 * runs each layer. */
#include <stdlib.h>

#include "hs_launch.h"
#include "nn/trainer_internal.h"

hs_status hs__trainer_infer_layers(hs_trainer *t, const hs_csr_view *g, const float *feat,
                                   int layers, float *result) {
  return hs__trainer_infer_layers_stop(t, g, feat, layers, result, NULL);
}

hs_status hs__trainer_infer_layers_stop(hs_trainer *t, const hs_csr_view *g, const float *feat,
                                        int layers, float *result,
                                        const volatile sig_atomic_t *stop) {
  const hs_model_shape *sh = &t->shape;
  int L = sh->n_layers;
  if (layers < 1 || layers > L)
    return hs__fail(HS_ERR_INVALID_ARG, "device inference: %d layers of a %d-layer model", layers,
                    L);
  int32_t *rp32 = NULL;
  hs_dbuf rp = {0}, col = {0}, x = {0}, act[2] = {{0}, {0}}, out = {0};
  hs_dbuf scratch[HS_NN_INFER_SCRATCH] = {{0}};
  hs_status st = hs__csr_view_validate(g);
  if (st != HS_OK) return st;
  int64_t n64 = g->n_vertices, e64 = g->indptr[g->n_vertices];
  if (e64 > INT32_MAX)
    return hs__fail(HS_ERR_RANGE, "device inference: %lld edges exceed 32-bit offsets",
                    (long long)e64);
  size_t n = (size_t)n64, e = (size_t)e64, max_hidden = 0;
  for (int l = 1; l < layers; l++)
    if ((size_t)sh->dims[l] > max_hidden) max_hidden = (size_t)sh->dims[l];
  rp32 = malloc(sizeof(int32_t) * (n + 1));
  if (!rp32) return hs__fail(HS_ERR_NOMEM, "device inference: %zu vertices", n);
  for (size_t v = 0; v <= n; v++) rp32[v] = (int32_t)g->indptr[v];
  size_t d0 = (size_t)sh->dims[0], c = (size_t)sh->dims[layers];
  if ((st = hs__trainer_reserve(t, &rp, n + 1, 4)) != HS_OK ||
      (st = hs__trainer_reserve(t, &col, e, 4)) != HS_OK ||
      (st = hs__trainer_reserve(t, &x, n, d0 * 4)) != HS_OK ||
      (st = hs__trainer_reserve(t, &out, n, c * 4)) != HS_OK)
    goto fail;
  if (layers > 1 && ((st = hs__trainer_reserve(t, &act[0], n, max_hidden * 4)) != HS_OK ||
                     (st = hs__trainer_reserve(t, &act[1], n, max_hidden * 4)) != HS_OK))
    goto fail;
  if ((st = hs__mem_write(t->q, rp.m, true, 0, (n + 1) * 4, rp32, 0, NULL, NULL)) != HS_OK ||
      (st = hs__mem_write(t->q, col.m, true, 0, e * 4, g->indices, 0, NULL, NULL)) != HS_OK ||
      (st = hs__mem_write(t->q, x.m, true, 0, n * d0 * 4, feat, 0, NULL, NULL)) != HS_OK)
    goto fail;
  hs_dev_graph dg = {.n = (cl_int)n, .n_edges = (cl_int)e, .row_ptr = rp.m, .col = col.m};
  cl_mem in = x.m;
  /* The stop flag before each layer and after the last: a signal during
   * the last layer stops the inference too. */
  for (int l = 0; l <= layers; l++) {
    if (stop && (st = hs__queue_finish(t->q)) != HS_OK) goto fail;
    if (stop && *stop) {
      st = hs__fail(HS_ERR_INTERRUPTED, "layer-wise inference stopped after %d of %d layers", l,
                    layers);
      goto fail;
    }
    if (l == layers) break;
    cl_mem dst = l == layers - 1 ? out.m : act[l % 2].m;
    if ((st = t->ops->dev_layer(t, l, &dg, in, dst, scratch)) != HS_OK) goto fail;
    in = dst;
  }
  st = hs__mem_read(t->q, out.m, true, 0, n * c * 4, result, 0, NULL, NULL);
fail:
  hs__queue_finish(t->q);
  hs_dbuf *all[] = {&rp, &col, &x, &act[0], &act[1], &out};
  for (size_t i = 0; i < HS_ARRAY_LEN(all); i++) hs__trainer_drop(all[i]);
  for (int i = 0; i < HS_NN_INFER_SCRATCH; i++) hs__trainer_drop(&scratch[i]);
  free(rp32);
  return st;
}

hs_status hs__trainer_infer_full(hs_trainer *t, const hs_csr_view *g, const float *feat,
                                 float *logits) {
  return hs__trainer_infer_layers(t, g, feat, t->shape.n_layers, logits);
}
