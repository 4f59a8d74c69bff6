/* Reindexing: sampled original ids -> local ids, seeds first, then each
 * hop's new vertices in order of first position in the hop's neighbour
 * list (runtime/sample/hs_sample.h). The state is one dense per-vertex
 * array of pairs on the sampler device, side by side so that a vertex
 * costs one cache miss: LOCAL(v) (-1: not met; -2: met this hop but over
 * the vertex budget) and FIRST(v) (first position this hop, INT_MAX when
 * unset). Only the entries a batch touches are reset afterwards.
 *
 * The NDRange kernels find first positions with atomic_min, which makes the
 * result independent of work-group size and timing; every kernel loops
 * with a grid stride so any launch shape works. hs_reindex_single is the
 * same hop as one sequential loop (FPGA style, and CPU devices with few
 * cores): there the first time a vertex is met is its first position.
 *
 * Counts come from `meta` (hs_sample_meta.h), written by the kernels
 * before: launches cover the batch's capacity and work-items past the
 * real count do nothing. */

#define LOCAL(v) st[2 * (ulong)(v)]
#define FIRST(v) st[2 * (ulong)(v) + 1]

/* `tag` != 0: the state is the sequential reindex's tagged words (see
 * hs_reindex_single). */
__kernel void hs_reindex_seed(__global const int *ids, const uint n, __global int *st,
                              __global uint *meta, const uint tag, const uint lb) {
  for (uint i = get_global_id(0); i < n; i += get_global_size(0)) {
    if (tag == 0u) LOCAL(ids[i]) = (int)i;
    else ((__global uint *)st)[ids[i]] = tag << lb | (i + 2u);
  }
  if (get_global_id(0) == 0) {
    meta[HS_META_N(0)] = n;
    meta[HS_META_OVERFLOW] = 0u;
  }
}

/* Each work-item claims `per_item` consecutive positions: plain loads of
 * their states first (misses that overlap), then atomic_min. The first
 * loop reads LOCAL, which no work-item of this kernel writes: FIRST sits in
 * the same 8 bytes, so the line is brought in all the same, without a
 * plain load of a word that other work-items change atomically (a data
 * race under the OpenCL memory model, whatever the hardware does). The
 * second reads FIRST only through atomic_min: OpenCL C 1.2 has no atomic
 * load, and one that is a locked read-modify-write (atomic_or(p, 0)) costs
 * what atomic_min costs. */
__kernel void hs_reindex_claim(__global const int *nbr, __global const uint *meta,
                               const uint hop, __global int *st, const uint per_item,
                               __global int *sink) {
  const uint e = meta[HS_META_E(hop)];
  for (uint g = get_global_id(0); g < (e + per_item - 1) / per_item; g += get_global_size(0)) {
    uint b = g * per_item, end = min(e, b + per_item);
    int touched = 0;
    for (uint p = b; p < end; p++) touched ^= LOCAL(nbr[p]);
    for (uint p = b; p < end; p++) {
      int u = nbr[p];
      if (LOCAL(u) == -1) atomic_min(&FIRST(u), (int)p);
    }
    if (touched == 0x5eed5eed) *sink = touched;
  }
}

/* flag[p] = 1 where position p is its vertex's first appearance. */
__kernel void hs_reindex_mark(__global const int *nbr, __global const uint *meta,
                              const uint hop, __global const int *st, __global uint *flag) {
  const uint e = meta[HS_META_E(hop)];
  for (uint p = get_global_id(0); p < e; p += get_global_size(0)) {
    int u = nbr[p];
    flag[p] = LOCAL(u) == -1 && FIRST(u) == (int)p;
  }
}

/* rank: the exclusive scan of flag (rank[e] = meta NEW = new vertices of
 * the hop). Also records the vertices known after the hop and, until a
 * budget cut says otherwise, the kept edges. */
__kernel void hs_reindex_assign(__global const int *nbr, __global uint *meta, const uint hop,
                                __global const uint *rank, const uint limit, __global int *st,
                                __global int *ids) {
  const uint e = meta[HS_META_E(hop)], n_prev = meta[HS_META_N(hop)];
  for (uint p = get_global_id(0); p < e; p += get_global_size(0)) {
    if (rank[p + 1] == rank[p]) continue;
    int u = nbr[p];
    uint id = n_prev + rank[p];
    if (id < limit) {
      LOCAL(u) = (int)id;
      ids[id] = u;
    } else {
      LOCAL(u) = -2;
    }
  }
  if (get_global_id(0) == 0) {
    uint fresh = meta[HS_META_NEW(hop)], room = limit - n_prev;
    meta[HS_META_N(hop + 1)] = n_prev + min(fresh, room);
    meta[HS_META_KEPT(hop)] = e;
  }
}

