/* The CTR training step on a device (see ctr_trainer.h). */
#include <stdlib.h>
#include <string.h>

#include "ctr/ctr_trainer.h"
#include "hs_launch.h"
#include "hs_programs.h"
#include "nn/model.h"

/* hs_train.h's constants, which the shared kernels below use. */
#include "../../cl_kernels/hs_train.h"

enum {
  K_HEAD,
  K_LOSS,
  K_LOSS_REDUCE,
  K_SIGMOID,
  K_HEAD_PREP,
  K_DEEP_IN,
  K_LR_BWD,
  K_FM_BWD,
  K_INTERACT,
  K_INTERACT_BWD,
  K_RELU_BWD,
  K_SEGMENT_SUM,
  K_BIAS_ACT,
  K_COLSUM_PART,
  K_COLSUM_FINAL,
  K_ADAM,
  K_SGD,
  K_COUNT
};

static const char *const kernel_names[K_COUNT] = {
    [K_HEAD] = "hs_ctr_head",           [K_LOSS] = "hs_ctr_loss",
    [K_LOSS_REDUCE] = "hs_ctr_loss_reduce", [K_SIGMOID] = "hs_ctr_sigmoid",
    [K_HEAD_PREP] = "hs_ctr_head_prep", [K_DEEP_IN] = "hs_ctr_deep_in",
    [K_LR_BWD] = "hs_ctr_lr_bwd",       [K_FM_BWD] = "hs_ctr_fm_bwd",
    [K_INTERACT] = "hs_ctr_interact",   [K_INTERACT_BWD] = "hs_ctr_interact_bwd",
    [K_RELU_BWD] = "hs_ctr_relu_bwd",   [K_SEGMENT_SUM] = "hs_ctr_segment_sum",
    [K_BIAS_ACT] = "hs_bias_act_fwd",   [K_COLSUM_PART] = "hs_colsum_part",
    [K_COLSUM_FINAL] = "hs_colsum_final", [K_ADAM] = "hs_adam",
    [K_SGD] = "hs_sgd",
};

enum { DEFAULT_WG = 64, STATS_RING = 256, CS_VW = 8 };

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
  cl_program program;
  cl_kernel k[K_COUNT];
  size_t wg[K_COUNT];
  hs_gemm *gemm;
  dbuf params, grads, mom1, mom2, ring;
  /* The batch. */
  int32_t n, n_unique;
  bool uploaded, has_labels;
  dbuf dense, rows, idx, occ_ptr, occ, labels;
  /* Activations and gradients. */
  dbuf out[HS_CTR_MAX_LIN], first_in, inter;
  dbuf logit, loss_rows, dlogit, head_m, part, pp[2], dfirst, dinter, dz, dE, dU;
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

static hs_status run(hs_ctr_trainer *t, int id, size_t g0, size_t g1, const hs_karg *args, int n) {
  hs_status st = hs__kernel_args(t->k[id], args, n);
  if (st != HS_OK) return st;
  /* A narrow first dimension (fields, row width) must not leave most of a
   * work-group idle: the rest of the group goes to examples. */
  size_t global[2] = {g0, g1}, local[2] = {t->wg[id], 1};
  if (g1 && g0 < local[0]) {
    local[0] = g0 ? g0 : 1;
    local[1] = t->wg[id] / local[0] ? t->wg[id] / local[0] : 1;
  }
  return hs__launch(t->q, t->k[id], g1 ? 2 : 1, global, local, 0, NULL, NULL);
}

static hs_status gemm(hs_ctr_trainer *t, const hs_gemm_op *op) {
  return hs__gemm_run(t->gemm, op, 0, NULL, NULL);
}

/* Column sums of x (n x d) into grads[off..off + d), in the reference's
 * association (hs__ref_colsum). */
