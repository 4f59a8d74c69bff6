/* CTR data: the Criteo-layout reader (values, missing values, the log
 * transform, gzip, several files, errors naming file, line and column),
 * the generator (deterministic whatever the thread count, its Bayes
 * figures), AUC and logloss. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zlib.h>

#include "ctr/hs_ctr.h"
#include "data/hs_npy.h"
#include "hs_test_util.h"
#include "json_check.h"

static char *dir;

static void setup(void) { dir = tu_mkdtemp(); }
static void teardown(void) { tu_rmtree(dir); }

TestSuite(ctr_data, .init = setup, .fini = teardown);

/* A line of 40 columns from a label, 13 integer strings and 26 ids. */
static void put_line(FILE *f, const char *label, const char *const *ints, const char *const *cats) {
  fputs(label, f);
  for (int j = 0; j < 13; j++) fprintf(f, "\t%s", ints ? ints[j] : "1");
  for (int k = 0; k < 26; k++) fprintf(f, "\t%s", cats ? cats[k] : "a0");
  fputc('\n', f);
}

static hs_ctr_reader *open1(const char *name, bool labels) {
  char *p = tu_path(dir, name);
  const char *paths[1] = {p};
  hs_ctr_reader *r;
  cr_assert_eq(hs__ctr_reader_open(paths, 1, labels, &r), HS_OK, "%s", hs_last_error());
  free(p);
  return r;
}

Test(ctr_data, reads_values_missing_and_the_log_transform) {
  char *p = tu_path(dir, "a.txt");
  FILE *f = fopen(p, "w");
  const char *ints[13] = {"0", "", "-3", "1", "4095", "4096", "123456789012", "7", "", "2", "3", "", "9"};
  const char *cats[26] = {"68fd1e64", "", "FFFFFFFF", "0", "ffffffffffffffff", "abc", "", "1",
                          "123456789", "1234567", "4", "5", "6", "7", "8", "9", "a", "b", "c", "d",
                          "e", "f", "10", "11", "12", "DeadBeef"};
  put_line(f, "1", ints, cats);
  put_line(f, "0", NULL, NULL);
  fputs("0", f); /* a last line without its newline, and CRLF endings are fine too */
  for (int j = 0; j < 13; j++) fputs("\t5", f);
  for (int k = 0; k < 25; k++) fputs("\tab", f);
  fputs("\t0123abCD\r", f);
  fclose(f);
  free(p);
  hs_ctr_reader *r = open1("a.txt", true);
  hs_ctr_rows rows;
  cr_assert_eq(hs__ctr_rows_alloc(&rows, 8), HS_OK);
  cr_assert_eq(hs__ctr_reader_next(r, 8, &rows), HS_OK, "%s", hs_last_error());
  cr_assert_eq(rows.n, 3);
  cr_assert_eq(rows.labels[0], 1);
  cr_assert_eq(rows.labels[1], 0);
  const float *d = rows.dense;
  cr_assert_eq(d[0], 0.0f);
  cr_assert_eq(d[1], 0.0f, "missing");
  cr_assert_eq(d[2], 0.0f, "negative");
  cr_assert_eq(d[3], (float)log1p(1.0));
  cr_assert_eq(d[4], (float)log1p(4095.0));
  cr_assert_eq(d[5], (float)log1p(4096.0));
  cr_assert_eq(d[6], (float)log1p(123456789012.0));
  const uint64_t *id = rows.ids;
  cr_assert_eq(id[0], 0x68fd1e64u);
  cr_assert_eq(id[1], HS_CTR_MISSING);
  cr_assert_eq(id[2], 0xffffffffu);
  cr_assert_eq(id[3], 0u);
  cr_assert_eq(id[4], HS_CTR_MISSING, "all f's share the missing key");
  cr_assert_eq(id[5], 0xabcu);
  cr_assert_eq(id[8], 0x123456789u);
  cr_assert_eq(id[9], 0x1234567u);
  cr_assert_eq(id[25], 0xdeadbeefu);
  cr_assert_eq(rows.dense[2 * 13], (float)log1p(5.0));
  cr_assert_eq(rows.ids[2 * 26 + 24], 0xabu);
  cr_assert_eq(rows.ids[2 * 26 + 25], 0x0123abcdu, "eight digits before a CR");
  cr_assert_eq(hs__ctr_reader_count(r), 3);
  cr_assert_eq(hs__ctr_reader_next(r, 8, &rows), HS_OK);
  cr_assert_eq(rows.n, 0, "end of data");
  cr_assert_eq(hs__ctr_reader_rewind(r), HS_OK);
  cr_assert_eq(hs__ctr_reader_next(r, 2, &rows), HS_OK);
  cr_assert_eq(rows.n, 2);
  cr_assert_eq(rows.labels[0], 1);
  hs__ctr_reader_close(r);
  hs__ctr_rows_free(&rows);
}

