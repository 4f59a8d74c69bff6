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
  if (!s || !*s || *s == '-' || *s == '+') return false;
  char *end = NULL;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno || end == s) return false;
  unsigned shift = 0;
  if (*end) {
    switch (*end) {
      case 'k': case 'K': shift = 10; break;
      case 'm': case 'M': shift = 20; break;
      case 'g': case 'G': shift = 30; break;
      case 't': case 'T': shift = 40; break;
      default: return false;
    }
    end++;
    if (*end == 'i') end++;
    if (*end == 'B' || *end == 'b') end++;
    if (*end) return false;
  }
  if (shift && v > (UINT64_MAX >> shift)) return false;
  *out = (uint64_t)v << shift;
  return true;
}

void cli_json_string(FILE *f, const char *s) {
  fputc('"', f);
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    switch (*p) {
      case '"': fputs("\\\"", f); break;
      case '\\': fputs("\\\\", f); break;
      case '\n': fputs("\\n", f); break;
      case '\r': fputs("\\r", f); break;
      case '\t': fputs("\\t", f); break;
      default:
        if (*p < 0x20) fprintf(f, "\\u%04x", *p);
        else fputc(*p, f);
    }
  }
  fputc('"', f);
}
