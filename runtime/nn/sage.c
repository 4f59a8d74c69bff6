/* GraphSAGE-mean (sage.h): its table, layout, initial parameters and its
 * plain-C reference passes, composed from the kernel references
 * (ref_layers.c) in the order the device passes (sage_dev.c) run them. */
#include <stdlib.h>
#include <string.h>

#include "hs_programs.h"
#include "nn/model_ops.h"
#include "nn/ref_nn.h"
#include "nn/sage.h"
#include "nn/sparse_first.h"

/* ---- layout ------------------------------------------------------------------ */

static hs_status sage_layout(const hs_model_cfg *cfg, hs_model_shape *sh) {
  (void)cfg;
  size_t off = 0;
  for (int l = 0; l < sh->n_layers; l++) {
    size_t w = 2 * (size_t)sh->dims[l] * (size_t)sh->dims[l + 1];
    sh->layer_off[l] = off;
    sh->w_off[l] = off;
    sh->b_off[l] = off + w;
    sh->layer_n[l] = w + (size_t)sh->dims[l + 1];
    off += sh->layer_n[l];
  }
  sh->n_params = off;
  return HS_OK;
}

/* Glorot-uniform W_self and W_neigh alike (fan d_in + d_out), zero bias. */
static void sage_init(const hs_model_shape *sh, uint64_t seed, float *params) {
  for (int l = 0; l < sh->n_layers; l++) {
    int32_t d_in = sh->dims[l], d_out = sh->dims[l + 1];
    hs__glorot_fill(params + sh->w_off[l], 2 * (size_t)d_in * (size_t)d_out, seed, l, 0, d_in,
                    d_out);
    memset(params + sh->b_off[l], 0, sizeof(float) * (size_t)d_out);
  }
}

/* ---- reference ------------------------------------------------------------------ */

typedef struct sage_ws {
  float *cat[HS_NN_MAX_LAYERS]; /* [self | mean] inputs of each layer's GEMM */
  float *h[HS_NN_MAX_LAYERS];   /* h[l]: input of layer l (l >= 1) */
  float *logits;                /* last layer's GEMM output, bias not added */
} sage_ws;

static void sage_ref_free(void *p) {
  sage_ws *ws = p;
  if (!ws) return;
  for (int l = 0; l < HS_NN_MAX_LAYERS; l++) {
    free(ws->cat[l]);
    free(ws->h[l]);
  }
  free(ws->logits);
  free(ws);
}

/* Layer 0 over sparse rows (sparse_first.h) into out (n_dst x d_out). */
static hs_status sparse_first_fwd(const hs_model_shape *shape, const float *params,
                                  const hs_nn_batch *b, float *out) {
  const hs_nn_block *blk = &b->blocks[0];
  int32_t d_in = shape->dims[0], d_out = shape->dims[1];
  const float *w_self = params + shape->w_off[0];
  const float *w_neigh = w_self + (size_t)d_in * (size_t)d_out;
  if (hs__sparse_first_order(b->sfeat, blk) == HS_SPARSE_AGGREGATE_FIRST) {
    hs__ref_sp_fwd_af(b->sfeat, blk, w_self, w_neigh, d_out, out);
    return HS_OK;
  }
  float *h = hs__ref_alloc(blk->n_src, d_out, sizeof(float));
  if (!h) return hs__fail(HS_ERR_NOMEM, "reference forward: sparse layer 0");
  hs__ref_sp_mm(b->sfeat, 0, blk->n_src, w_neigh, d_out, h);
  hs__ref_sp_fwd_mf(b->sfeat, blk, w_self, h, d_out, out);
  free(h);
  return HS_OK;
}

/* Layer 0's weight gradient over sparse rows. */
static hs_status sparse_first_wgrad(const hs_model_shape *shape, const hs_nn_batch *b,
                                    const float *dz, float *dw) {
  const hs_nn_block *blk = &b->blocks[0];
  int32_t d_in = shape->dims[0], d_out = shape->dims[1];
  int32_t *t_ptr = hs__ref_alloc((int64_t)blk->n_src + 1, 1, sizeof(int32_t));
  int32_t *t_dst = hs__ref_alloc(hs__nn_block_edges(blk), 1, sizeof(int32_t));
  float *g = hs__ref_alloc(blk->n_src, d_out, sizeof(float));
  hs_status st = HS_OK;
  if (!t_ptr || !t_dst || !g) {
    st = hs__fail(HS_ERR_NOMEM, "reference backward: sparse layer 0");
  } else {
    hs__nn_block_transpose(blk, t_ptr, t_dst);
    hs__ref_sp_gsum(blk, t_ptr, t_dst, dz, d_out, g);
    hs__ref_sp_wgrad(b->sfeat, blk->n_dst, dz, g, d_in, d_out, dw);
  }
  free(t_ptr);
  free(t_dst);
  free(g);
  return st;
}

