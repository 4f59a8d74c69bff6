/* The trainer-tier feature cache: cache-once-only (COO), docs/architecture.md, "The idea".
 *
 * C feature rows live in one buffer on the trainer device; the host keeps a
 * map vertex -> slot. Rows enter the cache once and are never evicted:
 *
 *  - FIRST:     the cache starts empty; every batch's misses are inserted,
 *               in local-id order, while there is room (so over an epoch the
 *               first C distinct rows fetched fill it);
 *  - DEGREE:    prefilled with the C vertices of highest in-degree (the
 *               number of neighbour lists a vertex appears in: how often
 *               neighbour sampling can reach it), ties by lower id;
 *  - PRESAMPLE: prefilled with the C vertices accessed most often over a
 *               few sampling-only epochs, ties by lower id.
 *
 * A prefill that leaves room (fewer ranked ids than C) is topped up by
 * misses as under FIRST. Slots are handed out 0, 1, 2, ... and never
 * reused, so the rows one batch inserts always occupy consecutive slots.
 * Epochs reshuffle the seeds, never the cache.
 *
 * One batch, split between the host and the device:
 *
 *   host:   hs__coo_classify(ids) -> plan: per local id its slot (hit) or
 *           -1 (miss); the misses' local and original ids, in local-id
 *           order; which misses are inserted (a prefix of them) and where.
 *   host:   the caller gathers the MISS rows, feat[plan.miss_ids[j]] for
 *           j < n_miss, into one contiguous staging area (e.g. with
 *           hs__gather). Only misses ever cross the link, contiguously.
 *   device: hs__coo_dev_upload copies the staged misses and the small index
 *           arrays to the slot's device buffers; hs__coo_dev_assemble
 *           writes the batch feature matrix X (row i = features of local
 *           id i) on the trainer and inserts the chosen misses into the
 *           cache buffer. Both only enqueue, and return events.
 *
 * The host-side core (hs_coo) touches no device, so placement-size sweeps,
 * the benchmark and the tests run it alone. The device side (hs_coo_dev)
 * borrows a core and must see the same batches, in the same order.
 *
 * Threading: nothing here locks. A core is used by one thread at a time, and
 * so is a device side with its slots. After creation and prefill the two
 * share no mutable state, so classification and assembly may run in
 * different pipeline stages (threads), in the same batch order. */
#ifndef HS_CACHE_H
#define HS_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hetsage/board.h"
#include "hs_dev.h"
#include "hs_rows.h"
#include "sample/hs_csr.h"

/* ---- the host-side core -------------------------------------------------- */

typedef struct hs_coo hs_coo;

typedef struct hs_coo_cfg {
  int64_t n_vertices; /* N: ids are in [0, N), N < 2^31 */
  int64_t capacity;   /* C: rows the cache may hold; more than N is cut to N */
  size_t row_bytes;   /* one feature row (> 0); unused with row_ptr */
  hs_cache_fill fill; /* informs stats and logs; the prefill itself is the
                         caller's call (hs__coo_prefill*) */
  /* Variable-length rows (sparse features): row v holds row_ptr[v+1] -
   * row_ptr[v] entries (the features' CSR offsets, N + 1, borrowed: they
   * must outlive the cache) of entry_bytes each, and the cache holds at
   * most entry_capacity entries beside its C rows (see "Sparse rows"
   * below). NULL: fixed rows of row_bytes. */
  const int64_t *row_ptr;
  int64_t entry_capacity;
  size_t entry_bytes;
} hs_coo_cfg;

/* Sparse rows. The cache is a pool of entries: slot s holds its row's
 * entries at pool offsets hs__coo_slot_entry(s) .. hs__coo_slot_entry(s+1),
 * slots and their entries both consecutive in insertion order. A miss is
 * inserted while both the rows and the entries have room; the first miss
 * of a batch that does not fit ends that batch's insertions (later
 * batches try again, so a short row may still enter), which keeps a
 * batch's inserted rows a prefix of its misses and one contiguous run of
 * the pool. Prefills rank rows as for fixed rows and take, in rank order,
 * every row that still fits. */

/* Allocates the map (4 bytes per vertex) and the slot list (4 bytes per
 * slot). Errors: HS_ERR_INVALID_ARG (N, C or row size out of range),
 * HS_ERR_NOMEM. */
hs_status hs__coo_create(const hs_coo_cfg *cfg, hs_coo **out);
void hs__coo_destroy(hs_coo *c);

