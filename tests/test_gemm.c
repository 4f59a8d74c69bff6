/* GEMM providers on the OpenCL device against the plain-C reference:
 * every transpose combination, offsets, padded leading dimensions, beta,
 * event chaining; and provider selection. */
#include <criterion/criterion.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cl_fixture.h"
#include "gemm.h"
#include "hs_config.h"
#include "hs_pool.h"
#include "hs_test_util.h"
#include "nn/ref_nn.h"
#include "nn_fixtures.h"

/* A provider of `kind` on `threads` threads, or the test skipped where
 * the device cannot run it (the providers in made[0..n_made) destroyed and
 * the fixture closed first). */
static hs_gemm *provider_or_skip(cl_fixture *f, hs_gemm_kind kind, int threads, hs_gemm **made,
                                 int n_made) {
  hs_gemm *g;
  hs_status st = hs__gemm_create(&f->ctx, &f->dev, f->q, kind, threads, &g);
  if (st == HS_ERR_UNSUPPORTED) {
    for (int j = 0; j < n_made; j++) hs__gemm_destroy(made[j]);
    clf_close(f);
    cr_skip_test("%s", hs_last_error());
  }
  cr_assert_eq(st, HS_OK, "%s", hs_last_error());
  return g;
}

/* Runs a battery of products through `kind` and compares with the
 * reference: |got - want| <= 1e-5 * sum_p |a_ip b_pj| (the error bound of
 * any summation order) plus a tiny absolute floor. */
static void battery(hs_gemm_kind kind) {
  cl_fixture f;
  clf_open(&f);
  hs_gemm *g = provider_or_skip(&f, kind, 0, NULL, 0);
  cr_expect_eq(hs__gemm_kind_of(g), kind);
  const size_t shapes[][3] = {{37, 29, 53}, {1, 17, 5}, {64, 64, 64}, {5, 1, 1}, {0, 3, 4}, {64, 1, 128}};
  uint64_t s = 17;
  for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++)
    for (int t = 0; t < 4; t++) {
      bool ta = t & 2, tb = t & 1;
      size_t m = shapes[si][0], n = shapes[si][1], k = shapes[si][2];
      size_t ar = ta ? k : m, ac = ta ? m : k, br = tb ? n : k, bc = tb ? k : n;
      size_t lda = ac + 3, ldb = bc + 1, ldc = n + 2, ao = 5, bo = 7, co = 11;
      size_t na = ao + ar * lda + 1, nb = bo + br * ldb + 1, nc = co + m * ldc + 1;
      float *a = malloc(na * 4), *b = malloc(nb * 4), *c = malloc(nc * 4), *want = malloc(nc * 4);
      float *got = malloc(nc * 4), *bound = malloc(nc * 4);
      fx_fill(a, na, &s, 1.0f);
      fx_fill(b, nb, &s, 1.0f);
      fx_fill(c, nc, &s, 1.0f);
      memcpy(want, c, nc * 4);
      float alpha = 1.5f, beta = (si % 2) ? 0.0f : -0.5f;
      hs__ref_gemm(ta, tb, m, n, k, alpha, a + ao, lda, b + bo, ldb, beta, want + co, ldc);
      for (size_t i = 0; i < m; i++)
        for (size_t j = 0; j < n; j++) {
          double sum = 0.0;
          for (size_t p = 0; p < k; p++)
            sum += fabs((double)(ta ? a[ao + p * lda + i] : a[ao + i * lda + p]) *
                        (tb ? b[bo + j * ldb + p] : b[bo + p * ldb + j]));
          bound[co + i * ldc + j] = (float)(1e-5 * (fabs(alpha) * sum + fabs(beta)) + 1e-6);
        }
      cl_mem da = clf_upload(&f, a, na * 4), db = clf_upload(&f, b, nb * 4), dc = clf_upload(&f, c, nc * 4);
      hs_gemm_op op = {.trans_a = ta, .trans_b = tb, .m = m, .n = n, .k = k, .alpha = alpha,
                       .beta = beta, .a = da, .b = db, .c = dc, .a_off = ao, .b_off = bo,
                       .c_off = co, .lda = lda, .ldb = ldb, .ldc = ldc};
      cl_event ev = NULL;
      cr_assert_eq(hs__gemm_run(g, &op, 0, NULL, &ev), HS_OK, "%s", hs_last_error());
      cr_assert_eq(hs__events_wait(&ev, 1), HS_OK);
      hs__events_release(&ev, 1);
      clf_download(&f, dc, got, nc * 4);
      for (size_t e = 0; e < nc; e++) {
        bool inside = e >= co && (e - co) / ldc < m && (e - co) % ldc < n;
        float tol = inside ? bound[e] : 0.0f;
        cr_expect(fabsf(got[e] - want[e]) <= tol,
                  "%s %zux%zux%zu trans %d%d: c[%zu] = %.8g, want %.8g%s", hs__gemm_kind_name(kind),
                  m, n, k, ta, tb, e, (double)got[e], (double)want[e], inside ? "" : " (outside C: must be untouched)");
        if (fabsf(got[e] - want[e]) > tol) break;
      }
      hs__mem_release(&da), hs__mem_release(&db), hs__mem_release(&dc);
      free(a), free(b), free(c), free(want), free(got), free(bound);
    }
  /* An empty inner dimension is refused alike by every provider. */
  cl_mem one = clf_upload(&f, (float[4]){0}, 16);
  hs_gemm_op empty = {.m = 2, .n = 2, .k = 0, .alpha = 1, .a = one, .b = one, .c = one, .lda = 1, .ldb = 2, .ldc = 2};
  cr_expect_eq(hs__gemm_run(g, &empty, 0, NULL, NULL), HS_ERR_INVALID_ARG);
  hs__mem_release(&one);
  hs__gemm_destroy(g);
  clf_close(&f);
}

