/* Block transposes shared by every model: the deterministic counting sort
 * (integer atomics for counts and slots, then each source's list sorted,
 * so the result does not depend on scheduling), its fixed-shape scan, and
 * the per-edge destination map. Reference: runtime/nn/block.c. */
#pragma OPENCL FP_CONTRACT OFF

/* counts[s] += number of edges naming s (counts zeroed beforehand). */
__kernel void hs_tr_count(__global const int *col, int n_edges, __global int *counts) {
  int e = (int)get_global_id(0);
  if (e < n_edges) atomic_inc(&counts[col[e]]);
}

/* Exclusive scan of x[0..n) into ptr[0..n], in chunks of HS_SCAN_CHUNK
 * (hs_train.h) so that the work split, and so the result, does not depend
 * on work-group sizes: chunk sums, a serial scan of the sums, then each
 * chunk's run. */
__kernel void hs_scan_sums(__global const int *x, int n, __global int *sums) {
  int c = (int)get_global_id(0);
  int lo = c * HS_SCAN_CHUNK;
  if (lo >= n) return;
  int hi = min(n, lo + HS_SCAN_CHUNK), s = 0;
  for (int j = lo; j < hi; j++) s += x[j];
  sums[c] = s;
}

__kernel void hs_scan_offsets(__global int *sums, int n, __global int *ptr) {
  if (get_global_id(0) != 0) return;
  int n_chunks = (n + HS_SCAN_CHUNK - 1) / HS_SCAN_CHUNK, run = 0;
  for (int c = 0; c < n_chunks; c++) {
    int s = sums[c];
    sums[c] = run;
    run += s;
  }
  ptr[n] = run;
}

__kernel void hs_scan_apply(__global const int *x, int n, __global const int *sums,
                            __global int *ptr) {
  int c = (int)get_global_id(0);
  int lo = c * HS_SCAN_CHUNK;
  if (lo >= n) return;
  int hi = min(n, lo + HS_SCAN_CHUNK), run = sums[c];
  for (int j = lo; j < hi; j++) {
    ptr[j] = run;
    run += x[j];
  }
}

/* Drop each dst into its src's list; the slot order within a list is
 * arbitrary until hs_tr_sort. hs_tr_fill_eid drops the edge's position
 * instead (sorted, a list is then in increasing dst order too, and a dst
 * named twice keeps its edges in row order). */
__kernel void hs_tr_fill(__global const int *row_ptr, __global const int *col, int n_dst,
                         __global const int *t_ptr, __global int *cursor,
                         __global int *t_dst) {
  int i = (int)get_global_id(0);
  if (i >= n_dst) return;
  for (int e = row_ptr[i]; e < row_ptr[i + 1]; e++) {
    int s = col[e];
    t_dst[t_ptr[s] + atomic_inc(&cursor[s])] = i;
  }
}

__kernel void hs_tr_fill_eid(__global const int *row_ptr, __global const int *col, int n_dst,
                             __global const int *t_ptr, __global int *cursor,
                             __global int *t_eid) {
  int i = (int)get_global_id(0);
  if (i >= n_dst) return;
  for (int e = row_ptr[i]; e < row_ptr[i + 1]; e++) {
    int s = col[e];
    t_eid[t_ptr[s] + atomic_inc(&cursor[s])] = e;
  }
}

/* edst[e] = the dst whose row holds edge e. */
__kernel void hs_edge_dst(__global const int *row_ptr, int n_dst, __global int *edst) {
  int i = (int)get_global_id(0);
  if (i >= n_dst) return;
  for (int e = row_ptr[i]; e < row_ptr[i + 1]; e++) edst[e] = i;
}

static void sift_down(__global int *a, int root, int end) {
  while (2 * root + 1 < end) {
    int child = 2 * root + 1;
    if (child + 1 < end && a[child] < a[child + 1]) child++;
    if (a[root] >= a[child]) return;
    int t = a[root];
    a[root] = a[child];
    a[child] = t;
    root = child;
  }
}

/* Sort each src's list ascending: insertion for short lists, heap sort for
 * the long lists of hub vertices (no quadratic worst case). */
__kernel void hs_tr_sort(__global const int *t_ptr, int n_src, __global int *t_dst) {
  int s = (int)get_global_id(0);
  if (s >= n_src) return;
  __global int *a = t_dst + t_ptr[s];
  int n = t_ptr[s + 1] - t_ptr[s];
  if (n <= 32) {
    for (int j = 1; j < n; j++) {
      int v = a[j], q = j - 1;
      while (q >= 0 && a[q] > v) {
        a[q + 1] = a[q];
        q--;
      }
      a[q + 1] = v;
    }
    return;
  }
  for (int r = n / 2 - 1; r >= 0; r--) sift_down(a, r, n);
  for (int end = n - 1; end > 0; end--) {
    int t = a[0];
    a[0] = a[end];
    a[end] = t;
    sift_down(a, 0, end);
  }
}
