/* Sampling, reindexing and gathering throughput, each beside its same-run
 * limit (docs/architecture.md, "Measuring"), printed as JSON:
 *  - sampled edges/s per device (host reference, OpenCL device, a 1-CU
 *    sub-device) / a random-read probe on the same device and cores
 *    (independent reads of random 8-byte words from an array as large as
 *    the topology);
 *  - the same on the whole device with two samplers on two queues, batches
 *    alternating (one's sequential reindex beside the other's sampling),
 *    as a ratio to one sampler over the same batches and to the probe;
 *  - reindex vertices/s (kernel time from profiling events);
 *  - host gather bytes/s / a STREAM-style copy on the same threads, row
 *    sizes 128 B to 4 KiB, arrays far larger than the last-level cache;
 *    the gather as the runtime runs it (non-temporal stores for outputs
 *    this large and rows of 256 B up, where the host has them) and with
 *    ordinary stores only; random rows, and as many rows in table order
 *    (the same code with the rows' addresses no cost); the table on 4 KiB
 *    pages (features gathered from the file mapping), or on 2 MiB pages
 *    with --huge-table, as sessions hold features larger than the
 *    last-level cache (hs_feature_pages; table_huge_page_bytes says how
 *    much the kernel granted);
 *  - device gather bytes/s (from a resident table, the trainer-side
 *    cache's copy) / the device's copy limit, on the sampling device.
 * Each figure: median of --runs runs after --warmup runs, with min and max.
 * Sampling ratios come by wall time and by the process's CPU time (see
 * hs_sample_runs: the latter is immune to other processes taking the
 * cores away for unequal parts of a batch and of its probe).
 *
 * usage: bench_sample [--scale products|small] [--runs N] [--warmup N]
 *                     [--threads T] [--batch B] [--rows-per-item R] [--skip-gather]
 *                     [--skip-sample] [--huge-table] [--datasets DIR]
 * Graphs: a generated power-law-ish CSR (products scale: 2.4M vertices,
 * ~62M edges) and MUSAE Facebook when DIR (default $HS_SHARED_DATASETS)
 * has it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench/hs_measure.h"
#include "core/hs_engine.h"
#include "bench/sample_graphs.h"

typedef struct opts {
  bool small;
  int runs, warmup, threads;
  int32_t batch;
  uint32_t rows_per_item;
  bool skip_gather, skip_sample, huge_table;
  const char *datasets;
} opts;

static void print_summary(const char *name, hs_summary s, const char *tail) {
  printf("\"%s\": {\"median\": %.6g, \"min\": %.6g, \"max\": %.6g}%s", name, s.median, s.min,
         s.max, tail);
}

/* ---- sampling ------------------------------------------------------------------- */

static void print_sample_fig(const char *name, const hs_sample_runs *f, bool kernels,
                             const char *tail) {
  int runs = f->runs;
  printf("    \"%s\": {\"edges_per_batch\": %.0f, \"vertices_per_batch\": %.0f,\n      ", name,
         f->edges_per_batch, f->vertices_per_batch);
  print_summary("sampled_edges_per_s", hs__summarize(f->edges_s, runs), ",\n      ");
  print_summary("random_reads_per_s", hs__summarize(f->probe_s, runs), ",\n      ");
  print_summary("ratio_to_random_reads", hs__summarize_ratio(f->edges_s, f->probe_s, runs),
                ",\n      ");
  print_summary("ratio_to_random_reads_cpu_time",
                hs__summarize_ratio(f->cpu_edges_s, f->cpu_probe_s, runs),
                kernels ? ",\n      " : "");
  if (kernels) {
    print_summary("sampling_kernel_edges_per_s", hs__summarize(f->kern_edges_s, runs), ",\n      ");
    print_summary("sampling_kernel_ratio_to_random_reads",
                  hs__summarize_ratio(f->kern_edges_s, f->probe_s, runs), ",\n      ");
    print_summary("reindex_vertices_per_s", hs__summarize(f->reindex_v_s, runs), "");
  }
  printf("}%s\n", tail);
}

