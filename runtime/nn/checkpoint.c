/* Checkpoint writer and reader (format in checkpoint.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <math.h>

#include "core/hs_afile.h"
#include "hetsage/session.h"
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

/* Record tags, with what their bytes hold (a training session writes them
 * all; a model saved alone none; files written before SMPL and GEMM were
 * added lack those two, which then read as "not recorded"). New ones are
 * added here. */
#define TAG(a, b, c, d) ((uint32_t)(a) | (uint32_t)(b) << 8 | (uint32_t)(c) << 16 | (uint32_t)(d) << 24)
enum {
  TAG_FANOUTS = TAG('F', 'A', 'N', 'O'), /* u32 n (= n_layers), i32 fanout[n] */
  TAG_BATCH = TAG('B', 'T', 'C', 'H'),   /* i32 seeds per batch */
  TAG_ORDER = TAG('O', 'R', 'D', 'R'),   /* u32 order (0 shuffle, 1 blocks), u64 rows per
                                            block, u64 memory budget (0: the plan's) */
  TAG_DATA = TAG('D', 'A', 'T', 'A'),    /* u64 vertices, edges, training seeds */
  TAG_SAMPLING = TAG('S', 'M', 'P', 'L'), /* u32 mode (hs_sampling), u32 replace (0, 1),
                                             i64 vertex budget (0: none), u32 n (= n_layers),
                                             f32 threshold[n] (0 outside threshold mode) */
  TAG_GEMM = TAG('G', 'E', 'M', 'M'),     /* u32 OpenBLAS threads (0: compute units) */
  TAG_NODE_EMBED = TAG('N', 'E', 'M', 'B'), /* i32 width D, f32 learning rate, u32 next
                                               batch number of the store: the session's
                                               node embeddings, whose store follows the
                                               parameters' CRC */
};
enum {
  SMPL_FIXED = 20,
  RUN_RECORDS_BYTES = (8 + 4 + 4 * HS_NN_MAX_LAYERS) + (8 + 4) + (8 + 20) + (8 + 24) +
                      (8 + SMPL_FIXED + 4 * HS_NN_MAX_LAYERS) + (8 + 4) + (8 + 12),
  MAX_GEMM_THREADS = 4096, /* as hs_session_config.gemm_threads */
};

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

enum { FIXED_BYTES = 144 }; /* the fixed part; the run's records follow */

/* Append a record at h + *at: tag, length, body (padded to 4). */
static void put_record(unsigned char *h, size_t *at, uint32_t tag, const unsigned char *body,
                       uint32_t len) {
  put_u32(h + *at, tag);
  put_u32(h + *at + 4, len);
  memcpy(h + *at + 8, body, len);
  size_t padded = ((size_t)len + 3) & ~(size_t)3;
  memset(h + *at + 8 + len, 0, padded - len);
  *at += 8 + padded;
}

static size_t encode_records(const hs_ckpt_run *run, unsigned char *h, size_t at) {
  if (!run || !run->set) return at;
  unsigned char b[4 + 4 * HS_NN_MAX_LAYERS];
  put_u32(b, (uint32_t)run->n_layers);
  for (int l = 0; l < run->n_layers; l++) put_u32(b + 4 + 4 * l, (uint32_t)run->fanouts[l]);
  put_record(h, &at, TAG_FANOUTS, b, 4 + 4 * (uint32_t)run->n_layers);
  put_u32(b, (uint32_t)run->batch_size);
  put_record(h, &at, TAG_BATCH, b, 4);
  put_u32(b, run->order);
  put_u64(b + 4, run->rows_per_block);
  put_u64(b + 12, run->memory_budget);
  put_record(h, &at, TAG_ORDER, b, 20);
  unsigned char d[24];
  put_u64(d, run->n_vertices);
  put_u64(d + 8, run->n_edges);
  put_u64(d + 16, run->n_train);
  put_record(h, &at, TAG_DATA, d, 24);
  if (run->sampling_set) {
    unsigned char sm[SMPL_FIXED + 4 * HS_NN_MAX_LAYERS];
    put_u32(sm, run->sampling);
    put_u32(sm + 4, run->replace ? 1u : 0u);
    put_u64(sm + 8, (uint64_t)run->vertex_budget);
    put_u32(sm + 16, (uint32_t)run->n_layers);
    for (int l = 0; l < run->n_layers; l++) put_f32(sm + SMPL_FIXED + 4 * l, run->thresholds[l]);
    put_record(h, &at, TAG_SAMPLING, sm, SMPL_FIXED + 4 * (uint32_t)run->n_layers);
  }
  if (run->gemm_set) {
    put_u32(b, run->gemm_threads);
    put_record(h, &at, TAG_GEMM, b, 4);
  }
  if (run->node_embedding > 0) {
    put_u32(b, (uint32_t)run->node_embedding);
    put_f32(b + 4, run->node_embedding_lr);
    put_u32(b + 8, run->node_embedding_tick);
    put_record(h, &at, TAG_NODE_EMBED, b, 12);
  }
  return at;
}

