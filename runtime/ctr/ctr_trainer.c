/* The CTR training step on a device (see ctr_trainer.h). */
#include <stdlib.h>
#include <string.h>

#include "ctr/ctr_trainer.h"
#include "hs_launch.h"
#include "hs_programs.h"
#include "nn/model.h"
#include "nn/nn_kernels.h"

/* The CTR kernels (cl_kernels/ctr.cl), after the shared training kernels
 * of the program (train_elem.cl: bias + ReLU, its gradient, column sums;
 * train_optim.cl: the dense optimizers), launched through their typed
 * launchers (nn/nn_kernels.h). */
enum {
  K_HEAD = HS_K_MODEL,
  K_LOSS,
  K_LOSS_REDUCE,
  K_SIGMOID,
  K_HEAD_PREP,
  K_DEEP_IN,
  K_LR_BWD,
  K_FM_ROWGRAD,
  K_INTERACT,
  K_INTERACT_BWD,
  K_SEGMENT_SUM,
  K_FM_ROWGRAD_FIELDS,
  K_RELU_BWD_COLSUM,
  K_END
};

static const char *const ctr_kernels[K_END - HS_K_MODEL] = {
    "hs_ctr_head",     "hs_ctr_loss",    "hs_ctr_loss_reduce", "hs_ctr_sigmoid",
    "hs_ctr_head_prep", "hs_ctr_deep_in", "hs_ctr_lr_bwd",      "hs_ctr_fm_rowgrad",
    "hs_ctr_interact", "hs_ctr_interact_bwd", "hs_ctr_segment_sum", "hs_ctr_fm_rowgrad_fields",
    "hs_ctr_relu_bwd_colsum_part",
};

enum { STATS_RING = 256 };

typedef struct dbuf {
  cl_mem m;
  size_t cap;
} dbuf;

struct hs_ctr_trainer {
  const hs_ctx *ctx;
  hs_dev dev;
  cl_command_queue q;
  hs_ctr_trainer_opts opts;
  hs_ctr_model_cfg cfg;
  hs_ctr_layout lay;
  uint64_t step;
  hs_kset ks;
  hs_gemm *gemm;
  dbuf params, grads, mom1, mom2, ring;
  /* The batch. */
  int32_t n, n_unique;
  bool uploaded, has_labels, one_field, has_occ;
  dbuf dense, rows, idx, occ_ptr, occ, labels;
  /* Activations and gradients. */
  dbuf out[HS_CTR_MAX_LIN], first_in, inter;
  dbuf logit, loss_rows, dlogit, head_m, part, pp[2], dfirst, dinter, dz, dE, dU;
  dbuf fm_s; /* DeepFM: the head's field sums (B x D), kept for the rows' gradient */
  int ring_first, ring_pending;
  double loss_overflow;
  int64_t steps_overflow;
};

/* ---- helpers ----------------------------------------------------------------------- */

static hs_status reserve(hs_ctr_trainer *t, dbuf *b, size_t count, size_t elem) {
  size_t bytes;
  if (!hs__mul_size(count, elem, &bytes))
    return hs__fail(HS_ERR_RANGE, "CTR trainer: buffer of %zu x %zu bytes overflows", count, elem);
  if (b->m && b->cap >= bytes) return HS_OK;
  return hs__mem_reserve(t->ctx, CL_MEM_READ_WRITE, bytes, &b->m, &b->cap);
}

static void drop(dbuf *b) {
  hs__mem_release(&b->m);
  b->cap = 0;
}

static hs_status gemm(hs_ctr_trainer *t, const hs_gemm_op *op) {
  return hs__gemm_run(t->gemm, op, 0, NULL, NULL);
}

/* ---- the CTR kernels' launchers (one each) -------------------------------------------- */

static hs_status launch_head(hs_ctr_trainer *t, cl_mem dense, cl_int nd, cl_mem rows, cl_int R,
                             cl_mem idx, cl_int F, cl_int col, cl_int dim, cl_mem params,
                             cl_ulong wc, cl_mem deep, cl_int has_deep, cl_int n, cl_mem logit,
                             cl_mem fm_s, cl_int store_s) {
  hs_karg a[] = {HS_KARG(dense), HS_KARG(nd),     HS_KARG(rows),  HS_KARG(R),
                 HS_KARG(idx),   HS_KARG(F),      HS_KARG(col),   HS_KARG(dim),
                 HS_KARG(params), HS_KARG(wc),    HS_KARG(deep),  HS_KARG(has_deep),
                 HS_KARG(n),     HS_KARG(logit),  HS_KARG(fm_s),  HS_KARG(store_s)};
  /* four examples a work-item (ctr.cl) */
  return hs__kset_run(&t->ks, HS_PHASE_ELEM, K_HEAD, ((size_t)n + 3) / 4, 0, a, 16);
}

/* The head; `store_s`: DeepFM's field sums into fm_s for the backward. */
static hs_status k_head(hs_ctr_trainer *t, cl_int col, cl_int dim, cl_mem deep, cl_int has_deep,
                        bool store_s) {
  return launch_head(t, t->dense.m, t->cfg.n_dense, t->rows.m, t->lay.row, t->idx.m,
                     t->cfg.n_fields, col, dim, t->params.m, t->lay.lin_w, deep, has_deep, t->n,
                     t->logit.m, store_s ? t->fm_s.m : t->logit.m, store_s);
}

