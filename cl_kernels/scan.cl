/* Exclusive prefix sum of a uint array in place: x[0..n) becomes the
 * offsets and x[n] the total. Integer sums, so the result does not depend
 * on the launch shape. Three launches: each of n_parts work-items sums a
 * contiguous chunk, one work-item scans the n_parts partial sums, then each
 * chunk is rewritten from its offset. Contiguous chunks suit CPUs and the
 * single work-item style (n_parts = 1); GPUs pay uncoalesced reads here,
 * which is small next to sampling. */

__kernel void hs_scan_partials(__global const uint *x, const uint n, const uint chunk,
                               const uint n_parts, __global uint *part) {
  for (uint g = get_global_id(0); g < n_parts; g += get_global_size(0)) {
    uint b = g * chunk, e = min(n, b + chunk), s = 0;
    for (uint i = b; i < e; i++) s += x[i];
    part[g] = s;
  }
}

__kernel void hs_scan_spine(__global uint *part, const uint n_parts) {
  if (get_global_id(0) != 0) return;
  uint acc = 0;
  for (uint g = 0; g < n_parts; g++) {
    uint t = part[g];
    part[g] = acc;
    acc += t;
  }
  part[n_parts] = acc;
}

__kernel void hs_scan_apply(__global uint *x, const uint n, const uint chunk,
                            const uint n_parts, __global const uint *part) {
  for (uint g = get_global_id(0); g < n_parts; g += get_global_size(0)) {
    uint b = g * chunk, e = min(n, b + chunk), acc = part[g];
    for (uint i = b; i < e; i++) {
      uint t = x[i];
      x[i] = acc;
      acc += t;
    }
    if (g == 0) x[n] = part[n_parts];
  }
}
