/* Exclusive prefix sum of a uint array in place: x[0..n) becomes the
 * offsets and x[n] the total. Integer sums, so the result does not depend
 * on the launch shape. Three launches: each of n_parts work-items sums a
 * contiguous chunk, one work-item scans the n_parts partial sums, then each
 * chunk is rewritten from its offset. Contiguous chunks suit CPUs and the
 * single work-item style (n_parts = 1); GPUs pay uncoalesced reads here,
 * which is small next to sampling.
 *
 * n is meta[n_at] (hs_sample_meta.h), known only on the device: each
 * kernel derives the same chunking from it (hs_scan_shape), and the host
 * launches enough work-items for the largest n the batch allows. The total
 * also goes to meta[total_at]; above `cap` it is replaced by 0 and the
 * overflow recorded (the caller's hop then does nothing). */

#define HS_SCAN_MIN_CHUNK 256u
#define HS_SCAN_MAX_PARTS 4096u

inline void hs_scan_shape(uint n, uint one_part, uint *chunk, uint *parts) {
  uint p = one_part ? 1u : n / HS_SCAN_MIN_CHUNK;
  p = clamp(p, 1u, HS_SCAN_MAX_PARTS);
  uint c = n == 0u ? 1u : (n + p - 1u) / p;
  *chunk = c;
  *parts = n == 0u ? 1u : (n + c - 1u) / c;
}

__kernel void hs_scan_partials(__global const uint *x, __global const uint *meta,
                               const uint n_at, const uint one_part, __global uint *part) {
  const uint n = meta[n_at];
  uint chunk, n_parts;
  hs_scan_shape(n, one_part, &chunk, &n_parts);
  for (uint g = get_global_id(0); g < n_parts; g += get_global_size(0)) {
    uint b = g * chunk, e = min(n, b + chunk), s = 0;
    for (uint i = b; i < e; i++) s += x[i];
    part[g] = s;
  }
}

__kernel void hs_scan_spine(__global uint *part, __global const uint *meta, const uint n_at,
                            const uint one_part) {
  if (get_global_id(0) != 0) return;
  uint chunk, n_parts;
  hs_scan_shape(meta[n_at], one_part, &chunk, &n_parts);
  uint acc = 0;
  for (uint g = 0; g < n_parts; g++) {
    uint t = part[g];
    part[g] = acc;
    acc += t;
  }
  part[n_parts] = acc;
}

__kernel void hs_scan_apply(__global uint *x, __global uint *meta, const uint n_at,
                            const uint one_part, __global const uint *part,
                            const uint total_at, const uint cap) {
  const uint n = meta[n_at];
  uint chunk, n_parts;
  hs_scan_shape(n, one_part, &chunk, &n_parts);
  for (uint g = get_global_id(0); g < n_parts; g += get_global_size(0)) {
    uint b = g * chunk, e = min(n, b + chunk), acc = part[g];
    for (uint i = b; i < e; i++) {
      uint t = x[i];
      x[i] = acc;
      acc += t;
    }
    if (g == 0) {
      uint total = part[n_parts];
      x[n] = total;
      meta[total_at] = total <= cap ? total : 0u;
      if (total > cap) {
        meta[HS_META_OVERFLOW] = total_at + 1u;
        meta[HS_META_OVERFLOW_VALUE] = total;
      }
    }
  }
}
