/* The device side of the trainer-tier COO cache: the cache buffer, per-slot
 * staging, and the enqueue-only batch assembly (see hs_cache.h). */
#include <stdlib.h>
#include <string.h>

#include "hs_cache.h"
#include "hs_launch.h"
#include "hs_programs.h"
#include "sample/hs_gather.h"

struct hs_coo_dev {
  hs_dev dev;
  hs_coo *core;
  hs_ctx ctx;
  cl_mem cache;       /* capacity x row bytes; NULL for a zero capacity */
  hs_gather_cl *gather;
  cl_program prog;
  cl_kernel k32, k8;  /* scatter by 32-bit words / by bytes */
  int64_t device_rows; /* slots whose rows are on the device or on their way */
  cl_event last;      /* the latest command that reads or writes `cache` */
  /* Sparse rows: the pool (column ids; values unless binary) and the
   * kernel that fills a batch's entries from it and the staged misses. */
  bool sparse, valued;
  cl_mem pool_col, pool_val;
  cl_kernel krows;
};

struct hs_coo_slot {
  hs_coo_dev *d;
  int32_t cap;
  cl_mem staging;     /* cap x row bytes: the batch's misses, in miss order */
  cl_mem gidx;        /* cap: gather index per local id */
  cl_mem midx;        /* cap: local id per miss */
  int32_t *h_gidx, *h_midx; /* their host sources (written without blocking) */
  /* the last upload's copies (NULL when not made): gather indices, miss
   * local ids, miss rows; n_up of them in up[] for waiting on all */
  cl_event ev_gidx, ev_midx, ev_stage;
  cl_event up[3];
  int n_up;
  cl_event done[3];   /* the last assembly's commands */
  int n_done;
  const hs_coo_plan *plan; /* what the last upload was for */
  int32_t plan_n, plan_miss;
  bool assembled;
  /* Sparse rows: staged miss entries (column ids, values), each row's
   * source (pool offset >= 0, or -1 - staging offset) and its host copy,
   * and their uploads' events (also in up[]). */
  int64_t cap_entries;
  cl_mem s_col, s_val, from;
  int64_t *h_from;
  cl_event ev_from, ev_scol, ev_sval;
};

int64_t hs__coo_dev_max_rows(const hs_dev *dev, size_t row_bytes) {
  return row_bytes ? (int64_t)(hs__max_alloc(dev) / row_bytes) : 0;
}

int64_t hs__coo_dev_max_entries(const hs_dev *dev) {
  return (int64_t)(hs__max_alloc(dev) / sizeof(int32_t));
}

/* A buffer of `count` 4-byte elements (at least one, so that kernels
 * always have an argument to bind). */
static hs_status words_buf(const hs_ctx *ctx, const hs_dev *dev, cl_mem_flags flags, int64_t count,
                           const char *what, cl_mem *out) {
  hs_status st = hs__mem_create(ctx, flags, 4 * (size_t)(count > 0 ? count : 1), out);
  return st == HS_OK ? HS_OK : hs__fail_context(st, "%s on %s", what, dev->info.name);
}

static hs_status create_sparse(hs_coo_dev *d) {
  int64_t ent = hs__coo_entry_capacity(d->core), max = hs__coo_dev_max_entries(&d->dev);
  if (ent > max)
    return hs__fail(HS_ERR_INVALID_ARG,
                    "cache: %lld entries exceed one allocation on %s (%lld entries)",
                    (long long)ent, d->dev.info.name, (long long)max);
  d->sparse = true;
  d->valued = hs__coo_entry_bytes(d->core) > sizeof(int32_t);
  hs_status st = words_buf(&d->ctx, &d->dev, CL_MEM_READ_WRITE, ent, "sparse feature cache",
                           &d->pool_col);
  if (st == HS_OK && d->valued)
    st = words_buf(&d->ctx, &d->dev, CL_MEM_READ_WRITE, ent, "sparse feature cache",
                   &d->pool_val);
  if (st == HS_OK) st = hs__program_get(&d->ctx, &d->dev, HS_PROG_CACHE, &d->prog);
  if (st == HS_OK) st = hs__kernel_create(d->prog, "hs_sparse_rows", &d->dev, &d->krows);
  if (st == HS_OK)
    hs__log(HS_LOG_CACHE, "trainer cache on %s: %lld rows, %lld entries, %zu B",
            d->dev.info.name, (long long)hs__coo_capacity(d->core), (long long)ent,
            (size_t)ent * hs__coo_entry_bytes(d->core));
  return st;
}