Test(ctr_data, gzip_several_files_and_no_labels) {
  char *p1 = tu_path(dir, "one.txt.gz"), *p2 = tu_path(dir, "two.txt");
  gzFile z = gzopen(p1, "wb");
  for (int i = 0; i < 1000; i++) {
    gzprintf(z, "%d", i & 1);
    for (int j = 0; j < 13; j++) gzprintf(z, "\t%d", i + j);
    for (int k = 0; k < 26; k++) gzprintf(z, "\t%x", i * 26 + k);
    gzprintf(z, "\n");
  }
  gzclose(z);
  FILE *f = fopen(p2, "w");
  put_line(f, "1", NULL, NULL);
  fclose(f);
  const char *paths[2] = {p1, p2};
  hs_ctr_reader *r;
  cr_assert_eq(hs__ctr_reader_open(paths, 2, true, &r), HS_OK);
  hs_ctr_rows rows;
  cr_assert_eq(hs__ctr_rows_alloc(&rows, 300), HS_OK);
  int64_t total = 0;
  for (;;) {
    cr_assert_eq(hs__ctr_reader_next(r, 300, &rows), HS_OK, "%s", hs_last_error());
    if (!rows.n) break;
    for (int i = 0; i < rows.n; i++, total++)
      if (total < 1000) {
        cr_assert_eq(rows.ids[(size_t)i * 26 + 3], (uint64_t)(total * 26 + 3));
        cr_assert_eq(rows.labels[i], total & 1);
      }
  }
  cr_assert_eq(total, 1001);
  hs__ctr_reader_close(r);
  /* A file without labels: 39 columns. */
  f = fopen(p2, "w");
  for (int j = 0; j < 13; j++) fprintf(f, "%s2", j ? "\t" : "");
  for (int k = 0; k < 26; k++) fprintf(f, "\t%x", k);
  fputc('\n', f);
  fclose(f);
  r = open1("two.txt", false);
  cr_assert_eq(hs__ctr_reader_next(r, 300, &rows), HS_OK, "%s", hs_last_error());
  cr_assert_eq(rows.n, 1);
  cr_assert_eq(rows.labels[0], HS_CTR_NO_LABEL);
  cr_assert_eq(rows.ids[25], 25u);
  hs__ctr_reader_close(r);
  /* The same file read as labelled is an error naming file and line. */
  r = open1("two.txt", true);
  TU_EXPECT_FAIL(hs__ctr_reader_next(r, 300, &rows), HS_ERR_FORMAT, "two.txt", ":1:", "column");
  hs__ctr_reader_close(r);
  hs__ctr_rows_free(&rows);
  free(p1);
  free(p2);
}

/* n good lines, gzip-compressed, into `path`; its size in bytes. */
static long write_gz(const char *path, int n) {
  gzFile z = gzopen(path, "wb");
  cr_assert(z);
  for (int i = 0; i < n; i++) {
    gzprintf(z, "%d", i & 1);
    for (int j = 0; j < 13; j++) gzprintf(z, "\t%d", i + j);
    for (int k = 0; k < 26; k++) gzprintf(z, "\t%x", i * 26 + k);
    gzprintf(z, "\n");
  }
  gzclose(z);
  struct stat sb;
  cr_assert_eq(stat(path, &sb), 0);
  return (long)sb.st_size;
}

/* Every line of `name`, or the reader's error. */
static hs_status read_all(const char *name, int64_t *lines) {
  hs_ctr_reader *r = open1(name, true);
  hs_ctr_rows rows;
  cr_assert_eq(hs__ctr_rows_alloc(&rows, 256), HS_OK);
  hs_status st;
  *lines = 0;
  while ((st = hs__ctr_reader_next(r, 256, &rows)) == HS_OK && rows.n) *lines += rows.n;
  hs__ctr_reader_close(r);
  hs__ctr_rows_free(&rows);
  return st;
}

Test(ctr_data, a_truncated_gzip_file_is_an_error) {
  char *good = tu_path(dir, "good.gz"), *cut = tu_path(dir, "cut.gz"), *cat = tu_path(dir, "cat.gz");
  long size = write_gz(good, 5000);
  int64_t lines;
  cr_assert_eq(read_all("good.gz", &lines), HS_OK, "%s", hs_last_error());
  cr_assert_eq(lines, 5000);
  char *bytes = malloc((size_t)size);
  FILE *f = fopen(good, "rb");
  cr_assert_eq(fread(bytes, 1, (size_t)size, f), (size_t)size);
  fclose(f);
  /* Cut at several points: never a silent end of data, never a column count. */
  const long cuts[] = {size - 1, size - 8, size / 2, size / 3 + 17, 40};
  for (size_t c = 0; c < sizeof cuts / sizeof *cuts; c++) {
    f = fopen(cut, "wb");
    fwrite(bytes, 1, (size_t)cuts[c], f);
    fclose(f);
    cr_assert_eq(read_all("cut.gz", &lines), HS_ERR_IO, "cut at %ld of %ld: %lld lines, %s",
                 cuts[c], size, (long long)lines, hs_last_error());
    cr_assert(strstr(hs_last_error(), "cut.gz") && strstr(hs_last_error(), "truncated"), "%s",
              hs_last_error());
  }
  /* Two members, the second cut: the first member's lines, then the error. */
  f = fopen(cat, "wb");
  fwrite(bytes, 1, (size_t)size, f);
  fwrite(bytes, 1, (size_t)(size / 2), f);
  fclose(f);
  cr_assert_eq(read_all("cat.gz", &lines), HS_ERR_IO, "%lld lines", (long long)lines);
  cr_assert(strstr(hs_last_error(), "cat.gz") && strstr(hs_last_error(), "truncated"), "%s",
            hs_last_error());
  /* Two whole members read as one file of both members' lines. */
  f = fopen(cat, "wb");
  fwrite(bytes, 1, (size_t)size, f);
  fwrite(bytes, 1, (size_t)size, f);
  fclose(f);
  cr_assert_eq(read_all("cat.gz", &lines), HS_OK, "%s", hs_last_error());
  cr_assert_eq(lines, 10000);
  free(bytes);
  free(good);
  free(cut);
  free(cat);
}

/* The reader's error on a file of one good line then `bad`. */
static void expect_bad(const char *bad, const char *pos, const char *what) {
  char *p = tu_path(dir, "bad.txt");
  FILE *f = fopen(p, "w");
  put_line(f, "0", NULL, NULL);
  fputs(bad, f);
  fclose(f);
  free(p);
  hs_ctr_reader *r = open1("bad.txt", true);
  hs_ctr_rows rows;
  cr_assert_eq(hs__ctr_rows_alloc(&rows, 4), HS_OK);
  TU_EXPECT_FAIL(hs__ctr_reader_next(r, 4, &rows), HS_ERR_FORMAT, "bad.txt", pos, what);
  hs__ctr_reader_close(r);
  hs__ctr_rows_free(&rows);
}

