/* The first layer over sparse input features: sparse x dense products
 * instead of the dense GEMM over [self | mean] (model.h), for features
 * that are mostly zeros (bag-of-words). Layer 0 computes, for dst i,
 *
 *   z_i = x_i . W_self + (1/deg_i) sum_{j in N(i)} x_j . W_neigh
 *
 * where x are sparse rows; only their non-zeros are multiplied. Two
 * evaluation orders give the neighbour term:
 *
 *   MULTIPLY_FIRST   H = X_src . W_neigh (every src row once, n_src x d_out),
 *                    then the mean of H over each dst's neighbours:
 *                    nnz(X_src) + E row-updates of d_out, and H written;
 *   AGGREGATE_FIRST  the neighbours' sparse rows aggregated straight into
 *                    the product, sum_j sum_k x_jk W_neigh[k] / deg: one
 *                    row-update per (edge, non-zero) pair, nothing written
 *                    in between.
 *
 * AUTO picks the one that costs less from the batch's measured non-zeros,
 * edges and rows (hs__sparse_first_choose). The weight gradient always
 * runs as dW_self = X_dst^T dZ and dW_neigh = X_src^T G, G = A_mean^T dZ
 * (n_src x d_out): nnz + E row-updates, never more than the expanded form.
 * No float atomics: every sum runs in a fixed order (non-zeros of a row in
 * column order, neighbours in block order, and for the gradient, rows in
 * increasing order within each column), the same in the plain-C references
 * below and the kernels (cl_kernels/train_sparse.cl), so they agree bit for
 * bit. Against the dense layer the results agree up to floating-point
 * reassociation (the dense GEMM sums over all 2 d_in inputs in its own
 * order, zeros included). */
#ifndef HS_NN_SPARSE_FIRST_H
#define HS_NN_SPARSE_FIRST_H

#include <stdint.h>

#include "nn/hs_nn_block.h"

/* The order AUTO takes for block 0 with n_dst dst, n_src src rows, `edges`
 * edges, and `nnz` non-zeros over the n_src rows: AGGREGATE_FIRST when
 * E x (nnz / n_src) row-updates (the expected expanded pairs) are fewer
 * than MULTIPLY_FIRST's nnz + E + n_src (its products, its mean, and the
 * H rows it writes and reads back). */
hs_sparse_order hs__sparse_first_choose(int32_t n_dst, int32_t n_src, int32_t edges, int64_t nnz);
/* x->order, or the choice above when it is AUTO. */
hs_sparse_order hs__sparse_first_order(const hs_nn_sparse *x, const hs_nn_block *b0);

/* ---- plain-C references ------------------------------------------------ */

/* out (n x d_out) = rows base .. base+n-1 of x times w (x's width x d_out,
 * row-major): out[i] = sum over the row's non-zeros, in column order, of
 * value * w[col]. */
void hs__ref_sp_mm(const hs_nn_sparse *x, int32_t base, int32_t n, const float *w,
                   int32_t d_out, float *out);

/* Layer 0's pre-activation z (n_dst x d_out), MULTIPLY_FIRST: z_i =
 * self_i + (sum_{j in N(i)} h_j) / deg_i with self_i = x_i . w_self and h
 * = X_src . w_neigh (from hs__ref_sp_mm); a dst without neighbours adds 0. */
void hs__ref_sp_fwd_mf(const hs_nn_sparse *x, const hs_nn_block *b, const float *w_self,
                       const float *h, int32_t d_out, float *z);

/* The same, AGGREGATE_FIRST: z_i = self_i + (sum_{j in N(i)} sum_k x_jk
 * w_neigh[k]) / deg_i, the inner sums in order into one accumulator. */
void hs__ref_sp_fwd_af(const hs_nn_sparse *x, const hs_nn_block *b, const float *w_self,
                       const float *w_neigh, int32_t d_out, float *z);

/* g (n_src x d_out) = A_mean^T dz: g_s = sum over the dst naming s, in
 * increasing dst order (t_ptr/t_dst from hs__nn_block_transpose), of
 * dz_i / deg_i. */
void hs__ref_sp_gsum(const hs_nn_block *b, const int32_t *t_ptr, const int32_t *t_dst,
                     const float *dz, int32_t d_out, float *g);

/* The weight gradient of layer 0 into dw (2 d_in x d_out, the layout of W:
 * W_self rows then W_neigh rows): row k of the self half sums x_ik dz_i
 * over the rows i < n_dst holding column k, of the neighbour half x_sk g_s
 * over every row s holding it, rows in increasing order. Columns no row
 * holds get zeros. */
void hs__ref_sp_wgrad(const hs_nn_sparse *x, int32_t n_dst, const float *dz, const float *g,
                      int32_t d_in, int32_t d_out, float *dw);

/* Dense rows (n_rows x d) of sparse ones: for comparisons with the dense
 * layer. */
void hs__sparse_densify(const hs_nn_sparse *x, int32_t d, float *out);

#endif
