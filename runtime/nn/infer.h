/* Full-neighbour inference on the host (reference path).
 *
 * Layer-wise: every vertex's layer-l representation is computed once from
 * all of its neighbours, then layer l+1 from those, so the cost is L passes
 * over the graph however many vertices are asked for. */
#ifndef HS_NN_INFER_H
#define HS_NN_INFER_H

#include <stdint.h>

#include "nn/hs_nn_block.h"
#include "nn/model.h"

/* Logits (N x n_classes) of every vertex of `g` from `feat` (N x in_dim).
 * Validates the graph. Works in row chunks: memory beyond the output is two
 * N x hidden arrays and one chunk. */
hs_status hs__infer_full(const hs_model_shape *shape, const float *params, const hs_csr_view *g,
                         const float *feat, float *logits);

/* Logits (n_ids x n_classes) of the given vertices, computed on their
 * full-neighbour receptive field only (duplicates allowed). */
hs_status hs__infer_ids(const hs_model_shape *shape, const float *params, const hs_csr_view *g,
                        const float *feat, const int32_t *ids, int32_t n_ids, float *logits);

/* Fraction of `ids` whose argmax over `logits` (rows indexed by vertex id,
 * n_classes wide) is their label; ties go to the lower class. 0 when n_ids
 * is 0. */
double hs__accuracy(const float *logits, int32_t n_classes, const int32_t *labels,
                    const int32_t *ids, int64_t n_ids);

#endif
