/* The embedding store: sparse tables of float32 rows keyed by 64-bit ids,
 * held on the host (the parameter-server role: docs/architecture.md,
 * "Sparse embeddings").
 *
 * A store has n_tables tables (a CTR model: one per categorical field)
 * sharing one row layout (dim floats plus the optimizer's state) and one
 * memory budget. Rows are created on first use (no id range, no sizing),
 * optionally only once an id was seen `admit_after` times, and evicted,
 * least recently used first, when the budget would be exceeded or when
 * unused for `expire_after` batches (at least HS_EMBED_LAG).
 *
 * Layout (the memory figure of the design rests on it):
 *
 *   table t  ->  2^shards_log2 shards, chosen by the top bits of
 *                h = mix64(id, t)
 *   shard    ->  an open-addressing index of 32-bit entries (linear
 *                probing, home = fastrange(low 32 bits of h, capacity),
 *                load at most 0.8, grown by 5/4): entry 0 is empty, else
 *                bits 31..25 a 7-bit tag of h (a mismatch skips the record
 *                without touching it) and bits 24..0 the record number + 1
 *            ->  records, in chunks that never move (16, 16, 32 ... 512,
 *                then 1024 records each), so a record's address stays valid
 *                from the lookup that finds it to the update that writes it;
 *                the chunks of all shards are cut front to back from 8 MiB
 *                slabs aligned to and advised for 2 MiB huge pages
 *                (embed_slab.h), which the budget does not count beyond
 *                the chunks
 *   record   ->  u32 id_lo, u32 id_hi, u32 tick, f32 row[dim],
 *                f32 state[state_width(optimizer, dim)]
 *                (tick: the last batch that looked the row up; a free
 *                record has tick HS_EMBED_FREE and chains the free list
 *                through id_lo)
 *
 * State widths: SGD 0, row-wise Adagrad 1, element-wise Adagrad dim,
 * FTRL 2 dim, Adam 2 dim + 1. With dim 16 and row-wise Adagrad a record
 * is 80 bytes for 68 bytes of row and state, with element-wise Adagrad 140
 * for 128; the index adds 5 to 6.25 bytes per row.
 *
 * Admission counts live in a second index per shard (16-byte entries: id,
 * sightings, tick), charged to the same budget and evicted by the same
 * rule.
 *
 * Determinism: a row's initial value is a function of (seed, table, id)
 * alone (Philox), updates are per row in a fixed arithmetic order, and
 * every structural decision (creation, admission, eviction) is taken from
 * the sequence of batches, never from timing: the same batches give the
 * same bits whatever the thread count and however far the updates lag
 * behind the lookups. Records are numbered by arrival within a shard;
 * nothing observable depends on those numbers (saved files list rows by
 * id).
 *
 * Eviction lag: the training lookup of tick t evicts (by expiry or for
 * the budget) only rows whose tick is at most t - HS_EMBED_LAG, never
 * the rows of the HS_EMBED_LAG batches before it, whether or not their
 * updates were applied yet; so the effective expiry horizon is
 * max(expire_after, HS_EMBED_LAG), and the budget must hold the rows of
 * HS_EMBED_LAG batches and the new rows of one more. A store that evicts
 * (expiry or a budget) needs every earlier batch up to tick
 * t - HS_EMBED_LAG applied (or released) when it looks up batch t: at most
 * HS_EMBED_LAG batches in flight with it, which a pipeline of depth
 * HS_EMBED_LAG (the CTR default, 3) holds by itself, and deeper ones hold
 * by waiting (hs_pipe's gate); lookup refuses with HS_ERR_STATE otherwise.
 * Expiry passes come at the ticks that are multiples of
 * max(expire_after / 8, 1) (and at the first lookup of a store), so a
 * store loaded from a file expires as the saved one would have.
 *
 * Concurrency, for the CTR pipeline: one thread calls lookup for batches
 * in increasing order while another calls refresh and apply for earlier
 * batches in increasing order (each call spreads its work over its own
 * pool of threads). Only lookup changes the index, the chunks, the free
 * lists and the ticks; apply writes the rows and states of records it was
 * handed, which lookup never evicts while their batch is in flight (it
 * evicts only rows of batches applied, above). A row
 * that a batch still in flight will update is not copied by lookup
 * (`deferred`); refresh copies it once the earlier updates are applied, so
 * a batch always trains on the rows as of every earlier batch's update,
 * exactly as if nothing overlapped. */
#ifndef HS_EMBED_H
#define HS_EMBED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "core/hs_afile.h"
#include "hs_base.h"

