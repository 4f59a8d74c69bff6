/* A small strict JSON reader (RFC 8259) and string writer: benchmark
 * results are saved as JSON and read back for comparisons, and the tests
 * parse what bring-up and the benchmarks write. Not for large documents:
 * the whole tree is held in memory. */
#ifndef HS_JSON_H
#define HS_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "hs_base.h"

typedef enum hs_json_type {
  HS_JSON_NULL = 0,
  HS_JSON_BOOL,
  HS_JSON_NUMBER,
  HS_JSON_STRING,
  HS_JSON_ARRAY,
  HS_JSON_OBJECT,
} hs_json_type;

typedef struct hs_json hs_json;
struct hs_json {
  hs_json_type type;
  bool boolean;
  double number;
  char *string; /* NUL-terminated UTF-8 (an embedded \u0000 ends it early) */
  size_t n;     /* items of an array or members of an object */
  hs_json *items;
  char **keys;  /* object member names, n entries */
};

/* Parse exactly one JSON value (surrounding white space allowed) from
 * `len` bytes. Nesting deeper than 64 levels, trailing data, a bad escape,
 * an unpaired surrogate, a control character in a string, a malformed
 * number: HS_ERR_FORMAT with "line:column: what" (prefixed by `origin`,
 * which may be NULL). Duplicate object keys are kept (the first wins for
 * hs__json_get). On success *out is freed with hs__json_free. */
hs_status hs__json_parse(const char *text, size_t len, const char *origin, hs_json **out);
/* Read a whole file and parse it; HS_ERR_IO when it cannot be read. */
hs_status hs__json_parse_file(const char *path, hs_json **out);
void hs__json_free(hs_json *v);

/* Member `key` of an object (NULL when absent or `obj` is no object). */
const hs_json *hs__json_get(const hs_json *obj, const char *key);
/* Typed members: the fallback when absent or of another type. */
double hs__json_number(const hs_json *obj, const char *key, double fallback);
const char *hs__json_text(const hs_json *obj, const char *key, const char *fallback);

/* Write `s` as a JSON string literal (quotes and escapes). */
void hs__json_write_string(FILE *f, const char *s);
/* The same into buf, snprintf-style: at most `cap` bytes with the NUL;
 * returns the length the whole literal needs. */
size_t hs__json_str(char *buf, size_t cap, const char *s);
/* Write a number; NaN and infinities, which JSON lacks, as null. */
void hs__json_write_number(FILE *f, double x);

#endif
