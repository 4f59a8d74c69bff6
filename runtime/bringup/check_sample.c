/* Sampling (every mode), reindexing and gathering on a device against the
 * plain-C references, bit for bit (docs/architecture.md, "Determinism"): a sample is a pure
 * function of (seed, epoch, batch, layer, vertex, draw). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hs_bringup_int.h"
#include "core/hs_engine.h"

enum { SEEDS = 64, BATCHES = 3 };
/* On a simulator, which checks every access of every work-item: fewer and
 * smaller batches (still more than one, so that state reset is checked). */
enum { SIM_SEEDS = 16, SIM_BATCHES = 2 };

typedef struct mode_case {
  hs_sample_mode mode;
  bool replace;
  int64_t budget;
  hs_sampler_style style;
  hs_reindex_style reindex;
} mode_case;

/* Which comparison a check makes: the sampled neighbours (original ids,
 * row by row: the sampling kernels), or the whole reindexed batch (local
 * ids, blocks: the reindex kernels). */
typedef enum { CMP_EDGES, CMP_BATCH } cmp_kind;

static void cfg_for(const hs_graph *g, const mode_case *mc, hs_sample_cfg *cfg) {
  memset(cfg, 0, sizeof *cfg);
  bool small = g->n < 5000 && g->e < 50000;
  static const int32_t fan3[] = {5, 4, 3}, fan2[] = {10, 5};
  cfg->n_layers = small ? 3 : 2;
  memcpy(cfg->fanout, small ? fan3 : fan2, sizeof(int32_t) * (size_t)cfg->n_layers);
  for (int h = 0; h < cfg->n_layers; h++) cfg->threshold[h] = 0.5f + (float)h;
  cfg->mode = mc->mode;
  cfg->replace = mc->replace;
  cfg->max_vertices = mc->budget;
  cfg->seed = 0xb1e55ed5eedull;
}

static const char *compare_edges(const hs_batch *d, const hs_batch *r, char *why, size_t cap) {
  if (d->n_layers != r->n_layers || d->n_seeds != r->n_seeds) {
    snprintf(why, cap, "batch shape differs");
    return why;
  }
  for (int h = 0; h < d->n_layers; h++) {
    const hs_block *x = &d->blocks[d->n_layers - 1 - h], *y = &r->blocks[r->n_layers - 1 - h];
    if (x->n_dst != y->n_dst) {
      snprintf(why, cap, "hop %d: frontier of %d vertices, reference %d", h, x->n_dst, y->n_dst);
      return why;
    }
    for (int32_t v = 0; v < x->n_dst; v++) {
      if (x->row_ptr[v + 1] - x->row_ptr[v] != y->row_ptr[v + 1] - y->row_ptr[v]) {
        snprintf(why, cap, "hop %d: row %d has %d neighbours, reference %d", h, v,
                 x->row_ptr[v + 1] - x->row_ptr[v], y->row_ptr[v + 1] - y->row_ptr[v]);
        return why;
      }
      for (int32_t i = 0; i < x->row_ptr[v + 1] - x->row_ptr[v]; i++) {
        int32_t a = d->ids[x->col[x->row_ptr[v] + i]], b = r->ids[y->col[y->row_ptr[v] + i]];
        if (a != b) {
          snprintf(why, cap, "hop %d: row %d draw %d is vertex %d, reference %d", h, v, i, a, b);
          return why;
        }
      }
    }
  }
  return NULL;
}

static const char *compare_batch(const hs_batch *a, const hs_batch *b, char *why, size_t cap) {
  if (a->n_layers != b->n_layers || a->n_seeds != b->n_seeds || a->n_vertices != b->n_vertices) {
    snprintf(why, cap, "shape %d layers / %d seeds / %d vertices, reference %d / %d / %d",
             a->n_layers, a->n_seeds, a->n_vertices, b->n_layers, b->n_seeds, b->n_vertices);
    return why;
  }
  for (int32_t i = 0; i < a->n_vertices; i++)
    if (a->ids[i] != b->ids[i]) {
      snprintf(why, cap, "local id %d is vertex %d, reference %d", i, a->ids[i], b->ids[i]);
      return why;
    }
  for (int l = 0; l < a->n_layers; l++) {
    const hs_block *x = &a->blocks[l], *y = &b->blocks[l];
    if (x->n_dst != y->n_dst || x->n_src != y->n_src) {
      snprintf(why, cap, "block %d: %d x %d, reference %d x %d", l, x->n_dst, x->n_src, y->n_dst,
               y->n_src);
      return why;
    }
    if (memcmp(x->row_ptr, y->row_ptr, sizeof(int32_t) * ((size_t)x->n_dst + 1)) != 0) {
      snprintf(why, cap, "block %d: row offsets differ", l);
      return why;
    }
    for (int32_t i = 0; i < x->row_ptr[x->n_dst]; i++)
      if (x->col[i] != y->col[i]) {
        snprintf(why, cap, "block %d: edge %d has local source %d, reference %d", l, i, x->col[i],
                 y->col[i]);
        return why;
      }
  }
  return NULL;
}

