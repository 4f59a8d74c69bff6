/* The distributed step (hs_dist.h): configuration, the allreduce and
 * local modes, statistics and the state a checkpoint keeps. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dist/dist_int.h"

const char *hs_sync_mode_name(hs_sync_mode m) {
  switch (m) {
    case HS_SYNC_ALLREDUCE: return "allreduce";
    case HS_SYNC_PS: return "ps";
    case HS_SYNC_LOCAL: return "local";
    default: return "unknown";
  }
}

const char *hs_compress_name(hs_compress c) {
  switch (c) {
    case HS_COMPRESS_NONE: return "none";
    case HS_COMPRESS_1BIT: return "1bit";
    default: return "unknown";
  }
}

static void defaults(hs_dist_config *cfg) {
  memset(cfg, 0, sizeof *cfg);
  cfg->struct_size = sizeof *cfg;
  cfg->sync = HS_SYNC_ALLREDUCE;
  cfg->servers = 1;
  cfg->period = 8;
  cfg->compress = HS_COMPRESS_NONE;
  cfg->compress_warmup = HS_COMPRESS_WARMUP_AUTO;
  cfg->compress_min = 1024;
  cfg->bucket_bytes = (size_t)1 << 20;
  cfg->timeout_s = 60;
  cfg->start_timeout_s = 900;
}

void hs_dist_config_init_sized(hs_dist_config *user, size_t struct_size) {
  hs_dist_config full;
  defaults(&full);
  hs__sized_init(user, struct_size, &full, sizeof full);
}

hs_status hs__dist_config_take(const hs_dist_config *user, hs_dist_config *out) {
  defaults(out);
  return user ? hs__sized_in(out, sizeof *out, user, "hs_dist_config") : HS_OK;
}

static hs_status check_cfg(const hs_dist_config *cfg, int size) {
  if ((unsigned)cfg->sync > HS_SYNC_LOCAL)
    return hs__fail(HS_ERR_INVALID_ARG, "sync mode %d: expected allreduce, ps or local",
                    (int)cfg->sync);
  if ((unsigned)cfg->compress > HS_COMPRESS_1BIT)
    return hs__fail(HS_ERR_INVALID_ARG, "compression %d: expected none or 1bit",
                    (int)cfg->compress);
  if ((cfg->compress_warmup < 0 && cfg->compress_warmup != HS_COMPRESS_WARMUP_AUTO) ||
      cfg->compress_min < 0)
    return hs__fail(HS_ERR_INVALID_ARG, "compression warm-up %lld and minimum %lld: must be >= 0 "
                    "(the warm-up may also be %d, automatic)",
                    (long long)cfg->compress_warmup, (long long)cfg->compress_min,
                    HS_COMPRESS_WARMUP_AUTO);
  if (!(cfg->timeout_s > 0) || !(cfg->start_timeout_s > 0))
    return hs__fail(HS_ERR_INVALID_ARG, "timeouts %g s and %g s: must be > 0", cfg->timeout_s,
                    cfg->start_timeout_s);
  if (cfg->sync == HS_SYNC_LOCAL && cfg->period < 1)
    return hs__fail(HS_ERR_INVALID_ARG, "averaging period %d: must be >= 1", cfg->period);
  if (cfg->sync != HS_SYNC_PS) return HS_OK;
  if (cfg->servers < 1 || cfg->servers >= size)
    return hs__fail(HS_ERR_INVALID_ARG, "%d parameter servers in a world of %d ranks: the "
                    "parameter server needs 1 .. %d servers and at least one worker",
                    cfg->servers, size, size - 1);
  int workers = size - cfg->servers;
  if (cfg->staleness < 0)
    return hs__fail(HS_ERR_INVALID_ARG, "staleness %d: must be >= 0", cfg->staleness);
  if (cfg->quorum < 0 || cfg->quorum > workers)
    return hs__fail(HS_ERR_INVALID_ARG, "quorum %d: must be 0 (all) .. %d workers", cfg->quorum,
                    workers);
  return HS_OK;
}

void hs__dist_destroy(hs_dist *d) {
  if (!d) return;
  hs__ar_destroy(d->ar);
  hs__ps_destroy(d->ps);
  free(d->t);
  free(d->vec);
  free(d->anchor);
  free(d->op);
  free(d->om);
  free(d->oden);
  free(d);
}

hs_status hs__dist_create(hs_comm *c, const hs_dist_config *cfg, const hs_dist_model *m,
                          hs_dist **out) {
  *out = NULL;
  hs_status st = check_cfg(cfg, hs__comm_size(c));
  if (st != HS_OK) return st;
  if (m->n_params == 0 || m->n_tensors < 1 || !m->params)
    return hs__fail(HS_ERR_INVALID_ARG, "distributed model without parameters");
  bool adam_1bit = cfg->compress == HS_COMPRESS_1BIT && m->optim.kind == HS_OPTIM_ADAM;
  bool onebit_adam = adam_1bit && cfg->sync == HS_SYNC_ALLREDUCE;
  /* The synchronous parameter server with a full quorum runs it with the
   * servers as the second phase (ps.c freeze); asynchronous or partial
   * quorum servers keep compressing gradients. */
  bool ps_oba = adam_1bit && cfg->sync == HS_SYNC_PS && cfg->staleness == 0 &&
                (cfg->quorum == 0 || cfg->quorum == hs__comm_size(c) - cfg->servers);
  if ((onebit_adam || ps_oba) && cfg->compress_warmup == 0)
    return hs__fail(HS_ERR_INVALID_ARG, "1-bit Adam (%s, 1bit, Adam) with a compression "
                    "warm-up of 0 steps: it needs at least 1 (the second moment it freezes is "
                    "estimated during the warm-up; default %d)", hs_sync_mode_name(cfg->sync),
                    HS_ONEBIT_ADAM_WARMUP);
  hs_dist *d = calloc(1, sizeof *d);
  if (!d) return hs__fail(HS_ERR_NOMEM, "distributed state");
  d->c = c;
  d->cfg = *cfg;
  d->rank = hs__comm_rank(c);
  d->size = hs__comm_size(c);
  d->workers = cfg->sync == HS_SYNC_PS ? d->size - cfg->servers : d->size;
  d->server = d->rank >= d->workers;
  d->n = m->n_params;
  d->nt = m->n_tensors;
  d->optim = m->optim;
  d->warmup = cfg->compress_warmup != HS_COMPRESS_WARMUP_AUTO ? cfg->compress_warmup
              : onebit_adam || ps_oba                       ? HS_ONEBIT_ADAM_WARMUP
                                                            : 0;
  /* A lone rank sends nothing, so compresses nothing: plain Adam. */
  d->oba = onebit_adam && d->size > 1;
  d->ps_oba = ps_oba;
  d->t = malloc((size_t)m->n_tensors * sizeof *d->t);
  d->vec = malloc(d->n * sizeof *d->vec);
  if (!d->t || !d->vec) {
    st = hs__fail(HS_ERR_NOMEM, "distributed state for %zu parameters", d->n);
    goto fail;
  }
  memcpy(d->t, m->tensors, (size_t)m->n_tensors * sizeof *d->t);
  if (cfg->sync == HS_SYNC_PS) {
    st = hs__ps_create(d, m);
  } else {
    hs_ar_cfg ac = {.tensors = d->t, .n_tensors = d->nt, .n_total = d->n,
                    .bucket_bytes = cfg->bucket_bytes, .min_compress = (size_t)cfg->compress_min,
                    .tag_base = TAG_AR_BASE};
    st = hs__ar_create(c, &ac, &d->ar);
    if (st == HS_OK && d->oba) {
      d->op = malloc(d->n * sizeof *d->op);
      d->om = malloc(d->n * sizeof *d->om);
      d->oden = malloc(d->n * sizeof *d->oden);
      if (!d->op || !d->om || !d->oden) st = hs__fail(HS_ERR_NOMEM, "1-bit Adam state");
    }
    /* Local mode with compression sends the change since the last
     * average: every rank starts from the same parameters. */
    if (st == HS_OK && cfg->sync == HS_SYNC_LOCAL && cfg->compress == HS_COMPRESS_1BIT) {
      d->anchor = malloc(d->n * sizeof *d->anchor);
      if (!d->anchor) st = hs__fail(HS_ERR_NOMEM, "local SGD anchor");
      else memcpy(d->anchor, m->params, d->n * sizeof *d->anchor);
    }
  }
  if (st != HS_OK) goto fail;
  d->local_fresh = true;
  hs__comm_counters(c, &d->c0);
  hs__log(HS_LOG_DIST, "rank %d of %d (%s, %s): %s, %zu parameters in %d tensors, compression %s%s "
          "from step %lld for tensors of %lld values and more", d->rank, d->size,
          hs__comm_backend(c), d->server ? "server" : "worker", hs_sync_mode_name(cfg->sync), d->n,
          d->nt, hs_compress_name(cfg->compress), d->oba || d->ps_oba ? " (1-bit Adam)" : "",
          (long long)d->warmup,
          (long long)cfg->compress_min);
  *out = d;
  return HS_OK;
