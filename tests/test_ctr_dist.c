/* Distributed CTR sessions with their ranks as threads of one process
 * (the local communication backend): a world of one rank trains exactly
 * as a session without one; 2 and 3 ranks give every rank the same model,
 * the same bits run to run, and learn (with standardized integers too);
 * modes not built are refused. */
#include <criterion/criterion.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "dist/hs_world.h"
#include "hetsage.h"
#include "hs_test_util.h"

#define MAX_RANKS 3

static char *dir;
static char *train_f, *test_f;

static void setup(void) {
  dir = tu_mkdtemp();
  hs_ctr_generate_opts o;
  hs_ctr_generate_opts_init(&o);
  o.rows = 8000;
  o.big_vocab = 20000;
  o.signal = 2.0; /* a strong signal, so that a few thousand examples learn it */
  o.split_frac[0] = 0.75;
  o.split_frac[1] = 0.0;
  o.split_frac[2] = 0.25;
  char *g = tu_path(dir, "data");
  cr_assert_eq(hs_ctr_generate(g, &o, NULL), HS_OK, "%s", hs_last_error());
  train_f = tu_path(g, "train.txt");
  test_f = tu_path(g, "test.txt");
  free(g);
}

static void teardown(void) {
  free(train_f);
  free(test_f);
  tu_rmtree(dir);
}

TestSuite(ctr_dist, .init = setup, .fini = teardown, .timeout = 900);

static void small_cfg(hs_ctr_config *c, hs_ctr_model m) {
  hs_ctr_config_init(c);
  c->model = m;
  c->dim = 8;
  c->hidden[0] = 32;
  c->hidden[1] = 16;
  c->bottom[0] = 16;
  c->batch_size = 256;
  c->lr = 0.01f;
  c->threads = 2;
}

/* What a rank ends with: its test predictions and figures. */
typedef struct outcome {
  float *prob;
  int64_t n;
  double loss, auc, logloss;
  uint64_t rows;
  hs_status st;
  char err[512];
} outcome;

static hs_status keep(void *user, const float *prob, const uint8_t *labels, int32_t n) {
  (void)labels;
  outcome *o = user;
  float *p = realloc(o->prob, (size_t)(o->n + n) * sizeof *p);
  if (!p) return HS_ERR_NOMEM;
  memcpy(p + o->n, prob, (size_t)n * sizeof *p);
  o->prob = p;
  o->n += n;
  return HS_OK;
}

/* One epoch on the training file, then the test file evaluated and
 * predicted; `world` NULL: a single process. */
static void run_one(const hs_ctr_config *base, hs_world *world, outcome *o) {
  memset(o, 0, sizeof *o);
  hs_runtime *rt = NULL;
  hs_ctr_session *s = NULL;
  hs_ctr_config c = *base;
  hs_dist_config dc;
  hs_dist_config_init(&dc);
  dc.timeout_s = 120; /* a loaded machine, several ranks building programs */
  c.world = world;
  c.dist = &dc;
  const char *tr[] = {train_f}, *te[] = {test_f};
  hs_ctr_epoch_stats es;
  hs_ctr_epoch_stats_init(&es);
  hs_ctr_eval ev;
  hs_ctr_eval_init(&ev);
  if ((o->st = hs_runtime_open(&rt, NULL)) != HS_OK) goto out;
  if ((o->st = hs_ctr_session_create(rt, &c, &s)) != HS_OK) goto out;
  if ((o->st = hs_ctr_session_train_epoch(s, tr, 1, &es)) != HS_OK) goto out;
  if ((o->st = hs_ctr_session_evaluate(s, te, 1, &ev)) != HS_OK) goto out;
  if ((o->st = hs_ctr_session_predict(s, te, 1, true, keep, o)) != HS_OK) goto out;
  o->loss = es.loss;
  o->rows = es.embed_rows;
  o->auc = ev.auc;
  o->logloss = ev.logloss;
out:
  if (o->st != HS_OK) snprintf(o->err, sizeof o->err, "%s", hs_last_error());
  hs_ctr_session_destroy(s);
  hs_runtime_close(rt);
}

typedef struct rank_job {
  const hs_ctr_config *cfg;
  hs_world *world;
  outcome o;
} rank_job;

