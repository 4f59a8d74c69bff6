/* GCN's own kernels: the block's normalisation, the normalised aggregation
 * with self loops and its backward through the transposed block
 * (train_block.cl). Reference: runtime/nn/gcn.c. Row-wise kernels take
 * HS_VW features per work-item (hs_train.h); sums run in edge order, the
 * self loop first, as in the reference. */
#pragma OPENCL FP_CONTRACT OFF

/* cs[j] = 1 / sqrt(edges naming j + [j < n_dst]), cd[i] = 1 / sqrt(deg_i + 1). */
__kernel void hs_gcn_norm(__global const int *row_ptr, __global const int *t_ptr, int n_dst,
                          int n_src, __global float *cd, __global float *cs) {
  int j = (int)get_global_id(0);
  if (j >= n_src) return;
  int self = j < n_dst;
  cs[j] = 1.0f / sqrt((float)(t_ptr[j + 1] - t_ptr[j] + self));
  if (self) cd[j] = 1.0f / sqrt((float)(row_ptr[j + 1] - row_ptr[j] + 1));
}

/* z_i = cd_i (cs_i Y_i + sum_e cs_j Y_j). Work-item (kv, i). */
__kernel void hs_gcn_agg_fwd(__global const int *row_ptr, __global const int *col,
                             __global const float *y, __global const float *cd,
                             __global const float *cs, int n_dst, int d, __global float *z) {
  int k = (int)get_global_id(0) * HS_VW, i = (int)get_global_id(1);
  if (k >= d || i >= n_dst) return;
  int lo = row_ptr[i], hi = row_ptr[i + 1];
  __global float *out = z + (size_t)i * d;
  if (k + HS_VW <= d) {
    float8 acc = cs[i] * vload8(0, y + (size_t)i * d + k);
    for (int e = lo; e < hi; e++) {
      int j = col[e];
      acc += cs[j] * vload8(0, y + (size_t)j * d + k);
    }
    vstore8(cd[i] * acc, 0, out + k);
    return;
  }
  for (; k < d; k++) {
    float acc = cs[i] * y[(size_t)i * d + k];
    for (int e = lo; e < hi; e++) {
      int j = col[e];
      acc += cs[j] * y[(size_t)j * d + k];
    }
    out[k] = cd[i] * acc;
  }
}

/* dY_j = cs_j ([j < n_dst] cd_j dz_j + sum over i in j's transposed list of
 * cd_i dz_i). Work-item (kv, j). */
__kernel void hs_gcn_agg_bwd(__global const int *t_ptr, __global const int *t_dst,
                             __global const float *dz, __global const float *cd,
                             __global const float *cs, int n_dst, int n_src, int d,
                             __global float *dy) {
  int k = (int)get_global_id(0) * HS_VW, j = (int)get_global_id(1);
  if (k >= d || j >= n_src) return;
  int lo = t_ptr[j], hi = t_ptr[j + 1];
  __global float *out = dy + (size_t)j * d;
  if (k + HS_VW <= d) {
    float8 acc = j < n_dst ? cd[j] * vload8(0, dz + (size_t)j * d + k) : (float8)(0.0f);
    for (int e = lo; e < hi; e++) {
      int i = t_dst[e];
      acc += cd[i] * vload8(0, dz + (size_t)i * d + k);
    }
    vstore8(cs[j] * acc, 0, out + k);
    return;
  }
  for (; k < d; k++) {
    float acc = j < n_dst ? cd[j] * dz[(size_t)j * d + k] : 0.0f;
    for (int e = lo; e < hi; e++) {
      int i = t_dst[e];
      acc += cd[i] * dz[(size_t)i * d + k];
    }
    out[k] = cs[j] * acc;
  }
}
