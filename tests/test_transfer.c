/* How sampled blocks reach the trainer (device to device when the roles
 * share a context, else through the host) and the release of the host
 * topology once the sampler holds it: both change what moves and what
 * stays resident, never the trained parameters. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cora_fixture.h"
#include "hetsage.h"
#include "hs_test_util.h"
#include "tool_run.h"

TestSuite(transfer, .init = cora_setup, .fini = cora_teardown, .timeout = 600);

static hs_session_config small_cfg(hs_pipeline_mode mode, hs_transfer transfer) {
  hs_session_config c;
  hs_session_config_init(&c);
  c.batch_size = 128;
  c.hidden = 32;
  c.pipeline = mode;
  c.seed = 5;
  c.transfer = transfer;
  return c;
}

typedef struct run {
  float *params;
  size_t n;
  hs_epoch_stats st[2];
  double eval;
  char describe[8192];
} run;

/* Two epochs on `d` on runtime `r_rt`, then sampled evaluation of the
 * validation split. */
static run train_on_rt(hs_runtime *r_rt, hs_dataset *d, const hs_session_config *c) {
  run r = {0};
  hs_session *s;
  cr_assert_eq(hs_session_create(r_rt, d, c, &s), HS_OK, "%s", hs_last_error());
  hs_session_describe(s, r.describe, sizeof r.describe);
  for (int e = 0; e < 2; e++) {
    hs_epoch_stats_init(&r.st[e]);
    cr_assert_eq(hs_session_train_epoch(s, &r.st[e]), HS_OK, "%s", hs_last_error());
    cr_assert(isfinite(r.st[e].loss));
  }
  cr_assert_eq(hs_session_evaluate(s, HS_SPLIT_VALID, &r.eval), HS_OK, "%s", hs_last_error());
  cr_assert_eq(hs_session_parameters(s, NULL, 0, &r.n), HS_OK);
  r.params = malloc(r.n * sizeof *r.params);
  cr_assert_eq(hs_session_parameters(s, r.params, r.n, &r.n), HS_OK);
  hs_session_destroy(s);
  return r;
}

static run train_on(hs_dataset *d, const hs_session_config *c) { return train_on_rt(rt, d, c); }

static void expect_same(const run *a, const run *b, const char *what) {
  cr_assert_eq(a->n, b->n);
  cr_expect_arr_eq(a->params, b->params, a->n * sizeof(float), "%s: parameters differ", what);
  cr_expect_eq(a->st[1].loss, b->st[1].loss, "%s: loss differs", what);
  cr_expect_eq(a->eval, b->eval, "%s: sampled evaluation differs", what);
}

/* The default board splits one CPU into two sub-devices of one context:
 * AUTO takes the device path. Both paths, under both drivers and with the
 * trainer cache, train the same bits; the device path moves the blocks'
 * exact bytes off the host link and reads back less. */
Test(transfer, device_and_host_paths_give_bit_identical_parameters) {
  static const hs_pipeline_mode modes[] = {HS_PIPELINE_ASYNC, HS_PIPELINE_THREADS};
  for (int m = 0; m < 2; m++) {
    const char *mode = hs_pipeline_mode_name(modes[m]);
    hs_session_config c = small_cfg(modes[m], HS_TRANSFER_HOST);
    run host = train_on(ds, &c);
    c = small_cfg(modes[m], HS_TRANSFER_AUTO);
    run dev = train_on(ds, &c);
    expect_same(&host, &dev, mode);
    cr_expect_not_null(strstr(dev.describe, "transfer: blocks device to device"), "%s",
                       dev.describe);
    cr_expect_not_null(strstr(host.describe, "transfer: blocks through the host"), "%s",
                       host.describe);
    for (int e = 0; e < 2; e++) {
      const hs_epoch_stats *h = &host.st[e], *d = &dev.st[e];
      cr_expect_eq(h->transfer, HS_TRANSFER_HOST);
      cr_expect_eq(d->transfer, HS_TRANSFER_DEVICE);
      cr_expect_eq(h->bytes_device_to_device, 0);
      cr_expect_gt(d->bytes_device_to_device, 0);
      /* Same batches: the blocks left the upload and were copied instead. */
      cr_expect_eq(h->bytes_uploaded - d->bytes_uploaded, d->bytes_device_to_device,
                   "%s epoch %d: host %llu, device %llu + %llu", mode, e,
                   (unsigned long long)h->bytes_uploaded, (unsigned long long)d->bytes_uploaded,
                   (unsigned long long)d->bytes_device_to_device);
      cr_expect_lt(d->bytes_to_host, h->bytes_to_host, "%s: blocks still read back", mode);
      cr_expect_gt(d->bytes_to_host, 0, "%s: ids and counts are read back", mode);
      cr_expect_gt(d->upload_s, 0.0);
      cr_expect_leq(d->upload_s, d->stage_busy_s[HS_STAGE_TRAIN]);
      cr_log_info("%s epoch %d: up %llu/%llu B, back %llu/%llu B, d2d %llu B, upload %.4f/%.4f s",
                  mode, e, (unsigned long long)h->bytes_uploaded,
                  (unsigned long long)d->bytes_uploaded, (unsigned long long)h->bytes_to_host,
                  (unsigned long long)d->bytes_to_host,
                  (unsigned long long)d->bytes_device_to_device, h->upload_s, d->upload_s);
    }
    free(host.params);
    free(dev.params);
  }
  /* The trainer cache assembles features on the trainer's queue after the
   * device-side blocks: still the same bits. */
  hs_session_config c = small_cfg(HS_PIPELINE_ASYNC, HS_TRANSFER_HOST);
  c.cache_rows = 700;
  run host = train_on(ds, &c);
  c.transfer = HS_TRANSFER_DEVICE;
  run dev = train_on(ds, &c);
  expect_same(&host, &dev, "trainer cache");
  cr_expect_gt(dev.st[1].cache_hits, 0);
  free(host.params);
  free(dev.params);
}

