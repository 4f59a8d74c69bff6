/* Plain-C reference of the optimizer updates (see ref_nn.h, model.h). */
#include <math.h>

#include "nn/ref_nn.h"

void hs__ref_optim(hs_optim_kind kind, const hs_optim_coef *k, size_t n, float *p,
                   const float *g, float *m, float *v) {
  for (size_t i = 0; i < n; i++) {
    float grad = g[i] + k->l2 * p[i];
    float next = p[i] * k->decay;
    if (kind == HS_OPTIM_ADAM) {
      m[i] = k->beta1 * m[i] + k->one_minus_beta1 * grad;
      v[i] = k->beta2 * v[i] + k->one_minus_beta2 * grad * grad;
      next -= k->lr * m[i] / (sqrtf(v[i]) * k->inv_sqrt_bc2 + k->eps);
    } else {
      if (k->momentum > 0.0f) {
        m[i] = k->momentum * m[i] + grad;
        grad = m[i];
      }
      next -= k->lr * grad;
    }
    p[i] = next;
  }
}
