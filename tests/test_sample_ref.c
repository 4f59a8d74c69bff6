/* The plain-C reference sampler and reindexer: exact results on hand-made
 * graphs, batch invariants on generated and real graphs, and the sampling
 * distributions (chi-square, with the test itself shown to reject biased
 * samplers). */
#include <criterion/criterion.h>
#include <math.h>

#include "hs_base.h"
#include "sample_check.h"
#include "bench/sample_graphs.h"
#include "shared_data.h"

#include "cl_kernels/hs_sample_rng.h"

/* ---- statistics ------------------------------------------------------------- */

/* Upper tail of the chi-square distribution (Wilson–Hilferty), accurate to
 * a few percent of p in the range the tests use. */
static double chi2_sf(double x, int dof) {
  double k = dof;
  double z = (cbrt(x / k) - (1.0 - 2.0 / (9.0 * k))) / sqrt(2.0 / (9.0 * k));
  return 0.5 * erfc(z / sqrt(2.0));
}

static double chi2_stat(const double *obs, const double *expect, int n) {
  double s = 0;
  for (int i = 0; i < n; i++) s += (obs[i] - expect[i]) * (obs[i] - expect[i]) / expect[i];
  return s;
}

/* Samples are deterministic (Philox with fixed keys), so a bound of 1e-4
 * cannot flake; a biased sampler lands far below it (see below). */
#define P_MIN 1e-4

static double uniform_p(const double *counts, int n) {
  double total = 0, expect[256];
  for (int i = 0; i < n; i++) total += counts[i];
  for (int i = 0; i < n; i++) expect[i] = total / n;
  return chi2_sf(chi2_stat(counts, expect, n), n - 1);
}

Test(sample_stats, chi2_rejects_a_biased_histogram) {
  /* 20 cells, 5000 expected each; a 6% tilt on four of them is a bias a
   * sampler bug would plausibly produce, and must fail the bound. */
  double fair[20], tilted[20];
  for (int i = 0; i < 20; i++) fair[i] = tilted[i] = 5000;
  tilted[0] = tilted[1] = 5300;
  tilted[2] = tilted[3] = 4700;
  cr_expect_gt(uniform_p(fair, 20), 0.99);
  cr_expect_lt(uniform_p(tilted, 20), P_MIN, "p = %g", uniform_p(tilted, 20));
  /* the approximation itself: chi2(19) has its 95th percentile at 30.14 */
  cr_expect_float_eq(chi2_sf(30.14, 19), 0.05, 0.003);
  cr_expect_float_eq(chi2_sf(18.34, 19), 0.50, 0.01);
}

/* ---- helpers ------------------------------------------------------------------ */

static hs_sample_cfg cfg_of(int n_layers, const int32_t *fanouts, hs_sample_mode mode,
                            bool replace) {
  hs_sample_cfg c;
  memset(&c, 0, sizeof c);
  c.n_layers = n_layers;
  for (int i = 0; i < n_layers; i++) c.fanout[i] = fanouts[i];
  c.mode = mode;
  c.replace = replace;
  c.seed = 0x5eed5eed12345678ull;
  return c;
}

static void batch_for(const hs_csr *g, const hs_sample_cfg *cfg, int32_t max_seeds,
                      hs_batch *b) {
  hs_batch_caps caps;
  cr_assert_eq(hs__batch_caps(cfg, g, hs__csr_max_degree(g), max_seeds, &caps), HS_OK, "%s",
               hs_last_error());
  cr_assert_eq(hs__batch_alloc(&caps, b), HS_OK);
}

static void run_ref(const hs_csr *g, const hs_sample_cfg *cfg, const int32_t *seeds, int32_t n,
                    uint32_t epoch, uint32_t batch, hs_batch *b) {
  cr_assert_eq(hs__ref_sample_batch(g, cfg, seeds, n, epoch, batch, b), HS_OK, "%s",
               hs_last_error());
  const char *why = sc_check_batch(g, cfg, seeds, n, b);
  cr_assert_null(why, "%s", why);
}

