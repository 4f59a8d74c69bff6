/* OpenCL discovery: every platform, every device, and what varies between
 * vendors. Never assume a query succeeds: a failed query leaves the field at
 * its conservative default and is logged. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <CL/cl_ext.h>

#include "hs_dev.h"

/* Vendor attributes not in every header version. */
#ifndef CL_DEVICE_PCI_BUS_ID_NV
#define CL_DEVICE_PCI_BUS_ID_NV 0x4008
#define CL_DEVICE_PCI_SLOT_ID_NV 0x4009
#define CL_DEVICE_PCI_DOMAIN_ID_NV 0x400A
#endif
#define HS_AMD_TOPOLOGY_TYPE_PCIE 1

typedef union {
  struct {
    cl_uint type;
    cl_uint data[5];
  } raw;
  struct {
    cl_uint type;
    cl_char unused[17];
    cl_char bus;
    cl_char device;
    cl_char function;
  } pcie;
} hs_amd_topology;

const char *hs_device_type_name(hs_device_type type) {
  switch (type) {
    case HS_DEVICE_CPU: return "cpu";
    case HS_DEVICE_GPU: return "gpu";
    case HS_DEVICE_ACCELERATOR: return "accelerator";
    case HS_DEVICE_CUSTOM: return "custom";
  }
  return "unknown";
}

static void query_str(cl_device_id d, cl_device_info what, char *buf, size_t len) {
  size_t got = 0;
  buf[0] = '\0';
  if (clGetDeviceInfo(d, what, len, buf, &got) != CL_SUCCESS) {
    /* Too long or unsupported: fetch into a heap buffer and truncate. */
    if (clGetDeviceInfo(d, what, 0, NULL, &got) != CL_SUCCESS || got == 0) return;
    char *tmp = malloc(got);
    if (!tmp) return;
    if (clGetDeviceInfo(d, what, got, tmp, NULL) == CL_SUCCESS)
      snprintf(buf, len, "%s", tmp);
    free(tmp);
  }
  buf[len - 1] = '\0';
}

#define QUERY(dev, what, var) \
  (clGetDeviceInfo((dev), (what), sizeof(var), &(var), NULL) == CL_SUCCESS)

static bool has_ext(const char *exts, const char *name) {
  size_t n = strlen(name);
  for (const char *p = exts; (p = strstr(p, name)) != NULL; p += n)
    if ((p == exts || p[-1] == ' ') && (p[n] == ' ' || p[n] == '\0')) return true;
  return false;
}

static void query_pci(cl_device_id d, hs_device_info *info) {
  if (has_ext(info->extensions, "cl_khr_pci_bus_info")) {
    cl_device_pci_bus_info_khr pci;
    if (QUERY(d, CL_DEVICE_PCI_BUS_INFO_KHR, pci)) {
      snprintf(info->pci_bus_id, sizeof info->pci_bus_id, "%04x:%02x:%02x.%x",
               pci.pci_domain, pci.pci_bus, pci.pci_device, pci.pci_function);
      info->has_pci_bus_id = true;
      return;
    }
  }
  if (has_ext(info->extensions, "cl_nv_device_attribute_query")) {
    cl_uint bus = 0, slot = 0, domain = 0;
    if (QUERY(d, CL_DEVICE_PCI_BUS_ID_NV, bus) && QUERY(d, CL_DEVICE_PCI_SLOT_ID_NV, slot)) {
      if (!QUERY(d, CL_DEVICE_PCI_DOMAIN_ID_NV, domain)) domain = 0;
      /* NVIDIA packs device and function into the slot id. */
      snprintf(info->pci_bus_id, sizeof info->pci_bus_id, "%04x:%02x:%02x.%x",
               domain, bus, slot >> 3, slot & 7);
      info->has_pci_bus_id = true;
      return;
    }
  }
  if (has_ext(info->extensions, "cl_amd_device_attribute_query")) {
    hs_amd_topology topo;
    if (QUERY(d, CL_DEVICE_TOPOLOGY_AMD, topo) &&
        topo.raw.type == HS_AMD_TOPOLOGY_TYPE_PCIE) {
      snprintf(info->pci_bus_id, sizeof info->pci_bus_id, "0000:%02x:%02x.%x",
               (unsigned char)topo.pcie.bus, (unsigned char)topo.pcie.device,
               (unsigned char)topo.pcie.function);
      info->has_pci_bus_id = true;
    }
  }
}

