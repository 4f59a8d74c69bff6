/* Weighted, bucketed, optionally 1-bit compressed all-reduce with a fixed
 * reduction order (hs_allreduce.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dist/hs_allreduce.h"
#include "dist/hs_onebit.h"

/* Every message starts with this header. */
typedef struct ar_hdr {
  int64_t count; /* contributions: the sender's count; results: the total */
  uint32_t flags;
  uint32_t empty; /* contributions: 1 when count is 0 (no payload follows) */
} ar_hdr;
#define HDR ((size_t)sizeof(ar_hdr))

enum { ST_IDLE, ST_SENT, ST_REDUCED, ST_DONE };

typedef struct ar_bucket {
  int first, count; /* tensors */
  /* Capacities by owner p (the largest encoding of p's chunks), offsets of
   * each owner's part in send/gath (size + 1 entries each). */
  size_t *soff, *goff;
  size_t mine; /* capacity of one contribution to this rank */
  uint8_t *send, *recv, *res, *gath;
  /* [0, n): contributions received from rank r; [n, 2n): contributions
   * sent to p; [2n, 3n): results received from p; [3n, 4n): results sent. */
  hs_comm_req *rq;
  int state;
} ar_bucket;

struct hs_ar {
  hs_comm *c;
  int rank, size;
  hs_dist_tensor *t;
  int n_tensors;
  size_t n_total, min_compress;
  int tag_base;
  ar_bucket *b;
  int n_buckets;
  float *tmp, *acc; /* max chunk length each */
  float *ew, *eo;   /* residuals: worker, reducing side */
  struct ar_hdr *hdr; /* one per rank, for the reduction */
  /* The step under way. */
  float *vec;
  int64_t count;
  bool cmp;
  uint32_t flags;
  int64_t total;
  uint32_t flags_or;
};

static void chunk(size_t n, int p, int size, size_t *lo, size_t *len) {
  /* n * p stays far below 2^64 for any vector that fits in memory. */
  size_t a = (size_t)((uint64_t)n * (uint64_t)p / (uint64_t)size);
  size_t b = (size_t)((uint64_t)n * (uint64_t)(p + 1) / (uint64_t)size);
  *lo = a;
  *len = b - a;
}

static size_t unit_cap(size_t n) {
  size_t raw = 4 * n, bits = hs__onebit_bytes(n);
  return raw > bits ? raw : bits;
}

static bool compressed(const hs_ar *a, const hs_dist_tensor *t, size_t len) {
  return a->cmp && a->size > 1 && t->n >= a->min_compress && len > 0;
}

static size_t unit_bytes(const hs_ar *a, const hs_dist_tensor *t, size_t len) {
  return compressed(a, t, len) ? hs__onebit_bytes(len) : 4 * len;
}

/* Bytes of owner p's part of bucket b in this step (payload present). */
static size_t part_bytes(const hs_ar *a, const ar_bucket *bk, int p) {
  size_t bytes = HDR;
  for (int i = bk->first; i < bk->first + bk->count; i++) {
    size_t lo, len;
    chunk(a->t[i].n, p, a->size, &lo, &len);
    bytes += unit_bytes(a, &a->t[i], len);
  }
  return bytes;
}

static hs_status alloc_bucket(hs_ar *a, ar_bucket *bk) {
  int n = a->size;
  bk->soff = calloc(2 * ((size_t)n + 1), sizeof *bk->soff);
  bk->rq = calloc(4 * (size_t)n, sizeof *bk->rq);
  if (!bk->soff || !bk->rq) return hs__fail(HS_ERR_NOMEM, "all-reduce bucket");
  bk->goff = bk->soff + n + 1;
  for (int p = 0; p < n; p++) {
    size_t cap = HDR;
    for (int i = bk->first; i < bk->first + bk->count; i++) {
      size_t lo, len;
      chunk(a->t[i].n, p, n, &lo, &len);
      cap += unit_cap(len);
    }
    bk->soff[p + 1] = bk->soff[p] + cap;
    bk->goff[p + 1] = bk->goff[p] + cap;
    if (p == a->rank) bk->mine = cap;
  }
  bk->send = malloc(bk->soff[n]);
  bk->gath = malloc(bk->goff[n]);
  bk->recv = malloc(bk->mine * (size_t)n);
  bk->res = malloc(bk->mine);
  if (!bk->send || !bk->gath || !bk->recv || !bk->res)
    return hs__fail(HS_ERR_NOMEM, "all-reduce buffers (%zu bytes)", 3 * bk->soff[n]);
  return HS_OK;
}

