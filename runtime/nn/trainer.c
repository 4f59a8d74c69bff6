/* The device training step (see trainer.h): one program of training
 * kernels, the GEMM provider, and the buffers of one batch. */
#include <stdlib.h>
#include <string.h>

#include "hs_launch.h"
#include "hs_programs.h"
#include "nn/nn_rng.h"
#include "nn/trainer_internal.h"

static const char *const kernel_names[K_COUNT] = {
    [K_AGG_FWD] = "hs_agg_fwd",         [K_AGG_BWD] = "hs_agg_bwd",
    [K_TR_COUNT] = "hs_tr_count",       [K_SCAN_SUMS] = "hs_scan_sums",
    [K_SCAN_OFFSETS] = "hs_scan_offsets", [K_SCAN_APPLY] = "hs_scan_apply",
    [K_TR_FILL] = "hs_tr_fill",         [K_TR_SORT] = "hs_tr_sort",
    [K_BIAS_ACT] = "hs_bias_act_fwd",   [K_COLSUM_PART] = "hs_colsum_part",
    [K_COLSUM_FINAL] = "hs_colsum_final", [K_SOFTMAX_CE] = "hs_softmax_ce",
    [K_LOSS_REDUCE] = "hs_loss_reduce", [K_ADAM] = "hs_adam",
    [K_SGD] = "hs_sgd",
};


/* ---- helpers ------------------------------------------------------------- */

hs_status hs__trainer_reserve(hs_trainer *t, dbuf *b, size_t count, size_t elem) {
  size_t bytes;
  if (!hs__mul_size(count, elem, &bytes))
    return hs__fail(HS_ERR_RANGE, "trainer: buffer of %zu x %zu bytes overflows", count, elem);
  if (b->m && b->cap >= bytes) return HS_OK;
  hs__log(HS_LOG_TRAIN, "trainer: buffer grows to %zu bytes", bytes);
  return hs__mem_reserve(t->ctx, CL_MEM_READ_WRITE, bytes, &b->m, &b->cap);
}

void hs__trainer_drop(dbuf *b) {
  hs__mem_release(&b->m);
  b->cap = 0;
}

static hs_status collect_spans(hs_trainer *t);

static hs_status span_open(hs_trainer *t, cl_event *mark) {
  *mark = NULL;
  if (!t->opts.profile) return HS_OK;
  if (t->n_spans == MAX_SPANS) {
    hs_status st = collect_spans(t);
    if (st != HS_OK) return st;
  }
  return hs__queue_marker(t->q, 0, NULL, mark);
}

static void span_close(hs_trainer *t, hs_train_phase ph, cl_event mark, cl_event end) {
  if (!t->opts.profile) return;
  t->span_mark[t->n_spans] = mark;
  t->span_end[t->n_spans] = end;
  t->span_phase[t->n_spans] = ph;
  t->n_spans++;
}

