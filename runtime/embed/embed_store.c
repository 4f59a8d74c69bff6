/* The embedding store: index, records, lookups, updates and eviction (see
 * hs_embed.h for the layout and the concurrency contract). */
#include <limits.h>
#include <stdlib.h>

#include "embed/embed_int.h"

/* An eviction pass frees this share of the budget's rows beyond what the
 * batch needs, so that passes (each a scan of every record) stay rare. */
#define EVICT_SLACK_NUM 1u
#define EVICT_SLACK_DEN 16u
/* Eviction histograms hold this many most recent ticks exactly; older
 * ones share one bucket. */
#define HIST_TICKS 65536u

static const char *const optim_names[HS_EMBED_OPTIM_COUNT_] = {"sgd", "adagrad", "adam", "ftrl",
                                                                "elementwise-adagrad"};

const char *hs__embed_optim_name(hs_embed_optim o) {
  return (unsigned)o < HS_EMBED_OPTIM_COUNT_ ? optim_names[o] : NULL;
}

hs_status hs__embed_optim_parse(const char *name, hs_embed_optim *out) {
  for (int i = 0; i < HS_EMBED_OPTIM_COUNT_; i++)
    if (name && strcmp(name, optim_names[i]) == 0) {
      *out = (hs_embed_optim)i;
      return HS_OK;
    }
  return hs__fail(HS_ERR_INVALID_ARG, "sparse optimizer '%s': expected sgd, adagrad, adam, "
                  "ftrl or elementwise-adagrad",
                  name ? name : "(null)");
}

void hs__embed_cfg_defaults(hs_embed_cfg *cfg) {
  memset(cfg, 0, sizeof *cfg);
  cfg->dim = 16;
  cfg->n_tables = 1;
  cfg->optim = (hs_embed_optim_cfg){.kind = HS_EMBED_ADAGRAD, .lr = 0.05f, .eps = 1e-8f,
                                    .beta1 = 0.9f, .beta2 = 0.999f, .ftrl_alpha = 0.05f,
                                    .ftrl_beta = 1.0f};
  cfg->init_range = 0.05f;
  cfg->shards_log2 = 4;
  cfg->threads = 1;
}

int32_t hs__embed_state_width(hs_embed_optim kind, int32_t dim) {
  switch (kind) {
    case HS_EMBED_SGD: return 0;
    case HS_EMBED_ADAGRAD: return 1;
    case HS_EMBED_ADAM: return 2 * dim + 1;
    case HS_EMBED_FTRL: return 2 * dim;
    case HS_EMBED_ADAGRAD_EW: return dim;
    default: return 0;
  }
}

const hs_embed_cfg *hs__embed_cfg(const hs_embed *e) { return &e->cfg; }

size_t hs__embed_record_bytes(const hs_embed *e) { return (size_t)e->stride * 4u; }

/* ---- records ------------------------------------------------------------------- */

static uint32_t chunk_records(int k) {
  return k == 0 ? 16u : k < CHUNK_BIG_K ? 1u << (k + 3) : CHUNK_BIG;
}

/* Chunks until the shard holds `want` records. */
static hs_status add_chunks(hs_embed *e, shard *s, uint64_t want) {
  if (want > MAX_RECORDS)
    return hs__fail(HS_ERR_RANGE, "embedding store: a shard would hold %llu rows (at most %d): "
                    "use more shards", (unsigned long long)want, MAX_RECORDS);
  while (s->allocated < want) {
    if (s->n_chunks == s->chunks_cap) {
      int ncap = s->chunks_cap ? 2 * s->chunks_cap : 8;
      uint32_t **nc = realloc(s->chunks, (size_t)ncap * sizeof *nc);
      if (!nc) return hs__fail(HS_ERR_NOMEM, "embedding store: chunk list");
      s->chunks = nc;
      s->chunks_cap = ncap;
    }
    uint32_t n = chunk_records(s->n_chunks);
    uint32_t *c = hs__embed_slabs_alloc(&e->slabs, (size_t)n * (size_t)e->stride * 4u);
    if (!c) return hs__fail(HS_ERR_NOMEM, "embedding store: %u rows", n);
    s->chunks[s->n_chunks++] = c;
    s->allocated += n;
  }
  return HS_OK;
}

static uint32_t next_cap(uint32_t cap) {
  uint64_t n = (uint64_t)cap + cap / 4;
  n = (n + 15) & ~(uint64_t)15;
  if (n < INDEX_MIN) n = INDEX_MIN;
  return n > UINT32_MAX ? UINT32_MAX : (uint32_t)n;
}

static bool fits(uint32_t n, uint32_t cap) { return (uint64_t)n * LOAD_DEN <= (uint64_t)cap * LOAD_NUM; }

/* The index capacity that holds `n` entries (growing from `cap`). */
static uint32_t cap_for(uint32_t cap, uint32_t n) {
  while (!fits(n, cap)) cap = next_cap(cap);
  return cap;
}

/* The index again at `ncap` entries, from the live records in memory
 * order (front to back through the chunks, where reading them in the old
 * index's order went to a record at random for each entry). Where two
 * entries collide their slots may differ from the old order's; what the
 * index finds does not. */
static hs_status grow_index(hs_embed *e, shard *s, int32_t table, uint32_t ncap) {
  uint32_t *ni = calloc(ncap, sizeof *ni);
  if (!ni) return hs__fail(HS_ERR_NOMEM, "embedding store: index of %u entries", ncap);
  for (uint32_t r = 0; r < s->used; r++) {
    const uint32_t *rec = hs__embed_rec(s, r, e->stride);
    if (rec[2] == HS_EMBED_FREE) continue;
    uint64_t h = hs__embed_mix(hs__embed_rec_id(rec), table);
    uint32_t j = hs__embed_home(h, ncap);
    while (ni[j]) j = j + 1 == ncap ? 0 : j + 1;
    ni[j] = hs__embed_tag(h) << TAG_SHIFT | (r + 1);
  }
  free(s->index);
  s->index = ni;
  s->cap = ncap;
  return HS_OK;
}

static hs_status grow_pend(shard *s, uint32_t ncap) {
  pend_entry *np = calloc(ncap, sizeof *np);
  if (!np) return hs__fail(HS_ERR_NOMEM, "embedding store: %u admission counts", ncap);
  for (uint32_t i = 0; i < s->pend_cap; i++) {
    pend_entry p = s->pend[i];
    if (!p.count) continue;
    /* The table's mix is folded into the stored hash: only the low bits
     * matter here, and they come from the id's own mix. */
    uint32_t j = hs__embed_home(hs__embed_mix(p.id, 0), ncap);
    while (np[j].count) j = j + 1 == ncap ? 0 : j + 1;
    np[j] = p;
  }
  free(s->pend);
  s->pend = np;
  s->pend_cap = ncap;
  return HS_OK;
}

