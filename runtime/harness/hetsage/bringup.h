/* hetsage — board bring-up: does every kernel run, and run right, on every
 * device of this board?
 *
 * Bring-up checks a board against its profile (boards/README.md): the
 * expected devices are present ([device.<id>] rules: a required device
 * that is absent fails, an optional one is a skip), the devices that take
 * a role have what [require] asks; then, on every device (and, for a CPU
 * that partitions, on a sub-device like the ones the roles get), every
 * kernel is run on generated and bundled data and compared with its
 * plain-C reference: bit for bit where the design promises it (sampling in
 * every mode, reindexing, gathering, aggregation, the block transpose,
 * column sums), within stated tolerances elsewhere (GEMM, loss, optimizer,
 * a full training step: 1e-5 relative). A short end-to-end training run is
 * made for each role placement the profile allows, and peak figures
 * (transfers, launch latency, SGEMM, random reads) are measured and held
 * against the profile's [thresholds].
 *
 * Every check ends as pass, fail or skip (the device or provider is absent,
 * or the level does not include it) — never a pass for something that was
 * not run.
 *
 * Levels: quick (seconds: discovery, rules, capabilities, a few small
 * kernels), standard (about a minute: every kernel on every device, peaks,
 * end-to-end runs), long (standard, then a soak that repeats the kernels
 * until a time limit, requiring bit-identical results every round, no
 * errors and no growth of resident memory).
 *
 * Fault injection, to prove that bring-up catches a broken kernel: with
 * HETSAGE_BRINGUP_INJECT=gather (or hs_bringup_options.inject), the device
 * gather check runs a variant compiled with -DHS_INJECT_FAULT that writes
 * one wrong row. Nothing else ever builds that variant. */
#ifndef HETSAGE_BRINGUP_H
#define HETSAGE_BRINGUP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "hetsage/board.h"
#include "hetsage/device.h"
#include "hetsage/runtime.h"
#include "hetsage/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum hs_bringup_level {
  HS_BRINGUP_QUICK = 0,
  HS_BRINGUP_STANDARD = 1,
  HS_BRINGUP_LONG = 2,
} hs_bringup_level;

/* "quick", "standard", "long". */
HS_API const char *hs_bringup_level_name(hs_bringup_level level);
/* Parse a level name; HS_ERR_INVALID_ARG otherwise. */
HS_API hs_status hs_bringup_level_parse(const char *name, hs_bringup_level *out);

typedef enum hs_check_result {
  HS_CHECK_PASS = 0,
  HS_CHECK_FAIL = 1,
  HS_CHECK_SKIP = 2,
} hs_check_result;

/* "pass", "fail", "skip". */
HS_API const char *hs_check_result_name(hs_check_result r);

typedef struct hs_bringup_options {
  hs_bringup_level level;
  double soak_seconds; /* long level: time spent repeating; <= 0: 120 */
  /* Kernel to replace by its faulty variant ("gather"); NULL: read
   * $HETSAGE_BRINGUP_INJECT; "": none. Anything else is an error. */
  const char *inject;
} hs_bringup_options;

/* Fill `o` with the defaults: standard level, 120 s soak, inject NULL. */
HS_API void hs_bringup_options_init(hs_bringup_options *o);

/* One check. Names are dotted paths, stable across runs and boards of
 * the same shape: "board.device.<id>", "<scope>.require.<key>",
 * "<scope>.sample.<mode>", "<scope>.gemm.<provider>", "e2e.<placement>",
 * "soak.<what>", where <scope> is "dev<index>" for a whole device and
 * "dev<index>.sub<units>" for a sub-device of that many compute units. */
typedef struct hs_bringup_check {
  const char *name;
  const char *scope;  /* "dev0", "dev0.sub1", or "board", "e2e", "soak" */
  hs_check_result result;
  const char *detail; /* what was compared, or why it failed or skipped */
  double seconds;     /* time the check took */
} hs_bringup_check;

