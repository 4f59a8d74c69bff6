/* Opening a native dataset: every array is checked against every rule of
 * dataset.h before the handle is returned. int32 arrays and int64 offsets
 * are mapped and checked in place; int64 ids are narrowed into int32 copies
 * (ids are int32 everywhere downstream). feat.npy is mapped but never read;
 * sparse features are read and checked in full, chunk by chunk, each
 * chunk's pages leaving the resident set once checked (CHECK_CHUNK); int64
 * sparse column ids are read by pread and checked piece by piece, and
 * narrowed into a copy only on their first use in memory
 * (hs__dataset_sparse_cols), never while the sparse host tier reads them
 * from the file. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hs_dsw.h"
#include "hs_graph.h"
#include "hs_npy.h"

enum {
  MAP_INDPTR,
  MAP_INDICES,
  MAP_WEIGHTS,
  MAP_FEAT,
  MAP_FPTR,
  MAP_FCOL,
  MAP_FVAL,
  MAP_LABEL,
  MAP_SPLIT0,
  MAP_COUNT_ = MAP_SPLIT0 + 3
};

struct hs_dataset {
  char *dir;
  hs_graph g;
  hs__map maps[MAP_COUNT_];
  void *owned[MAP_COUNT_];
  hs__map feat_huge; /* the features' copy on huge pages, or empty */
  pthread_mutex_t mu; /* guards feat_huge and owned[MAP_FCOL] */
  int64_t num_labelled;
};

static const char *const split_files[HS_SPLIT_COUNT_] = {"train_idx.npy", "valid_idx.npy",
                                                         "test_idx.npy"};

#define INT_TYPES ((1u << HS_DTYPE_INT32) | (1u << HS_DTYPE_INT64))

typedef struct arr {
  char *path;
  int fd;
  bool present;
  hs__npy_header h;
} arr;

static void arr_close(arr *a) {
  if (a->fd >= 0) close(a->fd);
  a->fd = -1;
  free(a->path);
  a->path = NULL;
}

static hs_status arr_open(const char *dir, const char *name, bool required,
                          unsigned allowed, int ndim, arr *a) {
  a->fd = -1;
  a->present = false;
  a->path = hs__path_join(dir, name);
  if (!a->path) return hs__fail(HS_ERR_NOMEM, "no memory");
  struct stat sb;
  if (stat(a->path, &sb) != 0 && errno == ENOENT) {
    if (!required) return HS_OK;
    return hs__fail(HS_ERR_IO, "%s: required file missing", a->path);
  }
  hs_status st = hs__npy_open(a->path, &a->h, &a->fd);
  if (st) return st;
  if ((st = hs__npy_expect(a->path, &a->h, allowed, ndim))) return st;
  a->present = true;
  return HS_OK;
}

static size_t byte_of(const arr *a, uint64_t i) {
  return a->h.data_offset + (size_t)i * a->h.elem_size;
}

/* Whether any element is outside [lo, hi]. Blocks of a fixed length let
 * the compiler vectorise at -O2; the scan runs at memory speed. */
static bool any_outside(const int32_t *v, size_t n, int32_t lo, int32_t hi) {
  int32_t acc = 0;
  size_t i = 0;
  for (; i + 32 <= n; i += 32) {
    int32_t a = 0;
    for (int k = 0; k < 32; k++) a |= (v[i + k] < lo) | (v[i + k] > hi);
    acc |= a;
  }
  for (; i < n; i++) acc |= (v[i] < lo) | (v[i] > hi);
  return acc != 0;
}

/* Range check of an int32 array already in memory ([lo, hi] within int32). */
static hs_status check_i32(const arr *a, const int32_t *v, size_t n, int64_t lo,
                           int64_t hi, const char *what) {
  if (!any_outside(v, n, (int32_t)lo, (int32_t)hi)) return HS_OK;
  for (size_t i = 0; i < n; i++)
    if (v[i] < lo || v[i] > hi)
      return hs__fail(HS_ERR_FORMAT,
                      "%s: element %zu (byte %zu): %s: %" PRId32 " is outside [%" PRId64
                      ", %" PRId64 "]",
                      a->path, i, byte_of(a, i), what, v[i], lo, hi);
  return HS_OK;
}

/* An int32 view of an int array: mapped if it is int32, else narrowed. */
static hs_status load_i32(hs_dataset *ds, int slot, const arr *a, int64_t lo, int64_t hi,
                          const char *what, const int32_t **out) {
  size_t n = (size_t)a->h.count;
  hs_status st;
  if (a->h.dtype == HS_DTYPE_INT32) {
    const void *data;
    if ((st = hs__npy_map(a->path, a->fd, &a->h, true, &ds->maps[slot], &data))) return st;
    *out = data;
    return check_i32(a, data, n, lo, hi, what);
  }
  int32_t *buf = malloc(n ? n * sizeof *buf : 1);
  if (!buf) return hs__fail(HS_ERR_NOMEM, "%s: no memory for %zu ids", a->path, n);
  ds->owned[slot] = buf;
  *out = buf;
  return hs__npy_read_i32(a->path, a->fd, &a->h, buf, lo, hi, what);
}

/* An int64 view of CSR offsets (n + 1 entries: mapped if int64, else
 * widened) that starts at 0 and never decreases. `what` names the array
 * in messages ("indptr", "feat_indptr"). */
