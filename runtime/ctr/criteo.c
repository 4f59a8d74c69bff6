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

struct hs_ctr_reader {
  char **paths;
  int n_paths;
  bool labels;
  int cur; /* file open: paths[cur] */
  gzFile z; /* gzip files */
  int fd;   /* plain files (-1: none open) */
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
}

static hs_status open_file(hs_ctr_reader *r, int k) {
  close_file(r);
  r->cur = k;
  r->head = r->tail = 0;
  r->eof = false;
  r->line = 0;
  if (k >= r->n_paths) return HS_OK;
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

hs_status hs__ctr_reader_next(hs_ctr_reader *r, int32_t max, hs_ctr_rows *out) {
  out->n = 0;
  hs_status st;
  while (out->n < max && r->cur < r->n_paths) {
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
