/* The MPI backend (hs_comm.h): the one file of hetsage that calls MPI.
 * Errors are returned, not fatal (MPI_ERRORS_RETURN on our duplicate
 * communicator), so that a failed peer is reported by rank. */
#include <limits.h>
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "dist/comm_int.h"

_Static_assert(sizeof(MPI_Request) <= sizeof(((hs_comm_req *)0)->impl),
               "hs_comm_req holds an MPI_Request");

typedef struct mcomm {
  MPI_Comm comm;
  bool own_mpi; /* MPI_Init was ours: MPI_Finalize is too */
} mcomm;

static hs_status mpi_fail(const hs_comm *c, int rc, const char *call, int peer) {
  char msg[MPI_MAX_ERROR_STRING + 1] = "";
  int len = 0;
  if (MPI_Error_string(rc, msg, &len) != MPI_SUCCESS) snprintf(msg, sizeof msg, "error %d", rc);
  if (peer >= 0)
    return hs__fail(HS_ERR_PEER, "rank %d: %s with rank %d failed: %s", c->rank, call, peer, msg);
  return hs__fail(HS_ERR_PEER, "rank %d: %s failed: %s", c->rank, call, msg);
}

static MPI_Request *req_handle(hs_comm_req *req) { return (MPI_Request *)(void *)req->impl; }

static hs_status m_isend(hs_comm *c, hs_comm_req *req) {
  mcomm *m = c->impl;
  int rc = MPI_Isend(req->buf, (int)req->bytes, MPI_BYTE, req->peer, req->tag, m->comm,
                     req_handle(req));
  return rc == MPI_SUCCESS ? HS_OK : mpi_fail(c, rc, "MPI_Isend", req->peer);
}

static hs_status m_irecv(hs_comm *c, hs_comm_req *req) {
  mcomm *m = c->impl;
  int rc = MPI_Irecv(req->buf, (int)req->bytes, MPI_BYTE, req->peer, req->tag, m->comm,
                     req_handle(req));
  return rc == MPI_SUCCESS ? HS_OK : mpi_fail(c, rc, "MPI_Irecv", req->peer);
}

static hs_status m_test(hs_comm *c, hs_comm_req *req) {
  int flag = 0;
  MPI_Status status;
  int rc = MPI_Test(req_handle(req), &flag, &status);
  if (rc != MPI_SUCCESS) {
    /* A receive longer than its buffer is our error, not the peer's. */
    int cls = 0;
    MPI_Error_class(rc, &cls);
    if (cls == MPI_ERR_TRUNCATE)
      return hs__fail(HS_ERR_RANGE, "rank %d: rank %d sent more than %zu bytes (tag %d)",
                      c->rank, req->peer, req->bytes, req->tag);
    return mpi_fail(c, rc, req->recv ? "receiving" : "sending", req->peer);
  }
  if (!flag) return HS_OK;
  req->done = true;
  if (req->recv) {
    int count = 0;
    MPI_Get_count(&status, MPI_BYTE, &count);
    req->got = count > 0 ? (size_t)count : 0;
  }
  return HS_OK;
}

static void m_cancel(hs_comm *c, hs_comm_req *req) {
  (void)c;
  MPI_Request *h = req_handle(req);
  if (*h == MPI_REQUEST_NULL) return;
  /* A send is left to complete on its own (cancelling sends is deprecated). */
  if (req->recv) MPI_Cancel(h);
  MPI_Request_free(h);
}

static hs_status m_check_abort(hs_comm *c) {
  (void)c; /* MPI_Abort ends every process: nothing to poll */
  return HS_OK;
}

static void m_abort(hs_comm *c, int code) {
  mcomm *m = c->impl;
  MPI_Abort(m->comm, code);
}

static void m_host(const hs_comm *c, char *buf, size_t len) {
  (void)c;
  char name[MPI_MAX_PROCESSOR_NAME + 1] = "";
  int n = 0;
  if (MPI_Get_processor_name(name, &n) != MPI_SUCCESS) name[0] = '\0';
  snprintf(buf, len, "%s", name);
}

/* MPI_Finalize of MPICH 4.0 over UCX's TCP transport (UCX 1.13) can wait
 * forever closing its connection to a peer that has closed its own and
 * waits in the launcher's exit barrier, where it makes no more progress
 * (seen on three namespace hosts in about one run in five; Open MPI's TCP
 * transport does not do it). Once every rank has reached the end (a
 * barrier that completed), nothing of ours is left to deliver: a rank
 * still in MPI_Finalize FINALIZE_GRACE_S later ends its process with status
 * 0, which lets the launcher end the others. */
#define FINALIZE_GRACE_S 5

typedef struct fin_guard {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  bool done;
  int rank;
} fin_guard;

static void *fin_watch(void *arg) {
  fin_guard *g = arg;
  struct timespec end;
  clock_gettime(CLOCK_REALTIME, &end);
  end.tv_sec += FINALIZE_GRACE_S;
  pthread_mutex_lock(&g->mu);
  while (!g->done)
    if (pthread_cond_timedwait(&g->cv, &g->mu, &end) != 0 && !g->done) {
      hs__log(HS_LOG_DIST, "rank %d: MPI_Finalize still running %d s after every rank ended; "
              "ending the process", g->rank, FINALIZE_GRACE_S);
      fflush(NULL);
      _exit(0);
    }
  pthread_mutex_unlock(&g->mu);
  return NULL;
}

/* Every rank at the end: a non-blocking barrier waited for at most the
 * communicator's timeout (a world that lost a rank must still end). */
