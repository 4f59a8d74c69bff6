/* libFuzzer harness: sparse feature validation. A fixed 4-vertex ring is
 * written once; the input is cut at each "\xffSEP" into feat_shape.npy,
 * feat_indptr.npy, feat_indices.npy and feat_values.npy (a missing piece
 * removes its file), and the dataset is opened and described. The same
 * files are then read through the sparse host tier (every row, repeats,
 * a small budget): it must never crash, whatever the files hold, and where
 * the dataset opened (every rule met) its rows must equal the dataset's. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cache/hs_sparse_tier.h"
#include "data/hs_graph.h"
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

/* Every row twice (in reverse, then in order) through a tier that keeps
 * one small block: kept and unkept rows both read. F is the dataset's when
 * it opened, else 8. */
/* g and gcol: the dataset's view and its column ids (the oracle) when it
 * opened, else NULL. */
static void through_the_tier(const hs_graph *g, const int32_t *gcol) {
  char ip[128], ix[128], iv[128];
  snprintf(ip, sizeof ip, "%s/%s", dir, names[1]);
  snprintf(ix, sizeof ix, "%s/%s", dir, names[2]);
  snprintf(iv, sizeof iv, "%s/%s", dir, names[3]);
  struct stat sb;
  bool valued = stat(iv, &sb) == 0;
  hs_sparse_tier_cfg c = {.indices_path = ix, .values_path = valued ? iv : NULL,
                          .indptr_path = ip, .n_cols = g ? g->f : 8, .budget_bytes = 64,
                          .block_bytes = 1, .max_ids = 3};
  hs_sparse_tier *t = NULL;
  hs_status st = hs__sparse_tier_open(&c, &t);
  if (g && st != HS_OK) abort(); /* the dataset's rules include the tier's */
  if (st != HS_OK) return;
  hs_sparse_tier_info info;
  hs__sparse_tier_info(t, &info);
  int32_t n = info.n_rows > 64 ? 64 : (int32_t)info.n_rows;
  int32_t ids[128], ptr[129];
  for (int32_t i = 0; i < n; i++) ids[i] = n - 1 - i, ids[n + i] = i;
  int64_t cap = info.nnz * 2 < 4096 ? info.nnz * 2 : 4096;
  int32_t *col = malloc(sizeof *col * (size_t)(cap + 1));
  float *val = malloc(sizeof *val * (size_t)(cap + 1));
  if (col && val) {
    st = hs__sparse_tier_gather(t, ids, 2 * n, ptr, col, val, cap);
    if (g && g->n == info.n_rows && info.nnz * 2 <= cap) {
      if (st != HS_OK) abort();
      for (int32_t i = 0; i < 2 * n; i++) {
        int64_t b = g->feat_ptr[ids[i]], len = g->feat_ptr[ids[i] + 1] - b;
        if (ptr[i + 1] - ptr[i] != len) abort();
        for (int64_t k = 0; k < len; k++) {
          if (col[ptr[i] + k] != gcol[b + k]) abort();
          if (!g->feat_val) continue;
          float want = g->feat_dtype == HS_DTYPE_FLOAT16
                           ? hs__half_to_float(((const uint16_t *)g->feat_val)[b + k])
                           : ((const float *)g->feat_val)[b + k];
          if (memcmp(&want, &val[ptr[i] + k], sizeof want)) abort();
        }
      }
    }
  }
  free(col);
  free(val);
  hs__sparse_tier_close(t);
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
  const hs_graph *g = NULL;
  const int32_t *gcol = NULL;
  if (hs_dataset_open(dir, &ds) == HS_OK) {
    hs_dataset_stats st;
    hs_dataset_stats_compute(ds, &st);
    g = hs__dataset_graph(ds);
    if (!g->feat_sparse) g = NULL;
    /* the ids in memory (int64 ones narrowed now): the file is the one
     * that opened, so this cannot fail */
    if (g && (hs__dataset_sparse_cols(ds, &gcol) != HS_OK || (!gcol && g->feat_nnz)))
      abort();
  }
  through_the_tier(g, gcol);
  hs_dataset_close(ds);
  return 0;
}
