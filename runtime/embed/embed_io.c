/* Saving and loading a store.
 *
 * Section format, every field little-endian:
 *   char[8] "HSEMBED1"
 *   u32 version (1, or 2 for a store with a memory budget), dim,
 *       n_tables, optimizer, state width, admit_after
 *       (optimizer: hs_embed_optim's number, 0 sgd .. 4 elementwise-adagrad;
 *       a store loads only a section of its own optimizer and width)
 *   u64 seed, last training tick + 1 (0: none)
 *   per table: u64 rows, u64 counts,
 *              rows by increasing id: u64 id, u32 tick, f32 row[dim],
 *                                     f32 state[state width]
 *              counts by increasing id: u64 id, u32 sightings, u32 tick
 *   version 2: u32 shards_log2, then per shard (tables in order, shards
 *              in order): u32 index entries, u32 records allocated,
 *              u32 admission count entries
 *   u32 CRC-32 (zlib) of the section's bytes before it
 * A loaded store continues as the saved one would have: rows, optimizer
 * states, last-use ticks (eviction order) and admission counts, and, from
 * a version 2 section into a store with a budget and the same shard count,
 * the capacities the budget counts (a store rebuilt compactly would hold
 * fewer bytes and evict later). Version 1 files still load (compactly);
 * stores without a budget still write version 1, byte for byte as
 * before. */
#include <errno.h>
#include <stdlib.h>

#include "embed/embed_int.h"

static const char magic[8] = {'H', 'S', 'E', 'M', 'B', 'E', 'D', '1'};
#define EMBED_FILE_VERSION 1u
/* With the capacities of each shard (stores with a memory budget). */
#define EMBED_FILE_VERSION_CAPS 2u
/* Capacities a version 2 section may give (index or count entries). */
#define CAP_LIMIT (1u << 27)

typedef struct id_ref {
  uint64_t id;
  const void *p;
} id_ref;

static int cmp_ref(const void *a, const void *b) {
  uint64_t x = ((const id_ref *)a)->id, y = ((const id_ref *)b)->id;
  return x < y ? -1 : x > y;
}

hs_status hs__embed_write(const hs_embed *e, hs_afile *a) {
  int32_t d = e->cfg.dim, sw = e->state_w;
  hs__afile_crc_reset(a);
  hs__afile_write(a, magic, sizeof magic);
  bool caps = e->cfg.memory_budget != 0;
  uint32_t hdr[6] = {caps ? EMBED_FILE_VERSION_CAPS : EMBED_FILE_VERSION, (uint32_t)d,
                     (uint32_t)e->cfg.n_tables, (uint32_t)e->cfg.optim.kind, (uint32_t)sw,
                     e->cfg.admit_after};
  for (int i = 0; i < 6; i++) hs__afile_u32(a, hdr[i]);
  hs__afile_u64(a, e->cfg.seed);
  hs__afile_u64(a, (uint64_t)(e->last_tick + 1));
  id_ref *refs = NULL;
  size_t refs_cap = 0;
  hs_status st = HS_OK;
  for (int32_t t = 0; t < e->cfg.n_tables && st == HS_OK; t++) {
    size_t n = 0, np = 0;
    for (int32_t k = 0; k < e->n_shards; k++) {
      const shard *s = &e->shards[t * e->n_shards + k];
      n += s->live;
      np += s->pend_live;
    }
    size_t want = n > np ? n : np;
    if (want > refs_cap) {
      free(refs);
      refs = malloc(want * sizeof *refs);
      refs_cap = refs ? want : 0;
      if (!refs) {
        st = hs__fail(HS_ERR_NOMEM, "%s: sorting %zu rows", a->path, want);
        break;
      }
    }
    size_t m = 0;
    for (int32_t k = 0; k < e->n_shards; k++) {
      const shard *s = &e->shards[t * e->n_shards + k];
      for (uint32_t r = 0; r < s->used; r++) {
        const uint32_t *rec = hs__embed_rec(s, r, e->stride);
        if (rec[2] != HS_EMBED_FREE) refs[m++] = (id_ref){hs__embed_rec_id(rec), rec};
      }
    }
    if (m) qsort(refs, m, sizeof *refs, cmp_ref);
    hs__afile_u64(a, m);
    hs__afile_u64(a, np);
    for (size_t i = 0; i < m; i++) {
      const uint32_t *rec = refs[i].p;
      hs__afile_u64(a, refs[i].id);
      hs__afile_u32(a, rec[2]);
      hs__afile_f32(a, (const float *)(const void *)(rec + HDR_WORDS), (size_t)(d + sw));
    }
    m = 0;
    for (int32_t k = 0; k < e->n_shards; k++) {
      const shard *s = &e->shards[t * e->n_shards + k];
      for (uint32_t i = 0; i < s->pend_cap; i++)
        if (s->pend[i].count) refs[m++] = (id_ref){s->pend[i].id, &s->pend[i]};
    }
    if (m) qsort(refs, m, sizeof *refs, cmp_ref);
    for (size_t i = 0; i < m; i++) {
      const pend_entry *p = refs[i].p;
      hs__afile_u64(a, p->id);
      hs__afile_u32(a, p->count);
      hs__afile_u32(a, p->tick);
    }
  }
  free(refs);
  if (st != HS_OK) return st;
  if (caps) {
    hs__afile_u32(a, (uint32_t)e->cfg.shards_log2);
    int64_t n_sh = (int64_t)e->cfg.n_tables * e->n_shards;
    for (int64_t g = 0; g < n_sh; g++) {
      const shard *s = &e->shards[g];
      hs__afile_u32(a, s->cap);
      hs__afile_u32(a, s->allocated);
      hs__afile_u32(a, s->pend_cap);
    }
  }
  hs__afile_crc(a);
  return a->st;
}

