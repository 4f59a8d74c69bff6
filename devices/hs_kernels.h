/* OpenCL C sources from cl_kernels/, embedded at build time. */
#ifndef HS_KERNELS_H
#define HS_KERNELS_H

#include <stddef.h>

typedef struct hs__kernel_source {
  const char *name; /* file name, e.g. "sample.cl" */
  const char *text;
  size_t length;
} hs__kernel_source;

/* Terminated by an entry whose name is NULL. */
extern const hs__kernel_source hs__kernel_sources[];
extern const unsigned hs__kernel_source_count;

/* The embedded source called `name`, or NULL. */
const hs__kernel_source *hs__kernel_source_find(const char *name);

#endif