int64_t hs__coo_vertices(const hs_coo *c);
int64_t hs__coo_capacity(const hs_coo *c);
int64_t hs__coo_rows(const hs_coo *c); /* slots filled so far */
size_t hs__coo_row_bytes(const hs_coo *c); /* 0 for sparse rows */
/* Sparse rows: whether the cache holds them; the pool's capacity and use
 * in entries; bytes per entry; where slot s's entries start in the pool
 * (s in [0, rows]: slot rows() gives the end of the filled pool). */
bool hs__coo_sparse(const hs_coo *c);
const int64_t *hs__coo_row_ptr(const hs_coo *c); /* cfg.row_ptr */
int64_t hs__coo_entry_capacity(const hs_coo *c);
int64_t hs__coo_entries(const hs_coo *c);
size_t hs__coo_entry_bytes(const hs_coo *c);
int64_t hs__coo_slot_entry(const hs_coo *c, int32_t slot);
/* Slot of vertex v, -1 when absent (v must be in range). */
int32_t hs__coo_slot_of(const hs_coo *c, int32_t v);
/* The vertices in slot order: rows() entries, valid until the next call
 * that inserts. */
const int32_t *hs__coo_slot_vertices(const hs_coo *c);

/* The classification of one batch. Allocate once per pipeline slot with
 * hs__coo_plan_alloc for the largest batch; hs__coo_classify overwrites it. */
typedef struct hs_coo_plan {
  int32_t cap;          /* most rows a batch may have */
  int32_t n;            /* rows of the classified batch */
  int32_t n_hit;
  int32_t n_miss;
  int32_t n_insert;     /* misses [0, n_insert) are inserted ... */
  int32_t insert_first; /* ... into slots insert_first + j */
  int32_t *slot;        /* [n] per local id: its slot when a hit, else -1 */
  int32_t *miss_local;  /* [n_miss] local ids of the misses, ascending */
  int32_t *miss_ids;    /* [n_miss] their original ids: the rows the host
                           gathers, in this order */
  /* Sparse rows: the inserted misses' entries go to pool offsets
   * insert_entry_first .. + n_insert_entries (the first entries staged). */
  int64_t insert_entry_first;
  int64_t n_insert_entries;
} hs_coo_plan;

hs_status hs__coo_plan_alloc(int32_t cap, hs_coo_plan *out);
void hs__coo_plan_free(hs_coo_plan *p);

/* Classify a batch's local -> original id map ids[0..n) (seeds first, as
 * the sampler reindexes them) into `plan`, insert misses while there is
 * room, and count the lookups in the epoch's stats. Ids must be distinct
 * (a reindexed batch is). Errors (the cache and stats are then unchanged):
 * HS_ERR_RANGE (an id outside [0, N)), HS_ERR_INVALID_ARG (n above the
 * plan's capacity, or an id repeated among the misses). */
hs_status hs__coo_classify(hs_coo *c, const int32_t *ids, int32_t n, hs_coo_plan *plan);

/* Per-epoch statistics. */
typedef struct hs_coo_stats {
  int64_t lookups;        /* rows looked up (every row of every batch) */
  int64_t hits;
  double hit_rate;        /* hits / lookups; 0 without lookups */
  double limit;           /* C / N: the hit rate of a full cache under
                             uniform access (docs/architecture.md, "The idea") */
  uint64_t bytes_saved;   /* hits x row bytes (sparse rows: the hits'
                             entries x entry bytes): not transferred to the
                             trainer */
  int64_t inserted;       /* rows inserted in the epoch (prefill included
                             when it happened in it) */
  int64_t rows;           /* rows held at the end */
  int64_t capacity;
  uint64_t device_bytes;  /* cache buffer in use: rows x row bytes (sparse:
                             entries x entry bytes) */
  uint64_t device_reserved; /* cache buffer allocated: capacity x row bytes
                             (sparse: entry capacity x entry bytes) */
  uint64_t host_bytes;    /* the map and the slot list (sparse: and the
                             slots' pool offsets) */
} hs_coo_stats;

/* The counts since the epoch began (the cache was created, or the last
 * hs__coo_epoch_end). */
void hs__coo_stats(const hs_coo *c, hs_coo_stats *out);
/* Close the epoch: write its stats (optional) and start counting anew. */
void hs__coo_epoch_end(hs_coo *c, hs_coo_stats *out);

/* ---- fill policies: choosing the rows of a prefill ------------------------ */

/* In-degree of every vertex: how many neighbour lists of `g` hold it
 * (occurrences in g->indices). `out` has g->n entries. */
void hs__coo_in_degree(const hs_csr *g, uint64_t *out);

/* A source of sampled batches for PRESAMPLE: writes the next batch's id
 * list to *ids (valid until the next call) and returns its length, 0 when
 * there is none left, or -1 on error (with the detail set). */
typedef int32_t (*hs_coo_batch_fn)(void *ctx, const int32_t **ids);

