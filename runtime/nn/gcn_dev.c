/* GCN on the trainer device (gcn.h): the kernels' launchers and the
 * forward, backward and layer-wise inference passes, in the order of the
 * reference passes in gcn.c. */
#include "nn/gcn.h"
#include "nn/trainer_internal.h"

/* The model's buffer slots in the trainer (trainer_internal.h). */
enum { GCN_CD = 0, GCN_CS };      /* per layer: the block's normalisation */
enum { GCN_Y = 0, GCN_DY };       /* per batch: H W and its gradient */
enum { INF_Y = 0, INF_CURSOR, INF_SUMS, INF_TPTR, INF_CD, INF_CS }; /* inference scratch */

/* ---- launchers ------------------------------------------------------------------ */

hs_status hs__k_gcn_norm(hs_kset *ks, cl_mem row_ptr, cl_mem t_ptr, cl_int n_dst, cl_int n_src,
                         cl_mem cd, cl_mem cs) {
  hs_karg a[] = {HS_KARG(row_ptr), HS_KARG(t_ptr), HS_KARG(n_dst),
                 HS_KARG(n_src),   HS_KARG(cd),    HS_KARG(cs)};
  return hs__kset_run(ks, HS_PHASE_AGG, HS_K_GCN_NORM, (size_t)n_src, 0, a, 6);
}

hs_status hs__k_gcn_agg_fwd(hs_kset *ks, cl_mem row_ptr, cl_mem col, cl_mem y, cl_mem cd,
                            cl_mem cs, cl_int n_dst, cl_int d, cl_mem z) {
  hs_karg a[] = {HS_KARG(row_ptr), HS_KARG(col),   HS_KARG(y), HS_KARG(cd),
                 HS_KARG(cs),      HS_KARG(n_dst), HS_KARG(d), HS_KARG(z)};
  return hs__kset_run(ks, HS_PHASE_AGG, HS_K_GCN_AGG_FWD, hs__vecs((size_t)d), (size_t)n_dst, a,
                      8);
}

hs_status hs__k_gcn_agg_bwd(hs_kset *ks, cl_mem t_ptr, cl_mem t_dst, cl_mem dz, cl_mem cd,
                            cl_mem cs, cl_int n_dst, cl_int n_src, cl_int d, cl_mem dy) {
  hs_karg a[] = {HS_KARG(t_ptr), HS_KARG(t_dst), HS_KARG(dz), HS_KARG(cd), HS_KARG(cs),
                 HS_KARG(n_dst), HS_KARG(n_src), HS_KARG(d),  HS_KARG(dy)};
  return hs__kset_run(ks, HS_PHASE_AGG, HS_K_GCN_AGG_BWD, hs__vecs((size_t)d), (size_t)n_src, a,
                      9);
}

/* ---- training passes ------------------------------------------------------------- */

hs_status hs__gcn_dev_reserve(hs_trainer *t) {
  const hs_model_shape *sh = &t->shape;
  size_t y = 0;
  hs_status st;
  for (int l = 0; l < sh->n_layers; l++) {
    size_t nd = (size_t)t->n_dst[l], ns = (size_t)t->n_src[l], ne = (size_t)t->n_edges[l];
    if ((st = hs__trainer_reserve(t, &t->t_ptr[l], ns + 1, 4)) != HS_OK ||
        (st = hs__trainer_reserve(t, &t->t_list[l], ne, 4)) != HS_OK ||
        (st = hs__trainer_reserve(t, &t->mb[l][GCN_CD], nd, 4)) != HS_OK ||
        (st = hs__trainer_reserve(t, &t->mb[l][GCN_CS], ns, 4)) != HS_OK)
      return st;
    if (ns * (size_t)sh->dims[l + 1] > y) y = ns * (size_t)sh->dims[l + 1];
  }
  if ((st = hs__trainer_reserve(t, &t->mw[GCN_Y], y, 4)) != HS_OK) return st;
  return hs__trainer_reserve(t, &t->mw[GCN_DY], y, 4);
}

hs_status hs__gcn_dev_forward(hs_trainer *t, const hs_nn_keys *k) {
  const hs_model_shape *sh = &t->shape;
  int L = sh->n_layers;
  float scale = hs__dropout_scale(k->p);
  cl_mem y = t->mw[GCN_Y].m;
  hs_status st;
  for (int l = 0; l < L; l++) {
    cl_int n_dst = t->n_dst[l], n_src = t->n_src[l], d_in = sh->dims[l], d_out = sh->dims[l + 1];
    cl_mem out = l < L - 1 ? t->act[l + 1].m : t->logits.m;
    cl_mem cd = t->mb[l][GCN_CD].m, cs = t->mb[l][GCN_CS].m;
    if (l == 0) {
      st = hs__nn_input_mul(t, sh->w_off[0], (size_t)d_out, (size_t)d_out, y);
    } else {
      hs_gemm_op op = {.m = (size_t)n_src, .n = (size_t)d_out, .k = (size_t)d_in, .alpha = 1.0f,
                       .a = t->act[l].m, .lda = (size_t)d_in, .b = t->params.m,
                       .b_off = sh->w_off[l], .ldb = (size_t)d_out, .c = y,
                       .ldc = (size_t)d_out};
      st = hs__trainer_gemm(t, &op);
    }
    if (st != HS_OK || (st = hs__trainer_transpose(t, l, false)) != HS_OK ||
        (st = hs__k_gcn_norm(&t->ks, t->blk_rp[l], t->t_ptr[l].m, n_dst, n_src, cd, cs)) !=
            HS_OK ||
        (st = hs__k_gcn_agg_fwd(&t->ks, t->blk_rp[l], t->blk_col[l], y, cd, cs, n_dst, d_out,
                                out)) != HS_OK)
      return st;
    if (l == L - 1) break;
    if ((st = hs__k_bias_act(&t->ks, out, n_dst, d_out, t->params.m, sh->b_off[l], 1, k->p,
                             scale, k->seed, k->epoch, k->batch, (cl_uint)l)) != HS_OK)
      return st;
  }
  return HS_OK;
}

