/* Native dataset: open + validate, one test per validation rule, the
 * in-memory view, footprints, feature mapping, and the writer's contract. */
#include <fcntl.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

#include "data/hs_dsw.h"
#include "data/hs_graph.h"
#include "data/hs_npy.h"
#include "hs_test_util.h"

/* 5 vertices: 0->{1,2} 1->{0} 2->{3,4} 3->{} 4->{0}. */
static const int64_t g_indptr[6] = {0, 2, 3, 5, 5, 6};
static const int32_t g_indices[6] = {1, 2, 0, 3, 4, 0};
static const int32_t g_labels[5] = {0, 1, 1, -1, 2};

static void put(const char *dir, const char *name, hs_dtype t, int ndim, uint64_t d0,
                uint64_t d1, const void *data) {
  char *p = tu_path(dir, name);
  unlink(p);
  uint64_t shape[2] = {d0, d1};
  cr_assert_eq(hs__npy_write(p, t, ndim, shape, data), HS_OK, "%s", hs_last_error());
  free(p);
}

static void put_i32(const char *dir, const char *name, const int32_t *v, uint64_t n) {
  put(dir, name, HS_DTYPE_INT32, 1, n, 0, v);
}

static void put_i64(const char *dir, const char *name, const int64_t *v, uint64_t n) {
  put(dir, name, HS_DTYPE_INT64, 1, n, 0, v);
}

static char *good_dataset(void) {
  char *dir = tu_mkdtemp();
  put_i64(dir, "indptr.npy", g_indptr, 6);
  put_i32(dir, "indices.npy", g_indices, 6);
  float feat[15];
  for (int i = 0; i < 15; i++) feat[i] = (float)i * 0.5f;
  put(dir, "feat.npy", HS_DTYPE_FLOAT32, 2, 5, 3, feat);
  put_i32(dir, "label.npy", g_labels, 5);
  int32_t tr[2] = {0, 1}, va[1] = {2}, te[1] = {4};
  put_i32(dir, "train_idx.npy", tr, 2);
  put_i32(dir, "valid_idx.npy", va, 1);
  put_i32(dir, "test_idx.npy", te, 1);
  return dir;
}

static hs_status open_dir(const char *dir) {
  hs_dataset *ds = NULL;
  hs_status st = hs_dataset_open(dir, &ds);
  if (st == HS_OK) cr_expect_not_null(ds);
  else cr_expect_null(ds);
  hs_dataset_close(ds);
  return st;
}

Test(dataset, opens_good_dataset_and_exposes_view) {
  char *dir = good_dataset();
  hs_dataset *ds;
  cr_assert_eq(hs_dataset_open(dir, &ds), HS_OK, "%s", hs_last_error());
  const hs_graph *g = hs__dataset_graph(ds);
  cr_expect_eq(g->n, 5);
  cr_expect_eq(g->e, 6);
  cr_expect_eq(g->f, 3);
  cr_expect_eq(g->num_classes, 3);
  cr_expect_eq(memcmp(g->indptr, g_indptr, sizeof g_indptr), 0);
  cr_expect_eq(memcmp(g->indices, g_indices, sizeof g_indices), 0);
  cr_expect_eq(memcmp(g->labels, g_labels, sizeof g_labels), 0);
  cr_expect_null(g->weights);
  cr_expect_eq(g->feat_dtype, HS_DTYPE_FLOAT32);
  cr_expect_eq(g->feat_row_bytes, 12);
  cr_expect_float_eq(((const float *)g->feat)[7], 3.5f, 0.0f);
  cr_expect(g->split_n[0] == 2 && g->split_n[1] == 1 && g->split_n[2] == 1);
  cr_expect_eq(g->split[2][0], 4);
  hs_dataset_info info;
  hs_dataset_info_init(&info);
  hs_dataset_get_info(ds, &info);
  cr_expect_eq(info.num_labelled, 4);
  cr_expect_eq(info.topology_bytes, 6 * 8 + 6 * 4);
  cr_expect_eq(info.feature_bytes, 5 * 3 * 4);
  cr_expect_eq(info.label_bytes, 20);
  cr_expect(info.has_split[0] && info.has_split[1] && info.has_split[2]);
  hs_dataset_close(ds);
  tu_rmtree(dir);
}