/* 0:[1,2] 1:[3,0] 2:[3,4] 3:[] 4:[5] 5:[0] */
static const int64_t small_ptr[] = {0, 2, 4, 6, 6, 7, 8};
static const int32_t small_idx[] = {1, 2, 3, 0, 3, 4, 5, 0};
static const hs_csr small_graph = {6, 8, small_ptr, small_idx, NULL};

static void expect_block(const hs_block *b, int32_t n_dst, int32_t n_src, const int32_t *ptr,
                         const int32_t *col) {
  cr_assert_eq(b->n_dst, n_dst);
  cr_assert_eq(b->n_src, n_src);
  for (int32_t i = 0; i <= n_dst; i++) cr_expect_eq(b->row_ptr[i], ptr[i], "row_ptr[%d]", i);
  for (int32_t i = 0; i < ptr[n_dst]; i++) cr_expect_eq(b->col[i], col[i], "col[%d]", i);
}

/* ---- exact results -------------------------------------------------------------- */

Test(sample_ref, reindex_order_on_a_hand_made_graph) {
  const int32_t fan[] = {-1, -1}, seeds[] = {2, 0};
  hs_sample_cfg cfg = cfg_of(2, fan, HS_SAMPLE_UNIFORM, false);
  hs_batch b;
  batch_for(&small_graph, &cfg, 2, &b);
  run_ref(&small_graph, &cfg, seeds, 2, 0, 0, &b);
  /* hop 0 lists 3,4 (row of 2) then 1,2 (row of 0): 3,4,1 are new */
  const int32_t ids[] = {2, 0, 3, 4, 1, 5};
  cr_assert_eq(b.n_vertices, 6);
  for (int i = 0; i < 6; i++) cr_expect_eq(b.ids[i], ids[i], "ids[%d]", i);
  const int32_t p0[] = {0, 2, 4}, c0[] = {2, 3, 4, 0};
  expect_block(&b.blocks[1], 2, 5, p0, c0);
  const int32_t p1[] = {0, 2, 4, 4, 5, 7}, c1[] = {2, 3, 4, 0, 5, 2, 1};
  expect_block(&b.blocks[0], 5, 6, p1, c1);
  hs__batch_free(&b);
}

Test(sample_ref, vertex_budget_truncates_in_first_appearance_order) {
  const int32_t fan[] = {-1, -1}, seeds[] = {2, 0};
  hs_sample_cfg cfg = cfg_of(2, fan, HS_SAMPLE_UNIFORM, false);
  cfg.max_vertices = 4;
  hs_batch b;
  batch_for(&small_graph, &cfg, 2, &b);
  run_ref(&small_graph, &cfg, seeds, 2, 0, 0, &b);
  /* 3 and 4 fit, 1 does not; hop 1 adds nothing and keeps edges among
   * admitted vertices only (4 -> 5 is dropped) */
  const int32_t ids[] = {2, 0, 3, 4};
  cr_assert_eq(b.n_vertices, 4);
  for (int i = 0; i < 4; i++) cr_expect_eq(b.ids[i], ids[i]);
  const int32_t p0[] = {0, 2, 3}, c0[] = {2, 3, 0};
  expect_block(&b.blocks[1], 2, 4, p0, c0);
  const int32_t p1[] = {0, 2, 3, 3, 3}, c1[] = {2, 3, 0};
  expect_block(&b.blocks[0], 4, 4, p1, c1);
  hs__batch_free(&b);
}

Test(sample_ref, empty_frontier_adds_nothing) {
  const int32_t fan[] = {3, 3}, seeds[] = {3};
  hs_sample_cfg cfg = cfg_of(2, fan, HS_SAMPLE_UNIFORM, false);
  hs_batch b;
  batch_for(&small_graph, &cfg, 1, &b);
  run_ref(&small_graph, &cfg, seeds, 1, 0, 0, &b);
  cr_expect_eq(b.n_vertices, 1);
  cr_expect_eq(b.blocks[0].row_ptr[1], 0);
  cr_expect_eq(b.blocks[1].row_ptr[1], 0);
  hs__batch_free(&b);
}