hs_status hs__coo_dev_create(const hs_ctx *ctx, const hs_dev *dev, hs_coo *core,
                             hs_coo_dev **out) {
  *out = NULL;
  size_t rb = hs__coo_row_bytes(core);
  int64_t cap = hs__coo_capacity(core), max = hs__coo_dev_max_rows(dev, rb);
  if (!hs__coo_sparse(core) && cap > max)
    return hs__fail(HS_ERR_INVALID_ARG,
                    "cache: %lld rows of %zu B exceed one allocation on %s (%lld rows)",
                    (long long)cap, rb, dev->info.name, (long long)max);
  hs_coo_dev *d = calloc(1, sizeof *d);
  if (!d) return hs__fail(HS_ERR_NOMEM, "device cache");
  d->dev = *dev;
  d->core = core;
  d->ctx = *ctx;
  hs_status st = HS_OK;
  if (hs__coo_sparse(core)) {
    if ((st = create_sparse(d)) != HS_OK) goto fail;
    *out = d;
    return HS_OK;
  }
  if (cap > 0 &&
      (st = hs__mem_create(ctx, CL_MEM_READ_WRITE, (size_t)cap * rb, &d->cache)) != HS_OK) {
    st = hs__fail_context(st, "feature cache on %s", dev->info.name);
    goto fail;
  }
  if ((st = hs__gather_cl_create(ctx, dev, &d->gather))) goto fail;
  if ((st = hs__program_get(ctx, dev, HS_PROG_CACHE, &d->prog))) goto fail;
  if ((st = hs__kernel_create(d->prog, "hs_scatter_rows_u32", dev, &d->k32))) goto fail;
  if ((st = hs__kernel_create(d->prog, "hs_scatter_rows_u8", dev, &d->k8))) goto fail;
  hs__log(HS_LOG_CACHE, "trainer cache on %s: %lld rows, %zu B", dev->info.name,
          (long long)cap, (size_t)cap * rb);
  *out = d;
  return HS_OK;
fail:
  hs__coo_dev_destroy(d);
  return st;
}

void hs__coo_dev_destroy(hs_coo_dev *d) {
  if (!d) return;
  if (d->last) {
    hs__events_wait(&d->last, 1);
    hs__events_release(&d->last, 1);
  }
  hs__mem_release(&d->cache);
  hs__mem_release(&d->pool_col);
  hs__mem_release(&d->pool_val);
  hs__gather_cl_destroy(d->gather);
  hs__kernel_release(&d->k32);
  hs__kernel_release(&d->k8);
  hs__kernel_release(&d->krows);
  hs__program_release(&d->prog);
  free(d);
}

cl_mem hs__coo_dev_buffer(const hs_coo_dev *d) { return d->cache; }

void hs__coo_dev_pool(const hs_coo_dev *d, cl_mem *col, cl_mem *val) {
  *col = d->pool_col;
  *val = d->pool_val;
}

/* Make `ev` (a reference the caller hands over) the cache's latest
 * command. */
static void set_last(hs_coo_dev *d, cl_event ev) {
  hs__events_release(&d->last, 1);
  d->last = ev;
}

