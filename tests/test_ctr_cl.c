/* The CTR device trainer against the plain-C reference: logits,
 * probabilities, dense and per-row gradients, the loss and the dense
 * optimizer step, for LR, DeepFM and DLRM; repeat runs give the same bits. */
#include <criterion/criterion.h>
#include <math.h>

#include "cl_fixture.h"
#include "ctr/ctr_trainer.h"
#include "ctr_fixtures.h"
#include "nn/ref_nn.h"

static cl_fixture clf;

static void setup(void) { clf_open(&clf); }
static void teardown(void) { clf_close(&clf); }

TestSuite(ctr_cl, .init = setup, .fini = teardown, .timeout = 600);

static hs_ctr_trainer *make_trainer(const ctr_fix *f) {
  hs_ctr_trainer *t;
  cr_assert_eq(hs__ctr_trainer_create(&clf.ctx, &clf.dev, clf.q, &f->cfg, f->params, NULL, &t),
               HS_OK, "%s", hs_last_error());
  return t;
}

/* |a - b| small against the scale of the values (GEMM providers may block
 * sums differently from the reference); `exact` asks for the same bits. */
static void expect_close(const float *a, const float *b, size_t n, bool exact, const char *what) {
  double scale = 0;
  for (size_t i = 0; i < n; i++) scale = fmax(scale, fabs(b[i]));
  for (size_t i = 0; i < n; i++) {
    if (exact)
      cr_assert_eq(memcmp(&a[i], &b[i], 4), 0, "%s %zu: %.9g vs %.9g", what, i, (double)a[i],
                   (double)b[i]);
    else
      cr_assert(fabs(a[i] - b[i]) <= 1e-5 * scale + 1e-6 * fabs(b[i]) + 1e-9,
                "%s %zu: %.9g vs reference %.9g", what, i, (double)a[i], (double)b[i]);
  }
}

static void compare(hs_ctr_model kind, int32_t n, int32_t fields, int32_t dim, int32_t unique) {
  ctr_fix f;
  cf_make(&f, kind, n, fields, dim, unique, 5 + (uint64_t)kind);
  size_t np = f.lay.n_params, nr = (size_t)unique * (size_t)f.lay.row;
  float *g = malloc(np * 4), *rg = malloc(nr * 4), *dg = malloc(np * 4), *drg = malloc(nr * 4);
  float loss, dloss;
  cr_assert_eq(hs__ctr_ref_gradients(&f.cfg, &f.lay, f.params, &f.b, g, rg, &loss), HS_OK);
  hs_ctr_trainer *t = make_trainer(&f);
  cr_assert_eq(hs__ctr_trainer_upload(t, &f.b, false), HS_OK, "%s", hs_last_error());
  cr_assert_eq(hs__ctr_trainer_gradients(t, dg, drg, &dloss), HS_OK, "%s", hs_last_error());
  /* Sums run in the reference's order, but the device's exp (the
   * sigmoid) may round its last bit unlike the C library's, and GEMM
   * providers block their sums: close, not equal. */
  expect_close(dg, g, np, false, "dense gradient");
  expect_close(drg, rg, nr, false, "row gradient");
  cr_assert(fabs(dloss - loss) <= 1e-6 * fabs(loss), "loss %g vs %g", (double)dloss, (double)loss);
  /* Probabilities. */
  float *logit = malloc((size_t)n * 4), *prob = malloc((size_t)n * 4);
  cr_assert_eq(hs__ctr_ref_forward(&f.cfg, &f.lay, f.params, &f.b, logit), HS_OK);
  cr_assert_eq(hs__ctr_trainer_predict(t, prob), HS_OK, "%s", hs_last_error());
  for (int32_t i = 0; i < n; i++) {
    float want = 1.0f / (1.0f + expf(-logit[i]));
    cr_assert(fabsf(prob[i] - want) <= 1e-5f, "probability %d: %g vs %g", i, (double)prob[i],
              (double)want);
  }
  /* One step: the dense Adam update of the reference on the device's
   * gradients, and the row gradients read back. */
  float *p1 = malloc(np * 4), *m = calloc(np, 4), *v = calloc(np, 4), *row_out = malloc(nr * 4);
  memcpy(p1, f.params, np * 4);
  hs_optim_coef k;
  hs__optim_coef(&f.cfg.optim, 1, &k);
  hs__ref_optim(f.cfg.optim.kind, &k, np, p1, dg, m, v);
  cl_event ev;
  cr_assert_eq(hs__ctr_trainer_step(t, row_out, &ev), HS_OK, "%s", hs_last_error());
  cr_assert_eq(hs__events_wait(&ev, 1), HS_OK);
  hs__events_release(&ev, 1);
  expect_close(row_out, drg, nr, true, "row gradient of the step");
  float *dp = malloc(np * 4);
  uint64_t step;
  cr_assert_eq(hs__ctr_trainer_read_state(t, dp, NULL, NULL, &step), HS_OK);
  cr_assert_eq(step, 1);
  expect_close(dp, p1, np, true, "parameters after one step");
  hs__ctr_trainer_destroy(t);
  /* Another trainer, the same batch: the same bits. */
  t = make_trainer(&f);
  cr_assert_eq(hs__ctr_trainer_upload(t, &f.b, false), HS_OK);
  float *dg2 = malloc(np * 4), *drg2 = malloc(nr * 4);
  cr_assert_eq(hs__ctr_trainer_gradients(t, dg2, drg2, &dloss), HS_OK);
  cr_assert_eq(memcmp(dg, dg2, np * 4), 0);
  cr_assert_eq(memcmp(drg, drg2, nr * 4), 0);
  hs__ctr_trainer_destroy(t);
  free(g), free(rg), free(dg), free(drg), free(dg2), free(drg2), free(logit), free(prob);
  free(p1), free(m), free(v), free(row_out), free(dp);
  cf_free(&f);
}

