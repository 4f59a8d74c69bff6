/* hs_bench_run: the workloads of hetsage/bench.h on every selected device
 * scope, through the measuring cores of hs_measure.h. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/hs_bench_int.h"
#include "core/hs_engine.h"
#include "hetsage/session.h"

static const char *const workload_names[] = {"sample", "gather", "gemm", "train"};

const char *hs_bench_workload_name(hs_bench_workload w) {
  for (unsigned i = 0; i < 4; i++)
    if (w == (hs_bench_workload)(1u << i)) return workload_names[i];
  return w == HS_BENCH_ALL ? "all" : "unknown";
}

hs_status hs_bench_workloads_parse(const char *list, unsigned *out) {
  if (!out) return hs__fail(HS_ERR_INVALID_ARG, "hs_bench_workloads_parse: NULL out");
  *out = 0;
  if (!list || !*list) return hs__fail(HS_ERR_INVALID_ARG, "empty workload list");
  for (const char *s = list; *s;) {
    size_t n = strcspn(s, ",");
    bool known = false;
    if (n == 3 && strncmp(s, "all", 3) == 0) *out |= HS_BENCH_ALL, known = true;
    for (unsigned i = 0; i < 4 && !known; i++)
      if (strlen(workload_names[i]) == n && strncmp(s, workload_names[i], n) == 0)
        *out |= 1u << i, known = true;
    if (!known)
      return hs__fail(HS_ERR_INVALID_ARG,
                      "workload '%.*s': sample, gather, gemm, train or all", (int)n, s);
    s += n;
    if (*s == ',') s++;
  }
  return HS_OK;
}

void hs_bench_options_init(hs_bench_options *o) {
  if (!o) return;
  memset(o, 0, sizeof *o);
  o->workloads = HS_BENCH_ALL;
  o->runs = 5;
  o->warmup = 1;
  o->sub_devices = true;
  o->model = HS_MODEL_SAGE;
  o->heads = 4;
}

/* ---- scopes --------------------------------------------------------------------- */

typedef struct scope {
  char name[32];
  hs_dev dev;
  hs_ctx ctx;
  cl_command_queue q;
  bool sub;
  int index;
} scope;

typedef struct run_ctx {
  hs_runtime *rt;
  hs_bench_options o;
  hs_bench_results *r;
  hs_bench_progress_fn fn;
  void *user;
  scope *scopes;
  int n_scopes;
  hs_status st; /* first failure to store a figure */
} run_ctx;

static void emit(run_ctx *c, hs_bench_figure *f) {
  hs_status st = hs_bench_results_add(c->r, f);
  if (st != HS_OK && c->st == HS_OK) c->st = st;
  if (st == HS_OK && c->fn) c->fn(c->user, f);
}

static void fig_init(hs_bench_figure *f, const char *workload, const scope *s, const char *name,
                     const char *unit, bool lower, const char *limit) {
  memset(f, 0, sizeof *f);
  snprintf(f->workload, sizeof f->workload, "%s", workload);
  snprintf(f->device, sizeof f->device, "%s", s ? s->name : "host");
  if (s)
    snprintf(f->device_name, sizeof f->device_name, "%s%s", s->dev.info.name,
             s->sub ? " (sub-device)" : "");
  else
    snprintf(f->device_name, sizeof f->device_name, "host CPU");
  snprintf(f->name, sizeof f->name, "%s", name);
  snprintf(f->unit, sizeof f->unit, "%s", unit);
  f->lower_is_better = lower;
  snprintf(f->limit, sizeof f->limit, "%s", limit ? limit : "");
}

static void skip_note(const scope *s, const char *what) {
  hs__log(HS_LOG_DEVICE, "bench: %s on %s left out: %s", what, s ? s->name : "host",
          hs_last_error());
}

static hs_status parse_devices(const hs_runtime *rt, const char *spec, int n, bool *sel) {
  if (!spec || !*spec || strcmp(spec, "all") == 0) {
    for (int i = 0; i < n; i++) sel[i] = true;
    return HS_OK;
  }
  for (const char *s = spec; *s;) {
    size_t len = strcspn(s, ",");
    char item[64];
    snprintf(item, sizeof item, "%.*s", (int)(len < sizeof item ? len : sizeof item - 1), s);
    char *end = NULL;
    long v = strtol(item, &end, 10);
    int found = end != item && !*end && v >= 0 && v < n ? (int)v : -1;
    for (int i = 0; found < 0 && i < n; i++)
      if (strcmp(hs_runtime_device(rt, i)->selector, item) == 0) found = i;
    if (found < 0)
      return hs__fail(HS_ERR_INVALID_ARG,
                      "devices '%s': '%s' is neither an inventory index 0..%d nor a selector "
                      "(hetsage info: pocl:0, rusticl:0, ...)",
                      spec, item, n - 1);
    sel[found] = true;
    s += len;
    if (*s == ',') s++;
  }
  return HS_OK;
}

