/* The plain-C model references: every layer's backward and the whole
 * step's gradients against central finite differences of a separate
 * double-precision forward; blocks, init, dropout, optimizers, inference,
 * and that the model learns a planted-partition graph. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "nn/hs_nn_block.h"
#include "nn/infer.h"
#include "nn/model.h"
#include "nn/nn_rng.h"
#include "nn/ref_nn.h"
#include "nn_check.h"
#include "nn_fixtures.h"

/* ---- double-precision forward (written independently of ref_*.c) ------- */

static double relu_d(double x) { return x > 0.0 ? x : 0.0; }

/* Mean cross-entropy of the model on the batch with input rows x0, every
 * intermediate in double; dropout keeps the same elements as the float
 * path. */
static double model_loss_x(const hs_model_shape *sh, const double *prm, const hs_nn_batch *b,
                           const double *x0, float p, uint64_t seed, uint32_t epoch,
                           uint32_t batch) {
  int L = sh->n_layers;
  int32_t n0 = b->blocks[0].n_src, d0 = sh->dims[0];
  double *in = malloc(sizeof(double) * (size_t)n0 * (size_t)d0);
  for (size_t e = 0; e < (size_t)n0 * (size_t)d0; e++) in[e] = x0[e];
  double scale = 1.0 / (1.0 - (double)p);
  for (int l = 0; l < L; l++) {
    const hs_nn_block *blk = &b->blocks[l];
    int32_t di = sh->dims[l], dout = sh->dims[l + 1];
    const double *W = prm + sh->w_off[l], *bias = prm + sh->b_off[l];
    double *out = malloc(sizeof(double) * (size_t)blk->n_dst * (size_t)dout);
    double *cat = malloc(sizeof(double) * 2 * (size_t)di);
    for (int32_t i = 0; i < blk->n_dst; i++) {
      int32_t deg = blk->row_ptr[i + 1] - blk->row_ptr[i];
      for (int32_t k = 0; k < di; k++) {
        cat[k] = in[(size_t)i * di + k];
        double s = 0.0;
        for (int32_t e = blk->row_ptr[i]; e < blk->row_ptr[i + 1]; e++)
          s += in[(size_t)blk->col[e] * di + k];
        cat[di + k] = deg ? s / deg : 0.0;
      }
      for (int32_t k = 0; k < dout; k++) {
        double z = bias[k];
        for (int32_t j = 0; j < 2 * di; j++) z += cat[j] * W[(size_t)j * dout + k];
        if (l < L - 1) {
          z = relu_d(z);
          uint32_t e = (uint32_t)((size_t)i * dout + k);
          if (p > 0.0f) z = hs_dropout_keep(seed, epoch, batch, (uint32_t)l, e, p) ? z * scale : 0.0;
        }
        out[(size_t)i * dout + k] = z;
      }
    }
    free(cat);
    free(in);
    in = out;
  }
  int32_t n = b->blocks[L - 1].n_dst, c = sh->dims[L];
  double loss = 0.0;
  for (int32_t i = 0; i < n; i++) {
    double mx = in[(size_t)i * c];
    for (int32_t k = 1; k < c; k++) mx = fmax(mx, in[(size_t)i * c + k]);
    double s = 0.0;
    for (int32_t k = 0; k < c; k++) s += exp(in[(size_t)i * c + k] - mx);
    loss += log(s) + mx - in[(size_t)i * c + b->labels[i]];
  }
  free(in);
  return loss / n;
}

/* The same with the batch's own features. */
static double model_loss_d(const hs_model_shape *sh, const double *prm, const hs_nn_batch *b,
                           float p, uint64_t seed, uint32_t epoch, uint32_t batch) {
  size_t nx = (size_t)b->blocks[0].n_src * (size_t)sh->dims[0];
  double *x = malloc(sizeof(double) * nx);
  for (size_t e = 0; e < nx; e++) x[e] = b->feat[e];
  double loss = model_loss_x(sh, prm, b, x, p, seed, epoch, batch);
  free(x);
  return loss;
}


/* ---- per-layer checks ----------------------------------------------------- */

