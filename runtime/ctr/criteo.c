/* The Criteo-layout reader (see hetsage/ctr.h): streaming, plain text or
 * gzip (zlib's gz* functions read both), a hand-written parser, and errors
 * that name the file, the line and the column. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "ctr/hs_ctr.h"
#include "data/hs_npy.h"

#define BUF_BYTES (4u << 20) /* longest line: a little less */
/* Plain files are read this much at a time: a read that stays in the
 * core's cache for the parse that follows (zlib's gzread passes large
 * requests through, but a 4 MiB read lands in memory before the parser
 * reads it back). */
#define PLAIN_READ (256u << 10)
#define LOG_TABLE 4096

static float log_table[LOG_TABLE];
static int log_table_ready;

float hs__ctr_log_transform(int64_t x) {
  if (x <= 0) return 0.0f;
  return (float)log1p((double)x);
}

static inline float log_fast(int64_t x) {
  /* Counts are mostly small: a table filled with the same function. The
   * race on first use writes the same values from every thread. */
  if (x > 0 && x < LOG_TABLE && log_table_ready) return log_table[x];
  return hs__ctr_log_transform(x);
}

static void init_log_table(void) {
  if (__atomic_load_n(&log_table_ready, __ATOMIC_ACQUIRE)) return;
  for (int i = 0; i < LOG_TABLE; i++) log_table[i] = hs__ctr_log_transform(i);
  __atomic_store_n(&log_table_ready, 1, __ATOMIC_RELEASE);
}

hs_status hs__ctr_rows_alloc(hs_ctr_rows *r, int32_t cap) {
  memset(r, 0, sizeof *r);
  size_t c = cap > 0 ? (size_t)cap : 1;
  r->labels = malloc(c);
  r->dense = malloc(c * HS_CTR_DENSE * sizeof *r->dense);
  r->ids = malloc(c * HS_CTR_SPARSE * sizeof *r->ids);
  if (!r->labels || !r->dense || !r->ids) {
    hs__ctr_rows_free(r);
    return hs__fail(HS_ERR_NOMEM, "CTR batch of %d examples", cap);
  }
  return HS_OK;
}

void hs__ctr_rows_free(hs_ctr_rows *r) {
  free(r->labels);
  free(r->dense);
  free(r->ids);
  memset(r, 0, sizeof *r);
}

/* ---- one line ------------------------------------------------------------- */

static const signed char hexval[256] = {
    ['0'] = 1, ['1'] = 2, ['2'] = 3, ['3'] = 4, ['4'] = 5, ['5'] = 6, ['6'] = 7, ['7'] = 8,
    ['8'] = 9, ['9'] = 10, ['a'] = 11, ['b'] = 12, ['c'] = 13, ['d'] = 14, ['e'] = 15,
    ['f'] = 16, ['A'] = 11, ['B'] = 12, ['C'] = 13, ['D'] = 14, ['E'] = 15, ['F'] = 16,
};

static hs_status bad(const char *file, int64_t line, int col, const char *p, size_t n,
                     const char *what) {
  char shown[40];
  size_t k = n < sizeof shown - 4 ? n : sizeof shown - 4;
  for (size_t i = 0; i < k; i++) shown[i] = (p[i] >= 0x20 && p[i] < 0x7f) ? p[i] : '?';
  if (k < n) {
    memcpy(shown + k, "...", 3);
    k += 3;
  }
  shown[k] = '\0';
  return hs__fail(HS_ERR_FORMAT, "%s:%lld: column %d: '%s' %s", file, (long long)line, col, shown,
                  what);
}

