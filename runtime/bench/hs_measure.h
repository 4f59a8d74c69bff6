/* Measuring cores shared by the benchmark programs (bench/), `hetsage
 * bench` (hs_bench_run) and bring-up's peaks, so that every caller
 * measures the same way (docs/architecture.md, "Measuring"):
 *
 *  - warm-up runs are done and dropped before the steady-state runs;
 *  - a figure and its same-run limit are measured alternately, run by
 *    run, so that drift of a shared machine hits both alike, and their
 *    ratio is taken per run;
 *  - every core returns per-run values; callers summarise them (median,
 *    min, max) with hs__summarize.
 *
 * Limits are measured honestly: the random-read probe issues independent
 * loads (as many in flight as the device allows), the copy limit moves
 * arrays much larger than the last-level cache, GEMM is divided by
 * OpenBLAS on the same shapes with as many threads as the device has
 * compute units. */
#ifndef HS_MEASURE_H
#define HS_MEASURE_H

#include <stdbool.h>
#include <stdint.h>

#include "core/hs_engine.h"
#include "hetsage/bench.h"

#define HS_MEASURE_MAX_RUNS 64

typedef struct hs_summary {
  double median, min, max;
} hs_summary;

/* Median, min and max of n >= 1 values (the array is not modified). */
hs_summary hs__summarize(const double *v, int n);
/* The same of the per-run ratios a[i] / b[i]. */
hs_summary hs__summarize_ratio(const double *a, const double *b, int n);

/* ---- limits ---------------------------------------------------------------- */

/* The random-read probe of cl_kernels/probe.cl on one device, over a
 * device array of `bytes` (filled on the device). */
typedef struct hs_probe {
  cl_program prog;
  cl_kernel k;
  cl_mem arr, out;
  cl_ulong n_words;
  cl_device_id dev;
} hs_probe;

hs_status hs__probe_open(const hs_ctx *ctx, const hs_dev *dev, cl_command_queue q,
                         uint64_t bytes, hs_probe *p);
/* One launch (blocking): independent random 8-byte reads per second. */
hs_status hs__probe_run(hs_probe *p, cl_command_queue q, uint32_t salt, double *reads_per_s);
void hs__probe_close(hs_probe *p);

/* The same probe on the calling thread: `reads` loads from 8 interleaved
 * address streams (never a dependent chase). Reads per second. */
double hs__host_probe(const uint64_t *a, uint64_t n_words, uint64_t reads, uint32_t salt);
/* An array of about `bytes` (at least one 8-byte word) for the host
 * probe; NULL when out of memory. Free with free(). */
uint64_t *hs__probe_array(uint64_t bytes, uint64_t *n_words);

/* STREAM-style copy of `bytes` on every thread of the pool (each a slice);
 * bytes read + written per second: the faster of the C library's memcpy
 * and a copy with non-temporal stores (where the host has them; `src` and
 * `dst` 16-byte aligned), each timed once. */
double hs__host_copy_rate(hs_gather_pool *pool, const void *src, void *dst, size_t bytes);

/* ---- device peaks ----------------------------------------------------------- */

typedef struct hs_transfer_runs {
  int runs;
  double h2d[HS_MEASURE_MAX_RUNS]; /* bytes/s, blocking writes */
  double d2h[HS_MEASURE_MAX_RUNS]; /* bytes/s, blocking reads */
  double d2d[HS_MEASURE_MAX_RUNS]; /* bytes read + written per second */
} hs_transfer_runs;

/* Host<->device copies of `bytes` from ordinary (pageable) host memory,
 * and a device-to-device buffer copy of the same size. */
hs_status hs__measure_transfers(const hs_ctx *ctx, const hs_dev *dev, cl_command_queue q,
                                size_t bytes, int warmup, int runs, hs_transfer_runs *out);

/* Seconds from enqueuing a one-work-item kernel to the end of clFinish. */
hs_status hs__measure_launch(const hs_ctx *ctx, const hs_dev *dev, cl_command_queue q,
                             int warmup, int runs, double *seconds);

