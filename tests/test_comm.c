/* The communication module and the all-reduce on in-process groups of
 * ranks (one thread each): the same checks tests/dist_check.c runs on MPI
 * processes, plus the local backend's own behaviour. */
#include <criterion/criterion.h>
#include <pthread.h>

#include "dist_checks.h"

typedef int (*check_fn)(hs_comm *c, char *why, void *arg);

typedef struct rank_run {
  hs_comm *c;
  check_fn fn;
  void *arg;
  int fails;
  char why[256];
} rank_run;

static void *rank_main(void *p) {
  rank_run *r = p;
  r->fails = r->fn(r->c, r->why, r->arg);
  return NULL;
}

/* Run fn on every rank of a fresh group of n; assert no rank failed. */
static void run_group(int n, check_fn fn, void *arg) {
  hs_comm *c[16];
  cr_assert(n <= 16);
  cr_assert_eq(hs__comm_open_local(n, c), HS_OK, "%s", hs_last_error());
  rank_run runs[16];
  pthread_t th[16];
  for (int r = 0; r < n; r++) {
    runs[r] = (rank_run){.c = c[r], .fn = fn, .arg = arg};
    cr_assert_eq(pthread_create(&th[r], NULL, rank_main, &runs[r]), 0);
  }
  for (int r = 0; r < n; r++) pthread_join(th[r], NULL);
  for (int r = 0; r < n; r++) hs__comm_destroy(c[r]);
  for (int r = 0; r < n; r++)
    cr_assert_eq(runs[r].fails, 0, "%d ranks, rank %d: %s", n, r, runs[r].why);
}

static int p2p(hs_comm *c, char *why, void *arg) {
  (void)arg;
  return dc_p2p(c, why);
}
static int collectives(hs_comm *c, char *why, void *arg) {
  (void)arg;
  return dc_collectives(c, why);
}
static int allreduce(hs_comm *c, char *why, void *arg) {
  return dc_allreduce(c, why, *(size_t *)arg);
}
static int allreduce_1bit(hs_comm *c, char *why, void *arg) {
  (void)arg;
  return dc_allreduce_1bit(c, why);
}
static int timeout(hs_comm *c, char *why, void *arg) {
  return dc_timeout(c, why, *(double *)arg);
}

Test(comm, point_to_point) {
  for (int n = 1; n <= 4; n++) run_group(n, p2p, NULL);
}

Test(comm, collectives) {
  for (int n = 1; n <= 5; n++) run_group(n, collectives, NULL);
}

Test(comm, world_without_launcher_is_one_rank) {
  hs_comm *w;
  cr_assert_eq(hs__comm_open_world(NULL, NULL, &w), HS_OK, "%s", hs_last_error());
  cr_assert_eq(hs__comm_size(w), 1);
  cr_assert_eq(hs__comm_rank(w), 0);
  int32_t v = 42;
  cr_assert_eq(hs__comm_bcast(w, 0, &v, sizeof v, "t"), HS_OK);
  cr_assert_eq(hs__comm_barrier(w, "t"), HS_OK);
  hs__comm_destroy(w);
}

/* The library's version line goes into JSON strings and one-line output
 * (bench_dist, placement): MPICH's has a tab after "Version:". */
Test(comm, library_line_is_printable) {
  const char *v = hs__comm_library();
  cr_assert_not_null(v);
  cr_assert_eq(hs__comm_have_mpi(), v[0] != '\0', "library line \"%s\"", v);
  for (const char *p = v; *p; p++)
    cr_assert((unsigned char)*p >= 0x20 && *p != 0x7f, "control character %d at %d in \"%s\"",
              *p, (int)(p - v), v);
}

Test(comm, bad_arguments) {
  hs_comm *c[2];
  cr_assert_eq(hs__comm_open_local(2, c), HS_OK);
  hs_comm_req rq;
  int x = 0;
  cr_assert_eq(hs__comm_isend(c[0], 2, 0, &x, 4, &rq), HS_ERR_INVALID_ARG);
  cr_assert_eq(hs__comm_irecv(c[0], -1, 0, &x, 4, &rq), HS_ERR_INVALID_ARG);
  cr_assert_eq(hs__comm_isend(c[0], 1, 40000, &x, 4, &rq), HS_ERR_INVALID_ARG);
  cr_assert_eq(hs__comm_isend(c[0], 1, 0, &x, (size_t)1 << 31, &rq), HS_ERR_RANGE);
  cr_assert_eq(hs__comm_open_local(0, c), HS_ERR_INVALID_ARG);
  hs__comm_destroy(c[0]);
  hs__comm_destroy(c[1]);
}

