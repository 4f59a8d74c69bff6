/* The embedding store at size: memory of N rows (default 10^7 rows of 16
 * floats with row-wise Adagrad state) against their raw bytes, and the
 * rates of lookups and updates against the same-run limit of a dense
 * array gather of the same rows by the same threads (what the hash index
 * costs over rows whose ids were 0..N-1).
 *
 * usage: bench_embed [--rows N] [--dim D] [--threads T] [--batch B] [--reps R]
 * Prints one JSON document. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/hs_measure.h"
#include "core/hs_engine.h"

static uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

static uint64_t rss_bytes(void) { return hs__proc_kb_field("/proc/self/status", "VmRSS"); }

typedef struct dense_job {
  const float *table;
  const int64_t *rows;
  int n, dim;
  float *out;
} dense_job;

static void dense_gather(void *arg, int t, int n_threads) {
  dense_job *j = arg;
  int lo = (int)((int64_t)j->n * t / n_threads), hi = (int)((int64_t)j->n * (t + 1) / n_threads);
  size_t bytes = (size_t)j->dim * sizeof(float);
  for (int i = lo; i < hi; i++)
    memcpy(j->out + (size_t)i * (size_t)j->dim, j->table + (size_t)j->rows[i] * (size_t)j->dim, bytes);
}

int main(int argc, char **argv) {
  int64_t rows = 10000000;
  int dim = 16, threads = 2, batch = 65536, reps = 5;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--rows") == 0 && i + 1 < argc) rows = atoll(argv[++i]);
    else if (strcmp(argv[i], "--dim") == 0 && i + 1 < argc) dim = atoi(argv[++i]);
    else if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc) threads = atoi(argv[++i]);
    else if (strcmp(argv[i], "--batch") == 0 && i + 1 < argc) batch = atoi(argv[++i]);
    else if (strcmp(argv[i], "--reps") == 0 && i + 1 < argc) reps = atoi(argv[++i]);
    else {
      fprintf(stderr, "usage: bench_embed [--rows N] [--dim D] [--threads T] [--batch B] [--reps R]\n");
      return 2;
    }
  }
  if (rows < batch || reps < 1 || reps > HS_MEASURE_MAX_RUNS) {
    fprintf(stderr, "bench_embed: --rows must be >= --batch, --reps 1..%d\n", HS_MEASURE_MAX_RUNS);
    return 2;
  }
  hs_embed_cfg c;
  hs__embed_cfg_defaults(&c);
  c.dim = dim;
  c.threads = threads;
  hs_embed *e;
  hs_embed_batch b;
  uint64_t rss0 = rss_bytes();
  if (hs__embed_create(&c, &e) != HS_OK || hs__embed_batch_init(&b, batch, dim) != HS_OK) {
    fprintf(stderr, "bench_embed: %s\n", hs_last_error());
    return 1;
  }
  uint64_t *ids = malloc((size_t)batch * sizeof *ids);
  float *grads = calloc((size_t)batch * (size_t)dim, sizeof *grads);
  uint32_t tick = 0;
  /* Fill: ids are mixes of 0..rows-1 (no order, no range). */
  double t0 = hs__now();
  for (int64_t first = 0; first < rows; first += batch) {
    int n = (int)(rows - first < batch ? rows - first : batch);
    for (int i = 0; i < n; i++) ids[i] = mix((uint64_t)(first + i));
    hs_embed_query q = {.n = n, .ids = ids, .n_fields = 1};
    if (hs__embed_lookup(e, &q, tick, true, &b) != HS_OK) {
      fprintf(stderr, "bench_embed: %s\n", hs_last_error());
      return 1;
    }
    hs__embed_release(e, tick++);
  }
  double fill_s = hs__now() - t0;
  hs_embed_stats st;
  hs__embed_stats(e, &st);
  uint64_t rss1 = rss_bytes();
  /* Lookups of existing rows (random), updates, and the dense limit. */
  hs_gather_pool *pool;
  float *dense = malloc((size_t)rows * (size_t)dim * sizeof(float));
  int64_t *dense_rows = malloc((size_t)batch * sizeof *dense_rows);
  float *out = malloc((size_t)batch * (size_t)dim * sizeof(float));
  if (!dense || !dense_rows || !out || !ids || !grads || hs__gather_pool_create(threads, &pool) != HS_OK) {
    fprintf(stderr, "bench_embed: out of memory\n");
    return 1;
  }
  for (int64_t i = 0; i < rows * dim; i++) dense[i] = (float)(i & 1023);
  double tl[HS_MEASURE_MAX_RUNS], tu[HS_MEASURE_MAX_RUNS], td[HS_MEASURE_MAX_RUNS];
  for (int r = 0; r < reps; r++) {
    for (int i = 0; i < batch; i++) {
      uint64_t k = mix(((uint64_t)r << 40) + (uint64_t)i) % (uint64_t)rows;
      ids[i] = mix(k);
      dense_rows[i] = (int64_t)k;
    }
    /* Alternate store and limit within each repetition. */
    dense_job dj = {dense, dense_rows, batch, dim, out};
    double a = hs__now();
    hs__gather_pool_run(pool, dense_gather, &dj);
    td[r] = hs__now() - a;
    hs_embed_query q = {.n = batch, .ids = ids, .n_fields = 1};
    a = hs__now();
    if (hs__embed_lookup(e, &q, tick, true, &b) != HS_OK) {
      fprintf(stderr, "bench_embed: %s\n", hs_last_error());
      return 1;
    }
    tl[r] = hs__now() - a;
    a = hs__now();
    hs__embed_apply(e, &b, grads);
    tu[r] = hs__now() - a;
    tick++;
  }
  hs_summary sl = hs__summarize(tl, reps), su = hs__summarize(tu, reps), sd = hs__summarize(td, reps);
  double ratio = (double)st.bytes / (double)st.row_bytes;
  printf("{\n  \"bench\": \"embed\",\n  \"rows\": %lld,\n  \"dim\": %d,\n  \"optimizer\": \"adagrad\",\n"
         "  \"threads\": %d,\n  \"record_bytes\": %zu,\n  \"store_bytes\": %llu,\n"
         "  \"raw_bytes\": %llu,\n  \"store_over_raw\": %.4f,\n  \"rss_growth_bytes\": %llu,\n"
         "  \"rss_growth_over_raw\": %.4f,\n  \"fill_s\": %.3f,\n  \"fill_rows_per_s\": %.0f,\n"
         "  \"batch\": %d,\n"
         "  \"lookup_rows_per_s\": {\"median\": %.0f, \"min_s\": %.6f, \"max_s\": %.6f},\n"
         "  \"update_rows_per_s\": {\"median\": %.0f, \"min_s\": %.6f, \"max_s\": %.6f},\n"
         "  \"limit_dense_gather_rows_per_s\": {\"median\": %.0f, \"min_s\": %.6f, \"max_s\": %.6f},\n"
         "  \"lookup_over_dense_gather\": %.4f\n}\n",
         (long long)rows, dim, threads, hs__embed_record_bytes(e), (unsigned long long)st.bytes,
         (unsigned long long)st.row_bytes, ratio, (unsigned long long)(rss1 - rss0),
         (double)(rss1 - rss0) / (double)st.row_bytes, fill_s, (double)rows / fill_s, batch,
         batch / sl.median, sl.min, sl.max, batch / su.median, su.min, su.max, batch / sd.median,
         sd.min, sd.max, sd.median / sl.median);
  hs__gather_pool_destroy(pool);
  free(dense);
  free(dense_rows);
  free(out);
  free(ids);
  free(grads);
  hs__embed_batch_free(&b);
  hs__embed_destroy(e);
  return 0;
}