/* ---- sampling -------------------------------------------------------------------- */

static hs_status generated(run_ctx *c, hs_dataset **out) {
  char cache[900];
  hs_status st = hs__cache_dir_at(hs_runtime_settings(c->rt)->cache_dir, cache, sizeof cache);
  if (st != HS_OK) return st;
  int scale = c->o.quick ? 12 : 17;
  /* Bump the suffix when the options below change. */
  snprintf(c->r->dataset, sizeof c->r->dataset, "%s/bench-rmat-s%d-v1", cache, scale);
  if (hs_dataset_open(c->r->dataset, out) == HS_OK) return HS_OK;
  hs__clear_error();
  hs_generate_opts g;
  hs_generate_opts_init(&g, HS_GENERATE_RMAT);
  g.scale = scale;
  g.edge_factor = 16;
  g.num_features = 32;
  g.seed = 2024;
  g.force = true;
  if ((st = hs_generate(c->r->dataset, &g, NULL, NULL)) != HS_OK) return st;
  return hs_dataset_open(c->r->dataset, out);
}

static void sample_figures(run_ctx *c, const scope *s, const hs_sample_runs *sr, bool kernels) {
  hs_bench_figure f;
  fig_init(&f, "sample", s, "sampled_edges_per_s", "edges/s", false, "random_reads_per_s");
  hs__bench_figure_set(&f, sr->edges_s, sr->probe_s, sr->runs);
  snprintf(f.note, sizeof f.note, "%.0f edges, %.0f vertices a batch; wall time of whole batches",
           sr->edges_per_batch, sr->vertices_per_batch);
  emit(c, &f);
  if (kernels && !sr->kernel_times_real)
    hs__log(HS_LOG_DEVICE, "bench: %s: kernel-time figures left out: the device's profiling "
            "timestamps are not real time", s ? s->name : "host");
  if (!kernels || !sr->kernel_times_real) return;
  fig_init(&f, "sample", s, "sampling_kernel_edges_per_s", "edges/s", false, "random_reads_per_s");
  hs__bench_figure_set(&f, sr->kern_edges_s, sr->probe_s, sr->runs);
  snprintf(f.note, sizeof f.note, "sampling kernels' time (profiling events)");
  emit(c, &f);
  fig_init(&f, "sample", s, "reindex_vertices_per_s", "vertices/s", false, NULL);
  hs__bench_figure_set(&f, sr->reindex_v_s, NULL, sr->runs);
  snprintf(f.note, sizeof f.note, "reindex kernels' time (profiling events)");
  emit(c, &f);
}

static hs_status bench_sample(run_ctx *c) {
  hs_dataset *ds = NULL;
  hs_status st = generated(c, &ds);
  if (st != HS_OK) return st;
  const hs_graph *g = hs__dataset_graph(ds);
  hs_csr csr = {g->n, g->e, g->indptr, g->indices, NULL};
  static const int32_t fan[] = {15, 10, 5};
  hs_sample_cfg cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.n_layers = 3;
  memcpy(cfg.fanout, fan, sizeof fan);
  cfg.seed = 1;
  c->r->n_fanouts = 3;
  for (int i = 0; i < 3; i++) c->r->fanouts[i] = fan[i];
  int32_t batch = c->o.quick ? 256 : 1024;
  c->r->batch = batch;
  uint64_t words;
  uint64_t *arr = hs__probe_array(8 * ((uint64_t)g->n + 1) + 4 * (uint64_t)g->e, &words);
  hs_sample_runs sr;
  if (!arr) {
    st = hs__fail(HS_ERR_NOMEM, "probe array");
    goto done;
  }
  if (hs__measure_sample_ref(&csr, &cfg, batch, c->o.warmup, c->o.runs, arr, words, &sr) == HS_OK)
    sample_figures(c, NULL, &sr, false);
  else
    skip_note(NULL, "reference sampling");
  for (int i = 0; i < c->n_scopes; i++) {
    const scope *s = &c->scopes[i];
    int fanouts[3] = {fan[0], fan[1], fan[2]};
    hs_sample_hook hook = {c->o.sample_hook, c->o.sample_hook_user,
                           {.scope = s->name, .compute_units = s->dev.info.compute_units,
                            .dataset = c->r->dataset, .fanouts = fanouts, .n_fanouts = 3,
                            .batch = batch}};
    if (hs__measure_sample_device(&s->dev, &csr, &cfg, HS_STYLE_AUTO, 0, batch, c->o.warmup,
                                  c->o.runs, c->o.sample_hook ? &hook : NULL, &sr) == HS_OK)
      sample_figures(c, s, &sr, true);
    else
      skip_note(s, "sampling");
  }
done:
  free(arr);
  hs_dataset_close(ds);
  return st;
}

