/* Sparse input features on the host: the native format (one test per
 * validation rule), converting between the dense and sparse forms, stats,
 * the sparse gather, and the plain-C references of the sparse first layer
 * (against finite differences of an independent double-precision forward
 * and against the dense layer). */
#include <math.h>
#include <stdint.h>
#include <unistd.h>

#include "data/hs_build.h"
#include "data/hs_graph.h"
#include "data/hs_npy.h"
#include "hs_test_util.h"
#include "nn/model.h"
#include "nn/nn_rng.h"
#include "nn/ref_nn.h"
#include "nn/sparse_first.h"
#include "nn_fixtures.h"
#include "sample/hs_gather.h"

/* ---- the format ----------------------------------------------------------- */

/* 5 vertices, a ring; features 5 x 4 with zeros, one row empty. */
static const int64_t r_indptr[6] = {0, 1, 2, 3, 4, 5};
static const int32_t r_indices[5] = {1, 2, 3, 4, 0};
static const int32_t r_labels[5] = {0, 1, 0, 1, 0};
static const float r_feat[5][4] = {
    {0, 1.5f, 0, -2}, {0, 0, 0, 0}, {3, 0, 0, 0.25f}, {0, 0, 7, 0}, {1, 1, 1, 1}};
static const int64_t s_ptr[6] = {0, 2, 2, 4, 5, 9};
static const int32_t s_col[9] = {1, 3, 0, 3, 2, 0, 1, 2, 3};
static const float s_val[9] = {1.5f, -2, 3, 0.25f, 7, 1, 1, 1, 1};

static void put(const char *dir, const char *name, hs_dtype t, int ndim, uint64_t d0,
                uint64_t d1, const void *data) {
  char *p = tu_path(dir, name);
  unlink(p);
  uint64_t shape[2] = {d0, d1};
  cr_assert_eq(hs__npy_write(p, t, ndim, shape, data), HS_OK, "%s", hs_last_error());
  free(p);
}

static void drop(const char *dir, const char *name) {
  char *p = tu_path(dir, name);
  unlink(p);
  free(p);
}

static char *topology_only(void) {
  char *dir = tu_mkdtemp();
  put(dir, "indptr.npy", HS_DTYPE_INT64, 1, 6, 0, r_indptr);
  put(dir, "indices.npy", HS_DTYPE_INT32, 1, 5, 0, r_indices);
  put(dir, "label.npy", HS_DTYPE_INT32, 1, 5, 0, r_labels);
  return dir;
}

static char *sparse_dataset(void) {
  char *dir = topology_only();
  int64_t shape[2] = {5, 4};
  put(dir, "feat_shape.npy", HS_DTYPE_INT64, 1, 2, 0, shape);
  put(dir, "feat_indptr.npy", HS_DTYPE_INT64, 1, 6, 0, s_ptr);
  put(dir, "feat_indices.npy", HS_DTYPE_INT32, 1, 9, 0, s_col);
  put(dir, "feat_values.npy", HS_DTYPE_FLOAT32, 1, 9, 0, s_val);
  return dir;
}

static hs_status open_dir(const char *dir) {
  hs_dataset *ds = NULL;
  hs_status st = hs_dataset_open(dir, &ds);
  hs_dataset_close(ds);
  return st;
}

Test(sparse, opens_sparse_features_and_reports_them) {
  char *dir = sparse_dataset();
  hs_dataset *ds;
  cr_assert_eq(hs_dataset_open(dir, &ds), HS_OK, "%s", hs_last_error());
  const hs_graph *g = hs__dataset_graph(ds);
  cr_expect(g->feat_sparse);
  cr_expect_null(g->feat);
  cr_expect_eq(g->f, 4);
  cr_expect_eq(g->feat_nnz, 9);
  cr_expect_eq(g->feat_row_nnz_max, 4);
  cr_expect_eq(memcmp(g->feat_ptr, s_ptr, sizeof s_ptr), 0);
  cr_expect_eq(memcmp(g->feat_col, s_col, sizeof s_col), 0);
  cr_expect_eq(memcmp(g->feat_val, s_val, sizeof s_val), 0);
  hs_dataset_info info;
  hs_dataset_info_init(&info);
  hs_dataset_get_info(ds, &info);
  cr_expect_eq(info.feature_format, HS_FEAT_FORMAT_SPARSE);
  cr_expect_eq(info.feature_dtype, HS_DTYPE_FLOAT32);
  cr_expect_not(info.feature_binary);
  cr_expect_eq(info.feature_nnz, 9);
  cr_expect_eq(info.feature_bytes, 6 * 8 + 9 * 4 + 9 * 4);
  hs_dataset_stats st;
  hs_dataset_stats_init(&st);
  cr_assert_eq(hs_dataset_stats_compute(ds, &st), HS_OK);
  cr_expect_eq(st.feature_nnz, 9);
  cr_expect_float_eq(st.feature_density, 9.0 / 20.0, 1e-12);
  cr_expect_eq(st.feature_row_nnz_max, 4);
  hs_dataset_close(ds);
  /* Without values: binary. */
  drop(dir, "feat_values.npy");
  cr_assert_eq(hs_dataset_open(dir, &ds), HS_OK, "%s", hs_last_error());
  hs_dataset_get_info(ds, &info);
  cr_expect(info.feature_binary);
  cr_expect_null(hs__dataset_graph(ds)->feat_val);
  hs_dataset_close(ds);
  tu_rmtree(dir);
}

