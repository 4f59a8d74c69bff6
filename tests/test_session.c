/* Training sessions end to end on the bundled Cora: driver agreement,
 * interrupt and resume, accuracy, evaluation paths, and bad input. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hetsage.h"
#include "sample/hs_sampler.h"

static hs_runtime *rt;
static hs_dataset *ds;

static void setup(void) {
  hs_status st = hs_runtime_open(&rt, NULL);
  if (st == HS_ERR_NO_DEVICE) cr_skip_test("no OpenCL device: %s", hs_last_error());
  cr_assert_eq(st, HS_OK, "%s", hs_last_error());
  char dir[1024];
  cr_assert_eq(hs_dataset_bundled("cora", dir, sizeof dir), HS_OK, "%s", hs_last_error());
  cr_assert_eq(hs_dataset_open(dir, &ds), HS_OK, "%s", hs_last_error());
}

static void teardown(void) {
  hs_dataset_close(ds);
  hs_runtime_close(rt);
}

TestSuite(session, .init = setup, .fini = teardown, .timeout = 600);

static hs_session_config small_cfg(hs_pipeline_mode mode) {
  hs_session_config c;
  hs_session_config_init(&c);
  c.batch_size = 128;
  c.hidden = 32;
  c.pipeline = mode;
  c.seed = 7;
  return c;
}

static float *train(const hs_session_config *c, int epochs, size_t *n) {
  hs_session *s;
  cr_assert_eq(hs_session_create(rt, ds, c, &s), HS_OK, "%s", hs_last_error());
  for (int e = 0; e < epochs; e++) {
    hs_epoch_stats st;
    cr_assert_eq(hs_session_train_epoch(s, &st), HS_OK, "%s", hs_last_error());
    cr_assert_not(st.interrupted);
    cr_expect_eq(st.batches, (1624 + 127) / 128);
    cr_expect(isfinite(st.loss));
  }
  cr_assert_eq(hs_session_parameters(s, NULL, 0, n), HS_OK);
  float *p = malloc(*n * sizeof *p);
  cr_assert_eq(hs_session_parameters(s, p, *n, n), HS_OK);
  hs_session_destroy(s);
  return p;
}

Test(session, drivers_and_sequential_give_bit_identical_parameters) {
  size_t n_off, n_thr, n_async;
  hs_session_config c = small_cfg(HS_PIPELINE_OFF);
  float *off = train(&c, 2, &n_off);
  c = small_cfg(HS_PIPELINE_THREADS);
  float *thr = train(&c, 2, &n_thr);
  c = small_cfg(HS_PIPELINE_ASYNC);
  float *async = train(&c, 2, &n_async);
  cr_assert_eq(n_off, n_thr);
  cr_assert_eq(n_off, n_async);
  cr_expect_arr_eq(off, thr, n_off * sizeof(float), "threads differ from sequential");
  cr_expect_arr_eq(off, async, n_off * sizeof(float), "async differs from sequential");
  /* And the run is not trivially constant: another seed differs. */
  c = small_cfg(HS_PIPELINE_OFF);
  c.seed = 8;
  size_t n8;
  float *other = train(&c, 2, &n8);
  cr_expect_neq(memcmp(off, other, n_off * sizeof(float)), 0);
  free(off);
  free(thr);
  free(async);
  free(other);
}

typedef struct stopper {
  volatile sig_atomic_t *flag;
  int64_t at;
} stopper;

static void stop_at(void *user, int64_t batch, int64_t n_batches, double loss) {
  (void)n_batches;
  (void)loss;
  stopper *st = user;
  if (batch >= st->at) *st->flag = 1;
}

