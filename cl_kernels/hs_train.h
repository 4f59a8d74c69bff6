/* Training's use of the counter-based RNG, shared verbatim by the OpenCL
 * training kernels and the host references (runtime/nn/nn_rng.h includes
 * this file), so that a dropout mask or an initial weight is the same bits
 * everywhere.
 *
 * Counter layout of a training draw: (a, b, c, d) with a purpose tag in
 * the top byte of c, so that training's draws never meet another stream
 * keyed by the same seed as long as that stream keeps these two tags out
 * of c's top byte (layer numbers there are small):
 *   dropout: a = epoch, b = batch, c = DROPOUT<<24 | layer, d = element/4
 *   init:    a = 0,     b = 0,     c = INIT<<24 | layer,    d = element/4
 * One draw gives four words; element e takes word e % 4. Elements are the
 * row-major indices of the layer's output matrix (or weight matrix). */
#ifndef HS_TRAIN_H
#define HS_TRAIN_H

#ifndef __OPENCL_VERSION__
#include "hs_philox.h"
#endif

/* ---- constants the host and the kernels share ------------------------------
 * The host sizes launches and scratch buffers from these; the kernels
 * index with them. Nothing else may restate their values. */

/* Rows per chunk of the two-stage column sums (bias gradients): fixes the
 * association of the sum for the kernel and the reference alike. */
#define HS_COLSUM_ROWS 256

/* Features per work-item of the row-wise kernels (aggregations, column
 * sums): one float8 vector, loaded whole. CPU compilers vectorise loops
 * only when innermost, and the per-edge loops would otherwise leave every
 * lane scalar. A launch over d features has ceil(d / HS_VW) work-items per
 * row. */
#define HS_VW 8

/* Columns per work-item of the fused ReLU backward and column sums
 * (hs_ctr_relu_bwd_colsum_part): eight float8 vectors of each row side by
 * side. A launch over d features has ceil(d / HS_RELU_COLS) work-items per
 * chunk of rows. */
#define HS_RELU_COLS 64

/* Elements per chunk of the fixed-shape exclusive scan (block transposes):
 * the work split, and so the result, never depends on work-group sizes. A
 * scan of n elements has ceil(n / HS_SCAN_CHUNK) chunks. */
#define HS_SCAN_CHUNK 256

/* Slope of GAT's LeakyReLU on attention scores (Velickovic et al.). */
#define HS_GAT_SLOPE 0.2f

/* Elements per work-item of the bias/ReLU/dropout kernel: eight Philox
 * draws' worth, computed as vectors. */
#define HS_ACT_ELEMS 32

#define HS_RNG_PURPOSE_DROPOUT 0x44u
#define HS_RNG_PURPOSE_INIT 0x49u

HS_PHILOX_INLINE hs_u32 hs_train_word(hs_u64 seed, hs_u32 a, hs_u32 b,
                                      hs_u32 purpose, hs_u32 layer,
                                      hs_u32 elem) {
  hs_philox_ctr r =
      hs_philox_draw(seed, a, b, (purpose << 24) | (layer & 0xffffffu), elem >> 2);
  return r.v[elem & 3u];
}

/* Inverted dropout: an element is kept when its uniform draw is >= p. */
HS_PHILOX_INLINE int hs_dropout_keep(hs_u64 seed, hs_u32 epoch, hs_u32 batch,
                                     hs_u32 layer, hs_u32 elem, float p) {
  return hs_philox_unit(hs_train_word(seed, epoch, batch, HS_RNG_PURPOSE_DROPOUT,
                                      layer, elem)) >= p;
}

#endif