static int32_t table_of(const hs_embed *e, const shard *s) {
  return (int32_t)((s - e->shards) / e->n_shards);
}

hs_status hs__embed_reserve(hs_embed *e, shard *s, uint32_t rows, uint32_t pend) {
  hs_status st;
  uint64_t live = (uint64_t)s->live + rows;
  if (live > MAX_RECORDS)
    return hs__fail(HS_ERR_RANGE, "embedding store: a shard would hold %llu rows (at most %d): "
                    "use more shards", (unsigned long long)live, MAX_RECORDS);
  uint32_t need_cap = cap_for(s->cap, (uint32_t)live);
  if (need_cap != s->cap && (st = grow_index(e, s, table_of(e, s), need_cap)) != HS_OK) return st;
  uint64_t extra = rows > s->n_free ? rows - s->n_free : 0;
  uint64_t untouched = s->allocated - s->used;
  if (extra > untouched && (st = add_chunks(e, s, (uint64_t)s->used + extra)) != HS_OK) return st;
  if (pend) {
    uint32_t pcap = cap_for(s->pend_cap, s->pend_live + pend);
    if (pcap != s->pend_cap && (st = grow_pend(s, pcap)) != HS_OK) return st;
  }
  return HS_OK;
}

hs_status hs__embed_restore_capacity(hs_embed *e, shard *s, uint32_t cap, uint32_t allocated,
                                     uint32_t pend_cap) {
  hs_status st;
  if (cap > s->cap && (st = grow_index(e, s, table_of(e, s), cap)) != HS_OK) return st;
  /* (Chunks come whole: a shard grown to its last row may hold a few
   * records more than MAX_RECORDS, which add_chunks refuses to ask for;
   * asking for MAX_RECORDS gives the same chunks.) */
  if (allocated > MAX_RECORDS) allocated = MAX_RECORDS;
  if (allocated > s->allocated && (st = add_chunks(e, s, allocated)) != HS_OK) return st;
  if (pend_cap > s->pend_cap && (st = grow_pend(s, pend_cap)) != HS_OK) return st;
  return HS_OK;
}

int64_t hs__embed_find(const hs_embed *e, const shard *s, uint64_t id, uint64_t h) {
  if (!s->cap) return -1;
  uint32_t i = hs__embed_home(h, s->cap), tag = hs__embed_tag(h);
  for (;;) {
    uint32_t en = s->index[i];
    if (!en) return -1;
    if (en >> TAG_SHIFT == tag) {
      uint32_t r = (en & REC_MASK) - 1;
      if (hs__embed_rec_id(hs__embed_rec(s, r, e->stride)) == id) return r;
    }
    i = i + 1 == s->cap ? 0 : i + 1;
  }
}

uint32_t *hs__embed_insert(hs_embed *e, shard *s, int32_t table, uint64_t id, uint64_t h) {
  uint32_t r;
  uint32_t *rec;
  if (s->free_head) {
    r = s->free_head - 1;
    rec = hs__embed_rec(s, r, e->stride);
    s->free_head = rec[0];
    s->n_free--;
  } else {
    r = s->used++;
    rec = hs__embed_rec(s, r, e->stride);
  }
  rec[0] = (uint32_t)id;
  rec[1] = (uint32_t)(id >> 32);
  hs__embed_init_row(e, table, id, rec);
  uint32_t i = hs__embed_home(h, s->cap);
  while (s->index[i]) i = i + 1 == s->cap ? 0 : i + 1;
  s->index[i] = hs__embed_tag(h) << TAG_SHIFT | (r + 1);
  s->live++;
  return rec;
}

/* ---- admission counts ------------------------------------------------------------- */

static pend_entry *pend_find(shard *s, uint64_t id, uint64_t hid) {
  if (!s->pend_cap) return NULL;
  uint32_t i = hs__embed_home(hid, s->pend_cap);
  for (;;) {
    pend_entry *p = &s->pend[i];
    if (!p->count) return NULL;
    if (p->id == id) return p;
    i = i + 1 == s->pend_cap ? 0 : i + 1;
  }
}

void hs__embed_pend_put(shard *s, uint64_t id, uint64_t hid, uint32_t count, uint32_t tick) {
  uint32_t i = hs__embed_home(hid, s->pend_cap);
  while (s->pend[i].count) i = i + 1 == s->pend_cap ? 0 : i + 1;
  s->pend[i] = (pend_entry){id, count, tick};
  s->pend_live++;
}

static void pend_remove(shard *s, pend_entry *p) {
  uint32_t i = (uint32_t)(p - s->pend), j = i;
  s->pend_live--;
  for (;;) {
    j = j + 1 == s->pend_cap ? 0 : j + 1;
    if (!s->pend[j].count) break;
    uint32_t k = hs__embed_home(hs__embed_mix(s->pend[j].id, 0), s->pend_cap);
    bool stays = i <= j ? (i < k && k <= j) : (i < k || k <= j);
    if (stays) continue;
    s->pend[i] = s->pend[j];
    i = j;
  }
  s->pend[i].count = 0;
}

/* ---- create / destroy --------------------------------------------------------------- */

uint64_t hs__embed_shard_bytes(const hs_embed *e, const shard *s) {
  return (uint64_t)s->cap * 4u + (uint64_t)s->allocated * (uint64_t)e->stride * 4u +
         (uint64_t)s->pend_cap * sizeof(pend_entry) + (uint64_t)s->chunks_cap * sizeof(void *);
}

static uint64_t fixed_bytes(const hs_embed *e) {
  /* the store, and per shard its bookkeeping and its lookup thread */
  return sizeof *e + (uint64_t)e->cfg.n_tables * (uint64_t)e->n_shards * (sizeof(shard) + 1);
}

static uint64_t total_bytes(const hs_embed *e) {
  uint64_t b = fixed_bytes(e);
  int64_t n = (int64_t)e->cfg.n_tables * e->n_shards;
  for (int64_t i = 0; i < n; i++) b += hs__embed_shard_bytes(e, &e->shards[i]);
  return b;
}

static bool finite_nonneg(float x) { return x >= 0.0f && x <= 3.4e38f; }

