/* hwloc: the host's packages, NUMA nodes, cores and PUs, each device's
 * locality, and thread binding. hwloc does not list CPU OpenCL devices
 * (PoCL), so a CPU device maps to the PUs of the cores it runs on. */
#include <hwloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hs_dev.h"

struct hs_topo {
  hwloc_topology_t t;
};

hs_status hs__topo_open(hs_topo **out) {
  *out = NULL;
  hs_topo *topo = calloc(1, sizeof *topo);
  if (!topo) return hs__fail(HS_ERR_NOMEM, "out of memory for the hwloc topology");
  if (hwloc_topology_init(&topo->t) != 0) {
    free(topo);
    return hs__fail(HS_ERR_IO, "hwloc_topology_init failed");
  }
  /* PCI devices let GPUs be located by bus id. hwloc's own OpenCL/CUDA
   * plugins are not wanted: discovery is ours, and they would initialise
   * every driver a second time (and keep allocations after unloading). */
  hwloc_topology_set_io_types_filter(topo->t, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
  static const char *const skip[] = {"opencl", "cuda", "nvml", "rsmi", "levelzero", "gl"};
  for (size_t i = 0; i < HS_ARRAY_LEN(skip); i++)
    hwloc_topology_set_components(topo->t, HWLOC_TOPOLOGY_COMPONENTS_FLAG_BLACKLIST, skip[i]);
  if (hwloc_topology_load(topo->t) != 0) {
    hwloc_topology_destroy(topo->t);
    free(topo);
    return hs__fail(HS_ERR_IO, "hwloc_topology_load failed");
  }
  *out = topo;
  return HS_OK;
}

void hs__topo_close(hs_topo *topo) {
  if (!topo) return;
  hwloc_topology_destroy(topo->t);
  free(topo);
}

static int count(const hs_topo *topo, hwloc_obj_type_t type) {
  int n = hwloc_get_nbobjs_by_type(topo->t, type);
  return n < 0 ? 0 : n;
}

void hs__topo_summary(const hs_topo *topo, hs_topo_summary *out) {
  out->packages = count(topo, HWLOC_OBJ_PACKAGE);
  out->numa_nodes = count(topo, HWLOC_OBJ_NUMANODE);
  out->cores = count(topo, HWLOC_OBJ_CORE);
  out->pus = count(topo, HWLOC_OBJ_PU);
  /* Some virtual machines expose PUs without cores. */
  if (out->cores == 0) out->cores = out->pus;
}

/* The union of the cpusets of cores [first, first+n). */
static hwloc_bitmap_t cores_set(const hs_topo *topo, int first, int n) {
  hwloc_bitmap_t set = hwloc_bitmap_alloc();
  if (!set) return NULL;
  hwloc_obj_type_t type =
      hwloc_get_nbobjs_by_type(topo->t, HWLOC_OBJ_CORE) > 0 ? HWLOC_OBJ_CORE : HWLOC_OBJ_PU;
  for (int i = first; i < first + n; i++) {
    hwloc_obj_t o = hwloc_get_obj_by_type(topo->t, type, (unsigned)i);
    if (!o) {
      hwloc_bitmap_free(set);
      return NULL;
    }
    hwloc_bitmap_or(set, set, o->cpuset);
  }
  return set;
}

hs_status hs__topo_cores_cpuset(const hs_topo *topo, int first_core, int n_cores,
                                char *buf, size_t len) {
  hs_topo_summary s;
  hs__topo_summary(topo, &s);
  if (first_core < 0 || n_cores <= 0 || first_core + n_cores > s.cores)
    return hs__fail(HS_ERR_RANGE, "cores %d..%d requested but the host has %d cores",
                    first_core, first_core + n_cores - 1, s.cores);
  hwloc_bitmap_t set = cores_set(topo, first_core, n_cores);
  if (!set) return hs__fail(HS_ERR_NOMEM, "out of memory for a cpuset");
  hwloc_bitmap_list_snprintf(buf, len, set);
  hwloc_bitmap_free(set);
  return HS_OK;
}

hs_status hs__topo_bind_thread(const hs_topo *topo, int first_core, int n_cores) {
  hs_topo_summary s;
  hs__topo_summary(topo, &s);
  if (first_core < 0 || n_cores <= 0 || first_core + n_cores > s.cores)
    return hs__fail(HS_ERR_RANGE, "cannot bind to cores %d..%d: the host has %d cores",
                    first_core, first_core + n_cores - 1, s.cores);
  hwloc_bitmap_t set = cores_set(topo, first_core, n_cores);
  if (!set) return hs__fail(HS_ERR_NOMEM, "out of memory for a cpuset");
  int rc = hwloc_set_cpubind(topo->t, set, HWLOC_CPUBIND_THREAD);
  hwloc_bitmap_free(set);
  if (rc != 0)
    return hs__fail(HS_ERR_UNSUPPORTED, "hwloc_set_cpubind to cores %d..%d failed",
                    first_core, first_core + n_cores - 1);
  return HS_OK;
}

void hs__topo_locate(const hs_topo *topo, hs_device_info *info) {
  info->cpuset[0] = '\0';
  if (info->type == HS_DEVICE_CPU) {
    /* A CPU device (or sub-device) runs on as many cores as it has compute
     * units; PoCL numbers them from the first core. */
    hs_topo_summary s;
    hs__topo_summary(topo, &s);
    int n = (int)info->compute_units;
    if (n <= 0 || n > s.cores) n = s.cores;
    if (hs__topo_cores_cpuset(topo, 0, n, info->cpuset, sizeof info->cpuset) != HS_OK)
      info->cpuset[0] = '\0';
    hs__clear_error();
    return;
  }
  if (!info->has_pci_bus_id) return;
  unsigned dom, bus, dev, fn;
  if (sscanf(info->pci_bus_id, "%x:%x:%x.%x", &dom, &bus, &dev, &fn) != 4) return;
  hwloc_obj_t pci = hwloc_get_pcidev_by_busid(topo->t, dom, bus, dev, fn);
  if (!pci) return;
  hwloc_obj_t parent = hwloc_get_non_io_ancestor_obj(topo->t, pci);
  if (parent && parent->cpuset)
    hwloc_bitmap_list_snprintf(info->cpuset, sizeof info->cpuset, parent->cpuset);
}

void *hs__topo_binding_save(const hs_topo *topo) {
  hwloc_bitmap_t set = hwloc_bitmap_alloc();
  if (set && hwloc_get_cpubind(topo->t, set, HWLOC_CPUBIND_THREAD) != 0) {
    hwloc_bitmap_free(set);
    set = NULL;
  }
  return set;
}

void hs__topo_binding_restore(const hs_topo *topo, void *saved) {
  if (!saved) return;
  hwloc_set_cpubind(topo->t, saved, HWLOC_CPUBIND_THREAD);
  hwloc_bitmap_free(saved);
}