hs_status hs__ctr_parse_line(const char *p, size_t len, bool labels, const char *file,
                             int64_t line, hs_ctr_rows *out, int32_t i) {
  const char *end = p + len, *q = p;
  if (len && end[-1] == '\r') end--; /* files written on Windows */
  int col = 1;
  float *dense = out->dense + (size_t)i * HS_CTR_DENSE;
  uint64_t *ids = out->ids + (size_t)i * HS_CTR_SPARSE;
  if (labels) {
    const char *e = memchr(q, '\t', (size_t)(end - q));
    if (!e) e = end;
    if (e - q != 1 || (*q != '0' && *q != '1'))
      return bad(file, line, col, q, (size_t)(e - q), "is not a label (0 or 1)");
    out->labels[i] = (uint8_t)(*q - '0');
    if (e == end) return hs__fail(HS_ERR_FORMAT, "%s:%lld: 1 column, expected 40", file, (long long)line);
    q = e + 1;
    col++;
  } else {
    out->labels[i] = HS_CTR_NO_LABEL;
  }
  int want = labels ? 40 : 39;
  for (int j = 0; j < HS_CTR_DENSE; j++, col++) {
    const char *s = q;
    bool neg = false;
    uint64_t v = 0;
    if (q < end && *q == '-') {
      neg = true;
      q++;
    }
    const char *digits = q;
    while (q < end && *q >= '0' && *q <= '9') {
      if (v > (UINT64_MAX - 9) / 10) {
        const char *e = memchr(s, '\t', (size_t)(end - s));
        return bad(file, line, col, s, (size_t)((e ? e : end) - s), "overflows 64 bits");
      }
      v = v * 10 + (uint64_t)(*q - '0');
      q++;
    }
    if (q < end && *q != '\t') {
      const char *e = memchr(s, '\t', (size_t)(end - s));
      return bad(file, line, col, s, (size_t)((e ? e : end) - s), "is not an integer");
    }
    if (q == digits) {
      if (neg) return bad(file, line, col, s, 1, "is not an integer");
      dense[j] = 0.0f; /* missing */
    } else {
      if (v > (uint64_t)INT64_MAX) return bad(file, line, col, s, (size_t)(q - s), "overflows 64 bits");
      dense[j] = neg ? 0.0f : log_fast((int64_t)v);
    }
    if (q == end) {
      return hs__fail(HS_ERR_FORMAT, "%s:%lld: %d columns, expected %d", file, (long long)line, col,
                      want);
    }
    q++;
  }
  for (int f = 0; f < HS_CTR_SPARSE; f++, col++) {
    const char *s = q;
    uint64_t v = 0;
    int nd = 0;
    /* Criteo's ids have eight digits: eight lookups without a branch
     * between them, then the loop below only where one is not a digit
     * (its error) or the column is longer or shorter. */
    if (end - q >= 8 && (end - q == 8 || q[8] == '\t')) {
      const unsigned char *u = (const unsigned char *)q;
      int h0 = hexval[u[0]], h1 = hexval[u[1]], h2 = hexval[u[2]], h3 = hexval[u[3]];
      int h4 = hexval[u[4]], h5 = hexval[u[5]], h6 = hexval[u[6]], h7 = hexval[u[7]];
      if ((h0 != 0) & (h1 != 0) & (h2 != 0) & (h3 != 0) & (h4 != 0) & (h5 != 0) & (h6 != 0) &
          (h7 != 0)) {
        v = (uint64_t)(h0 - 1) << 28 | (uint64_t)(h1 - 1) << 24 | (uint64_t)(h2 - 1) << 20 |
            (uint64_t)(h3 - 1) << 16 | (uint64_t)(h4 - 1) << 12 | (uint64_t)(h5 - 1) << 8 |
            (uint64_t)(h6 - 1) << 4 | (uint64_t)(h7 - 1);
        nd = 8;
        q += 8;
      }
    }
    while (q < end && *q != '\t') {
      int h = hexval[(unsigned char)*q];
      if (!h) {
        const char *e = memchr(s, '\t', (size_t)(end - s));
        return bad(file, line, col, s, (size_t)((e ? e : end) - s), "is not a hexadecimal id");
      }
      if (++nd > 16) {
        const char *e = memchr(s, '\t', (size_t)(end - s));
        return bad(file, line, col, s, (size_t)((e ? e : end) - s), "has more than 16 hexadecimal digits");
      }
      v = v << 4 | (uint64_t)(h - 1);
      q++;
    }
    ids[f] = nd ? v : HS_CTR_MISSING;
    if (f + 1 < HS_CTR_SPARSE) {
      if (q == end)
        return hs__fail(HS_ERR_FORMAT, "%s:%lld: %d columns, expected %d", file, (long long)line,
                        col, want);
      q++;
    }
  }
  if (q != end) {
    int cols = col - 1; /* every tab left starts one more column */
    for (const char *t = q; t < end; t++) cols += *t == '\t';
    return hs__fail(HS_ERR_FORMAT, "%s:%lld: %d columns, expected %d", file, (long long)line, cols,
                    want);
  }
  return HS_OK;
}

