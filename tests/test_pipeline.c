/* The pipeline engine with stand-in stages: "device" stages hand back user
 * events that a fake device thread completes after a delay, a host stage
 * sleeps. Checks order, equality of the three drivers, overlap, errors,
 * event failures and stopping. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hs_test_cl.h"
#include "hs_test_util.h"
#include "pipeline/hs_pipe.h"

/* ---- fake device: completes user events when they fall due -------------- */

typedef struct pending {
  cl_event ev;
  double due;
  cl_int status;
  atomic_int *busy; /* work in progress, dropped when the event completes */
} pending;

static struct {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  pending items[256];
  int n;
  bool quit;
  pthread_t th;
} fdev = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};

static void *fdev_main(void *arg) {
  (void)arg;
  pthread_mutex_lock(&fdev.mu);
  while (!fdev.quit || fdev.n > 0) {
    double now = hs__now();
    for (int i = 0; i < fdev.n; i++) {
      if (fdev.items[i].due <= now) {
        if (fdev.items[i].busy) atomic_fetch_sub(fdev.items[i].busy, 1);
        clSetUserEventStatus(fdev.items[i].ev, fdev.items[i].status);
        clReleaseEvent(fdev.items[i].ev);
        fdev.items[i--] = fdev.items[--fdev.n];
      }
    }
    pthread_mutex_unlock(&fdev.mu);
    struct timespec ts = {0, 200000};
    nanosleep(&ts, NULL);
    pthread_mutex_lock(&fdev.mu);
  }
  pthread_mutex_unlock(&fdev.mu);
  return NULL;
}

static void fdev_schedule(cl_event ev, double delay_s, cl_int status, atomic_int *busy) {
  clRetainEvent(ev);
  pthread_mutex_lock(&fdev.mu);
  fdev.items[fdev.n++] = (pending){ev, hs__now() + delay_s, status, busy};
  pthread_mutex_unlock(&fdev.mu);
}

/* ---- stages ------------------------------------------------------------------ */

#define MAX_B 64
typedef struct run_ctx {
  cl_context cl;
  double dev_delay[3];        /* per stage; < 0: host stage sleeping -delay */
  int64_t order[3][MAX_B];    /* batch order each stage saw */
  int n_seen[3];
  int64_t fail_stage, fail_batch; /* begin fails there (-1: never) */
  int64_t bad_event_batch;        /* stage 2's event fails there (-1: never) */
  volatile sig_atomic_t stop_flag;
  int64_t stop_after;            /* set stop when stage 0 sees this batch */
  uint64_t param;                /* order-sensitive state of the last stage */
  atomic_int concurrent, max_concurrent;
  int gate_lag;                  /* stage 1 waits for batch b - gate_lag (0: no gate) */
  atomic_int finished;           /* batches through the last stage's finish */
  atomic_int gate_broken;        /* stage 1 began a batch too early */
  int nice_seen[3];              /* each stage's thread's nice value */
} run_ctx;

static hs_status stage_begin(run_ctx *c, int s, hs_pipe_slot *slot, cl_event *ev, int *n) {
  c->order[s][c->n_seen[s]++] = slot->batch;
  c->nice_seen[s] = tu_thread_nice();
  if (s == 1 && c->gate_lag > 0 && atomic_load(&c->finished) < slot->batch - c->gate_lag + 1)
    atomic_fetch_add(&c->gate_broken, 1);
  if (s == 0 && slot->batch == c->stop_after) c->stop_flag = 1;
  if (s == c->fail_stage && slot->batch == c->fail_batch)
    return hs__fail(HS_ERR_FORMAT, "injected failure at batch %lld", (long long)slot->batch);
  /* How many stages' work is under way at once: the overlap itself. */
  int now = atomic_fetch_add(&c->concurrent, 1) + 1;
  for (int m = atomic_load(&c->max_concurrent); now > m;)
    if (atomic_compare_exchange_weak(&c->max_concurrent, &m, now)) break;
  if (c->dev_delay[s] < 0) {
    struct timespec ts = {0, (long)(-c->dev_delay[s] * 1e9)};
    nanosleep(&ts, NULL);
    atomic_fetch_sub(&c->concurrent, 1);
    *n = 0;
    return HS_OK;
  }
  cl_int err;
  ev[0] = clCreateUserEvent(c->cl, &err);
  cr_assert_eq(err, CL_SUCCESS);
  cl_int status = (s == 2 && slot->batch == c->bad_event_batch) ? CL_OUT_OF_RESOURCES : CL_COMPLETE;
  fdev_schedule(ev[0], c->dev_delay[s], status, &c->concurrent);
  *n = 1;
  return HS_OK;
}