Test(sparse, every_rule_is_checked_and_named) {
  char *dir = sparse_dataset();
  cr_assert_eq(open_dir(dir), HS_OK, "%s", hs_last_error());
  int64_t bad_shape[2] = {4, 4};
  put(dir, "feat_shape.npy", HS_DTYPE_INT64, 1, 2, 0, bad_shape);
  TU_EXPECT_FAIL(open_dir(dir), HS_ERR_FORMAT, "feat_shape.npy", "element 0", "N is 4");
  int64_t zero_f[2] = {5, 0};
  put(dir, "feat_shape.npy", HS_DTYPE_INT64, 1, 2, 0, zero_f);
  TU_EXPECT_FAIL(open_dir(dir), HS_ERR_FORMAT, "feat_shape.npy", "element 1", "F is 0");
  drop(dir, "feat_shape.npy");
  TU_EXPECT_FAIL(open_dir(dir), HS_ERR_IO, "feat_shape.npy", "missing", "shape (N, F)");
  int64_t narrow[2] = {5, 3}; /* column 3 is out of range */
  put(dir, "feat_shape.npy", HS_DTYPE_INT64, 1, 2, 0, narrow);
  TU_EXPECT_FAIL(open_dir(dir), HS_ERR_FORMAT, "feat_indices.npy", "element 1", "column id");
  int64_t shape[2] = {5, 4};
  put(dir, "feat_shape.npy", HS_DTYPE_INT64, 1, 2, 0, shape);

  int64_t p_first[6] = {1, 2, 2, 4, 5, 9};
  put(dir, "feat_indptr.npy", HS_DTYPE_INT64, 1, 6, 0, p_first);
  TU_EXPECT_FAIL(open_dir(dir), HS_ERR_FORMAT, "feat_indptr.npy", "element 0", "must be 0");
  int64_t p_down[6] = {0, 2, 1, 4, 5, 9};
  put(dir, "feat_indptr.npy", HS_DTYPE_INT64, 1, 6, 0, p_down);
  TU_EXPECT_FAIL(open_dir(dir), HS_ERR_FORMAT, "feat_indptr.npy", "element 2", "decreases");
  int64_t p_end[6] = {0, 2, 2, 4, 5, 8};
  put(dir, "feat_indptr.npy", HS_DTYPE_INT64, 1, 6, 0, p_end);
  TU_EXPECT_FAIL(open_dir(dir), HS_ERR_FORMAT, "feat_indptr.npy", "element 5", "holds 9");
  put(dir, "feat_indptr.npy", HS_DTYPE_INT64, 1, 5, 0, s_ptr);
  TU_EXPECT_FAIL(open_dir(dir), HS_ERR_FORMAT, "feat_indptr.npy", "byte", "N+1 = 6");
  put(dir, "feat_indptr.npy", HS_DTYPE_INT64, 1, 6, 0, s_ptr);

  int32_t c_dup[9] = {1, 1, 0, 3, 2, 0, 1, 2, 3};
  put(dir, "feat_indices.npy", HS_DTYPE_INT32, 1, 9, 0, c_dup);
  TU_EXPECT_FAIL(open_dir(dir), HS_ERR_FORMAT, "feat_indices.npy", "element 1", "repeats");
  int32_t c_order[9] = {1, 3, 0, 3, 2, 0, 2, 1, 3};
  put(dir, "feat_indices.npy", HS_DTYPE_INT32, 1, 9, 0, c_order);
  TU_EXPECT_FAIL(open_dir(dir), HS_ERR_FORMAT, "feat_indices.npy", "element 7", "strictly increasing");
  int32_t c_neg[9] = {1, 3, 0, 3, 2, -1, 1, 2, 3};
  put(dir, "feat_indices.npy", HS_DTYPE_INT32, 1, 9, 0, c_neg);
  TU_EXPECT_FAIL(open_dir(dir), HS_ERR_FORMAT, "feat_indices.npy", "element 5", "column id");
  /* int64 column ids are narrowed and checked the same way. */
  int64_t c64[9] = {1, 3, 0, 3, 2, 0, 1, 2, 4};
  put(dir, "feat_indices.npy", HS_DTYPE_INT64, 1, 9, 0, c64);
  TU_EXPECT_FAIL(open_dir(dir), HS_ERR_FORMAT, "feat_indices.npy", "element 8", "column id");
  put(dir, "feat_indices.npy", HS_DTYPE_INT32, 1, 9, 0, s_col);

  float v_nan[9] = {1.5f, -2, 3, 0.25f, 7, 1, NAN, 1, 1};
  put(dir, "feat_values.npy", HS_DTYPE_FLOAT32, 1, 9, 0, v_nan);
  TU_EXPECT_FAIL(open_dir(dir), HS_ERR_FORMAT, "feat_values.npy", "element 6", "not finite");
  uint16_t h_inf[9] = {0x3c00, 0x3c00, 0x3c00, 0x3c00, 0x3c00, 0x3c00, 0x3c00, 0x7c00, 0x3c00};
  put(dir, "feat_values.npy", HS_DTYPE_FLOAT16, 1, 9, 0, h_inf);
  TU_EXPECT_FAIL(open_dir(dir), HS_ERR_FORMAT, "feat_values.npy", "element 7", "not finite");
  put(dir, "feat_values.npy", HS_DTYPE_FLOAT32, 1, 8, 0, s_val);
  TU_EXPECT_FAIL(open_dir(dir), HS_ERR_FORMAT, "feat_values.npy", "byte", "disagrees");
  put(dir, "feat_values.npy", HS_DTYPE_INT32, 1, 9, 0, s_col);
  cr_expect_eq(open_dir(dir), HS_ERR_FORMAT, "int32 values: %s", hs_last_error());
  put(dir, "feat_values.npy", HS_DTYPE_FLOAT32, 1, 9, 0, s_val);
  cr_expect_eq(open_dir(dir), HS_OK, "%s", hs_last_error());

  put(dir, "feat.npy", HS_DTYPE_FLOAT32, 2, 5, 4, r_feat);
  TU_EXPECT_FAIL(open_dir(dir), HS_ERR_FORMAT, dir, "feat_indptr.npy", "not both");
  tu_rmtree(dir);
}

/* The open checks the column ids and values chunk by chunk (8 MiB): arrays
 * of several chunks (18 MiB of column ids and of float32 values, 9 MiB of
 * float16 ones) are checked to their last element, every rule, with the
 * same messages; the longest row is found wherever it lies. */
