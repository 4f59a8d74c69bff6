/* hetsage — training sessions: placement for a dataset, the pipelined
 * sampler -> gather -> trainer loop, evaluation, prediction, checkpoints.
 *
 * A session owns the devices it was placed on (sub-devices, queues,
 * programs, buffers) and a model (GraphSAGE, GCN or GAT). One thread
 * drives a session; distinct sessions are independent. */
#ifndef HETSAGE_SESSION_H
#define HETSAGE_SESSION_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hetsage/board.h"
#include "hetsage/dataset.h"
#include "hetsage/dist.h"
#include "hetsage/runtime.h"
#include "hetsage/status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define HS_MAX_LAYERS 8

/* Ranges of hs_session_config, checked by hs_session_create (and by the
 * command line, which names the option): fanouts -1 or 1..HS_MAX_FANOUT,
 * batch 1..HS_MAX_BATCH, hidden 1..HS_MAX_HIDDEN, depth 0..HS_MAX_DEPTH,
 * learning rate in (0, HS_MAX_LR). */
#define HS_MAX_FANOUT 1000000
#define HS_MAX_BATCH (1 << 24)
#define HS_MAX_HIDDEN 65536
#define HS_MAX_DEPTH 64
#define HS_MAX_LR 100.0

typedef enum hs_optimizer {
  HS_OPTIMIZER_ADAM = 0,
  HS_OPTIMIZER_SGD = 1,
} hs_optimizer;

/* The model a session trains. Every kind has n_layers layers of `hidden`
 * features (the last has one per class); hidden layers end in bias, ReLU
 * and dropout; the loss is softmax cross-entropy on the seeds. */
typedef enum hs_model_kind {
  HS_MODEL_SAGE = 0, /* GraphSAGE, mean aggregator: [h_i | mean h_j] W + b */
  HS_MODEL_GCN = 1,  /* graph convolution: symmetric-normalised sum over the
                        sampled block with self loops, then W, + b */
  HS_MODEL_GAT = 2,  /* graph attention: per head, LeakyReLU(0.2) scores
                        softmax-normalised over each vertex's sampled
                        neighbours and itself; heads concatenated in hidden
                        layers, averaged in the last */
} hs_model_kind;

/* "sage", "gcn", "gat"; "unknown" otherwise. */
HS_API const char *hs_model_kind_name(hs_model_kind kind);
/* The kind a name gives; HS_ERR_INVALID_ARG for any other name. */
HS_API hs_status hs_model_kind_parse(const char *name, hs_model_kind *out);

/* How a batch's neighbours are drawn (training and sampled evaluation
 * alike). */
typedef enum hs_sampling {
  HS_SAMPLING_UNIFORM = 0,   /* every neighbour equally likely */
  HS_SAMPLING_WEIGHTED = 1,  /* probability proportional to the edge's weight
                                (the dataset's weights.npy) */
  HS_SAMPLING_THRESHOLD = 2, /* only edges whose weight exceeds the layer's
                                threshold, uniformly among them; never with
                                replacement */
} hs_sampling;

/* "uniform", "weighted", "threshold"; "unknown" otherwise. */
HS_API const char *hs_sampling_name(hs_sampling s);
/* The mode a name gives; HS_ERR_INVALID_ARG for any other name. */
HS_API hs_status hs_sampling_parse(const char *name, hs_sampling *out);

/* hs_transfer and hs_feature_pages: hetsage/settings.h. */

