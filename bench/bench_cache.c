/* Trainer-tier cache hit rates by fill policy (first, degree, presample)
 * and cache size (10%, 25%, 50% of the rows) under real access patterns:
 * the reference sampler's batches (fanouts 15,10,5, 1024 seeds) over a
 * generated R-MAT graph, and over Facebook (MUSAE) when the shared datasets
 * are present. Each hit rate is printed beside its limit C/N, the hit rate
 * of uniform access, as a ratio, and beside the same-run hit rate of a
 * FIRST cache fed uniformly random batches of the same sizes (the limit,
 * measured).
 *
 * Every cache sees the same batches: epoch 0 fills FIRST caches, epoch 1 is
 * measured. PRESAMPLE counts accesses over sampling-only epochs keyed apart
 * from the measured ones; DEGREE ranks by in-degree.
 *
 * Then the host tier on the graph's feat.npy, with a budget of a quarter
 * of the features, seeds in random and in block order: hit rate beside the
 * kept fraction, disk bytes beside the bytes of the missed rows, memory
 * beside the budget. With sparse features, the sparse host tier instead
 * (budget a quarter of the entries, seeds in random order): hit rate beside
 * the kept share, bytes read, and the measured epoch's gather time beside
 * the in-memory sparse gather's over the same batches.
 *
 * usage: bench_cache [--scale S] [--dataset DIR] [--no-facebook]
 *                    [--batch B] [--presample-epochs P] [--seed X]
 *                    [--no-host-tier] */
#include <ftw.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/hs_engine.h"
#include "hetsage.h"

#define N_FILLS 3
#define N_SIZES 3
static const double sizes[N_SIZES] = {0.10, 0.25, 0.50};
static const hs_cache_fill fills[N_FILLS] = {HS_CACHE_FILL_FIRST, HS_CACHE_FILL_DEGREE,
                                              HS_CACHE_FILL_PRESAMPLE};

typedef struct opts {
  int scale;
  const char *dataset;
  bool facebook;
  int32_t batch;
  int presample_epochs;
  uint64_t seed;
  bool host_tier;
} opts;

typedef struct sampler {
  hs_csr g;
  hs_sample_cfg cfg;
  int32_t *seeds;
  int64_t n_seeds;
  int32_t per_batch;
  hs_batch batch;
  uint32_t epoch;
  int64_t next;
} sampler;

static void die(const char *what) {
  fprintf(stderr, "bench_cache: %s: %s\n", what, hs_last_error());
  exit(1);
}

static void epoch_begin(sampler *s, uint32_t epoch, uint64_t seed) {
  s->epoch = epoch;
  s->next = 0;
  for (int64_t i = s->n_seeds - 1; i > 0; i--) {
    int64_t j = hs_philox_below(hs_philox_draw(seed, 0x5eedu, epoch, 0, (uint32_t)i).v[0],
                                (uint32_t)(i + 1));
    int32_t x = s->seeds[i];
    s->seeds[i] = s->seeds[j];
    s->seeds[j] = x;
  }
}

/* hs_coo_batch_fn: the next batch of the epoch. */
static int32_t next_batch(void *ctx, const int32_t **ids) {
  sampler *s = ctx;
  if (s->next >= s->n_seeds) return 0;
  int64_t left = s->n_seeds - s->next;
  int32_t k = left < s->per_batch ? (int32_t)left : s->per_batch;
  if (hs__ref_sample_batch(&s->g, &s->cfg, s->seeds + s->next, k, s->epoch,
                           (uint32_t)(s->next / s->per_batch), &s->batch) != HS_OK)
    return -1;
  s->next += k;
  *ids = s->batch.ids;
  return s->batch.n_vertices;
}

/* Uniformly random distinct ids, as many as the sampled batch had. */
static const int32_t *uniform_batch(int64_t n, int32_t size, uint64_t seed, uint32_t key,
                                    uint32_t *stamp, int32_t *out) {
  for (int32_t i = 0; i < size; i++) {
    uint32_t attempt = 0;
    int32_t v;
    do v = (int32_t)hs_philox_below(
           hs_philox_draw(seed, 0x0af0u, key, (uint32_t)i, attempt++).v[0], (uint32_t)n);
    while (stamp[v] == key);
    stamp[v] = key;
    out[i] = v;
  }
  return out;
}

