#include "hs_build.h"

#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hs_graph.h"
#include "util/hs_json.h"
#include "rng/philox.h"

void hs__progress(hs_progress_fn fn, void *ctx, const char *fmt, ...) {
  char line[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  hs__log(HS_LOG_DATA, "%s", line);
  if (fn) fn(ctx, line);
}

/* ---- sorting ------------------------------------------------------------ */

static void insertion_i32(int32_t *a, size_t n) {
  for (size_t i = 1; i < n; i++) {
    int32_t v = a[i];
    size_t j = i;
    while (j > 0 && a[j - 1] > v) {
      a[j] = a[j - 1];
      j--;
    }
    a[j] = v;
  }
}

static void sift_down(int32_t *a, size_t n, size_t i) {
  for (;;) {
    size_t c = 2 * i + 1;
    if (c >= n) return;
    if (c + 1 < n && a[c + 1] > a[c]) c++;
    if (a[i] >= a[c]) return;
    int32_t t = a[i];
    a[i] = a[c];
    a[c] = t;
    i = c;
  }
}

static void heapsort_i32(int32_t *a, size_t n) {
  for (size_t i = n / 2; i-- > 0;) sift_down(a, n, i);
  for (size_t k = n; k-- > 1;) {
    int32_t t = a[0];
    a[0] = a[k];
    a[k] = t;
    sift_down(a, k, 0);
  }
}

static void intro_i32(int32_t *a, size_t n, int depth) {
  while (n > 24) {
    if (depth-- == 0) {
      heapsort_i32(a, n);
      return;
    }
    int32_t x = a[0], y = a[n / 2], z = a[n - 1];
    int32_t pivot = x < y ? (y < z ? y : (x < z ? z : x)) : (x < z ? x : (y < z ? z : y));
    /* Three-way partition: rows full of repeats stay linear. */
    size_t lt = 0, i = 0, gt = n;
    while (i < gt) {
      if (a[i] < pivot) {
        int32_t t = a[lt];
        a[lt++] = a[i];
        a[i++] = t;
      } else if (a[i] > pivot) {
        int32_t t = a[--gt];
        a[gt] = a[i];
        a[i] = t;
      } else {
        i++;
      }
    }
    /* Recurse on the smaller side, loop on the larger. */
    if (lt < n - gt) {
      intro_i32(a, lt, depth);
      a += gt;
      n -= gt;
    } else {
      intro_i32(a + gt, n - gt, depth);
      n = lt;
    }
  }
  insertion_i32(a, n);
}

void hs__sort_i32(int32_t *a, size_t n) {
  int depth = 0;
  for (size_t k = n; k > 1; k >>= 1) depth += 2;
  intro_i32(a, n, depth);
}

/* ---- CSR ---------------------------------------------------------------- */

typedef struct sort_job {
  const int64_t *indptr;
  int32_t *indices;
  int64_t v0, v1;
} sort_job;

static void *sort_rows(void *arg) {
  sort_job *j = arg;
  for (int64_t v = j->v0; v < j->v1; v++)
    hs__sort_i32(j->indices + j->indptr[v], (size_t)(j->indptr[v + 1] - j->indptr[v]));
  return NULL;
}

hs_status hs__csr_finish(int64_t n, int64_t *indptr, int32_t *indices,
                         const hs__edge_opts *o, int threads) {
  if (threads < 1) threads = 1;
  if (threads > 16) threads = 16;
  sort_job jobs[16];
  pthread_t tid[16];
  int started = 0;
  int64_t e = indptr[n];
  /* Rows split by entry count so that threads get equal work. */
  int64_t v = 0;
  for (int t = 0; t < threads; t++) {
    int64_t target = e / threads * (t + 1);
    int64_t v1 = v;
    if (t == threads - 1) v1 = n;
    else
      while (v1 < n && indptr[v1] < target) v1++;
    jobs[t] = (sort_job){indptr, indices, v, v1};
    v = v1;
  }
  for (int t = 1; t < threads; t++) {
    if (pthread_create(&tid[t], NULL, sort_rows, &jobs[t]) != 0) break;
    started = t;
  }
  sort_rows(&jobs[0]);
  for (int t = 1; t <= started; t++) pthread_join(tid[t], NULL);
  for (int t = started + 1; t < threads; t++) sort_rows(&jobs[t]);

  if (!o->dedup && o->self_loops == HS_SELF_LOOPS_KEEP) return HS_OK;
  bool drop_loops = o->self_loops == HS_SELF_LOOPS_DROP;
  int64_t out = 0, begin = 0;
  for (int64_t r = 0; r < n; r++) {
    int64_t end = indptr[r + 1];
    int64_t row_start = out;
    for (int64_t i = begin; i < end; i++) {
      int32_t x = indices[i];
      if (drop_loops && x == r) continue;
      if (o->dedup && out > row_start && indices[out - 1] == x) continue;
      indices[out++] = x;
    }
    begin = end;
    indptr[r + 1] = out;
  }
  return HS_OK;
}

hs_status hs__csr_from_coo(int64_t n, const int32_t *src, const int32_t *dst, size_t m,
                           bool undirected, int64_t **indptr_out, int32_t **indices_out) {
  *indptr_out = NULL;
  *indices_out = NULL;
  size_t e = undirected ? m * 2 : m;
  if (undirected && m > SIZE_MAX / 2) return hs__fail(HS_ERR_NOMEM, "too many edges");
  int64_t *indptr = calloc((size_t)n + 1, sizeof *indptr);
  int32_t *indices = malloc(e ? e * sizeof *indices : 1);
  if (!indptr || !indices) {
    free(indptr);
    free(indices);
    return hs__fail(HS_ERR_NOMEM, "no memory for a CSR of %zu entries", e);
  }
  for (size_t i = 0; i < m; i++) {
    indptr[src[i] + 1]++;
    if (undirected) indptr[dst[i] + 1]++;
  }
  for (int64_t v = 0; v < n; v++) indptr[v + 1] += indptr[v];
  /* Fill with a cursor per row, then restore the offsets. */
  int64_t *cur = malloc(((size_t)n + 1) * sizeof *cur);
  if (!cur) {
    free(indptr);
    free(indices);
    return hs__fail(HS_ERR_NOMEM, "no memory");
  }
  memcpy(cur, indptr, ((size_t)n + 1) * sizeof *cur);
  for (size_t i = 0; i < m; i++) {
    indices[cur[src[i]]++] = dst[i];
    if (undirected) indices[cur[dst[i]]++] = src[i];
  }
  free(cur);
  *indptr_out = indptr;
  *indices_out = indices;
  return HS_OK;
}

/* ---- splits ------------------------------------------------------------- */

static int cmp_i32(const void *a, const void *b) {
  int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
  return (x > y) - (x < y);
}

hs_status hs__split_stratified(const int32_t *labels, int64_t n, int32_t classes,
                               const double frac[HS_SPLIT_COUNT_], uint64_t seed,
                               int32_t *out[HS_SPLIT_COUNT_],
                               int64_t out_n[HS_SPLIT_COUNT_]) {
  double sum = 0;
  for (int s = 0; s < HS_SPLIT_COUNT_; s++) {
    out[s] = NULL;
    out_n[s] = 0;
    if (!(frac[s] >= 0 && frac[s] <= 1))
      return hs__fail(HS_ERR_INVALID_ARG, "split fraction %g is not in [0, 1]", frac[s]);
    sum += frac[s];
  }
  if (sum > 1 + 1e-9)
    return hs__fail(HS_ERR_INVALID_ARG, "split fractions sum to %g, more than 1", sum);
  bool whole = fabs(sum - 1) < 1e-9;
  hs_status st = HS_OK;
  int64_t *start = calloc((size_t)classes + 1, sizeof *start);
  int32_t *members = malloc(n ? (size_t)n * sizeof *members : 1);
  for (int s = 0; s < HS_SPLIT_COUNT_; s++) out[s] = malloc(n ? (size_t)n * sizeof(int32_t) : 1);
  if (!start || !members || !out[0] || !out[1] || !out[2]) {
    st = hs__fail(HS_ERR_NOMEM, "no memory for a split of %" PRId64 " vertices", n);
    goto fail;
  }
  for (int64_t v = 0; v < n; v++)
    if (labels[v] >= 0) start[labels[v] + 1]++;
  for (int32_t c = 0; c < classes; c++) start[c + 1] += start[c];
  {
    int64_t *cur = calloc((size_t)classes + 1, sizeof *cur);
    if (!cur) {
      st = hs__fail(HS_ERR_NOMEM, "no memory");
      goto fail;
    }
    memcpy(cur, start, ((size_t)classes + 1) * sizeof *cur);
    for (int64_t v = 0; v < n; v++)
      if (labels[v] >= 0) members[cur[labels[v]]++] = (int32_t)v;
    free(cur);
  }
  for (int32_t c = 0; c < classes; c++) {
    int32_t *m = members + start[c];
    int64_t size = start[c + 1] - start[c];
    for (int64_t i = size - 1; i > 0; i--) {
      hs_philox_ctr r = hs_philox_draw(seed, HS__RNG_SPLIT, (uint32_t)c, (uint32_t)i, 0);
      int64_t j = hs_philox_below(r.v[0], (uint32_t)(i + 1));
      int32_t t = m[i];
      m[i] = m[j];
      m[j] = t;
    }
    int64_t k[HS_SPLIT_COUNT_];
    int64_t left = size;
    for (int s = 0; s < HS_SPLIT_COUNT_; s++) {
      k[s] = (int64_t)llround(frac[s] * (double)size);
      if (k[s] > left || (s == HS_SPLIT_COUNT_ - 1 && whole)) k[s] = left;
      left -= k[s];
    }
    int64_t at = 0;
    for (int s = 0; s < HS_SPLIT_COUNT_; s++) {
      memcpy(out[s] + out_n[s], m + at, (size_t)k[s] * sizeof(int32_t));
      out_n[s] += k[s];
      at += k[s];
    }
  }
  for (int s = 0; s < HS_SPLIT_COUNT_; s++)
    qsort(out[s], (size_t)out_n[s], sizeof(int32_t), cmp_i32);
fail:
  free(start);
  free(members);
  if (st)
    for (int s = 0; s < HS_SPLIT_COUNT_; s++) {
      free(out[s]);
      out[s] = NULL;
      out_n[s] = 0;
    }
  return st;
}

/* ---- imports ------------------------------------------------------------ */

void hs__imported_free(hs__imported *imp) {
  free(imp->src);
  free(imp->dst);
  free(imp->feat);
  free(imp->sp_ptr);
  free(imp->sp_ids);
  free(imp->labels);
  if (imp->class_names)
    for (int32_t c = 0; c < imp->classes; c++) free(imp->class_names[c]);
  free(imp->class_names);
  for (int s = 0; s < HS_SPLIT_COUNT_; s++) free(imp->split[s]);
  memset(imp, 0, sizeof *imp);
}

hs_status hs__edges_push(hs__imported *imp, int32_t src, int32_t dst) {
  if (imp->m == imp->mcap) {
    size_t nc = imp->mcap ? imp->mcap * 2 : 4096;
    int32_t *ns = realloc(imp->src, nc * sizeof *ns);
    if (ns) imp->src = ns;
    int32_t *nd = realloc(imp->dst, nc * sizeof *nd);
    if (nd) imp->dst = nd;
    if (!ns || !nd) return hs__fail(HS_ERR_NOMEM, "no memory for %zu edges", nc);
    imp->mcap = nc;
  }
  imp->src[imp->m] = src;
  imp->dst[imp->m] = dst;
  imp->m++;
  return HS_OK;
}

static _Thread_local char *const *sort_names;

static int cmp_by_name(const void *a, const void *b) {
  return strcmp(sort_names[*(const int32_t *)a], sort_names[*(const int32_t *)b]);
}

hs_status hs__labels_by_name(hs__imported *imp, char *const *names, int32_t count) {
  int32_t *order = malloc((count ? (size_t)count : 1) * sizeof *order);
  int32_t *rank = malloc((count ? (size_t)count : 1) * sizeof *rank);
  imp->class_names = calloc(count ? (size_t)count : 1, sizeof(char *));
  if (!order || !rank || !imp->class_names) {
    free(order);
    free(rank);
    return hs__fail(HS_ERR_NOMEM, "no memory for class names");
  }
  for (int32_t i = 0; i < count; i++) order[i] = i;
  /* strcmp compares as unsigned char: byte-wise order. qsort's comparator
   * has no context argument in C11, hence the thread-local pointer. */
  sort_names = names;
  qsort(order, (size_t)count, sizeof *order, cmp_by_name);
  sort_names = NULL;
  hs_status st = HS_OK;
  imp->classes = count;
  for (int32_t r = 0; r < count; r++) {
    rank[order[r]] = r;
    imp->class_names[r] = strdup(names[order[r]]);
    if (!imp->class_names[r]) st = hs__fail(HS_ERR_NOMEM, "no memory for class names");
  }
  if (!st)
    for (int64_t v = 0; v < imp->n; v++)
      if (imp->labels[v] >= 0) imp->labels[v] = rank[imp->labels[v]];
  free(order);
  free(rank);
  return st;
}

static hs_status write_meta(hs__imported *imp, hs__dsw *w, const char *src,
                            const hs_convert_opts *o, bool split_made) {
  size_t cap = 4096;
  for (int32_t c = 0; c < imp->classes && imp->class_names; c++)
    cap += strlen(imp->class_names[c]) * 6 + 8;
  cap += strlen(src) * 6;
  char *b = malloc(cap);
  if (!b) return hs__fail(HS_ERR_NOMEM, "no memory");
  size_t k = 0;
  k += (size_t)snprintf(b + k, cap - k, "{\n  \"hetsage_dataset\": 1,\n  \"source_format\": \"%s\",\n  \"source\": ",
                        imp->format);
  k += hs__json_str(b + k, cap - k, src);
  k += (size_t)snprintf(b + k, cap - k,
                        ",\n  \"undirected\": %s,\n  \"dedup\": %s,\n  \"self_loops\": \"%s\",\n",
                        o->undirected ? "true" : "false", o->dedup ? "true" : "false",
                        o->self_loops == HS_SELF_LOOPS_DROP ? "drop" : "keep");
  if (imp->class_names) {
    k += (size_t)snprintf(b + k, cap - k, "  \"label_names\": [");
    for (int32_t c = 0; c < imp->classes; c++) {
      if (c) k += (size_t)snprintf(b + k, cap - k, ", ");
      k += hs__json_str(b + k, cap - k, imp->class_names[c]);
    }
    k += (size_t)snprintf(b + k, cap - k, "],\n");
  }
  if (split_made)
    k += (size_t)snprintf(b + k, cap - k,
                          "  \"split\": {\"kind\": \"stratified\", \"fractions\": [%g, %g, %g], "
                          "\"seed\": %" PRIu64 "}\n}\n",
                          o->split_frac[0], o->split_frac[1], o->split_frac[2], o->split_seed);
  else
    k += (size_t)snprintf(b + k, cap - k, "  \"split\": {\"kind\": \"%s\"}\n}\n",
                          imp->has_split ? "source" : "none");
  hs_status st = hs__dsw_text(w, "meta.json", b);
  free(b);
  return st;
}

hs_status hs__imported_write(hs__imported *imp, hs__dsw *w, const char *src,
                             const hs_convert_opts *o, hs_dataset_info *summary) {
  int64_t *indptr = NULL;
  int32_t *indices = NULL;
  int32_t *split[HS_SPLIT_COUNT_] = {NULL, NULL, NULL};
  int64_t split_n[HS_SPLIT_COUNT_] = {0, 0, 0};
  hs_dataset *check = NULL;
  hs_status st;
  if (imp->n > INT32_MAX) {
    st = hs__fail(HS_ERR_UNSUPPORTED, "%s: %" PRId64 " vertices: ids must fit in int32", src,
                  imp->n);
    goto fail;
  }
  hs__progress(o->progress, o->progress_ctx, "building CSR: %" PRId64 " vertices, %zu edges",
               imp->n, imp->m);
  if ((st = hs__csr_from_coo(imp->n, imp->src, imp->dst, imp->m, o->undirected, &indptr,
                             &indices)))
    goto fail;
  free(imp->src);
  free(imp->dst);
  imp->src = imp->dst = NULL;
  hs__edge_opts eo = {o->undirected, o->dedup, o->self_loops};
  if (hs__stopped()) {
    st = hs__fail_stopped();
    goto fail;
  }
  if ((st = hs__csr_finish(imp->n, indptr, indices, &eo, 2))) goto fail;
  int64_t e = indptr[imp->n];

  bool split_made = false;
  if (imp->labels && o->make_split && (!imp->has_split || o->split_override)) {
    if ((st = hs__split_stratified(imp->labels, imp->n, imp->classes, o->split_frac,
                                   o->split_seed, split, split_n)))
      goto fail;
    split_made = true;
  } else if (imp->has_split) {
    for (int s = 0; s < HS_SPLIT_COUNT_; s++) {
      split[s] = imp->split[s];
      split_n[s] = imp->split_n[s];
      imp->split[s] = NULL;
    }
  }

  if (hs__stopped()) {
    st = hs__fail_stopped();
    goto fail;
  }
  hs__progress(o->progress, o->progress_ctx, "writing %s", hs__dsw_dir(w));
  uint64_t s_ip[1] = {(uint64_t)imp->n + 1}, s_ix[1] = {(uint64_t)e};
  if ((st = hs__dsw_array(w, "indptr.npy", HS_DTYPE_INT64, 1, s_ip, indptr))) goto fail;
  if ((st = hs__dsw_array(w, "indices.npy", HS_DTYPE_INT32, 1, s_ix, indices))) goto fail;
  free(indices);
  indices = NULL;
  if (imp->feat || imp->sp_ptr) {
    hs__feat_src fs = {.n = imp->n, .f = imp->f, .dtype = HS_DTYPE_FLOAT32, .dense = imp->feat,
                       .ptr = imp->sp_ptr, .col = imp->sp_ids};
    if ((st = hs__feat_write(w, &fs, o->feat_format, NULL))) goto fail;
  }
  if (imp->labels) {
    uint64_t s_l[1] = {(uint64_t)imp->n};
    if ((st = hs__dsw_array(w, "label.npy", HS_DTYPE_INT32, 1, s_l, imp->labels))) goto fail;
  }
  static const char *const names[HS_SPLIT_COUNT_] = {"train_idx.npy", "valid_idx.npy",
                                                     "test_idx.npy"};
  if (split_made || imp->has_split)
    for (int s = 0; s < HS_SPLIT_COUNT_; s++) {
      uint64_t s_s[1] = {(uint64_t)split_n[s]};
      if ((st = hs__dsw_array(w, names[s], HS_DTYPE_INT32, 1, s_s, split[s]))) goto fail;
    }
  if ((st = write_meta(imp, w, src, o, split_made))) goto fail;

  /* Never commit what the reader would refuse. */
  if ((st = hs_dataset_open(hs__dsw_dir(w), &check))) {
    hs__fail_context(st, "the imported dataset does not validate");
    goto fail;
  }
  if (summary) hs_dataset_get_info(check, summary);
  hs_dataset_close(check);
fail:
  free(indptr);
  free(indices);
  for (int s = 0; s < HS_SPLIT_COUNT_; s++) free(split[s]);
  return st;
}
