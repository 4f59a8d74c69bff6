/* The device training step (see trainer.h): the model's training program,
 * the GEMM provider, the buffers of one batch, and the parts of the step
 * every model shares (upload, loss, optimizer, statistics); the model's
 * table runs its forward and backward passes. */
#include <stdlib.h>
#include <string.h>

#include "hs_launch.h"
#include "nn/nn_rng.h"
#include "nn/trainer_internal.h"

/* ---- helpers ------------------------------------------------------------- */

hs_status hs__trainer_reserve(hs_trainer *t, hs_dbuf *b, size_t count, size_t elem) {
  size_t bytes;
  if (!hs__mul_size(count, elem, &bytes))
    return hs__fail(HS_ERR_RANGE, "trainer: buffer of %zu x %zu bytes overflows", count, elem);
  if (b->m && b->cap >= bytes) return HS_OK;
  hs__log(HS_LOG_TRAIN, "trainer: buffer grows to %zu bytes", bytes);
  return hs__mem_reserve(t->ctx, CL_MEM_READ_WRITE, bytes, &b->m, &b->cap);
}

void hs__trainer_drop(hs_dbuf *b) {
  hs__mem_release(&b->m);
  b->cap = 0;
}

static hs_status collect_spans(hs_trainer *t);

static hs_status span_open(void *user, cl_event *mark) {
  hs_trainer *t = user;
  *mark = NULL;
  if (!t->opts.profile) return HS_OK;
  if (t->n_spans == MAX_SPANS) {
    hs_status st = collect_spans(t);
    if (st != HS_OK) return st;
  }
  return hs__queue_marker(t->q, 0, NULL, mark);
}

static void span_close(void *user, hs_train_phase ph, const char *name, cl_event mark,
                       cl_event end) {
  hs_trainer *t = user;
  if (!t->opts.profile) return;
  t->span_mark[t->n_spans] = mark;
  t->span_end[t->n_spans] = end;
  t->span_phase[t->n_spans] = ph;
  t->span_name[t->n_spans] = name;
  t->n_spans++;
}

hs_status hs__trainer_run_k(hs_trainer *t, hs_train_phase ph, const char *name, cl_kernel k,
                            size_t wg, size_t g0, size_t g1, const hs_karg *args, int n_args) {
  return hs__kset_launch(&t->ks, ph, name, k, wg, g0, g1, args, n_args);
}

hs_status hs__trainer_gemm(hs_trainer *t, const hs_gemm_op *op) {
  cl_event mark, ev = NULL;
  hs_status st = span_open(t, &mark);
  if (st != HS_OK) return st;
  st = hs__gemm_run(t->gemm, op, 0, NULL, t->opts.profile ? &ev : NULL);
  if (st != HS_OK) {
    hs__events_release(&mark, 1);
    return st;
  }
  span_close(t, HS_PHASE_GEMM, "gemm", mark, ev);
  return HS_OK;
}

/* ---- create / destroy ----------------------------------------------------- */

hs_status hs__trainer_create(const hs_ctx *ctx, const hs_dev *dev, cl_command_queue q,
                             const hs_model *m, const hs_trainer_opts *opts, hs_trainer **out) {
  *out = NULL;
  hs_trainer *t = calloc(1, sizeof *t);
  if (!t) return hs__fail(HS_ERR_NOMEM, "trainer");
  t->ctx = ctx;
  t->dev = *dev;
  t->q = hs__queue_retain(q);
  if (opts) t->opts = *opts;
  t->cfg = m->cfg;
  t->shape = m->shape;
  t->ops = m->shape.ops;
  hs_status st;
  if (t->opts.profile && !dev->info.queue_profiling) {
    st = hs__fail(HS_ERR_UNSUPPORTED, "trainer: '%s' cannot profile queues", dev->info.name);
    goto fail;
  }
  if ((st = hs__kset_create(ctx, dev, q, &t->ops->program, t->opts.wg, &t->ks)) != HS_OK)
    goto fail;
  if (t->opts.profile) {
    t->ks.span_open = span_open;
    t->ks.span_close = span_close;
    t->ks.span_user = t;
  }
  st = hs__gemm_create(ctx, dev, q, t->opts.gemm, t->opts.gemm_threads, &t->gemm);
  if (st != HS_OK) goto fail;
  size_t n = t->shape.n_params;
  if ((st = hs__trainer_reserve(t, &t->params, n, sizeof(float))) != HS_OK ||
      (st = hs__trainer_reserve(t, &t->grads, n, sizeof(float))) != HS_OK ||
      (st = hs__trainer_reserve(t, &t->mom1, n, sizeof(float))) != HS_OK ||
      (st = hs__trainer_reserve(t, &t->mom2, n, sizeof(float))) != HS_OK ||
      (st = hs__trainer_reserve(t, &t->stat_loss, STATS_RING, sizeof(float))) != HS_OK ||
      (st = hs__trainer_reserve(t, &t->stat_correct, STATS_RING, sizeof(int32_t))) != HS_OK)
    goto fail;
  if ((st = hs__trainer_load_model(t, m)) != HS_OK) goto fail;
  *out = t;
  return HS_OK;
fail:
  hs__trainer_destroy(t);
  return st;
}

