/* Internal state of a training session (see hetsage/session.h). */
#ifndef HS_SESSION_INT_H
#define HS_SESSION_INT_H

#include <stdatomic.h>

#include "cache/hs_cache.h"
#include "cache/hs_host_tier.h"
#include "cache/hs_sparse_tier.h"
#include "core/hs_runtime.h"
#include "hs_programs.h"
#include "data/hs_graph.h"
#include "dist/hs_dist.h"
#include "embed/hs_embed.h"
#include "hetsage/session.h"
#include "nn/checkpoint.h"
#include "nn/model.h"
#include "nn/trainer.h"
#include "pipeline/hs_pipe.h"
#include "sample/hs_gather.h"
#include "sample/hs_sampler.h"

/* What one batch slot of the pipeline holds, allocated once. */
typedef struct hs_slot_data {
  hs_batch batch;        /* sampler output (ids, blocks) */
  float *feat;           /* gathered rows, local-id order, float32 */
  void *raw;             /* float16 rows before conversion, or NULL */
  int32_t *labels;       /* labels of the seeds */
  /* Sparse features: the batch's rows as CSR (feat and raw unused). */
  hs_nn_sparse sx;
  int32_t *sx_ptr, *sx_col;
  float *sx_val;          /* NULL for binary features */
  int64_t sx_cap;         /* entries sx_col / sx_val hold */
  int64_t sx_rows;        /* rows sx_ptr holds */
  /* ... and the same entries by column, for the weight gradient. */
  int32_t *sx_tptr, *sx_tmid, *sx_trow, *sx_cursor;
  float *sx_tval;
  hs_nn_block nb[HS_SAMPLE_MAX_LAYERS];
  int64_t edges;
  /* With the trainer cache: the batch's classification and the slot's
   * device side; `feat` then stages only the miss rows (plan order). */
  hs_coo_plan plan;
  hs_coo_slot *cs;
  /* ... and with sparse features: sx_ptr/col/val stage the misses' rows
   * (plan order) while sx_bptr holds the whole batch's offsets, which the
   * trainer reads; the entries are assembled on the trainer. */
  int32_t *sx_bptr;
  /* Device-to-device transfer: the blocks (trainer order) copied from the
   * sampler's buffers on the sampler's queue, the event of the last copy
   * (the trainer waits for it), and the bytes copied. */
  cl_mem blk_rp[HS_SAMPLE_MAX_LAYERS], blk_col[HS_SAMPLE_MAX_LAYERS];
  cl_event blk_ev;
  uint64_t blk_bytes;
  hs_nn_dev_block db[HS_SAMPLE_MAX_LAYERS];
  /* Node embeddings (s->emb): the batch's input rows, features then the
   * vertex's row (n_vertices x in_dim), their gradient, the rows'
   * gradients (one per unique id), the ids as the store's keys, and the
   * lookup, live from the gather stage until its update is applied. */
  float *xe, *dx, *eg;
  uint64_t *eids;
  hs_embed_batch eb;
  bool eb_live;
} hs_slot_data;

struct hs_session {
  hs_runtime *rt;
  hs_dataset *ds;
  const hs_graph *g;
  hs_session_config cfg;
  hs_placement *plan;

  /* Devices: sub-devices of one device, or whole devices. */
  hs_dev subs[2];
  int n_subs;
  hs_dev sdev, tdev;
  hs__prog_files sprogs, tprogs; /* the profile's prebuilt programs per role */
  hs_ctx sctx, tctx;
  bool one_ctx;
  cl_command_queue sq, tq;
  /* The block path in use (HOST or DEVICE) and why, for describe. */
  hs_transfer transfer;
  char transfer_why[160];
  uint64_t topology_freed; /* host topology bytes released at creation */
  /* The features the host gathers from (the dataset's file mapping or its
   * copy on huge pages), the bytes on huge pages (0: none), and why. */
  const void *feat;
  uint64_t feat_huge;
  char feat_pages_why[160];
  /* Rows whose features were checked finite (one bit each), the first
   * time they were gathered; all of them once a full pass read them. */
  _Atomic uint64_t *feat_checked;
  bool feat_all_checked;

  hs_sample_cfg scfg;
  hs_sampler *sampler;
  hs_model model;
  hs_trainer *trainer;
  hs_gather_pool *pool;
  /* Node embeddings: the store (NULL: none), its row width, the model's
   * input width (features + row) and the next training lookup's tick. */
  hs_embed *emb;
  int32_t emb_dim;
  int32_t in_dim;
  uint32_t emb_tick;

