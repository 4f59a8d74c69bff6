/* The sparse host tier: CSR feature rows read by pread through a COO cache
 * of blocks held within a byte budget (see hs_sparse_tier.h). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "data/hs_npy.h"
#include "hs_sparse_tier.h"
#include "sample/hs_gather.h"

#define MIN_BLOCK ((size_t)4 << 10)
#define MAX_BLOCK ((size_t)4 << 20)
/* Rows of an unkept block closer than this in feat_indices.npy share one
 * read (as the dense tier's runs). */
#define MERGE_GAP ((uint64_t)16 << 10)

typedef enum group_kind { G_KEPT, G_KEEP, G_RUNS } group_kind;
typedef struct group {
  int32_t i0, i1; /* work[i0..i1) */
  int64_t block;
  group_kind kind;
} group;

/* One thread's share of a call: its read buffer, counts, first error
 * (its whole detail, as long as hs_last_error's: a long path must not cut
 * off the row and what was wrong). */
typedef struct thread_out {
  char *buf;
  size_t cap;
  int64_t reads, rows;
  uint64_t bytes;
  hs_status st;
  char detail[2048];
} thread_out;

/* One side of the entries on disk: column ids or values. */
typedef struct side {
  char *path;
  int fd;
  uint64_t data_offset;
  size_t esz;
  hs_dtype dtype;
} side;

struct hs_sparse_tier {
  side idx, val;
  bool valued;
  int64_t n, f, nnz;
  const int64_t *ptr;
  int64_t *own_ptr;
  size_t eb; /* bytes of an entry in memory */
  int64_t per_block, n_blocks;
  uint64_t arena_cap, used;
  char *arena;
  int64_t *where; /* [n_blocks]: byte offset of a kept block in the arena, or -1 */
  int64_t kept;
  size_t run_bytes; /* the raw bytes a merged run may reach */
  hs_gather_pool *pool;
  int n_threads;
  uint64_t *work; /* [max_ids]: (id << 32 | position) */
  group *groups;  /* [max_ids] */
  thread_out *to; /* [n_threads] */
  int32_t max_ids;
  /* the call in progress */
  const int32_t *c_ptr;
  int32_t *c_col;
  float *c_val;
  int64_t lookups, hits, reads, rows_checked;
  uint64_t bytes_read;
};

static void side_close(side *s) {
  if (s->fd >= 0) close(s->fd);
  s->fd = -1;
  free(s->path);
  s->path = NULL;
}

/* Open a side's file (hs__npy_open: the file holds exactly the payload
 * its header promises) and require a 1-D array of an allowed dtype. */
static hs_status side_open(const char *path, unsigned allowed, side *s, hs__npy_header *h) {
  s->path = strdup(path);
  if (!s->path) return hs__fail(HS_ERR_NOMEM, "sparse tier");
  hs_status st = hs__npy_open(path, h, &s->fd);
  if (st == HS_OK) st = hs__npy_expect(path, h, allowed, 1);
  if (st != HS_OK) return st;
  s->data_offset = h->data_offset;
  s->esz = h->elem_size;
  s->dtype = h->dtype;
  /* Rows are read where they are asked for: read-ahead would only bring
   * rows nobody asked for. */
  posix_fadvise(s->fd, 0, 0, POSIX_FADV_RANDOM);
  return HS_OK;
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return (x > y) - (x < y);
}

/* feat_indptr.npy into t->own_ptr: 1 .. 2^31 - 1 rows, from 0, never
 * decreasing. */
