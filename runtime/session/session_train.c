/* One training epoch: the seeds of the epoch shuffled, then every batch
 * through SAMPLE -> GATHER -> TRAIN on the pipeline engine. */
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "hs_launch.h"
#include "hs_session_int.h"
#include "rng/philox.h"

/* Purpose tag 5 of the sampler's stream layout is free for shuffles
 * (cl_kernels/hs_sample_rng.h). */
#define SHUFFLE_TAG (5u << 24)

hs_status hs__session_shuffle(hs_session *s, int64_t epoch) {
  int64_t n = s->g->split_n[HS_SPLIT_TRAIN];
  if (s->tier) {
    /* Features on disk: visit the seeds block by block (see the config's
     * memory_budget for what this does to the SGD order). */
    hs_host_tier_info ti;
    hs__host_tier_info(s->tier, &ti);
    hs_status st = hs__block_order_seeds(s->g->split[HS_SPLIT_TRAIN], n, ti.rows_per_block,
                                         s->scfg.seed, (uint32_t)epoch, s->order);
    if (st != HS_OK) return st;
    s->order_epoch = epoch;
    return HS_OK;
  }
  memcpy(s->order, s->g->split[HS_SPLIT_TRAIN], (size_t)n * sizeof *s->order);
  for (int64_t i = n - 1; i > 0; i--) {
    hs_philox_ctr r = hs_philox_draw(s->scfg.seed, (uint32_t)epoch, 0xffffffffu, SHUFFLE_TAG,
                                     (uint32_t)i);
    int64_t j = (int64_t)hs_philox_below(r.v[0], (uint32_t)(i + 1));
    int32_t t = s->order[i];
    s->order[i] = s->order[j];
    s->order[j] = t;
  }
  s->order_epoch = epoch;
  return HS_OK;
}

/* From the counts: on the device path the host never sees the blocks. */
static void count_edges(hs_slot_data *d) {
  d->edges = 0;
  for (int h = 0; h < d->batch.n_layers; h++) d->edges += hs__sampler_hop_edges(&d->batch, h);
}

hs_status hs__session_sample(hs_session *s, const int32_t *seeds, int32_t n, uint32_t epoch_key,
                             uint32_t batch, hs_slot_data *d) {
  hs_status st = hs__sampler_run(s->sampler, seeds, n, epoch_key, batch, &d->batch);
  if (st == HS_OK) count_edges(d);
  return st;
}

hs_status hs__session_rows_f32(hs_session *s, const int32_t *ids, int32_t n, float *out,
                               void *raw) {
  bool half = s->g->feat_dtype == HS_DTYPE_FLOAT16;
  void *dst = half ? raw : (void *)out;
  hs_status st;
  if (s->tier) {
    st = hs__host_tier_gather(s->tier, ids, n, dst);
  } else {
    hs_gather_req req = {.table = s->feat, .row_bytes = s->g->feat_row_bytes,
                         .n_rows = s->g->n, .ids = ids, .n = n, .out = dst};
    st = hs__gather(s->pool, &req);
  }
  if (st != HS_OK) return st;
  if (half) {
    size_t count = (size_t)n * (size_t)s->g->f;
    const uint16_t *src = raw;
    for (size_t i = 0; i < count; i++) out[i] = hs__half_to_float(src[i]);
  }
  return hs__session_check_rows(s, ids, n, out);
}

static hs_status bad_feature(const hs_session *s, int64_t row, int64_t j, float x) {
  return hs__fail(HS_ERR_FORMAT, "%s/feat.npy: row %lld, feature %lld: %s (features must be "
                  "finite; fix the dataset, e.g. numpy.nan_to_num)", hs__dataset_dir(s->ds),
                  (long long)row, (long long)j, isnan(x) ? "NaN" : "infinite");
}

/* The first non-finite value of a row of f floats, or -1. Branch-free over
 * the row (it vectorises): rows are checked once, as they first arrive. */
static int64_t first_non_finite(const float *r, int64_t f) {
  uint32_t bad = 0;
  for (int64_t j = 0; j < f; j++) {
    uint32_t b;
    memcpy(&b, &r[j], 4);
    bad |= (b & 0x7f800000u) == 0x7f800000u;
  }
  if (!bad) return -1;
  for (int64_t j = 0; j < f; j++)
    if (!isfinite(r[j])) return j;
  return -1;
}

hs_status hs__session_check_rows(hs_session *s, const int32_t *ids, int32_t n, const float *rows) {
  if (s->feat_all_checked || !s->feat_checked) return HS_OK;
  int64_t f = s->g->f;
  for (int32_t i = 0; i < n; i++) {
    uint32_t v = (uint32_t)ids[i];
    uint64_t bit = 1ull << (v & 63);
    if (atomic_load_explicit(&s->feat_checked[v >> 6], memory_order_relaxed) & bit) continue;
    const float *r = rows + (size_t)i * (size_t)f;
    int64_t j = first_non_finite(r, f);
    if (j >= 0) return bad_feature(s, v, j, r[j]);
    atomic_fetch_or_explicit(&s->feat_checked[v >> 6], bit, memory_order_relaxed);
  }
  return HS_OK;
}