/* ---- gathering ------------------------------------------------------------------- */

static hs_status bench_gather(run_ctx *c) {
  size_t row = 512;
  size_t table_bytes = c->o.quick ? (size_t)64 << 20 : (size_t)512 << 20;
  size_t out_bytes = c->o.quick ? (size_t)8 << 20 : (size_t)64 << 20;
  int64_t n_rows = (int64_t)(table_bytes / row);
  int32_t n = (int32_t)(out_bytes / row);
  char *table = malloc(table_bytes), *outb = malloc(out_bytes);
  char *a = malloc(2 * out_bytes), *b = malloc(2 * out_bytes);
  int32_t *ids = malloc(sizeof *ids * (size_t)n);
  hs_gather_pool *pool = NULL;
  int threads = hs_runtime_host_cores(c->rt);
  hs_status st = table && outb && a && b && ids ? HS_OK : hs__fail(HS_ERR_NOMEM, "gather tables");
  if (st == HS_OK) st = hs__gather_pool_create(threads, &pool);
  if (st != HS_OK) goto done;
  memset(table, 1, table_bytes), memset(outb, 0, out_bytes);
  memset(a, 2, 2 * out_bytes), memset(b, 0, 2 * out_bytes);
  for (int32_t i = 0; i < n; i++)
    ids[i] = (int32_t)hs_philox_below(hs_philox_draw(9, 1, 0, 0, (uint32_t)i).v[0],
                                      (uint32_t)n_rows);
  hs_gather_req req = {table, row, n_rows, ids, n, outb, NULL, 0, NULL};
  hs_gather_runs gr;
  hs_bench_figure f;
  if (hs__measure_gather_host(pool, &req, a, b, 2 * out_bytes, c->o.warmup, c->o.runs, &gr) ==
      HS_OK) {
    fig_init(&f, "gather", NULL, "gather_bytes_per_s", "B/s", false, "copy_bytes_per_s");
    hs__bench_figure_set(&f, gr.gather_bps, gr.copy_bps, gr.runs);
    snprintf(f.note, sizeof f.note,
             "%d rows of %zu B from %zu MiB on %d thread(s); copy of %zu MiB; read + written", n,
             row, table_bytes >> 20, threads, (2 * out_bytes) >> 20);
    emit(c, &f);
  } else {
    skip_note(NULL, "host gather");
  }
  size_t dtable = c->o.quick ? (size_t)16 << 20 : (size_t)256 << 20;
  uint32_t dn = (uint32_t)((c->o.quick ? (size_t)4 << 20 : (size_t)32 << 20) / row);
  for (int i = 0; i < c->n_scopes; i++) {
    scope *s = &c->scopes[i];
    if (hs__measure_gather_device(&s->ctx, &s->dev, s->q, dtable, row, dn, c->o.warmup,
                                  c->o.runs, &gr) != HS_OK) {
      skip_note(s, "device gather");
      continue;
    }
    fig_init(&f, "gather", s, "device_gather_bytes_per_s", "B/s", false,
             "device_copy_bytes_per_s");
    hs__bench_figure_set(&f, gr.gather_bps, gr.copy_bps, gr.runs);
    snprintf(f.note, sizeof f.note,
             "%u rows of %zu B from a resident %zu MiB table; buffer copy of twice the rows", dn,
             row, dtable >> 20);
    emit(c, &f);
  }
done:
  hs__gather_pool_destroy(pool);
  free(table), free(outb), free(a), free(b), free(ids);
  return st;
}

/* ---- GEMM ------------------------------------------------------------------------- */

