/* CTR model kernels: the parts of LR, DeepFM and DLRM that are not
 * products (those go to the GEMM provider) nor shared with the GNN
 * trainer (bias + ReLU, its gradient, column sums, optimizers:
 * train_elem.cl, train_optim.cl), and the per-row gradient sums the
 * host's sparse optimizer applies. Reference: runtime/ctr/ref_ctr.c,
 * whose sums run in the same order, term for term.
 *
 * Layout: E[b, f] is the row rows[idx[b F + f]] (R floats) of field f of
 * example b; dE holds one gradient row per occurrence (B F x R) for LR and
 * DLRM, whose rows' gradients hs_ctr_segment_sum sums (DeepFM's are summed
 * straight into each unique row: hs_ctr_fm_rowgrad). */
#pragma OPENCL FP_CONTRACT OFF

/* logit[b] = c + x.w + sum_f E[b, f, col] (+ FM over columns 0..dim when
 * dim > 0) (+ deep[b] when has_deep), in that order. wc: w[n_dense], c.
 * With store_s (and dim > 0) the FM's field sums of example b, s[b, k] =
 * sum_f E[b, f, k] in field order, into fm_s[b dim + k] (what
 * hs_ctr_fm_rowgrad takes).
 * Work-item i computes examples 4i .. 4i + 3 as the lanes of float4s:
 * each sum is one long chain of additions (the FM's sum of squares
 * dim x n_fields of them), and four examples' chains side by side keep
 * four additions in flight where one waited on the last; each lane sums in
 * the reference's order (the same bits). Lanes past n repeat example n - 1
 * and are not stored. */
#define HS_HEAD_ROW(q) (rows + (size_t)i##q[f] * row)
__kernel void hs_ctr_head(__global const float *dense, int n_dense, __global const float *rows,
                          int row, __global const int *idx, int n_fields, int col, int dim,
                          __global const float *params, ulong wc_off,
                          __global const float *deep, int has_deep, int n,
                          __global float *logit, __global float *fm_s, int store_s) {
  int b0 = (int)get_global_id(0) * 4;
  if (b0 >= n) return;
  int b1 = min(b0 + 1, n - 1), b2 = min(b0 + 2, n - 1), b3 = min(b0 + 3, n - 1);
  __global const float *wc = params + wc_off;
  __global const float *x0 = dense + (size_t)b0 * n_dense, *x1 = dense + (size_t)b1 * n_dense;
  __global const float *x2 = dense + (size_t)b2 * n_dense, *x3 = dense + (size_t)b3 * n_dense;
  __global const int *i0 = idx + (size_t)b0 * n_fields, *i1 = idx + (size_t)b1 * n_fields;
  __global const int *i2 = idx + (size_t)b2 * n_fields, *i3 = idx + (size_t)b3 * n_fields;
  float4 acc = (float4)(wc[n_dense]);
  for (int j = 0; j < n_dense; j++) acc += (float4)(x0[j], x1[j], x2[j], x3[j]) * (float4)(wc[j]);
  for (int f = 0; f < n_fields; f++)
    acc += (float4)(HS_HEAD_ROW(0)[col], HS_HEAD_ROW(1)[col], HS_HEAD_ROW(2)[col],
                    HS_HEAD_ROW(3)[col]);
  if (dim > 0) {
    float4 a = (float4)(0.0f), q = (float4)(0.0f);
    for (int k = 0; k < dim; k++) {
      float4 s = (float4)(0.0f);
      for (int f = 0; f < n_fields; f++)
        s += (float4)(HS_HEAD_ROW(0)[k], HS_HEAD_ROW(1)[k], HS_HEAD_ROW(2)[k], HS_HEAD_ROW(3)[k]);
      if (store_s) {
        fm_s[(size_t)b0 * dim + k] = s.s0;
        if (b0 + 1 < n) fm_s[(size_t)(b0 + 1) * dim + k] = s.s1;
        if (b0 + 2 < n) fm_s[(size_t)(b0 + 2) * dim + k] = s.s2;
        if (b0 + 3 < n) fm_s[(size_t)(b0 + 3) * dim + k] = s.s3;
      }
      a += s * s;
    }
    for (int f = 0; f < n_fields; f++)
      for (int k = 0; k < dim; k++) {
        float4 e = (float4)(HS_HEAD_ROW(0)[k], HS_HEAD_ROW(1)[k], HS_HEAD_ROW(2)[k],
                            HS_HEAD_ROW(3)[k]);
        q += e * e;
      }
    acc += 0.5f * (a - q);
  }
  if (has_deep) acc += (float4)(deep[b0], deep[b1], deep[b2], deep[b3]);
  logit[b0] = acc.s0;
  if (b0 + 1 < n) logit[b0 + 1] = acc.s1;
  if (b0 + 2 < n) logit[b0 + 2] = acc.s2;
  if (b0 + 3 < n) logit[b0 + 3] = acc.s3;
}
#undef HS_HEAD_ROW

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

