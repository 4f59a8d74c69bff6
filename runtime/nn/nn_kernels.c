/* Kernel sets and the launchers of the shared training kernels (see
 * nn_kernels.h). */
#include <string.h>

#include "hs_programs.h"
#include "nn/model.h"
#include "nn/nn_kernels.h"

static const char *const shared_names[HS_K_MODEL] = {
    [HS_K_TR_COUNT] = "hs_tr_count",         [HS_K_SCAN_SUMS] = "hs_scan_sums",
    [HS_K_SCAN_OFFSETS] = "hs_scan_offsets", [HS_K_SCAN_APPLY] = "hs_scan_apply",
    [HS_K_TR_FILL] = "hs_tr_fill",           [HS_K_TR_FILL_EID] = "hs_tr_fill_eid",
    [HS_K_EDGE_DST] = "hs_edge_dst",         [HS_K_TR_SORT] = "hs_tr_sort",
    [HS_K_BIAS_ACT] = "hs_bias_act_fwd",     [HS_K_ACT_BWD] = "hs_act_bwd",
    [HS_K_COLSUM_PART] = "hs_colsum_part",   [HS_K_COLSUM_FINAL] = "hs_colsum_final",
    [HS_K_SOFTMAX_CE] = "hs_softmax_ce",     [HS_K_LOSS_REDUCE] = "hs_loss_reduce",
    [HS_K_ADAM] = "hs_adam",                 [HS_K_SGD] = "hs_sgd",
};

enum { DEFAULT_WG = 64 };

hs_status hs__kset_create(const hs_ctx *ctx, const hs_dev *dev, cl_command_queue q,
                          const hs_train_program *p, size_t wg, hs_kset *out) {
  memset(out, 0, sizeof *out);
  out->q = q;
  if (p->n_kernels < 0 || HS_K_MODEL + p->n_kernels > HS_K_MAX)
    return hs__fail(HS_ERR_INVALID_ARG, "training program: %d model kernels (at most %d)",
                    p->n_kernels, HS_K_MAX - HS_K_MODEL);
  double t0 = hs__now();
  hs_status st = hs__program_get(ctx, dev, (hs_prog)p->prog, &out->program);
  if (st != HS_OK) return st;
  hs__log(HS_LOG_TRAIN, "training program %s on '%s' ready in %.2f s",
          hs__program_def_of((hs_prog)p->prog)->name, dev->info.name, hs__now() - t0);
  out->n_kernels = HS_K_MODEL + p->n_kernels;
  size_t want = wg ? wg : DEFAULT_WG;
  for (int i = 0; i < out->n_kernels; i++) {
    const char *name = i < HS_K_MODEL ? shared_names[i] : p->kernels[i - HS_K_MODEL];
    out->names[i] = name;
    if ((st = hs__kernel_create(out->program, name, dev, &out->k[i])) != HS_OK) {
      hs__kset_release(out);
      return st;
    }
    size_t lim = hs__kernel_max_wg(out->k[i], dev);
    out->wg[i] = want > lim ? lim : want;
  }
  return HS_OK;
}

void hs__kset_release(hs_kset *ks) {
  for (int i = 0; i < HS_K_MAX; i++) hs__kernel_release(&ks->k[i]);
  hs__program_release(&ks->program);
  ks->n_kernels = 0;
}

hs_status hs__kset_run(hs_kset *ks, hs_train_phase ph, int id, size_t g0, size_t g1,
                       const hs_karg *args, int n_args) {
  if (id < 0 || id >= ks->n_kernels || !ks->k[id])
    return hs__fail(HS_ERR_STATE, "training kernel %d is not in this program", id);
  return hs__kset_launch(ks, ph, ks->names[id], ks->k[id], ks->wg[id], g0, g1, args, n_args);
}

