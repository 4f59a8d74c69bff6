/* Synthetic datasets: R-MAT and stochastic block model graphs with
 * class-dependent Gaussian features.
 *
 * Every random quantity is a pure function of (seed, what, index) through
 * Philox, so a dataset does not depend on the thread count: edge i is drawn
 * from counter (HS__RNG_EDGE + try, i_lo, i_hi, block), the features of
 * vertex v from (HS__RNG_FEAT, v, block, 0). Edges are never stored as a
 * list: pass 1 draws them to count row lengths, pass 2 draws them again to
 * fill the CSR rows in place, so memory is the CSR plus O(N) counters.
 *
 * Classes are contiguous id blocks: class(v) = floor(v * K / N). In an SBM,
 * a drawn edge has a uniform source and, with probability `homophily`, a
 * uniform target in the source's class, else a uniform one outside it. In
 * R-MAT the same id blocks are the classes: the recursive quadrant choice
 * (a > d) makes ids that share high bits link more often, so the blocks are
 * homophilous communities without any extra rule.
 *
 * Features: x[v][j] = r * [j == class(v)] + sigma * N(0, 1) with
 * r = margin / sqrt(2), so any two class means are `margin` apart. With
 * equal priors the Bayes classifier of the features alone picks the class
 * of the largest of the first K coordinates, and is right with probability
 *   P = integral phi(z) Phi(z + r / sigma)^(K-1) dz,
 * which meta.json reports as "bayes_accuracy": the accuracy of the
 * features alone. For an SBM, meta.json also predicts what one layer of
 * mean aggregation can reach (see onehop_accuracy below). */
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hs_build.h"
#include "hs_graph.h"
#include "rng/philox.h"

#define MAX_THREADS 16
#define RMAT_TRIES 64

typedef struct gen {
  const hs_generate_opts *o;
  int64_t n, m; /* vertices, edges drawn */
  int32_t k;
  int scale;
  double homophily;
  uint32_t qa, qab, qabc; /* R-MAT thresholds out of 65536 */
  int threads;
  /* CSR being built */
  int64_t *indptr;
  int32_t *indices;
  int64_t *cnt[MAX_THREADS];
  /* feature rows being made: [chunk_v0, chunk_v1) into chunk_out */
  int64_t chunk_v0, chunk_v1;
  void *chunk_out;
  float *rowbuf[MAX_THREADS];
} gen;

static inline int32_t class_of(const gen *g, int64_t v) {
  return (int32_t)((v * (int64_t)g->k) / g->n);
}

static inline int64_t class_start(const gen *g, int32_t c) {
  return ((int64_t)c * g->n + g->k - 1) / g->k;
}

static void draw_sbm(const gen *g, uint64_t i, int32_t *src, int32_t *dst) {
  hs_philox_ctr r = hs_philox_draw(g->o->seed, HS__RNG_EDGE, (uint32_t)i, (uint32_t)(i >> 32), 0);
  int64_t s = hs_philox_below(r.v[0], (uint32_t)g->n);
  int32_t c = class_of(g, s);
  int64_t b0 = class_start(g, c), b1 = class_start(g, c + 1);
  int64_t size = b1 - b0, other = g->n - size;
  int64_t d;
  if (other == 0 || hs_philox_unit(r.v[1]) < (float)g->homophily) {
    d = b0 + hs_philox_below(r.v[2], (uint32_t)size);
  } else {
    int64_t j = hs_philox_below(r.v[2], (uint32_t)other);
    d = j < b0 ? j : j + size;
  }
  *src = (int32_t)s;
  *dst = (int32_t)d;
}

static void draw_rmat(const gen *g, uint64_t i, int32_t *src, int32_t *dst) {
  uint64_t s = 0, d = 0;
  for (uint32_t t = 0; t < RMAT_TRIES; t++) {
    s = d = 0;
    hs_philox_ctr r = {{0, 0, 0, 0}};
    for (int level = 0; level < g->scale; level++) {
      if (level % 8 == 0)
        r = hs_philox_draw(g->o->seed, HS__RNG_EDGE + t, (uint32_t)i, (uint32_t)(i >> 32),
                           (uint32_t)(level / 8));
      uint32_t w = r.v[(level % 8) / 2];
      uint32_t u = level % 2 ? w >> 16 : w & 0xffffu;
      unsigned bs = u >= g->qab, bd = (u >= g->qa && u < g->qab) || u >= g->qabc;
      s = s << 1 | bs;
      d = d << 1 | bd;
    }
    if ((int64_t)s < g->n && (int64_t)d < g->n) break;
    /* Past the last try (a vanishing case), fold into range. */
    if (t == RMAT_TRIES - 1) {
      s %= (uint64_t)g->n;
      d %= (uint64_t)g->n;
    }
  }
  *src = (int32_t)s;
  *dst = (int32_t)d;
}

static inline void draw(const gen *g, uint64_t i, int32_t *s, int32_t *d) {
  if (g->o->kind == HS_GENERATE_SBM) draw_sbm(g, i, s, d);
  else draw_rmat(g, i, s, d);
}

/* ---- threads ------------------------------------------------------------ */

typedef struct job {
  gen *g;
  int t;
  void (*fn)(gen *g, int t);
} job;

static void *job_main(void *arg) {
  job *j = arg;
  j->fn(j->g, j->t);
  return NULL;
}

