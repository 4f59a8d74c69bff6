/* The trainer's state, shared by trainer.c (the step), infer_dev.c
 * (layer-wise inference) and the models' device passes, which use the same
 * kernels and buffers. */
#ifndef HS_NN_TRAINER_INTERNAL_H
#define HS_NN_TRAINER_INTERNAL_H

#include "hs_launch.h"
#include "nn/model_ops.h"
#include "nn/sparse_first.h"
#include "nn/trainer.h"

enum { STATS_RING = 256, MAX_SPANS = 512 };

/* Kernels of the sparse first layer (cl_kernels/train_sparse.cl). */
enum {
  SK_MM,
  SK_FWD_MF,
  SK_FWD_AF,
  SK_GSUM,
  SK_ENTRY_ROWS,
  SK_TR_FILL,
  SK_WGRAD,
  SK_WGRAD_COLS,
  SK_COUNT
};

/* A device buffer that grows to the largest size asked of it. */
typedef struct hs_dbuf {
  cl_mem m;
  size_t cap;
} hs_dbuf;

/* Buffers a model keeps per layer and per batch (its own slot numbers). */
#define HS_NN_LAYER_SLOTS 6
#define HS_NN_BATCH_SLOTS 12

struct hs_trainer {
  const hs_ctx *ctx;
  hs_dev dev;
  cl_command_queue q;
  hs_trainer_opts opts;
  hs_model_cfg cfg;
  hs_model_shape shape;
  const hs_model_ops *ops;
  uint64_t step;

  hs_kset ks; /* the model's training program and kernels */
  hs_gemm *gemm;

  hs_dbuf params, grads, mom1, mom2;

  /* The uploaded batch. */
  bool uploaded;
  int32_t n_dst[HS_NN_MAX_LAYERS], n_src[HS_NN_MAX_LAYERS], n_edges[HS_NN_MAX_LAYERS];
  bool has_labels;
  hs_dbuf row_ptr[HS_NN_MAX_LAYERS], col[HS_NN_MAX_LAYERS];
  /* The block arrays the step reads: row_ptr/col above after a host
   * upload, the caller's buffers after hs__trainer_upload_dev. */
  cl_mem blk_rp[HS_NN_MAX_LAYERS], blk_col[HS_NN_MAX_LAYERS];
  /* Transposed blocks (hs__trainer_transpose), made once per batch on first
   * use; the model reserves t_ptr/t_list for the layers it transposes. */
  bool transposed[HS_NN_MAX_LAYERS];
  hs_dbuf t_ptr[HS_NN_MAX_LAYERS], t_list[HS_NN_MAX_LAYERS];
  hs_dbuf cursor, scan_sums; /* the transposes' scratch, sized for every layer */
  hs_dbuf feat, labels;

  /* Sparse input rows of the uploaded batch (nn/sparse_first.h): CSR
   * arrays, the n_src x d_out scratch (H forward, G backward), and the
   * rows' column lists for the weight gradient. The program is built on
   * the first sparse batch; only GraphSAGE's layer 0 reads them (other
   * models refuse sparse rows). */
  bool x_sparse, x_has_val, x_cols; /* x_cols: column lists from the host */
  int32_t x_nnz;
  hs_sparse_order x_order;
  cl_program sp_program;
  cl_kernel sk[SK_COUNT];
  size_t swg[SK_COUNT];
  hs_dbuf x_ptr, x_col, x_val, x_tmp, x_tptr, x_tent, x_erow, x_cursor, x_sums, x_tmid, x_tval;

  /* Shared activations and gradients: act[l] is the input of layer l >= 1
   * (n_src[l] x dims[l], the output of layer l-1 after bias, ReLU and
   * dropout); dz[l] the gradient at layer l's output before its bias
   * (n_dst[l] x dims[l+1]; dz[L-1] is dout, written by the loss); logits
   * the last layer's output (n_seeds x n_classes, before the bias). */
  hs_dbuf act[HS_NN_MAX_LAYERS], dz[HS_NN_MAX_LAYERS];
  hs_dbuf logits, loss_rows, correct_rows;
  hs_dbuf colsum_part; /* bias gradients' partial sums: every layer's, at least */
  hs_dbuf dx;          /* input gradients (opts.input_grad): n_src[0] x in_dim */

