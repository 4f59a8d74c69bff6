/* Placement on hand-written inventories: no hardware involved. Each case
 * checks the plan and that the reasons carry the numbers behind it. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "board/hs_board.h"
#include "hetsage.h"

#define KiB(x) ((uint64_t)(x) << 10)
#define MiB(x) ((uint64_t)(x) << 20)
#define GiB(x) ((uint64_t)(x) << 30)

static hs_device_info dev_cpu(unsigned cores, uint64_t mem) {
  hs_device_info d;
  hs_device_info_init(&d);
  d.type = HS_DEVICE_CPU;
  snprintf(d.name, sizeof d.name, "pthread-Test CPU");
  snprintf(d.vendor, sizeof d.vendor, "GenuineTest");
  d.platform_index = 0;
  d.compute_units = cores;
  d.clock_mhz = 2000;
  d.global_mem_bytes = mem;
  d.max_alloc_bytes = mem / 4;
  d.max_sub_devices = cores;
  d.partition_by_counts = true;
  d.partition_equally = true;
  d.unified_memory = true;
  d.compiler_available = true;
  d.available = true;
  return d;
}

static hs_device_info dev_gpu(const char *name, unsigned cu, unsigned mhz,
                              uint64_t mem) {
  hs_device_info d = dev_cpu(1, mem);
  d.type = HS_DEVICE_GPU;
  snprintf(d.name, sizeof d.name, "%s", name);
  snprintf(d.vendor, sizeof d.vendor, "Test Graphics");
  d.platform_index = 1;
  d.compute_units = cu;
  d.clock_mhz = mhz;
  d.max_sub_devices = 0;
  d.partition_by_counts = false;
  d.partition_equally = false;
  d.unified_memory = false;
  return d;
}

static hs_device_info dev_fpga(const char *name, uint64_t mem) {
  hs_device_info d = dev_gpu(name, 1, 300, mem);
  d.type = HS_DEVICE_ACCELERATOR;
  d.platform_index = 2;
  d.compiler_available = false;
  return d;
}

static void number(hs_device_info *d, int n) {
  for (int i = 0; i < n; i++) d[i].index = i;
}

static hs_board_profile *shipped(const char *name) {
  hs_board_profile *p = NULL;
  cr_assert_eq(hs_board_profile_load(name, &p), HS_OK, "%s", hs_last_error());
  return p;
}

static hs_board_profile *from_text(const char *text) {
  hs_board_profile *p = NULL;
  cr_assert_eq(hs_board_profile_parse(text, "t.ini", "/boards", &p), HS_OK,
               "%s", hs_last_error());
  return p;
}

static hs_placement *place_ok(const hs_placement_request *rq) {
  hs_placement *pl = NULL;
  hs_status st = hs_placement_make(rq, &pl);
  cr_assert_eq(st, HS_OK, "%s: %s", hs_strerror(st), hs_last_error());
  cr_assert_not_null(pl);
  return pl;
}

static void place_fails(const hs_placement_request *rq, hs_status want,
                        const char *a, const char *b) {
  hs_placement *pl = (hs_placement *)1;
  hs_status st = hs_placement_make(rq, &pl);
  const char *detail = hs_last_error();
  cr_assert_eq(st, want, "status %s: %s", hs_strerror(st), detail);
  cr_expect_null(pl);
  if (a) cr_expect(strstr(detail, a), "'%s' lacks '%s'", detail, a);
  if (b) cr_expect(strstr(detail, b), "'%s' lacks '%s'", detail, b);
}

/* Some reason of `topic` contains every non-NULL needle. */
static bool reason_has(const hs_placement *pl, const char *topic,
                       const char *a, const char *b, const char *c) {
  for (size_t i = 0; i < pl->reason_count; i++) {
    const char *t = pl->reasons[i].text;
    if (strcmp(pl->reasons[i].topic, topic) != 0) continue;
    if ((!a || strstr(t, a)) && (!b || strstr(t, b)) && (!c || strstr(t, c)))
      return true;
  }
  return false;
}

static void dump(const hs_placement *pl) {
  char buf[16384];
  hs_placement_describe(pl, buf, sizeof buf);
  cr_log_info("%s", buf);
}

#define EXPECT_REASON(pl, topic, a, b, c)                                 \
  do {                                                                    \
    if (!reason_has(pl, topic, a, b, c)) dump(pl);                        \
    cr_expect(reason_has(pl, topic, a, b, c), "no %s reason with %s %s %s", \
              topic, a ? a : "", b ? b : "", c ? c : "");                 \
  } while (0)

static uint64_t usable(uint64_t mem, int headroom) {
  return mem - mem / 100 * (uint64_t)headroom;
}

/* ---- CPU-only boards ------------------------------------------------------ */

