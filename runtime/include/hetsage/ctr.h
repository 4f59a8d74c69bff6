/* hetsage — click-through-rate (CTR) models: data in the Criteo layout,
 * a generator with a planted signal, and training sessions whose sparse
 * embedding tables live on the host (the parameter-server role) while the
 * dense part trains on the trainer device.
 *
 * The Criteo layout (Kaggle Display Advertising and Terabyte): one example
 * per line, 40 tab-separated columns: the label (0 or 1), 13 integer
 * features, 26 categorical features as hexadecimal ids (up to 16 digits).
 * Any feature may be empty (missing). Files are plain text or gzip. Files
 * to predict on may leave out the label (39 columns). Integers enter the
 * models as log(1 + x) for x > 0 and 0 otherwise (missing included), the
 * usual transform. */
#ifndef HETSAGE_CTR_H
#define HETSAGE_CTR_H

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

#define HS_CTR_DENSE 13
#define HS_CTR_SPARSE 26
/* The label of an example read from a file without labels. */
#define HS_CTR_NO_LABEL 255u

/* The models (see hs_ctr_config for their widths). */
typedef enum hs_ctr_model {
  HS_CTR_LR = 1,     /* logistic regression: a weight per id, linear integers */
  HS_CTR_DEEPFM = 2, /* first order + factorisation machine + MLP (Guo et al. 2017) */
  HS_CTR_DLRM = 3,   /* bottom MLP, dot-product interactions, top MLP (Naumov et al. 2019) */
} hs_ctr_model;

/* "lr", "deepfm", "dlrm"; NULL for anything else. */
HS_API const char *hs_ctr_model_name(hs_ctr_model m);
/* HS_ERR_INVALID_ARG for an unknown name. */
HS_API hs_status hs_ctr_model_parse(const char *name, hs_ctr_model *out);

/* ---- generated data ---------------------------------------------------- */

typedef struct hs_ctr_generate_opts {
  size_t struct_size; /* set by hs_ctr_generate_opts_init */
  uint64_t seed;
  int64_t rows;          /* examples in all (default 1,000,000) */
  double split_frac[HS_SPLIT_COUNT_]; /* train, valid, test by position (0.8, 0.1, 0.1) */
  int64_t big_vocab;     /* ids of the largest field (default 2,000,000) */
  double signal;         /* scale of every planted effect (default 1) */
  double positive_rate;  /* mean click rate the bias is set for (0.25) */
  bool gzip;             /* write .txt.gz instead of .txt */
  int threads;           /* 0: 2 */
  bool force;
  hs_progress_fn progress;
  void *progress_ctx;
  /* An id's effects shrink as (head_ranks / rank)^tail_decay past the
   * head_ranks most popular ids of its field (defaults 2000 and 0.5; a
   * decay of 0 keeps them all at full scale): the smaller the head and
   * the faster the decay, the less of the signal lies in ids a finite
   * sample sees only a few times. */
  int64_t head_ranks;
  double tail_decay;
  /* When not NULL and *stop becomes non-zero (a signal handler sets it),
   * generation stops at its next block of rows, removes what it had
   * written and returns HS_ERR_INTERRUPTED. */
  volatile sig_atomic_t *stop;
} hs_ctr_generate_opts;

HS_API void hs_ctr_generate_opts_init_sized(hs_ctr_generate_opts *opts, size_t struct_size);
/* The defaults above; struct_size set. */
static inline void hs_ctr_generate_opts_init(hs_ctr_generate_opts *opts) {
  hs_ctr_generate_opts_init_sized(opts, sizeof *opts);
}

typedef struct hs_ctr_generate_summary {
  size_t struct_size; /* set by hs_ctr_generate_summary_init */
  int64_t rows[HS_SPLIT_COUNT_];
  double positive_rate[HS_SPLIT_COUNT_];
  int64_t distinct[HS_CTR_SPARSE]; /* distinct ids seen per field, all splits */
  /* On the test split, scoring each example by its true click
   * probability: the AUC against the drawn labels (what a perfect model
   * scores on this split), its expectation over the labels, and the
   * logloss. */
  double bayes_auc, bayes_auc_expected, bayes_logloss;
  double seconds;
} hs_ctr_generate_summary;

