/* Sampling, reindexing and gathering throughput, each beside its same-run
 * limit (DESIGN.md §9), printed as JSON:
 *  - sampled edges/s per device (host reference, OpenCL device, a 1-CU
 *    sub-device; NDRange sampling with the parallel and the sequential
 *    reindex, and the single work-item style) / a random-read probe on the
 *    same device and cores (independent reads of random 8-byte words from
 *    an array as large as the topology). Whole batches (sample, reindex,
 *    read-back) end to end, and the kernels alone;
 *  - reindex vertices/s (kernel time from profiling events);
 *  - host gather bytes/s / a STREAM-style copy on the same threads, row
 *    sizes 128 B to 4 KiB, arrays far larger than the last-level cache;
 *    the gather as the runtime runs it (non-temporal stores for outputs
 *    this large and rows of 256 B up, where the host has them) and with
 *    ordinary stores only.
 * Each figure: median of --runs runs after --warmup runs, with min and max.
 *
 * Sampling ratios come twice: by wall time, and by the process's CPU time
 * (all its threads, the OpenCL device's workers included) for both the
 * batch and its probe. On a machine shared with other work, other
 * processes can take the cores away for unequal parts of a batch and of
 * its probe; the CPU-time ratio is immune to that (not to the sharing of
 * caches and memory bandwidth).
 *
 * usage: bench_sample [--scale products|small] [--runs N] [--warmup N]
 *                     [--threads T] [--batch B] [--rows-per-item R] [--skip-gather]
 *                     [--skip-sample] [--datasets DIR]
 * Graphs: a generated power-law-ish CSR (products scale: 2.4M vertices,
 * ~62M edges) and MUSAE Facebook when DIR (default $HS_SHARED_DATASETS)
 * has it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <time.h>

#include "hs_base.h"
#include "sample/hs_gather.h"
#include "sample/hs_sampler.h"
#include "sample_graphs.h"

#define MAX_RUNS 64

typedef struct opts {
  bool small;
  int runs, warmup, threads;
  int32_t batch;
  uint32_t rows_per_item;
  bool skip_gather, skip_sample;
  const char *datasets;
} opts;

/* ---- statistics -------------------------------------------------------------- */

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

typedef struct summary {
  double median, min, max;
} summary;

static summary summarize(const double *v, int n) {
  double s[MAX_RUNS];
  memcpy(s, v, sizeof *v * (size_t)n);
  qsort(s, (size_t)n, sizeof *s, cmp_double);
  summary r = {n % 2 ? s[n / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]), s[0], s[n - 1]};
  return r;
}

static void print_summary(const char *name, summary s, const char *tail) {
  printf("\"%s\": {\"median\": %.6g, \"min\": %.6g, \"max\": %.6g}%s", name, s.median, s.min,
         s.max, tail);
}

/* Seconds of CPU time used by every thread of this process. */
static double cpu_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* A rate by wall time and by CPU time. */
typedef struct rate {
  double wall, cpu;
} rate;

/* ---- limits: random-read probes ------------------------------------------------- */

/* Host probe on one thread: 8 independent address streams interleaved, so
 * the core keeps several misses in flight (what the sampler's loads can
 * hope for), never a dependent chase. */
static rate host_probe(const uint64_t *a, uint64_t n_words, uint64_t reads, uint32_t salt) {
  uint32_t x[8];
  for (int j = 0; j < 8; j++) x[j] = (uint32_t)j * 0x9E3779B9u ^ salt;
  uint64_t acc = 0;
  double t0 = hs__now(), c0 = cpu_now();
  for (uint64_t r = 0; r < reads / 8; r++)
    for (int j = 0; j < 8; j++) {
      x[j] = x[j] * 1664525u + 1013904223u;
      acc += a[((uint64_t)x[j] * n_words) >> 32];
    }
  double dt = hs__now() - t0, dc = cpu_now() - c0;
  if (acc == 42) fputc(' ', stderr); /* keep the loads */
  return (rate){(double)reads / dt, (double)reads / dc};
}

typedef struct cl_probe {
  cl_program prog;
  cl_kernel k;
  cl_mem arr, out;
  uint64_t n_words;
} cl_probe;

#define PROBE_ITEMS (1u << 16)
#define PROBE_READS 256u