Test(placement, cpu_only_board_splits_the_cpu_and_runs_async) {
  hs_device_info d[1] = {dev_cpu(2, GiB(16))};
  number(d, 1);
  hs_board_profile *p = shipped("generic-cpu");
  hs_placement_request rq = {.struct_size = sizeof rq, .devices = d, .device_count = 1, .profile = p,
                             .topology_bytes = MiB(512),
                             .feature_bytes = GiB(1),
                             .feature_row_bytes = 512, .host_cores = 2};
  hs_placement *pl = place_ok(&rq);
  cr_expect_str_eq(pl->board, "generic-cpu");
  cr_expect_eq(pl->sampler.device, 0);
  cr_expect_eq(pl->trainer.device, 0);
  cr_expect_eq(pl->sampler.cores, 1);
  cr_expect_eq(pl->trainer.cores, 1);
  cr_expect_str_eq(pl->sampler.profile_id, "cpu");
  cr_expect_null(pl->sampler.binary);
  cr_expect_eq(pl->link, HS_LINK_SUB_DEVICES);
  cr_expect(pl->shared_context);
  cr_expect_eq(pl->pipeline, HS_PIPELINE_ASYNC);
  cr_expect_eq(pl->depth, 3);
  cr_expect_eq(pl->host_cores, 2);
  cr_expect_eq(pl->host_reserved_cores, 0);
  cr_expect_eq(pl->gather_threads, 1);
  cr_expect(pl->zero_copy);
  cr_expect_eq(pl->cache_trainer_rows, 0);
  uint64_t u = usable(GiB(16), 10);
  cr_expect_eq(pl->sampler.budget_bytes, MiB(512) + MiB(512) / 100 * 10);
  cr_expect_eq(pl->trainer.budget_bytes, u - pl->sampler.budget_bytes);
  cr_expect_eq(pl->host_budget_bytes, u);
  EXPECT_REASON(pl, "sampler", "512.0 MiB", "14.4 GiB usable", "16.0 GiB");
  EXPECT_REASON(pl, "split", "2 compute unit(s)", "sampler sub-device 1",
                "trainer sub-device 1");
  EXPECT_REASON(pl, "link", "device to device", NULL, NULL);
  EXPECT_REASON(pl, "pipeline", "async", "2 host core(s)", NULL);
  EXPECT_REASON(pl, "cache", "CPU", NULL, NULL);
  hs_placement_free(pl);
  hs_board_profile_free(p);
}

Test(placement, bigger_cpu_keeps_cores_for_host_threads) {
  hs_device_info d[1] = {dev_cpu(8, GiB(32))};
  number(d, 1);
  /* No profile: the built-in defaults place both roles on the CPU. */
  hs_placement_request rq = {.struct_size = sizeof rq, .devices = d, .device_count = 1};
  hs_placement *pl = place_ok(&rq);
  cr_expect_str_eq(pl->board, "defaults");
  cr_expect_eq(pl->host_cores, 8); /* taken from the CPU device */
  cr_expect_eq(pl->host_reserved_cores, 2);
  cr_expect_eq(pl->sampler.cores, 3);
  cr_expect_eq(pl->trainer.cores, 3);
  cr_expect_eq(pl->link, HS_LINK_SUB_DEVICES);
  cr_expect_eq(pl->pipeline, HS_PIPELINE_THREADS);
  cr_expect_eq(pl->gather_threads, 1);
  cr_expect_eq(pl->sampler.budget_bytes, usable(GiB(32), 10) / 2);
  EXPECT_REASON(pl, "split", "8 compute unit(s)", "sampler sub-device 3",
                "2 kept for host threads");
  EXPECT_REASON(pl, "pipeline", "threads", "8 host cores", NULL);
  EXPECT_REASON(pl, "sampler", "topology size unknown", NULL, NULL);
  hs_placement_free(pl);
}

Test(placement, unpartitionable_cpu_shares_one_device) {
  hs_device_info d[1] = {dev_cpu(2, GiB(4))};
  d[0].partition_by_counts = false;
  number(d, 1);
  hs_board_profile *p = shipped("generic-cpu");
  hs_placement_request rq = {.struct_size = sizeof rq, .devices = d, .device_count = 1, .profile = p};
  hs_placement *pl = place_ok(&rq);
  cr_expect_eq(pl->link, HS_LINK_SAME_DEVICE);
  cr_expect(pl->shared_context);
  cr_expect_eq(pl->sampler.cores, 0);
  cr_expect_eq(pl->trainer.cores, 0);
  EXPECT_REASON(pl, "split", "cannot be partitioned", "two queues", NULL);
  hs_placement_free(pl);
  hs_board_profile_free(p);
}

Test(placement, split_sub_devices_false_keeps_the_cpu_whole) {
  hs_device_info d[1] = {dev_cpu(8, GiB(4))};
  number(d, 1);
  hs_board_profile *p = from_text("[board]\nname = t\n[device.cpu]\ntype = cpu\n"
                                  "[split]\nsub_devices = false\n");
  hs_placement_request rq = {.struct_size = sizeof rq, .devices = d, .device_count = 1, .profile = p};
  hs_placement *pl = place_ok(&rq);
  cr_expect_eq(pl->link, HS_LINK_SAME_DEVICE);
  cr_expect_eq(pl->sampler.cores, 0);
  cr_expect_eq(pl->trainer.cores, 0);
  EXPECT_REASON(pl, "split", "sub_devices = false", "whole", NULL);
  hs_placement_free(pl);
  /* a single role on a CPU also keeps all of it */
  hs_device_info two[2] = {dev_gpu("G", 40, 1500, GiB(8)), dev_cpu(8, GiB(16))};
  number(two, 2);
  rq = (hs_placement_request){.struct_size = sizeof rq, .devices = two, .device_count = 2, .profile = p,
                              .sampler = "cpu", .trainer = "gpu"};
  pl = place_ok(&rq);
  cr_expect_eq(pl->sampler.device, 1);
  cr_expect_eq(pl->sampler.cores, 0);
  hs_placement_free(pl);
  hs_board_profile_free(p);
}

Test(placement, board_match_reports_each_rule) {
  hs_device_info d[1] = {dev_cpu(2, GiB(4))};
  number(d, 1);
  hs_board_profile *p = from_text("[board]\nname = t\n[device.gpu]\ntype = gpu\n"
                                  "required = false\n[device.cpu]\ntype = cpu\n"
                                  "[device.acc]\ntype = accelerator\n");
  int match[HS__BOARD_MAX_DEVICES];
  cr_assert_eq(hs__board_match(p, d, 1, match), HS_OK);
  cr_expect_eq(match[0], -1); /* optional gpu: absent */
  cr_expect_eq(match[1], 0);
  cr_expect_eq(match[2], -1); /* required accelerator: absent, no failure here */
  hs_board_profile_free(p);
}