static hs_status k_loss(hs_ctr_trainer *t, cl_int slot) {
  cl_int n = t->n;
  float inv_n = 1.0f / (float)n;
  hs_karg a[] = {HS_KARG(t->logit.m), HS_KARG(t->labels.m), HS_KARG(n), HS_KARG(inv_n),
                 HS_KARG(t->loss_rows.m), HS_KARG(t->dlogit.m)};
  hs_karg r[] = {HS_KARG(t->loss_rows.m), HS_KARG(n), HS_KARG(t->ring.m), HS_KARG(slot)};
  hs_status st = hs__kset_run(&t->ks, HS_PHASE_ELEM, K_LOSS, (size_t)n, 0, a, 6);
  return st == HS_OK ? hs__kset_run(&t->ks, HS_PHASE_ELEM, K_LOSS_REDUCE, 1, 0, r, 4) : st;
}

static hs_status k_sigmoid(hs_ctr_trainer *t, cl_mem out) {
  cl_int n = t->n;
  hs_karg a[] = {HS_KARG(t->logit.m), HS_KARG(n), HS_KARG(out)};
  return hs__kset_run(&t->ks, HS_PHASE_ELEM, K_SIGMOID, (size_t)n, 0, a, 3);
}

static hs_status k_head_prep(hs_ctr_trainer *t) {
  cl_int n = t->n, nd = t->cfg.n_dense;
  hs_karg a[] = {HS_KARG(t->dense.m), HS_KARG(t->dlogit.m), HS_KARG(n), HS_KARG(nd),
                 HS_KARG(t->head_m.m)};
  return hs__kset_run(&t->ks, HS_PHASE_ELEM, K_HEAD_PREP, (size_t)n, 0, a, 5);
}

static hs_status k_deep_in(hs_ctr_trainer *t) {
  cl_int R = t->lay.row, F = t->cfg.n_fields, D = t->cfg.dim, nd = t->cfg.n_dense, n = t->n;
  hs_karg a[] = {HS_KARG(t->rows.m), HS_KARG(R), HS_KARG(t->idx.m), HS_KARG(F), HS_KARG(D),
                 HS_KARG(t->dense.m), HS_KARG(nd), HS_KARG(n), HS_KARG(t->first_in.m)};
  return hs__kset_run(&t->ks, HS_PHASE_AGG, K_DEEP_IN, (size_t)n, 0, a, 9);
}

static hs_status k_lr_bwd(hs_ctr_trainer *t) {
  cl_int F = t->cfg.n_fields, occ = t->n * F;
  hs_karg a[] = {HS_KARG(t->dlogit.m), HS_KARG(F), HS_KARG(occ), HS_KARG(t->dE.m)};
  return hs__kset_run(&t->ks, HS_PHASE_AGG, K_LR_BWD, (size_t)occ, 0, a, 4);
}

static hs_status launch_fm_rowgrad(hs_ctr_trainer *t, cl_mem rows, cl_int R, cl_mem fm_s,
                                   cl_int D, cl_mem dlogit, cl_mem d_in, cl_int w, cl_int F,
                                   cl_mem occ_ptr, cl_mem occ, cl_int U, cl_mem out) {
  hs_karg a[] = {HS_KARG(rows),   HS_KARG(R),     HS_KARG(fm_s), HS_KARG(D),
                 HS_KARG(dlogit), HS_KARG(d_in),  HS_KARG(w),    HS_KARG(F),
                 HS_KARG(occ_ptr), HS_KARG(occ),  HS_KARG(U),    HS_KARG(out)};
  return hs__kset_run(&t->ks, HS_PHASE_AGG, K_FM_ROWGRAD, (size_t)U, 0, a, 12);
}

/* hs_ctr_fm_rowgrad_fields: `parts` work-items of one (ctr.cl), into
 * `out` zeroed first. */
static hs_status launch_fm_rowgrad_fields(hs_ctr_trainer *t, cl_mem rows, cl_int R, cl_mem fm_s,
                                          cl_int D, cl_mem dlogit, cl_mem d_in, cl_int w, cl_int F,
                                          cl_mem idx, cl_int n, cl_int U, cl_int parts, cl_mem out) {
  float zero = 0.0f;
  hs_status st = hs__mem_fill(t->q, out, &zero, sizeof zero, 0, (size_t)U * (size_t)R * 4, 0,
                              NULL, NULL);
  if (st != HS_OK) return st;
  hs_karg a[] = {HS_KARG(rows),   HS_KARG(R),   HS_KARG(fm_s), HS_KARG(D),
                 HS_KARG(dlogit), HS_KARG(d_in), HS_KARG(w),   HS_KARG(F),
                 HS_KARG(idx),    HS_KARG(n),   HS_KARG(parts), HS_KARG(out)};
  int id = K_FM_ROWGRAD_FIELDS;
  return hs__kset_launch(&t->ks, HS_PHASE_AGG, t->ks.names[id], t->ks.k[id], 1, (size_t)parts, 0,
                         a, 12);
}

/* Work-items of hs_ctr_fm_rowgrad_fields for the batch uploaded, one per
 * compute unit; 0: the lists' kernel. Fields for a CPU device, where the
 * lists' random reads of d_in wait on memory (the row gradients' share of
 * a 2 M-row DeepFM epoch's CPU samples 5.2% with the lists, 3.9% by
 * fields, on 2 cores), when the batch allows it (hs_ctr_batch.one_field)
 * and each work-item has at least 4 fields: with fewer, a work-item's
 * reads of an example's d_in no longer run on, and the lists spread the
 * work over more work-items. The same bits either way. */
