/* .npy format (numpy/lib/format.py's documented layout): the magic
 * "\x93NUMPY", a major and minor version byte, a little-endian header length
 * (2 bytes in 1.0, 4 bytes in 2.0 and 3.0), then a Python dict literal with
 * the keys 'descr', 'fortran_order' and 'shape', padded with spaces and a
 * newline so that the payload starts on an aligned offset. */
#include "hs_npy.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static const unsigned char npy_magic[6] = {0x93, 'N', 'U', 'M', 'P', 'Y'};

size_t hs__dtype_size(hs_dtype dtype) {
  switch (dtype) {
    case HS_DTYPE_INT32: return 4;
    case HS_DTYPE_INT64: return 8;
    case HS_DTYPE_FLOAT32: return 4;
    case HS_DTYPE_FLOAT16: return 2;
    case HS_DTYPE_NONE: break;
  }
  return 0;
}

const char *hs__dtype_descr(hs_dtype dtype) {
  switch (dtype) {
    case HS_DTYPE_INT32: return "<i4";
    case HS_DTYPE_INT64: return "<i8";
    case HS_DTYPE_FLOAT32: return "<f4";
    case HS_DTYPE_FLOAT16: return "<f2";
    case HS_DTYPE_NONE: break;
  }
  return "";
}

const char *hs_dtype_name(hs_dtype dtype) {
  switch (dtype) {
    case HS_DTYPE_INT32: return "int32";
    case HS_DTYPE_INT64: return "int64";
    case HS_DTYPE_FLOAT32: return "float32";
    case HS_DTYPE_FLOAT16: return "float16";
    case HS_DTYPE_NONE: break;
  }
  return "none";
}

/* ---- header dict parser -------------------------------------------- */

typedef struct hdr_parser {
  const char *name;
  const char *s;
  size_t len, pos;
  size_t base; /* file offset of s[0] */
} hdr_parser;

static hs_status hdr_err(const hdr_parser *p, const char *what) {
  return hs__fail(HS_ERR_FORMAT, "%s: byte %zu: npy header: %s", p->name,
                  p->base + p->pos, what);
}

static void hdr_ws(hdr_parser *p) {
  while (p->pos < p->len &&
         (p->s[p->pos] == ' ' || p->s[p->pos] == '\t' || p->s[p->pos] == '\n' ||
          p->s[p->pos] == '\r'))
    p->pos++;
}

static bool hdr_peek(hdr_parser *p, char c) {
  hdr_ws(p);
  return p->pos < p->len && p->s[p->pos] == c;
}

static hs_status hdr_expect(hdr_parser *p, char c, const char *what) {
  if (!hdr_peek(p, c)) return hdr_err(p, what);
  p->pos++;
  return HS_OK;
}

/* A quoted Python string without escapes (none occur in npy headers). */
static hs_status hdr_string(hdr_parser *p, char *out, size_t cap) {
  hdr_ws(p);
  if (p->pos >= p->len || (p->s[p->pos] != '\'' && p->s[p->pos] != '"'))
    return hdr_err(p, "expected a quoted string");
  char q = p->s[p->pos];
  size_t start = ++p->pos;
  while (p->pos < p->len && p->s[p->pos] != q) {
    if (p->s[p->pos] == '\\' || p->s[p->pos] == '\n')
      return hdr_err(p, "unsupported character in string");
    p->pos++;
  }
  if (p->pos >= p->len) return hdr_err(p, "unterminated string");
  size_t n = p->pos - start;
  if (n + 1 > cap) {
    p->pos = start;
    return hdr_err(p, "string too long");
  }
  memcpy(out, p->s + start, n);
  out[n] = '\0';
  p->pos++;
  return HS_OK;
}

static bool hdr_word(hdr_parser *p, const char *w) {
  hdr_ws(p);
  size_t n = strlen(w);
  if (p->len - p->pos >= n && memcmp(p->s + p->pos, w, n) == 0) {
    p->pos += n;
    return true;
  }
  return false;
}

