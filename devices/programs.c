/* The program registry (hs_programs.h): the table of programs, where a
 * program comes from on a device, and bundles of prebuilt binaries.
 *
 * Bundle layout (all integers little-endian as the host writes them; a
 * bundle is made and read on hosts of one kind, like the binaries in it):
 *   magic "HSKBUN01"
 *   u32 header length, header text ("hetsage <version>\ndevice ...\n")
 *   u32 program count
 *   per program: u32 name length, name, u32 options length, options,
 *                u64 binary length, binary
 *   u32 CRC-32 of everything before it */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "hs_config.h"
#include "hs_programs.h"

#define NUL_LIST(...) ((const char *const[]){__VA_ARGS__, NULL})

/* What every model's training program starts with (cl_kernels/: block
 * transposes, bias/activation/loss, optimizers); a model's own sources and
 * kernels follow (runtime/nn/model_ops.h). */
#define TRAIN_SOURCES \
  "hs_common.h", "hs_philox.h", "hs_train.h", "train_block.cl", "train_elem.cl", "train_optim.cl"
#define TRAIN_KERNELS                                                                      \
  "hs_tr_count", "hs_scan_sums", "hs_scan_offsets", "hs_scan_apply", "hs_tr_fill",         \
      "hs_tr_fill_eid", "hs_edge_dst", "hs_tr_sort", "hs_bias_act_fwd", "hs_act_bwd",      \
      "hs_colsum_part", "hs_colsum_final", "hs_softmax_ce", "hs_loss_reduce", "hs_adam", \
      "hs_sgd"