hs_status hs__kset_launch(hs_kset *ks, hs_train_phase ph, const char *name, cl_kernel k,
                          size_t wg, size_t g0, size_t g1, const hs_karg *args, int n_args) {
  hs_status st = hs__kernel_args(k, args, n_args);
  if (st != HS_OK) return st;
  cl_event mark = NULL, ev = NULL;
  bool prof = ks->span_open != NULL;
  if (prof && (st = ks->span_open(ks->span_user, &mark)) != HS_OK) return st;
  /* A narrow first dimension (few feature vectors per row) must not leave
   * most of each work-group idle: the rest of the group goes to rows. */
  size_t global[2] = {g0, g1}, local[2] = {wg, 1};
  if (g1 && g0 < local[0]) {
    local[0] = g0 ? g0 : 1;
    local[1] = wg / local[0];
  }
  st = hs__launch(ks->q, k, g1 ? 2 : 1, global, local, 0, NULL, prof ? &ev : NULL);
  if (st != HS_OK) {
    if (mark) hs__events_release(&mark, 1);
    return st;
  }
  if (prof) ks->span_close(ks->span_user, ph, name, mark, ev);
  return HS_OK;
}

/* ---- block transposes -------------------------------------------------------- */

hs_status hs__k_tr_count(hs_kset *ks, cl_mem col, cl_int n_edges, cl_mem counts) {
  hs_karg a[] = {HS_KARG(col), HS_KARG(n_edges), HS_KARG(counts)};
  return hs__kset_run(ks, HS_PHASE_AGG, HS_K_TR_COUNT, (size_t)n_edges, 0, a, 3);
}

hs_status hs__k_scan_sums(hs_kset *ks, cl_mem x, cl_int n, cl_mem sums) {
  hs_karg a[] = {HS_KARG(x), HS_KARG(n), HS_KARG(sums)};
  return hs__kset_run(ks, HS_PHASE_AGG, HS_K_SCAN_SUMS, hs__scan_chunks((size_t)n), 0, a, 3);
}

hs_status hs__k_scan_offsets(hs_kset *ks, cl_mem sums, cl_int n, cl_mem ptr) {
  hs_karg a[] = {HS_KARG(sums), HS_KARG(n), HS_KARG(ptr)};
  return hs__kset_run(ks, HS_PHASE_AGG, HS_K_SCAN_OFFSETS, 1, 0, a, 3);
}

hs_status hs__k_scan_apply(hs_kset *ks, cl_mem x, cl_int n, cl_mem sums, cl_mem ptr) {
  hs_karg a[] = {HS_KARG(x), HS_KARG(n), HS_KARG(sums), HS_KARG(ptr)};
  return hs__kset_run(ks, HS_PHASE_AGG, HS_K_SCAN_APPLY, hs__scan_chunks((size_t)n), 0, a, 4);
}

static hs_status fill(hs_kset *ks, int id, cl_mem row_ptr, cl_mem col, cl_int n_dst,
                      cl_mem t_ptr, cl_mem cursor, cl_mem out) {
  hs_karg a[] = {HS_KARG(row_ptr), HS_KARG(col), HS_KARG(n_dst),
                 HS_KARG(t_ptr),   HS_KARG(cursor), HS_KARG(out)};
  return hs__kset_run(ks, HS_PHASE_AGG, id, (size_t)n_dst, 0, a, 6);
}

hs_status hs__k_tr_fill(hs_kset *ks, cl_mem row_ptr, cl_mem col, cl_int n_dst, cl_mem t_ptr,
                        cl_mem cursor, cl_mem t_dst) {
  return fill(ks, HS_K_TR_FILL, row_ptr, col, n_dst, t_ptr, cursor, t_dst);
}

hs_status hs__k_tr_fill_eid(hs_kset *ks, cl_mem row_ptr, cl_mem col, cl_int n_dst, cl_mem t_ptr,
                            cl_mem cursor, cl_mem t_eid) {
  return fill(ks, HS_K_TR_FILL_EID, row_ptr, col, n_dst, t_ptr, cursor, t_eid);
}

