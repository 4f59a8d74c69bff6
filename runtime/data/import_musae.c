/* MUSAE datasets (Rozemberczki et al.): edges/, features/, target/. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "hs_import.h"
#include "hs_maps.h"

/* One CSV field (RFC 4180 quoting) starting at p: its value is [*vs, *ve)
 * (inside the quotes, with "" still doubled) and *next is past the comma
 * or at the end. */
static hs_status csv_field(const hs__text *t, const char *p, const char *end,
                           const char **vs, const char **ve, bool *quoted,
                           const char **next) {
  *quoted = false;
  if (p < end && *p == '"') {
    const char *open = p++;
    *vs = p;
    for (;;) {
      if (p >= end) return hs__text_fail(t, open, "unterminated quoted field");
      if (*p == '"') {
        if (p + 1 < end && p[1] == '"') {
          p += 2;
          continue;
        }
        break;
      }
      p++;
    }
    *ve = p++;
    *quoted = true;
    if (p < end && *p != ',') return hs__text_fail(t, p, "expected ',' after a quoted field");
  } else {
    *vs = p;
    while (p < end && *p != ',') p++;
    *ve = p;
  }
  *next = p < end ? p + 1 : p;
  return HS_OK;
}

static bool whole_i64(const char *s, const char *e, int64_t *v) {
  while (s < e && hs__is_space(*s)) s++;
  while (e > s && hs__is_space(e[-1])) e--;
  const char *p = s;
  return hs__parse_i64(&p, e, v) && p == e;
}

hs_status hs__musae_parse_target(hs__text *t, hs__imported *imp) {
  hs__strmap classes;
  hs_status st = hs__strmap_init(&classes);
  if (st) return st;
  int64_t *ids = NULL;
  uint64_t *lines = NULL;
  int32_t *cls = NULL;
  char *name = NULL;
  size_t n = 0, cap = 0;
  int r;
  imp->format = "musae";
  bool header = true;
  while ((r = hs__text_next(t, &st)) > 0) {
    if (header) { /* the first line names the columns */
      header = false;
      continue;
    }
    const char *end = t->line + t->len;
    if (hs__skip_ws(t->line, end) == end) continue;
    const char *p = t->line, *first_s = NULL, *first_e = NULL, *last_s = NULL, *last_e = NULL;
    bool quoted = false, last_quoted = false;
    int fields = 0;
    do {
      const char *vs = p, *ve = p;
      if ((st = csv_field(t, p, end, &vs, &ve, &quoted, &p))) goto fail;
      if (fields++ == 0) {
        first_s = vs;
        first_e = ve;
      }
      last_s = vs;
      last_e = ve;
      last_quoted = quoted;
    } while (p < end);
    if (fields < 2) {
      st = hs__text_fail(t, NULL, "expected at least 2 fields (id, ..., class)");
      goto fail;
    }
    int64_t id;
    if (!whole_i64(first_s, first_e, &id) || id < 0 || id > INT32_MAX - 1) {
      st = hs__text_fail(t, first_s, "expected a vertex id (an integer in [0, 2^31 - 1))");
      goto fail;
    }
    /* The class name, with "" undoubled inside quotes. */
    size_t ln = (size_t)(last_e - last_s);
    free(name);
    name = malloc(ln + 1);
    if (!name) {
      st = hs__fail(HS_ERR_NOMEM, "no memory");
      goto fail;
    }
    size_t k = 0;
    for (const char *c = last_s; c < last_e; c++) {
      name[k++] = *c;
      if (last_quoted && *c == '"') c++;
    }
    if (k == 0) {
      st = hs__text_fail(t, last_s, "empty class name");
      goto fail;
    }
    if (n == cap) {
      size_t nc = cap ? cap * 2 : 1024;
      int64_t *a = realloc(ids, nc * sizeof *a);
      if (a) ids = a;
      uint64_t *b = realloc(lines, nc * sizeof *b);
      if (b) lines = b;
      int32_t *c = realloc(cls, nc * sizeof *c);
      if (c) cls = c;
      if (!a || !b || !c) {
        st = hs__fail(HS_ERR_NOMEM, "no memory");
        goto fail;
      }
      cap = nc;
    }
    bool fresh;
    if ((st = hs__strmap_intern(&classes, name, k, &cls[n], &fresh))) goto fail;
    ids[n] = id;
    lines[n] = t->lineno;
    n++;
  }
  if (r < 0) goto fail;
  if (n == 0) {
    st = hs__fail(HS_ERR_FORMAT, "%s: no rows after the header", t->name);
    goto fail;
  }
  imp->n = (int64_t)n;
  imp->labels = malloc(n * sizeof *imp->labels);
  if (!imp->labels) {
    st = hs__fail(HS_ERR_NOMEM, "no memory");
    goto fail;
  }
  for (size_t i = 0; i < n; i++) imp->labels[i] = -2;
  for (size_t i = 0; i < n; i++) {
    if (ids[i] >= (int64_t)n) {
      st = hs__fail(HS_ERR_FORMAT, "%s:%" PRIu64 ":1: id %" PRId64
                    " is out of range: %zu rows need ids 0..%zu",
                    t->name, lines[i], ids[i], n, n - 1);
      goto fail;
    }
    if (imp->labels[ids[i]] != -2) {
      st = hs__fail(HS_ERR_FORMAT, "%s:%" PRIu64 ":1: id %" PRId64 " has an earlier row",
                    t->name, lines[i], ids[i]);
      goto fail;
    }
    imp->labels[ids[i]] = cls[i];
  }
  st = hs__labels_by_name(imp, classes.strs, classes.n);
fail:
  free(ids);
  free(lines);
  free(cls);
  free(name);
  hs__strmap_free(&classes);
  return st;
}

