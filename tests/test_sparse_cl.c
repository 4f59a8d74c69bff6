/* Sparse input features on a trainer device: the sparse first layer's
 * kernels against their plain-C references, the device step against the
 * reference step, and whole sessions on Cora stored sparse against the
 * same Cora stored dense. */
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cl_fixture.h"
#include "cora_fixture.h"
#include "data/hs_graph.h"
#include "data/hs_npy.h"
#include "hs_test_util.h"
#include "nn/model.h"
#include "nn/ref_nn.h"
#include "nn/sparse_first.h"
#include "nn/trainer.h"
#include "nn_fixtures.h"

typedef struct sp_rows {
  hs_nn_sparse x;
  int32_t *ptr, *col;
  float *val;
} sp_rows;

/* n rows of width d, about 1 in `every` entries non-zero, every 5th row
 * empty; values in [-1, 1) or (binary) all 1. */
static void rows_make(sp_rows *r, int32_t n, int32_t d, int every, bool binary, uint64_t seed) {
  r->ptr = malloc(sizeof(int32_t) * ((size_t)n + 1));
  r->col = malloc(sizeof(int32_t) * ((size_t)n * (size_t)d + 1));
  r->val = malloc(sizeof(float) * ((size_t)n * (size_t)d + 1));
  uint64_t s = seed;
  int32_t k = 0;
  r->ptr[0] = 0;
  for (int32_t i = 0; i < n; i++) {
    for (int32_t c = 0; c < d && i % 5 != 2; c++)
      if (fx_next(&s) % (uint64_t)every == 0) {
        r->col[k] = c;
        r->val[k] = fx_uniform(&s);
        k++;
      }
    r->ptr[i + 1] = k;
  }
  r->x = (hs_nn_sparse){.n_rows = n, .ptr = r->ptr, .col = r->col, .val = binary ? NULL : r->val};
}

static void rows_free(sp_rows *r) {
  free(r->ptr);
  free(r->col);
  free(r->val);
}

static void model(hs_model *m, int n_layers, int in_dim, int hidden, int classes, float dropout,
                  uint64_t seed) {
  hs_model_cfg cfg;
  hs__model_cfg_defaults(&cfg);
  cfg.n_layers = n_layers;
  cfg.in_dim = in_dim;
  cfg.hidden = hidden;
  cfg.n_classes = classes;
  cfg.dropout = dropout;
  cfg.seed = seed;
  cfg.optim.weight_decay = 5e-4f;
  cr_assert_eq(hs__model_create(&cfg, m), HS_OK, "%s", hs_last_error());
  uint64_t s = seed;
  for (int l = 0; l < n_layers; l++)
    fx_fill(m->params + m->shape.b_off[l], (size_t)m->shape.dims[l + 1], &s, 0.1f);
}

/* max |a - b| <= rtol * max |b|. */
static void expect_rel(const char *what, const float *a, const float *b, size_t n, double rtol) {
  double mx = 0.0, worst = 0.0;
  size_t at = 0;
  for (size_t i = 0; i < n; i++) mx = fmax(mx, fabs(b[i]));
  for (size_t i = 0; i < n; i++)
    if (fabs((double)a[i] - b[i]) > worst) worst = fabs((double)a[i] - b[i]), at = i;
  cr_expect(worst <= rtol * mx, "%s: |diff| %.3g at [%zu] (%.9g vs %.9g), scale %.3g", what,
            worst, at, (double)a[at], (double)b[at], mx);
}