Test(gemm, cblas_native_kernel_matches_reference) { battery(HS_GEMM_CBLAS); }
Test(gemm, builtin_kernel_matches_reference) { battery(HS_GEMM_BUILTIN); }
Test(gemm, clblast_matches_reference, .timeout = 900) { battery(HS_GEMM_CLBLAST); }

/* Products chained only through events: C1 = A B, then D = C1 B', with the
 * second waiting on the first's event. The buffers are created in an order
 * unlike their argument order, which PoCL's native-kernel buffer list gets
 * wrong (see gemm_cblas.c). */
Test(gemm, products_chain_through_events) {
  cl_fixture f;
  clf_open(&f);
  hs_gemm *g;
  cr_assert_eq(hs__gemm_create(&f.ctx, &f.dev, f.q, HS_GEMM_AUTO, 0, &g), HS_OK, "%s", hs_last_error());
  enum { N = 48 };
  float a[N * N], b[N * N], c1[N * N], d[N * N], got[N * N];
  uint64_t s = 3;
  fx_fill(a, N * N, &s, 1.0f);
  fx_fill(b, N * N, &s, 1.0f);
  hs__ref_gemm(false, false, N, N, N, 1.0f, a, N, b, N, 0.0f, c1, N);
  hs__ref_gemm(false, true, N, N, N, 1.0f, c1, N, b, N, 0.0f, d, N);
  cl_mem da = clf_upload(&f, a, sizeof a), db = clf_upload(&f, b, sizeof b);
  cl_mem dc = clf_upload(&f, a, sizeof a), dd = clf_upload(&f, a, sizeof a);
  hs_gemm_op op1 = {.m = N, .n = N, .k = N, .alpha = 1, .a = da, .b = db, .c = dc, .lda = N, .ldb = N, .ldc = N};
  hs_gemm_op op2 = {.trans_b = true, .m = N, .n = N, .k = N, .alpha = 1, .a = dc, .b = db, .c = dd, .lda = N, .ldb = N, .ldc = N};
  cl_event e1 = NULL, e2 = NULL;
  cr_assert_eq(hs__gemm_run(g, &op1, 0, NULL, &e1), HS_OK);
  cr_assert_eq(hs__gemm_run(g, &op2, 1, &e1, &e2), HS_OK);
  cr_assert_eq(hs__events_wait(&e2, 1), HS_OK);
  uint64_t t0, t1;
  if (f.dev.info.queue_profiling) {
    cr_expect_eq(hs__event_times(e2, &t0, &t1), HS_OK, "%s", hs_last_error());
    cr_expect_geq(t1, t0);
  }
  cr_assert_eq(hs__mem_read(f.q, dd, true, 0, sizeof got, got, 0, NULL, NULL), HS_OK);
  for (int e = 0; e < N * N; e++) cr_expect(fabsf(got[e] - d[e]) < 1e-3f, "d[%d] %g vs %g", e, (double)got[e], (double)d[e]);
  hs__events_release(&e1, 1), hs__events_release(&e2, 1);
  hs__mem_release(&da), hs__mem_release(&db), hs__mem_release(&dc), hs__mem_release(&dd);
  hs__gemm_destroy(g);
  clf_close(&f);
}

Test(gemm, selection_and_names) {
  hs_gemm_kind k;
  cr_expect_eq(hs__gemm_kind_parse("clblast", &k), HS_OK);
  cr_expect_eq(k, HS_GEMM_CLBLAST);
  cr_expect_eq(hs__gemm_kind_parse("mkl", &k), HS_ERR_INVALID_ARG);
  cr_expect(strstr(hs_last_error(), "mkl"));
  cl_fixture f;
  clf_open(&f);
  hs_gemm *g;
  cr_assert_eq(hs__gemm_create(&f.ctx, &f.dev, f.q, HS_GEMM_AUTO, 0, &g), HS_OK);
  /* A CPU device with native kernels and OpenBLAS must not pay for CLBlast. */
  if (f.dev.info.type == HS_DEVICE_CPU && f.dev.info.native_kernels && HS_HAVE_CBLAS && !getenv("HETSAGE_GEMM"))
    cr_expect_eq(hs__gemm_kind_of(g), HS_GEMM_CBLAS);
  hs__gemm_destroy(g);
  clf_close(&f);
}

/* The kernel set hetsage asks OpenBLAS for: only where OpenBLAS's own pick
 * uses neither AVX2 nor AVX-512 and the CPU has them. */