hs_status hs__coo_dev_prefill(hs_coo_dev *d, cl_command_queue q, hs_row_source src,
                              size_t chunk_bytes) {
  if (d->sparse)
    return hs__fail(HS_ERR_INVALID_ARG, "cache prefill: sparse rows go through "
                    "hs__coo_dev_prefill_sparse");
  size_t rb = hs__coo_row_bytes(d->core);
  int64_t rows = hs__coo_rows(d->core);
  if (d->device_rows >= rows) return HS_OK;
  if (chunk_bytes == 0) chunk_bytes = (size_t)4 << 20;
  int64_t per = (int64_t)(chunk_bytes / rb);
  if (per < 1) per = 1;
  if (per > rows - d->device_rows) per = rows - d->device_rows;
  if (per > INT32_MAX) per = INT32_MAX;
  char *buf = malloc((size_t)per * rb);
  if (!buf) return hs__fail(HS_ERR_NOMEM, "cache prefill: %lld rows", (long long)per);
  const int32_t *vertex = hs__coo_slot_vertices(d->core);
  hs_status st = HS_OK;
  while (d->device_rows < rows) {
    int64_t k = rows - d->device_rows < per ? rows - d->device_rows : per;
    if ((st = src.read(src.ctx, vertex + d->device_rows, (int32_t)k, buf))) break;
    cl_event ev = NULL;
    st = hs__mem_write(q, d->cache, true, (size_t)d->device_rows * rb, (size_t)k * rb, buf,
                       d->last ? 1 : 0, d->last ? &d->last : NULL, &ev);
    if (st != HS_OK) {
      st = hs__fail_context(st, "cache prefill");
      break;
    }
    set_last(d, ev);
    d->device_rows += k;
  }
  free(buf);
  return st;
}

/* ---- slots ------------------------------------------------------------------ */

static hs_status make_buf(hs_coo_dev *d, size_t bytes, cl_mem_flags flags, cl_mem *out) {
  hs_status st = hs__mem_create(&d->ctx, flags, bytes, out);
  return st == HS_OK ? HS_OK : hs__fail_context(st, "cache slot on %s", d->dev.info.name);
}

hs_status hs__coo_slot_create(hs_coo_dev *d, int32_t cap, hs_coo_slot **out) {
  *out = NULL;
  if (d->sparse)
    return hs__fail(HS_ERR_INVALID_ARG, "cache slot: the cache holds sparse rows "
                    "(hs__coo_slot_create_sparse)");
  size_t rb = hs__coo_row_bytes(d->core), stage;
  if (cap < 1 || !hs__mul_size((size_t)cap, rb, &stage) || stage > hs__max_alloc(&d->dev))
    return hs__fail(HS_ERR_INVALID_ARG, "cache slot of %d rows of %zu B on %s", cap, rb,
                    d->dev.info.name);
  hs_coo_slot *s = calloc(1, sizeof *s);
  if (!s) return hs__fail(HS_ERR_NOMEM, "cache slot");
  s->d = d;
  s->cap = cap;
  size_t ib = sizeof(int32_t) * (size_t)cap;
  hs_status st = HS_OK;
  s->h_gidx = malloc(ib);
  s->h_midx = malloc(ib);
  if (!s->h_gidx || !s->h_midx) {
    st = hs__fail(HS_ERR_NOMEM, "cache slot of %d rows", cap);
    goto fail;
  }
  if ((st = make_buf(d, stage, CL_MEM_READ_ONLY, &s->staging))) goto fail;
  if ((st = make_buf(d, ib, CL_MEM_READ_ONLY, &s->gidx))) goto fail;
  if ((st = make_buf(d, ib, CL_MEM_READ_ONLY, &s->midx))) goto fail;
  *out = s;
  return HS_OK;
fail:
  hs__coo_slot_destroy(s);
  return st;
}

/* Wait for (only if still running) and forget the slot's previous batch. */
static hs_status slot_settle(hs_coo_slot *s) {
  hs_status st = HS_OK;
  if (s->n_done) st = hs__events_wait(s->done, s->n_done);
  if (s->n_up) {
    hs_status st2 = hs__events_wait(s->up, s->n_up);
    if (st == HS_OK) st = st2;
  }
  hs__events_release(s->done, s->n_done);
  hs__events_release(s->up, s->n_up);
  s->n_done = s->n_up = 0;
  s->ev_gidx = s->ev_midx = s->ev_stage = NULL;
  s->ev_from = s->ev_scol = s->ev_sval = NULL;
  s->plan = NULL;
  return st;
}

void hs__coo_slot_destroy(hs_coo_slot *s) {
  if (!s) return;
  slot_settle(s);
  hs__mem_release(&s->staging);
  hs__mem_release(&s->gidx);
  hs__mem_release(&s->midx);
  hs__mem_release(&s->s_col);
  hs__mem_release(&s->s_val);
  hs__mem_release(&s->from);
  free(s->h_gidx);
  free(s->h_midx);
  free(s->h_from);
  free(s);
}

