#include "hs_text.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

enum { READ_CHUNK = 1 << 18 };

static hs_status text_init(hs__text *t, const char *name, size_t cap) {
  memset(t, 0, sizeof *t);
  t->name = strdup(name);
  t->cap = cap;
  t->buf = malloc(t->cap + 1);
  if (!t->name || !t->buf) {
    free(t->name);
    free(t->buf);
    memset(t, 0, sizeof *t);
    return hs__fail(HS_ERR_NOMEM, "%s: no memory for a read buffer", name);
  }
  return HS_OK;
}

hs_status hs__text_open(hs__text *t, const char *path) {
  struct stat sb;
  char *alt = NULL;
  const char *use = path;
  if (stat(path, &sb) != 0 && errno == ENOENT) {
    size_t l = strlen(path);
    alt = malloc(l + 4);
    if (!alt) return hs__fail(HS_ERR_NOMEM, "no memory");
    memcpy(alt, path, l);
    memcpy(alt + l, ".gz", 4);
    if (stat(alt, &sb) == 0) use = alt;
  }
  hs_status st = text_init(t, use, READ_CHUNK * 2);
  if (st) goto done;
  int fd = hs__open_regular(use, NULL, &st);
  if (fd < 0) {
    hs__text_close(t);
    goto done;
  }
  errno = 0;
  t->gz = gzdopen(fd, "rb");
  if (!t->gz) {
    close(fd);
    st = hs__fail(HS_ERR_IO, "%s: cannot open: %s", use,
                  errno ? strerror(errno) : "zlib could not allocate");
    hs__text_close(t);
    goto done;
  }
  gzbuffer(t->gz, 1 << 17);
done:
  free(alt);
  return st;
}

hs_status hs__text_open_mem(hs__text *t, const char *name, const void *data, size_t len) {
  hs_status st = text_init(t, name, len < READ_CHUNK ? len + 16 : READ_CHUNK * 2);
  if (st) return st;
  t->mem = data;
  t->mem_len = len;
  return HS_OK;
}

void hs__text_close(hs__text *t) {
  if (t->gz) gzclose(t->gz);
  free(t->buf);
  free(t->name);
  memset(t, 0, sizeof *t);
}

/* zlib's message names the file itself ("path: what"); keep the what. */
static const char *gz_what(const hs__text *t, const char *msg) {
  size_t l = strlen(t->name);
  if (msg && strncmp(msg, t->name, l) == 0 && msg[l] == ':' && msg[l + 1] == ' ') return msg + l + 2;
  return msg ? msg : "unknown zlib error";
}

/* Append up to `want` bytes at buf+end. */
static hs_status text_fill(hs__text *t, size_t want) {
  if (hs__stopped()) return hs__fail_stopped();
  if (t->gz) {
    int r = gzread(t->gz, t->buf + t->end, (unsigned)want);
    if (r < 0) {
      int code;
      const char *msg = gzerror(t->gz, &code);
      return hs__fail(code == Z_ERRNO ? HS_ERR_IO : HS_ERR_FORMAT,
                      "%s: byte %llu: read failed: %s", t->name,
                      (unsigned long long)(t->bytes + (t->end - t->start)),
                      code == Z_ERRNO ? strerror(errno) : gz_what(t, msg));
    }
    if (r == 0) {
      /* A gzip stream cut short reads as a short file: say so. */
      int code;
      const char *msg = gzerror(t->gz, &code);
      if (code != Z_OK && code != Z_STREAM_END)
        return hs__fail(HS_ERR_FORMAT, "%s: byte %llu: %s", t->name,
                        (unsigned long long)(t->bytes + (t->end - t->start)), gz_what(t, msg));
      t->eof = true;
    }
    t->end += (size_t)r;
    return HS_OK;
  }
  size_t n = t->mem_len - t->mem_pos;
  if (n > want) n = want;
  memcpy(t->buf + t->end, t->mem + t->mem_pos, n);
  t->mem_pos += n;
  t->end += n;
  if (n == 0) t->eof = true;
  return HS_OK;
}

int hs__text_next(hs__text *t, hs_status *st) {
  t->line = NULL;
  size_t scan = t->start;
  for (;;) {
    char *nl = memchr(t->buf + scan, '\n', t->end - scan);
    if (nl || (t->eof && t->end > t->start)) {
      char *s = t->buf + t->start;
      size_t len = nl ? (size_t)(nl - s) : t->end - t->start;
      size_t consumed = nl ? len + 1 : len;
      t->start += consumed;
      t->bytes += consumed;
      t->lineno++;
      if (len && s[len - 1] == '\r') len--;
      s[len] = '\0'; /* the buffer has one spare byte past cap */
      t->line = s;
      t->len = len;
      char *z = memchr(s, '\0', len);
      if (z) {
        *st = hs__text_fail(t, z, "NUL byte in text");
        return -1;
      }
      return 1;
    }
    if (t->eof) return 0;
    scan = t->end;
    /* Make room: move the partial line to the front, then grow. */
    if (t->start > 0) {
      memmove(t->buf, t->buf + t->start, t->end - t->start);
      t->end -= t->start;
      scan -= t->start;
      t->start = 0;
    }
    if (t->end == t->cap) {
      if (t->cap >= HS_TEXT_MAX_LINE) {
        *st = hs__fail(HS_ERR_FORMAT, "%s:%llu: line longer than %zu bytes", t->name,
                       (unsigned long long)t->lineno + 1, HS_TEXT_MAX_LINE);
        return -1;
      }
      size_t ncap = t->cap * 2;
      char *nb = realloc(t->buf, ncap + 1);
      if (!nb) {
        *st = hs__fail(HS_ERR_NOMEM, "%s:%llu: no memory for a long line", t->name,
                       (unsigned long long)t->lineno + 1);
        return -1;
      }
      t->buf = nb;
      t->cap = ncap;
    }
    if ((*st = text_fill(t, t->cap - t->end))) return -1;
  }
}

