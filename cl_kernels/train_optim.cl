/* Optimizer updates over the flat parameter array, with coefficients the
 * host computes once per step (runtime/nn/model.c hs__optim_coef).
 * Reference: runtime/nn/ref_optim.c. */
#pragma OPENCL FP_CONTRACT OFF

__kernel void hs_adam(__global float *p, __global const float *g, __global float *m,
                      __global float *v, ulong n, float lr, float l2, float decay, float beta1,
                      float beta2, float one_minus_beta1, float one_minus_beta2,
                      float inv_sqrt_bc2, float eps) {
  size_t i = get_global_id(0);
  if (i >= n) return;
  float grad = g[i] + l2 * p[i];
  float next = p[i] * decay;
  float mi = beta1 * m[i] + one_minus_beta1 * grad;
  float vi = beta2 * v[i] + one_minus_beta2 * grad * grad;
  m[i] = mi;
  v[i] = vi;
  p[i] = next - lr * mi / (sqrt(vi) * inv_sqrt_bc2 + eps);
}

__kernel void hs_sgd(__global float *p, __global const float *g, __global float *m, ulong n,
                     float lr, float l2, float decay, float momentum) {
  size_t i = get_global_id(0);
  if (i >= n) return;
  float grad = g[i] + l2 * p[i];
  float next = p[i] * decay;
  if (momentum > 0.0f) {
    grad = momentum * m[i] + grad;
    m[i] = grad;
  }
  p[i] = next - lr * grad;
}
