#include <stdlib.h>
#include <string.h>

#include "hs_runtime.h"

void hs_runtime_options_init_sized(hs_runtime_options *opts, size_t struct_size) {
  hs_runtime_options d = {.struct_size = sizeof d};
  hs__sized_init(opts, struct_size, &d, sizeof d);
}

hs_status hs_runtime_open(hs_runtime **out, const hs_runtime_options *user_opts) {
  if (!out) return hs__fail(HS_ERR_INVALID_ARG, "hs_runtime_open: out is NULL");
  *out = NULL;
  hs__clear_error();
  hs_runtime_options opts;
  hs_runtime_options_init(&opts);
  hs_status st;
  if (user_opts && (st = hs__sized_in(&opts, sizeof opts, user_opts, "hs_runtime_options")))
    return st;
  if (opts.flags != 0)
    return hs__fail(HS_ERR_INVALID_ARG, "hs_runtime_options.flags 0x%x: no flag is defined",
                    (unsigned)opts.flags);
  hs_runtime *rt = calloc(1, sizeof *rt);
  if (!rt) return hs__fail(HS_ERR_NOMEM, "out of memory for the runtime");
  if (opts.board && (st = hs_board_profile_load(opts.board, &rt->board)) != HS_OK) goto fail;
  st = hs__topo_open(&rt->topo);
  if (st != HS_OK) goto fail;
  hs__topo_summary(rt->topo, &rt->host);
  rt->host_pub = (hs_host_topology){rt->host.packages, rt->host.numa_nodes, rt->host.cores,
                                    rt->host.pus};
  st = hs__inventory_discover(&rt->inv);
  if (st != HS_OK) goto fail;
  rt->infos = calloc((size_t)rt->inv.n_devs, sizeof *rt->infos);
  if (!rt->infos) {
    st = hs__fail(HS_ERR_NOMEM, "out of memory for the device inventory");
    goto fail;
  }
  for (int i = 0; i < rt->inv.n_devs; i++) {
    hs__topo_locate(rt->topo, &rt->inv.devs[i].info);
    rt->infos[i] = rt->inv.devs[i].info;
  }
  rt->platforms = calloc((size_t)rt->inv.n_platforms + 1, sizeof *rt->platforms);
  if (!rt->platforms) {
    st = hs__fail(HS_ERR_NOMEM, "out of memory for the platform list");
    goto fail;
  }
  for (int i = 0; i < rt->inv.n_platforms; i++) {
    const hs_platform_note *p = &rt->inv.platforms[i];
    memcpy(rt->platforms[i].name, p->name, sizeof rt->platforms[i].name);
    rt->platforms[i].num_devices = p->num_devices;
    memcpy(rt->platforms[i].error, p->error, sizeof rt->platforms[i].error);
  }
  *out = rt;
  return HS_OK;
fail:
  hs_runtime_close(rt);
  return st;
}

void hs_runtime_close(hs_runtime *rt) {
  if (!rt) return;
  free(rt->infos);
  free(rt->platforms);
  hs_board_profile_free(rt->board);
  hs__inventory_release(&rt->inv);
  hs__topo_close(rt->topo);
  free(rt);
}

int hs_runtime_device_count(const hs_runtime *rt) { return rt ? rt->inv.n_devs : 0; }

const hs_device_info *hs_runtime_device(const hs_runtime *rt, int i) {
  return rt && i >= 0 && i < rt->inv.n_devs ? &rt->infos[i] : NULL;
}

int hs_runtime_platform_count(const hs_runtime *rt) { return rt ? rt->inv.n_platforms : 0; }

const hs_platform_info *hs_runtime_platform(const hs_runtime *rt, int i) {
  return rt && i >= 0 && i < rt->inv.n_platforms ? &rt->platforms[i] : NULL;
}

const hs_host_topology *hs_runtime_topology(const hs_runtime *rt) {
  return rt ? &rt->host_pub : NULL;
}

int hs_runtime_host_cores(const hs_runtime *rt) {
  return rt && rt->host.cores > 0 ? rt->host.cores : 1;
}

const struct hs_board_profile *hs_runtime_board(const hs_runtime *rt) {
  return rt ? rt->board : NULL;
}