static hs_status check_cfg(const hs_embed_cfg *c) {
  const hs_embed_optim_cfg *o = &c->optim;
  if (c->dim < 1 || c->dim > 4096)
    return hs__fail(HS_ERR_INVALID_ARG, "embedding store: dim %d (1..4096)", c->dim);
  if (c->n_tables < 1 || c->n_tables > 65535)
    return hs__fail(HS_ERR_INVALID_ARG, "embedding store: %d tables (1..65535)", c->n_tables);
  if (c->shards_log2 < 0 || c->shards_log2 > 8)
    return hs__fail(HS_ERR_INVALID_ARG, "embedding store: shards_log2 %d (0..8)", c->shards_log2);
  if (!hs__embed_optim_name(o->kind))
    return hs__fail(HS_ERR_INVALID_ARG, "embedding store: optimizer %d", (int)o->kind);
  if (!finite_nonneg(c->init_range))
    return hs__fail(HS_ERR_INVALID_ARG, "embedding store: init_range %g", (double)c->init_range);
  if (!finite_nonneg(o->lr) || !finite_nonneg(o->weight_decay) || !finite_nonneg(o->eps) ||
      !finite_nonneg(o->initial_accumulator))
    return hs__fail(HS_ERR_INVALID_ARG, "embedding store: lr, weight_decay, eps and the initial "
                    "accumulator must be finite and >= 0");
  if (o->kind == HS_EMBED_ADAM && !(o->beta1 >= 0 && o->beta1 < 1 && o->beta2 >= 0 && o->beta2 < 1))
    return hs__fail(HS_ERR_INVALID_ARG, "embedding store: Adam betas %g, %g ([0, 1))",
                    (double)o->beta1, (double)o->beta2);
  if (o->kind == HS_EMBED_FTRL &&
      !(o->ftrl_alpha > 0 && finite_nonneg(o->ftrl_alpha) && finite_nonneg(o->ftrl_beta) &&
        finite_nonneg(o->ftrl_l1) && finite_nonneg(o->ftrl_l2)))
    return hs__fail(HS_ERR_INVALID_ARG, "embedding store: FTRL alpha > 0, beta, l1, l2 >= 0");
  if (c->threads < 0 || c->threads > MAX_THREADS)
    return hs__fail(HS_ERR_INVALID_ARG, "embedding store: %d threads (0..%d)", c->threads,
                    MAX_THREADS);
  return HS_OK;
}

hs_status hs__embed_create(const hs_embed_cfg *cfg, hs_embed **out) {
  *out = NULL;
  hs_status st = check_cfg(cfg);
  if (st != HS_OK) return st;
  hs_embed *e = calloc(1, sizeof *e);
  if (!e) return hs__fail(HS_ERR_NOMEM, "embedding store");
  e->cfg = *cfg;
  hs__embed_slabs_init(&e->slabs);
  if (e->cfg.threads == 0) e->cfg.threads = 1;
  e->state_w = hs__embed_state_width(cfg->optim.kind, cfg->dim);
  e->stride = HDR_WORDS + cfg->dim + e->state_w;
  e->n_shards = 1 << cfg->shards_log2;
  atomic_init(&e->applied, -1);
  atomic_init(&e->st_misses, 0);
  e->last_tick = -1;
  size_t n = (size_t)cfg->n_tables * (size_t)e->n_shards;
  e->shards = calloc(n, sizeof *e->shards);
  e->scratch = calloc((size_t)e->cfg.threads, sizeof *e->scratch);
  e->gid_owner = malloc(n);
  if (!e->shards || !e->scratch || !e->gid_owner) {
    st = hs__fail(HS_ERR_NOMEM, "embedding store: %zu shards", n);
    goto fail;
  }
  for (size_t g = 0; g < n; g++) e->gid_owner[g] = (uint8_t)(g % (size_t)e->cfg.threads);
  if ((st = hs__gather_pool_create(e->cfg.threads, &e->lk_pool)) != HS_OK ||
      (st = hs__gather_pool_create(e->cfg.threads, &e->up_pool)) != HS_OK)
    goto fail;
  if (cfg->memory_budget && cfg->memory_budget < fixed_bytes(e)) {
    st = hs__fail(HS_ERR_BUDGET, "embedding store: a budget of %llu bytes is below the %llu "
                  "bytes of its fixed part", (unsigned long long)cfg->memory_budget,
                  (unsigned long long)fixed_bytes(e));
    goto fail;
  }
  *out = e;
  return HS_OK;
fail:
  hs__embed_destroy(e);
  return st;
}

void hs__embed_destroy(hs_embed *e) {
  if (!e) return;
  size_t n = (size_t)e->cfg.n_tables * (size_t)e->n_shards;
  for (size_t i = 0; e->shards && i < n; i++) {
    shard *s = &e->shards[i];
    free(s->chunks);
    free(s->index);
    free(s->pend);
    free(s->todo);
  }
  free(e->shards);
  free(e->gid_owner);
  hs__embed_slabs_free(&e->slabs);
  for (int t = 0; e->scratch && t < e->cfg.threads; t++) {
    free(e->scratch[t].map);
    free(e->scratch[t].hist);
  }
  free(e->scratch);
  free(e->hash);
  free(e->gid);
  free(e->owner);
  free(e->own);
  free(e->mult);
  hs__gather_pool_destroy(e->lk_pool);
  hs__gather_pool_destroy(e->up_pool);
  free(e);
}

void hs__embed_clear(hs_embed *e) {
  size_t n = (size_t)e->cfg.n_tables * (size_t)e->n_shards;
  for (size_t i = 0; i < n; i++) {
    shard *s = &e->shards[i];
    if (s->index) memset(s->index, 0, (size_t)s->cap * 4u);
    if (s->pend) memset(s->pend, 0, (size_t)s->pend_cap * sizeof *s->pend);
    s->live = s->used = s->free_head = s->n_free = s->pend_live = 0;
  }
  e->st.rows = e->st.pending = 0;
  atomic_store(&e->applied, -1);
  e->last_tick = -1;
  e->n_recent = 0;
}

/* ---- batches ------------------------------------------------------------------------ */

hs_status hs__embed_batch_init(hs_embed_batch *b, int32_t cap, int32_t dim) {
  memset(b, 0, sizeof *b);
  if (cap < 1 || dim < 1) return hs__fail(HS_ERR_INVALID_ARG, "embedding batch %d x %d", cap, dim);
  size_t c = (size_t)cap;
  b->cap = cap;
  b->dim = dim;
  b->unique_of = malloc(c * sizeof(int32_t));
  b->occ_ptr = malloc((c + 1) * sizeof(int32_t));
  b->occ = malloc(c * sizeof(int32_t));
  b->rows = malloc(c * (size_t)dim * sizeof(float));
  b->rec = malloc(c * sizeof(void *));
  b->deferred = malloc(c);
  b->first = malloc(c * sizeof(int32_t));
  b->occ_rec = malloc(c * sizeof(void *));
  b->occ_flag = malloc(c);
  if (!b->unique_of || !b->occ_ptr || !b->occ || !b->rows || !b->rec || !b->deferred ||
      !b->first || !b->occ_rec || !b->occ_flag) {
    hs__embed_batch_free(b);
    return hs__fail(HS_ERR_NOMEM, "embedding batch of %d occurrences", cap);
  }
  return HS_OK;
}