hs_status hs__musae_parse_edges(hs__text *t, hs__imported *imp) {
  hs_status st = HS_OK;
  int r;
  while ((r = hs__text_next(t, &st)) > 0) {
    const char *end = t->line + t->len;
    const char *p = hs__skip_ws(t->line, end);
    if (p == end) continue;
    if (t->lineno == 1 && !(*p >= '0' && *p <= '9')) continue; /* "id_1,id_2" */
    int64_t v[2];
    for (int i = 0; i < 2; i++) {
      p = hs__skip_ws(p, end);
      const char *at = p;
      if (!hs__parse_i64(&p, end, &v[i]))
        return hs__text_fail(t, at, "expected a vertex id");
      if (v[i] < 0 || v[i] >= imp->n)
        return hs__text_fail(t, at, "vertex id %" PRId64 " is not in the target file (0..%" PRId64 ")",
                             v[i], imp->n - 1);
      p = hs__skip_ws(p, end);
      if (i == 0) {
        if (p >= end || *p != ',') return hs__text_fail(t, p, "expected ','");
        p++;
      }
    }
    if (p != end) return hs__text_fail(t, p, "expected the end of the line after two ids");
    if ((st = hs__edges_push(imp, (int32_t)v[0], (int32_t)v[1]))) return st;
  }
  return r < 0 ? st : HS_OK;
}

/* ---- features JSON ------------------------------------------------------ */

typedef struct jp {
  const char *name, *base, *p, *end;
} jp;

static void jws(jp *j) {
  while (j->p < j->end &&
         (*j->p == ' ' || *j->p == '\t' || *j->p == '\n' || *j->p == '\r'))
    j->p++;
}

static hs_status jfail(const jp *j, const char *what) {
  return hs__text_fail_in(j->name, j->base, j->p, "%s", what);
}

static bool jchar(jp *j, char c) {
  jws(j);
  if (j->p < j->end && *j->p == c) {
    j->p++;
    return true;
  }
  return false;
}

static int cmp_i32(const void *a, const void *b) {
  int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
  return (x > y) - (x < y);
}