/* A DeepFM batch whose uniques are each of one field (the store's), as a
 * CPU trainer sums its row gradients by ranges of fields: the gradients
 * and a step's parameters of the lists' kernel, bit for bit, on 1, 2, 5
 * and 26 work-items, and close to the reference. Field f's occurrences
 * draw from uniques f, f + F, ... (interleaved across fields). */
Test(ctr_cl, deepfm_rows_by_fields_give_the_bits_of_the_lists) {
  const int32_t n = 300, F = 26, D = 8, per = 9, U = F * per;
  ctr_fix f;
  cf_make(&f, HS_CTR_DEEPFM, n, F, D, U, 11);
  uint64_t s = 31;
  int32_t occ = n * F;
  for (int32_t o = 0; o < occ; o++) {
    float r = cf_uniform(&s);
    f.idx[o] = o % F + F * ((int32_t)(r * r * (float)per) % per);
  }
  cf_lists(f.idx, occ, U, f.occ_ptr, f.occ);
  f.b.one_field = true;
  size_t np = f.lay.n_params, nr = (size_t)U * (size_t)f.lay.row;
  float *g = malloc(np * 4), *rg = malloc(nr * 4), loss;
  cr_assert_eq(hs__ctr_ref_gradients(&f.cfg, &f.lay, f.params, &f.b, g, rg, &loss), HS_OK);
  const int parts[] = {-1, 1, 2, 5, 26};
  float *dg[5], *drg[5], *step_rows[5], *step_params[5];
  for (int i = 0; i < 5; i++) {
    hs_ctr_trainer_opts o = {.rowgrad_parts = parts[i]};
    hs_ctr_trainer *t;
    cr_assert_eq(hs__ctr_trainer_create(&clf.ctx, &clf.dev, clf.q, &f.cfg, f.params, &o, &t), HS_OK,
                 "%s", hs_last_error());
    dg[i] = malloc(np * 4), drg[i] = malloc(nr * 4);
    step_rows[i] = malloc(nr * 4), step_params[i] = malloc(np * 4);
    float dloss;
    cr_assert_eq(hs__ctr_trainer_upload(t, &f.b, false), HS_OK, "%s", hs_last_error());
    cr_assert_eq(hs__ctr_trainer_gradients(t, dg[i], drg[i], &dloss), HS_OK, "%s", hs_last_error());
    expect_close(drg[i], rg, nr, false, "row gradient");
    cl_event ev;
    cr_assert_eq(hs__ctr_trainer_step(t, step_rows[i], &ev), HS_OK, "%s", hs_last_error());
    cr_assert_eq(hs__events_wait(&ev, 1), HS_OK);
    hs__events_release(&ev, 1);
    cr_assert_eq(hs__ctr_trainer_read_state(t, step_params[i], NULL, NULL, NULL), HS_OK);
    hs__ctr_trainer_destroy(t);
    if (i == 0) continue;
    cr_assert_eq(memcmp(dg[i], dg[0], np * 4), 0, "dense gradients, %d parts", parts[i]);
    cr_assert_eq(memcmp(drg[i], drg[0], nr * 4), 0, "row gradients, %d parts", parts[i]);
    cr_assert_eq(memcmp(step_rows[i], step_rows[0], nr * 4), 0, "the step's rows, %d parts", parts[i]);
    cr_assert_eq(memcmp(step_params[i], step_params[0], np * 4), 0, "parameters, %d parts", parts[i]);
  }
  /* Without occurrence lists (what the store's lookups skip for such a
   * trainer): the same bits by fields; refused where the lists are summed
   * along, and half of them refused as a batch. */
  hs_ctr_batch bare = f.b;
  bare.occ_ptr = NULL, bare.occ = NULL;
  for (int forced = 0; forced < 2; forced++) {
    hs_ctr_trainer_opts o = {.rowgrad_parts = forced ? -1 : 2};
    hs_ctr_trainer *t;
    cr_assert_eq(hs__ctr_trainer_create(&clf.ctx, &clf.dev, clf.q, &f.cfg, f.params, &o, &t), HS_OK,
                 "%s", hs_last_error());
    cr_assert_eq(hs__ctr_trainer_needs_occ(t), forced == 1);
    cr_assert_eq(hs__ctr_trainer_upload(t, &bare, false), HS_OK, "%s", hs_last_error());
    float dloss, *bg = malloc(np * 4), *brg = malloc(nr * 4);
    hs_status st = hs__ctr_trainer_gradients(t, bg, brg, &dloss);
    if (forced) {
      cr_assert_eq(st, HS_ERR_STATE, "a trainer that sums along the lists refuses a batch without");
    } else {
      cr_assert_eq(st, HS_OK, "%s", hs_last_error());
      cr_assert_eq(memcmp(bg, dg[0], np * 4), 0);
      cr_assert_eq(memcmp(brg, drg[0], nr * 4), 0);
    }
    free(bg), free(brg);
    hs__ctr_trainer_destroy(t);
  }
  bare.occ = f.occ;
  cr_assert_eq(hs__ctr_batch_validate(&f.lay, &f.cfg, &bare), HS_ERR_INVALID_ARG);
  for (int i = 0; i < 5; i++) free(dg[i]), free(drg[i]), free(step_rows[i]), free(step_params[i]);
  free(g), free(rg);
  cf_free(&f);
}