void hs__embed_batch_free(hs_embed_batch *b) {
  free(b->unique_of);
  free(b->occ_ptr);
  free(b->occ);
  free(b->rows);
  free(b->rec);
  free(b->deferred);
  free(b->first);
  free(b->occ_rec);
  free(b->occ_flag);
  memset(b, 0, sizeof *b);
}

/* ---- lookup --------------------------------------------------------------------------- */

enum { FLAG_FOUND = 1, FLAG_DEFER = 2, FLAG_CREATE = 4 };

typedef struct lk_job {
  hs_embed *e;
  const hs_embed_query *q;
  hs_embed_batch *b;
  uint32_t tick;
  bool train;
  /* Occurrences counted per key (e->mult): what admission after K > 1
   * sightings takes; without it every missing key is created, and the
   * counts, which cost a load at random for each repeated key, are not
   * kept. */
  bool count;
  int64_t applied;
  /* Records with tick <= evictable may be evicted: tick - HS_EMBED_LAG,
   * whose batches are all applied (hs__embed_lookup checked). */
  int64_t evictable;
  uint64_t misses[MAX_THREADS];
  hs_status st[MAX_THREADS];
  /* eviction */
  int64_t evict_below; /* evict evictable records with tick < this */
  uint64_t evicted[MAX_THREADS];
} lk_job;

static inline int32_t occ_count(const hs_embed_query *q, int32_t i) {
  return q->count ? (int32_t)(q->count[i] > INT32_MAX ? INT32_MAX : q->count[i]) : 1;
}

static inline int32_t shard_gid(const hs_embed *e, int32_t table, uint64_t h) {
  return table * e->n_shards + hs__embed_shard_of(e, h);
}

static void pass_hash(void *arg, int t, int n_threads) {
  lk_job *j = arg;
  hs_embed *e = j->e;
  int32_t n = j->q->n, lo = (int32_t)((int64_t)n * t / n_threads),
          hi = (int32_t)((int64_t)n * (t + 1) / n_threads);
  int32_t *off = e->scratch[t].own_off, at[MAX_THREADS];
  memset(off, 0, (size_t)(n_threads + 1) * sizeof *off);
  /* The field of occurrence i counted along (i mod n_fields without a
   * division), the owner of a shard looked up (gid_owner). */
  const uint16_t *tables = j->q->tables;
  int32_t nf = j->q->n_fields, fld = tables ? 0 : lo % nf;
  for (int32_t i = lo; i < hi; i++) {
    int32_t tb = tables ? (int32_t)tables[i] : fld;
    if (!tables && ++fld == nf) fld = 0;
    uint64_t h = hs__embed_mix(j->q->ids[i], tb);
    int32_t g = shard_gid(e, tb, h);
    uint8_t o = e->gid_owner[g];
    e->hash[i] = h;
    e->gid[i] = g;
    e->owner[i] = o;
    if (j->count) e->mult[i] = 0;
    off[o + 1]++;
  }
  /* This range's occurrences listed by owner, each owner's in order. */
  off[0] = lo;
  for (int o = 0; o < n_threads; o++) {
    off[o + 1] += off[o];
    at[o] = off[o];
  }
  for (int32_t i = lo; i < hi; i++) e->own[at[e->owner[i]]++] = i;
}

/* Prefetch distances of pass 1, in the thread's own occurrences: the
 * dedup map's slot and the index entry FIND_AHEAD_INDEX ahead, the record
 * the index entry names FIND_AHEAD_REC ahead (the entry by then in cache).
 * The index and the records lie scattered over the store: without them
 * each find waited on two loads from memory in turn (hs__embed_find and
 * pass_find 13.4% of a DLRM epoch's CPU samples on 10^6 rows, 10.4% with
 * them). Reads only: no effect on results. */
#define FIND_AHEAD_INDEX 32
#define FIND_AHEAD_REC 16

/* Pass 1, on the thread owning each occurrence's shard: dedup, find,
 * mark, and list what is missing. The thread walks its own occurrences
 * (pass_hash's lists, range after range: in occurrence order). */
static void pass_find(void *arg, int t, int n_threads) {
  lk_job *j = arg;
  hs_embed *e = j->e;
  const hs_embed_query *q = j->q;
  hs_embed_batch *b = j->b;
  lk_scratch *sc = &e->scratch[t];
  /* The map at twice the thread's own occurrences (a power of two): it
   * finds what a larger one would, in less memory to clear and to miss. */
  uint32_t mine = 0, cap = 16;
  for (int src = 0; src < n_threads; src++)
    mine += (uint32_t)(e->scratch[src].own_off[t + 1] - e->scratch[src].own_off[t]);
  while (cap < 2u * mine) cap *= 2;
  memset(sc->map, 0, (size_t)cap * sizeof *sc->map);
  uint32_t mask = cap - 1;
  uint64_t misses = 0;
  const int32_t *own = e->own;
  for (int src = 0; src < n_threads; src++) {
    int32_t k0 = e->scratch[src].own_off[t], k1 = e->scratch[src].own_off[t + 1];
    for (int32_t k = k0; k < k1; k++) {
      /* (Written out here: GCC dropped calls of a helper holding only
       * prefetches as calls without effect.) */
      if (k + FIND_AHEAD_INDEX < k1) {
        int32_t a = own[k + FIND_AHEAD_INDEX];
        uint64_t ha = e->hash[a];
        const shard *sa = &e->shards[e->gid[a]];
        __builtin_prefetch(&sc->map[(uint32_t)(ha >> 20) & mask], 1);
        if (sa->cap) __builtin_prefetch(&sa->index[hs__embed_home(ha, sa->cap)], 0);
      }
      if (k + FIND_AHEAD_REC < k1) {
        int32_t a = own[k + FIND_AHEAD_REC];
        uint64_t ha = e->hash[a];
        const shard *sa = &e->shards[e->gid[a]];
        uint32_t en = sa->cap ? sa->index[hs__embed_home(ha, sa->cap)] : 0;
        if (en && en >> TAG_SHIFT == hs__embed_tag(ha)) {
          const char *rec = (const char *)hs__embed_rec(sa, (en & REC_MASK) - 1, e->stride);
          __builtin_prefetch(rec, 1);
          /* the row's words (copied after the pass) on the record's next line */
          __builtin_prefetch(rec + 64, 0);
        }
      }
      int32_t i = own[k];
      uint64_t h = e->hash[i], id = q->ids[i];
      int32_t g = e->gid[i];
      /* Batch-local dedup on the hash's high bits (the shard bits vary
       * least within a thread). */
      uint32_t m = (uint32_t)(h >> 20) & mask;
      int32_t f = -1;
      for (;;) {
        int32_t en = sc->map[m];
        if (!en) {
          sc->map[m] = i + 1;
          break;
        }
        if (q->ids[en - 1] == id && e->gid[en - 1] == g) { /* the same table */
          f = en - 1;
          break;
        }
        m = (m + 1) & mask;
      }
      if (f >= 0) {
        b->first[i] = f;
        if (j->count) {
          int32_t c = occ_count(q, i);
          e->mult[f] = e->mult[f] > INT32_MAX - c ? INT32_MAX : e->mult[f] + c;
        }
        continue;
      }
      b->first[i] = i;
      if (j->count) e->mult[i] = occ_count(q, i);
      shard *s = &e->shards[g];
      int64_t r = hs__embed_find(e, s, id, h);
      b->occ_flag[i] = 0;
      b->occ_rec[i] = NULL;
      if (r < 0) {
        misses++;
        if (j->train) s->todo[s->n_todo++] = i;
        continue;
      }
      uint32_t *rec = hs__embed_rec(s, (uint32_t)r, e->stride);
      b->occ_rec[i] = rec;
      b->occ_flag[i] = FLAG_FOUND;
      if (j->train) {
        if ((int64_t)rec[2] > j->applied) b->occ_flag[i] |= FLAG_DEFER;
        rec[2] = j->tick;
      }
    }
  }
  j->misses[t] = misses;
}