/* Set arguments and launch kernel `id` over (g0) or (g0, g1). */
hs_status hs__trainer_run(hs_trainer *t, hs_train_phase ph, int id, size_t g0, size_t g1,
                          const hs_karg *args, int n_args) {
  hs_status st = hs__kernel_args(t->k[id], args, n_args);
  if (st != HS_OK) return st;
  cl_event mark, ev = NULL;
  if ((st = span_open(t, &mark)) != HS_OK) return st;
  /* A narrow first dimension (few feature vectors per row) must not leave
   * most of each work-group idle: the rest of the group goes to rows. */
  size_t global[2] = {g0, g1}, local[2] = {t->wg[id], 1};
  if (g1 && g0 < local[0]) {
    local[0] = g0 ? g0 : 1;
    local[1] = t->wg[id] / local[0];
  }
  st = hs__launch(t->q, t->k[id], g1 ? 2 : 1, global, local, 0, NULL, t->opts.profile ? &ev : NULL);
  if (st != HS_OK) {
    hs__events_release(&mark, 1);
    return st;
  }
  span_close(t, ph, mark, ev);
  return HS_OK;
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
  span_close(t, HS_PHASE_GEMM, mark, ev);
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
  t->q = q;
  if (opts) t->opts = *opts;
  t->cfg = m->cfg;
  t->shape = m->shape;
  hs_status st;
  if (t->opts.profile && !dev->info.queue_profiling) {
    st = hs__fail(HS_ERR_UNSUPPORTED, "trainer: '%s' cannot profile queues", dev->info.name);
    goto fail;
  }
  double t0 = hs__now();
  /* One program for every training kernel: PoCL's compiler is slow. */
  st = hs__program_get(ctx, dev, HS_PROG_TRAIN_SAGE, &t->program);
  if (st != HS_OK) goto fail;
  hs__log(HS_LOG_TRAIN, "training program on '%s' ready in %.2f s", dev->info.name,
          hs__now() - t0);
  for (int i = 0; i < K_COUNT; i++) {
    if ((st = hs__kernel_create(t->program, kernel_names[i], dev, &t->k[i])) != HS_OK) goto fail;
    size_t lim = hs__kernel_max_wg(t->k[i], dev), want = t->opts.wg ? t->opts.wg : DEFAULT_WG;
    t->wg[i] = want > lim ? lim : want;
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
  dbuf *all[] = {&t->params, &t->grads, &t->mom1, &t->mom2, &t->feat, &t->labels, &t->logits,
                 &t->dcat, &t->cursor, &t->scan_sums, &t->colsum_part, &t->loss_rows, &t->correct_rows,
                 &t->stat_loss, &t->stat_correct};
  for (size_t i = 0; i < HS_ARRAY_LEN(all); i++) hs__trainer_drop(all[i]);
  for (int l = 0; l < HS_NN_MAX_LAYERS; l++) {
    hs__trainer_drop(&t->row_ptr[l]), hs__trainer_drop(&t->col[l]), hs__trainer_drop(&t->t_ptr[l]), hs__trainer_drop(&t->t_dst[l]);
    hs__trainer_drop(&t->cat[l]), hs__trainer_drop(&t->act[l]), hs__trainer_drop(&t->dz[l]);
  }
  hs__gemm_destroy(t->gemm);
  for (int i = 0; i < K_COUNT; i++) hs__kernel_release(&t->k[i]);
  hs__program_release(&t->program);
  free(t);
}

hs_gemm_kind hs__trainer_gemm_kind(const hs_trainer *t) { return hs__gemm_kind_of(t->gemm); }

hs_status hs__trainer_load_model(hs_trainer *t, const hs_model *m) {
  size_t n = t->shape.n_params;
  if (m->shape.n_params != n)
    return hs__fail(HS_ERR_INVALID_ARG, "trainer: model has %zu parameters, trainer %zu",
                    m->shape.n_params, n);
  hs_status st;
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
  if (m->shape.n_params != n)
    return hs__fail(HS_ERR_INVALID_ARG, "trainer: model has %zu parameters, trainer %zu",
                    m->shape.n_params, n);
  hs_status st;
  if ((st = hs__mem_read(t->q, t->params.m, true, 0, n * 4, m->params, 0, NULL, NULL)) != HS_OK ||
      (st = hs__mem_read(t->q, t->mom1.m, true, 0, n * 4, m->m, 0, NULL, NULL)) != HS_OK ||
      (st = hs__mem_read(t->q, t->mom2.m, true, 0, n * 4, m->v, 0, NULL, NULL)) != HS_OK)
    return st;
  m->step = t->step;
  return HS_OK;
}

/* ---- batch ------------------------------------------------------------------ */

/* Shapes of one layer's block. */
typedef struct layer_shape {
  int32_t n_dst, n_src, n_edges;
} layer_shape;

/* Record the batch's shapes and grow every buffer the step needs for them
 * (the block arrays only when `own_blocks`). */
static hs_status reserve_batch(hs_trainer *t, const layer_shape *ls, bool own_blocks) {
  const hs_model_shape *sh = &t->shape;
  int L = sh->n_layers;
  hs_status st;
  if (ls[L - 1].n_dst < 1) return hs__fail(HS_ERR_INVALID_ARG, "trainer: batch has no seeds");
  size_t dcat_rows = 0, max_src = 0, part = 0;
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
    size_t chunks = (nd + HS_COLSUM_ROWS - 1) / HS_COLSUM_ROWS;
    if (chunks * d_out > part) part = chunks * d_out;
    if (own_blocks && ((st = hs__trainer_reserve(t, &t->row_ptr[l], nd + 1, 4)) != HS_OK ||
                       (st = hs__trainer_reserve(t, &t->col[l], ne, 4)) != HS_OK))
      return st;
    if ((st = hs__trainer_reserve(t, &t->cat[l], nd * 2, d_in * 4)) != HS_OK ||
        (st = hs__trainer_reserve(t, &t->dz[l], nd, d_out * 4)) != HS_OK)
      return st;
    if (l > 0) {
      if ((st = hs__trainer_reserve(t, &t->act[l], ns, d_in * 4)) != HS_OK ||
          (st = hs__trainer_reserve(t, &t->t_ptr[l], ns + 1, 4)) != HS_OK ||
          (st = hs__trainer_reserve(t, &t->t_dst[l], ne, 4)) != HS_OK)
        return st;
      if (nd * 2 * d_in > dcat_rows) dcat_rows = nd * 2 * d_in;
      if (ns > max_src) max_src = ns;
    }
  }
  size_t n_seeds = (size_t)t->n_dst[L - 1], c = (size_t)sh->dims[L];
  size_t n_in = (size_t)t->n_src[0], d0 = (size_t)sh->dims[0];
  if ((st = hs__trainer_reserve(t, &t->feat, n_in, d0 * 4)) != HS_OK ||
      (st = hs__trainer_reserve(t, &t->labels, n_seeds, 4)) != HS_OK ||
      (st = hs__trainer_reserve(t, &t->logits, n_seeds, c * 4)) != HS_OK ||
      (st = hs__trainer_reserve(t, &t->loss_rows, n_seeds, 4)) != HS_OK ||
      (st = hs__trainer_reserve(t, &t->correct_rows, n_seeds, 4)) != HS_OK ||
      (st = hs__trainer_reserve(t, &t->dcat, dcat_rows, 4)) != HS_OK ||
      (st = hs__trainer_reserve(t, &t->cursor, max_src, 4)) != HS_OK ||
      (st = hs__trainer_reserve(t, &t->colsum_part, part, 4)) != HS_OK ||
      (st = hs__trainer_reserve(t, &t->scan_sums, max_src / SCAN_CHUNK + 1, 4)) != HS_OK)
    return st;
  return HS_OK;
}

