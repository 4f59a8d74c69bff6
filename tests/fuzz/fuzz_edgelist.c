/* libFuzzer harness: the edge-list parser; the first byte's low bit picks
 * keep_ids. */
#include <stdint.h>
#include <string.h>

#include "data/hs_import.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size == 0) return 0;
  hs__text t;
  if (hs__text_open_mem(&t, "g.txt", data + 1, size - 1)) return 0;
  hs__imported imp;
  memset(&imp, 0, sizeof imp);
  hs__edgelist_parse(&t, data[0] & 1, &imp);
  hs__imported_free(&imp);
  hs__text_close(&t);
  return 0;
}