/* fn(g, t) for t in [0, threads); a thread that cannot start runs inline. */
static void run_threads(gen *g, void (*fn)(gen *g, int t)) {
  job jobs[MAX_THREADS];
  pthread_t tid[MAX_THREADS];
  bool started[MAX_THREADS] = {false};
  for (int t = 1; t < g->threads; t++) {
    jobs[t] = (job){g, t, fn};
    started[t] = pthread_create(&tid[t], NULL, job_main, &jobs[t]) == 0;
  }
  fn(g, 0);
  for (int t = 1; t < g->threads; t++) {
    if (started[t]) pthread_join(tid[t], NULL);
    else fn(g, t);
  }
}

static void edge_range(const gen *g, int t, uint64_t *lo, uint64_t *hi) {
  *lo = (uint64_t)g->m / (uint64_t)g->threads * (uint64_t)t;
  *hi = t == g->threads - 1 ? (uint64_t)g->m : (uint64_t)g->m / (uint64_t)g->threads * (uint64_t)(t + 1);
}

/* Whether a stop was asked for; worker loops poll it every 2^16 edges or
 * rows and return early (the caller then fails with HS_ERR_INTERRUPTED). */
static bool gen_stopped(const gen *g) { return g->o->stop && *g->o->stop; }

static void pass_count(gen *g, int t) {
  uint64_t lo, hi;
  edge_range(g, t, &lo, &hi);
  int64_t *cnt = g->cnt[t];
  bool und = g->o->undirected;
  for (uint64_t i = lo; i < hi; i++) {
    if ((i & 0xffff) == 0 && gen_stopped(g)) return;
    int32_t s, d;
    draw(g, i, &s, &d);
    cnt[s]++;
    if (und) cnt[d]++;
  }
}

static void pass_fill(gen *g, int t) {
  uint64_t lo, hi;
  edge_range(g, t, &lo, &hi);
  int64_t *cur = g->cnt[t];
  bool und = g->o->undirected;
  for (uint64_t i = lo; i < hi; i++) {
    if ((i & 0xffff) == 0 && gen_stopped(g)) return;
    int32_t s, d;
    draw(g, i, &s, &d);
    g->indices[cur[s]++] = d;
    if (und) g->indices[cur[d]++] = s;
  }
}

/* ---- features ----------------------------------------------------------- */

/* Coordinates 4*blk .. 4*blk+3 of vertex v's features before rounding:
 * Box-Muller over one Philox draw, plus the class mean. Shared by the
 * writer and the accuracy prediction so that both see the same values. */
static void feature_block(const gen *g, int64_t v, int64_t blk, float out[4]) {
  float r = (float)(g->o->margin / sqrt(2.0)), sigma = (float)g->o->sigma;
  const float two_pi = 6.283185307179586f;
  hs_philox_ctr w = hs_philox_draw(g->o->seed, HS__RNG_FEAT, (uint32_t)v, (uint32_t)blk, 0);
  for (int p = 0; p < 2; p++) {
    float u1 = ((float)(w.v[2 * p] >> 8) + 1.0f) * (1.0f / 16777216.0f);
    float u2 = hs_philox_unit(w.v[2 * p + 1]);
    float rad = sqrtf(-2.0f * logf(u1));
    out[2 * p] = sigma * rad * cosf(two_pi * u2);
    out[2 * p + 1] = sigma * rad * sinf(two_pi * u2);
  }
  int64_t c = class_of(g, v);
  if (c / 4 == blk) out[c % 4] += r;
}

static void feat_rows(gen *g, int t) {
  int64_t rows = g->chunk_v1 - g->chunk_v0;
  int64_t a = g->chunk_v0 + rows * t / g->threads, b = g->chunk_v0 + rows * (t + 1) / g->threads;
  int64_t f = g->o->num_features;
  bool half = g->o->feature_dtype == HS_DTYPE_FLOAT16;
  float *row = g->rowbuf[t];
  for (int64_t v = a; v < b; v++) {
    for (int64_t j = 0; j < f; j += 4) feature_block(g, v, j / 4, row + j);
    size_t off = (size_t)(v - g->chunk_v0) * (size_t)f;
    if (!half) {
      memcpy((float *)g->chunk_out + off, row, (size_t)f * sizeof *row);
    } else {
      uint16_t *out = (uint16_t *)g->chunk_out + off;
      for (int64_t j = 0; j < f; j++) out[j] = hs__float_to_half(row[j]);
    }
  }
}

/* Never write a non-finite feature (a margin or sigma too large for the
 * feature type overflows): the dataset reader's users would train on it. */
static hs_status check_finite(const gen *g, const void *chunk) {
  int64_t f = g->o->num_features;
  size_t count = (size_t)(g->chunk_v1 - g->chunk_v0) * (size_t)f;
  bool half = g->o->feature_dtype == HS_DTYPE_FLOAT16;
  for (size_t i = 0; i < count; i++) {
    bool bad = half ? (((const uint16_t *)chunk)[i] & 0x7c00u) == 0x7c00u
                    : !isfinite(((const float *)chunk)[i]);
    if (bad)
      return hs__fail(HS_ERR_RANGE, "feature %lld of row %lld is not finite in %s: margin %g "
                      "and sigma %g overflow it", (long long)(i % (size_t)f),
                      (long long)(g->chunk_v0 + (int64_t)(i / (size_t)f)),
                      hs_dtype_name(g->o->feature_dtype), g->o->margin, g->o->sigma);
  }
  return HS_OK;
}

