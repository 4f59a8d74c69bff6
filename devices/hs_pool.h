/* A small persistent thread pool: n_threads threads in all, the caller's
 * thread being thread 0; the others are started at creation, sleep on a
 * condition between runs, and run fn(arg, t, n_threads) when woken. Used
 * by the host gather, the caches and the embedding store (through
 * sample/hs_gather.h) and by the CBLAS provider's products in pieces. */
#ifndef HS_POOL_H
#define HS_POOL_H

#include "hs_base.h"

typedef struct hs_pool hs_pool;

/* `what` names the pool in errors ("WHAT: N threads", "WHAT: cannot start
 * thread T"); n_threads 1..1024. */
hs_status hs__pool_create(const char *what, int n_threads, hs_pool **out);
void hs__pool_destroy(hs_pool *p);
int hs__pool_threads(const hs_pool *p);
/* Run fn(arg, t, n_threads) once on every thread t of the pool and return
 * when all have returned. One run at a time per pool. */
void hs__pool_run(hs_pool *p, void (*fn)(void *arg, int t, int n), void *arg);
/* The pool's own threads (not the caller's) run `by` nicer for the rest
 * of the pool's life (hs__thread_nicer). Returns how many did. */
int hs__pool_nicer(hs_pool *p, int by);
/* hs__pool_run with the other threads kept off the CPU the caller runs on
 * (Linux; where the process may use more than one): a helper woken by a
 * thread that keeps computing was queued behind it on the same CPU, the
 * kernel's wake-up placement, while another CPU stayed idle for
 * milliseconds. The affinity is changed only when the caller's CPU did. */
void hs__pool_run_elsewhere(hs_pool *p, void (*fn)(void *arg, int t, int n), void *arg);

#endif
