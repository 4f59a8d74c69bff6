/* hetsage — distributed training: data parallelism over MPI.
 *
 * A distributed run is a group of processes (ranks), typically one per
 * machine, each running the single-board pipeline on its own board. Each
 * epoch's shuffled training seeds are cut into one contiguous slice per
 * worker; every worker trains the same number of steps on its slice (the
 * short last batch of a slice is weighted by its seed count, and a worker
 * whose slice is used up contributes nothing to that step), and the ranks
 * combine what they learned in one of three ways (hs_sync_mode).
 *
 * A world (hs_world) is the group: MPI_COMM_WORLD, or a communicator of an
 * application that uses MPI itself. Sessions given a world
 * (hs_session_config.world) are distributed: every rank creates its session
 * with the same options on a copy of the same dataset (checked at creation:
 * differing options or datasets refuse to start, naming the rank and what
 * differs), and calls the same session functions in the same order
 * (training, evaluation, save, load are collective). Without MPI in the
 * build, a world has one rank.
 *
 * Determinism: for a given world size, seed and options, allreduce, local,
 * and ps with staleness 0 and every worker in the quorum give bit-identical
 * parameters run to run: every sum over ranks is added in rank order by
 * hetsage itself, never by the MPI library. A world of one rank trains
 * exactly as a session without a world. ps with staleness > 0 or a partial
 * quorum applies gradients in the order they arrive, which varies.
 *
 * Faults: a rank that sends nothing for timeout_s while others wait for it
 * (it died, stalled or its link is down) makes them fail with HS_ERR_PEER
 * naming it; the command-line tool then ends the whole run. */
#ifndef HETSAGE_DIST_H
#define HETSAGE_DIST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hetsage/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum hs_sync_mode {
  /* Every step, gradients are averaged over the workers (weighted by each
   * worker's seeds in the step) by a bucketed reduce-scatter + all-gather
   * started as buckets become ready; every worker applies the optimizer to
   * the same average. */
  HS_SYNC_ALLREDUCE = 0,
  /* Parameter server: the last `servers` ranks hold shards of the
   * parameters and the optimizer state; the workers push gradients and
   * pull parameters. Synchronous (staleness 0): a step is applied once
   * `quorum` workers' gradients for it arrived; a gradient arriving after
   * its step was applied (a straggler's, with quorum < workers) is not
   * dropped: it is added to the next step applied, one step stale,
   * weighted by its seeds, and counted (hs_epoch_stats.dist_late_gradients);
   * its worker gets the current parameters at once. Asynchronous
   * (staleness S > 0): gradients are summed as they arrive and applied
   * `quorum` at a time, each worker answered at once, unless it is more
   * than S steps ahead of the slowest: then it waits. The answer looks
   * ahead to where the worker's next gradient will be applied: by
   * h = (pushes waiting in the sum + other workers still in the epoch) /
   * quorum updates (h <= S), each predicted as the optimizer's own step
   * with the mean of the gradients waiting (with two workers the first of
   * each pair, answered before the pair's update, gets the parameters as
   * they will be after it); with h = 0, and at the end
   * of each epoch, p itself. (Quorum 1 applies every gradient alone, which scales
   * the effective learning rate by about the number of workers.) */
  HS_SYNC_PS = 1,
  /* Local SGD: each worker steps its own optimizer; every `period` steps
   * (and at the end of each epoch) the parameters are averaged, weighted by
   * the seeds each worker trained since the last average. Optimizer
   * moments stay per worker. */
  HS_SYNC_LOCAL = 2,
} hs_sync_mode;

/* "allreduce", "ps", "local"; never NULL. */
HS_API const char *hs_sync_mode_name(hs_sync_mode m);

typedef enum hs_compress {
  HS_COMPRESS_NONE = 0,
  /* Sign bits plus one scale per chunk, the chunk's L2 norm / sqrt(n),
   * with error feedback on both sides: allreduce compresses the gradient
   * chunks and the reduced chunks; ps the pushed gradients and the pulled
   * parameter changes; local the parameter changes since the last
   * average. Tensors smaller than compress_min and the first
   * compress_warmup steps travel as floats.
   *
   * allreduce with Adam is 1-bit Adam (Tang et al., 2021): the warm-up
   * steps are ordinary Adam on the all-reduced gradient; then the second
   * moment v is frozen (its bias-corrected root floored at 0.1 x its
   * tensor's mean), each rank folds its own gradient into the shared first
   * moment m, the ranks' m / (sqrt(v) + eps) travel compressed (as above)
   * and every rank applies the same update from their average. It needs a
   * warm-up of at least one step (v estimated from it). */
  HS_COMPRESS_1BIT = 1,
} hs_compress;

