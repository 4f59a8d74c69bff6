/* Plain-C references of the CTR models (see ctr_model.h): written for
 * obviousness. Sums run in the order the kernels use (cl_kernels/ctr.cl),
 * so most results agree with the device bit for bit; products go through
 * the GEMM reference, which a provider's blocking may round differently. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ctr/ctr_model.h"
#include "nn/ref_nn.h"

void hs__ctr_ref_head(const float *dense, const float *rows, const int32_t *idx, int32_t n,
                      int32_t n_dense, int32_t n_fields, int32_t row, int32_t col, int32_t dim,
                      const float *wc, const float *deep, float *logit) {
  for (int32_t b = 0; b < n; b++) {
    const float *x = dense + (size_t)b * (size_t)n_dense;
    const int32_t *ib = idx + (size_t)b * (size_t)n_fields;
    float acc = wc[n_dense];
    for (int32_t j = 0; j < n_dense; j++) acc += x[j] * wc[j];
    for (int32_t f = 0; f < n_fields; f++) acc += rows[(size_t)ib[f] * (size_t)row + (size_t)col];
    if (dim > 0) {
      float a = 0.0f, q = 0.0f;
      for (int32_t k = 0; k < dim; k++) {
        float s = 0.0f;
        for (int32_t f = 0; f < n_fields; f++) s += rows[(size_t)ib[f] * (size_t)row + (size_t)k];
        a += s * s;
      }
      for (int32_t f = 0; f < n_fields; f++)
        for (int32_t k = 0; k < dim; k++) {
          float e = rows[(size_t)ib[f] * (size_t)row + (size_t)k];
          q += e * e;
        }
      acc += 0.5f * (a - q);
    }
    if (deep) acc += deep[b];
    logit[b] = acc;
  }
}

void hs__ctr_ref_loss(const float *logit, const float *labels, int32_t n, float *loss_rows,
                      float *dlogit) {
  float inv_n = 1.0f / (float)n;
  for (int32_t b = 0; b < n; b++) {
    float l = logit[b], y = labels[b];
    float p = 1.0f / (1.0f + expf(-l));
    loss_rows[b] = fmaxf(l, 0.0f) - l * y + log1pf(expf(-fabsf(l)));
    dlogit[b] = (p - y) * inv_n;
  }
}

void hs__ctr_ref_interact(const float *z, const float *rows, const int32_t *idx, int32_t n,
                          int32_t n_fields, int32_t dim, float *out) {
  int32_t width = dim + n_fields * (n_fields + 1) / 2;
  for (int32_t b = 0; b < n; b++) {
    float *o = out + (size_t)b * (size_t)width;
    const float *zb = z + (size_t)b * (size_t)dim;
    const int32_t *ib = idx + (size_t)b * (size_t)n_fields;
    memcpy(o, zb, (size_t)dim * sizeof *o);
    int32_t t = dim;
    /* v_0 = z, v_i = row of field i - 1; pairs (i, j), i > j, row by row. */
    for (int32_t i = 1; i <= n_fields; i++) {
      const float *vi = rows + (size_t)ib[i - 1] * (size_t)dim;
      for (int32_t j = 0; j < i; j++) {
        const float *vj = j == 0 ? zb : rows + (size_t)ib[j - 1] * (size_t)dim;
        float acc = 0.0f;
        for (int32_t k = 0; k < dim; k++) acc += vi[k] * vj[k];
        o[t++] = acc;
      }
    }
  }
}

void hs__ctr_ref_interact_bwd(const float *z, const float *rows, const int32_t *idx, int32_t n,
                              int32_t n_fields, int32_t dim, const float *dout, float *dz,
                              float *dE) {
  int32_t width = dim + n_fields * (n_fields + 1) / 2, N = n_fields + 1;
  for (int32_t b = 0; b < n; b++) {
    const float *d = dout + (size_t)b * (size_t)width, *dt = d + dim;
    const float *zb = z + (size_t)b * (size_t)dim;
    const int32_t *ib = idx + (size_t)b * (size_t)n_fields;
    for (int32_t i = 0; i < N; i++) {
      float *out = i == 0 ? dz + (size_t)b * (size_t)dim
                          : dE + ((size_t)b * (size_t)n_fields + (size_t)(i - 1)) * (size_t)dim;
      for (int32_t k = 0; k < dim; k++) {
        /* Over the other vectors in increasing order: the pair (i, j) is
         * t(max, min) = max (max - 1) / 2 + min. */
        float acc = 0.0f;
        for (int32_t j = 0; j < N; j++) {
          if (j == i) continue;
          int32_t hi = i > j ? i : j, lo = i > j ? j : i;
          float vj = j == 0 ? zb[k] : rows[(size_t)ib[j - 1] * (size_t)dim + (size_t)k];
          acc += dt[hi * (hi - 1) / 2 + lo] * vj;
        }
        out[k] = i == 0 ? d[k] + acc : acc;
      }
    }
  }
}

