/* Checkpoints: round trip, resume reproduces the uninterrupted run, and
 * every kind of bad file is refused with the file named. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "nn/checkpoint.h"
#include "nn/model_ops.h"
#include "nn/ref_nn.h"
#include "nn_fixtures.h"

static char dir[256];
static char path[300];

static void setup(void) {
  snprintf(dir, sizeof dir, "/tmp/hs-ckpt-XXXXXX");
  cr_assert(mkdtemp(dir), "mkdtemp");
  snprintf(path, sizeof path, "%s/model.ckpt", dir);
}

static void teardown(void) {
  DIR *d = opendir(dir);
  if (!d) return;
  struct dirent *e;
  char p[600];
  while ((e = readdir(d)))
    if (e->d_name[0] != '.') {
      snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
      unlink(p);
    }
  closedir(d);
  rmdir(dir);
}

TestSuite(checkpoint, .init = setup, .fini = teardown);

static void make_model(hs_model *m, int hidden, hs_optim_kind kind, uint64_t seed) {
  hs_model_cfg cfg;
  hs__model_cfg_defaults(&cfg);
  cfg.in_dim = 5;
  cfg.hidden = hidden;
  cfg.n_classes = 3;
  cfg.seed = seed;
  cfg.dropout = 0.3f;
  cfg.optim.kind = kind;
  cr_assert_eq(hs__model_create(&cfg, m), HS_OK, "%s", hs_last_error());
}

/* A few training steps so that the moments are not zero. */
static void train(hs_model *m, uint32_t first, uint32_t n) {
  int fan[2] = {3, 2};
  for (uint32_t b = first; b < first + n; b++) {
    fx_batch fb;
    fx_batch_make(&fb, 2, 6, fan, 5, 3, 100 + b);
    hs_nn_batch batch = fx_batch_view(&fb);
    cr_assert_eq(hs__ref_train_step(m, &batch, 0, b, NULL), HS_OK, "%s", hs_last_error());
    m->rng_counter = b + 1;
    fx_batch_free(&fb);
  }
}

static unsigned char *slurp(size_t *size) {
  FILE *f = fopen(path, "rb");
  cr_assert(f);
  fseek(f, 0, SEEK_END);
  *size = (size_t)ftell(f);
  fseek(f, 0, SEEK_SET);
  unsigned char *buf = malloc(*size);
  cr_assert_eq(fread(buf, 1, *size, f), *size);
  fclose(f);
  return buf;
}

static void spill(const unsigned char *buf, size_t size) {
  FILE *f = fopen(path, "wb");
  cr_assert(f);
  cr_assert_eq(fwrite(buf, 1, size, f), size);
  fclose(f);
}

/* Re-seal the CRC after an edit, so that a later check is what fires. */
static void reseal(unsigned char *buf, size_t size) {
  uint32_t crc = (uint32_t)crc32(0L, buf, (uInt)(size - 4));
  for (int i = 0; i < 4; i++) buf[size - 4 + i] = (unsigned char)(crc >> (8 * i));
}

static int count_files(void) {
  DIR *d = opendir(dir);
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d)))
    if (e->d_name[0] != '.') n++;
  closedir(d);
  return n;
}

/* Loading must be refused with `st`, name the file and say `why`, and
 * leave the model untouched. */
static void expect_refused(hs_status st, const char *why) {
  hs_model m;
  make_model(&m, 4, HS_OPTIM_ADAM, 1);
  float first = m.params[0];
  cr_expect_eq(hs__checkpoint_load(path, &m), st, "got %s", hs_last_error());
  cr_expect(strstr(hs_last_error(), path), "message names the file: %s", hs_last_error());
  cr_expect(strstr(hs_last_error(), why), "message says '%s': %s", why, hs_last_error());
  cr_expect_eq(m.params[0], first);
  cr_expect_eq(m.step, 0u);
  hs__model_destroy(&m);
}