/* DeepFM's gradient of each unique row u (row = D + 1 floats), work-item
 * u: out[u, k] = the sum over u's occurrences o (example b, field f), in
 * list order, of dE[o, k] = g (s[b, k] - e_k) + d_in[b, f D + k] for k < D
 * (g = dlogit[b], s the head's field sums, e row u: every occurrence of u
 * is u's row), and of g for k = D; each dE[o, k] rounded as a float before
 * it is added, so the bits of the occurrences' gradients summed by
 * hs_ctr_segment_sum, without them written and read back. Sixteen columns
 * k at a time as one float16 (each lane the reference's operations on its
 * column), then eight and four, the last D % 4 one by one. */
__kernel void hs_ctr_fm_rowgrad(__global const float *rows, int row, __global const float *fm_s,
                                int dim, __global const float *dlogit, __global const float *d_in,
                                int d_in_width, int n_fields, __global const int *occ_ptr,
                                __global const int *occ, int n_unique, __global float *out) {
  int u = (int)get_global_id(0);
  if (u >= n_unique) return;
  int o0 = occ_ptr[u], o1 = occ_ptr[u + 1];
  __global const float *e = rows + (size_t)u * row;
  __global float *ou = out + (size_t)u * row;
  int k = 0;
#define HS_FM_ROWGRAD_COLS(W)                                                        \
  for (; k + W <= dim; k += W) {                                                     \
    float##W ev = vload##W(0, e + k), acc = (float##W)(0.0f);                        \
    for (int o = o0; o < o1; o++) {                                                  \
      int oc = occ[o], b = oc / n_fields, f = oc - b * n_fields;                     \
      float##W d = (float##W)(dlogit[b]) * (vload##W(0, fm_s + (size_t)b * dim + k) - ev) + \
                   vload##W(0, d_in + (size_t)b * d_in_width + f * dim + k);         \
      acc = acc + d;                                                                 \
    }                                                                                \
    vstore##W(acc, 0, ou + k);                                                       \
  }
  HS_FM_ROWGRAD_COLS(16)
  HS_FM_ROWGRAD_COLS(8)
  HS_FM_ROWGRAD_COLS(4)
#undef HS_FM_ROWGRAD_COLS
  for (; k < dim; k++) {
    float ev = e[k], acc = 0.0f;
    for (int o = o0; o < o1; o++) {
      int oc = occ[o], b = oc / n_fields, f = oc - b * n_fields;
      float d = dlogit[b] * (fm_s[(size_t)b * dim + k] - ev) +
                d_in[(size_t)b * d_in_width + f * dim + k];
      acc += d;
    }
    ou[k] = acc;
  }
  float acc = 0.0f;
  for (int o = o0; o < o1; o++) acc += dlogit[occ[o] / n_fields];
  ou[dim] = acc;
}

/* hs_ctr_fm_rowgrad's sums, bit for bit, the other way round: for batches
 * whose uniques are each of one field (the store's lookups, a table per
 * field), on CPU devices. Work-item w of `parts` takes the occurrences of
 * fields [F w / parts, F (w + 1) / parts), example after example, and adds
 * each one's dE[o, k] (computed as there) into its unique's row of `out`,
 * which the caller zeroed: every unique's sum then runs over its
 * occurrences in increasing order, as the lists do, from 0.0f. d_in, fm_s
 * and idx are read front to back, where the lists read d_in at random (a
 * wait on memory for nearly every occurrence of a large batch). */