Test(sparse_cl, first_layer_kernels_equal_the_reference_bit_for_bit) {
  cl_fixture f;
  clf_open(&f);
  /* Output widths below and across a work-item's chunk (8 or 64), odd input width. */
  static const int widths[2] = {13, 72};
  for (int w = 0; w < 2; w++)
    for (int order = HS_SPARSE_MULTIPLY_FIRST; order <= HS_SPARSE_AGGREGATE_FIRST; order++)
      for (int binary = 0; binary < 2; binary++)
      for (int cols = 0; cols < 2; cols++) {
        hs_model m;
        model(&m, 1, 37, 8, widths[w], 0.0f, 40 + (uint64_t)w);
        hs_trainer *t;
        hs_trainer_opts o = {.wg = 16};
        cr_assert_eq(hs__trainer_create(&f.ctx, &f.dev, f.q, &m, &o, &t), HS_OK, "%s",
                     hs_last_error());
        int fan[1] = {5};
        fx_batch fb;
        fx_batch_make(&fb, 1, 60, fan, 37, widths[w], 77 + (uint64_t)order);
        sp_rows r;
        rows_make(&r, fb.blocks[0].n_src, 37, 6, binary, 5 + (uint64_t)binary);
        r.x.order = (hs_sparse_order)order;
        /* Column lists from the host, or built on the device. */
        int32_t nnz = hs__nn_sparse_nnz(&r.x);
        int32_t *tp = malloc(4 * 38), *tm = malloc(4 * 38), *tr = malloc(4 * (size_t)nnz + 4),
                *cur = malloc(4 * 38);
        float *tv = malloc(4 * (size_t)nnz + 4);
        if (cols) hs__nn_sparse_columns(&r.x, fb.blocks[0].n_dst, 37, tp, tm, tr, tv, cur);
        hs_nn_batch b = {.n_layers = 1, .blocks = fb.blocks, .sfeat = &r.x, .labels = fb.labels};
        size_t nl = (size_t)60 * (size_t)widths[w], np = m.shape.n_params;
        float *got = malloc(4 * nl), *want = malloc(4 * nl);
        float *g_dev = malloc(4 * np), *g_ref = malloc(4 * np);
        cr_assert_eq(hs__trainer_upload(t, &b), HS_OK, "%s", hs_last_error());
        cr_assert_eq(hs__trainer_predict(t, got), HS_OK, "%s", hs_last_error());
        cr_assert_eq(hs__ref_forward(&m.shape, m.params, &b, want), HS_OK, "%s", hs_last_error());
        cr_expect_eq(memcmp(got, want, 4 * nl), 0, "width %d order %d binary %d: logits differ",
                     widths[w], order, binary);
        /* The weight gradient: the loss kernel's rounding may differ from
         * the reference's in the last bit, nothing more. */
        cr_assert_eq(hs__trainer_gradients(t, 0, 0, false), HS_OK, "%s", hs_last_error());
        cr_assert_eq(hs__trainer_read_grads(t, g_dev), HS_OK);
        cr_assert_eq(hs__ref_gradients(&m, &b, 0, 0, false, g_ref, NULL), HS_OK);
        expect_rel("layer-0 gradients", g_dev, g_ref, np, 1e-6);
        /* Only the loss's rounding can differ: the same dz gives the same
         * weight gradient bits on either column path. */
        hs_train_stats skip = {0};
        cr_assert_eq(hs__trainer_drain_stats(t, &skip), HS_OK);
        free(got), free(want), free(g_dev), free(g_ref);
        free(tp), free(tm), free(tr), free(cur), free(tv);
        rows_free(&r);
        fx_batch_free(&fb);
        hs__trainer_destroy(t);
        hs__model_destroy(&m);
      }
  clf_close(&f);
}