void hs_device_info_init_sized(hs_device_info *d, size_t struct_size) {
  hs_device_info z;
  memset(&z, 0, sizeof z);
  z.struct_size = sizeof z;
  hs__sized_init(d, struct_size, &z, sizeof z);
}

hs_status hs__device_query(cl_platform_id platform, cl_device_id d,
                           hs_device_info *info) {
  memset(info, 0, sizeof *info);
  info->struct_size = sizeof *info;
  size_t n = 0;
  if (platform) {
    clGetPlatformInfo(platform, CL_PLATFORM_NAME, sizeof info->platform_name,
                      info->platform_name, &n);
    clGetPlatformInfo(platform, CL_PLATFORM_VENDOR, sizeof info->platform_vendor,
                      info->platform_vendor, &n);
    clGetPlatformInfo(platform, CL_PLATFORM_VERSION, sizeof info->platform_version,
                      info->platform_version, &n);
  }

  cl_device_type type = 0;
  cl_int err = clGetDeviceInfo(d, CL_DEVICE_TYPE, sizeof type, &type, NULL);
  if (err != CL_SUCCESS) return hs__cl_fail(err, "clGetDeviceInfo(CL_DEVICE_TYPE)", NULL);
  if (type & CL_DEVICE_TYPE_GPU) info->type = HS_DEVICE_GPU;
  else if (type & CL_DEVICE_TYPE_ACCELERATOR) info->type = HS_DEVICE_ACCELERATOR;
  else if (type & CL_DEVICE_TYPE_CPU) info->type = HS_DEVICE_CPU;
  else info->type = HS_DEVICE_CUSTOM;

  query_str(d, CL_DEVICE_NAME, info->name, sizeof info->name);
  query_str(d, CL_DEVICE_VENDOR, info->vendor, sizeof info->vendor);
  query_str(d, CL_DRIVER_VERSION, info->driver_version, sizeof info->driver_version);
  query_str(d, CL_DEVICE_VERSION, info->device_version, sizeof info->device_version);
  query_str(d, CL_DEVICE_OPENCL_C_VERSION, info->opencl_c_version,
            sizeof info->opencl_c_version);
  query_str(d, CL_DEVICE_EXTENSIONS, info->extensions, sizeof info->extensions);

  cl_uint u = 0;
  cl_ulong ul = 0;
  size_t sz = 0;
  cl_bool b = CL_FALSE;
  if (QUERY(d, CL_DEVICE_VENDOR_ID, u)) info->vendor_id = u;
  if (QUERY(d, CL_DEVICE_MAX_COMPUTE_UNITS, u)) info->compute_units = u;
  if (QUERY(d, CL_DEVICE_MAX_CLOCK_FREQUENCY, u)) info->clock_mhz = u;
  if (QUERY(d, CL_DEVICE_GLOBAL_MEM_SIZE, ul)) info->global_mem_bytes = ul;
  if (QUERY(d, CL_DEVICE_LOCAL_MEM_SIZE, ul)) info->local_mem_bytes = ul;
  if (QUERY(d, CL_DEVICE_MAX_MEM_ALLOC_SIZE, ul)) info->max_alloc_bytes = ul;
  if (QUERY(d, CL_DEVICE_GLOBAL_MEM_CACHE_SIZE, ul)) info->global_cache_bytes = ul;
  if (QUERY(d, CL_DEVICE_MAX_WORK_GROUP_SIZE, sz)) info->max_work_group_size = sz;
  if (QUERY(d, CL_DEVICE_MAX_WORK_ITEM_DIMENSIONS, u)) info->max_work_item_dims = u;
  if (info->max_work_item_dims > 0) {
    size_t dims[16] = {0};
    size_t nd = info->max_work_item_dims < 16 ? info->max_work_item_dims : 16;
    if (clGetDeviceInfo(d, CL_DEVICE_MAX_WORK_ITEM_SIZES, nd * sizeof(size_t), dims,
                        NULL) == CL_SUCCESS)
      for (size_t i = 0; i < 3 && i < nd; i++) info->max_work_item_sizes[i] = dims[i];
  }

  info->int64_atomics = has_ext(info->extensions, "cl_khr_int64_base_atomics");
  info->fp16 = has_ext(info->extensions, "cl_khr_fp16");
  cl_device_fp_config fpc = 0;
  info->fp64 = has_ext(info->extensions, "cl_khr_fp64") ||
               (QUERY(d, CL_DEVICE_DOUBLE_FP_CONFIG, fpc) && fpc != 0);

  /* OpenCL 2.0+ splits host-queue properties out; 1.x has only one. */
  cl_command_queue_properties qp = 0;
  if (QUERY(d, CL_DEVICE_QUEUE_ON_HOST_PROPERTIES, qp) ||
      QUERY(d, CL_DEVICE_QUEUE_PROPERTIES, qp)) {
    info->queue_out_of_order = (qp & CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE) != 0;
    info->queue_profiling = (qp & CL_QUEUE_PROFILING_ENABLE) != 0;
  }
  /* oclgrind accepts out-of-order queues but its barrier
   * (clEnqueueBarrierWithWaitList) orders nothing enqueued after it on
   * them: the cache's gather, the trainer's step and the CLBlast GEMM,
   * which wait for their inputs behind a barrier, then read data not yet
   * written (coo_dev::degree_prefill_uploaded_in_chunks under oclgrind).
   * Its queues are taken as in-order only. */
  if (strcasestr(info->platform_name, "oclgrind")) info->queue_out_of_order = false;
  cl_device_exec_capabilities ec = 0;
  if (QUERY(d, CL_DEVICE_EXECUTION_CAPABILITIES, ec))
    info->native_kernels = (ec & CL_EXEC_NATIVE_KERNEL) != 0;

  if (QUERY(d, CL_DEVICE_PARTITION_MAX_SUB_DEVICES, u)) info->max_sub_devices = u;
  cl_device_partition_property props[8] = {0};
  size_t props_len = 0;
  if (clGetDeviceInfo(d, CL_DEVICE_PARTITION_PROPERTIES, sizeof props, props,
                      &props_len) == CL_SUCCESS) {
    for (size_t i = 0; i < props_len / sizeof props[0] && i < 8; i++) {
      if (props[i] == CL_DEVICE_PARTITION_EQUALLY) info->partition_equally = true;
      if (props[i] == CL_DEVICE_PARTITION_BY_COUNTS) info->partition_by_counts = true;
      if (props[i] == CL_DEVICE_PARTITION_BY_AFFINITY_DOMAIN)
        info->partition_by_affinity = true;
    }
  }
  if (QUERY(d, CL_DEVICE_HOST_UNIFIED_MEMORY, b)) info->unified_memory = b == CL_TRUE;
  b = CL_FALSE;
  if (QUERY(d, CL_DEVICE_COMPILER_AVAILABLE, b)) info->compiler_available = b == CL_TRUE;
  b = CL_FALSE;
  if (QUERY(d, CL_DEVICE_AVAILABLE, b)) info->available = b == CL_TRUE;

  query_pci(d, info);
  return HS_OK;
}