static hs_status hdr_shape(hdr_parser *p, hs__npy_header *h) {
  hs_status st = hdr_expect(p, '(', "expected '(' to open the shape tuple");
  if (st) return st;
  h->ndim = 0;
  for (;;) {
    if (hdr_peek(p, ')')) break;
    size_t start = p->pos;
    uint64_t v = 0;
    bool any = false;
    while (p->pos < p->len && p->s[p->pos] >= '0' && p->s[p->pos] <= '9') {
      unsigned d = (unsigned)(p->s[p->pos] - '0');
      if (v > (UINT64_MAX - d) / 10) {
        p->pos = start;
        return hdr_err(p, "shape dimension overflows 64 bits");
      }
      v = v * 10 + d;
      any = true;
      p->pos++;
    }
    if (!any) return hdr_err(p, "expected a non-negative integer in the shape");
    if (p->pos < p->len && p->s[p->pos] == 'L') p->pos++; /* Python 2 long */
    if (h->ndim >= 2) {
      p->pos = start;
      return hdr_err(p, "more than 2 dimensions");
    }
    h->shape[h->ndim++] = v;
    if (hdr_peek(p, ',')) {
      p->pos++;
      continue;
    }
    if (!hdr_peek(p, ')')) return hdr_err(p, "expected ',' or ')' in the shape");
  }
  p->pos++;
  return HS_OK;
}

/* descr: byte order, kind letter, item size ("<f4", "|u1"). */
static hs_status hdr_descr(hdr_parser *p, hs__npy_header *h, size_t at) {
  const char *d = h->descr;
  size_t n = strlen(d);
  size_t i = 0;
  char order = '|';
  if (n > 0 && strchr("<>|=", d[0])) order = d[i++];
  if (i >= n || !((d[i] >= 'a' && d[i] <= 'z') || (d[i] >= 'A' && d[i] <= 'Z'))) {
    p->pos = at;
    return hdr_err(p, "descr is not a simple dtype string");
  }
  char kind = d[i++];
  size_t size = 0;
  for (; i < n; i++) {
    if (d[i] < '0' || d[i] > '9' || size > 4096) {
      p->pos = at;
      return hdr_err(p, "descr is not a simple dtype string");
    }
    size = size * 10 + (size_t)(d[i] - '0');
  }
  if (order == '>' && size > 1) {
    p->pos = at;
    return hs__fail(HS_ERR_FORMAT,
                    "%s: byte %zu: big-endian dtype '%s' is not supported "
                    "(save a little-endian copy: a.astype('<%c%zu'))",
                    p->name, p->base + at, d, kind, size);
  }
  if (order == '=' && size > 1) {
    p->pos = at;
    return hs__fail(HS_ERR_FORMAT,
                    "%s: byte %zu: dtype '%s' has no explicit byte order", p->name,
                    p->base + at, d);
  }
  if (size == 0) {
    p->pos = at;
    return hdr_err(p, "descr has an item size of 0");
  }
  h->elem_size = size;
  h->dtype = HS_DTYPE_NONE;
  if (kind == 'i' && size == 4) h->dtype = HS_DTYPE_INT32;
  if (kind == 'i' && size == 8) h->dtype = HS_DTYPE_INT64;
  if (kind == 'f' && size == 4) h->dtype = HS_DTYPE_FLOAT32;
  if (kind == 'f' && size == 2) h->dtype = HS_DTYPE_FLOAT16;
  return HS_OK;
}

