/* GAT: the plain-C reference against a double-precision forward written
 * independently (attention by hand, gradients by finite differences), and
 * its kernels on the OpenCL device against their references. The
 * model-independent checks (device step, work-group sizes, inference,
 * seams) run for every kind in test_models.c. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cl_fixture.h"
#include "nn/gat.h"
#include "nn/nn_rng.h"
#include "nn/ref_nn.h"
#include "nn_check.h"
#include "nn_fixtures.h"

/* ---- double-precision forward ----------------------------------------------- */

static double leaky_d(double x) { return x > 0 ? x : 0.2 * x; }

static double gat_loss_d(const hs_model_shape *sh, const double *prm, const hs_nn_batch *b,
                         const double *x0, float p, uint64_t seed, uint32_t epoch,
                         uint32_t batch) {
  int L = sh->n_layers, H = sh->heads;
  size_t n0 = (size_t)b->blocks[0].n_src * (size_t)sh->dims[0];
  double *in = malloc(sizeof(double) * n0);
  memcpy(in, x0, sizeof(double) * n0);
  double scale = 1.0 / (1.0 - (double)p);
  for (int l = 0; l < L; l++) {
    const hs_nn_block *blk = &b->blocks[l];
    bool last = l == L - 1;
    int F = last ? sh->dims[l + 1] : sh->dims[l + 1] / H, HF = H * F, di = sh->dims[l];
    int32_t ns = blk->n_src, nd = blk->n_dst;
    const double *W = prm + sh->w_off[l], *al = prm + sh->a_off[l], *ar = al + HF;
    const double *bias = prm + sh->b_off[l];
    double *y = calloc((size_t)ns * HF, sizeof(double));
    for (int32_t j = 0; j < ns; j++)
      for (int c = 0; c < HF; c++)
        for (int q = 0; q < di; q++) y[(size_t)j * HF + c] += in[(size_t)j * di + q] * W[(size_t)q * HF + c];
    int width = sh->dims[l + 1];
    double *out = calloc((size_t)nd * width, sizeof(double));
    for (int32_t i = 0; i < nd; i++)
      for (int h = 0; h < H; h++) {
        /* neighbours: i itself, then its edges */
        int32_t deg = blk->row_ptr[i + 1] - blk->row_ptr[i];
        double *s = malloc(sizeof(double) * (size_t)(deg + 1));
        int32_t *who = malloc(sizeof(int32_t) * (size_t)(deg + 1));
        who[0] = i;
        for (int32_t e = 0; e < deg; e++) who[e + 1] = blk->col[blk->row_ptr[i] + e];
        double er = 0, mx = -INFINITY, sum = 0;
        for (int f = 0; f < F; f++) er += y[(size_t)i * HF + h * F + f] * ar[h * F + f];
        for (int32_t q = 0; q <= deg; q++) {
          double el = 0;
          for (int f = 0; f < F; f++) el += y[(size_t)who[q] * HF + h * F + f] * al[h * F + f];
          s[q] = leaky_d(el + er);
          mx = fmax(mx, s[q]);
        }
        for (int32_t q = 0; q <= deg; q++) sum += exp(s[q] - mx);
        for (int f = 0; f < F; f++) {
          double z = 0;
          for (int32_t q = 0; q <= deg; q++)
            z += exp(s[q] - mx) / sum * y[(size_t)who[q] * HF + h * F + f];
          if (last)
            out[(size_t)i * width + f] += z / H;
          else
            out[(size_t)i * width + h * F + f] = z;
        }
        free(s), free(who);
      }
    for (int32_t i = 0; i < nd; i++)
      for (int c = 0; c < width; c++) {
        double z = out[(size_t)i * width + c] + bias[c];
        if (!last) {
          z = z > 0 ? z : 0;
          uint32_t el = (uint32_t)((size_t)i * width + c);
          if (p > 0.0f) z = hs_dropout_keep(seed, epoch, batch, (uint32_t)l, el, p) ? z * scale : 0.0;
        }
        out[(size_t)i * width + c] = z;
      }
    free(y), free(in);
    in = out;
  }
  double loss = mean_ce_d(in, b->blocks[L - 1].n_dst, sh->dims[L], b->labels);
  free(in);
  return loss;
}