Test(ctr_cl, lr_matches_reference) { compare(HS_CTR_LR, 37, 5, 1, 60); }
Test(ctr_cl, deepfm_matches_reference) { compare(HS_CTR_DEEPFM, 300, 6, 8, 500); }
/* Dims whose columns take a float4 (4), or a float8, a float4 and a rest
 * (13), in the deep input and the FM gradient. */
Test(ctr_cl, deepfm_small_dims_match_reference) {
  compare(HS_CTR_DEEPFM, 120, 5, 4, 200);
  compare(HS_CTR_DEEPFM, 120, 5, 13, 200);
}
Test(ctr_cl, dlrm_matches_reference) { compare(HS_CTR_DLRM, 300, 6, 8, 500); }
/* More rows than a column-sum chunk, the Criteo field count. */
Test(ctr_cl, dlrm_full_width) { compare(HS_CTR_DLRM, 600, 26, 16, 3000); }

Test(ctr_cl, bad_batch_refused) {
  ctr_fix f;
  cf_make(&f, HS_CTR_DEEPFM, 10, 3, 4, 12, 1);
  hs_ctr_trainer *t = make_trainer(&f);
  f.idx[7] = -1;
  cr_assert_eq(hs__ctr_trainer_upload(t, &f.b, false), HS_ERR_FORMAT);
  float p[10];
  cr_assert_eq(hs__ctr_trainer_predict(t, p), HS_ERR_STATE);
  hs__ctr_trainer_destroy(t);
  cf_free(&f);
}
/* Rows wider than one chunk of the interaction gradient's accumulators
 * (16): a full chunk and a partial one. */
Test(ctr_cl, dlrm_rows_wider_than_a_chunk) { compare(HS_CTR_DLRM, 200, 5, 20, 400); }

/* n floats drawn uniformly from [-1, 1), and n row indices below n_rows,
 * from the test's stream s. */
static float *random_floats(size_t n, uint64_t *s) {
  float *x = malloc(4 * n);
  for (size_t i = 0; i < n; i++) x[i] = 2.0f * cf_uniform(s) - 1.0f;
  return x;
}

static int32_t *random_rows(size_t n, int32_t n_rows, uint64_t *s) {
  int32_t *x = malloc(4 * n);
  for (size_t i = 0; i < n; i++) x[i] = (int32_t)(cf_uniform(s) * (float)n_rows) % n_rows;
  return x;
}

/* The interaction kernels alone, bit for bit against the reference, over
 * field counts (1, 5, 26), widths (1; 4 and 8: one float4, one float8; 12:
 * both; 16: one float16; 20: one and a float4; 29: every block and a rest;
 * 33: a forward dot longer than one transposed chunk of 16 columns) and
 * local sizes. */
