/* Mean aggregation over a block, its backward through the transposed
 * block, and the deterministic transpose itself (counting sort: integer
 * atomics for counts and slots, then each src's list sorted, so the result
 * does not depend on scheduling). Reference: runtime/nn/ref_layers.c and
 * block.c. */
#pragma OPENCL FP_CONTRACT OFF

/* Each work-item handles HS_VW consecutive features of one row with vector
 * loads: CPU compilers vectorise loops only when innermost, and the
 * per-edge loop would otherwise leave every lane scalar. The sums run over
 * the edges in order for every feature, as in the reference. */
#define HS_VW 8

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

/* ---- transpose --------------------------------------------------------- */

/* counts[s] += number of edges naming s (counts zeroed beforehand). */
__kernel void hs_tr_count(__global const int *col, int n_edges, __global int *counts) {
  int e = (int)get_global_id(0);
  if (e < n_edges) atomic_inc(&counts[col[e]]);
}

/* Exclusive scan of x[0..n) into ptr[0..n], in chunks of a fixed size so
 * that the work split, and so the result, does not depend on work-group
 * sizes: chunk sums, a serial scan of the sums, then each chunk's run. */
#define HS_SCAN_CHUNK 256

__kernel void hs_scan_sums(__global const int *x, int n, __global int *sums) {
  int c = (int)get_global_id(0);
  int lo = c * HS_SCAN_CHUNK;
  if (lo >= n) return;
  int hi = min(n, lo + HS_SCAN_CHUNK), s = 0;
  for (int j = lo; j < hi; j++) s += x[j];
  sums[c] = s;
}

__kernel void hs_scan_offsets(__global int *sums, int n, __global int *ptr) {
  if (get_global_id(0) != 0) return;
  int n_chunks = (n + HS_SCAN_CHUNK - 1) / HS_SCAN_CHUNK, run = 0;
  for (int c = 0; c < n_chunks; c++) {
    int s = sums[c];
    sums[c] = run;
    run += s;
  }
  ptr[n] = run;
}

__kernel void hs_scan_apply(__global const int *x, int n, __global const int *sums,
                            __global int *ptr) {
  int c = (int)get_global_id(0);
  int lo = c * HS_SCAN_CHUNK;
  if (lo >= n) return;
  int hi = min(n, lo + HS_SCAN_CHUNK), run = sums[c];
  for (int j = lo; j < hi; j++) {
    ptr[j] = run;
    run += x[j];
  }
}

/* Drop each dst into its src's list; the slot order within a list is
 * arbitrary until hs_tr_sort. */
__kernel void hs_tr_fill(__global const int *row_ptr, __global const int *col, int n_dst,
                         __global const int *t_ptr, __global int *cursor,
                         __global int *t_dst) {
  int i = (int)get_global_id(0);
  if (i >= n_dst) return;
  for (int e = row_ptr[i]; e < row_ptr[i + 1]; e++) {
    int s = col[e];
    t_dst[t_ptr[s] + atomic_inc(&cursor[s])] = i;
  }
}

static void sift_down(__global int *a, int root, int end) {
  while (2 * root + 1 < end) {
    int child = 2 * root + 1;
    if (child + 1 < end && a[child] < a[child + 1]) child++;
    if (a[root] >= a[child]) return;
    int t = a[root];
    a[root] = a[child];
    a[child] = t;
    root = child;
  }
}

/* Sort each src's list ascending: insertion for short lists, heap sort for
 * the long lists of hub vertices (no quadratic worst case). */
__kernel void hs_tr_sort(__global const int *t_ptr, int n_src, __global int *t_dst) {
  int s = (int)get_global_id(0);
  if (s >= n_src) return;
  __global int *a = t_dst + t_ptr[s];
  int n = t_ptr[s + 1] - t_ptr[s];
  if (n <= 32) {
    for (int j = 1; j < n; j++) {
      int v = a[j], q = j - 1;
      while (q >= 0 && a[q] > v) {
        a[q + 1] = a[q];
        q--;
      }
      a[q + 1] = v;
    }
    return;
  }
  for (int r = n / 2 - 1; r >= 0; r--) sift_down(a, r, n);
  for (int end = n - 1; end > 0; end--) {
    int t = a[0];
    a[0] = a[end];
    a[end] = t;
    sift_down(a, 0, end);
  }
}
