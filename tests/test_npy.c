/* .npy reading and writing: files written by NumPy (format 1.0, 2.0, 3.0),
 * round trips, and one test per header rule. */
#include <fcntl.h>
#include <unistd.h>

#include "data/hs_npy.h"
#include "hs_test_util.h"

static hs_status open_fixture(const char *name, hs__npy_header *h, int *fd) {
  char full[512];
  snprintf(full, sizeof full, "%s/npy/%s", tu_data_dir(), name);
  return hs__npy_open(full, h, fd);
}

Test(npy, numpy_v1_int64) {
  hs__npy_header h;
  int fd;
  cr_assert_eq(open_fixture("v1_i8.npy", &h, &fd), HS_OK, "%s", hs_last_error());
  cr_expect_eq(h.major, 1);
  cr_expect_eq(h.dtype, HS_DTYPE_INT64);
  cr_expect_eq(h.ndim, 1);
  cr_expect_eq(h.shape[0], 4);
  cr_expect_eq(h.data_offset % 64, 0);
  int64_t v[4];
  cr_assert_eq(hs__npy_read_i64("v1_i8.npy", fd, &h, v), HS_OK);
  cr_expect(v[0] == 0 && v[1] == 2 && v[2] == 3 && v[3] == 5);
  close(fd);
}

Test(npy, numpy_v2_float32_matrix) {
  hs__npy_header h;
  int fd;
  cr_assert_eq(open_fixture("v2_f4_2d.npy", &h, &fd), HS_OK, "%s", hs_last_error());
  cr_expect_eq(h.major, 2);
  cr_expect_eq(h.dict_offset, 12);
  cr_expect_eq(h.dtype, HS_DTYPE_FLOAT32);
  cr_expect(h.ndim == 2 && h.shape[0] == 3 && h.shape[1] == 4);
  hs__map m;
  const void *data;
  cr_assert_eq(hs__npy_map("x", fd, &h, false, &m, &data), HS_OK);
  const float *f = data;
  for (int i = 0; i < 12; i++) cr_expect_float_eq(f[i], (float)i, 0.0f);
  hs__map_release(&m);
  close(fd);
}

Test(npy, numpy_v3_int32) {
  hs__npy_header h;
  int fd;
  cr_assert_eq(open_fixture("v3_i4.npy", &h, &fd), HS_OK, "%s", hs_last_error());
  cr_expect_eq(h.major, 3);
  cr_expect_eq(h.dtype, HS_DTYPE_INT32);
  int32_t v[3];
  cr_assert_eq(hs__npy_read_i32("v3", fd, &h, v, -5, 10, "x"), HS_OK);
  cr_expect(v[0] == 7 && v[1] == -1 && v[2] == 3);
  close(fd);
}

Test(npy, numpy_float16_and_empty) {
  hs__npy_header h;
  int fd;
  cr_assert_eq(open_fixture("v1_f2_2d.npy", &h, &fd), HS_OK, "%s", hs_last_error());
  cr_expect_eq(h.dtype, HS_DTYPE_FLOAT16);
  cr_expect_eq(h.data_bytes, 8);
  close(fd);
  cr_assert_eq(open_fixture("default_i8_empty.npy", &h, &fd), HS_OK, "%s", hs_last_error());
  cr_expect_eq(h.count, 0);
  close(fd);
}

