/* Training kernels on the OpenCL device against their plain-C references,
 * at several work-group sizes; the device step against the reference step;
 * run-to-run bit identity; learning; and (when the dataset is present) a
 * full-neighbour Cora check. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cl_fixture.h"
#include "hs_programs.h"
#include "nn/checkpoint.h"
#include "nn/infer.h"
#include "nn/model_ops.h"
#include "nn/nn_rng.h"
#include "nn/sage.h"
#include "nn/ref_nn.h"
#include "nn/trainer.h"
#include "nn_fixtures.h"

static const size_t wg_sizes[] = {0, 1, 3, 16, 64};
#define N_WG (sizeof wg_sizes / sizeof wg_sizes[0])

/* ---- direct kernel launches ------------------------------------------------- */

/* The GraphSAGE training program's kernel set, launched through the same
 * typed launchers the trainer uses, at the local size the test asks. */
typedef struct kfix {
  cl_fixture f;
  hs_kset ks;
} kfix;

static void kfix_open(kfix *k) {
  clf_open(&k->f);
  cr_assert_eq(hs__kset_create(&k->f.ctx, &k->f.dev, k->f.q, &hs__model_ops(HS_NN_SAGE)->program,
                               0, &k->ks),
               HS_OK, "%s", hs_last_error());
}

static void kfix_close(kfix *k) {
  hs__kset_release(&k->ks);
  clf_close(&k->f);
}

/* Every kernel's local size (0: the implementation's choice). */
static void kfix_wg(kfix *k, size_t wg) {
  for (int i = 0; i < k->ks.n_kernels; i++) k->ks.wg[i] = wg;
}

/* A launcher's status, then the queue drained. */
static void ran(kfix *k, hs_status st) {
  cr_assert_eq(st, HS_OK, "%s", hs_last_error());
  cr_assert_eq(hs__queue_finish(k->f.q), HS_OK);
}

static void expect_close(const char *what, const float *got, const float *want, size_t n, float rtol) {
  for (size_t i = 0; i < n; i++) {
    float tol = rtol * fmaxf(1.0f, fabsf(want[i]));
    cr_expect(fabsf(got[i] - want[i]) <= tol, "%s[%zu]: %.9g, want %.9g", what, i, (double)got[i], (double)want[i]);
    if (fabsf(got[i] - want[i]) > tol) return;
  }
}

/* A block with a hub: src 0 is a neighbour of every dst (a transposed list
 * long enough for the heap-sort path). */
static void hub_block(fx_batch *fb) {
  int fan[1] = {5};
  fx_batch_make(fb, 1, 300, fan, 4, 3, 77);
  for (int32_t i = 0; i < fb->blocks[0].n_dst; i += 1)
    if (fb->rp[0][i + 1] > fb->rp[0][i]) fb->col[0][fb->rp[0][i]] = 0;
}

Test(nn_cl, transpose_kernels_equal_the_counting_sort) {
  kfix k;
  kfix_open(&k);
  fx_batch fb;
  hub_block(&fb);
  const hs_nn_block *b = &fb.blocks[0];
  cl_int n_src = b->n_src, n_dst = b->n_dst, n_edges = hs__nn_block_edges(b);
  cl_int n_chunks = (cl_int)hs__scan_chunks((size_t)n_src);
  int32_t *want_ptr = malloc(4 * ((size_t)n_src + 1)), *want_dst = malloc(4 * (size_t)n_edges);
  int32_t *got_ptr = malloc(4 * ((size_t)n_src + 1)), *got_dst = malloc(4 * (size_t)n_edges);
  hs__nn_block_transpose(b, want_ptr, want_dst);
  cr_assert_gt(want_ptr[1] - want_ptr[0], 32, "the hub list must take the heap-sort path");
  for (size_t w = 0; w < N_WG; w++) {
    cl_mem rp = clf_upload(&k.f, b->row_ptr, 4 * ((size_t)n_dst + 1)), col = clf_upload(&k.f, b->col, 4 * (size_t)n_edges);
    cl_mem cur = clf_upload(&k.f, NULL, 4 * (size_t)n_src), sums = clf_upload(&k.f, NULL, 4 * (size_t)n_chunks);
    cl_mem tp = clf_upload(&k.f, NULL, 4 * ((size_t)n_src + 1)), td = clf_upload(&k.f, NULL, 4 * (size_t)n_edges);
    kfix_wg(&k, wg_sizes[w]);
    hs_tr_bufs tb = {.cursor = cur, .sums = sums, .t_ptr = tp, .t_list = td};
    ran(&k, hs__nn_transpose(&k.ks, rp, col, n_dst, n_src, n_edges, &tb, false, false));
    clf_download(&k.f, tp, got_ptr, 4 * ((size_t)n_src + 1));
    clf_download(&k.f, td, got_dst, 4 * (size_t)n_edges);
    cr_expect_arr_eq(got_ptr, want_ptr, 4 * ((size_t)n_src + 1), "t_ptr, wg %zu", wg_sizes[w]);
    cr_expect_arr_eq(got_dst, want_dst, 4 * (size_t)n_edges, "t_dst, wg %zu", wg_sizes[w]);
    hs__mem_release(&rp), hs__mem_release(&col), hs__mem_release(&cur), hs__mem_release(&sums);
    hs__mem_release(&tp), hs__mem_release(&td);
  }
  free(want_ptr), free(want_dst), free(got_ptr), free(got_dst);
  fx_batch_free(&fb);
  kfix_close(&k);
}

