/* Training kernels as typed calls.
 *
 * A model's training program is the shared training sources (block
 * transposes, element-wise kernels, loss, optimizers) followed by the
 * model's own, registered in the program registry (devices/programs.c). A
 * kernel set holds one
 * built program on one device queue and its kernels: the shared ones at the
 * ids below, the model's own from HS_K_MODEL on, in the order of the
 * table's kernel names.
 *
 * Every kernel has exactly one launcher, hs__k_<name>(), which sets its
 * arguments and sizes its launch: the trainer, layer-wise inference and
 * bring-up all call these, so an argument list or a global size is written
 * once. A model's own launchers live beside its table. Launchers enqueue
 * and return; they never wait. Constants that the host and the kernels
 * share are in cl_kernels/hs_train.h. */
#ifndef HS_NN_KERNELS_H
#define HS_NN_KERNELS_H

#include <stdbool.h>

#include "hs_dev.h"
#include "hs_launch.h"
#include "nn/nn_rng.h"

/* Where device time goes, from profiling events. */
typedef enum hs_train_phase {
  HS_PHASE_GEMM = 0,
  HS_PHASE_AGG,   /* aggregation forward/backward and block transposes */
  HS_PHASE_ELEM,  /* bias/ReLU/dropout, bias gradients, loss */
  HS_PHASE_OPTIM,
  HS_PHASE_COUNT_
} hs_train_phase;

/* Kernels of the shared sources. */
enum {
  HS_K_TR_COUNT,
  HS_K_SCAN_SUMS,
  HS_K_SCAN_OFFSETS,
  HS_K_SCAN_APPLY,
  HS_K_TR_FILL,
  HS_K_TR_FILL_EID,
  HS_K_EDGE_DST,
  HS_K_TR_SORT,
  HS_K_BIAS_ACT,
  HS_K_ACT_BWD,
  HS_K_COLSUM_PART,
  HS_K_COLSUM_FINAL,
  HS_K_SOFTMAX_CE,
  HS_K_LOSS_REDUCE,
  HS_K_ADAM,
  HS_K_SGD,
  HS_K_MODEL, /* a model's own kernels start here */
  HS_K_MAX = HS_K_MODEL + 16,
};

/* A model's training program: its entry in the program registry
 * (devices/hs_programs.h, which lists its sources: the shared training
 * sources, then the model's own) and the names of the model's own kernels,
 * in the order of their ids (HS_K_MODEL + i). */
typedef struct hs_train_program {
  int prog; /* hs_prog */
  const char *const *kernels;
  int n_kernels;
} hs_train_program;

typedef struct hs_kset {
  cl_command_queue q; /* in order; kept, not owned */
  cl_program program;
  cl_kernel k[HS_K_MAX];
  size_t wg[HS_K_MAX]; /* the requested local size clamped to each kernel's limit */
  const char *names[HS_K_MAX];
  int n_kernels;
  /* Profiling (optional): `open` enqueues a marker before a launch,
   * `close` receives it with the launch's event, the phase and the
   * kernel's name. */
  hs_status (*span_open)(void *user, cl_event *mark);
  void (*span_close)(void *user, hs_train_phase ph, const char *name, cl_event mark,
                     cl_event end);
  void *span_user;
} hs_kset;

/* Get the program `p` on `dev` from the registry (prebuilt, cached or
 * built) and create its kernels, each with local size `wg` (0: 64)
 * clamped to its limit. */
hs_status hs__kset_create(const hs_ctx *ctx, const hs_dev *dev, cl_command_queue q,
                          const hs_train_program *p, size_t wg, hs_kset *out);
void hs__kset_release(hs_kset *ks);

/* Set arguments and launch kernel `id` over (g0) or (g0, g1): the one
 * place every launcher goes through. A narrow first dimension (few feature
 * vectors per row) hands the rest of the work-group to the second. */
hs_status hs__kset_run(hs_kset *ks, hs_train_phase ph, int id, size_t g0, size_t g1,
                       const hs_karg *args, int n_args);
/* The same launch for a kernel outside the set (on the set's queue, with
 * its profiling), local size `wg`, labelled `name`. */
hs_status hs__kset_launch(hs_kset *ks, hs_train_phase ph, const char *name, cl_kernel k,
                          size_t wg, size_t g0, size_t g1, const hs_karg *args, int n_args);

/* Work-items over a row of d features: ceil(d / HS_VW). */
static inline size_t hs__vecs(size_t d) { return (d + HS_VW - 1) / HS_VW; }
/* Chunks of the fixed-shape scan over n elements. */
static inline size_t hs__scan_chunks(size_t n) { return (n + HS_SCAN_CHUNK - 1) / HS_SCAN_CHUNK; }
/* Chunks of the two-stage column sums over n rows. */
static inline size_t hs__colsum_chunks(size_t n) { return (n + HS_COLSUM_ROWS - 1) / HS_COLSUM_ROWS; }

