/* libFuzzer harness: the OGB importer's CSV readers. The input is cut at
 * each "\xffSEP" into raw/num-node-list.csv, raw/edge.csv,
 * raw/node-feat.csv, raw/node-label.csv and split/f/{train,valid,test}.csv
 * of a scratch directory (parts past the end are absent), then imported. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "data/hs_import.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

enum { N_FILES = 7 };
static const char *const files[N_FILES] = {
    "raw/num-node-list.csv", "raw/edge.csv",       "raw/node-feat.csv", "raw/node-label.csv",
    "split/f/train.csv",     "split/f/valid.csv", "split/f/test.csv"};
static char dir[64];

static void put(const char *name, const uint8_t *p, size_t n) {
  char path[160];
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

static void sub(const char *name, bool make) {
  char path[160];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  if (make) mkdir(path, 0700);
  else rmdir(path);
}

static void cleanup(void) {
  for (int i = 0; i < N_FILES; i++) put(files[i], NULL, 0);
  sub("split/f", false);
  sub("split", false);
  sub("raw", false);
  rmdir(dir);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (!dir[0]) {
    snprintf(dir, sizeof dir, "/tmp/hs-fuzz-ogb-%d", (int)getpid());
    mkdir(dir, 0700);
    sub("raw", true);
    sub("split", true);
    sub("split/f", true);
    atexit(cleanup);
  }
  const uint8_t *p = data, *end = data + size;
  for (int i = 0; i < N_FILES; i++) {
    if (!p) {
      put(files[i], NULL, 0);
      continue;
    }
    const uint8_t *q = memmem(p, (size_t)(end - p), "\xffSEP", 4);
    put(files[i], p, q ? (size_t)(q - p) : (size_t)(end - p));
    p = q ? q + 4 : NULL;
  }
  hs_convert_opts o;
  hs_convert_opts_init(&o, HS_IMPORT_OGB);
  hs__imported imp;
  memset(&imp, 0, sizeof imp);
  hs__import_ogb(dir, &o, &imp);
  hs__imported_free(&imp);
  return 0;
}
