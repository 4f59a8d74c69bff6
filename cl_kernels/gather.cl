/* Feature rows resident on a device -> one contiguous block in local-id
 * order (the trainer-side cache). Rows are copied as 16-byte vectors, or
 * 32-bit words, or bytes, as their size allows; dimension 0 walks a row,
 * dimension 1 the rows, both with grid strides so that one work-item (FPGA
 * style) or any NDRange shape works. GPUs spread a row over dimension 0
 * (neighbouring work-items read neighbouring words); CPU devices give each
 * work-item whole rows (dimension 0 of size 1): a core then copies a row
 * in a tight loop instead of a word per work-item (2 to 3 times the rate
 * on PoCL). Software prefetches of rows ahead measured no faster here:
 * the loop has no chain of dependent loads, so the core overlaps rows
 * by itself. */

/* HS_INJECT_FAULT builds the deliberately wrong variant that bring-up
 * runs when asked to prove it catches a broken kernel
 * (HETSAGE_BRINGUP_INJECT=gather): the middle output row has its lowest
 * bit flipped. Only bring-up passes the option, to a program of its own. */
#ifdef HS_INJECT_FAULT
#define HS_GATHER_FAULT(r, n) ((r) == (n) / 2u ? 1u : 0u)
#else
#define HS_GATHER_FAULT(r, n) 0u
#endif

#define HS_GATHER_KERNEL(name, T)                                                     \
  __kernel void name(__global const T *src, const ulong row_elems,                   \
                     __global const int *ids, const uint n, __global T *dst) {        \
    for (uint r = get_global_id(1); r < n; r += get_global_size(1)) {                \
      __global const T *from = src + (ulong)ids[r] * row_elems;                       \
      __global T *to = dst + (ulong)r * row_elems;                                    \
      for (ulong w = get_global_id(0); w < row_elems; w += get_global_size(0))        \
        to[w] = from[w] ^ (T)HS_GATHER_FAULT(r, n);                                   \
    }                                                                                 \
  }

HS_GATHER_KERNEL(hs_gather_rows_u128, uint4)
HS_GATHER_KERNEL(hs_gather_rows_u32, uint)
HS_GATHER_KERNEL(hs_gather_rows_u8, uchar)