/* ---- whole passes --------------------------------------------------------------- */

/* Buffers of one pass: in[l] the input of linear layer l, out[l] its
 * output (in[l + 1] = out[l], except the DLRM top's first input, the
 * interaction). */
typedef struct ref_work {
  float *in[HS_CTR_MAX_LIN], *out[HS_CTR_MAX_LIN];
  float *first_in; /* in[0] (DeepFM: [e, x]; DLRM: x) */
  float *inter;    /* DLRM: the top's input */
  float *logit, *loss_rows, *dlogit;
} ref_work;

static void free_work(ref_work *w) {
  for (int l = 0; l < HS_CTR_MAX_LIN; l++) free(w->out[l]);
  free(w->first_in);
  free(w->inter);
  free(w->logit);
  free(w->loss_rows);
  free(w->dlogit);
  memset(w, 0, sizeof *w);
}

static hs_status alloc_work(const hs_ctr_model_cfg *c, const hs_ctr_layout *lay, int32_t n,
                            ref_work *w) {
  size_t N = (size_t)n;
  bool ok = true;
  for (int l = 0; l < lay->n_lin; l++) {
    w->out[l] = malloc(N * (size_t)lay->lin[l].out * sizeof(float));
    ok &= w->out[l] != NULL;
  }
  if (lay->n_lin) {
    w->first_in = malloc(N * (size_t)lay->lin[0].in * sizeof(float));
    ok &= w->first_in != NULL;
  }
  if (c->kind == HS_CTR_DLRM) {
    w->inter = malloc(N * (size_t)lay->deep_in * sizeof(float));
    ok &= w->inter != NULL;
  }
  for (int l = 0; l < lay->n_lin; l++)
    w->in[l] = l == 0 ? w->first_in : (c->kind == HS_CTR_DLRM && l == lay->first_top) ? w->inter
                                                                                       : w->out[l - 1];
  w->logit = malloc(N * sizeof(float));
  w->loss_rows = malloc(N * sizeof(float));
  w->dlogit = malloc(N * sizeof(float));
  ok &= w->logit && w->loss_rows && w->dlogit;
  return ok ? HS_OK : hs__fail(HS_ERR_NOMEM, "CTR reference");
}

static void mlp_forward(const hs_ctr_layout *lay, const float *p, int first, int last, int32_t n,
                        ref_work *w) {
  for (int l = first; l < last; l++) {
    const hs_ctr_lin *x = &lay->lin[l];
    hs__ref_gemm(false, false, (size_t)n, (size_t)x->out, (size_t)x->in, 1.0f, w->in[l],
                 (size_t)x->in, p + x->w, (size_t)x->out, 0.0f, w->out[l], (size_t)x->out);
    hs__ref_bias_act_fwd(w->out[l], n, x->out, p + x->b, x->relu, 0.0f, 0, 0, 0, 0);
  }
}

/* Backward through layers [first, last) from the gradient at out[last - 1]
 * (`d`, overwritten); the gradient at in[first] into `din` when not NULL. */
static hs_status mlp_backward(const hs_ctr_layout *lay, const float *p, int first, int last,
                              int32_t n, ref_work *w, float *d, float *grads, float *din) {
  float *cur = d;
  hs_status st = HS_OK;
  for (int l = last - 1; l >= first; l--) {
    const hs_ctr_lin *x = &lay->lin[l];
    if (x->relu) hs__ref_act_bwd(w->out[l], n, x->out, 1.0f, cur);
    hs__ref_colsum(cur, n, x->out, grads + x->b);
    hs__ref_gemm(true, false, (size_t)x->in, (size_t)x->out, (size_t)n, 1.0f, w->in[l],
                 (size_t)x->in, cur, (size_t)x->out, 0.0f, grads + x->w, (size_t)x->out);
    if (l == first && !din) break;
    float *prev = l == first ? din : malloc((size_t)n * (size_t)x->in * sizeof *prev);
    if (!prev) {
      st = hs__fail(HS_ERR_NOMEM, "CTR reference");
      break;
    }
    hs__ref_gemm(false, true, (size_t)n, (size_t)x->in, (size_t)x->out, 1.0f, cur, (size_t)x->out,
                 p + x->w, (size_t)x->out, 0.0f, prev, (size_t)x->in);
    if (cur != d) free(cur);
    cur = prev;
  }
  if (cur != d && cur != din) free(cur);
  return st;
}

