/* The embedding store: rows created on first use, dedup and the
 * occurrence lists, the four sparse optimizers against independent
 * formulas, admission, eviction under a budget and by expiry, overlapped
 * lookups and updates, determinism whatever the thread count, files. */
#include <criterion/criterion.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include "embed/embed_slab.h"
#include "embed/hs_embed.h"
#include "hs_test_util.h"

static hs_embed *make(int dim, int tables, hs_embed_optim kind, int threads) {
  hs_embed_cfg c;
  hs__embed_cfg_defaults(&c);
  c.dim = dim;
  c.n_tables = tables;
  c.optim.kind = kind;
  c.threads = threads;
  c.seed = 7;
  hs_embed *e;
  cr_assert_eq(hs__embed_create(&c, &e), HS_OK, "%s", hs_last_error());
  return e;
}

static hs_embed *make_cfg(const hs_embed_cfg *c) {
  hs_embed *e;
  cr_assert_eq(hs__embed_create(c, &e), HS_OK, "%s", hs_last_error());
  return e;
}

Test(embed, rows_created_on_first_use_deterministic) {
  hs_embed *a = make(8, 3, HS_EMBED_ADAGRAD, 1), *b = make(8, 3, HS_EMBED_ADAGRAD, 2);
  hs_embed_batch ba, bb;
  cr_assert_eq(hs__embed_batch_init(&ba, 64, 8), HS_OK);
  cr_assert_eq(hs__embed_batch_init(&bb, 64, 8), HS_OK);
  /* Ids without any range: huge, zero, repeated; 3 fields. */
  uint64_t ids[12] = {UINT64_MAX, 0, 5, 1ull << 40, 0, 5, 42, 0, 7, UINT64_MAX, 0, 5};
  hs_embed_query q = {.n = 12, .ids = ids, .n_fields = 3};
  cr_assert_eq(hs__embed_lookup(a, &q, 0, true, &ba), HS_OK, "%s", hs_last_error());
  /* The same keys in another order and in another store. */
  uint64_t ids2[6] = {5, 0, 5, 42, 0, 7};
  uint16_t tabs2[6] = {2, 1, 2, 0, 1, 2};
  hs_embed_query q2 = {.n = 6, .ids = ids2, .tables = tabs2};
  cr_assert_eq(hs__embed_lookup(b, &q2, 0, true, &bb), HS_OK, "%s", hs_last_error());
  /* (table, id) pairs of q: (0,MAX) (1,0) (2,5) (0,2^40) (1,0) (2,5) (0,42) (1,0) (2,7)
   * (0,MAX) (1,0) (2,5): 6 unique. */
  cr_assert_eq(ba.n_unique, 6);
  cr_assert_eq(ba.n_created, 6);
  int32_t want_u[12] = {0, 1, 2, 3, 1, 2, 4, 1, 5, 0, 1, 2};
  for (int i = 0; i < 12; i++) cr_assert_eq(ba.unique_of[i], want_u[i], "occurrence %d", i);
  /* Occurrence lists, increasing. */
  int32_t want_ptr[7] = {0, 2, 6, 9, 10, 11, 12};
  int32_t want_occ[12] = {0, 9, 1, 4, 7, 10, 2, 5, 11, 3, 6, 8};
  for (int u = 0; u <= 6; u++) cr_assert_eq(ba.occ_ptr[u], want_ptr[u]);
  for (int i = 0; i < 12; i++) cr_assert_eq(ba.occ[i], want_occ[i]);
  cr_assert(ba.occ_lists);
  /* Without the lists (no_occ), in a store of its own: the same uniques
   * and rows, the lists' arrays untouched and said to be none. */
  {
    hs_embed *c = make(8, 3, HS_EMBED_ADAGRAD, 2);
    hs_embed_batch bn;
    cr_assert_eq(hs__embed_batch_init(&bn, 64, 8), HS_OK);
    for (int i = 0; i < 12; i++) bn.occ[i] = bn.occ_ptr[i] = -7;
    hs_embed_query qn = q;
    qn.no_occ = true;
    cr_assert_eq(hs__embed_lookup(c, &qn, 0, true, &bn), HS_OK, "%s", hs_last_error());
    cr_assert(!bn.occ_lists);
    cr_assert_eq(bn.n_unique, 6);
    for (int i = 0; i < 12; i++) {
      cr_assert_eq(bn.unique_of[i], want_u[i], "occurrence %d", i);
      cr_assert_eq(bn.occ[i], -7);
      cr_assert_eq(bn.occ_ptr[i], -7);
    }
    cr_assert_eq(memcmp(bn.rows, ba.rows, 6 * 8 * sizeof(float)), 0);
    hs__embed_batch_free(&bn);
    hs__embed_destroy(c);
  }
  /* Rows are a function of (seed, table, id): same in both stores. */
  float ra[8], rb[8];
  cr_assert(hs__embed_read(a, 2, 5, ra));
  cr_assert(hs__embed_read(b, 2, 5, rb));
  cr_assert_eq(memcmp(ra, rb, sizeof ra), 0);
  cr_assert_eq(memcmp(ra, ba.rows + 2 * 8, sizeof ra), 0);
  float zero[8] = {0}, r0[8], r1[8];
  cr_assert(!hs__embed_read(a, 0, 5, r0), "id 5 was never seen in table 0");
  cr_assert_eq(memcmp(r0, zero, sizeof r0), 0);
  cr_assert(hs__embed_read(a, 1, 0, r0));
  cr_assert(hs__embed_read(a, 0, UINT64_MAX, r1));
  cr_assert_neq(memcmp(r0, r1, sizeof r0), 0);
  for (int k = 0; k < 8; k++) cr_assert(fabsf(r0[k]) <= 0.05f && r0[k] != 0.0f);
  hs_embed_stats st;
  hs__embed_stats(a, &st);
  cr_assert_eq(st.rows, 6);
  cr_assert_eq(st.lookups, 12);
  /* Read-only lookups create nothing. */
  uint64_t nid[2] = {999, 5};
  hs_embed_query q3 = {.n = 2, .ids = nid, .n_fields = 2};
  cr_assert_eq(hs__embed_lookup(a, &q3, 0, false, &ba), HS_OK);
  cr_assert_eq(ba.n_absent, 2); /* (0,999) and (1,5) */
  cr_assert_eq(memcmp(ba.rows, zero, sizeof zero), 0);
  hs__embed_stats(a, &st);
  cr_assert_eq(st.rows, 6);
  hs__embed_batch_free(&ba);
  hs__embed_batch_free(&bb);
  hs__embed_destroy(a);
  hs__embed_destroy(b);
}