void hs__trainer_destroy(hs_trainer *t) {
  if (!t) return;
  if (t->q) hs__queue_finish(t->q);
  for (int i = 0; i < t->n_spans; i++) {
    hs__events_release(&t->span_mark[i], 1);
    hs__events_release(&t->span_end[i], 1);
  }
  hs_dbuf *all[] = {&t->params,    &t->grads,        &t->mom1,        &t->mom2,
                    &t->feat,      &t->labels,       &t->logits,      &t->cursor,
                    &t->scan_sums, &t->colsum_part,  &t->loss_rows,   &t->correct_rows,
                    &t->dx,        &t->stat_loss,    &t->stat_correct};
  for (size_t i = 0; i < HS_ARRAY_LEN(all); i++) hs__trainer_drop(all[i]);
  for (int l = 0; l < HS_NN_MAX_LAYERS; l++) {
    hs__trainer_drop(&t->row_ptr[l]), hs__trainer_drop(&t->col[l]);
    hs__trainer_drop(&t->t_ptr[l]), hs__trainer_drop(&t->t_list[l]);
    hs__trainer_drop(&t->act[l]), hs__trainer_drop(&t->dz[l]);
    for (int k = 0; k < HS_NN_LAYER_SLOTS; k++) hs__trainer_drop(&t->mb[l][k]);
  }
  for (int k = 0; k < HS_NN_BATCH_SLOTS; k++) hs__trainer_drop(&t->mw[k]);
  hs__sparse_first_release(t);
  hs__gemm_destroy(t->gemm);
  hs__kset_release(&t->ks);
  hs__queue_release(&t->q);
  free(t);
}

hs_gemm_kind hs__trainer_gemm_kind(const hs_trainer *t) { return hs__gemm_kind_of(t->gemm); }

/* A model of the trainer's kind and layout, or a clear refusal. */
static hs_status same_model(const hs_trainer *t, const hs_model *m) {
  if (m->shape.kind != t->shape.kind || m->shape.heads != t->shape.heads)
    return hs__fail(HS_ERR_INVALID_ARG, "trainer: model is %s (%d heads), trainer %s (%d heads)",
                    hs__nn_kind_name(m->shape.kind), m->shape.heads,
                    hs__nn_kind_name(t->shape.kind), t->shape.heads);
  if (m->shape.n_params != t->shape.n_params)
    return hs__fail(HS_ERR_INVALID_ARG, "trainer: model has %zu parameters, trainer %zu",
                    m->shape.n_params, t->shape.n_params);
  return HS_OK;
}

hs_status hs__trainer_load_model(hs_trainer *t, const hs_model *m) {
  size_t n = t->shape.n_params;
  hs_status st = same_model(t, m);
  if (st != HS_OK) return st;
  if ((st = hs__mem_write(t->q, t->params.m, true, 0, n * 4, m->params, 0, NULL, NULL)) != HS_OK ||
      (st = hs__mem_write(t->q, t->mom1.m, true, 0, n * 4, m->m, 0, NULL, NULL)) != HS_OK ||
      (st = hs__mem_write(t->q, t->mom2.m, true, 0, n * 4, m->v, 0, NULL, NULL)) != HS_OK)
    return st;
  t->step = m->step;
  t->cfg.seed = m->cfg.seed;
  return HS_OK;
}