void hs__ar_destroy(hs_ar *a) {
  if (!a) return;
  for (int i = 0; i < a->n_buckets; i++) {
    ar_bucket *bk = &a->b[i];
    if (bk->rq)
      for (int k = 0; k < 4 * a->size; k++) hs__comm_cancel(a->c, &bk->rq[k]);
    free(bk->soff);
    free(bk->rq);
    free(bk->send);
    free(bk->recv);
    free(bk->res);
    free(bk->gath);
  }
  free(a->b);
  free(a->t);
  free(a->tmp);
  free(a->acc);
  free(a->ew);
  free(a->eo);
  free(a->hdr);
  free(a);
}

hs_status hs__ar_create(hs_comm *c, const hs_ar_cfg *cfg, hs_ar **out) {
  *out = NULL;
  if (cfg->n_tensors < 1 || !cfg->tensors)
    return hs__fail(HS_ERR_INVALID_ARG, "all-reduce of no tensors");
  for (int i = 0; i < cfg->n_tensors; i++)
    if (cfg->tensors[i].off > cfg->n_total || cfg->tensors[i].n > cfg->n_total - cfg->tensors[i].off)
      return hs__fail(HS_ERR_INVALID_ARG, "all-reduce: tensor %d (%zu at %zu) outside %zu values",
                      i, cfg->tensors[i].n, cfg->tensors[i].off, cfg->n_total);
  hs_ar *a = calloc(1, sizeof *a);
  if (!a) return hs__fail(HS_ERR_NOMEM, "all-reduce");
  a->c = c;
  a->rank = hs__comm_rank(c);
  a->size = hs__comm_size(c);
  a->n_tensors = cfg->n_tensors;
  a->n_total = cfg->n_total;
  a->min_compress = cfg->min_compress;
  a->tag_base = cfg->tag_base;
  hs_status st;
  a->t = malloc((size_t)cfg->n_tensors * sizeof *a->t);
  a->b = calloc((size_t)cfg->n_tensors, sizeof *a->b);
  if (!a->t || !a->b) {
    st = hs__fail(HS_ERR_NOMEM, "all-reduce");
    goto fail;
  }
  memcpy(a->t, cfg->tensors, (size_t)cfg->n_tensors * sizeof *a->t);
  size_t cap = cfg->bucket_bytes ? cfg->bucket_bytes : (size_t)4 << 20, max_len = 1;
  for (int i = 0; i < a->n_tensors; i++) {
    size_t bytes = 4 * a->t[i].n;
    ar_bucket *last = a->n_buckets ? &a->b[a->n_buckets - 1] : NULL;
    size_t have = 0;
    if (last)
      for (int k = last->first; k < last->first + last->count; k++) have += 4 * a->t[k].n;
    if (last && have + bytes <= cap) {
      last->count++;
    } else {
      a->b[a->n_buckets++] = (ar_bucket){.first = i, .count = 1};
    }
    size_t lo, len;
    chunk(a->t[i].n, 0, a->size, &lo, &len);
    if (len + 1 > max_len) max_len = len + 1;
  }
  if (cfg->tag_base < 0 || cfg->tag_base + 2 * a->n_buckets - 1 > HS_COMM_TAG_USER_MAX) {
    st = hs__fail(HS_ERR_INVALID_ARG, "all-reduce: tags %d + 2 x %d buckets exceed %d",
                  cfg->tag_base, a->n_buckets, HS_COMM_TAG_USER_MAX);
    goto fail;
  }
  for (int i = 0; i < a->n_buckets; i++)
    if ((st = alloc_bucket(a, &a->b[i])) != HS_OK) goto fail;
  a->tmp = malloc(max_len * sizeof *a->tmp);
  a->acc = malloc(max_len * sizeof *a->acc);
  a->hdr = malloc((size_t)a->size * sizeof *a->hdr);
  if (!a->tmp || !a->acc || !a->hdr) {
    st = hs__fail(HS_ERR_NOMEM, "all-reduce");
    goto fail;
  }
  *out = a;
  return HS_OK;
fail:
  hs__ar_destroy(a);
  return st;
}