/* A runtime opened in the environment as it is now. */
static hs_runtime *runtime_now(void) {
  hs_runtime *r;
  cr_assert_eq(hs_runtime_open(&r, NULL), HS_OK, "%s", hs_last_error());
  return r;
}

Test(transfer, environment_chooses_under_auto_only) {
  hs_session_config c = small_cfg(HS_PIPELINE_ASYNC, HS_TRANSFER_AUTO);
  hs_session *s;
  setenv("HETSAGE_TRANSFER", "host", 1);
  hs_runtime *ert = runtime_now(); /* the environment is read when a runtime opens */
  unsetenv("HETSAGE_TRANSFER");
  cr_expect_eq(hs_runtime_settings(ert)->transfer, HS_TRANSFER_HOST);
  cr_assert_eq(hs_session_create(ert, ds, &c, &s), HS_OK, "%s", hs_last_error());
  hs_epoch_stats st;
  hs_epoch_stats_init(&st);
  cr_assert_eq(hs_session_train_epoch(s, &st), HS_OK, "%s", hs_last_error());
  cr_expect_eq(st.transfer, HS_TRANSFER_HOST);
  hs_session_destroy(s);
  /* The API is stronger than the environment. */
  c.transfer = HS_TRANSFER_DEVICE;
  cr_assert_eq(hs_session_create(ert, ds, &c, &s), HS_OK, "%s", hs_last_error());
  cr_assert_eq(hs_session_train_epoch(s, &st), HS_OK, "%s", hs_last_error());
  cr_expect_eq(st.transfer, HS_TRANSFER_DEVICE);
  hs_session_destroy(s);
  hs_runtime_close(ert);
  /* The same by API, the environment ignored. */
  c.transfer = HS_TRANSFER_AUTO;
  hs_settings set;
  hs_settings_init(&set);
  set.transfer = HS_TRANSFER_HOST;
  hs_runtime_options o;
  hs_runtime_options_init(&o);
  o.settings = &set;
  o.flags = HS_RUNTIME_IGNORE_ENV;
  cr_assert_eq(hs_runtime_open(&ert, &o), HS_OK, "%s", hs_last_error());
  cr_assert_eq(hs_session_create(ert, ds, &c, &s), HS_OK, "%s", hs_last_error());
  cr_assert_eq(hs_session_train_epoch(s, &st), HS_OK, "%s", hs_last_error());
  cr_expect_eq(st.transfer, HS_TRANSFER_HOST);
  hs_session_destroy(s);
  hs_runtime_close(ert);
  ert = NULL;
  setenv("HETSAGE_TRANSFER", "sideways", 1);
  cr_expect_eq(hs_runtime_open(&ert, NULL), HS_ERR_INVALID_ARG);
  cr_expect_not_null(strstr(hs_last_error(), "HETSAGE_TRANSFER 'sideways'"), "%s",
                     hs_last_error());
  cr_expect_null(ert);
  unsetenv("HETSAGE_TRANSFER");
  c.transfer = (hs_transfer)7;
  cr_expect_eq(hs_session_create(rt, ds, &c, &s), HS_ERR_INVALID_ARG);
  cr_expect_str_eq(hs_transfer_name(HS_TRANSFER_DEVICE), "device");
}

