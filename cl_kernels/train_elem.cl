/* Element-wise and row-wise training kernels: bias + ReLU + dropout,
 * column sums (bias gradients), softmax cross-entropy and its reduction.
 * Reference: runtime/nn/ref_layers.c. Parameters and gradients live in one
 * flat buffer each, so kernels take an offset into it. */
#pragma OPENCL FP_CONTRACT OFF

/* In place on z (n x d): z + bias, ReLU (relu != 0), inverted dropout
 * (p > 0) keyed by (seed, epoch, batch, layer, element), as
 * hs__ref_bias_act_fwd, bit for bit (ReLU keeps -0.0, dropped elements are
 * +0.0). One work-item per HS_ACT_ELEMS (32) consecutive elements, which
 * eight Philox draws cover: element e takes word e % 4 of draw e / 4, so
 * lane j of the vectors below is draw 8g + j. The rounds are those of
 * hs_philox4x32_10 written on vectors, because CPU compilers do not
 * vectorise the scalar version across work-items (3x faster on PoCL). */
__kernel void hs_bias_act_fwd(__global float *z, int n, int d, __global const float *params,
                              ulong bias_off, int relu, float p, float scale, ulong seed,
                              uint epoch, uint batch, uint layer) {
  size_t g = get_global_id(0), total = (size_t)n * d, e0 = HS_ACT_ELEMS * g;
  if (e0 >= total) return;
  __global const float *bias = params + bias_off;
  float16 u0 = (float16)(1.0f), u1 = (float16)(1.0f);
  if (p > 0.0f) {
    uint8 c0 = (uint8)(epoch), c1 = (uint8)(batch);
    uint8 c2 = (uint8)((HS_RNG_PURPOSE_DROPOUT << 24) | (layer & 0xffffffu));
    uint8 c3 = (uint8)(8 * (uint)g) + (uint8)(0, 1, 2, 3, 4, 5, 6, 7);
    uint k0 = (uint)seed, k1 = (uint)(seed >> 32);
    for (int r = 0; r < 10; r++) {
      ulong8 p0 = convert_ulong8(c0) * (ulong)HS_PHILOX_M0;
      ulong8 p1 = convert_ulong8(c2) * (ulong)HS_PHILOX_M1;
      uint8 n0 = convert_uint8(p1 >> 32) ^ c1 ^ k0;
      uint8 n2 = convert_uint8(p0 >> 32) ^ c3 ^ k1;
      c1 = convert_uint8(p1);
      c3 = convert_uint8(p0);
      c0 = n0;
      c2 = n2;
      k0 += HS_PHILOX_W0;
      k1 += HS_PHILOX_W1;
    }
    uint16 w0 = (uint16)(c0.s0, c1.s0, c2.s0, c3.s0, c0.s1, c1.s1, c2.s1, c3.s1,
                         c0.s2, c1.s2, c2.s2, c3.s2, c0.s3, c1.s3, c2.s3, c3.s3);
    uint16 w1 = (uint16)(c0.s4, c1.s4, c2.s4, c3.s4, c0.s5, c1.s5, c2.s5, c3.s5,
                         c0.s6, c1.s6, c2.s6, c3.s6, c0.s7, c1.s7, c2.s7, c3.s7);
    u0 = convert_float16(w0 >> 8) * (1.0f / 16777216.0f); /* hs_philox_unit per lane */
    u1 = convert_float16(w1 >> 8) * (1.0f / 16777216.0f);
  }
  int k = (int)(e0 % (size_t)d);
  if (e0 + HS_ACT_ELEMS <= total && k + HS_ACT_ELEMS <= d) {
    float16 x0 = vload16(0, z + e0) + vload16(0, bias + k);
    float16 x1 = vload16(1, z + e0) + vload16(1, bias + k);
    if (relu) {
      x0 = select(x0, (float16)(0.0f), x0 < 0.0f);
      x1 = select(x1, (float16)(0.0f), x1 < 0.0f);
    }
    if (p > 0.0f) {
      x0 = select((float16)(0.0f), x0 * scale, u0 >= p);
      x1 = select((float16)(0.0f), x1 * scale, u1 >= p);
    }
    vstore16(x0, 0, z + e0);
    vstore16(x1, 1, z + e0);
    return;
  }
  /* Rows shorter than the group, or the matrix's end: element by element. */
  float us[HS_ACT_ELEMS];
  vstore16(u0, 0, us);
  vstore16(u1, 1, us);
  for (int j = 0; j < HS_ACT_ELEMS && e0 + j < total; j++) {
    float x = z[e0 + j] + bias[k];
    if (relu && x < 0.0f) x = 0.0f;
    if (p > 0.0f) x = us[j] >= p ? x * scale : 0.0f;
    z[e0 + j] = x;
    k = k + 1 < d ? k + 1 : 0;
  }
}

/* In place on dh (n x d), the backward of bias_act_fwd with ReLU given its
 * output h: dh * scale where h > 0, else 0 (hs__ref_act_bwd). */
__kernel void hs_act_bwd(__global const float *h, ulong total, float scale, __global float *dh) {
  size_t e = get_global_id(0);
  if (e >= total) return;
  dh[e] = h[e] > 0.0f ? dh[e] * scale : 0.0f;
}

/* Column sums (bias gradients) of x (n x d) in two fixed stages, so that
 * the association, and the bits, never depend on the launch: partial sums
 * of chunks of HS_COLSUM_ROWS rows (rows in order), then the partials of
 * each column in chunk order. The reference (hs__ref_colsum) associates the
 * same way. Stage 1 work-item (kv, c): HS_VW columns of chunk c. */
__kernel void hs_colsum_part(__global const float *x, int n, int d, __global float *part) {
  int k = (int)get_global_id(0) * HS_VW, c = (int)get_global_id(1);
  int lo = c * HS_COLSUM_ROWS;
  if (k >= d || lo >= n) return;
  int hi = min(n, lo + HS_COLSUM_ROWS);
  __global float *out = part + (size_t)c * d;
  if (k + HS_VW <= d) {
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
