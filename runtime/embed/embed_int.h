/* The store's internals, shared by embed_store.c (index, records,
 * lookup, eviction), embed_optim.c (row updates) and embed_io.c (files).
 * The layout is described in hs_embed.h. */
#ifndef HS_EMBED_INT_H
#define HS_EMBED_INT_H

#include <stdatomic.h>
#include <string.h>

#include "embed/embed_slab.h"
#include "embed/hs_embed.h"
#include "sample/hs_gather.h"

enum {
  HDR_WORDS = 3,       /* id_lo, id_hi, tick */
  TAG_SHIFT = 25,      /* index entry: tag << 25 | (record + 1) */
  REC_MASK = (1u << 25) - 1,
  MAX_RECORDS = (1 << 25) - 2,
  CHUNK_BIG = 1024,    /* records per chunk once past the small ones */
  CHUNK_BIG_K = 7,     /* chunks 0..6 hold 16, 16, 32, 64, 128, 256, 512 */
  INDEX_MIN = 32,
  MAX_THREADS = 256,   /* per pool: what the per-thread arrays below hold */
};

/* Index loads stay at or below 4/5; growth is by 5/4 (hs_embed.h). */
#define LOAD_NUM 4u
#define LOAD_DEN 5u

/* An admission count (16 bytes); count 0 marks an empty entry. */
typedef struct pend_entry {
  uint64_t id;
  uint32_t count;
  uint32_t tick;
} pend_entry;

typedef struct shard {
  uint32_t *index;
  uint32_t cap;        /* index entries */
  uint32_t live;       /* records in use */
  uint32_t **chunks;
  int n_chunks, chunks_cap;
  uint32_t allocated;  /* records the chunks hold */
  uint32_t used;       /* records ever handed out (the rest never touched) */
  uint32_t free_head;  /* record + 1 of the first free one, 0: none */
  uint32_t n_free;
  pend_entry *pend;
  uint32_t pend_cap, pend_live;
  /* This lookup's missing keys (first occurrences, in order), what pass 2
   * does with them, and the growth the budget must allow. */
  int32_t *todo;
  int32_t n_todo, todo_cap;
  int32_t n_create, n_pend_new;
} shard;

/* Per-thread scratch of a lookup: the batch's dedup map (entries are
 * first occurrence + 1, keyed through the query), where the occurrences
 * of the thread's range of pass_hash start in `own` for each owner
 * (own_off[o] .. own_off[o + 1]), and an eviction histogram. */
typedef struct lk_scratch {
  int32_t *map;
  uint32_t map_cap; /* power of two */
  int32_t own_off[MAX_THREADS + 1];
  uint32_t *hist;
  uint64_t hist_older;
} lk_scratch;

struct hs_embed {
  hs_embed_cfg cfg;
  int32_t state_w;
  int32_t stride;  /* words per record */
  int32_t n_shards; /* per table */
  shard *shards;   /* n_tables x n_shards */
  uint8_t *gid_owner; /* the lookup thread of each shard: its index mod threads */
  hs_embed_slabs slabs; /* the shards' record chunks */
  hs_gather_pool *lk_pool, *up_pool;
  lk_scratch *scratch; /* one per lookup thread */
  /* The last batch whose update was applied (-1: none), written by
   * apply, read by lookup. */
  _Atomic int64_t applied;
  int64_t last_tick; /* the last training lookup, -1: none */
  /* The ticks of the last HS_EMBED_LAG training lookups (since the store
   * was created, cleared or loaded), recent[n_recent % HS_EMBED_LAG] the
   * oldest once full: which of them must be applied before an eviction. */
  uint32_t recent[HS_EMBED_LAG];
  uint32_t n_recent;
  /* Per-lookup scratch: hashes, shards (table x n_shards + shard) and
   * owners of the occurrences. */
  uint64_t *hash;
  int32_t *gid;
  uint8_t *owner;
  int32_t *own;  /* occurrences by pass_hash's range, then owner */
  int32_t *mult; /* occurrences per first occurrence */
  int32_t scratch_cap;
  hs_embed_stats st;
  _Atomic uint64_t st_misses;
};

static inline uint64_t hs__embed_mix(uint64_t id, int32_t table) {
  /* murmur3's finaliser: a bijection, so distinct ids of one table never
   * share a hash. */
  uint64_t h = id ^ (0x9e3779b97f4a7c15ull * (uint64_t)(table + 1));
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdull;
  h ^= h >> 33;
  h *= 0xc4ceb9fe1a85ec53ull;
  h ^= h >> 33;
  return h;
}

