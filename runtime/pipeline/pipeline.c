/* The three pipeline drivers over one set of stages (see hs_pipe.h). */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "hs_pipe.h"

/* ---- shared: first error wins ------------------------------------------------- */

typedef struct pipe_err {
  pthread_mutex_t mu;
  hs_status st;
  char detail[1024];
  const char *stage;
  /* Threads driver, for the gate: batches that left the last stage (in
   * order), signalled on `left_cv` (as is an error). */
  pthread_cond_t left_cv;
  int64_t left;
} pipe_err;

static void err_record(pipe_err *e, hs_status st, const char *stage) {
  pthread_mutex_lock(&e->mu);
  if (e->st == HS_OK) {
    e->st = st;
    e->stage = stage;
    snprintf(e->detail, sizeof e->detail, "%s", hs_last_error());
  }
  pthread_cond_broadcast(&e->left_cv);
  pthread_mutex_unlock(&e->mu);
}

/* Batches `first` .. b - gate_lag that must have left before stage s
 * begins batch b (0: none). */
static int64_t gate_need(const hs_pipe *p, int s, int64_t first, int64_t b) {
  if (p->gate_lag <= 0 || s != p->gate_stage) return 0;
  int64_t n = b - p->gate_lag - first + 1;
  return n > 0 ? n : 0;
}

static bool err_set(pipe_err *e) {
  pthread_mutex_lock(&e->mu);
  bool set = e->st != HS_OK;
  pthread_mutex_unlock(&e->mu);
  return set;
}

static hs_status err_return(pipe_err *e) {
  if (e->st == HS_OK) return HS_OK;
  return hs__fail(e->st, "stage %s: %s", e->stage, e->detail);
}

static bool stopped(const hs_pipe *p) { return p->stop && *p->stop; }

/* begin + wait + finish of one stage, blocking. */
static hs_status run_stage_blocking(const hs_pipe *p, int s, hs_pipe_slot *slot) {
  const hs_pipe_stage *st = &p->stages[s];
  slot->n_events = 0;
  hs_status r = st->begin(p->ctx, slot, slot->events, &slot->n_events);
  if (r == HS_OK) r = hs__events_wait(slot->events, slot->n_events);
  hs__events_release(slot->events, slot->n_events);
  slot->n_events = 0;
  if (r == HS_OK && st->finish) r = st->finish(p->ctx, slot);
  return r;
}

/* ---- HS_PIPE_OFF ---------------------------------------------------------- */

static hs_status run_off(const hs_pipe *p, int64_t first, int64_t count, hs_pipe_stats *stats) {
  hs_pipe_slot *slot = &p->slots[0];
  for (int64_t b = first; b < first + count && !stopped(p); b++) {
    slot->batch = b;
    for (int s = 0; s < p->n_stages; s++) {
      double t0 = hs__now();
      hs_status r = run_stage_blocking(p, s, slot);
      stats->busy_s[s] += hs__now() - t0;
      if (r != HS_OK) return hs__fail_context(r, "stage %s, batch %lld", p->stages[s].name,
                                              (long long)b);
    }
    stats->batches++;
  }
  stats->max_in_flight = count > 0 ? 1 : 0;
  return HS_OK;
}

/* ---- HS_PIPE_THREADS -------------------------------------------------------- */

/* A bounded FIFO of slot pointers; NULL marks the end of the stream. */
typedef struct slot_queue {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  hs_pipe_slot *items[65];
  int head, count, cap;
} slot_queue;

static void q_init(slot_queue *q, int cap) {
  memset(q, 0, sizeof *q);
  pthread_mutex_init(&q->mu, NULL);
  pthread_cond_init(&q->cv, NULL);
  q->cap = cap;
}

static void q_destroy(slot_queue *q) {
  pthread_mutex_destroy(&q->mu);
  pthread_cond_destroy(&q->cv);
}

/* Never blocks: capacity is the pool size + 1 (for the end marker), so a
 * queue can always take what is pushed. */
static void q_push(slot_queue *q, hs_pipe_slot *s) {
  pthread_mutex_lock(&q->mu);
  q->items[(q->head + q->count) % q->cap] = s;
  q->count++;
  pthread_cond_signal(&q->cv);
  pthread_mutex_unlock(&q->mu);
}

