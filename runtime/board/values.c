/* Value syntax of board profiles: booleans, integers, sizes, numbers, and
 * the byte formatting used in placement reasons. */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <strings.h>

#include "hs_board.h"

bool hs__parse_bool(const char *s, bool *out) {
  static const char *const yes[] = {"true", "yes", "on", "1"};
  static const char *const no[] = {"false", "no", "off", "0"};
  for (size_t i = 0; i < sizeof yes / sizeof yes[0]; i++) {
    if (strcasecmp(s, yes[i]) == 0) {
      *out = true;
      return true;
    }
    if (strcasecmp(s, no[i]) == 0) {
      *out = false;
      return true;
    }
  }
  return false;
}

bool hs__parse_int(const char *s, long long min, long long max,
                   long long *out) {
  /* strtoll accepts leading blanks and a '+'; a profile value may not. */
  if (!*s || !(isdigit((unsigned char)*s) || *s == '-')) return false;
  char *end = NULL;
  errno = 0;
  long long v = strtoll(s, &end, 10);
  if (errno || end == s || *end || v < min || v > max) return false;
  *out = v;
  return true;
}

bool hs__parse_size(const char *s, int64_t *out) {
  if (!isdigit((unsigned char)*s)) return false;
  char *end = NULL;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno) return false;
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
    if (*end == 'B') end++;
    if (*end) return false;
  }
  if (v > ((unsigned long long)INT64_MAX >> shift)) return false;
  *out = (int64_t)(v << shift);
  return true;
}

bool hs__parse_double(const char *s, double *out) {
  if (!*s || isspace((unsigned char)*s)) return false;
  char *end = NULL;
  errno = 0;
  double v = strtod(s, &end);
  if (errno || end == s || *end || !isfinite(v)) return false;
  *out = v;
  return true;
}

