/* Sampling throughput beside the random-read probe (see hs_measure.h). */
#include <stdlib.h>
#include <string.h>

#include "bench/hs_measure.h"
#include "core/hs_engine.h"

void hs__bench_seeds(int32_t *seeds, int32_t n, int64_t n_vertices, uint32_t batch, char *used) {
  for (int32_t i = 0, j = 0; i < n; j++) {
    int32_t v = (int32_t)hs_philox_below(hs_philox_draw(77, 0, batch, (uint32_t)j, 0).v[0],
                                         (uint32_t)n_vertices);
    if (!used[v]) {
      used[v] = 1;
      seeds[i++] = v;
    }
  }
  for (int32_t i = 0; i < n; i++) used[seeds[i]] = 0;
}

static hs_status check_args(const hs_csr *g, int32_t batch, int runs) {
  if (runs < 1 || runs > HS_MEASURE_MAX_RUNS)
    return hs__fail(HS_ERR_INVALID_ARG, "sampling benchmark: %d runs (1..%d)", runs,
                    HS_MEASURE_MAX_RUNS);
  if (batch < 1 || batch > g->n)
    return hs__fail(HS_ERR_INVALID_ARG, "sampling benchmark: batch %d of a %lld-vertex graph",
                    batch, (long long)g->n);
  return HS_OK;
}

static double batch_edges(const hs_sample_cfg *cfg, hs_batch *b) {
  double edges = 0;
  for (int h = 0; h < cfg->n_layers; h++) {
    const hs_block *blk = hs__batch_hop(b, h);
    edges += blk->row_ptr[blk->n_dst];
  }
  return edges;
}

hs_status hs__measure_sample_ref(const hs_csr *g, const hs_sample_cfg *cfg, int32_t batch,
                                 int warmup, int runs, const uint64_t *probe_arr,
                                 uint64_t probe_words, hs_sample_runs *out) {
  memset(out, 0, sizeof *out);
  hs_status st = check_args(g, batch, runs);
  if (st != HS_OK) return st;
  out->runs = runs;
  hs_batch_caps caps;
  hs_batch b;
  memset(&b, 0, sizeof b);
  int32_t *seeds = malloc(sizeof *seeds * (size_t)batch);
  char *used = calloc((size_t)g->n, 1);
  if (!seeds || !used) {
    st = hs__fail(HS_ERR_NOMEM, "sampling benchmark");
    goto done;
  }
  if ((st = hs__batch_caps(cfg, g, hs__csr_max_degree(g), batch, &caps)) != HS_OK ||
      (st = hs__batch_alloc(&caps, &b)) != HS_OK)
    goto done;
  for (int r = -warmup; r < runs; r++) {
    hs__bench_seeds(seeds, batch, g->n, (uint32_t)(r + warmup), used);
    double t0 = hs__now(), c0 = hs__process_cpu_s();
    if ((st = hs__ref_sample_batch(g, cfg, seeds, batch, 0, (uint32_t)(r + 100), &b)) != HS_OK)
      goto done;
    double dt = hs__now() - t0, dc = hs__process_cpu_s() - c0;
    c0 = hs__process_cpu_s();
    double probe = hs__host_probe(probe_arr, probe_words, 1u << 22, (uint32_t)r);
    double pc = hs__process_cpu_s() - c0;
    if (r < 0) continue;
    double edges = batch_edges(cfg, &b);
    out->edges_s[r] = edges / dt;
    out->probe_s[r] = probe;
    out->cpu_edges_s[r] = dc > 0 ? edges / dc : 0.0;
    out->cpu_probe_s[r] = pc > 0 ? (double)(1u << 22) / pc : 0.0;
    out->edges_per_batch = edges;
    out->vertices_per_batch = b.n_vertices;
  }
done:
  free(seeds);
  free(used);
  hs__batch_free(&b);
  return st;
}