static cl_int rowgrad_parts_for(const hs_ctr_trainer *t, bool one_field) {
  int want = t->opts.rowgrad_parts;
  if (t->cfg.kind != HS_CTR_DEEPFM || !one_field || want < 0) return 0;
  if (want > 0) return want < t->cfg.n_fields ? want : t->cfg.n_fields;
  if (t->dev.info.type != HS_DEVICE_CPU) return 0;
  cl_int cu = t->dev.info.compute_units > 0 ? (cl_int)t->dev.info.compute_units : 1;
  return 4 * cu <= t->cfg.n_fields ? cu : 0;
}

static cl_int rowgrad_parts(const hs_ctr_trainer *t) { return rowgrad_parts_for(t, t->one_field); }

bool hs__ctr_trainer_needs_occ(const hs_ctr_trainer *t) { return rowgrad_parts_for(t, true) == 0; }

static hs_status k_fm_rowgrad(hs_ctr_trainer *t) {
  cl_int parts = rowgrad_parts(t);
  if (parts > 0)
    return launch_fm_rowgrad_fields(t, t->rows.m, t->lay.row, t->fm_s.m, t->cfg.dim, t->dlogit.m,
                                    t->dfirst.m, t->lay.deep_in, t->cfg.n_fields, t->idx.m, t->n,
                                    t->n_unique, parts, t->dU.m);
  return launch_fm_rowgrad(t, t->rows.m, t->lay.row, t->fm_s.m, t->cfg.dim, t->dlogit.m,
                           t->dfirst.m, t->lay.deep_in, t->cfg.n_fields, t->occ_ptr.m, t->occ.m,
                           t->n_unique, t->dU.m);
}

/* Interaction kernels: work-item b is example b (cl_kernels/ctr.cl). The
 * forward's transposed copy holds 32 vectors (its IJ): z and at most
 * HS_CTR_SPARSE fields, which hs__ctr_layout enforces. */
_Static_assert(HS_CTR_SPARSE + 1 <= 32, "the interaction kernel holds 32 vectors (ctr.cl IJ)");
static hs_status launch_interact(hs_ctr_trainer *t, cl_mem z, cl_mem rows, cl_mem idx, cl_int F,
                                 cl_int D, cl_int n, cl_mem out) {
  hs_karg a[] = {HS_KARG(z), HS_KARG(rows), HS_KARG(idx), HS_KARG(F), HS_KARG(D), HS_KARG(n),
                 HS_KARG(out)};
  return hs__kset_run(&t->ks, HS_PHASE_AGG, K_INTERACT, (size_t)n, 0, a, 7);
}

static hs_status launch_interact_bwd(hs_ctr_trainer *t, cl_mem z, cl_mem rows, cl_mem idx,
                                     cl_int F, cl_int D, cl_mem dout, cl_int n, cl_mem dz,
                                     cl_mem dE) {
  hs_karg a[] = {HS_KARG(z), HS_KARG(rows), HS_KARG(idx), HS_KARG(F), HS_KARG(D),
                 HS_KARG(dout), HS_KARG(n), HS_KARG(dz), HS_KARG(dE)};
  return hs__kset_run(&t->ks, HS_PHASE_AGG, K_INTERACT_BWD, (size_t)n, 0, a, 9);
}

static hs_status k_interact(hs_ctr_trainer *t, cl_mem z) {
  return launch_interact(t, z, t->rows.m, t->idx.m, t->cfg.n_fields, t->cfg.dim, t->n,
                         t->inter.m);
}

static hs_status k_interact_bwd(hs_ctr_trainer *t, cl_mem z) {
  return launch_interact_bwd(t, z, t->rows.m, t->idx.m, t->cfg.n_fields, t->cfg.dim,
                             t->dinter.m, t->n, t->dz.m, t->dE.m);
}

static hs_status launch_segment_sum(hs_ctr_trainer *t, cl_mem dE, cl_int R, cl_mem occ_ptr,
                                    cl_mem occ, cl_int U, cl_mem out) {
  hs_karg a[] = {HS_KARG(dE), HS_KARG(R), HS_KARG(occ_ptr), HS_KARG(occ), HS_KARG(U),
                 HS_KARG(out)};
  return hs__kset_run(&t->ks, HS_PHASE_AGG, K_SEGMENT_SUM, (size_t)U, 0, a, 6);
}

static hs_status k_segment_sum(hs_ctr_trainer *t) {
  return launch_segment_sum(t, t->dE.m, t->lay.row, t->occ_ptr.m, t->occ.m, t->n_unique,
                            t->dU.m);
}

/* Column sums of x (n x d) into grads[off..off + d) (hs__ref_colsum's
 * association). */
static hs_status colsum(hs_ctr_trainer *t, cl_mem x, int32_t n, int32_t d, size_t off) {
  hs_status st = reserve(t, &t->part, hs__colsum_chunks((size_t)n) * (size_t)d, 4);
  if (st != HS_OK) return st;
  return hs__nn_colsum(&t->ks, x, n, d, t->part.m, t->grads.m, off);
}

/* A ReLU layer's backward on x (n x d, in place, masked by its output h)
 * and its column sums into grads[off..off + d): hs__k_act_bwd then
 * colsum's bits, x read once (hs_ctr_relu_bwd_colsum_part). */