hs_status hs__trainer_sync_model(hs_trainer *t, hs_model *m) {
  size_t n = t->shape.n_params;
  hs_status st = same_model(t, m);
  if (st != HS_OK) return st;
  if ((st = hs__mem_read(t->q, t->params.m, true, 0, n * 4, m->params, 0, NULL, NULL)) != HS_OK ||
      (st = hs__mem_read(t->q, t->mom1.m, true, 0, n * 4, m->m, 0, NULL, NULL)) != HS_OK ||
      (st = hs__mem_read(t->q, t->mom2.m, true, 0, n * 4, m->v, 0, NULL, NULL)) != HS_OK)
    return st;
  m->step = t->step;
  return HS_OK;
}

hs_status hs__trainer_read_state(hs_trainer *t, float *params, float *m, float *v,
                                 uint64_t *step) {
  size_t n = t->shape.n_params;
  hs_status st;
  if ((st = hs__mem_read(t->q, t->params.m, true, 0, n * 4, params, 0, NULL, NULL)) != HS_OK ||
      (st = hs__mem_read(t->q, t->mom1.m, true, 0, n * 4, m, 0, NULL, NULL)) != HS_OK ||
      (st = hs__mem_read(t->q, t->mom2.m, true, 0, n * 4, v, 0, NULL, NULL)) != HS_OK)
    return st;
  *step = t->step;
  return HS_OK;
}

hs_status hs__trainer_write_state(hs_trainer *t, const float *params, const float *m,
                                  uint64_t step) {
  size_t n = t->shape.n_params;
  hs_status st;
  if ((st = hs__mem_write(t->q, t->params.m, true, 0, n * 4, params, 0, NULL, NULL)) != HS_OK ||
      (st = hs__mem_write(t->q, t->mom1.m, true, 0, n * 4, m, 0, NULL, NULL)) != HS_OK)
    return st;
  t->step = step;
  return HS_OK;
}

/* ---- batch ------------------------------------------------------------------ */

/* Shapes of one layer's block. */
typedef struct layer_shape {
  int32_t n_dst, n_src, n_edges;
} layer_shape;

/* Record the batch's shapes and grow every buffer the step needs for them
 * (the block arrays only when `own_blocks`), the model's through its
 * table. */