Test(sample_ref, transpose_lists_destinations_per_source) {
  const int32_t fan[] = {-1, -1}, seeds[] = {2, 0};
  hs_sample_cfg cfg = cfg_of(2, fan, HS_SAMPLE_UNIFORM, false);
  hs_batch b;
  batch_for(&small_graph, &cfg, 2, &b);
  run_ref(&small_graph, &cfg, seeds, 2, 0, 0, &b);
  const hs_block *blk = &b.blocks[0]; /* row_ptr 0,2,4,4,5,7 col 2,3,4,0,5,2,1 */
  int32_t tp[7], tc[7];
  hs__block_transpose(blk, tp, tc);
  const int32_t ep[] = {0, 1, 2, 4, 5, 6, 7}, ec[] = {1, 4, 0, 4, 0, 1, 3};
  for (int i = 0; i < 7; i++) cr_expect_eq(tp[i], ep[i], "t_ptr[%d]", i);
  for (int i = 0; i < 7; i++) cr_expect_eq(tc[i], ec[i], "t_col[%d]", i);
  hs__batch_free(&b);
}

Test(sample_ref, rejects_bad_configurations_and_seeds) {
  const int32_t fan[] = {2}, dup[] = {1, 1}, out_of_range[] = {1, 6};
  hs_sample_cfg cfg = cfg_of(1, fan, HS_SAMPLE_WEIGHTED, false);
  cr_expect_eq(hs__sample_cfg_check(&cfg, &small_graph), HS_ERR_INVALID_ARG);
  cfg.mode = HS_SAMPLE_UNIFORM;
  cfg.fanout[0] = -2;
  cr_expect_eq(hs__sample_cfg_check(&cfg, &small_graph), HS_ERR_INVALID_ARG);
  cfg.fanout[0] = 2;
  hs_batch b;
  batch_for(&small_graph, &cfg, 2, &b);
  cr_expect_eq(hs__ref_sample_batch(&small_graph, &cfg, dup, 2, 0, 0, &b), HS_ERR_INVALID_ARG);
  cr_expect_eq(hs__ref_sample_batch(&small_graph, &cfg, out_of_range, 2, 0, 0, &b), HS_ERR_RANGE);
  cfg.max_vertices = 1;
  cr_expect_eq(hs__ref_sample_batch(&small_graph, &cfg, (const int32_t[]){1, 2}, 2, 0, 0, &b),
               HS_ERR_INVALID_ARG);
  hs__batch_free(&b);
}

/* ---- the race key ----------------------------------------------------------------- */

Test(sample_rng, neglog2_matches_double_precision) {
  for (uint32_t i = 0; i < 4096; i++) {
    uint32_t w = hs_philox_draw(1, 2, 3, 4, i).v[0];
    if (i < 4) w = i == 0 ? 0u : (i == 1 ? 0xffffffffu : i);
    double u = (2.0 * w + 1.0) / 8589934592.0;
    double got = hs_neglog2_q24(w) / 16777216.0;
    cr_assert(fabs(got + log2(u)) < 4e-7, "w=%u: %.9f vs %.9f", w, got, -log2(u));
  }
}

Test(sample_rng, race_key_orders_like_real_keys) {
  /* keys compare as -log2(u)/w does, except for near-ties */
  int wrong = 0;
  for (uint32_t i = 0; i < 20000; i++) {
    hs_philox_ctr r = hs_philox_draw(7, 1, 2, 3, i);
    float w1 = 1e-3f + hs_philox_unit(r.v[2]) * 100.0f, w2 = 1e-30f + hs_philox_unit(r.v[3]);
    uint32_t b1, b2;
    memcpy(&b1, &w1, 4);
    memcpy(&b2, &w2, 4);
    double k1 = -log2((2.0 * r.v[0] + 1.0) / 8589934592.0) / w1;
    double k2 = -log2((2.0 * r.v[1] + 1.0) / 8589934592.0) / w2;
    if (fabs(k1 - k2) < 1e-5 * fmax(k1, k2)) continue;
    if ((k1 < k2) != (hs_race_key(r.v[0], b1) < hs_race_key(r.v[1], b2))) wrong++;
  }
  cr_expect_eq(wrong, 0);
}