static hs_status relu_bwd_colsum(hs_ctr_trainer *t, cl_mem h, cl_mem x, int32_t n, int32_t d,
                                 cl_mem out, size_t off) {
  hs_status st = reserve(t, &t->part, hs__colsum_chunks((size_t)n) * (size_t)d, 4);
  if (st != HS_OK) return st;
  cl_int nn = n, dd = d;
  float scale = 1.0f; /* (no dropout) */
  hs_karg a[] = {HS_KARG(h), HS_KARG(x), HS_KARG(nn), HS_KARG(dd), HS_KARG(scale),
                 HS_KARG(t->part.m)};
  if ((st = hs__kset_run(&t->ks, HS_PHASE_ELEM, K_RELU_BWD_COLSUM,
                         ((size_t)d + HS_RELU_COLS - 1) / HS_RELU_COLS,
                         hs__colsum_chunks((size_t)n), a, 6)) != HS_OK)
    return st;
  return hs__k_colsum_final(&t->ks, t->part.m, (cl_int)hs__colsum_chunks((size_t)n), dd, out,
                            off);
}

/* ---- create / destroy ---------------------------------------------------------------- */

hs_status hs__ctr_trainer_create(const hs_ctx *ctx, const hs_dev *dev, cl_command_queue q,
                                 const hs_ctr_model_cfg *cfg, const float *params,
                                 const hs_ctr_trainer_opts *opts, hs_ctr_trainer **out) {
  *out = NULL;
  hs_ctr_trainer *t = calloc(1, sizeof *t);
  if (!t) return hs__fail(HS_ERR_NOMEM, "CTR trainer");
  t->ctx = ctx;
  t->dev = *dev;
  t->q = q;
  if (opts) t->opts = *opts;
  t->cfg = *cfg;
  hs_status st = hs__ctr_layout(cfg, &t->lay);
  if (st != HS_OK) goto fail;
  hs_train_program prog = {.prog = HS_PROG_TRAIN_CTR, .kernels = ctr_kernels,
                           .n_kernels = K_END - HS_K_MODEL};
  if ((st = hs__kset_create(ctx, dev, q, &prog, t->opts.wg, &t->ks)) != HS_OK) goto fail;
  if ((st = hs__gemm_create(ctx, dev, q, t->opts.gemm, t->opts.gemm_threads, &t->gemm)) != HS_OK)
    goto fail;
  /* Products in pieces by shape (a CPU trainer's): the same bits whatever
   * the thread count, and no OpenBLAS thread spinning beside the lookups. */
  hs__gemm_set_pieces(t->gemm, true);
  size_t n = t->lay.n_params;
  if ((st = reserve(t, &t->params, n, 4)) != HS_OK || (st = reserve(t, &t->grads, n, 4)) != HS_OK ||
      (st = reserve(t, &t->mom1, n, 4)) != HS_OK || (st = reserve(t, &t->mom2, n, 4)) != HS_OK ||
      (st = reserve(t, &t->ring, STATS_RING, 4)) != HS_OK)
    goto fail;
  float *init = NULL, *zeros = calloc(n ? n : 1, sizeof(float));
  if (!params) {
    init = malloc((n ? n : 1) * sizeof(float));
    if (init) hs__ctr_init_params(cfg, &t->lay, init);
    params = init;
  }
  if (!zeros || !params) st = hs__fail(HS_ERR_NOMEM, "CTR trainer: %zu parameters", n);
  else st = hs__ctr_trainer_write_state(t, params, zeros, zeros, 0);
  free(init);
  free(zeros);
  if (st != HS_OK) goto fail;
  *out = t;
  return HS_OK;
fail:
  hs__ctr_trainer_destroy(t);
  return st;
}

void hs__ctr_trainer_destroy(hs_ctr_trainer *t) {
  if (!t) return;
  if (t->q) hs__queue_finish(t->q);
  dbuf *all[] = {&t->params, &t->grads,  &t->mom1,   &t->mom2,    &t->ring,    &t->dense,
                 &t->rows,   &t->idx,    &t->occ_ptr, &t->occ,    &t->labels,  &t->first_in,
                 &t->inter,  &t->logit,  &t->loss_rows, &t->dlogit, &t->head_m, &t->part,
                 &t->pp[0],  &t->pp[1],  &t->dfirst, &t->dinter,  &t->dz,      &t->dE,
                 &t->dU,     &t->fm_s};
  for (size_t i = 0; i < HS_ARRAY_LEN(all); i++) drop(all[i]);
  for (int l = 0; l < HS_CTR_MAX_LIN; l++) drop(&t->out[l]);
  hs__gemm_destroy(t->gemm);
  hs__kset_release(&t->ks);
  free(t);
}

const hs_ctr_layout *hs__ctr_trainer_layout(const hs_ctr_trainer *t) { return &t->lay; }
hs_gemm_kind hs__ctr_trainer_gemm_kind(const hs_ctr_trainer *t) { return hs__gemm_kind_of(t->gemm); }

hs_status hs__ctr_trainer_write_state(hs_ctr_trainer *t, const float *params, const float *m,
                                      const float *v, uint64_t step) {
  size_t bytes = t->lay.n_params * 4;
  hs_status st;
  if ((st = hs__mem_write(t->q, t->params.m, true, 0, bytes, params, 0, NULL, NULL)) != HS_OK ||
      (st = hs__mem_write(t->q, t->mom1.m, true, 0, bytes, m, 0, NULL, NULL)) != HS_OK ||
      (st = hs__mem_write(t->q, t->mom2.m, true, 0, bytes, v, 0, NULL, NULL)) != HS_OK)
    return st;
  t->step = step;
  return HS_OK;
}

