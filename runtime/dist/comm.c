/* The backend-independent half of the communication module (hs_comm.h):
 * argument checks, traffic counters, bounded waits that name the silent
 * rank, and the collectives, built from point-to-point messages so that
 * their arithmetic happens in rank order on every backend. */
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dist/comm_int.h"

enum {
  TAG_BARRIER = HS_COMM_TAG_USER_MAX + 1,
  TAG_BCAST,
  TAG_GATHER,
  TAG_ALLGATHER,
  TAG_ALLTOALL,
  TAG_MAX_ = 32767, /* the smallest tag bound MPI guarantees */
};

hs_comm *hs__comm_new(const hs_comm_ops *ops, int rank, int size, void *impl) {
  hs_comm *c = calloc(1, sizeof *c);
  if (!c) return NULL;
  c->ops = ops;
  c->rank = rank;
  c->size = size;
  c->timeout_s = 60.0;
  c->impl = impl;
  return c;
}

void hs__comm_destroy(hs_comm *c) {
  if (!c) return;
  c->ops->destroy(c);
  free(c);
}

int hs__comm_rank(const hs_comm *c) { return c->rank; }
int hs__comm_size(const hs_comm *c) { return c->size; }
const char *hs__comm_backend(const hs_comm *c) { return c->ops->name; }
void hs__comm_host(const hs_comm *c, char *buf, size_t len) { c->ops->host(c, buf, len); }

double hs__comm_set_timeout(hs_comm *c, double seconds) {
  double old = c->timeout_s;
  c->timeout_s = seconds > 0 ? seconds : old;
  return old;
}
double hs__comm_timeout(const hs_comm *c) { return c->timeout_s; }

void hs__comm_counters(const hs_comm *c, hs_comm_counters *out) { *out = c->cnt; }
void hs__comm_counters_reset(hs_comm *c) { memset(&c->cnt, 0, sizeof c->cnt); }

/* ---- point-to-point ------------------------------------------------------- */

static hs_status check_post(const hs_comm *c, int peer, int tag, size_t bytes, const char *op) {
  if (peer < 0 || peer >= c->size)
    return hs__fail(HS_ERR_INVALID_ARG, "%s: rank %d outside 0..%d", op, peer, c->size - 1);
  if (tag < 0 || tag > TAG_MAX_)
    return hs__fail(HS_ERR_INVALID_ARG, "%s: tag %d outside 0..%d", op, tag, TAG_MAX_);
  if (bytes > INT_MAX)
    return hs__fail(HS_ERR_RANGE, "%s: message of %zu bytes to rank %d exceeds %d bytes", op,
                    bytes, peer, INT_MAX);
  return HS_OK;
}

static void req_init(hs_comm_req *req, int peer, int tag, void *buf, size_t bytes, bool recv) {
  memset(req, 0, sizeof *req);
  req->peer = peer;
  req->tag = tag;
  req->buf = buf;
  req->bytes = bytes;
  req->recv = recv;
  req->active = true;
}

hs_status hs__comm_isend(hs_comm *c, int peer, int tag, const void *buf, size_t bytes,
                         hs_comm_req *req) {
  memset(req, 0, sizeof *req);
  hs_status st = check_post(c, peer, tag, bytes, "send");
  if (st != HS_OK) return st;
  req_init(req, peer, tag, (void *)buf, bytes, false);
  st = c->ops->isend(c, req);
  if (st != HS_OK) {
    req->active = false;
    return st;
  }
  c->cnt.bytes_sent += bytes;
  c->cnt.msgs_sent++;
  return HS_OK;
}

hs_status hs__comm_irecv(hs_comm *c, int peer, int tag, void *buf, size_t cap, hs_comm_req *req) {
  memset(req, 0, sizeof *req);
  hs_status st = check_post(c, peer, tag, cap, "receive");
  if (st != HS_OK) return st;
  req_init(req, peer, tag, buf, cap, true);
  st = c->ops->irecv(c, req);
  if (st != HS_OK) req->active = false;
  return st;
}

