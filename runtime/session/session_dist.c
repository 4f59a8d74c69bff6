/* Distributed sessions (hetsage/dist.h): joining the world, the check
 * that every rank runs the same options on the same data, the train
 * stage's distributed step, parameter server ranks, and the collectives
 * around evaluation and statistics. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "dist/hs_world.h"
#include "hs_launch.h"
#include "hs_session_int.h"

/* ---- the same options and data everywhere ------------------------------------ */

enum { FP_TEXT = 2048 };

/* What must agree between ranks, as "name=value" lines: every option that
 * changes results, and facts and checksums of the dataset. (Placement,
 * board, cache and pipeline options may differ: results do not depend on
 * them.) */
typedef struct fingerprint {
  char text[FP_TEXT];
} fingerprint;

static void add(fingerprint *f, const char *fmt, ...) HS_PRINTF(2, 3);
static void add(fingerprint *f, const char *fmt, ...) {
  size_t len = strlen(f->text);
  if (len + 1 >= sizeof f->text) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(f->text + len, sizeof f->text - len, fmt, ap);
  va_end(ap);
  len = strlen(f->text);
  if (len + 1 < sizeof f->text) {
    f->text[len] = '\n';
    f->text[len + 1] = '\0';
  }
}

static unsigned long crc(const void *p, size_t bytes) {
  unsigned long c = crc32(0L, Z_NULL, 0);
  const unsigned char *b = p;
  while (bytes > 0) { /* zlib takes uInt lengths */
    uInt take = bytes > (1u << 30) ? (1u << 30) : (uInt)bytes;
    c = crc32(c, b, take);
    b += take;
    bytes -= take;
  }
  return c;
}

static void make_fingerprint(const hs_session *s, const hs_session_config *cfg, fingerprint *f) {
  memset(f, 0, sizeof *f);
  const hs_graph *g = s->g;
  const hs_dist_config *d = &s->dcfg;
  add(f, "hetsage version=%s", hs_version());
  add(f, "world size=%d", s->world_size);
  add(f, "model=%s", hs_model_kind_name(cfg->model));
  add(f, "heads=%d", cfg->model == HS_MODEL_GAT ? cfg->heads : 0);
  add(f, "layers=%d", cfg->n_layers);
  for (int l = 0; l < cfg->n_layers; l++) add(f, "fanout %d=%d", l, cfg->fanouts[l]);
  add(f, "batch size=%d", cfg->batch_size);
  add(f, "hidden=%d", cfg->hidden);
  add(f, "dropout=%.9g", (double)cfg->dropout);
  add(f, "optimizer=%d", (int)cfg->optimizer);
  add(f, "learning rate=%.9g", (double)cfg->lr);
  add(f, "weight decay=%.9g", (double)cfg->weight_decay);
  add(f, "seed=%llu", (unsigned long long)cfg->seed);
  add(f, "memory budget=%llu", (unsigned long long)cfg->memory_budget);
  add(f, "sync=%s", hs_sync_mode_name(d->sync));
  add(f, "servers=%d", d->sync == HS_SYNC_PS ? d->servers : 0);
  add(f, "staleness=%d", d->staleness);
  add(f, "quorum=%d", d->quorum);
  add(f, "period=%d", d->period);
  add(f, "compress=%s", hs_compress_name(d->compress));
  add(f, "compress warmup=%lld", (long long)d->compress_warmup);
  add(f, "compress min=%lld", (long long)d->compress_min);
  add(f, "bucket bytes=%zu", d->bucket_bytes);
  add(f, "timeout=%.9g", d->timeout_s);
  add(f, "start timeout=%.9g", d->start_timeout_s);
  add(f, "dataset vertices=%lld", (long long)g->n);
  add(f, "dataset edges=%lld", (long long)g->e);
  add(f, "dataset features=%lld (%s)", (long long)g->f, hs_dtype_name(g->feat_dtype));
  add(f, "dataset classes=%d", g->num_classes);
  for (int k = 0; k < HS_SPLIT_COUNT_; k++)
    add(f, "dataset split %d=%lld seeds, checksum %08lx", k, (long long)g->split_n[k],
        g->split[k] ? crc(g->split[k], (size_t)g->split_n[k] * sizeof *g->split[k]) : 0ul);
  add(f, "dataset labels checksum=%08lx",
      g->labels ? crc(g->labels, (size_t)g->n * sizeof *g->labels) : 0ul);
  add(f, "dataset indptr checksum=%08lx",
      g->indptr ? crc(g->indptr, ((size_t)g->n + 1) * sizeof *g->indptr) : 0ul);
}

