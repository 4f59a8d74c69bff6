/* The trainer-tier COO cache: first-seen insertion without eviction (against
 * a model), errors that leave the cache as it was, hit rates on uniform and
 * skewed access (Zipf ids, neighbour sampling on a power-law graph) by fill
 * policy, and the device assembly: the batch matrix equals direct indexing
 * bit for bit, pipelined over two slots on in-order and out-of-order
 * queues, with and without prefill, for word and byte rows, with rows
 * read from memory or through the host tier. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cache/hs_cache.h"
#include "cache/hs_host_tier.h"
#include "data/hs_npy.h"
#include "hs_test_cl.h"
#include "rng/philox.h"
#include "sample/hs_sample.h"
#include "data/hs_graph.h"
#include "hs_test_util.h"

/* ---- access patterns ---------------------------------------------------------- */

/* Batches of distinct ids drawn by `draw` (uniform or Zipf), keyed by
 * (seed, batch, i) so every run sees the same stream. */
typedef struct stream {
  int64_t n;
  int32_t *ids;
  uint32_t *stamp; /* [n]: batch + 1 when already drawn into this batch */
  const double *cdf; /* Zipf: cumulative weights by rank, NULL: uniform */
  const int32_t *by_rank; /* Zipf: vertex of each rank */
  uint64_t seed;
  uint32_t batch;
  int32_t size;
} stream;

static void stream_init(stream *s, int64_t n, int32_t size, uint64_t seed, const double *cdf,
                        const int32_t *by_rank) {
  memset(s, 0, sizeof *s);
  s->n = n;
  s->size = size;
  s->seed = seed;
  s->cdf = cdf;
  s->by_rank = by_rank;
  s->ids = malloc(sizeof *s->ids * (size_t)n); /* any batch size up to n */
  s->stamp = calloc((size_t)n, sizeof *s->stamp);
  cr_assert(s->ids && s->stamp);
}

static void stream_free(stream *s) {
  free(s->ids);
  free(s->stamp);
}

static int32_t draw_one(const stream *s, uint32_t i, uint32_t attempt) {
  hs_philox_ctr r = hs_philox_draw(s->seed, 0xacce55u, s->batch, i, attempt);
  if (!s->cdf) return (int32_t)hs_philox_below(r.v[0], (uint32_t)s->n);
  double u = ((double)r.v[0] * 4294967296.0 + (double)r.v[1]) / 18446744073709551616.0;
  u *= s->cdf[s->n - 1];
  int64_t lo = 0, hi = s->n - 1; /* first rank whose cumulative weight exceeds u */
  while (lo < hi) {
    int64_t mid = (lo + hi) / 2;
    if (s->cdf[mid] > u) hi = mid;
    else lo = mid + 1;
  }
  return s->by_rank[lo];
}

/* The next batch: `size` distinct ids. */
static const int32_t *stream_next(stream *s) {
  s->batch++;
  for (int32_t i = 0; i < s->size; i++) {
    int32_t v;
    uint32_t attempt = 0;
    do v = draw_one(s, (uint32_t)i, attempt++);
    while (s->stamp[v] == s->batch);
    s->stamp[v] = s->batch;
    s->ids[i] = v;
  }
  return s->ids;
}

/* Zipf(s_exp) over n vertices, ranks assigned to a Philox permutation of
 * the ids so that popularity has nothing to do with id order. */
static void zipf_tables(int64_t n, double s_exp, double **cdf, int32_t **by_rank) {
  *cdf = malloc(sizeof **cdf * (size_t)n);
  *by_rank = malloc(sizeof **by_rank * (size_t)n);
  cr_assert(*cdf && *by_rank);
  double acc = 0;
  for (int64_t r = 0; r < n; r++) {
    acc += 1.0 / pow((double)(r + 1), s_exp);
    (*cdf)[r] = acc;
    (*by_rank)[r] = (int32_t)r;
  }
  for (int64_t i = n - 1; i > 0; i--) {
    int64_t j = hs_philox_below(hs_philox_draw(99, 1, 2, 3, (uint32_t)i).v[0], (uint32_t)(i + 1));
    int32_t x = (*by_rank)[i];
    (*by_rank)[i] = (*by_rank)[j];
    (*by_rank)[j] = x;
  }
}

static hs_coo *make_cache(int64_t n, int64_t cap, size_t rb, hs_cache_fill fill) {
  hs_coo_cfg cfg = {.n_vertices = n, .capacity = cap, .row_bytes = rb, .fill = fill};
  hs_coo *c;
  cr_assert_eq(hs__coo_create(&cfg, &c), HS_OK, "%s", hs_last_error());
  return c;
}

/* ---- COO semantics -------------------------------------------------------------- */

Test(coo, first_seen_order_never_evicts) {
  const int64_t n = 3000, cap = 700;
  hs_coo *c = make_cache(n, cap, 16, HS_CACHE_FILL_FIRST);
  hs_coo_plan p;
  cr_assert_eq(hs__coo_plan_alloc(400, &p), HS_OK);
  /* the model: the first `cap` distinct ids of the stream, in stream order */
  int32_t *model = malloc(sizeof *model * (size_t)cap);
  bool *seen = calloc((size_t)n, 1);
  int32_t *before = malloc(sizeof *before * (size_t)cap);
  cr_assert(model && seen && before);
  int64_t m = 0;
  stream s;
  stream_init(&s, n, 0, 17, NULL, NULL);
  for (int b = 0; b < 40; b++) {
    s.size = 50 + (b * 37) % 350;
    const int32_t *ids = stream_next(&s);
    int64_t rows = hs__coo_rows(c);
    memcpy(before, hs__coo_slot_vertices(c), sizeof *before * (size_t)rows);
    cr_assert_eq(hs__coo_classify(c, ids, s.size, &p), HS_OK, "%s", hs_last_error());
    /* plan: hits carry the vertex's slot; misses in local-id order */
    int32_t hits = 0, misses = 0;
    for (int32_t i = 0; i < s.size; i++) {
      if (p.slot[i] >= 0) {
        hits++;
        cr_assert(p.slot[i] < rows, "a hit must be a row held before the batch");
        cr_assert_eq(before[p.slot[i]], ids[i]);
      } else {
        cr_assert_eq(p.miss_local[misses], i);
        cr_assert_eq(p.miss_ids[misses], ids[i]);
        misses++;
      }
    }
    cr_assert_eq(p.n, s.size);
    cr_assert_eq(p.n_hit, hits);
    cr_assert_eq(p.n_miss, misses);
    cr_assert_eq(p.insert_first, rows);
    cr_assert_eq(p.n_insert, misses < cap - rows ? misses : cap - rows);
    /* never evicted: every earlier slot is unchanged */
    cr_assert(memcmp(before, hs__coo_slot_vertices(c), sizeof *before * (size_t)rows) == 0);
    for (int32_t i = 0; i < s.size; i++)
      if (!seen[ids[i]]) {
        seen[ids[i]] = true;
        if (m < cap) model[m++] = ids[i];
      }
    cr_assert_eq(hs__coo_rows(c), m);
    cr_assert(memcmp(model, hs__coo_slot_vertices(c), sizeof *model * (size_t)m) == 0,
              "batch %d: the cache is not the first distinct ids in stream order", b);
    for (int64_t j = 0; j < m; j++) cr_assert_eq(hs__coo_slot_of(c, model[j]), j);
  }
  cr_expect_eq(hs__coo_rows(c), cap, "the stream saw more than `cap` distinct ids");
  stream_free(&s);
  free(model);
  free(seen);
  free(before);
  hs__coo_plan_free(&p);
  hs__coo_destroy(c);
}

