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

/* Copy limit: n 16-byte vectors from a to b, each work-item a contiguous
 * chunk of `per_item` vectors (CPU devices stream through memory) or, with
 * per_item = 1, neighbouring work-items neighbouring vectors (GPUs). */
__kernel void hs_probe_copy(__global const uint4 *a, __global uint4 *b, const ulong n,
                            const uint per_item) {
  for (ulong g = get_global_id(0); g * per_item < n; g += get_global_size(0)) {
    ulong s = g * per_item, e = min(n, s + per_item);
    for (ulong i = s; i < e; i++) b[i] = a[i];
  }
}