int hs__ar_buckets(const hs_ar *a) { return a->n_buckets; }

void hs__ar_bucket_tensors(const hs_ar *a, int b, int *first, int *count) {
  *first = a->b[b].first;
  *count = a->b[b].count;
}

float *hs__ar_residual(hs_ar *a, bool reducing_side) { return reducing_side ? a->eo : a->ew; }

hs_status hs__ar_residual_init(hs_ar *a) {
  if (!a->ew) a->ew = malloc(a->n_total * sizeof *a->ew + 1);
  if (!a->eo) a->eo = malloc(a->n_total * sizeof *a->eo + 1);
  if (!a->ew || !a->eo) return hs__fail(HS_ERR_NOMEM, "error feedback (%zu values)", a->n_total);
  memset(a->ew, 0, a->n_total * sizeof *a->ew);
  memset(a->eo, 0, a->n_total * sizeof *a->eo);
  return HS_OK;
}

static int tag_contrib(const hs_ar *a, int b) { return a->tag_base + 2 * b; }
static int tag_result(const hs_ar *a, int b) { return a->tag_base + 2 * b + 1; }

hs_status hs__ar_begin(hs_ar *a, float *vec, int64_t count, bool compress, uint32_t flags) {
  if (count < 0) return hs__fail(HS_ERR_INVALID_ARG, "all-reduce: count %lld", (long long)count);
  a->vec = vec;
  a->count = count;
  a->cmp = compress && a->size > 1;
  a->flags = flags;
  if (a->cmp && !a->ew) {
    hs_status st = hs__ar_residual_init(a);
    if (st != HS_OK) return st;
  }
  for (int i = 0; i < a->n_buckets; i++) {
    ar_bucket *bk = &a->b[i];
    int n = a->size;
    for (int p = 0; p < n; p++) {
      if (p == a->rank) continue;
      hs_status st = hs__comm_irecv(a->c, p, tag_contrib(a, i), bk->recv + (size_t)p * bk->mine,
                                    bk->mine, &bk->rq[p]);
      if (st == HS_OK)
        st = hs__comm_irecv(a->c, p, tag_result(a, i), bk->gath + bk->goff[p],
                            bk->goff[p + 1] - bk->goff[p], &bk->rq[2 * n + p]);
      if (st != HS_OK) return st;
    }
    bk->state = ST_IDLE;
  }
  return HS_OK;
}

/* This rank's contribution to owner p of bucket bk, at dst; its size. */
static size_t encode_contrib(hs_ar *a, const ar_bucket *bk, int p, uint8_t *dst) {
  ar_hdr h = {.count = a->count, .flags = a->flags, .empty = a->count == 0};
  memcpy(dst, &h, HDR);
  if (a->count == 0) return HDR;
  size_t at = HDR;
  for (int i = bk->first; i < bk->first + bk->count; i++) {
    const hs_dist_tensor *t = &a->t[i];
    size_t lo, len;
    chunk(t->n, p, a->size, &lo, &len);
    const float *src = a->vec + t->off + lo;
    if (compressed(a, t, len)) {
      float *e = a->ew + t->off + lo;
      for (size_t k = 0; k < len; k++) a->tmp[k] = src[k] + e[k];
      hs__onebit_encode(a->tmp, len, dst + at, e);
      at += hs__onebit_bytes(len);
    } else {
      memcpy(dst + at, src, 4 * len);
      at += 4 * len;
    }
  }
  return at;
}

