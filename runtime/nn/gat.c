/* GAT (gat.h): its table, layout, initial parameters, the plain-C
 * references of its kernels and its reference passes, in the order the
 * device passes (gat_dev.c) run them. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "hs_programs.h"
#include "nn/gat.h"
#include "nn/nn_rng.h"
#include "nn/ref_nn.h"

/* ---- layout ------------------------------------------------------------------ */

static hs_status gat_layout(const hs_model_cfg *cfg, hs_model_shape *sh) {
  if (cfg->heads < 1 || cfg->heads > HS_NN_MAX_HEADS)
    return hs__fail(HS_ERR_INVALID_ARG, "model: heads %d (need 1..%d)", cfg->heads,
                    HS_NN_MAX_HEADS);
  sh->heads = cfg->heads;
  if (sh->n_layers > 1 && sh->dims[1] % cfg->heads != 0)
    return hs__fail(HS_ERR_INVALID_ARG, "model: hidden %d is not a multiple of the %d heads",
                    sh->dims[1], cfg->heads);
  size_t off = 0;
  for (int l = 0; l < sh->n_layers; l++) {
    hs_gat_dims g = hs__gat_dims(sh, l);
    size_t hf = (size_t)g.heads * (size_t)g.f, w = (size_t)sh->dims[l] * hf;
    sh->layer_off[l] = off;
    sh->w_off[l] = off;
    sh->a_off[l] = off + w;
    sh->b_off[l] = off + w + 2 * hf;
    sh->layer_n[l] = w + 2 * hf + (size_t)sh->dims[l + 1];
    off += sh->layer_n[l];
  }
  sh->n_params = off;
  return HS_OK;
}

/* Glorot-uniform W (fan d_in + HF) and attention vectors (each head's a
 * column of F: fan F + 1), drawn after W's elements in the layer's
 * stream; zero bias. */
static void gat_init(const hs_model_shape *sh, uint64_t seed, float *params) {
  for (int l = 0; l < sh->n_layers; l++) {
    hs_gat_dims g = hs__gat_dims(sh, l);
    size_t hf = (size_t)g.heads * (size_t)g.f, w = (size_t)sh->dims[l] * hf;
    hs__glorot_fill(params + sh->w_off[l], w, seed, l, 0, sh->dims[l], (double)hf);
    hs__glorot_fill(params + sh->a_off[l], 2 * hf, seed, l, w, g.f, 1);
    memset(params + sh->b_off[l], 0, sizeof(float) * (size_t)sh->dims[l + 1]);
  }
}

/* ---- kernel references ----------------------------------------------------------- */

static float leaky(float x) { return x > 0.0f ? x : x * HS_GAT_SLOPE; }

void hs__ref_gat_scores(const float *y, const float *att, int32_t n_src, int32_t n_dst,
                        int32_t heads, int32_t f, float *el, float *er) {
  size_t hf = (size_t)heads * (size_t)f;
  for (int32_t j = 0; j < n_src; j++)
    for (int32_t h = 0; h < heads; h++) {
      const float *row = y + (size_t)j * hf + (size_t)h * (size_t)f;
      const float *al = att + (size_t)h * (size_t)f, *ar = al + hf;
      float sl = 0.0f, sr = 0.0f;
      for (int32_t k = 0; k < f; k++) sl += row[k] * al[k];
      el[(size_t)j * heads + h] = sl;
      if (j >= n_dst) continue;
      for (int32_t k = 0; k < f; k++) sr += row[k] * ar[k];
      er[(size_t)j * heads + h] = sr;
    }
}