Test(gemm, a_fallback_kernel_set_is_replaced_by_the_cpus_own) {
  cr_expect_str_eq(hs__gemm_core_suggestion("Prescott", HS_SIMD_AVX512), "SkylakeX");
  cr_expect_str_eq(hs__gemm_core_suggestion("Prescott", HS_SIMD_AVX2), "Haswell");
  cr_expect_str_eq(hs__gemm_core_suggestion("Nehalem", HS_SIMD_AVX2), "Haswell");
  cr_expect_str_eq(hs__gemm_core_suggestion("Sandybridge", HS_SIMD_AVX512), "SkylakeX");
  cr_expect_str_eq(hs__gemm_core_suggestion("Core2", HS_SIMD_AVX512), "SkylakeX");
  /* OpenBLAS's informed choices stay, an AVX2 set on an AVX-512 CPU too
   * (Zen 4: OpenBLAS picks "Zen", as fast there as "SkylakeX"). */
  const char *stay[] = {"Haswell", "Zen", "SkylakeX", "Cooperlake", "SapphireRapids", "Excavator",
                        "HASWELL", "skylakex"};
  for (size_t i = 0; i < sizeof stay / sizeof stay[0]; i++) {
    cr_expect_null(hs__gemm_core_suggestion(stay[i], HS_SIMD_AVX512), "%s", stay[i]);
    cr_expect_null(hs__gemm_core_suggestion(stay[i], HS_SIMD_AVX2), "%s", stay[i]);
  }
  /* A CPU without AVX2 keeps whatever OpenBLAS picked; no OpenBLAS, nothing. */
  cr_expect_null(hs__gemm_core_suggestion("Prescott", HS_SIMD_OLDER));
  cr_expect_null(hs__gemm_core_suggestion(NULL, HS_SIMD_AVX512));
  /* This process: the suggestion is the rule applied to its OpenBLAS and CPU. */
  const char *core = hs__gemm_cblas_core(), *want = hs__gemm_core_suggestion(core, hs__gemm_cpu_simd());
  const char *got = hs__gemm_cblas_core_suggested();
  if (want) cr_expect_str_eq(got, want);
  else cr_expect_null(got);
  cr_expect_eq(core != NULL, HS_HAVE_CBLAS != 0);
}

/* The provider retains the queue it keeps, and releases it when destroyed:
 * its creator may release its own reference first (a session tearing down)
 * without the provider's teardown touching a released queue. Nothing is
 * enqueued, so no command holds a reference of its own. */
Test(gemm, provider_retains_its_queue) {
  cl_fixture f;
  clf_open(&f);
  cl_uint before = clf_queue_refs(f.q);
  hs_gemm *g;
  cr_assert_eq(hs__gemm_create(&f.ctx, &f.dev, f.q, HS_GEMM_AUTO, 0, &g), HS_OK, "%s",
               hs_last_error());
  cr_expect_eq(clf_queue_refs(f.q), before + 1, "the provider holds no reference of its own");
  hs__gemm_destroy(g);
  cr_expect_eq(clf_queue_refs(f.q), before, "the provider did not release its reference");
  clf_close(&f);
}

/* The piece plan covers C's longer side exactly, in at most
 * HS_GEMM_MAX_PIECES ranges of a multiple of 16 (the last one shorter),
 * from the shape alone; small products stay whole. */
Test(gemm, piece_plan_covers_the_product) {
  const size_t shapes[][3] = {{4096, 256, 367}, {367, 256, 4096}, {96, 600, 700}, {4096, 16, 64},
                              {13, 64, 4096},  {40, 4096, 4096}, {1, 1, 1},      {4096, 1, 128}};
  for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
    size_t m = shapes[i][0], n = shapes[i][1], k = shapes[i][2];
    hs_gemm_piece_plan p, q;
    hs__gemm_piece_plan(m, n, k, &p);
    hs__gemm_piece_plan(m, n, k, &q);
    cr_expect(p.count == q.count && p.size == q.size && p.along_n == q.along_n);
    cr_assert(p.count >= 1 && p.count <= HS_GEMM_MAX_PIECES, "%zux%zux%zu: %d pieces", m, n, k, p.count);
    size_t side = p.along_n ? n : m;
    cr_expect(p.size * (size_t)(p.count - 1) < side && p.size * (size_t)p.count >= side,
              "%zux%zux%zu: %d pieces of %zu do not cover %zu", m, n, k, p.count, p.size, side);
    if (p.count > 1) cr_expect_eq(p.size % 16, 0u);
    if (p.count > 1) cr_expect_eq(p.along_n, n > m);
  }
  hs_gemm_piece_plan p;
  hs__gemm_piece_plan(4096, 16, 64, &p);
  cr_expect_eq(p.count, 1, "a 4 M multiply-add product is not worth a second thread");
  hs__gemm_piece_plan(4096, 256, 367, &p);
  cr_expect_eq(p.count, 4);
  cr_expect(!p.along_n);
  hs__gemm_piece_plan(96, 600, 700, &p);
  cr_expect(p.along_n);
  cr_expect_gt(p.count, 1);
}

/* Products in pieces (the CTR trainer's mode) match the reference, and
 * give the same bits with 1, 2 and 3 threads and as one OpenBLAS call on
 * one thread: every transpose combination, both split directions, offsets,
 * padded leading dimensions, alpha and beta. */