static hs_status forward(const hs_ctr_model_cfg *c, const hs_ctr_layout *lay, const float *p,
                         const hs_ctr_batch *b, ref_work *w) {
  hs_status st = alloc_work(c, lay, b->n, w);
  if (st != HS_OK) return st;
  int32_t n = b->n, F = c->n_fields, D = c->dim, R = lay->row;
  switch (c->kind) {
    case HS_CTR_LR:
      hs__ctr_ref_head(b->dense, b->rows, b->idx, n, c->n_dense, F, R, 0, 0, p + lay->lin_w, NULL,
                       w->logit);
      break;
    case HS_CTR_DEEPFM:
      for (int32_t i = 0; i < n; i++) {
        float *o = w->first_in + (size_t)i * (size_t)lay->deep_in;
        for (int32_t f = 0; f < F; f++)
          memcpy(o + (size_t)f * (size_t)D,
                 b->rows + (size_t)b->idx[(size_t)i * (size_t)F + (size_t)f] * (size_t)R,
                 (size_t)D * sizeof *o);
        memcpy(o + (size_t)F * (size_t)D, b->dense + (size_t)i * (size_t)c->n_dense,
               (size_t)c->n_dense * sizeof *o);
      }
      mlp_forward(lay, p, 0, lay->n_lin, n, w);
      hs__ctr_ref_head(b->dense, b->rows, b->idx, n, c->n_dense, F, R, D, D, p + lay->lin_w,
                       w->out[lay->n_lin - 1], w->logit);
      break;
    case HS_CTR_DLRM:
      memcpy(w->first_in, b->dense, (size_t)n * (size_t)c->n_dense * sizeof(float));
      mlp_forward(lay, p, 0, lay->first_top, n, w);
      hs__ctr_ref_interact(w->out[lay->first_top - 1], b->rows, b->idx, n, F, D, w->inter);
      mlp_forward(lay, p, lay->first_top, lay->n_lin, n, w);
      memcpy(w->logit, w->out[lay->n_lin - 1], (size_t)n * sizeof(float));
      break;
  }
  return HS_OK;
}

hs_status hs__ctr_ref_forward(const hs_ctr_model_cfg *cfg, const hs_ctr_layout *lay,
                              const float *params, const hs_ctr_batch *b, float *logits) {
  hs_status st = hs__ctr_batch_validate(lay, cfg, b);
  if (st != HS_OK) return st;
  ref_work w = {0};
  st = forward(cfg, lay, params, b, &w);
  if (st == HS_OK) memcpy(logits, w.logit, (size_t)b->n * sizeof *logits);
  free_work(&w);
  return st;
}

void hs__ctr_ref_segment_sum(const float *dE, const int32_t *occ_ptr, const int32_t *occ,
                             int32_t n_unique, int32_t row, float *out) {
  for (int32_t u = 0; u < n_unique; u++)
    for (int32_t k = 0; k < row; k++) {
      float acc = 0.0f;
      for (int32_t o = occ_ptr[u]; o < occ_ptr[u + 1]; o++)
        acc += dE[(size_t)occ[o] * (size_t)row + (size_t)k];
      out[(size_t)u * (size_t)row + (size_t)k] = acc;
    }
}

void hs__ctr_ref_head_bwd(const float *dense, const float *dlogit, int32_t n, int32_t n_dense,
                          float *wc_grads) {
  float *m = malloc((size_t)n * (size_t)(n_dense + 1) * sizeof *m);
  if (!m) return;
  for (int32_t b = 0; b < n; b++) {
    for (int32_t j = 0; j < n_dense; j++)
      m[(size_t)b * (size_t)(n_dense + 1) + (size_t)j] = dense[(size_t)b * (size_t)n_dense + (size_t)j] * dlogit[b];
    m[(size_t)b * (size_t)(n_dense + 1) + (size_t)n_dense] = dlogit[b];
  }
  hs__ref_colsum(m, n, n_dense + 1, wc_grads);
  free(m);
}

void hs__ctr_ref_fm_sums(const float *rows, int32_t row, const int32_t *idx, int32_t n,
                         int32_t n_fields, int32_t dim, float *s) {
  for (int32_t i = 0; i < n; i++)
    for (int32_t k = 0; k < dim; k++) {
      float sum = 0.0f;
      for (int32_t f = 0; f < n_fields; f++)
        sum += rows[(size_t)idx[(size_t)i * (size_t)n_fields + (size_t)f] * (size_t)row + (size_t)k];
      s[(size_t)i * (size_t)dim + (size_t)k] = sum;
    }
}