Test(placement, explicit_split_must_fit) {
  hs_device_info d[1] = {dev_cpu(2, GiB(4))};
  number(d, 1);
  hs_board_profile *p = from_text("[board]\nname = t\n[split]\n"
                                  "sampler_cores = 2\ntrainer_cores = 2\n");
  hs_placement_request rq = {.struct_size = sizeof rq, .devices = d, .device_count = 1, .profile = p};
  place_fails(&rq, HS_ERR_PLACEMENT, "sampler 2 + trainer 2",
              "2 compute unit(s)");
  hs_board_profile_free(p);

  p = from_text("[board]\nname = t\n[split]\nsampler_cores = 1\n"
                "host_cores = 1\n[pipeline]\nmode = threads\n");
  d[0] = dev_cpu(4, GiB(4));
  number(d, 1);
  rq.profile = p;
  rq.host_cores = 4;
  hs_placement *pl = place_ok(&rq);
  cr_expect_eq(pl->sampler.cores, 1);
  cr_expect_eq(pl->trainer.cores, 2);
  cr_expect_eq(pl->host_reserved_cores, 1);
  cr_expect_eq(pl->pipeline, HS_PIPELINE_THREADS);
  EXPECT_REASON(pl, "split", "[split] of the profile", NULL, NULL);
  EXPECT_REASON(pl, "pipeline", "[pipeline] mode", NULL, NULL);
  hs_placement_free(pl);
  hs_board_profile_free(p);
}

/* ---- GPUs ------------------------------------------------------------------ */

Test(placement, one_gpu_runs_both_roles_on_two_queues) {
  hs_device_info d[2] = {dev_cpu(4, GiB(32)),
                         dev_gpu("Test GPU A", 40, 1500, GiB(8))};
  number(d, 2);
  hs_board_profile *p = shipped("gpu-single");
  hs_placement_request rq = {.struct_size = sizeof rq, .devices = d, .device_count = 2, .profile = p,
                             .topology_bytes = GiB(1),
                             .feature_bytes = GiB(4),
                             .feature_row_bytes = 1024, .host_cores = 4};
  hs_placement *pl = place_ok(&rq);
  cr_expect_eq(pl->sampler.device, 1);
  cr_expect_eq(pl->trainer.device, 1);
  cr_expect_eq(pl->link, HS_LINK_SAME_DEVICE);
  cr_expect(pl->shared_context);
  cr_expect_not(pl->zero_copy);
  cr_expect_eq(pl->pipeline, HS_PIPELINE_THREADS);
  cr_expect_eq(pl->depth, 3);
  cr_expect_eq(pl->host_reserved_cores, 4);
  cr_expect_eq(pl->gather_threads, 3);
  uint64_t u = usable(GiB(8), 10);
  uint64_t s = GiB(1) + GiB(1) / 100 * 10;
  cr_expect_eq(pl->sampler.budget_bytes, s);
  cr_expect_eq(pl->trainer.budget_bytes, u - s);
  cr_expect_eq(pl->cache_trainer_rows, (u - s) / 100 * 50 / 1024);
  cr_expect_eq(pl->host_budget_bytes, usable(GiB(32), 10));
  cr_expect_eq(pl->cache_host_bytes, 0);
  EXPECT_REASON(pl, "sampler", "[roles] sampler = gpu", "1.0 GiB", "7.2 GiB");
  EXPECT_REASON(pl, "link", "two queues", NULL, NULL);
  EXPECT_REASON(pl, "memory", "7.2 GiB usable", "topology plus headroom", NULL);
  EXPECT_REASON(pl, "cache", "50% of the trainer budget", "1024 B", NULL);
  EXPECT_REASON(pl, "cache", "host 0 B", "4.0 GiB", NULL);
  EXPECT_REASON(pl, "zero-copy", "no", "Test GPU A", NULL);
  EXPECT_REASON(pl, "gather", "3 thread(s)", "4 host cores", NULL);
  hs_placement_free(pl);
  hs_board_profile_free(p);
}

Test(placement, gpu_pair_samples_on_one_trains_on_the_faster) {
  hs_device_info d[3] = {dev_cpu(8, GiB(64)),
                         dev_gpu("Slow GPU", 20, 1000, GiB(8)),
                         dev_gpu("Fast GPU", 80, 1800, GiB(16))};
  number(d, 3);
  hs_board_profile *p = shipped("gpu-pair");
  hs_placement_request rq = {.struct_size = sizeof rq, .devices = d, .device_count = 3, .profile = p,
                             .topology_bytes = GiB(2), .host_cores = 8};
  hs_placement *pl = place_ok(&rq);
  cr_expect_eq(pl->trainer.device, 2);
  cr_expect_eq(pl->sampler.device, 1);
  cr_expect_str_eq(pl->sampler.profile_id, "gpu0");
  cr_expect_str_eq(pl->trainer.profile_id, "gpu1");
  cr_expect_eq(pl->link, HS_LINK_HOST);
  cr_expect_not(pl->shared_context);
  cr_expect_eq(pl->sampler.budget_bytes, usable(GiB(8), 10));
  cr_expect_eq(pl->trainer.budget_bytes, usable(GiB(16), 10));
  EXPECT_REASON(pl, "trainer", "Fast GPU", "80 x 1800 MHz", "2 GPU(s)");
  EXPECT_REASON(pl, "sampler", "Slow GPU", "2.0 GiB fits in 7.2 GiB usable",
                "apart from the trainer");
  EXPECT_REASON(pl, "link", "through the host", NULL, NULL);
  hs_placement_free(pl);

  /* When the slower GPU cannot hold the topology, both roles share. */
  rq.topology_bytes = GiB(10);
  pl = place_ok(&rq);
  cr_expect_eq(pl->sampler.device, 2);
  cr_expect_eq(pl->link, HS_LINK_SAME_DEVICE);
  EXPECT_REASON(pl, "sampler", "Slow GPU", "10.0 GiB does not fit in 7.2 GiB",
                NULL);
  hs_placement_free(pl);
  hs_board_profile_free(p);
}

