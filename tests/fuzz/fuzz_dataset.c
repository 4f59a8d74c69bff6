/* libFuzzer harness: whole-dataset validation. The input is cut at each
 * "\xffSEP" into indptr.npy, indices.npy, label.npy, train_idx.npy,
 * valid_idx.npy, test_idx.npy, weights.npy and feat.npy of a scratch
 * dataset directory (parts past the end are absent), which is then opened;
 * when it opens, its statistics are computed. */
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

enum { N_FILES = 8 };
static const char *const names[N_FILES] = {"indptr.npy",    "indices.npy",   "label.npy",
                                           "train_idx.npy", "valid_idx.npy", "test_idx.npy",
                                           "weights.npy",   "feat.npy"};

static void cleanup(void) {
  for (int i = 0; i < N_FILES; i++) put(names[i], NULL, 0);
  rmdir(dir);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (!dir[0]) {
    snprintf(dir, sizeof dir, "/tmp/hs-fuzz-ds-%d", (int)getpid());
    mkdir(dir, 0700);
    atexit(cleanup);
  }
  const uint8_t *p = data, *end = data + size;
  for (int i = 0; i < N_FILES; i++) {
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