static hs_status sage_ref_forward(const hs_model_shape *shape, const float *params,
                                  const hs_nn_batch *b, const hs_nn_keys *k, void **out_ws,
                                  const float **logits) {
  sage_ws *ws = calloc(1, sizeof *ws);
  *out_ws = ws;
  if (!ws) return hs__fail(HS_ERR_NOMEM, "reference forward");
  int L = shape->n_layers;
  const float *in = b->feat;
  for (int l = 0; l < L; l++) {
    const hs_nn_block *blk = &b->blocks[l];
    int32_t d_in = shape->dims[l], d_out = shape->dims[l + 1];
    bool sparse = l == 0 && b->sfeat;
    float *out = hs__ref_alloc(blk->n_dst, d_out, sizeof(float));
    if (!sparse) ws->cat[l] = hs__ref_alloc(blk->n_dst, 2 * (int64_t)d_in, sizeof(float));
    if (l < L - 1)
      ws->h[l + 1] = out;
    else
      ws->logits = out;
    if (!out || (!sparse && !ws->cat[l]))
      return hs__fail(HS_ERR_NOMEM, "reference forward: layer %d, %d rows", l, blk->n_dst);
    if (sparse) {
      hs_status st = sparse_first_fwd(shape, params, b, out);
      if (st != HS_OK) return st;
    } else {
      hs__ref_agg_fwd(blk, in, d_in, ws->cat[l]);
      hs__ref_gemm(false, false, (size_t)blk->n_dst, (size_t)d_out, 2 * (size_t)d_in, 1.0f,
                   ws->cat[l], 2 * (size_t)d_in, params + shape->w_off[l], (size_t)d_out, 0.0f,
                   out, (size_t)d_out);
    }
    if (l < L - 1)
      hs__ref_bias_act_fwd(out, blk->n_dst, d_out, params + shape->b_off[l], true, k->p, k->seed,
                           k->epoch, k->batch, (uint32_t)l);
    in = out;
  }
  *logits = ws->logits;
  return HS_OK;
}

static hs_status sage_ref_backward(const hs_model_shape *shape, const float *params,
                                   const hs_nn_batch *b, const hs_nn_keys *k, void *p,
                                   const float *dout, float *grads, float *dx) {
  sage_ws *ws = p;
  int L = shape->n_layers;
  float *dz[HS_NN_MAX_LAYERS] = {0}, *dcat = NULL;
  int32_t *t_ptr = NULL, *t_dst = NULL;
  hs_status st = HS_OK;
  float scale = hs__dropout_scale(k->p);
  for (int l = L - 1; l >= 0; l--) {
    const hs_nn_block *blk = &b->blocks[l];
    size_t d_in = (size_t)shape->dims[l], d_out = (size_t)shape->dims[l + 1];
    const float *g = l == L - 1 ? dout : dz[l];
    hs__ref_colsum(g, blk->n_dst, (int32_t)d_out, grads + shape->b_off[l]);
    if (l == 0 && b->sfeat) {
      if (dx) {
        st = hs__fail(HS_ERR_UNSUPPORTED, "reference backward: input gradients of sparse rows");
        goto done;
      }
      st = sparse_first_wgrad(shape, b, g, grads + shape->w_off[0]);
      goto done;
    }
    hs__ref_gemm(true, false, 2 * d_in, d_out, (size_t)blk->n_dst, 1.0f, ws->cat[l], 2 * d_in, g,
                 d_out, 0.0f, grads + shape->w_off[l], d_out);
    if (l == 0 && !dx) break; /* no gradient for the input features */
    free(dcat);
    free(t_ptr);
    free(t_dst);
    dcat = hs__ref_alloc(blk->n_dst, 2 * (int64_t)d_in, sizeof(float));
    t_ptr = hs__ref_alloc((int64_t)blk->n_src + 1, 1, sizeof(int32_t));
    t_dst = hs__ref_alloc(hs__nn_block_edges(blk), 1, sizeof(int32_t));
    float *below = l > 0 ? (dz[l - 1] = hs__ref_alloc(blk->n_src, (int64_t)d_in, sizeof(float))) : dx;
    if (!dcat || !t_ptr || !t_dst || !below) {
      st = hs__fail(HS_ERR_NOMEM, "reference backward: layer %d", l);
      goto done;
    }
    hs__ref_gemm(false, true, (size_t)blk->n_dst, 2 * d_in, d_out, 1.0f, g, d_out,
                 params + shape->w_off[l], d_out, 0.0f, dcat, 2 * d_in);
    hs__nn_block_transpose(blk, t_ptr, t_dst);
    hs__ref_agg_bwd(blk, t_ptr, t_dst, dcat, (int32_t)d_in, below);
    if (l > 0) hs__ref_act_bwd(ws->h[l], blk->n_src, (int32_t)d_in, scale, below);
  }
done:
  for (int l = 0; l < HS_NN_MAX_LAYERS; l++) free(dz[l]);
  free(dcat);
  free(t_ptr);
  free(t_dst);
  return st;
}