/* Pass 2a: admission decisions for the missing keys of each shard. */
static void pass_admit(void *arg, int t, int n_threads) {
  lk_job *j = arg;
  hs_embed *e = j->e;
  int32_t n_sh = e->cfg.n_tables * e->n_shards;
  uint32_t K = e->cfg.admit_after > 1 ? e->cfg.admit_after : 1;
  for (int32_t g = t; g < n_sh; g += n_threads) {
    shard *s = &e->shards[g];
    s->n_create = s->n_pend_new = 0;
    for (int32_t k = 0; k < s->n_todo; k++) {
      int32_t i = s->todo[k];
      uint64_t id = j->q->ids[i];
      uint32_t seen = j->count ? (uint32_t)e->mult[i] : 1;
      pend_entry *p = K > 1 ? pend_find(s, id, hs__embed_mix(id, 0)) : NULL;
      /* Touched now, so that an eviction before pass 2 keeps it. */
      if (p) p->tick = j->tick;
      if (p) seen = seen > UINT32_MAX - p->count ? UINT32_MAX : seen + p->count;
      if (seen >= K) {
        j->b->occ_flag[i] = FLAG_CREATE; /* create */
        s->n_create++;
      } else {
        j->b->occ_flag[i] = 0;
        if (!p) s->n_pend_new++;
      }
    }
  }
}

/* Pass 2b: create admitted rows, update the counts of the others. */
static void pass_create(void *arg, int t, int n_threads) {
  lk_job *j = arg;
  hs_embed *e = j->e;
  int32_t n_sh = e->cfg.n_tables * e->n_shards;
  bool count = j->count;
  for (int32_t g = t; g < n_sh; g += n_threads) {
    shard *s = &e->shards[g];
    int32_t tb = g / e->n_shards;
    if (s->n_create + s->n_pend_new > 0 &&
        (j->st[t] = hs__embed_reserve(e, s, (uint32_t)s->n_create, (uint32_t)s->n_pend_new)) != HS_OK)
      return;
    for (int32_t k = 0; k < s->n_todo; k++) {
      int32_t i = s->todo[k];
      uint64_t id = j->q->ids[i], hid = hs__embed_mix(id, 0);
      pend_entry *p = count ? pend_find(s, id, hid) : NULL;
      if (j->b->occ_flag[i] == FLAG_CREATE) {
        if (p) pend_remove(s, p);
        uint32_t *rec = hs__embed_insert(e, s, tb, id, e->hash[i]);
        rec[2] = j->tick;
        j->b->occ_rec[i] = rec;
        j->b->occ_flag[i] = FLAG_FOUND;
      } else if (p) {
        uint32_t m = (uint32_t)e->mult[i];
        p->count = p->count > UINT32_MAX - m ? UINT32_MAX : p->count + m;
        p->tick = j->tick;
      } else {
        hs__embed_pend_put(s, id, hid, (uint32_t)e->mult[i], j->tick);
      }
    }
  }
}

/* ---- eviction ---------------------------------------------------------------------------- */

/* Histogram of the ticks of evictable records (tick <= evictable): the
 * HIST_TICKS most recent exactly, older ones in one bucket. Records are
 * read in memory order. */
static void pass_hist(void *arg, int t, int n_threads) {
  lk_job *j = arg;
  hs_embed *e = j->e;
  lk_scratch *sc = &e->scratch[t];
  memset(sc->hist, 0, HIST_TICKS * sizeof *sc->hist);
  sc->hist_older = 0;
  int64_t top = j->evictable, base = top - (int64_t)HIST_TICKS + 1;
  int32_t n_sh = e->cfg.n_tables * e->n_shards;
  for (int32_t g = t; g < n_sh; g += n_threads) {
    shard *s = &e->shards[g];
    for (uint32_t r = 0; r < s->used; r++) {
      uint32_t tk = hs__embed_rec(s, r, e->stride)[2];
      if (tk == HS_EMBED_FREE || (int64_t)tk > top) continue;
      if ((int64_t)tk < base) sc->hist_older++;
      else sc->hist[(int64_t)tk - base]++;
    }
  }
}

/* Free the evictable records (tick <= evictable) with tick < evict_below
 * and rebuild the index of every shard that lost one (simpler and faster
 * than removing entries one at a time when a pass frees many). Freed
 * records join the free list in record order. */