hs_status hs__ctr_trainer_read_state(hs_ctr_trainer *t, float *params, float *m, float *v,
                                     uint64_t *step) {
  size_t bytes = t->lay.n_params * 4;
  hs_status st;
  if ((params && (st = hs__mem_read(t->q, t->params.m, true, 0, bytes, params, 0, NULL, NULL)) != HS_OK) ||
      (m && (st = hs__mem_read(t->q, t->mom1.m, true, 0, bytes, m, 0, NULL, NULL)) != HS_OK) ||
      (v && (st = hs__mem_read(t->q, t->mom2.m, true, 0, bytes, v, 0, NULL, NULL)) != HS_OK))
    return st;
  if (step) *step = t->step;
  return HS_OK;
}

/* ---- the batch ------------------------------------------------------------------------- */

static hs_status reserve_batch(hs_ctr_trainer *t, int32_t n, int32_t u) {
  const hs_ctr_layout *L = &t->lay;
  const hs_ctr_model_cfg *c = &t->cfg;
  size_t B = (size_t)n, U = (size_t)u, F = (size_t)c->n_fields, R = (size_t)L->row;
  size_t maxw = (size_t)c->dim + 1;
  for (int l = 0; l < L->n_lin; l++) {
    if ((size_t)L->lin[l].in > maxw) maxw = (size_t)L->lin[l].in;
    if ((size_t)L->lin[l].out > maxw) maxw = (size_t)L->lin[l].out;
  }
  hs_status st;
  if ((st = reserve(t, &t->dense, B * (size_t)c->n_dense, 4)) != HS_OK ||
      (st = reserve(t, &t->rows, U * R, 4)) != HS_OK || (st = reserve(t, &t->idx, B * F, 4)) != HS_OK ||
      (st = reserve(t, &t->occ_ptr, U + 1, 4)) != HS_OK || (st = reserve(t, &t->occ, B * F, 4)) != HS_OK ||
      (st = reserve(t, &t->labels, B, 4)) != HS_OK || (st = reserve(t, &t->logit, B, 4)) != HS_OK ||
      (st = reserve(t, &t->loss_rows, B, 4)) != HS_OK || (st = reserve(t, &t->dlogit, B, 4)) != HS_OK ||
      (st = reserve(t, &t->head_m, B * ((size_t)c->n_dense + 1), 4)) != HS_OK ||
      (st = reserve(t, &t->pp[0], B * maxw, 4)) != HS_OK || (st = reserve(t, &t->pp[1], B * maxw, 4)) != HS_OK ||
      (st = reserve(t, &t->dU, U * R, 4)) != HS_OK)
    return st;
  /* DeepFM sums its rows' gradients from the field sums (fm_s), without
   * one gradient row per occurrence. */
  if (c->kind != HS_CTR_DEEPFM && (st = reserve(t, &t->dE, B * F * R, 4)) != HS_OK) return st;
  for (int l = 0; l < L->n_lin; l++)
    if ((st = reserve(t, &t->out[l], B, (size_t)L->lin[l].out * 4)) != HS_OK) return st;
  if (c->kind == HS_CTR_DEEPFM &&
      ((st = reserve(t, &t->first_in, B, (size_t)L->deep_in * 4)) != HS_OK ||
       (st = reserve(t, &t->dfirst, B, (size_t)L->deep_in * 4)) != HS_OK ||
       (st = reserve(t, &t->fm_s, B, (size_t)c->dim * 4)) != HS_OK))
    return st;
  if (c->kind == HS_CTR_DLRM &&
      ((st = reserve(t, &t->inter, B, (size_t)L->deep_in * 4)) != HS_OK ||
       (st = reserve(t, &t->dinter, B, (size_t)L->deep_in * 4)) != HS_OK ||
       (st = reserve(t, &t->dz, B, (size_t)c->dim * 4)) != HS_OK))
    return st;
  return HS_OK;
}

hs_status hs__ctr_trainer_upload(hs_ctr_trainer *t, const hs_ctr_batch *b, bool checked) {
  t->uploaded = false;
  hs_status st = checked ? HS_OK : hs__ctr_batch_validate(&t->lay, &t->cfg, b);
  if (st != HS_OK) return st;
  if ((st = reserve_batch(t, b->n, b->n_unique)) != HS_OK) return st;
  size_t B = (size_t)b->n, U = (size_t)b->n_unique, F = (size_t)t->cfg.n_fields;
  size_t R = (size_t)t->lay.row;
  if ((st = hs__mem_write(t->q, t->dense.m, false, 0, B * (size_t)t->cfg.n_dense * 4, b->dense, 0,
                          NULL, NULL)) != HS_OK ||
      (st = hs__mem_write(t->q, t->rows.m, false, 0, U * R * 4, b->rows, 0, NULL, NULL)) != HS_OK ||
      (st = hs__mem_write(t->q, t->idx.m, false, 0, B * F * 4, b->idx, 0, NULL, NULL)) != HS_OK)
    return st;
  t->has_occ = b->occ != NULL;
  if (t->has_occ &&
      ((st = hs__mem_write(t->q, t->occ_ptr.m, false, 0, (U + 1) * 4, b->occ_ptr, 0, NULL, NULL)) != HS_OK ||
       (st = hs__mem_write(t->q, t->occ.m, false, 0, B * F * 4, b->occ, 0, NULL, NULL)) != HS_OK))
    return st;
  t->has_labels = b->labels != NULL;
  t->one_field = b->one_field;
  if (b->labels &&
      (st = hs__mem_write(t->q, t->labels.m, false, 0, B * 4, b->labels, 0, NULL, NULL)) != HS_OK)
    return st;
  t->n = b->n;
  t->n_unique = b->n_unique;
  t->uploaded = true;
  return HS_OK;
}

