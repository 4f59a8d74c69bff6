/* hetsage info: platforms, devices and their capabilities, host topology. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"

static void usage(FILE *f) {
  fprintf(f,
          "usage: hetsage info [--json]\n"
          "\n"
          "List every OpenCL platform and device with the capabilities that vary\n"
          "between vendors, and the host topology (hwloc). Devices are numbered in a\n"
          "stable order (real devices first, then by platform and position), never\n"
          "in the ICD loader's; each has a selector such as pocl:0 that --sampler,\n"
          "--trainer and HETSAGE_SAMPLER/TRAINER accept.\n"
          "\n"
          "  --json   machine-readable output on stdout\n"
          "  -h, --help\n");
}

static void human_bytes(uint64_t b, char *buf, size_t len) {
  const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = (double)b;
  int u = 0;
  while (v >= 1024.0 && u < 4) {
    v /= 1024.0;
    u++;
  }
  snprintf(buf, len, u ? "%.1f %s" : "%.0f %s", v, units[u]);
}

static const char *yn(bool b) { return b ? "yes" : "no"; }

static void print_human(const hs_runtime *rt, int n) {
  const hs_host_topology topo = *hs_runtime_topology(rt);
  printf("host: %d package(s), %d NUMA node(s), %d core(s), %d PU(s)\n", topo.packages,
         topo.numa_nodes, topo.cores, topo.pus);
  const char *blas = hs_blas_kernels();
  if (blas) printf("CPU products: OpenBLAS, its %s kernels\n", blas);
  int np = hs_runtime_platform_count(rt);
  for (int p = 0; p < np; p++) {
    const hs_platform_info pi = *hs_runtime_platform(rt, p);
    printf("\nplatform %d: %s (%d device%s)%s%s\n", p, pi.name,
           pi.num_devices < 0 ? 0 : pi.num_devices, pi.num_devices == 1 ? "" : "s",
           pi.error[0] ? " — skipped: " : "", pi.error);
    for (int i = 0; i < n; i++) {
      const hs_device_info *d = hs_runtime_device(rt, i);
      if (d->platform_index != p) continue;
      char gm[32], lm[32], ma[32], gc[32];
      human_bytes(d->global_mem_bytes, gm, sizeof gm);
      human_bytes(d->local_mem_bytes, lm, sizeof lm);
      human_bytes(d->max_alloc_bytes, ma, sizeof ma);
      human_bytes(d->global_cache_bytes, gc, sizeof gc);
      printf("  device %d (%s): %s [%s%s]\n", d->index, d->selector, d->name,
             hs_device_type_name(d->type), d->simulator ? ", simulator" : "");
      printf("    vendor            %s (0x%04x)\n", d->vendor, d->vendor_id);
      printf("    version           %s; %s; driver %s\n", d->device_version,
             d->opencl_c_version, d->driver_version);
      printf("    compute units     %u @ %u MHz\n", d->compute_units, d->clock_mhz);
      printf("    memory            global %s, local %s, max alloc %s, cache %s\n", gm, lm,
             ma, gc);
      printf("    work-group        max %zu, items %zu x %zu x %zu\n",
             d->max_work_group_size, d->max_work_item_sizes[0], d->max_work_item_sizes[1],
             d->max_work_item_sizes[2]);
      printf("    extensions        int64 atomics %s, fp16 %s, fp64 %s\n",
             yn(d->int64_atomics), yn(d->fp16), yn(d->fp64));
      printf("    queues            out-of-order %s, profiling %s; native kernels %s\n",
             yn(d->queue_out_of_order), yn(d->queue_profiling), yn(d->native_kernels));
      printf("    sub-devices       up to %u (equally %s, by counts %s, by affinity %s)\n",
             d->max_sub_devices, yn(d->partition_equally), yn(d->partition_by_counts),
             yn(d->partition_by_affinity));
      printf("    unified memory    %s; compiler %s; available %s\n", yn(d->unified_memory),
             yn(d->compiler_available), yn(d->available));
      printf("    PCI bus id        %s\n", d->has_pci_bus_id ? d->pci_bus_id : "(not reported)");
      printf("    locality (PUs)    %s\n", d->cpuset[0] ? d->cpuset : "(unknown)");
    }
  }
}

static void print_json(const hs_runtime *rt, int n) {
  const hs_host_topology topo = *hs_runtime_topology(rt);
  printf("{\n  \"version\": ");
  cli_json_string(stdout, hs_version());
  printf(",\n  \"host\": {\"packages\": %d, \"numa_nodes\": %d, \"cores\": %d, \"pus\": %d},\n",
         topo.packages, topo.numa_nodes, topo.cores, topo.pus);
  printf("  \"blas_kernels\": ");
  if (hs_blas_kernels()) cli_json_string(stdout, hs_blas_kernels());
  else printf("null");
  printf(",\n  \"platforms\": [\n");
  int np = hs_runtime_platform_count(rt);
  for (int p = 0; p < np; p++) {
    const hs_platform_info pi = *hs_runtime_platform(rt, p);
    printf("    {\"index\": %d, \"name\": ", p);
    cli_json_string(stdout, pi.name);
    printf(", \"num_devices\": %d, \"error\": ", pi.num_devices);
    if (pi.error[0]) cli_json_string(stdout, pi.error);
    else printf("null");
    printf("}%s\n", p + 1 < np ? "," : "");
  }
  printf("  ],\n  \"devices\": [\n");
  for (int i = 0; i < n; i++) {
    hs_device_info_write_json(stdout, hs_runtime_device(rt, i), 4);
    printf("%s\n", i + 1 < n ? "," : "");
  }
  printf("  ]\n}\n");
}

int cmd_info(int argc, char **argv) {
  bool json = false;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
      usage(stdout);
      return 0;
    }
    if (strcmp(argv[i], "--json") == 0) json = true;
    else return cli_usage_error("info", "unknown option '%s'", argv[i]);
  }
  hs_runtime *rt = NULL;
  hs_status st = hs_runtime_open(&rt, NULL);
  if (st != HS_OK) {
    cli_report("info", "device discovery failed", st);
    return 1;
  }
  int n = hs_runtime_device_count(rt);
  if (json) print_json(rt, n);
  else print_human(rt, n);
  hs_runtime_close(rt);
  return 0;
}