Test(ctr_data, errors_name_file_line_and_column) {
  char line[1024];
  /* Build a valid second line, then break one field of it. */
  char *q = line;
  q += sprintf(q, "1");
  for (int j = 0; j < 13; j++) q += sprintf(q, "\t%d", j);
  for (int k = 0; k < 26; k++) q += sprintf(q, "\t%x", k + 10);
  strcat(line, "\n");
  char b[1100];
  snprintf(b, sizeof b, "2%s", line + 1);
  expect_bad(b, ":2:", "column 1: '2' is not a label");
  snprintf(b, sizeof b, "1\t1x%s", line + 3);
  expect_bad(b, ":2:", "column 2: '1x' is not an integer");
  snprintf(b, sizeof b, "%.*s\tzz\n", (int)(strlen(line) - 4), line);
  expect_bad(b, ":2:", "column 40: 'zz' is not a hexadecimal id");
  /* Eight characters, the last or the first not a digit (ids of eight
   * digits take a path of their own). */
  snprintf(b, sizeof b, "%.*s\t1234567g\n", (int)(strlen(line) - 4), line);
  expect_bad(b, ":2:", "column 40: '1234567g' is not a hexadecimal id");
  snprintf(b, sizeof b, "%.*s\t 2345678\t1c\n", (int)(strlen(line) - 7), line);
  expect_bad(b, ":2:", "column 39: ' 2345678' is not a hexadecimal id");
  snprintf(b, sizeof b, "%.*s\t11112222333344445\n", (int)(strlen(line) - 4), line);
  expect_bad(b, ":2:", "more than 16 hexadecimal digits");
  snprintf(b, sizeof b, "%.*s\n", (int)(strlen(line) - 4), line);
  expect_bad(b, ":2:", "39 columns, expected 40");
  snprintf(b, sizeof b, "%.*s\t7\t8\n", (int)(strlen(line) - 1), line);
  expect_bad(b, ":2:", "42 columns, expected 40");
  snprintf(b, sizeof b, "1\t99999999999999999999%s", line + 3);
  expect_bad(b, ":2:", "column 2: '99999999999999999999' overflows");
  snprintf(b, sizeof b, "1\t9223372036854775808%s", line + 3);
  expect_bad(b, ":2:", "column 2: '9223372036854775808' overflows");
  expect_bad("\n", ":2:", "empty line");
  /* A missing file. */
  const char *paths[1] = {"/nonexistent/criteo.txt"};
  hs_ctr_reader *r;
  TU_EXPECT_FAIL(hs__ctr_reader_open(paths, 1, true, &r), HS_ERR_IO, "/nonexistent/criteo.txt",
                 "", "cannot open");
}

Test(ctr_data, auc_and_logloss) {
  float s[6] = {0.1f, 0.4f, 0.35f, 0.8f, 0.4f, 0.9f};
  uint8_t y[6] = {0, 0, 1, 1, 1, 0};
  /* Brute force over pairs, ties one half. */
  double num = 0, pairs = 0;
  for (int i = 0; i < 6; i++)
    for (int j = 0; j < 6; j++)
      if (y[i] && !y[j]) {
        pairs++;
        num += s[i] > s[j] ? 1 : s[i] == s[j] ? 0.5 : 0;
      }
  cr_assert_float_eq(hs_ctr_auc(s, y, 6), num / pairs, 1e-12);
  uint8_t all1[3] = {1, 1, 1};
  cr_assert(isnan(hs_ctr_auc(s, all1, 3)));
  float p[2] = {0.9f, 0.2f};
  uint8_t l[2] = {1, 0};
  cr_assert_float_eq(hs_ctr_logloss(p, l, 2), -(log(0.9f) + log(1 - 0.2f)) / 2, 1e-6);
}

static unsigned char *slurp(const char *d, const char *name, size_t *len) {
  char *p = tu_path(d, name);
  FILE *f = fopen(p, "rb");
  cr_assert(f, "%s", p);
  fseek(f, 0, SEEK_END);
  *len = (size_t)ftell(f);
  rewind(f);
  unsigned char *b = malloc(*len + 1);
  cr_assert_eq(fread(b, 1, *len, f), *len);
  fclose(f);
  free(p);
  return b;
}

Test(ctr_data, generator_is_deterministic_and_readable) {
  hs_ctr_generate_opts o;
  hs_ctr_generate_opts_init(&o);
  o.rows = 3000;
  o.big_vocab = 5000;
  o.threads = 1;
  char *d1 = tu_path(dir, "g1"), *d2 = tu_path(dir, "g2"), *d3 = tu_path(dir, "g3");
  hs_ctr_generate_summary s1, s2;
  hs_ctr_generate_summary_init(&s1);
  hs_ctr_generate_summary_init(&s2);
  cr_assert_eq(hs_ctr_generate(d1, &o, &s1), HS_OK, "%s", hs_last_error());
  o.threads = 3;
  cr_assert_eq(hs_ctr_generate(d2, &o, &s2), HS_OK, "%s", hs_last_error());
  const char *names[4] = {"train.txt", "valid.txt", "test.txt", "meta.json"};
  for (int k = 0; k < 4; k++) {
    size_t l1, l2;
    unsigned char *a = slurp(d1, names[k], &l1), *b = slurp(d2, names[k], &l2);
    cr_assert_eq(l1, l2, "%s", names[k]);
    cr_assert_eq(memcmp(a, b, l1), 0, "%s differs between 1 and 3 threads", names[k]);
    free(a);
    free(b);
  }
  cr_assert_eq(s1.rows[0], 2400);
  cr_assert_eq(s1.rows[2], 300);
  cr_assert(s1.bayes_auc > 0.7 && s1.bayes_auc < 0.95, "%f", s1.bayes_auc);
  cr_assert(fabs(s1.positive_rate[0] - 0.25) < 0.05, "%f", s1.positive_rate[0]);
  cr_assert_gt(s1.distinct[2], s1.distinct[8], "field 3 is the largest, field 9 has 3 ids");
  cr_assert_leq(s1.distinct[8], 3);
  size_t ml;
  char *meta = (char *)slurp(d1, "meta.json", &ml);
  meta[ml] = '\0';
  cr_assert(strstr(meta, "\"bayes_auc\""), "%s", meta);
  free(meta);
  /* Gzip gives the same examples. */
  o.gzip = true;
  cr_assert_eq(hs_ctr_generate(d3, &o, NULL), HS_OK, "%s", hs_last_error());
  char *pa = tu_path(d1, "test.txt"), *pb = tu_path(d3, "test.txt.gz");
  const char *a1[1] = {pa}, *b1[1] = {pb};
  hs_ctr_reader *ra, *rb;
  cr_assert_eq(hs__ctr_reader_open(a1, 1, true, &ra), HS_OK);
  cr_assert_eq(hs__ctr_reader_open(b1, 1, true, &rb), HS_OK);
  hs_ctr_rows x, y;
  cr_assert_eq(hs__ctr_rows_alloc(&x, 500), HS_OK);
  cr_assert_eq(hs__ctr_rows_alloc(&y, 500), HS_OK);
  cr_assert_eq(hs__ctr_reader_next(ra, 500, &x), HS_OK, "%s", hs_last_error());
  cr_assert_eq(hs__ctr_reader_next(rb, 500, &y), HS_OK, "%s", hs_last_error());
  cr_assert_eq(x.n, 300);
  cr_assert_eq(y.n, 300);
  cr_assert_eq(memcmp(x.ids, y.ids, 300 * 26 * 8), 0);
  cr_assert_eq(memcmp(x.dense, y.dense, 300 * 13 * 4), 0);
  cr_assert_eq(memcmp(x.labels, y.labels, 300), 0);
  hs__ctr_reader_close(ra);
  hs__ctr_reader_close(rb);
  hs__ctr_rows_free(&x);
  hs__ctr_rows_free(&y);
  /* Refused: an existing destination without force, bad options. */
  o.gzip = false;
  cr_assert_eq(hs_ctr_generate(d1, &o, NULL), HS_ERR_INVALID_ARG);
  o.split_frac[0] = 0.5;
  o.force = true;
  cr_assert_eq(hs_ctr_generate(d1, &o, NULL), HS_ERR_INVALID_ARG);
  cr_assert(strstr(hs_last_error(), "sum"), "%s", hs_last_error());
  free(pa);
  free(pb);
  free(d1);
  free(d2);
  free(d3);
}

