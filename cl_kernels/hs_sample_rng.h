/* Random choices of the neighbour sampler, shared verbatim by the OpenCL
 * programs and the plain-C references (runtime/sample/ includes this file),
 * so that every device and the reference make the same choices bit for bit.
 * Only integer arithmetic and IEEE-exact float additions, multiplications
 * and comparisons appear here: no division, no transcendental function,
 * nothing a device may round differently.
 *
 * How a draw is keyed (docs/architecture.md, "Determinism"). One Philox4x32-10 call gives four
 * 32-bit words; draw number `draw` of one stream is word (draw & 3) of the
 * call whose counter is
 *
 *   key      = seed (64 bits)
 *   ctr[0]   = epoch
 *   ctr[1]   = batch (index of the batch within its epoch)
 *   ctr[2]   = layer << 27 | purpose << 24 | (draw >> 2)   (5 + 3 + 24 bits)
 *   ctr[3]   = vertex (original id of the vertex whose row is sampled)
 *
 * `layer` is the hop (0: the hop from the seeds), `purpose` one of
 * HS_RNG_* below. A stream therefore holds 2^26 draws; the weighted and
 * threshold samplers draw once per edge of a row, so rows longer than 2^26
 * edges reuse words (the sample stays valid, its draws are no longer
 * independent). Layers >= 32 alias layers - 32. */
#ifndef HS_SAMPLE_RNG_H
#define HS_SAMPLE_RNG_H

#ifndef __OPENCL_VERSION__
#include "hs_philox.h"
#define HS_CLZ64(x) ((hs_u32)__builtin_clzll(x))
#else
#define HS_CLZ64(x) ((hs_u32)clz(x))
#endif

#define HS_RNG_UNIFORM 0u          /* Floyd's draws, without replacement */
#define HS_RNG_UNIFORM_REPLACE 1u  /* uniform draws with replacement */
#define HS_RNG_WEIGHTED 2u         /* one race key per edge */
#define HS_RNG_WEIGHTED_REPLACE 3u /* inverse-CDF draws */
#define HS_RNG_THRESHOLD 4u        /* one uniform key per qualifying edge */
/* 5..7: free for other users of the same streams (e.g. seed shuffles). */

/* A stream with its last Philox block cached: successive draws cost one
 * Philox call per four words. */
typedef struct hs_rng_stream {
  hs_u64 seed;
  hs_u32 epoch, batch, tag, vertex;
  hs_u32 quad; /* draw >> 2 of `block`; 0xffffffff before the first draw */
  hs_philox_ctr block;
} hs_rng_stream;

HS_PHILOX_INLINE hs_rng_stream hs_rng_open(hs_u64 seed, hs_u32 epoch, hs_u32 batch,
                                           hs_u32 layer, hs_u32 purpose, hs_u32 vertex) {
  hs_rng_stream s;
  s.seed = seed;
  s.epoch = epoch;
  s.batch = batch;
  s.tag = (layer & 31u) << 27 | (purpose & 7u) << 24;
  s.vertex = vertex;
  s.quad = 0xffffffffu;
  s.block.v[0] = s.block.v[1] = s.block.v[2] = s.block.v[3] = 0;
  return s;
}

#ifdef __OPENCL_VERSION__
#define HS_RNG_PTR __private hs_rng_stream *
#else
#define HS_RNG_PTR hs_rng_stream *
#endif

HS_PHILOX_INLINE hs_u32 hs_rng_word(HS_RNG_PTR s, hs_u32 draw) {
  hs_u32 quad = (draw >> 2) & 0xffffffu;
  if (quad != s->quad) {
    s->block = hs_philox_draw(s->seed, s->epoch, s->batch, s->tag | quad, s->vertex);
    s->quad = quad;
  }
  return s->block.v[draw & 3u];
}

/* ---- edge weights, by their bit patterns ---------------------------------- */

/* A weight takes part in weighted sampling when it is positive, normal and
 * finite; zero, subnormal, negative, infinite and NaN weights count as zero
 * (a device that flushes subnormals would otherwise disagree). */
HS_PHILOX_INLINE int hs_weight_ok(hs_u32 bits) {
  hs_u32 e = (bits >> 23) & 0xffu;
  return (bits >> 31) == 0u && e != 0u && e != 0xffu;
}

/* Unsigned integer with the order of the floats (IEEE totalOrder: -0 < +0),
 * so that a threshold compares identically everywhere. */
HS_PHILOX_INLINE hs_u32 hs_float_order(hs_u32 bits) {
  return (bits & 0x80000000u) ? ~bits : (bits | 0x80000000u);
}

/* Threshold rule: weight > threshold in totalOrder; NaN never qualifies. */
HS_PHILOX_INLINE int hs_weight_above(hs_u32 wbits, hs_u32 tbits) {
  if ((wbits & 0x7fffffffu) > 0x7f800000u) return 0;
  return hs_float_order(wbits) > hs_float_order(tbits);
}

/* ---- the race key of weighted sampling without replacement -------------- */

/* -log2(U) for U = (2*word + 1) / 2^33 (never 0 or 1), in unsigned fixed
 * point with 24 fraction bits, by the digit-by-digit squaring method: exact
 * integer steps, so every device gets the same bits. Result in
 * [1, 33 * 2^24]. */
HS_PHILOX_INLINE hs_u32 hs_neglog2_q24(hs_u32 word) {
  hs_u64 x = ((hs_u64)word << 1) | 1u;
  hs_u32 n = 63u - HS_CLZ64(x); /* x in [2^n, 2^(n+1)), n <= 32 */
  /* y = x / 2^n in [1, 2) with 30 fraction bits */
  hs_u64 y = n <= 30u ? x << (30u - n) : x >> (n - 30u);
  hs_u32 frac = 0;
  for (int i = 23; i >= 0; i--) {
    y = (y * y) >> 30;
    if (y >= ((hs_u64)2u << 30)) {
      y >>= 1;
      frac |= 1u << i;
    }
  }
  return ((33u - n) << 24) - frac;
}

/* Efraimidis–Spirakis by exponential races: edge i gets the key E_i / w_i
 * with E_i = -ln U_i, and the k smallest keys are a weighted sample without
 * replacement. -log2 replaces -ln (a common factor), and the quotient by the
 * float weight is taken on its integer mantissa and exponent, then packed as
 * a positive float-like number that orders as an unsigned integer:
 * bits 63..54 exponent, 53..0 mantissa. `wbits` must pass hs_weight_ok. */
HS_PHILOX_INLINE hs_u64 hs_race_key(hs_u32 word, hs_u32 wbits) {
  hs_u32 e = (wbits >> 23) & 0xffu;
  hs_u64 mant = (hs_u64)((wbits & 0x7fffffu) | 0x800000u);
  hs_u64 q = ((hs_u64)hs_neglog2_q24(word) << 32) / mant; /* in (2^8, 2^39) */
  hs_u32 s = HS_CLZ64(q);
  hs_u64 m = q << s;
  hs_u64 exp = (hs_u64)(320u - s - e); /* in [11, 294] */
  return exp << 54 | m >> 10;
}

/* Key of a qualifying edge under threshold sampling: uniform among them. */
HS_PHILOX_INLINE hs_u64 hs_uniform_key(hs_u32 word) { return (hs_u64)word; }

#endif
