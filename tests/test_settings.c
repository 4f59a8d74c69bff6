/* Settings: the HETSAGE_* environment read in one place, each variable
 * with its API field; a bad value of any of them is an error naming the
 * variable and what it accepts. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hetsage.h"
#include "tool_run.h"

/* Every variable hetsage reads: a value it takes, a bogus one, and what
 * the error must say about what it accepts. */
static const struct {
  const char *var, *good, *bogus, *accepts;
} vars[] = {
    {"HETSAGE_DEBUG", "build,cache", "buidl", "device, build, data"},
    {"HETSAGE_CACHE_DIR", "/tmp/x", NULL, NULL},
    {"HETSAGE_BOARDS_DIR", "/tmp/a:/tmp/b", NULL, NULL},
    {"HETSAGE_MAX_ALLOC", "64M", "lots", "a size in bytes"},
    {"HETSAGE_GEMM", "builtin", "fastest", "auto, cblas, clblast or builtin"},
    {"HETSAGE_SAMPLER", "cpu", NULL, NULL},
    {"HETSAGE_TRAINER", "0", NULL, NULL},
    {"HETSAGE_TRANSFER", "host", "sideways", "auto, host or device"},
    {"HETSAGE_FEATURE_PAGES", "huge", "giant", "auto, file or huge"},
    {"HETSAGE_FULL_INFERENCE", "layerwise", "both", "auto, layerwise or fields"},
    {"HETSAGE_BRINGUP_INJECT", "gather", "sampler", "gather"},
    {"HETSAGE_BENCH_DIR", "/tmp/bench", NULL, NULL},
    {"HETSAGE_GEMM_THREADS", "3", "0", "a count, 1..4096"},
    {"HS_PEER_PYTHON", "/usr/bin/python3", NULL, NULL},
};
#define N_VARS (sizeof vars / sizeof vars[0])

/* The tests' own variables (HETSAGE_CACHE_DIR) out of the way. */
static void clear_env(void) {
  for (size_t i = 0; i < N_VARS; i++) unsetenv(vars[i].var);
}

TestSuite(settings, .init = clear_env);

Test(settings, every_variable_sets_its_field) {
  for (size_t i = 0; i < N_VARS; i++) setenv(vars[i].var, vars[i].good, 1);
  hs_settings s;
  hs_settings_init(&s);
  cr_assert_eq(hs_settings_from_env(&s), HS_OK, "%s", hs_last_error());
  cr_expect_str_eq(s.debug, "build,cache");
  cr_expect_str_eq(s.cache_dir, "/tmp/x");
  cr_expect_str_eq(s.boards_dir, "/tmp/a:/tmp/b");
  cr_expect_eq(s.max_alloc, 64u << 20);
  cr_expect_eq(s.gemm, HS_GEMM_PROVIDER_BUILTIN);
  cr_expect_str_eq(s.sampler, "cpu");
  cr_expect_str_eq(s.trainer, "0");
  cr_expect_eq(s.transfer, HS_TRANSFER_HOST);
  cr_expect_eq(s.feature_pages, HS_FEATURE_PAGES_HUGE);
  cr_expect_eq(s.full_inference, HS_FULL_INFERENCE_LAYERWISE);
  cr_expect_str_eq(s.bringup_inject, "gather");
  cr_expect_str_eq(s.bench_dir, "/tmp/bench");
  cr_expect_eq(s.gemm_threads, 3);
  cr_expect_str_eq(s.peer_python, "/usr/bin/python3");
  clear_env();
  /* An empty variable is unset; "auto" is the default. */
  setenv("HETSAGE_TRANSFER", "", 1);
  setenv("HETSAGE_GEMM", "auto", 1);
  hs_settings_init(&s);
  cr_assert_eq(hs_settings_from_env(&s), HS_OK, "%s", hs_last_error());
  cr_expect_eq(s.transfer, HS_TRANSFER_AUTO);
  cr_expect_eq(s.gemm, HS_GEMM_PROVIDER_AUTO);
  hs_log_enable(NULL);
}

/* A bogus value of any variable is refused, by name, with what it takes,
 * both by hs_settings_from_env and when a runtime opens. */
