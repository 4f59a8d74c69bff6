/* The host tier: feat.npy read by pread through a COO cache of blocks held
 * within a byte budget (see hs_host_tier.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "data/hs_npy.h"
#include "hs_host_tier.h"
#include "sample/hs_gather.h"

#define MIN_BLOCK ((size_t)256 << 10)
#define MAX_BLOCK ((size_t)4 << 20)
#define DEF_BLOCK ((size_t)1 << 20)
/* Rows of an unkept block closer than this share one read: reading a gap
 * this small costs less than another system call and disk request. */
#define MERGE_GAP ((size_t)16 << 10)

/* What one call does with the rows it needs from one block. */
typedef enum group_kind { G_KEPT, G_KEEP, G_RUNS } group_kind;
typedef struct group {
  int32_t i0, i1; /* work[i0..i1) */
  int32_t block;  /* blocks <= rows < 2^31 */
  group_kind kind;
} group;

/* One thread's share of a call: its counts, and its first error. */
typedef struct thread_out {
  int64_t reads;
  uint64_t bytes;
  uint64_t page_bytes;
  hs_status st;
  char detail[256];
} thread_out;

struct hs_host_tier {
  char *path;
  int fd;
  uint64_t data_offset;
  int64_t n, f;
  hs_dtype dtype;
  size_t rb;
  int64_t per_block, n_blocks;
  size_t block_bytes;
  int64_t capacity, kept;
  char *arena;      /* capacity blocks, touched as they are kept */
  int32_t *where;   /* [n_blocks]: arena index of a kept block, or -1 */
  hs_gather_pool *pool; /* borrowed; NULL: the caller's thread alone */
  int n_threads;
  char *scratch;    /* one block per thread: runs of rows from unkept blocks */
  uint64_t *work;   /* [max_ids]: (id << 32 | position), sorted per call */
  group *groups;    /* [max_ids]: the call's rows, block by block */
  thread_out *to;   /* [n_threads] */
  int32_t max_ids;
  int64_t lookups, hits, reads;
  uint64_t bytes_read, page_bytes;
};

/* The page size a disk read cannot go below, for the lower bound of what
 * missed rows cost (hs_host_tier_stats.page_bytes_missed). */
#define PAGE ((uint64_t)4096)

