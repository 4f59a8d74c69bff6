/* What the GEMM providers share (devices/gemm*.c only). */
#ifndef HS_GEMM_INTERNAL_H
#define HS_GEMM_INTERNAL_H

#include "gemm.h"

struct hs_gemm {
  hs_gemm_kind kind;
  const hs_ctx *ctx;
  hs_dev dev;
  cl_command_queue q;
  int threads;        /* cblas */
  bool pieces;        /* cblas: products cut by shape (hs__gemm_set_pieces) */
  struct hs_pool *pool; /* cblas, pieces: the threads (hs_pool.h), made at first use */
  cl_program program; /* builtin */
  cl_kernel kernel;
  cl_mem temp; /* clblast */
  size_t temp_bytes;
  unsigned warmed; /* clblast: bit (2 trans_a + trans_b) once compiled */
};

/* Whether this build has the provider, and why not. */
bool hs__gemm_cblas_available(const hs_dev *dev, const char **why);
bool hs__gemm_clblast_available(const hs_dev *dev, const char **why);

hs_status hs__gemm_cblas_run(hs_gemm *g, const hs_gemm_op *ops, int n_ops, cl_uint n_wait,
                             const cl_event *wait, cl_event *ev);
hs_status hs__gemm_clblast_prepare(hs_gemm *g, const hs_gemm_op *op);
hs_status hs__gemm_clblast_run(hs_gemm *g, const hs_gemm_op *op, cl_uint n_wait,
                               const cl_event *wait, cl_event *ev);
void hs__gemm_clblast_release(hs_gemm *g);
void hs__gemm_cblas_release(hs_gemm *g);

#endif