Test(ctr_cl, interaction_kernels_equal_the_reference_bit_for_bit) {
  static const int32_t Fs[] = {1, 5, 26}, Ds[] = {1, 4, 8, 12, 16, 20, 29, 33};
  static const size_t wgs[] = {0, 1, 7, 64};
  const int32_t n = 37, n_rows = 50;
  uint64_t s = 11;
  for (size_t fi = 0; fi < sizeof Fs / sizeof Fs[0]; fi++) {
    for (size_t di = 0; di < sizeof Ds / sizeof Ds[0]; di++) {
      int32_t F = Fs[fi], D = Ds[di], width = D + F * (F + 1) / 2;
      ctr_fix f;
      cf_make(&f, HS_CTR_DLRM, n, F, D, n_rows, 3);
      size_t nz = (size_t)n * D, nr = (size_t)n_rows * D, no = (size_t)n * width;
      size_t ne = (size_t)n * F * D;
      float *z = random_floats(nz, &s), *rows = random_floats(nr, &s);
      float *dout = random_floats(no, &s);
      int32_t *idx = random_rows((size_t)n * F, n_rows, &s);
      float *want = malloc(4 * no), *got = malloc(4 * no), *want_dz = malloc(4 * nz);
      float *got_dz = malloc(4 * nz), *want_dE = malloc(4 * ne), *got_dE = malloc(4 * ne);
      hs__ctr_ref_interact(z, rows, idx, n, F, D, want);
      hs__ctr_ref_interact_bwd(z, rows, idx, n, F, D, dout, want_dz, want_dE);
      for (size_t w = 0; w < sizeof wgs / sizeof wgs[0]; w++) {
        hs_ctr_trainer_opts o = {.wg = wgs[w]};
        hs_ctr_trainer *t;
        cr_assert_eq(hs__ctr_trainer_create(&clf.ctx, &clf.dev, clf.q, &f.cfg, f.params, &o, &t),
                     HS_OK, "%s", hs_last_error());
        cl_mem mz = clf_upload(&clf, z, 4 * nz), mr = clf_upload(&clf, rows, 4 * nr);
        cl_mem mi = clf_upload(&clf, idx, 4 * (size_t)n * F), md = clf_upload(&clf, dout, 4 * no);
        cl_mem mo = clf_upload(&clf, NULL, 4 * no), mdz = clf_upload(&clf, NULL, 4 * nz);
        cl_mem mdE = clf_upload(&clf, NULL, 4 * ne);
        cr_assert_eq(hs__ctr_trainer_run_interact(t, mz, mr, mi, F, D, n, mo), HS_OK, "%s",
                     hs_last_error());
        cr_assert_eq(hs__ctr_trainer_run_interact_bwd(t, mz, mr, mi, F, D, md, n, mdz, mdE),
                     HS_OK, "%s", hs_last_error());
        clf_download(&clf, mo, got, 4 * no);
        clf_download(&clf, mdz, got_dz, 4 * nz);
        clf_download(&clf, mdE, got_dE, 4 * ne);
        expect_close(got, want, no, true, "interaction");
        expect_close(got_dz, want_dz, nz, true, "dz");
        expect_close(got_dE, want_dE, ne, true, "dE");
        hs__mem_release(&mz), hs__mem_release(&mr), hs__mem_release(&mi), hs__mem_release(&md);
        hs__mem_release(&mo), hs__mem_release(&mdz), hs__mem_release(&mdE);
        hs__ctr_trainer_destroy(t);
      }
      free(z), free(rows), free(dout), free(want), free(got), free(want_dz), free(got_dz);
      free(want_dE), free(got_dE), free(idx);
      cf_free(&f);
    }
  }
}

/* The logit head alone, bit for bit against the reference: LR's (one
 * column) and DeepFM's (its FM over dim columns, the deep part's output
 * added), over batch sizes that leave 0 to 3 examples in the last
 * work-item's four, field counts, dims and local sizes. */
