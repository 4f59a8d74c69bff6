/* The sparse host tier: rows equal to the in-memory sparse gather's, bit
 * for bit, under any budget (kept and unkept blocks, repeats, unsorted
 * ids, empty rows; binary, float32 and float16 values; int32 and int64
 * column ids); the budget kept; rows checked as they are read, with errors
 * naming the file and the row; the whole-file checks at open. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cache/hs_sparse_tier.h"
#include "data/hs_graph.h"
#include "data/hs_npy.h"
#include "hs_test_util.h"
#include "nn_fixtures.h"
#include "sample/hs_gather.h"

/* A random CSR table: n rows of f columns, 0 .. 2 x per_row entries a row,
 * every 9th row empty, and one long run of empty rows (a whole block of
 * them under small blocks). */
typedef struct table {
  int64_t n, f, nnz, *ptr;
  int32_t *col;
  int64_t *col64;
  float *val;
  uint16_t *half;
} table;

static void table_make(table *t, int64_t n, int64_t f, int per_row, uint64_t seed) {
  t->n = n;
  t->f = f;
  size_t most = (size_t)n * (size_t)per_row * 2 + 1;
  t->ptr = malloc(sizeof *t->ptr * ((size_t)n + 1));
  t->col = malloc(sizeof *t->col * most);
  t->col64 = malloc(sizeof *t->col64 * most);
  t->val = malloc(sizeof *t->val * most);
  t->half = malloc(sizeof *t->half * most);
  cr_assert(t->ptr && t->col && t->col64 && t->val && t->half);
  uint64_t s = seed;
  t->ptr[0] = 0;
  for (int64_t v = 0; v < n; v++) {
    int64_t k = t->ptr[v];
    int len = (int)(fx_next(&s) % (uint64_t)(2 * per_row + 1));
    if (v % 9 == 4 || (v >= n / 2 && v < n / 2 + 200)) len = 0;
    int32_t c = -1;
    for (int j = 0; j < len && c < f - 1; j++) {
      c += 1 + (int32_t)(fx_next(&s) % (uint64_t)((f - 1 - c) < 9 ? (f - 1 - c) : 9));
      t->col[k] = c;
      t->col64[k] = c;
      t->val[k] = fx_uniform(&s);
      t->half[k] = (uint16_t)(0x3400 + (fx_next(&s) % 2048)); /* finite halves */
      k++;
    }
    t->ptr[v + 1] = k;
  }
  t->nnz = t->ptr[n];
}

static void table_free(table *t) {
  free(t->ptr);
  free(t->col);
  free(t->col64);
  free(t->val);
  free(t->half);
}

enum { BINARY, F32, F16 };

/* The table's files in a new directory: int32 or int64 column ids, values
 * by `kind`. */
static char *table_write(const table *t, bool ids64, int kind) {
  char *dir = tu_mkdtemp();
  char *p = tu_path(dir, "feat_indptr.npy");
  uint64_t shape[1] = {(uint64_t)t->n + 1};
  cr_assert_eq(hs__npy_write(p, HS_DTYPE_INT64, 1, shape, t->ptr), HS_OK, "%s", hs_last_error());
  free(p);
  shape[0] = (uint64_t)t->nnz;
  p = tu_path(dir, "feat_indices.npy");
  cr_assert_eq(hs__npy_write(p, ids64 ? HS_DTYPE_INT64 : HS_DTYPE_INT32, 1, shape,
                             ids64 ? (const void *)t->col64 : (const void *)t->col),
               HS_OK, "%s", hs_last_error());
  free(p);
  if (kind != BINARY) {
    p = tu_path(dir, "feat_values.npy");
    cr_assert_eq(hs__npy_write(p, kind == F16 ? HS_DTYPE_FLOAT16 : HS_DTYPE_FLOAT32, 1, shape,
                               kind == F16 ? (const void *)t->half : (const void *)t->val),
                 HS_OK, "%s", hs_last_error());
    free(p);
  }
  return dir;
}

typedef struct paths {
  char *indptr, *indices, *values;
} paths;

static paths paths_of(const char *dir, int kind) {
  paths p = {tu_path(dir, "feat_indptr.npy"), tu_path(dir, "feat_indices.npy"),
             kind == BINARY ? NULL : tu_path(dir, "feat_values.npy")};
  return p;
}