static inline uint32_t hs__embed_home(uint64_t h, uint32_t cap) {
  return (uint32_t)(((uint64_t)(uint32_t)h * cap) >> 32);
}

static inline uint32_t hs__embed_tag(uint64_t h) { return (uint32_t)(h >> 32) & 0x7fu; }

static inline int32_t hs__embed_shard_of(const hs_embed *e, uint64_t h) {
  int b = e->cfg.shards_log2;
  return b == 0 ? 0 : (int32_t)(h >> (64 - b));
}

static inline uint32_t *hs__embed_rec(const shard *s, uint32_t r, int32_t stride) {
  int k;
  uint32_t off;
  if (r < 16) {
    k = 0;
    off = r;
  } else if (r < CHUNK_BIG) {
    int lg = 31 - __builtin_clz(r);
    k = lg - 3;
    off = r - (1u << lg);
  } else {
    k = CHUNK_BIG_K + (int)((r - CHUNK_BIG) / CHUNK_BIG);
    off = (r - CHUNK_BIG) % CHUNK_BIG;
  }
  return s->chunks[k] + (size_t)off * (size_t)stride;
}

static inline uint64_t hs__embed_rec_id(const uint32_t *rec) {
  return (uint64_t)rec[0] | (uint64_t)rec[1] << 32;
}

static inline float *hs__embed_rec_row(uint32_t *rec) { return (float *)(void *)(rec + HDR_WORDS); }

/* Initial row and state of (table, id) into `rec` (header excluded). */
void hs__embed_init_row(const hs_embed *e, int32_t table, uint64_t id, uint32_t *rec);
/* One optimizer step on a row and its state. */
void hs__embed_update_row(const hs_embed_optim_cfg *o, int32_t dim, float *w, float *state,
                          const float *g);

/* Find (id, h) in a shard: the record number, or -1. */
int64_t hs__embed_find(const hs_embed *e, const shard *s, uint64_t id, uint64_t h);
/* Insert a new record for (table, id) (the index has room); returns it. */
uint32_t *hs__embed_insert(hs_embed *e, shard *s, int32_t table, uint64_t id, uint64_t h);
/* Bytes the budget counts for one shard. */
uint64_t hs__embed_shard_bytes(const hs_embed *e, const shard *s);
/* Empty every shard (records, index, counts), keeping the allocations. */
void hs__embed_clear(hs_embed *e);
/* Make room for `rows` more records and `pend` more counts in a shard
 * (index growth and chunks), outside any budget. */
hs_status hs__embed_reserve(hs_embed *e, shard *s, uint32_t rows, uint32_t pend);
/* Grow a shard's index, chunks and admission counts to at least these
 * capacities (what a saved store held), outside any budget. */
hs_status hs__embed_restore_capacity(hs_embed *e, shard *s, uint32_t cap, uint32_t allocated,
                                     uint32_t pend_cap);
/* Add an admission count entry (room reserved). */
void hs__embed_pend_put(shard *s, uint64_t id, uint64_t h, uint32_t count, uint32_t tick);

/* The table of occurrence i of a query (its own, or i mod n_fields). */
static inline int32_t hs__embed_occ_table(const hs_embed_query *q, int32_t i) {
  return q->tables ? (int32_t)q->tables[i] : i % q->n_fields;
}

/* Occurrences of each of a batch's U uniques, in increasing order (CSR
 * in b->occ_ptr, b->occ), from b->unique_of[0..n). */
static inline void hs__embed_index_occ(hs_embed_batch *b, int32_t n, int32_t U) {
  memset(b->occ_ptr, 0, ((size_t)U + 1) * sizeof *b->occ_ptr);
  for (int32_t i = 0; i < n; i++) b->occ_ptr[b->unique_of[i] + 1]++;
  for (int32_t u = 0; u < U; u++) b->occ_ptr[u + 1] += b->occ_ptr[u];
  for (int32_t i = 0; i < n; i++) b->occ[b->occ_ptr[b->unique_of[i]]++] = i;
  for (int32_t u = U; u > 0; u--) b->occ_ptr[u] = b->occ_ptr[u - 1];
  b->occ_ptr[0] = 0;
}

#endif