Test(nn_ref, agg_backward_matches_finite_differences) {
  hs_nn_block blocks[2];
  fx_hand_blocks(blocks);
  for (int which = 0; which < 2; which++) {
    const hs_nn_block *b = &blocks[which];
    int32_t d = 3;
    size_t n_in = (size_t)b->n_src * d, n_out = (size_t)b->n_dst * 2 * d;
    uint64_t s = 11 + which;
    float *h = malloc(sizeof(float) * n_in), *r = malloc(sizeof(float) * n_out);
    float *dh = malloc(sizeof(float) * n_in), *cat = malloc(sizeof(float) * n_out);
    double *fd = malloc(sizeof(double) * n_in);
    fx_fill(h, n_in, &s, 1.0f);
    fx_fill(r, n_out, &s, 1.0f);
    int32_t t_ptr[16], t_dst[16];
    hs__nn_block_transpose(b, t_ptr, t_dst);
    hs__ref_agg_bwd(b, t_ptr, t_dst, r, d, dh);
    /* f(h) = sum r . agg(h), linear in h: the difference is exact up to
     * rounding, with agg evaluated in double. */
    for (size_t j = 0; j < n_in; j++) {
      double f[2];
      for (int sgn = 0; sgn < 2; sgn++) {
        double hj = h[j] + (sgn ? -FD_H : FD_H), acc = 0.0;
        for (int32_t i = 0; i < b->n_dst; i++)
          for (int32_t k = 0; k < d; k++) {
            size_t self = (size_t)i * d + k;
            double x = self == j ? hj : h[self];
            double sum = 0.0;
            int32_t deg = b->row_ptr[i + 1] - b->row_ptr[i];
            for (int32_t e = b->row_ptr[i]; e < b->row_ptr[i + 1]; e++) {
              size_t src = (size_t)b->col[e] * d + k;
              sum += src == j ? hj : h[src];
            }
            acc += r[(size_t)i * 2 * d + k] * x + r[(size_t)i * 2 * d + d + k] * (deg ? sum / deg : 0.0);
          }
        f[sgn] = acc;
      }
      fd[j] = (f[0] - f[1]) / (2 * FD_H);
    }
    expect_grads(which ? "agg1.dh" : "agg0.dh", dh, fd, n_in, 1e-5, 1e-6);
    /* Forward agrees with the double mean too. */
    hs__ref_agg_fwd(b, h, d, cat);
    cr_expect_float_eq(cat[4 * d + d], b == &blocks[1] ? (h[5 * d] + h[5 * d] + h[0]) / 3.0f : h[8 * d], 1e-6);
    free(h), free(r), free(dh), free(cat), free(fd);
  }
}

Test(nn_ref, gemm_and_its_gradients) {
  uint64_t s = 5;
  enum { M = 5, N = 4, K = 6 };
  float a[M * K], w[K * N], r[M * N], c[M * N], da[M * K], dw[K * N];
  fx_fill(a, M * K, &s, 1.0f);
  fx_fill(w, K * N, &s, 1.0f);
  fx_fill(r, M * N, &s, 1.0f);
  /* Forward against double, with beta accumulating. */
  for (int i = 0; i < M * N; i++) c[i] = 1.0f;
  hs__ref_gemm(false, false, M, N, K, 2.0f, a, K, w, N, 0.5f, c, N);
  for (int i = 0; i < M; i++)
    for (int j = 0; j < N; j++) {
      double acc = 0.0;
      for (int p = 0; p < K; p++) acc += (double)a[i * K + p] * w[p * N + j];
      cr_expect(fabs(c[i * N + j] - (2.0 * acc + 0.5)) < 1e-5, "c[%d][%d]", i, j);
    }
  /* f(a, w) = sum r . (a w): df/dw = a^T r, df/da = r w^T (both through
   * the transposed GEMM variants the backward pass uses). */
  hs__ref_gemm(true, false, K, N, M, 1.0f, a, K, r, N, 0.0f, dw, N);
  hs__ref_gemm(false, true, M, K, N, 1.0f, r, N, w, N, 0.0f, da, K);
  double fdw[K * N], fda[M * K];
  for (int which = 0; which < 2; which++) {
    int n = which ? M * K : K * N;
    for (int j = 0; j < n; j++) {
      double f[2];
      for (int sgn = 0; sgn < 2; sgn++) {
        double acc = 0.0;
        for (int i = 0; i < M; i++)
          for (int q = 0; q < N; q++) {
            double z = 0.0;
            for (int p = 0; p < K; p++) {
              double av = a[i * K + p], wv = w[p * N + q];
              if (which && i * K + p == j) av += sgn ? -FD_H : FD_H;
              if (!which && p * N + q == j) wv += sgn ? -FD_H : FD_H;
              z += av * wv;
            }
            acc += r[i * N + q] * z;
          }
        f[sgn] = acc;
      }
      (which ? fda : fdw)[j] = (f[0] - f[1]) / (2 * FD_H);
    }
  }
  expect_grads("gemm.dw", dw, fdw, K * N, 1e-5, 1e-6);
  expect_grads("gemm.da", da, fda, M * K, 1e-5, 1e-6);
}

/* f(z, b) = sum r . act(z + b) with ReLU and dropout. */
static double act_f(const float *z, const float *bias, const float *r, int n, int d, int jz,
                    int jb, double delta, float p) {
  double acc = 0.0, scale = 1.0 / (1.0 - (double)p);
  for (int i = 0; i < n; i++)
    for (int k = 0; k < d; k++) {
      int e = i * d + k;
      double x = (double)z[e] + (e == jz ? delta : 0.0) + (double)bias[k] + (k == jb ? delta : 0.0);
      x = relu_d(x);
      if (p > 0.0f) x = hs_dropout_keep(99, 2, 3, 1, (uint32_t)e, p) ? x * scale : 0.0;
      acc += r[e] * x;
    }
  return acc;
}

