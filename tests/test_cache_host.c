/* The host tier: bytes identical to the file under any budget, memory held
 * within the budget plus a fixed overhead (the tier's own count and a
 * child's peak resident set), COO block keeping, errors, and the
 * block-level seed order. */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cache/hs_host_tier.h"
#include "data/hs_npy.h"
#include "hs_test_util.h"
#include "rng/philox.h"
#include "sample/hs_gather.h"

/* The word at (row, word) of a generated feature file. */
static uint32_t pattern(int64_t row, int64_t w) {
  return (uint32_t)(row * 2654435761u) ^ (uint32_t)(w * 40503u + 0x5bd1e995u);
}

/* Row r as the file holds it: pattern words, little-endian, the last one
 * cut to the row size. */
static void expected_row(int64_t r, size_t rb, unsigned char *out) {
  for (size_t b = 0; b < rb; b += 4) {
    uint32_t w = pattern(r, (int64_t)(b / 4));
    unsigned char le[4] = {(unsigned char)w, (unsigned char)(w >> 8), (unsigned char)(w >> 16),
                           (unsigned char)(w >> 24)};
    memcpy(out + b, le, rb - b < 4 ? rb - b : 4);
  }
}

/* A feat.npy of n rows x f columns of `dtype` in `dir`, written in pieces
 * so that the test itself stays small in memory. Returns its path. */
static char *write_feat(const char *dir, const char *name, hs_dtype dtype, int64_t n,
                        int64_t f) {
  char *path = tu_path(dir, name);
  uint64_t shape[2] = {(uint64_t)n, (uint64_t)f};
  hs__npy_out o;
  cr_assert_eq(hs__npy_out_open(&o, path, dtype, 2, shape), HS_OK, "%s", hs_last_error());
  size_t rb = (size_t)f * hs__dtype_size(dtype);
  int64_t per = (int64_t)((1u << 20) / rb) + 1;
  unsigned char *buf = malloc((size_t)per * rb);
  cr_assert(buf);
  for (int64_t r0 = 0; r0 < n; r0 += per) {
    int64_t k = n - r0 < per ? n - r0 : per;
    for (int64_t r = 0; r < k; r++) expected_row(r0 + r, rb, buf + (size_t)r * rb);
    cr_assert_eq(hs__npy_out_write(&o, buf, (size_t)k * rb), HS_OK, "%s", hs_last_error());
  }
  cr_assert_eq(hs__npy_out_close(&o), HS_OK, "%s", hs_last_error());
  free(buf);
  return path;
}


/* A Philox permutation of 0..n-1 (the order of one pass). */
static int32_t *permutation(int64_t n, uint64_t seed) {
  int32_t *p = malloc(sizeof *p * (size_t)n);
  cr_assert(p);
  for (int64_t i = 0; i < n; i++) p[i] = (int32_t)i;
  for (int64_t i = n - 1; i > 0; i--) {
    int64_t j = hs_philox_below(hs_philox_draw(seed, 1, 0, 0, (uint32_t)i).v[0], (uint32_t)(i + 1));
    int32_t x = p[i];
    p[i] = p[j];
    p[j] = x;
  }
  return p;
}

/* Read every row of the tier in batches of `batch` ids taken from `order`
 * and compare each with the file's bytes. */
static void full_pass_check(hs_host_tier *t, const int32_t *order, int64_t n, int32_t batch) {
  hs_host_tier_info info;
  hs__host_tier_info(t, &info);
  unsigned char *out = malloc((size_t)batch * info.row_bytes), *want = malloc(info.row_bytes);
  cr_assert(out && want);
  for (int64_t i0 = 0; i0 < n; i0 += batch) {
    int32_t k = (int32_t)(n - i0 < batch ? n - i0 : batch);
    cr_assert_eq(hs__host_tier_gather(t, order + i0, k, out), HS_OK, "%s", hs_last_error());
    for (int32_t i = 0; i < k; i++) {
      expected_row(order[i0 + i], info.row_bytes, want);
      cr_assert(memcmp(out + (size_t)i * info.row_bytes, want, info.row_bytes) == 0,
                "row %d differs from the file", order[i0 + i]);
    }
  }
  free(out);
  free(want);
}