/* The features (unless the caller assembles them) and labels of a batch
 * whose shapes reserve_batch recorded. */
static hs_status upload_rows(hs_trainer *t, const float *feat, const int32_t *labels) {
  const hs_model_shape *sh = &t->shape;
  int L = sh->n_layers;
  size_t n_seeds = (size_t)t->n_dst[L - 1], n_in = (size_t)t->n_src[0];
  size_t d0 = (size_t)sh->dims[0];
  hs_status st;
  if (feat &&
      (st = hs__mem_write(t->q, t->feat.m, true, 0, n_in * d0 * 4, feat, 0, NULL, NULL)) != HS_OK)
    return st;
  t->has_labels = labels != NULL;
  if (labels &&
      (st = hs__mem_write(t->q, t->labels.m, true, 0, n_seeds * 4, labels, 0, NULL, NULL)) != HS_OK)
    return st;
  return HS_OK;
}

/* Start an upload of a batch of `n_layers` blocks (the model's count). */
static hs_status begin_upload(hs_trainer *t, int n_layers) {
  t->uploaded = false;
  if (n_layers != t->shape.n_layers)
    return hs__fail(HS_ERR_INVALID_ARG, "trainer: batch has %d blocks, model %d layers",
                    n_layers, t->shape.n_layers);
  return HS_OK;
}

