/* Evaluation, prediction and checkpoints of a session. */
#include <stdlib.h>
#include <string.h>

#include "hs_session_int.h"
#include "nn/checkpoint.h"
#include "nn/infer.h"

/* Evaluation batches are keyed apart from every training epoch. */
#define EVAL_EPOCH_KEY 0xfffffff0u

static int32_t argmax(const float *row, int n) {
  int32_t best = 0;
  for (int c = 1; c < n; c++)
    if (row[c] > row[best]) best = c;
  return best;
}

hs_status hs_session_evaluate(hs_session *s, hs_split split, double *accuracy) {
  if (!s || !accuracy || split < 0 || split >= HS_SPLIT_COUNT_)
    return hs__fail(HS_ERR_INVALID_ARG, "hs_session_evaluate: bad argument");
  const int32_t *ids = s->g->split[split];
  int64_t n = s->g->split_n[split];
  if (!ids || n == 0) return hs__fail(HS_ERR_FORMAT, "the dataset has no %s split",
                                      split == HS_SPLIT_VALID ? "validation" : split == HS_SPLIT_TEST ? "test" : "training");
  int classes = s->g->num_classes;
  float *logits = malloc((size_t)s->cfg.batch_size * (size_t)classes * sizeof *logits);
  if (!logits) return hs__fail(HS_ERR_NOMEM, "out of memory for logits");
  hs_slot_data *d = &s->slots[0];
  int64_t correct = 0;
  hs_status st = HS_OK;
  for (int64_t first = 0; first < n && st == HS_OK; first += s->cfg.batch_size) {
    int32_t m = (int32_t)(n - first < s->cfg.batch_size ? n - first : s->cfg.batch_size);
    st = hs__session_sample_gather(s, ids + first, m, EVAL_EPOCH_KEY + (uint32_t)split,
                                   (uint32_t)(first / s->cfg.batch_size), d);
    hs_nn_batch nb;
    hs__session_nn_batch(d, &nb);
    if (st == HS_OK) st = hs__trainer_upload(s->trainer, &nb);
    if (st == HS_OK) st = hs__trainer_predict(s->trainer, logits);
    for (int32_t i = 0; st == HS_OK && i < m; i++)
      correct += argmax(logits + (size_t)i * classes, classes) == d->labels[i];
  }
  free(logits);
  if (st == HS_OK) *accuracy = (double)correct / (double)n;
  return st;
}

/* Float32 features of the whole graph: the mapped array itself, or a
 * widened copy (freed by the caller when *owned). */
static hs_status full_features(const hs_session *s, const float **out, float **owned) {
  *owned = NULL;
  if (s->g->feat_dtype == HS_DTYPE_FLOAT32) {
    *out = s->g->feat;
    return HS_OK;
  }
  size_t count;
  if (!hs__mul_size((size_t)s->g->n, (size_t)s->g->f, &count))
    return hs__fail(HS_ERR_RANGE, "feature matrix too large");
  float *f = malloc(count * sizeof *f + 1);
  if (!f) return hs__fail(HS_ERR_NOMEM, "out of memory widening %zu features", count);
  const uint16_t *h = s->g->feat;
  for (size_t i = 0; i < count; i++) f[i] = hs__half_to_float(h[i]);
  *out = f;
  *owned = f;
  return HS_OK;
}

static hs_csr_view csr_view(const hs_session *s) {
  return (hs_csr_view){.n_vertices = s->g->n, .indptr = s->g->indptr, .indices = s->g->indices};
}

hs_status hs_session_evaluate_full(hs_session *s, hs_split split, double *accuracy) {
  if (!s || !accuracy || split < 0 || split >= HS_SPLIT_COUNT_)
    return hs__fail(HS_ERR_INVALID_ARG, "hs_session_evaluate_full: bad argument");
  if (!s->g->split[split] || s->g->split_n[split] == 0)
    return hs__fail(HS_ERR_FORMAT, "the dataset has no such split");
  hs_status st = hs__trainer_sync_model(s->trainer, &s->model);
  if (st != HS_OK) return st;
  const float *feat;
  float *owned;
  if ((st = full_features(s, &feat, &owned)) != HS_OK) return st;
  size_t count = (size_t)s->g->n * (size_t)s->g->num_classes;
  float *logits = malloc(count * sizeof *logits);
  if (!logits) {
    free(owned);
    return hs__fail(HS_ERR_NOMEM, "out of memory for %zu logits", count);
  }
  hs_csr_view g = csr_view(s);
  st = hs__infer_full(&s->model.shape, s->model.params, &g, feat, logits);
  if (st == HS_OK)
    *accuracy = hs__accuracy(logits, s->g->num_classes, s->g->labels, s->g->split[split],
                             s->g->split_n[split]);
  free(logits);
  free(owned);
  return st;
}