hs_status hs__session_check_all_rows(hs_session *s) {
  if (s->feat_all_checked || !s->feat_checked) return HS_OK;
  const hs_graph *g = s->g;
  int64_t f = g->f;
  float *row = g->feat_dtype == HS_DTYPE_FLOAT16 ? malloc((size_t)f * sizeof *row) : NULL;
  if (g->feat_dtype == HS_DTYPE_FLOAT16 && !row)
    return hs__fail(HS_ERR_NOMEM, "out of memory for a feature row");
  hs_status st = HS_OK;
  for (int64_t v = 0; v < g->n && st == HS_OK; v++) {
    if (atomic_load_explicit(&s->feat_checked[v >> 6], memory_order_relaxed) &
        (1ull << (v & 63)))
      continue;
    const float *r;
    if (row) {
      const uint16_t *h = (const uint16_t *)((const char *)s->feat + (size_t)v * g->feat_row_bytes);
      for (int64_t j = 0; j < f; j++) row[j] = hs__half_to_float(h[j]);
      r = row;
    } else {
      r = (const float *)((const char *)s->feat + (size_t)v * g->feat_row_bytes);
    }
    int64_t j = first_non_finite(r, f);
    if (j >= 0) st = bad_feature(s, v, j, r[j]);
  }
  free(row);
  if (st == HS_OK) s->feat_all_checked = true;
  return st;
}

hs_status hs__session_sparse_alloc(hs_session *s, hs_slot_data *d, int64_t rows) {
  const hs_graph *g = s->g;
  if (!g->feat_sparse) return HS_OK;
  /* A batch's rows are distinct: at most every stored entry, and at most
   * its rows times the longest row. */
  int64_t cap = rows * (int64_t)g->feat_row_nnz_max;
  if (cap > g->feat_nnz) cap = g->feat_nnz;
  if (cap > d->sx_cap || !d->sx_ptr || d->sx_rows < rows) {
    hs__session_sparse_free(d);
    size_t f = (size_t)g->f;
    d->sx_ptr = malloc(((size_t)rows + 1) * sizeof *d->sx_ptr);
    d->sx_col = malloc(((size_t)cap + 1) * sizeof *d->sx_col);
    d->sx_tptr = malloc((f + 1) * sizeof *d->sx_tptr);
    d->sx_tmid = malloc((f + 1) * sizeof *d->sx_tmid);
    d->sx_cursor = malloc((f + 1) * sizeof *d->sx_cursor);
    d->sx_trow = malloc(((size_t)cap + 1) * sizeof *d->sx_trow);
    if (g->feat_val) {
      d->sx_val = malloc(((size_t)cap + 1) * sizeof *d->sx_val);
      d->sx_tval = malloc(((size_t)cap + 1) * sizeof *d->sx_tval);
    }
    if (!d->sx_ptr || !d->sx_col || !d->sx_tptr || !d->sx_tmid || !d->sx_cursor ||
        !d->sx_trow || (g->feat_val && (!d->sx_val || !d->sx_tval)))
      return hs__fail(HS_ERR_NOMEM, "out of memory for %lld sparse feature entries",
                      (long long)cap);
    d->sx_cap = cap;
    d->sx_rows = rows;
  }
  return HS_OK;
}

void hs__session_sparse_free(hs_slot_data *d) {
  free(d->sx_ptr);
  free(d->sx_col);
  free(d->sx_val);
  free(d->sx_tptr);
  free(d->sx_tmid);
  free(d->sx_trow);
  free(d->sx_cursor);
  free(d->sx_tval);
  d->sx_ptr = d->sx_col = d->sx_tptr = d->sx_tmid = d->sx_trow = d->sx_cursor = NULL;
  d->sx_val = d->sx_tval = NULL;
  d->sx_cap = 0;
  d->sx_rows = 0;
}

hs_status hs__session_gather_sparse(hs_session *s, const int32_t *ids, int32_t n, int32_t *ptr,
                                    int32_t *col, float *val, int64_t cap) {
  if (s->stier) return hs__sparse_tier_gather(s->stier, ids, n, ptr, col, val, cap);
  const hs_graph *g = s->g;
  hs_gather_sparse_req req = {.ptr = g->feat_ptr, .col = s->feat_col, .val = g->feat_val,
                              .val_half = g->feat_dtype == HS_DTYPE_FLOAT16, .n_rows = g->n,
                              .ids = ids, .n = n, .out_ptr = ptr, .out_col = col,
                              .out_val = val, .cap = cap};
  return hs__gather_sparse(s->pool, &req);
}

hs_status hs__session_rows_sparse(hs_session *s, const int32_t *ids, int32_t n, int32_t n_dst,
                                  hs_slot_data *d) {
  const hs_graph *g = s->g;
  if (!d->sx_ptr || n > d->sx_rows)
    return hs__fail(HS_ERR_INVALID_ARG, "sparse gather of %d rows into a slot of %lld", n,
                    (long long)d->sx_rows);
  hs_status st = hs__session_gather_sparse(s, ids, n, d->sx_ptr, d->sx_col, d->sx_val, d->sx_cap);
  d->sx = (hs_nn_sparse){.n_rows = n, .ptr = d->sx_ptr, .col = d->sx_col,
                         .val = g->feat_val ? d->sx_val : NULL, .order = HS_SPARSE_AUTO};
  /* The column lists for the weight gradient: built here, where the host
   * has the rows at hand and the pipeline overlaps it with training,
   * rather than by a counting sort on the trainer. */
  if (st == HS_OK && n_dst >= 0)
    hs__nn_sparse_columns(&d->sx, n_dst, (int32_t)g->f, d->sx_tptr, d->sx_tmid, d->sx_trow,
                          d->sx_tval, d->sx_cursor);
  return st;
}