static const hs__program_def programs[HS_PROG_COUNT_] = {
    [HS_PROG_SAMPLE] =
        {.name = "sample",
         .sources = NUL_LIST("hs_common.h", "hs_philox.h", "hs_sample_rng.h",
                             "hs_sample_meta.h", "sample.cl", "scan.cl", "reindex.cl"),
         .kernels = NUL_LIST("hs_sample_count", "hs_sample_rows", "hs_sample_single",
                             "hs_scan_partials", "hs_scan_spine", "hs_scan_apply",
                             "hs_reindex_seed", "hs_reindex_claim", "hs_reindex_mark",
                             "hs_reindex_assign", "hs_reindex_emit", "hs_reindex_forget",
                             "hs_compact_cols", "hs_compact_rows", "hs_reindex_reset",
                             "hs_reindex_single"),
         .options = "",
         .cpu_options = "",
         .speedups = "",
         /* software prefetches (hs_common.h) */
         .cpu_speedups = "-DHS_CPU_DEVICE",
         .roles = HS_PROG_ROLE_SAMPLER | HS_PROG_ROLE_BRINGUP,
         .what = "neighbour sampling, prefix sums and reindexing"},
    [HS_PROG_GATHER] =
        {.name = "gather",
         .sources = NUL_LIST("hs_common.h", "gather.cl"),
         .kernels = NUL_LIST("hs_gather_rows_u128", "hs_gather_rows_u32", "hs_gather_rows_u8"),
         .options = "",
         .cpu_options = "",
         .roles = HS_PROG_ROLE_TRAINER | HS_PROG_ROLE_BRINGUP,
         .what = "feature rows gathered from a resident table (the trainer cache)"},
    [HS_PROG_CACHE] =
        {.name = "cache",
         .sources = NUL_LIST("hs_common.h", "cache.cl"),
         .kernels = NUL_LIST("hs_scatter_rows_u32", "hs_scatter_rows_u8", "hs_sparse_rows"),
         .options = "",
         .cpu_options = "",
         .roles = HS_PROG_ROLE_TRAINER,
         .what = "the trainer cache's row scatter"},
    [HS_PROG_TRAIN_SAGE] =
        {.name = "train_sage",
         .sources = NUL_LIST(TRAIN_SOURCES, "train_sage.cl"),
         .kernels = NUL_LIST(TRAIN_KERNELS, "hs_agg_fwd", "hs_agg_bwd", "hs_sage_combine",
                             "hs_sage_split_bwd"),
         .options = "",
         .cpu_options = "",
         .roles = HS_PROG_ROLE_TRAINER | HS_PROG_ROLE_BRINGUP,
         .model = "sage",
         .what = "GraphSAGE-mean training: aggregation, activations, loss, optimizers"},
    [HS_PROG_TRAIN_GCN] =
        {.name = "train_gcn",
         .sources = NUL_LIST(TRAIN_SOURCES, "train_gcn.cl"),
         .kernels = NUL_LIST(TRAIN_KERNELS, "hs_gcn_norm", "hs_gcn_agg_fwd", "hs_gcn_agg_bwd"),
         .options = "",
         .cpu_options = "",
         .roles = HS_PROG_ROLE_TRAINER | HS_PROG_ROLE_BRINGUP,
         .model = "gcn",
         .what = "GCN training: normalised aggregation with self loops, activations, loss, "
                 "optimizers"},
    [HS_PROG_TRAIN_GAT] =
        {.name = "train_gat",
         .sources = NUL_LIST(TRAIN_SOURCES, "train_gat.cl"),
         .kernels = NUL_LIST(TRAIN_KERNELS, "hs_gat_scores", "hs_gat_softmax", "hs_gat_agg_fwd",
                             "hs_gat_head_mean", "hs_gat_head_mean_bwd", "hs_gat_bwd_score",
                             "hs_gat_bwd_del", "hs_gat_bwd_y", "hs_gat_att_part"),
         .options = "",
         .cpu_options = "",
         .roles = HS_PROG_ROLE_TRAINER | HS_PROG_ROLE_BRINGUP,
         .model = "gat",
         .what = "GAT training: attention scores, edge softmax, weighted aggregation, "
                 "activations, loss, optimizers"},
    [HS_PROG_TRAIN_SPARSE] =
        {.name = "train_sparse",
         .sources = NUL_LIST("hs_common.h", "hs_sparse.h", "train_sparse.cl"),
         .kernels = NUL_LIST("hs_sp_mm", "hs_sp_fwd_mf", "hs_sp_fwd_af", "hs_sp_gsum",
                             "hs_sp_entry_rows", "hs_sp_tr_fill", "hs_sp_wgrad",
                             "hs_sp_wgrad_cols"),
         .options = "",
         /* a chunk of outputs per work-item (hs_sparse.h), prefetches */
         .cpu_options = "-DHS_CPU_DEVICE",
         .roles = HS_PROG_ROLE_TRAINER | HS_PROG_ROLE_BRINGUP,
         .what = "the first layer over sparse input features: sparse x dense products"},
    [HS_PROG_GEMM] =
        {.name = "gemm",
         .sources = NUL_LIST("gemm.cl"),
         .kernels = NUL_LIST("hs_gemm_tiled"),
         .options = "",
         .cpu_options = "",
         .speedups = "-cl-mad-enable",
         .cpu_speedups = "",
         .roles = HS_PROG_ROLE_TRAINER | HS_PROG_ROLE_BRINGUP,
         .what = "the built-in GEMM provider (where neither CBLAS nor CLBlast serves)"},
    [HS_PROG_PROBE] =
        {.name = "probe",
         .sources = NUL_LIST("probe.cl"),
         .kernels = NUL_LIST("hs_probe_random_read", "hs_probe_copy"),
         .options = "",
         .cpu_options = "",
         .roles = HS_PROG_ROLE_BRINGUP,
         .what = "random-read and copy probes: the limits figures are divided by"},
    [HS_PROG_SELFTEST] =
        {.name = "selftest",
         .sources = NUL_LIST("hs_common.h", "selftest.cl"),
         .kernels = NUL_LIST("hs_selftest_axpy", "hs_selftest_fill_u32"),
         .options = "",
         .cpu_options = "",
         .roles = HS_PROG_ROLE_BRINGUP,
         .what = "bring-up's self-test and launch latency"},
    [HS_PROG_TRAIN_CTR] =
        {.name = "train_ctr",
         .sources = NUL_LIST(TRAIN_SOURCES, "ctr.cl"),
         .kernels = NUL_LIST(TRAIN_KERNELS, "hs_ctr_head", "hs_ctr_loss", "hs_ctr_loss_reduce",
                             "hs_ctr_sigmoid", "hs_ctr_head_prep", "hs_ctr_deep_in",
                             "hs_ctr_lr_bwd", "hs_ctr_fm_rowgrad", "hs_ctr_interact",
                             "hs_ctr_interact_bwd", "hs_ctr_segment_sum",
                             "hs_ctr_fm_rowgrad_fields", "hs_ctr_relu_bwd_colsum_part"),
         .options = "",
         .cpu_options = "",
         .roles = HS_PROG_ROLE_TRAINER | HS_PROG_ROLE_BRINGUP,
         .model = "ctr",
         .what = "CTR training (LR, DeepFM, DLRM): heads, interactions, per-row gradient sums"},
};