HS_API void hs_ctr_generate_summary_init_sized(hs_ctr_generate_summary *sum, size_t struct_size);
/* Zeroes, struct_size set: before passing it to be filled. */
static inline void hs_ctr_generate_summary_init(hs_ctr_generate_summary *sum) {
  hs_ctr_generate_summary_init_sized(sum, sizeof *sum);
}

/* Write train.txt, valid.txt, test.txt (.txt.gz with gzip) and meta.json
 * into `dst` (built beside it and renamed into place when complete). The
 * click logit of an example is a bias, a first-order effect per
 * categorical id, a factorisation-machine interaction <v_f, v_g> between
 * the ids of every pair of 8 fields (4-dimensional latent vectors), and a
 * function of the log-transformed integers (linear terms and one
 * product). Ids follow power laws over each field's vocabulary (Criteo's
 * field sizes, scaled so the largest has big_vocab ids); an id's effects
 * shrink as (head_ranks / rank)^tail_decay (by default the square root
 * of 2000 / rank) past the head_ranks most popular of its field, so that
 * the long tail a finite sample cannot teach carries little of the
 * signal. meta.json records every parameter, the distinct ids per field
 * and the Bayes figures of the summary. The files are a pure function of
 * the options (not of `threads`). A figure of the summary that a split
 * cannot give (the Bayes AUC of a test split without both labels, the
 * click rate of an empty split) is NaN, and null in meta.json.
 * HS_ERR_INTERRUPTED (opts->stop): nothing was written. */
HS_API hs_status hs_ctr_generate(const char *dst, const hs_ctr_generate_opts *opts,
                                 hs_ctr_generate_summary *summary);

/* ---- array sets ----------------------------------------------------------- */

/* Criteo-layout files (read as training reads them: plain or gzip, 40
 * columns) written as an array set in NumPy's .npy format:
 * PREFIX_label.npy (int32 [N], 0 or 1), PREFIX_dense.npy (float32
 * [N, 13], the integers log-transformed) and PREFIX_ids.npy (int64
 * [N, 26], -1 where missing). Training, evaluation and prediction read a
 * set wherever a file's path is one of its three names, with no text to
 * parse, and give the bits the text gives. A set may come from elsewhere
 * too: labels int32 [N] or [N, 1]; dense values any finite floats, taken
 * as they are (not transformed again); ids int64 or int32, -1 where
 * missing. The files are written under temporary names and renamed into
 * place when all three are complete: nothing is left behind on failure,
 * and a file of the set that exists already is an error (HS_ERR_IO).
 * `progress` (may be NULL) is called every few hundred thousand examples
 * of each of the two passes (1: counting, 2: writing); `stop` (may be
 * NULL): HS_ERR_INTERRUPTED when it turns non-zero. *examples (may be
 * NULL): the examples written. */
typedef void (*hs_ctr_arrays_progress_fn)(void *user, int pass, int64_t examples);
HS_API hs_status hs_ctr_write_arrays(const char *const *paths, int n_paths, const char *prefix,
                                     hs_ctr_arrays_progress_fn progress, void *user,
                                     volatile sig_atomic_t *stop, int64_t *examples);

/* Whether `path` names an array set (it ends in _label.npy, _dense.npy or
 * _ids.npy). */
HS_API bool hs_ctr_is_arrays(const char *path);
/* Open the set `path` names and check its files' headers (types, shapes,
 * one number of examples; the label file only when `labels`), as reading
 * it would first; the values are checked as they are read. */
HS_API hs_status hs_ctr_check_arrays(const char *path, bool labels);

/* ---- training sessions --------------------------------------------------- */

#define HS_CTR_MAX_HIDDEN 7

/* The optimizer of the embedding rows, applied on the host to the rows a
 * batch touched (see the embedding store). */
typedef enum hs_sparse_optimizer {
  HS_SPARSE_ADAGRAD = 0, /* row-wise: one accumulator per row */
  HS_SPARSE_SGD = 1,
  HS_SPARSE_ADAM = 2,    /* lazy: moments and a step count per row */
  HS_SPARSE_FTRL = 3,    /* FTRL-Proximal; rows start at zero */
  /* Adagrad with one accumulator per coordinate (D floats of state per
   * row, against row-wise Adagrad's one): torch.optim.Adagrad's rule. */
  HS_SPARSE_ELEMENTWISE_ADAGRAD = 4,
} hs_sparse_optimizer;

/* "adagrad", "sgd", "adam", "ftrl", "elementwise-adagrad"; NULL for
 * anything else. */