static hs_status load_offsets(hs_dataset *ds, int slot, arr *a, uint64_t n, const char *what,
                              const int64_t **out) {
  hs_status st;
  const int64_t *p;
  if (a->h.dtype == HS_DTYPE_INT64) {
    const void *data;
    if ((st = hs__npy_map(a->path, a->fd, &a->h, true, &ds->maps[slot], &data))) return st;
    p = data;
  } else {
    int64_t *buf = malloc((n + 1) * sizeof *buf);
    if (!buf) return hs__fail(HS_ERR_NOMEM, "%s: no memory", a->path);
    ds->owned[slot] = buf;
    if ((st = hs__npy_read_i64(a->path, a->fd, &a->h, buf))) return st;
    p = buf;
  }
  *out = p;
  if (p[0] != 0)
    return hs__fail(HS_ERR_FORMAT, "%s: element 0 (byte %zu): %s[0] is %" PRId64
                    ", must be 0",
                    a->path, byte_of(a, 0), what, p[0]);
  int bad = 0;
  size_t i0 = 1;
  for (; i0 + 16 <= n + 1; i0 += 16) {
    int b = 0;
    for (int k = 0; k < 16; k++) b |= p[i0 + k] < p[i0 + k - 1];
    bad |= b;
  }
  for (; i0 <= n; i0++) bad |= p[i0] < p[i0 - 1];
  if (bad)
    for (size_t i = 1; i <= n; i++)
      if (p[i] < p[i - 1])
        return hs__fail(HS_ERR_FORMAT,
                        "%s: element %zu (byte %zu): %s decreases: %" PRId64
                        " after %" PRId64,
                        a->path, i, byte_of(a, i), what, p[i], p[i - 1]);
  return HS_OK;
}

static hs_status load_indptr(hs_dataset *ds, arr *a) {
  hs_graph *g = &ds->g;
  if (a->h.count < 1)
    return hs__fail(HS_ERR_FORMAT,
                    "%s: byte %zu: shape (0,): indptr needs N+1 >= 1 entries", a->path,
                    a->h.dict_offset);
  uint64_t n = a->h.count - 1;
  if (n > INT32_MAX)
    return hs__fail(HS_ERR_UNSUPPORTED,
                    "%s: byte %zu: %" PRIu64 " vertices: vertex ids must fit in int32 "
                    "(N < 2^31)",
                    a->path, a->h.dict_offset, n);
  g->n = (int64_t)n;
  return load_offsets(ds, MAP_INDPTR, a, n, "indptr", &g->indptr);
}

static hs_status load_weights(hs_dataset *ds, arr *a) {
  hs_graph *g = &ds->g;
  if (a->h.count != (uint64_t)g->e)
    return hs__fail(HS_ERR_FORMAT,
                    "%s: byte %zu: shape (%" PRIu64 ",) disagrees with indices.npy's %" PRId64
                    " entries",
                    a->path, a->h.dict_offset, a->h.count, g->e);
  const void *data;
  hs_status st = hs__npy_map(a->path, a->fd, &a->h, true, &ds->maps[MAP_WEIGHTS], &data);
  if (st) return st;
  const float *w = data;
  bool bad = false;
  for (int64_t i = 0; i < g->e; i++) bad |= !isfinite(w[i]);
  if (bad)
    for (int64_t i = 0; i < g->e; i++)
      if (!isfinite(w[i]))
        return hs__fail(HS_ERR_FORMAT, "%s: element %" PRId64 " (byte %zu): weight is %s",
                        a->path, i, byte_of(a, (uint64_t)i), isnan(w[i]) ? "NaN" : "infinite");
  g->weights = w;
  return HS_OK;
}

/* Whether a float16 bit pattern is NaN or infinite (exponent all ones). */
static inline bool half_not_finite(uint16_t h) { return (h & 0x7c00u) == 0x7c00u; }

/* Index of the first value that is not finite, or -1. */
static int64_t first_not_finite(const void *v, hs_dtype dt, int64_t n) {
  if (dt == HS_DTYPE_FLOAT16) {
    const uint16_t *h = v;
    bool bad = false;
    for (int64_t i = 0; i < n; i++) bad |= half_not_finite(h[i]);
    if (bad)
      for (int64_t i = 0; i < n; i++)
        if (half_not_finite(h[i])) return i;
    return -1;
  }
  const float *f = v;
  bool bad = false;
  for (int64_t i = 0; i < n; i++) bad |= !isfinite(f[i]);
  if (bad)
    for (int64_t i = 0; i < n; i++)
      if (!isfinite(f[i])) return i;
  return -1;
}

/* The sparse arrays are checked in chunks of this many bytes of a mapping
 * that is not populated; each chunk's pages leave the resident set once
 * checked (they stay in the page cache), so that opening a dataset never
 * holds its sparse features resident: a session over the memory budget
 * reads them from the files (the sparse host tier), the in-memory gather
 * faults them back in as it reads them. */
#define CHECK_CHUNK ((size_t)8 << 20)