static void interrupt_and_resume(hs_pipeline_mode mode) {
  hs_session_config c = small_cfg(mode);
  size_t n_ref;
  float *ref = train(&c, 2, &n_ref);

  char path[] = "/tmp/hs-resume-XXXXXX";
  int fd = mkstemp(path);
  cr_assert_geq(fd, 0);
  close(fd);

  /* Interrupted during epoch 1, saved... */
  hs_session *s;
  cr_assert_eq(hs_session_create(rt, ds, &c, &s), HS_OK, "%s", hs_last_error());
  hs_epoch_stats st;
  cr_assert_eq(hs_session_train_epoch(s, &st), HS_OK);
  volatile sig_atomic_t flag = 0;
  stopper sp = {&flag, 4};
  hs_session_set_stop_flag(s, &flag);
  hs_session_set_progress(s, stop_at, &sp);
  cr_assert_eq(hs_session_train_epoch(s, &st), HS_OK, "%s", hs_last_error());
  cr_assert(st.interrupted, "the stop flag did not interrupt the epoch");
  cr_expect_lt(st.batches, 13);
  cr_assert_eq(hs_session_save(s, path), HS_OK, "%s", hs_last_error());
  hs_session_destroy(s);

  /* ...and resumed in a new session: the same parameters as without the
   * interruption. */
  cr_assert_eq(hs_session_create(rt, ds, &c, &s), HS_OK);
  cr_assert_eq(hs_session_load(s, path), HS_OK, "%s", hs_last_error());
  cr_expect_eq(hs_session_epoch(s), 1);
  cr_assert_eq(hs_session_train_epoch(s, &st), HS_OK, "%s", hs_last_error());
  cr_expect_not(st.interrupted);
  cr_expect_eq(hs_session_epoch(s), 2);
  size_t n;
  float *got = malloc(n_ref * sizeof *got);
  cr_assert_eq(hs_session_parameters(s, got, n_ref, &n), HS_OK);
  cr_assert_eq(n, n_ref);
  cr_expect_arr_eq(got, ref, n * sizeof(float), "resumed run differs from the uninterrupted one");
  hs_session_destroy(s);
  unlink(path);
  free(got);
  free(ref);
}

Test(session, interrupt_and_resume_async) { interrupt_and_resume(HS_PIPELINE_ASYNC); }
Test(session, interrupt_and_resume_threads) { interrupt_and_resume(HS_PIPELINE_THREADS); }

Test(session, cora_accuracy_and_evaluation_paths) {
  /* The configuration: 2 layers, fanouts 25,10, hidden 128. */
  hs_session_config c;
  hs_session_config_init(&c);
  c.batch_size = 256;
  hs_session *s;
  cr_assert_eq(hs_session_create(rt, ds, &c, &s), HS_OK, "%s", hs_last_error());
  double before;
  cr_assert_eq(hs_session_evaluate_full(s, HS_SPLIT_TEST, &before), HS_OK, "%s", hs_last_error());
  for (int e = 0; e < 8; e++) cr_assert_eq(hs_session_train_epoch(s, NULL), HS_OK, "%s", hs_last_error());
  double full, sampled;
  cr_assert_eq(hs_session_evaluate_full(s, HS_SPLIT_TEST, &full), HS_OK, "%s", hs_last_error());
  cr_assert_eq(hs_session_evaluate(s, HS_SPLIT_TEST, &sampled), HS_OK, "%s", hs_last_error());
  cr_expect_geq(full, 0.80, "full-neighbour test accuracy %.3f (before training %.3f)", full, before);
  cr_expect_geq(sampled, 0.78, "sampled test accuracy %.3f", sampled);
  cr_expect_lt(before, 0.5, "an untrained model scored %.3f", before);

  /* Prediction agrees with full-neighbour evaluation on the same ids. */
  int64_t ids[5] = {0, 1, 2, 2707, 100};
  int32_t cls[5];
  float logits[5 * 7];
  cr_assert_eq(hs_session_predict(s, ids, 5, cls, logits), HS_OK, "%s", hs_last_error());
  for (int i = 0; i < 5; i++) {
    cr_expect(cls[i] >= 0 && cls[i] < 7);
    for (int k = 0; k < 7; k++) cr_expect_leq(logits[i * 7 + k], logits[i * 7 + cls[i]]);
  }
  int64_t bad_id = 2708;
  cr_expect_eq(hs_session_predict(s, &bad_id, 1, cls, NULL), HS_ERR_RANGE);
  cr_expect(strstr(hs_last_error(), "2708") != NULL, "%s", hs_last_error());
  hs_session_destroy(s);
}

Test(session, bad_configuration_is_refused_by_name) {
  hs_session *s = NULL;
  hs_session_config c;
  hs_session_config_init(&c);
  c.batch_size = 0;
  cr_expect_eq(hs_session_create(rt, ds, &c, &s), HS_ERR_INVALID_ARG);
  cr_expect(strstr(hs_last_error(), "batch size") != NULL, "%s", hs_last_error());
  hs_session_config_init(&c);
  c.fanouts[1] = 0;
  cr_expect_eq(hs_session_create(rt, ds, &c, &s), HS_ERR_INVALID_ARG);
  cr_expect(strstr(hs_last_error(), "fanout") != NULL, "%s", hs_last_error());
  hs_session_config_init(&c);
  c.dropout = 1.0f;
  cr_expect_eq(hs_session_create(rt, ds, &c, &s), HS_ERR_INVALID_ARG);
  hs_session_config_init(&c);
  c.board = "no-such-board";
  cr_expect_eq(hs_session_create(rt, ds, &c, &s), HS_ERR_NOT_FOUND);
  cr_expect_null(s);
}

