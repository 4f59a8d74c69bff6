/* The sampler on an OpenCL device: topology resident, one batch at a time
 * sampled and reindexed on the device and read back into an hs_batch that
 * equals hs__ref_sample_batch's bit for bit.
 *
 * Device memory: indptr (8 (n+1) bytes, one allocation), indices and
 * weights (4 e bytes each, split into up to 4 allocations at the device's
 * max allocation or $HETSAGE_MAX_ALLOC), a per-vertex reindex array
 * (8 n bytes) and per-batch work arrays sized by hs__batch_caps. Nothing is
 * allocated per batch. */
#ifndef HS_SAMPLER_H
#define HS_SAMPLER_H

#include "hs_dev.h"
#include "hs_sample.h"

typedef enum hs_sampler_style {
  HS_STYLE_AUTO = 0,    /* single work-item on accelerators, else NDRange */
  HS_STYLE_NDRANGE = 1, /* a work-item per vertex / edge (GPUs, CPUs) */
  HS_STYLE_SINGLE = 2,  /* one work-item looping (FPGA compilers pipeline it) */
} hs_sampler_style;

typedef struct hs_sampler_opts {
  hs_sampler_style style;
  size_t work_group_size; /* NDRange; 0: 64, or the device's limit if lower */
  int32_t max_seeds;      /* largest batch */
  uint32_t rows_per_item; /* NDRange rows (and reindex claims) per work-item;
                             0: 16 on CPUs, else 1 */
  bool profile;           /* accumulate kernel times (needs a profiling queue) */
  const char *binary;     /* a prebuilt program binary to load instead of building
                             from source (devices without a compiler); NULL: build */
} hs_sampler_opts;

/* Kernel time (seconds, from OpenCL profiling events) of everything run
 * since creation, when opts.profile is set. */
typedef struct hs_sampler_stats {
  double sample_s;  /* row sampling, its counts and offsets */
  double reindex_s; /* reindexing, compaction, resets */
  int64_t edges;    /* neighbours sampled, before any budget cut */
  int64_t vertices; /* local ids produced */
  int64_t batches;
} hs_sampler_stats;

typedef struct hs_sampler hs_sampler;

/* Build the programs (binary cache), upload `g` and allocate work arrays.
 * `ctx`, `dev` and `queue` are borrowed and must outlive the sampler; `g`
 * is copied to the device and not kept. `cfg` is copied. */
hs_status hs__sampler_create(const hs_ctx *ctx, const hs_dev *dev, cl_command_queue queue,
                             const hs_csr *g, const hs_sample_cfg *cfg,
                             const hs_sampler_opts *opts, hs_sampler **out);
void hs__sampler_destroy(hs_sampler *s);

/* Build the sampler's program for `dev` and write its binary to `path`: what
 * a board profile's [binaries] entry names for a device that cannot build
 * kernels itself (on such devices the vendor's offline compiler makes it). */
hs_status hs__sampler_save_binary(const hs_ctx *ctx, const hs_dev *dev, const char *path);

/* Capacities for hs__batch_alloc of batches this sampler fills. */
const hs_batch_caps *hs__sampler_caps(const hs_sampler *s);
hs_sampler_style hs__sampler_style(const hs_sampler *s);
/* Change the NDRange work-group size (0: the default); HS_ERR_UNSUPPORTED
 * above what the device and kernels allow. */
hs_status hs__sampler_set_work_group(hs_sampler *s, size_t wg);
void hs__sampler_stats(const hs_sampler *s, hs_sampler_stats *out);

/* Sample and reindex one batch (blocking: returns when `out` is filled).
 * Seeds must be distinct and in range; `out` allocated from this sampler's
 * caps. Not thread-safe on one sampler. */
hs_status hs__sampler_run(hs_sampler *s, const int32_t *seeds, int32_t n_seeds, uint32_t epoch,
                          uint32_t batch, hs_batch *out);

#endif