/* What the tier may hold beyond its kept blocks: a block of scratch and a
 * few hundred bytes per thread, the sort workspace, the block table, and a
 * few hundred bytes of handle. */
static uint64_t overhead_bound(const hs_host_tier_info *info, int32_t max_ids, int threads) {
  return (info->block_bytes + 512) * (uint64_t)threads + 24u * (uint64_t)max_ids +
         4u * (uint64_t)info->n_blocks + 1024;
}

static void identity_under_budget(hs_dtype dtype, int64_t n, int64_t f, uint64_t budget,
                                  size_t block, int32_t max_ids, int32_t batch,
                                  hs_gather_pool *pool) {
  char *dir = tu_mkdtemp();
  char *path = write_feat(dir, "feat.npy", dtype, n, f);
  hs_host_tier *t;
  hs_host_tier_cfg cfg = {.path = path, .budget_bytes = budget, .block_bytes = block,
                          .max_ids = max_ids, .pool = pool};
  cr_assert_eq(hs__host_tier_open(&cfg, &t), HS_OK, "%s", hs_last_error());
  hs_host_tier_info info;
  hs__host_tier_info(t, &info);
  cr_assert_eq(info.n_rows, n);
  cr_assert_eq(info.row_bytes, (size_t)f * hs__dtype_size(dtype));
  cr_assert_eq(info.n_blocks, (n + info.rows_per_block - 1) / info.rows_per_block);
  cr_assert_eq(info.block_capacity, (int64_t)(budget / info.block_bytes) < info.n_blocks
                                        ? (int64_t)(budget / info.block_bytes)
                                        : info.n_blocks);
  int32_t *order = permutation(n, 7);
  full_pass_check(t, order, n, batch);
  hs_host_tier_stats st;
  hs__host_tier_stats(t, &st);
  cr_expect_eq(st.lookups, n);
  cr_expect_eq(st.blocks_kept, info.block_capacity, "COO: the first blocks read fill the budget");
  cr_expect_leq(st.cache_bytes, budget);
  cr_expect_leq(st.memory_bytes, budget + overhead_bound(&info, max_ids ? max_ids : 65536,
                                                        pool ? hs__gather_pool_threads(pool) : 1));
  /* a second pass in another order: kept blocks answer, nothing is evicted */
  hs__host_tier_stats_reset(t);
  free(order);
  order = permutation(n, 8);
  full_pass_check(t, order, n, batch);
  hs__host_tier_stats(t, &st);
  cr_expect_eq(st.blocks_kept, info.block_capacity);
  /* every row was asked for once: the hits are the rows of the kept
   * blocks, full blocks but perhaps the last, partial one */
  int64_t last = n - (info.n_blocks - 1) * info.rows_per_block;
  int64_t cap = info.block_capacity;
  cr_expect_leq(st.hits, cap * info.rows_per_block);
  cr_expect_geq(st.hits, cap ? (cap - 1) * info.rows_per_block + last : 0);
  if (info.block_capacity == info.n_blocks) {
    cr_expect_eq(st.bytes_read, 0, "everything kept: the second pass reads nothing");
    cr_expect_eq(st.hit_rate, 1.0);
  } else {
    cr_expect_gt(st.bytes_read, 0);
  }
  free(order);
  hs__host_tier_close(t);
  free(path);
  tu_rmtree(dir);
}

Test(host_tier, float32_budget_below_features) {
  /* 6 MiB of features, 2 MiB budget, 256 KiB blocks: 8 of 24 blocks kept */
  identity_under_budget(HS_DTYPE_FLOAT32, 24576, 64, 2u << 20, 256u << 10, 0, 4096, NULL);
}

