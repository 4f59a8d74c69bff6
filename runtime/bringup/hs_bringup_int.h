/* Bring-up internals shared by the run (bringup.c), the report
 * (report.c) and the families of checks (check_*.c). */
#ifndef HS_BRINGUP_INT_H
#define HS_BRINGUP_INT_H

#include <stdarg.h>

#include "core/hs_engine.h"
#include "hetsage/bringup.h"
#include "hetsage/dataset.h"

struct hs_bringup_report {
  char board[64];
  hs_bringup_level level;
  double seconds;
  hs_bringup_check *checks;
  size_t n_checks, cap_checks;
  hs_bringup_measurement *meas;
  size_t n_meas, cap_meas;
  hs_device_info *devices; /* the inventory at the time of the run */
  int n_devices;
  bool nomem; /* a check or figure could not be stored */
};

/* Where kernels of one scope run: a whole device or a sub-device, with its
 * own context and in-order profiling queue. */
typedef struct hs__scope {
  char name[32]; /* "dev0", "dev0.sub1" */
  hs_dev dev;
  hs_ctx ctx;
  cl_command_queue q;
  bool sub;
  int index;            /* inventory index of the (parent) device */
  hs__prog_files files; /* what the profile provides for its programs
                           (dev.progs points here) */
} hs__scope;

/* Data every check family draws from, prepared once per run. */
typedef struct hs__bu_data {
  hs_dataset *cora_ds, *gen_ds;
  const hs_graph *cora, *gen;
  float *cora_w, *gen_w; /* synthetic edge weights (weighted modes) */
  hs_csr cora_csr, gen_csr;
} hs__bu_data;

/* What a kernel check hands back: a line for the report and a digest of
 * what the device produced (the soak compares digests round by round). */
typedef struct hs__out {
  char detail[512];
  uint64_t digest;
} hs__out;

typedef struct hs__bu {
  hs_runtime *rt;
  const hs_board_profile *prof;
  hs_bringup_options opts;
  hs_bringup_report *rep;
  hs_bringup_progress_fn fn;
  void *user;
  bool inject_gather;
  hs__bu_data data;
  double t0;
} hs__bu;

typedef hs_check_result (*hs__kernel_check_fn)(hs__bu *b, hs__scope *s, hs__out *o);

typedef struct hs__kernel_check {
  const char *name;         /* after the scope: "sample.uniform" */
  hs_bringup_level level;   /* the lowest level that runs it */
  hs__kernel_check_fn fn;
  int program;              /* the hs_prog holding its kernels, -1: none; on a
                               device that does not compile it runs only
                               when the profile provides that program */
} hs__kernel_check;

/* The per-device kernel checks, in the order they run (check tables of
 * each family, concatenated by bringup.c). */
extern const hs__kernel_check hs__bu_sample_checks[];
extern const size_t hs__bu_sample_check_count;
extern const hs__kernel_check hs__bu_train_checks[];
extern const size_t hs__bu_train_check_count;

/* ---- report ---------------------------------------------------------------- */

hs_bringup_report *hs__bu_report_new(void);
/* Record a check (strings copied) and call the progress callback. */
void hs__bu_record(hs__bu *b, const char *scope, const char *name, hs_check_result r,
                   double seconds, const char *detail);
/* printf-style detail. */
void hs__bu_recordf(hs__bu *b, const char *scope, const char *name, hs_check_result r,
                    double seconds, const char *fmt, ...) HS_PRINTF(6, 7);
void hs__bu_measure(hs__bu *b, const char *scope, const char *metric, const char *unit,
                    double median, double min, double max, double threshold, bool upper);

/* ---- helpers for the check families ------------------------------------------- */

/* FNV-1a over bytes, continuing from `h` (start with HS__FNV_SEED). */
#define HS__FNV_SEED 0xcbf29ce484222325ull
uint64_t hs__fnv(uint64_t h, const void *p, size_t n);

/* Compare float arrays: bit for bit when rtol == 0 (NaN payloads too),
 * else |got - want| <= rtol * max(|want|, 1). Returns true when equal
 * enough; otherwise writes the first difference into `why`. */
bool hs__bu_floats(const char *what, const float *got, const float *want, size_t n, float rtol,
                   char *why, size_t cap);
/* Relative agreement of whole arrays as the trainer's tests measure it:
 * max_i |a_i - b_i| / max(|b_i|, 1e-2 max_j |b_j|) <= rtol. */
bool hs__bu_rel(const char *what, const float *got, const float *want, size_t n, double rtol,
                char *why, size_t cap);

/* Fail the check with the current error detail. */
hs_check_result hs__bu_error(hs__out *o, const char *what, hs_status st);

/* Distinct seeds in [0, n_vertices): deterministic in `salt`. */
void hs__bu_seeds(int32_t *seeds, int32_t n, int64_t n_vertices, uint32_t salt);

/* The training-set seeds' feature rows as float32 (float16 converted). */
void hs__bu_feature_rows(const hs_graph *g, const int32_t *ids, int32_t n, float *out);

/* ---- families run outside the per-device table ------------------------------------ */

hs_check_result hs__bu_gather_host(hs__bu *b, hs__out *o);
/* Peaks of a whole-device scope, with thresholds for profile rule `rule`
 * (-1: none matched). */
void hs__bu_peaks(hs__bu *b, hs__scope *s, int rule);
/* End-to-end runs for each placement the profile allows. */
void hs__bu_e2e(hs__bu *b);
/* The placement a session would make for Cora on this board (the
 * HETSAGE_SAMPLER/TRAINER overrides included); *out freed by the caller. */
hs_status hs__bu_place(hs__bu *b, hs_placement **out);

#endif
