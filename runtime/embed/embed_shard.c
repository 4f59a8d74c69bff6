/* The embedding store sharded over ranks: routing of keys, rows and
 * gradient rows between requesters and owners (see hs_embed_shard.h). */
#include <stdlib.h>
#include <string.h>

#include "embed/embed_int.h"
#include "embed/hs_embed_shard.h"

/* A key as it travels: the id, its table and how many of the requester's
 * occurrences it stands for. */
typedef struct shard_key {
  uint64_t id;
  uint32_t table;
  uint32_t count;
} shard_key;

/* What one lookup leaves for its apply (or for nothing: reads). */
typedef struct route {
  size_t *send_n, *send_off; /* keys to each owner, and where they start */
  size_t *recv_n, *recv_off; /* keys from each requester */
  size_t *bytes_s, *offs_s, *bytes_r, *offs_r; /* the same in bytes */
  int32_t *perm;             /* send position -> this rank's unique */
  size_t perm_cap;
  shard_key *keys_s, *keys_r;
  size_t keys_s_cap, keys_r_cap;
  int64_t n_recv;            /* keys received (sum of recv_n) */
} route;

struct hs_embed_shard {
  hs_comm *c;
  int rank, size;
  hs_embed *store;
  int32_t dim;
  route rt;
  /* Owner side: the received keys as a query, its batch, the rows out and
   * the gradient rows in. */
  uint64_t *ids;
  uint16_t *tables;
  uint32_t *counts;
  size_t ids_cap, tables_cap, counts_cap;
  hs_embed_batch own;
  float *rows_s, *rows_r; /* rows to requesters / from owners */
  size_t rows_s_cap, rows_r_cap;
  float *sum;             /* per owner unique */
  size_t sum_cap;
  /* Requester side: batch-local dedup. */
  int32_t *map;
  uint32_t map_cap;
  uint32_t *mult;         /* per unique */
  size_t mult_cap;
  /* The training lookup whose apply is due. */
  bool pending;
  uint32_t pending_tick;
  bool own_looked; /* the owner looked keys up for it (some arrived) */
};

int hs__embed_owner(int32_t table, uint64_t id, int size) {
  return size > 1 ? (int)(hs__embed_mix(id, table) % (uint64_t)size) : 0;
}

/* Make *p hold at least `need` elements of `elem` bytes. */
static hs_status grow(void **p, size_t *cap, size_t need, size_t elem, const char *what) {
  if (need <= *cap && *p) return HS_OK;
  size_t n = *cap ? *cap : 64;
  while (n < need) n *= 2;
  void *q = realloc(*p, n * elem);
  if (!q) return hs__fail(HS_ERR_NOMEM, "sharded embedding store: %zu %s", n, what);
  *p = q;
  *cap = n;
  return HS_OK;
}

hs_status hs__embed_shard_create(hs_comm *c, const hs_embed_cfg *cfg, hs_embed_shard **out) {
  *out = NULL;
  if (!c || !cfg) return hs__fail(HS_ERR_INVALID_ARG, "sharded embedding store: no communicator");
  hs_embed_shard *s = calloc(1, sizeof *s);
  if (!s) return hs__fail(HS_ERR_NOMEM, "sharded embedding store");
  s->c = c;
  s->rank = hs__comm_rank(c);
  s->size = hs__comm_size(c);
  s->dim = cfg->dim;
  size_t P = (size_t)s->size;
  route *r = &s->rt;
  r->send_n = calloc(P, sizeof(size_t));
  r->send_off = calloc(P, sizeof(size_t));
  r->recv_n = calloc(P, sizeof(size_t));
  r->recv_off = calloc(P, sizeof(size_t));
  r->bytes_s = calloc(P, sizeof(size_t));
  r->offs_s = calloc(P, sizeof(size_t));
  r->bytes_r = calloc(P, sizeof(size_t));
  r->offs_r = calloc(P, sizeof(size_t));
  hs_status st = HS_OK;
  if (!r->send_n || !r->send_off || !r->recv_n || !r->recv_off || !r->bytes_s || !r->offs_s ||
      !r->bytes_r || !r->offs_r) {
    st = hs__fail(HS_ERR_NOMEM, "sharded embedding store: routes for %d ranks", s->size);
    goto fail;
  }
  if ((st = hs__embed_create(cfg, &s->store)) != HS_OK) goto fail;
  if ((st = hs__embed_batch_init(&s->own, 64, cfg->dim)) != HS_OK) goto fail;
  *out = s;
  return HS_OK;
fail:
  hs__embed_shard_destroy(s);
  return st;
}

