/* hetsage — the runtime handle: discovered devices and the host topology. */
#ifndef HETSAGE_RUNTIME_H
#define HETSAGE_RUNTIME_H

#include "hetsage/device.h"
#include "hetsage/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct hs_runtime hs_runtime;

typedef struct hs_runtime_options {
  const char *board; /* board profile name or path; NULL: the default board */
  int flags;         /* reserved, 0 */
} hs_runtime_options;

/* Discover every OpenCL platform and device and the host topology (hwloc).
 * `opts` may be NULL. A platform whose calls fail, or that has no device, is
 * recorded (hs_runtime_platform) and skipped; finding no usable device at
 * all is HS_ERR_NO_DEVICE. On success *out is owned by the caller and must
 * be released with hs_runtime_close. A runtime may be used from several
 * threads for reading (devices, topology). Where a memory limit is in force
 * (ulimit -v or -d, a memory cgroup), discovery is first tried in a child
 * process (fork), since OpenCL implementations may abort when loading them
 * runs out of memory: HS_ERR_NOMEM (naming the limit) if the trial dies. */
HS_API hs_status hs_runtime_open(hs_runtime **out, const hs_runtime_options *opts);

/* Release everything the runtime holds. NULL is ignored. */
HS_API void hs_runtime_close(hs_runtime *rt);

/* The device inventory, valid until hs_runtime_close. */
HS_API hs_status hs_runtime_devices(const hs_runtime *rt, const hs_device_info **devs,
                                    int *n);

typedef struct hs_platform_info {
  char name[HS_NAME_MAX];
  int num_devices; /* -1 when the platform's calls failed */
  char error[256]; /* why it has no usable device, "" otherwise */
} hs_platform_info;

/* Number of platforms found, including those that were skipped. */
HS_API int hs_runtime_platform_count(const hs_runtime *rt);
/* Platform `i` (0 <= i < count); HS_ERR_RANGE otherwise. */
HS_API hs_status hs_runtime_platform(const hs_runtime *rt, int i, hs_platform_info *out);

typedef struct hs_host_topology {
  int packages, numa_nodes, cores, pus;
} hs_host_topology;

HS_API hs_status hs_runtime_topology(const hs_runtime *rt, hs_host_topology *out);
/* Cores of the host (hwloc), at least 1. */
HS_API int hs_runtime_host_cores(const hs_runtime *rt);

#ifdef __cplusplus
}
#endif
#endif
