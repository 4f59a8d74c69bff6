/* The host-side core of the trainer-tier COO cache: the vertex -> slot map,
 * batch classification with first-seen insertion, and per-epoch counts
 * (see hs_cache.h). */
#include <stdlib.h>
#include <string.h>

#include "hs_cache.h"

struct hs_coo {
  int64_t n;          /* vertices */
  int64_t capacity;   /* slots */
  int64_t filled;     /* slots in use: 0 .. filled-1 */
  size_t row_bytes;
  hs_cache_fill fill;
  int32_t *map;       /* [n]: slot, or -1 */
  int32_t *vertex;    /* [capacity]: vertex of each filled slot */
  /* Sparse rows (row_ptr set): the pool's entries, and per slot where its
   * entries start (slot_at[filled] is the pool's end). */
  const int64_t *row_ptr;
  int64_t entry_cap, entries;
  size_t entry_bytes;
  int64_t *slot_at;   /* [capacity + 1] */
  /* this epoch */
  int64_t lookups, hits, inserted;
  int64_t hit_entries;
};

static inline int64_t row_len(const hs_coo *c, int32_t v) {
  return c->row_ptr[v + 1] - c->row_ptr[v];
}

/* While a batch is classified, a miss seen for the first time is marked in
 * the map with MARK - j (j = its miss index), which tells a repeated miss
 * from a first one without any per-batch allocation; marks are cleared
 * before classify returns. */
#define MARK (-2)

hs_status hs__coo_create(const hs_coo_cfg *cfg, hs_coo **out) {
  *out = NULL;
  if (cfg->n_vertices < 1 || cfg->n_vertices > INT32_MAX)
    return hs__fail(HS_ERR_INVALID_ARG, "cache: %lld vertices (1 to 2^31-1)",
                    (long long)cfg->n_vertices);
  if (cfg->capacity < 0)
    return hs__fail(HS_ERR_INVALID_ARG, "cache: negative capacity %lld",
                    (long long)cfg->capacity);
  bool sparse = cfg->row_ptr != NULL;
  if (sparse ? cfg->entry_bytes == 0 || cfg->entry_capacity < 0 : cfg->row_bytes == 0)
    return hs__fail(HS_ERR_INVALID_ARG, "cache: %s of 0 bytes, or a negative entry capacity",
                    sparse ? "entries" : "rows");
  size_t reserved;
  int64_t cap = cfg->capacity < cfg->n_vertices ? cfg->capacity : cfg->n_vertices;
  if (sparse ? !hs__mul_size((size_t)cfg->entry_capacity, cfg->entry_bytes, &reserved)
             : !hs__mul_size((size_t)cap, cfg->row_bytes, &reserved))
    return hs__fail(HS_ERR_INVALID_ARG, "cache: %lld %s of %zu bytes overflow",
                    (long long)(sparse ? cfg->entry_capacity : cap), sparse ? "entries" : "rows",
                    sparse ? cfg->entry_bytes : cfg->row_bytes);
  hs_coo *c = calloc(1, sizeof *c);
  if (!c) return hs__fail(HS_ERR_NOMEM, "cache");
  c->n = cfg->n_vertices;
  c->capacity = cap;
  c->row_bytes = sparse ? 0 : cfg->row_bytes;
  c->fill = cfg->fill;
  c->row_ptr = cfg->row_ptr;
  c->entry_cap = sparse ? cfg->entry_capacity : 0;
  c->entry_bytes = sparse ? cfg->entry_bytes : 0;
  c->map = malloc(sizeof *c->map * (size_t)c->n);
  c->vertex = malloc(sizeof *c->vertex * (size_t)(cap > 0 ? cap : 1));
  if (sparse) c->slot_at = calloc((size_t)cap + 1, sizeof *c->slot_at);
  if (!c->map || !c->vertex || (sparse && !c->slot_at)) {
    hs__coo_destroy(c);
    return hs__fail(HS_ERR_NOMEM, "cache map of %lld vertices", (long long)cfg->n_vertices);
  }
  memset(c->map, 0xff, sizeof *c->map * (size_t)c->n); /* every slot -1 */
  if (sparse)
    hs__log(HS_LOG_CACHE, "trainer cache: %lld of %lld sparse rows, %lld entries (%zu B each), "
            "fill %s", (long long)cap, (long long)c->n, (long long)c->entry_cap, c->entry_bytes,
            hs_cache_fill_name(c->fill));
  else
    hs__log(HS_LOG_CACHE, "trainer cache: %lld of %lld rows (%zu B each), fill %s",
            (long long)cap, (long long)c->n, c->row_bytes, hs_cache_fill_name(c->fill));
  *out = c;
  return HS_OK;
}