Test(nn_cl, aggregation_forward_and_backward_match_reference) {
  kfix k;
  kfix_open(&k);
  fx_batch fb;
  hub_block(&fb);
  const hs_nn_block *b = &fb.blocks[0];
  uint64_t s = 5;
  for (int di = 0; di < 2; di++) {
    cl_int d = di ? 33 : 5, n_dst = b->n_dst, n_src = b->n_src, n_edges = hs__nn_block_edges(b);
    size_t nh = (size_t)n_src * d, nc = (size_t)n_dst * 2 * d;
    float *h = malloc(4 * nh), *want = malloc(4 * nc), *got = malloc(4 * nc), *dcat = malloc(4 * nc);
    float *want_dh = malloc(4 * nh), *got_dh = malloc(4 * nh), *act = malloc(4 * nh);
    int32_t *tp = malloc(4 * ((size_t)n_src + 1)), *td = malloc(4 * (size_t)n_edges);
    fx_fill(h, nh, &s, 1.0f);
    fx_fill(dcat, nc, &s, 1.0f);
    for (size_t e = 0; e < nh; e++) act[e] = h[e] > 0.0f ? h[e] : 0.0f;
    hs__ref_agg_fwd(b, h, d, want);
    hs__nn_block_transpose(b, tp, td);
    for (size_t w = 0; w < N_WG; w++) {
      cl_mem drp = clf_upload(&k.f, b->row_ptr, 4 * ((size_t)n_dst + 1)), dcol = clf_upload(&k.f, b->col, 4 * (size_t)n_edges);
      cl_mem dh = clf_upload(&k.f, h, 4 * nh), dcatb = clf_upload(&k.f, NULL, 4 * nc);
      kfix_wg(&k, wg_sizes[w]);
      ran(&k, hs__k_agg_fwd(&k.ks, drp, dcol, dh, 0, n_dst, d, dcatb));
      clf_download(&k.f, dcatb, got, 4 * nc);
      expect_close("agg_fwd", got, want, nc, 1e-6f);
      /* Backward, plain and with the ReLU/dropout mask folded in. */
      cl_mem dtp = clf_upload(&k.f, tp, 4 * ((size_t)n_src + 1)), dtd = clf_upload(&k.f, td, 4 * (size_t)n_edges);
      cl_mem dg = clf_upload(&k.f, dcat, 4 * nc), dact = clf_upload(&k.f, act, 4 * nh), dout = clf_upload(&k.f, NULL, 4 * nh);
      for (cl_int masked = 0; masked < 2; masked++) {
        float scale = masked ? 1.25f : 1.0f;
        hs__ref_agg_bwd(b, tp, td, dcat, d, want_dh);
        if (masked) hs__ref_act_bwd(act, n_src, d, scale, want_dh);
        ran(&k, hs__k_agg_bwd(&k.ks, drp, dtp, dtd, dg, dact, n_dst, n_src, d, masked, scale, dout));
        clf_download(&k.f, dout, got_dh, 4 * nh);
        expect_close(masked ? "agg_bwd masked" : "agg_bwd", got_dh, want_dh, nh, 1e-6f);
      }
      hs__mem_release(&drp), hs__mem_release(&dcol), hs__mem_release(&dh), hs__mem_release(&dcatb);
      hs__mem_release(&dtp), hs__mem_release(&dtd), hs__mem_release(&dg), hs__mem_release(&dact), hs__mem_release(&dout);
    }
    free(h), free(want), free(got), free(dcat), free(want_dh), free(got_dh), free(act), free(tp), free(td);
  }
  fx_batch_free(&fb);
  kfix_close(&k);
}

/* Shapes for the fast path (rows a multiple of the 32-element group), rows
 * shorter than a group, and groups straddling rows. */
Test(nn_cl, bias_relu_dropout_kernel_matches_reference) {
  kfix k;
  kfix_open(&k);
  const int shapes[][2] = {{20, 64}, {37, 13}, {9, 40}};
  uint64_t s = 19;
  for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++)
    for (size_t w = 0; w < N_WG; w++)
      for (int with_p = 0; with_p < 2; with_p++) {
        cl_int n = shapes[si][0], d = shapes[si][1], relu = 1;
        size_t total = (size_t)n * (size_t)d;
        float *z = malloc(4 * total), *want = malloc(4 * total), *got = malloc(4 * total), params[3 + 64];
        fx_fill(z, total, &s, 1.0f);
        fx_fill(params, 3 + 64, &s, 0.5f);
        float p = with_p ? 0.4f : 0.0f, scale = hs__dropout_scale(p);
        memcpy(want, z, 4 * total);
        hs__ref_bias_act_fwd(want, n, d, params + 3, true, p, 1234, 3, 7, 1);
        cl_mem dz = clf_upload(&k.f, z, 4 * total), dp = clf_upload(&k.f, params, sizeof params);
        cl_ulong off = 3, seed = 1234;
        cl_uint ep = 3, ba = 7, layer = 1;
        kfix_wg(&k, wg_sizes[w]);
        ran(&k, hs__k_bias_act(&k.ks, dz, n, d, dp, off, relu, p, scale, seed, ep, ba, layer));
        clf_download(&k.f, dz, got, 4 * total);
        /* The same bits as the reference: the same kept set, the same values. */
        cr_expect_arr_eq(got, want, 4 * total, "%dx%d, wg %zu, p %g", n, d, wg_sizes[w], (double)p);
        int dropped = 0;
        for (size_t e = 0; e < total; e++) dropped += want[e] == 0.0f && z[e] + params[3 + e % (size_t)d] > 0.0f;
        if (with_p) cr_expect_gt(dropped, 0, "dropout must drop something");
        hs__mem_release(&dz), hs__mem_release(&dp);
        free(z), free(want), free(got);
      }
  kfix_close(&k);
}

