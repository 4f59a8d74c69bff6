/* GCN (gcn.h): its table, layout, initial parameters, the plain-C
 * references of its kernels and its reference passes, in the order the
 * device passes (gcn_dev.c) run them. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "hs_programs.h"
#include "nn/gcn.h"
#include "nn/ref_nn.h"

/* ---- layout ------------------------------------------------------------------ */

static hs_status gcn_layout(const hs_model_cfg *cfg, hs_model_shape *sh) {
  (void)cfg;
  size_t off = 0;
  for (int l = 0; l < sh->n_layers; l++) {
    size_t w = (size_t)sh->dims[l] * (size_t)sh->dims[l + 1];
    sh->layer_off[l] = off;
    sh->w_off[l] = off;
    sh->b_off[l] = off + w;
    sh->layer_n[l] = w + (size_t)sh->dims[l + 1];
    off += sh->layer_n[l];
  }
  sh->n_params = off;
  return HS_OK;
}

/* Glorot-uniform W (fan d_in + d_out), zero bias. */
static void gcn_init(const hs_model_shape *sh, uint64_t seed, float *params) {
  for (int l = 0; l < sh->n_layers; l++) {
    int32_t d_in = sh->dims[l], d_out = sh->dims[l + 1];
    hs__glorot_fill(params + sh->w_off[l], (size_t)d_in * (size_t)d_out, seed, l, 0, d_in, d_out);
    memset(params + sh->b_off[l], 0, sizeof(float) * (size_t)d_out);
  }
}

/* ---- kernel references ----------------------------------------------------------- */

void hs__ref_gcn_norm(const hs_nn_block *b, const int32_t *t_ptr, float *cd, float *cs) {
  for (int32_t j = 0; j < b->n_src; j++) {
    int32_t self = j < b->n_dst;
    cs[j] = 1.0f / sqrtf((float)(t_ptr[j + 1] - t_ptr[j] + self));
    if (self) cd[j] = 1.0f / sqrtf((float)(b->row_ptr[j + 1] - b->row_ptr[j] + 1));
  }
}

void hs__ref_gcn_agg_fwd(const hs_nn_block *b, const float *y, int32_t d, const float *cd,
                         const float *cs, float *z) {
  for (int32_t i = 0; i < b->n_dst; i++)
    for (int32_t k = 0; k < d; k++) {
      float acc = cs[i] * y[(size_t)i * (size_t)d + (size_t)k];
      for (int32_t e = b->row_ptr[i]; e < b->row_ptr[i + 1]; e++) {
        int32_t j = b->col[e];
        acc += cs[j] * y[(size_t)j * (size_t)d + (size_t)k];
      }
      z[(size_t)i * (size_t)d + (size_t)k] = cd[i] * acc;
    }
}

void hs__ref_gcn_agg_bwd(const hs_nn_block *b, const int32_t *t_ptr, const int32_t *t_dst,
                         const float *dz, int32_t d, const float *cd, const float *cs, float *dy) {
  for (int32_t j = 0; j < b->n_src; j++)
    for (int32_t k = 0; k < d; k++) {
      float acc = j < b->n_dst ? cd[j] * dz[(size_t)j * (size_t)d + (size_t)k] : 0.0f;
      for (int32_t e = t_ptr[j]; e < t_ptr[j + 1]; e++) {
        int32_t i = t_dst[e];
        acc += cd[i] * dz[(size_t)i * (size_t)d + (size_t)k];
      }
      dy[(size_t)j * (size_t)d + (size_t)k] = cs[j] * acc;
    }
}

/* ---- reference passes ------------------------------------------------------------ */

typedef struct gcn_ws {
  float *h[HS_NN_MAX_LAYERS]; /* h[l]: input of layer l >= 1 */
  float *cd[HS_NN_MAX_LAYERS], *cs[HS_NN_MAX_LAYERS];
  int32_t *t_ptr[HS_NN_MAX_LAYERS], *t_dst[HS_NN_MAX_LAYERS];
  float *logits; /* the last layer's output, bias not added */
} gcn_ws;

static void gcn_ref_free(void *p) {
  gcn_ws *ws = p;
  if (!ws) return;
  for (int l = 0; l < HS_NN_MAX_LAYERS; l++) {
    free(ws->h[l]), free(ws->cd[l]), free(ws->cs[l]);
    free(ws->t_ptr[l]), free(ws->t_dst[l]);
  }
  free(ws->logits);
  free(ws);
}