Test(gemm, pieces_give_the_same_bits_whatever_the_threads) {
  if (!HS_HAVE_CBLAS) cr_skip_test("this build has no CBLAS");
  cl_fixture f;
  clf_open(&f);
  const int threads[4] = {1, 1, 2, 3};
  hs_gemm *g[4];
  for (int i = 0; i < 4; i++) {
    g[i] = provider_or_skip(&f, HS_GEMM_CBLAS, threads[i], g, i);
    hs__gemm_set_pieces(g[i], i > 0); /* g[0]: one OpenBLAS call on one thread */
  }
  const size_t shapes[][3] = {{1030, 130, 300}, {70, 1100, 600}};
  uint64_t s = 5;
  for (size_t si = 0; si < 2; si++)
    for (int t = 0; t < 4; t++) {
      bool ta = t & 2, tb = t & 1;
      size_t m = shapes[si][0], n = shapes[si][1], k = shapes[si][2];
      hs_gemm_piece_plan plan;
      hs__gemm_piece_plan(m, n, k, &plan);
      cr_assert_gt(plan.count, 1, "%zux%zux%zu should be cut", m, n, k);
      size_t ar = ta ? k : m, ac = ta ? m : k, br = tb ? n : k, bc = tb ? k : n;
      size_t lda = ac + 3, ldb = bc + 1, ldc = n + 2, ao = 5, bo = 7, co = 11;
      size_t na = ao + ar * lda + 1, nb = bo + br * ldb + 1, nc = co + m * ldc + 1;
      float *a = malloc(na * 4), *b = malloc(nb * 4), *c = malloc(nc * 4), *want = malloc(nc * 4);
      float *got[4];
      fx_fill(a, na, &s, 1.0f);
      fx_fill(b, nb, &s, 1.0f);
      fx_fill(c, nc, &s, 1.0f);
      memcpy(want, c, nc * 4);
      float alpha = 0.75f, beta = t % 2 ? 0.0f : 0.5f;
      hs__ref_gemm(ta, tb, m, n, k, alpha, a + ao, lda, b + bo, ldb, beta, want + co, ldc);
      cl_mem da = clf_upload(&f, a, na * 4), db = clf_upload(&f, b, nb * 4);
      for (int i = 0; i < 4; i++) {
        cl_mem dc = clf_upload(&f, c, nc * 4);
        hs_gemm_op op = {.trans_a = ta, .trans_b = tb, .m = m, .n = n, .k = k, .alpha = alpha,
                         .beta = beta, .a = da, .b = db, .c = dc, .a_off = ao, .b_off = bo,
                         .c_off = co, .lda = lda, .ldb = ldb, .ldc = ldc};
        cr_assert_eq(hs__gemm_run(g[i], &op, 0, NULL, NULL), HS_OK, "%s", hs_last_error());
        got[i] = malloc(nc * 4);
        clf_download(&f, dc, got[i], nc * 4);
        hs__mem_release(&dc);
      }
      for (size_t e = 0; e < nc; e++) {
        bool inside = e >= co && (e - co) / ldc < m && (e - co) % ldc < n;
        /* Inputs in [-1, 1): within k ulps of the reference at C's scale. */
        float tol = inside ? 1e-6f * (float)k * (fabsf(alpha) + fabsf(beta)) : 0.0f;
        cr_expect(fabsf(got[1][e] - want[e]) <= tol, "%zux%zux%zu trans %d%d: c[%zu] = %.8g, want %.8g",
                  m, n, k, ta, tb, e, (double)got[1][e], (double)want[e]);
        if (fabsf(got[1][e] - want[e]) > tol) break;
      }
      for (int i = 0; i < 4; i++) {
        size_t differ = 0;
        for (size_t e = 0; e < nc; e++) differ += memcmp(&got[i][e], &got[1][e], 4) != 0;
        cr_expect_eq(differ, 0u, "%zux%zux%zu trans %d%d: %zu of %zu floats differ between %s and "
                     "pieces on 1 thread", m, n, k, ta, tb, differ, nc,
                     i ? "pieces on more threads" : "one OpenBLAS call");
      }
      hs__mem_release(&da), hs__mem_release(&db);
      for (int i = 0; i < 4; i++) free(got[i]);
      free(a), free(b), free(c), free(want);
    }
  for (int i = 0; i < 4; i++) hs__gemm_destroy(g[i]);
  clf_close(&f);
}

/* In a group a product whose inner side is its longest (a weights'
 * gradient) is cut into at most HS_GEMM_GROUP_LONG_PIECES (whole where its
 * own plan is); the others, and a lone product, keep hs__gemm_piece_plan's.
 * From the shapes alone. */
