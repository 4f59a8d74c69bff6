/* Benchmark results inside the library (results.c stores, saves, loads
 * and compares them; bench.c fills them). */
#ifndef HS_BENCH_INT_H
#define HS_BENCH_INT_H

#include "bench/hs_measure.h"
#include "hetsage/bench.h"

struct hs_bench_results {
  hs_bench_figure *figs;
  size_t n, cap;
  char dataset[1024];
  int fanouts[8];
  int n_fanouts;
  int batch;
  int runs, warmup;
  bool quick;
};

hs_bench_results *hs__bench_results_new(void);

/* Fill the figure's summaries from per-run values; `limit` may be NULL
 * (no limit: ratios NaN, limit name ""). */
void hs__bench_figure_set(hs_bench_figure *f, const double *v, const double *limit, int runs);

#endif
