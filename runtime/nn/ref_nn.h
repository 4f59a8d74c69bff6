/* Plain-C references of every training kernel and of one training step.
 *
 * Written for obviousness, not speed: the device kernels are checked
 * against these, and these against finite differences. Matrices are
 * row-major float32; `d` is a row's width. Sums run in the same order as
 * the kernels (edges in CSR order, rows in increasing order), so most
 * results agree with the kernels bit for bit. */
#ifndef HS_NN_REF_H
#define HS_NN_REF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "nn/hs_nn_block.h"
#include "nn/model.h"

/* rows x cols elements of `elem` bytes (at least one element), or NULL on
 * overflow or exhaustion: the references' matrices. */
void *hs__ref_alloc(int64_t rows, int64_t cols, size_t elem);

/* C = alpha * op(A) . op(B) + beta * C, op(A) m x k, op(B) k x n. beta == 0
 * ignores C's old contents (NaN included), as BLAS does. */
void hs__ref_gemm(bool trans_a, bool trans_b, size_t m, size_t n, size_t k, float alpha,
                  const float *a, size_t lda, const float *b, size_t ldb, float beta, float *c,
                  size_t ldc);

/* cat (n_dst x 2d) = [h_dst | mean of h over each dst's neighbours]; a dst
 * without neighbours gets a zero mean. */
void hs__ref_agg_fwd(const hs_nn_block *b, const float *h_src, int32_t d, float *cat);

/* Gradient of agg_fwd: dh_src (n_src x d) from dcat (n_dst x 2d), gathered
 * through the transposed block (hs__nn_block_transpose). */
void hs__ref_agg_bwd(const hs_nn_block *b, const int32_t *t_ptr, const int32_t *t_dst,
                     const float *dcat, int32_t d, float *dh_src);

/* The scale of kept activations under inverted dropout, 1 / (1 - p). */
float hs__dropout_scale(float p);

/* In place on z (n x d): z + bias, then (when `relu`) ReLU, then (when p > 0)
 * inverted dropout keyed by (seed, epoch, batch, layer, element). */
void hs__ref_bias_act_fwd(float *z, int32_t n, int32_t d, const float *bias, bool relu, float p,
                          uint64_t seed, uint32_t epoch, uint32_t batch, uint32_t layer);

/* In place on dh (n x d), the gradient at the output h of bias_act_fwd with
 * ReLU: dz = dh * scale where h > 0, else 0. (A dropped or clipped element
 * has h == 0; a kept positive one has h > 0, so h alone says which.) */
void hs__ref_act_bwd(const float *h, int32_t n, int32_t d, float scale, float *dh);

/* out[k] = sum over rows of x[., k] (bias gradients), associated as the
 * kernel does: rows in order within chunks of HS_COLSUM_ROWS, then the
 * chunks' sums in order (HS_COLSUM_ROWS, cl_kernels/hs_train.h). */
void hs__ref_colsum(const float *x, int32_t n, int32_t d, float *out);

/* Softmax cross-entropy of logits z + bias (n x c) against labels, mean over
 * the n rows: per-row loss and argmax hit (ties go to the lower class), and
 * dz = (softmax - onehot) / n. */
void hs__ref_softmax_ce(const float *z, const float *bias, const int32_t *labels, int32_t n,
                        int32_t c, float *dz, float *loss_rows, int32_t *correct_rows);

/* Mean loss and number of hits, summed in row order. */
void hs__ref_loss_reduce(const float *loss_rows, const int32_t *correct_rows, int32_t n,
                         float *loss_mean, int32_t *correct);

/* One optimizer update of n parameters with coefficients from
 * hs__optim_coef (the moments m, v are updated in place; v unused by SGD). */
void hs__ref_optim(hs_optim_kind kind, const hs_optim_coef *k, size_t n, float *p,
                   const float *g, float *m, float *v);

/* ---- one step ------------------------------------------------------------ */

typedef struct hs_step_stats {
  float loss;      /* mean over the seeds */
  int32_t correct; /* seeds whose argmax is their label */
  int32_t n_seeds;
} hs_step_stats;

/* Forward, loss and backward of one batch: the gradient of the mean loss
 * with respect to every parameter into `grads` (n_params). Dropout masks are
 * keyed by (cfg.seed, epoch, batch, layer, element); `train` false turns
 * dropout off. Validates the batch (HS_ERR_FORMAT / INVALID_ARG) and needs
 * labels. */
hs_status hs__ref_gradients(const hs_model *m, const hs_nn_batch *b, uint32_t epoch, uint32_t batch,
                            bool train, float *grads, hs_step_stats *st);

/* The same, and when `dx` is not NULL the gradient with respect to the
 * input rows (blocks[0].n_src x in_dim). */
hs_status hs__ref_gradients_x(const hs_model *m, const hs_nn_batch *b, uint32_t epoch,
                              uint32_t batch, bool train, float *grads, float *dx,
                              hs_step_stats *st);

/* hs__ref_gradients then one optimizer update (m->step advances first: the
 * update is step t = m->step). */
hs_status hs__ref_train_step(hs_model *m, const hs_nn_batch *b, uint32_t epoch, uint32_t batch,
                             hs_step_stats *st);

/* Inference forward (no dropout): the logits, without softmax, of the
 * output dst (n_dst of the last block x n_classes). */
hs_status hs__ref_forward(const hs_model_shape *shape, const float *params, const hs_nn_batch *b,
                          float *logits);

#endif