const hs__program_def *hs__program_def_of(hs_prog id) {
  return (unsigned)id < HS_PROG_COUNT_ ? &programs[id] : NULL;
}

int hs__program_find(const char *name) {
  for (int i = 0; name && i < HS_PROG_COUNT_; i++)
    if (strcmp(programs[i].name, name) == 0) return i;
  return -1;
}

bool hs__program_needed(hs_prog id, unsigned roles, const char *model) {
  const hs__program_def *d = hs__program_def_of(id);
  if (!d || !(d->roles & roles)) return false;
  /* A model's training program is needed where that model trains; bring-up
   * checks every model's kernels. */
  if (d->model && !(roles & HS_PROG_ROLE_BRINGUP))
    return strcmp(d->model, model ? model : "sage") == 0;
  return true;
}

/* `parts` joined by single spaces, empty ones left out. */
static void join(const char *const *parts, int n, char *buf, size_t len) {
  size_t at = 0;
  buf[0] = '\0';
  for (int i = 0; i < n; i++)
    if (parts[i] && *parts[i] && at < len)
      at += (size_t)snprintf(buf + at, len - at, "%s%s", at ? " " : "", parts[i]);
}

static void base_options(const hs__program_def *d, const hs_device_info *info, char *buf,
                         size_t len) {
  const char *parts[] = {d->options, info->type == HS_DEVICE_CPU ? d->cpu_options : ""};
  join(parts, 2, buf, len);
}

static void speedup_options(const hs__program_def *d, const hs_device_info *info, char *buf,
                            size_t len) {
  const char *parts[] = {d->speedups, info->type == HS_DEVICE_CPU ? d->cpu_speedups : ""};
  join(parts, 2, buf, len);
}

void hs__program_options(hs_prog id, const hs_device_info *info, char *buf, size_t len) {
  const hs__program_def *d = hs__program_def_of(id);
  char base[256], fast[256];
  base_options(d, info, base, sizeof base);
  speedup_options(d, info, fast, sizeof fast);
  const char *parts[] = {base, fast};
  join(parts, 2, buf, len);
}

static int count(const char *const *list) {
  int n = 0;
  while (list[n]) n++;
  return n;
}

hs_status hs__program_source(hs_prog id, char **text, size_t *len) {
  const hs__program_def *d = hs__program_def_of(id);
  if (!d) return hs__fail(HS_ERR_INVALID_ARG, "no program %d", (int)id);
  return hs__sources_assemble(d->sources, count(d->sources), text, len);
}

bool hs__dev_compiles(const hs_dev *dev) {
  return dev->info.compiler_available && !(dev->progs && dev->progs->no_compiler);
}

/* ---- bundles ------------------------------------------------------------ */

#define BUNDLE_MAGIC "HSKBUN01"

typedef struct bundle_entry {
  const char *name, *options;
  size_t name_len, options_len;
  const unsigned char *bin;
  size_t bin_len;
} bundle_entry;

typedef struct reader {
  const unsigned char *p;
  size_t len, off;
} reader;

static bool take(reader *r, size_t n, const unsigned char **at) {
  if (n > r->len - r->off) return false;
  *at = r->p + r->off;
  r->off += n;
  return true;
}

static bool take_u32(reader *r, uint32_t *v) {
  const unsigned char *at;
  if (!take(r, 4, &at)) return false;
  memcpy(v, at, 4);
  return true;
}

