/* The self-contained HTML report of `hetsage bench --report DIR`: inline
 * SVG bar charts (one per workload) and tables, nothing fetched from
 * elsewhere, so the page opens the same offline, in a CI artifact store or
 * from an e-mail. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "bench_report.h"
#include "cli.h"

void bench_fmt_si(double x, char *buf, size_t cap) {
  static const char *const up[] = {"", " k", " M", " G", " T", " P"};
  static const char *const down[] = {"", " m", " u", " n"};
  if (!isfinite(x)) {
    snprintf(buf, cap, "-");
    return;
  }
  double a = fabs(x);
  int i = 0;
  if (a >= 1000.0) {
    while (a >= 1000.0 && i < 5) a /= 1000.0, x /= 1000.0, i++;
    snprintf(buf, cap, "%.3g%s", x, up[i]);
  } else if (a > 0 && a < 1.0) {
    while (a < 1.0 && i < 3) a *= 1000.0, x *= 1000.0, i++;
    snprintf(buf, cap, "%.3g%s", x, down[i]);
  } else {
    snprintf(buf, cap, "%.3g", x);
  }
}

static void esc(FILE *f, const char *s) { hs_harness_xml_text(f, s); }

static const char *const workloads[] = {"sample", "gather", "gemm", "train"};

/* Distinct figure names of a workload, in order of first appearance. */
static int figure_names(const hs_bench_results *r, const char *w, const char **names, int cap) {
  int n = 0;
  for (size_t i = 0; i < hs_bench_results_count(r); i++) {
    const hs_bench_figure *f = hs_bench_results_figure(r, i);
    if (strcmp(f->workload, w) != 0) continue;
    bool seen = false;
    for (int k = 0; k < n && !seen; k++) seen = strcmp(names[k], f->name) == 0;
    if (!seen && n < cap) names[n++] = f->name;
  }
  return n;
}

static const char *const palette[] = {"#4e79a7", "#f28e2b", "#59a14f", "#e15759",
                                      "#76b7b2", "#edc948", "#b07aa1", "#9c755f"};

/* Devices in order of first appearance across the run (stable colours). */
static int device_index(const hs_bench_results *r, const char *device) {
  const char *seen[64];
  int n = 0;
  for (size_t i = 0; i < hs_bench_results_count(r) && n < 64; i++) {
    const char *d = hs_bench_results_figure(r, i)->device;
    bool have = false;
    for (int k = 0; k < n && !have; k++) have = strcmp(seen[k], d) == 0;
    if (!have) seen[n++] = d;
    if (strcmp(d, device) == 0) {
      for (int k = 0; k < n; k++)
        if (strcmp(seen[k], device) == 0) return k;
    }
  }
  return 0;
}

/* One chart: a group per figure, a bar per device. A figure with a limit
 * shows its ratio to the limit (the dashed line is the limit, 1.0); one
 * without shows its value relative to the best device. Whiskers: min..max. */
