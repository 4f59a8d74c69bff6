/* The ABI rule of hetsage/version.h, checked as a program built against
 * older headers would meet this library: its structs one field shorter than
 * today's. Built against the shared library and the public header only. */
#include <criterion/criterion.h>
#include <ftw.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hetsage.h"

#define GUARD 64
#define GUARD_BYTE 0xA5

/* `size` bytes for a struct, followed by guard bytes that must survive
 * whatever the library does with it. */
static void *short_struct(size_t size) {
  unsigned char *p = malloc(size + GUARD);
  cr_assert_not_null(p);
  memset(p, GUARD_BYTE, size + GUARD);
  return p;
}

static void expect_guard(const void *p, size_t size, const char *what) {
  const unsigned char *g = (const unsigned char *)p + size;
  for (int i = 0; i < GUARD; i++)
    cr_expect_eq(g[i], GUARD_BYTE, "%s: byte %zu past its struct_size was written", what,
                 size + (size_t)i);
}

Test(abi, version_macros_and_library_agree) {
  cr_expect_eq(hs_version_hex(), (unsigned)HS_VERSION_HEX);
  cr_expect_str_eq(hs_version(), HS_VERSION_STRING);
  char want[32];
  snprintf(want, sizeof want, "%d.%d.%d", HS_VERSION_MAJOR, HS_VERSION_MINOR, HS_VERSION_PATCH);
  cr_expect_str_eq(hs_version(), want);
  cr_expect_eq(HS_VERSION_HEX >> 16, HS_VERSION_MAJOR);
}

/* A size that is no size, or one from newer headers, is refused by name. */
Test(abi, struct_size_is_checked) {
  hs_runtime *rt = NULL;
  hs_runtime_options o;
  hs_runtime_options_init(&o);
  cr_expect_eq(o.struct_size, sizeof o);
  o.struct_size = 3;
  cr_expect_eq(hs_runtime_open(&rt, &o), HS_ERR_INVALID_ARG);
  cr_expect(strstr(hs_last_error(), "hs_runtime_options") && strstr(hs_last_error(), "_init"),
            "%s", hs_last_error());
  o.struct_size = sizeof o + 16;
  cr_expect_eq(hs_runtime_open(&rt, &o), HS_ERR_INVALID_ARG);
  cr_expect(strstr(hs_last_error(), "newer headers"), "%s", hs_last_error());
  cr_expect_null(rt);

  hs_placement_request rq;
  hs_placement_request_init(&rq);
  rq.struct_size = 0;
  hs_placement *pl = NULL;
  cr_expect_eq(hs_placement_make(&rq, &pl), HS_ERR_INVALID_ARG);
  cr_expect(strstr(hs_last_error(), "hs_placement_request"), "%s", hs_last_error());
}

/* The inventory of a program built against a shorter hs_device_info: an
 * array of its stride, read as such. */
Test(abi, placement_reads_devices_of_an_older_stride) {
  /* Without the last field, padded to the alignment as a compiler would. */
  size_t align = _Alignof(hs_device_info);
  size_t old = (offsetof(hs_device_info, extensions) + align - 1) / align * align;
  unsigned char *arr = short_struct(2 * old);
  hs_placement *want = NULL, *got = NULL;
  hs_device_info full[2];
  for (int i = 0; i < 2; i++) {
    hs_device_info *d = &full[i];
    hs_device_info_init(d);
    d->index = i;
    d->type = i ? HS_DEVICE_GPU : HS_DEVICE_CPU;
    snprintf(d->name, sizeof d->name, i ? "Old GPU" : "Old CPU");
    d->compute_units = i ? 40 : 4;
    d->clock_mhz = 1000;
    d->global_mem_bytes = (uint64_t)8 << 30;
    d->max_alloc_bytes = (uint64_t)2 << 30;
    d->max_work_group_size = 256;
    d->available = d->compiler_available = true;
    memcpy(arr + (size_t)i * old, d, old);
    ((hs_device_info *)(arr + (size_t)i * old))->struct_size = old;
  }
  hs_placement_request rq;
  hs_placement_request_init(&rq);
  rq.devices = full;
  rq.device_count = 2;
  rq.topology_bytes = (uint64_t)1 << 30;
  rq.host_cores = 4;
  cr_assert_eq(hs_placement_make(&rq, &want), HS_OK, "%s", hs_last_error());
  rq.devices = (const hs_device_info *)arr;
  cr_assert_eq(hs_placement_make(&rq, &got), HS_OK, "%s", hs_last_error());
  cr_expect_eq(got->trainer.device, want->trainer.device);
  cr_expect_eq(got->sampler.device, want->sampler.device);
  cr_expect_eq(got->trainer.device, 1, "the GPU trains");
  cr_expect_eq(got->link, want->link);
  expect_guard(arr, 2 * old, "hs_device_info[2]");
  hs_placement_free(want);
  hs_placement_free(got);
  free(arr);
}