Test(sparse_cl, device_step_matches_reference_step_and_the_dense_step) {
  cl_fixture f;
  clf_open(&f);
  for (int order = HS_SPARSE_AUTO; order <= HS_SPARSE_AGGREGATE_FIRST; order++) {
    hs_model ref, dev, den;
    model(&ref, 2, 30, 72, 5, 0.3f, 9);
    model(&dev, 2, 30, 72, 5, 0.3f, 9);
    model(&den, 2, 30, 72, 5, 0.3f, 9);
    hs_trainer *t, *td;
    hs_trainer_opts o = {.wg = 16};
    cr_assert_eq(hs__trainer_create(&f.ctx, &f.dev, f.q, &dev, &o, &t), HS_OK, "%s",
                 hs_last_error());
    cr_assert_eq(hs__trainer_create(&f.ctx, &f.dev, f.q, &den, &o, &td), HS_OK, "%s",
                 hs_last_error());
    size_t n = ref.shape.n_params;
    for (uint32_t step = 0; step < 3; step++) {
      int fan[2] = {6, 4};
      fx_batch fb;
      fx_batch_make(&fb, 2, 48, fan, 30, 5, 500 + step);
      sp_rows r;
      rows_make(&r, fb.blocks[0].n_src, 30, 4, step == 1, 600 + step);
      r.x.order = (hs_sparse_order)order;
      int32_t nnz = hs__nn_sparse_nnz(&r.x);
      int32_t tp[31], tm[31], cur[31], *tr = malloc(4 * (size_t)nnz + 4);
      float *tv = malloc(4 * (size_t)nnz + 4);
      if (step != 2) hs__nn_sparse_columns(&r.x, fb.blocks[0].n_dst, 30, tp, tm, tr, tv, cur);
      float *dense = malloc(sizeof(float) * (size_t)r.x.n_rows * 30);
      hs__sparse_densify(&r.x, 30, dense);
      hs_nn_batch b = {.n_layers = 2, .blocks = fb.blocks, .sfeat = &r.x, .labels = fb.labels};
      hs_nn_batch bd = {.n_layers = 2, .blocks = fb.blocks, .feat = dense, .labels = fb.labels};
      cr_assert_eq(hs__trainer_upload(t, &b), HS_OK, "%s", hs_last_error());
      cr_assert_eq(hs__trainer_step(t, 2, step), HS_OK, "%s", hs_last_error());
      cr_assert_eq(hs__trainer_upload(td, &bd), HS_OK, "%s", hs_last_error());
      cr_assert_eq(hs__trainer_step(td, 2, step), HS_OK, "%s", hs_last_error());
      hs_step_stats st;
      cr_assert_eq(hs__ref_train_step(&ref, &b, 2, step, &st), HS_OK, "%s", hs_last_error());
      cr_assert_eq(hs__trainer_sync_model(t, &dev), HS_OK);
      cr_assert_eq(hs__trainer_sync_model(td, &den), HS_OK);
      expect_rel("sparse device vs reference", dev.params, ref.params, n, 1e-5);
      expect_rel("sparse vs dense device", dev.params, den.params, n, 1e-5);
      free(dense), free(tr), free(tv);
      rows_free(&r);
      fx_batch_free(&fb);
    }
    hs__trainer_destroy(t);
    hs__trainer_destroy(td);
    hs__model_destroy(&ref), hs__model_destroy(&dev), hs__model_destroy(&den);
  }
  clf_close(&f);
}

/* ---- sessions on Cora, dense and sparse ------------------------------------ */

TestSuite(sparse_session, .init = cora_setup, .fini = cora_teardown, .timeout = 900);

static char *sparse_copy(char **root) {
  char dir[1024];
  cr_assert_eq(hs_dataset_bundled(rt, "cora", dir, sizeof dir), HS_OK, "%s", hs_last_error());
  *root = tu_mkdtemp();
  char *dst = tu_path(*root, "cora-sparse");
  hs_convert_opts o;
  hs_convert_opts_init(&o, HS_IMPORT_NATIVE);
  o.feat_format = HS_FEAT_FORMAT_SPARSE;
  cr_assert_eq(hs_convert(dir, dst, &o, NULL), HS_OK, "%s", hs_last_error());
  return dst;
}

typedef struct run_out {
  float *params;
  size_t n;
  float *logits; /* test split x classes */
  int32_t *pred;
  double acc;
  hs_epoch_stats st;
} run_out;

static void run_cfg(hs_dataset *d, const hs_session_config *c, int epochs, run_out *o) {
  memset(o, 0, sizeof *o);
  hs_epoch_stats_init(&o->st);
  hs_session *s;
  cr_assert_eq(hs_session_create(rt, d, c, &s), HS_OK, "%s", hs_last_error());
  for (int e = 0; e < epochs; e++)
    cr_assert_eq(hs_session_train_epoch(s, &o->st), HS_OK, "%s", hs_last_error());
  cr_assert_eq(hs_session_parameters(s, NULL, 0, &o->n), HS_OK);
  o->params = malloc(o->n * sizeof *o->params);
  cr_assert_eq(hs_session_parameters(s, o->params, o->n, &o->n), HS_OK);
  const hs_graph *g = hs__dataset_graph(d);
  int64_t nt = g->split_n[HS_SPLIT_TEST];
  int64_t *ids = malloc(sizeof *ids * (size_t)nt);
  for (int64_t i = 0; i < nt; i++) ids[i] = g->split[HS_SPLIT_TEST][i];
  int c7 = hs_session_num_classes(s);
  o->pred = malloc(sizeof *o->pred * (size_t)nt);
  o->logits = malloc(sizeof *o->logits * (size_t)nt * (size_t)c7);
  cr_assert_eq(hs_session_predict(s, ids, nt, o->pred, o->logits), HS_OK, "%s", hs_last_error());
  cr_assert_eq(hs_session_evaluate_full(s, HS_SPLIT_TEST, &o->acc), HS_OK, "%s", hs_last_error());
  free(ids);
  hs_session_destroy(s);
}