/* ---- the stream --------------------------------------------------------------- */

/* An array set (see hs_ctr_reader_open's comment in hs_ctr.h): its three
 * files by role. */
enum { A_LABEL, A_DENSE, A_IDS, A_COUNT };
static const char *const array_suffix[A_COUNT] = {"_label.npy", "_dense.npy", "_ids.npy"};

struct hs_ctr_reader {
  char **paths;
  int n_paths;
  bool labels;
  int cur; /* file open: paths[cur] */
  gzFile z; /* gzip files */
  int fd;   /* plain files (-1: none open) */
  /* An array set open: its files (fd -1: not read, the labels of a set
   * read without them), their headers, examples in all, examples read. */
  bool arrays;
  int afd[A_COUNT];
  char *apath[A_COUNT];
  hs__npy_header ah[A_COUNT];
  uint64_t a_rows, a_next;
  char *buf;
  size_t head, tail; /* unread bytes buf[head..tail) */
  bool eof;          /* of the current file */
  int64_t line;      /* lines read from the current file */
  int64_t count;
  uint64_t bytes;
};

static void close_file(hs_ctr_reader *r) {
  if (r->z) gzclose(r->z);
  if (r->fd >= 0) close(r->fd);
  r->z = NULL;
  r->fd = -1;
  for (int a = 0; a < A_COUNT; a++) {
    if (r->afd[a] >= 0) close(r->afd[a]);
    r->afd[a] = -1;
    free(r->apath[a]);
    r->apath[a] = NULL;
  }
  r->arrays = false;
}

/* The length of the set's prefix when `path` names one of its files. */
static bool array_prefix(const char *path, size_t *len) {
  size_t n = strlen(path);
  for (int a = 0; a < A_COUNT; a++) {
    size_t k = strlen(array_suffix[a]);
    if (n > k && strcmp(path + n - k, array_suffix[a]) == 0) {
      *len = n - k;
      return true;
    }
  }
  return false;
}

/* Open the array set paths[k] names: each file's type and shape, and one
 * number of examples in all three. */
static hs_status open_arrays(hs_ctr_reader *r, int k, size_t prefix) {
  const char *path = r->paths[k];
  r->arrays = true;
  r->a_rows = r->a_next = 0;
  const char *first = NULL; /* the first file opened: its rows are the set's */
  for (int a = 0; a < A_COUNT; a++) {
    if (a == A_LABEL && !r->labels) continue;
    size_t n = prefix + strlen(array_suffix[a]) + 1;
    if (!(r->apath[a] = malloc(n))) return hs__fail(HS_ERR_NOMEM, "CTR reader");
    snprintf(r->apath[a], n, "%.*s%s", (int)prefix, path, array_suffix[a]);
    const char *p = r->apath[a];
    hs__npy_header *h = &r->ah[a];
    hs_status st = hs__npy_open(p, h, &r->afd[a]);
    if (st != HS_OK) return st;
    /* labels int32 [N] (or [N, 1]); dense float32 [N, 13]; ids int64 or
     * int32 [N, 26] */
    int ndim = a != A_LABEL || h->ndim == 2 ? 2 : 1;
    unsigned allowed = a == A_DENSE ? 1u << HS_DTYPE_FLOAT32
                       : a == A_IDS ? 1u << HS_DTYPE_INT64 | 1u << HS_DTYPE_INT32
                                    : 1u << HS_DTYPE_INT32;
    if ((st = hs__npy_expect(p, h, allowed, ndim)) != HS_OK) return st;
    uint64_t cols = a == A_LABEL ? 1 : a == A_DENSE ? HS_CTR_DENSE : HS_CTR_SPARSE;
    if (h->ndim == 2 && h->shape[1] != cols)
      return hs__fail(HS_ERR_FORMAT, "%s: byte %zu: shape (%llu, %llu), expected (N, %llu)", p,
                      h->dict_offset, (unsigned long long)h->shape[0],
                      (unsigned long long)h->shape[1], (unsigned long long)cols);
    if (!first) {
      first = p;
      r->a_rows = h->shape[0];
    } else if (h->shape[0] != r->a_rows) {
      return hs__fail(HS_ERR_FORMAT, "%s: %llu examples, but %s has %llu", p,
                      (unsigned long long)h->shape[0], first, (unsigned long long)r->a_rows);
    }
  }
  return HS_OK;
}