hs_status hs__gcn_dev_backward(hs_trainer *t, const hs_nn_keys *k) {
  const hs_model_shape *sh = &t->shape;
  int L = sh->n_layers;
  float scale = hs__dropout_scale(k->p);
  cl_mem dy = t->mw[GCN_DY].m;
  hs_status st;
  for (int l = L - 1; l >= 0; l--) {
    cl_int n_dst = t->n_dst[l], n_src = t->n_src[l], d_in = sh->dims[l], d_out = sh->dims[l + 1];
    if ((st = hs__nn_colsum(&t->ks, t->dz[l].m, n_dst, d_out, t->colsum_part.m, t->grads.m,
                            sh->b_off[l])) != HS_OK ||
        (st = hs__k_gcn_agg_bwd(&t->ks, t->t_ptr[l].m, t->t_list[l].m, t->dz[l].m,
                                t->mb[l][GCN_CD].m, t->mb[l][GCN_CS].m, n_dst, n_src, d_out,
                                dy)) != HS_OK)
      return st;
    if (l == 0) {
      st = hs__nn_input_mul_t(t, dy, (size_t)d_out, sh->w_off[0], (size_t)d_out);
    } else {
      hs_gemm_op dw = {.trans_a = true, .m = (size_t)d_in, .n = (size_t)d_out, .k = (size_t)n_src,
                       .alpha = 1.0f, .a = t->act[l].m, .lda = (size_t)d_in, .b = dy,
                       .ldb = (size_t)d_out, .c = t->grads.m, .c_off = sh->w_off[l],
                       .ldc = (size_t)d_out};
      st = hs__trainer_gemm(t, &dw);
    }
    if (st != HS_OK || (st = hs__trainer_layer_done(t, l)) != HS_OK) return st;
    if (l == 0 && !t->opts.input_grad) break;
    cl_mem below = l > 0 ? t->dz[l - 1].m : t->dx.m;
    hs_gemm_op dh = {.trans_b = true, .m = (size_t)n_src, .n = (size_t)d_in, .k = (size_t)d_out,
                     .alpha = 1.0f, .a = dy, .lda = (size_t)d_out, .b = t->params.m,
                     .b_off = sh->w_off[l], .ldb = (size_t)d_out, .c = below,
                     .ldc = (size_t)d_in};
    if ((st = hs__trainer_gemm(t, &dh)) != HS_OK) return st;
    if (l > 0 && (st = hs__k_act_bwd(&t->ks, t->act[l].m, (cl_ulong)n_src * (cl_ulong)d_in, scale,
                                     below)) != HS_OK)
      return st;
  }
  return HS_OK;
}

/* ---- layer-wise inference ----------------------------------------------------------- */

/* The whole graph as one block: the degrees are the graph's. */
hs_status hs__gcn_dev_layer(hs_trainer *t, int l, const hs_dev_graph *g, cl_mem in, cl_mem out,
                            hs_dbuf *scratch) {
  const hs_model_shape *sh = &t->shape;
  cl_int d_in = sh->dims[l], d_out = sh->dims[l + 1];
  size_t n = (size_t)g->n;
  hs_status st;
  if ((st = hs__trainer_reserve(t, &scratch[INF_Y], n, (size_t)d_out * 4)) != HS_OK ||
      (st = hs__trainer_reserve(t, &scratch[INF_CURSOR], n, 4)) != HS_OK ||
      (st = hs__trainer_reserve(t, &scratch[INF_SUMS], hs__scan_chunks(n) + 1, 4)) != HS_OK ||
      (st = hs__trainer_reserve(t, &scratch[INF_TPTR], n + 1, 4)) != HS_OK ||
      (st = hs__trainer_reserve(t, &scratch[INF_CD], n, 4)) != HS_OK ||
      (st = hs__trainer_reserve(t, &scratch[INF_CS], n, 4)) != HS_OK)
    return st;
  cl_mem y = scratch[INF_Y].m, cd = scratch[INF_CD].m, cs = scratch[INF_CS].m;
  hs_gemm_op op = {.m = n, .n = (size_t)d_out, .k = (size_t)d_in, .alpha = 1.0f, .a = in,
                   .lda = (size_t)d_in, .b = t->params.m, .b_off = sh->w_off[l],
                   .ldb = (size_t)d_out, .c = y, .ldc = (size_t)d_out};
  hs_tr_bufs tb = {.cursor = scratch[INF_CURSOR].m, .sums = scratch[INF_SUMS].m,
                   .t_ptr = scratch[INF_TPTR].m};
  cl_int relu = l < sh->n_layers - 1;
  if ((st = hs__trainer_gemm(t, &op)) != HS_OK ||
      (st = hs__nn_transpose(&t->ks, g->row_ptr, g->col, g->n, g->n, g->n_edges, &tb, false,
                             true)) != HS_OK ||
      (st = hs__k_gcn_norm(&t->ks, g->row_ptr, tb.t_ptr, g->n, g->n, cd, cs)) != HS_OK ||
      (st = hs__k_gcn_agg_fwd(&t->ks, g->row_ptr, g->col, y, cd, cs, g->n, d_out, out)) != HS_OK)
    return st;
  return hs__k_bias_act(&t->ks, out, g->n, d_out, t->params.m, sh->b_off[l], relu, 0.0f, 1.0f, 0,
                        0, 0, 0);
}