static void gemm_provider(run_ctx *c, scope *s, hs_gemm_kind kind) {
  hs_gemm *g = NULL;
  if (hs__gemm_create(&s->ctx, &s->dev, s->q, kind, 0, &g) != HS_OK) {
    skip_note(s, hs__gemm_kind_name(kind));
    return;
  }
  /* A smoke run's shapes: small enough for the slowest provider. */
  static const hs_gemm_shape smoke[] = {
      {false, false, 512, 64, 128, "fwd d_in 64 d_out 64"},
      {true, false, 128, 64, 512, "dW d_in 64 d_out 64"},
      {false, true, 512, 128, 64, "dX d_in 64 d_out 64"},
  };
  size_t n_shapes = c->o.quick ? HS_ARRAY_LEN(smoke) : hs__gemm_quick_count;
  int runs = c->o.runs, threads = (int)(s->dev.info.compute_units ? s->dev.info.compute_units : 1);
  double prov[HS_MEASURE_MAX_RUNS] = {0}, blas[HS_MEASURE_MAX_RUNS] = {0};
  double flops = 0;
  for (size_t k = 0; k < n_shapes; k++) {
    const hs_gemm_shape *sh = c->o.quick ? &smoke[k] : &hs__gemm_shapes[hs__gemm_quick_shapes[k]];
    double p[HS_MEASURE_MAX_RUNS], b[HS_MEASURE_MAX_RUNS];
    if (hs__measure_gemm(g, &s->ctx, s->q, sh, threads, c->o.warmup, runs, p, b) != HS_OK) {
      skip_note(s, hs__gemm_kind_name(kind));
      hs__gemm_destroy(g);
      return;
    }
    flops += 2.0 * (double)sh->m * (double)sh->n * (double)sh->k;
    for (int r = 0; r < runs; r++) prov[r] += p[r], blas[r] += b[r];
  }
  hs__gemm_destroy(g);
  /* OpenBLAS on the host is the limit of a CPU device only. */
  bool limit = hs__have_cblas() && s->dev.info.type == HS_DEVICE_CPU;
  for (int r = 0; r < runs; r++) {
    prov[r] = flops / prov[r];
    blas[r] = blas[r] > 0 ? flops / blas[r] : 0;
  }
  char name[64];
  snprintf(name, sizeof name, "sgemm_flops_per_s.%s", hs__gemm_kind_name(kind));
  hs_bench_figure f;
  fig_init(&f, "gemm", s, name, "FLOP/s", false, limit ? "openblas_flops_per_s" : NULL);
  hs__bench_figure_set(&f, prov, limit ? blas : NULL, runs);
  snprintf(f.note, sizeof f.note, "%zu GraphSAGE layer shapes (forward and backward)%s", n_shapes,
           limit ? "; OpenBLAS with as many threads as compute units" : "");
  emit(c, &f);
}

static hs_status bench_gemm(run_ctx *c) {
  static const hs_gemm_kind kinds[] = {HS_GEMM_CBLAS, HS_GEMM_CLBLAST, HS_GEMM_BUILTIN};
  for (int i = 0; i < c->n_scopes; i++)
    for (size_t k = 0; k < HS_ARRAY_LEN(kinds); k++) gemm_provider(c, &c->scopes[i], kinds[k]);
  return HS_OK;
}

/* ---- training --------------------------------------------------------------------- */