enum { INFER_CHUNK_ROWS = 1024 };

/* Row chunks keep one chunk of [self | mean] inputs in memory. */
static hs_status sage_ref_layer(const hs_model_shape *shape, const float *params, int l,
                                const hs_csr_view *g, const float *in, float *out) {
  size_t n = (size_t)g->n_vertices;
  size_t d_in = (size_t)shape->dims[l], d_out = (size_t)shape->dims[l + 1];
  float *cat = hs__ref_alloc(INFER_CHUNK_ROWS, 2 * (int64_t)d_in, sizeof(float));
  if (!cat) return hs__fail(HS_ERR_NOMEM, "inference: layer %d", l);
  for (size_t r0 = 0; r0 < n; r0 += INFER_CHUNK_ROWS) {
    size_t rows = n - r0 < INFER_CHUNK_ROWS ? n - r0 : INFER_CHUNK_ROWS;
    for (size_t i = 0; i < rows; i++) {
      size_t v = r0 + i;
      float *row = cat + i * 2 * d_in;
      memcpy(row, in + v * d_in, sizeof(float) * d_in);
      int64_t lo = g->indptr[v], hi = g->indptr[v + 1];
      /* Neighbour rows are summed in edge order for every column, as the
       * column-at-a-time form would, but reading whole rows. */
      float *mean = row + d_in;
      memset(mean, 0, sizeof(float) * d_in);
      for (int64_t e = lo; e < hi; e++) {
        const float *nb = in + (size_t)g->indices[e] * d_in;
        for (size_t c = 0; c < d_in; c++) mean[c] += nb[c];
      }
      if (hi > lo)
        for (size_t c = 0; c < d_in; c++) mean[c] /= (float)(hi - lo);
    }
    float *dst = out + r0 * d_out;
    hs__ref_gemm(false, false, rows, d_out, 2 * d_in, 1.0f, cat, 2 * d_in,
                 params + shape->w_off[l], d_out, 0.0f, dst, d_out);
    hs__ref_bias_act_fwd(dst, (int32_t)rows, (int32_t)d_out, params + shape->b_off[l],
                         l < shape->n_layers - 1, 0.0f, 0, 0, 0, (uint32_t)l);
  }
  free(cat);
  return HS_OK;
}

/* ---- the table ------------------------------------------------------------------ */

static const char *const sage_kernels[] = {
    [HS_K_AGG_FWD - HS_K_MODEL] = "hs_agg_fwd",
    [HS_K_AGG_BWD - HS_K_MODEL] = "hs_agg_bwd",
    [HS_K_SAGE_COMBINE - HS_K_MODEL] = "hs_sage_combine",
    [HS_K_SAGE_SPLIT_BWD - HS_K_MODEL] = "hs_sage_split_bwd",
};

const hs_model_ops hs__model_sage = {
    .kind = HS_NN_SAGE,
    .name = "sage",
    .title = "GraphSAGE-mean",
    .layout = sage_layout,
    .init = sage_init,
    .ref_forward = sage_ref_forward,
    .ref_backward = sage_ref_backward,
    .ref_free = sage_ref_free,
    .ref_layer = sage_ref_layer,
    .program = {.prog = HS_PROG_TRAIN_SAGE,
                .kernels = sage_kernels,
                .n_kernels = (int)(sizeof sage_kernels / sizeof sage_kernels[0])},
    .dev_reserve = hs__sage_dev_reserve,
    .dev_forward = hs__sage_dev_forward,
    .dev_backward = hs__sage_dev_backward,
    .dev_layer = hs__sage_dev_layer,
};
