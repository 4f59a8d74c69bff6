/* Plain-C reference of one training step: forward, loss, backward,
 * optimizer, composed from the kernel references in the order the device
 * step runs them. */
#include <stdlib.h>
#include <string.h>

#include "nn/ref_nn.h"
#include "nn/sparse_first.h"

typedef struct ref_ws {
  float *cat[HS_NN_MAX_LAYERS]; /* [self | mean] inputs of each layer's GEMM */
  float *h[HS_NN_MAX_LAYERS];   /* h[l]: input of layer l (l >= 1) */
  float *dz[HS_NN_MAX_LAYERS];  /* gradient at layer l's pre-activation */
  float *logits;                /* last layer's GEMM output, bias not added */
} ref_ws;

static void ws_free(ref_ws *ws) {
  for (int l = 0; l < HS_NN_MAX_LAYERS; l++) {
    free(ws->cat[l]);
    free(ws->h[l]);
    free(ws->dz[l]);
  }
  free(ws->logits);
  memset(ws, 0, sizeof *ws);
}

/* rows x cols floats (at least one), NULL on overflow or exhaustion. */
static void *alloc_mat(int64_t rows, int64_t cols, size_t elem) {
  size_t n;
  if (rows < 0 || cols < 0 || !hs__mul_size((size_t)rows, (size_t)cols, &n) ||
      !hs__mul_size(n, elem, &n))
    return NULL;
  return malloc(n ? n : elem);
}

static hs_status check_batch(const hs_model_shape *shape, const hs_nn_batch *b, bool need_labels) {
  if (b->n_layers != shape->n_layers)
    return hs__fail(HS_ERR_INVALID_ARG, "batch has %d blocks, model %d layers", b->n_layers,
                    shape->n_layers);
  if (need_labels && !b->labels) return hs__fail(HS_ERR_INVALID_ARG, "batch has no labels");
  if (b->blocks[b->n_layers - 1].n_dst < 1 && need_labels)
    return hs__fail(HS_ERR_INVALID_ARG, "batch has no seeds");
  hs_status st = hs__nn_batch_validate(b, shape->dims[shape->n_layers]);
  if (st == HS_OK && b->sfeat)
    st = hs__nn_sparse_validate(b->sfeat, b->blocks[0].n_src, shape->dims[0]);
  return st;
}

/* Layer 0 over sparse rows (sparse_first.h) into out (n_dst x d_out). */
static hs_status sparse_first_fwd(const hs_model_shape *shape, const float *params,
                                  const hs_nn_batch *b, float *out) {
  const hs_nn_block *blk = &b->blocks[0];
  int32_t d_in = shape->dims[0], d_out = shape->dims[1];
  const float *w_self = params + shape->w_off[0];
  const float *w_neigh = w_self + (size_t)d_in * (size_t)d_out;
  if (hs__sparse_first_order(b->sfeat, blk) == HS_SPARSE_AGGREGATE_FIRST) {
    hs__ref_sp_fwd_af(b->sfeat, blk, w_self, w_neigh, d_out, out);
    return HS_OK;
  }
  float *h = alloc_mat(blk->n_src, d_out, sizeof(float));
  if (!h) return hs__fail(HS_ERR_NOMEM, "reference forward: sparse layer 0");
  hs__ref_sp_mm(b->sfeat, 0, blk->n_src, w_neigh, d_out, h);
  hs__ref_sp_fwd_mf(b->sfeat, blk, w_self, h, d_out, out);
  free(h);
  return HS_OK;
}

/* Layer 0's weight gradient over sparse rows. */
static hs_status sparse_first_wgrad(const hs_model_shape *shape, const hs_nn_batch *b,
                                    const float *dz, float *dw) {
  const hs_nn_block *blk = &b->blocks[0];
  int32_t d_in = shape->dims[0], d_out = shape->dims[1];
  int32_t *t_ptr = alloc_mat((int64_t)blk->n_src + 1, 1, sizeof(int32_t));
  int32_t *t_dst = alloc_mat(hs__nn_block_edges(blk), 1, sizeof(int32_t));
  float *g = alloc_mat(blk->n_src, d_out, sizeof(float));
  hs_status st = HS_OK;
  if (!t_ptr || !t_dst || !g) {
    st = hs__fail(HS_ERR_NOMEM, "reference backward: sparse layer 0");
  } else {
    hs__nn_block_transpose(blk, t_ptr, t_dst);
    hs__ref_sp_gsum(blk, t_ptr, t_dst, dz, d_out, g);
    hs__ref_sp_wgrad(b->sfeat, blk->n_dst, dz, g, d_in, d_out, dw);
  }
  free(t_ptr);
  free(t_dst);
  free(g);
  return st;
}

/* Every layer's forward; dropout when p > 0. */
static hs_status forward(const hs_model_shape *shape, const float *params, const hs_nn_batch *b,
                         float p, uint64_t seed, uint32_t epoch, uint32_t batch, ref_ws *ws) {
  int L = shape->n_layers;
  const float *in = b->feat;
  for (int l = 0; l < L; l++) {
    const hs_nn_block *blk = &b->blocks[l];
    int32_t d_in = shape->dims[l], d_out = shape->dims[l + 1];
    bool sparse = l == 0 && b->sfeat;
    float *out = alloc_mat(blk->n_dst, d_out, sizeof(float));
    if (!sparse) ws->cat[l] = alloc_mat(blk->n_dst, 2 * (int64_t)d_in, sizeof(float));
    if (l < L - 1)
      ws->h[l + 1] = out;
    else
      ws->logits = out;
    if (!out || (!sparse && !ws->cat[l]))
      return hs__fail(HS_ERR_NOMEM, "reference forward: layer %d, %d rows", l, blk->n_dst);
    if (sparse) {
      hs_status st = sparse_first_fwd(shape, params, b, out);
      if (st != HS_OK) return st;
    } else {
      hs__ref_agg_fwd(blk, in, d_in, ws->cat[l]);
      hs__ref_gemm(false, false, (size_t)blk->n_dst, (size_t)d_out, 2 * (size_t)d_in, 1.0f,
                   ws->cat[l], 2 * (size_t)d_in, params + shape->w_off[l], (size_t)d_out, 0.0f,
                   out, (size_t)d_out);
    }
    if (l < L - 1)
      hs__ref_bias_act_fwd(out, blk->n_dst, d_out, params + shape->b_off[l], true, p, seed, epoch,
                           batch, (uint32_t)l);
    in = out;
  }
  return HS_OK;
}