uint64_t hs__coo_slot_device_bytes(const hs_coo_slot *s) {
  if (s->d->sparse)
    return (uint64_t)s->cap_entries * hs__coo_entry_bytes(s->d->core) +
           (uint64_t)s->cap * sizeof *s->h_from;
  return (uint64_t)s->cap * (hs__coo_row_bytes(s->d->core) + 2 * sizeof(int32_t));
}

/* The end of an upload (dense or sparse): a marker over the slot's writes
 * when the caller wants one event, then the slot remembers the plan its
 * assembly must be given. */
static hs_status upload_finish(hs_coo_slot *s, cl_command_queue q, const hs_coo_plan *plan,
                               hs_status st, cl_event *ev) {
  if (st == HS_OK && ev && s->n_up > 0) st = hs__queue_marker(q, (cl_uint)s->n_up, s->up, ev);
  if (st != HS_OK) return hs__fail_context(st, "cache upload on %s", s->d->dev.info.name);
  s->plan = plan;
  s->plan_n = plan->n;
  s->plan_miss = plan->n_miss;
  s->assembled = false;
  return HS_OK;
}

hs_status hs__coo_dev_upload(hs_coo_slot *s, cl_command_queue q, const hs_coo_plan *plan,
                             const void *miss_rows, const cl_event *wait, int n_wait,
                             cl_event *ev) {
  if (ev) *ev = NULL;
  if (s->d->sparse)
    return hs__fail(HS_ERR_INVALID_ARG, "cache upload: sparse rows go through "
                    "hs__coo_dev_upload_sparse");
  if (plan->n > s->cap)
    return hs__fail(HS_ERR_INVALID_ARG, "cache upload: batch of %d rows, slot holds %d",
                    plan->n, s->cap);
  hs_status st = slot_settle(s);
  if (st != HS_OK) return st;
  size_t rb = hs__coo_row_bytes(s->d->core);
  cl_uint nw = (cl_uint)n_wait;
  if (plan->n_hit > 0) {
    /* misses read slot 0, a placeholder the miss scatter overwrites */
    for (int32_t i = 0; i < plan->n; i++) s->h_gidx[i] = plan->slot[i] >= 0 ? plan->slot[i] : 0;
    st = hs__mem_write(q, s->gidx, false, 0, sizeof(int32_t) * (size_t)plan->n, s->h_gidx, nw,
                       wait, &s->ev_gidx);
    if (st == HS_OK) s->up[s->n_up++] = s->ev_gidx;
  }
  if (st == HS_OK && plan->n_miss > 0) {
    memcpy(s->h_midx, plan->miss_local, sizeof(int32_t) * (size_t)plan->n_miss);
    st = hs__mem_write(q, s->midx, false, 0, sizeof(int32_t) * (size_t)plan->n_miss, s->h_midx,
                       nw, wait, &s->ev_midx);
    if (st == HS_OK) s->up[s->n_up++] = s->ev_midx;
    if (st == HS_OK)
      st = hs__mem_write(q, s->staging, false, 0, (size_t)plan->n_miss * rb, miss_rows, nw, wait,
                         &s->ev_stage);
    if (st == HS_OK) s->up[s->n_up++] = s->ev_stage;
  }
  return upload_finish(s, q, plan, st, ev);
}

/* The NDRange of a row copy: dimension 0 along a row, dimension 1 over the
 * rows, as the gather kernel's (the kernels stride over the rest). */
static hs_status scatter_enqueue(hs_coo_dev *d, cl_command_queue q, cl_mem src, cl_mem idx,
                                 uint32_t n, cl_mem dst, cl_uint n_wait, const cl_event *wait,
                                 cl_event *ev) {
  size_t rb = hs__coo_row_bytes(d->core);
  bool words = rb % 4 == 0;
  cl_kernel k = words ? d->k32 : d->k8;
  cl_ulong row_elems = words ? rb / 4 : rb;
  hs_karg args[] = {HS_KARG(src), HS_KARG(row_elems), HS_KARG(idx), HS_KARG(n), HS_KARG(dst)};
  hs_status st = hs__kernel_args(k, args, (int)HS_ARRAY_LEN(args));
  size_t global[2] = {row_elems < 256 ? (size_t)row_elems : 256, n < 65536 ? n : 65536};
  if (st == HS_OK) st = hs__launch(q, k, 2, global, NULL, n_wait, wait, ev);
  return st == HS_OK ? HS_OK : hs__fail_context(st, "cache scatter");
}

