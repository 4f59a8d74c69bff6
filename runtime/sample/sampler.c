/* The sampler on an OpenCL device (see hs_sampler.h). Per hop the host
 * learns two or three counts (edges sampled, vertices met, edges kept) to
 * size the next launches; everything else stays on the device until the
 * block is read back. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "hs_launch.h"
#include "hs_sampler.h"

enum {
  K_COUNT,
  K_ROWS,
  K_SAMPLE_SINGLE,
  K_SCAN_PARTIALS,
  K_SCAN_SPINE,
  K_SCAN_APPLY,
  K_SEED,
  K_CLAIM,
  K_MARK,
  K_ASSIGN,
  K_EMIT,
  K_FORGET,
  K_COMPACT_COLS,
  K_COMPACT_ROWS,
  K_RESET,
  K_REINDEX_SINGLE,
  K_N_
};

static const char *const kernel_names[K_N_] = {
    "hs_sample_count",   "hs_sample_rows",    "hs_sample_single", "hs_scan_partials",
    "hs_scan_spine",     "hs_scan_apply",     "hs_reindex_seed",  "hs_reindex_claim",
    "hs_reindex_mark",   "hs_reindex_assign", "hs_reindex_emit",  "hs_reindex_forget",
    "hs_compact_cols",   "hs_compact_rows",   "hs_reindex_reset", "hs_reindex_single",
};

static const char *const program_sources[] = {
    "hs_common.h", "hs_philox.h", "hs_sample_rng.h", "sample.cl", "scan.cl", "reindex.cl",
};

#define TOPO_PARTS 4         /* part buffers a kernel takes */
#define SCAN_MAX_PARTS 4096  /* partial sums of one scan */
#define SCAN_MIN_CHUNK 256   /* elements per partial sum, at least */
#define MAX_GLOBAL (1u << 22) /* grid-stride kernels need no more items */
#define MAX_EVENTS 256
/* Work-group size when none is asked for. Always passing one matters: a
 * runtime left to choose (PoCL) picks a divisor of each global size and
 * compiles the kernel again for every new one. */
#define DEFAULT_WG 64
/* Rows one work-item samples on CPU devices (see hs_sample_rows). */
#define CPU_ROWS_PER_ITEM 16

/* Argument positions of the three sampling kernels: topology (0..9),
 * parameters, then each kernel's own (see sample.cl). */
enum { A_SEED = 10, A_EPOCH, A_BATCH, A_HOP, A_FANOUT, A_MODE, A_REPLACE, A_TBITS,
       A_IDS, A_NDST, A_OWN };

struct hs_sampler {
  hs_ctx ctx;
  hs_dev dev;
  cl_command_queue q;
  hs_sample_cfg cfg;
  hs_sampler_opts opts;
  hs_sampler_style style;
  size_t wg; /* NDRange work-group size in use */
  hs_batch_caps caps;
  int64_t n_graph;
  cl_program prog;
  cl_kernel k[K_N_];
  cl_mem indptr;
  hs_split_buf idx, wt;
  cl_mem wt_dummy;
  /* per batch */
  cl_mem ids, cnt, row_start, row_deg, nbr, keys, flag, col, keep, col_out, part, single_out,
      sink;
  /* per vertex of the graph: (local id, first position) pairs */
  cl_mem state;
  cl_uint rows_per_item;
  int32_t *seed_scratch;
  cl_event ev[MAX_EVENTS];
  bool ev_sample[MAX_EVENTS];
  int n_ev;
  hs_sampler_stats stats;
};

/* ---- small helpers --------------------------------------------------------- */

static hs_status set_arg(hs_sampler *s, int kid, cl_uint i, size_t size, const void *v) {
  cl_int err = clSetKernelArg(s->k[kid], i, size, v);
  if (err == CL_SUCCESS) return HS_OK;
  hs__cl_fail(err, "clSetKernelArg", s->dev.id);
  return hs__fail_context(HS_ERR_OPENCL, "%s argument %u", kernel_names[kid], i);
}