static void train_epochs(run_ctx *c, scope *s, hs_dataset *cora, const hs_board_profile *prof) {
  hs_board_profile *p = NULL;
  if (hs__board_profile_dup(prof, &p) != HS_OK) {
    hs__log(HS_LOG_TRAIN, "bench: train on %s skipped: %s", s->name, hs_last_error());
    return;
  }
  p->split.sub_devices = s->sub;
  char idx[16];
  snprintf(idx, sizeof idx, "%d", s->index);
  hs_session_config cfg;
  hs_session_config_init(&cfg);
  cfg.fanouts[0] = 10;
  cfg.fanouts[1] = 5;
  cfg.batch_size = 256;
  cfg.hidden = 64;
  cfg.seed = 1;
  cfg.model = c->o.model;
  cfg.heads = c->o.heads;
  cfg.profile = p;
  cfg.sampler = cfg.trainer = idx;
  hs_session *se = NULL;
  double wall[HS_MEASURE_MAX_RUNS], busiest[HS_MEASURE_MAX_RUNS];
  hs_epoch_stats es;
  hs_epoch_stats_init(&es);
  hs_status st = hs_session_create(c->rt, cora, &cfg, &se);
  hs_board_profile_free(p); /* borrowed by the creation only */
  for (int r = -c->o.warmup; st == HS_OK && r < c->o.runs; r++) {
    if ((st = hs_session_train_epoch(se, &es)) != HS_OK || r < 0) continue;
    wall[r] = es.wall_s;
    busiest[r] = 0;
    for (int k = 0; k < HS_STAGE_COUNT_; k++)
      if (es.stage_busy_s[k] > busiest[r]) busiest[r] = es.stage_busy_s[k];
  }
  hs_session_destroy(se);
  if (st != HS_OK) {
    skip_note(s, "training epochs");
    return;
  }
  hs_bench_figure f;
  fig_init(&f, "train", s, "epoch_s", "s", true, "busiest_stage_s");
  hs__bench_figure_set(&f, wall, busiest, c->o.runs);
  snprintf(f.note, sizeof f.note,
           "an epoch of Cora, %s, batches of 256, fanouts 10,5; %s; %s pipeline; ratio 1.0 "
           "= perfect overlap",
           hs_model_kind_name(c->o.model), s->sub ? "roles on two sub-devices" : "both roles on the whole device",
           hs_pipeline_mode_name(es.pipeline));
  emit(c, &f);
}

static void train_step(run_ctx *c, scope *s) {
  hs_train_runs tr;
  if (hs__measure_train_step(&s->ctx, &s->dev, &hs__train_shapes[0], (int)c->o.model,
                             c->o.heads, 0, c->o.warmup, c->o.runs, &tr) != HS_OK) {
    skip_note(s, "training step");
    return;
  }
  bool limit = tr.gemm_floor_s > 0 && s->dev.info.type == HS_DEVICE_CPU;
  double floor_s[HS_MEASURE_MAX_RUNS];
  for (int r = 0; r < c->o.runs; r++) floor_s[r] = tr.gemm_floor_s;
  hs_bench_figure f;
  fig_init(&f, "train", s, "step_s", "s", true, limit ? "gemm_floor_s" : NULL);
  hs__bench_figure_set(&f, tr.step_s, limit ? floor_s : NULL, c->o.runs);
  snprintf(f.note, sizeof f.note,
           "a %s training step, %s shape (batch %d, %d layers), gemm %s%s",
           hs_model_kind_name(c->o.model), hs__train_shapes[0].name,
           hs__train_shapes[0].batch, hs__train_shapes[0].n_layers, hs__gemm_kind_name(tr.gemm),
           limit ? "; limit: its GEMMs by OpenBLAS on as many threads" : "");
  emit(c, &f);
}

static hs_status bench_train(run_ctx *c) {
  char dir[1024];
  hs_dataset *cora = NULL;
  hs_board_profile *own = NULL;
  const hs_board_profile *prof = c->o.profile ? c->o.profile : hs_runtime_board(c->rt);
  hs_status st = hs_dataset_bundled(c->rt, "cora", dir, sizeof dir);
  if (st == HS_OK) st = hs_dataset_open(dir, &cora);
  if (st == HS_OK && !prof && (st = hs_board_profile_load_from(hs_runtime_settings(c->rt)->boards_dir, NULL, &own)) == HS_OK)
    prof = own;
  if (st != HS_OK) goto done;
  for (int i = 0; i < c->n_scopes; i++) {
    if (c->scopes[i].dev.info.simulator) {
      /* Cora's 1433-wide layers take hours to simulate, and a simulator's
       * speed says nothing about hardware. */
      hs__fail(HS_ERR_UNSUPPORTED, "'%s' is a simulator", c->scopes[i].dev.info.name);
      skip_note(&c->scopes[i], "training");
      continue;
    }
    train_step(c, &c->scopes[i]);
    train_epochs(c, &c->scopes[i], cora, prof);
  }
done:
  hs_dataset_close(cora);
  hs_board_profile_free(own);
  return st;
}

/* ---- the run ---------------------------------------------------------------------- */