/* The features' copy on huge pages: the same bytes at a 2 MiB-aligned
 * address, made once (a second call returns it without copying), the
 * graph's own view unchanged. Where the kernel gives no huge pages on
 * request (or the advice is refused) there is no copy. */
Test(dataset, features_copy_on_huge_pages_has_the_same_bytes) {
  char *dir = good_dataset();
  hs_dataset *ds;
  cr_assert_eq(hs_dataset_open(dir, &ds), HS_OK, "%s", hs_last_error());
  const hs_graph *g = hs__dataset_graph(ds);
  const float *file = g->feat;
  float want[15];
  memcpy(want, file, sizeof want);
  const void *copy = (const void *)1;
  uint64_t moved = 99;
  cr_assert_eq(hs__dataset_features_huge(ds, &copy, &moved), HS_OK, "%s", hs_last_error());
  cr_expect_eq(g->feat, file, "the graph's view changed");
  if (!copy) {
    cr_expect_eq(moved, 0);
    cr_log_info("no huge pages on request here (THP %s)",
                hs__thp_available() ? "on, advice refused" : "off");
  } else {
    cr_expect(hs__thp_available());
    cr_expect_eq(moved, sizeof want);
    cr_expect_neq(copy, (const void *)file);
    cr_expect_eq((uintptr_t)copy % (2u << 20), 0);
    cr_expect_eq(memcmp(copy, want, sizeof want), 0);
    cr_expect_eq(memcmp(file, want, sizeof want), 0, "the file mapping went away");
    const void *again;
    cr_assert_eq(hs__dataset_features_huge(ds, &again, &moved), HS_OK);
    cr_expect_eq(moved, 0);
    cr_expect_eq(again, copy);
  }
  hs_dataset_close(ds);
  /* A dataset without features: no copy. */
  char *p = tu_path(dir, "feat.npy");
  unlink(p);
  free(p);
  cr_assert_eq(hs_dataset_open(dir, &ds), HS_OK, "%s", hs_last_error());
  cr_expect_eq(hs__dataset_features_huge(ds, &copy, &moved), HS_OK);
  cr_expect_null(copy);
  cr_expect_eq(moved, 0);
  hs_dataset_close(ds);
  tu_rmtree(dir);
}

Test(dataset, int64_ids_and_int32_indptr_are_converted) {
  char *dir = good_dataset();
  int32_t ip32[6];
  for (int i = 0; i < 6; i++) ip32[i] = (int32_t)g_indptr[i];
  put_i32(dir, "indptr.npy", ip32, 6); /* scipy writes int32 offsets */
  int64_t ix64[6];
  for (int i = 0; i < 6; i++) ix64[i] = g_indices[i];
  put_i64(dir, "indices.npy", ix64, 6);
  int64_t lab64[5];
  for (int i = 0; i < 5; i++) lab64[i] = g_labels[i];
  put_i64(dir, "label.npy", lab64, 5);
  int64_t tr[2] = {0, 1};
  put_i64(dir, "train_idx.npy", tr, 2);
  uint16_t half[10] = {0x3c00};
  put(dir, "feat.npy", HS_DTYPE_FLOAT16, 2, 5, 2, half);
  float w[6] = {1, 2, 3, 4, 5, 6};
  put(dir, "weights.npy", HS_DTYPE_FLOAT32, 1, 6, 0, w);
  hs_dataset *ds;
  cr_assert_eq(hs_dataset_open(dir, &ds), HS_OK, "%s", hs_last_error());
  const hs_graph *g = hs__dataset_graph(ds);
  cr_expect_eq(memcmp(g->indptr, g_indptr, sizeof g_indptr), 0);
  cr_expect_eq(memcmp(g->indices, g_indices, sizeof g_indices), 0);
  cr_expect_eq(memcmp(g->labels, g_labels, sizeof g_labels), 0);
  cr_expect_eq(g->split[0][1], 1);
  cr_expect_eq(g->feat_dtype, HS_DTYPE_FLOAT16);
  cr_expect_eq(g->feat_row_bytes, 4);
  cr_expect_float_eq(g->weights[5], 6.0f, 0.0f);
  hs_dataset_info info;
  hs_dataset_info_init(&info);
  hs_dataset_get_info(ds, &info);
  cr_expect_eq(info.topology_bytes, 6 * 8 + 6 * 4 + 6 * 4);
  hs_dataset_close(ds);
  tu_rmtree(dir);
}