static hs_status parse_dict(hdr_parser *p, hs__npy_header *h) {
  hs_status st = hdr_expect(p, '{', "expected '{' to open the header dict");
  if (st) return st;
  bool seen_descr = false, seen_fortran = false, seen_shape = false;
  for (;;) {
    if (hdr_peek(p, '}')) break;
    char key[32];
    size_t key_at = p->pos;
    if ((st = hdr_string(p, key, sizeof key))) return st;
    if ((st = hdr_expect(p, ':', "expected ':' after a key"))) return st;
    hdr_ws(p);
    if (strcmp(key, "descr") == 0) {
      if (seen_descr) goto dup;
      seen_descr = true;
      if (hdr_peek(p, '['))
        return hdr_err(p, "structured dtypes are not supported");
      size_t at = p->pos;
      if ((st = hdr_string(p, h->descr, sizeof h->descr))) return st;
      if ((st = hdr_descr(p, h, at))) return st;
    } else if (strcmp(key, "fortran_order") == 0) {
      if (seen_fortran) goto dup;
      seen_fortran = true;
      if (hdr_word(p, "True")) h->fortran_order = true;
      else if (hdr_word(p, "False")) h->fortran_order = false;
      else return hdr_err(p, "fortran_order must be True or False");
    } else if (strcmp(key, "shape") == 0) {
      if (seen_shape) goto dup;
      seen_shape = true;
      if ((st = hdr_shape(p, h))) return st;
    } else {
      p->pos = key_at;
      return hdr_err(p, "unknown key in header dict");
    }
    if (hdr_peek(p, ',')) {
      p->pos++;
      continue;
    }
    if (!hdr_peek(p, '}')) return hdr_err(p, "expected ',' or '}' in the header dict");
  }
  p->pos++;
  hdr_ws(p);
  if (p->pos != p->len) return hdr_err(p, "unexpected text after the header dict");
  if (!seen_descr) return hdr_err(p, "header dict has no 'descr'");
  if (!seen_fortran) return hdr_err(p, "header dict has no 'fortran_order'");
  if (!seen_shape) return hdr_err(p, "header dict has no 'shape'");
  return HS_OK;
dup:
  return hdr_err(p, "repeated key in header dict");
}

hs_status hs__npy_parse(const char *name, const void *buf, size_t len,
                        hs__npy_header *out) {
  const unsigned char *b = buf;
  memset(out, 0, sizeof *out);
  if (len < 8 || memcmp(b, npy_magic, 6) != 0) {
    size_t at = 0;
    while (at < 6 && at < len && b[at] == npy_magic[at]) at++;
    if (len < 6 && at == len)
      return hs__fail(HS_ERR_FORMAT, "%s: byte %zu: file ends inside the npy magic",
                      name, len);
    if (at < 6)
      return hs__fail(HS_ERR_FORMAT,
                      "%s: byte %zu: not an npy file (bad magic; expected \\x93NUMPY)",
                      name, at);
    return hs__fail(HS_ERR_FORMAT, "%s: byte %zu: file ends before the npy version",
                    name, len);
  }
  out->major = b[6];
  out->minor = b[7];
  size_t hl_bytes;
  if (out->major == 1) hl_bytes = 2;
  else if (out->major == 2 || out->major == 3) hl_bytes = 4;
  else
    return hs__fail(HS_ERR_FORMAT,
                    "%s: byte 6: unsupported npy format version %d.%d "
                    "(1.0, 2.0 and 3.0 are read)",
                    name, out->major, out->minor);
  if (out->minor != 0)
    return hs__fail(HS_ERR_FORMAT, "%s: byte 7: unsupported npy format version %d.%d",
                    name, out->major, out->minor);
  if (len < 8 + hl_bytes)
    return hs__fail(HS_ERR_FORMAT, "%s: byte %zu: file ends inside the header length",
                    name, len);
  uint32_t hl = (uint32_t)b[8] | (uint32_t)b[9] << 8;
  if (hl_bytes == 4) hl |= (uint32_t)b[10] << 16 | (uint32_t)b[11] << 24;
  size_t start = 8 + hl_bytes;
  if (hl > HS_NPY_MAX_HEADER)
    return hs__fail(HS_ERR_FORMAT,
                    "%s: byte 8: header length %" PRIu32 " exceeds the %d-byte limit",
                    name, hl, HS_NPY_MAX_HEADER);
  if (len < start + hl)
    return hs__fail(HS_ERR_FORMAT,
                    "%s: byte %zu: file ends inside the header (it declares %" PRIu32
                    " header bytes from byte %zu)",
                    name, len, hl, start);
  for (size_t i = 0; i < hl; i++) {
    unsigned char c = b[start + i];
    /* Version 3.0 allows UTF-8, but a valid header needs ASCII only. */
    if (c == 0 || c >= 0x80)
      return hs__fail(HS_ERR_FORMAT, "%s: byte %zu: npy header: non-ASCII byte 0x%02x",
                      name, start + i, c);
  }
  hdr_parser p = {.name = name, .s = (const char *)b + start, .len = hl, .pos = 0,
                  .base = start};
  hs_status st = parse_dict(&p, out);
  if (st) return st;
  out->dict_offset = start;
  out->data_offset = start + hl;
  uint64_t count = 1;
  for (int i = 0; i < out->ndim; i++)
    if (__builtin_mul_overflow(count, out->shape[i], &count))
      return hs__fail(HS_ERR_FORMAT, "%s: byte %zu: npy header: shape overflows", name,
                      start);
  out->count = count;
  if (__builtin_mul_overflow(count, (uint64_t)out->elem_size, &out->data_bytes))
    return hs__fail(HS_ERR_FORMAT, "%s: byte %zu: npy header: payload size overflows",
                    name, start);
  return HS_OK;
}

