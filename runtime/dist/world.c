/* The public face of the communication module (hetsage/dist.h). */
#include <stdlib.h>

#include "dist/hs_comm.h"
#include "dist/hs_dist.h"
#include "dist/hs_world.h"

hs_status hs_world_init(int *argc, char ***argv, hs_world **out) {
  if (!out) return hs__fail(HS_ERR_INVALID_ARG, "hs_world_init: NULL argument");
  *out = NULL;
  hs_world *w = calloc(1, sizeof *w);
  if (!w) return hs__fail(HS_ERR_NOMEM, "world");
  hs_status st = hs__comm_open_world(argc, argv, &w->comm);
  if (st != HS_OK) {
    free(w);
    return st;
  }
  *out = w;
  return HS_OK;
}

hs_status hs_world_from_mpi(const void *mpi_comm, hs_world **out) {
  if (!out) return hs__fail(HS_ERR_INVALID_ARG, "hs_world_from_mpi: NULL argument");
  *out = NULL;
  hs_world *w = calloc(1, sizeof *w);
  if (!w) return hs__fail(HS_ERR_NOMEM, "world");
  hs_status st = hs__comm_open_mpi(mpi_comm, &w->comm);
  if (st != HS_OK) {
    free(w);
    return st;
  }
  *out = w;
  return HS_OK;
}

hs_world *hs__world_wrap(hs_comm *c) {
  hs_world *w = calloc(1, sizeof *w);
  if (w) w->comm = c;
  return w;
}

void hs_world_destroy(hs_world *w) {
  if (!w) return;
  hs__comm_destroy(w->comm);
  free(w);
}

int hs_world_rank(const hs_world *w) { return w ? hs__comm_rank(w->comm) : 0; }
int hs_world_size(const hs_world *w) { return w ? hs__comm_size(w->comm) : 1; }

void hs_world_host(const hs_world *w, char *buf, size_t len) {
  if (w) hs__comm_host(w->comm, buf, len);
  else if (len) buf[0] = '\0';
}

hs_status hs_world_barrier(hs_world *w, const hs_dist_config *cfg) {
  if (!w) return hs__fail(HS_ERR_INVALID_ARG, "hs_world_barrier: NULL world");
  hs_dist_config d;
  hs_status st = hs__dist_config_take(cfg, &d);
  if (st != HS_OK) return st;
  double saved = hs__comm_set_timeout(w->comm, d.start_timeout_s);
  st = hs__comm_barrier(w->comm, "a barrier of the application");
  hs__comm_set_timeout(w->comm, saved);
  return st;
}

void hs_world_abort(hs_world *w, int code) {
  if (w && hs__comm_size(w->comm) > 1) hs__comm_abort(w->comm, code);
}

bool hs_world_have_mpi(void) { return hs__comm_have_mpi(); }
const char *hs_world_library(void) { return hs__comm_library(); }