hs_status hs__measure_sample_device(const hs_dev *dev, const hs_csr *g, const hs_sample_cfg *cfg,
                                    hs_sampler_style style, uint32_t rows_per_item, int32_t batch,
                                    int warmup, int runs, const hs_sample_hook *hook,
                                    hs_sample_runs *out) {
  memset(out, 0, sizeof *out);
  hs_status st = check_args(g, batch, runs);
  if (st != HS_OK) return st;
  out->runs = runs;
  hs_ctx ctx;
  memset(&ctx, 0, sizeof ctx);
  cl_command_queue q = NULL;
  hs_sampler *s = NULL;
  hs_probe probe;
  memset(&probe, 0, sizeof probe);
  hs_batch b;
  memset(&b, 0, sizeof b);
  int32_t *seeds = malloc(sizeof *seeds * (size_t)batch);
  char *used = calloc((size_t)g->n, 1);
  if (!seeds || !used) {
    st = hs__fail(HS_ERR_NOMEM, "sampling benchmark");
    goto done;
  }
  uint64_t topo_bytes = 8 * ((uint64_t)g->n + 1) + 4 * (uint64_t)g->e;
  hs_sampler_opts so = {.style = style, .max_seeds = batch, .profile = true,
                        .rows_per_item = rows_per_item};
  if ((st = hs__ctx_create(dev, 1, &ctx)) != HS_OK ||
      (st = hs__queue_create(&ctx, dev, HS_QUEUE_PROFILING, &q)) != HS_OK ||
      (st = hs__sampler_create(&ctx, dev, q, g, cfg, &so, &s)) != HS_OK ||
      (st = hs__batch_alloc(hs__sampler_caps(s), &b)) != HS_OK ||
      (st = hs__probe_open(&ctx, dev, q, topo_bytes, &probe)) != HS_OK)
    goto done;
  out->kernel_times_real = hs__queue_timestamps_real(&ctx, q);
  for (int r = -warmup; r < runs; r++) {
    hs__bench_seeds(seeds, batch, g->n, (uint32_t)(r + warmup), used);
    hs_sampler_stats before, after;
    hs__sampler_stats(s, &before);
    double t0 = hs__now(), c0 = hs__process_cpu_s();
    if ((st = hs__sampler_run(s, seeds, batch, 0, (uint32_t)(r + 100), &b)) != HS_OK) goto done;
    double dt = hs__now() - t0, dc = hs__process_cpu_s() - c0;
    hs__sampler_stats(s, &after);
    double pr, p0 = hs__now();
    c0 = hs__process_cpu_s();
    if ((st = hs__probe_run(&probe, q, (uint32_t)r, &pr)) != HS_OK) goto done;
    double pc = hs__process_cpu_s() - c0, pw = hs__now() - p0;
    if (hook) {
      hs_bench_run_info info = hook->info;
      info.run = r;
      hook->fn(hook->user, &info);
    }
    if (r < 0) continue;
    double edges = (double)(after.edges - before.edges);
    double ks = after.sample_s - before.sample_s, kr = after.reindex_s - before.reindex_s;
    out->edges_s[r] = edges / dt;
    out->kern_edges_s[r] = ks > 0 ? edges / ks : 0.0;
    out->reindex_v_s[r] = kr > 0 ? (double)b.n_vertices / kr : 0.0;
    out->probe_s[r] = pr;
    out->cpu_edges_s[r] = dc > 0 ? edges / dc : 0.0;
    out->cpu_probe_s[r] = pc > 0 ? pr * pw / pc : 0.0; /* reads / CPU seconds */
    out->edges_per_batch = edges;
    out->vertices_per_batch = b.n_vertices;
  }
done:
  hs__batch_free(&b);
  hs__sampler_destroy(s);
  hs__probe_close(&probe);
  hs__queue_release(&q);
  if (ctx.ctx) hs__ctx_release(&ctx);
  free(seeds);
  free(used);
  return st;
}

/* `batches` batches of `batch` seeds each on sampler 0 alone, then
 * alternating over both; edges per second of each. */