static hs_pipe_slot *q_pop(slot_queue *q, double *waited) {
  double t0 = hs__now();
  pthread_mutex_lock(&q->mu);
  while (q->count == 0) pthread_cond_wait(&q->cv, &q->mu);
  hs_pipe_slot *s = q->items[q->head];
  q->head = (q->head + 1) % q->cap;
  q->count--;
  pthread_mutex_unlock(&q->mu);
  *waited += hs__now() - t0;
  return s;
}

typedef struct thread_arg {
  const hs_pipe *p;
  int stage;
  slot_queue *in, *out; /* out == free pool for the last stage */
  slot_queue *free_q;   /* the first stage takes slots from here */
  int64_t first, count;
  pipe_err *err;
  hs_pipe_stats *stats;
  int64_t done;
} thread_arg;

/* The gate, before stage a->stage begins batch b (or an error). */
static void gate_wait(thread_arg *a, int64_t b) {
  int64_t need = gate_need(a->p, a->stage, a->first, b);
  if (need <= 0) return;
  double t0 = hs__now();
  pthread_mutex_lock(&a->err->mu);
  while (a->err->left < need && a->err->st == HS_OK)
    pthread_cond_wait(&a->err->left_cv, &a->err->mu);
  pthread_mutex_unlock(&a->err->mu);
  a->stats->wait_s[a->stage] += hs__now() - t0;
}

static void *stage_thread(void *arg) {
  thread_arg *a = arg;
  const hs_pipe *p = a->p;
  const int s = a->stage;
  const bool last = s == p->n_stages - 1;
  if (p->thread_init) p->thread_init(p->ctx);
  if (p->stage_nice[s] > 0) (void)hs__thread_nicer(p->stage_nice[s]);
  if (s == 0) {
    for (int64_t b = a->first; b < a->first + a->count; b++) {
      if (stopped(p) || err_set(a->err)) break;
      hs_pipe_slot *slot = q_pop(a->free_q, &a->stats->wait_s[0]);
      slot->batch = b;
      gate_wait(a, b);
      if (a->p->gate_lag > 0 && s == a->p->gate_stage && err_set(a->err)) {
        q_push(a->free_q, slot); /* an error came while waiting at the gate */
        break;
      }
      double t0 = hs__now();
      hs_status r = run_stage_blocking(p, 0, slot);
      a->stats->busy_s[0] += hs__now() - t0;
      if (r != HS_OK) err_record(a->err, r, p->stages[0].name);
      if (last) {
        if (r == HS_OK) a->done++;
        pthread_mutex_lock(&a->err->mu);
        a->err->left++;
        pthread_cond_broadcast(&a->err->left_cv);
        pthread_mutex_unlock(&a->err->mu);
        q_push(a->free_q, slot);
      } else {
        q_push(a->out, slot);
      }
    }
    if (!last) q_push(a->out, NULL);
    return NULL;
  }
  for (;;) {
    hs_pipe_slot *slot = q_pop(a->in, &a->stats->wait_s[s]);
    if (!slot) break;
    gate_wait(a, slot->batch);
    /* After an error, slots still flow (so the pool drains) but no work. */
    if (!err_set(a->err)) {
      double t0 = hs__now();
      hs_status r = run_stage_blocking(p, s, slot);
      a->stats->busy_s[s] += hs__now() - t0;
      if (r != HS_OK) err_record(a->err, r, p->stages[s].name);
      else if (last) a->done++;
    }
    if (last) {
      pthread_mutex_lock(&a->err->mu);
      a->err->left++;
      pthread_cond_broadcast(&a->err->left_cv);
      pthread_mutex_unlock(&a->err->mu);
    }
    q_push(last ? a->free_q : a->out, slot);
  }
  if (!last) q_push(a->out, NULL);
  return NULL;
}