#define MAX_WAIT 24

/* The checks every assembly makes before enqueueing anything. */
static hs_status assemble_check(const hs_coo_slot *s, const hs_coo_plan *plan, int n_wait) {
  if (s->plan != plan || s->plan_n != plan->n || s->plan_miss != plan->n_miss || s->assembled)
    return hs__fail(HS_ERR_INVALID_ARG, "cache assemble: the slot's upload is not this plan's");
  if (s->d->device_rows != plan->insert_first)
    return hs__fail(HS_ERR_INVALID_ARG,
                    "cache assemble: the device holds %lld rows, the batch inserts at %d "
                    "(prefill not uploaded, or batches out of classification order)",
                    (long long)s->d->device_rows, plan->insert_first);
  if (n_wait < 0 || n_wait > MAX_WAIT - 4)
    return hs__fail(HS_ERR_INVALID_ARG, "cache assemble: %d events to wait for", n_wait);
  return HS_OK;
}

hs_status hs__coo_dev_assemble(hs_coo_slot *s, cl_command_queue q, const hs_coo_plan *plan,
                               cl_mem x, const cl_event *wait, int n_wait, cl_event *events,
                               int *n_events) {
  *n_events = 0;
  hs_coo_dev *d = s->d;
  if (d->sparse)
    return hs__fail(HS_ERR_INVALID_ARG, "cache assemble: sparse rows go through "
                    "hs__coo_dev_assemble_sparse");
  hs_status st = assemble_check(s, plan, n_wait);
  if (st != HS_OK) return st;
  size_t rb = hs__coo_row_bytes(d->core);
  cl_event list[MAX_WAIT];
  cl_event gathered = NULL, scattered = NULL, inserted = NULL;
  int k;

  if (plan->n_hit > 0) {
    /* The sampler's gather enqueue takes no wait list: a barrier carries
     * the dependencies (the index upload, the cache's latest command, the
     * caller's events) for everything enqueued after it. The miss rows are
     * not among them: uploaded on a second queue, they may still be in
     * flight while the hits are gathered (a barrier also waits for every
     * earlier command of its own queue). */
    k = 0;
    list[k++] = s->ev_gidx;
    if (d->last) list[k++] = d->last;
    for (int i = 0; i < n_wait; i++) list[k++] = wait[i];
    if ((st = hs__queue_wait_for(q, (cl_uint)k, list)) != HS_OK) {
      st = hs__fail_context(st, "cache gather");
      goto fail;
    }
    if ((st = hs__gather_cl_enqueue(d->gather, q, d->cache, rb, s->gidx, (uint32_t)plan->n, x,
                                    0, false, &gathered)))
      goto fail;
    set_last(d, hs__event_retain(gathered));
  }
  if (plan->n_miss > 0) {
    k = 0;
    list[k++] = s->ev_midx;
    list[k++] = s->ev_stage;
    if (gathered) list[k++] = gathered;
    for (int i = 0; i < n_wait; i++) list[k++] = wait[i];
    if ((st = scatter_enqueue(d, q, s->staging, s->midx, (uint32_t)plan->n_miss, x, (cl_uint)k,
                              list, &scattered)))
      goto fail;
  }
  if (plan->n_insert > 0) {
    k = 0;
    list[k++] = s->ev_stage;
    if (d->last) list[k++] = d->last;
    if ((st = hs__mem_copy(q, s->staging, d->cache, 0, (size_t)plan->insert_first * rb,
                           (size_t)plan->n_insert * rb, (cl_uint)k, list, &inserted)) != HS_OK) {
      st = hs__fail_context(st, "cache insert");
      goto fail;
    }
    set_last(d, hs__event_retain(inserted));
    d->device_rows += plan->n_insert;
  }
  /* X is complete with the scatter (which follows the gather), or with the
   * gather alone when every row hit. */
  cl_event x_done = scattered ? scattered : gathered;
  if (x_done) events[(*n_events)++] = x_done;
  if (inserted) events[(*n_events)++] = inserted;
  if (gathered && gathered != x_done) hs__events_release(&gathered, 1);
  for (int i = 0; i < *n_events; i++) s->done[s->n_done++] = hs__event_retain(events[i]);
  s->assembled = true;
  return HS_OK;
fail:
  hs__events_release(&gathered, 1);
  hs__events_release(&scattered, 1);
  hs__events_release(&inserted, 1);
  return st;
}

