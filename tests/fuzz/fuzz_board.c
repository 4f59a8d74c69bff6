/* libFuzzer harness: the board-profile parser (INI text, every key's
 * value checked). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hetsage.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *text = malloc(size + 1);
  if (!text) return 0;
  memcpy(text, data, size);
  text[size] = '\0';
  hs_board_profile *p = NULL;
  if (hs_board_profile_parse(text, "fuzz.ini", ".", &p) == HS_OK) {
    (void)hs_board_profile_name(p);
    (void)hs_board_profile_description(p);
  }
  hs_board_profile_free(p);
  free(text);
  return 0;
}
