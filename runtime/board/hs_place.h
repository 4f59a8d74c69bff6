/* Placement internals shared by placement.c (roles, link, split),
 * place_sizing.c (pipeline, memory, cache, zero-copy) and place_text.c
 * (reasons, names, descriptions). */
#ifndef HS_PLACE_H
#define HS_PLACE_H

#include "hs_base.h"
#include "hs_board.h"

/* The plan as allocated: the public part first, so that an hs_placement
 * pointer handed out is also a pointer to its box. */
typedef struct hs__plan_box {
  hs_placement pub;
  hs_placement_reason *reasons;
  size_t cap;
  char *binaries[2]; /* sampler, trainer */
  bool nomem;        /* a reason could not be stored */
} hs__plan_box;

typedef struct hs__placer {
  const hs_placement_request *req;
  const hs_board_profile *prof; /* never NULL: defaults stand in */
  const hs_device_info *devs;
  int n;
  int host_cores;
  int match[HS__BOARD_MAX_DEVICES]; /* profile device -> inventory, -1 */
  int *owner;      /* inventory -> profile device, -1 */
  bool *candidate; /* devices the automatic rules may use */
  hs__plan_box *box;
  /* The memory the process may still use where a limit is in force
   * (rlimits, the memory cgroup: hs__mem_room); it caps what CPU devices,
   * whose memory is the host's, are given. */
  bool mem_limited;
  uint64_t mem_room;
  char mem_why[700];
} hs__placer;

/* Append a reason; on allocation failure marks the box (reported at the
 * end), never fails the caller. */
void hs__place_reason(hs__placer *pc, const char *topic, const char *fmt, ...)
    HS_PRINTF(3, 4);

/* Room for hs__place_dev's text. */
#define HS__PLACE_DEV_MAX (HS_NAME_MAX + 160)
/* "GPU 'name' (pocl:0, index 1)", saying so for a simulator. Returns buf. */
const char *hs__place_dev(const hs_device_info *d, char *buf, size_t cap);

/* Whether `what` names the device's platform: its key (exactly), or part
 * of its name or vendor (case-insensitive). */
bool hs__platform_matches(const hs_device_info *d, const char *what);

/* Global memory minus the profile's headroom. */
uint64_t hs__place_usable(const hs__placer *pc, const hs_device_info *d);

/* Pipeline, gather threads, memory budgets, cache sizes and zero-copy, once
 * the roles, link and split are set in pc->box->pub. */
hs_status hs__place_sizing(hs__placer *pc);

#endif