static hs_status read_offsets(hs_sparse_tier *t, const char *path) {
  hs__npy_header h;
  int fd = -1;
  hs_status st = hs__npy_open(path, &h, &fd);
  if (st == HS_OK)
    st = hs__npy_expect(path, &h, (1u << HS_DTYPE_INT32) | (1u << HS_DTYPE_INT64), 1);
  if (st == HS_OK && (h.count < 2 || h.count - 1 > INT32_MAX))
    st = hs__fail(HS_ERR_FORMAT, "%s: byte %zu: shape (%" PRIu64 ",): need N + 1 offsets for "
                  "1 to 2^31 - 1 rows", path, h.dict_offset, h.count);
  if (st == HS_OK && !(t->own_ptr = malloc(sizeof *t->own_ptr * (size_t)h.count)))
    st = hs__fail(HS_ERR_NOMEM, "%s: %" PRIu64 " offsets", path, h.count);
  if (st == HS_OK) st = hs__npy_read_i64(path, fd, &h, t->own_ptr);
  if (fd >= 0) close(fd);
  if (st != HS_OK) return st;
  const int64_t *p = t->own_ptr;
  if (p[0] != 0)
    return hs__fail(HS_ERR_FORMAT, "%s: element 0 (byte %zu): feat_indptr[0] is %" PRId64
                    ", must be 0", path, h.data_offset, p[0]);
  for (uint64_t i = 1; i < h.count; i++)
    if (p[i] < p[i - 1])
      return hs__fail(HS_ERR_FORMAT, "%s: element %" PRIu64 " (byte %zu): feat_indptr "
                      "decreases: %" PRId64 " after %" PRId64, path, i,
                      h.data_offset + (size_t)i * h.elem_size, p[i], p[i - 1]);
  t->n = (int64_t)h.count - 1;
  t->ptr = p;
  return HS_OK;
}

/* Open a side and require nnz entries. */
static hs_status open_entries(hs_sparse_tier *t, const char *path, unsigned allowed, side *s) {
  hs__npy_header h;
  hs_status st = side_open(path, allowed, s, &h);
  if (st != HS_OK) return st;
  if (h.count != (uint64_t)t->nnz)
    return hs__fail(HS_ERR_FORMAT, "%s: byte %zu: shape (%" PRIu64 ",): the offsets' last "
                    "entry (feat_indptr[N]) is %" PRId64 ": the file must hold that many "
                    "entries", path, h.dict_offset, h.count, t->nnz);
  return HS_OK;
}

