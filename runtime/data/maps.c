#include "hs_maps.h"

#include <stdlib.h>
#include <string.h>

static uint64_t mix64(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  x ^= x >> 31;
  return x;
}

static uint64_t hash_bytes(const char *s, size_t len) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < len; i++) h = (h ^ (unsigned char)s[i]) * 0x100000001b3ull;
  return mix64(h);
}

hs_status hs__idmap_init(hs__idmap *m) {
  m->cap = 1024;
  m->n = 0;
  m->keys = malloc(m->cap * sizeof *m->keys);
  m->vals = malloc(m->cap * sizeof *m->vals);
  if (!m->keys || !m->vals) {
    hs__idmap_free(m);
    return hs__fail(HS_ERR_NOMEM, "no memory for an id map");
  }
  memset(m->vals, 0xff, m->cap * sizeof *m->vals);
  return HS_OK;
}

void hs__idmap_free(hs__idmap *m) {
  free(m->keys);
  free(m->vals);
  memset(m, 0, sizeof *m);
}

int32_t hs__idmap_get(const hs__idmap *m, uint64_t key) {
  size_t mask = m->cap - 1;
  for (size_t i = mix64(key) & mask;; i = (i + 1) & mask) {
    if (m->vals[i] < 0) return -1;
    if (m->keys[i] == key) return m->vals[i];
  }
}

static hs_status idmap_grow(hs__idmap *m) {
  size_t ncap = m->cap * 2;
  uint64_t *nk = malloc(ncap * sizeof *nk);
  int32_t *nv = malloc(ncap * sizeof *nv);
  if (!nk || !nv) {
    free(nk);
    free(nv);
    return hs__fail(HS_ERR_NOMEM, "no memory for an id map of %zu slots", ncap);
  }
  memset(nv, 0xff, ncap * sizeof *nv);
  for (size_t j = 0; j < m->cap; j++) {
    if (m->vals[j] < 0) continue;
    size_t i = mix64(m->keys[j]) & (ncap - 1);
    while (nv[i] >= 0) i = (i + 1) & (ncap - 1);
    nk[i] = m->keys[j];
    nv[i] = m->vals[j];
  }
  free(m->keys);
  free(m->vals);
  m->keys = nk;
  m->vals = nv;
  m->cap = ncap;
  return HS_OK;
}

hs_status hs__idmap_intern(hs__idmap *m, uint64_t key, int32_t *val, bool *fresh) {
  size_t mask = m->cap - 1;
  size_t i = mix64(key) & mask;
  for (; m->vals[i] >= 0; i = (i + 1) & mask)
    if (m->keys[i] == key) {
      *val = m->vals[i];
      *fresh = false;
      return HS_OK;
    }
  if (m->n == INT32_MAX)
    return hs__fail(HS_ERR_UNSUPPORTED, "more than 2^31 - 1 distinct ids");
  m->keys[i] = key;
  m->vals[i] = m->n++;
  *val = m->vals[i];
  *fresh = true;
  if ((size_t)m->n * 2 > m->cap) return idmap_grow(m);
  return HS_OK;
}

hs_status hs__strmap_init(hs__strmap *m) {
  memset(m, 0, sizeof *m);
  m->cap = 64;
  m->slots = malloc(m->cap * sizeof *m->slots);
  if (!m->slots) return hs__fail(HS_ERR_NOMEM, "no memory for a string map");
  memset(m->slots, 0xff, m->cap * sizeof *m->slots);
  return HS_OK;
}

void hs__strmap_free(hs__strmap *m) {
  for (int32_t i = 0; i < m->n; i++) free(m->strs[i]);
  free(m->strs);
  free(m->lens);
  free(m->hashes);
  free(m->slots);
  memset(m, 0, sizeof *m);
}

static size_t strmap_find(const hs__strmap *m, const char *s, size_t len, uint64_t h) {
  size_t mask = m->cap - 1;
  size_t i = h & mask;
  for (; m->slots[i] >= 0; i = (i + 1) & mask) {
    int32_t v = m->slots[i];
    if (m->hashes[v] == h && m->lens[v] == len && memcmp(m->strs[v], s, len) == 0) break;
  }
  return i;
}

int32_t hs__strmap_get(const hs__strmap *m, const char *s, size_t len) {
  return m->slots[strmap_find(m, s, len, hash_bytes(s, len))];
}

hs_status hs__strmap_intern(hs__strmap *m, const char *s, size_t len, int32_t *val,
                            bool *fresh) {
  uint64_t h = hash_bytes(s, len);
  size_t i = strmap_find(m, s, len, h);
  if (m->slots[i] >= 0) {
    *val = m->slots[i];
    *fresh = false;
    return HS_OK;
  }
  if (m->n == INT32_MAX) return hs__fail(HS_ERR_UNSUPPORTED, "more than 2^31 - 1 names");
  if ((size_t)m->n == m->scap) {
    size_t nc = m->scap ? m->scap * 2 : 64;
    char **ns = realloc(m->strs, nc * sizeof *ns);
    if (ns) m->strs = ns;
    size_t *nl = realloc(m->lens, nc * sizeof *nl);
    if (nl) m->lens = nl;
    uint64_t *nh = realloc(m->hashes, nc * sizeof *nh);
    if (nh) m->hashes = nh;
    if (!ns || !nl || !nh) return hs__fail(HS_ERR_NOMEM, "no memory for a string map");
    m->scap = nc;
  }
  char *copy = malloc(len + 1);
  if (!copy) return hs__fail(HS_ERR_NOMEM, "no memory for a string map");
  memcpy(copy, s, len);
  copy[len] = '\0';
  int32_t v = m->n++;
  m->strs[v] = copy;
  m->lens[v] = len;
  m->hashes[v] = h;
  m->slots[i] = v;
  *val = v;
  *fresh = true;
  if ((size_t)m->n * 2 > m->cap) {
    size_t ncap = m->cap * 2;
    int32_t *ns = malloc(ncap * sizeof *ns);
    if (!ns) return hs__fail(HS_ERR_NOMEM, "no memory for a string map");
    memset(ns, 0xff, ncap * sizeof *ns);
    for (int32_t k = 0; k < m->n; k++) {
      size_t j = m->hashes[k] & (ncap - 1);
      while (ns[j] >= 0) j = (j + 1) & (ncap - 1);
      ns[j] = k;
    }
    free(m->slots);
    m->slots = ns;
    m->cap = ncap;
  }
  return HS_OK;
}
