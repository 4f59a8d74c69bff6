/* Board profiles: every shipped profile parses; every kind of bad profile is
 * HS_ERR_PROFILE with a detail naming the file, the line and the key. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "board/hs_board.h"
#include "hetsage.h"

static char tmpdir[64];

static void make_tmpdir(void) {
  snprintf(tmpdir, sizeof tmpdir, "/tmp/hs-board-XXXXXX");
  cr_assert_not_null(mkdtemp(tmpdir));
}

static void remove_tmpdir(void) {
  DIR *d = opendir(tmpdir);
  if (!d) return;
  struct dirent *e;
  while ((e = readdir(d))) {
    if (e->d_name[0] == '.') continue;
    char p[512];
    snprintf(p, sizeof p, "%s/%s", tmpdir, e->d_name);
    unlink(p);
  }
  closedir(d);
  rmdir(tmpdir);
}

TestSuite(board, .init = make_tmpdir, .fini = remove_tmpdir);

/* Write `text` to <tmpdir>/<name>.ini; the path goes to `path`. */
static void write_profile(const char *name, const char *text, char *path,
                          size_t cap) {
  snprintf(path, cap, "%s/%s.ini", tmpdir, name);
  FILE *f = fopen(path, "w");
  cr_assert_not_null(f);
  fputs(text, f);
  fclose(f);
}

static hs_board_profile *load_ok(const char *text) {
  char path[256];
  write_profile("good", text, path, sizeof path);
  hs_board_profile *p = NULL;
  hs_status st = hs_board_profile_load(path, &p);
  cr_assert_eq(st, HS_OK, "%s", hs_last_error());
  return p;
}

/* The profile fails with HS_ERR_PROFILE and the detail says
 * "<path>:<line>:" and mentions `key` (and `also`, if given). */
static void expect_bad(const char *text, int line, const char *key,
                       const char *also) {
  char path[256], where[300];
  write_profile("bad", text, path, sizeof path);
  hs_board_profile *p = (hs_board_profile *)1;
  hs_status st = hs_board_profile_load(path, &p);
  const char *detail = hs_last_error();
  cr_assert_eq(st, HS_ERR_PROFILE, "status %d for:\n%s", st, text);
  cr_expect_null(p);
  snprintf(where, sizeof where, "%s:%d:", path, line);
  cr_expect(strstr(detail, where), "'%s' lacks '%s'", detail, where);
  cr_expect(strstr(detail, key), "'%s' lacks key '%s'", detail, key);
  if (also) cr_expect(strstr(detail, also), "'%s' lacks '%s'", detail, also);
}

#define BOARD "[board]\nname = t\n"

static const char *const shipped[] = {"generic-cpu", "gpu-single", "gpu-pair",
                                      "integrated-gpu", "fpga-sampler"};

Test(board, every_shipped_profile_parses) {
  const char *root = getenv("HS_SOURCE_ROOT");
  cr_assert_not_null(root);
  char dir[512];
  snprintf(dir, sizeof dir, "%s/boards", root);
  DIR *d = opendir(dir);
  cr_assert_not_null(d);
  int count = 0;
  struct dirent *e;
  while ((e = readdir(d))) {
    size_t n = strlen(e->d_name);
    if (n < 5 || strcmp(e->d_name + n - 4, ".ini") != 0) continue;
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    hs_board_profile *p = NULL;
    hs_status st = hs_board_profile_load(path, &p);
    cr_expect_eq(st, HS_OK, "%s: %s", path, hs_last_error());
    if (st != HS_OK) continue;
    /* The [board] name is the file's name, so that names find files. */
    cr_expect_eq(strlen(hs_board_profile_name(p)), n - 4, "%s", path);
    cr_expect(strncmp(hs_board_profile_name(p), e->d_name, n - 4) == 0);
    cr_expect_neq(hs_board_profile_description(p)[0], '\0');
    cr_expect_str_eq(hs_board_profile_path(p), path);
    hs_board_profile_free(p);
    count++;
  }
  closedir(d);
  cr_expect_geq(count, 5);
}