hs_status hs__sparse_tier_open(const hs_sparse_tier_cfg *cfg, hs_sparse_tier **out) {
  *out = NULL;
  if (!cfg->indices_path || (!cfg->ptr && !cfg->indptr_path) || cfg->max_ids < 0 ||
      cfg->n_cols < 1 || cfg->n_cols > INT32_MAX ||
      (cfg->ptr && (cfg->n_rows < 1 || cfg->n_rows > INT32_MAX)))
    return hs__fail(HS_ERR_INVALID_ARG, "sparse tier: a path missing, or %" PRId64 " rows, %"
                    PRId64 " columns", cfg->n_rows, cfg->n_cols);
  hs_sparse_tier *t = calloc(1, sizeof *t);
  if (!t) return hs__fail(HS_ERR_NOMEM, "sparse tier");
  t->idx.fd = t->val.fd = -1;
  hs_status st = HS_OK;
  if (cfg->ptr) {
    t->ptr = cfg->ptr;
    t->n = cfg->n_rows;
  } else if ((st = read_offsets(t, cfg->indptr_path)) != HS_OK) {
    goto fail;
  }
  t->f = cfg->n_cols;
  t->nnz = t->ptr[t->n];
  if ((st = open_entries(t, cfg->indices_path, (1u << HS_DTYPE_INT32) | (1u << HS_DTYPE_INT64),
                         &t->idx)))
    goto fail;
  t->valued = cfg->values_path != NULL;
  if (t->valued &&
      (st = open_entries(t, cfg->values_path, (1u << HS_DTYPE_FLOAT32) | (1u << HS_DTYPE_FLOAT16),
                         &t->val)))
    goto fail;
  t->eb = t->valued ? 2 * sizeof(float) : sizeof(int32_t);
  uint64_t total = (uint64_t)t->nnz * t->eb;
  size_t want = cfg->block_bytes ? cfg->block_bytes : (size_t)(cfg->budget_bytes / 16);
  want = want < MIN_BLOCK ? MIN_BLOCK : want > MAX_BLOCK ? MAX_BLOCK : want;
  /* rows of the mean length that fill `want`: want x N / total, want <
   * 2^23 and N < 2^31 */
  t->per_block = total ? (int64_t)((uint64_t)want * (uint64_t)t->n / total) : t->n;
  if (t->per_block < 1) t->per_block = 1;
  if (t->per_block > t->n) t->per_block = t->n;
  t->n_blocks = (t->n + t->per_block - 1) / t->per_block;
  t->run_bytes = want;
  t->arena_cap = cfg->budget_bytes < total ? cfg->budget_bytes : total;
  if (t->arena_cap > SIZE_MAX / 2) t->arena_cap = SIZE_MAX / 2;
  t->max_ids = cfg->max_ids ? cfg->max_ids : 65536;
  t->pool = cfg->pool;
  t->n_threads = cfg->pool ? hs__gather_pool_threads(cfg->pool) : 1;
  if (t->arena_cap && !(t->arena = malloc((size_t)t->arena_cap))) {
    st = hs__fail(HS_ERR_NOMEM, "sparse tier: %" PRIu64 " bytes of kept blocks", t->arena_cap);
    goto fail;
  }
  t->where = malloc(sizeof *t->where * (size_t)t->n_blocks);
  t->work = malloc(sizeof *t->work * (size_t)t->max_ids);
  t->groups = malloc(sizeof *t->groups * (size_t)t->max_ids);
  t->to = calloc((size_t)t->n_threads, sizeof *t->to);
  if (!t->where || !t->work || !t->groups || !t->to) {
    st = hs__fail(HS_ERR_NOMEM, "sparse tier");
    goto fail;
  }
  memset(t->where, 0xff, sizeof *t->where * (size_t)t->n_blocks);
  hs__log(HS_LOG_CACHE,
          "sparse tier %s: %" PRId64 " rows, %" PRId64 " entries (%s), %" PRId64
          " rows per block, %" PRId64 " blocks, keeps %" PRIu64 " of %" PRIu64 " B",
          cfg->indices_path, t->n, t->nnz, t->valued ? "valued" : "binary", t->per_block,
          t->n_blocks, t->arena_cap, total);
  *out = t;
  return HS_OK;
fail:
  hs__sparse_tier_close(t);
  return st;
}

void hs__sparse_tier_close(hs_sparse_tier *t) {
  if (!t) return;
  side_close(&t->idx);
  side_close(&t->val);
  free(t->own_ptr);
  free(t->arena);
  free(t->where);
  free(t->work);
  free(t->groups);
  for (int i = 0; t->to && i < t->n_threads; i++) free(t->to[i].buf);
  free(t->to);
  free(t);
}

void hs__sparse_tier_info(const hs_sparse_tier *t, hs_sparse_tier_info *out) {
  memset(out, 0, sizeof *out);
  out->n_rows = t->n;
  out->n_cols = t->f;
  out->nnz = t->nnz;
  out->valued = t->valued;
  out->index_dtype = t->idx.dtype;
  out->value_dtype = t->valued ? t->val.dtype : HS_DTYPE_NONE;
  out->entry_bytes = t->eb;
  out->rows_per_block = t->per_block;
  out->n_blocks = t->n_blocks;
  out->cache_capacity = t->arena_cap;
}

const int64_t *hs__sparse_tier_offsets(const hs_sparse_tier *t) { return t->ptr; }

