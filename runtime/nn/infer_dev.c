/* Layer-wise full-neighbour inference on the trainer device: every
 * vertex's layer-l representation from all of its neighbours, layer by
 * layer, with the training kernels (dropout off). The graph's CSR is the
 * block of each layer; rows are processed in chunks so that only one chunk
 * of [self | mean] inputs is resident. */
#include <stdlib.h>

#include "hs_launch.h"
#include "nn/nn_rng.h"
#include "nn/trainer_internal.h"

enum { CHUNK_ROWS = 4096 };

hs_status hs__trainer_infer_full(hs_trainer *t, const hs_csr_view *g, const float *feat,
                                 float *logits) {
  const hs_model_shape *sh = &t->shape;
  int L = sh->n_layers;
  int32_t *rp32 = NULL;
  dbuf rp = {0}, col = {0}, x = {0}, act[2] = {{0}, {0}}, out = {0}, cat = {0};
  hs_status st = hs__csr_view_validate(g);
  if (st != HS_OK) return st;
  int64_t n64 = g->n_vertices, e64 = g->indptr[g->n_vertices];
  if (e64 > INT32_MAX)
    return hs__fail(HS_ERR_RANGE, "device inference: %lld edges exceed 32-bit offsets",
                    (long long)e64);
  size_t n = (size_t)n64, e = (size_t)e64, max_in = 0;
  for (int l = 0; l < L; l++)
    if ((size_t)sh->dims[l] > max_in) max_in = (size_t)sh->dims[l];
  rp32 = malloc(sizeof(int32_t) * (n + 1));
  if (!rp32) return hs__fail(HS_ERR_NOMEM, "device inference: %zu vertices", n);
  for (size_t v = 0; v <= n; v++) rp32[v] = (int32_t)g->indptr[v];
  size_t d0 = (size_t)sh->dims[0], c = (size_t)sh->dims[L], hidden = L > 1 ? (size_t)sh->dims[1] : 0;
  if ((st = hs__trainer_reserve(t, &rp, n + 1, 4)) != HS_OK ||
      (st = hs__trainer_reserve(t, &col, e, 4)) != HS_OK ||
      (st = hs__trainer_reserve(t, &x, n, d0 * 4)) != HS_OK ||
      (st = hs__trainer_reserve(t, &out, n, c * 4)) != HS_OK ||
      (st = hs__trainer_reserve(t, &cat, CHUNK_ROWS, 2 * max_in * 4)) != HS_OK)
    goto fail;
  if (L > 1 && ((st = hs__trainer_reserve(t, &act[0], n, hidden * 4)) != HS_OK ||
                (st = hs__trainer_reserve(t, &act[1], n, hidden * 4)) != HS_OK))
    goto fail;
  if ((st = hs__mem_write(t->q, rp.m, true, 0, (n + 1) * 4, rp32, 0, NULL, NULL)) != HS_OK ||
      (st = hs__mem_write(t->q, col.m, true, 0, e * 4, g->indices, 0, NULL, NULL)) != HS_OK ||
      (st = hs__mem_write(t->q, x.m, true, 0, n * d0 * 4, feat, 0, NULL, NULL)) != HS_OK)
    goto fail;
  cl_mem in = x.m;
  for (int l = 0; l < L; l++) {
    cl_int d_in = sh->dims[l], d_out = sh->dims[l + 1];
    cl_mem dst = l == L - 1 ? out.m : act[l % 2].m;
    for (size_t r0 = 0; r0 < n; r0 += CHUNK_ROWS) {
      cl_int base = (cl_int)r0, rows = (cl_int)(n - r0 < CHUNK_ROWS ? n - r0 : CHUNK_ROWS);
      hs_karg agg[] = {HS_KARG(rp.m), HS_KARG(col.m), HS_KARG(in), HS_KARG(base), HS_KARG(rows),
                       HS_KARG(d_in), HS_KARG(cat.m)};
      if ((st = hs__trainer_run(t, HS_PHASE_AGG, K_AGG_FWD, ((size_t)d_in + VW - 1) / VW, (size_t)rows,
                                agg, 7)) != HS_OK)
        goto fail;
      hs_gemm_op op = {.m = (size_t)rows, .n = (size_t)d_out, .k = 2 * (size_t)d_in,
                       .alpha = 1.0f, .a = cat.m, .lda = 2 * (size_t)d_in, .b = t->params.m,
                       .b_off = sh->w_off[l], .ldb = (size_t)d_out, .c = dst,
                       .c_off = r0 * (size_t)d_out, .ldc = (size_t)d_out};
      if ((st = hs__trainer_gemm(t, &op)) != HS_OK) goto fail;
    }
    /* Bias and ReLU over the whole layer (no dropout: element indices
     * need not fit the dropout counter). */
    cl_int rows_all = (cl_int)n, relu = l < L - 1;
    cl_ulong b_off = sh->b_off[l], seed = 0;
    cl_uint zero = 0;
    float p = 0.0f, scale = 1.0f;
    hs_karg act_args[] = {HS_KARG(dst), HS_KARG(rows_all), HS_KARG(d_out), HS_KARG(t->params.m),
                          HS_KARG(b_off), HS_KARG(relu), HS_KARG(p), HS_KARG(scale),
                          HS_KARG(seed), HS_KARG(zero), HS_KARG(zero), HS_KARG(zero)};
    size_t groups = (n * (size_t)d_out + HS_ACT_ELEMS - 1) / HS_ACT_ELEMS;
    if ((st = hs__trainer_run(t, HS_PHASE_ELEM, K_BIAS_ACT, groups, 0, act_args, 12)) != HS_OK)
      goto fail;
    in = dst;
  }
  st = hs__mem_read(t->q, out.m, true, 0, n * c * 4, logits, 0, NULL, NULL);
fail:
  hs__queue_finish(t->q);
  dbuf *all[] = {&rp, &col, &x, &act[0], &act[1], &out, &cat};
  for (size_t i = 0; i < HS_ARRAY_LEN(all); i++) hs__trainer_drop(all[i]);
  free(rp32);
  return st;
}
