/* Plain-C references of the sparse first layer (see sparse_first.h). */
#include <stdlib.h>
#include <string.h>

#include "nn/sparse_first.h"

hs_sparse_order hs__sparse_first_choose(int32_t n_dst, int32_t n_src, int32_t edges,
                                        int64_t nnz) {
  (void)n_dst;
  if (n_src <= 0) return HS_SPARSE_MULTIPLY_FIRST;
  double pairs = (double)edges * ((double)nnz / (double)n_src);
  double mf = (double)nnz + (double)edges + (double)n_src;
  return pairs < mf ? HS_SPARSE_AGGREGATE_FIRST : HS_SPARSE_MULTIPLY_FIRST;
}

hs_sparse_order hs__sparse_first_order(const hs_nn_sparse *x, const hs_nn_block *b0) {
  if (x->order != HS_SPARSE_AUTO) return x->order;
  return hs__sparse_first_choose(b0->n_dst, b0->n_src, hs__nn_block_edges(b0),
                                 hs__nn_sparse_nnz(x));
}

static inline float value(const hs_nn_sparse *x, int32_t e) { return x->val ? x->val[e] : 1.0f; }

/* acc (d_out) += row r of x times w. */
static void row_times(const hs_nn_sparse *x, int32_t r, const float *w, int32_t d_out,
                      float *acc) {
  for (int32_t e = x->ptr[r]; e < x->ptr[r + 1]; e++) {
    const float *wr = w + (size_t)x->col[e] * (size_t)d_out;
    float v = value(x, e);
    for (int32_t k = 0; k < d_out; k++) acc[k] += v * wr[k];
  }
}

void hs__ref_sp_mm(const hs_nn_sparse *x, int32_t base, int32_t n, const float *w,
                   int32_t d_out, float *out) {
  for (int32_t i = 0; i < n; i++) {
    float *o = out + (size_t)i * (size_t)d_out;
    memset(o, 0, sizeof(float) * (size_t)d_out);
    row_times(x, base + i, w, d_out, o);
  }
}

void hs__ref_sp_fwd_mf(const hs_nn_sparse *x, const hs_nn_block *b, const float *w_self,
                       const float *h, int32_t d_out, float *z) {
  for (int32_t i = 0; i < b->n_dst; i++) {
    float *zi = z + (size_t)i * (size_t)d_out;
    memset(zi, 0, sizeof(float) * (size_t)d_out);
    row_times(x, i, w_self, d_out, zi);
    int32_t lo = b->row_ptr[i], hi = b->row_ptr[i + 1];
    if (hi == lo) continue;
    float deg = (float)(hi - lo);
    for (int32_t k = 0; k < d_out; k++) {
      float sum = 0.0f;
      for (int32_t e = lo; e < hi; e++) sum += h[(size_t)b->col[e] * (size_t)d_out + (size_t)k];
      zi[k] += sum / deg;
    }
  }
}

void hs__ref_sp_fwd_af(const hs_nn_sparse *x, const hs_nn_block *b, const float *w_self,
                       const float *w_neigh, int32_t d_out, float *z) {
  float *acc = malloc(sizeof(float) * ((size_t)d_out + 1));
  if (!acc) abort(); /* a reference: tests only */
  for (int32_t i = 0; i < b->n_dst; i++) {
    float *zi = z + (size_t)i * (size_t)d_out;
    memset(zi, 0, sizeof(float) * (size_t)d_out);
    row_times(x, i, w_self, d_out, zi);
    int32_t lo = b->row_ptr[i], hi = b->row_ptr[i + 1];
    if (hi == lo) continue;
    memset(acc, 0, sizeof(float) * (size_t)d_out);
    for (int32_t e = lo; e < hi; e++) row_times(x, b->col[e], w_neigh, d_out, acc);
    float deg = (float)(hi - lo);
    for (int32_t k = 0; k < d_out; k++) zi[k] += acc[k] / deg;
  }
  free(acc);
}

void hs__ref_sp_gsum(const hs_nn_block *b, const int32_t *t_ptr, const int32_t *t_dst,
                     const float *dz, int32_t d_out, float *g) {
  for (int32_t s = 0; s < b->n_src; s++)
    for (int32_t k = 0; k < d_out; k++) {
      float acc = 0.0f;
      for (int32_t e = t_ptr[s]; e < t_ptr[s + 1]; e++) {
        int32_t i = t_dst[e];
        float deg = (float)(b->row_ptr[i + 1] - b->row_ptr[i]);
        acc += dz[(size_t)i * (size_t)d_out + (size_t)k] / deg;
      }
      g[(size_t)s * (size_t)d_out + (size_t)k] = acc;
    }
}

void hs__ref_sp_wgrad(const hs_nn_sparse *x, int32_t n_dst, const float *dz, const float *g,
                      int32_t d_in, int32_t d_out, float *dw) {
  size_t half = (size_t)d_in * (size_t)d_out;
  memset(dw, 0, sizeof(float) * 2 * half);
  /* Rows in increasing order, so each column's sums run over its rows in
   * order, as the kernel's sorted column lists do. */
  for (int32_t r = 0; r < x->n_rows; r++)
    for (int32_t e = x->ptr[r]; e < x->ptr[r + 1]; e++) {
      float v = value(x, e);
      size_t at = (size_t)x->col[e] * (size_t)d_out;
      for (int32_t k = 0; k < d_out; k++) {
        if (r < n_dst) dw[at + (size_t)k] += v * dz[(size_t)r * (size_t)d_out + (size_t)k];
        dw[half + at + (size_t)k] += v * g[(size_t)r * (size_t)d_out + (size_t)k];
      }
    }
}

void hs__sparse_densify(const hs_nn_sparse *x, int32_t d, float *out) {
  memset(out, 0, sizeof(float) * (size_t)x->n_rows * (size_t)d);
  for (int32_t r = 0; r < x->n_rows; r++)
    for (int32_t e = x->ptr[r]; e < x->ptr[r + 1]; e++)
      out[(size_t)r * (size_t)d + (size_t)x->col[e]] = value(x, e);
}
