/* The parameter server (hetsage/dist.h, HS_SYNC_PS).
 *
 * The parameter vector is cut into `servers` contiguous shards; server k
 * (rank workers + k) holds shard k's parameters and optimizer moments. A
 * worker's step pushes its gradient shard to each server and waits for
 * each server's reply: the shard's parameters, or with compression their
 * change since what this worker last received (1-bit; the server tracks
 * each worker's copy, so what the code loses is sent again later: error
 * feedback on the server's side). At the end of an epoch each worker sends
 * END and every server answers with the full shard: all workers then hold
 * the same parameters.
 *
 * Synchronous (staleness 0): the server collects step c's pushes; once
 * `quorum` arrived it adds them in worker order, weighted by their seed
 * counts, applies the optimizer and answers them. A push for a step
 * already applied is late: counted, answered at once, and added to the
 * step being collected (weighted by its seeds among that step's), so a
 * straggler's data still count, one step stale; late gradients of the
 * epoch's last step are applied at its end.
 *
 * Asynchronous (staleness S): each push is added to a running sum; every
 * `quorum` pushes (default: as many as there are workers) the sum,
 * weighted by seeds, is applied. A worker is answered at once, unless it
 * has pushed more than S steps beyond the slowest worker still in the
 * epoch; then its answer waits. The answer is the parameters looked
 * ahead: a worker answered while its gradient still waits in the running
 * sum will see that sum applied (and, with more workers, the updates the
 * others' pushes complete) before its next gradient arrives, so it gets
 * the parameters as they will be then: h = (pending pushes + other
 * workers in the epoch) / quorum updates ahead (hs__ps_ahead, at most S),
 * each update predicted as the optimizer's own step with the mean of the
 * gradients waiting (hs__ps_look_ahead: exact when the gradients still to
 * come average to that mean). With two workers the first pusher of each
 * pair is answered before the pair's update: without a look-ahead a third
 * of the gradients arrived one update late, which cost 2-14 points of
 * accuracy on the SBM benchmark; looking ahead by the worker's last
 * lateness along the last update (the rule before this one, wrong
 * whenever the order of a pair changed) left -1.3 points on average, this
 * one -0.1 (bench/dist-accuracy.md). A worker answered right after an
 * update (h = 0) gets p itself, so one worker trains as before; the
 * answers at the end of an epoch are p itself on every worker.
 *
 * Stopping: stop requests go to server 0, which fixes the first step not
 * to train at (largest step pushed so far) + 2. No worker can have been
 * answered for a later step, so every worker stops after the same step.
 *
 * Messages start with ps_hdr; then the units of the shard (each tensor's
 * part in it), raw floats or 1-bit codes (hs_onebit.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dist/dist_int.h"
#include "dist/hs_onebit.h"
#include "nn/ref_nn.h"

typedef struct ps_hdr {
  int64_t a; /* push: step; end: steps done; reply: the shard's version */
  int64_t b; /* push: seeds; reply: first step not to train (-1: none) */
  uint32_t kind, flags;
} ps_hdr;
#define HDR ((size_t)sizeof(ps_hdr))

enum { K_PUSH = 1, K_END = 2, K_REPLY = 3, K_FULL = 4 };
/* 1-bit Adam (see freeze): F_DEN: an answer carries the shard's frozen
 * denominators and m after its units; F_SCALED: a push holds the worker's
 * u_r, not its gradient; F_STEP: an answer holds the averaged step u. */
enum { F_STOP = 1, F_CMP = 2, F_INTERRUPTED = 4, F_DEN = 8, F_SCALED = 16, F_STEP = 32 };

struct hs_ps {
  int servers, workers;
  size_t *lo;     /* shard k: [lo[k], lo[k + 1]) */
  ps_unit *u;     /* units of shard k: [ufirst[k], ufirst[k + 1]) */
  int *ufirst;
  size_t *cap;    /* largest push of shard k (header included) */
  size_t *acap;   /* largest answer: cap, and 1-bit Adam's den and m once */
  size_t *coff;   /* offsets of each shard's push in the worker's push buffer */
  size_t *aoff;   /* and of each answer in its answer buffer */
  float *tmp;     /* a unit's values */
  /* Worker. */
  float *view, *ew; /* its parameters; its residual (NULL until compressed) */
  float *wden;       /* 1-bit Adam: the frozen denominators (n) */
  float *wm;         /* and m (n), the same as the servers' */
  bool *den_have;    /* received from each server */
  uint8_t *push, *reply;
  hs_comm_req *rq; /* [0, servers) replies, [servers, 2 servers) pushes */
  int64_t stop_at;
  /* Server. */
  int k;
  size_t slo, sn;
  float *p, *m, *v;
  uint64_t version;
  float *views;   /* workers x sn: what each worker holds of the shard */
  float *contrib; /* workers x sn: synchronous step's gradients */
  float *g;       /* sn: the update's gradient */
  double *pend;   /* sn: asynchronous running sum (seeds x gradient) */
  float *ahead, *am, *av; /* sn each, asynchronous: a looked-ahead answer, its moments */
  uint64_t *aim;  /* workers: the version each one's last answer looked ahead to */
  /* Synchronous, 1-bit, Adam (d->ps_oba): from the first compressed step
   * on, v stays as it was (frozen) and den (sn) holds the frozen
   * denominators, computed from v and t_freeze (the updates v had seen)
   * when den_ready is false (after a resume). */
  bool frozen, den_ready;
  uint64_t t_freeze;
  float *den;
  float *eo;      /* the server's residual of u */
  uint8_t *ucode; /* this step's u as answered (ucode_n bytes; step_ready) */
  size_t ucode_n;
  bool step_ready;
  bool *den_sent; /* workers: den went with an answer to it */
  int64_t lag_hist[4]; /* this epoch's gradients early, on time, 1, 2 or more updates late */
  int64_t pend_count;
  int pend_pushes;
  int64_t *ccount, *clock, *defer_step;
  bool *arrived, *ended, *deferred;
  uint8_t *rx, *tx; /* workers x cap[k], workers x acap[k] */
  hs_comm_req *srq; /* [0, workers) pushes, [workers, 2 workers) replies */
  hs_comm_req **wait_set;
  int64_t cur, max_step, sstop_at;
};

static size_t unit_cap(size_t n) {
  size_t raw = 4 * n, bits = hs__onebit_bytes(n);
  return raw > bits ? raw : bits;
}

