/* Device layer without kernel compiles: discovery, hwloc, sub-devices,
 * queues, split buffers, OpenCL error reporting. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hetsage.h"
#include "hs_test_cl.h"

Test(devices, discovery_lists_a_complete_cpu_device) {
  hs_inventory inv;
  const hs_dev *d = hs_test_pick_device(&inv, HS_DEVICE_CPU);
  const hs_device_info *i = &d->info;
  cr_expect_gt(strlen(i->name), 0);
  cr_expect_gt(strlen(i->vendor), 0);
  cr_expect_gt(strlen(i->platform_name), 0);
  cr_expect_gt(strlen(i->driver_version), 0);
  cr_expect(strncmp(i->device_version, "OpenCL ", 7) == 0, "%s", i->device_version);
  cr_expect(strncmp(i->opencl_c_version, "OpenCL C ", 9) == 0, "%s", i->opencl_c_version);
  cr_expect_geq(i->compute_units, 1u);
  cr_expect_gt(i->global_mem_bytes, 0u);
  cr_expect_gt(i->max_alloc_bytes, 0u);
  cr_expect_leq(i->max_alloc_bytes, i->global_mem_bytes);
  cr_expect_gt(i->max_work_group_size, 0u);
  cr_expect_geq(i->max_work_item_dims, 1u);
  cr_expect_gt(i->max_work_item_sizes[0], 0u);
  cr_expect(i->available);
  /* The extension flags must agree with the extension string. */
  cr_expect_eq(i->int64_atomics, strstr(i->extensions, "cl_khr_int64_base_atomics") != NULL);
  cr_expect_eq(i->fp16, strstr(i->extensions, "cl_khr_fp16") != NULL);
  cr_expect_eq(inv.devs[i->index].id, d->id);
  hs__inventory_release(&inv);
}

Test(devices, runtime_exposes_inventory_and_topology) {
  hs_runtime *rt = NULL;
  hs_status st = hs_runtime_open(&rt, NULL);
  if (st == HS_ERR_NO_DEVICE) cr_skip_test("no OpenCL device: %s", hs_last_error());
  cr_assert_eq(st, HS_OK, "%s", hs_last_error());
  int n = hs_runtime_device_count(rt);
  cr_expect_null(hs_runtime_device(rt, n));
  cr_expect_null(hs_runtime_device(rt, -1));
  cr_expect_gt(n, 0);
  for (int i = 0; i < n; i++) {
    cr_expect_eq(hs_runtime_device(rt, i)->index, i);
    if (hs_runtime_device(rt, i)->type == HS_DEVICE_CPU)
      cr_expect_gt(strlen(hs_runtime_device(rt, i)->cpuset), 0, "a CPU device maps to host cores");
  }
  cr_assert_not_null(hs_runtime_topology(rt));
  hs_host_topology topo = *hs_runtime_topology(rt);
  cr_expect_geq(topo.cores, 1);
  cr_expect_geq(topo.pus, topo.cores);
  cr_expect_eq(hs_runtime_host_cores(rt), topo.cores);
  cr_expect_geq(hs_runtime_platform_count(rt), 1);
  cr_expect_not_null(hs_runtime_platform(rt, 0));
  cr_expect_null(hs_runtime_platform(rt, 99));
  hs_runtime_close(rt);
}

Test(devices, topology_cpusets_and_binding) {
  hs_topo *topo;
  cr_assert_eq(hs__topo_open(&topo), HS_OK);
  hs_topo_summary s;
  hs__topo_summary(topo, &s);
  char buf[64];
  cr_expect_eq(hs__topo_cores_cpuset(topo, 0, 1, buf, sizeof buf), HS_OK);
  cr_expect_gt(strlen(buf), 0);
  cr_expect_eq(hs__topo_cores_cpuset(topo, s.cores, 1, buf, sizeof buf), HS_ERR_RANGE);
  cr_expect_eq(hs__topo_bind_thread(topo, s.cores - 1, 1), HS_OK, "%s", hs_last_error());
  cr_expect_eq(hs__topo_bind_thread(topo, 0, s.cores + 1), HS_ERR_RANGE);
  hs__topo_close(topo);
}

