/* Checkpoints: round trip, resume reproduces the uninterrupted run, and
 * every kind of bad file is refused with the file named. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <math.h>
#include <fcntl.h>
#include <sys/file.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "hetsage/session.h"
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

/* A save removes the temporaries of saves that were killed (nobody holds
 * their lock), never one a save in progress holds; the file gets the
 * umask's mode. */
Test(checkpoint, save_sweeps_stale_temporaries_and_keeps_live_ones) {
  hs_model m;
  make_model(&m, 4, HS_OPTIM_ADAM, 1);
  char stale[400], live[400], other[400];
  snprintf(stale, sizeof stale, "%s.tmp.Ab3xY9", path);
  snprintf(live, sizeof live, "%s.tmp.Live01", path);
  snprintf(other, sizeof other, "%s.tmp.notours", path); /* not our naming: 7 characters */
  FILE *f = fopen(stale, "wb");
  cr_assert(f);
  fputs("half a checkpoint", f);
  fclose(f);
  int lfd = open(live, O_RDWR | O_CREAT, 0600);
  cr_assert(lfd >= 0);
  cr_assert_eq(flock(lfd, LOCK_EX), 0);
  f = fopen(other, "wb");
  cr_assert(f);
  fclose(f);
  mode_t old = umask(027);
  cr_assert_eq(hs__checkpoint_save(&m, path), HS_OK, "%s", hs_last_error());
  umask(old);
  struct stat sb;
  cr_expect_neq(stat(stale, &sb), 0, "the stale temporary is still there");
  cr_expect_eq(stat(live, &sb), 0, "a temporary in use was removed");
  cr_expect_eq(stat(other, &sb), 0, "a file not of our naming was removed");
  cr_assert_eq(stat(path, &sb), 0);
  cr_expect_eq(sb.st_mode & 0777, 0640, "mode %o, the umask gives 0640", sb.st_mode & 0777);
  close(lfd);
  unlink(live);
  unlink(other);
  hs__model_destroy(&m);
}

/* Little-endian stores into a file image. */
static void poke_u32(unsigned char *p, uint32_t v) {
  for (int i = 0; i < 4; i++) p[i] = (unsigned char)(v >> (8 * i));
}
static void poke_u64(unsigned char *p, uint64_t v) {
  for (int i = 0; i < 8; i++) p[i] = (unsigned char)(v >> (8 * i));
}
static void poke_f32(unsigned char *p, float f) {
  uint32_t v;
  memcpy(&v, &f, 4);
  poke_u32(p, v);
}

/* A training run's records: 3 epochs of 4 batches (7 seeds in batches of
 * 2), threshold sampling with a budget of 4 vertices, 2 GEMM threads. */
static hs_ckpt_run sample_run(void) {
  hs_ckpt_run r = {.set = true, .n_layers = 2, .fanouts = {3, -1}, .batch_size = 2,
                   .order = 0, .n_vertices = 10, .n_edges = 30, .n_train = 7,
                   .sampling_set = true, .sampling = HS_SAMPLING_THRESHOLD, .replace = false,
                   .vertex_budget = 4, .thresholds = {0.25f, 0.5f},
                   .gemm_set = true, .gemm_threads = 2};
  return r;
}

/* Save a model at epoch 1, batch 1 (step 5 = 1 x 4 + 1), with the run's
 * records; the image comes back in *size bytes. */
static unsigned char *saved_run(size_t *size) {
  hs_model a;
  make_model(&a, 4, HS_OPTIM_ADAM, 3);
  a.epoch = 1;
  a.rng_counter = 1;
  a.step = 5;
  hs_ckpt_run r = sample_run();
  cr_assert_eq(hs__checkpoint_save_run(&a, &r, path), HS_OK, "%s", hs_last_error());
  hs__model_destroy(&a);
  return slurp(size);
}

/* The image with `edit` applied and the CRC resealed is refused, the
 * message naming `why`. */
static void expect_crafted_refused(void (*edit)(unsigned char *buf), const char *why) {
  size_t size;
  unsigned char *buf = saved_run(&size);
  edit(buf);
  reseal(buf, size);
  spill(buf, size);
  free(buf);
  expect_refused(HS_ERR_FORMAT, why);
  hs_model_cfg cfg;
  cr_expect_eq(hs__checkpoint_read_cfg(path, &cfg), HS_ERR_FORMAT, "read_cfg accepted: %s",
               hs_last_error());
}