typedef struct hs_session_config {
  size_t struct_size; /* set by hs_session_config_init */
  /* Sampling: layers, fanouts from the seeds outward (-1: every neighbour),
   * seeds per batch. Defaults: 2 layers, 25,10, batch 1024. */
  int n_layers;
  int32_t fanouts[HS_MAX_LAYERS];
  int32_t batch_size;
  /* Model: hidden width (128), dropout (0.5), optimizer (Adam), learning
   * rate (0.01), weight decay (5e-4, L2). */
  int hidden;
  float dropout;
  hs_optimizer optimizer;
  float lr;
  float weight_decay;
  /* Seeds parameter init, the per-epoch shuffles, sampling and dropout. */
  uint64_t seed;
  /* Placement: board profile (NULL: the runtime's, hs_runtime_options.board,
   * else the default board) and role overrides
   * ("1", "gpu", a name substring; NULL: none). Placement reads
   * HETSAGE_SAMPLER / HETSAGE_TRAINER for overrides left NULL. */
  const char *board;
  const char *sampler;
  const char *trainer;
  /* Pipeline: HS_PIPELINE_AUTO keeps the plan's choice; depth 0 likewise. */
  hs_pipeline_mode pipeline;
  int depth;
  /* Trainer-side feature cache (cache-once-only, docs/architecture.md, "The idea"): rows -1
   * the plan's, 0 none, else that many (cut to the vertices there are and
   * to one device allocation). The fill policy is cache_fill when
   * cache_rows >= 0 or cache_fill is not FIRST, else the plan's. Sparse
   * features: the cache holds CSR rows, its budget that many rows of the
   * mean length in entries (every row when cache_rows >= N). The cache
   * changes only what crosses the link: results are bit-identical. */
  int64_t cache_rows;
  hs_cache_fill cache_fill;
  /* Host memory budget in bytes (0: the plan's host budget). When the
   * features (feat.npy) are larger, they are read from the file through
   * the host tier (pread, never mapped) with half the budget for its
   * cache, and each epoch's seeds are ordered block by block (blocks of
   * feature rows shuffled, seeds shuffled within a block). That block
   * order changes the SGD order: batches draw their seeds from a few id
   * ranges, so they are less independent than under a full shuffle.
   * Sparse features (feat_indptr.npy ...) larger than the budget are read
   * through the sparse host tier instead: the offsets stay in memory, the
   * column ids and values come from their files (pread) through a cache of
   * blocks of rows within half the budget, each row checked as it is read.
   * The seeds keep their full shuffle there: results are bit-identical to
   * the session without a budget. */
  uint64_t memory_budget;
  /* Block transfer path (see hs_transfer). With HS_TRANSFER_AUTO the
   * environment variable HETSAGE_TRANSFER (auto, host, device) decides.
   * Both paths give bit-identical results. */
  hs_transfer transfer;
  /* Release the dataset's host copy of the topology (indptr, indices,
   * weights) once the sampler holds it and the caches are filled. The
   * dataset handle is modified: afterwards it still gives its info, but
   * hs_session_evaluate_full, hs_session_predict and hs_dataset_stats_compute
   * on it, and any new session on it, fail with HS_ERR_STATE (sampled
   * evaluation keeps working: it samples on the device). Epoch stats report
   * the bytes released. */
  bool free_host_topology;
  /* A profile already loaded, used instead of `board` when not NULL
   * (borrowed during hs_session_create only). */
  const hs_board_profile *profile;
  /* Pages the host gathers feature rows from (see hs_feature_pages). With
   * HS_FEATURE_PAGES_AUTO the environment variable HETSAGE_FEATURE_PAGES
   * (auto, file, huge) decides. The copy on huge pages is made once per
   * dataset, by the first session that asks, and kept until
   * hs_dataset_close (the dataset's view of its features does not change);
   * results are bit-identical either way. HUGE falls back to the file
   * mapping, saying why in hs_session_describe, where the kernel gives no
   * huge pages on request or the copy would not fit the available memory. */
  hs_feature_pages feature_pages;
  /* The model (default GraphSAGE) and, for GAT, its attention heads per
   * layer (default 4, 1..64; `hidden` must be a multiple: each head has
   * hidden / heads features). Checkpoints record both; loading one into a
   * session of another model fails with HS_ERR_INVALID_ARG naming both. */
  hs_model_kind model;
  int heads;
  /* Sampling (default uniform without replacement, no budget): the mode;
   * `replace` draws with replacement (uniform and weighted modes); a
   * vertex budget > 0 caps the vertices of a batch (neighbours met once it
   * is full are left out; it must hold a whole batch of seeds); threshold
   * mode keeps, at layer l from the seeds out, the edges whose weight
   * exceeds thresholds[l]. The weighted and threshold modes need the
   * dataset's edge weights: without them session creation fails with
   * HS_ERR_INVALID_ARG before anything is built. Sampled evaluation
   * (hs_session_evaluate) samples the same way. */
  hs_sampling sampling;
  bool replace;
  int64_t vertex_budget;
  float thresholds[HS_MAX_LAYERS];
  /* Threads of the trainer's GEMM where it runs on OpenBLAS (a CPU
   * trainer's cblas provider). 0: the setting gemm_threads
   * (HETSAGE_GEMM_THREADS) if set, else the trainer device's compute units
   * (the fastest). OpenBLAS sums in another order with another thread
   * count, so the parameters' last bits follow it; a fixed count gives the
   * same bits on a whole CPU device and on any sub-device of it (see
   * README, "Results across devices"). */
  int gemm_threads;
  /* Learnable node embeddings (0: none): every vertex gets a row of
   * node_embedding floats in a host embedding store, created at its first
   * use (new rows draw U(-0.05, 0.05) from the seed), and the model's input
   * is that row after the vertex's features (the row alone when the
   * dataset has none). Each batch's rows are trained by row-wise Adagrad
   * (learning rate node_embedding_lr, default 0.05) from the gradient of
   * the loss with respect to the input, on the host, as each step
   * completes; a batch reads the rows as every earlier batch's update left
   * them, whatever the pipeline. Evaluation, prediction and embeddings read
   * the rows as they stand (zeros for a vertex no batch has touched). The
   * trainer cache is off under this option; sparse features are refused.
   * Checkpoints hold the rows (with their optimizer state) after the
   * model, in the same atomic file; hs_session_config_from_checkpoint
   * restores both fields, and a file without rows is refused
   * (HS_ERR_INVALID_ARG, naming it) by a session that learns them, as a
   * file with rows is by one that does not. */
  int32_t node_embedding;
  float node_embedding_lr;
  /* Distributed training (hetsage/dist.h): the world this session is one
   * rank of (borrowed, must outlive the session; NULL: one process) and
   * how the ranks combine their work (borrowed during hs_session_create
   * only; NULL: the defaults of hs_dist_config_init). Every rank creates
   * its session with the same options (placement, board and cache options
   * may differ). */
  hs_world *world;
  const hs_dist_config *dist;
} hs_session_config;

