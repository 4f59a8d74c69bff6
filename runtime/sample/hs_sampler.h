/* The sampler on an OpenCL device: topology resident, batches sampled and
 * reindexed on the device and read back into hs_batch structures that
 * equal hs__ref_sample_batch's bit for bit.
 *
 * A batch is enqueued whole (hs__sampler_begin): every hop's kernels take
 * their sizes from a small count array on the device, launches are sized
 * for the batch capacities, and the host learns no count before the batch
 * is done, so it never waits in between. hs__sampler_finish then sets the
 * batch's sizes from the counts read back with it.
 *
 * Read-back. When the capacities' arrays total at most
 * opts.eager_read_limit bytes (the usual case), begin also enqueues the
 * read-back of every array at its capacity (ids, each hop's row offsets
 * and columns) straight into the batch: more bytes than the batch holds,
 * but no host round trip; finish only sets sizes. Above the limit (e.g.
 * fanout -1 on a graph with hubs makes capacities huge), finish reads the
 * exact sizes itself, blocking for the transfer only.
 *
 * Batches in flight. The sampler's queue must be in order. With eager
 * read-back any number of batches may be begun before the first is
 * finished (each into its own hs_batch; the device runs them one after
 * another); with lazy read-back one at a time (begin refuses a second).
 *
 * Device memory: indptr (8 (n+1) bytes, one allocation), indices and
 * weights (4 e bytes each, split into up to 4 allocations at the device's
 * max allocation or $HETSAGE_MAX_ALLOC), a per-vertex reindex array
 * (8 n bytes for the parallel reindex, 4 n for the sequential one, see
 * hs_reindex_style), per-hop outputs and per-batch work arrays sized by
 * hs__batch_caps. Nothing is allocated per batch. */
#ifndef HS_SAMPLER_H
#define HS_SAMPLER_H

#include "hs_dev.h"
#include "hs_sample.h"

typedef enum hs_sampler_style {
  HS_STYLE_AUTO = 0,    /* single work-item on accelerators, else NDRange */
  HS_STYLE_NDRANGE = 1, /* a work-item per vertex / edge (GPUs, CPUs) */
  HS_STYLE_SINGLE = 2,  /* one work-item looping (FPGA compilers pipeline it) */
} hs_sampler_style;

/* How an NDRange sampler reindexes (the single work-item style always
 * reindexes sequentially). Both give the same bits.
 *  - parallel: first appearances by atomic_min, ranks by a scan: about
 *    three random accesses to the per-vertex state per edge (claim, mark,
 *    emit), two scans and a reset pass, shared by every work-item;
 *  - sequential: one work-item, one random access per edge to a 4-byte
 *    per-vertex word tagged by batch, no reset pass.
 * AUTO takes the sequential one on CPU devices of at most
 * HS_SEQ_REINDEX_MAX_CU compute units, the parallel one elsewhere. Why 3:
 * on a CPU the parallel reindex takes 3.7 to 4.7 times the CPU time of the
 * sequential one (perf over bench_sample, generated graphs of 2.4M and
 * 0.2M vertices), so even scaling perfectly it needs about 4 units to
 * break even; measured end to end, the sequential one samples 1.5 to 2
 * times as many edges per second on 1 and on 2 units. */
typedef enum hs_reindex_style {
  HS_REINDEX_AUTO = 0,
  HS_REINDEX_PARALLEL = 1,
  HS_REINDEX_SEQUENTIAL = 2,
} hs_reindex_style;

#define HS_SEQ_REINDEX_MAX_CU 3

typedef struct hs_sampler_opts {
  hs_sampler_style style;
  hs_reindex_style reindex;
  size_t work_group_size; /* NDRange; 0: 64, or the device's limit if lower */
  int32_t max_seeds;      /* largest batch */
  uint32_t rows_per_item; /* NDRange rows (and reindex claims) per work-item;
                             0: 16 on CPUs, else 1 */
  bool profile;           /* accumulate kernel times (needs a profiling queue) */
  size_t eager_read_limit; /* bytes; see "Read-back" above; 0: 32 MiB */
  bool no_prefetch;       /* CPU devices: build the kernels without their software
                             prefetches, as other devices run them (tests) */
} hs_sampler_opts;

/* Kernel time (seconds, from OpenCL profiling events) of everything run
 * since creation, when opts.profile is set. */
