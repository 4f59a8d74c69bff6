/* Plain-C reference of one training step: the model's forward (its
 * table), the loss, the model's backward, the optimizer — in the order
 * the device step runs them. */
#include <stdlib.h>
#include <string.h>

#include "nn/model_ops.h"
#include "nn/ref_nn.h"
#include "nn/sparse_first.h"

static hs_status check_batch(const hs_model_shape *shape, const hs_nn_batch *b, bool need_labels) {
  if (b->n_layers != shape->n_layers)
    return hs__fail(HS_ERR_INVALID_ARG, "batch has %d blocks, model %d layers", b->n_layers,
                    shape->n_layers);
  if (need_labels && !b->labels) return hs__fail(HS_ERR_INVALID_ARG, "batch has no labels");
  if (b->blocks[b->n_layers - 1].n_dst < 1 && need_labels)
    return hs__fail(HS_ERR_INVALID_ARG, "batch has no seeds");
  if (b->sfeat && shape->kind != HS_NN_SAGE)
    return hs__fail(HS_ERR_UNSUPPORTED, "sparse feature rows reach only GraphSAGE's first layer");
  hs_status st = hs__nn_batch_validate(b, shape->dims[shape->n_layers]);
  if (st == HS_OK && b->sfeat)
    st = hs__nn_sparse_validate(b->sfeat, b->blocks[0].n_src, shape->dims[0]);
  return st;
}

hs_status hs__ref_forward(const hs_model_shape *shape, const float *params, const hs_nn_batch *b,
                          float *logits) {
  void *ws = NULL;
  const float *out = NULL;
  hs_status st = check_batch(shape, b, false);
  if (st != HS_OK) return st;
  hs_nn_keys k = {0};
  st = shape->ops->ref_forward(shape, params, b, &k, &ws, &out);
  if (st == HS_OK) {
    int L = shape->n_layers;
    int32_t n = b->blocks[L - 1].n_dst, c = shape->dims[L];
    const float *bias = params + shape->b_off[L - 1];
    for (int32_t i = 0; i < n; i++)
      for (int32_t j = 0; j < c; j++)
        logits[(size_t)i * (size_t)c + (size_t)j] = out[(size_t)i * (size_t)c + (size_t)j] + bias[j];
  }
  shape->ops->ref_free(ws);
  return st;
}

hs_status hs__ref_gradients_x(const hs_model *m, const hs_nn_batch *b, uint32_t epoch,
                              uint32_t batch, bool train, float *grads, float *dx,
                              hs_step_stats *stats) {
  const hs_model_shape *shape = &m->shape;
  int L = shape->n_layers;
  void *ws = NULL;
  const float *out = NULL;
  float *loss_rows = NULL, *dout = NULL;
  int32_t *correct_rows = NULL;
  hs_status st = check_batch(shape, b, true);
  if (st != HS_OK) return st;
  hs_nn_keys k = {.p = train ? m->cfg.dropout : 0.0f, .seed = m->cfg.seed, .epoch = epoch,
                  .batch = batch};
  st = shape->ops->ref_forward(shape, m->params, b, &k, &ws, &out);
  if (st != HS_OK) goto fail;
  int32_t n_seeds = b->blocks[L - 1].n_dst, n_classes = shape->dims[L];
  loss_rows = malloc(sizeof(float) * (size_t)n_seeds);
  correct_rows = malloc(sizeof(int32_t) * (size_t)n_seeds);
  dout = malloc(sizeof(float) * (size_t)n_seeds * (size_t)n_classes);
  if (!loss_rows || !correct_rows || !dout) {
    st = hs__fail(HS_ERR_NOMEM, "reference loss: %d seeds", n_seeds);
    goto fail;
  }
  hs__ref_softmax_ce(out, m->params + shape->b_off[L - 1], b->labels, n_seeds, n_classes, dout,
                     loss_rows, correct_rows);
  hs_step_stats s = {.n_seeds = n_seeds};
  hs__ref_loss_reduce(loss_rows, correct_rows, n_seeds, &s.loss, &s.correct);
  st = shape->ops->ref_backward(shape, m->params, b, &k, ws, dout, grads, dx);
  if (st == HS_OK && stats) *stats = s;
fail:
  shape->ops->ref_free(ws);
  free(loss_rows);
  free(correct_rows);
  free(dout);
  return st;
}

hs_status hs__ref_gradients(const hs_model *m, const hs_nn_batch *b, uint32_t epoch, uint32_t batch,
                            bool train, float *grads, hs_step_stats *stats) {
  return hs__ref_gradients_x(m, b, epoch, batch, train, grads, NULL, stats);
}

hs_status hs__ref_train_step(hs_model *m, const hs_nn_batch *b, uint32_t epoch, uint32_t batch,
                             hs_step_stats *stats) {
  float *grads = malloc(sizeof(float) * m->shape.n_params);
  if (!grads) return hs__fail(HS_ERR_NOMEM, "reference step: %zu gradients", m->shape.n_params);
  hs_status st = hs__ref_gradients(m, b, epoch, batch, true, grads, stats);
  if (st == HS_OK) {
    hs_optim_coef k;
    m->step++;
    hs__optim_coef(&m->cfg.optim, m->step, &k);
    hs__ref_optim(m->cfg.optim.kind, &k, m->shape.n_params, m->params, grads, m->m, m->v);
  }
  free(grads);
  return st;
}