  /* Caches (session_cache.c): the host tier when the features exceed the
   * memory budget (NULL: they are read from the mapping), and the trainer
   * tier when it has rows (NULL: none). */
  hs_host_tier *tier;
  /* Its counterpart for sparse features (feat_indices.npy and
   * feat_values.npy read through it; NULL: gathered from memory). */
  hs_sparse_tier *stier;
  /* Without it: the column ids in memory (hs__dataset_sparse_cols: int64
   * ones narrowed on this first use), NULL while stier reads them. */
  const int32_t *feat_col;
  uint64_t tier_keep_bytes; /* the host tier's block budget */
  hs_cache_fill coo_fill;   /* the trainer tier's fill policy */
  hs_coo *coo;
  hs_coo_dev *coo_dev;

  hs_pipe_mode mode;
  int depth;
  hs_pipe_slot *pslots;
  hs_slot_data *slots;

  /* Training position: the epoch under way and how many of its batches
   * are done (what a checkpoint records). */
  int64_t epoch;
  int64_t batch_pos;
  int32_t *order;     /* this epoch's shuffled training seeds */
  int64_t order_epoch; /* epoch `order` was drawn for, -1: none */
  int64_t n_batches;

  /* Per-epoch accumulators, touched only by the train stage's thread. */
  int64_t acc_batches;
  int64_t acc_edges;
  uint64_t acc_gather_bytes;
  uint64_t acc_upload_bytes;
  uint64_t acc_d2d_bytes;
  uint64_t acc_feat_nnz;  /* sparse features: entries gathered */
  uint64_t acc_rows;      /* feature rows the batches needed */
  double acc_upload_s;
  hs_train_stats acc_train;

  hs_batch_progress_fn progress;
  void *progress_user;
  volatile sig_atomic_t *stop;

  /* Distributed (session_dist.c). A single-process session is worker 0
   * of 1 whose slice is the whole order. */
  hs_comm *comm;       /* the world's, borrowed; NULL: one process */
  hs_dist_config dcfg; /* the configuration's distributed options */
  hs_dist *dist;
  int rank, world_size, workers, worker; /* worker: -1 on a server */
  bool server;
  int64_t slice_lo, slice_len; /* this worker's slice of each order */
  int64_t dist_stop_at;        /* first batch not to train, -1: none */
  int64_t dist_batch;          /* the batch the distributed step trains */
  bool dist_local;             /* rank 0 evaluating for everyone */
  volatile sig_atomic_t dist_stop; /* the pipeline's stop flag */
  float *dist_grads;           /* where gradients are read to (the step's) */
  /* Gradients read back layer by layer as the backward pass completes
   * them (the trainer's layer hook), so that their exchange overlaps the
   * rest of the pass: each layer's read event, each tensor's layer. */
  cl_event layer_ev[HS_NN_MAX_LAYERS];
  int tensor_layer[3 * HS_NN_MAX_LAYERS];
  hs_status hook_st;
  hs_epoch_stats *rank_stats;  /* rank 0: every rank's last epoch */
  bool rank_stats_valid;
};

/* Seeds batch b trains: of this worker's slice of the current order (the
 * whole order in one process); 0 when the slice is used up, which happens
 * on some workers in an epoch's last step. */
static inline int32_t hs__session_batch_count(const hs_session *s, int64_t b) {
  int64_t n = s->slice_len - b * s->cfg.batch_size;
  if (n > s->cfg.batch_size) n = s->cfg.batch_size;
  return n > 0 ? (int32_t)n : 0;
}

/* The seeds of batch b: at least one (an empty batch samples the slice's
 * first seed, so that every stage runs alike, and trains nothing). */
static inline int32_t hs__session_batch_seeds(const hs_session *s, int64_t b,
                                              const int32_t **seeds) {
  int32_t n = hs__session_batch_count(s, b);
  if (n == 0) {
    *seeds = s->order + (s->slice_len > 0 ? s->slice_lo : 0);
    return 1;
  }
  *seeds = s->order + s->slice_lo + b * s->cfg.batch_size;
  return n;
}

/* The key of batch b in the sampling and dropout streams: distinct for
 * every worker's batch of a step (b on one process). */
static inline uint32_t hs__session_batch_key(const hs_session *s, int64_t b) {
  return (uint32_t)(b * s->workers + (s->worker > 0 ? s->worker : 0));
}

/* The pipeline stages (session_stages.c). */
extern const hs_pipe_stage hs__session_stages[HS_STAGE_COUNT_];

/* Draw epoch `epoch`'s order of the training seeds (block order with the
 * host tier). */
hs_status hs__session_shuffle(hs_session *s, int64_t epoch);

/* Sample one batch of `seeds` into `slot` (no features). */
hs_status hs__session_sample(hs_session *s, const int32_t *seeds, int32_t n, uint32_t epoch_key,
                             uint32_t batch, hs_slot_data *slot);
/* Sparse feature rows ids[0..n) as CSR (hs__gather_sparse's layout), at
 * most `cap` entries: from memory, or through the sparse host tier when
 * the session has one. Uses the gather pool. */