static void *rank_main(void *p) {
  rank_job *j = p;
  run_one(j->cfg, j->world, &j->o);
  return NULL;
}

/* W ranks as threads, rank r with options cs[r]; out[r] what it ended
 * with. */
static void run_ranks(const hs_ctr_config *const *cs, int W, outcome *out) {
  hs_comm *comm[MAX_RANKS];
  rank_job jobs[MAX_RANKS];
  pthread_t th[MAX_RANKS];
  cr_assert_eq(hs__comm_open_local(W, comm), HS_OK, "%s", hs_last_error());
  for (int r = 0; r < W; r++) {
    jobs[r] = (rank_job){.cfg = cs[r], .world = hs__world_wrap(comm[r])};
    cr_assert(jobs[r].world);
  }
  for (int r = 0; r < W; r++) cr_assert_eq(pthread_create(&th[r], NULL, rank_main, &jobs[r]), 0);
  for (int r = 0; r < W; r++) pthread_join(th[r], NULL);
  for (int r = 0; r < W; r++) {
    hs_world_destroy(jobs[r].world);
    out[r] = jobs[r].o;
  }
}

/* W ranks with the same options, each of which must succeed. */
static void run_world(const hs_ctr_config *c, int W, outcome *out) {
  const hs_ctr_config *cs[MAX_RANKS] = {0};
  for (int r = 0; r < W; r++) cs[r] = c;
  run_ranks(cs, W, out);
  for (int r = 0; r < W; r++) {
    if (out[r].st == HS_ERR_NO_DEVICE) cr_skip_test("no OpenCL device: %s", out[r].err);
    cr_assert_eq(out[r].st, HS_OK, "%d ranks, rank %d: %s", W, r, out[r].err);
  }
}

/* The same model: predictions, test logloss and rows (and, for runs of
 * the same rank, its training loss: each rank's own batches). */
/* One process of `c` first, on the test's own thread (skipping the test
 * without a device): the OpenCL compiler sets itself up on the first
 * thread that builds a program (an alternate signal stack of its own,
 * which ASan takes for its own and fails to unmap when a rank's thread
 * ends), as in ranks_agree_repeat_and_learn. */
static void first_on_this_thread(const hs_ctr_config *c) {
  outcome alone;
  run_one(c, NULL, &alone);
  if (alone.st == HS_ERR_NO_DEVICE) cr_skip_test("no OpenCL device: %s", alone.err);
  cr_assert_eq(alone.st, HS_OK, "%s", alone.err);
  free(alone.prob);
}

static bool same(const outcome *a, const outcome *b, bool loss) {
  return a->n == b->n && a->n > 0 && memcmp(a->prob, b->prob, (size_t)a->n * sizeof *a->prob) == 0 &&
         (!loss || memcmp(&a->loss, &b->loss, sizeof a->loss) == 0) &&
         memcmp(&a->logloss, &b->logloss, sizeof a->logloss) == 0 && a->rows == b->rows;
}

/* (DLRM a second time with standardized integers: the one rank takes its
 * statistics from the data's first batch, as one process does.) */
Test(ctr_dist, one_rank_trains_as_one_process) {
  static const hs_ctr_model models[] = {HS_CTR_LR, HS_CTR_DLRM, HS_CTR_DLRM};
  for (size_t m = 0; m < sizeof models / sizeof *models; m++) {
    hs_ctr_config c;
    small_cfg(&c, models[m]);
    c.standardize_dense = m == 2;
    outcome alone, one;
    run_one(&c, NULL, &alone);
    if (alone.st == HS_ERR_NO_DEVICE) cr_skip_test("no OpenCL device: %s", alone.err);
    cr_assert_eq(alone.st, HS_OK, "%s", alone.err);
    run_world(&c, 1, &one);
    cr_assert(same(&alone, &one, true), "%s%s: one rank differs from one process (loss %.9g vs %.9g, "
              "test logloss %.9g vs %.9g, rows %llu vs %llu)", hs_ctr_model_name(models[m]),
              c.standardize_dense ? " (standardized)" : "",
              alone.loss, one.loss, alone.logloss, one.logloss, (unsigned long long)alone.rows,
              (unsigned long long)one.rows);
    free(alone.prob);
    free(one.prob);
  }
}