Test(coo, errors_leave_the_cache_as_it_was) {
  hs_coo *c = make_cache(100, 10, 8, HS_CACHE_FILL_FIRST);
  hs_coo_plan p;
  cr_assert_eq(hs__coo_plan_alloc(8, &p), HS_OK);
  int32_t first[3] = {4, 2, 9};
  cr_assert_eq(hs__coo_classify(c, first, 3, &p), HS_OK);
  hs_coo_stats st0, st1;
  hs__coo_stats(c, &st0);
  int32_t out_of_range[4] = {4, 50, 100, 7};
  cr_expect_eq(hs__coo_classify(c, out_of_range, 4, &p), HS_ERR_RANGE);
  cr_expect(strstr(hs_last_error(), "100"), "%s", hs_last_error());
  int32_t negative[2] = {51, -1};
  cr_expect_eq(hs__coo_classify(c, negative, 2, &p), HS_ERR_RANGE);
  int32_t repeated_miss[4] = {60, 61, 4, 60};
  cr_expect_eq(hs__coo_classify(c, repeated_miss, 4, &p), HS_ERR_INVALID_ARG);
  cr_expect(strstr(hs_last_error(), "repeated"), "%s", hs_last_error());
  int32_t too_many[9] = {0, 1, 3, 5, 6, 7, 8, 10, 11};
  cr_expect_eq(hs__coo_classify(c, too_many, 9, &p), HS_ERR_INVALID_ARG);
  hs__coo_stats(c, &st1);
  cr_expect(memcmp(&st0, &st1, sizeof st0) == 0, "failed calls counted or inserted");
  cr_expect_eq(hs__coo_rows(c), 3);
  const int32_t untouched[5] = {50, 51, 60, 61, 7};
  for (int i = 0; i < 5; i++)
    cr_expect_eq(hs__coo_slot_of(c, untouched[i]), -1, "vertex %d", untouched[i]);
  /* the marks of the failed calls are gone: these are plain misses now */
  int32_t next[4] = {60, 50, 61, 4};
  cr_assert_eq(hs__coo_classify(c, next, 4, &p), HS_OK, "%s", hs_last_error());
  cr_expect_eq(p.n_hit, 1);
  cr_expect_eq(p.n_insert, 3);
  cr_expect_eq(hs__coo_slot_of(c, 60), 3);
  cr_expect_eq(hs__coo_slot_of(c, 50), 4);
  /* prefill wants an empty cache, distinct ids, and room */
  cr_expect_eq(hs__coo_prefill(c, first, 1), HS_ERR_INVALID_ARG);
  hs_coo *e = make_cache(100, 3, 8, HS_CACHE_FILL_DEGREE);
  int32_t rep[3] = {1, 2, 1}, big[4] = {1, 2, 3, 4}, bad[2] = {1, 100};
  cr_expect_eq(hs__coo_prefill(e, rep, 3), HS_ERR_INVALID_ARG);
  cr_expect_eq(hs__coo_prefill(e, big, 4), HS_ERR_INVALID_ARG);
  cr_expect_eq(hs__coo_prefill(e, bad, 2), HS_ERR_RANGE);
  cr_expect_eq(hs__coo_rows(e), 0);
  cr_expect_eq(hs__coo_slot_of(e, 1), -1);
  cr_expect_eq(hs__coo_prefill(e, big, 3), HS_OK);
  hs_coo_cfg bad_cfg = {.capacity = 1, .row_bytes = 4, .fill = HS_CACHE_FILL_FIRST};
  hs_coo *x;
  cr_expect_eq(hs__coo_create(&bad_cfg, &x), HS_ERR_INVALID_ARG);
  bad_cfg = (hs_coo_cfg){.n_vertices = 10, .capacity = 1, .fill = HS_CACHE_FILL_FIRST};
  cr_expect_eq(hs__coo_create(&bad_cfg, &x), HS_ERR_INVALID_ARG);
  hs__coo_destroy(e);
  hs__coo_plan_free(&p);
  hs__coo_destroy(c);
}

Test(coo, stats_per_epoch) {
  hs_coo *c = make_cache(1000, 2000, 12, HS_CACHE_FILL_FIRST); /* capacity cut to N */
  cr_assert_eq(hs__coo_capacity(c), 1000);
  hs_coo_plan p;
  cr_assert_eq(hs__coo_plan_alloc(600, &p), HS_OK);
  int32_t ids[600];
  for (int i = 0; i < 600; i++) ids[i] = i;
  cr_assert_eq(hs__coo_classify(c, ids, 500, &p), HS_OK);
  hs_coo_stats st;
  hs__coo_epoch_end(c, &st);
  cr_expect_eq(st.lookups, 500);
  cr_expect_eq(st.hits, 0);
  cr_expect_eq(st.inserted, 500);
  cr_expect_eq(st.limit, 1.0);
  cr_assert_eq(hs__coo_classify(c, ids, 600, &p), HS_OK); /* 500 hits, 100 new */
  hs__coo_epoch_end(c, &st);
  cr_expect_eq(st.lookups, 600);
  cr_expect_eq(st.hits, 500);
  cr_expect_float_eq(st.hit_rate, 500.0 / 600.0, 1e-12);
  cr_expect_eq(st.bytes_saved, 500u * 12u);
  cr_expect_eq(st.inserted, 100);
  cr_expect_eq(st.rows, 600);
  cr_expect_eq(st.device_bytes, 600u * 12u);
  cr_expect_eq(st.device_reserved, 1000u * 12u);
  cr_expect_eq(st.host_bytes, 4u * 2000u);
  hs__coo_stats(c, &st);
  cr_expect_eq(st.lookups, 0, "a new epoch starts from zero");
  hs__coo_plan_free(&p);
  hs__coo_destroy(c);
}

