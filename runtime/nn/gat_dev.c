/* GAT on the trainer device (gat.h): the kernels' launchers and the
 * forward, backward and layer-wise inference passes, in the order of the
 * reference passes in gat.c. */
#include "nn/gat.h"
#include "nn/trainer_internal.h"

/* The model's buffer slots in the trainer (trainer_internal.h). */
enum { GAT_Y = 0, GAT_EL, GAT_ER, GAT_AS, GAT_AE };               /* per layer */
enum { GAT_ZH = 0, GAT_DZH, GAT_GS, GAT_GE, GAT_DER, GAT_DEL, GAT_DY, GAT_EDST,
       GAT_PART, GAT_BATCH_SLOTS };                                /* per batch */
enum { GAT_LAYER_SLOTS = GAT_AE + 1 };
_Static_assert(GAT_BATCH_SLOTS <= HS_NN_BATCH_SLOTS && GAT_LAYER_SLOTS <= HS_NN_LAYER_SLOTS,
               "the trainer has too few buffer slots for GAT");
enum { INF_Y = 0, INF_EL, INF_ER, INF_AS, INF_AE, INF_ZH };       /* inference scratch */

/* ---- launchers ------------------------------------------------------------------ */

hs_status hs__k_gat_scores(hs_kset *ks, cl_mem y, cl_mem params, cl_ulong a_off, cl_int n_src,
                           cl_int n_dst, hs_gat_dims g, cl_mem el, cl_mem er) {
  hs_karg a[] = {HS_KARG(y),     HS_KARG(params),  HS_KARG(a_off), HS_KARG(n_src), HS_KARG(n_dst),
                 HS_KARG(g.heads), HS_KARG(g.f), HS_KARG(el),    HS_KARG(er)};
  return hs__kset_run(ks, HS_PHASE_AGG, HS_K_GAT_SCORES, (size_t)n_src * (size_t)g.heads, 0, a,
                      9);
}

hs_status hs__k_gat_softmax(hs_kset *ks, cl_mem row_ptr, cl_mem col, cl_mem el, cl_mem er,
                            cl_int n_dst, hs_gat_dims g, cl_mem a_self, cl_mem a_edge) {
  hs_karg a[] = {HS_KARG(row_ptr), HS_KARG(col),     HS_KARG(el),     HS_KARG(er),
                 HS_KARG(n_dst),   HS_KARG(g.heads), HS_KARG(a_self), HS_KARG(a_edge)};
  return hs__kset_run(ks, HS_PHASE_AGG, HS_K_GAT_SOFTMAX, (size_t)n_dst * (size_t)g.heads, 0, a,
                      8);
}

hs_status hs__k_gat_agg_fwd(hs_kset *ks, cl_mem row_ptr, cl_mem col, cl_mem y, cl_mem a_self,
                            cl_mem a_edge, cl_int n_dst, hs_gat_dims g, cl_mem z) {
  hs_karg a[] = {HS_KARG(row_ptr), HS_KARG(col),   HS_KARG(y),       HS_KARG(a_self),
                 HS_KARG(a_edge),  HS_KARG(n_dst), HS_KARG(g.heads), HS_KARG(g.f),
                 HS_KARG(z)};
  size_t hf = (size_t)g.heads * (size_t)g.f;
  return hs__kset_run(ks, HS_PHASE_AGG, HS_K_GAT_AGG_FWD, hs__vecs(hf), (size_t)n_dst, a, 9);
}

hs_status hs__k_gat_head_mean(hs_kset *ks, cl_mem z, cl_int n, hs_gat_dims g, cl_mem out) {
  hs_karg a[] = {HS_KARG(z), HS_KARG(n), HS_KARG(g.heads), HS_KARG(g.f), HS_KARG(out)};
  return hs__kset_run(ks, HS_PHASE_ELEM, HS_K_GAT_HEAD_MEAN, (size_t)n * (size_t)g.f, 0, a, 5);
}

hs_status hs__k_gat_head_mean_bwd(hs_kset *ks, cl_mem dout, cl_int n, hs_gat_dims g, cl_mem dz) {
  hs_karg a[] = {HS_KARG(dout), HS_KARG(n), HS_KARG(g.heads), HS_KARG(g.f), HS_KARG(dz)};
  size_t total = (size_t)n * (size_t)g.heads * (size_t)g.f;
  return hs__kset_run(ks, HS_PHASE_ELEM, HS_K_GAT_HEAD_MEAN_BWD, total, 0, a, 5);
}

