/* The CTR models: configuration, the layout of their dense parameters,
 * the batch the trainer sees, and the plain-C reference of their forward
 * and backward passes.
 *
 * A batch of B examples with F categorical fields and 13 integers comes
 * with U unique embedding rows (from the store, R floats each), the
 * unique of every (example, field) occurrence, and the occurrences of
 * each unique in increasing order. E[b, f] = rows[idx[b F + f]] is the
 * row of field f of example b; x[b] its log-transformed integers.
 *
 *   LR      R = 1:      logit = c + x.w + sum_f E[b, f, 0]
 *   DeepFM  R = D + 1:  logit = c + x.w + sum_f E[b, f, D]          (first order)
 *                         + 1/2 (|sum_f e_f|^2 - sum_f |e_f|^2)    (FM, e_f = E[b, f, 0..D))
 *                         + MLP([e_1 .. e_F, x])                   (deep part)
 *   DLRM    R = D:      z = MLP_bottom(x) (D wide, ReLU throughout),
 *                       logit = MLP_top([z, <v_i, v_j> for i > j])  over v = (z, e_1 .. e_F)
 *
 * MLPs: ReLU after every layer but the last (DLRM's bottom MLP: after
 * every layer). The loss is the mean binary cross-entropy of sigmoid(logit).
 * Dense parameters live in one flat array (linear layers W then b, in
 * order; then, for LR and DeepFM, w[13] and c), trained by the dense
 * optimizer on the device; embedding rows are trained by the store's
 * sparse optimizer on the host from the gradients of the uniques. */
#ifndef HS_CTR_MODEL_H
#define HS_CTR_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hetsage/ctr.h"
#include "nn/model.h"

#define HS_CTR_MAX_MLP 8 /* layers per MLP */
#define HS_CTR_MAX_LIN 24

typedef struct hs_ctr_model_cfg {
  hs_ctr_model kind;
  int32_t n_fields; /* F, 1..HS_CTR_SPARSE */
  int32_t n_dense;  /* 13 */
  int32_t dim;      /* D (DeepFM, DLRM) */
  /* Hidden widths: DeepFM's deep part (then 1), DLRM's top MLP (then 1),
   * DLRM's bottom MLP (then D). */
  int32_t deep[HS_CTR_MAX_MLP];
  int n_deep;
  int32_t bottom[HS_CTR_MAX_MLP];
  int n_bottom;
  uint64_t seed;
  hs_optim_cfg optim; /* dense parameters */
} hs_ctr_model_cfg;

typedef struct hs_ctr_lin {
  int32_t in, out;
  size_t w, b; /* offsets: W (in x out, row-major), b (out) */
  bool relu;
} hs_ctr_lin;

typedef struct hs_ctr_layout {
  int32_t row;      /* R: floats per embedding row */
  int32_t deep_in;  /* DeepFM: F D + 13; DLRM top: D + F(F+1)/2 */
  int n_lin;        /* linear layers, in forward order */
  hs_ctr_lin lin[HS_CTR_MAX_LIN];
  int first_top;    /* DLRM: lin[0 .. first_top) bottom, the rest top; else 0 */
  size_t lin_w;     /* LR, DeepFM: w[n_dense] then c; else n_params */
  size_t n_params;
} hs_ctr_layout;

/* Defaults for a kind: D 16, DeepFM deep 256-128, DLRM bottom 64 and top
 * 256-128, Adam lr 1e-3 for the dense part, 26 fields, 13 integers. */
void hs__ctr_model_cfg_defaults(hs_ctr_model kind, hs_ctr_model_cfg *cfg);
/* HS_ERR_INVALID_ARG naming the bad field. */
hs_status hs__ctr_layout(const hs_ctr_model_cfg *cfg, hs_ctr_layout *out);
/* Glorot-uniform weights (Philox, keyed by the seed and the layer), zero
 * biases, zero w and c. */
void hs__ctr_init_params(const hs_ctr_model_cfg *cfg, const hs_ctr_layout *lay, float *params);

