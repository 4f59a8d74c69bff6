/* 1-bit compression (hs_onebit.h). */
#include <math.h>
#include <string.h>

#include "dist/hs_onebit.h"

static void put_f32(uint8_t *p, float v) {
  uint32_t u;
  memcpy(&u, &v, 4);
  p[0] = (uint8_t)u;
  p[1] = (uint8_t)(u >> 8);
  p[2] = (uint8_t)(u >> 16);
  p[3] = (uint8_t)(u >> 24);
}

float hs__onebit_scale(const uint8_t *in) {
  uint32_t u = (uint32_t)in[0] | (uint32_t)in[1] << 8 | (uint32_t)in[2] << 16 |
               (uint32_t)in[3] << 24;
  float v;
  memcpy(&v, &u, 4);
  return v;
}

void hs__onebit_encode(const float *x, size_t n, uint8_t *out, float *residual) {
  double ss = 0;
  for (size_t i = 0; i < n; i++) ss += (double)x[i] * (double)x[i];
  float scale = n ? (float)sqrt(ss / (double)n) : 0.0f;
  put_f32(out, scale);
  uint8_t *bits = out + 4;
  size_t full = n / 8;
  for (size_t b = 0; b < full; b++) {
    const float *v = x + 8 * b;
    unsigned byte = 0;
    for (unsigned k = 0; k < 8; k++) byte |= (unsigned)(v[k] < 0.0f) << k;
    bits[b] = (uint8_t)byte;
  }
  if (n % 8) {
    unsigned byte = 0;
    for (size_t i = 8 * full; i < n; i++) byte |= (unsigned)(x[i] < 0.0f) << (i % 8);
    bits[full] = (uint8_t)byte;
  }
  if (residual)
    for (size_t i = 0; i < n; i++) residual[i] = x[i] - (x[i] < 0.0f ? -scale : scale);
}

void hs__onebit_decode(const uint8_t *in, size_t n, float *out) {
  float scale = hs__onebit_scale(in);
  const uint8_t *bits = in + 4;
  for (size_t i = 0; i < n; i++) out[i] = (bits[i / 8] >> (i % 8)) & 1u ? -scale : scale;
}