HS_API const char *hs_sparse_optimizer_name(hs_sparse_optimizer o);
HS_API hs_status hs_sparse_optimizer_parse(const char *name, hs_sparse_optimizer *out);

typedef struct hs_ctr_config {
  size_t struct_size; /* set by hs_ctr_config_init */
  hs_ctr_model model; /* default DeepFM */
  int32_t dim;        /* embedding width D (DeepFM, DLRM): 16 */
  /* Hidden widths of DeepFM's deep part and of DLRM's top MLP (each then
   * ends in one output): default 256,128; of DLRM's bottom MLP (which
   * then ends in D): default 64. */
  int32_t hidden[HS_CTR_MAX_HIDDEN];
  int n_hidden;
  int32_t bottom[HS_CTR_MAX_HIDDEN];
  int n_bottom;
  int32_t batch_size; /* 4096 */
  float lr;           /* dense parameters, Adam: 1e-3 */
  hs_sparse_optimizer sparse_optimizer; /* row-wise Adagrad */
  float sparse_lr;    /* 0.05 */
  float init_range;   /* new rows draw U(-r, r): 0.05 */
  /* Embedding store: an id gets a row once seen admit_after times
   * (0 or 1: at once; until then it reads as zeros); the store's bytes
   * (index, rows, optimizer state, admission counts) stay within
   * embed_budget (0: no limit), the least recently used rows evicted; rows
   * unused for expire_after batches are dropped (0: never; 1 and 2 count
   * as 3). Never the rows of the last 3 batches: the budget must hold
   * them, and the rows evicted depend on the data alone, not on the
   * pipeline, its depth or the threads (deeper pipelines than 3 wait for
   * the update of the batch 3 before the one they look up). */
  uint32_t admit_after;
  uint64_t embed_budget;
  uint32_t expire_after;
  uint64_t seed;      /* parameters and rows: 1 */
  int threads;        /* host threads for lookups and for updates (each);
                         0: the host's cores */
  int gemm_threads;   /* threads of the trainer's CBLAS products (CPU
                         trainers); 0: the device's compute units */
  /* Placement of the trainer role (the CTR pipeline has no sampler):
   * board profile (NULL: the default) or a loaded one, and an override
   * ("1", "cpu", a name substring; NULL: HETSAGE_TRAINER or the plan's). */
  const char *board;
  const hs_board_profile *profile;
  const char *trainer;
  /* Pipeline of read -> lookup -> train: AUTO is threads where host_nice
   * applies (below), else the plan's driver (threads, or async on boards
   * of 2 cores or fewer); depth 0: 3. */
  hs_pipeline_mode pipeline;
  int depth;
  /* Adagrad's accumulator of a new row (element-wise Adagrad: each of its
   * D accumulators' start): damps the first steps of rows
   * seen rarely (0: the first step has the size of the learning rate
   * whatever the gradient's). */
  float sparse_initial_accumulator;
  /* Distributed training (hetsage/dist.h): the world this session is one
   * rank of (NULL: a single process) and the distributed options (NULL:
   * hs_dist_config_init's). Every rank creates its session with the same
   * options (checked: a rank that differs is named) and makes the same
   * calls with the same files; training and evaluation are collective.
   * The embedding tables shard over the ranks by id hash, each rank the
   * owner of its shard; in each step rank r trains on batch r of the
   * step's `size` consecutive batches of the files (batch_size examples
   * each), its rows looked up at their owners, their gradients sent back
   * and summed per row in rank order, each rank's weighted by its share
   * of the step's examples; dense gradients are all-reduced, weighted
   * alike. Only HS_SYNC_ALLREDUCE without compression is supported
   * (HS_ERR_UNSUPPORTED otherwise), and checkpoints are not (save and load
   * refuse). For a world size and seed the result is the same bits run to
   * run; a world of one rank trains exactly as a session without one.
   * Epoch statistics count the store of every rank (rows, bytes). */
  hs_world *world;
  const hs_dist_config *dist;
  /* Under the threads driver, on Linux, and not distributed: the read
   * and lookup stages' threads and the store's lookup threads run
   * host_nice nicer than the trainer's (0..19; default 10; 0: at the same
   * priority). They then take the CPU time the trainer leaves instead of
   * time slices from it: a trainer on the CPU device waits for its
   * slowest thread at every product. Results do not depend on it. */
  int host_nice;
  /* Unused. The struct ended after host_nice (200 bytes with its padding
   * on LP64): this keeps the fields below outside the struct_size of a
   * program built against that header. */
  int reserved0_;
  /* 1: the 13 integers (after the log transform) reach the model
   * standardized, x' = (x - mean) / sd, with the mean and standard
   * deviation of each in the first batch the session trains on (an sd
   * below 1e-6 counts as 1); checkpoints keep them, so a loaded session
   * evaluates and predicts with the statistics it trained with (an
   * evaluation or prediction before any training uses its own first
   * batch's and keeps nothing). log1p(x) is at least 0, so without it a
   * ReLU unit of DLRM's bottom MLP whose weights are mostly negative can
   * be off for nearly every example from the start. 0 (default): the
   * log-transformed values as they are. With `world` every rank takes
   * the statistics of the data's first batch (rank 0's first), the
   * batch one process would take them from. */
  int standardize_dense;
} hs_ctr_config;

