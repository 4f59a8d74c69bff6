/* Generator: determinism (same seed, same bytes, any thread count), sizes,
 * CSR invariants, SBM homophily and separable features against the
 * predicted Bayes accuracy, R-MAT skew, float16 features, bad options. */
#include <math.h>

#include "data/hs_graph.h"
#include "hs_test_util.h"

static hs_dataset_info gen_info; /* of the last gen_into */

static char *gen_into(const char *root, const char *name, const hs_generate_opts *o,
                      hs_generate_summary *s) {
  char *dst = tu_path(root, name);
  hs_dataset_info_init(&gen_info);
  cr_assert_eq(hs_generate(dst, o, &gen_info, s), HS_OK, "%s", hs_last_error());
  return dst;
}

static bool same_file(const char *a, const char *b, const char *name) {
  char *pa = tu_path(a, name), *pb = tu_path(b, name);
  FILE *fa = fopen(pa, "rb"), *fb = fopen(pb, "rb");
  cr_assert(fa && fb, "missing %s", name);
  bool same = true;
  int ca, cb;
  do {
    ca = fgetc(fa);
    cb = fgetc(fb);
    if (ca != cb) same = false;
  } while (same && ca != EOF);
  fclose(fa);
  fclose(fb);
  free(pa);
  free(pb);
  return same;
}

static const char *const files[] = {"indptr.npy", "indices.npy", "feat.npy", "label.npy",
                                    "train_idx.npy", "valid_idx.npy", "test_idx.npy",
                                    "meta.json"};

Test(generate, same_seed_same_bytes_any_threads) {
  for (int kind = HS_GENERATE_RMAT; kind <= HS_GENERATE_SBM; kind++) {
    char *root = tu_mkdtemp();
    hs_generate_opts o;
    hs_generate_opts_init(&o, (hs_generate_kind)kind);
    o.scale = 11;
    o.num_vertices = 1500;
    o.seed = 42;
    o.threads = 1;
    char *a = gen_into(root, "a", &o, NULL);
    o.threads = 2;
    char *b = gen_into(root, "b", &o, NULL);
    o.seed = 43;
    char *c = gen_into(root, "c", &o, NULL);
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++)
      cr_expect(same_file(a, b, files[i]), "kind %d: %s differs between runs", kind, files[i]);
    cr_expect_not(same_file(a, c, "indices.npy"), "another seed gave the same edges");
    cr_expect_not(same_file(a, c, "feat.npy"), "another seed gave the same features");
    free(a);
    free(b);
    free(c);
    tu_rmtree(root);
  }
}

static void check_csr(const hs_graph *g, bool symmetric) {
  for (int64_t v = 0; v < g->n; v++)
    for (int64_t k = g->indptr[v]; k < g->indptr[v + 1]; k++) {
      int32_t u = g->indices[k];
      cr_assert_neq(u, v, "self-loop at %lld", (long long)v);
      if (k > g->indptr[v]) cr_assert_gt(u, g->indices[k - 1], "row %lld not sorted/unique", (long long)v);
      if (!symmetric) continue;
      /* Binary search for v in row u. */
      int64_t lo = g->indptr[u], hi = g->indptr[u + 1];
      while (lo < hi) {
        int64_t mid = (lo + hi) / 2;
        if (g->indices[mid] < v) lo = mid + 1;
        else hi = mid;
      }
      cr_assert(lo < g->indptr[u + 1] && g->indices[lo] == v, "edge %d->%lld has no reverse", u,
                (long long)v);
    }
}

