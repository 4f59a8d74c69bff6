/* The CTR training step on the trainer device: forward, loss, backward,
 * the dense optimizer, and the gradient of every unique embedding row,
 * all enqueued on one in-order queue without host round trips.
 *
 * The composition is the reference's (ref_ctr.c), kernel for kernel;
 * products go through the device's GEMM provider. Given the same batch
 * and state the result is the same bits run to run: no float atomics,
 * every sum in a fixed order. One host thread drives a trainer; device
 * memory grows to the largest batch seen and is then reused. */
#ifndef HS_CTR_TRAINER_H
#define HS_CTR_TRAINER_H

#include "ctr/ctr_model.h"
#include "gemm.h"
#include "hs_dev.h"

typedef struct hs_ctr_trainer hs_ctr_trainer;

typedef struct hs_ctr_trainer_opts {
  size_t wg;         /* local size of dimension 0; 0: 64 (clamped per kernel) */
  hs_gemm_kind gemm; /* HS_GEMM_AUTO: by device */
  int gemm_threads;  /* CBLAS threads; 0: the device's compute units */
  /* DeepFM's row gradients of a batch whose uniques are each of one field
   * (hs_ctr_batch.one_field): 0, by fields on a CPU device with at least
   * 4 fields per compute unit, one work-item per unit, else by lists; N > 0,
   * by fields in min(N, fields) work-items on any device; < 0, by lists.
   * The same bits either way. */
  int rowgrad_parts;
} hs_ctr_trainer_opts;

/* `params` (n_params floats) is copied to the device; NULL draws the
 * initial values from cfg->seed. ctx and q are kept, not owned. */
hs_status hs__ctr_trainer_create(const hs_ctx *ctx, const hs_dev *dev, cl_command_queue q,
                                 const hs_ctr_model_cfg *cfg, const float *params,
                                 const hs_ctr_trainer_opts *opts, hs_ctr_trainer **out);
void hs__ctr_trainer_destroy(hs_ctr_trainer *t);
const hs_ctr_layout *hs__ctr_trainer_layout(const hs_ctr_trainer *t);
hs_gemm_kind hs__ctr_trainer_gemm_kind(const hs_ctr_trainer *t);

/* Validate a batch (unless `checked`: the caller passed it through
 * hs__ctr_batch_validate already, off the trainer's path) and enqueue its
 * writes without waiting: the host arrays must stay unchanged until the
 * next step's event completes. labels NULL: prediction only. */
hs_status hs__ctr_trainer_upload(hs_ctr_trainer *t, const hs_ctr_batch *b, bool checked);

/* Enqueue a training step on the uploaded batch (the dense parameters
 * updated as step t + 1), then a read of the rows' gradients (U x R)
 * into `row_grads` (kept until `ev` completes). *ev completes when all of
 * it has. */
hs_status hs__ctr_trainer_step(hs_ctr_trainer *t, float *row_grads, cl_event *ev);

/* The step in two halves, for distributed training (the dense gradients
 * are combined over the ranks in between). backward: forward, loss (it
 * joins those drain_loss adds up) and backward on the uploaded batch; the
 * dense gradients (n_params) and the rows' gradients (U x R) read back.
 * Waits. apply: the dense optimizer's step t + 1 with `grads` (written to
 * the device first; no batch needed). backward then apply with the
 * gradients unchanged is hs__ctr_trainer_step, bit for bit. */
hs_status hs__ctr_trainer_backward(hs_ctr_trainer *t, float *grads, float *row_grads);
hs_status hs__ctr_trainer_apply(hs_ctr_trainer *t, const float *grads);

/* Forward only: click probabilities (B) of the uploaded batch. Waits. */
hs_status hs__ctr_trainer_predict(hs_ctr_trainer *t, float *prob);

/* Forward, loss and backward only; reads the dense gradients (n_params),
 * the rows' gradients and the mean loss. Waits. For tests. */
hs_status hs__ctr_trainer_gradients(hs_ctr_trainer *t, float *grads, float *row_grads,
                                    float *loss);

/* Add the mean losses of the steps since the last call. Waits. */
hs_status hs__ctr_trainer_drain_loss(hs_ctr_trainer *t, double *loss_sum, int64_t *steps);

/* Dense state: parameters and the optimizer's moments and step count. */
hs_status hs__ctr_trainer_read_state(hs_ctr_trainer *t, float *params, float *m, float *v,
                                     uint64_t *step);