static hs_status write_features(gen *g, hs__dsw *w) {
  const hs_generate_opts *o = g->o;
  uint64_t shape[2] = {(uint64_t)g->n, (uint64_t)o->num_features};
  size_t es = o->feature_dtype == HS_DTYPE_FLOAT16 ? 2 : 4;
  size_t row_bytes = (size_t)o->num_features * es;
  int64_t rows = (int64_t)((64u << 20) / row_bytes);
  if (rows < 1) rows = 1;
  hs_status st = HS_OK;
  void *buf = malloc((size_t)rows * row_bytes);
  bool ok = buf != NULL;
  for (int t = 0; t < g->threads && ok; t++)
    ok = (g->rowbuf[t] = malloc(((size_t)o->num_features + 4) * sizeof(float))) != NULL;
  if (!ok) {
    st = hs__fail(HS_ERR_NOMEM, "no memory for feature rows");
    goto done;
  }
  hs__npy_out out;
  if ((st = hs__dsw_stream(w, "feat.npy", o->feature_dtype, 2, shape, &out))) goto done;
  double t0 = hs__now(), last = t0;
  for (int64_t v0 = 0; v0 < g->n; v0 += rows) {
    g->chunk_v0 = v0;
    g->chunk_v1 = v0 + rows < g->n ? v0 + rows : g->n;
    g->chunk_out = buf;
    run_threads(g, feat_rows);
    if ((st = check_finite(g, buf))) break;
    if ((st = hs__npy_out_write(&out, buf, (size_t)(g->chunk_v1 - v0) * row_bytes))) break;
    if (hs__now() - last > 5) {
      last = hs__now();
      hs__progress(o->progress, o->progress_ctx, "features: %" PRId64 " / %" PRId64 " rows (%.0f s)",
                   g->chunk_v1, g->n, last - t0);
    }
  }
  if (st) hs__npy_out_discard(&out);
  else st = hs__npy_out_close(&out);
done:
  free(buf);
  for (int t = 0; t < MAX_THREADS; t++) {
    free(g->rowbuf[t]);
    g->rowbuf[t] = NULL;
  }
  return st;
}

/* ---- bag-of-words features --------------------------------------------- */

#define HS__RNG_WORDS 0x776f7264u /* "word": (purpose, vertex, draw pair, 0) */

/* Binary rows: vertex v's words, drawn from Philox (seed, WORDS, v, i/2),
 * sorted and merged (see hs_generate_opts.words). */
static hs_status write_words(gen *g, hs__dsw *w) {
  const hs_generate_opts *o = g->o;
  int64_t f = o->num_features, block = f / g->k;
  int32_t most = (int32_t)ceil(1.5 * o->words);
  if (most < 1) most = 1;
  int64_t *ptr = malloc(((size_t)g->n + 1) * sizeof *ptr);
  int32_t *col = malloc((size_t)g->n * (size_t)most * sizeof *col + 4);
  hs_status st = HS_OK;
  if (!ptr || !col) {
    st = hs__fail(HS_ERR_NOMEM, "no memory for %" PRId64 " x %d words", g->n, most);
    goto done;
  }
  ptr[0] = 0;
  for (int64_t v = 0; v < g->n; v++) {
    hs_philox_ctr len_r = hs_philox_draw(o->seed, HS__RNG_WORDS, (uint32_t)v, 0xffffffffu, 0);
    int32_t len = (int32_t)floor(o->words * (0.5 + (double)hs_philox_unit(len_r.v[0])));
    if (len < 1) len = 1;
    if (len > most) len = most;
    int32_t *row = col + ptr[v];
    int64_t c0 = class_of(g, v) * block;
    for (int32_t i = 0; i < len; i += 2) {
      hs_philox_ctr r = hs_philox_draw(o->seed, HS__RNG_WORDS, (uint32_t)v, (uint32_t)(i / 2), 0);
      for (int h = 0; h < 2 && i + h < len; h++) {
        bool topical = hs_philox_unit(r.v[2 * h]) < (float)o->topic;
        uint32_t span = (uint32_t)(topical ? block : f);
        row[i + h] = (int32_t)((topical ? c0 : 0) + hs_philox_below(r.v[2 * h + 1], span));
      }
    }
    hs__sort_i32(row, (size_t)len);
    int32_t k = 0;
    for (int32_t i = 0; i < len; i++)
      if (i == 0 || row[i] != row[k - 1]) row[k++] = row[i];
    ptr[v + 1] = ptr[v] + k;
  }
  hs__feat_src fs = {.n = g->n, .f = f, .dtype = HS_DTYPE_FLOAT32, .ptr = ptr, .col = col};
  st = hs__feat_write(w, &fs, o->feat_format, NULL);
done:
  free(ptr);
  free(col);
  return st;
}

/* ---- accuracy prediction ----------------------------------------------- */

