/* GEMM providers: single-precision row-major C = alpha op(A) op(B) + beta C
 * on a device buffer, enqueued on a queue like any kernel (wait list in,
 * event out), whatever computes it:
 *
 *  - cblas:   CPU devices with native kernels: an OpenCL native kernel that
 *             calls the optimised CBLAS (OpenBLAS) on the buffers' memory,
 *             with OpenBLAS limited to the device's compute units;
 *  - clblast: GPUs and accelerators: CLBlast with a preallocated temporary
 *             buffer and kernels compiled once per transpose combination;
 *  - builtin: a tiled OpenCL kernel, where neither is available.
 *
 * One provider per device queue; not thread-safe (one host thread drives a
 * queue). */
#ifndef HS_GEMM_H
#define HS_GEMM_H

#include <stdbool.h>

#include "hs_dev.h"

typedef enum hs_gemm_kind {
  HS_GEMM_AUTO = 0,
  HS_GEMM_CBLAS = 1,
  HS_GEMM_CLBLAST = 2,
  HS_GEMM_BUILTIN = 3,
} hs_gemm_kind;

/* "auto", "cblas", "clblast", "builtin". */
const char *hs__gemm_kind_name(hs_gemm_kind kind);
/* Parse a name; HS_ERR_INVALID_ARG for anything else. */
hs_status hs__gemm_kind_parse(const char *name, hs_gemm_kind *out);
/* The kernel set OpenBLAS chose for this CPU when it loaded ("Haswell",
 * "SkylakeX", ...; OPENBLAS_CORETYPE overrides the choice), or NULL in a
 * build without CBLAS: it sets a CPU trainer's GEMM speed. */
const char *hs__gemm_cblas_core(void);

/* The vector instructions of this CPU that OpenBLAS's kernel sets use. */
typedef enum hs_cpu_simd {
  HS_SIMD_OLDER = 0,  /* neither of the below (or not an x86 CPU) */
  HS_SIMD_AVX2 = 1,   /* AVX2 and FMA: OpenBLAS's "Haswell" kernels */
  HS_SIMD_AVX512 = 2, /* AVX-512 F, CD, BW, DQ and VL as well: "SkylakeX" */
} hs_cpu_simd;
hs_cpu_simd hs__gemm_cpu_simd(void);
/* The kernel set to ask OpenBLAS for (OPENBLAS_CORETYPE) on a CPU with
 * `simd`, where OpenBLAS chose `core` itself: "SkylakeX" or "Haswell"
 * where `core` uses neither AVX2 nor AVX-512 and the CPU has them (what
 * OpenBLAS falls back to on a CPU newer than its table: 0.3.21 runs its
 * SSE3 "Prescott" kernels on Intel's Sapphire and Emerald Rapids, a third
 * of the speed of its AVX-512 ones there), else NULL: a set OpenBLAS chose
 * with vector instructions is its own informed choice and stays. */
const char *hs__gemm_core_suggestion(const char *core, hs_cpu_simd simd);
/* hs__gemm_core_suggestion for this process's OpenBLAS on this CPU; NULL
 * in a build without CBLAS. */
const char *hs__gemm_cblas_core_suggested(void);

/* One product. Offsets and leading dimensions count floats. m or n may be
 * 0 (nothing to do); k may not be 0 unless m or n is (CLBlast cannot, so
 * no provider does). C must not share a buffer with A or B. */
typedef struct hs_gemm_op {
  bool trans_a, trans_b;
  size_t m, n, k;
  float alpha, beta; /* beta == 0: C's old contents are ignored */
  cl_mem a, b, c;
  size_t a_off, b_off, c_off;
  size_t lda, ldb, ldc;
} hs_gemm_op;

typedef struct hs_gemm hs_gemm;

/* A provider for `dev` on in-order queue `q` (retained until
 * hs__gemm_destroy; `ctx` must outlive the provider). `kind` HS_GEMM_AUTO
 * takes the device's settings' provider (HETSAGE_GEMM), else picks as
 * above. A kind
 * that this build or device cannot run is HS_ERR_UNSUPPORTED with the
 * reason. `threads` (cblas): OpenBLAS threads, 0 = the device's compute
 * units. */