static void pass_evict(void *arg, int t, int n_threads) {
  lk_job *j = arg;
  hs_embed *e = j->e;
  int32_t n_sh = e->cfg.n_tables * e->n_shards;
  uint64_t ev = 0;
  for (int32_t g = t; g < n_sh; g += n_threads) {
    shard *s = &e->shards[g];
    int32_t tb = g / e->n_shards;
    bool any = false;
    for (uint32_t r = 0; r < s->used && !any; r++) {
      uint32_t tk = hs__embed_rec(s, r, e->stride)[2];
      any = tk != HS_EMBED_FREE && (int64_t)tk < j->evict_below && (int64_t)tk <= j->evictable;
    }
    if (any) {
      memset(s->index, 0, (size_t)s->cap * sizeof *s->index);
      for (uint32_t r = s->used; r-- > 0;) {
        uint32_t *rec = hs__embed_rec(s, r, e->stride);
        uint32_t tk = rec[2];
        if (tk == HS_EMBED_FREE) continue;
        if ((int64_t)tk < j->evict_below && (int64_t)tk <= j->evictable) {
          rec[2] = HS_EMBED_FREE;
          rec[0] = s->free_head;
          s->free_head = r + 1;
          s->n_free++;
          s->live--;
          ev++;
          continue;
        }
        uint64_t h = hs__embed_mix(hs__embed_rec_id(rec), tb);
        uint32_t i = hs__embed_home(h, s->cap);
        while (s->index[i]) i = i + 1 == s->cap ? 0 : i + 1;
        s->index[i] = hs__embed_tag(h) << TAG_SHIFT | (r + 1);
      }
    }
    for (uint32_t i = 0; i < s->pend_cap; i++) {
      while (s->pend[i].count && (int64_t)s->pend[i].tick < j->evict_below) pend_remove(s, &s->pend[i]);
    }
  }
  j->evicted[t] = ev;
}

/* Budget growth of shard s for this lookup's creations and counts. */
static uint64_t shard_growth(const hs_embed *e, const shard *s) {
  uint64_t g = 0;
  uint32_t rows = (uint32_t)s->n_create;
  uint32_t ncap = cap_for(s->cap, s->live + rows);
  g += (uint64_t)(ncap - s->cap) * 4u;
  uint64_t extra = rows > s->n_free ? rows - s->n_free : 0;
  uint64_t untouched = s->allocated - s->used;
  if (extra > untouched) {
    uint64_t want = (uint64_t)s->used + extra, have = s->allocated;
    int k = s->n_chunks, ccap = s->chunks_cap;
    for (; have < want; k++) {
      uint32_t c = chunk_records(k);
      have += c;
      g += (uint64_t)c * (uint64_t)e->stride * 4u;
    }
    while (ccap < k) {
      g += (uint64_t)(ccap ? ccap : 8) * sizeof(void *);
      ccap = ccap ? 2 * ccap : 8;
    }
  }
  if (s->n_pend_new) {
    uint32_t pcap = cap_for(s->pend_cap, s->pend_live + (uint32_t)s->n_pend_new);
    g += (uint64_t)(pcap - s->pend_cap) * sizeof(pend_entry);
  }
  return g;
}

static uint64_t growth(const hs_embed *e) {
  uint64_t g = 0;
  int32_t n_sh = e->cfg.n_tables * e->n_shards;
  for (int32_t i = 0; i < n_sh; i++) g += shard_growth(e, &e->shards[i]);
  return g;
}

/* Evict every evictable record and count with tick < below. */
static uint64_t evict_below(hs_embed *e, lk_job *j, int64_t below) {
  j->evict_below = below;
  memset(j->evicted, 0, sizeof j->evicted);
  hs__gather_pool_run(e->lk_pool, pass_evict, j);
  uint64_t ev = 0;
  for (int t = 0; t < e->cfg.threads; t++) ev += j->evicted[t];
  e->st.rows -= ev;
  return ev;
}

/* Make the budget hold this lookup's growth: evict the least recently used
 * rows (whole ticks at a time, oldest first) to free the growth plus a
 * slack of the budget, so that passes (each a scan of every record) stay
 * rare. A free record serves only its own shard: when uneven shards still
 * need more than the budget allows, the pass is repeated asking twice as
 * much, until it fits or only rows of the last HS_EMBED_LAG batches are
 * left. */
static hs_status make_room(hs_embed *e, lk_job *j) {
  uint64_t budget = e->cfg.memory_budget;
  uint64_t now = total_bytes(e), g = growth(e);
  if (!budget || now + g <= budget) return HS_OK;
  for (int t = 0; t < e->cfg.threads; t++)
    if (!e->scratch[t].hist && !(e->scratch[t].hist = malloc(HIST_TICKS * sizeof(uint32_t))))
      return hs__fail(HS_ERR_NOMEM, "embedding store: eviction histogram");
  uint64_t rec_bytes = (uint64_t)e->stride * 4u;
  uint64_t want = (now + g - budget + budget / EVICT_SLACK_DEN * EVICT_SLACK_NUM + rec_bytes - 1) /
                  rec_bytes;
  for (;;) {
    e->st.evictions++;
    hs__gather_pool_run(e->lk_pool, pass_hist, j);
    uint64_t freed = 0;
    for (int t = 0; t < e->cfg.threads; t++) freed += e->scratch[t].hist_older;
    int64_t base = j->evictable - (int64_t)HIST_TICKS + 1, below = base;
    for (uint32_t k = 0; freed < want && k < HIST_TICKS; k++) {
      for (int t = 0; t < e->cfg.threads; t++) freed += e->scratch[t].hist[k];
      below = base + (int64_t)k + 1;
    }
    if (freed == 0)
      return hs__fail(HS_ERR_BUDGET,
                      "embedding store: a budget of %llu bytes cannot hold the %llu rows of the "
                      "last %d batches and this batch's %llu bytes of new rows and counts",
                      (unsigned long long)budget, (unsigned long long)e->st.rows, HS_EMBED_LAG,
                      (unsigned long long)growth(e));
    e->st.evicted += evict_below(e, j, below);
    if (total_bytes(e) + growth(e) <= budget) return HS_OK;
    want *= 2;
  }
}

/* Rows unused for max(expire_after, HS_EMBED_LAG) batches. */
static void expire(hs_embed *e, lk_job *j) {
  int64_t horizon =
      e->cfg.expire_after > HS_EMBED_LAG ? (int64_t)e->cfg.expire_after : HS_EMBED_LAG;
  int64_t below = (int64_t)j->tick - horizon;
  if (below <= 0) return;
  uint64_t ev = evict_below(e, j, below);
  e->st.expired += ev;
}

/* ---- copies --------------------------------------------------------------------------------- */

typedef struct copy_job {
  hs_embed *e;
  hs_embed_batch *b;
  bool deferred_only;
  const float *grads;
} copy_job;

/* Rows are prefetched this many uniques ahead of their copy (no effect on
 * results). */
#define COPY_AHEAD 8

