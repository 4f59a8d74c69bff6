/* Host gather: threaded copy equals direct indexing for any thread count
 * and row size (float32 and float16 rows alike), labels of the seeds, bad
 * ids refused. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "data/hs_graph.h"
#include "hs_test_util.h"
#include "rng/philox.h"
#include "sample/hs_gather.h"
#include "sample/hs_sample.h"

static void fill_table(unsigned char *t, size_t bytes) {
  for (size_t i = 0; i < bytes; i++) t[i] = (unsigned char)(hs_philox_draw(3, 1, 0, 0, (uint32_t)(i >> 2)).v[i & 3]);
}

static bool with_runs; /* ids in runs of consecutive rows (table order) */

static void ids_of(int32_t *ids, int32_t n, int64_t n_rows) {
  for (int32_t i = 0; i < n; i++)
    ids[i] = (int32_t)hs_philox_below(hs_philox_draw(4, 2, 0, 0, (uint32_t)i).v[0], (uint32_t)n_rows);
  if (with_runs) /* runs of 1 to 40 rows, some running to the table's end */
    for (int32_t i = 1; i < n; i++)
      if (ids[i] % 41 != 0 && ids[i - 1] + 1 < n_rows) ids[i] = ids[i - 1] + 1;
}

/* stream_above: the pool's threshold for non-temporal stores (SIZE_MAX:
 * the default, which these small outputs stay under). */
static void expect_gather_stream(int threads, size_t row_bytes, int64_t n_rows, int32_t n,
                                 size_t stream_above) {
  unsigned char *table = malloc(row_bytes * (size_t)n_rows);
  unsigned char *out = malloc(row_bytes * (size_t)n + 1);
  unsigned char *ref = malloc(row_bytes * (size_t)n + 1);
  int32_t *ids = malloc(sizeof(int32_t) * (size_t)(n + 1));
  cr_assert(table && out && ref && ids);
  fill_table(table, row_bytes * (size_t)n_rows);
  ids_of(ids, n, n_rows);
  memset(out, 0xab, row_bytes * (size_t)n + 1);
  hs_gather_pool *p;
  cr_assert_eq(hs__gather_pool_create(threads, &p), HS_OK);
  cr_assert_eq(hs__gather_pool_threads(p), threads);
  if (stream_above != SIZE_MAX) hs__gather_pool_stream_above(p, stream_above);
  hs_gather_req req = {table, row_bytes, n_rows, ids, n, out, NULL, 0, NULL};
  for (int rep = 0; rep < 3; rep++) cr_assert_eq(hs__gather(p, &req), HS_OK, "%s", hs_last_error());
  for (int32_t i = 0; i < n; i++)
    cr_assert(memcmp(out + (size_t)i * row_bytes, table + (size_t)ids[i] * row_bytes, row_bytes) == 0,
              "row %d (threads %d, %zu bytes)", i, threads, row_bytes);
  cr_expect_eq(out[row_bytes * (size_t)n], 0xab, "wrote past the output");
  hs__ref_gather(table, row_bytes, ids, n, ref);
  cr_expect(memcmp(out, ref, row_bytes * (size_t)n) == 0);
  hs__gather_pool_destroy(p);
  free(table);
  free(out);
  free(ref);
  free(ids);
}

static void expect_gather(int threads, size_t row_bytes, int64_t n_rows, int32_t n) {
  expect_gather_stream(threads, row_bytes, n_rows, n, SIZE_MAX);
}

Test(gather, equals_direct_indexing_for_any_thread_count) {
  const int threads[] = {1, 2, 3, 7};
  for (size_t i = 0; i < sizeof threads / sizeof *threads; i++) {
    expect_gather(threads[i], 128 * 4, 5000, 3001); /* float32 x 128 */
    expect_gather(threads[i], 2 * 33, 700, 999);    /* float16 x 33: odd row size */
  }
  expect_gather(4, 4096, 300, 5);  /* slices of one or two rows */
  expect_gather(3, 16, 10, 0);     /* empty batch */
}