static double bayes_accuracy(int32_t k, double r_over_sigma) {
  if (k <= 1) return 1.0;
  /* Simpson's rule on [-12, 12]: phi is negligible outside. */
  const int steps = 4800;
  const double lo = -12, hi = 12, h = (hi - lo) / steps;
  double sum = 0;
  for (int i = 0; i <= steps; i++) {
    double z = lo + h * i;
    double phi = exp(-0.5 * z * z) / sqrt(2 * M_PI);
    double cdf = 0.5 * erfc(-(z + r_over_sigma) / sqrt(2.0));
    double f = phi * pow(cdf, k - 1);
    sum += f * (i == 0 || i == steps ? 1 : (i % 2 ? 4 : 2));
  }
  return sum * h / 3;
}

/* What one layer of mean aggregation can know. Given its class c, the
 * informative coordinates of a vertex's neighbour mean over d neighbours
 * are r * (class counts / d) + sigma * N(0, I / d), where the counts are
 * multinomial with p_c = h on c and q = (1 - h) / (K - 1) elsewhere (h:
 * the measured homophily). Taking that as Gaussian,
 *   m | c, d ~ N(r p_c, S_c / d),  S_c = sigma^2 I + r^2 (diag p_c - p_c p_c^T),
 * and with x | c ~ N(r e_c, sigma^2 I) the log-posterior of class c is, up
 * to terms equal for every class (the S_c are permutations of each other,
 * so their determinants agree),
 *   r x_c / sigma^2 - d/2 (m - r p_c)^T S_c^-1 (m - r p_c).
 * S_0^-1 keeps S_0's symmetry: a at (0,0), b at (0,j), e at (j,j) and f at
 * (j,k) for j != k != 0, so each class costs O(1) after two sums over the
 * coordinates. The prediction is that rule's accuracy on the vertices of
 * the test split (at most PREDICT_MAX of them, evenly strided): the best a
 * model seeing a vertex's features and its neighbours' mean can do, which
 * a one-layer mean-aggregator GraphSAGE over full neighbourhoods should
 * come within a point or two of (it does not see the degree). Deeper
 * models see further and beat it. Values are the unrounded float32 ones. */
#define PREDICT_MAX 65536

/* Invert the k x k matrix a (row-major) in place by Gauss-Jordan with
 * partial pivoting; false when singular. */
static bool invert(double *a, int k) {
  double *inv = calloc((size_t)k * (size_t)k, sizeof *inv);
  if (!inv) return false;
  for (int i = 0; i < k; i++) inv[i * k + i] = 1;
  bool ok = true;
  for (int c = 0; c < k && ok; c++) {
    int piv = c;
    for (int i = c + 1; i < k; i++)
      if (fabs(a[i * k + c]) > fabs(a[piv * k + c])) piv = i;
    if (!(fabs(a[piv * k + c]) > 1e-300)) {
      ok = false;
      break;
    }
    for (int j = 0; j < k; j++) {
      double t = a[c * k + j];
      a[c * k + j] = a[piv * k + j];
      a[piv * k + j] = t;
      t = inv[c * k + j];
      inv[c * k + j] = inv[piv * k + j];
      inv[piv * k + j] = t;
    }
    double d = a[c * k + c];
    for (int j = 0; j < k; j++) {
      a[c * k + j] /= d;
      inv[c * k + j] /= d;
    }
    for (int i = 0; i < k; i++) {
      if (i == c) continue;
      double f = a[i * k + c];
      if (f == 0) continue;
      for (int j = 0; j < k; j++) {
        a[i * k + j] -= f * a[c * k + j];
        inv[i * k + j] -= f * inv[c * k + j];
      }
    }
  }
  if (ok) memcpy(a, inv, (size_t)k * (size_t)k * sizeof *a);
  free(inv);
  return ok;
}

/* The informative coordinates 0..k-1 of vertex v into out (k rounded up
 * to a multiple of 4). */
static void informative(const gen *g, int64_t v, float *out) {
  for (int64_t b = 0; b * 4 < g->k; b++) feature_block(g, v, b, out + 4 * b);
}