void hs__ps_destroy(hs_ps *p) {
  if (!p) return;
  free(p->lo);
  free(p->u);
  free(p->ufirst);
  free(p->cap);
  free(p->acap);
  free(p->coff);
  free(p->aoff);
  free(p->tmp);
  free(p->view);
  free(p->ew);
  free(p->push);
  free(p->reply);
  free(p->rq);
  free(p->p);
  free(p->m);
  free(p->v);
  free(p->views);
  free(p->contrib);
  free(p->g);
  free(p->pend);
  free(p->ahead);
  free(p->am);
  free(p->av);
  free(p->aim);
  free(p->den);
  free(p->den_sent);
  free(p->eo);
  free(p->ucode);
  free(p->wm);
  free(p->wden);
  free(p->den_have);
  free(p->ccount);
  free(p->clock);
  free(p->defer_step);
  free(p->arrived);
  free(p->ended);
  free(p->deferred);
  free(p->rx);
  free(p->tx);
  free(p->srq);
  free(p->wait_set);
  free(p);
}

static int cmp_off(const void *a, const void *b) {
  size_t x = ((const hs_dist_tensor *)a)->off, y = ((const hs_dist_tensor *)b)->off;
  return x < y ? -1 : x > y;
}

/* Shards and their units; the tensors must tile the vector. */
static hs_status make_units(hs_dist *d, hs_ps *p) {
  int K = p->servers;
  hs_dist_tensor *sorted = malloc((size_t)d->nt * sizeof *sorted);
  p->lo = malloc(((size_t)K + 1) * sizeof *p->lo);
  p->ufirst = malloc(((size_t)K + 1) * sizeof *p->ufirst);
  p->cap = calloc((size_t)K, sizeof *p->cap);
  p->acap = calloc((size_t)K, sizeof *p->acap);
  p->coff = calloc((size_t)K + 1, sizeof *p->coff);
  p->aoff = calloc((size_t)K + 1, sizeof *p->aoff);
  p->u = malloc(((size_t)d->nt + (size_t)K) * sizeof *p->u);
  if (!sorted || !p->lo || !p->ufirst || !p->cap || !p->acap || !p->coff || !p->aoff || !p->u) {
    free(sorted);
    return hs__fail(HS_ERR_NOMEM, "parameter server shards");
  }
  memcpy(sorted, d->t, (size_t)d->nt * sizeof *sorted);
  qsort(sorted, (size_t)d->nt, sizeof *sorted, cmp_off);
  size_t at = 0;
  for (int i = 0; i < d->nt; i++) {
    if (sorted[i].off != at) {
      free(sorted);
      return hs__fail(HS_ERR_INVALID_ARG, "parameter server: the tensors leave a gap or "
                      "overlap at value %zu", at);
    }
    at += sorted[i].n;
  }
  if (at != d->n) {
    free(sorted);
    return hs__fail(HS_ERR_INVALID_ARG, "parameter server: tensors cover %zu of %zu values", at,
                    d->n);
  }
  int nu = 0;
  for (int k = 0; k < K; k++) {
    p->lo[k] = (size_t)((uint64_t)d->n * (uint64_t)k / (uint64_t)K);
    p->lo[k + 1] = (size_t)((uint64_t)d->n * (uint64_t)(k + 1) / (uint64_t)K);
    p->ufirst[k] = nu;
    p->cap[k] = HDR;
    for (int i = 0; i < d->nt; i++) {
      size_t a = sorted[i].off, b = sorted[i].off + sorted[i].n;
      if (a < p->lo[k]) a = p->lo[k];
      if (b > p->lo[k + 1]) b = p->lo[k + 1];
      if (a >= b) continue;
      p->u[nu++] = (ps_unit){.off = a, .n = b - a,
                             .compressible = sorted[i].n >= (size_t)d->cfg.compress_min};
      p->cap[k] += unit_cap(b - a);
    }
    /* den and m go with one answer to each worker (pushes never carry them). */
    p->acap[k] = p->cap[k] + (d->ps_oba ? 8 * (p->lo[k + 1] - p->lo[k]) : 0);
    p->coff[k + 1] = p->coff[k] + p->cap[k];
    p->aoff[k + 1] = p->aoff[k] + p->acap[k];
  }
  p->ufirst[K] = nu;
  free(sorted);
  return HS_OK;
}

hs_status hs__ps_create(hs_dist *d, const hs_dist_model *m) {
  hs_ps *p = calloc(1, sizeof *p);
  if (!p) return hs__fail(HS_ERR_NOMEM, "parameter server");
  d->ps = p;
  p->servers = d->cfg.servers;
  p->workers = d->workers;
  hs_status st = make_units(d, p);
  if (st != HS_OK) return st;
  size_t max_shard = 0;
  for (int k = 0; k < p->servers; k++)
    if (p->lo[k + 1] - p->lo[k] > max_shard) max_shard = p->lo[k + 1] - p->lo[k];
  p->tmp = malloc((max_shard + 1) * sizeof *p->tmp);
  if (!p->tmp) return hs__fail(HS_ERR_NOMEM, "parameter server");
  p->stop_at = -1;
  if (!d->server) {
    p->view = malloc(d->n * sizeof *p->view);
    p->push = malloc(p->coff[p->servers]);
    p->reply = malloc(p->aoff[p->servers]);
    p->rq = calloc(2 * (size_t)p->servers, sizeof *p->rq);
    if (!p->view || !p->push || !p->reply || !p->rq ||
        (d->ps_oba && (!(p->wden = malloc(d->n * sizeof *p->wden)) ||
                       !(p->wm = malloc(d->n * sizeof *p->wm)) ||
                       !(p->den_have = calloc((size_t)p->servers, sizeof *p->den_have)))))
      return hs__fail(HS_ERR_NOMEM, "parameter server worker buffers");
    memcpy(p->view, m->params, d->n * sizeof *p->view);
    return HS_OK;
  }
  int W = p->workers;
  p->k = d->rank - W;
  p->slo = p->lo[p->k];
  p->sn = p->lo[p->k + 1] - p->slo;
  size_t sn = p->sn + 1, cap = p->cap[p->k];
  p->p = malloc(sn * sizeof *p->p);
  p->m = calloc(sn, sizeof *p->m);
  p->v = calloc(sn, sizeof *p->v);
  p->views = malloc((size_t)W * sn * sizeof *p->views);
  p->contrib = malloc((size_t)W * sn * sizeof *p->contrib);
  p->g = malloc(sn * sizeof *p->g);
  p->pend = calloc(sn, sizeof *p->pend);
  p->aim = calloc((size_t)W, sizeof *p->aim);
  if (d->ps_oba && (!(p->den = malloc(sn * sizeof *p->den)) ||
                    !(p->eo = calloc(sn, sizeof *p->eo)) ||
                    !(p->ucode = malloc(cap)) ||
                    !(p->den_sent = calloc((size_t)W, sizeof *p->den_sent))))
    return hs__fail(HS_ERR_NOMEM, "parameter server %d: shard of %zu values", p->k, p->sn);
  if (d->cfg.staleness > 0 &&
      (!(p->ahead = malloc(sn * sizeof *p->ahead)) || !(p->am = malloc(sn * sizeof *p->am)) ||
       !(p->av = malloc(sn * sizeof *p->av))))
    return hs__fail(HS_ERR_NOMEM, "parameter server %d: shard of %zu values", p->k, p->sn);
  p->ccount = calloc((size_t)W, sizeof *p->ccount);
  p->clock = calloc((size_t)W, sizeof *p->clock);
  p->defer_step = calloc((size_t)W, sizeof *p->defer_step);
  p->arrived = calloc((size_t)W, sizeof *p->arrived);
  p->ended = calloc((size_t)W, sizeof *p->ended);
  p->deferred = calloc((size_t)W, sizeof *p->deferred);
  p->rx = malloc((size_t)W * cap);
  p->tx = malloc((size_t)W * p->acap[p->k]);
  p->srq = calloc(2 * (size_t)W, sizeof *p->srq);
  p->wait_set = calloc((size_t)W, sizeof *p->wait_set);
  if (!p->p || !p->m || !p->v || !p->views || !p->contrib || !p->g || !p->pend || !p->ccount ||
      !p->clock || !p->defer_step || !p->arrived || !p->ended || !p->deferred ||
      !p->rx || !p->tx || !p->srq || !p->wait_set || !p->aim)
    return hs__fail(HS_ERR_NOMEM, "parameter server %d: shard of %zu values", p->k, p->sn);
  p->sstop_at = -1;
  return hs__ps_scatter_state(d, m);
}