Test(nn_cl, elementwise_and_loss_kernels_match_reference) {
  kfix k;
  kfix_open(&k);
  enum { N = 37, D = 13, C = 6, OFF = 5 };
  uint64_t s = 9;
  float params[OFF + D];
  fx_fill(params, OFF + D, &s, 0.5f);
  for (size_t w = 0; w < N_WG; w++) {
    cl_int n = N, d = D;
    cl_ulong off = OFF;
    cl_mem dp = clf_upload(&k.f, params, sizeof params);
    /* column sums, in two stages, into an offset of a larger buffer; enough
     * rows for several chunks */
    enum { R = 600 };
    static float tall[R * D];
    fx_fill(tall, R * D, &s, 1.0f);
    float want_cs[D], got_cs[OFF + D];
    hs__ref_colsum(tall, R, D, want_cs);
    double exact[D] = {0};
    for (int i = 0; i < R; i++)
      for (int q = 0; q < D; q++) exact[q] += tall[i * D + q];
    for (int q = 0; q < D; q++) cr_expect(fabs(want_cs[q] - exact[q]) < 1e-4, "reference colsum %d", q);
    cl_int rows = R, chunks = (cl_int)hs__colsum_chunks(R);
    cl_mem dx = clf_upload(&k.f, tall, sizeof tall), dpart = clf_upload(&k.f, NULL, 4 * (size_t)chunks * D);
    cl_mem dcs = clf_upload(&k.f, params, sizeof params);
    kfix_wg(&k, wg_sizes[w]);
    ran(&k, hs__nn_colsum(&k.ks, dx, rows, d, dpart, dcs, off));
    clf_download(&k.f, dcs, got_cs, sizeof got_cs);
    cr_expect_arr_eq(got_cs, params, OFF * 4, "colsum wrote before its offset");
    cr_expect_arr_eq(got_cs + OFF, want_cs, sizeof want_cs, "colsum differs from the reference's association");
    /* softmax cross-entropy and its reduction */
    float logits[N * C], wdz[N * C], gdz[N * C], wl[N], gl[N], loss_w, loss_g[4];
    int32_t y[N], wc[N], gc[N], correct_w, correct_g[4];
    fx_fill(logits, N * C, &s, 3.0f);
    for (int i = 0; i < N; i++) y[i] = (int32_t)(fx_next(&s) % C);
    hs__ref_softmax_ce(logits, params + OFF, y, N, C, wdz, wl, wc);
    hs__ref_loss_reduce(wl, wc, N, &loss_w, &correct_w);
    cl_mem dl = clf_upload(&k.f, logits, sizeof logits), dy = clf_upload(&k.f, y, sizeof y);
    cl_mem ddz = clf_upload(&k.f, NULL, sizeof gdz), drows = clf_upload(&k.f, NULL, sizeof gl), dhits = clf_upload(&k.f, NULL, sizeof gc);
    cl_mem dsl = clf_upload(&k.f, NULL, sizeof loss_g), dsc = clf_upload(&k.f, NULL, sizeof correct_g);
    cl_int c = C, slot = 2;
    float inv_n = 1.0f / N;
    ran(&k, hs__k_softmax_ce(&k.ks, dl, dp, off, dy, n, c, inv_n, ddz, drows, dhits));
    ran(&k, hs__k_loss_reduce(&k.ks, drows, dhits, n, dsl, dsc, slot));
    clf_download(&k.f, ddz, gdz, sizeof gdz);
    clf_download(&k.f, drows, gl, sizeof gl);
    clf_download(&k.f, dhits, gc, sizeof gc);
    clf_download(&k.f, dsl, loss_g, sizeof loss_g);
    clf_download(&k.f, dsc, correct_g, sizeof correct_g);
    expect_close("ce.dz", gdz, wdz, N * C, 1e-5f);
    expect_close("ce.loss", gl, wl, N, 1e-5f);
    cr_expect_arr_eq(gc, wc, sizeof wc);
    expect_close("loss mean", &loss_g[2], &loss_w, 1, 1e-5f);
    cr_expect_eq(correct_g[2], correct_w);
    cl_mem all[] = {dp, dx, dpart, dcs, dl, dy, ddz, drows, dhits, dsl, dsc};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) hs__mem_release(&all[i]);
  }
  kfix_close(&k);
}

