/* The sparse host tier: sparse feature rows (dataset.h's CSR form,
 * feat_indptr.npy, feat_indices.npy and the optional feat_values.npy) read
 * from disk through a cache-once-only cache of blocks held within a byte
 * budget, for sparse features larger than the host memory budget. The
 * counterpart of the dense host tier (hs_host_tier.h).
 *
 * The row offsets (N + 1 int64) are small and stay in memory: borrowed from
 * the dataset, or read from feat_indptr.npy at open. Column ids and values
 * are read with pread, never mapped (mapped pages would count in the
 * resident set and break the budget).
 *
 * A block is R consecutive rows, R chosen so that a block of rows of the
 * mean length holds about the requested bytes (by default a sixteenth of
 * the budget, kept within 4 KiB .. 4 MiB). A block's size in memory is its
 * entries' (4 bytes a column id, 4 more a float32 value unless binary). The
 * first blocks read are kept while the budget has room for them; nothing
 * ever leaves (COO). Rows of blocks not kept are read on demand, in runs
 * (rows close together in the file share one pread), never the whole block.
 *
 * Validation: at open only the cheap whole-file checks (header, dtype,
 * rank; the offsets start at 0 and never decrease when read here; the last
 * offset equals feat_indices.npy's length, and feat_values.npy's). Every
 * row is checked as it is read from the file (a kept block: all its rows,
 * once): column ids in [0, F), strictly increasing, values finite. A row
 * that breaks a rule is HS_ERR_FORMAT naming the file, the row, the element
 * and its byte; nothing is written past the output's capacity.
 *
 * The output is the in-memory sparse gather's (hs__gather_sparse,
 * sample/hs_gather.h): rows as CSR, offsets from 0, column ids int32,
 * values widened to float32; the same bits for the same rows.
 *
 * Memory: the kept blocks never exceed the budget (nor the entries there
 * are); on top of them a fixed overhead (the offsets when read here, 8
 * bytes per block, a sort workspace of 24 bytes per id of `max_ids`) and a
 * read buffer per thread that grows to the largest block or run read,
 * reported by hs__sparse_tier_stats.
 *
 * Threading: one call at a time per tier; with a pool, the call decides
 * what to read on the calling thread and the pool's threads read, check
 * and copy block by block. The pool must not run other work meanwhile. */
#ifndef HS_SPARSE_TIER_H
#define HS_SPARSE_TIER_H

#include <stddef.h>
#include <stdint.h>

#include "hetsage/dataset.h"
#include "hs_base.h"
#include "hs_rows.h"

typedef struct hs_sparse_tier hs_sparse_tier;
typedef struct hs_gather_pool hs_gather_pool; /* sample/hs_gather.h */

typedef struct hs_sparse_tier_cfg {
  const char *indices_path; /* feat_indices.npy: int32 or int64, [nnz] */
  const char *values_path;  /* feat_values.npy: float32 or float16, [nnz];
                               NULL: binary rows */
  const char *indptr_path;  /* feat_indptr.npy, read when `ptr` is NULL */
  const int64_t *ptr;       /* borrowed offsets [n_rows + 1], already checked
                               (from 0, never decreasing), or NULL */
  int64_t n_rows;           /* with `ptr`: its rows (1 .. 2^31 - 1) */
  int64_t n_cols;           /* F: column ids lie in [0, F) */
  uint64_t budget_bytes;    /* for kept blocks; 0 keeps none */
  size_t block_bytes;       /* wanted block size; 0: budget / 16 */
  int32_t max_ids;          /* ids sorted at once (larger calls go in
                               pieces); 0: 65536 */
  hs_gather_pool *pool;     /* optional, borrowed */
} hs_sparse_tier_cfg;

/* Open the files and check what is cheap to check in full (above).
 * Errors: HS_ERR_IO, HS_ERR_FORMAT (the detail names the file),
 * HS_ERR_NOMEM, HS_ERR_INVALID_ARG. */
hs_status hs__sparse_tier_open(const hs_sparse_tier_cfg *cfg, hs_sparse_tier **out);
void hs__sparse_tier_close(hs_sparse_tier *t);

typedef struct hs_sparse_tier_info {
  int64_t n_rows, n_cols, nnz;
  bool valued;             /* values present (else binary rows) */
  hs_dtype index_dtype;    /* on disk: int32 / int64 */
  hs_dtype value_dtype;    /* on disk: float32 / float16; NONE when binary */
  size_t entry_bytes;      /* in memory: 4, or 8 with values */
  int64_t rows_per_block;  /* R */
  int64_t n_blocks;
  uint64_t cache_capacity; /* bytes the kept blocks may take */
} hs_sparse_tier_info;

void hs__sparse_tier_info(const hs_sparse_tier *t, hs_sparse_tier_info *out);
/* The offsets (N + 1), borrowed or read at open; they live as long as t. */
const int64_t *hs__sparse_tier_offsets(const hs_sparse_tier *t);

/* Rows ids[0..n) (any order, repeats allowed) into out_ptr (n + 1 offsets
 * from 0), out_col and out_val (float32; may be NULL: values not copied),
 * at most `cap` entries, in id-list order. Blocks not yet kept are kept
 * while the budget allows. Errors: HS_ERR_RANGE (an id outside [0, N), or
 * more than `cap` or 2^31 - 1 entries: nothing is read), HS_ERR_FORMAT (a
 * row read breaks a rule; a block that held it is not kept), HS_ERR_IO (a
 * read failed or came back short). After an error the outputs hold
 * nothing usable, but nothing past them was written. */
hs_status hs__sparse_tier_gather(hs_sparse_tier *t, const int32_t *ids, int32_t n,
                                 int32_t *out_ptr, int32_t *out_col, float *out_val,
                                 int64_t cap);

/* The tier as a sparse row source (hs_rows.h). `t` must outlive it. */
hs_sparse_source hs__sparse_tier_source(hs_sparse_tier *t);

/* Counts since open (or the last hs__sparse_tier_stats_reset). */
typedef struct hs_sparse_tier_stats {
  int64_t lookups;         /* rows asked for */
  int64_t hits;            /* rows served from blocks already kept */
  double hit_rate;         /* hits / lookups; 0 without lookups */
  double limit;            /* kept share of the entries once full: the hit
                              rate uniform access gives */
  uint64_t bytes_read;     /* from the files (indices and values) */
  int64_t reads;           /* pread calls */
  int64_t rows_checked;    /* rows read from the files and checked */
  int64_t blocks_kept;
  uint64_t cache_bytes;    /* kept blocks' storage reserved (<= budget) */
  uint64_t cache_used;     /* of which held by kept blocks */
  uint64_t overhead_bytes; /* offsets read here, block table, workspace,
                              read buffers, the handle */
  uint64_t memory_bytes;   /* cache_bytes + overhead_bytes */
} hs_sparse_tier_stats;

void hs__sparse_tier_stats(const hs_sparse_tier *t, hs_sparse_tier_stats *out);
/* Restart the counts (not the kept blocks). */
void hs__sparse_tier_stats_reset(hs_sparse_tier *t);

#endif