static hs_status gcn_ref_forward(const hs_model_shape *sh, const float *params,
                                 const hs_nn_batch *b, const hs_nn_keys *k, void **out_ws,
                                 const float **logits) {
  gcn_ws *ws = calloc(1, sizeof *ws);
  *out_ws = ws;
  if (!ws) return hs__fail(HS_ERR_NOMEM, "reference forward");
  int L = sh->n_layers;
  const float *in = b->feat;
  hs_status st = HS_OK;
  float *y = NULL;
  for (int l = 0; l < L; l++) {
    const hs_nn_block *blk = &b->blocks[l];
    int32_t d_in = sh->dims[l], d_out = sh->dims[l + 1];
    free(y);
    y = hs__ref_alloc(blk->n_src, d_out, sizeof(float));
    float *out = hs__ref_alloc(blk->n_dst, d_out, sizeof(float));
    if (l < L - 1)
      ws->h[l + 1] = out;
    else
      ws->logits = out;
    ws->cd[l] = hs__ref_alloc(blk->n_dst, 1, sizeof(float));
    ws->cs[l] = hs__ref_alloc(blk->n_src, 1, sizeof(float));
    ws->t_ptr[l] = hs__ref_alloc((int64_t)blk->n_src + 1, 1, sizeof(int32_t));
    ws->t_dst[l] = hs__ref_alloc(hs__nn_block_edges(blk), 1, sizeof(int32_t));
    if (!y || !out || !ws->cd[l] || !ws->cs[l] || !ws->t_ptr[l] || !ws->t_dst[l]) {
      st = hs__fail(HS_ERR_NOMEM, "reference forward: layer %d, %d rows", l, blk->n_src);
      break;
    }
    hs__ref_gemm(false, false, (size_t)blk->n_src, (size_t)d_out, (size_t)d_in, 1.0f, in,
                 (size_t)d_in, params + sh->w_off[l], (size_t)d_out, 0.0f, y, (size_t)d_out);
    hs__nn_block_transpose(blk, ws->t_ptr[l], ws->t_dst[l]);
    hs__ref_gcn_norm(blk, ws->t_ptr[l], ws->cd[l], ws->cs[l]);
    hs__ref_gcn_agg_fwd(blk, y, d_out, ws->cd[l], ws->cs[l], out);
    if (l < L - 1)
      hs__ref_bias_act_fwd(out, blk->n_dst, d_out, params + sh->b_off[l], true, k->p, k->seed,
                           k->epoch, k->batch, (uint32_t)l);
    in = out;
  }
  free(y);
  *logits = ws->logits;
  return st;
}

static hs_status gcn_ref_backward(const hs_model_shape *sh, const float *params,
                                  const hs_nn_batch *b, const hs_nn_keys *k, void *p,
                                  const float *dout, float *grads, float *dx) {
  gcn_ws *ws = p;
  int L = sh->n_layers;
  float *dz[HS_NN_MAX_LAYERS] = {0}, *dy = NULL;
  hs_status st = HS_OK;
  float scale = hs__dropout_scale(k->p);
  for (int l = L - 1; l >= 0; l--) {
    const hs_nn_block *blk = &b->blocks[l];
    size_t d_in = (size_t)sh->dims[l], d_out = (size_t)sh->dims[l + 1], ns = (size_t)blk->n_src;
    const float *g = l == L - 1 ? dout : dz[l];
    const float *h = l == 0 ? b->feat : ws->h[l];
    free(dy);
    dy = hs__ref_alloc(blk->n_src, (int64_t)d_out, sizeof(float));
    float *below = l > 0 ? (dz[l - 1] = hs__ref_alloc(blk->n_src, (int64_t)d_in, sizeof(float))) : dx;
    if (!dy || (l > 0 && !below)) {
      st = hs__fail(HS_ERR_NOMEM, "reference backward: layer %d", l);
      break;
    }
    hs__ref_colsum(g, blk->n_dst, (int32_t)d_out, grads + sh->b_off[l]);
    hs__ref_gcn_agg_bwd(blk, ws->t_ptr[l], ws->t_dst[l], g, (int32_t)d_out, ws->cd[l], ws->cs[l],
                        dy);
    hs__ref_gemm(true, false, d_in, d_out, ns, 1.0f, h, d_in, dy, d_out, 0.0f,
                 grads + sh->w_off[l], d_out);
    if (!below) break; /* layer 0 without input gradients */
    hs__ref_gemm(false, true, ns, d_in, d_out, 1.0f, dy, d_out, params + sh->w_off[l], d_out,
                 0.0f, below, d_in);
    if (l > 0) hs__ref_act_bwd(ws->h[l], blk->n_src, (int32_t)d_in, scale, below);
  }
  for (int l = 0; l < HS_NN_MAX_LAYERS; l++) free(dz[l]);
  free(dy);
  return st;
}

