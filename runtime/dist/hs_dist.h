/* The distributed step: how a worker's gradients or parameters are
 * combined with the other ranks' in each mode (hetsage/dist.h), and the
 * parameter server's loop. It drives a model through hs_dist_trainer, so
 * the session's device trainer and the tests' plain-C models plug in
 * alike.
 *
 * Roles: with HS_SYNC_PS the last `servers` ranks are servers and the
 * others workers (worker index = rank); otherwise every rank is a worker. */
#ifndef HS_DIST_H
#define HS_DIST_H

#include "dist/hs_allreduce.h"
#include "dist/hs_comm.h"
#include "hetsage/dist.h"
#include "nn/model.h"

/* What the distributed step needs from a model. */
typedef struct hs_dist_trainer {
  void *ctx;
  /* Start this step's forward and backward pass; the gradients are to
   * land in `grads` (n_params floats), tensor by tensor. */
  hs_status (*grads_begin)(void *ctx, float *grads);
  /* Whether tensor i's gradients are in `grads` yet (without waiting
   * long: the step polls tensors in readiness order and communicates in
   * between). */
  hs_status (*grads_poll)(void *ctx, int tensor, bool *ready);
  /* One optimizer update with these gradients. */
  hs_status (*apply)(void *ctx, const float *grads);
  /* A whole local step: gradients and the optimizer update. */
  hs_status (*step)(void *ctx);
  hs_status (*get_params)(void *ctx, float *params);
  hs_status (*set_params)(void *ctx, const float *params);
  /* 1-bit Adam only (allreduce, 1-bit, Adam; NULL elsewhere): the
   * optimizer's state, parameters, first and second moments (n_params
   * floats each) and the optimizer steps taken ... */
  hs_status (*get_state)(void *ctx, float *params, float *m, float *v, uint64_t *step);
  /* ... and its replacement after a compressed step: parameters, first
   * moment and steps (the second moment stays as it is: frozen). */
  hs_status (*set_state)(void *ctx, const float *params, const float *m, uint64_t step);
} hs_dist_trainer;

/* The model as the distributed step sees it. */
typedef struct hs_dist_model {
  size_t n_params;
  const hs_dist_tensor *tensors; /* readiness order (gradients of the
                                    output layer first); copied */
  int n_tensors;
  hs_optim_cfg optim;            /* the servers' optimizer */
  /* Initial state (borrowed for hs__dist_create / hs__dist_set_state):
   * parameters, moments (NULL: zeros), optimizer steps taken. */
  const float *params, *m, *v;
  uint64_t step;
} hs_dist_model;

/* Per-epoch figures of this rank. */
typedef struct hs_dist_stats {
  int64_t steps;
  double compute_s;  /* computing gradients or local steps */
  double comm_s;     /* exchanging (waiting included) */
  uint64_t bytes_sent, bytes_recv;
  int64_t compressed_steps;
  int64_t late_gradients; /* ps, partial quorum: applied a step late */
  int64_t max_staleness;  /* ps async: largest lead a worker was allowed */
  int64_t updates;        /* ps servers: optimizer updates applied */
} hs_dist_stats;

typedef struct hs_dist hs_dist;

/* A caller's configuration (NULL: the defaults) as this library's full
 * struct: fields the caller's struct_size lacks keep their defaults. */
hs_status hs__dist_config_take(const hs_dist_config *user, hs_dist_config *out);

/* `c` is borrowed and must outlive the object. Checks the configuration
 * against the world (servers < size, quorum <= workers, ...). */
hs_status hs__dist_create(hs_comm *c, const hs_dist_config *cfg, const hs_dist_model *m,
                          hs_dist **out);
void hs__dist_destroy(hs_dist *d);

bool hs__dist_is_server(const hs_dist *d);
int hs__dist_workers(const hs_dist *d);
hs_comm *hs__dist_comm(const hs_dist *d);

/* One training step of a worker. `step` counts steps from the start of
 * training (epoch * steps per epoch + batch): warm-up and the averaging
 * period count it. `count` is the seeds trained in this step (0: none: the
 * worker computes nothing and contributes nothing). `stop_request`: this
 * rank wants to stop. *stop_after: every worker stops after this step
 * (the same step on every worker; in local mode stops are agreed at
 * averages, in ps by the first server). */
hs_status hs__dist_step(hs_dist *d, const hs_dist_trainer *t, int64_t step, int64_t count,
                        bool stop_request, bool *stop_after);

/* End of an epoch (or of the steps before a stop) on a worker: local mode
 * averages the parameters (unless the last step just did), ps pulls the
 * final parameters from the servers; afterwards every worker holds the
 * same parameters. `steps_done` is the epoch's steps this worker trained
 * and `interrupted` whether it stopped early (the servers learn both). */
hs_status hs__dist_epoch_end(hs_dist *d, const hs_dist_trainer *t, int64_t steps_done,
                             bool interrupted);

/* A server's epoch: serve the workers from their first push to their
 * epoch end. *steps_done and *interrupted: what the workers reported. */
hs_status hs__dist_serve(hs_dist *d, int64_t *steps_done, bool *interrupted);

/* Asynchronous parameter server: how many updates an answer looks ahead.
 * `pending` pushes wait in the running sum (the answered worker's own
 * among them) and each of the `others` workers still in the epoch is
 * expected to push once before the answered worker pushes again: every
 * `quorum` of those pushes is an update applied before that worker's next
 * gradient arrives, so the gradient is best computed that many updates
 * ahead. At most `staleness`; 0 for bad arguments (quorum < 1). */
int64_t hs__ps_ahead(int64_t pending, int others, int quorum, int staleness);

/* The parameters `h` updates ahead: n values of p advanced by h optimizer
 * updates of cfg's kind (coefficients of steps t + 1 .. t + h), each with
 * gradient g, on copies of the moments m, v (read only; v unused by SGD).
 * out, m2, v2: n floats each (out holds the result; m2, v2 scratch). With g
 * the gradient the next update applies, h = 1 gives exactly the
 * parameters after that update; h = 0 copies p. */
void hs__ps_look_ahead(const hs_optim_cfg *cfg, uint64_t t, int64_t h, size_t n, const float *p,
                       const float *m, const float *v, const float *g, float *out, float *m2,
                       float *v2);

/* The figures since the last call (then reset). */
void hs__dist_stats_take(hs_dist *d, hs_dist_stats *out);

/* ps: the bytes of this rank's message buffers for the pushes (a
 * worker's push buffer, a server's receive buffer) and for the answers (a
 * worker's receive buffer, a server's send buffer); 0 and 0 in the other
 * modes. */
void hs__dist_ps_buffers(const hs_dist *d, size_t *pushes, size_t *answers);

/* ps: the full model state (parameters, moments, step) gathered from the
 * servers onto worker 0 (collective over every rank; out is used on
 * worker 0 only, n_params floats each, m/v may be NULL). */
hs_status hs__dist_gather_state(hs_dist *d, float *params, float *m, float *v, uint64_t *step);
/* ps: replace the servers' shards (after a checkpoint was loaded;
 * collective, the state taken from worker 0). */
hs_status hs__dist_scatter_state(hs_dist *d, const hs_dist_model *m);

/* What hs__dist_save_state writes: this rank's state that a checkpoint
 * needs to resume exactly (error feedback residuals, local-mode anchor,
 * a server's views of the workers' parameters), as one blob. */
size_t hs__dist_state_bytes(const hs_dist *d);
hs_status hs__dist_save_state(hs_dist *d, uint8_t *buf, size_t len);
hs_status hs__dist_load_state(hs_dist *d, const uint8_t *buf, size_t len);

#endif
