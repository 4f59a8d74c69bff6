/* GraphSAGE-mean's own kernels: mean aggregation over a block and its
 * backward through the transposed block (train_block.cl). Reference:
 * runtime/nn/sage.c. Each work-item handles HS_VW consecutive features of
 * one row with vector loads (hs_train.h); the sums run over the edges in
 * order for every feature, as in the reference. */
#pragma OPENCL FP_CONTRACT OFF

/* cat (n_dst x 2d) = [h_dst | mean of h over the dst's neighbours], for
 * dst base .. base + n_dst - 1 (base 0 for a block; row chunks of a whole
 * graph in layer-wise inference). Work-item (kv, i): features HS_VW kv ..
 * of dst base + i, written to row i of cat. */
__kernel void hs_agg_fwd(__global const int *row_ptr, __global const int *col,
                         __global const float *h, int base, int n_dst, int d,
                         __global float *cat) {
  int k = (int)get_global_id(0) * HS_VW, i = (int)get_global_id(1);
  if (k >= d || i >= n_dst) return;
  int lo = row_ptr[base + i], hi = row_ptr[base + i + 1];
  float deg = (float)(hi - lo);
  __global float *self = cat + (size_t)i * 2 * d, *mean = self + d;
  __global const float *hi_row = h + (size_t)(base + i) * d;
  if (k + HS_VW <= d) {
    float8 sum = (float8)(0.0f);
    for (int e = lo; e < hi; e++) sum += vload8(0, h + (size_t)col[e] * d + k);
    vstore8(vload8(0, hi_row + k), 0, self + k);
    vstore8(hi > lo ? sum / deg : (float8)(0.0f), 0, mean + k);
    return;
  }
  for (; k < d; k++) {
    float sum = 0.0f;
    for (int e = lo; e < hi; e++) sum += h[(size_t)col[e] * d + k];
    self[k] = hi_row[k];
    mean[k] = hi > lo ? sum / deg : 0.0f;
  }
}

/* dz (n_src x d) from dcat (n_dst x 2d): the self half of src s (s < n_dst)
 * plus the mean half of every dst that names s, each divided by that dst's
 * degree, summed in increasing dst order. With `masked`, the ReLU/dropout
 * backward of the layer below is applied on the way out: dz = 0 where the
 * activation h is 0, dz * scale elsewhere. Work-item (kv, s). */
__kernel void hs_agg_bwd(__global const int *row_ptr, __global const int *t_ptr,
                         __global const int *t_dst, __global const float *dcat,
                         __global const float *h, int n_dst, int n_src, int d, int masked,
                         float scale, __global float *dz) {
  int k = (int)get_global_id(0) * HS_VW, s = (int)get_global_id(1);
  if (k >= d || s >= n_src) return;
  size_t w = 2 * (size_t)d;
  int lo = t_ptr[s], hi = t_ptr[s + 1];
  __global float *out = dz + (size_t)s * d;
  __global const float *act = h + (size_t)s * d;
  if (k + HS_VW <= d) {
    float8 acc = s < n_dst ? vload8(0, dcat + (size_t)s * w + k) : (float8)(0.0f);
    for (int e = lo; e < hi; e++) {
      int i = t_dst[e];
      acc += vload8(0, dcat + (size_t)i * w + d + k) / (float)(row_ptr[i + 1] - row_ptr[i]);
    }
    if (masked) acc = select((float8)(0.0f), acc * scale, vload8(0, act + k) > 0.0f);
    vstore8(acc, 0, out + k);
    return;
  }
  for (; k < d; k++) {
    float acc = s < n_dst ? dcat[(size_t)s * w + k] : 0.0f;
    for (int e = lo; e < hi; e++) {
      int i = t_dst[e];
      acc += dcat[(size_t)i * w + d + k] / (float)(row_ptr[i + 1] - row_ptr[i]);
    }
    if (masked) acc = act[k] > 0.0f ? acc * scale : 0.0f;
    out[k] = acc;
  }
}

/* Layer 0 multiplied first (under an input provider): out (n x d) = ys +
 * the mean half of cat (n x 2d, hs_agg_fwd of X W_neigh). */
__kernel void hs_sage_combine(__global const float *ys, __global const float *cat, int n, int d,
                              __global float *out) {
  size_t e = get_global_id(0);
  if (e >= (size_t)n * (size_t)d) return;
  size_t i = e / (size_t)d, k = e % (size_t)d;
  out[e] = ys[e] + cat[i * 2 * (size_t)d + (size_t)d + k];
}

/* Its gradient at cat: dcat (n x 2d) = [0 | dz]. */
__kernel void hs_sage_split_bwd(__global const float *dz, int n, int d, __global float *dcat) {
  size_t e = get_global_id(0);
  if (e >= (size_t)n * (size_t)d) return;
  size_t i = e / (size_t)d, k = e % (size_t)d;
  dcat[i * 2 * (size_t)d + k] = 0.0f;
  dcat[i * 2 * (size_t)d + (size_t)d + k] = dz[e];
}