typedef struct hs_sampler_stats {
  double sample_s;  /* row sampling, its counts and offsets */
  double reindex_s; /* reindexing, compaction, resets */
  int64_t edges;    /* neighbours sampled, before any budget cut */
  int64_t vertices; /* local ids produced */
  int64_t batches;
  uint64_t bytes_read; /* device -> host: arrays and counts read back */
} hs_sampler_stats;

typedef struct hs_sampler hs_sampler;

/* Get the program (the registry: the device's prebuilt binaries, the
 * binary cache, the sources), upload `g` and allocate work arrays.
 * `ctx` and `dev` are borrowed and must outlive the sampler; `queue` is
 * retained until hs__sampler_destroy; `g` is copied to the device and not
 * kept. `cfg` is copied. */
hs_status hs__sampler_create(const hs_ctx *ctx, const hs_dev *dev, cl_command_queue queue,
                             const hs_csr *g, const hs_sample_cfg *cfg,
                             const hs_sampler_opts *opts, hs_sampler **out);
void hs__sampler_destroy(hs_sampler *s);
/* How the program was built: note->without_speedups says the device's
 * compiler rejected the CPU prefetches and the kernels run without them. */
const hs_build_note *hs__sampler_build_note(const hs_sampler *s);

/* Capacities for hs__batch_alloc of batches this sampler fills. */
const hs_batch_caps *hs__sampler_caps(const hs_sampler *s);
hs_sampler_style hs__sampler_style(const hs_sampler *s);
/* The reindex in use (never AUTO). */
hs_reindex_style hs__sampler_reindex(const hs_sampler *s);
/* Change the NDRange work-group size (0: the default); HS_ERR_UNSUPPORTED
 * above what the device and kernels allow. */
hs_status hs__sampler_set_work_group(hs_sampler *s, size_t wg);
void hs__sampler_stats(const hs_sampler *s, hs_sampler_stats *out);

/* Enqueue one whole batch of `n_seeds` seeds on the sampler's queue and
 * return at once; *ev (released by the caller) completes when the batch's
 * device work and read-back are done; then call hs__sampler_finish with
 * the same `out`. Seeds must be distinct and in range (checked here) and
 * are copied; `out`, allocated from this sampler's caps, must not be
 * touched until finish. On an error nothing stays queued and *ev is NULL.
 * Not thread-safe on one sampler. */
hs_status hs__sampler_begin(hs_sampler *s, const int32_t *seeds, int32_t n_seeds,
                            uint32_t epoch, uint32_t batch, hs_batch *out, cl_event *ev);

/* After the event of `out`'s begin completed: set the batch's sizes (and
 * read the arrays when read-back is lazy). HS_ERR_RANGE when a hop
 * exceeded its capacity (the batch is then unusable). Batches begun
 * together may be finished in any order. */
hs_status hs__sampler_finish(hs_sampler *s, hs_batch *out);

/* Whether begin reads the arrays back itself (see "Read-back"). */
bool hs__sampler_eager_read(const hs_sampler *s);

/* Blocks on the device (default off): begin and finish read back only the
 * ids and the counts, and each hop's block stays in the sampler's buffers
 * (hs__sampler_block_buffers) until the next batch is begun, for the
 * caller to copy device to device on the sampler's queue. The batch's
 * row_ptr/col arrays are then left untouched; its sizes are set as usual
 * (edges: hs__sampler_hop_edges). Change it only with no batch in flight. */
void hs__sampler_keep_blocks(hs_sampler *s, bool keep);
/* Hop `hop`'s row offsets (n_dst + 1 int32) and columns (edges int32). */
void hs__sampler_block_buffers(const hs_sampler *s, int hop, cl_mem *row_ptr, cl_mem *col);
/* Edges hop `hop`'s block keeps, from a finished batch's counts. */
int32_t hs__sampler_hop_edges(const hs_batch *b, int hop);

/* Tests: let the sequential reindex's batch tags wrap after `tag_max`
 * batches (sooner than they would) to exercise the state clearing. */
void hs__sampler_limit_tags(hs_sampler *s, uint32_t tag_max);

/* begin, wait, finish: sample and reindex one batch, blocking. */
hs_status hs__sampler_run(hs_sampler *s, const int32_t *seeds, int32_t n_seeds, uint32_t epoch,
                          uint32_t batch, hs_batch *out);

#endif