static int report(const char *what, const hs_dev *dev, hs_status st) {
  if (st == HS_OK) return 0;
  fprintf(stderr, "bench_sample: %s%s%s: %s\n", what, dev ? " on " : "", dev ? dev->info.name : "",
          hs_last_error());
  return 1;
}

static int bench_graph(const char *name, const hs_csr *g, const opts *o, const hs_dev *dev,
                       const hs_dev *sub, bool last) {
  const int32_t fan[] = {15, 10, 5};
  hs_sample_cfg cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.n_layers = 3;
  memcpy(cfg.fanout, fan, sizeof fan);
  cfg.seed = 1;
  uint64_t words;
  uint64_t *arr = hs__probe_array(8 * ((uint64_t)g->n + 1) + 4 * (uint64_t)g->e, &words);
  if (!arr) return 1;
  printf("  \"%s\": {\"vertices\": %lld, \"edges\": %lld, \"fanouts\": [15, 10, 5], "
         "\"batch\": %d, \"probe_bytes\": %llu,\n",
         name, (long long)g->n, (long long)g->e, o->batch, (unsigned long long)(8 * words));
  hs_sample_runs ref, whole, one, single;
  int rc = report("reference sampling", NULL,
                  hs__measure_sample_ref(g, &cfg, o->batch, o->warmup, o->runs, arr, words, &ref));
  if (rc == 0) print_sample_fig("host_reference_1_thread", &ref, false, dev ? "," : "");
  if (dev && rc == 0) {
    rc = report("sampling", dev,
                hs__measure_sample_device(dev, g, &cfg, HS_STYLE_NDRANGE, o->rows_per_item,
                                          o->batch, o->warmup, o->runs, NULL, &whole));
    if (rc == 0) print_sample_fig("device_ndrange", &whole, true, ",");
    /* Optional: it needs a second copy of the topology on the device. */
    if (rc == 0 && dev->info.compute_units >= 2) {
      hs_sample_runs two;
      if (report("two-queue sampling", dev,
                 hs__measure_sample_two_queues(dev, g, &cfg, o->batch, 8, o->warmup, o->runs,
                                               &two)) != 0) {
        printf("    \"device_two_queues\": null,\n");
      } else {
        printf("    \"device_two_queues\": {\"batches_per_run\": 8,\n      ");
        print_summary("sampled_edges_per_s", hs__summarize(two.edges_s, two.runs), ",\n      ");
        print_summary("one_queue_sampled_edges_per_s",
                      hs__summarize(two.one_queue_edges_s, two.runs), ",\n      ");
        print_summary("ratio_to_one_queue",
                      hs__summarize_ratio(two.edges_s, two.one_queue_edges_s, two.runs),
                      ",\n      ");
        print_summary("random_reads_per_s", hs__summarize(two.probe_s, two.runs), ",\n      ");
        print_summary("ratio_to_random_reads",
                      hs__summarize_ratio(two.edges_s, two.probe_s, two.runs), "},\n");
      }
    }
    if (rc == 0)
      rc = report("single work-item sampling", dev,
                  hs__measure_sample_device(dev, g, &cfg, HS_STYLE_SINGLE, 0, o->batch, o->warmup,
                                            o->runs, NULL, &single));
    if (rc == 0) print_sample_fig("device_single_work_item", &single, true, sub ? "," : "");
    if (rc == 0 && sub) {
      rc = report("sampling", sub,
                  hs__measure_sample_device(sub, g, &cfg, HS_STYLE_NDRANGE, o->rows_per_item,
                                            o->batch, o->warmup, o->runs, NULL, &one));
      if (rc == 0) print_sample_fig("sub_device_1cu_ndrange", &one, true, "");
    }
  }
  printf("  }%s\n", last ? "" : ",");
  free(arr);
  return rc;
}

