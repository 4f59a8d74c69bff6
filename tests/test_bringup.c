/* Bring-up on this machine's OpenCL CPU device (PoCL): quick and standard
 * pass on generic-cpu with every kernel family present; the JSON and JUnit
 * reports parse and agree with the report; a deliberately wrong gather
 * kernel fails (and leaves normal runs untouched); an absent optional
 * device is a skip and an absent required one a failure; the command's
 * exit statuses. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/hs_json.h"
#include "hetsage.h"
#include "hetsage/bringup.h"
#include "icd_dir.h"
#include "tool_run.h"
#include "xml_check.h"

static hs_runtime *open_rt(void) {
  hs_runtime *rt = NULL;
  hs_status st = hs_runtime_open(&rt, NULL);
  if (st != HS_OK) cr_skip_test("no OpenCL device: %s", hs_last_error());
  return rt;
}

static hs_board_profile *load(const char *name) {
  hs_board_profile *p = NULL;
  cr_assert_eq(hs_board_profile_load(name, &p), HS_OK, "%s", hs_last_error());
  return p;
}

static hs_board_profile *parse(const char *text) {
  hs_board_profile *p = NULL;
  cr_assert_eq(hs_board_profile_parse(text, "test-board.ini", NULL, &p), HS_OK, "%s",
               hs_last_error());
  return p;
}

static hs_bringup_report *run(hs_runtime *rt, const hs_board_profile *p, hs_bringup_level level,
                              const char *inject) {
  hs_bringup_options o;
  hs_bringup_options_init(&o);
  o.level = level;
  o.inject = inject;
  hs_bringup_report *r = NULL;
  hs_status st = hs_bringup_run(rt, p, &o, NULL, NULL, &r);
  cr_assert_eq(st, HS_OK, "%s: %s", hs_strerror(st), hs_last_error());
  return r;
}

static void expect_result(const hs_bringup_report *r, const char *name, hs_check_result want) {
  const hs_bringup_check *c = hs_bringup_report_find(r, name);
  cr_assert_not_null(c, "no check named %s", name);
  cr_expect_eq(c->result, want, "%s: %s, want %s: %s", name, hs_check_result_name(c->result),
               hs_check_result_name(want), c->detail);
}

/* Every check passed, except skips whose reason says why. */
static void expect_all_pass(const hs_bringup_report *r) {
  for (size_t i = 0; i < hs_bringup_report_check_count(r); i++) {
    const hs_bringup_check *c = hs_bringup_report_check(r, i);
    cr_expect_neq(c->result, HS_CHECK_FAIL, "%s failed: %s", c->name, c->detail);
    cr_expect_gt(strlen(c->detail), 0, "%s has no detail", c->name);
  }
}

Test(bringup, quick_passes_on_generic_cpu) {
  hs_runtime *rt = open_rt();
  hs_board_profile *p = load("generic-cpu");
  hs_bringup_report *r = run(rt, p, HS_BRINGUP_QUICK, "");
  expect_all_pass(r);
  expect_result(r, "board.discovery", HS_CHECK_PASS);
  expect_result(r, "board.device.cpu", HS_CHECK_PASS);
  expect_result(r, "board.placement", HS_CHECK_PASS);
  expect_result(r, "dev0.require.min_global_memory", HS_CHECK_PASS);
  expect_result(r, "dev0.selftest", HS_CHECK_PASS);
  expect_result(r, "dev0.sample.uniform", HS_CHECK_PASS);
  expect_result(r, "dev0.gather.device", HS_CHECK_PASS);
  expect_result(r, "dev0.gemm.default", HS_CHECK_PASS);
  /* quick leaves the rest out rather than passing it */
  cr_expect_null(hs_bringup_report_find(r, "dev0.train.step.cora"));
  cr_expect_null(hs_bringup_report_find(r, "e2e.sub-devices"));
  cr_expect_eq(hs_bringup_report_level(r), HS_BRINGUP_QUICK);
  cr_expect_str_eq(hs_bringup_report_board(r), "generic-cpu");
  hs_bringup_report_free(r);
  hs_board_profile_free(p);
  hs_runtime_close(rt);
}