Test(host_tier, threads_share_the_reads) {
  hs_gather_pool *pool;
  cr_assert_eq(hs__gather_pool_create(3, &pool), HS_OK);
  identity_under_budget(HS_DTYPE_FLOAT32, 24576, 64, 2u << 20, 256u << 10, 0, 4096, pool);
  identity_under_budget(HS_DTYPE_FLOAT16, 30011, 5, 256u << 10, 0, 2000, 2500, pool);
  hs__gather_pool_destroy(pool);
}

Test(host_tier, float16_odd_rows_partial_block) {
  /* 14-byte rows, a partial last block, pieces of 1000 ids per sort */
  identity_under_budget(HS_DTYPE_FLOAT16, 100003, 7, 600u << 10, 0, 1000, 3000, NULL);
}

Test(host_tier, budget_above_features_keeps_everything) {
  identity_under_budget(HS_DTYPE_FLOAT32, 5000, 100, 8u << 20, 0, 0, 512, NULL);
}

Test(host_tier, zero_budget_reads_rows_only) {
  identity_under_budget(HS_DTYPE_FLOAT32, 20000, 33, 0, 0, 0, 700, NULL);
}

Test(host_tier, repeats_and_first_kept_blocks) {
  char *dir = tu_mkdtemp();
  char *path = write_feat(dir, "feat.npy", HS_DTYPE_FLOAT32, 4096, 64); /* 1 MiB */
  hs_host_tier *t;
  /* 4 blocks, keeps 1 */
  hs_host_tier_cfg cfg = {.path = path, .budget_bytes = 256u << 10, .block_bytes = 256u << 10};
  cr_assert_eq(hs__host_tier_open(&cfg, &t), HS_OK, "%s", hs_last_error());
  hs_host_tier_info info;
  hs__host_tier_info(t, &info);
  cr_assert_eq(info.n_blocks, 4);
  cr_assert_eq(info.block_capacity, 1);
  unsigned char out[5][256], want[256];
  /* ids are taken in id order: block 0 comes first and is kept; block 2
   * (2048, 2100: close together) is read in one run and not kept */
  int32_t ids[5] = {2100, 5, 2100, 5, 2047 + 1};
  cr_assert_eq(hs__host_tier_gather(t, ids, 5, out), HS_OK, "%s", hs_last_error());
  for (int i = 0; i < 5; i++) {
    expected_row(ids[i], 256, want);
    cr_assert(memcmp(out[i], want, 256) == 0, "entry %d", i);
  }
  hs_host_tier_stats st;
  hs__host_tier_stats(t, &st);
  cr_expect_eq(st.blocks_kept, 1);
  cr_expect_eq(st.hits, 0, "the block was read for this call: misses");
  hs__host_tier_stats_reset(t);
  int32_t again[2] = {0, 1023};
  cr_assert_eq(hs__host_tier_gather(t, again, 2, out), HS_OK);
  hs__host_tier_stats(t, &st);
  cr_expect_eq(st.hits, 2);
  cr_expect_eq(st.bytes_read, 0);
  /* rows of block 2 (not kept) are read alone: two far-apart rows, two
   * single-row reads */
  int32_t far[2] = {2048, 3071};
  cr_assert_eq(hs__host_tier_gather(t, far, 2, out), HS_OK);
  hs__host_tier_stats(t, &st);
  cr_expect_eq(st.bytes_read, 2 * 256);
  cr_expect_eq(st.reads, 2);
  /* 128-byte header: row 2048 lies inside one 4 KiB page, row 3071
   * straddles two */
  cr_expect_eq(st.page_bytes_missed, 3 * 4096);
  hs__host_tier_close(t);
  free(path);
  tu_rmtree(dir);
}

