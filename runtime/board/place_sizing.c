/* Placement, second half: once roles and link are fixed, size what runs
 * around them — pipeline mode and depth, gather threads, memory budgets,
 * cache sizes, zero-copy. Each choice leaves a reason with its numbers. */
#include <inttypes.h>
#include <stdio.h>

#include "hs_place.h"

#define DEFAULT_DEPTH 3 /* batch n trains, n+1 is gathered, n+2 sampled */

static void place_pipeline(hs__placer *pc) {
  hs_placement *pl = &pc->box->pub;
  const hs_board_profile *p = pc->prof;
  if (p->pipeline.mode != HS_PIPELINE_AUTO) {
    pl->pipeline = p->pipeline.mode;
    hs__place_reason(pc, "pipeline", "%s: the profile's [pipeline] mode",
                     hs_pipeline_mode_name(pl->pipeline));
  } else if (pc->host_cores <= 2) {
    pl->pipeline = HS_PIPELINE_ASYNC;
    hs__place_reason(pc, "pipeline",
                     "async: %d host core(s), 2 or fewer: one host thread "
                     "drives every stage through OpenCL events",
                     pc->host_cores);
  } else {
    pl->pipeline = HS_PIPELINE_THREADS;
    hs__place_reason(pc, "pipeline",
                     "threads: %d host cores, more than 2: one host thread "
                     "per stage",
                     pc->host_cores);
  }
  if (pl->pipeline == HS_PIPELINE_OFF) {
    pl->depth = 1;
    hs__place_reason(pc, "pipeline", "depth 1: no overlap, one batch at a time");
  } else if (p->pipeline.depth != HS__AUTO) {
    pl->depth = p->pipeline.depth;
    hs__place_reason(pc, "pipeline", "depth %d: the profile's [pipeline] depth",
                     pl->depth);
  } else {
    pl->depth = DEFAULT_DEPTH;
    hs__place_reason(pc, "pipeline",
                     "depth %d: batch n trains while n+1 is gathered and n+2 "
                     "sampled",
                     pl->depth);
  }
}

static void place_gather(hs__placer *pc) {
  hs_placement *pl = &pc->box->pub;
  int free_cores = pl->host_reserved_cores;
  if (pc->prof->roles.gather_threads != HS__AUTO) {
    pl->gather_threads = pc->prof->roles.gather_threads;
    hs__place_reason(pc, "gather",
                     "%d thread(s): the profile's [roles] gather_threads "
                     "(%d host core(s) kept for host threads)",
                     pl->gather_threads, free_cores);
  } else if (free_cores >= 2) {
    pl->gather_threads = free_cores - 1;
    hs__place_reason(pc, "gather",
                     "%d thread(s): %d host cores are kept for host threads, "
                     "one of them left to the stage drivers",
                     pl->gather_threads, free_cores);
  } else {
    pl->gather_threads = 1;
    hs__place_reason(pc, "gather", "1 thread: %s", free_cores
                         ? "1 host core is kept for host threads"
                         : "no host core is kept apart, so it shares cores "
                           "with the roles");
  }
}

static uint64_t min_u64(uint64_t a, uint64_t b) { return a < b ? a : b; }