static hs_status run_threads(const hs_pipe *p, int64_t first, int64_t count,
                             hs_pipe_stats *stats) {
  slot_queue queues[HS_PIPE_MAX_STAGES], free_q;
  thread_arg args[HS_PIPE_MAX_STAGES];
  pthread_t th[HS_PIPE_MAX_STAGES];
  pipe_err err = {.st = HS_OK};
  pthread_mutex_init(&err.mu, NULL);
  pthread_cond_init(&err.left_cv, NULL);
  q_init(&free_q, p->depth + 1);
  for (int i = 0; i < p->depth; i++) q_push(&free_q, &p->slots[i]);
  for (int s = 0; s < p->n_stages; s++) q_init(&queues[s], p->depth + 1);
  int started = 0;
  hs_status st = HS_OK;
  for (int s = 0; s < p->n_stages; s++) {
    args[s] = (thread_arg){.p = p, .stage = s, .in = &queues[s],
                           .out = s + 1 < p->n_stages ? &queues[s + 1] : NULL,
                           .free_q = &free_q, .first = first, .count = count,
                           .err = &err, .stats = stats};
    if (pthread_create(&th[s], NULL, stage_thread, &args[s]) != 0) {
      st = hs__fail(HS_ERR_NOMEM, "cannot start the thread of stage %s", p->stages[s].name);
      err_record(&err, st, p->stages[s].name);
      break;
    }
    started++;
  }
  if (started < p->n_stages && started > 0) {
    /* Stand in for the missing stage: hand slots back to the pool (stage 0
     * sees the error and stops admitting) until the end marker. */
    for (;;) {
      double w = 0;
      hs_pipe_slot *slot = q_pop(&queues[started], &w);
      if (!slot) break;
      q_push(&free_q, slot);
    }
  }
  for (int s = 0; s < started; s++) pthread_join(th[s], NULL);
  stats->batches = args[p->n_stages - 1].done;
  stats->max_in_flight = p->depth < count ? p->depth : (int)count;
  for (int s = 0; s < p->n_stages; s++) q_destroy(&queues[s]);
  q_destroy(&free_q);
  st = err_return(&err);
  pthread_cond_destroy(&err.left_cv);
  pthread_mutex_destroy(&err.mu);
  return st;
}

/* ---- HS_PIPE_ASYNC ------------------------------------------------------------ */

/* FIFO of slots waiting for a stage, held in a ring over the pool size. */
typedef struct ring {
  hs_pipe_slot *items[64];
  int head, count, cap;
} ring;

static void ring_push(ring *r, hs_pipe_slot *s) {
  r->items[(r->head + r->count) % r->cap] = s;
  r->count++;
}

static hs_pipe_slot *ring_pop(ring *r) {
  hs_pipe_slot *s = r->items[r->head];
  r->head = (r->head + 1) % r->cap;
  r->count--;
  return s;
}