Test(sparse, rules_are_checked_past_the_first_chunk, .timeout = 120) {
  enum { N = 70000, PER = 64, F = 1024, LONG = 100 };
  const int64_t longest = N - 7; /* in the last chunk */
  int64_t *ptr = malloc(sizeof *ptr * (N + 1));
  int64_t *zeros = calloc(N + 1, sizeof *zeros);
  cr_assert(ptr && zeros);
  ptr[0] = 0;
  for (int64_t v = 0; v < N; v++) ptr[v + 1] = ptr[v] + (v == longest ? LONG : PER);
  const int64_t nnz = ptr[N];
  int32_t *col = malloc(sizeof *col * (size_t)nnz);
  float *val = malloc(sizeof *val * (size_t)nnz);
  uint16_t *half = malloc(sizeof *half * (size_t)nnz);
  cr_assert(col && val && half);
  for (int64_t v = 0; v < N; v++)
    for (int64_t k = ptr[v]; k < ptr[v + 1]; k++) {
      col[k] = (int32_t)((k - ptr[v]) * 10 + v % 10);
      val[k] = (float)(k % 13) - 6.0f;
      half[k] = 0x3c00;
    }
  char *dir = tu_mkdtemp();
  int64_t shape[2] = {N, F};
  put(dir, "indptr.npy", HS_DTYPE_INT64, 1, N + 1, 0, zeros);
  put(dir, "indices.npy", HS_DTYPE_INT32, 1, 0, 0, zeros);
  put(dir, "feat_shape.npy", HS_DTYPE_INT64, 1, 2, 0, shape);
  put(dir, "feat_indptr.npy", HS_DTYPE_INT64, 1, N + 1, 0, ptr);
  put(dir, "feat_indices.npy", HS_DTYPE_INT32, 1, (uint64_t)nnz, 0, col);
  put(dir, "feat_values.npy", HS_DTYPE_FLOAT32, 1, (uint64_t)nnz, 0, val);
  hs_dataset *ds;
  cr_assert_eq(hs_dataset_open(dir, &ds), HS_OK, "%s", hs_last_error());
  const hs_graph *g = hs__dataset_graph(ds);
  cr_expect_eq(g->feat_row_nnz_max, LONG, "the longest row (%lld) is in the last chunk",
               (long long)longest);
  cr_expect_eq(memcmp(g->feat_col, col, sizeof *col * (size_t)nnz), 0);
  cr_expect_eq(memcmp(g->feat_val, val, sizeof *val * (size_t)nnz), 0);
  hs_dataset_close(ds);
  char at[32];
  const int64_t last = nnz - 1;
  snprintf(at, sizeof at, "element %lld ", (long long)last);
  /* the last column id out of range, then repeating the one before it */
  col[last] = F;
  put(dir, "feat_indices.npy", HS_DTYPE_INT32, 1, (uint64_t)nnz, 0, col);
  TU_EXPECT_FAIL(open_dir(dir), HS_ERR_FORMAT, "feat_indices.npy", at, "column id");
  col[last] = col[last - 1];
  put(dir, "feat_indices.npy", HS_DTYPE_INT32, 1, (uint64_t)nnz, 0, col);
  TU_EXPECT_FAIL(open_dir(dir), HS_ERR_FORMAT, "feat_indices.npy", at, "repeats");
  char row[32];
  snprintf(row, sizeof row, "row %d:", N - 1);
  TU_EXPECT_FAIL(open_dir(dir), HS_ERR_FORMAT, "feat_indices.npy", row, "strictly increasing");
  col[last] = col[last - 1] + 1;
  put(dir, "feat_indices.npy", HS_DTYPE_INT32, 1, (uint64_t)nnz, 0, col);
  cr_assert_eq(open_dir(dir), HS_OK, "%s", hs_last_error());
  /* the last value not finite: float32, then float16 */
  val[last] = INFINITY;
  put(dir, "feat_values.npy", HS_DTYPE_FLOAT32, 1, (uint64_t)nnz, 0, val);
  TU_EXPECT_FAIL(open_dir(dir), HS_ERR_FORMAT, "feat_values.npy", at, "not finite");
  half[last] = 0x7e00;
  put(dir, "feat_values.npy", HS_DTYPE_FLOAT16, 1, (uint64_t)nnz, 0, half);
  TU_EXPECT_FAIL(open_dir(dir), HS_ERR_FORMAT, "feat_values.npy", at, "not finite");
  half[last] = 0x3c00;
  put(dir, "feat_values.npy", HS_DTYPE_FLOAT16, 1, (uint64_t)nnz, 0, half);
  cr_expect_eq(open_dir(dir), HS_OK, "%s", hs_last_error());
  free(ptr);
  free(zeros);
  free(col);
  free(val);
  free(half);
  tu_rmtree(dir);
}

/* The exact message of a failed open. */
static void expect_open_message(const char *dir, const char *want) {
  hs_status st = open_dir(dir);
  cr_expect_eq(st, HS_ERR_FORMAT, "status %s (%s)", hs_strerror(st), hs_last_error());
  cr_expect_str_eq(hs_last_error(), want);
}

/* int64 column ids (scipy's once nnz >= 2^31) are checked at open piece by
 * piece, without a copy: every rule with the messages of the int32 ids
 * (file, element, byte, row, the values), a row's order across the ends of
 * the pieces (1 MiB and 8 MiB of ids: elements 2^17 and 2^20, both inside
 * rows of 50), values beyond int32 named in full, and a range error after
 * an order error still reported first (the range is checked over the whole
 * file before the order, as before). The ids come narrowed to int32 on the
 * first in-memory use, equal to the file's. */