static void run(hs_dataset *d, hs_transfer transfer, int epochs, run_out *o) {
  hs_session_config c;
  hs_session_config_init(&c);
  c.transfer = transfer;
  run_cfg(d, &c, epochs, o);
}

static void run_free(run_out *o) {
  free(o->params);
  free(o->logits);
  free(o->pred);
}

/* Same seed, same split, same batches: the sparse first layer sums only
 * the non-zeros, in another order than the dense GEMM, so results agree up
 * to floating-point reassociation. Stated tolerance, after one epoch: every
 * parameter within 1e-3 of the largest parameter's magnitude (Adam's first
 * steps move a parameter by about lr = 0.01 whatever its gradient's size,
 * so a gradient that reassociation moves across zero moves that parameter
 * by at most 2 lr), the test logits within 1e-3 of the largest logit, and
 * at least 99.5% of the test predictions equal; accuracy within 0.5
 * points. Sparse runs are bit-identical run to run, on either block
 * path. */
Test(sparse_session, sparse_cora_trains_and_predicts_like_dense_cora) {
  char *root;
  char *dir = sparse_copy(&root);
  hs_dataset *sp;
  cr_assert_eq(hs_dataset_open(dir, &sp), HS_OK, "%s", hs_last_error());
  run_out d, a, b, h;
  run(ds, HS_TRANSFER_AUTO, 1, &d);
  run(sp, HS_TRANSFER_AUTO, 1, &a);
  run(sp, HS_TRANSFER_AUTO, 1, &b);
  run(sp, HS_TRANSFER_HOST, 1, &h);
  cr_assert_eq(a.n, d.n);
  cr_expect_eq(memcmp(a.params, b.params, a.n * sizeof *a.params), 0, "sparse run to run");
  cr_expect_eq(memcmp(a.params, h.params, a.n * sizeof *a.params), 0, "host vs device blocks");
  float pmax = 0;
  size_t far = 0;
  for (size_t i = 0; i < d.n; i++) pmax = fmaxf(pmax, fabsf(d.params[i]));
  for (size_t i = 0; i < d.n; i++) far += fabsf(a.params[i] - d.params[i]) > 1e-3f * pmax;
  cr_expect_eq(far, 0, "%zu of %zu parameters differ by more than 1e-3 x %g", far, d.n,
               (double)pmax);
  const hs_graph *g = hs__dataset_graph(ds);
  int64_t nt = g->split_n[HS_SPLIT_TEST], same = 0;
  size_t nl = (size_t)nt * (size_t)g->num_classes;
  float lmax = 0, ldiff = 0;
  for (size_t i = 0; i < nl; i++) {
    lmax = fmaxf(lmax, fabsf(d.logits[i]));
    ldiff = fmaxf(ldiff, fabsf(a.logits[i] - d.logits[i]));
  }
  cr_expect(ldiff <= 1e-3f * lmax, "logits differ by %g (largest %g)", (double)ldiff, (double)lmax);
  for (int64_t i = 0; i < nt; i++) same += a.pred[i] == d.pred[i];
  cr_expect_geq(same * 1000, nt * 995, "%lld of %lld predictions agree", (long long)same,
                (long long)nt);
  cr_expect(fabs(a.acc - d.acc) <= 0.005, "accuracy sparse %.4f dense %.4f", a.acc, d.acc);
  /* What crossed to the trainer: CSR, a small part of the dense rows. */
  cr_expect_eq(a.st.feature_format, HS_FEAT_FORMAT_SPARSE);
  cr_expect_eq(d.st.feature_format, HS_FEAT_FORMAT_DENSE);
  cr_expect_gt(a.st.feature_nnz, 0);
  cr_expect_eq(a.st.feature_bytes_dense, d.st.feature_bytes_dense);
  cr_expect_lt(a.st.bytes_uploaded * 10, d.st.bytes_uploaded, "sparse %llu dense %llu bytes",
               (unsigned long long)a.st.bytes_uploaded, (unsigned long long)d.st.bytes_uploaded);
  run_free(&d), run_free(&a), run_free(&b), run_free(&h);
  hs_dataset_close(sp);
  free(dir);
  tu_rmtree(root);
}

