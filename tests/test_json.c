/* The strict JSON reader that loads saved benchmark runs (and that the
 * tests use on every report the tools write). */
#include <criterion/criterion.h>
#include <string.h>

#include "util/hs_json.h"

static hs_status parse(const char *text, hs_json **out) {
  return hs__json_parse(text, strlen(text), "t.json", out);
}

Test(json, reader_accepts_valid_documents) {
  hs_json *v = NULL;
  cr_assert_eq(parse(" {\"a\": [1, -2.5e3, true, false, null], \"b\": {\"c\": \"x\\u00e9\\n\\ud83d\\ude00\"},"
                     " \"a\": 7} ", &v),
               HS_OK, "%s", hs_last_error());
  const hs_json *a = hs__json_get(v, "a");
  cr_assert(a && a->type == HS_JSON_ARRAY && a->n == 5);
  cr_expect_eq(a->items[1].number, -2500.0);
  cr_expect(a->items[2].type == HS_JSON_BOOL && a->items[2].boolean);
  cr_expect_eq(a->items[4].type, HS_JSON_NULL);
  cr_expect_str_eq(hs__json_text(hs__json_get(v, "b"), "c", ""), "x\xc3\xa9\n\xf0\x9f\x98\x80");
  cr_expect_eq(hs__json_number(v, "missing", 42), 42);
  hs__json_free(v);
  cr_assert_eq(parse("[]", &v), HS_OK);
  hs__json_free(v);
  cr_assert_eq(parse("\"\"", &v), HS_OK);
  hs__json_free(v);
}

Test(json, reader_rejects_malformed_documents) {
  static const char *const bad[] = {
      "",           "{",         "{\"a\": 1,}",  "[1, 2,]",     "{a: 1}",      "[01]",
      "[1.]",       "[.5]",      "[-]",          "[1e]",        "\"\\x\"",     "\"\\ud800\"",
      "\"\\udc00x\"", "\"a\tb\"",  "[1] [2]",      "nul",         "[NaN]",       "{\"a\" 1}",
      "[\"a\" \"b\"]", "'single'", "\"unterminated",
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    hs_json *v = NULL;
    cr_expect_eq(parse(bad[i], &v), HS_ERR_FORMAT, "accepted: %s", bad[i]);
    cr_expect_null(v);
    cr_expect_not_null(strstr(hs_last_error(), "t.json:1:"), "%s: %s", bad[i], hs_last_error());
  }
  /* nesting is bounded */
  char deep[300];
  memset(deep, '[', 200);
  memset(deep + 200, ']', 99);
  deep[299] = '\0';
  hs_json *v = NULL;
  cr_expect_eq(parse(deep, &v), HS_ERR_FORMAT);
  /* positions count lines */
  cr_expect_eq(parse("{\n  \"a\": 1\n  \"b\": 2}", &v), HS_ERR_FORMAT);
  cr_expect_not_null(strstr(hs_last_error(), "t.json:3:"), "%s", hs_last_error());
}

