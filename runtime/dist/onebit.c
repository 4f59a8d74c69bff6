/* 1-bit compression (hs_onebit.h). */
#include <math.h>
#include <string.h>

#include "dist/hs_onebit.h"

_Static_assert(HS_ONEBIT_BLOCK % 8 == 0, "blocks hold whole bytes of bits");

static void put_f32(uint8_t *p, float v) {
  uint32_t u;
  memcpy(&u, &v, 4);
  p[0] = (uint8_t)u;
  p[1] = (uint8_t)(u >> 8);
  p[2] = (uint8_t)(u >> 16);
  p[3] = (uint8_t)(u >> 24);
}

static float get_f32(const uint8_t *p) {
  uint32_t u = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
  float v;
  memcpy(&v, &u, 4);
  return v;
}

/* Bytes of block b: its scale, then its bits. */
static size_t block_at(size_t b) { return b * (4 + HS_ONEBIT_BLOCK / 8); }

float hs__onebit_scale(const uint8_t *in, size_t b) { return get_f32(in + block_at(b)); }

void hs__onebit_encode(const float *x, size_t n, uint8_t *out, float *residual) {
  for (size_t b = 0, lo = 0; lo < n; b++, lo += HS_ONEBIT_BLOCK) {
    size_t len = n - lo < HS_ONEBIT_BLOCK ? n - lo : HS_ONEBIT_BLOCK;
    const float *v = x + lo;
    double ss = 0;
    for (size_t i = 0; i < len; i++) ss += (double)v[i] * (double)v[i];
    float scale = (float)sqrt(ss / (double)len);
    uint8_t *p = out + block_at(b);
    put_f32(p, scale);
    uint8_t *bits = p + 4;
    memset(bits, 0, (len + 7) / 8);
    for (size_t i = 0; i < len; i++) bits[i / 8] |= (uint8_t)((v[i] < 0.0f) << (i % 8));
    if (residual) {
      float *r = residual + lo;
      for (size_t i = 0; i < len; i++) r[i] = v[i] - (v[i] < 0.0f ? -scale : scale);
    }
  }
}

void hs__onebit_decode(const uint8_t *in, size_t n, float *out) {
  for (size_t b = 0, lo = 0; lo < n; b++, lo += HS_ONEBIT_BLOCK) {
    size_t len = n - lo < HS_ONEBIT_BLOCK ? n - lo : HS_ONEBIT_BLOCK;
    const uint8_t *p = in + block_at(b);
    float scale = get_f32(p);
    const uint8_t *bits = p + 4;
    for (size_t i = 0; i < len; i++) out[lo + i] = (bits[i / 8] >> (i % 8)) & 1u ? -scale : scale;
  }
}
