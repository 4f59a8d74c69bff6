/* OGB raw node-property directories, as the OGB downloads unpack:
 *
 *   raw/num-node-list.csv   N (optional; one graph only)
 *   raw/edge.csv            "src,dst" per line, no header
 *   raw/node-feat.csv       F comma-separated floats per vertex (optional)
 *   raw/node-label.csv      one label per vertex (optional): an integer,
 *                           "3.0" style integral floats too; "nan" or an
 *                           empty line marks an unlabelled vertex (-1)
 *   split/<name>/{train,valid,test}.csv   one vertex id per line (optional;
 *                           with several <name>s the first by name is used)
 *
 * Each file may be gzip-compressed, with or without ".gz". */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "hs_import.h"

static bool file_exists(const char *path) {
  struct stat sb;
  if (stat(path, &sb) == 0) return true;
  size_t l = strlen(path);
  char *gz = malloc(l + 4);
  if (!gz) return false;
  memcpy(gz, path, l);
  memcpy(gz + l, ".gz", 4);
  bool r = stat(gz, &sb) == 0;
  free(gz);
  return r;
}

static bool blank(const char *p, const char *end) { return hs__skip_ws(p, end) == end; }

static hs_status read_num_nodes(const char *path, int64_t *n) {
  hs__text t;
  hs_status st = hs__text_open(&t, path);
  if (st) return st;
  int r, lines = 0;
  while ((r = hs__text_next(&t, &st)) > 0) {
    const char *end = t.line + t.len;
    if (blank(t.line, end)) continue;
    const char *p = hs__skip_ws(t.line, end);
    if (++lines > 1) {
      st = hs__text_fail_status(&t, HS_ERR_UNSUPPORTED, p,
                                "several graphs: only single-graph datasets are read");
      break;
    }
    const char *at = p;
    if (!hs__parse_i64(&p, end, n) || *n < 0 || !blank(p, end)) {
      st = hs__text_fail(&t, at, "expected the vertex count");
      break;
    }
    if (*n > INT32_MAX) {
      st = hs__text_fail_status(&t, HS_ERR_UNSUPPORTED, at,
                                "%" PRId64 " vertices: ids must fit in int32 (N < 2^31)", *n);
      break;
    }
  }
  if (!st && r == 0 && lines == 0) st = hs__fail(HS_ERR_FORMAT, "%s: empty", t.name);
  hs__text_close(&t);
  return st;
}