/* With the trainer cache: the batch's offsets (every row's length is in
 * the features' offsets) into sx_bptr, the misses' rows as CSR in plan
 * order into sx_ptr/col/val (the staging), and a batch whose entries the
 * cache assembles on the trainer. No column lists: the trainer builds them
 * from the assembled entries, in the same order as the host would. */
static hs_status rows_sparse_cached(hs_session *s, hs_slot_data *d) {
  const hs_graph *g = s->g;
  const hs_batch *b = &d->batch;
  hs_status st = hs__coo_classify(s->coo, b->ids, b->n_vertices, &d->plan);
  if (st != HS_OK) return st;
  int64_t at = 0;
  d->sx_bptr[0] = 0;
  for (int32_t i = 0; i < b->n_vertices; i++) {
    at += g->feat_ptr[b->ids[i] + 1] - g->feat_ptr[b->ids[i]];
    if (at > INT32_MAX)
      return hs__fail(HS_ERR_RANGE, "a batch of %d sparse rows holds more than 2^31 - 1 "
                      "entries", b->n_vertices);
    d->sx_bptr[i + 1] = (int32_t)at;
  }
  if ((st = hs__session_rows_sparse(s, d->plan.miss_ids, d->plan.n_miss, -1, d)) != HS_OK)
    return st;
  d->sx = (hs_nn_sparse){.n_rows = b->n_vertices, .ptr = d->sx_bptr,
                         .order = HS_SPARSE_AUTO, .valued = g->feat_val != NULL};
  return HS_OK;
}

hs_status hs__session_rows_in(hs_session *s, const int32_t *ids, int32_t n, float *out) {
  const size_t f = (size_t)s->g->f, in = (size_t)s->in_dim;
  if (s->emb_dim <= 0) {
    void *raw = NULL;
    if (s->g->feat_dtype == HS_DTYPE_FLOAT16 &&
        !(raw = malloc((size_t)n * s->g->feat_row_bytes + 1)))
      return hs__fail(HS_ERR_NOMEM, "out of memory for %d feature rows", n);
    hs_status st = hs__session_rows_f32(s, ids, n, out, raw);
    free(raw);
    return st;
  }
  float *feat = NULL;
  void *raw = NULL;
  hs_status st = HS_OK;
  if (f > 0) {
    feat = malloc((size_t)n * f * sizeof *feat + 1);
    if (s->g->feat_dtype == HS_DTYPE_FLOAT16) raw = malloc((size_t)n * s->g->feat_row_bytes + 1);
    if (!feat || (s->g->feat_dtype == HS_DTYPE_FLOAT16 && !raw))
      st = hs__fail(HS_ERR_NOMEM, "out of memory for %d feature rows", n);
    if (st == HS_OK) st = hs__session_rows_f32(s, ids, n, feat, raw);
  }
  for (int32_t i = 0; st == HS_OK && i < n; i++) {
    float *row = out + (size_t)i * in;
    if (f > 0) memcpy(row, feat + (size_t)i * f, f * sizeof *row);
    hs__embed_read(s->emb, 0, (uint64_t)ids[i], row + f);
  }
  free(feat);
  free(raw);
  return st;
}

hs_status hs__session_all_rows(hs_session *s, const float **out, bool *owned) {
  const hs_graph *g = s->g;
  *owned = false;
  if (s->emb_dim <= 0) {
    *out = s->feat;
    return HS_OK;
  }
  size_t bytes;
  if (!hs__mul_size((size_t)g->n, (size_t)s->in_dim * sizeof(float), &bytes) || g->n > INT32_MAX)
    return hs__fail(HS_ERR_RANGE, "%lld vertices x %d inputs overflow", (long long)g->n,
                    (int)s->in_dim);
  float *all = malloc(bytes + 1);
  int32_t *ids = malloc((size_t)g->n * sizeof *ids + 1);
  hs_status st = all && ids ? HS_OK
                            : hs__fail(HS_ERR_NOMEM, "out of memory for %lld x %d input rows",
                                       (long long)g->n, (int)s->in_dim);
  for (int64_t v = 0; st == HS_OK && v < g->n; v++) ids[v] = (int32_t)v;
  if (st == HS_OK) st = hs__session_rows_in(s, ids, (int32_t)g->n, all);
  free(ids);
  if (st != HS_OK) {
    free(all);
    return st;
  }
  *out = all;
  *owned = true;
  return HS_OK;
}

/* Node embeddings of a training batch: look its vertices up in the store
 * as batch number emb_tick (creating rows met for the first time). Rows an
 * earlier batch still in flight will update are deferred: train_begin
 * refreshes them once that update is applied. */