Test(dataset, optional_files_may_be_absent) {
  char *dir = tu_mkdtemp();
  put_i64(dir, "indptr.npy", g_indptr, 6);
  put_i32(dir, "indices.npy", g_indices, 6);
  hs_dataset *ds;
  cr_assert_eq(hs_dataset_open(dir, &ds), HS_OK, "%s", hs_last_error());
  hs_dataset_info info;
  hs_dataset_info_init(&info);
  hs_dataset_get_info(ds, &info);
  cr_expect_eq(info.num_features, 0);
  cr_expect_eq(info.num_classes, 0);
  cr_expect_eq(info.feature_dtype, HS_DTYPE_NONE);
  cr_expect_not(info.has_split[0]);
  hs_dataset_close(ds);
  tu_rmtree(dir);
}

/* ---- one test per rule ------------------------------------------------ */

Test(dataset, rule_directory_exists) {
  TU_EXPECT_FAIL(open_dir("/nonexistent/hs-dataset"), HS_ERR_IO, "/nonexistent/hs-dataset",
                 "cannot open", "No such file");
}

Test(dataset, rule_indptr_required) {
  char *dir = good_dataset();
  char *p = tu_path(dir, "indptr.npy");
  unlink(p);
  free(p);
  TU_EXPECT_FAIL(open_dir(dir), HS_ERR_IO, "indptr.npy", "required", "missing");
  tu_rmtree(dir);
}

Test(dataset, rule_indices_required) {
  char *dir = good_dataset();
  char *p = tu_path(dir, "indices.npy");
  unlink(p);
  free(p);
  TU_EXPECT_FAIL(open_dir(dir), HS_ERR_IO, "indices.npy", "required", "missing");
  tu_rmtree(dir);
}

Test(dataset, rule_indptr_nonempty) {
  char *dir = good_dataset();
  put_i64(dir, "indptr.npy", g_indptr, 0);
  TU_EXPECT_FAIL(open_dir(dir), HS_ERR_FORMAT, "indptr.npy", "byte 10", "N+1 >= 1");
  tu_rmtree(dir);
}

Test(dataset, rule_indptr_starts_at_zero) {
  char *dir = good_dataset();
  int64_t ip[6] = {1, 2, 3, 5, 5, 6};
  put_i64(dir, "indptr.npy", ip, 6);
  TU_EXPECT_FAIL(open_dir(dir), HS_ERR_FORMAT, "indptr.npy", "element 0 (byte 128)",
                 "indptr[0] is 1");
  tu_rmtree(dir);
}

Test(dataset, rule_indptr_monotone) {
  char *dir = good_dataset();
  int64_t ip[6] = {0, 2, 3, 1, 5, 6};
  put_i64(dir, "indptr.npy", ip, 6);
  TU_EXPECT_FAIL(open_dir(dir), HS_ERR_FORMAT, "indptr.npy", "element 3 (byte 152)",
                 "decreases: 1 after 3");
  tu_rmtree(dir);
}

Test(dataset, rule_indptr_ends_at_edge_count) {
  char *dir = good_dataset();
  int64_t ip[6] = {0, 2, 3, 5, 5, 7};
  put_i64(dir, "indptr.npy", ip, 6);
  TU_EXPECT_FAIL(open_dir(dir), HS_ERR_FORMAT, "indptr.npy", "element 5 (byte 168)",
                 "indptr[N] is 7 but");
  tu_rmtree(dir);
}

Test(dataset, rule_indptr_dtype) {
  char *dir = good_dataset();
  float f[6] = {0};
  put(dir, "indptr.npy", HS_DTYPE_FLOAT32, 1, 6, 0, f);
  TU_EXPECT_FAIL(open_dir(dir), HS_ERR_FORMAT, "indptr.npy", "byte 10",
                 "'<f4' is not allowed");
  tu_rmtree(dir);
}

