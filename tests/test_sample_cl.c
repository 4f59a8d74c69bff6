/* The device sampler (both kernel styles) against the plain-C reference,
 * bit for bit: every mode, several work-group sizes, a CPU sub-device,
 * indices split across buffers, consecutive batches (state reset), batches
 * begun before earlier ones finish, read-back at finish, and the real
 * graphs when present. Runs on whatever OpenCL device is found (PoCL
 * in CI); no device is a skip. */
#include <criterion/criterion.h>
#include <stdlib.h>

#include "hs_test_cl.h"
#include "hs_base.h"
#include "sample/hs_sampler.h"
#include "sample_check.h"
#include "bench/sample_graphs.h"
#include "shared_data.h"

typedef struct cl_env {
  hs_inventory inv;
  hs_dev dev;
  hs_dev subs[2];
  bool have_subs;
  hs_ctx ctx;
  cl_command_queue q;
} cl_env;

/* First CPU device (PoCL), else the first device. `sub`: run on the first
 * of a 1+1 split instead, or skip when the device cannot be split. */
static void env_open(cl_env *e, bool sub) {
  memset(e, 0, sizeof *e);
  if (hs_test_discover(&e->inv) != HS_OK || e->inv.n_devs == 0)
    cr_skip_test("no OpenCL device: %s", hs_last_error());
  int pick = 0;
  for (int i = 0; i < e->inv.n_devs; i++)
    if (e->inv.devs[i].info.type == HS_DEVICE_CPU) {
      pick = i;
      break;
    }
  e->dev = e->inv.devs[pick];
  if (sub) {
    const unsigned counts[2] = {1, 1};
    if (e->dev.info.compute_units < 2 ||
        hs__subdevices_create(&e->dev, counts, 2, e->subs) != HS_OK)
      cr_skip_test("'%s' cannot be split 1+1", e->dev.info.name);
    e->have_subs = true;
  }
  const hs_dev *d = sub ? &e->subs[0] : &e->dev;
  cr_assert_eq(hs__ctx_create(d, 1, &e->ctx), HS_OK, "%s", hs_last_error());
  cr_assert_eq(hs__queue_create(&e->ctx, d, HS_QUEUE_PROFILING, &e->q), HS_OK, "%s",
               hs_last_error());
}

static const hs_dev *env_dev(const cl_env *e) { return e->have_subs ? &e->subs[0] : &e->dev; }

/* Sub-devices are not released: with PoCL 3.1, releasing a sub-device
 * after its queue and context lets a PoCL worker thread later touch freed
 * memory (a crash in POclReleaseEvent in about one run in ten under
 * MALLOC_PERTURB_). The test process ends right after. */
static void env_close(cl_env *e) {
  if (e->q) clReleaseCommandQueue(e->q);
  hs__ctx_release(&e->ctx);
  hs__inventory_release(&e->inv);
}

static hs_sample_cfg cfg_of(int n_layers, const int32_t *fanouts, hs_sample_mode mode,
                            bool replace, int64_t budget) {
  hs_sample_cfg c;
  memset(&c, 0, sizeof c);
  c.n_layers = n_layers;
  for (int i = 0; i < n_layers; i++) {
    c.fanout[i] = fanouts[i];
    c.threshold[i] = 0.5f + (float)i;
  }
  c.mode = mode;
  c.replace = replace;
  c.max_vertices = budget;
  c.seed = 0xfeedface0badf00dull;
  return c;
}

static void make_seeds(int32_t *seeds, int32_t n, int64_t n_vertices, uint32_t salt) {
  /* distinct: a stride coprime with the vertex count would need care, so
   * step through ids with an odd multiplier and skip repeats */
  char *used = calloc((size_t)n_vertices, 1);
  cr_assert_not_null(used);
  uint64_t x = salt;
  for (int32_t i = 0; i < n;) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    int32_t v = (int32_t)((x >> 33) % (uint64_t)n_vertices);
    if (!used[v]) {
      used[v] = 1;
      seeds[i++] = v;
    }
  }
  free(used);
}

/* Run `batches` consecutive batches through the device sampler and the
 * reference; every one must be identical and valid. */
static bool no_prefetch; /* the kernels as devices other than CPUs build them */