/* ---- the trainer cache over sparse rows ---------------------------------- */

#define CORA_N 2708

/* Cached rows come from the trainer's pool, misses cross as CSR: the same
 * entries reach the first layer, so parameters, logits and predictions
 * are bit-identical to the uncached run, while the bytes uploaded fall by
 * exactly the hits' entries (and the column lists, which the trainer then
 * builds itself) against 8 bytes a row for each row's source. Binary Cora
 * and the same rows with values. */
static void cache_same_bits(hs_dataset *d, bool valued) {
  const hs_graph *g = hs__dataset_graph(d);
  cr_assert(g->feat_sparse);
  cr_assert_eq(g->feat_val != NULL, valued);
  uint64_t eb = valued ? 8u : 4u;
  /* uncached, blocks copied on the device and uploaded from the host (the
   * bytes compared below are those of the same path) */
  run_out ref, ref_host;
  hs_session_config c;
  hs_session_config_init(&c);
  run_cfg(d, &c, 2, &ref);
  c.transfer = HS_TRANSFER_HOST;
  run_cfg(d, &c, 2, &ref_host);
  cr_expect_eq(ref.st.cache_lookups, 0);
  cr_expect_eq(memcmp(ref.params, ref_host.params, ref.n * sizeof *ref.params), 0);
  static const struct {
    int64_t rows;
    hs_cache_fill fill;
    hs_transfer transfer;
  } cases[] = {{CORA_N / 4, HS_CACHE_FILL_FIRST, HS_TRANSFER_AUTO},
               {CORA_N, HS_CACHE_FILL_DEGREE, HS_TRANSFER_HOST},
               {CORA_N / 3, HS_CACHE_FILL_PRESAMPLE, HS_TRANSFER_AUTO}};
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    hs_session_config_init(&c);
    c.cache_rows = cases[k].rows;
    c.cache_fill = cases[k].fill;
    c.transfer = cases[k].transfer;
    const char *name = hs_cache_fill_name(c.cache_fill);
    run_out a;
    run_cfg(d, &c, 2, &a);
    cr_assert_eq(a.n, ref.n);
    cr_expect_eq(memcmp(a.params, ref.params, a.n * sizeof *a.params), 0,
                 "%s fill, %lld rows: the cache changed the parameters", name,
                 (long long)cases[k].rows);
    size_t nl = (size_t)g->split_n[HS_SPLIT_TEST] * (size_t)g->num_classes;
    cr_expect_eq(memcmp(a.logits, ref.logits, nl * sizeof *a.logits), 0, "%s: logits", name);
    cr_expect_eq(memcmp(a.pred, ref.pred, (size_t)g->split_n[HS_SPLIT_TEST] * sizeof *a.pred), 0);
    cr_expect_eq(a.acc, ref.acc);
    cr_expect_eq(a.st.loss, ref.st.loss);
    const hs_epoch_stats *st = &a.st;
    cr_expect_gt(st->cache_lookups, 0, "%s: no lookups", name);
    cr_expect_gt(st->cache_hits, 0, "%s: no hits in epoch 2", name);
    if (cases[k].rows == CORA_N)
      cr_expect_eq(st->cache_hits, st->cache_lookups, "every row cached, yet misses");
    cr_expect_leq(st->cache_rows, (uint64_t)cases[k].rows);
    /* the budget in CSR bytes: rows of the mean length */
    uint64_t want_entries = ((uint64_t)cases[k].rows * (uint64_t)g->feat_nnz + CORA_N - 1) / CORA_N;
    cr_expect_eq(st->cache_device_bytes, want_entries * eb, "%s: pool of %llu B", name,
                 (unsigned long long)st->cache_device_bytes);
    cr_expect_eq(st->feature_nnz, ref.st.feature_nnz);
    cr_expect_eq(st->batches, ref.st.batches);
    /* what no longer crossed: the hits' entries and the column lists, less
     * 8 bytes per row for its source */
    uint64_t lists = st->batches * 8u * (uint64_t)g->f + st->feature_nnz * eb;
    const run_out *r = cases[k].transfer == HS_TRANSFER_HOST ? &ref_host : &ref;
    cr_expect_eq(r->st.bytes_uploaded - a.st.bytes_uploaded,
                 st->cache_bytes_saved + lists - 8u * st->cache_lookups,
                 "%s: uploaded %llu, uncached %llu, saved %llu", name,
                 (unsigned long long)a.st.bytes_uploaded,
                 (unsigned long long)r->st.bytes_uploaded,
                 (unsigned long long)st->cache_bytes_saved);
    cr_log_info("sparse cache %s (%lld rows, %s): hit rate %.4f, %llu of %llu B uploaded", name,
                (long long)cases[k].rows, valued ? "valued" : "binary",
                (double)st->cache_hits / (double)st->cache_lookups,
                (unsigned long long)a.st.bytes_uploaded,
                (unsigned long long)r->st.bytes_uploaded);
    run_free(&a);
  }
  run_free(&ref);
  run_free(&ref_host);
}