/* Drop the mapping's pages from *from up to the page holding `upto`. */
static void drop_checked(const hs__map *m, const void *upto, size_t *from) {
  size_t pg = (size_t)sysconf(_SC_PAGESIZE);
  size_t end = (size_t)((const char *)upto - (const char *)m->base) / pg * pg;
  if (end <= *from) return;
  (void)madvise((char *)m->base + *from, end - *from, MADV_DONTNEED);
  *from = end;
}

/* Element k of row v, `cur`, does not come after the one before, `prev`. */
static hs_status order_fail(const arr *fc, int64_t k, int64_t v, int32_t cur, int32_t prev) {
  return hs__fail(HS_ERR_FORMAT,
                  "%s: element %" PRId64 " (byte %zu): row %" PRId64 ": column %" PRId32
                  " %s column %" PRId32 ": a row's column ids must be strictly increasing "
                  "(scipy: X.sum_duplicates(); X.sort_indices())",
                  fc->path, k, byte_of(fc, (uint64_t)k), v, cur,
                  cur == prev ? "repeats" : "comes after", prev);
}

/* Rows sorted and free of repeats: a strictly increasing run per row; the
 * longest row into *row_max. */
static hs_status check_rows(const arr *fc, hs_graph *g, int32_t *row_max) {
  *row_max = 0;
  for (int64_t v = 0; v < g->n; v++) {
    int64_t b = g->feat_ptr[v], e = g->feat_ptr[v + 1];
    if (e - b > *row_max) *row_max = (int32_t)(e - b);
    for (int64_t k = b + 1; k < e; k++)
      if (g->feat_col[k] <= g->feat_col[k - 1])
        return order_fail(fc, k, v, g->feat_col[k], g->feat_col[k - 1]);
  }
  return HS_OK;
}

/* int64 column ids, read by pread piece by piece (hs__npy_read_chunks):
 * each piece's range first, then the rows' order, carrying the row and the
 * last id across the ends of the pieces. The messages and their order are
 * those of narrowing the whole file then checking the rows: the first id
 * out of range anywhere is named before the first one out of order. */
typedef struct cols64 {
  const arr *fc;
  const hs_graph *g;
  int64_t row;  /* the row holding the next piece's first element */
  int64_t last; /* the previous piece's last id */
  int64_t bad;  /* the first element out of order, or -1 */
  int64_t bad_row;
  int32_t bad_cur, bad_prev;
} cols64;

static hs_status cols64_piece(void *ctx, const void *chunk, size_t first, size_t n) {
  cols64 *c = ctx;
  const int64_t *s = chunk;
  const int64_t hi = c->g->f - 1;
  int out = 0;
  for (size_t i = 0; i < n; i++) out |= (s[i] < 0) | (s[i] > hi);
  if (out)
    for (size_t i = 0; i < n; i++)
      if (s[i] < 0 || s[i] > hi)
        return hs__fail(HS_ERR_FORMAT, "%s: element %zu (byte %zu): %s: %" PRId64
                        " is outside [0, %" PRId64 "]",
                        c->fc->path, first + i, byte_of(c->fc, first + i),
                        "column id (F from feat_shape.npy)", s[i], hi);
  if (c->bad >= 0 || n == 0) return HS_OK; /* out of order already: the range is left */
  const int64_t *ptr = c->g->feat_ptr;
  const int64_t k0 = (int64_t)first, k1 = k0 + (int64_t)n;
  int64_t v = c->row;
  for (int64_t k = k0; k < k1;) {
    while (ptr[v + 1] <= k) v++; /* k < feat_nnz = ptr[N]: v stays below N */
    int64_t e = ptr[v + 1] < k1 ? ptr[v + 1] : k1;
    /* element k against the one before it, in this piece or the last */
    int bad = k > ptr[v] && s[k - k0] <= (k == k0 ? c->last : s[k - k0 - 1]);
    for (int64_t j = k + 1; j < e; j++) bad |= s[j - k0] <= s[j - k0 - 1];
    if (bad) {
      for (int64_t j = k > ptr[v] ? k : k + 1; j < e; j++) {
        int64_t prev = j == k0 ? c->last : s[j - k0 - 1];
        if (s[j - k0] <= prev) {
          c->bad = j;
          c->bad_row = v;
          c->bad_cur = (int32_t)s[j - k0]; /* in range: checked above */
          c->bad_prev = (int32_t)prev;
          return HS_OK;
        }
      }
    }
    k = e;
  }
  c->row = v;
  c->last = s[n - 1];
  return HS_OK;
}

static hs_status check_cols64(const arr *fc, const hs_graph *g, int32_t *row_max) {
  cols64 c = {.fc = fc, .g = g, .bad = -1};
  hs_status st = hs__npy_read_chunks(fc->path, fc->fd, &fc->h, cols64_piece, &c);
  if (st) return st;
  if (c.bad >= 0) return order_fail(fc, c.bad, c.bad_row, c.bad_cur, c.bad_prev);
  int64_t most = 0;
  for (int64_t v = 0; v < g->n; v++) {
    int64_t len = g->feat_ptr[v + 1] - g->feat_ptr[v];
    most = len > most ? len : most;
  }
  *row_max = (int32_t)most;
  return HS_OK;
}

/* The column ids' rules (range, increasing rows) over a mapping, in groups
 * of rows of at most CHECK_CHUNK bytes (or one row), dropping the pages
 * behind. False at the first rule broken (the caller names it). */