/* Offsets of format 2 (checkpoint.h). */
enum { AT_OPTIM = 64, AT_WD = 68, AT_HYPER = 72, AT_SEED = 104, AT_STEP = 112, AT_EPOCH = 120,
       AT_POS = 128, AT_RECORDS = 144 };

static void epoch_huge(unsigned char *b) { poke_u64(b + AT_EPOCH, (uint64_t)1 << 62); }
static void step_max(unsigned char *b) { poke_u64(b + AT_STEP, UINT64_MAX); }
static void step_off(unsigned char *b) { poke_u64(b + AT_STEP, 6); }
static void pos_huge(unsigned char *b) { poke_u64(b + AT_POS, (uint64_t)1 << 40); }
static void optim_9(unsigned char *b) { poke_u32(b + AT_OPTIM, 9); }
static void wd_mode_7(unsigned char *b) { poke_u32(b + AT_WD, 7); }
static void lr_inf(unsigned char *b) { poke_f32(b + AT_HYPER, INFINITY); }
static void lr_neg(unsigned char *b) { poke_f32(b + AT_HYPER, -0.1f); }
static void wd_nan(unsigned char *b) { poke_f32(b + AT_HYPER + 4, NAN); }
static void beta2_one(unsigned char *b) { poke_f32(b + AT_HYPER + 12, 1.0f); }
static void eps_zero(unsigned char *b) { poke_f32(b + AT_HYPER + 16, 0.0f); }
static void dropout_two(unsigned char *b) { poke_f32(b + AT_HYPER + 24, 2.0f); }
/* Records: FANO (8 + 12 bytes), then BTCH, ORDR, DATA. */
static void fanout_zero(unsigned char *b) { poke_u32(b + AT_RECORDS + 12, 0); }
static void batch_zero(unsigned char *b) { poke_u32(b + AT_RECORDS + 20 + 8, 0); }
static void order_5(unsigned char *b) { poke_u32(b + AT_RECORDS + 20 + 12 + 8, 5); }
static void train_over_n(unsigned char *b) {
  poke_u64(b + AT_RECORDS + 20 + 12 + 28 + 8 + 16, 11);
}
static void record_dropped(unsigned char *b) { /* BTCH becomes an optional unknown record */
  poke_u32(b + AT_RECORDS + 20, 0x80000001u);
}
/* SMPL (8 + 28 bytes: mode, replace, budget, n, two thresholds) after
 * DATA, then GEMM (8 + 4). */
enum { AT_SMPL = AT_RECORDS + 20 + 12 + 28 + 32 + 8, AT_GEMM = AT_SMPL + 28 + 8 };
static void mode_3(unsigned char *b) { poke_u32(b + AT_SMPL, 3); }
static void replace_2(unsigned char *b) { poke_u32(b + AT_SMPL + 4, 2); }
static void replace_threshold(unsigned char *b) { poke_u32(b + AT_SMPL + 4, 1); }
static void budget_neg(unsigned char *b) { poke_u64(b + AT_SMPL + 8, UINT64_MAX); }
static void budget_below_batch(unsigned char *b) { poke_u64(b + AT_SMPL + 8, 1); }
static void thresholds_3(unsigned char *b) { poke_u32(b + AT_SMPL + 16, 3); }
static void threshold_nan(unsigned char *b) { poke_f32(b + AT_SMPL + 24, NAN); }
static void weighted_with_thresholds(unsigned char *b) {
  poke_u32(b + AT_SMPL, HS_SAMPLING_WEIGHTED);
}
static void gemm_5000(unsigned char *b) { poke_u32(b + AT_GEMM, 5000); }
static void smpl_repeated(unsigned char *b) { /* GEMM's tag becomes SMPL's */
  memcpy(b + AT_GEMM - 8, b + AT_SMPL - 8, 4);
}