/* head_ranks and tail_decay move the planted signal between popular and
 * rare ids and nothing else: the ids and integers stay those of the
 * defaults, the Bayes AUC rises when rare ids keep their full effects and
 * falls when only a small head has them, meta.json records the two when
 * they are not the defaults (and the defaults' meta.json does not name
 * them), and out-of-range values are refused. */
Test(ctr_data, generator_head_and_tail_set_where_the_signal_lies) {
  hs_ctr_generate_opts o;
  hs_ctr_generate_opts_init(&o);
  cr_assert_eq(o.head_ranks, 2000);
  cr_assert_eq(o.tail_decay, 0.5);
  o.rows = 20000;
  o.big_vocab = 200000;
  o.threads = 1;
  char *d[3] = {tu_path(dir, "h_def"), tu_path(dir, "h_flat"), tu_path(dir, "h_steep")};
  hs_ctr_generate_summary s[3];
  for (int k = 0; k < 3; k++) {
    o.head_ranks = k == 2 ? 50 : 2000;
    o.tail_decay = k == 0 ? 0.5 : k == 1 ? 0.0 : 1.5;
    hs_ctr_generate_summary_init(&s[k]);
    cr_assert_eq(hs_ctr_generate(d[k], &o, &s[k]), HS_OK, "%s", hs_last_error());
  }
  cr_assert_gt(s[1].bayes_auc_expected, s[0].bayes_auc_expected + 0.004, "flat %f, default %f",
               s[1].bayes_auc_expected, s[0].bayes_auc_expected);
  cr_assert_lt(s[2].bayes_auc_expected, s[0].bayes_auc_expected - 0.01, "steep %f, default %f",
               s[2].bayes_auc_expected, s[0].bayes_auc_expected);
  /* The same examples but for the labels. */
  hs_ctr_rows x[3];
  for (int k = 0; k < 3; k++) {
    char *p = tu_path(d[k], "train.txt");
    const char *one[1] = {p};
    hs_ctr_reader *r;
    cr_assert_eq(hs__ctr_reader_open(one, 1, true, &r), HS_OK, "%s", hs_last_error());
    cr_assert_eq(hs__ctr_rows_alloc(&x[k], 4000), HS_OK);
    cr_assert_eq(hs__ctr_reader_next(r, 4000, &x[k]), HS_OK, "%s", hs_last_error());
    cr_assert_eq(x[k].n, 4000);
    hs__ctr_reader_close(r);
    free(p);
  }
  for (int k = 1; k < 3; k++) {
    cr_assert_eq(memcmp(x[0].ids, x[k].ids, 4000 * HS_CTR_SPARSE * sizeof *x[0].ids), 0);
    cr_assert_eq(memcmp(x[0].dense, x[k].dense, 4000 * HS_CTR_DENSE * sizeof *x[0].dense), 0);
  }
  cr_assert_neq(memcmp(x[0].labels, x[2].labels, 4000), 0, "the labels follow the effects");
  for (int k = 0; k < 3; k++) hs__ctr_rows_free(&x[k]);
  size_t ml;
  char *meta = (char *)slurp(d[0], "meta.json", &ml);
  meta[ml] = '\0';
  cr_assert(strstr(meta, "min(1, sqrt(2000 / r))") && !strstr(meta, "tail_decay"), "%s", meta);
  free(meta);
  meta = (char *)slurp(d[2], "meta.json", &ml);
  meta[ml] = '\0';
  cr_assert(strstr(meta, "min(1, (50 / r)^1.5)"), "%s", meta);
  cr_assert(strstr(meta, "\"head_ranks\": 50,") && strstr(meta, "\"tail_decay\": 1.5,"), "%s", meta);
  free(meta);
  o.force = true;
  o.head_ranks = 0;
  cr_assert_eq(hs_ctr_generate(d[2], &o, NULL), HS_ERR_INVALID_ARG);
  cr_assert(strstr(hs_last_error(), "0 head ranks"), "%s", hs_last_error());
  o.head_ranks = 50;
  const double bad[3] = {-0.5, 4.5, NAN};
  for (int k = 0; k < 3; k++) {
    o.tail_decay = bad[k];
    cr_assert_eq(hs_ctr_generate(d[2], &o, NULL), HS_ERR_INVALID_ARG, "%g", bad[k]);
    cr_assert(strstr(hs_last_error(), "tail decay"), "%s", hs_last_error());
  }
  for (int k = 0; k < 3; k++) free(d[k]);
}