static bool cols_ok_streamed(const hs__map *m, hs_graph *g, int32_t *row_max) {
  const int64_t *ptr = g->feat_ptr;
  const int32_t *col = g->feat_col;
  size_t dropped = 0;
  int32_t rmax = 0;
  for (int64_t v = 0; v < g->n;) {
    int64_t e0 = ptr[v], v1 = v + 1;
    while (v1 < g->n && (uint64_t)(ptr[v1 + 1] - e0) * sizeof *col <= CHECK_CHUNK) v1++;
    if (any_outside(col + e0, (size_t)(ptr[v1] - e0), 0, (int32_t)(g->f - 1))) return false;
    int bad = 0;
    for (int64_t u = v; u < v1; u++) {
      int64_t b = ptr[u], e = ptr[u + 1];
      if (e - b > rmax) rmax = (int32_t)(e - b);
      for (int64_t k = b + 1; k < e; k++) bad |= col[k] <= col[k - 1];
    }
    if (bad) return false;
    drop_checked(m, col + ptr[v1], &dropped);
    v = v1;
  }
  *row_max = rmax;
  return true;
}

/* Index of the first value of a mapped array that is not finite, or -1,
 * chunk by chunk, dropping the pages behind. */
static int64_t first_not_finite_streamed(const hs__map *m, const void *v, hs_dtype dt,
                                         size_t esz, int64_t n) {
  size_t dropped = 0;
  int64_t per = (int64_t)(CHECK_CHUNK / esz);
  for (int64_t i = 0; i < n; i += per) {
    int64_t k = n - i < per ? n - i : per;
    const char *at = (const char *)v + (size_t)i * esz;
    int64_t bad = first_not_finite(at, dt, k);
    if (bad >= 0) return i + bad;
    drop_checked(m, at + (size_t)k * esz, &dropped);
  }
  return -1;
}

/* Sparse features: feat_shape.npy, feat_indptr.npy, feat_indices.npy and
 * the optional feat_values.npy, every rule of dataset.h checked. */
static hs_status load_sparse_feat(hs_dataset *ds, arr *sh, arr *fp, arr *fc, arr *fv) {
  hs_graph *g = &ds->g;
  hs_status st;
  const char *dir = ds->dir;
  if ((st = arr_open(dir, "feat_shape.npy", true, INT_TYPES, 1, sh))) {
    hs__fail_context(st, "sparse features (feat_indptr.npy) need their shape (N, F)");
    return st;
  }
  if (sh->h.count != 2)
    return hs__fail(HS_ERR_FORMAT, "%s: byte %zu: shape (%" PRIu64 ",): expected (2,): (N, F)",
                    sh->path, sh->h.dict_offset, sh->h.count);
  int64_t shape[2];
  if ((st = hs__npy_read_i64(sh->path, sh->fd, &sh->h, shape))) return st;
  if (shape[0] != g->n)
    return hs__fail(HS_ERR_FORMAT, "%s: element 0 (byte %zu): N is %" PRId64
                    ", but indptr.npy has N = %" PRId64, sh->path, byte_of(sh, 0), shape[0], g->n);
  if (shape[1] < 1 || shape[1] > INT32_MAX)
    return hs__fail(HS_ERR_FORMAT, "%s: element 1 (byte %zu): F is %" PRId64
                    ", expected 1 .. 2^31-1", sh->path, byte_of(sh, 1), shape[1]);
  g->f = shape[1];
  if ((st = arr_open(dir, "feat_indptr.npy", true, INT_TYPES, 1, fp))) return st;
  if (fp->h.count != (uint64_t)g->n + 1)
    return hs__fail(HS_ERR_FORMAT, "%s: byte %zu: shape (%" PRIu64 ",): expected N+1 = %" PRId64
                    " entries (N from indptr.npy)", fp->path, fp->h.dict_offset, fp->h.count,
                    g->n + 1);
  if ((st = load_offsets(ds, MAP_FPTR, fp, (uint64_t)g->n, "feat_indptr", &g->feat_ptr)))
    return st;
  if ((st = arr_open(dir, "feat_indices.npy", true, INT_TYPES, 1, fc))) return st;
  g->feat_nnz = g->feat_ptr[g->n];
  if (fc->h.count != (uint64_t)g->feat_nnz)
    return hs__fail(HS_ERR_FORMAT, "%s: element %" PRId64 " (byte %zu): feat_indptr[N] is %" PRId64
                    " but %s holds %" PRIu64 " entries", fp->path, g->n,
                    byte_of(fp, (uint64_t)g->n), g->feat_nnz, fc->path, fc->h.count);
  int32_t row_max = 0;
  if (fc->h.dtype == HS_DTYPE_INT32) {
    /* Mapped, not populated: checked chunk by chunk, each chunk's pages
     * leaving the resident set once checked. */
    const void *data;
    if ((st = hs__npy_map(fc->path, fc->fd, &fc->h, false, &ds->maps[MAP_FCOL], &data)))
      return st;
    g->feat_col = data;
    if (cols_ok_streamed(&ds->maps[MAP_FCOL], g, &row_max)) goto cols_checked;
    /* Something is wrong: the full checks, in their order, name it. */
    if ((st = check_i32(fc, g->feat_col, (size_t)fc->h.count, 0, g->f - 1,
                        "column id (F from feat_shape.npy)")))
      return st;
  } else {
    /* int64: checked by pread piece by piece, no copy kept (feat_col stays
     * NULL until hs__dataset_sparse_cols narrows them). */
    if ((st = check_cols64(fc, g, &row_max))) return st;
    goto cols_checked;
  }
  if ((st = check_rows(fc, g, &row_max))) return st;
cols_checked:
  g->feat_row_nnz_max = row_max;
  g->feat_dtype = HS_DTYPE_FLOAT32;
  if ((st = arr_open(dir, "feat_values.npy", false,
                     (1u << HS_DTYPE_FLOAT32) | (1u << HS_DTYPE_FLOAT16), 1, fv)))
    return st;
  if (fv->present) {
    if (fv->h.count != (uint64_t)g->feat_nnz)
      return hs__fail(HS_ERR_FORMAT, "%s: byte %zu: shape (%" PRIu64 ",) disagrees with "
                      "feat_indices.npy's %" PRId64 " entries", fv->path, fv->h.dict_offset,
                      fv->h.count, g->feat_nnz);
    const void *data;
    if ((st = hs__npy_map(fv->path, fv->fd, &fv->h, false, &ds->maps[MAP_FVAL], &data)))
      return st;
    int64_t bad = first_not_finite_streamed(&ds->maps[MAP_FVAL], data, fv->h.dtype,
                                            fv->h.elem_size, g->feat_nnz);
    if (bad >= 0)
      return hs__fail(HS_ERR_FORMAT, "%s: element %" PRId64 " (byte %zu): value is not finite",
                      fv->path, bad, byte_of(fv, (uint64_t)bad));
    g->feat_val = data;
    g->feat_dtype = fv->h.dtype;
  }
  g->feat_sparse = true;
  g->feature_bytes = ((uint64_t)g->n + 1) * 8 + (uint64_t)g->feat_nnz * 4 +
                     (fv->present ? (uint64_t)g->feat_nnz * fv->h.elem_size : 0);
  return HS_OK;
}

