#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

#include "hs_dev.h"

hs_event_state hs__events_poll(const cl_event *events, int n) {
  hs_event_state state = HS_EVENTS_DONE;
  for (int i = 0; i < n; i++) {
    if (!events[i]) continue;
    cl_int st = CL_COMPLETE;
    cl_int err = clGetEventInfo(events[i], CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof st,
                                &st, NULL);
    if (err != CL_SUCCESS) {
      hs__cl_fail(err, "clGetEventInfo(CL_EVENT_COMMAND_EXECUTION_STATUS)", NULL);
      return HS_EVENTS_FAILED;
    }
    if (st < 0) {
      hs__fail(HS_ERR_OPENCL, "a device command failed with %s", hs__cl_error_name(st));
      return HS_EVENTS_FAILED;
    }
    if (st != CL_COMPLETE) state = HS_EVENTS_PENDING;
  }
  return state;
}

hs_status hs__events_wait(const cl_event *events, int n) {
  for (int i = 0; i < n; i++) {
    if (!events[i]) continue;
    cl_int err = clWaitForEvents(1, &events[i]);
    if (err != CL_SUCCESS) {
      cl_int st = 0;
      clGetEventInfo(events[i], CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof st, &st, NULL);
      return hs__fail(HS_ERR_OPENCL, "clWaitForEvents failed with %s (command status %s)",
                      hs__cl_error_name(err), hs__cl_error_name(st));
    }
  }
  return HS_OK;
}

void hs__events_release(cl_event *events, int n) {
  for (int i = 0; i < n; i++) {
    if (events[i]) clReleaseEvent(events[i]);
    events[i] = NULL;
  }
}

cl_event hs__event_retain(cl_event ev) {
  if (ev) clRetainEvent(ev);
  return ev;
}

/* ---- waiting for the next completion ------------------------------------ */

/* One process-wide count of completions seen by callbacks, never torn down:
 * a callback may still be running on a driver's thread after its waiter
 * saw the event complete and went away. */
static pthread_mutex_t wake_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wake_cond;
static pthread_once_t wake_once = PTHREAD_ONCE_INIT;
static _Atomic uint64_t wake_gen;

static void wake_init(void) {
  pthread_condattr_t a;
  pthread_condattr_init(&a);
  pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
  pthread_cond_init(&wake_cond, &a);
  pthread_condattr_destroy(&a);
}

static void CL_CALLBACK on_complete(cl_event ev, cl_int status, void *user) {
  (void)ev, (void)status, (void)user;
  pthread_mutex_lock(&wake_lock);
  atomic_fetch_add(&wake_gen, 1);
  pthread_cond_broadcast(&wake_cond);
  pthread_mutex_unlock(&wake_lock);
}

uint64_t hs__events_generation(void) { return atomic_load(&wake_gen); }

void hs__events_notify(const cl_event *events, int n) {
  pthread_once(&wake_once, wake_init);
  for (int i = 0; i < n; i++)
    if (events[i]) (void)clSetEventCallback(events[i], CL_COMPLETE, on_complete, NULL);
}

void hs__events_wait_next(uint64_t since, double timeout_s) {
  pthread_once(&wake_once, wake_init);
  struct timespec until;
  clock_gettime(CLOCK_MONOTONIC, &until);
  long ns = until.tv_nsec + (long)(timeout_s * 1e9);
  until.tv_sec += ns / 1000000000L;
  until.tv_nsec = ns % 1000000000L;
  pthread_mutex_lock(&wake_lock);
  while (atomic_load(&wake_gen) == since)
    if (pthread_cond_timedwait(&wake_cond, &wake_lock, &until) == ETIMEDOUT) break;
  pthread_mutex_unlock(&wake_lock);
}