#define ARG(kid, i, v)                                        \
  do {                                                        \
    hs_status st_ = set_arg(s, (kid), (i), sizeof(v), &(v));  \
    if (st_ != HS_OK) return st_;                             \
  } while (0)

static hs_status flush_events(hs_sampler *s) {
  for (int i = 0; i < s->n_ev; i++) {
    cl_ulong t0 = 0, t1 = 0;
    cl_int err = clWaitForEvents(1, &s->ev[i]);
    if (err == CL_SUCCESS)
      err = clGetEventProfilingInfo(s->ev[i], CL_PROFILING_COMMAND_START, sizeof t0, &t0, NULL);
    if (err == CL_SUCCESS)
      err = clGetEventProfilingInfo(s->ev[i], CL_PROFILING_COMMAND_END, sizeof t1, &t1, NULL);
    if (err == CL_SUCCESS) {
      double dt = (double)(t1 - t0) * 1e-9;
      if (s->ev_sample[i]) s->stats.sample_s += dt;
      else s->stats.reindex_s += dt;
    }
    clReleaseEvent(s->ev[i]);
  }
  s->n_ev = 0;
  return HS_OK;
}

/* Enqueue kernel `kid` over n items (grid-stride kernels: any count of
 * work-items covers them). Single work-item style launches one item. */
static hs_status launch(hs_sampler *s, int kid, size_t n, bool sample_phase) {
  if (n == 0) return HS_OK;
  size_t global = n < MAX_GLOBAL ? n : MAX_GLOBAL, local = 1;
  bool one = s->style == HS_STYLE_SINGLE || kid == K_SCAN_SPINE || kid == K_SAMPLE_SINGLE ||
             kid == K_REINDEX_SINGLE;
  if (one) {
    global = 1;
  } else {
    local = s->wg;
    global = (global + local - 1) / local * local;
  }
  if (s->opts.profile && s->n_ev == MAX_EVENTS) flush_events(s);
  cl_event ev = NULL;
  cl_int err = clEnqueueNDRangeKernel(s->q, s->k[kid], 1, NULL, &global, &local, 0, NULL,
                                      s->opts.profile ? &ev : NULL);
  if (err != CL_SUCCESS) {
    hs__cl_fail(err, "clEnqueueNDRangeKernel", s->dev.id);
    return hs__fail_context(HS_ERR_OPENCL, "%s over %zu items (local %zu)", kernel_names[kid],
                            global, local);
  }
  if (ev) {
    s->ev[s->n_ev] = ev;
    s->ev_sample[s->n_ev++] = sample_phase;
  }
  return HS_OK;
}

static hs_status read_buf(hs_sampler *s, cl_mem b, size_t off, size_t bytes, void *dst,
                          bool blocking) {
  if (bytes == 0) return HS_OK;
  cl_int err = clEnqueueReadBuffer(s->q, b, blocking ? CL_TRUE : CL_FALSE, off, bytes, dst, 0,
                                   NULL, NULL);
  return err == CL_SUCCESS ? HS_OK : hs__cl_fail(err, "clEnqueueReadBuffer", s->dev.id);
}

static hs_status read_u32(hs_sampler *s, cl_mem b, size_t index, cl_uint *v) {
  return read_buf(s, b, index * sizeof(cl_uint), sizeof(cl_uint), v, true);
}

