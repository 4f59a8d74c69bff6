/* Graphs for the sampling benchmark and tests: hand-made, star, random
 * power-law-ish (Philox, so every run builds the same graph), and the
 * shared Cora / Facebook edge lists parsed minimally (symmetrised, without
 * duplicates or self loops) until the dataset layer provides them. */
#ifndef HS_TEST_SAMPLE_GRAPHS_H
#define HS_TEST_SAMPLE_GRAPHS_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/hs_engine.h"

typedef struct test_graph {
  hs_csr g;
  int64_t *indptr;
  int32_t *indices;
  float *weights;
} test_graph;

static inline void tg_free(test_graph *t) {
  free(t->indptr);
  free(t->indices);
  free(t->weights);
  memset(t, 0, sizeof *t);
}

static inline uint32_t tg_word(uint64_t seed, uint32_t tag, uint32_t a, uint32_t b) {
  return hs_philox_draw(seed, 0x7e57u, tag, a, b >> 2).v[b & 3u];
}

static inline bool tg_alloc(test_graph *t, int64_t n, int64_t e, bool weighted) {
  memset(t, 0, sizeof *t);
  t->indptr = calloc((size_t)n + 1, sizeof *t->indptr);
  t->indices = malloc(sizeof *t->indices * (size_t)(e > 0 ? e : 1));
  t->weights = weighted ? malloc(sizeof *t->weights * (size_t)(e > 0 ? e : 1)) : NULL;
  t->g.n = n;
  t->g.e = e;
  t->g.indptr = t->indptr;
  t->g.indices = t->indices;
  t->g.weights = t->weights;
  return t->indptr && t->indices && (!weighted || t->weights);
}

/* Weights for edge i: mostly in (0, 4), with a few zero, negative,
 * subnormal and NaN ones sprinkled in to exercise the eligibility rule. */
static inline void tg_weigh(test_graph *t, uint64_t seed) {
  for (int64_t i = 0; i < t->g.e; i++) {
    uint32_t w = tg_word(seed, 9u, (uint32_t)(i >> 32), (uint32_t)i);
    float x = (float)((w >> 8) + 1u) * (4.0f / 16777216.0f);
    switch (w & 63u) {
    case 0: x = 0.0f; break;
    case 1: x = -x; break;
    case 2: x = 1e-40f; break;
    case 3: x = nanf(""); break;
    default: break;
    }
    t->weights[i] = x;
  }
}

/* Vertex 0 has leaves 1..leaves as neighbours; each leaf has vertex 0. */
static inline bool tg_star(test_graph *t, int32_t leaves, bool weighted) {
  if (!tg_alloc(t, leaves + 1, 2 * (int64_t)leaves, weighted)) return false;
  t->indptr[1] = leaves;
  for (int32_t i = 0; i < leaves; i++) {
    t->indices[i] = i + 1;
    t->indices[leaves + i] = 0;
    t->indptr[i + 2] = leaves + i + 1;
  }
  if (weighted)
    for (int64_t i = 0; i < t->g.e; i++) t->weights[i] = 1.0f;
  return true;
}

static inline int tg_cmp_i32(const void *a, const void *b) {
  int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
  return (x > y) - (x < y);
}

/* n vertices, degrees ~ dmin * u^(-1/1.5) capped at max_deg (mean about
 * 3 * dmin), neighbour ids skewed towards low ids (u^2), sorted and without
 * duplicates per row. */
static inline bool tg_random(test_graph *t, int64_t n, double dmin, int64_t max_deg,
                             uint64_t seed, bool weighted) {
  memset(t, 0, sizeof *t);
  int64_t *deg = malloc(sizeof *deg * (size_t)n);
  if (!deg) return false;
  int64_t e = 0;
  for (int64_t v = 0; v < n; v++) {
    double u = ((double)tg_word(seed, 1u, (uint32_t)v, 0) + 1.0) / 4294967296.0;
    double d = floor(dmin * pow(u, -1.0 / 1.5));
    deg[v] = d > (double)max_deg ? max_deg : (int64_t)d;
    if (deg[v] > n) deg[v] = n;
    e += deg[v];
  }
  bool ok = tg_alloc(t, n, e, weighted);
  int64_t at = 0;
  for (int64_t v = 0; v < n && ok; v++) {
    int32_t *row = t->indices + at;
    for (int64_t j = 0; j < deg[v]; j++) {
      double u = (double)tg_word(seed, 2u + (uint32_t)(j >> 32), (uint32_t)v, (uint32_t)j) /
                 4294967296.0;
      row[j] = (int32_t)((double)n * ((j & 1) ? u * u : u));
    }
    qsort(row, (size_t)deg[v], sizeof *row, tg_cmp_i32);
    int64_t k = 0;
    for (int64_t j = 0; j < deg[v]; j++)
      if (k == 0 || row[j] != row[k - 1]) row[k++] = row[j];
    at += k;
    t->indptr[v + 1] = at;
  }
  free(deg);
  if (!ok) return false;
  t->g.e = at;
  if (weighted) tg_weigh(t, seed);
  return true;
}

