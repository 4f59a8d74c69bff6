/* Checkpoint writer and reader (format in checkpoint.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "nn/checkpoint.h"
#include "nn/model_ops.h"

static const char ckpt_magic[8] = {'H', 'S', 'C', 'K', 'P', 'T', '1', '\n'};

/* The fixed part of the header, by version (see checkpoint.h). */
typedef struct layout {
  int kind, heads, layers, dims, optim, wd_mode, hyper, u64, records;
} layout;

static const layout layout_v2 = {.kind = 16, .heads = 20, .layers = 24, .dims = 28, .optim = 64,
                                 .wd_mode = 68, .hyper = 72, .u64 = 104, .records = 144};
/* Version 1: GraphSAGE only, no kind, heads or records. */
static const layout layout_v1 = {.kind = -1, .heads = -1, .layers = 12, .dims = 16, .optim = 52,
                                 .wd_mode = 56, .hyper = 60, .u64 = 88, .records = 128};

enum {
  OFF_VERSION = 8,
  OFF_HEADER_BYTES = 12,
  N_HYPER = 7,
};

/* Records a reader may skip carry this bit in their tag. */
#define RECORD_OPTIONAL 0x80000000u

/* Record tags (none written yet: the fixed part holds every field). New
 * ones are added here, with what their bytes hold. */

/* ---- little-endian encoding ------------------------------------------------ */

static void put_u32(unsigned char *p, uint32_t v) {
  for (int i = 0; i < 4; i++) p[i] = (unsigned char)(v >> (8 * i));
}
static void put_u64(unsigned char *p, uint64_t v) {
  for (int i = 0; i < 8; i++) p[i] = (unsigned char)(v >> (8 * i));
}
static void put_f32(unsigned char *p, float f) {
  uint32_t v;
  memcpy(&v, &f, 4);
  put_u32(p, v);
}
static uint32_t get_u32(const unsigned char *p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; i++) v |= (uint32_t)p[i] << (8 * i);
  return v;
}
static uint64_t get_u64(const unsigned char *p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; i++) v |= (uint64_t)p[i] << (8 * i);
  return v;
}
static float get_f32(const unsigned char *p) {
  uint32_t v = get_u32(p);
  float f;
  memcpy(&f, &v, 4);
  return f;
}

/* ---- writing ------------------------------------------------------------------ */

typedef struct writer {
  int fd;
  uLong crc;
  const char *path;
} writer;

static hs_status write_bytes(writer *w, const unsigned char *p, size_t n) {
  w->crc = crc32_z(w->crc, p, n);
  while (n > 0) {
    ssize_t k = write(w->fd, p, n);
    if (k < 0 && errno == EINTR) continue;
    if (k < 0) return hs__fail(HS_ERR_IO, "%s: write failed: %s", w->path, strerror(errno));
    p += k;
    n -= (size_t)k;
  }
  return HS_OK;
}

static hs_status write_floats(writer *w, const float *x, size_t n) {
  unsigned char buf[16384];
  while (n > 0) {
    size_t k = n < sizeof buf / 4 ? n : sizeof buf / 4;
    for (size_t i = 0; i < k; i++) put_f32(buf + 4 * i, x[i]);
    hs_status st = write_bytes(w, buf, 4 * k);
    if (st != HS_OK) return st;
    x += k;
    n -= k;
  }
  return HS_OK;
}

enum { HEADER_BYTES = 144 }; /* what this build writes: the fixed part, no records */

static void encode_header(const hs_model *m, unsigned char *h) {
  const layout *f = &layout_v2;
  memset(h, 0, HEADER_BYTES);
  memcpy(h, ckpt_magic, sizeof ckpt_magic);
  put_u32(h + OFF_VERSION, HS_CHECKPOINT_VERSION);
  put_u32(h + OFF_HEADER_BYTES, HEADER_BYTES);
  put_u32(h + f->kind, (uint32_t)m->shape.kind);
  put_u32(h + f->heads, (uint32_t)m->shape.heads);
  put_u32(h + f->layers, (uint32_t)m->shape.n_layers);
  for (int l = 0; l <= m->shape.n_layers; l++)
    put_u32(h + f->dims + 4 * l, (uint32_t)m->shape.dims[l]);
  put_u32(h + f->optim, (uint32_t)m->cfg.optim.kind);
  put_u32(h + f->wd_mode, (uint32_t)m->cfg.optim.wd_mode);
  const hs_optim_cfg *o = &m->cfg.optim;
  float hyper[N_HYPER] = {o->lr, o->weight_decay, o->beta1, o->beta2, o->eps, o->momentum,
                          m->cfg.dropout};
  for (int i = 0; i < N_HYPER; i++) put_f32(h + f->hyper + 4 * i, hyper[i]);
  uint64_t u[5] = {m->cfg.seed, m->step, m->epoch, m->rng_counter, m->shape.n_params};
  for (int i = 0; i < 5; i++) put_u64(h + f->u64 + 8 * i, u[i]);
}