/* A FIFO as CTR data or as a CTR checkpoint is refused at once, named. */
Test(ctr_data, a_fifo_is_refused_without_blocking, .timeout = 60) {
  char *fifo = tu_path(dir, "train.txt");
  cr_assert_eq(mkfifo(fifo, 0644), 0);
  const char *paths[1] = {fifo};
  hs_ctr_reader *r;
  TU_EXPECT_FAIL(hs__ctr_reader_open(paths, 1, true, &r), HS_ERR_IO, fifo, "",
                 "not a regular file (a FIFO)");
  hs_ctr_config c;
  hs_ctr_config_init(&c);
  TU_EXPECT_FAIL(hs_ctr_config_from_checkpoint(fifo, &c), HS_ERR_IO, fifo, "",
                 "not a regular file (a FIFO)");
  free(fifo);
}

/* Ctrl-C (the stop flag) ends generation with nothing written, neither
 * DST nor its temporary folder beside it; a split without the figures
 * meta.json records (no test rows of both labels, an empty split) writes
 * null, never a NaN, which JSON has no number for. */
Test(ctr_data, generator_stops_cleanly_and_writes_strict_json) {
  hs_ctr_generate_opts o;
  hs_ctr_generate_opts_init(&o);
  o.rows = 3000;
  o.big_vocab = 5000;
  static volatile sig_atomic_t stop = 1;
  o.stop = &stop;
  char *d = tu_path(dir, "stopped");
  hs_ctr_generate_summary s;
  hs_ctr_generate_summary_init(&s);
  TU_EXPECT_FAIL(hs_ctr_generate(d, &o, &s), HS_ERR_INTERRUPTED, "", "", "interrupted");
  DIR *dd = opendir(dir);
  cr_assert(dd);
  for (struct dirent *e; (e = readdir(dd));)
    cr_assert(e->d_name[0] == '.', "%s left in the parent folder", e->d_name);
  closedir(dd);
  /* Only training rows: no valid or test split. */
  o.stop = NULL;
  o.rows = 100;
  o.split_frac[0] = 1;
  o.split_frac[1] = o.split_frac[2] = 0;
  cr_assert_eq(hs_ctr_generate(d, &o, &s), HS_OK, "%s", hs_last_error());
  cr_assert(isnan(s.bayes_auc) && isnan(s.positive_rate[2]));
  size_t len;
  unsigned char *text = slurp(d, "meta.json", &len);
  text[len] = 0;
  hs_json *v = json_doc((const char *)text, "meta.json");
  const hs_json *auc = hs__json_get(v, "bayes_auc");
  cr_assert(auc && auc->type == HS_JSON_NULL);
  const hs_json *rates = hs__json_get(v, "positive_rate");
  cr_assert(rates && hs__json_get(rates, "test")->type == HS_JSON_NULL);
  cr_assert_eq(hs__json_get(rates, "train")->type, HS_JSON_NUMBER);
  hs__json_free(v);
  free(text);
  free(d);
}

/* Plain files are read a piece at a time (runtime/ctr/criteo.c): lines
 * cut by a piece's end, a file several pieces long, and a line longer
 * than a piece, which must still be read whole (its error names its line
 * and column), read as from one buffer. */
Test(ctr_data, a_plain_file_longer_than_a_read_and_a_line_longer_than_one) {
  char *p = tu_path(dir, "long.txt");
  FILE *f = fopen(p, "w");
  cr_assert(f);
  const int n = 6000; /* ~1.2 MB: several reads */
  for (int i = 0; i < n; i++) {
    fprintf(f, "%d", i % 3 == 0);
    for (int j = 0; j < 13; j++) fprintf(f, "\t%d", (i * 7 + j) % 50);
    for (int k = 0; k < 26; k++) fprintf(f, "\t%x", i * 26 + k + 1);
    fputc('\n', f);
  }
  fclose(f);
  hs_ctr_reader *r = open1("long.txt", true);
  hs_ctr_rows rows;
  cr_assert_eq(hs__ctr_rows_alloc(&rows, 777), HS_OK);
  int64_t total = 0;
  for (;;) {
    cr_assert_eq(hs__ctr_reader_next(r, 777, &rows), HS_OK, "%s", hs_last_error());
    if (!rows.n) break;
    for (int i = 0; i < rows.n; i++, total++) {
      cr_assert_eq(rows.labels[i], total % 3 == 0, "line %lld", (long long)total + 1);
      for (int k = 0; k < 26; k++)
        cr_assert_eq(rows.ids[(size_t)i * 26 + k], (uint64_t)(total * 26 + k + 1), "line %lld field %d",
                     (long long)total + 1, k);
      cr_assert_eq(rows.dense[(size_t)i * 13 + 12],
                   hs__ctr_log_transform((int64_t)((total * 7 + 12) % 50)), "line %lld",
                   (long long)total + 1);
    }
  }
  cr_assert_eq(total, n);
  hs__ctr_reader_close(r);
  /* Line 3 has an id of 400,000 digits in column 16. */
  f = fopen(p, "w");
  put_line(f, "0", NULL, NULL);
  put_line(f, "1", NULL, NULL);
  fputs("1", f);
  for (int j = 0; j < 13; j++) fputs("\t5", f);
  fputc('\t', f);
  for (int d = 0; d < 400000; d++) fputc('a', f);
  for (int k = 1; k < 26; k++) fputs("\tb1", f);
  fputc('\n', f);
  put_line(f, "0", NULL, NULL);
  fclose(f);
  r = open1("long.txt", true);
  cr_assert_eq(hs__ctr_reader_next(r, 1, &rows), HS_OK, "%s", hs_last_error());
  cr_assert_eq(hs__ctr_reader_next(r, 1, &rows), HS_OK, "%s", hs_last_error());
  TU_EXPECT_FAIL(hs__ctr_reader_next(r, 1, &rows), HS_ERR_FORMAT, "long.txt:3:", "column 15",
                 "more than 16 hexadecimal digits");
  hs__ctr_reader_close(r);
  hs__ctr_rows_free(&rows);
  free(p);
}

