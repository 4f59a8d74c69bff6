/* CTR model configurations, parameter layouts and initial values (see
 * ctr_model.h). */
#include <math.h>
#include <string.h>

#include "ctr/ctr_model.h"
#include "nn/nn_rng.h"

static const char *const model_names[] = {NULL, "lr", "deepfm", "dlrm"};

const char *hs_ctr_model_name(hs_ctr_model m) {
  return m >= HS_CTR_LR && m <= HS_CTR_DLRM ? model_names[m] : NULL;
}

hs_status hs_ctr_model_parse(const char *name, hs_ctr_model *out) {
  for (int k = HS_CTR_LR; k <= HS_CTR_DLRM; k++)
    if (name && strcmp(name, model_names[k]) == 0) {
      *out = (hs_ctr_model)k;
      return HS_OK;
    }
  return hs__fail(HS_ERR_INVALID_ARG, "CTR model '%s': expected lr, deepfm or dlrm",
                  name ? name : "(null)");
}

void hs__ctr_model_cfg_defaults(hs_ctr_model kind, hs_ctr_model_cfg *cfg) {
  memset(cfg, 0, sizeof *cfg);
  cfg->kind = kind;
  cfg->n_fields = HS_CTR_SPARSE;
  cfg->n_dense = HS_CTR_DENSE;
  cfg->dim = 16;
  cfg->deep[0] = 256;
  cfg->deep[1] = 128;
  cfg->n_deep = 2;
  cfg->bottom[0] = 64;
  cfg->n_bottom = 1;
  cfg->optim = (hs_optim_cfg){.kind = HS_OPTIM_ADAM, .wd_mode = HS_WD_L2, .lr = 1e-3f,
                              .beta1 = 0.9f, .beta2 = 0.999f, .eps = 1e-8f};
}

static hs_status add_lin(hs_ctr_layout *l, int32_t in, int32_t out, bool relu) {
  if (l->n_lin == HS_CTR_MAX_LIN) return hs__fail(HS_ERR_INVALID_ARG, "CTR model: too many layers");
  hs_ctr_lin *x = &l->lin[l->n_lin++];
  x->in = in;
  x->out = out;
  x->relu = relu;
  x->w = l->n_params;
  l->n_params += (size_t)in * (size_t)out;
  x->b = l->n_params;
  l->n_params += (size_t)out;
  return HS_OK;
}

static hs_status check_widths(const char *what, const int32_t *w, int n) {
  if (n < 0 || n > HS_CTR_MAX_MLP - 1)
    return hs__fail(HS_ERR_INVALID_ARG, "CTR model: %d %s layers (0..%d)", n, what,
                    HS_CTR_MAX_MLP - 1);
  for (int i = 0; i < n; i++)
    if (w[i] < 1 || w[i] > 65536)
      return hs__fail(HS_ERR_INVALID_ARG, "CTR model: %s width %d (1..65536)", what, w[i]);
  return HS_OK;
}

hs_status hs__ctr_layout(const hs_ctr_model_cfg *c, hs_ctr_layout *out) {
  memset(out, 0, sizeof *out);
  if (!hs_ctr_model_name(c->kind)) return hs__fail(HS_ERR_INVALID_ARG, "CTR model kind %d", c->kind);
  if (c->n_fields < 1 || c->n_fields > HS_CTR_SPARSE)
    return hs__fail(HS_ERR_INVALID_ARG, "CTR model: %d fields (1..%d)", c->n_fields, HS_CTR_SPARSE);
  if (c->n_dense < 1 || c->n_dense > 1024)
    return hs__fail(HS_ERR_INVALID_ARG, "CTR model: %d integer features", c->n_dense);
  if (c->kind != HS_CTR_LR && (c->dim < 1 || c->dim > 1024))
    return hs__fail(HS_ERR_INVALID_ARG, "CTR model: embedding dim %d (1..1024)", c->dim);
  hs_status st;
  if ((st = check_widths("deep", c->deep, c->n_deep)) != HS_OK ||
      (st = check_widths("bottom", c->bottom, c->n_bottom)) != HS_OK)
    return st;
  int32_t F = c->n_fields, D = c->dim;
  switch (c->kind) {
    case HS_CTR_LR: out->row = 1; break;
    case HS_CTR_DEEPFM: {
      out->row = D + 1;
      out->deep_in = F * D + c->n_dense;
      int32_t in = out->deep_in;
      for (int i = 0; i < c->n_deep; i++) {
        if ((st = add_lin(out, in, c->deep[i], true)) != HS_OK) return st;
        in = c->deep[i];
      }
      if ((st = add_lin(out, in, 1, false)) != HS_OK) return st;
      break;
    }
    case HS_CTR_DLRM: {
      out->row = D;
      int32_t in = c->n_dense;
      for (int i = 0; i < c->n_bottom; i++) {
        if ((st = add_lin(out, in, c->bottom[i], true)) != HS_OK) return st;
        in = c->bottom[i];
      }
      if ((st = add_lin(out, in, D, true)) != HS_OK) return st;
      out->first_top = out->n_lin;
      out->deep_in = D + F * (F + 1) / 2;
      in = out->deep_in;
      for (int i = 0; i < c->n_deep; i++) {
        if ((st = add_lin(out, in, c->deep[i], true)) != HS_OK) return st;
        in = c->deep[i];
      }
      if ((st = add_lin(out, in, 1, false)) != HS_OK) return st;
      break;
    }
  }
  out->lin_w = out->n_params;
  if (c->kind != HS_CTR_DLRM) out->n_params += (size_t)c->n_dense + 1;
  return HS_OK;
}