hs_status hs__embed_save(const hs_embed *e, const char *path) {
  hs_afile a;
  hs_status st = hs__afile_open(&a, path);
  if (st != HS_OK) return st;
  if ((st = hs__embed_write(e, &a)) != HS_OK) {
    hs__afile_abort(&a);
    return st;
  }
  return hs__afile_commit(&a);
}

/* A version 2 section's capacities: checked, and, loading into a store
 * with a budget and the same shard count, taken. */
static hs_status caps_pass(hs_embed *e, hs_rfile *r, bool load) {
  uint32_t log2;
  if (!hs__rfile_u32(r, &log2)) return r->st;
  if (log2 > 8)
    return hs__fail(HS_ERR_FORMAT, "%s: embedding store of 2^%u shards per table", r->name, log2);
  bool take = load && e->cfg.memory_budget && (int)log2 == e->cfg.shards_log2;
  int64_t n_sh = (int64_t)e->cfg.n_tables << log2;
  for (int64_t g = 0; g < n_sh; g++) {
    uint32_t c[3];
    for (int k = 0; k < 3; k++)
      if (!hs__rfile_u32(r, &c[k])) return r->st;
    if (c[0] > CAP_LIMIT || c[1] > (uint32_t)MAX_RECORDS + CHUNK_BIG || c[2] > CAP_LIMIT)
      return hs__fail(HS_ERR_FORMAT, "%s: embedding store shard %lld: capacities %u, %u, %u",
                      r->name, (long long)g, c[0], c[1], c[2]);
    hs_status st;
    if (take && (st = hs__embed_restore_capacity(e, &e->shards[g], c[0], c[1], c[2])) != HS_OK)
      return st;
  }
  return HS_OK;
}

/* One pass over a section: check it (load == false) or load it into `e`
 * (which was checked and cleared). */