void hs__sparse_tier_stats(const hs_sparse_tier *t, hs_sparse_tier_stats *out) {
  memset(out, 0, sizeof *out);
  out->lookups = t->lookups;
  out->hits = t->hits;
  out->hit_rate = t->lookups ? (double)t->hits / (double)t->lookups : 0.0;
  uint64_t total = (uint64_t)t->nnz * t->eb;
  out->limit = total ? (double)t->arena_cap / (double)total : 1.0;
  out->bytes_read = t->bytes_read;
  out->reads = t->reads;
  out->rows_checked = t->rows_checked;
  out->blocks_kept = t->kept;
  out->cache_bytes = t->arena_cap;
  out->cache_used = t->used;
  uint64_t bufs = 0;
  for (int i = 0; i < t->n_threads; i++) bufs += t->to[i].cap;
  out->overhead_bytes = sizeof *t + strlen(t->idx.path) + 1 +
                        (t->val.path ? strlen(t->val.path) + 1 : 0) +
                        (t->own_ptr ? sizeof *t->own_ptr * (uint64_t)(t->n + 1) : 0) +
                        sizeof *t->where * (uint64_t)t->n_blocks +
                        (sizeof *t->work + sizeof *t->groups) * (uint64_t)t->max_ids +
                        sizeof *t->to * (uint64_t)t->n_threads + bufs;
  out->memory_bytes = out->cache_bytes + out->overhead_bytes;
}

void hs__sparse_tier_stats_reset(hs_sparse_tier *t) {
  t->lookups = t->hits = t->reads = t->rows_checked = 0;
  t->bytes_read = 0;
}

/* Bytes [off, off + len) of a side's payload into buf. */
static hs_status read_at(const side *s, thread_out *o, uint64_t off, size_t len, char *buf) {
  size_t done = 0;
  off += s->data_offset;
  while (done < len) {
    ssize_t got = pread(s->fd, buf + done, len - done, (off_t)(off + done));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) {
      char msg[128]; /* pool threads read too: strerror's buffer is shared */
      const char *why = got < 0 ? strerror_r(errno, msg, sizeof msg)
                                : "file ends early (truncated?)";
      return hs__fail(HS_ERR_IO, "%s: byte %" PRIu64 ": %s", s->path, off + done, why);
    }
    done += (size_t)got;
  }
  o->reads++;
  o->bytes += len;
  return HS_OK;
}

/* The raw entries [e0, e1) of both sides into the thread's buffer: column
 * ids first, values after them. */
static hs_status read_entries(const hs_sparse_tier *t, thread_out *o, int64_t e0, int64_t e1,
                              const char **idx, const char **val) {
  size_t k = (size_t)(e1 - e0), ib = k * t->idx.esz, vb = t->valued ? k * t->val.esz : 0;
  size_t need = ib + vb < 64 ? 64 : ib + vb;
  if (need > o->cap) {
    char *b = realloc(o->buf, need);
    if (!b) return hs__fail(HS_ERR_NOMEM, "sparse tier: a read buffer of %zu bytes", need);
    o->buf = b;
    o->cap = need;
  }
  *idx = o->buf;
  *val = o->buf + ib;
  if (k == 0) return HS_OK;
  hs_status st = read_at(&t->idx, o, (uint64_t)e0 * t->idx.esz, ib, o->buf);
  if (st == HS_OK && t->valued) st = read_at(&t->val, o, (uint64_t)e0 * t->val.esz, vb, o->buf + ib);
  return st;
}

static uint64_t byte_of(const side *s, int64_t e) {
  return s->data_offset + (uint64_t)e * s->esz;
}

/* Check row r, whose raw entries start at idx / val (entry ptr[r] of the
 * files), and write it as int32 column ids and float32 values. */