Test(ctr_cl, head_kernel_equals_the_reference_bit_for_bit) {
  static const int32_t ns[] = {1, 2, 3, 4, 5, 37}, Fs[] = {1, 5, 26}, Ds[] = {0, 1, 4, 16};
  static const size_t wgs[] = {0, 1, 7, 64};
  const int32_t nd = 13, n_rows = 50;
  uint64_t s = 23;
  ctr_fix f;
  cf_make(&f, HS_CTR_DEEPFM, 8, 5, 4, n_rows, 3);
  for (size_t w = 0; w < sizeof wgs / sizeof wgs[0]; w++) {
    hs_ctr_trainer_opts o = {.wg = wgs[w]};
    hs_ctr_trainer *t;
    cr_assert_eq(hs__ctr_trainer_create(&clf.ctx, &clf.dev, clf.q, &f.cfg, f.params, &o, &t),
                 HS_OK, "%s", hs_last_error());
    for (size_t ni = 0; ni < sizeof ns / sizeof ns[0]; ni++)
      for (size_t fi = 0; fi < sizeof Fs / sizeof Fs[0]; fi++)
        for (size_t di = 0; di < sizeof Ds / sizeof Ds[0]; di++)
          for (int deep = 0; deep < 2; deep++) {
            int32_t n = ns[ni], F = Fs[fi], D = Ds[di], R = D + 1, col = D;
            float *dense = random_floats((size_t)n * nd, &s);
            float *rows = random_floats((size_t)n_rows * R, &s), *wc = random_floats(nd + 1, &s);
            float *dv = random_floats((size_t)n, &s);
            int32_t *idx = random_rows((size_t)n * F, n_rows, &s);
            float *want = malloc(4 * (size_t)n), *got = malloc(4 * (size_t)n);
            hs__ctr_ref_head(dense, rows, idx, n, nd, F, R, col, D, wc, deep ? dv : NULL, want);
            cl_mem mx = clf_upload(&clf, dense, 4 * (size_t)n * nd);
            cl_mem mr = clf_upload(&clf, rows, 4 * (size_t)n_rows * R);
            cl_mem mi = clf_upload(&clf, idx, 4 * (size_t)n * F);
            cl_mem mw = clf_upload(&clf, wc, 4 * (nd + 1)), md = clf_upload(&clf, dv, 4 * (size_t)n);
            cl_mem ml = clf_upload(&clf, NULL, 4 * (size_t)n);
            /* DeepFM's field sums kept on every other run (the logits the
             * same either way). */
            size_t ns_ = (size_t)n * (size_t)(D ? D : 1);
            bool keep = D > 0 && deep;
            cl_mem ms = keep ? clf_upload(&clf, NULL, 4 * ns_) : NULL;
            cr_assert_eq(hs__ctr_trainer_run_head(t, mx, nd, mr, R, mi, F, col, D, mw,
                                                  deep ? md : NULL, n, ml, ms),
                         HS_OK, "%s", hs_last_error());
            clf_download(&clf, ml, got, 4 * (size_t)n);
            expect_close(got, want, (size_t)n, true, "head");
            if (keep) {
              float *want_s = malloc(4 * ns_), *got_s = malloc(4 * ns_);
              hs__ctr_ref_fm_sums(rows, R, idx, n, F, D, want_s);
              clf_download(&clf, ms, got_s, 4 * ns_);
              expect_close(got_s, want_s, ns_, true, "field sums");
              free(want_s), free(got_s);
              hs__mem_release(&ms);
            }
            hs__mem_release(&mx), hs__mem_release(&mr), hs__mem_release(&mi);
            hs__mem_release(&mw), hs__mem_release(&md), hs__mem_release(&ml);
            free(dense), free(rows), free(wc), free(dv), free(idx), free(want), free(got);
          }
    hs__ctr_trainer_destroy(t);
  }
  cf_free(&f);
}

/* DeepFM's gradient of each unique row, bit for bit against the
 * reference's per-occurrence gradients (hs__ctr_ref_fm_bwd) summed in list
 * order (hs__ctr_ref_segment_sum), over field counts (1, 5, 26), dims (1;
 * 4, 8, 12: a float4, a float8, both; 13: both and a rest; 16: one
 * float16; 29: every block and a rest) and local sizes; rows with no
 * occurrence, one and many. */