Test(checkpoint, every_header_field_is_range_checked) {
  expect_crafted_refused(epoch_huge, "epoch 4611686018427387904");
  expect_crafted_refused(step_max, "step 18446744073709551615");
  expect_crafted_refused(step_off, "step 6, epoch 1 and batch 1 disagree");
  expect_crafted_refused(pos_huge, "batch 1099511627776");
  expect_crafted_refused(optim_9, "optimizer kind 9");
  expect_crafted_refused(wd_mode_7, "weight decay mode 7");
  expect_crafted_refused(lr_inf, "learning rate inf");
  expect_crafted_refused(lr_neg, "learning rate -0.1");
  expect_crafted_refused(wd_nan, "weight decay nan");
  expect_crafted_refused(beta2_one, "beta2 1");
  expect_crafted_refused(eps_zero, "eps 0");
  expect_crafted_refused(dropout_two, "dropout 2");
  expect_crafted_refused(fanout_zero, "fanout 0 of layer 0");
  expect_crafted_refused(batch_zero, "batch of 0 seeds");
  expect_crafted_refused(order_5, "seed order 5");
  expect_crafted_refused(train_over_n, "11 training seeds");
  expect_crafted_refused(record_dropped, "incomplete");
}

/* The sampling and GEMM records follow the session's own rules. */
Test(checkpoint, the_sampling_record_is_range_checked) {
  expect_crafted_refused(mode_3, "sampling mode 3,");
  expect_crafted_refused(replace_2, "replace 2,");
  expect_crafted_refused(replace_threshold, "sampling mode 2, replace 1,");
  expect_crafted_refused(budget_neg, "vertex budget -1 ");
  expect_crafted_refused(budget_below_batch, "vertex budget 1 below the batch of 2 seeds");
  expect_crafted_refused(thresholds_3, "sampling record of 28 bytes for 3 thresholds");
  expect_crafted_refused(threshold_nan, "threshold nan of layer 1");
  expect_crafted_refused(weighted_with_thresholds, "threshold 0.25 of layer 0 under sampling mode 1");
  expect_crafted_refused(gemm_5000, "5000 threads");
  expect_crafted_refused(smpl_repeated, "repeated");
}

/* A file written before the sampling and GEMM records existed (the same
 * run without them) still loads; they read as not recorded. */
Test(checkpoint, a_run_without_the_sampling_record_reads_as_not_recorded) {
  hs_model a;
  make_model(&a, 4, HS_OPTIM_ADAM, 3);
  a.epoch = 1;
  a.rng_counter = 1;
  a.step = 5;
  hs_ckpt_run r = sample_run();
  r.sampling_set = r.gemm_set = false;
  cr_assert_eq(hs__checkpoint_save_run(&a, &r, path), HS_OK, "%s", hs_last_error());
  hs_model_cfg cfg;
  hs_ckpt_run back;
  uint64_t pos[3];
  cr_assert_eq(hs__checkpoint_read_run(path, &cfg, &back, pos), HS_OK, "%s", hs_last_error());
  cr_expect(back.set);
  cr_expect_not(back.sampling_set);
  cr_expect_not(back.gemm_set);
  cr_expect_eq(hs__checkpoint_load(path, &a), HS_OK, "%s", hs_last_error());
  hs__model_destroy(&a);
}

Test(checkpoint, a_run_round_trips_its_options) {
  size_t size;
  free(saved_run(&size));
  hs_model_cfg cfg;
  hs_ckpt_run r;
  uint64_t pos[3];
  cr_assert_eq(hs__checkpoint_read_run(path, &cfg, &r, pos), HS_OK, "%s", hs_last_error());
  hs_ckpt_run want = sample_run();
  cr_expect(r.set);
  cr_expect_eq(r.n_layers, 2);
  cr_expect_eq(r.fanouts[0], 3);
  cr_expect_eq(r.fanouts[1], -1);
  cr_expect_eq(r.batch_size, want.batch_size);
  cr_expect_eq(r.n_train, want.n_train);
  cr_expect_eq(r.n_vertices, want.n_vertices);
  cr_expect_eq(r.n_edges, want.n_edges);
  cr_expect(r.sampling_set);
  cr_expect_eq(r.sampling, (uint32_t)HS_SAMPLING_THRESHOLD);
  cr_expect_not(r.replace);
  cr_expect_eq(r.vertex_budget, 4);
  cr_expect_eq(r.thresholds[0], 0.25f);
  cr_expect_eq(r.thresholds[1], 0.5f);
  cr_expect(r.gemm_set);
  cr_expect_eq(r.gemm_threads, 2u);
  cr_expect_eq(pos[0], 5u);
  cr_expect_eq(pos[1], 1u);
  cr_expect_eq(pos[2], 1u);
  hs_model b;
  make_model(&b, 4, HS_OPTIM_ADAM, 3);
  cr_expect_eq(hs__checkpoint_load(path, &b), HS_OK, "%s", hs_last_error());
  hs__model_destroy(&b);
}