Test(nn_ref, bias_relu_dropout_backward_matches_finite_differences) {
  enum { N = 6, D = 5 };
  const float p = 0.4f;
  uint64_t s = 21;
  float z[N * D], bias[D], r[N * D], h[N * D], dz[N * D], db[D];
  fx_fill(z, N * D, &s, 1.0f);
  fx_fill(bias, D, &s, 0.3f);
  fx_fill(r, N * D, &s, 1.0f);
  memcpy(h, z, sizeof z);
  hs__ref_bias_act_fwd(h, N, D, bias, true, p, 99, 2, 3, 1);
  memcpy(dz, r, sizeof r);
  hs__ref_act_bwd(h, N, D, hs__dropout_scale(p), dz);
  hs__ref_colsum(dz, N, D, db);
  double fdz[N * D], fdb[D];
  int dropped = 0, clipped = 0;
  for (int e = 0; e < N * D; e++) {
    fdz[e] = (act_f(z, bias, r, N, D, e, -1, FD_H, p) - act_f(z, bias, r, N, D, e, -1, -FD_H, p)) / (2 * FD_H);
    dropped += !hs_dropout_keep(99, 2, 3, 1, (uint32_t)e, p);
    clipped += z[e] + bias[e % D] < 0.0f;
  }
  for (int k = 0; k < D; k++)
    fdb[k] = (act_f(z, bias, r, N, D, -1, k, FD_H, p) - act_f(z, bias, r, N, D, -1, k, -FD_H, p)) / (2 * FD_H);
  cr_assert(dropped > 0 && dropped < N * D, "the fixture must drop some but not all (%d)", dropped);
  cr_assert(clipped > 0, "the fixture must exercise the ReLU's zero side");
  expect_grads("act.dz", dz, fdz, N * D, 1e-5, 1e-6);
  expect_grads("act.db", db, fdb, D, 1e-5, 1e-6);
}

static double ce_f(const float *z, const float *bias, const int32_t *y, int n, int c, int jz,
                   int jb, double delta) {
  double loss = 0.0;
  for (int i = 0; i < n; i++) {
    double l[16], mx = -INFINITY, s = 0.0;
    for (int k = 0; k < c; k++) {
      l[k] = (double)z[i * c + k] + (i * c + k == jz ? delta : 0.0) + bias[k] + (k == jb ? delta : 0.0);
      mx = fmax(mx, l[k]);
    }
    for (int k = 0; k < c; k++) s += exp(l[k] - mx);
    loss += log(s) + mx - l[y[i]];
  }
  return loss / n;
}

Test(nn_ref, softmax_cross_entropy_matches_finite_differences) {
  enum { N = 7, C = 5 };
  uint64_t s = 33;
  float z[N * C], bias[C], dz[N * C], loss_rows[N], db[C];
  int32_t y[N], hits[N];
  fx_fill(z, N * C, &s, 3.0f);
  fx_fill(bias, C, &s, 0.5f);
  for (int i = 0; i < N; i++) y[i] = (int32_t)(fx_next(&s) % C);
  hs__ref_softmax_ce(z, bias, y, N, C, dz, loss_rows, hits);
  float loss;
  int32_t correct;
  hs__ref_loss_reduce(loss_rows, hits, N, &loss, &correct);
  cr_expect(fabs(loss - ce_f(z, bias, y, N, C, -1, -1, 0.0)) < 1e-6, "loss %g", (double)loss);
  int expect_hits = 0;
  for (int i = 0; i < N; i++) {
    int arg = 0;
    for (int k = 1; k < C; k++)
      if (z[i * C + k] + bias[k] > z[i * C + arg] + bias[arg]) arg = k;
    expect_hits += arg == y[i];
  }
  cr_expect_eq(correct, expect_hits);
  hs__ref_colsum(dz, N, C, db);
  double fdz[N * C], fdb[C];
  for (int e = 0; e < N * C; e++)
    fdz[e] = (ce_f(z, bias, y, N, C, e, -1, FD_H) - ce_f(z, bias, y, N, C, e, -1, -FD_H)) / (2 * FD_H);
  for (int k = 0; k < C; k++)
    fdb[k] = (ce_f(z, bias, y, N, C, -1, k, FD_H) - ce_f(z, bias, y, N, C, -1, k, -FD_H)) / (2 * FD_H);
  expect_grads("ce.dz", dz, fdz, N * C, 1e-4, 1e-6);
  /* Bias gradients of a softmax sum to zero over classes: small entries,
   * so only the absolute bound matters here. */
  expect_grads("ce.db", db, fdb, C, 1e-4, 2e-6);
}