void hs__ref_gat_softmax(const hs_nn_block *b, const float *el, const float *er, int32_t heads,
                         float *a_self, float *a_edge) {
  for (int32_t i = 0; i < b->n_dst; i++)
    for (int32_t h = 0; h < heads; h++) {
      size_t g = (size_t)i * heads + h;
      int32_t lo = b->row_ptr[i], hi = b->row_ptr[i + 1];
      float r = er[g], self = leaky(el[g] + r), mx = self;
      for (int32_t e = lo; e < hi; e++) {
        float s = leaky(el[(size_t)b->col[e] * heads + h] + r);
        if (s > mx) mx = s;
      }
      float sum = expf(self - mx);
      for (int32_t e = lo; e < hi; e++) sum += expf(leaky(el[(size_t)b->col[e] * heads + h] + r) - mx);
      a_self[g] = expf(self - mx) / sum;
      for (int32_t e = lo; e < hi; e++)
        a_edge[(size_t)e * heads + h] = expf(leaky(el[(size_t)b->col[e] * heads + h] + r) - mx) / sum;
    }
}

void hs__ref_gat_agg_fwd(const hs_nn_block *b, const float *y, const float *a_self,
                         const float *a_edge, int32_t heads, int32_t f, float *z) {
  size_t hf = (size_t)heads * (size_t)f;
  for (int32_t i = 0; i < b->n_dst; i++)
    for (size_t c = 0; c < hf; c++) {
      size_t h = c / (size_t)f;
      float acc = a_self[(size_t)i * heads + h] * y[(size_t)i * hf + c];
      for (int32_t e = b->row_ptr[i]; e < b->row_ptr[i + 1]; e++)
        acc += a_edge[(size_t)e * heads + h] * y[(size_t)b->col[e] * hf + c];
      z[(size_t)i * hf + c] = acc;
    }
}

void hs__ref_gat_head_mean(const float *z, int32_t n, int32_t heads, int32_t f, float *out) {
  size_t hf = (size_t)heads * (size_t)f;
  for (size_t i = 0; i < (size_t)n; i++)
    for (size_t k = 0; k < (size_t)f; k++) {
      float acc = 0.0f;
      for (int32_t h = 0; h < heads; h++) acc += z[i * hf + (size_t)h * (size_t)f + k];
      out[i * (size_t)f + k] = acc / (float)heads;
    }
}

void hs__ref_gat_head_mean_bwd(const float *dout, int32_t n, int32_t heads, int32_t f,
                               float *dz) {
  size_t hf = (size_t)heads * (size_t)f;
  for (size_t i = 0; i < (size_t)n; i++)
    for (size_t c = 0; c < hf; c++) dz[i * hf + c] = dout[i * (size_t)f + c % (size_t)f] / (float)heads;
}

void hs__ref_gat_bwd_score(const hs_nn_block *b, const float *y, const float *dz,
                           const float *el, const float *er, const float *a_self,
                           const float *a_edge, int32_t heads, int32_t f, float *g_self,
                           float *g_edge, float *der) {
  size_t hf = (size_t)heads * (size_t)f;
  for (int32_t i = 0; i < b->n_dst; i++)
    for (int32_t h = 0; h < heads; h++) {
      size_t g = (size_t)i * heads + h;
      int32_t lo = b->row_ptr[i], hi = b->row_ptr[i + 1];
      const float *dzi = dz + (size_t)i * hf + (size_t)h * (size_t)f;
      float dot = 0.0f;
      for (int32_t k = 0; k < f; k++) dot += dzi[k] * y[(size_t)i * hf + (size_t)h * (size_t)f + (size_t)k];
      g_self[g] = dot;
      float total = a_self[g] * dot;
      for (int32_t e = lo; e < hi; e++) {
        const float *yj = y + (size_t)b->col[e] * hf + (size_t)h * (size_t)f;
        float d = 0.0f;
        for (int32_t k = 0; k < f; k++) d += dzi[k] * yj[k];
        g_edge[(size_t)e * heads + h] = d;
        total += a_edge[(size_t)e * heads + h] * d;
      }
      float r = er[g], pre = el[g] + r;
      float gs = a_self[g] * (g_self[g] - total);
      gs = pre > 0.0f ? gs : gs * HS_GAT_SLOPE;
      g_self[g] = gs;
      float sum = gs;
      for (int32_t e = lo; e < hi; e++) {
        size_t ge = (size_t)e * heads + h;
        float p = el[(size_t)b->col[e] * heads + h] + r;
        float d = a_edge[ge] * (g_edge[ge] - total);
        d = p > 0.0f ? d : d * HS_GAT_SLOPE;
        g_edge[ge] = d;
        sum += d;
      }
      der[g] = sum;
    }
}