Test(coo, rank_by_score_ties_by_id) {
  uint64_t score[8] = {3, 9, 3, 0, 9, 1, 3, 7};
  int32_t out[8];
  cr_assert_eq(hs__coo_rank(score, 8, 8, out), HS_OK);
  int32_t want[8] = {1, 4, 7, 0, 2, 6, 5, 3};
  cr_expect(memcmp(out, want, sizeof want) == 0);
  cr_expect_eq(hs__coo_rank(score, 8, 9, out), HS_ERR_INVALID_ARG);
  hs_coo *c = make_cache(8, 3, 4, HS_CACHE_FILL_PRESAMPLE);
  cr_assert_eq(hs__coo_prefill_by_score(c, score), HS_OK);
  cr_expect_eq(hs__coo_rows(c), 3);
  cr_expect(memcmp(hs__coo_slot_vertices(c), want, 3 * sizeof(int32_t)) == 0);
  hs__coo_destroy(c);
}

/* ---- hit rates -------------------------------------------------------------------- */

/* Feed `batches` batches of the stream; returns the epoch's hit rate. */
static double run_epoch(hs_coo *c, stream *s, hs_coo_plan *p, int batches) {
  for (int b = 0; b < batches; b++)
    cr_assert_eq(hs__coo_classify(c, stream_next(s), s->size, p), HS_OK, "%s", hs_last_error());
  hs_coo_stats st;
  hs__coo_epoch_end(c, &st);
  return st.hit_rate;
}

Test(coo_rate, uniform_access_hits_c_over_n) {
  const int64_t n = 100000;
  hs_coo_plan p;
  cr_assert_eq(hs__coo_plan_alloc(1000, &p), HS_OK);
  const int64_t caps[3] = {10000, 25000, 50000};
  for (int k = 0; k < 3; k++) {
    int64_t cap = caps[k];
    hs_coo *c = make_cache(n, cap, 4, HS_CACHE_FILL_FIRST);
    stream s;
    stream_init(&s, n, 1000, (uint64_t)cap, NULL, NULL);
    run_epoch(c, &s, &p, 100); /* epoch 1: 100k lookups fill the cache */
    cr_assert_eq(hs__coo_rows(c), cap);
    double rate = run_epoch(c, &s, &p, 200); /* 200k lookups: sd ~0.001 */
    double lim = (double)cap / (double)n;
    cr_expect(fabs(rate - lim) <= 0.01, "C/N %.3f: hit rate %.4f", lim, rate);
    stream_free(&s);
    hs__coo_destroy(c);
  }
  hs__coo_plan_free(&p);
}

typedef struct stream_src {
  stream *s;
  int left;
} stream_src;

static int32_t next_from_stream(void *ctx, const int32_t **ids) {
  stream_src *src = ctx;
  if (src->left-- <= 0) return 0;
  *ids = stream_next(src->s);
  return src->s->size;
}

Test(coo_rate, zipf_access_beats_limit_and_presample_beats_first) {
  const int64_t n = 50000, cap = 5000;
  double *cdf;
  int32_t *by_rank;
  zipf_tables(n, 0.9, &cdf, &by_rank);
  hs_coo_plan p;
  cr_assert_eq(hs__coo_plan_alloc(500, &p), HS_OK);
  /* FIRST: epoch 1 fills, epoch 2 measures */
  hs_coo *first = make_cache(n, cap, 4, HS_CACHE_FILL_FIRST);
  stream s;
  stream_init(&s, n, 500, 1, cdf, by_rank);
  run_epoch(first, &s, &p, 100);
  double r_first = run_epoch(first, &s, &p, 100);
  stream_free(&s);
  /* PRESAMPLE: counts from sampling-only batches of another stream */
  uint64_t *counts = calloc((size_t)n, sizeof *counts);
  cr_assert(counts);
  stream pre;
  stream_init(&pre, n, 500, 2, cdf, by_rank);
  stream_src src = {&pre, 100};
  cr_assert_eq(hs__coo_count_accesses(n, next_from_stream, &src, counts), HS_OK);
  stream_free(&pre);
  hs_coo *hot = make_cache(n, cap, 4, HS_CACHE_FILL_PRESAMPLE);
  cr_assert_eq(hs__coo_prefill_by_score(hot, counts), HS_OK);
  stream_init(&s, n, 500, 1, cdf, by_rank);
  s.batch = 100; /* the same measured batches as FIRST's epoch 2 */
  double r_hot = run_epoch(hot, &s, &p, 100);
  stream_free(&s);
  double lim = (double)cap / (double)n;
  cr_expect_gt(r_first, lim + 0.2, "FIRST on Zipf: %.4f vs C/N %.2f", r_first, lim);
  cr_expect_gt(r_hot, r_first + 0.05, "PRESAMPLE %.4f vs FIRST %.4f", r_hot, r_first);
  cr_log_info("zipf: C/N %.2f first %.4f presample %.4f", lim, r_first, r_hot);
  free(counts);
  free(cdf);
  free(by_rank);
  hs__coo_plan_free(&p);
  hs__coo_destroy(first);
  hs__coo_destroy(hot);
}

/* Batches of the reference sampler over an epoch's shuffled seeds. */
typedef struct sampled {
  const hs_csr *g;
  hs_sample_cfg cfg;
  int32_t *seeds;
  int64_t n_seeds;
  int32_t per_batch;
  hs_batch batch;
  uint32_t epoch;
  int64_t next;
} sampled;

static void sampled_epoch(sampled *sm, uint32_t epoch) {
  sm->epoch = epoch;
  sm->next = 0;
  for (int64_t i = sm->n_seeds - 1; i > 0; i--) {
    int64_t j = hs_philox_below(hs_philox_draw(5, 0x5eed, epoch, 0, (uint32_t)i).v[0],
                                (uint32_t)(i + 1));
    int32_t x = sm->seeds[i];
    sm->seeds[i] = sm->seeds[j];
    sm->seeds[j] = x;
  }
}