/* The host tier on this graph's feat.npy with a budget of a quarter of the
 * features, serving every row of the sampled batches (no trainer cache in
 * front), seeds in random order vs block order; epoch 1 measured. Limits:
 * the kept fraction of the blocks (hit rate); for disk bytes, the 4 KiB
 * pages holding the missed rows (what any reader must fetch) and, looser,
 * the missed rows' own bytes. */
static void host_tier_run(sampler *s, const char *dir, const opts *o, int32_t max_rows) {
  char feat[4200];
  snprintf(feat, sizeof feat, "%s/feat.npy", dir);
  hs_gather_pool *pool;
  if (hs__gather_pool_create(2, &pool) != HS_OK) die("pool");
  int32_t *order = malloc(sizeof *order * (size_t)s->n_seeds);
  int32_t *saved = malloc(sizeof *saved * (size_t)s->n_seeds);
  if (!order || !saved) die("memory");
  memcpy(saved, s->seeds, sizeof *saved * (size_t)s->n_seeds);
  printf(",\n      \"host_tier\": [\n");
  for (int mode = 0; mode < 2; mode++) {
    hs_host_tier_info info;
    hs_host_tier *t;
    hs_host_tier_cfg probe = {.path = feat, .budget_bytes = 0, .pool = pool};
    if (hs__host_tier_open(&probe, &t) != HS_OK) die(feat);
    hs__host_tier_info(t, &info);
    hs__host_tier_close(t);
    uint64_t budget = (uint64_t)info.n_rows * info.row_bytes / 4;
    hs_host_tier_cfg cfg = {.path = feat, .budget_bytes = budget, .pool = pool};
    if (hs__host_tier_open(&cfg, &t) != HS_OK) die(feat);
    char *rows = malloc((size_t)max_rows * info.row_bytes);
    if (!rows) die("memory");
    int64_t looked = 0;
    for (uint32_t epoch = 0; epoch < 2; epoch++) {
      memcpy(s->seeds, saved, sizeof *saved * (size_t)s->n_seeds);
      epoch_begin(s, 2000u + epoch, o->seed);
      if (mode == 1) {
        if (hs__block_order_seeds(s->seeds, s->n_seeds, info.rows_per_block, o->seed, epoch,
                                  order) != HS_OK)
          die("block order");
        memcpy(s->seeds, order, sizeof *order * (size_t)s->n_seeds);
      }
      hs__host_tier_stats_reset(t);
      s->epoch = 2000u + epoch;
      s->next = 0;
      const int32_t *ids;
      int32_t n;
      looked = 0;
      while ((n = next_batch(s, &ids)) > 0) {
        if (hs__host_tier_gather(t, ids, n, rows) != HS_OK) die("host tier gather");
        looked += n;
      }
      if (n < 0) die("sampling");
    }
    hs_host_tier_stats st;
    hs__host_tier_stats(t, &st);
    double need = (double)(st.lookups - st.hits) * (double)info.row_bytes;
    double pages = (double)st.page_bytes_missed;
    printf("        {\"seed_order\": \"%s\", \"budget_bytes\": %" PRIu64
           ", \"feature_bytes\": %" PRIu64 ", \"block_bytes\": %zu, \"blocks_kept\": %" PRId64
           " , \"blocks\": %" PRId64 ", \"hit_rate\": %.4f, \"limit_kept_fraction\": %.4f, "
           "\"ratio_to_limit\": %.3f, \"disk_bytes_per_epoch\": %" PRIu64
           ", \"missed_row_bytes\": %.0f, \"missed_page_bytes\": %.0f, "
           "\"ratio_to_missed_pages\": %.3f, \"ratio_to_missed_rows\": %.3f, \"reads\": %" PRId64
           ", \"memory_bytes\": %" PRIu64 ", \"memory_to_budget\": %.3f}%s\n",
           mode ? "block" : "random", budget, (uint64_t)info.n_rows * info.row_bytes,
           info.block_bytes, st.blocks_kept, info.n_blocks, st.hit_rate, st.limit,
           st.limit > 0 ? st.hit_rate / st.limit : 0.0, st.bytes_read, need,
           pages, pages > 0 ? (double)st.bytes_read / pages : 0.0,
           need > 0 ? (double)st.bytes_read / need : 0.0, st.reads, st.memory_bytes,
           (double)st.memory_bytes / (double)budget, mode ? "" : ",");
    (void)looked;
    free(rows);
    hs__host_tier_close(t);
  }
  printf("      ]");
  memcpy(s->seeds, saved, sizeof *saved * (size_t)s->n_seeds);
  free(order);
  free(saved);
  hs__gather_pool_destroy(pool);
}