/* ---- encoding ----------------------------------------------------------------- */

/* Encode x (indexed like the parameter vector) over shard k's units at
 * out; with a residual e (same indexing) the units compressed add e first
 * and keep what the code lost in it. Returns the bytes written. */
static size_t encode_units(const hs_dist *d, int k, bool cmp, const float *x, float *e,
                           uint8_t *out) {
  const hs_ps *p = d->ps;
  size_t at = 0;
  for (int i = p->ufirst[k]; i < p->ufirst[k + 1]; i++) {
    const ps_unit *u = &p->u[i];
    if (cmp && u->compressible) {
      const float *src = x + u->off;
      if (e) {
        float *r = e + u->off;
        for (size_t j = 0; j < u->n; j++) p->tmp[j] = src[j] + r[j];
        hs__onebit_encode(p->tmp, u->n, out + at, r);
      } else {
        hs__onebit_encode(src, u->n, out + at, NULL);
      }
      at += hs__onebit_bytes(u->n);
    } else {
      memcpy(out + at, x + u->off, 4 * u->n);
      at += 4 * u->n;
    }
  }
  return at;
}

static size_t units_bytes(const hs_dist *d, int k, bool cmp) {
  const hs_ps *p = d->ps;
  size_t at = 0;
  for (int i = p->ufirst[k]; i < p->ufirst[k + 1]; i++)
    at += cmp && p->u[i].compressible ? hs__onebit_bytes(p->u[i].n) : 4 * p->u[i].n;
  return at;
}

/* ---- worker --------------------------------------------------------------------- */

static hs_status worker_exchange(hs_dist *d, const char *what) {
  hs_ps *p = d->ps;
  return hs__comm_waitall(d->c, p->rq, 2 * p->servers, what);
}

/* Apply the reply of server k to the worker's parameters; its stop step. */
static hs_status take_reply(hs_dist *d, int k, bool want_full) {
  hs_ps *p = d->ps;
  const uint8_t *msg = p->reply + p->aoff[k];
  size_t got = p->rq[k].got;
  ps_hdr h;
  int rank = d->workers + k;
  if (got < HDR) return hs__fail(HS_ERR_FORMAT, "server rank %d sent %zu bytes", rank, got);
  memcpy(&h, msg, HDR);
  bool full = h.kind == K_FULL, cmp = !full && (h.flags & F_CMP), den = h.flags & F_DEN;
  bool stepm = !full && (h.flags & F_STEP);
  size_t shard = p->lo[k + 1] - p->lo[k];
  if ((h.kind != K_REPLY && h.kind != K_FULL) || (want_full && !full) || (den && !p->wden) ||
      got != HDR + units_bytes(d, k, cmp) + (den ? 8 * shard : 0))
    return hs__fail(HS_ERR_FORMAT, "rank %d: server rank %d answered with kind %u, %zu bytes "
                    "(the ranks disagree on the protocol or the model)", d->rank, rank, h.kind,
                    got);
  if (stepm && (!p->wden || !p->den_have[k]))
    return hs__fail(HS_ERR_FORMAT, "rank %d: server rank %d answered with a 1-bit Adam step "
                    "before sending its frozen denominators", d->rank, rank);
  if (k == 0) p->stop_at = h.b;
  size_t at = HDR;
  for (int i = p->ufirst[k]; i < p->ufirst[k + 1]; i++) {
    const ps_unit *u = &p->u[i];
    float *dst = p->view + u->off;
    if (stepm) {
      if (cmp && u->compressible) {
        hs__onebit_decode(msg + at, u->n, p->tmp);
        at += hs__onebit_bytes(u->n);
      } else {
        memcpy(p->tmp, msg + at, 4 * u->n);
        at += 4 * u->n;
      }
      hs_optim_coef kk;
      hs__optim_coef(&d->optim, (uint64_t)h.a, &kk);
      for (size_t j = 0; j < u->n; j++) {
        p->wm[u->off + j] = p->tmp[j] * p->wden[u->off + j];
        dst[j] = dst[j] * kk.decay - kk.lr * p->tmp[j];
      }
    } else if (cmp && u->compressible) {
      hs__onebit_decode(msg + at, u->n, p->tmp);
      for (size_t j = 0; j < u->n; j++) dst[j] += p->tmp[j];
      at += hs__onebit_bytes(u->n);
    } else {
      memcpy(dst, msg + at, 4 * u->n);
      at += 4 * u->n;
    }
  }
  if (den) {
    memcpy(p->wden + p->lo[k], msg + at, 4 * shard);
    memcpy(p->wm + p->lo[k], msg + at + 4 * shard, 4 * shard);
    p->den_have[k] = true;
  }
  return HS_OK;
}

static hs_status post_replies(hs_dist *d) {
  hs_ps *p = d->ps;
  for (int k = 0; k < p->servers; k++) {
    hs_status st = hs__comm_irecv(d->c, d->workers + k, TAG_PS_REPLY, p->reply + p->aoff[k],
                                  p->acap[k], &p->rq[k]);
    if (st != HS_OK) return st;
  }
  return HS_OK;
}

