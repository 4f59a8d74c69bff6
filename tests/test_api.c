/* The public C API under misuse: every function given NULL where it takes a
 * pointer returns HS_ERR_INVALID_ARG (or, for getters and void calls, a
 * neutral value) instead of crashing, and session configurations with any
 * field out of range are refused at creation, naming the field. Host-only:
 * no kernel is built (the checks run before any device work). */
#include <math.h>
#include <stdio.h>

#include "hetsage/bench.h"
#include "hetsage/bringup.h"
#include "hs_test_util.h"

#define EXPECT_INVALID(call)                                                              \
  do {                                                                                    \
    hs_status st_ = (call);                                                               \
    cr_expect_eq(st_, HS_ERR_INVALID_ARG, "%s: %s (%s)", #call, hs_strerror(st_),         \
                 hs_last_error());                                                        \
  } while (0)

Test(api, status_calls_refuse_null) {
  unsigned bits;
  hs_bench_results *br = NULL;
  hs_board_profile *bp = NULL;
  hs_placement *pl = NULL;
  hs_bringup_level lvl;
  hs_bringup_report *rep = NULL;
  hs_dataset *ds = NULL;
  hs_dataset_stats stats;
  hs_dataset_info info;
  hs_import_format fmt;
  hs_feat_format ff;
  hs_model_kind mk;
  hs_convert_opts co;
  hs_generate_opts go;
  hs_session *s = NULL;
  hs_epoch_stats es;
  double acc;
  hs_session_config cfg;
  char dir[64];
  size_t np;
  hs_convert_opts_init(&co, HS_IMPORT_LINQS);
  hs_generate_opts_init(&go, HS_GENERATE_SBM);
  hs_session_config_init(&cfg);
  hs_dataset_stats_init(&stats);
  hs_dataset_info_init(&info);
  hs_epoch_stats_init(&es);

  EXPECT_INVALID(hs_bench_workloads_parse(NULL, &bits));
  EXPECT_INVALID(hs_bench_workloads_parse("all", NULL));
  EXPECT_INVALID(hs_bench_run(NULL, NULL, NULL, NULL, &br));
  EXPECT_INVALID(hs_bench_results_add(NULL, NULL));
  EXPECT_INVALID(hs_bench_results_write_json(NULL, stdout));
  EXPECT_INVALID(hs_bench_results_load(NULL, &br));
  EXPECT_INVALID(hs_bench_results_load("x.json", NULL));
  EXPECT_INVALID(hs_board_profile_load("generic-cpu", NULL));
  EXPECT_INVALID(hs_board_profile_load_from(NULL, "generic-cpu", NULL));
  EXPECT_INVALID(hs_board_profile_parse(NULL, NULL, NULL, &bp));
  EXPECT_INVALID(hs_board_profile_parse("[board]\n", NULL, NULL, NULL));
  EXPECT_INVALID(hs_placement_make(NULL, &pl));
  EXPECT_INVALID(hs_bringup_level_parse(NULL, &lvl));
  EXPECT_INVALID(hs_bringup_level_parse("quick", NULL));
  EXPECT_INVALID(hs_bringup_run(NULL, NULL, NULL, NULL, NULL, &rep));
  EXPECT_INVALID(hs_bringup_report_write_json(NULL, stdout));
  EXPECT_INVALID(hs_bringup_report_write_junit(NULL, stdout));
  EXPECT_INVALID(hs_feat_format_parse(NULL, &ff));
  EXPECT_INVALID(hs_feat_format_parse("dense", NULL));
  EXPECT_INVALID(hs_dataset_open(NULL, &ds));
  EXPECT_INVALID(hs_dataset_open("/nonexistent", NULL));
  EXPECT_INVALID(hs_dataset_get_info(NULL, &info));
  EXPECT_INVALID(hs_dataset_stats_compute(NULL, &stats));
  EXPECT_INVALID(hs_import_format_parse(NULL, &fmt));
  EXPECT_INVALID(hs_import_format_parse("linqs", NULL));
  EXPECT_INVALID(hs_convert(NULL, "/tmp/x", &co, NULL));
  EXPECT_INVALID(hs_convert("/tmp/x", NULL, &co, NULL));
  EXPECT_INVALID(hs_convert("/tmp/x", "/tmp/y", NULL, NULL));
  EXPECT_INVALID(hs_generate(NULL, &go, NULL, NULL));
  EXPECT_INVALID(hs_generate("/tmp/x", NULL, NULL, NULL));
  EXPECT_INVALID(hs_dataset_bundled(NULL, NULL, dir, sizeof dir));
  EXPECT_INVALID(hs_dataset_bundled(NULL, "cora", NULL, sizeof dir));
  EXPECT_INVALID(hs_kernels_emit(NULL, 0, "/tmp/x"));
  EXPECT_INVALID(hs_kernels_build(NULL, 0, 0, "/tmp/x", NULL, 0));
  EXPECT_INVALID(hs_runtime_open(NULL, NULL));
  EXPECT_INVALID(hs_model_kind_parse(NULL, &mk));
  EXPECT_INVALID(hs_model_kind_parse("sage", NULL));
  EXPECT_INVALID(hs_session_create(NULL, NULL, &cfg, &s));
  EXPECT_INVALID(hs_session_train_epoch(NULL, &es));
  EXPECT_INVALID(hs_session_evaluate(NULL, HS_SPLIT_TEST, &acc));
  EXPECT_INVALID(hs_session_evaluate_full(NULL, HS_SPLIT_TEST, &acc));
  EXPECT_INVALID(hs_session_predict(NULL, NULL, 1, NULL, NULL));
  EXPECT_INVALID(hs_session_save(NULL, "/tmp/x.ckpt"));
  EXPECT_INVALID(hs_session_load(NULL, "/tmp/x.ckpt"));
  EXPECT_INVALID(hs_session_resume(NULL, "/tmp/x.ckpt", 0));
  EXPECT_INVALID(hs_session_config_from_checkpoint(NULL, &cfg));
  EXPECT_INVALID(hs_session_config_from_checkpoint("/tmp/x.ckpt", NULL));
  EXPECT_INVALID(hs_session_parameters(NULL, NULL, 0, &np));
  EXPECT_INVALID(hs_settings_from_env(NULL));
  EXPECT_INVALID(hs_settings_check(NULL));
}

