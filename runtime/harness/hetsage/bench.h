/* hetsage — benchmarks for comparing devices and vendors: the same
 * workloads, measured the same way, on every device.
 *
 * Workloads: sampling (sampled edges/s beside a random-read probe over an
 * array as large as the topology), gathering (bytes/s beside a STREAM-style
 * copy), GEMM (each provider beside OpenBLAS sgemm on the same shapes and
 * cores, for CPU devices), training (a step beside its GEMMs at OpenBLAS
 * speed, and an epoch of the bundled Cora beside its busiest pipeline
 * stage). Each runs on every selected device whole and, for CPUs, on a
 * sub-device of half its compute units; same data, same seeds. Warm-up runs
 * are dropped; each figure is the median of the steady-state runs with
 * their min and max, and sits beside its same-run limit as a per-run ratio
 * (docs/architecture.md, "Measuring"), so that figures from shared machines can be compared. */
#ifndef HETSAGE_BENCH_H
#define HETSAGE_BENCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "hetsage/board.h"
#include "hetsage/device.h"
#include "hetsage/runtime.h"
#include "hetsage/session.h"
#include "hetsage/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum hs_bench_workload {
  HS_BENCH_SAMPLE = 1,
  HS_BENCH_GATHER = 2,
  HS_BENCH_GEMM = 4,
  HS_BENCH_TRAIN = 8,
  HS_BENCH_ALL = 15,
} hs_bench_workload;

/* "sample", "gather", "gemm", "train" ("all" for HS_BENCH_ALL). */
HS_API const char *hs_bench_workload_name(hs_bench_workload w);
/* A comma-separated list of names, or "all", into a set of HS_BENCH_*
 * bits; HS_ERR_INVALID_ARG naming an unknown one. */
HS_API hs_status hs_bench_workloads_parse(const char *list, unsigned *out);

/* What the sampling workload has just run. */
typedef struct hs_bench_run_info {
  const char *scope;      /* "dev0", "dev0.sub1" */
  unsigned compute_units; /* the scope's */
  int run;                /* 0.., or < 0 for a warm-up run */
  const char *dataset;    /* the native dataset sampled (a peer can read it) */
  const int *fanouts;     /* from the seeds out */
  int n_fanouts;
  int batch;              /* seeds a batch */
} hs_bench_run_info;

/* Called by the sampling workload after each run on a device scope (warm-up
 * runs included), outside the run's timing: a peer measured from here runs
 * once per hetsage run, so the two alternate run by run and a change of the
 * machine's load lands on both sides. */
typedef void (*hs_bench_run_hook)(void *user, const hs_bench_run_info *info);

typedef struct hs_bench_options {
  unsigned workloads;  /* HS_BENCH_* bits; 0: all */
  const char *devices; /* "all" or NULL, or comma-separated inventory indices
                          or selectors ("pocl:0,rusticl:0") */
  int runs;            /* steady-state runs per figure, 1..64 (default 5) */
  int warmup;          /* runs dropped first, 0..16 (default 1) */
  bool quick;          /* small graphs, tables and shapes: seconds, for smoke tests */
  bool sub_devices;    /* also a sub-device of each CPU (default true) */
  /* The profile whose placement rules the train workload's sessions use
   * (NULL: the runtime's board, else the default); borrowed for the call. */
  const hs_board_profile *profile;
  /* The model the train workload trains (default GraphSAGE; GAT with
   * `heads` heads, default 4). */
  hs_model_kind model;
  int heads;
  hs_bench_run_hook sample_hook; /* NULL: none */
  void *sample_hook_user;
} hs_bench_options;

HS_API void hs_bench_options_init(hs_bench_options *o);

/* One figure beside its limit. Ratios are taken run by run (figure of run
 * i / limit of run i) and summarised like the figures. */