static void paths_free(paths *p) {
  free(p->indptr);
  free(p->indices);
  free(p->values);
}

/* The in-memory gather's output for the same ids. */
typedef struct csr_out {
  int32_t *ptr, *col;
  float *val;
} csr_out;

static void out_alloc(csr_out *o, int32_t n, int64_t cap) {
  o->ptr = malloc(sizeof *o->ptr * ((size_t)n + 1));
  o->col = malloc(sizeof *o->col * ((size_t)cap + 1));
  o->val = malloc(sizeof *o->val * ((size_t)cap + 1));
  cr_assert(o->ptr && o->col && o->val);
}

static void out_free(csr_out *o) {
  free(o->ptr);
  free(o->col);
  free(o->val);
}

static void reference(const table *t, int kind, const int32_t *ids, int32_t n, int64_t cap,
                      csr_out *o) {
  hs_gather_pool *pool;
  cr_assert_eq(hs__gather_pool_create(1, &pool), HS_OK);
  hs_gather_sparse_req r = {.ptr = t->ptr, .col = t->col,
                            .val = kind == F32   ? (const void *)t->val
                                   : kind == F16 ? (const void *)t->half
                                                 : NULL,
                            .val_half = kind == F16, .n_rows = t->n, .ids = ids, .n = n,
                            .out_ptr = o->ptr, .out_col = o->col, .out_val = o->val,
                            .cap = cap};
  cr_assert_eq(hs__gather_sparse(pool, &r), HS_OK, "%s", hs_last_error());
  hs__gather_pool_destroy(pool);
}

static void expect_same(const csr_out *a, const csr_out *b, int32_t n, bool valued,
                        const char *what) {
  cr_assert_eq(memcmp(a->ptr, b->ptr, sizeof *a->ptr * ((size_t)n + 1)), 0, "%s: offsets", what);
  size_t e = (size_t)a->ptr[n];
  cr_assert_eq(memcmp(a->col, b->col, sizeof *a->col * e), 0, "%s: column ids", what);
  if (valued) cr_assert_eq(memcmp(a->val, b->val, sizeof *a->val * e), 0, "%s: values", what);
}

/* Random ids: repeats, unsorted; every 5th list also holds the empty run. */
static void random_ids(int32_t *ids, int32_t n, int64_t rows, uint64_t *s, int list) {
  for (int32_t i = 0; i < n; i++) ids[i] = (int32_t)(fx_next(s) % (uint64_t)rows);
  for (int32_t i = 0; i + 1 < n; i += 17) ids[i + 1] = ids[i]; /* repeats side by side */
  if (list % 5 == 0)
    for (int32_t i = 0; i < n && i < 40; i++) ids[i] = (int32_t)(rows / 2 + i);
}

/* One configuration: the tier over the files against the in-memory
 * gather, for several id lists, with the budget's share kept. */