hs_status hs__ps_step(hs_dist *d, const hs_dist_trainer *t, int64_t step, int64_t count,
                      bool stop_request, bool *stop_after) {
  hs_ps *p = d->ps;
  double t0 = hs__now();
  hs_status st = HS_OK;
  if (count > 0) {
    st = t->grads_begin(t->ctx, d->vec);
    for (int i = 0; i < d->nt && st == HS_OK; i++) {
      bool ready = false;
      while ((st = t->grads_poll(t->ctx, i, &ready)) == HS_OK && !ready) {
        struct timespec ts = {0, 50 * 1000};
        nanosleep(&ts, NULL);
      }
    }
  }
  /* The naps above wait for the backward pass (nothing is exchanged
   * meanwhile): compute, as in the all-reduce step. */
  double t1 = hs__now();
  d->st.compute_s += t1 - t0;
  if (st != HS_OK) return st;
  bool cmp = hs__dist_compress_now(d, step);
  /* 1-bit Adam: compressed steps need den and m from every server, which
   * come with the answer to the warm-up's last step; a resume must keep
   * the warm-up of the run that wrote the checkpoint on that side of it. */
  for (int k = 0; d->ps_oba && k < p->servers; k++) {
    if (cmp && !p->den_have[k])
      return hs__fail(HS_ERR_INVALID_ARG, "rank %d: step %lld is past the 1-bit Adam warm-up "
                      "(--compress-warmup %lld), but the parameter servers' v was not frozen at "
                      "its end: the checkpoint holds no frozen state (written with a later "
                      "warm-up, by an older hetsage or by another kind of run); resume with the "
                      "warm-up it was written with, or a --compress-warmup above %lld", d->rank,
                      (long long)step, (long long)d->warmup, (long long)step);
    if (!cmp && p->den_have[k])
      return hs__fail(HS_ERR_INVALID_ARG, "rank %d: step %lld is in the 1-bit Adam warm-up "
                      "(--compress-warmup %lld), but the checkpoint holds the parameter servers' "
                      "frozen v (written with an earlier warm-up); resume with the warm-up it "
                      "was written with, or a --compress-warmup of at most %lld", d->rank,
                      (long long)step, (long long)d->warmup, (long long)step);
  }
  if (cmp && !p->ew) {
    p->ew = calloc(d->n, sizeof *p->ew);
    if (!p->ew) return hs__fail(HS_ERR_NOMEM, "error feedback (%zu values)", d->n);
  }
  if ((st = post_replies(d)) != HS_OK) return st;
  for (int k = 0; k < p->servers && st == HS_OK; k++) {
    uint8_t *msg = p->push + p->coff[k];
    /* 1-bit Adam (see freeze): this worker's u_r in units of the frozen
     * step, (b1 m + (1 - b1)(g + l2 p)) / den, is what travels. */
    bool scaled = cmp && p->den_have && p->den_have[k];
    if (scaled && count > 0) {
      hs_optim_coef k1;
      hs__optim_coef(&d->optim, 1, &k1);
      for (size_t j = p->lo[k]; j < p->lo[k + 1]; j++)
        d->vec[j] = (k1.beta1 * p->wm[j] + k1.one_minus_beta1 * (d->vec[j] + k1.l2 * p->view[j])) /
                    p->wden[j];
    }
    ps_hdr h = {.a = step, .b = count, .kind = K_PUSH,
                .flags = (cmp ? F_CMP : 0u) | (scaled ? F_SCALED : 0u) |
                         (k == 0 && stop_request ? F_STOP : 0u)};
    memcpy(msg, &h, HDR);
    size_t bytes = HDR + (count > 0 ? encode_units(d, k, cmp, d->vec, p->ew, msg + HDR) : 0);
    st = hs__comm_isend(d->c, d->workers + k, TAG_PS_PUSH, msg, bytes, &p->rq[p->servers + k]);
  }
  char what[80];
  snprintf(what, sizeof what, "parameter server step %lld", (long long)step);
  if (st == HS_OK) st = worker_exchange(d, what);
  for (int k = 0; k < p->servers && st == HS_OK; k++) st = take_reply(d, k, false);
  if (st == HS_OK) st = t->set_params(t->ctx, p->view);
  d->st.comm_s += hs__now() - t1;
  if (cmp) d->st.compressed_steps++;
  *stop_after = p->stop_at >= 0 && step + 1 >= p->stop_at;
  return st;
}

hs_status hs__ps_worker_end(hs_dist *d, const hs_dist_trainer *t, int64_t steps_done,
                            bool interrupted) {
  hs_ps *p = d->ps;
  double t0 = hs__now();
  hs_status st = post_replies(d);
  ps_hdr h = {.a = steps_done, .b = 0, .kind = K_END, .flags = interrupted ? F_INTERRUPTED : 0u};
  for (int k = 0; k < p->servers && st == HS_OK; k++) {
    memcpy(p->push + p->coff[k], &h, HDR);
    st = hs__comm_isend(d->c, d->workers + k, TAG_PS_PUSH, p->push + p->coff[k], HDR,
                        &p->rq[p->servers + k]);
  }
  /* The servers answer once every worker ended: up to `staleness` steps of
   * the slowest worker later. */
  if (st == HS_OK) st = worker_exchange(d, "the parameter servers' end of epoch");
  for (int k = 0; k < p->servers && st == HS_OK; k++) st = take_reply(d, k, true);
  if (st == HS_OK) st = t->set_params(t->ctx, p->view);
  d->st.comm_s += hs__now() - t0;
  return st;
}

/* ---- server ---------------------------------------------------------------------- */

/* Gradients per update: all workers' unless told otherwise, in both
 * modes, so that an update averages as many gradients as an all-reduce
 * step does (one update per push would multiply the effective learning
 * rate by the workers). */
static int quorum(const hs_dist *d) { return d->cfg.quorum > 0 ? d->cfg.quorum : d->workers; }

static hs_status post_push(hs_dist *d, int w) {
  hs_ps *p = d->ps;
  size_t cap = p->cap[p->k];
  return hs__comm_irecv(d->c, w, TAG_PS_PUSH, p->rx + (size_t)w * cap, cap, &p->srq[w]);
}

/* 1-bit Adam on the server: the frozen denominators of the shard, each
 * unit (a tensor's part in the shard) floored at a tenth of its mean, as
 * the all-reduce's 1-bit Adam floors each tensor (the same with one
 * server). */
static void freeze_den(hs_dist *d) {
  hs_ps *p = d->ps;
  hs_optim_coef kf;
  hs__optim_coef(&d->optim, p->t_freeze, &kf);
  memcpy(p->den, p->v, p->sn * sizeof *p->den);
  for (int i = p->ufirst[p->k]; i < p->ufirst[p->k + 1]; i++)
    hs__onebit_adam_floor(&kf, p->den + (p->u[i].off - p->slo), p->u[i].n);
  p->den_ready = true;
}