Test(sample_rng, weight_rules) {
  uint32_t one = 0x3f800000u, zero = 0, neg = 0xbf800000u, sub = 1u, inf = 0x7f800000u,
           nan = 0x7fc00000u, negzero = 0x80000000u;
  cr_expect(hs_weight_ok(one));
  cr_expect(!hs_weight_ok(zero) && !hs_weight_ok(neg) && !hs_weight_ok(sub));
  cr_expect(!hs_weight_ok(inf) && !hs_weight_ok(nan));
  cr_expect(hs_weight_above(one, zero) && !hs_weight_above(zero, zero));
  cr_expect(hs_weight_above(zero, neg) && !hs_weight_above(neg, zero));
  cr_expect(hs_weight_above(zero, negzero) && hs_weight_above(sub, zero));
  cr_expect(!hs_weight_above(nan, neg) && hs_weight_above(inf, one));
}

/* ---- distributions on a star ------------------------------------------------------- */

#define LEAVES 20
#define TRIALS 20000

/* Row of the centre sampled TRIALS times (one batch index per trial). */
static void star_counts(const test_graph *t, const hs_sample_cfg *cfg, double *first,
                        double *all, double *pairs, int *dup_trials) {
  int64_t out[64];
  for (uint32_t trial = 0; trial < TRIALS; trial++) {
    int64_t n = hs__ref_sample_row(&t->g, cfg, 0, 3, trial, 0, out);
    cr_assert(n >= 0 && n <= 64);
    bool dup = false;
    for (int64_t i = 0; i < n; i++) {
      int32_t leaf = t->g.indices[out[i]] - 1;
      cr_assert(leaf >= 0 && leaf < LEAVES);
      if (all) all[leaf]++;
      if (first && i == 0) first[leaf]++;
      for (int64_t j = 0; j < i; j++) {
        int32_t other = t->g.indices[out[j]] - 1;
        if (other == leaf) dup = true;
        else if (pairs) pairs[leaf < other ? leaf * LEAVES + other : other * LEAVES + leaf]++;
      }
    }
    if (dup && dup_trials) (*dup_trials)++;
  }
}

/* Pair cells with both leaves distinct, packed. */
static int pack_pairs(const double *pairs, double *packed) {
  int n = 0;
  for (int a = 0; a < LEAVES; a++)
    for (int b = a + 1; b < LEAVES; b++) packed[n++] = pairs[a * LEAVES + b];
  return n;
}

static double pairs_p(const double *pairs) {
  double packed[LEAVES * LEAVES];
  int n = pack_pairs(pairs, packed);
  double total = 0, expect[LEAVES * LEAVES];
  for (int i = 0; i < n; i++) total += packed[i];
  for (int i = 0; i < n; i++) expect[i] = total / n;
  return chi2_sf(chi2_stat(packed, expect, n), n - 1);
}

Test(sample_dist, uniform_without_replacement_is_uniform_over_subsets) {
  test_graph t;
  cr_assert(tg_star(&t, LEAVES, false));
  const int32_t fan[] = {5};
  hs_sample_cfg cfg = cfg_of(1, fan, HS_SAMPLE_UNIFORM, false);
  double all[LEAVES] = {0}, pairs[LEAVES * LEAVES] = {0};
  int dups = 0;
  star_counts(&t, &cfg, NULL, all, pairs, &dups);
  cr_expect_eq(dups, 0);
  cr_expect_gt(uniform_p(all, LEAVES), P_MIN, "marginal p = %g", uniform_p(all, LEAVES));
  cr_expect_gt(pairs_p(pairs), P_MIN, "pair p = %g", pairs_p(pairs));
  tg_free(&t);
}

/* Floyd with the classic off-by-one (r drawn from [0, t) instead of
 * [0, t]): the test above must reject it. */
Test(sample_dist, chi2_rejects_an_off_by_one_floyd) {
  double all[LEAVES] = {0};
  for (uint32_t trial = 0; trial < TRIALS; trial++) {
    hs_rng_stream s = hs_rng_open(1, 3, trial, 0, HS_RNG_UNIFORM, 0);
    int64_t out[5];
    for (int j = 0; j < 5; j++) {
      int64_t t = LEAVES - 5 + j;
      int64_t r = hs_philox_below(hs_rng_word(&s, (uint32_t)j), (uint32_t)t);
      bool taken = false;
      for (int i = 0; i < j; i++) taken |= out[i] == r;
      out[j] = taken ? t : r;
      all[out[j]]++;
    }
  }
  cr_expect_lt(uniform_p(all, LEAVES), P_MIN);
}