Test(host_tier, errors) {
  char *dir = tu_mkdtemp();
  hs_host_tier *t = NULL;
  char *missing = tu_path(dir, "none.npy");
  hs_host_tier_cfg cfg = {.path = missing, .budget_bytes = 1 << 20};
  TU_EXPECT_FAIL(hs__host_tier_open(&cfg, &t), HS_ERR_IO, "none.npy", "none.npy", "none.npy");
  cr_expect_null(t);
  /* integers are not features */
  char *ints = tu_path(dir, "ints.npy");
  int32_t vals[6] = {1, 2, 3, 4, 5, 6};
  uint64_t shape[2] = {3, 2};
  cr_assert_eq(hs__npy_write(ints, HS_DTYPE_INT32, 2, shape, vals), HS_OK);
  cfg.path = ints;
  cr_expect_eq(hs__host_tier_open(&cfg, &t), HS_ERR_FORMAT);
  cr_expect(strstr(hs_last_error(), "ints.npy"), "%s", hs_last_error());
  /* one dimension is not a feature matrix */
  char *flat = tu_path(dir, "flat.npy");
  float fv[4] = {0};
  uint64_t one[1] = {4};
  cr_assert_eq(hs__npy_write(flat, HS_DTYPE_FLOAT32, 1, one, fv), HS_OK);
  cfg.path = flat;
  cr_expect_eq(hs__host_tier_open(&cfg, &t), HS_ERR_FORMAT);
  /* ids out of range: an error, nothing read */
  char *path = write_feat(dir, "feat.npy", HS_DTYPE_FLOAT32, 1000, 8);
  cfg.path = path;
  cr_assert_eq(hs__host_tier_open(&cfg, &t), HS_OK, "%s", hs_last_error());
  unsigned char out[3 * 32];
  int32_t bad[3] = {0, 1000, 1};
  cr_expect_eq(hs__host_tier_gather(t, bad, 3, out), HS_ERR_RANGE);
  cr_expect(strstr(hs_last_error(), "1000"), "%s", hs_last_error());
  int32_t neg[1] = {-1};
  cr_expect_eq(hs__host_tier_gather(t, neg, 1, out), HS_ERR_RANGE);
  hs_host_tier_stats st;
  hs__host_tier_stats(t, &st);
  cr_expect_eq(st.bytes_read, 0);
  hs__host_tier_close(t);
  /* a file cut short after opening: the read fails with the offset */
  cfg.budget_bytes = 0;
  cr_assert_eq(hs__host_tier_open(&cfg, &t), HS_OK, "%s", hs_last_error());
  cr_assert_eq(truncate(path, 128 + 32 * 500), 0);
  int32_t late[1] = {900};
  cr_expect_eq(hs__host_tier_gather(t, late, 1, out), HS_ERR_IO);
  cr_expect(strstr(hs_last_error(), "feat.npy") && strstr(hs_last_error(), "byte"), "%s",
            hs_last_error());
  hs__host_tier_close(t);
  /* the same from a pool's thread: the error and its detail come back */
  hs_gather_pool *pool;
  cr_assert_eq(hs__gather_pool_create(2, &pool), HS_OK);
  /* 40000 rows of 32 B: 5 blocks of 8192 rows, 4 kept, half of it cut */
  char *path2 = write_feat(dir, "feat2.npy", HS_DTYPE_FLOAT32, 40000, 8);
  cfg = (hs_host_tier_cfg){.path = path2, .budget_bytes = 1 << 20, .block_bytes = 256u << 10,
                           .pool = pool};
  cr_assert_eq(hs__host_tier_open(&cfg, &t), HS_OK, "%s", hs_last_error());
  cr_assert_eq(truncate(path2, 128 + 32 * 20000), 0);
  int32_t spread[10] = {3, 39999, 9000, 25000, 17000, 33000, 100, 12000, 30000, 21000};
  unsigned char wide[10 * 32];
  hs__clear_error();
  cr_expect_eq(hs__host_tier_gather(t, spread, 10, wide), HS_ERR_IO);
  cr_expect(strstr(hs_last_error(), "feat2.npy") && strstr(hs_last_error(), "byte"), "%s",
            hs_last_error());
  /* blocks that failed to load (or that the threads never came to) are
   * not served later: rows past the cut fail, rows before it read right */
  unsigned char want[32];
  for (int i = 0; i < 10; i++) {
    hs_status st_i = hs__host_tier_gather(t, &spread[i], 1, wide);
    if (spread[i] >= 20000) {
      cr_expect_eq(st_i, HS_ERR_IO, "row %d is past the cut", spread[i]);
    } else {
      cr_expect_eq(st_i, HS_OK, "%s", hs_last_error());
      expected_row(spread[i], 32, want);
      cr_expect(memcmp(wide, want, 32) == 0, "row %d", spread[i]);
    }
  }
  /* the same with one thread, where the first failure stops the call */
  hs__host_tier_close(t);
  free(path2);
  path2 = write_feat(dir, "feat3.npy", HS_DTYPE_FLOAT32, 40000, 8);
  cfg.path = path2;
  cfg.pool = NULL;
  cr_assert_eq(hs__host_tier_open(&cfg, &t), HS_OK, "%s", hs_last_error());
  cr_assert_eq(truncate(path2, 128 + 32 * 20000), 0);
  cr_expect_eq(hs__host_tier_gather(t, spread, 10, wide), HS_ERR_IO);
  for (int i = 0; i < 10; i++) {
    hs_status st_i = hs__host_tier_gather(t, &spread[i], 1, wide);
    cr_expect_eq(st_i, spread[i] >= 20000 ? HS_ERR_IO : HS_OK, "row %d", spread[i]);
  }
  hs__host_tier_close(t);
  hs__gather_pool_destroy(pool);
  free(path2);
  free(missing);
  free(ints);
  free(flat);
  free(path);
  tu_rmtree(dir);
}