Test(nn_cl, optimizer_kernels_match_reference) {
  kfix k;
  kfix_open(&k);
  enum { N = 1000 };
  static float p[N], g[N], m[N], v[N], gp[N], gm[N], gv[N];
  uint64_t s = 4;
  for (int kind = 0; kind < 2; kind++) {
    hs_optim_cfg o = {.kind = kind ? HS_OPTIM_ADAM : HS_OPTIM_SGD, .wd_mode = kind ? HS_WD_DECOUPLED : HS_WD_L2,
                      .lr = 0.01f, .weight_decay = 0.01f, .beta1 = 0.9f, .beta2 = 0.999f, .eps = 1e-8f, .momentum = 0.9f};
    fx_fill(p, N, &s, 1.0f);
    memset(m, 0, sizeof m), memset(v, 0, sizeof v);
    size_t wg = wg_sizes[(size_t)kind * 2 + 1];
    cl_mem dp = clf_upload(&k.f, p, sizeof p), dg = clf_upload(&k.f, NULL, sizeof g);
    cl_mem dm = clf_upload(&k.f, m, sizeof m), dv = clf_upload(&k.f, v, sizeof v);
    for (uint64_t t = 1; t <= 3; t++) {
      fx_fill(g, N, &s, 0.1f);
      cr_assert_eq(hs__mem_write(k.f.q, dg, true, 0, sizeof g, g, 0, NULL, NULL), HS_OK);
      hs_optim_coef c;
      hs__optim_coef(&o, t, &c);
      hs__ref_optim(o.kind, &c, N, p, g, m, v);
      cl_ulong n = N;
      kfix_wg(&k, wg);
      ran(&k, kind ? hs__k_adam(&k.ks, dp, dg, dm, dv, n, &c) : hs__k_sgd(&k.ks, dp, dg, dm, n, &c));
    }
    clf_download(&k.f, dp, gp, sizeof gp);
    clf_download(&k.f, dm, gm, sizeof gm);
    clf_download(&k.f, dv, gv, sizeof gv);
    expect_close(kind ? "adam.p" : "sgd.p", gp, p, N, 1e-6f);
    expect_close(kind ? "adam.m" : "sgd.m", gm, m, N, 1e-6f);
    if (kind) expect_close("adam.v", gv, v, N, 1e-6f);
    hs__mem_release(&dp), hs__mem_release(&dg), hs__mem_release(&dm), hs__mem_release(&dv);
  }
  kfix_close(&k);
}

/* ---- the device step --------------------------------------------------------- */

static void small_model(hs_model *m, hs_optim_kind kind, int n_layers, uint64_t seed) {
  hs_model_cfg cfg;
  hs__model_cfg_defaults(&cfg);
  cfg.n_layers = n_layers;
  cfg.in_dim = 24;
  cfg.hidden = 32;
  cfg.n_classes = 5;
  cfg.dropout = 0.3f;
  cfg.seed = seed;
  cfg.optim.kind = kind;
  cfg.optim.weight_decay = 5e-4f;
  cfg.optim.momentum = kind == HS_OPTIM_SGD ? 0.9f : 0.0f;
  cfg.optim.lr = kind == HS_OPTIM_SGD ? 0.1f : 0.01f;
  cr_assert_eq(hs__model_create(&cfg, m), HS_OK, "%s", hs_last_error());
  uint64_t s = seed;
  for (int l = 0; l < n_layers; l++) fx_fill(m->params + m->shape.b_off[l], (size_t)m->shape.dims[l + 1], &s, 0.1f);
}

/* max |a - b| <= rtol * max |b|, and elementwise within rtol of the larger
 * of |b| and 1e-2 max |b| (entries far below the array's scale carry the
 * absolute rounding of their larger neighbours). */
static void expect_rel(const char *what, const float *a, const float *b, size_t n, double rtol) {
  double mx = 0.0, worst = 0.0;
  size_t at = 0;
  for (size_t i = 0; i < n; i++) mx = fmax(mx, fabs(b[i]));
  for (size_t i = 0; i < n; i++) {
    double err = fabs((double)a[i] - b[i]) / fmax(fabs(b[i]), 1e-2 * mx);
    if (err > worst) worst = err, at = i;
  }
  cr_expect(worst <= rtol, "%s: relative error %.3g at [%zu] (%.9g vs %.9g)", what, worst, at, (double)a[at], (double)b[at]);
}

static void open_trainer(cl_fixture *f, const hs_model *m, size_t wg, bool profile, hs_trainer **t) {
  hs_trainer_opts o = {.wg = wg, .profile = profile};
  cr_assert_eq(hs__trainer_create(&f->ctx, &f->dev, f->q, m, &o, t), HS_OK, "%s", hs_last_error());
}

