/* The sampler's per-batch counts, kept in one small device array ("meta")
 * that the kernels read their sizes from and write their results to, so
 * that a whole batch runs without the host learning any count in between
 * (runtime/sample/sampler.c). Shared by the OpenCL programs and the host
 * code that reads the array back. Indices in 32-bit words: */
#ifndef HS_SAMPLE_META_H
#define HS_SAMPLE_META_H

#define HS_META_HOPS 8                          /* = HS_SAMPLE_MAX_LAYERS */
#define HS_META_N(h) (h)                        /* vertices known before hop h
                                                   (h = n_layers: after all) */
#define HS_META_E(h) (HS_META_HOPS + 1 + (h))   /* edges hop h sampled */
#define HS_META_NEW(h) (2 * HS_META_HOPS + 1 + (h)) /* vertices hop h met first */
#define HS_META_KEPT(h) (3 * HS_META_HOPS + 1 + (h)) /* edges its block keeps */
/* Non-zero when a count exceeded its capacity: 1 + the index of that count;
 * the count itself is then in HS_META_OVERFLOW_VALUE and was replaced by 0
 * (the hop does nothing more). */
#define HS_META_OVERFLOW (4 * HS_META_HOPS + 1)
#define HS_META_OVERFLOW_VALUE (4 * HS_META_HOPS + 2)
#define HS_META_WORDS (4 * HS_META_HOPS + 3)

#endif
