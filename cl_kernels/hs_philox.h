/* Philox4x32-10 counter-based RNG (Salmon et al., SC'11), shared verbatim
 * by OpenCL C programs and the host (runtime/rng/philox.h includes this
 * file), so that a draw is the same bits on every device and in the plain-C
 * references.
 *
 * Streams are keyed as docs/architecture.md ("Determinism") says: key = seed (64 bits), counter =
 * (epoch|purpose, batch, layer|..., vertex) and a draw index folded into the
 * counter's words by the caller. */
#ifndef HS_PHILOX_H
#define HS_PHILOX_H

#ifdef __OPENCL_VERSION__
typedef uint hs_u32;
typedef ulong hs_u64;
#define HS_PHILOX_INLINE inline
#else
#include <stdint.h>
typedef uint32_t hs_u32;
typedef uint64_t hs_u64;
#define HS_PHILOX_INLINE static inline
#endif

typedef struct hs_philox_ctr {
  hs_u32 v[4];
} hs_philox_ctr;

#define HS_PHILOX_M0 0xD2511F53u
#define HS_PHILOX_M1 0xCD9E8D57u
#define HS_PHILOX_W0 0x9E3779B9u
#define HS_PHILOX_W1 0xBB67AE85u

HS_PHILOX_INLINE hs_u32 hs_philox_mulhilo(hs_u32 a, hs_u32 b, hs_u32 *hi) {
  hs_u64 p = (hs_u64)a * (hs_u64)b;
  *hi = (hs_u32)(p >> 32);
  return (hs_u32)p;
}

/* Ten rounds of Philox4x32 on counter `c` with key (k0, k1). */
HS_PHILOX_INLINE hs_philox_ctr hs_philox4x32_10(hs_philox_ctr c, hs_u32 k0,
                                                hs_u32 k1) {
  for (int r = 0; r < 10; r++) {
    hs_u32 hi0, hi1;
    hs_u32 lo0 = hs_philox_mulhilo(HS_PHILOX_M0, c.v[0], &hi0);
    hs_u32 lo1 = hs_philox_mulhilo(HS_PHILOX_M1, c.v[2], &hi1);
    hs_philox_ctr n;
    n.v[0] = hi1 ^ c.v[1] ^ k0;
    n.v[1] = lo1;
    n.v[2] = hi0 ^ c.v[3] ^ k1;
    n.v[3] = lo0;
    c = n;
    k0 += HS_PHILOX_W0;
    k1 += HS_PHILOX_W1;
  }
  return c;
}

/* The draw for one keyed event: 4 words from
 * key = seed, counter = (a, b, c, d). */
HS_PHILOX_INLINE hs_philox_ctr hs_philox_draw(hs_u64 seed, hs_u32 a, hs_u32 b,
                                              hs_u32 c, hs_u32 d) {
  hs_philox_ctr ctr;
  ctr.v[0] = a;
  ctr.v[1] = b;
  ctr.v[2] = c;
  ctr.v[3] = d;
  return hs_philox4x32_10(ctr, (hs_u32)seed, (hs_u32)(seed >> 32));
}

/* Uniform integer in [0, n) from a 32-bit word without modulo bias worth
 * caring about at graph degrees: the high half of a 32x32 product (Lemire's
 * multiply-shift without the rejection step, so every device does exactly
 * the same work). n must be >= 1. */
HS_PHILOX_INLINE hs_u32 hs_philox_below(hs_u32 word, hs_u32 n) {
  return (hs_u32)(((hs_u64)word * (hs_u64)n) >> 32);
}

/* Uniform float in [0, 1) from the top 24 bits of a word (exact in fp32). */
HS_PHILOX_INLINE float hs_philox_unit(hs_u32 word) {
  return (float)(word >> 8) * (1.0f / 16777216.0f);
}

#endif
