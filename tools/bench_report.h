/* The HTML report of `hetsage bench --report DIR`. */
#ifndef HS_BENCH_REPORT_H
#define HS_BENCH_REPORT_H

#include <stdbool.h>

#include "hetsage.h"
#include "hetsage/bench.h"
#include "hetsage/harness.h"

/* Write DIR/index.html (DIR is created if missing): one inline SVG chart
 * per workload, devices side by side, each figure against its same-run
 * limit, and a table of the numbers (with the ratio to `baseline` when it
 * is not NULL). Self-contained: no scripts, fonts, style sheets or images
 * from anywhere else. Returns false (with a message on stderr) on an I/O
 * error. */
bool bench_report_html(const char *dir, const hs_bench_results *r,
                       const hs_bench_results *baseline);

/* "12.3 M" style for people: three significant digits and an SI prefix. */
void bench_fmt_si(double x, char *buf, size_t cap);

#endif