static hs_status pread_full(const char *path, int fd, void *buf, size_t len, uint64_t at,
                            size_t *got) {
  *got = 0;
  while (*got < len) {
    ssize_t r = pread(fd, (char *)buf + *got, len - *got, (off_t)(at + *got));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0)
      return hs__fail(HS_ERR_IO, "%s: byte %" PRIu64 ": read failed: %s", path, at + *got,
                      strerror(errno));
    if (r == 0) break;
    *got += (size_t)r;
  }
  return HS_OK;
}

hs_status hs__npy_open_fd(const char *path, int fd, hs__npy_header *h) {
  struct stat sb;
  if (fstat(fd, &sb) != 0)
    return hs__fail(HS_ERR_IO, "%s: cannot stat: %s", path, strerror(errno));
  if (!S_ISREG(sb.st_mode))
    return hs__fail(HS_ERR_IO, "%s: not a regular file", path);
  uint64_t fsize = (uint64_t)sb.st_size;
  /* Read the preamble, then exactly the header it declares, with kernel
   * readahead off: a feature file's payload must not be pulled in just to
   * learn its shape. */
  posix_fadvise(fd, 0, 0, POSIX_FADV_RANDOM);
  unsigned char pre[12];
  size_t got;
  hs_status st = pread_full(path, fd, pre, sizeof pre, 0, &got);
  if (st) return st;
  size_t len = got;
  if (got == sizeof pre && memcmp(pre, npy_magic, 6) == 0 && pre[6] >= 1 && pre[6] <= 3) {
    size_t hl = (size_t)pre[8] | (size_t)pre[9] << 8;
    size_t start = 10;
    if (pre[6] > 1) {
      hl |= (size_t)pre[10] << 16 | (size_t)pre[11] << 24;
      start = 12;
    }
    if (hl <= HS_NPY_MAX_HEADER) len = start + hl;
  }
  unsigned char *buf = malloc(len > sizeof pre ? len : sizeof pre);
  if (!buf) return hs__fail(HS_ERR_NOMEM, "%s: no memory for the header", path);
  memcpy(buf, pre, got);
  if (len > got) {
    size_t more;
    st = pread_full(path, fd, buf + got, len - got, got, &more);
    if (st) {
      free(buf);
      return st;
    }
    got += more;
  }
  posix_fadvise(fd, 0, 0, POSIX_FADV_NORMAL);
  st = hs__npy_parse(path, buf, got, h);
  free(buf);
  if (st) return st;
  uint64_t need = h->data_offset + h->data_bytes;
  if (fsize < need)
    return hs__fail(HS_ERR_FORMAT,
                    "%s: byte %" PRIu64 ": file is truncated: the header promises %" PRIu64
                    " payload bytes from byte %zu (%" PRIu64 " bytes in all)",
                    path, fsize, h->data_bytes, h->data_offset, need);
  if (fsize > need)
    return hs__fail(HS_ERR_FORMAT,
                    "%s: byte %" PRIu64 ": %" PRIu64
                    " unexpected bytes after the payload the header promises",
                    path, need, fsize - need);
  return HS_OK;
}

hs_status hs__npy_open(const char *path, hs__npy_header *h, int *fd_out) {
  hs_status st;
  int fd = hs__open_regular(path, NULL, &st);
  if (fd < 0) return st;
  st = hs__npy_open_fd(path, fd, h);
  if (st) {
    close(fd);
    return st;
  }
  *fd_out = fd;
  return HS_OK;
}