Test(gemm, group_piece_plan_cuts_long_inner_products_in_fewer_pieces) {
  hs_gemm_piece_plan lone, p, dx, q;
  hs__gemm_piece_plan(221, 256, 4096, &lone);
  cr_assert_eq(lone.count, 4);
  hs__gemm_group_piece_plan(221, 256, 4096, 1, &p);
  cr_expect(p.count == lone.count && p.size == lone.size && p.along_n == lone.along_n,
            "a lone product keeps its plan");
  hs__gemm_group_piece_plan(221, 256, 4096, 2, &p);
  cr_expect_eq(p.count, HS_GEMM_GROUP_LONG_PIECES);
  cr_expect(p.along_n && p.size * (size_t)p.count >= 256 && p.size * (size_t)(p.count - 1) < 256 &&
            p.size % 16 == 0);
  hs__gemm_group_piece_plan(4096, 221, 256, 2, &q);
  hs__gemm_piece_plan(4096, 221, 256, &dx);
  cr_expect(q.count == dx.count && q.size == dx.size && q.along_n == dx.along_n,
            "the input's gradient keeps its plan");
  hs__gemm_group_piece_plan(13, 64, 4096, 2, &q);
  cr_expect_eq(q.count, 1, "a small weights' gradient stays whole");
}

/* A group of products (the CTR trainer's weights' and input's gradients
 * of one layer, and a padded, offset pair with alpha and beta) gives each
 * product's bits of one OpenBLAS call on one thread, on 1 to 4 threads in
 * pieces and without; a group whose output is another's input is refused
 * before anything runs. */
Test(gemm, a_group_gives_the_bits_of_its_products_one_at_a_time) {
  if (!HS_HAVE_CBLAS) cr_skip_test("this build has no CBLAS");
  cl_fixture f;
  clf_open(&f);
  enum { NG = 5 };
  const int threads[NG] = {1, 1, 2, 3, 4};
  hs_gemm *g[NG];
  for (int i = 0; i < NG; i++) {
    g[i] = provider_or_skip(&f, HS_GEMM_CBLAS, threads[i], g, i);
    hs__gemm_set_pieces(g[i], i > 0); /* g[0]: one OpenBLAS call per product */
  }
  uint64_t s = 11;
  for (int shape = 0; shape < 2; shape++) {
    /* x (B x in), dy (B x out), w (in x out): dW = x^T dy, dx = dy w^T. */
    size_t B = shape ? 1100 : 4096, in = shape ? 150 : 221, out = shape ? 90 : 256;
    size_t pad = shape ? 3 : 0, off = shape ? 5 : 0;
    size_t lx = in + pad, ly = out + pad, lw = out + pad, ldw = out + pad, ldx = in + pad;
    size_t nx = off + B * lx, ny = off + B * ly, nw = off + in * lw, ndw = off + in * ldw,
           ndx = off + B * ldx;
    float *x = malloc(nx * 4), *y = malloc(ny * 4), *w = malloc(nw * 4), *c0 = malloc(ndw * 4),
          *c1 = malloc(ndx * 4);
    fx_fill(x, nx, &s, 1.0f), fx_fill(y, ny, &s, 1.0f), fx_fill(w, nw, &s, 1.0f);
    fx_fill(c0, ndw, &s, 1.0f), fx_fill(c1, ndx, &s, 1.0f);
    float alpha = shape ? 0.75f : 1.0f, beta = shape ? 0.5f : 0.0f;
    cl_mem dx = clf_upload(&f, x, nx * 4), dy = clf_upload(&f, y, ny * 4),
           dw = clf_upload(&f, w, nw * 4);
    float *got[NG][2], *whole[2];
    for (int i = 0; i < NG; i++) {
      cl_mem gw = clf_upload(&f, c0, ndw * 4), gx = clf_upload(&f, c1, ndx * 4);
      hs_gemm_op ops[2] = {
          {.trans_a = true, .m = in, .n = out, .k = B, .alpha = alpha, .beta = beta, .a = dx,
           .a_off = off, .lda = lx, .b = dy, .b_off = off, .ldb = ly, .c = gw, .c_off = off,
           .ldc = ldw},
          {.trans_b = true, .m = B, .n = in, .k = out, .alpha = alpha, .beta = beta, .a = dy,
           .a_off = off, .lda = ly, .b = dw, .b_off = off, .ldb = lw, .c = gx, .c_off = off,
           .ldc = ldx}};
      if (i == 0) {
        for (int o = 0; o < 2; o++)
          cr_assert_eq(hs__gemm_run(g[i], &ops[o], 0, NULL, NULL), HS_OK, "%s", hs_last_error());
        /* The group on the same provider (no pieces: one OpenBLAS call
         * each, in one command) into second outputs, compared below. */
        cl_mem hw = clf_upload(&f, c0, ndw * 4), hx = clf_upload(&f, c1, ndx * 4);
        hs_gemm_op g2[2] = {ops[0], ops[1]};
        g2[0].c = hw, g2[1].c = hx;
        cr_assert_eq(hs__gemm_run_group(g[i], g2, 2, 0, NULL, NULL), HS_OK, "%s", hs_last_error());
        whole[0] = malloc(ndw * 4), whole[1] = malloc(ndx * 4);
        clf_download(&f, hw, whole[0], ndw * 4);
        clf_download(&f, hx, whole[1], ndx * 4);
        hs__mem_release(&hw), hs__mem_release(&hx);
      } else {
        cr_assert_eq(hs__gemm_run_group(g[i], ops, 2, 0, NULL, NULL), HS_OK, "%s", hs_last_error());
      }
      got[i][0] = malloc(ndw * 4), got[i][1] = malloc(ndx * 4);
      clf_download(&f, gw, got[i][0], ndw * 4);
      clf_download(&f, gx, got[i][1], ndx * 4);
      if (i == 1) {
        /* Refused: the second product's output is the first's input. */
        hs_gemm_op bad[2] = {ops[0], ops[1]};
        bad[1].c = dx;
        cr_expect_eq(hs__gemm_run_group(g[i], bad, 2, 0, NULL, NULL), HS_ERR_INVALID_ARG);
        cr_expect(strstr(hs_last_error(), "product 1's output shares a buffer with product 0's A"),
                  "%s", hs_last_error());
        bad[1].c = gw;
        cr_expect_eq(hs__gemm_run_group(g[i], bad, 2, 0, NULL, NULL), HS_ERR_INVALID_ARG);
        cr_expect_eq(hs__gemm_run_group(g[i], ops, 0, 0, NULL, NULL), HS_ERR_INVALID_ARG);
      }
      hs__mem_release(&gw), hs__mem_release(&gx);
    }
    /* Against the reference, then bit for bit against g[0]. */
    float *want = malloc(ndw * 4);
    memcpy(want, c0, ndw * 4);
    hs__ref_gemm(true, false, in, out, B, alpha, x + off, lx, y + off, ly, beta, want + off, ldw);
    for (size_t e = 0; e < ndw; e++)
      if (fabsf(got[0][0][e] - want[e]) > 1e-6f * (float)B * (alpha + beta)) {
        cr_expect(false, "dW[%zu] = %.8g, want %.8g", e, (double)got[0][0][e], (double)want[e]);
        break;
      }
    for (int i = 0; i < NG; i++)
      for (int o = 0; o < 2; o++) {
        const float *mine = i ? got[i][o] : whole[o];
        size_t nc = o ? ndx : ndw, differ = 0;
        for (size_t e = 0; e < nc; e++) differ += memcmp(&mine[e], &got[0][o][e], 4) != 0;
        cr_expect_eq(differ, 0u, "shape %d, %d threads%s: %zu of %zu floats of product %d differ "
                     "from one OpenBLAS call", shape, threads[i], i ? ", pieces" : ", no pieces",
                     differ, nc, o);
      }
    free(whole[0]), free(whole[1]);
    for (int i = 0; i < NG; i++) free(got[i][0]), free(got[i][1]);
    free(want), free(x), free(y), free(w), free(c0), free(c1);
    hs__mem_release(&dx), hs__mem_release(&dy), hs__mem_release(&dw);
  }
  for (int i = 0; i < NG; i++) hs__gemm_destroy(g[i]);
  clf_close(&f);
}