/* Over a whole graph: every degree is the graph's (each vertex a dst). */
static hs_status gcn_ref_layer(const hs_model_shape *sh, const float *params, int l,
                               const hs_csr_view *g, const float *in, float *out) {
  size_t n = (size_t)g->n_vertices;
  size_t d_in = (size_t)sh->dims[l], d_out = (size_t)sh->dims[l + 1];
  float *y = hs__ref_alloc((int64_t)n, (int64_t)d_out, sizeof(float));
  float *cd = hs__ref_alloc((int64_t)n, 1, sizeof(float)), *cs = hs__ref_alloc((int64_t)n, 1, sizeof(float));
  int32_t *named = calloc(n ? n : 1, sizeof(int32_t));
  hs_status st = HS_OK;
  if (!y || !cd || !cs || !named) {
    st = hs__fail(HS_ERR_NOMEM, "inference: layer %d of %zu vertices", l, n);
    goto done;
  }
  hs__ref_gemm(false, false, n, d_out, d_in, 1.0f, in, d_in, params + sh->w_off[l], d_out, 0.0f,
               y, d_out);
  for (int64_t e = 0; e < g->indptr[g->n_vertices]; e++) named[g->indices[e]]++;
  for (size_t v = 0; v < n; v++) {
    cs[v] = 1.0f / sqrtf((float)(named[v] + 1));
    cd[v] = 1.0f / sqrtf((float)(g->indptr[v + 1] - g->indptr[v] + 1));
  }
  for (size_t i = 0; i < n; i++)
    for (size_t c = 0; c < d_out; c++) {
      float acc = cs[i] * y[i * d_out + c];
      for (int64_t e = g->indptr[i]; e < g->indptr[i + 1]; e++) {
        size_t j = (size_t)g->indices[e];
        acc += cs[j] * y[j * d_out + c];
      }
      out[i * d_out + c] = cd[i] * acc;
    }
  hs__ref_bias_act_fwd(out, (int32_t)n, (int32_t)d_out, params + sh->b_off[l],
                       l < sh->n_layers - 1, 0.0f, 0, 0, 0, (uint32_t)l);
done:
  free(y), free(cd), free(cs), free(named);
  return st;
}

/* ---- the table ------------------------------------------------------------------ */

static const char *const gcn_kernels[] = {
    [HS_K_GCN_NORM - HS_K_MODEL] = "hs_gcn_norm",
    [HS_K_GCN_AGG_FWD - HS_K_MODEL] = "hs_gcn_agg_fwd",
    [HS_K_GCN_AGG_BWD - HS_K_MODEL] = "hs_gcn_agg_bwd",
};

const hs_model_ops hs__model_gcn = {
    .kind = HS_NN_GCN,
    .name = "gcn",
    .title = "GCN",
    .block_normalised = true,
    .layout = gcn_layout,
    .init = gcn_init,
    .ref_forward = gcn_ref_forward,
    .ref_backward = gcn_ref_backward,
    .ref_free = gcn_ref_free,
    .ref_layer = gcn_ref_layer,
    .program = {.prog = HS_PROG_TRAIN_GCN,
                .kernels = gcn_kernels,
                .n_kernels = (int)(sizeof gcn_kernels / sizeof gcn_kernels[0])},
    .dev_reserve = hs__gcn_dev_reserve,
    .dev_forward = hs__gcn_dev_forward,
    .dev_backward = hs__gcn_dev_backward,
    .dev_layer = hs__gcn_dev_layer,
};