hs_status hs__musae_parse_features(const char *name, const char *json, size_t len,
                                   hs__imported *imp) {
  jp j = {name, json, json, json + len};
  hs_status st = HS_OK;
  int32_t *node = NULL, *fid = NULL;
  size_t m = 0, cap = 0;
  uint8_t *seen = calloc((size_t)imp->n + 1, 1);
  if (!seen) return hs__fail(HS_ERR_NOMEM, "no memory");
  int64_t maxf = -1;
  if (!jchar(&j, '{')) {
    st = jfail(&j, "expected '{'");
    goto fail;
  }
  if (!jchar(&j, '}')) {
    for (;;) {
      jws(&j);
      if (!jchar(&j, '"')) {
        st = jfail(&j, "expected a quoted vertex id");
        goto fail;
      }
      const char *ks = j.p;
      int64_t v;
      if (!hs__parse_i64(&j.p, j.end, &v) || j.p >= j.end || *j.p != '"' || *ks == '-' ||
          *ks == '+') {
        j.p = ks;
        st = jfail(&j, "expected a vertex id (digits) as the key");
        goto fail;
      }
      if (v >= imp->n) {
        j.p = ks;
        st = hs__text_fail_in(name, json, ks, "vertex id %" PRId64 " is not in the target file (0..%" PRId64 ")",
                              v, imp->n - 1);
        goto fail;
      }
      if (seen[v]) {
        j.p = ks;
        st = hs__text_fail_in(name, json, ks, "vertex id %" PRId64 " appears twice", v);
        goto fail;
      }
      seen[v] = 1;
      j.p++;
      if (!jchar(&j, ':')) {
        st = jfail(&j, "expected ':'");
        goto fail;
      }
      if (!jchar(&j, '[')) {
        st = jfail(&j, "expected '[' (a list of feature ids)");
        goto fail;
      }
      if (!jchar(&j, ']')) {
        for (;;) {
          jws(&j);
          const char *at = j.p;
          int64_t f;
          if (!hs__parse_i64(&j.p, j.end, &f) || f < 0 || f > (1 << 24) ||
              (j.p < j.end && (*j.p == '.' || *j.p == 'e' || *j.p == 'E'))) {
            j.p = at;
            st = jfail(&j, "expected a feature id (an integer in [0, 2^24])");
            goto fail;
          }
          if (m == cap) {
            size_t nc = cap ? cap * 2 : 4096;
            int32_t *a = realloc(node, nc * sizeof *a);
            if (a) node = a;
            int32_t *b = realloc(fid, nc * sizeof *b);
            if (b) fid = b;
            if (!a || !b) {
              st = hs__fail(HS_ERR_NOMEM, "no memory");
              goto fail;
            }
            cap = nc;
          }
          node[m] = (int32_t)v;
          fid[m] = (int32_t)f;
          m++;
          if (f > maxf) maxf = f;
          if (jchar(&j, ',')) continue;
          if (jchar(&j, ']')) break;
          st = jfail(&j, "expected ',' or ']'");
          goto fail;
        }
      }
      if (jchar(&j, ',')) continue;
      if (jchar(&j, '}')) break;
      st = jfail(&j, "expected ',' or '}'");
      goto fail;
    }
  }
  jws(&j);
  if (j.p != j.end) {
    st = jfail(&j, "unexpected text after the JSON object");
    goto fail;
  }
  /* Sparse rows: counting sort by vertex, then sort and dedup each row. */
  imp->sp_ptr = calloc((size_t)imp->n + 1, sizeof *imp->sp_ptr);
  imp->sp_ids = malloc((m ? m : 1) * sizeof *imp->sp_ids);
  if (!imp->sp_ptr || !imp->sp_ids) {
    st = hs__fail(HS_ERR_NOMEM, "no memory");
    goto fail;
  }
  for (size_t i = 0; i < m; i++) imp->sp_ptr[node[i] + 1]++;
  for (int64_t v = 0; v < imp->n; v++) imp->sp_ptr[v + 1] += imp->sp_ptr[v];
  for (size_t i = 0; i < m; i++) imp->sp_ids[imp->sp_ptr[node[i]]++] = fid[i];
  for (int64_t v = imp->n; v > 0; v--) imp->sp_ptr[v] = imp->sp_ptr[v - 1];
  imp->sp_ptr[0] = 0;
  int64_t out = 0;
  for (int64_t v = 0; v < imp->n; v++) {
    int64_t b = imp->sp_ptr[v], e = imp->sp_ptr[v + 1];
    qsort(imp->sp_ids + b, (size_t)(e - b), sizeof(int32_t), cmp_i32);
    imp->sp_ptr[v] = out;
    for (int64_t k = b; k < e; k++)
      if (k == b || imp->sp_ids[k] != imp->sp_ids[k - 1]) imp->sp_ids[out++] = imp->sp_ids[k];
  }
  imp->sp_ptr[imp->n] = out;
  imp->f = maxf + 1;
fail:
  free(seen);
  free(node);
  free(fid);
  return st;
}

hs_status hs__import_musae(const char *src, const hs_convert_opts *o, hs__imported *imp) {
  char *dirs[3] = {NULL, NULL, NULL}, *files[3] = {NULL, NULL, NULL};
  static const char *const sub[3] = {"target", "edges", "features"};
  static const char *const suf[3] = {".csv", ".csv", ".json"};
  hs__text t = {0};
  char *json = NULL;
  size_t len;
  hs_status st = HS_OK;
  for (int i = 0; i < 3; i++) {
    dirs[i] = hs__path_join(src, sub[i]);
    if (!dirs[i]) {
      st = hs__fail(HS_ERR_NOMEM, "no memory");
      goto fail;
    }
    if ((st = hs__find_one(dirs[i], suf[i], &files[i]))) goto fail;
  }
  if ((st = hs__text_open(&t, files[0]))) goto fail;
  hs__progress(o->progress, o->progress_ctx, "reading %s", t.name);
  if ((st = hs__musae_parse_target(&t, imp))) goto fail;
  hs__text_close(&t);
  if ((st = hs__text_open(&t, files[1]))) goto fail;
  hs__progress(o->progress, o->progress_ctx, "reading %s", t.name);
  if ((st = hs__musae_parse_edges(&t, imp))) goto fail;
  hs__text_close(&t);
  if ((st = hs__text_open(&t, files[2]))) goto fail;
  hs__progress(o->progress, o->progress_ctx, "reading %s", t.name);
  if ((st = hs__text_slurp(&t, &json, &len))) goto fail;
  st = hs__musae_parse_features(t.name, json, len, imp);
fail:
  hs__text_close(&t);
  free(json);
  for (int i = 0; i < 3; i++) {
    free(dirs[i]);
    free(files[i]);
  }
  return st;
}