/* Outputs over the threshold take the non-temporal stores (where the host
 * has them): rows of a multiple of 64 bytes, of 16 bytes (a tail of
 * 16-byte stores), and rows too short or of neither (copied as usual) come
 * out the same. */
Test(gather, non_temporal_stores_give_the_same_rows) {
  const int threads[] = {1, 3};
  /* with the widest stores the CPU has, then with the baseline's */
  for (int baseline = 0; baseline < 2; baseline++) {
    hs__gather_baseline_only(baseline);
    for (size_t i = 0; i < sizeof threads / sizeof *threads; i++) {
      expect_gather_stream(threads[i], 512, 5000, 3001, 0);
      expect_gather_stream(threads[i], 400, 3000, 2001, 0); /* rows 16 B off 32 B */
      expect_gather_stream(threads[i], 66, 700, 999, 0);
      expect_gather_stream(threads[i], 128, 700, 999, 0);
      expect_gather_stream(threads[i], 272, 700, 999, 0);
      expect_gather_stream(threads[i], 4096, 300, 7, 1000);
    }
  }
  hs__gather_baseline_only(false);
}

/* Rows in runs of table order skip the software prefetch (gather.c):
 * the same rows either way. */
Test(gather, runs_of_consecutive_rows) {
  with_runs = true;
  expect_gather(2, 512, 5000, 3001);
  expect_gather_stream(3, 256, 4000, 2500, 0);
  expect_gather(1, 8, 100, 777);
  with_runs = false;
}

/* The wide stores are taken where the CPU has them, and not when only the
 * baseline's are allowed. */
Test(gather, wide_stores_where_the_cpu_has_them) {
#if defined(__x86_64__) && defined(__GNUC__)
  cr_expect_eq(hs__gather_wide_stores(), __builtin_cpu_supports("avx2") != 0);
#endif
  bool was = hs__gather_baseline_only(true);
  cr_expect_not(was);
  cr_expect_not(hs__gather_wide_stores());
  cr_expect(hs__gather_baseline_only(false));
}

Test(gather, non_temporal_copy_equals_memcpy) {
  unsigned char *src = malloc(4096 + 16), *dst = aligned_alloc(64, 4096 + 64);
  cr_assert(src && dst);
  fill_table(src, 4096 + 16);
  const size_t sizes[] = {0, 16, 32, 48, 64, 80, 96, 1040, 4080};
  /* destinations 16, 32 and 48 bytes past a 64-byte boundary; the widest
   * stores the CPU has, then the baseline's */
  for (int baseline = 0; baseline < 2; baseline++) {
    hs__gather_baseline_only(baseline);
    for (size_t at = 16; at < 64; at += 16)
      for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) {
        memset(dst, 0xcd, 4096 + 64);
        if (!hs__copy_nontemporal(dst + at, src + 3, sizes[k])) {
          free(src);
          free(dst);
          cr_skip_test("no non-temporal stores on this host");
        }
        hs__nontemporal_fence();
        cr_assert(memcmp(dst + at, src + 3, sizes[k]) == 0, "%zu bytes at %zu", sizes[k], at);
        cr_expect_eq(dst[at - 1], 0xcd);
        cr_expect_eq(dst[at + sizes[k]], 0xcd, "wrote past %zu bytes at %zu", sizes[k], at);
      }
  }
  hs__gather_baseline_only(false);
  free(src);
  free(dst);
}

Test(gather, labels_of_the_seeds) {
  float table[40];
  int32_t labels[40], ids[] = {7, 3, 39, 0}, out_labels[4] = {-1, -1, -1, -1};
  for (int i = 0; i < 40; i++) {
    table[i] = (float)i;
    labels[i] = 100 + i;
  }
  float out[4];
  hs_gather_pool *p;
  cr_assert_eq(hs__gather_pool_create(2, &p), HS_OK);
  hs_gather_req req = {table, sizeof(float), 40, ids, 4, out, labels, 2, out_labels};
  cr_assert_eq(hs__gather(p, &req), HS_OK);
  cr_expect_eq(out_labels[0], 107);
  cr_expect_eq(out_labels[1], 103);
  cr_expect_eq(out_labels[2], -1, "only the seeds' labels are gathered");
  cr_expect_float_eq(out[2], 39.0f, 0.0f);
  hs__gather_pool_destroy(p);
}