HS_API void hs_ctr_config_init_sized(hs_ctr_config *cfg, size_t struct_size);
/* The defaults above; struct_size set. */
static inline void hs_ctr_config_init(hs_ctr_config *cfg) {
  hs_ctr_config_init_sized(cfg, sizeof *cfg);
}

typedef struct hs_ctr_session hs_ctr_session;

/* Place the trainer, build its program, create the embedding store and
 * the dense model. `rt` is borrowed. Errors: HS_ERR_INVALID_ARG (the
 * detail names the field), placement errors, HS_ERR_OPENCL/BUILD. */
HS_API hs_status hs_ctr_session_create(hs_runtime *rt, const hs_ctr_config *cfg,
                                       hs_ctr_session **out);
HS_API void hs_ctr_session_destroy(hs_ctr_session *s);
/* The trainer's placement with its reasons, the model and the store's
 * settings, as text (snprintf-style). */
HS_API size_t hs_ctr_session_describe(const hs_ctr_session *s, char *buf, size_t len);

/* Stages of the CTR pipeline, as reported in hs_ctr_epoch_stats. */
typedef enum hs_ctr_stage {
  HS_CTR_STAGE_READ = 0,   /* parse a batch of lines */
  HS_CTR_STAGE_LOOKUP = 1, /* hash and look up its ids in the store */
  HS_CTR_STAGE_TRAIN = 2,  /* upload, device step, row gradients applied */
  HS_CTR_STAGE_COUNT_ = 3,
} hs_ctr_stage;
HS_API const char *hs_ctr_stage_name(hs_ctr_stage stage);

typedef struct hs_ctr_epoch_stats {
  size_t struct_size; /* set by hs_ctr_epoch_stats_init */
  int64_t epoch;    /* the epoch just trained (0-based) */
  int64_t examples; /* trained in this call */
  int64_t batches;
  double loss;      /* mean training loss over those batches */
  double wall_s;
  double examples_per_s;
  double stage_busy_s[HS_CTR_STAGE_COUNT_];
  double stage_wait_s[HS_CTR_STAGE_COUNT_];
  double lookup_s;  /* host time in store lookups (in the lookup stage) */
  double update_s;  /* host time applying row gradients (in the train stage) */
  uint64_t unique_rows; /* rows looked up, counted once per batch */
  uint64_t deferred_rows; /* of those, copied after the previous update */
  uint64_t bytes_uploaded, bytes_to_host;
  /* The store at the end of the epoch. */
  uint64_t embed_rows, embed_bytes, embed_row_bytes;
  uint64_t embed_created, embed_evicted, embed_expired, embed_pending;
  uint64_t peak_rss_bytes;
  hs_pipeline_mode pipeline;
  int depth;
  bool interrupted; /* the stop flag ended the epoch early */
} hs_ctr_epoch_stats;

HS_API void hs_ctr_epoch_stats_init_sized(hs_ctr_epoch_stats *stats, size_t struct_size);
/* Zeroes, struct_size set: before passing it to be filled. */
static inline void hs_ctr_epoch_stats_init(hs_ctr_epoch_stats *stats) {
  hs_ctr_epoch_stats_init_sized(stats, sizeof *stats);
}

