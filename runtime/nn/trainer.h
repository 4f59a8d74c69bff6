/* The device training step: forward, loss, backward and the optimizer
 * update of one batch on the trainer device, everything enqueued on one
 * in-order queue without host round trips (statistics are read lazily).
 *
 * The trainer drives any model kind through its table (model_ops.h): the
 * kind's passes run the composition its plain-C reference runs, kernel for
 * kernel; GEMMs go through the device's GEMM provider. Given the same
 * model, batch, keys and device, the result is bit-identical run to run:
 * no float atomics, reductions in fixed order, and the transposed blocks
 * sorted.
 *
 * One host thread drives a trainer. Device memory grows to the largest
 * batch seen and is then reused (no allocation in the steady state). */
#ifndef HS_NN_TRAINER_H
#define HS_NN_TRAINER_H

#include <signal.h>

#include "gemm.h"
#include "hs_dev.h"
#include "nn/model.h"
#include "nn/nn_kernels.h"
#include "nn/ref_nn.h"

typedef struct hs_trainer hs_trainer;

typedef struct hs_trainer_opts {
  size_t wg;             /* local size of dimension 0; 0: 64 (clamped to each kernel's limit) */
  hs_gemm_kind gemm;     /* HS_GEMM_AUTO: by device (see gemm.h) */
  int gemm_threads;      /* CBLAS threads; 0: the device's compute units */
  bool profile;          /* time phases (the queue must have profiling on) */
  /* Also compute the gradient of the loss with respect to the batch's
   * input rows X (hs__trainer_input_grad): what learnable per-vertex
   * embeddings train from. Costs one more product per step. */
  bool input_grad;
} hs_trainer_opts;

/* Device time per phase (hs_train_phase, nn_kernels.h), from profiling
 * events (in-order queue: each command is charged from the end of the
 * previous one to its own end). */
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

/* After an upload of sparse rows: the device arrays the first layer reads,
 * offsets (n_src[0] + 1, as uploaded), column ids and values (NULL for
 * binary rows), each sized for the batch's entries. With an hs_nn_sparse
 * whose col is NULL the caller writes the entries there, on the trainer's
 * (in-order) queue, before the step. HS_ERR_STATE without such a batch. */
hs_status hs__trainer_sparse_entries(hs_trainer *t, cl_mem *ptr, cl_mem *col, cl_mem *val);

/* ---- the step, whole or in parts ------------------------------------------
 *
 * hs__trainer_step(t, e, b) is exactly hs__trainer_gradients(t, e, b, true)
 * followed by hs__trainer_apply(t). Between the two the flat gradient
 * (n_params floats in the layout of model.h, the mean loss's gradient) may
 * be read and replaced, e.g. by the sum of every rank's divided by their
 * number: the update then applies what was written. Everything enqueues on
 * the trainer's queue and returns without waiting unless it says so. */

/* Enqueue one training step on the uploaded batch: gradients, then the
 * optimizer update as step t+1. Dropout keys: (model seed, epoch, batch). */
hs_status hs__trainer_step(hs_trainer *t, uint32_t epoch, uint32_t batch);

/* Enqueue only forward, loss and backward; `train` false disables
 * dropout. The layer hook, if set, hears of each layer's gradients. */
hs_status hs__trainer_gradients(hs_trainer *t, uint32_t epoch, uint32_t batch, bool train);

/* Enqueue only the optimizer update (step t+1) from the gradient buffer as
 * it stands. */
hs_status hs__trainer_apply(hs_trainer *t);

/* Read the gradient buffer (waits), or overwrite it with `grads` (the
 * write is enqueued blocking, after the commands before it). */
hs_status hs__trainer_read_grads(hs_trainer *t, float *grads);
hs_status hs__trainer_write_grads(hs_trainer *t, const float *grads);

/* The device buffers of the flat gradient and parameters (n_params floats),
 * for reductions that stay on the device: commands on them go to the
 * trainer's queue (hs__trainer_queue), or wait for its events. */
cl_mem hs__trainer_grad_buffer(const hs_trainer *t);
cl_mem hs__trainer_param_buffer(const hs_trainer *t);
cl_command_queue hs__trainer_queue(const hs_trainer *t);
const hs_model_shape *hs__trainer_shape(const hs_trainer *t);

/* Per-layer gradient readiness, so that combining gradients (an
 * all-reduce per layer, say) overlaps the rest of the backward pass: during
 * hs__trainer_gradients, once per layer, last layer first, right after the
 * commands that complete layer `layer`'s range [off, off + n) of the flat
 * gradient are enqueued, `fn` is called on the enqueueing thread with an
 * event that completes when that range holds its final values. The event is
 * the trainer's: retain it to keep it past the call. Commands the hook
 * enqueues on the trainer's queue run before the rest of the backward
 * pass; anything longer belongs on another queue or thread. NULL removes
 * the hook. */
typedef void (*hs_trainer_layer_fn)(void *user, int layer, size_t off, size_t n, cl_event ready);
void hs__trainer_set_layer_hook(hs_trainer *t, hs_trainer_layer_fn fn, void *user);

