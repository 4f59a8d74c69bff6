/* GEMM provider selection, and the builtin tiled kernel's host side. */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "gemm_internal.h"
#include "hs_launch.h"
#include "hs_programs.h"

enum { BUILTIN_TILE = 16 }; /* must match cl_kernels/gemm.cl */

static const char *const kind_names[] = {"auto", "cblas", "clblast", "builtin"};

const char *hs__gemm_kind_name(hs_gemm_kind kind) {
  return (unsigned)kind < HS_ARRAY_LEN(kind_names) ? kind_names[kind] : "unknown";
}

hs_status hs__gemm_kind_parse(const char *name, hs_gemm_kind *out) {
  for (unsigned i = 0; i < HS_ARRAY_LEN(kind_names); i++)
    if (strcmp(name, kind_names[i]) == 0) {
      *out = (hs_gemm_kind)i;
      return HS_OK;
    }
  return hs__fail(HS_ERR_INVALID_ARG, "unknown GEMM provider '%s' (auto, cblas, clblast, builtin)",
                  name);
}

hs_cpu_simd hs__gemm_cpu_simd(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma")) return HS_SIMD_OLDER;
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512cd") &&
      __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq") &&
      __builtin_cpu_supports("avx512vl"))
    return HS_SIMD_AVX512;
  return HS_SIMD_AVX2;
#else
  return HS_SIMD_OLDER;
#endif
}

/* OpenBLAS's x86 kernel sets that use AVX2 or AVX-512: its choices for the
 * CPUs it knows that have them. */
static const char *const vector_cores[] = {"Haswell",    "Zen",            "SkylakeX",
                                           "Cooperlake", "SapphireRapids", "Excavator"};

const char *hs__gemm_core_suggestion(const char *core, hs_cpu_simd simd) {
  if (!core || simd == HS_SIMD_OLDER) return NULL;
  for (unsigned i = 0; i < HS_ARRAY_LEN(vector_cores); i++)
    if (strcasecmp(core, vector_cores[i]) == 0) return NULL;
  return simd == HS_SIMD_AVX512 ? "SkylakeX" : "Haswell";
}

const char *hs__gemm_cblas_core_suggested(void) {
  return hs__gemm_core_suggestion(hs__gemm_cblas_core(), hs__gemm_cpu_simd());
}

static hs_gemm_kind choose(const hs_dev *dev) {
  const char *why;
  if (dev->info.type == HS_DEVICE_CPU && hs__gemm_cblas_available(dev, &why)) return HS_GEMM_CBLAS;
  if (hs__gemm_clblast_available(dev, &why)) return HS_GEMM_CLBLAST;
  return HS_GEMM_BUILTIN;
}

static hs_status builtin_create(hs_gemm *g) {
  if (g->dev.info.max_work_group_size < BUILTIN_TILE * BUILTIN_TILE)
    return hs__fail(HS_ERR_UNSUPPORTED, "builtin GEMM needs work-groups of %d on '%s' (max %zu)",
                    BUILTIN_TILE * BUILTIN_TILE, g->dev.info.name, g->dev.info.max_work_group_size);
  hs_status st = hs__program_get(g->ctx, &g->dev, HS_PROG_GEMM, &g->program);
  if (st != HS_OK) return st;
  return hs__kernel_create(g->program, "hs_gemm_tiled", &g->dev, &g->kernel);
}

hs_status hs__gemm_create(const hs_ctx *ctx, const hs_dev *dev, cl_command_queue q,
                          hs_gemm_kind kind, int threads, hs_gemm **out) {
  *out = NULL;
  if (kind == HS_GEMM_AUTO && dev->settings) kind = (hs_gemm_kind)dev->settings->gemm;
  if (kind == HS_GEMM_AUTO) kind = choose(dev);
  const char *why = NULL;
  if ((kind == HS_GEMM_CBLAS && !hs__gemm_cblas_available(dev, &why)) ||
      (kind == HS_GEMM_CLBLAST && !hs__gemm_clblast_available(dev, &why)))
    return hs__fail(HS_ERR_UNSUPPORTED, "GEMM provider %s on '%s': %s", hs__gemm_kind_name(kind),
                    dev->info.name, why);
  if (kind != HS_GEMM_CBLAS && kind != HS_GEMM_CLBLAST && kind != HS_GEMM_BUILTIN)
    return hs__fail(HS_ERR_INVALID_ARG, "GEMM provider kind %d", (int)kind);
  hs_gemm *g = calloc(1, sizeof *g);
  if (!g) return hs__fail(HS_ERR_NOMEM, "GEMM provider");
  g->kind = kind;
  g->ctx = ctx;
  g->dev = *dev;
  g->q = hs__queue_retain(q);
  g->threads = threads > 0 ? threads : (int)(dev->info.compute_units ? dev->info.compute_units : 1);
  if (kind == HS_GEMM_BUILTIN) {
    hs_status st = builtin_create(g);
    if (st != HS_OK) {
      hs__gemm_destroy(g);
      return st;
    }
  }
  hs__log(HS_LOG_DEVICE, "GEMM on '%s': %s%s", dev->info.name, hs__gemm_kind_name(kind),
          kind == HS_GEMM_CBLAS ? " (native kernel)" : "");
  *out = g;
  return HS_OK;
}

void hs__gemm_destroy(hs_gemm *g) {
  if (!g) return;
  if (g->kernel) clReleaseKernel(g->kernel);
  if (g->program) clReleaseProgram(g->program);
  hs__gemm_clblast_release(g);
  hs__gemm_cblas_release(g);
  hs__queue_release(&g->q);
  free(g);
}

