/* The communication module: every message between the processes of a
 * distributed run goes through here, and comm_mpi.c is the only file of the
 * project that calls MPI.
 *
 * A communicator is a group of `size` ranks. Backends:
 *   - MPI (comm_mpi.c, when built with MPI): a duplicate of MPI_COMM_WORLD
 *     or of a caller's communicator, so hetsage's traffic never matches the
 *     caller's receives;
 *   - local (comm_local.c, always built): the ranks of a group are threads
 *     of one process exchanging through memory. A group of one is the
 *     single-process world; larger groups run the distributed algorithms in
 *     tests without MPI (and under valgrind and the sanitizers).
 *
 * Semantics follow MPI's point-to-point model, reduced to what hetsage
 * needs: messages are byte strings addressed by (peer, tag); between one
 * pair of ranks, messages with the same tag arrive in the order they were
 * sent, and receives posted for the same (peer, tag) are matched in the
 * order they were posted. There is no wildcard source: a receive names its
 * peer, so a wait that runs out of time can name the rank that is silent.
 *
 * Time bounds: no call waits forever. Every wait gives up after the
 * communicator's timeout (hs__comm_set_timeout) without progress on the
 * requests it waits for, and fails with HS_ERR_PEER and a detail naming the
 * silent rank and what was awaited. After such a failure the communicator's
 * state is undefined: the caller reports and ends the run (hs__comm_abort).
 *
 * Collectives (barrier, broadcast, gathers, all-to-all, small sums) are
 * built here from point-to-point messages, not from the MPI library's
 * collectives: arithmetic happens in rank order 0..size-1 whatever the
 * library, so results are bit-identical run to run and MPICH to Open MPI,
 * and a missing rank is named. Every rank of the communicator must call the
 * same collectives in the same order. They exchange directly with every
 * peer (size - 1 messages each way per rank), which is bandwidth-optimal
 * for the exchanges hetsage makes and simple to bound in time; latency
 * grows linearly with the ranks, which suits the tens of machines aimed at.
 *
 * Threads: one thread at a time per communicator (MPI is initialised with
 * MPI_THREAD_SERIALIZED; the pipeline's train thread and the caller's thread
 * take turns). Message sizes: up to INT_MAX bytes each (HS_ERR_RANGE above).
 */
#ifndef HS_DIST_COMM_H
#define HS_DIST_COMM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hs_base.h"

typedef struct hs_comm hs_comm;

/* Tags callers may use: 0 .. HS_COMM_TAG_USER_MAX. Tags above are the
 * collectives' own. */
#define HS_COMM_TAG_USER_MAX 16383

/* One outstanding send or receive. The caller owns the storage; it must
 * stay in place (not be copied) from the post until it completes or is
 * cancelled, and so must the message buffer. */
typedef struct hs_comm_req {
  int peer, tag;
  bool recv, done, active;
  void *buf;           /* the receive buffer (sends: the data) */
  size_t bytes;        /* send size, or receive capacity */
  size_t got;          /* bytes received (receives, once done) */
  struct hs_comm_req *next_posted; /* local backend: receives in post order */
  uint64_t impl[4];    /* the backend's handle (an MPI_Request) */
} hs_comm_req;

/* Traffic counters of one communicator since it was opened or last reset:
 * payload bytes and messages this rank sent and received (a collective
 * counts the messages it is made of). */
typedef struct hs_comm_counters {
  uint64_t bytes_sent, bytes_recv;
  uint64_t msgs_sent, msgs_recv;
  double wait_s; /* time spent inside waits */
} hs_comm_counters;

/* ---- opening ------------------------------------------------------------ */

/* The process's world: with MPI, MPI_COMM_WORLD (MPI initialised with
 * MPI_THREAD_SERIALIZED if nobody did yet, and finalised by
 * hs__comm_destroy in that case); without MPI, a group of one. Built
 * without MPI but started as one of several processes by an MPI launcher
 * (its environment says so): HS_ERR_UNSUPPORTED, rather than N separate
 * single-process runs. */
hs_status hs__comm_open_world(int *argc, char ***argv, hs_comm **out);

/* A duplicate of the caller's MPI communicator, `mpi_comm` pointing to an
 * MPI_Comm (MPI must be initialised with at least MPI_THREAD_SERIALIZED).
 * HS_ERR_UNSUPPORTED when built without MPI. */
hs_status hs__comm_open_mpi(const void *mpi_comm, hs_comm **out);

/* An in-process group of `size` ranks: out[r] is rank r's communicator, to
 * be driven by one thread each. Each is destroyed separately; the group
 * lives until the last one is. */
hs_status hs__comm_open_local(int size, hs_comm **out);

/* Release; also ends MPI when hs__comm_open_world initialised it. A rank
 * must not destroy a communicator with receives still posted. */
void hs__comm_destroy(hs_comm *c);

/* ---- facts -------------------------------------------------------------- */

