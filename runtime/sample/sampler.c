/* The sampler on an OpenCL device (see hs_sampler.h). A batch is one run
 * of enqueues: every kernel finds its sizes in the device count array
 * (cl_kernels/hs_sample_meta.h) and launches cover the batch capacities,
 * so the host learns the counts only with the finished batch. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "hs_launch.h"
#include "hs_programs.h"
#include "cl_kernels/hs_sample_meta.h"
#include "hs_sampler.h"

_Static_assert(HS_META_HOPS == HS_SAMPLE_MAX_LAYERS, "one count slot per hop");
_Static_assert(HS_META_WORDS <= HS_BATCH_COUNT_WORDS, "hs_batch holds the counts");

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


#define TOPO_PARTS 4         /* part buffers a kernel takes */
#define SCAN_MAX_PARTS 4096  /* partial sums of one scan (as in scan.cl) */
#define SCAN_MIN_CHUNK 256   /* elements per partial sum, at least */
#define MAX_GLOBAL (1u << 22) /* grid-stride kernels need no more items */
#define MAX_EVENTS 256
/* Work-group size when none is asked for. Always passing one matters: a
 * runtime left to choose (PoCL) picks a divisor of each global size and
 * compiles the kernel again for every new one. */
#define DEFAULT_WG 64
/* Rows one work-item samples on CPU devices (see hs_sample_rows). */
#define CPU_ROWS_PER_ITEM 16
#define DEFAULT_EAGER_READ_LIMIT ((size_t)32 << 20)

/* Argument positions of the three sampling kernels: topology (0..9),
 * parameters, then each kernel's own (see sample.cl). */
enum { A_SEED = 10, A_EPOCH, A_BATCH, A_HOP, A_FANOUT, A_MODE, A_REPLACE, A_TBITS,
       A_IDS, A_META, A_OWN };

struct hs_sampler {
  hs_ctx ctx;
  hs_dev dev;
  cl_command_queue q;
  hs_build_note build; /* how the program was built */
  hs_sample_cfg cfg;
  hs_sampler_opts opts;
  hs_sampler_style style;
  hs_reindex_style reindex;
  size_t wg; /* NDRange work-group size in use */
  hs_batch_caps caps;
  int64_t n_graph;
  bool eager;   /* begin enqueues the read-back at capacity */
  int pending;  /* batches begun and not finished */
  bool keep_blocks; /* blocks not read back (hs__sampler_keep_blocks) */
  /* sequential reindex: the last batch's tag, the largest tag before the
   * state is cleared and tags restart, the bit where tags start
   * (hs_reindex_single in reindex.cl) */
  cl_uint tag, tag_max, tag_shift;
  cl_program prog;
  cl_kernel k[K_N_];
  cl_mem indptr;
  hs_split_buf idx, wt;
  cl_mem wt_dummy;
  /* per batch: work arrays (reused by every hop) and the counts */
  cl_mem ids, row_start, row_deg, nbr, keys, flag, col, keep, part, sink, meta;
  /* per hop: row offsets (counts, scanned, then compacted) and columns */
  cl_mem hop_rp[HS_SAMPLE_MAX_LAYERS], hop_col[HS_SAMPLE_MAX_LAYERS];
  /* per vertex of the graph: (local id, first position) pairs */
  cl_mem state;
  cl_uint rows_per_item;
  int32_t *seed_scratch;
  /* profiling: events in queue order, not yet accounted */
  cl_event ev[MAX_EVENTS];
  bool ev_sample[MAX_EVENTS];
  int n_ev;
  hs_sampler_stats stats;
};

/* ---- small helpers --------------------------------------------------------- */

#define ARG(kid, i, v)                                        \
  do {                                                        \
    hs_status st_ = hs__kernel_arg(s->k[kid], (i), sizeof(v), &(v));  \
    if (st_ != HS_OK) return st_;                             \
  } while (0)

/* Account the kernel times of recorded events, oldest first: all of them
 * (waiting), or only while they are complete. The queue is in order, so a
 * complete event means every earlier one is too. */
static void flush_events(hs_sampler *s, bool only_done) {
  int i = 0;
  for (; i < s->n_ev; i++) {
    if (only_done && hs__events_poll(&s->ev[i], 1) == HS_EVENTS_PENDING) break;
    uint64_t t0 = 0, t1 = 0;
    if (hs__events_wait(&s->ev[i], 1) == HS_OK && hs__event_times(s->ev[i], &t0, &t1) == HS_OK) {
      double dt = (double)(t1 - t0) * 1e-9;
      if (s->ev_sample[i]) s->stats.sample_s += dt;
      else s->stats.reindex_s += dt;
    }
    hs__events_release(&s->ev[i], 1);
  }
  memmove(s->ev, s->ev + i, sizeof *s->ev * (size_t)(s->n_ev - i));
  memmove(s->ev_sample, s->ev_sample + i, sizeof *s->ev_sample * (size_t)(s->n_ev - i));
  s->n_ev -= i;
}