static hs_status place_memory(hs__placer *pc) {
  hs_placement *pl = &pc->box->pub;
  const hs_board_profile *p = pc->prof;
  const hs_device_info *sd = &pc->devs[pl->sampler.device];
  const hs_device_info *td = &pc->devs[pl->trainer.device];
  uint64_t topo = pc->req->topology_bytes;
  uint64_t su = hs__place_usable(pc, sd), tu = hs__place_usable(pc, td);
  uint64_t hr = (uint64_t)p->memory.headroom_percent;
  char a[32], b[32], c[32], dev[HS__PLACE_DEV_MAX];
  bool shared = pl->sampler.device == pl->trainer.device;
  uint64_t s, t;
  if (p->memory.sampler != HS__AUTO) s = (uint64_t)p->memory.sampler;
  else if (!shared) s = su;
  else if (topo) s = min_u64(su, topo + topo / 100 * hr);
  else s = su / 2;
  if (s > su)
    return hs__fail(HS_ERR_PLACEMENT,
                    "memory: [memory] sampler %s exceeds the %s usable on %s",
                    hs__fmt_bytes(s, a, sizeof a), hs__fmt_bytes(su, b, sizeof b),
                    hs__place_dev(sd, dev, sizeof dev));
  if (p->memory.trainer != HS__AUTO) t = (uint64_t)p->memory.trainer;
  else t = shared ? su - s : tu;
  if (t > (shared ? su - s : tu))
    return hs__fail(HS_ERR_PLACEMENT,
                    "memory: [memory] trainer %s exceeds the %s %s on %s",
                    hs__fmt_bytes(t, a, sizeof a),
                    hs__fmt_bytes(shared ? su - s : tu, b, sizeof b),
                    shared ? "left by the sampler" : "usable",
                    hs__place_dev(td, dev, sizeof dev));
  if (topo && s < topo)
    return hs__fail(HS_ERR_PLACEMENT,
                    "memory: the sampler budget %s is smaller than the "
                    "topology %s it must hold",
                    hs__fmt_bytes(s, a, sizeof a),
                    hs__fmt_bytes(topo, b, sizeof b));
  pl->sampler.budget_bytes = s;
  pl->trainer.budget_bytes = t;
  hs__fmt_bytes(s, a, sizeof a);
  hs__fmt_bytes(t, b, sizeof b);
  if (shared)
    hs__place_reason(pc, "memory",
                     "sampler %s, trainer %s: both share the %s usable on %s "
                     "(%" PRIu64 "%% headroom)%s",
                     a, b, hs__fmt_bytes(su, c, sizeof c),
                     hs__place_dev(sd, dev, sizeof dev), hr,
                     p->memory.sampler != HS__AUTO
                         ? "; sampler from [memory] sampler"
                     : topo ? "; the sampler gets the topology plus headroom"
                            : "; topology unknown, halved");
  else
    hs__place_reason(pc, "memory",
                     "sampler %s, trainer %s: %s of each device's global "
                     "memory (%" PRIu64 "%% headroom)",
                     a, b,
                     p->memory.sampler != HS__AUTO || p->memory.trainer != HS__AUTO
                         ? "the profile's [memory] budgets, or what is usable"
                         : "what is usable",
                     hr);

  if (p->memory.host != HS__AUTO) {
    pl->host_budget_bytes = (uint64_t)p->memory.host;
    hs__place_reason(pc, "memory", "host %s: the profile's [memory] host",
                     hs__fmt_bytes(pl->host_budget_bytes, a, sizeof a));
    return HS_OK;
  }
  /* The CPU device's global memory is the host's memory as OpenCL sees it. */
  for (int i = 0; i < pc->n; i++) {
    if (pc->devs[i].type != HS_DEVICE_CPU) continue;
    pl->host_budget_bytes = hs__place_usable(pc, &pc->devs[i]);
    hs__place_reason(pc, "memory", "host %s: usable global memory of %s",
                     hs__fmt_bytes(pl->host_budget_bytes, a, sizeof a),
                     hs__place_dev(&pc->devs[i], dev, sizeof dev));
    return HS_OK;
  }
  hs__place_reason(pc, "memory",
                   "host: no budget (no CPU device reports the host's memory "
                   "and the profile sets none)");
  return HS_OK;
}