/* ---- gather ------------------------------------------------------------------------ */

#define TABLE_BYTES ((size_t)1 << 30)
#define OUT_BYTES ((size_t)256 << 20)

/* The table on 4 KiB pages (as features mapped from a file are), or with
 * --huge-table asked for on 2 MiB pages: random rows cost a page walk each
 * on the first, few on the second. */
static char *table_alloc(bool huge, size_t *len) {
  bool advised;
  *len = 0;
  return huge ? hs__huge_map(TABLE_BYTES, len, &advised) : malloc(TABLE_BYTES);
}

static void print_gather_runs(const char *prefix, const hs_gather_runs *gr, const char *tail) {
  char name[96];
  snprintf(name, sizeof name, "%sgather_bytes_per_s", prefix);
  print_summary(name, hs__summarize(gr->gather_bps, gr->runs), ", ");
  snprintf(name, sizeof name, "%scopy_bytes_per_s", prefix);
  print_summary(name, hs__summarize(gr->copy_bps, gr->runs), ", ");
  snprintf(name, sizeof name, "%sratio_to_copy", prefix);
  print_summary(name, hs__summarize_ratio(gr->gather_bps, gr->copy_bps, gr->runs), ",\n     ");
  snprintf(name, sizeof name, "%sordinary_stores_ratio_to_copy", prefix);
  print_summary(name, hs__summarize_ratio(gr->ordinary_bps, gr->copy_bps, gr->runs), tail);
}

static int bench_gather(const opts *o) {
  hs_gather_pool *pool;
  if (hs__gather_pool_create(o->threads, &pool) != HS_OK) return 1;
  unsigned long long huge0 = hs__proc_kb_field("/proc/self/smaps_rollup", "AnonHugePages");
  size_t table_len;
  char *table = table_alloc(o->huge_table, &table_len), *out = malloc(OUT_BYTES);
  char *a = malloc(2 * OUT_BYTES), *b2 = malloc(2 * OUT_BYTES);
  int32_t *ids = malloc(sizeof *ids * (OUT_BYTES / 128));
  int32_t *in_order = malloc(sizeof *in_order * (OUT_BYTES / 128));
  if (!table || !out || !a || !b2 || !ids || !in_order) return 1;
  memset(table, 1, TABLE_BYTES);
  unsigned long long huge = hs__proc_kb_field("/proc/self/smaps_rollup", "AnonHugePages") - huge0;
  memset(out, 0, OUT_BYTES);
  memset(a, 2, 2 * OUT_BYTES);
  memset(b2, 0, 2 * OUT_BYTES);
  printf("  \"gather\": {\"threads\": %d, \"table_bytes\": %zu, \"copy_bytes\": %zu,\n"
         "    \"table_pages\": \"%s\", \"table_huge_page_bytes\": %llu, \"rows\": [\n",
         o->threads, TABLE_BYTES, 2 * OUT_BYTES,
         o->huge_table ? "2 MiB asked for (madvise)" : "4 KiB", huge);
  const size_t row_sizes[] = {128, 256, 512, 1024, 2048, 4096};
  int rc = 0;
  for (size_t s = 0; s < HS_ARRAY_LEN(row_sizes) && rc == 0; s++) {
    size_t rb = row_sizes[s];
    int64_t n_rows = (int64_t)(TABLE_BYTES / rb);
    int32_t n = (int32_t)(OUT_BYTES / rb);
    for (int32_t i = 0; i < n; i++) {
      ids[i] = (int32_t)hs_philox_below(hs_philox_draw(9, (uint32_t)s, 0, 0, (uint32_t)i).v[0],
                                        (uint32_t)n_rows);
      in_order[i] = i;
    }
    /* random rows (what batches ask for), and the same number of rows in
     * table order: the same code where the rows' addresses are no cost */
    hs_gather_req req = {table, rb, n_rows, ids, n, out, NULL, 0, NULL};
    hs_gather_req seq = {table, rb, n_rows, in_order, n, out, NULL, 0, NULL};
    hs_gather_runs gr, gs;
    rc = report("gather", NULL,
                hs__measure_gather_host(pool, &req, a, b2, 2 * OUT_BYTES, o->warmup, o->runs, &gr));
    if (rc == 0)
      rc = report("gather", NULL, hs__measure_gather_host(pool, &seq, a, b2, 2 * OUT_BYTES,
                                                          o->warmup, o->runs, &gs));
    if (rc) break;
    printf("    {\"row_bytes\": %zu, ", rb);
    print_gather_runs("", &gr, ",\n     ");
    print_gather_runs("in_table_order_", &gs, "");
    printf("}%s\n", s + 1 < HS_ARRAY_LEN(row_sizes) ? "," : "");
  }
  printf("  ]}");
  hs__gather_pool_destroy(pool);
  if (o->huge_table) hs__huge_unmap(table, table_len);
  else free(table);
  free(in_order);
  free(out);
  free(a);
  free(b2);
  free(ids);
  return rc;
}