Test(generate, sbm_sizes_homophily_and_separable_features) {
  char *root = tu_mkdtemp();
  hs_generate_opts o;
  hs_generate_opts_init(&o, HS_GENERATE_SBM);
  o.num_vertices = 6000;
  o.num_classes = 5;
  o.num_features = 12;
  o.edge_factor = 8;
  o.homophily = 0.7;
  o.margin = 3.0;
  hs_generate_summary s;
  hs_generate_summary_init(&s);
  char *dst = gen_into(root, "sbm", &o, &s);
  hs_dataset *ds;
  cr_assert_eq(hs_dataset_open(dst, &ds), HS_OK, "%s", hs_last_error());
  const hs_graph *g = hs__dataset_graph(ds);
  cr_expect_eq(g->n, 6000);
  cr_expect_eq(g->f, 12);
  cr_expect_eq(g->num_classes, 5);
  cr_expect_leq(g->e, 2 * 48000);
  cr_expect_geq(g->e, 2 * 48000 * 95 / 100, "dedup removed too much: %lld", (long long)g->e);
  check_csr(g, true);
  cr_expect(fabs(s.homophily - 0.7) < 0.02, "homophily %f", s.homophily);
  for (int k = 0; k < 5; k++) cr_expect_eq(g->labels[k * 1200], k);
  cr_expect_eq(g->split_n[0] + g->split_n[1] + g->split_n[2], 6000);
  /* The argmax of the first K coordinates is the Bayes rule: its accuracy
   * must be what the summary predicts (6000 draws: within ~0.02). */
  const float *x = g->feat;
  int64_t right = 0;
  for (int64_t v = 0; v < g->n; v++) {
    int best = 0;
    for (int j = 1; j < 5; j++)
      if (x[v * 12 + j] > x[v * 12 + best]) best = j;
    right += best == g->labels[v];
  }
  double acc = (double)right / (double)g->n;
  cr_expect(s.bayes_accuracy > 0.8 && s.bayes_accuracy < 0.95, "bayes %f", s.bayes_accuracy);
  cr_expect(fabs(acc - s.bayes_accuracy) < 0.025, "measured %f, predicted %f", acc, s.bayes_accuracy);
  /* Noise coordinates: mean 0, variance sigma^2. */
  double sum = 0, sq = 0;
  for (int64_t v = 0; v < g->n; v++)
    for (int j = 5; j < 12; j++) {
      sum += x[v * 12 + j];
      sq += (double)x[v * 12 + j] * x[v * 12 + j];
    }
  double cnt = (double)g->n * 7, mean = sum / cnt;
  cr_expect(fabs(mean) < 0.02 && fabs(sq / cnt - mean * mean - 1) < 0.03, "mean %f var %f", mean,
            sq / cnt - mean * mean);
  hs_dataset_close(ds);
  char *meta = tu_path(dst, "meta.json");
  FILE *f = fopen(meta, "r");
  char buf[4096] = {0};
  cr_assert(f);
  cr_expect_gt(fread(buf, 1, sizeof buf - 1, f), 0);
  fclose(f);
  cr_expect(strstr(buf, "\"bayes_accuracy\": 0.8") || strstr(buf, "\"bayes_accuracy\": 0.9"), "%s", buf);
  free(meta);
  free(dst);
  tu_rmtree(root);
}

Test(generate, sbm_edge_probabilities) {
  char *root = tu_mkdtemp();
  hs_generate_opts o;
  hs_generate_opts_init(&o, HS_GENERATE_SBM);
  o.num_vertices = 1000;
  o.num_classes = 4;
  o.p_in = 0.02;
  o.p_out = 0.002;
  o.dedup = false;
  o.self_loops = HS_SELF_LOOPS_KEEP;
  hs_generate_summary s;
  hs_generate_summary_init(&s);
  char *dst = gen_into(root, "p", &o, &s);
  /* 4 x C(250, 2) x 0.02 + 6 x 250^2 x 0.002 = 2490 + 750 drawn edges. */
  cr_expect_eq(gen_info.num_edges, 2 * 3240);
  cr_expect(fabs(s.homophily - 2490.0 / 3240.0) < 0.03, "homophily %f", s.homophily);
  free(dst);
  tu_rmtree(root);
}