static bool take_u64(reader *r, uint64_t *v) {
  const unsigned char *at;
  if (!take(r, 8, &at)) return false;
  memcpy(v, at, 8);
  return true;
}

/* Check a bundle read into memory and find program `name` in it (*found
 * NULL-safe: left zeroed when absent). */
static hs_status bundle_find(const char *path, const unsigned char *data, size_t len,
                             const char *name, bundle_entry *found, bool *has) {
  *has = false;
  if (len < 8 || memcmp(data, BUNDLE_MAGIC, 8) != 0)
    return hs__fail(HS_ERR_FORMAT,
                    "%s is not a hetsage kernel bundle (no %s header): a single program's "
                    "binary is named as [binaries] <device>.<program>",
                    path, BUNDLE_MAGIC);
  if (len < 8 + 4 + 4 + 4)
    return hs__fail(HS_ERR_FORMAT, "kernel bundle %s is truncated (%zu bytes)", path, len);
  uint32_t stored;
  memcpy(&stored, data + len - 4, 4);
  if (stored != (uint32_t)crc32_z(0, data, len - 4))
    return hs__fail(HS_ERR_CHECKSUM, "kernel bundle %s is corrupt (checksum mismatch)", path);
  reader r = {.p = data, .len = len - 4, .off = 8};
  uint32_t hl, n;
  const unsigned char *at;
  if (!take_u32(&r, &hl) || !take(&r, hl, &at) || !take_u32(&r, &n)) goto bad;
  for (uint32_t i = 0; i < n; i++) {
    bundle_entry e;
    uint32_t nl, ol;
    uint64_t bl;
    const unsigned char *np, *op, *bp;
    if (!take_u32(&r, &nl) || !take(&r, nl, &np) || !take_u32(&r, &ol) || !take(&r, ol, &op) ||
        !take_u64(&r, &bl) || bl == 0 || bl > r.len - r.off || !take(&r, (size_t)bl, &bp))
      goto bad;
    e = (bundle_entry){(const char *)np, (const char *)op, nl, ol, bp, (size_t)bl};
    if (strlen(name) == nl && memcmp(np, name, nl) == 0) {
      if (found) *found = e;
      *has = true;
    }
  }
  if (r.off != r.len) goto bad;
  return HS_OK;
bad:
  return hs__fail(HS_ERR_FORMAT, "kernel bundle %s is malformed at byte %zu", path, r.off);
}

bool hs__bundle_is(const char *path) {
  FILE *f = fopen(path, "rb");
  char magic[8];
  bool is = f && fread(magic, 1, 8, f) == 8 && memcmp(magic, BUNDLE_MAGIC, 8) == 0;
  if (f) fclose(f);
  return is;
}

hs_status hs__bundle_has(const char *path, const char *name, bool *has) {
  unsigned char *data = NULL;
  size_t len = 0;
  *has = false;
  if (!hs__file_read(path, &data, &len))
    return hs__fail(HS_ERR_IO, "cannot read kernel bundle %s: %s", path, strerror(errno));
  hs_status st = bundle_find(path, data, len, name, NULL, has);
  free(data);
  return st;
}

/* Program `id` from the bundle at `path`; *found false (HS_OK) when the
 * bundle does not hold it. */
static hs_status bundle_load(const hs_ctx *ctx, const hs_dev *dev, const char *path, hs_prog id,
                             const char *options, cl_program *out, bool *found) {
  unsigned char *data = NULL;
  size_t len = 0;
  *found = false;
  if (!hs__file_read(path, &data, &len))
    return hs__fail(HS_ERR_IO, "cannot read kernel bundle %s: %s", path, strerror(errno));
  bundle_entry e = {0};
  hs_status st = bundle_find(path, data, len, programs[id].name, &e, found);
  if (st == HS_OK && *found) {
    char origin[1100];
    snprintf(origin, sizeof origin, "%s (program '%s')", path, programs[id].name);
    st = hs__program_from_binary(ctx, dev, e.bin, e.bin_len, options, origin, out);
  }
  free(data);
  return st;
}

