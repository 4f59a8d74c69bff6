/* The unit of work the sampler hands the trainer: L message-passing blocks
 * and the gathered feature rows of one batch.
 *
 * Convention (shared with the sampler and the pipeline):
 *  - Local ids. The batch's sampled vertices are numbered 0..n-1, seeds
 *    first, then hop by hop. Block l's dst vertices are the first n_dst of
 *    its src vertices, so "dst i" and "src i" (i < n_dst) are one vertex.
 *  - blocks[0] is the input-side layer: its src are all sampled vertices,
 *    whose features are `feat` (blocks[0].n_src x in_dim, row-major float32,
 *    row = local id). blocks[L-1] is the output layer: its dst are the seeds.
 *    Consecutive blocks chain: blocks[l].n_dst == blocks[l+1].n_src.
 *  - Edges are CSR dst -> src: the sampled neighbours of dst i are
 *    col[row_ptr[i] .. row_ptr[i+1]-1] (int32 local src ids, < n_src).
 *    A neighbour may repeat (sampling with replacement); a dst may have none
 *    (its neighbour mean is then 0).
 *  - labels: int32 class of each seed (blocks[L-1].n_dst entries).
 *
 * The backward pass gathers through the transposed block (src -> dst lists,
 * each list in increasing dst order), so that no float atomics are needed
 * and results do not depend on scheduling. */
#ifndef HS_NN_BLOCK_H
#define HS_NN_BLOCK_H

#include <stdint.h>

#include "hs_base.h"

#define HS_NN_MAX_LAYERS 8

typedef struct hs_nn_block {
  int32_t n_dst;
  int32_t n_src;
  const int32_t *row_ptr; /* n_dst + 1, row_ptr[0] == 0 */
  const int32_t *col;     /* row_ptr[n_dst] entries */
} hs_nn_block;

static inline int32_t hs__nn_block_edges(const hs_nn_block *b) {
  return b->row_ptr[b->n_dst];
}

/* Sparse feature rows of a batch (CSR in local-id order): row i's
 * non-zeros are col[ptr[i] .. ptr[i+1]) (column ids < in_dim, strictly
 * increasing within a row) with values val[...], or 1 when val is NULL
 * (binary features). */
typedef enum hs_sparse_order {
  HS_SPARSE_AUTO = 0,            /* the cheaper, by hs__sparse_first_choose */
  HS_SPARSE_MULTIPLY_FIRST = 1,  /* see nn/sparse_first.h */
  HS_SPARSE_AGGREGATE_FIRST = 2,
} hs_sparse_order;

typedef struct hs_nn_sparse {
  int32_t n_rows;
  const int32_t *ptr; /* n_rows + 1, ptr[0] == 0 */
  const int32_t *col; /* ptr[n_rows] */
  const float *val;   /* ptr[n_rows], or NULL */
  hs_sparse_order order; /* how the first layer forms its neighbour term
                          * (the device step and the reference alike) */
  /* Optional, for the weight gradient: the same entries by column (the
   * host builds them beside the rows; without them the trainer builds
   * them on the device). Column c's rows, increasing, are
   * t_row[t_ptr[c] .. t_ptr[c+1]), those below n_dst of block 0 first, up
   * to t_mid[c]; t_val the values in that order (NULL when val is). */
  const int32_t *t_ptr; /* in_dim + 1 */
  const int32_t *t_mid; /* in_dim */
  const int32_t *t_row; /* ptr[n_rows] */
  const float *t_val;
  /* Entries assembled on the trainer (by the trainer cache): col and val
   * NULL, no column lists, and the caller writes the ptr[n_rows] column ids
   * and, when `valued`, the values into hs__trainer_sparse_entries' buffers
   * on the trainer's queue before the step. Unused when col is set. */
  bool valued;
} hs_nn_sparse;

/* Fill the column lists of `x` (in_dim d) for a block 0 of n_dst dst into
 * the caller's arrays (t_ptr d + 1, t_mid d, t_row and t_val nnz; t_val
 * unused when x->val is NULL; `cursor` d entries of scratch) and point x
 * at them. O(nnz + d), no allocation. */