static void gat_model(hs_model *m, int n_layers, int heads, float dropout, uint64_t seed) {
  hs_model_cfg cfg;
  hs__model_cfg_defaults(&cfg);
  cfg.kind = HS_NN_GAT;
  cfg.heads = heads;
  cfg.n_layers = n_layers;
  cfg.in_dim = 3;
  cfg.hidden = 2 * heads;
  cfg.n_classes = 3;
  cfg.dropout = dropout;
  cfg.seed = seed;
  cr_assert_eq(hs__model_create(&cfg, m), HS_OK, "%s", hs_last_error());
  /* Non-zero biases, and attention vectors large enough that the scores
   * differ and both sides of the LeakyReLU are taken. */
  uint64_t s = seed;
  for (int l = 0; l < n_layers; l++) {
    fx_fill(m->params + m->shape.b_off[l], (size_t)m->shape.dims[l + 1], &s, 0.2f);
    hs_gat_dims g = hs__gat_dims(&m->shape, l);
    fx_fill(m->params + m->shape.a_off[l], 2 * (size_t)g.heads * (size_t)g.f, &s, 1.5f);
  }
}


Test(gat_ref, gradients_match_finite_differences) {
  static const int fans[][3] = {{3, 0, 0}, {3, 2, 0}, {2, 3, 2}};
  static const float drops[] = {0.0f, 0.3f, 0.25f};
  static const int heads[] = {2, 3, 1};
  for (int L = 1; L <= 3; L++) {
    hs_model m;
    gat_model(&m, L, heads[L - 1], drops[L - 1], (uint64_t)(60 + L));
    fx_batch fb;
    fx_batch_make(&fb, L, 4, fans[L - 1], 3, 3, (uint64_t)(70 + L));
    hs_nn_batch b = fx_batch_view(&fb);
    expect_fd_gradients(&m, &b, 4, 9, gat_loss_d);
    fx_batch_free(&fb);
    hs__model_destroy(&m);
  }
}

/* The hand-made batch (zero-degree dsts, repeated neighbours), 2 heads. */
Test(gat_ref, hand_batch_gradients) {
  hs_nn_block blocks[2];
  fx_hand_blocks(blocks);
  hs_model m;
  gat_model(&m, 2, 2, 0.0f, 3);
  float feat[27];
  uint64_t s = 78;
  fx_fill(feat, 27, &s, 1.0f);
  int32_t labels[3] = {1, 0, 2};
  hs_nn_batch b = {.n_layers = 2, .blocks = blocks, .feat = feat, .labels = labels};
  expect_fd_gradients(&m, &b, 0, 0, gat_loss_d);
  hs__model_destroy(&m);
}

/* A dst with no neighbours attends to itself alone: alpha 1. */
Test(gat_ref, a_lone_dst_attends_to_itself) {
  hs_nn_block blocks[2];
  fx_hand_blocks(blocks);
  float el[9 * 2], er[6 * 2], as[6 * 2], ae[10 * 2];
  uint64_t s = 1;
  fx_fill(el, 18, &s, 2.0f);
  fx_fill(er, 12, &s, 2.0f);
  hs__ref_gat_softmax(&blocks[0], el, er, 2, as, ae);
  cr_expect_eq(as[4 * 2], 1.0f);
  cr_expect_eq(as[4 * 2 + 1], 1.0f);
  /* Every dst's coefficients sum to 1. */
  for (int i = 0; i < 6; i++)
    for (int h = 0; h < 2; h++) {
      double sum = as[i * 2 + h];
      for (int32_t e = blocks[0].row_ptr[i]; e < blocks[0].row_ptr[i + 1]; e++) sum += ae[e * 2 + h];
      cr_expect(fabs(sum - 1.0) < 1e-6, "dst %d head %d: sum %g", i, h, sum);
    }
}