fail:
  hs__dist_destroy(d);
  return st;
}

bool hs__dist_is_server(const hs_dist *d) { return d->server; }
int hs__dist_workers(const hs_dist *d) { return d->workers; }
hs_comm *hs__dist_comm(const hs_dist *d) { return d->c; }

/* Waiting for a device between polls: short sleeps leave the CPU to a
 * device that computes on the same cores. */
static void nap(void) {
  struct timespec ts = {0, 50 * 1000};
  nanosleep(&ts, NULL);
}

/* Waits until the trainer's gradients of tensors [first, first + n) are
 * ready, progressing the all-reduce meanwhile; the time spent progressing
 * is added to *polled_comm. */
static hs_status await_tensors(hs_dist *d, const hs_dist_trainer *t, int first, int n,
                               double *polled_comm) {
  hs_status st = HS_OK;
  for (int i = first; i < first + n && st == HS_OK; i++) {
    bool ready = false;
    while (st == HS_OK && (st = t->grads_poll(t->ctx, i, &ready)) == HS_OK && !ready) {
      double c0 = hs__now();
      st = hs__ar_progress(d->ar);
      *polled_comm += hs__now() - c0;
      if (st == HS_OK) nap();
    }
  }
  return st;
}

/* allreduce: gradients bucket by bucket as they become ready. */
static hs_status step_allreduce(hs_dist *d, const hs_dist_trainer *t, int64_t step, int64_t count,
                                bool stop_request, bool *stop_after) {
  double t0 = hs__now(), t_ready = t0;
  bool cmp = hs__dist_compress_now(d, step);
  hs_status st = HS_OK;
  if (count > 0) st = t->grads_begin(t->ctx, d->vec);
  if (st == HS_OK) st = hs__ar_begin(d->ar, d->vec, count, cmp, stop_request ? 1u : 0u);
  double polled_comm = 0;
  for (int b = 0; count > 0 && st == HS_OK && b < hs__ar_buckets(d->ar); b++) {
    int first, n;
    hs__ar_bucket_tensors(d->ar, b, &first, &n);
    st = await_tensors(d, t, first, n, &polled_comm);
    if (st == HS_OK) st = hs__ar_ready(d->ar, b);
  }
  t_ready = hs__now();
  uint32_t flags = 0;
  if (st == HS_OK) st = hs__ar_end(d->ar, &flags, NULL);
  double t_end = hs__now();
  if (st == HS_OK) st = t->apply(t->ctx, d->vec);
  d->st.compute_s += t_ready - t0 - polled_comm;
  d->st.comm_s += t_end - t_ready + polled_comm;
  if (cmp) d->st.compressed_steps++;
  *stop_after = flags & 1u;
  return st;
}

