/* Strict JSON checks of what the tools write: a whole document, or JSON
 * lines (one document per line). Uses the library's RFC 8259 reader, which
 * refuses NaN, Infinity and every other extension. Header-only. */
#ifndef HS_TEST_JSON_CHECK_H
#define HS_TEST_JSON_CHECK_H

#include <criterion/criterion.h>
#include <string.h>

#include "util/hs_json.h"

/* Parse `text` as one JSON document; the tree (free with hs__json_free). */
static inline hs_json *json_doc(const char *text, const char *what) {
  hs_json *v = NULL;
  hs_status st = hs__json_parse(text, strlen(text), what, &v);
  cr_assert_eq(st, HS_OK, "%s is not strict JSON: %s\n%s", what, hs_last_error(), text);
  return v;
}

/* Every non-empty line of `text` is a JSON document; returns the count. */
static inline int json_lines(const char *text, const char *what) {
  int n = 0;
  for (const char *p = text; *p;) {
    const char *nl = strchr(p, '\n');
    size_t len = nl ? (size_t)(nl - p) : strlen(p);
    if (len) {
      hs_json *v = NULL;
      hs_status st = hs__json_parse(p, len, what, &v);
      cr_assert_eq(st, HS_OK, "%s line %d is not strict JSON: %s\n%.*s", what, n + 1,
                   hs_last_error(), (int)len, p);
      hs__json_free(v);
      n++;
    }
    p += len + (nl ? 1 : 0);
  }
  return n;
}

#endif