Test(api, getters_and_void_calls_take_null) {
  /* Neutral answers, no crash. */
  hs_bench_options_init(NULL);
  hs_bench_results_free(NULL);
  cr_expect_eq(hs_bench_results_count(NULL), 0);
  cr_expect_null(hs_bench_results_figure(NULL, 0));
  cr_expect_str_eq(hs_bench_results_dataset(NULL), "");
  int fan[4];
  cr_expect_eq(hs_bench_results_fanouts(NULL, fan, 4), 0);
  cr_expect_eq(hs_bench_results_batch(NULL), 0);
  cr_expect_eq(hs_bench_results_runs(NULL), 0);
  cr_expect_eq(hs_bench_compare(NULL, NULL, NULL, 0), 0);
  hs_board_profile_free(NULL);
  cr_expect_str_eq(hs_board_profile_name(NULL), "");
  cr_expect_str_eq(hs_board_profile_description(NULL), "");
  cr_expect_str_eq(hs_board_profile_path(NULL), "");
  hs_placement_request_init_sized(NULL, sizeof(hs_placement_request));
  hs_placement_request_settings(NULL, NULL);
  hs_placement_free(NULL);
  char buf[8] = "x";
  cr_expect_eq(hs_placement_describe(NULL, buf, sizeof buf), 0);
  cr_expect_str_eq(buf, "");
  hs_bringup_options_init(NULL);
  hs_bringup_report_free(NULL);
  cr_expect_eq(hs_bringup_report_check_count(NULL), 0);
  cr_expect_null(hs_bringup_report_check(NULL, 0));
  cr_expect_eq(hs_bringup_report_measurement_count(NULL), 0);
  cr_expect_null(hs_bringup_report_measurement(NULL, 0));
  cr_expect_null(hs_bringup_report_find(NULL, "x"));
  int p = 7, f = 7, sk = 7;
  hs_bringup_report_counts(NULL, &p, &f, &sk);
  cr_expect(p == 0 && f == 0 && sk == 0);
  cr_expect_str_eq(hs_bringup_report_board(NULL), "");
  cr_expect_eq(hs_bringup_report_seconds(NULL), 0.0);
  hs_device_info_write_json(NULL, NULL, 0);
  hs_device_info_write_json(stdout, NULL, 0);
  hs_dataset_close(NULL);
  hs_dataset_info_init_sized(NULL, sizeof(hs_dataset_info));
  hs_dataset_stats_init_sized(NULL, sizeof(hs_dataset_stats));
  hs_convert_opts_init_sized(NULL, HS_IMPORT_LINQS, sizeof(hs_convert_opts));
  hs_generate_opts_init_sized(NULL, HS_GENERATE_SBM, sizeof(hs_generate_opts));
  hs_generate_summary_init_sized(NULL, sizeof(hs_generate_summary));
  hs_device_info_init_sized(NULL, sizeof(hs_device_info));
  hs_runtime_options_init_sized(NULL, sizeof(hs_runtime_options));
  hs_session_config_init_sized(NULL, sizeof(hs_session_config));
  hs_epoch_stats_init_sized(NULL, sizeof(hs_epoch_stats));
  hs_settings_init_sized(NULL, sizeof(hs_settings));
  hs_runtime_close(NULL);
  cr_expect_eq(hs_runtime_device_count(NULL), 0);
  cr_expect_null(hs_runtime_device(NULL, 0));
  cr_expect_eq(hs_runtime_platform_count(NULL), 0);
  cr_expect_null(hs_runtime_platform(NULL, 0));
  cr_expect_null(hs_runtime_topology(NULL));
  cr_expect_null(hs_runtime_settings(NULL));
  cr_expect_null(hs_runtime_board(NULL));
  cr_expect_eq(hs_runtime_host_cores(NULL), 1); /* unknown: one core, as documented */
  hs_session_destroy(NULL);
  buf[0] = 'x';
  cr_expect_eq(hs_session_describe(NULL, buf, sizeof buf), 0);
  cr_expect_str_eq(buf, "");
  hs_session_set_progress(NULL, NULL, NULL);
  hs_session_set_stop_flag(NULL, NULL);
  cr_expect_eq(hs_session_epoch(NULL), 0);
  cr_expect_eq(hs_session_num_classes(NULL), 0);
  cr_expect_null(hs_program_name(-1));
  /* Names of values outside their enums are never NULL. */
  cr_expect_not_null(hs_transfer_name((hs_transfer)99));
  cr_expect_not_null(hs_feature_pages_name((hs_feature_pages)99));
  cr_expect_not_null(hs_full_inference_name((hs_full_inference)99));
  cr_expect_not_null(hs_gemm_provider_name((hs_gemm_provider)99));
  cr_expect_not_null(hs_stage_name((hs_stage)99));
  cr_expect_not_null(hs_pipeline_mode_name((hs_pipeline_mode)99));
  cr_expect_not_null(hs_cache_fill_name((hs_cache_fill)99));
  cr_expect_not_null(hs_role_link_name((hs_role_link)99));
  cr_expect_not_null(hs_dtype_name((hs_dtype)99));
  cr_expect_not_null(hs_feat_format_name((hs_feat_format)99));
  cr_expect_not_null(hs_model_kind_name((hs_model_kind)99));
  cr_expect_not_null(hs_device_type_name((hs_device_type)99));
  cr_expect_not_null(hs_bringup_level_name((hs_bringup_level)99));
  cr_expect_not_null(hs_check_result_name((hs_check_result)99));
  cr_expect_not_null(hs_bench_workload_name((hs_bench_workload)99));
  cr_expect_not_null(hs_strerror((hs_status)99));
}