/* This rank's contribution over tensors [first, first + count), in place
 * of its gradient g: its first moment, the shared one with g folded in,
 * divided by the frozen denominator sqrt(v / (1 - b2^t_freeze)) + eps:
 * the moment in units of Adam's step. The denominator is the same on
 * every rank, so the average of these is the averaged moment's step; and
 * sign codes suit it: steps are of one size whatever the gradients', where
 * a moment's block mixes coordinates whose v differ by decades (rare
 * features), and +-(block scale) / sqrt(small v) would be a huge step. */
static void onebit_adam_local(const hs_dist *d, float *g, int first, int count) {
  hs_optim_coef k;
  hs__optim_coef(&d->optim, 1, &k);
  for (int i = first; i < first + count; i++)
    for (size_t j = d->t[i].off; j < d->t[i].off + d->t[i].n; j++)
      g[j] = (k.beta1 * d->om[j] + k.one_minus_beta1 * (g[j] + k.l2 * d->op[j])) / d->oden[j];
}

/* The frozen denominators from v (in oden) and the steps taken when it
 * froze: den = max(sqrt(v / (1 - b2^t_freeze)), floor) + eps, the floor
 * HS_ONEBIT_ADAM_FLOOR x the tensor's mean of sqrt(v / (1 - b2^t_freeze))
 * (summed in double, index order). Without the floor, a coordinate whose
 * gradients were rare or tiny in the warm-up (the weight row of a rare
 * feature) keeps a denominator near eps for good: where exact Adam's v
 * would grow with the first large gradient, the frozen one turns it, and
 * the compression error of its block, into steps thousands of times
 * Adam's, which error feedback returns and momentum amplifies (Facebook:
 * the first layer's step direction grew from RMS 1 to 5,000 within 230
 * steps and the run diverged). */