/* ---- peak resident set of a child doing full passes ------------------------- */

static long status_kib(const char *key) {
  FILE *f = fopen("/proc/self/status", "r");
  if (!f) return -1;
  char line[256];
  long v = -1;
  size_t kl = strlen(key);
  while (fgets(line, sizeof line, f))
    if (strncmp(line, key, kl) == 0 && line[kl] == ':') v = strtol(line + kl + 1, NULL, 10);
  fclose(f);
  return v;
}

/* Reset the peak (VmHWM) to the current resident set (Linux >= 4.0). */
static bool reset_peak(void) {
  FILE *f = fopen("/proc/self/clear_refs", "w");
  if (!f) return false;
  bool ok = fputs("5", f) >= 0;
  return fclose(f) == 0 && ok;
}

Test(host_tier, child_peak_rss_within_budget, .timeout = 120) {
  if (getenv("HS_UNDER_VALGRIND"))
    cr_skip_test("resident set sizes are valgrind's own under valgrind");
  const int64_t n = 65536, f = 256; /* 64 MiB of float32 features */
  const uint64_t budget = 16u << 20;
  const int32_t batch = 2048;
  char *dir = tu_mkdtemp();
  char *path = write_feat(dir, "feat.npy", HS_DTYPE_FLOAT32, n, f);
  int32_t *order = permutation(n, 3);
  int fds[2];
  cr_assert_eq(pipe(fds), 0);
  pid_t pid = fork();
  cr_assert_geq(pid, 0);
  if (pid == 0) {
    close(fds[0]);
    long res[3] = {-1, -1, -1}; /* baseline KiB, peak KiB, tier memory B */
    unsigned char *out = malloc((size_t)batch * (size_t)f * 4);
    if (out) memset(out, 0, (size_t)batch * (size_t)f * 4);
    if (out && reset_peak()) {
      res[0] = status_kib("VmHWM");
      hs_host_tier *t;
      hs_host_tier_cfg cfg = {.path = path, .budget_bytes = budget};
      bool ok = hs__host_tier_open(&cfg, &t) == HS_OK;
      for (int pass = 0; ok && pass < 2; pass++)
        for (int64_t i0 = 0; ok && i0 < n; i0 += batch)
          ok = hs__host_tier_gather(t, order + i0, batch, out) == HS_OK;
      if (ok) {
        hs_host_tier_stats st;
        hs__host_tier_stats(t, &st);
        res[2] = (long)st.memory_bytes;
        res[1] = status_kib("VmHWM");
        hs__host_tier_close(t);
      }
    }
    ssize_t w = write(fds[1], res, sizeof res);
    _exit(w == (ssize_t)sizeof res ? 0 : 1);
  }
  close(fds[1]);
  long res[3];
  cr_assert_eq(read(fds[0], res, sizeof res), (ssize_t)sizeof res);
  close(fds[0]);
  int status;
  waitpid(pid, &status, 0);
  cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  if (res[0] < 0) cr_skip_test("cannot reset the peak resident set (/proc/self/clear_refs)");
  cr_assert_geq(res[1], 0, "the passes failed in the child");
  long grew = (res[1] - res[0]) * 1024;
  cr_log_info("peak RSS grew %ld B (tier holds %ld B)", grew, res[2]);
  /* budget + the tier's overhead (a block, the workspace) + slack for the
   * allocator and stdio: 4 MiB; ASan adds a shadow byte per 8 bytes
   * touched and its own bookkeeping */
  long slack = 4l << 20;
#if defined(__SANITIZE_ADDRESS__)
  slack += ((long)budget + (4l << 20)) / 8 + (1l << 20);
#endif
  cr_expect_leq(grew, (long)budget + slack,
                "peak RSS grew %ld B over a 64 MiB file with a %llu B budget", grew,
                (unsigned long long)budget);
  cr_expect_leq(res[2], (long)budget + (3l << 20)); /* a block, the workspace */
  /* the budget was used: the kept blocks are resident */
  cr_expect_geq(grew, (long)budget / 2);
  free(order);
  free(path);
  tu_rmtree(dir);
}

