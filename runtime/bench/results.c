/* Benchmark results: summaries of the runs, storage, the saved JSON form, loading it back, and
 * comparison with a baseline (see hetsage/bench.h). */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench/hs_bench_int.h"
#include "core/hs_engine.h"

/* ---- summaries (median, min, max of the runs) ---------------------------------- */

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

hs_summary hs__summarize(const double *v, int n) {
  double s[HS_MEASURE_MAX_RUNS];
  if (n < 1) return (hs_summary){0, 0, 0};
  if (n > HS_MEASURE_MAX_RUNS) n = HS_MEASURE_MAX_RUNS;
  memcpy(s, v, sizeof *v * (size_t)n);
  qsort(s, (size_t)n, sizeof *s, cmp_double);
  return (hs_summary){n % 2 ? s[n / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]), s[0], s[n - 1]};
}

hs_summary hs__summarize_ratio(const double *a, const double *b, int n) {
  double r[HS_MEASURE_MAX_RUNS];
  if (n > HS_MEASURE_MAX_RUNS) n = HS_MEASURE_MAX_RUNS;
  for (int i = 0; i < n; i++) r[i] = b[i] != 0.0 ? a[i] / b[i] : 0.0;
  return hs__summarize(r, n);
}

hs_bench_results *hs__bench_results_new(void) { return calloc(1, sizeof(hs_bench_results)); }

void hs_bench_results_free(hs_bench_results *r) {
  if (!r) return;
  free(r->figs);
  free(r);
}

size_t hs_bench_results_count(const hs_bench_results *r) { return r ? r->n : 0; }

const hs_bench_figure *hs_bench_results_figure(const hs_bench_results *r, size_t i) {
  return r && i < r->n ? &r->figs[i] : NULL;
}

hs_status hs_bench_results_add(hs_bench_results *r, const hs_bench_figure *f) {
  if (!r || !f) return hs__fail(HS_ERR_INVALID_ARG, "hs_bench_results_add: NULL argument");
  if (r->n == r->cap) {
    size_t cap = r->cap ? 2 * r->cap : 32;
    hs_bench_figure *g = realloc(r->figs, cap * sizeof *g);
    if (!g) return hs__fail(HS_ERR_NOMEM, "benchmark figures");
    r->figs = g;
    r->cap = cap;
  }
  r->figs[r->n++] = *f;
  return HS_OK;
}

const char *hs_bench_results_dataset(const hs_bench_results *r) { return r ? r->dataset : ""; }

int hs_bench_results_fanouts(const hs_bench_results *r, int *fanouts, int cap) {
  for (int i = 0; r && i < r->n_fanouts && i < cap; i++) fanouts[i] = r->fanouts[i];
  return r ? r->n_fanouts : 0;
}

int hs_bench_results_batch(const hs_bench_results *r) { return r ? r->batch : 0; }
int hs_bench_results_runs(const hs_bench_results *r) { return r ? r->runs : 0; }

void hs__bench_figure_set(hs_bench_figure *f, const double *v, const double *limit, int runs) {
  hs_summary s = hs__summarize(v, runs);
  f->median = s.median, f->min = s.min, f->max = s.max;
  f->runs = runs;
  if (!limit) {
    f->limit[0] = '\0';
    f->limit_median = f->limit_min = f->limit_max = NAN;
    f->ratio_median = f->ratio_min = f->ratio_max = NAN;
    return;
  }
  hs_summary l = hs__summarize(limit, runs), q = hs__summarize_ratio(v, limit, runs);
  f->limit_median = l.median, f->limit_min = l.min, f->limit_max = l.max;
  f->ratio_median = q.median, f->ratio_min = q.min, f->ratio_max = q.max;
}

/* ---- JSON ------------------------------------------------------------------- */

static void num(FILE *f, const char *key, double x, bool comma) {
  fprintf(f, "\"%s\": ", key);
  hs__json_write_number(f, x);
  if (comma) fputs(", ", f);
}

static void str(FILE *f, const char *key, const char *s, bool comma) {
  fprintf(f, "\"%s\": ", key);
  hs__json_write_string(f, s);
  if (comma) fputs(", ", f);
}