/* Square n x n x n SGEMM through provider `kind` (HS_GEMM_AUTO: the
 * device's default): FLOP/s per run; `*used` gets the provider. */
hs_status hs__measure_sgemm(const hs_ctx *ctx, const hs_dev *dev, cl_command_queue q,
                            hs_gemm_kind kind, size_t n, int warmup, int runs, double *flops,
                            hs_gemm_kind *used);

/* Random reads per second of the device probe over `bytes`. */
hs_status hs__measure_random_read(const hs_ctx *ctx, const hs_dev *dev, cl_command_queue q,
                                  uint64_t bytes, int warmup, int runs, double *reads_per_s);

/* ---- sampling ----------------------------------------------------------------- */

typedef struct hs_sample_runs {
  int runs;
  double edges_s[HS_MEASURE_MAX_RUNS];      /* sampled edges / wall time of a batch */
  double kern_edges_s[HS_MEASURE_MAX_RUNS]; /* / sampling kernel time (devices) */
  bool kernel_times_real; /* the device's profiling timestamps are real time
                             (hs__queue_timestamps_real): else the two kernel
                             rates are meaningless and left out */
  double reindex_v_s[HS_MEASURE_MAX_RUNS];  /* vertices / reindex kernel time */
  double probe_s[HS_MEASURE_MAX_RUNS];      /* the random-read limit, same run */
  /* The same two by the CPU time of every thread of the process (the
   * device's workers included) instead of wall time: on a machine shared
   * with other work, other processes take the cores away for unequal parts
   * of a batch and of its probe; these are immune to that (not to the
   * sharing of caches and memory bandwidth). Meaningful on CPU devices. */
  double cpu_edges_s[HS_MEASURE_MAX_RUNS];
  double cpu_probe_s[HS_MEASURE_MAX_RUNS];
  double edges_per_batch, vertices_per_batch;
  /* hs__measure_sample_two_queues only: one sampler on one queue over the
   * same batches in the same round (edges_s is then the two samplers'). */
  double one_queue_edges_s[HS_MEASURE_MAX_RUNS];
} hs_sample_runs;

/* Distinct seeds of batch `batch` (same for every device): `used` is a
 * zeroed scratch of n_vertices bytes, left zeroed. */
void hs__bench_seeds(int32_t *seeds, int32_t n, int64_t n_vertices, uint32_t batch, char *used);

/* The host reference sampler on the calling thread, beside the host probe
 * over `probe_words` words of `probe_arr`. */
hs_status hs__measure_sample_ref(const hs_csr *g, const hs_sample_cfg *cfg, int32_t batch,
                                 int warmup, int runs, const uint64_t *probe_arr,
                                 uint64_t probe_words, hs_sample_runs *out);

/* Called after each run of a measurement (hetsage/bench.h,
 * hs_bench_run_hook), so that a peer alternates with it run by run. */
typedef struct hs_sample_hook {
  hs_bench_run_hook fn;
  void *user;
  hs_bench_run_info info; /* run is set at each call */
} hs_sample_hook;

/* The device sampler (its own context and profiling queue) beside the
 * device probe over an array as large as the topology; `hook` (NULL:
 * none) runs after each run, outside its timing. */
hs_status hs__measure_sample_device(const hs_dev *dev, const hs_csr *g, const hs_sample_cfg *cfg,
                                    hs_sampler_style style, uint32_t rows_per_item, int32_t batch,
                                    int warmup, int runs, const hs_sample_hook *hook,
                                    hs_sample_runs *out);

/* Two samplers on two in-order queues of one device (two copies of the
 * topology), batches alternating between them so that one's sequential
 * reindex overlaps the other's sampling, beside one sampler over the same
 * `batches` batches and the device probe, each round. What the device
 * could sample with the reindex hidden; NDRange style. */
hs_status hs__measure_sample_two_queues(const hs_dev *dev, const hs_csr *g,
                                        const hs_sample_cfg *cfg, int32_t batch, int batches,
                                        int warmup, int runs, hs_sample_runs *out);

/* ---- gathering ------------------------------------------------------------------ */