Test(placement, gpu_pair_shares_a_context_only_on_one_platform) {
  hs_device_info d[2] = {dev_gpu("Slow GPU", 20, 1000, GiB(8)),
                         dev_gpu("Fast GPU", 80, 1800, GiB(16))};
  number(d, 2);
  hs_board_profile *p = from_text("[board]\nname = t\n[roles]\n"
                                  "shared_context = true\n");
  hs_placement_request rq = {.struct_size = sizeof rq, .devices = d, .device_count = 2, .profile = p,
                             .topology_bytes = GiB(1), .host_cores = 4};
  hs_placement *pl = place_ok(&rq);
  cr_expect_eq(pl->link, HS_LINK_CONTEXT);
  cr_expect(pl->shared_context);
  EXPECT_REASON(pl, "link", "one platform", "device to device", NULL);
  cr_expect_eq(pl->host_budget_bytes, 0);
  EXPECT_REASON(pl, "memory", "host: no budget", NULL, NULL);
  hs_placement_free(pl);

  d[1].platform_index = 3;
  pl = place_ok(&rq);
  cr_expect_eq(pl->link, HS_LINK_HOST);
  cr_expect_not(pl->shared_context);
  EXPECT_REASON(pl, "link", "different platforms", "through the host", NULL);
  hs_placement_free(pl);
  hs_board_profile_free(p);
}

Test(placement, gpu_too_small_for_the_topology) {
  hs_device_info d[2] = {dev_cpu(2, GiB(16)),
                         dev_gpu("Tiny GPU", 8, 800, GiB(2))};
  number(d, 2);
  hs_placement_request rq = {.struct_size = sizeof rq, .devices = d, .device_count = 2,
                             .topology_bytes = GiB(3), .host_cores = 2};
  hs_placement *pl = place_ok(&rq);
  cr_expect_eq(pl->trainer.device, 1);
  cr_expect_eq(pl->sampler.device, 0);
  cr_expect_eq(pl->link, HS_LINK_HOST);
  cr_expect_eq(pl->sampler.cores, 0); /* 2 cores: nothing kept apart */
  EXPECT_REASON(pl, "sampler", "Tiny GPU", "3.0 GiB does not fit in 1.8 GiB",
                "2.0 GiB global memory");
  EXPECT_REASON(pl, "sampler", "CPU", "3.0 GiB fits in 14.4 GiB", NULL);
  hs_placement_free(pl);

  /* The profile's GPU sampler cannot hold it: fall back, saying why. */
  hs_board_profile *p = shipped("gpu-single");
  rq.profile = p;
  pl = place_ok(&rq);
  cr_expect_eq(pl->sampler.device, 0);
  EXPECT_REASON(pl, "sampler", "[roles] sampler = gpu cannot be used",
                "3.0 GiB does not fit in 1.8 GiB", "falling back");
  hs_placement_free(pl);
  hs_board_profile_free(p);

  /* Nothing holds it. */
  rq.profile = NULL;
  rq.devices = &d[1];
  d[1].index = 0;
  rq.device_count = 1;
  place_fails(&rq, HS_ERR_PLACEMENT, "3.0 GiB", "1.8 GiB usable");
  d[0].global_mem_bytes = GiB(2);
  rq.devices = d;
  rq.device_count = 2;
  number(d, 2);
  place_fails(&rq, HS_ERR_PLACEMENT, "Tiny GPU", "pthread-Test CPU");
}

/* ---- FPGA ------------------------------------------------------------------ */

Test(placement, fpga_samples_from_its_prebuilt_binary) {
  hs_device_info d[3] = {dev_cpu(4, GiB(16)), dev_fpga("Test FPGA", GiB(8)),
                         dev_gpu("Test GPU", 40, 1500, GiB(8))};
  number(d, 3);
  hs_board_profile *p = shipped("fpga-sampler");
  hs_placement_request rq = {.struct_size = sizeof rq, .devices = d, .device_count = 3, .profile = p,
                             .topology_bytes = GiB(1), .host_cores = 4};
  hs_placement *pl = place_ok(&rq);
  cr_expect_eq(pl->sampler.device, 1);
  cr_expect_str_eq(pl->sampler.profile_id, "fpga");
  /* One program's binary, no bundle. */
  cr_expect_null(pl->sampler.binary);
  cr_expect_eq(pl->trainer.device, 2);
  cr_expect_null(pl->trainer.binary);
  cr_expect_eq(pl->link, HS_LINK_HOST);
  EXPECT_REASON(pl, "sampler", "program 'sample'", "prebuilt binary",
                "boards/fpga/hetsage-sample.bin");
  EXPECT_REASON(pl, "trainer", "Test GPU", "40 x 1500 MHz", NULL);
  hs_placement_free(pl);
  hs_board_profile_free(p);
}

static const char *fpga_profile_no_binary(bool fallback) {
  return fallback ? "[board]\nname = f\n[device.fpga]\ntype = accelerator\n"
                    "[device.gpu]\ntype = gpu\n[roles]\nsampler = fpga\n"
                    "fallback = true\n"
                  : "[board]\nname = f\n[device.fpga]\ntype = accelerator\n"
                    "[device.gpu]\ntype = gpu\n[roles]\nsampler = fpga\n"
                    "fallback = false\n";
}