Test(nn_ref, softmax_cross_entropy_is_stable_for_large_logits) {
  float z[3] = {1000.0f, 0.0f, -1000.0f}, bias[3] = {0}, dz[3], loss_row;
  int32_t y = 1, hit;
  hs__ref_softmax_ce(z, bias, &y, 1, 3, dz, &loss_row, &hit);
  cr_expect_float_eq(loss_row, 1000.0f, 1e-3);
  cr_expect_eq(hit, 0);
  cr_expect_float_eq(dz[0], 1.0f, 1e-6);
  cr_expect_float_eq(dz[1], -1.0f, 1e-6);
}

/* ---- whole model ------------------------------------------------------------ */

static void model_gradcheck(int n_layers, const int *fanout, float dropout, uint64_t seed) {
  hs_model_cfg cfg;
  hs__model_cfg_defaults(&cfg);
  cfg.n_layers = n_layers;
  cfg.in_dim = 3;
  cfg.hidden = 4;
  cfg.n_classes = 3;
  cfg.dropout = dropout;
  cfg.seed = seed;
  hs_model m;
  cr_assert_eq(hs__model_create(&cfg, &m), HS_OK, "%s", hs_last_error());
  /* Non-zero biases keep pre-activations off the ReLU kink. */
  uint64_t s = seed;
  for (int l = 0; l < n_layers; l++) fx_fill(m.params + m.shape.b_off[l], (size_t)m.shape.dims[l + 1], &s, 0.2f);
  fx_batch fb;
  fx_batch_make(&fb, n_layers, 4, fanout, cfg.in_dim, cfg.n_classes, seed + 1);
  hs_nn_batch b = fx_batch_view(&fb);
  size_t n = m.shape.n_params;
  float *g = malloc(sizeof(float) * n);
  double *fd = malloc(sizeof(double) * n), *pd = malloc(sizeof(double) * n);
  hs_step_stats st;
  cr_assert_eq(hs__ref_gradients(&m, &b, 4, 9, true, g, &st), HS_OK, "%s", hs_last_error());
  for (size_t j = 0; j < n; j++) pd[j] = m.params[j];
  double f0 = model_loss_d(&m.shape, pd, &b, cfg.dropout, seed, 4, 9);
  cr_expect(fabs(st.loss - f0) < 1e-5 * fmax(1.0, f0), "loss %g vs double %g", (double)st.loss, f0);
  cr_expect_eq(st.n_seeds, 4);
  for (size_t j = 0; j < n; j++) {
    pd[j] = m.params[j] + FD_H;
    double fp = model_loss_d(&m.shape, pd, &b, cfg.dropout, seed, 4, 9);
    pd[j] = m.params[j] - FD_H;
    double fm = model_loss_d(&m.shape, pd, &b, cfg.dropout, seed, 4, 9);
    pd[j] = m.params[j];
    fd[j] = (fp - fm) / (2 * FD_H);
  }
  expect_grads("model", g, fd, n, 1e-3, 2e-6);
  free(g), free(fd), free(pd);
  fx_batch_free(&fb);
  hs__model_destroy(&m);
}

Test(nn_ref, one_layer_model_gradients) {
  int fan[] = {3};
  model_gradcheck(1, fan, 0.0f, 7);
}

Test(nn_ref, two_layer_model_gradients_with_dropout) {
  int fan[] = {3, 2};
  model_gradcheck(2, fan, 0.3f, 8);
}

Test(nn_ref, three_layer_model_gradients_with_dropout) {
  int fan[] = {2, 3, 2};
  model_gradcheck(3, fan, 0.25f, 9);
}

Test(nn_ref, hand_batch_gradients) {
  hs_model_cfg cfg;
  hs__model_cfg_defaults(&cfg);
  cfg.in_dim = 2;
  cfg.hidden = 3;
  cfg.n_classes = 2;
  cfg.dropout = 0.0f;
  cfg.seed = 3;
  hs_model m;
  cr_assert_eq(hs__model_create(&cfg, &m), HS_OK);
  uint64_t s = 77;
  fx_fill(m.params + m.shape.b_off[0], 3, &s, 0.2f);
  float feat[18];
  fx_fill(feat, 18, &s, 1.0f);
  int32_t labels[3] = {1, 0, 1};
  hs_nn_block blocks[2];
  fx_hand_blocks(blocks);
  hs_nn_batch b = {.n_layers = 2, .blocks = blocks, .feat = feat, .labels = labels};
  size_t n = m.shape.n_params;
  float *g = malloc(sizeof(float) * n);
  double *fd = malloc(sizeof(double) * n), *pd = malloc(sizeof(double) * n);
  cr_assert_eq(hs__ref_gradients(&m, &b, 0, 0, true, g, NULL), HS_OK, "%s", hs_last_error());
  for (size_t j = 0; j < n; j++) pd[j] = m.params[j];
  for (size_t j = 0; j < n; j++) {
    pd[j] += FD_H;
    double fp = model_loss_d(&m.shape, pd, &b, 0.0f, 3, 0, 0);
    pd[j] -= 2 * FD_H;
    double fm = model_loss_d(&m.shape, pd, &b, 0.0f, 3, 0, 0);
    pd[j] = m.params[j];
    fd[j] = (fp - fm) / (2 * FD_H);
  }
  expect_grads("hand", g, fd, n, 1e-3, 2e-6);
  free(g), free(fd), free(pd);
  hs__model_destroy(&m);
}

