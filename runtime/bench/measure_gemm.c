/* GEMM providers beside OpenBLAS on the same shapes (see hs_measure.h). */
#include <stdlib.h>
#include <string.h>

#include "bench/hs_measure.h"
#include "hs_config.h"
#include "core/hs_engine.h"

#if HS_HAVE_CBLAS
#include <cblas.h>
#endif

/* rows x (2 d_in) . (2 d_in) x d_out forward products, and the two
 * backward orientations of a middle layer. */
const hs_gemm_shape hs__gemm_shapes[] = {
    {false, false, 1024, 128, 256, "fwd d_in 128 d_out 128"},
    {false, false, 1024, 256, 512, "fwd d_in 256 d_out 256"},
    {false, false, 1024, 512, 1024, "fwd d_in 512 d_out 512"},
    {false, false, 4096, 128, 256, "fwd d_in 128 d_out 128"},
    {false, false, 4096, 256, 512, "fwd d_in 256 d_out 256"},
    {false, false, 4096, 512, 1024, "fwd d_in 512 d_out 512"},
    {false, false, 8192, 128, 256, "fwd d_in 128 d_out 128"},
    {false, false, 8192, 256, 512, "fwd d_in 256 d_out 256"},
    {false, false, 8192, 512, 512, "fwd d_in 256 d_out 512"},
    {true, false, 512, 256, 4096, "dW d_in 256 d_out 256"},
    {false, true, 4096, 512, 256, "dX d_in 256 d_out 256"},
};
const size_t hs__gemm_shape_count = HS_ARRAY_LEN(hs__gemm_shapes);
const size_t hs__gemm_quick_shapes[] = {0, 4, 8, 9, 10};
const size_t hs__gemm_quick_count = HS_ARRAY_LEN(hs__gemm_quick_shapes);

bool hs__have_cblas(void) { return HS_HAVE_CBLAS; }

static void fill(float *x, size_t n, unsigned seed) {
  for (size_t i = 0; i < n; i++) {
    seed = seed * 1664525u + 1013904223u;
    x[i] = (float)(seed >> 8) * (1.0f / 16777216.0f) - 0.5f;
  }
}

hs_status hs__measure_gemm(hs_gemm *g, const hs_ctx *ctx, cl_command_queue q,
                           const hs_gemm_shape *s, int threads, int warmup, int runs,
                           double *prov_s, double *blas_s) {
  size_t lda = s->ta ? s->m : s->k, ldb = s->tb ? s->k : s->n;
  size_t na = s->m * s->k, nb = s->k * s->n, nc = s->m * s->n;
  float *a = malloc(na * 4), *b = malloc(nb * 4), *c = malloc(nc * 4);
  cl_mem da = NULL, db = NULL, dc = NULL;
  hs_status st = a && b && c ? HS_OK : hs__fail(HS_ERR_NOMEM, "GEMM benchmark");
  if (st == HS_OK) {
    fill(a, na, 1), fill(b, nb, 2);
    if ((st = hs__mem_create(ctx, CL_MEM_READ_WRITE, na * 4, &da)) == HS_OK &&
        (st = hs__mem_create(ctx, CL_MEM_READ_WRITE, nb * 4, &db)) == HS_OK &&
        (st = hs__mem_create(ctx, CL_MEM_READ_WRITE, nc * 4, &dc)) == HS_OK &&
        (st = hs__mem_write(q, da, true, 0, na * 4, a, 0, NULL, NULL)) == HS_OK)
      st = hs__mem_write(q, db, true, 0, nb * 4, b, 0, NULL, NULL);
  }
  hs_gemm_op op = {.trans_a = s->ta, .trans_b = s->tb, .m = s->m, .n = s->n, .k = s->k,
                   .alpha = 1.0f, .a = da, .b = db, .c = dc, .lda = lda, .ldb = ldb, .ldc = s->n};
  if (st == HS_OK) st = hs__gemm_prepare(g, &op);
  for (int r = -warmup; st == HS_OK && r < runs; r++) {
    double t0 = hs__now();
    if ((st = hs__gemm_run(g, &op, 0, NULL, NULL)) != HS_OK || (st = hs__queue_finish(q)) != HS_OK)
      break;
    if (r >= 0) prov_s[r] = hs__now() - t0;
#if HS_HAVE_CBLAS
    openblas_set_num_threads(threads);
    t0 = hs__now();
    cblas_sgemm(CblasRowMajor, s->ta ? CblasTrans : CblasNoTrans, s->tb ? CblasTrans : CblasNoTrans,
                (blasint)s->m, (blasint)s->n, (blasint)s->k, 1.0f, a, (blasint)lda, b, (blasint)ldb,
                0.0f, c, (blasint)s->n);
    if (r >= 0 && blas_s) blas_s[r] = hs__now() - t0;
#else
    (void)threads;
    if (r >= 0 && blas_s) blas_s[r] = 0.0;
#endif
  }
  hs__mem_release(&da), hs__mem_release(&db), hs__mem_release(&dc);
  free(a), free(b), free(c);
  return st;
}