void hs__embed_shard_destroy(hs_embed_shard *s) {
  if (!s) return;
  route *r = &s->rt;
  free(r->send_n);
  free(r->send_off);
  free(r->recv_n);
  free(r->recv_off);
  free(r->bytes_s);
  free(r->offs_s);
  free(r->bytes_r);
  free(r->offs_r);
  free(r->perm);
  free(r->keys_s);
  free(r->keys_r);
  free(s->ids);
  free(s->tables);
  free(s->counts);
  hs__embed_batch_free(&s->own);
  free(s->rows_s);
  free(s->rows_r);
  free(s->sum);
  free(s->map);
  free(s->mult);
  hs__embed_destroy(s->store);
  free(s);
}

hs_embed *hs__embed_shard_store(hs_embed_shard *s) { return s->store; }

/* This rank's uniques in first-occurrence order: b->unique_of, occ_ptr,
 * occ, n_unique, and s->mult (occurrences per unique). */
static hs_status dedup(hs_embed_shard *s, const hs_embed_query *q, hs_embed_batch *b) {
  int32_t n = q->n;
  uint32_t need = 16;
  while (need < 2u * (uint32_t)n) need *= 2;
  if (need > s->map_cap) {
    int32_t *m = realloc(s->map, (size_t)need * sizeof *m);
    if (!m) return hs__fail(HS_ERR_NOMEM, "sharded embedding store: dedup of %d keys", n);
    s->map = m;
    s->map_cap = need;
  }
  hs_status st = grow((void **)&s->mult, &s->mult_cap, (size_t)n + 1, sizeof *s->mult, "counts");
  if (st != HS_OK) return st;
  uint32_t mask = need - 1;
  memset(s->map, 0, (size_t)need * sizeof *s->map);
  int32_t U = 0;
  /* map entries: unique + 1; the unique's first occurrence gives its key */
  int32_t *first = b->first; /* per unique: its first occurrence */
  for (int32_t i = 0; i < n; i++) {
    uint64_t id = q->ids[i];
    int32_t tb = hs__embed_occ_table(q, i);
    uint32_t k = (uint32_t)(hs__embed_mix(id, tb) >> 32) & mask;
    for (;;) {
      int32_t en = s->map[k];
      if (!en) {
        s->map[k] = U + 1;
        first[U] = i;
        s->mult[U] = 0;
        b->unique_of[i] = U++;
        break;
      }
      int32_t f = first[en - 1];
      if (q->ids[f] == id && hs__embed_occ_table(q, f) == tb) {
        b->unique_of[i] = en - 1;
        break;
      }
      k = (k + 1) & mask;
    }
    uint32_t c = q->count ? q->count[i] : 1;
    uint32_t *m = &s->mult[b->unique_of[i]];
    *m = *m > UINT32_MAX - c ? UINT32_MAX : *m + c;
  }
  hs__embed_index_occ(b, n, U);
  b->occ_lists = true;
  b->n = n;
  b->n_unique = U;
  return HS_OK;
}

/* Byte counts and offsets of `n[p]` items of `elem` bytes, packed. */
static void bytes_of(const size_t *n, int P, size_t elem, size_t *bytes, size_t *offs) {
  size_t o = 0;
  for (int p = 0; p < P; p++) {
    bytes[p] = n[p] * elem;
    offs[p] = o;
    o += bytes[p];
  }
}