static const char *const standard_checks[] = {
    "sample.uniform", "sample.uniform_replace", "sample.weighted", "sample.weighted_replace",
    "sample.threshold", "sample.budget", "sample.single_work_item", "reindex.parallel",
    "reindex.sequential", "gather.device",
    "train.transpose", "train.agg_fwd", "train.agg_bwd", "train.elementwise", "train.colsum",
    "train.loss", "train.optimizer", "gemm.default", "gemm.cblas", "gemm.builtin",
    "gemm.clblast", "train.step.generated", "train.step.cora",
};

static void check_json(const char *path, const hs_bringup_report *r, int n_devices) {
  hs_json *doc = NULL;
  hs_status st = hs__json_parse_file(path, &doc);
  cr_assert_eq(st, HS_OK, "%s", hs_last_error());
  cr_expect_str_eq(hs__json_text(doc, "board", ""), "generic-cpu");
  cr_expect_str_eq(hs__json_text(doc, "level", ""), "standard");
  const hs_json *results = hs__json_get(doc, "results");
  cr_assert(results && results->type == HS_JSON_OBJECT);
  cr_expect_eq(results->n, hs_bringup_report_check_count(r));
  for (size_t i = 0; i < hs_bringup_report_check_count(r); i++) {
    const hs_bringup_check *c = hs_bringup_report_check(r, i);
    const char *got = hs__json_text(results, c->name, NULL);
    cr_assert_not_null(got, "results lacks %s", c->name);
    cr_expect_str_eq(got, hs_check_result_name(c->result), "%s", c->name);
  }
  const hs_json *devices = hs__json_get(doc, "devices");
  cr_assert(devices && devices->type == HS_JSON_ARRAY);
  cr_expect_eq((int)devices->n, n_devices);
  for (size_t i = 0; i < devices->n; i++) {
    const hs_json *d = &devices->items[i];
    cr_expect_not_null(hs__json_text(d, "name", NULL));
    cr_expect_not_null(hs__json_text(d, "extensions", NULL));
    cr_expect_gt(hs__json_number(d, "compute_units", 0), 0);
    cr_expect_not_null(hs__json_get(hs__json_get(d, "partition"), "by_counts"));
  }
  const hs_json *meas = hs__json_get(doc, "measurements");
  cr_assert(meas && meas->type == HS_JSON_OBJECT);
  static const char *const peaks[] = {"dev0.h2d_gbps", "dev0.d2h_gbps", "dev0.device_copy_gbps",
                                      "dev0.launch_latency_us", "dev0.sgemm_gflops",
                                      "dev0.random_read_mops"};
  for (size_t i = 0; i < sizeof peaks / sizeof peaks[0]; i++) {
    const hs_json *m = hs__json_get(meas, peaks[i]);
    cr_assert_not_null(m, "measurements lacks %s", peaks[i]);
    cr_expect_gt(hs__json_number(m, "median", 0), 0, "%s", peaks[i]);
  }
  const hs_json *sum = hs__json_get(doc, "summary");
  int pass, fail, skip;
  hs_bringup_report_counts(r, &pass, &fail, &skip);
  cr_expect_eq((int)hs__json_number(sum, "pass", -1), pass);
  cr_expect_eq((int)hs__json_number(sum, "fail", -1), fail);
  cr_expect_eq((int)hs__json_number(sum, "skip", -1), skip);
  hs__json_free(doc);
}

