/* The tests' view of the shared datasets folder ($HS_SHARED_DATASETS, a
 * harness variable of the tests, not a hetsage setting). Header-only. */
#ifndef HS_TEST_SHARED_H
#define HS_TEST_SHARED_H

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

/* A shared dataset file, or false (the test then skips). */
static inline bool tg_shared_path(char *buf, size_t len, const char *rel) {
  const char *root = getenv("HS_SHARED_DATASETS");
  if (!root) return false;
  snprintf(buf, len, "%s/%s", root, rel);
  FILE *f = fopen(buf, "r");
  if (!f) return false;
  fclose(f);
  return true;
}

#endif