/* ---- kernels on the device ----------------------------------------------------- */

static const size_t wg_sizes[] = {0, 1, 3, 16, 64};
#define N_WG (sizeof wg_sizes / sizeof wg_sizes[0])

static void expect_close(const char *what, const float *got, const float *want, size_t n,
                         float rtol) {
  for (size_t i = 0; i < n; i++) {
    float tol = rtol * fmaxf(1.0f, fabsf(want[i]));
    if (fabsf(got[i] - want[i]) > tol) {
      cr_expect(false, "%s[%zu]: %.9g, want %.9g", what, i, (double)got[i], (double)want[i]);
      return;
    }
  }
}

/* Each kernel fed the reference's inputs: equal to its reference bit for
 * bit, except the softmax (exp): within 1e-6. Two shapes: heads of 16
 * features (vector path) and of 5 (heads straddling vectors). */
Test(gat_cl, kernels_equal_their_references) {
  cl_fixture f;
  clf_open(&f);
  hs_kset ks;
  cr_assert_eq(hs__kset_create(&f.ctx, &f.dev, f.q, &hs__model_ops(HS_NN_GAT)->program, 0, &ks),
               HS_OK, "%s", hs_last_error());
  int fan[1] = {5};
  fx_batch fb;
  fx_batch_make(&fb, 1, 300, fan, 4, 3, 77);
  for (int32_t i = 0; i < fb.blocks[0].n_dst; i++)
    if (fb.rp[0][i + 1] > fb.rp[0][i]) fb.col[0][fb.rp[0][i]] = 0; /* a hub */
  const hs_nn_block *b = &fb.blocks[0];
  cl_int nd = b->n_dst, ns = b->n_src, ne = hs__nn_block_edges(b);
  int32_t *tp = malloc(4 * ((size_t)ns + 1)), *te = malloc(4 * (size_t)ne), *ed = malloc(4 * (size_t)ne);
  hs__nn_block_transpose_eid(b, tp, te, ed);
  uint64_t s = 5;
  static const int shapes[][2] = {{3, 16}, {2, 5}};
  for (int si = 0; si < 2; si++) {
    hs_gat_dims g = {.heads = shapes[si][0], .f = shapes[si][1]};
    size_t H = (size_t)g.heads, hf = H * (size_t)g.f;
    size_t ny = (size_t)ns * hf, nz = (size_t)nd * hf, nsh = (size_t)ns * H, ndh = (size_t)nd * H,
           neh = (size_t)ne * H;
    float *y = malloc(4 * ny), *att = malloc(4 * (5 + 2 * hf)), *dz = malloc(4 * nz);
    float *el = malloc(4 * nsh), *er = malloc(4 * ndh), *as = malloc(4 * ndh), *ae = malloc(4 * neh);
    float *z = malloc(4 * nz), *mean = malloc(4 * (size_t)nd * (size_t)g.f), *dzm = malloc(4 * nz);
    float *gs = malloc(4 * ndh), *ge = malloc(4 * neh), *der = malloc(4 * ndh), *del = malloc(4 * nsh);
    float *dy = malloc(4 * ny), *agl = malloc(4 * hf), *agr = malloc(4 * hf);
    float *got = malloc(4 * (ny > neh ? ny : neh) + 4 * hf);
    fx_fill(y, ny, &s, 1.0f);
    fx_fill(att, 5 + 2 * hf, &s, 1.0f);
    fx_fill(dz, nz, &s, 1.0f);
    const float *a = att + 5; /* the attention vectors at an offset */
    hs__ref_gat_scores(y, a, ns, nd, g.heads, g.f, el, er);
    hs__ref_gat_softmax(b, el, er, g.heads, as, ae);
    hs__ref_gat_agg_fwd(b, y, as, ae, g.heads, g.f, z);
    hs__ref_gat_head_mean(z, nd, g.heads, g.f, mean);
    hs__ref_gat_head_mean_bwd(mean, nd, g.heads, g.f, dzm);
    hs__ref_gat_bwd_score(b, y, dz, el, er, as, ae, g.heads, g.f, gs, ge, der);
    hs__ref_gat_bwd_del(b, tp, te, gs, ge, g.heads, del);
    hs__ref_gat_bwd_y(b, tp, te, ed, dz, as, ae, del, der, a, g.heads, g.f, dy);
    hs__ref_gat_att_grad(y, del, ns, g.heads, g.f, agl);
    hs__ref_gat_att_grad(y, der, nd, g.heads, g.f, agr);
    for (size_t w = 0; w < N_WG; w++) {
      for (int i = 0; i < ks.n_kernels; i++) ks.wg[i] = wg_sizes[w];
      cl_mem drp = clf_upload(&f, b->row_ptr, 4 * ((size_t)nd + 1));
      cl_mem dcol = clf_upload(&f, b->col, 4 * (size_t)ne);
      cl_mem dtp = clf_upload(&f, tp, 4 * ((size_t)ns + 1)), dte = clf_upload(&f, te, 4 * (size_t)ne);
      cl_mem ded = clf_upload(&f, NULL, 4 * (size_t)ne);
      cl_mem dy_ = clf_upload(&f, y, 4 * ny), datt = clf_upload(&f, att, 4 * (5 + 2 * hf));
      cl_mem ddz = clf_upload(&f, dz, 4 * nz);
      cl_mem del_ = clf_upload(&f, NULL, 4 * nsh), der_ = clf_upload(&f, NULL, 4 * ndh);
      cl_mem das = clf_upload(&f, NULL, 4 * ndh), dae = clf_upload(&f, NULL, 4 * neh);
      cl_mem ras = clf_upload(&f, as, 4 * ndh), rae = clf_upload(&f, ae, 4 * neh);
      cl_mem dzo = clf_upload(&f, NULL, 4 * nz), dmean = clf_upload(&f, NULL, 4 * (size_t)nd * g.f);
      cl_mem rmean = clf_upload(&f, mean, 4 * (size_t)nd * g.f), ddzm = clf_upload(&f, NULL, 4 * nz);
      cl_mem dgs = clf_upload(&f, NULL, 4 * ndh), dge = clf_upload(&f, NULL, 4 * neh);
      cl_mem dder = clf_upload(&f, NULL, 4 * ndh), ddel = clf_upload(&f, NULL, 4 * nsh);
      cl_mem rel = clf_upload(&f, el, 4 * nsh), rer = clf_upload(&f, er, 4 * ndh);
      cl_mem rgs = clf_upload(&f, gs, 4 * ndh), rge = clf_upload(&f, ge, 4 * neh);
      cl_mem rdel = clf_upload(&f, del, 4 * nsh), rder = clf_upload(&f, der, 4 * ndh);
      cl_mem ddy = clf_upload(&f, NULL, 4 * ny);
      size_t chunks = hs__colsum_chunks((size_t)ns);
      cl_mem part = clf_upload(&f, NULL, 4 * chunks * hf), dag = clf_upload(&f, NULL, 4 * 2 * hf);
      char what[64];
#define SAME(name, buf, want, count)                                                   \
  do {                                                                                 \
    clf_download(&f, buf, got, 4 * (count));                                           \
    snprintf(what, sizeof what, "%s, %d heads of %d, wg %zu", name, g.heads, g.f, wg_sizes[w]); \
    cr_expect_arr_eq(got, want, 4 * (count), "%s", what);                              \
  } while (0)
      cr_assert_eq(hs__k_gat_scores(&ks, dy_, datt, 5, ns, nd, g, del_, der_), HS_OK, "%s",
                   hs_last_error());
      SAME("el", del_, el, nsh);
      SAME("er", der_, er, ndh);
      cr_assert_eq(hs__k_gat_softmax(&ks, drp, dcol, rel, rer, nd, g, das, dae), HS_OK);
      clf_download(&f, das, got, 4 * ndh);
      expect_close("alpha (self)", got, as, ndh, 1e-6f);
      clf_download(&f, dae, got, 4 * neh);
      expect_close("alpha (edges)", got, ae, neh, 1e-6f);
      cr_assert_eq(hs__k_gat_agg_fwd(&ks, drp, dcol, dy_, ras, rae, nd, g, dzo), HS_OK);
      SAME("aggregation", dzo, z, nz);
      cr_assert_eq(hs__k_gat_head_mean(&ks, dzo, nd, g, dmean), HS_OK);
      SAME("head mean", dmean, mean, (size_t)nd * g.f);
      cr_assert_eq(hs__k_gat_head_mean_bwd(&ks, rmean, nd, g, ddzm), HS_OK);
      SAME("head mean backward", ddzm, dzm, nz);
      cr_assert_eq(hs__k_gat_bwd_score(&ks, drp, dcol, dy_, ddz, rel, rer, ras, rae, nd, g, dgs,
                                       dge, dder),
                   HS_OK);
      SAME("score gradients (self)", dgs, gs, ndh);
      SAME("score gradients (edges)", dge, ge, neh);
      SAME("der", dder, der, ndh);
      cr_assert_eq(hs__k_edge_dst(&ks, drp, nd, ded), HS_OK);
      clf_download(&f, ded, got, 4 * (size_t)ne);
      cr_expect_arr_eq(got, ed, 4 * (size_t)ne, "edge dsts");
      cr_assert_eq(hs__k_gat_bwd_del(&ks, dtp, dte, rgs, rge, nd, ns, g, ddel), HS_OK);
      SAME("del", ddel, del, nsh);
      cr_assert_eq(hs__k_gat_bwd_y(&ks, dtp, dte, ded, ddz, ras, rae, rdel, rder, datt, 5, nd, ns,
                                   g, ddy),
                   HS_OK);
      SAME("dY", ddy, dy, ny);
      cr_assert_eq(hs__k_gat_att_part(&ks, dy_, rdel, ns, g, part), HS_OK);
      cr_assert_eq(hs__k_colsum_final(&ks, part, (cl_int)chunks, (cl_int)hf, dag, 0), HS_OK);
      cr_assert_eq(hs__k_gat_att_part(&ks, dy_, rder, nd, g, part), HS_OK);
      cr_assert_eq(hs__k_colsum_final(&ks, part, (cl_int)hs__colsum_chunks((size_t)nd),
                                      (cl_int)hf, dag, hf),
                   HS_OK);
      SAME("a_l gradient", dag, agl, hf);
      clf_download(&f, dag, got, 4 * 2 * hf);
      cr_expect_arr_eq(got + hf, agr, 4 * hf, "a_r gradient, wg %zu", wg_sizes[w]);
#undef SAME
      cl_mem all[] = {drp, dcol, dtp, dte, ded, dy_, datt, ddz, del_, der_, das, dae, ras, rae,
                      dzo, dmean, rmean, ddzm, dgs, dge, dder, ddel, rel, rer, rgs, rge, rdel,
                      rder, ddy, part, dag};
      for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) hs__mem_release(&all[i]);
    }
    free(y), free(att), free(dz), free(el), free(er), free(as), free(ae), free(z), free(mean);
    free(dzm), free(gs), free(ge), free(der), free(del), free(dy), free(agl), free(agr), free(got);
  }
  free(tp), free(te), free(ed);
  fx_batch_free(&fb);
  hs__kset_release(&ks);
  clf_close(&f);
}