static int32_t next_sampled(void *ctx, const int32_t **ids) {
  sampled *sm = ctx;
  if (sm->next >= sm->n_seeds) return 0;
  int32_t k = (int32_t)(sm->n_seeds - sm->next < sm->per_batch ? sm->n_seeds - sm->next
                                                                 : sm->per_batch);
  hs_status st = hs__ref_sample_batch(sm->g, &sm->cfg, sm->seeds + sm->next, k, sm->epoch,
                                      (uint32_t)(sm->next / sm->per_batch), &sm->batch);
  if (st != HS_OK) return -1;
  sm->next += k;
  *ids = sm->batch.ids;
  return sm->batch.n_vertices;
}

static double sampled_rate(hs_coo *c, sampled *sm, hs_coo_plan *p, uint32_t epoch) {
  sampled_epoch(sm, epoch);
  const int32_t *ids;
  int32_t n;
  while ((n = next_sampled(sm, &ids)) > 0)
    cr_assert_eq(hs__coo_classify(c, ids, n, p), HS_OK, "%s", hs_last_error());
  cr_assert_geq(n, 0, "%s", hs_last_error());
  hs_coo_stats st;
  hs__coo_epoch_end(c, &st);
  return st.hit_rate;
}

Test(coo_rate, neighbour_sampling_on_rmat_graph, .timeout = 120) {
  /* an R-MAT graph (power-law degrees) from the dataset generator */
  char *dir = tu_mkdtemp(), *path = tu_path(dir, "rmat");
  hs_generate_opts go;
  hs_generate_opts_init(&go, HS_GENERATE_RMAT);
  go.scale = 14;
  go.num_features = 8;
  cr_assert_eq(hs_generate(path, &go, NULL, NULL), HS_OK, "%s", hs_last_error());
  hs_dataset *ds;
  cr_assert_eq(hs_dataset_open(path, &ds), HS_OK, "%s", hs_last_error());
  const hs_graph *gr = hs__dataset_graph(ds);
  hs_csr csr = hs__csr_of_graph(gr);
  const hs_csr *g = &csr;
  const int64_t cap = g->n / 10;
  sampled sm = {.g = g, .per_batch = 128};
  sm.cfg.n_layers = 2;
  sm.cfg.fanout[0] = 10;
  sm.cfg.fanout[1] = 5;
  sm.cfg.seed = 3;
  /* seeds: the training split */
  sm.n_seeds = gr->split_n[HS_SPLIT_TRAIN];
  sm.seeds = malloc(sizeof *sm.seeds * (size_t)sm.n_seeds);
  cr_assert(sm.seeds);
  memcpy(sm.seeds, gr->split[HS_SPLIT_TRAIN], sizeof *sm.seeds * (size_t)sm.n_seeds);
  hs_batch_caps caps;
  cr_assert_eq(hs__batch_caps(&sm.cfg, g, hs__csr_max_degree(g), sm.per_batch, &caps), HS_OK);
  cr_assert_eq(hs__batch_alloc(&caps, &sm.batch), HS_OK);
  hs_coo_plan p;
  cr_assert_eq(hs__coo_plan_alloc(caps.vertices, &p), HS_OK);

  hs_coo *first = make_cache(g->n, cap, 4, HS_CACHE_FILL_FIRST);
  sampled_rate(first, &sm, &p, 0);
  double r_first = sampled_rate(first, &sm, &p, 1);

  uint64_t *score = malloc(sizeof *score * (size_t)g->n);
  cr_assert(score);
  hs__coo_in_degree(g, score);
  hs_coo *deg = make_cache(g->n, cap, 4, HS_CACHE_FILL_DEGREE);
  cr_assert_eq(hs__coo_prefill_by_score(deg, score), HS_OK);
  double r_deg = sampled_rate(deg, &sm, &p, 1);

  /* presampling epochs are keyed apart from the measured one */
  memset(score, 0, sizeof *score * (size_t)g->n);
  for (uint32_t e = 100; e < 102; e++) {
    sampled_epoch(&sm, e);
    cr_assert_eq(hs__coo_count_accesses(g->n, next_sampled, &sm, score), HS_OK, "%s",
                 hs_last_error());
  }
  hs_coo *hot = make_cache(g->n, cap, 4, HS_CACHE_FILL_PRESAMPLE);
  cr_assert_eq(hs__coo_prefill_by_score(hot, score), HS_OK);
  double r_hot = sampled_rate(hot, &sm, &p, 1);

  double lim = (double)cap / (double)g->n;
  cr_log_info("R-MAT: C/N %.2f first %.4f degree %.4f presample %.4f", lim, r_first, r_deg,
              r_hot);
  cr_expect_gt(r_first, lim + 0.05, "FIRST %.4f vs C/N %.2f", r_first, lim);
  cr_expect_gt(r_deg, r_first + 0.02, "DEGREE %.4f vs FIRST %.4f", r_deg, r_first);
  cr_expect_gt(r_hot, r_first + 0.02, "PRESAMPLE %.4f vs FIRST %.4f", r_hot, r_first);
  free(score);
  free(sm.seeds);
  hs__batch_free(&sm.batch);
  hs__coo_plan_free(&p);
  hs__coo_destroy(first);
  hs__coo_destroy(deg);
  hs__coo_destroy(hot);
  hs_dataset_close(ds);
  tu_rmtree(dir);
  free(path);
}

/* ---- the device side ----------------------------------------------------------------- */

typedef struct dev_env {
  hs_inventory inv;
  const hs_dev *dev;
  hs_ctx ctx;
  cl_command_queue q;
} dev_env;

/* A CPU device where there is one, else any device: the cache's kernels run
 * on every implementation (under oclgrind's checks by tools/ci-portability.sh). */
static void dev_open(dev_env *e, int queue_flags) {
  e->dev = hs_test_pick_device_or_any(&e->inv, HS_DEVICE_CPU);
  cr_assert_eq(hs__ctx_create(e->dev, 1, &e->ctx), HS_OK, "%s", hs_last_error());
  cr_assert_eq(hs__queue_create(&e->ctx, e->dev, queue_flags, &e->q), HS_OK, "%s",
               hs_last_error());
}

static void dev_close(dev_env *e) {
  clReleaseCommandQueue(e->q);
  hs__ctx_release(&e->ctx);
  hs__inventory_release(&e->inv);
}