Test(npy, round_trip_every_dtype) {
  char *dir = tu_mkdtemp();
  const hs_dtype types[] = {HS_DTYPE_INT32, HS_DTYPE_INT64, HS_DTYPE_FLOAT32,
                            HS_DTYPE_FLOAT16};
  unsigned char payload[6 * 7 * 8];
  for (size_t i = 0; i < sizeof payload; i++) payload[i] = (unsigned char)(i * 37 + 1);
  for (size_t t = 0; t < 4; t++) {
    for (int ndim = 1; ndim <= 2; ndim++) {
      uint64_t shape[2] = {6, 7};
      if (ndim == 1) shape[0] = 42;
      char name[64];
      snprintf(name, sizeof name, "a%zu_%d.npy", t, ndim);
      char *p = tu_path(dir, name);
      cr_assert_eq(hs__npy_write(p, types[t], ndim, shape, payload), HS_OK, "%s",
                   hs_last_error());
      hs__npy_header h;
      int fd;
      cr_assert_eq(hs__npy_open(p, &h, &fd), HS_OK, "%s", hs_last_error());
      cr_expect_eq(h.dtype, types[t]);
      cr_expect_eq(h.ndim, ndim);
      cr_expect_eq(h.shape[0], shape[0]);
      if (ndim == 2) cr_expect_eq(h.shape[1], 7);
      cr_expect_eq(h.data_offset % 64, 0);
      hs__map m;
      const void *data;
      cr_assert_eq(hs__npy_map(p, fd, &h, true, &m, &data), HS_OK);
      cr_expect_eq(memcmp(data, payload, 42 * hs__dtype_size(types[t])), 0);
      hs__map_release(&m);
      close(fd);
      free(p);
    }
  }
  tu_rmtree(dir);
}

Test(npy, writer_checks_promised_length) {
  char *dir = tu_mkdtemp();
  char *p = tu_path(dir, "short.npy");
  uint64_t shape[1] = {4};
  hs__npy_out o;
  cr_assert_eq(hs__npy_out_open(&o, p, HS_DTYPE_INT32, 1, shape), HS_OK);
  int32_t v[5] = {1, 2, 3, 4, 5};
  cr_expect_eq(hs__npy_out_write(&o, v, 12), HS_OK);
  cr_expect_eq(hs__npy_out_write(&o, v, 8), HS_ERR_INVALID_ARG);
  TU_EXPECT_FAIL(hs__npy_out_close(&o), HS_ERR_INVALID_ARG, "short.npy", "12 payload bytes",
                 "promises 16");
  free(p);
  tu_rmtree(dir);
}

/* ---- header rules: one test each, on hand-made bytes ---------------- */

static hs_status parse_text(const char *bytes, size_t len) {
  hs__npy_header h;
  return hs__npy_parse("hand.npy", bytes, len, &h);
}

/* A v1.0 file image around a header dict. */
static size_t make_v1(char *buf, const char *dict) {
  size_t dl = strlen(dict);
  memcpy(buf, "\x93NUMPY\x01\x00", 8);
  buf[8] = (char)(dl & 0xff);
  buf[9] = (char)(dl >> 8);
  memcpy(buf + 10, dict, dl);
  return 10 + dl;
}

#define GOOD_DICT "{'descr': '<i8', 'fortran_order': False, 'shape': (3,), }\n"

Test(npy, accepts_hand_made_variants) {
  char b[512];
  size_t n = make_v1(b, GOOD_DICT);
  cr_expect_eq(parse_text(b, n), HS_OK, "%s", hs_last_error());
  n = make_v1(b, "{\"shape\":(3L,4L),\"fortran_order\":False,\"descr\":\"|i4\"}");
  hs__npy_header h;
  cr_expect_eq(hs__npy_parse("x", b, n, &h), HS_OK, "%s", hs_last_error());
  cr_expect(h.ndim == 2 && h.shape[1] == 4 && h.dtype == HS_DTYPE_INT32);
  n = make_v1(b, "{'descr': '<f4', 'fortran_order': False, 'shape': ()}");
  cr_expect_eq(hs__npy_parse("x", b, n, &h), HS_OK);
  cr_expect(h.ndim == 0 && h.count == 1);
}

Test(npy, rule_magic) {
  char b[512];
  size_t n = make_v1(b, GOOD_DICT);
  b[3] = 'X';
  TU_EXPECT_FAIL(parse_text(b, n), HS_ERR_FORMAT, "hand.npy", "byte 3", "bad magic");
}