/* Device gather (runtime/sample/gather_cl.c) from a resident table beside
 * the device's copy limit, on the device the sampling ran on. */
#define DEVICE_TABLE_BYTES ((size_t)256 << 20)
#define DEVICE_OUT_BYTES ((size_t)32 << 20)

static int bench_device_gather(const opts *o, const hs_dev *dev) {
  hs_ctx ctx;
  cl_command_queue q = NULL;
  if (report("device gather", dev, hs__ctx_create(dev, 1, &ctx))) return 1;
  int rc = report("device gather", dev, hs__queue_create(&ctx, dev, 0, &q));
  printf(",\n  \"device_gather\": {\"table_bytes\": %zu, \"out_bytes\": %zu, \"rows\": [\n",
         DEVICE_TABLE_BYTES, DEVICE_OUT_BYTES);
  const size_t row_sizes[] = {128, 256, 512, 1024, 2048, 4096};
  for (size_t s = 0; s < HS_ARRAY_LEN(row_sizes) && rc == 0; s++) {
    size_t rb = row_sizes[s];
    hs_gather_runs gr;
    rc = report("device gather", dev,
                hs__measure_gather_device(&ctx, dev, q, DEVICE_TABLE_BYTES, rb,
                                          (uint32_t)(DEVICE_OUT_BYTES / rb), o->warmup, o->runs,
                                          &gr));
    if (rc) break;
    printf("    {\"row_bytes\": %zu, ", rb);
    print_summary("gather_bytes_per_s", hs__summarize(gr.gather_bps, gr.runs), ", ");
    print_summary("copy_bytes_per_s", hs__summarize(gr.copy_bps, gr.runs), ", ");
    print_summary("ratio_to_copy", hs__summarize_ratio(gr.gather_bps, gr.copy_bps, gr.runs), "");
    printf("}%s\n", s + 1 < HS_ARRAY_LEN(row_sizes) ? "," : "");
  }
  printf("  ]}");
  hs__queue_release(&q);
  hs__ctx_release(&ctx);
  return rc;
}

/* ---- main ------------------------------------------------------------------------- */

static bool peer_importable(const char *module) {
  char cmd[128];
  snprintf(cmd, sizeof cmd, "python3 -c 'import %s' >/dev/null 2>&1", module);
  return system(cmd) == 0;
}

static int usage(void) {
  fprintf(stderr, "usage: bench_sample [--scale products|small] [--runs N] [--warmup N] "
                  "[--threads T] [--batch B] [--rows-per-item R] [--skip-gather] [--skip-sample] "
                  "[--huge-table] [--datasets DIR]\n");
  return 2;
}