hs_status hs__k_gat_bwd_score(hs_kset *ks, cl_mem row_ptr, cl_mem col, cl_mem y, cl_mem dz,
                              cl_mem el, cl_mem er, cl_mem a_self, cl_mem a_edge, cl_int n_dst,
                              hs_gat_dims g, cl_mem g_self, cl_mem g_edge, cl_mem der) {
  hs_karg a[] = {HS_KARG(row_ptr), HS_KARG(col),    HS_KARG(y),       HS_KARG(dz),
                 HS_KARG(el),      HS_KARG(er),     HS_KARG(a_self),  HS_KARG(a_edge),
                 HS_KARG(n_dst),   HS_KARG(g.heads), HS_KARG(g.f),    HS_KARG(g_self),
                 HS_KARG(g_edge),  HS_KARG(der)};
  return hs__kset_run(ks, HS_PHASE_AGG, HS_K_GAT_BWD_SCORE, (size_t)n_dst * (size_t)g.heads, 0,
                      a, 14);
}

hs_status hs__k_gat_bwd_del(hs_kset *ks, cl_mem t_ptr, cl_mem t_eid, cl_mem g_self,
                            cl_mem g_edge, cl_int n_dst, cl_int n_src, hs_gat_dims g,
                            cl_mem del) {
  hs_karg a[] = {HS_KARG(t_ptr), HS_KARG(t_eid), HS_KARG(g_self),  HS_KARG(g_edge),
                 HS_KARG(n_dst), HS_KARG(n_src), HS_KARG(g.heads), HS_KARG(del)};
  return hs__kset_run(ks, HS_PHASE_AGG, HS_K_GAT_BWD_DEL, (size_t)n_src * (size_t)g.heads, 0, a,
                      8);
}

hs_status hs__k_gat_bwd_y(hs_kset *ks, cl_mem t_ptr, cl_mem t_eid, cl_mem edst, cl_mem dz,
                          cl_mem a_self, cl_mem a_edge, cl_mem del, cl_mem der, cl_mem params,
                          cl_ulong a_off, cl_int n_dst, cl_int n_src, hs_gat_dims g, cl_mem dy) {
  hs_karg a[] = {HS_KARG(t_ptr),  HS_KARG(t_eid),  HS_KARG(edst),   HS_KARG(dz),
                 HS_KARG(a_self), HS_KARG(a_edge), HS_KARG(del),    HS_KARG(der),
                 HS_KARG(params), HS_KARG(a_off),  HS_KARG(n_dst),  HS_KARG(n_src),
                 HS_KARG(g.heads), HS_KARG(g.f),   HS_KARG(dy)};
  size_t hf = (size_t)g.heads * (size_t)g.f;
  return hs__kset_run(ks, HS_PHASE_AGG, HS_K_GAT_BWD_Y, hs__vecs(hf), (size_t)n_src, a, 15);
}

hs_status hs__k_gat_att_part(hs_kset *ks, cl_mem y, cl_mem s, cl_int n, hs_gat_dims g,
                             cl_mem part) {
  hs_karg a[] = {HS_KARG(y), HS_KARG(s), HS_KARG(n), HS_KARG(g.heads), HS_KARG(g.f),
                 HS_KARG(part)};
  size_t hf = (size_t)g.heads * (size_t)g.f;
  return hs__kset_run(ks, HS_PHASE_ELEM, HS_K_GAT_ATT_PART, hs__vecs(hf),
                      hs__colsum_chunks((size_t)n), a, 6);
}

/* ---- training passes ------------------------------------------------------------- */