Test(board, shipped_profiles_found_by_name) {
  for (size_t i = 0; i < sizeof shipped / sizeof shipped[0]; i++) {
    hs_board_profile *p = NULL;
    cr_assert_eq(hs_board_profile_load(shipped[i], &p), HS_OK, "%s: %s",
                 shipped[i], hs_last_error());
    cr_expect_str_eq(hs_board_profile_name(p), shipped[i]);
    hs_board_profile_free(p);
  }
  hs_board_profile *p = NULL;
  cr_assert_eq(hs_board_profile_load(NULL, &p), HS_OK, "%s", hs_last_error());
  cr_expect_str_eq(hs_board_profile_name(p), HS_BOARD_DEFAULT);
  hs_board_profile_free(p);
}

Test(board, shipped_profiles_say_what_they_promise) {
  hs_board_profile *p = NULL;
  cr_assert_eq(hs_board_profile_load("generic-cpu", &p), HS_OK);
  cr_expect_eq(p->device_count, 1);
  cr_expect_eq(p->devices[0].type, HS_DEVICE_CPU);
  cr_expect_str_eq(p->roles.sampler, "cpu");
  cr_expect_str_eq(p->roles.trainer, "cpu");
  cr_expect_eq(p->require.min_global_memory, 256 << 20);
  hs_board_profile_free(p);

  cr_assert_eq(hs_board_profile_load("integrated-gpu", &p), HS_OK);
  cr_expect_eq(p->memory.zero_copy, 1);
  cr_expect_eq(p->devices[0].unified_memory, 1);
  cr_expect_eq(p->memory.headroom_percent, 25);
  hs_board_profile_free(p);

  cr_assert_eq(hs_board_profile_load("fpga-sampler", &p), HS_OK);
  const hs__board_device *fpga = hs__board_device_find(p, "fpga");
  cr_assert_not_null(fpga);
  cr_expect_eq(fpga->type, HS_DEVICE_ACCELERATOR);
  cr_expect_null(fpga->binary);
  const char *sample = fpga->program_binary[HS_PROG_SAMPLE];
  cr_assert_not_null(sample);
  /* Relative to the profile's folder. */
  const char *tail = "/boards/fpga/hetsage-sample.bin";
  size_t n = strlen(sample);
  cr_expect(n > strlen(tail) && strcmp(sample + n - strlen(tail), tail) == 0, "%s", sample);
  cr_expect_not(p->roles.fallback);
  hs_board_profile_free(p);
}

Test(board, boards_dir_comes_first_and_unknown_names_fail) {
  char path[256];
  write_profile("generic-cpu", "[board]\nname = mine\n", path, sizeof path);
  char dirs[300];
  snprintf(dirs, sizeof dirs, "/nonexistent:%s", tmpdir);
  hs_board_profile *p = NULL;
  cr_assert_eq(hs_board_profile_load_from(dirs, "generic-cpu", &p), HS_OK, "%s",
               hs_last_error());
  cr_expect_str_eq(hs_board_profile_name(p), "mine");
  cr_expect_str_eq(hs_board_profile_path(p), path);
  hs_board_profile_free(p);

  p = (hs_board_profile *)1;
  cr_expect_eq(hs_board_profile_load_from(dirs, "no-such-board", &p), HS_ERR_NOT_FOUND);
  cr_expect_null(p);
  cr_expect(strstr(hs_last_error(), "no-such-board"), "%s", hs_last_error());
  cr_expect(strstr(hs_last_error(), tmpdir), "%s", hs_last_error());
  cr_expect_eq(hs_board_profile_load("bad name!", &p),
               HS_ERR_INVALID_ARG);
  /* Without the folders, the shipped profile. */
  cr_assert_eq(hs_board_profile_load("generic-cpu", &p), HS_OK, "%s", hs_last_error());
  cr_expect_str_eq(hs_board_profile_name(p), "generic-cpu");
  hs_board_profile_free(p);

  char missing[300];
  snprintf(missing, sizeof missing, "%s/absent.ini", tmpdir);
  cr_expect_eq(hs_board_profile_load(missing, &p), HS_ERR_IO);
  cr_expect(strstr(hs_last_error(), missing));
}