/* The gradient with respect to the input rows (what learnable vertex
 * embeddings train from), with dropout on, against finite differences. */
Test(nn_ref, input_gradients_match_finite_differences) {
  hs_model_cfg cfg;
  hs__model_cfg_defaults(&cfg);
  cfg.in_dim = 3;
  cfg.hidden = 4;
  cfg.n_classes = 3;
  cfg.dropout = 0.3f;
  cfg.seed = 8;
  hs_model m;
  cr_assert_eq(hs__model_create(&cfg, &m), HS_OK, "%s", hs_last_error());
  uint64_t s = 8;
  for (int l = 0; l < 2; l++) fx_fill(m.params + m.shape.b_off[l], (size_t)m.shape.dims[l + 1], &s, 0.2f);
  int fan[] = {3, 2};
  fx_batch fb;
  fx_batch_make(&fb, 2, 4, fan, cfg.in_dim, cfg.n_classes, 9);
  hs_nn_batch b = fx_batch_view(&fb);
  size_t n = m.shape.n_params, nx = (size_t)fb.blocks[0].n_src * (size_t)cfg.in_dim;
  float *g = malloc(sizeof(float) * n), *g_plain = malloc(sizeof(float) * n), *dx = malloc(sizeof(float) * nx);
  double *pd = malloc(sizeof(double) * n), *xd = malloc(sizeof(double) * nx), *fd = malloc(sizeof(double) * nx);
  cr_assert_eq(hs__ref_gradients_x(&m, &b, 4, 9, true, g, dx, NULL), HS_OK, "%s", hs_last_error());
  cr_assert_eq(hs__ref_gradients(&m, &b, 4, 9, true, g_plain, NULL), HS_OK);
  cr_expect_arr_eq(g, g_plain, sizeof(float) * n, "asking for dX changed the parameter gradients");
  for (size_t j = 0; j < n; j++) pd[j] = m.params[j];
  for (size_t e = 0; e < nx; e++) xd[e] = fb.feat[e];
  for (size_t e = 0; e < nx; e++) {
    xd[e] = fb.feat[e] + FD_H;
    double fp = model_loss_x(&m.shape, pd, &b, xd, cfg.dropout, cfg.seed, 4, 9);
    xd[e] = fb.feat[e] - FD_H;
    double fm = model_loss_x(&m.shape, pd, &b, xd, cfg.dropout, cfg.seed, 4, 9);
    xd[e] = fb.feat[e];
    fd[e] = (fp - fm) / (2 * FD_H);
  }
  expect_grads("dX", dx, fd, nx, 1e-3, 2e-6);
  free(g), free(g_plain), free(dx), free(pd), free(xd), free(fd);
  fx_batch_free(&fb);
  hs__model_destroy(&m);
}

/* ---- blocks ---------------------------------------------------------------- */

Test(nn_ref, transpose_lists_sources_in_dst_order) {
  hs_nn_block blocks[2];
  fx_hand_blocks(blocks);
  int32_t t_ptr[7], t_dst[6];
  hs__nn_block_transpose(&blocks[1], t_ptr, t_dst);
  const int32_t want_ptr[] = {0, 1, 2, 2, 3, 4, 6};
  const int32_t want_dst[] = {2, 0, 0, 0, 2, 2};
  cr_expect_arr_eq(t_ptr, want_ptr, sizeof want_ptr);
  cr_expect_arr_eq(t_dst, want_dst, sizeof want_dst);
}