typedef enum hs_embed_optim {
  HS_EMBED_SGD = 0,     /* w -= lr (g + wd w) */
  HS_EMBED_ADAGRAD = 1, /* row-wise: s += mean(g^2); w -= lr g / (sqrt(s) + eps) */
  HS_EMBED_ADAM = 2,    /* lazy: m, v and a step count per row, touched rows only */
  HS_EMBED_FTRL = 3,    /* FTRL-Proximal per coordinate: z, n; rows start at 0 */
  /* Per coordinate: s[k] += g[k]^2; w[k] -= lr g[k] / (sqrt(s[k]) + eps)
   * (dim floats of state; what torch.optim.Adagrad computes) */
  HS_EMBED_ADAGRAD_EW = 4,
  HS_EMBED_OPTIM_COUNT_
} hs_embed_optim;

/* "sgd", "adagrad", "adam", "ftrl", "elementwise-adagrad"; NULL for
 * anything else. The numbers are the ids saved files carry: never
 * renumbered, new ones appended. */
const char *hs__embed_optim_name(hs_embed_optim o);
hs_status hs__embed_optim_parse(const char *name, hs_embed_optim *out);

typedef struct hs_embed_optim_cfg {
  hs_embed_optim kind;
  float lr;           /* SGD, Adagrad, Adam */
  float weight_decay; /* SGD, Adagrad, Adam: L2 added to the gradient */
  float eps;          /* Adagrad, Adam */
  float beta1, beta2; /* Adam */
  float initial_accumulator; /* both Adagrads: s (every s[k]) starts here */
  float ftrl_alpha, ftrl_beta, ftrl_l1, ftrl_l2;
} hs_embed_optim_cfg;

typedef struct hs_embed_cfg {
  int32_t dim;      /* floats per row, 1..4096 */
  int32_t n_tables; /* 1..65535 */
  hs_embed_optim_cfg optim;
  float init_range; /* new rows draw U(-r, r) (FTRL: zeros) */
  uint64_t seed;
  int shards_log2;       /* shards per table, 2^(0..8); default 4 */
  uint32_t admit_after;  /* sightings before a row is created; 0 or 1: first */
  uint64_t memory_budget; /* bytes of index, records and counts; 0: none */
  /* batches unused before a row is dropped, at least HS_EMBED_LAG (a
   * smaller figure counts as HS_EMBED_LAG); 0: never */
  uint32_t expire_after;
  int threads;           /* per pool (lookup, update); 0: 1 */
} hs_embed_cfg;

/* Adagrad lr 0.05, eps 1e-8, init_range 0.05, 16 shards per table, no
 * admission threshold, no budget, one thread; the caller sets dim and
 * n_tables. Adam's betas 0.9/0.999; FTRL alpha 0.05, beta 1, l1 0, l2 0. */
void hs__embed_cfg_defaults(hs_embed_cfg *cfg);

/* Floats of optimizer state beside each row. */
int32_t hs__embed_state_width(hs_embed_optim kind, int32_t dim);

typedef struct hs_embed hs_embed;

/* HS_ERR_INVALID_ARG names a bad field; HS_ERR_BUDGET when the budget is
 * smaller than the store's fixed part. */
hs_status hs__embed_create(const hs_embed_cfg *cfg, hs_embed **out);
void hs__embed_destroy(hs_embed *e);
/* The lookup's own threads (not the caller's, and not the update's) run
 * `by` nicer from now on (hs__thread_nicer): for a lookup stage that runs
 * on a thread of its own at that priority. Returns how many did. */
int hs__embed_lookup_nicer(hs_embed *e, int by);
const hs_embed_cfg *hs__embed_cfg(const hs_embed *e);

/* ---- one batch ------------------------------------------------------------- */

/* Occurrences of a batch: n ids, occurrence i in table tables[i], or, when
 * `tables` is NULL, in table i % n_fields (example-major CTR layout:
 * example i / n_fields, field i % n_fields). */
typedef struct hs_embed_query {
  int32_t n;
  const uint64_t *ids;
  const uint16_t *tables;
  int32_t n_fields;
  /* Sightings each occurrence stands for (admission counts them); NULL:
   * one each. A sharded store's owner looks up the requesters' uniques
   * with their multiplicities, so admission sees what one store would. */
  const uint32_t *count;
  /* The caller takes no occurrence lists: b->occ_ptr and b->occ are left
   * as they were (b->occ_lists false). A CPU trainer summing DeepFM's row
   * gradients by fields, and prediction, read none. */
  bool no_occ;
} hs_embed_query;

/* What a lookup returns, in arrays the batch owns (hs__embed_batch_*):
 * unique (table, id) pairs in first-occurrence order, each occurrence's
 * unique, the rows, and the occurrences of each unique in increasing
 * order (CSR), which is what a device sums gradients along. */