static void expect_same_with_reindex(cl_env *e, const hs_csr *g, const hs_sample_cfg *cfg,
                                     hs_sampler_style style, hs_reindex_style reindex,
                                     const size_t *wgs, int n_wgs, int32_t n_seeds, int batches,
                                     uint32_t rows_per_item, size_t eager_read_limit) {
  hs_sampler_opts opts = {.style = style, .reindex = reindex, .max_seeds = n_seeds,
                          .profile = true, .rows_per_item = rows_per_item,
                          .eager_read_limit = eager_read_limit, .no_prefetch = no_prefetch};
  hs_sampler *s = NULL;
  hs_status st = hs__sampler_create(&e->ctx, env_dev(e), e->q, g, cfg, &opts, &s);
  cr_assert_eq(st, HS_OK, "%s", hs_last_error());
  if (reindex != HS_REINDEX_AUTO) cr_assert_eq(hs__sampler_reindex(s), reindex);
  hs_batch dev_b, ref_b;
  cr_assert_eq(hs__batch_alloc(hs__sampler_caps(s), &dev_b), HS_OK);
  cr_assert_eq(hs__batch_alloc(hs__sampler_caps(s), &ref_b), HS_OK);
  int32_t *seeds = malloc(sizeof(int32_t) * (size_t)n_seeds);
  cr_assert_not_null(seeds);
  for (int w = 0, ran = 0; w < n_wgs; w++) {
    if (style != HS_STYLE_SINGLE) {
      st = hs__sampler_set_work_group(s, wgs[w]);
      /* Larger than this device allows for some kernel (llvmpipe's limit
       * is below 64 for the sampling kernels): skipped, unless no size
       * would run, in which case the largest allowed one does. */
      if (st == HS_ERR_UNSUPPORTED && (ran || w + 1 < n_wgs)) continue;
      if (st == HS_ERR_UNSUPPORTED) {
        cr_log_info("%s; the largest work-group allowed runs instead", hs_last_error());
        st = hs__sampler_set_work_group(s, 0);
      }
      cr_assert_eq(st, HS_OK, "%s", hs_last_error());
    }
    ran++;
    for (int b = 0; b < batches; b++) {
      make_seeds(seeds, n_seeds, g->n, (uint32_t)(b * 31 + w));
      cr_assert_eq(hs__sampler_run(s, seeds, n_seeds, 2, (uint32_t)b, &dev_b), HS_OK, "%s",
                   hs_last_error());
      cr_assert_eq(hs__ref_sample_batch(g, cfg, seeds, n_seeds, 2, (uint32_t)b, &ref_b), HS_OK,
                   "%s", hs_last_error());
      const char *why = sc_same_batch(&dev_b, &ref_b);
      cr_assert_null(why, "mode %d replace %d budget %lld style %d reindex %d wg %zu rows %u "
                     "batch %d: %s", (int)cfg->mode, cfg->replace, (long long)cfg->max_vertices,
                     (int)style, (int)hs__sampler_reindex(s),
                     style == HS_STYLE_SINGLE ? (size_t)1 : wgs[w], rows_per_item, b, why);
      why = sc_check_batch(g, cfg, seeds, n_seeds, &dev_b);
      cr_assert_null(why, "%s", why);
    }
    if (style == HS_STYLE_SINGLE) break;
  }
  hs_sampler_stats stats;
  hs__sampler_stats(s, &stats);
  cr_expect_gt(stats.edges, 0);
  /* Kernel times need real profiling timestamps (not rusticl 22.3's). */
  if (hs__queue_timestamps_real(&e->ctx, e->q))
    cr_expect_gt(stats.sample_s + stats.reindex_s, 0.0);
  free(seeds);
  hs__batch_free(&dev_b);
  hs__batch_free(&ref_b);
  hs__sampler_destroy(s);
}

/* NDRange: with both reindexes (whatever the device would pick). */
static void expect_same_as_reference_opts(cl_env *e, const hs_csr *g, const hs_sample_cfg *cfg,
                                          hs_sampler_style style, const size_t *wgs, int n_wgs,
                                          int32_t n_seeds, int batches, uint32_t rows_per_item,
                                          size_t eager_read_limit) {
  if (style == HS_STYLE_SINGLE) {
    expect_same_with_reindex(e, g, cfg, style, HS_REINDEX_AUTO, wgs, n_wgs, n_seeds, batches,
                             rows_per_item, eager_read_limit);
    return;
  }
  const hs_reindex_style both[] = {HS_REINDEX_PARALLEL, HS_REINDEX_SEQUENTIAL};
  for (size_t r = 0; r < HS_ARRAY_LEN(both); r++)
    expect_same_with_reindex(e, g, cfg, style, both[r], wgs, n_wgs, n_seeds, batches,
                             rows_per_item, eager_read_limit);
}

