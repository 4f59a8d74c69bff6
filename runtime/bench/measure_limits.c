/* Limits and device peaks: the random-read probe (device and
 * host), STREAM-style host copy, transfer bandwidths, launch latency,
 * square SGEMM (see hs_measure.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench/hs_measure.h"
#include "core/hs_engine.h"

/* ---- random-read probe ------------------------------------------------------- */

#define PROBE_ITEMS (1u << 16)
#define PROBE_READS 256u

hs_status hs__probe_open(const hs_ctx *ctx, const hs_dev *dev, cl_command_queue q,
                         uint64_t bytes, hs_probe *p) {
  memset(p, 0, sizeof *p);
  p->dev = dev->id;
  size_t lim = hs__max_alloc(dev);
  if (lim && bytes > lim) bytes = lim; /* one allocation: an honest, slightly smaller array */
  p->n_words = bytes / 8 ? bytes / 8 : 1;
  const uint64_t pattern = 0x9E3779B97F4A7C15ull;
  hs_status st = hs__program_get(ctx, dev, HS_PROG_PROBE, &p->prog);
  if (st == HS_OK) st = hs__kernel_create(p->prog, "hs_probe_random_read", dev, &p->k);
  if (st == HS_OK) st = hs__mem_create(ctx, CL_MEM_READ_WRITE, 8 * p->n_words, &p->arr);
  if (st == HS_OK) st = hs__mem_create(ctx, CL_MEM_WRITE_ONLY, 8 * PROBE_ITEMS, &p->out);
  if (st == HS_OK)
    st = hs__mem_fill(q, p->arr, &pattern, sizeof pattern, 0, 8 * p->n_words, 0, NULL, NULL);
  if (st == HS_OK) st = hs__queue_finish(q);
  if (st != HS_OK) hs__probe_close(p);
  return st;
}

hs_status hs__probe_run(hs_probe *p, cl_command_queue q, uint32_t salt, double *reads_per_s) {
  cl_uint reads = PROBE_READS;
  hs_karg args[] = {HS_KARG(p->arr), HS_KARG(p->n_words), HS_KARG(reads), HS_KARG(salt),
                    HS_KARG(p->out)};
  hs_status st = hs__kernel_args(p->k, args, 5);
  if (st != HS_OK) return st;
  size_t global = PROBE_ITEMS;
  double t0 = hs__now();
  if ((st = hs__launch(q, p->k, 1, &global, NULL, 0, NULL, NULL)) != HS_OK ||
      (st = hs__queue_finish(q)) != HS_OK)
    return st;
  *reads_per_s = (double)PROBE_ITEMS * PROBE_READS / (hs__now() - t0);
  return HS_OK;
}

void hs__probe_close(hs_probe *p) {
  hs__kernel_release(&p->k);
  hs__program_release(&p->prog);
  hs__mem_release(&p->arr);
  hs__mem_release(&p->out);
}

double hs__host_probe(const uint64_t *a, uint64_t n_words, uint64_t reads, uint32_t salt) {
  uint32_t x[8];
  for (int j = 0; j < 8; j++) x[j] = (uint32_t)j * 0x9E3779B9u ^ salt;
  volatile uint64_t sink;
  uint64_t acc = 0;
  double t0 = hs__now();
  for (uint64_t r = 0; r < reads / 8; r++)
    for (int j = 0; j < 8; j++) {
      x[j] = x[j] * 1664525u + 1013904223u;
      acc += a[((uint64_t)x[j] * n_words) >> 32];
    }
  double dt = hs__now() - t0;
  sink = acc; /* keeps the loads */
  (void)sink;
  return (double)(reads / 8 * 8) / dt;
}

uint64_t *hs__probe_array(uint64_t bytes, uint64_t *n_words) {
  *n_words = bytes / 8 ? bytes / 8 : 1;
  uint64_t *a = malloc(8 * *n_words);
  if (a)
    for (uint64_t i = 0; i < *n_words; i++) a[i] = i * 0x9E3779B97F4A7C15ull;
  return a;
}

typedef struct copy_job {
  const char *src;
  char *dst;
  size_t bytes;
  bool nontemporal;
} copy_job;

