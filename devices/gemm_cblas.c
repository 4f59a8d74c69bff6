/* The CBLAS provider: an OpenCL native kernel that calls OpenBLAS on the
 * buffers' memory. On a CPU device buffers are host memory already, so the
 * product runs at OpenBLAS speed while staying in the queue/event model
 * (ordering, wait lists, profiling) like any kernel.
 *
 * The buffers reach the native kernel as mapped pointers (map, run, unmap,
 * all enqueued without blocking), not through the native kernel's own
 * mem-object list: PoCL 3.1 pairs that list with args_mem_loc in its own
 * internal order, handing the function the wrong buffers whenever the
 * caller's order differs. Mapping is zero-copy on CPU devices. */
#include <pthread.h>
#include <stdatomic.h>

#include "gemm_internal.h"
#include "hs_config.h"
#include "hs_pool.h"

/* Pieces: split the longer of C's two sides when the product is large
 * enough to be worth a second thread; at most HS_GEMM_MAX_PIECES (each
 * repacks the whole of the other operand), a multiple of 16 rows or
 * columns each. */
enum { PIECE_WORK = 1 << 24, PIECE_MAX = HS_GEMM_MAX_PIECES, PIECE_ALIGN = 16 };

/* `side` (of C, along out->along_n) cut into about `count` (>= 2)
 * pieces of a multiple of PIECE_ALIGN. */
static void cut(size_t side, size_t count, hs_gemm_piece_plan *out) {
  size_t size = (side + count - 1) / count;
  out->size = (size + PIECE_ALIGN - 1) / PIECE_ALIGN * PIECE_ALIGN;
  out->count = (int)((side + out->size - 1) / out->size);
}

void hs__gemm_piece_plan(size_t m, size_t n, size_t k, hs_gemm_piece_plan *out) {
  double work = (double)m * (double)n * (double)k;
  size_t count = work >= (double)PIECE_MAX * PIECE_WORK ? PIECE_MAX : (size_t)(work / PIECE_WORK);
  out->along_n = n > m;
  size_t side = out->along_n ? n : m;
  if (count > side / PIECE_ALIGN) count = side / PIECE_ALIGN;
  if (count < 2) {
    *out = (hs_gemm_piece_plan){.count = 1, .along_n = false, .size = m};
    return;
  }
  cut(side, count, out);
}

void hs__gemm_group_piece_plan(size_t m, size_t n, size_t k, int n_prods,
                               hs_gemm_piece_plan *out) {
  hs__gemm_piece_plan(m, n, k, out);
  if (n_prods < 2 || k <= m || k <= n || out->count <= HS_GEMM_GROUP_LONG_PIECES) return;
  cut(out->along_n ? n : m, HS_GEMM_GROUP_LONG_PIECES, out);
}

#if HS_HAVE_CBLAS
#include <cblas.h>

bool hs__gemm_cblas_available(const hs_dev *dev, const char **why) {
  if (!dev->info.native_kernels) {
    *why = "the device does not run native kernels (CL_EXEC_NATIVE_KERNEL)";
    return false;
  }
  return true;
}

/* One product of a native kernel's job. */
typedef struct native_prod {
  const float *a, *b;
  float *c;
  size_t m, n, k, lda, ldb, ldc;
  float alpha, beta;
  int trans_a, trans_b;
} native_prod;

/* A native kernel's job: products that do not depend on each other. */
typedef struct native_args {
  int n_prods, threads;
  hs_pool *pool; /* pieces mode: the provider's threads; NULL: OpenBLAS calls */
  native_prod p[HS_GEMM_GROUP_MAX];
} native_args;

/* OpenBLAS's thread count is process-wide. Each job runs under one lock
 * with its own count, set where OpenBLAS holds another (asked of
 * OpenBLAS, not remembered: code outside the providers may set it), so
 * that products of providers with other counts (a GNN trainer's and a CTR
 * trainer's in one process) take turns instead of one running on the
 * other's count, which would change its bits. */
static pthread_mutex_t blas_lock = PTHREAD_MUTEX_INITIALIZER;