Test(sparse_session, trainer_cache_serves_sparse_rows_with_the_same_bits) {
  char *root;
  char *dir = sparse_copy(&root);
  hs_dataset *sp;
  cr_assert_eq(hs_dataset_open(dir, &sp), HS_OK, "%s", hs_last_error());
  cache_same_bits(sp, false);
  /* the same rows with values (multiples of 1/4, some negative) */
  int64_t nnz = hs__dataset_graph(sp)->feat_nnz;
  hs_dataset_close(sp);
  float *val = malloc(sizeof *val * (size_t)nnz);
  cr_assert(val);
  for (int64_t e = 0; e < nnz; e++) val[e] = 0.25f * (float)((e * 7) % 11) - 1.0f;
  char *p = tu_path(dir, "feat_values.npy");
  uint64_t shape[1] = {(uint64_t)nnz};
  cr_assert_eq(hs__npy_write(p, HS_DTYPE_FLOAT32, 1, shape, val), HS_OK, "%s", hs_last_error());
  free(p);
  free(val);
  cr_assert_eq(hs_dataset_open(dir, &sp), HS_OK, "%s", hs_last_error());
  cache_same_bits(sp, true);
  hs_dataset_close(sp);
  free(dir);
  tu_rmtree(root);
}

/* ---- the sparse host tier ------------------------------------------------- */

/* Sparse features over the memory budget: their column ids and values are
 * read from disk through the sparse host tier (the offsets stay in
 * memory), and the seeds keep their full shuffle, so parameters, logits,
 * predictions and the loss are bit-identical to the session without a
 * budget, with and without the trainer cache (whose prefill reads through
 * the tier too). */