static float *params_of(hs_session *s, size_t *n) {
  cr_assert_eq(hs_session_parameters(s, NULL, 0, n), HS_OK);
  float *p = malloc(*n * sizeof *p);
  cr_assert_eq(hs_session_parameters(s, p, *n, n), HS_OK);
  return p;
}

/* A program built when hs_session_config, hs_epoch_stats, hs_runtime_options
 * and hs_dataset_info each had one field less than today: it runs, the
 * fields it lacks take their defaults, nothing past its structs is touched,
 * and the training is the same bits as with today's structs. */
Test(abi, a_program_with_structs_one_field_shorter_runs, .timeout = 600) {
  size_t ro_size = offsetof(hs_runtime_options, settings);
  hs_runtime_options *ro = short_struct(ro_size);
  hs_runtime_options_init_sized(ro, ro_size);
  expect_guard(ro, ro_size, "hs_runtime_options");
  cr_expect_eq(ro->struct_size, ro_size);
  cr_expect_null(ro->board);
  hs_runtime *rt = NULL;
  hs_status st = hs_runtime_open(&rt, ro);
  if (st == HS_ERR_NO_DEVICE) cr_skip_test("no OpenCL device");
  cr_assert_eq(st, HS_OK, "%s", hs_last_error());
  char dir[1024];
  cr_assert_eq(hs_dataset_bundled(rt, "cora", dir, sizeof dir), HS_OK, "%s", hs_last_error());
  hs_dataset *ds;
  cr_assert_eq(hs_dataset_open(dir, &ds), HS_OK, "%s", hs_last_error());

  size_t di_size = offsetof(hs_dataset_info, label_bytes);
  hs_dataset_info *di = short_struct(di_size);
  hs_dataset_info_init_sized(di, di_size);
  cr_assert_eq(hs_dataset_get_info(ds, di), HS_OK, "%s", hs_last_error());
  cr_expect_eq(di->num_vertices, 2708);
  cr_expect_eq(di->struct_size, di_size);
  expect_guard(di, di_size, "hs_dataset_info");

  /* Today's structs, for the reference. */
  hs_session_config full;
  hs_session_config_init(&full);
  full.batch_size = 256;
  full.hidden = 16;
  full.seed = 3;
  full.pipeline = HS_PIPELINE_OFF;
  hs_session *s;
  cr_assert_eq(hs_session_create(rt, ds, &full, &s), HS_OK, "%s", hs_last_error());
  hs_epoch_stats es;
  hs_epoch_stats_init(&es);
  cr_assert_eq(hs_session_train_epoch(s, &es), HS_OK, "%s", hs_last_error());
  size_t n_ref;
  float *ref = params_of(s, &n_ref);
  hs_session_destroy(s);

  /* One field shorter: feature_pages, the last, did not exist yet. */
  size_t sc_size = offsetof(hs_session_config, feature_pages);
  hs_session_config *old = short_struct(sc_size);
  hs_session_config_init_sized(old, sc_size);
  expect_guard(old, sc_size, "hs_session_config (init)");
  cr_expect_eq(old->struct_size, sc_size);
  cr_expect_eq(old->batch_size, 1024, "defaults set within the old size");
  old->batch_size = 256;
  old->hidden = 16;
  old->seed = 3;
  old->pipeline = HS_PIPELINE_OFF;
  cr_assert_eq(hs_session_create(rt, ds, old, &s), HS_OK, "%s", hs_last_error());
  size_t es_size = offsetof(hs_epoch_stats, feature_huge_page_bytes);
  hs_epoch_stats *oes = short_struct(es_size);
  hs_epoch_stats_init_sized(oes, es_size);
  cr_assert_eq(hs_session_train_epoch(s, oes), HS_OK, "%s", hs_last_error());
  expect_guard(oes, es_size, "hs_epoch_stats");
  cr_expect_eq(oes->struct_size, es_size);
  cr_expect_eq(oes->batches, es.batches);
  cr_expect_eq(oes->loss, es.loss, "the same epoch, the same loss");
  size_t n;
  float *got = params_of(s, &n);
  cr_assert_eq(n, n_ref);
  cr_expect_arr_eq(got, ref, n * sizeof *got, "a shorter config changed the training");
  /* Reading the model part back from a checkpoint writes within it too. */
  char ckpt[] = "/tmp/hs-abi-XXXXXX";
  int fd = mkstemp(ckpt);
  cr_assert_geq(fd, 0);
  close(fd);
  cr_assert_eq(hs_session_save(s, ckpt), HS_OK, "%s", hs_last_error());
  old->hidden = 99;
  cr_assert_eq(hs_session_config_from_checkpoint(ckpt, old), HS_OK, "%s", hs_last_error());
  cr_expect_eq(old->hidden, 16);
  expect_guard(old, sc_size, "hs_session_config (from checkpoint)");
  unlink(ckpt);
  hs_session_destroy(s);

  free(got);
  free(ref);
  free(oes);
  free(old);
  free(di);
  hs_dataset_close(ds);
  hs_runtime_close(rt);
  free(ro);
}