Test(devices, split_cpu_into_sampler_and_trainer) {
  hs_inventory inv;
  const hs_dev *d = hs_test_pick_device(&inv, HS_DEVICE_CPU);
  if (!d->info.partition_by_counts || d->info.compute_units < 2) {
    hs__inventory_release(&inv);
    cr_skip_test("device cannot be split by counts into two parts");
  }
  unsigned counts[2] = {1, d->info.compute_units - 1};
  hs_dev subs[2];
  cr_assert_eq(hs__subdevices_create(d, counts, 2, subs), HS_OK, "%s", hs_last_error());
  cr_expect_eq(subs[0].info.compute_units, 1u);
  cr_expect_eq(subs[1].info.compute_units, d->info.compute_units - 1);
  cr_expect_eq(subs[0].platform, d->platform);

  /* Both sub-devices share one context, so blocks can move between them
   * without the host. */
  hs_ctx ctx;
  cr_assert_eq(hs__ctx_create(subs, 2, &ctx), HS_OK, "%s", hs_last_error());
  cl_command_queue q0, q1;
  cr_expect_eq(hs__queue_create(&ctx, &subs[0], HS_QUEUE_PROFILING, &q0), HS_OK);
  cr_expect_eq(hs__queue_create(&ctx, &subs[1], HS_QUEUE_OUT_OF_ORDER, &q1), HS_OK);
  clReleaseCommandQueue(q0);
  clReleaseCommandQueue(q1);
  hs__ctx_release(&ctx);
  hs__subdevices_release(subs, 2);

  unsigned too_many[2] = {d->info.compute_units, 1};
  cr_expect_eq(hs__subdevices_create(d, too_many, 2, subs), HS_ERR_RANGE);
  unsigned zero[2] = {0, 1};
  cr_expect_eq(hs__subdevices_create(d, zero, 2, subs), HS_ERR_INVALID_ARG);
  hs__inventory_release(&inv);
}

/* A copy of `d` whose settings split arrays at `max_alloc` bytes (what
 * HETSAGE_MAX_ALLOC sets). */
static hs_dev with_max_alloc(const hs_dev *d, size_t max_alloc, hs__dev_settings *ds) {
  *ds = *hs_test_dev_settings();
  ds->max_alloc = max_alloc;
  hs_dev copy = *d;
  copy.settings = ds;
  return copy;
}

static void split_roundtrip(size_t max_alloc, size_t n_floats, int expect_parts) {
  hs_inventory inv;
  hs__dev_settings ds;
  hs_dev lowered = with_max_alloc(hs_test_pick_device(&inv, HS_DEVICE_CPU), max_alloc, &ds);
  const hs_dev *d = &lowered;
  hs_ctx ctx;
  cr_assert_eq(hs__ctx_create(d, 1, &ctx), HS_OK);
  cl_command_queue q;
  cr_assert_eq(hs__queue_create(&ctx, d, 0, &q), HS_OK);
  hs_split_buf buf;
  cr_assert_eq(hs__split_buf_create(&ctx, d, CL_MEM_READ_WRITE, n_floats * 4, 4, &buf),
               HS_OK, "%s", hs_last_error());
  cr_expect_eq(buf.n_parts, expect_parts);
  cr_expect_eq(buf.part_bytes % 4, 0u);
  float *src = malloc(n_floats * 4), *dst = calloc(n_floats, 4);
  for (size_t i = 0; i < n_floats; i++) src[i] = (float)i * 0.5f;
  cr_assert_eq(hs__split_buf_write(q, &buf, 0, n_floats * 4, src), HS_OK, "%s", hs_last_error());
  cr_assert_eq(hs__split_buf_read(q, &buf, 0, n_floats * 4, dst), HS_OK);
  cr_expect_arr_eq(src, dst, n_floats * 4);
  /* A range that straddles a part boundary. */
  if (buf.n_parts > 1) {
    size_t off = buf.part_bytes - 8;
    float tmp[6];
    cr_assert_eq(hs__split_buf_read(q, &buf, off, sizeof tmp, tmp), HS_OK);
    cr_expect_arr_eq(tmp, (char *)src + off, sizeof tmp);
  }
  cr_expect_eq(hs__split_buf_read(q, &buf, n_floats * 4 - 4, 8, dst), HS_ERR_RANGE);
  free(src);
  free(dst);
  hs__split_buf_release(&buf);
  clReleaseCommandQueue(q);
  hs__ctx_release(&ctx);
  hs__inventory_release(&inv);
}

Test(devices, split_buffer_under_a_lowered_max_alloc) {
  /* 10000 floats = 40000 bytes in parts of at most 4096 (rounded to 4). */
  split_roundtrip(4098, 10000, 10);
}

Test(devices, array_within_max_alloc_is_one_part) {
  split_roundtrip(1 << 20, 1000, 1);
}