static hs_status section_pass(hs_embed *e, hs_rfile *r, bool load, uint64_t *last_tick) {
  char m[8];
  int32_t d = e->cfg.dim, sw = e->state_w;
  hs__rfile_crc_reset(r);
  if (!hs__rfile_read(r, m, sizeof m)) return r->st;
  if (memcmp(m, magic, sizeof m) != 0)
    return hs__fail(HS_ERR_FORMAT, "%s: not an embedding store section", r->name);
  uint32_t hdr[6];
  for (int i = 0; i < 6; i++)
    if (!hs__rfile_u32(r, &hdr[i])) return r->st;
  if (hdr[0] != EMBED_FILE_VERSION && hdr[0] != EMBED_FILE_VERSION_CAPS)
    return hs__fail(HS_ERR_UNSUPPORTED, "%s: embedding store version %u (this build reads %u "
                    "and %u)", r->name, hdr[0], EMBED_FILE_VERSION, EMBED_FILE_VERSION_CAPS);
  if (hdr[1] != (uint32_t)d || hdr[2] != (uint32_t)e->cfg.n_tables ||
      hdr[3] != (uint32_t)e->cfg.optim.kind || hdr[4] != (uint32_t)sw)
    return hs__fail(HS_ERR_INVALID_ARG, "%s: rows of %u floats in %u tables with the %s optimizer; "
                    "the store has %d in %d with %s", r->name, hdr[1], hdr[2],
                    hs__embed_optim_name((hs_embed_optim)hdr[3]) ? hs__embed_optim_name((hs_embed_optim)hdr[3]) : "unknown",
                    d, e->cfg.n_tables, hs__embed_optim_name(e->cfg.optim.kind));
  uint64_t seed, lt;
  if (!hs__rfile_u64(r, &seed) || !hs__rfile_u64(r, &lt)) return r->st;
  *last_tick = lt;
  float *vals = malloc((size_t)(d + sw) * sizeof *vals);
  if (!vals) return hs__fail(HS_ERR_NOMEM, "%s", r->name);
  hs_status st = HS_OK;
  for (int32_t t = 0; t < e->cfg.n_tables && st == HS_OK; t++) {
    uint64_t n, np;
    if (!hs__rfile_u64(r, &n) || !hs__rfile_u64(r, &np)) {
      st = r->st;
      break;
    }
    uint64_t prev = 0;
    for (uint64_t i = 0; i < n && st == HS_OK; i++) {
      uint64_t id;
      uint32_t tick;
      if (!hs__rfile_u64(r, &id) || !hs__rfile_u32(r, &tick) ||
          !hs__rfile_f32(r, vals, (size_t)(d + sw))) {
        st = r->st;
        break;
      }
      if ((i > 0 && id <= prev) || tick == HS_EMBED_FREE) {
        st = hs__fail(HS_ERR_FORMAT, "%s: table %d row %llu: id %llu after %llu, tick %u", r->name,
                      t, (unsigned long long)i, (unsigned long long)id, (unsigned long long)prev,
                      tick);
        break;
      }
      prev = id;
      if (!load) continue;
      uint64_t h = hs__embed_mix(id, t);
      shard *s = &e->shards[t * e->n_shards + hs__embed_shard_of(e, h)];
      if ((st = hs__embed_reserve(e, s, 1, 0)) != HS_OK) break;
      uint32_t *rec = hs__embed_insert(e, s, t, id, h);
      rec[2] = tick;
      memcpy(rec + HDR_WORDS, vals, (size_t)(d + sw) * sizeof *vals);
      e->st.rows++;
    }
    prev = 0;
    for (uint64_t i = 0; i < np && st == HS_OK; i++) {
      uint64_t id;
      uint32_t cnt, tick;
      if (!hs__rfile_u64(r, &id) || !hs__rfile_u32(r, &cnt) || !hs__rfile_u32(r, &tick)) {
        st = r->st;
        break;
      }
      if ((i > 0 && id <= prev) || cnt == 0) {
        st = hs__fail(HS_ERR_FORMAT, "%s: table %d admission count %llu: id %llu after %llu, "
                      "count %u", r->name, t, (unsigned long long)i, (unsigned long long)id,
                      (unsigned long long)prev, cnt);
        break;
      }
      prev = id;
      if (!load) continue;
      uint64_t h = hs__embed_mix(id, t);
      shard *s = &e->shards[t * e->n_shards + hs__embed_shard_of(e, h)];
      if ((st = hs__embed_reserve(e, s, 0, 1)) != HS_OK) break;
      hs__embed_pend_put(s, id, hs__embed_mix(id, 0), cnt, tick);
      e->st.pending++;
    }
  }
  free(vals);
  if (st == HS_OK && hdr[0] == EMBED_FILE_VERSION_CAPS) st = caps_pass(e, r, load);
  if (st == HS_OK && !hs__rfile_crc(r)) st = r->st;
  return st;
}

/* Check the section (and, `whole`, that the file ends with it), then
 * load it. */
static hs_status read_section(hs_embed *e, hs_rfile *r, bool whole) {
  off_t start = ftello(r->f);
  if (start < 0) return hs__fail(HS_ERR_IO, "%s: not seekable: %s", r->name, strerror(errno));
  uint64_t lt;
  hs_status st = section_pass(e, r, false, &lt);
  if (st != HS_OK) return st;
  if (whole && fgetc(r->f) != EOF)
    return hs__fail(HS_ERR_FORMAT, "%s: bytes after the embedding store", r->name);
  if (fseeko(r->f, start, SEEK_SET) != 0)
    return hs__fail(HS_ERR_IO, "%s: seek failed: %s", r->name, strerror(errno));
  hs__embed_clear(e);
  st = section_pass(e, r, true, &lt);
  if (st != HS_OK) {
    /* Checked a moment ago: the file changed underneath. */
    hs__embed_clear(e);
    return hs__fail_context(st, "%s changed while loading; the store was emptied", r->name);
  }
  e->last_tick = (int64_t)lt - 1;
  atomic_store(&e->applied, e->last_tick);
  return HS_OK;
}

hs_status hs__embed_read_section(hs_embed *e, hs_rfile *r, bool last) {
  return read_section(e, r, last);
}

hs_status hs__embed_load(hs_embed *e, const char *path) {
  hs_status st;
  FILE *f = hs__fopen_regular(path, "embedding table", &st);
  if (!f) return st;
  hs_rfile r;
  hs__rfile_init(&r, f, path);
  st = read_section(e, &r, true);
  fclose(f);
  return st;
}