void hs__ref_gat_bwd_del(const hs_nn_block *b, const int32_t *t_ptr, const int32_t *t_eid,
                         const float *g_self, const float *g_edge, int32_t heads, float *del) {
  for (int32_t j = 0; j < b->n_src; j++)
    for (int32_t h = 0; h < heads; h++) {
      size_t g = (size_t)j * heads + h;
      float acc = j < b->n_dst ? g_self[g] : 0.0f;
      for (int32_t q = t_ptr[j]; q < t_ptr[j + 1]; q++) acc += g_edge[(size_t)t_eid[q] * heads + h];
      del[g] = acc;
    }
}

void hs__ref_gat_bwd_y(const hs_nn_block *b, const int32_t *t_ptr, const int32_t *t_eid,
                       const int32_t *edst, const float *dz, const float *a_self,
                       const float *a_edge, const float *del, const float *der,
                       const float *att, int32_t heads, int32_t f, float *dy) {
  size_t hf = (size_t)heads * (size_t)f;
  const float *al = att, *ar = att + hf;
  for (int32_t j = 0; j < b->n_src; j++)
    for (size_t c = 0; c < hf; c++) {
      size_t h = c / (size_t)f;
      bool dst = j < b->n_dst;
      float acc = dst ? a_self[(size_t)j * heads + h] * dz[(size_t)j * hf + c] : 0.0f;
      for (int32_t q = t_ptr[j]; q < t_ptr[j + 1]; q++) {
        int32_t e = t_eid[q];
        acc += a_edge[(size_t)e * heads + h] * dz[(size_t)edst[e] * hf + c];
      }
      acc += del[(size_t)j * heads + h] * al[c];
      if (dst) acc += der[(size_t)j * heads + h] * ar[c];
      dy[(size_t)j * hf + c] = acc;
    }
}

void hs__ref_gat_att_grad(const float *y, const float *s, int32_t n, int32_t heads, int32_t f,
                          float *out) {
  size_t hf = (size_t)heads * (size_t)f;
  for (size_t c = 0; c < hf; c++) {
    size_t h = c / (size_t)f;
    float acc = 0.0f;
    for (int32_t c0 = 0; c0 < n; c0 += HS_COLSUM_ROWS) {
      float part = 0.0f;
      for (int32_t i = c0; i < n && i < c0 + HS_COLSUM_ROWS; i++)
        part += s[(size_t)i * heads + h] * y[(size_t)i * hf + c];
      acc += part;
    }
    out[c] = acc;
  }
}

/* ---- reference passes ------------------------------------------------------------ */

typedef struct gat_ws {
  float *h[HS_NN_MAX_LAYERS]; /* h[l]: input of layer l >= 1 */
  float *y[HS_NN_MAX_LAYERS], *el[HS_NN_MAX_LAYERS], *er[HS_NN_MAX_LAYERS];
  float *a_self[HS_NN_MAX_LAYERS], *a_edge[HS_NN_MAX_LAYERS];
  float *logits; /* the head mean of the last layer, bias not added */
} gat_ws;

static void gat_ref_free(void *p) {
  gat_ws *ws = p;
  if (!ws) return;
  for (int l = 0; l < HS_NN_MAX_LAYERS; l++) {
    free(ws->h[l]), free(ws->y[l]), free(ws->el[l]), free(ws->er[l]);
    free(ws->a_self[l]), free(ws->a_edge[l]);
  }
  free(ws->logits);
  free(ws);
}

/* Layer l's attention on block `blk` from its input `in`: Y, scores and
 * coefficients into the given arrays, z (n_dst x HF). */