static void compare(const table *t, bool ids64, int kind, uint64_t budget, int threads,
                    int32_t max_ids, bool borrow) {
  char *dir = table_write(t, ids64, kind);
  paths p = paths_of(dir, kind);
  hs_gather_pool *pool = NULL;
  if (threads > 1) cr_assert_eq(hs__gather_pool_create(threads, &pool), HS_OK);
  hs_sparse_tier_cfg c = {.indices_path = p.indices, .values_path = p.values,
                          .indptr_path = borrow ? NULL : p.indptr,
                          .ptr = borrow ? t->ptr : NULL, .n_rows = borrow ? t->n : 0,
                          .n_cols = t->f, .budget_bytes = budget, .block_bytes = 4096,
                          .max_ids = max_ids, .pool = pool};
  hs_sparse_tier *tier;
  cr_assert_eq(hs__sparse_tier_open(&c, &tier), HS_OK, "%s", hs_last_error());
  hs_sparse_tier_info info;
  hs__sparse_tier_info(tier, &info);
  cr_assert_eq(info.n_rows, t->n);
  cr_assert_eq(info.nnz, t->nnz);
  cr_assert_eq(info.valued, kind != BINARY);
  cr_assert_gt(info.n_blocks, 8, "%lld blocks", (long long)info.n_blocks);
  uint64_t total = (uint64_t)t->nnz * info.entry_bytes;
  cr_assert_eq(info.cache_capacity, budget < total ? budget : total);
  enum { N = 700 };
  int32_t ids[N];
  int64_t cap = (int64_t)N * 2 * 9 + 1;
  csr_out want, got;
  out_alloc(&want, N, cap);
  out_alloc(&got, N, cap);
  uint64_t s = 77 + (uint64_t)kind;
  int64_t lookups = 0;
  for (int list = 0; list < 12; list++) {
    int32_t n = list == 3 ? 1 : list == 4 ? 0 : N - list * 13;
    random_ids(ids, n, t->n, &s, list);
    reference(t, kind, ids, n, cap, &want);
    memset(got.col, 0xab, sizeof *got.col * (size_t)cap);
    cr_assert_eq(hs__sparse_tier_gather(tier, ids, n, got.ptr, got.col, got.val, cap), HS_OK,
                 "%s", hs_last_error());
    char what[96];
    snprintf(what, sizeof what, "list %d (%s, %s ids, budget %llu)", list,
             kind == BINARY ? "binary" : kind == F32 ? "float32" : "float16",
             ids64 ? "int64" : "int32", (unsigned long long)budget);
    expect_same(&want, &got, n, kind != BINARY, what);
    lookups += n;
  }
  hs_sparse_tier_stats st;
  hs__sparse_tier_stats(tier, &st);
  cr_expect_eq(st.lookups, lookups);
  cr_expect_leq(st.cache_used, budget, "kept %llu B over the budget",
                (unsigned long long)st.cache_used);
  cr_expect_leq(st.cache_bytes, budget);
  cr_expect_gt(st.reads, 0);
  cr_expect_gt(st.bytes_read, 0);
  cr_expect_gt(st.rows_checked, 0);
  if (budget >= total) {
    /* every block kept once it was met: reads stop, rows hit */
    cr_expect_eq(st.cache_used, total);
    cr_expect_gt(st.hits, 0);
  } else if (budget > 0) {
    cr_expect_gt(st.blocks_kept, 0);
    cr_expect_lt(st.blocks_kept, info.n_blocks);
    cr_expect_gt(st.hits, 0, "no hits with %lld blocks kept", (long long)st.blocks_kept);
    cr_expect_lt(st.hits, st.lookups);
  } else {
    cr_expect_eq(st.blocks_kept, 0);
    cr_expect_eq(st.hits, 0);
  }
  cr_expect_geq(st.memory_bytes, st.cache_bytes + st.overhead_bytes);
  hs__sparse_tier_stats_reset(tier);
  hs__sparse_tier_stats(tier, &st);
  cr_expect_eq(st.lookups, 0);
  cr_expect_eq(st.reads, 0);
  out_free(&want);
  out_free(&got);
  hs__sparse_tier_close(tier);
  hs__gather_pool_destroy(pool);
  paths_free(&p);
  tu_rmtree(dir);
}

Test(sparse_tier, rows_equal_the_in_memory_gather_bit_for_bit, .timeout = 120) {
  table t;
  table_make(&t, 3000, 500, 6, 3);
  for (int kind = 0; kind < 3; kind++) {
    uint64_t total = (uint64_t)t.nnz * (kind == BINARY ? 4u : 8u);
    compare(&t, false, kind, total / 3, 1, 0, true);      /* some blocks kept */
    compare(&t, true, kind, total / 4, 3, 150, false);     /* int64 ids, pool, pieces */
    compare(&t, false, kind, 0, 2, 0, false);              /* nothing kept */
    compare(&t, kind == F16, kind, 2 * total, 1, 64, true); /* everything kept */
  }
  table_free(&t);
}

/* A file with one entry changed: the entry at `e` set to `v` (column ids
 * or values). */
static void poke(const char *path, size_t off, const void *bytes, size_t len) {
  FILE *f = fopen(path, "r+b");
  cr_assert(f);
  cr_assert_eq(fseek(f, (long)off, SEEK_SET), 0);
  cr_assert_eq(fwrite(bytes, 1, len, f), len);
  fclose(f);
}

/* Write an array over an existing file. */
static void rewrite(const char *path, hs_dtype dt, uint64_t count, const void *data) {
  unlink(path);
  uint64_t shape[1] = {count};
  cr_assert_eq(hs__npy_write(path, dt, 1, shape, data), HS_OK, "%s", hs_last_error());
}

