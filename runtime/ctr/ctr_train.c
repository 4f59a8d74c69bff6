/* The CTR pipeline: READ (parse a batch of lines) -> LOOKUP (hash and
 * look up its ids in the embedding store, host threads) -> TRAIN (copy the
 * rows deferred by the previous batch's update, upload, the device step,
 * the rows' gradients read back and applied to the store) on the stage
 * engine; evaluation and prediction. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "ctr/ctr_session_int.h"
#include "hs_launch.h"

/* More batches than any file holds: the read stage ends the run. */
#define UNBOUNDED ((int64_t)1 << 60)
/* Progress (and the device's loss, which waits) every this many batches. */
#define PROGRESS_EVERY 64

/* cfg.standardize_dense: the statistics of the first batch standardized
 * (`mu`, `inv`, *ready false until then), kept for every later one. Training
 * passes the session's (kept in checkpoints); evaluation and prediction,
 * which change nothing, the session's once known, before that their own. */
static void standardize(const hs_ctr_session *s, hs_ctr_rows *r, bool *ready, float *mu,
                        float *inv) {
  if (!s->cfg.standardize_dense || !r->n) return;
  if (!*ready) {
    hs__ctr_dense_stats(r, mu, inv);
    *ready = true;
  }
  hs__ctr_dense_standardize(r, mu, inv);
}

static hs_status read_begin(void *ctx, hs_pipe_slot *slot, cl_event *ev, int *n_ev) {
  (void)ev;
  *n_ev = 0;
  hs_ctr_session *s = ctx;
  ctr_slot *d = slot->user;
  d->rows.n = 0;
  d->step_n = 0;
  if (s->halt) return HS_OK;
  /* (Distributed: a stop would have to be agreed by every rank; the run
   * goes on to the epoch's end.) */
  if (!s->comm && s->stop && *s->stop) {
    s->halt = 1;
    return HS_OK;
  }
  /* (Distributed: the step's batches read; the statistics, where asked,
   * taken from the data's first.) */
  hs_status st = s->comm ? hs__ctr_dist_read(s, d)
                         : hs__ctr_reader_next(s->reader, s->cfg.batch_size, &d->rows);
  if (st != HS_OK) return st;
  standardize(s, &d->rows, &s->std_ready, s->std_mu, s->std_inv);
  if (d->rows.n < s->cfg.batch_size) s->halt = 1; /* the end of the data */
  return HS_OK;
}

static hs_status lookup_begin(void *ctx, hs_pipe_slot *slot, cl_event *ev, int *n_ev) {
  (void)ev;
  *n_ev = 0;
  hs_ctr_session *s = ctx;
  ctr_slot *d = slot->user;
  int32_t n = d->rows.n;
  if (!n) return HS_OK;
  for (int32_t i = 0; i < n; i++) d->labels[i] = (float)d->rows.labels[i];
  if (s->comm) return HS_OK; /* looked up at the owners in the step */
  hs_embed_query q = {.n = n * s->mcfg.n_fields, .ids = d->rows.ids, .n_fields = s->mcfg.n_fields,
                      .no_occ = !hs__ctr_trainer_needs_occ(s->trainer)};
  double t0 = hs__now();
  hs_status st = hs__embed_lookup(s->store, &q, s->next_tick + (uint32_t)slot->batch, true, &d->eb);
  d->t_lookup = hs__now() - t0;
  if (st != HS_OK) return st;
  /* Checked here, on the lookup's thread: the train stage, which waits
   * for nothing else, uploads it unchecked. */
  hs_ctr_batch b = hs__ctr_slot_batch(d, true);
  return hs__ctr_batch_validate(&s->lay, &s->mcfg, &b);
}