static hs_status open_file(hs_ctr_reader *r, int k) {
  close_file(r);
  r->cur = k;
  r->head = r->tail = 0;
  r->eof = false;
  r->line = 0;
  if (k >= r->n_paths) return HS_OK;
  size_t prefix;
  if (array_prefix(r->paths[k], &prefix)) return open_arrays(r, k, prefix);
  hs_status st;
  int fd = hs__open_regular(r->paths[k], "CTR data", &st);
  if (fd < 0) return st;
  /* gzip's two magic bytes, or the file is read as it is. */
  unsigned char magic[2];
  ssize_t got;
  while ((got = pread(fd, magic, 2, 0)) < 0 && errno == EINTR) {
  }
  if (got < 0) {
    st = hs__fail(HS_ERR_IO, "%s: cannot read: %s", r->paths[k], strerror(errno));
    close(fd);
    return st;
  }
  if (got < 2 || magic[0] != 0x1f || magic[1] != 0x8b) {
    r->fd = fd;
    (void)posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
    return HS_OK;
  }
  r->z = gzdopen(fd, "rb");
  if (!r->z) {
    close(fd);
    return hs__fail(HS_ERR_NOMEM, "%s: no memory for the decompressor", r->paths[k]);
  }
  gzbuffer(r->z, 1u << 20);
  return HS_OK;
}

hs_status hs__ctr_reader_open(const char *const *paths, int n_paths, bool labels,
                              hs_ctr_reader **out) {
  *out = NULL;
  init_log_table();
  if (n_paths < 1) return hs__fail(HS_ERR_INVALID_ARG, "CTR reader: no file");
  hs_ctr_reader *r = calloc(1, sizeof *r);
  if (!r) return hs__fail(HS_ERR_NOMEM, "CTR reader");
  r->labels = labels;
  r->fd = -1;
  for (int a = 0; a < A_COUNT; a++) r->afd[a] = -1;
  r->n_paths = n_paths;
  r->paths = calloc((size_t)n_paths, sizeof *r->paths);
  r->buf = malloc(BUF_BYTES + 1);
  hs_status st = HS_OK;
  if (!r->paths || !r->buf) st = hs__fail(HS_ERR_NOMEM, "CTR reader");
  for (int i = 0; st == HS_OK && i < n_paths; i++)
    if (!(r->paths[i] = strdup(paths[i]))) st = hs__fail(HS_ERR_NOMEM, "CTR reader");
  if (st == HS_OK) st = open_file(r, 0);
  if (st != HS_OK) {
    hs__ctr_reader_close(r);
    return st;
  }
  *out = r;
  return HS_OK;
}

void hs__ctr_reader_close(hs_ctr_reader *r) {
  if (!r) return;
  close_file(r);
  for (int i = 0; r->paths && i < r->n_paths; i++) free(r->paths[i]);
  free(r->paths);
  free(r->buf);
  free(r);
}

hs_status hs__ctr_reader_rewind(hs_ctr_reader *r) {
  r->count = 0;
  r->bytes = 0;
  return open_file(r, 0);
}