/* W ranks of batch B step as one process of batch W B would (the same
 * examples per step, each row's gradient the step's mean): the models
 * agree but for the order of the dense gradients' sums. */
Test(ctr_dist, ranks_agree_repeat_and_learn) {
  hs_ctr_config c;
  small_cfg(&c, HS_CTR_DLRM);
  for (int W = 2; W <= MAX_RANKS; W++) {
    /* (SGD's step scales with the gradient, Adagrad's hardly: the
     * ranks' weights show under SGD.) */
    c.sparse_optimizer = W == 2 ? HS_SPARSE_SGD : HS_SPARSE_ADAGRAD;
    c.sparse_lr = W == 2 ? 5.0f : 0.05f;
    hs_ctr_config g = c;
    g.batch_size = W * c.batch_size;
    outcome alone;
    run_one(&g, NULL, &alone);
    if (alone.st == HS_ERR_NO_DEVICE) cr_skip_test("no OpenCL device: %s", alone.err);
    cr_assert_eq(alone.st, HS_OK, "%s", alone.err);
    outcome a[MAX_RANKS], b[MAX_RANKS];
    run_world(&c, W, a);
    run_world(&c, W, b);
    for (int r = 0; r < W; r++) {
      cr_assert(same(&a[r], &a[0], false), "%d ranks: rank %d's model differs from rank 0's", W, r);
      cr_assert(same(&a[r], &b[r], true), "%d ranks, rank %d: a second run differs", W, r);
    }
    /* The same ids met: the shards together hold the rows one store does. */
    cr_assert_eq(a[0].rows, alone.rows, "%d ranks: %llu rows, one process %llu", W,
                 (unsigned long long)a[0].rows, (unsigned long long)alone.rows);
    cr_assert(fabs(a[0].auc - alone.auc) < 2e-3 && fabs(a[0].logloss - alone.logloss) < 2e-3,
              "%d ranks: test AUC %.6f, logloss %.6f; one process of batch %d: %.6f, %.6f", W,
              a[0].auc, a[0].logloss, g.batch_size, alone.auc, alone.logloss);
    cr_assert_gt(a[0].auc, 0.57, "%d ranks: test AUC %.4f (0.5 untrained)", W, a[0].auc);
    for (int r = 0; r < W; r++) {
      free(a[r].prob);
      free(b[r].prob);
    }
    free(alone.prob);
  }
}

/* Standardized integers: every rank takes the statistics of the data's
 * first batch, so the ranks evaluate and predict alike (a rank that took
 * its own first batch's would predict otherwise), a second run gives the
 * same bits, the model learns, and neither its training loss nor its
 * predictions are those of the model trained on the integers as they are. */
Test(ctr_dist, standardized_ranks_agree_repeat_and_learn) {
  hs_ctr_config c;
  small_cfg(&c, HS_CTR_DLRM);
  first_on_this_thread(&c);
  outcome plain[2], a[2], b[2];
  run_world(&c, 2, plain);
  for (int r = 0; r < 2; r++) {
    if (plain[r].st == HS_ERR_NO_DEVICE) cr_skip_test("no OpenCL device: %s", plain[r].err);
    cr_assert_eq(plain[r].st, HS_OK, "rank %d: %s", r, plain[r].err);
  }
  c.standardize_dense = 1;
  run_world(&c, 2, a);
  run_world(&c, 2, b);
  for (int r = 0; r < 2; r++) {
    cr_assert_eq(a[r].st, HS_OK, "rank %d: %s", r, a[r].err);
    cr_assert_eq(b[r].st, HS_OK, "rank %d: %s", r, b[r].err);
    cr_assert(same(&a[r], &a[0], false), "rank %d's predictions differ from rank 0's", r);
    cr_assert(same(&a[r], &b[r], true), "rank %d: a second run differs", r);
    cr_assert(!same(&a[r], &plain[r], false), "rank %d: standardizing changed nothing", r);
    cr_assert(a[r].loss != plain[r].loss, "rank %d: training saw the integers as they are", r);
  }
  cr_assert_gt(a[0].auc, 0.57, "test AUC %.4f (0.5 untrained)", a[0].auc);
  for (int r = 0; r < 2; r++) free(plain[r].prob), free(a[r].prob), free(b[r].prob);
}

