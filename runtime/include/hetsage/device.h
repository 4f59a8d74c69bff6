/* hetsage — device inventory as discovery reports it.
 *
 * The inventory is plain data: placement decisions are pure functions of
 * it, so tests and tools can describe boards that are not present. */
#ifndef HETSAGE_DEVICE_H
#define HETSAGE_DEVICE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hetsage/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum hs_device_type {
  HS_DEVICE_CPU = 1,
  HS_DEVICE_GPU = 2,
  HS_DEVICE_ACCELERATOR = 4, /* FPGAs and other fixed-function boards */
  HS_DEVICE_CUSTOM = 8,
} hs_device_type;

/* Name of a device type: "cpu", "gpu", "accelerator", "custom". */
HS_API const char *hs_device_type_name(hs_device_type type);

#define HS_NAME_MAX 256

/* A device as discovery reports it. The runtime's are reached through
 * hs_runtime_device(); a caller describing devices of its own (to place
 * roles on a board that is not present) starts each with
 * hs_device_info_init and passes them as an array (hs_placement_request),
 * every element struct_size bytes from the previous. */
typedef struct hs_device_info {
  size_t struct_size; /* set by hs_device_info_init, or by discovery */
  int index;          /* position in the inventory */
  int platform_index; /* position of its platform */
  char platform_name[HS_NAME_MAX];
  char platform_vendor[HS_NAME_MAX];
  char platform_version[HS_NAME_MAX];

  hs_device_type type;
  char name[HS_NAME_MAX];
  char vendor[HS_NAME_MAX];
  uint32_t vendor_id;
  char driver_version[HS_NAME_MAX];
  char device_version[HS_NAME_MAX];   /* "OpenCL 3.0 ..." */
  char opencl_c_version[HS_NAME_MAX]; /* "OpenCL C 1.2 ..." */

  uint32_t compute_units;
  uint32_t clock_mhz;
  uint64_t global_mem_bytes;
  uint64_t local_mem_bytes;
  uint64_t max_alloc_bytes;
  uint64_t global_cache_bytes;
  size_t max_work_group_size;
  uint32_t max_work_item_dims;
  size_t max_work_item_sizes[3];

  bool int64_atomics; /* cl_khr_int64_base_atomics */
  bool fp16;          /* cl_khr_fp16 */
  bool fp64;          /* cl_khr_fp64 or a double fp config */
  bool queue_out_of_order;
  bool queue_profiling;
  bool native_kernels;
  uint32_t max_sub_devices; /* 0 or 1: cannot be partitioned */
  bool partition_equally;
  bool partition_by_counts;
  bool partition_by_affinity;
  bool unified_memory;      /* CL_DEVICE_HOST_UNIFIED_MEMORY */
  bool compiler_available;
  bool available;

  bool has_pci_bus_id;
  char pci_bus_id[32]; /* "dddd:bb:dd.f" when has_pci_bus_id */

  /* hwloc locality: a list string of PU indices ("0-3,8"), "" if unknown.
   * For CPU devices, the PUs their compute units run on. */
  char cpuset[128];

  /* Full extension string (space separated). */
  char extensions[4096];

  /* Stable names (the inventory is ordered by these, never by the ICD
   * loader's order, so an index means the same device on every machine
   * with the same implementations):
   *  - platform_key: a short lower-case name of the implementation:
   *    "pocl", "rusticl", "oclgrind", "clover", ... (the first word of the
   *    platform name; PoCL's name is spelled out, hence its own key);
   *  - platform_device: the device's position within its platform;
   *  - selector: "<platform_key>:<platform_device>" ("pocl:0"), which
   *    --sampler/--trainer, HETSAGE_SAMPLER/TRAINER and hs_placement_request
   *    accept and placement shows. */
  char platform_key[32];
  int platform_device;
  char selector[48];
  /* A simulator or emulator (oclgrind, vendor FPGA emulators): correct
   * results, no real speed. Ordered after real devices, never preferred
   * by the automatic role rules, and named as such in placements. */
  bool simulator;
} hs_device_info;

HS_API void hs_device_info_init_sized(hs_device_info *d, size_t struct_size);
/* Every field zero (false, ""), struct_size set. */
static inline void hs_device_info_init(hs_device_info *d) {
  hs_device_info_init_sized(d, sizeof *d);
}

#ifdef __cplusplus
}
#endif
#endif
