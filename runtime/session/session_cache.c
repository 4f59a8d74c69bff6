/* The session's feature caches (runtime/cache/README.md): the host tier in
 * front of feat.npy when the features exceed the memory budget, and the
 * trainer tier (cache-once-only rows on the trainer device) when it has
 * rows. Both are set up once, here; the pipeline stages only use them. */
#include <inttypes.h>
#include <stdlib.h>

#include "data/hs_dsw.h"
#include "hs_session_int.h"

/* Pre-sampling passes of PRESAMPLE draw from epoch keys of their own, apart
 * from every training epoch and from evaluation (0xfffffff0 + split). */
#define PRESAMPLE_EPOCH_KEY 0xffffffe0u
#define PRESAMPLE_PASSES 2u

/* Sparse features over the budget: column ids and values read through the
 * sparse tier; the offsets stay the dataset's. Each row is checked as the
 * tier reads it. The seeds keep their full shuffle (the rows a batch
 * reads are mostly sampled neighbours, not seeds): results are those of
 * the session without a budget. */
static hs_status open_sparse_tier(hs_session *s, uint64_t budget, uint64_t keep) {
  const hs_graph *g = s->g;
  const char *dir = hs__dataset_dir(s->ds);
  char *ipath = hs__path_join(dir, "feat_indices.npy");
  char *vpath = g->feat_val ? hs__path_join(dir, "feat_values.npy") : NULL;
  hs_status st;
  if (!ipath || (g->feat_val && !vpath)) {
    st = hs__fail(HS_ERR_NOMEM, "out of memory for a path");
  } else {
    hs_sparse_tier_cfg tc = {.indices_path = ipath, .values_path = vpath, .ptr = g->feat_ptr,
                             .n_rows = g->n, .n_cols = g->f, .budget_bytes = keep,
                             .pool = s->pool};
    st = hs__sparse_tier_open(&tc, &s->stier);
    s->tier_keep_bytes = keep;
    /* The dataset read the arrays in full to check them at open: their
     * pages leave the resident set, the tier reads the files. */
    if (st == HS_OK) hs__dataset_sparse_drop_pages(s->ds);
    if (st == HS_OK)
      hs__log(HS_LOG_CACHE,
              "session: sparse features (%" PRIu64 " B) exceed the memory budget %" PRIu64
              " B: read from %s through the sparse host tier, %" PRIu64 " B kept",
              g->feature_bytes, budget, ipath, keep);
  }
  free(ipath);
  free(vpath);
  return st;
}

static hs_status open_host_tier(hs_session *s, const hs_session_config *cfg) {
  uint64_t budget = cfg->memory_budget ? cfg->memory_budget : s->plan->host_budget_bytes;
  if (!budget || s->g->feature_bytes <= budget)
    return s->g->feat_sparse ? hs__dataset_sparse_cols(s->ds, &s->feat_col) : HS_OK;
  /* Half of an explicit budget keeps blocks, the rest is for everything
   * else (batches, model, topology); the plan applies the same rule. */
  uint64_t keep = cfg->memory_budget ? budget / 2 : s->plan->cache_host_bytes;
  if (s->g->feat_sparse) return open_sparse_tier(s, budget, keep);
  char *path = hs__path_join(hs__dataset_dir(s->ds), "feat.npy");
  if (!path) return hs__fail(HS_ERR_NOMEM, "out of memory for a path");
  hs_host_tier_cfg tc = {.path = path, .budget_bytes = keep, .pool = s->pool};
  hs_status st = hs__host_tier_open(&tc, &s->tier);
  s->tier_keep_bytes = keep;
  if (st == HS_OK)
    hs__log(HS_LOG_CACHE,
            "session: features (%" PRIu64 " B) exceed the memory budget %" PRIu64
            " B: read from %s through the host tier, %" PRIu64 " B kept",
            s->g->feature_bytes, budget, path, keep);
  free(path);
  return st;
}

typedef struct presample_ctx {
  hs_session *s;
  uint32_t pass;
  int64_t batch;
} presample_ctx;

/* The batches of PRESAMPLE_PASSES sampling-only epochs, in slot 0. */
static int32_t presample_next(void *ctx, const int32_t **ids) {
  presample_ctx *p = ctx;
  hs_session *s = p->s;
  while (p->pass < PRESAMPLE_PASSES) {
    if (p->batch < s->n_batches) {
      uint32_t key = PRESAMPLE_EPOCH_KEY + p->pass;
      if (p->batch == 0 && hs__session_shuffle(s, key) != HS_OK) return -1;
      const int32_t *seeds;
      int32_t n = hs__session_batch_seeds(s, p->batch, &seeds);
      hs_slot_data *d = &s->slots[0];
      if (hs__session_sample(s, seeds, n, key, (uint32_t)p->batch, d) != HS_OK) return -1;
      p->batch++;
      *ids = d->batch.ids;
      return d->batch.n_vertices;
    }
    p->pass++;
    p->batch = 0;
  }
  return 0;
}