Test(placement, fpga_without_binary_fails_or_falls_back) {
  hs_device_info d[2] = {dev_fpga("Test FPGA", GiB(8)),
                         dev_gpu("Test GPU", 40, 1500, GiB(8))};
  number(d, 2);
  hs_board_profile *p = from_text(fpga_profile_no_binary(false));
  hs_placement_request rq = {.struct_size = sizeof rq, .devices = d, .device_count = 2, .profile = p,
                             .topology_bytes = GiB(1)};
  place_fails(&rq, HS_ERR_PLACEMENT, "t.ini:8: [roles] sampler = fpga",
              "program 'sample' ([binaries] fpga.sample = <file>, or fpga = <bundle>)");
  cr_expect(strstr(hs_last_error(), "fallback = false"), "%s", hs_last_error());
  hs_board_profile_free(p);

  p = from_text(fpga_profile_no_binary(true));
  rq.profile = p;
  hs_placement *pl = place_ok(&rq);
  cr_expect_eq(pl->sampler.device, 1);
  EXPECT_REASON(pl, "sampler", "cannot be used", "Test FPGA", "no prebuilt binary");
  hs_placement_free(pl);
  hs_board_profile_free(p);

  /* The automatic rules skip it, saying why, and take it once it has a
   * binary: an accelerator before a GPU. */
  rq.profile = NULL;
  pl = place_ok(&rq);
  cr_expect_eq(pl->sampler.device, 1);
  EXPECT_REASON(pl, "sampler", "not accelerator 'Test FPGA'", "no prebuilt binary",
                NULL);
  hs_placement_free(pl);
  p = from_text("[board]\nname = f\n[device.fpga]\ntype = accelerator\n"
                "[device.gpu]\ntype = gpu\n[binaries]\nfpga = s.bin\n");
  rq.profile = p;
  pl = place_ok(&rq);
  cr_expect_eq(pl->sampler.device, 0);
  cr_expect_str_eq(pl->sampler.binary, "/boards/s.bin");
  cr_expect_eq(pl->trainer.device, 1);
  hs_placement_free(pl);
  hs_board_profile_free(p);
}

/* ---- overrides ----------------------------------------------------------- */

Test(placement, overrides_by_index_type_name_and_profile_id) {
  hs_device_info d[3] = {dev_cpu(4, GiB(16)),
                         dev_gpu("Slow GPU", 20, 1000, GiB(8)),
                         dev_gpu("Fast GPU", 80, 1800, GiB(16))};
  number(d, 3);
  hs_board_profile *p = shipped("gpu-pair");
  hs_placement_request rq = {.struct_size = sizeof rq, .devices = d, .device_count = 3, .profile = p,
                             .topology_bytes = GiB(1), .host_cores = 4,
                             .sampler = "2", .sampler_source = "--sampler",
                             .trainer = "slow", .trainer_source = "--trainer"};
  hs_placement *pl = place_ok(&rq);
  cr_expect_eq(pl->sampler.device, 2);
  cr_expect_eq(pl->trainer.device, 1);
  EXPECT_REASON(pl, "sampler", "chosen by --sampler=2", "Fast GPU", NULL);
  EXPECT_REASON(pl, "trainer", "chosen by --trainer=slow", "Slow GPU", NULL);
  hs_placement_free(pl);

  rq.sampler = "cpu";
  rq.trainer = "gpu1"; /* the profile's device id */
  pl = place_ok(&rq);
  cr_expect_eq(pl->sampler.device, 0);
  cr_expect_eq(pl->trainer.device, 2);
  cr_expect_eq(pl->sampler.cores, 3); /* 4 cores, one kept for the host */
  cr_expect_eq(pl->host_reserved_cores, 1);
  EXPECT_REASON(pl, "sampler", "chosen by --sampler=cpu", "best cpu", NULL);
  hs_placement_free(pl);

  rq.sampler = "7";
  place_fails(&rq, HS_ERR_PLACEMENT, "--sampler=7", "has 3");
  rq.sampler = "quantum";
  place_fails(&rq, HS_ERR_PLACEMENT, "--sampler=quantum", "matches no device");
  rq.sampler = "accelerator";
  place_fails(&rq, HS_ERR_PLACEMENT, "no device can take the sampler role", NULL);
  hs_board_profile_free(p);
}

Test(placement, overrides_beat_the_profile_and_flags_beat_the_environment) {
  hs_device_info d[2] = {dev_cpu(2, GiB(16)),
                         dev_gpu("Test GPU", 40, 1500, GiB(8))};
  number(d, 2);
  hs_board_profile *p = shipped("gpu-single");
  /* The role settings, as HETSAGE_SAMPLER and HETSAGE_TRAINER give them. */
  setenv("HETSAGE_SAMPLER", "cpu", 1);
  setenv("HETSAGE_TRAINER", "0", 1);
  hs_settings env;
  hs_settings_init(&env);
  cr_assert_eq(hs_settings_from_env(&env), HS_OK, "%s", hs_last_error());
  hs_placement_request rq = {.struct_size = sizeof rq, .devices = d, .device_count = 2, .profile = p,
                             .topology_bytes = GiB(1)};
  hs_placement_request_settings(&rq, &env);
  cr_expect_str_eq(rq.sampler_source, "HETSAGE_SAMPLER");
  hs_placement *pl = place_ok(&rq);
  cr_expect_eq(pl->sampler.device, 0);
  cr_expect_eq(pl->trainer.device, 0);
  cr_expect_eq(pl->link, HS_LINK_SUB_DEVICES);
  EXPECT_REASON(pl, "sampler", "HETSAGE_SAMPLER=cpu", NULL, NULL);
  EXPECT_REASON(pl, "trainer", "HETSAGE_TRAINER=0", NULL, NULL);
  hs_placement_free(pl);

  hs_placement_request flags = {.struct_size = sizeof flags, .devices = d, .device_count = 2, .profile = p,
                                .sampler = "gpu", .sampler_source = "--sampler"};
  hs_placement_request_settings(&flags, &env);
  cr_expect_str_eq(flags.sampler, "gpu");
  cr_expect_str_eq(flags.trainer, "0");
  pl = place_ok(&flags);
  cr_expect_eq(pl->sampler.device, 1);
  cr_expect_eq(pl->trainer.device, 0);
  hs_placement_free(pl);
  unsetenv("HETSAGE_SAMPLER");
  unsetenv("HETSAGE_TRAINER");

  /* An explicit choice that cannot hold the topology fails, with sizes. */
  hs_placement_request big = {.struct_size = sizeof big, .devices = d, .device_count = 2, .profile = p,
                              .topology_bytes = GiB(12), .sampler = "1",
                              .sampler_source = "--sampler"};
  place_fails(&big, HS_ERR_PLACEMENT, "12.0 GiB does not fit in 7.2 GiB",
              "--sampler=1");
  hs_board_profile_free(p);
}