static hs_status cl_probe_open(const hs_ctx *ctx, const hs_dev *dev, cl_command_queue q,
                               const uint64_t *host_arr, uint64_t n_words, cl_probe *p) {
  memset(p, 0, sizeof *p);
  const char *src[] = {"probe.cl"};
  hs_status st = hs__program_build(ctx, dev, src, 1, "", &p->prog, NULL);
  if (st == HS_OK) st = hs__kernel_create(p->prog, "hs_probe_random_read", dev, &p->k);
  if (st != HS_OK) return st;
  cl_int err;
  p->n_words = n_words;
  p->arr = clCreateBuffer(ctx->ctx, CL_MEM_READ_ONLY, 8 * n_words, NULL, &err);
  if (err == CL_SUCCESS)
    err = clEnqueueWriteBuffer(q, p->arr, CL_TRUE, 0, 8 * n_words, host_arr, 0, NULL, NULL);
  if (err == CL_SUCCESS)
    p->out = clCreateBuffer(ctx->ctx, CL_MEM_WRITE_ONLY, 8 * PROBE_ITEMS, NULL, &err);
  return err == CL_SUCCESS ? HS_OK : hs__cl_fail(err, "probe buffers", dev->id);
}

static rate cl_probe_run(cl_probe *p, cl_command_queue q, uint32_t salt) {
  cl_uint reads = PROBE_READS;
  clSetKernelArg(p->k, 0, sizeof p->arr, &p->arr);
  clSetKernelArg(p->k, 1, sizeof p->n_words, &p->n_words);
  clSetKernelArg(p->k, 2, sizeof reads, &reads);
  clSetKernelArg(p->k, 3, sizeof salt, &salt);
  clSetKernelArg(p->k, 4, sizeof p->out, &p->out);
  size_t global = PROBE_ITEMS;
  double t0 = hs__now(), c0 = cpu_now();
  if (clEnqueueNDRangeKernel(q, p->k, 1, NULL, &global, NULL, 0, NULL, NULL) != CL_SUCCESS)
    return (rate){0, 0};
  clFinish(q);
  double total = (double)PROBE_ITEMS * PROBE_READS;
  return (rate){total / (hs__now() - t0), total / (cpu_now() - c0)};
}

static void cl_probe_close(cl_probe *p) {
  if (p->k) clReleaseKernel(p->k);
  if (p->prog) clReleaseProgram(p->prog);
  if (p->arr) clReleaseMemObject(p->arr);
  if (p->out) clReleaseMemObject(p->out);
}

/* ---- sampling ------------------------------------------------------------------- */

static void batch_seeds(int32_t *seeds, int32_t n, int64_t n_vertices, uint32_t batch,
                        char *used) {
  for (int32_t i = 0, j = 0; i < n; j++) {
    int32_t v = (int32_t)hs_philox_below(hs_philox_draw(77, 0, batch, (uint32_t)j, 0).v[0],
                                         (uint32_t)n_vertices);
    if (!used[v]) {
      used[v] = 1;
      seeds[i++] = v;
    }
  }
  for (int32_t i = 0; i < n; i++) used[seeds[i]] = 0;
}

typedef struct sample_fig {
  double edges_s[MAX_RUNS];     /* sampled edges / wall time of whole batches */
  double kern_edges_s[MAX_RUNS]; /* sampled edges / sampling kernel time */
  double reindex_v_s[MAX_RUNS]; /* vertices / reindex kernel time */
  double probe_s[MAX_RUNS];     /* random reads / s */
  double cpu_edges_s[MAX_RUNS]; /* sampled edges / CPU time of whole batches */
  double cpu_probe_s[MAX_RUNS]; /* random reads / CPU time */
  double vertices_per_batch;
  double edges_per_batch;
} sample_fig;

static void print_sample_fig(const char *name, const sample_fig *f, int runs, bool kernels,
                             const char *tail) {
  double ratio[MAX_RUNS], kratio[MAX_RUNS], cratio[MAX_RUNS];
  for (int r = 0; r < runs; r++) {
    ratio[r] = f->edges_s[r] / f->probe_s[r];
    kratio[r] = f->kern_edges_s[r] / f->probe_s[r];
    cratio[r] = f->cpu_edges_s[r] / f->cpu_probe_s[r];
  }
  printf("    \"%s\": {\"edges_per_batch\": %.0f, \"vertices_per_batch\": %.0f,\n      ", name,
         f->edges_per_batch, f->vertices_per_batch);
  print_summary("sampled_edges_per_s", summarize(f->edges_s, runs), ",\n      ");
  print_summary("random_reads_per_s", summarize(f->probe_s, runs), ",\n      ");
  print_summary("ratio_to_random_reads", summarize(ratio, runs), ",\n      ");
  print_summary("ratio_to_random_reads_cpu_time", summarize(cratio, runs),
                kernels ? ",\n      " : "");
  if (kernels) {
    print_summary("sampling_kernel_edges_per_s", summarize(f->kern_edges_s, runs), ",\n      ");
    print_summary("sampling_kernel_ratio_to_random_reads", summarize(kratio, runs), ",\n      ");
    print_summary("reindex_vertices_per_s", summarize(f->reindex_v_s, runs), "");
  }
  printf("}%s\n", tail);
}