static uint64_t digest_batch(uint64_t h, const hs_batch *b) {
  h = hs__fnv(h, b->ids, sizeof(int32_t) * (size_t)b->n_vertices);
  for (int l = 0; l < b->n_layers; l++) {
    const hs_block *x = &b->blocks[l];
    h = hs__fnv(h, x->row_ptr, sizeof(int32_t) * ((size_t)x->n_dst + 1));
    h = hs__fnv(h, x->col, sizeof(int32_t) * (size_t)x->row_ptr[x->n_dst]);
  }
  return h;
}

/* Work-group sizes NDRange sampling runs at from the standard level: the
 * default, one work-item, an odd size, a large one (sizes the device does
 * not allow are left out). A sample must not depend on them. */
static const size_t wg_sizes[] = {0, 1, 7, 256};

/* `n_batches` batches of `n_seeds` through the device sampler and the
 * reference, compared; false (with o->detail) on a difference or error. */
static bool batches(hs_sampler *smp, const char *gname, const hs_graph *g, const hs_csr *csr,
                    const hs_sample_cfg *cfg, cmp_kind cmp, size_t wg, int32_t n_seeds,
                    uint32_t n_batches, hs_batch *db, hs_batch *rb, hs__out *o, int64_t *edges) {
  int32_t seeds[SEEDS];
  char why[256];
  for (uint32_t k = 0; k < n_batches; k++) {
    hs__bu_seeds(seeds, n_seeds, g->n, k * 31u + (uint32_t)g->n);
    hs_status st = hs__sampler_run(smp, seeds, n_seeds, 1, k, db);
    if (st == HS_OK) st = hs__ref_sample_batch(csr, cfg, seeds, n_seeds, 1, k, rb);
    if (st != HS_OK) {
      hs__bu_error(o, gname, st);
      return false;
    }
    const char *diff = cmp == CMP_EDGES ? compare_edges(db, rb, why, sizeof why)
                                        : compare_batch(db, rb, why, sizeof why);
    if (diff) {
      snprintf(o->detail, sizeof o->detail, "%s, work-group size %zu, batch %u: %s", gname, wg, k,
               diff);
      return false;
    }
    for (int l = 0; l < db->n_layers; l++) *edges += db->blocks[l].row_ptr[db->blocks[l].n_dst];
    o->digest = digest_batch(o->digest, db);
  }
  return true;
}

/* Mode `mc` on one graph, at each of the first `n_wgs` work-group sizes
 * the device allows (`*wgs_run` counts them). */
static bool one_graph(hs__scope *s, const char *gname, const hs_graph *g, const hs_csr *csr,
                      const mode_case *mc, cmp_kind cmp, int n_wgs, hs__out *o, int64_t *edges,
                      int *wgs_run) {
  hs_sample_cfg cfg;
  cfg_for(g, mc, &cfg);
  bool sim = s->dev.info.simulator;
  int32_t n_seeds = sim ? SIM_SEEDS : SEEDS;
  uint32_t n_batches = sim ? SIM_BATCHES : BATCHES;
  hs_sampler_opts so = {.style = mc->style, .reindex = mc->reindex, .max_seeds = n_seeds};
  hs_sampler *smp = NULL;
  hs_batch db, rb;
  memset(&db, 0, sizeof db);
  memset(&rb, 0, sizeof rb);
  bool ok = false;
  hs_status st = hs__sampler_create(&s->ctx, &s->dev, s->q, csr, &cfg, &so, &smp);
  if (st == HS_OK) st = hs__batch_alloc(hs__sampler_caps(smp), &db);
  if (st == HS_OK) st = hs__batch_alloc(hs__sampler_caps(smp), &rb);
  if (st != HS_OK) {
    hs__bu_error(o, gname, st);
    goto done;
  }
  if (mc->style == HS_STYLE_SINGLE) {
    ok = batches(smp, gname, g, csr, &cfg, cmp, 1, n_seeds, n_batches, &db, &rb, o, edges);
    goto done;
  }
  int ran = 0;
  for (int w = 0; w < n_wgs; w++) {
    st = hs__sampler_set_work_group(smp, wg_sizes[w]);
    if (st == HS_ERR_UNSUPPORTED) continue; /* larger than this device allows */
    if (st != HS_OK) {
      hs__bu_error(o, gname, st);
      goto done;
    }
    if (!batches(smp, gname, g, csr, &cfg, cmp, wg_sizes[w], n_seeds, n_batches, &db, &rb, o,
                 edges))
      goto done;
    ran++;
  }
  if (ran > *wgs_run) *wgs_run = ran;
  ok = true;
done:
  hs__batch_free(&db);
  hs__batch_free(&rb);
  hs__sampler_destroy(smp);
  return ok;
}

