/* Limits that benchmarks divide by, measured on the same device. */

/* Random-read probe: each work-item issues `reads` loads of random 8-byte
 * words; the addresses come from a per-item LCG, never from loaded data,
 * so loads are independent and as many are in flight as the device
 * allows. */
__kernel void hs_probe_random_read(__global const ulong *a, const ulong n_words,
                                   const uint reads, const uint salt, __global ulong *out) {
  uint x = (uint)get_global_id(0) * 0x9E3779B9u ^ salt;
  ulong acc = 0;
  for (uint r = 0; r < reads; r++) {
    x = x * 1664525u + 1013904223u;
    acc += a[((ulong)x * n_words) >> 32];
  }
  out[get_global_id(0)] = acc;
}
