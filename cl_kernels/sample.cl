/* Neighbour sampling on the resident CSR. The row rules are those of
 * runtime/sample/hs_sample.h and give the reference's bits exactly: every
 * random choice comes from hs_sample_rng.h, and the only float arithmetic
 * (weighted draws with replacement) is additions, one multiplication and
 * comparisons, correctly rounded on every OpenCL device with contraction
 * off.
 *
 * `indices` and `weights` may be split into up to four buffers of
 * part_elems elements each (a device's max allocation); an edge is found by
 * division. Needs: hs_common.h, hs_philox.h, hs_sample_rng.h before this. */
#pragma OPENCL FP_CONTRACT OFF

#define HS_MODE_UNIFORM 0u
#define HS_MODE_WEIGHTED 1u
#define HS_MODE_THRESHOLD 2u

#define HS_TOPO_ARGS                                                             \
  __global const hs_off_t *indptr, __global const int *ix0, __global const int *ix1, \
      __global const int *ix2, __global const int *ix3, __global const uint *wt0,     \
      __global const uint *wt1, __global const uint *wt2, __global const uint *wt3,   \
      const ulong part_elems
#define HS_TOPO indptr, ix0, ix1, ix2, ix3, wt0, wt1, wt2, wt3, part_elems

/* What a row sample depends on besides the row. */
typedef struct hs_row_params {
  ulong seed;
  uint epoch, batch, hop, mode, replace, tbits;
  int fanout;
} hs_row_params;

#define HS_PARAMS_ARGS                                                          \
  const ulong seed, const uint epoch, const uint batch, const uint hop,         \
      const int fanout, const uint mode, const uint replace, const uint tbits
#define HS_PARAMS_INIT(p)                                                       \
  hs_row_params p;                                                               \
  p.seed = seed;                                                                 \
  p.epoch = epoch;                                                               \
  p.batch = batch;                                                               \
  p.hop = hop;                                                                   \
  p.fanout = fanout;                                                             \
  p.mode = mode;                                                                 \
  p.replace = replace;                                                           \
  p.tbits = tbits

inline int hs_nbr(HS_TOPO_ARGS, ulong e) {
  if (e < part_elems) return ix0[e];
  ulong p = e / part_elems, o = e - p * part_elems;
  return p == 1 ? ix1[o] : (p == 2 ? ix2[o] : ix3[o]);
}

#ifdef HS_PREFETCH
inline __global const int *hs_nbr_at(HS_TOPO_ARGS, ulong e) {
  if (e < part_elems) return ix0 + e;
  ulong p = e / part_elems, o = e - p * part_elems;
  return p == 1 ? ix1 + o : (p == 2 ? ix2 + o : ix3 + o);
}

inline __global const uint *hs_wbits_at(HS_TOPO_ARGS, ulong e) {
  if (e < part_elems) return wt0 + e;
  ulong p = e / part_elems, o = e - p * part_elems;
  return p == 1 ? wt1 + o : (p == 2 ? wt2 + o : wt3 + o);
}

/* Prefetch the lines of row [start, start + d) that sampling reads: up to
 * four 64-byte lines from its start and its last one (long rows are read
 * at random positions; their other lines are left to chance). */
inline void hs_prefetch_row(HS_TOPO_ARGS, uint mode, long start, long d) {
  if (d <= 0) return;
  for (long o = 0; o < d && o < 64; o += 16) {
    HS_PREFETCH(hs_nbr_at(HS_TOPO, (ulong)(start + o)));
    if (mode != HS_MODE_UNIFORM) HS_PREFETCH(hs_wbits_at(HS_TOPO, (ulong)(start + o)));
  }
  HS_PREFETCH(hs_nbr_at(HS_TOPO, (ulong)(start + d - 1)));
  if (mode != HS_MODE_UNIFORM) HS_PREFETCH(hs_wbits_at(HS_TOPO, (ulong)(start + d - 1)));
}

/* Rows prefetched ahead of the one being sampled (CPU devices). Measured
 * (bench_sample, products scale, 2 cores): 8, 16 and 32 within noise of
 * each other; one line per row instead of up to five, the same. */