/* A measured figure. `threshold` is the profile's bound (0: none); rates
 * are lower bounds, latencies (`upper_bound`) upper bounds. */
typedef struct hs_bringup_measurement {
  const char *name;   /* "<scope>.<metric>", e.g. "dev0.h2d_gbps" */
  const char *scope;
  const char *metric; /* a [thresholds] key, or another figure's name */
  const char *unit;
  double median, min, max;
  double threshold;
  bool upper_bound;
} hs_bringup_measurement;

typedef struct hs_bringup_report hs_bringup_report;

/* Called from the calling thread after each check completes. */
typedef void (*hs_bringup_progress_fn)(void *user, const hs_bringup_check *check);

/* Run bring-up of the board described by `profile` (NULL: the runtime's
 * board, hs_runtime_options.board, else the default board) on the devices of `rt`, at `opts` (NULL: defaults). Both are
 * borrowed for the call. Returns HS_OK when bring-up ran, whatever the
 * checks found; *out then holds the report (free with
 * hs_bringup_report_free). An error means it could not run at all:
 * HS_ERR_INVALID_ARG (bad options, an unknown inject name), HS_ERR_NOMEM,
 * HS_ERR_IO (the bundled or generated data could not be prepared),
 * HS_ERR_NO_DEVICE (the runtime has no device). Uses the binary cache
 * (HETSAGE_CACHE_DIR) like every kernel build. One call at a time per
 * runtime. */
HS_API hs_status hs_bringup_run(hs_runtime *rt, const hs_board_profile *profile,
                                const hs_bringup_options *opts, hs_bringup_progress_fn fn,
                                void *user, hs_bringup_report **out);

HS_API void hs_bringup_report_free(hs_bringup_report *r);

/* Checks and measurements in the order they were made; pointers are valid
 * until the report is freed. Index out of range: NULL. */
HS_API size_t hs_bringup_report_check_count(const hs_bringup_report *r);
HS_API const hs_bringup_check *hs_bringup_report_check(const hs_bringup_report *r, size_t i);
HS_API size_t hs_bringup_report_measurement_count(const hs_bringup_report *r);
HS_API const hs_bringup_measurement *hs_bringup_report_measurement(const hs_bringup_report *r,
                                                                   size_t i);
/* The check named `name`, NULL if there is none. */
HS_API const hs_bringup_check *hs_bringup_report_find(const hs_bringup_report *r,
                                                      const char *name);

/* Counts of each result (pointers may be NULL). */
HS_API void hs_bringup_report_counts(const hs_bringup_report *r, int *pass, int *fail,
                                     int *skip);
/* Board name, level and the wall time of the run. */
HS_API const char *hs_bringup_report_board(const hs_bringup_report *r);
HS_API hs_bringup_level hs_bringup_report_level(const hs_bringup_report *r);
HS_API double hs_bringup_report_seconds(const hs_bringup_report *r);

/* CTS-style JSON: {"board", "level", "results": {name: "pass"|"fail"|
 * "skip"}, "details": {name: {...}}, "devices": [the inventory as
 * `hetsage info --json` lists it], "measurements": {name: {...}},
 * "summary": {...}}. HS_ERR_IO when writing fails. */
HS_API hs_status hs_bringup_report_write_json(const hs_bringup_report *r, FILE *f);
/* JUnit XML: one <testsuite> per scope, one <testcase> per check, with a
 * <failure> or <skipped> element where it did not pass; text escaped. */
HS_API hs_status hs_bringup_report_write_junit(const hs_bringup_report *r, FILE *f);

/* One device of the inventory as a JSON object, the form `hetsage info
 * --json` and the bring-up report use; `indent` spaces before each line. */
HS_API void hs_device_info_write_json(FILE *f, const hs_device_info *d, int indent);

#ifdef __cplusplus
}
#endif
#endif