int64_t hs__ctr_reader_count(const hs_ctr_reader *r) { return r->count; }
uint64_t hs__ctr_reader_bytes(const hs_ctr_reader *r) { return r->bytes; }

/* Up to `room` more bytes of the current file at buf + tail (a plain file
 * PLAIN_READ at most); *got 0 at its end, eof then set. */
static hs_status read_some(hs_ctr_reader *r, size_t room, size_t *got) {
  char *to = r->buf + r->tail;
  if (r->fd >= 0) {
    ssize_t k;
    while ((k = read(r->fd, to, room < PLAIN_READ ? room : PLAIN_READ)) < 0 && errno == EINTR) {
    }
    if (k < 0)
      return hs__fail(HS_ERR_IO, "%s: after line %lld: %s", r->paths[r->cur], (long long)r->line,
                      strerror(errno));
    *got = (size_t)k;
    r->eof = k == 0;
    return HS_OK;
  }
  int k = gzread(r->z, to, (unsigned)room);
  int code;
  if (k < 0) {
    const char *msg = gzerror(r->z, &code);
    return hs__fail(HS_ERR_IO, "%s: after line %lld: %s", r->paths[r->cur], (long long)r->line,
                    code == Z_ERRNO ? strerror(errno) : msg);
  }
  if (k == 0) {
    /* zlib ends a stream cut short (a truncated or unfinished .gz) as it
     * ends a whole one, and says which in its error state. */
    const char *msg = gzerror(r->z, &code);
    if (code == Z_BUF_ERROR)
      return hs__fail(HS_ERR_IO, "%s: after line %lld: truncated: the compressed data ends early (%s)",
                      r->paths[r->cur], (long long)r->line, msg);
    r->eof = true;
  }
  *got = (size_t)k;
  return HS_OK;
}

/* Refill: move the unread tail to the front and read more. */
static hs_status fill(hs_ctr_reader *r) {
  size_t rest = r->tail - r->head;
  memmove(r->buf, r->buf + r->head, rest);
  r->head = 0;
  r->tail = rest;
  while (!r->eof && r->tail < BUF_BYTES) {
    size_t k = 0;
    hs_status st = read_some(r, BUF_BYTES - r->tail, &k);
    if (st != HS_OK) return st;
    r->tail += k;
    if (k > 0 && memchr(r->buf + r->tail - k, '\n', k)) break;
  }
  return HS_OK;
}

/* `bytes` of array `a` from its example `row` on (of `width` elements
 * each) into `to`. */
static hs_status read_array(hs_ctr_reader *r, int a, uint64_t row, uint64_t width, void *to,
                            size_t bytes) {
  const hs__npy_header *h = &r->ah[a];
  uint64_t at = h->data_offset + row * width * h->elem_size;
  for (size_t done = 0; done < bytes;) {
    ssize_t k = pread(r->afd[a], (char *)to + done, bytes - done, (off_t)(at + done));
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0)
      return hs__fail(HS_ERR_IO, "%s: byte %llu: %s", r->apath[a],
                      (unsigned long long)(at + done), k < 0 ? strerror(errno) : "the file ends early");
    done += (size_t)k;
  }
  return HS_OK;
}

/* Up to `max` examples of the open array set into `out`, after its
 * out->n. Labels must be 0 or 1 and dense values finite; errors name the
 * file and the example (counted from 0, as numpy indexes it). */