static void layer_fwd(const hs_model_shape *sh, const float *params, int l,
                      const hs_nn_block *blk, const float *in, float *y, float *el, float *er,
                      float *a_self, float *a_edge, float *z) {
  hs_gat_dims g = hs__gat_dims(sh, l);
  size_t hf = (size_t)g.heads * (size_t)g.f, d_in = (size_t)sh->dims[l];
  hs__ref_gemm(false, false, (size_t)blk->n_src, hf, d_in, 1.0f, in, d_in, params + sh->w_off[l],
               hf, 0.0f, y, hf);
  hs__ref_gat_scores(y, params + sh->a_off[l], blk->n_src, blk->n_dst, g.heads, g.f, el, er);
  hs__ref_gat_softmax(blk, el, er, g.heads, a_self, a_edge);
  hs__ref_gat_agg_fwd(blk, y, a_self, a_edge, g.heads, g.f, z);
}

static hs_status gat_ref_forward(const hs_model_shape *sh, const float *params,
                                 const hs_nn_batch *b, const hs_nn_keys *k, void **out_ws,
                                 const float **logits) {
  gat_ws *ws = calloc(1, sizeof *ws);
  *out_ws = ws;
  if (!ws) return hs__fail(HS_ERR_NOMEM, "reference forward");
  int L = sh->n_layers;
  const float *in = b->feat;
  for (int l = 0; l < L; l++) {
    const hs_nn_block *blk = &b->blocks[l];
    hs_gat_dims g = hs__gat_dims(sh, l);
    int64_t hf = (int64_t)g.heads * g.f, ns = blk->n_src, nd = blk->n_dst;
    ws->y[l] = hs__ref_alloc(ns, hf, sizeof(float));
    ws->el[l] = hs__ref_alloc(ns, g.heads, sizeof(float));
    ws->er[l] = hs__ref_alloc(nd, g.heads, sizeof(float));
    ws->a_self[l] = hs__ref_alloc(nd, g.heads, sizeof(float));
    ws->a_edge[l] = hs__ref_alloc(hs__nn_block_edges(blk), g.heads, sizeof(float));
    float *z = hs__ref_alloc(nd, hf, sizeof(float));
    if (l < L - 1)
      ws->h[l + 1] = z;
    else
      ws->logits = hs__ref_alloc(nd, sh->dims[L], sizeof(float));
    if (!ws->y[l] || !ws->el[l] || !ws->er[l] || !ws->a_self[l] || !ws->a_edge[l] || !z ||
        (l == L - 1 && !ws->logits)) {
      if (l == L - 1) free(z);
      return hs__fail(HS_ERR_NOMEM, "reference forward: layer %d, %d rows", l, blk->n_src);
    }
    layer_fwd(sh, params, l, blk, in, ws->y[l], ws->el[l], ws->er[l], ws->a_self[l],
              ws->a_edge[l], z);
    if (l < L - 1) {
      hs__ref_bias_act_fwd(z, blk->n_dst, (int32_t)hf, params + sh->b_off[l], true, k->p,
                           k->seed, k->epoch, k->batch, (uint32_t)l);
    } else {
      hs__ref_gat_head_mean(z, blk->n_dst, g.heads, g.f, ws->logits);
      free(z);
    }
    in = ws->h[l + 1];
  }
  *logits = ws->logits;
  return HS_OK;
}

