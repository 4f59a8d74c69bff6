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

#endif
