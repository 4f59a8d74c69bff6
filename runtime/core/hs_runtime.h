/* Internal view of the runtime handle for the rest of runtime/. */
#ifndef HS_RUNTIME_INTERNAL_H
#define HS_RUNTIME_INTERNAL_H

#include "hetsage/board.h"
#include "hetsage/runtime.h"
#include "hs_dev.h"

/* Owned copies of the settings' strings, one per hs_settings string field. */
#define HS__SETTINGS_STRINGS 8

struct hs_runtime {
  hs_inventory inv;
  hs_device_info *infos; /* packed copy of inv.devs[i].info for the public API */
  hs_platform_info *platforms;
  hs_topo *topo;
  hs_topo_summary host;
  hs_host_topology host_pub;
  hs_board_profile *board; /* hs_runtime_options.board, NULL: none */
  hs_settings settings;     /* as resolved at open; strings in `strings` */
  char *strings[HS__SETTINGS_STRINGS];
  hs__dev_settings dev_settings; /* what the inventory's devices point at */
};

/* The board a session places on: its own loaded `profile`, else the runtime's
 * board when it names none, else `board` (a name or path; NULL: the default)
 * loaded into *owned, which the caller frees (NULL when nothing was loaded). */
hs_status hs__runtime_session_profile(const hs_runtime *rt, const hs_board_profile *profile,
                                      const char *board, const hs_board_profile **use,
                                      hs_board_profile **owned);

#endif