static hs_status load_labels(hs_dataset *ds, arr *a) {
  hs_graph *g = &ds->g;
  if (a->h.count != (uint64_t)g->n)
    return hs__fail(HS_ERR_FORMAT,
                    "%s: byte %zu: shape (%" PRIu64 ",) disagrees with N = %" PRId64
                    " from indptr.npy",
                    a->path, a->h.dict_offset, a->h.count, g->n);
  const int32_t *lab;
  hs_status st = load_i32(ds, MAP_LABEL, a, -1, INT32_MAX - 1,
                          "label (expected -1 for unlabelled, or a class >= 0)", &lab);
  if (st) return st;
  int32_t max = -1;
  int64_t labelled = 0;
  for (int64_t i = 0; i < g->n; i++) {
    max = lab[i] > max ? lab[i] : max;
    labelled += lab[i] >= 0;
  }
  g->labels = lab;
  g->num_classes = max + 1;
  ds->num_labelled = labelled;
  return HS_OK;
}

/* Ids in range, no repeats within or across splits, labelled if labels
 * exist. `owner` marks which split (1-based) took each vertex. */
static hs_status load_split(hs_dataset *ds, int s, arr *a, uint8_t *owner, arr *owners) {
  hs_graph *g = &ds->g;
  const int32_t *ids;
  hs_status st = load_i32(ds, MAP_SPLIT0 + s, a, 0, g->n - 1, "vertex id (N from indptr.npy)",
                          &ids);
  if (st) return st;
  for (size_t i = 0; i < a->h.count; i++) {
    int32_t v = ids[i];
    if (owner[v]) {
      int o = owner[v] - 1;
      const int32_t *other = g->split[o] ? g->split[o] : ids;
      size_t j = 0;
      while (other[j] != v) j++;
      if (o == s)
        return hs__fail(HS_ERR_FORMAT,
                        "%s: element %zu (byte %zu): vertex %" PRId32
                        " appears twice (first at element %zu)",
                        a->path, i, byte_of(a, i), v, j);
      return hs__fail(HS_ERR_FORMAT,
                      "%s: element %zu (byte %zu): vertex %" PRId32
                      " is also in %s (element %zu): splits must be disjoint",
                      a->path, i, byte_of(a, i), v, owners[o].path, j);
    }
    owner[v] = (uint8_t)(s + 1);
    if (g->labels && g->labels[v] < 0)
      return hs__fail(HS_ERR_FORMAT,
                      "%s: element %zu (byte %zu): vertex %" PRId32
                      " is unlabelled (label -1 in label.npy)",
                      a->path, i, byte_of(a, i), v);
  }
  g->split[s] = ids;
  g->split_n[s] = (int64_t)a->h.count;
  return HS_OK;
}

void hs_dataset_close(hs_dataset *ds) {
  if (!ds) return;
  for (int i = 0; i < MAP_COUNT_; i++) {
    hs__map_release(&ds->maps[i]);
    free(ds->owned[i]);
  }
  hs__map_release(&ds->feat_huge);
  pthread_mutex_destroy(&ds->mu);
  free(ds->dir);
  free(ds);
}