/* The first line where b differs from a, into `out`. */
static bool first_difference(const char *a, const char *b, char *in_a, char *in_b, size_t len) {
  while (*a || *b) {
    const char *ea = strchr(a, '\n'), *eb = strchr(b, '\n');
    size_t la = ea ? (size_t)(ea - a) : strlen(a), lb = eb ? (size_t)(eb - b) : strlen(b);
    if (la != lb || memcmp(a, b, la) != 0) {
      snprintf(in_a, len, "%.*s", (int)la, a);
      snprintf(in_b, len, "%.*s", (int)lb, b);
      return true;
    }
    a += la + (ea ? 1 : 0);
    b += lb + (eb ? 1 : 0);
  }
  return false;
}

static hs_status check_agreement(hs_session *s, const hs_session_config *cfg) {
  fingerprint *mine = malloc(sizeof *mine);
  fingerprint *all = malloc((size_t)s->world_size * sizeof *all);
  hs_status st = HS_OK;
  if (!mine || !all) {
    st = hs__fail(HS_ERR_NOMEM, "option check");
    goto out;
  }
  make_fingerprint(s, cfg, mine);
  st = hs__comm_allgather(s->comm, mine, sizeof *mine, all, "the check of every rank's options");
  if (st != HS_OK) goto out;
  for (int r = 1; r < s->world_size; r++) {
    char a[256], b[256];
    if (first_difference(all[0].text, all[r].text, a, b, sizeof a)) {
      st = hs__fail(HS_ERR_INVALID_ARG, "the ranks were started differently: rank %d has '%s' "
                    "where rank 0 has '%s' (every rank needs the same options and dataset)",
                    r, b, a);
      goto out;
    }
  }
out:
  free(mine);
  free(all);
  return st;
}

hs_status hs__session_dist_join(hs_session *s, const hs_session_config *cfg) {
  int64_t n = s->g->split_n[HS_SPLIT_TRAIN];
  s->rank = 0;
  s->world_size = 1;
  s->workers = 1;
  s->worker = 0;
  s->slice_lo = 0;
  s->slice_len = n;
  s->dist_stop_at = -1;
  /* The options are copied: the caller's struct is borrowed. */
  hs_status st = hs__dist_config_take(cfg->dist, &s->dcfg);
  s->cfg.dist = NULL;
  if (st != HS_OK || !cfg->world) return st;
  s->comm = cfg->world->comm;
  s->rank = hs__comm_rank(s->comm);
  s->world_size = hs__comm_size(s->comm);
  const hs_dist_config *d = &s->dcfg;
  if (d->sync == HS_SYNC_PS && (d->servers < 1 || d->servers >= s->world_size))
    return hs__fail(HS_ERR_INVALID_ARG, "%d parameter servers in a world of %d ranks: the "
                    "parameter server needs 1 .. %d servers and at least one worker",
                    d->servers, s->world_size, s->world_size - 1);
  if (!(d->timeout_s > 0) || !(d->start_timeout_s > 0))
    return hs__fail(HS_ERR_INVALID_ARG, "timeouts %g s and %g s: must be > 0", d->timeout_s,
                    d->start_timeout_s);
  s->workers = d->sync == HS_SYNC_PS ? s->world_size - d->servers : s->world_size;
  s->server = s->rank >= s->workers;
  s->worker = s->server ? -1 : s->rank;
  if (!s->server) {
    s->slice_lo = n * s->worker / s->workers;
    s->slice_len = n * (s->worker + 1) / s->workers - s->slice_lo;
  } else {
    s->slice_len = 0;
  }
  /* Ranks start at different moments (datasets open at their own pace):
   * the check may wait the start-up time. */
  hs__comm_set_timeout(s->comm, d->start_timeout_s);
  st = check_agreement(s, cfg);
  hs__comm_set_timeout(s->comm, d->timeout_s);
  return st;
}

/* ---- the model as the distributed step drives it -------------------------------- */

/* The backward pass completed layer `layer`'s gradients (once the event
 * `ready` completes): read them behind it on the trainer's in-order queue
 * (a copy, short beside the rest of the pass), without waiting. */
static void on_layer(void *user, int layer, size_t off, size_t n, cl_event ready) {
  hs_session *s = user;
  if (s->hook_st != HS_OK || layer < 0 || layer >= HS_NN_MAX_LAYERS) return;
  hs__events_release(&s->layer_ev[layer], 1);
  s->hook_st = hs__mem_read(hs__trainer_queue(s->trainer), hs__trainer_grad_buffer(s->trainer),
                            false, off * sizeof(float), n * sizeof(float), s->dist_grads + off,
                            1, &ready, &s->layer_ev[layer]);
}