static hs_check_result run_mode(hs__bu *b, hs__scope *s, const mode_case *mc, cmp_kind cmp,
                                hs__out *o) {
  const hs__bu_data *d = &b->data;
  int64_t edges = 0;
  int wgs = 0;
  o->digest = HS__FNV_SEED;
  bool standard = b->opts.level >= HS_BRINGUP_STANDARD;
  int n_wgs = standard ? (int)HS_ARRAY_LEN(wg_sizes) : 1;
  /* A simulator keeps to the generated graph (every work-group size still):
   * the same kernels, on inputs small enough to simulate with every access
   * checked. */
  bool cora = standard && !s->dev.info.simulator;
  if (!one_graph(s, "generated R-MAT", d->gen, &d->gen_csr, mc, cmp, n_wgs, o, &edges, &wgs))
    return HS_CHECK_FAIL;
  if (cora && !one_graph(s, "Cora", d->cora, &d->cora_csr, mc, cmp, n_wgs, o, &edges, &wgs))
    return HS_CHECK_FAIL;
  char how[80];
  if (mc->style == HS_STYLE_SINGLE)
    snprintf(how, sizeof how, "one work-item");
  else if (standard)
    snprintf(how, sizeof how, "%d of the work-group sizes default, 1, 7, 256", wgs);
  else
    snprintf(how, sizeof how, "the default work-group size");
  snprintf(o->detail, sizeof o->detail,
           "%s: %d batches x %d seeds per graph (generated R-MAT%s) at %s; %lld sampled edges "
           "equal to the reference bit for bit",
           cmp == CMP_EDGES ? "sampled neighbours" : "reindexed batches (local ids, blocks)",
           s->dev.info.simulator ? SIM_BATCHES : BATCHES,
           s->dev.info.simulator ? SIM_SEEDS : SEEDS, cora ? ", Cora" : "", how,
           (long long)edges);
  return HS_CHECK_PASS;
}

#define MODE_CHECK(fn, mode, replace, budget, style, reindex, cmp)           \
  static hs_check_result fn(hs__bu *b, hs__scope *s, hs__out *o) {          \
    static const mode_case mc = {mode, replace, budget, style, reindex};    \
    return run_mode(b, s, &mc, cmp, o);                                     \
  }

MODE_CHECK(uniform, HS_SAMPLE_UNIFORM, false, 0, HS_STYLE_NDRANGE, HS_REINDEX_AUTO, CMP_EDGES)
MODE_CHECK(uniform_replace, HS_SAMPLE_UNIFORM, true, 0, HS_STYLE_NDRANGE, HS_REINDEX_AUTO,
           CMP_EDGES)
MODE_CHECK(weighted, HS_SAMPLE_WEIGHTED, false, 0, HS_STYLE_NDRANGE, HS_REINDEX_AUTO, CMP_EDGES)
MODE_CHECK(weighted_replace, HS_SAMPLE_WEIGHTED, true, 0, HS_STYLE_NDRANGE, HS_REINDEX_AUTO,
           CMP_EDGES)