void hs__onebit_adam_floor(const hs_optim_coef *kf, float *x, size_t n) {
  double sum = 0;
  for (size_t j = 0; j < n; j++) {
    x[j] = sqrtf(x[j]) * kf->inv_sqrt_bc2;
    sum += x[j];
  }
  float floor_v = n > 0 ? (float)(HS_ONEBIT_ADAM_FLOOR * sum / (double)n) : 0.0f;
  for (size_t j = 0; j < n; j++) x[j] = (x[j] > floor_v ? x[j] : floor_v) + kf->eps;
}

static void onebit_adam_denominators(hs_dist *d, uint64_t t_freeze) {
  hs_optim_coef kf;
  hs__optim_coef(&d->optim, t_freeze, &kf);
  for (int i = 0; i < d->nt; i++) hs__onebit_adam_floor(&kf, d->oden + d->t[i].off, d->t[i].n);
}

/* allreduce, 1-bit, Adam, after the warm-up: the ranks' first moments,
 * over the frozen denominators, all-reduced compressed (gradients bucket
 * by bucket as they are ready, each turned into this rank's moment), the
 * same update everywhere. */
static hs_status step_onebit_adam(hs_dist *d, const hs_dist_trainer *t, int64_t step,
                                  int64_t count, bool stop_request, bool *stop_after) {
  double t0 = hs__now(), t_ready = t0;
  hs_status st = HS_OK;
  if (!d->oba_loaded) {
    if (!t->get_state || !t->set_state)
      return hs__fail(HS_ERR_UNSUPPORTED, "1-bit Adam: this trainer gives no access to its "
                      "optimizer state");
    uint64_t taken = 0;
    st = t->get_state(t->ctx, d->op, d->om, d->oden, &taken);
    if (st != HS_OK) return st;
    /* One optimizer step per training step: v froze `step - warmup`
     * steps ago (0 at the first compressed step, more after a resume). */
    uint64_t since = (uint64_t)(step - d->warmup);
    if (taken < since || taken - since < 1)
      return hs__fail(HS_ERR_STATE, "1-bit Adam at step %lld (warm-up %lld): the optimizer "
                      "took %llu steps, not the at least %llu it needs (1 or more uncompressed, "
                      "then one per compressed step)", (long long)step, (long long)d->warmup,
                      (unsigned long long)taken, (unsigned long long)since + 1);
    d->ot = taken;
    onebit_adam_denominators(d, taken - since);
    d->oba_loaded = true;
  }
  if (count > 0) st = t->grads_begin(t->ctx, d->vec);
  if (st == HS_OK) st = hs__ar_begin(d->ar, d->vec, count, true, stop_request ? 1u : 0u);
  double polled_comm = 0;
  for (int b = 0; count > 0 && st == HS_OK && b < hs__ar_buckets(d->ar); b++) {
    int first, n;
    hs__ar_bucket_tensors(d->ar, b, &first, &n);
    st = await_tensors(d, t, first, n, &polled_comm);
    if (st == HS_OK) {
      onebit_adam_local(d, d->vec, first, n);
      st = hs__ar_ready(d->ar, b);
    }
  }
  t_ready = hs__now();
  uint32_t flags = 0;
  int64_t total = 0;
  if (st == HS_OK) st = hs__ar_end(d->ar, &flags, &total);
  double t_end = hs__now();
  if (st == HS_OK) {
    /* No seeds anywhere: the moment decays as Adam's would on a zero
     * gradient (the same on every rank). */
    if (total == 0) {
      memset(d->vec, 0, d->n * sizeof *d->vec);
      onebit_adam_local(d, d->vec, 0, d->nt);
    }
    /* vec: the averaged step direction u = m / den, the same bits on
     * every rank. Adam's update with v frozen: p = p decay - lr_t u. */
    hs_optim_coef k;
    d->ot++;
    hs__optim_coef(&d->optim, d->ot, &k);
    for (size_t j = 0; j < d->n; j++) {
      d->om[j] = d->vec[j] * d->oden[j];
      d->op[j] = d->op[j] * k.decay - k.lr * d->vec[j];
    }
    st = t->set_state(t->ctx, d->op, d->om, d->ot);
  }
  d->st.compute_s += t_ready - t0 - polled_comm + (hs__now() - t_end);
  d->st.comm_s += t_end - t_ready + polled_comm;
  d->st.compressed_steps++;
  *stop_after = flags & 1u;
  return st;
}