Test(ctr_cl, fm_row_gradient_kernel_equals_the_reference_bit_for_bit) {
  static const int32_t Fs[] = {1, 5, 26}, Ds[] = {1, 4, 8, 12, 13, 16, 29};
  static const size_t wgs[] = {0, 1, 7, 64};
  const int32_t n = 37, n_rows = 50;
  uint64_t s = 17;
  for (size_t fi = 0; fi < sizeof Fs / sizeof Fs[0]; fi++) {
    for (size_t di = 0; di < sizeof Ds / sizeof Ds[0]; di++) {
      int32_t F = Fs[fi], D = Ds[di], R = D + 1, w = F * D + 13, n_occ = n * F;
      ctr_fix f;
      cf_make(&f, HS_CTR_DEEPFM, n, F, D, n_rows, 3);
      size_t nr = (size_t)n_rows * R, nd = (size_t)n * w, ne = (size_t)n_occ * R;
      float *rows = random_floats(nr, &s), *dlogit = random_floats((size_t)n, &s);
      float *d_in = random_floats(nd, &s);
      /* Rows 0..n_rows - 1 drawn from the first 40: the last ten have no
       * occurrence. */
      int32_t *idx = random_rows((size_t)n_occ, 40, &s);
      int32_t *occ_ptr = malloc(4 * ((size_t)n_rows + 1)), *occ = malloc(4 * (size_t)n_occ);
      cf_lists(idx, n_occ, n_rows, occ_ptr, occ);
      float *fs = malloc(4 * (size_t)n * D), *dE = malloc(4 * ne);
      float *want = malloc(4 * nr), *got = malloc(4 * nr);
      hs__ctr_ref_fm_sums(rows, R, idx, n, F, D, fs);
      hs__ctr_ref_fm_bwd(rows, R, idx, n, F, D, dlogit, d_in, w, dE);
      hs__ctr_ref_segment_sum(dE, occ_ptr, occ, n_rows, R, want);
      for (size_t k = 0; k < sizeof wgs / sizeof wgs[0]; k++) {
        hs_ctr_trainer_opts o = {.wg = wgs[k]};
        hs_ctr_trainer *t;
        cr_assert_eq(hs__ctr_trainer_create(&clf.ctx, &clf.dev, clf.q, &f.cfg, f.params, &o, &t),
                     HS_OK, "%s", hs_last_error());
        cl_mem mr = clf_upload(&clf, rows, 4 * nr), ms = clf_upload(&clf, fs, 4 * (size_t)n * D);
        cl_mem mg = clf_upload(&clf, dlogit, 4 * (size_t)n), md = clf_upload(&clf, d_in, 4 * nd);
        cl_mem mp = clf_upload(&clf, occ_ptr, 4 * ((size_t)n_rows + 1));
        cl_mem mo = clf_upload(&clf, occ, 4 * (size_t)n_occ), mu = clf_upload(&clf, NULL, 4 * nr);
        cr_assert_eq(hs__ctr_trainer_run_fm_rowgrad(t, mr, R, ms, D, mg, md, w, F, mp, mo, n_rows,
                                                    mu),
                     HS_OK, "%s", hs_last_error());
        clf_download(&clf, mu, got, 4 * nr);
        expect_close(got, want, nr, true, "DeepFM row gradient");
        hs__mem_release(&mr), hs__mem_release(&ms), hs__mem_release(&mg), hs__mem_release(&md);
        hs__mem_release(&mp), hs__mem_release(&mo), hs__mem_release(&mu);
        hs__ctr_trainer_destroy(t);
      }
      free(rows), free(dlogit), free(d_in), free(want), free(got), free(idx);
      free(occ_ptr), free(occ), free(fs), free(dE);
      cf_free(&f);
    }
  }
}

/* The same gradients by ranges of fields (what a CPU trainer runs for the
 * store's batches, whose uniques are each of one field), bit for bit
 * against the reference and the lists' kernel: field f's occurrences draw
 * from its own uniques f, f + F, f + 2F (interleaved with the other
 * fields', the first skewed to repeat), the last four rows have none;
 * 1, 2, 3 and F parts (a part of one field, parts of unequal widths);
 * the dims of the lists' test. */