hs_status hs__comm_test(hs_comm *c, hs_comm_req *req, bool *done) {
  *done = true;
  if (!req->active) return HS_OK;
  hs_status st = c->ops->test(c, req);
  if (st != HS_OK) {
    req->active = false;
    return st;
  }
  if (!req->done) {
    *done = false;
    return HS_OK;
  }
  req->active = false;
  if (req->recv) {
    c->cnt.bytes_recv += req->got;
    c->cnt.msgs_recv++;
  }
  return HS_OK;
}

void hs__comm_cancel(hs_comm *c, hs_comm_req *req) {
  if (!req->active) return;
  c->ops->cancel(c, req);
  req->active = false;
}

/* Waits poll: a few yields first (a reply often comes within
 * microseconds), then sleeps growing to 0.5 ms, so that ranks sharing
 * cores with their peers leave them the CPU. */
static void backoff(unsigned *polls) {
  if (*polls < 32) {
    sched_yield();
  } else {
    unsigned us = *polls < 64 ? 20u : *polls < 128 ? 100u : 500u;
    struct timespec ts = {0, (long)us * 1000L};
    nanosleep(&ts, NULL);
  }
  (*polls)++;
}

/* The i-th request of a wait: from an array of requests or of pointers. */
static hs_comm_req *req_at(hs_comm_req *arr, hs_comm_req *const *ptrs, int i) {
  return ptrs ? ptrs[i] : &arr[i];
}

/* The timeout's detail: the ranks whose requests are still pending. */
static hs_status timed_out(const hs_comm *c, hs_comm_req *arr, hs_comm_req *const *ptrs, int n,
                           const char *what, double waited) {
  char ranks[160] = "";
  size_t len = 0;
  int shown = 0;
  bool recv = false;
  for (int i = 0; i < n; i++) {
    const hs_comm_req *ri = req_at(arr, ptrs, i);
    if (!ri->active) continue;
    bool dup = false;
    for (int j = 0; j < i && !dup; j++) {
      const hs_comm_req *rj = req_at(arr, ptrs, j);
      dup = rj->active && rj->peer == ri->peer;
    }
    if (dup) continue;
    recv = recv || ri->recv;
    if (shown < 8 && len < sizeof ranks) {
      int k = snprintf(ranks + len, sizeof ranks - len, "%s%d", shown ? ", " : "", ri->peer);
      if (k > 0) len += (size_t)k;
    } else if (shown == 8 && len < sizeof ranks) {
      int k = snprintf(ranks + len, sizeof ranks - len, ", ...");
      if (k > 0) len += (size_t)k;
    }
    shown++;
  }
  return hs__fail(HS_ERR_PEER,
                  "rank %d: rank%s %s %s nothing for %.0f s during %s "
                  "(died, stalled or left the run)",
                  c->rank, shown > 1 ? "s" : "", ranks,
                  recv ? "sent" : "received", waited, what ? what : "an exchange");
}

/* Poll until every active request completed, or (any) one of them. */
static hs_status wait_some(hs_comm *c, hs_comm_req *arr, hs_comm_req *const *ptrs, int n,
                           const char *what, bool any, int *index) {
  double t0 = hs__now(), last = t0;
  unsigned polls = 0;
  hs_status st = HS_OK;
  if (index) *index = -1;
  for (;;) {
    bool all = true, progress = false, had_active = false;
    for (int i = 0; i < n; i++) {
      hs_comm_req *r = req_at(arr, ptrs, i);
      if (!r->active) continue;
      had_active = true;
      bool done;
      if ((st = hs__comm_test(c, r, &done)) != HS_OK) goto out;
      if (done) {
        progress = true;
        if (any) {
          if (index) *index = i;
          goto out;
        }
      } else {
        all = false;
      }
    }
    if (!had_active || (all && !any)) goto out;
    double now = hs__now();
    if (progress) {
      last = now;
      polls = 0;
      continue;
    }
    if ((st = c->ops->check_abort(c)) != HS_OK) goto out;
    if (now - last > c->timeout_s) {
      /* The message states the timeout that ran out, not the time
       * measured: a loaded machine oversleeps the last nap by a little. */
      st = timed_out(c, arr, ptrs, n, what, c->timeout_s);
      goto out;
    }
    backoff(&polls);
  }
out:
  c->cnt.wait_s += hs__now() - t0;
  return st;
}

