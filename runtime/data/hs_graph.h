/* The in-memory view of an opened dataset that the sampler, the gather
 * stage and the trainer read. Everything here is read-only and owned by the
 * hs_dataset it came from; it lives until hs_dataset_close. */
#ifndef HS_GRAPH_H
#define HS_GRAPH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hetsage/dataset.h"

typedef struct hs_graph {
  int64_t n;           /* vertices, < 2^31 */
  int64_t e;           /* stored CSR entries */
  int64_t f;           /* features per vertex (0: no features) */
  int32_t num_classes; /* 0: no labels */

  const int64_t *indptr;  /* [n + 1], indptr[0] = 0, monotone, indptr[n] = e */
  const int32_t *indices; /* [e], every id in [0, n) */
  const float *weights;   /* [e] or NULL */

  const void *feat;       /* [n][f] row-major, memory-mapped, or NULL
                           * (no features, or sparse ones) */
  hs_dtype feat_dtype;    /* HS_DTYPE_FLOAT32 / HS_DTYPE_FLOAT16 (sparse:
                           * the values' type, float32 when binary) */
  size_t feat_row_bytes;  /* f * element size (dense) */

  /* Sparse features (dataset.h), else all NULL / 0. */
  bool feat_sparse;
  const int64_t *feat_ptr;  /* [n + 1] row offsets into col / val */
  /* [feat_nnz] column ids, increasing per row: the mapping of int32 ids;
   * NULL when feat_indices.npy holds int64 ids (they are narrowed on first
   * use). Read them through hs__dataset_sparse_cols. */
  const int32_t *feat_col;
  const void *feat_val;     /* [feat_nnz] feat_dtype values, or NULL: binary */
  int64_t feat_nnz;
  int32_t feat_row_nnz_max; /* most non-zeros in one row */

  const int32_t *labels;  /* [n] in [-1, num_classes) or NULL */
  const int32_t *split[HS_SPLIT_COUNT_]; /* vertex ids, or NULL */
  int64_t split_n[HS_SPLIT_COUNT_];

  uint64_t topology_bytes; /* indptr (int64) + indices (int32) + weights */
  uint64_t feature_bytes;  /* n * feat_row_bytes, or the sparse arrays */
  /* Bytes hs__dataset_free_topology released; while non-zero, indptr,
   * indices and weights are NULL (n, e and topology_bytes stay). */
  uint64_t topology_freed;
} hs_graph;

/* The view of an open dataset (never NULL for a valid handle). */
const hs_graph *hs__dataset_graph(const hs_dataset *ds);
/* Release the host copy of the topology (unmap or free indptr, indices
 * and weights) and return the bytes released (0 when already released).
 * Whoever still holds the graph's pointers must not use them afterwards;
 * code that needs the topology checks hs__graph_topology. */
uint64_t hs__dataset_free_topology(hs_dataset *ds);
/* A copy of the features (feat.npy) in anonymous memory the kernel is
 * asked to back with 2 MiB pages (madvise MADV_HUGEPAGE), so that
 * gathering random rows costs a page walk per 2 MiB instead of per 4 KiB.
 * Made once per dataset, under the dataset's lock, on the first call, and
 * kept until hs_dataset_close; the graph view (`feat` included) does not
 * change, so sessions reading the file mapping meanwhile are unaffected.
 * *copy: the copy, or NULL when there are no features or the host gives no
 * huge pages on request; *moved: bytes copied by this call (0 when the copy
 * existed). HS_ERR_NOMEM when it cannot be allocated (nothing changes). */
hs_status hs__dataset_features_huge(hs_dataset *ds, const void **copy, uint64_t *moved);

/* HS_OK while the graph's topology is in host memory, else HS_ERR_STATE
 * naming `what` needed it. */
hs_status hs__graph_topology(const hs_graph *g, const char *what);

/* The sparse column ids as int32 in memory ([feat_nnz]), for gathering
 * rows from memory: the mapping of feat_indices.npy when it holds int32
 * ids; int64 ones are read again and narrowed into a copy on the first
 * call (under the dataset's lock, range-checked again), kept until
 * hs_dataset_close. Code that reads the files through the sparse host tier
 * never calls this, so that no copy is made. *col = NULL and HS_OK without
 * sparse features; on failure (HS_ERR_NOMEM, or HS_ERR_IO / HS_ERR_FORMAT
 * naming the file when it changed since the open) *col = NULL and a later
 * call tries again. */
hs_status hs__dataset_sparse_cols(hs_dataset *ds, const int32_t **col);

/* Drop the pages of the mapped sparse column ids and values (int32
 * feat_col, feat_val when mapped) from the process's resident set, as the
 * sparse host tier reads them from the files instead. The view does not
 * change: a later read through it faults them in again from the file.
 * int64 column ids are never resident after the open (a copy narrowed by
 * hs__dataset_sparse_cols for another user stays). Returns the bytes of the
 * mappings concerned. */
uint64_t hs__dataset_sparse_drop_pages(hs_dataset *ds);

/* The directory the dataset was opened from (e.g. to read feat.npy
 * without the mapping). */
const char *hs__dataset_dir(const hs_dataset *ds);

#endif