/* ---- unified memory -------------------------------------------------------- */

Test(placement, integrated_gpu_is_zero_copy) {
  hs_device_info d[2] = {dev_cpu(6, GiB(8)),
                         dev_gpu("Test iGPU", 8, 1300, GiB(8))};
  d[1].unified_memory = true;
  number(d, 2);
  hs_board_profile *p = shipped("integrated-gpu");
  hs_placement_request rq = {.struct_size = sizeof rq, .devices = d, .device_count = 2, .profile = p,
                             .topology_bytes = MiB(256),
                             .feature_bytes = GiB(1),
                             .feature_row_bytes = 400, .host_cores = 6};
  hs_placement *pl = place_ok(&rq);
  cr_expect_eq(pl->sampler.device, 1);
  cr_expect_eq(pl->trainer.device, 1);
  cr_expect(pl->zero_copy);
  cr_expect_eq(pl->cache_trainer_rows, 0);
  cr_expect_eq(pl->depth, 2);
  cr_expect_eq(pl->sampler.budget_bytes, MiB(256) + MiB(256) / 100 * 25);
  EXPECT_REASON(pl, "zero-copy", "yes", "[memory] zero_copy", NULL);
  EXPECT_REASON(pl, "sampler", "256.0 MiB", "6.0 GiB usable", "25% headroom");
  hs_placement_free(pl);

  /* Without a profile, zero-copy follows what the devices report. */
  rq.profile = NULL;
  pl = place_ok(&rq);
  cr_expect(pl->zero_copy);
  EXPECT_REASON(pl, "zero-copy", "host-unified", "mapped", NULL);
  hs_placement_free(pl);

  /* A discrete GPU does not satisfy the profile's unified_memory rule. */
  d[1].unified_memory = false;
  rq.profile = p;
  place_fails(&rq, HS_ERR_PROFILE, "integrated-gpu.ini:", "[device.gpu]");
  cr_expect(strstr(hs_last_error(), "unified_memory true"), "%s",
            hs_last_error());
  hs_board_profile_free(p);
}

/* ---- profile rules and budgets -------------------------------------------- */

Test(placement, missing_required_device_names_profile_line) {
  hs_device_info d[1] = {dev_cpu(2, GiB(4))};
  number(d, 1);
  hs_board_profile *p = shipped("gpu-single");
  const hs__board_device *gpu = hs__board_device_find(p, "gpu");
  cr_assert_not_null(gpu);
  char where[64];
  snprintf(where, sizeof where, "gpu-single.ini:%d: [device.gpu]", gpu->line);
  hs_placement_request rq = {.struct_size = sizeof rq, .devices = d, .device_count = 1, .profile = p};
  place_fails(&rq, HS_ERR_PROFILE, where, "pthread-Test CPU");
  hs_board_profile_free(p);
}

Test(placement, rules_match_devices_as_a_whole) {
  hs_device_info d[2] = {dev_gpu("Slow GPU", 20, 1000, GiB(8)),
                         dev_gpu("Fast GPU", 80, 1800, GiB(16))};
  number(d, 2);
  /* Taking rules one by one would give 'a' the slow GPU and leave 'b'
   * nothing; matching as a whole gives each a device. */
  hs_board_profile *p = from_text(
      "[board]\nname = t\n[device.a]\ntype = gpu\n[device.b]\ntype = gpu\n"
      "name = slow\n[device.c]\ntype = cpu\nrequired = false\n"
      "[roles]\nsampler = b\ntrainer = a\n");
  hs_placement_request rq = {.struct_size = sizeof rq, .devices = d, .device_count = 2, .profile = p};
  hs_placement *pl = place_ok(&rq);
  cr_expect_eq(pl->sampler.device, 0);
  cr_expect_eq(pl->trainer.device, 1);
  EXPECT_REASON(pl, "devices", "[device.a] is GPU 'Fast GPU'", NULL, NULL);
  EXPECT_REASON(pl, "devices", "[device.c]", "optional", "skipped");
  hs_placement_free(pl);
  hs_board_profile_free(p);
}