hs_status hs__ar_ready(hs_ar *a, int b) {
  if (b < 0 || b >= a->n_buckets || a->b[b].state != ST_IDLE)
    return hs__fail(HS_ERR_STATE, "all-reduce: bucket %d made ready twice or out of range", b);
  ar_bucket *bk = &a->b[b];
  int n = a->size;
  for (int p = 0; p < n; p++) {
    if (p == a->rank) {
      encode_contrib(a, bk, p, bk->recv + (size_t)p * bk->mine);
      continue;
    }
    size_t bytes = encode_contrib(a, bk, p, bk->send + bk->soff[p]);
    hs_status st = hs__comm_isend(a->c, p, tag_contrib(a, b), bk->send + bk->soff[p], bytes,
                                  &bk->rq[n + p]);
    if (st != HS_OK) return st;
  }
  bk->state = ST_SENT;
  return HS_OK;
}

static hs_status check_size(const hs_ar *a, int b, const char *what, int from, size_t got,
                            size_t want) {
  if (got == want) return HS_OK;
  return hs__fail(HS_ERR_FORMAT, "rank %d: %s of bucket %d from rank %d has %zu bytes, %zu "
                  "expected (ranks disagree on the step or the options)", a->rank, what, b, from,
                  got, want);
}

/* Sum the contributions to this rank's chunks, compress, send. */
static hs_status reduce(hs_ar *a, int b) {
  ar_bucket *bk = &a->b[b];
  int n = a->size;
  size_t full = part_bytes(a, bk, a->rank);
  int64_t total = 0;
  uint32_t flags = 0;
  ar_hdr *h = a->hdr;
  for (int r = 0; r < n; r++) {
    const uint8_t *msg = bk->recv + (size_t)r * bk->mine;
    memcpy(&h[r], msg, HDR);
    size_t got = r == a->rank ? (h[r].empty ? HDR : full) : bk->rq[r].got;
    hs_status st = check_size(a, b, "contribution", r, got, h[r].empty ? HDR : full);
    if (st != HS_OK) return st;
    if (h[r].count < 0 || (h[r].count == 0) != (h[r].empty != 0))
      return hs__fail(HS_ERR_FORMAT, "rank %d: bad contribution header from rank %d", a->rank, r);
    total += h[r].count;
    flags |= h[r].flags;
  }
  a->total = total;
  a->flags_or = flags;
  ar_hdr out = {.count = total, .flags = flags, .empty = 0};
  memcpy(bk->res, &out, HDR);
  size_t at = HDR;
  size_t in_at = HDR; /* offset of the current unit in every full contribution */
  for (int i = bk->first; i < bk->first + bk->count; i++) {
    const hs_dist_tensor *t = &a->t[i];
    size_t lo, len;
    chunk(t->n, a->rank, n, &lo, &len);
    bool cmp = compressed(a, t, len);
    size_t ub = unit_bytes(a, t, len);
    bool any = false;
    for (int r = 0; r < n; r++) {
      if (h[r].empty) continue;
      const uint8_t *unit = bk->recv + (size_t)r * bk->mine + in_at;
      if (cmp)
        hs__onebit_decode(unit, len, a->tmp);
      else
        memcpy(a->tmp, unit, 4 * len);
      float w = (float)((double)h[r].count / (double)total);
      if (!any) {
        for (size_t k = 0; k < len; k++) a->acc[k] = w * a->tmp[k];
      } else {
        for (size_t k = 0; k < len; k++) a->acc[k] += w * a->tmp[k];
      }
      any = true;
    }
    if (!any) memset(a->acc, 0, 4 * len);
    float *dst = a->vec + t->off + lo;
    if (cmp) {
      float *e = a->eo + t->off + lo;
      for (size_t k = 0; k < len; k++) a->acc[k] += e[k];
      hs__onebit_encode(a->acc, len, bk->res + at, e);
      hs__onebit_decode(bk->res + at, len, dst);
    } else {
      memcpy(bk->res + at, a->acc, 4 * len);
      memcpy(dst, a->acc, 4 * len);
    }
    at += ub;
    in_at += ub;
  }
  for (int p = 0; p < n; p++) {
    if (p == a->rank) continue;
    hs_status st = hs__comm_isend(a->c, p, tag_result(a, b), bk->res, at, &bk->rq[3 * n + p]);
    if (st != HS_OK) return st;
  }
  bk->state = ST_REDUCED;
  return HS_OK;
}