Test(nn_cl, device_step_matches_reference_step) {
  cl_fixture f;
  clf_open(&f);
  int fan[2] = {6, 4};
  for (int kind = 0; kind < 2; kind++) {
    hs_model ref, dev;
    hs_optim_kind ok = kind ? HS_OPTIM_ADAM : HS_OPTIM_SGD;
    small_model(&ref, ok, 2, 21);
    small_model(&dev, ok, 2, 21);
    hs_trainer *t;
    open_trainer(&f, &dev, 16, false, &t);
    size_t n = ref.shape.n_params;
    float *g_ref = malloc(4 * n), *g_dev = malloc(4 * n);
    hs_train_stats acc = {0};
    double ref_loss_sum = 0.0;
    for (uint32_t step = 0; step < 3; step++) {
      fx_batch fb;
      fx_batch_make(&fb, 2, 64, fan, 24, 5, 300 + step);
      hs_nn_batch b = fx_batch_view(&fb);
      cr_assert_eq(hs__trainer_upload(t, &b), HS_OK, "%s", hs_last_error());
      if (step == 0) {
        /* Gradients alone first (dropout on), against the reference's. */
        cr_assert_eq(hs__trainer_gradients(t, 1, step, true), HS_OK, "%s", hs_last_error());
        cr_assert_eq(hs__trainer_read_grads(t, g_dev), HS_OK);
        cr_assert_eq(hs__ref_gradients(&ref, &b, 1, step, true, g_ref, NULL), HS_OK);
        expect_rel("gradients", g_dev, g_ref, n, 1e-5);
        hs_train_stats skip = {0};
        cr_assert_eq(hs__trainer_drain_stats(t, &skip), HS_OK);
        cr_expect_eq(skip.steps, 1);
      }
      hs_step_stats st;
      cr_assert_eq(hs__trainer_step(t, 1, step), HS_OK, "%s", hs_last_error());
      cr_assert_eq(hs__ref_train_step(&ref, &b, 1, step, &st), HS_OK);
      ref_loss_sum += st.loss;
      cr_assert_eq(hs__trainer_sync_model(t, &dev), HS_OK);
      char what[64];
      snprintf(what, sizeof what, "%s params after step %u", kind ? "adam" : "sgd", step + 1);
      expect_rel(what, dev.params, ref.params, n, 1e-5);
      cr_expect_eq(dev.step, ref.step);
      fx_batch_free(&fb);
    }
    cr_assert_eq(hs__trainer_drain_stats(t, &acc), HS_OK);
    cr_expect_eq(acc.steps, 3);
    cr_expect_eq(acc.seeds, 3 * 64);
    cr_expect(fabs(acc.loss_sum - ref_loss_sum) < 1e-5 * ref_loss_sum, "loss %g vs %g", acc.loss_sum, ref_loss_sum);
    free(g_ref), free(g_dev);
    hs__trainer_destroy(t);
    hs__model_destroy(&ref), hs__model_destroy(&dev);
  }
  clf_close(&f);
}

/* Parameters after a few steps of a 3-layer model, for a work-group size. */
static float *train_three_steps(cl_fixture *f, size_t wg, bool profile) {
  hs_model m;
  small_model(&m, HS_OPTIM_ADAM, 3, 5);
  hs_trainer *t;
  open_trainer(f, &m, wg, profile, &t);
  int fan[3] = {3, 4, 5};
  for (uint32_t step = 0; step < 3; step++) {
    fx_batch fb;
    fx_batch_make(&fb, 3, 40, fan, 24, 5, 900 + step);
    hs_nn_batch b = fx_batch_view(&fb);
    cr_assert_eq(hs__trainer_upload(t, &b), HS_OK, "%s", hs_last_error());
    cr_assert_eq(hs__trainer_step(t, 0, step), HS_OK, "%s", hs_last_error());
    fx_batch_free(&fb);
  }
  if (profile) {
    hs_train_times tm;
    cr_assert_eq(hs__trainer_times(t, &tm), HS_OK, "%s", hs_last_error());
    cr_expect_eq(tm.steps, 3);
    /* Phase times need real profiling timestamps (not rusticl 22.3's). */
    for (int ph = 0; ph < HS_PHASE_COUNT_ && hs__queue_timestamps_real(&f->ctx, f->q); ph++)
      cr_expect_gt(tm.seconds[ph], 0.0, "phase %d has no time", ph);
  }
  cr_assert_eq(hs__trainer_sync_model(t, &m), HS_OK);
  float *out = malloc(4 * m.shape.n_params);
  memcpy(out, m.params, 4 * m.shape.n_params);
  hs__trainer_destroy(t);
  hs__model_destroy(&m);
  return out;
}

Test(nn_cl, same_seed_same_device_is_bit_identical_at_every_work_group_size) {
  cl_fixture f;
  clf_open(&f);
  hs_model m;
  small_model(&m, HS_OPTIM_ADAM, 3, 5);
  size_t n = m.shape.n_params;
  hs__model_destroy(&m);
  float *first = train_three_steps(&f, 0, true);
  for (size_t w = 0; w < N_WG; w++) {
    float *again = train_three_steps(&f, wg_sizes[w], false);
    cr_expect_arr_eq(again, first, 4 * n, "parameters differ at work-group size %zu", wg_sizes[w]);
    free(again);
  }
  free(first);
  clf_close(&f);
}

/* Train 2 steps, checkpoint, train 2 more; a fresh trainer resumed from
 * the checkpoint must end with the very same parameters. */
