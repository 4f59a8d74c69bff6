/* Models: configuration, parameter layout, host-side state.
 *
 * A model is a kind (GraphSAGE-mean, GCN, GAT) whose table of operations
 * (model_ops.h) defines its layers; what every kind shares is here. Layer l
 * (0 = input side) maps dims[l] features to dims[l+1]; hidden layers apply
 * bias, ReLU then inverted dropout; the last layer's output plus its bias
 * are the logits of a softmax cross-entropy, averaged over the seeds.
 *
 * All parameters live in one flat array, layer after layer (each layer's
 * parameters one contiguous range, its bias of dims[l+1] floats among
 * them), and so do their gradients and the optimizer's moments: one
 * optimizer launch updates the whole model, a layer's gradients can be
 * handed on as one range, and a checkpoint is three arrays. */
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

/* Model kinds; the values are what checkpoints record. */
typedef enum hs_nn_kind {
  HS_NN_SAGE = 0, /* GraphSAGE, mean aggregator (Hamilton et al.) */
  HS_NN_GCN = 1,  /* graph convolution, symmetric normalisation (Kipf & Welling) */
  HS_NN_GAT = 2,  /* graph attention (Velickovic et al.) */
  HS_NN_KIND_COUNT_
} hs_nn_kind;

/* Most attention heads a GAT layer may have. */
#define HS_NN_MAX_HEADS 64

typedef struct hs_model_cfg {
  hs_nn_kind kind;
  int heads;     /* GAT: attention heads (1..HS_NN_MAX_HEADS); ignored otherwise */
  int n_layers;  /* 1..HS_NN_MAX_LAYERS */
  int in_dim;    /* feature width */
  int hidden;    /* width of every hidden layer */
  int n_classes; /* width of the last layer */
  float dropout; /* probability of dropping a hidden activation, [0, 1) */
  uint64_t seed; /* parameter init and dropout masks */
  hs_optim_cfg optim;
} hs_model_cfg;

/* GraphSAGE, Adam, lr 0.01, no weight decay, dropout 0.5, 2 layers of 128
 * (4 heads if the kind is changed to GAT): a usable starting point;
 * callers fill in_dim and n_classes. */
void hs__model_cfg_defaults(hs_model_cfg *cfg);

struct hs_model_ops;

/* The layout of a model's flat parameter array. Offsets count floats. */
typedef struct hs_model_shape {
  hs_nn_kind kind;
  int heads;                       /* GAT's heads; 1 for the other kinds */
  const struct hs_model_ops *ops;  /* the kind's table (model_ops.h) */
  int n_layers;
  int32_t dims[HS_NN_MAX_LAYERS + 1]; /* dims[0] = in_dim, dims[L] = n_classes */
  size_t w_off[HS_NN_MAX_LAYERS];     /* the layer's weight matrix (the kind's layout) */
  size_t b_off[HS_NN_MAX_LAYERS];     /* its bias, dims[l+1] floats */
  size_t a_off[HS_NN_MAX_LAYERS];     /* further parameters (GAT: attention), or 0 */
  size_t layer_off[HS_NN_MAX_LAYERS]; /* the layer's whole range: */
  size_t layer_n[HS_NN_MAX_LAYERS];   /*   [layer_off, layer_off + layer_n) */
  size_t n_params;
} hs_model_shape;

/* Validate `cfg` and derive the layout (the kind's table does its part).
 * HS_ERR_INVALID_ARG names the bad field. */
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

/* Allocate and initialise: the kind's initial parameters (Glorot-uniform
 * weights from the Philox stream keyed by cfg->seed, zero biases), zero
 * moments. */
hs_status hs__model_create(const hs_model_cfg *cfg, hs_model *out);
void hs__model_destroy(hs_model *m);

/* The kind's initial parameters into `params`. */
void hs__model_init_params(const hs_model_shape *shape, uint64_t seed, float *params);

/* Glorot-uniform fill of n elements of layer `layer`'s parameter stream:
 * element e (counted from `first`) takes U(-a, a), a = sqrt(6 / (fan_in +
 * fan_out)), from the Philox word keyed by (seed, INIT, layer, first + e). */
void hs__glorot_fill(float *w, size_t n, uint64_t seed, int layer, size_t first, double fan_in,
                     double fan_out);

/* "sage", "gcn", "gat"; "unknown" for anything else. */
const char *hs__nn_kind_name(int kind);

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
