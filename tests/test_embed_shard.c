/* The embedding store sharded over ranks (ranks as threads of one
 * process): a step of W ranks equals one store's step on the global batch
 * with each row's gradients summed in rank order, bit for bit; one rank
 * equals the unsharded store; a silent rank is named. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "embed/hs_embed_shard.h"
#include "hs_test_util.h"

#define STEPS 12
#define FIELDS 4
#define DIM 8
#define EXAMPLES 48 /* rank r trains on EXAMPLES - 3 r examples a step */
#define MAX_RANKS 4

static uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

static int examples_of(int r) { return EXAMPLES - 3 * r; }

/* Rank r's ids at step k, example-major; field f draws from a vocabulary
 * of 40 + 20 f ids, so ranks share many ids and a batch repeats some. */
static void ids_of(int r, int k, uint64_t *ids) {
  int n = examples_of(r);
  for (int i = 0; i < n; i++)
    for (int f = 0; f < FIELDS; f++) {
      uint64_t h = mix(((uint64_t)r << 40) ^ ((uint64_t)k << 20) ^ (uint64_t)(i * FIELDS + f));
      ids[i * FIELDS + f] = 1000u * (uint64_t)f + h % (uint64_t)(40 + 20 * f);
    }
}

/* A gradient that depends on the row read, so that a wrong row shows. */
static void grad_of(int r, int k, uint64_t id, const float *row, float *g) {
  for (int c = 0; c < DIM; c++) {
    uint64_t h = mix(id * 131u + (uint64_t)(r * 7 + k * 1009 + c));
    g[c] = 0.5f * row[c] + (float)((double)(h >> 40) / (double)(1u << 24) - 0.5) * 0.02f;
  }
}

static float weight_of(int r, int W) {
  int total = 0;
  for (int p = 0; p < W; p++) total += examples_of(p);
  return (float)((double)examples_of(r) / (double)total);
}

/* What rank r saw at step k. */
typedef struct seen {
  int32_t n, n_unique;
  int32_t *unique_of, *occ_ptr, *occ;
  float *rows;
} seen;

typedef struct rank_job {
  hs_embed_shard *sh;
  int r, W;
  seen s[STEPS];
  hs_status st;
  char err[512];
} rank_job;

static void *rank_main(void *p) {
  rank_job *j = p;
  int n = examples_of(j->r) * FIELDS;
  uint64_t ids[EXAMPLES * FIELDS];
  float g[EXAMPLES * FIELDS * DIM];
  hs_embed_batch b;
  j->st = hs__embed_batch_init(&b, EXAMPLES * FIELDS, DIM);
  for (int k = 0; k < STEPS && j->st == HS_OK; k++) {
    ids_of(j->r, k, ids);
    hs_embed_query q = {.n = n, .ids = ids, .n_fields = FIELDS};
    if ((j->st = hs__embed_shard_lookup(j->sh, &q, (uint32_t)k + 1, true, &b)) != HS_OK) break;
    seen *s = &j->s[k];
    s->n = b.n;
    s->n_unique = b.n_unique;
    s->unique_of = malloc((size_t)n * sizeof(int32_t));
    s->occ = malloc((size_t)n * sizeof(int32_t));
    s->occ_ptr = malloc(((size_t)b.n_unique + 1) * sizeof(int32_t));
    s->rows = malloc((size_t)b.n_unique * DIM * sizeof(float));
    memcpy(s->unique_of, b.unique_of, (size_t)n * sizeof(int32_t));
    memcpy(s->occ, b.occ, (size_t)n * sizeof(int32_t));
    memcpy(s->occ_ptr, b.occ_ptr, ((size_t)b.n_unique + 1) * sizeof(int32_t));
    memcpy(s->rows, b.rows, (size_t)b.n_unique * DIM * sizeof(float));
    for (int32_t u = 0; u < b.n_unique; u++)
      grad_of(j->r, k, ids[b.occ[b.occ_ptr[u]]], b.rows + (size_t)u * DIM, g + (size_t)u * DIM);
    j->st = hs__embed_shard_apply(j->sh, &b, g, weight_of(j->r, j->W));
  }
  if (j->st != HS_OK) snprintf(j->err, sizeof j->err, "%s", hs_last_error());
  hs__embed_batch_free(&b);
  return NULL;
}