hs_status hs__comm_waitall(hs_comm *c, hs_comm_req *reqs, int n, const char *what) {
  return wait_some(c, reqs, NULL, n, what, false, NULL);
}

hs_status hs__comm_waitany(hs_comm *c, hs_comm_req *const *reqs, int n, const char *what,
                           int *index) {
  return wait_some(c, NULL, reqs, n, what, true, index);
}

hs_status hs__comm_send(hs_comm *c, int peer, int tag, const void *buf, size_t bytes,
                        const char *what) {
  hs_comm_req r;
  hs_status st = hs__comm_isend(c, peer, tag, buf, bytes, &r);
  return st == HS_OK ? hs__comm_waitall(c, &r, 1, what) : st;
}

hs_status hs__comm_recv(hs_comm *c, int peer, int tag, void *buf, size_t cap, size_t *got,
                        const char *what) {
  hs_comm_req r;
  hs_status st = hs__comm_irecv(c, peer, tag, buf, cap, &r);
  if (st == HS_OK) st = hs__comm_waitall(c, &r, 1, what);
  if (st == HS_OK && got) *got = r.got;
  return st;
}

/* ---- collectives ---------------------------------------------------------------- */

/* Requests for exchanges with every peer: 2 per rank, on the stack up to
 * 64 ranks. */
typedef struct req_set {
  hs_comm_req local[128];
  hs_comm_req *r;
  int n;
} req_set;

static hs_status reqs_open(req_set *s, int n) {
  s->n = 0;
  s->r = n <= (int)HS_ARRAY_LEN(s->local) ? s->local : malloc((size_t)n * sizeof *s->r);
  return s->r ? HS_OK : hs__fail(HS_ERR_NOMEM, "requests for %d messages", n);
}

static void reqs_close(hs_comm *c, req_set *s, hs_status st) {
  if (st != HS_OK)
    for (int i = 0; i < s->n; i++) hs__comm_cancel(c, &s->r[i]);
  if (s->r != s->local) free(s->r);
}

/* Send sbuf(p) / receive rbuf(p) with every peer p != self (either side
 * NULL with 0 bytes: nothing that way), then wait. */
static hs_status exchange(hs_comm *c, int tag, const uint8_t *send, const size_t *scount,
                          const size_t *soff, uint8_t *recv, const size_t *rcount,
                          const size_t *roff, bool to_all, bool from_all, const char *what) {
  req_set s;
  hs_status st = reqs_open(&s, 2 * c->size);
  if (st != HS_OK) return st;
  for (int p = 0; p < c->size && st == HS_OK; p++) {
    if (p == c->rank || !from_all) continue;
    st = hs__comm_irecv(c, p, tag, recv + roff[p], rcount[p], &s.r[s.n]);
    if (st == HS_OK) s.n++;
  }
  for (int p = 0; p < c->size && st == HS_OK; p++) {
    if (p == c->rank || !to_all) continue;
    st = hs__comm_isend(c, p, tag, send + soff[p], scount[p], &s.r[s.n]);
    if (st == HS_OK) s.n++;
  }
  if (st == HS_OK) st = hs__comm_waitall(c, s.r, s.n, what);
  for (int i = 0; st == HS_OK && i < s.n; i++)
    if (s.r[i].recv && s.r[i].got != rcount[s.r[i].peer])
      st = hs__fail(HS_ERR_FORMAT, "rank %d: %s: rank %d sent %zu bytes, %zu expected", c->rank,
                    what, s.r[i].peer, s.r[i].got, rcount[s.r[i].peer]);
  reqs_close(c, &s, st);
  return st;
}