/* Exclusive scan of buf[0..n) in place, total to buf[n]. */
static hs_status scan(hs_sampler *s, cl_mem buf, cl_uint n, bool sample_phase) {
  cl_uint parts = s->style == HS_STYLE_SINGLE ? 1 : n / SCAN_MIN_CHUNK;
  if (parts < 1) parts = 1;
  if (parts > SCAN_MAX_PARTS) parts = SCAN_MAX_PARTS;
  cl_uint chunk = n == 0 ? 1 : (n + parts - 1) / parts;
  parts = n == 0 ? 1 : (n + chunk - 1) / chunk;
  ARG(K_SCAN_PARTIALS, 0, buf);
  ARG(K_SCAN_PARTIALS, 1, n);
  ARG(K_SCAN_PARTIALS, 2, chunk);
  ARG(K_SCAN_PARTIALS, 3, parts);
  ARG(K_SCAN_PARTIALS, 4, s->part);
  ARG(K_SCAN_SPINE, 0, s->part);
  ARG(K_SCAN_SPINE, 1, parts);
  ARG(K_SCAN_APPLY, 0, buf);
  ARG(K_SCAN_APPLY, 1, n);
  ARG(K_SCAN_APPLY, 2, chunk);
  ARG(K_SCAN_APPLY, 3, parts);
  ARG(K_SCAN_APPLY, 4, s->part);
  hs_status st = launch(s, K_SCAN_PARTIALS, parts, sample_phase);
  if (st == HS_OK) st = launch(s, K_SCAN_SPINE, 1, sample_phase);
  if (st == HS_OK) st = launch(s, K_SCAN_APPLY, parts, sample_phase);
  return st;
}

/* ---- creation ---------------------------------------------------------------- */

static hs_status make_buf(hs_sampler *s, size_t bytes, cl_mem *out) {
  if (bytes == 0) bytes = 8; /* OpenCL forbids empty buffers */
  if (bytes > hs__max_alloc(&s->dev))
    return hs__fail(HS_ERR_UNSUPPORTED, "sampler: %zu-byte array exceeds the max allocation "
                    "(%zu bytes) of '%s'", bytes, hs__max_alloc(&s->dev), s->dev.info.name);
  cl_int err;
  *out = clCreateBuffer(s->ctx.ctx, CL_MEM_READ_WRITE, bytes, NULL, &err);
  return err == CL_SUCCESS ? HS_OK : hs__cl_fail(err, "clCreateBuffer", s->dev.id);
}

/* Every vertex: not met (-1), no first position (INT_MAX). */
static hs_status clear_state(hs_sampler *s) {
  cl_int pair[2] = {-1, INT_MAX};
  if (s->n_graph == 0) return HS_OK;
  cl_int err = clEnqueueFillBuffer(s->q, s->state, pair, sizeof pair, 0,
                                   sizeof pair * (size_t)s->n_graph, 0, NULL, NULL);
  return err == CL_SUCCESS ? HS_OK : hs__cl_fail(err, "clEnqueueFillBuffer", s->dev.id);
}

static hs_status upload_split(hs_sampler *s, const void *src, size_t bytes, hs_split_buf *buf) {
  hs_status st = hs__split_buf_create(&s->ctx, &s->dev, CL_MEM_READ_ONLY, bytes, 4, buf);
  if (st != HS_OK) return st;
  if (buf->n_parts > TOPO_PARTS)
    return hs__fail(HS_ERR_UNSUPPORTED, "sampler: %zu-byte array needs %d allocations on '%s'; "
                    "the kernels take at most %d", bytes, buf->n_parts, s->dev.info.name,
                    TOPO_PARTS);
  return hs__split_buf_write(s->q, buf, 0, bytes, src);
}

static cl_mem part_or_first(const hs_split_buf *b, int i) {
  return i < b->n_parts ? b->parts[i] : b->parts[0];
}

static hs_status set_topology_args(hs_sampler *s) {
  const hs_split_buf *wt = s->wt.n_parts ? &s->wt : NULL;
  cl_ulong part_elems = s->idx.part_bytes / 4;
  if (part_elems == 0) part_elems = 1;
  int kids[] = {K_COUNT, K_ROWS, K_SAMPLE_SINGLE};
  for (size_t j = 0; j < HS_ARRAY_LEN(kids); j++) {
    int kid = kids[j];
    ARG(kid, 0, s->indptr);
    for (int i = 0; i < TOPO_PARTS; i++) {
      cl_mem ix = part_or_first(&s->idx, i);
      cl_mem w = wt ? part_or_first(wt, i) : s->wt_dummy;
      ARG(kid, (cl_uint)(1 + i), ix);
      ARG(kid, (cl_uint)(1 + TOPO_PARTS + i), w);
    }
    ARG(kid, 9, part_elems);
    cl_ulong seed = s->cfg.seed;
    cl_uint mode = (cl_uint)s->cfg.mode, replace = s->cfg.replace;
    ARG(kid, A_SEED, seed);
    ARG(kid, A_MODE, mode);
    ARG(kid, A_REPLACE, replace);
  }
  return HS_OK;
}