#define HS_ROWS_AHEAD 16u
#endif

inline uint hs_wbits(HS_TOPO_ARGS, ulong e) {
  if (e < part_elems) return wt0[e];
  ulong p = e / part_elems, o = e - p * part_elems;
  return p == 1 ? wt1[o] : (p == 2 ? wt2[o] : wt3[o]);
}

/* Whether edge e takes part (eligible weight / above the threshold). */
inline int hs_counts(HS_TOPO_ARGS, const hs_row_params *p, ulong e) {
  if (p->mode == HS_MODE_UNIFORM) return 1;
  uint w = hs_wbits(HS_TOPO, e);
  return p->mode == HS_MODE_WEIGHTED ? hs_weight_ok(w) : hs_weight_above(w, p->tbits);
}

inline int hs_takes_whole_row(const hs_row_params *p, long d) {
  return p->fanout < 0 || (!p->replace && d <= (long)p->fanout);
}

/* How many neighbours the row rules yield for row [start, start + d). */
inline uint hs_row_count(HS_TOPO_ARGS, const hs_row_params *p, long start, long d) {
  uint k = (uint)p->fanout;
  if (p->mode == HS_MODE_UNIFORM) {
    if (hs_takes_whole_row(p, d)) return (uint)d;
    return p->replace ? (d > 0 ? k : 0u) : k;
  }
  uint m = 0;
  for (long i = 0; i < d; i++) m += (uint)hs_counts(HS_TOPO, p, (ulong)(start + i));
  if (hs_takes_whole_row(p, d)) return m;
  if (p->replace) return m > 0u ? k : 0u;
  return m < k ? m : k;
}

/* Writes the row's sampled neighbour ids to out[0 .. hs_row_count) and
 * returns that count. `keys` (same length) is scratch for the keyed modes. */
inline uint hs_row_sample(HS_TOPO_ARGS, const hs_row_params *p, uint v, long start, long d,
                          __global int *out, __global ulong *keys) {
  if (hs_takes_whole_row(p, d)) {
    uint j = 0;
    for (long i = 0; i < d; i++)
      if (hs_counts(HS_TOPO, p, (ulong)(start + i))) out[j++] = hs_nbr(HS_TOPO, (ulong)(start + i));
    return j;
  }
  uint k = (uint)p->fanout;
  uint purpose;
  if (p->mode == HS_MODE_UNIFORM) purpose = p->replace ? HS_RNG_UNIFORM_REPLACE : HS_RNG_UNIFORM;
  else if (p->mode == HS_MODE_WEIGHTED) purpose = p->replace ? HS_RNG_WEIGHTED_REPLACE : HS_RNG_WEIGHTED;
  else purpose = HS_RNG_THRESHOLD;
  hs_rng_stream s = hs_rng_open(p->seed, p->epoch, p->batch, p->hop, purpose, v);

  if (p->replace && p->mode == HS_MODE_UNIFORM) {
    if (d == 0) return 0u;
    for (uint j = 0; j < k; j++)
      out[j] = hs_nbr(HS_TOPO, (ulong)(start + hs_philox_below(hs_rng_word(&s, j), (uint)d)));
    return k;
  }
  if (p->replace) { /* weighted: inverse CDF over prefix sums in row order */
    float total = 0.0f;
    long last = -1;
    for (long i = 0; i < d; i++) {
      uint w = hs_wbits(HS_TOPO, (ulong)(start + i));
      if (hs_weight_ok(w)) {
        total += as_float(w);
        last = i;
      }
    }
    if (last < 0) return 0u;
    for (uint j = 0; j < k; j++) {
      float x = hs_philox_unit(hs_rng_word(&s, j)) * total;
      float acc = 0.0f;
      long pick = last;
      for (long i = 0; i < d; i++) {
        uint w = hs_wbits(HS_TOPO, (ulong)(start + i));
        if (!hs_weight_ok(w)) continue;
        acc += as_float(w);
        if (acc > x) {
          pick = i;
          break;
        }
      }
      out[j] = hs_nbr(HS_TOPO, (ulong)(start + pick));
    }
    return k;
  }
  if (p->mode == HS_MODE_UNIFORM) { /* Floyd; positions first, ids after */
    for (uint j = 0; j < k; j++) {
      uint t = (uint)d - k + j;
      int r = (int)hs_philox_below(hs_rng_word(&s, j), t + 1u);
      int taken = 0;
      for (uint i = 0; i < j; i++) taken |= out[i] == r;
      out[j] = taken ? (int)t : r;
    }
    for (uint j = 0; j < k; j++) out[j] = hs_nbr(HS_TOPO, (ulong)(start + out[j]));
    return k;
  }
  /* Keyed: keep the k smallest (key, position) in sorted order. */
  uint n = 0;
  for (long i = 0; i < d; i++) {
    if (!hs_counts(HS_TOPO, p, (ulong)(start + i))) continue;
    uint word = hs_rng_word(&s, (uint)i);
    ulong key = p->mode == HS_MODE_WEIGHTED
                    ? hs_race_key(word, hs_wbits(HS_TOPO, (ulong)(start + i)))
                    : hs_uniform_key(word);
    /* positions grow, so an equal key goes after: compare strictly */
    if (n == k && key >= keys[k - 1]) continue;
    uint at = n < k ? n++ : k - 1;
    while (at > 0 && keys[at - 1] > key) {
      keys[at] = keys[at - 1];
      out[at] = out[at - 1];
      at--;
    }
    keys[at] = key;
    out[at] = (int)i;
  }
  for (uint j = 0; j < n; j++) out[j] = hs_nbr(HS_TOPO, (ulong)(start + out[j]));
  return n;
}