/* Add one to counts[v] for every id of every batch `next` yields (counts
 * has N entries, zeroed by the caller, so that several passes add up).
 * Errors: the callback's failure, HS_ERR_RANGE (an id outside [0, N)). */
hs_status hs__coo_count_accesses(int64_t n_vertices, hs_coo_batch_fn next, void *ctx,
                                 uint64_t *counts);

/* The `count` vertices of highest score, ties by lower id, in rank order,
 * into out[0..count). count <= n. Allocates O(n) temporarily.
 * Errors: HS_ERR_INVALID_ARG, HS_ERR_NOMEM. */
hs_status hs__coo_rank(const uint64_t *score, int64_t n, int64_t count, int32_t *out);

/* Insert ids[0..k) into slots 0..k-1 of an EMPTY cache (k <= capacity,
 * distinct ids in range, for sparse rows entries within the entry
 * capacity); counted as inserted in the current epoch. The rows reach the
 * device with hs__coo_dev_prefill (sparse: hs__coo_dev_prefill_sparse). */
hs_status hs__coo_prefill(hs_coo *c, const int32_t *ids, int64_t k);
/* Rank by score (N entries) and prefill the whole capacity (sparse rows:
 * in rank order, every row that still fits). */
hs_status hs__coo_prefill_by_score(hs_coo *c, const uint64_t *score);

/* ---- the device side --------------------------------------------------------- */

typedef struct hs_coo_dev hs_coo_dev;

/* Rows of `row_bytes` that one cache buffer can hold on `dev`: the cache is
 * one allocation (the gather kernel indexes one table), so its capacity is
 * at most the device's max allocation. Clamp the core's capacity to this
 * (and to the role's budget) before hs__coo_create. */
int64_t hs__coo_dev_max_rows(const hs_dev *dev, size_t row_bytes);

/* Allocate the cache buffer (the core's capacity x row bytes) in `ctx` for
 * `dev` and build the gather and scatter programs. `core` is borrowed and
 * must outlive the device side. Errors: HS_ERR_INVALID_ARG (the capacity
 * exceeds hs__coo_dev_max_rows), HS_ERR_OPENCL, HS_ERR_BUILD, HS_ERR_NOMEM. */
hs_status hs__coo_dev_create(const hs_ctx *ctx, const hs_dev *dev, hs_coo *core,
                             hs_coo_dev **out);
/* Waits for the cache's outstanding commands, then frees everything.
 * Destroy its slots first. */
void hs__coo_dev_destroy(hs_coo_dev *d);
/* The cache buffer (capacity x row bytes; row s holds slot s). */
cl_mem hs__coo_dev_buffer(const hs_coo_dev *d);

/* Upload the rows of every slot the core holds but the device does not yet
 * (after hs__coo_prefill), reading them from `src` in chunks of at most
 * `chunk_bytes` (0: 4 MiB) through one host bounce buffer; blocking, once
 * before training. Errors: the source's, HS_ERR_OPENCL, HS_ERR_NOMEM. */
hs_status hs__coo_dev_prefill(hs_coo_dev *d, cl_command_queue q, hs_row_source src,
                              size_t chunk_bytes);

/* Per pipeline slot: device staging for up to `cap` miss rows, the device
 * index arrays, and their host copies. Reusing a slot for the next batch
 * waits (blocking, only if still running) for its previous batch's
 * commands. */
typedef struct hs_coo_slot hs_coo_slot;
hs_status hs__coo_slot_create(hs_coo_dev *d, int32_t cap, hs_coo_slot **out);
void hs__coo_slot_destroy(hs_coo_slot *s); /* waits for its commands */
uint64_t hs__coo_slot_device_bytes(const hs_coo_slot *s);

/* Enqueue on `q` (a queue of the cache's context and device, in-order or
 * not) the host -> device copies of the plan's miss rows `miss_rows`
 * (n_miss x row bytes, gathered in plan order) and of the index arrays.
 * The copies do not block: `miss_rows` must stay unchanged until they
 * complete (the returned event, or the assemble events, which follow
 * them). `wait` (optional) gates the copies. *ev (optional) receives an
 * event the caller releases. Errors: HS_ERR_INVALID_ARG (plan larger than
 * the slot), HS_ERR_OPENCL. */
hs_status hs__coo_dev_upload(hs_coo_slot *s, cl_command_queue q, const hs_coo_plan *plan,
                             const void *miss_rows, const cl_event *wait, int n_wait,
                             cl_event *ev);