Test(generate, rmat_skewed_and_in_range) {
  char *root = tu_mkdtemp();
  hs_generate_opts o;
  hs_generate_opts_init(&o, HS_GENERATE_RMAT);
  o.num_vertices = 3000; /* not a power of two: ids drawn in [0, 4096) */
  o.num_classes = 4;
  o.undirected = false;
  o.dedup = false;
  o.self_loops = HS_SELF_LOOPS_KEEP;
  hs_generate_summary s;
  hs_generate_summary_init(&s);
  char *dst = gen_into(root, "r", &o, &s);
  hs_dataset *ds;
  cr_assert_eq(hs_dataset_open(dst, &ds), HS_OK, "%s", hs_last_error());
  hs_dataset_stats st;
  hs_dataset_stats_init(&st);
  cr_assert_eq(hs_dataset_stats_compute(ds, &st), HS_OK);
  cr_expect_eq(gen_info.num_vertices, 3000);
  cr_expect_eq(gen_info.num_edges, 3000 * 16);
  cr_expect_gt(st.degree_max, 10 * st.degree_mean, "max %lld mean %f", (long long)st.degree_max,
               st.degree_mean);
  cr_expect_gt(st.isolated, 0);
  /* Shared high id bits link more often: above the 1/K of random labels. */
  cr_expect_gt(s.homophily, 0.3, "homophily %f", s.homophily);
  hs_dataset_close(ds);
  free(dst);
  tu_rmtree(root);
}

static float half_to_float(uint16_t h) {
  int e = (h >> 10) & 31, m = h & 1023;
  float v = e == 0 ? ldexpf((float)m, -24) : ldexpf((float)(m | 1024), e - 25);
  return h & 0x8000 ? -v : v;
}

Test(generate, float16_features_round_float32) {
  char *root = tu_mkdtemp();
  hs_generate_opts o;
  hs_generate_opts_init(&o, HS_GENERATE_SBM);
  o.num_vertices = 300;
  o.num_features = 10;
  char *a = gen_into(root, "a", &o, NULL);
  o.feature_dtype = HS_DTYPE_FLOAT16;
  char *b = gen_into(root, "b", &o, NULL);
  hs_dataset *da, *db;
  cr_assert_eq(hs_dataset_open(a, &da), HS_OK);
  cr_assert_eq(hs_dataset_open(b, &db), HS_OK);
  const hs_graph *ga = hs__dataset_graph(da), *gb = hs__dataset_graph(db);
  cr_assert_eq(gb->feat_dtype, HS_DTYPE_FLOAT16);
  const float *x = ga->feat;
  const uint16_t *h = gb->feat;
  for (int i = 0; i < 3000; i++) {
    float back = half_to_float(h[i]);
    /* Round to nearest: within half a unit in the last place (2^-11 relative). */
    cr_assert(fabsf(back - x[i]) <= fabsf(x[i]) * (1.0f / 2048.0f) + 1e-7f, "%d: %f vs %f", i,
              back, x[i]);
  }
  hs_dataset_close(da);
  hs_dataset_close(db);
  free(a);
  free(b);
  tu_rmtree(root);
}

Test(generate, bad_options_leave_nothing) {
  char *root = tu_mkdtemp();
  char *dst = tu_path(root, "x");
  hs_generate_opts o;
  hs_generate_opts_init(&o, HS_GENERATE_SBM);
  o.num_vertices = 100;
  o.num_classes = 8;
  o.num_features = 4;
  TU_EXPECT_FAIL(hs_generate(dst, &o, NULL, NULL), HS_ERR_INVALID_ARG, "4 features", "per class", "8");
  o.num_features = 8;
  o.homophily = 1.5;
  TU_EXPECT_FAIL(hs_generate(dst, &o, NULL, NULL), HS_ERR_INVALID_ARG, "homophily", "1.5", "[0, 1]");
  hs_generate_opts_init(&o, HS_GENERATE_RMAT);
  o.rmat_a = 0.9;
  TU_EXPECT_FAIL(hs_generate(dst, &o, NULL, NULL), HS_ERR_INVALID_ARG, "R-MAT", "a + b + c", "<= 1");
  cr_expect_eq(tu_count_prefix(root, "x"), 0);
  free(dst);
  tu_rmtree(root);
}

