/* GCN: the plain-C reference against a double-precision forward written
 * independently (normalisation by hand, gradients by finite differences),
 * and its kernels on the OpenCL device against their references. The
 * model-independent checks (device step, work-group sizes, inference,
 * seams) run for every kind in test_models.c. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cl_fixture.h"
#include "nn/gcn.h"
#include "nn/nn_rng.h"
#include "nn/ref_nn.h"
#include "nn_check.h"
#include "nn_fixtures.h"

/* ---- double-precision forward ----------------------------------------------- */

static double gcn_loss_d(const hs_model_shape *sh, const double *prm, const hs_nn_batch *b,
                         const double *x0, float p, uint64_t seed, uint32_t epoch,
                         uint32_t batch) {
  int L = sh->n_layers;
  size_t n0 = (size_t)b->blocks[0].n_src * (size_t)sh->dims[0];
  double *in = malloc(sizeof(double) * n0);
  memcpy(in, x0, sizeof(double) * n0);
  double scale = 1.0 / (1.0 - (double)p);
  for (int l = 0; l < L; l++) {
    const hs_nn_block *blk = &b->blocks[l];
    int32_t di = sh->dims[l], dout = sh->dims[l + 1], ns = blk->n_src, nd = blk->n_dst;
    const double *W = prm + sh->w_off[l], *bias = prm + sh->b_off[l];
    /* Degrees with self loops: a dst's edges + 1; a src's naming edges + 1
     * when it is also a dst. */
    double *din = calloc((size_t)nd, sizeof(double)), *dsrc = calloc((size_t)ns, sizeof(double));
    for (int32_t i = 0; i < nd; i++) {
      din[i] = blk->row_ptr[i + 1] - blk->row_ptr[i] + 1;
      dsrc[i] += 1;
      for (int32_t e = blk->row_ptr[i]; e < blk->row_ptr[i + 1]; e++) dsrc[blk->col[e]] += 1;
    }
    double *y = malloc(sizeof(double) * (size_t)ns * (size_t)dout);
    for (int32_t j = 0; j < ns; j++)
      for (int32_t k = 0; k < dout; k++) {
        double acc = 0;
        for (int32_t q = 0; q < di; q++) acc += in[(size_t)j * di + q] * W[(size_t)q * dout + k];
        y[(size_t)j * dout + k] = acc;
      }
    double *out = malloc(sizeof(double) * (size_t)nd * (size_t)dout);
    for (int32_t i = 0; i < nd; i++)
      for (int32_t k = 0; k < dout; k++) {
        /* (A + I) entries over sqrt(d_dst d_src) */
        double z = y[(size_t)i * dout + k] / sqrt(din[i] * dsrc[i]);
        for (int32_t e = blk->row_ptr[i]; e < blk->row_ptr[i + 1]; e++) {
          int32_t j = blk->col[e];
          z += y[(size_t)j * dout + k] / sqrt(din[i] * dsrc[j]);
        }
        z += bias[k];
        if (l < L - 1) {
          z = z > 0 ? z : 0;
          uint32_t el = (uint32_t)((size_t)i * dout + k);
          if (p > 0.0f) z = hs_dropout_keep(seed, epoch, batch, (uint32_t)l, el, p) ? z * scale : 0.0;
        }
        out[(size_t)i * dout + k] = z;
      }
    free(din), free(dsrc), free(y), free(in);
    in = out;
  }
  double loss = mean_ce_d(in, b->blocks[L - 1].n_dst, sh->dims[L], b->labels);
  free(in);
  return loss;
}


static void gcn_model(hs_model *m, int n_layers, float dropout, uint64_t seed) {
  hs_model_cfg cfg;
  hs__model_cfg_defaults(&cfg);
  cfg.kind = HS_NN_GCN;
  cfg.n_layers = n_layers;
  cfg.in_dim = 3;
  cfg.hidden = 4;
  cfg.n_classes = 3;
  cfg.dropout = dropout;
  cfg.seed = seed;
  cr_assert_eq(hs__model_create(&cfg, m), HS_OK, "%s", hs_last_error());
  uint64_t s = seed;
  for (int l = 0; l < n_layers; l++)
    fx_fill(m->params + m->shape.b_off[l], (size_t)m->shape.dims[l + 1], &s, 0.2f);
}