/* ---- NDRange style -------------------------------------------------------- */

/* Sizes come from `meta` (hs_sample_meta.h): the launch covers the
 * batch's capacity and work-items past the hop's real count do nothing. */

/* Row counts, and each row's start and degree for hs_sample_rows. */
__kernel void hs_sample_count(HS_TOPO_ARGS, HS_PARAMS_ARGS, __global const int *ids,
                              __global const uint *meta, __global uint *cnt,
                              __global long *row_start, __global uint *row_deg) {
  HS_PARAMS_INIT(p);
  const uint n_dst = meta[HS_META_N(hop)];
  for (uint i = get_global_id(0); i < n_dst; i += get_global_size(0)) {
#ifdef HS_PREFETCH
    /* the offsets of this work-item's row HS_ROWS_AHEAD iterations on */
    ulong ahead = (ulong)i + (ulong)HS_ROWS_AHEAD * get_global_size(0);
    if (ahead < n_dst) HS_PREFETCH(&indptr[ids[ahead]]);
#endif
    int v = ids[i];
    long start = indptr[v], d = indptr[v + 1] - start;
    row_start[i] = start;
    row_deg[i] = (uint)d;
    cnt[i] = hs_row_count(HS_TOPO, &p, start, d);
  }
}

/* Each work-item samples `per_item` consecutive rows. On cores that run
 * work-items one after another (CPU devices) misses overlap only if they
 * are issued ahead of the long sampling in between: with HS_PREFETCH the
 * rows are prefetched a fixed distance ahead; without, every row of the
 * block is first touched (first and last edge) by plain loads, which
 * `sink` keeps from being optimised away. GPUs hide latency with other
 * work-items and use per_item = 1. Rows ending past `cap` (only when the
 * offsets overflowed, see hs_scan_apply) are skipped. */