static hs_status read_features(const char *path, hs__imported *imp, const hs_convert_opts *o) {
  hs__text t;
  hs_status st = hs__text_open(&t, path);
  if (st) return st;
  hs__progress(o->progress, o->progress_ctx, "reading %s", t.name);
  size_t cap = 0, row = 0;
  int64_t nf = -1;
  int r;
  while ((r = hs__text_next(&t, &st)) > 0) {
    const char *end = t.line + t.len;
    if (imp->n >= 0 && (int64_t)row >= imp->n) {
      st = hs__text_fail(&t, t.line, "more feature rows than the %" PRId64 " vertices", imp->n);
      goto fail;
    }
    if (nf >= 0) {
      size_t need;
      if (!hs__mul_size(row + 1, (size_t)nf, &need)) {
        st = hs__fail(HS_ERR_NOMEM, "too many features");
        goto fail;
      }
      if (need > cap) {
        size_t nc = cap * 2 > need ? cap * 2 : need;
        if (imp->n >= 0 && (size_t)imp->n * (size_t)nf > nc) nc = (size_t)imp->n * (size_t)nf;
        float *nb = realloc(imp->feat, nc * sizeof *nb);
        if (!nb) {
          st = hs__fail(HS_ERR_NOMEM, "no memory for %zu features", nc);
          goto fail;
        }
        imp->feat = nb;
        cap = nc;
      }
    }
    const char *p = t.line;
    int64_t k = 0;
    for (;;) {
      p = hs__skip_ws(p, end);
      const char *at = p;
      float x;
      if (!hs__parse_f32(&p, end, &x) || !isfinite(x)) {
        st = hs__text_fail(&t, at, "feature %" PRId64 ": expected a finite number", k);
        goto fail;
      }
      if (nf < 0) {
        /* First row: grow as it goes. */
        if ((size_t)k + 1 > cap) {
          size_t nc = cap ? cap * 2 : 256;
          float *nb = realloc(imp->feat, nc * sizeof *nb);
          if (!nb) {
            st = hs__fail(HS_ERR_NOMEM, "no memory");
            goto fail;
          }
          imp->feat = nb;
          cap = nc;
        }
        imp->feat[k] = x;
      } else {
        if (k >= nf) {
          st = hs__text_fail(&t, at, "more than the first row's %" PRId64 " features", nf);
          goto fail;
        }
        imp->feat[row * (size_t)nf + (size_t)k] = x;
      }
      k++;
      p = hs__skip_ws(p, end);
      if (p == end) break;
      if (*p != ',') {
        st = hs__text_fail(&t, p, "expected ',' between features");
        goto fail;
      }
      p++;
    }
    if (nf < 0) nf = k;
    else if (k != nf) {
      st = hs__text_fail(&t, NULL, "%" PRId64 " features, the first row has %" PRId64, k, nf);
      goto fail;
    }
    row++;
    if ((row & ((1u << 20) - 1)) == 0)
      hs__progress(o->progress, o->progress_ctx, "  %zu feature rows", row);
  }
  if (r < 0) goto fail;
  if (imp->n < 0) {
    if (row > INT32_MAX) {
      st = hs__fail(HS_ERR_UNSUPPORTED, "%s: %zu rows: ids must fit in int32", t.name, row);
      goto fail;
    }
    imp->n = (int64_t)row;
  } else if ((int64_t)row != imp->n) {
    st = hs__fail(HS_ERR_FORMAT, "%s:%" PRIu64 ": %zu feature rows for %" PRId64 " vertices",
                  t.name, t.lineno, row, imp->n);
    goto fail;
  }
  imp->f = nf < 0 ? 0 : nf;
fail:
  hs__text_close(&t);
  return st;
}

static hs_status read_labels(const char *path, hs__imported *imp) {
  hs__text t;
  hs_status st = hs__text_open(&t, path);
  if (st) return st;
  size_t cap = 0, row = 0;
  int32_t max = -1;
  int r;
  while ((r = hs__text_next(&t, &st)) > 0) {
    const char *end = t.line + t.len;
    if (imp->n >= 0 && (int64_t)row >= imp->n) {
      st = hs__text_fail(&t, t.line, "more label rows than the %" PRId64 " vertices", imp->n);
      goto fail;
    }
    if (row == cap) {
      size_t nc = cap ? cap * 2 : (imp->n > 0 ? (size_t)imp->n : 1024);
      int32_t *nb = realloc(imp->labels, nc * sizeof *nb);
      if (!nb) {
        st = hs__fail(HS_ERR_NOMEM, "no memory");
        goto fail;
      }
      imp->labels = nb;
      cap = nc;
    }
    const char *p = hs__skip_ws(t.line, end);
    int32_t lab = -1;
    if (p != end && !((end - p) == 3 && (strncmp(p, "nan", 3) == 0 || strncmp(p, "NaN", 3) == 0))) {
      const char *at = p;
      int64_t v;
      bool ok = hs__parse_i64(&p, end, &v);
      if (ok && p < end && *p == '.') { /* "3.0": integral floats */
        p++;
        while (p < end && *p == '0') p++;
      }
      if (!ok || !blank(p, end) || v < 0 || v > INT32_MAX - 1) {
        st = hs__text_fail(&t, at, "expected a class (an integer >= 0), nan or nothing");
        goto fail;
      }
      lab = (int32_t)v;
    }
    imp->labels[row++] = lab;
    if (lab > max) max = lab;
  }
  if (r < 0) goto fail;
  if (imp->n < 0) imp->n = (int64_t)row;
  else if ((int64_t)row != imp->n) {
    st = hs__fail(HS_ERR_FORMAT, "%s:%" PRIu64 ": %zu label rows for %" PRId64 " vertices",
                  t.name, t.lineno, row, imp->n);
    goto fail;
  }
  imp->classes = max + 1;
fail:
  hs__text_close(&t);
  return st;
}