HS_API void hs_session_config_init_sized(hs_session_config *cfg, size_t struct_size);
/* Fill `cfg` with the defaults above; struct_size set. */
static inline void hs_session_config_init(hs_session_config *cfg) {
  hs_session_config_init_sized(cfg, sizeof *cfg);
}

typedef struct hs_session hs_session;

/* Place the roles for `ds` on the devices of `rt` (see hetsage/board.h),
 * set up the devices, build the programs, upload the topology to the
 * sampler and initialise the model. `rt` and `ds` are borrowed and must
 * outlive the session. Every field of `cfg` is checked first, against the
 * ranges its comment and the HS_MAX_* limits give (finite numbers, enums
 * among their values). Errors: HS_ERR_INVALID_ARG (bad configuration: the
 * detail names the field, its value and the accepted range), HS_ERR_FORMAT
 * (the dataset lacks features, labels or a training split), placement
 * errors, HS_ERR_NOMEM (an allocation would exceed a device's limit or the
 * memory the process may still use: the detail names the buffer and the
 * limit), HS_ERR_OPENCL/BUILD. */
HS_API hs_status hs_session_create(hs_runtime *rt, hs_dataset *ds,
                                   const hs_session_config *cfg, hs_session **out);
HS_API void hs_session_destroy(hs_session *s);