/* The one-hop prediction: informative where the graph is, equal to the
 * features-only accuracy where neighbours' classes are uniform, and not
 * beaten by any rule of the family a one-layer model draws from
 * (argmax_c x_c + lambda m_c, lambda on a grid) on the same vertices. */
static double linear_rule(const hs_graph *g, int32_t k, const int32_t *ids, int64_t n,
                          double lambda) {
  int64_t right = 0;
  const float *x = g->feat;
  double *m = calloc((size_t)k, sizeof *m);
  for (int64_t i = 0; i < n; i++) {
    int64_t v = ids[i];
    int64_t d = g->indptr[v + 1] - g->indptr[v];
    for (int32_t j = 0; j < k; j++) m[j] = 0;
    for (int64_t p = g->indptr[v]; p < g->indptr[v + 1]; p++)
      for (int32_t j = 0; j < k; j++) m[j] += x[(int64_t)g->indices[p] * g->f + j];
    int32_t best = 0;
    double bs = -INFINITY;
    for (int32_t c = 0; c < k; c++) {
      double s = x[v * g->f + c] + (d ? lambda * m[c] / (double)d : 0);
      if (s > bs) {
        bs = s;
        best = c;
      }
    }
    right += best == g->labels[v];
  }
  free(m);
  return (double)right / (double)n;
}

Test(generate, sbm_one_hop_prediction) {
  char *root = tu_mkdtemp();
  hs_generate_opts o;
  hs_generate_opts_init(&o, HS_GENERATE_SBM);
  o.num_vertices = 20000;
  o.num_classes = 8;
  o.edge_factor = 10;
  o.homophily = 0.5;
  hs_generate_summary s;
  hs_generate_summary_init(&s);
  char *dst = gen_into(root, "sbm", &o, &s);
  hs_dataset *ds;
  cr_assert_eq(hs_dataset_open(dst, &ds), HS_OK, "%s", hs_last_error());
  const hs_graph *g = hs__dataset_graph(ds);
  const int32_t *test = g->split[HS_SPLIT_TEST];
  int64_t n_test = g->split_n[HS_SPLIT_TEST];
  cr_expect_gt(s.onehop_accuracy, s.bayes_accuracy + 0.2, "one-hop %f, features %f",
               s.onehop_accuracy, s.bayes_accuracy);
  double best = 0;
  for (int i = 0; i <= 40; i++) best = fmax(best, linear_rule(g, 8, test, n_test, 0.25 * i));
  /* 4000 test vertices: the rules share them, so differences are tighter
   * than the +-0.007 of one accuracy. */
  cr_expect_geq(s.onehop_accuracy, best - 0.01, "a linear rule %f beats the prediction %f", best,
                s.onehop_accuracy);
  cr_expect_leq(s.onehop_accuracy, best + 0.03, "prediction %f far above the best linear rule %f",
                s.onehop_accuracy, best);
  hs_dataset_close(ds);
  char *meta = tu_path(dst, "meta.json");
  FILE *f = fopen(meta, "r");
  char buf[4096] = {0};
  cr_assert(f);
  cr_expect_gt(fread(buf, 1, sizeof buf - 1, f), 0);
  fclose(f);
  cr_expect(strstr(buf, "\"one_hop_mean\": 0.") != NULL, "%s", buf);
  free(meta);
  free(dst);

  /* Neighbours whose classes are uniform carry nothing. */
  o.homophily = 1.0 / 8;
  dst = gen_into(root, "flat", &o, &s);
  cr_expect(fabs(s.onehop_accuracy - s.bayes_accuracy) < 0.025, "one-hop %f, features %f",
            s.onehop_accuracy, s.bayes_accuracy);
  free(dst);

  /* R-MAT mixing is not the SBM's: no prediction. */
  hs_generate_opts_init(&o, HS_GENERATE_RMAT);
  o.scale = 10;
  dst = gen_into(root, "rmat", &o, &s);
  cr_expect(isnan(s.onehop_accuracy));
  free(dst);
  tu_rmtree(root);
}
