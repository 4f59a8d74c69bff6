/* Building datasets: CSR assembly, row finishing (sort, self-loops,
 * repeats), seeded stratified splits, and the path every importer ends on
 * (an in-memory import written through the dataset writer). */
#ifndef HS_BUILD_H
#define HS_BUILD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hetsage/dataset.h"
#include "hs_base.h"
#include "hs_dsw.h"

/* Philox stream purposes (the counter's first word): one per kind of
 * draw, so that no two draws of a dataset share a counter. */
#define HS__RNG_SPLIT 0x73706c74u   /* "splt": (purpose, class, index, 0) */
#define HS__RNG_EDGE 0x65646765u    /* "edge": (purpose|try, lo, hi, block) */
#define HS__RNG_FEAT 0x66656174u    /* "feat": (purpose, vertex, block, 0) */

typedef struct hs__edge_opts {
  bool undirected;
  bool dedup;
  hs_self_loops self_loops;
} hs__edge_opts;

/* Sort ascending (introsort; no allocation). */
void hs__sort_i32(int32_t *a, size_t n);

/* Sort every row, then drop self-loops and repeats as `o` asks, compacting
 * indices and rewriting indptr in place. `threads` (>= 1) share the sort.
 * The result does not depend on `threads`. */
hs_status hs__csr_finish(int64_t n, int64_t *indptr, int32_t *indices,
                         const hs__edge_opts *o, int threads);

/* CSR of the m edges src[i] -> dst[i] (and dst[i] -> src[i] if undirected),
 * rows unsorted. */
hs_status hs__csr_from_coo(int64_t n, const int32_t *src, const int32_t *dst, size_t m,
                           bool undirected, int64_t **indptr, int32_t **indices);

/* Stratified split of the labelled vertices (label >= 0): for each class,
 * its members in id order are shuffled by Philox (seed, HS__RNG_SPLIT,
 * class, i) with Fisher-Yates, and the first round(frac[0] * size) go to
 * train, the next round(frac[1] * size) to valid, then round(frac[2] *
 * size) to test (the whole rest when the fractions sum to 1). Each split is
 * returned sorted by id, in new allocations. */
hs_status hs__split_stratified(const int32_t *labels, int64_t n, int32_t classes,
                               const double frac[HS_SPLIT_COUNT_], uint64_t seed,
                               int32_t *out[HS_SPLIT_COUNT_],
                               int64_t out_n[HS_SPLIT_COUNT_]);

/* What an importer read, before it becomes a dataset. */
typedef struct hs__imported {
  const char *format; /* "linqs", ... (static) */
  int64_t n;
  /* Edges as read (after renumbering), src -> dst. */
  int32_t *src, *dst;
  size_t m, mcap;
  /* Dense features [n][f], or sparse binary ones (sp_ptr[n+1], sp_ids). */
  int64_t f;
  float *feat;
  int64_t *sp_ptr;
  int32_t *sp_ids;
  /* Labels [n] in [-1, classes), class names by label (may be NULL). */
  int32_t *labels;
  int32_t classes;
  char **class_names;
  /* Splits that came with the source. */
  bool has_split;
  int32_t *split[HS_SPLIT_COUNT_];
  int64_t split_n[HS_SPLIT_COUNT_];
} hs__imported;

void hs__imported_free(hs__imported *imp);
hs_status hs__edges_push(hs__imported *imp, int32_t src, int32_t dst);

/* Class names -> label ids sorted byte-wise by name: fills imp->classes,
 * imp->class_names (taking copies) and rewrites imp->labels, which holds
 * first-appearance ids 0..count-1 (or -1) on entry. */
hs_status hs__labels_by_name(hs__imported *imp, char *const *names, int32_t count);

/* Build the CSR, make a split if asked, write every file into `w`, check
 * the result by opening it, and fill `summary`. Does not commit. Frees the
 * edge lists as soon as the CSR holds them. */
hs_status hs__imported_write(hs__imported *imp, hs__dsw *w, const char *src,
                             const hs_convert_opts *o, hs_dataset_info *summary);

/* Features to write: dense rows, or CSR arrays (val NULL: every stored
 * entry is 1). dtype is float32 or float16 (of `dense` or of `val`). */
typedef struct hs__feat_src {
  int64_t n, f;
  hs_dtype dtype;
  const void *dense;   /* [n][f], or NULL for CSR */
  const int64_t *ptr;  /* [n + 1] */
  const int32_t *col;  /* [ptr[n]], strictly increasing per row */
  const void *val;     /* [ptr[n]] or NULL */
} hs__feat_src;

/* Write the features into `w` in the form `fmt` asks for (AUTO: sparse at
 * density <= HS_FEAT_SPARSE_DENSITY), with the same values: sparse output
 * drops the values when every one is 1 (binary), dense output fills the
 * zeros. `written` (optional) receives the form written. */
hs_status hs__feat_write(hs__dsw *w, const hs__feat_src *src, hs_feat_format fmt,
                         hs_feat_format *written);

/* JSON string literal of `s` appended to buf (bounded; returns chars). */

/* Progress line through opts' callback, if any. */
void hs__progress(hs_progress_fn fn, void *ctx, const char *fmt, ...) HS_PRINTF(3, 4);

#endif