static hs_status next_arrays(hs_ctr_reader *r, int32_t max, hs_ctr_rows *out) {
  /* in pieces that fit the reader's buffer (labels and int32 ids pass through it) */
  const uint64_t piece = BUF_BYTES / (HS_CTR_SPARSE * sizeof(int32_t));
  while (out->n < max && r->a_next < r->a_rows) {
    uint64_t row = r->a_next, n = r->a_rows - row;
    if (n > (uint64_t)(max - out->n)) n = (uint64_t)(max - out->n);
    if (n > piece) n = piece;
    size_t at = (size_t)out->n;
    float *dense = out->dense + at * HS_CTR_DENSE;
    uint64_t *ids = out->ids + at * HS_CTR_SPARSE;
    hs_status st;
    if (r->labels) {
      int32_t *lab = (int32_t *)(void *)r->buf;
      if ((st = read_array(r, A_LABEL, row, 1, lab, n * 4)) != HS_OK) return st;
      for (uint64_t i = 0; i < n; i++) {
        if (lab[i] != 0 && lab[i] != 1)
          return hs__fail(HS_ERR_FORMAT, "%s: example %llu: label %d (expected 0 or 1)",
                          r->apath[A_LABEL], (unsigned long long)(row + i), (int)lab[i]);
        out->labels[at + i] = (uint8_t)lab[i];
      }
    } else {
      memset(out->labels + at, HS_CTR_NO_LABEL, n);
    }
    if ((st = read_array(r, A_DENSE, row, HS_CTR_DENSE, dense, n * HS_CTR_DENSE * 4)) != HS_OK)
      return st;
    for (uint64_t i = 0; i < n * HS_CTR_DENSE; i++)
      if (!isfinite(dense[i]))
        return hs__fail(HS_ERR_FORMAT, "%s: example %llu, column %d: %g is not a finite number",
                        r->apath[A_DENSE], (unsigned long long)(row + i / HS_CTR_DENSE),
                        (int)(i % HS_CTR_DENSE), (double)dense[i]);
    if (r->ah[A_IDS].dtype == HS_DTYPE_INT64) {
      /* int64 -1 is HS_CTR_MISSING */
      if ((st = read_array(r, A_IDS, row, HS_CTR_SPARSE, ids, n * HS_CTR_SPARSE * 8)) != HS_OK)
        return st;
    } else {
      int32_t *v = (int32_t *)(void *)r->buf;
      if ((st = read_array(r, A_IDS, row, HS_CTR_SPARSE, v, n * HS_CTR_SPARSE * 4)) != HS_OK)
        return st;
      /* sign-extended: -1 is HS_CTR_MISSING here too */
      for (uint64_t i = 0; i < n * HS_CTR_SPARSE; i++) ids[i] = (uint64_t)(int64_t)v[i];
    }
    out->n += (int32_t)n;
    r->a_next += n;
    r->count += (int64_t)n;
    r->bytes += n * (r->labels ? 4u : 0u) + n * HS_CTR_DENSE * 4 +
                n * HS_CTR_SPARSE * r->ah[A_IDS].elem_size;
  }
  return HS_OK;
}

hs_status hs__ctr_reader_next(hs_ctr_reader *r, int32_t max, hs_ctr_rows *out) {
  out->n = 0;
  hs_status st;
  while (out->n < max && r->cur < r->n_paths) {
    if (r->arrays) {
      if (r->a_next == r->a_rows) {
        if ((st = open_file(r, r->cur + 1)) != HS_OK) return st;
      } else if ((st = next_arrays(r, max, out)) != HS_OK) {
        return st;
      }
      continue;
    }
    char *nl = r->head < r->tail ? memchr(r->buf + r->head, '\n', r->tail - r->head) : NULL;
    if (!nl && !r->eof) {
      if ((st = fill(r)) != HS_OK) return st;
      nl = r->head < r->tail ? memchr(r->buf + r->head, '\n', r->tail - r->head) : NULL;
      if (!nl && !r->eof)
        return hs__fail(HS_ERR_FORMAT, "%s:%lld: line longer than %u bytes", r->paths[r->cur],
                        (long long)r->line + 1, BUF_BYTES);
    }
    size_t len;
    if (nl) {
      len = (size_t)(nl - (r->buf + r->head));
    } else if (r->head < r->tail) {
      len = r->tail - r->head; /* a last line without its newline */
    } else {
      if ((st = open_file(r, r->cur + 1)) != HS_OK) return st;
      continue;
    }
    r->line++;
    const char *p = r->buf + r->head;
    r->head += len + (nl ? 1 : 0);
    r->bytes += len + (nl ? 1 : 0);
    if (len == 0 || (len == 1 && p[0] == '\r'))
      return hs__fail(HS_ERR_FORMAT, "%s:%lld: empty line", r->paths[r->cur], (long long)r->line);
    if ((st = hs__ctr_parse_line(p, len, r->labels, r->paths[r->cur], r->line, out, out->n)) != HS_OK)
      return st;
    out->n++;
    r->count++;
  }
  return HS_OK;
}