/* ---- passes ------------------------------------------------------------------------------- */

static cl_mem in_of(hs_ctr_trainer *t, int l) {
  if (l == 0) return t->cfg.kind == HS_CTR_DLRM ? t->dense.m : t->first_in.m;
  if (t->cfg.kind == HS_CTR_DLRM && l == t->lay.first_top) return t->inter.m;
  return t->out[l - 1].m;
}

static hs_status mlp_forward(hs_ctr_trainer *t, int first, int last) {
  cl_int n = t->n;
  hs_status st;
  for (int l = first; l < last; l++) {
    const hs_ctr_lin *x = &t->lay.lin[l];
    hs_gemm_op op = {.m = (size_t)n, .n = (size_t)x->out, .k = (size_t)x->in, .alpha = 1.0f,
                     .a = in_of(t, l), .lda = (size_t)x->in, .b = t->params.m, .b_off = x->w,
                     .ldb = (size_t)x->out, .c = t->out[l].m, .ldc = (size_t)x->out};
    if ((st = gemm(t, &op)) != HS_OK) return st;
    /* Bias, ReLU when the layer has it; no dropout. */
    if ((st = hs__k_bias_act(&t->ks, t->out[l].m, n, x->out, t->params.m, x->b, x->relu, 0.0f,
                             1.0f, 0, 0, 0, 0)) != HS_OK)
      return st;
  }
  return HS_OK;
}

/* Backward through layers [first, last) from the gradient at the last
 * layer's output (`cur`, overwritten where ReLU masks it); the gradient at
 * the first layer's input into `din` when it is not NULL. */
static hs_status mlp_backward(hs_ctr_trainer *t, int first, int last, cl_mem cur, cl_mem din) {
  cl_int n = t->n;
  hs_status st;
  for (int l = last - 1; l >= first; l--) {
    const hs_ctr_lin *x = &t->lay.lin[l];
    if ((st = x->relu ? relu_bwd_colsum(t, t->out[l].m, cur, n, x->out, t->grads.m, x->b)
                      : colsum(t, cur, n, x->out, x->b)) != HS_OK)
      return st;
    hs_gemm_op dw = {.trans_a = true, .m = (size_t)x->in, .n = (size_t)x->out, .k = (size_t)n,
                     .alpha = 1.0f, .a = in_of(t, l), .lda = (size_t)x->in, .b = cur,
                     .ldb = (size_t)x->out, .c = t->grads.m, .c_off = x->w, .ldc = (size_t)x->out};
    if (l == first && !din) return gemm(t, &dw);
    cl_mem prev = l == first ? din : cur == t->pp[0].m ? t->pp[1].m : t->pp[0].m;
    hs_gemm_op pair[2] = {
        dw, {.trans_b = true, .m = (size_t)n, .n = (size_t)x->in, .k = (size_t)x->out,
             .alpha = 1.0f, .a = cur, .lda = (size_t)x->out, .b = t->params.m, .b_off = x->w,
             .ldb = (size_t)x->out, .c = prev, .ldc = (size_t)x->in}};
    /* The weights' and the input's gradients at once: their pieces share
     * the threads (hs__gemm_run_group). */
    if ((st = hs__gemm_run_group(t->gemm, pair, 2, 0, NULL, NULL)) != HS_OK) return st;
    cur = prev;
  }
  return HS_OK;
}

/* `train`: keep what the backward takes (DeepFM's field sums). */
static hs_status forward(hs_ctr_trainer *t, bool train) {
  const hs_ctr_model_cfg *c = &t->cfg;
  const hs_ctr_layout *L = &t->lay;
  hs_status st;
  switch (c->kind) {
    case HS_CTR_LR:
      return k_head(t, 0, 0, t->logit.m, 0, false);
    case HS_CTR_DEEPFM:
      if ((st = k_deep_in(t)) != HS_OK || (st = mlp_forward(t, 0, L->n_lin)) != HS_OK) return st;
      return k_head(t, c->dim, c->dim, t->out[L->n_lin - 1].m, 1, train);
    case HS_CTR_DLRM:
      if ((st = mlp_forward(t, 0, L->first_top)) != HS_OK ||
          (st = k_interact(t, t->out[L->first_top - 1].m)) != HS_OK ||
          (st = mlp_forward(t, L->first_top, L->n_lin)) != HS_OK)
        return st;
      return hs__mem_copy(t->q, t->out[L->n_lin - 1].m, t->logit.m, 0, 0, (size_t)t->n * 4, 0, NULL,
                          NULL);
  }
  return HS_OK;
}

static hs_status loss(hs_ctr_trainer *t) {
  hs_status st;
  if (t->ring_pending == STATS_RING) {
    int64_t steps = 0;
    if ((st = hs__ctr_trainer_drain_loss(t, &t->loss_overflow, &steps)) != HS_OK) return st;
    t->steps_overflow += steps;
  }
  if ((st = k_loss(t, (t->ring_first + t->ring_pending) % STATS_RING)) != HS_OK) return st;
  t->ring_pending++;
  return HS_OK;
}