/* Every parameter's and input's gradient against central differences of
 * the double forward. */

Test(gcn_ref, gradients_match_finite_differences) {
  static const int fans[][3] = {{3, 0, 0}, {3, 2, 0}, {2, 3, 2}};
  static const float drops[] = {0.0f, 0.3f, 0.25f};
  for (int L = 1; L <= 3; L++) {
    hs_model m;
    gcn_model(&m, L, drops[L - 1], (uint64_t)(40 + L));
    fx_batch fb;
    fx_batch_make(&fb, L, 4, fans[L - 1], 3, 3, (uint64_t)(50 + L));
    hs_nn_batch b = fx_batch_view(&fb);
    expect_fd_gradients(&m, &b, 4, 9, gcn_loss_d);
    fx_batch_free(&fb);
    hs__model_destroy(&m);
  }
}

/* The hand-made batch: zero-degree dsts, repeated neighbours, srcs no dst
 * names; its normalisation worked out by hand. */
Test(gcn_ref, hand_batch_normalisation_and_gradients) {
  hs_nn_block blocks[2];
  fx_hand_blocks(blocks);
  int32_t tp[10], td[10];
  float cd[6], cs[9];
  hs__nn_block_transpose(&blocks[0], tp, td);
  hs__ref_gcn_norm(&blocks[0], tp, cd, cs);
  /* block 0: rows {6}, {7,2}, {8}, {0,6,7}, {}, {1,1,8} */
  static const float want_cd[6] = {2, 3, 2, 4, 1, 4};
  /* named: 0:1 1:2 2:1 6:2 7:2 8:2 (+1 for the 6 dsts 0..5) */
  static const float want_cs[9] = {2, 3, 2, 1, 1, 1, 2, 2, 2};
  for (int i = 0; i < 6; i++) cr_expect_eq(cd[i], 1.0f / sqrtf(want_cd[i]), "cd[%d]", i);
  for (int j = 0; j < 9; j++) cr_expect_eq(cs[j], 1.0f / sqrtf(want_cs[j]), "cs[%d]", j);
  hs_model m;
  gcn_model(&m, 2, 0.0f, 3);
  float feat[27];
  uint64_t s = 77;
  fx_fill(feat, 27, &s, 1.0f);
  int32_t labels[3] = {1, 0, 2};
  hs_nn_batch b = {.n_layers = 2, .blocks = blocks, .feat = feat, .labels = labels};
  expect_fd_gradients(&m, &b, 0, 0, gcn_loss_d);
  hs__model_destroy(&m);
}

/* ---- kernels on the device ----------------------------------------------------- */

static const size_t wg_sizes[] = {0, 1, 3, 16, 64};
#define N_WG (sizeof wg_sizes / sizeof wg_sizes[0])