static bool all_ended(hs_comm *c, mcomm *m) {
  MPI_Request r = MPI_REQUEST_NULL;
  if (MPI_Ibarrier(m->comm, &r) != MPI_SUCCESS) return false;
  double end = MPI_Wtime() + c->timeout_s;
  int done = 0;
  while (MPI_Test(&r, &done, MPI_STATUS_IGNORE) == MPI_SUCCESS && !done && MPI_Wtime() < end)
    usleep(200);
  if (!done) MPI_Request_free(&r);
  return done != 0;
}

static void m_destroy(hs_comm *c) {
  mcomm *m = c->impl;
  if (!m) return;
  bool ended = false;
  if (m->comm != MPI_COMM_NULL) {
    ended = m->own_mpi && all_ended(c, m);
    MPI_Comm_free(&m->comm);
  }
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (m->own_mpi && !finalized) {
    fin_guard g = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, false, c->rank};
    pthread_t t;
    bool watched = ended && pthread_create(&t, NULL, fin_watch, &g) == 0;
    MPI_Finalize();
    if (watched) {
      pthread_mutex_lock(&g.mu);
      g.done = true;
      pthread_cond_signal(&g.cv);
      pthread_mutex_unlock(&g.mu);
      pthread_join(t, NULL);
    }
  }
  free(m);
}

static const hs_comm_ops mpi_ops = {
    .name = "mpi",
    .isend = m_isend,
    .irecv = m_irecv,
    .test = m_test,
    .cancel = m_cancel,
    .check_abort = m_check_abort,
    .abort = m_abort,
    .host = m_host,
    .destroy = m_destroy,
};

static hs_status wrap(MPI_Comm base, bool own_mpi, hs_comm **out) {
  *out = NULL;
  mcomm *m = calloc(1, sizeof *m);
  if (!m) return hs__fail(HS_ERR_NOMEM, "communicator");
  m->comm = MPI_COMM_NULL;
  m->own_mpi = own_mpi;
  int rank = 0, size = 0, rc;
  if ((rc = MPI_Comm_dup(base, &m->comm)) != MPI_SUCCESS ||
      (rc = MPI_Comm_set_errhandler(m->comm, MPI_ERRORS_RETURN)) != MPI_SUCCESS ||
      (rc = MPI_Comm_rank(m->comm, &rank)) != MPI_SUCCESS ||
      (rc = MPI_Comm_size(m->comm, &size)) != MPI_SUCCESS) {
    char msg[MPI_MAX_ERROR_STRING + 1] = "";
    int len = 0;
    MPI_Error_string(rc, msg, &len);
    if (m->comm != MPI_COMM_NULL) MPI_Comm_free(&m->comm);
    free(m);
    return hs__fail(HS_ERR_PEER, "setting up the MPI communicator: %s", msg);
  }
  hs_comm *c = hs__comm_new(&mpi_ops, rank, size, m);
  if (!c) {
    MPI_Comm_free(&m->comm);
    free(m);
    return hs__fail(HS_ERR_NOMEM, "communicator");
  }
  *out = c;
  return HS_OK;
}

hs_status hs__comm_open_world(int *argc, char ***argv, hs_comm **out) {
  int inited = 0, provided = 0;
  MPI_Initialized(&inited);
  bool own = false;
  if (!inited) {
    if (MPI_Init_thread(argc, argv, MPI_THREAD_SERIALIZED, &provided) != MPI_SUCCESS)
      return hs__fail(HS_ERR_PEER, "MPI_Init_thread failed");
    own = true;
    /* Some errors of a request (a truncated receive) are raised on the
     * world's handler, not the request's communicator's: the world must
     * not end the process either. Only when the world is ours. */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  } else {
    MPI_Query_thread(&provided);
  }
  if (provided < MPI_THREAD_SERIALIZED) {
    if (own) MPI_Finalize();
    return hs__fail(HS_ERR_UNSUPPORTED,
                    "the MPI library gives thread level %d; hetsage needs MPI_THREAD_SERIALIZED",
                    provided);
  }
  hs_status st = wrap(MPI_COMM_WORLD, own, out);
  if (st != HS_OK && own) MPI_Finalize();
  return st;
}

hs_status hs__comm_open_mpi(const void *mpi_comm, hs_comm **out) {
  *out = NULL;
  if (!mpi_comm) return hs__fail(HS_ERR_INVALID_ARG, "NULL MPI communicator");
  int inited = 0, provided = 0;
  MPI_Initialized(&inited);
  if (!inited) return hs__fail(HS_ERR_STATE, "MPI is not initialised");
  MPI_Query_thread(&provided);
  if (provided < MPI_THREAD_SERIALIZED)
    return hs__fail(HS_ERR_UNSUPPORTED,
                    "MPI was initialised with thread level %d; hetsage needs "
                    "MPI_THREAD_SERIALIZED", provided);
  return wrap(*(const MPI_Comm *)mpi_comm, false, out);
}

const char *hs__comm_library(void) {
  static char version[MPI_MAX_LIBRARY_VERSION_STRING + 1];
  if (!version[0]) {
    int len = 0;
    if (MPI_Get_library_version(version, &len) != MPI_SUCCESS) version[0] = '\0';
    /* The first line is the name and version; the rest is build detail.
     * MPICH separates them with a tab: the result is printed inside JSON
     * strings and on one line, so control characters become spaces. */
    char *nl = strchr(version, '\n');
    if (nl) *nl = '\0';
    for (char *p = version; *p; p++)
      if ((unsigned char)*p < 0x20 || *p == 0x7f) *p = ' ';
  }
  return version;
}

bool hs__comm_have_mpi(void) { return true; }