Test(ctr_dist, modes_not_built_and_checkpoints_are_refused) {
  hs_ctr_config c;
  small_cfg(&c, HS_CTR_LR);
  hs_comm *comm;
  cr_assert_eq(hs__comm_open_local(1, &comm), HS_OK);
  hs_world *w = hs__world_wrap(comm);
  hs_runtime *rt;
  cr_assert_eq(hs_runtime_open(&rt, NULL), HS_OK);
  hs_dist_config dc;
  hs_dist_config_init(&dc);
  dc.sync = HS_SYNC_PS;
  c.world = w;
  c.dist = &dc;
  hs_ctr_session *s = NULL;
  hs_status st = hs_ctr_session_create(rt, &c, &s);
  if (st == HS_ERR_NO_DEVICE) cr_skip_test("no OpenCL device: %s", hs_last_error());
  cr_assert_eq(st, HS_ERR_UNSUPPORTED, "%s", hs_last_error());
  cr_assert(strstr(hs_last_error(), "all-reduce only"), "%s", hs_last_error());
  dc.sync = HS_SYNC_ALLREDUCE;
  dc.compress = HS_COMPRESS_1BIT;
  cr_assert_eq(hs_ctr_session_create(rt, &c, &s), HS_ERR_UNSUPPORTED);
  dc.compress = HS_COMPRESS_NONE;
  cr_assert_eq(hs_ctr_session_create(rt, &c, &s), HS_OK, "%s", hs_last_error());
  char *ck = tu_path(dir, "dist.ckpt");
  cr_assert_eq(hs_ctr_session_save(s, ck), HS_ERR_UNSUPPORTED);
  cr_assert(strstr(hs_last_error(), "not supported"), "%s", hs_last_error());
  cr_assert_eq(hs_ctr_session_load(s, ck), HS_ERR_UNSUPPORTED);
  free(ck);
  hs_ctr_session_destroy(s);
  hs_runtime_close(rt);
  hs_world_destroy(w);
}

/* Ranks started with options that shape the result differently (another
 * seed, standardized integers on one rank) refuse to train together,
 * each saying so; another count of GEMM threads does not shape it (the
 * CTR trainer's products are cut by shape alone), and such ranks train
 * the same model as ranks alike. */
Test(ctr_dist, ranks_started_differently_are_refused_but_not_for_gemm_threads) {
  hs_ctr_config c, other;
  small_cfg(&c, HS_CTR_DLRM);
  first_on_this_thread(&c);
  /* another seed; standardized integers on one rank only */
  for (int k = 0; k < 2; k++) {
    other = c;
    if (k == 0) other.seed = c.seed + 1;
    else other.standardize_dense = 1;
    const hs_ctr_config *differ[2] = {&c, &other};
    outcome o[2];
    run_ranks(differ, 2, o);
    for (int r = 0; r < 2; r++) {
      if (o[r].st == HS_ERR_NO_DEVICE) cr_skip_test("no OpenCL device: %s", o[r].err);
      cr_expect_eq(o[r].st, HS_ERR_INVALID_ARG, "%s, rank %d: %s", k ? "standardization" : "seed",
                   r, o[r].err);
      cr_expect(strstr(o[r].err, "rank 1 was started with options other than rank 0's"),
                "%s, rank %d: %s", k ? "standardization" : "seed", r, o[r].err);
      free(o[r].prob);
    }
  }
  c.gemm_threads = 1;
  other = c;
  other.gemm_threads = 2;
  const hs_ctr_config *threads[2] = {&c, &other};
  outcome t[2], alike[2];
  run_ranks(threads, 2, t);
  for (int r = 0; r < 2; r++) cr_assert_eq(t[r].st, HS_OK, "rank %d: %s", r, t[r].err);
  run_world(&c, 2, alike);
  for (int r = 0; r < 2; r++) {
    cr_expect(same(&t[r], &alike[r], true), "rank %d: 1 and 2 GEMM threads differ from 1 and 1",
              r);
    free(t[r].prob);
    free(alike[r].prob);
  }
}