static hs_status reserve_batch(hs_trainer *t, const layer_shape *ls, bool own_blocks) {
  const hs_model_shape *sh = &t->shape;
  int L = sh->n_layers;
  hs_status st;
  if (ls[L - 1].n_dst < 1) return hs__fail(HS_ERR_INVALID_ARG, "trainer: batch has no seeds");
  size_t max_src = 0, part = 0;
  for (int l = 0; l < L; l++) {
    /* Dropout numbers the elements of each output matrix in 32 bits. */
    if ((uint64_t)ls[l].n_dst * (uint64_t)sh->dims[l + 1] > UINT32_MAX)
      return hs__fail(HS_ERR_RANGE, "trainer: layer %d output of %d x %d exceeds 2^32 elements", l,
                      ls[l].n_dst, sh->dims[l + 1]);
    t->n_dst[l] = ls[l].n_dst;
    t->n_src[l] = ls[l].n_src;
    t->n_edges[l] = ls[l].n_edges;
    t->transposed[l] = false;
    size_t d_in = (size_t)sh->dims[l], d_out = (size_t)sh->dims[l + 1];
    size_t nd = (size_t)ls[l].n_dst, ns = (size_t)ls[l].n_src, ne = (size_t)ls[l].n_edges;
    size_t chunks = hs__colsum_chunks(nd);
    if (chunks * d_out > part) part = chunks * d_out;
    if (ns > max_src) max_src = ns;
    if (own_blocks && ((st = hs__trainer_reserve(t, &t->row_ptr[l], nd + 1, 4)) != HS_OK ||
                       (st = hs__trainer_reserve(t, &t->col[l], ne, 4)) != HS_OK))
      return st;
    if ((st = hs__trainer_reserve(t, &t->dz[l], nd, d_out * 4)) != HS_OK) return st;
    if (l > 0 && (st = hs__trainer_reserve(t, &t->act[l], ns, d_in * 4)) != HS_OK) return st;
  }
  size_t n_seeds = (size_t)t->n_dst[L - 1], c = (size_t)sh->dims[L];
  size_t n_in = (size_t)t->n_src[0], d0 = (size_t)sh->dims[0];
  if ((!t->x_sparse && (st = hs__trainer_reserve(t, &t->feat, n_in, d0 * 4)) != HS_OK) ||
      (st = hs__trainer_reserve(t, &t->labels, n_seeds, 4)) != HS_OK ||
      (st = hs__trainer_reserve(t, &t->logits, n_seeds, c * 4)) != HS_OK ||
      (st = hs__trainer_reserve(t, &t->loss_rows, n_seeds, 4)) != HS_OK ||
      (st = hs__trainer_reserve(t, &t->correct_rows, n_seeds, 4)) != HS_OK ||
      (st = hs__trainer_reserve(t, &t->cursor, max_src, 4)) != HS_OK ||
      (st = hs__trainer_reserve(t, &t->colsum_part, part, 4)) != HS_OK ||
      (st = hs__trainer_reserve(t, &t->scan_sums, max_src / HS_SCAN_CHUNK + 1, 4)) != HS_OK)
    return st;
  if (t->opts.input_grad && !t->x_sparse &&
      (st = hs__trainer_reserve(t, &t->dx, n_in, d0 * 4)) != HS_OK)
    return st;
  return t->ops->dev_reserve(t);
}

/* The features (unless the caller assembles them) and labels of a batch
 * whose shapes reserve_batch recorded. */
static hs_status upload_rows(hs_trainer *t, const float *feat, const hs_nn_sparse *sfeat,
                             const int32_t *labels) {
  const hs_model_shape *sh = &t->shape;
  int L = sh->n_layers;
  size_t n_seeds = (size_t)t->n_dst[L - 1], n_in = (size_t)t->n_src[0];
  size_t d0 = (size_t)sh->dims[0];
  hs_status st;
  if (sfeat && (st = hs__sparse_first_upload(t, sfeat)) != HS_OK) return st;
  if (!sfeat && feat &&
      (st = hs__mem_write(t->q, t->feat.m, true, 0, n_in * d0 * 4, feat, 0, NULL, NULL)) != HS_OK)
    return st;
  t->has_labels = labels != NULL;
  if (labels &&
      (st = hs__mem_write(t->q, t->labels.m, true, 0, n_seeds * 4, labels, 0, NULL, NULL)) != HS_OK)
    return st;
  return HS_OK;
}

/* Start an upload of a batch of `n_layers` blocks (the model's count),
 * its features sparse or not. Sparse rows reach GraphSAGE's layer 0 only
 * (sparse_first.h); other models take them through an input provider. */
static hs_status begin_upload(hs_trainer *t, int n_layers, bool sparse) {
  t->uploaded = false;
  t->x_sparse = sparse;
  if (n_layers != t->shape.n_layers)
    return hs__fail(HS_ERR_INVALID_ARG, "trainer: batch has %d blocks, model %d layers",
                    n_layers, t->shape.n_layers);
  if (sparse && t->shape.kind != HS_NN_SAGE)
    return hs__fail(HS_ERR_UNSUPPORTED,
                    "trainer: sparse feature rows reach only GraphSAGE's first layer so far; "
                    "%s needs dense features (hetsage convert --feat-format dense)",
                    t->ops->title);
  if (sparse && (t->input.mul || t->opts.input_grad))
    return hs__fail(HS_ERR_UNSUPPORTED, "trainer: sparse feature rows with an input provider "
                    "or input gradients");
  return HS_OK;
}