Test(nn_ref, block_validation_names_the_fault) {
  const int32_t rp_bad0[] = {1, 2}, rp_dec[] = {0, 2, 1}, col[] = {0, 5};
  hs_nn_block b = {.n_dst = 1, .n_src = 2, .row_ptr = rp_bad0, .col = col};
  cr_expect_eq(hs__nn_block_validate(&b, 0), HS_ERR_FORMAT);
  cr_expect(strstr(hs_last_error(), "row_ptr[0]"));
  b = (hs_nn_block){.n_dst = 2, .n_src = 3, .row_ptr = rp_dec, .col = col};
  cr_expect_eq(hs__nn_block_validate(&b, 1), HS_ERR_FORMAT);
  cr_expect(strstr(hs_last_error(), "block 1: row_ptr decreases"));
  const int32_t rp[] = {0, 2};
  b = (hs_nn_block){.n_dst = 1, .n_src = 3, .row_ptr = rp, .col = col};
  cr_expect_eq(hs__nn_block_validate(&b, 0), HS_ERR_FORMAT);
  cr_expect(strstr(hs_last_error(), "src 5"));
  b = (hs_nn_block){.n_dst = 4, .n_src = 3, .row_ptr = rp, .col = col};
  cr_expect_eq(hs__nn_block_validate(&b, 0), HS_ERR_FORMAT);

  hs_nn_block blocks[2];
  fx_hand_blocks(blocks);
  float feat[9];
  int32_t labels[3] = {0, 1, 2};
  hs_nn_batch batch = {.n_layers = 2, .blocks = blocks, .feat = feat, .labels = labels};
  cr_expect_eq(hs__nn_batch_validate(&batch, 3), HS_OK, "%s", hs_last_error());
  cr_expect_eq(hs__nn_batch_validate(&batch, 2), HS_ERR_FORMAT);
  cr_expect(strstr(hs_last_error(), "label 2"));
  blocks[1].n_src = 7;
  cr_expect_eq(hs__nn_batch_validate(&batch, 3), HS_ERR_FORMAT);
  cr_expect(strstr(hs_last_error(), "block 1 has 7 src but block 0 has 6 dst"));
}

Test(nn_ref, full_blocks_number_vertices_like_the_sampler) {
  /* 0 -> {1, 2}, 1 -> {3}, 2 -> {}, 3 -> {0, 4}, 4 -> {4} */
  const int64_t indptr[] = {0, 2, 3, 3, 5, 6};
  const int32_t indices[] = {1, 2, 3, 0, 4, 4};
  hs_csr_view g = {.n_vertices = 5, .indptr = indptr, .indices = indices};
  const int32_t ids[] = {3, 2, 3};
  hs_nn_block_set set;
  cr_assert_eq(hs__full_blocks_build(&g, ids, 3, 2, &set), HS_OK, "%s", hs_last_error());
  /* seeds 3, 2 -> local 0, 1; hop 1 adds 0, 4 -> 2, 3; hop 2 adds 1 -> 4 */
  const int32_t want_ids[] = {3, 2, 0, 4, 1};
  cr_expect_arr_eq(set.ids, want_ids, sizeof want_ids);
  const int32_t want_seed_local[] = {0, 1, 0};
  cr_expect_arr_eq(set.seed_local, want_seed_local, sizeof want_seed_local);
  cr_expect_eq(set.blocks[1].n_dst, 2);
  cr_expect_eq(set.blocks[1].n_src, 4);
  cr_expect_eq(set.blocks[0].n_dst, 4);
  cr_expect_eq(set.blocks[0].n_src, 5);
  const int32_t want_rp0[] = {0, 2, 2, 4, 5}, want_col0[] = {2, 3, 4, 1, 3};
  cr_expect_arr_eq(set.blocks[0].row_ptr, want_rp0, sizeof want_rp0);
  cr_expect_arr_eq(set.blocks[0].col, want_col0, sizeof want_col0);
  hs__block_set_free(&set);
  const int32_t bad[] = {5};
  cr_expect_eq(hs__full_blocks_build(&g, bad, 1, 2, &set), HS_ERR_RANGE);
  cr_expect(strstr(hs_last_error(), "id 5"));
  hs__block_set_free(&set);
}

/* ---- init, dropout, optimizers ---------------------------------------------- */

Test(nn_ref, init_is_seeded_glorot_uniform) {
  hs_model_cfg cfg;
  hs__model_cfg_defaults(&cfg);
  cfg.in_dim = 40;
  cfg.hidden = 60;
  cfg.n_classes = 7;
  cfg.seed = 42;
  hs_model a, b, c;
  cr_assert_eq(hs__model_create(&cfg, &a), HS_OK);
  cr_assert_eq(hs__model_create(&cfg, &b), HS_OK);
  cfg.seed = 43;
  cr_assert_eq(hs__model_create(&cfg, &c), HS_OK);
  cr_expect_eq(a.shape.n_params, (size_t)(80 * 60 + 60 + 120 * 7 + 7));
  cr_expect_arr_eq(a.params, b.params, sizeof(float) * a.shape.n_params);
  cr_expect_neq(memcmp(a.params, c.params, sizeof(float) * a.shape.n_params), 0);
  float lim = sqrtf(6.0f / 100.0f);
  size_t n_w = 80 * 60;
  double sum = 0.0, sq = 0.0, mx = 0.0;
  for (size_t e = 0; e < n_w; e++) {
    float w = a.params[a.shape.w_off[0] + e];
    sum += w, sq += (double)w * w, mx = fmax(mx, fabs(w));
  }
  cr_expect_leq(mx, lim);
  cr_expect_gt(mx, 0.95 * lim);
  cr_expect_lt(fabs(sum / n_w), 0.02);
  cr_expect_lt(fabs(sq / n_w - lim * lim / 3.0), 0.01, "variance %g", sq / n_w);
  for (int k = 0; k < 60; k++) cr_expect_eq(a.params[a.shape.b_off[0] + k], 0.0f);
  hs__model_destroy(&a), hs__model_destroy(&b), hs__model_destroy(&c);
}