hs_status hs_bench_results_write_json(const hs_bench_results *r, FILE *f) {
  if (!r || !f) return hs__fail(HS_ERR_INVALID_ARG, "hs_bench_results_write_json: NULL argument");
  fputs("{\"hetsage_bench\": 1, ", f);
  str(f, "version", hs_version(), true);
  fprintf(f, "\"runs\": %d, \"warmup\": %d, \"quick\": %s, \"batch\": %d, \"fanouts\": [", r->runs,
          r->warmup, r->quick ? "true" : "false", r->batch);
  for (int i = 0; i < r->n_fanouts; i++) fprintf(f, "%s%d", i ? ", " : "", r->fanouts[i]);
  fputs("], ", f);
  str(f, "dataset", r->dataset, false);
  fputs(",\n \"figures\": [", f);
  for (size_t i = 0; i < r->n; i++) {
    const hs_bench_figure *g = &r->figs[i];
    fputs(i ? ",\n  {" : "\n  {", f);
    str(f, "workload", g->workload, true);
    str(f, "device", g->device, true);
    str(f, "device_name", g->device_name, true);
    str(f, "figure", g->name, true);
    str(f, "unit", g->unit, true);
    str(f, "better", g->lower_is_better ? "lower" : "higher", true);
    fprintf(f, "\"runs\": %d, ", g->runs);
    num(f, "median", g->median, true);
    num(f, "min", g->min, true);
    num(f, "max", g->max, true);
    fputs("\n   ", f);
    if (g->limit[0]) {
      str(f, "limit", g->limit, true);
      num(f, "limit_median", g->limit_median, true);
      num(f, "limit_min", g->limit_min, true);
      num(f, "limit_max", g->limit_max, true);
      num(f, "ratio_median", g->ratio_median, true);
      num(f, "ratio_min", g->ratio_min, true);
      num(f, "ratio_max", g->ratio_max, true);
    } else {
      fputs("\"limit\": null, \"ratio_median\": null, ", f);
    }
    str(f, "note", g->note, false);
    fputs("}", f);
  }
  fputs(r->n ? "\n ]}\n" : "]}\n", f);
  if (fflush(f) != 0 || ferror(f)) return hs__fail(HS_ERR_IO, "writing benchmark results failed");
  return HS_OK;
}

static bool copy_text(const hs_json *o, const char *key, char *dst, size_t cap, bool required) {
  const hs_json *v = hs__json_get(o, key);
  if (!v || v->type != HS_JSON_STRING) {
    dst[0] = '\0';
    return !required && (!v || v->type == HS_JSON_NULL);
  }
  snprintf(dst, cap, "%s", v->string);
  return true;
}

static bool get_number(const hs_json *o, const char *key, double *out, bool required) {
  const hs_json *v = hs__json_get(o, key);
  if (v && v->type == HS_JSON_NUMBER) {
    *out = v->number;
    return true;
  }
  *out = NAN;
  return !required && (!v || v->type == HS_JSON_NULL);
}

static hs_status load_figure(const char *path, size_t i, const hs_json *o, hs_bench_figure *g) {
  memset(g, 0, sizeof *g);
  char better[16];
  double runs = 0;
  if (o->type != HS_JSON_OBJECT || !copy_text(o, "workload", g->workload, sizeof g->workload, true) ||
      !copy_text(o, "device", g->device, sizeof g->device, true) ||
      !copy_text(o, "device_name", g->device_name, sizeof g->device_name, false) ||
      !copy_text(o, "figure", g->name, sizeof g->name, true) ||
      !copy_text(o, "unit", g->unit, sizeof g->unit, true) ||
      !copy_text(o, "better", better, sizeof better, true) ||
      !get_number(o, "median", &g->median, true) || !get_number(o, "min", &g->min, true) ||
      !get_number(o, "max", &g->max, true) || !get_number(o, "runs", &runs, false) ||
      !copy_text(o, "limit", g->limit, sizeof g->limit, false) ||
      !get_number(o, "limit_median", &g->limit_median, false) ||
      !get_number(o, "limit_min", &g->limit_min, false) ||
      !get_number(o, "limit_max", &g->limit_max, false) ||
      !get_number(o, "ratio_median", &g->ratio_median, false) ||
      !get_number(o, "ratio_min", &g->ratio_min, false) ||
      !get_number(o, "ratio_max", &g->ratio_max, false) ||
      !copy_text(o, "note", g->note, sizeof g->note, false))
    return hs__fail(HS_ERR_FORMAT,
                    "%s: figures[%zu]: missing or mistyped field (workload, device, figure, "
                    "unit, better, median, min, max are required)",
                    path, i);
  if (strcmp(better, "lower") != 0 && strcmp(better, "higher") != 0)
    return hs__fail(HS_ERR_FORMAT, "%s: figures[%zu]: better is '%s' (lower or higher)", path, i,
                    better);
  g->lower_is_better = better[0] == 'l';
  if (isfinite(runs) && (runs < 0 || runs > INT_MAX || runs != floor(runs)))
    return hs__fail(HS_ERR_FORMAT, "%s: figures[%zu]: runs is %g (a whole number from 0 to %d)",
                    path, i, runs, INT_MAX);
  g->runs = isfinite(runs) ? (int)runs : 0;
  if (g->limit[0] && !(isfinite(g->ratio_min) && isfinite(g->ratio_max)))
    return hs__fail(HS_ERR_FORMAT, "%s: figures[%zu]: a limit without ratios", path, i);
  return HS_OK;
}

