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
 * work-item (f, b), f == F copies x. */
__kernel void hs_ctr_deep_in(__global const float *rows, int row, __global const int *idx,
                             int n_fields, int dim, __global const float *dense, int n_dense,
                             int n, __global float *out) {
  int f = (int)get_global_id(0), b = (int)get_global_id(1);
  if (f > n_fields || b >= n) return;
  int width = n_fields * dim + n_dense;
  __global float *o = out + (size_t)b * width;
  if (f == n_fields) {
    for (int j = 0; j < n_dense; j++) o[n_fields * dim + j] = dense[(size_t)b * n_dense + j];
    return;
  }
  __global const float *e = rows + (size_t)idx[(size_t)b * n_fields + f] * row;
  for (int k = 0; k < dim; k++) o[f * dim + k] = e[k];
}

/* LR: dE[o, 0] = dlogit of o's example. */
__kernel void hs_ctr_lr_bwd(__global const float *dlogit, int n_fields, int n_occ,
                            __global float *dE) {
  int o = (int)get_global_id(0);
  if (o >= n_occ) return;
  dE[o] = dlogit[o / n_fields];
}

/* DeepFM: work-item (k, b): for k < D, dE[b, f, k] = g (s_k - e_fk) +
 * d_in[b, f D + k] with s_k the sum over fields; k == D, the first-order
 * column: dE[b, f, D] = g. */
__kernel void hs_ctr_fm_bwd(__global const float *rows, int row, __global const int *idx,
                            int n_fields, int dim, __global const float *dlogit,
                            __global const float *d_in, int d_in_width, int n,
                            __global float *dE) {
  int k = (int)get_global_id(0), b = (int)get_global_id(1);
  if (k > dim || b >= n) return;
  __global const int *ib = idx + (size_t)b * n_fields;
  float g = dlogit[b];
  __global float *out = dE + (size_t)b * n_fields * row;
  if (k == dim) {
    for (int f = 0; f < n_fields; f++) out[(size_t)f * row + dim] = g;
    return;
  }
  float s = 0.0f;
  for (int f = 0; f < n_fields; f++) s += rows[(size_t)ib[f] * row + k];
  for (int f = 0; f < n_fields; f++) {
    float e = rows[(size_t)ib[f] * row + k];
    out[(size_t)f * row + k] = g * (s - e) + d_in[(size_t)b * d_in_width + f * dim + k];
  }
}

/* DLRM interaction, work-item (i, b): vector i of example b (v_0 = z, v_i
 * the row of field i - 1) writes its dots with every j < i, i.e. row i of
 * the lower triangle, at i (i - 1) / 2 past the copy of z; i == 0 copies
 * z. The j run in groups of four dots, one named accumulator each, over
 * the same k: every dot is still summed k = 0, 1, ... on its own (the same
 * bits as one dot at a time), but the group's chains are independent work
 * and v_i's column is read once per group (an array of pointers and
 * accumulators measured slower under PoCL than one dot at a time). */
#define IFWD_CHUNK 4 /* a0..a3 below */
__kernel void hs_ctr_interact(__global const float *z, __global const float *rows,
                              __global const int *idx, int n_fields, int dim, int n,
                              __global float *out) {
  int i = (int)get_global_id(0), b = (int)get_global_id(1);
  if (i > n_fields || b >= n) return;
  int width = dim + n_fields * (n_fields + 1) / 2;
  __global float *o = out + (size_t)b * width;
  __global const float *zb = z + (size_t)b * dim;
  __global const int *ib = idx + (size_t)b * n_fields;
  if (i == 0) {
    for (int k = 0; k < dim; k++) o[k] = zb[k];
    return;
  }
  __global const float *vi = rows + (size_t)ib[i - 1] * dim;
  int t = dim + i * (i - 1) / 2, j = 0;
  for (; j + IFWD_CHUNK <= i; j += IFWD_CHUNK) {
    __global const float *v0 = j == 0 ? zb : rows + (size_t)ib[j - 1] * dim;
    __global const float *v1 = rows + (size_t)ib[j] * dim;
    __global const float *v2 = rows + (size_t)ib[j + 1] * dim;
    __global const float *v3 = rows + (size_t)ib[j + 2] * dim;
    float a0 = 0.0f, a1 = 0.0f, a2 = 0.0f, a3 = 0.0f;
    for (int k = 0; k < dim; k++) {
      float x = vi[k];
      a0 += x * v0[k];
      a1 += x * v1[k];
      a2 += x * v2[k];
      a3 += x * v3[k];
    }
    o[t + j] = a0;
    o[t + j + 1] = a1;
    o[t + j + 2] = a2;
    o[t + j + 3] = a3;
  }
  for (; j < i; j++) {
    __global const float *vj = j == 0 ? zb : rows + (size_t)ib[j - 1] * dim;
    float acc = 0.0f;
    for (int k = 0; k < dim; k++) acc += vi[k] * vj[k];
    o[t + j] = acc;
  }
}

