/* The builtin GEMM provider: a plain local-memory tiled kernel for devices
 * that have neither CLBlast nor a CPU BLAS. Row-major,
 * C = alpha op(A) op(B) + beta C; work-groups of TILE x TILE, dimension 0
 * over C's columns, dimension 1 over its rows. */
#define TILE 16

__kernel __attribute__((reqd_work_group_size(TILE, TILE, 1)))
void hs_gemm_tiled(int trans_a, int trans_b, int m, int n, int k, float alpha,
                   __global const float *a, ulong a_off, int lda,
                   __global const float *b, ulong b_off, int ldb, float beta,
                   __global float *c, ulong c_off, int ldc) {
  __local float as[TILE][TILE];
  __local float bs[TILE][TILE + 1];
  int col = (int)get_global_id(0), row = (int)get_global_id(1);
  int lc = (int)get_local_id(0), lr = (int)get_local_id(1);
  a += a_off;
  b += b_off;
  c += c_off;
  float acc = 0.0f;
  for (int t = 0; t < k; t += TILE) {
    int ak = t + lc, bk = t + lr;
    as[lr][lc] = row < m && ak < k
                     ? (trans_a ? a[(size_t)ak * lda + row] : a[(size_t)row * lda + ak])
                     : 0.0f;
    bs[lr][lc] = col < n && bk < k
                     ? (trans_b ? b[(size_t)col * ldb + bk] : b[(size_t)bk * ldb + col])
                     : 0.0f;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int p = 0; p < TILE; p++) acc += as[lr][p] * bs[p][lc];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (row < m && col < n) {
    size_t at = (size_t)row * ldc + col;
    c[at] = alpha * acc + (beta == 0.0f ? 0.0f : beta * c[at]);
  }
}
