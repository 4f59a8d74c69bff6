/* LINQS citation datasets (Cora and kin). */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "hs_import.h"
#include "hs_maps.h"

static const char *token_end(const char *p, const char *end) {
  while (p < end && !hs__is_space(*p)) p++;
  return p;
}

static hs_status grow(void **p, size_t *cap, size_t need, size_t elem) {
  if (need <= *cap) return HS_OK;
  size_t nc = *cap ? *cap : 1024;
  while (nc < need) {
    if (nc > SIZE_MAX / 2 / elem) return hs__fail(HS_ERR_NOMEM, "input too large");
    nc *= 2;
  }
  void *np = realloc(*p, nc * elem);
  if (!np) return hs__fail(HS_ERR_NOMEM, "no memory for %zu items", nc);
  *p = np;
  *cap = nc;
  return HS_OK;
}

static hs_status parse_content(hs__text *t, hs__strmap *ids, hs__strmap *classes,
                               hs__imported *imp) {
  size_t fcap = 0, lcap = 0;
  int64_t nf = -1;
  hs_status st = HS_OK;
  int r;
  while ((r = hs__text_next(t, &st)) > 0) {
    const char *end = t->line + t->len;
    const char *p = hs__skip_ws(t->line, end);
    if (p == end) continue;
    const char *q = token_end(p, end);
    int32_t v;
    bool fresh;
    if ((st = hs__strmap_intern(ids, p, (size_t)(q - p), &v, &fresh))) return st;
    if (!fresh)
      return hs__text_fail(t, p, "paper id '%.*s' appears on an earlier line",
                           (int)(q - p > 64 ? 64 : q - p), p);
    int64_t k = 0;
    size_t row = (size_t)v;
    float *dst = NULL;
    if (nf > 0) { /* row 0 fixed F: room for this whole row at once */
      size_t need;
      if (!hs__mul_size(row + 1, (size_t)nf, &need))
        return hs__fail(HS_ERR_NOMEM, "too many features");
      if ((st = grow((void **)&imp->feat, &fcap, need, sizeof(float)))) return st;
      dst = imp->feat + row * (size_t)nf;
    }
    p = hs__skip_ws(q, end);
    for (;;) {
      if (p == end) return hs__text_fail(t, NULL, "line has no class label");
      q = token_end(p, end);
      const char *next = hs__skip_ws(q, end);
      if (next == end) break; /* the last token: the class */
      if (nf >= 0 && k >= nf)
        return hs__text_fail(t, p,
                             "more fields than the first line's %" PRId64
                             " (id, %" PRId64 " features, class)",
                             nf + 2, nf);
      float x;
      if (q - p == 1 && (*p == '0' || *p == '1')) {
        x = (float)(*p - '0'); /* bag-of-words files are mostly these */
      } else {
        const char *num = p;
        if (!hs__parse_f32(&num, q, &x) || num != q)
          return hs__text_fail(t, p, "feature %" PRId64 ": expected a number, found '%.*s'", k,
                               (int)(q - p > 32 ? 32 : q - p), p);
        if (x != x || x - x != 0)
          return hs__text_fail(t, p, "feature %" PRId64 ": not a finite number", k);
      }
      if (nf < 0) {
        if ((st = grow((void **)&imp->feat, &fcap, (size_t)k + 1, sizeof(float)))) return st;
        imp->feat[k] = x;
      } else {
        dst[k] = x;
      }
      k++;
      p = next;
    }
    if (nf < 0) nf = k;
    else if (k != nf)
      return hs__text_fail(t, p, "%" PRId64 " features, the first line has %" PRId64, k, nf);
    int32_t c;
    if ((st = hs__strmap_intern(classes, p, (size_t)(q - p), &c, &fresh))) return st;
    if ((st = grow((void **)&imp->labels, &lcap, row + 1, sizeof(int32_t)))) return st;
    imp->labels[row] = c;
    imp->n = (int64_t)row + 1;
  }
  if (r < 0) return st;
  if (imp->n == 0) return hs__fail(HS_ERR_FORMAT, "%s: no papers", t->name);
  imp->f = nf;
  return HS_OK;
}