Test(dataset, rule_vertex_count_fits_int32) {
  char *dir = good_dataset();
  char *p = tu_path(dir, "indptr.npy");
  unlink(p);
  /* A sparse file: the header promises 2^31 + 1 offsets. */
  char hdr[128];
  uint64_t shape[1] = {(1ull << 31) + 1};
  size_t hl = hs__npy_format_header(hdr, sizeof hdr, HS_DTYPE_INT64, 1, shape);
  int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  cr_assert(fd >= 0);
  cr_assert_eq(write(fd, hdr, hl), (ssize_t)hl);
  cr_assert_eq(ftruncate(fd, (off_t)(hl + shape[0] * 8)), 0);
  close(fd);
  free(p);
  TU_EXPECT_FAIL(open_dir(dir), HS_ERR_UNSUPPORTED, "indptr.npy", "byte 10",
                 "2147483648 vertices");
  tu_rmtree(dir);
}

Test(dataset, rule_indices_in_range_int32) {
  char *dir = good_dataset();
  int32_t ix[6] = {1, 2, 0, 3, 5, 0};
  put_i32(dir, "indices.npy", ix, 6);
  TU_EXPECT_FAIL(open_dir(dir), HS_ERR_FORMAT, "indices.npy", "element 4 (byte 144)",
                 "5 is outside [0, 4]");
  tu_rmtree(dir);
}

Test(dataset, rule_indices_nonnegative_int64) {
  char *dir = good_dataset();
  int64_t ix[6] = {1, 2, -1, 3, 4, 0};
  put_i64(dir, "indices.npy", ix, 6);
  TU_EXPECT_FAIL(open_dir(dir), HS_ERR_FORMAT, "indices.npy", "element 2 (byte 144)",
                 "-1 is outside [0, 4]");
  tu_rmtree(dir);
}

Test(dataset, rule_indices_one_dimensional) {
  char *dir = good_dataset();
  put(dir, "indices.npy", HS_DTYPE_INT32, 2, 3, 2, g_indices);
  TU_EXPECT_FAIL(open_dir(dir), HS_ERR_FORMAT, "indices.npy", "byte 10",
                 "2-dimensional array, expected 1");
  tu_rmtree(dir);
}

Test(dataset, rule_indices_truncated) {
  char *dir = good_dataset();
  char *p = tu_path(dir, "indices.npy");
  cr_assert_eq(truncate(p, 128 + 10), 0);
  free(p);
  TU_EXPECT_FAIL(open_dir(dir), HS_ERR_FORMAT, "indices.npy", "byte 138", "truncated");
  tu_rmtree(dir);
}

Test(dataset, rule_weights_length) {
  char *dir = good_dataset();
  float w[5] = {1, 1, 1, 1, 1};
  put(dir, "weights.npy", HS_DTYPE_FLOAT32, 1, 5, 0, w);
  TU_EXPECT_FAIL(open_dir(dir), HS_ERR_FORMAT, "weights.npy", "byte 10",
                 "shape (5,) disagrees with indices.npy's 6");
  tu_rmtree(dir);
}

Test(dataset, rule_weights_finite) {
  char *dir = good_dataset();
  float w[6] = {1, 1, 1, (float)NAN, 1, 1};
  put(dir, "weights.npy", HS_DTYPE_FLOAT32, 1, 6, 0, w);
  TU_EXPECT_FAIL(open_dir(dir), HS_ERR_FORMAT, "weights.npy", "element 3 (byte 140)",
                 "weight is NaN");
  tu_rmtree(dir);
}

Test(dataset, rule_feat_rows_match_vertices) {
  char *dir = good_dataset();
  float f[12] = {0};
  put(dir, "feat.npy", HS_DTYPE_FLOAT32, 2, 4, 3, f);
  TU_EXPECT_FAIL(open_dir(dir), HS_ERR_FORMAT, "feat.npy", "byte 10",
                 "shape (4, 3): the first dimension must be N = 5");
  tu_rmtree(dir);
}

Test(dataset, rule_feat_dtype) {
  char *dir = good_dataset();
  int32_t f[15] = {0};
  put(dir, "feat.npy", HS_DTYPE_INT32, 2, 5, 3, f);
  TU_EXPECT_FAIL(open_dir(dir), HS_ERR_FORMAT, "feat.npy", "byte 10",
                 "expected float32 or float16");
  tu_rmtree(dir);
}