static unsigned char *make_table(int64_t n, size_t rb) {
  size_t bytes = (size_t)n * rb;
  unsigned char *t = malloc(bytes);
  cr_assert(t);
  for (size_t i = 0; i < bytes; i += 16) {
    hs_philox_ctr r = hs_philox_draw(8, (uint32_t)(i >> 36), (uint32_t)(i >> 4), 0, 0);
    memcpy(t + i, r.v, bytes - i < 16 ? bytes - i : 16);
  }
  return t;
}

/* Batch `b` of a device run: 300..1999 ids (at most `n`) from `s` into
 * `ids`; returns the count. */
static int32_t draw_batch(stream *s, int b, int64_t n, int32_t *ids) {
  s->size = 300 + (int32_t)((b * 577) % 1700);
  if (s->size > n) s->size = (int32_t)n;
  memcpy(ids, stream_next(s), sizeof(int32_t) * (size_t)s->size);
  return s->size;
}

/* One pipeline slot as a trainer would hold it. */
typedef struct pslot {
  hs_coo_plan plan;
  hs_coo_slot *cs;
  unsigned char *stage; /* host: the batch's misses, gathered */
  cl_mem x;             /* device: the batch matrix */
  int32_t ids[2048];
  int32_t n;
  cl_event ev[2];
  int n_ev;
} pslot;

/* X read back equals the rows of the batch's ids bit for bit. */
static void check_x(dev_env *e, pslot *ps, const unsigned char *table, size_t rb,
                    unsigned char *got, unsigned char *want) {
  cr_assert_eq(hs__events_wait(ps->ev, ps->n_ev), HS_OK, "%s", hs_last_error());
  cr_assert_eq(clEnqueueReadBuffer(e->q, ps->x, CL_TRUE, 0, (size_t)ps->n * rb, got, 0, NULL,
                                   NULL),
               CL_SUCCESS);
  hs__ref_gather(table, rb, ps->ids, ps->n, want);
  for (int32_t i = 0; i < ps->n; i++)
    cr_assert(memcmp(got + (size_t)i * rb, want + (size_t)i * rb, rb) == 0,
              "local %d (vertex %d, %s) differs", i, ps->ids[i],
              ps->plan.slot[i] >= 0 ? "hit" : "miss");
  hs__events_release(ps->ev, ps->n_ev);
  ps->n_ev = 0;
}

/* Batches over three epochs through two slots, each batch enqueued before
 * the previous one is checked, so that one batch's insertions and the next
 * batch's hits are in flight together. */
static void device_run(int queue_flags, int64_t n, int64_t cap, size_t rb, hs_cache_fill fill,
                       bool upload_prefill, bool via_host_tier) {
  dev_env e;
  dev_open(&e, queue_flags);
  unsigned char *table = make_table(n, rb);
  hs_row_table rt = {table, rb, n};
  /* rows come from the table in memory, or from the same bytes written to
   * a feat.npy read through a host tier that keeps a quarter of it */
  hs_row_source rows = hs__row_table_source(&rt);
  hs_host_tier *tier = NULL;
  char *dir = NULL, *feat = NULL;
  if (via_host_tier) {
    dir = tu_mkdtemp();
    feat = tu_path(dir, "feat.npy");
    bool f32 = rb % 4 == 0;
    uint64_t shape[2] = {(uint64_t)n, f32 ? rb / 4 : rb / 2};
    cr_assert_eq(hs__npy_write(feat, f32 ? HS_DTYPE_FLOAT32 : HS_DTYPE_FLOAT16, 2, shape, table),
                 HS_OK, "%s", hs_last_error());
    hs_host_tier_cfg tc = {.path = feat, .budget_bytes = (uint64_t)n * rb / 4,
                           .block_bytes = 256u << 10};
    cr_assert_eq(hs__host_tier_open(&tc, &tier), HS_OK, "%s", hs_last_error());
    rows = hs__host_tier_source(tier);
  }
  hs_coo *c = make_cache(n, cap, rb, fill);
  if (fill != HS_CACHE_FILL_FIRST) {
    uint64_t *score = malloc(sizeof *score * (size_t)n);
    cr_assert(score);
    for (int64_t v = 0; v < n; v++) score[v] = (uint64_t)((v * 7919) % 101);
    cr_assert_eq(hs__coo_prefill_by_score(c, score), HS_OK);
    free(score);
  }
  hs_coo_dev *d;
  cr_assert_eq(hs__coo_dev_create(&e.ctx, e.dev, c, &d), HS_OK, "%s", hs_last_error());
  if (upload_prefill)
    cr_assert_eq(hs__coo_dev_prefill(d, e.q, rows, 3 * rb + 1), HS_OK,
                 "%s", hs_last_error());
  pslot ps[2];
  memset(ps, 0, sizeof ps);
  for (int k = 0; k < 2; k++) {
    cr_assert_eq(hs__coo_plan_alloc(2048, &ps[k].plan), HS_OK);
    cr_assert_eq(hs__coo_slot_create(d, 2048, &ps[k].cs), HS_OK, "%s", hs_last_error());
    ps[k].stage = malloc(2048 * rb);
    cl_int err;
    ps[k].x = clCreateBuffer(e.ctx.ctx, CL_MEM_READ_WRITE, 2048 * rb, NULL, &err);
    cr_assert(ps[k].stage && err == CL_SUCCESS);
  }
  unsigned char *got = malloc(2048 * rb), *want = malloc(2048 * rb);
  cr_assert(got && want);
  stream s;
  stream_init(&s, n, 0, 23, NULL, NULL);
  int64_t hits = 0;
  pslot *prev = NULL;
  for (int b = 0; b < 24; b++) {
    pslot *cur = &ps[b % 2];
    cur->n = draw_batch(&s, b, n, cur->ids);
    cr_assert_eq(hs__coo_classify(c, cur->ids, cur->n, &cur->plan), HS_OK, "%s", hs_last_error());
    hits += cur->plan.n_hit;
    cr_assert_eq(rows.read(rows.ctx, cur->plan.miss_ids, cur->plan.n_miss, cur->stage), HS_OK,
                 "%s", hs_last_error());
    cl_event up;
    cr_assert_eq(hs__coo_dev_upload(cur->cs, e.q, &cur->plan, cur->stage, NULL, 0, &up), HS_OK,
                 "%s", hs_last_error());
    hs_status st = hs__coo_dev_assemble(cur->cs, e.q, &cur->plan, cur->x, up ? &up : NULL,
                                        up ? 1 : 0, cur->ev, &cur->n_ev);
    if (up) clReleaseEvent(up);
    if (!upload_prefill && hs__coo_rows(c) > cur->plan.n_insert) {
      cr_expect_eq(st, HS_ERR_INVALID_ARG, "assembling over a prefill never uploaded");
      cr_expect(strstr(hs_last_error(), "prefill"), "%s", hs_last_error());
      break;
    }
    cr_assert_eq(st, HS_OK, "%s", hs_last_error());
    cr_assert_leq(cur->n_ev, 2);
    if (prev) check_x(&e, prev, table, rb, got, want);
    prev = cur;
  }
  if (upload_prefill) {
    check_x(&e, prev, table, rb, got, want);
    if (cap > 0) cr_expect_gt(hits, 0);
    /* the cache buffer holds row vertex[s] in slot s */
    cr_assert_eq(clFinish(e.q), CL_SUCCESS);
    int64_t held = hs__coo_rows(c);
    unsigned char *cache = malloc((size_t)(held ? held : 1) * rb);
    cr_assert(cache);
    if (held)
      cr_assert_eq(clEnqueueReadBuffer(e.q, hs__coo_dev_buffer(d), CL_TRUE, 0, (size_t)held * rb,
                                       cache, 0, NULL, NULL),
                   CL_SUCCESS);
    const int32_t *vertex = hs__coo_slot_vertices(c);
    for (int64_t k = 0; k < held; k++)
      cr_assert(memcmp(cache + (size_t)k * rb, table + (size_t)vertex[k] * rb, rb) == 0,
                "slot %lld", (long long)k);
    free(cache);
  }
  stream_free(&s);
  for (int k = 0; k < 2; k++) {
    hs__events_release(ps[k].ev, ps[k].n_ev);
    hs__coo_slot_destroy(ps[k].cs);
    hs__coo_plan_free(&ps[k].plan);
    clReleaseMemObject(ps[k].x);
    free(ps[k].stage);
  }
  hs__coo_dev_destroy(d);
  hs__coo_destroy(c);
  hs__host_tier_close(tier);
  free(feat);
  if (dir) tu_rmtree(dir);
  free(table);
  free(got);
  free(want);
  dev_close(&e);
}