/* The sparse host tier on this graph's sparse features (budget: a quarter
 * of the entries' bytes, seeds shuffled), serving every row of the sampled
 * batches; epoch 0 fills, epoch 1 is measured, and timed beside the
 * in-memory gather of the same batches (hs__gather_sparse; the pages of
 * the feature files are in the page cache after epoch 0 either way). */
static void sparse_tier_run(sampler *s, const char *dir, hs_dataset *ds, const hs_graph *gr,
                            const opts *o, int32_t max_rows) {
  char ix[4200], iv[4200];
  snprintf(ix, sizeof ix, "%s/feat_indices.npy", dir);
  snprintf(iv, sizeof iv, "%s/feat_values.npy", dir);
  hs_gather_pool *pool;
  if (hs__gather_pool_create(2, &pool) != HS_OK) die("pool");
  uint64_t total = (uint64_t)gr->feat_nnz * (gr->feat_val ? 8u : 4u);
  uint64_t budget = total / 4;
  hs_sparse_tier_cfg cfg = {.indices_path = ix, .values_path = gr->feat_val ? iv : NULL,
                            .ptr = gr->feat_ptr, .n_rows = gr->n, .n_cols = gr->f,
                            .budget_bytes = budget, .pool = pool};
  hs_sparse_tier *t;
  if (hs__sparse_tier_open(&cfg, &t) != HS_OK) die(hs_last_error());
  /* the in-memory side's column ids (int64 ones narrowed here, once) */
  const int32_t *mcol;
  if (hs__dataset_sparse_cols(ds, &mcol) != HS_OK) die(hs_last_error());
  hs_sparse_tier_info info;
  hs__sparse_tier_info(t, &info);
  int64_t cap = (int64_t)max_rows * gr->feat_row_nnz_max;
  if (cap > gr->feat_nnz) cap = gr->feat_nnz;
  int32_t *ptr = malloc(sizeof *ptr * ((size_t)max_rows + 1));
  int32_t *col = malloc(sizeof *col * ((size_t)cap + 1));
  float *val = malloc(sizeof *val * ((size_t)cap + 1));
  if (!ptr || !col || !val) die("memory");
  double t_tier = 0, t_mem = 0;
  uint64_t entries = 0;
  for (uint32_t epoch = 0; epoch < 2; epoch++) {
    epoch_begin(s, 3000u + epoch, o->seed);
    hs__sparse_tier_stats_reset(t);
    s->epoch = 3000u + epoch;
    s->next = 0;
    const int32_t *ids;
    int32_t n;
    t_tier = t_mem = 0;
    entries = 0;
    while ((n = next_batch(s, &ids)) > 0) {
      double t0 = hs__now();
      if (hs__sparse_tier_gather(t, ids, n, ptr, col, val, cap) != HS_OK) die(hs_last_error());
      double t1 = hs__now();
      hs_gather_sparse_req r = {.ptr = gr->feat_ptr, .col = mcol, .val = gr->feat_val,
                                .val_half = gr->feat_dtype == HS_DTYPE_FLOAT16, .n_rows = gr->n,
                                .ids = ids, .n = n, .out_ptr = ptr, .out_col = col,
                                .out_val = val, .cap = cap};
      if (hs__gather_sparse(pool, &r) != HS_OK) die(hs_last_error());
      t_tier += t1 - t0;
      t_mem += hs__now() - t1;
      entries += (uint64_t)ptr[n];
    }
    if (n < 0) die("sampling");
  }
  hs_sparse_tier_stats st;
  hs__sparse_tier_stats(t, &st);
  printf(",\n      \"sparse_tier\": {\"budget_bytes\": %" PRIu64 ", \"entry_bytes_total\": %" PRIu64
         ", \"valued\": %s, \"rows_per_block\": %" PRId64 ", \"blocks\": %" PRId64
         ", \"blocks_kept\": %" PRId64 ", \"lookups\": %" PRId64 ", \"hit_rate\": %.4f, "
         "\"limit_kept_share\": %.4f, \"bytes_read_per_epoch\": %" PRIu64 ", \"reads\": %" PRId64
         ", \"entries_gathered\": %" PRIu64 ", \"tier_gather_s\": %.4f, \"memory_gather_s\": "
         "%.4f, \"memory_bytes\": %" PRIu64 "}",
         budget, total, info.valued ? "true" : "false", info.rows_per_block, info.n_blocks,
         st.blocks_kept, st.lookups, st.hit_rate, st.limit, st.bytes_read, st.reads, entries,
         t_tier, t_mem, st.memory_bytes);
  free(ptr);
  free(col);
  free(val);
  hs__sparse_tier_close(t);
  hs__gather_pool_destroy(pool);
}