Test(session, a_checkpoint_of_another_model_is_refused) {
  char path[] = "/tmp/hs-ckpt-XXXXXX";
  int fd = mkstemp(path);
  close(fd);
  hs_session_config c = small_cfg(HS_PIPELINE_OFF);
  hs_session *s;
  cr_assert_eq(hs_session_create(rt, ds, &c, &s), HS_OK);
  cr_assert_eq(hs_session_save(s, path), HS_OK, "%s", hs_last_error());
  hs_session_destroy(s);
  c.hidden = 16;
  cr_assert_eq(hs_session_create(rt, ds, &c, &s), HS_OK);
  hs_status st = hs_session_load(s, path);
  cr_expect_neq(st, HS_OK);
  cr_expect(strstr(hs_last_error(), path) != NULL, "%s", hs_last_error());
  /* Its configuration can be read to build a matching session. */
  hs_session_config from;
  hs_session_config_init(&from);
  cr_assert_eq(hs_session_config_from_checkpoint(path, &from), HS_OK, "%s", hs_last_error());
  cr_expect_eq(from.hidden, 32);
  hs_session_destroy(s);
  unlink(path);
}

Test(session, missing_dataset_is_a_clear_error) {
  hs_dataset *none = NULL;
  cr_expect_neq(hs_dataset_open("/nonexistent/dataset", &none), HS_OK);
  cr_expect(strstr(hs_last_error(), "/nonexistent/dataset") != NULL, "%s", hs_last_error());
  cr_expect_null(none);
}

/* A board profile naming a prebuilt sampler binary (what an FPGA board
 * ships): the session loads it instead of building, with the same results;
 * a binary that is not one is refused by name. */
Test(session, sampler_from_a_prebuilt_binary) {
  char dir[] = "/tmp/hs-binboard-XXXXXX";
  cr_assert(mkdtemp(dir));
  char bin[256], ini[256];
  snprintf(bin, sizeof bin, "%s/sampler.bin", dir);
  snprintf(ini, sizeof ini, "%s/cpu-binary.ini", dir);
  /* The binary, built for the CPU device as an offline compiler would. */
  hs_inventory inv;
  cr_assert_eq(hs__inventory_discover(&inv), HS_OK);
  const hs_dev *cpu = NULL;
  for (int i = 0; i < inv.n_devs; i++)
    if (inv.devs[i].info.type == HS_DEVICE_CPU) cpu = &inv.devs[i];
  if (!cpu) cr_skip_test("no CPU device");
  hs_ctx ctx;
  cr_assert_eq(hs__ctx_create(cpu, 1, &ctx), HS_OK);
  cr_assert_eq(hs__sampler_save_binary(&ctx, cpu, bin), HS_OK, "%s", hs_last_error());
  hs__ctx_release(&ctx);
  hs__inventory_release(&inv);

  FILE *f = fopen(ini, "w");
  fprintf(f, "[board]\nname = cpu-binary\n[device.cpu]\ntype = cpu\nrequired = true\n"
             "[roles]\nsampler = cpu\ntrainer = cpu\n"
             "[binaries]\ncpu = sampler.bin\n");
  fclose(f);

  hs_session_config c = small_cfg(HS_PIPELINE_OFF);
  c.board = ini;
  hs_session *s;
  cr_assert_eq(hs_session_create(rt, ds, &c, &s), HS_OK, "%s", hs_last_error());
  cr_assert_eq(hs_session_train_epoch(s, NULL), HS_OK, "%s", hs_last_error());
  size_t n;
  cr_assert_eq(hs_session_parameters(s, NULL, 0, &n), HS_OK);
  float *with_bin = malloc(n * sizeof *with_bin);
  cr_assert_eq(hs_session_parameters(s, with_bin, n, &n), HS_OK);
  hs_session_destroy(s);
  size_t n_ref;
  c.board = NULL;
  float *ref = train(&c, 1, &n_ref);
  cr_assert_eq(n, n_ref);
  cr_expect_arr_eq(with_bin, ref, n * sizeof(float), "sampling from the binary changed the result");
  free(with_bin);
  free(ref);

  /* Not a program binary: refused, naming the file. */
  f = fopen(bin, "w");
  fputs("not a binary", f);
  fclose(f);
  c.board = ini;
  cr_expect_neq(hs_session_create(rt, ds, &c, &s), HS_OK);
  cr_expect(strstr(hs_last_error(), "sampler.bin") != NULL, "%s", hs_last_error());
  unlink(bin);
  unlink(ini);
  rmdir(dir);
}