static void expect_same_as_reference_rows(cl_env *e, const hs_csr *g, const hs_sample_cfg *cfg,
                                          hs_sampler_style style, const size_t *wgs, int n_wgs,
                                          int32_t n_seeds, int batches, uint32_t rows_per_item) {
  expect_same_as_reference_opts(e, g, cfg, style, wgs, n_wgs, n_seeds, batches, rows_per_item, 0);
}

/* rows_per_item 0: the device's default */
static void expect_same_as_reference(cl_env *e, const hs_csr *g, const hs_sample_cfg *cfg,
                                     hs_sampler_style style, const size_t *wgs, int n_wgs,
                                     int32_t n_seeds, int batches) {
  expect_same_as_reference_rows(e, g, cfg, style, wgs, n_wgs, n_seeds, batches, 0);
}

typedef struct mode_case {
  hs_sample_mode mode;
  bool replace;
  int64_t budget;
} mode_case;

static const mode_case every_mode[] = {
    {HS_SAMPLE_UNIFORM, false, 0},   {HS_SAMPLE_UNIFORM, true, 0},
    {HS_SAMPLE_WEIGHTED, false, 0},  {HS_SAMPLE_WEIGHTED, true, 0},
    {HS_SAMPLE_THRESHOLD, false, 0}, {HS_SAMPLE_UNIFORM, false, 300},
    {HS_SAMPLE_WEIGHTED, false, 90},
};

static const int32_t fan3[] = {5, 4, 3};
static const int32_t fan_all[] = {4, -1};

Test(sample_cl, ndrange_equals_reference_at_every_work_group_size, .timeout = 600) {
  cl_env e;
  env_open(&e, false);
  test_graph t;
  cr_assert(tg_random(&t, 4000, 3.0, 500, 11, true));
  const size_t wgs[] = {0, 1, 7, 64, 256};
  for (size_t m = 0; m < HS_ARRAY_LEN(every_mode); m++) {
    hs_sample_cfg cfg =
        cfg_of(3, fan3, every_mode[m].mode, every_mode[m].replace, every_mode[m].budget);
    /* every work-group size on uniform sampling; the others on two */
    int n_wgs = m == 0 ? (int)HS_ARRAY_LEN(wgs) : 2;
    expect_same_as_reference(&e, &t.g, &cfg, HS_STYLE_NDRANGE, m == 0 ? wgs : wgs + 2, n_wgs,
                             40, 3);
  }
  hs_sample_cfg all = cfg_of(2, fan_all, HS_SAMPLE_UNIFORM, false, 0);
  expect_same_as_reference(&e, &t.g, &all, HS_STYLE_NDRANGE, wgs, 1, 40, 2);
  /* rows per work-item: one (GPU style), an odd count, many */
  hs_sample_cfg w = cfg_of(3, fan3, HS_SAMPLE_WEIGHTED, false, 0);
  const uint32_t rows[] = {1, 3, 16};
  for (size_t r = 0; r < HS_ARRAY_LEN(rows); r++)
    expect_same_as_reference_rows(&e, &t.g, &w, HS_STYLE_NDRANGE, wgs + 2, 2, 40, 2, rows[r]);
  tg_free(&t);
  env_close(&e);
}

/* CPU devices build the kernels with software prefetches (hs_common.h),
 * others without: both builds give the reference's bits. */
Test(sample_cl, kernels_without_prefetches_equal_reference, .timeout = 600) {
  cl_env e;
  env_open(&e, false);
  test_graph t;
  cr_assert(tg_random(&t, 4000, 3.0, 500, 13, true));
  const size_t wgs[] = {7, 64};
  no_prefetch = true;
  for (size_t m = 0; m < HS_ARRAY_LEN(every_mode); m++) {
    hs_sample_cfg cfg =
        cfg_of(3, fan3, every_mode[m].mode, every_mode[m].replace, every_mode[m].budget);
    expect_same_as_reference(&e, &t.g, &cfg, HS_STYLE_NDRANGE, wgs, 2, 40, 2);
    expect_same_as_reference(&e, &t.g, &cfg, HS_STYLE_SINGLE, NULL, 1, 40, 2);
  }
  hs_sample_cfg w = cfg_of(3, fan3, HS_SAMPLE_WEIGHTED, false, 0);
  expect_same_as_reference_rows(&e, &t.g, &w, HS_STYLE_NDRANGE, wgs, 2, 40, 2, 3);
  no_prefetch = false;
  tg_free(&t);
  env_close(&e);
}

