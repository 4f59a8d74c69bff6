/* Small CTR batches for the model tests: random rows, occurrences that
 * share rows, and the occurrence lists the store would give. Header-only. */
#ifndef HS_TEST_CTR_FIXTURES_H
#define HS_TEST_CTR_FIXTURES_H

#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "ctr/ctr_model.h"

typedef struct ctr_fix {
  hs_ctr_model_cfg cfg;
  hs_ctr_layout lay;
  float *params;
  hs_ctr_batch b;
  float *dense, *rows, *labels;
  int32_t *idx, *occ_ptr, *occ;
} ctr_fix;

static inline float cf_uniform(uint64_t *s) {
  *s = *s * 6364136223846793005ull + 1442695040888963407ull;
  return (float)((*s >> 40) & 0xffffff) / 16777216.0f;
}

/* A batch of n examples over `fields` fields drawing from `unique` rows
 * (every row used at least once when n * fields >= unique). */
/* Each of the U rows' occurrences in increasing order (CSR) from idx
 * (n_occ entries < U), as the store's lookups list them. */
static inline void cf_lists(const int32_t *idx, int32_t n_occ, int32_t U, int32_t *occ_ptr,
                            int32_t *occ) {
  memset(occ_ptr, 0, ((size_t)U + 1) * sizeof *occ_ptr);
  for (int32_t o = 0; o < n_occ; o++) occ_ptr[idx[o] + 1]++;
  for (int32_t u = 0; u < U; u++) occ_ptr[u + 1] += occ_ptr[u];
  int32_t *fill = calloc((size_t)U + 1, sizeof *fill);
  cr_assert(fill);
  for (int32_t o = 0; o < n_occ; o++) occ[occ_ptr[idx[o]] + fill[idx[o]]++] = o;
  free(fill);
}

static inline void cf_make(ctr_fix *f, hs_ctr_model kind, int32_t n, int32_t fields, int32_t dim,
                           int32_t unique, uint64_t seed) {
  memset(f, 0, sizeof *f);
  hs__ctr_model_cfg_defaults(kind, &f->cfg);
  f->cfg.n_fields = fields;
  f->cfg.n_dense = 5;
  f->cfg.dim = dim;
  f->cfg.deep[0] = 7;
  f->cfg.deep[1] = 5;
  f->cfg.n_deep = 2;
  f->cfg.bottom[0] = 6;
  f->cfg.n_bottom = 1;
  f->cfg.seed = seed;
  cr_assert_eq(hs__ctr_layout(&f->cfg, &f->lay), HS_OK, "%s", hs_last_error());
  uint64_t s = seed * 7 + 1;
  int32_t R = f->lay.row, occ = n * fields;
  f->params = malloc(f->lay.n_params * sizeof(float));
  hs__ctr_init_params(&f->cfg, &f->lay, f->params);
  /* Non-zero biases, w and c, so that their paths are exercised. */
  for (size_t i = 0; i < f->lay.n_params; i++)
    if (f->params[i] == 0.0f) f->params[i] = 0.2f * (cf_uniform(&s) - 0.5f);
  f->dense = malloc((size_t)n * 5 * sizeof(float));
  f->rows = malloc((size_t)unique * (size_t)R * sizeof(float));
  f->labels = malloc((size_t)n * sizeof(float));
  f->idx = malloc((size_t)occ * sizeof(int32_t));
  f->occ_ptr = calloc((size_t)unique + 1, sizeof(int32_t));
  f->occ = malloc((size_t)occ * sizeof(int32_t));
  for (int32_t i = 0; i < n * 5; i++) f->dense[i] = 3.0f * cf_uniform(&s);
  for (int32_t i = 0; i < unique * R; i++) f->rows[i] = cf_uniform(&s) - 0.5f;
  for (int32_t i = 0; i < n; i++) f->labels[i] = cf_uniform(&s) < 0.4f ? 1.0f : 0.0f;
  for (int32_t o = 0; o < occ; o++)
    f->idx[o] = o < unique ? o : (int32_t)(cf_uniform(&s) * (float)unique) % unique;
  cf_lists(f->idx, occ, unique, f->occ_ptr, f->occ);
  f->b = (hs_ctr_batch){.n = n, .n_unique = unique, .dense = f->dense, .rows = f->rows,
                        .idx = f->idx, .occ_ptr = f->occ_ptr, .occ = f->occ, .labels = f->labels};
}

static inline void cf_free(ctr_fix *f) {
  free(f->params);
  free(f->dense);
  free(f->rows);
  free(f->labels);
  free(f->idx);
  free(f->occ_ptr);
  free(f->occ);
}

#endif