static void pass_copy(void *arg, int t, int n_threads) {
  copy_job *c = arg;
  hs_embed_batch *b = c->b;
  int32_t d = c->e->cfg.dim, U = b->n_unique;
  int32_t lo = (int32_t)((int64_t)U * t / n_threads), hi = (int32_t)((int64_t)U * (t + 1) / n_threads);
  size_t bytes = (size_t)d * sizeof(float);
  for (int32_t u = lo; u < hi; u++) {
    if (u + COPY_AHEAD < hi && b->rec[u + COPY_AHEAD]) {
      const char *row = (const char *)hs__embed_rec_row(b->rec[u + COPY_AHEAD]);
      __builtin_prefetch(row, 0);
      __builtin_prefetch(row + bytes - 1, 0);
    }
    float *dst = b->rows + (size_t)u * (size_t)d;
    uint32_t *rec = b->rec[u];
    if (c->deferred_only) {
      if (b->deferred[u]) memcpy(dst, hs__embed_rec_row(rec), bytes);
    } else if (rec && !b->deferred[u]) {
      memcpy(dst, hs__embed_rec_row(rec), bytes);
    } else {
      memset(dst, 0, bytes);
    }
  }
}

static hs_status reserve_scratch(hs_embed *e, int32_t n) {
  if (n > e->scratch_cap) {
    free(e->hash);
    free(e->gid);
    free(e->owner);
    free(e->own);
    free(e->mult);
    e->hash = malloc((size_t)n * sizeof *e->hash);
    e->gid = malloc((size_t)n * sizeof *e->gid);
    e->owner = malloc((size_t)n);
    e->own = malloc((size_t)n * sizeof *e->own);
    e->mult = malloc((size_t)n * sizeof *e->mult);
    if (!e->hash || !e->gid || !e->owner || !e->own || !e->mult) {
      e->scratch_cap = 0;
      return hs__fail(HS_ERR_NOMEM, "embedding store: lookup of %d occurrences", n);
    }
    e->scratch_cap = n;
  }
  uint32_t want = 16;
  while (want < 2u * (uint32_t)n) want *= 2;
  for (int t = 0; t < e->cfg.threads; t++) {
    lk_scratch *sc = &e->scratch[t];
    if (sc->map_cap >= want) continue;
    free(sc->map);
    sc->map = malloc((size_t)want * sizeof *sc->map);
    if (!sc->map) {
      sc->map_cap = 0;
      return hs__fail(HS_ERR_NOMEM, "embedding store: lookup of %d occurrences", n);
    }
    sc->map_cap = want;
  }
  return HS_OK;
}

/* Count each shard's occurrences and size its todo list for them. */
static hs_status size_todo(hs_embed *e, const hs_embed_query *q) {
  int32_t n_sh = e->cfg.n_tables * e->n_shards;
  for (int32_t g = 0; g < n_sh; g++) e->shards[g].n_create = e->shards[g].n_todo = 0;
  for (int32_t i = 0; i < q->n; i++) e->shards[e->gid[i]].n_create++;
  for (int32_t g = 0; g < n_sh; g++) {
    shard *s = &e->shards[g];
    if (s->n_create > s->todo_cap) {
      int32_t ncap = s->todo_cap ? s->todo_cap : 16;
      while (ncap < s->n_create) ncap *= 2;
      int32_t *nt = realloc(s->todo, (size_t)ncap * sizeof *nt);
      if (!nt) return hs__fail(HS_ERR_NOMEM, "embedding store: lookup lists");
      s->todo = nt;
      s->todo_cap = ncap;
    }
    s->n_create = 0;
  }
  return HS_OK;
}

hs_status hs__embed_lookup(hs_embed *e, const hs_embed_query *q, uint32_t tick, bool train,
                           hs_embed_batch *b) {
  if (q->n < 0 || q->n > b->cap || b->dim != e->cfg.dim)
    return hs__fail(HS_ERR_INVALID_ARG, "embedding lookup: %d occurrences of dim %d into a batch "
                    "of %d x %d", q->n, e->cfg.dim, b->cap, b->dim);
  if (!q->tables && q->n_fields < 1)
    return hs__fail(HS_ERR_INVALID_ARG, "embedding lookup: neither tables nor a field count");
  if (!q->tables && q->n_fields > e->cfg.n_tables)
    return hs__fail(HS_ERR_INVALID_ARG, "embedding lookup: %d fields, %d tables", q->n_fields,
                    e->cfg.n_tables);
  if (q->tables)
    for (int32_t i = 0; i < q->n; i++)
      if (q->tables[i] >= e->cfg.n_tables)
        return hs__fail(HS_ERR_RANGE, "embedding lookup: occurrence %d names table %u of %d", i,
                        q->tables[i], e->cfg.n_tables);
  if (train && (tick == HS_EMBED_FREE || (int64_t)tick <= e->last_tick))
    return hs__fail(HS_ERR_INVALID_ARG, "embedding lookup: training tick %u after %lld", tick,
                    (long long)e->last_tick);
  if (train && (e->cfg.expire_after || e->cfg.memory_budget)) {
    /* Evicting may take rows of every batch up to tick - HS_EMBED_LAG:
     * those batches must all be applied (the last of them looked up is
     * among the recent ones, ticks increasing). */
    int64_t need = -1, cut = (int64_t)tick - HS_EMBED_LAG,
            applied = atomic_load_explicit(&e->applied, memory_order_acquire);
    uint32_t n = e->n_recent < HS_EMBED_LAG ? e->n_recent : HS_EMBED_LAG;
    for (uint32_t k = 0; k < n; k++)
      if ((int64_t)e->recent[k] <= cut && (int64_t)e->recent[k] > need) need = e->recent[k];
    if (need > applied)
      return hs__fail(HS_ERR_STATE, "embedding lookup of batch %u: batch %lld is not applied yet "
                      "(a store that evicts takes at most %d batches ahead of its updates)",
                      tick, (long long)need, HS_EMBED_LAG);
  }
  hs_status st;
  if ((st = reserve_scratch(e, q->n)) != HS_OK) return st;
  b->n = q->n;
  b->tick = tick;
  b->train = train;
  b->n_created = 0;
  lk_job j = {.e = e, .q = q, .b = b, .tick = tick, .train = train,
              .count = e->cfg.admit_after > 1,
              .applied = atomic_load_explicit(&e->applied, memory_order_acquire),
              .evictable = (int64_t)tick - HS_EMBED_LAG};
  if (q->n > 0) {
    hs__gather_pool_run(e->lk_pool, pass_hash, &j);
    if (train && (st = size_todo(e, q)) != HS_OK) return st;
    hs__gather_pool_run(e->lk_pool, pass_find, &j);
  }
  uint64_t misses = 0;
  for (int t = 0; t < e->cfg.threads; t++) misses += j.misses[t];
  e->st.lookups += (uint64_t)q->n;
  e->st.misses += misses;
  if (train) {
    int64_t prev = e->last_tick;
    e->last_tick = tick;
    e->recent[e->n_recent++ % HS_EMBED_LAG] = tick;
    if (e->n_recent == 2 * HS_EMBED_LAG) e->n_recent = HS_EMBED_LAG;
    if (e->cfg.expire_after) {
      /* Expiry scans every record: every eighth of the horizon is often
       * enough (a row lives at most 9/8 of it past its last use). The
       * passes come at the multiples of `every` (the first lookup of a
       * store, or the first past a multiple), a function of the ticks
       * alone, so a loaded store keeps the schedule of the saved one. */
      int64_t every = e->cfg.expire_after / 8 ? e->cfg.expire_after / 8 : 1;
      if (prev < 0 || (int64_t)tick / every != prev / every) expire(e, &j);
    }
    if (misses) {
      hs__gather_pool_run(e->lk_pool, pass_admit, &j);
      if ((st = make_room(e, &j)) != HS_OK) return st;
      for (int t = 0; t < e->cfg.threads; t++) j.st[t] = HS_OK;
      hs__gather_pool_run(e->lk_pool, pass_create, &j);
      for (int t = 0; t < e->cfg.threads; t++)
        if (j.st[t] != HS_OK) return j.st[t];
      uint64_t created = 0, pend = 0;
      int32_t n_sh = e->cfg.n_tables * e->n_shards;
      for (int32_t g = 0; g < n_sh; g++) {
        created += (uint64_t)e->shards[g].n_create;
        pend += e->shards[g].pend_live;
      }
      b->n_created = (int32_t)created;
      e->st.created += created;
      e->st.rows += created;
      if (e->cfg.admit_after > 1) e->st.admitted += created;
      e->st.pending = pend;
    }
  }
  /* Number the uniques in first-occurrence order. */
  int32_t U = 0, absent = 0, deferred = 0;
  for (int32_t i = 0; i < q->n; i++) {
    int32_t f = b->first[i];
    if (f == i) {
      b->rec[U] = b->occ_rec[i];
      b->deferred[U] = (b->occ_flag[i] & FLAG_DEFER) != 0;
      absent += b->rec[U] == NULL;
      deferred += b->deferred[U];
      b->unique_of[i] = U++;
    } else {
      b->unique_of[i] = b->unique_of[f];
    }
  }
  b->n_unique = U;
  b->n_absent = absent;
  b->n_deferred = deferred;
  b->occ_lists = !q->no_occ;
  if (b->occ_lists) hs__embed_index_occ(b, q->n, U);
  copy_job c = {.e = e, .b = b};
  hs__gather_pool_run(e->lk_pool, pass_copy, &c);
  return HS_OK;
}

