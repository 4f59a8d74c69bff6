/* Writing features in either form (dataset.h): dense feat.npy or the
 * sparse CSR arrays, from dense rows or from CSR, with AUTO choosing by the
 * measured density. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "hs_build.h"

const char *hs_feat_format_name(hs_feat_format f) {
  switch (f) {
    case HS_FEAT_FORMAT_AUTO: return "auto";
    case HS_FEAT_FORMAT_DENSE: return "dense";
    case HS_FEAT_FORMAT_SPARSE: return "sparse";
    default: return "unknown";
  }
}

hs_status hs_feat_format_parse(const char *name, hs_feat_format *out) {
  if (!out) return hs__fail(HS_ERR_INVALID_ARG, "hs_feat_format_parse: NULL out");
  for (int f = HS_FEAT_FORMAT_AUTO; f <= HS_FEAT_FORMAT_SPARSE; f++)
    if (name && strcmp(name, hs_feat_format_name((hs_feat_format)f)) == 0) {
      *out = (hs_feat_format)f;
      return HS_OK;
    }
  return hs__fail(HS_ERR_INVALID_ARG, "unknown feature format '%s' (auto, dense, sparse)",
                  name ? name : "");
}

static bool is_zero(const void *base, hs_dtype dt, size_t i) {
  if (dt == HS_DTYPE_FLOAT16) return (((const uint16_t *)base)[i] & 0x7fffu) == 0;
  return ((const float *)base)[i] == 0.0f;
}

static bool is_one(const void *base, hs_dtype dt, size_t i) {
  if (dt == HS_DTYPE_FLOAT16) return ((const uint16_t *)base)[i] == 0x3c00u;
  return ((const float *)base)[i] == 1.0f;
}

/* Non-zeros of dense rows, and whether each of them is exactly 1. */
static void dense_counts(const hs__feat_src *s, int64_t *nnz, bool *binary) {
  size_t total = (size_t)s->n * (size_t)s->f;
  int64_t k = 0;
  bool ones = true;
  for (size_t i = 0; i < total; i++)
    if (!is_zero(s->dense, s->dtype, i)) {
      k++;
      ones &= is_one(s->dense, s->dtype, i);
    }
  *nnz = k;
  *binary = ones;
}

static hs_status write_shape(hs__dsw *w, int64_t n, int64_t f) {
  int64_t shape[2] = {n, f};
  uint64_t s1[1] = {2};
  return hs__dsw_array(w, "feat_shape.npy", HS_DTYPE_INT64, 1, s1, shape);
}

/* Dense rows -> CSR arrays in memory, then the files. */
static hs_status dense_to_sparse(hs__dsw *w, const hs__feat_src *s, int64_t nnz, bool binary) {
  size_t es = hs__dtype_size(s->dtype), f = (size_t)s->f;
  int64_t *ptr = malloc(((size_t)s->n + 1) * sizeof *ptr);
  int32_t *col = malloc((nnz ? (size_t)nnz : 1) * sizeof *col);
  char *val = binary ? NULL : malloc((nnz ? (size_t)nnz : 1) * es);
  hs_status st = HS_OK;
  if (!ptr || !col || (!binary && !val)) {
    st = hs__fail(HS_ERR_NOMEM, "no memory for %" PRId64 " sparse features", nnz);
    goto done;
  }
  int64_t k = 0;
  ptr[0] = 0;
  for (int64_t v = 0; v < s->n; v++) {
    for (size_t j = 0; j < f; j++) {
      size_t i = (size_t)v * f + j;
      if (is_zero(s->dense, s->dtype, i)) continue;
      col[k] = (int32_t)j;
      if (val) memcpy(val + (size_t)k * es, (const char *)s->dense + i * es, es);
      k++;
    }
    ptr[v + 1] = k;
  }
  uint64_t s_p[1] = {(uint64_t)s->n + 1}, s_k[1] = {(uint64_t)nnz};
  if ((st = write_shape(w, s->n, s->f)) ||
      (st = hs__dsw_array(w, "feat_indptr.npy", HS_DTYPE_INT64, 1, s_p, ptr)) ||
      (st = hs__dsw_array(w, "feat_indices.npy", HS_DTYPE_INT32, 1, s_k, col)))
    goto done;
  if (val) st = hs__dsw_array(w, "feat_values.npy", s->dtype, 1, s_k, val);
done:
  free(ptr);
  free(col);
  free(val);
  return st;
}

