/* State of the distributed step, shared by dist.c (allreduce and local
 * modes, the common parts) and ps.c (the parameter server). */
#ifndef HS_DIST_INT_H
#define HS_DIST_INT_H

#include "dist/hs_dist.h"

/* Tags: the parameter server's two, then the all-reduce engines'. */
enum { TAG_PS_PUSH = 1, TAG_PS_REPLY = 2, TAG_PS_STATE = 3, TAG_AR_BASE = 16 };

/* A piece of the parameter vector that is encoded as one unit: a tensor's
 * intersection with a server's shard. */
typedef struct ps_unit {
  size_t off, n;
  bool compressible; /* its tensor has at least compress_min values */
} ps_unit;

typedef struct hs_ps hs_ps;

struct hs_dist {
  hs_comm *c;
  hs_dist_config cfg;
  int rank, size, workers;
  bool server;
  size_t n;
  hs_dist_tensor *t;
  int nt;
  hs_optim_cfg optim;
  hs_ar *ar;     /* allreduce: the gradients; local: parameters or changes */
  float *vec;    /* n: gradients, parameters or changes */
  float *anchor; /* local: the parameters of the last average */
  int64_t local_count; /* local: seeds trained since the last average */
  bool local_fresh;    /* local: the last step averaged */
  bool stop_pending;   /* local: a stop request waiting for the next average */
  /* allreduce, 1-bit, Adam: 1-bit Adam. Its state after the warm-up,
   * the same on every rank: parameters, shared first moment, the frozen
   * denominator sqrt(v / (1 - b2^t_freeze)) + eps (v and its bias
   * correction as they were when the warm-up ended, floored: dist.c),
   * optimizer steps.
   * Loaded from the trainer at the first compressed step of this process
   * (after a resume too). */
  bool oba;
  int64_t warmup; /* compress_warmup resolved */
  float *op, *om, *oden;
  bool oba_loaded;
  uint64_t ot;
  /* ps (synchronous, full quorum), 1-bit, Adam: 1-bit Adam with the
   * servers as its second phase (ps.c freeze). */
  bool ps_oba;
  hs_ps *ps;
  hs_dist_stats st;
  hs_comm_counters c0; /* counters at the last stats_take */
};

/* Whether step `step` travels compressed (the world has more than one
 * rank, 1-bit is on and the warm-up is over). */
static inline bool hs__dist_compress_now(const hs_dist *d, int64_t step) {
  return d->size > 1 && d->cfg.compress == HS_COMPRESS_1BIT && step >= d->warmup;
}

/* 1-bit Adam's floor on each frozen denominator, as a fraction of its
 * tensor's mean (dist.c). */
#define HS_ONEBIT_ADAM_FLOOR 0.1

/* One tensor's (or a tensor's part's) frozen denominators: x holds v on
 * entry and max(sqrt(v / (1 - b2^t_freeze)), floor) + eps on return, kf
 * the coefficients of step t_freeze, the floor HS_ONEBIT_ADAM_FLOOR x the
 * range's mean of the root (dist.c). */
struct hs_optim_coef;
void hs__onebit_adam_floor(const struct hs_optim_coef *kf, float *x, size_t n);

/* ps.c */
hs_status hs__ps_create(hs_dist *d, const hs_dist_model *m);
void hs__ps_destroy(hs_ps *p);
hs_status hs__ps_step(hs_dist *d, const hs_dist_trainer *t, int64_t step, int64_t count,
                      bool stop_request, bool *stop_after);
hs_status hs__ps_worker_end(hs_dist *d, const hs_dist_trainer *t, int64_t steps_done,
                            bool interrupted);
hs_status hs__ps_serve(hs_dist *d, int64_t *steps_done, bool *interrupted);
hs_status hs__ps_gather_state(hs_dist *d, float *params, float *m, float *v, uint64_t *step);
hs_status hs__ps_scatter_state(hs_dist *d, const hs_dist_model *m);
size_t hs__ps_state_bytes(const hs_dist *d);
void hs__ps_buffers(const hs_dist *d, size_t *pushes, size_t *answers);
hs_status hs__ps_save_state(hs_dist *d, uint8_t *buf);
hs_status hs__ps_load_state(hs_dist *d, const uint8_t *buf, size_t len);

#endif