Test(coo_dev, first_fill_word_rows, .timeout = 300) {
  device_run(0, 6000, 2500, 4 * 37, HS_CACHE_FILL_FIRST, true, false);
}

Test(coo_dev, first_fill_byte_rows_out_of_order_queue, .timeout = 300) {
  device_run(HS_QUEUE_OUT_OF_ORDER, 6000, 2500, 2 * 7, HS_CACHE_FILL_FIRST, true, false);
}

Test(coo_dev, degree_prefill_uploaded_in_chunks, .timeout = 300) {
  device_run(HS_QUEUE_OUT_OF_ORDER, 5000, 1200, 4 * 16, HS_CACHE_FILL_DEGREE, true, false);
}

Test(coo_dev, everything_cached_every_row_a_hit, .timeout = 300) {
  /* capacity N: the later batches have no miss (the gather alone) */
  device_run(0, 3000, 3000, 4 * 8, HS_CACHE_FILL_FIRST, true, false);
}

Test(coo_dev, no_capacity_every_row_a_miss, .timeout = 300) {
  device_run(0, 4000, 0, 4 * 8, HS_CACHE_FILL_FIRST, true, false);
}

Test(coo_dev, prefill_not_uploaded_is_an_error, .timeout = 300) {
  device_run(0, 4000, 500, 4 * 8, HS_CACHE_FILL_PRESAMPLE, false, false);
}

Test(coo_dev, rows_through_the_host_tier, .timeout = 300) {
  /* the two tiers together: prefill and misses read from disk */
  device_run(0, 20000, 3000, 4 * 32, HS_CACHE_FILL_DEGREE, true, true);
  device_run(HS_QUEUE_OUT_OF_ORDER, 20000, 3000, 2 * 9, HS_CACHE_FILL_FIRST, true, true);
}

Test(coo_dev, capacity_beyond_one_allocation) {
  dev_env e;
  dev_open(&e, 0);
  size_t rb = 1 << 20;
  int64_t max = hs__coo_dev_max_rows(e.dev, rb);
  cr_assert_gt(max, 0);
  hs_coo *c = make_cache(max + 10, max + 1, rb, HS_CACHE_FILL_FIRST);
  hs_coo_dev *d = NULL;
  cr_expect_eq(hs__coo_dev_create(&e.ctx, e.dev, c, &d), HS_ERR_INVALID_ARG);
  cr_expect_null(d);
  hs__coo_destroy(c);
  dev_close(&e);
}

/* ---- sparse rows ------------------------------------------------------------------ */

/* A CSR table of n rows: row v holds (v * 37) % 23 entries (some none),
 * column ids increasing, values drawn (or none: binary). */
typedef struct sp_table {
  int64_t n;
  int64_t *ptr;
  int32_t *col;
  float *val;
} sp_table;

static void sp_table_make(sp_table *t, int64_t n, bool valued) {
  t->n = n;
  t->ptr = malloc(sizeof *t->ptr * (size_t)(n + 1));
  cr_assert(t->ptr);
  t->ptr[0] = 0;
  for (int64_t v = 0; v < n; v++) t->ptr[v + 1] = t->ptr[v] + (v * 37) % 23;
  int64_t nnz = t->ptr[n];
  t->col = malloc(sizeof *t->col * (size_t)(nnz + 1));
  t->val = valued ? malloc(sizeof *t->val * (size_t)(nnz + 1)) : NULL;
  cr_assert(t->col && (!valued || t->val));
  for (int64_t v = 0; v < n; v++)
    for (int64_t e = t->ptr[v], c = 0; e < t->ptr[v + 1]; e++) {
      hs_philox_ctr r = hs_philox_draw(9, (uint32_t)v, (uint32_t)e, 0, 0);
      c += 1 + r.v[0] % 5;
      t->col[e] = (int32_t)c;
      if (valued) t->val[e] = (float)(int32_t)r.v[1] * 0x1p-29f;
    }
}

static void sp_table_free(sp_table *t) {
  free(t->ptr);
  free(t->col);
  free(t->val);
}

