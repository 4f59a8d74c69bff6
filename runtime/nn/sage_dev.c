/* GraphSAGE-mean on the trainer device (sage.h): the kernels' launchers and
 * the forward, backward and layer-wise inference passes, in the order of
 * the reference passes in sage.c. */
#include "nn/sage.h"
#include "nn/trainer_internal.h"

/* The model's buffer slots in the trainer (trainer_internal.h). */
enum { SAGE_CAT = 0, SAGE_YS, SAGE_YN, SAGE_DYS, SAGE_DYN };  /* per layer */
enum { SAGE_DCAT = 0 };                                       /* per batch */
enum { INFER_CAT = 0 };                                       /* inference scratch */
enum { CHUNK_ROWS = 4096 };

/* ---- launchers ------------------------------------------------------------------ */

hs_status hs__k_agg_fwd(hs_kset *ks, cl_mem row_ptr, cl_mem col, cl_mem h, cl_int base,
                        cl_int n_dst, cl_int d, cl_mem cat) {
  hs_karg a[] = {HS_KARG(row_ptr), HS_KARG(col), HS_KARG(h),  HS_KARG(base),
                 HS_KARG(n_dst),   HS_KARG(d),   HS_KARG(cat)};
  return hs__kset_run(ks, HS_PHASE_AGG, HS_K_AGG_FWD, hs__vecs((size_t)d), (size_t)n_dst, a, 7);
}

hs_status hs__k_agg_bwd(hs_kset *ks, cl_mem row_ptr, cl_mem t_ptr, cl_mem t_dst, cl_mem dcat,
                        cl_mem h, cl_int n_dst, cl_int n_src, cl_int d, cl_int masked,
                        float scale, cl_mem dh) {
  hs_karg a[] = {HS_KARG(row_ptr), HS_KARG(t_ptr), HS_KARG(t_dst),  HS_KARG(dcat),
                 HS_KARG(h),       HS_KARG(n_dst), HS_KARG(n_src),  HS_KARG(d),
                 HS_KARG(masked),  HS_KARG(scale), HS_KARG(dh)};
  return hs__kset_run(ks, HS_PHASE_AGG, HS_K_AGG_BWD, hs__vecs((size_t)d), (size_t)n_src, a, 11);
}

hs_status hs__k_sage_combine(hs_kset *ks, cl_mem ys, cl_mem cat, cl_int n, cl_int d, cl_mem out) {
  hs_karg a[] = {HS_KARG(ys), HS_KARG(cat), HS_KARG(n), HS_KARG(d), HS_KARG(out)};
  return hs__kset_run(ks, HS_PHASE_AGG, HS_K_SAGE_COMBINE, (size_t)n * (size_t)d, 0, a, 5);
}

hs_status hs__k_sage_split_bwd(hs_kset *ks, cl_mem dz, cl_int n, cl_int d, cl_mem dcat) {
  hs_karg a[] = {HS_KARG(dz), HS_KARG(n), HS_KARG(d), HS_KARG(dcat)};
  return hs__kset_run(ks, HS_PHASE_AGG, HS_K_SAGE_SPLIT_BWD, (size_t)n * (size_t)d, 0, a, 4);
}

/* ---- training passes ------------------------------------------------------------- */

/* Layer 0 multiplies first when an input provider stands in for X. */
static bool multiplies_first(const hs_trainer *t, int l) { return l == 0 && t->input.mul; }