Test(settings, a_bogus_value_of_any_variable_is_an_error) {
  for (size_t i = 0; i < N_VARS; i++) {
    if (!vars[i].bogus) continue;
    clear_env();
    setenv(vars[i].var, vars[i].bogus, 1);
    hs_settings s;
    hs_settings_init(&s);
    hs_settings before = s;
    cr_expect_eq(hs_settings_from_env(&s), HS_ERR_INVALID_ARG, "%s=%s accepted", vars[i].var,
                 vars[i].bogus);
    const char *d = hs_last_error();
    cr_expect(strstr(d, vars[i].var) && strstr(d, vars[i].bogus) && strstr(d, vars[i].accepts),
              "%s=%s: '%s' lacks the name, the value or '%s'", vars[i].var, vars[i].bogus, d,
              vars[i].accepts);
    cr_expect_arr_eq(&s, &before, sizeof s, "%s: settings changed on an error", vars[i].var);
    hs_runtime *rt = NULL;
    cr_expect_eq(hs_runtime_open(&rt, NULL), HS_ERR_INVALID_ARG, "%s", vars[i].var);
    cr_expect(strstr(hs_last_error(), vars[i].var), "%s", hs_last_error());
    cr_expect_null(rt);
  }
  clear_env();
  /* A misspelt name would otherwise be silently without effect. */
  setenv("HETSAGE_DEBGU", "all", 1);
  hs_settings s;
  hs_settings_init(&s);
  cr_expect_eq(hs_settings_from_env(&s), HS_ERR_INVALID_ARG);
  cr_expect(strstr(hs_last_error(), "HETSAGE_DEBGU") && strstr(hs_last_error(), "HETSAGE_DEBUG"),
            "%s", hs_last_error());
  unsetenv("HETSAGE_DEBGU");
  /* Sizes: a zero is no size. */
  setenv("HETSAGE_MAX_ALLOC", "0", 1);
  cr_expect_eq(hs_settings_from_env(&s), HS_ERR_INVALID_ARG);
  unsetenv("HETSAGE_MAX_ALLOC");
}

/* A field the API sets wins over the environment, whose value is still
 * checked; HS_RUNTIME_IGNORE_ENV leaves the environment out entirely. */
Test(settings, the_api_wins_and_the_environment_can_be_ignored) {
  setenv("HETSAGE_TRANSFER", "host", 1);
  setenv("HETSAGE_MAX_ALLOC", "1M", 1);
  hs_settings api;
  hs_settings_init(&api);
  api.transfer = HS_TRANSFER_DEVICE;
  api.cache_dir = "/tmp/hs-settings-cache";
  hs_runtime_options o;
  hs_runtime_options_init(&o);
  o.settings = &api;
  hs_runtime *rt = NULL;
  hs_status st = hs_runtime_open(&rt, &o);
  if (st == HS_ERR_NO_DEVICE) cr_skip_test("no OpenCL device");
  cr_assert_eq(st, HS_OK, "%s", hs_last_error());
  const hs_settings *got = hs_runtime_settings(rt);
  cr_expect_eq(got->transfer, HS_TRANSFER_DEVICE);
  cr_expect_eq(got->max_alloc, 1u << 20, "the environment fills what the API left unset");
  cr_expect_str_eq(got->cache_dir, "/tmp/hs-settings-cache");
  cr_expect_neq(got->cache_dir, api.cache_dir, "the runtime keeps its own copy");
  hs_runtime_close(rt);

  /* Ignored, even a bogus value does not matter; no cache folder. */
  setenv("HETSAGE_GEMM", "fastest", 1);
  hs_settings_init(&api);
  o.flags = HS_RUNTIME_IGNORE_ENV;
  cr_assert_eq(hs_runtime_open(&rt, &o), HS_OK, "%s", hs_last_error());
  got = hs_runtime_settings(rt);
  cr_expect_eq(got->transfer, HS_TRANSFER_AUTO);
  cr_expect_eq(got->max_alloc, 0);
  cr_expect_eq(got->gemm, HS_GEMM_PROVIDER_AUTO);
  cr_expect_null(got->cache_dir);
  char dir[512];
  cr_expect_eq(hs_dataset_bundled(rt, "cora", dir, sizeof dir), HS_ERR_NOT_FOUND,
               "without a cache folder there is nowhere to import to");
  hs_runtime_close(rt);
  clear_env();
  o.flags = 0x80;
  cr_expect_eq(hs_runtime_open(&rt, &o), HS_ERR_INVALID_ARG);
  cr_expect(strstr(hs_last_error(), "HS_RUNTIME_IGNORE_ENV"), "%s", hs_last_error());
}