static void free_seen(rank_job *j) {
  for (int k = 0; k < STEPS; k++) {
    free(j->s[k].unique_of);
    free(j->s[k].occ);
    free(j->s[k].occ_ptr);
    free(j->s[k].rows);
  }
}

static hs_embed_cfg cfg_of(hs_embed_optim kind, uint32_t admit_after, int threads) {
  hs_embed_cfg c;
  hs__embed_cfg_defaults(&c);
  c.dim = DIM;
  c.n_tables = FIELDS;
  c.optim.kind = kind;
  c.optim.weight_decay = 0.01f;
  c.admit_after = admit_after;
  c.threads = threads;
  c.seed = 11;
  return c;
}

/* Run W ranks, then replay the steps on one store: every rank's view of
 * every step and every row and optimizer state at the end equal. */
static void sharded_equals_one_store(int W, const hs_embed_cfg *cfg) {
  hs_comm *c[MAX_RANKS];
  rank_job jobs[MAX_RANKS];
  pthread_t th[MAX_RANKS];
  cr_assert_eq(hs__comm_open_local(W, c), HS_OK, "%s", hs_last_error());
  memset(jobs, 0, sizeof jobs);
  for (int r = 0; r < W; r++) {
    jobs[r].r = r;
    jobs[r].W = W;
    cr_assert_eq(hs__embed_shard_create(c[r], cfg, &jobs[r].sh), HS_OK, "%s", hs_last_error());
  }
  for (int r = 0; r < W; r++) cr_assert_eq(pthread_create(&th[r], NULL, rank_main, &jobs[r]), 0);
  for (int r = 0; r < W; r++) pthread_join(th[r], NULL);
  for (int r = 0; r < W; r++)
    cr_assert_eq(jobs[r].st, HS_OK, "%d ranks, rank %d: %s", W, r, jobs[r].err);

  /* The reference: one store, the global batch (rank 0's occurrences,
   * then rank 1's, ...), each row's gradient summed over the ranks in
   * rank order, each rank's gradient weighted by its share. */
  hs_embed *ref;
  cr_assert_eq(hs__embed_create(cfg, &ref), HS_OK, "%s", hs_last_error());
  int total = 0;
  for (int r = 0; r < W; r++) total += examples_of(r) * FIELDS;
  uint64_t *gids = malloc((size_t)total * sizeof *gids);
  uint16_t *gtab = malloc((size_t)total * sizeof *gtab);
  float *sum = malloc((size_t)total * DIM * sizeof *sum);
  uint8_t *started = malloc((size_t)total);
  float g[DIM];
  hs_embed_batch gb, rb;
  cr_assert_eq(hs__embed_batch_init(&gb, total, DIM), HS_OK);
  cr_assert_eq(hs__embed_batch_init(&rb, EXAMPLES * FIELDS, DIM), HS_OK);
  for (int k = 0; k < STEPS; k++) {
    int off[MAX_RANKS], o = 0;
    for (int r = 0; r < W; r++) {
      off[r] = o;
      ids_of(r, k, gids + o);
      for (int i = 0; i < examples_of(r) * FIELDS; i++) gtab[o + i] = (uint16_t)(i % FIELDS);
      o += examples_of(r) * FIELDS;
    }
    hs_embed_query gq = {.n = total, .ids = gids, .tables = gtab};
    cr_assert_eq(hs__embed_lookup(ref, &gq, (uint32_t)k + 1, true, &gb), HS_OK, "%s",
                 hs_last_error());
    memset(started, 0, (size_t)gb.n_unique);
    for (int r = 0; r < W; r++) {
      const seen *s = &jobs[r].s[k];
      int n = examples_of(r) * FIELDS;
      /* The rank's uniques and occurrence lists as one store orders them. */
      hs_embed_query q = {.n = n, .ids = gids + off[r], .n_fields = FIELDS};
      cr_assert_eq(hs__embed_lookup(ref, &q, 0, false, &rb), HS_OK, "%s", hs_last_error());
      cr_assert_eq(s->n_unique, rb.n_unique, "%d ranks, rank %d, step %d: uniques", W, r, k);
      cr_assert_eq(memcmp(s->unique_of, rb.unique_of, (size_t)n * 4), 0);
      cr_assert_eq(memcmp(s->occ_ptr, rb.occ_ptr, ((size_t)rb.n_unique + 1) * 4), 0);
      cr_assert_eq(memcmp(s->occ, rb.occ, (size_t)n * 4), 0);
      float w = weight_of(r, W);
      for (int32_t u = 0; u < s->n_unique; u++) {
        int32_t i = s->occ[s->occ_ptr[u]];
        int32_t G = gb.unique_of[off[r] + i];
        const float *row = gb.rows + (size_t)G * DIM;
        cr_assert_eq(memcmp(s->rows + (size_t)u * DIM, row, DIM * 4), 0,
                     "%d ranks, rank %d, step %d: the row of id %llu differs", W, r, k,
                     (unsigned long long)gids[off[r] + i]);
        grad_of(r, k, gids[off[r] + i], row, g);
        float *acc = sum + (size_t)G * DIM;
        for (int d = 0; d < DIM; d++) {
          float x = w == 1.0f ? g[d] : g[d] * w;
          acc[d] = started[G] ? acc[d] + x : x;
        }
        started[G] = 1;
      }
    }
    hs__embed_apply(ref, &gb, sum);
  }

  /* Every row and state at the end, each on its owner alone. */
  int32_t sw = hs__embed_state_width(cfg->optim.kind, DIM);
  float ra[DIM], rs[DIM], sa[2 * DIM + 1], ss[2 * DIM + 1];
  uint64_t rows = 0, live = 0;
  for (int f = 0; f < FIELDS; f++)
    for (uint64_t v = 0; v < (uint64_t)(40 + 20 * f); v++) {
      uint64_t id = 1000u * (uint64_t)f + v;
      int owner = hs__embed_owner(f, id, W);
      hs_embed *mine = hs__embed_shard_store(jobs[owner].sh);
      bool in_ref = hs__embed_read(ref, f, id, ra), in_shard = hs__embed_read(mine, f, id, rs);
      cr_assert_eq(in_ref, in_shard, "%d ranks: id %llu of table %d %s", W,
                   (unsigned long long)id, f, in_ref ? "missing from its owner" : "extra");
      live += in_ref;
      if (!in_ref) continue;
      cr_assert_eq(memcmp(ra, rs, sizeof ra), 0, "%d ranks: the row of id %llu differs", W,
                   (unsigned long long)id);
      if (sw) {
        hs__embed_read_state(ref, f, id, sa);
        hs__embed_read_state(mine, f, id, ss);
        cr_assert_eq(memcmp(sa, ss, (size_t)sw * 4), 0, "%d ranks: the state of id %llu differs",
                     W, (unsigned long long)id);
      }
    }
  for (int r = 0; r < W; r++) {
    hs_embed_stats es;
    hs__embed_stats(hs__embed_shard_store(jobs[r].sh), &es);
    rows += es.rows;
  }
  hs_embed_stats es;
  hs__embed_stats(ref, &es);
  cr_assert_eq(rows, es.rows, "%d ranks: %llu rows over the shards, %llu in one store", W,
               (unsigned long long)rows, (unsigned long long)es.rows);
  cr_assert_eq(live, es.rows);
  cr_assert_gt(live, 100);

  hs__embed_batch_free(&gb);
  hs__embed_batch_free(&rb);
  free(gids);
  free(gtab);
  free(sum);
  free(started);
  hs__embed_destroy(ref);
  for (int r = 0; r < W; r++) {
    free_seen(&jobs[r]);
    hs__embed_shard_destroy(jobs[r].sh);
    hs__comm_destroy(c[r]);
  }
}

