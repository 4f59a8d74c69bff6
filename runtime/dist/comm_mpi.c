/* The MPI backend (hs_comm.h): the one file of hetsage that calls MPI.
 * Errors are returned, not fatal (MPI_ERRORS_RETURN on our duplicate
 * communicator), so that a failed peer is reported by rank. */
#include <arpa/inet.h>
#include <dirent.h>
#include <limits.h>
#include <mpi.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/hs_settings.h"
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

/* MPI_Finalize of MPICH 4.0 over UCX 1.13's TCP transport can deadlock.
 * MPICH closes every UCX endpoint in flush mode, waits for the closes while
 * progressing UCX, then waits in a PMI barrier of the launcher, where it
 * makes no more UCX progress. UCX's TCP flush of an endpoint that sent since
 * its last flush waits for the peer's acknowledgement: a rank whose closes
 * started after a peer had acknowledged that peer's own closes (the ranks
 * leave the barrier of all_ended at different times) waits for a peer that
 * sits in the PMI barrier, forever (seen on three namespace hosts in about
 * one run in two under load: one rank in ucp_worker_progress, the others in
 * read() on the PMI socket).
 *
 * Ending a process to get out is not safe: a rank that ends after it
 * entered the PMI barrier lets the launcher answer the completed barrier to
 * a proxy that is gone (MPICH's mpiexec then exits 255 with "unable to send
 * PMI_RESPONSE header to proxy"). What unblocks the waiting rank is the end
 * of its connection: once every rank passed the barrier of all_ended and
 * MPI_Finalize still runs FINALIZE_GRACE_S later, the process shuts down
 * the TCP connections that MPI made (UCX's): never a socket it had before
 * MPI_Init (the launcher's proxy lends its own connection to mpiexec to its
 * children), a Unix socket, the PMI_FD socket or the connection to PMI_PORT.
 * A close waiting for an acknowledgement on such a connection completes as
 * cancelled, every rank reaches the PMI barrier, and MPI_Finalize ends
 * normally everywhere. Nothing of hetsage's is in flight then: every rank
 * reached the barrier of all_ended, and this rank's messages had the grace
 * to leave. */
#define FINALIZE_GRACE_S 5
/* Should MPI_Finalize still run FINALIZE_LAST_S after the shutdown (a
 * connection the filter could not tell from the launcher's, a transport
 * other than TCP), the process ends with status 0 as the last resort: a
 * launcher error is better than a rank that never ends. */
#define FINALIZE_LAST_S 30

typedef struct fin_guard {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  bool done;
  int rank;
} fin_guard;

/* The sockets of the process before MPI_Init (by inode): the launcher's,
 * never shut down. */
#define PRE_INIT_MAX 256
static struct {
  bool taken; /* false: not taken or too many: nothing is shut down */
  int n;
  int pmi_fd, pmi_port; /* the launcher's PMI connection (-1: none named) */
  ino_t ino[PRE_INIT_MAX];
} pre_init;

/* Calls fn(fd, st, arg) for every socket descriptor of the process. */
static void each_socket(void (*fn)(int, const struct stat *, void *), void *arg) {
  DIR *d = opendir("/proc/self/fd");
  if (!d) return;
  int dfd = dirfd(d);
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    char *end;
    long fd = strtol(e->d_name, &end, 10);
    struct stat st;
    if (end == e->d_name || *end != '\0' || fd < 0 || fd > INT_MAX || fd == dfd ||
        fstat((int)fd, &st) != 0 || !S_ISSOCK(st.st_mode))
      continue;
    fn((int)fd, &st, arg);
  }
  closedir(d);
}

static void note_pre_init(int fd, const struct stat *st, void *arg) {
  (void)fd;
  (void)arg;
  if (pre_init.n == PRE_INIT_MAX) pre_init.taken = false;
  else pre_init.ino[pre_init.n++] = st->st_ino;
}

static void take_pre_init_sockets(void) {
  pre_init.n = 0;
  pre_init.taken = true;
  hs__settings_pmi_endpoints(&pre_init.pmi_fd, &pre_init.pmi_port);
  each_socket(note_pre_init, NULL);
  if (pre_init.n == PRE_INIT_MAX) pre_init.taken = false;
}

typedef struct shut_ctx {
  int pmi_fd, pmi_port, n;
} shut_ctx;

static void shut_if_mpis(int fd, const struct stat *st, void *arg) {
  shut_ctx *x = arg;
  if (fd == x->pmi_fd) return;
  for (int i = 0; i < pre_init.n; i++)
    if (pre_init.ino[i] == st->st_ino) return;
  int type = 0, listening = 0;
  socklen_t len = sizeof type;
  if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) != 0 || type != SOCK_STREAM) return;
  len = sizeof listening;
  if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &len) != 0 || listening) return;
  struct sockaddr_storage peer;
  len = sizeof peer;
  if (getpeername(fd, (struct sockaddr *)&peer, &len) != 0) return;
  int port;
  if (peer.ss_family == AF_INET)
    port = ntohs(((struct sockaddr_in *)&peer)->sin_port);
  else if (peer.ss_family == AF_INET6)
    port = ntohs(((struct sockaddr_in6 *)&peer)->sin6_port);
  else
    return;
  if (port == x->pmi_port) return;
  if (shutdown(fd, SHUT_RDWR) == 0) x->n++;
}

/* Shut down the connected TCP sockets that MPI made (see above); the number
 * shut down. The descriptors stay open (UCX closes them). */
static int shut_mpi_connections(void) {
  if (!pre_init.taken) return 0;
  shut_ctx x = {pre_init.pmi_fd, pre_init.pmi_port, 0};
  each_socket(shut_if_mpis, &x);
  return x.n;
}

static void *fin_watch(void *arg) {
  fin_guard *g = arg;
  struct timespec end;
  clock_gettime(CLOCK_REALTIME, &end);
  end.tv_sec += FINALIZE_GRACE_S;
  pthread_mutex_lock(&g->mu);
  bool shut = false;
  while (!g->done) {
    if (pthread_cond_timedwait(&g->cv, &g->mu, &end) == 0 || g->done) continue;
    if (shut) {
      hs__log(HS_LOG_DIST, "rank %d: MPI_Finalize still running %d s after the shutdown; "
              "ending the process", g->rank, FINALIZE_LAST_S);
      fflush(NULL);
      _exit(0);
    }
    int n = shut_mpi_connections();
    hs__log(HS_LOG_DIST, "rank %d: MPI_Finalize still running %d s after every rank ended; "
            "shut down its %d TCP connections of MPI so that it ends", g->rank, FINALIZE_GRACE_S, n);
    shut = true;
    clock_gettime(CLOCK_REALTIME, &end);
    end.tv_sec += FINALIZE_LAST_S;
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
    /* The deadlock above is MPICH's: other libraries' MPI_Finalize is not
     * watched (their launchers' connections may be TCP ones of their own). */
#if defined(MPICH_VERSION) && !defined(HS_NO_FINALIZE_GUARD)
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
#else
    (void)ended;
    (void)fin_watch;
    MPI_Finalize();
#endif
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
    take_pre_init_sockets();
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