typedef struct hs_embed_batch {
  int32_t cap;      /* occurrences the arrays hold */
  int32_t n;        /* occurrences of the last lookup */
  int32_t n_unique;
  uint32_t tick;    /* the batch number it was looked up as */
  bool train;
  int32_t *unique_of; /* [n] */
  int32_t *occ_ptr;   /* [n_unique + 1] */
  int32_t *occ;       /* [n] */
  bool occ_lists;     /* occ_ptr and occ are this lookup's (hs_embed_query.no_occ) */
  float *rows;        /* [n_unique x dim]; zeros for ids without a row */
  void **rec;         /* [n_unique] the record, NULL when none (not admitted) */
  uint8_t *deferred;  /* [n_unique] copied by refresh, not lookup */
  int32_t n_deferred;
  int32_t n_absent;   /* uniques without a row */
  int32_t n_created;  /* rows this lookup created */
  /* scratch for the lookup (per occurrence) */
  int32_t *first;     /* first occurrence of each occurrence's key */
  void **occ_rec;     /* record found for first occurrences */
  uint8_t *occ_flag;
  int32_t dim;
} hs_embed_batch;

hs_status hs__embed_batch_init(hs_embed_batch *b, int32_t cap, int32_t dim);
void hs__embed_batch_free(hs_embed_batch *b);

/* Look up a batch. `train`: create (or count towards admission) missing
 * rows, mark every row used by batch `tick`, evict as the budget and the
 * expiry ask, and defer rows still to be updated by a batch in flight.
 * Training ticks must increase from call to call and stay below
 * HS_EMBED_FREE. Not `train` (evaluation, prediction): read only; missing
 * rows read as zeros, nothing changes. HS_ERR_BUDGET when the budget
 * cannot hold the rows of the last HS_EMBED_LAG batches plus this one's;
 * HS_ERR_STATE, before any change, when the store evicts and an earlier
 * training batch of tick <= tick - HS_EMBED_LAG is not applied yet. */
hs_status hs__embed_lookup(hs_embed *e, const hs_embed_query *q, uint32_t tick, bool train,
                           hs_embed_batch *b);

/* Copy the deferred rows of `b` (after the updates of every earlier batch
 * were applied). */
void hs__embed_refresh(hs_embed *e, hs_embed_batch *b);

/* The optimizer step on the rows of `b` from `grads` (n_unique x dim, the
 * loss gradient with respect to each unique's row), then mark batch
 * b->tick applied. Gradients of uniques without a row are dropped. Batches
 * must be applied in lookup order. */
void hs__embed_apply(hs_embed *e, hs_embed_batch *b, const float *grads);

/* Mark batch `tick` done without an update (a training lookup whose step
 * was abandoned), so later lookups do not defer its rows for ever. */
void hs__embed_release(hs_embed *e, uint32_t tick);

/* ---- single rows, statistics, persistence --------------------------------- */

/* The row of (table, id) into `row` (dim floats); false, zeros written,
 * when there is none. Not concurrently with lookup. */
bool hs__embed_read(const hs_embed *e, int32_t table, uint64_t id, float *row);
/* The optimizer state too (state_width floats), for tests. */
bool hs__embed_read_state(const hs_embed *e, int32_t table, uint64_t id, float *state);

typedef struct hs_embed_stats {
  uint64_t rows;          /* live rows */
  uint64_t pending;       /* ids counted towards admission */
  uint64_t bytes;         /* what the budget counts: index + chunks + counts */
  uint64_t row_bytes;     /* rows x (dim + state) x 4: the raw payload */
  uint64_t created, evicted, expired, admitted;
  uint64_t lookups, misses; /* occurrences looked up; not found (absent rows) */
  uint64_t evictions;     /* eviction passes */
} hs_embed_stats;

void hs__embed_stats(const hs_embed *e, hs_embed_stats *out);
/* Bytes of one record. */
size_t hs__embed_record_bytes(const hs_embed *e);

/* Save every row (and admission count) to `path` atomically (temporary
 * file, fsync, rename), tables in order, rows by increasing id: the same
 * store gives the same bytes. */
hs_status hs__embed_save(const hs_embed *e, const char *path);
/* Replace the store's contents by a file's; refused (store unchanged)
 * when the row layout differs or the file is damaged (the file named).
 * A fresh store with the saved one's configuration then evicts as the
 * saved one would have (expiry, and the budget: a store with a budget
 * saves the capacities the budget counts, which the load takes when the
 * shard count is the same). */
hs_status hs__embed_load(hs_embed *e, const char *path);
/* The same as a section of a larger file: appended to an atomic file, or
 * read from a stream positioned at its start (which must be seekable: the
 * section, and with `last` that the file ends with it, is checked whole
 * before the store changes). A section carries its own CRC-32. */
hs_status hs__embed_write(const hs_embed *e, hs_afile *a);
hs_status hs__embed_read_section(hs_embed *e, hs_rfile *r, bool last);

#define HS_EMBED_FREE 0xffffffffu

/* The eviction lag (see "Eviction lag" above): the training lookup of
 * tick t evicts only rows last used by a batch of tick t - HS_EMBED_LAG or
 * earlier. 3: the CTR pipeline's default depth, which never waits for it;
 * more would protect more rows from the budget (and lengthen short
 * expiry horizons) for deeper pipelines only. */
#define HS_EMBED_LAG 3

#endif