/* The placement plan with a reason per choice, then the block transfer
 * path in use and why, the pages features are gathered from and why, and
 * the host topology released if it was, as text
 * (snprintf-style: returns the length it needed). */
HS_API size_t hs_session_describe(const hs_session *s, char *buf, size_t len);

/* Pipeline stages, in order, as reported in hs_epoch_stats. */
typedef enum hs_stage {
  HS_STAGE_SAMPLE = 0,
  HS_STAGE_GATHER = 1,
  HS_STAGE_TRAIN = 2,
  HS_STAGE_COUNT_ = 3,
} hs_stage;
HS_API const char *hs_stage_name(hs_stage stage);

typedef struct hs_epoch_stats {
  size_t struct_size; /* set by hs_epoch_stats_init */
  int64_t epoch;    /* the epoch just trained (0-based) */
  int64_t batches;  /* batches trained in this call */
  double loss;      /* mean training loss over those batches */
  double train_acc; /* accuracy on the training seeds, as sampled */
  double wall_s;
  double stage_busy_s[HS_STAGE_COUNT_]; /* time each stage was busy */
  double stage_wait_s[HS_STAGE_COUNT_]; /* time each stage waited for input */
  double trainer_utilisation;           /* train busy / wall */
  double sampled_edges_per_s;
  double gather_bytes_per_s;
  /* Bytes moved in the epoch, each way: host -> trainer (features or
   * cache misses, labels, and the blocks on the host path), sampler ->
   * host (ids, counts, and the blocks on the host path, as the sampler
   * reads them: at capacity when it reads with the batch), and sampler ->
   * trainer device to device (the blocks, at their exact sizes). */
  uint64_t bytes_uploaded;
  uint64_t bytes_to_host;
  uint64_t bytes_device_to_device;
  hs_transfer transfer; /* the path the blocks took: HOST or DEVICE */
  /* Time the train stage spent handing the batch to the trainer (writes
   * from the host, cache assembly, enqueueing the device-side blocks),
   * included in stage_busy_s[HS_STAGE_TRAIN]. */
  double upload_s;
  /* Host topology bytes released by free_host_topology (0: kept). */
  uint64_t host_topology_freed_bytes;
  uint64_t cache_lookups, cache_hits; /* trainer-side cache, 0 when off */
  uint64_t cache_rows;         /* rows the trainer cache holds at the end */
  uint64_t cache_bytes_saved;  /* feature bytes the hits kept off the link */
  uint64_t cache_device_bytes; /* the trainer cache's allocation */
  /* Host tier (features read from disk within the memory budget, dense
   * or sparse), 0 when off: rows looked up, rows served from kept blocks,
   * bytes read from the files, the tier's memory (kept blocks + fixed
   * overhead). */
  uint64_t host_lookups, host_hits, host_bytes_read, host_memory_bytes;
  uint64_t peak_rss_bytes;
  hs_pipeline_mode pipeline;
  int depth;
  bool interrupted; /* the stop flag ended the epoch early */
  /* Feature bytes this session gathers from 2 MiB pages (0: from the file
   * mapping or through the host tier). */
  uint64_t feature_huge_page_bytes;
  /* How the features travelled: DENSE rows, or SPARSE rows (CSR: offsets,
   * column ids, values unless binary, all counted in bytes_uploaded); the
   * non-zeros gathered (sparse), and the bytes the same rows would have
   * taken as dense float32 rows, to set bytes_uploaded against. */
  hs_feat_format feature_format;
  uint64_t feature_nnz;
  uint64_t feature_bytes_dense;
  /* Distributed sessions (zero otherwise). loss and train_acc above are
   * over every worker's seeds; the figures below are this rank's:
   * training steps, time computing gradients (or local steps), time
   * exchanging (waits included), payload bytes sent and received, steps
   * sent compressed, late gradients (ps, partial quorum), the largest lead
   * a worker was allowed (ps, asynchronous), updates applied (servers). */
  int rank, world_size;
  bool server;
  int64_t dist_steps;
  double dist_compute_s, dist_comm_s;
  uint64_t dist_bytes_sent, dist_bytes_recv;
  int64_t dist_compressed_steps, dist_late_gradients, dist_max_staleness, dist_updates;
} hs_epoch_stats;