__kernel void hs_sample_rows(HS_TOPO_ARGS, HS_PARAMS_ARGS, __global const int *ids,
                             __global const uint *meta, __global const uint *off,
                             __global int *nbr, __global ulong *keys,
                             __global const long *row_start, __global const uint *row_deg,
                             const uint per_item, const uint cap, __global int *sink) {
  HS_PARAMS_INIT(p);
  const uint n_dst = meta[HS_META_N(hop)];
  for (uint g = get_global_id(0); g < (n_dst + per_item - 1) / per_item;
       g += get_global_size(0)) {
    uint b = g * per_item, e = min(n_dst, b + per_item);
#ifdef HS_PREFETCH
    /* A rolling prefetch HS_ROWS_AHEAD rows ahead, running on into this
     * work-item's next block so the misses never stop overlapping. */
    ulong next_b = (ulong)(g + get_global_size(0)) * per_item;
    for (uint i = b; i < min(e, b + HS_ROWS_AHEAD); i++)
      hs_prefetch_row(HS_TOPO, mode, row_start[i], (long)row_deg[i]);
    for (uint i = b; i < e; i++) {
      ulong j = (ulong)i + HS_ROWS_AHEAD;
      if (j >= e) j = next_b + (j - e);
      if (j < n_dst) hs_prefetch_row(HS_TOPO, mode, row_start[j], (long)row_deg[j]);
      if (off[i + 1] <= cap)
        hs_row_sample(HS_TOPO, &p, (uint)ids[i], row_start[i], (long)row_deg[i], nbr + off[i],
                      keys + off[i]);
    }
#else
    int touched = 0;
    for (uint i = b; i < e; i++)
      if (row_deg[i] > 0u)
        touched ^= hs_nbr(HS_TOPO, (ulong)row_start[i]) ^
                   hs_nbr(HS_TOPO, (ulong)row_start[i] + row_deg[i] - 1u);
    for (uint i = b; i < e; i++)
      if (off[i + 1] <= cap)
        hs_row_sample(HS_TOPO, &p, (uint)ids[i], row_start[i], (long)row_deg[i], nbr + off[i],
                      keys + off[i]);
    if (touched == 0x5eed5eed) *sink = touched;
#endif
  }
}

/* ---- single work-item style: the whole hop in one loop ------------------ */

/* row_ptr: n_dst + 1 offsets. A row is sampled only when at most `cap`
 * edges result (`row_max` bounds any row's yield, so the exact count is
 * needed only near the end); past it the hop is emptied and flagged. */
__kernel void hs_sample_single(HS_TOPO_ARGS, HS_PARAMS_ARGS, __global const int *ids,
                               __global uint *meta, const uint cap, const uint row_max,
                               __global uint *row_ptr, __global int *nbr,
                               __global ulong *keys) {
  HS_PARAMS_INIT(p);
  const uint n_dst = meta[HS_META_N(hop)];
  uint at = 0;
#ifdef HS_PREFETCH
  for (uint i = 0; i < min(n_dst, 2u * HS_ROWS_AHEAD); i++) HS_PREFETCH(&indptr[ids[i]]);
  for (uint i = 0; i < min(n_dst, HS_ROWS_AHEAD); i++)
    hs_prefetch_row(HS_TOPO, mode, indptr[ids[i]], indptr[ids[i] + 1] - indptr[ids[i]]);
#endif
  for (uint i = 0; i < n_dst; i++) {
#ifdef HS_PREFETCH
    /* two stages: a row's offsets, then (when they have arrived) its edges */
    if (i + 2u * HS_ROWS_AHEAD < n_dst) HS_PREFETCH(&indptr[ids[i + 2u * HS_ROWS_AHEAD]]);
    if (i + HS_ROWS_AHEAD < n_dst) {
      int u = ids[i + HS_ROWS_AHEAD];
      hs_prefetch_row(HS_TOPO, mode, indptr[u], indptr[u + 1] - indptr[u]);
    }
#endif
    int v = ids[i];
    long start = indptr[v], d = indptr[v + 1] - start;
    row_ptr[i] = at;
    if (at + row_max > cap) {
      ulong need = (ulong)at + hs_row_count(HS_TOPO, &p, start, d);
      if (need > cap) {
        for (uint j = 0; j <= n_dst; j++) row_ptr[j] = 0u;
        meta[HS_META_OVERFLOW] = HS_META_E(hop) + 1u;
        meta[HS_META_OVERFLOW_VALUE] = (uint)min(need, (ulong)UINT_MAX);
        meta[HS_META_E(hop)] = 0u;
        return;
      }
    }
    at += hs_row_sample(HS_TOPO, &p, (uint)v, start, d, nbr + at, keys + at);
  }
  row_ptr[n_dst] = at;
  meta[HS_META_E(hop)] = at;
}
