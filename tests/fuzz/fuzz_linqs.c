/* libFuzzer harness: the LINQS parser. The input up to the first line
 * "%%" is the .content text, the rest the .cites text. */
#include <stdint.h>
#include <string.h>

#include "data/hs_import.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *s = (const char *)data;
  const char *cut = memmem(s, size, "\n%%\n", 4);
  size_t a = cut ? (size_t)(cut - s) + 1 : size;
  size_t b0 = cut ? a + 3 : size;
  hs__text ct, cs;
  if (hs__text_open_mem(&ct, "f.content", s, a)) return 0;
  if (hs__text_open_mem(&cs, "f.cites", s + b0, size - b0)) {
    hs__text_close(&ct);
    return 0;
  }
  hs__imported imp;
  memset(&imp, 0, sizeof imp);
  hs__linqs_parse(&ct, &cs, &imp);
  hs__imported_free(&imp);
  hs__text_close(&ct);
  hs__text_close(&cs);
  return 0;
}