MODE_CHECK(threshold, HS_SAMPLE_THRESHOLD, false, 0, HS_STYLE_NDRANGE, HS_REINDEX_AUTO, CMP_EDGES)
MODE_CHECK(budget, HS_SAMPLE_UNIFORM, false, 300, HS_STYLE_NDRANGE, HS_REINDEX_AUTO, CMP_BATCH)
MODE_CHECK(single_item, HS_SAMPLE_WEIGHTED, false, 0, HS_STYLE_SINGLE, HS_REINDEX_AUTO, CMP_BATCH)
MODE_CHECK(reindex_parallel, HS_SAMPLE_UNIFORM, true, 0, HS_STYLE_NDRANGE, HS_REINDEX_PARALLEL,
           CMP_BATCH)
MODE_CHECK(reindex_sequential, HS_SAMPLE_UNIFORM, true, 0, HS_STYLE_NDRANGE,
           HS_REINDEX_SEQUENTIAL, CMP_BATCH)

/* ---- gathering --------------------------------------------------------------- */

/* Device gather of feature rows (32-bit words) and of odd-sized rows
 * (bytes) from tables resident on the device. */
static bool gather_table(hs__bu *b, hs__scope *s, hs_gather_cl *g, const char *what,
                         const void *table, size_t row_bytes, int64_t n_rows, const int32_t *ids,
                         uint32_t n, hs__out *o) {
  size_t out_bytes = (size_t)n * row_bytes;
  char *want = malloc(out_bytes ? out_bytes : 1), *got = malloc(out_bytes ? out_bytes : 1);
  cl_mem dt = NULL, di = NULL, dout = NULL;
  bool ok = false;
  hs_status st = want && got ? HS_OK : hs__fail(HS_ERR_NOMEM, "gather check");
  if (st == HS_OK) st = hs__mem_create(&s->ctx, CL_MEM_READ_ONLY, (size_t)n_rows * row_bytes, &dt);
  if (st == HS_OK) st = hs__mem_create(&s->ctx, CL_MEM_READ_ONLY, 4 * (size_t)n, &di);
  if (st == HS_OK) st = hs__mem_create(&s->ctx, CL_MEM_READ_WRITE, out_bytes, &dout);
  if (st == HS_OK)
    st = hs__mem_write(s->q, dt, true, 0, (size_t)n_rows * row_bytes, table, 0, NULL, NULL);
  if (st == HS_OK) st = hs__mem_write(s->q, di, true, 0, 4 * (size_t)n, ids, 0, NULL, NULL);
  if (st == HS_OK) st = hs__gather_cl_enqueue(g, s->q, dt, row_bytes, di, n, dout, 0, false, NULL);
  if (st == HS_OK) st = hs__queue_finish(s->q);
  if (st == HS_OK) st = hs__mem_read(s->q, dout, true, 0, out_bytes, got, 0, NULL, NULL);
  if (st != HS_OK) {
    hs__bu_error(o, what, st);
    goto done;
  }
  hs__ref_gather(table, row_bytes, ids, (int32_t)n, want);
  for (uint32_t r = 0; r < n; r++)
    if (memcmp(got + (size_t)r * row_bytes, want + (size_t)r * row_bytes, row_bytes) != 0) {
      snprintf(o->detail, sizeof o->detail,
               "%s: output row %u (vertex %d) differs from the reference%s", what, r, ids[r],
               b->inject_gather ? " (fault injected: HETSAGE_BRINGUP_INJECT=gather)" : "");
      goto done;
    }
  o->digest = hs__fnv(o->digest, got, out_bytes);
  ok = true;
done:
  hs__mem_release(&dt);
  hs__mem_release(&di);
  hs__mem_release(&dout);
  free(want);
  free(got);
  return ok;
}