Test(embed, bad_arguments) {
  hs_embed_cfg c;
  hs__embed_cfg_defaults(&c);
  hs_embed *e;
  c.dim = 0;
  cr_assert_eq(hs__embed_create(&c, &e), HS_ERR_INVALID_ARG);
  cr_assert(strstr(hs_last_error(), "dim"));
  hs__embed_cfg_defaults(&c);
  c.optim.lr = NAN;
  cr_assert_eq(hs__embed_create(&c, &e), HS_ERR_INVALID_ARG);
  hs__embed_cfg_defaults(&c);
  c.memory_budget = 16;
  cr_assert_eq(hs__embed_create(&c, &e), HS_ERR_BUDGET);
  e = make(4, 2, HS_EMBED_SGD, 1);
  hs_embed_batch b;
  cr_assert_eq(hs__embed_batch_init(&b, 4, 4), HS_OK);
  uint64_t ids[4] = {1, 2, 3, 4};
  uint16_t tabs[4] = {0, 1, 2, 0};
  hs_embed_query q = {.n = 4, .ids = ids, .tables = tabs};
  cr_assert_eq(hs__embed_lookup(e, &q, 0, true, &b), HS_ERR_RANGE);
  hs_embed_query q2 = {.n = 4, .ids = ids, .n_fields = 2};
  cr_assert_eq(hs__embed_lookup(e, &q2, 3, true, &b), HS_OK);
  hs__embed_release(e, 3);
  cr_assert_eq(hs__embed_lookup(e, &q2, 3, true, &b), HS_ERR_INVALID_ARG, "ticks must increase");
  q2.n = 5;
  cr_assert_eq(hs__embed_lookup(e, &q2, 4, true, &b), HS_ERR_INVALID_ARG);
  hs__embed_batch_free(&b);
  hs__embed_destroy(e);
}

/* One lookup of `n` ids in table 0 and one update with `g` per unique. */
static void step(hs_embed *e, hs_embed_batch *b, const uint64_t *ids, int n, uint32_t tick,
                 const float *g) {
  hs_embed_query q = {.n = n, .ids = ids, .n_fields = 1};
  cr_assert_eq(hs__embed_lookup(e, &q, tick, true, b), HS_OK, "%s", hs_last_error());
  hs__embed_refresh(e, b);
  hs__embed_apply(e, b, g);
}

Test(embed, optimizers_match_their_formulas) {
  const int d = 4;
  float g1[4] = {0.5f, -1.0f, 0.25f, 2.0f}, g2[4] = {-0.3f, 0.1f, 0.0f, 1.5f};
  uint64_t id = 123;
  for (int kind = 0; kind < HS_EMBED_OPTIM_COUNT_; kind++) {
    hs_embed_cfg c;
    hs__embed_cfg_defaults(&c);
    c.dim = d;
    c.optim.kind = (hs_embed_optim)kind;
    c.optim.lr = 0.1f;
    c.optim.weight_decay = kind == HS_EMBED_FTRL ? 0.0f : 0.01f;
    c.optim.initial_accumulator = 0.1f;
    c.optim.ftrl_alpha = 0.5f;
    c.optim.ftrl_beta = 1.0f;
    c.optim.ftrl_l1 = 0.2f;
    c.optim.ftrl_l2 = 0.3f;
    hs_embed *e = make_cfg(&c);
    hs_embed_batch b;
    cr_assert_eq(hs__embed_batch_init(&b, 4, d), HS_OK);
    float w0[4];
    /* Two occurrences of one id: one unique, one update. */
    uint64_t ids[2] = {id, id};
    step(e, &b, ids, 2, 0, g1);
    cr_assert_eq(b.n_unique, 1);
    memcpy(w0, b.rows, sizeof w0);
    step(e, &b, ids, 1, 1, g2);
    float w[4];
    cr_assert(hs__embed_read(e, 0, id, w));
    /* The same two updates in double. */
    double x[4], s1 = 0.1, ew[4] = {0.1, 0.1, 0.1, 0.1}, m[4] = {0}, v[4] = {0}, z[4] = {0}, nn[4] = {0};
    for (int k = 0; k < d; k++) x[k] = w0[k];
    const float *gs[2] = {g1, g2};
    for (int t = 1; t <= 2; t++) {
      const float *g = gs[t - 1];
      double wd = c.optim.weight_decay, lr = c.optim.lr, gk[4], sq = 0;
      for (int k = 0; k < d; k++) {
        gk[k] = g[k] + wd * x[k];
        sq += gk[k] * gk[k];
      }
      switch (kind) {
        case HS_EMBED_SGD:
          for (int k = 0; k < d; k++) x[k] -= lr * gk[k];
          break;
        case HS_EMBED_ADAGRAD:
          s1 += sq / d;
          for (int k = 0; k < d; k++) x[k] -= lr * gk[k] / (sqrt(s1) + 1e-8);
          break;
        case HS_EMBED_ADAM:
          for (int k = 0; k < d; k++) {
            m[k] = 0.9 * m[k] + 0.1 * gk[k];
            v[k] = 0.999 * v[k] + 0.001 * gk[k] * gk[k];
            double mh = m[k] / (1 - pow(0.9, t)), vh = v[k] / (1 - pow(0.999, t));
            x[k] -= lr * mh / (sqrt(vh) + 1e-8);
          }
          break;
        case HS_EMBED_ADAGRAD_EW:
          for (int k = 0; k < d; k++) {
            ew[k] += gk[k] * gk[k];
            x[k] -= lr * gk[k] / (sqrt(ew[k]) + 1e-8);
          }
          break;
        case HS_EMBED_FTRL:
          for (int k = 0; k < d; k++) {
            double n2 = nn[k] + (double)g[k] * g[k];
            z[k] += g[k] - (sqrt(n2) - sqrt(nn[k])) / 0.5 * x[k];
            nn[k] = n2;
            x[k] = fabs(z[k]) <= 0.2 ? 0
                                     : -(z[k] - (z[k] < 0 ? -0.2 : 0.2)) / ((1 + sqrt(n2)) / 0.5 + 0.3);
          }
          break;
      }
    }
    for (int k = 0; k < d; k++)
      cr_assert(fabs(w[k] - x[k]) <= 1e-5 * (1 + fabs(x[k])), "%s element %d: %.8g vs %.8g",
                hs__embed_optim_name((hs_embed_optim)kind), k, (double)w[k], x[k]);
    if (kind == HS_EMBED_FTRL)
      for (int k = 0; k < d; k++) cr_assert_eq(w0[k], 0.0f, "FTRL rows start at zero");
    float state[16];
    if (kind == HS_EMBED_ADAGRAD) {
      cr_assert(hs__embed_read_state(e, 0, id, state));
      cr_assert(fabs(state[0] - s1) < 1e-5 * s1);
    }
    if (kind == HS_EMBED_ADAGRAD_EW) {
      cr_assert(hs__embed_read_state(e, 0, id, state));
      for (int k = 0; k < d; k++)
        cr_assert(fabs(state[k] - ew[k]) < 1e-5 * ew[k], "accumulator %d: %.8g vs %.8g", k,
                  (double)state[k], ew[k]);
    }
    if (kind == HS_EMBED_ADAM) {
      cr_assert(hs__embed_read_state(e, 0, id, state));
      uint32_t t;
      memcpy(&t, &state[2 * d], 4);
      cr_assert_eq(t, 2, "lazy Adam counts the row's own steps");
    }
    hs__embed_batch_free(&b);
    hs__embed_destroy(e);
  }
}