/* ---- sparse rows ---------------------------------------------------------------- */

/* Write entries [at, at + k) of a pool array from `src`, after the
 * cache's latest command; blocking (prefill only). */
static hs_status pool_write(hs_coo_dev *d, cl_command_queue q, cl_mem pool, int64_t at,
                            int64_t k, const void *src) {
  if (k == 0) return HS_OK;
  cl_event ev = NULL;
  hs_status st = hs__mem_write(q, pool, true, 4 * (size_t)at, 4 * (size_t)k, src,
                               d->last ? 1 : 0, d->last ? &d->last : NULL, &ev);
  if (st != HS_OK) return hs__fail_context(st, "cache prefill");
  set_last(d, ev);
  return HS_OK;
}

hs_status hs__coo_dev_prefill_sparse(hs_coo_dev *d, cl_command_queue q, hs_sparse_source src,
                                     size_t chunk_bytes) {
  if (!d->sparse)
    return hs__fail(HS_ERR_INVALID_ARG, "cache prefill: the cache holds dense rows");
  int64_t rows = hs__coo_rows(d->core);
  if (d->device_rows >= rows) return HS_OK;
  if (chunk_bytes == 0) chunk_bytes = (size_t)4 << 20;
  int64_t per = (int64_t)(chunk_bytes / hs__coo_entry_bytes(d->core)), longest = 0;
  for (int64_t r = d->device_rows; r < rows; r++) {
    int64_t len = hs__coo_slot_entry(d->core, (int32_t)r + 1) -
                  hs__coo_slot_entry(d->core, (int32_t)r);
    if (len > longest) longest = len;
  }
  /* A chunk: rows while their entries stay within `per` (one row at
   * least), at most 65536 rows. */
  const int32_t max_rows = 65536;
  int64_t cap = per > longest ? per : longest;
  int32_t *ptr = malloc(sizeof *ptr * ((size_t)max_rows + 1));
  int32_t *col = malloc(sizeof *col * (size_t)(cap + 1));
  float *val = d->valued ? malloc(sizeof *val * (size_t)(cap + 1)) : NULL;
  hs_status st = HS_OK;
  if (!ptr || !col || (d->valued && !val)) {
    st = hs__fail(HS_ERR_NOMEM, "cache prefill: %lld entries", (long long)cap);
    goto out;
  }
  const int32_t *vertex = hs__coo_slot_vertices(d->core);
  while (d->device_rows < rows) {
    int32_t r0 = (int32_t)d->device_rows, k = 0;
    int64_t at = hs__coo_slot_entry(d->core, r0);
    while (r0 + k < rows && k < max_rows &&
           (k == 0 || hs__coo_slot_entry(d->core, r0 + k + 1) - at <= per))
      k++;
    int64_t n_ent = hs__coo_slot_entry(d->core, r0 + k) - at;
    if ((st = src.read(src.ctx, vertex + r0, k, ptr, col, val, cap)) != HS_OK) break;
    for (int32_t j = 0; j < k; j++)
      if (ptr[j + 1] - ptr[j] !=
          hs__coo_slot_entry(d->core, r0 + j + 1) - hs__coo_slot_entry(d->core, r0 + j)) {
        st = hs__fail(HS_ERR_FORMAT, "cache prefill: vertex %d has %d entries, the cache "
                      "expects %lld", vertex[r0 + j], ptr[j + 1] - ptr[j],
                      (long long)(hs__coo_slot_entry(d->core, r0 + j + 1) -
                                  hs__coo_slot_entry(d->core, r0 + j)));
        goto out;
      }
    if ((st = pool_write(d, q, d->pool_col, at, n_ent, col)) != HS_OK ||
        (d->valued && (st = pool_write(d, q, d->pool_val, at, n_ent, val)) != HS_OK))
      break;
    d->device_rows += k;
  }
out:
  free(ptr);
  free(col);
  free(val);
  return st;
}