/* Called from the driving thread every few batches. */
typedef void (*hs_ctr_progress_fn)(void *user, int64_t examples, double loss);
HS_API void hs_ctr_session_set_progress(hs_ctr_session *s, hs_ctr_progress_fn fn, void *user);
/* While *flag is non-zero no new batch is read; the epoch call returns
 * with stats->interrupted set and the position kept, so that a checkpoint
 * saved now resumes exactly (expiry and the embedding budget included: a
 * loaded session evicts the rows the uninterrupted one would have). A
 * flag raised during an evaluation or a prediction ends it between
 * batches with HS_ERR_INTERRUPTED; one already raised when it begins
 * (after a stopped epoch) leaves it to run in full, as it always did. */
HS_API void hs_ctr_session_set_stop_flag(hs_ctr_session *s, volatile sig_atomic_t *flag);

/* Train one pass over `files` (the rest of it after an interruption or a
 * loaded checkpoint): examples in file order, batch after batch. `stats`
 * (may be NULL) was set up by hs_ctr_epoch_stats_init. Files that hold
 * no example at all are HS_ERR_FORMAT, and the epoch does not count. */
HS_API hs_status hs_ctr_session_train_epoch(hs_ctr_session *s, const char *const *files,
                                            int n_files, hs_ctr_epoch_stats *stats);
HS_API int64_t hs_ctr_session_epoch(const hs_ctr_session *s);
/* The embedding store now (e.g. after a loaded checkpoint, no epoch run)
 * into the embed_* members of `stats` (set up by hs_ctr_epoch_stats_init;
 * the other members zero). Collective in a distributed session. */
HS_API hs_status hs_ctr_session_store_stats(hs_ctr_session *s, hs_ctr_epoch_stats *stats);

typedef struct hs_ctr_eval {
  size_t struct_size; /* set by hs_ctr_eval_init */
  int64_t examples;
  double auc, logloss;
  double positive_rate, mean_prob;
  double seconds;
} hs_ctr_eval;

HS_API void hs_ctr_eval_init_sized(hs_ctr_eval *eval, size_t struct_size);
/* Zeroes, struct_size set: before passing it to be filled. */
static inline void hs_ctr_eval_init(hs_ctr_eval *eval) { hs_ctr_eval_init_sized(eval, sizeof *eval); }

/* AUC and logloss over every example of labelled `files` into `out` (set
 * up by hs_ctr_eval_init); changes nothing (ids without a row read as
 * zeros). */
HS_API hs_status hs_ctr_session_evaluate(hs_ctr_session *s, const char *const *files,
                                         int n_files, hs_ctr_eval *out);

/* Click probabilities of every example of `files`, in order, handed to
 * `fn` a batch at a time with the labels (HS_CTR_NO_LABEL, 255, where the
 * files have none: `labelled` false, 39 columns). */
typedef hs_status (*hs_ctr_predict_fn)(void *user, const float *prob, const uint8_t *labels,
                                       int32_t n);
HS_API hs_status hs_ctr_session_predict(hs_ctr_session *s, const char *const *files,
                                        int n_files, bool labelled, hs_ctr_predict_fn fn,
                                        void *user);

/* The dense model and its optimizer state, the embedding store and the
 * position (and standardize_dense's statistics), written atomically.
 * Loading refuses another model or row layout, or a file of a run that
 * standardized (or not) into a session that does not (or does). */
HS_API hs_status hs_ctr_session_save(hs_ctr_session *s, const char *path);
HS_API hs_status hs_ctr_session_load(hs_ctr_session *s, const char *path);
/* The options a checkpoint records into `cfg`: the model part (model,
 * widths, dense and sparse optimizers and their rates, seed, admission)
 * and, from files that record them (version 2 on), the rest of the run's
 * options that decide its result: batch size, sparse initial accumulator,
 * expire_after, embed_budget and gemm_threads (an older file leaves those
 * as `cfg` has them); standardize_dense (1 from a version 3 file, which
 * only a standardizing run writes, else 0). */
HS_API hs_status hs_ctr_config_from_checkpoint(const char *path, hs_ctr_config *cfg);

/* ---- metrics ----------------------------------------------------------- */

/* Area under the ROC curve of `scores` against 0/1 `labels` (ties count
 * one half); NaN when a class is absent. `n` up to 2^31. */
HS_API double hs_ctr_auc(const float *scores, const uint8_t *labels, int64_t n);
/* Mean binary cross-entropy of probabilities (clamped to [1e-7, 1-1e-7]). */
HS_API double hs_ctr_logloss(const float *probs, const uint8_t *labels, int64_t n);

#ifdef __cplusplus
}
#endif
#endif