/* The source of the cache's prefill and of the test's misses. */
static hs_status sp_read(void *ctx, const int32_t *ids, int32_t n, int32_t *ptr, int32_t *col,
                         float *val, int64_t cap) {
  const sp_table *t = ctx;
  ptr[0] = 0;
  for (int32_t i = 0; i < n; i++) {
    int64_t lo = t->ptr[ids[i]], len = t->ptr[ids[i] + 1] - lo;
    if (ptr[i] + len > cap) return hs__fail(HS_ERR_RANGE, "sp_read: %lld entries", (long long)cap);
    memcpy(col + ptr[i], t->col + lo, sizeof *col * (size_t)len);
    if (t->val) memcpy(val + ptr[i], t->val + lo, sizeof *val * (size_t)len);
    ptr[i + 1] = ptr[i] + (int32_t)len;
  }
  return HS_OK;
}

/* One pipeline slot for sparse rows: host staging of the misses (CSR), the
 * batch's offsets, and the device arrays the trainer would read. */
typedef struct sp_slot {
  hs_coo_plan plan;
  hs_coo_slot *cs;
  int32_t *m_ptr, *m_col, *b_ptr;
  float *m_val;
  cl_mem x_ptr, x_col, x_val;
  int32_t ids[2048];
  int32_t n;
  cl_event ev[3];
  int n_ev;
} sp_slot;

#define SP_CAP_ENTRIES (2048 * 22)

/* The batch's entries read back equal the plain-C gather of its rows from
 * the table, bit for bit. */
static void sp_check(dev_env *e, sp_slot *ps, const sp_table *t) {
  cr_assert_eq(hs__events_wait(ps->ev, ps->n_ev), HS_OK, "%s", hs_last_error());
  int32_t nnz = ps->b_ptr[ps->n];
  int32_t *col = malloc(sizeof *col * (size_t)(nnz + 1));
  float *val = malloc(sizeof *val * (size_t)(nnz + 1));
  cr_assert(col && val);
  if (nnz) {
    cr_assert_eq(clEnqueueReadBuffer(e->q, ps->x_col, CL_TRUE, 0, 4 * (size_t)nnz, col, 0, NULL,
                                     NULL), CL_SUCCESS);
    if (t->val)
      cr_assert_eq(clEnqueueReadBuffer(e->q, ps->x_val, CL_TRUE, 0, 4 * (size_t)nnz, val, 0,
                                       NULL, NULL), CL_SUCCESS);
  }
  for (int32_t i = 0; i < ps->n; i++) {
    int64_t lo = t->ptr[ps->ids[i]], len = t->ptr[ps->ids[i] + 1] - lo;
    cr_assert_eq(ps->b_ptr[i + 1] - ps->b_ptr[i], len);
    cr_assert(memcmp(col + ps->b_ptr[i], t->col + lo, 4 * (size_t)len) == 0 &&
                  (!t->val || memcmp(val + ps->b_ptr[i], t->val + lo, 4 * (size_t)len) == 0),
              "local %d (vertex %d, %s) differs", i, ps->ids[i],
              ps->plan.slot[i] >= 0 ? "hit" : "miss");
  }
  free(col);
  free(val);
  hs__events_release(ps->ev, ps->n_ev);
  ps->n_ev = 0;
}

/* As device_run, for sparse rows: batches over three epochs through two
 * slots, the next enqueued before the previous is checked; then the pool
 * holds each slot's row at its offsets. */