/* Values given by API are checked as the environment's are. */
Test(settings, bad_api_values_are_refused_by_field) {
  hs_settings s;
  hs_settings_init(&s);
  cr_expect_eq(hs_settings_check(&s), HS_OK, "%s", hs_last_error());
  s.debug = "everything";
  cr_expect_eq(hs_settings_check(&s), HS_ERR_INVALID_ARG);
  cr_expect(strstr(hs_last_error(), "hs_settings.debug") && strstr(hs_last_error(), "everything"),
            "%s", hs_last_error());
  s.debug = NULL;
  s.transfer = (hs_transfer)9;
  cr_expect_eq(hs_settings_check(&s), HS_ERR_INVALID_ARG);
  cr_expect(strstr(hs_last_error(), "hs_settings.transfer 9"), "%s", hs_last_error());
  s.transfer = HS_TRANSFER_AUTO;
  s.boards_dir = "";
  cr_expect_eq(hs_settings_check(&s), HS_ERR_INVALID_ARG);
  cr_expect(strstr(hs_last_error(), "boards_dir"), "%s", hs_last_error());
  s.boards_dir = NULL;
  s.bringup_inject = "scatter";
  cr_expect_eq(hs_settings_check(&s), HS_ERR_INVALID_ARG);
  s.bringup_inject = NULL;
  hs_runtime_options o;
  hs_runtime_options_init(&o);
  s.gemm = (hs_gemm_provider)-1;
  o.settings = &s;
  hs_runtime *rt = NULL;
  cr_expect_eq(hs_runtime_open(&rt, &o), HS_ERR_INVALID_ARG);
  cr_expect(strstr(hs_last_error(), "hs_settings.gemm"), "%s", hs_last_error());
  cr_expect_eq(hs_log_enable("build,nope"), HS_ERR_INVALID_ARG);
  cr_expect(strstr(hs_last_error(), "nope"), "%s", hs_last_error());
  cr_expect_eq(hs_log_enable(""), HS_OK);
  cr_expect_str_eq(hs_full_inference_name(HS_FULL_INFERENCE_FIELDS), "fields");
  cr_expect_str_eq(hs_gemm_provider_name(HS_GEMM_PROVIDER_CBLAS), "cblas");
}

/* The command line stops before any command on a bad variable. */
Test(settings, the_tool_refuses_a_bad_variable) {
  char out[2048];
  cr_expect_eq(tool_run("HETSAGE_FULL_INFERENCE=sometimes", "version", out, sizeof out), 2,
               "%s", out);
  cr_expect(strstr(out, "HETSAGE_FULL_INFERENCE 'sometimes'"), "%s", out);
  cr_expect_eq(tool_run("HETSAGE_DEBUG=everything", "version", out, sizeof out), 2, "%s", out);
  cr_expect(strstr(out, "HETSAGE_DEBUG"), "%s", out);
  cr_expect_eq(tool_run("", "version", out, sizeof out), 0, "%s", out);
}

/* The environment is read in one place: nothing outside the settings
 * module of the library and the tool calls getenv. */
Test(settings, only_the_settings_module_reads_the_environment) {
  const char *root = getenv("HS_SOURCE_ROOT");
  if (!root) cr_skip_test("HS_SOURCE_ROOT is not set");
  char cmd[1024], out[2048] = "";
  snprintf(cmd, sizeof cmd,
           "cd '%s' && grep -rln 'getenv' runtime devices tools examples --include='*.c' "
           "--include='*.h' | grep -v '^runtime/core/settings.c$'",
           root);
  FILE *p = popen(cmd, "r");
  cr_assert_not_null(p);
  size_t n = fread(out, 1, sizeof out - 1, p);
  out[n] = '\0';
  pclose(p);
  cr_expect_str_empty(out, "getenv outside the settings module:\n%s", out);
}