/* A group waits for its wait list and completes its event: held by a
 * user event, it has not run (its outputs are untouched, its event not
 * complete) until the event is set, then its event completes with both
 * products done; also when its first product is empty (the wait then
 * falls on the next product's first command). */
Test(gemm, a_group_waits_for_its_wait_list_and_completes_its_event) {
  if (!HS_HAVE_CBLAS) cr_skip_test("this build has no CBLAS");
  cl_fixture f;
  clf_open(&f);
  hs_gemm *g = provider_or_skip(&f, HS_GEMM_CBLAS, 2, NULL, 0);
  hs__gemm_set_pieces(g, true);
  enum { M = 300, K = 40, N = 50 };
  uint64_t s = 3;
  float *y = malloc(M * N * 4), *w = malloc(N * K * 4), *z = malloc(M * K * 4),
        *x = malloc(M * K * 4), *want = calloc(M * K, 4), *zeros = calloc(M * K, 4);
  fx_fill(y, M * N, &s, 1.0f), fx_fill(w, N * K, &s, 1.0f);
  hs__ref_gemm(false, false, M, K, N, 1.0f, y, N, w, K, 0.0f, want, K);
  cl_mem dy = clf_upload(&f, y, M * N * 4), dw = clf_upload(&f, w, N * K * 4);
  for (int empty_first = 0; empty_first < 2; empty_first++) {
    cl_mem dz = clf_upload(&f, zeros, M * K * 4), dx = clf_upload(&f, zeros, M * K * 4),
           de = clf_upload(&f, zeros, 4);
    cl_int err;
    cl_event u = clCreateUserEvent(f.ctx.ctx, &err), done = NULL;
    cr_assert_eq(err, CL_SUCCESS);
    /* z = y w and x = y w: two equal products, after an empty one or not. */
    hs_gemm_op grp[3] = {
        {.m = 0, .n = K, .k = N, .alpha = 1.0f, .a = dy, .lda = N, .b = dw, .ldb = K, .c = de, .ldc = K},
        {.m = M, .n = K, .k = N, .alpha = 1.0f, .a = dy, .lda = N, .b = dw, .ldb = K, .c = dz, .ldc = K},
        {.m = M, .n = K, .k = N, .alpha = 1.0f, .a = dy, .lda = N, .b = dw, .ldb = K, .c = dx, .ldc = K}};
    cr_assert_eq(hs__gemm_run_group(g, grp + !empty_first, empty_first ? 3 : 2, 1, &u, &done),
                 HS_OK, "%s", hs_last_error());
    cr_assert_eq(clFlush(f.q), CL_SUCCESS);
    struct timespec pause = {0, 50 * 1000 * 1000};
    nanosleep(&pause, NULL);
    cl_int status;
    cr_assert_eq(clGetEventInfo(done, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status,
                                NULL), CL_SUCCESS);
    cr_expect_neq(status, CL_COMPLETE, "the group ran before its wait list was complete");
    cr_assert_eq(clSetUserEventStatus(u, CL_COMPLETE), CL_SUCCESS);
    cr_assert_eq(clWaitForEvents(1, &done), CL_SUCCESS);
    clf_download(&f, dz, z, M * K * 4);
    clf_download(&f, dx, x, M * K * 4);
    for (int i = 0; i < M * K; i++) {
      cr_assert(fabsf(z[i] - want[i]) <= 1e-5f * (float)N, "z[%d] = %g, want %g", i, (double)z[i],
                (double)want[i]);
      cr_assert_eq(memcmp(&x[i], &z[i], 4), 0, "the group's two equal products differ at %d", i);
    }
    clReleaseEvent(u), clReleaseEvent(done);
    hs__mem_release(&dz), hs__mem_release(&dx), hs__mem_release(&de);
  }
  hs__mem_release(&dy), hs__mem_release(&dw);
  free(y), free(w), free(z), free(x), free(want), free(zeros);
  hs__gemm_destroy(g);
  clf_close(&f);
}