Test(dataset, rule_feat_c_order) {
  char *dir = good_dataset();
  char src[512];
  snprintf(src, sizeof src, "%s/npy/fortran_f4.npy", tu_data_dir());
  FILE *in = fopen(src, "rb");
  cr_assert(in);
  char buf[512];
  size_t n = fread(buf, 1, sizeof buf, in);
  fclose(in);
  /* Rewrite the fixture's 2x3 shape as 5x... rows: use a 5-vertex graph of it. */
  char *p = tu_path(dir, "feat.npy");
  unlink(p);
  free(p);
  tu_write_bytes(dir, "feat.npy", buf, n);
  int64_t ip[3] = {0, 0, 0};
  put_i64(dir, "indptr.npy", ip, 3);
  put_i32(dir, "indices.npy", g_indices, 0);
  char *q;
  q = tu_path(dir, "label.npy"); unlink(q); free(q);
  q = tu_path(dir, "train_idx.npy"); unlink(q); free(q);
  q = tu_path(dir, "valid_idx.npy"); unlink(q); free(q);
  q = tu_path(dir, "test_idx.npy"); unlink(q); free(q);
  TU_EXPECT_FAIL(open_dir(dir), HS_ERR_FORMAT, "feat.npy", "byte 10", "Fortran-order");
  tu_rmtree(dir);
}

Test(dataset, rule_label_length) {
  char *dir = good_dataset();
  put_i32(dir, "label.npy", g_labels, 4);
  TU_EXPECT_FAIL(open_dir(dir), HS_ERR_FORMAT, "label.npy", "byte 10",
                 "shape (4,) disagrees with N = 5");
  tu_rmtree(dir);
}

Test(dataset, rule_label_not_below_minus_one) {
  char *dir = good_dataset();
  int32_t lab[5] = {0, 1, -2, 1, 0};
  put_i32(dir, "label.npy", lab, 5);
  TU_EXPECT_FAIL(open_dir(dir), HS_ERR_FORMAT, "label.npy", "element 2 (byte 136)",
                 "-2 is outside [-1,");
  tu_rmtree(dir);
}

Test(dataset, rule_split_ids_in_range) {
  char *dir = good_dataset();
  int64_t va[2] = {2, 9};
  put_i64(dir, "valid_idx.npy", va, 2);
  TU_EXPECT_FAIL(open_dir(dir), HS_ERR_FORMAT, "valid_idx.npy", "element 1 (byte 136)",
                 "9 is outside [0, 4]");
  tu_rmtree(dir);
}

Test(dataset, rule_split_no_repeats) {
  char *dir = good_dataset();
  int32_t tr[3] = {0, 1, 0};
  put_i32(dir, "train_idx.npy", tr, 3);
  TU_EXPECT_FAIL(open_dir(dir), HS_ERR_FORMAT, "train_idx.npy", "element 2 (byte 136)",
                 "vertex 0 appears twice (first at element 0)");
  tu_rmtree(dir);
}

Test(dataset, rule_splits_disjoint) {
  char *dir = good_dataset();
  int32_t te[2] = {4, 1};
  put_i32(dir, "test_idx.npy", te, 2);
  TU_EXPECT_FAIL(open_dir(dir), HS_ERR_FORMAT, "test_idx.npy", "element 1 (byte 132)",
                 "vertex 1 is also in");
  cr_expect(strstr(hs_last_error(), "train_idx.npy (element 1)"), "%s", hs_last_error());
  tu_rmtree(dir);
}

Test(dataset, rule_split_vertices_labelled) {
  char *dir = good_dataset();
  int32_t te[2] = {4, 3};
  put_i32(dir, "test_idx.npy", te, 2);
  TU_EXPECT_FAIL(open_dir(dir), HS_ERR_FORMAT, "test_idx.npy", "element 1 (byte 132)",
                 "vertex 3 is unlabelled");
  tu_rmtree(dir);
}

Test(dataset, rule_split_dtype) {
  char *dir = good_dataset();
  float f[1] = {2};
  put(dir, "valid_idx.npy", HS_DTYPE_FLOAT32, 1, 1, 0, f);
  TU_EXPECT_FAIL(open_dir(dir), HS_ERR_FORMAT, "valid_idx.npy", "byte 10",
                 "expected int32 or int64");
  tu_rmtree(dir);
}