static hs_status read_edges(const char *path, hs__imported *imp, const hs_convert_opts *o) {
  hs__text t;
  hs_status st = hs__text_open(&t, path);
  if (st) return st;
  hs__progress(o->progress, o->progress_ctx, "reading %s", t.name);
  int64_t max_id = -1;
  int64_t lim = imp->n >= 0 ? imp->n - 1 : INT32_MAX - 1;
  int r;
  while ((r = hs__text_next(&t, &st)) > 0) {
    const char *end = t.line + t.len;
    if (blank(t.line, end)) continue;
    const char *p = t.line;
    int64_t v[2];
    for (int i = 0; i < 2; i++) {
      p = hs__skip_ws(p, end);
      const char *at = p;
      if (!hs__parse_i64(&p, end, &v[i]) || v[i] < 0) {
        st = hs__text_fail(&t, at, "expected a vertex id");
        goto fail;
      }
      if (v[i] > lim) {
        st = hs__text_fail_status(&t, imp->n >= 0 ? HS_ERR_FORMAT : HS_ERR_UNSUPPORTED, at,
                                  "vertex id %" PRId64 " is not below N = %" PRId64, v[i],
                                  lim + 1);
        goto fail;
      }
      if (v[i] > max_id) max_id = v[i];
      p = hs__skip_ws(p, end);
      if (i == 0) {
        if (p >= end || *p != ',') {
          st = hs__text_fail(&t, p, "expected ','");
          goto fail;
        }
        p++;
      }
    }
    if (p != end) {
      st = hs__text_fail(&t, p, "expected the end of the line after two ids");
      goto fail;
    }
    if ((st = hs__edges_push(imp, (int32_t)v[0], (int32_t)v[1]))) goto fail;
    if ((imp->m & ((1u << 24) - 1)) == 0)
      hs__progress(o->progress, o->progress_ctx, "  %zu edges", imp->m);
  }
  if (r < 0) goto fail;
  if (imp->n < 0) imp->n = max_id + 1;
fail:
  hs__text_close(&t);
  return st;
}

static hs_status read_split(const char *path, int s, hs__imported *imp, uint8_t *owner,
                            char *const *paths) {
  hs__text t;
  hs_status st = hs__text_open(&t, path);
  if (st) return st;
  size_t cap = 0;
  int r;
  while ((r = hs__text_next(&t, &st)) > 0) {
    const char *end = t.line + t.len;
    if (blank(t.line, end)) continue;
    const char *p = hs__skip_ws(t.line, end);
    const char *at = p;
    int64_t v;
    if (!hs__parse_i64(&p, end, &v) || !blank(p, end)) {
      st = hs__text_fail(&t, at, "expected one vertex id");
      goto fail;
    }
    if (v < 0 || v >= imp->n) {
      st = hs__text_fail(&t, at, "vertex id %" PRId64 " is not in [0, %" PRId64 ")", v, imp->n);
      goto fail;
    }
    if (owner[v]) {
      st = hs__text_fail(&t, at, "vertex %" PRId64 " is already in %s", v, paths[owner[v] - 1]);
      goto fail;
    }
    if (imp->labels && imp->labels[v] < 0) {
      st = hs__text_fail(&t, at, "vertex %" PRId64 " is unlabelled", v);
      goto fail;
    }
    owner[v] = (uint8_t)(s + 1);
    if ((size_t)imp->split_n[s] == cap) {
      size_t nc = cap ? cap * 2 : 1024;
      int32_t *nb = realloc(imp->split[s], nc * sizeof *nb);
      if (!nb) {
        st = hs__fail(HS_ERR_NOMEM, "no memory");
        goto fail;
      }
      imp->split[s] = nb;
      cap = nc;
    }
    imp->split[s][imp->split_n[s]++] = (int32_t)v;
  }
  if (r < 0) goto fail;
fail:
  hs__text_close(&t);
  return st;
}

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The split folder to use: the first by name under src/split, or NULL. */
static hs_status find_split_dir(const char *src, char **out) {
  *out = NULL;
  char *root = hs__path_join(src, "split");
  if (!root) return hs__fail(HS_ERR_NOMEM, "no memory");
  DIR *d = opendir(root);
  if (!d) {
    free(root);
    return HS_OK;
  }
  char *best = NULL;
  struct dirent *e;
  hs_status st = HS_OK;
  while ((e = readdir(d))) {
    if (e->d_name[0] == '.') continue;
    char *p = hs__path_join(root, e->d_name);
    struct stat sb;
    if (p && stat(p, &sb) == 0 && S_ISDIR(sb.st_mode)) {
      char *names[2] = {best, p};
      if (!best || cmp_str(&names[1], &names[0]) < 0) {
        free(best);
        best = p;
        p = NULL;
      }
    }
    free(p);
  }
  closedir(d);
  free(root);
  if (best) hs__log(HS_LOG_DATA, "using the split in %s", best);
  *out = best;
  return st;
}

