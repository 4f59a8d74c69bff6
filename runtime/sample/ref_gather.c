/* Plain-C reference of the gather: one row at a time, in order. */
#include <string.h>

#include "hs_sample.h"

void hs__ref_gather(const void *table, size_t row_bytes, const int32_t *ids, int32_t n,
                    void *out) {
  for (int32_t i = 0; i < n; i++)
    memcpy((char *)out + (size_t)i * row_bytes, (const char *)table + (size_t)ids[i] * row_bytes,
           row_bytes);
}