/* Gradients of w and c: column sums of [x * dlogit, dlogit]. */
static hs_status head_bwd(hs_ctr_trainer *t) {
  hs_status st = k_head_prep(t);
  return st == HS_OK ? colsum(t, t->head_m.m, t->n, t->cfg.n_dense + 1, t->lay.lin_w) : st;
}

static hs_status backward(hs_ctr_trainer *t) {
  const hs_ctr_layout *L = &t->lay;
  hs_status st;
  switch (t->cfg.kind) {
    case HS_CTR_LR:
      if ((st = head_bwd(t)) != HS_OK || (st = k_lr_bwd(t)) != HS_OK) return st;
      break;
    case HS_CTR_DEEPFM:
      /* The deep part's output gradient is dlogit (its last layer has no
       * ReLU, so dlogit is not written). Its input's gradient is computed
       * whole, the integer features' columns too, which nothing reads: a
       * product only F D columns wide gave other bits in those columns
       * than the whole one at some shapes with OpenBLAS 0.3.21 (batches of
       * 7 or 64 examples, F D of 15 or 26, ...). */
      if ((st = head_bwd(t)) != HS_OK ||
          (st = mlp_backward(t, 0, L->n_lin, t->dlogit.m, t->dfirst.m)) != HS_OK)
        return st;
      return k_fm_rowgrad(t);
    case HS_CTR_DLRM:
      if ((st = mlp_backward(t, L->first_top, L->n_lin, t->dlogit.m, t->dinter.m)) != HS_OK ||
          (st = k_interact_bwd(t, t->out[L->first_top - 1].m)) != HS_OK ||
          (st = mlp_backward(t, 0, L->first_top, t->dz.m, NULL)) != HS_OK)
        return st;
      break;
  }
  return k_segment_sum(t);
}

static hs_status optimizer(hs_ctr_trainer *t) {
  hs_optim_coef k;
  hs__optim_coef(&t->cfg.optim, t->step + 1, &k);
  cl_ulong n = t->lay.n_params;
  hs_status st = t->cfg.optim.kind == HS_OPTIM_ADAM
                     ? hs__k_adam(&t->ks, t->params.m, t->grads.m, t->mom1.m, t->mom2.m, n, &k)
                     : hs__k_sgd(&t->ks, t->params.m, t->grads.m, t->mom1.m, n, &k);
  if (st == HS_OK) t->step++;
  return st;
}

static hs_status gradients(hs_ctr_trainer *t) {
  if (!t->uploaded || !t->has_labels)
    return hs__fail(HS_ERR_STATE, "CTR trainer: no labelled batch uploaded");
  if (!t->has_occ && rowgrad_parts(t) == 0)
    return hs__fail(HS_ERR_STATE, "CTR trainer: the batch has no occurrence lists, which this "
                    "trainer sums its row gradients along");
  hs_status st = forward(t, true);
  if (st == HS_OK) st = loss(t);
  if (st == HS_OK) st = backward(t);
  return st;
}

hs_status hs__ctr_trainer_step(hs_ctr_trainer *t, float *row_grads, cl_event *ev) {
  hs_status st = gradients(t);
  if (st == HS_OK) st = optimizer(t);
  if (st == HS_OK)
    st = hs__mem_read(t->q, t->dU.m, false, 0, (size_t)t->n_unique * (size_t)t->lay.row * 4,
                      row_grads, 0, NULL, NULL);
  if (st == HS_OK) st = hs__queue_marker(t->q, 0, NULL, ev);
  if (st == HS_OK) st = hs__queue_flush(t->q);
  return st;
}

hs_status hs__ctr_trainer_backward(hs_ctr_trainer *t, float *grads, float *row_grads) {
  hs_status st = gradients(t);
  if (st == HS_OK)
    st = hs__mem_read(t->q, t->grads.m, false, 0, t->lay.n_params * 4, grads, 0, NULL, NULL);
  if (st == HS_OK)
    st = hs__mem_read(t->q, t->dU.m, true, 0, (size_t)t->n_unique * (size_t)t->lay.row * 4,
                      row_grads, 0, NULL, NULL);
  return st;
}

hs_status hs__ctr_trainer_apply(hs_ctr_trainer *t, const float *grads) {
  hs_status st = hs__mem_write(t->q, t->grads.m, true, 0, t->lay.n_params * 4, grads, 0, NULL, NULL);
  if (st == HS_OK) st = optimizer(t);
  if (st == HS_OK) st = hs__queue_flush(t->q);
  return st;
}

hs_status hs__ctr_trainer_gradients(hs_ctr_trainer *t, float *grads, float *row_grads,
                                    float *loss_out) {
  hs_status st = gradients(t);
  if (st != HS_OK) return st;
  if ((st = hs__mem_read(t->q, t->grads.m, true, 0, t->lay.n_params * 4, grads, 0, NULL, NULL)) != HS_OK ||
      (st = hs__mem_read(t->q, t->dU.m, true, 0, (size_t)t->n_unique * (size_t)t->lay.row * 4,
                         row_grads, 0, NULL, NULL)) != HS_OK)
    return st;
  double sum = 0;
  int64_t steps = 0;
  if ((st = hs__ctr_trainer_drain_loss(t, &sum, &steps)) != HS_OK) return st;
  *loss_out = steps ? (float)(sum / (double)steps) : 0.0f;
  return HS_OK;
}

