/* Importers of published graph formats. Each has a parser over text
 * sources (what the fuzzers drive) and an entry that finds its files. */
#ifndef HS_IMPORT_H
#define HS_IMPORT_H

#include "hs_build.h"
#include "hs_text.h"

/* LINQS: `<name>.content` lines "id f_0 ... f_{F-1} class" and
 * `<name>.cites` lines "A B" (B cites A: the edge B -> A). Ids are tokens,
 * renumbered in content order; classes are numbered by name, byte-wise. */
hs_status hs__linqs_parse(hs__text *content, hs__text *cites, hs__imported *imp);
hs_status hs__import_linqs(const char *src, const hs_convert_opts *o, hs__imported *imp);

/* MUSAE: target CSV (header; id first, class name last), edges CSV
 * (header "id_1,id_2"), features JSON {"id": [feature ids], ...}. The
 * target is parsed first: it fixes N. */
hs_status hs__musae_parse_target(hs__text *t, hs__imported *imp);
hs_status hs__musae_parse_edges(hs__text *t, hs__imported *imp);
hs_status hs__musae_parse_features(const char *name, const char *json, size_t len,
                                   hs__imported *imp);
hs_status hs__import_musae(const char *src, const hs_convert_opts *o, hs__imported *imp);

/* OGB raw node-property directory. */
hs_status hs__import_ogb(const char *src, const hs_convert_opts *o, hs__imported *imp);

/* Whitespace edge list, '#' comments. */
hs_status hs__edgelist_parse(hs__text *t, bool keep_ids, hs__imported *imp);
hs_status hs__import_edgelist(const char *src, const hs_convert_opts *o, hs__imported *imp);

/* The single file in `dir` whose name ends in `suffix` or `suffix`.gz
 * (a plain file wins over its .gz twin). HS_ERR_IO if none or several. */
hs_status hs__find_one(const char *dir, const char *suffix, char **out);

#endif