/* ---- releasing the host topology ------------------------------------------ */

/* Whether this process maps a file whose path ends in `suffix`. */
static bool mapped(const char *suffix) {
  FILE *f = fopen("/proc/self/maps", "r");
  cr_assert_not_null(f);
  char line[2048];
  bool found = false;
  size_t k = strlen(suffix);
  while (!found && fgets(line, sizeof line, f)) {
    size_t n = strcspn(line, "\n");
    line[n] = '\0';
    found = n >= k && strcmp(line + n - k, suffix) == 0;
  }
  fclose(f);
  return found;
}

/* A generated graph with int32 indices, so that the topology is mapped
 * from the files (their mappings show in /proc/self/maps), in `dir` under
 * a scratch directory returned for tu_rmtree. */
static char *generate(char *dir, size_t cap) {
  char *root = tu_mkdtemp();
  snprintf(dir, cap, "%s/g", root);
  hs_generate_opts o;
  hs_generate_opts_init(&o, HS_GENERATE_SBM);
  o.num_vertices = 20000;
  o.edge_factor = 8;
  o.num_features = 16;
  o.split_frac[HS_SPLIT_TRAIN] = 0.03;
  o.split_frac[HS_SPLIT_VALID] = 0.03;
  o.split_frac[HS_SPLIT_TEST] = 0.03;
  cr_assert_eq(hs_generate(dir, &o, NULL, NULL), HS_OK, "%s", hs_last_error());
  return root;
}

/* The option releases the mapped topology after the session is set up,
 * reports its size, trains the same bits, keeps sampled evaluation, and
 * turns everything that walks the host topology into a clear error. */
Test(transfer, free_host_topology_releases_it_and_trains_the_same) {
  char dir[256];
  char *root = generate(dir, sizeof dir);
  char indices[300], indptr[300];
  snprintf(indices, sizeof indices, "%s/indices.npy", dir);
  snprintf(indptr, sizeof indptr, "%s/indptr.npy", dir);
  hs_session_config c = small_cfg(HS_PIPELINE_ASYNC, HS_TRANSFER_AUTO);
  c.fanouts[0] = 10;
  c.fanouts[1] = 5;

  hs_dataset *kept, *freed;
  cr_assert_eq(hs_dataset_open(dir, &kept), HS_OK, "%s", hs_last_error());
  run ref = train_on(kept, &c);
  cr_expect_eq(ref.st[1].host_topology_freed_bytes, 0);
  hs_dataset_close(kept);

  cr_assert_eq(hs_dataset_open(dir, &freed), HS_OK, "%s", hs_last_error());
  hs_dataset_info info;
  hs_dataset_info_init(&info);
  hs_dataset_get_info(freed, &info);
  cr_assert(mapped(indices) && mapped(indptr), "the topology is not mapped after opening");
  c.free_host_topology = true;
  run got = train_on(freed, &c);
  cr_expect_not(mapped(indices), "indices.npy is still mapped");
  cr_expect_not(mapped(indptr), "indptr.npy is still mapped");
  expect_same(&ref, &got, "freed topology");
  for (int e = 0; e < 2; e++)
    cr_expect_eq(got.st[e].host_topology_freed_bytes, info.topology_bytes);
  cr_expect_not_null(strstr(got.describe, "host topology:"), "%s", got.describe);
  cr_log_info("released %llu B of host topology", (unsigned long long)info.topology_bytes);

  /* What needs the host topology says so; the dataset's info stays. */
  hs_session *s;
  cr_expect_eq(hs_session_create(rt, freed, &c, &s), HS_ERR_STATE);
  cr_expect_not_null(strstr(hs_last_error(), "free_host_topology"), "%s", hs_last_error());
  hs_dataset_stats dst;
  hs_dataset_stats_init(&dst);
  cr_expect_eq(hs_dataset_stats_compute(freed, &dst), HS_ERR_STATE);
  hs_dataset_info after;
  hs_dataset_info_init(&after);
  hs_dataset_get_info(freed, &after);
  cr_expect_eq(after.num_edges, info.num_edges);
  hs_dataset_close(freed);

  /* Full-neighbour inference in the session that released it. */
  cr_assert_eq(hs_dataset_open(dir, &freed), HS_OK, "%s", hs_last_error());
  cr_assert_eq(hs_session_create(rt, freed, &c, &s), HS_OK, "%s", hs_last_error());
  double acc = -1;
  cr_expect_eq(hs_session_evaluate_full(s, HS_SPLIT_VALID, &acc), HS_ERR_STATE);
  cr_expect_not_null(strstr(hs_last_error(), "full-neighbour inference"), "%s", hs_last_error());
  int64_t id = 3;
  int32_t cls;
  cr_expect_eq(hs_session_predict(s, &id, 1, &cls, NULL), HS_ERR_STATE);
  cr_expect_eq(hs_session_evaluate(s, HS_SPLIT_VALID, &acc), HS_OK, "%s", hs_last_error());
  cr_expect(acc >= 0 && acc <= 1);
  hs_session_destroy(s);
  hs_dataset_close(freed);
  free(ref.params);
  free(got.params);
  tu_rmtree(root);
}