static hs_status train_begin(void *ctx, hs_pipe_slot *slot, cl_event *ev, int *n_ev) {
  *n_ev = 0;
  hs_ctr_session *s = ctx;
  ctr_slot *d = slot->user;
  if (s->comm) return d->step_n ? hs__ctr_dist_step(s, d, s->next_tick + (uint32_t)slot->batch) : HS_OK;
  if (!d->rows.n) return HS_OK;
  /* Every earlier batch's update is applied (train_finish runs in batch
   * order, before this): rows the lookup had to defer are current now. */
  hs__embed_refresh(s->store, &d->eb);
  hs_ctr_batch b = hs__ctr_slot_batch(d, true);
  hs_status st = hs__ctr_trainer_upload(s->trainer, &b, true);
  if (st == HS_OK) st = hs__ctr_trainer_step(s->trainer, d->row_grads, &ev[0]);
  if (st == HS_OK) *n_ev = 1;
  return st;
}

static hs_status train_finish(void *ctx, hs_pipe_slot *slot) {
  hs_ctr_session *s = ctx;
  ctr_slot *d = slot->user;
  if (s->comm ? !d->step_n : !d->rows.n) return HS_OK;
  if (!s->comm) { /* (distributed: applied by the step) */
    double t0 = hs__now();
    hs__embed_apply(s->store, &d->eb, d->row_grads);
    s->acc_update_s += hs__now() - t0;
  }
  s->acc_lookup_s += d->t_lookup;
  s->acc_examples += d->rows.n;
  s->acc_batches++;
  s->acc_unique += (uint64_t)d->eb.n_unique;
  s->acc_deferred += (uint64_t)d->eb.n_deferred;
  size_t F = (size_t)s->mcfg.n_fields, R = (size_t)s->lay.row, n = (size_t)d->rows.n;
  size_t U = (size_t)d->eb.n_unique;
  s->acc_up += (uint64_t)(n * (size_t)s->mcfg.n_dense * 4 + U * R * 4 + n * F * 8 + (U + 1) * 4 + n * 4);
  s->acc_down += (uint64_t)(U * R * 4);
  if (s->progress && s->acc_batches - s->last_progress >= PROGRESS_EVERY) {
    s->last_progress = s->acc_batches;
    hs_status st = hs__ctr_trainer_drain_loss(s->trainer, &s->acc_loss, &s->acc_steps);
    if (st != HS_OK) return st;
    s->progress(s->progress_user, s->done + s->acc_examples,
                s->acc_steps ? s->acc_loss / (double)s->acc_steps : NAN);
  }
  return HS_OK;
}

static const hs_pipe_stage stages[HS_CTR_STAGE_COUNT_] = {
    {"read", read_begin, NULL},
    {"lookup", lookup_begin, NULL},
    {"train", train_begin, train_finish},
};

/* Open the files and skip the examples already trained. */
static hs_status open_reader(hs_ctr_session *s, const char *const *files, int n, bool labels,
                             int64_t skip) {
  hs__ctr_reader_close(s->reader);
  s->reader = NULL;
  hs_status st = hs__ctr_reader_open(files, n, labels, &s->reader);
  ctr_slot *d = &s->slots[0];
  while (st == HS_OK && skip > 0) {
    int32_t want = skip < s->cfg.batch_size ? (int32_t)skip : s->cfg.batch_size;
    if ((st = hs__ctr_reader_next(s->reader, want, &d->rows)) != HS_OK) break;
    if (d->rows.n < want) {
      st = hs__fail(HS_ERR_INVALID_ARG, "resuming after example %lld, but the files hold %lld",
                    (long long)(skip + hs__ctr_reader_count(s->reader) - d->rows.n),
                    (long long)hs__ctr_reader_count(s->reader));
      break;
    }
    skip -= d->rows.n;
  }
  return st;
}

static hs_status store_stats(hs_ctr_session *s, hs_ctr_epoch_stats *st) {
  hs_embed_stats es;
  if (s->comm) {
    hs_status e = hs__ctr_dist_store_stats(s, &es);
    if (e != HS_OK) return e;
  } else {
    hs__embed_stats(s->store, &es);
  }
  st->embed_rows = es.rows;
  st->embed_bytes = es.bytes;
  st->embed_row_bytes = es.row_bytes;
  st->embed_created = es.created;
  st->embed_evicted = es.evicted;
  st->embed_expired = es.expired;
  st->embed_pending = es.pending;
  return HS_OK;
}