static hs_status lookup_rows(hs_session *s, hs_slot_data *d) {
  const hs_batch *b = &d->batch;
  for (int32_t i = 0; i < b->n_vertices; i++) d->eids[i] = (uint64_t)b->ids[i];
  hs_embed_query q = {.n = b->n_vertices, .ids = d->eids, .tables = NULL, .n_fields = 1};
  hs_status st = hs__embed_lookup(s->emb, &q, s->emb_tick, true, &d->eb);
  if (st != HS_OK) return st;
  s->emb_tick++;
  d->eb_live = true;
  return HS_OK;
}

/* The batch's input rows: its features (gathered into feat) beside each
 * vertex's row as the lookup and the refresh left it. */
static void compose_rows(const hs_session *s, hs_slot_data *d) {
  const size_t f = (size_t)s->g->f, in = (size_t)s->in_dim, e = (size_t)s->emb_dim;
  for (int32_t i = 0; i < d->batch.n_vertices; i++) {
    float *row = d->xe + (size_t)i * in;
    if (f > 0) memcpy(row, d->feat + (size_t)i * f, f * sizeof *row);
    memcpy(row + f, d->eb.rows + (size_t)d->eb.unique_of[i] * e, e * sizeof *row);
  }
}

/* The step of the batch in `d` is complete: its input gradient's last
 * emb_dim columns, summed per unique vertex, update the rows. */
static hs_status apply_rows(hs_session *s, hs_slot_data *d) {
  hs_status st = hs__trainer_read_input_grad(s->trainer, d->dx);
  if (st != HS_OK) return st;
  const size_t f = (size_t)s->g->f, in = (size_t)s->in_dim, e = (size_t)s->emb_dim;
  memset(d->eg, 0, (size_t)d->eb.n_unique * e * sizeof *d->eg);
  for (int32_t i = 0; i < d->batch.n_vertices; i++) {
    const float *g = d->dx + (size_t)i * in + f;
    float *acc = d->eg + (size_t)d->eb.unique_of[i] * e;
    for (size_t k = 0; k < e; k++) acc[k] += g[k];
  }
  hs__embed_apply(s->emb, &d->eb, d->eg);
  d->eb_live = false;
  return HS_OK;
}

/* Feature rows of the slot's vertices and the labels of its seeds. With
 * the trainer cache (`cached`), only the rows it misses, in plan order.
 * With node embeddings, a training batch (`train`) looks its rows up in
 * the store; any other gets its input rows whole, as they stand. */
static hs_status gather_into(hs_session *s, hs_slot_data *d, bool cached, bool train) {
  const hs_batch *b = &d->batch;
  for (int32_t i = 0; i < b->n_seeds; i++) d->labels[i] = s->g->labels[b->ids[i]];
  if (s->emb_dim > 0 && !train) return hs__session_rows_in(s, b->ids, b->n_vertices, d->xe);
  if (s->emb_dim > 0) {
    hs_status st = s->g->f > 0 ? hs__session_rows_f32(s, b->ids, b->n_vertices, d->feat, d->raw)
                               : HS_OK;
    return st == HS_OK ? lookup_rows(s, d) : st;
  }
  if (s->g->feat_sparse)
    return cached ? rows_sparse_cached(s, d)
                  : hs__session_rows_sparse(s, b->ids, b->n_vertices, b->blocks[0].n_dst, d);
  if (!cached) return hs__session_rows_f32(s, b->ids, b->n_vertices, d->feat, d->raw);
  hs_status st = hs__coo_classify(s->coo, b->ids, b->n_vertices, &d->plan);
  if (st != HS_OK) return st;
  return hs__session_rows_f32(s, d->plan.miss_ids, d->plan.n_miss, d->feat, d->raw);
}

hs_status hs__session_sample_gather(hs_session *s, const int32_t *seeds, int32_t n,
                                    uint32_t epoch_key, uint32_t batch, hs_slot_data *d) {
  hs_status st = hs__session_sample(s, seeds, n, epoch_key, batch, d);
  return st == HS_OK ? gather_into(s, d, false, false) : st;
}

void hs__session_nn_batch(hs_slot_data *d, hs_nn_batch *out) {
  for (int l = 0; l < d->batch.n_layers; l++) {
    const hs_block *b = &d->batch.blocks[l];
    d->nb[l] = (hs_nn_block){.n_dst = b->n_dst, .n_src = b->n_src, .row_ptr = b->row_ptr,
                             .col = b->col};
  }
  bool sparse = d->sx_ptr != NULL;
  *out = (hs_nn_batch){.n_layers = d->batch.n_layers, .blocks = d->nb,
                       .feat = sparse ? NULL : d->xe ? d->xe : d->feat,
                       .sfeat = sparse ? &d->sx : NULL,
                       .labels = d->labels};
}

/* ---- stages ------------------------------------------------------------------ */

/* The whole batch is enqueued on the sampler's queue; the engine polls its
 * event (the async driver gathers and trains meanwhile) and then calls
 * sample_finish. The engine runs a stage for one slot at a time, so the
 * sampler never has two batches in flight. */
