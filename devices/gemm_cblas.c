/* The CBLAS provider: an OpenCL native kernel that calls OpenBLAS on the
 * buffers' memory. On a CPU device buffers are host memory already, so the
 * product runs at OpenBLAS speed while staying in the queue/event model
 * (ordering, wait lists, profiling) like any kernel.
 *
 * The buffers reach the native kernel as mapped pointers (map, run, unmap,
 * all enqueued without blocking), not through the native kernel's own
 * mem-object list: PoCL 3.1 pairs that list with args_mem_loc in its own
 * internal order, handing the function the wrong buffers whenever the
 * caller's order differs. Mapping is zero-copy on CPU devices. */
#include <stdatomic.h>

#include "gemm_internal.h"
#include "hs_config.h"

#if HS_HAVE_CBLAS
#include <cblas.h>

bool hs__gemm_cblas_available(const hs_dev *dev, const char **why) {
  if (!dev->info.native_kernels) {
    *why = "the device does not run native kernels (CL_EXEC_NATIVE_KERNEL)";
    return false;
  }
  return true;
}

typedef struct native_args {
  const float *a, *b;
  float *c;
  size_t m, n, k, lda, ldb, ldc;
  float alpha, beta;
  int trans_a, trans_b, threads;
} native_args;

/* OpenBLAS's thread count is process-wide: set it only when a provider
 * with another count runs (providers with different counts take turns,
 * each call setting its own). */
static atomic_int openblas_threads;

static void run_native(void *p) {
  const native_args *x = p;
  if (atomic_exchange(&openblas_threads, x->threads) != x->threads)
    openblas_set_num_threads(x->threads);
  cblas_sgemm(CblasRowMajor, x->trans_a ? CblasTrans : CblasNoTrans,
              x->trans_b ? CblasTrans : CblasNoTrans, (blasint)x->m, (blasint)x->n,
              (blasint)x->k, x->alpha, x->a, (blasint)x->lda, x->b, (blasint)x->ldb, x->beta,
              x->c, (blasint)x->ldc);
}

/* The float range [off, off + (rows-1) ld + cols) a matrix occupies. */
static void span(size_t off, size_t rows, size_t cols, size_t ld, size_t *first, size_t *count) {
  *first = off;
  *count = rows == 0 || cols == 0 ? 1 : (rows - 1) * ld + cols;
}

const char *hs__gemm_cblas_core(void) { return openblas_get_corename(); }

hs_status hs__gemm_cblas_run(hs_gemm *g, const hs_gemm_op *op, cl_uint n_wait,
                             const cl_event *wait, cl_event *ev) {
  if (op->m == 0 || op->n == 0) {
    cl_int err = clEnqueueMarkerWithWaitList(g->q, n_wait, n_wait ? wait : NULL, ev);
    return err == CL_SUCCESS ? HS_OK : hs__cl_fail(err, "clEnqueueMarkerWithWaitList", g->dev.id);
  }
  if (op->c == op->a || op->c == op->b)
    return hs__fail(HS_ERR_INVALID_ARG, "GEMM output shares a buffer with an input");
  size_t first[3], count[3];
  span(op->a_off, op->trans_a ? op->k : op->m, op->trans_a ? op->m : op->k, op->lda, &first[0], &count[0]);
  span(op->b_off, op->trans_b ? op->n : op->k, op->trans_b ? op->k : op->n, op->ldb, &first[1], &count[1]);
  span(op->c_off, op->m, op->n, op->ldc, &first[2], &count[2]);
  cl_mem mems[3] = {op->a, op->b, op->c};
  /* With beta 0 and no padding between C's rows nothing in the mapped span
   * needs its old contents: a copying implementation may then skip reading
   * them. */
  bool overwrite = op->beta == 0.0f && op->ldc == op->n;
  cl_map_flags flags[3] = {CL_MAP_READ, CL_MAP_READ,
                           overwrite ? CL_MAP_WRITE_INVALIDATE_REGION : CL_MAP_READ | CL_MAP_WRITE};
  void *ptr[3] = {NULL, NULL, NULL};
  int mapped = 0;
  cl_int err = CL_SUCCESS;
  const char *call = "clEnqueueMapBuffer";
  hs_status st = HS_OK;
  for (; mapped < 3; mapped++) {
    /* Only the first command waits: the queue is in order. */
    ptr[mapped] = clEnqueueMapBuffer(g->q, mems[mapped], CL_FALSE, flags[mapped],
                                     first[mapped] * sizeof(float), count[mapped] * sizeof(float),
                                     mapped ? 0 : n_wait, mapped || !n_wait ? NULL : wait, NULL, &err);
    if (err != CL_SUCCESS) goto fail;
  }
  native_args args = {
      .a = ptr[0], .b = ptr[1], .c = ptr[2],
      .m = op->m, .n = op->n, .k = op->k, .lda = op->lda, .ldb = op->ldb, .ldc = op->ldc,
      .alpha = op->alpha, .beta = op->beta,
      .trans_a = op->trans_a, .trans_b = op->trans_b, .threads = g->threads,
  };
  call = "clEnqueueNativeKernel(cblas_sgemm)";
  err = clEnqueueNativeKernel(g->q, run_native, &args, sizeof args, 0, NULL, NULL, 0, NULL, NULL);
  if (err != CL_SUCCESS) goto fail;
fail:
  /* Unmap whatever was mapped, also after a failure; the last unmap (of C)
   * is the event that says the product is done. */
  st = err == CL_SUCCESS ? HS_OK : hs__cl_fail(err, call, g->dev.id);
  for (int i = 0; i < mapped; i++) {
    cl_int e = clEnqueueUnmapMemObject(g->q, mems[i], ptr[i], 0, NULL,
                                       i == 2 && st == HS_OK ? ev : NULL);
    if (e != CL_SUCCESS && st == HS_OK) st = hs__cl_fail(e, "clEnqueueUnmapMemObject", g->dev.id);
  }
  return st;
}

#else

bool hs__gemm_cblas_available(const hs_dev *dev, const char **why) {
  (void)dev;
  *why = "this build has no CBLAS (meson option cblas)";
  return false;
}

const char *hs__gemm_cblas_core(void) { return NULL; }

hs_status hs__gemm_cblas_run(hs_gemm *g, const hs_gemm_op *op, cl_uint n_wait,
                             const cl_event *wait, cl_event *ev) {
  (void)g, (void)op, (void)n_wait, (void)wait, (void)ev;
  return hs__fail(HS_ERR_UNSUPPORTED, "this build has no CBLAS");
}

#endif