hs_status hs__gat_dev_reserve(hs_trainer *t) {
  const hs_model_shape *sh = &t->shape;
  int L = sh->n_layers;
  size_t max_nd_h = 0, max_ne_h = 0, max_ns_h = 0, max_y = 0, max_e = 0, part = 0;
  hs_status st;
  for (int l = 0; l < L; l++) {
    hs_gat_dims g = hs__gat_dims(sh, l);
    size_t H = (size_t)g.heads, hf = H * (size_t)g.f;
    size_t nd = (size_t)t->n_dst[l], ns = (size_t)t->n_src[l], ne = (size_t)t->n_edges[l];
    if ((st = hs__trainer_reserve(t, &t->t_ptr[l], ns + 1, 4)) != HS_OK ||
        (st = hs__trainer_reserve(t, &t->t_list[l], ne, 4)) != HS_OK ||
        (st = hs__trainer_reserve(t, &t->mb[l][GAT_Y], ns, hf * 4)) != HS_OK ||
        (st = hs__trainer_reserve(t, &t->mb[l][GAT_EL], ns, H * 4)) != HS_OK ||
        (st = hs__trainer_reserve(t, &t->mb[l][GAT_ER], nd, H * 4)) != HS_OK ||
        (st = hs__trainer_reserve(t, &t->mb[l][GAT_AS], nd, H * 4)) != HS_OK ||
        (st = hs__trainer_reserve(t, &t->mb[l][GAT_AE], ne, H * 4)) != HS_OK)
      return st;
    if (nd * H > max_nd_h) max_nd_h = nd * H;
    if (ns * H > max_ns_h) max_ns_h = ns * H;
    if (ne * H > max_ne_h) max_ne_h = ne * H;
    if (ns * hf > max_y) max_y = ns * hf;
    if (ne > max_e) max_e = ne;
    if (hs__colsum_chunks(ns) * hf > part) part = hs__colsum_chunks(ns) * hf;
  }
  hs_gat_dims g = hs__gat_dims(sh, L - 1);
  size_t zh = (size_t)t->n_dst[L - 1] * (size_t)g.heads * (size_t)g.f;
  if ((st = hs__trainer_reserve(t, &t->mw[GAT_ZH], zh, 4)) != HS_OK ||
      (st = hs__trainer_reserve(t, &t->mw[GAT_DZH], zh, 4)) != HS_OK ||
      (st = hs__trainer_reserve(t, &t->mw[GAT_GS], max_nd_h, 4)) != HS_OK ||
      (st = hs__trainer_reserve(t, &t->mw[GAT_GE], max_ne_h, 4)) != HS_OK ||
      (st = hs__trainer_reserve(t, &t->mw[GAT_DER], max_nd_h, 4)) != HS_OK ||
      (st = hs__trainer_reserve(t, &t->mw[GAT_DEL], max_ns_h, 4)) != HS_OK ||
      (st = hs__trainer_reserve(t, &t->mw[GAT_DY], max_y, 4)) != HS_OK ||
      (st = hs__trainer_reserve(t, &t->mw[GAT_EDST], max_e, 4)) != HS_OK)
    return st;
  return hs__trainer_reserve(t, &t->mw[GAT_PART], part, 4);
}

hs_status hs__gat_dev_forward(hs_trainer *t, const hs_nn_keys *k) {
  const hs_model_shape *sh = &t->shape;
  int L = sh->n_layers;
  float scale = hs__dropout_scale(k->p);
  hs_status st;
  for (int l = 0; l < L; l++) {
    hs_gat_dims g = hs__gat_dims(sh, l);
    cl_int n_dst = t->n_dst[l], n_src = t->n_src[l], d_in = sh->dims[l], hf = g.heads * g.f;
    hs_dbuf *b = t->mb[l];
    cl_mem y = b[GAT_Y].m, z = l < L - 1 ? t->act[l + 1].m : t->mw[GAT_ZH].m;
    if (l == 0) {
      st = hs__nn_input_mul(t, sh->w_off[0], (size_t)hf, (size_t)hf, y);
    } else {
      hs_gemm_op op = {.m = (size_t)n_src, .n = (size_t)hf, .k = (size_t)d_in, .alpha = 1.0f,
                       .a = t->act[l].m, .lda = (size_t)d_in, .b = t->params.m,
                       .b_off = sh->w_off[l], .ldb = (size_t)hf, .c = y, .ldc = (size_t)hf};
      st = hs__trainer_gemm(t, &op);
    }
    if (st != HS_OK ||
        (st = hs__k_gat_scores(&t->ks, y, t->params.m, sh->a_off[l], n_src, n_dst, g,
                               b[GAT_EL].m, b[GAT_ER].m)) != HS_OK ||
        (st = hs__k_gat_softmax(&t->ks, t->blk_rp[l], t->blk_col[l], b[GAT_EL].m, b[GAT_ER].m,
                                n_dst, g, b[GAT_AS].m, b[GAT_AE].m)) != HS_OK ||
        (st = hs__k_gat_agg_fwd(&t->ks, t->blk_rp[l], t->blk_col[l], y, b[GAT_AS].m,
                                b[GAT_AE].m, n_dst, g, z)) != HS_OK)
      return st;
    if (l == L - 1) return hs__k_gat_head_mean(&t->ks, z, n_dst, g, t->logits.m);
    if ((st = hs__k_bias_act(&t->ks, z, n_dst, hf, t->params.m, sh->b_off[l], 1, k->p, scale,
                             k->seed, k->epoch, k->batch, (cl_uint)l)) != HS_OK)
      return st;
  }
  return HS_OK;
}