static hs_status sample_begin(void *ctx, hs_pipe_slot *slot, cl_event *ev, int *n_ev) {
  hs_session *s = ctx;
  hs_slot_data *d = slot->user;
  const int32_t *seeds;
  int32_t n = hs__session_batch_seeds(s, slot->batch, &seeds);
  hs_status st = hs__sampler_begin(s->sampler, seeds, n, (uint32_t)s->epoch,
                                   hs__session_batch_key(s, slot->batch), &d->batch, &ev[0]);
  *n_ev = st == HS_OK ? 1 : 0;
  return st;
}

/* Device-to-device path: copy each hop's block, at its exact size, from
 * the sampler's buffers into the slot's, on the sampler's queue. Its
 * order puts the copies after the batch and before the next batch that
 * overwrites the buffers; the trainer waits for the copies' event. */
static hs_status copy_blocks(hs_session *s, hs_slot_data *d) {
  hs__events_release(&d->blk_ev, 1);
  d->blk_bytes = 0;
  const int L = d->batch.n_layers;
  hs_status st = HS_OK;
  for (int h = 0; h < L && st == HS_OK; h++) {
    int l = L - 1 - h;
    const hs_block *b = &d->batch.blocks[l];
    int32_t edges = hs__sampler_hop_edges(&d->batch, h);
    size_t rp_bytes = 4 * ((size_t)b->n_dst + 1), col_bytes = 4 * (size_t)edges;
    cl_mem rp, col;
    hs__sampler_block_buffers(s->sampler, h, &rp, &col);
    st = hs__mem_copy(s->sq, rp, d->blk_rp[l], 0, 0, rp_bytes, 0, NULL, NULL);
    if (st == HS_OK) st = hs__mem_copy(s->sq, col, d->blk_col[l], 0, 0, col_bytes, 0, NULL, NULL);
    d->db[l] = (hs_nn_dev_block){.n_dst = b->n_dst, .n_src = b->n_src, .n_edges = edges,
                                 .row_ptr = d->blk_rp[l], .col = d->blk_col[l]};
    d->blk_bytes += rp_bytes + col_bytes;
  }
  if (st == HS_OK) st = hs__queue_marker(s->sq, 0, NULL, &d->blk_ev);
  /* The trainer's queue waits for blk_ev: the copies must be submitted. */
  if (st == HS_OK) st = hs__queue_flush(s->sq);
  return st;
}

static hs_status sample_finish(void *ctx, hs_pipe_slot *slot) {
  hs_session *s = ctx;
  hs_slot_data *d = slot->user;
  hs_status st = hs__sampler_finish(s->sampler, &d->batch);
  if (st == HS_OK) count_edges(d);
  if (st == HS_OK && s->transfer == HS_TRANSFER_DEVICE) st = copy_blocks(s, d);
  return st;
}

static hs_status gather_begin(void *ctx, hs_pipe_slot *slot, cl_event *ev, int *n_ev) {
  (void)ev;
  *n_ev = 0;
  hs_session *s = ctx;
  return gather_into(s, slot->user, s->coo != NULL, true);
}

/* The batch's feature matrix from the trainer cache and the staged misses.
 * The trainer's queue is in order, so the step enqueued next reads X only
 * once it is complete, and the slot's marker event covers the staging. */
static hs_status assemble_sparse(hs_session *s, hs_slot_data *d) {
  cl_mem ptr, col, val;
  hs_status st = hs__trainer_sparse_entries(s->trainer, &ptr, &col, &val);
  if (st != HS_OK) return st;
  cl_event up = NULL, evs[3];
  int n_evs = 0;
  st = hs__coo_dev_upload_sparse(d->cs, s->tq, &d->plan, d->sx_ptr, d->sx_col,
                                 s->g->feat_val ? d->sx_val : NULL, NULL, 0, &up);
  if (st == HS_OK)
    st = hs__coo_dev_assemble_sparse(d->cs, s->tq, &d->plan, ptr, col, val, up ? &up : NULL,
                                     up ? 1 : 0, evs, &n_evs);
  if (up) hs__events_release(&up, 1);
  hs__events_release(evs, n_evs);
  return st;
}

static hs_status assemble(hs_session *s, hs_slot_data *d) {
  if (s->g->feat_sparse) return assemble_sparse(s, d);
  cl_mem x;
  hs_status st = hs__trainer_feat_buffer(s->trainer, (size_t)d->batch.n_vertices, &x);
  if (st != HS_OK) return st;
  cl_event up = NULL, evs[2];
  int n_evs = 0;
  st = hs__coo_dev_upload(d->cs, s->tq, &d->plan, d->feat, NULL, 0, &up);
  if (st == HS_OK)
    st = hs__coo_dev_assemble(d->cs, s->tq, &d->plan, x, up ? &up : NULL, up ? 1 : 0, evs,
                              &n_evs);
  if (up) hs__events_release(&up, 1);
  hs__events_release(evs, n_evs);
  return st;
}

/* A distributed run stopped at an earlier step: batches already in the
 * pipeline are not trained (every rank stops after the same step). */
static bool past_stop(const hs_session *s, int64_t batch) {
  return s->dist_stop_at >= 0 && batch >= s->dist_stop_at;
}