Test(embed_shard, one_to_four_ranks_equal_one_store_on_the_global_batch) {
  hs_embed_cfg c = cfg_of(HS_EMBED_ADAGRAD, 0, 1);
  for (int W = 1; W <= MAX_RANKS; W++) sharded_equals_one_store(W, &c);
}

Test(embed_shard, every_optimizer_admission_and_threads) {
  hs_embed_cfg c = cfg_of(HS_EMBED_ADAGRAD_EW, 2, 2);
  sharded_equals_one_store(3, &c);
  c = cfg_of(HS_EMBED_SGD, 3, 1);
  sharded_equals_one_store(2, &c);
  c = cfg_of(HS_EMBED_ADAM, 0, 2);
  sharded_equals_one_store(4, &c);
  c = cfg_of(HS_EMBED_FTRL, 0, 1);
  sharded_equals_one_store(3, &c);
}

/* One rank: what the unsharded store does with the batch as the CTR
 * pipeline hands it over (example-major, no tables), bit for bit. */
Test(embed_shard, one_rank_is_the_unsharded_store) {
  hs_embed_cfg cfg = cfg_of(HS_EMBED_ADAGRAD, 2, 2);
  hs_comm *c;
  hs_embed_shard *sh;
  hs_embed *plain;
  cr_assert_eq(hs__comm_open_local(1, &c), HS_OK);
  cr_assert_eq(hs__embed_shard_create(c, &cfg, &sh), HS_OK, "%s", hs_last_error());
  cr_assert_eq(hs__embed_create(&cfg, &plain), HS_OK);
  hs_embed_batch a, b;
  cr_assert_eq(hs__embed_batch_init(&a, EXAMPLES * FIELDS, DIM), HS_OK);
  cr_assert_eq(hs__embed_batch_init(&b, EXAMPLES * FIELDS, DIM), HS_OK);
  uint64_t ids[EXAMPLES * FIELDS];
  float g[EXAMPLES * FIELDS * DIM];
  int n = EXAMPLES * FIELDS;
  for (int k = 0; k < STEPS; k++) {
    ids_of(0, k, ids);
    hs_embed_query q = {.n = n, .ids = ids, .n_fields = FIELDS};
    cr_assert_eq(hs__embed_shard_lookup(sh, &q, (uint32_t)k + 5, true, &a), HS_OK, "%s",
                 hs_last_error());
    cr_assert_eq(hs__embed_lookup(plain, &q, (uint32_t)k + 5, true, &b), HS_OK);
    cr_assert_eq(a.n_unique, b.n_unique);
    cr_assert_eq(memcmp(a.unique_of, b.unique_of, (size_t)n * 4), 0);
    cr_assert_eq(memcmp(a.occ_ptr, b.occ_ptr, ((size_t)a.n_unique + 1) * 4), 0);
    cr_assert_eq(memcmp(a.occ, b.occ, (size_t)n * 4), 0);
    cr_assert_eq(memcmp(a.rows, b.rows, (size_t)a.n_unique * DIM * 4), 0, "step %d: rows", k);
    for (int32_t u = 0; u < a.n_unique; u++)
      grad_of(0, k, ids[a.occ[a.occ_ptr[u]]], a.rows + (size_t)u * DIM, g + (size_t)u * DIM);
    cr_assert_eq(hs__embed_shard_apply(sh, &a, g, 1.0f), HS_OK, "%s", hs_last_error());
    hs__embed_apply(plain, &b, g);
  }
  hs_embed_stats x, y;
  hs__embed_stats(hs__embed_shard_store(sh), &x);
  hs__embed_stats(plain, &y);
  cr_assert_eq(x.rows, y.rows);
  cr_assert_eq(x.pending, y.pending, "admission counts: %llu vs %llu pending",
               (unsigned long long)x.pending, (unsigned long long)y.pending);
  float ra[DIM], rb[DIM];
  for (int f = 0; f < FIELDS; f++)
    for (uint64_t v = 0; v < (uint64_t)(40 + 20 * f); v++) {
      uint64_t id = 1000u * (uint64_t)f + v;
      cr_assert_eq(hs__embed_read(plain, f, id, ra), hs__embed_read(hs__embed_shard_store(sh), f, id, rb));
      cr_assert_eq(memcmp(ra, rb, sizeof ra), 0);
    }
  /* A second training lookup before the apply is refused, and so is an
   * apply of a batch that is not the one awaited. */
  ids_of(0, 0, ids);
  hs_embed_query q = {.n = n, .ids = ids, .n_fields = FIELDS};
  cr_assert_eq(hs__embed_shard_lookup(sh, &q, 100, true, &a), HS_OK);
  cr_assert_eq(hs__embed_shard_lookup(sh, &q, 101, true, &a), HS_ERR_STATE);
  cr_assert(strstr(hs_last_error(), "not applied"), "%s", hs_last_error());
  cr_assert_eq(hs__embed_shard_lookup(sh, &q, 0, false, &b), HS_OK); /* reads may come between */
  cr_assert_eq(hs__embed_shard_apply(sh, &b, g, 1.0f), HS_ERR_STATE);
  cr_assert_eq(hs__embed_shard_apply(sh, &a, g, 1.0f), HS_OK, "%s", hs_last_error());
  uint16_t bad_tab[1] = {FIELDS};
  hs_embed_query bad = {.n = 1, .ids = ids, .tables = bad_tab};
  cr_assert_eq(hs__embed_shard_lookup(sh, &bad, 0, false, &b), HS_ERR_RANGE);
  hs__embed_batch_free(&a);
  hs__embed_batch_free(&b);
  hs__embed_destroy(plain);
  hs__embed_shard_destroy(sh);
  hs__comm_destroy(c);
}