static void update(hs_dist *d, const float *g) {
  hs_ps *p = d->ps;
  hs_optim_coef k;
  hs__optim_coef(&d->optim, p->version + 1, &k);
  hs__ref_optim(d->optim.kind, &k, p->sn, p->p, g, p->m, p->v);
  p->version++;
  d->st.updates++;
}

/* 1-bit Adam on the synchronous parameter server (d->ps_oba: staleness 0,
 * full quorum), the all-reduce's 1-bit Adam (dist.c step_onebit_adam)
 * with the server as its second phase: after the last uncompressed
 * update v freezes (den, t_freeze = the updates it saw), and den and m go
 * to each worker with its next answer (an exact one: the workers then
 * hold p and m exactly). From then on a worker pushes u_r = (b1 m +
 * (1 - b1)(g_r + l2 p)) / den, compressed with its error feedback; the
 * server adds them weighted by seeds, adds its own residual, codes the
 * sum once and answers every worker with that code u; server and workers
 * all apply m = u den, p = p decay - lr_t u, the same bits. Compressing
 * the gradients instead, under a live v, inflated v with the compression
 * noise (-8.4 points on the SBM benchmark, seeds 0-2), and under a
 * frozen one let each gradient's error into the momentum at full size
 * (-12.9; bench/dist-accuracy.md). */
static void freeze(hs_dist *d) {
  hs_ps *p = d->ps;
  p->frozen = true;
  p->t_freeze = p->version;
  freeze_den(d);
  for (int w = 0; w < p->workers; w++) p->den_sent[w] = false;
}

int64_t hs__ps_ahead(int64_t pending, int others, int quorum, int staleness) {
  if (quorum < 1 || pending < 0 || others < 0 || staleness < 1) return 0;
  int64_t h = (pending + others) / quorum;
  return h < staleness ? h : staleness;
}

void hs__ps_look_ahead(const hs_optim_cfg *cfg, uint64_t t, int64_t h, size_t n, const float *p,
                       const float *m, const float *v, const float *g, float *out, float *m2,
                       float *v2) {
  memcpy(out, p, n * sizeof *out);
  if (h <= 0) return;
  memcpy(m2, m, n * sizeof *m2);
  memcpy(v2, v, n * sizeof *v2);
  for (int64_t s = 1; s <= h; s++) {
    hs_optim_coef k;
    hs__optim_coef(cfg, t + (uint64_t)s, &k);
    hs__ref_optim(cfg->kind, &k, n, out, g, m2, v2);
  }
}

/* Asynchronous answer to worker w during an epoch: the updates it looks
 * ahead by (see the top of this file); with h > 0, p->ahead holds the
 * answer. */
static int64_t look_ahead(hs_dist *d, int w) {
  hs_ps *p = d->ps;
  int others = 0;
  for (int v = 0; v < p->workers; v++) others += v != w && !p->ended[v];
  int64_t h = hs__ps_ahead(p->pend_pushes, others, quorum(d), d->cfg.staleness);
  if (h == 0) return 0;
  /* The next update's gradient as far as it is known: the mean of those
   * waiting (zero when none waits: the moments alone carry on). */
  for (size_t j = 0; j < p->sn; j++)
    p->g[j] = p->pend_count > 0 ? (float)(p->pend[j] / (double)p->pend_count) : 0.0f;
  hs__ps_look_ahead(&d->optim, p->version, h, p->sn, p->p, p->m, p->v, p->g, p->ahead, p->am,
                    p->av);
  return h;
}

/* Answer worker w (for its push of step `step`); FULL: the whole shard. */
static hs_status reply(hs_dist *d, int w, int64_t step, bool full) {
  hs_ps *p = d->ps;
  size_t cap = p->acap[p->k];
  /* The previous answer to w was received before w pushed again. */
  hs_status st = hs__comm_waitall(d->c, &p->srq[p->workers + w], 1, "an answer");
  if (st != HS_OK) return st;
  uint8_t *msg = p->tx + (size_t)w * cap;
  /* The answer that hands den and m over is exact (the workers then hold
   * p as the server does). */
  bool den = p->frozen && !p->den_sent[w];
  bool cmp = !full && !den && hs__dist_compress_now(d, step);
  ps_hdr h = {.a = (int64_t)p->version, .b = p->k == 0 ? p->sstop_at : -1,
              .kind = full ? K_FULL : K_REPLY, .flags = cmp ? F_CMP : 0u};
  memcpy(msg, &h, HDR);
  float *view = p->views + (size_t)w * p->sn;
  size_t at = HDR;
  if (!full && p->step_ready) {
    h.flags |= F_STEP;
    memcpy(msg, &h, HDR);
    memcpy(msg + HDR, p->ucode, p->ucode_n);
    memcpy(view, p->p, 4 * p->sn);
    return hs__comm_isend(d->c, w, TAG_PS_REPLY, msg, HDR + p->ucode_n,
                          &p->srq[p->workers + w]);
  }
  /* Look ahead (asynchronous answers during the epoch only). */
  int64_t ah = full || d->cfg.staleness == 0 ? 0 : look_ahead(d, w);
  const float *src = ah > 0 ? p->ahead : p->p;
  p->aim[w] = p->version + (uint64_t)ah;
  for (int i = p->ufirst[p->k]; i < p->ufirst[p->k + 1]; i++) {
    const ps_unit *u = &p->u[i];
    size_t o = u->off - p->slo;
    if (cmp && u->compressible) {
      for (size_t j = 0; j < u->n; j++) p->tmp[j] = src[o + j] - view[o + j];
      hs__onebit_encode(p->tmp, u->n, msg + at, NULL);
      hs__onebit_decode(msg + at, u->n, p->tmp);
      for (size_t j = 0; j < u->n; j++) view[o + j] += p->tmp[j];
      at += hs__onebit_bytes(u->n);
    } else {
      memcpy(msg + at, src + o, 4 * u->n);
      memcpy(view + o, src + o, 4 * u->n);
      at += 4 * u->n;
    }
  }
  if (den) {
    if (!p->den_ready) freeze_den(d);
    memcpy(msg + at, p->den, 4 * p->sn);
    memcpy(msg + at + 4 * p->sn, p->m, 4 * p->sn);
    at += 8 * p->sn;
    h.flags |= F_DEN;
    memcpy(msg, &h, HDR);
    p->den_sent[w] = true;
  }
  return hs__comm_isend(d->c, w, TAG_PS_REPLY, msg, at, &p->srq[p->workers + w]);
}

/* Decode worker w's pushed shard into out (sn values, shard-relative);
 * a scaled push (1-bit Adam's u_r) is added as it is. */
