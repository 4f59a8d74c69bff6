/* A world (hetsage/dist.h) is a communicator (hs_comm.h). */
#ifndef HS_DIST_WORLD_H
#define HS_DIST_WORLD_H

#include "dist/hs_comm.h"
#include "hetsage/dist.h"

struct hs_world {
  hs_comm *comm;
};

/* A world around an existing communicator, which it then owns (tests give
 * sessions the ranks of an in-process group this way). NULL when out of
 * memory. */
hs_world *hs__world_wrap(hs_comm *c);

#endif
