/* Weighted all-reduce of a float vector with a fixed reduction order,
 * bucketed so that it can start while the vector is still being produced,
 * optionally 1-bit compressed with error feedback.
 *
 * The vector is a list of tensors (offset, length), in the order they
 * become ready (the backward pass: output layer first). Consecutive tensors
 * form buckets of about `bucket_bytes`. Each tensor is cut into `size`
 * chunks; rank p owns chunk p of every tensor. For each bucket:
 *
 *   1. every rank sends chunk p of its tensors to rank p (reduce-scatter);
 *   2. rank p adds the contributions in rank order 0..size-1, each weighted
 *      by count_r / sum of counts (the seeds each rank trained on in the
 *      step), starting from rank 0's weighted value, so one rank's result
 *      is its own vector bit for bit;
 *   3. rank p sends its reduced chunk to every rank (all-gather).
 *
 * Every rank therefore ends with the same bits, whatever the MPI library
 * or the arrival order. With compression on (and a world of more than one
 * rank: a lone rank sends nothing, so it compresses nothing), a tensor of
 * at least `min_compress` values travels as sign bits and a scale per
 * chunk (hs_onebit.h), in two phases: each rank compresses its chunk
 * contributions after adding its own residual (worker error feedback);
 * the owner decodes, sums, adds its own residual for the chunk (reducing
 * side error feedback), compresses the sum again and all-gathers that,
 * and every rank, the owner included, uses the decoded result. Smaller
 * tensors travel as floats.
 *
 * A rank with count 0 (no seeds in the step) sends a header only and keeps
 * its residual; if every count is 0 the result is 0.
 *
 * Each step also carries 32 flag bits from every rank; hs__ar_end gives
 * their OR (a stop request reaches every rank in the same step).
 *
 * One engine per vector; engines on one communicator need distinct
 * tag bases (each uses 2 tags per bucket from its base). */
#ifndef HS_DIST_ALLREDUCE_H
#define HS_DIST_ALLREDUCE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dist/hs_comm.h"

typedef struct hs_dist_tensor {
  size_t off, n;
} hs_dist_tensor;

typedef struct hs_ar_cfg {
  const hs_dist_tensor *tensors; /* readiness order; copied */
  int n_tensors;
  size_t n_total;      /* vector length (tensors lie within it) */
  size_t bucket_bytes; /* 0: 4 MiB */
  size_t min_compress; /* tensors shorter travel uncompressed */
  int tag_base;        /* 0 .. HS_COMM_TAG_USER_MAX - 2 * buckets */
} hs_ar_cfg;

typedef struct hs_ar hs_ar;

hs_status hs__ar_create(hs_comm *c, const hs_ar_cfg *cfg, hs_ar **out);
void hs__ar_destroy(hs_ar *a);

int hs__ar_buckets(const hs_ar *a);
/* Tensors [first, first + count) of the configuration form bucket b. */
void hs__ar_bucket_tensors(const hs_ar *a, int b, int *first, int *count);

/* Start a step on `vec` (n_total floats, kept until hs__ar_end; the
 * result replaces it). Receives are posted here. */
hs_status hs__ar_begin(hs_ar *a, float *vec, int64_t count, bool compress, uint32_t flags);
/* Bucket b of vec holds its final values: send it. Buckets may be made
 * ready in any order; each exactly once per step. */
hs_status hs__ar_ready(hs_ar *a, int b);
/* Advance what can advance without waiting. */
hs_status hs__ar_progress(hs_ar *a);
/* Wait for the rest (buckets not made ready are made ready first); the
 * result is in vec. *flags: OR over the ranks; *total: sum of counts (each
 * may be NULL). */
hs_status hs__ar_end(hs_ar *a, uint32_t *flags, int64_t *total);

/* Error feedback state: the worker residual (n_total floats) and the
 * reducing-side residual (n_total floats, this rank's chunks used), for
 * checkpoints. NULL before the first compressed step. */
float *hs__ar_residual(hs_ar *a, bool reducing_side);
/* Zero both residuals (allocating them). */
hs_status hs__ar_residual_init(hs_ar *a);

#endif