Test(nn_ref, model_config_is_validated) {
  hs_model_cfg cfg;
  hs__model_cfg_defaults(&cfg);
  cfg.in_dim = 4;
  cfg.n_classes = 3;
  hs_model_shape sh;
  cr_expect_eq(hs__model_shape(&cfg, &sh), HS_OK);
  cfg.dropout = 1.0f;
  cr_expect_eq(hs__model_shape(&cfg, &sh), HS_ERR_INVALID_ARG);
  cr_expect(strstr(hs_last_error(), "dropout"));
  cfg.dropout = 0.5f;
  cfg.n_layers = HS_NN_MAX_LAYERS + 1;
  cr_expect_eq(hs__model_shape(&cfg, &sh), HS_ERR_INVALID_ARG);
  cfg.n_layers = 2;
  cfg.optim.kind = 0;
  cr_expect_eq(hs__model_shape(&cfg, &sh), HS_ERR_INVALID_ARG);
  cfg.optim.kind = HS_OPTIM_ADAM;
  cfg.optim.beta2 = 1.0f;
  cr_expect_eq(hs__model_shape(&cfg, &sh), HS_ERR_INVALID_ARG);
}

Test(nn_ref, dropout_mask_is_keyed_and_has_the_right_rate) {
  const float p = 0.3f;
  int kept = 0, same = 0, n = 40000;
  for (int e = 0; e < n; e++) {
    int k = hs_dropout_keep(5, 1, 2, 0, (uint32_t)e, p);
    kept += k;
    same += k == hs_dropout_keep(5, 1, 3, 0, (uint32_t)e, p); /* another batch */
  }
  double rate = (double)kept / n;
  cr_expect(fabs(rate - 0.7) < 0.01, "keep rate %g", rate);
  /* Independent masks agree on about p^2 + (1-p)^2 of the elements. */
  cr_expect(fabs((double)same / n - 0.58) < 0.01, "agreement %g", (double)same / n);
  float z[8] = {1, 1, 1, 1, 1, 1, 1, 1}, bias[4] = {0}, again[8];
  hs__ref_bias_act_fwd(z, 2, 4, bias, true, 0.5f, 9, 0, 0, 1);
  memcpy(again, (float[8]){1, 1, 1, 1, 1, 1, 1, 1}, sizeof again);
  hs__ref_bias_act_fwd(again, 2, 4, bias, true, 0.5f, 9, 0, 0, 1);
  cr_expect_arr_eq(z, again, sizeof z);
  for (int e = 0; e < 8; e++) cr_expect(z[e] == 0.0f || z[e] == 2.0f);
}

Test(nn_ref, sgd_updates_by_hand) {
  hs_optim_cfg o = {.kind = HS_OPTIM_SGD, .wd_mode = HS_WD_L2, .lr = 0.1f, .weight_decay = 0.5f};
  hs_optim_coef k;
  hs__optim_coef(&o, 1, &k);
  float p[1] = {2.0f}, g[1] = {1.0f}, m[1] = {0}, v[1] = {0};
  hs__ref_optim(o.kind, &k, 1, p, g, m, v);
  cr_expect_float_eq(p[0], 2.0f - 0.1f * (1.0f + 1.0f), 1e-6); /* g + wd p = 2 */
  o.wd_mode = HS_WD_DECOUPLED;
  o.momentum = 0.9f;
  hs__optim_coef(&o, 1, &k);
  p[0] = 2.0f;
  hs__ref_optim(o.kind, &k, 1, p, g, m, v);
  cr_expect_float_eq(p[0], 2.0f * 0.95f - 0.1f, 1e-6);
  hs__ref_optim(o.kind, &k, 1, p, g, m, v); /* momentum: m = 0.9 + 1 */
  cr_expect_float_eq(p[0], 1.8f * 0.95f - 0.1f * 1.9f, 1e-6);
}