static int run_reference(const hs_csr *g, const hs_sample_cfg *cfg, const opts *o,
                         const uint64_t *probe_arr, uint64_t probe_words, sample_fig *f) {
  hs_batch_caps caps;
  hs_batch b;
  if (hs__batch_caps(cfg, g, hs__csr_max_degree(g), o->batch, &caps) != HS_OK ||
      hs__batch_alloc(&caps, &b) != HS_OK)
    return 1;
  int32_t *seeds = malloc(sizeof *seeds * (size_t)o->batch);
  char *used = calloc((size_t)g->n, 1);
  for (int r = -o->warmup; r < o->runs; r++) {
    batch_seeds(seeds, o->batch, g->n, (uint32_t)(r + o->warmup), used);
    double t0 = hs__now(), c0 = cpu_now();
    if (hs__ref_sample_batch(g, cfg, seeds, o->batch, 0, (uint32_t)(r + 100), &b) != HS_OK)
      return 1;
    double dt = hs__now() - t0, dc = cpu_now() - c0;
    double edges = 0;
    for (int h = 0; h < cfg->n_layers; h++) {
      const hs_block *blk = hs__batch_hop(&b, h);
      edges += blk->row_ptr[blk->n_dst];
    }
    rate probe = host_probe(probe_arr, probe_words, 1u << 24, (uint32_t)r);
    if (r < 0) continue;
    f->edges_s[r] = edges / dt;
    f->cpu_edges_s[r] = edges / dc;
    f->probe_s[r] = probe.wall;
    f->cpu_probe_s[r] = probe.cpu;
    f->edges_per_batch = edges;
    f->vertices_per_batch = b.n_vertices;
  }
  free(seeds);
  free(used);
  hs__batch_free(&b);
  return 0;
}

static int run_device(const hs_dev *dev, const hs_csr *g, const hs_sample_cfg *cfg,
                      const opts *o, hs_sampler_style style, hs_reindex_style reindex,
                      const uint64_t *probe_arr, uint64_t probe_words, sample_fig *f) {
  hs_ctx ctx;
  cl_command_queue q = NULL;
  hs_sampler *s = NULL;
  cl_probe probe;
  memset(&probe, 0, sizeof probe);
  hs_batch b;
  memset(&b, 0, sizeof b);
  int rc = 1;
  int32_t *seeds = malloc(sizeof *seeds * (size_t)o->batch);
  char *used = calloc((size_t)g->n, 1);
  if (hs__ctx_create(dev, 1, &ctx) != HS_OK) goto fail;
  hs_sampler_opts so = {.style = style, .reindex = reindex, .max_seeds = o->batch,
                        .profile = true, .rows_per_item = o->rows_per_item};
  if (hs__queue_create(&ctx, dev, HS_QUEUE_PROFILING, &q) != HS_OK ||
      hs__sampler_create(&ctx, dev, q, g, cfg, &so, &s) != HS_OK ||
      hs__batch_alloc(hs__sampler_caps(s), &b) != HS_OK ||
      cl_probe_open(&ctx, dev, q, probe_arr, probe_words, &probe) != HS_OK)
    goto fail;

  for (int r = -o->warmup; r < o->runs; r++) {
    batch_seeds(seeds, o->batch, g->n, (uint32_t)(r + o->warmup), used);
    hs_sampler_stats before, after;
    hs__sampler_stats(s, &before);
    double t0 = hs__now(), c0 = cpu_now();
    if (hs__sampler_run(s, seeds, o->batch, 0, (uint32_t)(r + 100), &b) != HS_OK) goto fail;
    double dt = hs__now() - t0, dc = cpu_now() - c0;
    hs__sampler_stats(s, &after);
    rate pr = cl_probe_run(&probe, q, (uint32_t)r);
    if (r < 0) continue;
    double edges = (double)(after.edges - before.edges);
    f->edges_s[r] = edges / dt;
    f->cpu_edges_s[r] = edges / dc;
    f->cpu_probe_s[r] = pr.cpu;
    f->kern_edges_s[r] = edges / (after.sample_s - before.sample_s);
    f->reindex_v_s[r] = (double)b.n_vertices / (after.reindex_s - before.reindex_s);
    f->probe_s[r] = pr.wall;
    f->edges_per_batch = edges;
    f->vertices_per_batch = b.n_vertices;
  }
  rc = 0;
fail:
  if (rc) fprintf(stderr, "bench_sample: %s: %s\n", dev->info.name, hs_last_error());
  hs__batch_free(&b);
  hs__sampler_destroy(s);
  cl_probe_close(&probe);
  if (q) clReleaseCommandQueue(q);
  hs__ctx_release(&ctx);
  free(seeds);
  free(used);
  return rc;
}