static void decode_push(hs_dist *d, const uint8_t *payload, bool cmp, bool scaled, float *out) {
  hs_ps *p = d->ps;
  size_t at = 0;
  for (int i = p->ufirst[p->k]; i < p->ufirst[p->k + 1]; i++) {
    const ps_unit *u = &p->u[i];
    float *dst = out + (u->off - p->slo);
    if (cmp && u->compressible) {
      hs__onebit_decode(payload + at, u->n, dst);
      at += hs__onebit_bytes(u->n);
    } else {
      memcpy(dst, payload + at, 4 * u->n);
      at += 4 * u->n;
    }
  }
  (void)scaled;
}


static int64_t min_clock(const hs_ps *p) {
  int64_t m = INT64_MAX;
  for (int w = 0; w < p->workers; w++)
    if (!p->ended[w] && p->clock[w] < m) m = p->clock[w];
  return m;
}

/* Asynchronous: answer the held-back workers the slowest no longer holds. */
static hs_status release(hs_dist *d) {
  hs_ps *p = d->ps;
  int64_t lo = min_clock(p);
  for (int w = 0; w < p->workers; w++) {
    if (!p->deferred[w] || p->clock[w] - lo > d->cfg.staleness) continue;
    p->deferred[w] = false;
    if (p->clock[w] - lo > d->st.max_staleness) d->st.max_staleness = p->clock[w] - lo;
    hs_status st = reply(d, w, p->defer_step[w], false);
    if (st != HS_OK) return st;
  }
  return HS_OK;
}

/* A synchronous step is complete: the weighted sum in worker order. */
static hs_status apply_sync(hs_dist *d) {
  hs_ps *p = d->ps;
  int64_t total = p->pend_count; /* late gradients of earlier steps */
  for (int w = 0; w < p->workers; w++)
    if (p->arrived[w]) total += p->ccount[w];
  bool any = false;
  for (int w = 0; w < p->workers; w++) {
    if (!p->arrived[w] || p->ccount[w] == 0) continue;
    float wt = (float)((double)p->ccount[w] / (double)total);
    const float *c = p->contrib + (size_t)w * p->sn;
    if (!any)
      for (size_t j = 0; j < p->sn; j++) p->g[j] = wt * c[j];
    else
      for (size_t j = 0; j < p->sn; j++) p->g[j] += wt * c[j];
    any = true;
  }
  /* A step without seeds applies a zero gradient, as the all-reduce does
   * (the optimizer's moments still move). */
  if (!any) memset(p->g, 0, p->sn * sizeof *p->g);
  if (p->pend_count > 0) {
    for (size_t j = 0; j < p->sn; j++) p->g[j] += (float)(p->pend[j] / (double)total);
    memset(p->pend, 0, p->sn * sizeof *p->pend);
    p->pend_count = 0;
  }
  p->step_ready = false;
  if (p->frozen && hs__dist_compress_now(d, p->cur)) {
    if (!p->den_ready) freeze_den(d);
    hs_optim_coef k1;
    hs__optim_coef(&d->optim, 1, &k1);
    if (!any)
      for (size_t j = 0; j < p->sn; j++)
        p->g[j] = (k1.beta1 * p->m[j] + k1.one_minus_beta1 * (0.0f + k1.l2 * p->p[j])) / p->den[j];
    size_t at = 0;
    for (int i = p->ufirst[p->k]; i < p->ufirst[p->k + 1]; i++) {
      const ps_unit *u = &p->u[i];
      float *x = p->g + (u->off - p->slo), *e = p->eo + (u->off - p->slo);
      if (u->compressible) {
        for (size_t j = 0; j < u->n; j++) x[j] += e[j];
        hs__onebit_encode(x, u->n, p->ucode + at, e);
        hs__onebit_decode(p->ucode + at, u->n, x);
        at += hs__onebit_bytes(u->n);
      } else {
        memcpy(p->ucode + at, x, 4 * u->n);
        at += 4 * u->n;
      }
    }
    p->ucode_n = at;
    hs_optim_coef k;
    hs__optim_coef(&d->optim, p->version + 1, &k);
    for (size_t j = 0; j < p->sn; j++) {
      p->m[j] = p->g[j] * p->den[j];
      p->p[j] = p->p[j] * k.decay - k.lr * p->g[j];
    }
    p->version++;
    d->st.updates++;
    p->step_ready = true;
  } else {
    update(d, p->g);
  }
  if (d->ps_oba && !p->frozen && hs__dist_compress_now(d, p->cur + 1)) freeze(d);
  hs_status st = HS_OK;
  for (int w = 0; w < p->workers && st == HS_OK; w++) {
    if (!p->arrived[w]) continue;
    p->arrived[w] = false;
    st = reply(d, w, p->cur, false);
  }
  p->cur++;
  return st;
}

static hs_status flush_async(hs_dist *d) {
  hs_ps *p = d->ps;
  if (p->pend_count > 0) {
    for (size_t j = 0; j < p->sn; j++) p->g[j] = (float)(p->pend[j] / (double)p->pend_count);
    update(d, p->g);
  }
  memset(p->pend, 0, p->sn * sizeof *p->pend);
  p->pend_count = 0;
  p->pend_pushes = 0;
  return HS_OK;
}

static hs_status on_push(hs_dist *d, int w, const ps_hdr *h, const uint8_t *payload) {
  hs_ps *p = d->ps;
  int64_t c = h->a, count = h->b;
  bool cmp = h->flags & F_CMP, scaled = h->flags & F_SCALED;
  if (scaled && !p->frozen)
    return hs__fail(HS_ERR_FORMAT, "server rank %d: worker %d pushed a gradient over 1-bit "
                    "Adam's frozen denominators before they froze", d->rank, w);
  if (d->ps_oba && hs__dist_compress_now(d, c) != p->frozen)
    return hs__fail(HS_ERR_INVALID_ARG, "server rank %d: step %lld is %s the 1-bit Adam warm-up "
                    "(--compress-warmup %lld) but v is %s: the checkpoint was written with "
                    "another warm-up; resume with the warm-up it was written with", d->rank,
                    (long long)c, p->frozen ? "in" : "past", (long long)d->warmup,
                    p->frozen ? "frozen" : "not frozen");
  if (d->ps_oba && p->frozen && !scaled)
    return hs__fail(HS_ERR_FORMAT, "server rank %d: worker %d pushed a gradient, not its part "
                    "of 1-bit Adam's step, after v froze", d->rank, w);
  if (scaled && !p->den_ready) freeze_den(d);
  if (p->k == 0) {
    if (c > p->max_step) p->max_step = c;
    if ((h->flags & F_STOP) && p->sstop_at < 0) p->sstop_at = p->max_step + 2;
  }
  if (d->cfg.staleness == 0) {
    if (p->cur < 0) p->cur = c;
    if (c < p->cur) {
      /* Its step was applied without it: it joins the step being
       * collected, one step stale, so that a straggler's data still
       * count. */
      if (count > 0) {
        d->st.late_gradients++;
        decode_push(d, payload, cmp, scaled, p->g);
        for (size_t j = 0; j < p->sn; j++) p->pend[j] += (double)count * (double)p->g[j];
        p->pend_count += count;
      }
      return reply(d, w, c, false);
    }
    if (c > p->cur || p->arrived[w])
      return hs__fail(HS_ERR_FORMAT, "server rank %d: worker %d pushed step %lld while step %lld "
                      "is collected", d->rank, w, (long long)c, (long long)p->cur);
    if (count > 0) decode_push(d, payload, cmp, scaled, p->contrib + (size_t)w * p->sn);
    p->ccount[w] = count;
    p->arrived[w] = true;
    int n = 0;
    for (int v = 0; v < p->workers; v++) n += p->arrived[v];
    return n >= quorum(d) ? apply_sync(d) : HS_OK;
  }
  /* Updates applied since the version w's answer looked ahead to: its
   * gradient is that late (negative: it came back before the others'
   * pushes it was looked ahead past). */
  int64_t late = (int64_t)(p->version - p->aim[w]);
  if (count > 0) {
    p->lag_hist[late < 1 ? (late < 0 ? 0 : 1) : late < 2 ? 2 : 3]++;
    decode_push(d, payload, cmp, scaled, p->g);
    for (size_t j = 0; j < p->sn; j++) p->pend[j] += (double)count * (double)p->g[j];
    p->pend_count += count;
    p->pend_pushes++;
    if (p->pend_pushes >= quorum(d)) flush_async(d);
  }
  p->clock[w] = c + 1;
  p->deferred[w] = true;
  p->defer_step[w] = c;
  return release(d);
}

