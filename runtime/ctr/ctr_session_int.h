/* Internal state of a CTR session (see hetsage/ctr.h), shared by
 * ctr_session.c (creation, description, checkpoints) and ctr_train.c (the
 * pipeline, evaluation, prediction). */
#ifndef HS_CTR_SESSION_INT_H
#define HS_CTR_SESSION_INT_H

#include "core/hs_runtime.h"
#include "ctr/ctr_trainer.h"
#include "ctr/hs_ctr.h"
#include "dist/hs_allreduce.h"
#include "embed/hs_embed.h"
#include "embed/hs_embed_shard.h"
#include "hs_programs.h"
#include "pipeline/hs_pipe.h"

/* One batch slot, allocated once. */
typedef struct ctr_slot {
  hs_ctr_rows rows;    /* as read */
  float *labels;       /* as floats for the trainer */
  hs_embed_batch eb;   /* its rows: uniques, occurrence lists */
  float *row_grads;    /* the uniques' gradients, read back by the step */
  double t_lookup;
  int32_t step_n;      /* distributed: the step's examples over every rank */
} ctr_slot;

/* The trainer's view of a slot's batch as looked up (labels NULL when not
 * `labels`: prediction). */
static inline hs_ctr_batch hs__ctr_slot_batch(const ctr_slot *d, bool labels) {
  return (hs_ctr_batch){.n = d->rows.n, .n_unique = d->eb.n_unique, .dense = d->rows.dense,
                        .rows = d->eb.rows, .idx = d->eb.unique_of,
                        .occ_ptr = d->eb.occ_lists ? d->eb.occ_ptr : NULL,
                        .occ = d->eb.occ_lists ? d->eb.occ : NULL,
                        .labels = labels ? d->labels : NULL,
                        /* a table per field (hs_embed_query.n_fields) */
                        .one_field = true};
}

struct hs_ctr_session {
  hs_runtime *rt;
  hs_ctr_config cfg;
  hs_ctr_model_cfg mcfg;
  hs_ctr_layout lay;
  hs_placement *plan;
  hs__prog_files tprogs;
  hs_dev tdev;
  hs_ctx tctx;
  cl_command_queue tq;
  hs_ctr_trainer *trainer;
  hs_embed *store;

  hs_pipe_mode mode;
  int depth;
  int host_nice; /* the read and lookup stages' (threads driver), 0: none */
  hs_pipe_slot *pslots;
  ctr_slot *slots;

  /* cfg.standardize_dense: each integer's mean and 1 / sd, from the first
   * batch read (std_ready) or a checkpoint. */
  bool std_ready;
  float std_mu[HS_CTR_DENSE], std_inv[HS_CTR_DENSE];

  /* Training position: the epoch under way, examples of it done, and the
   * next batch's store tick. */
  int64_t epoch;
  int64_t done;
  uint32_t next_tick;

  /* The epoch under way (ctr_train.c). */
  hs_ctr_reader *reader;
  volatile sig_atomic_t halt; /* no more batches: end of data or stop */
  int64_t acc_examples, acc_batches;
  double acc_lookup_s, acc_update_s;
  uint64_t acc_unique, acc_deferred, acc_up, acc_down;
  double acc_loss;
  int64_t acc_steps;
  int64_t last_progress;

  /* Distributed (ctr_dist.c; comm NULL: a single process). The store is
   * then this rank's shard of the tables (owned by `shard`). */
  hs_comm *comm;
  int rank, world_size;
  hs_dist_config dist;
  hs_embed_shard *shard;
  hs_ar *ar;
  float *dense_grads;
  hs_ctr_rows skip; /* the other ranks' batches, read past */

  hs_ctr_progress_fn progress;
  void *progress_user;
  volatile sig_atomic_t *stop;
};

/* ctr_dist.c: distributed training (hs_ctr_config.world). */
hs_status hs__ctr_dist_open(hs_ctr_session *s, const hs_ctr_config *cfg, const hs_embed_cfg *ec);
void hs__ctr_dist_close(hs_ctr_session *s);
/* Read the step's batch of every rank, keeping this rank's in d->rows
 * and the step's example count in d->step_n; s->halt at the end. */
hs_status hs__ctr_dist_read(hs_ctr_session *s, ctr_slot *d);
/* The whole training step of slot d (collective). */
hs_status hs__ctr_dist_step(hs_ctr_session *s, ctr_slot *d, uint32_t tick);
/* The store's figures summed over the ranks (collective). */
hs_status hs__ctr_dist_store_stats(hs_ctr_session *s, hs_embed_stats *out);

#endif
