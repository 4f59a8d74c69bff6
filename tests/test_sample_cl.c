/* The device sampler (both kernel styles) against the plain-C reference,
 * bit for bit: every mode, several work-group sizes, a CPU sub-device,
 * indices split across buffers, consecutive batches (state reset), and the
 * real graphs when present. Runs on whatever OpenCL device is found (PoCL
 * in CI); no device is a skip. */
#include <criterion/criterion.h>
#include <stdlib.h>

#include "hs_base.h"
#include "sample/hs_sampler.h"
#include "sample_check.h"
#include "sample_graphs.h"

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
  if (hs__inventory_discover(&e->inv) != HS_OK || e->inv.n_devs == 0)
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
static void expect_same_as_reference_rows(cl_env *e, const hs_csr *g, const hs_sample_cfg *cfg,
                                          hs_sampler_style style, const size_t *wgs, int n_wgs,
                                          int32_t n_seeds, int batches, uint32_t rows_per_item) {
  hs_sampler_opts opts = {.style = style, .max_seeds = n_seeds, .profile = true,
                          .rows_per_item = rows_per_item};
  hs_sampler *s = NULL;
  hs_status st = hs__sampler_create(&e->ctx, env_dev(e), e->q, g, cfg, &opts, &s);
  cr_assert_eq(st, HS_OK, "%s", hs_last_error());
  hs_batch dev_b, ref_b;
  cr_assert_eq(hs__batch_alloc(hs__sampler_caps(s), &dev_b), HS_OK);
  cr_assert_eq(hs__batch_alloc(hs__sampler_caps(s), &ref_b), HS_OK);
  int32_t *seeds = malloc(sizeof(int32_t) * (size_t)n_seeds);
  cr_assert_not_null(seeds);
  for (int w = 0; w < n_wgs; w++) {
    if (style != HS_STYLE_SINGLE) {
      st = hs__sampler_set_work_group(s, wgs[w]);
      if (st == HS_ERR_UNSUPPORTED) continue; /* larger than this device allows */
      cr_assert_eq(st, HS_OK, "%s", hs_last_error());
    }
    for (int b = 0; b < batches; b++) {
      make_seeds(seeds, n_seeds, g->n, (uint32_t)(b * 31 + w));
      cr_assert_eq(hs__sampler_run(s, seeds, n_seeds, 2, (uint32_t)b, &dev_b), HS_OK, "%s",
                   hs_last_error());
      cr_assert_eq(hs__ref_sample_batch(g, cfg, seeds, n_seeds, 2, (uint32_t)b, &ref_b), HS_OK,
                   "%s", hs_last_error());
      const char *why = sc_same_batch(&dev_b, &ref_b);
      cr_assert_null(why, "mode %d replace %d budget %lld style %d wg %zu rows %u batch %d: %s",
                     (int)cfg->mode, cfg->replace, (long long)cfg->max_vertices, (int)style,
                     style == HS_STYLE_SINGLE ? (size_t)1 : wgs[w], rows_per_item, b, why);
      why = sc_check_batch(g, cfg, seeds, n_seeds, &dev_b);
      cr_assert_null(why, "%s", why);
    }
    if (style == HS_STYLE_SINGLE) break;
  }
  hs_sampler_stats stats;
  hs__sampler_stats(s, &stats);
  cr_expect_gt(stats.edges, 0);
  cr_expect_gt(stats.sample_s + stats.reindex_s, 0.0);
  free(seeds);
  hs__batch_free(&dev_b);
  hs__batch_free(&ref_b);
  hs__sampler_destroy(s);
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
  char lim[32];
  snprintf(lim, sizeof lim, "%zu", bytes / 3 + 64);
  cr_assert_lt(8 * ((size_t)t.g.n + 1), bytes / 3, "indptr must fit one allocation");
  setenv("HETSAGE_MAX_ALLOC", lim, 1);
  hs_sample_cfg cfg = cfg_of(3, fan3, HS_SAMPLE_WEIGHTED, false, 0);
  expect_same_as_reference(&e, &t.g, &cfg, HS_STYLE_NDRANGE, (const size_t[]){16}, 1, 24, 2);
  cfg = cfg_of(3, fan3, HS_SAMPLE_UNIFORM, true, 0);
  expect_same_as_reference(&e, &t.g, &cfg, HS_STYLE_SINGLE, NULL, 1, 24, 1);

  snprintf(lim, sizeof lim, "%zu", bytes / 5);
  setenv("HETSAGE_MAX_ALLOC", lim, 1);
  hs_sampler_opts opts = {.style = HS_STYLE_NDRANGE, .max_seeds = 24};
  hs_sampler *s = NULL;
  cr_expect_eq(hs__sampler_create(&e.ctx, &e.dev, e.q, &t.g, &cfg, &opts, &s),
               HS_ERR_UNSUPPORTED);
  cr_expect_null(s);
  unsetenv("HETSAGE_MAX_ALLOC");
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