#define STAGE(i)                                                                     \
  static hs_status begin##i(void *ctx, hs_pipe_slot *slot, cl_event *ev, int *n) {  \
    return stage_begin(ctx, i, slot, ev, n);                                         \
  }
STAGE(0)
STAGE(1)
STAGE(2)

static hs_status finish2(void *ctx, hs_pipe_slot *slot) {
  run_ctx *c = ctx;
  c->param = c->param * 1000003u + (uint64_t)slot->batch + 1;
  atomic_fetch_add(&c->finished, 1);
  return HS_OK;
}

static const hs_pipe_stage STAGES[3] = {
    {"sample", begin0, NULL}, {"gather", begin1, NULL}, {"train", begin2, finish2}};

static hs_inventory inv;
static hs_ctx ctx;

static void setup(void) {
  const hs_dev *d = hs_test_pick_device(&inv, HS_DEVICE_CPU);
  cr_assert_eq(hs__ctx_create(d, 1, &ctx), HS_OK);
  pthread_create(&fdev.th, NULL, fdev_main, NULL);
}

static void teardown(void) {
  pthread_mutex_lock(&fdev.mu);
  fdev.quit = true;
  pthread_mutex_unlock(&fdev.mu);
  pthread_join(fdev.th, NULL);
  hs__ctx_release(&ctx);
  hs__inventory_release(&inv);
}

static hs_status run(run_ctx *c, hs_pipe_mode mode, int depth, int64_t n, hs_pipe_stats *st) {
  hs_pipe_slot slots[8];
  memset(slots, 0, sizeof slots);
  c->cl = ctx.ctx;
  hs_pipe p = {.stages = STAGES, .n_stages = 3, .ctx = c, .slots = slots, .depth = depth,
               .mode = mode, .stop = &c->stop_flag, .gate_stage = 1, .gate_lag = c->gate_lag};
  return hs__pipe_run(&p, 0, n, st);
}

static run_ctx fresh(double d0, double d1, double d2) {
  run_ctx c;
  memset(&c, 0, sizeof c);
  c.dev_delay[0] = d0;
  c.dev_delay[1] = d1;
  c.dev_delay[2] = d2;
  c.fail_stage = c.fail_batch = c.bad_event_batch = c.stop_after = -1;
  return c;
}

TestSuite(pipeline, .init = setup, .fini = teardown, .timeout = 120);

Test(pipeline, every_driver_sees_batches_in_order_and_agrees) {
  uint64_t params[3];
  hs_pipe_mode modes[3] = {HS_PIPE_OFF, HS_PIPE_THREADS, HS_PIPE_ASYNC};
  for (int m = 0; m < 3; m++) {
    run_ctx c = fresh(0.001, -0.001, 0.002);
    hs_pipe_stats st;
    cr_assert_eq(run(&c, modes[m], 3, 20, &st), HS_OK, "%s", hs_last_error());
    cr_expect_eq(st.batches, 20);
    for (int s = 0; s < 3; s++) {
      cr_assert_eq(c.n_seen[s], 20);
      for (int b = 0; b < 20; b++) cr_expect_eq(c.order[s][b], b, "mode %d stage %d", m, s);
    }
    params[m] = c.param;
  }
  cr_expect_eq(params[0], params[1]);
  cr_expect_eq(params[0], params[2]);
}

/* Three stages of 10 ms each over 20 batches. Overlap is observed directly:
 * how many stages have work under way at once (the stand-in device's
 * events and the sleeping host stage), which timing noise cannot fake or
 * hide. The wall times are logged, not asserted (docs/architecture.md, "Measuring": timings
 * belong to bench/). */
