/* AUC and logloss (see hetsage/ctr.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ctr/hs_ctr.h"

typedef struct pair {
  float s;
  uint8_t y;
} pair;

static int cmp_pair(const void *a, const void *b) {
  float x = ((const pair *)a)->s, y = ((const pair *)b)->s;
  return x < y ? -1 : x > y;
}

double hs_ctr_auc(const float *scores, const uint8_t *labels, int64_t n) {
  if (n <= 0 || !scores || !labels) return NAN;
  pair *p = malloc((size_t)n * sizeof *p);
  if (!p) return NAN;
  for (int64_t i = 0; i < n; i++) p[i] = (pair){scores[i], labels[i] ? 1 : 0};
  qsort(p, (size_t)n, sizeof *p, cmp_pair);
  double neg_below = 0, pos = 0, neg = 0, num = 0;
  for (int64_t i = 0; i < n;) {
    int64_t j = i;
    double tp = 0, tn = 0;
    while (j < n && p[j].s == p[i].s) {
      tp += p[j].y;
      tn += 1 - p[j].y;
      j++;
    }
    num += tp * (neg_below + 0.5 * tn);
    neg_below += tn;
    pos += tp;
    neg += tn;
    i = j;
  }
  free(p);
  return pos > 0 && neg > 0 ? num / (pos * neg) : NAN;
}

double hs_ctr_logloss(const float *probs, const uint8_t *labels, int64_t n) {
  if (n <= 0 || !probs || !labels) return NAN;
  double sum = 0;
  for (int64_t i = 0; i < n; i++) {
    double q = labels[i] ? probs[i] : 1.0 - (double)probs[i];
    if (q < 1e-7) q = 1e-7;
    if (q > 1 - 1e-7) q = 1 - 1e-7;
    sum -= log(q);
  }
  return sum / (double)n;
}