void hs__coo_destroy(hs_coo *c) {
  if (!c) return;
  free(c->map);
  free(c->vertex);
  free(c->slot_at);
  free(c);
}

int64_t hs__coo_vertices(const hs_coo *c) { return c->n; }
int64_t hs__coo_capacity(const hs_coo *c) { return c->capacity; }
int64_t hs__coo_rows(const hs_coo *c) { return c->filled; }
size_t hs__coo_row_bytes(const hs_coo *c) { return c->row_bytes; }
int32_t hs__coo_slot_of(const hs_coo *c, int32_t v) { return c->map[v] >= 0 ? c->map[v] : -1; }
const int32_t *hs__coo_slot_vertices(const hs_coo *c) { return c->vertex; }
bool hs__coo_sparse(const hs_coo *c) { return c->row_ptr != NULL; }
const int64_t *hs__coo_row_ptr(const hs_coo *c) { return c->row_ptr; }
int64_t hs__coo_entry_capacity(const hs_coo *c) { return c->entry_cap; }
int64_t hs__coo_entries(const hs_coo *c) { return c->entries; }
size_t hs__coo_entry_bytes(const hs_coo *c) { return c->entry_bytes; }
int64_t hs__coo_slot_entry(const hs_coo *c, int32_t slot) {
  return c->slot_at ? c->slot_at[slot] : 0;
}

hs_status hs__coo_plan_alloc(int32_t cap, hs_coo_plan *out) {
  memset(out, 0, sizeof *out);
  /* miss marks (MARK - j) must stay representable */
  if (cap < 1 || cap > INT32_MAX / 2)
    return hs__fail(HS_ERR_INVALID_ARG, "cache plan for %d rows", cap);
  size_t b = sizeof(int32_t) * (size_t)cap;
  out->cap = cap;
  out->slot = malloc(b);
  out->miss_local = malloc(b);
  out->miss_ids = malloc(b);
  if (!out->slot || !out->miss_local || !out->miss_ids) {
    hs__coo_plan_free(out);
    return hs__fail(HS_ERR_NOMEM, "cache plan for %d rows", cap);
  }
  return HS_OK;
}

void hs__coo_plan_free(hs_coo_plan *p) {
  free(p->slot);
  free(p->miss_local);
  free(p->miss_ids);
  memset(p, 0, sizeof *p);
}

/* Undo the marks of the first `m` misses (on success after insertion, or on
 * failure part-way). */
static void clear_marks(hs_coo *c, const hs_coo_plan *p, int32_t m) {
  for (int32_t j = 0; j < m; j++)
    if (c->map[p->miss_ids[j]] <= MARK) c->map[p->miss_ids[j]] = -1;
}

hs_status hs__coo_classify(hs_coo *c, const int32_t *ids, int32_t n, hs_coo_plan *p) {
  if (n < 0 || n > p->cap)
    return hs__fail(HS_ERR_INVALID_ARG, "cache: batch of %d rows, plan holds %d", n, p->cap);
  int32_t hits = 0, m = 0;
  int64_t hit_entries = 0;
  for (int32_t i = 0; i < n; i++) {
    int32_t v = ids[i];
    if (v < 0 || v >= c->n) {
      clear_marks(c, p, m);
      return hs__fail(HS_ERR_RANGE, "cache: id %d at local %d is outside [0, %lld)", v, i,
                      (long long)c->n);
    }
    int32_t s = c->map[v];
    if (s >= 0) {
      p->slot[i] = s;
      hits++;
      if (c->slot_at) hit_entries += c->slot_at[s + 1] - c->slot_at[s];
      continue;
    }
    if (s <= MARK) {
      clear_marks(c, p, m);
      return hs__fail(HS_ERR_INVALID_ARG, "cache: id %d repeated at local ids %d and %d", v,
                      p->miss_local[MARK - s], i);
    }
    c->map[v] = MARK - m;
    p->slot[i] = -1;
    p->miss_local[m] = i;
    p->miss_ids[m] = v;
    m++;
  }
  int64_t room = c->capacity - c->filled;
  int32_t ins = room < m ? (int32_t)room : m;
  int64_t ent = 0;
  if (c->slot_at) /* the prefix of misses whose entries fit */
    for (int32_t j = 0; j < ins; j++) {
      int64_t len = row_len(c, p->miss_ids[j]);
      if (c->entries + ent + len > c->entry_cap) {
        ins = j;
        break;
      }
      ent += len;
    }
  for (int32_t j = 0; j < ins; j++) {
    int32_t slot = (int32_t)(c->filled + j);
    c->map[p->miss_ids[j]] = slot;
    c->vertex[slot] = p->miss_ids[j];
    if (c->slot_at) c->slot_at[slot + 1] = c->slot_at[slot] + row_len(c, p->miss_ids[j]);
  }
  clear_marks(c, p, m);
  p->insert_entry_first = c->entries;
  p->n_insert_entries = ent;
  c->entries += ent;
  c->hit_entries += hit_entries;
  p->n = n;
  p->n_hit = hits;
  p->n_miss = m;
  p->n_insert = ins;
  p->insert_first = (int32_t)c->filled;
  c->filled += ins;
  c->lookups += n;
  c->hits += hits;
  c->inserted += ins;
  return HS_OK;
}

