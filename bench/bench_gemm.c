/* GEMM providers on every OpenCL device, on GraphSAGE layer shapes, each
 * beside OpenBLAS's sgemm measured in the same run on the host with as many
 * threads as the device has compute units (DESIGN.md §9).
 *
 * usage: bench_gemm [--reps N] [--quick] [--provider auto|cblas|clblast|builtin]...
 * Prints one JSON document. Times are wall clock from enqueue to the end of
 * clFinish (what a caller waits), after one warm-up run per shape. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gemm.h"
#include "hs_config.h"
#include "hs_launch.h"

#if HS_HAVE_CBLAS
#include <cblas.h>
#endif

typedef struct shape {
  bool ta, tb;
  size_t m, n, k;
  const char *what;
} shape;

/* rows x (2 d_in) . (2 d_in) x d_out forward products, and the two
 * backward orientations of a middle layer. */
static const shape shapes[] = {
    {false, false, 1024, 128, 256, "fwd d_in 128 d_out 128"},
    {false, false, 1024, 256, 512, "fwd d_in 256 d_out 256"},
    {false, false, 1024, 512, 1024, "fwd d_in 512 d_out 512"},
    {false, false, 4096, 128, 256, "fwd d_in 128 d_out 128"},
    {false, false, 4096, 256, 512, "fwd d_in 256 d_out 256"},
    {false, false, 4096, 512, 1024, "fwd d_in 512 d_out 512"},
    {false, false, 8192, 128, 256, "fwd d_in 128 d_out 128"},
    {false, false, 8192, 256, 512, "fwd d_in 256 d_out 256"},
    {false, false, 8192, 512, 512, "fwd d_in 256 d_out 512"},
    {true, false, 512, 256, 4096, "dW d_in 256 d_out 256"},
    {false, true, 4096, 512, 256, "dX d_in 256 d_out 256"},
};
static const size_t quick_shapes[] = {0, 4, 8, 9, 10};

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

typedef struct stats {
  double median, min, max;
} stats;

static stats summarize(double *t, int n) {
  qsort(t, (size_t)n, sizeof *t, cmp_double);
  stats s = {n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]), t[0], t[n - 1]};
  return s;
}

static void fill(float *x, size_t n, unsigned seed) {
  for (size_t i = 0; i < n; i++) {
    seed = seed * 1664525u + 1013904223u;
    x[i] = (float)(seed >> 8) * (1.0f / 16777216.0f) - 0.5f;
  }
}

static void dims(const shape *s, size_t *na, size_t *nb, size_t *lda, size_t *ldb) {
  *lda = s->ta ? s->m : s->k;
  *ldb = s->tb ? s->k : s->n;
  *na = s->m * s->k;
  *nb = s->k * s->n;
}

/* One shape: provider and OpenBLAS runs alternate, so that drift of a
 * shared machine hits both alike. `limit` is left zero without CBLAS. */
static hs_status measure(hs_gemm *g, const hs_ctx *ctx, cl_command_queue q, const shape *s,
                         int threads, int reps, stats *prov, stats *limit) {
  size_t na, nb, lda, ldb;
  dims(s, &na, &nb, &lda, &ldb);
  float *a = malloc(na * 4), *b = malloc(nb * 4), *c = malloc(s->m * s->n * 4);
  double *tp = malloc(sizeof(double) * (size_t)reps), *tl = malloc(sizeof(double) * (size_t)reps);
  cl_mem da = NULL, db = NULL, dc = NULL;
  fill(a, na, 1), fill(b, nb, 2);
  memset(limit, 0, sizeof *limit);
  hs_status st;
  if ((st = hs__mem_create(ctx, CL_MEM_READ_WRITE, na * 4, &da)) != HS_OK ||
      (st = hs__mem_create(ctx, CL_MEM_READ_WRITE, nb * 4, &db)) != HS_OK ||
      (st = hs__mem_create(ctx, CL_MEM_READ_WRITE, s->m * s->n * 4, &dc)) != HS_OK ||
      (st = hs__mem_write(q, da, true, 0, na * 4, a, 0, NULL, NULL)) != HS_OK ||
      (st = hs__mem_write(q, db, true, 0, nb * 4, b, 0, NULL, NULL)) != HS_OK)
    goto done;
  hs_gemm_op op = {.trans_a = s->ta, .trans_b = s->tb, .m = s->m, .n = s->n, .k = s->k,
                   .alpha = 1.0f, .a = da, .b = db, .c = dc, .lda = lda, .ldb = ldb, .ldc = s->n};
  if ((st = hs__gemm_prepare(g, &op)) != HS_OK) goto done;
  for (int r = -2; r < reps; r++) { /* two warm-up rounds */
    double t0 = hs__now();
    if ((st = hs__gemm_run(g, &op, 0, NULL, NULL)) != HS_OK || (st = hs__queue_finish(q)) != HS_OK)
      goto done;
    if (r >= 0) tp[r] = hs__now() - t0;
#if HS_HAVE_CBLAS
    openblas_set_num_threads(threads);
    t0 = hs__now();
    cblas_sgemm(CblasRowMajor, s->ta ? CblasTrans : CblasNoTrans, s->tb ? CblasTrans : CblasNoTrans,
                (blasint)s->m, (blasint)s->n, (blasint)s->k, 1.0f, a, (blasint)lda, b, (blasint)ldb,
                0.0f, c, (blasint)s->n);
    if (r >= 0) tl[r] = hs__now() - t0;
#else
    (void)threads;
#endif
  }
  *prov = summarize(tp, reps);
#if HS_HAVE_CBLAS
  *limit = summarize(tl, reps);
#endif
done:
  hs__mem_release(&da), hs__mem_release(&db), hs__mem_release(&dc);
  free(a), free(b), free(c), free(tp), free(tl);
  return st;
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
  if (n_kinds == 0) {
    kinds[n_kinds++] = HS_GEMM_AUTO;
    kinds[n_kinds++] = HS_GEMM_CLBLAST;
  }
  hs_inventory inv;
  if (hs__inventory_discover(&inv) != HS_OK) {
    fprintf(stderr, "bench_gemm: %s\n", hs_last_error());
    return 1;
  }
  size_t n_shapes = quick ? HS_ARRAY_LEN(quick_shapes) : HS_ARRAY_LEN(shapes);
  printf("{\"bench\": \"gemm\", \"reps\": %d, \"limit\": \"OpenBLAS sgemm on the host, same shapes, "
         "threads = the device's compute units\", \"runs\": [",
         reps);
  bool first_run = true;
  int rc = 0;
  for (int d = 0; d < inv.n_devs; d++) {
    hs_dev *dev = &inv.devs[d];
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
      double ratios[HS_ARRAY_LEN(shapes)];
      int n_ratios = 0;
      for (size_t si = 0; si < n_shapes; si++) {
        const shape *s = &shapes[quick ? quick_shapes[si] : si];
        stats p, o;
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
        stats r = summarize(ratios, n_ratios);
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
  hs__inventory_release(&inv);
  return rc;
}