/* Float32 rows for the cache's prefill, from wherever the features are. */
static hs_status prefill_read(void *ctx, const int32_t *ids, int32_t n, void *out) {
  hs_session *s = ctx;
  void *raw = NULL;
  if (s->g->feat_dtype == HS_DTYPE_FLOAT16 && !(raw = malloc((size_t)n * s->g->feat_row_bytes + 1)))
    return hs__fail(HS_ERR_NOMEM, "out of memory for %d prefill rows", n);
  hs_status st = hs__session_rows_f32(s, ids, n, out, raw);
  free(raw);
  return st;
}

/* Sparse rows for the cache's prefill, widened to float32 as a batch's. */
static hs_status prefill_read_sparse(void *ctx, const int32_t *ids, int32_t n, int32_t *ptr,
                                     int32_t *col, float *val, int64_t cap) {
  return hs__session_gather_sparse(ctx, ids, n, ptr, col, val, cap);
}

static hs_status prefill(hs_session *s, hs_cache_fill fill) {
  if (fill == HS_CACHE_FILL_FIRST) return HS_OK;
  uint64_t *score = calloc((size_t)s->g->n, sizeof *score);
  if (!score) return hs__fail(HS_ERR_NOMEM, "out of memory for %" PRId64 " cache scores", s->g->n);
  hs_status st = HS_OK;
  if (fill == HS_CACHE_FILL_DEGREE) {
    hs_csr csr = {.n = s->g->n, .e = s->g->e, .indptr = s->g->indptr, .indices = s->g->indices,
                  .weights = s->g->weights};
    hs__coo_in_degree(&csr, score);
  } else {
    presample_ctx pc = {.s = s};
    st = hs__coo_count_accesses(s->g->n, presample_next, &pc, score);
  }
  if (st == HS_OK) st = hs__coo_prefill_by_score(s->coo, score);
  free(score);
  return st;
}