static hs_status gat_ref_backward(const hs_model_shape *sh, const float *params,
                                  const hs_nn_batch *b, const hs_nn_keys *k, void *p,
                                  const float *dout, float *grads, float *dx) {
  gat_ws *ws = p;
  int L = sh->n_layers;
  float *dz[HS_NN_MAX_LAYERS] = {0};
  hs_status st = HS_OK;
  float scale = hs__dropout_scale(k->p);
  for (int l = L - 1; l >= 0 && st == HS_OK; l--) {
    const hs_nn_block *blk = &b->blocks[l];
    hs_gat_dims g = hs__gat_dims(sh, l);
    int64_t hf = (int64_t)g.heads * g.f, ns = blk->n_src, nd = blk->n_dst;
    int64_t ne = hs__nn_block_edges(blk);
    size_t d_in = (size_t)sh->dims[l];
    const float *h = l == 0 ? b->feat : ws->h[l];
    float *dzh = l == L - 1 ? hs__ref_alloc(nd, hf, sizeof(float)) : NULL;
    float *g_self = hs__ref_alloc(nd, g.heads, sizeof(float)), *g_edge = hs__ref_alloc(ne, g.heads, sizeof(float));
    float *der = hs__ref_alloc(nd, g.heads, sizeof(float)), *del = hs__ref_alloc(ns, g.heads, sizeof(float));
    float *dy = hs__ref_alloc(ns, hf, sizeof(float));
    int32_t *t_ptr = hs__ref_alloc(ns + 1, 1, sizeof(int32_t)), *t_eid = hs__ref_alloc(ne, 1, sizeof(int32_t));
    int32_t *edst = hs__ref_alloc(ne, 1, sizeof(int32_t));
    float *below = l > 0 ? (dz[l - 1] = hs__ref_alloc(ns, (int64_t)d_in, sizeof(float))) : dx;
    if ((l == L - 1 && !dzh) || !g_self || !g_edge || !der || !del || !dy || !t_ptr || !t_eid ||
        !edst || (l > 0 && !below)) {
      st = hs__fail(HS_ERR_NOMEM, "reference backward: layer %d", l);
    } else {
      const float *gz = l == L - 1 ? dzh : dz[l];
      if (l == L - 1) {
        hs__ref_colsum(dout, blk->n_dst, sh->dims[L], grads + sh->b_off[l]);
        hs__ref_gat_head_mean_bwd(dout, blk->n_dst, g.heads, g.f, dzh);
      } else {
        hs__ref_colsum(dz[l], blk->n_dst, (int32_t)hf, grads + sh->b_off[l]);
      }
      hs__ref_gat_bwd_score(blk, ws->y[l], gz, ws->el[l], ws->er[l], ws->a_self[l],
                            ws->a_edge[l], g.heads, g.f, g_self, g_edge, der);
      hs__nn_block_transpose_eid(blk, t_ptr, t_eid, edst);
      hs__ref_gat_bwd_del(blk, t_ptr, t_eid, g_self, g_edge, g.heads, del);
      hs__ref_gat_bwd_y(blk, t_ptr, t_eid, edst, gz, ws->a_self[l], ws->a_edge[l], del, der,
                        params + sh->a_off[l], g.heads, g.f, dy);
      hs__ref_gat_att_grad(ws->y[l], del, blk->n_src, g.heads, g.f, grads + sh->a_off[l]);
      hs__ref_gat_att_grad(ws->y[l], der, blk->n_dst, g.heads, g.f, grads + sh->a_off[l] + hf);
      hs__ref_gemm(true, false, d_in, (size_t)hf, (size_t)ns, 1.0f, h, d_in, dy, (size_t)hf, 0.0f,
                   grads + sh->w_off[l], (size_t)hf);
      if (below) {
        hs__ref_gemm(false, true, (size_t)ns, d_in, (size_t)hf, 1.0f, dy, (size_t)hf,
                     params + sh->w_off[l], (size_t)hf, 0.0f, below, d_in);
        if (l > 0) hs__ref_act_bwd(ws->h[l], blk->n_src, (int32_t)d_in, scale, below);
      }
    }
    free(dzh), free(g_self), free(g_edge), free(der), free(del), free(dy);
    free(t_ptr), free(t_eid), free(edst);
    if (!below) break; /* layer 0 without input gradients */
  }
  for (int l = 0; l < HS_NN_MAX_LAYERS; l++) free(dz[l]);
  return st;
}