hs_status hs__ctr_trainer_predict(hs_ctr_trainer *t, float *prob) {
  if (!t->uploaded) return hs__fail(HS_ERR_STATE, "CTR trainer: no batch uploaded");
  hs_status st = forward(t, false);
  if (st == HS_OK) st = k_sigmoid(t, t->loss_rows.m);
  if (st != HS_OK) return st;
  return hs__mem_read(t->q, t->loss_rows.m, true, 0, (size_t)t->n * 4, prob, 0, NULL, NULL);
}

hs_status hs__ctr_trainer_drain_loss(hs_ctr_trainer *t, double *loss_sum, int64_t *steps) {
  float ring[STATS_RING];
  if (t->ring_pending > 0) {
    hs_status st = hs__mem_read(t->q, t->ring.m, true, 0, sizeof ring, ring, 0, NULL, NULL);
    if (st != HS_OK) return st;
  }
  if (loss_sum != &t->loss_overflow && t->steps_overflow) {
    *loss_sum += t->loss_overflow;
    *steps += t->steps_overflow;
    t->loss_overflow = 0;
    t->steps_overflow = 0;
  }
  for (int i = 0; i < t->ring_pending; i++) *loss_sum += ring[(t->ring_first + i) % STATS_RING];
  *steps += t->ring_pending;
  t->ring_first = (t->ring_first + t->ring_pending) % STATS_RING;
  t->ring_pending = 0;
  return HS_OK;
}

hs_status hs__ctr_trainer_run_head(hs_ctr_trainer *t, cl_mem dense, int32_t n_dense, cl_mem rows,
                                   int32_t row, cl_mem idx, int32_t n_fields, int32_t col,
                                   int32_t dim, cl_mem wc, cl_mem deep, int32_t n, cl_mem logit,
                                   cl_mem fm_s) {
  hs_status st = launch_head(t, dense, n_dense, rows, row, idx, n_fields, col, dim, wc, 0,
                             deep ? deep : wc, deep != NULL, n, logit, fm_s ? fm_s : logit,
                             fm_s != NULL);
  return st != HS_OK ? st : hs__queue_finish(t->q);
}

hs_status hs__ctr_trainer_run_interact(hs_ctr_trainer *t, cl_mem z, cl_mem rows, cl_mem idx,
                                       int32_t n_fields, int32_t dim, int32_t n, cl_mem out) {
  hs_status st = launch_interact(t, z, rows, idx, n_fields, dim, n, out);
  return st != HS_OK ? st : hs__queue_finish(t->q);
}

hs_status hs__ctr_trainer_run_interact_bwd(hs_ctr_trainer *t, cl_mem z, cl_mem rows,
                                           cl_mem idx, int32_t n_fields, int32_t dim,
                                           cl_mem dout, int32_t n, cl_mem dz, cl_mem dE) {
  hs_status st = launch_interact_bwd(t, z, rows, idx, n_fields, dim, dout, n, dz, dE);
  return st != HS_OK ? st : hs__queue_finish(t->q);
}

hs_status hs__ctr_trainer_run_segment_sum(hs_ctr_trainer *t, cl_mem dE, int32_t row,
                                          cl_mem occ_ptr, cl_mem occ, int32_t n_unique,
                                          cl_mem out) {
  hs_status st = launch_segment_sum(t, dE, row, occ_ptr, occ, n_unique, out);
  return st != HS_OK ? st : hs__queue_finish(t->q);
}

hs_status hs__ctr_trainer_run_relu_bwd_colsum(hs_ctr_trainer *t, cl_mem h, cl_mem dh, int32_t n,
                                              int32_t d, cl_mem out) {
  hs_status st = relu_bwd_colsum(t, h, dh, n, d, out, 0);
  return st != HS_OK ? st : hs__queue_finish(t->q);
}

hs_status hs__ctr_trainer_run_fm_rowgrad_fields(hs_ctr_trainer *t, cl_mem rows, int32_t row,
                                                cl_mem fm_s, int32_t dim, cl_mem dlogit,
                                                cl_mem d_in, int32_t d_in_width, int32_t n_fields,
                                                cl_mem idx, int32_t n, int32_t n_unique,
                                                int32_t parts, cl_mem out) {
  if (parts < 1 || parts > n_fields)
    return hs__fail(HS_ERR_INVALID_ARG, "DeepFM row gradients by fields: %d parts of %d fields",
                    parts, n_fields);
  hs_status st = launch_fm_rowgrad_fields(t, rows, row, fm_s, dim, dlogit, d_in, d_in_width,
                                          n_fields, idx, n, n_unique, parts, out);
  return st != HS_OK ? st : hs__queue_finish(t->q);
}

hs_status hs__ctr_trainer_run_fm_rowgrad(hs_ctr_trainer *t, cl_mem rows, int32_t row,
                                         cl_mem fm_s, int32_t dim, cl_mem dlogit, cl_mem d_in,
                                         int32_t d_in_width, int32_t n_fields, cl_mem occ_ptr,
                                         cl_mem occ, int32_t n_unique, cl_mem out) {
  hs_status st = launch_fm_rowgrad(t, rows, row, fm_s, dim, dlogit, d_in, d_in_width, n_fields,
                                   occ_ptr, occ, n_unique, out);
  return st != HS_OK ? st : hs__queue_finish(t->q);
}