Test(checkpoint, round_trip_restores_everything) {
  hs_model a, b;
  make_model(&a, 4, HS_OPTIM_ADAM, 7);
  train(&a, 0, 3);
  a.epoch = 2;
  cr_assert_eq(hs__checkpoint_save(&a, path), HS_OK, "%s", hs_last_error());
  cr_expect_eq(count_files(), 1, "no temporary file is left behind");
  size_t size;
  free(slurp(&size));
  cr_expect_eq(size, 144 + 3 * 4 * a.shape.n_params + 4);

  make_model(&b, 4, HS_OPTIM_ADAM, 99);
  cr_assert_eq(hs__checkpoint_load(path, &b), HS_OK, "%s", hs_last_error());
  size_t n = a.shape.n_params;
  cr_expect_arr_eq(b.params, a.params, n * sizeof(float));
  cr_expect_arr_eq(b.m, a.m, n * sizeof(float));
  cr_expect_arr_eq(b.v, a.v, n * sizeof(float));
  cr_expect_eq(b.step, 3u);
  cr_expect_eq(b.epoch, 2u);
  cr_expect_eq(b.rng_counter, 3u);
  cr_expect_eq(b.cfg.seed, 7u);

  hs_model_cfg cfg;
  cr_assert_eq(hs__checkpoint_read_cfg(path, &cfg), HS_OK);
  cr_expect_eq(cfg.kind, HS_NN_SAGE);
  cr_expect_eq(cfg.heads, 1);
  cr_expect_eq(cfg.in_dim, 5);
  cr_expect_eq(cfg.hidden, 4);
  cr_expect_eq(cfg.n_classes, 3);
  cr_expect_eq(cfg.n_layers, 2);
  cr_expect_eq(cfg.optim.kind, HS_OPTIM_ADAM);
  cr_expect_float_eq(cfg.dropout, 0.3f, 0.0f);
  hs__model_destroy(&a);
  hs__model_destroy(&b);
}

Test(checkpoint, resumed_training_matches_uninterrupted) {
  hs_model a, b;
  make_model(&a, 4, HS_OPTIM_ADAM, 3);
  train(&a, 0, 2);
  cr_assert_eq(hs__checkpoint_save(&a, path), HS_OK);
  train(&a, 2, 2);
  make_model(&b, 4, HS_OPTIM_ADAM, 3);
  cr_assert_eq(hs__checkpoint_load(path, &b), HS_OK);
  train(&b, (uint32_t)b.rng_counter, 2);
  cr_expect_arr_eq(b.params, a.params, a.shape.n_params * sizeof(float));
  cr_expect_eq(b.step, a.step);
  hs__model_destroy(&a);
  hs__model_destroy(&b);
}

Test(checkpoint, overwrite_replaces_the_old_file) {
  hs_model a;
  make_model(&a, 4, HS_OPTIM_SGD, 3);
  cr_assert_eq(hs__checkpoint_save(&a, path), HS_OK);
  train(&a, 0, 1);
  cr_assert_eq(hs__checkpoint_save(&a, path), HS_OK);
  hs_model b;
  make_model(&b, 4, HS_OPTIM_SGD, 3);
  cr_assert_eq(hs__checkpoint_load(path, &b), HS_OK);
  cr_expect_eq(b.step, 1u);
  cr_expect_eq(count_files(), 1);
  hs__model_destroy(&a);
  hs__model_destroy(&b);
}

Test(checkpoint, truncated_files_are_refused) {
  hs_model a;
  make_model(&a, 4, HS_OPTIM_ADAM, 1);
  cr_assert_eq(hs__checkpoint_save(&a, path), HS_OK);
  size_t size;
  unsigned char *buf = slurp(&size);
  size_t cuts[] = {0, 6, 40, 200, size - 1};
  for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++) {
    spill(buf, cuts[i]);
    expect_refused(HS_ERR_FORMAT, "truncated");
  }
  free(buf);
  hs__model_destroy(&a);
}

Test(checkpoint, foreign_files_are_refused) {
  const char text[] = "label,feature\n1,0.5\n2,0.25\n";
  spill((const unsigned char *)text, sizeof text - 1);
  expect_refused(HS_ERR_FORMAT, "not a hetsage checkpoint");
  /* A NumPy file is not one either. */
  unsigned char npy[160] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0};
  spill(npy, sizeof npy);
  expect_refused(HS_ERR_FORMAT, "bad magic");
}

Test(checkpoint, other_versions_are_refused) {
  hs_model a;
  make_model(&a, 4, HS_OPTIM_ADAM, 1);
  cr_assert_eq(hs__checkpoint_save(&a, path), HS_OK);
  size_t size;
  unsigned char *buf = slurp(&size);
  buf[8] = 3;
  reseal(buf, size);
  spill(buf, size);
  expect_refused(HS_ERR_UNSUPPORTED, "version 3");
  free(buf);
  hs__model_destroy(&a);
}