hs_status hs__coo_slot_create_sparse(hs_coo_dev *d, int32_t cap, int64_t cap_entries,
                                     hs_coo_slot **out) {
  *out = NULL;
  if (!d->sparse)
    return hs__fail(HS_ERR_INVALID_ARG, "cache slot: the cache holds dense rows");
  if (cap < 1 || cap_entries < 0 || cap_entries > hs__coo_dev_max_entries(&d->dev) ||
      (uint64_t)cap * sizeof(int64_t) > hs__max_alloc(&d->dev))
    return hs__fail(HS_ERR_INVALID_ARG, "cache slot of %d rows, %lld entries on %s", cap,
                    (long long)cap_entries, d->dev.info.name);
  hs_coo_slot *s = calloc(1, sizeof *s);
  if (!s) return hs__fail(HS_ERR_NOMEM, "cache slot");
  s->d = d;
  s->cap = cap;
  s->cap_entries = cap_entries;
  hs_status st = HS_OK;
  if (!(s->h_from = malloc(sizeof *s->h_from * (size_t)cap))) {
    st = hs__fail(HS_ERR_NOMEM, "cache slot of %d rows", cap);
    goto fail;
  }
  if ((st = words_buf(&d->ctx, &d->dev, CL_MEM_READ_ONLY, cap_entries, "cache slot", &s->s_col)) ||
      (d->valued &&
       (st = words_buf(&d->ctx, &d->dev, CL_MEM_READ_ONLY, cap_entries, "cache slot",
                       &s->s_val))) ||
      (st = words_buf(&d->ctx, &d->dev, CL_MEM_READ_ONLY, 2 * (int64_t)cap, "cache slot",
                      &s->from)))
    goto fail;
  *out = s;
  return HS_OK;
fail:
  hs__coo_slot_destroy(s);
  return st;
}

hs_status hs__coo_dev_upload_sparse(hs_coo_slot *s, cl_command_queue q, const hs_coo_plan *plan,
                                    const int32_t *miss_ptr, const int32_t *miss_col,
                                    const float *miss_val, const cl_event *wait, int n_wait,
                                    cl_event *ev) {
  if (ev) *ev = NULL;
  hs_coo_dev *d = s->d;
  if (!d->sparse)
    return hs__fail(HS_ERR_INVALID_ARG, "cache upload: the cache holds dense rows");
  int64_t staged = miss_ptr[plan->n_miss];
  if (plan->n > s->cap || staged > s->cap_entries || (d->valued != (miss_val != NULL)))
    return hs__fail(HS_ERR_INVALID_ARG,
                    "cache upload: batch of %d rows, %lld staged entries%s; slot holds %d, %lld",
                    plan->n, (long long)staged,
                    d->valued != (miss_val != NULL) ? ", values missing or unexpected" : "",
                    s->cap, (long long)s->cap_entries);
  hs_status st = slot_settle(s);
  if (st != HS_OK) return st;
  const hs_coo *core = d->core;
  for (int32_t i = 0; i < plan->n; i++)
    if (plan->slot[i] >= 0) s->h_from[i] = hs__coo_slot_entry(core, plan->slot[i]);
  for (int32_t j = 0; j < plan->n_miss; j++) s->h_from[plan->miss_local[j]] = -1 - miss_ptr[j];
  cl_uint nw = (cl_uint)n_wait;
  if (plan->n > 0) {
    st = hs__mem_write(q, s->from, false, 0, sizeof *s->h_from * (size_t)plan->n, s->h_from, nw,
                       wait, &s->ev_from);
    if (st == HS_OK) s->up[s->n_up++] = s->ev_from;
  }
  if (st == HS_OK && staged > 0) {
    st = hs__mem_write(q, s->s_col, false, 0, 4 * (size_t)staged, miss_col, nw, wait, &s->ev_scol);
    if (st == HS_OK) s->up[s->n_up++] = s->ev_scol;
    if (st == HS_OK && d->valued)
      st = hs__mem_write(q, s->s_val, false, 0, 4 * (size_t)staged, miss_val, nw, wait,
                         &s->ev_sval);
    if (st == HS_OK && d->valued) s->up[s->n_up++] = s->ev_sval;
  }
  return upload_finish(s, q, plan, st, ev);
}