int hs__comm_rank(const hs_comm *c);
int hs__comm_size(const hs_comm *c);
/* "mpi" or "local". */
const char *hs__comm_backend(const hs_comm *c);
/* The MPI library's version line ("MPICH Version: 4.0.2 ..."), "" for the
 * local backend and without MPI. */
const char *hs__comm_library(void);
/* Whether this build has the MPI backend. */
bool hs__comm_have_mpi(void);
/* This process's host name as the MPI library knows it (gethostname for
 * the local backend). */
void hs__comm_host(const hs_comm *c, char *buf, size_t len);

/* The timeout of waits, in seconds (default 60); returns the previous one.
 * Long one-sided phases (program builds, one rank evaluating) raise it and
 * restore it afterwards. */
double hs__comm_set_timeout(hs_comm *c, double seconds);
double hs__comm_timeout(const hs_comm *c);

void hs__comm_counters(const hs_comm *c, hs_comm_counters *out);
void hs__comm_counters_reset(hs_comm *c);

/* ---- point-to-point ------------------------------------------------------- */

/* Post a send of `bytes` from `buf` to `peer` (which may be this rank).
 * The buffer must not change until the request completes. */
hs_status hs__comm_isend(hs_comm *c, int peer, int tag, const void *buf, size_t bytes,
                         hs_comm_req *req);
/* Post a receive from `peer` of at most `cap` bytes into `buf`. A longer
 * message fails the wait with HS_ERR_RANGE. */
hs_status hs__comm_irecv(hs_comm *c, int peer, int tag, void *buf, size_t cap, hs_comm_req *req);

/* Whether `req` completed (without waiting); errors as the waits. */
hs_status hs__comm_test(hs_comm *c, hs_comm_req *req, bool *done);
/* Wait for every request (inactive ones count as done). `what` names the
 * exchange in the timeout message ("gradient bucket 2"). */
hs_status hs__comm_waitall(hs_comm *c, hs_comm_req *reqs, int n, const char *what);
/* Wait until at least one active request of *reqs[0..n) completes; its
 * index in *index (-1 when none is active). A timeout names the peers of
 * the requests given: pass those whose silence would be a fault. */
hs_status hs__comm_waitany(hs_comm *c, hs_comm_req *const *reqs, int n, const char *what,
                           int *index);
/* Withdraw an uncompleted request (after an error, before giving up). */
void hs__comm_cancel(hs_comm *c, hs_comm_req *req);

/* Blocking forms. */
hs_status hs__comm_send(hs_comm *c, int peer, int tag, const void *buf, size_t bytes,
                        const char *what);
hs_status hs__comm_recv(hs_comm *c, int peer, int tag, void *buf, size_t cap, size_t *got,
                        const char *what);

/* ---- collectives (every rank, same order) --------------------------------- */

hs_status hs__comm_barrier(hs_comm *c, const char *what);
/* root's `bytes` at `buf` to every rank's `buf`. */
hs_status hs__comm_bcast(hs_comm *c, int root, void *buf, size_t bytes, const char *what);
/* Every rank's `bytes` from `send` into recv[r * bytes] of every rank. */
hs_status hs__comm_allgather(hs_comm *c, const void *send, size_t bytes, void *recv,
                             const char *what);
/* Every rank's `bytes` from `send` into recv[r * bytes] of rank `root`
 * (`recv` unused elsewhere). */
hs_status hs__comm_gather(hs_comm *c, int root, const void *send, size_t bytes, void *recv,
                          const char *what);
/* send[p * bytes] to rank p, for every p; recv[p * bytes] from rank p. */
hs_status hs__comm_alltoall(hs_comm *c, const void *send, size_t bytes, void *recv,
                            const char *what);
/* As MPI_Alltoallv, in bytes: send_counts[p] bytes at send + send_offs[p]
 * to rank p; recv_counts[p] bytes from p at recv + recv_offs[p]. A rank
 * that learns its receive counts from its peers exchanges them first with
 * hs__comm_alltoall. */
hs_status hs__comm_alltoallv(hs_comm *c, const void *send, const size_t *send_counts,
                             const size_t *send_offs, void *recv, const size_t *recv_counts,
                             const size_t *recv_offs, const char *what);
/* Element-wise sums over the ranks, added in rank order (every rank gets
 * the same bits). n up to 64 values. */
hs_status hs__comm_sum_f64(hs_comm *c, double *vals, int n, const char *what);
hs_status hs__comm_sum_i64(hs_comm *c, int64_t *vals, int n, const char *what);
hs_status hs__comm_max_f64(hs_comm *c, double *vals, int n, const char *what);

/* ---- failure ---------------------------------------------------------------- */

/* End every rank of the run with exit status `code` (MPI_Abort); in a local
 * group, make every other rank's waits fail with HS_ERR_PEER naming this
 * rank, and return. */
void hs__comm_abort(hs_comm *c, int code);

#endif