hs_status hs__sage_dev_reserve(hs_trainer *t) {
  const hs_model_shape *sh = &t->shape;
  size_t dcat = 0;
  hs_status st;
  for (int l = 0; l < sh->n_layers; l++) {
    size_t nd = (size_t)t->n_dst[l], ns = (size_t)t->n_src[l], ne = (size_t)t->n_edges[l];
    size_t d_in = (size_t)sh->dims[l], d_out = (size_t)sh->dims[l + 1];
    bool first = multiplies_first(t, l), sparse = l == 0 && t->x_sparse;
    size_t width = 2 * (first ? d_out : d_in);
    /* Sparse rows need no [self | mean] matrix, but the transposed block
     * for their weight gradient (sparse_first.h). */
    if (!sparse && (st = hs__trainer_reserve(t, &t->mb[l][SAGE_CAT], nd, width * 4)) != HS_OK)
      return st;
    if (sparse && ((st = hs__trainer_reserve(t, &t->t_ptr[0], ns + 1, 4)) != HS_OK ||
                   (st = hs__trainer_reserve(t, &t->t_list[0], ne + 1, 4)) != HS_OK))
      return st;
    if (!sparse && (l > 0 || first || t->opts.input_grad)) {
      if ((st = hs__trainer_reserve(t, &t->t_ptr[l], ns + 1, 4)) != HS_OK ||
          (st = hs__trainer_reserve(t, &t->t_list[l], ne, 4)) != HS_OK)
        return st;
      if (nd * width > dcat) dcat = nd * width;
    }
    if (first) {
      static const int slots[] = {SAGE_YS, SAGE_YN, SAGE_DYS, SAGE_DYN};
      for (size_t i = 0; i < HS_ARRAY_LEN(slots); i++)
        if ((st = hs__trainer_reserve(t, &t->mb[0][slots[i]], ns, d_out * 4)) != HS_OK) return st;
    }
  }
  return hs__trainer_reserve(t, &t->mw[SAGE_DCAT], dcat, 4);
}

/* out = X_dst W_self + mean_j (X W_neigh)_j through the input transform. */
static hs_status first_forward(hs_trainer *t, cl_mem out) {
  const hs_model_shape *sh = &t->shape;
  cl_int n_dst = t->n_dst[0], d_in = sh->dims[0], d_out = sh->dims[1];
  cl_mem ys = t->mb[0][SAGE_YS].m, yn = t->mb[0][SAGE_YN].m, cat = t->mb[0][SAGE_CAT].m;
  size_t w_neigh = sh->w_off[0] + (size_t)d_in * (size_t)d_out;
  hs_status st;
  if ((st = hs__nn_input_mul(t, sh->w_off[0], (size_t)d_out, (size_t)d_out, ys)) != HS_OK ||
      (st = hs__nn_input_mul(t, w_neigh, (size_t)d_out, (size_t)d_out, yn)) != HS_OK ||
      (st = hs__k_agg_fwd(&t->ks, t->blk_rp[0], t->blk_col[0], yn, 0, n_dst, d_out, cat)) != HS_OK)
    return st;
  return hs__k_sage_combine(&t->ks, ys, cat, n_dst, d_out, out);
}

hs_status hs__sage_dev_forward(hs_trainer *t, const hs_nn_keys *k) {
  const hs_model_shape *sh = &t->shape;
  int L = sh->n_layers;
  float scale = hs__dropout_scale(k->p);
  hs_status st;
  for (int l = 0; l < L; l++) {
    cl_int n_dst = t->n_dst[l], d_in = sh->dims[l], d_out = sh->dims[l + 1];
    cl_mem in = l == 0 ? t->feat.m : t->act[l].m;
    cl_mem out = l < L - 1 ? t->act[l + 1].m : t->logits.m;
    cl_mem cat = t->mb[l][SAGE_CAT].m;
    if (l == 0 && t->x_sparse) {
      if ((st = hs__sparse_first_forward(t, out)) != HS_OK) return st;
    } else if (multiplies_first(t, l)) {
      if ((st = first_forward(t, out)) != HS_OK) return st;
    } else {
      if ((st = hs__k_agg_fwd(&t->ks, t->blk_rp[l], t->blk_col[l], in, 0, n_dst, d_in, cat)) !=
          HS_OK)
        return st;
      hs_gemm_op op = {.m = (size_t)n_dst, .n = (size_t)d_out, .k = 2 * (size_t)d_in,
                       .alpha = 1.0f, .a = cat, .lda = 2 * (size_t)d_in, .b = t->params.m,
                       .b_off = sh->w_off[l], .ldb = (size_t)d_out, .c = out,
                       .ldc = (size_t)d_out};
      if ((st = hs__trainer_gemm(t, &op)) != HS_OK) return st;
    }
    if (l == L - 1) break;
    if ((st = hs__k_bias_act(&t->ks, out, n_dst, d_out, t->params.m, sh->b_off[l], 1, k->p,
                             scale, k->seed, k->epoch, k->batch, (cl_uint)l)) != HS_OK)
      return st;
  }
  return HS_OK;
}

