/* Generated CTR data in the Criteo layout with a planted signal whose
 * Bayes figures are known (see hetsage/ctr.h for the model).
 *
 * Every random choice is a Philox draw keyed by what it is about: a row's
 * ranks, integers and label by (seed, row), an id's effects by (seed,
 * field, rank). Rows are generated in parallel blocks and written in
 * order, so the bytes do not depend on the thread count. */
#include <inttypes.h>
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "ctr/hs_ctr.h"
#include "data/hs_build.h"
#include "data/hs_dsw.h"
#include "rng/philox.h"
#include "sample/hs_gather.h"

/* Counter layout: (a, b, GEN << 24 | purpose, d): a top byte no other
 * user of the seed's streams puts in the third word. */
#define GEN_TAG 0x43u
enum { P_EFFECT = 1, P_LATENT = 2, P_ROW = 3 };

#define LATENT_K 4
/* The defaults of head_ranks and tail_decay: the only shape the generator
 * had before the two options, whose files and meta.json stay as they were. */
#define DEFAULT_HEAD_RANKS 2000
#define DEFAULT_TAIL_DECAY 0.5
#define CACHE_RANKS 65536 /* effects of the most popular ranks, precomputed */
#define BLOCK_ROWS 65536

/* A field: vocabulary (Criteo Kaggle's cardinalities, the largest ones
 * scaled to big_vocab), power-law exponent of its ids' popularity,
 * first-order effect scale, missing rate, whether it is one of the 8
 * fields whose every pair interacts. */
typedef struct field_spec {
  double vocab; /* fraction of big_vocab when <= 1, else a count */
  double zipf, sigma, missing;
  int interacts;
} field_spec;

static const field_spec fields[HS_CTR_SPARSE] = {
    {1460, 1.1, 0.30, 0.00, 0},   {583, 1.1, 0.30, 0.00, 1},    {1.0, 1.0, 0.30, 0.03, 1},
    {0.10, 1.05, 0.30, 0.03, 0},  {305, 1.2, 0.25, 0.00, 1},    {24, 1.0, 0.25, 0.12, 0},
    {12517, 1.1, 0.25, 0.00, 1},  {633, 1.1, 0.20, 0.00, 0},    {3, 1.0, 0.20, 0.00, 0},
    {93145, 1.1, 0.20, 0.00, 0},  {5683, 1.1, 0.20, 0.00, 1},   {0.25, 1.05, 0.20, 0.03, 0},
    {3194, 1.1, 0.20, 0.00, 0},   {27, 1.0, 0.20, 0.00, 1},     {14992, 1.1, 0.20, 0.00, 0},
    {0.15, 1.05, 0.20, 0.03, 0},  {10, 1.0, 0.20, 0.00, 1},     {5652, 1.1, 0.20, 0.00, 0},
    {2173, 1.1, 0.20, 0.44, 0},   {4, 1.0, 0.20, 0.44, 0},      {0.20, 1.05, 0.20, 0.03, 0},
    {18, 1.0, 0.20, 0.00, 0},     {15, 1.0, 0.20, 0.44, 1},     {0.14, 1.05, 0.20, 0.03, 0},
    {105, 1.1, 0.20, 0.44, 0},    {0.07, 1.05, 0.20, 0.44, 0},
};

/* An integer feature: x = floor(exp(mu + s N)) - shift, missing with
 * probability `missing`; effect a * (log1p(max(x, 0)) - centre). */
typedef struct dense_spec {
  double mu, s, missing, shift, a;
} dense_spec;

static const dense_spec dense[HS_CTR_DENSE] = {
    {0.5, 1.0, 0.45, 0, 0.25}, {1.5, 1.5, 0.00, 3, -0.20}, {1.8, 1.2, 0.21, 0, 0.15},
    {1.5, 0.9, 0.22, 0, -0.15}, {6.0, 2.0, 0.03, 0, 0.10}, {3.0, 1.5, 0.22, 0, -0.10},
    {1.5, 1.2, 0.04, 0, 0.20}, {2.2, 1.0, 0.00, 0, 0.05}, {3.5, 1.3, 0.04, 0, -0.10},
    {0.3, 0.6, 0.45, 0, 0.30}, {1.0, 0.9, 0.04, 0, 0.15}, {0.2, 0.8, 0.77, 0, -0.20},
    {1.5, 1.1, 0.22, 0, 0.10},
};
/* The product term: PROD_COEF * (z[PROD_A] - c_A) * (z[PROD_B] - c_B). */
#define PROD_A 2
#define PROD_B 6
#define PROD_COEF 0.12
#define LATENT_SCALE 0.45