hs_status hs__sampler_save_binary(const hs_ctx *ctx, const hs_dev *dev, const char *path) {
  cl_program prog;
  hs_status st = hs__program_build(ctx, dev, program_sources, (int)HS_ARRAY_LEN(program_sources),
                                   "", &prog, NULL);
  if (st != HS_OK) return st;
  st = hs__program_save_binary(prog, dev, path);
  hs__program_release(&prog);
  return st;
}

static hs_status build(hs_sampler *s) {
  hs_status st =
      s->opts.binary ? hs__program_from_binary_file(&s->ctx, &s->dev, s->opts.binary, "", &s->prog)
                : hs__program_build(&s->ctx, &s->dev, program_sources,
                                    (int)HS_ARRAY_LEN(program_sources), "", &s->prog, NULL);
  for (int i = 0; i < K_N_ && st == HS_OK; i++)
    st = hs__kernel_create(s->prog, kernel_names[i], &s->dev, &s->k[i]);
  if (st != HS_OK) return st;
  return hs__sampler_set_work_group(s, s->opts.work_group_size);
}

static hs_status allocate(hs_sampler *s, const hs_csr *g) {
  size_t n = (size_t)g->n, e = (size_t)g->e;
  int32_t max_dst = 0, max_e = 0;
  for (int h = 0; h < s->caps.n_layers; h++) {
    if (s->caps.dst[h] > max_dst) max_dst = s->caps.dst[h];
    if (s->caps.edges[h] > max_e) max_e = s->caps.edges[h];
  }
  size_t E = (size_t)max_e + 1;
  bool keyed = s->cfg.mode != HS_SAMPLE_UNIFORM && !s->cfg.replace;
  hs_status st = make_buf(s, 8 * (n + 1), &s->indptr);
  if (st == HS_OK) {
    cl_int err = clEnqueueWriteBuffer(s->q, s->indptr, CL_TRUE, 0, 8 * (n + 1), g->indptr, 0,
                                      NULL, NULL);
    if (err != CL_SUCCESS) st = hs__cl_fail(err, "clEnqueueWriteBuffer", s->dev.id);
  }
  if (st == HS_OK) st = upload_split(s, g->indices, 4 * e, &s->idx);
  if (st == HS_OK && g->weights) st = upload_split(s, g->weights, 4 * e, &s->wt);
  if (st == HS_OK && !g->weights) st = make_buf(s, 4, &s->wt_dummy);
  if (st == HS_OK) st = make_buf(s, 4 * (size_t)s->caps.vertices, &s->ids);
  if (st == HS_OK) st = make_buf(s, 4 * ((size_t)max_dst + 1), &s->cnt);
  if (st == HS_OK) st = make_buf(s, 8 * ((size_t)max_dst + 1), &s->row_start);
  if (st == HS_OK) st = make_buf(s, 4 * ((size_t)max_dst + 1), &s->row_deg);
  if (st == HS_OK) st = make_buf(s, 4, &s->sink);
  if (st == HS_OK) st = make_buf(s, 4 * E, &s->nbr);
  if (st == HS_OK) st = make_buf(s, keyed ? 8 * E : 8, &s->keys);
  if (st == HS_OK) st = make_buf(s, 4 * E, &s->flag);
  if (st == HS_OK) st = make_buf(s, 4 * E, &s->col);
  if (st == HS_OK) st = make_buf(s, 4 * E, &s->keep);
  if (st == HS_OK) st = make_buf(s, s->cfg.max_vertices > 0 ? 4 * E : 4, &s->col_out);
  if (st == HS_OK) st = make_buf(s, 4 * (SCAN_MAX_PARTS + 1), &s->part);
  if (st == HS_OK) st = make_buf(s, 4 * 4, &s->single_out);
  if (st == HS_OK) st = make_buf(s, 8 * n, &s->state);
  if (st == HS_OK) st = clear_state(s);
  if (st == HS_OK) {
    s->seed_scratch = malloc(sizeof(int32_t) * (size_t)s->caps.seeds);
    if (!s->seed_scratch) st = hs__fail(HS_ERR_NOMEM, "sampler");
  }
  if (st == HS_OK) {
    cl_int err = clFinish(s->q);
    if (err != CL_SUCCESS) st = hs__cl_fail(err, "clFinish", s->dev.id);
  }
  return st;
}

