/* hetsage — the runtime handle: discovered devices and the host topology. */
#ifndef HETSAGE_RUNTIME_H
#define HETSAGE_RUNTIME_H

#include <stddef.h>

#include "hetsage/device.h"
#include "hetsage/settings.h"
#include "hetsage/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct hs_runtime hs_runtime;

typedef struct hs_runtime_options {
  size_t struct_size; /* set by hs_runtime_options_init */
  /* The board profile (name or path, as hs_board_profile_load takes it)
   * that sessions, bring-up and placement use when they name none; NULL:
   * none (they use HS_BOARD_DEFAULT). Loaded by hs_runtime_open, which
   * fails as hs_board_profile_load does when it cannot be. */
  const char *board;
  int flags; /* HS_RUNTIME_* bits */
  /* Settings that win over the environment (hetsage/settings.h); NULL: none.
   * Copied by hs_runtime_open, not kept. */
  const hs_settings *settings;
} hs_runtime_options;

/* Read nothing from the environment: the settings are hs_runtime_options'
 * alone, the defaults otherwise (no binary cache unless a cache_dir is
 * set). */
#define HS_RUNTIME_IGNORE_ENV 1

HS_API void hs_runtime_options_init_sized(hs_runtime_options *opts, size_t struct_size);
/* Defaults: no board, no flags, no settings. */
static inline void hs_runtime_options_init(hs_runtime_options *opts) {
  hs_runtime_options_init_sized(opts, sizeof *opts);
}

/* Discover every OpenCL platform and device and the host topology (hwloc),
 * after resolving the settings: `opts->settings`, then (unless
 * HS_RUNTIME_IGNORE_ENV) the HETSAGE_* environment, then the defaults. A
 * bad setting or environment variable fails here with HS_ERR_INVALID_ARG
 * naming it and what it accepts; log categories it names are enabled.
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

/* The device inventory: the number of devices, and device `i` (its
 * `index`), valid until hs_runtime_close; NULL when `i` is out of range.
 * Reach devices through this accessor, never by indexing from the first:
 * hs_device_info may grow (hetsage/version.h). */
HS_API int hs_runtime_device_count(const hs_runtime *rt);
HS_API const hs_device_info *hs_runtime_device(const hs_runtime *rt, int i);

typedef struct hs_platform_info {
  char name[HS_NAME_MAX];
  int num_devices; /* -1 when the platform's calls failed */
  char error[256]; /* why it has no usable device, "" otherwise */
} hs_platform_info;

/* Number of platforms found, including those that were skipped. */
HS_API int hs_runtime_platform_count(const hs_runtime *rt);
/* Platform `i` (0 <= i < count), valid until hs_runtime_close; NULL
 * otherwise. */
HS_API const hs_platform_info *hs_runtime_platform(const hs_runtime *rt, int i);

typedef struct hs_host_topology {
  int packages, numa_nodes, cores, pus;
} hs_host_topology;

/* The host topology (hwloc), valid until hs_runtime_close. */
HS_API const hs_host_topology *hs_runtime_topology(const hs_runtime *rt);

/* The settings in force, resolved at open (strings owned by the runtime). */
HS_API const hs_settings *hs_runtime_settings(const hs_runtime *rt);

struct hs_board_profile;
/* The board profile hs_runtime_options.board named, NULL when it named
 * none; owned by the runtime. */
HS_API const struct hs_board_profile *hs_runtime_board(const hs_runtime *rt);
/* Cores of the host (hwloc), at least 1. */
HS_API int hs_runtime_host_cores(const hs_runtime *rt);

/* The kernel set of the OpenBLAS this process loaded, on which a CPU
 * trainer's products run ("Haswell", "SkylakeX", ...: OpenBLAS picks it
 * for the CPU when it loads, OPENBLAS_CORETYPE overriding); NULL in a
 * build without CBLAS. */
HS_API const char *hs_blas_kernels(void);
/* The kernel set to ask OpenBLAS for, where the one it picked uses neither
 * AVX2 nor AVX-512 on a CPU that has them (OpenBLAS 0.3.21 falls back to
 * its SSE3 "Prescott" kernels on CPUs newer than its table, Intel's
 * Sapphire and Emerald Rapids among them, at a third of the speed):
 * "SkylakeX" where the CPU has AVX-512, "Haswell" where it has AVX2; NULL
 * otherwise (a set OpenBLAS picked with vector instructions stays).
 * OpenBLAS reads OPENBLAS_CORETYPE only when it loads: see
 * hs_blas_reexec. */
HS_API const char *hs_blas_kernels_suggested(void);
/* For a program's main(), before it starts threads or work: where
 * hs_blas_kernels_suggested() names a set and OPENBLAS_CORETYPE is unset,
 * set OPENBLAS_CORETYPE to that set and execute the program again (the
 * file /proc/self/exe names, the same arguments, the environment otherwise
 * the same), so that its OpenBLAS loads those kernels. Returns, having changed
 * nothing, where there is nothing to do or the exec fails; does not return
 * otherwise. The hetsage command and the benchmarks call it; an embedding
 * application may, or set OPENBLAS_CORETYPE itself. Each kernel set rounds
 * products its own way: results are those of the set in use. */
HS_API void hs_blas_reexec(char **argv);

#ifdef __cplusplus
}
#endif
#endif
