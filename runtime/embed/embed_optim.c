/* Initial rows and the sparse optimizers: one row and its state at a
 * time, in a fixed arithmetic order, so that an update is the same bits
 * on any thread. */
#include <math.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "embed/embed_int.h"
#include "rng/philox.h"

/* Counter of a row's initial values: (id_lo, id_hi, EMBED << 24 | table,
 * element / 4), a top byte no other user of the seed's streams puts in
 * the third word (cl_kernels/hs_sample_rng.h, hs_train.h). */
#define EMBED_INIT_TAG 0x45u

void hs__embed_init_row(const hs_embed *e, int32_t table, uint64_t id, uint32_t *rec) {
  int32_t d = e->cfg.dim;
  float *w = hs__embed_rec_row(rec), *state = w + d;
  const hs_embed_optim_cfg *o = &e->cfg.optim;
  if (o->kind == HS_EMBED_FTRL) {
    for (int32_t k = 0; k < d; k++) w[k] = 0.0f;
  } else {
    float r = e->cfg.init_range;
    hs_philox_ctr c = {{0, 0, 0, 0}};
    for (int32_t k = 0; k < d; k++) {
      if ((k & 3) == 0)
        c = hs_philox_draw(e->cfg.seed, (uint32_t)id, (uint32_t)(id >> 32),
                           EMBED_INIT_TAG << 24 | (uint32_t)table, (uint32_t)k >> 2);
      w[k] = (2.0f * hs_philox_unit(c.v[k & 3]) - 1.0f) * r;
    }
  }
  int32_t sw = e->state_w;
  for (int32_t k = 0; k < sw; k++) state[k] = 0.0f;
  if (o->kind == HS_EMBED_ADAGRAD) state[0] = o->initial_accumulator;
  if (o->kind == HS_EMBED_ADAGRAD_EW)
    for (int32_t k = 0; k < sw; k++) state[k] = o->initial_accumulator;
}

static void sgd(const hs_embed_optim_cfg *o, int32_t d, float *w, const float *g) {
  for (int32_t k = 0; k < d; k++) w[k] -= o->lr * (g[k] + o->weight_decay * w[k]);
}

/* Row-wise Adagrad: one accumulator per row, of the mean squared gradient
 * (the row-wise variant of large recommendation models: one float of
 * state instead of dim). */
static void adagrad(const hs_embed_optim_cfg *o, int32_t d, float *w, float *s, const float *g) {
  float sq = 0.0f;
  for (int32_t k = 0; k < d; k++) {
    float gk = g[k] + o->weight_decay * w[k];
    sq += gk * gk;
  }
  s[0] += sq / (float)d;
  float step = o->lr / (sqrtf(s[0]) + o->eps);
  for (int32_t k = 0; k < d; k++) w[k] -= step * (g[k] + o->weight_decay * w[k]);
}

/* Element-wise Adagrad: an accumulator per coordinate, so a coordinate
 * whose gradients are small keeps larger steps than its row's others
 * (what dot-product interactions, which read each coordinate on its own,
 * learn better with). */
static void adagrad_ew(const hs_embed_optim_cfg *o, int32_t d, float *w, float *s, const float *g) {
  int32_t k = 0;
#ifdef __SSE2__
  /* Four coordinates at a time, each in the order of the loop below
   * (square root and division are correctly rounded either way, and
   * nothing is fused): the same bits, without a scalar square root and
   * division per coordinate on the trainer's path between steps. */
  const __m128 wd = _mm_set1_ps(o->weight_decay), lr = _mm_set1_ps(o->lr), eps = _mm_set1_ps(o->eps);
  for (; k + 4 <= d; k += 4) {
    __m128 wk = _mm_loadu_ps(w + k);
    __m128 gk = _mm_add_ps(_mm_loadu_ps(g + k), _mm_mul_ps(wd, wk));
    __m128 sk = _mm_add_ps(_mm_loadu_ps(s + k), _mm_mul_ps(gk, gk));
    _mm_storeu_ps(s + k, sk);
    wk = _mm_sub_ps(wk, _mm_div_ps(_mm_mul_ps(lr, gk), _mm_add_ps(_mm_sqrt_ps(sk), eps)));
    _mm_storeu_ps(w + k, wk);
  }
#endif
  for (; k < d; k++) {
    float gk = g[k] + o->weight_decay * w[k];
    s[k] += gk * gk;
    w[k] -= o->lr * gk / (sqrtf(s[k]) + o->eps);
  }
}

/* Lazy Adam: moments of touched rows only, each row with its own step
 * count for the bias corrections (a row seen t times is corrected as if
 * the optimizer had run t steps on it). State: m[d], v[d], t. */
static void adam(const hs_embed_optim_cfg *o, int32_t d, float *w, float *s, const float *g) {
  float *m = s, *v = s + d, *tp = s + 2 * d;
  uint32_t t;
  memcpy(&t, tp, sizeof t);
  t = t == UINT32_MAX ? t : t + 1;
  memcpy(tp, &t, sizeof t);
  float bc1 = (float)(1.0 - pow((double)o->beta1, (double)t));
  float inv_sqrt_bc2 = (float)(1.0 / sqrt(1.0 - pow((double)o->beta2, (double)t)));
  float lr = o->lr / bc1;
  for (int32_t k = 0; k < d; k++) {
    float gk = g[k] + o->weight_decay * w[k];
    m[k] = o->beta1 * m[k] + (1.0f - o->beta1) * gk;
    v[k] = o->beta2 * v[k] + (1.0f - o->beta2) * gk * gk;
    w[k] -= lr * m[k] / (sqrtf(v[k]) * inv_sqrt_bc2 + o->eps);
  }
}

/* FTRL-Proximal (McMahan et al., 2013), per coordinate; the row holds the
 * weights the accumulators z, n give, so lookups copy it as it is. */
static void ftrl(const hs_embed_optim_cfg *o, int32_t d, float *w, float *s, const float *g) {
  float *z = s, *n = s + d;
  for (int32_t k = 0; k < d; k++) {
    float gk = g[k];
    float n_new = n[k] + gk * gk;
    float sigma = (sqrtf(n_new) - sqrtf(n[k])) / o->ftrl_alpha;
    z[k] += gk - sigma * w[k];
    n[k] = n_new;
    float zk = z[k];
    if (fabsf(zk) <= o->ftrl_l1) {
      w[k] = 0.0f;
    } else {
      float sgn = zk < 0.0f ? -1.0f : 1.0f;
      w[k] = -(zk - sgn * o->ftrl_l1) / ((o->ftrl_beta + sqrtf(n_new)) / o->ftrl_alpha + o->ftrl_l2);
    }
  }
}

void hs__embed_update_row(const hs_embed_optim_cfg *o, int32_t dim, float *w, float *state,
                          const float *g) {
  switch (o->kind) {
    case HS_EMBED_SGD: sgd(o, dim, w, g); break;
    case HS_EMBED_ADAGRAD: adagrad(o, dim, w, state, g); break;
    case HS_EMBED_ADAM: adam(o, dim, w, state, g); break;
    case HS_EMBED_FTRL: ftrl(o, dim, w, state, g); break;
    case HS_EMBED_ADAGRAD_EW: adagrad_ew(o, dim, w, state, g); break;
    default: break;
  }
}