hs_status hs_dataset_open(const char *dir, hs_dataset **out) {
  if (!dir || !out) return hs__fail(HS_ERR_INVALID_ARG, "hs_dataset_open: NULL argument");
  *out = NULL;
  hs_status st = HS_OK;
  arr ip = {.fd = -1}, ix = {.fd = -1}, wt = {.fd = -1}, ft = {.fd = -1}, lb = {.fd = -1};
  arr fs = {.fd = -1}, fp = {.fd = -1}, fc = {.fd = -1}, fv = {.fd = -1};
  arr sp[HS_SPLIT_COUNT_] = {{.fd = -1}, {.fd = -1}, {.fd = -1}};
  uint8_t *owner = NULL;
  hs_dataset *ds = calloc(1, sizeof *ds);
  if (!ds) return hs__fail(HS_ERR_NOMEM, "no memory for a dataset");
  pthread_mutex_init(&ds->mu, NULL);
  hs_graph *g = &ds->g;
  double t0 = hs__now();
  ds->dir = strdup(dir);
  if (!ds->dir) {
    st = hs__fail(HS_ERR_NOMEM, "no memory");
    goto fail;
  }
  struct stat sb;
  if (stat(dir, &sb) != 0) {
    st = hs__fail(HS_ERR_IO, "%s: cannot open dataset: %s", dir, strerror(errno));
    goto fail;
  }
  if (!S_ISDIR(sb.st_mode)) {
    st = hs__fail(HS_ERR_IO, "%s: not a dataset directory", dir);
    goto fail;
  }

  if ((st = arr_open(dir, "indptr.npy", true, INT_TYPES, 1, &ip))) goto fail;
  if ((st = load_indptr(ds, &ip))) goto fail;

  if ((st = arr_open(dir, "indices.npy", true, INT_TYPES, 1, &ix))) goto fail;
  if (ix.h.count > INT64_MAX) {
    st = hs__fail(HS_ERR_FORMAT, "%s: too many entries", ix.path);
    goto fail;
  }
  g->e = (int64_t)ix.h.count;
  if (g->indptr[g->n] != g->e) {
    st = hs__fail(HS_ERR_FORMAT,
                  "%s: element %" PRId64 " (byte %zu): indptr[N] is %" PRId64
                  " but %s holds %" PRId64 " entries",
                  ip.path, g->n, byte_of(&ip, (uint64_t)g->n), g->indptr[g->n], ix.path, g->e);
    goto fail;
  }
  if ((st = load_i32(ds, MAP_INDICES, &ix, 0, g->n - 1, "neighbour id (N from indptr.npy)",
                     &g->indices)))
    goto fail;

  if ((st = arr_open(dir, "weights.npy", false, 1u << HS_DTYPE_FLOAT32, 1, &wt))) goto fail;
  if (wt.present && (st = load_weights(ds, &wt))) goto fail;

  if ((st = arr_open(dir, "feat.npy", false,
                     (1u << HS_DTYPE_FLOAT32) | (1u << HS_DTYPE_FLOAT16), 2, &ft)))
    goto fail;
  if (ft.present) {
    if (ft.h.shape[0] != (uint64_t)g->n) {
      st = hs__fail(HS_ERR_FORMAT,
                    "%s: byte %zu: shape (%" PRIu64 ", %" PRIu64
                    "): the first dimension must be N = %" PRId64 " from indptr.npy",
                    ft.path, ft.h.dict_offset, ft.h.shape[0], ft.h.shape[1], g->n);
      goto fail;
    }
    const void *data;
    if ((st = hs__npy_map(ft.path, ft.fd, &ft.h, false, &ds->maps[MAP_FEAT], &data)))
      goto fail;
    g->feat = data;
    g->f = (int64_t)ft.h.shape[1];
    g->feat_dtype = ft.h.dtype;
    g->feat_row_bytes = (size_t)ft.h.shape[1] * ft.h.elem_size;
    g->feature_bytes = ft.h.data_bytes;
  }
  {
    char *fpath = hs__path_join(dir, "feat_indptr.npy");
    if (!fpath) {
      st = hs__fail(HS_ERR_NOMEM, "no memory");
      goto fail;
    }
    bool sparse = stat(fpath, &sb) == 0 || errno != ENOENT;
    free(fpath);
    if (sparse && ft.present) {
      st = hs__fail(HS_ERR_FORMAT, "%s: holds both feat.npy and feat_indptr.npy: a dataset "
                    "stores its features dense or sparse, not both", dir);
      goto fail;
    }
    if (sparse && (st = load_sparse_feat(ds, &fs, &fp, &fc, &fv))) goto fail;
  }

  if ((st = arr_open(dir, "label.npy", false, INT_TYPES, 1, &lb))) goto fail;
  if (lb.present && (st = load_labels(ds, &lb))) goto fail;

  for (int s = 0; s < HS_SPLIT_COUNT_; s++) {
    if ((st = arr_open(dir, split_files[s], false, INT_TYPES, 1, &sp[s]))) goto fail;
    if (!sp[s].present) continue;
    if (!owner && !(owner = calloc((size_t)g->n + 1, 1))) {
      st = hs__fail(HS_ERR_NOMEM, "no memory");
      goto fail;
    }
    if ((st = load_split(ds, s, &sp[s], owner, sp))) goto fail;
  }

  g->topology_bytes = (uint64_t)(g->n + 1) * 8 + (uint64_t)g->e * (g->weights ? 8 : 4);
  hs__log(HS_LOG_DATA, "opened %s: N=%" PRId64 " E=%" PRId64 " F=%" PRId64 " in %.3f s",
          dir, g->n, g->e, g->f, hs__now() - t0);
  *out = ds;
  ds = NULL;
fail:
  arr_close(&ip);
  arr_close(&ix);
  arr_close(&wt);
  arr_close(&ft);
  arr_close(&lb);
  arr_close(&fs);
  arr_close(&fp);
  arr_close(&fc);
  arr_close(&fv);
  for (int s = 0; s < HS_SPLIT_COUNT_; s++) arr_close(&sp[s]);
  free(owner);
  hs_dataset_close(ds);
  return st;
}