Test(sample_cl, single_work_item_equals_reference, .timeout = 600) {
  cl_env e;
  env_open(&e, false);
  test_graph t;
  cr_assert(tg_random(&t, 4000, 3.0, 500, 12, true));
  for (size_t m = 0; m < HS_ARRAY_LEN(every_mode); m++) {
    hs_sample_cfg cfg =
        cfg_of(3, fan3, every_mode[m].mode, every_mode[m].replace, every_mode[m].budget);
    expect_same_as_reference(&e, &t.g, &cfg, HS_STYLE_SINGLE, NULL, 1, 40, 2);
  }
  tg_free(&t);
  env_close(&e);
}

Test(sample_cl, sub_device_equals_reference, .timeout = 600) {
  cl_env e;
  env_open(&e, true);
  test_graph t;
  cr_assert(tg_random(&t, 3000, 3.0, 300, 13, true));
  const size_t wgs[] = {0, 64};
  hs_sample_cfg cfg = cfg_of(3, fan3, HS_SAMPLE_UNIFORM, false, 0);
  expect_same_as_reference(&e, &t.g, &cfg, HS_STYLE_NDRANGE, wgs, 2, 64, 2);
  cfg = cfg_of(3, fan3, HS_SAMPLE_WEIGHTED, true, 0);
  expect_same_as_reference(&e, &t.g, &cfg, HS_STYLE_SINGLE, NULL, 1, 64, 1);
  tg_free(&t);
  env_close(&e);
}

/* Indices and weights over several allocations: $HETSAGE_MAX_ALLOC below
 * their size splits them (into 3 parts here); the result must not change.
 * Beyond 4 parts the sampler refuses. */
Test(sample_cl, split_topology_buffers_give_the_same_result, .timeout = 600) {
  cl_env e;
  env_open(&e, false);
  test_graph t;
  cr_assert(tg_random(&t, 2000, 12.0, 400, 14, true));
  size_t bytes = 4 * (size_t)t.g.e;
  cr_assert_lt(8 * ((size_t)t.g.n + 1), bytes / 3, "indptr must fit one allocation");
  /* The device's settings split arrays below its max allocation (what
   * HETSAGE_MAX_ALLOC sets). */
  hs__dev_settings ds = *hs_test_dev_settings();
  ds.max_alloc = bytes / 3 + 64;
  e.dev.settings = &ds;
  hs_sample_cfg cfg = cfg_of(3, fan3, HS_SAMPLE_WEIGHTED, false, 0);
  expect_same_as_reference(&e, &t.g, &cfg, HS_STYLE_NDRANGE, (const size_t[]){16}, 1, 24, 2);
  cfg = cfg_of(3, fan3, HS_SAMPLE_UNIFORM, true, 0);
  expect_same_as_reference(&e, &t.g, &cfg, HS_STYLE_SINGLE, NULL, 1, 24, 1);

  ds.max_alloc = bytes / 5;
  hs_sampler_opts opts = {.style = HS_STYLE_NDRANGE, .max_seeds = 24};
  hs_sampler *s = NULL;
  cr_expect_eq(hs__sampler_create(&e.ctx, &e.dev, e.q, &t.g, &cfg, &opts, &s),
               HS_ERR_UNSUPPORTED);
  cr_expect_null(s);
  tg_free(&t);
  env_close(&e);
}

static void real_graph(const char *rel) {
  char path[1024];
  if (!tg_shared_path(path, sizeof path, rel)) cr_skip_test("%s not present", rel);
  cl_env e;
  env_open(&e, false);
  test_graph t;
  cr_assert(tg_edge_file(&t, path), "cannot read %s", path);
  const int32_t fan[] = {15, 10, 5};
  hs_sample_cfg cfg = cfg_of(3, fan, HS_SAMPLE_UNIFORM, false, 0);
  expect_same_as_reference(&e, &t.g, &cfg, HS_STYLE_NDRANGE, (const size_t[]){64}, 1, 256, 2);
  tg_free(&t);
  env_close(&e);
}