hs_status hs__session_gather_sparse(hs_session *s, const int32_t *ids, int32_t n, int32_t *ptr,
                                    int32_t *col, float *val, int64_t cap);
/* Sparse feature rows ids[0..n) into the slot's CSR arrays (sx), values
 * as float32, and (n_dst >= 0: a training batch whose block 0 has n_dst
 * dst) their column lists. Uses the gather pool: gather stage only. */
hs_status hs__session_rows_sparse(hs_session *s, const int32_t *ids, int32_t n, int32_t n_dst,
                                  hs_slot_data *slot);
/* Allocate a slot's sparse arrays for `rows` rows (the most a batch or an
 * evaluation chunk may have); no-op for dense features. */
hs_status hs__session_sparse_alloc(hs_session *s, hs_slot_data *slot, int64_t rows);
void hs__session_sparse_free(hs_slot_data *slot);

/* Feature rows ids[0..n) as float32 into `out` (n x f), read from the host
 * tier or the mapping; float16 rows go through `raw` (n x row bytes, NULL
 * for float32 features). Uses the gather pool: gather stage only. */
hs_status hs__session_rows_f32(hs_session *s, const int32_t *ids, int32_t n, float *out,
                               void *raw);

/* Input rows of ids[0..n) as the model reads them (n x in_dim): the
 * features, then, with node embeddings, each vertex's row as it stands
 * (evaluation, prediction: not while an epoch runs). */
hs_status hs__session_rows_in(hs_session *s, const int32_t *ids, int32_t n, float *out);
/* Every vertex's input rows (N x in_dim), or the feature mapping itself
 * when it is that already; *owned says whether the caller frees it. */
hs_status hs__session_all_rows(hs_session *s, const float **out, bool *owned);
/* Check that rows ids[0..n) of `rows` (float32, n x f, as gathered) are
 * finite, for the rows not checked before: HS_ERR_FORMAT naming feat.npy,
 * the row and the feature otherwise. Any thread. */
hs_status hs__session_check_rows(hs_session *s, const int32_t *ids, int32_t n, const float *rows);
/* The same for the whole feature table (a full-graph pass reads it all). */
hs_status hs__session_check_all_rows(hs_session *s);

/* Set up the caches the configuration and the plan ask for (after the
 * trainer, the slots and n_batches exist); tear them down. */
hs_status hs__session_cache_open(hs_session *s, const hs_session_config *cfg);
void hs__session_cache_close(hs_session *s);
/* Close the cache epoch: counts into `stats`. */
void hs__session_cache_epoch_end(hs_session *s, hs_epoch_stats *stats);

/* Sample and gather one batch of `seeds` into slot 0 (evaluation). */
hs_status hs__session_sample_gather(hs_session *s, const int32_t *seeds, int32_t n,
                                    uint32_t epoch_key, uint32_t batch, hs_slot_data *slot);

/* The trainer's view of a sampled, gathered slot. */
void hs__session_nn_batch(hs_slot_data *slot, hs_nn_batch *out);

/* ---- distributed sessions (session_dist.c) -------------------------------- */

/* Before placement: join the world (roles, slices) and check that every
 * rank has the same options and dataset. Single process: sets the
 * one-worker defaults. */
hs_status hs__session_dist_join(hs_session *s, const hs_session_config *cfg);
/* After the model (and on workers the trainer) exist: the distributed
 * step, then wait for every rank to be ready (program builds vary). */
hs_status hs__session_dist_open(hs_session *s);
void hs__session_dist_close(hs_session *s);
/* The train stage of a distributed worker: batch `b` is uploaded; train
 * it through the distributed step (count 0: contribute nothing). */
hs_status hs__session_dist_train(hs_session *s, int64_t b);
/* After a worker's epoch (or its stop): the mode's end of epoch. */
hs_status hs__session_dist_epoch_end(hs_session *s, int64_t done, bool interrupted);
/* A server's epoch. */
hs_status hs__session_dist_serve(hs_session *s, hs_epoch_stats *stats);
/* The epoch's figures combined over the ranks into `stats` (collective). */
hs_status hs__session_dist_stats(hs_session *s, hs_epoch_stats *stats);
/* Collective checkpoints (session_dist_ckpt.c): rank 0 reads and writes
 * the files. */
hs_status hs__session_dist_save(hs_session *s, const char *path);
/* The options of the session's run a checkpoint records beside the model
 * (the whole run's: a distributed checkpoint is a single-process one). */
void hs__session_run(const hs_session *s, hs_ckpt_run *r);
hs_status hs__session_dist_load(hs_session *s, const char *path);
/* Run `fn` on rank 0 and give its result to every rank (collective). */
hs_status hs__session_dist_on_root(hs_session *s, hs_status (*fn)(hs_session *, int, double *),
                                   int arg, double *out);

#endif
