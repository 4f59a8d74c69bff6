/* hs_convert: one importer into the dataset writer, or a native dataset
 * rewritten (its features turned from one form into the other). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hs_graph.h"
#include "util/hs_json.h"
#include "hs_import.h"

static const struct {
  const char *name;
  hs_import_format fmt;
} formats[] = {
    {"linqs", HS_IMPORT_LINQS},
    {"musae", HS_IMPORT_MUSAE},
    {"ogb", HS_IMPORT_OGB},
    {"edgelist", HS_IMPORT_EDGELIST},
    {"native", HS_IMPORT_NATIVE},
};

hs_status hs_import_format_parse(const char *name, hs_import_format *out) {
  if (!out) return hs__fail(HS_ERR_INVALID_ARG, "hs_import_format_parse: NULL out");
  for (size_t i = 0; i < HS_ARRAY_LEN(formats); i++)
    if (name && strcmp(name, formats[i].name) == 0) {
      *out = formats[i].fmt;
      return HS_OK;
    }
  return hs__fail(HS_ERR_INVALID_ARG,
                  "unknown import format '%s' (linqs, musae, ogb, edgelist, native)",
                  name ? name : "");
}

void hs_convert_opts_init_sized(hs_convert_opts *user, hs_import_format from, size_t size) {
  hs_convert_opts d, *o = &d;
  memset(o, 0, sizeof *o);
  o->struct_size = sizeof *o;
  o->from = from;
  o->self_loops = HS_SELF_LOOPS_KEEP;
  o->make_split = true;
  o->split_frac[0] = 0.6;
  o->split_frac[1] = 0.2;
  o->split_frac[2] = 0.2;
  hs__sized_init(user, size, o, sizeof *o);
}

/* Copy every array of the open dataset `ds` but the features, then write
 * the features in the form asked for, and check the result. */
static hs_status rewrite_native(hs_dataset *ds, const char *src, hs__dsw *w,
                                const hs_convert_opts *o, hs_dataset_info *summary) {
  const hs_graph *g = hs__dataset_graph(ds);
  hs_status st;
  const int32_t *col = NULL; /* sparse column ids (int64 ones narrowed) */
  if ((st = hs__dataset_sparse_cols(ds, &col))) return st;
  uint64_t s_ip[1] = {(uint64_t)g->n + 1}, s_ix[1] = {(uint64_t)g->e}, s_n[1] = {(uint64_t)g->n};
  if ((st = hs__dsw_array(w, "indptr.npy", HS_DTYPE_INT64, 1, s_ip, g->indptr)) ||
      (st = hs__dsw_array(w, "indices.npy", HS_DTYPE_INT32, 1, s_ix, g->indices)))
    return st;
  if (g->weights && (st = hs__dsw_array(w, "weights.npy", HS_DTYPE_FLOAT32, 1, s_ix, g->weights)))
    return st;
  if (g->labels && (st = hs__dsw_array(w, "label.npy", HS_DTYPE_INT32, 1, s_n, g->labels)))
    return st;
  static const char *const names[HS_SPLIT_COUNT_] = {"train_idx.npy", "valid_idx.npy",
                                                     "test_idx.npy"};
  for (int s = 0; s < HS_SPLIT_COUNT_; s++) {
    uint64_t s_s[1] = {(uint64_t)g->split_n[s]};
    if (g->split[s] && (st = hs__dsw_array(w, names[s], HS_DTYPE_INT32, 1, s_s, g->split[s])))
      return st;
  }
  hs_feat_format written = HS_FEAT_FORMAT_AUTO;
  if (g->feat || g->feat_sparse) {
    hs__progress(o->progress, o->progress_ctx, "writing %" PRId64 " x %" PRId64 " features (%s)",
                 g->n, g->f, hs_feat_format_name(o->feat_format));
    hs__feat_src fs = {.n = g->n, .f = g->f, .dtype = g->feat_dtype, .dense = g->feat,
                       .ptr = g->feat_ptr, .col = col, .val = g->feat_val};
    if ((st = hs__feat_write(w, &fs, o->feat_format, &written))) return st;
  }
  size_t cap = strlen(src) * 6 + 256;
  char *meta = malloc(cap);
  if (!meta) return hs__fail(HS_ERR_NOMEM, "no memory");
  size_t k = (size_t)snprintf(meta, cap, "{\n  \"hetsage_dataset\": 1,\n  \"source_format\": "
                                         "\"native\",\n  \"source\": ");
  k += hs__json_str(meta + k, cap - k, src);
  snprintf(meta + k, cap - k, ",\n  \"features\": \"%s\"\n}\n",
           written == HS_FEAT_FORMAT_AUTO ? "none" : hs_feat_format_name(written));
  st = hs__dsw_text(w, "meta.json", meta);
  free(meta);
  if (st) return st;
  hs_dataset *check = NULL;
  if ((st = hs_dataset_open(hs__dsw_dir(w), &check))) {
    hs__fail_context(st, "the rewritten dataset does not validate");
    return st;
  }
  if (summary) hs_dataset_get_info(check, summary);
  hs_dataset_close(check);
  return HS_OK;
}