hs_status hs__inventory_discover(hs_inventory *inv) {
  memset(inv, 0, sizeof *inv);
  cl_uint np = 0;
  cl_int err = clGetPlatformIDs(0, NULL, &np);
  if (err != CL_SUCCESS || np == 0)
    return hs__fail(HS_ERR_NO_DEVICE,
                    "no OpenCL platform found (clGetPlatformIDs: %s); install an "
                    "OpenCL driver, e.g. Debian's pocl-opencl-icd for the CPU",
                    err == CL_SUCCESS ? "0 platforms" : hs__cl_error_name(err));
  cl_platform_id *plats = calloc(np, sizeof *plats);
  inv->platforms = calloc(np, sizeof *inv->platforms);
  if (!plats || !inv->platforms) goto nomem;
  err = clGetPlatformIDs(np, plats, NULL);
  if (err != CL_SUCCESS) {
    free(plats);
    hs__inventory_release(inv);
    return hs__cl_fail(err, "clGetPlatformIDs", NULL);
  }
  inv->n_platforms = (int)np;

  for (cl_uint p = 0; p < np; p++) {
    hs_platform_note *note = &inv->platforms[p];
    if (clGetPlatformInfo(plats[p], CL_PLATFORM_NAME, sizeof note->name, note->name,
                          NULL) != CL_SUCCESS)
      snprintf(note->name, sizeof note->name, "platform %u", p);
    if (clGetPlatformInfo(plats[p], CL_PLATFORM_VENDOR, sizeof note->vendor, note->vendor,
                          NULL) != CL_SUCCESS)
      note->vendor[0] = '\0';
    cl_uint nd = 0;
    err = clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, 0, NULL, &nd);
    if (err == CL_DEVICE_NOT_FOUND || (err == CL_SUCCESS && nd == 0)) {
      note->num_devices = 0;
      snprintf(note->error, sizeof note->error, "no device");
      hs__log(HS_LOG_DEVICE, "platform '%s' has no device", note->name);
      continue;
    }
    if (err != CL_SUCCESS) {
      note->num_devices = -1;
      snprintf(note->error, sizeof note->error, "clGetDeviceIDs failed with %s",
               hs__cl_error_name(err));
      hs__log(HS_LOG_DEVICE, "platform '%s' skipped: %s", note->name, note->error);
      continue;
    }
    cl_device_id *ids = calloc(nd, sizeof *ids);
    hs_dev *grown = realloc(inv->devs, ((size_t)inv->n_devs + nd) * sizeof *grown);
    if (!ids || !grown) {
      free(ids);
      if (grown) inv->devs = grown;
      goto nomem;
    }
    inv->devs = grown;
    err = clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, nd, ids, NULL);
    if (err != CL_SUCCESS) {
      note->num_devices = -1;
      snprintf(note->error, sizeof note->error, "clGetDeviceIDs failed with %s",
               hs__cl_error_name(err));
      free(ids);
      continue;
    }
    note->num_devices = 0;
    for (cl_uint i = 0; i < nd; i++) {
      hs_dev *dev = &inv->devs[inv->n_devs];
      if (hs__device_query(plats[p], ids[i], &dev->info) != HS_OK) {
        hs__log(HS_LOG_DEVICE, "platform '%s': device %u skipped: %s", note->name, i,
                hs_last_error());
        continue;
      }
      dev->platform = plats[p];
      dev->id = ids[i];
      dev->progs = NULL;
      dev->settings = NULL;
      dev->info.index = inv->n_devs;
      dev->info.platform_index = (int)p;
      dev->info.platform_device = note->num_devices;
      inv->n_devs++;
      note->num_devices++;
    }
    free(ids);
  }
  free(plats);
  hs__clear_error();
  hs__inventory_order(inv);
  if (inv->n_devs == 0) {
    hs__inventory_release(inv);
    return hs__fail(HS_ERR_NO_DEVICE, "%u OpenCL platform(s) found but no usable device",
                    np);
  }
  return HS_OK;

