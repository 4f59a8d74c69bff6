/* Device training-step time per batch on Cora-like and products-like
 * shapes, split into GEMM / aggregation / element-wise / optimizer, beside
 * the step's GEMM floor: the same GEMMs run by OpenBLAS on the host with the
 * device's compute units as threads, in the same run (docs/architecture.md, "Measuring";
 * ratio 1.0 = the step costs no more than its GEMMs at OpenBLAS speed).
 *
 * usage: bench_train [--config cora|products|all] [--reps N] [--wg N]
 *                    [--model sage|gcn|gat] [--heads H]
 * Batches are sampled uniformly from a graph of the named size (ids drawn
 * at random, reindexed seeds first, like the sampler's output). Step time is
 * wall clock from enqueue to clFinish, after warm-up steps; phases come from
 * a second pass with profiling events. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/hs_measure.h"
#include "core/hs_engine.h"

static double median(const double *t, int n) { return hs__summarize(t, n).median; }

/* ---- one configuration ------------------------------------------------------------- */

static int run_config(const hs_train_shape *c, const hs_ctx *ctx, const hs_dev *dev, int kind,
                      int heads, int reps, size_t wg, bool first) {
  hs_train_runs tr;
  if (hs__measure_train_step(ctx, dev, c, kind, heads, wg, 2, reps, &tr) != HS_OK) {
    fprintf(stderr, "bench_train: %s: %s\n", c->name, hs_last_error());
    return 1;
  }
  hs_summary step = hs__summarize(tr.step_s, reps);
  printf("%s\n  {\"config\": \"%s\", \"model\": \"%s\", \"gemm\": \"%s\", \"layers\": %d, "
         "\"dims\": [",
         first ? "" : ",", c->name, hs__nn_kind_name(kind), hs__gemm_kind_name(tr.gemm),
         c->n_layers);
  for (int l = 0; l <= c->n_layers; l++) printf("%s%d", l ? ", " : "", tr.dims[l]);
  printf("], \"fanouts_from_seeds\": [");
  for (int l = 0; l < c->n_layers; l++) printf("%s%d", l ? ", " : "", c->fanout_from_seeds[l]);
  printf("], \"batch\": %d, \"block_src\": [", c->batch);
  for (int l = 0; l < c->n_layers; l++) printf("%s%d", l ? ", " : "", tr.block_src[l]);
  printf("], \"step_ms\": %.2f, \"step_ms_min\": %.2f, \"step_ms_max\": %.2f, \"upload_ms\": %.2f",
         step.median * 1e3, step.min * 1e3, step.max * 1e3, median(tr.upload_s, reps) * 1e3);
  static const char *const names[HS_PHASE_COUNT_] = {"gemm", "aggregation", "elementwise", "optimizer"};
  printf(", \"phases_ms\": {");
  for (int p = 0; p < HS_PHASE_COUNT_; p++)
    printf("%s\"%s\": %.2f", p ? ", " : "", names[p], median(tr.phase_s[p], reps) * 1e3);
  printf("}");
  if (tr.gemm_floor_s > 0)
    printf(", \"gemm_floor_ms\": %.2f, \"ratio_gemm_floor_to_step\": %.3f}", tr.gemm_floor_s * 1e3,
           tr.gemm_floor_s / step.median);
  else
    printf(", \"gemm_floor_ms\": null, \"ratio_gemm_floor_to_step\": null}");
  fflush(stdout);
  return 0;
}

int main(int argc, char **argv) {
  /* OpenBLAS on the kernel set this CPU runs best where it fell back to an older one. */
  hs_blas_reexec(argv);
  const char *which = "all";
  int reps = 7;
  size_t wg = 0;
  int kind = HS_NN_SAGE, heads = 4;
  for (int i = 1; i < argc; i++) {
    const hs_model_ops *ops;
    if (strcmp(argv[i], "--config") == 0 && i + 1 < argc) which = argv[++i];
    else if (strcmp(argv[i], "--model") == 0 && i + 1 < argc &&
             (ops = hs__model_ops_by_name(argv[i + 1])) != NULL) {
      kind = (int)ops->kind;
      i++;
    } else if (strcmp(argv[i], "--heads") == 0 && i + 1 < argc) heads = atoi(argv[++i]);
    else if (strcmp(argv[i], "--reps") == 0 && i + 1 < argc) reps = atoi(argv[++i]);
    else if (strcmp(argv[i], "--wg") == 0 && i + 1 < argc) wg = (size_t)atoi(argv[++i]);
    else {
      fprintf(stderr, "usage: bench_train [--config cora|products|all] [--reps N] [--wg N]\n"
                      "                   [--model sage|gcn|gat] [--heads H]\n");
      return 2;
    }
  }
  if (reps < 1) reps = 1;
  if (reps > HS_MEASURE_MAX_RUNS) reps = HS_MEASURE_MAX_RUNS;
  hs_runtime *rt = NULL;
  if (hs_runtime_open(&rt, NULL) != HS_OK || hs_runtime_device_count(rt) == 0) {
    fprintf(stderr, "bench_train: %s\n", hs_last_error());
    hs_runtime_close(rt);
    return 1;
  }
  int pick = 0; /* the first CPU device, else the first device */
  for (int i = hs_runtime_device_count(rt) - 1; i >= 0; i--)
    if (hs__runtime_dev(rt, i)->info.type == HS_DEVICE_CPU) pick = i;
  const hs_dev *dev = hs__runtime_dev(rt, pick);
  hs_ctx ctx;
  if (hs__ctx_create(dev, 1, &ctx) != HS_OK) {
    fprintf(stderr, "bench_train: %s\n", hs_last_error());
    return 1;
  }
  printf("{\"bench\": \"train\", \"device\": \"%s\", \"compute_units\": %u, \"reps\": %d, \"wg\": %zu, "
         "\"limit\": \"the step's GEMMs by OpenBLAS on the host, same threads\", \"configs\": [",
         dev->info.name, dev->info.compute_units, reps, wg);
  int rc = 0;
  bool first = true;
  for (size_t i = 0; i < hs__train_shape_count; i++) {
    const hs_train_shape *c = &hs__train_shapes[i];
    if (strcmp(which, "all") != 0 && strncmp(c->name, which, strlen(which)) != 0) continue;
    rc |= run_config(c, &ctx, dev, kind, heads, reps, wg, first);
    first = false;
  }
  printf("\n]}\n");
  hs__ctx_release(&ctx);
  hs_runtime_close(rt);
  return rc;
}