Test(nn_cl, resume_from_checkpoint_is_bit_identical) {
  cl_fixture f;
  clf_open(&f);
  char path[] = "/tmp/hs-nn-cl-XXXXXX";
  int fd = mkstemp(path);
  cr_assert_geq(fd, 0);
  close(fd);
  int fan[2] = {4, 3};
  fx_batch fb[4];
  for (int i = 0; i < 4; i++) fx_batch_make(&fb[i], 2, 32, fan, 24, 5, 70 + (uint64_t)i);
  hs_model a, b;
  small_model(&a, HS_OPTIM_ADAM, 2, 31);
  small_model(&b, HS_OPTIM_ADAM, 2, 99); /* other weights until the checkpoint loads */
  hs_trainer *ta, *tb;
  open_trainer(&f, &a, 0, false, &ta);
  for (uint32_t i = 0; i < 4; i++) {
    if (i == 2) {
      cr_assert_eq(hs__trainer_sync_model(ta, &a), HS_OK);
      a.rng_counter = i;
      cr_assert_eq(hs__checkpoint_save(&a, path), HS_OK, "%s", hs_last_error());
    }
    hs_nn_batch batch = fx_batch_view(&fb[i]);
    cr_assert_eq(hs__trainer_upload(ta, &batch), HS_OK);
    cr_assert_eq(hs__trainer_step(ta, 0, i), HS_OK);
  }
  cr_assert_eq(hs__checkpoint_load(path, &b), HS_OK, "%s", hs_last_error());
  open_trainer(&f, &b, 0, false, &tb);
  for (uint32_t i = (uint32_t)b.rng_counter; i < 4; i++) {
    hs_nn_batch batch = fx_batch_view(&fb[i]);
    cr_assert_eq(hs__trainer_upload(tb, &batch), HS_OK);
    cr_assert_eq(hs__trainer_step(tb, 0, i), HS_OK);
  }
  cr_assert_eq(hs__trainer_sync_model(ta, &a), HS_OK);
  cr_assert_eq(hs__trainer_sync_model(tb, &b), HS_OK);
  cr_expect_arr_eq(b.params, a.params, 4 * a.shape.n_params);
  cr_expect_arr_eq(b.v, a.v, 4 * a.shape.n_params);
  cr_expect_eq(b.step, 4u);
  unlink(path);
  for (int i = 0; i < 4; i++) fx_batch_free(&fb[i]);
  hs__trainer_destroy(ta), hs__trainer_destroy(tb);
  hs__model_destroy(&a), hs__model_destroy(&b);
  clf_close(&f);
}

Test(nn_cl, predict_matches_reference_forward) {
  cl_fixture f;
  clf_open(&f);
  hs_model m;
  small_model(&m, HS_OPTIM_ADAM, 2, 8);
  hs_trainer *t;
  open_trainer(&f, &m, 0, false, &t);
  int fan[2] = {5, 5};
  fx_batch fb;
  fx_batch_make(&fb, 2, 50, fan, 24, 5, 44);
  hs_nn_batch b = fx_batch_view(&fb);
  b.labels = NULL;
  float want[50 * 5], got[50 * 5];
  cr_assert_eq(hs__ref_forward(&m.shape, m.params, &b, want), HS_OK);
  cr_assert_eq(hs__trainer_upload(t, &b), HS_OK);
  cr_expect_eq(hs__trainer_step(t, 0, 0), HS_ERR_STATE, "training needs labels");
  cr_assert_eq(hs__trainer_predict(t, got), HS_OK, "%s", hs_last_error());
  expect_rel("logits", got, want, 50 * 5, 1e-5);
  fx_batch_free(&fb);
  hs__trainer_destroy(t);
  hs__model_destroy(&m);
  clf_close(&f);
}