static hs_status decode_row(const hs_sparse_tier *t, int64_t r, const char *idx, const char *val,
                            int32_t *col, float *out_val) {
  int64_t e0 = t->ptr[r], len = t->ptr[r + 1] - e0, prev = -1;
  for (int64_t k = 0; k < len; k++) {
    int64_t c;
    if (t->idx.esz == 8) {
      memcpy(&c, idx + (size_t)k * 8, 8);
    } else {
      int32_t c32;
      memcpy(&c32, idx + (size_t)k * 4, 4);
      c = c32;
    }
    if (c < 0 || c >= t->f)
      return hs__fail(HS_ERR_FORMAT, "%s: row %" PRId64 ", element %" PRId64 " (byte %" PRIu64
                      "): column id %" PRId64 " is outside [0, %" PRId64 ") (F from "
                      "feat_shape.npy)", t->idx.path, r, e0 + k, byte_of(&t->idx, e0 + k), c,
                      t->f);
    if (c <= prev)
      return hs__fail(HS_ERR_FORMAT, "%s: row %" PRId64 ", element %" PRId64 " (byte %" PRIu64
                      "): column %" PRId64 " %s column %" PRId64 ": a row's column ids must be "
                      "strictly increasing", t->idx.path, r, e0 + k, byte_of(&t->idx, e0 + k), c,
                      c == prev ? "repeats" : "comes after", prev);
    prev = c;
    col[k] = (int32_t)c;
  }
  if (!t->valued) return HS_OK;
  for (int64_t k = 0; k < len; k++) {
    bool bad;
    if (t->val.esz == 2) {
      uint16_t h;
      memcpy(&h, val + (size_t)k * 2, 2);
      bad = (h & 0x7c00u) == 0x7c00u;
      if (out_val && !bad) out_val[k] = hs__half_to_float(h);
    } else {
      uint32_t b;
      memcpy(&b, val + (size_t)k * 4, 4);
      bad = (b & 0x7f800000u) == 0x7f800000u;
      if (out_val && !bad) memcpy(&out_val[k], &b, 4);
    }
    if (bad)
      return hs__fail(HS_ERR_FORMAT, "%s: row %" PRId64 ", element %" PRId64 " (byte %" PRIu64
                      "): value is not finite", t->val.path, r, e0 + k,
                      byte_of(&t->val, e0 + k));
  }
  return HS_OK;
}

#define ROW(w) ((int64_t)((w) >> 32))
#define POS(w) ((size_t)((w) & 0xffffffffu))

/* Copy row r's decoded entries (at col / val) to output position p. */
static void put_row(const hs_sparse_tier *t, size_t p, const int32_t *col, const float *val) {
  int32_t dst = t->c_ptr[p], len = t->c_ptr[p + 1] - dst;
  memcpy(t->c_col + dst, col, (size_t)len * sizeof *col);
  if (t->valued && t->c_val) memcpy(t->c_val + dst, val, (size_t)len * sizeof *val);
}

/* A kept block's column ids, then its values (float32). */
static int32_t *block_col(const hs_sparse_tier *t, int64_t b) {
  return (int32_t *)(void *)(t->arena + t->where[b]);
}
static float *block_val(const hs_sparse_tier *t, int64_t b, int64_t entries) {
  return (float *)(void *)(t->arena + t->where[b] + (size_t)entries * sizeof(int32_t));
}

/* Rows of an unkept block, work[i0..i1) (sorted), read in runs and decoded
 * straight into the output. A row asked for several times is read and
 * checked once, then copied. */
static hs_status read_runs(const hs_sparse_tier *t, thread_out *o, const group *g) {
  const uint64_t *w = t->work;
  const int64_t *ptr = t->ptr;
  for (int32_t j = g->i0; j < g->i1;) {
    int64_t r0 = ROW(w[j]), end = r0;
    int32_t k = j + 1;
    while (k < g->i1) {
      int64_t r = ROW(w[k]);
      if (r != end) {
        uint64_t gap = (uint64_t)(ptr[r] - ptr[end + 1]) * t->idx.esz;
        uint64_t span = (uint64_t)(ptr[r + 1] - ptr[r0]) * (t->idx.esz + t->val.esz);
        if (gap > MERGE_GAP || span > t->run_bytes) break;
      }
      end = r;
      k++;
    }
    const char *idx, *val;
    hs_status st = read_entries(t, o, ptr[r0], ptr[end + 1], &idx, &val);
    if (st != HS_OK) return st;
    for (int32_t i = j; i < k; i++) {
      int64_t r = ROW(w[i]);
      size_t p = POS(w[i]);
      if (i > j && r == ROW(w[i - 1])) {
        /* a repeat: copy the first copy's entries */
        size_t q = POS(w[i - 1]);
        int32_t from = t->c_ptr[q], len = t->c_ptr[q + 1] - from, dst = t->c_ptr[p];
        memcpy(t->c_col + dst, t->c_col + from, (size_t)len * sizeof *t->c_col);
        if (t->valued && t->c_val)
          memcpy(t->c_val + dst, t->c_val + from, (size_t)len * sizeof *t->c_val);
        continue;
      }
      int64_t at = ptr[r] - ptr[r0];
      int32_t dst = t->c_ptr[p];
      if ((st = decode_row(t, r, idx + (size_t)at * t->idx.esz,
                           val + (size_t)at * (t->valued ? t->val.esz : 0), t->c_col + dst,
                           t->c_val ? t->c_val + dst : NULL)) != HS_OK)
        return st;
      o->rows++;
    }
    j = k;
  }
  return HS_OK;
}

