/* Small helpers of the check families: digests, comparisons, seeds. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hs_bringup_int.h"
#include "core/hs_engine.h"

uint64_t hs__fnv(uint64_t h, const void *p, size_t n) {
  const unsigned char *c = p;
  for (size_t i = 0; i < n; i++) {
    h ^= c[i];
    h *= 0x100000001b3ull;
  }
  return h;
}

bool hs__bu_floats(const char *what, const float *got, const float *want, size_t n, float rtol,
                   char *why, size_t cap) {
  for (size_t i = 0; i < n; i++) {
    bool ok;
    if (rtol == 0.0f) {
      ok = memcmp(&got[i], &want[i], sizeof got[i]) == 0;
    } else {
      float tol = rtol * fmaxf(1.0f, fabsf(want[i]));
      ok = fabsf(got[i] - want[i]) <= tol;
    }
    if (!ok) {
      snprintf(why, cap, "%s[%zu] = %.9g, reference %.9g (%s)", what, i, (double)got[i],
               (double)want[i], rtol == 0.0f ? "bit-exact required" : "beyond tolerance");
      return false;
    }
  }
  return true;
}

bool hs__bu_rel(const char *what, const float *got, const float *want, size_t n, double rtol,
                char *why, size_t cap) {
  double mx = 0.0, worst = 0.0;
  size_t at = 0;
  for (size_t i = 0; i < n; i++) mx = fmax(mx, fabs((double)want[i]));
  for (size_t i = 0; i < n; i++) {
    double err = fabs((double)got[i] - want[i]) / fmax(fabs((double)want[i]), 1e-2 * mx);
    if (!(err <= worst)) worst = err, at = i; /* NaN counts as the worst */
  }
  if (n == 0 || mx == 0.0 || worst <= rtol) return true;
  snprintf(why, cap, "%s: relative error %.3g at [%zu] (%.9g vs %.9g), tolerance %.0e", what,
           worst, at, (double)got[at], (double)want[at], rtol);
  return false;
}

hs_check_result hs__bu_error(hs__out *o, const char *what, hs_status st) {
  snprintf(o->detail, sizeof o->detail, "%s: %s: %s", what, hs_strerror(st), hs_last_error());
  return HS_CHECK_FAIL;
}

void hs__bu_seeds(int32_t *seeds, int32_t n, int64_t n_vertices, uint32_t salt) {
  uint64_t x = 0x9e3779b97f4a7c15ull ^ salt;
  for (int32_t i = 0; i < n;) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    int32_t v = (int32_t)((x >> 33) % (uint64_t)n_vertices);
    bool dup = false;
    for (int32_t j = 0; j < i && !dup; j++) dup = seeds[j] == v;
    if (!dup) seeds[i++] = v;
  }
}

void hs__bu_feature_rows(const hs_graph *g, const int32_t *ids, int32_t n, float *out) {
  size_t f = (size_t)g->f;
  for (int32_t i = 0; i < n; i++) {
    const char *row = (const char *)g->feat + (size_t)ids[i] * g->feat_row_bytes;
    float *dst = out + (size_t)i * f;
    if (g->feat_dtype == HS_DTYPE_FLOAT16) {
      const uint16_t *h = (const uint16_t *)row;
      for (size_t k = 0; k < f; k++) dst[k] = hs__half_to_float(h[k]);
    } else {
      memcpy(dst, row, f * sizeof(float));
    }
  }
}