static hs_status convert_native(const char *src, const char *dst, const hs_convert_opts *o,
                                hs_dataset_info *summary) {
  hs_dataset *ds = NULL;
  hs__dsw *w = NULL;
  double t0 = hs__now();
  hs_status st;
  if ((st = hs__dsw_begin(dst, o->force, &w))) return st;
  hs__progress(o->progress, o->progress_ctx, "reading %s", src);
  if ((st = hs_dataset_open(src, &ds))) goto fail;
  if ((st = hs__graph_topology(hs__dataset_graph(ds), "convert"))) goto fail;
  if ((st = rewrite_native(ds, src, w, o, summary))) goto fail;
  hs_dataset_close(ds);
  st = hs__dsw_commit(w);
  if (!st)
    hs__progress(o->progress, o->progress_ctx, "wrote %s in %.1f s", dst, hs__now() - t0);
  return st;
fail:
  hs_dataset_close(ds);
  hs__dsw_abort(w);
  return st;
}

static hs_status convert(const char *src, const char *dst, const hs_convert_opts *o,
                         hs_dataset_info *summary);

hs_status hs_convert(const char *src, const char *dst, const hs_convert_opts *user,
                     hs_dataset_info *summary) {
  if (!src || !dst || !user) return hs__fail(HS_ERR_INVALID_ARG, "hs_convert: NULL argument");
  hs_convert_opts o;
  hs_convert_opts_init(&o, user->from);
  hs_status st = hs__sized_in(&o, sizeof o, user, "hs_convert_opts");
  if (st == HS_OK && summary)
    st = hs__sized_check(summary->struct_size, sizeof *summary, "hs_dataset_info");
  if (st != HS_OK) return st;
  hs_dataset_info info;
  hs_dataset_info_init(&info);
  st = convert(src, dst, &o, summary ? &info : NULL);
  if (st == HS_OK && summary) st = hs__sized_out(summary, &info, sizeof info, "hs_dataset_info");
  return st;
}

static hs_status convert(const char *src, const char *dst, const hs_convert_opts *o,
                         hs_dataset_info *summary) {
  if ((unsigned)o->feat_format > HS_FEAT_FORMAT_SPARSE)
    return hs__fail(HS_ERR_INVALID_ARG, "hs_convert: feature format %d", (int)o->feat_format);
  if (o->from == HS_IMPORT_NATIVE) return convert_native(src, dst, o, summary);
  hs__imported imp;
  memset(&imp, 0, sizeof imp);
  hs__dsw *w = NULL;
  hs_status st;
  double t0 = hs__now();
  /* Claim the destination first: a refusal should not wait for a parse. */
  if ((st = hs__dsw_begin(dst, o->force, &w))) return st;
  hs__stop_scope(o->stop);
  switch (o->from) {
    case HS_IMPORT_LINQS: st = hs__import_linqs(src, o, &imp); break;
    case HS_IMPORT_MUSAE: st = hs__import_musae(src, o, &imp); break;
    case HS_IMPORT_OGB: st = hs__import_ogb(src, o, &imp); break;
    case HS_IMPORT_EDGELIST: st = hs__import_edgelist(src, o, &imp); break;
    default: st = hs__fail(HS_ERR_INVALID_ARG, "hs_convert: unknown format %d", (int)o->from);
  }
  if (st) goto fail;
  if ((st = hs__imported_write(&imp, w, src, o, summary))) goto fail;
  hs__imported_free(&imp);
  if (hs__stopped()) {
    st = hs__fail_stopped();
    goto fail;
  }
  hs__stop_scope(NULL);
  st = hs__dsw_commit(w);
  w = NULL;
  if (!st)
    hs__progress(o->progress, o->progress_ctx, "wrote %s in %.1f s", dst, hs__now() - t0);
  return st;
fail:
  hs__stop_scope(NULL);
  hs__imported_free(&imp);
  hs__dsw_abort(w);
  return st;
}