static hs_status colsum(hs_ctr_trainer *t, cl_mem x, int32_t n, int32_t d, size_t off) {
  cl_int nn = n, dd = d, chunks = (n + HS_COLSUM_ROWS - 1) / HS_COLSUM_ROWS;
  cl_ulong o = off;
  hs_status st = reserve(t, &t->part, (size_t)chunks * (size_t)d, 4);
  if (st != HS_OK) return st;
  hs_karg a1[] = {HS_KARG(x), HS_KARG(nn), HS_KARG(dd), HS_KARG(t->part.m)};
  hs_karg a2[] = {HS_KARG(t->part.m), HS_KARG(chunks), HS_KARG(dd), HS_KARG(t->grads.m), HS_KARG(o)};
  if ((st = run(t, K_COLSUM_PART, ((size_t)d + CS_VW - 1) / CS_VW, (size_t)chunks, a1, 4)) != HS_OK)
    return st;
  return run(t, K_COLSUM_FINAL, (size_t)d, 0, a2, 5);
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
  double t0 = hs__now();
  /* The CTR kernels and the training kernels they share with the GNN
   * trainer (bias + ReLU, column sums, the dense optimizers): one program
   * of the registry. */
  if ((st = hs__program_get(ctx, dev, HS_PROG_TRAIN_CTR, &t->program)) != HS_OK) goto fail;
  hs__log(HS_LOG_TRAIN, "CTR program on '%s' ready in %.2f s", dev->info.name, hs__now() - t0);
  for (int i = 0; i < K_COUNT; i++) {
    if ((st = hs__kernel_create(t->program, kernel_names[i], dev, &t->k[i])) != HS_OK) goto fail;
    size_t lim = hs__kernel_max_wg(t->k[i], dev), want = t->opts.wg ? t->opts.wg : DEFAULT_WG;
    t->wg[i] = want > lim ? lim : want;
  }
  if ((st = hs__gemm_create(ctx, dev, q, t->opts.gemm, t->opts.gemm_threads, &t->gemm)) != HS_OK)
    goto fail;
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
                 &t->dU};
  for (size_t i = 0; i < HS_ARRAY_LEN(all); i++) drop(all[i]);
  for (int l = 0; l < HS_CTR_MAX_LIN; l++) drop(&t->out[l]);
  hs__gemm_destroy(t->gemm);
  for (int i = 0; i < K_COUNT; i++) hs__kernel_release(&t->k[i]);
  hs__program_release(&t->program);
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
      (st = reserve(t, &t->dE, B * F * R, 4)) != HS_OK || (st = reserve(t, &t->dU, U * R, 4)) != HS_OK)
    return st;
  for (int l = 0; l < L->n_lin; l++)
    if ((st = reserve(t, &t->out[l], B, (size_t)L->lin[l].out * 4)) != HS_OK) return st;
  if (c->kind == HS_CTR_DEEPFM &&
      ((st = reserve(t, &t->first_in, B, (size_t)L->deep_in * 4)) != HS_OK ||
       (st = reserve(t, &t->dfirst, B, (size_t)L->deep_in * 4)) != HS_OK))
    return st;
  if (c->kind == HS_CTR_DLRM &&
      ((st = reserve(t, &t->inter, B, (size_t)L->deep_in * 4)) != HS_OK ||
       (st = reserve(t, &t->dinter, B, (size_t)L->deep_in * 4)) != HS_OK ||
       (st = reserve(t, &t->dz, B, (size_t)c->dim * 4)) != HS_OK))
    return st;
  return HS_OK;
}