static hs_status onehop_accuracy(const gen *g, double h, const int32_t *test, int64_t n_test,
                                 double *acc) {
  int32_t k = g->k;
  *acc = 1.0;
  if (k <= 1 || n_test == 0) return HS_OK;
  double r = g->o->margin / sqrt(2.0), s2 = g->o->sigma * g->o->sigma;
  double q = (1 - h) / (k - 1);
  size_t kk = (size_t)k * (size_t)k, kpad = ((size_t)k + 3) & ~(size_t)3;
  double *sinv = malloc(kk * sizeof *sinv), *m = malloc((size_t)k * sizeof *m);
  float *x = malloc(kpad * sizeof *x), *y = malloc(kpad * sizeof *y);
  hs_status st = HS_OK;
  if (!sinv || !m || !x || !y) {
    st = hs__fail(HS_ERR_NOMEM, "no memory for the accuracy prediction");
    goto done;
  }
  for (int32_t i = 0; i < k; i++)
    for (int32_t j = 0; j < k; j++) {
      double pi = i == 0 ? h : q, pj = j == 0 ? h : q;
      sinv[(size_t)i * (size_t)k + (size_t)j] = (i == j ? s2 + r * r * pi : 0) - r * r * pi * pj;
    }
  if (!invert(sinv, k)) {
    st = hs__fail(HS_ERR_INVALID_ARG, "the neighbour-mean covariance is singular");
    goto done;
  }
  double a = sinv[0], b = sinv[1], e = sinv[(size_t)k + 1], f = k > 2 ? sinv[(size_t)k + 2] : 0;
  int64_t step = n_test > PREDICT_MAX ? (n_test + PREDICT_MAX - 1) / PREDICT_MAX : 1;
  int64_t right = 0, seen = 0;
  for (int64_t i = 0; i < n_test; i += step, seen++) {
    int64_t v = test[i];
    informative(g, v, x);
    int64_t d = g->indptr[v + 1] - g->indptr[v];
    for (int32_t j = 0; j < k; j++) m[j] = 0;
    for (int64_t p = g->indptr[v]; p < g->indptr[v + 1]; p++) {
      informative(g, g->indices[p], y);
      for (int32_t j = 0; j < k; j++) m[j] += y[j];
    }
    /* w_j = m_j - r q for every j; class c then moves w_c by r (q - h). */
    double sa = 0, sb = 0;
    for (int32_t j = 0; j < k; j++) {
      if (d) m[j] /= (double)d;
      double w = m[j] - r * q;
      sa += w;
      sb += w * w;
    }
    int32_t best = 0;
    double best_score = -INFINITY;
    for (int32_t c = 0; c < k; c++) {
      double score = r * x[c] / s2;
      if (d) {
        double wo = m[c] - r * q, wc = m[c] - r * h;
        double t = sa - wo, u = sb - wo * wo; /* sums over j != c */
        double quad = a * wc * wc + 2 * b * wc * t + e * u + f * (t * t - u);
        score -= 0.5 * (double)d * quad;
      }
      if (score > best_score) {
        best_score = score;
        best = c;
      }
    }
    right += best == class_of(g, v);
  }
  *acc = (double)right / (double)seen;
done:
  free(sinv);
  free(m);
  free(x);
  free(y);
  return st;
}

/* ---- driver ------------------------------------------------------------- */

void hs_generate_summary_init_sized(hs_generate_summary *sum, size_t struct_size) {
  hs_generate_summary z;
  memset(&z, 0, sizeof z);
  z.struct_size = sizeof z;
  hs__sized_init(sum, struct_size, &z, sizeof z);
}

void hs_generate_opts_init_sized(hs_generate_opts *user, hs_generate_kind kind, size_t size) {
  hs_generate_opts d, *o = &d;
  memset(o, 0, sizeof *o);
  o->struct_size = sizeof *o;
  o->kind = kind;
  o->seed = 1;
  o->scale = 16;
  o->edge_factor = 16;
  o->rmat_a = 0.57;
  o->rmat_b = 0.19;
  o->rmat_c = 0.19;
  o->num_classes = 8;
  o->homophily = 0.8;
  o->num_features = 32;
  o->feature_dtype = HS_DTYPE_FLOAT32;
  o->margin = 1.5;
  o->sigma = 1.0;
  o->features = HS_GENERATE_GAUSSIAN;
  o->words = 32;
  o->topic = 0.25;
  o->feat_format = HS_FEAT_FORMAT_AUTO;
  o->undirected = true;
  o->dedup = true;
  o->self_loops = HS_SELF_LOOPS_DROP;
  o->split_frac[0] = 0.6;
  o->split_frac[1] = 0.2;
  o->split_frac[2] = 0.2;
  o->threads = 2;
  hs__sized_init(user, size, o, sizeof *o);
}

