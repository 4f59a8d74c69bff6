/* Host gather on a small persistent thread pool (see hs_gather.h). */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "hs_base.h"
#include "hs_gather.h"
#include "hs_pool.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#define HAVE_STREAM_STORES 1
#else
#define HAVE_STREAM_STORES 0
#define HAVE_AVX2_STREAM 0
#endif

/* An output larger than the last-level cache would not be in cache when
 * the trainer reads it, and ordinary stores read every output line from
 * memory before writing it: a third more memory traffic. Such outputs are
 * written with non-temporal stores: rows of at least STREAM_MIN_ROW bytes
 * and a multiple of 16 into a 16-byte aligned output; others are copied as
 * usual. Measured (bench_sample, 2 threads, 256 MiB of output, 7 runs):
 * rows of 2 and 4 KiB gathered at 1.2 to 1.5 times the rate of ordinary
 * stores, 256 B to 1 KiB about the same, 128 B slower; rows in table order
 * at 1.4 times. The threshold when the cache size is not known: */
#define DEFAULT_STREAM_ABOVE ((size_t)32 << 20)
#define STREAM_MIN_ROW 256

/* The generic pool (devices/hs_pool.h) and the gather's store threshold. */
struct hs_gather_pool {
  hs_pool *pool;
  size_t stream_above; /* outputs larger than this: non-temporal stores */
};

hs_status hs__gather_pool_create(int n_threads, hs_gather_pool **out) {
  *out = NULL;
  hs_pool *pool;
  hs_status st = hs__pool_create("gather", n_threads, &pool);
  if (st != HS_OK) return st;
  hs_gather_pool *p = calloc(1, sizeof *p);
  if (!p) {
    hs__pool_destroy(pool);
    return hs__fail(HS_ERR_NOMEM, "gather pool");
  }
  p->pool = pool;
  size_t llc = hs__llc_bytes();
  p->stream_above = llc ? llc : DEFAULT_STREAM_ABOVE;
  *out = p;
  return HS_OK;
}

void hs__gather_pool_destroy(hs_gather_pool *p) {
  if (!p) return;
  hs__pool_destroy(p->pool);
  free(p);
}

int hs__gather_pool_threads(const hs_gather_pool *p) { return hs__pool_threads(p->pool); }

int hs__gather_pool_nicer(hs_gather_pool *p, int by) { return hs__pool_nicer(p->pool, by); }

size_t hs__gather_pool_stream_above(hs_gather_pool *p, size_t bytes) {
  size_t was = p->stream_above;
  p->stream_above = bytes;
  return was;
}

void hs__gather_pool_run(hs_gather_pool *p, void (*fn)(void *arg, int t, int n), void *arg) {
  hs__pool_run(p->pool, fn, arg);
}

/* ---- the copy ------------------------------------------------------------------ */

/* Random rows are latency bound: keep about this many bytes of upcoming
 * rows prefetched per thread (whole rows, 4 to 32 rows ahead). Further
 * ahead only crowds out the core's miss buffers. A row that continues the
 * one before it is left to the hardware's prefetcher: prefetching rows in
 * table order made that gather about a third slower. */
#define PREFETCH_AHEAD_BYTES 4096
/* Rows of at least this many bytes are prefetched into the L2 cache only
 * (locality hint 2: prefetcht1 on x86), which keeps more of them in
 * flight than the L1's few miss buffers allow: 2 and 4 KiB rows gathered
 * at 1.2 to 1.3 times the rate (bench_sample, 2 threads, 4 KiB pages);
 * smaller rows gained nothing. */
#define PREFETCH_L2_ROW 2048

static atomic_bool baseline_only; /* hs__gather_baseline_only */

typedef struct gather_job {
  const hs_gather_req *req;
  bool stream;    /* non-temporal stores */
  bool avx2;      /* ... of 32 bytes */
  atomic_int bad; /* an id out of range was met */
} gather_job;

#if HAVE_STREAM_STORES
static void copy_stream_sse2(char *dst, const char *src, size_t bytes) {
  size_t o = 0;
  for (; o + 64 <= bytes; o += 64) {
    __m128i a = _mm_loadu_si128((const __m128i *)(src + o));
    __m128i b = _mm_loadu_si128((const __m128i *)(src + o + 16));
    __m128i c = _mm_loadu_si128((const __m128i *)(src + o + 32));
    __m128i d = _mm_loadu_si128((const __m128i *)(src + o + 48));
    _mm_stream_si128((__m128i *)(dst + o), a);
    _mm_stream_si128((__m128i *)(dst + o + 16), b);
    _mm_stream_si128((__m128i *)(dst + o + 32), c);
    _mm_stream_si128((__m128i *)(dst + o + 48), d);
  }
  for (; o < bytes; o += 16)
    _mm_stream_si128((__m128i *)(dst + o), _mm_loadu_si128((const __m128i *)(src + o)));
}