Test(sample_dist, uniform_with_replacement) {
  test_graph t;
  cr_assert(tg_star(&t, LEAVES, false));
  const int32_t fan[] = {5};
  hs_sample_cfg cfg = cfg_of(1, fan, HS_SAMPLE_UNIFORM, true);
  double all[LEAVES] = {0};
  int dups = 0;
  star_counts(&t, &cfg, NULL, all, NULL, &dups);
  /* P(some repeat among 5 of 20) = 1 - 20*19*18*17*16/20^5 = 0.4186 */
  cr_expect(fabs(dups / (double)TRIALS - 0.4186) < 0.015, "repeat rate %g", dups / (double)TRIALS);
  cr_expect_gt(uniform_p(all, LEAVES), P_MIN);
  tg_free(&t);
}

static void weigh_star(test_graph *t) {
  for (int i = 0; i < LEAVES; i++) t->weights[i] = (float)(i + 1);
  t->weights[3] = 0.0f; /* never chosen */
  t->weights[7] = -2.0f;
}

static double weighted_p(const double *counts, const test_graph *t) {
  double total = 0, wsum = 0, obs[LEAVES], expect[LEAVES];
  int n = 0;
  for (int i = 0; i < LEAVES; i++) total += counts[i];
  for (int i = 0; i < LEAVES; i++)
    if (t->weights[i] > 0) wsum += t->weights[i];
  for (int i = 0; i < LEAVES; i++) {
    if (t->weights[i] <= 0) continue;
    obs[n] = counts[i];
    expect[n++] = total * t->weights[i] / wsum;
  }
  return chi2_sf(chi2_stat(obs, expect, n), n - 1);
}

Test(sample_dist, weighted_first_pick_is_proportional_to_weight) {
  test_graph t;
  cr_assert(tg_star(&t, LEAVES, true));
  weigh_star(&t);
  const int32_t fan[] = {4};
  hs_sample_cfg cfg = cfg_of(1, fan, HS_SAMPLE_WEIGHTED, false);
  double first[LEAVES] = {0}, all[LEAVES] = {0};
  int dups = 0;
  star_counts(&t, &cfg, first, all, NULL, &dups);
  cr_expect_eq(dups, 0);
  cr_expect_eq(all[3], 0);
  cr_expect_eq(all[7], 0);
  /* the smallest race key is a draw proportional to weight */
  cr_expect_gt(weighted_p(first, &t), P_MIN, "p = %g", weighted_p(first, &t));
  /* a uniform first pick must fail the same test */
  double flat[LEAVES];
  for (int i = 0; i < LEAVES; i++) flat[i] = t.weights[i] > 0 ? TRIALS / 18.0 : 0;
  cr_expect_lt(weighted_p(flat, &t), P_MIN);
  /* inclusion grows with weight */
  cr_expect_gt(all[19], all[10]);
  cr_expect_gt(all[10], all[1]);
  tg_free(&t);
}

Test(sample_dist, weighted_with_replacement_is_proportional_to_weight) {
  test_graph t;
  cr_assert(tg_star(&t, LEAVES, true));
  weigh_star(&t);
  const int32_t fan[] = {3};
  hs_sample_cfg cfg = cfg_of(1, fan, HS_SAMPLE_WEIGHTED, true);
  double all[LEAVES] = {0};
  star_counts(&t, &cfg, NULL, all, NULL, NULL);
  cr_expect_eq(all[3], 0);
  cr_expect_eq(all[7], 0);
  cr_expect_gt(weighted_p(all, &t), P_MIN, "p = %g", weighted_p(all, &t));
  tg_free(&t);
}

