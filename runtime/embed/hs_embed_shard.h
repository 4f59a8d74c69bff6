/* The embedding store sharded over the ranks of a communicator (CTR
 * training under --distributed): row (table, id) lives on rank
 * hs__embed_owner(table, id, size), which serves it to every rank that
 * looks it up and applies every rank's gradients to it.
 *
 * Each step is two collectives, called by every rank with the same tick:
 *
 *   lookup: each rank deduplicates its batch (uniques in first-occurrence
 *     order, as hs__embed_lookup orders them), sends each owner the keys
 *     it owns with their multiplicities (counts first, then keys:
 *     hs__comm_alltoall, hs__comm_alltoallv); each owner looks the keys of
 *     ranks 0..size-1, concatenated in rank order, up in its store as one
 *     batch and returns the rows in request order;
 *   apply: each rank sends its uniques' gradient rows, multiplied by its
 *     weight (its share of the global batch), back along the same routes;
 *     each owner sums the rows of one key in rank order (the first copied,
 *     the others added) and applies the sums as one optimizer step.
 *
 * So a step of `size` ranks is the step one store would take on the
 * global batch (rank 0's examples, then rank 1's, ...) with the gradient
 * of each row summed over the ranks in rank order: the bits depend on the
 * world size and the data, never on arrival order or timing. With one rank
 * the lookup returns what hs__embed_lookup returns for the batch and the
 * apply (weight 1) is hs__embed_apply's: the same bits as an unsharded
 * store. Admission counts every occurrence (multiplicities travel with
 * the keys); the memory budget and the expiry hold per shard, each owner
 * evicting by hs__embed_lookup's rule (rows of the last HS_EMBED_LAG
 * batches kept), so one rank evicts as one unsharded store would.
 *
 * No step overlaps another: the apply of a training lookup comes before
 * the next training lookup (HS_ERR_STATE otherwise), so no owner ever
 * defers a row. Read-only lookups (evaluation) may come at any time, but
 * every rank must make them together. Waits time out as the communicator
 * says (hs__comm_set_timeout), naming the silent rank (HS_ERR_PEER). */
#ifndef HS_EMBED_SHARD_H
#define HS_EMBED_SHARD_H

#include "dist/hs_comm.h"
#include "embed/hs_embed.h"

/* The rank that owns row (table, id) in a world of `size`. */
int hs__embed_owner(int32_t table, uint64_t id, int size);

typedef struct hs_embed_shard hs_embed_shard;

/* This rank's shard: a store made from `cfg` (every rank passes the same
 * configuration, seed included, so a row starts with the same bits
 * whichever rank creates it). `c` is borrowed and must outlive it. */
hs_status hs__embed_shard_create(hs_comm *c, const hs_embed_cfg *cfg, hs_embed_shard **out);
void hs__embed_shard_destroy(hs_embed_shard *s);
/* The store holding this rank's rows (statistics, files). */
hs_embed *hs__embed_shard_store(hs_embed_shard *s);

/* Collective. Fill `b` (from hs__embed_batch_init, cap >= q->n) for this
 * rank's occurrences `q`: uniques, occurrence lists and rows as
 * hs__embed_lookup would; rec is NULL and nothing is deferred (rows not
 * admitted read as zeros). `train`: owners create rows and mark them with
 * `tick` (increasing from training lookup to training lookup, the same on
 * every rank). */
hs_status hs__embed_shard_lookup(hs_embed_shard *s, const hs_embed_query *q, uint32_t tick,
                                 bool train, hs_embed_batch *b);

/* Collective, after the training lookup that filled `b`: the gradients of
 * its uniques (n_unique x dim), each multiplied by `weight`, summed with
 * the other ranks' at the owners in rank order and applied. */
hs_status hs__embed_shard_apply(hs_embed_shard *s, hs_embed_batch *b, const float *grads,
                                float weight);

#endif