Test(checkpoint, corrupted_bytes_fail_the_checksum) {
  hs_model a;
  make_model(&a, 4, HS_OPTIM_ADAM, 1);
  cr_assert_eq(hs__checkpoint_save(&a, path), HS_OK);
  size_t size;
  unsigned char *buf = slurp(&size);
  buf[200] ^= 0x10; /* one bit of one parameter */
  spill(buf, size);
  expect_refused(HS_ERR_CHECKSUM, "checksum mismatch");
  buf[200] ^= 0x10;
  buf[size - 1] ^= 0xff; /* the checksum itself */
  spill(buf, size);
  expect_refused(HS_ERR_CHECKSUM, "checksum mismatch");
  free(buf);
  hs__model_destroy(&a);
}

Test(checkpoint, inconsistent_header_and_trailing_bytes_are_refused) {
  hs_model a;
  make_model(&a, 4, HS_OPTIM_ADAM, 1);
  cr_assert_eq(hs__checkpoint_save(&a, path), HS_OK);
  size_t size;
  unsigned char *buf = slurp(&size);
  unsigned char *longer = calloc(1, size + 8);
  memcpy(longer, buf, size);
  spill(longer, size + 8);
  expect_refused(HS_ERR_FORMAT, "after the end");
  buf[136] += 1; /* n_params */
  reseal(buf, size);
  spill(buf, size);
  expect_refused(HS_ERR_FORMAT, "parameters");
  free(buf);
  free(longer);
  hs__model_destroy(&a);
}

static void put32(unsigned char *p, uint32_t v) {
  for (int i = 0; i < 4; i++) p[i] = (unsigned char)(v >> (8 * i));
}

/* A file of version 1 (GraphSAGE, the fixed part at its old offsets, the
 * parameters at byte 128), as earlier builds wrote it, still loads. */
Test(checkpoint, version_1_files_still_load) {
  hs_model a, b;
  make_model(&a, 4, HS_OPTIM_ADAM, 5);
  train(&a, 0, 2);
  cr_assert_eq(hs__checkpoint_save(&a, path), HS_OK);
  size_t size;
  unsigned char *v2 = slurp(&size);
  size_t body = size - 144 - 4, v1_size = 128 + body + 4;
  unsigned char *v1 = calloc(1, v1_size);
  memcpy(v1, v2, 8);
  put32(v1 + 8, 1);
  memcpy(v1 + 12, v2 + 24, 4 + 36);   /* n_layers, dims */
  memcpy(v1 + 52, v2 + 64, 8 + 28);   /* optimizer, weight decay mode, hyper-parameters */
  memcpy(v1 + 88, v2 + 104, 40);      /* seed, step, epoch, position, n_params */
  memcpy(v1 + 128, v2 + 144, body);
  reseal(v1, v1_size);
  spill(v1, v1_size);
  make_model(&b, 4, HS_OPTIM_ADAM, 99);
  cr_assert_eq(hs__checkpoint_load(path, &b), HS_OK, "%s", hs_last_error());
  cr_expect_arr_eq(b.params, a.params, a.shape.n_params * sizeof(float));
  cr_expect_arr_eq(b.v, a.v, a.shape.n_params * sizeof(float));
  cr_expect_eq(b.step, a.step);
  cr_expect_eq(b.cfg.seed, 5u);
  free(v1);
  free(v2);
  hs__model_destroy(&a);
  hs__model_destroy(&b);
}

/* Records between the fixed part and the parameters: an optional one (tag
 * bit 31) is skipped, any other unknown one refused by name. */