hs_status hs__trainer_upload(hs_trainer *t, const hs_nn_batch *b) {
  const hs_model_shape *sh = &t->shape;
  int L = sh->n_layers;
  hs_status st = begin_upload(t, b->n_layers);
  if (st != HS_OK) return st;
  /* feat NULL: the caller assembles the features on the device
   * (hs__trainer_feat_buffer); the rest of the batch is checked as usual. */
  static const float no_feat = 0.0f;
  hs_nn_batch checked = *b;
  if (!checked.feat) checked.feat = &no_feat;
  st = hs__nn_batch_validate(&checked, sh->dims[L]);
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
  if ((st = upload_rows(t, b->feat, b->labels)) != HS_OK) return st;
  t->uploaded = true;
  return HS_OK;
}

hs_status hs__trainer_upload_dev(hs_trainer *t, const hs_nn_dev_batch *b, cl_uint n_wait,
                                 const cl_event *wait) {
  const hs_model_shape *sh = &t->shape;
  int L = sh->n_layers;
  hs_status st = begin_upload(t, b->n_layers);
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
  /* Everything enqueued from here on (the step) waits for the blocks. */
  if ((st = hs__queue_wait_for(t->q, n_wait, wait)) != HS_OK) return st;
  if ((st = upload_rows(t, b->feat, b->labels)) != HS_OK) return st;
  t->uploaded = true;
  return HS_OK;
}

hs_status hs__trainer_feat_buffer(hs_trainer *t, size_t n_rows, cl_mem *out) {
  hs_status st = hs__trainer_reserve(t, &t->feat, n_rows, (size_t)t->shape.dims[0] * 4);
  if (st == HS_OK) *out = t->feat.m;
  return st;
}

/* ---- the step --------------------------------------------------------------- */

/* The transposed block l by counting sort (see train_agg.cl). */
static hs_status transpose(hs_trainer *t, int l) {
  cl_int n_src = t->n_src[l], n_dst = t->n_dst[l], n_edges = t->n_edges[l];
  cl_int zero = 0, n_chunks = (n_src + SCAN_CHUNK - 1) / SCAN_CHUNK;
  size_t cursor_bytes = (size_t)n_src * 4;
  cl_mem col = t->blk_col[l], rp = t->blk_rp[l], tp = t->t_ptr[l].m, td = t->t_dst[l].m;
  cl_mem cur = t->cursor.m, sums = t->scan_sums.m;
  hs_status st;
  hs_karg count[] = {HS_KARG(col), HS_KARG(n_edges), HS_KARG(cur)};
  hs_karg s1[] = {HS_KARG(cur), HS_KARG(n_src), HS_KARG(sums)};
  hs_karg s2[] = {HS_KARG(sums), HS_KARG(n_src), HS_KARG(tp)};
  hs_karg s3[] = {HS_KARG(cur), HS_KARG(n_src), HS_KARG(sums), HS_KARG(tp)};
  hs_karg fill[] = {HS_KARG(rp), HS_KARG(col), HS_KARG(n_dst), HS_KARG(tp), HS_KARG(cur), HS_KARG(td)};
  hs_karg sort[] = {HS_KARG(tp), HS_KARG(n_src), HS_KARG(td)};
  if ((st = hs__mem_fill(t->q, cur, &zero, 4, 0, cursor_bytes, 0, NULL, NULL)) != HS_OK ||
      (st = hs__trainer_run(t, HS_PHASE_AGG, K_TR_COUNT, (size_t)n_edges, 0, count, 3)) != HS_OK ||
      (st = hs__trainer_run(t, HS_PHASE_AGG, K_SCAN_SUMS, (size_t)n_chunks, 0, s1, 3)) != HS_OK ||
      (st = hs__trainer_run(t, HS_PHASE_AGG, K_SCAN_OFFSETS, 1, 0, s2, 3)) != HS_OK ||
      (st = hs__trainer_run(t, HS_PHASE_AGG, K_SCAN_APPLY, (size_t)n_chunks, 0, s3, 4)) != HS_OK ||
      (st = hs__mem_fill(t->q, cur, &zero, 4, 0, cursor_bytes, 0, NULL, NULL)) != HS_OK ||
      (st = hs__trainer_run(t, HS_PHASE_AGG, K_TR_FILL, (size_t)n_dst, 0, fill, 6)) != HS_OK ||
      (st = hs__trainer_run(t, HS_PHASE_AGG, K_TR_SORT, (size_t)n_src, 0, sort, 3)) != HS_OK)
    return st;
  t->transposed[l] = true;
  return HS_OK;
}