Test(sparse, int64_column_ids_are_checked_piece_by_piece, .timeout = 120) {
  enum { N = 70000, PER = 50, F = 1000 };
  int64_t *ptr = malloc(sizeof *ptr * (N + 1));
  int64_t *zeros = calloc(N + 1, sizeof *zeros);
  cr_assert(ptr && zeros);
  for (int64_t v = 0; v <= N; v++) ptr[v] = v * PER;
  const int64_t nnz = ptr[N];
  int64_t *col = malloc(sizeof *col * (size_t)nnz);
  int32_t *col32 = malloc(sizeof *col32 * (size_t)nnz);
  cr_assert(col && col32);
  for (int64_t k = 0; k < nnz; k++) col[k] = col32[k] = (int32_t)((k % PER) * 20 + (k / PER) % 20);
  char *dir = tu_mkdtemp();
  int64_t shape[2] = {N, F};
  put(dir, "indptr.npy", HS_DTYPE_INT64, 1, N + 1, 0, zeros);
  put(dir, "indices.npy", HS_DTYPE_INT32, 1, 0, 0, zeros);
  put(dir, "feat_shape.npy", HS_DTYPE_INT64, 1, 2, 0, shape);
  put(dir, "feat_indptr.npy", HS_DTYPE_INT64, 1, N + 1, 0, ptr);
  put(dir, "feat_indices.npy", HS_DTYPE_INT64, 1, (uint64_t)nnz, 0, col);
  char *path = tu_path(dir, "feat_indices.npy");
  hs__npy_header h;
  int fd = -1;
  cr_assert_eq(hs__npy_open(path, &h, &fd), HS_OK, "%s", hs_last_error());
  close(fd);
  const size_t off = h.data_offset;

  hs_dataset *ds;
  cr_assert_eq(hs_dataset_open(dir, &ds), HS_OK, "%s", hs_last_error());
  const hs_graph *g = hs__dataset_graph(ds);
  cr_expect_eq(g->feat_nnz, nnz);
  cr_expect_eq(g->feat_row_nnz_max, PER);
  const int32_t *got = NULL, *again = NULL;
  cr_assert_eq(hs__dataset_sparse_cols(ds, &got), HS_OK, "%s", hs_last_error());
  cr_assert_not_null(got);
  cr_expect_eq(memcmp(got, col32, sizeof *col32 * (size_t)nnz), 0);
  cr_assert_eq(hs__dataset_sparse_cols(ds, &again), HS_OK, "%s", hs_last_error());
  cr_expect_eq(again, got, "narrowed once, then kept");
  hs_dataset_close(ds);
  /* convert reads them narrowed: the copy holds the same ids, as int32 */
  char *copy = tu_path(dir, "copy");
  hs_convert_opts o;
  hs_convert_opts_init(&o, HS_IMPORT_NATIVE);
  o.feat_format = HS_FEAT_FORMAT_SPARSE;
  cr_assert_eq(hs_convert(dir, copy, &o, NULL), HS_OK, "%s", hs_last_error());
  cr_assert_eq(hs_dataset_open(copy, &ds), HS_OK, "%s", hs_last_error());
  g = hs__dataset_graph(ds);
  cr_assert_not_null(g->feat_col, "int32 ids written");
  cr_expect_eq(memcmp(g->feat_col, col32, sizeof *col32 * (size_t)nnz), 0);
  hs_dataset_close(ds);
  tu_rmtree(copy); /* frees the path */

  char want[1024];
  const int64_t ends[2] = {(int64_t)1 << 17, (int64_t)1 << 20};
  for (int i = 0; i < 2; i++) {
    const int64_t k = ends[i];
    cr_assert_neq(k % PER, 0, "element %lld must lie inside a row", (long long)k);
    const int64_t keep = col[k];
    col[k] = col[k - 1];
    put(dir, "feat_indices.npy", HS_DTYPE_INT64, 1, (uint64_t)nnz, 0, col);
    snprintf(want, sizeof want,
             "%s: element %lld (byte %zu): row %lld: column %lld repeats column %lld: a row's "
             "column ids must be strictly increasing (scipy: X.sum_duplicates(); "
             "X.sort_indices())",
             path, (long long)k, off + (size_t)k * 8, (long long)(k / PER), (long long)col[k],
             (long long)col[k - 1]);
    expect_open_message(dir, want);
    col[k] = col[k - 1] - 1;
    put(dir, "feat_indices.npy", HS_DTYPE_INT64, 1, (uint64_t)nnz, 0, col);
    snprintf(want, sizeof want,
             "%s: element %lld (byte %zu): row %lld: column %lld comes after column %lld: a "
             "row's column ids must be strictly increasing (scipy: X.sum_duplicates(); "
             "X.sort_indices())",
             path, (long long)k, off + (size_t)k * 8, (long long)(k / PER), (long long)col[k],
             (long long)col[k - 1]);
    expect_open_message(dir, want);
    col[k] = keep;
  }
  /* out of range, in the last piece and beyond int32; then negative */
  const int64_t last = nnz - 1;
  const int64_t bad[3] = {F, (int64_t)1 << 33, -1};
  for (int i = 0; i < 3; i++) {
    col[last] = bad[i];
    put(dir, "feat_indices.npy", HS_DTYPE_INT64, 1, (uint64_t)nnz, 0, col);
    snprintf(want, sizeof want,
             "%s: element %lld (byte %zu): column id (F from feat_shape.npy): %lld is outside "
             "[0, %d]",
             path, (long long)last, off + (size_t)last * 8, (long long)bad[i], F - 1);
    expect_open_message(dir, want);
  }
  /* an order error early, a range error late: the range error is named */
  col[11] = col[10];
  put(dir, "feat_indices.npy", HS_DTYPE_INT64, 1, (uint64_t)nnz, 0, col);
  expect_open_message(dir, want);
  col[last] = col32[last];
  put(dir, "feat_indices.npy", HS_DTYPE_INT64, 1, (uint64_t)nnz, 0, col);
  TU_EXPECT_FAIL(open_dir(dir), HS_ERR_FORMAT, "feat_indices.npy", "element 11 ", "repeats");
  col[11] = col32[11];
  put(dir, "feat_indices.npy", HS_DTYPE_INT64, 1, (uint64_t)nnz, 0, col);
  cr_assert_eq(open_dir(dir), HS_OK, "%s", hs_last_error());

  /* Rewritten after the open with an id out of range: the narrowing on
   * first use refuses it, naming the file and the element. */
  cr_assert_eq(hs_dataset_open(dir, &ds), HS_OK, "%s", hs_last_error());
  col[last] = F;
  put(dir, "feat_indices.npy", HS_DTYPE_INT64, 1, (uint64_t)nnz, 0, col);
  got = NULL;
  char at[32];
  snprintf(at, sizeof at, "element %lld ", (long long)last);
  TU_EXPECT_FAIL(hs__dataset_sparse_cols(ds, &got), HS_ERR_FORMAT, "feat_indices.npy", at,
                 "column id");
  cr_expect_null(got);
  hs_dataset_close(ds);
  free(path);
  free(ptr);
  free(zeros);
  free(col);
  free(col32);
  tu_rmtree(dir);
}

/* Convert `src` (native) into `dst` with features in form `fmt`. */
static void rewrite(const char *src, const char *dst, hs_feat_format fmt) {
  hs_convert_opts o;
  hs_convert_opts_init(&o, HS_IMPORT_NATIVE);
  o.feat_format = fmt;
  hs_dataset_info info;
  hs_dataset_info_init(&info);
  cr_assert_eq(hs_convert(src, dst, &o, &info), HS_OK, "%s", hs_last_error());
}