Test(dataset, rule_not_an_npy_file) {
  char *dir = good_dataset();
  char *p = tu_path(dir, "label.npy");
  unlink(p);
  free(p);
  tu_write_bytes(dir, "label.npy", "0,1,1,-1,2\n", 11);
  TU_EXPECT_FAIL(open_dir(dir), HS_ERR_FORMAT, "label.npy", "byte 0", "not an npy file");
  tu_rmtree(dir);
}

/* ---- features are mapped, never read --------------------------------- */

Test(dataset, features_larger_than_ram_open) {
  char *dir = good_dataset();
  long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
  uint64_t ram = (uint64_t)pages * (uint64_t)psz;
  /* N = 5 rows of F floats, F chosen so the payload exceeds RAM. */
  uint64_t f = ram / 5 / 4 + 1024;
  char hdr[256];
  uint64_t shape[2] = {5, f};
  size_t hl = hs__npy_format_header(hdr, sizeof hdr, HS_DTYPE_FLOAT32, 2, shape);
  char *p = tu_path(dir, "feat.npy");
  unlink(p);
  int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  cr_assert(fd >= 0);
  cr_assert_eq(write(fd, hdr, hl), (ssize_t)hl);
  if (ftruncate(fd, (off_t)(hl + 5 * f * 4)) != 0) {
    close(fd);
    free(p);
    tu_rmtree(dir);
    cr_skip_test("filesystem refuses a sparse file of %llu bytes",
                 (unsigned long long)(5 * f * 4));
  }
  close(fd);
  free(p);
  hs_dataset *ds;
  cr_assert_eq(hs_dataset_open(dir, &ds), HS_OK, "%s", hs_last_error());
  hs_dataset_info info;
  hs_dataset_info_init(&info);
  hs_dataset_get_info(ds, &info);
  cr_expect_eq(info.num_features, (int64_t)f);
  cr_expect_gt(info.feature_bytes, ram);
  hs_dataset_close(ds);
  tu_rmtree(dir);
}

Test(dataset, open_does_not_touch_feature_pages) {
  char *dir = good_dataset();
  enum { F = 4096, N = 5 };
  float *feat = calloc((size_t)N * F, sizeof *feat);
  put(dir, "feat.npy", HS_DTYPE_FLOAT32, 2, N, F, feat);
  free(feat);
  char *p = tu_path(dir, "feat.npy");
  int fd = open(p, O_RDONLY);
  cr_assert(fd >= 0);
  size_t len = (size_t)lseek(fd, 0, SEEK_END);
  fdatasync(fd);
  posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  long psz = sysconf(_SC_PAGESIZE);
  size_t npages = (len + (size_t)psz - 1) / (size_t)psz;
  unsigned char *vec = calloc(npages, 1);
  void *probe = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, 0);
  cr_assert(probe != MAP_FAILED);
  cr_assert_eq(mincore(probe, len, vec), 0);
  size_t before = 0;
  for (size_t i = 1; i < npages; i++) before += vec[i] & 1;
  if (before) {
    munmap(probe, len);
    close(fd);
    free(vec);
    free(p);
    tu_rmtree(dir);
    cr_skip_test("the page cache kept the feature pages; cannot observe");
  }
  hs_dataset *ds;
  cr_assert_eq(hs_dataset_open(dir, &ds), HS_OK, "%s", hs_last_error());
  cr_assert_eq(mincore(probe, len, vec), 0);
  size_t after = 0;
  for (size_t i = 1; i < npages; i++) after += vec[i] & 1;
  cr_expect_eq(after, 0, "open read %zu feature pages", after);
  hs_dataset_close(ds);
  munmap(probe, len);
  close(fd);
  free(vec);
  free(p);
  tu_rmtree(dir);
}

/* ---- the writer ------------------------------------------------------- */