static void copy_slice(void *arg, int t, int n) {
  copy_job *j = arg;
  size_t b = j->bytes * (size_t)t / (size_t)n, e = j->bytes * (size_t)(t + 1) / (size_t)n;
  if (j->nontemporal) { /* slices of whole 64-byte blocks; the last takes the tail */
    b &= ~(size_t)63;
    if (t + 1 < n) e &= ~(size_t)63;
    size_t body = (e - b) & ~(size_t)15;
    if (hs__copy_nontemporal(j->dst + b, j->src + b, body)) {
      hs__nontemporal_fence();
      b += body;
    }
  }
  memcpy(j->dst + b, j->src + b, e - b);
}

static double copy_rate(hs_gather_pool *pool, copy_job *j) {
  double t0 = hs__now();
  hs__gather_pool_run(pool, copy_slice, j);
  return 2.0 * (double)j->bytes / (hs__now() - t0);
}

double hs__host_copy_rate(hs_gather_pool *pool, const void *src, void *dst, size_t bytes) {
  copy_job j = {src, dst, bytes, false};
  double plain = copy_rate(pool, &j);
  /* The C library's copy may keep ordinary stores even at this size (it
   * judges by a cache size that virtual machines may misreport); the
   * faster of it and non-temporal stores is the limit. */
  j.nontemporal = (uintptr_t)src % 16 == 0 && (uintptr_t)dst % 16 == 0;
  if (!j.nontemporal) return plain;
  double nt = copy_rate(pool, &j);
  return nt > plain ? nt : plain;
}

/* ---- device peaks ---------------------------------------------------------------- */

hs_status hs__measure_transfers(const hs_ctx *ctx, const hs_dev *dev, cl_command_queue q,
                                size_t bytes, int warmup, int runs, hs_transfer_runs *out) {
  (void)dev;
  memset(out, 0, sizeof *out);
  if (runs > HS_MEASURE_MAX_RUNS) runs = HS_MEASURE_MAX_RUNS;
  out->runs = runs;
  cl_mem a = NULL, b = NULL;
  char *host = malloc(bytes);
  hs_status st = host ? HS_OK : hs__fail(HS_ERR_NOMEM, "transfer peak: %zu bytes", bytes);
  if (st == HS_OK) {
    memset(host, 0x5a, bytes); /* touch every page before timing */
    st = hs__mem_create(ctx, CL_MEM_READ_WRITE, bytes, &a);
  }
  if (st == HS_OK) st = hs__mem_create(ctx, CL_MEM_READ_WRITE, bytes, &b);
  for (int r = -warmup; st == HS_OK && r < runs; r++) {
    double t0 = hs__now();
    if ((st = hs__mem_write(q, a, true, 0, bytes, host, 0, NULL, NULL)) != HS_OK) break;
    double t1 = hs__now();
    if ((st = hs__mem_read(q, a, true, 0, bytes, host, 0, NULL, NULL)) != HS_OK) break;
    double t2 = hs__now();
    if ((st = hs__mem_copy(q, a, b, 0, 0, bytes, 0, NULL, NULL)) != HS_OK ||
        (st = hs__queue_finish(q)) != HS_OK)
      break;
    double t3 = hs__now();
    if (r < 0) continue;
    out->h2d[r] = (double)bytes / (t1 - t0);
    out->d2h[r] = (double)bytes / (t2 - t1);
    out->d2d[r] = 2.0 * (double)bytes / (t3 - t2);
  }
  hs__mem_release(&a);
  hs__mem_release(&b);
  free(host);
  return st;
}