static void expect_same_file(const char *a, const char *b, const char *name) {
  char *pa = tu_path(a, name), *pb = tu_path(b, name);
  FILE *fa = fopen(pa, "rb"), *fb = fopen(pb, "rb");
  cr_assert(fa && fb, "%s or %s missing", pa, pb);
  int x, y;
  do {
    x = fgetc(fa);
    y = fgetc(fb);
  } while (x == y && x != EOF);
  cr_expect_eq(x, y, "%s differs from %s", pa, pb);
  fclose(fa), fclose(fb);
  free(pa), free(pb);
}

Test(sparse, convert_turns_one_form_into_the_other_with_the_same_values) {
  for (int half = 0; half < 2; half++) {
    char *root = tu_mkdtemp();
    char *dense = topology_only(), *sp = tu_path(root, "sp"), *back = tu_path(root, "back");
    if (half) {
      /* r_feat in binary16 (each value exact). */
      static const uint16_t h[20] = {0, 0x3e00, 0, 0xc000, 0, 0, 0, 0,
                                     0x4200, 0, 0, 0x3400, 0, 0, 0x4700, 0,
                                     0x3c00, 0x3c00, 0x3c00, 0x3c00};
      put(dense, "feat.npy", HS_DTYPE_FLOAT16, 2, 5, 4, h);
    } else {
      put(dense, "feat.npy", HS_DTYPE_FLOAT32, 2, 5, 4, r_feat);
    }
    rewrite(dense, sp, HS_FEAT_FORMAT_SPARSE);
    hs_dataset *ds;
    cr_assert_eq(hs_dataset_open(sp, &ds), HS_OK, "%s", hs_last_error());
    const hs_graph *g = hs__dataset_graph(ds);
    cr_expect(g->feat_sparse);
    cr_expect_eq(g->feat_dtype, half ? HS_DTYPE_FLOAT16 : HS_DTYPE_FLOAT32);
    cr_expect_eq(memcmp(g->feat_ptr, s_ptr, sizeof s_ptr), 0);
    cr_expect_eq(memcmp(g->feat_col, s_col, sizeof s_col), 0);
    if (!half) cr_expect_eq(memcmp(g->feat_val, s_val, sizeof s_val), 0);
    hs_dataset_close(ds);
    rewrite(sp, back, HS_FEAT_FORMAT_DENSE);
    expect_same_file(dense, back, "feat.npy");
    expect_same_file(dense, back, "indptr.npy");
    expect_same_file(dense, back, "label.npy");
    /* AUTO at 45% density stays dense. */
    char *autod = tu_path(root, "auto");
    rewrite(sp, autod, HS_FEAT_FORMAT_AUTO);
    cr_expect(tu_exists(autod, "feat.npy") && !tu_exists(autod, "feat_indptr.npy"));
    free(autod);
    tu_rmtree(dense);
    free(sp), free(back);
    tu_rmtree(root);
  }
}

Test(sparse, auto_writes_bag_of_words_sparse_and_binary) {
  /* 40 x 50 0/1 features, 2 per row: 4% dense. */
  char *dense = topology_only(), *root = tu_mkdtemp(), *out = tu_path(root, "o");
  static float f[5][50];
  memset(f, 0, sizeof f);
  for (int v = 0; v < 5; v++) f[v][v] = f[v][49 - v] = 1.0f;
  put(dense, "feat.npy", HS_DTYPE_FLOAT32, 2, 5, 50, f);
  rewrite(dense, out, HS_FEAT_FORMAT_AUTO);
  cr_expect(tu_exists(out, "feat_indptr.npy") && !tu_exists(out, "feat_values.npy") &&
            !tu_exists(out, "feat.npy"));
  hs_dataset *ds;
  cr_assert_eq(hs_dataset_open(out, &ds), HS_OK, "%s", hs_last_error());
  hs_dataset_stats st;
  hs_dataset_stats_init(&st);
  cr_assert_eq(hs_dataset_stats_compute(ds, &st), HS_OK);
  cr_expect_eq(st.feature_nnz, 10);
  hs_dataset_info info;
  hs_dataset_info_init(&info);
  cr_assert_eq(hs_dataset_get_info(ds, &info), HS_OK);
  cr_expect(info.feature_binary);
  hs_dataset_close(ds);
  /* The dense original counts the same. */
  cr_assert_eq(hs_dataset_open(dense, &ds), HS_OK, "%s", hs_last_error());
  cr_assert_eq(hs_dataset_stats_compute(ds, &st), HS_OK);
  cr_expect_eq(st.feature_nnz, 10);
  cr_expect_float_eq(st.feature_density, 10.0 / 250.0, 1e-12);
  cr_assert_eq(hs_dataset_get_info(ds, &info), HS_OK);
  cr_expect_eq(info.feature_format, HS_FEAT_FORMAT_DENSE);
  hs_dataset_close(ds);
  tu_rmtree(dense);
  free(out);
  tu_rmtree(root);
}

Test(sparse, format_names_parse) {
  hs_feat_format f;
  cr_expect_eq(hs_feat_format_parse("sparse", &f), HS_OK);
  cr_expect_eq(f, HS_FEAT_FORMAT_SPARSE);
  cr_expect_eq(hs_feat_format_parse("dense", &f), HS_OK);
  cr_expect_eq(f, HS_FEAT_FORMAT_DENSE);
  cr_expect_eq(hs_feat_format_parse("csr", &f), HS_ERR_INVALID_ARG);
  cr_expect_str_eq(hs_feat_format_name(HS_FEAT_FORMAT_AUTO), "auto");
}

/* ---- the sparse gather ----------------------------------------------------- */

/* A random CSR table of n rows x f columns, about `per_row` entries each. */
typedef struct sp_table {
  int64_t n, f, *ptr;
  int32_t *col;
  float *val;
} sp_table;

static void table_make(sp_table *t, int64_t n, int64_t f, int per_row, uint64_t seed) {
  t->n = n;
  t->f = f;
  t->ptr = malloc(sizeof(int64_t) * ((size_t)n + 1));
  t->col = malloc(sizeof(int32_t) * ((size_t)n * (size_t)per_row * 2 + 1));
  t->val = malloc(sizeof(float) * ((size_t)n * (size_t)per_row * 2 + 1));
  uint64_t s = seed;
  t->ptr[0] = 0;
  for (int64_t v = 0; v < n; v++) {
    int64_t k = t->ptr[v];
    int len = (int)(fx_next(&s) % (uint64_t)(2 * per_row + 1));
    if (v % 9 == 4) len = 0;
    int32_t c = -1;
    for (int j = 0; j < len && c < f - 1; j++) {
      c += 1 + (int32_t)(fx_next(&s) % (uint64_t)((f - 1 - c) < 7 ? (f - 1 - c) : 7));
      t->col[k] = c;
      t->val[k] = fx_uniform(&s);
      k++;
    }
    t->ptr[v + 1] = k;
  }
}