/* The header and its records into h (FIXED_BYTES + RUN_RECORDS_BYTES);
 * returns its length. */
static size_t encode_header(const hs_model *m, const hs_ckpt_run *run, unsigned char *h) {
  const layout *f = &layout_v2;
  memset(h, 0, FIXED_BYTES);
  size_t header = encode_records(run, h, FIXED_BYTES);
  memcpy(h, ckpt_magic, sizeof ckpt_magic);
  put_u32(h + OFF_VERSION, HS_CHECKPOINT_VERSION);
  put_u32(h + OFF_HEADER_BYTES, (uint32_t)header);
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
  return header;
}

hs_status hs__checkpoint_save(const hs_model *m, const char *path) {
  return hs__checkpoint_save_run(m, NULL, path);
}

hs_status hs__checkpoint_save_run(const hs_model *m, const hs_ckpt_run *run, const char *path) {
  return hs__checkpoint_save_tail(m, run, path, NULL, NULL);
}

hs_status hs__checkpoint_save_tail(const hs_model *m, const hs_ckpt_run *run, const char *path,
                                   hs_ckpt_tail_fn tail, void *ctx) {
  /* The temporary is one of ours (hs_afile): a killed save's is swept by
   * the next one, a save in progress holds its lock. */
  hs_afile a;
  hs_status st = hs__afile_open(&a, path);
  if (st != HS_OK) return st;
  unsigned char header[FIXED_BYTES + RUN_RECORDS_BYTES];
  size_t header_len = encode_header(m, run, header);
  size_t n = m->shape.n_params;
  hs__afile_write(&a, header, header_len);
  hs__afile_f32(&a, m->params, n);
  hs__afile_f32(&a, m->m, n);
  hs__afile_f32(&a, m->v, n);
  hs__afile_crc(&a);
  if (tail && a.st == HS_OK && (st = tail(ctx, &a)) != HS_OK) {
    hs__afile_abort(&a);
    return st;
  }
  if ((st = hs__afile_commit(&a)) != HS_OK) return st;
  hs__log(HS_LOG_TRAIN, "checkpoint %s: step %llu, %zu parameters", path,
          (unsigned long long)m->step, n);
  return HS_OK;
}

/* ---- reading ---------------------------------------------------------------- */