/* Enqueue kernel `kid` for up to `n` items: the kernels loop with a grid
 * stride and read their real count on the device, so any launch covers
 * them. Single work-item style launches one item. At least one item runs:
 * some kernels write counts even when they have nothing else to do. */
static hs_status launch(hs_sampler *s, int kid, size_t n, bool sample_phase) {
  size_t local = 1, global = 1;
  bool one = s->style == HS_STYLE_SINGLE || kid == K_SCAN_SPINE || kid == K_SAMPLE_SINGLE ||
             kid == K_REINDEX_SINGLE;
  if (!one) {
    size_t max_global = MAX_GLOBAL;
    if (s->dev.info.type == HS_DEVICE_CPU) {
      size_t cu = s->dev.info.compute_units > 0 ? (size_t)s->dev.info.compute_units : 1;
      max_global = cu * s->wg * HS_CPU_GROUPS_PER_CU;
    }
    local = s->wg;
    global = n < max_global ? n : max_global;
    global = (global + local - 1) / local * local;
    if (global == 0) global = local;
  }
  if (s->opts.profile && s->n_ev == MAX_EVENTS) flush_events(s, false);
  cl_event ev = NULL;
  hs_status st = hs__launch(s->q, s->k[kid], 1, &global, &local, 0, NULL,
                            s->opts.profile ? &ev : NULL);
  if (st != HS_OK)
    return hs__fail_context(st, "%s over %zu items (local %zu)", kernel_names[kid], global,
                            local);
  if (ev) {
    s->ev[s->n_ev] = ev;
    s->ev_sample[s->n_ev++] = sample_phase;
  }
  return HS_OK;
}

static hs_status read_buf(hs_sampler *s, cl_mem b, size_t bytes, void *dst, bool blocking,
                          cl_event *ev) {
  if (bytes == 0 && !ev) return HS_OK;
  s->stats.bytes_read += bytes;
  return hs__mem_read(s->q, b, blocking, 0, bytes, dst, 0, NULL, ev);
}

/* The chunking of a scan of n elements (as hs_scan_shape in scan.cl). */
static cl_uint scan_parts(const hs_sampler *s, size_t n) {
  size_t parts = s->style == HS_STYLE_SINGLE ? 1 : n / SCAN_MIN_CHUNK;
  if (parts < 1) parts = 1;
  if (parts > SCAN_MAX_PARTS) parts = SCAN_MAX_PARTS;
  return (cl_uint)parts;
}

/* Exclusive scan of buf[0..n) in place, n = meta[n_at] (at most n_cap),
 * total to buf[n] and to meta[total_at] (0 and an overflow above `cap`). */
static hs_status scan(hs_sampler *s, cl_mem buf, cl_uint n_at, size_t n_cap, cl_uint total_at,
                      cl_uint cap, bool sample_phase) {
  cl_uint one_part = s->style == HS_STYLE_SINGLE;
  ARG(K_SCAN_PARTIALS, 0, buf);
  ARG(K_SCAN_PARTIALS, 1, s->meta);
  ARG(K_SCAN_PARTIALS, 2, n_at);
  ARG(K_SCAN_PARTIALS, 3, one_part);
  ARG(K_SCAN_PARTIALS, 4, s->part);
  ARG(K_SCAN_SPINE, 0, s->part);
  ARG(K_SCAN_SPINE, 1, s->meta);
  ARG(K_SCAN_SPINE, 2, n_at);
  ARG(K_SCAN_SPINE, 3, one_part);
  ARG(K_SCAN_APPLY, 0, buf);
  ARG(K_SCAN_APPLY, 1, s->meta);
  ARG(K_SCAN_APPLY, 2, n_at);
  ARG(K_SCAN_APPLY, 3, one_part);
  ARG(K_SCAN_APPLY, 4, s->part);
  ARG(K_SCAN_APPLY, 5, total_at);
  ARG(K_SCAN_APPLY, 6, cap);
  /* The chunking grows with n, so the capacity's covers the real one. */
  cl_uint parts = scan_parts(s, n_cap);
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
  return hs__mem_create(&s->ctx, CL_MEM_READ_WRITE, bytes, out);
}

/* Bytes of per-vertex state: (local id, first position) pairs for the
 * parallel reindex, one tagged word for the sequential one. */