/* CSR -> dense rows, streamed a few MiB at a time. */
static hs_status sparse_to_dense(hs__dsw *w, const hs__feat_src *s) {
  uint64_t shape[2] = {(uint64_t)s->n, (uint64_t)s->f};
  size_t es = hs__dtype_size(s->dtype), row = (size_t)s->f * es;
  hs__npy_out o;
  hs_status st = hs__dsw_stream(w, "feat.npy", s->dtype, 2, shape, &o);
  if (st) return st;
  size_t rows = row ? ((size_t)4 << 20) / row : 1;
  if (rows == 0) rows = 1;
  size_t bytes;
  char *buf = NULL;
  if (!hs__mul_size(rows, row, &bytes) || !(buf = malloc(bytes ? bytes : 1))) {
    hs__npy_out_discard(&o);
    return hs__fail(HS_ERR_NOMEM, "no memory for feature rows");
  }
  static const uint16_t half_one = 0x3c00u;
  static const float one = 1.0f;
  const void *unit = s->dtype == HS_DTYPE_FLOAT16 ? (const void *)&half_one : (const void *)&one;
  for (int64_t v0 = 0; v0 < s->n; v0 += (int64_t)rows) {
    int64_t v1 = v0 + (int64_t)rows < s->n ? v0 + (int64_t)rows : s->n;
    memset(buf, 0, (size_t)(v1 - v0) * row);
    for (int64_t v = v0; v < v1; v++)
      for (int64_t k = s->ptr[v]; k < s->ptr[v + 1]; k++) {
        const void *x = s->val ? (const char *)s->val + (size_t)k * es : unit;
        memcpy(buf + (size_t)(v - v0) * row + (size_t)s->col[k] * es, x, es);
      }
    if ((st = hs__npy_out_write(&o, buf, (size_t)(v1 - v0) * row))) break;
  }
  free(buf);
  if (st) {
    hs__npy_out_discard(&o);
    return st;
  }
  return hs__npy_out_close(&o);
}

/* CSR -> CSR: the same arrays (values dropped when every one is 1). */
static hs_status sparse_to_sparse(hs__dsw *w, const hs__feat_src *s) {
  int64_t nnz = s->ptr[s->n];
  bool binary = true;
  for (int64_t k = 0; s->val && k < nnz && binary; k++) binary = is_one(s->val, s->dtype, (size_t)k);
  uint64_t s_p[1] = {(uint64_t)s->n + 1}, s_k[1] = {(uint64_t)nnz};
  hs_status st;
  if ((st = write_shape(w, s->n, s->f)) ||
      (st = hs__dsw_array(w, "feat_indptr.npy", HS_DTYPE_INT64, 1, s_p, s->ptr)) ||
      (st = hs__dsw_array(w, "feat_indices.npy", HS_DTYPE_INT32, 1, s_k, s->col)))
    return st;
  if (!binary) st = hs__dsw_array(w, "feat_values.npy", s->dtype, 1, s_k, s->val);
  return st;
}

hs_status hs__feat_write(hs__dsw *w, const hs__feat_src *s, hs_feat_format fmt,
                         hs_feat_format *written) {
  if (s->n < 0 || s->f < 0 || (s->dtype != HS_DTYPE_FLOAT32 && s->dtype != HS_DTYPE_FLOAT16))
    return hs__fail(HS_ERR_INVALID_ARG, "features: %" PRId64 " x %" PRId64 " of %s", s->n, s->f,
                    hs_dtype_name(s->dtype));
  bool from_dense = s->dense != NULL;
  int64_t nnz;
  bool binary = false;
  if (from_dense) dense_counts(s, &nnz, &binary);
  else nnz = s->ptr[s->n];
  double cells = (double)s->n * (double)s->f;
  double density = cells > 0 ? (double)nnz / cells : 0.0;
  bool sparse = fmt == HS_FEAT_FORMAT_SPARSE ||
                (fmt == HS_FEAT_FORMAT_AUTO && density <= HS_FEAT_SPARSE_DENSITY);
  if (sparse && s->f > INT32_MAX)
    return hs__fail(HS_ERR_UNSUPPORTED, "sparse features: %" PRId64 " columns exceed int32 ids",
                    s->f);
  hs__log(HS_LOG_DATA, "features %" PRId64 " x %" PRId64 ": density %.4g: written %s", s->n, s->f,
          density, sparse ? "sparse" : "dense");
  if (written) *written = sparse ? HS_FEAT_FORMAT_SPARSE : HS_FEAT_FORMAT_DENSE;
  if (from_dense && !sparse) {
    uint64_t shape[2] = {(uint64_t)s->n, (uint64_t)s->f};
    return hs__dsw_array(w, "feat.npy", s->dtype, 2, shape, s->dense);
  }
  if (from_dense) return dense_to_sparse(w, s, nnz, binary);
  return sparse ? sparse_to_sparse(w, s) : sparse_to_dense(w, s);
}