hs_status hs__trainer_upload(hs_trainer *t, const hs_nn_batch *b) {
  const hs_model_shape *sh = &t->shape;
  int L = sh->n_layers;
  hs_status st = begin_upload(t, b->n_layers, b->sfeat != NULL);
  if (st != HS_OK) return st;
  /* feat NULL: the caller assembles the features on the device
   * (hs__trainer_feat_buffer); the rest of the batch is checked as usual. */
  static const float no_feat = 0.0f;
  hs_nn_batch checked = *b;
  if (!checked.feat) checked.feat = &no_feat;
  st = hs__nn_batch_validate(&checked, sh->dims[L]);
  if (st == HS_OK && b->sfeat)
    st = hs__nn_sparse_validate(b->sfeat, b->blocks[0].n_src, sh->dims[0]);
  if (st != HS_OK) return st;
  layer_shape ls[HS_NN_MAX_LAYERS] = {{0}};
  for (int l = 0; l < L; l++)
    ls[l] = (layer_shape){b->blocks[l].n_dst, b->blocks[l].n_src,
                          hs__nn_block_edges(&b->blocks[l])};
  if ((st = reserve_batch(t, ls, true)) != HS_OK) return st;
  for (int l = 0; l < L; l++) {
    const hs_nn_block *blk = &b->blocks[l];
    size_t nd = (size_t)blk->n_dst, ne = (size_t)t->n_edges[l];
    if ((st = hs__mem_write(t->q, t->row_ptr[l].m, true, 0, (nd + 1) * 4, blk->row_ptr, 0, NULL,
                            NULL)) != HS_OK ||
        (st = hs__mem_write(t->q, t->col[l].m, true, 0, ne * 4, blk->col, 0, NULL, NULL)) != HS_OK)
      return st;
    t->blk_rp[l] = t->row_ptr[l].m;
    t->blk_col[l] = t->col[l].m;
  }
  if ((st = upload_rows(t, b->feat, b->sfeat, b->labels)) != HS_OK) return st;
  t->uploaded = true;
  return HS_OK;
}

hs_status hs__trainer_upload_dev(hs_trainer *t, const hs_nn_dev_batch *b, cl_uint n_wait,
                                 const cl_event *wait) {
  const hs_model_shape *sh = &t->shape;
  int L = sh->n_layers;
  hs_status st = begin_upload(t, b->n_layers, b->sfeat != NULL);
  if (st != HS_OK) return st;
  layer_shape ls[HS_NN_MAX_LAYERS] = {{0}};
  for (int l = 0; l < L; l++) {
    const hs_nn_dev_block *d = &b->blocks[l];
    /* The arrays stay on the device: only their shapes can be checked. */
    if (d->n_dst < 0 || d->n_src < d->n_dst || d->n_edges < 0 || !d->row_ptr || !d->col)
      return hs__fail(HS_ERR_INVALID_ARG, "trainer: device block %d: %d dst, %d src, %d edges",
                      l, d->n_dst, d->n_src, d->n_edges);
    if (l > 0 && d->n_src != b->blocks[l - 1].n_dst)
      return hs__fail(HS_ERR_FORMAT, "batch: block %d has %d src but block %d has %d dst", l,
                      d->n_src, l - 1, b->blocks[l - 1].n_dst);
    ls[l] = (layer_shape){d->n_dst, d->n_src, d->n_edges};
  }
  if (b->labels)
    for (int32_t i = 0; i < ls[L - 1].n_dst; i++)
      if (b->labels[i] < 0 || b->labels[i] >= sh->dims[L])
        return hs__fail(HS_ERR_FORMAT, "batch: seed %d has label %d, outside 0..%d", i,
                        b->labels[i], sh->dims[L] - 1);
  st = reserve_batch(t, ls, false);
  if (st != HS_OK) return st;
  for (int l = 0; l < L; l++) {
    t->blk_rp[l] = b->blocks[l].row_ptr;
    t->blk_col[l] = b->blocks[l].col;
  }
  if (b->sfeat &&
      (st = hs__nn_sparse_validate(b->sfeat, ls[0].n_src, sh->dims[0])) != HS_OK)
    return st;
  /* Everything enqueued from here on (the step) waits for the blocks. */
  if ((st = hs__queue_wait_for(t->q, n_wait, wait)) != HS_OK) return st;
  if ((st = upload_rows(t, b->feat, b->sfeat, b->labels)) != HS_OK) return st;
  t->uploaded = true;
  return HS_OK;
}