Test(placement, budgets_and_cache_limits_are_checked) {
  hs_device_info d[2] = {dev_cpu(4, GiB(16)),
                         dev_gpu("Test GPU", 40, 1500, GiB(8))};
  number(d, 2);
  hs_board_profile *p = from_text("[board]\nname = t\n[memory]\n"
                                  "sampler = 100M\n");
  hs_placement_request rq = {.struct_size = sizeof rq, .devices = d, .device_count = 2, .profile = p,
                             .topology_bytes = MiB(512)};
  place_fails(&rq, HS_ERR_PLACEMENT, "100.0 MiB", "512.0 MiB");
  hs_board_profile_free(p);

  p = from_text("[board]\nname = t\n[memory]\ntrainer = 64G\n");
  rq.profile = p;
  place_fails(&rq, HS_ERR_PLACEMENT, "64.0 GiB", "left by the sampler");
  hs_board_profile_free(p);

  p = from_text("[board]\nname = t\n[memory]\ntrainer = 1G\nhost = 8G\n"
                "[cache]\ntrainer_rows = 3000000\n");
  rq.profile = p;
  rq.feature_row_bytes = 512;
  rq.feature_bytes = GiB(2);
  place_fails(&rq, HS_ERR_PLACEMENT, "3000000 x 512 B", "1.0 GiB");
  hs_board_profile_free(p);

  p = from_text("[board]\nname = t\n[memory]\nhost = 2G\n"
                "[cache]\ntrainer_rows = 1000\nfill = degree\n"
                "[pipeline]\nmode = off\n");
  rq.profile = p;
  rq.feature_bytes = GiB(6);
  hs_placement *pl = place_ok(&rq);
  cr_expect_eq(pl->cache_trainer_rows, 1000);
  cr_expect_eq(pl->cache_fill, HS_CACHE_FILL_DEGREE);
  cr_expect_eq(pl->host_budget_bytes, GiB(2));
  cr_expect_eq(pl->cache_host_bytes, GiB(1));
  cr_expect_eq(pl->pipeline, HS_PIPELINE_OFF);
  cr_expect_eq(pl->depth, 1);
  EXPECT_REASON(pl, "cache", "host 1.0 GiB", "6.0 GiB", "2.0 GiB");
  EXPECT_REASON(pl, "cache", "fill degree", "[cache] fill", NULL);
  hs_placement_free(pl);
  hs_board_profile_free(p);
}

Test(placement, bad_requests) {
  hs_placement *pl = NULL;
  cr_expect_eq(hs_placement_make(NULL, &pl), HS_ERR_INVALID_ARG);
  hs_placement_request rq = {.struct_size = sizeof rq};
  cr_expect_eq(hs_placement_make(&rq, NULL), HS_ERR_INVALID_ARG);
  cr_expect_eq(hs_placement_make(&rq, &pl), HS_ERR_NO_DEVICE);
  cr_expect(strstr(hs_last_error(), "empty"));
  hs_device_info d[1] = {dev_cpu(2, GiB(4))};
  d[0].available = false;
  rq.devices = d;
  rq.device_count = 1;
  cr_expect_eq(hs_placement_make(&rq, &pl), HS_ERR_NO_DEVICE);
  d[0].available = true;
  d[0].index = 5;
  cr_expect_eq(hs_placement_make(&rq, &pl), HS_ERR_INVALID_ARG);
  cr_expect_null(pl);
  hs_placement_free(NULL);
}

Test(placement, describe_is_snprintf_like) {
  hs_device_info d[1] = {dev_cpu(2, GiB(4))};
  number(d, 1);
  hs_placement_request rq = {.struct_size = sizeof rq, .devices = d, .device_count = 1};
  hs_placement *pl = place_ok(&rq);
  size_t need = hs_placement_describe(pl, NULL, 0);
  cr_assert_gt(need, 100);
  char *full = malloc(need + 1);
  cr_assert_eq(hs_placement_describe(pl, full, need + 1), need);
  cr_expect_eq(strlen(full), need);
  cr_expect(strstr(full, "sampler: device 0, sub-device of 1 compute unit(s)"),
            "%s", full);
  cr_expect(strstr(full, "link: sub-devices"), "%s", full);
  cr_expect(strstr(full, "why:\n  "), "%s", full);
  char small[16];
  cr_expect_eq(hs_placement_describe(pl, small, sizeof small), need);
  cr_expect_eq(strlen(small), sizeof small - 1);
  cr_expect(strncmp(small, full, sizeof small - 1) == 0);
  free(full);
  hs_placement_free(pl);
  cr_expect_str_eq(hs_pipeline_mode_name(HS_PIPELINE_ASYNC), "async");
  cr_expect_str_eq(hs_cache_fill_name(HS_CACHE_FILL_PRESAMPLE), "presample");
  cr_expect_str_eq(hs_role_link_name(HS_LINK_SUB_DEVICES), "sub-devices");
}

/* ---- this machine ------------------------------------------------------------ */

Test(placement, default_board_on_this_machine) {
  hs_runtime *rt = NULL;
  hs_status st = hs_runtime_open(&rt, NULL);
  if (st == HS_ERR_NO_DEVICE) cr_skip_test("no OpenCL device: %s", hs_last_error());
  cr_assert_eq(st, HS_OK, "%s", hs_last_error());
  int n = hs_runtime_device_count(rt);
  const hs_device_info *devs = hs_runtime_device(rt, 0); /* an array of its own stride */
  const hs_device_info *cpu = NULL;
  for (int i = 0; i < n && !cpu; i++) {
    const hs_device_info *d = hs_runtime_device(rt, i);
    if (d->type == HS_DEVICE_CPU && d->available) cpu = d;
  }
  if (!cpu) {
    hs_runtime_close(rt);
    cr_skip_test("no OpenCL CPU device for the default board");
  }
  hs_board_profile *p = shipped(HS_BOARD_DEFAULT);
  hs_placement_request rq = {.struct_size = sizeof rq, .devices = devs, .device_count = n, .profile = p,
                             .topology_bytes = MiB(64),
                             .host_cores = hs_runtime_host_cores(rt)};
  hs_placement *pl = place_ok(&rq);
  cr_expect_eq(pl->sampler.device, cpu->index);
  cr_expect_eq(pl->trainer.device, cpu->index);
  if (cpu->partition_by_counts && cpu->max_sub_devices >= 2 &&
      cpu->compute_units >= 2) {
    cr_expect_eq(pl->link, HS_LINK_SUB_DEVICES);
    cr_expect_geq(pl->sampler.cores, 1);
    cr_expect_geq(pl->trainer.cores, 1);
    cr_expect_leq(pl->sampler.cores + pl->trainer.cores, cpu->compute_units);
  } else {
    cr_expect_eq(pl->link, HS_LINK_SAME_DEVICE);
  }
  cr_expect(pl->shared_context);
  cr_expect_eq(pl->pipeline, rq.host_cores <= 2 ? HS_PIPELINE_ASYNC
                                                : HS_PIPELINE_THREADS);
  hs_placement_free(pl);
  hs_board_profile_free(p);
  hs_runtime_close(rt);
}