Test(sample_cl, cora, .timeout = 600) { real_graph("cora/cora.cites"); }
Test(sample_cl, facebook, .timeout = 600) {
  real_graph("musae_facebook/edges/facebook_edges.csv");
}

/* ---- begin / finish ----------------------------------------------------------- */

typedef struct flight {
  hs_sampler *s;
  hs_batch dev[3], ref;
  int32_t *seeds[3];
  int32_t n_seeds;
} flight;

static void flight_open(flight *f, cl_env *e, const hs_csr *g, const hs_sample_cfg *cfg,
                        hs_sampler_style style, hs_reindex_style reindex, int32_t n_seeds,
                        size_t eager_read_limit) {
  memset(f, 0, sizeof *f);
  hs_sampler_opts opts = {.style = style, .reindex = reindex, .max_seeds = n_seeds,
                          .profile = true, .eager_read_limit = eager_read_limit};
  cr_assert_eq(hs__sampler_create(&e->ctx, env_dev(e), e->q, g, cfg, &opts, &f->s), HS_OK, "%s",
               hs_last_error());
  for (int i = 0; i < 3; i++) {
    cr_assert_eq(hs__batch_alloc(hs__sampler_caps(f->s), &f->dev[i]), HS_OK);
    f->seeds[i] = malloc(sizeof(int32_t) * (size_t)n_seeds);
    cr_assert_not_null(f->seeds[i]);
    make_seeds(f->seeds[i], n_seeds, g->n, 900u + (uint32_t)i);
  }
  cr_assert_eq(hs__batch_alloc(hs__sampler_caps(f->s), &f->ref), HS_OK);
  f->n_seeds = n_seeds;
}

static void flight_close(flight *f) {
  for (int i = 0; i < 3; i++) {
    hs__batch_free(&f->dev[i]);
    free(f->seeds[i]);
  }
  hs__batch_free(&f->ref);
  hs__sampler_destroy(f->s);
}

/* Batch i of the flight (sampled as batch number 40 + i) equals the
 * reference. */
static void flight_expect(flight *f, const hs_csr *g, const hs_sample_cfg *cfg, int i) {
  cr_assert_eq(hs__ref_sample_batch(g, cfg, f->seeds[i], f->n_seeds, 3, 40u + (uint32_t)i,
                                    &f->ref),
               HS_OK, "%s", hs_last_error());
  const char *why = sc_same_batch(&f->dev[i], &f->ref);
  cr_assert_null(why, "batch %d (mode %d, budget %lld): %s", i, (int)cfg->mode,
                 (long long)cfg->max_vertices, why);
}

static hs_status flight_begin(flight *f, int i, cl_event *ev) {
  return hs__sampler_begin(f->s, f->seeds[i], f->n_seeds, 3, 40u + (uint32_t)i, &f->dev[i], ev);
}

static void flight_wait_finish(flight *f, int i, cl_event *ev) {
  cr_assert_eq(hs__events_wait(ev, 1), HS_OK, "%s", hs_last_error());
  hs__events_release(ev, 1);
  cr_assert_eq(hs__sampler_finish(f->s, &f->dev[i]), HS_OK, "%s", hs_last_error());
}

/* Three batches begun back to back, finished out of order; the seeds
 * arrays are scribbled over right after begin (begin copies them). */
static void expect_three_in_flight(cl_env *e, const hs_csr *g, const hs_sample_cfg *cfg,
                                   hs_sampler_style style, hs_reindex_style reindex) {
  flight f;
  flight_open(&f, e, g, cfg, style, reindex, 48, 0);
  cr_assert(hs__sampler_eager_read(f.s), "small capacities read back with the batch");
  cl_event ev[3];
  int32_t *saved = malloc(sizeof(int32_t) * (size_t)f.n_seeds);
  cr_assert_not_null(saved);
  for (int i = 0; i < 3; i++) {
    memcpy(saved, f.seeds[i], sizeof(int32_t) * (size_t)f.n_seeds);
    cr_assert_eq(flight_begin(&f, i, &ev[i]), HS_OK, "%s", hs_last_error());
    cr_assert_not_null(ev[i]);
    memset(f.seeds[i], 0xff, sizeof(int32_t) * (size_t)f.n_seeds);
    memcpy(f.seeds[i], saved, sizeof(int32_t) * (size_t)f.n_seeds);
  }
  const int order[] = {1, 0, 2};
  for (int j = 0; j < 3; j++) flight_wait_finish(&f, order[j], &ev[order[j]]);
  for (int i = 0; i < 3; i++) flight_expect(&f, g, cfg, i);
  hs_sampler_stats st;
  hs__sampler_stats(f.s, &st);
  cr_expect_eq(st.batches, 3);
  cr_expect_eq(st.vertices, (int64_t)f.dev[0].n_vertices + f.dev[1].n_vertices +
                                f.dev[2].n_vertices);
  free(saved);
  flight_close(&f);
}