/* Its gradient, work-item (i, b): dv_i = sum over j != i, increasing, of
 * dT(max, min) v_j; v_0's goes to dz plus the direct part, the others to
 * dE[b, i - 1]. The columns k run in chunks of IBWD_CHUNK accumulators
 * (each column's sum keeps its order over j: the same bits as one column
 * at a time), so that a chunk's products are contiguous vector work. */
#define IBWD_CHUNK 16
__kernel void hs_ctr_interact_bwd(__global const float *z, __global const float *rows,
                                  __global const int *idx, int n_fields, int dim,
                                  __global const float *dout, int n, __global float *dz,
                                  __global float *dE) {
  int i = (int)get_global_id(0), b = (int)get_global_id(1);
  if (i > n_fields || b >= n) return;
  int width = dim + n_fields * (n_fields + 1) / 2, N = n_fields + 1;
  __global const float *d = dout + (size_t)b * width, *dt = d + dim;
  __global const float *zb = z + (size_t)b * dim;
  __global const int *ib = idx + (size_t)b * n_fields;
  __global float *out = i == 0 ? dz + (size_t)b * dim : dE + ((size_t)b * n_fields + i - 1) * dim;
  for (int k0 = 0; k0 < dim; k0 += IBWD_CHUNK) {
    int m = min(IBWD_CHUNK, dim - k0);
    float acc[IBWD_CHUNK];
    for (int kk = 0; kk < IBWD_CHUNK; kk++) acc[kk] = 0.0f;
    for (int j = 0; j < N; j++) {
      if (j == i) continue;
      int hi = max(i, j), lo = min(i, j);
      float c = dt[hi * (hi - 1) / 2 + lo];
      __global const float *vj = (j == 0 ? zb : rows + (size_t)ib[j - 1] * dim) + k0;
      if (m == IBWD_CHUNK) {
        for (int kk = 0; kk < IBWD_CHUNK; kk++) acc[kk] += c * vj[kk];
      } else {
        for (int kk = 0; kk < m; kk++) acc[kk] += c * vj[kk];
      }
    }
    for (int kk = 0; kk < m; kk++) out[k0 + kk] = i == 0 ? d[k0 + kk] + acc[kk] : acc[kk];
  }
}

/* out[u, k] = sum of dE[o, k] over the occurrences o of unique u, in list
 * order; work-item u, its columns in chunks of SEG_CHUNK accumulators
 * (each column's sum in list order: the same bits as one column at a
 * time). */
#define SEG_CHUNK 16
__kernel void hs_ctr_segment_sum(__global const float *dE, int row, __global const int *occ_ptr,
                                 __global const int *occ, int n_unique, __global float *out) {
  int u = (int)get_global_id(0);
  if (u >= n_unique) return;
  int o0 = occ_ptr[u], o1 = occ_ptr[u + 1];
  for (int k0 = 0; k0 < row; k0 += SEG_CHUNK) {
    int m = min(SEG_CHUNK, row - k0);
    float acc[SEG_CHUNK];
    for (int kk = 0; kk < SEG_CHUNK; kk++) acc[kk] = 0.0f;
    for (int o = o0; o < o1; o++) {
      __global const float *g = dE + (size_t)occ[o] * row + k0;
      if (m == SEG_CHUNK) {
        for (int kk = 0; kk < SEG_CHUNK; kk++) acc[kk] += g[kk];
      } else {
        for (int kk = 0; kk < m; kk++) acc[kk] += g[kk];
      }
    }
    for (int kk = 0; kk < m; kk++) out[(size_t)u * row + k0 + kk] = acc[kk];
  }
}