typedef struct silent_job {
  hs_embed_shard *sh;
  int r;
  hs_status st;
  char err[512];
  double took;
} silent_job;

static void *silent_main(void *p) {
  silent_job *j = p;
  if (j->r == 2) return NULL; /* the silent rank */
  uint64_t ids[EXAMPLES * FIELDS];
  hs_embed_batch b;
  hs__embed_batch_init(&b, EXAMPLES * FIELDS, DIM);
  ids_of(j->r, 0, ids);
  hs_embed_query q = {.n = examples_of(j->r) * FIELDS, .ids = ids, .n_fields = FIELDS};
  double t0 = hs__now();
  j->st = hs__embed_shard_lookup(j->sh, &q, 1, true, &b);
  j->took = hs__now() - t0;
  snprintf(j->err, sizeof j->err, "%s", hs_last_error());
  hs__embed_batch_free(&b);
  return NULL;
}

Test(embed_shard, a_silent_rank_is_named_within_the_timeout) {
  hs_comm *c[3];
  silent_job jobs[3];
  pthread_t th[3];
  hs_embed_cfg cfg = cfg_of(HS_EMBED_ADAGRAD, 0, 1);
  cr_assert_eq(hs__comm_open_local(3, c), HS_OK);
  for (int r = 0; r < 3; r++) {
    jobs[r] = (silent_job){.r = r};
    hs__comm_set_timeout(c[r], 0.5);
    cr_assert_eq(hs__embed_shard_create(c[r], &cfg, &jobs[r].sh), HS_OK);
  }
  for (int r = 0; r < 3; r++) cr_assert_eq(pthread_create(&th[r], NULL, silent_main, &jobs[r]), 0);
  for (int r = 0; r < 3; r++) pthread_join(th[r], NULL);
  for (int r = 0; r < 2; r++) {
    cr_assert_eq(jobs[r].st, HS_ERR_PEER, "rank %d: status %d (%s)", r, jobs[r].st, jobs[r].err);
    cr_assert(strstr(jobs[r].err, "rank 2"), "rank %d: '%s' does not name rank 2", r, jobs[r].err);
    cr_assert(jobs[r].took >= 0.5 && jobs[r].took < 10, "rank %d gave up after %.2f s", r,
              jobs[r].took);
  }
  for (int r = 0; r < 3; r++) {
    hs__embed_shard_destroy(jobs[r].sh);
    hs__comm_destroy(c[r]);
  }
}