static hs_status forward(hs_trainer *t, float p, uint32_t epoch, uint32_t batch) {
  const hs_model_shape *sh = &t->shape;
  int L = sh->n_layers;
  float scale = hs__dropout_scale(p);
  cl_ulong seed = t->cfg.seed;
  hs_status st;
  for (int l = 0; l < L; l++) {
    cl_int n_dst = t->n_dst[l], d_in = sh->dims[l], d_out = sh->dims[l + 1];
    cl_mem in = l == 0 ? t->feat.m : t->act[l].m;
    cl_mem out = l < L - 1 ? t->act[l + 1].m : t->logits.m;
    cl_int base = 0;
    hs_karg agg[] = {HS_KARG(t->blk_rp[l]), HS_KARG(t->blk_col[l]), HS_KARG(in), HS_KARG(base),
                     HS_KARG(n_dst), HS_KARG(d_in), HS_KARG(t->cat[l].m)};
    size_t vecs = ((size_t)d_in + VW - 1) / VW;
    if ((st = hs__trainer_run(t, HS_PHASE_AGG, K_AGG_FWD, vecs, (size_t)n_dst, agg, 7)) != HS_OK)
      return st;
    hs_gemm_op op = {.m = (size_t)n_dst, .n = (size_t)d_out, .k = 2 * (size_t)d_in, .alpha = 1.0f,
                     .a = t->cat[l].m, .lda = 2 * (size_t)d_in, .b = t->params.m,
                     .b_off = sh->w_off[l], .ldb = (size_t)d_out, .c = out, .ldc = (size_t)d_out};
    if ((st = hs__trainer_gemm(t, &op)) != HS_OK) return st;
    if (l == L - 1) break;
    cl_ulong b_off = sh->b_off[l];
    cl_int relu = 1;
    cl_uint ep = epoch, ba = batch, layer = (cl_uint)l;
    hs_karg act[] = {HS_KARG(out), HS_KARG(n_dst), HS_KARG(d_out), HS_KARG(t->params.m),
                     HS_KARG(b_off), HS_KARG(relu), HS_KARG(p), HS_KARG(scale),
                     HS_KARG(seed), HS_KARG(ep), HS_KARG(ba), HS_KARG(layer)};
    size_t groups = ((size_t)n_dst * (size_t)d_out + HS_ACT_ELEMS - 1) / HS_ACT_ELEMS;
    if ((st = hs__trainer_run(t, HS_PHASE_ELEM, K_BIAS_ACT, groups, 0, act, 12)) != HS_OK) return st;
  }
  return HS_OK;
}

static hs_status loss(hs_trainer *t) {
  const hs_model_shape *sh = &t->shape;
  int L = sh->n_layers;
  hs_status st;
  if (t->ring_pending == STATS_RING && (st = hs__trainer_drain_stats(t, &t->overflow)) != HS_OK)
    return st;
  cl_int n = t->n_dst[L - 1], c = sh->dims[L];
  cl_int slot = (t->ring_first + t->ring_pending) % STATS_RING;
  float inv_n = 1.0f / (float)n;
  cl_ulong b_off = sh->b_off[L - 1];
  hs_karg ce[] = {HS_KARG(t->logits.m), HS_KARG(t->params.m), HS_KARG(b_off),
                  HS_KARG(t->labels.m), HS_KARG(n), HS_KARG(c), HS_KARG(inv_n),
                  HS_KARG(t->dz[L - 1].m), HS_KARG(t->loss_rows.m), HS_KARG(t->correct_rows.m)};
  hs_karg red[] = {HS_KARG(t->loss_rows.m), HS_KARG(t->correct_rows.m), HS_KARG(n),
                   HS_KARG(t->stat_loss.m), HS_KARG(t->stat_correct.m), HS_KARG(slot)};
  if ((st = hs__trainer_run(t, HS_PHASE_ELEM, K_SOFTMAX_CE, (size_t)n, 0, ce, 10)) != HS_OK ||
      (st = hs__trainer_run(t, HS_PHASE_ELEM, K_LOSS_REDUCE, 1, 0, red, 6)) != HS_OK)
    return st;
  t->ring_seeds[slot] = n;
  t->ring_pending++;
  return HS_OK;
}