static size_t state_bytes(const hs_sampler *s) {
  return (s->reindex == HS_REINDEX_SEQUENTIAL ? 4 : 8) * (size_t)s->n_graph;
}

/* Every vertex not met: (-1, INT_MAX) pairs, or words of tag 0 (tags
 * start at 1). */
static hs_status clear_state(hs_sampler *s) {
  cl_int pair[2] = {-1, INT_MAX}, zero = 0;
  bool words = s->reindex == HS_REINDEX_SEQUENTIAL;
  if (s->n_graph == 0) return HS_OK;
  return hs__mem_fill(s->q, s->state, words ? (void *)&zero : (void *)pair,
                      words ? sizeof zero : sizeof pair, 0, state_bytes(s), 0, NULL, NULL);
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

/* no_prefetch builds without the CPU devices' software prefetches
 * (hs_common.h), as other devices build. */
static hs_status build(hs_sampler *s) {
  hs_status st = s->opts.no_prefetch && s->dev.info.type == HS_DEVICE_CPU
                     ? hs__program_get_variant(&s->ctx, &s->dev, HS_PROG_SAMPLE, "", &s->prog)
                     : hs__program_get_noted(&s->ctx, &s->dev, HS_PROG_SAMPLE, &s->prog,
                                             &s->build);
  for (int i = 0; i < K_N_ && st == HS_OK; i++)
    st = hs__kernel_create(s->prog, kernel_names[i], &s->dev, &s->k[i]);
  if (st != HS_OK) return st;
  return hs__sampler_set_work_group(s, s->opts.work_group_size);
}

static hs_status zero_buf(hs_sampler *s, cl_mem b, size_t bytes) {
  cl_uint zero = 0;
  return hs__mem_fill(s->q, b, &zero, sizeof zero, 0, bytes, 0, NULL, NULL);
}

/* A zeroed buffer: the read-back at capacity copies tails no kernel
 * wrote, which should not be whatever the allocation held. */
static hs_status make_zeroed(hs_sampler *s, size_t bytes, cl_mem *out) {
  if (bytes == 0) bytes = 8;
  hs_status st = make_buf(s, bytes, out);
  return st == HS_OK ? zero_buf(s, *out, bytes) : st;
}

/* Bytes the read-back at capacity copies per batch. */
static size_t eager_bytes(const hs_batch_caps *c) {
  size_t words = (size_t)c->vertices;
  for (int h = 0; h < c->n_layers; h++) words += (size_t)c->dst[h] + 1 + (size_t)c->edges[h];
  return 4 * words;
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
  bool par = s->reindex == HS_REINDEX_PARALLEL;
  bool budget = s->cfg.max_vertices > 0;
  hs_status st = make_buf(s, 8 * (n + 1), &s->indptr);
  if (st == HS_OK)
    st = hs__mem_write(s->q, s->indptr, true, 0, 8 * (n + 1), g->indptr, 0, NULL, NULL);
  if (st == HS_OK) st = upload_split(s, g->indices, 4 * e, &s->idx);
  if (st == HS_OK && g->weights) st = upload_split(s, g->weights, 4 * e, &s->wt);
  if (st == HS_OK && !g->weights) st = make_buf(s, 4, &s->wt_dummy);
  if (st == HS_OK) st = make_zeroed(s, 4 * (size_t)s->caps.vertices, &s->ids);
  if (st == HS_OK) st = make_buf(s, 8 * ((size_t)max_dst + 1), &s->row_start);
  if (st == HS_OK) st = make_buf(s, 4 * ((size_t)max_dst + 1), &s->row_deg);
  if (st == HS_OK) st = make_buf(s, 4, &s->sink);
  if (st == HS_OK) st = make_buf(s, 4 * E, &s->nbr);
  if (st == HS_OK) st = make_buf(s, keyed ? 8 * E : 8, &s->keys);
  /* the parallel reindex's ranks, kept flags and columns before the cut */
  if (st == HS_OK) st = make_buf(s, par ? 4 * E : 4, &s->flag);
  if (st == HS_OK) st = make_buf(s, par && budget ? 4 * E : 4, &s->col);
  if (st == HS_OK) st = make_buf(s, par ? 4 * E : 4, &s->keep);
  if (st == HS_OK) st = make_buf(s, 4 * (SCAN_MAX_PARTS + 1), &s->part);
  if (st == HS_OK) st = make_zeroed(s, 4 * HS_META_WORDS, &s->meta);
  for (int h = 0; h < s->caps.n_layers && st == HS_OK; h++) {
    st = make_zeroed(s, 4 * ((size_t)s->caps.dst[h] + 1), &s->hop_rp[h]);
    if (st == HS_OK) st = make_zeroed(s, 4 * (size_t)s->caps.edges[h], &s->hop_col[h]);
  }
  if (st == HS_OK) st = make_buf(s, state_bytes(s), &s->state);
  if (st == HS_OK) st = clear_state(s);
  if (st == HS_OK) {
    s->seed_scratch = malloc(sizeof(int32_t) * (size_t)s->caps.seeds);
    if (!s->seed_scratch) st = hs__fail(HS_ERR_NOMEM, "sampler");
  }
  if (st == HS_OK) st = hs__queue_finish(s->q);
  return st;
}

/* The batches' read-back and the count array rely on commands running in
 * queue order. */
static hs_status check_queue(const hs_sampler *s) {
  bool in_order = false;
  hs_status st = hs__queue_in_order(s->q, &in_order);
  if (st != HS_OK) return st;
  if (!in_order) return hs__fail(HS_ERR_INVALID_ARG, "sampler: the queue must execute in order");
  return HS_OK;
}

hs_status hs__sampler_create(const hs_ctx *ctx, const hs_dev *dev, cl_command_queue queue,
                             const hs_csr *g, const hs_sample_cfg *cfg,
                             const hs_sampler_opts *opts, hs_sampler **out) {
  *out = NULL;
  hs_sampler *s = calloc(1, sizeof *s);
  if (!s) return hs__fail(HS_ERR_NOMEM, "sampler");
  s->ctx = *ctx;
  s->dev = *dev;
  s->q = hs__queue_retain(queue);
  s->cfg = *cfg;
  s->opts = *opts;
  s->n_graph = g->n;
  s->style = opts->style;
  if (s->style == HS_STYLE_AUTO)
    s->style = dev->info.type == HS_DEVICE_ACCELERATOR ? HS_STYLE_SINGLE : HS_STYLE_NDRANGE;
  s->reindex = opts->reindex;
  if (s->style == HS_STYLE_SINGLE) s->reindex = HS_REINDEX_SEQUENTIAL;
  if (s->reindex == HS_REINDEX_AUTO)
    s->reindex = dev->info.type == HS_DEVICE_CPU &&
                         dev->info.compute_units <= HS_SEQ_REINDEX_MAX_CU
                     ? HS_REINDEX_SEQUENTIAL
                     : HS_REINDEX_PARALLEL;
  /* Tagged words: the field below the tag holds up to caps.vertices + 1. */
  s->tag_shift = 1;
  s->rows_per_item = opts->rows_per_item;
  if (s->rows_per_item == 0)
    s->rows_per_item = dev->info.type == HS_DEVICE_CPU ? CPU_ROWS_PER_ITEM : 1;
  hs_status st = hs__csr_validate(g);
  if (st == HS_OK) st = hs__sample_cfg_check(cfg, g);
  if (st == HS_OK)
    st = hs__batch_caps(cfg, g, hs__csr_max_degree(g), opts->max_seeds, &s->caps);
  if (st == HS_OK) st = check_queue(s);
  while (st == HS_OK && s->tag_shift < 32 && ((uint64_t)s->caps.vertices + 1) >> s->tag_shift)
    s->tag_shift++;
  if (st == HS_OK && s->reindex == HS_REINDEX_SEQUENTIAL && s->tag_shift > 31)
    st = hs__fail(HS_ERR_RANGE, "sampler: %d vertices per batch leave no room for the "
                  "sequential reindex's batch tags", s->caps.vertices);
  s->tag_max = s->tag_shift <= 31 ? (1u << (32 - s->tag_shift)) - 1 : 0;
  size_t limit = opts->eager_read_limit ? opts->eager_read_limit : DEFAULT_EAGER_READ_LIMIT;
  s->eager = eager_bytes(&s->caps) <= limit;
  if (st == HS_OK) st = build(s);
  if (st == HS_OK) st = allocate(s, g);
  if (st == HS_OK) st = set_topology_args(s);
  if (st != HS_OK) {
    hs__sampler_destroy(s);
    return hs__fail_context(st, "sampler on '%s'", dev->info.name);
  }
  hs__log(HS_LOG_SAMPLE, "sampler on '%s': %s style, %s reindex, %d layers, caps %d vertices, "
          "read-back %s (%zu bytes at capacity)", dev->info.name,
          s->style == HS_STYLE_SINGLE ? "single work-item" : "NDRange",
          s->reindex == HS_REINDEX_SEQUENTIAL ? "sequential" : "parallel", cfg->n_layers,
          s->caps.vertices, s->eager ? "with the batch" : "at finish", eager_bytes(&s->caps));
  *out = s;
  return HS_OK;
}

void hs__sampler_destroy(hs_sampler *s) {
  if (!s) return;
  if (s->q) hs__queue_finish(s->q);
  flush_events(s, false);
  cl_mem *bufs[] = {&s->indptr, &s->wt_dummy, &s->ids,  &s->row_start, &s->row_deg,
                    &s->nbr,    &s->keys,     &s->flag, &s->col,       &s->keep,
                    &s->part,   &s->sink,     &s->meta, &s->state};
  for (size_t i = 0; i < HS_ARRAY_LEN(bufs); i++) hs__mem_release(bufs[i]);
  for (int h = 0; h < HS_SAMPLE_MAX_LAYERS; h++) {
    hs__mem_release(&s->hop_rp[h]);
    hs__mem_release(&s->hop_col[h]);
  }
  hs__split_buf_release(&s->idx);
  hs__split_buf_release(&s->wt);
  for (int i = 0; i < K_N_; i++) hs__kernel_release(&s->k[i]);
  hs__program_release(&s->prog);
  hs__queue_release(&s->q);
  free(s->seed_scratch);
  free(s);
}

const hs_batch_caps *hs__sampler_caps(const hs_sampler *s) { return &s->caps; }

hs_sampler_style hs__sampler_style(const hs_sampler *s) { return s->style; }

const hs_build_note *hs__sampler_build_note(const hs_sampler *s) { return &s->build; }

hs_reindex_style hs__sampler_reindex(const hs_sampler *s) { return s->reindex; }

hs_status hs__sampler_set_work_group(hs_sampler *s, size_t wg) {
  size_t lim = s->dev.info.max_work_group_size;
  for (int i = 0; i < K_N_; i++) {
    size_t k_lim = hs__kernel_max_wg(s->k[i], &s->dev);
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

bool hs__sampler_eager_read(const hs_sampler *s) { return s->eager; }

void hs__sampler_keep_blocks(hs_sampler *s, bool keep) { s->keep_blocks = keep; }

void hs__sampler_block_buffers(const hs_sampler *s, int hop, cl_mem *row_ptr, cl_mem *col) {
  *row_ptr = s->hop_rp[hop];
  *col = s->hop_col[hop];
}

int32_t hs__sampler_hop_edges(const hs_batch *b, int hop) {
  return (int32_t)b->counts[HS_META_KEPT(hop)];
}

void hs__sampler_limit_tags(hs_sampler *s, uint32_t tag_max) {
  if (tag_max >= 1 && tag_max < s->tag_max) s->tag_max = tag_max;
}

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
  ARG(kid, A_IDS, s->ids);
  ARG(kid, A_META, s->meta);
  return HS_OK;
}

static size_t div_up(size_t a, size_t b) { return (a + b - 1) / b; }

/* Single work-item reindex of hop h (row offsets in hop_rp[h]). */
static hs_status reindex_single(hs_sampler *s, int h, cl_uint limit) {
  cl_uint hop = (cl_uint)h;
  ARG(K_REINDEX_SINGLE, 0, s->nbr);
  ARG(K_REINDEX_SINGLE, 1, s->hop_rp[h]);
  ARG(K_REINDEX_SINGLE, 2, s->meta);
  ARG(K_REINDEX_SINGLE, 3, hop);
  ARG(K_REINDEX_SINGLE, 4, limit);
  ARG(K_REINDEX_SINGLE, 5, s->tag);
  ARG(K_REINDEX_SINGLE, 6, s->tag_shift);
  ARG(K_REINDEX_SINGLE, 7, s->state);
  ARG(K_REINDEX_SINGLE, 8, s->ids);
  ARG(K_REINDEX_SINGLE, 9, s->hop_col[h]);
  return launch(s, K_REINDEX_SINGLE, 1, false);
}

/* Parallel reindex of hop h: first appearances by atomic_min, ranks by a
 * scan; with a vertex budget, the edges to vertices left out are dropped
 * by a second scan (a no-op copy when the budget did not cut). */
static hs_status reindex_parallel(hs_sampler *s, int h, cl_uint limit) {
  hs_status st;
  cl_uint hop = (cl_uint)h, e_at = HS_META_E(h);
  size_t e_cap = (size_t)s->caps.edges[h];
  bool budget = s->cfg.max_vertices > 0;
  ARG(K_CLAIM, 0, s->nbr);
  ARG(K_CLAIM, 1, s->meta);
  ARG(K_CLAIM, 2, hop);
  ARG(K_CLAIM, 3, s->state);
  ARG(K_CLAIM, 4, s->rows_per_item);
  ARG(K_CLAIM, 5, s->sink);
  ARG(K_MARK, 0, s->nbr);
  ARG(K_MARK, 1, s->meta);
  ARG(K_MARK, 2, hop);
  ARG(K_MARK, 3, s->state);
  ARG(K_MARK, 4, s->flag);
  ARG(K_ASSIGN, 0, s->nbr);
  ARG(K_ASSIGN, 1, s->meta);
  ARG(K_ASSIGN, 2, hop);
  ARG(K_ASSIGN, 3, s->flag);
  ARG(K_ASSIGN, 4, limit);
  ARG(K_ASSIGN, 5, s->state);
  ARG(K_ASSIGN, 6, s->ids);
  cl_mem col = budget ? s->col : s->hop_col[h];
  ARG(K_EMIT, 0, s->nbr);
  ARG(K_EMIT, 1, s->meta);
  ARG(K_EMIT, 2, hop);
  ARG(K_EMIT, 3, s->state);
  ARG(K_EMIT, 4, col);
  ARG(K_EMIT, 5, s->keep);
  if ((st = launch(s, K_CLAIM, div_up(e_cap, s->rows_per_item), false)) ||
      (st = launch(s, K_MARK, e_cap, false)) ||
      (st = scan(s, s->flag, e_at, e_cap, HS_META_NEW(h), UINT_MAX, false)) ||
      (st = launch(s, K_ASSIGN, e_cap, false)) || (st = launch(s, K_EMIT, e_cap, false)))
    return st;
  if (!budget) return HS_OK;
  ARG(K_FORGET, 0, s->nbr);
  ARG(K_FORGET, 1, s->meta);
  ARG(K_FORGET, 2, hop);
  ARG(K_FORGET, 3, s->flag);
  ARG(K_FORGET, 4, s->state);
  ARG(K_COMPACT_COLS, 0, s->col);
  ARG(K_COMPACT_COLS, 1, s->meta);
  ARG(K_COMPACT_COLS, 2, hop);
  ARG(K_COMPACT_COLS, 3, s->keep);
  ARG(K_COMPACT_COLS, 4, s->hop_col[h]);
  ARG(K_COMPACT_ROWS, 0, s->hop_rp[h]);
  ARG(K_COMPACT_ROWS, 1, s->meta);
  ARG(K_COMPACT_ROWS, 2, hop);
  ARG(K_COMPACT_ROWS, 3, s->keep);
  if ((st = launch(s, K_FORGET, e_cap, false)) ||
      (st = scan(s, s->keep, e_at, e_cap, HS_META_KEPT(h), UINT_MAX, false)) ||
      (st = launch(s, K_COMPACT_COLS, e_cap, false)) ||
      (st = launch(s, K_COMPACT_ROWS, (size_t)s->caps.dst[h] + 1, false)))
    return st;
  return HS_OK;
}

/* NDRange hop: row counts, offsets, sampling, then the reindex. */
static hs_status hop_ndrange(hs_sampler *s, int h, cl_uint limit) {
  hs_status st;
  size_t n_cap = (size_t)s->caps.dst[h];
  cl_uint e_cap = (cl_uint)s->caps.edges[h];
  ARG(K_COUNT, A_OWN, s->hop_rp[h]);
  ARG(K_COUNT, A_OWN + 1, s->row_start);
  ARG(K_COUNT, A_OWN + 2, s->row_deg);
  ARG(K_ROWS, A_OWN, s->hop_rp[h]);
  ARG(K_ROWS, A_OWN + 1, s->nbr);
  ARG(K_ROWS, A_OWN + 2, s->keys);
  ARG(K_ROWS, A_OWN + 3, s->row_start);
  ARG(K_ROWS, A_OWN + 4, s->row_deg);
  ARG(K_ROWS, A_OWN + 5, s->rows_per_item);
  ARG(K_ROWS, A_OWN + 6, e_cap);
  ARG(K_ROWS, A_OWN + 7, s->sink);
  if ((st = launch(s, K_COUNT, n_cap, true)) ||
      (st = scan(s, s->hop_rp[h], HS_META_N(h), n_cap, HS_META_E(h), e_cap, true)) ||
      (st = launch(s, K_ROWS, div_up(n_cap, s->rows_per_item), true)))
    return st;
  return s->reindex == HS_REINDEX_SEQUENTIAL ? reindex_single(s, h, limit)
                                             : reindex_parallel(s, h, limit);
}

/* Single work-item hop: two sequential kernels. */
static hs_status hop_single(hs_sampler *s, int h, cl_uint limit) {
  cl_uint e_cap = (cl_uint)s->caps.edges[h], row_max = (cl_uint)s->caps.row_max;
  ARG(K_SAMPLE_SINGLE, A_OWN, e_cap);
  ARG(K_SAMPLE_SINGLE, A_OWN + 1, row_max);
  ARG(K_SAMPLE_SINGLE, A_OWN + 2, s->hop_rp[h]);
  ARG(K_SAMPLE_SINGLE, A_OWN + 3, s->nbr);
  ARG(K_SAMPLE_SINGLE, A_OWN + 4, s->keys);
  hs_status st = launch(s, K_SAMPLE_SINGLE, 1, true);
  return st == HS_OK ? reindex_single(s, h, limit) : st;
}

/* Everything of one batch but the final count read: seeds in, every hop,
 * the read-back at capacity when eager, the state reset (parallel reindex;
 * the sequential one tags the state by batch instead). */
static hs_status enqueue_batch(hs_sampler *s, int32_t n_seeds, uint32_t epoch, uint32_t batch,
                               hs_batch *out) {
  const hs_sample_cfg *cfg = &s->cfg;
  const hs_batch_caps *c = &s->caps;
  cl_uint limit = (cl_uint)c->vertices;
  if (cfg->max_vertices > 0 && cfg->max_vertices < limit) limit = (cl_uint)cfg->max_vertices;
  cl_uint n = (cl_uint)n_seeds;
  bool tagged = s->reindex == HS_REINDEX_SEQUENTIAL;
  if (tagged && s->tag >= s->tag_max) { /* tags wrap: forget them all */
    hs_status st = clear_state(s);
    if (st != HS_OK) return st;
    s->tag = 0;
  }
  cl_uint tag = tagged ? ++s->tag : 0, shift = tagged ? s->tag_shift : 0;
  /* From out->ids, which the read of the ids overwrites later in queue
   * order: the caller's seeds are free once begin returns. */
  hs_status st = hs__mem_write(s->q, s->ids, false, 0, 4 * (size_t)n, out->ids, 0, NULL, NULL);
  if (st != HS_OK) return st;
  ARG(K_SEED, 0, s->ids);
  ARG(K_SEED, 1, n);
  ARG(K_SEED, 2, s->state);
  ARG(K_SEED, 3, s->meta);
  ARG(K_SEED, 4, tag);
  ARG(K_SEED, 5, shift);
  st = launch(s, K_SEED, n, false);
  for (int h = 0; h < cfg->n_layers && st == HS_OK; h++) {
    int kids[] = {K_COUNT, K_ROWS, K_SAMPLE_SINGLE};
    for (size_t j = 0; j < HS_ARRAY_LEN(kids) && st == HS_OK; j++)
      st = set_hop_params(s, kids[j], epoch, batch, h);
    if (st != HS_OK) break;
    st = s->style == HS_STYLE_SINGLE ? hop_single(s, h, limit) : hop_ndrange(s, h, limit);
    hs_block *blk = hs__batch_hop(out, h);
    if (st == HS_OK && s->eager && !s->keep_blocks)
      st = read_buf(s, s->hop_rp[h], 4 * ((size_t)c->dst[h] + 1), blk->row_ptr, false, NULL);
    if (st == HS_OK && s->eager && !s->keep_blocks)
      st = read_buf(s, s->hop_col[h], 4 * (size_t)c->edges[h], blk->col, false, NULL);
  }
  if (st == HS_OK && s->eager)
    st = read_buf(s, s->ids, 4 * (size_t)c->vertices, out->ids, false, NULL);
  if (st != HS_OK || tagged) return st;
  cl_uint n_at = HS_META_N(cfg->n_layers);
  ARG(K_RESET, 0, s->ids);
  ARG(K_RESET, 1, s->meta);
  ARG(K_RESET, 2, n_at);
  ARG(K_RESET, 3, s->state);
  return launch(s, K_RESET, (size_t)c->vertices, false);
}

static bool caps_fit(const hs_batch_caps *have, const hs_batch_caps *need) {
  if (have->n_layers != need->n_layers || have->vertices < need->vertices ||
      have->seeds < need->seeds)
    return false;
  for (int h = 0; h < need->n_layers; h++)
    if (have->dst[h] < need->dst[h] || have->edges[h] < need->edges[h]) return false;
  return true;
}

/* After a failed enqueue: let what was queued finish, and clear the state
 * (entries past the batch's admitted vertices may be dirty). */
static void recover(hs_sampler *s) {
  hs__queue_finish(s->q);
  clear_state(s);
  hs__queue_finish(s->q);
  if (s->opts.profile) flush_events(s, false);
}

hs_status hs__sampler_begin(hs_sampler *s, const int32_t *seeds, int32_t n_seeds,
                            uint32_t epoch, uint32_t batch, hs_batch *out, cl_event *ev) {
  const hs_sample_cfg *cfg = &s->cfg;
  *ev = NULL;
  if (!caps_fit(&out->caps, &s->caps) || out->n_layers != cfg->n_layers || n_seeds < 1 ||
      n_seeds > s->caps.seeds)
    return hs__fail(HS_ERR_INVALID_ARG, "batch of %d seeds does not fit this sampler's storage",
                    n_seeds);
  if (cfg->max_vertices > 0 && n_seeds > cfg->max_vertices)
    return hs__fail(HS_ERR_INVALID_ARG, "%d seeds exceed the vertex budget %lld", n_seeds,
                    (long long)cfg->max_vertices);
  if (!s->eager && s->pending > 0)
    return hs__fail(HS_ERR_INVALID_ARG, "sampler: a batch is in flight and read-back is at "
                    "finish; finish it before beginning another");
  hs_status st = hs__seeds_check(seeds, n_seeds, s->n_graph, s->seed_scratch);
  if (st != HS_OK) return st;
  memcpy(out->ids, seeds, sizeof *seeds * (size_t)n_seeds);
  memset(out->counts, 0, sizeof out->counts);
  st = enqueue_batch(s, n_seeds, epoch, batch, out);
  if (st == HS_OK) st = read_buf(s, s->meta, 4 * HS_META_WORDS, out->counts, false, ev);
  if (st == HS_OK) st = hs__queue_flush(s->q);
  if (st != HS_OK) {
    hs__events_release(ev, 1);
    recover(s);
    return st;
  }
  s->pending++;
  return HS_OK;
}

static hs_status overflowed(hs_sampler *s, const uint32_t *m) {
  uint32_t at = m[HS_META_OVERFLOW] - 1;
  clear_state(s); /* runs after whatever is queued; the state is then clean for sure */
  const char *what = at >= (uint32_t)HS_META_E(0) && at < (uint32_t)HS_META_NEW(0)
                         ? "sampled edges" : "a count";
  int hop = at >= (uint32_t)HS_META_E(0) ? (int)(at - HS_META_E(0)) : -1;
  return hs__fail(HS_ERR_RANGE, "hop %d: %s %u over the capacity %d", hop, what,
                  m[HS_META_OVERFLOW_VALUE],
                  hop >= 0 && hop < s->caps.n_layers ? s->caps.edges[hop] : -1);
}

hs_status hs__sampler_finish(hs_sampler *s, hs_batch *out) {
  if (s->pending > 0) s->pending--;
  if (s->opts.profile) flush_events(s, true);
  const uint32_t *m = out->counts;
  const int L = s->cfg.n_layers;
  if (m[HS_META_OVERFLOW]) return overflowed(s, m);
  hs_status st = HS_OK;
  for (int h = 0; h < L && st == HS_OK; h++) {
    hs_block *blk = hs__batch_hop(out, h);
    blk->n_dst = (int32_t)m[HS_META_N(h)];
    blk->n_src = (int32_t)m[HS_META_N(h + 1)];
    if (!s->eager && !s->keep_blocks) {
      st = read_buf(s, s->hop_rp[h], 4 * ((size_t)blk->n_dst + 1), blk->row_ptr, true, NULL);
      if (st == HS_OK)
        st = read_buf(s, s->hop_col[h], 4 * (size_t)m[HS_META_KEPT(h)], blk->col, true, NULL);
    }
    s->stats.edges += m[HS_META_E(h)];
  }
  if (st == HS_OK && !s->eager)
    st = read_buf(s, s->ids, 4 * (size_t)m[HS_META_N(L)], out->ids, true, NULL);
  if (st != HS_OK) return st;
  out->n_seeds = (int32_t)m[HS_META_N(0)];
  out->n_vertices = (int32_t)m[HS_META_N(L)];
  s->stats.vertices += out->n_vertices;
  s->stats.batches++;
  return HS_OK;
}

hs_status hs__sampler_run(hs_sampler *s, const int32_t *seeds, int32_t n_seeds, uint32_t epoch,
                          uint32_t batch, hs_batch *out) {
  cl_event ev = NULL;
  hs_status st = hs__sampler_begin(s, seeds, n_seeds, epoch, batch, out, &ev);
  if (st != HS_OK) return st;
  st = hs__events_wait(&ev, 1);
  hs__events_release(&ev, 1);
  if (st != HS_OK) {
    if (s->pending > 0) s->pending--;
    recover(s);
    return st;
  }
  return hs__sampler_finish(s, out);
}