void hs_ctr_epoch_stats_init_sized(hs_ctr_epoch_stats *stats, size_t struct_size) {
  hs_ctr_epoch_stats z;
  memset(&z, 0, sizeof z);
  z.struct_size = sizeof z;
  hs__sized_init(stats, struct_size, &z, sizeof z);
}

void hs_ctr_eval_init_sized(hs_ctr_eval *eval, size_t struct_size) {
  hs_ctr_eval z;
  memset(&z, 0, sizeof z);
  z.struct_size = sizeof z;
  hs__sized_init(eval, struct_size, &z, sizeof z);
}

static hs_status train_epoch(hs_ctr_session *s, const char *const *files, int n_files,
                             hs_ctr_epoch_stats *stats);

hs_status hs_ctr_session_train_epoch(hs_ctr_session *s, const char *const *files, int n_files,
                                     hs_ctr_epoch_stats *user) {
  if (!s || !files || n_files < 1)
    return hs__fail(HS_ERR_INVALID_ARG, "hs_ctr_session_train_epoch: no session or no file");
  hs_status st;
  if (user && (st = hs__sized_check(user->struct_size, sizeof *user, "hs_ctr_epoch_stats")))
    return st;
  hs_ctr_epoch_stats stats;
  hs_ctr_epoch_stats_init(&stats);
  st = train_epoch(s, files, n_files, &stats);
  if (user && st == HS_OK) hs__sized_out(user, &stats, sizeof stats, "hs_ctr_epoch_stats");
  return st;
}

static hs_status train_epoch(hs_ctr_session *s, const char *const *files, int n_files,
                             hs_ctr_epoch_stats *stats) {
  hs_status st = open_reader(s, files, n_files, true, s->done);
  if (st != HS_OK) return st;
  s->halt = 0;
  s->acc_examples = s->acc_batches = s->acc_steps = s->last_progress = 0;
  s->acc_lookup_s = s->acc_update_s = s->acc_loss = 0;
  s->acc_unique = s->acc_deferred = s->acc_up = s->acc_down = 0;
  hs_pipe p = {.stages = stages, .n_stages = HS_CTR_STAGE_COUNT_, .ctx = s, .slots = s->pslots,
               .depth = s->depth, .mode = s->mode, .stop = &s->halt};
  p.stage_nice[HS_CTR_STAGE_READ] = p.stage_nice[HS_CTR_STAGE_LOOKUP] = s->host_nice;
  if (!s->comm) {
    /* A store that evicts looks batch b up only once batch
     * b - HS_EMBED_LAG was applied (hs_embed.h): deeper pipelines wait
     * there, depth 3 (the default) never. (Distributed: each step's
     * update comes before the next lookup.) */
    const hs_embed_cfg *ec = hs__embed_cfg(s->store);
    if (ec->expire_after || ec->memory_budget) {
      p.gate_stage = HS_CTR_STAGE_LOOKUP;
      p.gate_lag = HS_EMBED_LAG;
    }
  }
  hs_pipe_stats ps;
  st = hs__pipe_run(&p, 0, UNBOUNDED, &ps);
  hs_status st2 = hs__ctr_trainer_drain_loss(s->trainer, &s->acc_loss, &s->acc_steps);
  if (st == HS_OK) st = st2;
  s->next_tick += (uint32_t)s->acc_batches;
  bool interrupted = s->stop && *s->stop;
  /* What the files held, the examples skipped on resuming included (the
   * same on every rank: each reads every file). */
  int64_t held = hs__ctr_reader_count(s->reader);
  hs__ctr_reader_close(s->reader);
  s->reader = NULL;
  stats->epoch = s->epoch;
  stats->examples = s->acc_examples;
  stats->batches = s->acc_batches;
  stats->loss = s->acc_steps ? s->acc_loss / (double)s->acc_steps : NAN;
  stats->wall_s = ps.wall_s;
  stats->examples_per_s = ps.wall_s > 0 ? (double)s->acc_examples / ps.wall_s : 0;
  for (int i = 0; i < HS_CTR_STAGE_COUNT_; i++) {
    stats->stage_busy_s[i] = ps.busy_s[i];
    stats->stage_wait_s[i] = ps.wait_s[i];
  }
  stats->lookup_s = s->acc_lookup_s;
  stats->update_s = s->acc_update_s;
  stats->unique_rows = s->acc_unique;
  stats->deferred_rows = s->acc_deferred;
  stats->bytes_uploaded = s->acc_up;
  stats->bytes_to_host = s->acc_down;
  /* (Distributed: collective, so not after a failure, which the other
   * ranks may not share.) */
  if (st == HS_OK) st = store_stats(s, stats);
  struct rusage ru;
  if (getrusage(RUSAGE_SELF, &ru) == 0) stats->peak_rss_bytes = (uint64_t)ru.ru_maxrss * 1024u;
  stats->pipeline = s->mode == HS_PIPE_THREADS ? HS_PIPELINE_THREADS
                    : s->mode == HS_PIPE_OFF   ? HS_PIPELINE_OFF
                                               : HS_PIPELINE_ASYNC;
  stats->depth = s->depth;
  if (st != HS_OK) return st;
  /* A pass that found nothing to train on would end an epoch of nothing
   * (its loss, and an evaluation's AUC, undefined) as if it had trained. */
  if (!interrupted && held == 0)
    return hs__fail(HS_ERR_FORMAT, "the training files hold no examples (%s%s)", files[0],
                    n_files > 1 ? " and the others" : "");
  s->done += s->acc_examples;
  if (interrupted) {
    stats->interrupted = true;
  } else {
    s->epoch++;
    s->done = 0;
  }
  return HS_OK;
}

