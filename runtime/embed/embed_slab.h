/* Memory for the store's record chunks: slabs of address space aligned to
 * 2 MiB and advised for transparent huge pages, handed out front to back.
 * A lookup reaches a record at random among millions (hundreds of MiB):
 * on 4 KiB pages nearly each one cost a page walk besides its cache
 * misses, which no prefetch hides. Chunks are never freed one by one: the
 * slabs go back with the store. Thread-safe (creation passes run on every
 * lookup thread). */
#ifndef HS_EMBED_SLAB_H
#define HS_EMBED_SLAB_H

#include <pthread.h>
#include <stddef.h>

typedef struct hs_embed_mapping {
  void *p;
  size_t len; /* hs__huge_map's length; 0: a malloc (under ASan) */
} hs_embed_mapping;

typedef struct hs_embed_slabs {
  pthread_mutex_t mu;
  char *cur;               /* the slab being handed out, NULL: none */
  size_t used;             /* bytes of it handed out */
  hs_embed_mapping *maps;  /* everything to give back */
  int n, n_cap;
} hs_embed_slabs;

void hs__embed_slabs_init(hs_embed_slabs *s);
/* `bytes` (a multiple of 64 is kept 64-aligned), or NULL when out of
 * memory. */
void *hs__embed_slabs_alloc(hs_embed_slabs *s, size_t bytes);
/* Give back everything handed out. */
void hs__embed_slabs_free(hs_embed_slabs *s);

#endif