void hs__ctr_ref_fm_bwd(const float *rows, int32_t row, const int32_t *idx, int32_t n,
                        int32_t n_fields, int32_t dim, const float *dlogit, const float *d_in,
                        int32_t d_in_width, float *dE) {
  size_t R = (size_t)row, F = (size_t)n_fields;
  for (int32_t i = 0; i < n; i++) {
    const int32_t *ib = idx + (size_t)i * F;
    float g = dlogit[i];
    for (int32_t k = 0; k < dim; k++) {
      float s = 0.0f;
      for (size_t f = 0; f < F; f++) s += rows[(size_t)ib[f] * R + (size_t)k];
      for (size_t f = 0; f < F; f++) {
        float e = rows[(size_t)ib[f] * R + (size_t)k];
        dE[((size_t)i * F + f) * R + (size_t)k] =
            g * (s - e) + d_in[(size_t)i * (size_t)d_in_width + f * (size_t)dim + (size_t)k];
      }
    }
    for (size_t f = 0; f < F; f++) dE[((size_t)i * F + f) * R + (size_t)dim] = g;
  }
}

hs_status hs__ctr_ref_gradients(const hs_ctr_model_cfg *c, const hs_ctr_layout *lay,
                                const float *p, const hs_ctr_batch *b, float *grads,
                                float *row_grads, float *loss) {
  hs_status st = hs__ctr_batch_validate(lay, c, b);
  if (st != HS_OK) return st;
  if (!b->labels) return hs__fail(HS_ERR_INVALID_ARG, "CTR reference: no labels");
  ref_work w = {0};
  int32_t n = b->n, F = c->n_fields, D = c->dim, R = lay->row;
  size_t occ = (size_t)n * (size_t)F;
  float *dE = calloc(occ * (size_t)R, sizeof *dE), *dtmp = NULL;
  if (!dE) return hs__fail(HS_ERR_NOMEM, "CTR reference");
  if ((st = forward(c, lay, p, b, &w)) != HS_OK) goto done;
  memset(grads, 0, lay->n_params * sizeof *grads);
  hs__ctr_ref_loss(w.logit, b->labels, n, w.loss_rows, w.dlogit);
  float sum = 0.0f;
  for (int32_t i = 0; i < n; i++) sum += w.loss_rows[i];
  *loss = sum / (float)n;
  switch (c->kind) {
    case HS_CTR_LR:
      hs__ctr_ref_head_bwd(b->dense, w.dlogit, n, c->n_dense, grads + lay->lin_w);
      for (size_t o = 0; o < occ; o++) dE[o] = w.dlogit[o / (size_t)F];
      break;
    case HS_CTR_DEEPFM: {
      hs__ctr_ref_head_bwd(b->dense, w.dlogit, n, c->n_dense, grads + lay->lin_w);
      /* The deep part's output gradient is dlogit; its input gradient goes
       * to the embedding columns. */
      float *dout = malloc((size_t)n * sizeof *dout);
      dtmp = malloc((size_t)n * (size_t)lay->deep_in * sizeof *dtmp);
      if (!dout || !dtmp) {
        free(dout);
        st = hs__fail(HS_ERR_NOMEM, "CTR reference");
        goto done;
      }
      memcpy(dout, w.dlogit, (size_t)n * sizeof *dout);
      st = mlp_backward(lay, p, 0, lay->n_lin, n, &w, dout, grads, dtmp);
      free(dout);
      if (st != HS_OK) goto done;
      hs__ctr_ref_fm_bwd(b->rows, R, b->idx, n, F, D, w.dlogit, dtmp, lay->deep_in, dE);
      break;
    }
    case HS_CTR_DLRM: {
      float *dout = malloc((size_t)n * sizeof *dout);
      float *dI = malloc((size_t)n * (size_t)lay->deep_in * sizeof *dI);
      float *dz = malloc((size_t)n * (size_t)D * sizeof *dz);
      if (!dout || !dI || !dz) {
        free(dout), free(dI), free(dz);
        st = hs__fail(HS_ERR_NOMEM, "CTR reference");
        goto done;
      }
      memcpy(dout, w.dlogit, (size_t)n * sizeof *dout);
      st = mlp_backward(lay, p, lay->first_top, lay->n_lin, n, &w, dout, grads, dI);
      if (st == HS_OK) {
        hs__ctr_ref_interact_bwd(w.out[lay->first_top - 1], b->rows, b->idx, n, F, D, dI, dz, dE);
        st = mlp_backward(lay, p, 0, lay->first_top, n, &w, dz, grads, NULL);
      }
      free(dout), free(dI), free(dz);
      if (st != HS_OK) goto done;
      break;
    }
  }
  hs__ctr_ref_segment_sum(dE, b->occ_ptr, b->occ, b->n_unique, R, row_grads);
done:
  free(dE);
  free(dtmp);
  free_work(&w);
  return st;
}