/* Over a whole graph: the graph as one block whose dsts are every vertex. */
static hs_status gat_ref_layer(const hs_model_shape *sh, const float *params, int l,
                               const hs_csr_view *g, const float *in, float *out) {
  int64_t n = g->n_vertices, e = g->indptr[g->n_vertices];
  if (e > INT32_MAX)
    return hs__fail(HS_ERR_RANGE, "inference: %lld edges exceed 32-bit offsets", (long long)e);
  hs_gat_dims d = hs__gat_dims(sh, l);
  int64_t hf = (int64_t)d.heads * d.f;
  bool last = l == sh->n_layers - 1;
  int32_t *rp = hs__ref_alloc(n + 1, 1, sizeof(int32_t));
  float *y = hs__ref_alloc(n, hf, sizeof(float)), *el = hs__ref_alloc(n, d.heads, sizeof(float));
  float *er = hs__ref_alloc(n, d.heads, sizeof(float)), *as = hs__ref_alloc(n, d.heads, sizeof(float));
  float *ae = hs__ref_alloc(e, d.heads, sizeof(float));
  float *z = last ? hs__ref_alloc(n, hf, sizeof(float)) : out;
  hs_status st = HS_OK;
  if (!rp || !y || !el || !er || !as || !ae || !z) {
    st = hs__fail(HS_ERR_NOMEM, "inference: layer %d of %lld vertices", l, (long long)n);
    goto done;
  }
  for (int64_t v = 0; v <= n; v++) rp[v] = (int32_t)g->indptr[v];
  hs_nn_block blk = {.n_dst = (int32_t)n, .n_src = (int32_t)n, .row_ptr = rp, .col = g->indices};
  layer_fwd(sh, params, l, &blk, in, y, el, er, as, ae, z);
  if (last) hs__ref_gat_head_mean(z, (int32_t)n, d.heads, d.f, out);
  hs__ref_bias_act_fwd(out, (int32_t)n, sh->dims[l + 1], params + sh->b_off[l], !last, 0.0f, 0,
                       0, 0, (uint32_t)l);
done:
  free(rp), free(y), free(el), free(er), free(as), free(ae);
  if (last) free(z);
  return st;
}

/* ---- the table ------------------------------------------------------------------ */

static const char *const gat_kernels[] = {
    [HS_K_GAT_SCORES - HS_K_MODEL] = "hs_gat_scores",
    [HS_K_GAT_SOFTMAX - HS_K_MODEL] = "hs_gat_softmax",
    [HS_K_GAT_AGG_FWD - HS_K_MODEL] = "hs_gat_agg_fwd",
    [HS_K_GAT_HEAD_MEAN - HS_K_MODEL] = "hs_gat_head_mean",
    [HS_K_GAT_HEAD_MEAN_BWD - HS_K_MODEL] = "hs_gat_head_mean_bwd",
    [HS_K_GAT_BWD_SCORE - HS_K_MODEL] = "hs_gat_bwd_score",
    [HS_K_GAT_BWD_DEL - HS_K_MODEL] = "hs_gat_bwd_del",
    [HS_K_GAT_BWD_Y - HS_K_MODEL] = "hs_gat_bwd_y",
    [HS_K_GAT_ATT_PART - HS_K_MODEL] = "hs_gat_att_part",
};

const hs_model_ops hs__model_gat = {
    .kind = HS_NN_GAT,
    .name = "gat",
    .title = "GAT",
    .layout = gat_layout,
    .init = gat_init,
    .ref_forward = gat_ref_forward,
    .ref_backward = gat_ref_backward,
    .ref_free = gat_ref_free,
    .ref_layer = gat_ref_layer,
    .program = {.prog = HS_PROG_TRAIN_GAT,
                .kernels = gat_kernels,
                .n_kernels = (int)(sizeof gat_kernels / sizeof gat_kernels[0])},
    .dev_reserve = hs__gat_dev_reserve,
    .dev_forward = hs__gat_dev_forward,
    .dev_backward = hs__gat_dev_backward,
    .dev_layer = hs__gat_dev_layer,
};