Test(dataset, writer_commits_atomically) {
  char *root = tu_mkdtemp();
  char *dst = tu_path(root, "ds");
  hs__dsw *w;
  cr_assert_eq(hs__dsw_begin(dst, false, &w), HS_OK, "%s", hs_last_error());
  cr_expect_eq(tu_count_prefix(root, "ds.tmp-"), 1);
  cr_expect_not(tu_exists(root, "ds"));
  uint64_t s1[1] = {6}, s2[1] = {6};
  cr_assert_eq(hs__dsw_array(w, "indptr.npy", HS_DTYPE_INT64, 1, s1, g_indptr), HS_OK);
  cr_assert_eq(hs__dsw_array(w, "indices.npy", HS_DTYPE_INT32, 1, s2, g_indices), HS_OK);
  cr_assert_eq(hs__dsw_text(w, "meta.json", "{}\n"), HS_OK);
  cr_assert_eq(hs__dsw_commit(w), HS_OK, "%s", hs_last_error());
  cr_expect_eq(tu_count_prefix(root, "ds.tmp-"), 0);
  cr_expect_eq(open_dir(dst), HS_OK, "%s", hs_last_error());
  free(dst);
  tu_rmtree(root);
}

Test(dataset, writer_failure_leaves_nothing) {
  char *root = tu_mkdtemp();
  char *dst = tu_path(root, "ds");
  hs__dsw *w;
  cr_assert_eq(hs__dsw_begin(dst, false, &w), HS_OK);
  uint64_t s1[1] = {6};
  cr_assert_eq(hs__dsw_array(w, "indptr.npy", HS_DTYPE_INT64, 1, s1, g_indptr), HS_OK);
  /* A second file of the same name: the kind of failure a writer meets. */
  hs_status st = hs__dsw_array(w, "indptr.npy", HS_DTYPE_INT64, 1, s1, g_indptr);
  cr_expect_eq(st, HS_ERR_IO);
  hs__dsw_abort(w);
  cr_expect(strstr(hs_last_error(), "indptr.npy: cannot create"), "%s", hs_last_error());
  cr_expect_eq(tu_count_prefix(root, "ds"), 0);
  free(dst);
  tu_rmtree(root);
}

Test(dataset, writer_refuses_existing_destination) {
  char *root = tu_mkdtemp();
  char *dst = tu_path(root, "ds");
  cr_assert_eq(mkdir(dst, 0755), 0);
  tu_write_bytes(dst, "keep.txt", "x", 1);
  hs__dsw *w;
  TU_EXPECT_FAIL(hs__dsw_begin(dst, false, &w), HS_ERR_INVALID_ARG, "ds", "already exists",
                 "force");
  /* With force, a directory holding foreign files is still refused. */
  TU_EXPECT_FAIL(hs__dsw_begin(dst, true, &w), HS_ERR_INVALID_ARG, "ds", "keep.txt",
                 "not a dataset file");
  cr_expect(tu_exists(dst, "keep.txt"));
  cr_expect_eq(tu_count_prefix(root, "ds.tmp-"), 0);
  free(dst);
  tu_rmtree(root);
}

Test(dataset, writer_force_replaces_dataset) {
  char *root = tu_mkdtemp();
  char *dst = tu_path(root, "ds");
  hs__dsw *w;
  uint64_t s[1] = {6};
  for (int round = 0; round < 2; round++) {
    cr_assert_eq(hs__dsw_begin(dst, round == 1, &w), HS_OK, "%s", hs_last_error());
    cr_assert_eq(hs__dsw_array(w, "indptr.npy", HS_DTYPE_INT64, 1, s, g_indptr), HS_OK);
    cr_assert_eq(hs__dsw_array(w, "indices.npy", HS_DTYPE_INT32, 1, s, g_indices), HS_OK);
    if (round == 0) cr_assert_eq(hs__dsw_array(w, "label.npy", HS_DTYPE_INT32, 1, s, g_indices), HS_OK);
    cr_assert_eq(hs__dsw_commit(w), HS_OK, "%s", hs_last_error());
  }
  cr_expect_not(tu_exists(dst, "label.npy"), "the old dataset's files survived");
  cr_expect_eq(tu_count_prefix(root, "ds"), 1);
  free(dst);
  tu_rmtree(root);
}

/* ---- statistics ------------------------------------------------------- */

/* Feature values that are NaN or infinite are counted, with the first
 * vertex holding one: float32 and float16 (whose largest finite value is
 * not one of them). */