Test(nn_cl, device_trainer_learns_a_planted_partition) {
  cl_fixture f;
  clf_open(&f);
  fx_graph g;
  fx_graph_make(&g, 600, 4, 12, 5, 99);
  hs_csr_view cv = {.n_vertices = g.n, .indptr = g.indptr, .indices = g.indices};
  hs_model_cfg cfg;
  hs__model_cfg_defaults(&cfg);
  cfg.in_dim = g.dim;
  cfg.hidden = 32;
  cfg.n_classes = 4;
  cfg.dropout = 0.2f;
  hs_model m;
  cr_assert_eq(hs__model_create(&cfg, &m), HS_OK);
  hs_trainer *t;
  open_trainer(&f, &m, 0, false, &t);
  int32_t ids[600];
  for (int i = 0; i < 600; i++) ids[i] = i;
  hs_train_stats first = {0}, last = {0};
  for (uint32_t epoch = 0; epoch < 10; epoch++)
    for (uint32_t bi = 0; bi < 4; bi++) { /* train on 0..399 */
      hs_nn_block_set set;
      cr_assert_eq(hs__full_blocks_build(&cv, ids + bi * 100, 100, 2, &set), HS_OK);
      int32_t n = set.blocks[0].n_src, y[100];
      float *x = malloc(4 * (size_t)n * (size_t)g.dim);
      for (int32_t i = 0; i < n; i++) memcpy(x + (size_t)i * g.dim, g.feat + (size_t)set.ids[i] * g.dim, 4 * (size_t)g.dim);
      for (int i = 0; i < 100; i++) y[i] = g.labels[set.ids[i]];
      hs_nn_batch b = {.n_layers = 2, .blocks = set.blocks, .feat = x, .labels = y};
      cr_assert_eq(hs__trainer_upload(t, &b), HS_OK);
      cr_assert_eq(hs__trainer_step(t, epoch, bi), HS_OK);
      free(x);
      hs__block_set_free(&set);
      if (bi == 3) {
        hs_train_stats ep = {0};
        cr_assert_eq(hs__trainer_drain_stats(t, &ep), HS_OK);
        cr_assert_eq(ep.steps, 4);
        if (epoch == 0) first = ep;
        last = ep;
      }
    }
  cr_expect_lt(last.loss_sum, 0.5 * first.loss_sum, "epoch loss %g -> %g", first.loss_sum, last.loss_sum);
  /* Device inference on the held-out vertices' full neighbourhoods. */
  hs_nn_block_set set;
  cr_assert_eq(hs__full_blocks_build(&cv, ids + 400, 200, 2, &set), HS_OK);
  int32_t n = set.blocks[0].n_src;
  float *x = malloc(4 * (size_t)n * (size_t)g.dim), logits[200 * 4];
  for (int32_t i = 0; i < n; i++) memcpy(x + (size_t)i * g.dim, g.feat + (size_t)set.ids[i] * g.dim, 4 * (size_t)g.dim);
  hs_nn_batch b = {.n_layers = 2, .blocks = set.blocks, .feat = x};
  cr_assert_eq(hs__trainer_upload(t, &b), HS_OK);
  cr_assert_eq(hs__trainer_predict(t, logits), HS_OK);
  int hits = 0;
  for (int i = 0; i < 200; i++) {
    int arg = 0;
    for (int k = 1; k < 4; k++)
      if (logits[i * 4 + k] > logits[i * 4 + arg]) arg = k;
    hits += arg == g.labels[set.ids[i]];
  }
  cr_expect_geq(hits, 180, "held-out accuracy %d/200", hits);
  /* The host's layer-wise inference agrees with the device's. */
  cr_assert_eq(hs__trainer_sync_model(t, &m), HS_OK);
  float *all = malloc(4 * 600 * 4);
  cr_assert_eq(hs__infer_full(&m.shape, m.params, &cv, g.feat, all), HS_OK);
  expect_rel("device predict vs host inference", logits, all + 400 * 4, 200 * 4, 1e-5);
  /* Layer-wise inference on the device over the whole graph. */
  float *dev_all = malloc(4 * 600 * 4);
  cr_assert_eq(hs__trainer_infer_full(t, &cv, g.feat, dev_all), HS_OK, "%s", hs_last_error());
  expect_rel("device vs host layer-wise inference", dev_all, all, 600 * 4, 1e-5);
  free(all), free(x), free(dev_all);
  hs__block_set_free(&set);
  hs__trainer_destroy(t);
  hs__model_destroy(&m);
  fx_graph_free(&g);
  clf_close(&f);
}

/* ---- Cora, full neighbourhoods ---------------------------------------------------- */

typedef struct cora {
  int n, f, c;
  float *x;
  int32_t *y;
  int64_t *indptr;
  int32_t *indices;
} cora;

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

/* LINQS cora.content / cora.cites into an undirected CSR without repeated
 * edges or self loops; classes numbered by sorted name. */
static bool cora_load(cora *g) {
  const char *root = getenv("HS_SHARED_DATASETS");
  char path[1024];
  snprintf(path, sizeof path, "%s/cora/cora.content", root ? root : "");
  FILE *fc = fopen(path, "r");
  if (!fc) return false;
  memset(g, 0, sizeof *g);
  g->f = 1433;
  static const char *names[] = {"Case_Based", "Genetic_Algorithms", "Neural_Networks", "Probabilistic_Methods",
                                "Reinforcement_Learning", "Rule_Learning", "Theory"};
  g->c = 7;
  int cap = 4096;
  long *pid = malloc(sizeof(long) * (size_t)cap);
  g->x = calloc((size_t)cap * (size_t)g->f, 4);
  g->y = malloc(4 * (size_t)cap);
  char *line = malloc(1 << 16);
  while (fgets(line, 1 << 16, fc)) {
    char *save, *tok = strtok_r(line, "\t\n", &save);
    if (!tok) continue;
    cr_assert_lt(g->n, cap);
    pid[g->n] = atol(tok);
    for (int k = 0; k < g->f; k++) g->x[(size_t)g->n * g->f + k] = (float)atoi(strtok_r(NULL, "\t\n", &save));
    tok = strtok_r(NULL, "\t\n", &save);
    g->y[g->n] = -1;
    for (int k = 0; k < g->c; k++)
      if (strcmp(tok, names[k]) == 0) g->y[g->n] = k;
    cr_assert_geq(g->y[g->n], 0, "unknown class %s", tok);
    g->n++;
  }
  fclose(fc);
  snprintf(path, sizeof path, "%s/cora/cora.cites", root);
  FILE *fe = fopen(path, "r");
  cr_assert(fe);
  size_t ecap = 1 << 15, ne = 0;
  int64_t *pairs = malloc(sizeof(int64_t) * ecap);
  long a, b;
  while (fscanf(fe, "%ld %ld", &a, &b) == 2) {
    int ia = -1, ib = -1;
    for (int i = 0; i < g->n; i++) {
      if (pid[i] == a) ia = i;
      if (pid[i] == b) ib = i;
    }
    if (ia < 0 || ib < 0 || ia == ib) continue;
    cr_assert_lt(ne + 2, ecap);
    pairs[ne++] = (int64_t)ia * g->n + ib;
    pairs[ne++] = (int64_t)ib * g->n + ia;
  }
  fclose(fe);
  qsort(pairs, ne, sizeof *pairs, cmp_i64);
  g->indptr = calloc((size_t)g->n + 1, 8);
  g->indices = malloc(4 * ne);
  size_t m = 0;
  for (size_t e = 0; e < ne; e++) {
    if (e > 0 && pairs[e] == pairs[e - 1]) continue;
    g->indices[m++] = (int32_t)(pairs[e] % g->n);
    g->indptr[pairs[e] / g->n + 1]++;
  }
  for (int v = 0; v < g->n; v++) g->indptr[v + 1] += g->indptr[v];
  free(pairs), free(pid), free(line);
  return true;
}