hs_status hs__ps_serve(hs_dist *d, int64_t *steps_done, bool *interrupted) {
  hs_ps *p = d->ps;
  int W = p->workers, n_ended = 0;
  size_t cap = p->cap[p->k];
  hs_status st = HS_OK;
  *steps_done = 0;
  *interrupted = false;
  p->cur = -1;
  for (int w = 0; w < W; w++) {
    p->ended[w] = p->arrived[w] = p->deferred[w] = false;
    p->clock[w] = 0;
  }
  int64_t clock0 = -1;
  for (int w = 0; w < W && st == HS_OK; w++) st = post_push(d, w);
  /* Workers start their epoch when they are ready (pipelines filling):
   * the first push may take the long timeout. */
  double saved = hs__comm_set_timeout(d->c, d->cfg.start_timeout_s);
  bool first = true;
  char what[96];
  while (st == HS_OK && n_ended < W) {
    /* Wait only for the workers whose silence would be a fault: not those
     * waiting for this server's answer. */
    int n = 0;
    for (int w = 0; w < W; w++)
      if (!p->ended[w] && !p->arrived[w] && !p->deferred[w]) p->wait_set[n++] = &p->srq[w];
    if (n == 0) {
      st = hs__fail(HS_ERR_STATE, "server rank %d: every worker waits for an answer", d->rank);
      break;
    }
    snprintf(what, sizeof what, "the parameter server's epoch (server rank %d)", d->rank);
    int idx;
    st = hs__comm_waitany(d->c, p->wait_set, n, what, &idx);
    if (st != HS_OK) break;
    if (first) {
      hs__comm_set_timeout(d->c, d->cfg.timeout_s);
      first = false;
    }
    int w = (int)(p->wait_set[idx] - p->srq);
    const uint8_t *msg = p->rx + (size_t)w * cap;
    size_t got = p->srq[w].got;
    ps_hdr h;
    if (got < HDR) {
      st = hs__fail(HS_ERR_FORMAT, "server rank %d: worker %d sent %zu bytes", d->rank, w, got);
      break;
    }
    memcpy(&h, msg, HDR);
    if (h.kind == K_END) {
      p->ended[w] = true;
      n_ended++;
      if (clock0 >= 0 && (h.a != *steps_done || ((h.flags & F_INTERRUPTED) != 0) != *interrupted))
        st = hs__fail(HS_ERR_FORMAT, "server rank %d: workers ended the epoch after different "
                      "steps (%lld and %lld)", d->rank, (long long)*steps_done, (long long)h.a);
      *steps_done = h.a;
      *interrupted = h.flags & F_INTERRUPTED;
      clock0 = 0;
      if (st == HS_OK && d->cfg.staleness > 0) st = release(d);
      continue;
    }
    bool cmp = h.flags & F_CMP;
    if (h.kind != K_PUSH || h.b < 0 ||
        got != HDR + (h.b > 0 ? units_bytes(d, p->k, cmp) : 0)) {
      st = hs__fail(HS_ERR_FORMAT, "server rank %d: worker %d sent kind %u, %zu bytes (the ranks "
                    "disagree on the protocol or the model)", d->rank, w, h.kind, got);
      break;
    }
    st = on_push(d, w, &h, msg + HDR);
    if (st == HS_OK) st = post_push(d, w);
  }
  hs__comm_set_timeout(d->c, saved);
  if (d->cfg.staleness > 0) {
    hs__log(HS_LOG_DIST, "server rank %d: this epoch's gradients applied early / on time / 1 / "
            "2 or more updates late (against the version their answer looked ahead to): %lld / "
            "%lld / %lld / %lld", d->rank, (long long)p->lag_hist[0], (long long)p->lag_hist[1],
            (long long)p->lag_hist[2], (long long)p->lag_hist[3]);
    memset(p->lag_hist, 0, sizeof p->lag_hist);
  }
  /* Asynchronous sums, or late gradients of the epoch's last steps. */
  if (st == HS_OK && p->pend_count > 0) st = flush_async(d);
  for (int w = 0; w < W && st == HS_OK; w++) st = reply(d, w, 0, true);
  if (st == HS_OK) st = hs__comm_waitall(d->c, p->srq + W, W, "the final answers");
  return st;
}

void hs__ps_buffers(const hs_dist *d, size_t *pushes, size_t *answers) {
  const hs_ps *p = d->ps;
  if (d->server) {
    *pushes = (size_t)p->workers * p->cap[p->k];
    *answers = (size_t)p->workers * p->acap[p->k];
  } else {
    *pushes = p->coff[p->servers];
    *answers = p->aoff[p->servers];
  }
}

/* ---- state ------------------------------------------------------------------------ */

