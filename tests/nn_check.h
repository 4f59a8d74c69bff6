/* Comparisons shared by the model tests: analytic gradients against
 * central finite differences of a double-precision loss, and device arrays
 * against reference arrays within a relative tolerance. Header-only
 * (static functions). */
#ifndef HS_TEST_NN_CHECK_H
#define HS_TEST_NN_CHECK_H

#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>

#include "nn/ref_nn.h"

#define FD_H 1e-6

/* |analytic - fd| <= atol + rtol |fd| for every entry, and the gradient
 * is not trivially zero. */
static inline void expect_grads(const char *what, const float *an, const double *fd, size_t n,
                                double rtol, double atol) {
  double biggest = 0.0;
  for (size_t i = 0; i < n; i++) {
    biggest = fmax(biggest, fabs(fd[i]));
    cr_expect(fabs((double)an[i] - fd[i]) <= atol + rtol * fabs(fd[i]),
              "%s[%zu]: analytic %.9g, finite difference %.9g", what, i, (double)an[i], fd[i]);
  }
  cr_expect_gt(biggest, 1e-3, "%s: gradient is (nearly) zero, the check proves nothing", what);
}

/* max |a - b| <= rtol * max |b|, and elementwise within rtol of the larger
 * of |b| and max |b| / 8. The floor is the rounding model: device and
 * reference sum the same terms in different orders (OpenBLAS picks its
 * kernel by CPU, PoCL vectorises), so each entry carries an absolute error
 * of a few ulps of the terms, which are on the array's scale whatever the
 * entry's own size. Measured on AVX-512 and AVX2 OpenBLAS kernels: up to
 * 6.4 ulps of max |b| on entries 100x below it; the floor allows 21
 * (rtol 1e-5). A wrong term or index is off by a sizeable fraction of the
 * scale, orders of magnitude above it. */
static inline void expect_rel(const char *what, const float *a, const float *b, size_t n,
                              double rtol) {
  double mx = 0.0, worst = 0.0;
  size_t at = 0;
  for (size_t i = 0; i < n; i++) mx = fmax(mx, fabs(b[i]));
  cr_expect_gt(mx, 0.0, "%s: all zero, the comparison proves nothing", what);
  for (size_t i = 0; i < n; i++) {
    double err = fabs((double)a[i] - b[i]) / fmax(fabs(b[i]), mx / 8.0);
    if (err > worst) worst = err, at = i;
  }
  cr_expect(worst <= rtol, "%s: relative error %.3g at [%zu] (%.9g vs %.9g)", what, worst, at,
            (double)a[at], (double)b[at]);
}

/* A model's mean loss on batch `b` with parameters `prm` and input rows
 * `x`, every intermediate in double, dropout keeping the float path's
 * elements. */
typedef double (*loss_d_fn)(const hs_model_shape *sh, const double *prm, const hs_nn_batch *b,
                            const double *x, float p, uint64_t seed, uint32_t epoch,
                            uint32_t batch);

/* The reference's gradients (parameters and input rows, dropout on) and
 * its loss against `loss`'s central differences and value. */
static inline void expect_fd_gradients(const hs_model *m, const hs_nn_batch *b, uint32_t epoch,
                                       uint32_t batch, loss_d_fn loss) {
  const hs_model_shape *sh = &m->shape;
  size_t n = sh->n_params, nx = (size_t)b->blocks[0].n_src * (size_t)sh->dims[0];
  float *g = malloc(sizeof(float) * n), *dx = malloc(sizeof(float) * nx);
  double *pd = malloc(sizeof(double) * n), *xd = malloc(sizeof(double) * nx);
  double *fd = malloc(sizeof(double) * (n > nx ? n : nx));
  hs_step_stats st;
  cr_assert_eq(hs__ref_gradients_x(m, b, epoch, batch, true, g, dx, &st), HS_OK, "%s",
               hs_last_error());
  for (size_t j = 0; j < n; j++) pd[j] = m->params[j];
  for (size_t e = 0; e < nx; e++) xd[e] = b->feat[e];
  float p = m->cfg.dropout;
  uint64_t seed = m->cfg.seed;
  double f0 = loss(sh, pd, b, xd, p, seed, epoch, batch);
  cr_expect(fabs(st.loss - f0) < 1e-5 * fmax(1.0, f0), "loss %g vs double %g", (double)st.loss, f0);
  for (size_t j = 0; j < n; j++) {
    pd[j] = m->params[j] + FD_H;
    double fp = loss(sh, pd, b, xd, p, seed, epoch, batch);
    pd[j] = m->params[j] - FD_H;
    double fm = loss(sh, pd, b, xd, p, seed, epoch, batch);
    pd[j] = m->params[j];
    fd[j] = (fp - fm) / (2 * FD_H);
  }
  expect_grads("parameters", g, fd, n, 1e-3, 2e-6);
  for (size_t e = 0; e < nx; e++) {
    xd[e] = b->feat[e] + FD_H;
    double fp = loss(sh, pd, b, xd, p, seed, epoch, batch);
    xd[e] = b->feat[e] - FD_H;
    double fm = loss(sh, pd, b, xd, p, seed, epoch, batch);
    xd[e] = b->feat[e];
    fd[e] = (fp - fm) / (2 * FD_H);
  }
  expect_grads("dX", dx, fd, nx, 1e-3, 2e-6);
  free(g), free(dx), free(pd), free(xd), free(fd);
}

/* The mean softmax cross-entropy of logits `z` (n x c) against the labels,
 * in double. */
static inline double mean_ce_d(const double *z, int32_t n, int32_t c, const int32_t *labels) {
  double loss = 0.0;
  for (int32_t i = 0; i < n; i++) {
    double mx = z[(size_t)i * c];
    for (int32_t k = 1; k < c; k++) mx = fmax(mx, z[(size_t)i * c + k]);
    double s = 0.0;
    for (int32_t k = 0; k < c; k++) s += exp(z[(size_t)i * c + k] - mx);
    loss += log(s) + mx - z[(size_t)i * c + labels[i]];
  }
  return loss / n;
}

#endif
