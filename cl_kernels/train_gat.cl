/* GAT's own kernels: attention scores, the edge softmax per destination,
 * the attention-weighted aggregation, the head mean of the last layer, and
 * their backward passes (the source side through the edge-id transposed
 * block, train_block.cl). Reference: runtime/nn/gat.c. Sums run in the
 * reference's order: a dst's self loop first, then its edges in order;
 * per head, features in order. Row-wise kernels take HS_VW features per
 * work-item (hs_train.h) when they fall in one head. */
#pragma OPENCL FP_CONTRACT OFF

static float gat_leaky(float x) { return x > 0.0f ? x : x * HS_GAT_SLOPE; }

/* el[j, h] = <Y_j,h, a_l,h> (every src), er[i, h] = <Y_i,h, a_r,h> (dsts).
 * Work-item per (row, head). */
__kernel void hs_gat_scores(__global const float *y, __global const float *params, ulong a_off,
                            int n_src, int n_dst, int heads, int f, __global float *el,
                            __global float *er) {
  size_t g = get_global_id(0);
  if (g >= (size_t)n_src * (size_t)heads) return;
  int j = (int)(g / (size_t)heads), h = (int)(g % (size_t)heads);
  size_t hf = (size_t)heads * (size_t)f;
  __global const float *row = y + (size_t)j * hf + (size_t)h * f;
  __global const float *al = params + a_off + (size_t)h * f, *ar = al + hf;
  float sl = 0.0f, sr = 0.0f;
  for (int k = 0; k < f; k++) sl += row[k] * al[k];
  el[g] = sl;
  if (j >= n_dst) return;
  for (int k = 0; k < f; k++) sr += row[k] * ar[k];
  er[g] = sr;
}

/* Per (dst i, head h): the softmax of LeakyReLU(el_j + er_i) over i's self
 * loop and its edges. */
__kernel void hs_gat_softmax(__global const int *row_ptr, __global const int *col,
                             __global const float *el, __global const float *er, int n_dst,
                             int heads, __global float *a_self, __global float *a_edge) {
  size_t g = get_global_id(0);
  if (g >= (size_t)n_dst * (size_t)heads) return;
  int i = (int)(g / (size_t)heads), h = (int)(g % (size_t)heads);
  int lo = row_ptr[i], hi = row_ptr[i + 1];
  float r = er[g];
  float self = gat_leaky(el[(size_t)i * heads + h] + r), mx = self;
  for (int e = lo; e < hi; e++) {
    float s = gat_leaky(el[(size_t)col[e] * heads + h] + r);
    if (s > mx) mx = s;
  }
  float sum = exp(self - mx);
  for (int e = lo; e < hi; e++) sum += exp(gat_leaky(el[(size_t)col[e] * heads + h] + r) - mx);
  a_self[g] = exp(self - mx) / sum;
  for (int e = lo; e < hi; e++)
    a_edge[(size_t)e * heads + h] = exp(gat_leaky(el[(size_t)col[e] * heads + h] + r) - mx) / sum;
}

/* z (n_dst x HF): per head, alpha_ii Y_i + sum_e alpha_e Y_col[e].
 * Work-item (kv, i). */
__kernel void hs_gat_agg_fwd(__global const int *row_ptr, __global const int *col,
                             __global const float *y, __global const float *a_self,
                             __global const float *a_edge, int n_dst, int heads, int f,
                             __global float *z) {
  int hf = heads * f, k = (int)get_global_id(0) * HS_VW, i = (int)get_global_id(1);
  if (k >= hf || i >= n_dst) return;
  int lo = row_ptr[i], hi = row_ptr[i + 1];
  __global float *out = z + (size_t)i * hf;
  if (k % f + HS_VW <= f) {
    int h = k / f;
    float8 acc = a_self[(size_t)i * heads + h] * vload8(0, y + (size_t)i * hf + k);
    for (int e = lo; e < hi; e++)
      acc += a_edge[(size_t)e * heads + h] * vload8(0, y + (size_t)col[e] * hf + k);
    vstore8(acc, 0, out + k);
    return;
  }
  for (int c = k; c < k + HS_VW && c < hf; c++) {
    int h = c / f;
    float acc = a_self[(size_t)i * heads + h] * y[(size_t)i * hf + c];
    for (int e = lo; e < hi; e++)
      acc += a_edge[(size_t)e * heads + h] * y[(size_t)col[e] * hf + c];
    out[c] = acc;
  }
}