static void sparse_device_run(int queue_flags, int64_t n, int64_t cap, int64_t entries,
                              bool valued, hs_cache_fill fill) {
  dev_env e;
  dev_open(&e, queue_flags);
  sp_table t;
  sp_table_make(&t, n, valued);
  hs_coo_cfg cfg = {.n_vertices = n, .capacity = cap, .fill = fill, .row_ptr = t.ptr,
                    .entry_capacity = entries, .entry_bytes = valued ? 8 : 4};
  hs_coo *c;
  cr_assert_eq(hs__coo_create(&cfg, &c), HS_OK, "%s", hs_last_error());
  cr_assert(hs__coo_sparse(c));
  if (fill != HS_CACHE_FILL_FIRST) {
    uint64_t *score = malloc(sizeof *score * (size_t)n);
    cr_assert(score);
    for (int64_t v = 0; v < n; v++) score[v] = (uint64_t)((v * 7919) % 101);
    cr_assert_eq(hs__coo_prefill_by_score(c, score), HS_OK, "%s", hs_last_error());
    free(score);
    cr_expect_leq(hs__coo_entries(c), entries);
    cr_expect_gt(hs__coo_rows(c), 0);
  }
  hs_coo_dev *d;
  cr_assert_eq(hs__coo_dev_create(&e.ctx, e.dev, c, &d), HS_OK, "%s", hs_last_error());
  hs_sparse_source src = {sp_read, &t};
  cr_assert_eq(hs__coo_dev_prefill_sparse(d, e.q, src, 4 * 64 + 1), HS_OK, "%s",
               hs_last_error());
  sp_slot ps[2];
  memset(ps, 0, sizeof ps);
  for (int k = 0; k < 2; k++) {
    sp_slot *p = &ps[k];
    cr_assert_eq(hs__coo_plan_alloc(2048, &p->plan), HS_OK);
    cr_assert_eq(hs__coo_slot_create_sparse(d, 2048, SP_CAP_ENTRIES, &p->cs), HS_OK, "%s",
                 hs_last_error());
    p->m_ptr = malloc(sizeof(int32_t) * 2049);
    p->b_ptr = malloc(sizeof(int32_t) * 2049);
    p->m_col = malloc(sizeof(int32_t) * SP_CAP_ENTRIES);
    p->m_val = malloc(sizeof(float) * SP_CAP_ENTRIES);
    cl_int err[4];
    p->x_ptr = clCreateBuffer(e.ctx.ctx, CL_MEM_READ_WRITE, 4 * 2049, NULL, &err[0]);
    p->x_col = clCreateBuffer(e.ctx.ctx, CL_MEM_READ_WRITE, 4 * SP_CAP_ENTRIES, NULL, &err[1]);
    p->x_val = clCreateBuffer(e.ctx.ctx, CL_MEM_READ_WRITE, 4 * SP_CAP_ENTRIES, NULL, &err[2]);
    cr_assert(p->m_ptr && p->b_ptr && p->m_col && p->m_val && !err[0] && !err[1] && !err[2]);
  }
  stream s;
  stream_init(&s, n, 0, 29, NULL, NULL);
  int64_t hits = 0, inserted_entries = hs__coo_entries(c);
  sp_slot *prev = NULL;
  for (int b = 0; b < 24; b++) {
    sp_slot *cur = &ps[b % 2];
    cur->n = draw_batch(&s, b, n, cur->ids);
    cr_assert_eq(hs__coo_classify(c, cur->ids, cur->n, &cur->plan), HS_OK, "%s", hs_last_error());
    hits += cur->plan.n_hit;
    cr_assert_eq(cur->plan.insert_entry_first, inserted_entries);
    inserted_entries += cur->plan.n_insert_entries;
    cr_assert_eq(hs__coo_entries(c), inserted_entries);
    cr_assert_leq(inserted_entries, entries);
    cur->b_ptr[0] = 0;
    for (int32_t i = 0; i < cur->n; i++)
      cur->b_ptr[i + 1] = cur->b_ptr[i] + (int32_t)(t.ptr[cur->ids[i] + 1] - t.ptr[cur->ids[i]]);
    cr_assert_eq(sp_read(&t, cur->plan.miss_ids, cur->plan.n_miss, cur->m_ptr, cur->m_col,
                         cur->m_val, SP_CAP_ENTRIES), HS_OK);
    /* the inserted misses are a prefix of the misses: their entries the
     * first staged */
    cr_assert_eq(cur->m_ptr[cur->plan.n_insert], cur->plan.n_insert_entries);
    cl_event wrote, up;
    cr_assert_eq(clEnqueueWriteBuffer(e.q, cur->x_ptr, CL_FALSE, 0, 4 * ((size_t)cur->n + 1),
                                      cur->b_ptr, 0, NULL, &wrote), CL_SUCCESS);
    cr_assert_eq(hs__coo_dev_upload_sparse(cur->cs, e.q, &cur->plan, cur->m_ptr, cur->m_col,
                                           valued ? cur->m_val : NULL, NULL, 0, &up),
                 HS_OK, "%s", hs_last_error());
    cl_event wait[2] = {wrote, up};
    cr_assert_eq(hs__coo_dev_assemble_sparse(cur->cs, e.q, &cur->plan, cur->x_ptr, cur->x_col,
                                             cur->x_val, wait, up ? 2 : 1, cur->ev,
                                             &cur->n_ev),
                 HS_OK, "%s", hs_last_error());
    clReleaseEvent(wrote);
    if (up) clReleaseEvent(up);
    cr_assert_leq(cur->n_ev, 3);
    if (prev) sp_check(&e, prev, &t);
    prev = cur;
  }
  sp_check(&e, prev, &t);
  if (cap > 0 && entries > 0) cr_expect_gt(hits, 0);
  /* the pool holds slot k's row at its offsets */
  cr_assert_eq(clFinish(e.q), CL_SUCCESS);
  int64_t held = hs__coo_rows(c), ent = hs__coo_entries(c);
  if (ent > 0) {
    cl_mem pc, pv;
    hs__coo_dev_pool(d, &pc, &pv);
    int32_t *pcol = malloc(4 * (size_t)ent);
    float *pval = malloc(4 * (size_t)ent);
    cr_assert(pcol && pval);
    cr_assert_eq(clEnqueueReadBuffer(e.q, pc, CL_TRUE, 0, 4 * (size_t)ent, pcol, 0, NULL, NULL),
                 CL_SUCCESS);
    if (valued)
      cr_assert_eq(clEnqueueReadBuffer(e.q, pv, CL_TRUE, 0, 4 * (size_t)ent, pval, 0, NULL, NULL),
                   CL_SUCCESS);
    const int32_t *vertex = hs__coo_slot_vertices(c);
    for (int64_t k = 0; k < held; k++) {
      int64_t at = hs__coo_slot_entry(c, (int32_t)k), lo = t.ptr[vertex[k]];
      int64_t len = t.ptr[vertex[k] + 1] - lo;
      cr_assert_eq(hs__coo_slot_entry(c, (int32_t)k + 1) - at, len);
      cr_assert(memcmp(pcol + at, t.col + lo, 4 * (size_t)len) == 0 &&
                    (!valued || memcmp(pval + at, t.val + lo, 4 * (size_t)len) == 0),
                "slot %lld", (long long)k);
    }
    free(pcol);
    free(pval);
  }
  /* statistics in CSR bytes */
  hs_coo_stats st;
  hs__coo_stats(c, &st);
  cr_expect_eq(st.device_bytes, (uint64_t)ent * (valued ? 8u : 4u));
  cr_expect_eq(st.device_reserved, (uint64_t)entries * (valued ? 8u : 4u));
  stream_free(&s);
  for (int k = 0; k < 2; k++) {
    hs__events_release(ps[k].ev, ps[k].n_ev);
    hs__coo_slot_destroy(ps[k].cs);
    hs__coo_plan_free(&ps[k].plan);
    clReleaseMemObject(ps[k].x_ptr);
    clReleaseMemObject(ps[k].x_col);
    clReleaseMemObject(ps[k].x_val);
    free(ps[k].m_ptr), free(ps[k].b_ptr), free(ps[k].m_col), free(ps[k].m_val);
  }
  hs__coo_dev_destroy(d);
  hs__coo_destroy(c);
  sp_table_free(&t);
  dev_close(&e);
}

Test(coo_dev, sparse_rows_first_fill_valued, .timeout = 300) {
  /* the entries run out before the rows: later misses stay out */
  sparse_device_run(0, 6000, 2500, 20000, true, HS_CACHE_FILL_FIRST);
}

Test(coo_dev, sparse_rows_binary_out_of_order_queue, .timeout = 300) {
  sparse_device_run(HS_QUEUE_OUT_OF_ORDER, 6000, 2500, 60000, false, HS_CACHE_FILL_FIRST);
}

Test(coo_dev, sparse_rows_degree_prefill_in_chunks, .timeout = 300) {
  sparse_device_run(HS_QUEUE_OUT_OF_ORDER, 5000, 1200, 9000, true, HS_CACHE_FILL_DEGREE);
}

Test(coo_dev, sparse_rows_everything_cached, .timeout = 300) {
  sparse_device_run(0, 3000, 3000, 3000 * 22, false, HS_CACHE_FILL_PRESAMPLE);
}

Test(coo_dev, sparse_rows_no_entries_every_row_a_miss, .timeout = 300) {
  sparse_device_run(0, 4000, 500, 0, true, HS_CACHE_FILL_FIRST);
}