/* --standardize-dense's statistics: each column's mean and 1 / population
 * sd over the batch (a column constant in it keeps its scale, 1), and the
 * transform that uses them. */
Test(ctr_data, dense_statistics_and_standardization) {
  hs_ctr_rows rows;
  cr_assert_eq(hs__ctr_rows_alloc(&rows, 4), HS_OK);
  rows.n = 4;
  const float col0[4] = {0.0f, 1.0f, 2.0f, 5.0f}; /* mean 2, var (4+1+0+9)/4 = 3.5 */
  for (int i = 0; i < 4; i++)
    for (int j = 0; j < HS_CTR_DENSE; j++)
      rows.dense[i * HS_CTR_DENSE + j] = j == 0 ? col0[i] : j == 1 ? 7.0f : (float)(i * j);
  float mu[HS_CTR_DENSE], inv[HS_CTR_DENSE];
  hs__ctr_dense_stats(&rows, mu, inv);
  cr_assert_float_eq(mu[0], 2.0f, 1e-6);
  cr_assert_float_eq(inv[0], (float)(1.0 / sqrt(3.5)), 1e-6);
  cr_assert_eq(mu[1], 7.0f);
  cr_assert_eq(inv[1], 1.0f, "a constant column keeps its scale");
  for (int j = 2; j < HS_CTR_DENSE; j++) { /* 0, j, 2j, 3j: mean 1.5 j, var 1.25 j^2 */
    cr_assert_float_eq(mu[j], 1.5f * (float)j, 1e-5);
    cr_assert_float_eq(inv[j], (float)(1.0 / (sqrt(1.25) * j)), 1e-6);
  }
  hs__ctr_dense_standardize(&rows, mu, inv);
  for (int j = 0; j < HS_CTR_DENSE; j++) {
    double sum = 0, sq = 0;
    for (int i = 0; i < 4; i++) sum += rows.dense[i * HS_CTR_DENSE + j];
    for (int i = 0; i < 4; i++) sq += rows.dense[i * HS_CTR_DENSE + j] * rows.dense[i * HS_CTR_DENSE + j];
    cr_assert_float_eq(sum / 4, 0.0, 1e-6, "column %d mean %g after", j, sum / 4);
    cr_assert_float_eq(sq / 4, j == 1 ? 0.0 : 1.0, 1e-5, "column %d variance %g after", j, sq / 4);
  }
  cr_assert_float_eq(rows.dense[3 * HS_CTR_DENSE], (float)(3.0 / sqrt(3.5)), 1e-6);
  hs__ctr_rows_free(&rows);
}

/* ---- array sets ----------------------------------------------------------- */

/* Every example of `paths` read in batches of `batch` into one set of rows. */
static hs_ctr_rows read_rows(const char *const *paths, int n, bool labels, int32_t batch) {
  hs_ctr_reader *r;
  cr_assert_eq(hs__ctr_reader_open(paths, n, labels, &r), HS_OK, "%s", hs_last_error());
  hs_ctr_rows all, b;
  cr_assert_eq(hs__ctr_rows_alloc(&all, 20000), HS_OK);
  cr_assert_eq(hs__ctr_rows_alloc(&b, batch), HS_OK);
  all.n = 0;
  for (;;) {
    cr_assert_eq(hs__ctr_reader_next(r, batch, &b), HS_OK, "%s", hs_last_error());
    if (!b.n) break;
    cr_assert_leq(all.n + b.n, 20000);
    memcpy(all.labels + all.n, b.labels, (size_t)b.n);
    memcpy(all.dense + (size_t)all.n * HS_CTR_DENSE, b.dense, (size_t)b.n * HS_CTR_DENSE * 4);
    memcpy(all.ids + (size_t)all.n * HS_CTR_SPARSE, b.ids, (size_t)b.n * HS_CTR_SPARSE * 8);
    all.n += b.n;
  }
  cr_expect_eq(hs__ctr_reader_count(r), all.n);
  hs__ctr_rows_free(&b);
  hs__ctr_reader_close(r);
  return all;
}

static void expect_same_rows(const hs_ctr_rows *a, const hs_ctr_rows *b, const char *what) {
  cr_assert_eq(a->n, b->n, "%s: %d examples against %d", what, a->n, b->n);
  cr_expect_eq(memcmp(a->labels, b->labels, (size_t)a->n), 0, "%s: labels differ", what);
  cr_expect_eq(memcmp(a->dense, b->dense, (size_t)a->n * HS_CTR_DENSE * 4), 0,
               "%s: dense values differ", what);
  cr_expect_eq(memcmp(a->ids, b->ids, (size_t)a->n * HS_CTR_SPARSE * 8), 0, "%s: ids differ",
               what);
}

static int tmp_files(void) {
  DIR *d = opendir(dir);
  cr_assert_not_null(d);
  int n = 0;
  for (struct dirent *e; (e = readdir(d));) n += strstr(e->d_name, ".tmp-") != NULL;
  closedir(d);
  return n;
}