/* out[i, k] = (sum over heads of z[i, h f + k]) / heads. */
__kernel void hs_gat_head_mean(__global const float *z, int n, int heads, int f,
                               __global float *out) {
  size_t g = get_global_id(0);
  if (g >= (size_t)n * (size_t)f) return;
  size_t i = g / (size_t)f, k = g % (size_t)f, hf = (size_t)heads * (size_t)f;
  float acc = 0.0f;
  for (int h = 0; h < heads; h++) acc += z[i * hf + (size_t)h * f + k];
  out[g] = acc / (float)heads;
}

__kernel void hs_gat_head_mean_bwd(__global const float *dout, int n, int heads, int f,
                                   __global float *dz) {
  size_t g = get_global_id(0), hf = (size_t)heads * (size_t)f;
  if (g >= (size_t)n * hf) return;
  size_t i = g / hf, k = g % (size_t)f;
  dz[g] = dout[i * (size_t)f + k] / (float)heads;
}

/* Per (dst i, head h): dalpha = <dz_i,h, Y_j,h> for its self loop and each
 * edge (kept in g_*), D = sum alpha dalpha, then each score gradient
 * alpha (dalpha - D) through LeakyReLU into g_*, and der = their sum. */
__kernel void hs_gat_bwd_score(__global const int *row_ptr, __global const int *col,
                               __global const float *y, __global const float *dz,
                               __global const float *el, __global const float *er,
                               __global const float *a_self, __global const float *a_edge,
                               int n_dst, int heads, int f, __global float *g_self,
                               __global float *g_edge, __global float *der) {
  size_t g = get_global_id(0);
  if (g >= (size_t)n_dst * (size_t)heads) return;
  int i = (int)(g / (size_t)heads), h = (int)(g % (size_t)heads);
  int lo = row_ptr[i], hi = row_ptr[i + 1];
  size_t hf = (size_t)heads * (size_t)f;
  __global const float *dzi = dz + (size_t)i * hf + (size_t)h * f;
  float dot = 0.0f;
  for (int k = 0; k < f; k++) dot += dzi[k] * y[(size_t)i * hf + (size_t)h * f + k];
  g_self[g] = dot;
  float total = a_self[g] * dot;
  for (int e = lo; e < hi; e++) {
    __global const float *yj = y + (size_t)col[e] * hf + (size_t)h * f;
    float d = 0.0f;
    for (int k = 0; k < f; k++) d += dzi[k] * yj[k];
    g_edge[(size_t)e * heads + h] = d;
    total += a_edge[(size_t)e * heads + h] * d;
  }
  float r = er[g];
  float pre = el[(size_t)i * heads + h] + r;
  float gs = a_self[g] * (g_self[g] - total);
  gs = pre > 0.0f ? gs : gs * HS_GAT_SLOPE;
  g_self[g] = gs;
  float sum = gs;
  for (int e = lo; e < hi; e++) {
    size_t ge = (size_t)e * heads + h;
    float p = el[(size_t)col[e] * heads + h] + r;
    float d = a_edge[ge] * (g_edge[ge] - total);
    d = p > 0.0f ? d : d * HS_GAT_SLOPE;
    g_edge[ge] = d;
    sum += d;
  }
  der[g] = sum;
}

/* del[j, h]: j's self-loop score gradient (j a dst) then those of the
 * edges naming j, in increasing edge order. */