Test(dataset, stats_count_the_features_that_are_not_finite) {
  char *dir = good_dataset();
  hs_dataset *ds;
  hs_dataset_stats s;
  hs_dataset_stats_init(&s);
  cr_assert_eq(hs_dataset_open(dir, &ds), HS_OK, "%s", hs_last_error());
  cr_assert_eq(hs_dataset_stats_compute(ds, &s), HS_OK);
  cr_expect_eq(s.feature_nonfinite, 0);
  cr_expect_eq(s.feature_nonfinite_first, -1);
  hs_dataset_close(ds);
  float feat[15];
  for (int i = 0; i < 15; i++) feat[i] = (float)i * 0.5f;
  feat[7] = NAN, feat[8] = -INFINITY, feat[13] = INFINITY, feat[14] = FLT_MAX;
  put(dir, "feat.npy", HS_DTYPE_FLOAT32, 2, 5, 3, feat);
  cr_assert_eq(hs_dataset_open(dir, &ds), HS_OK, "%s", hs_last_error());
  cr_assert_eq(hs_dataset_stats_compute(ds, &s), HS_OK);
  cr_expect_eq(s.feature_nonfinite, 3);
  cr_expect_eq(s.feature_nonfinite_first, 2);
  hs_dataset_close(ds);
  uint16_t half[15] = {0};
  half[10] = 0x7e00u, half[11] = 0x7bffu, half[12] = 0xfc00u; /* NaN, 65504, -inf */
  put(dir, "feat.npy", HS_DTYPE_FLOAT16, 2, 5, 3, half);
  cr_assert_eq(hs_dataset_open(dir, &ds), HS_OK, "%s", hs_last_error());
  cr_assert_eq(hs_dataset_stats_compute(ds, &s), HS_OK);
  cr_expect_eq(s.feature_nonfinite, 2);
  cr_expect_eq(s.feature_nonfinite_first, 3);
  cr_expect_eq(s.feature_nnz, 3);
  hs_dataset_close(ds);
  tu_rmtree(dir);
}

Test(dataset, stats_of_small_graph) {
  char *dir = good_dataset();
  hs_dataset *ds;
  cr_assert_eq(hs_dataset_open(dir, &ds), HS_OK, "%s", hs_last_error());
  hs_dataset_stats s;
  hs_dataset_stats_init(&s);
  cr_assert_eq(hs_dataset_stats_compute(ds, &s), HS_OK);
  /* Row lengths 2 1 2 0 1. */
  cr_expect_eq(s.degree_min, 0);
  cr_expect_eq(s.degree_median, 1);
  cr_expect_eq(s.degree_p99, 2);
  cr_expect_eq(s.degree_max, 2);
  cr_expect_float_eq(s.degree_mean, 1.2, 1e-9);
  cr_expect_eq(s.self_loops, 0);
  cr_expect_eq(s.isolated, 0); /* vertex 3 has no row but is in row 2 */
  cr_expect_eq(s.class_size_max, 2);
  hs_dataset_info info;
  hs_dataset_info_init(&info);
  cr_assert_eq(hs_dataset_get_info(ds, &info), HS_OK);
  cr_expect_eq(info.num_edges, 6);
  hs_dataset_close(ds);
  /* A self-loop, an isolated vertex, and class ids far above N. */
  int64_t ip[6] = {0, 1, 1, 1, 1, 1};
  int32_t ix[1] = {0};
  int32_t lab[5] = {0, 2000000000, 2000000000, -1, 5};
  put_i64(dir, "indptr.npy", ip, 6);
  put_i32(dir, "indices.npy", ix, 1);
  put_i32(dir, "label.npy", lab, 5);
  int32_t tr[1] = {0}, va[1] = {1}, te[1] = {4};
  put_i32(dir, "train_idx.npy", tr, 1);
  put_i32(dir, "valid_idx.npy", va, 1);
  put_i32(dir, "test_idx.npy", te, 1);
  cr_assert_eq(hs_dataset_open(dir, &ds), HS_OK, "%s", hs_last_error());
  cr_assert_eq(hs_dataset_stats_compute(ds, &s), HS_OK);
  cr_expect_eq(s.self_loops, 1);
  cr_expect_eq(s.isolated, 4);
  cr_assert_eq(hs_dataset_get_info(ds, &info), HS_OK);
  cr_expect_eq(info.num_classes, 2000000001);
  cr_expect_eq(s.class_size_max, 2);
  hs_dataset_close(ds);
  tu_rmtree(dir);
}