static void tier_same_bits(hs_dataset *d, const char *what) {
  const hs_graph *g = hs__dataset_graph(d);
  cr_assert(g->feat_sparse);
  run_out ref;
  hs_session_config c;
  hs_session_config_init(&c);
  run_cfg(d, &c, 2, &ref);
  cr_expect_eq(ref.st.host_lookups, 0, "%s: no tier without a budget", what);
  static const struct {
    int div;
    int64_t rows;
    hs_cache_fill fill;
  } cases[] = {{2, 0, HS_CACHE_FILL_FIRST}, {5, CORA_N / 4, HS_CACHE_FILL_DEGREE}};
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    hs_session_config_init(&c);
    c.memory_budget = g->feature_bytes / (uint64_t)cases[k].div;
    c.cache_rows = cases[k].rows;
    c.cache_fill = cases[k].fill;
    run_out a;
    run_cfg(d, &c, 2, &a);
    cr_assert_eq(a.n, ref.n);
    cr_expect_eq(memcmp(a.params, ref.params, a.n * sizeof *a.params), 0,
                 "%s, budget %llu: the tier changed the parameters", what,
                 (unsigned long long)c.memory_budget);
    size_t nl = (size_t)g->split_n[HS_SPLIT_TEST] * (size_t)g->num_classes;
    cr_expect_eq(memcmp(a.logits, ref.logits, nl * sizeof *a.logits), 0, "%s: logits", what);
    cr_expect_eq(memcmp(a.pred, ref.pred, (size_t)g->split_n[HS_SPLIT_TEST] * sizeof *a.pred), 0,
                 "%s: predictions", what);
    cr_expect_eq(a.acc, ref.acc);
    cr_expect_eq(a.st.loss, ref.st.loss);
    const hs_epoch_stats *st = &a.st;
    cr_expect_gt(st->host_lookups, 0, "%s: nothing read through the tier", what);
    cr_expect_gt(st->host_hits, 0, "%s: no kept block hit in epoch 2", what);
    cr_expect_lt(st->host_hits, st->host_lookups, "%s: every row kept", what);
    cr_expect_gt(st->host_bytes_read, 0);
    cr_expect_gt(st->host_memory_bytes, 0);
    if (cases[k].rows > 0) cr_expect_gt(st->cache_hits, 0, "%s: trainer cache unused", what);
    cr_log_info("sparse tier (%s, budget %llu of %llu B): host hit rate %.4f, %llu B read in "
                "epoch 2, %llu B held", what, (unsigned long long)c.memory_budget,
                (unsigned long long)g->feature_bytes,
                (double)st->host_hits / (double)st->host_lookups,
                (unsigned long long)st->host_bytes_read,
                (unsigned long long)st->host_memory_bytes);
    run_free(&a);
  }
  run_free(&ref);
}

Test(sparse_session, features_over_the_budget_train_through_the_tier_with_the_same_bits) {
  char *root;
  char *dir = sparse_copy(&root);
  hs_dataset *sp;
  cr_assert_eq(hs_dataset_open(dir, &sp), HS_OK, "%s", hs_last_error());
  tier_same_bits(sp, "binary");
  int64_t nnz = hs__dataset_graph(sp)->feat_nnz;
  hs_dataset_close(sp);
  /* the same rows with float32 values, then float16 ones */
  float *val = malloc(sizeof *val * (size_t)nnz);
  uint16_t *half = malloc(sizeof *half * (size_t)nnz);
  cr_assert(val && half);
  for (int64_t e = 0; e < nnz; e++) {
    val[e] = 0.25f * (float)((e * 7) % 11) - 1.0f;
    half[e] = (uint16_t)(0x3400 + (e * 13) % 1024);
  }
  char *p = tu_path(dir, "feat_values.npy");
  uint64_t shape[1] = {(uint64_t)nnz};
  cr_assert_eq(hs__npy_write(p, HS_DTYPE_FLOAT32, 1, shape, val), HS_OK, "%s", hs_last_error());
  cr_assert_eq(hs_dataset_open(dir, &sp), HS_OK, "%s", hs_last_error());
  tier_same_bits(sp, "float32 values");
  hs_dataset_close(sp);
  unlink(p);
  cr_assert_eq(hs__npy_write(p, HS_DTYPE_FLOAT16, 1, shape, half), HS_OK, "%s", hs_last_error());
  cr_assert_eq(hs_dataset_open(dir, &sp), HS_OK, "%s", hs_last_error());
  tier_same_bits(sp, "float16 values");
  hs_dataset_close(sp);
  free(p);
  free(val);
  free(half);
  free(dir);
  tu_rmtree(root);
}

/* int64 column ids (scipy's once nnz >= 2^31): the session without a
 * budget gathers from their int32 narrowing, the one over it reads the
 * int64 file through the tier; both bit-identical to the int32 file's
 * session. */