hs_status hs__checkpoint_save(const hs_model *m, const char *path) {
  hs_status st = HS_OK;
  size_t len = strlen(path);
  char *tmp = malloc(len + 16);
  if (!tmp) return hs__fail(HS_ERR_NOMEM, "%s: temporary name", path);
  snprintf(tmp, len + 16, "%s.tmp.XXXXXX", path);
  writer w = {.fd = mkstemp(tmp), .crc = crc32(0L, Z_NULL, 0), .path = path};
  if (w.fd < 0) {
    st = hs__fail(HS_ERR_IO, "%s: cannot create a temporary file beside it: %s", path,
                  strerror(errno));
    free(tmp);
    return st;
  }
  unsigned char header[HEADER_BYTES], tail[4];
  encode_header(m, header);
  size_t n = m->shape.n_params;
  if ((st = write_bytes(&w, header, sizeof header)) != HS_OK) goto fail;
  if ((st = write_floats(&w, m->params, n)) != HS_OK) goto fail;
  if ((st = write_floats(&w, m->m, n)) != HS_OK) goto fail;
  if ((st = write_floats(&w, m->v, n)) != HS_OK) goto fail;
  put_u32(tail, (uint32_t)w.crc);
  if ((st = write_bytes(&w, tail, sizeof tail)) != HS_OK) goto fail;
  if (fsync(w.fd) != 0) {
    st = hs__fail(HS_ERR_IO, "%s: fsync failed: %s", path, strerror(errno));
    goto fail;
  }
  int fd = w.fd;
  w.fd = -1;
  if (close(fd) != 0) {
    st = hs__fail(HS_ERR_IO, "%s: close failed: %s", path, strerror(errno));
    goto fail;
  }
  if (rename(tmp, path) != 0) {
    st = hs__fail(HS_ERR_IO, "%s: rename from %s failed: %s", path, tmp, strerror(errno));
    goto fail;
  }
  /* Make the rename itself durable. */
  hs__sync_parent_dir(path);
  free(tmp);
  hs__log(HS_LOG_TRAIN, "checkpoint %s: step %llu, %zu parameters", path,
          (unsigned long long)m->step, n);
  return HS_OK;
fail:
  if (w.fd >= 0) close(w.fd);
  unlink(tmp);
  free(tmp);
  return st;
}

/* ---- reading ---------------------------------------------------------------- */

