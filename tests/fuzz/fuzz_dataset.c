/* libFuzzer harness: whole-dataset validation. The input is cut at each
 * "\xffSEP" into indptr.npy, indices.npy, label.npy and train_idx.npy of a
 * scratch dataset directory, which is then opened. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hetsage.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char dir[64];

static void put(const char *name, const uint8_t *p, size_t n) {
  char path[128];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  if (!p) {
    unlink(path);
    return;
  }
  FILE *f = fopen(path, "wb");
  if (!f) return;
  if (n) fwrite(p, 1, n, f);
  fclose(f);
}

static void cleanup(void) {
  static const char *const all[4] = {"indptr.npy", "indices.npy", "label.npy", "train_idx.npy"};
  for (int i = 0; i < 4; i++) put(all[i], NULL, 0);
  rmdir(dir);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (!dir[0]) {
    snprintf(dir, sizeof dir, "/tmp/hs-fuzz-ds-%d", (int)getpid());
    mkdir(dir, 0700);
    atexit(cleanup);
  }
  static const char *const names[4] = {"indptr.npy", "indices.npy", "label.npy", "train_idx.npy"};
  const uint8_t *p = data, *end = data + size;
  for (int i = 0; i < 4; i++) {
    if (!p) {
      put(names[i], NULL, 0);
      continue;
    }
    const uint8_t *q = memmem(p, (size_t)(end - p), "\xffSEP", 4);
    size_t n = q ? (size_t)(q - p) : (size_t)(end - p);
    put(names[i], p, n);
    p = q ? q + 4 : NULL;
  }
  hs_dataset *ds = NULL;
  if (hs_dataset_open(dir, &ds) == HS_OK) {
    hs_dataset_stats st;
    hs_dataset_stats_init(&st);
    hs_dataset_stats_compute(ds, &st);
    hs_dataset_close(ds);
  }
  return 0;
}
