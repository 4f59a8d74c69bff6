/* hs_convert: one importer into the dataset writer. */
#include <inttypes.h>
#include <string.h>

#include "hs_import.h"

static const struct {
  const char *name;
  hs_import_format fmt;
} formats[] = {
    {"linqs", HS_IMPORT_LINQS},
    {"musae", HS_IMPORT_MUSAE},
    {"ogb", HS_IMPORT_OGB},
    {"edgelist", HS_IMPORT_EDGELIST},
};

hs_status hs_import_format_parse(const char *name, hs_import_format *out) {
  if (!out) return hs__fail(HS_ERR_INVALID_ARG, "hs_import_format_parse: NULL out");
  for (size_t i = 0; i < HS_ARRAY_LEN(formats); i++)
    if (name && strcmp(name, formats[i].name) == 0) {
      *out = formats[i].fmt;
      return HS_OK;
    }
  return hs__fail(HS_ERR_INVALID_ARG,
                  "unknown import format '%s' (linqs, musae, ogb, edgelist)", name ? name : "");
}

void hs_convert_opts_init(hs_convert_opts *o, hs_import_format from) {
  if (!o) return;
  memset(o, 0, sizeof *o);
  o->from = from;
  o->self_loops = HS_SELF_LOOPS_KEEP;
  o->make_split = true;
  o->split_frac[0] = 0.6;
  o->split_frac[1] = 0.2;
  o->split_frac[2] = 0.2;
}

hs_status hs_convert(const char *src, const char *dst, const hs_convert_opts *o,
                     hs_dataset_info *summary) {
  if (!src || !dst || !o) return hs__fail(HS_ERR_INVALID_ARG, "hs_convert: NULL argument");
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