hs_status hs__sampler_create(const hs_ctx *ctx, const hs_dev *dev, cl_command_queue queue,
                             const hs_csr *g, const hs_sample_cfg *cfg,
                             const hs_sampler_opts *opts, hs_sampler **out) {
  *out = NULL;
  hs_sampler *s = calloc(1, sizeof *s);
  if (!s) return hs__fail(HS_ERR_NOMEM, "sampler");
  s->ctx = *ctx;
  s->dev = *dev;
  s->q = queue;
  s->cfg = *cfg;
  s->opts = *opts;
  s->n_graph = g->n;
  s->style = opts->style;
  if (s->style == HS_STYLE_AUTO)
    s->style = dev->info.type == HS_DEVICE_ACCELERATOR ? HS_STYLE_SINGLE : HS_STYLE_NDRANGE;
  s->rows_per_item = opts->rows_per_item;
  if (s->rows_per_item == 0)
    s->rows_per_item = dev->info.type == HS_DEVICE_CPU ? CPU_ROWS_PER_ITEM : 1;
  hs_status st = hs__csr_validate(g);
  if (st == HS_OK) st = hs__sample_cfg_check(cfg, g);
  if (st == HS_OK)
    st = hs__batch_caps(cfg, g, hs__csr_max_degree(g), opts->max_seeds, &s->caps);
  if (st == HS_OK) st = build(s);
  if (st == HS_OK) st = allocate(s, g);
  if (st == HS_OK) st = set_topology_args(s);
  if (st != HS_OK) {
    hs__sampler_destroy(s);
    return hs__fail_context(st, "sampler on '%s'", dev->info.name);
  }
  hs__log(HS_LOG_SAMPLE, "sampler on '%s': %s style, %d layers, caps %d vertices", dev->info.name,
          s->style == HS_STYLE_SINGLE ? "single work-item" : "NDRange", cfg->n_layers,
          s->caps.vertices);
  *out = s;
  return HS_OK;
}

void hs__sampler_destroy(hs_sampler *s) {
  if (!s) return;
  if (s->q) clFinish(s->q);
  flush_events(s);
  cl_mem bufs[] = {s->indptr,     s->wt_dummy, s->ids,  s->cnt,     s->row_start,
                   s->row_deg,    s->nbr,      s->keys, s->flag,    s->col,
                   s->keep,       s->col_out,  s->part, s->single_out, s->sink,
                   s->state};
  for (size_t i = 0; i < HS_ARRAY_LEN(bufs); i++)
    if (bufs[i]) clReleaseMemObject(bufs[i]);
  hs__split_buf_release(&s->idx);
  hs__split_buf_release(&s->wt);
  for (int i = 0; i < K_N_; i++)
    if (s->k[i]) clReleaseKernel(s->k[i]);
  if (s->prog) clReleaseProgram(s->prog);
  free(s->seed_scratch);
  free(s);
}

const hs_batch_caps *hs__sampler_caps(const hs_sampler *s) { return &s->caps; }

hs_sampler_style hs__sampler_style(const hs_sampler *s) { return s->style; }