Test(allreduce, fixed_order_equals_reference) {
  size_t buckets[] = {0, 64, 4096};
  for (int n = 1; n <= 4; n++)
    for (size_t k = 0; k < HS_ARRAY_LEN(buckets); k++) run_group(n, allreduce, &buckets[k]);
}

Test(allreduce, one_bit_with_error_feedback) {
  for (int n = 1; n <= 4; n++) run_group(n, allreduce_1bit, NULL);
}

Test(comm, silent_rank_is_named_within_the_timeout) {
  double t = 0.3;
  run_group(3, timeout, &t);
}

static int aborter(hs_comm *c, char *why, void *arg) {
  (void)arg;
  int fails = 0;
  if (hs__comm_rank(c) == 1) {
    hs__comm_abort(c, 3);
    return 0;
  }
  hs_status st = hs__comm_barrier(c, "after an abort");
  if (st != HS_ERR_PEER || !strstr(hs_last_error(), "rank 1 ended the run"))
    DC_FAIL(why, "rank %d: %d %s", hs__comm_rank(c), st, hs_last_error());
  return fails;
}

Test(comm, abort_ends_the_other_ranks_waits) {
  run_group(3, aborter, NULL);
}

Test(onebit, encoding_and_residual) {
  float x[13], back[13], res[13];
  double ss = 0;
  for (int i = 0; i < 13; i++) {
    x[i] = (i % 3 == 0 ? -1.0f : 0.5f) * (float)(i + 1);
    ss += (double)x[i] * x[i];
  }
  x[4] = 0.0f;
  ss -= 25.0 * 0.25;
  uint8_t enc[6];
  cr_assert_eq(hs__onebit_bytes(13), 6);
  hs__onebit_encode(x, 13, enc, res);
  float scale = (float)sqrt(ss / 13);
  cr_assert_eq(hs__onebit_scale(enc, 0), scale);
  hs__onebit_decode(enc, 13, back);
  for (int i = 0; i < 13; i++) {
    cr_assert_eq(back[i], x[i] < 0 ? -scale : scale, "value %d", i);
    cr_assert_eq(res[i], x[i] - back[i]);
  }
  /* The decoded vector keeps the L2 norm. */
  double nb = 0;
  for (int i = 0; i < 13; i++) nb += (double)back[i] * back[i];
  cr_assert_float_eq(nb, ss, 1e-3 * ss);
  /* In place: the residual over the input. */
  hs__onebit_encode(x, 13, enc, x);
  for (int i = 0; i < 13; i++) cr_assert_eq(x[i], res[i]);
  /* Empty and all-zero inputs decode to zeros. */
  float z[3] = {0, 0, 0}, out[3] = {1, 1, 1};
  hs__onebit_encode(z, 3, enc, NULL);
  hs__onebit_decode(enc, 3, out);
  for (int i = 0; i < 3; i++) cr_assert_eq(out[i], 0.0f);
}

Test(onebit, blocks_have_their_own_scale) {
  /* Three blocks: one of zeros between two of different magnitudes. */
  enum { N = 2 * HS_ONEBIT_BLOCK + 40 };
  float x[N], back[N];
  for (int i = 0; i < N; i++)
    x[i] = i < HS_ONEBIT_BLOCK ? (i % 2 ? 3.0f : -3.0f)
           : i < 2 * HS_ONEBIT_BLOCK ? 0.0f : (i % 3 ? 0.5f : -0.5f);
  uint8_t enc[4 * 3 + N / 8 + 1];
  cr_assert_eq(hs__onebit_bytes(N), 4 * 3 + (N + 7) / 8);
  hs__onebit_encode(x, N, enc, NULL);
  cr_assert_eq(hs__onebit_scale(enc, 0), 3.0f);
  cr_assert_eq(hs__onebit_scale(enc, 1), 0.0f);
  cr_assert_eq(hs__onebit_scale(enc, 2), 0.5f);
  hs__onebit_decode(enc, N, back);
  /* Equal magnitudes within a block decode exactly; the zeros stay zeros. */
  for (int i = 0; i < N; i++) cr_assert_eq(back[i], x[i], "value %d", i);
}