const hs_graph *hs__dataset_graph(const hs_dataset *ds) { return &ds->g; }

uint64_t hs__dataset_free_topology(hs_dataset *ds) {
  hs_graph *g = &ds->g;
  if (g->topology_freed) return 0;
  static const int slots[] = {MAP_INDPTR, MAP_INDICES, MAP_WEIGHTS};
  uint64_t bytes = g->topology_bytes;
  for (size_t i = 0; i < HS_ARRAY_LEN(slots); i++) {
    hs__map_release(&ds->maps[slots[i]]);
    free(ds->owned[slots[i]]);
    ds->owned[slots[i]] = NULL;
  }
  g->indptr = NULL;
  g->indices = NULL;
  g->weights = NULL;
  g->topology_freed = bytes; /* at least indptr[0]'s 8 bytes */
  hs__log(HS_LOG_DATA, "%s: host topology released (%" PRIu64 " bytes)", ds->dir, bytes);
  return bytes;
}

/* feat.npy's payload into `dst` by pread: no page faults on the file
 * mapping, 4 KiB each. A memcpy from the mapping took 1.3 to 1.6 times as
 * long with the file in the page cache (0.36 to 0.40 s against 0.20 to
 * 0.28 s for 934 MiB). False (the caller copies from the mapping) on any
 * failure. */
static bool read_features(hs_dataset *ds, char *dst, size_t bytes) {
  const hs__map *fm = &ds->maps[MAP_FEAT];
  if (!fm->base) return false;
  off_t off = (off_t)((const char *)ds->g.feat - (const char *)fm->base);
  char *path = hs__path_join(ds->dir, "feat.npy");
  int fd = path ? hs__open_regular(path, NULL, NULL) : -1;
  free(path);
  if (fd < 0) return false;
  size_t done = 0;
  while (done < bytes) {
    size_t want = bytes - done < ((size_t)8 << 20) ? bytes - done : (size_t)8 << 20;
    ssize_t got = pread(fd, dst + done, want, off + (off_t)done);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;
    done += (size_t)got;
  }
  close(fd);
  return done == bytes;
}

/* The copy, made by the caller holding ds->mu. */
static hs_status make_huge_copy(hs_dataset *ds, uint64_t *moved) {
  hs_graph *g = &ds->g;
  if (g->feature_bytes > SIZE_MAX)
    return hs__fail(HS_ERR_NOMEM, "%s: features too large to copy", ds->dir);
  size_t bytes = (size_t)g->feature_bytes, len;
  bool advised;
  double t0 = hs__now();
  char *p = hs__huge_map(bytes, &len, &advised);
  if (!p)
    return hs__fail(HS_ERR_NOMEM, "%s: cannot map %zu bytes for a copy of the features: %s",
                    ds->dir, bytes, strerror(errno));
  if (!advised) {
    hs__huge_unmap(p, len);
    return HS_OK; /* no huge pages here: the file mapping it is */
  }
  if (!read_features(ds, p, bytes)) memcpy(p, g->feat, bytes);
  /* Read-only from here on; a failure leaves it writable, nothing worse. */
  (void)mprotect(p, len, PROT_READ);
  /* Drop the file mapping's pages from the process (they stay in the page
   * cache and come back on a read through the mapping). */
  hs__map *fm = &ds->maps[MAP_FEAT];
  if (fm->base) (void)madvise(fm->base, fm->len, MADV_DONTNEED);
  ds->feat_huge.base = p;
  ds->feat_huge.len = len;
  *moved = bytes;
  hs__log(HS_LOG_DATA, "%s: %zu bytes of features copied to huge pages in %.3f s", ds->dir,
          bytes, hs__now() - t0);
  return HS_OK;
}

hs_status hs__dataset_features_huge(hs_dataset *ds, const void **copy, uint64_t *moved) {
  *copy = NULL;
  *moved = 0;
  if (!ds->g.feat || !hs__thp_available()) return HS_OK;
  pthread_mutex_lock(&ds->mu);
  hs_status st = ds->feat_huge.base ? HS_OK : make_huge_copy(ds, moved);
  *copy = ds->feat_huge.base;
  pthread_mutex_unlock(&ds->mu);
  return st;
}

hs_status hs__graph_topology(const hs_graph *g, const char *what) {
  if (!g->topology_freed) return HS_OK;
  return hs__fail(HS_ERR_STATE, "%s needs the graph topology in host memory, but it was "
                  "released after the upload to the sampler (free_host_topology / "
                  "--free-host-topology); open the dataset again, or use sampled evaluation",
                  what);
}