HS_API void hs_epoch_stats_init_sized(hs_epoch_stats *stats, size_t struct_size);
/* Zeroes, struct_size set: do this before passing it to be filled. */
static inline void hs_epoch_stats_init(hs_epoch_stats *stats) {
  hs_epoch_stats_init_sized(stats, sizeof *stats);
}

/* Called from the driving thread after each trained batch. */
typedef void (*hs_batch_progress_fn)(void *user, int64_t batch, int64_t n_batches,
                                     double loss);
HS_API void hs_session_set_progress(hs_session *s, hs_batch_progress_fn fn, void *user);

/* While *flag is non-zero no new batch is started; batches in flight
 * complete, the epoch call returns with stats->interrupted set, and the
 * position is kept so that a checkpoint saved now resumes exactly. A flag
 * raised during an evaluation or a prediction over sampled or full
 * neighbourhoods in blocks of seeds ends it between blocks with
 * HS_ERR_INTERRUPTED (not layer-wise inference, not distributed); one
 * already raised when it begins leaves it to run in full, as it always
 * did. */
HS_API void hs_session_set_stop_flag(hs_session *s, volatile sig_atomic_t *flag);

/* Train one epoch (or the rest of an interrupted one); `stats` (may be NULL,
 * else initialised with hs_epoch_stats_init) receives its figures. Feature
 * rows are checked finite the first time they are gathered. Errors include
 * HS_ERR_FORMAT (a NaN or infinite feature: the detail names feat.npy,
 * the row and the feature) and HS_ERR_RANGE (the training loss became NaN
 * or infinite: the model diverged; the epoch does not count, and the
 * parameters should not be saved). Distributed: every rank calls it;
 * workers train their slices, servers serve them. A stop flag set on any
 * rank stops every rank after the same step (the next step with
 * allreduce, the next average with local SGD, within two steps with a
 * parameter server). */
HS_API hs_status hs_session_train_epoch(hs_session *s, hs_epoch_stats *stats);

/* Distributed sessions, on rank 0 after hs_session_train_epoch: rank r's
 * part of the epoch (the distributed fields of its hs_epoch_stats; the
 * rest zero). HS_ERR_RANGE for a rank outside the world, HS_ERR_STATE on
 * other ranks or before the first epoch. */
HS_API hs_status hs_session_rank_stats(const hs_session *s, int rank, hs_epoch_stats *out);

/* Epochs completed so far. */
HS_API int64_t hs_session_epoch(const hs_session *s);

/* Accuracy on a split with sampled neighbourhoods (the training fanouts).
 * Distributed: every rank calls the evaluations; rank 0 computes (the
 * workers hold the same parameters after each epoch) and every rank
 * receives its result. */
HS_API hs_status hs_session_evaluate(hs_session *s, hs_split split, double *accuracy);
/* Accuracy on a split with layer-wise full-neighbour inference over all
 * vertices (the standard way to report GraphSAGE accuracy). */
HS_API hs_status hs_session_evaluate_full(hs_session *s, hs_split split, double *accuracy);

/* Predicted class (and, if `logits` is not NULL, n x classes logits) of
 * each vertex id, from its full neighbourhood. HS_ERR_RANGE for an id
 * outside the graph. */
HS_API hs_status hs_session_predict(hs_session *s, const int64_t *ids, int64_t n,
                                    int32_t *classes, float *logits);