int main(int argc, char **argv) {
  opts o = {false, 5, 1, (int)sysconf(_SC_NPROCESSORS_ONLN), 1024, 0, false, false, false,
            getenv("HS_SHARED_DATASETS")};
  for (int i = 1; i < argc; i++) {
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(argv[i], "--scale") && v) o.small = !strcmp(argv[++i], "small");
    else if (!strcmp(argv[i], "--runs") && v) o.runs = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--warmup") && v) o.warmup = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--threads") && v) o.threads = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--batch") && v) o.batch = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--rows-per-item") && v) o.rows_per_item = (uint32_t)atoi(argv[++i]);
    else if (!strcmp(argv[i], "--datasets") && v) o.datasets = argv[++i];
    else if (!strcmp(argv[i], "--skip-gather")) o.skip_gather = true;
    else if (!strcmp(argv[i], "--skip-sample")) o.skip_sample = true;
    else if (!strcmp(argv[i], "--huge-table")) o.huge_table = true;
    else return usage();
  }
  if (o.runs < 1 || o.runs > HS_MEASURE_MAX_RUNS || o.warmup < 0 || o.threads < 1 || o.batch < 1)
    return usage();

  /* The runtime's devices: they carry its settings (the binary cache). */
  hs_runtime *rt = NULL;
  const hs_dev *dev = NULL;
  hs_dev subs[2];
  bool have_subs = false;
  if ((!o.skip_sample || !o.skip_gather) && hs_runtime_open(&rt, NULL) == HS_OK &&
      hs_runtime_device_count(rt) > 0) {
    const hs_inventory *inv = hs__runtime_inventory(rt);
    dev = &inv->devs[0];
    for (int i = 0; i < inv->n_devs; i++)
      if (inv->devs[i].info.type == HS_DEVICE_CPU) dev = &inv->devs[i];
    const unsigned counts[2] = {1, 1};
    have_subs = dev->info.compute_units >= 2 && hs__subdevices_create(dev, counts, 2, subs) == HS_OK;
  }
  int rc = 0;
  printf("{\"bench\": \"sample\", \"runs\": %d, \"warmup\": %d,\n", o.runs, o.warmup);
  printf("  \"device\": \"%s\", \"sub_device\": %s,\n", dev ? dev->info.name : "",
         have_subs ? "\"1 compute unit of 1+1\"" : "null");
  printf("  \"peers\": {\"dgl\": %s, \"pyg\": %s},\n",
         peer_importable("dgl") ? "\"importable, not run\"" : "\"not installed\"",
         peer_importable("torch_geometric") ? "\"importable, not run\"" : "\"not installed\"");
  if (!o.skip_sample) {
    test_graph t;
    double t0 = hs__now();
    bool ok = o.small ? tg_random(&t, 200000, 8.6, 20000, 2024, false)
                      : tg_random(&t, 2400000, 8.6, 20000, 2024, false);
    if (!ok) return 1;
    fprintf(stderr, "generated %lld vertices, %lld edges in %.1f s\n", (long long)t.g.n,
            (long long)t.g.e, hs__now() - t0);
    char path[1024];
    bool fb = false;
    test_graph f;
    if (o.datasets) {
      snprintf(path, sizeof path, "%s/musae_facebook/edges/facebook_edges.csv", o.datasets);
      fb = tg_edge_file(&f, path);
    }
    rc |= bench_graph(o.small ? "generated_small" : "generated_products_scale", &t.g, &o, dev,
                      have_subs ? &subs[0] : NULL, !fb && o.skip_gather);
    tg_free(&t);
    if (fb) {
      rc |= bench_graph("facebook", &f.g, &o, dev, have_subs ? &subs[0] : NULL, o.skip_gather);
      tg_free(&f);
    }
  }
  if (!o.skip_gather) rc |= bench_gather(&o);
  if (!o.skip_gather && dev) rc |= bench_device_gather(&o, dev);
  printf("\n}\n");
  /* the sub-devices stay: see env_close in tests/test_sample_cl.c */
  hs_runtime_close(rt);
  return rc;
}