/* ---- block-level seed order ---------------------------------------------------- */

static int cmp_i32(const void *a, const void *b) {
  int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
  return (x > y) - (x < y);
}

Test(block_order, permutation_grouped_and_seeded) {
  const int64_t n_all = 50000, R = 300;
  /* seeds: every third vertex, in a scattered order */
  int64_t n = 0;
  int32_t *seeds = malloc(sizeof *seeds * (size_t)n_all);
  int32_t *perm = permutation(n_all, 11);
  for (int64_t i = 0; i < n_all; i++)
    if (perm[i] % 3 == 0) seeds[n++] = perm[i];
  int32_t *a = malloc(sizeof *a * (size_t)n), *b = malloc(sizeof *b * (size_t)n),
          *c = malloc(sizeof *c * (size_t)n), *s1 = malloc(sizeof *s1 * (size_t)n),
          *s2 = malloc(sizeof *s2 * (size_t)n);
  cr_assert(seeds && a && b && c && s1 && s2);
  cr_assert_eq(hs__block_order_seeds(seeds, n, R, 42, 0, a), HS_OK, "%s", hs_last_error());
  cr_assert_eq(hs__block_order_seeds(seeds, n, R, 42, 0, b), HS_OK);
  cr_assert_eq(hs__block_order_seeds(seeds, n, R, 42, 1, c), HS_OK);
  cr_expect(memcmp(a, b, sizeof *a * (size_t)n) == 0, "same keys, same order");
  cr_expect(memcmp(a, c, sizeof *a * (size_t)n) != 0, "another epoch, another order");
  /* a permutation of the seeds */
  memcpy(s1, seeds, sizeof *s1 * (size_t)n);
  memcpy(s2, a, sizeof *s2 * (size_t)n);
  qsort(s1, (size_t)n, sizeof *s1, cmp_i32);
  qsort(s2, (size_t)n, sizeof *s2, cmp_i32);
  cr_expect(memcmp(s1, s2, sizeof *s1 * (size_t)n) == 0);
  /* each block's seeds are contiguous: block changes = blocks - 1 */
  int64_t blocks = (n_all - 1) / R + 1, changes = 0, ascending_blocks = 0, sorted_runs = 0;
  for (int64_t i = 1; i < n; i++) {
    if (a[i] / R != a[i - 1] / R) {
      changes++;
      if (a[i] / R > a[i - 1] / R) ascending_blocks++;
    } else if (a[i] > a[i - 1]) {
      sorted_runs++;
    }
  }
  cr_expect_eq(changes, blocks - 1);
  /* shuffled at both levels: neither the blocks nor the seeds within them
   * come out in id order (about half of the steps ascend) */
  cr_expect(ascending_blocks > changes / 4 && ascending_blocks < changes * 3 / 4, "%lld of %lld",
            (long long)ascending_blocks, (long long)changes);
  cr_expect(sorted_runs < (n - changes) * 3 / 4, "%lld", (long long)sorted_runs);
  /* errors */
  cr_expect_eq(hs__block_order_seeds(seeds, n, 0, 42, 0, a), HS_ERR_INVALID_ARG);
  int32_t neg[2] = {3, -4};
  cr_expect_eq(hs__block_order_seeds(neg, 2, 10, 42, 0, a), HS_ERR_INVALID_ARG);
  free(seeds);
  free(perm);
  free(a);
  free(b);
  free(c);
  free(s1);
  free(s2);
}