hs_status hs__embed_shard_lookup(hs_embed_shard *s, const hs_embed_query *q, uint32_t tick,
                                 bool train, hs_embed_batch *b) {
  if (!s || !q || !b || q->n < 0 || (q->n && !q->ids) || (!q->tables && q->n_fields < 1))
    return hs__fail(HS_ERR_INVALID_ARG, "sharded embedding lookup: bad query");
  if (q->n > b->cap || b->dim != s->dim)
    return hs__fail(HS_ERR_INVALID_ARG,
                    "sharded embedding lookup: %d occurrences of width %d into a batch of %d x %d",
                    q->n, s->dim, b->cap, b->dim);
  if (train && s->pending)
    return hs__fail(HS_ERR_STATE,
                    "sharded embedding lookup: batch %u is not applied yet (apply it first)",
                    s->pending_tick);
  /* Checked here, before any message: a key the owner would refuse must
   * not leave its peers waiting. */
  int32_t n_tables = hs__embed_cfg(s->store)->n_tables;
  if (!q->tables && q->n_fields > n_tables)
    return hs__fail(HS_ERR_INVALID_ARG, "sharded embedding lookup: %d fields, %d tables",
                    q->n_fields, n_tables);
  if (q->tables)
    for (int32_t i = 0; i < q->n; i++)
      if (q->tables[i] >= n_tables)
        return hs__fail(HS_ERR_RANGE, "sharded embedding lookup: occurrence %d names table %u "
                        "of %d", i, q->tables[i], n_tables);
  hs_status st = dedup(s, q, b);
  if (st != HS_OK) return st;
  int P = s->size;
  size_t D = (size_t)s->dim, U = (size_t)b->n_unique;
  route *r = &s->rt;

  /* Keys bucketed by owner, each bucket in unique order. */
  if ((st = grow((void **)&r->perm, &r->perm_cap, U + 1, sizeof *r->perm, "routes")) != HS_OK ||
      (st = grow((void **)&r->keys_s, &r->keys_s_cap, U + 1, sizeof *r->keys_s, "keys")) != HS_OK)
    return st;
  memset(r->send_n, 0, (size_t)P * sizeof *r->send_n);
  for (size_t u = 0; u < U; u++) {
    int32_t i = b->first[u];
    r->send_n[hs__embed_owner(hs__embed_occ_table(q, i), q->ids[i], P)]++;
  }
  size_t o = 0;
  for (int p = 0; p < P; p++) {
    r->send_off[p] = o;
    o += r->send_n[p];
  }
  /* cursors: recv_off is free until the counts arrive */
  for (int p = 0; p < P; p++) r->recv_off[p] = r->send_off[p];
  for (size_t u = 0; u < U; u++) {
    int32_t i = b->first[u], tb = hs__embed_occ_table(q, i);
    size_t j = r->recv_off[hs__embed_owner(tb, q->ids[i], P)]++;
    r->perm[j] = (int32_t)u;
    r->keys_s[j] = (shard_key){.id = q->ids[i], .table = (uint32_t)tb, .count = s->mult[u]};
  }
  if ((st = hs__comm_alltoall(s->c, r->send_n, sizeof(size_t), r->recv_n,
                              "the counts of a sharded embedding lookup")) != HS_OK)
    return st;
  int64_t K = 0;
  for (int p = 0; p < P; p++) {
    r->recv_off[p] = (size_t)K;
    K += (int64_t)r->recv_n[p];
  }
  if (K > INT32_MAX)
    return hs__fail(HS_ERR_RANGE, "sharded embedding lookup: %lld keys at rank %d",
                    (long long)K, s->rank);
  r->n_recv = K;
  if ((st = grow((void **)&r->keys_r, &r->keys_r_cap, (size_t)K + 1, sizeof *r->keys_r, "keys")) !=
      HS_OK)
    return st;
  bytes_of(r->send_n, P, sizeof(shard_key), r->bytes_s, r->offs_s);
  bytes_of(r->recv_n, P, sizeof(shard_key), r->bytes_r, r->offs_r);
  if ((st = hs__comm_alltoallv(s->c, r->keys_s, r->bytes_s, r->offs_s, r->keys_r, r->bytes_r,
                               r->offs_r, "the keys of a sharded embedding lookup")) != HS_OK)
    return st;

  /* Owner: the requesters' keys, rank after rank, as one batch. */
  if ((st = grow((void **)&s->rows_s, &s->rows_s_cap, (size_t)K * D + 1, sizeof(float), "rows")) !=
      HS_OK)
    return st;
  if (K > 0) {
    if ((st = grow((void **)&s->ids, &s->ids_cap, (size_t)K, sizeof *s->ids, "keys")) != HS_OK ||
        (st = grow((void **)&s->tables, &s->tables_cap, (size_t)K, sizeof *s->tables, "keys")) !=
            HS_OK ||
        (st = grow((void **)&s->counts, &s->counts_cap, (size_t)K, sizeof *s->counts, "keys")) !=
            HS_OK)
      return st;
    for (int64_t k = 0; k < K; k++) {
      const shard_key *key = &r->keys_r[k];
      if (key->table >= (uint32_t)n_tables || hs__embed_owner((int32_t)key->table, key->id, P) != s->rank)
        return hs__fail(HS_ERR_FORMAT, "sharded embedding lookup: rank %d was sent a key of table "
                        "%u that it does not own", s->rank, key->table);
      s->ids[k] = key->id;
      s->tables[k] = (uint16_t)key->table;
      s->counts[k] = key->count;
    }
    if (K > s->own.cap) {
      int32_t cap = (int32_t)(K > INT32_MAX / 2 ? INT32_MAX : 2 * K);
      hs__embed_batch_free(&s->own);
      if ((st = hs__embed_batch_init(&s->own, cap, s->dim)) != HS_OK) return st;
    }
    hs_embed_query oq = {.n = (int32_t)K, .ids = s->ids, .tables = s->tables, .count = s->counts};
    if ((st = hs__embed_lookup(s->store, &oq, tick, train, &s->own)) != HS_OK) return st;
    /* Nothing is in flight (each apply precedes the next lookup), so
     * nothing was deferred; refresh keeps that true if it ever is. */
    if (train) hs__embed_refresh(s->store, &s->own);
    for (int64_t k = 0; k < K; k++)
      memcpy(s->rows_s + (size_t)k * D, s->own.rows + (size_t)s->own.unique_of[k] * D, D * 4);
  }
  if (train) {
    s->pending = true;
    s->pending_tick = tick;
    s->own_looked = K > 0;
  }

  /* Rows back, in request order; scattered to the uniques. */
  if ((st = grow((void **)&s->rows_r, &s->rows_r_cap, U * D + 1, sizeof(float), "rows")) != HS_OK)
    return st;
  bytes_of(r->recv_n, P, D * 4, r->bytes_r, r->offs_r);
  bytes_of(r->send_n, P, D * 4, r->bytes_s, r->offs_s);
  if ((st = hs__comm_alltoallv(s->c, s->rows_s, r->bytes_r, r->offs_r, s->rows_r, r->bytes_s,
                               r->offs_s, "the rows of a sharded embedding lookup")) != HS_OK)
    return st;
  for (size_t j = 0; j < U; j++)
    memcpy(b->rows + (size_t)r->perm[j] * D, s->rows_r + j * D, D * 4);
  b->tick = train ? tick : 0;
  b->train = train;
  memset(b->rec, 0, U * sizeof *b->rec);
  memset(b->deferred, 0, U);
  b->n_deferred = 0;
  b->n_absent = 0;
  b->n_created = 0;
  return HS_OK;
}