hs_gemm_kind hs__gemm_kind_of(const hs_gemm *g) { return g->kind; }

void hs__gemm_set_pieces(hs_gemm *g, bool on) { g->pieces = on && g->kind == HS_GEMM_CBLAS; }

static hs_status check_op(const hs_gemm_op *op) {
  size_t a_cols = op->trans_a ? op->m : op->k, b_cols = op->trans_b ? op->k : op->n;
  if (op->lda < (a_cols ? a_cols : 1) || op->ldb < (b_cols ? b_cols : 1) ||
      op->ldc < (op->n ? op->n : 1))
    return hs__fail(HS_ERR_INVALID_ARG, "GEMM %zux%zux%zu: leading dimensions %zu, %zu, %zu too small",
                    op->m, op->n, op->k, op->lda, op->ldb, op->ldc);
  if (op->k == 0 && op->m > 0 && op->n > 0)
    return hs__fail(HS_ERR_INVALID_ARG, "GEMM %zux%zux0: empty inner dimension", op->m, op->n);
  if (op->m > INT32_MAX || op->n > INT32_MAX || op->k > INT32_MAX || op->lda > INT32_MAX ||
      op->ldb > INT32_MAX || op->ldc > INT32_MAX)
    return hs__fail(HS_ERR_RANGE, "GEMM %zux%zux%zu exceeds 32-bit BLAS sizes", op->m, op->n, op->k);
  return HS_OK;
}

hs_status hs__gemm_prepare(hs_gemm *g, const hs_gemm_op *op) {
  hs_status st = check_op(op);
  if (st != HS_OK) return st;
  return g->kind == HS_GEMM_CLBLAST ? hs__gemm_clblast_prepare(g, op) : HS_OK;
}

static hs_status builtin_run(hs_gemm *g, const hs_gemm_op *op, cl_uint n_wait,
                             const cl_event *wait, cl_event *ev) {
  cl_int ta = op->trans_a, tb = op->trans_b;
  cl_int m = (cl_int)op->m, n = (cl_int)op->n, k = (cl_int)op->k;
  cl_int lda = (cl_int)op->lda, ldb = (cl_int)op->ldb, ldc = (cl_int)op->ldc;
  cl_ulong ao = op->a_off, bo = op->b_off, co = op->c_off;
  hs_karg args[] = {HS_KARG(ta),     HS_KARG(tb),    HS_KARG(m),    HS_KARG(n),
                    HS_KARG(k),      HS_KARG(op->alpha), HS_KARG(op->a), HS_KARG(ao),
                    HS_KARG(lda),    HS_KARG(op->b), HS_KARG(bo),   HS_KARG(ldb),
                    HS_KARG(op->beta), HS_KARG(op->c), HS_KARG(co), HS_KARG(ldc)};
  hs_status st = hs__kernel_args(g->kernel, args, (int)HS_ARRAY_LEN(args));
  if (st != HS_OK) return st;
  size_t global[2] = {op->n, op->m}, local[2] = {BUILTIN_TILE, BUILTIN_TILE};
  return hs__launch(g->q, g->kernel, 2, global, local, n_wait, wait, ev);
}

hs_status hs__gemm_run(hs_gemm *g, const hs_gemm_op *op, cl_uint n_wait, const cl_event *wait,
                       cl_event *ev) {
  hs_status st = check_op(op);
  if (st != HS_OK) return st;
  switch (g->kind) {
  case HS_GEMM_CBLAS:
    if (op->m && op->n && (op->c == op->a || op->c == op->b))
      return hs__fail(HS_ERR_INVALID_ARG, "GEMM output shares a buffer with an input");
    return hs__gemm_cblas_run(g, op, 1, n_wait, wait, ev);
  case HS_GEMM_CLBLAST:
    return hs__gemm_clblast_run(g, op, n_wait, wait, ev);
  default:
    return builtin_run(g, op, n_wait, wait, ev);
  }
}

hs_status hs__gemm_run_group(hs_gemm *g, const hs_gemm_op *ops, int n_ops, cl_uint n_wait,
                             const cl_event *wait, cl_event *ev) {
  if (n_ops < 1 || n_ops > HS_GEMM_GROUP_MAX)
    return hs__fail(HS_ERR_INVALID_ARG, "GEMM group of %d products (1..%d)", n_ops, HS_GEMM_GROUP_MAX);
  for (int i = 0; i < n_ops; i++) {
    hs_status st = check_op(&ops[i]);
    if (st != HS_OK) return st;
    for (int j = 0; j < n_ops; j++)
      if (ops[i].c == ops[j].a || ops[i].c == ops[j].b || (i != j && ops[i].c == ops[j].c))
        return hs__fail(HS_ERR_INVALID_ARG, "GEMM group: product %d's output shares a buffer with "
                        "product %d's %s", i, j, ops[i].c == ops[j].a ? "A" : ops[i].c == ops[j].b ? "B" : "C");
  }
  if (g->kind == HS_GEMM_CBLAS) return hs__gemm_cblas_run(g, ops, n_ops, n_wait, wait, ev);
  /* Elsewhere one after another: the first after `wait`, the queue in order. */
  for (int i = 0; i < n_ops; i++) {
    hs_status st = hs__gemm_run(g, &ops[i], i ? 0 : n_wait, i ? NULL : wait, i == n_ops - 1 ? ev : NULL);
    if (st != HS_OK) return st;
  }
  return HS_OK;
}