/* Layer 0's weight gradients (and dX) when it multiplied first. */
static hs_status first_backward(hs_trainer *t) {
  const hs_model_shape *sh = &t->shape;
  cl_int n_dst = t->n_dst[0], n_src = t->n_src[0], d_in = sh->dims[0], d_out = sh->dims[1];
  cl_mem dys = t->mb[0][SAGE_DYS].m, dyn = t->mb[0][SAGE_DYN].m, dcat = t->mw[SAGE_DCAT].m;
  size_t w_neigh = sh->w_off[0] + (size_t)d_in * (size_t)d_out;
  size_t top = (size_t)n_dst * (size_t)d_out * 4, all = (size_t)n_src * (size_t)d_out * 4;
  float zero = 0.0f;
  hs_status st;
  /* d(ys) is dz on the dst rows and 0 on the others. */
  if ((st = hs__mem_copy(t->q, t->dz[0].m, dys, 0, 0, top, 0, NULL, NULL)) != HS_OK ||
      (all > top &&
       (st = hs__mem_fill(t->q, dys, &zero, 4, top, all - top, 0, NULL, NULL)) != HS_OK) ||
      (st = hs__nn_input_mul_t(t, dys, (size_t)d_out, sh->w_off[0], (size_t)d_out)) != HS_OK ||
      (st = hs__k_sage_split_bwd(&t->ks, t->dz[0].m, n_dst, d_out, dcat)) != HS_OK ||
      (st = hs__trainer_transpose(t, 0, false)) != HS_OK ||
      (st = hs__k_agg_bwd(&t->ks, t->blk_rp[0], t->t_ptr[0].m, t->t_list[0].m, dcat, t->feat.m,
                          n_dst, n_src, d_out, 0, 1.0f, dyn)) != HS_OK ||
      (st = hs__nn_input_mul_t(t, dyn, (size_t)d_out, w_neigh, (size_t)d_out)) != HS_OK ||
      (st = hs__trainer_layer_done(t, 0)) != HS_OK)
    return st;
  if (!t->opts.input_grad) return HS_OK;
  for (int half = 0; half < 2; half++) {
    hs_gemm_op op = {.trans_b = true, .m = (size_t)n_src, .n = (size_t)d_in, .k = (size_t)d_out,
                     .alpha = 1.0f, .beta = half ? 1.0f : 0.0f, .a = half ? dyn : dys,
                     .lda = (size_t)d_out, .b = t->params.m,
                     .b_off = half ? w_neigh : sh->w_off[0], .ldb = (size_t)d_out,
                     .c = t->dx.m, .ldc = (size_t)d_in};
    if ((st = hs__trainer_gemm(t, &op)) != HS_OK) return st;
  }
  return HS_OK;
}