Test(nn_ref, adam_updates_by_hand) {
  hs_optim_cfg o = {.kind = HS_OPTIM_ADAM, .wd_mode = HS_WD_L2, .lr = 0.01f, .beta1 = 0.9f,
                    .beta2 = 0.999f, .eps = 1e-8f};
  hs_optim_coef k;
  float p[2] = {1.0f, -1.0f}, g[2] = {0.5f, -2.0f}, m[2] = {0}, v[2] = {0};
  hs__optim_coef(&o, 1, &k);
  hs__ref_optim(o.kind, &k, 2, p, g, m, v);
  /* First step: m_hat = g, v_hat = g^2, so each moves by lr against sign(g). */
  cr_expect_float_eq(p[0], 0.99f, 1e-6);
  cr_expect_float_eq(p[1], -0.99f, 1e-6);
  /* Second step with the same gradient, by the textbook formulas in double. */
  hs__optim_coef(&o, 2, &k);
  hs__ref_optim(o.kind, &k, 2, p, g, m, v);
  double m2 = 0.9 * 0.05 + 0.1 * 0.5, v2 = 0.999 * 0.001 * 0.25 + 0.001 * 0.25;
  double want = 0.99 - 0.01 * (m2 / (1 - 0.81)) / (sqrt(v2 / (1 - 0.998001)) + 1e-8);
  cr_expect(fabs(p[0] - want) < 1e-6, "%g vs %g", (double)p[0], want);
  /* Decoupled decay shrinks p by lr*wd on top of the step. */
  o.wd_mode = HS_WD_DECOUPLED;
  o.weight_decay = 0.1f;
  float q[1] = {1.0f}, gq[1] = {0.5f}, mq[1] = {0}, vq[1] = {0};
  hs__optim_coef(&o, 1, &k);
  hs__ref_optim(o.kind, &k, 1, q, gq, mq, vq);
  cr_expect_float_eq(q[0], 1.0f * (1.0f - 0.001f) - 0.01f, 1e-6);
}

/* ---- learning and inference --------------------------------------------------- */

Test(nn_ref, learns_a_planted_partition_and_inference_paths_agree, .timeout = 120) {
  fx_graph g;
  fx_graph_make(&g, 320, 4, 12, 5, 1234);
  hs_csr_view cv = {.n_vertices = g.n, .indptr = g.indptr, .indices = g.indices};
  hs_model_cfg cfg;
  hs__model_cfg_defaults(&cfg);
  cfg.in_dim = g.dim;
  cfg.hidden = 16;
  cfg.n_classes = 4;
  cfg.dropout = 0.2f;
  cfg.seed = 1;
  hs_model m;
  cr_assert_eq(hs__model_create(&cfg, &m), HS_OK);
  int32_t train[192], test[128];
  for (int i = 0; i < 192; i++) train[i] = i;
  for (int i = 0; i < 128; i++) test[i] = 192 + i;
  float *logits = malloc(sizeof(float) * (size_t)g.n * 4);
  cr_assert_eq(hs__infer_full(&m.shape, m.params, &cv, g.feat, logits), HS_OK);
  double before = hs__accuracy(logits, 4, g.labels, test, 128);
  float first_loss = 0.0f, last_loss = 0.0f;
  for (uint32_t epoch = 0; epoch < 15; epoch++)
    for (uint32_t bi = 0; bi < 3; bi++) {
      hs_nn_block_set set;
      cr_assert_eq(hs__full_blocks_build(&cv, train + bi * 64, 64, 2, &set), HS_OK);
      int32_t n = set.blocks[0].n_src;
      float *x = malloc(sizeof(float) * (size_t)n * (size_t)g.dim);
      int32_t y[64];
      for (int32_t i = 0; i < n; i++) memcpy(x + (size_t)i * g.dim, g.feat + (size_t)set.ids[i] * g.dim, sizeof(float) * (size_t)g.dim);
      for (int i = 0; i < 64; i++) y[i] = g.labels[set.ids[i]];
      hs_nn_batch b = {.n_layers = 2, .blocks = set.blocks, .feat = x, .labels = y};
      hs_step_stats st;
      cr_assert_eq(hs__ref_train_step(&m, &b, epoch, bi, &st), HS_OK, "%s", hs_last_error());
      if (epoch == 0 && bi == 0) first_loss = st.loss;
      last_loss = st.loss;
      free(x);
      hs__block_set_free(&set);
    }
  cr_expect_eq(m.step, 45u);
  cr_assert_eq(hs__infer_full(&m.shape, m.params, &cv, g.feat, logits), HS_OK);
  double after = hs__accuracy(logits, 4, g.labels, test, 128);
  cr_expect_lt(last_loss, 0.5f * first_loss, "loss %g -> %g", (double)first_loss, (double)last_loss);
  cr_expect_geq(after, 0.9, "test accuracy %g (was %g before training)", after, before);

  /* Receptive-field inference gives the very same logits as layer-wise. */
  const int32_t ids[] = {5, 300, 5, 17};
  float some[4 * 4];
  cr_assert_eq(hs__infer_ids(&m.shape, m.params, &cv, g.feat, ids, 4, some), HS_OK);
  for (int i = 0; i < 4; i++)
    cr_expect_arr_eq(some + i * 4, logits + (size_t)ids[i] * 4, sizeof(float) * 4, "id %d", ids[i]);
  free(logits);
  hs__model_destroy(&m);
  fx_graph_free(&g);
}