hs_status hs__sampler_set_work_group(hs_sampler *s, size_t wg) {
  size_t lim = s->dev.info.max_work_group_size;
  for (int i = 0; i < K_N_; i++) {
    size_t k_lim = 0;
    cl_int err = clGetKernelWorkGroupInfo(s->k[i], s->dev.id, CL_KERNEL_WORK_GROUP_SIZE,
                                          sizeof k_lim, &k_lim, NULL);
    if (err != CL_SUCCESS) return hs__cl_fail(err, "clGetKernelWorkGroupInfo", s->dev.id);
    if (k_lim < lim) lim = k_lim;
  }
  if (wg == 0) wg = DEFAULT_WG < lim ? DEFAULT_WG : lim;
  if (wg == 0 || wg > lim)
    return hs__fail(HS_ERR_UNSUPPORTED, "work-group size %zu: '%s' allows 1 to %zu here", wg,
                    s->dev.info.name, lim);
  s->wg = wg;
  return HS_OK;
}

void hs__sampler_stats(const hs_sampler *s, hs_sampler_stats *out) { *out = s->stats; }

/* ---- one batch ------------------------------------------------------------------ */

static hs_status set_hop_params(hs_sampler *s, int kid, uint32_t epoch, uint32_t batch, int h) {
  cl_uint ep = epoch, ba = batch, hop = (cl_uint)h, tbits;
  cl_int fanout = s->cfg.fanout[h];
  memcpy(&tbits, &s->cfg.threshold[h], sizeof tbits);
  ARG(kid, A_EPOCH, ep);
  ARG(kid, A_BATCH, ba);
  ARG(kid, A_HOP, hop);
  ARG(kid, A_FANOUT, fanout);
  ARG(kid, A_TBITS, tbits);
  return HS_OK;
}

static hs_status over_capacity(int h, cl_uint e, int32_t cap) {
  return hs__fail(HS_ERR_RANGE, "hop %d sampled %u edges, over its capacity %d", h, e, cap);
}

/* NDRange hop: count, offsets, sample; then first appearances by
 * atomic_min, ranks by a scan, and compaction when the budget cut edges. */