bool hs__prog_files_provide(const hs__prog_files *f, hs_prog id) {
  if (!f) return false;
  if (f->file[id]) return true;
  bool has = false;
  return f->bundle && hs__bundle_has(f->bundle, programs[id].name, &has) == HS_OK && has;
}

hs_status hs__prog_files_check(const hs__prog_files *f, unsigned roles, const char *model,
                               const char *dev_name) {
  if (!f || !f->no_compiler) return HS_OK;
  for (int k = 0; k < HS_PROG_COUNT_; k++) {
    if (!hs__program_needed((hs_prog)k, roles, model) || f->file[k]) continue;
    bool has = false;
    if (f->bundle) {
      hs_status st = hs__bundle_has(f->bundle, programs[k].name, &has);
      if (st != HS_OK) return st;
    }
    if (!has)
      return hs__fail(HS_ERR_PLACEMENT,
                      "device '%s' does not compile and %s%s holds no program '%s', which its "
                      "role needs",
                      dev_name, f->bundle ? "its bundle " : "no prebuilt binary",
                      f->bundle ? f->bundle : "", programs[k].name);
  }
  return HS_OK;
}

/* ---- asking for a program --------------------------------------------------- */

hs_status hs__program_get(const hs_ctx *ctx, const hs_dev *dev, hs_prog id, cl_program *out) {
  return hs__program_get_noted(ctx, dev, id, out, NULL);
}

hs_status hs__program_get_noted(const hs_ctx *ctx, const hs_dev *dev, hs_prog id,
                                cl_program *out, hs_build_note *note) {
  if (note) memset(note, 0, sizeof *note);
  *out = NULL;
  const hs__program_def *d = hs__program_def_of(id);
  if (!d) return hs__fail(HS_ERR_INVALID_ARG, "no program %d", (int)id);
  char options[256];
  hs__program_options(id, &dev->info, options, sizeof options);
  const hs__prog_files *f = dev->progs;
  hs_status st;
  if (f && f->file[id]) {
    st = hs__program_from_binary_file(ctx, dev, f->file[id], options, out);
    if (st == HS_OK) hs__log(HS_LOG_BUILD, "program '%s' on '%s' from %s", d->name,
                             dev->info.name, f->file[id]);
    return st == HS_OK ? st : hs__fail_context(st, "program '%s'", d->name);
  }
  if (f && f->bundle) {
    bool found;
    st = bundle_load(ctx, dev, f->bundle, id, options, out, &found);
    if (st != HS_OK) return hs__fail_context(st, "program '%s'", d->name);
    if (found) {
      hs__log(HS_LOG_BUILD, "program '%s' on '%s' from the bundle %s", d->name, dev->info.name,
              f->bundle);
      return HS_OK;
    }
    hs__log(HS_LOG_BUILD, "the bundle %s holds no program '%s'", f->bundle, d->name);
  }
  char base[256], fast[256];
  base_options(d, &dev->info, base, sizeof base);
  speedup_options(d, &dev->info, fast, sizeof fast);
  st = hs__program_build_fast(ctx, dev, d->sources, count(d->sources), base, fast, out, note);
  return st == HS_OK ? st : hs__fail_context(st, "program '%s'", d->name);
}

hs_status hs__program_get_variant(const hs_ctx *ctx, const hs_dev *dev, hs_prog id,
                                  const char *options, cl_program *out) {
  *out = NULL;
  const hs__program_def *d = hs__program_def_of(id);
  if (!d) return hs__fail(HS_ERR_INVALID_ARG, "no program %d", (int)id);
  hs_status st = hs__program_build(ctx, dev, d->sources, count(d->sources),
                                   options ? options : "", out, NULL);
  return st == HS_OK ? st : hs__fail_context(st, "program '%s' (options '%s')", d->name,
                                             options ? options : "");
}

hs_status hs__program_save(const hs_ctx *ctx, const hs_dev *dev, hs_prog id, const char *path) {
  cl_program prog;
  hs_status st = hs__program_get(ctx, dev, id, &prog);
  if (st != HS_OK) return st;
  st = hs__program_save_binary(prog, dev, path);
  clReleaseProgram(prog);
  return st;
}