static void chart(FILE *f, const hs_bench_results *r, const char *w) {
  const char *names[32];
  int nn = figure_names(r, w, names, 32);
  int rows = 0;
  for (int k = 0; k < nn; k++)
    for (size_t i = 0; i < hs_bench_results_count(r); i++) {
      const hs_bench_figure *g = hs_bench_results_figure(r, i);
      if (!strcmp(g->workload, w) && !strcmp(g->name, names[k])) rows++;
    }
  const int label_w = 330, bar_w = 480, row_h = 20, group_gap = 26, top = 30;
  int height = top + rows * row_h + nn * group_gap + 20;
  fprintf(f, "<svg class=\"chart\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" role=\"img\">\n",
          label_w + bar_w + 120, height, label_w + bar_w + 120, height);
  fprintf(f, "<title>%s: each figure against its same-run limit, devices side by side</title>\n", w);
  fprintf(f, "<text x=\"%d\" y=\"18\" class=\"axis\">ratio to the same-run limit (dashed line = "
             "limit); figures without a limit: relative to the best device</text>\n",
          label_w);
  int y = top;
  for (int k = 0; k < nn; k++) {
    /* the scale of this group */
    double scale = 1.0, best = 0.0;
    bool limited = false;
    for (size_t i = 0; i < hs_bench_results_count(r); i++) {
      const hs_bench_figure *g = hs_bench_results_figure(r, i);
      if (strcmp(g->workload, w) || strcmp(g->name, names[k])) continue;
      if (g->limit[0] && isfinite(g->ratio_max)) {
        limited = true;
        if (g->ratio_max > scale) scale = g->ratio_max;
      }
      double v = g->lower_is_better ? (g->median > 0 ? 1.0 / g->median : 0) : g->median;
      if (v > best) best = v;
    }
    fprintf(f, "<text x=\"4\" y=\"%d\" class=\"group\">", y + 14);
    esc(f, names[k]);
    fprintf(f, "</text>\n");
    y += group_gap - 6;
    int y0 = y;
    for (size_t i = 0; i < hs_bench_results_count(r); i++) {
      const hs_bench_figure *g = hs_bench_results_figure(r, i);
      if (strcmp(g->workload, w) || strcmp(g->name, names[k])) continue;
      double v, lo, hi;
      char label[64];
      if (limited && g->limit[0] && isfinite(g->ratio_median)) {
        v = g->ratio_median / scale, lo = g->ratio_min / scale, hi = g->ratio_max / scale;
        snprintf(label, sizeof label, "%.3g x limit", g->ratio_median);
      } else {
        double m = g->lower_is_better ? (g->median > 0 ? 1.0 / g->median : 0) : g->median;
        v = best > 0 ? m / best : 0;
        lo = hi = v;
        char si[32];
        bench_fmt_si(g->median, si, sizeof si);
        snprintf(label, sizeof label, "%s%s", si, g->unit);
      }
      int len = (int)(v * bar_w);
      fprintf(f, "<text x=\"%d\" y=\"%d\" class=\"dev\" text-anchor=\"end\">", label_w - 6,
              y + 14);
      esc(f, g->device);
      fprintf(f, "</text>\n<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"%s\"/>\n",
              label_w, y + 3, len > 0 ? len : 1, row_h - 6,
              palette[device_index(r, g->device) % 8]);
      if (hi > lo)
        fprintf(f, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" class=\"whisker\"/>\n",
                label_w + (int)(lo * bar_w), y + row_h / 2, label_w + (int)(hi * bar_w),
                y + row_h / 2);
      int end = hi > lo && (int)(hi * bar_w) > len ? (int)(hi * bar_w) : len;
      fprintf(f, "<text x=\"%d\" y=\"%d\" class=\"val\">", label_w + end + 6, y + 14);
      esc(f, label);
      fprintf(f, "</text>\n");
      y += row_h;
    }
    if (limited)
      fprintf(f,
              "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" class=\"limit\"/>\n",
              label_w + (int)(bar_w / scale), y0, label_w + (int)(bar_w / scale), y);
    y += 6;
  }
  fprintf(f, "</svg>\n");
}