/* "none", "1bit"; never NULL. */
HS_API const char *hs_compress_name(hs_compress c);

/* compress_warmup's default: chosen by the mode and the optimizer. */
#define HS_COMPRESS_WARMUP_AUTO (-1)
/* The automatic warm-up of 1-bit Adam, in steps. */
#define HS_ONEBIT_ADAM_WARMUP 60

typedef struct hs_dist_config {
  size_t struct_size; /* set by hs_dist_config_init (hetsage/version.h) */
  hs_sync_mode sync;
  int servers;   /* ps: ranks holding parameter shards, the last ones (1) */
  int staleness; /* ps: 0 synchronous, S > 0 asynchronous with bound S (0) */
  int quorum;    /* ps: gradients per update (0: all workers) */
  int period;    /* local: steps between averages (8) */
  hs_compress compress;
  /* Steps trained uncompressed first; HS_COMPRESS_WARMUP_AUTO (the
   * default): HS_ONEBIT_ADAM_WARMUP for 1-bit Adam (allreduce, Adam), 0
   * otherwise. */
  int64_t compress_warmup;
  int64_t compress_min;    /* smaller tensors are never compressed (1024) */
  size_t bucket_bytes;     /* allreduce bucket size (1 MiB) */
  /* A peer silent this long during training steps is reported dead or
   * stalled (60 s); start-up (program builds), evaluation by rank 0 while
   * the others wait, and checkpoints allow start_timeout_s (900 s). */
  double timeout_s;
  double start_timeout_s;
} hs_dist_config;

HS_API void hs_dist_config_init_sized(hs_dist_config *cfg, size_t struct_size);
/* Fill `cfg` with the defaults above; struct_size set. */
static inline void hs_dist_config_init(hs_dist_config *cfg) {
  hs_dist_config_init_sized(cfg, sizeof *cfg);
}

typedef struct hs_world hs_world;

/* The world of this process: with MPI, MPI_COMM_WORLD, initialising MPI
 * (MPI_THREAD_SERIALIZED) when nobody did, and finalising it in
 * hs_world_destroy in that case; `argc`/`argv` go to MPI_Init_thread and
 * may be NULL. Without MPI in the build: one rank, or HS_ERR_UNSUPPORTED
 * when an MPI launcher started several processes. */
HS_API hs_status hs_world_init(int *argc, char ***argv, hs_world **out);

/* A world over the caller's communicator: `mpi_comm` points to an MPI_Comm
 * (duplicated: hetsage's messages never match the caller's receives). MPI
 * must be initialised with MPI_THREAD_SERIALIZED or more. */
HS_API hs_status hs_world_from_mpi(const void *mpi_comm, hs_world **out);

/* Release (sessions using it must be destroyed first). Collective: every
 * rank calls it; it waits at most the world's timeout for the others. When
 * hs_world_init initialised MPI, MPI is finalised here; should MPICH's
 * MPI_Finalize still run 5 s after every rank arrived (a deadlock of MPICH
 * 4.0 over UCX's TCP transport), the process shuts down the TCP connections
 * MPI made, everything of hetsage's having been delivered, so that every
 * rank's MPI_Finalize ends normally (the process is not ended: a process
 * that ends within MPI_Finalize makes MPICH's launcher fail; only if it
 * still runs 30 s later does the process end, with status 0). The guard
 * tells MPI's connections by when they were made: a TCP connection that the
 * application opened after hs_world_init and keeps past hs_world_destroy is
 * shut down too in that case; an application that needs one should pass
 * its own communicator (hs_world_from_mpi) and finalise MPI itself. */
HS_API void hs_world_destroy(hs_world *w);

HS_API int hs_world_rank(const hs_world *w);
HS_API int hs_world_size(const hs_world *w);
/* The host name of this rank as the MPI library knows it. */
HS_API void hs_world_host(const hs_world *w, char *buf, size_t len);
/* Wait until every rank arrives (at most the start-up timeout of
 * `cfg`, NULL: the default's; HS_ERR_PEER names a rank that does not). */
HS_API hs_status hs_world_barrier(hs_world *w, const hs_dist_config *cfg);

/* End every rank of the run with exit status `code` (after an error that
 * leaves the others waiting). With one rank, returns. */
HS_API void hs_world_abort(hs_world *w, int code);

/* Whether this build has MPI, and the library's version line ("" if not). */
HS_API bool hs_world_have_mpi(void);
HS_API const char *hs_world_library(void);

#ifdef __cplusplus
}
#endif
#endif
