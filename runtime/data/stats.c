/* Dataset statistics: out-degree distribution, self-loops, isolated
 * vertices, class sizes, feature density and values that are not finite.
 * Reads the topology and labels, and the features once to count their
 * non-zeros (dense) and NaN or infinite values. */
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "hs_build.h"
#include "hs_graph.h"

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

/* A float16's bits are NaN or infinite: all exponent bits set. */
static bool half_nonfinite(uint16_t h) { return (h & 0x7c00u) == 0x7c00u; }

/* Non-zeros of the features, the most in one row, and the values that are
 * NaN or infinite (with the first vertex holding one, or -1). */
static void feature_counts(const hs_graph *g, hs_dataset_stats *out) {
  out->feature_nnz = out->feature_row_nnz_max = out->feature_nonfinite = 0;
  out->feature_nonfinite_first = -1;
  if (g->feat_sparse) { /* (opening refuses values that are not finite) */
    out->feature_nnz = g->feat_nnz;
    out->feature_row_nnz_max = g->feat_row_nnz_max;
    return;
  }
  if (!g->feat) return;
  size_t f = (size_t)g->f;
  for (int64_t v = 0; v < g->n; v++) {
    int64_t k = 0, bad = 0;
    if (g->feat_dtype == HS_DTYPE_FLOAT16) {
      const uint16_t *row = (const uint16_t *)g->feat + (size_t)v * f;
      for (size_t j = 0; j < f; j++) {
        k += (row[j] & 0x7fffu) != 0; /* -0 is a zero */
        bad += half_nonfinite(row[j]);
      }
    } else {
      const float *row = (const float *)g->feat + (size_t)v * f;
      for (size_t j = 0; j < f; j++) {
        k += row[j] != 0.0f;
        bad += !isfinite(row[j]);
      }
    }
    out->feature_nnz += k;
    if (k > out->feature_row_nnz_max) out->feature_row_nnz_max = k;
    if (bad && out->feature_nonfinite_first < 0) out->feature_nonfinite_first = v;
    out->feature_nonfinite += bad;
  }
}

void hs_dataset_stats_init_sized(hs_dataset_stats *stats, size_t struct_size) {
  hs_dataset_stats z;
  memset(&z, 0, sizeof z);
  z.struct_size = sizeof z;
  hs__sized_init(stats, struct_size, &z, sizeof z);
}

static hs_status compute(const hs_dataset *ds, hs_dataset_stats *out);

hs_status hs_dataset_stats_compute(const hs_dataset *ds, hs_dataset_stats *user) {
  if (!ds || !user) return hs__fail(HS_ERR_INVALID_ARG, "hs_dataset_stats_compute: NULL argument");
  hs_status st = hs__sized_check(user->struct_size, sizeof *user, "hs_dataset_stats");
  if (st != HS_OK) return st;
  hs_dataset_stats full;
  hs_dataset_stats_init(&full);
  st = compute(ds, &full);
  return st == HS_OK ? hs__sized_out(user, &full, sizeof full, "hs_dataset_stats") : st;
}

static hs_status compute(const hs_dataset *ds, hs_dataset_stats *out) {
  const hs_graph *g = hs__dataset_graph(ds);
  hs_status st = hs__graph_topology(g, "dataset statistics");
  if (st != HS_OK) return st;
  int64_t n = g->n;
  feature_counts(g, out);
  if (n > 0 && g->f > 0)
    out->feature_density = (double)out->feature_nnz / ((double)n * (double)g->f);
  if (n == 0) return HS_OK;
  int64_t *deg = malloc((size_t)n * sizeof *deg);
  uint8_t *touched = calloc((size_t)n, 1);
  /* Class sizes by counting when classes are few, else by sorting a copy
   * (a valid dataset may use huge class ids). */
  bool by_sort = g->num_classes > n;
  int64_t *cls = calloc(by_sort ? (size_t)n : (size_t)g->num_classes + 1, sizeof *cls);
  if (!deg || !touched || !cls) {
    free(deg);
    free(touched);
    free(cls);
    return hs__fail(HS_ERR_NOMEM, "no memory for statistics of %lld vertices", (long long)n);
  }
  int64_t loops = 0;
  for (int64_t v = 0; v < n; v++) {
    int64_t b = g->indptr[v], e = g->indptr[v + 1];
    deg[v] = e - b;
    if (e > b) touched[v] = 1;
    for (int64_t k = b; k < e; k++) {
      int32_t u = g->indices[k];
      touched[u] = 1;
      loops += u == v;
    }
  }
  int64_t isolated = 0;
  for (int64_t v = 0; v < n; v++) isolated += !touched[v];
  if (g->labels && by_sort) {
    for (int64_t v = 0; v < n; v++) cls[v] = g->labels[v];
    qsort(cls, (size_t)n, sizeof *cls, cmp_i64);
    for (int64_t v = 0, run = 0; v < n; v++) {
      run = v > 0 && cls[v] == cls[v - 1] ? run + 1 : 1;
      if (cls[v] >= 0 && run > out->class_size_max) out->class_size_max = run;
    }
  } else if (g->labels) {
    for (int64_t v = 0; v < n; v++)
      if (g->labels[v] >= 0) cls[g->labels[v]]++;
    for (int32_t c = 0; c < g->num_classes; c++)
      if (cls[c] > out->class_size_max) out->class_size_max = cls[c];
  }
  qsort(deg, (size_t)n, sizeof *deg, cmp_i64);
  out->degree_min = deg[0];
  out->degree_max = deg[n - 1];
  out->degree_median = deg[(n - 1) / 2];
  /* Smallest d with at least 99% of rows <= d: the element at rank
   * ceil(0.99 n) - 1. */
  int64_t r = (n * 99 + 99) / 100 - 1;
  out->degree_p99 = deg[r < 0 ? 0 : r];
  out->degree_mean = (double)g->e / (double)n;
  out->self_loops = loops;
  out->isolated = isolated;
  free(deg);
  free(touched);
  free(cls);
  return HS_OK;
}