Test(gcn_cl, kernels_equal_their_references_bit_for_bit) {
  cl_fixture f;
  clf_open(&f);
  hs_kset ks;
  cr_assert_eq(hs__kset_create(&f.ctx, &f.dev, f.q, &hs__model_ops(HS_NN_GCN)->program, 0, &ks),
               HS_OK, "%s", hs_last_error());
  /* A block with a hub: src 0 named by every dst that has neighbours. */
  int fan[1] = {5};
  fx_batch fb;
  fx_batch_make(&fb, 1, 300, fan, 4, 3, 77);
  for (int32_t i = 0; i < fb.blocks[0].n_dst; i++)
    if (fb.rp[0][i + 1] > fb.rp[0][i]) fb.col[0][fb.rp[0][i]] = 0;
  const hs_nn_block *b = &fb.blocks[0];
  cl_int nd = b->n_dst, ns = b->n_src, ne = hs__nn_block_edges(b);
  int32_t *tp = malloc(4 * ((size_t)ns + 1)), *td = malloc(4 * (size_t)ne);
  float *cd = malloc(4 * (size_t)nd), *cs = malloc(4 * (size_t)ns);
  float *gcd = malloc(4 * (size_t)nd), *gcs = malloc(4 * (size_t)ns);
  hs__nn_block_transpose(b, tp, td);
  hs__ref_gcn_norm(b, tp, cd, cs);
  uint64_t s = 5;
  for (int di = 0; di < 2; di++) {
    cl_int d = di ? 37 : 5;
    size_t ny = (size_t)ns * (size_t)d, nz = (size_t)nd * (size_t)d;
    float *y = malloc(4 * ny), *dz = malloc(4 * nz), *wz = malloc(4 * nz), *gz = malloc(4 * nz);
    float *wdy = malloc(4 * ny), *gdy = malloc(4 * ny);
    fx_fill(y, ny, &s, 1.0f);
    fx_fill(dz, nz, &s, 1.0f);
    hs__ref_gcn_agg_fwd(b, y, d, cd, cs, wz);
    hs__ref_gcn_agg_bwd(b, tp, td, dz, d, cd, cs, wdy);
    for (size_t w = 0; w < N_WG; w++) {
      for (int i = 0; i < ks.n_kernels; i++) ks.wg[i] = wg_sizes[w];
      cl_mem drp = clf_upload(&f, b->row_ptr, 4 * ((size_t)nd + 1));
      cl_mem dcol = clf_upload(&f, b->col, 4 * (size_t)ne);
      cl_mem dtp = clf_upload(&f, tp, 4 * ((size_t)ns + 1)), dtd = clf_upload(&f, td, 4 * (size_t)ne);
      cl_mem dcd = clf_upload(&f, NULL, 4 * (size_t)nd), dcs = clf_upload(&f, NULL, 4 * (size_t)ns);
      cl_mem dy = clf_upload(&f, y, 4 * ny), ddz = clf_upload(&f, dz, 4 * nz);
      cl_mem dout = clf_upload(&f, NULL, 4 * nz), ddy = clf_upload(&f, NULL, 4 * ny);
      cr_assert_eq(hs__k_gcn_norm(&ks, drp, dtp, nd, ns, dcd, dcs), HS_OK, "%s", hs_last_error());
      cr_assert_eq(hs__k_gcn_agg_fwd(&ks, drp, dcol, dy, dcd, dcs, nd, d, dout), HS_OK);
      cr_assert_eq(hs__k_gcn_agg_bwd(&ks, dtp, dtd, ddz, dcd, dcs, nd, ns, d, ddy), HS_OK);
      clf_download(&f, dcd, gcd, 4 * (size_t)nd);
      clf_download(&f, dcs, gcs, 4 * (size_t)ns);
      clf_download(&f, dout, gz, 4 * nz);
      clf_download(&f, ddy, gdy, 4 * ny);
      cr_expect_arr_eq(gcd, cd, 4 * (size_t)nd, "cd, wg %zu", wg_sizes[w]);
      cr_expect_arr_eq(gcs, cs, 4 * (size_t)ns, "cs, wg %zu", wg_sizes[w]);
      cr_expect_arr_eq(gz, wz, 4 * nz, "aggregation, width %d, wg %zu", d, wg_sizes[w]);
      cr_expect_arr_eq(gdy, wdy, 4 * ny, "its backward, width %d, wg %zu", d, wg_sizes[w]);
      cl_mem all[] = {drp, dcol, dtp, dtd, dcd, dcs, dy, ddz, dout, ddy};
      for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) hs__mem_release(&all[i]);
    }
    free(y), free(dz), free(wz), free(gz), free(wdy), free(gdy);
  }
  free(tp), free(td), free(cd), free(cs), free(gcd), free(gcs);
  fx_batch_free(&fb);
  hs__kset_release(&ks);
  clf_close(&f);
}
