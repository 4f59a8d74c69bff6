/* The local backend (hs_comm.h): the ranks of a group are threads of one
 * process. A send copies the message into the destination's queue (so it
 * completes at once); a receive takes the first queued message from its
 * peer with its tag, receives being matched in the order they were posted.
 * A group of one is the world of a single process. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dist/comm_int.h"

typedef struct lmsg {
  struct lmsg *next;
  int src, tag;
  size_t bytes;
  unsigned char data[];
} lmsg;

typedef struct lgroup {
  pthread_mutex_t mu;
  int size, refs;
  lmsg **head, **tail; /* per destination, FIFO */
  int aborted_by;      /* -1: nobody */
  int abort_code;
} lgroup;

typedef struct lcomm {
  lgroup *g;
  hs_comm_req *posted; /* receives not yet matched, in post order */
} lcomm;

enum { RECV_TOO_LONG = 1 };

static hs_status l_isend(hs_comm *c, hs_comm_req *req) {
  lcomm *lc = c->impl;
  lmsg *m = malloc(sizeof *m + req->bytes + 1);
  if (!m) return hs__fail(HS_ERR_NOMEM, "message of %zu bytes", req->bytes);
  m->next = NULL;
  m->src = c->rank;
  m->tag = req->tag;
  m->bytes = req->bytes;
  if (req->bytes) memcpy(m->data, req->buf, req->bytes);
  lgroup *g = lc->g;
  pthread_mutex_lock(&g->mu);
  if (g->tail[req->peer])
    g->tail[req->peer]->next = m;
  else
    g->head[req->peer] = m;
  g->tail[req->peer] = m;
  pthread_mutex_unlock(&g->mu);
  req->done = true;
  return HS_OK;
}

static hs_status l_irecv(hs_comm *c, hs_comm_req *req) {
  lcomm *lc = c->impl;
  hs_comm_req **p = &lc->posted;
  while (*p) p = &(*p)->next_posted;
  req->next_posted = NULL;
  *p = req;
  return HS_OK;
}

static void unpost(lcomm *lc, hs_comm_req *req) {
  for (hs_comm_req **p = &lc->posted; *p; p = &(*p)->next_posted)
    if (*p == req) {
      *p = req->next_posted;
      return;
    }
}

/* Match posted receives, oldest first, against this rank's queue. */
static void match(hs_comm *c) {
  lcomm *lc = c->impl;
  lgroup *g = lc->g;
  pthread_mutex_lock(&g->mu);
  hs_comm_req **p = &lc->posted;
  while (*p) {
    hs_comm_req *req = *p;
    lmsg *prev = NULL, *m = g->head[c->rank];
    while (m && !(m->src == req->peer && m->tag == req->tag)) {
      prev = m;
      m = m->next;
    }
    if (!m) {
      p = &req->next_posted;
      continue;
    }
    if (prev)
      prev->next = m->next;
    else
      g->head[c->rank] = m->next;
    if (g->tail[c->rank] == m) g->tail[c->rank] = prev;
    if (m->bytes > req->bytes) {
      req->impl[0] = RECV_TOO_LONG;
    } else if (m->bytes) {
      memcpy(req->buf, m->data, m->bytes);
    }
    req->got = m->bytes;
    req->done = true;
    free(m);
    *p = req->next_posted;
  }
  pthread_mutex_unlock(&g->mu);
}

static hs_status l_test(hs_comm *c, hs_comm_req *req) {
  if (!req->done && req->recv) match(c);
  if (req->done && req->recv && req->impl[0] == RECV_TOO_LONG)
    return hs__fail(HS_ERR_RANGE, "rank %d: rank %d sent %zu bytes (tag %d), at most %zu expected",
                    c->rank, req->peer, req->got, req->tag, req->bytes);
  return HS_OK;
}

static void l_cancel(hs_comm *c, hs_comm_req *req) {
  if (req->recv) unpost(c->impl, req);
}

static hs_status l_check_abort(hs_comm *c) {
  lcomm *lc = c->impl;
  pthread_mutex_lock(&lc->g->mu);
  int by = lc->g->aborted_by, code = lc->g->abort_code;
  pthread_mutex_unlock(&lc->g->mu);
  if (by >= 0 && by != c->rank)
    return hs__fail(HS_ERR_PEER, "rank %d: rank %d ended the run (status %d)", c->rank, by, code);
  return HS_OK;
}

static void l_abort(hs_comm *c, int code) {
  lcomm *lc = c->impl;
  pthread_mutex_lock(&lc->g->mu);
  if (lc->g->aborted_by < 0) {
    lc->g->aborted_by = c->rank;
    lc->g->abort_code = code;
  }
  pthread_mutex_unlock(&lc->g->mu);
}

static void l_host(const hs_comm *c, char *buf, size_t len) {
  (void)c;
  if (len == 0) return;
  if (gethostname(buf, len) != 0) buf[0] = '\0';
  buf[len - 1] = '\0';
}

static void group_release(lgroup *g) {
  pthread_mutex_lock(&g->mu);
  int left = --g->refs;
  pthread_mutex_unlock(&g->mu);
  if (left > 0) return;
  for (int r = 0; r < g->size; r++)
    for (lmsg *m = g->head[r]; m;) {
      lmsg *next = m->next;
      free(m);
      m = next;
    }
  pthread_mutex_destroy(&g->mu);
  free(g->head);
  free(g);
}

static void l_destroy(hs_comm *c) {
  lcomm *lc = c->impl;
  if (!lc) return;
  group_release(lc->g);
  free(lc);
}

static const hs_comm_ops local_ops = {
    .name = "local",
    .isend = l_isend,
    .irecv = l_irecv,
    .test = l_test,
    .cancel = l_cancel,
    .check_abort = l_check_abort,
    .abort = l_abort,
    .host = l_host,
    .destroy = l_destroy,
};

hs_status hs__comm_open_local(int size, hs_comm **out) {
  if (size < 1 || size > 4096)
    return hs__fail(HS_ERR_INVALID_ARG, "local group of %d ranks (1..4096)", size);
  for (int r = 0; r < size; r++) out[r] = NULL;
  lgroup *g = calloc(1, sizeof *g);
  if (!g) return hs__fail(HS_ERR_NOMEM, "local group");
  g->head = calloc(2 * (size_t)size, sizeof *g->head);
  if (!g->head) {
    free(g);
    return hs__fail(HS_ERR_NOMEM, "local group");
  }
  g->tail = g->head + size;
  g->size = size;
  g->aborted_by = -1;
  pthread_mutex_init(&g->mu, NULL);
  for (int r = 0; r < size; r++) {
    lcomm *lc = calloc(1, sizeof *lc);
    hs_comm *c = lc ? hs__comm_new(&local_ops, r, size, lc) : NULL;
    if (!c) {
      free(lc);
      for (int q = 0; q < r; q++) hs__comm_destroy(out[q]);
      if (r == 0) {
        pthread_mutex_destroy(&g->mu);
        free(g->head);
        free(g);
      }
      return hs__fail(HS_ERR_NOMEM, "local group");
    }
    lc->g = g;
    g->refs++;
    out[r] = c;
  }
  return HS_OK;
}
