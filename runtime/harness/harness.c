/* hetsage/harness.h: the library's own utilities, for the tools. */
#include "core/hs_engine.h"
#include "hetsage/harness.h"

void hs_harness_json_string(FILE *f, const char *s) { hs__json_write_string(f, s); }

void hs_harness_xml_text(FILE *f, const char *s) { hs__xml_write_text(f, s); }

bool hs_harness_parse_size(const char *s, uint64_t *out) {
  int64_t v;
  if (!hs__parse_size(s, &v) || v < 0) return false;
  *out = (uint64_t)v;
  return true;
}