__kernel void hs_ctr_fm_rowgrad_fields(__global const float *rows, int row,
                                       __global const float *fm_s, int dim,
                                       __global const float *dlogit, __global const float *d_in,
                                       int d_in_width, int n_fields, __global const int *idx,
                                       int n, int parts, __global float *out) {
  int w = (int)get_global_id(0);
  if (w >= parts) return;
  int f0 = n_fields * w / parts, f1 = n_fields * (w + 1) / parts;
  for (int b = 0; b < n; b++) {
    float g = dlogit[b];
    __global const float *s = fm_s + (size_t)b * dim;
    __global const float *db = d_in + (size_t)b * d_in_width;
    __global const int *ib = idx + (size_t)b * n_fields;
    for (int f = f0; f < f1; f++) {
      int u = ib[f];
      __global const float *e = rows + (size_t)u * row, *df = db + f * dim;
      __global float *ou = out + (size_t)u * row;
      int k = 0;
#define HS_FM_ROWGRAD_ADD(W)                                                                   \
  for (; k + W <= dim; k += W) {                                                               \
    float##W d = (float##W)(g) * (vload##W(0, s + k) - vload##W(0, e + k)) + vload##W(0, df + k); \
    vstore##W(vload##W(0, ou + k) + d, 0, ou + k);                                             \
  }
      HS_FM_ROWGRAD_ADD(16)
      HS_FM_ROWGRAD_ADD(8)
      HS_FM_ROWGRAD_ADD(4)
#undef HS_FM_ROWGRAD_ADD
      for (; k < dim; k++) {
        float d = g * (s[k] - e[k]) + df[k];
        ou[k] = ou[k] + d;
      }
      ou[dim] = ou[dim] + g;
    }
  }
}

/* The backward of a hidden layer's ReLU and its bias gradient's first
 * stage in one pass: hs_act_bwd on dh (n x d, in place: dh scale where
 * h > 0, else 0) and hs_colsum_part's partial sums of the result, by the same
 * association (each column's rows in chunks of HS_COLSUM_ROWS, in order
 * from 0.0f), so the same bits as the two kernels one after the
 * other (hs__ref_act_bwd, then hs__ref_colsum's association), with dh
 * read once where it was read twice. Work-item (j, c) takes HS_RELU_COLS
 * columns from j HS_RELU_COLS of chunk c, whole vectors of each row side
 * by side. hs_colsum_final ends the sums. */