hs_status hs__import_ogb(const char *src, const hs_convert_opts *o, hs__imported *imp) {
  static const char *const split_names[HS_SPLIT_COUNT_] = {"train.csv", "valid.csv",
                                                           "test.csv"};
  char *raw = hs__path_join(src, "raw");
  char *p_nodes = NULL, *p_feat = NULL, *p_label = NULL, *p_edge = NULL, *split_dir = NULL;
  char *p_split[HS_SPLIT_COUNT_] = {NULL, NULL, NULL};
  uint8_t *owner = NULL;
  hs_status st = HS_OK;
  imp->format = "ogb";
  imp->n = -1;
  if (!raw || !(p_nodes = hs__path_join(raw, "num-node-list.csv")) ||
      !(p_feat = hs__path_join(raw, "node-feat.csv")) ||
      !(p_label = hs__path_join(raw, "node-label.csv")) ||
      !(p_edge = hs__path_join(raw, "edge.csv"))) {
    st = hs__fail(HS_ERR_NOMEM, "no memory");
    goto fail;
  }
  struct stat sb;
  if (stat(raw, &sb) != 0 || !S_ISDIR(sb.st_mode)) {
    st = hs__fail(HS_ERR_IO, "%s: no raw/ folder (expected an OGB node-property directory)", src);
    goto fail;
  }
  if (file_exists(p_nodes) && (st = read_num_nodes(p_nodes, &imp->n))) goto fail;
  if (file_exists(p_feat) && (st = read_features(p_feat, imp, o))) goto fail;
  if (file_exists(p_label) && (st = read_labels(p_label, imp))) goto fail;
  if ((st = read_edges(p_edge, imp, o))) goto fail;
  if (imp->n < 0) imp->n = 0;
  if ((st = find_split_dir(src, &split_dir))) goto fail;
  if (split_dir) {
    owner = calloc((size_t)imp->n + 1, 1);
    if (!owner) {
      st = hs__fail(HS_ERR_NOMEM, "no memory");
      goto fail;
    }
    for (int s = 0; s < HS_SPLIT_COUNT_; s++)
      if (!(p_split[s] = hs__path_join(split_dir, split_names[s]))) {
        st = hs__fail(HS_ERR_NOMEM, "no memory");
        goto fail;
      }
    for (int s = 0; s < HS_SPLIT_COUNT_; s++) {
      if (!file_exists(p_split[s])) continue;
      if ((st = read_split(p_split[s], s, imp, owner, p_split))) goto fail;
      imp->has_split = true;
    }
  }
fail:
  free(raw);
  free(p_nodes);
  free(p_feat);
  free(p_label);
  free(p_edge);
  free(split_dir);
  for (int s = 0; s < HS_SPLIT_COUNT_; s++) free(p_split[s]);
  free(owner);
  return st;
}