int hs__embed_lookup_nicer(hs_embed *e, int by) { return hs__gather_pool_nicer(e->lk_pool, by); }

void hs__embed_refresh(hs_embed *e, hs_embed_batch *b) {
  if (!b->n_deferred) return;
  copy_job c = {.e = e, .b = b, .deferred_only = true};
  hs__gather_pool_run(e->up_pool, pass_copy, &c);
}

/* Every cache line of a record (header, row, state), APPLY_AHEAD rows
 * ahead of its update: the rows of a batch lie scattered over the store,
 * and without it the update waited on their loads (its share of an epoch's
 * CPU samples fell from 4.7% to 0.8%). No effect on results. */
#define APPLY_AHEAD 8
static inline void prefetch_lines(const uint32_t *rec, int32_t stride) {
  const char *p = (const char *)rec, *end = p + (size_t)stride * sizeof *rec;
  for (; p < end; p += 64) __builtin_prefetch(p, 1);
  __builtin_prefetch(end - 1, 1);
}

static void pass_apply(void *arg, int t, int n_threads) {
  copy_job *c = arg;
  hs_embed *e = c->e;
  hs_embed_batch *b = c->b;
  int32_t d = e->cfg.dim, U = b->n_unique;
  int32_t lo = (int32_t)((int64_t)U * t / n_threads), hi = (int32_t)((int64_t)U * (t + 1) / n_threads);
  for (int32_t u = lo; u < hi; u++) {
    if (u + APPLY_AHEAD < hi && b->rec[u + APPLY_AHEAD]) prefetch_lines(b->rec[u + APPLY_AHEAD], e->stride);
    uint32_t *rec = b->rec[u];
    if (!rec) continue;
    float *w = hs__embed_rec_row(rec);
    hs__embed_update_row(&e->cfg.optim, d, w, w + d, c->grads + (size_t)u * (size_t)d);
  }
}

void hs__embed_apply(hs_embed *e, hs_embed_batch *b, const float *grads) {
  copy_job c = {.e = e, .b = b, .grads = grads};
  hs__gather_pool_run(e->up_pool, pass_apply, &c);
  hs__embed_release(e, b->tick);
}

void hs__embed_release(hs_embed *e, uint32_t tick) {
  atomic_store_explicit(&e->applied, (int64_t)tick, memory_order_release);
}

/* ---- single rows and statistics ------------------------------------------------------------- */

static uint32_t *find_rec(const hs_embed *e, int32_t table, uint64_t id) {
  if (table < 0 || table >= e->cfg.n_tables) return NULL;
  uint64_t h = hs__embed_mix(id, table);
  const shard *s = &e->shards[shard_gid(e, table, h)];
  int64_t r = hs__embed_find(e, s, id, h);
  return r < 0 ? NULL : hs__embed_rec(s, (uint32_t)r, e->stride);
}

bool hs__embed_read(const hs_embed *e, int32_t table, uint64_t id, float *row) {
  uint32_t *rec = find_rec(e, table, id);
  if (!rec) {
    memset(row, 0, (size_t)e->cfg.dim * sizeof *row);
    return false;
  }
  memcpy(row, hs__embed_rec_row(rec), (size_t)e->cfg.dim * sizeof *row);
  return true;
}

bool hs__embed_read_state(const hs_embed *e, int32_t table, uint64_t id, float *state) {
  uint32_t *rec = find_rec(e, table, id);
  if (!rec) return false;
  memcpy(state, hs__embed_rec_row(rec) + e->cfg.dim, (size_t)e->state_w * sizeof *state);
  return true;
}

void hs__embed_stats(const hs_embed *e, hs_embed_stats *out) {
  *out = e->st;
  out->bytes = total_bytes(e);
  out->row_bytes = e->st.rows * (uint64_t)(e->cfg.dim + e->state_w) * 4u;
}