__kernel void hs_ctr_relu_bwd_colsum_part(__global const float *h, __global float *dh, int n,
                                          int d, float scale, __global float *part) {
  int k0 = (int)get_global_id(0) * HS_RELU_COLS, c = (int)get_global_id(1);
  int lo = c * HS_COLSUM_ROWS;
  if (k0 >= d || lo >= n) return;
  int hi = min(n, lo + HS_COLSUM_ROWS), k1 = min(d, k0 + HS_RELU_COLS), k = k0;
  __global float *out = part + (size_t)c * d;
  if (k + HS_RELU_COLS <= d) { /* eight vectors of each row side by side */
    float8 a0 = (float8)(0.0f), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0;
    for (int i = lo; i < hi; i++) {
      __global float *x = dh + (size_t)i * d + k;
      __global const float *y = h + (size_t)i * d + k;
#define HS_RELU_COL(j, a)                                                     \
  {                                                                           \
    float8 v = select((float8)(0.0f), vload8(j, x) * scale, vload8(j, y) > 0.0f); \
    vstore8(v, j, x);                                                         \
    a += v;                                                                   \
  }
      HS_RELU_COL(0, a0) HS_RELU_COL(1, a1) HS_RELU_COL(2, a2) HS_RELU_COL(3, a3)
      HS_RELU_COL(4, a4) HS_RELU_COL(5, a5) HS_RELU_COL(6, a6) HS_RELU_COL(7, a7)
#undef HS_RELU_COL
    }
    vstore8(a0, 0, out + k), vstore8(a1, 1, out + k), vstore8(a2, 2, out + k);
    vstore8(a3, 3, out + k), vstore8(a4, 4, out + k), vstore8(a5, 5, out + k);
    vstore8(a6, 6, out + k), vstore8(a7, 7, out + k);
    return;
  }
  for (; k + HS_VW <= k1; k += HS_VW) {
    float8 acc = (float8)(0.0f);
    for (int i = lo; i < hi; i++) {
      size_t e = (size_t)i * d + k;
      float8 x = select((float8)(0.0f), vload8(0, dh + e) * scale, vload8(0, h + e) > 0.0f);
      vstore8(x, 0, dh + e);
      acc += x;
    }
    vstore8(acc, 0, out + k);
  }
  for (; k < k1; k++) {
    float acc = 0.0f;
    for (int i = lo; i < hi; i++) {
      size_t e = (size_t)i * d + k;
      float x = h[e] > 0.0f ? dh[e] * scale : 0.0f;
      dh[e] = x;
      acc += x;
    }
    out[k] = acc;
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
 * stored and loaded is the same float). Four rows i run at once, each
 * with the lanes j0 = 0 and, where a row reaches it, j0 = 16: up to eight
 * independent sums in flight, where one sum at a time waited on its own
 * previous addition (each keeps its order, so the bits are those of one
 * row at a time); lanes j >= i and rows i >= N are computed from vt's
 * zeros and not kept.
 *
 * Where the dots are one chunk long (dim <= IK) the rows are stored
 * whole, 16 lanes at a time, in increasing order: a row's lanes j >= i
 * land on the rows after it, which are stored later and cover them (the
 * triangle is contiguous), so only a store that would pass the end of
 * the example's output is cut to the row's own lanes. Longer dots load
 * their partial sums back, and a later row's partial sums must not be
 * overwritten before they are loaded: there every store is cut. */
#define IK 16
#define IJ 32 /* lanes of vt's rows: N + 3 <= 30 rounded up to two float16 */

/* The first w (<= 16) lanes of a row's partial sums: loaded, stored. */
inline float16 hs_ia_load(__global const float *o, int w) {
  if (w >= 16) return vload16(0, o);
  float part[16];
  for (int l = 0; l < 16; l++) part[l] = l < w ? o[l] : 0.0f;
  return vload16(0, part);
}

inline void hs_ia_store(float16 acc, __global float *o, int w) {
  if (w >= 16) {
    vstore16(acc, 0, o);
    return;
  }
  float part[16];
  vstore16(acc, 0, part);
  for (int l = 0; l < w; l++) o[l] = part[l];
}

/* Row w's lanes [0, 16) and, past 16, [16, 32) at o; whole (lanes >= w
 * included) where `whole` and 16 lanes fit before `end`. */
inline void hs_ia_put_row(float16 lo, float16 hi, __global float *o, int w, bool whole,
                          __global const float *end) {
  if (w <= 0) return;
  if (whole && o + 16 <= end) vstore16(lo, 0, o);
  else hs_ia_store(lo, o, w);
  if (w <= 16) return;
  if (whole && o + 32 <= end) vstore16(hi, 0, o + 16);
  else hs_ia_store(hi, o + 16, w - 16);
}

/* vt[kk][j] = v[kk]: a row of 4 or 8 columns, lane by lane. */
#define HS_IA_T4(c, r) (c[0] = r.s0, c[IJ] = r.s1, c[2 * IJ] = r.s2, c[3 * IJ] = r.s3)
#define HS_IA_T8(c, r) \
  (HS_IA_T4(c, r), c[4 * IJ] = r.s4, c[5 * IJ] = r.s5, c[6 * IJ] = r.s6, c[7 * IJ] = r.s7)

__kernel void hs_ctr_interact(__global const float *z, __global const float *rows,
                              __global const int *idx, int n_fields, int dim, int n,
                              __global float *out) {
  int b = (int)get_global_id(0);
  if (b >= n) return;
  int N = n_fields + 1, width = dim + n_fields * (n_fields + 1) / 2;
  __global float *o = out + (size_t)b * width;
  __global const float *end = o + width;
  __global const float *zb = z + (size_t)b * dim;
  __global const int *ib = idx + (size_t)b * n_fields;
  bool whole = dim <= IK;
  for (int k = 0; k < dim; k++) o[k] = zb[k];
  /* Lanes j >= N are read (a row's lanes past its own, rows past N - 1)
   * but never kept: zeros, once; lanes j < N are written before read. */
  float vt[IK * IJ];
  for (int kk = 0; kk < IK; kk++)
    for (int j = N; j < IJ; j++) vt[kk * IJ + j] = 0.0f;
  for (int k0 = 0; k0 < dim; k0 += IK) {
    int m = min(IK, dim - k0);
    for (int j = 0; j < N; j++) {
      __global const float *vj = (j == 0 ? zb : rows + (size_t)ib[j - 1] * dim) + k0;
      float *c = vt + j;
      if (m == IK) { /* a whole row at once, then lane by lane */
        float16 r = vload16(0, vj);
        float8 rl = r.lo, rh = r.hi;
        float *c8 = c + 8 * IJ;
        HS_IA_T8(c, rl), HS_IA_T8(c8, rh);
      } else if (m == 8) {
        float8 r = vload8(0, vj);
        HS_IA_T8(c, r);
      } else if (m == 4) {
        float4 r = vload4(0, vj);
        HS_IA_T4(c, r);
      } else {
        for (int kk = 0; kk < m; kk++) c[kk * IJ] = vj[kk];
      }
    }
    for (int i0 = 1; i0 < N; i0 += 4) {
      /* row i's sums start at o + dim + t(i); they are i wide */
      int t0 = dim + i0 * (i0 - 1) / 2, t1 = t0 + i0, t2 = t1 + i0 + 1, t3 = t2 + i0 + 2;
      int w0 = i0, w1 = i0 + 1 < N ? i0 + 1 : 0, w2 = i0 + 2 < N ? i0 + 2 : 0;
      int w3 = i0 + 3 < N ? i0 + 3 : 0;
      float16 a0 = (float16)(0.0f), a1 = a0, a2 = a0, a3 = a0;
      float16 h0 = a0, h1 = a0, h2 = a0, h3 = a0;
      if (k0 > 0) {
        a0 = hs_ia_load(o + t0, w0), a1 = hs_ia_load(o + t1, w1);
        a2 = hs_ia_load(o + t2, w2), a3 = hs_ia_load(o + t3, w3);
      }
      if (i0 + 3 > 16) { /* some row of the four reaches j = 16 */
        if (k0 > 0) {
          h0 = hs_ia_load(o + t0 + 16, w0 - 16), h1 = hs_ia_load(o + t1 + 16, w1 - 16);
          h2 = hs_ia_load(o + t2 + 16, w2 - 16), h3 = hs_ia_load(o + t3 + 16, w3 - 16);
        }
        for (int kk = 0; kk < m; kk++) {
          float16 lo = vload16(0, vt + kk * IJ), hi = vload16(0, vt + kk * IJ + 16);
          float16 b0 = (float16)(vt[kk * IJ + i0]), b1 = (float16)(vt[kk * IJ + i0 + 1]);
          float16 b2 = (float16)(vt[kk * IJ + i0 + 2]), b3 = (float16)(vt[kk * IJ + i0 + 3]);
          a0 = a0 + b0 * lo, a1 = a1 + b1 * lo, a2 = a2 + b2 * lo, a3 = a3 + b3 * lo;
          h0 = h0 + b0 * hi, h1 = h1 + b1 * hi, h2 = h2 + b2 * hi, h3 = h3 + b3 * hi;
        }
      } else {
        for (int kk = 0; kk < m; kk++) {
          float16 lo = vload16(0, vt + kk * IJ);
          float16 b0 = (float16)(vt[kk * IJ + i0]), b1 = (float16)(vt[kk * IJ + i0 + 1]);
          float16 b2 = (float16)(vt[kk * IJ + i0 + 2]), b3 = (float16)(vt[kk * IJ + i0 + 3]);
          a0 = a0 + b0 * lo, a1 = a1 + b1 * lo, a2 = a2 + b2 * lo, a3 = a3 + b3 * lo;
        }
      }
      hs_ia_put_row(a0, h0, o + t0, w0, whole, end);
      hs_ia_put_row(a1, h1, o + t1, w1, whole, end);
      hs_ia_put_row(a2, h2, o + t2, w2, whole, end);
      hs_ia_put_row(a3, h3, o + t3, w3, whole, end);
    }
  }
}

#undef HS_IA_T8
#undef HS_IA_T4

/* Its gradient, work-item b: for each vector i, dv_i = sum over j != i,
 * increasing, of dT(max, min) v_j; v_0's goes to dz plus the direct part,
 * the others to dE[b, i - 1]. Sixteen columns k at a time as one float16
 * (each column's sum keeps its order over j: the same bits as one column
 * at a time), then eight and four, the last dim % 4 one by one; four
 * vectors i at a time, each its own sum (so four additions in flight, not
 * one waiting on the last; a fifth to seventh beyond N repeat vector N - 1
 * and are not stored). The vectors' addresses are looked up once, not once
 * for each four. */
#define HS_IA_C(i, j) dt[max(i, j) * (max(i, j) - 1) / 2 + min(i, j)]
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
  /* the vectors' addresses, once */
  __global const float *vec[IJ];
  vec[0] = zb;
  for (int j = 1; j < N; j++) vec[j] = rows + (size_t)ib[j - 1] * dim;
  for (int i0 = 0; i0 < N; i0 += 4) {
    int q0 = i0, q1 = min(i0 + 1, N - 1), q2 = min(i0 + 2, N - 1), q3 = min(i0 + 3, N - 1);
    __global float *o0 = i0 == 0 ? dz + (size_t)b * dim : dE + ((size_t)b * n_fields + i0 - 1) * dim;
    __global float *o1 = dE + ((size_t)b * n_fields + q1 - 1) * dim;
    __global float *o2 = dE + ((size_t)b * n_fields + q2 - 1) * dim;
    __global float *o3 = dE + ((size_t)b * n_fields + q3 - 1) * dim;
    /* where the pairs (q, j) with j < q start in the triangle */
    int t0 = q0 * (q0 - 1) / 2, t1 = q1 * (q1 - 1) / 2, t2 = q2 * (q2 - 1) / 2;
    int t3 = q3 * (q3 - 1) / 2, k0 = 0;
#define HS_INTERACT_BWD_COLS(T, W, LOAD, STORE)                                      \
    for (; k0 + W <= dim; k0 += W) {                                                 \
      T a0 = (T)(0.0f), a1 = a0, a2 = a0, a3 = a0;                                   \
      int j = 0;                                                                     \
      for (; j < i0; j++) { /* below the four: (q, j) at t(q) + j */                 \
        T v = LOAD(vec[j] + k0);                                                     \
        a0 = a0 + (T)(dt[t0 + j]) * v, a1 = a1 + (T)(dt[t1 + j]) * v;                \
        a2 = a2 + (T)(dt[t2 + j]) * v, a3 = a3 + (T)(dt[t3 + j]) * v;                \
      }                                                                              \
      for (; j < min(i0 + 4, N); j++) { /* among them: each skips its own j */      \
        T v = LOAD(vec[j] + k0);                                                     \
        if (j != q0) a0 = a0 + (T)(HS_IA_C(q0, j)) * v;                              \
        if (j != q1) a1 = a1 + (T)(HS_IA_C(q1, j)) * v;                              \
        if (j != q2) a2 = a2 + (T)(HS_IA_C(q2, j)) * v;                              \
        if (j != q3) a3 = a3 + (T)(HS_IA_C(q3, j)) * v;                              \
      }                                                                              \
      for (; j < N; j++) { /* above them (none is clamped then): at t(j) + q */     \
        T v = LOAD(vec[j] + k0);                                                     \
        __global const float *c = dt + j * (j - 1) / 2 + i0;                        \
        a0 = a0 + (T)(c[0]) * v, a1 = a1 + (T)(c[1]) * v;                            \
        a2 = a2 + (T)(c[2]) * v, a3 = a3 + (T)(c[3]) * v;                            \
      }                                                                              \
      if (i0 == 0) a0 = LOAD(d + k0) + a0;                                           \
      STORE(a0, o0 + k0);                                                            \
      if (i0 + 1 < N) STORE(a1, o1 + k0);                                            \
      if (i0 + 2 < N) STORE(a2, o2 + k0);                                            \
      if (i0 + 3 < N) STORE(a3, o3 + k0);                                            \
    }
#define HS_IA_LOAD16(p) vload16(0, p)
#define HS_IA_STORE16(v, p) vstore16(v, 0, p)
#define HS_IA_LOAD8(p) vload8(0, p)
#define HS_IA_STORE8(v, p) vstore8(v, 0, p)
#define HS_IA_LOAD4(p) vload4(0, p)
#define HS_IA_STORE4(v, p) vstore4(v, 0, p)
#define HS_IA_LOAD1(p) (*(p))
#define HS_IA_STORE1(v, p) (*(p) = (v))
    HS_INTERACT_BWD_COLS(float16, 16, HS_IA_LOAD16, HS_IA_STORE16)
    HS_INTERACT_BWD_COLS(float8, 8, HS_IA_LOAD8, HS_IA_STORE8)
    HS_INTERACT_BWD_COLS(float4, 4, HS_IA_LOAD4, HS_IA_STORE4)
    HS_INTERACT_BWD_COLS(float, 1, HS_IA_LOAD1, HS_IA_STORE1)
#undef HS_INTERACT_BWD_COLS
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
