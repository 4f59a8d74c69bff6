/* Where an epoch's time goes: per pipeline stage (busy and waiting), per
 * trainer kernel (device run time, and the gap the in-order queue spent
 * between commands: launch and scheduling), the host's enqueue time per
 * step, and the evaluation after training. Prints JSON.
 *
 * usage: bench_profile [--dataset DIR] [--epochs N] [--batch B] [--hidden H]
 *                      [--fanouts 25,10] [--passes P]
 * With no --dataset: the bundled Cora. The stages come from N epochs of a
 * session (the median of epochs 2..N); the kernels from replaying epoch
 * N's batches (1 + P times: the first pass warms up; medians over the P
 * others, 7 by default), sampled and gathered as the session does, one
 * batch at a time, on a second trainer of the same model and device whose
 * queue records profiling events (a marker per command: the replay is a
 * little slower than the epoch, its shares are what it is for). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/hs_engine.h"

static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_d);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static int die(const char *what) {
  fprintf(stderr, "bench_profile: %s: %s\n", what, hs_last_error());
  return 1;
}

static int parse_fanouts(const char *s, hs_session_config *c) {
  int n = 0;
  for (const char *p = s; *p;) {
    char *end;
    long v = strtol(p, &end, 10);
    if (end == p || n == HS_MAX_LAYERS) return -1;
    c->fanouts[n++] = (int32_t)v;
    p = *end == ',' ? end + 1 : end;
  }
  c->n_layers = n;
  return n ? 0 : -1;
}

int main(int argc, char **argv) {
  /* OpenBLAS on the kernel set this CPU runs best where it fell back to an older one. */
  hs_blas_reexec(argv);
  const char *dataset = NULL;
  int epochs = 4, passes = 7;
  hs_session_config cfg;
  hs_session_config_init(&cfg);
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
      printf("usage: bench_profile [--dataset DIR] [--epochs N] [--batch B] [--hidden H] "
             "[--fanouts 25,10] [--passes P]\n");
      return 0;
    }
    if (!v) return 2;
    i++;
    if (!strcmp(a, "--dataset")) dataset = v;
    else if (!strcmp(a, "--epochs")) epochs = atoi(v);
    else if (!strcmp(a, "--passes")) passes = atoi(v);
    else if (!strcmp(a, "--batch")) cfg.batch_size = atoi(v);
    else if (!strcmp(a, "--hidden")) cfg.hidden = atoi(v);
    else if (!strcmp(a, "--fanouts")) {
      if (parse_fanouts(v, &cfg)) return 2;
    } else return 2;
  }
  if (epochs < 2 || epochs > 100) return 2;
  char bundled[1024];
  hs_runtime *rt = NULL;
  hs_dataset *ds = NULL;
  hs_session *s = NULL;
  if (hs_runtime_open(&rt, NULL)) return die("runtime");
  if (!dataset) {
    if (hs_dataset_bundled(rt, "cora", bundled, sizeof bundled) != HS_OK) return die("cora");
    dataset = bundled;
  }
  if (hs_dataset_open(dataset, &ds)) return die(dataset);
  if (hs_session_create(rt, ds, &cfg, &s)) return die("session");

  /* ---- stages over whole epochs ---- */
  double wall[100], busy[HS_STAGE_COUNT_][100], wait[HS_STAGE_COUNT_][100];
  hs_epoch_stats st;
  hs_epoch_stats_init(&st);
  for (int e = 0; e < epochs; e++) {
    if (hs_session_train_epoch(s, &st)) return die("epoch");
    if (e == 0) continue;
    wall[e - 1] = st.wall_s;
    for (int k = 0; k < HS_STAGE_COUNT_; k++) {
      busy[k][e - 1] = st.stage_busy_s[k];
      wait[k][e - 1] = st.stage_wait_s[k];
    }
  }
  double t0 = hs__now(), acc;
  if (hs_session_evaluate_full(s, HS_SPLIT_TEST, &acc)) return die("evaluation");
  double eval_s = hs__now() - t0;

  /* ---- kernels: epoch N's batches replayed on a profiling trainer ---- */
  hs__replay *rp = NULL;
  if (hs__replay_open(s, epochs - 1, &rp)) return die("replay");
  int64_t nb = hs__replay_batches(rp);
  /* Per timed pass: host times and every kernel's span and run. */
  enum { MAXP = 32 };
  double sg[MAXP], up[MAXP], enq[MAXP], sw[MAXP], span_p[MAXP], run_p[MAXP];
  static double kspan[HS_TRAIN_MAX_KERNELS][MAXP], krun[HS_TRAIN_MAX_KERNELS][MAXP];
  const char *kname[HS_TRAIN_MAX_KERNELS];
  int klaunch[HS_TRAIN_MAX_KERNELS], nk = 0, steps = 0;
  if (passes < 1 || passes > MAXP) return 2;
  hs_train_times tt;
  /* Pass 0 warms up (buffers grow, programs load); passes 1.. are timed
   * and their medians reported: on a shared machine a single pass can
   * lose a core to another process at any kernel. */
  for (int pass = 0; pass <= passes; pass++) {
    double a_sg = 0, a_up = 0, a_enq = 0, a_sw = 0;
    for (int64_t b = 0; b < nb; b++) {
      hs__replay_batch_times bt;
      if (hs__replay_batch(rp, b, &bt)) return die("replay");
      a_sg += bt.sample_gather_s;
      a_up += bt.upload_s;
      a_enq += bt.enqueue_s;
      a_sw += bt.step_s;
    }
    if (hs__replay_times(rp, &tt)) return die("times");
    if (pass == 0) continue;
    int p = pass - 1;
    sg[p] = a_sg, up[p] = a_up, enq[p] = a_enq, sw[p] = a_sw;
    span_p[p] = run_p[p] = 0;
    steps = tt.steps;
    for (int k = 0; k < tt.n_kernels; k++) {
      int j = 0;
      while (j < nk && strcmp(kname[j], tt.kernel[k].name) != 0) j++;
      if (j == nk) {
        kname[nk] = tt.kernel[k].name;
        klaunch[nk] = tt.kernel[k].launches;
        for (int r = 0; r < MAXP; r++) kspan[nk][r] = krun[nk][r] = 0;
        nk++;
      }
      kspan[j][p] = tt.kernel[k].span_s;
      krun[j][p] = tt.kernel[k].run_s;
      span_p[p] += tt.kernel[k].span_s;
      run_p[p] += tt.kernel[k].run_s;
    }
  }
  int launches = 0;
  double kmed_span[HS_TRAIN_MAX_KERNELS], kmed_run[HS_TRAIN_MAX_KERNELS];
  for (int j = 0; j < nk; j++) {
    launches += klaunch[j];
    kmed_span[j] = median(kspan[j], passes);
    kmed_run[j] = median(krun[j], passes);
  }

  printf("{\n  \"bench\": \"profile\",\n  \"dataset\": \"%s\",\n", dataset);
  hs_dataset_info info;
  hs_dataset_info_init(&info);
  hs_dataset_get_info(ds, &info);
  printf("  \"features\": {\"format\": \"%s\", \"columns\": %lld},\n",
         hs_feat_format_name(info.feature_format), (long long)info.num_features);
  printf("  \"epochs\": %d, \"batches_per_epoch\": %lld, \"pipeline\": \"%s\",\n", epochs,
         (long long)nb, hs_pipeline_mode_name(st.pipeline));
  int m = epochs - 1;
  printf("  \"epoch_s\": %.6f,\n  \"stages\": {", median(wall, m));
  for (int k = 0; k < HS_STAGE_COUNT_; k++)
    printf("%s\"%s\": {\"busy_s\": %.6f, \"wait_s\": %.6f}", k ? ", " : "",
           hs_stage_name((hs_stage)k), median(busy[k], m), median(wait[k], m));
  printf("},\n  \"evaluation_full_s\": %.6f, \"test_acc\": %.4f,\n", eval_s, acc);
  printf("  \"replay\": {\"passes\": %d, \"batches\": %lld, \"sample_gather_s\": %.6f, "
         "\"upload_s\": %.6f, \"step_enqueue_s\": %.6f, \"step_wall_s\": %.6f},\n",
         passes, (long long)nb, median(sg, passes), median(up, passes), median(enq, passes),
         median(sw, passes));
  double ms = median(span_p, passes), mr = median(run_p, passes);
  printf("  \"device\": {\"span_s\": %.6f, \"run_s\": %.6f, \"between_commands_s\": %.6f, "
         "\"launches_per_step\": %.1f},\n",
         ms, mr, ms - mr, steps ? (double)launches / steps : 0.0);
  printf("  \"kernels\": [");
  /* Largest span first. */
  int order[HS_TRAIN_MAX_KERNELS];
  for (int j = 0; j < nk; j++) order[j] = j;
  for (int a = 0; a < nk; a++)
    for (int b = a + 1; b < nk; b++)
      if (kmed_span[order[b]] > kmed_span[order[a]]) {
        int x = order[a];
        order[a] = order[b];
        order[b] = x;
      }
  for (int a = 0; a < nk; a++) {
    int j = order[a];
    printf("%s\n    {\"name\": \"%s\", \"launches\": %d, \"span_s\": %.6f, \"run_s\": %.6f}",
           a ? "," : "", kname[j], klaunch[j], kmed_span[j], kmed_run[j]);
  }
  printf("\n  ]\n}\n");
  hs__replay_close(rp);
  hs_session_destroy(s);
  hs_dataset_close(ds);
  hs_runtime_close(rt);
  return 0;
}