typedef struct gen {
  const hs_ctr_generate_opts *o;
  int64_t vocab[HS_CTR_SPARSE];
  uint32_t salt[HS_CTR_SPARSE];
  double zpow[HS_CTR_SPARSE]; /* (V + 1)^(1 - s), or log(V + 1) for s = 1 */
  /* Effects of the first CACHE_RANKS ranks: w, then the latent vector. */
  float *cache[HS_CTR_SPARSE];
  int cached[HS_CTR_SPARSE];
  double centre[HS_CTR_DENSE];
  double bias;
  _Atomic uint64_t *seen[HS_CTR_SPARSE]; /* bitmaps over ranks */
  /* The block being made. */
  int64_t first, n;
  char *text[256];
  size_t text_len[256];
  double *prob; /* the block's true click probabilities */
  uint8_t *label;
  int64_t pos[256];
} gen;

static double normal(hs_philox_ctr c, int k) {
  /* Box-Muller on words 2k, 2k+1; the first uniform kept away from 0. */
  double u1 = ((double)(c.v[2 * k] >> 8) + 0.5) / 16777216.0;
  double u2 = (double)(c.v[2 * k + 1] >> 8) / 16777216.0;
  return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

/* Effects of ranks past the head shrink as (head / rank)^decay. */
static double shrink(const hs_ctr_generate_opts *o, int64_t rank) {
  if (rank <= o->head_ranks) return 1.0;
  double x = (double)o->head_ranks / (double)rank;
  /* sqrt, not pow(x, 0.5): the defaults' bits as before the option. */
  return o->tail_decay == DEFAULT_TAIL_DECAY ? sqrt(x) : pow(x, o->tail_decay);
}

/* First-order effect and latent vector of (field, rank). */
static void effects(const gen *g, int f, int64_t rank, float *out) {
  uint64_t seed = g->o->seed;
  double sc = shrink(g->o, rank) * g->o->signal;
  hs_philox_ctr c = hs_philox_draw(seed, (uint32_t)rank, (uint32_t)f, GEN_TAG << 24 | P_EFFECT, 0);
  out[0] = (float)(normal(c, 0) * fields[f].sigma * sc);
  if (!fields[f].interacts) return;
  for (int k = 0; k < LATENT_K; k += 2) {
    c = hs_philox_draw(seed, (uint32_t)rank, (uint32_t)f, GEN_TAG << 24 | P_LATENT, (uint32_t)k);
    double s = LATENT_SCALE / sqrt(sqrt((double)LATENT_K)) * sc;
    out[1 + k] = (float)(normal(c, 0) * s);
    out[2 + k] = (float)(normal(c, 1) * s);
  }
}

static int64_t draw_rank(const gen *g, int f, uint32_t word) {
  double u = ((double)(word >> 8) + 0.5) / 16777216.0, s = fields[f].zipf;
  double V = (double)g->vocab[f], r;
  if (s == 1.0) r = exp(u * g->zpow[f]);
  else r = pow((g->zpow[f] - 1.0) * u + 1.0, 1.0 / (1.0 - s));
  int64_t k = (int64_t)r;
  if (k < 1) k = 1;
  if (k > (int64_t)V) k = (int64_t)V;
  return k;
}

/* murmur3's 32-bit finaliser: a bijection, so distinct ranks of a field
 * get distinct hexadecimal ids. */
static uint32_t fmix32(uint32_t h) {
  h ^= h >> 16;
  h *= 0x85ebca6bu;
  h ^= h >> 13;
  h *= 0xc2b2ae35u;
  h ^= h >> 16;
  return h;
}

typedef struct row {
  int64_t x[HS_CTR_DENSE]; /* INT64_MIN: missing */
  int64_t rank[HS_CTR_SPARSE]; /* 0: missing */
  double logit;
  double u_label;
} gen_row;

static inline double zlog(int64_t x) { return x > 0 ? log1p((double)x) : 0.0; }

/* Row `i` without the bias. */
static void make_row(const gen *g, int64_t i, gen_row *r) {
  uint64_t seed = g->o->seed;
  uint32_t lo = (uint32_t)i, hi = (uint32_t)((uint64_t)i >> 32);
  hs_philox_ctr c;
  /* Words of draws 0..16: 0..25 ranks, 26..51 their missing flags,
   * 52..64 the integers' missing flags, 65 the label; draws 17..23 the
   * integers' normals (two per draw). */
  uint32_t w[68];
  for (int d = 0; d < 17; d++) {
    c = hs_philox_draw(seed, lo, hi, GEN_TAG << 24 | P_ROW, (uint32_t)d);
    memcpy(w + 4 * d, c.v, sizeof c.v);
  }
  double logit = 0, vsum[LATENT_K] = {0}, vsq = 0;
  for (int f = 0; f < HS_CTR_SPARSE; f++) {
    double um = (double)(w[26 + f] >> 8) / 16777216.0;
    if (um < fields[f].missing) {
      r->rank[f] = 0;
      continue;
    }
    int64_t k = draw_rank(g, f, w[f]);
    r->rank[f] = k;
    float e[1 + LATENT_K];
    if (k <= g->cached[f]) memcpy(e, g->cache[f] + (size_t)(k - 1) * (1 + LATENT_K), sizeof e);
    else effects(g, f, k, e);
    logit += e[0];
    if (fields[f].interacts)
      for (int j = 0; j < LATENT_K; j++) {
        vsum[j] += e[1 + j];
        vsq += (double)e[1 + j] * e[1 + j];
      }
  }
  /* Every pair of interacting fields: (|sum v|^2 - sum |v|^2) / 2. */
  double pairs = -vsq;
  for (int j = 0; j < LATENT_K; j++) pairs += vsum[j] * vsum[j];
  logit += 0.5 * pairs;
  double z[HS_CTR_DENSE];
  for (int j = 0; j < HS_CTR_DENSE; j++) {
    hs_philox_ctr cj = hs_philox_draw(seed, lo, hi, GEN_TAG << 24 | P_ROW, 17u + (uint32_t)j / 2);
    double nv = normal(cj, j & 1);
    double um = (double)(w[52 + j] >> 8) / 16777216.0;
    if (um < dense[j].missing) {
      r->x[j] = INT64_MIN;
      z[j] = 0;
    } else {
      double v = floor(exp(dense[j].mu + dense[j].s * nv));
      if (v > 1e12) v = 1e12;
      r->x[j] = (int64_t)v - (int64_t)dense[j].shift;
      z[j] = zlog(r->x[j]);
    }
    logit += dense[j].a * g->o->signal * (z[j] - g->centre[j]);
  }
  logit += PROD_COEF * g->o->signal * (z[PROD_A] - g->centre[PROD_A]) *
           (z[PROD_B] - g->centre[PROD_B]);
  r->logit = logit;
  r->u_label = ((double)(w[65] >> 8) + 0.5) / 16777216.0;
}

/* ---- text ------------------------------------------------------------------ */

static char *put_i64(char *p, int64_t v) {
  char tmp[24];
  int n = 0;
  uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
  do {
    tmp[n++] = (char)('0' + u % 10);
    u /= 10;
  } while (u);
  if (v < 0) *p++ = '-';
  while (n) *p++ = tmp[--n];
  return p;
}

static char *put_hex8(char *p, uint32_t v) {
  static const char hx[] = "0123456789abcdef";
  for (int s = 28; s >= 0; s -= 4) *p++ = hx[(v >> s) & 15];
  return p;
}

#define MAX_LINE 512 /* 1 + 13 x 15 + 26 x 9 + 1 bytes at most */

static void gen_block(void *arg, int t, int n_threads) {
  gen *g = arg;
  int64_t lo = g->n * t / n_threads, hi = g->n * (t + 1) / n_threads;
  char *p = g->text[t];
  for (int64_t k = lo; k < hi; k++) {
    gen_row r;
    int64_t i = g->first + k;
    make_row(g, i, &r);
    double prob = 1.0 / (1.0 + exp(-(r.logit + g->bias)));
    int y = r.u_label < prob;
    g->prob[k] = prob;
    g->label[k] = (uint8_t)y;
    *p++ = (char)('0' + y);
    for (int j = 0; j < HS_CTR_DENSE; j++) {
      *p++ = '\t';
      if (r.x[j] != INT64_MIN) p = put_i64(p, r.x[j]);
    }
    for (int f = 0; f < HS_CTR_SPARSE; f++) {
      *p++ = '\t';
      if (!r.rank[f]) continue;
      p = put_hex8(p, fmix32((uint32_t)r.rank[f] + g->salt[f]));
      uint64_t bit = (uint64_t)(r.rank[f] - 1);
      atomic_fetch_or_explicit(&g->seen[f][bit >> 6], 1ull << (bit & 63), memory_order_relaxed);
    }
    *p++ = '\n';
  }
  g->text_len[t] = (size_t)(p - g->text[t]);
}

/* Logits of a pilot sample, for the bias. */
typedef struct pilot {
  gen *g;
  double *logit;
  int64_t n;
} pilot;

static void pilot_rows(void *arg, int t, int n_threads) {
  pilot *p = arg;
  for (int64_t i = p->n * t / n_threads; i < p->n * (t + 1) / n_threads; i++) {
    gen_row r;
    make_row(p->g, i, &r);
    p->logit[i] = r.logit;
  }
}

static void fill_cache(void *arg, int t, int n_threads) {
  gen *g = arg;
  for (int f = t; f < HS_CTR_SPARSE; f += n_threads)
    for (int k = 1; k <= g->cached[f]; k++)
      effects(g, f, k, g->cache[f] + (size_t)(k - 1) * (1 + LATENT_K));
}

/* ---- Bayes figures ---------------------------------------------------------- */

typedef struct scored {
  double p;
  uint8_t y;
} scored;

static int cmp_scored(const void *a, const void *b) {
  double x = ((const scored *)a)->p, y = ((const scored *)b)->p;
  return x < y ? -1 : x > y;
}

/* AUC against the labels (ties: one half) and its expectation over the
 * labels the probabilities would draw. */
static void bayes(scored *s, int64_t n, double *auc, double *expected) {
  qsort(s, (size_t)n, sizeof *s, cmp_scored);
  double neg_below = 0, pos = 0, neg = 0, num = 0;
  double eneg_below = 0, epos = 0, eneg = 0, enum_ = 0, self = 0;
  for (int64_t i = 0; i < n;) {
    int64_t j = i;
    double tp = 0, tn = 0, ep = 0, en = 0;
    while (j < n && s[j].p == s[i].p) {
      tp += s[j].y;
      tn += 1 - s[j].y;
      ep += s[j].p;
      en += 1 - s[j].p;
      self += s[j].p * (1 - s[j].p);
      j++;
    }
    num += tp * (neg_below + 0.5 * tn);
    enum_ += ep * (eneg_below + 0.5 * en);
    neg_below += tn;
    eneg_below += en;
    pos += tp;
    neg += tn;
    epos += ep;
    eneg += en;
    i = j;
  }
  *auc = pos > 0 && neg > 0 ? num / (pos * neg) : NAN;
  /* Pairs of one example with itself are not pairs: their tie half goes. */
  *expected = (enum_ - 0.5 * self) / (epos * eneg - self);
}

/* ---- driver --------------------------------------------------------------------- */

void hs_ctr_generate_summary_init_sized(hs_ctr_generate_summary *sum, size_t struct_size) {
  hs_ctr_generate_summary z;
  memset(&z, 0, sizeof z);
  z.struct_size = sizeof z;
  hs__sized_init(sum, struct_size, &z, sizeof z);
}

void hs_ctr_generate_opts_init_sized(hs_ctr_generate_opts *user, size_t struct_size) {
  hs_ctr_generate_opts full, *o = &full;
  memset(o, 0, sizeof *o);
  o->struct_size = sizeof *o;
  o->seed = 1;
  o->rows = 1000000;
  o->split_frac[0] = 0.8;
  o->split_frac[1] = 0.1;
  o->split_frac[2] = 0.1;
  o->big_vocab = 2000000;
  o->signal = 1.0;
  o->positive_rate = 0.25;
  o->threads = 2;
  o->head_ranks = DEFAULT_HEAD_RANKS;
  o->tail_decay = DEFAULT_TAIL_DECAY;
  hs__sized_init(user, struct_size, o, sizeof *o);
}

static const char *const split_names[HS_SPLIT_COUNT_] = {"train", "valid", "test"};

typedef struct out_file {
  FILE *f;
  gzFile z;
} out_file;

static hs_status out_write(out_file *o, const char *path, const char *p, size_t n) {
  if (!n) return HS_OK;
  if (o->z) {
    while (n > 0) {
      unsigned k = n > (1u << 30) ? 1u << 30 : (unsigned)n;
      if (gzwrite(o->z, p, k) != (int)k)
        return hs__fail(HS_ERR_IO, "%s: write failed", path);
      p += k;
      n -= k;
    }
    return HS_OK;
  }
  if (fwrite(p, 1, n, o->f) != n) return hs__fail(HS_ERR_IO, "%s: write failed", path);
  return HS_OK;
}

static hs_status out_close(out_file *o, const char *path) {
  int bad = 0;
  if (o->z) bad = gzclose(o->z) != Z_OK;
  if (o->f) bad |= fclose(o->f) != 0;
  o->z = NULL;
  o->f = NULL;
  return bad ? hs__fail(HS_ERR_IO, "%s: write failed", path) : HS_OK;
}

static hs_status check_opts(const hs_ctr_generate_opts *o) {
  double sum = 0;
  for (int s = 0; s < HS_SPLIT_COUNT_; s++) {
    if (!(o->split_frac[s] >= 0 && o->split_frac[s] <= 1))
      return hs__fail(HS_ERR_INVALID_ARG, "ctr generate: split fraction %g", o->split_frac[s]);
    sum += o->split_frac[s];
  }
  if (fabs(sum - 1.0) > 1e-9)
    return hs__fail(HS_ERR_INVALID_ARG, "ctr generate: split fractions sum to %g, not 1", sum);
  if (o->rows < 10 || o->rows > ((int64_t)1 << 40))
    return hs__fail(HS_ERR_INVALID_ARG, "ctr generate: %" PRId64 " rows (10..2^40)", o->rows);
  if (o->big_vocab < 100 || o->big_vocab > ((int64_t)1 << 32) - 16)
    return hs__fail(HS_ERR_INVALID_ARG, "ctr generate: big_vocab %" PRId64 " (100..2^32-16)",
                    o->big_vocab);
  if (!(o->signal >= 0 && o->signal <= 100))
    return hs__fail(HS_ERR_INVALID_ARG, "ctr generate: signal %g (0..100)", o->signal);
  if (o->head_ranks < 1 || o->head_ranks > ((int64_t)1 << 32))
    return hs__fail(HS_ERR_INVALID_ARG, "ctr generate: %" PRId64 " head ranks (1..2^32)",
                    o->head_ranks);
  if (!(o->tail_decay >= 0 && o->tail_decay <= 4))
    return hs__fail(HS_ERR_INVALID_ARG, "ctr generate: tail decay %g (0..4)", o->tail_decay);
  if (!(o->positive_rate > 0.001 && o->positive_rate < 0.999))
    return hs__fail(HS_ERR_INVALID_ARG, "ctr generate: positive rate %g", o->positive_rate);
  if (o->threads < 0 || o->threads > 256)
    return hs__fail(HS_ERR_INVALID_ARG, "ctr generate: %d threads", o->threads);
  return HS_OK;
}

/* "%.6f", or null for what JSON has no number for (a figure a split
 * cannot give: the Bayes AUC of a test split of one label, the click rate
 * of an empty split). */
static const char *num6(char buf[32], double x) {
  if (!isfinite(x)) return "null";
  snprintf(buf, 32, "%.6f", x);
  return buf;
}

static hs_status write_meta(hs__dsw *w, const gen *g, const hs_ctr_generate_summary *s) {
  const hs_ctr_generate_opts *o = g->o;
  size_t cap = 16384, len = 0;
  char *t = malloc(cap);
  if (!t) return hs__fail(HS_ERR_NOMEM, "meta.json");
#define OUT(...) len += (size_t)snprintf(t + len, cap - len, __VA_ARGS__)
  OUT("{\n  \"kind\": \"ctr\",\n  \"layout\": \"criteo\",\n  \"seed\": %" PRIu64 ",\n", o->seed);
  OUT("  \"rows\": {\"train\": %" PRId64 ", \"valid\": %" PRId64 ", \"test\": %" PRId64 "},\n",
      s->rows[0], s->rows[1], s->rows[2]);
  char b1[32], b2[32], b3[32];
  OUT("  \"positive_rate\": {\"train\": %s, \"valid\": %s, \"test\": %s},\n",
      num6(b1, s->positive_rate[0]), num6(b2, s->positive_rate[1]), num6(b3, s->positive_rate[2]));
  OUT("  \"bayes_auc\": %s,\n  \"bayes_auc_expected\": %s,\n  \"bayes_logloss\": %s,\n",
      num6(b1, s->bayes_auc), num6(b2, s->bayes_auc_expected), num6(b3, s->bayes_logloss));
  OUT("  \"files\": \"%s\",\n", o->gzip ? "txt.gz" : "txt");
  OUT("  \"signal\": %.6f,\n  \"target_positive_rate\": %.6f,\n  \"bias\": %.6f,\n", o->signal,
      o->positive_rate, g->bias);
  OUT("  \"model\": \"logit = bias + sum_f w_f(id_f) + sum_{f<g in interacting} <v_f(id_f), "
      "v_g(id_g)> + sum_j a_j (z_j - c_j) + %.2f (z_%d - c_%d)(z_%d - c_%d), z = log1p(max(x, 0)); "
      "effects of rank r scaled by ", PROD_COEF, PROD_A, PROD_A, PROD_B, PROD_B);
  if (o->tail_decay == DEFAULT_TAIL_DECAY) OUT("min(1, sqrt(%" PRId64 " / r))", o->head_ranks);
  else OUT("min(1, (%" PRId64 " / r)^%.17g)", o->head_ranks, o->tail_decay);
  OUT("; ids of rank r are fmix32(r + salt_f)\",\n");
  /* Recorded when not the defaults, so that the defaults' meta.json stays
   * as it was before the two options. */
  if (o->head_ranks != DEFAULT_HEAD_RANKS || o->tail_decay != DEFAULT_TAIL_DECAY)
    OUT("  \"head_ranks\": %" PRId64 ",\n  \"tail_decay\": %.17g,\n", o->head_ranks,
        o->tail_decay);
  OUT("  \"latent_dim\": %d,\n  \"sparse\": [\n", LATENT_K);
  for (int f = 0; f < HS_CTR_SPARSE; f++)
    OUT("    {\"vocab\": %" PRId64 ", \"zipf\": %.3f, \"sigma\": %.3f, \"missing\": %.3f, "
        "\"interacts\": %s, \"distinct\": %" PRId64 "}%s\n", g->vocab[f], fields[f].zipf,
        fields[f].sigma, fields[f].missing, fields[f].interacts ? "true" : "false",
        s->distinct[f], f + 1 < HS_CTR_SPARSE ? "," : "");
  OUT("  ],\n  \"dense\": [\n");
  for (int j = 0; j < HS_CTR_DENSE; j++)
    OUT("    {\"mu\": %.3f, \"s\": %.3f, \"missing\": %.3f, \"shift\": %.0f, \"a\": %.3f, "
        "\"centre\": %.6f}%s\n", dense[j].mu, dense[j].s, dense[j].missing, dense[j].shift,
        dense[j].a, g->centre[j], j + 1 < HS_CTR_DENSE ? "," : "");
  OUT("  ]\n}\n");
#undef OUT
  hs_status st = len < cap ? hs__dsw_text(w, "meta.json", t)
                           : hs__fail(HS_ERR_NOMEM, "meta.json longer than %zu bytes", cap);
  free(t);
  return st;
}

/* Centre of each integer feature's log transform: its mean, from the
 * distribution (missing and clipped values are 0), by quadrature. */
static double dense_centre(int j) {
  double sum = 0, wsum = 0;
  for (int k = -4000; k <= 4000; k++) {
    double n = k / 500.0, w = exp(-0.5 * n * n);
    double v = floor(exp(dense[j].mu + dense[j].s * n)) - dense[j].shift;
    sum += w * (v > 0 ? log1p(v) : 0.0);
    wsum += w;
  }
  return (1.0 - dense[j].missing) * sum / wsum;
}

static hs_status generate(const char *dst, const hs_ctr_generate_opts *opts,
                         hs_ctr_generate_summary *summary);

hs_status hs_ctr_generate(const char *dst, const hs_ctr_generate_opts *user,
                          hs_ctr_generate_summary *user_sum) {
  if (!dst || !user) return hs__fail(HS_ERR_INVALID_ARG, "hs_ctr_generate: NULL argument");
  hs_ctr_generate_opts opts;
  hs_ctr_generate_opts_init(&opts);
  hs_status st = hs__sized_in(&opts, sizeof opts, user, "hs_ctr_generate_opts");
  if (st == HS_OK && user_sum)
    st = hs__sized_check(user_sum->struct_size, sizeof *user_sum, "hs_ctr_generate_summary");
  if (st != HS_OK) return st;
  hs_ctr_generate_summary sum;
  hs_ctr_generate_summary_init(&sum);
  st = generate(dst, &opts, &sum);
  if (st == HS_OK && user_sum) hs__sized_out(user_sum, &sum, sizeof sum, "hs_ctr_generate_summary");
  return st;
}

static hs_status generate(const char *dst, const hs_ctr_generate_opts *opts,
                         hs_ctr_generate_summary *summary) {
  hs_status st = check_opts(opts);
  if (st != HS_OK) return st;
  double t0 = hs__now();
  int threads = opts->threads ? opts->threads : 2;
  gen g = {.o = opts};
  hs__dsw *w = NULL;
  hs_gather_pool *pool = NULL;
  scored *test = NULL;
  double *plog = NULL;
  out_file out = {0};
  char *path = NULL;
  int64_t n_split[HS_SPLIT_COUNT_], pos_count[HS_SPLIT_COUNT_] = {0};
  int64_t assigned = 0;
  for (int s = 0; s < HS_SPLIT_COUNT_; s++) {
    n_split[s] = s + 1 < HS_SPLIT_COUNT_ ? (int64_t)floor(opts->split_frac[s] * (double)opts->rows)
                                         : opts->rows - assigned;
    assigned += n_split[s];
  }
  for (int f = 0; f < HS_CTR_SPARSE; f++) {
    g.vocab[f] = fields[f].vocab <= 1 ? (int64_t)ceil(fields[f].vocab * (double)opts->big_vocab)
                                     : (int64_t)fields[f].vocab;
    if (g.vocab[f] < 2) g.vocab[f] = 2;
    g.salt[f] = fmix32(0x5eed0000u + (uint32_t)f * 7919u);
    double s = fields[f].zipf, V = (double)g.vocab[f];
    g.zpow[f] = s == 1.0 ? log(V + 1.0) : pow(V + 1.0, 1.0 - s);
    g.cached[f] = (int)(g.vocab[f] < CACHE_RANKS ? g.vocab[f] : CACHE_RANKS);
    g.cache[f] = malloc((size_t)g.cached[f] * (1 + LATENT_K) * sizeof(float));
    g.seen[f] = calloc((size_t)(g.vocab[f] + 63) / 64, sizeof(uint64_t));
    if (!g.cache[f] || !g.seen[f]) {
      st = hs__fail(HS_ERR_NOMEM, "ctr generate: field tables");
      goto fail;
    }
  }
  for (int j = 0; j < HS_CTR_DENSE; j++) g.centre[j] = dense_centre(j);
  if ((st = hs__gather_pool_create(threads, &pool)) != HS_OK) goto fail;
  hs__gather_pool_run(pool, fill_cache, &g);
  /* Bias: the target mean click rate on a pilot of the first rows. */
  {
    int64_t n = opts->rows < 200000 ? opts->rows : 200000;
    plog = malloc((size_t)n * sizeof *plog);
    if (!plog) {
      st = hs__fail(HS_ERR_NOMEM, "ctr generate: pilot");
      goto fail;
    }
    pilot p = {&g, plog, n};
    hs__gather_pool_run(pool, pilot_rows, &p);
    double lo = -20, hi = 20;
    for (int it = 0; it < 60; it++) {
      double mid = 0.5 * (lo + hi), m = 0;
      for (int64_t i = 0; i < n; i++) m += 1.0 / (1.0 + exp(-(plog[i] + mid)));
      if (m / (double)n < opts->positive_rate) lo = mid;
      else hi = mid;
    }
    g.bias = 0.5 * (lo + hi);
  }
  if ((st = hs__dsw_begin(dst, opts->force, &w)) != HS_OK) goto fail;
  g.prob = malloc(BLOCK_ROWS * sizeof *g.prob);
  g.label = malloc(BLOCK_ROWS);
  test = malloc((size_t)(n_split[2] > 0 ? n_split[2] : 1) * sizeof *test);
  for (int t = 0; t < threads; t++) g.text[t] = malloc((size_t)(BLOCK_ROWS / threads + 1) * MAX_LINE);
  for (int t = 0; t < threads; t++)
    if (!g.text[t]) test = NULL;
  if (!g.prob || !g.label || !test) {
    st = hs__fail(HS_ERR_NOMEM, "ctr generate: buffers");
    goto fail;
  }
  int64_t row = 0, n_test = 0;
  double logloss = 0;
  for (int s = 0; s < HS_SPLIT_COUNT_; s++) {
    char name[32];
    snprintf(name, sizeof name, "%s.txt%s", split_names[s], opts->gzip ? ".gz" : "");
    free(path);
    path = hs__path_join(hs__dsw_dir(w), name);
    if (!path) {
      st = hs__fail(HS_ERR_NOMEM, "path");
      goto fail;
    }
    if (opts->gzip) out.z = gzopen(path, "wb1");
    else out.f = fopen(path, "wb");
    if (!out.z && !out.f) {
      st = hs__fail(HS_ERR_IO, "%s: cannot create", path);
      goto fail;
    }
    int64_t end = row + n_split[s];
    while (row < end) {
      if (opts->stop && *opts->stop) {
        st = hs__fail(HS_ERR_INTERRUPTED, "ctr generate: interrupted at row %" PRId64, row);
        goto fail;
      }
      g.first = row;
      g.n = end - row < BLOCK_ROWS ? end - row : BLOCK_ROWS;
      hs__gather_pool_run(pool, gen_block, &g);
      for (int t = 0; t < threads; t++)
        if ((st = out_write(&out, path, g.text[t], g.text_len[t])) != HS_OK) goto fail;
      for (int64_t k = 0; k < g.n; k++) {
        pos_count[s] += g.label[k];
        if (s == HS_SPLIT_TEST) {
          double p = g.prob[k];
          test[n_test++] = (scored){p, g.label[k]};
          double q = g.label[k] ? p : 1 - p;
          logloss -= log(q > 1e-15 ? q : 1e-15);
        }
      }
      row += g.n;
      if (opts->progress && (row / BLOCK_ROWS) % 16 == 0)
        hs__progress(opts->progress, opts->progress_ctx, "%s: %" PRId64 " / %" PRId64 " rows (%.0f s)",
                     split_names[s], row, opts->rows, hs__now() - t0);
    }
    if ((st = out_close(&out, path)) != HS_OK) goto fail;
  }
  for (int s = 0; s < HS_SPLIT_COUNT_; s++) {
    summary->rows[s] = n_split[s];
    summary->positive_rate[s] = n_split[s] ? (double)pos_count[s] / (double)n_split[s] : NAN;
  }
  for (int f = 0; f < HS_CTR_SPARSE; f++) {
    int64_t c = 0;
    for (int64_t k = 0; k < (g.vocab[f] + 63) / 64; k++) c += __builtin_popcountll(g.seen[f][k]);
    summary->distinct[f] = c;
  }
  if (n_test > 0) {
    bayes(test, n_test, &summary->bayes_auc, &summary->bayes_auc_expected);
    summary->bayes_logloss = logloss / (double)n_test;
  } else {
    summary->bayes_auc = summary->bayes_auc_expected = summary->bayes_logloss = NAN;
  }
  if ((st = write_meta(w, &g, summary)) != HS_OK) goto fail;
  st = hs__dsw_commit(w);
  w = NULL;
  summary->seconds = hs__now() - t0;
fail:
  if (out.z || out.f) out_close(&out, path ? path : dst);
  hs__dsw_abort(w);
  hs__gather_pool_destroy(pool);
  for (int f = 0; f < HS_CTR_SPARSE; f++) {
    free(g.cache[f]);
    free((void *)g.seen[f]);
  }
  for (int t = 0; t < 256; t++) free(g.text[t]);
  free(g.prob);
  free(g.label);
  free(test);
  free(plog);
  free(path);
  return st;
}