hs_status hs__embed_shard_apply(hs_embed_shard *s, hs_embed_batch *b, const float *grads,
                                float weight) {
  if (!s || !b || (b->n_unique && !grads))
    return hs__fail(HS_ERR_INVALID_ARG, "sharded embedding apply: no batch or no gradients");
  if (!s->pending || !b->train || b->tick != s->pending_tick)
    return hs__fail(HS_ERR_STATE, "sharded embedding apply: batch %u is not the training "
                    "lookup awaiting its update", b->tick);
  int P = s->size;
  size_t D = (size_t)s->dim, U = (size_t)b->n_unique;
  route *r = &s->rt;
  hs_status st;
  /* The requester's gradient rows, weighted, in the lookup's send order. */
  if ((st = grow((void **)&s->rows_r, &s->rows_r_cap, U * D + 1, sizeof(float), "rows")) != HS_OK ||
      (st = grow((void **)&s->rows_s, &s->rows_s_cap, (size_t)r->n_recv * D + 1, sizeof(float),
                 "rows")) != HS_OK)
    return st;
  for (size_t j = 0; j < U; j++) {
    const float *g = grads + (size_t)r->perm[j] * D;
    float *out = s->rows_r + j * D;
    if (weight == 1.0f) {
      memcpy(out, g, D * 4);
    } else {
      for (size_t k = 0; k < D; k++) out[k] = g[k] * weight;
    }
  }
  bytes_of(r->send_n, P, D * 4, r->bytes_s, r->offs_s);
  bytes_of(r->recv_n, P, D * 4, r->bytes_r, r->offs_r);
  if ((st = hs__comm_alltoallv(s->c, s->rows_r, r->bytes_s, r->offs_s, s->rows_s, r->bytes_r,
                               r->offs_r, "the gradient rows of a sharded embedding update")) !=
      HS_OK)
    return st;
  s->pending = false;
  if (!s->own_looked) return HS_OK;
  /* Owner: per unique, its keys' gradient rows in key order, which is
   * rank order (each requester sends a key once). */
  hs_embed_batch *ob = &s->own;
  size_t OU = (size_t)ob->n_unique;
  if ((st = grow((void **)&s->sum, &s->sum_cap, OU * D + 1, sizeof(float), "sums")) != HS_OK)
    return st;
  for (size_t u = 0; u < OU; u++) {
    float *acc = s->sum + u * D;
    int32_t a = ob->occ_ptr[u], e = ob->occ_ptr[u + 1];
    memcpy(acc, s->rows_s + (size_t)ob->occ[a] * D, D * 4);
    for (int32_t k = a + 1; k < e; k++) {
      const float *g = s->rows_s + (size_t)ob->occ[k] * D;
      for (size_t c = 0; c < D; c++) acc[c] += g[c];
    }
  }
  hs__embed_apply(s->store, ob, s->sum);
  return HS_OK;
}
