/* CTR model kernels: the parts of LR, DeepFM and DLRM that are not
 * products (those go to the GEMM provider) nor shared with the GNN
 * trainer (bias + ReLU, its gradient, column sums, optimizers:
 * train_elem.cl, train_optim.cl), and the per-row gradient sums the
 * host's sparse optimizer applies. Reference: runtime/ctr/ref_ctr.c,
 * whose sums run in the same order, term for term.
 *
 * Layout: E[b, f] is the row rows[idx[b F + f]] (R floats) of field f of
 * example b; dE holds one gradient row per occurrence (B F x R). */
#pragma OPENCL FP_CONTRACT OFF

/* logit[b] = c + x.w + sum_f E[b, f, col] (+ FM over columns 0..dim when
 * dim > 0) (+ deep[b] when has_deep), in that order. wc: w[n_dense], c. */
__kernel void hs_ctr_head(__global const float *dense, int n_dense, __global const float *rows,
                          int row, __global const int *idx, int n_fields, int col, int dim,
                          __global const float *params, ulong wc_off,
                          __global const float *deep, int has_deep, int n,
                          __global float *logit) {
  int b = (int)get_global_id(0);
  if (b >= n) return;
  __global const float *x = dense + (size_t)b * n_dense, *wc = params + wc_off;
  __global const int *ib = idx + (size_t)b * n_fields;
  float acc = wc[n_dense];
  for (int j = 0; j < n_dense; j++) acc += x[j] * wc[j];
  for (int f = 0; f < n_fields; f++) acc += rows[(size_t)ib[f] * row + col];
  if (dim > 0) {
    float a = 0.0f, q = 0.0f;
    for (int k = 0; k < dim; k++) {
      float s = 0.0f;
      for (int f = 0; f < n_fields; f++) s += rows[(size_t)ib[f] * row + k];
      a += s * s;
    }
    for (int f = 0; f < n_fields; f++)
      for (int k = 0; k < dim; k++) {
        float e = rows[(size_t)ib[f] * row + k];
        q += e * e;
      }
    acc += 0.5f * (a - q);
  }
  if (has_deep) acc += deep[b];
  logit[b] = acc;
}

/* Loss of each example and dlogit = (sigmoid(logit) - y) / B. */
__kernel void hs_ctr_loss(__global const float *logit, __global const float *labels, int n,
                          float inv_n, __global float *loss_rows, __global float *dlogit) {
  int b = (int)get_global_id(0);
  if (b >= n) return;
  float l = logit[b], y = labels[b];
  float p = 1.0f / (1.0f + exp(-l));
  loss_rows[b] = fmax(l, 0.0f) - l * y + log1p(exp(-fabs(l)));
  dlogit[b] = (p - y) * inv_n;
}

/* Mean loss into slot `slot` of the statistics ring: one work-item, rows
 * in order. */
__kernel void hs_ctr_loss_reduce(__global const float *loss_rows, int n, __global float *ring,
                                 int slot) {
  if (get_global_id(0) != 0) return;
  float sum = 0.0f;
  for (int i = 0; i < n; i++) sum += loss_rows[i];
  ring[slot] = sum / (float)n;
}

/* Probabilities (prediction). */
__kernel void hs_ctr_sigmoid(__global const float *logit, int n, __global float *prob) {
  int b = (int)get_global_id(0);
  if (b >= n) return;
  prob[b] = 1.0f / (1.0f + exp(-logit[b]));
}

/* m[b] = [x[b] * dlogit[b], dlogit[b]]: its column sums are the
 * gradients of w and c. */
__kernel void hs_ctr_head_prep(__global const float *dense, __global const float *dlogit, int n,
                               int n_dense, __global float *m) {
  int b = (int)get_global_id(0);
  if (b >= n) return;
  float g = dlogit[b];
  __global float *o = m + (size_t)b * (n_dense + 1);
  for (int j = 0; j < n_dense; j++) o[j] = dense[(size_t)b * n_dense + j] * g;
  o[n_dense] = g;
}

/* DeepFM's deep input: out[b] = [E[b, 0, 0..D), .., E[b, F-1, 0..D), x[b]];
 * work-item b, sixteen columns at a time, then eight, four and one. */
__kernel void hs_ctr_deep_in(__global const float *rows, int row, __global const int *idx,
                             int n_fields, int dim, __global const float *dense, int n_dense,
                             int n, __global float *out) {
  int b = (int)get_global_id(0);
  if (b >= n) return;
  int width = n_fields * dim + n_dense;
  __global float *o = out + (size_t)b * width;
  __global const int *ib = idx + (size_t)b * n_fields;
  for (int f = 0; f < n_fields; f++) {
    __global const float *e = rows + (size_t)ib[f] * row;
    __global float *of = o + f * dim;
    int k = 0;
    for (; k + 16 <= dim; k += 16) vstore16(vload16(0, e + k), 0, of + k);
    if (k + 8 <= dim) vstore8(vload8(0, e + k), 0, of + k), k += 8;
    if (k + 4 <= dim) vstore4(vload4(0, e + k), 0, of + k), k += 4;
    for (; k < dim; k++) of[k] = e[k];
  }
  for (int j = 0; j < n_dense; j++) o[n_fields * dim + j] = dense[(size_t)b * n_dense + j];
}