/* Uniform counts and offsets for n ranks of `bytes` each. */
static hs_status uniform(int n, size_t bytes, bool stride, size_t **counts, size_t **offs) {
  *counts = malloc(2 * (size_t)n * sizeof **counts);
  if (!*counts) return hs__fail(HS_ERR_NOMEM, "counts for %d ranks", n);
  *offs = *counts + n;
  for (int p = 0; p < n; p++) {
    (*counts)[p] = bytes;
    (*offs)[p] = stride ? (size_t)p * bytes : 0;
  }
  return HS_OK;
}

hs_status hs__comm_barrier(hs_comm *c, const char *what) {
  /* Every rank hears from every other directly, so a silent one is named
   * by all (a tree would blame the silent rank's parent). */
  uint8_t none = 0;
  size_t *cnt = NULL, *off = NULL;
  hs_status st = uniform(c->size, 0, false, &cnt, &off);
  if (st != HS_OK) return st;
  st = exchange(c, TAG_BARRIER, &none, cnt, off, &none, cnt, off, true, true,
                what ? what : "a barrier");
  free(cnt);
  return st;
}

hs_status hs__comm_bcast(hs_comm *c, int root, void *buf, size_t bytes, const char *what) {
  if (root < 0 || root >= c->size)
    return hs__fail(HS_ERR_INVALID_ARG, "broadcast from rank %d of %d", root, c->size);
  if (c->size == 1) return HS_OK;
  if (c->rank != root) return hs__comm_recv(c, root, TAG_BCAST, buf, bytes, NULL, what);
  size_t *cnt = NULL, *off = NULL;
  hs_status st = uniform(c->size, bytes, false, &cnt, &off);
  if (st != HS_OK) return st;
  st = exchange(c, TAG_BCAST, buf, cnt, off, NULL, cnt, off, true, false, what);
  free(cnt);
  return st;
}

hs_status hs__comm_gather(hs_comm *c, int root, const void *send, size_t bytes, void *recv,
                          const char *what) {
  if (root < 0 || root >= c->size)
    return hs__fail(HS_ERR_INVALID_ARG, "gather to rank %d of %d", root, c->size);
  if (c->rank != root) return hs__comm_send(c, root, TAG_GATHER, send, bytes, what);
  if (bytes) memmove((uint8_t *)recv + (size_t)root * bytes, send, bytes);
  if (c->size == 1) return HS_OK;
  size_t *cnt = NULL, *off = NULL;
  hs_status st = uniform(c->size, bytes, true, &cnt, &off);
  if (st != HS_OK) return st;
  st = exchange(c, TAG_GATHER, NULL, cnt, off, recv, cnt, off, false, true, what);
  free(cnt);
  return st;
}

hs_status hs__comm_allgather(hs_comm *c, const void *send, size_t bytes, void *recv,
                             const char *what) {
  uint8_t *mine = (uint8_t *)recv + (size_t)c->rank * bytes;
  if (bytes && mine != send) memmove(mine, send, bytes);
  if (c->size == 1) return HS_OK;
  size_t *cnt = NULL, *off = NULL, *soff;
  hs_status st = uniform(c->size, bytes, true, &cnt, &off);
  if (st != HS_OK) return st;
  /* Every peer gets this rank's block, read from where it now lies. */
  soff = malloc((size_t)c->size * sizeof *soff);
  if (!soff) {
    free(cnt);
    return hs__fail(HS_ERR_NOMEM, "allgather offsets");
  }
  for (int p = 0; p < c->size; p++) soff[p] = (size_t)c->rank * bytes;
  st = exchange(c, TAG_ALLGATHER, recv, cnt, soff, recv, cnt, off, true, true, what);
  free(soff);
  free(cnt);
  return st;
}

