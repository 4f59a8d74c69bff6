/* The thread pool (see hs_pool.h). */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>

#include "hs_pool.h"

struct hs_pool {
  int n_threads;
  pthread_t *threads;
  pthread_mutex_t mu;
  pthread_cond_t wake, done;
  unsigned long generation;
  int pending;
  bool stop;
  void (*fn)(void *, int, int);
  void *arg;
#ifdef __linux__
  cpu_set_t allowed; /* the process's CPUs when the pool was made */
  int n_allowed;
  int avoided;       /* the CPU the helpers were last kept off, -1: none */
#endif
};

typedef struct worker_arg {
  hs_pool *p;
  int t;
} worker_arg;

static void *worker(void *a) {
  worker_arg w = *(worker_arg *)a;
  free(a);
  hs_pool *p = w.p;
  unsigned long seen = 0;
  pthread_mutex_lock(&p->mu);
  for (;;) {
    while (!p->stop && p->generation == seen) pthread_cond_wait(&p->wake, &p->mu);
    if (p->stop) break;
    seen = p->generation;
    pthread_mutex_unlock(&p->mu);
    p->fn(p->arg, w.t, p->n_threads);
    pthread_mutex_lock(&p->mu);
    if (--p->pending == 0) pthread_cond_signal(&p->done);
  }
  pthread_mutex_unlock(&p->mu);
  return NULL;
}

hs_status hs__pool_create(const char *what, int n_threads, hs_pool **out) {
  *out = NULL;
  if (n_threads < 1 || n_threads > 1024)
    return hs__fail(HS_ERR_INVALID_ARG, "%s: %d threads", what, n_threads);
  hs_pool *p = calloc(1, sizeof *p);
  if (!p) return hs__fail(HS_ERR_NOMEM, "%s pool", what);
  p->n_threads = n_threads;
  pthread_mutex_init(&p->mu, NULL);
  pthread_cond_init(&p->wake, NULL);
  pthread_cond_init(&p->done, NULL);
#ifdef __linux__
  p->avoided = -1;
  if (sched_getaffinity(0, sizeof p->allowed, &p->allowed) == 0) p->n_allowed = CPU_COUNT(&p->allowed);
#endif
  p->threads = calloc((size_t)n_threads, sizeof *p->threads);
  if (!p->threads) {
    hs__pool_destroy(p);
    return hs__fail(HS_ERR_NOMEM, "%s pool", what);
  }
  for (int t = 1; t < n_threads; t++) {
    worker_arg *a = malloc(sizeof *a);
    if (a) *a = (worker_arg){p, t};
    if (!a || pthread_create(&p->threads[t], NULL, worker, a) != 0) {
      free(a);
      p->n_threads = t; /* the ones started are joined */
      hs__pool_destroy(p);
      return hs__fail(HS_ERR_NOMEM, "%s: cannot start thread %d", what, t);
    }
  }
  *out = p;
  return HS_OK;
}

void hs__pool_destroy(hs_pool *p) {
  if (!p) return;
  pthread_mutex_lock(&p->mu);
  p->stop = true;
  pthread_cond_broadcast(&p->wake);
  pthread_mutex_unlock(&p->mu);
  for (int t = 1; t < p->n_threads && p->threads; t++) pthread_join(p->threads[t], NULL);
  pthread_mutex_destroy(&p->mu);
  pthread_cond_destroy(&p->wake);
  pthread_cond_destroy(&p->done);
  free(p->threads);
  free(p);
}

int hs__pool_threads(const hs_pool *p) { return p->n_threads; }

void hs__pool_run(hs_pool *p, void (*fn)(void *arg, int t, int n), void *arg) {
  if (p->n_threads > 1) {
    pthread_mutex_lock(&p->mu);
    p->fn = fn;
    p->arg = arg;
    p->pending = p->n_threads - 1;
    p->generation++;
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->mu);
  }
  fn(arg, 0, p->n_threads);
  if (p->n_threads > 1) {
    pthread_mutex_lock(&p->mu);
    while (p->pending > 0) pthread_cond_wait(&p->done, &p->mu);
    pthread_mutex_unlock(&p->mu);
  }
}

typedef struct nicer_job {
  int by;
  atomic_int done;
} nicer_job;

static void nicer_fn(void *arg, int t, int n) {
  (void)n;
  nicer_job *j = arg;
  if (t > 0 && hs__thread_nicer(j->by) != INT_MIN) atomic_fetch_add(&j->done, 1);
}

int hs__pool_nicer(hs_pool *p, int by) {
  nicer_job j = {.by = by};
  atomic_init(&j.done, 0);
  hs__pool_run(p, nicer_fn, &j);
  return atomic_load(&j.done);
}

void hs__pool_run_elsewhere(hs_pool *p, void (*fn)(void *arg, int t, int n), void *arg) {
#ifdef __linux__
  int cpu = p->n_threads > 1 && p->n_allowed > 1 ? sched_getcpu() : -1;
  if (cpu >= 0 && cpu != p->avoided && CPU_ISSET(cpu, &p->allowed)) {
    cpu_set_t set = p->allowed;
    CPU_CLR(cpu, &set);
    /* A hint: when it fails the helpers stay where they may run. */
    for (int t = 1; t < p->n_threads; t++)
      (void)pthread_setaffinity_np(p->threads[t], sizeof set, &set);
    p->avoided = cpu;
  }
#endif
  hs__pool_run(p, fn, arg);
}