nomem:
  free(plats);
  hs__inventory_release(inv);
  return hs__fail(HS_ERR_NOMEM, "out of memory while listing OpenCL devices");
}

/* ---- stable order -------------------------------------------------------- */

void hs__platform_key(const char *name, const char *vendor, char *out, size_t cap) {
  /* PoCL's platform name spells out what its users call it. */
  if (strcasestr(name, "Portable Computing Language") || strcasestr(vendor, "pocl")) {
    snprintf(out, cap, "pocl");
    return;
  }
  size_t n = 0;
  for (const char *s = name; *s && n + 1 < cap; s++) {
    unsigned char c = (unsigned char)*s;
    if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')) out[n++] = (char)c;
    else if (c >= 'A' && c <= 'Z') out[n++] = (char)(c - 'A' + 'a');
    else if (n > 0) break; /* the first word */
  }
  out[n] = '\0';
  if (n == 0) snprintf(out, cap, "platform");
}

bool hs__is_simulator(const char *platform_name, const char *device_name) {
  static const char *const words[] = {"simulator", "emulat", "oclgrind"};
  for (size_t i = 0; i < HS_ARRAY_LEN(words); i++)
    if (strcasestr(platform_name, words[i]) || strcasestr(device_name, words[i])) return true;
  return false;
}