typedef struct hs_bench_figure {
  char workload[16];            /* "sample", "gather", "gemm", "train" */
  char device[32];              /* "dev0", "dev0.sub1", "host", "peer.dgl" */
  char device_name[HS_NAME_MAX]; /* what ran it, for people */
  char name[64];                /* "sampled_edges_per_s" */
  char unit[16];                /* "edges/s", "B/s", "FLOP/s", "s" */
  bool lower_is_better;         /* times; rates are higher-is-better */
  double median, min, max;
  char limit[64];               /* the limit's name, "" when there is none */
  double limit_median, limit_min, limit_max;
  double ratio_median, ratio_min, ratio_max; /* NaN when there is no limit */
  int runs;
  char note[160];               /* what was measured, in a few words */
} hs_bench_figure;

typedef struct hs_bench_results hs_bench_results;

/* Called from the calling thread with each figure as it is made. */
typedef void (*hs_bench_progress_fn)(void *user, const hs_bench_figure *figure);

/* Run the selected workloads on the selected devices of `rt`. Data (a
 * generated R-MAT graph, the bundled Cora) is prepared in the cache
 * directory on first use. A device or provider that cannot run a workload
 * is left out with a logged reason, never given a figure; only a failure
 * to run at all is an error (HS_ERR_INVALID_ARG for bad options, HS_ERR_IO
 * for data, HS_ERR_NO_DEVICE when no selected device exists). On success
 * *out is freed with hs_bench_results_free. */
HS_API hs_status hs_bench_run(hs_runtime *rt, const hs_bench_options *o, hs_bench_progress_fn fn,
                              void *user, hs_bench_results **out);

HS_API void hs_bench_results_free(hs_bench_results *r);
HS_API size_t hs_bench_results_count(const hs_bench_results *r);
/* Figure i, NULL out of range; valid until the results are freed or added to. */
HS_API const hs_bench_figure *hs_bench_results_figure(const hs_bench_results *r, size_t i);
/* Append a figure made elsewhere (a peer's): copied. */
HS_API hs_status hs_bench_results_add(hs_bench_results *r, const hs_bench_figure *f);
/* The generated dataset the sampling workload used (a native dataset
 * directory a peer can read), "" when it did not run. */
HS_API const char *hs_bench_results_dataset(const hs_bench_results *r);
/* Sampling parameters of the run: fanouts (from the seeds), batch size. */
HS_API int hs_bench_results_fanouts(const hs_bench_results *r, int *fanouts, int cap);
HS_API int hs_bench_results_batch(const hs_bench_results *r);
HS_API int hs_bench_results_runs(const hs_bench_results *r);

/* Save as JSON ({"hetsage_bench": 1, ..., "figures": [...]}); read back
 * with hs_bench_results_load, which refuses anything malformed
 * (HS_ERR_FORMAT with the position) or not a saved run. */
HS_API hs_status hs_bench_results_write_json(const hs_bench_results *r, FILE *f);
HS_API hs_status hs_bench_results_load(const char *path, hs_bench_results **out);

/* A figure of a run against the same figure (workload, device, name) of
 * a baseline run. */
typedef struct hs_bench_delta {
  const hs_bench_figure *current;
  const hs_bench_figure *baseline; /* NULL: not in the baseline */
  double figure_ratio;             /* current median / baseline median */
  double limit_ratio;              /* the same of the ratios to the limits, NaN without */
  /* Judged on the ratio to the limit where both runs have one (it cancels
   * a machine's drift), else on the figure: a regression when every run
   * of the current set is worse than every run of the baseline (the
   * min..max spreads do not overlap), an improvement the other way. */
  bool regression, improvement;
} hs_bench_delta;

/* Deltas of every figure of `current`, in its order, into out[0..cap);
 * returns the number there are (snprintf-style: call with cap 0 to
 * count). Pointers refer into both result sets. */
HS_API size_t hs_bench_compare(const hs_bench_results *current, const hs_bench_results *baseline,
                               hs_bench_delta *out, size_t cap);

#ifdef __cplusplus
}
#endif
#endif