static int modes_exact(hs_comm *c, char *why, void *arg) {
  (void)arg;
  return dc_modes_exact(c, why);
}
static int modes_1bit(hs_comm *c, char *why, void *arg) {
  (void)arg;
  return dc_modes_1bit(c, why);
}
static int onebit_adam(hs_comm *c, char *why, void *arg) {
  (void)arg;
  return dc_onebit_adam(c, why);
}
static int ps_onebit_adam(hs_comm *c, char *why, void *arg) {
  (void)arg;
  return dc_ps_onebit_adam(c, why);
}
static int ps_async(hs_comm *c, char *why, void *arg) {
  (void)arg;
  return dc_ps_async(c, why);
}
static int stop(hs_comm *c, char *why, void *arg) {
  (void)arg;
  return dc_stop(c, why);
}

Test(dist, uncompressed_modes_equal_the_simulation) {
  for (int n = 1; n <= 4; n++) run_group(n, modes_exact, NULL);
}

Test(dist, one_bit_modes_stay_near_uncompressed) {
  for (int n = 1; n <= 4; n++) run_group(n, modes_1bit, NULL);
}

/* 1-bit Adam replays its plain-C simulation bit for bit on 2..4 ranks;
 * on one rank it is plain Adam. */
Test(dist, one_bit_adam_equals_the_simulation) {
  for (int n = 1; n <= 4; n++) run_group(n, onebit_adam, NULL);
}

/* The synchronous parameter server's 1-bit Adam replays its plain-C
 * simulation bit for bit on 1..3 workers and one server. */
Test(dist, parameter_server_one_bit_adam_equals_the_simulation) {
  for (int n = 2; n <= 4; n++) run_group(n, ps_onebit_adam, NULL);
}

Test(dist, asynchronous_parameter_server) {
  run_group(3, ps_async, NULL);
  run_group(4, ps_async, NULL);
}

Test(dist, stop_request_ends_every_rank_after_the_same_step) {
  for (int n = 1; n <= 4; n++) run_group(n, stop, NULL);
}

/* Asynchronous ps answers: the look-ahead is the optimizer's own step.
 * With g the gradient the next update applies, one update ahead is bit for
 * bit the parameters after that update; two are two updates; the moments
 * are left as they were; 0 copies p. */
Test(dist, ps_look_ahead_is_the_next_update) {
  enum { N = 7 };
  hs_optim_cfg cfgs[3] = {
      {.kind = HS_OPTIM_ADAM, .lr = 0.01f, .beta1 = 0.9f, .beta2 = 0.999f, .eps = 1e-8f},
      {.kind = HS_OPTIM_ADAM, .wd_mode = HS_WD_DECOUPLED, .lr = 0.003f, .weight_decay = 0.01f,
       .beta1 = 0.5f, .beta2 = 0.99f, .eps = 1e-6f},
      {.kind = HS_OPTIM_SGD, .lr = 0.1f, .momentum = 0.9f}};
  for (int c = 0; c < 3; c++) {
    float p[N], m[N], v[N], g[N], out[N], m2[N], v2[N], want[N], wm[N], wv[N];
    for (int i = 0; i < N; i++) {
      p[i] = 0.3f * (float)i - 1.0f;
      m[i] = 0.01f * (float)(i % 3) - 0.01f;
      v[i] = 1e-4f * (float)(i + 1);
      g[i] = 0.05f * (float)((i * 5) % 7) - 0.15f;
    }
    memcpy(want, p, sizeof p);
    memcpy(wm, m, sizeof m);
    memcpy(wv, v, sizeof v);
    for (int h = 0; h <= 2; h++) {
      if (h > 0) {
        hs_optim_coef k;
        hs__optim_coef(&cfgs[c], 41 + (uint64_t)h, &k);
        hs__ref_optim(cfgs[c].kind, &k, N, want, g, wm, wv);
      }
      float m0[N], v0[N];
      memcpy(m0, m, sizeof m);
      memcpy(v0, v, sizeof v);
      hs__ps_look_ahead(&cfgs[c], 41, h, N, p, m, v, g, out, m2, v2);
      cr_assert_eq(memcmp(out, want, sizeof out), 0, "optimizer %d, %d updates ahead", c, h);
      cr_assert_eq(memcmp(m, m0, sizeof m), 0, "optimizer %d: the first moment changed", c);
      cr_assert_eq(memcmp(v, v0, sizeof v), 0, "optimizer %d: the second moment changed", c);
    }
  }
}