static void check_junit(const char *path, const hs_bringup_report *r) {
  char *xml = tool_slurp(path);
  xml_counts c = {.names = {"testsuites", "testsuite", "testcase", "failure", "skipped"},
                  .n_names = 5};
  const char *why = xml_check(xml, &c);
  cr_assert_null(why, "JUnit XML malformed: %s", why);
  int pass, fail, skip;
  hs_bringup_report_counts(r, &pass, &fail, &skip);
  cr_expect_eq(c.by_name[0], 1);
  cr_expect_geq(c.by_name[1], 3); /* board, dev0, dev0.sub1, host, e2e */
  cr_expect_eq(c.by_name[2], (int)hs_bringup_report_check_count(r));
  cr_expect_eq(c.by_name[3], fail);
  cr_expect_eq(c.by_name[4], skip);
  char attr[64];
  snprintf(attr, sizeof attr, "tests=\"%zu\"", hs_bringup_report_check_count(r));
  cr_expect_not_null(strstr(xml, attr), "root lacks %s", attr);
  free(xml);
}

Test(bringup, standard_passes_and_its_reports_validate, .timeout = 300) {
  hs_runtime *rt = open_rt();
  hs_board_profile *p = load("generic-cpu");
  hs_bringup_report *r = run(rt, p, HS_BRINGUP_STANDARD, "");
  expect_all_pass(r);
  int n = hs_runtime_device_count(rt);
  int cpu = -1;
  for (int i = 0; i < n && cpu < 0; i++)
    if (hs_runtime_device(rt, i)->type == HS_DEVICE_CPU) cpu = i;
  cr_assert_geq(cpu, 0);
  char name[96];
  for (size_t i = 0; i < sizeof standard_checks / sizeof standard_checks[0]; i++) {
    snprintf(name, sizeof name, "dev%d.%s", cpu, standard_checks[i]);
    const hs_bringup_check *c = hs_bringup_report_find(r, name);
    cr_assert_not_null(c, "no check %s", name);
    /* only a GEMM provider this build or device lacks may skip */
    if (strncmp(standard_checks[i], "gemm.", 5) != 0 || !strcmp(standard_checks[i], "gemm.default"))
      cr_expect_eq(c->result, HS_CHECK_PASS, "%s: %s", name, c->detail);
  }
  if (hs_runtime_device(rt, cpu)->partition_by_counts && hs_runtime_device(rt, cpu)->compute_units >= 2) {
    snprintf(name, sizeof name, "dev%d.sub%u.train.step.cora", cpu, hs_runtime_device(rt, cpu)->compute_units / 2);
    expect_result(r, name, HS_CHECK_PASS);
    expect_result(r, "e2e.sub-devices", HS_CHECK_PASS);
    expect_result(r, "e2e.same-device", HS_CHECK_PASS);
  }
  expect_result(r, "host.gather", HS_CHECK_PASS);
  snprintf(name, sizeof name, "dev%d.peak.random_read_mops", cpu);
  expect_result(r, name, HS_CHECK_PASS);

  char json[512], junit[512];
  tool_tmp(json, sizeof json, "report.json");
  tool_tmp(junit, sizeof junit, "report.xml");
  FILE *f = fopen(json, "w");
  cr_assert_not_null(f);
  cr_assert_eq(hs_bringup_report_write_json(r, f), HS_OK);
  fclose(f);
  f = fopen(junit, "w");
  cr_assert_not_null(f);
  cr_assert_eq(hs_bringup_report_write_junit(r, f), HS_OK);
  fclose(f);
  check_json(json, r, n);
  check_junit(junit, r);
  unlink(json);
  unlink(junit);
  hs_bringup_report_free(r);
  hs_board_profile_free(p);
  hs_runtime_close(rt);
}

