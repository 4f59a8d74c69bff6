/* The first layer over sparse input rows (runtime/nn/sparse_first.h):
 * sparse x dense products for the forward pass and the weight gradient.
 * Every sum runs in the order of the plain-C reference
 * (runtime/nn/ref_sparse.c): a row's non-zeros in column order,
 * neighbours in block order, a column's rows in increasing order, each
 * output feature in its own accumulator. No float atomics.
 *
 * Work-item (kc, r) computes output features SP_CHUNK kc .. of row (or
 * column) r (hs_sparse.h: a whole chunk of 64 on CPU devices, where a
 * work-item walks its list once for all of them; 8 elsewhere). A chunk
 * that reaches past d_out is done one feature at a time. */
#pragma OPENCL FP_CONTRACT OFF

#ifdef HS_CPU_DEVICE
#define SP_CHUNK HS_SP_CHUNK_CPU
#else
#define SP_CHUNK HS_SP_CHUNK_OTHER
#endif
#define SP_NV (SP_CHUNK / 8)

#ifndef HS_PREFETCH
#define HS_PREFETCH(p)
#endif

#define SP_ZERO(acc)                                                          \
  for (int q_ = 0; q_ < SP_NV; q_++) acc[q_] = (float8)(0.0f)

/* acc += x * row `base` (8 SP_NV floats), x == 1 when !has_x. */
#define SP_AXPY(acc, has_x, x, base)                                          \
  do {                                                                        \
    __global const float *b_ = (base);                                        \
    if (has_x)                                                                \
      for (int q_ = 0; q_ < SP_NV; q_++) acc[q_] += (x) * vload8(q_, b_);     \
    else                                                                      \
      for (int q_ = 0; q_ < SP_NV; q_++) acc[q_] += vload8(q_, b_);           \
  } while (0)

/* acc += row r of x (ptr/col/val) times w, outputs k .. k+SP_CHUNK-1. */
#define SP_ROW_TIMES(acc, r, w, k)                                            \
  for (int e_ = ptr[(r)]; e_ < ptr[(r) + 1]; e_++)                            \
  SP_AXPY(acc, has_val, val[e_], (w) + (size_t)col[e_] * d_out + (k))

/* One output feature k: the same sums, scalar. */
#define SP_ROW_TIMES1(acc, r, w, k)                                           \
  for (int e_ = ptr[(r)]; e_ < ptr[(r) + 1]; e_++) {                          \
    float wv_ = (w)[(size_t)col[e_] * d_out + (k)];                           \
    acc += has_val ? val[e_] * wv_ : wv_;                                     \
  }

#define SP_STORE(acc, out)                                                    \
  for (int q_ = 0; q_ < SP_NV; q_++) vstore8(acc[q_], q_, (out))

/* out (n x d_out) = rows base .. base+n-1 of x times w (w at params +
 * w_off). */
__kernel void hs_sp_mm(__global const int *ptr, __global const int *col,
                       __global const float *val, int has_val, int base, int n,
                       __global const float *params, ulong w_off, int d_out,
                       __global float *out) {
  int k = (int)get_global_id(0) * SP_CHUNK, i = (int)get_global_id(1);
  if (k >= d_out || i >= n) return;
  __global const float *w = params + w_off;
  __global float *o = out + (size_t)i * d_out;
  int r = base + i;
  if (k + SP_CHUNK <= d_out) {
    float8 acc[SP_NV];
    SP_ZERO(acc);
    SP_ROW_TIMES(acc, r, w, k);
    SP_STORE(acc, o + k);
    return;
  }
  for (; k < d_out; k++) {
    float acc = 0.0f;
    SP_ROW_TIMES1(acc, r, w, k)
    o[k] = acc;
  }
}

/* Layer 0 MULTIPLY_FIRST: z_i = x_i . W_self + (sum_{j in N(i)} h_j) /
 * deg_i, for dst base .. base+n_dst-1 (their rows of x and of the block's
 * row_ptr), written to row i of z. */