/* Batches in block order touch few blocks, so a budget below the features
 * costs far fewer disk bytes per epoch than the same batches in random
 * order, and later epochs find the blocks the first one kept. */
Test(block_order, fewer_disk_bytes_than_random_order, .timeout = 60) {
  const int64_t n = 32768, f = 32; /* 4 MiB, 256 KiB blocks of 2048 rows */
  char *dir = tu_mkdtemp();
  char *path = write_feat(dir, "feat.npy", HS_DTYPE_FLOAT32, n, f);
  int32_t *seeds = permutation(n, 5), *order = malloc(sizeof *order * (size_t)n);
  cr_assert(order);
  unsigned char *out = malloc(1024 * 128);
  cr_assert(out);
  uint64_t bytes[2];
  double rate[2];
  for (int mode = 0; mode < 2; mode++) {
    hs_host_tier *t;
    /* keeps 4 of 16 blocks */
    hs_host_tier_cfg cfg = {.path = path, .budget_bytes = 1u << 20, .block_bytes = 256u << 10};
    cr_assert_eq(hs__host_tier_open(&cfg, &t), HS_OK, "%s", hs_last_error());
    hs_host_tier_info info;
    hs__host_tier_info(t, &info);
    for (uint32_t epoch = 0; epoch < 2; epoch++) {
      hs__host_tier_stats_reset(t);
      if (mode == 1) {
        cr_assert_eq(hs__block_order_seeds(seeds, n, info.rows_per_block, 9, epoch, order), HS_OK);
      } else {
        int32_t *p = permutation(n, 100 + epoch);
        memcpy(order, p, sizeof *order * (size_t)n);
        free(p);
      }
      for (int64_t i0 = 0; i0 < n; i0 += 1024)
        cr_assert_eq(hs__host_tier_gather(t, order + i0, 1024, out), HS_OK);
    }
    hs_host_tier_stats st;
    hs__host_tier_stats(t, &st);
    bytes[mode] = st.bytes_read;
    rate[mode] = st.hit_rate;
    cr_expect(st.hit_rate > st.limit - 0.02 && st.hit_rate < st.limit + 0.02,
              "epoch 2 hit rate %.4f vs kept fraction %.4f", st.hit_rate, st.limit);
    hs__host_tier_close(t);
  }
  cr_expect_lt(bytes[1] * 4, bytes[0], "block order read %llu B, random order %llu B",
               (unsigned long long)bytes[1], (unsigned long long)bytes[0]);
  /* block order: two batches per block, each reading at most the span of
   * its rows in one unkept block (a batch may straddle two blocks) */
  cr_expect_leq(bytes[1], (uint64_t)3 * 12 * (256u << 10));
  (void)rate;
  free(seeds);
  free(order);
  free(out);
  free(path);
  tu_rmtree(dir);
}