hs_status hs__k_edge_dst(hs_kset *ks, cl_mem row_ptr, cl_int n_dst, cl_mem edst) {
  hs_karg a[] = {HS_KARG(row_ptr), HS_KARG(n_dst), HS_KARG(edst)};
  return hs__kset_run(ks, HS_PHASE_AGG, HS_K_EDGE_DST, (size_t)n_dst, 0, a, 3);
}

hs_status hs__k_tr_sort(hs_kset *ks, cl_mem t_ptr, cl_int n_src, cl_mem t_list) {
  hs_karg a[] = {HS_KARG(t_ptr), HS_KARG(n_src), HS_KARG(t_list)};
  return hs__kset_run(ks, HS_PHASE_AGG, HS_K_TR_SORT, (size_t)n_src, 0, a, 3);
}

hs_status hs__nn_transpose(hs_kset *ks, cl_mem row_ptr, cl_mem col, cl_int n_dst, cl_int n_src,
                           cl_int n_edges, const hs_tr_bufs *b, bool edge_ids, bool counts_only) {
  cl_int zero = 0;
  size_t cursor_bytes = (size_t)n_src * 4;
  hs_status st;
  if ((st = hs__mem_fill(ks->q, b->cursor, &zero, 4, 0, cursor_bytes, 0, NULL, NULL)) != HS_OK ||
      (st = hs__k_tr_count(ks, col, n_edges, b->cursor)) != HS_OK ||
      (st = hs__k_scan_sums(ks, b->cursor, n_src, b->sums)) != HS_OK ||
      (st = hs__k_scan_offsets(ks, b->sums, n_src, b->t_ptr)) != HS_OK ||
      (st = hs__k_scan_apply(ks, b->cursor, n_src, b->sums, b->t_ptr)) != HS_OK)
    return st;
  if (counts_only) return HS_OK;
  if ((st = hs__mem_fill(ks->q, b->cursor, &zero, 4, 0, cursor_bytes, 0, NULL, NULL)) != HS_OK)
    return st;
  st = edge_ids ? hs__k_tr_fill_eid(ks, row_ptr, col, n_dst, b->t_ptr, b->cursor, b->t_list)
                : hs__k_tr_fill(ks, row_ptr, col, n_dst, b->t_ptr, b->cursor, b->t_list);
  if (st == HS_OK) st = hs__k_tr_sort(ks, b->t_ptr, n_src, b->t_list);
  return st;
}

/* ---- element-wise, column sums, loss ------------------------------------------ */

hs_status hs__k_bias_act(hs_kset *ks, cl_mem z, cl_int n, cl_int d, cl_mem params,
                         cl_ulong bias_off, cl_int relu, float p, float scale, cl_ulong seed,
                         cl_uint epoch, cl_uint batch, cl_uint layer) {
  hs_karg a[] = {HS_KARG(z),     HS_KARG(n),        HS_KARG(d),     HS_KARG(params),
                 HS_KARG(bias_off), HS_KARG(relu),  HS_KARG(p),     HS_KARG(scale),
                 HS_KARG(seed),  HS_KARG(epoch),    HS_KARG(batch), HS_KARG(layer)};
  size_t groups = ((size_t)n * (size_t)d + HS_ACT_ELEMS - 1) / HS_ACT_ELEMS;
  return hs__kset_run(ks, HS_PHASE_ELEM, HS_K_BIAS_ACT, groups, 0, a, 12);
}

hs_status hs__k_act_bwd(hs_kset *ks, cl_mem h, cl_ulong total, float scale, cl_mem dh) {
  hs_karg a[] = {HS_KARG(h), HS_KARG(total), HS_KARG(scale), HS_KARG(dh)};
  return hs__kset_run(ks, HS_PHASE_ELEM, HS_K_ACT_BWD, (size_t)total, 0, a, 4);
}

hs_status hs__k_colsum_part(hs_kset *ks, cl_mem x, cl_int n, cl_int d, cl_mem part) {
  hs_karg a[] = {HS_KARG(x), HS_KARG(n), HS_KARG(d), HS_KARG(part)};
  return hs__kset_run(ks, HS_PHASE_ELEM, HS_K_COLSUM_PART, hs__vecs((size_t)d),
                      hs__colsum_chunks((size_t)n), a, 4);
}

