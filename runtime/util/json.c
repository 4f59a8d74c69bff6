/* Strict JSON reader by recursive descent, and the writer's escaping (see
 * hs_json.h). */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hs_json.h"

#define MAX_DEPTH 64

typedef struct parser {
  const char *s;
  size_t len, pos;
  const char *origin;
  hs_status st; /* first error, HS_OK while none */
} parser;

static bool fail(parser *p, const char *what) {
  if (p->st != HS_OK) return false;
  int line = 1, col = 1;
  for (size_t i = 0; i < p->pos && i < p->len; i++) {
    if (p->s[i] == '\n') line++, col = 1;
    else col++;
  }
  p->st = hs__fail(HS_ERR_FORMAT, "%s%s%d:%d: %s", p->origin ? p->origin : "",
                   p->origin ? ":" : "", line, col, what);
  return false;
}

static void skip_ws(parser *p) {
  while (p->pos < p->len) {
    char c = p->s[p->pos];
    if (c != ' ' && c != '\t' && c != '\n' && c != '\r') break;
    p->pos++;
  }
}

static bool literal(parser *p, const char *word) {
  size_t n = strlen(word);
  if (p->len - p->pos < n || memcmp(p->s + p->pos, word, n) != 0)
    return fail(p, "unexpected characters (expected a value)");
  p->pos += n;
  return true;
}

static bool is_digit(char c) { return c >= '0' && c <= '9'; }

static bool parse_number(parser *p, hs_json *v) {
  size_t start = p->pos;
  if (p->pos < p->len && p->s[p->pos] == '-') p->pos++;
  if (p->pos >= p->len || !is_digit(p->s[p->pos])) return fail(p, "malformed number");
  if (p->s[p->pos] == '0') {
    p->pos++;
  } else {
    while (p->pos < p->len && is_digit(p->s[p->pos])) p->pos++;
  }
  if (p->pos < p->len && p->s[p->pos] == '.') {
    p->pos++;
    if (p->pos >= p->len || !is_digit(p->s[p->pos])) return fail(p, "malformed number");
    while (p->pos < p->len && is_digit(p->s[p->pos])) p->pos++;
  }
  if (p->pos < p->len && (p->s[p->pos] == 'e' || p->s[p->pos] == 'E')) {
    p->pos++;
    if (p->pos < p->len && (p->s[p->pos] == '+' || p->s[p->pos] == '-')) p->pos++;
    if (p->pos >= p->len || !is_digit(p->s[p->pos])) return fail(p, "malformed number");
    while (p->pos < p->len && is_digit(p->s[p->pos])) p->pos++;
  }
  char buf[64];
  size_t n = p->pos - start;
  if (n >= sizeof buf) return fail(p, "number too long");
  memcpy(buf, p->s + start, n);
  buf[n] = '\0';
  errno = 0;
  v->type = HS_JSON_NUMBER;
  v->number = strtod(buf, NULL);
  return true;
}

static int hex4(parser *p) {
  if (p->len - p->pos < 4) return -1;
  int x = 0;
  for (int i = 0; i < 4; i++) {
    char c = p->s[p->pos + (size_t)i];
    int d = c >= '0' && c <= '9'   ? c - '0'
            : c >= 'a' && c <= 'f' ? c - 'a' + 10
            : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                   : -1;
    if (d < 0) return -1;
    x = x * 16 + d;
  }
  p->pos += 4;
  return x;
}