/* LR: dE[o, 0] = dlogit of o's example. */
__kernel void hs_ctr_lr_bwd(__global const float *dlogit, int n_fields, int n_occ,
                            __global float *dE) {
  int o = (int)get_global_id(0);
  if (o >= n_occ) return;
  dE[o] = dlogit[o / n_fields];
}

/* DeepFM, work-item b: for k < D, dE[b, f, k] = g (s_k - e_fk) +
 * d_in[b, f D + k] with s_k the sum over fields in field order; the
 * first-order column: dE[b, f, D] = g. Sixteen columns k at a time as one
 * float16 (each lane the reference's operations on its column), then
 * eight and four as a float8 and a float4, the last D % 4 one by one. */
__kernel void hs_ctr_fm_bwd(__global const float *rows, int row, __global const int *idx,
                            int n_fields, int dim, __global const float *dlogit,
                            __global const float *d_in, int d_in_width, int n,
                            __global float *dE) {
  int b = (int)get_global_id(0);
  if (b >= n) return;
  __global const int *ib = idx + (size_t)b * n_fields;
  __global const float *din = d_in + (size_t)b * d_in_width;
  float g = dlogit[b];
  __global float *out = dE + (size_t)b * n_fields * row;
  for (int f = 0; f < n_fields; f++) out[(size_t)f * row + dim] = g;
  int k = 0;
#define HS_FM_BWD_COLS(W)                                                            \
  for (; k + W <= dim; k += W) {                                                     \
    float##W s = (float##W)(0.0f);                                                   \
    for (int f = 0; f < n_fields; f++) s = s + vload##W(0, rows + (size_t)ib[f] * row + k); \
    for (int f = 0; f < n_fields; f++) {                                             \
      float##W e = vload##W(0, rows + (size_t)ib[f] * row + k);                      \
      vstore##W((float##W)(g) * (s - e) + vload##W(0, din + f * dim + k), 0,         \
                out + (size_t)f * row + k);                                          \
    }                                                                                \
  }
  HS_FM_BWD_COLS(16)
  HS_FM_BWD_COLS(8)
  HS_FM_BWD_COLS(4)
#undef HS_FM_BWD_COLS
  for (; k < dim; k++) {
    float s = 0.0f;
    for (int f = 0; f < n_fields; f++) s += rows[(size_t)ib[f] * row + k];
    for (int f = 0; f < n_fields; f++) {
      float e = rows[(size_t)ib[f] * row + k];
      out[(size_t)f * row + k] = g * (s - e) + din[f * dim + k];
    }
  }
}

/* DLRM interaction, work-item b: example b's vectors v_0 = z, v_i = the
 * row of field i - 1 (N = n_fields + 1 <= 27 of them); the output is z,
 * then the lower triangle row by row, (i, j) for j < i at
 * dim + i (i - 1) / 2 + j. Each dot is summed k = 0, 1, ... from 0.0f,
 * one product and one sum at a time (the reference's order), but 16 dots
 * (j0 .. j0 + 15 of row i) run side by side as the lanes of one float16,
 * from a transposed copy vt[k][j] = v_j[k] of IK columns at a time; a dot
 * longer than IK continues from its stored partial sum (exact: a float
 * stored and loaded is the same float). */
#define IK 16
#define IJ 32 /* lanes of vt's rows: N <= 27 rounded up to two float16 */
__kernel void hs_ctr_interact(__global const float *z, __global const float *rows,
                              __global const int *idx, int n_fields, int dim, int n,
                              __global float *out) {
  int b = (int)get_global_id(0);
  if (b >= n) return;
  int N = n_fields + 1, width = dim + n_fields * (n_fields + 1) / 2;
  __global float *o = out + (size_t)b * width;
  __global const float *zb = z + (size_t)b * dim;
  __global const int *ib = idx + (size_t)b * n_fields;
  for (int k = 0; k < dim; k++) o[k] = zb[k];
  float vt[IK * IJ], part[16];
  for (int q = 0; q < IK * IJ; q++) vt[q] = 0.0f;
  for (int k0 = 0; k0 < dim; k0 += IK) {
    int m = min(IK, dim - k0);
    for (int j = 0; j < N; j++) {
      __global const float *vj = (j == 0 ? zb : rows + (size_t)ib[j - 1] * dim) + k0;
      for (int kk = 0; kk < m; kk++) vt[kk * IJ + j] = vj[kk];
    }
    for (int i = 1; i < N; i++) {
      __global float *oi = o + dim + i * (i - 1) / 2;
      for (int j0 = 0; j0 < i; j0 += 16) {
        int w = min(16, i - j0);
        float16 acc = (float16)(0.0f);
        if (k0 > 0) {
          for (int l = 0; l < 16; l++) part[l] = l < w ? oi[j0 + l] : 0.0f;
          acc = vload16(0, part);
        }
        for (int kk = 0; kk < m; kk++)
          acc = acc + (float16)(vt[kk * IJ + i]) * vload16(0, vt + kk * IJ + j0);
        if (w == 16) {
          vstore16(acc, 0, oi + j0);
        } else {
          vstore16(acc, 0, part);
          for (int l = 0; l < w; l++) oi[j0 + l] = part[l];
        }
      }
    }
  }
}