hs_status hs__comm_alltoall(hs_comm *c, const void *send, size_t bytes, void *recv,
                            const char *what) {
  size_t *cnt = NULL, *off = NULL;
  hs_status st = uniform(c->size, bytes, true, &cnt, &off);
  if (st != HS_OK) return st;
  st = hs__comm_alltoallv(c, send, cnt, off, recv, cnt, off, what);
  free(cnt);
  return st;
}

hs_status hs__comm_alltoallv(hs_comm *c, const void *send, const size_t *send_counts,
                             const size_t *send_offs, void *recv, const size_t *recv_counts,
                             const size_t *recv_offs, const char *what) {
  size_t self = send_counts[c->rank];
  if (self != recv_counts[c->rank])
    return hs__fail(HS_ERR_INVALID_ARG, "all-to-all: rank %d sends itself %zu bytes, expects %zu",
                    c->rank, self, recv_counts[c->rank]);
  if (self)
    memmove((uint8_t *)recv + recv_offs[c->rank], (const uint8_t *)send + send_offs[c->rank],
            self);
  if (c->size == 1) return HS_OK;
  return exchange(c, TAG_ALLTOALL, send, send_counts, send_offs, recv, recv_counts, recv_offs,
                  true, true, what);
}

enum { SMALL_MAX = 64 };

/* All ranks' n values, to be combined in rank order by the caller. */
static hs_status small_allgather(hs_comm *c, const void *vals, int n, size_t elem, void **all,
                                 const char *what) {
  if (n < 0 || n > SMALL_MAX)
    return hs__fail(HS_ERR_INVALID_ARG, "reduction of %d values (at most %d)", n, SMALL_MAX);
  *all = malloc((size_t)c->size * (size_t)n * elem + 1);
  if (!*all) return hs__fail(HS_ERR_NOMEM, "reduction buffer");
  hs_status st = hs__comm_allgather(c, vals, (size_t)n * elem, *all, what ? what : "a reduction");
  if (st != HS_OK) free(*all);
  return st;
}

hs_status hs__comm_sum_f64(hs_comm *c, double *vals, int n, const char *what) {
  void *buf;
  hs_status st = small_allgather(c, vals, n, sizeof *vals, &buf, what);
  if (st != HS_OK) return st;
  const double *all = buf;
  for (int i = 0; i < n; i++) {
    double s = all[i];
    for (int r = 1; r < c->size; r++) s += all[(size_t)r * (size_t)n + (size_t)i];
    vals[i] = s;
  }
  free(buf);
  return HS_OK;
}

hs_status hs__comm_max_f64(hs_comm *c, double *vals, int n, const char *what) {
  void *buf;
  hs_status st = small_allgather(c, vals, n, sizeof *vals, &buf, what);
  if (st != HS_OK) return st;
  const double *all = buf;
  for (int i = 0; i < n; i++) {
    double m = all[i];
    for (int r = 1; r < c->size; r++) {
      double v = all[(size_t)r * (size_t)n + (size_t)i];
      if (v > m) m = v;
    }
    vals[i] = m;
  }
  free(buf);
  return HS_OK;
}

hs_status hs__comm_sum_i64(hs_comm *c, int64_t *vals, int n, const char *what) {
  void *buf;
  hs_status st = small_allgather(c, vals, n, sizeof *vals, &buf, what);
  if (st != HS_OK) return st;
  const int64_t *all = buf;
  for (int i = 0; i < n; i++) {
    int64_t s = 0;
    for (int r = 0; r < c->size; r++) s += all[(size_t)r * (size_t)n + (size_t)i];
    vals[i] = s;
  }
  free(buf);
  return HS_OK;
}

void hs__comm_abort(hs_comm *c, int code) { c->ops->abort(c, code); }