/* ---- block transposes (train_block.cl) ------------------------------------ */

hs_status hs__k_tr_count(hs_kset *ks, cl_mem col, cl_int n_edges, cl_mem counts);
hs_status hs__k_scan_sums(hs_kset *ks, cl_mem x, cl_int n, cl_mem sums);
hs_status hs__k_scan_offsets(hs_kset *ks, cl_mem sums, cl_int n, cl_mem ptr);
hs_status hs__k_scan_apply(hs_kset *ks, cl_mem x, cl_int n, cl_mem sums, cl_mem ptr);
hs_status hs__k_tr_fill(hs_kset *ks, cl_mem row_ptr, cl_mem col, cl_int n_dst, cl_mem t_ptr,
                        cl_mem cursor, cl_mem t_dst);
hs_status hs__k_tr_fill_eid(hs_kset *ks, cl_mem row_ptr, cl_mem col, cl_int n_dst, cl_mem t_ptr,
                            cl_mem cursor, cl_mem t_eid);
hs_status hs__k_edge_dst(hs_kset *ks, cl_mem row_ptr, cl_int n_dst, cl_mem edst);
hs_status hs__k_tr_sort(hs_kset *ks, cl_mem t_ptr, cl_int n_src, cl_mem t_list);

/* The scratch and outputs of one transpose. */
typedef struct hs_tr_bufs {
  cl_mem cursor; /* n_src ints */
  cl_mem sums;   /* hs__scan_chunks(n_src) ints */
  cl_mem t_ptr;  /* n_src + 1 */
  cl_mem t_list; /* n_edges: dst ids, or edge ids with `edge_ids` */
} hs_tr_bufs;

/* The transposed block (hs__nn_block_transpose) by the counting sort:
 * count, scan, fill, sort. With `edge_ids` the lists hold edge positions
 * (increasing, so in increasing dst order too) instead of dst ids. With
 * `counts_only` it stops after the scan: t_ptr alone (each source's number
 * of edges). */
hs_status hs__nn_transpose(hs_kset *ks, cl_mem row_ptr, cl_mem col, cl_int n_dst, cl_int n_src,
                           cl_int n_edges, const hs_tr_bufs *b, bool edge_ids, bool counts_only);

/* ---- element-wise, column sums, loss (train_elem.cl) ------------------------ */

/* In place on z (n x d): + bias (params + bias_off), ReLU when `relu`,
 * inverted dropout with keep-scale `scale` when p > 0, keyed by (seed,
 * epoch, batch, layer, element). */
hs_status hs__k_bias_act(hs_kset *ks, cl_mem z, cl_int n, cl_int d, cl_mem params,
                         cl_ulong bias_off, cl_int relu, float p, float scale, cl_ulong seed,
                         cl_uint epoch, cl_uint batch, cl_uint layer);
/* In place on dh (`total` floats): dh * scale where h > 0, else 0. */
hs_status hs__k_act_bwd(hs_kset *ks, cl_mem h, cl_ulong total, float scale, cl_mem dh);
hs_status hs__k_colsum_part(hs_kset *ks, cl_mem x, cl_int n, cl_int d, cl_mem part);
hs_status hs__k_colsum_final(hs_kset *ks, cl_mem part, cl_int n_chunks, cl_int d, cl_mem out,
                             cl_ulong out_off);
/* out[out_off + k] = column k's sum over the n rows of x (n x d), in the
 * fixed association; part holds hs__colsum_chunks(n) x d floats. */
hs_status hs__nn_colsum(hs_kset *ks, cl_mem x, cl_int n, cl_int d, cl_mem part, cl_mem out,
                        cl_ulong out_off);
hs_status hs__k_softmax_ce(hs_kset *ks, cl_mem z, cl_mem params, cl_ulong bias_off, cl_mem labels,
                           cl_int n, cl_int c, float inv_n, cl_mem dz, cl_mem loss_rows,
                           cl_mem correct_rows);
hs_status hs__k_loss_reduce(hs_kset *ks, cl_mem loss_rows, cl_mem correct_rows, cl_int n,
                            cl_mem loss_out, cl_mem correct_out, cl_int slot);

/* ---- optimizers (train_optim.cl) ---------------------------------------------- */

/* One update of the n parameters with the step's coefficients (model.h
 * hs_optim_coef): Adam uses m and v, SGD m only. */
typedef struct hs_optim_coef hs_optim_coef;
hs_status hs__k_adam(hs_kset *ks, cl_mem p, cl_mem g, cl_mem m, cl_mem v, cl_ulong n,
                     const hs_optim_coef *c);
hs_status hs__k_sgd(hs_kset *ks, cl_mem p, cl_mem g, cl_mem m, cl_ulong n, const hs_optim_coef *c);

#endif