Test(bringup, a_wrong_gather_kernel_fails_and_leaves_normal_runs_alone) {
  hs_runtime *rt = open_rt();
  hs_board_profile *p = load("generic-cpu");
  hs_bringup_report *r = run(rt, p, HS_BRINGUP_QUICK, "gather");
  expect_result(r, "dev0.gather.device", HS_CHECK_FAIL);
  cr_expect_not_null(strstr(hs_bringup_report_find(r, "dev0.gather.device")->detail, "differs"));
  expect_result(r, "dev0.sample.uniform", HS_CHECK_PASS);
  int fail;
  hs_bringup_report_counts(r, NULL, &fail, NULL);
  cr_expect_eq(fail, 1);
  hs_bringup_report_free(r);
  /* The faulty variant is a program of its own: a normal run right after,
   * with the same binary cache, gathers right. */
  r = run(rt, p, HS_BRINGUP_QUICK, "");
  expect_result(r, "dev0.gather.device", HS_CHECK_PASS);
  hs_bringup_report_free(r);
  /* The environment variable selects it too (read when a runtime opens);
   * an unknown kernel is refused. */
  setenv("HETSAGE_BRINGUP_INJECT", "gather", 1);
  hs_runtime *irt = open_rt();
  unsetenv("HETSAGE_BRINGUP_INJECT");
  r = run(irt, p, HS_BRINGUP_QUICK, NULL);
  expect_result(r, "dev0.gather.device", HS_CHECK_FAIL);
  hs_bringup_report_free(r);
  hs_runtime_close(irt);
  hs_bringup_options o;
  hs_bringup_options_init(&o);
  o.inject = "sampler";
  cr_expect_eq(hs_bringup_run(rt, p, &o, NULL, NULL, &r), HS_ERR_INVALID_ARG);
  cr_expect_null(r);
  hs_board_profile_free(p);
  hs_runtime_close(rt);
}

Test(bringup, absent_optional_device_skips_and_absent_required_fails) {
  hs_runtime *rt = open_rt();
  int n = hs_runtime_device_count(rt);
  for (int i = 0; i < n; i++)
    if (hs_runtime_device(rt, i)->type == HS_DEVICE_GPU) cr_skip_test("this machine has a GPU");
  /* Odd characters in the name and path travel into both reports. */
  hs_board_profile *p = parse(
      "[board]\nname = cpu<&>\"gpu'\n[device.cpu]\ntype = cpu\n[device.gpu]\ntype = gpu\n"
      "required = false\n[thresholds]\ngpu.h2d_gbps = 10\n");
  hs_bringup_report *r = run(rt, p, HS_BRINGUP_QUICK, "");
  expect_result(r, "board.device.cpu", HS_CHECK_PASS);
  expect_result(r, "board.device.gpu", HS_CHECK_SKIP);
  expect_all_pass(r);
  int skip;
  hs_bringup_report_counts(r, NULL, NULL, &skip);
  cr_expect_eq(skip, 1);
  char path[512];
  tool_tmp(path, sizeof path, "absent.xml");
  FILE *f = fopen(path, "w");
  cr_assert_not_null(f);
  cr_assert_eq(hs_bringup_report_write_junit(r, f), HS_OK);
  fclose(f);
  char *xml = tool_slurp(path);
  xml_counts c = {.names = {"skipped", "failure"}, .n_names = 2};
  const char *why = xml_check(xml, &c);
  cr_expect_null(why, "%s", why);
  cr_expect_eq(c.by_name[0], 1);
  cr_expect_eq(c.by_name[1], 0);
  cr_expect_not_null(strstr(xml, "cpu&lt;&amp;&gt;&quot;gpu&apos;"));
  free(xml);
  tool_tmp(path, sizeof path, "absent.json");
  f = fopen(path, "w");
  cr_assert_eq(hs_bringup_report_write_json(r, f), HS_OK);
  fclose(f);
  hs_json *doc = NULL;
  cr_assert_eq(hs__json_parse_file(path, &doc), HS_OK, "%s", hs_last_error());
  cr_expect_str_eq(hs__json_text(doc, "board", ""), "cpu<&>\"gpu'");
  cr_expect_str_eq(hs__json_text(hs__json_get(doc, "results"), "board.device.gpu", ""), "skip");
  hs__json_free(doc);
  unlink(path);
  hs_bringup_report_free(r);
  hs_board_profile_free(p);

  p = load("gpu-single");
  r = run(rt, p, HS_BRINGUP_QUICK, "");
  expect_result(r, "board.device.gpu", HS_CHECK_FAIL);
  expect_result(r, "board.placement", HS_CHECK_FAIL);
  cr_expect_not_null(strstr(hs_bringup_report_find(r, "board.device.gpu")->detail, "required"));
  hs_bringup_report_free(r);
  hs_board_profile_free(p);
  hs_runtime_close(rt);
}