Test(sample_cl, batches_begun_before_earlier_ones_finish, .timeout = 600) {
  cl_env e;
  env_open(&e, false);
  test_graph t;
  cr_assert(tg_random(&t, 3000, 4.0, 300, 15, true));
  for (size_t m = 0; m < HS_ARRAY_LEN(every_mode); m++) {
    hs_sample_cfg cfg =
        cfg_of(3, fan3, every_mode[m].mode, every_mode[m].replace, every_mode[m].budget);
    expect_three_in_flight(&e, &t.g, &cfg, HS_STYLE_NDRANGE, HS_REINDEX_PARALLEL);
    expect_three_in_flight(&e, &t.g, &cfg, HS_STYLE_NDRANGE, HS_REINDEX_SEQUENTIAL);
    if (m % 3 == 0) expect_three_in_flight(&e, &t.g, &cfg, HS_STYLE_SINGLE, HS_REINDEX_AUTO);
  }
  tg_free(&t);
  env_close(&e);
}

/* Read-back at finish (capacities over the limit): same bits; one batch
 * at a time, a second begin is refused until the first is finished. */
Test(sample_cl, read_back_at_finish_equals_reference, .timeout = 600) {
  cl_env e;
  env_open(&e, false);
  test_graph t;
  cr_assert(tg_random(&t, 3000, 4.0, 300, 16, true));
  for (size_t m = 0; m < HS_ARRAY_LEN(every_mode); m++) {
    hs_sample_cfg cfg =
        cfg_of(3, fan3, every_mode[m].mode, every_mode[m].replace, every_mode[m].budget);
    expect_same_as_reference_opts(&e, &t.g, &cfg, HS_STYLE_NDRANGE, (const size_t[]){64}, 1, 40,
                                  2, 0, 1);
    expect_same_as_reference_opts(&e, &t.g, &cfg, HS_STYLE_SINGLE, NULL, 1, 40, 1, 0, 1);
  }
  hs_sample_cfg cfg = cfg_of(3, fan3, HS_SAMPLE_UNIFORM, false, 0);
  flight f;
  flight_open(&f, &e, &t.g, &cfg, HS_STYLE_NDRANGE, HS_REINDEX_AUTO, 32, 1);
  cr_assert_not(hs__sampler_eager_read(f.s));
  cl_event ev0, ev1;
  cr_assert_eq(flight_begin(&f, 0, &ev0), HS_OK, "%s", hs_last_error());
  cr_expect_eq(flight_begin(&f, 1, &ev1), HS_ERR_INVALID_ARG);
  cr_expect_null(ev1);
  flight_wait_finish(&f, 0, &ev0);
  cr_assert_eq(flight_begin(&f, 1, &ev1), HS_OK, "%s", hs_last_error());
  flight_wait_finish(&f, 1, &ev1);
  flight_expect(&f, &t.g, &cfg, 0);
  flight_expect(&f, &t.g, &cfg, 1);
  flight_close(&f);
  tg_free(&t);
  env_close(&e);
}

/* Bad input to begin leaves nothing queued (no event) and the sampler
 * usable; an out-of-order queue is refused at creation. */