hs_status hs__npy_expect(const char *path, const hs__npy_header *h,
                         unsigned allowed, int ndim) {
  if (h->dtype == HS_DTYPE_NONE || !((allowed >> h->dtype) & 1u)) {
    char list[64] = "";
    for (int t = HS_DTYPE_INT32; t <= HS_DTYPE_FLOAT16; t++) {
      if (!((allowed >> t) & 1u)) continue;
      if (list[0]) strcat(list, " or ");
      strcat(list, hs_dtype_name((hs_dtype)t));
    }
    return hs__fail(HS_ERR_FORMAT, "%s: byte %zu: dtype '%s' is not allowed here (expected %s)",
                    path, h->dict_offset, h->descr, list);
  }
  if (h->ndim != ndim)
    return hs__fail(HS_ERR_FORMAT, "%s: byte %zu: %d-dimensional array, expected %d dimension%s",
                    path, h->dict_offset, h->ndim, ndim, ndim == 1 ? "" : "s");
  /* A one-dimensional array has the same layout in either order. */
  if (h->fortran_order && ndim > 1)
    return hs__fail(HS_ERR_FORMAT,
                    "%s: byte %zu: Fortran-order array is not supported "
                    "(save np.ascontiguousarray(a))",
                    path, h->dict_offset);
  return HS_OK;
}

hs_status hs__npy_map(const char *path, int fd, const hs__npy_header *h,
                      bool populate, hs__map *m, const void **data) {
  m->base = NULL;
  m->len = 0;
  if (h->data_offset % h->elem_size != 0)
    return hs__fail(HS_ERR_UNSUPPORTED,
                    "%s: byte %zu: payload offset is not a multiple of the %zu-byte "
                    "element size",
                    path, h->data_offset, h->elem_size);
  uint64_t total = h->data_offset + h->data_bytes;
  if (total > SIZE_MAX) return hs__fail(HS_ERR_NOMEM, "%s: too large to map", path);
  int flags = MAP_SHARED;
  if (populate) flags = MAP_PRIVATE | MAP_POPULATE;
  void *p = mmap(NULL, (size_t)total, PROT_READ, flags, fd, 0);
  if (p == MAP_FAILED)
    return hs__fail(HS_ERR_IO, "%s: cannot map %" PRIu64 " bytes: %s", path, total,
                    strerror(errno));
  m->base = p;
  m->len = (size_t)total;
  *data = (const char *)p + h->data_offset;
  return HS_OK;
}

void hs__map_release(hs__map *m) {
  if (m->base) munmap(m->base, m->len);
  m->base = NULL;
  m->len = 0;
}

hs_status hs__npy_read_chunks(const char *path, int fd, const hs__npy_header *h,
                              hs__npy_chunk_fn fn, void *ctx) {
  enum { CHUNK = 1 << 20 };
  size_t es = h->elem_size;
  size_t per = CHUNK / es;
  void *buf = malloc(per * es);
  if (!buf) return hs__fail(HS_ERR_NOMEM, "%s: no memory for a read buffer", path);
  hs_status st = HS_OK;
  for (uint64_t first = 0; first < h->count;) {
    size_t n = h->count - first < per ? (size_t)(h->count - first) : per;
    size_t bytes = n * es, got = 0;
    uint64_t off = h->data_offset + first * es;
    while (got < bytes) {
      ssize_t r = pread(fd, (char *)buf + got, bytes - got, (off_t)(off + got));
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) {
        st = hs__fail(HS_ERR_IO, "%s: byte %" PRIu64 ": read failed: %s", path, off + got,
                      r < 0 ? strerror(errno) : "unexpected end of file");
        goto fail;
      }
      got += (size_t)r;
    }
    if ((st = fn(ctx, buf, (size_t)first, n))) goto fail;
    first += n;
  }
fail:
  free(buf);
  return st;
}

typedef struct i32_ctx {
  const char *path;
  const hs__npy_header *h;
  int32_t *dst;
  int64_t lo, hi;
  const char *what;
} i32_ctx;

