/* SNAP-style edge lists: "a b" per line (whitespace between), lines whose
 * first non-blank character is '#' or '%' are comments. Ids are renumbered
 * densely in order of first appearance (a before b on each line) unless
 * keep_ids, when they are vertex ids as they stand (N = max id + 1). */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hs_import.h"
#include "hs_maps.h"

enum { BYTES_PER_VERTEX = 16 }; /* the conversion's peak: measured 4.2 GB for 2^28 vertices */

hs_status hs__edgelist_parse(hs__text *t, bool keep_ids, hs__imported *imp) {
  hs__idmap map = {0};
  hs_status st = HS_OK;
  if (!keep_ids && (st = hs__idmap_init(&map))) return st;
  int64_t max_id = -1;
  /* Kept ids make N = max id + 1 vertices whatever the edges: one id near
   * 2^31 would have the conversion ask for more memory than there is (its
   * peak is two int64 offsets a vertex), so such an id is refused where
   * it stands. */
  long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  int64_t phys = pages > 0 && page > 0 ? (int64_t)pages * (int64_t)page : INT64_MAX;
  int64_t max_vertices = phys / BYTES_PER_VERTEX;
  int r;
  imp->format = "edgelist";
  while ((r = hs__text_next(t, &st)) > 0) {
    const char *end = t->line + t->len;
    const char *p = hs__skip_ws(t->line, end);
    if (p == end || *p == '#' || *p == '%') continue;
    int32_t v[2];
    for (int i = 0; i < 2; i++) {
      p = hs__skip_ws(p, end);
      const char *at = p;
      int64_t id;
      if (!hs__parse_i64(&p, end, &id) || id < 0) {
        st = hs__text_fail(t, at, "expected a vertex id (a non-negative integer)");
        goto fail;
      }
      if (p < end && !hs__is_space(*p)) {
        st = hs__text_fail(t, p, "unexpected character after a vertex id");
        goto fail;
      }
      if (keep_ids) {
        if (id > INT32_MAX - 1) {
          st = hs__text_fail_status(t, HS_ERR_UNSUPPORTED, at,
                                    "vertex id %" PRId64 " does not fit in int32 (N < 2^31)", id);
          goto fail;
        }
        if (id >= max_vertices) {
          st = hs__text_fail_status(
              t, HS_ERR_NOMEM, at,
              "vertex id %" PRId64 ": with the ids kept the graph has %" PRId64 " vertices, whose "
              "conversion needs about %.1f GiB (%d bytes a vertex), more than this machine's "
              "%.1f GiB of memory: renumber the ids (convert without --keep-ids)",
              id, id + 1, (double)(id + 1) * BYTES_PER_VERTEX / 1073741824.0, BYTES_PER_VERTEX,
              (double)phys / 1073741824.0);
          goto fail;
        }
        v[i] = (int32_t)id;
        if (id > max_id) max_id = id;
      } else {
        bool fresh;
        if ((st = hs__idmap_intern(&map, (uint64_t)id, &v[i], &fresh))) {
          hs__text_fail_status(t, st, at, "%s", hs_last_error());
          goto fail;
        }
      }
    }
    p = hs__skip_ws(p, end);
    if (p != end) {
      st = hs__text_fail(t, p, "expected 2 fields (weights and timestamps are not read)");
      goto fail;
    }
    if ((st = hs__edges_push(imp, v[0], v[1]))) goto fail;
  }
  if (r < 0) goto fail;
  imp->n = keep_ids ? max_id + 1 : map.n;
fail:
  if (!keep_ids) hs__idmap_free(&map);
  return st;
}

hs_status hs__import_edgelist(const char *src, const hs_convert_opts *o, hs__imported *imp) {
  hs__text t;
  hs_status st = hs__text_open(&t, src);
  if (st) return st;
  hs__progress(o->progress, o->progress_ctx, "reading %s", t.name);
  st = hs__edgelist_parse(&t, o->keep_ids, imp);
  hs__text_close(&t);
  return st;
}

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

hs_status hs__find_one(const char *dir, const char *suffix, char **out) {
  *out = NULL;
  DIR *d = opendir(dir);
  if (!d) return hs__fail(HS_ERR_IO, "%s: cannot open directory: %s", dir, strerror(errno));
  char **names = NULL;
  size_t n = 0, cap = 0;
  hs_status st = HS_OK;
  size_t sl = strlen(suffix);
  struct dirent *e;
  while ((e = readdir(d))) {
    size_t l = strlen(e->d_name);
    size_t base;
    if (l > sl && strcmp(e->d_name + l - sl, suffix) == 0) base = l - sl;
    else if (l > sl + 3 && strncmp(e->d_name + l - sl - 3, suffix, sl) == 0 &&
             strcmp(e->d_name + l - 3, ".gz") == 0)
      base = l - sl - 3;
    else
      continue;
    if (n == cap) {
      size_t nc = cap ? cap * 2 : 8;
      char **nn = realloc(names, nc * sizeof *nn);
      if (!nn) {
        st = hs__fail(HS_ERR_NOMEM, "no memory");
        goto fail;
      }
      names = nn;
      cap = nc;
    }
    names[n] = strdup(e->d_name);
    if (!names[n]) {
      st = hs__fail(HS_ERR_NOMEM, "no memory");
      goto fail;
    }
    names[n][base] = '\0'; /* keep the base; the suffix is known */
    n++;
  }
  if (n == 0) {
    st = hs__fail(HS_ERR_IO, "%s: no file named *%s or *%s.gz", dir, suffix, suffix);
    goto fail;
  }
  qsort(names, n, sizeof *names, cmp_str);
  for (size_t i = 1; i < n; i++)
    if (strcmp(names[i], names[0]) != 0) {
      st = hs__fail(HS_ERR_IO, "%s: several *%s files (%s%s, %s%s): which one is meant?", dir,
                    suffix, names[0], suffix, names[i], suffix);
      goto fail;
    }
  {
    /* "<base><suffix>"; hs__text_open falls back to the .gz twin. */
    size_t l = strlen(dir) + strlen(names[0]) + sl + 2;
    *out = malloc(l);
    if (!*out) {
      st = hs__fail(HS_ERR_NOMEM, "no memory");
      goto fail;
    }
    snprintf(*out, l, "%s/%s%s", dir, names[0], suffix);
  }
fail:
  closedir(d);
  for (size_t i = 0; i < n; i++) free(names[i]);
  free(names);
  return st;
}