static hs_check_result gather_device(hs__bu *b, hs__scope *s, hs__out *o) {
  const hs__bu_data *d = &b->data;
  hs_gather_cl *g = NULL;
  o->digest = HS__FNV_SEED;
  hs_status st = hs__gather_cl_create_opts(&s->ctx, &s->dev,
                                           b->inject_gather ? "-DHS_INJECT_FAULT" : "", &g);
  if (st != HS_OK) return hs__bu_error(o, "building the gather kernels", st);
  enum { N = 300 };
  int32_t ids[N];
  hs_check_result res = HS_CHECK_FAIL;
  hs__bu_seeds(ids, N, d->gen->n, 5);
  ids[N - 1] = ids[0]; /* a repeated row */
  if (!gather_table(b, s, g, "generated features", d->gen->feat, d->gen->feat_row_bytes, d->gen->n,
                    ids, N, o))
    goto done;
  /* 6-byte rows take the byte kernel. */
  if (!gather_table(b, s, g, "6-byte rows", d->gen->feat, 6,
                    (int64_t)(d->gen->feature_bytes / 6), ids, N, o))
    goto done;
  /* A simulator keeps to the generated graph: the same kernels, on inputs
   * small enough to simulate with every access checked. */
  bool cora = b->opts.level >= HS_BRINGUP_STANDARD && !s->dev.info.simulator;
  if (cora) {
    hs__bu_seeds(ids, N, d->cora->n, 6);
    if (!gather_table(b, s, g, "Cora features", d->cora->feat, d->cora->feat_row_bytes,
                      d->cora->n, ids, N, o))
      goto done;
  }
  snprintf(o->detail, sizeof o->detail,
           "%d rows each of generated features (%zu B), 6-byte rows%s: equal to the reference",
           N, d->gen->feat_row_bytes, cora ? " and Cora features" : "");
  res = HS_CHECK_PASS;
done:
  hs__gather_cl_destroy(g);
  return res;
}

hs_check_result hs__bu_gather_host(hs__bu *b, hs__out *o) {
  const hs_graph *g = b->data.cora;
  enum { N = 1000 };
  int32_t ids[N];
  hs__bu_seeds(ids, N, g->n, 9);
  size_t bytes = (size_t)N * g->feat_row_bytes;
  char *got = malloc(bytes), *want = malloc(bytes);
  int32_t labels[N], want_labels[N];
  hs_gather_pool *pool = NULL;
  hs_check_result res = HS_CHECK_FAIL;
  o->digest = HS__FNV_SEED;
  hs_status st = got && want ? HS_OK : hs__fail(HS_ERR_NOMEM, "host gather check");
  int threads = hs_runtime_host_cores(b->rt) > 1 ? hs_runtime_host_cores(b->rt) : 2;
  if (st == HS_OK) st = hs__gather_pool_create(threads, &pool);
  hs_gather_req req = {g->feat, g->feat_row_bytes, g->n, ids, N, got, g->labels, N, labels};
  if (st == HS_OK) st = hs__gather(pool, &req);
  if (st != HS_OK) {
    hs__bu_error(o, "host gather", st);
    goto done;
  }
  hs__ref_gather(g->feat, g->feat_row_bytes, ids, N, want);
  for (int i = 0; i < N; i++) want_labels[i] = g->labels[ids[i]];
  if (memcmp(got, want, bytes) != 0 || memcmp(labels, want_labels, sizeof labels) != 0) {
    snprintf(o->detail, sizeof o->detail, "Cora rows or labels differ from the reference");
    goto done;
  }
  o->digest = hs__fnv(o->digest, got, bytes);
  snprintf(o->detail, sizeof o->detail,
           "%d Cora feature rows (%zu B) and labels on %d threads: equal to the reference", N,
           g->feat_row_bytes, threads);
  res = HS_CHECK_PASS;
done:
  hs__gather_pool_destroy(pool);
  free(got);
  free(want);
  return res;
}

const hs__kernel_check hs__bu_sample_checks[] = {
    {"sample.uniform", HS_BRINGUP_QUICK, uniform, HS_PROG_SAMPLE},
    {"sample.uniform_replace", HS_BRINGUP_STANDARD, uniform_replace, HS_PROG_SAMPLE},
    {"sample.weighted", HS_BRINGUP_STANDARD, weighted, HS_PROG_SAMPLE},
    {"sample.weighted_replace", HS_BRINGUP_STANDARD, weighted_replace, HS_PROG_SAMPLE},
    {"sample.threshold", HS_BRINGUP_STANDARD, threshold, HS_PROG_SAMPLE},
    {"sample.budget", HS_BRINGUP_STANDARD, budget, HS_PROG_SAMPLE},
    {"sample.single_work_item", HS_BRINGUP_STANDARD, single_item, HS_PROG_SAMPLE},
    {"reindex.parallel", HS_BRINGUP_STANDARD, reindex_parallel, HS_PROG_SAMPLE},
    {"reindex.sequential", HS_BRINGUP_STANDARD, reindex_sequential, HS_PROG_SAMPLE},
    {"gather.device", HS_BRINGUP_QUICK, gather_device, HS_PROG_GATHER},
};
const size_t hs__bu_sample_check_count = HS_ARRAY_LEN(hs__bu_sample_checks);
