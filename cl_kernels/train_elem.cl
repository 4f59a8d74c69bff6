/* Element-wise and row-wise training kernels: bias + ReLU + dropout,
 * column sums (bias gradients), softmax cross-entropy and its reduction.
 * Reference: runtime/nn/ref_layers.c. Parameters and gradients live in one
 * flat buffer each, so kernels take an offset into it. */
#pragma OPENCL FP_CONTRACT OFF

/* In place on z (n x d): z + bias, ReLU (relu != 0), inverted dropout
 * (p > 0) keyed by (seed, epoch, batch, layer, element). One work-item per
 * four consecutive elements: one Philox draw gives their four words. */
__kernel void hs_bias_act_fwd(__global float *z, int n, int d, __global const float *params,
                              ulong bias_off, int relu, float p, float scale, ulong seed,
                              uint epoch, uint batch, uint layer) {
  size_t g = get_global_id(0), total = (size_t)n * d, e0 = 4 * g;
  if (e0 >= total) return;
  __global const float *bias = params + bias_off;
  hs_philox_ctr r = {{0, 0, 0, 0}};
  if (p > 0.0f)
    r = hs_philox_draw(seed, epoch, batch, (HS_RNG_PURPOSE_DROPOUT << 24) | (layer & 0xffffffu),
                       (uint)g);
  for (int j = 0; j < 4 && e0 + j < total; j++) {
    size_t e = e0 + j;
    float x = z[e] + bias[e % d];
    if (relu && x < 0.0f) x = 0.0f;
    if (p > 0.0f) x = hs_philox_unit(r.v[j]) >= p ? x * scale : 0.0f;
    z[e] = x;
  }
}

/* out[k] = sum of column k of x (n x d), rows in order: one work-item per
 * column, so the order (and the bits) never depend on the launch. */
__kernel void hs_colsum(__global const float *x, int n, int d, __global float *out,
                        ulong out_off) {
  int k = (int)get_global_id(0);
  if (k >= d) return;
  float acc = 0.0f;
  for (int i = 0; i < n; i++) acc += x[(size_t)i * d + k];
  out[out_off + k] = acc;
}

/* Row i of logits z + bias (n x c): loss, argmax hit, and
 * dz = (softmax - onehot) / n. */
__kernel void hs_softmax_ce(__global const float *z, __global const float *params,
                            ulong bias_off, __global const int *labels, int n, int c,
                            float inv_n, __global float *dz, __global float *loss_rows,
                            __global int *correct_rows) {
  int i = (int)get_global_id(0);
  if (i >= n) return;
  __global const float *zi = z + (size_t)i * c, *bias = params + bias_off;
  __global float *gi = dz + (size_t)i * c;
  float mx = zi[0] + bias[0];
  int arg = 0;
  for (int k = 1; k < c; k++)
    if (zi[k] + bias[k] > mx) {
      mx = zi[k] + bias[k];
      arg = k;
    }
  float sum = 0.0f;
  for (int k = 0; k < c; k++) sum += exp(zi[k] + bias[k] - mx);
  int y = labels[i];
  loss_rows[i] = log(sum) + mx - (zi[y] + bias[y]);
  correct_rows[i] = arg == y;
  for (int k = 0; k < c; k++) {
    float prob = exp(zi[k] + bias[k] - mx) / sum;
    gi[k] = (prob - (k == y ? 1.0f : 0.0f)) * inv_n;
  }
}

/* Mean loss and hits into slot `slot` of the stats ring: one work-item,
 * rows in order. */
__kernel void hs_loss_reduce(__global const float *loss_rows, __global const int *correct_rows,
                             int n, __global float *loss_out, __global int *correct_out,
                             int slot) {
  if (get_global_id(0) != 0) return;
  float sum = 0.0f;
  int hits = 0;
  for (int i = 0; i < n; i++) {
    sum += loss_rows[i];
    hits += correct_rows[i];
  }
  loss_out[slot] = n > 0 ? sum / (float)n : 0.0f;
  correct_out[slot] = hits;
}