Test(nn_cl, cora_full_neighbour_training_reaches_published_accuracy, .timeout = 600) {
  cora g;
  if (!cora_load(&g)) cr_skip_test("Cora not found under HS_SHARED_DATASETS");
  cr_assert_eq(g.n, 2708);
  cr_assert_eq(g.indptr[g.n], 10556, "undirected Cora has 5278 edges");
  cl_fixture f;
  clf_open(&f);
  /* A seeded random 60/20/20 split. */
  int32_t *perm = malloc(4 * (size_t)g.n);
  uint64_t s = 2024;
  for (int i = 0; i < g.n; i++) perm[i] = i;
  for (int i = g.n - 1; i > 0; i--) {
    int j = (int)(fx_next(&s) % (uint64_t)(i + 1)), tmp = perm[i];
    perm[i] = perm[j], perm[j] = tmp;
  }
  int n_train = g.n * 6 / 10, n_val = g.n * 2 / 10, n_test = g.n - n_train - n_val;
  const int32_t *test_ids = perm + n_train + n_val;
  hs_csr_view cv = {.n_vertices = g.n, .indptr = g.indptr, .indices = g.indices};
  hs_model_cfg cfg;
  hs__model_cfg_defaults(&cfg);
  cfg.in_dim = g.f;
  cfg.n_classes = g.c;
  cfg.hidden = 128;
  cfg.dropout = 0.5f;
  cfg.optim.weight_decay = 5e-4f;
  hs_model m;
  cr_assert_eq(hs__model_create(&cfg, &m), HS_OK);
  hs_trainer *t;
  open_trainer(&f, &m, 0, false, &t);
  enum { BATCH = 256 };
  float *x = malloc(4 * (size_t)g.n * (size_t)g.f);
  int32_t y[BATCH];
  double t0 = hs__now();
  for (uint32_t epoch = 0; epoch < 20; epoch++)
    for (int b0 = 0, bi = 0; b0 < n_train; b0 += BATCH, bi++) {
      int nb = n_train - b0 < BATCH ? n_train - b0 : BATCH;
      hs_nn_block_set set;
      cr_assert_eq(hs__full_blocks_build(&cv, perm + b0, nb, 2, &set), HS_OK);
      for (int32_t i = 0; i < set.blocks[0].n_src; i++)
        memcpy(x + (size_t)i * g.f, g.x + (size_t)set.ids[i] * g.f, 4 * (size_t)g.f);
      for (int i = 0; i < nb; i++) y[i] = g.y[set.ids[i]];
      hs_nn_batch b = {.n_layers = 2, .blocks = set.blocks, .feat = x, .labels = y};
      cr_assert_eq(hs__trainer_upload(t, &b), HS_OK, "%s", hs_last_error());
      cr_assert_eq(hs__trainer_step(t, epoch, (uint32_t)bi), HS_OK, "%s", hs_last_error());
      hs__block_set_free(&set);
    }
  cr_assert_eq(hs__trainer_sync_model(t, &m), HS_OK);
  double train_s = hs__now() - t0;
  float *logits = malloc(4 * (size_t)g.n * (size_t)g.c), *host = malloc(4 * (size_t)g.n * (size_t)g.c);
  t0 = hs__now();
  cr_assert_eq(hs__trainer_infer_full(t, &cv, g.x, logits), HS_OK, "%s", hs_last_error());
  double infer_s = hs__now() - t0;
  cr_assert_eq(hs__infer_full(&m.shape, m.params, &cv, g.x, host), HS_OK);
  expect_rel("cora logits, device vs host", logits, host, (size_t)g.n * (size_t)g.c, 1e-5);
  double acc = hs__accuracy(logits, g.c, g.y, test_ids, n_test);
  cr_expect_eq(acc, hs__accuracy(host, g.c, g.y, test_ids, n_test));
  cr_log_info("cora: device layer-wise inference of %d vertices in %.3f s", g.n, infer_s);
  free(host);
  cr_log_info("cora: test accuracy %.4f after 20 epochs (%.1f s of training, GEMM %s)", acc, train_s,
              hs__gemm_kind_name(hs__trainer_gemm_kind(t)));
  cr_expect_geq(acc, 0.84, "Cora full-neighbour test accuracy %.4f", acc);
  free(logits), free(x), free(perm);
  hs__trainer_destroy(t);
  hs__model_destroy(&m);
  free(g.x), free(g.y), free(g.indptr), free(g.indices);
  clf_close(&f);
}
