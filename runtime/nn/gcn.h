/* GCN (Kipf & Welling): graph convolution with symmetric normalisation and
 * self loops over the sampled block. The table lives in gcn.c (with the
 * plain-C references of its kernels), the device passes in gcn_dev.c.
 *
 * Layer l maps d_in = dims[l] features to d_out = dims[l+1] with W_l
 * (d_in x d_out, row-major) and b_l, multiplying first:
 *   Y = H W_l                                   (every src row)
 *   z_i = cd_i (cs_i Y_i + sum_{e of i} cs_{col e} Y_{col e}) + b_l
 *   cd_i = 1 / sqrt(deg_i + 1)       (dst i's edges in the block, plus its self loop)
 *   cs_j = 1 / sqrt(out_j + [j < n_dst])   (the block's edges naming src j,
 *                                           plus j's self loop if j is a dst)
 * so that z = D_dst^-1/2 (A + I) D_src^-1/2 Y + b on the block; over a whole
 * graph (layer-wise inference) both degrees are the graph's. A repeated
 * neighbour counts once per edge. Layer l's parameters: W_l then b_l.
 *
 * The normalisation depends on the block, not on the vertex alone: a
 * vertex's output over its receptive field's full-neighbour blocks is not
 * its output over the whole graph (its neighbours' out-degrees count only
 * the block's edges), so full-neighbour inference runs layer-wise. */
#ifndef HS_NN_GCN_H
#define HS_NN_GCN_H

#include "nn/hs_nn_block.h"
#include "nn/model_ops.h"

/* Kernel ids in the GCN program. */
enum {
  HS_K_GCN_NORM = HS_K_MODEL,
  HS_K_GCN_AGG_FWD,
  HS_K_GCN_AGG_BWD,
};

/* cd (n_dst) and cs (n_src) of a block from its row offsets and the
 * transposed block's offsets (t_ptr, n_src + 1). */
hs_status hs__k_gcn_norm(hs_kset *ks, cl_mem row_ptr, cl_mem t_ptr, cl_int n_dst, cl_int n_src,
                         cl_mem cd, cl_mem cs);
/* z (n_dst x d) = cd_i (cs_i Y_i + sum_e cs_j Y_j), Y n_src x d. */
hs_status hs__k_gcn_agg_fwd(hs_kset *ks, cl_mem row_ptr, cl_mem col, cl_mem y, cl_mem cd,
                            cl_mem cs, cl_int n_dst, cl_int d, cl_mem z);
/* dY (n_src x d) = cs_j ([j < n_dst] cd_j dz_j + sum over the dst i that
 * name j, in increasing order, of cd_i dz_i), through the transposed
 * block (t_ptr, t_dst). */
hs_status hs__k_gcn_agg_bwd(hs_kset *ks, cl_mem t_ptr, cl_mem t_dst, cl_mem dz, cl_mem cd,
                            cl_mem cs, cl_int n_dst, cl_int n_src, cl_int d, cl_mem dy);

/* ---- plain-C references of the kernels (bit for bit where sqrt and
 * division are correctly rounded, as on CPUs) ---------------------------- */

/* t_ptr: the transposed block's offsets (hs__nn_block_transpose). */
void hs__ref_gcn_norm(const hs_nn_block *b, const int32_t *t_ptr, float *cd, float *cs);
void hs__ref_gcn_agg_fwd(const hs_nn_block *b, const float *y, int32_t d, const float *cd,
                         const float *cs, float *z);
void hs__ref_gcn_agg_bwd(const hs_nn_block *b, const int32_t *t_ptr, const int32_t *t_dst,
                         const float *dz, int32_t d, const float *cd, const float *cs, float *dy);

/* The device passes (gcn_dev.c), as the table names them. */
hs_status hs__gcn_dev_reserve(struct hs_trainer *t);
hs_status hs__gcn_dev_forward(struct hs_trainer *t, const hs_nn_keys *k);
hs_status hs__gcn_dev_backward(struct hs_trainer *t, const hs_nn_keys *k);
hs_status hs__gcn_dev_layer(struct hs_trainer *t, int l, const hs_dev_graph *g, cl_mem in,
                            cl_mem out, struct hs_dbuf *scratch);

#endif