Test(board, values_parse) {
  hs_board_profile *p = load_ok(
      "\xEF\xBB\xBF; comment\n# another\n"
      "[board]\nname = vals\ndescription = a ; inline comment\n"
      "[device.gpu_0]\ntype = GPU\nvendor = nvidia\nrequired = no\n"
      "min_memory = 2GiB\nunified_memory = any\n"
      "[roles]\nsampler = gpu_0\ntrainer = auto\ngather_threads = 3\n"
      "shared_context = true\nfallback = off\n"
      "[split]\nsampler_cores = 2\ntrainer_cores = auto\nhost_cores = 0\n"
      "[memory]\nsampler = 512M\ntrainer = 1536K\nhost = auto\n"
      "headroom_percent = 5\nzero_copy = false\n"
      "[pipeline]\nmode = async\ndepth = 4\n"
      "[cache]\ntrainer_rows = 1000000\ntrainer_percent = 30\n"
      "host_bytes = 1T\nfill = presample\n"
      "[binaries]\ngpu_0 = bin/sample.bin\n"
      "[require]\nmin_global_memory = 1G\nmin_max_alloc = 256MB\n"
      "min_local_memory = 32K\nmin_compute_units = 2\n"
      "extensions = cl_khr_int64_base_atomics, cl_khr_fp16\nsub_devices = yes\n"
      "[thresholds]\nh2d_gbps = 12.5\ngpu_0.h2d_gbps = 25\n"
      "launch_latency_us = 20\nrandom_read_mops = 1e3\n"
      "    [device.cpu]\n  type = cpu\n");
  cr_expect_str_eq(p->name, "vals");
  cr_expect_str_eq(p->description, "a");
  cr_assert_eq(p->device_count, 2);
  const hs__board_device *g = &p->devices[0];
  cr_expect_str_eq(g->id, "gpu_0");
  cr_expect_eq(g->type, HS_DEVICE_GPU);
  cr_expect_str_eq(g->vendor, "nvidia");
  cr_expect_not(g->required);
  cr_expect_eq(g->min_memory, 2LL << 30);
  cr_expect_eq(g->unified_memory, HS__AUTO);
  cr_expect_eq(p->devices[1].line, 50);
  cr_expect(p->devices[1].required);
  cr_expect_str_eq(p->roles.sampler, "gpu_0");
  cr_expect_str_eq(p->roles.trainer, "");
  cr_expect_eq(p->roles.gather_threads, 3);
  cr_expect_eq(p->roles.shared_context, 1);
  cr_expect_not(p->roles.fallback);
  cr_expect_eq(p->split.sampler_cores, 2);
  cr_expect_eq(p->split.trainer_cores, HS__AUTO);
  cr_expect_eq(p->split.host_cores, 0);
  cr_expect_eq(p->memory.sampler, 512LL << 20);
  cr_expect_eq(p->memory.trainer, 1536LL << 10);
  cr_expect_eq(p->memory.host, HS__AUTO);
  cr_expect_eq(p->memory.headroom_percent, 5);
  cr_expect_eq(p->memory.zero_copy, 0);
  cr_expect_eq(p->pipeline.mode, HS_PIPELINE_ASYNC);
  cr_expect_eq(p->pipeline.depth, 4);
  cr_expect_eq(p->cache.trainer_rows, 1000000);
  cr_expect_eq(p->cache.trainer_percent, 30);
  cr_expect_eq(p->cache.host_bytes, 1LL << 40);
  cr_expect_eq(p->cache.fill, HS_CACHE_FILL_PRESAMPLE);
  char want[300];
  snprintf(want, sizeof want, "%s/bin/sample.bin", tmpdir);
  cr_expect_str_eq(g->binary, want);
  cr_expect_eq(p->require.min_global_memory, 1LL << 30);
  cr_expect_eq(p->require.min_max_alloc, 256LL << 20);
  cr_expect_eq(p->require.min_local_memory, 32LL << 10);
  cr_expect_eq(p->require.min_compute_units, 2);
  cr_expect_str_eq(p->require.extensions, "cl_khr_int64_base_atomics cl_khr_fp16");
  cr_expect(p->require.sub_devices);
  cr_expect_float_eq(p->thresholds.h2d_gbps, 12.5, 1e-9);
  cr_expect_float_eq(g->thresholds.h2d_gbps, 25.0, 1e-9);
  cr_expect_float_eq(p->thresholds.launch_latency_us, 20.0, 1e-9);
  cr_expect_float_eq(p->thresholds.random_read_mops, 1000.0, 1e-9);
  cr_expect_eq(hs__board_key_line(p, "memory", "sampler"), 23);
  hs_board_profile_free(p);
}