static hs_status tr_grads_begin(void *ctx, float *grads) {
  hs_session *s = ctx;
  const hs_model_shape *sh = &s->model.shape;
  for (int l = 0; l < HS_NN_MAX_LAYERS; l++) hs__events_release(&s->layer_ev[l], 1);
  s->hook_st = HS_OK;
  s->dist_grads = grads; /* the distributed step's vector, where reads land */
  hs__trainer_set_layer_hook(s->trainer, on_layer, s);
  hs_status st = hs__trainer_gradients(s->trainer, (uint32_t)s->epoch,
                                       hs__session_batch_key(s, s->dist_batch), true);
  hs__trainer_set_layer_hook(s->trainer, NULL, NULL);
  if (st == HS_OK) st = s->hook_st;
  /* A layer the hook did not announce is read after the whole pass. */
  cl_command_queue q = hs__trainer_queue(s->trainer);
  for (int l = 0; l < sh->n_layers && st == HS_OK; l++)
    if (!s->layer_ev[l])
      st = hs__mem_read(q, hs__trainer_grad_buffer(s->trainer), false,
                        sh->layer_off[l] * sizeof(float), sh->layer_n[l] * sizeof(float),
                        s->dist_grads + sh->layer_off[l], 0, NULL, &s->layer_ev[l]);
  /* Drivers start nothing until a flush. */
  if (st == HS_OK) st = hs__queue_flush(q);
  return st;
}

static hs_status tr_grads_poll(void *ctx, int tensor, bool *ready) {
  hs_session *s = ctx;
  cl_event *ev = &s->layer_ev[s->tensor_layer[tensor]];
  hs_event_state es = hs__events_poll(ev, 1);
  if (es == HS_EVENTS_FAILED) return hs__fail_context(HS_ERR_OPENCL, "reading gradients");
  *ready = es == HS_EVENTS_DONE;
  return HS_OK;
}

static hs_status tr_apply(void *ctx, const float *grads) {
  hs_session *s = ctx;
  hs_status st = hs__trainer_write_grads(s->trainer, grads);
  return st == HS_OK ? hs__trainer_apply(s->trainer) : st;
}

static hs_status tr_step(void *ctx) {
  hs_session *s = ctx;
  return hs__trainer_step(s->trainer, (uint32_t)s->epoch, hs__session_batch_key(s, s->dist_batch));
}

static hs_status tr_get_params(void *ctx, float *params) {
  hs_session *s = ctx;
  return hs__mem_read(hs__trainer_queue(s->trainer), hs__trainer_param_buffer(s->trainer), true,
                      0, s->model.shape.n_params * sizeof *params, params, 0, NULL, NULL);
}

/* The moments and the step stay the trainer's. */
static hs_status tr_set_params(void *ctx, const float *params) {
  hs_session *s = ctx;
  return hs__mem_write(hs__trainer_queue(s->trainer), hs__trainer_param_buffer(s->trainer), true,
                       0, s->model.shape.n_params * sizeof *params, params, 0, NULL, NULL);
}

static hs_status tr_get_state(void *ctx, float *params, float *m, float *v, uint64_t *step) {
  hs_session *s = ctx;
  return hs__trainer_read_state(s->trainer, params, m, v, step);
}

static hs_status tr_set_state(void *ctx, const float *params, const float *m, uint64_t step) {
  hs_session *s = ctx;
  return hs__trainer_write_state(s->trainer, params, m, step);
}

static const hs_dist_trainer *trainer_iface(hs_session *s, hs_dist_trainer *t) {
  *t = (hs_dist_trainer){.ctx = s, .grads_begin = tr_grads_begin, .grads_poll = tr_grads_poll,
                         .apply = tr_apply, .step = tr_step, .get_params = tr_get_params,
                         .set_params = tr_set_params, .get_state = tr_get_state,
                         .set_state = tr_set_state};
  return t;
}

/* Tensors in the order the backward pass completes them, the output layer
 * first: each layer's range cut around its bias, so that the bias (too
 * small to compress) travels apart from the weights. */
