/* libFuzzer harness: the CTR reader, on Criteo-layout text and on array
 * sets. The first byte picks: even, the rest is one text file (plain, or
 * gzip by its magic), read with labels and without; odd, the rest is cut
 * at two offsets (bytes 1-4) into the three files of an array set, read
 * with labels and without. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ctr/hs_ctr.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char dir[64];

static void put(const char *name, const uint8_t *p, size_t n) {
  char path[128];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "wb");
  if (!f) abort();
  if (n && fwrite(p, 1, n, f) != n) abort();
  fclose(f);
}

static void read_all(const char *name, bool labels, hs_ctr_rows *rows) {
  char path[128];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  const char *paths[2] = {path, path};
  hs_ctr_reader *r;
  if (hs__ctr_reader_open(paths, 2, labels, &r) != HS_OK) return;
  /* at most 100000 examples: a long valid set is not news */
  for (int64_t seen = 0; seen < 100000;) {
    if (hs__ctr_reader_next(r, 64, rows) != HS_OK || !rows->n) break;
    seen += rows->n;
  }
  hs__ctr_reader_rewind(r);
  hs__ctr_reader_next(r, 7, rows);
  hs__ctr_reader_close(r);
}

static void clean(void) {
  static const char *const names[4] = {"t.txt", "s_label.npy", "s_dense.npy", "s_ids.npy"};
  char path[128];
  for (int i = 0; i < 4; i++) {
    snprintf(path, sizeof path, "%s/%s", dir, names[i]);
    unlink(path);
  }
  rmdir(dir);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (!dir[0]) {
    strcpy(dir, "/tmp/hs-fuzz-ctr-XXXXXX");
    if (!mkdtemp(dir)) abort();
    atexit(clean);
  }
  if (size < 1) return 0;
  hs_ctr_rows rows;
  if (hs__ctr_rows_alloc(&rows, 64) != HS_OK) return 0;
  if (!(data[0] & 1)) {
    put("t.txt", data + 1, size - 1);
    read_all("t.txt", true, &rows);
    read_all("t.txt", false, &rows);
  } else if (size >= 5) {
    const uint8_t *p = data + 5;
    size_t n = size - 5, a = (size_t)(data[1] | data[2] << 8), b = (size_t)(data[3] | data[4] << 8);
    if (a > n) a = n;
    if (b > n - a) b = n - a;
    put("s_label.npy", p, a);
    put("s_dense.npy", p + a, b);
    put("s_ids.npy", p + a + b, n - a - b);
    read_all("s_ids.npy", true, &rows);
    read_all("s_dense.npy", false, &rows);
  }
  hs__ctr_rows_free(&rows);
  return 0;
}