const char *hs__dataset_dir(const hs_dataset *ds) { return ds->dir; }

/* int64 column ids narrowed into ds->owned[MAP_FCOL], by the caller
 * holding ds->mu. The file is read again, by name: its length must still
 * be the one checked at open, and every id is range-checked again as it is
 * narrowed (the rows' order is trusted after open, as with a mapping). */
static hs_status narrow_cols(hs_dataset *ds) {
  const hs_graph *g = &ds->g;
  char *path = hs__path_join(ds->dir, "feat_indices.npy");
  if (!path) return hs__fail(HS_ERR_NOMEM, "no memory");
  hs__npy_header h;
  int fd = -1;
  int32_t *buf = NULL;
  double t0 = hs__now();
  hs_status st = hs__npy_open(path, &h, &fd);
  if (!st) st = hs__npy_expect(path, &h, INT_TYPES, 1);
  if (!st && h.count != (uint64_t)g->feat_nnz)
    st = hs__fail(HS_ERR_FORMAT, "%s: byte %zu: shape (%" PRIu64 ",): the file held %" PRId64
                  " entries when the dataset was opened: it changed since", path,
                  h.dict_offset, h.count, g->feat_nnz);
  size_t n = (size_t)g->feat_nnz;
  if (!st && !(buf = malloc(n ? n * sizeof *buf : 1)))
    st = hs__fail(HS_ERR_NOMEM, "%s: no memory for %zu column ids", path, n);
  if (!st)
    st = hs__npy_read_i32(path, fd, &h, buf, 0, g->f - 1, "column id (F from feat_shape.npy)");
  if (fd >= 0) close(fd);
  if (st) {
    free(buf);
  } else {
    ds->owned[MAP_FCOL] = buf;
    hs__log(HS_LOG_DATA, "%s: %zu int64 column ids narrowed into memory (%zu bytes) in %.3f s",
            path, n, n * sizeof *buf, hs__now() - t0);
  }
  free(path);
  return st;
}

hs_status hs__dataset_sparse_cols(hs_dataset *ds, const int32_t **col) {
  const hs_graph *g = &ds->g;
  *col = NULL;
  if (!g->feat_sparse) return HS_OK;
  if (g->feat_col) {
    *col = g->feat_col; /* the mapping of int32 ids */
    return HS_OK;
  }
  pthread_mutex_lock(&ds->mu);
  hs_status st = ds->owned[MAP_FCOL] ? HS_OK : narrow_cols(ds);
  *col = ds->owned[MAP_FCOL];
  pthread_mutex_unlock(&ds->mu);
  return st;
}

uint64_t hs__dataset_sparse_drop_pages(hs_dataset *ds) {
  uint64_t bytes = 0;
  static const int slots[] = {MAP_FCOL, MAP_FVAL};
  for (size_t i = 0; i < HS_ARRAY_LEN(slots); i++) {
    const hs__map *m = &ds->maps[slots[i]];
    if (m->base && madvise(m->base, m->len, MADV_DONTNEED) == 0) bytes += m->len;
  }
  if (bytes)
    hs__log(HS_LOG_DATA, "%s: %" PRIu64 " bytes of sparse feature pages dropped from the "
            "process (read through the sparse tier)", ds->dir, bytes);
  return bytes;
}

void hs_dataset_info_init_sized(hs_dataset_info *info, size_t struct_size) {
  hs_dataset_info z;
  memset(&z, 0, sizeof z);
  z.struct_size = sizeof z;
  hs__sized_init(info, struct_size, &z, sizeof z);
}

hs_status hs_dataset_get_info(const hs_dataset *ds, hs_dataset_info *user) {
  if (!ds || !user) return hs__fail(HS_ERR_INVALID_ARG, "hs_dataset_get_info: NULL argument");
  hs_dataset_info info;
  hs_dataset_info *out = &info;
  const hs_graph *g = &ds->g;
  hs_dataset_info_init(out);
  out->num_vertices = g->n;
  out->num_edges = g->e;
  out->num_features = g->f;
  out->num_classes = g->num_classes;
  out->num_labelled = g->labels ? ds->num_labelled : 0;
  bool has = g->feat || g->feat_sparse;
  out->feature_dtype = has ? g->feat_dtype : HS_DTYPE_NONE;
  out->feature_format = !has ? HS_FEAT_FORMAT_AUTO
                        : g->feat_sparse ? HS_FEAT_FORMAT_SPARSE
                                         : HS_FEAT_FORMAT_DENSE;
  out->feature_binary = g->feat_sparse && !g->feat_val;
  out->feature_nnz = g->feat_sparse ? g->feat_nnz : -1;
  out->has_weights = g->weights != NULL;
  for (int s = 0; s < HS_SPLIT_COUNT_; s++) {
    out->has_split[s] = g->split[s] != NULL;
    out->split_size[s] = g->split_n[s];
  }
  out->topology_bytes = g->topology_bytes;
  out->feature_bytes = g->feature_bytes;
  out->label_bytes = g->labels ? (uint64_t)g->n * 4 : 0;
  return hs__sized_out(user, out, sizeof *out, "hs_dataset_info");
}