Test(ctr_data, an_array_set_reads_as_its_text_does) {
  hs_ctr_generate_opts o;
  hs_ctr_generate_opts_init(&o);
  o.rows = 6000;
  o.big_vocab = 3000;
  o.threads = 1;
  char *g = tu_path(dir, "g"), *train = tu_path(dir, "g/train.txt"),
       *test = tu_path(dir, "g/test.txt"), *prefix = tu_path(dir, "tr");
  cr_assert_eq(hs_ctr_generate(g, &o, NULL), HS_OK, "%s", hs_last_error());
  /* a line with missing values and the id all of whose digits are f's */
  FILE *f = fopen(test, "a");
  const char *ints[13] = {"", "-3", "0", "7", "", "", "", "", "", "", "", "", "123456789"};
  const char *cats[26] = {"", "ffffffffffffffff", "0"};
  for (int k = 3; k < 26; k++) cats[k] = "";
  put_line(f, "1", ints, cats);
  fclose(f);
  int64_t written = -1;
  const char *both[2] = {train, test};
  cr_assert_eq(hs_ctr_write_arrays(both, 2, prefix, NULL, NULL, NULL, &written), HS_OK, "%s",
               hs_last_error());
  hs_ctr_rows text = read_rows(both, 2, true, 4096);
  cr_expect_eq(written, text.n);
  cr_expect_eq(text.ids[(size_t)(text.n - 1) * HS_CTR_SPARSE], HS_CTR_MISSING);
  cr_expect_eq(text.ids[(size_t)(text.n - 1) * HS_CTR_SPARSE + 1], HS_CTR_MISSING);
  cr_expect_eq(tmp_files(), 0);
  /* each of the three names names the set; odd batch sizes cut it anywhere */
  const char *suffix[3] = {"_label.npy", "_dense.npy", "_ids.npy"};
  const int32_t batch[3] = {4096, 777, 1};
  for (int k = 0; k < 3; k++) {
    char p[4200];
    snprintf(p, sizeof p, "%s%s", prefix, suffix[k]);
    const char *one[1] = {p};
    hs_ctr_rows arr = read_rows(one, 1, true, batch[k]);
    expect_same_rows(&text, &arr, suffix[k]);
    hs__ctr_rows_free(&arr);
  }
  /* a set between text files, without labels: read as the text is */
  char ids[4200];
  snprintf(ids, sizeof ids, "%s_ids.npy", prefix);
  const char *mixed[3] = {test, ids, test};
  hs_ctr_rows m = read_rows(mixed, 3, true, 1000);
  int32_t nt = m.n - text.n;
  cr_assert_eq(nt % 2, 0);
  cr_expect_eq(memcmp(m.ids + (size_t)nt / 2 * HS_CTR_SPARSE, text.ids,
                      (size_t)text.n * HS_CTR_SPARSE * 8), 0);
  hs__ctr_rows_free(&m);
  char lab[4200];
  snprintf(lab, sizeof lab, "%s_label.npy", prefix);
  cr_assert_eq(remove(lab), 0);
  const char *nolab[1] = {ids};
  hs_ctr_rows u = read_rows(nolab, 1, false, 999);
  cr_assert_eq(u.n, text.n);
  for (int32_t i = 0; i < u.n; i++) cr_assert_eq(u.labels[i], HS_CTR_NO_LABEL);
  cr_expect_eq(memcmp(u.dense, text.dense, (size_t)u.n * HS_CTR_DENSE * 4), 0);
  hs__ctr_rows_free(&u);
  /* with labels wanted, the missing label file is an error naming it */
  hs_ctr_reader *r;
  cr_expect_neq(hs__ctr_reader_open(nolab, 1, true, &r), HS_OK);
  cr_expect(strstr(hs_last_error(), "tr_label.npy") != NULL, "%s", hs_last_error());
  hs__ctr_rows_free(&text);
  free(g), free(train), free(test), free(prefix);
}

static void expect_set_refused(const char *name, bool at_open, const char *what1,
                               const char *what2) {
  char *p = tu_path(dir, name);
  const char *paths[1] = {p};
  hs_ctr_reader *r;
  hs_status st = hs__ctr_reader_open(paths, 1, true, &r);
  if (!at_open) {
    cr_assert_eq(st, HS_OK, "%s", hs_last_error());
    hs_ctr_rows b;
    cr_assert_eq(hs__ctr_rows_alloc(&b, 64), HS_OK);
    while ((st = hs__ctr_reader_next(r, 64, &b)) == HS_OK && b.n) {
    }
    hs__ctr_rows_free(&b);
    hs__ctr_reader_close(r);
  }
  cr_expect_eq(st, HS_ERR_FORMAT, "%s: %s", name, hs_last_error());
  cr_expect(strstr(hs_last_error(), what1) != NULL, "%s: '%s' lacks '%s'", name, hs_last_error(),
            what1);
  cr_expect(strstr(hs_last_error(), what2) != NULL, "%s: '%s' lacks '%s'", name, hs_last_error(),
            what2);
  free(p);
}

/* A set written by another program: [N, 1] labels and int32 ids are read
 * too; wrong values, types, shapes and lengths are refused with the file
 * and the example. */