hs_status hs__k_colsum_final(hs_kset *ks, cl_mem part, cl_int n_chunks, cl_int d, cl_mem out,
                             cl_ulong out_off) {
  hs_karg a[] = {HS_KARG(part), HS_KARG(n_chunks), HS_KARG(d), HS_KARG(out), HS_KARG(out_off)};
  return hs__kset_run(ks, HS_PHASE_ELEM, HS_K_COLSUM_FINAL, (size_t)d, 0, a, 5);
}

hs_status hs__nn_colsum(hs_kset *ks, cl_mem x, cl_int n, cl_int d, cl_mem part, cl_mem out,
                        cl_ulong out_off) {
  hs_status st = hs__k_colsum_part(ks, x, n, d, part);
  if (st == HS_OK)
    st = hs__k_colsum_final(ks, part, (cl_int)hs__colsum_chunks((size_t)n), d, out, out_off);
  return st;
}

hs_status hs__k_softmax_ce(hs_kset *ks, cl_mem z, cl_mem params, cl_ulong bias_off, cl_mem labels,
                           cl_int n, cl_int c, float inv_n, cl_mem dz, cl_mem loss_rows,
                           cl_mem correct_rows) {
  hs_karg a[] = {HS_KARG(z),  HS_KARG(params), HS_KARG(bias_off), HS_KARG(labels),
                 HS_KARG(n),  HS_KARG(c),      HS_KARG(inv_n),    HS_KARG(dz),
                 HS_KARG(loss_rows), HS_KARG(correct_rows)};
  return hs__kset_run(ks, HS_PHASE_ELEM, HS_K_SOFTMAX_CE, (size_t)n, 0, a, 10);
}

hs_status hs__k_loss_reduce(hs_kset *ks, cl_mem loss_rows, cl_mem correct_rows, cl_int n,
                            cl_mem loss_out, cl_mem correct_out, cl_int slot) {
  hs_karg a[] = {HS_KARG(loss_rows), HS_KARG(correct_rows), HS_KARG(n),
                 HS_KARG(loss_out),  HS_KARG(correct_out),  HS_KARG(slot)};
  return hs__kset_run(ks, HS_PHASE_ELEM, HS_K_LOSS_REDUCE, 1, 0, a, 6);
}

/* ---- optimizers ------------------------------------------------------------------- */

hs_status hs__k_adam(hs_kset *ks, cl_mem p, cl_mem g, cl_mem m, cl_mem v, cl_ulong n,
                     const hs_optim_coef *c) {
  hs_karg a[] = {HS_KARG(p),        HS_KARG(g),
                 HS_KARG(m),        HS_KARG(v),
                 HS_KARG(n),        HS_KARG(c->lr),
                 HS_KARG(c->l2),    HS_KARG(c->decay),
                 HS_KARG(c->beta1), HS_KARG(c->beta2),
                 HS_KARG(c->one_minus_beta1), HS_KARG(c->one_minus_beta2),
                 HS_KARG(c->inv_sqrt_bc2),    HS_KARG(c->eps)};
  return hs__kset_run(ks, HS_PHASE_OPTIM, HS_K_ADAM, (size_t)n, 0, a, 14);
}

hs_status hs__k_sgd(hs_kset *ks, cl_mem p, cl_mem g, cl_mem m, cl_ulong n, const hs_optim_coef *c) {
  hs_karg a[] = {HS_KARG(p),     HS_KARG(g),     HS_KARG(m),        HS_KARG(n),
                 HS_KARG(c->lr), HS_KARG(c->l2), HS_KARG(c->decay), HS_KARG(c->momentum)};
  return hs__kset_run(ks, HS_PHASE_OPTIM, HS_K_SGD, (size_t)n, 0, a, 8);
}
