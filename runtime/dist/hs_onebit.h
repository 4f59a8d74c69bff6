/* 1-bit compression of float arrays: a sign bit per value and one scale,
 * the root mean square ||x||_2 / sqrt(n), so that the decoded array
 * (+-scale by sign) has the L2 norm of the original. (1-bit SGD used the
 * mean magnitude, which shrinks the norm whenever magnitudes vary.)
 *
 * Encoding of n values, 4 + ceil(n / 8) bytes:
 *   f32 scale (little-endian), then the bits, value i in bit (i % 8) of
 *   byte i / 8, 1 meaning negative (a zero decodes to +scale).
 * The scale is computed in double, in index order: the same input gives
 * the same bytes on every machine. */
#ifndef HS_DIST_ONEBIT_H
#define HS_DIST_ONEBIT_H

#include <stddef.h>
#include <stdint.h>

static inline size_t hs__onebit_bytes(size_t n) { return 4 + (n + 7) / 8; }

/* Encode x[0..n) into out. With `residual` not NULL, also store there what
 * the encoding lost, x - decode(out) (the error fed back next time);
 * `residual` may be x itself. */
void hs__onebit_encode(const float *x, size_t n, uint8_t *out, float *residual);

/* out[i] = decode(in)[i]. */
void hs__onebit_decode(const uint8_t *in, size_t n, float *out);

/* The scale stored in an encoding. */
float hs__onebit_scale(const uint8_t *in);

#endif