static hs_status check_opts(const hs_generate_opts *o, gen *g) {
  if (o->kind != HS_GENERATE_RMAT && o->kind != HS_GENERATE_SBM)
    return hs__fail(HS_ERR_INVALID_ARG, "unknown generator kind %d", (int)o->kind);
  if (o->scale < 1 || o->scale > 31)
    return hs__fail(HS_ERR_INVALID_ARG, "scale %d is not in [1, 31]", o->scale);
  g->n = o->num_vertices ? o->num_vertices : (int64_t)1 << o->scale;
  if (g->n < 1 || g->n > INT32_MAX)
    return hs__fail(g->n > INT32_MAX ? HS_ERR_UNSUPPORTED : HS_ERR_INVALID_ARG,
                    "%" PRId64 " vertices: need 1 <= N < 2^31", g->n);
  g->scale = 1;
  while (((int64_t)1 << g->scale) < g->n) g->scale++;
  if (o->kind == HS_GENERATE_RMAT && o->num_vertices && o->scale > g->scale) g->scale = o->scale;
  if (o->num_classes < 1 || o->num_classes > g->n)
    return hs__fail(HS_ERR_INVALID_ARG, "%" PRId32 " classes for %" PRId64 " vertices",
                    o->num_classes, g->n);
  g->k = o->num_classes;
  if (o->num_features < g->k)
    return hs__fail(HS_ERR_INVALID_ARG,
                    "%" PRId64 " features: need at least one per class (%" PRId32 ")",
                    o->num_features, g->k);
  if (o->feature_dtype != HS_DTYPE_FLOAT32 && o->feature_dtype != HS_DTYPE_FLOAT16)
    return hs__fail(HS_ERR_INVALID_ARG, "features must be float32 or float16");
  if (!(o->sigma > 0) || !(o->margin >= 0) || !isfinite(o->sigma) || !isfinite(o->margin))
    return hs__fail(HS_ERR_INVALID_ARG, "need sigma > 0 and margin >= 0");
  if (o->features != HS_GENERATE_GAUSSIAN && o->features != HS_GENERATE_WORDS)
    return hs__fail(HS_ERR_INVALID_ARG, "unknown feature model %d", (int)o->features);
  if (o->features == HS_GENERATE_WORDS &&
      (!(o->words >= 1 && o->words <= 1e6) || !(o->topic >= 0 && o->topic <= 1)))
    return hs__fail(HS_ERR_INVALID_ARG, "words %g (need 1 .. 1e6) and topic %g (need 0 .. 1)",
                    o->words, o->topic);
  if (o->features == HS_GENERATE_WORDS && o->words > (double)o->num_features)
    return hs__fail(HS_ERR_INVALID_ARG,
                    "words %g: more than the %" PRId64 " features a vertex's words come from",
                    o->words, o->num_features);
  if ((unsigned)o->feat_format > HS_FEAT_FORMAT_SPARSE)
    return hs__fail(HS_ERR_INVALID_ARG, "feature format %d", (int)o->feat_format);
  g->homophily = o->homophily;
  g->m = o->num_edges;
  if (o->kind == HS_GENERATE_SBM && o->p_in > 0) {
    if (!(o->p_in <= 1) || !(o->p_out >= 0 && o->p_out <= 1))
      return hs__fail(HS_ERR_INVALID_ARG, "p_in and p_out must be probabilities");
    double within = 0, sq = 0;
    for (int32_t c = 0; c < g->k; c++) {
      double s = (double)(class_start(g, c + 1) - class_start(g, c));
      within += s * (s - 1) / 2;
      sq += s * s;
    }
    double across = ((double)g->n * (double)g->n - sq) / 2;
    double ew = within * o->p_in, ea = across * o->p_out;
    if (ew + ea > 9e18) return hs__fail(HS_ERR_INVALID_ARG, "p_in/p_out give too many edges");
    g->m = llround(ew + ea);
    g->homophily = ew + ea > 0 ? ew / (ew + ea) : 1;
  } else if (g->m == 0) {
    if (!(o->edge_factor >= 0) || o->edge_factor * (double)g->n > 4e18)
      return hs__fail(HS_ERR_INVALID_ARG, "bad edge factor %g", o->edge_factor);
    g->m = llround(o->edge_factor * (double)g->n);
  }
  if (g->m < 0) return hs__fail(HS_ERR_INVALID_ARG, "negative edge count");
  if (!(g->homophily >= 0 && g->homophily <= 1))
    return hs__fail(HS_ERR_INVALID_ARG, "homophily %g is not in [0, 1]", g->homophily);
  if (o->kind == HS_GENERATE_RMAT) {
    double a = o->rmat_a, b = o->rmat_b, c = o->rmat_c;
    if (!(a >= 0 && b >= 0 && c >= 0 && a + b + c <= 1 + 1e-12))
      return hs__fail(HS_ERR_INVALID_ARG, "R-MAT a, b, c must be >= 0 with a + b + c <= 1");
    g->qa = (uint32_t)lround(a * 65536);
    g->qab = (uint32_t)lround((a + b) * 65536);
    g->qabc = (uint32_t)lround((a + b + c) * 65536);
  }
  uint64_t entries = (uint64_t)g->m * (o->undirected ? 2u : 1u);
  if (entries / (o->undirected ? 2u : 1u) != (uint64_t)g->m || entries > ((uint64_t)1 << 40))
    return hs__fail(HS_ERR_INVALID_ARG, "%" PRId64 " edges is too many", g->m);
  g->threads = o->threads <= 0 ? 2 : o->threads > MAX_THREADS ? MAX_THREADS : o->threads;
  return HS_OK;
}