static hs_status open_trainer_tier(hs_session *s, const hs_session_config *cfg) {
  const hs_placement *p = s->plan;
  int64_t rows = cfg->cache_rows >= 0 ? cfg->cache_rows
                 : p->cache_trainer_rows > (uint64_t)INT64_MAX ? INT64_MAX
                                                               : (int64_t)p->cache_trainer_rows;
  hs_cache_fill fill = cfg->cache_rows >= 0 || cfg->cache_fill != HS_CACHE_FILL_FIRST
                           ? cfg->cache_fill
                           : p->cache_fill;
  if (rows <= 0) return HS_OK;
  if (s->emb_dim > 0) {
    /* The rows change every step: they cross with every batch. */
    hs__log(HS_LOG_CACHE, "session: no trainer cache under node embeddings (%" PRId64
            " rows asked)", rows);
    return HS_OK;
  }
  if (rows > s->g->n) rows = s->g->n;
  if (rows <= 0) return HS_OK;
  const hs_graph *g = s->g;
  hs_coo_cfg cc = {.n_vertices = g->n, .fill = fill};
  if (g->feat_sparse) {
    /* The budget in CSR bytes: `rows` rows of the mean length, as the plan
     * counts them (every row when rows = N). The pool holds float32
     * values, whatever the file, beside the column ids. */
    cc.row_ptr = g->feat_ptr;
    cc.entry_bytes = g->feat_val ? 2 * sizeof(float) : sizeof(int32_t);
    /* ceil(rows x nnz / N) without overflow: rows, N < 2^31 */
    int64_t q = g->feat_nnz / g->n, r = g->feat_nnz % g->n;
    int64_t ent = rows * q + (rows * r + g->n - 1) / g->n;
    if (ent > g->feat_nnz) ent = g->feat_nnz;
    int64_t max = hs__coo_dev_max_entries(&s->tdev);
    if (ent > max) {
      hs__log(HS_LOG_CACHE, "session: trainer cache cut from %" PRId64 " to %" PRId64
                            " entries (one device allocation)", ent, max);
      ent = max;
    }
    cc.entry_capacity = ent;
  } else {
    /* The cache holds the rows the model reads: float32, whatever the file. */
    cc.row_bytes = (size_t)g->f * sizeof(float);
    int64_t max = hs__coo_dev_max_rows(&s->tdev, cc.row_bytes);
    if (rows > max) {
      hs__log(HS_LOG_CACHE, "session: trainer cache cut from %" PRId64 " to %" PRId64
                            " rows (one device allocation)", rows, max);
      rows = max;
    }
  }
  if (rows <= 0) return HS_OK;
  cc.capacity = rows;
  s->coo_fill = fill;
  hs_status st = hs__coo_create(&cc, &s->coo);
  if (st != HS_OK) return st;
  if ((st = prefill(s, fill)) != HS_OK) return st;
  if ((st = hs__coo_dev_create(&s->tctx, &s->tdev, s->coo, &s->coo_dev)) != HS_OK) return st;
  if (g->feat_sparse) {
    hs_sparse_source src = {.read = prefill_read_sparse, .ctx = s};
    st = hs__coo_dev_prefill_sparse(s->coo_dev, s->tq, src, 0);
  } else {
    hs_row_source src = {.read = prefill_read, .ctx = s};
    st = hs__coo_dev_prefill(s->coo_dev, s->tq, src, 0);
  }
  if (st != HS_OK) return st;
  int32_t cap = hs__sampler_caps(s->sampler)->vertices;
  for (int i = 0; i < s->depth; i++) {
    hs_slot_data *d = &s->slots[i];
    if ((st = hs__coo_plan_alloc(cap, &d->plan)) != HS_OK) return st;
    if (g->feat_sparse) {
      /* Staging for the misses: as many entries as the slot's host CSR. */
      if (!(d->sx_bptr = malloc(((size_t)cap + 1) * sizeof *d->sx_bptr)))
        return hs__fail(HS_ERR_NOMEM, "out of memory for %d sparse row offsets", cap);
      st = hs__coo_slot_create_sparse(s->coo_dev, cap, d->sx_cap, &d->cs);
    } else {
      st = hs__coo_slot_create(s->coo_dev, cap, &d->cs);
    }
    if (st != HS_OK) return st;
  }
  if (g->feat_sparse)
    hs__log(HS_LOG_CACHE, "session: trainer cache of %" PRId64 " sparse rows, %" PRId64
            " entries (%s fill), %" PRId64 " rows and %" PRId64 " entries held", rows,
            hs__coo_entry_capacity(s->coo), hs_cache_fill_name(fill), hs__coo_rows(s->coo),
            hs__coo_entries(s->coo));
  hs__log(HS_LOG_CACHE, "session: trainer cache of %" PRId64 " rows (%s fill), %" PRId64 " held",
          rows, hs_cache_fill_name(fill), hs__coo_rows(s->coo));
  return HS_OK;
}

hs_status hs__session_cache_open(hs_session *s, const hs_session_config *cfg) {
  hs_status st = open_host_tier(s, cfg);
  return st == HS_OK ? open_trainer_tier(s, cfg) : st;
}

void hs__session_cache_close(hs_session *s) {
  for (int i = 0; s->slots && i < s->depth; i++) {
    hs__coo_slot_destroy(s->slots[i].cs);
    s->slots[i].cs = NULL;
    free(s->slots[i].sx_bptr);
    s->slots[i].sx_bptr = NULL;
    hs__coo_plan_free(&s->slots[i].plan);
  }
  hs__coo_dev_destroy(s->coo_dev);
  hs__coo_destroy(s->coo);
  hs__host_tier_close(s->tier);
  hs__sparse_tier_close(s->stier);
  s->coo_dev = NULL;
  s->coo = NULL;
  s->tier = NULL;
  s->stier = NULL;
}

void hs__session_cache_epoch_end(hs_session *s, hs_epoch_stats *stats) {
  if (s->coo) {
    hs_coo_stats cs;
    hs__coo_epoch_end(s->coo, &cs);
    stats->cache_lookups = (uint64_t)cs.lookups;
    stats->cache_hits = (uint64_t)cs.hits;
    stats->cache_rows = (uint64_t)cs.rows;
    stats->cache_bytes_saved = cs.bytes_saved;
    stats->cache_device_bytes = cs.device_reserved;
  }
  if (s->tier) {
    hs_host_tier_stats ts;
    hs__host_tier_stats(s->tier, &ts);
    stats->host_lookups = (uint64_t)ts.lookups;
    stats->host_hits = (uint64_t)ts.hits;
    stats->host_bytes_read = ts.bytes_read;
    stats->host_memory_bytes = ts.memory_bytes;
  }
  if (s->stier) {
    hs_sparse_tier_stats ts;
    hs__sparse_tier_stats(s->stier, &ts);
    stats->host_lookups = (uint64_t)ts.lookups;
    stats->host_hits = (uint64_t)ts.hits;
    stats->host_bytes_read = ts.bytes_read;
    stats->host_memory_bytes = ts.memory_bytes;
  }
}