static hs_status parse_cites(hs__text *t, const hs__strmap *ids, const char *content_name,
                             hs__imported *imp) {
  hs_status st = HS_OK;
  int r;
  while ((r = hs__text_next(t, &st)) > 0) {
    const char *end = t->line + t->len;
    const char *p = hs__skip_ws(t->line, end);
    if (p == end) continue;
    int32_t v[2];
    for (int i = 0; i < 2; i++) {
      if (p == end) return hs__text_fail(t, NULL, "expected two paper ids");
      const char *q = token_end(p, end);
      v[i] = hs__strmap_get(ids, p, (size_t)(q - p));
      if (v[i] < 0)
        return hs__text_fail(t, p, "paper id '%.*s' is not in %s",
                             (int)(q - p > 64 ? 64 : q - p), p, content_name);
      p = hs__skip_ws(q, end);
    }
    if (p != end) return hs__text_fail(t, p, "more than two fields");
    /* "A B": B cites A. */
    if ((st = hs__edges_push(imp, v[1], v[0]))) return st;
  }
  return r < 0 ? st : HS_OK;
}

hs_status hs__linqs_parse(hs__text *content, hs__text *cites, hs__imported *imp) {
  hs__strmap ids, classes;
  hs_status st = hs__strmap_init(&ids);
  if (st) return st;
  if ((st = hs__strmap_init(&classes))) {
    hs__strmap_free(&ids);
    return st;
  }
  imp->format = "linqs";
  if ((st = parse_content(content, &ids, &classes, imp))) goto fail;
  if ((st = parse_cites(cites, &ids, content->name, imp))) goto fail;
  st = hs__labels_by_name(imp, classes.strs, classes.n);
fail:
  hs__strmap_free(&ids);
  hs__strmap_free(&classes);
  return st;
}

static bool ends_with(const char *s, const char *suf) {
  size_t a = strlen(s), b = strlen(suf);
  return a >= b && strcmp(s + a - b, suf) == 0;
}

hs_status hs__import_linqs(const char *src, const hs_convert_opts *o, hs__imported *imp) {
  char *content_path = NULL, *cites_path = NULL;
  hs__text ct = {0}, cs = {0};
  hs_status st;
  struct stat sb;
  if (stat(src, &sb) != 0)
    return hs__fail(HS_ERR_IO, "%s: cannot open: %s", src, strerror(errno));
  if (S_ISDIR(sb.st_mode)) {
    if ((st = hs__find_one(src, ".content", &content_path))) return st;
  } else {
    content_path = strdup(src);
    if (!content_path) return hs__fail(HS_ERR_NOMEM, "no memory");
  }
  size_t l = strlen(content_path);
  size_t cut = ends_with(content_path, ".content.gz") ? 11 : ends_with(content_path, ".content") ? 8 : 0;
  if (!cut) {
    st = hs__fail(HS_ERR_INVALID_ARG, "%s: expected a directory or a .content file", src);
    goto fail;
  }
  cites_path = malloc(l + 8);
  if (!cites_path) {
    st = hs__fail(HS_ERR_NOMEM, "no memory");
    goto fail;
  }
  memcpy(cites_path, content_path, l - cut);
  strcpy(cites_path + l - cut, ".cites");
  if ((st = hs__text_open(&ct, content_path))) goto fail;
  if ((st = hs__text_open(&cs, cites_path))) goto fail;
  hs__progress(o->progress, o->progress_ctx, "reading %s and %s", ct.name, cs.name);
  st = hs__linqs_parse(&ct, &cs, imp);
fail:
  hs__text_close(&ct);
  hs__text_close(&cs);
  free(content_path);
  free(cites_path);
  return st;
}
