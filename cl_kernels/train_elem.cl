/* Element-wise and row-wise training kernels: bias + ReLU + dropout,
 * column sums (bias gradients), softmax cross-entropy and its reduction.
 * Reference: runtime/nn/ref_layers.c. Parameters and gradients live in one
 * flat buffer each, so kernels take an offset into it. */
#pragma OPENCL FP_CONTRACT OFF

/* In place on z (n x d): z + bias, ReLU (relu != 0), inverted dropout
 * (p > 0) keyed by (seed, epoch, batch, layer, element). One work-item per
 * four consecutive elements, which one Philox draw covers; the body is
 * straight-line vector code so that CPU compilers vectorise across
 * work-items. Every operation matches the reference's bit for bit
 * (including ReLU keeping -0.0 and dropped elements becoming +0.0). */
__kernel void hs_bias_act_fwd(__global float *z, int n, int d, __global const float *params,
                              ulong bias_off, int relu, float p, float scale, ulong seed,
                              uint epoch, uint batch, uint layer) {
  size_t g = get_global_id(0), total = (size_t)n * d, e0 = 4 * g;
  if (e0 >= total) return;
  __global const float *bias = params + bias_off;
  uint4 w = (uint4)(0u);
  if (p > 0.0f) {
    hs_philox_ctr r = hs_philox_draw(seed, epoch, batch,
                                     (HS_RNG_PURPOSE_DROPOUT << 24) | (layer & 0xffffffu), (uint)g);
    w = (uint4)(r.v[0], r.v[1], r.v[2], r.v[3]);
  }
  float4 u = convert_float4(w >> 8) * (1.0f / 16777216.0f); /* hs_philox_unit per lane */
  int k0 = (int)(e0 % (size_t)d);
  int k1 = k0 + 1 < d ? k0 + 1 : 0, k2 = k1 + 1 < d ? k1 + 1 : 0, k3 = k2 + 1 < d ? k2 + 1 : 0;
  if (e0 + 4 <= total) {
    float4 x = vload4(0, z + e0) + (float4)(bias[k0], bias[k1], bias[k2], bias[k3]);
    if (relu) x = select(x, (float4)(0.0f), x < 0.0f);
    if (p > 0.0f) x = select((float4)(0.0f), x * scale, u >= p);
    vstore4(x, 0, z + e0);
    return;
  }
  int ks[4] = {k0, k1, k2, k3};
  float us[4] = {u.s0, u.s1, u.s2, u.s3};
  for (int j = 0; j < 4 && e0 + j < total; j++) {
    float x = z[e0 + j] + bias[ks[j]];
    if (relu && x < 0.0f) x = 0.0f;
    if (p > 0.0f) x = us[j] >= p ? x * scale : 0.0f;
    z[e0 + j] = x;
  }
}

/* Column sums (bias gradients) of x (n x d) in two fixed stages, so that
 * the association, and the bits, never depend on the launch: partial sums
 * of chunks of HS_COLSUM_ROWS rows (rows in order), then the partials of
 * each column in chunk order. The reference (hs__ref_colsum) associates the
 * same way. Stage 1 work-item (kv, c): HS_VW columns of chunk c. */
#define HS_CS_VW 8

__kernel void hs_colsum_part(__global const float *x, int n, int d, __global float *part) {
  int k = (int)get_global_id(0) * HS_CS_VW, c = (int)get_global_id(1);
  int lo = c * HS_COLSUM_ROWS;
  if (k >= d || lo >= n) return;
  int hi = min(n, lo + HS_COLSUM_ROWS);
  __global float *out = part + (size_t)c * d;
  if (k + HS_CS_VW <= d) {
    float8 acc = (float8)(0.0f);
    for (int i = lo; i < hi; i++) acc += vload8(0, x + (size_t)i * d + k);
    vstore8(acc, 0, out + k);
    return;
  }
  for (; k < d; k++) {
    float acc = 0.0f;
    for (int i = lo; i < hi; i++) acc += x[(size_t)i * d + k];
    out[k] = acc;
  }
}

__kernel void hs_colsum_final(__global const float *part, int n_chunks, int d,
                              __global float *out, ulong out_off) {
  int k = (int)get_global_id(0);
  if (k >= d) return;
  float acc = 0.0f;
  for (int c = 0; c < n_chunks; c++) acc += part[(size_t)c * d + k];
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
