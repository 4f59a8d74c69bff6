#include <string.h>

#include "hs_kernels.h"

const hs__kernel_source *hs__kernel_source_find(const char *name) {
  for (const hs__kernel_source *s = hs__kernel_sources; s->name; s++)
    if (strcmp(s->name, name) == 0) return s;
  return NULL;
}