/* Decode every other owner's reduced chunks into vec. */
static hs_status gather(hs_ar *a, int b) {
  ar_bucket *bk = &a->b[b];
  int n = a->size;
  for (int p = 0; p < n; p++) {
    if (p == a->rank) continue;
    const uint8_t *msg = bk->gath + bk->goff[p];
    hs_status st = check_size(a, b, "result", p, bk->rq[2 * n + p].got, part_bytes(a, bk, p));
    if (st != HS_OK) return st;
    ar_hdr h;
    memcpy(&h, msg, HDR);
    if (h.count != a->total || h.flags != a->flags_or)
      return hs__fail(HS_ERR_FORMAT, "rank %d: rank %d reduced bucket %d with %lld seeds and "
                      "flags %#x, this rank %lld and %#x", a->rank, p, b, (long long)h.count,
                      h.flags, (long long)a->total, a->flags_or);
    size_t at = HDR;
    for (int i = bk->first; i < bk->first + bk->count; i++) {
      const hs_dist_tensor *t = &a->t[i];
      size_t lo, len;
      chunk(t->n, p, n, &lo, &len);
      float *dst = a->vec + t->off + lo;
      if (compressed(a, t, len)) {
        hs__onebit_decode(msg + at, len, dst);
        at += hs__onebit_bytes(len);
      } else {
        memcpy(dst, msg + at, 4 * len);
        at += 4 * len;
      }
    }
  }
  bk->state = ST_DONE;
  return HS_OK;
}

static bool all_done(hs_comm *c, hs_comm_req *r, int n, hs_status *st) {
  bool all = true;
  for (int i = 0; i < n && *st == HS_OK; i++) {
    bool done;
    *st = hs__comm_test(c, &r[i], &done);
    all = all && done;
  }
  return all && *st == HS_OK;
}

hs_status hs__ar_progress(hs_ar *a) {
  hs_status st = HS_OK;
  int n = a->size;
  for (int i = 0; i < a->n_buckets && st == HS_OK; i++) {
    ar_bucket *bk = &a->b[i];
    if (bk->state == ST_SENT && all_done(a->c, bk->rq, n, &st)) st = reduce(a, i);
    if (st == HS_OK && bk->state == ST_REDUCED && all_done(a->c, bk->rq + 2 * n, n, &st))
      st = gather(a, i);
  }
  return st;
}

hs_status hs__ar_end(hs_ar *a, uint32_t *flags, int64_t *total) {
  hs_status st = HS_OK;
  int n = a->size;
  char what[64];
  for (int i = 0; i < a->n_buckets && st == HS_OK; i++)
    if (a->b[i].state == ST_IDLE) st = hs__ar_ready(a, i);
  if (st == HS_OK) st = hs__ar_progress(a);
  for (int i = 0; i < a->n_buckets && st == HS_OK; i++) {
    ar_bucket *bk = &a->b[i];
    snprintf(what, sizeof what, "all-reduce bucket %d (reduce-scatter)", i);
    if (bk->state == ST_SENT && (st = hs__comm_waitall(a->c, bk->rq, 2 * n, what)) == HS_OK)
      st = reduce(a, i);
    snprintf(what, sizeof what, "all-reduce bucket %d (all-gather)", i);
    if (st == HS_OK && bk->state == ST_REDUCED &&
        (st = hs__comm_waitall(a->c, bk->rq + 2 * n, 2 * n, what)) == HS_OK)
      st = gather(a, i);
  }
  /* Sends complete before their buffers are reused. */
  for (int i = 0; i < a->n_buckets && st == HS_OK; i++)
    st = hs__comm_waitall(a->c, a->b[i].rq, 4 * n, "all-reduce sends");
  if (st == HS_OK) {
    if (flags) *flags = a->flags_or;
    if (total) *total = a->total;
  }
  a->vec = NULL;
  return st;
}
