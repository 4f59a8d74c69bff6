/* Distributed CTR training (hs_ctr_config.world): the tables sharded over
 * the ranks (embed/hs_embed_shard.h), the dense gradients all-reduced
 * (dist/hs_allreduce.h), one batch per rank per step.
 *
 * A step is synchronous: the lookup at the owners, the device's forward
 * and backward, the all-reduce, the dense update, the rows' gradients to
 * their owners. Every message of it is sent from the train stage, so the
 * communicator is used by one thread at a time as it requires; the read
 * stage still runs ahead. */
#include <stdlib.h>
#include <string.h>

#include "ctr/ctr_session_int.h"
#include "dist/hs_dist.h"
#include "dist/hs_world.h"

/* A fingerprint of everything that shapes the result, so that ranks
 * started with different options refuse to train together (not the GEMM's
 * threads: the trainer's products are cut by shape alone, whatever their
 * count). */
static uint64_t fnv(uint64_t h, const void *p, size_t n) {
  const unsigned char *b = p;
  for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 0x100000001b3ull;
  return h;
}

static uint64_t fingerprint(const hs_ctr_session *s) {
  const hs_ctr_config *c = &s->cfg;
  uint64_t h = 0xcbf29ce484222325ull;
  int32_t i32[] = {(int32_t)c->model, c->dim, c->n_hidden, c->n_bottom, c->batch_size,
                   (int32_t)c->sparse_optimizer, (int32_t)c->admit_after,
                   (int32_t)c->expire_after, s->mcfg.n_fields, s->mcfg.n_dense,
                   c->standardize_dense};
  float f32[] = {c->lr, c->sparse_lr, c->init_range, c->sparse_initial_accumulator};
  uint64_t u64[] = {c->seed, c->embed_budget, (uint64_t)s->lay.n_params};
  h = fnv(h, i32, sizeof i32);
  h = fnv(h, c->hidden, sizeof c->hidden);
  h = fnv(h, c->bottom, sizeof c->bottom);
  h = fnv(h, f32, sizeof f32);
  return fnv(h, u64, sizeof u64);
}

hs_status hs__ctr_dist_open(hs_ctr_session *s, const hs_ctr_config *cfg, const hs_embed_cfg *ec) {
  hs_status st = hs__dist_config_take(cfg->dist, &s->dist);
  if (st != HS_OK) return st;
  if (s->dist.sync != HS_SYNC_ALLREDUCE)
    return hs__fail(HS_ERR_UNSUPPORTED, "distributed CTR training combines the dense parameters "
                    "by all-reduce only (sync allreduce); %s is not built for CTR models",
                    hs_sync_mode_name(s->dist.sync));
  if (s->dist.compress != HS_COMPRESS_NONE)
    return hs__fail(HS_ERR_UNSUPPORTED, "distributed CTR training does not compress its "
                    "gradients (compress %s asked)", hs_compress_name(s->dist.compress));
  s->comm = cfg->world->comm;
  s->rank = hs__comm_rank(s->comm);
  s->world_size = hs__comm_size(s->comm);
  /* Start-up: ranks reach this point after building their programs, each
   * at its own pace. */
  double was = hs__comm_set_timeout(s->comm, s->dist.start_timeout_s);
  uint64_t mine = fingerprint(s);
  uint64_t *all = calloc((size_t)s->world_size, sizeof *all);
  if (!all) return hs__fail(HS_ERR_NOMEM, "CTR session: %d ranks", s->world_size);
  st = hs__comm_allgather(s->comm, &mine, sizeof mine, all, "the CTR options of every rank");
  for (int r = 1; st == HS_OK && r < s->world_size; r++)
    if (all[r] != all[0])
      st = hs__fail(HS_ERR_INVALID_ARG, "distributed CTR training: rank %d was started with "
                    "options other than rank 0's (model, widths, batch size, learning rates, "
                    "sparse optimizer, store settings, standardization or seed differ)", r);
  free(all);
  hs__comm_set_timeout(s->comm, was);
  if (st != HS_OK) return st;
  if ((st = hs__embed_shard_create(s->comm, ec, &s->shard)) != HS_OK) return st;
  s->store = hs__embed_shard_store(s->shard);
  hs_dist_tensor whole = {.off = 0, .n = s->lay.n_params};
  hs_ar_cfg ac = {.tensors = &whole, .n_tensors = 1, .n_total = s->lay.n_params,
                  .bucket_bytes = s->dist.bucket_bytes, .min_compress = (size_t)-1, .tag_base = 0};
  if ((st = hs__ar_create(s->comm, &ac, &s->ar)) != HS_OK) return st;
  s->dense_grads = malloc((s->lay.n_params ? s->lay.n_params : 1) * sizeof *s->dense_grads);
  if (!s->dense_grads) return hs__fail(HS_ERR_NOMEM, "CTR session: dense gradients");
  return hs__ctr_rows_alloc(&s->skip, cfg->batch_size);
}