/* ---- evaluation and prediction ------------------------------------------------------------ */

/* Probabilities of one read batch in slot 0 (read-only lookups). */
static hs_status predict_batch(hs_ctr_session *s, ctr_slot *d, float *prob) {
  hs_embed_query q = {.n = d->rows.n * s->mcfg.n_fields, .ids = d->rows.ids,
                      .n_fields = s->mcfg.n_fields, .no_occ = true};
  hs_status st = s->comm ? hs__embed_shard_lookup(s->shard, &q, 0, false, &d->eb)
                         : hs__embed_lookup(s->store, &q, 0, false, &d->eb);
  if (st != HS_OK) return st;
  hs_ctr_batch b = hs__ctr_slot_batch(d, false);
  if ((st = hs__ctr_trainer_upload(s->trainer, &b, false)) != HS_OK) return st;
  return hs__ctr_trainer_predict(s->trainer, prob);
}

typedef hs_status (*batch_fn)(void *user, const float *prob, const uint8_t *labels, int32_t n);

static hs_status each_batch(hs_ctr_session *s, const char *const *files, int n_files,
                            bool labels, batch_fn fn, void *user) {
  if (!s || !files || n_files < 1) return hs__fail(HS_ERR_INVALID_ARG, "CTR session: no file");
  hs_ctr_reader *r;
  hs_status st = hs__ctr_reader_open(files, n_files, labels, &r);
  if (st != HS_OK) return st;
  ctr_slot *d = &s->slots[0];
  /* A stop flag raised (Ctrl-C) while it runs ends it between batches; one
   * already up when it begins (a program that evaluates the model of an
   * epoch it stopped) does not, as before evaluation could be stopped.
   * (Distributed: never, as in training.) */
  bool up_before = s->stop && *s->stop;
  float own_mu[HS_CTR_DENSE], own_inv[HS_CTR_DENSE];
  bool own_ready = false, *ready = s->std_ready ? &s->std_ready : &own_ready;
  float *mu = s->std_ready ? s->std_mu : own_mu, *inv = s->std_ready ? s->std_inv : own_inv;
  for (;;) {
    if (!s->comm && s->stop && *s->stop && !up_before) {
      st = hs__fail(HS_ERR_INTERRUPTED, "stopped after %lld examples",
                    (long long)hs__ctr_reader_count(r));
      break;
    }
    if ((st = hs__ctr_reader_next(r, s->cfg.batch_size, &d->rows)) != HS_OK || !d->rows.n) break;
    standardize(s, &d->rows, ready, mu, inv);
    if ((st = predict_batch(s, d, d->labels)) != HS_OK) break;
    if ((st = fn(user, d->labels, d->rows.labels, d->rows.n)) != HS_OK) break;
  }
  hs__ctr_reader_close(r);
  return st;
}