hs_status hs__host_tier_open(const hs_host_tier_cfg *cfg, hs_host_tier **out) {
  *out = NULL;
  if (!cfg->path || cfg->max_ids < 0)
    return hs__fail(HS_ERR_INVALID_ARG, "host tier: no path, or a negative id count");
  hs_host_tier *t = calloc(1, sizeof *t);
  if (!t) return hs__fail(HS_ERR_NOMEM, "host tier");
  t->fd = -1;
  hs_status st = HS_OK;
  t->path = strdup(cfg->path);
  if (!t->path) {
    st = hs__fail(HS_ERR_NOMEM, "host tier");
    goto fail;
  }
  hs__npy_header h;
  if ((st = hs__npy_open(cfg->path, &h, &t->fd))) goto fail;
  if ((st = hs__npy_expect(cfg->path, &h, (1u << HS_DTYPE_FLOAT32) | (1u << HS_DTYPE_FLOAT16),
                           2)))
    goto fail;
  if (h.shape[0] == 0 || h.shape[1] == 0 || h.shape[0] > INT32_MAX) {
    st = hs__fail(HS_ERR_FORMAT, "%s: shape (%llu, %llu): need 1 to 2^31-1 rows of at least "
                  "one feature", cfg->path, (unsigned long long)h.shape[0],
                  (unsigned long long)h.shape[1]);
    goto fail;
  }
  t->data_offset = h.data_offset;
  t->n = (int64_t)h.shape[0];
  t->f = (int64_t)h.shape[1];
  t->dtype = h.dtype;
  t->rb = (size_t)h.shape[1] * h.elem_size; /* fits: the file holds N of them */
  size_t want = cfg->block_bytes ? cfg->block_bytes : DEF_BLOCK;
  want = want < MIN_BLOCK ? MIN_BLOCK : want > MAX_BLOCK ? MAX_BLOCK : want;
  t->per_block = (int64_t)(want / t->rb);
  if (t->per_block < 1) t->per_block = 1;
  if (t->per_block > t->n) t->per_block = t->n;
  t->block_bytes = (size_t)t->per_block * t->rb;
  t->n_blocks = (t->n + t->per_block - 1) / t->per_block;
  uint64_t cap = cfg->budget_bytes / t->block_bytes;
  t->capacity = cap < (uint64_t)t->n_blocks ? (int64_t)cap : t->n_blocks;
  t->max_ids = cfg->max_ids ? cfg->max_ids : 65536;
  if (t->capacity > 0 && !(t->arena = malloc((size_t)t->capacity * t->block_bytes))) {
    st = hs__fail(HS_ERR_NOMEM, "host tier: %lld blocks of %zu B", (long long)t->capacity,
                  t->block_bytes);
    goto fail;
  }
  t->pool = cfg->pool;
  t->n_threads = cfg->pool ? hs__gather_pool_threads(cfg->pool) : 1;
  t->where = malloc(sizeof *t->where * (size_t)t->n_blocks);
  t->scratch = malloc(t->block_bytes * (size_t)t->n_threads);
  t->work = malloc(sizeof *t->work * (size_t)t->max_ids);
  t->groups = malloc(sizeof *t->groups * (size_t)t->max_ids);
  t->to = malloc(sizeof *t->to * (size_t)t->n_threads);
  if (!t->where || !t->scratch || !t->work || !t->groups || !t->to) {
    st = hs__fail(HS_ERR_NOMEM, "host tier");
    goto fail;
  }
  memset(t->where, 0xff, sizeof *t->where * (size_t)t->n_blocks);
  /* The tier reads exactly what it needs, in blocks or runs: kernel
   * read-ahead would only read rows nobody asked for. */
  posix_fadvise(t->fd, 0, 0, POSIX_FADV_RANDOM);
  hs__log(HS_LOG_CACHE,
          "host tier %s: %lld rows of %zu B, %lld rows per block, keeps %lld of %lld blocks",
          cfg->path, (long long)t->n, t->rb, (long long)t->per_block, (long long)t->capacity,
          (long long)t->n_blocks);
  *out = t;
  return HS_OK;
fail:
  hs__host_tier_close(t);
  return st;
}

void hs__host_tier_close(hs_host_tier *t) {
  if (!t) return;
  if (t->fd >= 0) close(t->fd);
  free(t->path);
  free(t->arena);
  free(t->where);
  free(t->scratch);
  free(t->work);
  free(t->groups);
  free(t->to);
  free(t);
}

void hs__host_tier_info(const hs_host_tier *t, hs_host_tier_info *out) {
  out->n_rows = t->n;
  out->n_cols = t->f;
  out->dtype = t->dtype;
  out->row_bytes = t->rb;
  out->rows_per_block = t->per_block;
  out->n_blocks = t->n_blocks;
  out->block_bytes = t->block_bytes;
  out->block_capacity = t->capacity;
}

void hs__host_tier_stats(const hs_host_tier *t, hs_host_tier_stats *out) {
  memset(out, 0, sizeof *out);
  out->lookups = t->lookups;
  out->hits = t->hits;
  out->hit_rate = t->lookups ? (double)t->hits / (double)t->lookups : 0.0;
  out->limit = (double)t->capacity / (double)t->n_blocks;
  out->bytes_read = t->bytes_read;
  out->page_bytes_missed = t->page_bytes;
  out->reads = t->reads;
  out->blocks_kept = t->kept;
  out->cache_bytes = (uint64_t)t->capacity * t->block_bytes;
  out->overhead_bytes = sizeof *t + strlen(t->path) + 1 +
                        ((uint64_t)t->block_bytes + sizeof *t->to) * (uint64_t)t->n_threads +
                        sizeof *t->where * (uint64_t)t->n_blocks +
                        (sizeof *t->work + sizeof *t->groups) * (uint64_t)t->max_ids;
  out->memory_bytes = out->cache_bytes + out->overhead_bytes;
}

void hs__host_tier_stats_reset(hs_host_tier *t) {
  t->lookups = t->hits = t->reads = 0;
  t->bytes_read = t->page_bytes = 0;
}