static void sgemm(const native_prod *x, size_t m, size_t n, const float *a, const float *b,
                  float *c) {
  cblas_sgemm(CblasRowMajor, x->trans_a ? CblasTrans : CblasNoTrans,
              x->trans_b ? CblasTrans : CblasNoTrans, (blasint)m, (blasint)n, (blasint)x->k,
              x->alpha, a, (blasint)x->lda, b, (blasint)x->ldb, x->beta, c, (blasint)x->ldc);
}

/* Piece i of the product: rows [i size, ...) of C and of op(A), or its
 * columns and those of op(B). */
static void run_piece(const native_prod *x, const hs_gemm_piece_plan *p, int i) {
  size_t lo = (size_t)i * p->size, side = p->along_n ? x->n : x->m;
  size_t len = side - lo < p->size ? side - lo : p->size;
  if (p->along_n)
    sgemm(x, x->m, len, x->a, x->trans_b ? x->b + lo * x->ldb : x->b + lo, x->c + lo);
  else
    sgemm(x, len, x->n, x->trans_a ? x->a + lo : x->a + lo * x->lda, x->b, x->c + lo * x->ldc);
}

/* A job's pieces, product after product, taken by the pool's threads
 * through a counter. */
typedef struct piece_job {
  const native_args *x;
  hs_gemm_piece_plan plan[HS_GEMM_GROUP_MAX];
  int first[HS_GEMM_GROUP_MAX + 1]; /* product i's pieces are [first[i], first[i + 1]) */
  atomic_int next;
} piece_job;

static void take_pieces(void *arg, int t, int n) {
  (void)t, (void)n;
  piece_job *j = arg;
  int total = j->first[j->x->n_prods];
  for (int i, o = 0; (i = atomic_fetch_add(&j->next, 1)) < total;) {
    while (i >= j->first[o + 1]) o++;
    run_piece(&j->x->p[o], &j->plan[o], i - j->first[o]);
  }
}

static void run_pieces(const native_args *x) {
  piece_job j = {.x = x};
  for (int o = 0; o < x->n_prods; o++) {
    const native_prod *p = &x->p[o];
    hs__gemm_group_piece_plan(p->m, p->n, p->k, x->n_prods, &j.plan[o]);
    j.first[o + 1] = j.first[o] + j.plan[o].count;
  }
  atomic_init(&j.next, 0);
  if (j.first[x->n_prods] == 1) take_pieces(&j, 0, 1);
  else hs__pool_run_elsewhere(x->pool, take_pieces, &j);
}

static void run_native(void *p) {
  const native_args *x = p;
  int threads = x->pool ? 1 : x->threads;
  pthread_mutex_lock(&blas_lock);
  if (openblas_get_num_threads() != threads) openblas_set_num_threads(threads);
  if (x->pool) run_pieces(x);
  else
    for (const native_prod *q = x->p; q < x->p + x->n_prods; q++) sgemm(q, q->m, q->n, q->a, q->b, q->c);
  pthread_mutex_unlock(&blas_lock);
}

void hs__gemm_cblas_release(hs_gemm *g) {
  if (!g->pool) return;
  /* A product still queued holds the pool in its arguments. */
  if (g->q) clFinish(g->q);
  hs__pool_destroy(g->pool);
  g->pool = NULL;
}

/* The float range [off, off + (rows-1) ld + cols) a matrix occupies. */
static void span(size_t off, size_t rows, size_t cols, size_t ld, size_t *first, size_t *count) {
  *first = off;
  *count = rows == 0 || cols == 0 ? 1 : (rows - 1) * ld + cols;
}

const char *hs__gemm_cblas_core(void) { return openblas_get_corename(); }

