/* Trainer-tier cache (runtime/cache/hs_cache.h): rows staged contiguously
 * -> rows at listed positions of another buffer, dst[idx[r]] = src[r]. It
 * puts a batch's miss rows, uploaded in miss order, at their local ids of
 * the batch feature matrix. Same grid as the gather kernel (gather.cl):
 * dimension 0 walks a row in 32-bit words (bytes when the row size is not a
 * multiple of 4), dimension 1 the rows, both with grid strides, so one
 * work-item or any NDRange shape works. */

#define HS_SCATTER_KERNEL(name, T)                                                    \
  __kernel void name(__global const T *src, const ulong row_elems,                   \
                     __global const int *idx, const uint n, __global T *dst) {        \
    for (uint r = get_global_id(1); r < n; r += get_global_size(1)) {                \
      __global const T *from = src + (ulong)r * row_elems;                            \
      __global T *to = dst + (ulong)idx[r] * row_elems;                               \
      for (ulong w = get_global_id(0); w < row_elems; w += get_global_size(0))        \
        to[w] = from[w];                                                              \
    }                                                                                 \
  }

HS_SCATTER_KERNEL(hs_scatter_rows_u32, uint)
HS_SCATTER_KERNEL(hs_scatter_rows_u8, uchar)