__kernel void hs_sp_fwd_mf(__global const int *ptr, __global const int *col,
                           __global const float *val, int has_val,
                           __global const float *params, ulong w_self_off,
                           __global const int *row_ptr, __global const int *bcol,
                           __global const float *h, int base, int n_dst, int d_out,
                           __global float *z) {
  int k = (int)get_global_id(0) * SP_CHUNK, i = (int)get_global_id(1);
  if (k >= d_out || i >= n_dst) return;
  __global const float *w = params + w_self_off;
  __global float *o = z + (size_t)i * d_out;
  int r = base + i, lo = row_ptr[r], hi = row_ptr[r + 1];
  float deg = (float)(hi - lo);
  if (k + SP_CHUNK <= d_out) {
    float8 acc[SP_NV], sum[SP_NV];
    SP_ZERO(acc);
    SP_ROW_TIMES(acc, r, w, k);
    if (hi > lo) {
      SP_ZERO(sum);
      for (int e = lo; e < hi; e++) {
        if (e + 2 < hi) HS_PREFETCH(h + (size_t)bcol[e + 2] * d_out + k);
        SP_AXPY(sum, 0, 1.0f, h + (size_t)bcol[e] * d_out + k);
      }
      for (int q = 0; q < SP_NV; q++) acc[q] += sum[q] / deg;
    }
    SP_STORE(acc, o + k);
    return;
  }
  for (; k < d_out; k++) {
    float acc = 0.0f;
    SP_ROW_TIMES1(acc, r, w, k)
    if (hi > lo) {
      float sum = 0.0f;
      for (int e = lo; e < hi; e++) sum += h[(size_t)bcol[e] * d_out + k];
      acc += sum / deg;
    }
    o[k] = acc;
  }
}

/* Layer 0 AGGREGATE_FIRST: z_i = x_i . W_self + (sum_{j in N(i)} x_j .
 * W_neigh) / deg_i, the neighbours' products summed into one accumulator. */
__kernel void hs_sp_fwd_af(__global const int *ptr, __global const int *col,
                           __global const float *val, int has_val,
                           __global const float *params, ulong w_self_off, ulong w_neigh_off,
                           __global const int *row_ptr, __global const int *bcol, int base,
                           int n_dst, int d_out, __global float *z) {
  int k = (int)get_global_id(0) * SP_CHUNK, i = (int)get_global_id(1);
  if (k >= d_out || i >= n_dst) return;
  __global const float *ws = params + w_self_off, *wn = params + w_neigh_off;
  __global float *o = z + (size_t)i * d_out;
  int r = base + i, lo = row_ptr[r], hi = row_ptr[r + 1];
  float deg = (float)(hi - lo);
  if (k + SP_CHUNK <= d_out) {
    float8 acc[SP_NV], sum[SP_NV];
    SP_ZERO(acc);
    SP_ROW_TIMES(acc, r, ws, k);
    if (hi > lo) {
      SP_ZERO(sum);
      for (int e = lo; e < hi; e++) {
        int j = bcol[e];
        SP_ROW_TIMES(sum, j, wn, k);
      }
      for (int q = 0; q < SP_NV; q++) acc[q] += sum[q] / deg;
    }
    SP_STORE(acc, o + k);
    return;
  }
  for (; k < d_out; k++) {
    float acc = 0.0f;
    SP_ROW_TIMES1(acc, r, ws, k)
    if (hi > lo) {
      float sum = 0.0f;
      for (int e = lo; e < hi; e++) {
        int j = bcol[e];
        SP_ROW_TIMES1(sum, j, wn, k)
      }
      acc += sum / deg;
    }
    o[k] = acc;
  }
}

/* g (n_src x d) = A_mean^T dz through the transposed block: g_s = sum over
 * the dst i naming s, in increasing order, of dz_i / deg_i. */
__kernel void hs_sp_gsum(__global const int *row_ptr, __global const int *t_ptr,
                         __global const int *t_dst, __global const float *dz, int n_src, int d,
                         __global float *g) {
  int k = (int)get_global_id(0) * SP_CHUNK, s = (int)get_global_id(1);
  if (k >= d || s >= n_src) return;
  int lo = t_ptr[s], hi = t_ptr[s + 1];
  __global float *out = g + (size_t)s * d;
  if (k + SP_CHUNK <= d) {
    float8 acc[SP_NV];
    SP_ZERO(acc);
    for (int e = lo; e < hi; e++) {
      int i = t_dst[e];
      if (e + 2 < hi) HS_PREFETCH(dz + (size_t)t_dst[e + 2] * d + k);
      float deg = (float)(row_ptr[i + 1] - row_ptr[i]);
      __global const float *row = dz + (size_t)i * d + k;
      for (int q = 0; q < SP_NV; q++) acc[q] += vload8(q, row) / deg;
    }
    SP_STORE(acc, out + k);
    return;
  }
  for (; k < d; k++) {
    float acc = 0.0f;
    for (int e = lo; e < hi; e++) {
      int i = t_dst[e];
      acc += dz[(size_t)i * d + k] / (float)(row_ptr[i + 1] - row_ptr[i]);
    }
    out[k] = acc;
  }
}

/* The row of every stored entry: erow[e] = r for e in ptr[r] .. ptr[r+1). */
__kernel void hs_sp_entry_rows(__global const int *ptr, int n_rows, __global int *erow) {
  int r = (int)get_global_id(0);
  if (r >= n_rows) return;
  for (int e = ptr[r]; e < ptr[r + 1]; e++) erow[e] = r;
}