/* v into *out when it is a whole number in [lo, INT_MAX] (a double outside
 * int's range must not be converted). */
static bool whole_number(double v, int lo, int *out) {
  if (!isfinite(v) || v < lo || v > INT_MAX || v != floor(v)) return false;
  *out = (int)v;
  return true;
}

hs_status hs_bench_results_load(const char *path, hs_bench_results **out) {
  if (!path || !out) return hs__fail(HS_ERR_INVALID_ARG, "hs_bench_results_load: NULL argument");
  *out = NULL;
  hs_json *doc = NULL;
  hs_status st = hs__json_parse_file(path, &doc);
  if (st != HS_OK) return st;
  hs_bench_results *r = hs__bench_results_new();
  if (!r) {
    st = hs__fail(HS_ERR_NOMEM, "benchmark results");
    goto fail;
  }
  const hs_json *figs = hs__json_get(doc, "figures");
  if (hs__json_number(doc, "hetsage_bench", 0) != 1 || !figs || figs->type != HS_JSON_ARRAY) {
    st = hs__fail(HS_ERR_FORMAT, "%s: not a saved hetsage benchmark run "
                  "(no \"hetsage_bench\": 1 with a \"figures\" array)", path);
    goto fail;
  }
  const char *const counts[3] = {"runs", "warmup", "batch"};
  int *const count_of[3] = {&r->runs, &r->warmup, &r->batch};
  for (int k = 0; k < 3; k++)
    if (!whole_number(hs__json_number(doc, counts[k], 0), 0, count_of[k])) {
      st = hs__fail(HS_ERR_FORMAT, "%s: %s is %g (a whole number from 0 to %d)", path, counts[k],
                    hs__json_number(doc, counts[k], 0), INT_MAX);
      goto fail;
    }
  snprintf(r->dataset, sizeof r->dataset, "%s", hs__json_text(doc, "dataset", ""));
  const hs_json *fan = hs__json_get(doc, "fanouts");
  for (size_t i = 0; fan && fan->type == HS_JSON_ARRAY && i < fan->n && i < 8; i++)
    if (fan->items[i].type == HS_JSON_NUMBER &&
        !whole_number(fan->items[i].number, -1, &r->fanouts[r->n_fanouts++])) {
      st = hs__fail(HS_ERR_FORMAT, "%s: fanouts[%zu] is %g (a whole number from -1 to %d)", path,
                    i, fan->items[i].number, INT_MAX);
      goto fail;
    }
  for (size_t i = 0; i < figs->n; i++) {
    hs_bench_figure g;
    if ((st = load_figure(path, i, &figs->items[i], &g)) != HS_OK ||
        (st = hs_bench_results_add(r, &g)) != HS_OK)
      goto fail;
  }
  hs__json_free(doc);
  *out = r;
  return HS_OK;
fail:
  hs__json_free(doc);
  hs_bench_results_free(r);
  return st;
}

/* ---- comparison ------------------------------------------------------------------ */

static const hs_bench_figure *find(const hs_bench_results *r, const hs_bench_figure *f) {
  for (size_t i = 0; i < r->n; i++)
    if (strcmp(r->figs[i].workload, f->workload) == 0 && strcmp(r->figs[i].device, f->device) == 0 &&
        strcmp(r->figs[i].name, f->name) == 0)
      return &r->figs[i];
  return NULL;
}

size_t hs_bench_compare(const hs_bench_results *cur, const hs_bench_results *base,
                        hs_bench_delta *out, size_t cap) {
  if (!cur) return 0;
  for (size_t i = 0; i < cur->n && i < cap; i++) {
    const hs_bench_figure *c = &cur->figs[i], *b = base ? find(base, c) : NULL;
    hs_bench_delta d = {.current = c, .baseline = b, .figure_ratio = NAN, .limit_ratio = NAN};
    if (b) {
      d.figure_ratio = b->median != 0 ? c->median / b->median : NAN;
      bool ratios = c->limit[0] && b->limit[0] && isfinite(c->ratio_median) &&
                    isfinite(b->ratio_median);
      if (ratios) d.limit_ratio = b->ratio_median != 0 ? c->ratio_median / b->ratio_median : NAN;
      /* what is judged: the ratio to the limit, else the figure */
      double cmin = ratios ? c->ratio_min : c->min, cmax = ratios ? c->ratio_max : c->max;
      double bmin = ratios ? b->ratio_min : b->min, bmax = ratios ? b->ratio_max : b->max;
      bool worse = c->lower_is_better ? cmin > bmax : cmax < bmin;
      bool better = c->lower_is_better ? cmax < bmin : cmin > bmax;
      d.regression = worse;
      d.improvement = better;
    }
    out[i] = d;
  }
  return cur->n;
}