hs_status hs__ps_gather_state(hs_dist *d, float *params, float *m, float *v, uint64_t *step) {
  hs_ps *p = d->ps;
  hs_status st = HS_OK;
  if (d->server) {
    uint64_t ver = p->version;
    if ((st = hs__comm_send(d->c, 0, TAG_PS_STATE, &ver, sizeof ver, "the server state")) ==
            HS_OK &&
        (st = hs__comm_send(d->c, 0, TAG_PS_STATE, p->p, p->sn * 4, "the server state")) == HS_OK &&
        (st = hs__comm_send(d->c, 0, TAG_PS_STATE, p->m, p->sn * 4, "the server state")) == HS_OK)
      st = hs__comm_send(d->c, 0, TAG_PS_STATE, p->v, p->sn * 4, "the server state");
    return st;
  }
  if (d->rank != 0) return HS_OK;
  for (int k = 0; k < p->servers && st == HS_OK; k++) {
    int from = p->workers + k;
    size_t lo = p->lo[k], n = p->lo[k + 1] - lo;
    uint64_t ver;
    st = hs__comm_recv(d->c, from, TAG_PS_STATE, &ver, sizeof ver, NULL, "a server's state");
    if (st == HS_OK && k == 0 && step) *step = ver;
    float *dst[3] = {params, m, v};
    for (int a = 0; a < 3 && st == HS_OK; a++) {
      float *to = dst[a] ? dst[a] + lo : malloc(n * 4 + 4);
      if (!to) return hs__fail(HS_ERR_NOMEM, "a server's state");
      st = hs__comm_recv(d->c, from, TAG_PS_STATE, to, n * 4, NULL, "a server's state");
      if (!dst[a]) free(to);
    }
  }
  return st;
}

hs_status hs__ps_scatter_state(hs_dist *d, const hs_dist_model *m) {
  hs_ps *p = d->ps;
  if (!d->server) {
    memcpy(p->view, m->params, d->n * sizeof *p->view);
    if (p->den_have) memset(p->den_have, 0, (size_t)p->servers * sizeof *p->den_have);
    return HS_OK;
  }
  memcpy(p->p, m->params + p->slo, p->sn * 4);
  if (m->m) memcpy(p->m, m->m + p->slo, p->sn * 4);
  else memset(p->m, 0, p->sn * 4);
  if (m->v) memcpy(p->v, m->v + p->slo, p->sn * 4);
  else memset(p->v, 0, p->sn * 4);
  p->version = m->step;
  p->frozen = p->den_ready = p->step_ready = false; /* hs__ps_load_state restores a frozen v */
  if (p->eo) memset(p->eo, 0, p->sn * 4);
  /* The workers resume from p itself. */
  for (int w = 0; w < p->workers; w++) p->aim[w] = p->version;
  for (int w = 0; w < p->workers; w++) memcpy(p->views + (size_t)w * p->sn, p->p, p->sn * 4);
  return HS_OK;
}

/* Workers: u8 flags (1: residual, 2: 1-bit Adam's den and m), then n
 * floats (residual), 2 n (den, m); servers: the views (workers x shard
 * floats), then, once 1-bit Adam froze v, u64 t_freeze and the server's
 * residual of u (shard floats; the frozen v itself is the checkpoint's v). */
static bool worker_has_den(const hs_dist *d) {
  const hs_ps *p = d->ps;
  if (!p->den_have) return false;
  for (int k = 0; k < p->servers; k++)
    if (!p->den_have[k]) return false;
  return true;
}

size_t hs__ps_state_bytes(const hs_dist *d) {
  const hs_ps *p = d->ps;
  if (d->server) return (size_t)p->workers * p->sn * 4 + (p->frozen ? 8 + p->sn * 4 : 0);
  return 1 + (p->ew ? d->n * 4 : 0) + (worker_has_den(d) ? 2 * d->n * 4 : 0);
}

hs_status hs__ps_save_state(hs_dist *d, uint8_t *buf) {
  hs_ps *p = d->ps;
  if (d->server) {
    memcpy(buf, p->views, (size_t)p->workers * p->sn * 4);
    if (p->frozen) {
      memcpy(buf + (size_t)p->workers * p->sn * 4, &p->t_freeze, 8);
      memcpy(buf + (size_t)p->workers * p->sn * 4 + 8, p->eo, p->sn * 4);
    }
    return HS_OK;
  }
  bool den = worker_has_den(d);
  buf[0] = (p->ew ? 1u : 0u) | (den ? 2u : 0u);
  if (p->ew) memcpy(buf + 1, p->ew, d->n * 4);
  if (den) {
    memcpy(buf + 1 + (p->ew ? d->n * 4 : 0), p->wden, d->n * 4);
    memcpy(buf + 1 + (p->ew ? d->n * 4 : 0) + d->n * 4, p->wm, d->n * 4);
  }
  return HS_OK;
}

hs_status hs__ps_load_state(hs_dist *d, const uint8_t *buf, size_t len) {
  hs_ps *p = d->ps;
  size_t views = (size_t)p->workers * p->sn * 4;
  uint8_t wf = !d->server && len > 0 ? buf[0] : 0;
  size_t want = d->server ? views : 1 + (wf & 1 ? d->n * 4 : 0) + (wf & 2 ? 2 * d->n * 4 : 0);
  if (!d->server && (wf > 3 || ((wf & 2) && !p->wden)))
    return hs__fail(HS_ERR_FORMAT, "parameter server state: worker flags %u (1-bit Adam's "
                    "denominators without 1-bit Adam?)", wf);
  bool frozen = d->server && d->ps_oba && len == views + 8 + p->sn * 4;
  if (len != want && !frozen)
    return hs__fail(HS_ERR_FORMAT, "parameter server state: %zu bytes, %zu expected%s", len,
                    want, d->server && d->ps_oba ? " (or more with 1-bit Adam's frozen state)" : "");
  if (d->server) {
    memcpy(p->views, buf, views);
    if (frozen) {
      memcpy(&p->t_freeze, buf + views, 8);
      memcpy(p->eo, buf + views + 8, p->sn * 4);
      if (p->t_freeze < 1)
        return hs__fail(HS_ERR_FORMAT, "parameter server state: 1-bit Adam froze v after %llu "
                        "updates (at least 1 expected)", (unsigned long long)p->t_freeze);
      p->frozen = true;
      p->den_ready = false;
      /* Every worker had it with the answers of that epoch's end. */
      for (int w = 0; w < p->workers; w++) p->den_sent[w] = true;
    }
    return HS_OK;
  }
  if (wf & 2) {
    memcpy(p->wden, buf + 1 + (wf & 1 ? d->n * 4 : 0), d->n * 4);
    memcpy(p->wm, buf + 1 + (wf & 1 ? d->n * 4 : 0) + d->n * 4, d->n * 4);
    for (int k = 0; k < p->servers; k++) p->den_have[k] = true;
  }
  if (!(wf & 1)) return HS_OK;
  if (!p->ew && !(p->ew = malloc(d->n * 4)))
    return hs__fail(HS_ERR_NOMEM, "error feedback (%zu values)", d->n);
  memcpy(p->ew, buf + 1, d->n * 4);
  return HS_OK;
}