Test(sample_cl, begin_refuses_bad_input, .timeout = 600) {
  cl_env e;
  env_open(&e, false);
  test_graph t;
  cr_assert(tg_random(&t, 1000, 4.0, 100, 17, false));
  hs_sample_cfg cfg = cfg_of(2, fan3, HS_SAMPLE_UNIFORM, false, 0);
  flight f;
  flight_open(&f, &e, &t.g, &cfg, HS_STYLE_NDRANGE, HS_REINDEX_AUTO, 16, 0);
  const hs_device_info *di = &env_dev(&e)->info;
  cr_expect_eq(hs__sampler_reindex(f.s),
               di->type == HS_DEVICE_CPU && di->compute_units <= HS_SEQ_REINDEX_MAX_CU
                   ? HS_REINDEX_SEQUENTIAL
                   : HS_REINDEX_PARALLEL,
               "the rule of hs_sampler.h on '%s' (%u units)", di->name, di->compute_units);
  cl_event ev = NULL;
  int32_t dup[16];
  memcpy(dup, f.seeds[0], sizeof dup);
  dup[5] = dup[2];
  cr_expect_eq(hs__sampler_begin(f.s, dup, 16, 0, 0, &f.dev[0], &ev), HS_ERR_INVALID_ARG);
  cr_expect_null(ev);
  dup[5] = (int32_t)t.g.n;
  cr_expect_eq(hs__sampler_begin(f.s, dup, 16, 0, 0, &f.dev[0], &ev), HS_ERR_RANGE);
  cr_expect_eq(hs__sampler_begin(f.s, f.seeds[0], 17, 0, 0, &f.dev[0], &ev), HS_ERR_INVALID_ARG);
  hs_batch small;
  hs_batch_caps caps = *hs__sampler_caps(f.s);
  caps.edges[1]--;
  cr_assert_eq(hs__batch_alloc(&caps, &small), HS_OK);
  cr_expect_eq(hs__sampler_begin(f.s, f.seeds[0], 16, 0, 0, &small, &ev), HS_ERR_INVALID_ARG);
  cr_expect_null(ev);
  hs__batch_free(&small);
  cr_assert_eq(flight_begin(&f, 0, &ev), HS_OK, "%s", hs_last_error());
  flight_wait_finish(&f, 0, &ev);
  flight_expect(&f, &t.g, &cfg, 0);
  flight_close(&f);

  cl_command_queue ooo = NULL;
  cr_assert_eq(hs__queue_create(&e.ctx, env_dev(&e), HS_QUEUE_OUT_OF_ORDER, &ooo), HS_OK);
  cl_command_queue_properties props = 0;
  clGetCommandQueueInfo(ooo, CL_QUEUE_PROPERTIES, sizeof props, &props, NULL);
  if (props & CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE) {
    hs_sampler_opts opts = {.style = HS_STYLE_NDRANGE, .max_seeds = 16};
    hs_sampler *s = NULL;
    cr_expect_eq(hs__sampler_create(&e.ctx, env_dev(&e), ooo, &t.g, &cfg, &opts, &s),
                 HS_ERR_INVALID_ARG);
    cr_expect_null(s);
  }
  clReleaseCommandQueue(ooo);
  tg_free(&t);
  env_close(&e);
}

/* The sequential reindex tags its state by batch instead of resetting it;
 * when tags run out the state is cleared and they restart. With a tag
 * limit of 2, seven batches (three with a vertex budget) cross that point
 * three times and must all match the reference. */
Test(sample_cl, sequential_reindex_tags_wrap, .timeout = 600) {
  cl_env e;
  env_open(&e, false);
  test_graph t;
  cr_assert(tg_random(&t, 600, 5.0, 100, 18, true));
  const hs_sampler_style styles[] = {HS_STYLE_NDRANGE, HS_STYLE_SINGLE};
  for (size_t k = 0; k < HS_ARRAY_LEN(styles); k++)
    for (int budget = 0; budget < 2; budget++) {
      hs_sample_cfg cfg = cfg_of(3, fan3, HS_SAMPLE_UNIFORM, false, budget ? 150 : 0);
      flight f;
      flight_open(&f, &e, &t.g, &cfg, styles[k], HS_REINDEX_SEQUENTIAL, 30, 0);
      cr_assert_eq(hs__sampler_reindex(f.s), HS_REINDEX_SEQUENTIAL);
      hs__sampler_limit_tags(f.s, 2);
      for (int b = 0; b < 7; b++) {
        int i = b % 3;
        make_seeds(f.seeds[i], f.n_seeds, t.g.n, 70u + (uint32_t)b);
        cl_event ev;
        cr_assert_eq(flight_begin(&f, i, &ev), HS_OK, "%s", hs_last_error());
        flight_wait_finish(&f, i, &ev);
        flight_expect(&f, &t.g, &cfg, i);
      }
      flight_close(&f);
    }
  tg_free(&t);
  env_close(&e);
}