static int model_tensors(const hs_model_shape *sh, hs_dist_tensor *t) {
  int n = 0;
  for (int l = sh->n_layers - 1; l >= 0; l--) {
    size_t lo = sh->layer_off[l], hi = lo + sh->layer_n[l];
    size_t blo = sh->b_off[l], bhi = blo + (size_t)sh->dims[l + 1];
    if (blo < lo || bhi > hi) { /* no bias inside the layer's range */
      t[n++] = (hs_dist_tensor){.off = lo, .n = hi - lo};
      continue;
    }
    t[n++] = (hs_dist_tensor){.off = blo, .n = bhi - blo};
    if (blo > lo) t[n++] = (hs_dist_tensor){.off = lo, .n = blo - lo};
    if (hi > bhi) t[n++] = (hs_dist_tensor){.off = bhi, .n = hi - bhi};
  }
  return n;
}

hs_status hs__session_dist_open(hs_session *s) {
  if (!s->comm) return HS_OK;
  hs_dist_tensor tensors[3 * HS_NN_MAX_LAYERS];
  int nt = model_tensors(&s->model.shape, tensors);
  for (int i = 0; i < nt; i++) /* the layer each tensor lies in */
    for (int l = 0; l < s->model.shape.n_layers; l++)
      if (tensors[i].off >= s->model.shape.layer_off[l] &&
          tensors[i].off < s->model.shape.layer_off[l] + s->model.shape.layer_n[l])
        s->tensor_layer[i] = l;
  hs_dist_model dm = {.n_params = s->model.shape.n_params, .tensors = tensors, .n_tensors = nt,
                      .optim = s->model.cfg.optim, .params = s->model.params, .m = s->model.m,
                      .v = s->model.v, .step = s->model.step};
  hs_status st = hs__dist_create(s->comm, &s->dcfg, &dm, &s->dist);
  if (st != HS_OK) return st;
  if (s->rank == 0) s->rank_stats = calloc((size_t)s->world_size, sizeof *s->rank_stats);
  if (s->rank == 0 && !s->rank_stats)
    return hs__fail(HS_ERR_NOMEM, "distributed session buffers");
  /* Program builds take each rank its own time. */
  hs__comm_set_timeout(s->comm, s->dcfg.start_timeout_s);
  st = hs__comm_barrier(s->comm, "the ranks' start-up (session creation)");
  hs__comm_set_timeout(s->comm, s->dcfg.timeout_s);
  return st;
}

void hs__session_dist_close(hs_session *s) {
  hs__events_release(s->layer_ev, HS_NN_MAX_LAYERS);
  hs__dist_destroy(s->dist);
  s->dist = NULL;
  free(s->rank_stats);
  s->dist_grads = NULL;
  s->rank_stats = NULL;
}

hs_status hs__session_dist_train(hs_session *s, int64_t b) {
  int32_t count = hs__session_batch_count(s, b);
  int64_t step = s->epoch * s->n_batches + b;
  bool ask = s->stop && *s->stop;
  bool stop_after = false;
  hs_dist_trainer t;
  s->dist_batch = b; /* the trainer callbacks key dropout by it */
  hs_status st = hs__dist_step(s->dist, trainer_iface(s, &t), step, count, ask, &stop_after);
  if (st == HS_OK && stop_after) {
    s->dist_stop_at = b + 1;
    s->dist_stop = 1;
  }
  return st;
}

hs_status hs__session_dist_epoch_end(hs_session *s, int64_t done, bool interrupted) {
  hs_dist_trainer t;
  return hs__dist_epoch_end(s->dist, trainer_iface(s, &t), done, interrupted);
}

hs_status hs__session_dist_serve(hs_session *s, hs_epoch_stats *stats) {
  double t0 = hs__now();
  int64_t done = 0;
  bool interrupted = false;
  hs_status st = hs__dist_serve(s->dist, &done, &interrupted);
  stats->wall_s = hs__now() - t0;
  if (st != HS_OK) return st;
  s->batch_pos += done;
  stats->batches = 0;
  return HS_OK;
}

/* ---- statistics over the ranks ------------------------------------------------------ */

enum { RS_FIELDS = 11 };