void hs__ctr_dist_close(hs_ctr_session *s) {
  if (s->shard) s->store = NULL; /* the shard's, destroyed with it */
  hs__embed_shard_destroy(s->shard);
  s->shard = NULL;
  hs__ar_destroy(s->ar);
  s->ar = NULL;
  free(s->dense_grads);
  s->dense_grads = NULL;
  hs__ctr_rows_free(&s->skip);
}

hs_status hs__ctr_dist_read(hs_ctr_session *s, ctr_slot *d) {
  /* Every rank reads every batch (the files are the same on each) and
   * keeps its own: each knows the step's size and where the data ends
   * without a message. With standardize_dense every rank takes its
   * statistics from the same batch, the data's first (rank 0's of the
   * first step: what one process takes), so the ranks agree without a
   * message too, and one rank trains as one process. */
  int32_t B = s->cfg.batch_size;
  int64_t total = 0;
  d->rows.n = 0;
  for (int p = 0; p < s->world_size; p++) {
    hs_ctr_rows *into = p == s->rank ? &d->rows : &s->skip;
    hs_status st = hs__ctr_reader_next(s->reader, B, into);
    if (st != HS_OK) return st;
    if (p == 0 && s->cfg.standardize_dense && !s->std_ready && into->n) {
      hs__ctr_dense_stats(into, s->std_mu, s->std_inv);
      s->std_ready = true; /* the read stage standardizes this rank's rows */
    }
    total += into->n;
    if (into->n < B) s->halt = 1;
  }
  d->step_n = (int32_t)(total > INT32_MAX ? INT32_MAX : total);
  return HS_OK;
}

hs_status hs__ctr_dist_step(hs_ctr_session *s, ctr_slot *d, uint32_t tick) {
  int32_t n = d->rows.n, F = s->mcfg.n_fields;
  hs_comm_counters c0;
  hs__comm_counters(s->comm, &c0);
  hs__comm_set_timeout(s->comm, s->dist.timeout_s);
  hs_embed_query q = {.n = n * F, .ids = d->rows.ids, .n_fields = F};
  double t0 = hs__now();
  hs_status st = hs__embed_shard_lookup(s->shard, &q, tick, true, &d->eb);
  d->t_lookup = hs__now() - t0;
  if (st != HS_OK) return st;
  if (n) {
    hs_ctr_batch b = hs__ctr_slot_batch(d, true);
    if ((st = hs__ctr_trainer_upload(s->trainer, &b, false)) != HS_OK ||
        (st = hs__ctr_trainer_backward(s->trainer, s->dense_grads, d->row_grads)) != HS_OK)
      return st;
  } else {
    memset(s->dense_grads, 0, s->lay.n_params * sizeof *s->dense_grads);
  }
  /* Dense: the average over the step's examples, every rank the same bits
   * (one rank: its own gradients unchanged). */
  if ((st = hs__ar_begin(s->ar, s->dense_grads, n, false, 0)) != HS_OK ||
      (st = hs__ar_end(s->ar, NULL, NULL)) != HS_OK ||
      (st = hs__ctr_trainer_apply(s->trainer, s->dense_grads)) != HS_OK)
    return st;
  /* Rows: this rank's gradients are of its own batch's mean loss; its
   * share of the step's examples makes their sum over the ranks that of
   * the step's mean loss (one rank: weight 1, unchanged). */
  float w = d->step_n ? (float)((double)n / (double)d->step_n) : 0.0f;
  t0 = hs__now();
  st = hs__embed_shard_apply(s->shard, &d->eb, d->row_grads, w);
  s->acc_update_s += hs__now() - t0;
  return st;
}

hs_status hs__ctr_dist_store_stats(hs_ctr_session *s, hs_embed_stats *out) {
  hs__embed_stats(s->store, out);
  int64_t v[7] = {(int64_t)out->rows,    (int64_t)out->bytes,   (int64_t)out->row_bytes,
                  (int64_t)out->created, (int64_t)out->evicted, (int64_t)out->expired,
                  (int64_t)out->pending};
  hs_status st = hs__comm_sum_i64(s->comm, v, 7, "the embedding stores' figures");
  if (st != HS_OK) return st;
  out->rows = (uint64_t)v[0];
  out->bytes = (uint64_t)v[1];
  out->row_bytes = (uint64_t)v[2];
  out->created = (uint64_t)v[3];
  out->evicted = (uint64_t)v[4];
  out->expired = (uint64_t)v[5];
  out->pending = (uint64_t)v[6];
  return HS_OK;
}
