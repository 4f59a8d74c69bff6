/* Shared by every hetsage OpenCL program: id and offset types.
 * Prepended to each program's source by the device layer. */
#ifndef HS_COMMON_CL_H
#define HS_COMMON_CL_H

typedef long hs_off_t; /* CSR offsets: 64-bit, graphs may exceed 2^31 edges */
typedef int hs_vid_t;  /* vertex ids: 32-bit on the device */

/* Software prefetch, for CPU devices: there a work-item runs its loop on
 * one core, and random loads are overlapped only if they are issued
 * ahead. The host defines HS_CPU_DEVICE for CPU devices (GPUs hide latency
 * with other work-items and take no prefetch); HS_PREFETCH stays undefined
 * elsewhere, and kernels then keep their plain loops. Which prefetch is
 * chosen by what the compiler targets:
 *  - a native target (PoCL): the compiler's builtin, because OpenCL's
 *    prefetch() compiles to nothing in PoCL;
 *  - SPIR or SPIR-V (rusticl, oclgrind): OpenCL's prefetch(). The builtin
 *    becomes the llvm.prefetch intrinsic, which SPIR-V writers need not
 *    carry: Mesa 22.3's ends the whole process inside clBuildProgram
 *    (exit(8)), where no build-failure fallback can catch it. */
#if defined(HS_CPU_DEVICE)
#if defined(__SPIR__) || defined(__SPIR32__) || defined(__SPIR64__) || defined(__SPIRV__) || \
    defined(__SPIRV32__) || defined(__SPIRV64__)
#define HS_PREFETCH(p) prefetch((p), 1)
#define HS_PREFETCH_W(p) prefetch((p), 1)
#elif defined(__has_builtin)
#if __has_builtin(__builtin_prefetch)
#define HS_PREFETCH(p) __builtin_prefetch((p), 0, 3)
#define HS_PREFETCH_W(p) __builtin_prefetch((p), 1, 3)
#endif
#endif
#endif

#endif