static size_t put_utf8(char *out, uint32_t cp) {
  if (cp < 0x80) {
    out[0] = (char)cp;
    return 1;
  }
  if (cp < 0x800) {
    out[0] = (char)(0xC0 | (cp >> 6));
    out[1] = (char)(0x80 | (cp & 0x3F));
    return 2;
  }
  if (cp < 0x10000) {
    out[0] = (char)(0xE0 | (cp >> 12));
    out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
    out[2] = (char)(0x80 | (cp & 0x3F));
    return 3;
  }
  out[0] = (char)(0xF0 | (cp >> 18));
  out[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
  out[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
  out[3] = (char)(0x80 | (cp & 0x3F));
  return 4;
}

/* At the opening quote; a decoded string is never longer than its source. */
static bool parse_string(parser *p, char **out) {
  p->pos++;
  size_t start = p->pos, end = start;
  while (end < p->len && p->s[end] != '"') end += p->s[end] == '\\' ? 2 : 1;
  if (end >= p->len) return fail(p, "unterminated string");
  char *buf = malloc(end - start + 1);
  if (!buf) {
    if (p->st == HS_OK) p->st = hs__fail(HS_ERR_NOMEM, "JSON string");
    return false;
  }
  size_t n = 0;
  while (p->s[p->pos] != '"') {
    unsigned char c = (unsigned char)p->s[p->pos];
    if (c < 0x20) {
      free(buf);
      return fail(p, "control character in a string");
    }
    if (c != '\\') {
      buf[n++] = (char)c;
      p->pos++;
      continue;
    }
    p->pos++;
    char e = p->s[p->pos++];
    switch (e) {
      case '"': buf[n++] = '"'; break;
      case '\\': buf[n++] = '\\'; break;
      case '/': buf[n++] = '/'; break;
      case 'b': buf[n++] = '\b'; break;
      case 'f': buf[n++] = '\f'; break;
      case 'n': buf[n++] = '\n'; break;
      case 'r': buf[n++] = '\r'; break;
      case 't': buf[n++] = '\t'; break;
      case 'u': {
        int hi = hex4(p);
        if (hi < 0) {
          free(buf);
          return fail(p, "bad \\u escape");
        }
        uint32_t cp = (uint32_t)hi;
        if (hi >= 0xD800 && hi <= 0xDBFF) {
          int lo = -1;
          if (p->len - p->pos >= 2 && p->s[p->pos] == '\\' && p->s[p->pos + 1] == 'u') {
            p->pos += 2;
            lo = hex4(p);
          }
          if (lo < 0xDC00 || lo > 0xDFFF) {
            free(buf);
            return fail(p, "unpaired surrogate in a \\u escape");
          }
          cp = 0x10000 + (((uint32_t)hi - 0xD800) << 10) + ((uint32_t)lo - 0xDC00);
        } else if (hi >= 0xDC00 && hi <= 0xDFFF) {
          free(buf);
          return fail(p, "unpaired surrogate in a \\u escape");
        }
        n += put_utf8(buf + n, cp);
        break;
      }
      default:
        free(buf);
        p->pos--;
        return fail(p, "bad escape in a string");
    }
  }
  p->pos++;
  buf[n] = '\0';
  *out = buf;
  return true;
}

static bool parse_value(parser *p, hs_json *v, int depth);

static bool grow(parser *p, hs_json *v, size_t *cap, bool keys) {
  if (v->n < *cap) return true;
  size_t c = *cap ? 2 * *cap : 4;
  hs_json *items = realloc(v->items, c * sizeof *items);
  if (items) v->items = items;
  char **k = keys ? realloc(v->keys, c * sizeof *k) : NULL;
  if (k) v->keys = k;
  if (!items || (keys && !k)) {
    if (p->st == HS_OK) p->st = hs__fail(HS_ERR_NOMEM, "JSON document");
    return false;
  }
  *cap = c;
  return true;
}

static bool parse_container(parser *p, hs_json *v, int depth, bool object) {
  char close = object ? '}' : ']';
  v->type = object ? HS_JSON_OBJECT : HS_JSON_ARRAY;
  p->pos++;
  size_t cap = 0;
  skip_ws(p);
  if (p->pos < p->len && p->s[p->pos] == close) {
    p->pos++;
    return true;
  }
  for (;;) {
    if (!grow(p, v, &cap, object)) return false;
    hs_json *item = &v->items[v->n];
    memset(item, 0, sizeof *item);
    if (object) {
      skip_ws(p);
      if (p->pos >= p->len || p->s[p->pos] != '"') return fail(p, "expected a member name");
      if (!parse_string(p, &v->keys[v->n])) return false;
      v->n++; /* counted now so that the key is freed on failure */
      skip_ws(p);
      if (p->pos >= p->len || p->s[p->pos] != ':') return fail(p, "expected ':'");
      p->pos++;
      if (!parse_value(p, item, depth + 1)) return false;
    } else {
      v->n++;
      if (!parse_value(p, item, depth + 1)) return false;
    }
    skip_ws(p);
    if (p->pos < p->len && p->s[p->pos] == ',') {
      p->pos++;
      continue;
    }
    if (p->pos < p->len && p->s[p->pos] == close) {
      p->pos++;
      return true;
    }
    return fail(p, object ? "expected ',' or '}'" : "expected ',' or ']'");
  }
}

static bool parse_value(parser *p, hs_json *v, int depth) {
  if (depth > MAX_DEPTH) return fail(p, "nesting deeper than 64 levels");
  skip_ws(p);
  if (p->pos >= p->len) return fail(p, "unexpected end of input");
  char c = p->s[p->pos];
  switch (c) {
    case '{': return parse_container(p, v, depth, true);
    case '[': return parse_container(p, v, depth, false);
    case '"':
      v->type = HS_JSON_STRING;
      return parse_string(p, &v->string);
    case 't':
      v->type = HS_JSON_BOOL;
      v->boolean = true;
      return literal(p, "true");
    case 'f':
      v->type = HS_JSON_BOOL;
      return literal(p, "false");
    case 'n':
      v->type = HS_JSON_NULL;
      return literal(p, "null");
    default:
      if (c == '-' || is_digit(c)) return parse_number(p, v);
      return fail(p, "unexpected character (expected a value)");
  }
}

static void free_tree(hs_json *v) {
  free(v->string);
  for (size_t i = 0; i < v->n; i++) {
    if (v->items) free_tree(&v->items[i]);
    if (v->keys) free(v->keys[i]);
  }
  free(v->items);
  free(v->keys);
}

void hs__json_free(hs_json *v) {
  if (!v) return;
  free_tree(v);
  free(v);
}

hs_status hs__json_parse(const char *text, size_t len, const char *origin, hs_json **out) {
  *out = NULL;
  hs_json *root = calloc(1, sizeof *root);
  if (!root) return hs__fail(HS_ERR_NOMEM, "JSON document");
  parser p = {.s = text, .len = len, .origin = origin, .st = HS_OK};
  if (parse_value(&p, root, 0)) {
    skip_ws(&p);
    if (p.pos != p.len) fail(&p, "trailing characters after the value");
  }
  if (p.st != HS_OK) {
    hs__json_free(root);
    return p.st;
  }
  *out = root;
  return HS_OK;
}

hs_status hs__json_parse_file(const char *path, hs_json **out) {
  *out = NULL;
  hs_status st;
  FILE *f = hs__fopen_regular(path, NULL, &st);
  if (!f) return st;
  char *buf = NULL;
  size_t len = 0, cap = 0;
  for (;;) {
    if (len + 4096 > cap) {
      cap = cap ? 2 * cap : 65536;
      char *b = realloc(buf, cap);
      if (!b) {
        st = hs__fail(HS_ERR_NOMEM, "%s: no memory to read it", path);
        goto done;
      }
      buf = b;
    }
    size_t got = fread(buf + len, 1, cap - len, f);
    len += got;
    if (got == 0) break;
  }
  if (ferror(f)) {
    st = hs__fail(HS_ERR_IO, "%s: read error", path);
    goto done;
  }
  st = hs__json_parse(buf ? buf : "", len, path, out);
done:
  fclose(f);
  free(buf);
  return st;
}

const hs_json *hs__json_get(const hs_json *obj, const char *key) {
  if (!obj || obj->type != HS_JSON_OBJECT) return NULL;
  for (size_t i = 0; i < obj->n; i++)
    if (strcmp(obj->keys[i], key) == 0) return &obj->items[i];
  return NULL;
}

double hs__json_number(const hs_json *obj, const char *key, double fallback) {
  const hs_json *v = hs__json_get(obj, key);
  return v && v->type == HS_JSON_NUMBER ? v->number : fallback;
}

const char *hs__json_text(const hs_json *obj, const char *key, const char *fallback) {
  const hs_json *v = hs__json_get(obj, key);
  return v && v->type == HS_JSON_STRING ? v->string : fallback;
}

/* Byte `c` as it stands inside a JSON string literal. */
static const char *escaped(unsigned char c, char buf[8]) {
  switch (c) {
    case '"': return "\\\"";
    case '\\': return "\\\\";
    case '\n': return "\\n";
    case '\r': return "\\r";
    case '\t': return "\\t";
    default:
      if (c < 0x20) snprintf(buf, 8, "\\u%04x", c);
      else buf[0] = (char)c, buf[1] = '\0';
      return buf;
  }
}

void hs__json_write_string(FILE *f, const char *s) {
  char buf[8];
  fputc('"', f);
  for (const unsigned char *c = (const unsigned char *)s; *c; c++) fputs(escaped(*c, buf), f);
  fputc('"', f);
}

size_t hs__json_str(char *out, size_t cap, const char *s) {
  char buf[8];
  size_t k = 0;
#define PUT(str)                                         \
  for (const char *p_ = (str); *p_; p_++, k++)           \
    if (k + 1 < cap) out[k] = *p_;
  PUT("\"")
  for (const unsigned char *c = (const unsigned char *)s; *c; c++) PUT(escaped(*c, buf))
  PUT("\"")
#undef PUT
  if (cap) out[k < cap ? k : cap - 1] = '\0';
  return k;
}

void hs__json_write_number(FILE *f, double x) {
  if (!isfinite(x)) fputs("null", f);
  else fprintf(f, "%.9g", x);
}