/* CSR of the symmetrised edge list (src[i], dst[i]) over ids 0..n-1,
 * without self loops or duplicates. */
static inline bool tg_from_edges(test_graph *t, int64_t n, const int32_t *src,
                                 const int32_t *dst, int64_t m) {
  if (!tg_alloc(t, n, 2 * m, false)) return false;
  for (int64_t i = 0; i < m; i++) {
    if (src[i] == dst[i]) continue;
    t->indptr[src[i] + 1]++;
    t->indptr[dst[i] + 1]++;
  }
  for (int64_t v = 0; v < n; v++) t->indptr[v + 1] += t->indptr[v];
  int64_t *fill = malloc(sizeof *fill * (size_t)n);
  if (!fill) return false;
  memcpy(fill, t->indptr, sizeof *fill * (size_t)n);
  for (int64_t i = 0; i < m; i++) {
    if (src[i] == dst[i]) continue;
    t->indices[fill[src[i]]++] = dst[i];
    t->indices[fill[dst[i]]++] = src[i];
  }
  free(fill);
  int64_t at = 0;
  for (int64_t v = 0; v < n; v++) {
    int64_t b = t->indptr[v], e = t->indptr[v + 1];
    qsort(t->indices + b, (size_t)(e - b), sizeof(int32_t), tg_cmp_i32);
    t->indptr[v] = at;
    for (int64_t j = b; j < e; j++)
      if (j == b || t->indices[j] != t->indices[j - 1]) t->indices[at++] = t->indices[j];
  }
  t->indptr[n] = at;
  t->g.e = at;
  return true;
}

/* Reads pairs of integers (a, b) from a text file: whitespace or comma
 * separated, lines not starting with a digit skipped. */
static inline int64_t tg_read_pairs(const char *path, int64_t **a, int64_t **b) {
  FILE *f = fopen(path, "r");
  if (!f) return -1;
  int64_t n = 0, cap = 1 << 16;
  *a = malloc(sizeof **a * (size_t)cap);
  *b = malloc(sizeof **b * (size_t)cap);
  char line[256];
  while (*a && *b && fgets(line, sizeof line, f)) {
    long long x, y;
    if (line[0] < '0' || line[0] > '9') continue;
    for (char *p = line; *p; p++)
      if (*p == ',') *p = ' ';
    if (sscanf(line, "%lld %lld", &x, &y) != 2) continue;
    if (n == cap) {
      cap *= 2;
      int64_t *na = realloc(*a, sizeof **a * (size_t)cap);
      int64_t *nb = realloc(*b, sizeof **b * (size_t)cap);
      if (na) *a = na;
      if (nb) *b = nb;
      if (!na || !nb) break;
    }
    (*a)[n] = x;
    (*b)[n] = y;
    n++;
  }
  fclose(f);
  return n;
}

static inline int tg_cmp_i64(const void *x, const void *y) {
  int64_t p = *(const int64_t *)x, q = *(const int64_t *)y;
  return (p > q) - (p < q);
}

/* Edge list file (Cora's cora.cites, Facebook's facebook_edges.csv) ->
 * symmetric CSR, ids made dense in ascending order of the file's ids. */
static inline bool tg_edge_file(test_graph *t, const char *path) {
  int64_t *a = NULL, *b = NULL;
  int64_t m = tg_read_pairs(path, &a, &b);
  bool ok = m > 0;
  int64_t *ids = ok ? malloc(sizeof *ids * (size_t)(2 * m)) : NULL;
  int32_t *src = ok ? malloc(sizeof *src * (size_t)m) : NULL;
  int32_t *dst = ok ? malloc(sizeof *dst * (size_t)m) : NULL;
  ok = ok && ids && src && dst;
  int64_t n = 0;
  if (ok) {
    memcpy(ids, a, sizeof *ids * (size_t)m);
    memcpy(ids + m, b, sizeof *ids * (size_t)m);
    qsort(ids, (size_t)(2 * m), sizeof *ids, tg_cmp_i64);
    for (int64_t i = 0; i < 2 * m; i++)
      if (n == 0 || ids[i] != ids[n - 1]) ids[n++] = ids[i];
    for (int64_t i = 0; i < m; i++) {
      int64_t *pa = bsearch(&a[i], ids, (size_t)n, sizeof *ids, tg_cmp_i64);
      int64_t *pb = bsearch(&b[i], ids, (size_t)n, sizeof *ids, tg_cmp_i64);
      src[i] = (int32_t)(pa - ids);
      dst[i] = (int32_t)(pb - ids);
    }
    ok = tg_from_edges(t, n, src, dst, m);
  }
  free(a);
  free(b);
  free(ids);
  free(src);
  free(dst);
  return ok;
}

#endif