/* 32-byte loads and stores where the CPU has AVX2 (chosen at run time;
 * the build targets the baseline ISA). Random rows gathered at 1.1 to 1.45
 * times the rate of the 16-byte loop above (2 threads, 1 GiB table, rows
 * of 256 B to 4 KiB, 4 KiB and 2 MiB pages, 7 interleaved runs each); 64-
 * byte AVX-512 stores were no faster than these. Fewer instructions per
 * row let the core keep more rows' loads in flight. */
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define HAVE_AVX2_STREAM 1
__attribute__((target("avx2"))) static void copy_stream_avx2(char *dst, const char *src,
                                                             size_t bytes) {
  size_t o = 0;
  if ((uintptr_t)dst % 32 != 0 && bytes >= 16) { /* 32-byte stores need 32-byte alignment */
    _mm_stream_si128((__m128i *)dst, _mm_loadu_si128((const __m128i *)src));
    o = 16;
  }
  for (; o + 64 <= bytes; o += 64) {
    __m256i a = _mm256_loadu_si256((const __m256i *)(src + o));
    __m256i b = _mm256_loadu_si256((const __m256i *)(src + o + 32));
    _mm256_stream_si256((__m256i *)(dst + o), a);
    _mm256_stream_si256((__m256i *)(dst + o + 32), b);
  }
  for (; o + 32 <= bytes; o += 32)
    _mm256_stream_si256((__m256i *)(dst + o), _mm256_loadu_si256((const __m256i *)(src + o)));
  for (; o < bytes; o += 16)
    _mm_stream_si128((__m128i *)(dst + o), _mm_loadu_si128((const __m128i *)(src + o)));
}

static atomic_int avx2_known = -1; /* -1: not asked yet; racing first calls agree */

static bool have_avx2(void) {
  int k = atomic_load(&avx2_known);
  if (k < 0) {
    k = __builtin_cpu_supports("avx2") ? 1 : 0;
    atomic_store(&avx2_known, k);
  }
  return k == 1 && !atomic_load(&baseline_only);
}
#else
#define HAVE_AVX2_STREAM 0
#endif
#endif

#if !HAVE_AVX2_STREAM
static bool have_avx2(void) { return false; }
#endif

#if HAVE_STREAM_STORES
/* `bytes` a multiple of 16 into 16-byte aligned `dst`. */
static void copy_stream(char *dst, const char *src, size_t bytes, bool avx2) {
#if HAVE_AVX2_STREAM
  if (avx2) {
    copy_stream_avx2(dst, src, bytes);
    return;
  }
#endif
  (void)avx2;
  copy_stream_sse2(dst, src, bytes);
}
#endif

bool hs__gather_baseline_only(bool on) { return atomic_exchange(&baseline_only, on); }

bool hs__gather_wide_stores(void) { return have_avx2(); }

bool hs__copy_nontemporal(void *dst, const void *src, size_t bytes) {
#if HAVE_STREAM_STORES
  copy_stream(dst, src, bytes, have_avx2());
  return true;
#else
  (void)dst, (void)src, (void)bytes;
  return false;
#endif
}

void hs__nontemporal_fence(void) {
#if HAVE_STREAM_STORES
  _mm_sfence();
#endif
}

static void gather_slice(void *arg, int t, int n_threads) {
  gather_job *job = arg;
  const hs_gather_req *r = job->req;
  const char *table = r->table;
  char *out = r->out;
  size_t rb = r->row_bytes;
  int32_t b = (int32_t)((int64_t)r->n * t / n_threads);
  int32_t e = (int32_t)((int64_t)r->n * (t + 1) / n_threads);
  int32_t ahead = (int32_t)(PREFETCH_AHEAD_BYTES / (rb ? rb : 1));
  if (ahead < 4) ahead = 4;
  if (ahead > 32) ahead = 32;
  bool to_l2 = rb >= PREFETCH_L2_ROW;
  for (int32_t i = b; i < e; i++) {
    if (i + ahead < e) {
      int32_t next = r->ids[i + ahead];
      if (next >= 0 && next < r->n_rows && next != r->ids[i + ahead - 1] + 1)
        for (size_t o = 0; o < rb; o += 64) {
          const char *line = table + (size_t)next * rb + o;
          if (to_l2) __builtin_prefetch(line, 0, 2);
          else __builtin_prefetch(line, 0, 3);
        }
    }
    int32_t id = r->ids[i];
    if (id < 0 || id >= r->n_rows) {
      atomic_store(&job->bad, 1);
      continue;
    }
#if HAVE_STREAM_STORES
    if (job->stream) {
      copy_stream(out + (size_t)i * rb, table + (size_t)id * rb, rb, job->avx2);
      continue;
    }
#endif
    memcpy(out + (size_t)i * rb, table + (size_t)id * rb, rb);
  }
#if HAVE_STREAM_STORES
  /* Non-temporal stores are weakly ordered: make them visible before the
   * pool reports the slice done. */
  if (job->stream) _mm_sfence();
#endif
  if (r->labels && t == 0)
    for (int32_t i = 0; i < r->n_labels; i++) {
      int32_t id = r->ids[i];
      if (id >= 0 && id < r->n_rows) r->labels_out[i] = r->labels[id];
    }
}

hs_status hs__gather(hs_gather_pool *p, const hs_gather_req *req) {
  size_t bytes;
  if (req->n < 0 || req->n_labels < 0 || req->n_labels > req->n ||
      !hs__mul_size((size_t)req->n, req->row_bytes, &bytes))
    return hs__fail(HS_ERR_INVALID_ARG, "gather of %d rows of %zu bytes", req->n,
                    req->row_bytes);
  if (req->n_labels > 0 && (!req->labels || !req->labels_out))
    return hs__fail(HS_ERR_INVALID_ARG, "gather: labels requested without arrays");
  gather_job job = {.req = req, .bad = 0};
  job.stream = HAVE_STREAM_STORES && bytes > p->stream_above &&
               req->row_bytes >= STREAM_MIN_ROW && req->row_bytes % 16 == 0 &&
               (uintptr_t)req->out % 16 == 0;
  job.avx2 = job.stream && have_avx2();
  hs__gather_pool_run(p, gather_slice, &job);
  if (atomic_load(&job.bad))
    return hs__fail(HS_ERR_RANGE, "gather: an id is outside the %lld rows of the table",
                    (long long)req->n_rows);
  return HS_OK;
}
