/* Neighbour sampling and reindexing: the configuration, the batch a sampler
 * produces (consumed by the trainer), and the plain-C reference that every
 * device kernel must match bit for bit.
 *
 * Semantics (the device runners in sampler.c implement exactly these):
 *
 * Hops. Hop h = 0 .. n_layers-1 samples from the seeds outward. The
 * frontier of hop h is every vertex known so far: the seeds for h = 0, and
 * the whole source list of hop h-1 after it (DGL's block convention, which
 * GraphSAGE needs: each layer's destinations are the previous layer's
 * sources). Each frontier vertex's row is sampled with fanout[h] (-1: the
 * whole row); the sampled neighbours, concatenated in frontier order, form
 * the hop's neighbour list.
 *
 * Row rules for a row of degree d and fanout k >= 0:
 *  - uniform, without replacement: d <= k keeps the whole row in row order;
 *    otherwise k distinct positions by Floyd's algorithm, in Floyd's order;
 *  - uniform, with replacement: k draws (none when d = 0), in draw order;
 *  - weighted (probability proportional to the edge weight; weights that
 *    fail hs_weight_ok count as zero and are never chosen), without
 *    replacement: d <= k keeps every eligible edge in row order; otherwise
 *    the min(k, eligible) edges of smallest race key (hs_race_key), in key
 *    order, ties by position;
 *  - weighted, with replacement: k inverse-CDF draws over the row's float
 *    prefix sums taken in row order (none when no edge is eligible);
 *  - threshold: edges whose weight is above threshold[h] qualify
 *    (hs_weight_above); d <= k keeps every qualifying edge in row order,
 *    otherwise the min(k, qualifying) of smallest uniform key, in key order.
 *  k = -1 keeps every (eligible, qualifying) edge in row order.
 *
 * Reindexing. Local ids: the seeds are 0 .. n_seeds-1 in their given order;
 * then each hop appends the vertices it meets for the first time, in order
 * of their first position in the hop's neighbour list. Budget: when
 * max_vertices > 0, a vertex is admitted only while fewer than max_vertices
 * are known; edges to vertices not admitted are left out of the block, and
 * from then on no hop adds vertices (blocks still hold the edges among the
 * admitted ones). A hop whose frontier has no neighbours left adds nothing.
 *
 * Blocks, in trainer order: blocks[0] is the layer nearest the input
 * features (the last hop), blocks[n_layers-1] the layer whose destinations
 * are the seeds (hop 0). Block of hop h: n_dst = vertices known before the
 * hop, n_src = vertices known after it; the destinations are the first
 * n_dst sources (dst ⊆ src prefix, seeds first). Rows are destinations,
 * row_ptr has n_dst + 1 entries, col holds local source ids in neighbour-
 * list order. The transposed block (source -> destinations) is built by the
 * trainer from this one (hs__block_transpose on the host).
 *
 * Keys of the random draws: cl_kernels/hs_sample_rng.h. */
#ifndef HS_SAMPLE_H
#define HS_SAMPLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hs_csr.h"

#define HS_SAMPLE_MAX_LAYERS 8

typedef enum hs_sample_mode {
  HS_SAMPLE_UNIFORM = 0,
  HS_SAMPLE_WEIGHTED = 1,
  HS_SAMPLE_THRESHOLD = 2,
} hs_sample_mode;

typedef struct hs_sample_cfg {
  int n_layers;                          /* hops, 1 .. HS_SAMPLE_MAX_LAYERS */
  int32_t fanout[HS_SAMPLE_MAX_LAYERS];  /* per hop from the seeds; -1: all */
  float threshold[HS_SAMPLE_MAX_LAYERS]; /* per hop, threshold mode only */
  hs_sample_mode mode;
  bool replace;         /* uniform and weighted modes */
  int64_t max_vertices; /* vertex budget; 0: none */
  uint64_t seed;
} hs_sample_cfg;

