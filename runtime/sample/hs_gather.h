/* Gathering feature rows in local-id order.
 *
 * On the host: a fixed pool of threads (the caller's thread is one of
 * them) copies rows table[ids[i]] into out[i], each thread a contiguous
 * slice of the output, into a caller-provided buffer (the pipeline passes a
 * mapped staging buffer). Rows are opaque bytes, so float32 and float16
 * features are the same operation. On a device: the same copy from a
 * resident table (the trainer-side cache). */
#ifndef HS_GATHER_H
#define HS_GATHER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hs_dev.h"

typedef struct hs_gather_pool hs_gather_pool;

/* `n_threads` >= 1 threads in all: n_threads - 1 are started here and wait
 * for work; the caller's thread does the first slice. */
hs_status hs__gather_pool_create(int n_threads, hs_gather_pool **out);
void hs__gather_pool_destroy(hs_gather_pool *p);
int hs__gather_pool_threads(const hs_gather_pool *p);
/* The pool's own threads run `by` nicer from now on (hs__pool_nicer);
 * returns how many did. */
int hs__gather_pool_nicer(hs_gather_pool *p, int by);
/* Outputs of more than `bytes` are written with non-temporal stores where
 * the host has them (gather.c says why); the default is the last-level
 * cache size. Returns the previous threshold. Not while a gather runs. */
size_t hs__gather_pool_stream_above(hs_gather_pool *p, size_t bytes);

/* Run fn(arg, t, n_threads) once on every thread t of the pool and return
 * when all have returned. One run at a time per pool. */
void hs__gather_pool_run(hs_gather_pool *p, void (*fn)(void *arg, int t, int n), void *arg);

typedef struct hs_gather_req {
  const void *table;      /* n_rows rows of row_bytes bytes */
  size_t row_bytes;
  int64_t n_rows;
  const int32_t *ids;     /* n original ids (a batch's local -> original map) */
  int32_t n;
  void *out;              /* n * row_bytes bytes, row i = table row ids[i] */
  const int32_t *labels;  /* optional: n_rows labels */
  int32_t n_labels;       /* labels of ids[0 .. n_labels) (the seeds) */
  int32_t *labels_out;
} hs_gather_req;

/* Copy the rows (and labels) of `req` on the pool's threads. HS_ERR_RANGE
 * (nothing else written for that row) when an id is outside [0, n_rows). */
hs_status hs__gather(hs_gather_pool *p, const hs_gather_req *req);

/* Sparse rows (CSR) gathered in id-list order: out row i is table row
 * ids[i], as offsets (out_ptr, n + 1 entries, from 0), column ids and
 * float32 values (float16 tables are widened; a binary table, val NULL,
 * writes no values). */
typedef struct hs_gather_sparse_req {
  const int64_t *ptr;     /* n_rows + 1 */
  const int32_t *col;
  const void *val;        /* float32 / float16 per val_dtype, or NULL */
  bool val_half;          /* values are float16 */
  int64_t n_rows;
  const int32_t *ids;
  int32_t n;
  int32_t *out_ptr;       /* n + 1 */
  int32_t *out_col;       /* cap entries */
  float *out_val;         /* cap entries (unused when val is NULL) */
  int64_t cap;
} hs_gather_sparse_req;

/* Gather on the pool's threads: offsets first (one pass over the rows'
 * lengths), then the copies, each thread a contiguous slice. HS_ERR_RANGE
 * when an id is outside [0, n_rows) or the rows hold more than `cap` (or
 * 2^31 - 1) entries; nothing is copied then. */
hs_status hs__gather_sparse(hs_gather_pool *p, const hs_gather_sparse_req *req);

/* Copy `bytes` (a multiple of 16) into 16-byte aligned `dst` with
 * non-temporal stores (no read of the destination lines first), without a
 * fence: call hs__nontemporal_fence before the data is handed to another
 * thread. False, nothing copied, where the host has no such stores. */
bool hs__copy_nontemporal(void *dst, const void *src, size_t bytes);
void hs__nontemporal_fence(void);
/* Tests: copy with the baseline instruction set only (16-byte SSE2
 * stores) even where the CPU has wider ones. Returns the previous
 * setting. */
bool hs__gather_baseline_only(bool on);
/* Whether non-temporal copies use stores wider than the baseline's (AVX2's
 * 32 bytes: where the CPU has them, unless hs__gather_baseline_only). */
bool hs__gather_wide_stores(void);

/* ---- on a device ---------------------------------------------------------- */

typedef struct hs_gather_cl hs_gather_cl;

hs_status hs__gather_cl_create(const hs_ctx *ctx, const hs_dev *dev, hs_gather_cl **out);
/* The same with other build options (bring-up's fault injection passes
 * -DHS_INJECT_FAULT), built from source or the binary cache only; "" or
 * NULL: the standard program, as hs__gather_cl_create. */
hs_status hs__gather_cl_create_opts(const hs_ctx *ctx, const hs_dev *dev, const char *options,
                                    hs_gather_cl **out);
void hs__gather_cl_destroy(hs_gather_cl *g);
/* Tests: choose the launch shape whatever the device (whole rows per
 * work-item as on CPUs, or rows along dimension 0 as on GPUs). */
void hs__gather_cl_whole_rows(hs_gather_cl *g, bool whole_rows);

/* Enqueue out[i] = table[ids[i]] for n rows of row_bytes on `q` (ids must
 * be in range). Rows of a multiple of 16 bytes are copied as 16-byte
 * vectors (table and out then 16-byte aligned, as buffers are). CPU
 * devices give each work-item whole rows (`wg`: rows per work-group, 0:
 * 64); others spread a row over a work-group's items (`wg` = 0 lets the
 * runtime choose). `single` runs one work-item (FPGA style). `ev`
 * (optional) receives the kernel's event. */
hs_status hs__gather_cl_enqueue(hs_gather_cl *g, cl_command_queue q, cl_mem table,
                                size_t row_bytes, cl_mem ids, uint32_t n, cl_mem out, size_t wg,
                                bool single, cl_event *ev);

#endif