  /* The model's own buffers: per layer, and per batch. */
  hs_dbuf mb[HS_NN_MAX_LAYERS][HS_NN_LAYER_SLOTS];
  hs_dbuf mw[HS_NN_BATCH_SLOTS];

  /* Seams for other modules (trainer.h). */
  hs_trainer_layer_fn layer_done;
  void *layer_done_user;
  hs_nn_input input; /* mul NULL: the dense matrix in `feat` */

  /* Statistics ring, read lazily. */
  hs_dbuf stat_loss, stat_correct;
  int32_t ring_seeds[STATS_RING];
  int ring_first, ring_pending;
  hs_train_stats overflow; /* drained early when the ring filled */

  /* Profiling spans: (marker before, last event) per phase. */
  cl_event span_mark[MAX_SPANS], span_end[MAX_SPANS];
  hs_train_phase span_phase[MAX_SPANS];
  const char *span_name[MAX_SPANS];
  int n_kernel_times;
  hs_train_kernel_time kernel_times[HS_TRAIN_MAX_KERNELS];
  int n_spans;
  double phase_s[HS_PHASE_COUNT_];
  int timed_steps;
};

/* Grow `b` to hold count x elem bytes (contents lost when it grows). */
hs_status hs__trainer_reserve(hs_trainer *t, hs_dbuf *b, size_t count, size_t elem);
void hs__trainer_drop(hs_dbuf *b);
/* Launch kernel `k` of the trainer's context, outside the model's kernel
 * set (the sparse first layer's), as hs__kset_run launches: local size
 * `wg` along dimension 0, `name` labelling its profiling time. */
hs_status hs__trainer_run_k(hs_trainer *t, hs_train_phase ph, const char *name, cl_kernel k,
                            size_t wg, size_t g0, size_t g1, const hs_karg *args, int n_args);

/* ---- the sparse first layer (sparse_first.c) ---- */

/* Copy sparse rows `x` (n_src of block 0, whose shapes the upload has
 * recorded) to the device, grow the layer's buffers, and fix the order the
 * step takes; builds the program on first use. Blocking. */
hs_status hs__sparse_first_upload(hs_trainer *t, const hs_nn_sparse *x);
/* Layer 0's pre-activation into `out` (n_dst x d_out). */
hs_status hs__sparse_first_forward(hs_trainer *t, cl_mem out);
/* Layer 0's weight gradient into grads (dz[0] computed). */
hs_status hs__sparse_first_wgrad(hs_trainer *t);
void hs__sparse_first_release(hs_trainer *t);
hs_status hs__trainer_gemm(hs_trainer *t, const hs_gemm_op *op);

/* Transpose block l of the uploaded batch into t_ptr[l] / t_list[l] unless
 * done already for this batch; `edge_ids` as hs__nn_transpose (a model
 * uses one kind per layer). */
hs_status hs__trainer_transpose(hs_trainer *t, int l, bool edge_ids);

/* The backward pass finished layer l's gradient range: tells the layer
 * hook (if any) with an event after the commands enqueued so far. */
hs_status hs__trainer_layer_done(hs_trainer *t, int l);

/* ---- layer 0's input transform (see hs_nn_input in trainer.h) ----------
 * out (n_src[0] x n) = X . W, W = dims[0] x n at params + w_off, rows ldw
 * apart; and grads + g_off (dims[0] x n, rows ldg apart) = X^T . dout. */
hs_status hs__nn_input_mul(hs_trainer *t, size_t w_off, size_t ldw, size_t n, cl_mem out);
hs_status hs__nn_input_mul_t(hs_trainer *t, cl_mem dout, size_t n, size_t g_off, size_t ldg);

#endif