HS_API int hs_session_num_classes(const hs_session *s);

/* Node embeddings: every vertex's representation after `layer` layers
 * (1..n_layers), computed layer by layer over full neighbourhoods with
 * dropout off: hidden layers after bias and ReLU (GAT: heads
 * concatenated), layer n_layers the logits with bias. hs_session_embed_dim
 * gives the width d. */
HS_API int hs_session_embed_dim(const hs_session *s, int layer);
/* Into `out` (n_vertices x d float32, row = vertex id; `cap` floats). The
 * features must be held dense (not sparse, not read through the host tier)
 * and the graph have fewer than 2^31 edges: HS_ERR_UNSUPPORTED otherwise;
 * HS_ERR_INVALID_ARG for a layer outside 1..n_layers or a short `out`;
 * HS_ERR_STATE once the host topology was released. */
HS_API hs_status hs_session_embed(hs_session *s, int layer, float *out, size_t cap);
/* The same written to `path` as a NumPy .npy (float32, n_vertices x d),
 * atomically: a temporary file in the same directory renamed over the
 * target, so a reader never sees a partial file, and nothing is left
 * behind on failure (HS_ERR_IO names the path). */
HS_API hs_status hs_session_embed_save(hs_session *s, int layer, const char *path);

/* Model, optimizer state and training position, written atomically, with
 * every option of the run that decides its result: the model part (kind,
 * heads, layers, widths, dropout, optimizer and its settings, learning
 * rate, weight decay, seed), the fanouts, the batch size, the order of
 * the seeds (a full shuffle, or block order through the host tier), the
 * dataset's size (vertices, edges, training seeds), the sampling (mode,
 * replace, vertex budget, thresholds) and the GEMM thread count asked for
 * (gemm_threads, or the setting; 0 when neither gave one).
 * hs_session_load restores the model and the position, for evaluation or
 * prediction: it refuses a file of another model shape, and otherwise
 * leaves the session's options as they are. To continue training, use
 * hs_session_resume.
 * Distributed: every rank calls them; rank 0 alone reads or writes the
 * file (the other ranks' state travels to and from it), which also holds
 * the state each rank needs to continue exactly (error feedback residuals,
 * parameter server shards); loading it requires the same world size and
 * options. */
HS_API hs_status hs_session_save(hs_session *s, const char *path);
HS_API hs_status hs_session_load(hs_session *s, const char *path);

/* Changes a resumed run may make, said by the caller (flags of
 * hs_session_resume). */
#define HS_RESUME_NEW_LR 1u /* continue with the session's learning rate */

/* Load a checkpoint to continue its run: as hs_session_load, after
 * checking that every option recorded in the file is the session's
 * (create the session from hs_session_config_from_checkpoint). A
 * difference is HS_ERR_INVALID_ARG naming the option and both values,
 * except the learning rate with HS_RESUME_NEW_LR. A file without the run's
 * options (written before they were recorded) is resumed on the model
 * part alone, and one written before sampling and GEMM threads were
 * recorded without checking those. */
HS_API hs_status hs_session_resume(hs_session *s, const char *path, unsigned flags);

/* Fill `cfg` from a checkpoint with every option it records (see
 * hs_session_save): the model part, and the fanouts, batch size, memory
 * budget, sampling fields and gemm_threads when the file has them (an
 * older file lacks the last two: `cfg` keeps its own); the rest of `cfg`
 * (placement, pipeline, caches) is left as it is. */
HS_API hs_status hs_session_config_from_checkpoint(const char *path, hs_session_config *cfg);

/* The model's parameters (flat, layer by layer: W then b), for tests and
 * comparison; `n` receives the count. Waits for the device. On a
 * parameter server rank, HS_ERR_STATE (it holds a shard). */
HS_API hs_status hs_session_parameters(hs_session *s, float *out, size_t cap, size_t *n);

#ifdef __cplusplus
}
#endif
#endif