hs_status hs__coo_prefill(hs_coo *c, const int32_t *ids, int64_t k) {
  if (c->filled != 0)
    return hs__fail(HS_ERR_INVALID_ARG, "cache: prefill of a cache holding %lld rows",
                    (long long)c->filled);
  if (k < 0 || k > c->capacity)
    return hs__fail(HS_ERR_INVALID_ARG, "cache: prefill of %lld rows, capacity %lld",
                    (long long)k, (long long)c->capacity);
  int64_t ent = 0;
  for (int64_t j = 0; j < k; j++) {
    int32_t v = ids[j];
    bool out = v < 0 || v >= c->n;
    if (out || c->map[v] >= 0 || (c->slot_at && ent + row_len(c, v) > c->entry_cap)) {
      for (int64_t u = 0; u < j; u++) c->map[ids[u]] = -1;
      return hs__fail(out ? HS_ERR_RANGE : HS_ERR_INVALID_ARG,
                      "cache: prefill id %d at %lld is %s", v, (long long)j,
                      out ? "out of range"
                      : c->map[v] >= 0 ? "repeated"
                                       : "beyond the entry capacity");
    }
    c->map[v] = (int32_t)j;
    c->vertex[j] = v;
    if (c->slot_at) {
      ent += row_len(c, v);
      c->slot_at[j + 1] = ent;
    }
  }
  c->filled = k;
  c->entries = ent;
  c->inserted += k;
  hs__log(HS_LOG_CACHE, "trainer cache: prefilled %lld rows (%s)", (long long)k,
          hs_cache_fill_name(c->fill));
  return HS_OK;
}

void hs__coo_stats(const hs_coo *c, hs_coo_stats *out) {
  memset(out, 0, sizeof *out);
  out->lookups = c->lookups;
  out->hits = c->hits;
  out->hit_rate = c->lookups ? (double)c->hits / (double)c->lookups : 0.0;
  out->limit = (double)c->capacity / (double)c->n;
  out->inserted = c->inserted;
  out->rows = c->filled;
  out->capacity = c->capacity;
  out->host_bytes = sizeof(int32_t) * ((uint64_t)c->n + (uint64_t)c->capacity);
  if (c->slot_at) {
    out->bytes_saved = (uint64_t)c->hit_entries * c->entry_bytes;
    out->device_bytes = (uint64_t)c->entries * c->entry_bytes;
    out->device_reserved = (uint64_t)c->entry_cap * c->entry_bytes;
    out->host_bytes += sizeof *c->slot_at * ((uint64_t)c->capacity + 1);
  } else {
    out->bytes_saved = (uint64_t)c->hits * c->row_bytes;
    out->device_bytes = (uint64_t)c->filled * c->row_bytes;
    out->device_reserved = (uint64_t)c->capacity * c->row_bytes;
  }
}

void hs__coo_epoch_end(hs_coo *c, hs_coo_stats *out) {
  hs_coo_stats st;
  hs__coo_stats(c, &st);
  hs__log(HS_LOG_CACHE,
          "trainer cache epoch: %lld lookups, hit rate %.4f (C/N %.4f), %llu B saved, "
          "%lld inserted, %lld/%lld rows",
          (long long)st.lookups, st.hit_rate, st.limit, (unsigned long long)st.bytes_saved,
          (long long)st.inserted, (long long)st.rows, (long long)st.capacity);
  if (out) *out = st;
  c->lookups = c->hits = c->inserted = c->hit_entries = 0;
}
