/* Hash maps that renumber source ids densely: integer ids (edge lists) and
 * string tokens (LINQS ids, class names). Values are assigned in order of
 * first insertion: 0, 1, 2, ... */
#ifndef HS_MAPS_H
#define HS_MAPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hs_base.h"

typedef struct hs__idmap {
  uint64_t *keys;
  int32_t *vals; /* -1: empty slot */
  size_t cap;    /* power of two */
  int32_t n;
} hs__idmap;

hs_status hs__idmap_init(hs__idmap *m);
void hs__idmap_free(hs__idmap *m);
/* The value of `key`, or -1. */
int32_t hs__idmap_get(const hs__idmap *m, uint64_t key);
/* The value of `key`, inserting the next one if absent (*fresh says so).
 * HS_ERR_UNSUPPORTED past 2^31 - 1 keys. */
hs_status hs__idmap_intern(hs__idmap *m, uint64_t key, int32_t *val, bool *fresh);

typedef struct hs__strmap {
  char **strs;   /* by value */
  size_t *lens;
  uint64_t *hashes;
  int32_t *slots; /* value, or -1 */
  size_t cap;     /* slots, power of two */
  size_t scap;    /* strs capacity */
  int32_t n;
} hs__strmap;

hs_status hs__strmap_init(hs__strmap *m);
void hs__strmap_free(hs__strmap *m);
int32_t hs__strmap_get(const hs__strmap *m, const char *s, size_t len);
hs_status hs__strmap_intern(hs__strmap *m, const char *s, size_t len, int32_t *val,
                            bool *fresh);

#endif