static hs_status run_group(const hs_sparse_tier *t, thread_out *o, group *g) {
  if (g->kind == G_RUNS) return read_runs(t, o, g);
  const int64_t *ptr = t->ptr;
  int64_t r0 = g->block * t->per_block;
  int64_t r1 = r0 + t->per_block < t->n ? r0 + t->per_block : t->n;
  int64_t e0 = ptr[r0], entries = ptr[r1] - e0;
  int32_t *bc = block_col(t, g->block);
  float *bv = t->valued ? block_val(t, g->block, entries) : NULL;
  if (g->kind == G_KEEP) {
    const char *idx, *val;
    hs_status st = read_entries(t, o, e0, ptr[r1], &idx, &val);
    if (st != HS_OK) return st;
    for (int64_t r = r0; r < r1; r++) {
      int64_t at = ptr[r] - e0;
      st = decode_row(t, r, idx + (size_t)at * t->idx.esz,
                      val + (size_t)at * (t->valued ? t->val.esz : 0), bc + at,
                      bv ? bv + at : NULL);
      if (st != HS_OK) return st;
    }
    o->rows += r1 - r0;
    g->kind = G_KEPT; /* loaded and checked: the clean-up leaves it kept */
  }
  for (int32_t i = g->i0; i < g->i1; i++) {
    int64_t at = ptr[ROW(t->work[i])] - e0;
    put_row(t, POS(t->work[i]), bc + at, bv ? bv + at : NULL);
  }
  return HS_OK;
}

typedef struct piece {
  hs_sparse_tier *t;
  int32_t n_groups;
  atomic_int next;
} piece;

static void piece_worker(void *arg, int th, int n_threads) {
  (void)n_threads;
  piece *p = arg;
  thread_out *o = &p->t->to[th];
  while (o->st == HS_OK) {
    int g = atomic_fetch_add(&p->next, 1);
    if (g >= p->n_groups) break;
    o->st = run_group(p->t, o, &p->t->groups[g]);
    if (o->st != HS_OK) snprintf(o->detail, sizeof o->detail, "%s", hs_last_error());
  }
}