typedef struct collect {
  float *prob;
  uint8_t *labels;
  int64_t n, cap;
} collect;

static hs_status collect_batch(void *user, const float *prob, const uint8_t *labels, int32_t n) {
  collect *c = user;
  if (c->n + n > c->cap) {
    int64_t cap = c->cap ? 2 * c->cap : 1 << 16;
    while (cap < c->n + n) cap *= 2;
    float *p = realloc(c->prob, (size_t)cap * sizeof *p);
    if (p) c->prob = p;
    uint8_t *l = realloc(c->labels, (size_t)cap);
    if (l) c->labels = l;
    if (!p || !l) return hs__fail(HS_ERR_NOMEM, "evaluation: %lld examples", (long long)cap);
    c->cap = cap;
  }
  memcpy(c->prob + c->n, prob, (size_t)n * sizeof *prob);
  memcpy(c->labels + c->n, labels, (size_t)n);
  c->n += n;
  return HS_OK;
}

static hs_status evaluate(hs_ctr_session *s, const char *const *files, int n_files,
                         hs_ctr_eval *out);

hs_status hs_ctr_session_evaluate(hs_ctr_session *s, const char *const *files, int n_files,
                                  hs_ctr_eval *user) {
  if (!user) return hs__fail(HS_ERR_INVALID_ARG, "hs_ctr_session_evaluate: NULL result");
  hs_status st = hs__sized_check(user->struct_size, sizeof *user, "hs_ctr_eval");
  if (st != HS_OK) return st;
  hs_ctr_eval e;
  hs_ctr_eval_init(&e);
  st = evaluate(s, files, n_files, &e);
  if (st == HS_OK) hs__sized_out(user, &e, sizeof e, "hs_ctr_eval");
  return st;
}

static hs_status evaluate(hs_ctr_session *s, const char *const *files, int n_files,
                         hs_ctr_eval *out) {
  double t0 = hs__now();
  collect c = {0};
  hs_status st = each_batch(s, files, n_files, true, collect_batch, &c);
  if (st == HS_OK) {
    out->examples = c.n;
    out->auc = hs_ctr_auc(c.prob, c.labels, c.n);
    out->logloss = hs_ctr_logloss(c.prob, c.labels, c.n);
    double pos = 0, mean = 0;
    for (int64_t i = 0; i < c.n; i++) {
      pos += c.labels[i];
      mean += c.prob[i];
    }
    out->positive_rate = c.n ? pos / (double)c.n : NAN;
    out->mean_prob = c.n ? mean / (double)c.n : NAN;
  }
  out->seconds = hs__now() - t0;
  free(c.prob);
  free(c.labels);
  return st;
}

hs_status hs_ctr_session_predict(hs_ctr_session *s, const char *const *files, int n_files,
                                 bool labelled, hs_ctr_predict_fn fn, void *user) {
  if (!fn) return hs__fail(HS_ERR_INVALID_ARG, "hs_ctr_session_predict: NULL callback");
  return each_batch(s, files, n_files, labelled, fn, user);
}