static hs_status write_meta(const gen *g, hs__dsw *w, double measured_h, double bayes,
                            double onehop) {
  const hs_generate_opts *o = g->o;
  char b[3072], onehop_s[32] = "null";
  if (isfinite(onehop)) snprintf(onehop_s, sizeof onehop_s, "%.6f", onehop);
  int k = snprintf(b, sizeof b,
                   "{\n  \"hetsage_dataset\": 1,\n  \"generator\": \"%s\",\n  \"seed\": %" PRIu64
                   ",\n  \"vertices\": %" PRId64 ",\n  \"edges_drawn\": %" PRId64
                   ",\n  \"undirected\": %s,\n  \"dedup\": %s,\n  \"self_loops\": \"%s\",\n",
                   o->kind == HS_GENERATE_SBM ? "sbm" : "rmat", o->seed, g->n, g->m,
                   o->undirected ? "true" : "false", o->dedup ? "true" : "false",
                   o->self_loops == HS_SELF_LOOPS_DROP ? "drop" : "keep");
  if (o->kind == HS_GENERATE_RMAT)
    k += snprintf(b + k, sizeof b - (size_t)k,
                  "  \"rmat\": {\"scale\": %d, \"a\": %g, \"b\": %g, \"c\": %g, \"d\": %g},\n",
                  g->scale, o->rmat_a, o->rmat_b, o->rmat_c, 1 - o->rmat_a - o->rmat_b - o->rmat_c);
  else
    k += snprintf(b + k, sizeof b - (size_t)k,
                  "  \"sbm\": {\"homophily\": %.6f, \"p_in\": %g, \"p_out\": %g},\n", g->homophily,
                  o->p_in, o->p_out);
  if (o->features == HS_GENERATE_WORDS) {
    k += snprintf(b + k, sizeof b - (size_t)k,
                  "  \"classes\": %" PRId32 ",\n  \"class_rule\": \"class(v) = floor(v * classes / "
                  "vertices)\",\n  \"features\": %" PRId64 ",\n  \"feature_rule\": \"binary "
                  "bag of words: uniform([words/2, 3 words/2)) draws, each from the class's block "
                  "of features/classes words with probability topic, else from all\",\n"
                  "  \"words\": %g,\n  \"topic\": %g,\n  \"homophily_measured\": %.6f,\n"
                  "  \"split\": {\"kind\": \"stratified\", \"fractions\": [%g, %g, %g], "
                  "\"seed\": %" PRIu64 "}\n}\n",
                  o->num_classes, o->num_features, o->words, o->topic, measured_h,
                  o->split_frac[0], o->split_frac[1], o->split_frac[2], o->seed);
    if (k >= (int)sizeof b) return hs__fail(HS_ERR_NOMEM, "meta.json too long");
    return hs__dsw_text(w, "meta.json", b);
  }
  k += snprintf(b + k, sizeof b - (size_t)k,
                "  \"classes\": %" PRId32 ",\n  \"class_rule\": \"class(v) = floor(v * classes / vertices)\",\n"
                "  \"features\": %" PRId64 ",\n  \"feature_dtype\": \"%s\",\n"
                "  \"feature_rule\": \"x[v][j] = margin/sqrt(2) * [j == class(v)] + sigma * N(0,1)\",\n"
                "  \"margin\": %g,\n  \"sigma\": %g,\n"
                "  \"homophily_measured\": %.6f,\n"
                "  \"bayes_accuracy\": %.6f,\n"
                "  \"predicted_accuracy\": {\"features_only\": %.6f, \"one_hop_mean\": %s, "
                "\"note\": \"features_only: Bayes accuracy of a vertex's own features; "
                "one_hop_mean (SBM): Bayes accuracy, on the test split, of its features and "
                "the mean of its neighbours' features, which a one-layer mean-aggregator "
                "GraphSAGE over full neighbourhoods should come within two points of; deeper "
                "models see further and can beat it\"},\n"
                "  \"split\": {\"kind\": \"stratified\", \"fractions\": [%g, %g, %g], \"seed\": %" PRIu64
                "}\n}\n",
                o->num_classes, o->num_features, hs_dtype_name(o->feature_dtype), o->margin,
                o->sigma, measured_h, bayes, bayes, onehop_s, o->split_frac[0], o->split_frac[1],
                o->split_frac[2], o->seed);
  if (k >= (int)sizeof b) return hs__fail(HS_ERR_NOMEM, "meta.json too long");
  return hs__dsw_text(w, "meta.json", b);
}

static hs_status generate(const char *dst, const hs_generate_opts *o, hs_dataset_info *info,
                          hs_generate_summary *sum);

hs_status hs_generate(const char *dst, const hs_generate_opts *user, hs_dataset_info *info,
                      hs_generate_summary *sum) {
  if (!dst || !user) return hs__fail(HS_ERR_INVALID_ARG, "hs_generate: NULL argument");
  hs_generate_opts o;
  hs_generate_opts_init(&o, user->kind);
  hs_status st = hs__sized_in(&o, sizeof o, user, "hs_generate_opts");
  if (st == HS_OK && info)
    st = hs__sized_check(info->struct_size, sizeof *info, "hs_dataset_info");
  if (st == HS_OK && sum)
    st = hs__sized_check(sum->struct_size, sizeof *sum, "hs_generate_summary");
  if (st != HS_OK) return st;
  hs_dataset_info info_full;
  hs_generate_summary sum_full;
  hs_dataset_info_init(&info_full);
  hs_generate_summary_init(&sum_full);
  st = generate(dst, &o, &info_full, &sum_full);
  if (st == HS_OK && info) st = hs__sized_out(info, &info_full, sizeof info_full, "hs_dataset_info");
  if (st == HS_OK && sum)
    st = hs__sized_out(sum, &sum_full, sizeof sum_full, "hs_generate_summary");
  return st;
}