hs_status hs__sage_dev_backward(hs_trainer *t, const hs_nn_keys *k) {
  const hs_model_shape *sh = &t->shape;
  int L = sh->n_layers;
  float scale = hs__dropout_scale(k->p);
  hs_status st;
  for (int l = L - 1; l >= 0; l--) {
    cl_int n_dst = t->n_dst[l], n_src = t->n_src[l], d_in = sh->dims[l], d_out = sh->dims[l + 1];
    cl_mem cat = t->mb[l][SAGE_CAT].m, dcat = t->mw[SAGE_DCAT].m;
    if ((st = hs__nn_colsum(&t->ks, t->dz[l].m, n_dst, d_out, t->colsum_part.m, t->grads.m,
                            sh->b_off[l])) != HS_OK)
      return st;
    if (l == 0 && t->x_sparse) {
      if ((st = hs__sparse_first_wgrad(t)) != HS_OK) return st;
      return hs__trainer_layer_done(t, 0);
    }
    if (multiplies_first(t, l)) return first_backward(t);
    hs_gemm_op dw = {.trans_a = true, .m = 2 * (size_t)d_in, .n = (size_t)d_out,
                     .k = (size_t)n_dst, .alpha = 1.0f, .a = cat, .lda = 2 * (size_t)d_in,
                     .b = t->dz[l].m, .ldb = (size_t)d_out, .c = t->grads.m,
                     .c_off = sh->w_off[l], .ldc = (size_t)d_out};
    if ((st = hs__trainer_gemm(t, &dw)) != HS_OK || (st = hs__trainer_layer_done(t, l)) != HS_OK)
      return st;
    if (l == 0 && !t->opts.input_grad) break; /* no gradient for the input features */
    hs_gemm_op dc = {.trans_b = true, .m = (size_t)n_dst, .n = 2 * (size_t)d_in,
                     .k = (size_t)d_out, .alpha = 1.0f, .a = t->dz[l].m, .lda = (size_t)d_out,
                     .b = t->params.m, .b_off = sh->w_off[l], .ldb = (size_t)d_out,
                     .c = dcat, .ldc = 2 * (size_t)d_in};
    if ((st = hs__trainer_gemm(t, &dc)) != HS_OK) return st;
    if ((st = hs__trainer_transpose(t, l, false)) != HS_OK) return st;
    /* Below layer 0 is X itself: no activation to pass back through. */
    cl_int masked = l > 0;
    cl_mem h = l > 0 ? t->act[l].m : t->feat.m, below = l > 0 ? t->dz[l - 1].m : t->dx.m;
    if ((st = hs__k_agg_bwd(&t->ks, t->blk_rp[l], t->t_ptr[l].m, t->t_list[l].m, dcat, h, n_dst,
                            n_src, d_in, masked, scale, below)) != HS_OK)
      return st;
  }
  return HS_OK;
}

/* ---- layer-wise inference ----------------------------------------------------------- */

/* Rows in chunks, so that only one chunk of [self | mean] inputs is
 * resident; bias and ReLU over the whole layer (no dropout: element
 * indices need not fit the dropout counter). */
hs_status hs__sage_dev_layer(hs_trainer *t, int l, const hs_dev_graph *g, cl_mem in, cl_mem out,
                             hs_dbuf *scratch) {
  const hs_model_shape *sh = &t->shape;
  cl_int d_in = sh->dims[l], d_out = sh->dims[l + 1];
  size_t n = (size_t)g->n;
  hs_status st = hs__trainer_reserve(t, &scratch[INFER_CAT], CHUNK_ROWS, 2 * (size_t)d_in * 4);
  if (st != HS_OK) return st;
  cl_mem cat = scratch[INFER_CAT].m;
  for (size_t r0 = 0; r0 < n; r0 += CHUNK_ROWS) {
    cl_int base = (cl_int)r0, rows = (cl_int)(n - r0 < CHUNK_ROWS ? n - r0 : CHUNK_ROWS);
    if ((st = hs__k_agg_fwd(&t->ks, g->row_ptr, g->col, in, base, rows, d_in, cat)) != HS_OK)
      return st;
    hs_gemm_op op = {.m = (size_t)rows, .n = (size_t)d_out, .k = 2 * (size_t)d_in,
                     .alpha = 1.0f, .a = cat, .lda = 2 * (size_t)d_in, .b = t->params.m,
                     .b_off = sh->w_off[l], .ldb = (size_t)d_out, .c = out,
                     .c_off = r0 * (size_t)d_out, .ldc = (size_t)d_out};
    if ((st = hs__trainer_gemm(t, &op)) != HS_OK) return st;
  }
  cl_int relu = l < sh->n_layers - 1;
  return hs__k_bias_act(&t->ks, out, g->n, d_out, t->params.m, sh->b_off[l], relu, 0.0f, 1.0f, 0,
                        0, 0, 0);
}