Test(npy, rule_file_shorter_than_magic) {
  TU_EXPECT_FAIL(parse_text("\x93NUM", 4), HS_ERR_FORMAT, "hand.npy", "byte 4",
                 "ends inside the npy magic");
}

Test(npy, rule_version) {
  char b[512];
  size_t n = make_v1(b, GOOD_DICT);
  b[6] = 4;
  TU_EXPECT_FAIL(parse_text(b, n), HS_ERR_FORMAT, "hand.npy", "byte 6", "version 4.0");
  b[6] = 1;
  b[7] = 1;
  TU_EXPECT_FAIL(parse_text(b, n), HS_ERR_FORMAT, "hand.npy", "byte 7", "version 1.1");
}

Test(npy, rule_header_length_beyond_file) {
  char b[512];
  size_t n = make_v1(b, GOOD_DICT);
  TU_EXPECT_FAIL(parse_text(b, n - 5), HS_ERR_FORMAT, "hand.npy", "byte 63",
                 "ends inside the header");
  TU_EXPECT_FAIL(parse_text(b, 9), HS_ERR_FORMAT, "hand.npy", "byte 9",
                 "inside the header length");
}

Test(npy, rule_header_length_limit) {
  char b[16] = "\x93NUMPY\x02\x00";
  b[8] = 0;
  b[9] = 0;
  b[10] = 0x10; /* 1 MiB */
  b[11] = 0;
  TU_EXPECT_FAIL(parse_text(b, 12), HS_ERR_FORMAT, "hand.npy", "byte 8", "exceeds");
}

Test(npy, rule_non_ascii_header) {
  char b[512];
  size_t n = make_v1(b, "{'descr': '<i8', 'fortran_order': False, 'shape': (3,), }\xc3\xa9");
  TU_EXPECT_FAIL(parse_text(b, n), HS_ERR_FORMAT, "hand.npy", "byte 67", "non-ASCII");
}

Test(npy, rule_dict_syntax) {
  char b[512];
  size_t n = make_v1(b, "{'descr' '<i8', 'fortran_order': False, 'shape': (3,), }");
  TU_EXPECT_FAIL(parse_text(b, n), HS_ERR_FORMAT, "hand.npy", "byte 19",
                 "expected ':' after a key");
  n = make_v1(b, "['descr']");
  TU_EXPECT_FAIL(parse_text(b, n), HS_ERR_FORMAT, "hand.npy", "byte 10", "expected '{'");
  n = make_v1(b, "{'descr': '<i8', 'fortran_order': False, 'shape': (3,) 'x'}");
  TU_EXPECT_FAIL(parse_text(b, n), HS_ERR_FORMAT, "hand.npy", "byte 65", "expected ','");
}

Test(npy, rule_missing_key) {
  char b[512];
  size_t n = make_v1(b, "{'descr': '<i8', 'shape': (3,), }");
  TU_EXPECT_FAIL(parse_text(b, n), HS_ERR_FORMAT, "hand.npy", "byte", "no 'fortran_order'");
}

Test(npy, rule_unknown_key) {
  char b[512];
  size_t n = make_v1(b, "{'descr': '<i8', 'order': 'C', 'fortran_order': False, 'shape': (3,)}");
  TU_EXPECT_FAIL(parse_text(b, n), HS_ERR_FORMAT, "hand.npy", "byte 27", "unknown key");
}

Test(npy, rule_repeated_key) {
  char b[512];
  size_t n = make_v1(b, "{'descr': '<i8', 'descr': '<i4', 'fortran_order': False, 'shape': (3,)}");
  TU_EXPECT_FAIL(parse_text(b, n), HS_ERR_FORMAT, "hand.npy", "byte", "repeated key");
}

Test(npy, rule_fortran_value) {
  char b[512];
  size_t n = make_v1(b, "{'descr': '<i8', 'fortran_order': 0, 'shape': (3,)}");
  TU_EXPECT_FAIL(parse_text(b, n), HS_ERR_FORMAT, "hand.npy", "byte 44", "True or False");
}