static hs_status range_fail(const i32_ctx *c, size_t i, int64_t v) {
  return hs__fail(HS_ERR_FORMAT, "%s: element %zu (byte %zu): %s: %" PRId64
                  " is outside [%" PRId64 ", %" PRId64 "]",
                  c->path, i, c->h->data_offset + i * c->h->elem_size, c->what, v, c->lo,
                  c->hi);
}

static hs_status i32_chunk(void *ctx, const void *chunk, size_t first, size_t n) {
  i32_ctx *c = ctx;
  int32_t *dst = c->dst + first;
  if (c->h->dtype == HS_DTYPE_INT64) {
    const int64_t *s = chunk;
    bool bad = false;
    for (size_t i = 0; i < n; i++) {
      bad |= (s[i] < c->lo) | (s[i] > c->hi);
      dst[i] = (int32_t)s[i];
    }
    if (bad)
      for (size_t i = 0; i < n; i++)
        if (s[i] < c->lo || s[i] > c->hi) return range_fail(c, first + i, s[i]);
  } else {
    const int32_t *s = chunk;
    bool bad = false;
    for (size_t i = 0; i < n; i++) {
      bad |= (s[i] < c->lo) | (s[i] > c->hi);
      dst[i] = s[i];
    }
    if (bad)
      for (size_t i = 0; i < n; i++)
        if (s[i] < c->lo || s[i] > c->hi) return range_fail(c, first + i, s[i]);
  }
  return HS_OK;
}

hs_status hs__npy_read_i32(const char *path, int fd, const hs__npy_header *h,
                           int32_t *dst, int64_t lo, int64_t hi, const char *what) {
  i32_ctx c = {path, h, dst, lo, hi, what};
  return hs__npy_read_chunks(path, fd, h, i32_chunk, &c);
}

typedef struct i64_ctx {
  const hs__npy_header *h;
  int64_t *dst;
} i64_ctx;

static hs_status i64_chunk(void *ctx, const void *chunk, size_t first, size_t n) {
  i64_ctx *c = ctx;
  if (c->h->dtype == HS_DTYPE_INT64) {
    memcpy(c->dst + first, chunk, n * sizeof(int64_t));
  } else {
    const int32_t *s = chunk;
    for (size_t i = 0; i < n; i++) c->dst[first + i] = s[i];
  }
  return HS_OK;
}

hs_status hs__npy_read_i64(const char *path, int fd, const hs__npy_header *h,
                           int64_t *dst) {
  i64_ctx c = {h, dst};
  return hs__npy_read_chunks(path, fd, h, i64_chunk, &c);
}

/* ---- writing --------------------------------------------------------- */

size_t hs__npy_format_header(char *buf, size_t cap, hs_dtype dtype, int ndim,
                             const uint64_t *shape) {
  char dict[160];
  int n;
  if (ndim == 1)
    n = snprintf(dict, sizeof dict,
                 "{'descr': '%s', 'fortran_order': False, 'shape': (%" PRIu64 ",), }",
                 hs__dtype_descr(dtype), shape[0]);
  else
    n = snprintf(dict, sizeof dict,
                 "{'descr': '%s', 'fortran_order': False, 'shape': (%" PRIu64 ", %" PRIu64
                 "), }",
                 hs__dtype_descr(dtype), shape[0], shape[1]);
  size_t dl = (size_t)n;
  /* Header text ends in '\n' and pads the whole preamble to 64 bytes. */
  size_t total = (10 + dl + 1 + 63) / 64 * 64;
  if (total > cap) return 0;
  memcpy(buf, npy_magic, 6);
  buf[6] = 1;
  buf[7] = 0;
  size_t hl = total - 10;
  buf[8] = (char)(hl & 0xff);
  buf[9] = (char)(hl >> 8);
  memcpy(buf + 10, dict, dl);
  memset(buf + 10 + dl, ' ', total - 10 - dl - 1);
  buf[total - 1] = '\n';
  return total;
}