Test(devices, split_buffer_refuses_too_many_parts) {
  hs_inventory inv;
  hs__dev_settings ds;
  hs_dev lowered = with_max_alloc(hs_test_pick_device(&inv, HS_DEVICE_CPU), 16, &ds);
  const hs_dev *d = &lowered;
  hs_ctx ctx;
  cr_assert_eq(hs__ctx_create(d, 1, &ctx), HS_OK);
  hs_split_buf buf;
  cr_expect_eq(hs__split_buf_create(&ctx, d, CL_MEM_READ_WRITE, 16 * 1000, 4, &buf),
               HS_ERR_BUDGET);
  cr_expect(strstr(hs_last_error(), "allocations") != NULL, "%s", hs_last_error());
  hs__ctx_release(&ctx);
  hs__inventory_release(&inv);
}

Test(devices, opencl_errors_name_the_call_and_device) {
  hs_inventory inv;
  const hs_dev *d = hs_test_pick_device(&inv, HS_DEVICE_CPU);
  cr_expect_str_eq(hs__cl_error_name(CL_OUT_OF_RESOURCES), "CL_OUT_OF_RESOURCES");
  cr_expect_str_eq(hs__cl_error_name(-9999), "CL_UNKNOWN_ERROR(-9999)");
  hs_status st = hs__cl_fail(CL_INVALID_VALUE, "clCreateBuffer", d->id);
  cr_expect_eq(st, HS_ERR_OPENCL);
  cr_expect(strstr(hs_last_error(), "clCreateBuffer") != NULL);
  cr_expect(strstr(hs_last_error(), "CL_INVALID_VALUE") != NULL);
  cr_expect(strstr(hs_last_error(), d->info.name) != NULL, "%s", hs_last_error());
  hs__inventory_release(&inv);
}

/* Discovery with a broken platform registered beside the real ones: the
 * broken one is recorded and skipped, the real devices are still found. */
static void discover_beside_fake(const char *mode) {
  const char *lib = getenv("HS_FAKE_ICD");
  if (!lib) cr_skip_test("HS_FAKE_ICD not set");
  char dir[] = "/tmp/hs-icd-XXXXXX";
  cr_assert(mkdtemp(dir));
  char path[256];
  snprintf(path, sizeof path, "%s/fake.icd", dir);
  FILE *f = fopen(path, "w");
  fprintf(f, "%s\n", lib);
  fclose(f);
  /* Keep the machine's real platforms too. */
  snprintf(path, sizeof path, "%s/system.icd", dir);
  FILE *sys = fopen("/etc/OpenCL/vendors/pocl.icd", "r");
  char line[256] = "";
  if (sys) {
    if (!fgets(line, sizeof line, sys)) line[0] = '\0';
    fclose(sys);
    f = fopen(path, "w");
    fputs(line, f);
    fclose(f);
  }
  setenv("OCL_ICD_VENDORS", dir, 1);
  setenv("FAKE_ICD_MODE", mode, 1);

  hs_inventory inv;
  hs_status st = hs__inventory_discover(&inv);
  int fake = -1;
  if (st == HS_OK) {
    for (int i = 0; i < inv.n_platforms; i++)
      if (strcmp(inv.platforms[i].name, "hetsage fake platform") == 0) fake = i;
    cr_assert_geq(fake, 0, "the fake platform was not listed");
    if (strcmp(mode, "fail") == 0) {
      cr_expect_eq(inv.platforms[fake].num_devices, -1);
      cr_expect(strstr(inv.platforms[fake].error, "CL_OUT_OF_HOST_MEMORY") != NULL, "%s",
                inv.platforms[fake].error);
    } else {
      cr_expect_eq(inv.platforms[fake].num_devices, 0);
      cr_expect_str_eq(inv.platforms[fake].error, "no device");
    }
    for (int i = 0; i < inv.n_devs; i++) cr_expect_neq(inv.devs[i].info.platform_index, fake);
    hs__inventory_release(&inv);
  } else {
    /* No real platform on this machine: the fake one alone yields none. */
    cr_expect_eq(st, HS_ERR_NO_DEVICE);
    cr_expect_eq(line[0], '\0', "a real platform exists but discovery failed: %s",
                 hs_last_error());
  }
  unlink(path);
  snprintf(path, sizeof path, "%s/fake.icd", dir);
  unlink(path);
  rmdir(dir);
}

Test(devices, survives_a_platform_with_no_device) { discover_beside_fake("nodevice"); }
Test(devices, survives_a_platform_whose_calls_fail) { discover_beside_fake("fail"); }

/* ---- stable order ---------------------------------------------------------- */

#include "icd_dir.h"

/* Whatever order the ICD loader lists platforms in, the inventory is the
 * same: real devices first, then by platform key and name, then by
 * position within the platform; keys are unique and every device has a
 * selector. */