__kernel void hs_gat_bwd_del(__global const int *t_ptr, __global const int *t_eid,
                             __global const float *g_self, __global const float *g_edge,
                             int n_dst, int n_src, int heads, __global float *del) {
  size_t g = get_global_id(0);
  if (g >= (size_t)n_src * (size_t)heads) return;
  int j = (int)(g / (size_t)heads), h = (int)(g % (size_t)heads);
  float acc = j < n_dst ? g_self[g] : 0.0f;
  for (int q = t_ptr[j]; q < t_ptr[j + 1]; q++) acc += g_edge[(size_t)t_eid[q] * heads + h];
  del[g] = acc;
}

/* dY_j = alpha_jj dz_j (j a dst) + sum over edges e naming j of
 * alpha_e dz_edst[e], then + del_j a_l, then + der_j a_r (j a dst).
 * Work-item (kv, j). */
__kernel void hs_gat_bwd_y(__global const int *t_ptr, __global const int *t_eid,
                           __global const int *edst, __global const float *dz,
                           __global const float *a_self, __global const float *a_edge,
                           __global const float *del, __global const float *der,
                           __global const float *params, ulong a_off, int n_dst, int n_src,
                           int heads, int f, __global float *dy) {
  int hf = heads * f, k = (int)get_global_id(0) * HS_VW, j = (int)get_global_id(1);
  if (k >= hf || j >= n_src) return;
  int lo = t_ptr[j], hi = t_ptr[j + 1];
  bool dst = j < n_dst;
  __global const float *al = params + a_off, *ar = al + hf;
  __global float *out = dy + (size_t)j * hf;
  if (k % f + HS_VW <= f) {
    int h = k / f;
    float8 acc = dst ? a_self[(size_t)j * heads + h] * vload8(0, dz + (size_t)j * hf + k)
                     : (float8)(0.0f);
    for (int q = lo; q < hi; q++) {
      int e = t_eid[q];
      acc += a_edge[(size_t)e * heads + h] * vload8(0, dz + (size_t)edst[e] * hf + k);
    }
    acc += del[(size_t)j * heads + h] * vload8(0, al + k);
    if (dst) acc += der[(size_t)j * heads + h] * vload8(0, ar + k);
    vstore8(acc, 0, out + k);
    return;
  }
  for (int c = k; c < k + HS_VW && c < hf; c++) {
    int h = c / f;
    float acc = dst ? a_self[(size_t)j * heads + h] * dz[(size_t)j * hf + c] : 0.0f;
    for (int q = lo; q < hi; q++) {
      int e = t_eid[q];
      acc += a_edge[(size_t)e * heads + h] * dz[(size_t)edst[e] * hf + c];
    }
    acc += del[(size_t)j * heads + h] * al[c];
    if (dst) acc += der[(size_t)j * heads + h] * ar[c];
    out[c] = acc;
  }
}

/* Stage 1 of the attention vectors' gradients: partial sums over chunks of
 * HS_COLSUM_ROWS rows of s[i, h(c)] Y[i, c] (rows in order), finished by
 * hs_colsum_final. Work-item (kv, chunk). */
__kernel void hs_gat_att_part(__global const float *y, __global const float *s, int n,
                              int heads, int f, __global float *part) {
  int hf = heads * f, k = (int)get_global_id(0) * HS_VW, c = (int)get_global_id(1);
  int lo = c * HS_COLSUM_ROWS;
  if (k >= hf || lo >= n) return;
  int hi = min(n, lo + HS_COLSUM_ROWS);
  __global float *out = part + (size_t)c * hf;
  if (k % f + HS_VW <= f) {
    int h = k / f;
    float8 acc = (float8)(0.0f);
    for (int i = lo; i < hi; i++) acc += s[(size_t)i * heads + h] * vload8(0, y + (size_t)i * hf + k);
    vstore8(acc, 0, out + k);
    return;
  }
  for (int q = k; q < k + HS_VW && q < hf; q++) {
    int h = q / f;
    float acc = 0.0f;
    for (int i = lo; i < hi; i++) acc += s[(size_t)i * heads + h] * y[(size_t)i * hf + q];
    out[q] = acc;
  }
}