/* The topology as one array of 8-byte words for the probes: same size as
 * indptr + indices, filled so that reads cannot be folded away. */
static uint64_t *probe_array(const hs_csr *g, uint64_t *n_words) {
  size_t bytes = 8 * ((size_t)g->n + 1) + 4 * (size_t)g->e;
  *n_words = bytes / 8;
  uint64_t *a = malloc(8 * *n_words);
  if (a)
    for (uint64_t i = 0; i < *n_words; i++) a[i] = i * 0x9E3779B97F4A7C15ull;
  return a;
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
  uint64_t *arr = probe_array(g, &words);
  if (!arr) return 1;
  printf("  \"%s\": {\"vertices\": %lld, \"edges\": %lld, \"fanouts\": [15, 10, 5], "
         "\"batch\": %d, \"probe_bytes\": %llu,\n",
         name, (long long)g->n, (long long)g->e, o->batch, (unsigned long long)(8 * words));
  sample_fig ref = {0}, f = {0};
  int rc = run_reference(g, &cfg, o, arr, words, &ref);
  print_sample_fig("host_reference_1_thread", &ref, o->runs, false, dev ? "," : "");
  /* Each NDRange device with both reindexes (the sampler picks one by its
   * rule in hs_sampler.h), then the single work-item style. */
  typedef struct variant {
    const char *name;
    const hs_dev *dev;
    hs_sampler_style style;
    hs_reindex_style reindex;
  } variant;
  const variant vs[] = {
      {"device_ndrange_parallel_reindex", dev, HS_STYLE_NDRANGE, HS_REINDEX_PARALLEL},
      {"device_ndrange_sequential_reindex", dev, HS_STYLE_NDRANGE, HS_REINDEX_SEQUENTIAL},
      {"device_single_work_item", dev, HS_STYLE_SINGLE, HS_REINDEX_AUTO},
      {"sub_device_1cu_ndrange_parallel_reindex", sub, HS_STYLE_NDRANGE, HS_REINDEX_PARALLEL},
      {"sub_device_1cu_ndrange_sequential_reindex", sub, HS_STYLE_NDRANGE,
       HS_REINDEX_SEQUENTIAL},
  };
  int n_vs = 0;
  for (size_t i = 0; i < HS_ARRAY_LEN(vs); i++) n_vs += vs[i].dev != NULL;
  for (size_t i = 0; i < HS_ARRAY_LEN(vs) && rc == 0 && dev; i++) {
    if (!vs[i].dev) continue;
    memset(&f, 0, sizeof f);
    rc = run_device(vs[i].dev, g, &cfg, o, vs[i].style, vs[i].reindex, arr, words, &f);
    if (rc == 0) print_sample_fig(vs[i].name, &f, o->runs, true, --n_vs > 0 ? "," : "");
  }
  printf("  }%s\n", last ? "" : ",");
  free(arr);
  return rc;
}

/* ---- gather ------------------------------------------------------------------------ */

typedef struct copy_job {
  const char *src;
  char *dst;
  size_t bytes;
} copy_job;

static void copy_slice(void *arg, int t, int n) {
  copy_job *j = arg;
  size_t b = j->bytes * (size_t)t / (size_t)n, e = j->bytes * (size_t)(t + 1) / (size_t)n;
  memcpy(j->dst + b, j->src + b, e - b);
}

#define TABLE_BYTES ((size_t)1 << 30)
#define OUT_BYTES ((size_t)256 << 20)