static hs_status train_begin(void *ctx, hs_pipe_slot *slot, cl_event *ev, int *n_ev) {
  hs_session *s = ctx;
  hs_slot_data *d = slot->user;
  double t0 = hs__now();
  hs_status st;
  *n_ev = 0;
  if (past_stop(s, slot->batch)) {
    hs__events_release(&d->blk_ev, 1);
    return HS_OK;
  }
  if (s->emb_dim > 0) {
    /* Every earlier batch's update is applied (this stage finished it):
     * the rows deferred at lookup can be read now. */
    hs__embed_refresh(s->emb, &d->eb);
    compose_rows(s, d);
  }
  /* With the trainer cache the features are assembled below, on the
   * trainer's queue. */
  if (s->transfer == HS_TRANSFER_DEVICE) {
    bool sparse = s->g->feat_sparse;
    hs_nn_dev_batch db = {.n_layers = d->batch.n_layers, .blocks = d->db,
                          .feat = s->coo || sparse ? NULL : d->xe ? d->xe : d->feat,
                          .sfeat = sparse ? &d->sx : NULL, .labels = d->labels};
    st = hs__trainer_upload_dev(s->trainer, &db, 1, &d->blk_ev);
    hs__events_release(&d->blk_ev, 1);
  } else {
    hs_nn_batch nb;
    hs__session_nn_batch(d, &nb);
    if (s->coo) nb.feat = NULL;
    st = hs__trainer_upload(s->trainer, &nb);
  }
  if (st != HS_OK) return st;
  if (s->coo && (st = assemble(s, d)) != HS_OK) return st;
  s->acc_upload_s += hs__now() - t0;
  if (s->dist)
    st = hs__session_dist_train(s, slot->batch);
  else
    st = hs__trainer_step(s->trainer, (uint32_t)s->epoch, hs__session_batch_key(s, slot->batch));
  if (st != HS_OK) return st;
  st = hs__queue_marker(s->tq, 0, NULL, &ev[0]);
  /* The async driver polls the marker: an implementation may start
   * nothing until the queue is flushed (oclgrind, rusticl do), and the
   * specification requires the flush before waiting on an event that way. */
  if (st == HS_OK && (st = hs__queue_flush(s->tq)) != HS_OK) hs__events_release(&ev[0], 1);
  *n_ev = st == HS_OK ? 1 : 0;
  return st;
}

/* A non-finite loss ends training: the parameters are no longer usable. */
static hs_status diverged(const hs_session *s, double loss, int64_t batch) {
  return hs__fail(HS_ERR_RANGE, "the training loss is %s by batch %lld of epoch %lld: the model "
                  "diverged (lower the learning rate, or check the features)",
                  isnan(loss) ? "NaN" : "infinite", (long long)batch + 1,
                  (long long)s->epoch + 1);
}

static hs_status train_finish(void *ctx, hs_pipe_slot *slot) {
  hs_session *s = ctx;
  hs_slot_data *d = slot->user;
  if (past_stop(s, slot->batch)) return HS_OK;
  if (s->emb_dim > 0) {
    hs_status st = apply_rows(s, d);
    if (st != HS_OK) return st;
  }
  s->acc_batches++;
  s->batch_pos = slot->batch + 1;
  s->acc_edges += d->edges;
  s->acc_rows += (uint64_t)d->batch.n_vertices;
  if (s->g->feat_sparse && s->coo) {
    /* The batch's offsets, the misses' entries (and their offsets, on the
     * host only) and each row's source (8 bytes): the hits' entries stay
     * on the trainer. */
    uint64_t nnz = (uint64_t)hs__nn_sparse_nnz(&d->sx), eb = s->g->feat_val ? 8u : 4u;
    uint64_t miss = (uint64_t)d->sx_ptr[d->plan.n_miss];
    s->acc_gather_bytes += 4u * ((uint64_t)d->plan.n_miss + 1) + miss * eb;
    s->acc_upload_bytes += 4u * ((uint64_t)d->sx.n_rows + 1) + miss * eb + 8u * (uint64_t)d->plan.n;
    s->acc_feat_nnz += nnz;
  } else if (s->g->feat_sparse) {
    /* Offsets, column ids and (unless binary) values: what was copied on
     * the host and what crossed to the trainer. */
    uint64_t nnz = (uint64_t)hs__nn_sparse_nnz(&d->sx);
    uint64_t bytes = 4u * ((uint64_t)d->sx.n_rows + 1) + nnz * (d->sx.val ? 8u : 4u);
    s->acc_gather_bytes += bytes;
    s->acc_upload_bytes += bytes;
    if (d->sx.t_ptr) /* the column lists */
      s->acc_upload_bytes += 8u * (uint64_t)s->g->f + nnz * (d->sx.val ? 8u : 4u);
    s->acc_feat_nnz += nnz;
  } else {
    s->acc_gather_bytes +=
        (uint64_t)(s->coo ? d->plan.n_miss : d->batch.n_vertices) * s->g->feat_row_bytes;
  }
  if (s->g->feat_sparse) {
    /* counted above */
  } else if (s->coo) /* the miss rows and the plan's index arrays */
    s->acc_upload_bytes += (uint64_t)d->plan.n_miss * ((uint64_t)s->g->f * sizeof(float) + 4u) +
                           4u * (uint64_t)d->plan.n;
  else
    s->acc_upload_bytes += (uint64_t)d->batch.n_vertices * (uint64_t)s->in_dim * sizeof(float);
  s->acc_upload_bytes += 4u * (uint64_t)d->batch.n_seeds; /* labels */
  if (s->transfer == HS_TRANSFER_DEVICE) /* blocks: copied on the device */
    s->acc_d2d_bytes += d->blk_bytes;
  else
    for (int l = 0; l < d->batch.n_layers; l++)
      s->acc_upload_bytes += 4u * ((uint64_t)d->batch.blocks[l].n_dst + 1 +
                                   (uint64_t)hs__sampler_hop_edges(&d->batch, d->batch.n_layers - 1 - l));
  if (s->progress) {
    /* Reading the loss waits for the device: only every few batches. */
    int64_t every = s->n_batches / 20 > 0 ? s->n_batches / 20 : 1;
    if (slot->batch % every == every - 1 || slot->batch + 1 == s->n_batches) {
      hs_status st = hs__trainer_drain_stats(s->trainer, &s->acc_train);
      if (st != HS_OK) return st;
      double loss = s->acc_train.steps ? s->acc_train.loss_sum / s->acc_train.steps : NAN;
      if (s->acc_train.steps && !isfinite(loss)) return diverged(s, loss, slot->batch);
      s->progress(s->progress_user, slot->batch, s->n_batches, loss);
    }
  }
  return HS_OK;
}

