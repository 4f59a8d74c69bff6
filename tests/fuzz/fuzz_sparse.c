/* libFuzzer harness: sparse feature validation. A fixed 4-vertex ring is
 * written once; the input is cut at each "\xffSEP" into feat_shape.npy,
 * feat_indptr.npy, feat_indices.npy and feat_values.npy (a missing piece
 * removes its file), and the dataset is opened and described. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hetsage.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char dir[64];
static const char *const names[4] = {"feat_shape.npy", "feat_indptr.npy", "feat_indices.npy",
                                      "feat_values.npy"};

static void put(const char *name, const void *p, size_t n) {
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

/* A version-1.0 .npy of a 1-D little-endian array. */
static void put_npy(const char *name, const char *descr, const void *v, size_t count,
                    size_t elem) {
  char h[128];
  int k = snprintf(h + 10, sizeof h - 10, "{'descr': '%s', 'fortran_order': False, 'shape': (%zu,), }",
                   descr, count);
  size_t total = 10 + (size_t)k;
  size_t pad = 64 - (total + 1) % 64;
  if (pad == 64) pad = 0;
  memset(h + 10 + k, ' ', pad);
  h[10 + k + pad] = '\n';
  size_t hlen = (size_t)k + pad + 1;
  memcpy(h, "\x93NUMPY\x01\x00", 8);
  h[8] = (char)(hlen & 0xff);
  h[9] = (char)(hlen >> 8);
  char *buf = malloc(10 + hlen + count * elem);
  if (!buf) return;
  memcpy(buf, h, 10 + hlen);
  memcpy(buf + 10 + hlen, v, count * elem);
  put(name, buf, 10 + hlen + count * elem);
  free(buf);
}

static void cleanup(void) {
  static const char *const topo[2] = {"indptr.npy", "indices.npy"};
  for (int i = 0; i < 4; i++) put(names[i], NULL, 0);
  for (int i = 0; i < 2; i++) put(topo[i], NULL, 0);
  rmdir(dir);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (!dir[0]) {
    snprintf(dir, sizeof dir, "/tmp/hs-fuzz-sp-%d", (int)getpid());
    mkdir(dir, 0700);
    atexit(cleanup);
    static const int64_t indptr[5] = {0, 1, 2, 3, 4};
    static const int32_t indices[4] = {1, 2, 3, 0};
    put_npy("indptr.npy", "<i8", indptr, 5, 8);
    put_npy("indices.npy", "<i4", indices, 4, 4);
  }
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
    hs_dataset_stats_compute(ds, &st);
    hs_dataset_close(ds);
  }
  return 0;
}
