/* libFuzzer harness: the command line's value parsers: lists (fanouts,
 * vertex ids, split fractions), sizes and numbers. The input is taken as
 * one option value. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cli_data.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *s = malloc(size + 1);
  if (!s) return 0;
  memcpy(s, data, size);
  s[size] = '\0';
  int32_t fanouts[HS_MAX_LAYERS];
  int n = cli_parse_fanouts(s, fanouts, HS_MAX_LAYERS);
  if (n > HS_MAX_LAYERS) abort();
  for (int i = 0; i < n; i++)
    if (fanouts[i] != -1 && (fanouts[i] < 1 || fanouts[i] > HS_MAX_FANOUT)) abort();
  int64_t *ids, count;
  if (cli_parse_id_list(s, &ids, &count)) {
    for (int64_t i = 0; i < count; i++)
      if (ids[i] < 0 || ids[i] > INT32_MAX) abort();
    free(ids);
  }
  double split[3];
  if (cli_parse_split(s, split) && !(split[0] + split[1] + split[2] <= 1 + 1e-9)) abort();
  uint64_t u;
  int64_t i;
  double d;
  cli_parse_size(s, &u);
  cli_parse_u64(s, &u);
  cli_parse_i64(s, &i);
  cli_parse_double(s, &d);
  free(s);
  return 0;
}