/* Layer numbers of CTR initial weights start here, clear of the GNN
 * layers' (hs_train.h keys init draws by layer). */
#define CTR_INIT_LAYER 100u

void hs__ctr_init_params(const hs_ctr_model_cfg *cfg, const hs_ctr_layout *lay, float *params) {
  memset(params, 0, lay->n_params * sizeof *params);
  for (int l = 0; l < lay->n_lin; l++) {
    const hs_ctr_lin *x = &lay->lin[l];
    float limit = (float)sqrt(6.0 / ((double)x->in + (double)x->out));
    size_t n = (size_t)x->in * (size_t)x->out;
    for (size_t e = 0; e < n; e++) {
      float u = hs_philox_unit(hs_train_word(cfg->seed, 0, 0, HS_RNG_PURPOSE_INIT,
                                             CTR_INIT_LAYER + (uint32_t)l, (uint32_t)e));
      params[x->w + e] = (2.0f * u - 1.0f) * limit;
    }
  }
}

/* Each unique's list: its occurrences, none missing, in increasing order. */
static hs_status check_lists(const hs_ctr_batch *b, int64_t occ) {
  if (b->occ_ptr[0] != 0 || b->occ_ptr[b->n_unique] != occ)
    return hs__fail(HS_ERR_FORMAT, "CTR batch: occurrence lists cover %d of %lld", b->occ_ptr[b->n_unique],
                    (long long)occ);
  for (int32_t u = 0; u < b->n_unique; u++) {
    if (b->occ_ptr[u + 1] <= b->occ_ptr[u])
      return hs__fail(HS_ERR_FORMAT, "CTR batch: row %d has no occurrence", u);
    for (int32_t k = b->occ_ptr[u]; k < b->occ_ptr[u + 1]; k++) {
      int32_t o = b->occ[k];
      if (o < 0 || o >= occ || b->idx[o] != u || (k > b->occ_ptr[u] && o <= b->occ[k - 1]))
        return hs__fail(HS_ERR_FORMAT, "CTR batch: occurrence list of row %d is wrong at %d", u, k);
    }
  }
  return HS_OK;
}

hs_status hs__ctr_batch_validate(const hs_ctr_layout *lay, const hs_ctr_model_cfg *cfg,
                                 const hs_ctr_batch *b) {
  (void)lay;
  int64_t occ = (int64_t)b->n * cfg->n_fields;
  if (b->n < 1 || b->n_unique < 0 || b->n_unique > occ)
    return hs__fail(HS_ERR_INVALID_ARG, "CTR batch: %d examples, %d unique rows", b->n, b->n_unique);
  for (int64_t i = 0; i < occ; i++)
    if (b->idx[i] < 0 || b->idx[i] >= b->n_unique)
      return hs__fail(HS_ERR_FORMAT, "CTR batch: occurrence %lld names row %d of %d", (long long)i,
                      b->idx[i], b->n_unique);
  if (!b->occ_ptr != !b->occ)
    return hs__fail(HS_ERR_INVALID_ARG, "CTR batch: occurrence lists without their %s",
                    b->occ ? "offsets" : "entries");
  hs_status st = b->occ ? check_lists(b, occ) : HS_OK;
  if (st != HS_OK) return st;
  if (b->labels)
    for (int32_t i = 0; i < b->n; i++)
      if (b->labels[i] != 0.0f && b->labels[i] != 1.0f)
        return hs__fail(HS_ERR_FORMAT, "CTR batch: example %d has label %g", i, (double)b->labels[i]);
  return HS_OK;
}