typedef struct hs_gather_runs {
  int runs;
  double gather_bps[HS_MEASURE_MAX_RUNS]; /* rows read + written per second */
  double copy_bps[HS_MEASURE_MAX_RUNS];   /* the copy limit, same run */
  /* host only: the same gather with ordinary stores (no non-temporal
   * stores whatever the output's size; see runtime/sample/gather.c) */
  double ordinary_bps[HS_MEASURE_MAX_RUNS];
} hs_gather_runs;

/* Host gather of `req` on the pool as the runtime runs it, then with
 * ordinary stores only, beside a copy of `copy_bytes` between `copy_src`
 * and `copy_dst` on the same threads. */
hs_status hs__measure_gather_host(hs_gather_pool *pool, const hs_gather_req *req,
                                  const void *copy_src, void *copy_dst, size_t copy_bytes,
                                  int warmup, int runs, hs_gather_runs *out);

/* Device gather of `n` rows of `row_bytes` (random ids over a device table
 * of `table_bytes`) beside a device copy of twice the gathered bytes: the
 * faster of the runtime's buffer copy and a copy kernel on every compute
 * unit (cl_kernels/probe.cl), each timed once per run. */
hs_status hs__measure_gather_device(const hs_ctx *ctx, const hs_dev *dev, cl_command_queue q,
                                    size_t table_bytes, size_t row_bytes, uint32_t n,
                                    int warmup, int runs, hs_gather_runs *out);

/* ---- GEMM -------------------------------------------------------------------------- */

typedef struct hs_gemm_shape {
  bool ta, tb;
  size_t m, n, k;
  const char *what;
} hs_gemm_shape;

/* GraphSAGE layer shapes (forward, and the two backward orientations). */
extern const hs_gemm_shape hs__gemm_shapes[];
extern const size_t hs__gemm_shape_count;
/* Indices into hs__gemm_shapes of a short list. */
extern const size_t hs__gemm_quick_shapes[];
extern const size_t hs__gemm_quick_count;

/* Whether OpenBLAS (the CPU limit) is in this build. */
bool hs__have_cblas(void);

/* Seconds per product through `g` (wall, enqueue to clFinish) and, when
 * this build has CBLAS, of OpenBLAS sgemm on the host with `threads`
 * threads (blas_s[i] = 0 otherwise), alternating. */
hs_status hs__measure_gemm(hs_gemm *g, const hs_ctx *ctx, cl_command_queue q,
                           const hs_gemm_shape *s, int threads, int warmup, int runs,
                           double *prov_s, double *blas_s);

/* ---- the training step ------------------------------------------------------------- */

typedef struct hs_train_shape {
  const char *name;
  int64_t graph_vertices;
  int n_layers;
  int in_dim, hidden, n_classes;
  int fanout_from_seeds[HS_NN_MAX_LAYERS];
  int32_t batch;
} hs_train_shape;

extern const hs_train_shape hs__train_shapes[];
extern const size_t hs__train_shape_count;

typedef struct hs_train_runs {
  int runs;
  double step_s[HS_MEASURE_MAX_RUNS];   /* wall, enqueue to clFinish */
  double upload_s[HS_MEASURE_MAX_RUNS];
  double phase_s[HS_PHASE_COUNT_][HS_MEASURE_MAX_RUNS]; /* profiled pass */
  double gemm_floor_s;                  /* the step's GEMMs by OpenBLAS, 0 without */
  hs_gemm_kind gemm;
  int32_t block_src[HS_NN_MAX_LAYERS];
  int32_t dims[HS_NN_MAX_LAYERS + 1];
} hs_train_runs;

/* Training steps of model `kind` (hs_nn_kind; GAT with `heads` heads) in
 * `shape` on uniformly sampled batches on `dev`. */
hs_status hs__measure_train_step(const hs_ctx *ctx, const hs_dev *dev,
                                 const hs_train_shape *shape, int kind, int heads, size_t wg,
                                 int warmup, int runs, hs_train_runs *out);

/* Seconds of CPU time used so far by every thread of this process. */
double hs__process_cpu_s(void);

/* Resident set size of this process now, bytes (0 if unknown). */
uint64_t hs__rss_bytes(void);

#endif