static hs_status run_async(const hs_pipe *p, int64_t first, int64_t count,
                           hs_pipe_stats *stats) {
  ring waiting[HS_PIPE_MAX_STAGES], free_r = {.cap = p->depth};
  hs_pipe_slot *current[HS_PIPE_MAX_STAGES] = {0};
  for (int s = 0; s < p->n_stages; s++) waiting[s] = (ring){.cap = p->depth};
  for (int i = 0; i < p->depth; i++) ring_push(&free_r, &p->slots[i]);
  int64_t next = first;
  int64_t left = 0; /* batches that left the last stage */
  int in_flight = 0;
  hs_status err = HS_OK;
  const char *err_stage = NULL;
  int idle_spins = 0;

  for (;;) {
    bool progressed = false;
    /* Completions counted before the polls below: one after them wakes
     * the wait at the end of the sweep. */
    uint64_t gen = hs__events_generation();
    /* Admit new batches while slots are free. */
    while (err == HS_OK && !stopped(p) && next < first + count && free_r.count > 0) {
      hs_pipe_slot *slot = ring_pop(&free_r);
      slot->batch = next++;
      ring_push(&waiting[0], slot);
      in_flight++;
      if (in_flight > stats->max_in_flight) stats->max_in_flight = in_flight;
      progressed = true;
    }
    /* Later stages first, so a slot can move through several stages in one
     * sweep when its work is already done. */
    for (int s = p->n_stages - 1; s >= 0; s--) {
      hs_pipe_slot *slot = current[s];
      if (slot) {
        hs_event_state es = hs__events_poll(slot->events, slot->n_events);
        if (es == HS_EVENTS_PENDING) continue;
        hs_status r = es == HS_EVENTS_FAILED ? HS_ERR_OPENCL : HS_OK;
        hs__events_release(slot->events, slot->n_events);
        slot->n_events = 0;
        if (r == HS_OK && p->stages[s].finish) r = p->stages[s].finish(p->ctx, slot);
        stats->busy_s[s] += hs__now() - slot->t_begin;
        if (r != HS_OK && err == HS_OK) {
          err = r;
          err_stage = p->stages[s].name;
          hs__fail_context(r, "stage %s, batch %lld", err_stage, (long long)slot->batch);
        }
        current[s] = NULL;
        if (s + 1 < p->n_stages) {
          ring_push(&waiting[s + 1], slot);
        } else {
          if (err == HS_OK) stats->batches++;
          ring_push(&free_r, slot);
          in_flight--;
          left++;
        }
        progressed = true;
      }
      if (!current[s] && waiting[s].count > 0) {
        /* The gate: not before the batch it waits for has left. */
        if (err == HS_OK && left < gate_need(p, s, first, waiting[s].items[waiting[s].head]->batch))
          continue;
        slot = ring_pop(&waiting[s]);
        if (err != HS_OK) {
          /* Drain without work. */
          if (s + 1 < p->n_stages) ring_push(&waiting[s + 1], slot);
          else {
            ring_push(&free_r, slot);
            in_flight--;
            left++;
          }
          progressed = true;
          continue;
        }
        slot->n_events = 0;
        slot->notified = false;
        slot->t_begin = hs__now();
        hs_status r = p->stages[s].begin(p->ctx, slot, slot->events, &slot->n_events);
        if (r != HS_OK) {
          hs__events_release(slot->events, slot->n_events);
          slot->n_events = 0;
          err = r;
          err_stage = p->stages[s].name;
          hs__fail_context(r, "stage %s, batch %lld", err_stage, (long long)slot->batch);
        }
        current[s] = slot; /* completes (or drains) on the next poll */
        progressed = true;
      }
    }
    if (in_flight == 0 && (err != HS_OK || stopped(p) || next >= first + count)) break;
    if (progressed) {
      idle_spins = 0;
    } else if (++idle_spins > 64) {
      /* Nothing to do until a device finishes: sleep until one of the
       * pending events completes, by callback, or 2 ms at the most (the
       * polls above learn what happened, errors included). Polling every
       * 20 us instead woke this thread every ~80 us on a CPU device that
       * ran the trainer on both cores beside it (an eighth of a core). */
      for (int s = 0; s < p->n_stages; s++)
        if (current[s] && !current[s]->notified) {
          hs__events_notify(current[s]->events, current[s]->n_events);
          current[s]->notified = true;
        }
      hs__events_wait_next(gen, 0.002);
    }
  }
  return err;
}

hs_status hs__pipe_run(const hs_pipe *p, int64_t first, int64_t count, hs_pipe_stats *stats) {
  hs_pipe_stats local;
  if (!stats) stats = &local;
  memset(stats, 0, sizeof *stats);
  if (p->n_stages <= 0 || p->n_stages > HS_PIPE_MAX_STAGES)
    return hs__fail(HS_ERR_INVALID_ARG, "a pipeline of %d stages", p->n_stages);
  if (p->depth <= 0 || p->depth > 64)
    return hs__fail(HS_ERR_INVALID_ARG, "pipeline depth %d (1..64)", p->depth);
  if (count < 0) return hs__fail(HS_ERR_INVALID_ARG, "negative batch count");
  if (p->gate_lag < 0 || (p->gate_lag > 0 && (p->gate_stage < 0 || p->gate_stage >= p->n_stages)))
    return hs__fail(HS_ERR_INVALID_ARG, "pipeline gate: stage %d, lag %d", p->gate_stage,
                    p->gate_lag);
  for (int i = 0; i < p->depth; i++) {
    p->slots[i].index = i;
    p->slots[i].n_events = 0;
  }
  double t0 = hs__now();
  hs_status st;
  switch (p->mode) {
    case HS_PIPE_OFF: st = run_off(p, first, count, stats); break;
    case HS_PIPE_THREADS: st = run_threads(p, first, count, stats); break;
    case HS_PIPE_ASYNC: st = run_async(p, first, count, stats); break;
    default: st = hs__fail(HS_ERR_INVALID_ARG, "unknown pipeline mode %d", (int)p->mode);
  }
  stats->wall_s = hs__now() - t0;
  return st;
}
