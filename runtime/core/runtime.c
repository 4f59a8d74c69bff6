#include <stdlib.h>
#include <string.h>

#include "hs_runtime.h"

hs_status hs_runtime_open(hs_runtime **out, const hs_runtime_options *opts) {
  (void)opts;
  if (!out) return hs__fail(HS_ERR_INVALID_ARG, "hs_runtime_open: out is NULL");
  *out = NULL;
  hs__clear_error();
  hs_runtime *rt = calloc(1, sizeof *rt);
  if (!rt) return hs__fail(HS_ERR_NOMEM, "out of memory for the runtime");
  hs_status st = hs__topo_open(&rt->topo);
  if (st != HS_OK) goto fail;
  hs__topo_summary(rt->topo, &rt->host);
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
  *out = rt;
  return HS_OK;
fail:
  hs_runtime_close(rt);
  return st;
}

void hs_runtime_close(hs_runtime *rt) {
  if (!rt) return;
  free(rt->infos);
  hs__inventory_release(&rt->inv);
  hs__topo_close(rt->topo);
  free(rt);
}

hs_status hs_runtime_devices(const hs_runtime *rt, const hs_device_info **devs, int *n) {
  if (!rt || !devs || !n)
    return hs__fail(HS_ERR_INVALID_ARG, "hs_runtime_devices: NULL argument");
  *devs = rt->infos;
  *n = rt->inv.n_devs;
  return HS_OK;
}

int hs_runtime_platform_count(const hs_runtime *rt) { return rt ? rt->inv.n_platforms : 0; }

hs_status hs_runtime_platform(const hs_runtime *rt, int i, hs_platform_info *out) {
  if (!rt || !out) return hs__fail(HS_ERR_INVALID_ARG, "hs_runtime_platform: NULL argument");
  if (i < 0 || i >= rt->inv.n_platforms)
    return hs__fail(HS_ERR_RANGE, "platform %d of %d", i, rt->inv.n_platforms);
  const hs_platform_note *p = &rt->inv.platforms[i];
  memcpy(out->name, p->name, sizeof out->name);
  out->num_devices = p->num_devices;
  memcpy(out->error, p->error, sizeof out->error);
  return HS_OK;
}

hs_status hs_runtime_topology(const hs_runtime *rt, hs_host_topology *out) {
  if (!rt || !out) return hs__fail(HS_ERR_INVALID_ARG, "hs_runtime_topology: NULL argument");
  out->packages = rt->host.packages;
  out->numa_nodes = rt->host.numa_nodes;
  out->cores = rt->host.cores;
  out->pus = rt->host.pus;
  return HS_OK;
}

int hs_runtime_host_cores(const hs_runtime *rt) {
  return rt && rt->host.cores > 0 ? rt->host.cores : 1;
}
