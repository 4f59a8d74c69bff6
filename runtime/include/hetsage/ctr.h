/* hetsage — click-through-rate (CTR) models: data in the Criteo layout,
 * a generator with a planted signal, and training sessions whose sparse
 * embedding tables live on the host (the parameter-server role) while the
 * dense part trains on the trainer device.
 *
 * The Criteo layout (Kaggle Display Advertising and Terabyte): one example
 * per line, 40 tab-separated columns: the label (0 or 1), 13 integer
 * features, 26 categorical features as hexadecimal ids (up to 16 digits).
 * Any feature may be empty (missing). Files are plain text or gzip. Files
 * to predict on may leave out the label (39 columns). Integers enter the
 * models as log(1 + x) for x > 0 and 0 otherwise (missing included), the
 * usual transform. */
#ifndef HETSAGE_CTR_H
#define HETSAGE_CTR_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hetsage/board.h"
#include "hetsage/dataset.h"
#include "hetsage/runtime.h"
#include "hetsage/status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define HS_CTR_DENSE 13
#define HS_CTR_SPARSE 26

/* The models (see hs_ctr_config for their widths). */
typedef enum hs_ctr_model {
  HS_CTR_LR = 1,     /* logistic regression: a weight per id, linear integers */
  HS_CTR_DEEPFM = 2, /* first order + factorisation machine + MLP (Guo et al. 2017) */
  HS_CTR_DLRM = 3,   /* bottom MLP, dot-product interactions, top MLP (Naumov et al. 2019) */
} hs_ctr_model;

/* "lr", "deepfm", "dlrm"; NULL for anything else. */
HS_API const char *hs_ctr_model_name(hs_ctr_model m);
/* HS_ERR_INVALID_ARG for an unknown name. */
HS_API hs_status hs_ctr_model_parse(const char *name, hs_ctr_model *out);

/* ---- generated data ---------------------------------------------------- */

typedef struct hs_ctr_generate_opts {
  uint64_t seed;
  int64_t rows;          /* examples in all (default 1,000,000) */
  double split_frac[HS_SPLIT_COUNT_]; /* train, valid, test by position (0.8, 0.1, 0.1) */
  int64_t big_vocab;     /* ids of the largest field (default 2,000,000) */
  double signal;         /* scale of every planted effect (default 1) */
  double positive_rate;  /* mean click rate the bias is set for (0.25) */
  bool gzip;             /* write .txt.gz instead of .txt */
  int threads;           /* 0: 2 */
  bool force;
  hs_progress_fn progress;
  void *progress_ctx;
} hs_ctr_generate_opts;

HS_API void hs_ctr_generate_opts_init(hs_ctr_generate_opts *opts);

typedef struct hs_ctr_generate_summary {
  int64_t rows[HS_SPLIT_COUNT_];
  double positive_rate[HS_SPLIT_COUNT_];
  int64_t distinct[HS_CTR_SPARSE]; /* distinct ids seen per field, all splits */
  /* On the test split, scoring each example by its true click
   * probability: the AUC against the drawn labels (what a perfect model
   * scores on this split), its expectation over the labels, and the
   * logloss. */
  double bayes_auc, bayes_auc_expected, bayes_logloss;
  double seconds;
} hs_ctr_generate_summary;

/* Write train.txt, valid.txt, test.txt (.txt.gz with gzip) and meta.json
 * into `dst` (built beside it and renamed into place when complete). The
 * click logit of an example is a bias, a first-order effect per
 * categorical id, a factorisation-machine interaction <v_f, v_g> between
 * the ids of every pair of 8 fields (4-dimensional latent vectors), and a
 * function of the log-transformed integers (linear terms and one
 * product). Ids follow power laws over each field's vocabulary (Criteo's
 * field sizes, scaled so the largest has big_vocab ids); an id's effects
 * shrink as sqrt(2000 / rank) past the 2000 most popular of its field, so
 * that the long tail a finite sample cannot teach carries little of the
 * signal. meta.json records every parameter, the distinct ids per field
 * and the Bayes figures of the summary. The files are a pure function of
 * the options (not of `threads`). */
HS_API hs_status hs_ctr_generate(const char *dst, const hs_ctr_generate_opts *opts,
                                 hs_ctr_generate_summary *summary);

/* ---- metrics ----------------------------------------------------------- */

/* Area under the ROC curve of `scores` against 0/1 `labels` (ties count
 * one half); NaN when a class is absent. `n` up to 2^31. */
HS_API double hs_ctr_auc(const float *scores, const uint8_t *labels, int64_t n);
/* Mean binary cross-entropy of probabilities (clamped to [1e-7, 1-1e-7]). */
HS_API double hs_ctr_logloss(const float *probs, const uint8_t *labels, int64_t n);

#ifdef __cplusplus
}
#endif
#endif