static void graph_run(const char *name, const char *dir, const opts *o, bool *first_graph) {
  hs_dataset *ds;
  if (hs_dataset_open(dir, &ds) != HS_OK) die(dir);
  const hs_graph *gr = hs__dataset_graph(ds);
  sampler s = {.g = hs__csr_of_graph(gr), .per_batch = o->batch};
  s.cfg.n_layers = 3;
  s.cfg.fanout[0] = 15;
  s.cfg.fanout[1] = 10;
  s.cfg.fanout[2] = 5;
  s.cfg.seed = o->seed;
  if (gr->split[HS_SPLIT_TRAIN] && gr->split_n[HS_SPLIT_TRAIN] > 0) {
    s.n_seeds = gr->split_n[HS_SPLIT_TRAIN];
    s.seeds = malloc(sizeof *s.seeds * (size_t)s.n_seeds);
    if (s.seeds) memcpy(s.seeds, gr->split[HS_SPLIT_TRAIN], sizeof *s.seeds * (size_t)s.n_seeds);
  } else {
    s.n_seeds = gr->n;
    s.seeds = malloc(sizeof *s.seeds * (size_t)s.n_seeds);
    for (int64_t v = 0; s.seeds && v < gr->n; v++) s.seeds[v] = (int32_t)v;
  }
  if (!s.seeds) die("seeds");
  if (s.per_batch > s.n_seeds) s.per_batch = (int32_t)s.n_seeds;
  hs_batch_caps caps;
  if (hs__batch_caps(&s.cfg, &s.g, hs__csr_max_degree(&s.g), s.per_batch, &caps) != HS_OK ||
      hs__batch_alloc(&caps, &s.batch) != HS_OK)
    die("batch storage");
  size_t rb = gr->feat_row_bytes ? gr->feat_row_bytes : 4;

  /* the caches: fill x size, plus a FIRST cache per size fed uniform ids */
  hs_coo *cache[N_FILLS][N_SIZES], *uni[N_SIZES];
  int64_t cap[N_SIZES];
  for (int z = 0; z < N_SIZES; z++) {
    cap[z] = (int64_t)(sizes[z] * (double)gr->n + 0.5);
    for (int f = 0; f < N_FILLS; f++) {
      hs_coo_cfg cfg = {.n_vertices = gr->n, .capacity = cap[z], .row_bytes = rb,
                        .fill = fills[f]};
      if (hs__coo_create(&cfg, &cache[f][z]) != HS_OK) die("cache");
    }
    hs_coo_cfg cfg = {.n_vertices = gr->n, .capacity = cap[z], .row_bytes = rb,
                      .fill = HS_CACHE_FILL_FIRST};
    if (hs__coo_create(&cfg, &uni[z]) != HS_OK) die("cache");
  }
  uint64_t *score = calloc((size_t)gr->n, sizeof *score);
  uint32_t *stamp = calloc((size_t)gr->n, sizeof *stamp);
  int32_t *uids = malloc(sizeof *uids * (size_t)caps.vertices);
  hs_coo_plan plan;
  if (!score || !stamp || !uids || hs__coo_plan_alloc(caps.vertices, &plan) != HS_OK)
    die("memory");

  hs__coo_in_degree(&s.g, score);
  for (int z = 0; z < N_SIZES; z++)
    if (hs__coo_prefill_by_score(cache[1][z], score) != HS_OK) die("degree prefill");
  double t0 = hs__now();
  memset(score, 0, sizeof *score * (size_t)gr->n);
  for (int e = 0; e < o->presample_epochs; e++) {
    epoch_begin(&s, 1000u + (uint32_t)e, o->seed);
    if (hs__coo_count_accesses(gr->n, next_batch, &s, score) != HS_OK) die("presampling");
  }
  double t_pre = hs__now() - t0;
  for (int z = 0; z < N_SIZES; z++)
    if (hs__coo_prefill_by_score(cache[2][z], score) != HS_OK) die("presample prefill");

  hs_coo_stats st[2][N_FILLS][N_SIZES], ust[2][N_SIZES];
  int64_t batches = 0, rows = 0, accessed = 0;
  bool *seen = calloc((size_t)gr->n, 1);
  if (!seen) die("memory");
  uint32_t ukey = 0;
  t0 = hs__now();
  for (uint32_t epoch = 0; epoch < 2; epoch++) {
    epoch_begin(&s, epoch, o->seed);
    const int32_t *ids;
    int32_t n;
    while ((n = next_batch(&s, &ids)) > 0) {
      batches += epoch == 1;
      rows += epoch == 1 ? n : 0;
      for (int32_t i = 0; epoch == 1 && i < n; i++)
        if (!seen[ids[i]]) {
          seen[ids[i]] = true;
          accessed++;
        }
      for (int f = 0; f < N_FILLS; f++)
        for (int z = 0; z < N_SIZES; z++)
          if (hs__coo_classify(cache[f][z], ids, n, &plan) != HS_OK) die("classify");
      const int32_t *u = uniform_batch(gr->n, n, o->seed, ++ukey, stamp, uids);
      for (int z = 0; z < N_SIZES; z++)
        if (hs__coo_classify(uni[z], u, n, &plan) != HS_OK) die("classify");
    }
    if (n < 0) die("sampling");
    for (int f = 0; f < N_FILLS; f++)
      for (int z = 0; z < N_SIZES; z++) hs__coo_epoch_end(cache[f][z], &st[epoch][f][z]);
    for (int z = 0; z < N_SIZES; z++) hs__coo_epoch_end(uni[z], &ust[epoch][z]);
  }
  double t_run = hs__now() - t0;

  printf("%s    {\"graph\": \"%s\", \"vertices\": %" PRId64 ", \"edges\": %" PRId64
         ", \"row_bytes\": %zu, \"train_seeds\": %" PRId64 ", \"batch\": %d, "
         "\"fanouts\": [15, 10, 5], \"batches_per_epoch\": %" PRId64
         ", \"mean_rows_per_batch\": %.1f, \"vertices_accessed_per_epoch\": %" PRId64
         ", \"presample_epochs\": %d, "
         "\"presample_s\": %.2f, \"measured_s\": %.2f,\n      \"results\": [\n",
         *first_graph ? "" : ",\n", name, gr->n, gr->e, rb, s.n_seeds, s.per_batch, batches,
         batches ? (double)rows / (double)batches : 0.0, accessed, o->presample_epochs, t_pre,
         t_run);
  *first_graph = false;
  for (int z = 0; z < N_SIZES; z++)
    for (int f = 0; f < N_FILLS; f++) {
      const hs_coo_stats *a = &st[1][f][z], *a0 = &st[0][f][z];
      printf("        {\"fill\": \"%s\", \"cache_fraction\": %.2f, \"capacity_rows\": %" PRId64
             ", \"hit_rate\": %.4f, \"limit_c_over_n\": %.4f, \"ratio_to_limit\": %.3f, "
             "\"uniform_hit_rate_same_run\": %.4f, \"ratio_to_uniform\": %.3f, "
             "\"epoch0_hit_rate\": %.4f, \"bytes_saved_per_epoch\": %" PRIu64 "}%s\n",
             hs_cache_fill_name(fills[f]), sizes[z], cap[z], a->hit_rate, a->limit,
             a->limit > 0 ? a->hit_rate / a->limit : 0.0, ust[1][z].hit_rate,
             ust[1][z].hit_rate > 0 ? a->hit_rate / ust[1][z].hit_rate : 0.0, a0->hit_rate,
             a->bytes_saved, z == N_SIZES - 1 && f == N_FILLS - 1 ? "" : ",");
    }
  printf("      ]");
  if (gr->feat && o->host_tier) host_tier_run(&s, dir, o, caps.vertices);
  if (gr->feat_sparse && o->host_tier) sparse_tier_run(&s, dir, ds, gr, o, caps.vertices);
  printf("}");
  fflush(stdout);

  for (int z = 0; z < N_SIZES; z++) {
    for (int f = 0; f < N_FILLS; f++) hs__coo_destroy(cache[f][z]);
    hs__coo_destroy(uni[z]);
  }
  hs__coo_plan_free(&plan);
  hs__batch_free(&s.batch);
  free(s.seeds);
  free(score);
  free(stamp);
  free(uids);
  free(seen);
  hs_dataset_close(ds);
}

