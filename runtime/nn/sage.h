/* GraphSAGE-mean (Hamilton et al.): the model's own kernels and their
 * launchers (the table lives in sage.c, its device passes in sage_dev.c).
 *
 * Layer l maps d_in = dims[l] features to d_out = dims[l+1]:
 *   z_i = [h_i | mean_{j in N(i)} h_j] . W_l + b_l
 * W_l is (2 d_in) x d_out row-major: rows 0..d_in-1 are W_self, rows
 * d_in..2 d_in-1 are W_neigh, so one GEMM on the concatenation [self | mean]
 * does both products. Layer l's parameters: W_l then b_l.
 *
 * Under a layer-0 input provider (trainer.h) layer 0 multiplies first:
 * z_i = (X W_self)_i + mean_j (X W_neigh)_j + b_0, the same function with
 * other rounding. */
#ifndef HS_NN_SAGE_H
#define HS_NN_SAGE_H

#include "nn/model_ops.h"

/* Kernel ids in the GraphSAGE program. */
enum {
  HS_K_AGG_FWD = HS_K_MODEL,
  HS_K_AGG_BWD,
  HS_K_SAGE_COMBINE,
  HS_K_SAGE_SPLIT_BWD,
};

/* cat (n_dst x 2d) = [h_dst | mean of h over the dst's neighbours] for dst
 * base .. base + n_dst - 1 of the block (row_ptr, col); hs__ref_agg_fwd. */
hs_status hs__k_agg_fwd(hs_kset *ks, cl_mem row_ptr, cl_mem col, cl_mem h, cl_int base,
                        cl_int n_dst, cl_int d, cl_mem cat);
/* dh (n_src x d) from dcat (n_dst x 2d) through the transposed block;
 * with `masked`, the ReLU/dropout backward of the layer below (h its
 * output, `scale` the keep-scale); hs__ref_agg_bwd, hs__ref_act_bwd. */
hs_status hs__k_agg_bwd(hs_kset *ks, cl_mem row_ptr, cl_mem t_ptr, cl_mem t_dst, cl_mem dcat,
                        cl_mem h, cl_int n_dst, cl_int n_src, cl_int d, cl_int masked,
                        float scale, cl_mem dh);
/* out (n x d) = ys (n x d, the first n rows) + the mean half of cat
 * (n x 2d): layer 0's output when it multiplies first. */
hs_status hs__k_sage_combine(hs_kset *ks, cl_mem ys, cl_mem cat, cl_int n, cl_int d, cl_mem out);
/* dcat (n x 2d) = [0 | dz]: the gradient at cat of hs_sage_combine. */
hs_status hs__k_sage_split_bwd(hs_kset *ks, cl_mem dz, cl_int n, cl_int d, cl_mem dcat);

/* The device passes (sage_dev.c), as the table names them. */
hs_status hs__sage_dev_reserve(struct hs_trainer *t);
hs_status hs__sage_dev_forward(struct hs_trainer *t, const hs_nn_keys *k);
hs_status hs__sage_dev_backward(struct hs_trainer *t, const hs_nn_keys *k);
hs_status hs__sage_dev_layer(struct hs_trainer *t, int l, const hs_dev_graph *g, cl_mem in,
                             cl_mem out, struct hs_dbuf *scratch);

#endif