/* hs_runtime_options.board: loaded at open (a bad one fails there), and
 * the board of sessions that name none. */
Test(abi, runtime_board_is_the_sessions_default, .timeout = 600) {
  hs_runtime *rt = NULL;
  hs_runtime_options o;
  hs_runtime_options_init(&o);
  o.board = "no-such-board";
  hs_status st = hs_runtime_open(&rt, &o);
  if (st == HS_ERR_NO_DEVICE) cr_skip_test("no OpenCL device");
  cr_expect_eq(st, HS_ERR_NOT_FOUND, "%s", hs_last_error());
  cr_expect(strstr(hs_last_error(), "no-such-board"), "%s", hs_last_error());
  cr_expect_null(rt);
  /* A board that keeps the CPU whole: sessions on this runtime use it. */
  char ini[] = "/tmp/hs-abi-board-XXXXXX.ini";
  int fd = mkstemps(ini, 4);
  cr_assert_geq(fd, 0);
  const char *text = "[board]\nname = whole-cpu\n[device.cpu]\ntype = cpu\n[roles]\n"
                     "sampler = cpu\ntrainer = cpu\n[split]\nsub_devices = false\n";
  cr_assert_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
  close(fd);
  o.board = ini;
  cr_assert_eq(hs_runtime_open(&rt, &o), HS_OK, "%s", hs_last_error());
  cr_assert_not_null(hs_runtime_board(rt));
  cr_expect_str_eq(hs_board_profile_name(hs_runtime_board(rt)), "whole-cpu");
  char dir[1024];
  cr_assert_eq(hs_dataset_bundled(rt, "cora", dir, sizeof dir), HS_OK, "%s", hs_last_error());
  hs_dataset *ds;
  cr_assert_eq(hs_dataset_open(dir, &ds), HS_OK, "%s", hs_last_error());
  hs_session_config c;
  hs_session_config_init(&c);
  hs_session *s;
  cr_assert_eq(hs_session_create(rt, ds, &c, &s), HS_OK, "%s", hs_last_error());
  char text_out[4096];
  hs_session_describe(s, text_out, sizeof text_out);
  cr_expect(strstr(text_out, "whole-cpu") && strstr(text_out, "same-device"), "%s", text_out);
  hs_session_destroy(s);
  hs_dataset_close(ds);
  hs_runtime_close(rt);
  unlink(ini);
}

static int remove_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw) {
  (void)sb;
  (void)flag;
  (void)ftw;
  return remove(path);
}

static unsigned char *slurp(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  cr_assert_not_null(f, "%s", path);
  cr_assert_eq(fseek(f, 0, SEEK_END), 0);
  long n = ftell(f);
  cr_assert_geq(n, 0);
  rewind(f);
  unsigned char *b = malloc((size_t)n + 1);
  cr_assert_eq(fread(b, 1, (size_t)n, f), (size_t)n);
  fclose(f);
  *len = (size_t)n;
  return b;
}

