/* GAT (Velickovic et al.): multi-head graph attention over the sampled
 * block. The table lives in gat.c (with the plain-C references of its
 * kernels), the device passes in gat_dev.c.
 *
 * Layer l has H heads of F features each: F = dims[l+1] / H in hidden
 * layers (heads concatenated), F = n_classes in the last (heads averaged).
 * With HF = H F, its parameters are, in this order, W_l (dims[l] x HF,
 * row-major), a_l and a_r (HF each: head h's vectors at h F), and the bias
 * b_l (dims[l+1]). Per head h, with Y = H_in W_l (every src row):
 *   el_j = <Y_j,h, a_l,h>,  er_i = <Y_i,h, a_r,h>
 *   s_ij = LeakyReLU(el_j + er_i)            (slope HS_GAT_SLOPE)
 *   alpha_ij = softmax over j in {i} + N(i) of s_ij (dst i's self loop
 *              first, then its edges in order; a repeated neighbour is one
 *              term per edge)
 *   z_i,h = sum_j alpha_ij Y_j,h
 * Hidden layers: [z_i,0 | ... | z_i,H-1] + b, ReLU, dropout; the last:
 * mean over heads of z_i,h, + b. Attention coefficients are kept per edge
 * and head for the backward pass. */
#ifndef HS_NN_GAT_H
#define HS_NN_GAT_H

#include "nn/hs_nn_block.h"
#include "nn/model_ops.h"

/* Kernel ids in the GAT program. */
enum {
  HS_K_GAT_SCORES = HS_K_MODEL,
  HS_K_GAT_SOFTMAX,
  HS_K_GAT_AGG_FWD,
  HS_K_GAT_HEAD_MEAN,
  HS_K_GAT_HEAD_MEAN_BWD,
  HS_K_GAT_BWD_SCORE,
  HS_K_GAT_BWD_DEL,
  HS_K_GAT_BWD_Y,
  HS_K_GAT_ATT_PART,
};

/* The shapes every GAT kernel takes: heads and features per head. */
typedef struct hs_gat_dims {
  cl_int heads, f; /* HF = heads x f, Y's row width */
} hs_gat_dims;

/* el (n_src x H) and er (n_dst x H) from Y (n_src x HF) and the layer's
 * attention vectors at params + a_off (a_l, then a_r). */
hs_status hs__k_gat_scores(hs_kset *ks, cl_mem y, cl_mem params, cl_ulong a_off, cl_int n_src,
                           cl_int n_dst, hs_gat_dims g, cl_mem el, cl_mem er);
/* alpha of each dst's self loop (a_self, n_dst x H) and edges (a_edge,
 * n_edges x H). */
hs_status hs__k_gat_softmax(hs_kset *ks, cl_mem row_ptr, cl_mem col, cl_mem el, cl_mem er,
                            cl_int n_dst, hs_gat_dims g, cl_mem a_self, cl_mem a_edge);
/* z (n_dst x HF) = per head, alpha-weighted sum of Y rows. */
hs_status hs__k_gat_agg_fwd(hs_kset *ks, cl_mem row_ptr, cl_mem col, cl_mem y, cl_mem a_self,
                            cl_mem a_edge, cl_int n_dst, hs_gat_dims g, cl_mem z);
/* out (n x F) = mean over heads of z (n x HF), and its backward:
 * dz (n x HF) = dout / H on every head. */
hs_status hs__k_gat_head_mean(hs_kset *ks, cl_mem z, cl_int n, hs_gat_dims g, cl_mem out);
hs_status hs__k_gat_head_mean_bwd(hs_kset *ks, cl_mem dout, cl_int n, hs_gat_dims g, cl_mem dz);
/* Per dst and head, from dz (n_dst x HF): the score gradients of its self
 * loop (g_self, n_dst x H) and edges (g_edge, n_edges x H), after the
 * softmax and LeakyReLU backward, and their sum der (n_dst x H), the
 * gradient at er. */
hs_status hs__k_gat_bwd_score(hs_kset *ks, cl_mem row_ptr, cl_mem col, cl_mem y, cl_mem dz,
                              cl_mem el, cl_mem er, cl_mem a_self, cl_mem a_edge, cl_int n_dst,
                              hs_gat_dims g, cl_mem g_self, cl_mem g_edge, cl_mem der);