/* local: the parameters averaged (or their change since the last average,
 * compressed). */
static hs_status average(hs_dist *d, const hs_dist_trainer *t, int64_t step, bool *stop_after) {
  double t0 = hs__now();
  bool cmp = hs__dist_compress_now(d, step) && d->anchor;
  uint32_t flags = d->stop_pending ? 1u : 0u;
  hs_status st = t->get_params(t->ctx, d->vec);
  /* Reading the parameters waits for the local steps still queued on the
   * trainer (a step only enqueues): compute, not exchange. */
  double t1 = hs__now();
  d->st.compute_s += t1 - t0;
  if (st == HS_OK && cmp)
    for (size_t i = 0; i < d->n; i++) d->vec[i] -= d->anchor[i];
  if (st == HS_OK) st = hs__ar_begin(d->ar, d->vec, d->local_count, cmp, flags);
  if (st == HS_OK) st = hs__ar_end(d->ar, &flags, NULL);
  if (st == HS_OK && cmp)
    for (size_t i = 0; i < d->n; i++) d->vec[i] += d->anchor[i];
  if (st == HS_OK && d->anchor) memcpy(d->anchor, d->vec, d->n * sizeof *d->vec);
  if (st == HS_OK) st = t->set_params(t->ctx, d->vec);
  d->local_count = 0;
  d->local_fresh = true;
  d->stop_pending = false;
  d->st.comm_s += hs__now() - t1;
  if (cmp) d->st.compressed_steps++;
  if (stop_after) *stop_after = flags & 1u;
  return st;
}