static size_t data_offset(const char *path) {
  hs__npy_header h;
  int fd;
  cr_assert_eq(hs__npy_open(path, &h, &fd), HS_OK, "%s", hs_last_error());
  close(fd);
  return h.data_offset;
}

/* The first row at or after `from` with at least two entries. */
static int64_t long_row(const table *t, int64_t from) {
  for (int64_t r = from; r < t->n; r++)
    if (t->ptr[r + 1] - t->ptr[r] >= 2) return r;
  cr_assert_fail("no row of two entries after %lld", (long long)from);
  return -1;
}

typedef enum corrupt { C_RANGE, C_REPEAT, C_NEGATIVE, C_NAN } corrupt;

/* A corrupted row read through the tier: a clear error naming the file and
 * the row, in a kept block (budget) and read on demand (none); rows of
 * other blocks still read; nothing written past the output. */
static void corrupted(const table *t, corrupt how, uint64_t budget) {
  int kind = how == C_NAN ? F32 : BINARY;
  char *dir = table_write(t, false, kind);
  paths p = paths_of(dir, kind);
  int64_t bad = long_row(t, t->n / 3);
  int64_t e = t->ptr[bad] + 1; /* the row's second entry */
  const char *file = how == C_NAN ? p.values : p.indices;
  size_t off = data_offset(file) + (size_t)e * 4;
  int32_t word = how == C_RANGE      ? (int32_t)t->f
                 : how == C_REPEAT   ? t->col[e - 1]
                 : how == C_NEGATIVE ? -5
                                     : 0x7fc00000; /* a quiet NaN's bits */
  poke(file, off, &word, 4);
  hs_sparse_tier_cfg c = {.indices_path = p.indices, .values_path = p.values,
                          .indptr_path = p.indptr, .n_cols = t->f, .budget_bytes = budget,
                          .block_bytes = 4096};
  hs_sparse_tier *tier;
  cr_assert_eq(hs__sparse_tier_open(&c, &tier), HS_OK, "the open reads no row: %s",
               hs_last_error());
  hs_sparse_tier_info info;
  hs__sparse_tier_info(tier, &info);
  int64_t far = (bad / info.rows_per_block + 3) * info.rows_per_block; /* another block */
  cr_assert_lt(far, t->n);
  int32_t ids[4] = {(int32_t)far, 0, (int32_t)bad, (int32_t)far};
  enum { CAP = 4 * 2 * 6 + 1 };
  int32_t optr[5], ocol[CAP + 16];
  float oval[CAP + 16];
  for (int i = 0; i < CAP + 16; i++) ocol[i] = -77, oval[i] = -77.0f;
  hs_status st = hs__sparse_tier_gather(tier, ids, 4, optr, ocol, oval, CAP);
  cr_expect_eq(st, HS_ERR_FORMAT, "corruption %d: status %d (%s)", how, st, hs_last_error());
  const char *msg = hs_last_error();
  cr_log_info("corruption %d, budget %llu: %s", how, (unsigned long long)budget, msg);
  char row[48];
  snprintf(row, sizeof row, "row %lld,", (long long)bad);
  cr_expect(strstr(msg, file) != NULL, "the message names no file: %s", msg);
  cr_expect(strstr(msg, row) != NULL, "the message names no row %lld: %s", (long long)bad, msg);
  for (int i = CAP; i < CAP + 16; i++) {
    cr_expect_eq(ocol[i], -77, "written past the output at %d", i);
    cr_expect_eq(oval[i], -77.0f);
  }
  /* the same again (a block that failed is not kept, its rows are read
   * and checked again) */
  cr_expect_eq(hs__sparse_tier_gather(tier, ids, 4, optr, ocol, oval, CAP), HS_ERR_FORMAT);
  /* rows of other blocks are fine */
  int32_t good[3] = {(int32_t)far, 0, (int32_t)far};
  cr_expect_eq(hs__sparse_tier_gather(tier, good, 3, optr, ocol, oval, CAP), HS_OK, "%s",
               hs_last_error());
  for (int i = 0; i < 3; i++) {
    int64_t b = t->ptr[good[i]], len = t->ptr[good[i] + 1] - b;
    cr_assert_eq(optr[i + 1] - optr[i], len);
    cr_expect_eq(memcmp(ocol + optr[i], t->col + b, sizeof *ocol * (size_t)len), 0);
  }
  hs__sparse_tier_close(tier);
  paths_free(&p);
  tu_rmtree(dir);
}