hs_status hs__gat_dev_backward(hs_trainer *t, const hs_nn_keys *k) {
  const hs_model_shape *sh = &t->shape;
  int L = sh->n_layers;
  float scale = hs__dropout_scale(k->p);
  hs_dbuf *w = t->mw;
  hs_status st;
  for (int l = L - 1; l >= 0; l--) {
    hs_gat_dims g = hs__gat_dims(sh, l);
    cl_int n_dst = t->n_dst[l], n_src = t->n_src[l], d_in = sh->dims[l], hf = g.heads * g.f;
    hs_dbuf *b = t->mb[l];
    cl_mem gz = t->dz[l].m;
    if ((st = hs__nn_colsum(&t->ks, t->dz[l].m, n_dst, sh->dims[l + 1], t->colsum_part.m,
                            t->grads.m, sh->b_off[l])) != HS_OK)
      return st;
    if (l == L - 1) {
      gz = w[GAT_DZH].m;
      if ((st = hs__k_gat_head_mean_bwd(&t->ks, t->dz[l].m, n_dst, g, gz)) != HS_OK) return st;
    }
    cl_mem dy = w[GAT_DY].m, part = w[GAT_PART].m;
    if ((st = hs__k_gat_bwd_score(&t->ks, t->blk_rp[l], t->blk_col[l], b[GAT_Y].m, gz,
                                  b[GAT_EL].m, b[GAT_ER].m, b[GAT_AS].m, b[GAT_AE].m, n_dst, g,
                                  w[GAT_GS].m, w[GAT_GE].m, w[GAT_DER].m)) != HS_OK ||
        (st = hs__trainer_transpose(t, l, true)) != HS_OK ||
        (st = hs__k_edge_dst(&t->ks, t->blk_rp[l], n_dst, w[GAT_EDST].m)) != HS_OK ||
        (st = hs__k_gat_bwd_del(&t->ks, t->t_ptr[l].m, t->t_list[l].m, w[GAT_GS].m, w[GAT_GE].m,
                                n_dst, n_src, g, w[GAT_DEL].m)) != HS_OK ||
        (st = hs__k_gat_bwd_y(&t->ks, t->t_ptr[l].m, t->t_list[l].m, w[GAT_EDST].m, gz,
                              b[GAT_AS].m, b[GAT_AE].m, w[GAT_DEL].m, w[GAT_DER].m, t->params.m,
                              sh->a_off[l], n_dst, n_src, g, dy)) != HS_OK ||
        (st = hs__k_gat_att_part(&t->ks, b[GAT_Y].m, w[GAT_DEL].m, n_src, g, part)) != HS_OK ||
        (st = hs__k_colsum_final(&t->ks, part, (cl_int)hs__colsum_chunks((size_t)n_src), hf,
                                 t->grads.m, sh->a_off[l])) != HS_OK ||
        (st = hs__k_gat_att_part(&t->ks, b[GAT_Y].m, w[GAT_DER].m, n_dst, g, part)) != HS_OK ||
        (st = hs__k_colsum_final(&t->ks, part, (cl_int)hs__colsum_chunks((size_t)n_dst), hf,
                                 t->grads.m, sh->a_off[l] + (size_t)hf)) != HS_OK)
      return st;
    if (l == 0) {
      st = hs__nn_input_mul_t(t, dy, (size_t)hf, sh->w_off[0], (size_t)hf);
    } else {
      hs_gemm_op dw = {.trans_a = true, .m = (size_t)d_in, .n = (size_t)hf, .k = (size_t)n_src,
                       .alpha = 1.0f, .a = t->act[l].m, .lda = (size_t)d_in, .b = dy,
                       .ldb = (size_t)hf, .c = t->grads.m, .c_off = sh->w_off[l],
                       .ldc = (size_t)hf};
      st = hs__trainer_gemm(t, &dw);
    }
    if (st != HS_OK || (st = hs__trainer_layer_done(t, l)) != HS_OK) return st;
    if (l == 0 && !t->opts.input_grad) break;
    cl_mem below = l > 0 ? t->dz[l - 1].m : t->dx.m;
    hs_gemm_op dh = {.trans_b = true, .m = (size_t)n_src, .n = (size_t)d_in, .k = (size_t)hf,
                     .alpha = 1.0f, .a = dy, .lda = (size_t)hf, .b = t->params.m,
                     .b_off = sh->w_off[l], .ldb = (size_t)hf, .c = below, .ldc = (size_t)d_in};
    if ((st = hs__trainer_gemm(t, &dh)) != HS_OK) return st;
    if (l > 0 && (st = hs__k_act_bwd(&t->ks, t->act[l].m, (cl_ulong)n_src * (cl_ulong)d_in, scale,
                                     below)) != HS_OK)
      return st;
  }
  return HS_OK;
}