Test(npy, rule_shape_syntax) {
  char b[512];
  size_t n = make_v1(b, "{'descr': '<i8', 'fortran_order': False, 'shape': (-3,)}");
  TU_EXPECT_FAIL(parse_text(b, n), HS_ERR_FORMAT, "hand.npy", "byte 61", "non-negative integer");
  n = make_v1(b, "{'descr': '<i8', 'fortran_order': False, 'shape': [3]}");
  TU_EXPECT_FAIL(parse_text(b, n), HS_ERR_FORMAT, "hand.npy", "byte 60", "expected '('");
}

Test(npy, rule_at_most_two_dimensions) {
  char b[512];
  size_t n = make_v1(b, "{'descr': '<i8', 'fortran_order': False, 'shape': (2, 3, 4)}");
  TU_EXPECT_FAIL(parse_text(b, n), HS_ERR_FORMAT, "hand.npy", "byte 67", "more than 2 dimensions");
}

Test(npy, rule_shape_overflow) {
  char b[512];
  size_t n = make_v1(b, "{'descr': '<i8', 'fortran_order': False, 'shape': (99999999999999999999,)}");
  TU_EXPECT_FAIL(parse_text(b, n), HS_ERR_FORMAT, "hand.npy", "byte 61", "overflows 64 bits");
  n = make_v1(b, "{'descr': '<i8', 'fortran_order': False, 'shape': (4294967296, 4294967296)}");
  TU_EXPECT_FAIL(parse_text(b, n), HS_ERR_FORMAT, "hand.npy", "byte 10", "overflows");
}

Test(npy, rule_structured_dtype) {
  char b[512];
  size_t n = make_v1(b, "{'descr': [('a', '<i4')], 'fortran_order': False, 'shape': (3,)}");
  TU_EXPECT_FAIL(parse_text(b, n), HS_ERR_FORMAT, "hand.npy", "byte 20", "structured");
}

Test(npy, rule_descr_syntax) {
  char b[512];
  size_t n = make_v1(b, "{'descr': '<4', 'fortran_order': False, 'shape': (3,)}");
  TU_EXPECT_FAIL(parse_text(b, n), HS_ERR_FORMAT, "hand.npy", "byte 20", "simple dtype");
  n = make_v1(b, "{'descr': '<i0', 'fortran_order': False, 'shape': (0,)}");
  TU_EXPECT_FAIL(parse_text(b, n), HS_ERR_FORMAT, "hand.npy", "byte 20", "item size of 0");
}

Test(npy, rule_big_endian_rejected) {
  hs__npy_header h;
  int fd;
  TU_EXPECT_FAIL(open_fixture("big_endian_i8.npy", &h, &fd), HS_ERR_FORMAT,
                 "big_endian_i8.npy", "byte 20", "big-endian dtype '>i8'");
}

Test(npy, rule_native_order_ambiguous) {
  char b[512];
  size_t n = make_v1(b, "{'descr': '=i8', 'fortran_order': False, 'shape': (3,)}");
  TU_EXPECT_FAIL(parse_text(b, n), HS_ERR_FORMAT, "hand.npy", "byte 20", "no explicit byte order");
}

Test(npy, rule_fortran_order_rejected) {
  hs__npy_header h;
  int fd;
  cr_assert_eq(open_fixture("fortran_f4.npy", &h, &fd), HS_OK);
  close(fd);
  TU_EXPECT_FAIL(hs__npy_expect("fortran_f4.npy", &h, 1u << HS_DTYPE_FLOAT32, 2),
                 HS_ERR_FORMAT, "fortran_f4.npy", "byte 10", "Fortran-order");
  /* One dimension: both orders are the same bytes. */
  h.ndim = 1;
  cr_expect_eq(hs__npy_expect("x", &h, 1u << HS_DTYPE_FLOAT32, 1), HS_OK);
}