Test(sparse_tier, a_corrupt_row_is_named_when_read) {
  table t;
  table_make(&t, 2000, 300, 6, 9);
  for (corrupt how = C_RANGE; how <= C_NAN; how++) {
    corrupted(&t, how, 0);       /* read on demand */
    corrupted(&t, how, 1 << 20); /* in a block being kept */
  }
  table_free(&t);
}

/* The files under a long directory (two components of 200 characters, as
 * deep dataset trees have): a corrupt row's message still names the row
 * and what was wrong after the path, read on demand and in a block being
 * kept, with and without a pool. */
Test(sparse_tier, a_corrupt_row_is_named_under_a_long_path) {
  table t;
  table_make(&t, 2000, 300, 6, 9);
  char *root = tu_mkdtemp();
  char name[201];
  memset(name, 'd', 200);
  name[200] = '\0';
  char *mid = tu_path(root, name);
  cr_assert_eq(mkdir(mid, 0700), 0);
  char *dir = tu_path(mid, name);
  cr_assert_eq(mkdir(dir, 0700), 0);
  char *ip = tu_path(dir, "feat_indptr.npy"), *ix = tu_path(dir, "feat_indices.npy");
  uint64_t shape[1] = {(uint64_t)t.n + 1};
  cr_assert_eq(hs__npy_write(ip, HS_DTYPE_INT64, 1, shape, t.ptr), HS_OK, "%s", hs_last_error());
  shape[0] = (uint64_t)t.nnz;
  cr_assert_eq(hs__npy_write(ix, HS_DTYPE_INT32, 1, shape, t.col), HS_OK, "%s", hs_last_error());
  int64_t bad = long_row(&t, t.n / 3);
  int32_t word = (int32_t)t.f;
  poke(ix, data_offset(ix) + (size_t)(t.ptr[bad] + 1) * 4, &word, 4);
  char row[48];
  snprintf(row, sizeof row, "row %lld,", (long long)bad);
  for (int threads = 1; threads <= 3; threads += 2)
    for (uint64_t budget = 0; budget <= (1u << 20); budget += 1u << 20) {
      hs_gather_pool *pool = NULL;
      if (threads > 1) cr_assert_eq(hs__gather_pool_create(threads, &pool), HS_OK);
      hs_sparse_tier_cfg c = {.indices_path = ix, .indptr_path = ip, .n_cols = t.f,
                              .budget_bytes = budget, .block_bytes = 4096, .pool = pool};
      hs_sparse_tier *tier;
      cr_assert_eq(hs__sparse_tier_open(&c, &tier), HS_OK, "%s", hs_last_error());
      int32_t ids[3] = {0, (int32_t)bad, (int32_t)(t.n - 1)};
      int32_t optr[4], ocol[64];
      cr_expect_eq(hs__sparse_tier_gather(tier, ids, 3, optr, ocol, NULL, 64), HS_ERR_FORMAT);
      const char *msg = hs_last_error();
      cr_expect(strstr(msg, ix) != NULL, "the message names no file: %s", msg);
      cr_expect(strstr(msg, row) != NULL, "%d threads, budget %llu: the message names no "
                "row %lld: %s", threads, (unsigned long long)budget, (long long)bad, msg);
      cr_expect(strstr(msg, "outside") != NULL, "the message says not what was wrong: %s", msg);
      hs__sparse_tier_close(tier);
      hs__gather_pool_destroy(pool);
    }
  free(ip);
  free(ix);
  free(dir);
  free(mid);
  tu_rmtree(root);
  table_free(&t);
}