Test(sample_dist, threshold_keeps_qualifying_edges_uniformly) {
  test_graph t;
  cr_assert(tg_star(&t, LEAVES, true));
  for (int i = 0; i < LEAVES; i++) t.weights[i] = (float)(i % 4); /* 0,1,2,3,0,... */
  const int32_t fan[] = {4};
  hs_sample_cfg cfg = cfg_of(1, fan, HS_SAMPLE_THRESHOLD, false);
  cfg.threshold[0] = 1.0f; /* leaves with weight 2 or 3 qualify: 10 of 20 */
  double all[LEAVES] = {0};
  int dups = 0;
  star_counts(&t, &cfg, NULL, all, NULL, &dups);
  cr_expect_eq(dups, 0);
  double q[LEAVES];
  int n = 0;
  for (int i = 0; i < LEAVES; i++) {
    if (t.weights[i] > 1.0f) q[n++] = all[i];
    else cr_expect_eq(all[i], 0, "leaf %d (weight %g) chosen", i, t.weights[i]);
  }
  cr_assert_eq(n, 10);
  cr_expect_gt(uniform_p(q, n), P_MIN);
  /* 4 per trial: the fanout caps the qualifying 10 */
  double total = 0;
  for (int i = 0; i < n; i++) total += q[i];
  cr_expect_eq(total, 4.0 * TRIALS);
  /* fewer qualifying (5, weight 3) than the fanout: all of them (in key
   * order, since the row is longer than the fanout) */
  cfg.threshold[0] = 2.5f;
  int64_t out[8];
  cr_assert_eq(hs__ref_sample_row(&t.g, &cfg, 0, 0, 0, 0, out), 4);
  cfg.fanout[0] = 6;
  cr_assert_eq(hs__ref_sample_row(&t.g, &cfg, 0, 0, 0, 0, out), 5);
  int hit = 0;
  for (int i = 0; i < 5; i++) hit |= 1 << (out[i] / 4);
  for (int i = 0; i < 5; i++) cr_expect_eq(out[i] % 4, 3);
  cr_expect_eq(hit, 31);
  tg_free(&t);
}

/* ---- invariants on generated and real graphs --------------------------------------- */

static void every_mode(const test_graph *t, const int32_t *seeds, int32_t n_seeds) {
  const int32_t fan[] = {6, 4, 3};
  struct { hs_sample_mode mode; bool replace; } modes[] = {
      {HS_SAMPLE_UNIFORM, false}, {HS_SAMPLE_UNIFORM, true}, {HS_SAMPLE_WEIGHTED, false},
      {HS_SAMPLE_WEIGHTED, true}, {HS_SAMPLE_THRESHOLD, false}};
  for (size_t m = 0; m < HS_ARRAY_LEN(modes); m++) {
    if (modes[m].mode != HS_SAMPLE_UNIFORM && !t->g.weights) continue;
    hs_sample_cfg cfg = cfg_of(3, fan, modes[m].mode, modes[m].replace);
    cfg.threshold[0] = cfg.threshold[1] = cfg.threshold[2] = 1.0f;
    hs_batch b;
    batch_for(&t->g, &cfg, n_seeds, &b);
    run_ref(&t->g, &cfg, seeds, n_seeds, 1, 2, &b);
    if (!modes[m].replace && modes[m].mode == HS_SAMPLE_UNIFORM) {
      /* exact row sizes: min(degree, fanout) */
      for (int h = 0; h < 3; h++) {
        const hs_block *blk = hs__batch_hop(&b, h);
        for (int32_t v = 0; v < blk->n_dst; v++) {
          int64_t d = t->g.indptr[b.ids[v] + 1] - t->g.indptr[b.ids[v]];
          cr_assert_eq(blk->row_ptr[v + 1] - blk->row_ptr[v], d < fan[h] ? d : fan[h]);
        }
      }
    }
    hs__batch_free(&b);
  }
}

Test(sample_ref, invariants_on_a_random_graph) {
  test_graph t;
  cr_assert(tg_random(&t, 3000, 3.0, 400, 42, true));
  cr_assert_eq(hs__csr_validate(&t.g), HS_OK, "%s", hs_last_error());
  int32_t seeds[64];
  for (int i = 0; i < 64; i++) seeds[i] = (int32_t)((i * 7919) % 3000);
  every_mode(&t, seeds, 64);
  tg_free(&t);
}