Test(ctr_cl, fm_row_gradient_by_fields_equals_the_reference_bit_for_bit) {
  static const int32_t Fs[] = {1, 5, 26}, Ds[] = {1, 4, 8, 12, 13, 16, 29};
  const int32_t n = 37;
  uint64_t s = 29;
  for (size_t fi = 0; fi < sizeof Fs / sizeof Fs[0]; fi++) {
    for (size_t di = 0; di < sizeof Ds / sizeof Ds[0]; di++) {
      int32_t F = Fs[fi], D = Ds[di], R = D + 1, w = F * D + 13, n_occ = n * F;
      int32_t n_rows = 3 * F + 4;
      ctr_fix f;
      cf_make(&f, HS_CTR_DEEPFM, n, F, D, n_rows, 3);
      size_t nr = (size_t)n_rows * R, nd = (size_t)n * w, ne = (size_t)n_occ * R;
      float *rows = random_floats(nr, &s), *dlogit = random_floats((size_t)n, &s);
      float *d_in = random_floats(nd, &s);
      int32_t *idx = malloc(4 * (size_t)n_occ);
      for (int32_t o = 0; o < n_occ; o++) {
        float r = cf_uniform(&s);
        idx[o] = o % F + F * (r < 0.6f ? 0 : r < 0.9f ? 1 : 2);
      }
      int32_t *occ_ptr = malloc(4 * ((size_t)n_rows + 1)), *occ = malloc(4 * (size_t)n_occ);
      cf_lists(idx, n_occ, n_rows, occ_ptr, occ);
      float *fs = malloc(4 * (size_t)n * D), *dE = malloc(4 * ne);
      float *want = malloc(4 * nr), *lists = malloc(4 * nr), *got = malloc(4 * nr);
      hs__ctr_ref_fm_sums(rows, R, idx, n, F, D, fs);
      hs__ctr_ref_fm_bwd(rows, R, idx, n, F, D, dlogit, d_in, w, dE);
      hs__ctr_ref_segment_sum(dE, occ_ptr, occ, n_rows, R, want);
      hs_ctr_trainer *t;
      cr_assert_eq(hs__ctr_trainer_create(&clf.ctx, &clf.dev, clf.q, &f.cfg, f.params, NULL, &t),
                   HS_OK, "%s", hs_last_error());
      cl_mem mr = clf_upload(&clf, rows, 4 * nr), ms = clf_upload(&clf, fs, 4 * (size_t)n * D);
      cl_mem mg = clf_upload(&clf, dlogit, 4 * (size_t)n), md = clf_upload(&clf, d_in, 4 * nd);
      cl_mem mi = clf_upload(&clf, idx, 4 * (size_t)n_occ);
      cl_mem mp = clf_upload(&clf, occ_ptr, 4 * ((size_t)n_rows + 1));
      cl_mem mo = clf_upload(&clf, occ, 4 * (size_t)n_occ), mu = clf_upload(&clf, NULL, 4 * nr);
      cr_assert_eq(hs__ctr_trainer_run_fm_rowgrad(t, mr, R, ms, D, mg, md, w, F, mp, mo, n_rows, mu),
                   HS_OK, "%s", hs_last_error());
      clf_download(&clf, mu, lists, 4 * nr);
      expect_close(lists, want, nr, true, "DeepFM row gradient (lists)");
      const int32_t parts[] = {1, 2, 3, F};
      for (size_t pi = 0; pi < sizeof parts / sizeof parts[0]; pi++) {
        if (parts[pi] > F) continue;
        /* Whatever `out` held before: the kernel's caller zeroes it. */
        float *junk = random_floats(nr, &s);
        cr_assert_eq(hs__mem_write(clf.q, mu, true, 0, 4 * nr, junk, 0, NULL, NULL), HS_OK);
        free(junk);
        cr_assert_eq(hs__ctr_trainer_run_fm_rowgrad_fields(t, mr, R, ms, D, mg, md, w, F, mi, n,
                                                           n_rows, parts[pi], mu),
                     HS_OK, "%s", hs_last_error());
        clf_download(&clf, mu, got, 4 * nr);
        expect_close(got, want, nr, true, "DeepFM row gradient (fields)");
        expect_close(got, lists, nr, true, "DeepFM row gradient (fields against lists)");
      }
      cr_expect_eq(hs__ctr_trainer_run_fm_rowgrad_fields(t, mr, R, ms, D, mg, md, w, F, mi, n,
                                                         n_rows, F + 1, mu),
                   HS_ERR_INVALID_ARG, "more parts than fields are refused");
      hs__mem_release(&mr), hs__mem_release(&ms), hs__mem_release(&mg), hs__mem_release(&md);
      hs__mem_release(&mi), hs__mem_release(&mp), hs__mem_release(&mo), hs__mem_release(&mu);
      hs__ctr_trainer_destroy(t);
      free(rows), free(dlogit), free(d_in), free(want), free(lists), free(got), free(idx);
      free(occ_ptr), free(occ), free(fs), free(dE);
      cf_free(&f);
    }
  }
}

/* A hidden layer's ReLU backward and its bias gradient in one pass, bit
 * for bit against hs__ref_act_bwd then hs__ref_colsum: batches within one
 * chunk of rows, at its edge and across several (1, 255, 256, 257, 700),
 * widths of a rest only (1, 7), whole vectors (8), both (13), a block of
 * 64 columns and both (75), blocks alone (256);
 * outputs zero, negative, -0.0 and positive. */