static hs_status backward(hs_trainer *t, float p) {
  const hs_model_shape *sh = &t->shape;
  int L = sh->n_layers;
  float scale = hs__dropout_scale(p);
  hs_status st;
  for (int l = L - 1; l >= 0; l--) {
    cl_int n_dst = t->n_dst[l], n_src = t->n_src[l], d_in = sh->dims[l], d_out = sh->dims[l + 1];
    cl_ulong b_off = sh->b_off[l];
    cl_int n_chunks = (n_dst + HS_COLSUM_ROWS - 1) / HS_COLSUM_ROWS;
    hs_karg cs1[] = {HS_KARG(t->dz[l].m), HS_KARG(n_dst), HS_KARG(d_out), HS_KARG(t->colsum_part.m)};
    hs_karg cs2[] = {HS_KARG(t->colsum_part.m), HS_KARG(n_chunks), HS_KARG(d_out),
                     HS_KARG(t->grads.m), HS_KARG(b_off)};
    if ((st = hs__trainer_run(t, HS_PHASE_ELEM, K_COLSUM_PART, ((size_t)d_out + VW - 1) / VW,
                  (size_t)n_chunks, cs1, 4)) != HS_OK ||
        (st = hs__trainer_run(t, HS_PHASE_ELEM, K_COLSUM_FINAL, (size_t)d_out, 0, cs2, 5)) != HS_OK)
      return st;
    hs_gemm_op dw = {.trans_a = true, .m = 2 * (size_t)d_in, .n = (size_t)d_out,
                     .k = (size_t)n_dst, .alpha = 1.0f, .a = t->cat[l].m, .lda = 2 * (size_t)d_in,
                     .b = t->dz[l].m, .ldb = (size_t)d_out, .c = t->grads.m,
                     .c_off = sh->w_off[l], .ldc = (size_t)d_out};
    if ((st = hs__trainer_gemm(t, &dw)) != HS_OK) return st;
    if (l == 0) break; /* no gradient for the input features */
    hs_gemm_op dc = {.trans_b = true, .m = (size_t)n_dst, .n = 2 * (size_t)d_in,
                     .k = (size_t)d_out, .alpha = 1.0f, .a = t->dz[l].m, .lda = (size_t)d_out,
                     .b = t->params.m, .b_off = sh->w_off[l], .ldb = (size_t)d_out,
                     .c = t->dcat.m, .ldc = 2 * (size_t)d_in};
    if ((st = hs__trainer_gemm(t, &dc)) != HS_OK) return st;
    if (!t->transposed[l] && (st = transpose(t, l)) != HS_OK) return st;
    cl_int masked = 1;
    hs_karg bwd[] = {HS_KARG(t->blk_rp[l]), HS_KARG(t->t_ptr[l].m), HS_KARG(t->t_dst[l].m),
                     HS_KARG(t->dcat.m), HS_KARG(t->act[l].m), HS_KARG(n_dst), HS_KARG(n_src),
                     HS_KARG(d_in), HS_KARG(masked), HS_KARG(scale), HS_KARG(t->dz[l - 1].m)};
    size_t vecs = ((size_t)d_in + VW - 1) / VW;
    if ((st = hs__trainer_run(t, HS_PHASE_AGG, K_AGG_BWD, vecs, (size_t)n_src, bwd, 11)) != HS_OK)
      return st;
  }
  return HS_OK;
}