/* A replay of the server's count (ps.c: pushes summed, an update every
 * `quorum`, each answer aimed hs__ps_ahead updates ahead) over a schedule
 * of pushes: returns the pushes whose gradient joined an update other than
 * the one its answer looked ahead to (lateness = version at the push -
 * version aimed at, which ps.c logs per epoch), each worker's first push
 * aside. */
static int ps_replay(int workers, int quorum, int staleness, const int *order, int n,
                     int ended_from, int *max_ahead) {
  int64_t version = 0, pending = 0, aim[8] = {0};
  bool pushed[8] = {false};
  int off = 0;
  *max_ahead = 0;
  for (int i = 0; i < n; i++) {
    int w = order[i];
    /* A worker's first gradient is computed on the initial parameters
     * whatever the rule: counted from its second on. */
    if (pushed[w] && version != aim[w]) off++;
    pushed[w] = true;
    if (++pending == quorum) {
      version++;
      pending = 0;
    }
    /* Workers >= 1 have ended from push `ended_from` on. */
    int others = i >= ended_from ? 0 : workers - 1;
    int64_t h = hs__ps_ahead(pending, others, quorum, staleness);
    if (h > *max_ahead) *max_ahead = (int)h;
    aim[w] = version + h;
  }
  return off;
}

Test(dist, ps_look_ahead_aims_at_the_update_a_gradient_joins) {
  int ahead;
  /* Two workers, quorum 2, in turn: the first of each pair is answered
   * before the pair's update and looks one ahead; nothing is late. */
  int turns[12] = {0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1};
  cr_assert_eq(ps_replay(2, 2, 4, turns, 12, 12, &ahead), 0);
  cr_assert_eq(ahead, 1);
  /* The order of each pair changes: still nothing late (the former rule,
   * the pusher's last lateness, missed every change of order). */
  int flips[12] = {0, 1, 1, 0, 0, 1, 1, 0, 1, 0, 0, 1};
  cr_assert_eq(ps_replay(2, 2, 4, flips, 12, 12, &ahead), 0);
  /* Worker 1 ended: worker 0 alone fills each quorum, no look-ahead. */
  int alone[10] = {0, 1, 0, 1, 0, 0, 0, 0, 0, 0};
  cr_assert_eq(ps_replay(2, 2, 4, alone, 10, 4, &ahead), 0);
  /* Three workers, an update per push, in turn: two updates ahead. */
  int rr3[12] = {0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1, 2};
  cr_assert_eq(ps_replay(3, 1, 4, rr3, 12, 12, &ahead), 0);
  cr_assert_eq(ahead, 2);
  /* Four workers, quorum 2, in turn. */
  int rr4[12] = {0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3};
  cr_assert_eq(ps_replay(4, 2, 4, rr4, 12, 12, &ahead), 0);
  /* The bound: eight workers, an update per push, staleness 4: four
   * ahead, so each worker's gradients come three updates late. */
  int rr8[16] = {0, 1, 2, 3, 4, 5, 6, 7, 0, 1, 2, 3, 4, 5, 6, 7};
  cr_assert_eq(ps_replay(8, 1, 4, rr8, 16, 16, &ahead), 8);
  cr_assert_eq(ahead, 4);
  /* Bad arguments look nowhere. */
  cr_assert_eq(hs__ps_ahead(1, 1, 0, 4), 0);
  cr_assert_eq(hs__ps_ahead(1, 1, 2, 0), 0);
  cr_assert_eq(hs__ps_ahead(-1, 1, 1, 4), 0);
}