Test(ctr_cl, relu_backward_with_column_sums_equals_the_reference_bit_for_bit) {
  static const int32_t ns[] = {1, 255, 256, 257, 700}, ds[] = {1, 7, 8, 13, 75, 256};
  uint64_t s = 37;
  ctr_fix f;
  cf_make(&f, HS_CTR_DEEPFM, 8, 3, 4, 12, 1);
  hs_ctr_trainer *t;
  cr_assert_eq(hs__ctr_trainer_create(&clf.ctx, &clf.dev, clf.q, &f.cfg, f.params, NULL, &t), HS_OK,
               "%s", hs_last_error());
  for (size_t ni = 0; ni < sizeof ns / sizeof ns[0]; ni++)
    for (size_t di = 0; di < sizeof ds / sizeof ds[0]; di++) {
      int32_t n = ns[ni], d = ds[di];
      size_t e = (size_t)n * (size_t)d;
      float *h = random_floats(e, &s), *dh = random_floats(e, &s), *got = malloc(4 * e);
      for (size_t i = 0; i < e; i += 5) h[i] = i % 2 ? -0.0f : 0.0f;
      float *want_sum = malloc(4 * (size_t)d), *got_sum = malloc(4 * (size_t)d);
      cl_mem mh = clf_upload(&clf, h, 4 * e), md = clf_upload(&clf, dh, 4 * e);
      cl_mem mo = clf_upload(&clf, NULL, 4 * (size_t)d);
      hs__ref_act_bwd(h, n, d, 1.0f, dh);
      hs__ref_colsum(dh, n, d, want_sum);
      cr_assert_eq(hs__ctr_trainer_run_relu_bwd_colsum(t, mh, md, n, d, mo), HS_OK, "%s",
                   hs_last_error());
      clf_download(&clf, md, got, 4 * e);
      clf_download(&clf, mo, got_sum, 4 * (size_t)d);
      expect_close(got, dh, e, true, "masked gradient");
      expect_close(got_sum, want_sum, (size_t)d, true, "column sum");
      hs__mem_release(&mh), hs__mem_release(&md), hs__mem_release(&mo);
      free(h), free(dh), free(got), free(want_sum), free(got_sum);
    }
  hs__ctr_trainer_destroy(t);
  cf_free(&f);
}

/* The per-row gradient sums alone, bit for bit against the reference:
 * rows of 1 (LR), 4, 8 (a float4, a float8), 9 (DeepFM's D + 1 at D = 8),
 * 13 (a float8, a float4 and a rest), 16 (one float16), 17 (DeepFM's
 * D + 1: one and a rest), 29 and 33 floats; rows with no occurrence, one,
 * and many. */
Test(ctr_cl, segment_sums_equal_the_reference_bit_for_bit) {
  static const int32_t Rs[] = {1, 4, 8, 9, 13, 16, 17, 29, 33};
  const int32_t n_occ = 900, U = 120;
  uint64_t s = 23;
  int32_t *occ_ptr = calloc((size_t)U + 1, 4), *occ = malloc(4 * (size_t)n_occ);
  int32_t *owner = malloc(4 * (size_t)n_occ), *fill = calloc((size_t)U, 4);
  /* Unique 0 has no occurrence, unique 1 exactly one, the rest skewed. */
  for (int32_t o = 0; o < n_occ; o++) {
    float r = cf_uniform(&s);
    owner[o] = o == 0 ? 1 : 2 + (int32_t)(r * r * (float)(U - 2)) % (U - 2);
    occ_ptr[owner[o] + 1]++;
  }
  for (int32_t u = 0; u < U; u++) occ_ptr[u + 1] += occ_ptr[u];
  for (int32_t o = 0; o < n_occ; o++) occ[occ_ptr[owner[o]] + fill[owner[o]]++] = o;
  cr_assert_eq(occ_ptr[1] - occ_ptr[0], 0);
  cr_assert_eq(occ_ptr[2] - occ_ptr[1], 1);
  for (size_t ri = 0; ri < sizeof Rs / sizeof Rs[0]; ri++) {
    int32_t R = Rs[ri];
    ctr_fix f;
    cf_make(&f, HS_CTR_DLRM, 10, 3, 4, 12, 5);
    float *dE = random_floats((size_t)n_occ * R, &s), *want = malloc(4 * (size_t)U * R);
    float *got = malloc(4 * (size_t)U * R);
    hs__ctr_ref_segment_sum(dE, occ_ptr, occ, U, R, want);
    hs_ctr_trainer *t = make_trainer(&f);
    cl_mem md = clf_upload(&clf, dE, 4 * (size_t)n_occ * R);
    cl_mem mp = clf_upload(&clf, occ_ptr, 4 * ((size_t)U + 1)), mo = clf_upload(&clf, occ, 4 * (size_t)n_occ);
    cl_mem mu = clf_upload(&clf, NULL, 4 * (size_t)U * R);
    cr_assert_eq(hs__ctr_trainer_run_segment_sum(t, md, R, mp, mo, U, mu), HS_OK, "%s",
                 hs_last_error());
    clf_download(&clf, mu, got, 4 * (size_t)U * R);
    expect_close(got, want, (size_t)U * R, true, "segment sum");
    hs__mem_release(&md), hs__mem_release(&mp), hs__mem_release(&mo), hs__mem_release(&mu);
    hs__ctr_trainer_destroy(t);
    free(dE), free(want), free(got);
    cf_free(&f);
  }
  free(occ_ptr), free(occ), free(owner), free(fill);
}
