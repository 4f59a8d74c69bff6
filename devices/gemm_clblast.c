/* The CLBlast provider. CLBlast compiles its kernels on first use and, for
 * the indirect path, would allocate a temporary buffer on every call:
 * prepare() compiles once per transpose combination and grows one
 * temporary buffer, so that steady-state calls neither compile nor
 * allocate. CLBlast takes no wait list, so waits become a barrier on the
 * (in-order) queue. */
#include "gemm_internal.h"
#include "hs_config.h"
#include "hs_launch.h"
#include "hs_programs.h"

#if HS_HAVE_CLBLAST
#include <clblast_c.h>

bool hs__gemm_clblast_available(const hs_dev *dev, const char **why) {
  if (!hs__dev_compiles(dev)) {
    *why = "the device does not compile CLBlast's kernels (no compiler, or its profile says so)";
    return false;
  }
  return true;
}

static hs_status clblast_fail(const hs_gemm *g, CLBlastStatusCode s, const char *call) {
  if (s < 0 && s > -100) return hs__cl_fail((cl_int)s, call, g->dev.id);
  return hs__fail(HS_ERR_OPENCL, "%s failed with CLBlast status %d on '%s'", call, (int)s,
                  g->dev.info.name);
}

static CLBlastTranspose tr(bool t) { return t ? CLBlastTransposeYes : CLBlastTransposeNo; }

static hs_status reserve_temp(hs_gemm *g, const hs_gemm_op *op) {
  size_t need = 0;
  CLBlastStatusCode s = CLBlastSGemmTempBufferSize(
      CLBlastLayoutRowMajor, tr(op->trans_a), tr(op->trans_b), op->m, op->n, op->k, op->a_off,
      op->lda, op->b_off, op->ldb, op->c_off, op->ldc, &g->q, &need);
  if (s != CLBlastSuccess) return clblast_fail(g, s, "CLBlastSGemmTempBufferSize");
  if (g->temp && g->temp_bytes >= need) return HS_OK;
  if (g->temp) hs__log(HS_LOG_DEVICE, "CLBlast temporary buffer grows to %zu bytes", need);
  return hs__mem_reserve(g->ctx, CL_MEM_READ_WRITE, need, &g->temp, &g->temp_bytes);
}

static hs_status enqueue(hs_gemm *g, const hs_gemm_op *op, cl_mem c, size_t c_off, cl_event *ev) {
  CLBlastStatusCode s = CLBlastSgemmWithTempBuffer(
      CLBlastLayoutRowMajor, tr(op->trans_a), tr(op->trans_b), op->m, op->n, op->k, op->alpha,
      op->a, op->a_off, op->lda, op->b, op->b_off, op->ldb, op->beta, c, c_off, op->ldc, &g->q,
      ev, g->temp);
  if (s != CLBlastSuccess) return clblast_fail(g, s, "CLBlastSgemm");
  return HS_OK;
}

hs_status hs__gemm_clblast_prepare(hs_gemm *g, const hs_gemm_op *op) {
  hs_status st = reserve_temp(g, op);
  if (st != HS_OK) return st;
  unsigned bit = 1u << (2 * op->trans_a + op->trans_b);
  if ((g->warmed & bit) || op->m == 0 || op->n == 0) return HS_OK;
  /* Compile by running this shape once into a scratch C. */
  cl_mem scratch = NULL;
  size_t bytes = (op->m - 1) * op->ldc * sizeof(float) + op->n * sizeof(float);
  st = hs__mem_create(g->ctx, CL_MEM_READ_WRITE, bytes, &scratch);
  if (st != HS_OK) return st;
  hs_gemm_op warm = *op;
  warm.beta = 0.0f;
  double t0 = hs__now();
  st = enqueue(g, &warm, scratch, 0, NULL);
  if (st == HS_OK) st = hs__queue_finish(g->q);
  hs__mem_release(&scratch);
  if (st == HS_OK) {
    g->warmed |= bit;
    hs__log(HS_LOG_BUILD, "CLBlast GEMM (trans %d%d) ready on '%s' in %.2f s", op->trans_a,
            op->trans_b, g->dev.info.name, hs__now() - t0);
  }
  return st;
}

hs_status hs__gemm_clblast_run(hs_gemm *g, const hs_gemm_op *op, cl_uint n_wait,
                               const cl_event *wait, cl_event *ev) {
  if (op->m == 0 || op->n == 0) return hs__queue_marker(g->q, n_wait, wait, ev);
  hs_status st = hs__gemm_clblast_prepare(g, op);
  if (st == HS_OK) st = hs__queue_wait_for(g->q, n_wait, wait);
  if (st != HS_OK) return st;
  return enqueue(g, op, op->c, op->c_off, ev);
}

void hs__gemm_clblast_release(hs_gemm *g) { hs__mem_release(&g->temp); }

#else

bool hs__gemm_clblast_available(const hs_dev *dev, const char **why) {
  (void)dev;
  *why = "this build has no CLBlast (meson option clblast)";
  return false;
}

hs_status hs__gemm_clblast_prepare(hs_gemm *g, const hs_gemm_op *op) {
  (void)g, (void)op;
  return hs__fail(HS_ERR_UNSUPPORTED, "this build has no CLBlast");
}

hs_status hs__gemm_clblast_run(hs_gemm *g, const hs_gemm_op *op, cl_uint n_wait,
                               const cl_event *wait, cl_event *ev) {
  (void)g, (void)op, (void)n_wait, (void)wait, (void)ev;
  return hs__fail(HS_ERR_UNSUPPORTED, "this build has no CLBlast");
}

void hs__gemm_clblast_release(hs_gemm *g) { hs__mem_release(&g->temp); }

#endif