/* Platforms: real before simulated, then key, name, and (for identical
 * ones) the loader's order, the only thing left to tell them apart. */
typedef struct loader_note {
  const hs_platform_note *note;
  int loader; /* position in the loader's order */
} loader_note;

static int cmp_platform(const void *a, const void *b) {
  const loader_note *x = a, *y = b;
  if (x->note->simulator != y->note->simulator) return x->note->simulator ? 1 : -1;
  int c = strcmp(x->note->key, y->note->key);
  if (c == 0) c = strcmp(x->note->name, y->note->name);
  return c ? c : x->loader - y->loader;
}

static int cmp_device(const void *a, const void *b) {
  const hs_device_info *x = &((const hs_dev *)a)->info, *y = &((const hs_dev *)b)->info;
  if (x->simulator != y->simulator) return x->simulator ? 1 : -1;
  if (x->platform_index != y->platform_index) return x->platform_index - y->platform_index;
  return x->platform_device - y->platform_device;
}

void hs__inventory_order(hs_inventory *inv) {
  int np = inv->n_platforms;
  if (np <= 0) return;
  loader_note *order = malloc(sizeof *order * (size_t)np);
  int *new_of = malloc(sizeof *new_of * (size_t)np);
  hs_platform_note *sorted = malloc(sizeof *sorted * (size_t)np);
  if (!order || !new_of || !sorted) {
    /* Out of memory: leave the loader's order, with keys and selectors. */
    free(order), free(new_of), free(sorted);
    order = NULL;
  }
  for (int p = 0; p < np; p++) {
    hs_platform_note *n = &inv->platforms[p];
    hs__platform_key(n->name, n->vendor, n->key, sizeof n->key);
    n->simulator = hs__is_simulator(n->name, "");
  }
  if (order) {
    for (int p = 0; p < np; p++) order[p] = (loader_note){&inv->platforms[p], p};
    qsort(order, (size_t)np, sizeof *order, cmp_platform);
    for (int p = 0; p < np; p++) {
      sorted[p] = inv->platforms[order[p].loader];
      new_of[order[p].loader] = p;
    }
    memcpy(inv->platforms, sorted, sizeof *sorted * (size_t)np);
    for (int i = 0; i < inv->n_devs; i++)
      inv->devs[i].info.platform_index = new_of[inv->devs[i].info.platform_index];
  }
  /* Two platforms with one key (two vendors' drivers of one name): the
   * later ones get 2, 3, ... appended. */
  for (int p = 1; p < np; p++) {
    int same = 1;
    for (int q = 0; q < p; q++) same += strcmp(inv->platforms[q].key, inv->platforms[p].key) == 0;
    if (same > 1) {
      size_t len = strlen(inv->platforms[p].key);
      if (len > sizeof inv->platforms[p].key - 4) len = sizeof inv->platforms[p].key - 4;
      snprintf(inv->platforms[p].key + len, 4, "%d", same);
    }
  }
  for (int i = 0; i < inv->n_devs; i++) {
    hs_device_info *d = &inv->devs[i].info;
    const hs_platform_note *n = &inv->platforms[d->platform_index];
    snprintf(d->platform_key, sizeof d->platform_key, "%s", n->key);
    snprintf(d->selector, sizeof d->selector, "%s:%d", n->key, d->platform_device);
    d->simulator = n->simulator || hs__is_simulator(d->platform_name, d->name);
  }
  if (order) qsort(inv->devs, (size_t)inv->n_devs, sizeof *inv->devs, cmp_device);
  for (int i = 0; i < inv->n_devs; i++) inv->devs[i].info.index = i;
  free(order), free(new_of), free(sorted);
}

void hs__inventory_release(hs_inventory *inv) {
  free(inv->devs);
  free(inv->platforms);
  memset(inv, 0, sizeof *inv);
}
