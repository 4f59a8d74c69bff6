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

/* Sparse rows (the cache's pool, hs_cache.h): a batch's entries in CSR.
 * Row i's entries go to col/val[ptr[i] .. ptr[i+1]) from the pool at entry
 * from[i] (a hit) when from[i] >= 0, else from the staged misses at entry
 * -1 - from[i]. Dimension 0 walks a row's entries, dimension 1 the rows,
 * both with grid strides. Values are copied only when has_val (binary
 * rows have none; the caller binds other buffers there). */
__kernel void hs_sparse_rows(__global const int *ptr, __global const long *from, const uint n,
                             __global const int *pool_col, __global const float *pool_val,
                             __global const int *stage_col, __global const float *stage_val,
                             const int has_val, __global int *col, __global float *val) {
  for (uint r = get_global_id(1); r < n; r += get_global_size(1)) {
    int lo = ptr[r], len = ptr[r + 1] - lo;
    long f = from[r];
    __global const int *sc = f >= 0 ? pool_col + f : stage_col + (-1 - f);
    __global const float *sv = f >= 0 ? pool_val + f : stage_val + (-1 - f);
    for (int e = (int)get_global_id(0); e < len; e += (int)get_global_size(0)) {
      col[lo + e] = sc[e];
      if (has_val) val[lo + e] = sv[e];
    }
  }
}