Test(sparse_tier, ids_out_of_range_and_a_small_output_are_refused) {
  table t;
  table_make(&t, 500, 60, 4, 5);
  char *dir = table_write(&t, false, F32);
  paths p = paths_of(dir, F32);
  hs_sparse_tier_cfg c = {.indices_path = p.indices, .values_path = p.values,
                          .indptr_path = p.indptr, .n_cols = t.f, .budget_bytes = 1000};
  hs_sparse_tier *tier;
  cr_assert_eq(hs__sparse_tier_open(&c, &tier), HS_OK, "%s", hs_last_error());
  int32_t optr[4], ocol[100];
  float oval[100];
  int32_t bad[3] = {1, 500, 2};
  cr_expect_eq(hs__sparse_tier_gather(tier, bad, 3, optr, ocol, oval, 100), HS_ERR_RANGE);
  bad[1] = -1;
  cr_expect_eq(hs__sparse_tier_gather(tier, bad, 3, optr, ocol, oval, 100), HS_ERR_RANGE);
  int32_t ids[3] = {(int32_t)long_row(&t, 0), (int32_t)long_row(&t, 10), (int32_t)long_row(&t, 20)};
  int64_t need = 0;
  for (int i = 0; i < 3; i++) need += t.ptr[ids[i] + 1] - t.ptr[ids[i]];
  cr_expect_eq(hs__sparse_tier_gather(tier, ids, 3, optr, ocol, oval, need - 1), HS_ERR_RANGE);
  cr_expect_eq(hs__sparse_tier_gather(tier, ids, 3, optr, ocol, oval, need), HS_OK, "%s",
               hs_last_error());
  cr_expect_eq(hs__sparse_tier_gather(tier, ids, -1, optr, ocol, oval, need), HS_ERR_INVALID_ARG);
  hs_sparse_tier_stats st;
  hs__sparse_tier_stats(tier, &st);
  cr_expect_eq(st.lookups, 3, "refused calls count nothing");
  hs__sparse_tier_close(tier);
  paths_free(&p);
  tu_rmtree(dir);
  table_free(&t);
}

/* What the open checks in full: the offsets (from 0, never decreasing,
 * when read from feat_indptr.npy), and the last offset against the
 * entries of feat_indices.npy and feat_values.npy. */
Test(sparse_tier, the_open_checks_the_offsets_and_the_lengths) {
  table t;
  table_make(&t, 400, 50, 4, 7);
  char *dir = table_write(&t, false, F32);
  paths p = paths_of(dir, F32);
  hs_sparse_tier *tier = NULL;
  hs_sparse_tier_cfg c = {.indices_path = p.indices, .values_path = p.values,
                          .indptr_path = p.indptr, .n_cols = t.f};
  /* decreasing offsets */
  int64_t r = long_row(&t, 100);
  int64_t word = t.ptr[r + 1] + 1;
  poke(p.indptr, data_offset(p.indptr) + (size_t)(r + 1) * 8, &word, 8);
  cr_expect_eq(hs__sparse_tier_open(&c, &tier), HS_ERR_FORMAT);
  cr_expect(strstr(hs_last_error(), "feat_indptr.npy") && strstr(hs_last_error(), "decreases"),
            "%s", hs_last_error());
  cr_expect_null(tier);
  poke(p.indptr, data_offset(p.indptr) + (size_t)(r + 1) * 8, &t.ptr[r + 1], 8);
  cr_assert_eq(hs__sparse_tier_open(&c, &tier), HS_OK, "%s", hs_last_error());
  hs__sparse_tier_close(tier);
  tier = NULL;
  /* one entry short in the column ids, then one too many in the values */
  rewrite(p.indices, HS_DTYPE_INT32, (uint64_t)t.nnz - 1, t.col);
  cr_expect_eq(hs__sparse_tier_open(&c, &tier), HS_ERR_FORMAT);
  cr_expect(strstr(hs_last_error(), p.indices) != NULL, "%s", hs_last_error());
  rewrite(p.indices, HS_DTYPE_INT32, (uint64_t)t.nnz, t.col);
  float *more = calloc((size_t)t.nnz + 1, sizeof *more);
  rewrite(p.values, HS_DTYPE_FLOAT32, (uint64_t)t.nnz + 1, more);
  free(more);
  cr_expect_eq(hs__sparse_tier_open(&c, &tier), HS_ERR_FORMAT);
  cr_expect(strstr(hs_last_error(), p.values) != NULL, "%s", hs_last_error());
  rewrite(p.values, HS_DTYPE_FLOAT32, (uint64_t)t.nnz, t.val);
  cr_assert_eq(hs__sparse_tier_open(&c, &tier), HS_OK, "%s", hs_last_error());
  hs__sparse_tier_close(tier);
  tier = NULL;
  /* a truncated column file: the header promises more than the file has */
  cr_assert_eq(truncate(p.indices, (off_t)(data_offset(p.indices) + (size_t)t.nnz * 4 - 4)), 0);
  cr_expect_neq(hs__sparse_tier_open(&c, &tier), HS_OK);
  cr_expect_null(tier);
  /* a wrong dtype */
  rewrite(p.indices, HS_DTYPE_FLOAT32, (uint64_t)t.nnz, t.val);
  cr_expect_eq(hs__sparse_tier_open(&c, &tier), HS_ERR_FORMAT);
  paths_free(&p);
  tu_rmtree(dir);
  table_free(&t);
}

