/* GEMM providers on every OpenCL device, on GraphSAGE layer shapes, each
 * beside OpenBLAS's sgemm measured in the same run on the host with as many
 * threads as the device has compute units (docs/architecture.md, "Measuring").
 *
 * usage: bench_gemm [--reps N] [--quick] [--provider auto|cblas|clblast|builtin]...
 * Prints one JSON document. Times are wall clock from enqueue to the end of
 * clFinish (what a caller waits), after one warm-up run per shape. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/hs_measure.h"
#include "core/hs_engine.h"

typedef hs_gemm_shape shape;

/* One shape: provider and OpenBLAS runs alternate (hs__measure_gemm), so
 * that drift of a shared machine hits both alike. `limit` is left zero
 * without CBLAS. */
static hs_status measure(hs_gemm *g, const hs_ctx *ctx, cl_command_queue q, const shape *s,
                         int threads, int reps, hs_summary *prov, hs_summary *limit) {
  double tp[HS_MEASURE_MAX_RUNS], tl[HS_MEASURE_MAX_RUNS];
  hs_status st = hs__measure_gemm(g, ctx, q, s, threads, 2, reps, tp, tl);
  if (st != HS_OK) return st;
  *prov = hs__summarize(tp, reps);
  memset(limit, 0, sizeof *limit);
  if (hs__have_cblas()) *limit = hs__summarize(tl, reps);
  return HS_OK;
}

static double gflops(const shape *s, double seconds) {
  return 2.0 * (double)s->m * (double)s->n * (double)s->k / seconds * 1e-9;
}

static void json_str(const char *s) {
  putchar('"');
  for (; *s; s++)
    if (*s == '"' || *s == '\\') printf("\\%c", *s);
    else if ((unsigned char)*s >= 0x20) putchar(*s);
  putchar('"');
}

int main(int argc, char **argv) {
  /* OpenBLAS on the kernel set this CPU runs best where it fell back to an older one. */
  hs_blas_reexec(argv);
  int reps = 7;
  bool quick = false;
  hs_gemm_kind kinds[4];
  int n_kinds = 0;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--reps") == 0 && i + 1 < argc) reps = atoi(argv[++i]);
    else if (strcmp(argv[i], "--quick") == 0) quick = true;
    else if (strcmp(argv[i], "--provider") == 0 && i + 1 < argc && n_kinds < 4) {
      if (hs__gemm_kind_parse(argv[++i], &kinds[n_kinds++]) != HS_OK) {
        fprintf(stderr, "bench_gemm: %s\n", hs_last_error());
        return 2;
      }
    } else {
      fprintf(stderr, "usage: bench_gemm [--reps N] [--quick] [--provider KIND]...\n");
      return 2;
    }
  }
  if (reps < 1) reps = 1;
  if (reps > HS_MEASURE_MAX_RUNS) reps = HS_MEASURE_MAX_RUNS;
  if (n_kinds == 0) {
    kinds[n_kinds++] = HS_GEMM_AUTO;
    kinds[n_kinds++] = HS_GEMM_CLBLAST;
  }
  hs_runtime *rt = NULL;
  if (hs_runtime_open(&rt, NULL) != HS_OK) {
    fprintf(stderr, "bench_gemm: %s\n", hs_last_error());
    return 1;
  }
  size_t n_shapes = quick ? hs__gemm_quick_count : hs__gemm_shape_count;
  printf("{\"bench\": \"gemm\", \"reps\": %d, \"limit\": \"OpenBLAS sgemm on the host, same shapes, "
         "threads = the device's compute units\", \"runs\": [",
         reps);
  bool first_run = true;
  int rc = 0;
  for (int d = 0; d < hs_runtime_device_count(rt); d++) {
    const hs_dev *dev = hs__runtime_dev(rt, d);
    hs_ctx ctx;
    cl_command_queue q;
    if (hs__ctx_create(dev, 1, &ctx) != HS_OK) continue;
    if (hs__queue_create(&ctx, dev, 0, &q) != HS_OK) {
      hs__ctx_release(&ctx);
      continue;
    }
    int threads = (int)(dev->info.compute_units ? dev->info.compute_units : 1);
    for (int ki = 0; ki < n_kinds; ki++) {
      hs_gemm *g;
      if (hs__gemm_create(&ctx, dev, q, kinds[ki], threads, &g) != HS_OK) {
        fprintf(stderr, "bench_gemm: %s: skipped: %s\n", dev->info.name, hs_last_error());
        continue;
      }
      printf("%s\n  {\"device\": ", first_run ? "" : ",");
      first_run = false;
      json_str(dev->info.name);
      printf(", \"type\": \"%s\", \"provider\": \"%s\", \"threads\": %d, \"shapes\": [",
             hs_device_type_name(dev->info.type), hs__gemm_kind_name(hs__gemm_kind_of(g)), threads);
      double ratios[HS_MEASURE_MAX_RUNS];
      int n_ratios = 0;
      for (size_t si = 0; si < n_shapes; si++) {
        const shape *s = &hs__gemm_shapes[quick ? hs__gemm_quick_shapes[si] : si];
        hs_summary p, o;
        if (measure(g, &ctx, q, s, threads, reps, &p, &o) != HS_OK) {
          fprintf(stderr, "bench_gemm: %s: %s\n", dev->info.name, hs_last_error());
          rc = 1;
          break;
        }
        printf("%s\n    {\"m\": %zu, \"n\": %zu, \"k\": %zu, \"trans\": \"%c%c\", \"layer\": \"%s\", "
               "\"gflops\": %.2f, \"gflops_min\": %.2f, \"gflops_max\": %.2f",
               si ? "," : "", s->m, s->n, s->k, s->ta ? 'T' : 'N', s->tb ? 'T' : 'N', s->what,
               gflops(s, p.median), gflops(s, p.max), gflops(s, p.min));
        if (o.median > 0.0) {
          double ratio = o.median / p.median;
          ratios[n_ratios++] = ratio;
          printf(", \"limit_gflops\": %.2f, \"limit_gflops_min\": %.2f, \"limit_gflops_max\": %.2f, "
                 "\"ratio\": %.3f}",
                 gflops(s, o.median), gflops(s, o.max), gflops(s, o.min), ratio);
        } else {
          printf(", \"limit_gflops\": null, \"ratio\": null}");
        }
      }
      printf("\n  ]");
      if (n_ratios > 0) {
        hs_summary r = hs__summarize(ratios, n_ratios);
        printf(", \"ratio_median\": %.3f, \"ratio_min\": %.3f, \"ratio_max\": %.3f", r.median, r.min,
               r.max);
      }
      printf("}");
      hs__gemm_destroy(g);
    }
    clReleaseCommandQueue(q);
    hs__ctx_release(&ctx);
  }
  printf("\n]}\n");
  hs_runtime_close(rt);
  return rc;
}