/* With opts.input_grad: the gradient of the mean loss with respect to the
 * uploaded batch's input rows X, n_src[0] x in_dim float32 row-major (row =
 * local id, as the features were given), valid once the step's commands
 * complete and until the next step. `rows` receives n_src[0]. Dropout
 * does not touch X, so this is the plain d(loss)/dX. HS_ERR_STATE without
 * the option. */
hs_status hs__trainer_input_grad(hs_trainer *t, cl_mem *dx, size_t *rows);
/* The same, read into `dx` (waits). */
hs_status hs__trainer_read_input_grad(hs_trainer *t, float *dx);

/* ---- layer 0's input transform ----------------------------------------------
 *
 * Every model's layer 0 reads the batch's input rows X (n_src[0] x in_dim)
 * in one of two ways: as the dense matrix the upload wrote (the default,
 * hs__trainer_feat_buffer), or, when a provider is set here, only through
 * the provider's two products with a block W of the layer-0 weights:
 *   mul:    out (n_src[0] x n, rows n apart) = X . W,
 *           W = in_dim x n floats at params + w_off, rows ldw apart;
 *   mul_t:  grads + g_off (in_dim x n, rows ldg apart) = X^T . dout,
 *           dout n_src[0] x n, rows n apart.
 * A provider for sparse rows replaces the dense GEMMs of layer 0 with
 * sparse-dense products; X need not exist densely at all. Models whose
 * layer 0 starts from X . W (GCN, GAT) run it the same way either way;
 * GraphSAGE-mean, which aggregates X before its GEMM on the dense path,
 * multiplies first under a provider (z = X_dst W_self + mean(X W_neigh):
 * the same function, other rounding). Both functions enqueue on the
 * trainer's queue and return without waiting; `user` is theirs. A
 * provider is kept until replaced; NULL restores the dense matrix. */
typedef struct hs_nn_input {
  hs_status (*mul)(void *user, hs_trainer *t, cl_mem params, size_t w_off, size_t ldw, size_t n,
                   cl_mem out);
  hs_status (*mul_t)(void *user, hs_trainer *t, cl_mem dout, size_t n, cl_mem grads,
                     size_t g_off, size_t ldg);
  void *user;
} hs_nn_input;
void hs__trainer_set_input(hs_trainer *t, const hs_nn_input *in);
/* Rows of the uploaded batch's X (n_src[0]); 0 before any upload. */
size_t hs__trainer_input_rows(const hs_trainer *t);
/* Add the statistics of the steps since the last call to `acc`. */
hs_status hs__trainer_drain_stats(hs_trainer *t, hs_train_stats *acc);
/* Copy parameters, moments and the step count into `m` (same shape). */
hs_status hs__trainer_sync_model(hs_trainer *t, hs_model *m);
/* Replace the device state by `m`'s (e.g. after loading a checkpoint). */
hs_status hs__trainer_load_model(hs_trainer *t, const hs_model *m);
/* The optimizer state as arrays of n_params floats (parameters, first and
 * second moments) and the steps taken; waits. */
hs_status hs__trainer_read_state(hs_trainer *t, float *params, float *m, float *v,
                                 uint64_t *step);
/* Replace parameters, first moment and steps (the second moment kept);
 * waits. */
hs_status hs__trainer_write_state(hs_trainer *t, const float *params, const float *m,
                                  uint64_t step);

/* Inference forward (no dropout) on the uploaded batch: logits with bias
 * of the output dst, n_dst x n_classes. Waits. */
hs_status hs__trainer_predict(hs_trainer *t, float *logits);

/* Layer-wise full-neighbour inference over every vertex of `g` on the
 * device (dropout off): logits with bias, n_vertices x n_classes, from
 * `feat` (n_vertices x in_dim). Device memory: the CSR, the features, two
 * n_vertices x hidden activations, the logits and the model's scratch,
 * allocated for the call and released after it. HS_ERR_RANGE when the
 * graph has 2^31 or more edges. Waits. */
hs_status hs__trainer_infer_full(hs_trainer *t, const hs_csr_view *g, const float *feat,
                                 float *logits);

/* The same, stopped after `layers` layers (1..n_layers): every vertex's
 * representation after layer `layers`, n_vertices x dims[layers] (hidden
 * layers: bias and ReLU applied; the last: logits with bias). */
hs_status hs__trainer_infer_layers(hs_trainer *t, const hs_csr_view *g, const float *feat,
                                   int layers, float *out);

/* The same, ended between layers (the device idle before each check) with
 * HS_ERR_INTERRUPTED once *stop is non-zero; stop may be NULL. */
hs_status hs__trainer_infer_layers_stop(hs_trainer *t, const hs_csr_view *g, const float *feat,
                                        int layers, float *out, const volatile sig_atomic_t *stop);

/* Device time per phase since the last call (needs opts.profile). Waits. */
hs_status hs__trainer_times(hs_trainer *t, hs_train_times *out);

#endif
