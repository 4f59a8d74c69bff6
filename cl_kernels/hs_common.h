/* Shared by every hetsage OpenCL program: id and offset types.
 * Prepended to each program's source by the device layer. */
#ifndef HS_COMMON_CL_H
#define HS_COMMON_CL_H

typedef long hs_off_t; /* CSR offsets: 64-bit, graphs may exceed 2^31 edges */
typedef int hs_vid_t;  /* vertex ids: 32-bit on the device */

/* Software prefetch, for CPU devices: there a work-item runs its loop on
 * one core, and random loads are overlapped only if they are issued
 * ahead. OpenCL's prefetch() compiles to nothing in PoCL, so the
 * compiler's builtin is used where it has one; the host defines
 * HS_CPU_DEVICE for CPU devices (GPUs hide latency with other work-items
 * and take no prefetch). HS_PREFETCH stays undefined elsewhere, and
 * kernels then keep their plain loops. */
#if defined(HS_CPU_DEVICE) && defined(__has_builtin)
#if __has_builtin(__builtin_prefetch)
#define HS_PREFETCH(p) __builtin_prefetch((p), 0, 3)
#define HS_PREFETCH_W(p) __builtin_prefetch((p), 1, 3)
#endif
#endif

#endif
