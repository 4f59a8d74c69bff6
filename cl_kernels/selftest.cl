/* Tiny kernels used by the device layer's own tests and by bring-up to
 * check that a device compiles, launches and moves data. */
__kernel void hs_selftest_axpy(const float a, __global const float *x,
                               __global float *y, const uint n) {
  uint i = get_global_id(0);
  if (i < n) y[i] = a * x[i] + y[i];
}

__kernel void hs_selftest_fill_u32(__global uint *out, const uint value,
                                   const uint n) {
  uint i = get_global_id(0);
  if (i < n) out[i] = value + i;
}

#ifdef HS_SELFTEST_BROKEN
/* Compiled only with -DHS_SELFTEST_BROKEN: proves that a failing build
 * reports the compiler's log. */
__kernel void hs_selftest_broken(__global float *x) { x[0] = undeclared_name; }
#endif