static hs_status optimizer(hs_trainer *t) {
  hs_optim_coef k;
  hs__optim_coef(&t->cfg.optim, t->step + 1, &k);
  cl_ulong n = t->shape.n_params;
  hs_status st;
  if (t->cfg.optim.kind == HS_OPTIM_ADAM) {
    hs_karg a[] = {HS_KARG(t->params.m), HS_KARG(t->grads.m), HS_KARG(t->mom1.m),
                   HS_KARG(t->mom2.m), HS_KARG(n), HS_KARG(k.lr), HS_KARG(k.l2),
                   HS_KARG(k.decay), HS_KARG(k.beta1), HS_KARG(k.beta2),
                   HS_KARG(k.one_minus_beta1), HS_KARG(k.one_minus_beta2),
                   HS_KARG(k.inv_sqrt_bc2), HS_KARG(k.eps)};
    st = hs__trainer_run(t, HS_PHASE_OPTIM, K_ADAM, (size_t)n, 0, a, 14);
  } else {
    hs_karg a[] = {HS_KARG(t->params.m), HS_KARG(t->grads.m), HS_KARG(t->mom1.m), HS_KARG(n),
                   HS_KARG(k.lr), HS_KARG(k.l2), HS_KARG(k.decay), HS_KARG(k.momentum)};
    st = hs__trainer_run(t, HS_PHASE_OPTIM, K_SGD, (size_t)n, 0, a, 8);
  }
  if (st == HS_OK) t->step++;
  return st;
}

hs_status hs__trainer_gradients(hs_trainer *t, uint32_t epoch, uint32_t batch, bool train) {
  if (!t->uploaded || !t->has_labels)
    return hs__fail(HS_ERR_STATE, "trainer: no labelled batch uploaded");
  float p = train ? t->cfg.dropout : 0.0f;
  hs_status st = forward(t, p, epoch, batch);
  if (st == HS_OK) st = loss(t);
  if (st == HS_OK) st = backward(t, p);
  return st;
}

hs_status hs__trainer_step(hs_trainer *t, uint32_t epoch, uint32_t batch) {
  hs_status st = hs__trainer_gradients(t, epoch, batch, true);
  if (st == HS_OK) st = optimizer(t);
  if (st == HS_OK) t->timed_steps++;
  return st;
}

hs_status hs__trainer_predict(hs_trainer *t, float *logits) {
  if (!t->uploaded) return hs__fail(HS_ERR_STATE, "trainer: no batch uploaded");
  const hs_model_shape *sh = &t->shape;
  int L = sh->n_layers;
  hs_status st = forward(t, 0.0f, 0, 0);
  if (st != HS_OK) return st;
  cl_int n = t->n_dst[L - 1], c = sh->dims[L], relu = 0;
  cl_ulong b_off = sh->b_off[L - 1], seed = 0;
  cl_uint zero = 0;
  float p = 0.0f, scale = 1.0f;
  hs_karg act[] = {HS_KARG(t->logits.m), HS_KARG(n), HS_KARG(c), HS_KARG(t->params.m),
                   HS_KARG(b_off), HS_KARG(relu), HS_KARG(p), HS_KARG(scale),
                   HS_KARG(seed), HS_KARG(zero), HS_KARG(zero), HS_KARG(zero)};
  size_t groups = ((size_t)n * (size_t)c + HS_ACT_ELEMS - 1) / HS_ACT_ELEMS;
  if ((st = hs__trainer_run(t, HS_PHASE_ELEM, K_BIAS_ACT, groups, 0, act, 12)) != HS_OK)
    return st;
  return hs__mem_read(t->q, t->logits.m, true, 0, (size_t)n * (size_t)c * 4, logits, 0, NULL, NULL);
}

/* ---- readback ------------------------------------------------------------------ */

hs_status hs__trainer_read_grads(hs_trainer *t, float *grads) {
  return hs__mem_read(t->q, t->grads.m, true, 0, t->shape.n_params * 4, grads, 0, NULL, NULL);
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
        (st = hs__event_times(t->span_end[i], &s1, &e1)) == HS_OK && e1 > e0)
      t->phase_s[t->span_phase[i]] += (double)(e1 - e0) * 1e-9;
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
  memset(t->phase_s, 0, sizeof t->phase_s);
  t->timed_steps = 0;
  return HS_OK;
}