/* Whether /sys says the kernel grants huge pages on madvise. */
static bool thp_on_request(void) {
  FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
  if (!f) return false;
  char line[128] = "";
  bool ok = fgets(line, sizeof line, f) && (strstr(line, "[always]") || strstr(line, "[madvise]"));
  fclose(f);
  return ok;
}

/* Features gathered from a copy on 2 MiB pages train the same bits as
 * from the file mapping; AUTO keeps features that fit the last-level cache
 * in the mapping; a later session gathers from the copy made before; the
 * environment decides under AUTO only; a bad value is refused. */
Test(transfer, features_on_huge_pages_train_the_same) {
  char dir[256];
  char *root = generate(dir, sizeof dir);
  hs_session_config c = small_cfg(HS_PIPELINE_ASYNC, HS_TRANSFER_AUTO);
  c.fanouts[0] = 10;
  c.fanouts[1] = 5;
  unsetenv("HETSAGE_FEATURE_PAGES");

  hs_dataset *d;
  cr_assert_eq(hs_dataset_open(dir, &d), HS_OK, "%s", hs_last_error());
  hs_dataset_info info;
  hs_dataset_info_init(&info);
  hs_dataset_get_info(d, &info);
  c.feature_pages = HS_FEATURE_PAGES_FILE;
  run ref = train_on(d, &c);
  cr_expect_not_null(strstr(ref.describe, "features: the file mapping"), "%s", ref.describe);
  c.feature_pages = HS_FEATURE_PAGES_AUTO; /* 1.3 MB of features: stays */
  run small = train_on(d, &c);
  cr_expect_not_null(strstr(small.describe, "fit the last-level cache"), "%s", small.describe);
  expect_same(&ref, &small, "auto");
  for (int e = 0; e < 2; e++) {
    cr_expect_eq(ref.st[e].feature_huge_page_bytes, 0);
    cr_expect_eq(small.st[e].feature_huge_page_bytes, 0);
  }
  /* The environment under AUTO, read when a runtime opens: a bad value is
   * refused, "huge" copies. */
  setenv("HETSAGE_FEATURE_PAGES", "giant", 1);
  hs_session *s;
  hs_runtime *hrt = NULL;
  cr_expect_eq(hs_runtime_open(&hrt, NULL), HS_ERR_INVALID_ARG);
  cr_expect_not_null(strstr(hs_last_error(), "HETSAGE_FEATURE_PAGES 'giant'"), "%s",
                     hs_last_error());
  setenv("HETSAGE_FEATURE_PAGES", "huge", 1);
  cr_assert_eq(hs_runtime_open(&hrt, NULL), HS_OK, "%s", hs_last_error());
  unsetenv("HETSAGE_FEATURE_PAGES");
  run moved = train_on_rt(hrt, d, &c);
  hs_runtime_close(hrt);
  expect_same(&ref, &moved, "huge pages");
  if (strstr(moved.describe, "features: a copy on 2 MiB pages")) {
    for (int e = 0; e < 2; e++)
      cr_expect_eq(moved.st[e].feature_huge_page_bytes, info.feature_bytes);
    cr_expect_not_null(strstr(moved.describe, "HETSAGE_FEATURE_PAGES; copied now"), "%s",
                       moved.describe);
    /* A later session gathers from the copy made before. */
    c.feature_pages = HS_FEATURE_PAGES_HUGE;
    run again = train_on(d, &c);
    expect_same(&ref, &again, "copied before");
    cr_expect_eq(again.st[1].feature_huge_page_bytes, info.feature_bytes);
    cr_expect_not_null(strstr(again.describe, "copied by an earlier session"), "%s",
                       again.describe);
    free(again.params);
  } else { /* no huge pages on request on this host */
    cr_expect_eq(moved.st[1].feature_huge_page_bytes, 0);
    cr_expect_not_null(strstr(moved.describe, "features: the file mapping"), "%s",
                       moved.describe);
    cr_log_info("no copy on huge pages here: %s", moved.describe);
  }
  /* Out of range in the configuration. */
  c.feature_pages = (hs_feature_pages)7;
  cr_expect_eq(hs_session_create(rt, d, &c, &s), HS_ERR_INVALID_ARG);
  cr_expect_not_null(strstr(hs_last_error(), "feature_pages = 7"), "%s", hs_last_error());
  cr_expect_str_eq(hs_feature_pages_name(HS_FEATURE_PAGES_HUGE), "huge");
  cr_expect_str_eq(hs_feature_pages_name(HS_FEATURE_PAGES_FILE), "file");
  cr_expect_str_eq(hs_feature_pages_name((hs_feature_pages)9), "unknown");
  hs_dataset_close(d);
  free(ref.params);
  free(small.params);
  free(moved.params);
  tu_rmtree(root);
}