hs_status hs__ctr_trainer_write_state(hs_ctr_trainer *t, const float *params, const float *m,
                                      const float *v, uint64_t step);

/* The logit head alone (LR's, and DeepFM's with its FM over columns
 * 0..dim and deep[b] when deep is not NULL; wc: w[n_dense] then c), on the
 * caller's buffers, and the FM's field sums (n x dim) into fm_s when it is
 * not NULL; waits. For tests, against hs__ctr_ref_head and
 * hs__ctr_ref_fm_sums bit for bit. */
hs_status hs__ctr_trainer_run_head(hs_ctr_trainer *t, cl_mem dense, int32_t n_dense, cl_mem rows,
                                   int32_t row, cl_mem idx, int32_t n_fields, int32_t col,
                                   int32_t dim, cl_mem wc, cl_mem deep, int32_t n, cl_mem logit,
                                   cl_mem fm_s);

/* The DLRM interaction (z: B x dim, rows indexed by idx: B x n_fields)
 * and its gradient alone, on the caller's buffers and the trainer's queue
 * at its local size; waits. For tests: the same launches the step makes,
 * compared bit for bit with hs__ctr_ref_interact / _bwd. */
hs_status hs__ctr_trainer_run_interact(hs_ctr_trainer *t, cl_mem z, cl_mem rows, cl_mem idx,
                                       int32_t n_fields, int32_t dim, int32_t n, cl_mem out);
hs_status hs__ctr_trainer_run_interact_bwd(hs_ctr_trainer *t, cl_mem z, cl_mem rows,
                                           cl_mem idx, int32_t n_fields, int32_t dim,
                                           cl_mem dout, int32_t n, cl_mem dz, cl_mem dE);
/* The per-row gradient sums alone (dE: one row of `row` floats per
 * occurrence; occ_ptr, occ: each unique row's occurrences), likewise
 * against hs__ctr_ref_segment_sum. */
hs_status hs__ctr_trainer_run_segment_sum(hs_ctr_trainer *t, cl_mem dE, int32_t row,
                                          cl_mem occ_ptr, cl_mem occ, int32_t n_unique,
                                          cl_mem out);

/* DeepFM's gradient of each unique row alone (rows of `row` = dim + 1
 * floats, fm_s the field sums hs__ctr_trainer_run_head keeps, d_in the
 * deep part's input gradient, d_in_width floats per example; occ_ptr, occ:
 * each unique row's occurrences b n_fields + f), likewise against
 * hs__ctr_ref_fm_bwd then hs__ctr_ref_segment_sum. */
hs_status hs__ctr_trainer_run_fm_rowgrad(hs_ctr_trainer *t, cl_mem rows, int32_t row,
                                         cl_mem fm_s, int32_t dim, cl_mem dlogit, cl_mem d_in,
                                         int32_t d_in_width, int32_t n_fields, cl_mem occ_ptr,
                                         cl_mem occ, int32_t n_unique, cl_mem out);
/* Whether training steps sum the row gradients along the batches'
 * occurrence lists (hs_ctr_batch.occ): false for a DeepFM trainer that
 * sums them by fields (one_field batches; hs_ctr_trainer_opts.rowgrad_parts),
 * whose lookups may then skip the lists (hs_embed_query.no_occ). Prediction
 * never reads them. */
bool hs__ctr_trainer_needs_occ(const hs_ctr_trainer *t);
/* A ReLU layer's backward alone: dh (n x d) masked in place by its output
 * h (hs__ref_act_bwd, scale 1) and its column sums into out[0..d)
 * (hs__ref_colsum's association), in one pass over dh. */
hs_status hs__ctr_trainer_run_relu_bwd_colsum(hs_ctr_trainer *t, cl_mem h, cl_mem dh, int32_t n,
                                              int32_t d, cl_mem out);
/* The same sums by `parts` ranges of fields (hs_ctr_fm_rowgrad_fields, the
 * kernel a CPU trainer takes for a batch whose uniques are each of one
 * field; idx: n x n_fields), into `out` (n_unique rows) zeroed first. */
hs_status hs__ctr_trainer_run_fm_rowgrad_fields(hs_ctr_trainer *t, cl_mem rows, int32_t row,
                                                cl_mem fm_s, int32_t dim, cl_mem dlogit,
                                                cl_mem d_in, int32_t d_in_width, int32_t n_fields,
                                                cl_mem idx, int32_t n, int32_t n_unique,
                                                int32_t parts, cl_mem out);

#endif
