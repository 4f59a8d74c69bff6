/* Gather throughput beside a STREAM-style copy (see hs_measure.h). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bench/hs_measure.h"
#include "core/hs_engine.h"

hs_status hs__measure_gather_host(hs_gather_pool *pool, const hs_gather_req *req,
                                  const void *copy_src, void *copy_dst, size_t copy_bytes,
                                  int warmup, int runs, hs_gather_runs *out) {
  memset(out, 0, sizeof *out);
  if (runs < 1 || runs > HS_MEASURE_MAX_RUNS)
    return hs__fail(HS_ERR_INVALID_ARG, "gather benchmark: %d runs", runs);
  out->runs = runs;
  double moved = 2.0 * (double)req->n * (double)req->row_bytes; /* rows read + written */
  size_t stream_above = hs__gather_pool_stream_above(pool, SIZE_MAX);
  hs__gather_pool_stream_above(pool, stream_above);
  hs_status st = HS_OK;
  for (int r = -warmup; r < runs && st == HS_OK; r++) {
    double t0 = hs__now();
    if ((st = hs__gather(pool, req)) != HS_OK) break;
    double tg = hs__now() - t0;
    hs__gather_pool_stream_above(pool, SIZE_MAX);
    t0 = hs__now();
    st = hs__gather(pool, req);
    double to = hs__now() - t0;
    hs__gather_pool_stream_above(pool, stream_above);
    if (st != HS_OK) break;
    double copy = hs__host_copy_rate(pool, copy_src, copy_dst, copy_bytes);
    if (r < 0) continue;
    out->gather_bps[r] = moved / tg;
    out->ordinary_bps[r] = moved / to;
    out->copy_bps[r] = copy;
  }
  return st;
}

/* The device's copy limit: a kernel copying 16-byte vectors over every
 * compute unit (`bytes` a multiple of 16); bytes read + written per second. */
static hs_status kernel_copy_rate(const hs_dev *dev, cl_command_queue q, cl_kernel k, cl_mem a,
                                  cl_mem b, size_t bytes, double *rate) {
  cl_ulong n = bytes / 16;
  bool cpu = dev->info.type == HS_DEVICE_CPU;
  size_t cu = dev->info.compute_units > 0 ? (size_t)dev->info.compute_units : 1;
  /* CPU devices: contiguous chunks, a few per thread; GPUs: a vector per item */
  size_t items = cpu ? cu * 64 * 4 : (n < ((size_t)1 << 22) ? (size_t)n : (size_t)1 << 22);
  cl_uint per_item = cpu ? (cl_uint)((n + items - 1) / items) : 1;
  hs_karg args[] = {HS_KARG(a), HS_KARG(b), HS_KARG(n), HS_KARG(per_item)};
  hs_status st = hs__kernel_args(k, args, 4);
  size_t local = cpu ? 64 : 0;
  double t0 = hs__now();
  if (st == HS_OK) st = hs__launch(q, k, 1, &items, cpu ? &local : NULL, 0, NULL, NULL);
  if (st == HS_OK) st = hs__queue_finish(q);
  *rate = 2.0 * (double)bytes / (hs__now() - t0);
  return st;
}