hs_status hs_session_predict(hs_session *s, const int64_t *ids, int64_t n, int32_t *classes,
                             float *logits_out) {
  if (!s || (!ids && n > 0) || !classes || n < 0 || n > INT32_MAX)
    return hs__fail(HS_ERR_INVALID_ARG, "hs_session_predict: bad argument");
  int32_t *ids32 = malloc((size_t)n * sizeof *ids32 + 1);
  float *logits = malloc((size_t)n * (size_t)s->g->num_classes * sizeof *logits + 1);
  hs_status st = HS_OK;
  const float *feat = NULL;
  float *owned = NULL;
  if (!ids32 || !logits) {
    st = hs__fail(HS_ERR_NOMEM, "out of memory predicting %lld vertices", (long long)n);
    goto done;
  }
  for (int64_t i = 0; i < n; i++) {
    if (ids[i] < 0 || ids[i] >= s->g->n) {
      st = hs__fail(HS_ERR_RANGE, "vertex id %lld (position %lld) is outside the graph of %lld vertices",
                    (long long)ids[i], (long long)i, (long long)s->g->n);
      goto done;
    }
    ids32[i] = (int32_t)ids[i];
  }
  if ((st = hs__trainer_sync_model(s->trainer, &s->model)) != HS_OK) goto done;
  if ((st = full_features(s, &feat, &owned)) != HS_OK) goto done;
  hs_csr_view g = csr_view(s);
  st = hs__infer_ids(&s->model.shape, s->model.params, &g, feat, ids32, (int32_t)n, logits);
  if (st != HS_OK) goto done;
  for (int64_t i = 0; i < n; i++)
    classes[i] = argmax(logits + (size_t)i * s->g->num_classes, s->g->num_classes);
  if (logits_out) memcpy(logits_out, logits, (size_t)n * s->g->num_classes * sizeof *logits);
done:
  free(ids32);
  free(logits);
  free(owned);
  return st;
}

hs_status hs_session_save(hs_session *s, const char *path) {
  if (!s || !path) return hs__fail(HS_ERR_INVALID_ARG, "hs_session_save: NULL argument");
  hs_status st = hs__trainer_sync_model(s->trainer, &s->model);
  if (st != HS_OK) return st;
  s->model.epoch = (uint64_t)s->epoch;
  s->model.rng_counter = (uint64_t)s->batch_pos;
  return hs__checkpoint_save(&s->model, path);
}

hs_status hs_session_load(hs_session *s, const char *path) {
  if (!s || !path) return hs__fail(HS_ERR_INVALID_ARG, "hs_session_load: NULL argument");
  hs_model m;
  hs_status st = hs__model_create(&s->model.cfg, &m);
  if (st != HS_OK) return st;
  /* Refuses a file of another shape or optimizer, naming it. */
  if ((st = hs__checkpoint_load(path, &m)) != HS_OK) goto fail;
  if (m.rng_counter > (uint64_t)s->n_batches) {
    st = hs__fail(HS_ERR_FORMAT, "%s: position batch %llu of an epoch of %lld batches", path,
                  (unsigned long long)m.rng_counter, (long long)s->n_batches);
    goto fail;
  }
  if ((st = hs__trainer_load_model(s->trainer, &m)) != HS_OK) goto fail;
  hs__model_destroy(&s->model);
  s->model = m;
  s->epoch = (int64_t)m.epoch;
  s->batch_pos = (int64_t)m.rng_counter;
  return HS_OK;
fail:
  hs__model_destroy(&m);
  return st;
}

hs_status hs_session_config_from_checkpoint(const char *path, hs_session_config *cfg) {
  if (!path || !cfg)
    return hs__fail(HS_ERR_INVALID_ARG, "hs_session_config_from_checkpoint: NULL argument");
  hs_model_cfg mc;
  hs_status st = hs__checkpoint_read_cfg(path, &mc);
  if (st != HS_OK) return st;
  if (mc.n_layers > HS_MAX_LAYERS)
    return hs__fail(HS_ERR_FORMAT, "%s: %d layers", path, mc.n_layers);
  for (int l = cfg->n_layers; l < mc.n_layers; l++) cfg->fanouts[l] = 10;
  cfg->n_layers = mc.n_layers;
  cfg->hidden = mc.hidden;
  cfg->dropout = mc.dropout;
  cfg->optimizer = mc.optim.kind == HS_OPTIM_SGD ? HS_OPTIMIZER_SGD : HS_OPTIMIZER_ADAM;
  cfg->lr = mc.optim.lr;
  cfg->weight_decay = mc.optim.weight_decay;
  cfg->seed = mc.seed;
  return HS_OK;
}

hs_status hs_session_parameters(hs_session *s, float *out, size_t cap, size_t *n) {
  if (!s || !n) return hs__fail(HS_ERR_INVALID_ARG, "hs_session_parameters: NULL argument");
  hs_status st = hs__trainer_sync_model(s->trainer, &s->model);
  if (st != HS_OK) return st;
  *n = s->model.shape.n_params;
  if (out) memcpy(out, s->model.params, (cap < *n ? cap : *n) * sizeof *out);
  return HS_OK;
}