/* Capacities of a batch, fixed when it is allocated; hop-indexed. */
typedef struct hs_batch_caps {
  int n_layers;
  int32_t seeds;
  int32_t vertices;                    /* local ids of a whole batch */
  int32_t dst[HS_SAMPLE_MAX_LAYERS];   /* frontier of hop h */
  int32_t edges[HS_SAMPLE_MAX_LAYERS]; /* sampled edges of hop h */
  int32_t row_max;                     /* most edges one row can yield */
} hs_batch_caps;

typedef struct hs_block {
  int32_t n_dst, n_src;
  int32_t *row_ptr; /* n_dst + 1 */
  int32_t *col;     /* row_ptr[n_dst] local source ids */
} hs_block;

/* Words of the counts a device sampler reads back with a batch. */
#define HS_BATCH_COUNT_WORDS 40

typedef struct hs_batch {
  int n_layers;
  int32_t n_seeds;
  int32_t n_vertices; /* = blocks[0].n_src */
  int32_t *ids;       /* local id -> original id, n_vertices entries */
  hs_block blocks[HS_SAMPLE_MAX_LAYERS]; /* trainer order, see above */
  hs_batch_caps caps;
  /* The sizes as the device sampler found them, read back together with
   * the arrays (hs__sampler_begin); hs__sampler_finish sets the fields
   * above from them. */
  uint32_t counts[HS_BATCH_COUNT_WORDS];
} hs_batch;

static inline hs_block *hs__batch_hop(hs_batch *b, int hop) {
  return &b->blocks[b->n_layers - 1 - hop];
}

/* HS_ERR_INVALID_ARG unless `cfg` is usable on `g` (layers, fanouts, a mode
 * that needs weights on a graph that has them, no replacement with
 * thresholds, a budget >= 0). */
hs_status hs__sample_cfg_check(const hs_sample_cfg *cfg, const hs_csr *g);

/* Worst-case sizes of a batch of up to `max_seeds` seeds; HS_ERR_RANGE when
 * they do not fit 32-bit local ids. `max_degree` from hs__csr_max_degree. */
hs_status hs__batch_caps(const hs_sample_cfg *cfg, const hs_csr *g, int64_t max_degree,
                         int32_t max_seeds, hs_batch_caps *out);
/* Allocate every array of a batch at its capacity (no allocation later). */
hs_status hs__batch_alloc(const hs_batch_caps *caps, hs_batch *out);
void hs__batch_free(hs_batch *b);

/* Seeds must be distinct ids in [0, n_vertices). `scratch` holds n ints. */
hs_status hs__seeds_check(const int32_t *seeds, int32_t n, int64_t n_vertices,
                          int32_t *scratch);

/* Source -> destinations view of a block: t_ptr (n_src + 1) and t_col
 * (row_ptr[n_dst] destination ids, ascending within each source). */
void hs__block_transpose(const hs_block *b, int32_t *t_ptr, int32_t *t_col);

/* ---- plain-C reference ----------------------------------------------------- */

/* The edges (absolute positions into g->indices) that the row rules above
 * choose for vertex `v` at hop `hop`; `out` holds caps.row_max entries.
 * Returns the count, or -1 when out of memory. */
int64_t hs__ref_sample_row(const hs_csr *g, const hs_sample_cfg *cfg, int hop, uint32_t epoch,
                           uint32_t batch, int32_t v, int64_t *out);

/* Rows table[ids[i]] -> out[i] for i < n (ids in range). */
void hs__ref_gather(const void *table, size_t row_bytes, const int32_t *ids, int32_t n,
                    void *out);

/* One batch: sample every hop and reindex, single-threaded, into `out`
 * (allocated for these seeds with hs__batch_alloc). */
hs_status hs__ref_sample_batch(const hs_csr *g, const hs_sample_cfg *cfg, const int32_t *seeds,
                               int32_t n_seeds, uint32_t epoch, uint32_t batch, hs_batch *out);

#endif