hs_status hs__text_slurp(hs__text *t, char **out, size_t *len) {
  *out = NULL;
  *len = 0;
  t->line = NULL;
  for (;;) {
    if (t->eof) break;
    if (t->end == t->cap) {
      if (t->cap >= HS_TEXT_MAX_LINE)
        return hs__fail(HS_ERR_FORMAT, "%s: longer than %zu bytes", t->name, HS_TEXT_MAX_LINE);
      char *nb = realloc(t->buf, t->cap * 2 + 1);
      if (!nb) return hs__fail(HS_ERR_NOMEM, "%s: no memory", t->name);
      t->buf = nb;
      t->cap *= 2;
    }
    hs_status st = text_fill(t, t->cap - t->end);
    if (st) return st;
  }
  size_t n = t->end - t->start;
  char *b = malloc(n + 1);
  if (!b) return hs__fail(HS_ERR_NOMEM, "%s: no memory", t->name);
  memcpy(b, t->buf + t->start, n);
  b[n] = '\0';
  t->bytes += n;
  t->start = t->end;
  *out = b;
  *len = n;
  return HS_OK;
}

static hs_status text_failv(const hs__text *t, hs_status st, const char *at,
                            const char *fmt, va_list ap) {
  char msg[1024];
  vsnprintf(msg, sizeof msg, fmt, ap);
  size_t col = 1;
  if (t->line) col = (at ? (size_t)(at - t->line) : t->len) + 1;
  return hs__fail(st, "%s:%llu:%zu: %s", t->name, (unsigned long long)t->lineno, col, msg);
}

hs_status hs__text_fail(const hs__text *t, const char *at, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  hs_status st = text_failv(t, HS_ERR_FORMAT, at, fmt, ap);
  va_end(ap);
  return st;
}

hs_status hs__text_fail_status(const hs__text *t, hs_status st, const char *at,
                               const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  st = text_failv(t, st, at, fmt, ap);
  va_end(ap);
  return st;
}

hs_status hs__text_fail_in(const char *name, const char *base, const char *at,
                           const char *fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  uint64_t line = 1;
  const char *ls = base;
  for (const char *p = base; p < at; p++)
    if (*p == '\n') {
      line++;
      ls = p + 1;
    }
  return hs__fail(HS_ERR_FORMAT, "%s:%llu:%zu: %s", name, (unsigned long long)line,
                  (size_t)(at - ls) + 1, msg);
}

bool hs__parse_i64(const char **pp, const char *end, int64_t *out) {
  const char *p = *pp;
  bool neg = false;
  if (p < end && (*p == '-' || *p == '+')) neg = *p++ == '-';
  if (p >= end || *p < '0' || *p > '9') return false;
  uint64_t v = 0;
  uint64_t lim = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
  while (p < end && *p >= '0' && *p <= '9') {
    unsigned d = (unsigned)(*p - '0');
    if (v > (lim - d) / 10) return false;
    v = v * 10 + d;
    p++;
  }
  *out = neg ? (int64_t)(0 - v) : (int64_t)v;
  *pp = p;
  return true;
}

static const float pow10f_exact[11] = {1e0f, 1e1f, 1e2f, 1e3f, 1e4f, 1e5f,
                                       1e6f, 1e7f, 1e8f, 1e9f, 1e10f};

bool hs__parse_f32(const char **pp, const char *end, float *out) {
  const char *p = *pp;
  /* Fast path: [-]digits[.digits] with a mantissa below 2^24 and at most
   * 10 decimals: both operands are exact floats, so one IEEE division
   * rounds exactly as strtof would. */
  const char *q = p;
  bool neg = false;
  if (q < end && (*q == '-' || *q == '+')) neg = *q++ == '-';
  uint32_t m = 0;
  int digits = 0, frac = 0;
  bool ok = true;
  while (q < end && *q >= '0' && *q <= '9') {
    if (m >= (1u << 24) / 10) ok = false;
    m = m * 10 + (uint32_t)(*q++ - '0');
    digits++;
  }
  if (q < end && *q == '.') {
    q++;
    while (q < end && *q >= '0' && *q <= '9') {
      if (m >= (1u << 24) / 10) ok = false;
      m = m * 10 + (uint32_t)(*q++ - '0');
      digits++;
      frac++;
    }
  }
  bool tail_ok = q >= end || !((*q >= 'a' && *q <= 'z') || (*q >= 'A' && *q <= 'Z') ||
                               *q == '.');
  if (ok && digits > 0 && frac <= 10 && tail_ok) {
    float v = (float)m / pow10f_exact[frac];
    *out = neg ? -v : v;
    *pp = q;
    return true;
  }
  /* General path: strtof on a bounded copy. */
  char tmp[64];
  size_t n = (size_t)(end - p);
  if (n > sizeof tmp - 1) n = sizeof tmp - 1;
  memcpy(tmp, p, n);
  tmp[n] = '\0';
  if (n == 0 || hs__is_space(tmp[0])) return false;
  char *e = NULL;
  errno = 0;
  float v = strtof(tmp, &e);
  if (e == tmp) return false;
  /* Hex floats and the like are not data formats we read. */
  for (const char *c = tmp; c < e; c++)
    if (*c == 'x' || *c == 'X' || *c == '(') return false;
  if (errno == ERANGE && isinf(v)) return false;
  *out = v;
  *pp = p + (e - tmp);
  return true;
}