/* A tiny dataset, so that session creation gets as far as the
 * configuration check (which runs before placement and device work). */
static char *tiny_dataset(void) {
  char *dir = tu_mkdtemp();
  char *dst = tu_path(dir, "g");
  hs_generate_opts o;
  hs_generate_opts_init(&o, HS_GENERATE_SBM);
  o.num_vertices = 64;
  o.num_classes = 2;
  o.num_features = 4;
  cr_assert_eq(hs_generate(dst, &o, NULL, NULL), HS_OK, "%s", hs_last_error());
  free(dst);
  return dir;
}

/* Session creation with cfg as `mutate` leaves it: refused, naming `field`. */
static void expect_refused(hs_runtime *rt, hs_dataset *ds, void (*mutate)(hs_session_config *),
                           const char *field) {
  hs_session_config c;
  hs_session_config_init(&c);
  mutate(&c);
  hs_session *s = NULL;
  hs_status st = hs_session_create(rt, ds, &c, &s);
  cr_expect_eq(st, HS_ERR_INVALID_ARG, "%s: %s (%s)", field, hs_strerror(st), hs_last_error());
  cr_expect_null(s);
  cr_expect(strstr(hs_last_error(), field) != NULL, "'%s' does not name %s", hs_last_error(),
            field);
}