/* Rows [r0, r0 + k) of the file into buf. */
static hs_status read_rows(const hs_host_tier *t, thread_out *o, int64_t r0, int64_t k,
                           void *buf) {
  size_t len = (size_t)k * t->rb, done = 0;
  uint64_t off = t->data_offset + (uint64_t)r0 * t->rb;
  while (done < len) {
    ssize_t got = pread(t->fd, (char *)buf + done, len - done, (off_t)(off + done));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) {
      /* pool threads read too: strerror's buffer is not theirs to share */
      char msg[128];
      const char *why = got < 0 ? strerror_r(errno, msg, sizeof msg)
                                : "file ends early (truncated?)";
      return hs__fail(HS_ERR_IO, "%s: byte %llu: %s", t->path, (unsigned long long)(off + done),
                      why);
    }
    done += (size_t)got;
  }
  o->reads++;
  o->bytes += len;
  return HS_OK;
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return (x > y) - (x < y);
}

#define ROW(w) ((int64_t)((w) >> 32))
#define POS(w) ((size_t)((w) & 0xffffffffu))

/* Rows of one unkept block, work[i0..i1) (sorted), read in runs through
 * `scratch` (one block). */
static hs_status read_runs(const hs_host_tier *t, thread_out *o, const group *g, char *scratch,
                           char *out) {
  const uint64_t *w = t->work;
  size_t rb = t->rb;
  for (int32_t j = g->i0; j < g->i1;) {
    int64_t r0 = ROW(w[j]), end = r0;
    int32_t k = j + 1;
    while (k < g->i1 && (size_t)(ROW(w[k]) - end) * rb <= MERGE_GAP + rb) end = ROW(w[k++]);
    char *first = out + POS(w[j]) * rb;
    const char *from;
    hs_status st;
    if (end == r0) { /* one row (perhaps asked for several times) */
      if ((st = read_rows(t, o, r0, 1, first))) return st;
      from = first;
    } else {
      if ((st = read_rows(t, o, r0, end - r0 + 1, scratch))) return st;
      from = NULL;
    }
    for (int32_t i = j; i < k; i++) {
      const char *src = from ? from : scratch + (size_t)(ROW(w[i]) - r0) * rb;
      char *dst = out + POS(w[i]) * rb;
      if (dst != src) memcpy(dst, src, rb);
    }
    j = k;
  }
  return HS_OK;
}

/* Bytes of the distinct pages holding the group's rows (sorted). */
static uint64_t group_pages(const hs_host_tier *t, const group *g) {
  uint64_t total = 0, last = UINT64_MAX;
  for (int32_t i = g->i0; i < g->i1; i++) {
    uint64_t off = t->data_offset + (uint64_t)ROW(t->work[i]) * t->rb;
    uint64_t p0 = off / PAGE, p1 = (off + t->rb - 1) / PAGE;
    if (last != UINT64_MAX && p0 <= last) p0 = last + 1;
    if (p1 >= p0) total += (p1 - p0 + 1) * PAGE;
    if (last == UINT64_MAX || p1 > last) last = p1;
  }
  return total;
}

static hs_status run_group(hs_host_tier *t, thread_out *o, group *g, char *scratch, char *out) {
  if (g->kind != G_KEPT) o->page_bytes += group_pages(t, g);
  if (g->kind == G_RUNS) return read_runs(t, o, g, scratch, out);
  int64_t r0 = (int64_t)g->block * t->per_block;
  char *blk = t->arena + (size_t)t->where[g->block] * t->block_bytes;
  if (g->kind == G_KEEP) {
    int64_t k = t->n - r0 < t->per_block ? t->n - r0 : t->per_block;
    hs_status st = read_rows(t, o, r0, k, blk);
    if (st != HS_OK) return st;
    g->kind = G_KEPT; /* loaded: gather_piece's clean-up leaves it kept */
  }
  for (int32_t i = g->i0; i < g->i1; i++)
    memcpy(out + POS(t->work[i]) * t->rb, blk + (size_t)(ROW(t->work[i]) - r0) * t->rb, t->rb);
  return HS_OK;
}