Test(embed, admission_after_k_sightings) {
  hs_embed_cfg c;
  hs__embed_cfg_defaults(&c);
  c.dim = 2;
  c.admit_after = 3;
  c.optim.kind = HS_EMBED_SGD;
  hs_embed *e = make_cfg(&c);
  hs_embed_batch b;
  cr_assert_eq(hs__embed_batch_init(&b, 8, 2), HS_OK);
  float g[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
  uint64_t a1[2] = {10, 20};
  step(e, &b, a1, 2, 0, g); /* 10: 1, 20: 1 */
  cr_assert_eq(b.n_absent, 2);
  cr_assert_eq(b.rows[0], 0.0f);
  uint64_t a2[3] = {10, 30, 30};
  step(e, &b, a2, 3, 1, g); /* 10: 2, 30: 2 */
  cr_assert_eq(b.n_absent, 2);
  hs_embed_stats st;
  hs__embed_stats(e, &st);
  cr_assert_eq(st.rows, 0);
  cr_assert_eq(st.pending, 3);
  float r[2];
  cr_assert(!hs__embed_read(e, 0, 10, r));
  uint64_t a3[3] = {10, 20, 30};
  step(e, &b, a3, 3, 2, g); /* 10: 3 -> created, 20: 2, 30: 3 -> created */
  cr_assert_eq(b.n_created, 2);
  cr_assert_eq(b.n_absent, 1);
  cr_assert(b.rec[0] && !b.rec[1] && b.rec[2]);
  /* Created rows train from this batch on: init minus lr * g. */
  float init[2];
  memcpy(init, b.rows, sizeof init);
  cr_assert(hs__embed_read(e, 0, 10, r));
  cr_assert_eq(r[0], init[0] - 0.05f * 1.0f);
  cr_assert(!hs__embed_read(e, 0, 20, r));
  hs__embed_stats(e, &st);
  cr_assert_eq(st.rows, 2);
  cr_assert_eq(st.pending, 1);
  cr_assert_eq(st.admitted, 2);
  hs__embed_batch_free(&b);
  hs__embed_destroy(e);
}

/* ---- sequences of batches ------------------------------------------------ */

static uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

/* Batch `t` of a skewed stream over `span` ids per field. */
static void batch_ids(uint64_t *ids, int n, uint32_t t, uint64_t span) {
  for (int i = 0; i < n; i++) {
    uint64_t r = mix((uint64_t)t * 1000003u + (uint64_t)i);
    uint64_t k = r % span;
    ids[i] = (k * k / span) * 2654435761u; /* small k most likely, spread out */
  }
}

/* A gradient that depends on the row it is for, so a stale row would
 * show. */
static void batch_grads(const hs_embed_batch *b, const uint64_t *ids, int d, float *g) {
  for (int u = 0; u < b->n_unique; u++) {
    uint64_t id = ids[b->occ[b->occ_ptr[u]]];
    for (int k = 0; k < d; k++)
      g[(size_t)u * d + k] = 0.5f * b->rows[(size_t)u * d + k] +
                             (float)((int)(mix(id ^ b->tick ^ (uint64_t)k << 50) % 2001) - 1000) * 1e-4f;
  }
}

typedef struct run_opts {
  int threads;
  /* Batches looked up ahead of the oldest one not yet applied: 0, each
   * batch applied before the next lookup; 1, batch t + 1 looked up before
   * batch t is applied; up to HS_EMBED_LAG - 1 (the most a store with
   * eviction allows). */
  int lag;
  /* Apply on a second thread (in order, with pauses that vary), the
   * lookups running ahead of it by at most `lag` batches. */
  bool applier;
  uint64_t budget;
  uint32_t admit, expire;
  hs_embed_optim kind;
  int shards_log2;
} run_opts;

enum { RUN_D = 8, RUN_FIELDS = 4, RUN_N = 64 * RUN_FIELDS, RUN_SLOTS = HS_EMBED_LAG + 1 };

/* A run's batches in flight: batch t in slot t % RUN_SLOTS. */
typedef struct run_state {
  hs_embed *e;
  hs_embed_batch b[RUN_SLOTS];
  uint64_t ids[RUN_SLOTS][RUN_N];
  float *g;
  int n_batches;
  _Atomic int looked, applied; /* batches looked up, applied */
} run_state;

static void run_apply(run_state *r, int t) {
  hs_embed_batch *cur = &r->b[t % RUN_SLOTS];
  hs__embed_refresh(r->e, cur);
  batch_grads(cur, r->ids[t % RUN_SLOTS], RUN_D, r->g);
  hs__embed_apply(r->e, cur, r->g);
  atomic_store(&r->applied, t + 1);
}

static void *run_applier(void *arg) {
  run_state *r = arg;
  for (int t = 0; t < r->n_batches; t++) {
    while (atomic_load(&r->looked) <= t) sched_yield();
    /* Pauses of 0 to 150 us: the lookups find the updates at varying
     * points. */
    struct timespec ts = {0, (long)(mix((uint64_t)t) % 4) * 50000};
    nanosleep(&ts, NULL);
    run_apply(r, t);
  }
  return NULL;
}

/* Train a store on `n_batches` batches; returns the saved file's bytes. */
static unsigned char *run(const run_opts *o, int n_batches, size_t *len, hs_embed_stats *stats) {
  hs_embed_cfg c;
  hs__embed_cfg_defaults(&c);
  c.dim = RUN_D;
  c.n_tables = RUN_FIELDS;
  c.optim.kind = o->kind;
  c.threads = o->threads;
  c.memory_budget = o->budget;
  c.admit_after = o->admit;
  c.expire_after = o->expire;
  c.shards_log2 = o->shards_log2;
  c.seed = 3;
  cr_assert(o->lag >= 0 && o->lag < RUN_SLOTS);
  run_state *r = calloc(1, sizeof *r);
  r->e = make_cfg(&c);
  r->n_batches = n_batches;
  r->g = malloc((size_t)RUN_N * RUN_D * sizeof *r->g);
  for (int k = 0; k < RUN_SLOTS; k++)
    cr_assert_eq(hs__embed_batch_init(&r->b[k], RUN_N, RUN_D), HS_OK);
  hs_embed_query q = {.n = RUN_N, .n_fields = RUN_FIELDS};
  pthread_t th;
  if (o->applier) cr_assert_eq(pthread_create(&th, NULL, run_applier, r), 0);
  for (int t = 0; t < n_batches + o->lag; t++) {
    if (t < n_batches) {
      /* At most lag + 1 batches in flight. */
      while (o->applier && atomic_load(&r->applied) < t - o->lag) sched_yield();
      batch_ids(r->ids[t % RUN_SLOTS], RUN_N, (uint32_t)t, 3000);
      q.ids = r->ids[t % RUN_SLOTS];
      cr_assert_eq(hs__embed_lookup(r->e, &q, (uint32_t)t, true, &r->b[t % RUN_SLOTS]), HS_OK,
                   "batch %d: %s", t, hs_last_error());
      atomic_store(&r->looked, t + 1);
    }
    if (!o->applier && t - o->lag >= 0) run_apply(r, t - o->lag);
  }
  if (o->applier) pthread_join(th, NULL);
  if (stats) hs__embed_stats(r->e, stats);
  char *dir = tu_mkdtemp(), *path = tu_path(dir, "s.emb");
  cr_assert_eq(hs__embed_save(r->e, path), HS_OK, "%s", hs_last_error());
  FILE *f = fopen(path, "rb");
  fseek(f, 0, SEEK_END);
  *len = (size_t)ftell(f);
  rewind(f);
  unsigned char *bytes = malloc(*len);
  cr_assert_eq(fread(bytes, 1, *len, f), *len);
  fclose(f);
  free(path);
  tu_rmtree(dir);
  for (int k = 0; k < RUN_SLOTS; k++) hs__embed_batch_free(&r->b[k]);
  free(r->g);
  hs__embed_destroy(r->e);
  free(r);
  return bytes;
}

static void expect_same(const run_opts *a, const run_opts *b, int n_batches) {
  size_t la, lb;
  unsigned char *x = run(a, n_batches, &la, NULL), *y = run(b, n_batches, &lb, NULL);
  cr_assert_eq(la, lb);
  cr_assert_eq(memcmp(x, y, la), 0, "stores differ");
  free(x);
  free(y);
}

Test(embed, same_bits_whatever_the_thread_count_and_overlap) {
  for (int kind = 0; kind < HS_EMBED_OPTIM_COUNT_; kind++) {
    run_opts base = {.threads = 1, .kind = (hs_embed_optim)kind, .shards_log2 = 4};
    run_opts t3 = base, ov = base;
    t3.threads = 3;
    ov.threads = 2;
    ov.lag = 1;
    expect_same(&base, &t3, 30);
    expect_same(&base, &ov, 30);
  }
  /* With admission and a budget too (evictions happen). */
  run_opts a = {.threads = 1, .kind = HS_EMBED_ADAGRAD, .admit = 2, .budget = 200000,
                .shards_log2 = 3};
  run_opts b = a;
  b.threads = 4;
  b.lag = 1;
  hs_embed_stats st;
  size_t l;
  free(run(&a, 60, &l, &st));
  cr_assert_gt(st.evicted, 0, "the budget should force evictions");
  cr_assert_gt(st.admitted, 0);
  expect_same(&a, &b, 60);
}

/* Eviction (expiry, a budget) is decided from the batches alone: the
 * same bits whether each update comes before the next lookup or up to
 * HS_EMBED_LAG - 1 batches late (in order on the lookup's thread, or on a
 * thread of its own at times that vary), whatever the thread count. */
static void expect_eviction_ignores_the_lag(run_opts base, int n_batches, bool budget) {
  hs_embed_stats st;
  size_t l0;
  unsigned char *ref = run(&base, n_batches, &l0, &st);
  if (budget) cr_assert_gt(st.evicted, 0, "the budget should force evictions");
  else cr_assert_gt(st.expired, 0, "rows should expire");
  const struct { int threads, lag; bool applier; } v[] = {
      {3, 1, false}, {2, HS_EMBED_LAG - 1, false}, {1, HS_EMBED_LAG - 1, true},
      {4, HS_EMBED_LAG - 1, true}, {2, 1, true}};
  for (size_t k = 0; k < sizeof v / sizeof v[0]; k++) {
    run_opts o = base;
    o.threads = v[k].threads;
    o.lag = v[k].lag;
    o.applier = v[k].applier;
    size_t l1;
    unsigned char *b = run(&o, n_batches, &l1, NULL);
    cr_assert(l0 == l1 && memcmp(ref, b, l0) == 0,
              "expiry %u, budget %llu: %d threads, updates %d batches late%s: the store differs",
              base.expire, (unsigned long long)base.budget, v[k].threads, v[k].lag,
              v[k].applier ? " (own thread)" : "");
    free(b);
  }
  free(ref);
}

Test(embed, eviction_is_the_same_whatever_the_update_lag) {
  const uint32_t expiries[3] = {1, 5, 16};
  for (int k = 0; k < 3; k++) {
    run_opts o = {.threads = 1, .kind = HS_EMBED_ADAGRAD, .expire = expiries[k], .shards_log2 = 3};
    expect_eviction_ignores_the_lag(o, 60, false);
  }
  run_opts b = {.threads = 1, .kind = HS_EMBED_ADAGRAD, .budget = 150000, .shards_log2 = 2};
  expect_eviction_ignores_the_lag(b, 60, true);
  b.admit = 2;
  b.budget = 200000;
  b.kind = HS_EMBED_ADAM;
  expect_eviction_ignores_the_lag(b, 60, true);
}

/* A store that evicts refuses a lookup that would find more than
 * HS_EMBED_LAG - 1 earlier batches not yet applied (it could not tell
 * which rows to keep without waiting for them); one that never evicts
 * takes any overlap. */
Test(embed, eviction_needs_the_updates_within_the_lag) {
  for (int evicting = 0; evicting < 2; evicting++) {
    hs_embed_cfg c;
    hs__embed_cfg_defaults(&c);
    c.dim = 2;
    c.expire_after = evicting ? 4 : 0;
    hs_embed *e = make_cfg(&c);
    hs_embed_batch b[HS_EMBED_LAG + 1];
    uint64_t ids[HS_EMBED_LAG + 1];
    hs_status st = HS_OK;
    for (int t = 0; t <= HS_EMBED_LAG; t++) {
      cr_assert_eq(hs__embed_batch_init(&b[t], 1, 2), HS_OK);
      ids[t] = (uint64_t)t;
      hs_embed_query q = {.n = 1, .ids = &ids[t], .n_fields = 1};
      st = hs__embed_lookup(e, &q, (uint32_t)t, true, &b[t]);
      if (t < HS_EMBED_LAG) cr_assert_eq(st, HS_OK, "%s", hs_last_error());
    }
    if (evicting) {
      cr_assert_eq(st, HS_ERR_STATE);
      cr_assert(strstr(hs_last_error(), "not applied"), "%s", hs_last_error());
    } else {
      cr_assert_eq(st, HS_OK, "%s", hs_last_error());
    }
    for (int t = 0; t <= HS_EMBED_LAG; t++) hs__embed_batch_free(&b[t]);
    hs__embed_destroy(e);
  }
}

/* Element-wise Adagrad against a plain-C reference, bit for bit: the
 * reference keeps its own rows and accumulators for every (table, id) in
 * a table of its own and steps them one unique at a time, in float, in
 * the order the formula reads; the store steps them on 3 update threads
 * while the next batch's lookup (3 threads) runs ahead of each update.
 * Every batch's rows (after refresh) must be the reference's, and so must
 * every row and accumulator at the end. A new row's initial values are
 * taken from the store (their derivation is tested above). */
typedef struct ref_row {
  uint64_t id;
  int32_t table; /* -1: empty */
  float w[16], s[16];
} ref_row;

static ref_row *ref_find(ref_row *t, uint32_t cap, int32_t table, uint64_t id) {
  uint32_t h = (uint32_t)(mix(id ^ (uint64_t)table << 56) & (cap - 1));
  while (t[h].table >= 0 && !(t[h].table == table && t[h].id == id)) h = (h + 1) & (cap - 1);
  return &t[h];
}

Test(embed, elementwise_adagrad_matches_a_plain_c_reference_bit_for_bit) {
  /* 11: the store's update takes four coordinates at a time, then three
   * one by one. */
  const int d = 11, fields = 4, n = 64 * fields, n_batches = 40;
  const uint32_t cap = 1u << 15; /* > 4 fields x 3000 ids */
  const float lr = 0.07f, wd = 0.01f, eps = 1e-8f, acc0 = 0.1f;
  hs_embed_cfg c;
  hs__embed_cfg_defaults(&c);
  c.dim = d;
  c.n_tables = fields;
  c.optim.kind = HS_EMBED_ADAGRAD_EW;
  c.optim.lr = lr;
  c.optim.weight_decay = wd;
  c.optim.eps = eps;
  c.optim.initial_accumulator = acc0;
  c.threads = 3;
  c.seed = 5;
  hs_embed *e = make_cfg(&c);
  cr_assert_eq(hs__embed_state_width(HS_EMBED_ADAGRAD_EW, d), d);
  ref_row *ref = malloc(cap * sizeof *ref);
  for (uint32_t i = 0; i < cap; i++) ref[i].table = -1;
  hs_embed_batch b[2];
  uint64_t ids[2][256];
  float *g = malloc((size_t)n * d * sizeof *g);
  for (int k = 0; k < 2; k++) cr_assert_eq(hs__embed_batch_init(&b[k], n, d), HS_OK);
  hs_embed_query q = {.n = n, .n_fields = fields};
  batch_ids(ids[0], n, 0, 3000);
  q.ids = ids[0];
  cr_assert_eq(hs__embed_lookup(e, &q, 0, true, &b[0]), HS_OK, "%s", hs_last_error());
  int64_t n_new = 0, n_seen = 0;
  for (int t = 0; t < n_batches; t++) {
    hs_embed_batch *cur = &b[t & 1];
    if (t + 1 < n_batches) {
      batch_ids(ids[(t + 1) & 1], n, (uint32_t)t + 1, 3000);
      q.ids = ids[(t + 1) & 1];
      cr_assert_eq(hs__embed_lookup(e, &q, (uint32_t)t + 1, true, &b[(t + 1) & 1]), HS_OK, "%s",
                   hs_last_error());
    }
    hs__embed_refresh(e, cur);
    for (int u = 0; u < cur->n_unique; u++) {
      int32_t first = cur->occ[cur->occ_ptr[u]];
      int32_t table = first % fields;
      uint64_t id = ids[t & 1][first];
      ref_row *r = ref_find(ref, cap, table, id);
      const float *row = cur->rows + (size_t)u * d;
      if (r->table < 0) {
        r->table = table;
        r->id = id;
        memcpy(r->w, row, (size_t)d * sizeof *row);
        for (int k = 0; k < d; k++) r->s[k] = acc0;
        n_new++;
      } else {
        cr_assert_eq(memcmp(r->w, row, (size_t)d * sizeof *row), 0,
                     "batch %d: the row of id %llu in table %d is not the reference's", t,
                     (unsigned long long)id, table);
        n_seen++;
      }
    }
    batch_grads(cur, ids[t & 1], d, g);
    for (int u = 0; u < cur->n_unique; u++) {
      int32_t first = cur->occ[cur->occ_ptr[u]];
      ref_row *r = ref_find(ref, cap, first % fields, ids[t & 1][first]);
      const float *gu = g + (size_t)u * d;
      for (int k = 0; k < d; k++) {
        float gk = gu[k] + wd * r->w[k];
        r->s[k] += gk * gk;
        r->w[k] -= lr * gk / (sqrtf(r->s[k]) + eps);
      }
    }
    hs__embed_apply(e, cur, g);
  }
  cr_assert_gt(n_seen, 1000, "rows seen again: %lld", (long long)n_seen);
  hs_embed_stats st;
  hs__embed_stats(e, &st);
  cr_assert_eq(st.rows, (uint64_t)n_new);
  /* Memory accounting: D floats of state per row. */
  cr_assert_eq(st.row_bytes, (uint64_t)n_new * (uint64_t)(2 * d) * 4u);
  cr_assert_eq(hs__embed_record_bytes(e), (size_t)(3 + 2 * d) * 4u);
  for (uint32_t i = 0; i < cap; i++) {
    if (ref[i].table < 0) continue;
    float w[16], s[16];
    cr_assert(hs__embed_read(e, ref[i].table, ref[i].id, w));
    cr_assert(hs__embed_read_state(e, ref[i].table, ref[i].id, s));
    cr_assert_eq(memcmp(w, ref[i].w, (size_t)d * sizeof *w), 0, "row of id %llu",
                 (unsigned long long)ref[i].id);
    cr_assert_eq(memcmp(s, ref[i].s, (size_t)d * sizeof *s), 0, "accumulators of id %llu",
                 (unsigned long long)ref[i].id);
  }
  for (int k = 0; k < 2; k++) hs__embed_batch_free(&b[k]);
  free(g);
  free(ref);
  hs__embed_destroy(e);
}

/* Files carry their optimizer: a row-wise Adagrad store refuses an
 * element-wise one's file and the reverse (same dim, other state width),
 * naming both, and leaves its rows as they were. */
Test(embed, files_of_the_other_adagrad_are_refused) {
  hs_embed *a = make(8, 2, HS_EMBED_ADAGRAD, 1), *b = make(8, 2, HS_EMBED_ADAGRAD_EW, 1);
  hs_embed_batch bt;
  cr_assert_eq(hs__embed_batch_init(&bt, 4, 8), HS_OK);
  uint64_t ids[2] = {7, 9};
  float g[16];
  for (int k = 0; k < 16; k++) g[k] = 0.1f * (float)(k - 8);
  hs_embed *both[2] = {a, b};
  for (int i = 0; i < 2; i++) {
    hs_embed_query q = {.n = 2, .ids = ids, .n_fields = 2};
    cr_assert_eq(hs__embed_lookup(both[i], &q, 0, true, &bt), HS_OK, "%s", hs_last_error());
    hs__embed_apply(both[i], &bt, g);
  }
  char *dir = tu_mkdtemp(), *pa = tu_path(dir, "row.emb"), *pb = tu_path(dir, "ew.emb");
  cr_assert_eq(hs__embed_save(a, pa), HS_OK);
  cr_assert_eq(hs__embed_save(b, pb), HS_OK);
  /* The header's optimizer and state width (embed_io.c): words 3 and 4
   * after the magic. */
  size_t lb;
  FILE *f = fopen(pb, "rb");
  unsigned char hdr[32];
  cr_assert_eq(fread(hdr, 1, sizeof hdr, f), sizeof hdr);
  fseek(f, 0, SEEK_END);
  lb = (size_t)ftell(f);
  fclose(f);
  cr_assert_eq(hdr[8 + 12], 4, "elementwise-adagrad is optimizer 4");
  cr_assert_eq(hdr[8 + 16], 8, "state width D");
  cr_assert_gt(lb, 0);
  float before[8], after[8];
  cr_assert(hs__embed_read(a, 0, 7, before));
  cr_assert_eq(hs__embed_load(a, pb), HS_ERR_INVALID_ARG);
  cr_assert(strstr(hs_last_error(), "elementwise-adagrad") && strstr(hs_last_error(), "adagrad"),
            "%s", hs_last_error());
  cr_assert(hs__embed_read(a, 0, 7, after));
  cr_assert_eq(memcmp(before, after, sizeof before), 0);
  cr_assert_eq(hs__embed_load(b, pa), HS_ERR_INVALID_ARG);
  cr_assert(strstr(hs_last_error(), "row.emb"), "%s", hs_last_error());
  /* Each loads into a store of its own kind. */
  hs_embed *b2 = make(8, 2, HS_EMBED_ADAGRAD_EW, 2);
  cr_assert_eq(hs__embed_load(b2, pb), HS_OK, "%s", hs_last_error());
  float s1[8], s2[8];
  cr_assert(hs__embed_read_state(b, 1, 9, s1));
  cr_assert(hs__embed_read_state(b2, 1, 9, s2));
  cr_assert_eq(memcmp(s1, s2, sizeof s1), 0);
  free(pa);
  free(pb);
  tu_rmtree(dir);
  hs__embed_batch_free(&bt);
  hs__embed_destroy(a);
  hs__embed_destroy(b);
  hs__embed_destroy(b2);
}

Test(embed, overlapped_lookup_defers_rows_in_flight) {
  hs_embed *e = make(2, 1, HS_EMBED_SGD, 2);
  hs_embed_batch b0, b1;
  cr_assert_eq(hs__embed_batch_init(&b0, 4, 2), HS_OK);
  cr_assert_eq(hs__embed_batch_init(&b1, 4, 2), HS_OK);
  uint64_t i0[2] = {1, 2}, i1[2] = {2, 3};
  hs_embed_query q0 = {.n = 2, .ids = i0, .n_fields = 1}, q1 = {.n = 2, .ids = i1, .n_fields = 1};
  cr_assert_eq(hs__embed_lookup(e, &q0, 0, true, &b0), HS_OK);
  cr_assert_eq(hs__embed_lookup(e, &q1, 1, true, &b1), HS_OK);
  cr_assert_eq(b1.n_deferred, 1, "id 2 awaits batch 0's update");
  cr_assert(b1.deferred[0] && !b1.deferred[1]);
  float g[4] = {1, 1, 1, 1};
  hs__embed_apply(e, &b0, g);
  hs__embed_refresh(e, &b1);
  float r[2];
  cr_assert(hs__embed_read(e, 0, 2, r));
  cr_assert_eq(memcmp(b1.rows, r, sizeof r), 0, "the refreshed row is the updated one");
  cr_assert_eq(r[0], b0.rows[2] - 0.05f);
  hs__embed_apply(e, &b1, g);
  hs__embed_batch_free(&b0);
  hs__embed_batch_free(&b1);
  hs__embed_destroy(e);
}

Test(embed, budget_evicts_least_recently_used) {
  hs_embed_cfg c;
  hs__embed_cfg_defaults(&c);
  c.dim = 16;
  c.shards_log2 = 2;
  c.memory_budget = 600000;
  hs_embed *e = make_cfg(&c);
  hs_embed_batch b;
  cr_assert_eq(hs__embed_batch_init(&b, 512, 16), HS_OK);
  float *g = calloc(512 * 16, sizeof *g);
  uint64_t ids[512];
  hs_embed_stats st;
  /* Id 0 in every batch; fresh ids otherwise: old rows must go. */
  for (uint32_t t = 0; t < 100; t++) {
    ids[0] = 0;
    for (int i = 1; i < 512; i++) ids[i] = 1 + (uint64_t)t * 511 + (uint64_t)i;
    step(e, &b, ids, 512, t, g);
    hs__embed_stats(e, &st);
    cr_assert_leq(st.bytes, c.memory_budget, "batch %u: %llu bytes", t,
                  (unsigned long long)st.bytes);
  }
  cr_assert_gt(st.evicted, 0);
  float r[16];
  cr_assert(hs__embed_read(e, 0, 0, r), "the hot row stays");
  cr_assert(hs__embed_read(e, 0, 1 + 99 * 511 + 5, r), "the newest rows stay");
  cr_assert(!hs__embed_read(e, 0, 1 + 0 * 511 + 5, r), "the oldest rows went");
  /* A batch whose own new rows cannot fit is refused. */
  hs_embed_batch big;
  cr_assert_eq(hs__embed_batch_init(&big, 20000, 16), HS_OK);
  uint64_t *many = malloc(20000 * sizeof *many);
  for (int i = 0; i < 20000; i++) many[i] = 1000000 + (uint64_t)i;
  hs_embed_query q = {.n = 20000, .ids = many, .n_fields = 1};
  cr_assert_eq(hs__embed_lookup(e, &q, 200, true, &big), HS_ERR_BUDGET);
  cr_assert(strstr(hs_last_error(), "budget"), "%s", hs_last_error());
  free(many);
  hs__embed_batch_free(&big);
  hs__embed_batch_free(&b);
  free(g);
  hs__embed_destroy(e);
}

Test(embed, rows_in_flight_are_never_evicted) {
  hs_embed_cfg c;
  hs__embed_cfg_defaults(&c);
  c.dim = 16;
  c.shards_log2 = 0;
  c.memory_budget = 200000;
  hs_embed *e = make_cfg(&c);
  hs_embed_batch b[3];
  for (int k = 0; k < 3; k++) cr_assert_eq(hs__embed_batch_init(&b[k], 700, 16), HS_OK);
  uint64_t ids[3][700];
  for (int k = 0; k < 3; k++)
    for (int i = 0; i < 700; i++) ids[k][i] = (uint64_t)k * 100000 + (uint64_t)i;
  /* Three batches looked up, none applied: ~2100 rows x 80 B do not fit,
   * and none may be evicted. */
  hs_status st = HS_OK;
  int k = 0;
  for (; k < 3 && st == HS_OK; k++) {
    hs_embed_query q = {.n = 700, .ids = ids[k], .n_fields = 1};
    st = hs__embed_lookup(e, &q, (uint32_t)k, true, &b[k]);
  }
  cr_assert_eq(st, HS_ERR_BUDGET, "%s", hs_last_error());
  float r[16];
  for (int j = 0; j < k - 1; j++)
    for (int i = 0; i < 700; i += 50) cr_assert(hs__embed_read(e, 0, ids[j][i], r));
  for (int j = 0; j < 3; j++) hs__embed_batch_free(&b[j]);
  hs__embed_destroy(e);
}

Test(embed, expiry_drops_unused_rows) {
  hs_embed_cfg c;
  hs__embed_cfg_defaults(&c);
  c.dim = 4;
  c.expire_after = 16;
  hs_embed *e = make_cfg(&c);
  hs_embed_batch b;
  cr_assert_eq(hs__embed_batch_init(&b, 4, 4), HS_OK);
  float g[16] = {0};
  uint64_t first[2] = {1, 2}, hot[1] = {1};
  step(e, &b, first, 2, 0, g);
  for (uint32_t t = 1; t < 40; t++) step(e, &b, hot, 1, t, g);
  float r[4];
  cr_assert(hs__embed_read(e, 0, 1, r));
  cr_assert(!hs__embed_read(e, 0, 2, r), "unused for 39 batches: expired");
  hs_embed_stats st;
  hs__embed_stats(e, &st);
  cr_assert_eq(st.expired, 1);
  hs__embed_batch_free(&b);
  hs__embed_destroy(e);
}

Test(embed, save_load_round_trip_and_bad_files) {
  run_opts o = {.threads = 2, .kind = HS_EMBED_ADAM, .admit = 2, .shards_log2 = 2};
  hs_embed_cfg c;
  hs__embed_cfg_defaults(&c);
  c.dim = 8;
  c.n_tables = 4;
  c.optim.kind = HS_EMBED_ADAM;
  c.admit_after = 2;
  c.seed = 3;
  c.shards_log2 = 5; /* another shard count loads the same rows */
  size_t len;
  unsigned char *bytes = run(&o, 12, &len, NULL);
  char *dir = tu_mkdtemp();
  tu_write_bytes(dir, "a.emb", bytes, len);
  char *pa = tu_path(dir, "a.emb"), *pb = tu_path(dir, "b.emb");
  hs_embed *e = make_cfg(&c);
  cr_assert_eq(hs__embed_load(e, pa), HS_OK, "%s", hs_last_error());
  cr_assert_eq(hs__embed_save(e, pb), HS_OK);
  FILE *f = fopen(pb, "rb");
  unsigned char *again = malloc(len + 1);
  cr_assert_eq(fread(again, 1, len + 1, f), len);
  fclose(f);
  cr_assert_eq(memcmp(bytes, again, len), 0, "load then save gives the same bytes");
  hs_embed_stats st0, st1;
  hs__embed_stats(e, &st0);
  /* A flipped byte: refused by the CRC, the store unchanged. */
  bytes[len / 2] ^= 1;
  tu_write_bytes(dir, "bad.emb", bytes, len);
  char *pbad = tu_path(dir, "bad.emb");
  hs_status s = hs__embed_load(e, pbad);
  cr_assert(s == HS_ERR_CHECKSUM || s == HS_ERR_FORMAT, "%s", hs_strerror(s));
  cr_assert(strstr(hs_last_error(), "bad.emb"), "%s", hs_last_error());
  hs__embed_stats(e, &st1);
  cr_assert_eq(st0.rows, st1.rows);
  bytes[len / 2] ^= 1;
  /* Truncated. */
  tu_write_bytes(dir, "short.emb", bytes, len - 7);
  char *pshort = tu_path(dir, "short.emb");
  TU_EXPECT_FAIL(hs__embed_load(e, pshort), HS_ERR_FORMAT, "short.emb", "byte", "truncated");
  /* Another layout. */
  hs_embed *other = make(4, 4, HS_EMBED_ADAM, 1);
  TU_EXPECT_FAIL(hs__embed_load(other, pa), HS_ERR_INVALID_ARG, "a.emb", "8 floats", "4");
  /* A save into a missing directory leaves nothing. */
  cr_assert_eq(hs__embed_save(e, "/nonexistent-dir/x.emb"), HS_ERR_IO);
  hs__embed_destroy(other);
  hs__embed_destroy(e);
  free(pa);
  free(pb);
  free(pbad);
  free(pshort);
  free(again);
  free(bytes);
  tu_rmtree(dir);
}

/* n batches straight, or `at`, save, load into a fresh store, the rest:
 * the same bytes saved at the end. */
static void resume_case(run_opts o, int n_batches, int at) {
  size_t la;
  hs_embed_stats sst;
  unsigned char *straight = run(&o, n_batches, &la, &sst);
  const int d = RUN_D, fields = RUN_FIELDS, n = RUN_N;
  hs_embed_cfg c;
  hs__embed_cfg_defaults(&c);
  c.dim = d;
  c.n_tables = fields;
  c.seed = 3;
  c.optim.kind = o.kind;
  c.expire_after = o.expire;
  c.admit_after = o.admit;
  c.memory_budget = o.budget;
  c.shards_log2 = o.shards_log2;
  hs_embed *e = make_cfg(&c);
  hs_embed_batch b;
  cr_assert_eq(hs__embed_batch_init(&b, n, d), HS_OK);
  uint64_t ids[RUN_N];
  float *g = malloc((size_t)n * d * sizeof *g);
  hs_embed_query q = {.n = n, .ids = ids, .n_fields = fields};
  char *dir = tu_mkdtemp(), *p = tu_path(dir, "half.emb"), *p2 = tu_path(dir, "end.emb");
  for (int t = 0; t < n_batches; t++) {
    if (t == at) {
      cr_assert_eq(hs__embed_save(e, p), HS_OK);
      hs__embed_destroy(e);
      e = make_cfg(&c);
      cr_assert_eq(hs__embed_load(e, p), HS_OK, "%s", hs_last_error());
    }
    batch_ids(ids, n, (uint32_t)t, 3000);
    cr_assert_eq(hs__embed_lookup(e, &q, (uint32_t)t, true, &b), HS_OK);
    batch_grads(&b, ids, d, g);
    hs__embed_apply(e, &b, g);
  }
  hs_embed_stats rst;
  hs__embed_stats(e, &rst);
  cr_assert_eq(rst.rows, sst.rows, "%s, expiry %u: %llu rows resumed, %llu straight",
               hs__embed_optim_name(o.kind), o.expire, (unsigned long long)rst.rows,
               (unsigned long long)sst.rows);
  cr_assert_eq(hs__embed_save(e, p2), HS_OK);
  FILE *f = fopen(p2, "rb");
  unsigned char *resumed = malloc(la);
  cr_assert_eq(fread(resumed, 1, la, f), la);
  fclose(f);
  cr_assert_eq(memcmp(straight, resumed, la), 0, "%s, expiry %u: the resumed store differs",
               hs__embed_optim_name(o.kind), o.expire);
  free(straight);
  free(resumed);
  free(g);
  free(p);
  free(p2);
  tu_rmtree(dir);
  hs__embed_batch_free(&b);
  hs__embed_destroy(e);
}

Test(embed, resumed_store_continues_bit_identically) {
  run_opts o = {.threads = 1, .kind = HS_EMBED_ADAGRAD, .shards_log2 = 4};
  resume_case(o, 20, 10);
  o.kind = HS_EMBED_ADAGRAD_EW;
  resume_case(o, 20, 10);
}

/* With expiry too: the passes come at the same batches after a load as
 * they would have without one (a horizon of 16 expires every 2 batches;
 * the save comes between two passes), so the same rows expire. */
Test(embed, resumed_store_expires_as_the_straight_run) {
  run_opts o = {.threads = 1, .kind = HS_EMBED_ADAGRAD, .expire = 16, .shards_log2 = 4};
  resume_case(o, 60, 32);
  o.expire = 40; /* every 5 */
  o.admit = 2;
  resume_case(o, 90, 43);
}

/* Under a budget, which counts the bytes the store holds (index, chunks,
 * counts) and not only its rows: a loaded store takes the capacities the
 * saved one had, so it evicts when and what the saved one would have. */
Test(embed, resumed_store_under_a_budget_evicts_as_the_straight_run) {
  run_opts o = {.threads = 1, .kind = HS_EMBED_ADAGRAD, .budget = 150000, .shards_log2 = 2};
  resume_case(o, 60, 29);
  o.admit = 2;
  o.expire = 24;
  o.budget = 120000;
  resume_case(o, 60, 41);
}

/* The layout's overhead, at a size the test suite can afford (the bench
 * measures 10^7 rows in 16 shards): rows of 16 floats with row-wise
 * Adagrad state in at most 1.3 times their raw bytes. Few shards, so that
 * each holds many rows, as at full size: a shard's last chunk (up to 80 KB
 * here) is a share of its rows that only small shards notice. */
Test(embed, memory_overhead_within_1_3x) {
  hs_embed_cfg c;
  hs__embed_cfg_defaults(&c);
  c.dim = 16;
  c.threads = 2;
  c.shards_log2 = 1;
  hs_embed *e = make_cfg(&c);
  const int n = 4096, batches = 40;
  hs_embed_batch b;
  cr_assert_eq(hs__embed_batch_init(&b, n, 16), HS_OK);
  uint64_t *ids = malloc(n * sizeof *ids);
  for (int t = 0; t < batches; t++) {
    for (int i = 0; i < n; i++) ids[i] = mix((uint64_t)t * n + (uint64_t)i);
    hs_embed_query q = {.n = n, .ids = ids, .n_fields = 1};
    cr_assert_eq(hs__embed_lookup(e, &q, (uint32_t)t, true, &b), HS_OK);
    hs__embed_release(e, (uint32_t)t);
  }
  hs_embed_stats st;
  hs__embed_stats(e, &st);
  cr_assert_eq(st.rows, (uint64_t)n * batches);
  cr_assert_eq(st.row_bytes, st.rows * 68u);
  double ratio = (double)st.bytes / (double)st.row_bytes;
  cr_assert_leq(ratio, 1.3, "%.3f x the raw bytes", ratio);
  free(ids);
  hs__embed_batch_free(&b);
  hs__embed_destroy(e);
}

/* Saves write a temporary of our own naming (umask's mode, locked while
 * written): one left by a killed save goes with the next save of the same
 * file, one in use stays; loading never blocks on a FIFO. */
Test(embed, saves_sweep_stale_temporaries_and_loads_refuse_a_fifo, .timeout = 60) {
  hs_embed *e = make(4, 1, HS_EMBED_SGD, 1);
  char *dir = tu_mkdtemp(), *path = tu_path(dir, "t.emb");
  char stale[600], live[600];
  snprintf(stale, sizeof stale, "%s.tmp.Ab3xY9", path);
  snprintf(live, sizeof live, "%s.tmp.Live01", path);
  FILE *f = fopen(stale, "wb");
  cr_assert(f);
  fputs("half a table", f);
  fclose(f);
  int lfd = open(live, O_RDWR | O_CREAT, 0600);
  cr_assert(lfd >= 0);
  cr_assert_eq(flock(lfd, LOCK_EX), 0);
  mode_t old = umask(027);
  cr_assert_eq(hs__embed_save(e, path), HS_OK, "%s", hs_last_error());
  umask(old);
  struct stat sb;
  cr_expect_neq(stat(stale, &sb), 0, "the stale temporary is still there");
  cr_expect_eq(stat(live, &sb), 0, "a temporary in use was removed");
  cr_assert_eq(stat(path, &sb), 0);
  cr_expect_eq(sb.st_mode & 0777, 0640, "mode %o, the umask gives 0640", sb.st_mode & 0777);
  close(lfd);
  char *fifo = tu_path(dir, "fifo.emb");
  cr_assert_eq(mkfifo(fifo, 0644), 0);
  TU_EXPECT_FAIL(hs__embed_load(e, fifo), HS_ERR_IO, fifo, "", "not a regular file (a FIFO)");
  free(fifo);
  free(path);
  tu_rmtree(dir);
  hs__embed_destroy(e);
}

/* The record chunks' slabs: from four threads at once, chunks of every
 * size the store asks for and beyond a slab's quarter (a mapping of their
 * own), each 64-byte aligned, writable end to end and apart from every
 * other (each is filled with its own number, read back after all). */
typedef struct slab_job {
  hs_embed_slabs *s;
  int who;
  uint32_t *got[64];
  size_t words[64];
} slab_job;

static void *slab_worker(void *arg) {
  slab_job *j = arg;
  for (int i = 0; i < 64; i++) {
    /* 16 .. 1024 records of 35 words, and now and then 3 MB */
    size_t words = i % 16 == 15 ? (size_t)3 << 18 : (size_t)35 * (16u << (i % 7));
    uint32_t *p = hs__embed_slabs_alloc(j->s, words * 4);
    j->got[i] = p;
    j->words[i] = words;
    if (!p) return NULL;
    for (size_t w = 0; w < words; w++) p[w] = (uint32_t)(j->who * 64 + i);
  }
  return NULL;
}

Test(embed, slabs_hand_out_aligned_chunks_apart_from_each_other) {
  hs_embed_slabs s;
  hs__embed_slabs_init(&s);
  slab_job jobs[4];
  pthread_t th[4];
  for (int t = 0; t < 4; t++) {
    jobs[t] = (slab_job){.s = &s, .who = t};
    cr_assert_eq(pthread_create(&th[t], NULL, slab_worker, &jobs[t]), 0);
  }
  for (int t = 0; t < 4; t++) pthread_join(th[t], NULL);
  for (int t = 0; t < 4; t++)
    for (int i = 0; i < 64; i++) {
      uint32_t *p = jobs[t].got[i];
      cr_assert_not_null(p, "thread %d, chunk %d", t, i);
      cr_assert_eq((uintptr_t)p % 64, 0u, "thread %d, chunk %d at %p", t, i, (void *)p);
      size_t bad = 0;
      for (size_t w = 0; w < jobs[t].words[i]; w++) bad += p[w] != (uint32_t)(t * 64 + i);
      cr_assert_eq(bad, 0u, "thread %d, chunk %d: %zu words overwritten", t, i, bad);
    }
  hs__embed_slabs_free(&s);
}