Test(sample_ref, same_inputs_same_batch_and_epochs_differ) {
  test_graph t;
  cr_assert(tg_random(&t, 2000, 3.0, 200, 9, false));
  const int32_t fan[] = {5, 5};
  hs_sample_cfg cfg = cfg_of(2, fan, HS_SAMPLE_UNIFORM, false);
  int32_t seeds[32];
  for (int i = 0; i < 32; i++) seeds[i] = i * 61;
  hs_batch a, b;
  batch_for(&t.g, &cfg, 32, &a);
  batch_for(&t.g, &cfg, 32, &b);
  run_ref(&t.g, &cfg, seeds, 32, 4, 1, &a);
  run_ref(&t.g, &cfg, seeds, 32, 4, 1, &b);
  cr_expect_null(sc_same_batch(&a, &b));
  run_ref(&t.g, &cfg, seeds, 32, 5, 1, &b);
  cr_expect_not_null(sc_same_batch(&a, &b));
  hs__batch_free(&a);
  hs__batch_free(&b);
  tg_free(&t);
}

/* A budgeted batch is the unbudgeted one cut at the budget: the same first
 * vertices, and each block restricted to them. */
Test(sample_ref, budget_is_a_prefix_of_the_unbudgeted_batch) {
  test_graph t;
  cr_assert(tg_random(&t, 5000, 3.0, 300, 5, false));
  const int32_t fan[] = {8, 6, 4};
  hs_sample_cfg cfg = cfg_of(3, fan, HS_SAMPLE_UNIFORM, false);
  int32_t seeds[50];
  for (int i = 0; i < 50; i++) seeds[i] = i * 97;
  hs_batch full, cut;
  batch_for(&t.g, &cfg, 50, &full);
  run_ref(&t.g, &cfg, seeds, 50, 0, 0, &full);
  const int64_t budgets[] = {50, 51, 200, 700, (int64_t)full.n_vertices + 5};
  for (size_t k = 0; k < HS_ARRAY_LEN(budgets); k++) {
    hs_sample_cfg c = cfg;
    c.max_vertices = budgets[k];
    batch_for(&t.g, &c, 50, &cut);
    run_ref(&t.g, &c, seeds, 50, 0, 0, &cut);
    int32_t nb = full.n_vertices < budgets[k] ? full.n_vertices : (int32_t)budgets[k];
    cr_assert_eq(cut.n_vertices, nb);
    for (int32_t i = 0; i < nb; i++) cr_assert_eq(cut.ids[i], full.ids[i]);
    for (int h = 0; h < 3; h++) {
      const hs_block *f = hs__batch_hop(&full, h), *c2 = hs__batch_hop(&cut, h);
      int32_t at = 0;
      for (int32_t v = 0; v < c2->n_dst; v++) {
        cr_assert_eq(c2->row_ptr[v], at);
        for (int32_t i = f->row_ptr[v]; i < f->row_ptr[v + 1]; i++)
          if (f->col[i] < nb) cr_assert_eq(c2->col[at++], f->col[i]);
      }
      cr_assert_eq(c2->row_ptr[c2->n_dst], at);
    }
    hs__batch_free(&cut);
  }
  hs__batch_free(&full);
  tg_free(&t);
}

static void real_graph(const char *rel) {
  char path[1024];
  if (!tg_shared_path(path, sizeof path, rel)) cr_skip_test("%s not present", rel);
  test_graph t;
  cr_assert(tg_edge_file(&t, path), "cannot read %s", path);
  cr_assert_eq(hs__csr_validate(&t.g), HS_OK, "%s", hs_last_error());
  const int32_t fan[] = {15, 10, 5};
  hs_sample_cfg cfg = cfg_of(3, fan, HS_SAMPLE_UNIFORM, false);
  int32_t seeds[256];
  for (int i = 0; i < 256; i++) seeds[i] = (int32_t)(((int64_t)i * 104729) % t.g.n);
  hs_batch b;
  batch_for(&t.g, &cfg, 256, &b);
  run_ref(&t.g, &cfg, seeds, 256, 0, 0, &b);
  cr_expect_gt(b.n_vertices, 256);
  hs__batch_free(&b);
  tg_free(&t);
}

Test(sample_ref, cora) { real_graph("cora/cora.cites"); }
Test(sample_ref, facebook) { real_graph("musae_facebook/edges/facebook_edges.csv"); }