static hs_status read_file(const char *path, unsigned char **out, size_t *size) {
  *out = NULL;
  hs_status st;
  FILE *f = hs__fopen_regular(path, "checkpoint", &st);
  if (!f) return st;
  struct stat sb;
  if (fstat(fileno(f), &sb) != 0) {
    st = hs__fail(HS_ERR_IO, "%s: cannot stat: %s", path, strerror(errno));
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

/* A finite float within [lo, hi) (lo excluded too when lo_open). */
static bool in_range(float x, double lo, bool lo_open, double hi) {
  return isfinite(x) && (lo_open ? x > lo : x >= lo) && x < hi;
}

/* A record's body, checked against what its tag holds. */
static hs_status read_record(const char *path, size_t at, uint32_t tag, const unsigned char *b,
                             uint32_t len, int n_layers, hs_ckpt_run *run) {
  size_t body = at + 8;
#define BAD(fmt, ...) hs__fail(HS_ERR_FORMAT, "%s: byte %zu: " fmt, path, body, __VA_ARGS__)
  switch (tag) {
    case TAG_FANOUTS: {
      uint32_t n = len >= 4 ? get_u32(b) : 0;
      if (len < 4 || n != (uint32_t)n_layers || len != 4 + 4 * n)
        return BAD("fanouts record of %u bytes for %u fanouts (the model has %d layers)", len,
                   n, n_layers);
      run->n_layers = (int)n;
      for (uint32_t l = 0; l < n; l++) {
        int32_t f = (int32_t)get_u32(b + 4 + 4 * l);
        if (f != -1 && (f < 1 || f > HS_MAX_FANOUT))
          return BAD("fanout %d of layer %u (need -1 or 1..%d)", f, l, HS_MAX_FANOUT);
        run->fanouts[l] = f;
      }
      return HS_OK;
    }
    case TAG_BATCH: {
      int32_t v = len == 4 ? (int32_t)get_u32(b) : 0;
      if (v < 1 || v > HS_MAX_BATCH) return BAD("batch of %d seeds (need 1..%d)", v, HS_MAX_BATCH);
      run->batch_size = v;
      return HS_OK;
    }
    case TAG_ORDER:
      if (len != 20) return BAD("order record of %u bytes (need 20)", len);
      run->order = get_u32(b);
      run->rows_per_block = get_u64(b + 4);
      run->memory_budget = get_u64(b + 12);
      if (run->order > 1 || (run->order == 1) != (run->rows_per_block > 0) ||
          run->rows_per_block > INT32_MAX)
        return BAD("seed order %u with %llu rows per block", run->order,
                   (unsigned long long)run->rows_per_block);
      return HS_OK;
    case TAG_DATA:
      if (len != 24) return BAD("dataset record of %u bytes (need 24)", len);
      run->n_vertices = get_u64(b);
      run->n_edges = get_u64(b + 8);
      run->n_train = get_u64(b + 16);
      if (run->n_vertices < 1 || run->n_vertices > INT32_MAX || run->n_edges > INT64_MAX ||
          run->n_train < 1 || run->n_train > run->n_vertices)
        return BAD("a dataset of %llu vertices, %llu edges, %llu training seeds",
                   (unsigned long long)run->n_vertices, (unsigned long long)run->n_edges,
                   (unsigned long long)run->n_train);
      return HS_OK;
    case TAG_SAMPLING: {
      uint32_t n = len >= SMPL_FIXED ? get_u32(b + 16) : 0;
      if (len < SMPL_FIXED || n != (uint32_t)n_layers || len != SMPL_FIXED + 4 * n)
        return BAD("sampling record of %u bytes for %u thresholds (the model has %d layers)",
                   len, n, n_layers);
      uint32_t mode = get_u32(b), replace = get_u32(b + 4);
      int64_t budget = (int64_t)get_u64(b + 8);
      /* The session's own rules (hs_session_config): a mode it knows, no
       * replacement under thresholds, a budget of a batch at least (checked
       * against the batch once every record is read). */
      if (mode > HS_SAMPLING_THRESHOLD || replace > 1 ||
          (replace && mode == HS_SAMPLING_THRESHOLD) || budget < 0)
        return BAD("sampling mode %u, replace %u, vertex budget %lld (need a mode 0..%d, "
                   "replace 0 or 1 and 0 under threshold sampling, a budget >= 0)",
                   mode, replace, (long long)budget, HS_SAMPLING_THRESHOLD);
      for (uint32_t l = 0; l < n; l++) {
        float t = get_f32(b + SMPL_FIXED + 4 * l);
        if (!isfinite(t) || (mode != HS_SAMPLING_THRESHOLD && t != 0))
          return BAD("threshold %g of layer %u under sampling mode %u (need a finite number, "
                     "0 outside threshold mode)", (double)t, l, mode);
        run->thresholds[l] = t;
      }
      run->sampling = mode;
      run->replace = replace != 0;
      run->vertex_budget = budget;
      run->sampling_set = true;
      return HS_OK;
    }
    case TAG_GEMM: {
      uint32_t v = len == 4 ? get_u32(b) : UINT32_MAX;
      if (v > MAX_GEMM_THREADS)
        return BAD("GEMM record of %u bytes, %u threads (need 4 bytes, 0..%d threads)", len,
                   len == 4 ? v : 0, MAX_GEMM_THREADS);
      run->gemm_threads = v;
      run->gemm_set = true;
      return HS_OK;
    }
    case TAG_NODE_EMBED: {
      if (len != 12) return BAD("node embedding record of %u bytes (need 12)", len);
      int32_t d = (int32_t)get_u32(b);
      float lr = get_f32(b + 4);
      if (d < 1 || d > HS_CKPT_MAX_NODE_EMBED || !in_range(lr, 0, true, HS_MAX_LR))
        return BAD("node embeddings %d wide (need 1..%d) with learning rate %g", d,
                   HS_CKPT_MAX_NODE_EMBED, (double)lr);
      run->node_embedding = d;
      run->node_embedding_lr = lr;
      run->node_embedding_tick = get_u32(b + 8);
      return HS_OK;
    }
    default:
      break;
  }
#undef BAD
  if (tag & RECORD_OPTIONAL) return HS_OK;
  return hs__fail(HS_ERR_FORMAT,
                  "%s: byte %zu: record %08x is unknown to this build (written by a newer "
                  "hetsage?)", path, at, tag);
}

/* Walk the records between `from` and `to`: every tag known (its body
 * checked, once) or optional. A run is complete with the first four or
 * none; sampling and GEMM threads belong to a run (and may be absent from
 * one written before they were recorded). */
static hs_status check_records(const char *path, const unsigned char *buf, size_t from,
                               size_t to, int n_layers, hs_ckpt_run *run) {
  static const uint32_t run_tags[] = {TAG_FANOUTS, TAG_BATCH,    TAG_ORDER,
                                      TAG_DATA,    TAG_SAMPLING, TAG_GEMM};
  enum { CORE = 0xf }; /* fanouts, batch, order, dataset */
  size_t sampling_at = 0;
  bool node_embed = false;
  unsigned seen = 0;
  memset(run, 0, sizeof *run);
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
    for (unsigned k = 0; k < HS_ARRAY_LEN(run_tags); k++)
      if (tag == run_tags[k]) {
        if (seen & (1u << k))
          return hs__fail(HS_ERR_FORMAT, "%s: byte %zu: record %08x repeated", path, at, tag);
        seen |= 1u << k;
        if (tag == TAG_SAMPLING) sampling_at = at;
      }
    if (tag == TAG_NODE_EMBED) {
      if (node_embed)
        return hs__fail(HS_ERR_FORMAT, "%s: byte %zu: record %08x repeated", path, at, tag);
      node_embed = true;
    }
    hs_status st = read_record(path, at, tag, buf + at + 8, len, n_layers, run);
    if (st != HS_OK) return st;
    at += 8 + body;
  }
  if (seen && (seen & CORE) != CORE)
    return hs__fail(HS_ERR_FORMAT, "%s: the run's records are incomplete (fanouts, batch, "
                    "order and dataset go together, and sampling and GEMM threads need them)",
                    path);
  if (run->sampling_set && run->vertex_budget != 0 && run->vertex_budget < run->batch_size)
    return hs__fail(HS_ERR_FORMAT, "%s: byte %zu: vertex budget %lld below the batch of %d "
                    "seeds (a budget holds a whole batch)", path, sampling_at + 16,
                    (long long)run->vertex_budget, run->batch_size);
  run->set = seen != 0;
  if (node_embed && !run->set)
    return hs__fail(HS_ERR_FORMAT, "%s: node embeddings without the run's records", path);
  return HS_OK;
}

/* Every check that needs no model: magic, version, sizes, header
 * consistency, records, checksum. Fills cfg, the position fields and where
 * the parameters start. */
static hs_status parse(const char *path, const unsigned char *buf, size_t size, hs_model_cfg *cfg,
                       uint64_t pos[3], size_t *n_params, size_t *data_at, hs_ckpt_run *run) {
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
  uint32_t optim = get_u32(buf + f->optim), wd_mode = get_u32(buf + f->wd_mode);
  if (optim != HS_OPTIM_SGD && optim != HS_OPTIM_ADAM)
    return hs__fail(HS_ERR_FORMAT, "%s: byte %d: optimizer kind %u (need %d sgd or %d adam)",
                    path, f->optim, optim, HS_OPTIM_SGD, HS_OPTIM_ADAM);
  if (wd_mode != HS_WD_L2 && wd_mode != HS_WD_DECOUPLED)
    return hs__fail(HS_ERR_FORMAT, "%s: byte %d: weight decay mode %u (need 0 L2 or 1 "
                    "decoupled)", path, f->wd_mode, wd_mode);
  cfg->optim.kind = (hs_optim_kind)optim;
  cfg->optim.wd_mode = (hs_wd_mode)wd_mode;
  float hyper[N_HYPER];
  for (int i = 0; i < N_HYPER; i++) hyper[i] = get_f32(buf + f->hyper + 4 * i);
  /* lr, weight decay, beta1, beta2, eps, momentum, dropout. */
  static const struct {
    const char *name;
    double lo;
    bool lo_open;
    double hi;
  } hyper_range[N_HYPER] = {{"learning rate", 0, true, HS_MAX_LR}, {"weight decay", 0, false, 1},
                            {"beta1", 0, false, 1},                {"beta2", 0, false, 1},
                            {"eps", 0, true, 1},                   {"momentum", 0, false, 1},
                            {"dropout", 0, false, 1}};
  for (int i = 0; i < N_HYPER; i++)
    if (!in_range(hyper[i], hyper_range[i].lo, hyper_range[i].lo_open, hyper_range[i].hi))
      return hs__fail(HS_ERR_FORMAT, "%s: byte %d: %s %g (need a finite number in %c%g, %g))",
                      path, f->hyper + 4 * i, hyper_range[i].name, (double)hyper[i],
                      hyper_range[i].lo_open ? '(' : '[', hyper_range[i].lo, hyper_range[i].hi);
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
  /* step, epoch, position (batch within the epoch) */
  if (pos[1] > HS_CKPT_MAX_EPOCH)
    return hs__fail(HS_ERR_FORMAT, "%s: byte %d: epoch %llu (at most %u)", path, f->u64 + 16,
                    (unsigned long long)pos[1], HS_CKPT_MAX_EPOCH);
  if (pos[2] >= HS_CKPT_MAX_BATCHES)
    return hs__fail(HS_ERR_FORMAT, "%s: byte %d: batch %llu of an epoch (below 2^31)", path,
                    f->u64 + 24, (unsigned long long)pos[2]);
  if (pos[0] > (pos[1] + 1) * HS_CKPT_MAX_BATCHES)
    return hs__fail(HS_ERR_FORMAT, "%s: byte %d: step %llu after %llu epochs (at most 2^31 an "
                    "epoch)", path, f->u64 + 8, (unsigned long long)pos[0],
                    (unsigned long long)pos[1]);

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
  uint32_t stored = get_u32(buf + want - 4);
  uint32_t computed = (uint32_t)crc32_z(crc32(0L, Z_NULL, 0), buf, want - 4);
  if (stored != computed)
    return hs__fail(HS_ERR_CHECKSUM, "%s: checksum mismatch: stored %08x, computed %08x", path,
                    stored, computed);
  hs_status st = check_records(path, buf, (size_t)f->records, header, cfg->n_layers, run);
  if (st != HS_OK) return st;
  /* Only the node embeddings' store may follow the parameters (the
   * store's reader checks it); it must then be there. */
  if (size > want && run->node_embedding <= 0)
    return hs__fail(HS_ERR_FORMAT, "%s: %zu bytes after the end of the checkpoint", path,
                    size - want);
  if (run->node_embedding > 0 && size == want)
    return hs__fail(HS_ERR_FORMAT, "%s: truncated: the node embeddings' store that the header "
                    "announces is missing after byte %zu", path, want);
  run->tail_at = run->node_embedding > 0 ? (uint64_t)want : 0;
  if (run->set) {
    /* One optimizer step per batch: the position must add up. */
    uint64_t batches = (run->n_train + (uint64_t)run->batch_size - 1) / (uint64_t)run->batch_size;
    if (pos[2] > batches || pos[0] != pos[1] * batches + pos[2])
      return hs__fail(HS_ERR_FORMAT, "%s: byte %d: step %llu, epoch %llu and batch %llu disagree "
                      "with %llu batches an epoch (%llu seeds in batches of %d)",
                      path, f->u64 + 8, (unsigned long long)pos[0], (unsigned long long)pos[1],
                      (unsigned long long)pos[2], (unsigned long long)batches,
                      (unsigned long long)run->n_train, run->batch_size);
  }
  *n_params = (size_t)n;
  *data_at = header;
  return HS_OK;
}

hs_status hs__checkpoint_read_run(const char *path, hs_model_cfg *cfg, hs_ckpt_run *run,
                                  uint64_t pos[3]) {
  unsigned char *buf;
  size_t size, n, at;
  hs_status st = read_file(path, &buf, &size);
  if (st != HS_OK) return st;
  st = parse(path, buf, size, cfg, pos, &n, &at, run);
  free(buf);
  return st;
}

hs_status hs__checkpoint_read_cfg(const char *path, hs_model_cfg *cfg) {
  hs_ckpt_run run;
  uint64_t pos[3];
  return hs__checkpoint_read_run(path, cfg, &run, pos);
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
  hs_ckpt_run run;
  hs_status st = read_file(path, &buf, &size);
  if (st != HS_OK) return st;
  st = parse(path, buf, size, &cfg, pos, &n, &at, &run);
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