hs_status hs__trainer_feat_buffer(hs_trainer *t, size_t n_rows, cl_mem *out) {
  hs_status st = hs__trainer_reserve(t, &t->feat, n_rows, (size_t)t->shape.dims[0] * 4);
  if (st == HS_OK) *out = t->feat.m;
  return st;
}

/* ---- shared parts of the passes ------------------------------------------- */

hs_status hs__trainer_transpose(hs_trainer *t, int l, bool edge_ids) {
  if (t->transposed[l]) return HS_OK;
  hs_tr_bufs b = {.cursor = t->cursor.m, .sums = t->scan_sums.m, .t_ptr = t->t_ptr[l].m,
                  .t_list = t->t_list[l].m};
  hs_status st = hs__nn_transpose(&t->ks, t->blk_rp[l], t->blk_col[l], t->n_dst[l], t->n_src[l],
                                  t->n_edges[l], &b, edge_ids, false);
  if (st == HS_OK) t->transposed[l] = true;
  return st;
}

hs_status hs__trainer_layer_done(hs_trainer *t, int l) {
  if (!t->layer_done) return HS_OK;
  cl_event ev = NULL;
  hs_status st = hs__queue_marker(t->q, 0, NULL, &ev);
  if (st != HS_OK) return st;
  t->layer_done(t->layer_done_user, l, t->shape.layer_off[l], t->shape.layer_n[l], ev);
  hs__events_release(&ev, 1);
  return HS_OK;
}

void hs__trainer_set_layer_hook(hs_trainer *t, hs_trainer_layer_fn fn, void *user) {
  t->layer_done = fn;
  t->layer_done_user = user;
}

void hs__trainer_set_input(hs_trainer *t, const hs_nn_input *in) {
  if (in)
    t->input = *in;
  else
    memset(&t->input, 0, sizeof t->input);
}

size_t hs__trainer_input_rows(const hs_trainer *t) {
  return t->uploaded ? (size_t)t->n_src[0] : 0;
}

hs_status hs__nn_input_mul(hs_trainer *t, size_t w_off, size_t ldw, size_t n, cl_mem out) {
  if (t->input.mul) return t->input.mul(t->input.user, t, t->params.m, w_off, ldw, n, out);
  size_t d0 = (size_t)t->shape.dims[0];
  hs_gemm_op op = {.m = (size_t)t->n_src[0], .n = n, .k = d0, .alpha = 1.0f, .a = t->feat.m,
                   .lda = d0, .b = t->params.m, .b_off = w_off, .ldb = ldw, .c = out, .ldc = n};
  return hs__trainer_gemm(t, &op);
}

hs_status hs__nn_input_mul_t(hs_trainer *t, cl_mem dout, size_t n, size_t g_off, size_t ldg) {
  if (t->input.mul_t) return t->input.mul_t(t->input.user, t, dout, n, t->grads.m, g_off, ldg);
  size_t d0 = (size_t)t->shape.dims[0];
  hs_gemm_op op = {.trans_a = true, .m = d0, .n = n, .k = (size_t)t->n_src[0], .alpha = 1.0f,
                   .a = t->feat.m, .lda = d0, .b = dout, .ldb = n, .c = t->grads.m,
                   .c_off = g_off, .ldc = ldg};
  return hs__trainer_gemm(t, &op);
}

/* ---- the step --------------------------------------------------------------- */

static hs_status loss(hs_trainer *t) {
  const hs_model_shape *sh = &t->shape;
  int L = sh->n_layers;
  hs_status st;
  if (t->ring_pending == STATS_RING && (st = hs__trainer_drain_stats(t, &t->overflow)) != HS_OK)
    return st;
  cl_int n = t->n_dst[L - 1], c = sh->dims[L];
  cl_int slot = (t->ring_first + t->ring_pending) % STATS_RING;
  float inv_n = 1.0f / (float)n;
  if ((st = hs__k_softmax_ce(&t->ks, t->logits.m, t->params.m, sh->b_off[L - 1], t->labels.m, n,
                             c, inv_n, t->dz[L - 1].m, t->loss_rows.m, t->correct_rows.m)) !=
          HS_OK ||
      (st = hs__k_loss_reduce(&t->ks, t->loss_rows.m, t->correct_rows.m, n, t->stat_loss.m,
                              t->stat_correct.m, slot)) != HS_OK)
    return st;
  t->ring_seeds[slot] = n;
  t->ring_pending++;
  return HS_OK;
}