hs_status hs__gemm_cblas_run(hs_gemm *g, const hs_gemm_op *ops, int n_ops, cl_uint n_wait,
                             const cl_event *wait, cl_event *ev) {
  /* No product has more than PIECE_MAX pieces: more threads would only be
   * woken for nothing. */
  hs_status pst;
  if (g->pieces && !g->pool &&
      (pst = hs__pool_create("GEMM", g->threads < PIECE_MAX ? g->threads : PIECE_MAX, &g->pool)) !=
          HS_OK)
    return pst;
  native_args args = {.threads = g->threads, .pool = g->pieces ? g->pool : NULL};
  cl_mem mems[3 * HS_GEMM_GROUP_MAX];
  void *ptr[3 * HS_GEMM_GROUP_MAX];
  int mapped = 0;
  cl_int err = CL_SUCCESS;
  const char *call = "clEnqueueMapBuffer";
  for (int o = 0; o < n_ops; o++) {
    const hs_gemm_op *op = &ops[o];
    if (op->m == 0 || op->n == 0) continue;
    size_t first[3], count[3];
    span(op->a_off, op->trans_a ? op->k : op->m, op->trans_a ? op->m : op->k, op->lda, &first[0], &count[0]);
    span(op->b_off, op->trans_b ? op->n : op->k, op->trans_b ? op->k : op->n, op->ldb, &first[1], &count[1]);
    span(op->c_off, op->m, op->n, op->ldc, &first[2], &count[2]);
    cl_mem m3[3] = {op->a, op->b, op->c};
    /* With beta 0 and no padding between C's rows nothing in the mapped
     * span needs its old contents: a copying implementation may then skip
     * reading them. */
    bool overwrite = op->beta == 0.0f && op->ldc == op->n;
    cl_map_flags flags[3] = {CL_MAP_READ, CL_MAP_READ,
                             overwrite ? CL_MAP_WRITE_INVALIDATE_REGION : CL_MAP_READ | CL_MAP_WRITE};
    for (int i = 0; i < 3; i++, mapped++) {
      /* Only the first command waits: the queue is in order. */
      mems[mapped] = m3[i];
      ptr[mapped] = clEnqueueMapBuffer(g->q, m3[i], CL_FALSE, flags[i], first[i] * sizeof(float),
                                       count[i] * sizeof(float), mapped ? 0 : n_wait,
                                       mapped || !n_wait ? NULL : wait, NULL, &err);
      if (err != CL_SUCCESS) goto fail;
    }
    args.p[args.n_prods++] = (native_prod){
        .a = ptr[mapped - 3], .b = ptr[mapped - 2], .c = ptr[mapped - 1],
        .m = op->m, .n = op->n, .k = op->k, .lda = op->lda, .ldb = op->ldb, .ldc = op->ldc,
        .alpha = op->alpha, .beta = op->beta, .trans_a = op->trans_a, .trans_b = op->trans_b,
    };
  }
  if (!args.n_prods) {
    err = clEnqueueMarkerWithWaitList(g->q, n_wait, n_wait ? wait : NULL, ev);
    return err == CL_SUCCESS ? HS_OK : hs__cl_fail(err, "clEnqueueMarkerWithWaitList", g->dev.id);
  }
  call = "clEnqueueNativeKernel(cblas_sgemm)";
  err = clEnqueueNativeKernel(g->q, run_native, &args, sizeof args, 0, NULL, NULL, 0, NULL, NULL);
fail:;
  /* Unmap whatever was mapped, also after a failure; the last unmap is the
   * event that says the products are done. */
  hs_status st = err == CL_SUCCESS ? HS_OK : hs__cl_fail(err, call, g->dev.id);
  for (int i = 0; i < mapped; i++) {
    cl_int e = clEnqueueUnmapMemObject(g->q, mems[i], ptr[i], 0, NULL,
                                       i == mapped - 1 && st == HS_OK ? ev : NULL);
    if (e != CL_SUCCESS && st == HS_OK) st = hs__cl_fail(e, "clEnqueueUnmapMemObject", g->dev.id);
  }
  return st;
}

#else

bool hs__gemm_cblas_available(const hs_dev *dev, const char **why) {
  (void)dev;
  *why = "this build has no CBLAS (meson option cblas)";
  return false;
}

const char *hs__gemm_cblas_core(void) { return NULL; }

void hs__gemm_cblas_release(hs_gemm *g) { (void)g; }

hs_status hs__gemm_cblas_run(hs_gemm *g, const hs_gemm_op *ops, int n_ops, cl_uint n_wait,
                             const cl_event *wait, cl_event *ev) {
  (void)g, (void)ops, (void)n_ops, (void)n_wait, (void)wait, (void)ev;
  return hs__fail(HS_ERR_UNSUPPORTED, "this build has no CBLAS");
}

#endif