/* ---- stable selection across OpenCL implementations ------------------------ */

/* Names as discovery gives them (hs__inventory_order). */
static void implementation(hs_device_info *d, const char *key, const char *platform, int pos) {
  snprintf(d->platform_key, sizeof d->platform_key, "%s", key);
  snprintf(d->platform_name, sizeof d->platform_name, "%s", platform);
  d->platform_device = pos;
  snprintf(d->selector, sizeof d->selector, "%s:%d", key, pos);
}

/* PoCL, rusticl and oclgrind side by side, as on the CI machine. */
static void three_implementations(hs_device_info d[3]) {
  d[0] = dev_cpu(2, GiB(16));
  implementation(&d[0], "pocl", "Portable Computing Language", 0);
  d[1] = dev_cpu(8, GiB(2));
  snprintf(d[1].name, sizeof d[1].name, "llvmpipe (LLVM 15.0.6, 256 bits)");
  d[1].clock_mhz = 300;
  d[1].partition_by_counts = false;
  d[1].max_sub_devices = 0;
  d[1].platform_index = 1;
  implementation(&d[1], "rusticl", "rusticl", 0);
  d[2] = dev_gpu("Oclgrind Simulator", 1, 1, MiB(128));
  d[2].platform_index = 2;
  d[2].simulator = true;
  implementation(&d[2], "oclgrind", "Oclgrind", 0);
  number(d, 3);
}

Test(placement, selectors_name_devices_by_platform_and_position) {
  hs_device_info d[3];
  three_implementations(d);
  hs_board_profile *p = shipped("generic-cpu");
  hs_placement_request rq = {.struct_size = sizeof rq, .devices = d, .device_count = 3, .profile = p,
                             .topology_bytes = MiB(1), .host_cores = 2};
  static const struct { const char *spec; int want; } cases[] = {
      {"pocl:0", 0}, {"rusticl:0", 1}, {"rusticl", 1}, {"RUSTICL:llvmpipe", 1},
      {"oclgrind:", 2}, {"oclgrind", 2}, {"Portable Computing:0", 0}, {"Oclgrind:simulator", 2},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    rq.sampler = cases[i].spec;
    rq.trainer = "pocl:0";
    hs_placement *pl = place_ok(&rq);
    cr_expect_eq(pl->sampler.device, cases[i].want, "%s", cases[i].spec);
    cr_expect_str_eq(pl->sampler.selector, d[cases[i].want].selector);
    cr_expect_eq(pl->sampler.simulator, cases[i].want == 2);
    EXPECT_REASON(pl, "sampler", d[cases[i].want].selector, cases[i].spec, NULL);
    hs_placement_free(pl);
  }
  rq.sampler = "pocl:1";
  place_fails(&rq, HS_ERR_PLACEMENT, "pocl:1", "rusticl:0");
  rq.sampler = "nvidia:0";
  place_fails(&rq, HS_ERR_PLACEMENT, "nvidia", "PLATFORM:DEVICE");
  hs_board_profile_free(p);
}

/* A simulator is named as such wherever placement names it, and the
 * automatic rules never prefer it to a real device, even when it is the
 * only GPU. When it is all there is, it is used. */
Test(placement, simulators_are_named_and_never_preferred) {
  hs_device_info d[3];
  three_implementations(d);
  hs_placement_request rq = {.struct_size = sizeof rq, .devices = d, .device_count = 3, .topology_bytes = MiB(1),
                             .host_cores = 2};
  hs_placement *pl = place_ok(&rq); /* no profile: the automatic rules alone */
  cr_expect_eq(pl->trainer.device, 0, "the trainer went to device %d", pl->trainer.device);
  cr_expect_eq(pl->sampler.device, 0, "the sampler went to device %d", pl->sampler.device);
  hs_placement_free(pl);

  hs_board_profile *p = shipped("gpu-single");
  rq.profile = p;
  pl = place_ok(&rq);
  cr_expect_eq(pl->trainer.device, 2);
  cr_expect(pl->trainer.simulator);
  EXPECT_REASON(pl, "trainer", "oclgrind:0", "a simulator", NULL);
  char text[8192];
  hs_placement_describe(pl, text, sizeof text);
  cr_expect(strstr(text, "(oclgrind:0, simulator)") != NULL, "%s", text);
  hs_placement_free(pl);
  hs_board_profile_free(p);
}

/* A profile's `platform` rule takes the platform key too, so that a board
 * can say "the PoCL CPU" even though PoCL spells its name out. */
Test(placement, profile_rules_select_a_platform_by_key) {
  hs_device_info d[3];
  three_implementations(d);
  hs_board_profile *p = from_text("[board]\nname = t\n[device.cpu]\ntype = cpu\nplatform = rusticl\n"
                                  "[roles]\nsampler = cpu\ntrainer = cpu\n");
  hs_placement_request rq = {.struct_size = sizeof rq, .devices = d, .device_count = 3, .profile = p,
                             .topology_bytes = MiB(1), .host_cores = 2};
  hs_placement *pl = place_ok(&rq);
  cr_expect_eq(pl->trainer.device, 1);
  hs_placement_free(pl);
  hs_board_profile_free(p);
  p = from_text("[board]\nname = t\n[device.cpu]\ntype = cpu\nplatform = pocl\n"
                "[roles]\nsampler = cpu\ntrainer = cpu\n");
  rq.profile = p;
  pl = place_ok(&rq);
  cr_expect_eq(pl->trainer.device, 0);
  hs_placement_free(pl);
  hs_board_profile_free(p);
}