/* ---- memory -------------------------------------------------------------- */

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

static void put_array(const char *dir, const char *name, hs_dtype dt, uint64_t count,
                      const void *data) {
  char *p = tu_path(dir, name);
  uint64_t shape[1] = {count};
  cr_assert_eq(hs__npy_write(p, dt, 1, shape, data), HS_OK, "%s", hs_last_error());
  free(p);
}

/* A dataset of 2^24 sparse column ids (2^18 rows of 64, no edges; 64 MiB
 * as int32, 128 MiB as int64), opened and read through the tier with a
 * 16 MiB budget in a child: its peak resident set grows by the budget, the
 * offsets and a fixed overhead, never by the column ids (the open checks
 * them chunk by chunk, dropping the pages behind or reading them by pread,
 * and keeps no copy; the tier reads them by pread). */
static void peak_rss_within_budget(hs_dtype ids) {
  if (getenv("HS_UNDER_VALGRIND"))
    cr_skip_test("resident set sizes are valgrind's own under valgrind");
  const int64_t n = 1 << 18, per = 64, f = 4096;
  const uint64_t budget = 16u << 20;
  const int32_t batch = 2048;
  char *dir = tu_mkdtemp();
  int64_t *ptr = malloc(sizeof *ptr * (size_t)(n + 1));
  int32_t *col = malloc(sizeof *col * (size_t)(n * per));
  cr_assert(ptr && col);
  for (int64_t r = 0; r <= n; r++) ptr[r] = r * per;
  for (int64_t r = 0; r < n; r++)
    for (int64_t k = 0; k < per; k++) col[r * per + k] = (int32_t)(k * (f / per) + r % (f / per));
  int64_t *zeros = calloc((size_t)n + 1, sizeof *zeros);
  int64_t shape2[2] = {n, f};
  put_array(dir, "indptr.npy", HS_DTYPE_INT64, (uint64_t)n + 1, zeros);
  put_array(dir, "indices.npy", HS_DTYPE_INT32, 0, zeros);
  put_array(dir, "feat_shape.npy", HS_DTYPE_INT64, 2, shape2);
  put_array(dir, "feat_indptr.npy", HS_DTYPE_INT64, (uint64_t)n + 1, ptr);
  if (ids == HS_DTYPE_INT64) {
    int64_t *col64 = malloc(sizeof *col64 * (size_t)(n * per));
    cr_assert(col64);
    for (int64_t k = 0; k < n * per; k++) col64[k] = col[k];
    put_array(dir, "feat_indices.npy", HS_DTYPE_INT64, (uint64_t)(n * per), col64);
    free(col64);
  } else {
    put_array(dir, "feat_indices.npy", HS_DTYPE_INT32, (uint64_t)(n * per), col);
  }
  free(zeros);
  int32_t *order = malloc(sizeof *order * (size_t)n);
  cr_assert(order);
  uint64_t s = 5;
  for (int64_t i = 0; i < n; i++) order[i] = (int32_t)i;
  for (int64_t i = n - 1; i > 0; i--) {
    int64_t j = (int64_t)(fx_next(&s) % (uint64_t)(i + 1));
    int32_t t = order[i];
    order[i] = order[j];
    order[j] = t;
  }
  char *ipath = tu_path(dir, "feat_indices.npy");
  int fds[2];
  cr_assert_eq(pipe(fds), 0);
  pid_t pid = fork();
  cr_assert_geq(pid, 0);
  if (pid == 0) {
    close(fds[0]);
    long res[4] = {-1, -1, -1, -1}; /* baseline KiB, after open KiB, peak KiB, tier B */
    size_t cap = (size_t)batch * (size_t)per;
    int32_t *optr = malloc(sizeof *optr * ((size_t)batch + 1));
    int32_t *ocol = malloc(sizeof *ocol * cap);
    if (optr && ocol) memset(ocol, 0, sizeof *ocol * cap), memset(optr, 0, sizeof *optr * 4);
    hs_dataset *ds = NULL;
    if (optr && ocol && reset_peak()) {
      res[0] = status_kib("VmHWM");
      bool ok = hs_dataset_open(dir, &ds) == HS_OK;
      res[1] = status_kib("VmHWM");
      const hs_graph *g = ok ? hs__dataset_graph(ds) : NULL;
      hs_sparse_tier *t = NULL;
      hs_sparse_tier_cfg cfg = {.indices_path = ipath, .ptr = g ? g->feat_ptr : NULL,
                                .n_rows = n, .n_cols = f, .budget_bytes = budget};
      ok = ok && hs__sparse_tier_open(&cfg, &t) == HS_OK;
      for (int pass = 0; ok && pass < 2; pass++)
        for (int64_t i0 = 0; ok && i0 < n; i0 += batch)
          ok = hs__sparse_tier_gather(t, order + i0, batch, optr, ocol, NULL, (int64_t)cap) ==
                   HS_OK &&
               ocol[0] == col[(int64_t)order[i0] * per];
      if (ok) {
        hs_sparse_tier_stats st;
        hs__sparse_tier_stats(t, &st);
        res[3] = (long)st.memory_bytes;
        res[2] = status_kib("VmHWM");
      }
      hs__sparse_tier_close(t);
    }
    hs_dataset_close(ds);
    ssize_t w = write(fds[1], res, sizeof res);
    _exit(w == (ssize_t)sizeof res ? 0 : 1);
  }
  close(fds[1]);
  long res[4];
  cr_assert_eq(read(fds[0], res, sizeof res), (ssize_t)sizeof res);
  close(fds[0]);
  int status;
  waitpid(pid, &status, 0);
  cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  if (res[0] < 0) cr_skip_test("cannot reset the peak resident set (/proc/self/clear_refs)");
  cr_assert_geq(res[2], 0, "the open or the passes failed in the child");
  long opened = (res[1] - res[0]) * 1024, grew = (res[2] - res[0]) * 1024;
  cr_log_info("%s column ids (%lld B): peak RSS grew %ld B at open, %ld B in all (the tier "
              "holds %ld B)", ids == HS_DTYPE_INT64 ? "int64" : "int32",
              (long long)(n * per) * (ids == HS_DTYPE_INT64 ? 8 : 4), opened, grew, res[3]);
  /* the offsets (both 2 MiB arrays), the open's current chunk (8 MiB) and
   * slack; then the budget, the tier's overhead (workspace, a read
   * buffer) and slack */
  long slack = 4l << 20;
#if defined(__SANITIZE_ADDRESS__)
  slack += ((long)budget + (16l << 20)) / 8 + (1l << 20);
#endif
  cr_expect_leq(opened, (4l << 20) + (8l << 20) + slack, "the open held %ld B", opened);
  cr_expect_leq(grew, (4l << 20) + (8l << 20) + (long)budget + (4l << 20) + slack,
                "peak RSS grew %ld B over 2^24 column ids with a %llu B budget", grew,
                (unsigned long long)budget);
  /* int64 ids: a kept block is read whole before it is narrowed, so the
   * read buffer holds twice a block's kept bytes (a block: budget / 16) */
  cr_expect_leq(res[3], (long)budget + (4l << 20) + (ids == HS_DTYPE_INT64 ? (long)budget / 16 : 0));
  cr_expect_geq(grew, (long)budget / 2, "the budget was used: kept blocks are resident");
  free(ipath);
  free(order);
  free(ptr);
  free(col);
  tu_rmtree(dir);
}

Test(sparse_tier, child_peak_rss_within_budget, .timeout = 120) {
  peak_rss_within_budget(HS_DTYPE_INT32);
}

/* scipy writes int64 column ids once nnz >= 2^31, the sizes the tier is
 * for: they must not stay resident either (no int32 copy made at open). */
Test(sparse_tier, child_peak_rss_within_budget_int64_ids, .timeout = 120) {
  peak_rss_within_budget(HS_DTYPE_INT64);
}