/* Column lists of x (its transpose, by entry index): each entry e of row r
 * dropped into its column's list; the order within a list is arbitrary
 * until hs_tr_sort sorts it (entry indices grow with the row). */
__kernel void hs_sp_tr_fill(__global const int *ptr, __global const int *col, int n_rows,
                            __global const int *t_ptr, __global int *cursor,
                            __global int *t_ent) {
  int r = (int)get_global_id(0);
  if (r >= n_rows) return;
  for (int e = ptr[r]; e < ptr[r + 1]; e++) {
    int c = col[e];
    t_ent[t_ptr[c] + atomic_inc(&cursor[c])] = e;
  }
}

/* Weight gradient of layer 0 (rows of W: d_in self, then d_in neighbour)
 * from the device-built column lists: work-item (kc, c) sums over column
 * c's entries, rows increasing, x dz for the rows < n_dst (self half) and
 * x g for every row (neighbour half). Columns without entries get zeros. */
__kernel void hs_sp_wgrad(__global const int *t_ptr, __global const int *t_ent,
                          __global const int *erow, __global const float *val, int has_val,
                          int n_dst, __global const float *dz, __global const float *g,
                          int d_in, int d_out, __global float *grads, ulong w_off) {
  int k = (int)get_global_id(0) * SP_CHUNK, c = (int)get_global_id(1);
  if (k >= d_out || c >= d_in) return;
  int lo = t_ptr[c], hi = t_ptr[c + 1];
  __global float *ws = grads + w_off + (size_t)c * d_out;
  __global float *wn = ws + (size_t)d_in * d_out;
  if (k + SP_CHUNK <= d_out) {
    float8 as[SP_NV], an[SP_NV];
    SP_ZERO(as);
    SP_ZERO(an);
    for (int p = lo; p < hi; p++) {
      int e = t_ent[p], r = erow[e];
      float x = has_val ? val[e] : 1.0f;
      if (r < n_dst) SP_AXPY(as, 1, x, dz + (size_t)r * d_out + k);
      SP_AXPY(an, 1, x, g + (size_t)r * d_out + k);
    }
    SP_STORE(as, ws + k);
    SP_STORE(an, wn + k);
    return;
  }
  for (; k < d_out; k++) {
    float as = 0.0f, an = 0.0f;
    for (int p = lo; p < hi; p++) {
      int e = t_ent[p], r = erow[e];
      float x = has_val ? val[e] : 1.0f;
      if (r < n_dst) as += x * dz[(size_t)r * d_out + k];
      an += x * g[(size_t)r * d_out + k];
    }
    ws[k] = as;
    wn[k] = an;
  }
}

/* The same from column lists the host built: column c's rows, increasing,
 * are t_row[t_ptr[c] .. t_ptr[c+1]), those below n_dst first, up to
 * t_mid[c]; t_val holds their values in that order. Two loops without a
 * branch: the self half over the rows below n_dst, the neighbour half over
 * all. */
__kernel void hs_sp_wgrad_cols(__global const int *t_ptr, __global const int *t_mid,
                               __global const int *t_row, __global const float *t_val,
                               int has_val, __global const float *dz, __global const float *g,
                               int d_in, int d_out, __global float *grads, ulong w_off) {
  int k = (int)get_global_id(0) * SP_CHUNK, c = (int)get_global_id(1);
  if (k >= d_out || c >= d_in) return;
  int lo = t_ptr[c], mid = t_mid[c], hi = t_ptr[c + 1];
  __global float *ws = grads + w_off + (size_t)c * d_out;
  __global float *wn = ws + (size_t)d_in * d_out;
  if (k + SP_CHUNK <= d_out) {
    float8 acc[SP_NV];
    SP_ZERO(acc);
    for (int p = lo; p < mid; p++) {
      if (p + 2 < mid) HS_PREFETCH(dz + (size_t)t_row[p + 2] * d_out + k);
      SP_AXPY(acc, has_val, t_val[p], dz + (size_t)t_row[p] * d_out + k);
    }
    SP_STORE(acc, ws + k);
    SP_ZERO(acc);
    for (int p = lo; p < hi; p++) {
      if (p + 2 < hi) HS_PREFETCH(g + (size_t)t_row[p + 2] * d_out + k);
      SP_AXPY(acc, has_val, t_val[p], g + (size_t)t_row[p] * d_out + k);
    }
    SP_STORE(acc, wn + k);
    return;
  }
  for (; k < d_out; k++) {
    float as = 0.0f, an = 0.0f;
    for (int p = lo; p < mid; p++)
      as += (has_val ? t_val[p] : 1.0f) * dz[(size_t)t_row[p] * d_out + k];
    for (int p = lo; p < hi; p++)
      an += (has_val ? t_val[p] : 1.0f) * g[(size_t)t_row[p] * d_out + k];
    ws[k] = as;
    wn[k] = an;
  }
}