hs_status hs_bench_run(hs_runtime *rt, const hs_bench_options *opts, hs_bench_progress_fn fn,
                       void *user, hs_bench_results **out) {
  if (!rt || !out) return hs__fail(HS_ERR_INVALID_ARG, "hs_bench_run: NULL argument");
  *out = NULL;
  run_ctx c = {.rt = rt, .fn = fn, .user = user, .st = HS_OK};
  hs_bench_options_init(&c.o);
  if (opts) c.o = *opts;
  if (!c.o.workloads) c.o.workloads = HS_BENCH_ALL;
  if (c.o.runs < 1 || c.o.runs > HS_MEASURE_MAX_RUNS || c.o.warmup < 0 || c.o.warmup > 16 ||
      (c.o.workloads & ~(unsigned)HS_BENCH_ALL))
    return hs__fail(HS_ERR_INVALID_ARG, "benchmark options: runs %d (1..%d), warmup %d (0..16)",
                    c.o.runs, HS_MEASURE_MAX_RUNS, c.o.warmup);
  int n = hs_runtime_device_count(rt);
  bool *sel = calloc((size_t)n + 1, sizeof *sel);
  hs_dev(*subs)[2] = calloc((size_t)n + 1, sizeof *subs);
  bool *have_subs = calloc((size_t)n + 1, sizeof *have_subs);
  c.scopes = calloc(2 * (size_t)n + 1, sizeof *c.scopes);
  c.r = hs__bench_results_new();
  hs_status st = sel && subs && have_subs && c.scopes && c.r
                     ? HS_OK
                     : hs__fail(HS_ERR_NOMEM, "benchmark run");
  if (st == HS_OK) st = parse_devices(rt, c.o.devices, n, sel);
  if (st != HS_OK) goto done;
  c.r->runs = c.o.runs;
  c.r->warmup = c.o.warmup;
  c.r->quick = c.o.quick;
  for (int i = 0; i < n; i++) {
    const hs_dev *d = hs__runtime_dev(rt, i);
    if (!sel[i] || !d->info.available) continue;
    scope *s = &c.scopes[c.n_scopes];
    snprintf(s->name, sizeof s->name, "dev%d", i);
    s->dev = *d;
    s->index = i;
    if (hs__ctx_create(&s->dev, 1, &s->ctx) != HS_OK ||
        hs__queue_create(&s->ctx, &s->dev, HS_QUEUE_PROFILING, &s->q) != HS_OK) {
      skip_note(s, "every workload");
      hs__queue_release(&s->q);
      hs__ctx_release(&s->ctx);
      continue;
    }
    c.n_scopes++;
    unsigned cu = d->info.compute_units;
    if (!c.o.sub_devices || d->info.type != HS_DEVICE_CPU || !d->info.partition_by_counts ||
        cu < 2)
      continue;
    unsigned counts[2] = {cu / 2, cu - cu / 2};
    if (hs__subdevices_create(d, counts, 2, subs[i]) != HS_OK) {
      skip_note(s, "a sub-device");
      continue;
    }
    have_subs[i] = true;
    scope *u = &c.scopes[c.n_scopes];
    snprintf(u->name, sizeof u->name, "dev%d.sub%u", i, counts[0]);
    u->dev = subs[i][0];
    u->sub = true;
    u->index = i;
    if (hs__ctx_create(&u->dev, 1, &u->ctx) != HS_OK ||
        hs__queue_create(&u->ctx, &u->dev, HS_QUEUE_PROFILING, &u->q) != HS_OK) {
      skip_note(u, "every workload");
      hs__queue_release(&u->q);
      hs__ctx_release(&u->ctx);
      continue;
    }
    c.n_scopes++;
  }
  if (c.n_scopes == 0) {
    st = hs__fail(HS_ERR_NO_DEVICE, "benchmark: no selected device could be opened");
    goto done;
  }
  if ((c.o.workloads & HS_BENCH_SAMPLE) && (st = bench_sample(&c)) != HS_OK) goto done;
  if ((c.o.workloads & HS_BENCH_GATHER) && (st = bench_gather(&c)) != HS_OK) goto done;
  if ((c.o.workloads & HS_BENCH_GEMM) && (st = bench_gemm(&c)) != HS_OK) goto done;
  if ((c.o.workloads & HS_BENCH_TRAIN) && (st = bench_train(&c)) != HS_OK) goto done;
  st = c.st;
done:
  for (int i = 0; c.scopes && i < c.n_scopes; i++) {
    hs__queue_release(&c.scopes[i].q);
    hs__ctx_release(&c.scopes[i].ctx);
  }
  for (int i = 0; have_subs && i < n; i++)
    if (have_subs[i]) hs__subdevices_release(subs[i], 2);
  free(sel), free(subs), free(have_subs), free(c.scopes);
  if (st != HS_OK) {
    hs_bench_results_free(c.r);
    return st;
  }
  *out = c.r;
  return HS_OK;
}
