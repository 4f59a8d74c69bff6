/* Model configuration, parameter layout, seeded initialisation. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "nn/model.h"
#include "nn/model_ops.h"
#include "nn/nn_rng.h"

void hs__model_cfg_defaults(hs_model_cfg *cfg) {
  memset(cfg, 0, sizeof *cfg);
  cfg->kind = HS_NN_SAGE;
  cfg->heads = 4;
  cfg->n_layers = 2;
  cfg->hidden = 128;
  cfg->dropout = 0.5f;
  cfg->optim.kind = HS_OPTIM_ADAM;
  cfg->optim.wd_mode = HS_WD_L2;
  cfg->optim.lr = 0.01f;
  cfg->optim.beta1 = 0.9f;
  cfg->optim.beta2 = 0.999f;
  cfg->optim.eps = 1e-8f;
}

/* Largest width accepted: keeps every per-layer matrix index in 32 bits
 * for realistic row counts and catches garbage configurations early. */
#define HS_NN_MAX_DIM (1 << 20)

hs_status hs__model_shape(const hs_model_cfg *cfg, hs_model_shape *out) {
  memset(out, 0, sizeof *out);
  const hs_model_ops *ops = hs__model_ops((int)cfg->kind);
  if (!ops) return hs__fail(HS_ERR_INVALID_ARG, "model: kind %d (expected sage, gcn or gat)", (int)cfg->kind);
  if (cfg->n_layers < 1 || cfg->n_layers > HS_NN_MAX_LAYERS)
    return hs__fail(HS_ERR_INVALID_ARG, "model: n_layers %d (need 1..%d)", cfg->n_layers,
                    HS_NN_MAX_LAYERS);
  if (cfg->in_dim < 1 || cfg->in_dim > HS_NN_MAX_DIM)
    return hs__fail(HS_ERR_INVALID_ARG, "model: in_dim %d (need 1..%d)", cfg->in_dim,
                    HS_NN_MAX_DIM);
  if (cfg->n_classes < 2 || cfg->n_classes > HS_NN_MAX_DIM)
    return hs__fail(HS_ERR_INVALID_ARG, "model: n_classes %d (need 2..%d)", cfg->n_classes,
                    HS_NN_MAX_DIM);
  if (cfg->n_layers > 1 && (cfg->hidden < 1 || cfg->hidden > HS_NN_MAX_DIM))
    return hs__fail(HS_ERR_INVALID_ARG, "model: hidden %d (need 1..%d)", cfg->hidden,
                    HS_NN_MAX_DIM);
  if (!(cfg->dropout >= 0.0f && cfg->dropout < 1.0f))
    return hs__fail(HS_ERR_INVALID_ARG, "model: dropout %g (need [0, 1))", (double)cfg->dropout);
  const hs_optim_cfg *o = &cfg->optim;
  if (o->kind != HS_OPTIM_SGD && o->kind != HS_OPTIM_ADAM)
    return hs__fail(HS_ERR_INVALID_ARG, "model: optimizer kind %d", (int)o->kind);
  if (o->wd_mode != HS_WD_L2 && o->wd_mode != HS_WD_DECOUPLED)
    return hs__fail(HS_ERR_INVALID_ARG, "model: weight decay mode %d", (int)o->wd_mode);
  if (!(o->lr > 0.0f) || !(o->weight_decay >= 0.0f) || !(o->momentum >= 0.0f && o->momentum < 1.0f))
    return hs__fail(HS_ERR_INVALID_ARG, "model: lr %g, weight decay %g, momentum %g",
                    (double)o->lr, (double)o->weight_decay, (double)o->momentum);
  if (o->kind == HS_OPTIM_ADAM &&
      !(o->beta1 >= 0.0f && o->beta1 < 1.0f && o->beta2 >= 0.0f && o->beta2 < 1.0f && o->eps > 0.0f))
    return hs__fail(HS_ERR_INVALID_ARG, "model: Adam beta1 %g, beta2 %g, eps %g",
                    (double)o->beta1, (double)o->beta2, (double)o->eps);

  out->kind = cfg->kind;
  out->ops = ops;
  out->heads = 1;
  out->n_layers = cfg->n_layers;
  out->dims[0] = cfg->in_dim;
  for (int l = 1; l < cfg->n_layers; l++) out->dims[l] = cfg->hidden;
  out->dims[cfg->n_layers] = cfg->n_classes;
  return ops->layout(cfg, out);
}

void hs__glorot_fill(float *w, size_t n, uint64_t seed, int layer, size_t first, double fan_in,
                     double fan_out) {
  float limit = (float)sqrt(6.0 / (fan_in + fan_out));
  for (size_t e = 0; e < n; e++) {
    float u = hs_philox_unit(hs_train_word(seed, 0, 0, HS_RNG_PURPOSE_INIT, (uint32_t)layer,
                                           (uint32_t)(first + e)));
    w[e] = (2.0f * u - 1.0f) * limit;
  }
}

void hs__model_init_params(const hs_model_shape *shape, uint64_t seed, float *params) {
  shape->ops->init(shape, seed, params);
}

const char *hs__nn_kind_name(int kind) {
  const hs_model_ops *ops = hs__model_ops(kind);
  return ops ? ops->name : "unknown";
}

hs_status hs__model_create(const hs_model_cfg *cfg, hs_model *out) {
  memset(out, 0, sizeof *out);
  hs_status st = hs__model_shape(cfg, &out->shape);
  if (st != HS_OK) return st;
  out->cfg = *cfg;
  size_t n = out->shape.n_params;
  out->params = malloc(sizeof(float) * n);
  out->m = calloc(n, sizeof(float));
  out->v = calloc(n, sizeof(float));
  if (!out->params || !out->m || !out->v) {
    hs__model_destroy(out);
    return hs__fail(HS_ERR_NOMEM, "model: %zu parameters", n);
  }
  hs__model_init_params(&out->shape, cfg->seed, out->params);
  return HS_OK;
}

void hs__model_destroy(hs_model *m) {
  free(m->params);
  free(m->m);
  free(m->v);
  memset(m, 0, sizeof *m);
}

void hs__optim_coef(const hs_optim_cfg *cfg, uint64_t t, hs_optim_coef *out) {
  memset(out, 0, sizeof *out);
  double lr = cfg->lr, wd = cfg->weight_decay;
  out->l2 = cfg->wd_mode == HS_WD_L2 ? (float)wd : 0.0f;
  out->decay = cfg->wd_mode == HS_WD_DECOUPLED ? (float)(1.0 - lr * wd) : 1.0f;
  out->momentum = cfg->momentum;
  out->eps = cfg->eps;
  out->beta1 = cfg->beta1;
  out->beta2 = cfg->beta2;
  out->one_minus_beta1 = (float)(1.0 - (double)cfg->beta1);
  out->one_minus_beta2 = (float)(1.0 - (double)cfg->beta2);
  if (cfg->kind == HS_OPTIM_ADAM) {
    double bc1 = 1.0 - pow((double)cfg->beta1, (double)t);
    double bc2 = 1.0 - pow((double)cfg->beta2, (double)t);
    out->lr = (float)(lr / bc1);
    out->inv_sqrt_bc2 = (float)(1.0 / sqrt(bc2));
  } else {
    out->lr = (float)lr;
    out->inv_sqrt_bc2 = 1.0f;
  }
}
