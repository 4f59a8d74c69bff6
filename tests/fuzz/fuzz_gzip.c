/* libFuzzer harness: the text reader on its file path, where zlib reads
 * plain and gzip input alike (the memory path the other harnesses use
 * skips zlib). The input is written to a file and read line by line, each
 * line's numbers parsed as the importers do. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "data/hs_text.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char path[64];

static void cleanup(void) { unlink(path); }

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (!path[0]) {
    snprintf(path, sizeof path, "/tmp/hs-fuzz-gz-%d.csv.gz", (int)getpid());
    atexit(cleanup);
  }
  FILE *f = fopen(path, "wb");
  if (!f) return 0;
  if (size) fwrite(data, 1, size, f);
  fclose(f);
  hs__text t;
  if (hs__text_open(&t, path) != HS_OK) return 0;
  hs_status st;
  while (hs__text_next(&t, &st) > 0) {
    const char *p = t.line, *end = t.line + t.len;
    while (p < end) {
      p = hs__skip_ws(p, end);
      int64_t i;
      float x;
      const char *q = p;
      if (hs__parse_i64(&q, end, &i) || hs__parse_f32(&q, end, &x)) p = q;
      else p++;
      if (p < end && *p == ',') p++;
    }
  }
  hs__text_close(&t);
  return 0;
}
