/* hetsage — the OpenCL programs hetsage runs, for board vendors: their
 * sources for offline compilers, and prebuilt binaries for devices that do
 * not compile at run time (FPGAs, locked-down accelerators).
 *
 * Every program has a stable name ("sample", "gather", "cache",
 * "train_sage", "gemm", "probe", "selftest"). A board profile names prebuilt
 * binaries per device in [binaries] (boards/README.md): `<id> = FILE`, a
 * bundle holding every program (what hs_kernels_build writes), or
 * `<id>.<program> = FILE`, one program's binary as an offline compiler
 * writes it. Programs are found in those files first, then in the binary
 * cache, then built from source where the device compiles. */
#ifndef HETSAGE_KERNELS_H
#define HETSAGE_KERNELS_H

#include <stddef.h>

#include "hetsage/runtime.h"
#include "hetsage/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Who needs a program (bits). */
typedef enum hs_kernel_roles {
  HS_KERNELS_SAMPLER = 1, /* sampling and reindexing */
  HS_KERNELS_TRAINER = 2, /* training (of the default model), its cache, GEMM */
  HS_KERNELS_BRINGUP = 4, /* what bring-up and the benchmarks run besides */
  HS_KERNELS_ALL = 7,
} hs_kernel_roles;

/* Number of programs, and the name of program i (NULL out of range). */
HS_API int hs_program_count(void);
HS_API const char *hs_program_name(int i);

/* Write, into folder `dir` (created if missing), each program's complete
 * source as it is built for device `device` of `rt`: `<program>.cl` holds
 * every embedded file it is made of (headers inlined, so it compiles
 * stand-alone), and `manifest.json` lists, per program, its file, its
 * kernels, the build options for that device and the roles that need it,
 * with the hetsage version and the device. Nothing is compiled. Errors:
 * HS_ERR_RANGE (no such device), HS_ERR_IO, HS_ERR_NOMEM. */
HS_API hs_status hs_kernels_emit(const hs_runtime *rt, int device, const char *dir);

/* Build every program that `roles` (hs_kernel_roles bits) need on device
 * `device` of `rt` and write them into one bundle file at `path`
 * (atomically), the form `[binaries] <id> = FILE` takes. `programs` (may be
 * NULL) receives the names written, comma-separated. Uses the binary
 * cache. Errors: HS_ERR_RANGE, HS_ERR_INVALID_ARG (no role bit),
 * HS_ERR_BUILD, HS_ERR_UNSUPPORTED (the device cannot compile), HS_ERR_IO. */
HS_API hs_status hs_kernels_build(hs_runtime *rt, int device, unsigned roles, const char *path,
                                  char *programs, size_t programs_len);

#ifdef __cplusplus
}
#endif
#endif