/* ---- writing bundles ---------------------------------------------------------- */

typedef struct part_list {
  const void **parts;
  size_t *lens;
  int n, cap;
} part_list;

static bool add_part(part_list *l, const void *p, size_t len) {
  if (l->n == l->cap) {
    int cap = l->cap ? 2 * l->cap : 32;
    const void **np = realloc(l->parts, (size_t)cap * sizeof *np);
    if (np) l->parts = np;
    size_t *nl = realloc(l->lens, (size_t)cap * sizeof *nl);
    if (nl) l->lens = nl;
    if (!np || !nl) return false;
    l->cap = cap;
  }
  l->parts[l->n] = p;
  l->lens[l->n++] = len;
  return true;
}

hs_status hs__bundle_build(const hs_ctx *ctx, const hs_dev *dev, unsigned roles,
                           const char *model, const char *path, char *names, size_t names_len) {
  if (names && names_len) names[0] = '\0';
  unsigned char *bins[HS_PROG_COUNT_] = {0};
  size_t bin_len[HS_PROG_COUNT_] = {0};
  char options[HS_PROG_COUNT_][256];
  uint32_t name_len[HS_PROG_COUNT_], opt_len[HS_PROG_COUNT_];
  uint64_t bl64[HS_PROG_COUNT_];
  part_list l = {0};
  hs_status st = HS_OK;
  uint32_t n = 0;
  for (int i = 0; i < HS_PROG_COUNT_ && st == HS_OK; i++) {
    if (!hs__program_needed((hs_prog)i, roles, model)) continue;
    cl_program prog;
    if ((st = hs__program_get(ctx, dev, (hs_prog)i, &prog)) != HS_OK) break;
    st = hs__program_binary(prog, dev, &bins[i], &bin_len[i]);
    clReleaseProgram(prog);
    if (st != HS_OK) break;
    hs__program_options((hs_prog)i, &dev->info, options[i], sizeof options[i]);
    n++;
    if (names && names_len)
      snprintf(names + strlen(names), names_len - strlen(names), "%s%s", n > 1 ? "," : "",
               programs[i].name);
  }
  if (st == HS_OK && n == 0)
    st = hs__fail(HS_ERR_INVALID_ARG, "no program is needed by role bits 0x%x", roles);
  if (st != HS_OK) goto done;
  char header[1024];
  snprintf(header, sizeof header, "hetsage %s\nplatform %s\ndevice %s | %s\ndriver %s\n",
           HS_VERSION, dev->info.platform_name, dev->info.name, dev->info.vendor,
           dev->info.driver_version);
  uint32_t hl = (uint32_t)strlen(header);
  bool ok = add_part(&l, BUNDLE_MAGIC, 8) && add_part(&l, &hl, 4) && add_part(&l, header, hl) &&
            add_part(&l, &n, 4);
  for (int i = 0; ok && i < HS_PROG_COUNT_; i++) {
    if (!bins[i]) continue;
    name_len[i] = (uint32_t)strlen(programs[i].name);
    opt_len[i] = (uint32_t)strlen(options[i]);
    bl64[i] = bin_len[i];
    ok = add_part(&l, &name_len[i], 4) && add_part(&l, programs[i].name, name_len[i]) &&
         add_part(&l, &opt_len[i], 4) && add_part(&l, options[i], opt_len[i]) &&
         add_part(&l, &bl64[i], 8) && add_part(&l, bins[i], bin_len[i]);
  }
  uLong crc = crc32(0, NULL, 0);
  for (int i = 0; ok && i < l.n; i++) crc = crc32_z(crc, l.parts[i], l.lens[i]);
  uint32_t c32 = (uint32_t)crc;
  ok = ok && add_part(&l, &c32, 4);
  if (!ok) {
    st = hs__fail(HS_ERR_NOMEM, "out of memory for a kernel bundle");
    goto done;
  }
  st = hs__file_write_atomic(path, l.parts, l.lens, l.n);
done:
  for (int i = 0; i < HS_PROG_COUNT_; i++) free(bins[i]);
  free(l.parts);
  free(l.lens);
  return st;
}