#if HS_HAVE_CBLAS
void openblas_set_num_threads(int);

/* One provider's product of the shape below, `runs` times, each compared
 * with `want` bit for bit; on its own queue. */
typedef struct blas_runner {
  hs_gemm *g;
  cl_command_queue q;
  cl_mem a, b, c;
  const float *want;
  int runs, differ;
} blas_runner;

enum { BL_M = 4096, BL_N = 256, BL_K = 367 };

static void blas_product(hs_gemm *g, cl_command_queue q, cl_mem a, cl_mem b, cl_mem c, float *out) {
  hs_gemm_op op = {.m = BL_M, .n = BL_N, .k = BL_K, .alpha = 1.0f, .beta = 0.0f, .a = a, .b = b,
                   .c = c, .lda = BL_K, .ldb = BL_N, .ldc = BL_N};
  cr_assert_eq(hs__gemm_run(g, &op, 0, NULL, NULL), HS_OK, "%s", hs_last_error());
  cr_assert_eq(hs__queue_finish(q), HS_OK);
  cr_assert_eq(hs__mem_read(q, c, true, 0, 4 * (size_t)BL_M * BL_N, out, 0, NULL, NULL), HS_OK);
}

static void *blas_run(void *p) {
  blas_runner *r = p;
  float *got = malloc(4 * (size_t)BL_M * BL_N);
  for (int i = 0; i < r->runs; i++) {
    blas_product(r->g, r->q, r->a, r->b, r->c, got);
    r->differ += memcmp(got, r->want, 4 * (size_t)BL_M * BL_N) != 0;
  }
  free(got);
  return NULL;
}
#endif

/* OpenBLAS's thread count is process-wide: a product runs on its
 * provider's count whatever another caller set before it (the provider
 * remembered the count it last set, and trusted it), and the products of
 * two providers with other counts running at once each keep their bits
 * (they take turns; without, one could run on the other's count). The
 * shape is one whose bits differ on one and two OpenBLAS threads; where
 * they do not, there is nothing to tell apart and the test skips. */
Test(gemm, a_product_runs_on_its_own_thread_count) {
#if !HS_HAVE_CBLAS
  cr_skip_test("this build has no CBLAS");
#else
  cl_fixture f;
  clf_open(&f);
  hs_gemm *g1 = provider_or_skip(&f, HS_GEMM_CBLAS, 1, NULL, 0), *g2;
  cl_command_queue q2;
  cr_assert_eq(hs__queue_create(&f.ctx, &f.dev, 0, &q2), HS_OK, "%s", hs_last_error());
  cr_assert_eq(hs__gemm_create(&f.ctx, &f.dev, q2, HS_GEMM_CBLAS, 2, &g2), HS_OK, "%s",
               hs_last_error());
  size_t na = (size_t)BL_M * BL_K, nb = (size_t)BL_K * BL_N, nc = (size_t)BL_M * BL_N;
  float *a = malloc(4 * na), *b = malloc(4 * nb), *one = malloc(4 * nc), *two = malloc(4 * nc);
  float *again = malloc(4 * nc);
  uint64_t s = 9;
  fx_fill(a, na, &s, 1.0f);
  fx_fill(b, nb, &s, 1.0f);
  cl_mem da = clf_upload(&f, a, 4 * na), db = clf_upload(&f, b, 4 * nb);
  cl_mem c1 = clf_upload(&f, NULL, 4 * nc), c2 = clf_upload(&f, NULL, 4 * nc);
  blas_product(g1, f.q, da, db, c1, one);
  blas_product(g2, q2, da, db, c2, two);
  if (memcmp(one, two, 4 * nc) == 0)
    cr_skip_test("OpenBLAS gives the same bits on one and two threads here");
  openblas_set_num_threads(1); /* as code outside the providers may */
  blas_product(g2, q2, da, db, c2, again);
  cr_expect(memcmp(again, two, 4 * nc) == 0, "a 2-thread product ran on the count set before it");
  openblas_set_num_threads(2);
  blas_product(g1, f.q, da, db, c1, again);
  cr_expect(memcmp(again, one, 4 * nc) == 0, "a 1-thread product ran on the count set before it");
  blas_runner r[2] = {{.g = g1, .q = f.q, .a = da, .b = db, .c = c1, .want = one, .runs = 8},
                      {.g = g2, .q = q2, .a = da, .b = db, .c = c2, .want = two, .runs = 8}};
  pthread_t th[2];
  for (int i = 0; i < 2; i++) cr_assert_eq(pthread_create(&th[i], NULL, blas_run, &r[i]), 0);
  for (int i = 0; i < 2; i++) pthread_join(th[i], NULL);
  cr_expect_eq(r[0].differ, 0, "%d of 8 1-thread products differ beside 2-thread ones", r[0].differ);
  cr_expect_eq(r[1].differ, 0, "%d of 8 2-thread products differ beside 1-thread ones", r[1].differ);
  hs__mem_release(&da), hs__mem_release(&db), hs__mem_release(&c1), hs__mem_release(&c2);
  free(a), free(b), free(one), free(two), free(again);
  hs__gemm_destroy(g1);
  hs__gemm_destroy(g2);
  clReleaseCommandQueue(q2);
  clf_close(&f);
#endif
}