static hs_status step_local(hs_dist *d, const hs_dist_trainer *t, int64_t step, int64_t count,
                            bool stop_request, bool *stop_after) {
  double t0 = hs__now();
  hs_status st = count > 0 ? t->step(t->ctx) : HS_OK;
  d->st.compute_s += hs__now() - t0;
  if (st != HS_OK) return st;
  d->local_count += count;
  d->stop_pending = d->stop_pending || stop_request;
  *stop_after = false;
  d->local_fresh = false;
  /* Averaging one rank's parameters changes nothing. */
  if (d->size == 1) {
    *stop_after = d->stop_pending;
    d->local_count = 0;
    d->local_fresh = true;
    return HS_OK;
  }
  if ((step + 1) % d->cfg.period != 0) return HS_OK;
  return average(d, t, step, stop_after);
}

hs_status hs__dist_step(hs_dist *d, const hs_dist_trainer *t, int64_t step, int64_t count,
                        bool stop_request, bool *stop_after) {
  *stop_after = false;
  if (d->server) return hs__fail(HS_ERR_STATE, "rank %d is a parameter server", d->rank);
  if (count < 0) return hs__fail(HS_ERR_INVALID_ARG, "step with %lld seeds", (long long)count);
  hs_status st;
  switch (d->cfg.sync) {
    case HS_SYNC_PS: st = hs__ps_step(d, t, step, count, stop_request, stop_after); break;
    case HS_SYNC_LOCAL: st = step_local(d, t, step, count, stop_request, stop_after); break;
    default:
      if (d->oba && hs__dist_compress_now(d, step)) {
        st = step_onebit_adam(d, t, step, count, stop_request, stop_after);
        break;
      }
      st = step_allreduce(d, t, step, count, stop_request, stop_after); break;
  }
  d->st.steps++;
  return st;
}

hs_status hs__dist_epoch_end(hs_dist *d, const hs_dist_trainer *t, int64_t steps_done,
                             bool interrupted) {
  if (d->server) return hs__fail(HS_ERR_STATE, "rank %d is a parameter server", d->rank);
  if (d->cfg.sync == HS_SYNC_PS) return hs__ps_worker_end(d, t, steps_done, interrupted);
  if (d->cfg.sync == HS_SYNC_LOCAL && !d->local_fresh && d->size > 1)
    return average(d, t, steps_done > 0 ? steps_done - 1 : 0, NULL);
  return HS_OK;
}

hs_status hs__dist_serve(hs_dist *d, int64_t *steps_done, bool *interrupted) {
  if (!d->server) return hs__fail(HS_ERR_STATE, "rank %d is not a parameter server", d->rank);
  return hs__ps_serve(d, steps_done, interrupted);
}

void hs__dist_stats_take(hs_dist *d, hs_dist_stats *out) {
  hs_comm_counters now;
  hs__comm_counters(d->c, &now);
  d->st.bytes_sent = now.bytes_sent - d->c0.bytes_sent;
  d->st.bytes_recv = now.bytes_recv - d->c0.bytes_recv;
  hs__log(HS_LOG_DIST, "rank %d: %lld steps, compute %.3f s, exchanges %.3f s, %llu bytes sent, "
          "%llu received", d->rank, (long long)d->st.steps, d->st.compute_s, d->st.comm_s,
          (unsigned long long)d->st.bytes_sent, (unsigned long long)d->st.bytes_recv);
  *out = d->st;
  memset(&d->st, 0, sizeof d->st);
  d->c0 = now;
}

hs_status hs__dist_gather_state(hs_dist *d, float *params, float *m, float *v, uint64_t *step) {
  if (d->cfg.sync != HS_SYNC_PS) return HS_OK;
  return hs__ps_gather_state(d, params, m, v, step);
}

void hs__dist_ps_buffers(const hs_dist *d, size_t *pushes, size_t *answers) {
  *pushes = *answers = 0;
  if (d->cfg.sync == HS_SYNC_PS && d->ps) hs__ps_buffers(d, pushes, answers);
}

hs_status hs__dist_scatter_state(hs_dist *d, const hs_dist_model *m) {
  if (d->cfg.sync != HS_SYNC_PS) {
    if (d->anchor) memcpy(d->anchor, m->params, d->n * sizeof *d->anchor);
    d->oba_loaded = false; /* 1-bit Adam reads the new state at its next step */
    return HS_OK;
  }
  return hs__ps_scatter_state(d, m);
}