/* del (n_src x H), the gradient at el: src j's self-loop score gradient
 * (if j is a dst) then those of the edges naming it, through the
 * edge-id transposed block (t_ptr, t_eid). */
hs_status hs__k_gat_bwd_del(hs_kset *ks, cl_mem t_ptr, cl_mem t_eid, cl_mem g_self,
                            cl_mem g_edge, cl_int n_dst, cl_int n_src, hs_gat_dims g, cl_mem del);
/* dY (n_src x HF): the aggregation's backward (alpha-weighted dz of the
 * dsts naming j, its self loop first) plus del a_l plus (j a dst) der a_r.
 * edst: each edge's dst (hs_edge_dst). */
hs_status hs__k_gat_bwd_y(hs_kset *ks, cl_mem t_ptr, cl_mem t_eid, cl_mem edst, cl_mem dz,
                          cl_mem a_self, cl_mem a_edge, cl_mem del, cl_mem der, cl_mem params,
                          cl_ulong a_off, cl_int n_dst, cl_int n_src, hs_gat_dims g, cl_mem dy);
/* Partial column sums of s[i, h(c)] Y[i, c] over chunks of HS_COLSUM_ROWS
 * rows (n rows), for hs_colsum_final: the attention vectors' gradients. */
hs_status hs__k_gat_att_part(hs_kset *ks, cl_mem y, cl_mem s, cl_int n, hs_gat_dims g,
                             cl_mem part);

/* ---- plain-C references of the kernels (bit for bit but for exp, which
 * libm and OpenCL round differently) --------------------------------------- */

void hs__ref_gat_scores(const float *y, const float *att, int32_t n_src, int32_t n_dst,
                        int32_t heads, int32_t f, float *el, float *er);
void hs__ref_gat_softmax(const hs_nn_block *b, const float *el, const float *er, int32_t heads,
                         float *a_self, float *a_edge);
void hs__ref_gat_agg_fwd(const hs_nn_block *b, const float *y, const float *a_self,
                         const float *a_edge, int32_t heads, int32_t f, float *z);
void hs__ref_gat_head_mean(const float *z, int32_t n, int32_t heads, int32_t f, float *out);
void hs__ref_gat_head_mean_bwd(const float *dout, int32_t n, int32_t heads, int32_t f,
                               float *dz);
void hs__ref_gat_bwd_score(const hs_nn_block *b, const float *y, const float *dz,
                           const float *el, const float *er, const float *a_self,
                           const float *a_edge, int32_t heads, int32_t f, float *g_self,
                           float *g_edge, float *der);
void hs__ref_gat_bwd_del(const hs_nn_block *b, const int32_t *t_ptr, const int32_t *t_eid,
                         const float *g_self, const float *g_edge, int32_t heads, float *del);
void hs__ref_gat_bwd_y(const hs_nn_block *b, const int32_t *t_ptr, const int32_t *t_eid,
                       const int32_t *edst, const float *dz, const float *a_self,
                       const float *a_edge, const float *del, const float *der,
                       const float *att, int32_t heads, int32_t f, float *dy);
/* out[c] = sum over the n rows of s[i, h(c)] y[i, c], associated as
 * hs_gat_att_part then hs_colsum_final. */
void hs__ref_gat_att_grad(const float *y, const float *s, int32_t n, int32_t heads, int32_t f,
                          float *out);

/* The device passes (gat_dev.c), as the table names them. */
hs_status hs__gat_dev_reserve(struct hs_trainer *t);
hs_status hs__gat_dev_forward(struct hs_trainer *t, const hs_nn_keys *k);
hs_status hs__gat_dev_backward(struct hs_trainer *t, const hs_nn_keys *k);
hs_status hs__gat_dev_layer(struct hs_trainer *t, int l, const hs_dev_graph *g, cl_mem in,
                            cl_mem out, struct hs_dbuf *scratch);

/* Heads and features per head of layer l. */
static inline hs_gat_dims hs__gat_dims(const hs_model_shape *sh, int l) {
  hs_gat_dims g = {.heads = sh->heads,
                   .f = l == sh->n_layers - 1 ? sh->dims[l + 1] : sh->dims[l + 1] / sh->heads};
  return g;
}

#endif
