/* The CTR models' plain-C references: gradients against central finite
 * differences of the loss (dense parameters and embedding rows), the
 * pieces against direct formulas, batch validation. */
#include <criterion/criterion.h>
#include <math.h>

#include "ctr_fixtures.h"

static float loss_of(ctr_fix *f) {
  float *g = malloc(f->lay.n_params * sizeof *g);
  float *rg = malloc((size_t)f->b.n_unique * (size_t)f->lay.row * sizeof *rg);
  float loss;
  cr_assert_eq(hs__ctr_ref_gradients(&f->cfg, &f->lay, f->params, &f->b, g, rg, &loss), HS_OK,
               "%s", hs_last_error());
  free(g);
  free(rg);
  return loss;
}

/* Central difference of the loss in *x, against `analytic`. */
static void check_fd(ctr_fix *f, float *x, float analytic, const char *what, size_t i) {
  const float h = 1e-2f;
  float keep = *x;
  *x = keep + h;
  double lp = loss_of(f);
  *x = keep - h;
  double lm = loss_of(f);
  *x = keep;
  double fd = (lp - lm) / (2.0 * h);
  cr_assert(fabs(fd - analytic) <= 2e-3 + 2e-2 * fabs(analytic), "%s %zu: analytic %.6g, finite difference %.6g",
            what, i, (double)analytic, fd);
}

static void gradient_check(hs_ctr_model kind) {
  ctr_fix f;
  cf_make(&f, kind, 6, 3, 4, 9, (uint64_t)kind);
  size_t np = f.lay.n_params, nr = (size_t)f.b.n_unique * (size_t)f.lay.row;
  float *g = malloc(np * sizeof *g), *rg = malloc(nr * sizeof *rg), loss;
  cr_assert_eq(hs__ctr_ref_gradients(&f.cfg, &f.lay, f.params, &f.b, g, rg, &loss), HS_OK, "%s",
               hs_last_error());
  cr_assert(loss > 0 && isfinite(loss));
  for (size_t i = 0; i < np; i++) check_fd(&f, &f.params[i], g[i], "parameter", i);
  for (size_t i = 0; i < nr; i++) check_fd(&f, &f.rows[i], rg[i], "row value", i);
  free(g);
  free(rg);
  cf_free(&f);
}

Test(ctr_ref, lr_gradients) { gradient_check(HS_CTR_LR); }
Test(ctr_ref, deepfm_gradients) { gradient_check(HS_CTR_DEEPFM); }
Test(ctr_ref, dlrm_gradients) { gradient_check(HS_CTR_DLRM); }

Test(ctr_ref, head_and_interaction_match_their_formulas) {
  ctr_fix f;
  cf_make(&f, HS_CTR_DEEPFM, 4, 3, 4, 7, 11);
  float logit[4];
  hs__ctr_ref_head(f.dense, f.rows, f.idx, 4, 5, 3, 5, 4, 4, f.params + f.lay.lin_w, NULL, logit);
  for (int b = 0; b < 4; b++) {
    double want = f.params[f.lay.lin_w + 5];
    for (int j = 0; j < 5; j++) want += (double)f.dense[b * 5 + j] * f.params[f.lay.lin_w + j];
    double fm = 0;
    for (int p = 0; p < 3; p++) {
      const float *ep = f.rows + f.idx[b * 3 + p] * 5;
      want += ep[4];
      for (int q = p + 1; q < 3; q++) {
        const float *eq = f.rows + f.idx[b * 3 + q] * 5;
        for (int k = 0; k < 4; k++) fm += (double)ep[k] * eq[k];
      }
    }
    want += fm;
    cr_assert(fabs(logit[b] - want) < 1e-5, "example %d: %g vs %g", b, (double)logit[b], want);
  }
  cf_free(&f);
  /* Interaction: z first, then every pair (i > j). */
  float z[2 * 2] = {1, 2, 3, 4}, rows[3 * 2] = {1, 0, 0, 1, 2, 2};
  int32_t idx[2 * 2] = {0, 1, 2, 0};
  float out[2 * (2 + 3)];
  hs__ctr_ref_interact(z, rows, idx, 2, 2, 2, out);
  /* Example 0: v = z(1,2), e1 (1,0), e2 (0,1): <e1,z> 1, <e2,z> 2, <e2,e1> 0. */
  float want0[5] = {1, 2, 1, 2, 0};
  float want1[5] = {3, 4, 6 + 8, 3, 2};
  for (int k = 0; k < 5; k++) {
    cr_assert_eq(out[k], want0[k], "%d", k);
    cr_assert_eq(out[5 + k], want1[k], "%d", k);
  }
}

Test(ctr_ref, loss_is_stable_for_large_logits) {
  float logit[3] = {80.0f, -80.0f, 0.0f}, y[3] = {0, 0, 1}, l[3], d[3];
  hs__ctr_ref_loss(logit, y, 3, l, d);
  cr_assert_float_eq(l[0], 80.0f, 1e-4);
  cr_assert(l[1] >= 0 && l[1] < 1e-30f + 1e-6f);
  cr_assert_float_eq(l[2], (float)log(2.0), 1e-6);
  cr_assert_float_eq(d[0], 1.0f / 3.0f, 1e-6);
  cr_assert_float_eq(d[2], -0.5f / 3.0f, 1e-6);
}

Test(ctr_ref, bad_batches_are_refused) {
  ctr_fix f;
  cf_make(&f, HS_CTR_DLRM, 4, 3, 4, 6, 3);
  float logits[4];
  f.idx[5] = 6;
  cr_assert_eq(hs__ctr_ref_forward(&f.cfg, &f.lay, f.params, &f.b, logits), HS_ERR_FORMAT);
  cr_assert(strstr(hs_last_error(), "occurrence 5"), "%s", hs_last_error());
  f.idx[5] = 0;
  cr_assert_eq(hs__ctr_ref_forward(&f.cfg, &f.lay, f.params, &f.b, logits), HS_ERR_FORMAT,
               "the occurrence lists no longer match");
  cf_free(&f);
  hs_ctr_model_cfg c;
  hs_ctr_layout lay;
  hs__ctr_model_cfg_defaults(HS_CTR_DLRM, &c);
  c.dim = 0;
  cr_assert_eq(hs__ctr_layout(&c, &lay), HS_ERR_INVALID_ARG);
  hs__ctr_model_cfg_defaults(HS_CTR_DLRM, &c);
  cr_assert_eq(hs__ctr_layout(&c, &lay), HS_OK);
  cr_assert_eq(lay.deep_in, 16 + 26 * 27 / 2);
  cr_assert_eq(lay.row, 16);
}