static int rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw) {
  (void)sb;
  (void)flag;
  (void)ftw;
  return remove(path);
}

static void rm_tree(const char *dir) { nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS); }

static void usage(void) {
  fprintf(stderr,
          "usage: bench_cache [--scale S] [--dataset DIR] [--no-facebook] [--batch B]\n"
          "                   [--presample-epochs P] [--seed X] [--no-host-tier]\n"
          "  --scale S             R-MAT graph of 2^S vertices, generated (default 17)\n"
          "  --dataset DIR         also a native dataset\n"
          "  --no-facebook         skip Facebook ($HS_SHARED_DATASETS, else the shared/datasets\n"
          "                        folder beside the source tree)\n"
          "  --batch B             seeds per batch (default 1024)\n"
          "  --seed X              sampling and shuffling seed (default 1)\n"
          "  --presample-epochs P  sampling-only epochs for PRESAMPLE (default 2)\n"
          "  --no-host-tier        skip the host tier runs (feat.npy, or the sparse\n"
          "                        tier over sparse features; budget 1/4)\n");
}

int main(int argc, char **argv) {
  opts o = {.scale = 17, .facebook = true, .batch = 1024, .presample_epochs = 2, .seed = 1,
            .host_tier = true};
  static const struct option lo[] = {
      {"scale", required_argument, NULL, 's'},   {"dataset", required_argument, NULL, 'd'},
      {"no-facebook", no_argument, NULL, 'F'},   {"batch", required_argument, NULL, 'b'},
      {"presample-epochs", required_argument, NULL, 'p'},
      {"seed", required_argument, NULL, 'x'},    {"help", no_argument, NULL, 'h'},
      {"no-host-tier", no_argument, NULL, 'H'},
      {NULL, 0, NULL, 0}};
  int c;
  while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
    switch (c) {
    case 's': o.scale = atoi(optarg); break;
    case 'd': o.dataset = optarg; break;
    case 'F': o.facebook = false; break;
    case 'b': o.batch = atoi(optarg); break;
    case 'p': o.presample_epochs = atoi(optarg); break;
    case 'x': o.seed = strtoull(optarg, NULL, 0); break;
    case 'H': o.host_tier = false; break;
    case 'h': usage(); return 0;
    default: usage(); return 2;
    }
  }
  if (o.scale < 4 || o.scale > 26 || o.batch < 1 || o.presample_epochs < 1) {
    usage();
    return 2;
  }
  char tmp[] = "/tmp/hs-bench-cache-XXXXXX";
  if (!mkdtemp(tmp)) {
    perror("mkdtemp");
    return 1;
  }
  char path[4096], name[64];
  printf("{\"bench\": \"cache\", \"policy\": \"cache-once-only\", \"limit\": \"C/N (uniform "
         "access)\",\n  \"graphs\": [\n");
  bool first = true;
  snprintf(path, sizeof path, "%s/rmat", tmp);
  hs_generate_opts go;
  hs_generate_opts_init(&go, HS_GENERATE_RMAT);
  go.scale = o.scale;
  go.num_features = 100; /* the row size only scales bytes_saved */
  go.seed = o.seed;
  if (hs_generate(path, &go, NULL, NULL) != HS_OK) die("generating R-MAT");
  snprintf(name, sizeof name, "rmat-s%d", o.scale);
  graph_run(name, path, &o, &first);
  if (o.facebook) {
    const char *root = getenv("HS_SHARED_DATASETS");
    char src[4096];
    snprintf(src, sizeof src, "%s/musae_facebook", root ? root : HS_BENCH_SHARED_DATASETS);
    struct stat sb;
    if (stat(src, &sb) == 0) {
      hs_convert_opts co;
      hs_convert_opts_init(&co, HS_IMPORT_MUSAE);
      co.undirected = true;
      co.dedup = true;
      snprintf(path, sizeof path, "%s/facebook", tmp);
      if (hs_convert(src, path, &co, NULL) != HS_OK) die("importing Facebook");
      graph_run("facebook", path, &o, &first);
    } else {
      fprintf(stderr, "bench_cache: %s not found, Facebook skipped\n", src);
    }
  }
  if (o.dataset) graph_run(o.dataset, o.dataset, &o, &first);
  printf("\n  ]\n}\n");
  rm_tree(tmp);
  return 0;
}
