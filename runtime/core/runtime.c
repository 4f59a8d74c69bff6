#include <stdlib.h>
#include <string.h>

#include "hs_runtime.h"
#include "hs_engine.h"
#include "hs_settings.h"

/* The settings in force: the caller's, then the environment's (unless
 * ignored), checked, with every string copied into the runtime. */
static hs_status resolve_settings(hs_runtime *rt, const hs_runtime_options *opts) {
  hs_settings *s = &rt->settings;
  hs_settings_init(s);
  hs_status st;
  if (opts->settings && (st = hs__sized_in(s, sizeof *s, opts->settings, "hs_settings")))
    return st;
  bool env = !(opts->flags & HS_RUNTIME_IGNORE_ENV);
  if (env && (st = hs_settings_from_env(s)) != HS_OK) return st;
  if ((st = hs_settings_check(s)) != HS_OK) return st;
  char cache[1024];
  if (!s->cache_dir && env && hs__settings_default_cache_dir(cache, sizeof cache))
    s->cache_dir = cache;
  const char **fields[] = {&s->debug,   &s->cache_dir, &s->boards_dir,     &s->sampler,
                           &s->trainer, &s->bringup_inject, &s->bench_dir};
  _Static_assert(HS_ARRAY_LEN(fields) <= HS__SETTINGS_STRINGS, "room for every string");
  for (size_t i = 0; i < HS_ARRAY_LEN(fields); i++) {
    if (!*fields[i]) continue;
    if (!(rt->strings[i] = strdup(*fields[i])))
      return hs__fail(HS_ERR_NOMEM, "out of memory for the settings");
    *fields[i] = rt->strings[i];
  }
  if (s->debug && (st = hs_log_enable(s->debug)) != HS_OK) return st;
  rt->dev_settings = (hs__dev_settings){s->cache_dir, s->max_alloc, (int)s->gemm};
  return HS_OK;
}

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
  if (opts.flags & ~HS_RUNTIME_IGNORE_ENV)
    return hs__fail(HS_ERR_INVALID_ARG,
                    "hs_runtime_options.flags 0x%x: the flags are HS_RUNTIME_IGNORE_ENV (0x%x)",
                    (unsigned)opts.flags, (unsigned)HS_RUNTIME_IGNORE_ENV);
  hs_runtime *rt = calloc(1, sizeof *rt);
  if (!rt) return hs__fail(HS_ERR_NOMEM, "out of memory for the runtime");
  if ((st = resolve_settings(rt, &opts)) != HS_OK) goto fail;
  if (opts.board &&
      (st = hs_board_profile_load_from(rt->settings.boards_dir, opts.board, &rt->board)) != HS_OK)
    goto fail;
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
    rt->inv.devs[i].settings = &rt->dev_settings;
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
  for (int i = 0; i < HS__SETTINGS_STRINGS; i++) free(rt->strings[i]);
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

const hs_settings *hs_runtime_settings(const hs_runtime *rt) { return rt ? &rt->settings : NULL; }

const hs_inventory *hs__runtime_inventory(const hs_runtime *rt) { return rt ? &rt->inv : NULL; }

const hs_dev *hs__runtime_dev(const hs_runtime *rt, int i) {
  return rt && i >= 0 && i < rt->inv.n_devs ? &rt->inv.devs[i] : NULL;
}