Test(sparse_session, int64_column_ids_train_with_the_bits_of_int32_ones) {
  char *root;
  char *dir = sparse_copy(&root);
  hs_dataset *sp;
  cr_assert_eq(hs_dataset_open(dir, &sp), HS_OK, "%s", hs_last_error());
  const hs_graph *g = hs__dataset_graph(sp);
  cr_assert_not_null(g->feat_col, "the convert writes int32 ids");
  int64_t nnz = g->feat_nnz;
  int64_t *col64 = malloc(sizeof *col64 * (size_t)nnz);
  cr_assert(col64);
  for (int64_t e = 0; e < nnz; e++) col64[e] = g->feat_col[e];
  run_out ref;
  hs_session_config c;
  hs_session_config_init(&c);
  run_cfg(sp, &c, 2, &ref);
  hs_dataset_close(sp);
  char *p = tu_path(dir, "feat_indices.npy");
  unlink(p);
  uint64_t shape[1] = {(uint64_t)nnz};
  cr_assert_eq(hs__npy_write(p, HS_DTYPE_INT64, 1, shape, col64), HS_OK, "%s", hs_last_error());
  cr_assert_eq(hs_dataset_open(dir, &sp), HS_OK, "%s", hs_last_error());
  g = hs__dataset_graph(sp);
  cr_expect_null(g->feat_col, "int64 ids are not narrowed at open");
  run_out a;
  run_cfg(sp, &c, 2, &a);
  cr_assert_eq(a.n, ref.n);
  cr_expect_eq(memcmp(a.params, ref.params, a.n * sizeof *a.params), 0, "parameters");
  size_t nl = (size_t)g->split_n[HS_SPLIT_TEST] * (size_t)g->num_classes;
  cr_expect_eq(memcmp(a.logits, ref.logits, nl * sizeof *a.logits), 0, "logits");
  cr_expect_eq(memcmp(a.pred, ref.pred, (size_t)g->split_n[HS_SPLIT_TEST] * sizeof *a.pred), 0,
               "predictions");
  cr_expect_eq(a.acc, ref.acc);
  cr_expect_eq(a.st.loss, ref.st.loss);
  run_free(&a);
  tier_same_bits(sp, "int64 column ids");
  hs_dataset_close(sp);
  run_free(&ref);
  free(p);
  free(col64);
  free(dir);
  tu_rmtree(root);
}

/* A file changed on disk after the dataset opened (every rule met then):
 * the tier checks each row it reads, so a training seed's row whose column
 * id left [0, F) fails the epoch naming the file and the row. */
Test(sparse_session, a_row_corrupted_on_disk_fails_naming_the_file_and_row) {
  char *root;
  char *dir = sparse_copy(&root);
  hs_dataset *sp;
  cr_assert_eq(hs_dataset_open(dir, &sp), HS_OK, "%s", hs_last_error());
  const hs_graph *g = hs__dataset_graph(sp);
  int32_t v = -1;
  for (int64_t i = 0; i < g->split_n[HS_SPLIT_TRAIN] && v < 0; i++) {
    int32_t u = g->split[HS_SPLIT_TRAIN][i];
    if (g->feat_ptr[u + 1] > g->feat_ptr[u]) v = u;
  }
  cr_assert_geq(v, 0);
  char *p = tu_path(dir, "feat_indices.npy");
  hs__npy_header h;
  int fd;
  cr_assert_eq(hs__npy_open(p, &h, &fd), HS_OK, "%s", hs_last_error());
  cr_assert_eq(h.dtype, HS_DTYPE_INT32);
  close(fd);
  cr_assert_geq(fd = open(p, O_RDWR), 0);
  int32_t bad = (int32_t)g->f;
  cr_assert_eq(pwrite(fd, &bad, 4, (off_t)(h.data_offset + (size_t)g->feat_ptr[v] * 4)), 4);
  close(fd);
  hs_session_config c;
  hs_session_config_init(&c);
  c.memory_budget = g->feature_bytes / 2;
  hs_session *s = NULL;
  hs_status st = hs_session_create(rt, sp, &c, &s);
  hs_epoch_stats es;
  hs_epoch_stats_init(&es);
  if (st == HS_OK) st = hs_session_train_epoch(s, &es);
  cr_expect_eq(st, HS_ERR_FORMAT, "status %d: %s", st, hs_last_error());
  char row[32];
  snprintf(row, sizeof row, "row %d,", v);
  cr_expect(strstr(hs_last_error(), p) != NULL, "no file named: %s", hs_last_error());
  cr_expect(strstr(hs_last_error(), row) != NULL, "row %d not named: %s", v, hs_last_error());
  cr_log_info("%s", hs_last_error());
  hs_session_destroy(s);
  hs_dataset_close(sp);
  free(p);
  free(dir);
  tu_rmtree(root);
}