/* col[p] = local id (-2: left out); keep[p] = 1 for edges kept. */
__kernel void hs_reindex_emit(__global const int *nbr, __global const uint *meta,
                              const uint hop, __global const int *st, __global int *col,
                              __global uint *keep) {
  const uint e = meta[HS_META_E(hop)];
  for (uint p = get_global_id(0); p < e; p += get_global_size(0)) {
    int c = LOCAL(nbr[p]);
    col[p] = c;
    keep[p] = c >= 0;
  }
}

/* After a hop that met vertices over the budget: forget them, so that the
 * next hop judges them afresh (and, the budget being full, drops them).
 * Without a cut no vertex is marked -2 and nothing changes. */
__kernel void hs_reindex_forget(__global const int *nbr, __global const uint *meta,
                                const uint hop, __global const uint *rank, __global int *st) {
  const uint e = meta[HS_META_E(hop)];
  for (uint p = get_global_id(0); p < e; p += get_global_size(0)) {
    if (rank[p + 1] == rank[p]) continue;
    int u = nbr[p];
    if (LOCAL(u) == -2) {
      LOCAL(u) = -1;
      FIRST(u) = INT_MAX;
    }
  }
}

/* Drop left-out edges: pos is the exclusive scan of keep. */
__kernel void hs_compact_cols(__global const int *col, __global const uint *meta,
                              const uint hop, __global const uint *pos, __global int *col_out) {
  const uint e = meta[HS_META_E(hop)];
  for (uint p = get_global_id(0); p < e; p += get_global_size(0))
    if (pos[p + 1] != pos[p]) col_out[pos[p]] = col[p];
}

__kernel void hs_compact_rows(__global uint *row_ptr, __global const uint *meta,
                              const uint hop, __global const uint *pos) {
  const uint rows = meta[HS_META_N(hop)] + 1u;
  for (uint i = get_global_id(0); i < rows; i += get_global_size(0))
    row_ptr[i] = pos[row_ptr[i]];
}

/* End of a batch: clear the entries of every admitted vertex (meta N at
 * index `n_at`: the vertices after the last hop). */
__kernel void hs_reindex_reset(__global const int *ids, __global const uint *meta,
                               const uint n_at, __global int *st) {
  const uint n = meta[n_at];
  for (uint i = get_global_id(0); i < n; i += get_global_size(0)) {
    LOCAL(ids[i]) = -1;
    FIRST(ids[i]) = INT_MAX;
  }
}

/* One hop in one loop. row_ptr (n_dst + 1 offsets into nbr, from
 * hs_sample_single or a scan of the row counts) is rewritten for the kept
 * edges. Offsets are clamped to meta E, which an overflow set to 0.
 *
 * Here the state is one 32-bit word per vertex, half the pairs above, so
 * that more of it stays in cache: a batch tag in the bits from `lb` up and
 * a field below (0: not met, 1: met but over the budget, f >= 2: local id
 * f - 2). A word whose tag is not this batch's reads as not met, so no
 * pass resets the state between batches: one random access per edge in
 * all. On CPU devices the state of the position HS_REINDEX_AHEAD on is
 * prefetched: the loop then takes about half the time (bench_sample,
 * products scale, PoCL). (Also measured on a CPU: a branch-free variant
 * of the loop, and plain loads of the state a few positions ahead instead
 * of prefetches, were both no faster, the first clearly slower; prefetch
 * distances of 16, 32, 48, 64 and 96 positions were within noise of each
 * other.) */
#define HS_REINDEX_AHEAD 16u

__kernel void hs_reindex_single(__global const int *nbr, __global uint *row_ptr,
                                __global uint *meta, const uint hop, const uint limit,
                                const uint tag, const uint lb, __global uint *st,
                                __global int *ids, __global int *col) {
  if (get_global_id(0) != 0) return;
  const uint n_dst = meta[HS_META_N(hop)], e = meta[HS_META_E(hop)];
  const uint mask = (1u << lb) - 1u, tagged = tag << lb;
  uint n = n_dst, kept = 0, start = 0;
  for (uint i = 0; i < n_dst; i++) {
    uint end = min(row_ptr[i + 1], e);
    row_ptr[i] = kept;
    for (uint p = start; p < end; p++) {
#ifdef HS_PREFETCH
      if (p + HS_REINDEX_AHEAD < e) HS_PREFETCH_W(&st[nbr[p + HS_REINDEX_AHEAD]]);
#endif
      int u = nbr[p];
      uint w = st[u];
      uint f = (w & ~mask) == tagged ? (w & mask) : 0u;
      if (f == 0u) {
        f = n < limit ? n + 2u : 1u;
        st[u] = tagged | f;
        if (f >= 2u) ids[n++] = u;
      }
      if (f >= 2u) col[kept++] = (int)(f - 2u);
    }
    start = max(start, end);
  }
  if (n >= limit) /* only a full budget drops vertices: forget them */
    for (uint p = 0; p < start; p++)
      if (st[nbr[p]] == (tagged | 1u)) st[nbr[p]] = 0u;
  row_ptr[n_dst] = kept;
  meta[HS_META_N(hop + 1)] = n;
  meta[HS_META_KEPT(hop)] = kept;
}