void hs__nn_sparse_columns(hs_nn_sparse *x, int32_t n_dst, int32_t d, int32_t *t_ptr,
                           int32_t *t_mid, int32_t *t_row, float *t_val, int32_t *cursor);

static inline int32_t hs__nn_sparse_nnz(const hs_nn_sparse *x) { return x->ptr[x->n_rows]; }

typedef struct hs_nn_batch {
  int n_layers;
  const hs_nn_block *blocks; /* n_layers, input side first */
  const float *feat;      /* blocks[0].n_src x in_dim, or NULL with sfeat */
  const hs_nn_sparse *sfeat; /* the same rows stored sparse (blocks[0].n_src
                              * rows), or NULL: the first layer then
                              * multiplies only the non-zeros */
  const int32_t *labels;  /* blocks[n_layers-1].n_dst; may be NULL for inference */
} hs_nn_batch;

/* Check sparse rows: n_rows rows, ptr monotone from 0, column ids in
 * [0, d) and strictly increasing per row, values finite. */
hs_status hs__nn_sparse_validate(const hs_nn_sparse *x, int32_t n_rows, int32_t d);

/* Check one block's structure: sizes, row_ptr monotone from 0, ids in
 * range. `layer` only names the block in the message. */
hs_status hs__nn_block_validate(const hs_nn_block *b, int layer);
/* Check every block, the chaining between layers, and labels against
 * n_classes (labels skipped when NULL). */
hs_status hs__nn_batch_validate(const hs_nn_batch *b, int n_classes);

/* The transposed block by a stable counting sort: src s's dst list is
 * t_dst[t_ptr[s] .. t_ptr[s+1]-1] in increasing dst order (a dst appears
 * once per edge). t_ptr has n_src + 1 entries, t_dst row_ptr[n_dst]. */
void hs__nn_block_transpose(const hs_nn_block *b, int32_t *t_ptr, int32_t *t_dst);
/* The same lists holding edge positions instead of dst ids (increasing
 * within each list, so in increasing dst order too), and when `edst` is
 * not NULL, each edge's dst (row_ptr[n_dst] entries): what per-edge
 * quantities are gathered through on the source side. */
void hs__nn_block_transpose_eid(const hs_nn_block *b, int32_t *t_ptr, int32_t *t_eid,
                                int32_t *edst);

/* ---- full-neighbour blocks from a whole graph --------------------------- */

/* A graph's CSR as the dataset stores it: the neighbours of vertex v are
 * indices[indptr[v] .. indptr[v+1]-1]. Not owned. */
typedef struct hs_csr_view {
  int64_t n_vertices;
  const int64_t *indptr;  /* n_vertices + 1 */
  const int32_t *indices; /* indptr[n_vertices] */
} hs_csr_view;

/* Blocks that take every neighbour (what the sampler gives with unbounded
 * fanouts), numbered like the sampler does. Owns its arrays. */
typedef struct hs_nn_block_set {
  int n_layers;
  hs_nn_block blocks[HS_NN_MAX_LAYERS];
  int32_t *row_ptr[HS_NN_MAX_LAYERS];
  int32_t *col[HS_NN_MAX_LAYERS];
  int32_t *ids;        /* local -> original id, blocks[0].n_src entries */
  int32_t *seed_local; /* for each requested id, its local (dst) id */
  int32_t n_requested;
} hs_nn_block_set;

/* Build the L full-neighbour blocks whose output dst are `ids` (duplicates
 * allowed: they share one local id, see seed_local). Fails with
 * HS_ERR_RANGE on an id outside the graph or more than 2^31-1 vertices or
 * edges in a block, HS_ERR_NOMEM on allocation failure. Free with
 * hs__block_set_free (also safe after a failure). */
hs_status hs__full_blocks_build(const hs_csr_view *g, const int32_t *ids,
                                int32_t n_ids, int n_layers, hs_nn_block_set *out);
void hs__block_set_free(hs_nn_block_set *s);

/* Check a CSR view: indptr monotone from 0, ids in range. */
hs_status hs__csr_view_validate(const hs_csr_view *g);

#endif