hs_status hs__session_dist_stats(hs_session *s, hs_epoch_stats *stats) {
  hs_dist_stats ds;
  hs__dist_stats_take(s->dist, &ds);
  stats->rank = s->rank;
  stats->world_size = s->world_size;
  stats->server = s->server;
  stats->dist_steps = ds.steps;
  stats->dist_compute_s = ds.compute_s;
  stats->dist_comm_s = ds.comm_s;
  stats->dist_bytes_sent = ds.bytes_sent;
  stats->dist_bytes_recv = ds.bytes_recv;
  stats->dist_compressed_steps = ds.compressed_steps;
  stats->dist_late_gradients = ds.late_gradients;
  stats->dist_max_staleness = ds.max_staleness;
  stats->dist_updates = ds.updates;
  /* Loss and accuracy over every worker's seeds, summed in rank order. */
  double sums[4] = {s->server ? 0 : s->acc_train.loss_sum, s->server ? 0 : s->acc_train.steps,
                    s->server ? 0 : (double)s->acc_train.correct,
                    s->server ? 0 : (double)s->acc_train.seeds};
  hs_status st = hs__comm_sum_f64(s->comm, sums, 4, "the epoch's statistics");
  if (st != HS_OK) return st;
  stats->loss = sums[1] > 0 ? sums[0] / sums[1] : 0;
  stats->train_acc = sums[3] > 0 ? sums[2] / sums[3] : 0;
  /* Every rank's figures to rank 0. */
  double mine[RS_FIELDS] = {(double)s->server, (double)ds.steps, ds.compute_s, ds.comm_s,
                            (double)ds.bytes_sent, (double)ds.bytes_recv,
                            (double)ds.compressed_steps, (double)ds.late_gradients,
                            (double)ds.max_staleness, (double)ds.updates, stats->wall_s};
  double *all = s->rank == 0 ? malloc((size_t)s->world_size * sizeof mine) : NULL;
  if (s->rank == 0 && !all) return hs__fail(HS_ERR_NOMEM, "rank statistics");
  st = hs__comm_gather(s->comm, 0, mine, sizeof mine, all, "the ranks' statistics");
  if (st == HS_OK && s->rank == 0) {
    for (int r = 0; r < s->world_size; r++) {
      const double *v = all + (size_t)r * RS_FIELDS;
      hs_epoch_stats *o = &s->rank_stats[r];
      hs_epoch_stats_init(o);
      o->epoch = stats->epoch;
      o->rank = r;
      o->world_size = s->world_size;
      o->server = v[0] != 0;
      o->dist_steps = (int64_t)v[1];
      o->dist_compute_s = v[2];
      o->dist_comm_s = v[3];
      o->dist_bytes_sent = (uint64_t)v[4];
      o->dist_bytes_recv = (uint64_t)v[5];
      o->dist_compressed_steps = (int64_t)v[6];
      o->dist_late_gradients = (int64_t)v[7];
      o->dist_max_staleness = (int64_t)v[8];
      o->dist_updates = (int64_t)v[9];
      o->wall_s = v[10];
    }
    s->rank_stats_valid = true;
  }
  free(all);
  return st;
}

hs_status hs_session_rank_stats(const hs_session *s, int rank, hs_epoch_stats *out) {
  if (!s || !out) return hs__fail(HS_ERR_INVALID_ARG, "hs_session_rank_stats: NULL argument");
  hs_status st = hs__sized_check(out->struct_size, sizeof *out, "hs_epoch_stats");
  if (st != HS_OK) return st;
  if (rank < 0 || rank >= s->world_size)
    return hs__fail(HS_ERR_RANGE, "rank %d of a world of %d", rank, s->world_size);
  if (!s->comm || s->rank != 0 || !s->rank_stats_valid)
    return hs__fail(HS_ERR_STATE, "rank statistics are kept on rank 0 of a distributed session "
                    "after an epoch");
  return hs__sized_out(out, &s->rank_stats[rank], sizeof *out, "hs_epoch_stats");
}

/* ---- rank 0 computes, every rank learns ------------------------------------------- */

typedef struct root_result {
  int32_t status;
  int32_t pad;
  double value;
  char detail[512];
} root_result;

hs_status hs__session_dist_on_root(hs_session *s, hs_status (*fn)(hs_session *, int, double *),
                                   int arg, double *out) {
  root_result r;
  memset(&r, 0, sizeof r);
  if (s->rank == 0) {
    s->dist_local = true;
    r.status = (int32_t)fn(s, arg, &r.value);
    s->dist_local = false;
    if (r.status != HS_OK) snprintf(r.detail, sizeof r.detail, "%s", hs_last_error());
  }
  /* The others wait while rank 0 works alone. */
  hs__comm_set_timeout(s->comm, s->dcfg.start_timeout_s);
  hs_status st = hs__comm_bcast(s->comm, 0, &r, sizeof r, "rank 0's evaluation");
  hs__comm_set_timeout(s->comm, s->dcfg.timeout_s);
  if (st != HS_OK) return st;
  if (r.status != HS_OK) {
    if (s->rank == 0) return hs__fail((hs_status)r.status, "%s", r.detail);
    return hs__fail((hs_status)r.status, "on rank 0: %s", r.detail);
  }
  *out = r.value;
  return HS_OK;
}