hs_status hs__measure_launch(const hs_ctx *ctx, const hs_dev *dev, cl_command_queue q,
                             int warmup, int runs, double *seconds) {
  cl_program prog = NULL;
  cl_kernel k = NULL;
  cl_mem out = NULL;
  hs_status st = hs__program_get(ctx, dev, HS_PROG_SELFTEST, &prog);
  if (st == HS_OK) st = hs__kernel_create(prog, "hs_selftest_fill_u32", dev, &k);
  if (st == HS_OK) st = hs__mem_create(ctx, CL_MEM_READ_WRITE, 4, &out);
  cl_uint value = 7, n = 1;
  hs_karg args[] = {HS_KARG(out), HS_KARG(value), HS_KARG(n)};
  if (st == HS_OK) st = hs__kernel_args(k, args, 3);
  size_t global = 1;
  for (int r = -warmup; st == HS_OK && r < runs; r++) {
    double t0 = hs__now();
    if ((st = hs__launch(q, k, 1, &global, NULL, 0, NULL, NULL)) != HS_OK ||
        (st = hs__queue_finish(q)) != HS_OK)
      break;
    if (r >= 0) seconds[r] = hs__now() - t0;
  }
  hs__mem_release(&out);
  hs__kernel_release(&k);
  hs__program_release(&prog);
  return st;
}

hs_status hs__measure_sgemm(const hs_ctx *ctx, const hs_dev *dev, cl_command_queue q,
                            hs_gemm_kind kind, size_t n, int warmup, int runs, double *flops,
                            hs_gemm_kind *used) {
  hs_gemm *g = NULL;
  cl_mem a = NULL, b = NULL, c = NULL;
  size_t bytes = n * n * sizeof(float);
  const float zero = 0.0f, half = 0.5f;
  hs_status st = hs__gemm_create(ctx, dev, q, kind, 0, &g);
  if (st == HS_OK) st = hs__mem_create(ctx, CL_MEM_READ_WRITE, bytes, &a);
  if (st == HS_OK) st = hs__mem_create(ctx, CL_MEM_READ_WRITE, bytes, &b);
  if (st == HS_OK) st = hs__mem_create(ctx, CL_MEM_READ_WRITE, bytes, &c);
  if (st == HS_OK) st = hs__mem_fill(q, a, &half, 4, 0, bytes, 0, NULL, NULL);
  if (st == HS_OK) st = hs__mem_fill(q, b, &half, 4, 0, bytes, 0, NULL, NULL);
  if (st == HS_OK) st = hs__mem_fill(q, c, &zero, 4, 0, bytes, 0, NULL, NULL);
  hs_gemm_op op = {.m = n, .n = n, .k = n, .alpha = 1.0f, .a = a, .b = b, .c = c,
                   .lda = n, .ldb = n, .ldc = n};
  if (st == HS_OK) st = hs__gemm_prepare(g, &op);
  if (st == HS_OK) st = hs__queue_finish(q);
  for (int r = -warmup; st == HS_OK && r < runs; r++) {
    double t0 = hs__now();
    if ((st = hs__gemm_run(g, &op, 0, NULL, NULL)) != HS_OK || (st = hs__queue_finish(q)) != HS_OK)
      break;
    if (r >= 0) flops[r] = 2.0 * (double)n * (double)n * (double)n / (hs__now() - t0);
  }
  if (g && used) *used = hs__gemm_kind_of(g);
  hs__mem_release(&a);
  hs__mem_release(&b);
  hs__mem_release(&c);
  hs__gemm_destroy(g);
  return st;
}

hs_status hs__measure_random_read(const hs_ctx *ctx, const hs_dev *dev, cl_command_queue q,
                                  uint64_t bytes, int warmup, int runs, double *reads_per_s) {
  hs_probe p;
  hs_status st = hs__probe_open(ctx, dev, q, bytes, &p);
  if (st != HS_OK) return st;
  for (int r = -warmup; st == HS_OK && r < runs; r++) {
    double x;
    st = hs__probe_run(&p, q, (uint32_t)(r + 1000), &x);
    if (st == HS_OK && r >= 0) reads_per_s[r] = x;
  }
  hs__probe_close(&p);
  return st;
}

double hs__process_cpu_s(void) {
  struct timespec ts;
  if (clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts) != 0) return 0.0;
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

uint64_t hs__rss_bytes(void) {
  FILE *f = fopen("/proc/self/statm", "r");
  if (!f) return 0;
  unsigned long long size = 0, resident = 0;
  int got = fscanf(f, "%llu %llu", &size, &resident);
  fclose(f);
  long page = sysconf(_SC_PAGESIZE);
  return got == 2 && page > 0 ? (uint64_t)resident * (uint64_t)page : 0;
}