/* One piece of a call, shared by the pool's threads. */
typedef struct piece {
  hs_host_tier *t;
  int32_t n_groups;
  atomic_int next; /* groups are taken one at a time: reads vary in cost */
  char *out;
  thread_out *to;
} piece;

static void piece_worker(void *arg, int th, int n_threads) {
  (void)n_threads;
  piece *p = arg;
  thread_out *o = &p->to[th];
  char *scratch = p->t->scratch + (size_t)th * p->t->block_bytes;
  while (o->st == HS_OK) {
    int g = atomic_fetch_add(&p->next, 1);
    if (g >= p->n_groups) break;
    o->st = run_group(p->t, o, &p->t->groups[g], scratch, p->out);
    if (o->st != HS_OK) snprintf(o->detail, sizeof o->detail, "%s", hs_last_error());
  }
}

/* Sort the piece's ids, decide per block (kept, keep now, read in runs) on
 * this thread, then read and copy on the pool. */
static hs_status gather_piece(hs_host_tier *t, const int32_t *ids, int32_t m, char *out) {
  uint64_t *w = t->work;
  for (int32_t i = 0; i < m; i++) w[i] = (uint64_t)(uint32_t)ids[i] << 32 | (uint32_t)i;
  qsort(w, (size_t)m, sizeof *w, cmp_u64);
  int32_t n_groups = 0;
  for (int32_t i0 = 0; i0 < m;) {
    int64_t b = ROW(w[i0]) / t->per_block;
    int32_t i1 = i0 + 1;
    while (i1 < m && ROW(w[i1]) / t->per_block == b) i1++;
    group *g = &t->groups[n_groups++];
    *g = (group){i0, i1, (int32_t)b, G_RUNS};
    t->lookups += i1 - i0;
    if (t->where[b] >= 0) {
      g->kind = G_KEPT;
      t->hits += i1 - i0;
    } else if (t->kept < t->capacity) {
      g->kind = G_KEEP;
      t->where[b] = (int32_t)t->kept++;
    }
    i0 = i1;
  }
  thread_out *to = t->to;
  memset(to, 0, sizeof *to * (size_t)t->n_threads);
  piece p = {t, n_groups, 0, out, to};
  if (t->pool && n_groups > 1) hs__gather_pool_run(t->pool, piece_worker, &p);
  else piece_worker(&p, 0, 1);
  hs_status st = HS_OK;
  for (int th = 0; th < t->n_threads; th++) {
    t->reads += to[th].reads;
    t->bytes_read += to[th].bytes;
    t->page_bytes += to[th].page_bytes;
    if (st == HS_OK && to[th].st != HS_OK) st = hs__fail(to[th].st, "%s", to[th].detail);
  }
  /* After an error, blocks meant to be kept but not loaded (their read
   * failed, or no thread came to them) are never served; their share of
   * the budget stays spent. */
  for (int32_t i = 0; st != HS_OK && i < n_groups; i++)
    if (t->groups[i].kind == G_KEEP) t->where[t->groups[i].block] = -1;
  return st;
}

hs_status hs__host_tier_gather(hs_host_tier *t, const int32_t *ids, int32_t n, void *out_rows) {
  if (n < 0) return hs__fail(HS_ERR_INVALID_ARG, "host tier: %d ids", n);
  for (int32_t i = 0; i < n; i++)
    if (ids[i] < 0 || ids[i] >= t->n)
      return hs__fail(HS_ERR_RANGE, "host tier %s: id %d at %d is outside [0, %lld)", t->path,
                      ids[i], i, (long long)t->n);
  for (int32_t c = 0; c < n; c += t->max_ids) {
    int32_t m = n - c < t->max_ids ? n - c : t->max_ids;
    hs_status st = gather_piece(t, ids + c, m, (char *)out_rows + (size_t)c * t->rb);
    if (st != HS_OK) return st;
  }
  return HS_OK;
}

static hs_status source_read(void *ctx, const int32_t *ids, int32_t n, void *out) {
  return hs__host_tier_gather(ctx, ids, n, out);
}

hs_row_source hs__host_tier_source(hs_host_tier *t) { return (hs_row_source){source_read, t}; }