Test(board, defaults_apply_when_keys_are_absent) {
  hs_board_profile *p = load_ok(BOARD);
  cr_expect_eq(p->device_count, 0);
  cr_expect_str_eq(p->description, "");
  cr_expect_str_eq(p->roles.sampler, "");
  cr_expect(p->roles.fallback);
  cr_expect_eq(p->split.sampler_cores, HS__AUTO);
  cr_expect_eq(p->memory.headroom_percent, 10);
  cr_expect_eq(p->memory.sampler, HS__AUTO);
  cr_expect_eq(p->pipeline.mode, HS_PIPELINE_AUTO);
  cr_expect_eq(p->pipeline.depth, HS__AUTO);
  cr_expect_eq(p->cache.trainer_rows, HS__AUTO);
  cr_expect_eq(p->cache.trainer_percent, 50);
  cr_expect_eq(p->cache.fill, HS_CACHE_FILL_FIRST);
  hs_board_profile_free(p);
}

Test(board, parse_from_memory_names_its_origin) {
  hs_board_profile *p = NULL;
  cr_assert_eq(hs_board_profile_parse(BOARD "[binaries]\n", "mem.ini", "/opt/b",
                                      &p),
               HS_OK, "%s", hs_last_error());
  cr_expect_str_eq(hs_board_profile_path(p), "mem.ini");
  hs_board_profile_free(p);
  cr_expect_eq(hs_board_profile_parse("[board]\nnom = x\n", "mem.ini", NULL, &p),
               HS_ERR_PROFILE);
  cr_expect(strstr(hs_last_error(), "mem.ini:2: [board] nom: unknown key"),
            "%s", hs_last_error());
  cr_expect_eq(hs_board_profile_parse(NULL, NULL, NULL, &p), HS_ERR_INVALID_ARG);
}

Test(board, unknown_key) {
  expect_bad(BOARD "colour = red\n", 3, "colour", "unknown key");
  expect_bad(BOARD "[device.g]\ntype = gpu\nspeed = 9\n", 5, "speed",
             "unknown key");
  expect_bad(BOARD "[thresholds]\nh2d_gbs = 3\n", 4, "h2d_gbs", "unknown key");
}

Test(board, unknown_section) {
  expect_bad(BOARD "[gpu]\ntype = gpu\n", 3, "[gpu]", "unknown section");
  /* An empty section is checked too, though inih reports no key for it. */
  expect_bad(BOARD "\n[memmory]\n", 4, "[memmory]", "unknown section");
  expect_bad(BOARD "[device.bad id]\ntype = gpu\n", 3, "device.bad id",
             "bad device id");
}

Test(board, missing_section_or_key) {
  expect_bad("[roles]\nsampler = auto\n\n", 3, "[board]", "missing");
  expect_bad("[board]\ndescription = no name\n", 1, "name", "missing");
  expect_bad(BOARD "[device.g]\nvendor = x\n", 3, "type", "missing");
  expect_bad("[board]\nname =\n", 2, "name", "empty");
}

Test(board, bad_number) {
  expect_bad(BOARD "[pipeline]\ndepth = three\n", 4, "depth", "bad number");
  expect_bad(BOARD "[pipeline]\ndepth = 0\n", 4, "depth", "1 to 64");
  expect_bad(BOARD "[split]\nsampler_cores = 1.5\n", 4, "sampler_cores",
             "bad number");
  expect_bad(BOARD "[memory]\nheadroom_percent = -1\n", 4, "headroom_percent",
             "bad number");
  expect_bad(BOARD "[thresholds]\nh2d_gbps = -2\n", 4, "h2d_gbps",
             "bad number");
  expect_bad(BOARD "[cache]\ntrainer_rows = 99999999999999999999\n", 4,
             "trainer_rows", "bad number");
}

Test(board, bad_size) {
  expect_bad(BOARD "[memory]\nsampler = 12Q\n", 4, "sampler", "bad size");
  expect_bad(BOARD "[memory]\nhost = -1G\n", 4, "host", "bad size");
  expect_bad(BOARD "[memory]\ntrainer = 99999999T\n", 4, "trainer", "bad size");
  expect_bad(BOARD "[require]\nmin_max_alloc = auto\n", 4, "min_max_alloc",
             "bad size");
}

