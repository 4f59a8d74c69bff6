/* The device training step: forward, loss, backward and the optimizer
 * update of one batch on the trainer device, everything enqueued on one
 * in-order queue without host round trips (statistics are read lazily).
 *
 * The step is the composition the plain-C reference (ref_step.c) runs,
 * kernel for kernel; GEMMs go through the device's GEMM provider. Given
 * the same model, batch, keys and device, the result is bit-identical run
 * to run: no float atomics, reductions in fixed order, and the transposed
 * blocks sorted.
 *
 * One host thread drives a trainer. Device memory grows to the largest
 * batch seen and is then reused (no allocation in the steady state). */
#ifndef HS_NN_TRAINER_H
#define HS_NN_TRAINER_H

#include "gemm.h"
#include "hs_dev.h"
#include "nn/model.h"
#include "nn/ref_nn.h"

typedef struct hs_trainer hs_trainer;

typedef struct hs_trainer_opts {
  size_t wg;             /* local size of dimension 0; 0: 64 (clamped to each kernel's limit) */
  hs_gemm_kind gemm;     /* HS_GEMM_AUTO: by device (see gemm.h) */
  int gemm_threads;      /* CBLAS threads; 0: the device's compute units */
  bool profile;          /* time phases (the queue must have profiling on) */
} hs_trainer_opts;

/* Where device time goes, from profiling events (in-order queue: each
 * command is charged from the end of the previous one to its own end). */
typedef enum hs_train_phase {
  HS_PHASE_GEMM = 0,
  HS_PHASE_AGG,   /* aggregation forward/backward and block transposes */
  HS_PHASE_ELEM,  /* bias/ReLU/dropout, bias gradients, loss */
  HS_PHASE_OPTIM,
  HS_PHASE_COUNT_
} hs_train_phase;

enum { HS_TRAIN_MAX_KERNELS = 48 };

/* One kernel's (or the GEMM's) share of the device time: `span_s` from the
 * end of the command before it to its own end (what it costs the in-order
 * queue), `run_s` from its start to its end; span - run is the time the
 * device spent between commands (launch and scheduling). */
typedef struct hs_train_kernel_time {
  const char *name;
  int launches;
  double span_s, run_s;
} hs_train_kernel_time;

typedef struct hs_train_times {
  double seconds[HS_PHASE_COUNT_];
  int steps;
  int n_kernels;
  hs_train_kernel_time kernel[HS_TRAIN_MAX_KERNELS];
} hs_train_times;

/* Accumulated statistics of steps not yet read. */
typedef struct hs_train_stats {
  double loss_sum; /* sum over steps of each step's mean loss */
  int64_t correct, seeds;
  int steps;
  float last_loss;
} hs_train_stats;

/* A trainer for model `m` (its configuration and current state are copied
 * to the device) on `dev`, enqueuing on in-order queue `q`. `ctx` is kept,
 * not owned, and must outlive the trainer; `q` is retained until
 * hs__trainer_destroy. Builds the training
 * program once (binary-cached) and picks the GEMM provider (gemm.h). */
hs_status hs__trainer_create(const hs_ctx *ctx, const hs_dev *dev, cl_command_queue q,
                             const hs_model *m, const hs_trainer_opts *opts, hs_trainer **out);
void hs__trainer_destroy(hs_trainer *t);

/* The GEMM provider in use. */
hs_gemm_kind hs__trainer_gemm_kind(const hs_trainer *t);

/* Copy a batch to the device (blocking; validates it against the model).
 * b->feat NULL leaves the feature matrix to the caller, who writes it into
 * hs__trainer_feat_buffer on the trainer's queue before the step. */
hs_status hs__trainer_upload(hs_trainer *t, const hs_nn_batch *b);

/* A block whose arrays are already on the trainer's context (e.g. copied
 * there from the sampler's buffers): shapes known to the host, contents
 * not. */
typedef struct hs_nn_dev_block {
  int32_t n_dst, n_src, n_edges;
  cl_mem row_ptr; /* n_dst + 1 int32 */
  cl_mem col;     /* n_edges int32 */
} hs_nn_dev_block;

typedef struct hs_nn_dev_batch {
  int n_layers;
  const hs_nn_dev_block *blocks; /* input side first, as hs_nn_batch */
  const float *feat;             /* host rows, or NULL (see hs__trainer_upload) */
  const hs_nn_sparse *sfeat;     /* host rows stored sparse, or NULL */
  const int32_t *labels;         /* host labels, or NULL */
} hs_nn_dev_batch;

/* As hs__trainer_upload, but the blocks stay where they are: the step reads
 * the given buffers (borrowed: the caller keeps them unchanged until the
 * step's commands complete) once `wait` completed, so they may still be
 * being written by another queue of the same context. Only the shapes and
 * labels are checked (the contents never reach the host). Features and
 * labels are written as by hs__trainer_upload. */
hs_status hs__trainer_upload_dev(hs_trainer *t, const hs_nn_dev_batch *b, cl_uint n_wait,
                                 const cl_event *wait);

/* The device feature matrix (n_rows x in_dim float32), grown to n_rows if
 * needed; valid until the next upload or feat_buffer call that grows it.
 * Commands that write it must go to the trainer's (in-order) queue. */
hs_status hs__trainer_feat_buffer(hs_trainer *t, size_t n_rows, cl_mem *out);

/* Enqueue one training step on the uploaded batch: gradients, then the
 * optimizer update as step t+1. Dropout keys: (model seed, epoch, batch).
 * Returns without waiting. */
hs_status hs__trainer_step(hs_trainer *t, uint32_t epoch, uint32_t batch);

/* Enqueue only forward, loss and backward (gradients readable with
 * hs__trainer_read_grads); `train` false disables dropout. */
hs_status hs__trainer_gradients(hs_trainer *t, uint32_t epoch, uint32_t batch, bool train);

/* Read what was computed (each waits for the queue). */
hs_status hs__trainer_read_grads(hs_trainer *t, float *grads);
/* Add the statistics of the steps since the last call to `acc`. */
hs_status hs__trainer_drain_stats(hs_trainer *t, hs_train_stats *acc);
/* Copy parameters, moments and the step count into `m` (same shape). */
hs_status hs__trainer_sync_model(hs_trainer *t, hs_model *m);
/* Replace the device state by `m`'s (e.g. after loading a checkpoint). */
hs_status hs__trainer_load_model(hs_trainer *t, const hs_model *m);

/* Inference forward (no dropout) on the uploaded batch: logits with bias
 * of the output dst, n_dst x n_classes. Waits. */
hs_status hs__trainer_predict(hs_trainer *t, float *logits);

/* Layer-wise full-neighbour inference over every vertex of `g` on the
 * device (dropout off): logits with bias, n_vertices x n_classes, from
 * `feat` (n_vertices x in_dim). Device memory: the CSR, the features, two
 * n_vertices x hidden activations and the logits, allocated for the call
 * and released after it. HS_ERR_RANGE when the graph has 2^31 or more
 * edges. Waits. */
hs_status hs__trainer_infer_full(hs_trainer *t, const hs_csr_view *g, const float *feat,
                                 float *logits);

/* Device time per phase since the last call (needs opts.profile). Waits. */
hs_status hs__trainer_times(hs_trainer *t, hs_train_times *out);

#endif