static void table_free(sp_table *t) {
  free(t->ptr);
  free(t->col);
  free(t->val);
}

Test(sparse, gather_copies_the_rows_asked_for) {
  sp_table t;
  table_make(&t, 300, 40, 5, 11);
  int32_t ids[97];
  uint64_t s = 5;
  for (int i = 0; i < 97; i++) ids[i] = (int32_t)(fx_next(&s) % 300);
  uint16_t *half = malloc(sizeof(uint16_t) * (size_t)t.ptr[t.n] + 2);
  for (int64_t k = 0; k < t.ptr[t.n]; k++) half[k] = (uint16_t)(0x3800 + (k % 512)); /* 0.5 .. */
  for (int threads = 1; threads <= 3; threads += 2)
    for (int kind = 0; kind < 3; kind++) { /* float32, float16, binary */
      hs_gather_pool *p;
      cr_assert_eq(hs__gather_pool_create(threads, &p), HS_OK);
      int32_t out_ptr[98], out_col[1000];
      float out_val[1000];
      hs_gather_sparse_req r = {.ptr = t.ptr, .col = t.col,
                                .val = kind == 0 ? (const void *)t.val : kind == 1 ? (const void *)half : NULL,
                                .val_half = kind == 1, .n_rows = t.n, .ids = ids, .n = 97,
                                .out_ptr = out_ptr, .out_col = out_col, .out_val = out_val,
                                .cap = 1000};
      cr_assert_eq(hs__gather_sparse(p, &r), HS_OK, "%s", hs_last_error());
      cr_expect_eq(out_ptr[0], 0);
      for (int i = 0; i < 97; i++) {
        int64_t b = t.ptr[ids[i]], len = t.ptr[ids[i] + 1] - b;
        cr_assert_eq(out_ptr[i + 1] - out_ptr[i], len, "row %d", i);
        for (int64_t k = 0; k < len; k++) {
          cr_expect_eq(out_col[out_ptr[i] + k], t.col[b + k]);
          if (kind == 0) cr_expect_eq(out_val[out_ptr[i] + k], t.val[b + k]);
          if (kind == 1)
            cr_expect_eq(out_val[out_ptr[i] + k], hs__half_to_float(half[b + k]));
        }
      }
      /* Too small an output, or an id out of range: HS_ERR_RANGE. */
      r.cap = out_ptr[97] - 1;
      cr_expect_eq(hs__gather_sparse(p, &r), HS_ERR_RANGE);
      r.cap = 1000;
      int32_t bad[2] = {0, 300};
      r.ids = bad;
      r.n = 2;
      cr_expect_eq(hs__gather_sparse(p, &r), HS_ERR_RANGE);
      hs__gather_pool_destroy(p);
    }
  free(half);
  table_free(&t);
}

/* ---- the sparse first layer's references ------------------------------------ */

/* Sparse rows for a batch's n_src rows of width d, about 1 in `every`
 * entries non-zero (values, or all 1 when `binary`); every 5th row empty. */
typedef struct sp_rows {
  hs_nn_sparse x;
  int32_t *ptr, *col;
  float *val;
} sp_rows;

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

/* Mean cross-entropy in double with dense inputs `feat` (written apart
 * from the references): for the finite differences. */
static double loss_d(const hs_model_shape *sh, const double *prm, const hs_nn_batch *b,
                     const float *feat) {
  int L = sh->n_layers;
  int32_t n0 = b->blocks[0].n_src, d0 = sh->dims[0];
  double *in = malloc(sizeof(double) * (size_t)n0 * (size_t)d0);
  for (size_t e = 0; e < (size_t)n0 * (size_t)d0; e++) in[e] = feat[e];
  for (int l = 0; l < L; l++) {
    const hs_nn_block *blk = &b->blocks[l];
    int32_t di = sh->dims[l], dout = sh->dims[l + 1];
    const double *W = prm + sh->w_off[l], *bias = prm + sh->b_off[l];
    double *out = malloc(sizeof(double) * (size_t)blk->n_dst * (size_t)dout);
    for (int32_t i = 0; i < blk->n_dst; i++) {
      int32_t deg = blk->row_ptr[i + 1] - blk->row_ptr[i];
      for (int32_t k = 0; k < dout; k++) {
        double z = bias[k];
        for (int32_t j = 0; j < di; j++) {
          double mean = 0.0;
          for (int32_t e = blk->row_ptr[i]; e < blk->row_ptr[i + 1]; e++)
            mean += in[(size_t)blk->col[e] * di + j];
          if (deg) mean /= deg;
          z += in[(size_t)i * di + j] * W[(size_t)j * dout + k] +
               mean * W[(size_t)(di + j) * dout + k];
        }
        out[(size_t)i * dout + k] = l < L - 1 && z < 0 ? 0.0 : z;
      }
    }
    free(in);
    in = out;
  }
  int32_t n = b->blocks[L - 1].n_dst, c = sh->dims[L];
  double loss = 0.0;
  for (int32_t i = 0; i < n; i++) {
    double mx = in[(size_t)i * c];
    for (int32_t k = 1; k < c; k++) mx = fmax(mx, in[(size_t)i * c + k]);
    double s = 0.0;
    for (int32_t k = 0; k < c; k++) s += exp(in[(size_t)i * c + k] - mx);
    loss += log(s) + mx - in[(size_t)i * c + b->labels[i]];
  }
  free(in);
  return loss / n;
}

static void small_model(hs_model *m, int n_layers, int in_dim, uint64_t seed) {
  hs_model_cfg cfg;
  hs__model_cfg_defaults(&cfg);
  cfg.n_layers = n_layers;
  cfg.in_dim = in_dim;
  cfg.hidden = 6;
  cfg.n_classes = 3;
  cfg.dropout = 0.0f;
  cfg.seed = seed;
  cr_assert_eq(hs__model_create(&cfg, m), HS_OK, "%s", hs_last_error());
  uint64_t s = seed;
  for (int l = 0; l < n_layers; l++)
    fx_fill(m->params + m->shape.b_off[l], (size_t)m->shape.dims[l + 1], &s, 0.2f);
}