/* The command line: the option, its report, and the refused combination. */
Test(transfer, command_line_free_host_topology) {
  char dir[256], stats[300], args[1024], out[16384];
  char *root = generate(dir, sizeof dir);
  tool_tmp(stats, sizeof stats, "xfer-stats.json");
  snprintf(args, sizeof args,
           "train -q --dataset %s --epochs 1 --batch 256 --fanouts 5,5 --hidden 16 "
           "--free-host-topology --eval full", dir);
  cr_expect_eq(tool_run("", args, out, sizeof out), 2, "%s", out);
  cr_expect_not_null(strstr(out, "--free-host-topology"), "%s", out);
  snprintf(args, sizeof args,
           "train -q --dataset %s --epochs 1 --batch 256 --fanouts 5,5 --hidden 16 "
           "--free-host-topology --transfer host --stats-json %s --json", dir, stats);
  cr_expect_eq(tool_run("", args, out, sizeof out), 0, "%s", out);
  char *json = tool_slurp(stats);
  cr_expect_not_null(strstr(json, "\"transfer\": \"host\""), "%s", json);
  cr_expect_null(strstr(json, "\"host_topology_freed_bytes\": 0,"), "%s", json);
  cr_expect_not_null(strstr(json, "\"host_topology_freed_bytes\": "), "%s", json);
  free(json);
  unlink(stats);
  snprintf(args, sizeof args, "train --help");
  cr_expect_eq(tool_run("", args, out, sizeof out), 0);
  cr_expect_not_null(strstr(out, "--free-host-topology"));
  cr_expect_not_null(strstr(out, "--transfer auto|host|device"));
  cr_expect_not_null(strstr(out, "--feature-pages auto|file|huge"));
  snprintf(args, sizeof args,
           "train -q --dataset %s --epochs 1 --batch 256 --fanouts 5,5 --hidden 16 "
           "--feature-pages big", dir);
  cr_expect_eq(tool_run("", args, out, sizeof out), 2, "%s", out);
  cr_expect_not_null(strstr(out, "expected auto, file or huge"), "%s", out);
  snprintf(args, sizeof args,
           "train -q --dataset %s --epochs 1 --batch 256 --fanouts 5,5 --hidden 16 "
           "--feature-pages huge --stats-json %s --json", dir, stats);
  cr_expect_eq(tool_run("", args, out, sizeof out), 0, "%s", out);
  json = tool_slurp(stats);
  cr_expect_not_null(strstr(json, "\"feature_huge_page_bytes\": "), "%s", json);
  /* the features' size (20000 x 16 float32) on huge pages, or 0 where the
   * kernel gives none on request */
  const char *fhb = strstr(json, "\"feature_huge_page_bytes\": ");
  cr_assert_not_null(fhb, "%s", json);
  unsigned long long huge_bytes = strtoull(fhb + strlen("\"feature_huge_page_bytes\": "), NULL, 10);
  cr_expect(huge_bytes == 20000ull * 16 * 4 || (huge_bytes == 0 && !thp_on_request()),
            "feature_huge_page_bytes %llu", huge_bytes);
  free(json);
  unlink(stats);
  tu_rmtree(root);
}
