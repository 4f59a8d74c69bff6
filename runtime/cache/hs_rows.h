/* Where feature rows come from: a small interface shared by the two cache
 * tiers. The trainer tier reads its prefill through it; the pipeline's
 * gather stage can read a batch's misses through it, whichever tier holds
 * the features (a mapped feat.npy, or the host tier in front of the disk). */
#ifndef HS_ROWS_H
#define HS_ROWS_H

#include <stddef.h>
#include <stdint.h>

#include "hs_base.h"

/* read: rows ids[0..n) into out (n x row bytes, in id-list order); ids out
 * of range are an error (HS_ERR_RANGE). */
typedef struct hs_row_source {
  hs_status (*read)(void *ctx, const int32_t *ids, int32_t n, void *out);
  void *ctx;
} hs_row_source;

/* Sparse rows (CSR): read rows ids[0..n) into ptr (n + 1 offsets from 0),
 * col (column ids) and val (float32 values; NULL for binary rows), at most
 * `cap` entries; ids out of range or more entries than `cap` are an error
 * (HS_ERR_RANGE). */
typedef struct hs_sparse_source {
  hs_status (*read)(void *ctx, const int32_t *ids, int32_t n, int32_t *ptr, int32_t *col,
                    float *val, int64_t cap);
  void *ctx;
} hs_sparse_source;

/* Rows held in host memory (e.g. hs_graph.feat, float32 or float16: rows
 * are opaque bytes). */
typedef struct hs_row_table {
  const void *rows;
  size_t row_bytes;
  int64_t n_rows;
} hs_row_table;

/* A source over `t`, which must outlive it. Single-threaded copy: for large
 * batches the threaded hs__gather (sample/hs_gather.h) is faster. */
hs_row_source hs__row_table_source(const hs_row_table *t);

#endif