static hs_status generate(const char *dst, const hs_generate_opts *o, hs_dataset_info *info,
                          hs_generate_summary *sum) {
  gen g;
  memset(&g, 0, sizeof g);
  g.o = o;
  hs_status st = check_opts(o, &g);
  if (st) return st;
  hs__dsw *w = NULL;
  int32_t *labels = NULL, *split[HS_SPLIT_COUNT_] = {NULL, NULL, NULL};
  int64_t split_n[HS_SPLIT_COUNT_];
  hs_dataset *check = NULL;
  double t0 = hs__now();
  if ((st = hs__dsw_begin(dst, o->force, &w))) return st;
  hs__stop_scope(o->stop);
  uint64_t entries = (uint64_t)g.m * (o->undirected ? 2u : 1u);
  size_t nn = (size_t)g.n + 1;
  g.indptr = calloc(nn, sizeof *g.indptr);
  g.indices = malloc(entries ? (size_t)entries * sizeof *g.indices : 1);
  bool ok = g.indptr && g.indices;
  for (int t = 0; t < g.threads && ok; t++) ok = (g.cnt[t] = calloc(nn, sizeof(int64_t))) != NULL;
  if (!ok) {
    st = hs__fail(HS_ERR_NOMEM, "no memory for a CSR of %" PRId64 " vertices and %" PRIu64 " entries",
                  g.n, entries);
    goto fail;
  }
  hs__progress(o->progress, o->progress_ctx, "pass 1/2: counting degrees of %" PRId64 " edges (%d threads)",
               g.m, g.threads);
  run_threads(&g, pass_count);
  if (hs__stopped()) goto stopped;
  for (int64_t v = 0; v < g.n; v++) {
    int64_t at = g.indptr[v];
    for (int t = 0; t < g.threads; t++) {
      int64_t c = g.cnt[t][v];
      g.cnt[t][v] = at; /* becomes thread t's write cursor in row v */
      at += c;
    }
    g.indptr[v + 1] = at;
  }
  hs__progress(o->progress, o->progress_ctx, "pass 2/2: filling rows (%.1f s)", hs__now() - t0);
  run_threads(&g, pass_fill);
  if (hs__stopped()) goto stopped;
  for (int t = 0; t < g.threads; t++) {
    free(g.cnt[t]);
    g.cnt[t] = NULL;
  }
  hs__progress(o->progress, o->progress_ctx, "sorting rows (%.1f s)", hs__now() - t0);
  hs__edge_opts eo = {o->undirected, o->dedup, o->self_loops};
  if ((st = hs__csr_finish(g.n, g.indptr, g.indices, &eo, g.threads))) goto fail;
  int64_t e = g.indptr[g.n];

  labels = malloc((size_t)g.n * sizeof *labels);
  if (!labels) {
    st = hs__fail(HS_ERR_NOMEM, "no memory");
    goto fail;
  }
  for (int64_t v = 0; v < g.n; v++) labels[v] = class_of(&g, v);
  int64_t same = 0;
  for (int64_t v = 0; v < g.n; v++)
    for (int64_t k = g.indptr[v]; k < g.indptr[v + 1]; k++) same += labels[g.indices[k]] == labels[v];
  double measured_h = e ? (double)same / (double)e : 0;
  if ((st = hs__split_stratified(labels, g.n, g.k, o->split_frac, o->seed, split, split_n)))
    goto fail;
  double onehop = NAN;
  bool words = o->features == HS_GENERATE_WORDS;
  if (o->kind == HS_GENERATE_SBM && !words &&
      (st = onehop_accuracy(&g, measured_h, split[HS_SPLIT_TEST], split_n[HS_SPLIT_TEST], &onehop)))
    goto fail;

  if (hs__stopped()) goto stopped;
  hs__progress(o->progress, o->progress_ctx, "writing topology: %" PRId64 " entries (%.1f s)", e,
               hs__now() - t0);
  uint64_t s_ip[1] = {(uint64_t)g.n + 1}, s_ix[1] = {(uint64_t)e}, s_l[1] = {(uint64_t)g.n};
  if ((st = hs__dsw_array(w, "indptr.npy", HS_DTYPE_INT64, 1, s_ip, g.indptr))) goto fail;
  if ((st = hs__dsw_array(w, "indices.npy", HS_DTYPE_INT32, 1, s_ix, g.indices))) goto fail;
  free(g.indices);
  g.indices = NULL;
  if ((st = hs__dsw_array(w, "label.npy", HS_DTYPE_INT32, 1, s_l, labels))) goto fail;
  static const char *const names[HS_SPLIT_COUNT_] = {"train_idx.npy", "valid_idx.npy",
                                                     "test_idx.npy"};
  for (int s = 0; s < HS_SPLIT_COUNT_; s++) {
    uint64_t sh[1] = {(uint64_t)split_n[s]};
    if ((st = hs__dsw_array(w, names[s], HS_DTYPE_INT32, 1, sh, split[s]))) goto fail;
  }
  hs__progress(o->progress, o->progress_ctx, "writing features: %" PRId64 " x %" PRId64 " %s (%.1f s)",
               g.n, o->num_features, hs_dtype_name(o->feature_dtype), hs__now() - t0);
  if ((st = words ? write_words(&g, w) : write_features(&g, w))) goto fail;
  double bayes = words ? NAN : bayes_accuracy(g.k, o->margin / sqrt(2.0) / o->sigma);
  if ((st = write_meta(&g, w, measured_h, bayes, onehop))) goto fail;
  if ((st = hs_dataset_open(hs__dsw_dir(w), &check))) {
    hs__fail_context(st, "the generated dataset does not validate");
    goto fail;
  }
  hs_dataset_get_info(check, info); /* a full struct of ours: cannot fail */
  if (sum) {
    sum->homophily = measured_h;
    sum->bayes_accuracy = bayes;
    sum->onehop_accuracy = onehop;
  }
  hs_dataset_close(check);
  if (hs__stopped()) goto stopped;
  hs__stop_scope(NULL);
  st = hs__dsw_commit(w);
  w = NULL;
  if (sum) sum->seconds = hs__now() - t0;
  if (!st) hs__progress(o->progress, o->progress_ctx, "wrote %s in %.1f s", dst, hs__now() - t0);
  goto fail;
stopped:
  st = hs__fail_stopped();
fail:
  hs__stop_scope(NULL);
  hs__dsw_abort(w);
  free(g.indptr);
  free(g.indices);
  for (int t = 0; t < MAX_THREADS; t++) free(g.cnt[t]);
  free(labels);
  for (int s = 0; s < HS_SPLIT_COUNT_; s++) free(split[s]);
  return st;
}