/* A device outside the board (here a fake GPU that cannot even open a
 * context, standing for a second OpenCL implementation installed beside
 * PoCL) is none of bring-up's business: generic-cpu passes, and the
 * outsider is a skip that says why, never a failure. */
Test(bringup, devices_outside_the_profile_are_left_alone) {
  const char *fake = getenv("HS_FAKE_ICD");
  char pocl[256];
  if (!fake) cr_skip_test("HS_FAKE_ICD not set");
  if (!icd_library("pocl", pocl, sizeof pocl)) cr_skip_test("PoCL is not installed");
  setenv("FAKE_ICD_MODE", "device", 1);
  const char *files[2] = {"fake.icd", "pocl.icd"}, *libs[2] = {fake, pocl};
  icd_dir d;
  icd_dir_open(&d, files, libs, 2);
  hs_runtime *rt = open_rt();
  int n = hs_runtime_device_count(rt), outsider = -1;
  for (int i = 0; i < n; i++)
    if (strcmp(hs_runtime_device(rt, i)->name, "hetsage fake GPU") == 0) outsider = i;
  cr_assert_geq(outsider, 0, "the fake GPU was not discovered");
  hs_board_profile *p = load("generic-cpu");
  hs_bringup_report *r = run(rt, p, HS_BRINGUP_QUICK, "");
  expect_all_pass(r);
  char name[64];
  snprintf(name, sizeof name, "dev%d.open", outsider);
  expect_result(r, name, HS_CHECK_SKIP);
  cr_expect(strstr(hs_bringup_report_find(r, name)->detail, "outside board profile") != NULL,
            "%s", hs_bringup_report_find(r, name)->detail);
  snprintf(name, sizeof name, "dev%d.selftest", outsider);
  cr_expect_null(hs_bringup_report_find(r, name), "bring-up ran kernels on the outsider");
  snprintf(name, sizeof name, "dev%d.selftest", 1 - outsider);
  expect_result(r, name, HS_CHECK_PASS);
  hs_bringup_report_free(r);
  hs_board_profile_free(p);
  hs_runtime_close(rt);
  icd_dir_close(&d);
}

/* ---- the command ------------------------------------------------------------ */

static int command(const char *env, const char *args) {
  char full[1200];
  snprintf(full, sizeof full, "bringup %s", args);
  return tool_run(env, full, NULL, 0);
}

Test(bringup, command_exit_status_and_files) {
  hs_runtime *rt = open_rt();
  hs_runtime_close(rt);
  char json[512], junit[512], args[1200];
  tool_tmp(json, sizeof json, "cli.json");
  tool_tmp(junit, sizeof junit, "cli.xml");
  snprintf(args, sizeof args, "--level quick --json %s --junit %s", json, junit);
  cr_expect_eq(command("", args), 0);
  hs_json *doc = NULL;
  cr_assert_eq(hs__json_parse_file(json, &doc), HS_OK, "%s", hs_last_error());
  cr_expect_str_eq(hs__json_text(doc, "level", ""), "quick");
  cr_expect_str_eq(hs__json_text(hs__json_get(doc, "results"), "dev0.selftest", ""), "pass");
  hs__json_free(doc);
  char *xml = tool_slurp(junit);
  xml_counts c = {.names = {"testcase"}, .n_names = 1};
  cr_expect_null(xml_check(xml, &c));
  cr_expect_gt(c.by_name[0], 5);
  free(xml);
  cr_expect_eq(command("HETSAGE_BRINGUP_INJECT=gather", "--level quick"), 1);
  cr_expect_eq(command("", "--board gpu-single --level quick"), 1);
  cr_expect_eq(command("", "--board /nonexistent/board.ini"), 2);
  cr_expect_eq(command("", "--level sideways"), 2);
  cr_expect_eq(command("HETSAGE_BRINGUP_INJECT=sampler", "--level quick"), 2);
  unlink(json);
  unlink(junit);
}
