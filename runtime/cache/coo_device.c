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
};

int64_t hs__coo_dev_max_rows(const hs_dev *dev, size_t row_bytes) {
  return row_bytes ? (int64_t)(hs__max_alloc(dev) / row_bytes) : 0;
}

hs_status hs__coo_dev_create(const hs_ctx *ctx, const hs_dev *dev, hs_coo *core,
                             hs_coo_dev **out) {
  *out = NULL;
  size_t rb = hs__coo_row_bytes(core);
  int64_t cap = hs__coo_capacity(core), max = hs__coo_dev_max_rows(dev, rb);
  if (cap > max)
    return hs__fail(HS_ERR_INVALID_ARG,
                    "cache: %lld rows of %zu B exceed one allocation on %s (%lld rows)",
                    (long long)cap, rb, dev->info.name, (long long)max);
  hs_coo_dev *d = calloc(1, sizeof *d);
  if (!d) return hs__fail(HS_ERR_NOMEM, "device cache");
  d->dev = *dev;
  d->core = core;
  d->ctx = *ctx;
  hs_status st = HS_OK;
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
  hs__gather_cl_destroy(d->gather);
  hs__kernel_release(&d->k32);
  hs__kernel_release(&d->k8);
  hs__program_release(&d->prog);
  free(d);
}

cl_mem hs__coo_dev_buffer(const hs_coo_dev *d) { return d->cache; }

/* Make `ev` (a reference the caller hands over) the cache's latest
 * command. */
static void set_last(hs_coo_dev *d, cl_event ev) {
  hs__events_release(&d->last, 1);
  d->last = ev;
}

hs_status hs__coo_dev_prefill(hs_coo_dev *d, cl_command_queue q, hs_row_source src,
                              size_t chunk_bytes) {
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
  s->plan = NULL;
  return st;
}

void hs__coo_slot_destroy(hs_coo_slot *s) {
  if (!s) return;
  slot_settle(s);
  hs__mem_release(&s->staging);
  hs__mem_release(&s->gidx);
  hs__mem_release(&s->midx);
  free(s->h_gidx);
  free(s->h_midx);
  free(s);
}

uint64_t hs__coo_slot_device_bytes(const hs_coo_slot *s) {
  return (uint64_t)s->cap * (hs__coo_row_bytes(s->d->core) + 2 * sizeof(int32_t));
}

hs_status hs__coo_dev_upload(hs_coo_slot *s, cl_command_queue q, const hs_coo_plan *plan,
                             const void *miss_rows, const cl_event *wait, int n_wait,
                             cl_event *ev) {
  if (ev) *ev = NULL;
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
  if (st == HS_OK && ev && s->n_up > 0) st = hs__queue_marker(q, (cl_uint)s->n_up, s->up, ev);
  if (st != HS_OK) return hs__fail_context(st, "cache upload on %s", s->d->dev.info.name);
  s->plan = plan;
  s->plan_n = plan->n;
  s->plan_miss = plan->n_miss;
  s->assembled = false;
  return HS_OK;
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

hs_status hs__coo_dev_assemble(hs_coo_slot *s, cl_command_queue q, const hs_coo_plan *plan,
                               cl_mem x, const cl_event *wait, int n_wait, cl_event *events,
                               int *n_events) {
  *n_events = 0;
  hs_coo_dev *d = s->d;
  if (s->plan != plan || s->plan_n != plan->n || s->plan_miss != plan->n_miss || s->assembled)
    return hs__fail(HS_ERR_INVALID_ARG, "cache assemble: the slot's upload is not this plan's");
  if (d->device_rows != plan->insert_first)
    return hs__fail(HS_ERR_INVALID_ARG,
                    "cache assemble: the device holds %lld rows, the batch inserts at %d "
                    "(prefill not uploaded, or batches out of classification order)",
                    (long long)d->device_rows, plan->insert_first);
  if (n_wait < 0 || n_wait > MAX_WAIT - 4)
    return hs__fail(HS_ERR_INVALID_ARG, "cache assemble: %d events to wait for", n_wait);
  size_t rb = hs__coo_row_bytes(d->core);
  cl_event list[MAX_WAIT];
  cl_event gathered = NULL, scattered = NULL, inserted = NULL;
  hs_status st = HS_OK;
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