hs_status hs__ctr_trainer_upload(hs_ctr_trainer *t, const hs_ctr_batch *b) {
  t->uploaded = false;
  hs_status st = hs__ctr_batch_validate(&t->lay, &t->cfg, b);
  if (st != HS_OK) return st;
  if ((st = reserve_batch(t, b->n, b->n_unique)) != HS_OK) return st;
  size_t B = (size_t)b->n, U = (size_t)b->n_unique, F = (size_t)t->cfg.n_fields;
  size_t R = (size_t)t->lay.row;
  if ((st = hs__mem_write(t->q, t->dense.m, false, 0, B * (size_t)t->cfg.n_dense * 4, b->dense, 0,
                          NULL, NULL)) != HS_OK ||
      (st = hs__mem_write(t->q, t->rows.m, false, 0, U * R * 4, b->rows, 0, NULL, NULL)) != HS_OK ||
      (st = hs__mem_write(t->q, t->idx.m, false, 0, B * F * 4, b->idx, 0, NULL, NULL)) != HS_OK ||
      (st = hs__mem_write(t->q, t->occ_ptr.m, false, 0, (U + 1) * 4, b->occ_ptr, 0, NULL, NULL)) != HS_OK ||
      (st = hs__mem_write(t->q, t->occ.m, false, 0, B * F * 4, b->occ, 0, NULL, NULL)) != HS_OK)
    return st;
  t->has_labels = b->labels != NULL;
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
    cl_int d = x->out, relu = x->relu;
    cl_ulong b_off = x->b, seed = 0;
    float p = 0.0f, scale = 1.0f;
    cl_uint zero = 0;
    hs_karg a[] = {HS_KARG(t->out[l].m), HS_KARG(n), HS_KARG(d), HS_KARG(t->params.m),
                   HS_KARG(b_off), HS_KARG(relu), HS_KARG(p), HS_KARG(scale), HS_KARG(seed),
                   HS_KARG(zero), HS_KARG(zero), HS_KARG(zero)};
    size_t groups = ((size_t)n * (size_t)d + HS_ACT_ELEMS - 1) / HS_ACT_ELEMS;
    if ((st = run(t, K_BIAS_ACT, groups, 0, a, 12)) != HS_OK) return st;
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
    if (x->relu) {
      cl_ulong count = (cl_ulong)n * (cl_ulong)x->out;
      hs_karg a[] = {HS_KARG(t->out[l].m), HS_KARG(count), HS_KARG(cur)};
      if ((st = run(t, K_RELU_BWD, (size_t)count, 0, a, 3)) != HS_OK) return st;
    }
    if ((st = colsum(t, cur, n, x->out, x->b)) != HS_OK) return st;
    hs_gemm_op dw = {.trans_a = true, .m = (size_t)x->in, .n = (size_t)x->out, .k = (size_t)n,
                     .alpha = 1.0f, .a = in_of(t, l), .lda = (size_t)x->in, .b = cur,
                     .ldb = (size_t)x->out, .c = t->grads.m, .c_off = x->w, .ldc = (size_t)x->out};
    if ((st = gemm(t, &dw)) != HS_OK) return st;
    if (l == first && !din) break;
    cl_mem prev = l == first ? din : cur == t->pp[0].m ? t->pp[1].m : t->pp[0].m;
    hs_gemm_op da = {.trans_b = true, .m = (size_t)n, .n = (size_t)x->in, .k = (size_t)x->out,
                     .alpha = 1.0f, .a = cur, .lda = (size_t)x->out, .b = t->params.m,
                     .b_off = x->w, .ldb = (size_t)x->out, .c = prev, .ldc = (size_t)x->in};
    if ((st = gemm(t, &da)) != HS_OK) return st;
    cur = prev;
  }
  return HS_OK;
}