/* Copy the first `k` staged entries of one array into the pool at `at`,
 * after the staging's upload and the cache's latest command. */
static hs_status pool_insert(hs_coo_dev *d, cl_command_queue q, cl_mem staging, cl_event staged,
                             cl_mem pool, int64_t at, int64_t k, cl_event *ev) {
  cl_event list[2];
  cl_uint n = 0;
  list[n++] = staged;
  if (d->last) list[n++] = d->last;
  hs_status st = hs__mem_copy(q, staging, pool, 0, 4 * (size_t)at, 4 * (size_t)k, n, list, ev);
  if (st != HS_OK) return hs__fail_context(st, "cache insert");
  set_last(d, hs__event_retain(*ev));
  return HS_OK;
}

hs_status hs__coo_dev_assemble_sparse(hs_coo_slot *s, cl_command_queue q,
                                      const hs_coo_plan *plan, cl_mem x_ptr, cl_mem x_col,
                                      cl_mem x_val, const cl_event *wait, int n_wait,
                                      cl_event *events, int *n_events) {
  *n_events = 0;
  hs_coo_dev *d = s->d;
  if (!d->sparse)
    return hs__fail(HS_ERR_INVALID_ARG, "cache assemble: the cache holds dense rows");
  hs_status st = assemble_check(s, plan, n_wait);
  if (st != HS_OK) return st;
  cl_event list[MAX_WAIT];
  cl_event filled = NULL, ins_col = NULL, ins_val = NULL;
  if (plan->n > 0) {
    /* Binary rows bind the column arrays where values would go: the kernel
     * never reads them. */
    cl_int has_val = d->valued;
    cl_uint n = (cl_uint)plan->n;
    cl_mem pv = d->valued ? d->pool_val : d->pool_col, sv = d->valued ? s->s_val : s->s_col;
    cl_mem xv = d->valued ? x_val : x_col;
    hs_karg args[] = {HS_KARG(x_ptr), HS_KARG(s->from), HS_KARG(n), HS_KARG(d->pool_col),
                      HS_KARG(pv), HS_KARG(s->s_col), HS_KARG(sv), HS_KARG(has_val),
                      HS_KARG(x_col), HS_KARG(xv)};
    int k = 0;
    for (int i = 0; i < s->n_up; i++) list[k++] = s->up[i];
    if (d->last) list[k++] = d->last;
    for (int i = 0; i < n_wait; i++) list[k++] = wait[i];
    /* dimension 0 along a row's entries (rows are short: bag-of-words rows
     * hold tens), dimension 1 over the rows; the kernel strides */
    size_t global[2] = {32, n < 65536 ? n : 65536};
    st = hs__kernel_args(d->krows, args, (int)HS_ARRAY_LEN(args));
    if (st == HS_OK) st = hs__launch(q, d->krows, 2, global, NULL, (cl_uint)k, list, &filled);
    if (st != HS_OK) {
      st = hs__fail_context(st, "cache rows");
      goto fail;
    }
    set_last(d, hs__event_retain(filled));
  }
  if (plan->n_insert_entries > 0) {
    if ((st = pool_insert(d, q, s->s_col, s->ev_scol, d->pool_col, plan->insert_entry_first,
                          plan->n_insert_entries, &ins_col)) != HS_OK ||
        (d->valued &&
         (st = pool_insert(d, q, s->s_val, s->ev_sval, d->pool_val, plan->insert_entry_first,
                           plan->n_insert_entries, &ins_val)) != HS_OK))
      goto fail;
  }
  d->device_rows += plan->n_insert;
  if (filled) events[(*n_events)++] = filled;
  if (ins_col) events[(*n_events)++] = ins_col;
  if (ins_val) events[(*n_events)++] = ins_val;
  for (int i = 0; i < *n_events; i++) s->done[s->n_done++] = hs__event_retain(events[i]);
  s->assembled = true;
  return HS_OK;
fail:
  hs__events_release(&filled, 1);
  hs__events_release(&ins_col, 1);
  hs__events_release(&ins_val, 1);
  return st;
}