void hs__ctr_dense_stats(const hs_ctr_rows *r, float mu[HS_CTR_DENSE], float inv[HS_CTR_DENSE]) {
  for (int j = 0; j < HS_CTR_DENSE; j++) {
    double sum = 0, sq = 0;
    for (int32_t i = 0; i < r->n; i++) sum += r->dense[(size_t)i * HS_CTR_DENSE + j];
    double m = r->n > 0 ? sum / r->n : 0;
    for (int32_t i = 0; i < r->n; i++) {
      double d = r->dense[(size_t)i * HS_CTR_DENSE + j] - m;
      sq += d * d;
    }
    double sd = r->n > 0 ? sqrt(sq / r->n) : 0;
    mu[j] = (float)m;
    inv[j] = sd < 1e-6 ? 1.0f : (float)(1.0 / sd);
  }
}

void hs__ctr_dense_standardize(hs_ctr_rows *r, const float mu[HS_CTR_DENSE],
                               const float inv[HS_CTR_DENSE]) {
  for (int32_t i = 0; i < r->n; i++) {
    float *x = r->dense + (size_t)i * HS_CTR_DENSE;
    for (int j = 0; j < HS_CTR_DENSE; j++) x[j] = (x[j] - mu[j]) * inv[j];
  }
}

/* ---- writing an array set -------------------------------------------------------- */

enum { WRITE_BATCH = 65536, PROGRESS_EVERY = 4 }; /* progress every 4 batches */