const hs_pipe_stage hs__session_stages[HS_STAGE_COUNT_] = {
    {"sample", sample_begin, sample_finish},
    {"gather", gather_begin, NULL},
    {"train", train_begin, train_finish},
};

/* The host cores kept off the roles' sub-devices (PoCL numbers a CPU
 * device's compute units from the first core, so they are the last ones):
 * *n = 0 when host threads share the roles' cores. */
static void host_cores(const hs_session *s, int *first, int *n) {
  const hs_placement *p = s->plan;
  *first = 0;
  *n = 0;
  if (p->link != HS_LINK_SUB_DEVICES || p->host_reserved_cores <= 0) return;
  *first = (int)(p->sampler.cores + p->trainer.cores);
  *n = p->host_reserved_cores;
}

static void bind_host_thread(void *ctx) {
  hs_session *s = ctx;
  int first, n;
  host_cores(s, &first, &n);
  if (n > 0 && hs__topo_bind_thread(s->rt->topo, first, n) != HS_OK)
    hs__log(HS_LOG_PIPELINE, "host thread not bound: %s", hs_last_error());
}

/* A parameter server's epoch: serve the workers' steps. */
static hs_status serve_epoch(hs_session *s, hs_epoch_stats *stats) {
  memset(&s->acc_train, 0, sizeof s->acc_train);
  stats->epoch = s->epoch;
  hs_status st = hs__session_dist_serve(s, stats);
  if (st == HS_OK) st = hs__session_dist_stats(s, stats);
  if (st != HS_OK) return st;
  if (s->batch_pos >= s->n_batches) {
    s->epoch++;
    s->batch_pos = 0;
  } else {
    stats->interrupted = true;
  }
  return HS_OK;
}

void hs_epoch_stats_init_sized(hs_epoch_stats *stats, size_t struct_size) {
  hs_epoch_stats z;
  memset(&z, 0, sizeof z);
  z.struct_size = sizeof z;
  hs__sized_init(stats, struct_size, &z, sizeof z);
}

static hs_status train_epoch(hs_session *s, hs_epoch_stats *stats);

hs_status hs_session_train_epoch(hs_session *s, hs_epoch_stats *user) {
  if (!s) return hs__fail(HS_ERR_INVALID_ARG, "hs_session_train_epoch: NULL session");
  hs_status st;
  if (user && (st = hs__sized_check(user->struct_size, sizeof *user, "hs_epoch_stats")))
    return st;
  hs_epoch_stats stats;
  hs_epoch_stats_init(&stats);
  st = train_epoch(s, &stats);
  if (user && (st == HS_OK || st == HS_ERR_INTERRUPTED))
    hs__sized_out(user, &stats, sizeof stats, "hs_epoch_stats");
  return st;
}

/* Batches looked up but never trained (a stage failed after their
 * gather): marked done in lookup order, so that later lookups stop
 * deferring their rows. */
static void release_lookups(hs_session *s) {
  for (;;) {
    hs_slot_data *first = NULL;
    for (int i = 0; s->emb && i < s->depth; i++)
      if (s->slots[i].eb_live && (!first || s->slots[i].eb.tick < first->eb.tick))
        first = &s->slots[i];
    if (!first) return;
    hs__embed_release(s->emb, first->eb.tick);
    first->eb_live = false;
  }
}