static hs_status forward(hs_ctr_trainer *t) {
  const hs_ctr_model_cfg *c = &t->cfg;
  const hs_ctr_layout *L = &t->lay;
  cl_int n = t->n, nd = c->n_dense, F = c->n_fields, D = c->dim, R = L->row;
  cl_ulong wc = L->lin_w;
  hs_status st;
  switch (c->kind) {
    case HS_CTR_LR: {
      cl_int col = 0, dim = 0, has_deep = 0;
      hs_karg a[] = {HS_KARG(t->dense.m), HS_KARG(nd), HS_KARG(t->rows.m), HS_KARG(R),
                     HS_KARG(t->idx.m), HS_KARG(F), HS_KARG(col), HS_KARG(dim),
                     HS_KARG(t->params.m), HS_KARG(wc), HS_KARG(t->logit.m), HS_KARG(has_deep),
                     HS_KARG(n), HS_KARG(t->logit.m)};
      return run(t, K_HEAD, (size_t)n, 0, a, 14);
    }
    case HS_CTR_DEEPFM: {
      hs_karg di[] = {HS_KARG(t->rows.m), HS_KARG(R), HS_KARG(t->idx.m), HS_KARG(F), HS_KARG(D),
                      HS_KARG(t->dense.m), HS_KARG(nd), HS_KARG(n), HS_KARG(t->first_in.m)};
      if ((st = run(t, K_DEEP_IN, (size_t)F + 1, (size_t)n, di, 9)) != HS_OK) return st;
      if ((st = mlp_forward(t, 0, L->n_lin)) != HS_OK) return st;
      cl_int has_deep = 1;
      cl_mem deep = t->out[L->n_lin - 1].m;
      hs_karg a[] = {HS_KARG(t->dense.m), HS_KARG(nd), HS_KARG(t->rows.m), HS_KARG(R),
                     HS_KARG(t->idx.m), HS_KARG(F), HS_KARG(D), HS_KARG(D),
                     HS_KARG(t->params.m), HS_KARG(wc), HS_KARG(deep), HS_KARG(has_deep),
                     HS_KARG(n), HS_KARG(t->logit.m)};
      return run(t, K_HEAD, (size_t)n, 0, a, 14);
    }
    case HS_CTR_DLRM: {
      if ((st = mlp_forward(t, 0, L->first_top)) != HS_OK) return st;
      hs_karg a[] = {HS_KARG(t->out[L->first_top - 1].m), HS_KARG(t->rows.m), HS_KARG(t->idx.m),
                     HS_KARG(F), HS_KARG(D), HS_KARG(n), HS_KARG(t->inter.m)};
      if ((st = run(t, K_INTERACT, (size_t)F + 1, (size_t)n, a, 7)) != HS_OK) return st;
      if ((st = mlp_forward(t, L->first_top, L->n_lin)) != HS_OK) return st;
      return hs__mem_copy(t->q, t->out[L->n_lin - 1].m, t->logit.m, 0, 0, (size_t)n * 4, 0, NULL,
                          NULL);
    }
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
  cl_int n = t->n, slot = (t->ring_first + t->ring_pending) % STATS_RING;
  float inv_n = 1.0f / (float)n;
  hs_karg a[] = {HS_KARG(t->logit.m), HS_KARG(t->labels.m), HS_KARG(n), HS_KARG(inv_n),
                 HS_KARG(t->loss_rows.m), HS_KARG(t->dlogit.m)};
  hs_karg r[] = {HS_KARG(t->loss_rows.m), HS_KARG(n), HS_KARG(t->ring.m), HS_KARG(slot)};
  if ((st = run(t, K_LOSS, (size_t)n, 0, a, 6)) != HS_OK || (st = run(t, K_LOSS_REDUCE, 1, 0, r, 4)) != HS_OK)
    return st;
  t->ring_pending++;
  return HS_OK;
}

static hs_status head_bwd(hs_ctr_trainer *t) {
  cl_int n = t->n, nd = t->cfg.n_dense;
  hs_karg a[] = {HS_KARG(t->dense.m), HS_KARG(t->dlogit.m), HS_KARG(n), HS_KARG(nd),
                 HS_KARG(t->head_m.m)};
  hs_status st = run(t, K_HEAD_PREP, (size_t)n, 0, a, 5);
  if (st != HS_OK) return st;
  return colsum(t, t->head_m.m, n, nd + 1, t->lay.lin_w);
}

static hs_status backward(hs_ctr_trainer *t) {
  const hs_ctr_model_cfg *c = &t->cfg;
  const hs_ctr_layout *L = &t->lay;
  cl_int n = t->n, F = c->n_fields, D = c->dim, R = L->row, U = t->n_unique;
  hs_status st;
  switch (c->kind) {
    case HS_CTR_LR: {
      if ((st = head_bwd(t)) != HS_OK) return st;
      cl_int occ = n * F;
      hs_karg a[] = {HS_KARG(t->dlogit.m), HS_KARG(F), HS_KARG(occ), HS_KARG(t->dE.m)};
      if ((st = run(t, K_LR_BWD, (size_t)occ, 0, a, 4)) != HS_OK) return st;
      break;
    }
    case HS_CTR_DEEPFM: {
      if ((st = head_bwd(t)) != HS_OK) return st;
      /* The deep part's output gradient is dlogit (its last layer has no
       * ReLU, so dlogit is not written). */
      if ((st = mlp_backward(t, 0, L->n_lin, t->dlogit.m, t->dfirst.m)) != HS_OK) return st;
      cl_int w = L->deep_in;
      hs_karg a[] = {HS_KARG(t->rows.m), HS_KARG(R), HS_KARG(t->idx.m), HS_KARG(F), HS_KARG(D),
                     HS_KARG(t->dlogit.m), HS_KARG(t->dfirst.m), HS_KARG(w), HS_KARG(n),
                     HS_KARG(t->dE.m)};
      if ((st = run(t, K_FM_BWD, (size_t)D + 1, (size_t)n, a, 10)) != HS_OK) return st;
      break;
    }
    case HS_CTR_DLRM: {
      if ((st = mlp_backward(t, L->first_top, L->n_lin, t->dlogit.m, t->dinter.m)) != HS_OK)
        return st;
      hs_karg a[] = {HS_KARG(t->out[L->first_top - 1].m), HS_KARG(t->rows.m), HS_KARG(t->idx.m),
                     HS_KARG(F), HS_KARG(D), HS_KARG(t->dinter.m), HS_KARG(n), HS_KARG(t->dz.m),
                     HS_KARG(t->dE.m)};
      if ((st = run(t, K_INTERACT_BWD, (size_t)F + 1, (size_t)n, a, 9)) != HS_OK) return st;
      if ((st = mlp_backward(t, 0, L->first_top, t->dz.m, NULL)) != HS_OK) return st;
      break;
    }
  }
  hs_karg s[] = {HS_KARG(t->dE.m), HS_KARG(R), HS_KARG(t->occ_ptr.m), HS_KARG(t->occ.m),
                 HS_KARG(U), HS_KARG(t->dU.m)};
  return run(t, K_SEGMENT_SUM, (size_t)R, (size_t)U, s, 6);
}

static hs_status optimizer(hs_ctr_trainer *t) {
  hs_optim_coef k;
  hs__optim_coef(&t->cfg.optim, t->step + 1, &k);
  cl_ulong n = t->lay.n_params;
  hs_status st;
  if (t->cfg.optim.kind == HS_OPTIM_ADAM) {
    hs_karg a[] = {HS_KARG(t->params.m), HS_KARG(t->grads.m), HS_KARG(t->mom1.m),
                   HS_KARG(t->mom2.m), HS_KARG(n), HS_KARG(k.lr), HS_KARG(k.l2),
                   HS_KARG(k.decay), HS_KARG(k.beta1), HS_KARG(k.beta2),
                   HS_KARG(k.one_minus_beta1), HS_KARG(k.one_minus_beta2),
                   HS_KARG(k.inv_sqrt_bc2), HS_KARG(k.eps)};
    st = run(t, K_ADAM, (size_t)n, 0, a, 14);
  } else {
    hs_karg a[] = {HS_KARG(t->params.m), HS_KARG(t->grads.m), HS_KARG(t->mom1.m), HS_KARG(n),
                   HS_KARG(k.lr), HS_KARG(k.l2), HS_KARG(k.decay), HS_KARG(k.momentum)};
    st = run(t, K_SGD, (size_t)n, 0, a, 8);
  }
  if (st == HS_OK) t->step++;
  return st;
}

static hs_status gradients(hs_ctr_trainer *t) {
  if (!t->uploaded || !t->has_labels)
    return hs__fail(HS_ERR_STATE, "CTR trainer: no labelled batch uploaded");
  hs_status st = forward(t);
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
  hs_status st = forward(t);
  if (st != HS_OK) return st;
  cl_int n = t->n;
  hs_karg a[] = {HS_KARG(t->logit.m), HS_KARG(n), HS_KARG(t->loss_rows.m)};
  if ((st = run(t, K_SIGMOID, (size_t)n, 0, a, 3)) != HS_OK) return st;
  return hs__mem_read(t->q, t->loss_rows.m, true, 0, (size_t)n * 4, prob, 0, NULL, NULL);
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