Test(ctr_data, array_sets_from_elsewhere_and_their_errors) {
  enum { N = 100 };
  int32_t lab[N], ids32[N * HS_CTR_SPARSE];
  float dense[N * HS_CTR_DENSE];
  int64_t ids64[N * HS_CTR_SPARSE];
  for (int i = 0; i < N; i++) lab[i] = i % 3 == 0;
  for (int i = 0; i < N * HS_CTR_DENSE; i++) dense[i] = (float)i * 0.25f - 7.0f;
  for (int i = 0; i < N * HS_CTR_SPARSE; i++) ids32[i] = i % 5 == 0 ? -1 : i * 7919;
  for (int i = 0; i < N * HS_CTR_SPARSE; i++) ids64[i] = ids32[i];
  uint64_t s1[2] = {N, 1}, sd[2] = {N, HS_CTR_DENSE}, si[2] = {N, HS_CTR_SPARSE};
  char *p;
#define PUT(name, dt, nd, shape, data)                                              \
  do {                                                                             \
    p = tu_path(dir, name);                                                        \
    cr_assert_eq(hs__npy_write(p, dt, nd, shape, data), HS_OK, "%s", hs_last_error()); \
    free(p);                                                                       \
  } while (0)
  PUT("a_label.npy", HS_DTYPE_INT32, 2, s1, lab);
  PUT("a_dense.npy", HS_DTYPE_FLOAT32, 2, sd, dense);
  PUT("a_ids.npy", HS_DTYPE_INT32, 2, si, ids32);
  PUT("b_label.npy", HS_DTYPE_INT32, 1, s1, lab);
  PUT("b_dense.npy", HS_DTYPE_FLOAT32, 2, sd, dense);
  PUT("b_ids.npy", HS_DTYPE_INT64, 2, si, ids64);
  char *a = tu_path(dir, "a_dense.npy"), *b = tu_path(dir, "b_ids.npy");
  const char *pa[1] = {a}, *pb[1] = {b};
  hs_ctr_rows ra = read_rows(pa, 1, true, 33), rb = read_rows(pb, 1, true, 64);
  expect_same_rows(&ra, &rb, "int32 against int64 ids");
  cr_assert_eq(ra.n, N);
  cr_expect_eq(ra.labels[3], 1);
  cr_expect_eq(ra.labels[4], 0);
  cr_expect_eq(ra.ids[0], HS_CTR_MISSING);
  cr_expect_eq(ra.ids[1], 7919u);
  cr_expect_eq(ra.dense[5], -5.75f);
  hs__ctr_rows_free(&ra);
  hs__ctr_rows_free(&rb);
  free(a), free(b);
  /* a label that is not 0 or 1 */
  lab[70] = 2;
  PUT("c_label.npy", HS_DTYPE_INT32, 1, s1, lab);
  PUT("c_dense.npy", HS_DTYPE_FLOAT32, 2, sd, dense);
  PUT("c_ids.npy", HS_DTYPE_INT64, 2, si, ids64);
  expect_set_refused("c_ids.npy", false, "c_label.npy: example 70", "label 2");
  lab[70] = 0;
  /* a dense value that is not finite */
  dense[41 * HS_CTR_DENSE + 6] = NAN;
  PUT("d_label.npy", HS_DTYPE_INT32, 1, s1, lab);
  PUT("d_dense.npy", HS_DTYPE_FLOAT32, 2, sd, dense);
  PUT("d_ids.npy", HS_DTYPE_INT64, 2, si, ids64);
  expect_set_refused("d_label.npy", false, "d_dense.npy: example 41, column 6", "not a finite");
  dense[41 * HS_CTR_DENSE + 6] = 0;
  /* float ids; 12 dense columns; fewer ids than labels */
  uint64_t s12[2] = {N, 12}, s99[2] = {N - 1, HS_CTR_SPARSE};
  PUT("e_label.npy", HS_DTYPE_INT32, 1, s1, lab);
  PUT("e_dense.npy", HS_DTYPE_FLOAT32, 2, sd, dense);
  PUT("e_ids.npy", HS_DTYPE_FLOAT32, 2, si, ids32);
  expect_set_refused("e_label.npy", true, "e_ids.npy", "dtype");
  PUT("f_label.npy", HS_DTYPE_INT32, 1, s1, lab);
  PUT("f_dense.npy", HS_DTYPE_FLOAT32, 2, s12, dense);
  PUT("f_ids.npy", HS_DTYPE_INT64, 2, si, ids64);
  expect_set_refused("f_label.npy", true, "f_dense.npy", "expected (N, 13)");
  PUT("g_label.npy", HS_DTYPE_INT32, 1, s1, lab);
  PUT("g_dense.npy", HS_DTYPE_FLOAT32, 2, sd, dense);
  PUT("g_ids.npy", HS_DTYPE_INT64, 2, s99, ids64);
  expect_set_refused("g_label.npy", true, "g_ids.npy: 99 examples", "has 100");
#undef PUT
}

Test(ctr_data, writing_an_array_set_leaves_nothing_behind_on_failure) {
  char *t = tu_path(dir, "t.txt"), *prefix = tu_path(dir, "s");
  FILE *f = fopen(t, "w");
  for (int i = 0; i < 50; i++) put_line(f, i % 2 ? "1" : "0", NULL, NULL);
  fputs("1\t2\n", f); /* line 51: two columns */
  fclose(f);
  const char *paths[1] = {t};
  int64_t n = -1;
  cr_expect_eq(hs_ctr_write_arrays(paths, 1, prefix, NULL, NULL, NULL, &n), HS_ERR_FORMAT);
  cr_expect(strstr(hs_last_error(), "t.txt:51") != NULL, "%s", hs_last_error());
  cr_expect_eq(n, 0);
  cr_expect(!tu_exists(dir, "s_label.npy") && !tu_exists(dir, "s_ids.npy"));
  cr_expect_eq(tmp_files(), 0);
  /* an existing file of the set stays as it was */
  f = fopen(t, "w");
  for (int i = 0; i < 50; i++) put_line(f, i % 2 ? "1" : "0", NULL, NULL);
  fclose(f);
  tu_write_bytes(dir, "s_dense.npy", "mine", 4);
  cr_expect_eq(hs_ctr_write_arrays(paths, 1, prefix, NULL, NULL, NULL, &n), HS_ERR_IO);
  cr_expect(strstr(hs_last_error(), "s_dense.npy exists") != NULL, "%s", hs_last_error());
  cr_expect(!tu_exists(dir, "s_label.npy") && !tu_exists(dir, "s_ids.npy"));
  cr_expect_eq(tmp_files(), 0);
  /* stopped: nothing */
  volatile sig_atomic_t stop = 1;
  char *mine = tu_path(dir, "s_dense.npy");
  cr_assert_eq(remove(mine), 0);
  free(mine);
  cr_expect_eq(hs_ctr_write_arrays(paths, 1, prefix, NULL, NULL, &stop, &n), HS_ERR_INTERRUPTED);
  cr_expect(!tu_exists(dir, "s_label.npy") && !tu_exists(dir, "s_dense.npy"));
  cr_expect_eq(tmp_files(), 0);
  stop = 0;
  cr_expect_eq(hs_ctr_write_arrays(paths, 1, prefix, NULL, NULL, &stop, &n), HS_OK, "%s",
               hs_last_error());
  cr_expect_eq(n, 50);
  free(t), free(prefix);
}