static hs_status train_epoch(hs_session *s, hs_epoch_stats *stats) {
  if (s->server) return serve_epoch(s, stats);
  s->dist_stop = 0;
  s->dist_stop_at = -1;
  if (s->order_epoch != s->epoch) {
    hs_status sst = hs__session_shuffle(s, s->epoch);
    if (sst != HS_OK) return sst;
  }
  if (s->tier) hs__host_tier_stats_reset(s->tier); /* evaluation read through it too */
  if (s->stier) hs__sparse_tier_stats_reset(s->stier);
  s->acc_batches = s->acc_edges = 0;
  s->acc_rows = 0;
  s->acc_gather_bytes = s->acc_upload_bytes = s->acc_d2d_bytes = s->acc_feat_nnz = 0;
  s->acc_upload_s = 0;
  hs_sampler_stats ss0, ss1;
  hs__sampler_stats(s->sampler, &ss0);
  memset(&s->acc_train, 0, sizeof s->acc_train);

  int first_core, n_cores;
  host_cores(s, &first_core, &n_cores);
  /* Distributed, a stop is agreed between the ranks (the step says when)
   * rather than taken from the caller's flag directly. */
  hs_pipe p = {.stages = hs__session_stages, .n_stages = HS_STAGE_COUNT_, .ctx = s,
               .slots = s->pslots, .depth = s->depth, .mode = s->mode,
               .stop = s->dist ? &s->dist_stop : s->stop,
               .thread_init = n_cores > 0 ? bind_host_thread : NULL};
  /* Drivers that run on the caller's thread bind it for the epoch only. */
  void *saved = NULL;
  if (n_cores > 0 && s->mode != HS_PIPE_THREADS) {
    saved = hs__topo_binding_save(s->rt->topo);
    bind_host_thread(s);
  }
  hs_pipe_stats ps;
  /* Evaluation and the presample fill read blocks on the host: the
   * sampler keeps them on the device only while an epoch runs. */
  hs__sampler_keep_blocks(s->sampler, s->transfer == HS_TRANSFER_DEVICE);
  hs_status st = hs__pipe_run(&p, s->batch_pos, s->n_batches - s->batch_pos, &ps);
  hs__sampler_keep_blocks(s->sampler, false);
  hs__topo_binding_restore(s->rt->topo, saved);
  release_lookups(s);
  hs__sampler_stats(s->sampler, &ss1);
  hs_status st2 = hs__trainer_drain_stats(s->trainer, &s->acc_train);
  if (st == HS_OK) st = st2;
  if (st == HS_OK && s->dist)
    st = hs__session_dist_epoch_end(s, s->acc_batches, s->batch_pos < s->n_batches);

  stats->epoch = s->epoch;
  stats->batches = s->acc_batches;
  stats->loss = s->acc_train.steps ? s->acc_train.loss_sum / s->acc_train.steps : NAN;
  stats->train_acc = s->acc_train.seeds ? (double)s->acc_train.correct / (double)s->acc_train.seeds : NAN;
  stats->wall_s = ps.wall_s;
  for (int i = 0; i < HS_STAGE_COUNT_; i++) {
    stats->stage_busy_s[i] = ps.busy_s[i];
    stats->stage_wait_s[i] = ps.wait_s[i];
  }
  stats->trainer_utilisation = ps.wall_s > 0 ? ps.busy_s[HS_STAGE_TRAIN] / ps.wall_s : 0;
  stats->sampled_edges_per_s =
      ps.busy_s[HS_STAGE_SAMPLE] > 0 ? (double)s->acc_edges / ps.busy_s[HS_STAGE_SAMPLE] : 0;
  stats->gather_bytes_per_s = ps.busy_s[HS_STAGE_GATHER] > 0
                                  ? (double)s->acc_gather_bytes / ps.busy_s[HS_STAGE_GATHER]
                                  : 0;
  stats->bytes_uploaded = s->acc_upload_bytes;
  stats->feature_format = s->g->feat_sparse ? HS_FEAT_FORMAT_SPARSE : HS_FEAT_FORMAT_DENSE;
  stats->feature_nnz = s->acc_feat_nnz;
  /* What the same rows would have cost as dense float32 rows. */
  stats->feature_bytes_dense = (uint64_t)s->acc_rows * (uint64_t)s->g->f * sizeof(float);
  stats->bytes_to_host = ss1.bytes_read - ss0.bytes_read;
  stats->bytes_device_to_device = s->acc_d2d_bytes;
  stats->transfer = s->transfer;
  stats->upload_s = s->acc_upload_s;
  stats->host_topology_freed_bytes = s->topology_freed;
  stats->feature_huge_page_bytes = s->feat_huge;
  hs__session_cache_epoch_end(s, stats);
  struct rusage ru;
  if (getrusage(RUSAGE_SELF, &ru) == 0) stats->peak_rss_bytes = (uint64_t)ru.ru_maxrss * 1024u;
  stats->pipeline = s->mode == HS_PIPE_THREADS ? HS_PIPELINE_THREADS
                    : s->mode == HS_PIPE_OFF   ? HS_PIPELINE_OFF
                                               : HS_PIPELINE_ASYNC;
  stats->depth = s->depth;
  if (st == HS_OK && s->dist) st = hs__session_dist_stats(s, stats);
  if (st != HS_OK) return st;
  if (s->acc_train.steps && !isfinite(stats->loss))
    return diverged(s, stats->loss, s->batch_pos - 1);
  if (s->batch_pos >= s->n_batches) {
    s->epoch++;
    s->batch_pos = 0;
  } else {
    stats->interrupted = true;
  }
  return HS_OK;
}