Test(npy, rule_dtype_role) {
  hs__npy_header h;
  int fd;
  cr_assert_eq(open_fixture("f8.npy", &h, &fd), HS_OK);
  close(fd);
  TU_EXPECT_FAIL(hs__npy_expect("f8.npy", &h, (1u << HS_DTYPE_INT32) | (1u << HS_DTYPE_INT64), 1),
                 HS_ERR_FORMAT, "f8.npy", "byte 10", "'<f8' is not allowed here (expected int32 or int64)");
}

Test(npy, rule_rank_role) {
  hs__npy_header h;
  int fd;
  cr_assert_eq(open_fixture("v2_f4_2d.npy", &h, &fd), HS_OK);
  close(fd);
  TU_EXPECT_FAIL(hs__npy_expect("v2_f4_2d.npy", &h, 1u << HS_DTYPE_FLOAT32, 1), HS_ERR_FORMAT,
                 "v2_f4_2d.npy", "byte 12", "2-dimensional array, expected 1");
}

Test(npy, rule_truncated_payload) {
  char *dir = tu_mkdtemp();
  char *p = tu_path(dir, "t.npy");
  uint64_t shape[1] = {10};
  int64_t v[10] = {0};
  cr_assert_eq(hs__npy_write(p, HS_DTYPE_INT64, 1, shape, v), HS_OK);
  cr_assert_eq(truncate(p, 64 + 75), 0);
  hs__npy_header h;
  int fd;
  TU_EXPECT_FAIL(hs__npy_open(p, &h, &fd), HS_ERR_FORMAT, "t.npy", "byte 139", "truncated");
  free(p);
  tu_rmtree(dir);
}

Test(npy, rule_trailing_bytes) {
  char *dir = tu_mkdtemp();
  char *p = tu_path(dir, "t.npy");
  uint64_t shape[1] = {2};
  int64_t v[2] = {0};
  cr_assert_eq(hs__npy_write(p, HS_DTYPE_INT64, 1, shape, v), HS_OK);
  FILE *f = fopen(p, "ab");
  fputs("xyz", f);
  fclose(f);
  hs__npy_header h;
  int fd;
  TU_EXPECT_FAIL(hs__npy_open(p, &h, &fd), HS_ERR_FORMAT, "t.npy", "byte 144",
                 "3 unexpected bytes");
  free(p);
  tu_rmtree(dir);
}

Test(npy, rule_unaligned_payload) {
  char *dir = tu_mkdtemp();
  char b[512];
  size_t n = make_v1(b, "{'descr': '<i8', 'fortran_order': False, 'shape': (1,)}\n");
  memset(b + n, 0, 8);
  tu_write_bytes(dir, "u.npy", b, n + 8);
  char *p = tu_path(dir, "u.npy");
  hs__npy_header h;
  int fd;
  cr_assert_eq(hs__npy_open(p, &h, &fd), HS_OK, "%s", hs_last_error());
  hs__map m;
  const void *data;
  TU_EXPECT_FAIL(hs__npy_map(p, fd, &h, false, &m, &data), HS_ERR_UNSUPPORTED, "u.npy",
                 "byte 66", "not a multiple");
  close(fd);
  free(p);
  tu_rmtree(dir);
}

Test(npy, rule_element_range_on_narrowing) {
  char *dir = tu_mkdtemp();
  char *p = tu_path(dir, "r.npy");
  uint64_t shape[1] = {4};
  int64_t v[4] = {1, 2, 5000000000LL, 3};
  cr_assert_eq(hs__npy_write(p, HS_DTYPE_INT64, 1, shape, v), HS_OK);
  hs__npy_header h;
  int fd;
  cr_assert_eq(hs__npy_open(p, &h, &fd), HS_OK);
  int32_t out[4];
  TU_EXPECT_FAIL(hs__npy_read_i32(p, fd, &h, out, 0, 9, "id"), HS_ERR_FORMAT, "r.npy",
                 "element 2 (byte 144)", "5000000000 is outside [0, 9]");
  close(fd);
  free(p);
  tu_rmtree(dir);
}