static void expect_same_file(const char *a, const char *b) {
  size_t na, nb;
  unsigned char *x = slurp(a, &na), *y = slurp(b, &nb);
  cr_expect_eq(na, nb, "%s and %s differ in size", a, b);
  if (na == nb) cr_expect_arr_eq(x, y, na, "%s and %s differ", a, b);
  free(x);
  free(y);
}

static void small_data(hs_ctr_generate_opts *o) {
  o->rows = 3000;
  o->big_vocab = 2000;
  o->signal = 2.0;
  o->split_frac[0] = 0.75;
  o->split_frac[1] = 0.0;
  o->split_frac[2] = 0.25;
}

static void small_model(hs_ctr_config *c) {
  c->dim = 8;
  c->hidden[0] = 32;
  c->hidden[1] = 16;
  c->bottom[0] = 16;
  c->batch_size = 256;
  c->lr = 0.01f;
}

/* The CTR API met by a program built when hs_ctr_generate_opts ended at
 * progress_ctx (before head_ranks and tail_decay) and
 * hs_ctr_generate_summary, hs_ctr_config, hs_ctr_epoch_stats and
 * hs_ctr_eval each had one field less than today: the same data, the same
 * trained bits, the same evaluation, and no byte past its structs
 * touched. */
Test(abi, a_ctr_program_with_structs_one_field_shorter_runs, .timeout = 600) {
  char tmp[] = "/tmp/hs-abi-ctr-XXXXXX";
  cr_assert_not_null(mkdtemp(tmp));
  char a[256], b[256], fa[300], fb[300], ta[300], ca[300], cb[300];
  snprintf(a, sizeof a, "%s/today", tmp);
  snprintf(b, sizeof b, "%s/older", tmp);

  hs_ctr_generate_opts go;
  hs_ctr_generate_opts_init(&go);
  small_data(&go);
  hs_ctr_generate_summary gs;
  hs_ctr_generate_summary_init(&gs);
  cr_assert_eq(hs_ctr_generate(a, &go, &gs), HS_OK, "%s", hs_last_error());

  size_t go_size = offsetof(hs_ctr_generate_opts, head_ranks);
  hs_ctr_generate_opts *ogo = short_struct(go_size);
  hs_ctr_generate_opts_init_sized(ogo, go_size);
  expect_guard(ogo, go_size, "hs_ctr_generate_opts (init)");
  cr_expect_eq(ogo->struct_size, go_size);
  cr_expect_eq(ogo->rows, 1000000, "defaults set within the old size");
  small_data(ogo);
  size_t gs_size = offsetof(hs_ctr_generate_summary, seconds);
  hs_ctr_generate_summary *ogs = short_struct(gs_size);
  hs_ctr_generate_summary_init_sized(ogs, gs_size);
  cr_assert_eq(hs_ctr_generate(b, ogo, ogs), HS_OK, "%s", hs_last_error());
  expect_guard(ogo, go_size, "hs_ctr_generate_opts");
  expect_guard(ogs, gs_size, "hs_ctr_generate_summary");
  cr_expect_eq(ogs->struct_size, gs_size);
  cr_expect_eq(ogs->rows[0], gs.rows[0]);
  cr_expect_eq(ogs->bayes_auc, gs.bayes_auc);
  snprintf(fa, sizeof fa, "%s/train.txt", a);
  snprintf(fb, sizeof fb, "%s/train.txt", b);
  expect_same_file(fa, fb);
  snprintf(ta, sizeof ta, "%s/test.txt", a);

  hs_runtime *rt = NULL;
  cr_assert_eq(hs_runtime_open(&rt, NULL), HS_OK, "%s", hs_last_error());
  const char *train[1] = {fa}, *test[1] = {ta};

  /* Today's structs, for the reference. */
  hs_ctr_config c;
  hs_ctr_config_init(&c);
  small_model(&c);
  hs_ctr_session *s;
  hs_status st = hs_ctr_session_create(rt, &c, &s);
  if (st == HS_ERR_NO_DEVICE) cr_skip_test("no OpenCL device: %s", hs_last_error());
  cr_assert_eq(st, HS_OK, "%s", hs_last_error());
  hs_ctr_epoch_stats es;
  hs_ctr_epoch_stats_init(&es);
  cr_assert_eq(hs_ctr_session_train_epoch(s, train, 1, &es), HS_OK, "%s", hs_last_error());
  hs_ctr_eval ev;
  hs_ctr_eval_init(&ev);
  cr_assert_eq(hs_ctr_session_evaluate(s, test, 1, &ev), HS_OK, "%s", hs_last_error());
  snprintf(ca, sizeof ca, "%s/today.ckpt", tmp);
  cr_assert_eq(hs_ctr_session_save(s, ca), HS_OK, "%s", hs_last_error());
  hs_ctr_session_destroy(s);

  /* One field shorter each: the last field did not exist yet. */
  size_t cc_size = offsetof(hs_ctr_config, depth);
  hs_ctr_config *oc = short_struct(cc_size);
  hs_ctr_config_init_sized(oc, cc_size);
  expect_guard(oc, cc_size, "hs_ctr_config (init)");
  cr_expect_eq(oc->struct_size, cc_size);
  cr_expect_eq(oc->batch_size, 4096, "defaults set within the old size");
  small_model(oc);
  cr_assert_eq(hs_ctr_session_create(rt, oc, &s), HS_OK, "%s", hs_last_error());
  size_t es_size = offsetof(hs_ctr_epoch_stats, interrupted);
  hs_ctr_epoch_stats *oes = short_struct(es_size);
  hs_ctr_epoch_stats_init_sized(oes, es_size);
  cr_assert_eq(hs_ctr_session_train_epoch(s, train, 1, oes), HS_OK, "%s", hs_last_error());
  expect_guard(oes, es_size, "hs_ctr_epoch_stats");
  cr_expect_eq(oes->struct_size, es_size);
  cr_expect_eq(oes->examples, es.examples);
  cr_expect_eq(oes->batches, es.batches);
  cr_expect_eq(oes->loss, es.loss, "the same epoch, the same loss");
  size_t ev_size = offsetof(hs_ctr_eval, seconds);
  hs_ctr_eval *oev = short_struct(ev_size);
  hs_ctr_eval_init_sized(oev, ev_size);
  cr_assert_eq(hs_ctr_session_evaluate(s, test, 1, oev), HS_OK, "%s", hs_last_error());
  expect_guard(oev, ev_size, "hs_ctr_eval");
  cr_expect_eq(oev->examples, ev.examples);
  cr_expect_eq(oev->auc, ev.auc);
  cr_expect_eq(oev->logloss, ev.logloss);
  snprintf(cb, sizeof cb, "%s/older.ckpt", tmp);
  cr_assert_eq(hs_ctr_session_save(s, cb), HS_OK, "%s", hs_last_error());
  hs_ctr_session_destroy(s);
  expect_same_file(ca, cb);
  /* Reading the configuration back from a checkpoint writes within it. */
  oc->dim = 99;
  cr_assert_eq(hs_ctr_config_from_checkpoint(cb, oc), HS_OK, "%s", hs_last_error());
  cr_expect_eq(oc->dim, 8);
  expect_guard(oc, cc_size, "hs_ctr_config (from checkpoint)");
  /* The struct as it ended at host_nice, with the padding after it (the
   * caller's, whatever it holds): standardize_dense, added since, lies
   * beyond it and stays off. */
  size_t pc_size = sizeof(void *) == 8 ? 200 /* that struct's size on LP64 */
                                        : offsetof(hs_ctr_config, standardize_dense);
  cr_assert_geq(offsetof(hs_ctr_config, standardize_dense), pc_size);
  hs_ctr_config *pc = short_struct(pc_size);
  hs_ctr_config_init_sized(pc, pc_size);
  small_model(pc);
  size_t pad = offsetof(hs_ctr_config, host_nice) + sizeof(int);
  memset((unsigned char *)pc + pad, 0x01, pc_size - pad);
  cr_assert_eq(hs_ctr_session_create(rt, pc, &s), HS_OK, "%s", hs_last_error());
  char desc[4096];
  hs_ctr_session_describe(s, desc, sizeof desc);
  cr_expect_null(strstr(desc, "standardized"), "%s", desc);
  hs_ctr_session_destroy(s);
  expect_guard(pc, pc_size, "hs_ctr_config (ending at host_nice)");
  free(pc);

  free(oev);
  free(oes);
  free(oc);
  free(ogs);
  free(ogo);
  hs_runtime_close(rt);
  nftw(tmp, remove_one, 16, FTW_DEPTH | FTW_PHYS);
}
