/* The GraphSAGE model: configuration, parameter layout, host-side state.
 *
 * Layer l (0 = input side) maps d_in = dims[l] features to d_out = dims[l+1]:
 *   z_i = [h_i | mean_{j in N(i)} h_j] . W_l + b_l
 * W_l is (2 d_in) x d_out row-major: rows 0..d_in-1 are W_self, rows
 * d_in..2 d_in-1 are W_neigh, so one GEMM on the concatenation [self | mean]
 * does both products. Hidden layers apply ReLU then inverted dropout; the
 * last layer's z are the logits of a softmax cross-entropy, averaged over
 * the seeds.
 *
 * All parameters live in one flat array (W_0, b_0, W_1, b_1, ...), and so do
 * their gradients and the optimizer's moments: one optimizer launch updates
 * the whole model, and a checkpoint is three arrays. */
#ifndef HS_NN_MODEL_H
#define HS_NN_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hs_base.h"
#include "nn/hs_nn_block.h"

typedef enum hs_optim_kind {
  HS_OPTIM_SGD = 1,  /* with optional heavy-ball momentum */
  HS_OPTIM_ADAM = 2, /* Kingma & Ba, with bias correction */
} hs_optim_kind;

/* How weight decay enters (it applies to every parameter, biases too):
 *  L2:        g += wd * p before the update (torch.optim.Adam/SGD style);
 *  DECOUPLED: p -= lr * wd * p beside the update (AdamW style). */
typedef enum hs_wd_mode {
  HS_WD_L2 = 0,
  HS_WD_DECOUPLED = 1,
} hs_wd_mode;

typedef struct hs_optim_cfg {
  hs_optim_kind kind;
  hs_wd_mode wd_mode;
  float lr;
  float weight_decay;
  float beta1, beta2, eps; /* Adam */
  float momentum;          /* SGD; 0 = plain SGD */
} hs_optim_cfg;

typedef struct hs_model_cfg {
  int n_layers;  /* 1..HS_NN_MAX_LAYERS */
  int in_dim;    /* feature width */
  int hidden;    /* width of every hidden layer */
  int n_classes; /* width of the last layer */
  float dropout; /* probability of dropping a hidden activation, [0, 1) */
  uint64_t seed; /* parameter init and dropout masks */
  hs_optim_cfg optim;
} hs_model_cfg;

/* Adam, lr 0.01, no weight decay, dropout 0.5, 2 layers of 128: a usable
 * starting point; callers fill in_dim and n_classes. */
void hs__model_cfg_defaults(hs_model_cfg *cfg);

typedef struct hs_model_shape {
  int n_layers;
  int32_t dims[HS_NN_MAX_LAYERS + 1]; /* dims[0] = in_dim, dims[L] = n_classes */
  size_t w_off[HS_NN_MAX_LAYERS];     /* offsets into the flat array, floats */
  size_t b_off[HS_NN_MAX_LAYERS];
  size_t n_params;
} hs_model_shape;

/* Validate `cfg` and derive the layout. HS_ERR_INVALID_ARG names the bad
 * field. */
hs_status hs__model_shape(const hs_model_cfg *cfg, hs_model_shape *out);

/* Host-side model: parameters, optimizer state and training position.
 * Also what a checkpoint holds. */
typedef struct hs_model {
  hs_model_cfg cfg;
  hs_model_shape shape;
  float *params; /* n_params each */
  float *m;      /* Adam first moment / SGD momentum */
  float *v;      /* Adam second moment (zeros for SGD) */
  uint64_t step; /* optimizer steps taken (Adam's t) */
  uint64_t epoch;
  uint64_t rng_counter; /* batches drawn in `epoch`: the RNG stream position */
} hs_model;

/* Allocate and initialise: Glorot-uniform weights from the Philox stream
 * keyed by cfg->seed, zero biases and moments. */
hs_status hs__model_create(const hs_model_cfg *cfg, hs_model *out);
void hs__model_destroy(hs_model *m);

/* Glorot-uniform weights (U(-a, a), a = sqrt(6 / (d_in + d_out)), for
 * W_self and W_neigh alike) and zero biases into `params`. */
void hs__model_init_params(const hs_model_shape *shape, uint64_t seed, float *params);

/* Per-step optimizer coefficients, computed once on the host in double and
 * passed as floats to the reference and to the kernels alike. */
typedef struct hs_optim_coef {
  float lr;          /* SGD: lr; Adam: lr / (1 - beta1^t) */
  float l2;          /* wd added to the gradient (L2 mode) */
  float decay;       /* multiplier 1 - lr * wd on p (decoupled mode), else 1 */
  float beta1, beta2, one_minus_beta1, one_minus_beta2;
  float inv_sqrt_bc2; /* 1 / sqrt(1 - beta2^t) */
  float eps;
  float momentum;
} hs_optim_coef;

/* Coefficients for step t (1-based). */
void hs__optim_coef(const hs_optim_cfg *cfg, uint64_t t, hs_optim_coef *out);

#endif