/* ---- layer-wise inference ----------------------------------------------------------- */

hs_status hs__gat_dev_layer(hs_trainer *t, int l, const hs_dev_graph *g, cl_mem in, cl_mem out,
                            hs_dbuf *scratch) {
  const hs_model_shape *sh = &t->shape;
  hs_gat_dims d = hs__gat_dims(sh, l);
  size_t n = (size_t)g->n, e = (size_t)g->n_edges, H = (size_t)d.heads;
  size_t hf = H * (size_t)d.f;
  bool last = l == sh->n_layers - 1;
  hs_status st;
  if ((st = hs__trainer_reserve(t, &scratch[INF_Y], n, hf * 4)) != HS_OK ||
      (st = hs__trainer_reserve(t, &scratch[INF_EL], n, H * 4)) != HS_OK ||
      (st = hs__trainer_reserve(t, &scratch[INF_ER], n, H * 4)) != HS_OK ||
      (st = hs__trainer_reserve(t, &scratch[INF_AS], n, H * 4)) != HS_OK ||
      (st = hs__trainer_reserve(t, &scratch[INF_AE], e, H * 4)) != HS_OK ||
      (last && (st = hs__trainer_reserve(t, &scratch[INF_ZH], n, hf * 4)) != HS_OK))
    return st;
  cl_mem y = scratch[INF_Y].m, el = scratch[INF_EL].m, er = scratch[INF_ER].m;
  cl_mem as = scratch[INF_AS].m, ae = scratch[INF_AE].m, z = last ? scratch[INF_ZH].m : out;
  hs_gemm_op op = {.m = n, .n = hf, .k = (size_t)sh->dims[l], .alpha = 1.0f, .a = in,
                   .lda = (size_t)sh->dims[l], .b = t->params.m, .b_off = sh->w_off[l],
                   .ldb = hf, .c = y, .ldc = hf};
  if ((st = hs__trainer_gemm(t, &op)) != HS_OK ||
      (st = hs__k_gat_scores(&t->ks, y, t->params.m, sh->a_off[l], g->n, g->n, d, el, er)) !=
          HS_OK ||
      (st = hs__k_gat_softmax(&t->ks, g->row_ptr, g->col, el, er, g->n, d, as, ae)) != HS_OK ||
      (st = hs__k_gat_agg_fwd(&t->ks, g->row_ptr, g->col, y, as, ae, g->n, d, z)) != HS_OK ||
      (last && (st = hs__k_gat_head_mean(&t->ks, z, g->n, d, out)) != HS_OK))
    return st;
  return hs__k_bias_act(&t->ks, out, g->n, sh->dims[l + 1], t->params.m, sh->b_off[l], !last,
                        0.0f, 1.0f, 0, 0, 0, 0);
}