hs_status hs__trainer_apply(hs_trainer *t) {
  hs_optim_coef k;
  hs__optim_coef(&t->cfg.optim, t->step + 1, &k);
  cl_ulong n = t->shape.n_params;
  hs_status st = t->cfg.optim.kind == HS_OPTIM_ADAM
                     ? hs__k_adam(&t->ks, t->params.m, t->grads.m, t->mom1.m, t->mom2.m, n, &k)
                     : hs__k_sgd(&t->ks, t->params.m, t->grads.m, t->mom1.m, n, &k);
  if (st == HS_OK) t->step++;
  return st;
}

hs_status hs__trainer_gradients(hs_trainer *t, uint32_t epoch, uint32_t batch, bool train) {
  if (!t->uploaded || !t->has_labels)
    return hs__fail(HS_ERR_STATE, "trainer: no labelled batch uploaded");
  hs_nn_keys k = {.p = train ? t->cfg.dropout : 0.0f, .seed = t->cfg.seed, .epoch = epoch,
                  .batch = batch};
  hs_status st = t->ops->dev_forward(t, &k);
  if (st == HS_OK) st = loss(t);
  if (st == HS_OK) st = t->ops->dev_backward(t, &k);
  return st;
}

hs_status hs__trainer_step(hs_trainer *t, uint32_t epoch, uint32_t batch) {
  hs_status st = hs__trainer_gradients(t, epoch, batch, true);
  if (st == HS_OK) st = hs__trainer_apply(t);
  if (st == HS_OK) t->timed_steps++;
  return st;
}

hs_status hs__trainer_predict(hs_trainer *t, float *logits) {
  if (!t->uploaded) return hs__fail(HS_ERR_STATE, "trainer: no batch uploaded");
  const hs_model_shape *sh = &t->shape;
  int L = sh->n_layers;
  hs_nn_keys k = {0};
  hs_status st = t->ops->dev_forward(t, &k);
  if (st != HS_OK) return st;
  cl_int n = t->n_dst[L - 1], c = sh->dims[L];
  if ((st = hs__k_bias_act(&t->ks, t->logits.m, n, c, t->params.m, sh->b_off[L - 1], 0, 0.0f,
                           1.0f, 0, 0, 0, 0)) != HS_OK)
    return st;
  return hs__mem_read(t->q, t->logits.m, true, 0, (size_t)n * (size_t)c * 4, logits, 0, NULL, NULL);
}

/* ---- readback ------------------------------------------------------------------ */

hs_status hs__trainer_read_grads(hs_trainer *t, float *grads) {
  return hs__mem_read(t->q, t->grads.m, true, 0, t->shape.n_params * 4, grads, 0, NULL, NULL);
}

hs_status hs__trainer_write_grads(hs_trainer *t, const float *grads) {
  return hs__mem_write(t->q, t->grads.m, true, 0, t->shape.n_params * 4, grads, 0, NULL, NULL);
}

cl_mem hs__trainer_grad_buffer(const hs_trainer *t) { return t->grads.m; }
cl_mem hs__trainer_param_buffer(const hs_trainer *t) { return t->params.m; }
cl_command_queue hs__trainer_queue(const hs_trainer *t) { return t->q; }
const hs_model_shape *hs__trainer_shape(const hs_trainer *t) { return &t->shape; }

hs_status hs__trainer_input_grad(hs_trainer *t, cl_mem *dx, size_t *rows) {
  if (!t->opts.input_grad)
    return hs__fail(HS_ERR_STATE, "trainer: created without input gradients");
  if (!t->uploaded) return hs__fail(HS_ERR_STATE, "trainer: no batch uploaded");
  *dx = t->dx.m;
  *rows = (size_t)t->n_src[0];
  return HS_OK;
}