Test(board, bad_bool_and_enum) {
  expect_bad(BOARD "[device.x]\ntype = gpu\nrequired = maybe\n", 5, "required",
             "bad boolean");
  expect_bad(BOARD "[roles]\nshared_context = sometimes\n", 4,
             "shared_context", "true, false or auto");
  expect_bad(BOARD "[pipeline]\nmode = fast\n", 4, "mode", "threads");
  expect_bad(BOARD "[device.x]\ntype = dsp\n", 4, "type", "bad device type");
}

Test(board, duplicates) {
  expect_bad("[board]\nname = a\nname = b\n", 3, "name", "first set at line 2");
  expect_bad(BOARD "[board]\ndescription = x\n", 3, "[board]",
             "duplicate section");
  expect_bad(BOARD "[device.g]\ntype = gpu\n[device.g]\ntype = cpu\n", 5,
             "[device.g]", "first at line 3");
}

Test(board, references_and_combinations) {
  expect_bad(BOARD "[roles]\nsampler = fpga\n", 4, "sampler",
             "not a device of this profile");
  expect_bad(BOARD "[binaries]\nfpga = x.bin\n", 4, "fpga", "unknown key");
  expect_bad(BOARD "[device.f]\ntype = accelerator\n[binaries]\nf =\n", 6, "f",
             "empty path");
  expect_bad(BOARD "[thresholds]\nfpga.h2d_gbps = 2\n", 4, "fpga.h2d_gbps",
             "not a device");
  expect_bad(BOARD "[pipeline]\nmode = off\ndepth = 3\n", 5, "depth",
             "mode = off");
  expect_bad(BOARD "[require]\nextensions = cl_khr_fp16 cl-bad\n", 4,
             "extensions", "cl-bad");
  /* Devices may be named before their section. */
  hs_board_profile *p = load_ok(BOARD "[roles]\nsampler = late\n"
                                      "[binaries]\nlate = l.bin\n"
                                      "[device.late]\ntype = gpu\n");
  cr_expect_str_eq(p->roles.sampler, "late");
  hs_board_profile_free(p);
}

Test(board, syntax_errors) {
  expect_bad(BOARD "just words\n", 3, "syntax error", NULL);
  /* Indented lines are not continuations: inih would glue them to the
   * previous value. */
  expect_bad(BOARD "description = one\n    two\n", 4, "syntax error", NULL);
  expect_bad("name = x\n" BOARD, 1, "name", "outside any section");
  expect_bad(BOARD "[device.g\n", 3, "syntax error", NULL);
  char text[600];
  snprintf(text, sizeof text, BOARD "description = %0300d\n", 7);
  expect_bad(text, 3, "line longer", NULL);
  /* Just under inih's 200-byte line buffer. */
  char big[256];
  snprintf(big, sizeof big, BOARD "description = %0180d\n", 7);
  hs_board_profile *p = load_ok(big);
  cr_expect_eq(strlen(p->description), 180);
  hs_board_profile_free(p);
}

Test(board, size_and_bool_syntax) {
  int64_t v;
  cr_expect(hs__parse_size("0", &v) && v == 0);
  cr_expect(hs__parse_size("4096", &v) && v == 4096);
  cr_expect(hs__parse_size("3k", &v) && v == 3072);
  cr_expect(hs__parse_size("8GiB", &v) && v == 8LL << 30);
  cr_expect(hs__parse_size("8GB", &v) && v == 8LL << 30);
  cr_expect(hs__parse_size("8388607T", &v) && v == 8388607LL << 40);
  cr_expect_not(hs__parse_size("8388608T", &v));
  cr_expect_not(hs__parse_size("", &v));
  cr_expect_not(hs__parse_size(" 1", &v));
  cr_expect_not(hs__parse_size("1 G", &v));
  cr_expect_not(hs__parse_size("1Gx", &v));
  bool b;
  cr_expect(hs__parse_bool("TRUE", &b) && b);
  cr_expect(hs__parse_bool("off", &b) && !b);
  cr_expect_not(hs__parse_bool("2", &b));
  char buf[32];
  cr_expect_str_eq(hs__fmt_bytes(512, buf, sizeof buf), "512 B");
  cr_expect_str_eq(hs__fmt_bytes(512ull << 20, buf, sizeof buf), "512.0 MiB");
  cr_expect_str_eq(hs__fmt_bytes(3ull << 29, buf, sizeof buf), "1.5 GiB");
}
