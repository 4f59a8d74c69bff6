/* Block-level order of an epoch's seeds (see hs_host_tier.h). */
#include <stdlib.h>
#include <string.h>

#include "hs_host_tier.h"
#include "rng/philox.h"

/* Philox stream purposes (the counter's first word), apart from every
 * other draw of the runtime. */
#define RNG_BLOCKS 0x626c6b73u /* "blks": (purpose, epoch, 0, i) */
#define RNG_WITHIN 0x626c6b77u /* "blkw": (purpose, epoch, block, i) */

/* Fisher-Yates over a[0..n), draw i from counter (purpose, epoch, tag, i). */
static void shuffle(int32_t *a, int64_t n, uint64_t seed, uint32_t purpose, uint32_t epoch,
                    uint32_t tag) {
  for (int64_t i = n - 1; i > 0; i--) {
    uint32_t w = hs_philox_draw(seed, purpose, epoch, tag, (uint32_t)i).v[0];
    int64_t j = hs_philox_below(w, (uint32_t)(i + 1));
    int32_t x = a[i];
    a[i] = a[j];
    a[j] = x;
  }
}

hs_status hs__block_order_seeds(const int32_t *seeds, int64_t n, int64_t rows_per_block,
                                uint64_t seed, uint32_t epoch, int32_t *out) {
  if (rows_per_block < 1 || n < 0 || n > INT32_MAX)
    return hs__fail(HS_ERR_INVALID_ARG, "block order: %lld seeds, %lld rows per block",
                    (long long)n, (long long)rows_per_block);
  int32_t top = -1;
  for (int64_t i = 0; i < n; i++) {
    if (seeds[i] < 0)
      return hs__fail(HS_ERR_INVALID_ARG, "block order: seed %d at %lld is negative", seeds[i],
                      (long long)i);
    if (seeds[i] > top) top = seeds[i];
  }
  if (n == 0) return HS_OK;
  int64_t nb = top / rows_per_block + 1;
  /* start[b]: where block b's seeds go in `grouped` (counting sort, stable) */
  int64_t *start = calloc((size_t)nb + 1, sizeof *start);
  int32_t *grouped = malloc(sizeof *grouped * (size_t)n);
  int32_t *order = malloc(sizeof *order * (size_t)nb);
  if (!start || !grouped || !order) {
    free(start);
    free(grouped);
    free(order);
    return hs__fail(HS_ERR_NOMEM, "block order of %lld seeds", (long long)n);
  }
  for (int64_t i = 0; i < n; i++) start[seeds[i] / rows_per_block + 1]++;
  int64_t used = 0;
  for (int64_t b = 0; b < nb; b++) {
    if (start[b + 1]) order[used++] = (int32_t)b;
    start[b + 1] += start[b];
  }
  for (int64_t i = 0; i < n; i++) grouped[start[seeds[i] / rows_per_block]++] = seeds[i];
  /* start[b] now marks the end of block b's group; its start is start[b-1] */
  shuffle(order, used, seed, RNG_BLOCKS, epoch, 0);
  int64_t at = 0;
  for (int64_t k = 0; k < used; k++) {
    int64_t b = order[k], lo = b ? start[b - 1] : 0, len = start[b] - lo;
    memcpy(out + at, grouped + lo, sizeof *out * (size_t)len);
    shuffle(out + at, len, seed, RNG_WITHIN, epoch, (uint32_t)b);
    at += len;
  }
  free(start);
  free(grouped);
  free(order);
  return HS_OK;
}