/* The host's view of a batch (the arrays are borrowed). */
typedef struct hs_ctr_batch {
  int32_t n;             /* B */
  int32_t n_unique;      /* U */
  const float *dense;    /* [B x n_dense] */
  const float *rows;     /* [U x R] */
  const int32_t *idx;    /* [B x F] occurrence -> unique */
  /* Each unique's occurrences in increasing order (CSR); both NULL when
   * the batch has none, which only a trainer that does not sum along them
   * takes (hs__ctr_trainer_needs_occ). */
  const int32_t *occ_ptr; /* [U + 1] */
  const int32_t *occ;    /* [B x F] */
  const float *labels;   /* [B] 0 or 1; NULL for prediction */
  /* Every unique's occurrences are of one field (b F + f, the same f): the
   * store's lookups, whose tables are one per field, give such batches. A
   * CPU trainer then sums DeepFM's row gradients field range by field range
   * (hs_ctr_fm_rowgrad_fields); the same bits either way. */
  bool one_field;
} hs_ctr_batch;

/* Check indices and the occurrence lists against the shapes. */
hs_status hs__ctr_batch_validate(const hs_ctr_layout *lay, const hs_ctr_model_cfg *cfg,
                                 const hs_ctr_batch *b);

/* ---- reference ------------------------------------------------------------ */

/* Logits of the batch (B). */
hs_status hs__ctr_ref_forward(const hs_ctr_model_cfg *cfg, const hs_ctr_layout *lay,
                              const float *params, const hs_ctr_batch *b, float *logits);
/* Forward, mean loss, and the gradients of the mean loss: dense (n_params)
 * and per unique row (U x R, summed over its occurrences in increasing
 * order). */
hs_status hs__ctr_ref_gradients(const hs_ctr_model_cfg *cfg, const hs_ctr_layout *lay,
                                const float *params, const hs_ctr_batch *b, float *grads,
                                float *row_grads, float *loss);

/* Pieces the device kernels are checked against one by one. */
/* logit[b] = c + x.w + sum_f E[b, f, col] (+ FM over E[b, f, 0..dim) when
 * dim > 0) (+ deep[b] when deep is not NULL), summed in that order; wc is
 * w[n_dense] then c. */
void hs__ctr_ref_head(const float *dense, const float *rows, const int32_t *idx, int32_t n,
                      int32_t n_dense, int32_t n_fields, int32_t row, int32_t col, int32_t dim,
                      const float *wc, const float *deep, float *logit);
/* The loss of each example and dlogit = (sigmoid(logit) - y) / B. */
void hs__ctr_ref_loss(const float *logit, const float *labels, int32_t n, float *loss_rows,
                      float *dlogit);
/* DLRM interaction of z (B x D) and the rows: out (B x (D + F(F+1)/2)) =
 * [z, <v_i, v_j> for i > j], v_0 = z, v_i = the row of field i - 1,
 * pairs row by row (i = 1, 2, ...; j = 0 .. i - 1). */
void hs__ctr_ref_interact(const float *z, const float *rows, const int32_t *idx, int32_t n,
                          int32_t n_fields, int32_t dim, float *out);
/* Its gradient: dz (B x D) and dE (B x F x D, one row per occurrence)
 * from dout; each vector's sum runs over the others in increasing order,
 * z's direct part added last. */
void hs__ctr_ref_interact_bwd(const float *z, const float *rows, const int32_t *idx, int32_t n,
                              int32_t n_fields, int32_t dim, const float *dout, float *dz,
                              float *dE);
/* DeepFM's gradient of the rows (row = dim + 1 floats): for k < dim,
 * dE[b, f, k] = g (s_k - e_fk) + d_in[b, f dim + k], s_k the sum of the
 * example's rows' column k in field order, g = dlogit[b]; dE[b, f, dim] =
 * g. d_in: the deep part's input gradient, d_in_width floats per example. */
void hs__ctr_ref_fm_bwd(const float *rows, int32_t row, const int32_t *idx, int32_t n,
                        int32_t n_fields, int32_t dim, const float *dlogit, const float *d_in,
                        int32_t d_in_width, float *dE);
/* DeepFM's field sums: s[b, k] = the sum of example b's rows' column k in
 * field order (k < dim), what hs__ctr_ref_fm_bwd's s_k is. */
void hs__ctr_ref_fm_sums(const float *rows, int32_t row, const int32_t *idx, int32_t n,
                         int32_t n_fields, int32_t dim, float *s);
/* out[u] = sum of dE over the occurrences of unique u, in list order. */
void hs__ctr_ref_segment_sum(const float *dE, const int32_t *occ_ptr, const int32_t *occ,
                             int32_t n_unique, int32_t row, float *out);
/* Gradients of w (n_dense) and c from dlogit: column sums of
 * [x * dlogit, dlogit] (hs__ref_colsum's association). */
void hs__ctr_ref_head_bwd(const float *dense, const float *dlogit, int32_t n, int32_t n_dense,
                          float *wc_grads);

#endif