static void expect_overlap(hs_pipe_mode mode) {
  run_ctx c = fresh(0.010, -0.010, 0.010);
  hs_pipe_stats off, on;
  cr_assert_eq(run(&c, HS_PIPE_OFF, 1, 20, &off), HS_OK);
  cr_expect_eq(atomic_load(&c.max_concurrent), 1, "one batch at a time overlapped");
  c = fresh(0.010, -0.010, 0.010);
  cr_assert_eq(run(&c, mode, 4, 20, &on), HS_OK, "%s", hs_last_error());
  cr_expect_geq(atomic_load(&c.max_concurrent), 2, "no two stages ever worked at once");
  cr_expect_geq(on.max_in_flight, 3);
  double busiest = 0;
  for (int s = 0; s < 3; s++) busiest = on.busy_s[s] > busiest ? on.busy_s[s] : busiest;
  cr_expect_geq(on.wall_s, busiest * 0.99);
  cr_log_info("wall %.3f s pipelined, %.3f s sequential; up to %d stages at once",
              on.wall_s, off.wall_s, atomic_load(&c.max_concurrent));
}

/* The gate: stage 1 begins batch b only once batch b - 2 has left the
 * last stage (the slower one here), in a pool of 8; the batches still
 * flow in order, the same as without it. */
static void expect_gate(hs_pipe_mode mode) {
  run_ctx c = fresh(0.0005, -0.0005, 0.002);
  c.gate_lag = 2;
  hs_pipe_stats st;
  cr_assert_eq(run(&c, mode, 8, 30, &st), HS_OK, "%s", hs_last_error());
  cr_expect_eq(st.batches, 30);
  cr_expect_eq(atomic_load(&c.gate_broken), 0, "stage 1 ran ahead of the gate");
  for (int s = 0; s < 3; s++) {
    cr_assert_eq(c.n_seen[s], 30);
    for (int b = 0; b < 30; b++) cr_expect_eq(c.order[s][b], b, "stage %d", s);
  }
  run_ctx ref = fresh(0, 0, 0);
  cr_assert_eq(run(&ref, HS_PIPE_OFF, 1, 30, NULL), HS_OK);
  cr_expect_eq(c.param, ref.param);
  /* An error in the last stage while stage 1 waits at the gate: no hang. */
  c = fresh(0.0005, -0.0005, 0.002);
  c.gate_lag = 2;
  c.fail_stage = 2;
  c.fail_batch = 5;
  cr_assert_eq(run(&c, mode, 8, 30, &st), HS_ERR_FORMAT);
}

Test(pipeline, threads_driver_honours_the_gate) { expect_gate(HS_PIPE_THREADS); }
Test(pipeline, async_driver_honours_the_gate) { expect_gate(HS_PIPE_ASYNC); }

Test(pipeline, threads_driver_overlaps_stages) { expect_overlap(HS_PIPE_THREADS); }
Test(pipeline, async_driver_overlaps_stages) { expect_overlap(HS_PIPE_ASYNC); }

static void expect_stage_error(hs_pipe_mode mode) {
  run_ctx c = fresh(0.001, -0.0005, 0.001);
  c.fail_stage = 1;
  c.fail_batch = 5;
  hs_pipe_stats st;
  hs_status r = run(&c, mode, 3, 20, &st);
  cr_expect_eq(r, HS_ERR_FORMAT);
  cr_expect(strstr(hs_last_error(), "gather") != NULL, "%s", hs_last_error());
  cr_expect(strstr(hs_last_error(), "injected failure at batch 5") != NULL, "%s",
            hs_last_error());
  cr_expect_lt(st.batches, 20);
  /* Nothing after the failing batch reaches the last stage. */
  for (int i = 0; i < c.n_seen[2]; i++) cr_expect_lt(c.order[2][i], 5);
  /* Admission stops: at most the pool's worth beyond the failure. */
  cr_expect_leq(c.n_seen[0], 5 + 3 + 1);
}

Test(pipeline, off_stops_at_a_stage_error) { expect_stage_error(HS_PIPE_OFF); }
Test(pipeline, threads_stop_at_a_stage_error) { expect_stage_error(HS_PIPE_THREADS); }
Test(pipeline, async_stops_at_a_stage_error) { expect_stage_error(HS_PIPE_ASYNC); }

static void expect_event_failure(hs_pipe_mode mode) {
  run_ctx c = fresh(0.001, -0.0005, 0.001);
  c.bad_event_batch = 4;
  hs_status r = run(&c, mode, 3, 12, NULL);
  cr_expect_eq(r, HS_ERR_OPENCL);
  cr_expect(strstr(hs_last_error(), "train") != NULL, "%s", hs_last_error());
  cr_expect(strstr(hs_last_error(), "CL_OUT_OF_RESOURCES") != NULL, "%s", hs_last_error());
}