/* ids[0..m) of the call, whose output positions start at `first`. */
static hs_status gather_piece(hs_sparse_tier *t, const int32_t *ids, int32_t m, int32_t first) {
  uint64_t *w = t->work;
  for (int32_t i = 0; i < m; i++)
    w[i] = (uint64_t)(uint32_t)ids[i] << 32 | (uint32_t)(first + i);
  qsort(w, (size_t)m, sizeof *w, cmp_u64);
  int32_t n_groups = 0;
  for (int32_t i0 = 0; i0 < m;) {
    int64_t b = ROW(w[i0]) / t->per_block;
    int32_t i1 = i0 + 1;
    while (i1 < m && ROW(w[i1]) / t->per_block == b) i1++;
    group *g = &t->groups[n_groups++];
    *g = (group){i0, i1, b, G_RUNS};
    t->lookups += i1 - i0;
    if (t->where[b] >= 0) {
      g->kind = G_KEPT;
      t->hits += i1 - i0;
    } else {
      int64_t r0 = b * t->per_block, r1 = r0 + t->per_block < t->n ? r0 + t->per_block : t->n;
      uint64_t bytes = (uint64_t)(t->ptr[r1] - t->ptr[r0]) * t->eb;
      if (t->arena && bytes <= t->arena_cap - t->used) {
        g->kind = G_KEEP;
        t->where[b] = (int64_t)t->used;
        t->used += bytes;
        t->kept++;
      }
    }
    i0 = i1;
  }
  thread_out *to = t->to;
  for (int th = 0; th < t->n_threads; th++) {
    to[th].reads = to[th].rows = 0;
    to[th].bytes = 0;
    to[th].st = HS_OK;
  }
  piece p = {t, n_groups, 0};
  if (t->pool && n_groups > 1) hs__gather_pool_run(t->pool, piece_worker, &p);
  else piece_worker(&p, 0, 1);
  hs_status st = HS_OK;
  for (int th = 0; th < t->n_threads; th++) {
    t->reads += to[th].reads;
    t->bytes_read += to[th].bytes;
    t->rows_checked += to[th].rows;
    if (st == HS_OK && to[th].st != HS_OK) st = hs__fail(to[th].st, "%s", to[th].detail);
  }
  /* After an error, blocks meant to be kept but not loaded (a read or a
   * check failed, or no thread came to them) are never served; their share
   * of the budget stays spent. */
  for (int32_t i = 0; st != HS_OK && i < n_groups; i++)
    if (t->groups[i].kind == G_KEEP) {
      t->where[t->groups[i].block] = -1;
      t->kept--;
    }
  return st;
}

hs_status hs__sparse_tier_gather(hs_sparse_tier *t, const int32_t *ids, int32_t n,
                                 int32_t *out_ptr, int32_t *out_col, float *out_val,
                                 int64_t cap) {
  if (n < 0 || !out_ptr || (n > 0 && !ids))
    return hs__fail(HS_ERR_INVALID_ARG, "sparse tier: gather of %d rows", n);
  out_ptr[0] = 0;
  if (n == 0) return HS_OK;
  int64_t run = 0, limit = cap < INT32_MAX ? cap : INT32_MAX;
  for (int32_t i = 0; i < n; i++) {
    if (ids[i] < 0 || ids[i] >= t->n)
      return hs__fail(HS_ERR_RANGE, "sparse tier %s: id %d at %d is outside [0, %" PRId64 ")",
                      t->idx.path, ids[i], i, t->n);
    run += t->ptr[ids[i] + 1] - t->ptr[ids[i]];
    if (run > limit)
      return hs__fail(HS_ERR_RANGE, "sparse tier: %d rows hold more than %" PRId64 " entries",
                      n, limit);
    out_ptr[i + 1] = (int32_t)run;
  }
  int32_t no_col;
  float no_val;
  if (!out_col) {
    if (run > 0)
      return hs__fail(HS_ERR_INVALID_ARG, "sparse tier: no room for %" PRId64 " entries", run);
    out_col = &no_col; /* every row empty: nothing is written */
    out_val = out_val ? out_val : &no_val;
  }
  t->c_ptr = out_ptr;
  t->c_col = out_col;
  t->c_val = out_val;
  hs_status st = HS_OK;
  /* a 64-bit counter: c + max_ids may pass INT32_MAX on the last piece */
  for (int64_t c = 0; c < n && st == HS_OK; c += t->max_ids) {
    int32_t m = (int32_t)(n - c < t->max_ids ? n - c : t->max_ids);
    st = gather_piece(t, ids + c, m, (int32_t)c);
  }
  t->c_ptr = NULL;
  t->c_col = NULL;
  t->c_val = NULL;
  return st;
}

static hs_status source_read(void *ctx, const int32_t *ids, int32_t n, int32_t *ptr,
                             int32_t *col, float *val, int64_t cap) {
  return hs__sparse_tier_gather(ctx, ids, n, ptr, col, val, cap);
}

hs_sparse_source hs__sparse_tier_source(hs_sparse_tier *t) {
  return (hs_sparse_source){source_read, t};
}
