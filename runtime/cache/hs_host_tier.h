/* The host tier: feature rows read from feat.npy on disk through a
 * cache-once-only cache of blocks held within a byte budget, for features
 * larger than the host memory budget (docs/architecture.md, "The idea").
 *
 * The file is read with pread, never mapped: mapped file pages count in the
 * process's resident set and would break the budget, while pread's pages
 * sit in the kernel's page cache, which the kernel reclaims on its own.
 *
 * A block is R consecutive rows, R chosen so that a block is about the
 * requested size (1 MiB by default, kept within 256 KiB .. 4 MiB, at least
 * one row). The first blocks read are kept until the budget is spent; after
 * that nothing enters and nothing leaves (COO). A row whose block is not
 * kept is read on its own: the rows a call needs from such a block are read
 * in runs (rows close together share one pread through a fixed scratch
 * area, isolated rows go straight to the output), never the whole block.
 *
 * Memory: the kept blocks never exceed the budget; on top of them the tier
 * holds a fixed overhead (a block of scratch per thread, a sort workspace
 * of 24 bytes per id of `max_ids`, and 4 bytes per block), reported by
 * hs__host_tier_stats.
 *
 * Threading: one call at a time per tier (calls may come from any thread);
 * with a pool, a call decides what to read on the calling thread, then the
 * pool's threads read and copy, block by block. The pool must not be
 * running other work during the call. */
#ifndef HS_HOST_TIER_H
#define HS_HOST_TIER_H

#include <stddef.h>
#include <stdint.h>

#include "hetsage/dataset.h"
#include "hs_base.h"
#include "hs_rows.h"

typedef struct hs_host_tier hs_host_tier;
typedef struct hs_gather_pool hs_gather_pool; /* sample/hs_gather.h */

typedef struct hs_host_tier_cfg {
  const char *path;      /* a feat.npy: float32 or float16, [N, F], C order */
  uint64_t budget_bytes; /* for kept blocks; 0 keeps none */
  size_t block_bytes;    /* wanted block size; 0: 1 MiB */
  int32_t max_ids;       /* ids sorted at once by a gather (larger calls go
                            in pieces); 0: 65536 */
  hs_gather_pool *pool;  /* optional, borrowed: its threads share the reads
                            and copies of a gather (several reads in flight
                            keep a disk busy); NULL: the calling thread */
} hs_host_tier_cfg;

/* Open and validate the file (hs__npy_open: header, dtype, rank, size) and
 * allocate the tier. The block storage is reserved up front but only
 * touched as blocks are read. Errors: HS_ERR_IO, HS_ERR_FORMAT (not a
 * 2-D float32/float16 array; the detail names the file), HS_ERR_NOMEM,
 * HS_ERR_INVALID_ARG. */
hs_status hs__host_tier_open(const hs_host_tier_cfg *cfg, hs_host_tier **out);
void hs__host_tier_close(hs_host_tier *t);

typedef struct hs_host_tier_info {
  int64_t n_rows;
  int64_t n_cols;
  hs_dtype dtype;
  size_t row_bytes;
  int64_t rows_per_block;  /* R */
  int64_t n_blocks;
  size_t block_bytes;      /* R x row bytes */
  int64_t block_capacity;  /* blocks the budget can keep */
} hs_host_tier_info;

void hs__host_tier_info(const hs_host_tier *t, hs_host_tier_info *out);

/* Rows ids[0..n) (any order, repeats allowed) into out_rows (n x row
 * bytes, in id-list order). Blocks not yet kept are kept while the budget
 * allows. Errors: HS_ERR_RANGE (an id outside [0, N); nothing is read),
 * HS_ERR_IO (a read failed or came back short: the detail gives the file
 * and offset; a block that failed to load is not kept, and its budget share
 * stays spent). */
hs_status hs__host_tier_gather(hs_host_tier *t, const int32_t *ids, int32_t n, void *out_rows);

/* The tier as a row source (hs_rows.h): hs__host_tier_gather. `t` must
 * outlive it. */
hs_row_source hs__host_tier_source(hs_host_tier *t);

/* Counts since open (or the last hs__host_tier_stats_reset). */
typedef struct hs_host_tier_stats {
  int64_t lookups;         /* rows asked for */
  int64_t hits;            /* rows served from blocks already kept */
  double hit_rate;         /* hits / lookups; 0 without lookups */
  double limit;            /* kept fraction of the file: capacity / blocks,
                              the hit rate uniform access gives once full */
  uint64_t bytes_read;     /* from the file */
  uint64_t page_bytes_missed; /* the 4 KiB pages holding the missed rows:
                              what any reader of them must fetch from a
                              disk (bytes_read above it is amplification:
                              whole blocks loaded to be kept, gaps merged
                              into runs) */
  int64_t reads;           /* pread calls */
  int64_t blocks_kept;
  uint64_t cache_bytes;    /* kept blocks' storage reserved (<= budget) */
  uint64_t overhead_bytes; /* scratch, workspace, block table, the handle */
  uint64_t memory_bytes;   /* cache_bytes + overhead_bytes */
} hs_host_tier_stats;

void hs__host_tier_stats(const hs_host_tier *t, hs_host_tier_stats *out);
/* Restart the counts (not the kept blocks), e.g. at an epoch's start. */
void hs__host_tier_stats_reset(hs_host_tier *t);

/* Block-level order of an epoch's seeds, for budgets below the feature
 * size: the seeds are grouped by block (id / rows_per_block), the list of
 * blocks is shuffled, then the seeds within each block, and the groups are
 * concatenated into out[0..n). Consecutive batches then touch few blocks,
 * and later epochs meet the blocks the first one kept.
 *
 * The trade-off: this changes the SGD order. A batch draws its seeds from
 * a few id ranges instead of the whole training set, so batches are less
 * independent (and, where ids correlate with labels or communities, more
 * biased within an epoch). Every seed is still visited once per epoch. It
 * is opt-in, meant for when the budget is below the feature size.
 *
 * Shuffles use Philox keyed by (seed, epoch), so the order is a pure
 * function of the seed list and the keys. Allocates O(n + blocks)
 * temporarily. Errors: HS_ERR_INVALID_ARG (rows_per_block < 1, a negative
 * id), HS_ERR_NOMEM. */
hs_status hs__block_order_seeds(const int32_t *seeds, int64_t n, int64_t rows_per_block,
                                uint64_t seed, uint32_t epoch, int32_t *out);

#endif
