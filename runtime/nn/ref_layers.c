/* Plain-C references of the training kernels (see ref_nn.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "nn/nn_rng.h"
#include "nn/ref_nn.h"

void *hs__ref_alloc(int64_t rows, int64_t cols, size_t elem) {
  size_t n;
  if (rows < 0 || cols < 0 || !hs__mul_size((size_t)rows, (size_t)cols, &n) ||
      !hs__mul_size(n, elem, &n))
    return NULL;
  return malloc(n ? n : elem);
}

void hs__ref_gemm(bool trans_a, bool trans_b, size_t m, size_t n, size_t k, float alpha,
                  const float *a, size_t lda, const float *b, size_t ldb, float beta, float *c,
                  size_t ldc) {
  for (size_t i = 0; i < m; i++)
    for (size_t j = 0; j < n; j++) {
      float acc = 0.0f;
      for (size_t p = 0; p < k; p++) {
        float av = trans_a ? a[p * lda + i] : a[i * lda + p];
        float bv = trans_b ? b[j * ldb + p] : b[p * ldb + j];
        acc += av * bv;
      }
      float old = beta == 0.0f ? 0.0f : beta * c[i * ldc + j];
      c[i * ldc + j] = alpha * acc + old;
    }
}

void hs__ref_agg_fwd(const hs_nn_block *b, const float *h_src, int32_t d, float *cat) {
  size_t w = 2 * (size_t)d;
  for (int32_t i = 0; i < b->n_dst; i++) {
    float *row = cat + (size_t)i * w;
    memcpy(row, h_src + (size_t)i * (size_t)d, sizeof(float) * (size_t)d);
    int32_t deg = b->row_ptr[i + 1] - b->row_ptr[i];
    for (int32_t k = 0; k < d; k++) {
      float sum = 0.0f;
      for (int32_t e = b->row_ptr[i]; e < b->row_ptr[i + 1]; e++)
        sum += h_src[(size_t)b->col[e] * (size_t)d + (size_t)k];
      row[d + k] = deg > 0 ? sum / (float)deg : 0.0f;
    }
  }
}

void hs__ref_agg_bwd(const hs_nn_block *b, const int32_t *t_ptr, const int32_t *t_dst,
                     const float *dcat, int32_t d, float *dh_src) {
  size_t w = 2 * (size_t)d;
  for (int32_t s = 0; s < b->n_src; s++)
    for (int32_t k = 0; k < d; k++) {
      /* The self half reaches only the src that are also dst. */
      float acc = s < b->n_dst ? dcat[(size_t)s * w + (size_t)k] : 0.0f;
      for (int32_t e = t_ptr[s]; e < t_ptr[s + 1]; e++) {
        int32_t i = t_dst[e];
        float deg = (float)(b->row_ptr[i + 1] - b->row_ptr[i]);
        acc += dcat[(size_t)i * w + (size_t)d + (size_t)k] / deg;
      }
      dh_src[(size_t)s * (size_t)d + (size_t)k] = acc;
    }
}

float hs__dropout_scale(float p) { return (float)(1.0 / (1.0 - (double)p)); }

void hs__ref_bias_act_fwd(float *z, int32_t n, int32_t d, const float *bias, bool relu, float p,
                          uint64_t seed, uint32_t epoch, uint32_t batch, uint32_t layer) {
  float scale = hs__dropout_scale(p);
  for (int32_t i = 0; i < n; i++)
    for (int32_t k = 0; k < d; k++) {
      size_t e = (size_t)i * (size_t)d + (size_t)k;
      float x = z[e] + bias[k];
      if (relu && x < 0.0f) x = 0.0f;
      if (p > 0.0f)
        x = hs_dropout_keep(seed, epoch, batch, layer, (uint32_t)e, p) ? x * scale : 0.0f;
      z[e] = x;
    }
}

void hs__ref_act_bwd(const float *h, int32_t n, int32_t d, float scale, float *dh) {
  size_t total = (size_t)n * (size_t)d;
  for (size_t e = 0; e < total; e++) dh[e] = h[e] > 0.0f ? dh[e] * scale : 0.0f;
}

void hs__ref_colsum(const float *x, int32_t n, int32_t d, float *out) {
  for (int32_t k = 0; k < d; k++) {
    float acc = 0.0f;
    for (int32_t c0 = 0; c0 < n; c0 += HS_COLSUM_ROWS) {
      float part = 0.0f;
      for (int32_t i = c0; i < n && i < c0 + HS_COLSUM_ROWS; i++)
        part += x[(size_t)i * (size_t)d + (size_t)k];
      acc += part;
    }
    out[k] = acc;
  }
}

void hs__ref_softmax_ce(const float *z, const float *bias, const int32_t *labels, int32_t n,
                        int32_t c, float *dz, float *loss_rows, int32_t *correct_rows) {
  float inv_n = 1.0f / (float)n;
  for (int32_t i = 0; i < n; i++) {
    const float *zi = z + (size_t)i * (size_t)c;
    float *gi = dz + (size_t)i * (size_t)c;
    float mx = zi[0] + bias[0];
    int32_t arg = 0;
    for (int32_t k = 1; k < c; k++)
      if (zi[k] + bias[k] > mx) {
        mx = zi[k] + bias[k];
        arg = k;
      }
    float sum = 0.0f;
    for (int32_t k = 0; k < c; k++) sum += expf(zi[k] + bias[k] - mx);
    int32_t y = labels[i];
    loss_rows[i] = logf(sum) + mx - (zi[y] + bias[y]);
    correct_rows[i] = arg == y;
    for (int32_t k = 0; k < c; k++) {
      float prob = expf(zi[k] + bias[k] - mx) / sum;
      gi[k] = (prob - (k == y ? 1.0f : 0.0f)) * inv_n;
    }
  }
}

void hs__ref_loss_reduce(const float *loss_rows, const int32_t *correct_rows, int32_t n,
                         float *loss_mean, int32_t *correct) {
  float sum = 0.0f;
  int32_t hits = 0;
  for (int32_t i = 0; i < n; i++) {
    sum += loss_rows[i];
    hits += correct_rows[i];
  }
  *loss_mean = n > 0 ? sum / (float)n : 0.0f;
  *correct = hits;
}