/* Enqueue, after the slot's upload (and `wait`):
 *  1. the hit gather: X[i] = cache[slot[i]] for every local id i, with the
 *     sampler's gather kernel (hs__gather_cl_enqueue). Its output is
 *     contiguous, so it runs over the whole batch; miss rows get a
 *     placeholder (slot 0) that step 2 overwrites. Skipped without hits;
 *  2. the miss scatter: X[miss_local[j]] = staged miss j (cl_kernels/
 *     cache.cl), after step 1;
 *  3. the insertion: cache[insert_first + j] = staged miss j for
 *     j < n_insert. Inserted slots are consecutive by construction, so this
 *     is one buffer copy, not a kernel.
 * Every command that reads or writes the cache buffer is ordered after the
 * previous one (across batches and slots), so a row inserted by one batch
 * is in place before a later batch's hit gather reads it. Call in the same
 * batch order as hs__coo_classify. `x` holds at least plan->n rows.
 * Events: X is complete when events[0] is; all of events[0..*n_events)
 * complete means the slot may be reused. At most 2 events are written; the
 * caller releases them. Errors: HS_ERR_INVALID_ARG (no upload for this
 * plan, prefill not uploaded), HS_ERR_OPENCL. */
hs_status hs__coo_dev_assemble(hs_coo_slot *s, cl_command_queue q, const hs_coo_plan *plan,
                               cl_mem x, const cl_event *wait, int n_wait, cl_event *events,
                               int *n_events);

/* ---- the device side for sparse rows ----------------------------------------
 *
 * The cache of a sparse core (hs__coo_sparse) is a pool of entries on the
 * device: column ids (int32) and, for valued rows (entry bytes 8), float32
 * values, slot s's at hs__coo_slot_entry(s). A batch crosses as its
 * misses' entries (staged contiguously in miss order, with their offsets)
 * and, per row, where its entries come from (8 bytes); the host computes
 * the batch's offsets (it knows every row's length) and the model reads
 * the batch's CSR arrays, which one kernel fills from the pool and the
 * staged misses. hs__coo_dev_create, _destroy, hs__coo_slot_destroy and
 * _device_bytes serve both kinds; the functions below are the sparse
 * counterparts of the others. */

/* The pool's arrays: column ids, and values (NULL for binary rows). */
void hs__coo_dev_pool(const hs_coo_dev *d, cl_mem *col, cl_mem *val);

/* Entries one pool array can hold on `dev` (one allocation each). */
int64_t hs__coo_dev_max_entries(const hs_dev *dev);

/* Upload the rows of every slot the core holds but the device does not yet
 * (after hs__coo_prefill), read from `src` in chunks of about
 * `chunk_bytes` (0: 4 MiB; at least one row), blocking, once before
 * training. Errors: the source's, HS_ERR_FORMAT (the source's rows are
 * not the lengths the core expects), HS_ERR_OPENCL, HS_ERR_NOMEM. */
hs_status hs__coo_dev_prefill_sparse(hs_coo_dev *d, cl_command_queue q, hs_sparse_source src,
                                     size_t chunk_bytes);

/* A slot for batches of up to `cap` rows holding up to `cap_entries`
 * entries together. */
hs_status hs__coo_slot_create_sparse(hs_coo_dev *d, int32_t cap, int64_t cap_entries,
                                     hs_coo_slot **out);

/* Enqueue the copies of the plan's staged misses, CSR in plan order
 * (miss_ptr n_miss + 1 offsets from 0, miss_col, miss_val: NULL for
 * binary rows), and of each row's source. As hs__coo_dev_upload: the host
 * arrays stay unchanged until the copies complete. Errors:
 * HS_ERR_INVALID_ARG (plan or entries larger than the slot, values missing
 * or unexpected), HS_ERR_OPENCL. */
hs_status hs__coo_dev_upload_sparse(hs_coo_slot *s, cl_command_queue q, const hs_coo_plan *plan,
                                    const int32_t *miss_ptr, const int32_t *miss_col,
                                    const float *miss_val, const cl_event *wait, int n_wait,
                                    cl_event *ev);

/* Enqueue, after the slot's upload (and `wait`): the batch's entries into
 * x_col / x_val (x_val unused for binary rows) at the offsets x_ptr holds
 * (plan->n + 1, on the device, written by the caller before `wait`
 * completes or on the same in-order queue before this call), each row
 * from the pool (a hit) or the staging (a miss); then the insertion of
 * the first n_insert misses' entries into the pool, one copy per array.
 * Ordering, events and errors as hs__coo_dev_assemble (X complete with
 * events[0]; at most 3 events). */
hs_status hs__coo_dev_assemble_sparse(hs_coo_slot *s, cl_command_queue q,
                                      const hs_coo_plan *plan, cl_mem x_ptr, cl_mem x_col,
                                      cl_mem x_val, const cl_event *wait, int n_wait,
                                      cl_event *events, int *n_events);

#endif
