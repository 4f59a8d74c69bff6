/* What a communication backend provides (see hs_comm.h): comm.c builds the
 * waits, the time bounds and the collectives on these few operations. */
#ifndef HS_DIST_COMM_INT_H
#define HS_DIST_COMM_INT_H

#include "dist/hs_comm.h"

typedef struct hs_comm_ops {
  const char *name;
  /* Post req (peer, tag, buf, bytes filled in by the caller). */
  hs_status (*isend)(hs_comm *c, hs_comm_req *req);
  hs_status (*irecv)(hs_comm *c, hs_comm_req *req);
  /* Complete req if it can be, without waiting: sets req->done (and
   * req->got for receives). */
  hs_status (*test)(hs_comm *c, hs_comm_req *req);
  void (*cancel)(hs_comm *c, hs_comm_req *req);
  /* HS_OK, or HS_ERR_PEER naming the rank that aborted the group. */
  hs_status (*check_abort)(hs_comm *c);
  void (*abort)(hs_comm *c, int code);
  void (*host)(const hs_comm *c, char *buf, size_t len);
  void (*destroy)(hs_comm *c);
} hs_comm_ops;

struct hs_comm {
  const hs_comm_ops *ops;
  int rank, size;
  double timeout_s;
  hs_comm_counters cnt;
  void *impl;
};

/* A communicator around a backend's state (timeout 60 s). */
hs_comm *hs__comm_new(const hs_comm_ops *ops, int rank, int size, void *impl);

#endif