static void gradcheck(int n_layers, bool binary, hs_sparse_order order, uint64_t seed) {
  int fan[3] = {3, 2, 2};
  const int d = 9;
  hs_model m;
  small_model(&m, n_layers, d, seed);
  fx_batch fb;
  fx_batch_make(&fb, n_layers, 5, fan, d, 3, seed + 1);
  sp_rows r;
  rows_make(&r, fb.blocks[0].n_src, d, 3, binary, seed + 2);
  r.x.order = order;
  float *dense = malloc(sizeof(float) * (size_t)fb.blocks[0].n_src * d);
  hs__sparse_densify(&r.x, d, dense);
  hs_nn_batch b = {.n_layers = n_layers, .blocks = fb.blocks, .sfeat = &r.x, .labels = fb.labels};
  size_t n = m.shape.n_params;
  float *g = malloc(sizeof(float) * n), *gd = malloc(sizeof(float) * n);
  double *pd = malloc(sizeof(double) * n);
  hs_step_stats st;
  cr_assert_eq(hs__ref_gradients(&m, &b, 0, 0, false, g, &st), HS_OK, "%s", hs_last_error());
  for (size_t j = 0; j < n; j++) pd[j] = m.params[j];
  double f0 = loss_d(&m.shape, pd, &b, dense);
  cr_expect(fabs(st.loss - f0) < 1e-5 * fmax(1.0, f0), "loss %g vs double %g", (double)st.loss, f0);
  double biggest = 0;
  for (size_t j = 0; j < n; j++) {
    const double h = 1e-6;
    pd[j] = m.params[j] + h;
    double fp = loss_d(&m.shape, pd, &b, dense);
    pd[j] = m.params[j] - h;
    double fm = loss_d(&m.shape, pd, &b, dense);
    pd[j] = m.params[j];
    double fd = (fp - fm) / (2 * h);
    biggest = fmax(biggest, fabs(fd));
    cr_expect(fabs((double)g[j] - fd) <= 2e-6 + 1e-3 * fabs(fd),
              "param %zu: analytic %.9g, finite difference %.9g", j, (double)g[j], fd);
  }
  cr_expect_gt(biggest, 1e-3);
  /* The dense layer on the same rows: equal up to reassociation. */
  hs_nn_batch bd = {.n_layers = n_layers, .blocks = fb.blocks, .feat = dense, .labels = fb.labels};
  cr_assert_eq(hs__ref_gradients(&m, &bd, 0, 0, false, gd, NULL), HS_OK, "%s", hs_last_error());
  float mx = 0;
  for (size_t j = 0; j < n; j++) mx = fmaxf(mx, fabsf(gd[j]));
  for (size_t j = 0; j < n; j++)
    cr_expect(fabsf(g[j] - gd[j]) <= 1e-5f * mx, "param %zu: sparse %.9g dense %.9g", j,
              (double)g[j], (double)gd[j]);
  free(g), free(gd), free(pd), free(dense);
  rows_free(&r);
  fx_batch_free(&fb);
  hs__model_destroy(&m);
}

Test(sparse, first_layer_gradients_match_finite_differences) {
  for (int order = HS_SPARSE_MULTIPLY_FIRST; order <= HS_SPARSE_AGGREGATE_FIRST; order++) {
    gradcheck(1, false, (hs_sparse_order)order, 31);
    gradcheck(2, false, (hs_sparse_order)order, 32);
    gradcheck(2, true, (hs_sparse_order)order, 33);
    gradcheck(3, true, (hs_sparse_order)order, 34);
  }
}

Test(sparse, the_cheaper_order_is_chosen) {
  /* Many src shared by many edges (a small graph): multiply first. */
  cr_expect_eq(hs__sparse_first_choose(2000, 2700, 20000, 2700 * 18), HS_SPARSE_MULTIPLY_FIRST);
  /* Every edge a new src, under one non-zero per row: aggregate first. */
  cr_expect_eq(hs__sparse_first_choose(1000, 11000, 10000, 5000), HS_SPARSE_AGGREGATE_FIRST);
  /* Every edge a new src: the pairs are fewer than every src's products. */
  cr_expect_eq(hs__sparse_first_choose(1000, 11000, 10000, 11000 * 30), HS_SPARSE_AGGREGATE_FIRST);
  /* Src shared by three edges each: multiply first. */
  cr_expect_eq(hs__sparse_first_choose(1000, 3000, 10000, 3000 * 30), HS_SPARSE_MULTIPLY_FIRST);
  cr_expect_eq(hs__sparse_first_choose(0, 0, 0, 0), HS_SPARSE_MULTIPLY_FIRST);
}

Test(sparse, batch_rows_are_validated) {
  int32_t ptr[3] = {0, 2, 3}, col[3] = {1, 1, 0};
  hs_nn_sparse x = {.n_rows = 2, .ptr = ptr, .col = col};
  cr_expect_eq(hs__nn_sparse_validate(&x, 2, 4), HS_ERR_FORMAT); /* repeat in row 0 */
  col[1] = 3;
  cr_expect_eq(hs__nn_sparse_validate(&x, 2, 4), HS_OK, "%s", hs_last_error());
  cr_expect_eq(hs__nn_sparse_validate(&x, 2, 3), HS_ERR_FORMAT); /* column 3 of 3 */
  cr_expect_eq(hs__nn_sparse_validate(&x, 3, 4), HS_ERR_FORMAT); /* row count */
  float val[3] = {1, INFINITY, 2};
  x.val = val;
  cr_expect_eq(hs__nn_sparse_validate(&x, 2, 4), HS_ERR_FORMAT);
}

