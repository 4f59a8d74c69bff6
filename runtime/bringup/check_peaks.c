/* Peak figures of a device, clpeak-style, held against the profile's
 * [thresholds]: host->device, device->host and device->device bandwidth,
 * the launch latency of a one-work-item kernel, square SGEMM through the
 * device's GEMM provider, and the random-read rate of cl_kernels/probe.cl.
 * Each is the median of a few runs after warm-up (bench/hs_measure.h).
 * On a simulator (oclgrind) the same kernels run on small sizes, so that
 * they are exercised, and no threshold applies: a simulator's speed says
 * nothing about hardware. */
#include <stdio.h>
#include <string.h>

#include "bench/hs_measure.h"
#include "hs_bringup_int.h"

typedef struct metric {
  const char *key; /* the [thresholds] key */
  const char *unit;
  size_t off;      /* into hs__thresholds */
  bool upper;      /* a ceiling (latency) rather than a floor */
} metric;

#define T(f) offsetof(hs__thresholds, f)
static const metric metrics[] = {
    {"h2d_gbps", "GB/s", T(h2d_gbps), false},
    {"d2h_gbps", "GB/s", T(d2h_gbps), false},
    {"device_copy_gbps", "GB/s", T(device_copy_gbps), false},
    {"launch_latency_us", "us", T(launch_latency_us), true},
    {"sgemm_gflops", "GFLOP/s", T(sgemm_gflops), false},
    {"random_read_mops", "Mreads/s", T(random_read_mops), false},
};
#undef T

static double threshold_of(const hs__bu *b, int rule, const metric *m) {
  double d = rule >= 0 ? *(const double *)((const char *)&b->prof->devices[rule].thresholds + m->off)
                       : 0.0;
  return d > 0 ? d : *(const double *)((const char *)&b->prof->thresholds + m->off);
}

/* Record figure `m` (values already in its unit) and its check. */
static void report(hs__bu *b, hs__scope *s, int rule, const metric *m, const double *v, int runs,
                   double seconds, hs_status st, const char *how) {
  char name[64];
  snprintf(name, sizeof name, "peak.%s", m->key);
  double thr = threshold_of(b, rule, m);
  bool sim = s->dev.info.simulator;
  if (st != HS_OK) {
    hs__bu_recordf(b, s->name, name, HS_CHECK_FAIL, seconds, "could not measure: %s: %s",
                   hs_strerror(st), hs_last_error());
    return;
  }
  hs_summary x = hs__summarize(v, runs);
  hs__bu_measure(b, s->name, m->key, m->unit, x.median, x.min, x.max, sim ? 0 : thr, m->upper);
  if (sim) {
    hs__bu_recordf(b, s->name, name, HS_CHECK_SKIP, seconds,
                   "%.4g %s (median of %d, %s): '%s' is a simulator, whose speed says nothing "
                   "about hardware; its kernels ran, no threshold applies",
                   x.median, m->unit, runs, how, s->dev.info.name);
    return;
  }
  if (thr <= 0) {
    hs__bu_recordf(b, s->name, name, HS_CHECK_PASS, seconds,
                   "%.4g %s (median of %d, %s; min %.4g, max %.4g); the profile sets no threshold",
                   x.median, m->unit, runs, how, x.min, x.max);
    return;
  }
  bool ok = m->upper ? x.median <= thr : x.median >= thr;
  hs__bu_recordf(b, s->name, name, ok ? HS_CHECK_PASS : HS_CHECK_FAIL, seconds,
                 "%.4g %s (median of %d, %s) %s the profile's %s of %.4g %s", x.median, m->unit,
                 runs, how, ok ? "meets" : "misses", m->upper ? "ceiling" : "floor", thr, m->unit);
}

void hs__bu_peaks(hs__bu *b, hs__scope *s, int rule) {
  enum { RUNS = 5 };
  double v[HS_MEASURE_MAX_RUNS];
  bool sim = s->dev.info.simulator;
  size_t bytes = sim ? (size_t)1 << 20 : (size_t)32 << 20;
  hs_transfer_runs tr;
  double t0 = hs__now();
  hs_status st = hs__measure_transfers(&s->ctx, &s->dev, s->q, bytes, 1, RUNS, &tr);
  double dt = hs__now() - t0;
  double *sets[3] = {tr.h2d, tr.d2h, tr.d2d};
  for (int i = 0; i < 3; i++) {
    for (int r = 0; r < RUNS; r++) v[r] = sets[i][r] * 1e-9;
    report(b, s, rule, &metrics[i], v, RUNS, dt / 3, st,
           i == 2 ? (sim ? "1 MiB buffer copy, bytes read + written"
                         : "32 MiB buffer copy, bytes read + written")
                  : (sim ? "1 MiB blocking copies" : "32 MiB blocking copies"));
  }

  int launches = sim ? 3 : 30;
  t0 = hs__now();
  st = hs__measure_launch(&s->ctx, &s->dev, s->q, 3, launches, v);
  for (int r = 0; st == HS_OK && r < launches; r++) v[r] *= 1e6;
  report(b, s, rule, &metrics[3], v, launches, hs__now() - t0, st,
         "one work-item, enqueue to the end of clFinish");

  hs_gemm_kind used = HS_GEMM_AUTO;
  size_t n = sim ? 32 : 512;
  t0 = hs__now();
  st = hs__measure_sgemm(&s->ctx, &s->dev, s->q, HS_GEMM_AUTO, n, 1, 3, v, &used);
  for (int r = 0; st == HS_OK && r < 3; r++) v[r] *= 1e-9;
  char how[64];
  snprintf(how, sizeof how, "%zu^3 through the %s provider", n, hs__gemm_kind_name(used));
  report(b, s, rule, &metrics[4], v, 3, hs__now() - t0, st, how);

  t0 = hs__now();
  st = hs__measure_random_read(&s->ctx, &s->dev, s->q, sim ? (uint64_t)1 << 20 : (uint64_t)64 << 20,
                               1, 3, v);
  for (int r = 0; st == HS_OK && r < 3; r++) v[r] *= 1e-6;
  report(b, s, rule, &metrics[5], v, 3, hs__now() - t0, st,
         sim ? "independent 8-byte reads over 1 MiB" : "independent 8-byte reads over 64 MiB");
}