/* The CBLAS provider wakes its helpers for a product's pieces through
 * hs__pool_run_elsewhere: they are kept off the CPU of the thread that
 * woke them, which goes on computing (a helper queued behind it there,
 * while another CPU idled, started its pieces milliseconds late). The
 * caller is held on one CPU here; each helper must find that CPU outside
 * its affinity and run elsewhere, on every run, also after the caller
 * moved to another CPU. */
typedef struct elsewhere_job {
  int caller_cpu;
  int bad_mask, bad_cpu;
} elsewhere_job;

static void elsewhere_fn(void *arg, int t, int n) {
  (void)n;
  elsewhere_job *j = arg;
  if (t == 0) return;
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) != 0 || CPU_ISSET(j->caller_cpu, &set))
    __atomic_add_fetch(&j->bad_mask, 1, __ATOMIC_RELAXED);
  if (sched_getcpu() == j->caller_cpu) __atomic_add_fetch(&j->bad_cpu, 1, __ATOMIC_RELAXED);
}

Test(gemm, pool_helpers_run_off_the_callers_cpu) {
  cpu_set_t all;
  cr_assert_eq(sched_getaffinity(0, sizeof all, &all), 0);
  if (CPU_COUNT(&all) < 2) cr_skip_test("the process may use one CPU");
  int cpus[2], found = 0;
  for (int c = 0; c < CPU_SETSIZE && found < 2; c++)
    if (CPU_ISSET(c, &all)) cpus[found++] = c;
  hs_pool *p;
  cr_assert_eq(hs__pool_create("test", 3, &p), HS_OK, "%s", hs_last_error());
  for (int round = 0; round < 6; round++) {
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpus[round % 2], &one);
    cr_assert_eq(pthread_setaffinity_np(pthread_self(), sizeof one, &one), 0);
    elsewhere_job j = {.caller_cpu = cpus[round % 2]};
    hs__pool_run_elsewhere(p, elsewhere_fn, &j);
    cr_expect_eq(j.bad_mask, 0, "round %d: %d helper(s) may still run on CPU %d", round, j.bad_mask,
                 j.caller_cpu);
    cr_expect_eq(j.bad_cpu, 0, "round %d: %d helper(s) ran on CPU %d", round, j.bad_cpu, j.caller_cpu);
  }
  cr_assert_eq(pthread_setaffinity_np(pthread_self(), sizeof all, &all), 0);
  hs__pool_destroy(p);
}

/* hs__pool_nicer lowers the priority of the pool's own threads, for every
 * later run, and leaves the caller's (the CTR lookup's helpers under the
 * threads driver take the CPU time the trainer leaves). */
static void record_nice(void *arg, int t, int n) {
  (void)n;
  ((int *)arg)[t] = tu_thread_nice();
}

Test(gemm, pool_nicer_lowers_the_helpers_not_the_caller) {
  int base = tu_thread_nice();
  cr_assert_eq(hs__thread_nicer(0), INT_MIN, "by 0 changes nothing");
  hs_pool *p;
  cr_assert_eq(hs__pool_create("test", 3, &p), HS_OK, "%s", hs_last_error());
  int seen[3] = {99, 99, 99};
  hs__pool_run(p, record_nice, seen);
  for (int t = 0; t < 3; t++) cr_expect_eq(seen[t], base, "thread %d before: %d", t, seen[t]);
#ifdef __linux__
  int want = base + 4 > 19 ? 19 : base + 4;
  cr_expect_eq(hs__pool_nicer(p, 4), 2, "both helpers lowered");
  for (int round = 0; round < 2; round++) {
    hs__pool_run(p, record_nice, seen);
    cr_expect_eq(seen[0], base, "the caller stays at %d (%d)", base, seen[0]);
    for (int t = 1; t < 3; t++) cr_expect_eq(seen[t], want, "helper %d at %d, not %d", t, seen[t], want);
  }
  cr_expect_eq(tu_thread_nice(), base);
#else
  cr_expect_eq(hs__pool_nicer(p, 4), 0);
#endif
  hs__pool_destroy(p);
}