static void lr_inf(hs_session_config *c) { c->lr = INFINITY; }
static void lr_nan(hs_session_config *c) { c->lr = NAN; }
static void lr_zero(hs_session_config *c) { c->lr = 0; }
static void optimizer_9(hs_session_config *c) { c->optimizer = (hs_optimizer)9; }
static void pipeline_99(hs_session_config *c) { c->pipeline = (hs_pipeline_mode)99; }
static void cache_fill_42(hs_session_config *c) { c->cache_fill = (hs_cache_fill)42; }
static void cache_rows_neg(hs_session_config *c) { c->cache_rows = -5; }
static void dropout_nan(hs_session_config *c) { c->dropout = NAN; }
static void wd_inf(hs_session_config *c) { c->weight_decay = INFINITY; }
static void depth_big(hs_session_config *c) { c->depth = 65; }
static void batch_zero(hs_session_config *c) { c->batch_size = 0; }
static void hidden_big(hs_session_config *c) { c->hidden = HS_MAX_HIDDEN + 1; }
static void layers_zero(hs_session_config *c) { c->n_layers = 0; }
static void fanout_bad(hs_session_config *c) { c->fanouts[1] = -7; }
static void transfer_bad(hs_session_config *c) { c->transfer = (hs_transfer)3; }
static void pages_bad(hs_session_config *c) { c->feature_pages = (hs_feature_pages)-1; }

Test(api, session_config_fields_are_validated_at_creation) {
  char *dir = tiny_dataset();
  char *path = tu_path(dir, "g");
  hs_dataset *ds;
  cr_assert_eq(hs_dataset_open(path, &ds), HS_OK, "%s", hs_last_error());
  hs_runtime *rt;
  hs_status st = hs_runtime_open(&rt, NULL);
  if (st == HS_ERR_NO_DEVICE) cr_skip_test("no OpenCL device");
  cr_assert_eq(st, HS_OK, "%s", hs_last_error());
  expect_refused(rt, ds, lr_inf, "lr");
  expect_refused(rt, ds, lr_nan, "lr");
  expect_refused(rt, ds, lr_zero, "lr");
  expect_refused(rt, ds, optimizer_9, "optimizer");
  expect_refused(rt, ds, pipeline_99, "pipeline");
  expect_refused(rt, ds, cache_fill_42, "cache_fill");
  expect_refused(rt, ds, cache_rows_neg, "cache_rows");
  expect_refused(rt, ds, dropout_nan, "dropout");
  expect_refused(rt, ds, wd_inf, "weight_decay");
  expect_refused(rt, ds, depth_big, "depth");
  expect_refused(rt, ds, batch_zero, "batch_size");
  expect_refused(rt, ds, hidden_big, "hidden");
  expect_refused(rt, ds, layers_zero, "n_layers");
  expect_refused(rt, ds, fanout_bad, "fanouts[1]");
  expect_refused(rt, ds, transfer_bad, "transfer");
  expect_refused(rt, ds, pages_bad, "feature_pages");
  hs_runtime_close(rt);
  hs_dataset_close(ds);
  free(path);
  tu_rmtree(dir);
}