static hs_status read_file(const char *path, unsigned char **out, size_t *size) {
  *out = NULL;
  FILE *f = fopen(path, "rb");
  if (!f) return hs__fail(HS_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
  hs_status st = HS_OK;
  struct stat sb;
  if (fstat(fileno(f), &sb) != 0 || !S_ISREG(sb.st_mode)) {
    st = hs__fail(HS_ERR_IO, "%s: not a regular file", path);
    goto fail;
  }
  *size = (size_t)sb.st_size;
  *out = malloc(*size ? *size : 1);
  if (!*out) {
    st = hs__fail(HS_ERR_NOMEM, "%s: %zu bytes", path, *size);
    goto fail;
  }
  if (fread(*out, 1, *size, f) != *size) {
    st = hs__fail(HS_ERR_IO, "%s: read failed", path);
    goto fail;
  }
  fclose(f);
  return HS_OK;
fail:
  fclose(f);
  free(*out);
  *out = NULL;
  return st;
}

static const char *optim_name(uint32_t kind) {
  return kind == HS_OPTIM_ADAM ? "adam" : kind == HS_OPTIM_SGD ? "sgd" : "unknown";
}

/* Walk the records between `from` and `to`: every tag must be known or
 * optional (none are known yet). */
static hs_status check_records(const char *path, const unsigned char *buf, size_t from,
                               size_t to) {
  size_t at = from;
  while (at < to) {
    if (to - at < 8)
      return hs__fail(HS_ERR_FORMAT, "%s: byte %zu: a record header runs past the header's end",
                      path, at);
    uint32_t tag = get_u32(buf + at), len = get_u32(buf + at + 4);
    size_t body = ((size_t)len + 3) & ~(size_t)3;
    if (body > to - at - 8)
      return hs__fail(HS_ERR_FORMAT, "%s: byte %zu: record %08x of %u bytes runs past byte %zu",
                      path, at, tag, len, to);
    if (!(tag & RECORD_OPTIONAL))
      return hs__fail(HS_ERR_FORMAT,
                      "%s: byte %zu: record %08x is unknown to this build (written by a newer "
                      "hetsage?)",
                      path, at, tag);
    at += 8 + body;
  }
  return HS_OK;
}

/* Every check that needs no model: magic, version, sizes, header
 * consistency, records, checksum. Fills cfg, the position fields and where
 * the parameters start. */
static hs_status parse(const char *path, const unsigned char *buf, size_t size, hs_model_cfg *cfg,
                       uint64_t pos[3], size_t *n_params, size_t *data_at) {
  size_t cmp = size < sizeof ckpt_magic ? size : sizeof ckpt_magic;
  if (memcmp(buf, ckpt_magic, cmp) != 0)
    return hs__fail(HS_ERR_FORMAT, "%s: not a hetsage checkpoint (bad magic)", path);
  if (size < OFF_VERSION + 4)
    return hs__fail(HS_ERR_FORMAT, "%s: truncated: %zu bytes, shorter than the header", path, size);
  uint32_t version = get_u32(buf + OFF_VERSION);
  if (version != HS_CHECKPOINT_VERSION && version != 1)
    return hs__fail(HS_ERR_UNSUPPORTED,
                    "%s: checkpoint version %u, this build reads versions 1 and %u", path,
                    version, HS_CHECKPOINT_VERSION);
  const layout *f = version == 1 ? &layout_v1 : &layout_v2;
  if (size < (size_t)f->records + 4)
    return hs__fail(HS_ERR_FORMAT, "%s: truncated: %zu bytes, shorter than the header", path, size);
  size_t header = (size_t)f->records;
  if (version > 1) {
    uint32_t h = get_u32(buf + OFF_HEADER_BYTES);
    if (h < (uint32_t)f->records || h % 4 != 0 || h > size - 4)
      return hs__fail(HS_ERR_FORMAT, "%s: byte %d: header of %u bytes (need %d or more, a "
                      "multiple of 4, within the file's %zu)",
                      path, OFF_HEADER_BYTES, h, f->records, size);
    header = h;
  }

  memset(cfg, 0, sizeof *cfg);
  cfg->kind = HS_NN_SAGE;
  cfg->heads = 1;
  if (version > 1) {
    uint32_t kind = get_u32(buf + f->kind), heads = get_u32(buf + f->heads);
    if (!hs__model_ops((int)kind))
      return hs__fail(HS_ERR_FORMAT, "%s: byte %d: model kind %u (this build knows 0 sage, 1 "
                      "gcn, 2 gat)",
                      path, f->kind, kind);
    if (heads < 1 || heads > HS_NN_MAX_HEADS || (kind != HS_NN_GAT && heads != 1))
      return hs__fail(HS_ERR_FORMAT, "%s: byte %d: %u heads for a %s model", path, f->heads,
                      heads, hs__nn_kind_name((int)kind));
    cfg->kind = (hs_nn_kind)kind;
    cfg->heads = (int)heads;
  }
  uint32_t n_layers = get_u32(buf + f->layers);
  if (n_layers < 1 || n_layers > HS_NN_MAX_LAYERS)
    return hs__fail(HS_ERR_FORMAT, "%s: byte %d: %u layers (need 1..%d)", path, f->layers,
                    n_layers, HS_NN_MAX_LAYERS);
  uint32_t dims[HS_NN_MAX_LAYERS + 1];
  for (uint32_t l = 0; l <= n_layers; l++) {
    dims[l] = get_u32(buf + f->dims + 4 * l);
    if (dims[l] < 1 || dims[l] > INT32_MAX || (l > 1 && l < n_layers && dims[l] != dims[1]))
      return hs__fail(HS_ERR_FORMAT, "%s: byte %u: bad layer width %u", path,
                      (unsigned)f->dims + 4 * l, dims[l]);
  }
  cfg->n_layers = (int)n_layers;
  cfg->in_dim = (int)dims[0];
  cfg->hidden = n_layers > 1 ? (int)dims[1] : 0;
  cfg->n_classes = (int)dims[n_layers];
  cfg->optim.kind = (hs_optim_kind)get_u32(buf + f->optim);
  cfg->optim.wd_mode = (hs_wd_mode)get_u32(buf + f->wd_mode);
  float hyper[N_HYPER];
  for (int i = 0; i < N_HYPER; i++) hyper[i] = get_f32(buf + f->hyper + 4 * i);
  cfg->optim.lr = hyper[0];
  cfg->optim.weight_decay = hyper[1];
  cfg->optim.beta1 = hyper[2];
  cfg->optim.beta2 = hyper[3];
  cfg->optim.eps = hyper[4];
  cfg->optim.momentum = hyper[5];
  cfg->dropout = hyper[6];
  cfg->seed = get_u64(buf + f->u64);
  for (int i = 0; i < 3; i++) pos[i] = get_u64(buf + f->u64 + 8 * (1 + i));
  uint64_t n = get_u64(buf + f->u64 + 32);

  hs_model_shape shape;
  if (hs__model_shape(cfg, &shape) != HS_OK)
    return hs__fail_context(HS_ERR_FORMAT, "%s: header", path);
  if (n != shape.n_params)
    return hs__fail(HS_ERR_FORMAT, "%s: byte %d: %llu parameters, the layer widths need %zu", path,
                    f->u64 + 32, (unsigned long long)n, shape.n_params);
  size_t want = header + 3 * 4 * (size_t)n + 4; /* n is bounded by the widths */
  if (size < want)
    return hs__fail(HS_ERR_FORMAT, "%s: truncated: %zu bytes, the header says %zu", path, size,
                    want);
  if (size > want)
    return hs__fail(HS_ERR_FORMAT, "%s: %zu bytes after the end of the checkpoint", path,
                    size - want);
  uint32_t stored = get_u32(buf + want - 4);
  uint32_t computed = (uint32_t)crc32_z(crc32(0L, Z_NULL, 0), buf, want - 4);
  if (stored != computed)
    return hs__fail(HS_ERR_CHECKSUM, "%s: checksum mismatch: stored %08x, computed %08x", path,
                    stored, computed);
  hs_status st = check_records(path, buf, (size_t)f->records, header);
  if (st != HS_OK) return st;
  *n_params = (size_t)n;
  *data_at = header;
  return HS_OK;
}

hs_status hs__checkpoint_read_cfg(const char *path, hs_model_cfg *cfg) {
  unsigned char *buf;
  size_t size, n, at;
  uint64_t pos[3];
  hs_status st = read_file(path, &buf, &size);
  if (st != HS_OK) return st;
  st = parse(path, buf, size, cfg, pos, &n, &at);
  free(buf);
  return st;
}

static void dims_text(const int32_t *dims, int n_layers, char *out, size_t len) {
  size_t at = 0;
  out[0] = '\0';
  for (int l = 0; l <= n_layers && at < len; l++)
    at += (size_t)snprintf(out + at, len - at, l ? "-%d" : "%d", dims[l]);
}

/* "gat (4 heads)", "sage". */
static void model_text(int kind, int heads, char *out, size_t len) {
  if (kind == HS_NN_GAT)
    snprintf(out, len, "%s (%d head%s)", hs__nn_kind_name(kind), heads, heads == 1 ? "" : "s");
  else
    snprintf(out, len, "%s", hs__nn_kind_name(kind));
}

hs_status hs__checkpoint_load(const char *path, hs_model *m) {
  unsigned char *buf;
  size_t size, n, at;
  uint64_t pos[3];
  hs_model_cfg cfg;
  hs_status st = read_file(path, &buf, &size);
  if (st != HS_OK) return st;
  st = parse(path, buf, size, &cfg, pos, &n, &at);
  if (st != HS_OK) goto fail;
  hs_model_shape shape;
  hs__model_shape(&cfg, &shape); /* cannot fail: parse checked it */
  if (shape.kind != m->shape.kind || shape.heads != m->shape.heads) {
    char a[64], b[64];
    model_text(shape.kind, shape.heads, a, sizeof a);
    model_text(m->shape.kind, m->shape.heads, b, sizeof b);
    st = hs__fail(HS_ERR_INVALID_ARG,
                  "%s: model mismatch: the checkpoint holds a %s model, this one is %s", path, a,
                  b);
    goto fail;
  }
  bool same = shape.n_layers == m->shape.n_layers;
  for (int l = 0; same && l <= shape.n_layers; l++) same = shape.dims[l] == m->shape.dims[l];
  if (!same) {
    char a[128], b[128];
    dims_text(shape.dims, shape.n_layers, a, sizeof a);
    dims_text(m->shape.dims, m->shape.n_layers, b, sizeof b);
    st = hs__fail(HS_ERR_INVALID_ARG, "%s: shape mismatch: the checkpoint has layer widths %s, the model %s",
                  path, a, b);
    goto fail;
  }
  if (cfg.optim.kind != m->cfg.optim.kind) {
    st = hs__fail(HS_ERR_INVALID_ARG, "%s: optimizer mismatch: the checkpoint holds %s state, the model uses %s",
                  path, optim_name(cfg.optim.kind), optim_name(m->cfg.optim.kind));
    goto fail;
  }
  const unsigned char *p = buf + at;
  float *dst[3] = {m->params, m->m, m->v};
  for (int a = 0; a < 3; a++)
    for (size_t i = 0; i < n; i++, p += 4) dst[a][i] = get_f32(p);
  m->step = pos[0];
  m->epoch = pos[1];
  m->rng_counter = pos[2];
  m->cfg.seed = cfg.seed;
fail:
  free(buf);
  return st;
}