Test(devices, inventory_order_ignores_the_loader_order) {
  static const struct { const char *name, *vendor, *dev; bool sim; } plats[] = {
      {"Oclgrind", "University of Bristol", "Oclgrind Simulator", true},
      {"rusticl", "Mesa/X.org", "llvmpipe", false},
      {"Portable Computing Language", "The pocl project", "pthread-cpu", false},
      {"Intel(R) OpenCL", "Intel(R) Corporation", "Intel CPU", false},
      {"Intel(R) OpenCL Graphics", "Intel(R) Corporation", "Intel GPU", false},
  };
  const int np = 5;
  static const int orders[2][5] = {{0, 1, 2, 3, 4}, {4, 2, 3, 0, 1}};
  char got[2][6][48];
  for (int o = 0; o < 2; o++) {
    hs_inventory inv = {0};
    inv.n_platforms = np;
    inv.platforms = calloc(np, sizeof *inv.platforms);
    inv.devs = calloc(2 * np, sizeof *inv.devs);
    for (int p = 0; p < np; p++) {
      int k = orders[o][p];
      snprintf(inv.platforms[p].name, HS_NAME_MAX, "%s", plats[k].name);
      snprintf(inv.platforms[p].vendor, HS_NAME_MAX, "%s", plats[k].vendor);
      inv.platforms[p].num_devices = k == 2 ? 2 : 1;
      for (int i = 0; i < inv.platforms[p].num_devices; i++) {
        hs_device_info *d = &inv.devs[inv.n_devs++].info;
        snprintf(d->name, HS_NAME_MAX, "%s %d", plats[k].dev, i);
        snprintf(d->platform_name, HS_NAME_MAX, "%s", plats[k].name);
        d->platform_index = p;
        d->platform_device = i;
      }
    }
    hs__inventory_order(&inv);
    cr_assert_eq(inv.n_devs, 6);
    for (int i = 0; i < inv.n_devs; i++) {
      cr_expect_eq(inv.devs[i].info.index, i);
      snprintf(got[o][i], sizeof got[o][i], "%s", inv.devs[i].info.selector);
    }
    /* The platform index points at the right platform after reordering. */
    for (int i = 0; i < inv.n_devs; i++)
      cr_expect_str_eq(inv.platforms[inv.devs[i].info.platform_index].name,
                       inv.devs[i].info.platform_name);
    cr_expect(inv.devs[5].info.simulator, "the simulator is not last");
    cr_expect_str_eq(inv.devs[5].info.selector, "oclgrind:0");
    hs__inventory_release(&inv);
  }
  static const char *const want[] = {"intel:0", "intel2:0", "pocl:0", "pocl:1", "rusticl:0",
                                     "oclgrind:0"};
  for (int i = 0; i < 6; i++) {
    cr_expect_str_eq(got[0][i], want[i], "device %d: %s", i, got[0][i]);
    cr_expect_str_eq(got[1][i], want[i], "device %d (other loader order)", i);
  }
}

/* Real discovery: a fake GPU whose platform ("zeta ...") sorts after PoCL's
 * key although the ICD loader lists it first: the inventory still starts
 * with PoCL, and names each device by its platform. */
Test(devices, discovery_order_is_stable_beside_another_platform) {
  const char *fake = getenv("HS_FAKE_ICD");
  char pocl[256];
  if (!fake) cr_skip_test("HS_FAKE_ICD not set");
  if (!icd_library("pocl", pocl, sizeof pocl)) cr_skip_test("PoCL is not installed");
  setenv("FAKE_ICD_MODE", "device", 1);
  setenv("FAKE_ICD_PLATFORM", "zeta fake platform", 1);
  const char *files[2] = {"a-fake.icd", "m-pocl.icd"}, *libs[2] = {fake, pocl};
  icd_dir d;
  icd_dir_open(&d, files, libs, 2);
  cl_platform_id plats[2];
  cl_uint np = 0;
  char loader_first[128] = "";
  cr_assert_eq(clGetPlatformIDs(2, plats, &np), CL_SUCCESS);
  clGetPlatformInfo(plats[0], CL_PLATFORM_NAME, sizeof loader_first, loader_first, NULL);
  hs_inventory inv;
  cr_assert_eq(hs__inventory_discover(&inv), HS_OK, "%s", hs_last_error());
  cr_assert_eq(inv.n_devs, 2);
  cr_expect_str_eq(inv.devs[0].info.selector, "pocl:0",
                   "the loader listed '%s' first; the inventory starts with %s", loader_first,
                   inv.devs[0].info.selector);
  cr_expect_str_eq(inv.devs[1].info.selector, "zeta:0");
  cr_expect_str_eq(inv.platforms[inv.devs[1].info.platform_index].name, "zeta fake platform");
  cr_log_info("loader order starts with '%s'", loader_first);
  hs__inventory_release(&inv);
  icd_dir_close(&d);
}