static hs_status two_queue_round(hs_sampler *const *sm, cl_command_queue const *q,
                                 hs_batch *b, const int32_t *seeds, int32_t batch, int batches,
                                 int n_layers, double *one, double *two) {
  hs_status st = HS_OK;
  double edges = 0, t0 = hs__now();
  for (int k = 0; k < batches && st == HS_OK; k++) {
    st = hs__sampler_run(sm[0], seeds + (size_t)batch * (size_t)k, batch, 0, (uint32_t)k, &b[0]);
    for (int h = 0; st == HS_OK && h < n_layers; h++) edges += hs__sampler_hop_edges(&b[0], h);
  }
  *one = edges / (hs__now() - t0);
  double edges2 = 0;
  cl_event ev[2] = {NULL, NULL};
  t0 = hs__now();
  for (int k = 0; k < batches + 2; k++) {
    int l = k & 1;
    if (ev[l]) {
      hs_status w = hs__events_wait(&ev[l], 1);
      hs__events_release(&ev[l], 1);
      ev[l] = NULL;
      if (st == HS_OK) st = w;
      if (st == HS_OK) st = hs__sampler_finish(sm[l], &b[l]);
      for (int h = 0; st == HS_OK && h < n_layers; h++) edges2 += hs__sampler_hop_edges(&b[l], h);
    }
    if (k < batches && st == HS_OK) {
      st = hs__sampler_begin(sm[l], seeds + (size_t)batch * (size_t)k, batch, 0, (uint32_t)k,
                             &b[l], &ev[l]);
      if (st == HS_OK) st = hs__queue_flush(q[l]);
    }
  }
  *two = edges2 / (hs__now() - t0);
  if (st == HS_OK && edges2 != edges)
    st = hs__fail(HS_ERR_STATE, "two queues sampled %.0f edges, one %.0f", edges2, edges);
  return st;
}

hs_status hs__measure_sample_two_queues(const hs_dev *dev, const hs_csr *g,
                                        const hs_sample_cfg *cfg, int32_t batch, int batches,
                                        int warmup, int runs, hs_sample_runs *out) {
  memset(out, 0, sizeof *out);
  hs_status st = check_args(g, batch, runs);
  if (st != HS_OK) return st;
  if (batches < 2 || batches > 1024)
    return hs__fail(HS_ERR_INVALID_ARG, "two-queue sampling benchmark: %d batches", batches);
  out->runs = runs;
  hs_ctx ctx;
  memset(&ctx, 0, sizeof ctx);
  cl_command_queue q[2] = {NULL, NULL};
  hs_sampler *sm[2] = {NULL, NULL};
  hs_batch b[2];
  memset(b, 0, sizeof b);
  hs_probe probe;
  memset(&probe, 0, sizeof probe);
  int32_t *seeds = malloc(sizeof *seeds * (size_t)batch * (size_t)batches);
  char *used = calloc((size_t)g->n, 1);
  if (!seeds || !used) {
    st = hs__fail(HS_ERR_NOMEM, "sampling benchmark");
    goto done;
  }
  uint64_t topo_bytes = 8 * ((uint64_t)g->n + 1) + 4 * (uint64_t)g->e;
  hs_sampler_opts so = {.style = HS_STYLE_NDRANGE, .max_seeds = batch};
  if ((st = hs__ctx_create(dev, 1, &ctx)) != HS_OK) goto done;
  for (int i = 0; i < 2; i++)
    if ((st = hs__queue_create(&ctx, dev, 0, &q[i])) != HS_OK ||
        (st = hs__sampler_create(&ctx, dev, q[i], g, cfg, &so, &sm[i])) != HS_OK ||
        (st = hs__batch_alloc(hs__sampler_caps(sm[i]), &b[i])) != HS_OK)
      goto done;
  if ((st = hs__probe_open(&ctx, dev, q[0], topo_bytes, &probe)) != HS_OK) goto done;
  for (int r = -warmup; r < runs; r++) {
    for (int k = 0; k < batches; k++)
      hs__bench_seeds(seeds + (size_t)batch * (size_t)k, batch, g->n,
                      (uint32_t)((r + warmup) * batches + k), used);
    double one, two, pr;
    if ((st = two_queue_round(sm, q, b, seeds, batch, batches, cfg->n_layers, &one, &two)) !=
            HS_OK ||
        (st = hs__probe_run(&probe, q[0], (uint32_t)r, &pr)) != HS_OK)
      goto done;
    if (r < 0) continue;
    out->edges_s[r] = two;
    out->one_queue_edges_s[r] = one;
    out->probe_s[r] = pr;
  }
done:
  for (int i = 0; i < 2; i++) {
    hs__batch_free(&b[i]);
    hs__sampler_destroy(sm[i]);
  }
  hs__probe_close(&probe);
  for (int i = 0; i < 2; i++) hs__queue_release(&q[i]);
  if (ctx.ctx) hs__ctx_release(&ctx);
  free(seeds);
  free(used);
  return st;
}
