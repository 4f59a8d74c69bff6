/* Slabs for record chunks (see embed_slab.h). */
#include "embed/embed_slab.h"

#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>

/* 8 MiB a slab: a chunk (at most 1024 records) that does not fit at a
 * slab's end leaves that end unused, under 2% of it for records of up to
 * 140 bytes; larger chunks get a mapping of their own. Untouched huge
 * pages of the last slab are not resident. */
#define HUGE_PAGE ((size_t)2 << 20)
#define SLAB_BYTES ((size_t)8 << 20)

/* Under AddressSanitizer each chunk is a malloc of its own, as it checks
 * accesses past the end of those and not within a mapping. */
#if defined(__SANITIZE_ADDRESS__)
#define SLAB_EACH_MALLOC 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SLAB_EACH_MALLOC 1
#endif
#endif
#ifndef SLAB_EACH_MALLOC
#define SLAB_EACH_MALLOC 0
#endif

void hs__embed_slabs_init(hs_embed_slabs *s) {
  *s = (hs_embed_slabs){0};
  pthread_mutex_init(&s->mu, NULL);
}

/* A mapping of `bytes` (a multiple of HUGE_PAGE) aligned to HUGE_PAGE. */
static void *map_aligned(size_t bytes) {
  size_t span = bytes + HUGE_PAGE;
  char *p = mmap(NULL, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return NULL;
  uintptr_t a = ((uintptr_t)p + HUGE_PAGE - 1) & ~(uintptr_t)(HUGE_PAGE - 1);
  char *q = (char *)a;
  if (q > p) munmap(p, (size_t)(q - p));
  if (q + bytes < p + span) munmap(q + bytes, (size_t)(p + span - (q + bytes)));
#ifdef MADV_HUGEPAGE
  (void)madvise(q, bytes, MADV_HUGEPAGE); /* a hint: without it, 4 KiB pages */
#endif
  return q;
}

static int remember(hs_embed_slabs *s, void *p, size_t bytes) {
  if (s->n == s->n_cap) {
    int nc = s->n_cap ? 2 * s->n_cap : 16;
    void **m = realloc(s->maps, (size_t)nc * sizeof *m);
    if (!m) return 0;
    s->maps = m;
    size_t *z = realloc(s->sizes, (size_t)nc * sizeof *z);
    if (!z) return 0;
    s->sizes = z;
    s->n_cap = nc;
  }
  s->maps[s->n] = p;
  s->sizes[s->n++] = bytes;
  return 1;
}

void *hs__embed_slabs_alloc(hs_embed_slabs *s, size_t bytes) {
  bytes = (bytes + 63) & ~(size_t)63;
  void *out = NULL;
  pthread_mutex_lock(&s->mu);
  if (SLAB_EACH_MALLOC) {
    out = malloc(bytes);
    if (out && !remember(s, out, 0)) { /* size 0: free(), not munmap() */
      free(out);
      out = NULL;
    }
  } else if (bytes > SLAB_BYTES / 4) {
    size_t whole = (bytes + HUGE_PAGE - 1) & ~(HUGE_PAGE - 1);
    out = map_aligned(whole);
    if (out && !remember(s, out, whole)) {
      munmap(out, whole);
      out = NULL;
    }
  } else {
    if (!s->cur || s->cap - s->used < bytes) {
      char *p = map_aligned(SLAB_BYTES);
      if (p && !remember(s, p, SLAB_BYTES)) {
        munmap(p, SLAB_BYTES);
        p = NULL;
      }
      if (p) {
        s->cur = p;
        s->used = 0;
        s->cap = SLAB_BYTES;
      }
    }
    if (s->cur && s->cap - s->used >= bytes) {
      out = s->cur + s->used;
      s->used += bytes;
    }
  }
  pthread_mutex_unlock(&s->mu);
  return out;
}

void hs__embed_slabs_free(hs_embed_slabs *s) {
  for (int i = 0; i < s->n; i++) {
    if (s->sizes[i]) munmap(s->maps[i], s->sizes[i]);
    else free(s->maps[i]);
  }
  free(s->maps);
  free(s->sizes);
  pthread_mutex_destroy(&s->mu);
  *s = (hs_embed_slabs){0};
}
