/* The pipeline engine: batches flow through a fixed list of stages over a
 * fixed pool of slots (docs/architecture.md, "Data flow of a batch"). Each stage is a begin/finish pair:
 * begin enqueues the stage's work for one slot (or does host work outright)
 * and hands back the OpenCL events it produced; finish runs once those
 * events are complete. Three drivers call the same stages:
 *
 *  - HS_PIPE_OFF      one batch at a time, stage after stage (the baseline);
 *  - HS_PIPE_THREADS  one host thread per stage, bounded FIFO queues between
 *                     them; back-pressure comes from the slot pool;
 *  - HS_PIPE_ASYNC    one host thread advances every in-flight slot by
 *                     polling event status; with nothing to do it sleeps
 *                     until a completion callback of a pending event, or
 *                     2 ms (callbacks only wake it: what completed, and
 *                     any error, is learnt by polling).
 *
 * In every driver each stage sees batches in increasing order, one at a
 * time, so results do not depend on the driver. Slots are the caller's and
 * allocated once: the engine allocates nothing per batch. */
#ifndef HS_PIPE_H
#define HS_PIPE_H

#include <signal.h>
#include <stdint.h>

#include "hs_dev.h"

#define HS_PIPE_MAX_STAGES 8
#define HS_PIPE_MAX_EVENTS 16

typedef struct hs_pipe_slot {
  int index;     /* position in the pool */
  int64_t batch; /* batch it carries (set by the engine) */
  void *user;    /* the caller's per-slot state */
  /* engine-private */
  cl_event events[HS_PIPE_MAX_EVENTS];
  int n_events;
  bool notified; /* async: completion callbacks asked for its events */
  double t_begin;
} hs_pipe_slot;

typedef struct hs_pipe_stage {
  const char *name;
  /* Start this stage for slot->batch. Device work is enqueued and its
   * events written to `events` (at most HS_PIPE_MAX_EVENTS; *n_events set;
   * the engine releases them). Host-only stages do their work here and
   * return no event. */
  hs_status (*begin)(void *ctx, hs_pipe_slot *slot, cl_event *events, int *n_events);
  /* Runs when the events are complete; may be NULL. */
  hs_status (*finish)(void *ctx, hs_pipe_slot *slot);
} hs_pipe_stage;

typedef enum hs_pipe_mode {
  HS_PIPE_OFF = 0,
  HS_PIPE_THREADS = 1,
  HS_PIPE_ASYNC = 2,
} hs_pipe_mode;

typedef struct hs_pipe_stats {
  double wall_s;
  /* Per stage: time from begin until its events were seen complete and
   * finish returned (device time included), and time spent waiting for a
   * slot to arrive (threads driver). */
  double busy_s[HS_PIPE_MAX_STAGES];
  double wait_s[HS_PIPE_MAX_STAGES];
  int64_t batches; /* batches that went through every stage */
  int max_in_flight;
} hs_pipe_stats;

typedef struct hs_pipe {
  const hs_pipe_stage *stages;
  int n_stages;
  void *ctx;
  hs_pipe_slot *slots; /* the pool, `depth` entries */
  int depth;
  hs_pipe_mode mode;
  /* Optional: set non-zero (e.g. from a signal handler) to stop admitting
   * batches; those in flight are completed. */
  volatile sig_atomic_t *stop;
  /* Optional: run first on every thread the threads driver starts (e.g. to
   * bind it to the host's cores). */
  void (*thread_init)(void *ctx);
  /* Threads driver: stage s's thread runs stage_nice[s] nicer than the
   * thread that started it (hs__thread_nicer; 0: the same), so that host
   * work that can wait takes the CPU time the other stages leave instead
   * of time slices from them. Ignored by the other drivers, which run the
   * stages on the caller's thread. */
  int stage_nice[HS_PIPE_MAX_STAGES];
  /* Optional (gate_lag > 0): stage gate_stage begins batch b only once
   * batch b - gate_lag has finished the last stage (e.g. a lookup that
   * needs the updates of every batch up to b - gate_lag). A driver never
   * waits for it with depth <= gate_lag: a batch is admitted only once
   * the batch `depth` before it has left. */
  int gate_stage, gate_lag;
} hs_pipe;

/* Run batches [first, first + count) through every stage. On an error the
 * engine stops admitting, drains what is in flight, and returns the first
 * error (its detail kept). `stats` (optional) is overwritten. */
hs_status hs__pipe_run(const hs_pipe *p, int64_t first, int64_t count, hs_pipe_stats *stats);

#endif