Test(gather, refuses_ids_out_of_range_and_bad_requests) {
  float table[10] = {0}, out[3];
  int32_t ids[] = {1, 10, 2};
  hs_gather_pool *p;
  cr_assert_eq(hs__gather_pool_create(2, &p), HS_OK);
  hs_gather_req req = {table, sizeof(float), 10, ids, 3, out, NULL, 0, NULL};
  cr_expect_eq(hs__gather(p, &req), HS_ERR_RANGE);
  ids[1] = -1;
  cr_expect_eq(hs__gather(p, &req), HS_ERR_RANGE);
  ids[1] = 9;
  req.n_labels = 1;
  cr_expect_eq(hs__gather(p, &req), HS_ERR_INVALID_ARG);
  hs__gather_pool_destroy(p);
  cr_expect_eq(hs__gather_pool_create(0, &p), HS_ERR_INVALID_ARG);
}

/* A dataset from the generator, sampled through the sampler's view of it,
 * its features and the seeds' labels gathered in local-id order. */
Test(gather, a_generated_dataset_end_to_end) {
  char *dir = tu_mkdtemp();
  char path[4096];
  snprintf(path, sizeof path, "%s/ds", dir);
  hs_generate_opts g;
  hs_generate_opts_init(&g, HS_GENERATE_SBM);
  g.num_vertices = 600;
  g.edge_factor = 6;
  g.num_features = 12;
  g.feature_dtype = HS_DTYPE_FLOAT16;
  g.threads = 1;
  cr_assert_eq(hs_generate(path, &g, NULL, NULL), HS_OK, "%s", hs_last_error());
  hs_dataset *ds;
  cr_assert_eq(hs_dataset_open(path, &ds), HS_OK, "%s", hs_last_error());
  const hs_graph *gr = hs__dataset_graph(ds);
  hs_csr csr = hs__csr_of_graph(gr);
  cr_assert_eq(hs__csr_validate(&csr), HS_OK, "%s", hs_last_error());

  hs_sample_cfg cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.n_layers = 2;
  cfg.fanout[0] = 5;
  cfg.fanout[1] = 3;
  int32_t seeds[16];
  for (int i = 0; i < 16; i++) seeds[i] = gr->split[HS_SPLIT_TRAIN][i];
  hs_batch_caps caps;
  hs_batch b;
  cr_assert_eq(hs__batch_caps(&cfg, &csr, hs__csr_max_degree(&csr), 16, &caps), HS_OK);
  cr_assert_eq(hs__batch_alloc(&caps, &b), HS_OK);
  cr_assert_eq(hs__ref_sample_batch(&csr, &cfg, seeds, 16, 0, 0, &b), HS_OK, "%s",
               hs_last_error());
  cr_assert_gt(b.n_vertices, 16);

  size_t rb = gr->feat_row_bytes;
  cr_assert_eq(rb, 12 * 2);
  unsigned char *out = malloc(rb * (size_t)b.n_vertices);
  int32_t labels[16];
  hs_gather_pool *p;
  cr_assert_eq(hs__gather_pool_create(2, &p), HS_OK);
  hs_gather_req req = {gr->feat, rb, gr->n, b.ids, b.n_vertices, out, gr->labels, 16, labels};
  cr_assert_eq(hs__gather(p, &req), HS_OK, "%s", hs_last_error());
  for (int32_t i = 0; i < b.n_vertices; i++)
    cr_assert(memcmp(out + (size_t)i * rb, (const char *)gr->feat + (size_t)b.ids[i] * rb, rb) == 0);
  for (int i = 0; i < 16; i++) cr_expect_eq(labels[i], gr->labels[seeds[i]]);
  hs__gather_pool_destroy(p);
  free(out);
  hs__batch_free(&b);
  hs_dataset_close(ds);
  tu_rmtree(dir);
}