hs_status hs__gemm_create(const hs_ctx *ctx, const hs_dev *dev, cl_command_queue q,
                          hs_gemm_kind kind, int threads, hs_gemm **out);
void hs__gemm_destroy(hs_gemm *g);
hs_gemm_kind hs__gemm_kind_of(const hs_gemm *g);

/* cblas (no effect on other providers): cut each product into pieces of
 * C's rows or columns by its shape alone (hs__gemm_piece_plan), each an
 * OpenBLAS product on one thread, shared out among at most `threads`
 * threads (the native kernel's and up to three helpers of the
 * provider's own, which sleep between products instead of spinning
 * as OpenBLAS's do, and are woken kept off the native kernel's CPU:
 * hs__pool_run_elsewhere). The pieces depend on the shapes alone (of the
 * product, and in a group of the group's: hs__gemm_group_piece_plan), so
 * the result does not depend on the thread count; with OpenBLAS 0.3.21 a
 * piece's elements also come out as in the whole product on one thread
 * (gemm::pieces_give_the_same_bits_whatever_the_threads). Off by default:
 * the GNN trainer keeps OpenBLAS's own threading (and its bits). Set
 * before the first product. OpenBLAS's thread count is process-wide: the
 * providers' products run one at a time in a process, each on its own
 * count (a GNN and a CTR trainer training at once take turns), whatever
 * was set before (gemm::a_product_runs_on_its_own_thread_count). */
void hs__gemm_set_pieces(hs_gemm *g, bool on);

/* The pieces of an m x n x k product: `count` (1..HS_GEMM_MAX_PIECES)
 * ranges of `size` rows (along_n false) or columns (true) of C, the last
 * one no longer than the others. A function of the shape alone. */
#define HS_GEMM_MAX_PIECES 4
typedef struct hs_gemm_piece_plan {
  int count;
  bool along_n;
  size_t size;
} hs_gemm_piece_plan;
void hs__gemm_piece_plan(size_t m, size_t n, size_t k, hs_gemm_piece_plan *out);
/* The pieces of an m x n x k product in a group of n_prods products
 * (hs__gemm_run_group): hs__gemm_piece_plan's, but a product whose inner
 * side k is the longest of the three (a weights' gradient, k the batch)
 * in a group of two or more is cut into at most HS_GEMM_GROUP_LONG_PIECES:
 * each of its pieces repacks the whole of its other operand (four pieces
 * of a 221 x 256 x 4096 product took 7.6 ms on one thread, the whole one
 * 5.5), while the group's other products keep the other threads busy. A
 * function of the shapes alone, like hs__gemm_piece_plan. */
#define HS_GEMM_GROUP_LONG_PIECES 2
void hs__gemm_group_piece_plan(size_t m, size_t n, size_t k, int n_prods,
                               hs_gemm_piece_plan *out);

#define HS_GEMM_GROUP_MAX 4
/* Enqueue 1..HS_GEMM_GROUP_MAX products that do not depend on each other
 * (none's C is another's A, B or C) as one command after `wait`; `ev`
 * completes with the last. cblas in pieces: the pieces of all of them
 * (hs__gemm_group_piece_plan), product after product, are shared among
 * the threads, where products one at a time wait for each one's last
 * piece; the same bits as one at a time (a piece's elements come out as
 * in the whole product: gemm::pieces_give_the_same_bits_whatever_the_threads,
 * gemm::a_group_gives_the_bits_of_its_products_one_at_a_time). Other
 * providers run them one after another. */
hs_status hs__gemm_run_group(hs_gemm *g, const hs_gemm_op *ops, int n_ops, cl_uint n_wait,
                             const cl_event *wait, cl_event *ev);

/* Get ready for products shaped like `op` (buffers need not hold data):
 * grow temporary storage and compile whatever the first product of this
 * transpose combination would. Optional: hs__gemm_run prepares on demand,
 * but then the first run of a shape may allocate and compile. Blocks. */
hs_status hs__gemm_prepare(hs_gemm *g, const hs_gemm_op *op);

/* Enqueue one product after `wait`; `ev` (optional) completes with it. */
hs_status hs__gemm_run(hs_gemm *g, const hs_gemm_op *op, cl_uint n_wait, const cl_event *wait,
                       cl_event *ev);

#endif