static int bench_gather(const opts *o) {
  hs_gather_pool *pool;
  if (hs__gather_pool_create(o->threads, &pool) != HS_OK) return 1;
  char *table = malloc(TABLE_BYTES), *out = malloc(OUT_BYTES);
  char *a = malloc(2 * OUT_BYTES), *b2 = malloc(2 * OUT_BYTES);
  int32_t *ids = malloc(sizeof *ids * (OUT_BYTES / 128));
  if (!table || !out || !a || !b2 || !ids) return 1;
  memset(table, 1, TABLE_BYTES);
  memset(out, 0, OUT_BYTES);
  memset(a, 2, 2 * OUT_BYTES);
  memset(b2, 0, 2 * OUT_BYTES);
  printf("  \"gather\": {\"threads\": %d, \"table_bytes\": %zu, \"copy_bytes\": %zu, "
         "\"rows\": [\n", o->threads, TABLE_BYTES, 2 * OUT_BYTES);
  const size_t row_sizes[] = {128, 256, 512, 1024, 2048, 4096};
  for (size_t s = 0; s < HS_ARRAY_LEN(row_sizes); s++) {
    size_t rb = row_sizes[s];
    int64_t n_rows = (int64_t)(TABLE_BYTES / rb);
    int32_t n = (int32_t)(OUT_BYTES / rb);
    for (int32_t i = 0; i < n; i++)
      ids[i] = (int32_t)hs_philox_below(hs_philox_draw(9, (uint32_t)s, 0, 0, (uint32_t)i).v[0],
                                        (uint32_t)n_rows);
    hs_gather_req req = {table, rb, n_rows, ids, n, out, NULL, 0, NULL};
    copy_job cj = {a, b2, 2 * OUT_BYTES};
    double gbs[MAX_RUNS], pbs[MAX_RUNS], cbs[MAX_RUNS], ratio[MAX_RUNS], pratio[MAX_RUNS];
    for (int r = -o->warmup; r < o->runs; r++) {
      /* the gather as the runtime does it (this output exceeds any cache:
       * non-temporal stores for rows of 256 B and more), then with
       * ordinary stores only, then the copy */
      hs__gather_pool_stream_above(pool, 0);
      double t0 = hs__now();
      if (hs__gather(pool, &req) != HS_OK) return 1;
      double tg = hs__now() - t0;
      hs__gather_pool_stream_above(pool, SIZE_MAX);
      t0 = hs__now();
      if (hs__gather(pool, &req) != HS_OK) return 1;
      double tp = hs__now() - t0;
      t0 = hs__now();
      hs__gather_pool_run(pool, copy_slice, &cj);
      double tc = hs__now() - t0;
      if (r < 0) continue;
      gbs[r] = 2.0 * (double)n * (double)rb / tg;   /* rows read + written */
      pbs[r] = 2.0 * (double)n * (double)rb / tp;
      cbs[r] = 2.0 * (double)cj.bytes / tc;         /* read + written */
      ratio[r] = gbs[r] / cbs[r];
      pratio[r] = pbs[r] / cbs[r];
    }
    printf("    {\"row_bytes\": %zu, ", rb);
    print_summary("gather_bytes_per_s", summarize(gbs, o->runs), ", ");
    print_summary("copy_bytes_per_s", summarize(cbs, o->runs), ", ");
    print_summary("ratio_to_copy", summarize(ratio, o->runs), ",\n     ");
    print_summary("ordinary_stores_gather_bytes_per_s", summarize(pbs, o->runs), ", ");
    print_summary("ordinary_stores_ratio_to_copy", summarize(pratio, o->runs), "");
    printf("}%s\n", s + 1 < HS_ARRAY_LEN(row_sizes) ? "," : "");
  }
  printf("  ]}");
  hs__gather_pool_destroy(pool);
  free(table);
  free(out);
  free(a);
  free(b2);
  free(ids);
  return 0;
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
                  "[--datasets DIR]\n");
  return 2;
}

int main(int argc, char **argv) {
  opts o = {false, 5, 1, (int)sysconf(_SC_NPROCESSORS_ONLN), 1024, 0, false, false,
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
    else return usage();
  }
  if (o.runs < 1 || o.runs > MAX_RUNS || o.warmup < 0 || o.threads < 1 || o.batch < 1)
    return usage();

  hs_inventory inv;
  memset(&inv, 0, sizeof inv);
  const hs_dev *dev = NULL;
  hs_dev subs[2];
  bool have_subs = false;
  if (!o.skip_sample && hs__inventory_discover(&inv) == HS_OK && inv.n_devs > 0) {
    dev = &inv.devs[0];
    for (int i = 0; i < inv.n_devs; i++)
      if (inv.devs[i].info.type == HS_DEVICE_CPU) dev = &inv.devs[i];
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
  printf("\n}\n");
  /* the sub-devices stay: see env_close in tests/test_sample_cl.c */
  hs__inventory_release(&inv);
  return rc;
}