/* The state blob: u32 magic, u32 mode, u64 parameters, u32 rank, u32 size,
 * then the mode's arrays: allreduce/local: u8 has_residuals, then the
 * worker and reducing-side residuals (n floats each) when it has them;
 * ps: hs__ps_save_state's. */
#define STATE_MAGIC 0x48534453u /* "SDSH" */
enum { STATE_HDR = 24 };

size_t hs__dist_state_bytes(const hs_dist *d) {
  if (d->cfg.sync == HS_SYNC_PS) return STATE_HDR + hs__ps_state_bytes(d);
  return STATE_HDR + 1 + (hs__ar_residual(d->ar, false) ? 2 * d->n * sizeof(float) : 0);
}

hs_status hs__dist_save_state(hs_dist *d, uint8_t *buf, size_t len) {
  if (len < hs__dist_state_bytes(d))
    return hs__fail(HS_ERR_RANGE, "distributed state: %zu bytes for %zu", len,
                    hs__dist_state_bytes(d));
  uint32_t h32[2] = {STATE_MAGIC, (uint32_t)d->cfg.sync};
  uint64_t n = d->n;
  uint32_t rs[2] = {(uint32_t)d->rank, (uint32_t)d->size};
  memcpy(buf, h32, 8);
  memcpy(buf + 8, &n, 8);
  memcpy(buf + 16, rs, 8);
  if (d->cfg.sync == HS_SYNC_PS) return hs__ps_save_state(d, buf + STATE_HDR);
  float *ew = hs__ar_residual(d->ar, false), *eo = hs__ar_residual(d->ar, true);
  buf[STATE_HDR] = ew != NULL;
  if (ew) {
    memcpy(buf + STATE_HDR + 1, ew, d->n * sizeof(float));
    memcpy(buf + STATE_HDR + 1 + d->n * sizeof(float), eo, d->n * sizeof(float));
  }
  return HS_OK;
}

hs_status hs__dist_load_state(hs_dist *d, const uint8_t *buf, size_t len) {
  uint32_t h32[2], rs[2];
  uint64_t n;
  if (len < STATE_HDR + 1)
    return hs__fail(HS_ERR_FORMAT, "distributed state of %zu bytes is truncated", len);
  memcpy(h32, buf, 8);
  memcpy(&n, buf + 8, 8);
  memcpy(rs, buf + 16, 8);
  if (h32[0] != STATE_MAGIC || h32[1] != (uint32_t)d->cfg.sync || n != d->n ||
      rs[0] != (uint32_t)d->rank || rs[1] != (uint32_t)d->size)
    return hs__fail(HS_ERR_FORMAT, "distributed state of rank %u of %u, mode %u, %llu "
                    "parameters; this is rank %d of %d, mode %s, %zu parameters", rs[0], rs[1],
                    h32[1], (unsigned long long)n, d->rank, d->size,
                    hs_sync_mode_name(d->cfg.sync), d->n);
  if (d->cfg.sync == HS_SYNC_PS) return hs__ps_load_state(d, buf + STATE_HDR, len - STATE_HDR);
  bool has = buf[STATE_HDR] != 0;
  size_t want = STATE_HDR + 1 + (has ? 2 * d->n * sizeof(float) : 0);
  if (len != want)
    return hs__fail(HS_ERR_FORMAT, "distributed state: %zu bytes, %zu expected", len, want);
  if (!has) return HS_OK;
  hs_status st = hs__ar_residual_init(d->ar);
  if (st != HS_OK) return st;
  memcpy(hs__ar_residual(d->ar, false), buf + STATE_HDR + 1, d->n * sizeof(float));
  memcpy(hs__ar_residual(d->ar, true), buf + STATE_HDR + 1 + d->n * sizeof(float),
         d->n * sizeof(float));
  return HS_OK;
}
