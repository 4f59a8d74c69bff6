/* Slabs for record chunks (see embed_slab.h). */
#include "embed/embed_slab.h"

#include <stdlib.h>

#include "hs_base.h"

/* 8 MiB a slab: a chunk (at most 1024 records) that does not fit at a
 * slab's end leaves that end unused, under 2% of it for records of up to
 * 140 bytes; larger chunks get a mapping of their own. Untouched huge
 * pages of the last slab are not resident. */
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

/* Keep `p` to give back with the store (len 0: a malloc). False when out
 * of memory, `p` then given back at once. */
static bool remember(hs_embed_slabs *s, void *p, size_t len) {
  if (s->n == s->n_cap) {
    int nc = s->n_cap ? 2 * s->n_cap : 16;
    hs_embed_mapping *m = realloc(s->maps, (size_t)nc * sizeof *m);
    if (!m) {
      if (len) hs__huge_unmap(p, len);
      else free(p);
      return false;
    }
    s->maps = m;
    s->n_cap = nc;
  }
  s->maps[s->n++] = (hs_embed_mapping){p, len};
  return true;
}

/* `bytes` on huge pages, remembered; NULL when out of memory. */
static void *map(hs_embed_slabs *s, size_t bytes) {
  size_t len;
  bool advised; /* a hint: without it, 4 KiB pages */
  void *p = hs__huge_map(bytes, &len, &advised);
  return p && remember(s, p, len) ? p : NULL;
}

void *hs__embed_slabs_alloc(hs_embed_slabs *s, size_t bytes) {
  bytes = (bytes + 63) & ~(size_t)63;
  void *out = NULL;
  pthread_mutex_lock(&s->mu);
  if (SLAB_EACH_MALLOC) {
    out = malloc(bytes);
    if (out && !remember(s, out, 0)) out = NULL;
  } else if (bytes > SLAB_BYTES / 4) {
    out = map(s, bytes);
  } else {
    if (!s->cur || SLAB_BYTES - s->used < bytes) {
      char *p = map(s, SLAB_BYTES);
      if (p) {
        s->cur = p;
        s->used = 0;
      }
    }
    if (s->cur && SLAB_BYTES - s->used >= bytes) {
      out = s->cur + s->used;
      s->used += bytes;
    }
  }
  pthread_mutex_unlock(&s->mu);
  return out;
}

void hs__embed_slabs_free(hs_embed_slabs *s) {
  for (int i = 0; i < s->n; i++) {
    if (s->maps[i].len) hs__huge_unmap(s->maps[i].p, s->maps[i].len);
    else free(s->maps[i].p);
  }
  free(s->maps);
  pthread_mutex_destroy(&s->mu);
  *s = (hs_embed_slabs){0};
}
