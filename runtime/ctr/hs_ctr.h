/* CTR internals: the Criteo-layout reader, shared by training, evaluation
 * and prediction (the models and their trainer are in ctr_model.h). */
#ifndef HS_CTR_INT_H
#define HS_CTR_INT_H

#include <stdbool.h>
#include <stdint.h>

#include "hetsage/ctr.h"
#include "hs_base.h"

/* The key a missing categorical value is looked up as (its own row: in
 * real logs a missing value says something). The id of all 16 hexadecimal
 * f's shares it. */
#define HS_CTR_MISSING UINT64_MAX

/* A batch of examples as read. */
typedef struct hs_ctr_rows {
  int32_t n;
  uint8_t *labels; /* [n]: 0, 1, or HS_CTR_NO_LABEL */
  float *dense;    /* [n x HS_CTR_DENSE], log-transformed */
  uint64_t *ids;   /* [n x HS_CTR_SPARSE], HS_CTR_MISSING where empty */
} hs_ctr_rows;

hs_status hs__ctr_rows_alloc(hs_ctr_rows *r, int32_t cap);
void hs__ctr_rows_free(hs_ctr_rows *r);

typedef struct hs_ctr_reader hs_ctr_reader;

/* Read `n_paths` files one after the other (plain text or gzip, told
 * apart by their first bytes). Every line must have 40 columns, or 39
 * (no label) in all lines when `labels` is false. Errors name the file and
 * the line. A path ending in _label.npy, _dense.npy or _ids.npy names an
 * array set instead (see hs_ctr_write_arrays): its three files, read
 * without parsing (its label file not at all when `labels` is false);
 * errors name the file and the example. The paths are copied. */
hs_status hs__ctr_reader_open(const char *const *paths, int n_paths, bool labels,
                              hs_ctr_reader **out);
void hs__ctr_reader_close(hs_ctr_reader *r);
/* Up to `max` next examples into `out` (which holds at least max);
 * out->n = 0 at the end of the last file. */
hs_status hs__ctr_reader_next(hs_ctr_reader *r, int32_t max, hs_ctr_rows *out);
/* Back to the first line of the first file. */
hs_status hs__ctr_reader_rewind(hs_ctr_reader *r);
/* Examples read since the last rewind, and bytes of text. */
int64_t hs__ctr_reader_count(const hs_ctr_reader *r);
uint64_t hs__ctr_reader_bytes(const hs_ctr_reader *r);

/* Parse one line (without its newline) into example `i` of `out`:
 * HS_ERR_FORMAT naming `file`, `line` and the column. `labels` as for
 * the reader. */
hs_status hs__ctr_parse_line(const char *p, size_t len, bool labels, const char *file,
                             int64_t line, hs_ctr_rows *out, int32_t i);

/* log(1 + x) for x > 0, else 0, as a float (the integer transform). */
float hs__ctr_log_transform(int64_t x);

/* Each integer column's mean and 1 / sd over the r->n (>= 1) examples of
 * `r` (population sd, summed in double; an sd below 1e-6 gives 1), and
 * x' = (x - mu) * inv applied to the examples of `r` in place. */
void hs__ctr_dense_stats(const hs_ctr_rows *r, float mu[HS_CTR_DENSE], float inv[HS_CTR_DENSE]);
void hs__ctr_dense_standardize(hs_ctr_rows *r, const float mu[HS_CTR_DENSE],
                               const float inv[HS_CTR_DENSE]);

#endif
