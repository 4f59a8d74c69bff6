/* Checkpoints: model kind and parameters, optimizer state and training
 * position.
 *
 * Format, version 2, every field little-endian:
 *   0   char[8] magic "HSCKPT1\n"
 *   8   u32 version (2)
 *   12  u32 header bytes H: where the parameters start (>= 144, a multiple
 *       of 4); everything between byte 144 and H is records (below)
 *   16  u32 model kind       (hs_nn_kind: 0 sage, 1 gcn, 2 gat)
 *   20  u32 heads            (GAT's attention heads; 1 for the others)
 *   24  u32 n_layers
 *   28  u32 dims[9]          (n_layers + 1 used, the rest 0)
 *   64  u32 optimizer kind   (hs_optim_kind)
 *   68  u32 weight decay mode
 *   72  f32 lr, weight_decay, beta1, beta2, eps, momentum, dropout
 *   100 u32 0 (reserved)
 *   104 u64 seed, step, epoch, rng_counter, n_params
 *   144 records, back to back up to H: u32 tag, u32 length n, n bytes,
 *       zero padding to a multiple of 4. Tags name what a record holds
 *       (checkpoint.c lists them); a reader that meets a tag it does not
 *       know refuses the file, unless bit 31 of the tag is set, which marks
 *       a record that may be skipped without changing results. Training
 *       sessions write the run's records (hs_ckpt_run): what else decides
 *       the result of resuming it (fanouts, batch, seed order, dataset;
 *       sampling and GEMM threads, files written before they were recorded
 *       reading as "not recorded"; and the node embeddings' width, learning
 *       rate and batch counter where the session learns them).
 *   H   f32 params[n_params], m[n_params], v[n_params]
 *   +   u32 CRC-32 (zlib) of every byte before it
 *   then, only when the node embedding record is present: the store of
 *       the node embeddings, one section of the embedding store's format
 *       (runtime/embed/embed_io.c, with its own CRC) to the end of the file.
 *       Without that record the file ends at the CRC.
 * n_params must be what the kind's layout gives for the header's widths and
 * heads. Adding a field: a new record tag (older readers then refuse the
 * file by name rather than misread it); a change to the fixed part bumps
 * the version. Version 1 files (the fixed part of a GraphSAGE model
 * without kind, heads or records, parameters at byte 128) are still read.
 *
 * Files are written to a temporary file in the same directory, fsynced,
 * then renamed over the target, so a reader sees the old file or the new
 * one, never a torn one. */
#ifndef HS_NN_CHECKPOINT_H
#define HS_NN_CHECKPOINT_H

#include "core/hs_afile.h"
#include "nn/model.h"

#define HS_CHECKPOINT_VERSION 2u

/* Bounds every header field is checked against (a crafted file with a
 * valid checksum is refused, naming the byte): epochs, and steps per
 * epoch (a batch per training vertex at most). */
#define HS_CKPT_MAX_EPOCH 1000000u
#define HS_CKPT_MAX_BATCHES ((uint64_t)1 << 31)

/* The options of a training run beyond the model (records of the file):
 * with the model's fixed part they are everything that decides the
 * result of resuming it. */
typedef struct hs_ckpt_run {
  bool set; /* false: the file has none (version 1, a model saved alone) */
  int n_layers;
  int32_t fanouts[HS_NN_MAX_LAYERS];
  int32_t batch_size;
  /* The order of each epoch's seeds: 0 a full shuffle, 1 block by block
   * (features read from disk), with rows_per_block. */
  uint32_t order;
  uint64_t rows_per_block;
  uint64_t memory_budget; /* the session's memory_budget (0: the plan's) */
  /* The dataset trained on: vertices, edges, training seeds. */
  uint64_t n_vertices, n_edges, n_train;
  /* How neighbours are drawn (hs_session_config's sampling fields; the
   * SMPL record). Files written before it was recorded have none:
   * sampling_set false, "not recorded". Thresholds are 0 outside the
   * threshold mode. */
  bool sampling_set;
  uint32_t sampling; /* hs_sampling */
  bool replace;
  int64_t vertex_budget; /* 0: none */
  float thresholds[HS_NN_MAX_LAYERS];
  /* The OpenBLAS thread count of a CPU trainer's GEMM, which its sums'
   * order follows (the GEMM record; gemm_set false where the file has
   * none): the count asked for by hs_session_config.gemm_threads or the
   * gemm_threads setting, 0 when neither gave one (the trainer device's
   * compute units). */
  bool gemm_set;
  uint32_t gemm_threads;
  /* Learnable node embeddings: width (0: none), learning rate, and the
   * batch number the store's next training lookup takes. */
  int32_t node_embedding;
  float node_embedding_lr;
  uint32_t node_embedding_tick;
  /* Read only: where the node embeddings' store starts in the file (0: the
   * file has none). */
  uint64_t tail_at;
} hs_ckpt_run;

/* The widest node embedding a file may record (the session's bound). */
#define HS_CKPT_MAX_NODE_EMBED 4096

/* Save `m` to `path` atomically. HS_ERR_IO (with the path and errno text)
 * when the directory is not writable or the disk fills; the target is then
 * untouched and no temporary file is left behind. */
hs_status hs__checkpoint_save(const hs_model *m, const char *path);
/* The same with the run's records (`run` may be NULL: none). */
hs_status hs__checkpoint_save_run(const hs_model *m, const hs_ckpt_run *run, const char *path);
/* The same, then `tail` writes what follows the parameters' CRC (the node
 * embeddings' store where run->node_embedding > 0) into the same atomic
 * file; its error abandons the file, leaving the target untouched. */
typedef hs_status (*hs_ckpt_tail_fn)(void *ctx, hs_afile *a);
hs_status hs__checkpoint_save_tail(const hs_model *m, const hs_ckpt_run *run, const char *path,
                                   hs_ckpt_tail_fn tail, void *ctx);

/* Restore a checkpoint into `m`, which was created with the same model
 * kind (and heads), layer sizes and optimizer kind: parameters, moments,
 * step, epoch, RNG position and seed (so a resumed run draws the masks the
 * uninterrupted one would); the other hyperparameters stay as `m` has
 * them. Refused, with the file named and `m` unchanged: HS_ERR_IO
 * (unreadable), HS_ERR_FORMAT (foreign file, truncated, inconsistent
 * header, unknown record), HS_ERR_UNSUPPORTED (other version),
 * HS_ERR_CHECKSUM, HS_ERR_INVALID_ARG (model kind, heads, shape or
 * optimizer differs from `m`: the message names both). */
hs_status hs__checkpoint_load(const char *path, hs_model *m);

/* Check a checkpoint fully (as load does) and return the configuration it
 * was saved with (model kind, heads, in_dim, hidden, n_classes, layers,
 * optimizer, dropout, seed), to create a model to load it into. */
hs_status hs__checkpoint_read_cfg(const char *path, hs_model_cfg *cfg);
/* The same, with the run's records (run->set false when there are none)
 * and the training position (epoch, step, batch within the epoch). */
hs_status hs__checkpoint_read_run(const char *path, hs_model_cfg *cfg, hs_ckpt_run *run,
                                  uint64_t pos[3]);

#endif