hs_status hs_ctr_write_arrays(const char *const *paths, int n_paths, const char *prefix,
                              hs_ctr_arrays_progress_fn progress, void *user,
                              volatile sig_atomic_t *stop, int64_t *examples) {
  if (examples) *examples = 0;
  if (!paths || n_paths < 1 || !prefix || !*prefix)
    return hs__fail(HS_ERR_INVALID_ARG, "CTR arrays: no input file or no prefix");
  char *final[A_COUNT] = {0}, *tmp[A_COUNT] = {0};
  hs__npy_out o[A_COUNT];
  int opened = 0;
  hs_ctr_reader *r = NULL;
  hs_ctr_rows rows = {0};
  int32_t *lab = NULL;
  hs_status st = HS_OK;
  for (int a = 0; a < A_COUNT && st == HS_OK; a++) {
    size_t n = strlen(prefix) + strlen(array_suffix[a]) + 32;
    final[a] = malloc(n);
    tmp[a] = malloc(n);
    if (!final[a] || !tmp[a]) {
      st = hs__fail(HS_ERR_NOMEM, "CTR arrays");
      break;
    }
    snprintf(final[a], n, "%s%s", prefix, array_suffix[a]);
    snprintf(tmp[a], n, "%s%s.tmp-%ld", prefix, array_suffix[a], (long)getpid());
    if (access(final[a], F_OK) == 0) st = hs__fail(HS_ERR_IO, "%s exists already", final[a]);
  }
  if (st == HS_OK) st = hs__ctr_reader_open(paths, n_paths, true, &r);
  if (st == HS_OK) st = hs__ctr_rows_alloc(&rows, WRITE_BATCH);
  if (st == HS_OK && !(lab = malloc(WRITE_BATCH * sizeof *lab)))
    st = hs__fail(HS_ERR_NOMEM, "CTR arrays");
  /* Pass 1 counts (the header holds the shape), pass 2 writes. */
  int64_t total = 0, done = 0;
  for (int64_t batches = 0; st == HS_OK; batches++) {
    if (stop && *stop) st = hs__fail(HS_ERR_INTERRUPTED, "CTR arrays: interrupted while counting");
    else if ((st = hs__ctr_reader_next(r, WRITE_BATCH, &rows)) != HS_OK || !rows.n) break;
    total += rows.n;
    if (progress && batches % PROGRESS_EVERY == PROGRESS_EVERY - 1) progress(user, 1, total);
  }
  if (st == HS_OK) st = hs__ctr_reader_rewind(r);
  uint64_t shape[A_COUNT][2] = {
      {(uint64_t)total, 1}, {(uint64_t)total, HS_CTR_DENSE}, {(uint64_t)total, HS_CTR_SPARSE}};
  const hs_dtype dtype[A_COUNT] = {HS_DTYPE_INT32, HS_DTYPE_FLOAT32, HS_DTYPE_INT64};
  for (int a = 0; a < A_COUNT && st == HS_OK; a++)
    if ((st = hs__npy_out_open(&o[a], tmp[a], dtype[a], a == A_LABEL ? 1 : 2, shape[a])) == HS_OK)
      opened++;
  for (int64_t batches = 0; st == HS_OK; batches++) {
    if (stop && *stop) {
      st = hs__fail(HS_ERR_INTERRUPTED, "CTR arrays: interrupted after %lld examples",
                    (long long)done);
      break;
    }
    if ((st = hs__ctr_reader_next(r, WRITE_BATCH, &rows)) != HS_OK || !rows.n) break;
    if (done + rows.n > total) {
      st = hs__fail(HS_ERR_IO, "CTR arrays: the input grew while it was read");
      break;
    }
    for (int32_t i = 0; i < rows.n; i++) lab[i] = rows.labels[i];
    size_t n = (size_t)rows.n;
    if ((st = hs__npy_out_write(&o[A_LABEL], lab, n * 4)) != HS_OK ||
        (st = hs__npy_out_write(&o[A_DENSE], rows.dense, n * HS_CTR_DENSE * 4)) != HS_OK ||
        (st = hs__npy_out_write(&o[A_IDS], rows.ids, n * HS_CTR_SPARSE * 8)) != HS_OK)
      break;
    done += rows.n;
    if (progress && batches % PROGRESS_EVERY == PROGRESS_EVERY - 1) progress(user, 2, done);
  }
  if (st == HS_OK && done != total)
    st = hs__fail(HS_ERR_IO, "CTR arrays: %lld examples on the second reading, %lld on the first",
                  (long long)done, (long long)total);
  for (int a = 0; a < opened; a++) {
    if (st == HS_OK) st = hs__npy_out_close(&o[a]);
    else hs__npy_out_discard(&o[a]);
  }
  int renamed = 0;
  for (int a = 0; a < opened && st == HS_OK; a++, renamed++)
    if (rename(tmp[a], final[a]) != 0)
      st = hs__fail(HS_ERR_IO, "%s: cannot rename into place: %s", final[a], strerror(errno));
  if (st != HS_OK) {
    for (int a = 0; a < renamed; a++) unlink(final[a]);
    for (int a = renamed; a < A_COUNT; a++)
      if (tmp[a]) unlink(tmp[a]); /* one whose header failed is there too */
  } else if (examples) {
    *examples = done;
  }
  for (int a = 0; a < A_COUNT; a++) {
    free(final[a]);
    free(tmp[a]);
  }
  free(lab);
  hs__ctr_rows_free(&rows);
  hs__ctr_reader_close(r);
  return st;
}

bool hs_ctr_is_arrays(const char *path) {
  size_t len;
  return path && array_prefix(path, &len);
}

hs_status hs_ctr_check_arrays(const char *path, bool labels) {
  if (!hs_ctr_is_arrays(path))
    return hs__fail(HS_ERR_INVALID_ARG, "%s: not the name of an array set (NAME_label.npy, "
                    "NAME_dense.npy or NAME_ids.npy)", path ? path : "(null)");
  hs_ctr_reader *r;
  hs_status st = hs__ctr_reader_open(&path, 1, labels, &r);
  if (st == HS_OK) hs__ctr_reader_close(r);
  return st;
}