static hs_status place_cache(hs__placer *pc) {
  hs_placement *pl = &pc->box->pub;
  const hs_board_profile *p = pc->prof;
  const hs_device_info *td = &pc->devs[pl->trainer.device];
  uint64_t rb = pc->req->feature_row_bytes, fb = pc->req->feature_bytes;
  uint64_t total = rb ? fb / rb : 0;
  uint64_t budget = pl->trainer.budget_bytes;
  char a[32], b[32], c[32];
  size_t bytes;
  if (p->cache.trainer_rows != HS__AUTO) {
    uint64_t rows = (uint64_t)p->cache.trainer_rows;
    if (rb && (!hs__mul_size(rows, rb, &bytes) || bytes > budget))
      return hs__fail(HS_ERR_PLACEMENT,
                      "cache: [cache] trainer_rows %" PRIu64 " x %" PRIu64
                      " B per row exceed the trainer budget %s",
                      rows, rb, hs__fmt_bytes(budget, a, sizeof a));
    pl->cache_trainer_rows = total && rows > total ? total : rows;
    hs__place_reason(pc, "cache",
                     "trainer %" PRIu64 " row(s): the profile's [cache] "
                     "trainer_rows%s",
                     pl->cache_trainer_rows,
                     total && rows > total ? ", cut to the rows there are" : "");
  } else if (!rb) {
    hs__place_reason(pc, "cache",
                     "trainer 0 rows: the feature row size is unknown");
  } else if (td->type == HS_DEVICE_CPU) {
    hs__place_reason(pc, "cache",
                     "trainer 0 rows: the trainer is a CPU device, the "
                     "features are already in its memory");
  } else {
    uint64_t share = budget / 100 * (uint64_t)p->cache.trainer_percent;
    uint64_t rows = share / rb;
    pl->cache_trainer_rows = total && rows > total ? total : rows;
    hs__place_reason(pc, "cache",
                     "trainer %" PRIu64 " row(s) of %" PRIu64 " B: %d%% of the "
                     "trainer budget %s is %s%s",
                     pl->cache_trainer_rows, rb, p->cache.trainer_percent,
                     hs__fmt_bytes(budget, a, sizeof a),
                     hs__fmt_bytes(share, b, sizeof b),
                     total && rows >= total ? ", enough for every row" : "");
  }

  uint64_t hb = pl->host_budget_bytes;
  if (p->cache.host_bytes != HS__AUTO) {
    pl->cache_host_bytes = (uint64_t)p->cache.host_bytes;
    if (hb && pl->cache_host_bytes > hb)
      return hs__fail(HS_ERR_PLACEMENT,
                      "cache: [cache] host_bytes %s exceed the host budget %s",
                      hs__fmt_bytes(pl->cache_host_bytes, a, sizeof a),
                      hs__fmt_bytes(hb, b, sizeof b));
    hs__place_reason(pc, "cache", "host %s: the profile's [cache] host_bytes",
                     hs__fmt_bytes(pl->cache_host_bytes, a, sizeof a));
  } else if (!hb || !fb) {
    hs__place_reason(pc, "cache", "host 0 B: %s",
                     !hb ? "no host budget, the features stay memory-mapped"
                         : "the feature size is unknown");
  } else if (fb <= hb / 2) {
    hs__place_reason(pc, "cache",
                     "host 0 B: the features (%s) fit in half the host budget "
                     "%s, so they stay in memory",
                     hs__fmt_bytes(fb, a, sizeof a),
                     hs__fmt_bytes(hb, b, sizeof b));
  } else {
    pl->cache_host_bytes = hb / 2;
    hs__place_reason(pc, "cache",
                     "host %s: the features (%s) exceed half the host budget "
                     "%s, so half of it caches rows in front of the slow tier",
                     hs__fmt_bytes(pl->cache_host_bytes, c, sizeof c),
                     hs__fmt_bytes(fb, a, sizeof a),
                     hs__fmt_bytes(hb, b, sizeof b));
  }
  pl->cache_fill = p->cache.fill;
  static const char *const fill_why[] = {
      [HS_CACHE_FILL_FIRST] = "the first rows fetched fill it",
      [HS_CACHE_FILL_DEGREE] = "the highest-degree vertices fill it",
      [HS_CACHE_FILL_PRESAMPLE] = "the most sampled vertices of a "
                                  "pre-sampling pass fill it"};
  hs__place_reason(pc, "cache", "fill %s: %s (%s)",
                   hs_cache_fill_name(pl->cache_fill), fill_why[pl->cache_fill],
                   hs__board_key_line(p, "cache", "fill")
                       ? "the profile's [cache] fill"
                       : "default");
  return HS_OK;
}

static void place_zero_copy(hs__placer *pc) {
  hs_placement *pl = &pc->box->pub;
  const hs_device_info *sd = &pc->devs[pl->sampler.device];
  const hs_device_info *td = &pc->devs[pl->trainer.device];
  char dev[HS__PLACE_DEV_MAX];
  const hs_device_info *lacking = !td->unified_memory   ? td
                                  : !sd->unified_memory ? sd
                                                        : NULL;
  int want = pc->prof->memory.zero_copy;
  if (want != HS__AUTO) {
    pl->zero_copy = want == 1;
    hs__place_reason(pc, "zero-copy", "%s: the profile's [memory] zero_copy%s%s%s",
                     pl->zero_copy ? "yes" : "no",
                     pl->zero_copy && lacking ? ", although " : "",
                     pl->zero_copy && lacking
                         ? hs__place_dev(lacking, dev, sizeof dev)
                         : "",
                     pl->zero_copy && lacking
                         ? " does not report host-unified memory"
                         : "");
    return;
  }
  pl->zero_copy = lacking == NULL;
  if (pl->zero_copy)
    hs__place_reason(pc, "zero-copy",
                     "yes: the sampler's and the trainer's devices report "
                     "host-unified memory, so staging buffers are mapped, not "
                     "copied");
  else
    hs__place_reason(pc, "zero-copy",
                     "no: %s does not report host-unified memory, so staging "
                     "buffers are copied",
                     hs__place_dev(lacking, dev, sizeof dev));
}

hs_status hs__place_sizing(hs__placer *pc) {
  place_pipeline(pc);
  place_gather(pc);
  hs_status st = place_memory(pc);
  if (st != HS_OK) return st;
  st = place_cache(pc);
  if (st != HS_OK) return st;
  place_zero_copy(pc);
  return HS_OK;
}
