#include "cli.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

void cli_report(const char *cmd, const char *what, hs_status st) {
  const char *detail = hs_last_error();
  fprintf(stderr, "hetsage %s: %s: %s%s%s\n", cmd, what, hs_strerror(st),
          detail[0] ? ": " : "", detail);
}

int cli_usage_error(const char *cmd, const char *fmt, ...) {
  va_list ap;
  fprintf(stderr, "hetsage %s: ", cmd);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fprintf(stderr, "\nTry 'hetsage %s --help'.\n", cmd);
  return 2;
}

bool cli_wants_help(int argc, char **argv) {
  for (int i = 1; i < argc; i++)
    if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) return true;
  return false;
}

bool cli_parse_u64(const char *s, uint64_t *out) {
  if (!s || !*s || *s == '-' || *s == '+') return false;
  char *end = NULL;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno || *end) return false;
  *out = (uint64_t)v;
  return true;
}

bool cli_parse_i64(const char *s, int64_t *out) {
  if (!s || !*s) return false;
  char *end = NULL;
  errno = 0;
  long long v = strtoll(s, &end, 10);
  if (errno || *end) return false;
  *out = (int64_t)v;
  return true;
}

bool cli_parse_double(const char *s, double *out) {
  if (!s || !*s) return false;
  char *end = NULL;
  errno = 0;
  double v = strtod(s, &end);
  if (errno || *end) return false;
  *out = v;
  return true;
}

bool cli_parse_size(const char *s, uint64_t *out) {
  if (!s || *s == '-' || *s == '+') return false;
  return hs_harness_parse_size(s, out);
}

void cli_json_string(FILE *f, const char *s) { hs_harness_json_string(f, s); }
