/* 1-bit compression of float arrays: a sign bit per value and one scale
 * per block of HS_ONEBIT_BLOCK values, the block's root mean square
 * ||x||_2 / sqrt(n), so that each decoded block (+-scale by sign) keeps the
 * L2 norm of the original. (1-bit SGD used the mean magnitude, which
 * shrinks the norm whenever magnitudes vary.) Blocks keep the code local:
 * a block of zeros (the weight rows of features absent from a batch) has
 * scale 0 and decodes to zeros exactly, instead of to noise of the whole
 * tensor's scale.
 *
 * Encoding of n values, 4 ceil(n / B) + ceil(n / 8) bytes (B =
 * HS_ONEBIT_BLOCK, a multiple of 8): block after block, an f32 scale
 * (little-endian) then the block's bits, value i of the block in bit (i % 8)
 * of byte i / 8, 1 meaning negative (a zero decodes to +scale). Scales are
 * computed in double, in index order: the same input gives the same bytes
 * on every machine. */
#ifndef HS_DIST_ONEBIT_H
#define HS_DIST_ONEBIT_H

#include <stddef.h>
#include <stdint.h>

#define HS_ONEBIT_BLOCK 128

static inline size_t hs__onebit_bytes(size_t n) {
  return 4 * ((n + HS_ONEBIT_BLOCK - 1) / HS_ONEBIT_BLOCK) + (n + 7) / 8;
}

/* Encode x[0..n) into out. With `residual` not NULL, also store there what
 * the encoding lost, x - decode(out) (the error fed back next time);
 * `residual` may be x itself. */
void hs__onebit_encode(const float *x, size_t n, uint8_t *out, float *residual);

/* out[i] = decode(in)[i]. */
void hs__onebit_decode(const uint8_t *in, size_t n, float *out);

/* The scale of block b of an encoding. */
float hs__onebit_scale(const uint8_t *in, size_t b);

#endif