static void table(FILE *f, const hs_bench_results *r, const hs_bench_results *base, const char *w) {
  size_t nd = base ? hs_bench_compare(r, base, NULL, 0) : 0;
  hs_bench_delta *d = nd ? calloc(nd, sizeof *d) : NULL;
  if (d) hs_bench_compare(r, base, d, nd);
  fprintf(f, "<table>\n<tr><th>device</th><th>figure</th><th>median</th><th>min .. max</th>"
             "<th>limit</th><th>ratio to limit</th>%s<th>note</th></tr>\n",
          d ? "<th>vs baseline</th>" : "");
  for (size_t i = 0; i < hs_bench_results_count(r); i++) {
    const hs_bench_figure *g = hs_bench_results_figure(r, i);
    if (strcmp(g->workload, w) != 0) continue;
    char m[32], lo[32], hi[32], lim[32];
    bench_fmt_si(g->median, m, sizeof m);
    bench_fmt_si(g->min, lo, sizeof lo);
    bench_fmt_si(g->max, hi, sizeof hi);
    bench_fmt_si(g->limit_median, lim, sizeof lim);
    fprintf(f, "<tr><td title=\"");
    esc(f, g->device_name);
    fprintf(f, "\">");
    esc(f, g->device);
    fprintf(f, "</td><td>");
    esc(f, g->name);
    fprintf(f, "</td><td>%s%s</td><td>%s .. %s</td><td>", m, g->unit, lo, hi);
    if (g->limit[0]) {
      esc(f, g->limit);
      fprintf(f, " %s</td><td>%.3g (%.3g .. %.3g)</td>", lim, g->ratio_median, g->ratio_min,
              g->ratio_max);
    } else {
      fprintf(f, "-</td><td>-</td>");
    }
    if (d) {
      const hs_bench_delta *x = &d[i];
      if (!x->baseline)
        fprintf(f, "<td>new</td>");
      else
        fprintf(f, "<td class=\"%s\">%.3g%s</td>",
                x->regression ? "bad" : x->improvement ? "good" : "",
                isfinite(x->limit_ratio) ? x->limit_ratio : x->figure_ratio,
                x->regression ? " regression" : x->improvement ? " better" : "");
    }
    fprintf(f, "<td>");
    esc(f, g->note);
    fprintf(f, "</td></tr>\n");
  }
  fprintf(f, "</table>\n");
  free(d);
}

bool bench_report_html(const char *dir, const hs_bench_results *r,
                       const hs_bench_results *baseline) {
  if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
    fprintf(stderr, "hetsage bench: cannot create %s: %s\n", dir, strerror(errno));
    return false;
  }
  char path[4096];
  snprintf(path, sizeof path, "%s/index.html", dir);
  FILE *f = fopen(path, "w");
  if (!f) {
    fprintf(stderr, "hetsage bench: cannot write %s: %s\n", path, strerror(errno));
    return false;
  }
  fprintf(f,
          "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
          "<title>hetsage bench</title>\n<style>\n"
          "body { font-family: sans-serif; margin: 2em; color: #222; }\n"
          "table { border-collapse: collapse; margin: 1em 0 2em; font-size: 90%%; }\n"
          "th, td { border: 1px solid #ccc; padding: 3px 8px; text-align: left; }\n"
          "th { background: #f0f0f0; }\n"
          ".chart text { font-size: 12px; fill: #222; }\n"
          ".chart .group { font-weight: bold; }\n"
          ".chart .axis { fill: #666; }\n"
          ".chart .limit { stroke: #222; stroke-dasharray: 4 3; }\n"
          ".chart .whisker { stroke: #222; stroke-width: 1.5; }\n"
          ".bad { background: #f8d0d0; } .good { background: #d0f0d0; }\n"
          "</style>\n</head>\n<body>\n<h1>hetsage bench</h1>\n");
  fprintf(f, "<p>hetsage %s; %d steady-state run(s) per figure after warm-up; each figure is "
             "the median with its min and max, beside its same-run limit as a per-run ratio "
             "(docs/architecture.md, section Measuring).%s</p>\n",
          hs_version(), hs_bench_results_runs(r),
          baseline ? " The last column compares with the baseline run (ratio to the limit where "
                     "both have one, else the figure): a regression is flagged when the spreads "
                     "do not overlap."
                   : "");
  for (size_t k = 0; k < sizeof workloads / sizeof workloads[0]; k++) {
    const char *names[32];
    if (figure_names(r, workloads[k], names, 32) == 0) continue;
    fprintf(f, "<h2>%s</h2>\n", workloads[k]);
    chart(f, r, workloads[k]);
    table(f, r, baseline, workloads[k]);
  }
  fprintf(f, "</body>\n</html>\n");
  return cli_file_close("bench", f, path);
}
