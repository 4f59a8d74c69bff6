/* The trainer's state, shared by trainer.c (the step) and infer_dev.c
 * (layer-wise inference), which use the same kernels and buffers. */
#ifndef HS_NN_TRAINER_INTERNAL_H
#define HS_NN_TRAINER_INTERNAL_H

#include "hs_launch.h"
#include "nn/sparse_first.h"
#include "nn/trainer.h"

enum {
  K_AGG_FWD,
  K_AGG_BWD,
  K_TR_COUNT,
  K_SCAN_SUMS,
  K_SCAN_OFFSETS,
  K_SCAN_APPLY,
  K_TR_FILL,
  K_TR_SORT,
  K_BIAS_ACT,
  K_COLSUM_PART,
  K_COLSUM_FINAL,
  K_SOFTMAX_CE,
  K_LOSS_REDUCE,
  K_ADAM,
  K_SGD,
  K_COUNT
};

enum {
  SCAN_CHUNK = 256, /* HS_SCAN_CHUNK in train_agg.cl */
  VW = 8,           /* features per work-item of the vectorised kernels */
  DEFAULT_WG = 64,
};
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

typedef struct dbuf {
  cl_mem m;
  size_t cap;
} dbuf;

struct hs_trainer {
  const hs_ctx *ctx;
  hs_dev dev;
  cl_command_queue q;
  hs_trainer_opts opts;
  hs_model_cfg cfg;
  hs_model_shape shape;
  uint64_t step;

  cl_program program;
  cl_kernel k[K_COUNT];
  size_t wg[K_COUNT]; /* opts.wg clamped to each kernel's limit */
  hs_gemm *gemm;

  dbuf params, grads, mom1, mom2;

  /* The uploaded batch. */
  bool uploaded;
  int32_t n_dst[HS_NN_MAX_LAYERS], n_src[HS_NN_MAX_LAYERS], n_edges[HS_NN_MAX_LAYERS];
  bool transposed[HS_NN_MAX_LAYERS];
  bool has_labels;
  dbuf row_ptr[HS_NN_MAX_LAYERS], col[HS_NN_MAX_LAYERS];
  /* The block arrays the step reads: row_ptr/col above after a host
   * upload, the caller's buffers after hs__trainer_upload_dev. */
  cl_mem blk_rp[HS_NN_MAX_LAYERS], blk_col[HS_NN_MAX_LAYERS];
  dbuf t_ptr[HS_NN_MAX_LAYERS], t_dst[HS_NN_MAX_LAYERS];
  dbuf feat, labels;

  /* Sparse input rows of the uploaded batch (nn/sparse_first.h): CSR
   * arrays, the n_src x d_out scratch (H forward, G backward), and the
   * rows' column lists for the weight gradient. The program is built on
   * the first sparse batch. */
  bool x_sparse, x_has_val, x_cols; /* x_cols: column lists from the host */
  int32_t x_nnz;
  hs_sparse_order x_order;
  cl_program sp_program;
  cl_kernel sk[SK_COUNT];
  size_t swg[SK_COUNT];
  dbuf x_ptr, x_col, x_val, x_tmp, x_tptr, x_tent, x_erow, x_cursor, x_sums, x_tmid, x_tval;

  /* Activations and gradients: act[l] is the input of layer l >= 1. */
  dbuf cat[HS_NN_MAX_LAYERS], act[HS_NN_MAX_LAYERS], dz[HS_NN_MAX_LAYERS];
  dbuf logits, dcat, cursor, scan_sums, colsum_part, loss_rows, correct_rows;

  /* Statistics ring, read lazily. */
  dbuf stat_loss, stat_correct;
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
hs_status hs__trainer_reserve(hs_trainer *t, dbuf *b, size_t count, size_t elem);
void hs__trainer_drop(dbuf *b);
/* Set arguments and launch kernel `id` over (g0) or (g0, g1), charged to
 * phase `ph` when profiling. */
hs_status hs__trainer_run(hs_trainer *t, hs_train_phase ph, int id, size_t g0, size_t g1,
                          const hs_karg *args, int n_args);
/* The same for any kernel `k` of the trainer's context, with local size
 * `wg` along dimension 0; `name` labels its profiling time. */
hs_status hs__trainer_run_k(hs_trainer *t, hs_train_phase ph, const char *name, cl_kernel k,
                            size_t wg, size_t g0, size_t g1, const hs_karg *args, int n_args);
/* The transposed block l (t_ptr[l], t_dst[l]) on the device. */
hs_status hs__trainer_transpose(hs_trainer *t, int l);

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

#endif