static hs_status hop_ndrange(hs_sampler *s, int h, cl_uint n, cl_uint limit, hs_block *blk,
                             cl_uint *n_after) {
  hs_status st;
  cl_uint e = 0, n_new = 0, kept;
  ARG(K_COUNT, A_IDS, s->ids);
  ARG(K_COUNT, A_NDST, n);
  ARG(K_COUNT, A_OWN, s->cnt);
  ARG(K_COUNT, A_OWN + 1, s->row_start);
  ARG(K_COUNT, A_OWN + 2, s->row_deg);
  if ((st = launch(s, K_COUNT, n, true)) || (st = scan(s, s->cnt, n, true)) ||
      (st = read_u32(s, s->cnt, n, &e)))
    return st;
  if (e > (cl_uint)s->caps.edges[h]) return over_capacity(h, e, s->caps.edges[h]);
  s->stats.edges += e;
  ARG(K_ROWS, A_IDS, s->ids);
  ARG(K_ROWS, A_NDST, n);
  ARG(K_ROWS, A_OWN, s->cnt);
  ARG(K_ROWS, A_OWN + 1, s->nbr);
  ARG(K_ROWS, A_OWN + 2, s->keys);
  ARG(K_ROWS, A_OWN + 3, s->row_start);
  ARG(K_ROWS, A_OWN + 4, s->row_deg);
  ARG(K_ROWS, A_OWN + 5, s->rows_per_item);
  ARG(K_ROWS, A_OWN + 6, s->sink);
  ARG(K_CLAIM, 0, s->nbr);
  ARG(K_CLAIM, 1, e);
  ARG(K_CLAIM, 2, s->state);
  ARG(K_CLAIM, 3, s->rows_per_item);
  ARG(K_CLAIM, 4, s->sink);
  ARG(K_MARK, 0, s->nbr);
  ARG(K_MARK, 1, e);
  ARG(K_MARK, 2, s->state);
  ARG(K_MARK, 3, s->flag);
  cl_uint items = (n + s->rows_per_item - 1) / s->rows_per_item;
  if ((st = launch(s, K_ROWS, items, true)) || (st = launch(s, K_CLAIM, (e + s->rows_per_item - 1) / s->rows_per_item, false)) ||
      (st = launch(s, K_MARK, e, false)) || (st = scan(s, s->flag, e, false)) ||
      (st = read_u32(s, s->flag, e, &n_new)))
    return st;
  cl_uint admitted = n_new < limit - n ? n_new : limit - n;
  ARG(K_ASSIGN, 0, s->nbr);
  ARG(K_ASSIGN, 1, e);
  ARG(K_ASSIGN, 2, s->flag);
  ARG(K_ASSIGN, 3, n);
  ARG(K_ASSIGN, 4, limit);
  ARG(K_ASSIGN, 5, s->state);
  ARG(K_ASSIGN, 6, s->ids);
  ARG(K_EMIT, 0, s->nbr);
  ARG(K_EMIT, 1, e);
  ARG(K_EMIT, 2, s->state);
  ARG(K_EMIT, 3, s->col);
  ARG(K_EMIT, 4, s->keep);
  if ((st = launch(s, K_ASSIGN, e, false)) || (st = launch(s, K_EMIT, e, false))) return st;
  cl_mem col = s->col;
  kept = e;
  if (admitted < n_new) { /* the budget cut: forget the rejected, drop their edges */
    cl_uint rows = n + 1;
    ARG(K_FORGET, 0, s->nbr);
    ARG(K_FORGET, 1, e);
    ARG(K_FORGET, 2, s->flag);
    ARG(K_FORGET, 3, s->state);
    ARG(K_COMPACT_COLS, 0, s->col);
    ARG(K_COMPACT_COLS, 1, e);
    ARG(K_COMPACT_COLS, 2, s->keep);
    ARG(K_COMPACT_COLS, 3, s->col_out);
    ARG(K_COMPACT_ROWS, 0, s->cnt);
    ARG(K_COMPACT_ROWS, 1, rows);
    ARG(K_COMPACT_ROWS, 2, s->keep);
    if ((st = launch(s, K_FORGET, e, false)) || (st = scan(s, s->keep, e, false)) ||
        (st = launch(s, K_COMPACT_COLS, e, false)) ||
        (st = launch(s, K_COMPACT_ROWS, rows, false)) || (st = read_u32(s, s->keep, e, &kept)))
      return st;
    col = s->col_out;
  }
  if ((st = read_buf(s, s->cnt, 0, 4 * ((size_t)n + 1), blk->row_ptr, false)) ||
      (st = read_buf(s, col, 0, 4 * (size_t)kept, blk->col, false)))
    return st;
  *n_after = n + admitted;
  return HS_OK;
}

/* Single work-item hop: two sequential kernels, one count read back. */
static hs_status hop_single(hs_sampler *s, int h, cl_uint n, cl_uint limit, hs_block *blk,
                            cl_uint *n_after) {
  hs_status st;
  ARG(K_SAMPLE_SINGLE, A_IDS, s->ids);
  ARG(K_SAMPLE_SINGLE, A_NDST, n);
  ARG(K_SAMPLE_SINGLE, A_OWN, s->cnt);
  ARG(K_SAMPLE_SINGLE, A_OWN + 1, s->nbr);
  ARG(K_SAMPLE_SINGLE, A_OWN + 2, s->keys);
  ARG(K_REINDEX_SINGLE, 0, s->nbr);
  ARG(K_REINDEX_SINGLE, 1, s->cnt);
  ARG(K_REINDEX_SINGLE, 2, n);
  ARG(K_REINDEX_SINGLE, 3, n);
  ARG(K_REINDEX_SINGLE, 4, limit);
  ARG(K_REINDEX_SINGLE, 5, s->state);
  ARG(K_REINDEX_SINGLE, 6, s->ids);
  ARG(K_REINDEX_SINGLE, 7, s->col);
  ARG(K_REINDEX_SINGLE, 8, s->single_out);
  cl_uint out[3];
  if ((st = launch(s, K_SAMPLE_SINGLE, 1, true)) || (st = launch(s, K_REINDEX_SINGLE, 1, false)) ||
      (st = read_buf(s, s->single_out, 0, sizeof out, out, true)))
    return st;
  if (out[2] > (cl_uint)s->caps.edges[h]) return over_capacity(h, out[2], s->caps.edges[h]);
  s->stats.edges += out[2];
  if ((st = read_buf(s, s->cnt, 0, 4 * ((size_t)n + 1), blk->row_ptr, false)) ||
      (st = read_buf(s, s->col, 0, 4 * (size_t)out[1], blk->col, false)))
    return st;
  *n_after = out[0];
  return HS_OK;
}