hs_status hs__measure_gather_device(const hs_ctx *ctx, const hs_dev *dev, cl_command_queue q,
                                    size_t table_bytes, size_t row_bytes, uint32_t n,
                                    int warmup, int runs, hs_gather_runs *out) {
  memset(out, 0, sizeof *out);
  if (runs < 1 || runs > HS_MEASURE_MAX_RUNS)
    return hs__fail(HS_ERR_INVALID_ARG, "gather benchmark: %d runs", runs);
  if (row_bytes == 0 || table_bytes < row_bytes || n == 0)
    return hs__fail(HS_ERR_INVALID_ARG, "gather benchmark: %u rows of %zu bytes from %zu", n,
                    row_bytes, table_bytes);
  out->runs = runs;
  uint64_t n_rows = table_bytes / row_bytes;
  size_t out_bytes = (size_t)n * row_bytes;
  hs_gather_cl *g = NULL;
  cl_program copy_prog = NULL;
  cl_kernel copy_k = NULL;
  cl_mem table = NULL, ids = NULL, dst = NULL, ca = NULL, cb = NULL;
  int32_t *host_ids = malloc(sizeof *host_ids * n);
  const uint32_t pattern = 0x3f800001u;
  hs_status st = host_ids ? HS_OK : hs__fail(HS_ERR_NOMEM, "gather benchmark ids");
  if (st == HS_OK) {
    for (uint32_t i = 0; i < n; i++)
      host_ids[i] = (int32_t)hs_philox_below(hs_philox_draw(9, 3, 0, 0, i).v[0],
                                             (uint32_t)(n_rows > INT32_MAX ? INT32_MAX : n_rows));
    st = hs__gather_cl_create(ctx, dev, &g);
  }
  if (st == HS_OK) st = hs__program_get(ctx, dev, HS_PROG_PROBE, &copy_prog);
  if (st == HS_OK) st = hs__kernel_create(copy_prog, "hs_probe_copy", dev, &copy_k);
  if (st == HS_OK) st = hs__mem_create(ctx, CL_MEM_READ_ONLY, n_rows * row_bytes, &table);
  if (st == HS_OK) st = hs__mem_create(ctx, CL_MEM_READ_ONLY, sizeof *host_ids * n, &ids);
  if (st == HS_OK) st = hs__mem_create(ctx, CL_MEM_READ_WRITE, out_bytes, &dst);
  if (st == HS_OK) st = hs__mem_create(ctx, CL_MEM_READ_WRITE, 2 * out_bytes, &ca);
  if (st == HS_OK) st = hs__mem_create(ctx, CL_MEM_READ_WRITE, 2 * out_bytes, &cb);
  if (st == HS_OK)
    st = hs__mem_fill(q, table, &pattern, 4, 0, n_rows * row_bytes, 0, NULL, NULL);
  if (st == HS_OK) st = hs__mem_fill(q, ca, &pattern, 4, 0, 2 * out_bytes, 0, NULL, NULL);
  if (st == HS_OK)
    st = hs__mem_write(q, ids, true, 0, sizeof *host_ids * n, host_ids, 0, NULL, NULL);
  if (st == HS_OK) st = hs__queue_finish(q);
  for (int r = -warmup; st == HS_OK && r < runs; r++) {
    double t0 = hs__now();
    if ((st = hs__gather_cl_enqueue(g, q, table, row_bytes, ids, n, dst, 0, false, NULL)) !=
            HS_OK ||
        (st = hs__queue_finish(q)) != HS_OK)
      break;
    double t1 = hs__now();
    if ((st = hs__mem_copy(q, ca, cb, 0, 0, 2 * out_bytes, 0, NULL, NULL)) != HS_OK ||
        (st = hs__queue_finish(q)) != HS_OK)
      break;
    double t2 = hs__now(), kcopy = 0;
    if ((st = kernel_copy_rate(dev, q, copy_k, ca, cb, 2 * out_bytes & ~(size_t)15, &kcopy)) !=
        HS_OK)
      break;
    if (r < 0) continue;
    out->gather_bps[r] = 2.0 * (double)out_bytes / (t1 - t0);
    /* the faster of the runtime's buffer copy and a copy kernel */
    double bcopy = 4.0 * (double)out_bytes / (t2 - t1);
    out->copy_bps[r] = kcopy > bcopy ? kcopy : bcopy;
  }
  hs__gather_cl_destroy(g);
  hs__kernel_release(&copy_k);
  hs__program_release(&copy_prog);
  hs__mem_release(&table);
  hs__mem_release(&ids);
  hs__mem_release(&dst);
  hs__mem_release(&ca);
  hs__mem_release(&cb);
  free(host_ids);
  return st;
}