Test(sparse, column_lists_list_each_columns_rows_in_order) {
  sp_rows r;
  rows_make(&r, 40, 11, 3, false, 3);
  int32_t nnz = hs__nn_sparse_nnz(&r.x), tp[12], tm[11], cur[11];
  int32_t *tr = malloc(4 * (size_t)nnz + 4);
  float *tv = malloc(4 * (size_t)nnz + 4);
  hs__nn_sparse_columns(&r.x, 17, 11, tp, tm, tr, tv, cur);
  cr_expect_eq(hs__nn_sparse_validate(&r.x, 40, 11), HS_OK, "%s", hs_last_error());
  cr_expect_eq(tp[11], nnz);
  int32_t seen = 0;
  for (int32_t c = 0; c < 11; c++)
    for (int32_t p = tp[c]; p < tp[c + 1]; p++) {
      int32_t row = tr[p], e = r.ptr[row];
      while (e < r.ptr[row + 1] && r.col[e] != c) e++;
      cr_assert_lt(e, r.ptr[row + 1], "column %d lists row %d, which lacks it", c, row);
      cr_expect_eq(tv[p], r.val[e]);
      cr_expect_eq(p < tm[c], row < 17, "column %d entry %d (row %d) on the wrong side", c, p, row);
      seen++;
    }
  cr_expect_eq(seen, nnz);
  /* Malformed lists are refused. */
  tr[0] = 40;
  cr_expect_eq(hs__nn_sparse_validate(&r.x, 40, 11), HS_ERR_FORMAT);
  free(tr), free(tv);
  rows_free(&r);
}

/* ---- importers and the generator --------------------------------------------- */

static char *fixture(const char *rel) { return tu_path(tu_data_dir(), rel); }

/* Import fixture `rel` in `fmt`, then check the features read back equal
 * those of a dense import, value for value. */
static void import_both_ways(hs_import_format from, const char *rel, bool expect_binary) {
  char *root = tu_mkdtemp(), *src = fixture(rel);
  char *dd = tu_path(root, "dense"), *sd = tu_path(root, "sparse");
  hs_convert_opts o;
  hs_convert_opts_init(&o, from);
  o.make_split = false;
  o.feat_format = HS_FEAT_FORMAT_DENSE;
  hs_dataset_info di, si;
  hs_dataset_info_init(&di);
  hs_dataset_info_init(&si);
  cr_assert_eq(hs_convert(src, dd, &o, &di), HS_OK, "%s", hs_last_error());
  o.feat_format = HS_FEAT_FORMAT_SPARSE;
  cr_assert_eq(hs_convert(src, sd, &o, &si), HS_OK, "%s", hs_last_error());
  cr_expect_eq(di.feature_format, HS_FEAT_FORMAT_DENSE);
  cr_expect_eq(si.feature_format, HS_FEAT_FORMAT_SPARSE);
  cr_expect_eq(si.feature_binary, expect_binary, "%s", rel);
  cr_expect_eq(si.num_features, di.num_features);
  hs_dataset *a, *b;
  cr_assert_eq(hs_dataset_open(dd, &a), HS_OK, "%s", hs_last_error());
  cr_assert_eq(hs_dataset_open(sd, &b), HS_OK, "%s", hs_last_error());
  const hs_graph *ga = hs__dataset_graph(a), *gb = hs__dataset_graph(b);
  int64_t f = ga->f, nnz = 0;
  for (int64_t v = 0; v < ga->n; v++) {
    const float *row = (const float *)ga->feat + v * f;
    int64_t k = gb->feat_ptr[v];
    for (int64_t j = 0; j < f; j++) {
      if (row[j] == 0.0f) continue;
      nnz++;
      cr_assert_lt(k, gb->feat_ptr[v + 1], "%s: row %lld lacks column %lld", rel, (long long)v,
                   (long long)j);
      cr_expect_eq(gb->feat_col[k], j);
      float x = gb->feat_val ? ((const float *)gb->feat_val)[k] : 1.0f;
      cr_expect_eq(x, row[j], "%s: row %lld column %lld", rel, (long long)v, (long long)j);
      k++;
    }
    cr_expect_eq(k, gb->feat_ptr[v + 1]);
  }
  cr_expect_eq(nnz, gb->feat_nnz);
  hs_dataset_close(a), hs_dataset_close(b);
  free(src), free(dd), free(sd);
  tu_rmtree(root);
}

Test(sparse, importers_write_either_form_with_the_same_features) {
  import_both_ways(HS_IMPORT_LINQS, "linqs_tiny", false); /* one value is 0.5 */
  import_both_ways(HS_IMPORT_MUSAE, "musae_tiny", true);
  import_both_ways(HS_IMPORT_OGB, "ogb_tiny", false);
}

Test(sparse, generated_words_are_sparse_binary_and_class_topical) {
  char *root = tu_mkdtemp(), *a = tu_path(root, "a"), *b = tu_path(root, "b");
  hs_generate_opts o;
  hs_generate_opts_init(&o, HS_GENERATE_SBM);
  o.num_vertices = 600;
  o.num_edges = 1200;
  o.num_classes = 3;
  o.num_features = 300;
  o.features = HS_GENERATE_WORDS;
  o.words = 12;
  o.topic = 0.5;
  hs_generate_summary s;
  hs_generate_summary_init(&s);
  hs_dataset_info info;
  hs_dataset_info_init(&info);
  cr_assert_eq(hs_generate(a, &o, &info, &s), HS_OK, "%s", hs_last_error());
  cr_expect_eq(info.feature_format, HS_FEAT_FORMAT_SPARSE);
  cr_expect(info.feature_binary);
  cr_expect(isnan(s.bayes_accuracy));
  /* Rows hold words/2 .. 3 words/2 draws (repeats merged). */
  double per_row = (double)info.feature_nnz / 600.0;
  cr_expect(per_row > 9 && per_row <= 12.5, "%g words per row", per_row);
  hs_dataset *ds;
  cr_assert_eq(hs_dataset_open(a, &ds), HS_OK, "%s", hs_last_error());
  const hs_graph *g = hs__dataset_graph(ds);
  /* About topic + (1 - topic) / K of a row's words are in its class's block. */
  int64_t own = 0;
  for (int64_t v = 0; v < g->n; v++)
    for (int64_t k = g->feat_ptr[v]; k < g->feat_ptr[v + 1]; k++)
      own += g->feat_col[k] / 100 == g->labels[v];
  double share = (double)own / (double)g->feat_nnz;
  cr_expect(share > 0.6 && share < 0.73, "own-block share %g (expected about 0.67)", share);
  hs_dataset_close(ds);
  /* Same options, same bytes. */
  cr_assert_eq(hs_generate(b, &o, NULL, NULL), HS_OK, "%s", hs_last_error());
  expect_same_file(a, b, "feat_indices.npy");
  expect_same_file(a, b, "feat_indptr.npy");
  o.topic = 2;
  char *c = tu_path(root, "c");
  cr_expect_eq(hs_generate(c, &o, NULL, NULL), HS_ERR_INVALID_ARG);
  free(a), free(b), free(c);
  tu_rmtree(root);
}