hs_status hs__write_all(const char *path, int fd, const void *data, size_t bytes,
                        uint64_t at) {
  const char *p = data;
  while (bytes) {
    /* Chunks of 64 MiB: a stop asked for is seen between them. */
    if (hs__stopped()) return hs__fail_stopped();
    size_t chunk = bytes < (1u << 26) ? bytes : (1u << 26);
    ssize_t w = write(fd, p, chunk);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0)
      return hs__fail(HS_ERR_IO, "%s: byte %" PRIu64 ": write failed: %s", path, at,
                      w < 0 ? strerror(errno) : "no progress");
    p += w;
    at += (uint64_t)w;
    bytes -= (size_t)w;
  }
  return HS_OK;
}

hs_status hs__npy_out_open(hs__npy_out *o, const char *path, hs_dtype dtype, int ndim,
                           const uint64_t *shape) {
  o->fd = -1;
  o->path = NULL;
  o->written = 0;
  if (ndim < 1 || ndim > 2 || hs__dtype_size(dtype) == 0)
    return hs__fail(HS_ERR_INVALID_ARG, "%s: cannot write a %d-dimensional %s array",
                    path, ndim, hs_dtype_name(dtype));
  uint64_t count = 1;
  for (int i = 0; i < ndim; i++)
    if (__builtin_mul_overflow(count, shape[i], &count))
      return hs__fail(HS_ERR_INVALID_ARG, "%s: shape overflows", path);
  if (__builtin_mul_overflow(count, (uint64_t)hs__dtype_size(dtype), &o->expect))
    return hs__fail(HS_ERR_INVALID_ARG, "%s: size overflows", path);
  char hdr[256];
  size_t hl = hs__npy_format_header(hdr, sizeof hdr, dtype, ndim, shape);
  o->path = strdup(path);
  if (!o->path) return hs__fail(HS_ERR_NOMEM, "%s: no memory", path);
  o->fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666); /* the umask decides */
  if (o->fd < 0) {
    hs_status st = hs__fail(HS_ERR_IO, "%s: cannot create: %s", path, strerror(errno));
    free(o->path);
    o->path = NULL;
    return st;
  }
  hs_status st = hs__write_all(path, o->fd, hdr, hl, 0);
  if (st) hs__npy_out_discard(o);
  return st;
}

hs_status hs__npy_out_write(hs__npy_out *o, const void *data, size_t bytes) {
  if (bytes > o->expect - o->written)
    return hs__fail(HS_ERR_INVALID_ARG, "%s: %zu more bytes than the header promises",
                    o->path, bytes - (size_t)(o->expect - o->written));
  hs_status st = hs__write_all(o->path, o->fd, data, bytes, o->written);
  if (st) return st;
  o->written += bytes;
  return HS_OK;
}

hs_status hs__npy_out_close(hs__npy_out *o) {
  hs_status st = HS_OK;
  if (o->written != o->expect)
    st = hs__fail(HS_ERR_INVALID_ARG,
                  "%s: %" PRIu64 " payload bytes written, the header promises %" PRIu64,
                  o->path, o->written, o->expect);
  else if (fsync(o->fd) != 0)
    st = hs__fail(HS_ERR_IO, "%s: fsync failed: %s", o->path, strerror(errno));
  if (close(o->fd) != 0 && !st)
    st = hs__fail(HS_ERR_IO, "%s: close failed: %s", o->path, strerror(errno));
  o->fd = -1;
  free(o->path);
  o->path = NULL;
  return st;
}

void hs__npy_out_discard(hs__npy_out *o) {
  if (o->fd >= 0) close(o->fd);
  o->fd = -1;
  free(o->path);
  o->path = NULL;
}

hs_status hs__npy_write(const char *path, hs_dtype dtype, int ndim,
                        const uint64_t *shape, const void *data) {
  hs__npy_out o;
  hs_status st = hs__npy_out_open(&o, path, dtype, ndim, shape);
  if (st) return st;
  if (o.expect > SIZE_MAX) {
    hs__npy_out_discard(&o);
    return hs__fail(HS_ERR_INVALID_ARG, "%s: too large", path);
  }
  if ((st = hs__npy_out_write(&o, data, (size_t)o.expect))) {
    hs__npy_out_discard(&o);
    return st;
  }
  return hs__npy_out_close(&o);
}