hs_status hs__ref_forward(const hs_model_shape *shape, const float *params, const hs_nn_batch *b,
                          float *logits) {
  ref_ws ws = {0};
  hs_status st = check_batch(shape, b, false);
  if (st != HS_OK) goto fail;
  st = forward(shape, params, b, 0.0f, 0, 0, 0, &ws);
  if (st != HS_OK) goto fail;
  int L = shape->n_layers;
  int32_t n = b->blocks[L - 1].n_dst, c = shape->dims[L];
  const float *bias = params + shape->b_off[L - 1];
  for (int32_t i = 0; i < n; i++)
    for (int32_t k = 0; k < c; k++)
      logits[(size_t)i * (size_t)c + (size_t)k] = ws.logits[(size_t)i * (size_t)c + (size_t)k] + bias[k];
fail:
  ws_free(&ws);
  return st;
}

hs_status hs__ref_gradients(const hs_model *m, const hs_nn_batch *b, uint32_t epoch, uint32_t batch,
                            bool train, float *grads, hs_step_stats *stats) {
  const hs_model_shape *shape = &m->shape;
  int L = shape->n_layers;
  ref_ws ws = {0};
  float *loss_rows = NULL;
  int32_t *correct_rows = NULL, *t_ptr = NULL, *t_dst = NULL;
  float *dcat = NULL;
  hs_status st = check_batch(shape, b, true);
  if (st != HS_OK) goto fail;
  float p = train ? m->cfg.dropout : 0.0f;
  st = forward(shape, m->params, b, p, m->cfg.seed, epoch, batch, &ws);
  if (st != HS_OK) goto fail;

  const hs_nn_block *out = &b->blocks[L - 1];
  int32_t n_seeds = out->n_dst, n_classes = shape->dims[L];
  loss_rows = alloc_mat(n_seeds, 1, sizeof(float));
  correct_rows = alloc_mat(n_seeds, 1, sizeof(int32_t));
  ws.dz[L - 1] = alloc_mat(n_seeds, n_classes, sizeof(float));
  if (!loss_rows || !correct_rows || !ws.dz[L - 1]) {
    st = hs__fail(HS_ERR_NOMEM, "reference loss: %d seeds", n_seeds);
    goto fail;
  }
  hs__ref_softmax_ce(ws.logits, m->params + shape->b_off[L - 1], b->labels, n_seeds, n_classes,
                     ws.dz[L - 1], loss_rows, correct_rows);
  hs_step_stats s = {.n_seeds = n_seeds};
  hs__ref_loss_reduce(loss_rows, correct_rows, n_seeds, &s.loss, &s.correct);

  float scale = hs__dropout_scale(p);
  for (int l = L - 1; l >= 0; l--) {
    const hs_nn_block *blk = &b->blocks[l];
    size_t d_in = (size_t)shape->dims[l], d_out = (size_t)shape->dims[l + 1];
    hs__ref_colsum(ws.dz[l], blk->n_dst, (int32_t)d_out, grads + shape->b_off[l]);
    if (l == 0 && b->sfeat) {
      st = sparse_first_wgrad(shape, b, ws.dz[0], grads + shape->w_off[0]);
      break;
    }
    hs__ref_gemm(true, false, 2 * d_in, d_out, (size_t)blk->n_dst, 1.0f, ws.cat[l], 2 * d_in,
                 ws.dz[l], d_out, 0.0f, grads + shape->w_off[l], d_out);
    if (l == 0) break; /* no gradient for the input features */
    free(dcat);
    free(t_ptr);
    free(t_dst);
    dcat = alloc_mat(blk->n_dst, 2 * (int64_t)d_in, sizeof(float));
    t_ptr = alloc_mat((int64_t)blk->n_src + 1, 1, sizeof(int32_t));
    t_dst = alloc_mat(hs__nn_block_edges(blk), 1, sizeof(int32_t));
    ws.dz[l - 1] = alloc_mat(blk->n_src, (int64_t)d_in, sizeof(float));
    if (!dcat || !t_ptr || !t_dst || !ws.dz[l - 1]) {
      st = hs__fail(HS_ERR_NOMEM, "reference backward: layer %d", l);
      goto fail;
    }
    hs__ref_gemm(false, true, (size_t)blk->n_dst, 2 * d_in, d_out, 1.0f, ws.dz[l], d_out,
                 m->params + shape->w_off[l], d_out, 0.0f, dcat, 2 * d_in);
    hs__nn_block_transpose(blk, t_ptr, t_dst);
    hs__ref_agg_bwd(blk, t_ptr, t_dst, dcat, (int32_t)d_in, ws.dz[l - 1]);
    hs__ref_act_bwd(ws.h[l], blk->n_src, (int32_t)d_in, scale, ws.dz[l - 1]);
  }
  if (stats) *stats = s;
fail:
  ws_free(&ws);
  free(loss_rows);
  free(correct_rows);
  free(dcat);
  free(t_ptr);
  free(t_dst);
  return st;
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
