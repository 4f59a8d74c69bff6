/* libFuzzer harness: the MUSAE parsers. The input is cut at lines "%%"
 * into the target CSV, the edges CSV and the features JSON. */
#include <stdint.h>
#include <string.h>

#include "data/hs_import.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *s = (const char *)data, *end = s + size;
  const char *part[3] = {s, end, end};
  size_t len[3] = {size, 0, 0};
  for (int i = 0; i < 2; i++) {
    const char *cut = memmem(part[i], (size_t)(end - part[i]), "\n%%\n", 4);
    if (!cut) break;
    len[i] = (size_t)(cut - part[i]) + 1;
    part[i + 1] = cut + 4;
    len[i + 1] = (size_t)(end - part[i + 1]);
  }
  hs__imported imp;
  memset(&imp, 0, sizeof imp);
  hs__text t;
  if (hs__text_open_mem(&t, "target.csv", part[0], len[0])) return 0;
  hs_status st = hs__musae_parse_target(&t, &imp);
  hs__text_close(&t);
  if (!st && !hs__text_open_mem(&t, "edges.csv", part[1], len[1])) {
    st = hs__musae_parse_edges(&t, &imp);
    hs__text_close(&t);
  }
  if (!st) hs__musae_parse_features("features.json", part[2], len[2], &imp);
  hs__imported_free(&imp);
  return 0;
}