Test(pipeline, threads_report_a_failed_device_command) { expect_event_failure(HS_PIPE_THREADS); }
Test(pipeline, async_reports_a_failed_device_command) { expect_event_failure(HS_PIPE_ASYNC); }

static void expect_stop(hs_pipe_mode mode) {
  run_ctx c = fresh(0.001, -0.0005, 0.001);
  c.stop_after = 6;
  hs_pipe_stats st;
  cr_assert_eq(run(&c, mode, 3, 30, &st), HS_OK, "%s", hs_last_error());
  /* What was admitted completes; nothing new after the stop. */
  cr_expect_eq(st.batches, c.n_seen[0]);
  cr_expect_eq(c.n_seen[2], c.n_seen[0]);
  cr_expect_geq(st.batches, 7);
  cr_expect_leq(st.batches, 7 + 3);
}

Test(pipeline, off_stop_flag_drains) { expect_stop(HS_PIPE_OFF); }
Test(pipeline, threads_stop_flag_drains) { expect_stop(HS_PIPE_THREADS); }
Test(pipeline, async_stop_flag_drains) { expect_stop(HS_PIPE_ASYNC); }

Test(pipeline, rejects_bad_shapes) {
  run_ctx c = fresh(0, 0, 0);
  cr_expect_eq(run(&c, HS_PIPE_ASYNC, 0, 4, NULL), HS_ERR_INVALID_ARG);
  cr_expect_eq(run(&c, (hs_pipe_mode)7, 2, 4, NULL), HS_ERR_INVALID_ARG);
  cr_expect_eq(run(&c, HS_PIPE_THREADS, 2, 0, NULL), HS_OK);
  c.gate_lag = -1;
  cr_expect_eq(run(&c, HS_PIPE_ASYNC, 2, 4, NULL), HS_ERR_INVALID_ARG);
}

static atomic_int inits;
static void count_init(void *user) {
  (void)user;
  atomic_fetch_add(&inits, 1);
}

Test(pipeline, thread_init_runs_once_on_every_stage_thread) {
  for (int m = 0; m < 3; m++) {
    run_ctx c = fresh(0.0005, -0.0005, 0.0005);
    hs_pipe_slot slots[3];
    memset(slots, 0, sizeof slots);
    c.cl = ctx.ctx;
    atomic_store(&inits, 0);
    hs_pipe p = {.stages = STAGES, .n_stages = 3, .ctx = &c, .slots = slots, .depth = 3,
                 .mode = (hs_pipe_mode)m, .thread_init = count_init};
    cr_assert_eq(hs__pipe_run(&p, 0, 5, NULL), HS_OK, "%s", hs_last_error());
    /* Only the threads driver starts threads; the others run on the caller's. */
    cr_expect_eq(atomic_load(&inits), m == HS_PIPE_THREADS ? 3 : 0, "mode %d", m);
  }
}

/* stage_nice: under the threads driver the stage's thread runs that much
 * nicer than the caller, the other stages as the caller; the other
 * drivers run every stage on the caller's thread, unchanged. */
Test(pipeline, threads_driver_runs_a_stage_at_its_nice) {
  int base = tu_thread_nice();
  for (int m = 0; m < 3; m++) {
    run_ctx c = fresh(0.0005, -0.0005, 0.0005);
    hs_pipe_slot slots[3];
    memset(slots, 0, sizeof slots);
    c.cl = ctx.ctx;
    hs_pipe p = {.stages = STAGES, .n_stages = 3, .ctx = &c, .slots = slots, .depth = 3,
                 .mode = (hs_pipe_mode)m};
    p.stage_nice[1] = 5;
    cr_assert_eq(hs__pipe_run(&p, 0, 4, NULL), HS_OK, "%s", hs_last_error());
#ifdef __linux__
    int want1 = m == HS_PIPE_THREADS ? (base + 5 > 19 ? 19 : base + 5) : base;
#else
    int want1 = base;
#endif
    cr_expect_eq(c.nice_seen[0], base, "mode %d: stage 0 at %d", m, c.nice_seen[0]);
    cr_expect_eq(c.nice_seen[1], want1, "mode %d: stage 1 at %d, not %d", m, c.nice_seen[1], want1);
    cr_expect_eq(c.nice_seen[2], base, "mode %d: stage 2 at %d", m, c.nice_seen[2]);
    cr_expect_eq(tu_thread_nice(), base, "mode %d: the caller unchanged", m);
  }
}