hs_status hs__trainer_read_input_grad(hs_trainer *t, float *dx) {
  cl_mem m = NULL;
  size_t rows = 0;
  hs_status st = hs__trainer_input_grad(t, &m, &rows);
  if (st != HS_OK) return st;
  return hs__mem_read(t->q, m, true, 0, rows * (size_t)t->shape.dims[0] * 4, dx, 0, NULL, NULL);
}

hs_status hs__trainer_drain_stats(hs_trainer *t, hs_train_stats *acc) {
  float loss[STATS_RING];
  int32_t correct[STATS_RING];
  hs_status st;
  if (t->ring_pending > 0) {
    /* The pending slots may wrap: read the whole ring (1 KiB each). */
    if ((st = hs__mem_read(t->q, t->stat_loss.m, true, 0, sizeof loss, loss, 0, NULL, NULL)) != HS_OK ||
        (st = hs__mem_read(t->q, t->stat_correct.m, true, 0, sizeof correct, correct, 0, NULL,
                           NULL)) != HS_OK)
      return st;
  }
  if (acc != &t->overflow && t->overflow.steps > 0) {
    acc->loss_sum += t->overflow.loss_sum;
    acc->correct += t->overflow.correct;
    acc->seeds += t->overflow.seeds;
    acc->steps += t->overflow.steps;
    acc->last_loss = t->overflow.last_loss;
    memset(&t->overflow, 0, sizeof t->overflow);
  }
  for (int i = 0; i < t->ring_pending; i++) {
    int s = (t->ring_first + i) % STATS_RING;
    acc->loss_sum += loss[s];
    acc->correct += correct[s];
    acc->seeds += t->ring_seeds[s];
    acc->steps++;
    acc->last_loss = loss[s];
  }
  t->ring_first = (t->ring_first + t->ring_pending) % STATS_RING;
  t->ring_pending = 0;
  return HS_OK;
}

static hs_status collect_spans(hs_trainer *t) {
  hs_status st = HS_OK;
  for (int i = 0; i < t->n_spans; i++) {
    uint64_t s0, e0, s1, e1;
    if (st == HS_OK && (st = hs__events_wait(&t->span_end[i], 1)) == HS_OK &&
        (st = hs__event_times(t->span_mark[i], &s0, &e0)) == HS_OK &&
        (st = hs__event_times(t->span_end[i], &s1, &e1)) == HS_OK && e1 > e0) {
      double span = (double)(e1 - e0) * 1e-9, run = e1 > s1 ? (double)(e1 - s1) * 1e-9 : 0.0;
      t->phase_s[t->span_phase[i]] += span;
      int k = 0;
      while (k < t->n_kernel_times && strcmp(t->kernel_times[k].name, t->span_name[i]) != 0) k++;
      if (k == t->n_kernel_times && k < HS_TRAIN_MAX_KERNELS)
        t->kernel_times[t->n_kernel_times++] = (hs_train_kernel_time){.name = t->span_name[i]};
      if (k < HS_TRAIN_MAX_KERNELS) {
        t->kernel_times[k].launches++;
        t->kernel_times[k].span_s += span;
        t->kernel_times[k].run_s += run;
      }
    }
    hs__events_release(&t->span_mark[i], 1);
    hs__events_release(&t->span_end[i], 1);
  }
  t->n_spans = 0;
  return st;
}

hs_status hs__trainer_times(hs_trainer *t, hs_train_times *out) {
  memset(out, 0, sizeof *out);
  if (!t->opts.profile) return hs__fail(HS_ERR_STATE, "trainer: created without profiling");
  hs_status st = collect_spans(t);
  if (st != HS_OK) return st;
  memcpy(out->seconds, t->phase_s, sizeof out->seconds);
  out->steps = t->timed_steps;
  out->n_kernels = t->n_kernel_times;
  memcpy(out->kernel, t->kernel_times, sizeof out->kernel);
  t->n_kernel_times = 0;
  memset(t->phase_s, 0, sizeof t->phase_s);
  t->timed_steps = 0;
  return HS_OK;
}