Test(checkpoint, records_are_skipped_only_when_optional) {
  hs_model a, b;
  make_model(&a, 4, HS_OPTIM_ADAM, 5);
  cr_assert_eq(hs__checkpoint_save(&a, path), HS_OK);
  size_t size;
  unsigned char *buf = slurp(&size);
  size_t grown = size + 16;
  unsigned char *rec = calloc(1, grown);
  memcpy(rec, buf, 144);
  put32(rec + 12, 160);
  put32(rec + 144, 0x80000007u); /* optional */
  put32(rec + 148, 5);           /* 5 bytes, padded to 8 */
  memcpy(rec + 152, "hello", 5);
  memcpy(rec + 160, buf + 144, size - 144);
  reseal(rec, grown);
  spill(rec, grown);
  make_model(&b, 4, HS_OPTIM_ADAM, 99);
  cr_assert_eq(hs__checkpoint_load(path, &b), HS_OK, "%s", hs_last_error());
  cr_expect_arr_eq(b.params, a.params, a.shape.n_params * sizeof(float));
  hs__model_destroy(&b);
  put32(rec + 144, 7); /* the same record, not optional */
  reseal(rec, grown);
  spill(rec, grown);
  expect_refused(HS_ERR_FORMAT, "record 00000007 is unknown");
  put32(rec + 148, 64); /* longer than the header */
  reseal(rec, grown);
  spill(rec, grown);
  expect_refused(HS_ERR_FORMAT, "runs past");
  put32(rec + 12, 146); /* not a multiple of 4 */
  reseal(rec, grown);
  spill(rec, grown);
  expect_refused(HS_ERR_FORMAT, "header of 146 bytes");
  free(rec);
  free(buf);
  hs__model_destroy(&a);
}

/* A checkpoint names its model: loading it into another kind is refused
 * with both named, even where the parameter counts agree. */
Test(checkpoint, other_model_kinds_are_refused) {
  for (int a = 0; a < HS_NN_KIND_COUNT_; a++)
    for (int b = 0; b < HS_NN_KIND_COUNT_; b++) {
      if (a == b || !hs__model_ops(a) || !hs__model_ops(b)) continue;
      hs_model_cfg cfg;
      hs__model_cfg_defaults(&cfg);
      cfg.in_dim = 5;
      cfg.hidden = 4;
      cfg.n_classes = 3;
      cfg.heads = 2;
      cfg.kind = (hs_nn_kind)a;
      hs_model ma, mb;
      cr_assert_eq(hs__model_create(&cfg, &ma), HS_OK, "%s", hs_last_error());
      cr_assert_eq(hs__checkpoint_save(&ma, path), HS_OK);
      hs_model_cfg read;
      cr_assert_eq(hs__checkpoint_read_cfg(path, &read), HS_OK);
      cr_expect_eq(read.kind, (hs_nn_kind)a);
      cfg.kind = (hs_nn_kind)b;
      cr_assert_eq(hs__model_create(&cfg, &mb), HS_OK, "%s", hs_last_error());
      float first = mb.params[0];
      cr_expect_eq(hs__checkpoint_load(path, &mb), HS_ERR_INVALID_ARG);
      char want[96];
      snprintf(want, sizeof want, "holds a %s", hs__nn_kind_name(a));
      cr_expect(strstr(hs_last_error(), want), "%s", hs_last_error());
      cr_expect(strstr(hs_last_error(), hs__nn_kind_name(b)), "%s", hs_last_error());
      cr_expect(strstr(hs_last_error(), path), "%s", hs_last_error());
      cr_expect_eq(mb.params[0], first);
      hs__model_destroy(&ma);
      hs__model_destroy(&mb);
    }
}

Test(checkpoint, shape_and_optimizer_mismatches_are_refused) {
  hs_model a;
  make_model(&a, 8, HS_OPTIM_ADAM, 1);
  cr_assert_eq(hs__checkpoint_save(&a, path), HS_OK);
  expect_refused(HS_ERR_INVALID_ARG, "shape mismatch: the checkpoint has layer widths 5-8-3, the model 5-4-3");
  hs__model_destroy(&a);
  make_model(&a, 4, HS_OPTIM_SGD, 1);
  cr_assert_eq(hs__checkpoint_save(&a, path), HS_OK);
  expect_refused(HS_ERR_INVALID_ARG, "optimizer mismatch");
  hs__model_destroy(&a);
}

Test(checkpoint, unwritable_or_missing_paths_fail_cleanly) {
  hs_model a;
  make_model(&a, 4, HS_OPTIM_ADAM, 1);
  char bad[400];
  snprintf(bad, sizeof bad, "%s/no-such-dir/model.ckpt", dir);
  cr_expect_eq(hs__checkpoint_save(&a, bad), HS_ERR_IO);
  cr_expect(strstr(hs_last_error(), bad));
  cr_expect_eq(hs__checkpoint_load(bad, &a), HS_ERR_IO);
  cr_expect(strstr(hs_last_error(), "cannot open"));
  cr_expect_eq(count_files(), 0);
  hs__model_destroy(&a);
}