hs_status hs__sampler_run(hs_sampler *s, const int32_t *seeds, int32_t n_seeds, uint32_t epoch,
                          uint32_t batch, hs_batch *out) {
  const hs_sample_cfg *cfg = &s->cfg;
  if (out->caps.vertices < s->caps.vertices || out->n_layers != cfg->n_layers ||
      n_seeds < 1 || n_seeds > s->caps.seeds)
    return hs__fail(HS_ERR_INVALID_ARG, "batch of %d seeds does not fit this sampler's storage",
                    n_seeds);
  if (cfg->max_vertices > 0 && n_seeds > cfg->max_vertices)
    return hs__fail(HS_ERR_INVALID_ARG, "%d seeds exceed the vertex budget %lld", n_seeds,
                    (long long)cfg->max_vertices);
  hs_status st = hs__seeds_check(seeds, n_seeds, s->n_graph, s->seed_scratch);
  if (st != HS_OK) return st;
  cl_uint limit = (cl_uint)s->caps.vertices;
  if (cfg->max_vertices > 0 && cfg->max_vertices < limit) limit = (cl_uint)cfg->max_vertices;

  cl_uint n = (cl_uint)n_seeds;
  cl_int err = clEnqueueWriteBuffer(s->q, s->ids, CL_FALSE, 0, 4 * (size_t)n, seeds, 0, NULL,
                                    NULL);
  if (err != CL_SUCCESS) return hs__cl_fail(err, "clEnqueueWriteBuffer", s->dev.id);
  ARG(K_SEED, 0, s->ids);
  ARG(K_SEED, 1, n);
  ARG(K_SEED, 2, s->state);
  st = launch(s, K_SEED, n, false);
  for (int h = 0; h < cfg->n_layers && st == HS_OK; h++) {
    hs_block *blk = hs__batch_hop(out, h);
    cl_uint next = n;
    int kids[] = {K_COUNT, K_ROWS, K_SAMPLE_SINGLE};
    for (size_t j = 0; j < HS_ARRAY_LEN(kids) && st == HS_OK; j++)
      st = set_hop_params(s, kids[j], epoch, batch, h);
    if (st != HS_OK) break;
    st = s->style == HS_STYLE_SINGLE ? hop_single(s, h, n, limit, blk, &next)
                                     : hop_ndrange(s, h, n, limit, blk, &next);
    blk->n_dst = (int32_t)n;
    blk->n_src = (int32_t)next;
    n = next;
  }
  /* Read the id map, then clear the per-vertex state this batch touched,
   * even after a failure, so the next batch starts clean. */
  if (st == HS_OK) st = read_buf(s, s->ids, 0, 4 * (size_t)n, out->ids, false);
  ARG(K_RESET, 0, s->ids);
  ARG(K_RESET, 1, n);
  ARG(K_RESET, 2, s->state);
  hs_status st2 = launch(s, K_RESET, n, false);
  if (st != HS_OK) clear_state(s); /* state past n may be dirty */
  err = clFinish(s->q);
  if (st == HS_OK) st = st2;
  if (st == HS_OK && err != CL_SUCCESS) st = hs__cl_fail(err, "clFinish", s->dev.id);
  if (s->opts.profile) flush_events(s);
  if (st != HS_OK) return st;
  out->n_seeds = n_seeds;
  out->n_vertices = (int32_t)n;
  s->stats.vertices += n;
  s->stats.batches++;
  return HS_OK;
}