/* Its gradient, work-item b: for each vector i, dv_i = sum over j != i,
 * increasing, of dT(max, min) v_j; v_0's goes to dz plus the direct part,
 * the others to dE[b, i - 1]. Sixteen columns k at a time as one float16
 * (each column's sum keeps its order over j: the same bits as one column
 * at a time), then eight and four, the last dim % 4 one by one. */
__kernel void hs_ctr_interact_bwd(__global const float *z, __global const float *rows,
                                  __global const int *idx, int n_fields, int dim,
                                  __global const float *dout, int n, __global float *dz,
                                  __global float *dE) {
  int b = (int)get_global_id(0);
  if (b >= n) return;
  int width = dim + n_fields * (n_fields + 1) / 2, N = n_fields + 1;
  __global const float *d = dout + (size_t)b * width, *dt = d + dim;
  __global const float *zb = z + (size_t)b * dim;
  __global const int *ib = idx + (size_t)b * n_fields;
  for (int i = 0; i < N; i++) {
    __global float *out = i == 0 ? dz + (size_t)b * dim : dE + ((size_t)b * n_fields + i - 1) * dim;
    int k0 = 0;
#define HS_INTERACT_BWD_COLS(W)                                                      \
    for (; k0 + W <= dim; k0 += W) {                                                 \
      float##W acc = (float##W)(0.0f);                                               \
      for (int j = 0; j < N; j++) {                                                  \
        if (j == i) continue;                                                        \
        int hi = max(i, j), lo = min(i, j);                                          \
        float c = dt[hi * (hi - 1) / 2 + lo];                                        \
        __global const float *vj = (j == 0 ? zb : rows + (size_t)ib[j - 1] * dim) + k0; \
        acc = acc + (float##W)(c) * vload##W(0, vj);                                 \
      }                                                                              \
      if (i == 0) acc = vload##W(0, d + k0) + acc;                                   \
      vstore##W(acc, 0, out + k0);                                                   \
    }
    HS_INTERACT_BWD_COLS(16)
    HS_INTERACT_BWD_COLS(8)
    HS_INTERACT_BWD_COLS(4)
#undef HS_INTERACT_BWD_COLS
    for (; k0 < dim; k0++) {
      float acc = 0.0f;
      for (int j = 0; j < N; j++) {
        if (j == i) continue;
        int hi = max(i, j), lo = min(i, j);
        float vj = j == 0 ? zb[k0] : rows[(size_t)ib[j - 1] * dim + k0];
        acc += dt[hi * (hi - 1) / 2 + lo] * vj;
      }
      out[k0] = i == 0 ? d[k0] + acc : acc;
    }
  }
}

/* out[u, k] = sum of dE[o, k] over the occurrences o of unique u, in list
 * order; work-item u, sixteen columns at a time as one float16 (each
 * column's sum in list order: the same bits as one column at a time), then
 * eight and four, the last row % 4 one by one. */
__kernel void hs_ctr_segment_sum(__global const float *dE, int row, __global const int *occ_ptr,
                                 __global const int *occ, int n_unique, __global float *out) {
  int u = (int)get_global_id(0);
  if (u >= n_unique) return;
  int o0 = occ_ptr[u], o1 = occ_ptr[u + 1];
  __global float *ou = out + (size_t)u * row;
  int k = 0;
#define HS_SEGMENT_SUM_COLS(W)                                                       \
  for (; k + W <= row; k += W) {                                                     \
    float##W acc = (float##W)(0.0f);                                                 \
    for (int o = o0; o < o1; o++) acc = acc + vload##W(0, dE + (size_t)occ[o] * row + k); \
    vstore##W(acc, 0, ou + k);                                                       \
  }
  HS_SEGMENT_SUM_COLS(16)
  HS_SEGMENT_SUM_COLS(8)
  HS_SEGMENT_SUM_COLS(4)
#undef HS_SEGMENT_SUM_COLS
  for (; k < row; k++) {
    float acc = 0.0f;
    for (int o = o0; o < o1; o++) acc += dE[(size_t)occ[o] * row + k];
    ou[k] = acc;
  }
}
