/* Importers: every format on its hand-made fixture (exact CSR, labels,
 * features, splits), parse errors with file:line:column, options, the
 * stratified split, and Cora / MUSAE Facebook when the shared copies exist. */
#include <stdint.h>
#include <zlib.h>

#include "data/hs_build.h"
#include "data/hs_graph.h"
#include "data/hs_import.h"
#include "hs_test_util.h"

static char *fixture(const char *name) { return tu_path(tu_data_dir(), name); }

typedef struct conv {
  char *root, *dst;
  hs_dataset *ds;
  const hs_graph *g;
  hs_dataset_info info;
} conv;

static hs_status convert(conv *c, const char *src_rel, hs_convert_opts *o) {
  c->root = tu_mkdtemp();
  c->dst = tu_path(c->root, "out");
  c->ds = NULL;
  char *src = fixture(src_rel);
  hs_dataset_info_init(&c->info);
  hs_status st = hs_convert(src, c->dst, o, &c->info);
  free(src);
  if (st == HS_OK) {
    cr_assert_eq(hs_dataset_open(c->dst, &c->ds), HS_OK, "%s", hs_last_error());
    c->g = hs__dataset_graph(c->ds);
  } else {
    /* A failed import leaves neither the dataset nor its temporary. */
    cr_expect_eq(tu_count_prefix(c->root, "out"), 0, "partial output left behind");
  }
  return st;
}

static void conv_done(conv *c) {
  hs_dataset_close(c->ds);
  free(c->dst);
  tu_rmtree(c->root);
}

static void expect_csr(const hs_graph *g, const int64_t *ip, int64_t n, const int32_t *ix) {
  cr_assert_eq(g->n, n);
  for (int64_t v = 0; v <= n; v++) cr_expect_eq(g->indptr[v], ip[v], "indptr[%lld]", (long long)v);
  for (int64_t k = 0; k < ip[n]; k++)
    cr_expect_eq(g->indices[k], ix[k], "indices[%lld]: %d != %d", (long long)k, g->indices[k], ix[k]);
}

static char *read_text(const char *dir, const char *name) {
  char *p = tu_path(dir, name);
  FILE *f = fopen(p, "rb");
  cr_assert(f, "cannot open %s", p);
  free(p);
  static char buf[8192];
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  buf[n] = '\0';
  fclose(f);
  return buf;
}

/* ---- LINQS ---------------------------------------------------------- */

static void check_linqs_directed(conv *c) {
  static const int64_t ip[6] = {0, 2, 4, 6, 6, 7};
  static const int32_t ix[7] = {2, 2, 0, 2, 1, 2, 3};
  expect_csr(c->g, ip, 5, ix);
  static const int32_t lab[5] = {1, 2, 0, 1, 2};
  for (int v = 0; v < 5; v++) cr_expect_eq(c->g->labels[v], lab[v]);
  cr_expect_eq(c->g->num_classes, 3);
  cr_expect_eq(c->g->f, 4);
  const float *f = c->g->feat;
  cr_expect_float_eq(f[0 * 4 + 1], 1.0f, 0.0f);
  cr_expect_float_eq(f[3 * 4 + 3], 0.5f, 0.0f);
  cr_expect_float_eq(f[4 * 4 + 0], 0.0f, 0.0f);
  const char *meta = read_text(c->dst, "meta.json");
  cr_expect(strstr(meta, "\"label_names\": [\"Case_Based\", \"Neural_Networks\", \"Theory\"]"),
            "%s", meta);
}

Test(import, linqs_fixture_directed) {
  conv c;
  hs_convert_opts o;
  hs_convert_opts_init(&o, HS_IMPORT_LINQS);
  cr_assert_eq(convert(&c, "linqs_tiny", &o), HS_OK, "%s", hs_last_error());
  check_linqs_directed(&c);
  /* Five labelled vertices, split 0.6/0.2/0.2 per class. */
  cr_expect_eq(c.info.split_size[0] + c.info.split_size[1] + c.info.split_size[2], 5);
  conv_done(&c);
}

Test(import, linqs_gzip_and_file_path) {
  conv c;
  hs_convert_opts o;
  hs_convert_opts_init(&o, HS_IMPORT_LINQS);
  cr_assert_eq(convert(&c, "linqs_gz", &o), HS_OK, "%s", hs_last_error());
  check_linqs_directed(&c);
  conv_done(&c);
  cr_assert_eq(convert(&c, "linqs_tiny/tiny.content", &o), HS_OK, "%s", hs_last_error());
  check_linqs_directed(&c);
  conv_done(&c);
}

Test(import, linqs_undirected_dedup_drop_loops) {
  conv c;
  hs_convert_opts o;
  hs_convert_opts_init(&o, HS_IMPORT_LINQS);
  o.undirected = o.dedup = true;
  o.self_loops = HS_SELF_LOOPS_DROP;
  cr_assert_eq(convert(&c, "linqs_tiny", &o), HS_OK, "%s", hs_last_error());
  static const int64_t ip[6] = {0, 2, 4, 6, 7, 8};
  static const int32_t ix[8] = {1, 2, 0, 2, 0, 1, 4, 3};
  expect_csr(c.g, ip, 5, ix);
  conv_done(&c);
}

Test(import, linqs_dedup_keeps_loops) {
  conv c;
  hs_convert_opts o;
  hs_convert_opts_init(&o, HS_IMPORT_LINQS);
  o.dedup = true;
  cr_assert_eq(convert(&c, "linqs_tiny", &o), HS_OK, "%s", hs_last_error());
  static const int64_t ip[6] = {0, 1, 3, 5, 5, 6};
  static const int32_t ix[6] = {2, 0, 2, 1, 2, 3};
  expect_csr(c.g, ip, 5, ix);
  conv_done(&c);
}

static hs_status linqs_mem(const char *content, const char *cites) {
  hs__text a, b;
  cr_assert_eq(hs__text_open_mem(&a, "x.content", content, strlen(content)), HS_OK);
  cr_assert_eq(hs__text_open_mem(&b, "x.cites", cites, strlen(cites)), HS_OK);
  hs__imported imp;
  memset(&imp, 0, sizeof imp);
  hs_status st = hs__linqs_parse(&a, &b, &imp);
  hs__imported_free(&imp);
  hs__text_close(&a);
  hs__text_close(&b);
  return st;
}

Test(import, linqs_error_feature_count) {
  TU_EXPECT_FAIL(linqs_mem("1 0 1 A\n2 0 1 1 B\n", ""), HS_ERR_FORMAT, "x.content", ":2:7:",
                 "more fields than the first line's 4");
  TU_EXPECT_FAIL(linqs_mem("1 0 1 A\n2 0 B\n", ""), HS_ERR_FORMAT, "x.content", ":2:5:",
                 "1 features, the first line has 2");
}

Test(import, linqs_error_not_a_number) {
  TU_EXPECT_FAIL(linqs_mem("1 0 1 A\n2 0 x1 B\n", ""), HS_ERR_FORMAT, "x.content", ":2:5:",
                 "feature 1: expected a number, found 'x1'");
  TU_EXPECT_FAIL(linqs_mem("1 0 inf A\n", ""), HS_ERR_FORMAT, "x.content", ":1:5:",
                 "not a finite number");
}

Test(import, linqs_error_repeated_id) {
  TU_EXPECT_FAIL(linqs_mem("1 0 A\n2 0 B\n1 1 A\n", ""), HS_ERR_FORMAT, "x.content", ":3:1:",
                 "paper id '1' appears on an earlier line");
}

Test(import, linqs_error_missing_class) {
  TU_EXPECT_FAIL(linqs_mem("1 0 A\n7\n", ""), HS_ERR_FORMAT, "x.content", ":2:2:",
                 "no class label");
}

Test(import, linqs_without_features) {
  cr_expect_eq(linqs_mem("1 A\n2 B\n", "1 2\n"), HS_OK, "%s", hs_last_error());
  TU_EXPECT_FAIL(linqs_mem("1 A\n2 0 B\n", ""), HS_ERR_FORMAT, "x.content", ":2:3:",
                 "more fields than the first line's 2");
}

Test(import, linqs_error_unknown_cited_id) {
  TU_EXPECT_FAIL(linqs_mem("1 0 A\n2 0 B\n", "1 2\n2  99\n"), HS_ERR_FORMAT, "x.cites", ":2:4:",
                 "paper id '99' is not in x.content");
  TU_EXPECT_FAIL(linqs_mem("1 0 A\n2 0 B\n", "1 2 1\n"), HS_ERR_FORMAT, "x.cites", ":1:5:",
                 "more than two fields");
}

Test(import, linqs_error_nul_byte) {
  hs__text a, b;
  const char content[] = "1 0 A\n2 \0 B\n";
  cr_assert_eq(hs__text_open_mem(&a, "x.content", content, sizeof content - 1), HS_OK);
  cr_assert_eq(hs__text_open_mem(&b, "x.cites", "", 0), HS_OK);
  hs__imported imp;
  memset(&imp, 0, sizeof imp);
  TU_EXPECT_FAIL(hs__linqs_parse(&a, &b, &imp), HS_ERR_FORMAT, "x.content", ":2:3:", "NUL byte");
  hs__imported_free(&imp);
  hs__text_close(&a);
  hs__text_close(&b);
}

Test(import, missing_source_file_leaves_nothing) {
  conv c;
  hs_convert_opts o;
  hs_convert_opts_init(&o, HS_IMPORT_LINQS);
  TU_EXPECT_FAIL(convert(&c, "no-such-dir", &o), HS_ERR_IO, "no-such-dir", "cannot open",
                 "No such file");
  conv_done(&c);
}

Test(import, bad_source_leaves_nothing_and_keeps_existing) {
  char *root = tu_mkdtemp();
  /* A content file whose third line is broken, in a scratch copy. */
  char *src = tu_path(root, "src");
  cr_assert_eq(mkdir(src, 0755), 0);
  tu_write_bytes(src, "t.content", "1 0 A\n2 1 B\n3 A\n", 16);
  tu_write_bytes(src, "t.cites", "1 2\n", 4);
  char *dst = tu_path(root, "out");
  hs_convert_opts o;
  hs_convert_opts_init(&o, HS_IMPORT_LINQS);
  TU_EXPECT_FAIL(hs_convert(src, dst, &o, NULL), HS_ERR_FORMAT, "t.content", ":3:3:",
                 "0 features");
  cr_expect_eq(tu_count_prefix(root, "out"), 0);
  /* An existing destination is refused without force, and kept. */
  cr_assert_eq(mkdir(dst, 0755), 0);
  tu_write_bytes(dst, "indptr.npy", "x", 1);
  tu_write_bytes(src, "t.content", "1 0 A\n2 1 B\n3 0 A\n", 18);
  TU_EXPECT_FAIL(hs_convert(src, dst, &o, NULL), HS_ERR_INVALID_ARG, "out", "already exists",
                 "force");
  o.force = true;
  cr_expect_eq(hs_convert(src, dst, &o, NULL), HS_OK, "%s", hs_last_error());
  cr_expect_eq(tu_count_prefix(root, "out"), 1);
  hs_dataset *ds;
  cr_expect_eq(hs_dataset_open(dst, &ds), HS_OK, "%s", hs_last_error());
  hs_dataset_close(ds);
  free(src);
  free(dst);
  tu_rmtree(root);
}

/* ---- MUSAE ---------------------------------------------------------- */

Test(import, musae_fixture) {
  conv c;
  hs_convert_opts o;
  hs_convert_opts_init(&o, HS_IMPORT_MUSAE);
  o.make_split = false;
  cr_assert_eq(convert(&c, "musae_tiny", &o), HS_OK, "%s", hs_last_error());
  static const int64_t ip[6] = {0, 2, 3, 4, 5, 6};
  static const int32_t ix[6] = {1, 1, 2, 0, 3, 0};
  expect_csr(c.g, ip, 5, ix);
  static const int32_t lab[5] = {3, 1, 3, 2, 0};
  for (int v = 0; v < 5; v++) cr_expect_eq(c.g->labels[v], lab[v], "label %d", v);
  cr_expect_eq(c.g->f, 6);
  const float *f = c.g->feat;
  static const float want[5][6] = {{1, 0, 1, 0, 0, 0}, {0}, {0, 0, 0, 0, 0, 1}, {0}, {0, 1, 0, 1, 0, 0}};
  cr_expect_eq(memcmp(f, want, sizeof want), 0);
  cr_expect_not(c.info.has_split[0]);
  const char *meta = read_text(c.dst, "meta.json");
  cr_expect(strstr(meta, "[\"company\", \"government\", \"politician\", \"tvshow\"]"), "%s", meta);
  conv_done(&c);
}

static hs_status musae_target(const char *text) {
  hs__text t;
  cr_assert_eq(hs__text_open_mem(&t, "t.csv", text, strlen(text)), HS_OK);
  hs__imported imp;
  memset(&imp, 0, sizeof imp);
  hs_status st = hs__musae_parse_target(&t, &imp);
  hs__imported_free(&imp);
  hs__text_close(&t);
  return st;
}

Test(import, musae_error_target) {
  TU_EXPECT_FAIL(musae_target("id,name,type\n0,\"Unclosed, x,tv\n"), HS_ERR_FORMAT, "t.csv",
                 ":2:3:", "unterminated quoted field");
  TU_EXPECT_FAIL(musae_target("id,name,type\n0,\"a\"b,tv\n"), HS_ERR_FORMAT, "t.csv", ":2:6:",
                 "expected ',' after a quoted field");
  TU_EXPECT_FAIL(musae_target("id,name,type\n0,a,tv\n5,b,tv\n"), HS_ERR_FORMAT, "t.csv", ":3:1:",
                 "id 5 is out of range");
  TU_EXPECT_FAIL(musae_target("id,name,type\n0,a,tv\n0,b,tv\n"), HS_ERR_FORMAT, "t.csv", ":3:1:",
                 "id 0 has an earlier row");
  TU_EXPECT_FAIL(musae_target("id,name,type\nx,a,tv\n"), HS_ERR_FORMAT, "t.csv", ":2:1:",
                 "expected a vertex id");
}

static hs_status musae_json(const char *json) {
  hs__imported imp;
  memset(&imp, 0, sizeof imp);
  imp.n = 3;
  hs_status st = hs__musae_parse_features("f.json", json, strlen(json), &imp);
  hs__imported_free(&imp);
  return st;
}

Test(import, musae_error_features_json) {
  cr_expect_eq(musae_json("{}"), HS_OK, "%s", hs_last_error());
  TU_EXPECT_FAIL(musae_json("{\"0\": [1, 2],\n \"1\": [3 4]}"), HS_ERR_FORMAT, "f.json", ":2:10:",
                 "expected ',' or ']'");
  TU_EXPECT_FAIL(musae_json("{\"0\": [1], \"0\": [2]}"), HS_ERR_FORMAT, "f.json", ":1:13:",
                 "vertex id 0 appears twice");
  TU_EXPECT_FAIL(musae_json("{\"7\": [1]}"), HS_ERR_FORMAT, "f.json", ":1:3:",
                 "vertex id 7 is not in the target file");
  TU_EXPECT_FAIL(musae_json("{\"1\": [-1]}"), HS_ERR_FORMAT, "f.json", ":1:8:",
                 "expected a feature id");
  TU_EXPECT_FAIL(musae_json("{\"1\": [1.5]}"), HS_ERR_FORMAT, "f.json", ":1:8:",
                 "expected a feature id");
  TU_EXPECT_FAIL(musae_json("{\"1\": [1]} x"), HS_ERR_FORMAT, "f.json", ":1:12:",
                 "unexpected text after");
  TU_EXPECT_FAIL(musae_json("{\"a\": [1]}"), HS_ERR_FORMAT, "f.json", ":1:3:",
                 "expected a vertex id (digits)");
}

Test(import, musae_error_edges) {
  hs__text t;
  const char *text = "id_1,id_2\n0,1\n1;2\n";
  cr_assert_eq(hs__text_open_mem(&t, "e.csv", text, strlen(text)), HS_OK);
  hs__imported imp;
  memset(&imp, 0, sizeof imp);
  imp.n = 3;
  TU_EXPECT_FAIL(hs__musae_parse_edges(&t, &imp), HS_ERR_FORMAT, "e.csv", ":3:2:", "expected ','");
  hs__imported_free(&imp);
  hs__text_close(&t);
  text = "0,1\n1,3\n";
  cr_assert_eq(hs__text_open_mem(&t, "e.csv", text, strlen(text)), HS_OK);
  imp.n = 3;
  TU_EXPECT_FAIL(hs__musae_parse_edges(&t, &imp), HS_ERR_FORMAT, "e.csv", ":2:3:",
                 "vertex id 3 is not in the target file");
  hs__imported_free(&imp);
  hs__text_close(&t);
}

/* ---- OGB ------------------------------------------------------------ */

Test(import, ogb_fixture_with_gzip_and_split) {
  conv c;
  hs_convert_opts o;
  hs_convert_opts_init(&o, HS_IMPORT_OGB);
  cr_assert_eq(convert(&c, "ogb_tiny", &o), HS_OK, "%s", hs_last_error());
  static const int64_t ip[7] = {0, 2, 3, 4, 5, 6, 7};
  static const int32_t ix[7] = {1, 3, 2, 0, 4, 5, 3};
  expect_csr(c.g, ip, 6, ix);
  static const int32_t lab[6] = {1, 0, 2, -1, 1, 0};
  for (int v = 0; v < 6; v++) cr_expect_eq(c.g->labels[v], lab[v]);
  cr_expect_eq(c.info.num_labelled, 5);
  cr_expect_eq(c.g->num_classes, 3);
  cr_expect_eq(c.g->f, 3);
  const float *f = c.g->feat;
  cr_expect_float_eq(f[1], -1.25f, 0.0f);
  cr_expect_float_eq(f[7], 2e-3f, 0.0f);
  cr_expect_float_eq(f[17], -1.0f, 0.0f);
  /* The source's split is kept as it is. */
  cr_expect(c.g->split_n[0] == 3 && c.g->split_n[1] == 1 && c.g->split_n[2] == 1);
  cr_expect(c.g->split[0][0] == 0 && c.g->split[0][2] == 5 && c.g->split[2][0] == 4);
  conv_done(&c);
}

static char *ogb_copy(const char *edge, const char *label, const char *train) {
  char *root = tu_mkdtemp();
  char *raw = tu_path(root, "raw");
  mkdir(raw, 0755);
  tu_write_bytes(raw, "edge.csv", edge, strlen(edge));
  tu_write_bytes(raw, "node-label.csv", label, strlen(label));
  free(raw);
  if (train) {
    char *s = tu_path(root, "split");
    mkdir(s, 0755);
    char *r = tu_path(s, "x");
    mkdir(r, 0755);
    tu_write_bytes(r, "train.csv", train, strlen(train));
    tu_write_bytes(r, "valid.csv", "1\n", 2);
    free(r);
    free(s);
  }
  return root;
}

static hs_status ogb_run(char *root) {
  char *dst = tu_path(root, "out");
  hs_convert_opts o;
  hs_convert_opts_init(&o, HS_IMPORT_OGB);
  hs_status st = hs_convert(root, dst, &o, NULL);
  if (st) cr_expect_not(tu_exists(root, "out"));
  free(dst);
  return st;
}

Test(import, ogb_error_label) {
  char *root = ogb_copy("0,1\n", "1\n2.5\n", NULL);
  TU_EXPECT_FAIL(ogb_run(root), HS_ERR_FORMAT, "node-label.csv", ":2:1:",
                 "expected a class");
  tu_rmtree(root);
}

Test(import, ogb_error_edge) {
  char *root = ogb_copy("0,1\n1 2\n", "1\n2\n0\n", NULL);
  TU_EXPECT_FAIL(ogb_run(root), HS_ERR_FORMAT, "edge.csv", ":2:3:", "expected ','");
  tu_rmtree(root);
  root = ogb_copy("0,1\n1,3\n", "1\n2\n0\n", NULL);
  TU_EXPECT_FAIL(ogb_run(root), HS_ERR_FORMAT, "edge.csv", ":2:3:", "vertex id 3 is not below N = 3");
  tu_rmtree(root);
}

Test(import, ogb_error_split_overlap_and_unlabelled) {
  char *root = ogb_copy("0,1\n", "1\nnan\n0\n", "0\n2\n");
  /* valid.csv holds 1, which is unlabelled: reported once train is read. */
  TU_EXPECT_FAIL(ogb_run(root), HS_ERR_FORMAT, "valid.csv", ":1:1:", "vertex 1 is unlabelled");
  tu_rmtree(root);
  root = ogb_copy("0,1\n", "1\n2\n0\n", "0\n1\n");
  TU_EXPECT_FAIL(ogb_run(root), HS_ERR_FORMAT, "valid.csv", ":1:1:", "vertex 1 is already in");
  tu_rmtree(root);
}

/* ---- edge lists ----------------------------------------------------- */

Test(import, edgelist_renumbers_in_first_appearance_order) {
  conv c;
  hs_convert_opts o;
  hs_convert_opts_init(&o, HS_IMPORT_EDGELIST);
  cr_assert_eq(convert(&c, "edgelist_tiny.txt", &o), HS_OK, "%s", hs_last_error());
  static const int64_t ip[5] = {0, 2, 3, 4, 5};
  static const int32_t ix[5] = {1, 1, 2, 0, 3};
  expect_csr(c.g, ip, 4, ix);
  cr_expect_null(c.g->labels);
  cr_expect_null(c.g->feat);
  cr_expect_not(c.info.has_split[0]);
  conv_done(&c);
}

Test(import, edgelist_keep_ids) {
  conv c;
  hs_convert_opts o;
  hs_convert_opts_init(&o, HS_IMPORT_EDGELIST);
  o.keep_ids = true;
  o.dedup = true;
  o.self_loops = HS_SELF_LOOPS_DROP;
  cr_assert_eq(convert(&c, "edgelist_tiny.txt", &o), HS_OK, "%s", hs_last_error());
  cr_expect_eq(c.g->n, 41);
  cr_expect_eq(c.g->e, 3);
  cr_expect_eq(c.g->indptr[11] - c.g->indptr[10], 1);
  cr_expect_eq(c.g->indices[c.g->indptr[10]], 20);
  cr_expect_eq(c.g->indptr[41] - c.g->indptr[40], 0);
  conv_done(&c);
}

static hs_status edgelist_mem(const char *text, bool keep) {
  hs__text t;
  cr_assert_eq(hs__text_open_mem(&t, "g.txt", text, strlen(text)), HS_OK);
  hs__imported imp;
  memset(&imp, 0, sizeof imp);
  hs_status st = hs__edgelist_parse(&t, keep, &imp);
  hs__imported_free(&imp);
  hs__text_close(&t);
  return st;
}

Test(import, edgelist_errors) {
  TU_EXPECT_FAIL(edgelist_mem("# c\n1 2\n3 4 0.5\n", false), HS_ERR_FORMAT, "g.txt", ":3:5:",
                 "expected 2 fields");
  TU_EXPECT_FAIL(edgelist_mem("1 -2\n", false), HS_ERR_FORMAT, "g.txt", ":1:3:",
                 "expected a vertex id");
  TU_EXPECT_FAIL(edgelist_mem("1 2x\n", false), HS_ERR_FORMAT, "g.txt", ":1:4:",
                 "unexpected character");
  TU_EXPECT_FAIL(edgelist_mem("1\n", false), HS_ERR_FORMAT, "g.txt", ":1:2:",
                 "expected a vertex id");
  TU_EXPECT_FAIL(edgelist_mem("1 2\n0 2147483647\n", true), HS_ERR_UNSUPPORTED, "g.txt", ":2:3:",
                 "does not fit in int32");
}

/* A kept id whose vertex count the conversion cannot hold (16 bytes a
 * vertex at its peak) is refused where it stands, naming the id, the
 * vertices and the memory, instead of running out of memory later; on a
 * machine of 32 GiB or more no int32 id is that large, so it skips. */
Test(import, a_kept_id_beyond_memory_is_refused) {
  long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  double phys = (double)pages * (double)page;
  if (pages <= 0 || page <= 0 || phys >= 16.0 * 2147483647.0)
    cr_skip_test("%.1f GiB of memory holds any int32 id's vertices", phys / 1073741824.0);
  TU_EXPECT_FAIL(edgelist_mem("1 2\n0 2147483640\n", true), HS_ERR_NOMEM, "g.txt", ":2:3:",
                 "vertex id 2147483640");
  const char *d = hs_last_error();
  cr_expect(strstr(d, "2147483641 vertices") && strstr(d, "GiB of memory") &&
                strstr(d, "without --keep-ids"),
            "%s", d);
  /* the same id renumbered is two vertices among three */
  cr_expect_eq(edgelist_mem("1 2\n0 2147483640\n", false), HS_OK, "%s", hs_last_error());
}

/* ---- building blocks ---------------------------------------------- */

static int cmp_i32(const void *a, const void *b) {
  int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
  return (x > y) - (x < y);
}

Test(import, sort_matches_qsort) {
  enum { N = 5000 };
  int32_t *a = malloc(N * sizeof *a), *b = malloc(N * sizeof *b);
  uint32_t x = 12345;
  for (int round = 0; round < 6; round++) {
    size_t n = (size_t)(round * 997) % N + 1;
    for (size_t i = 0; i < n; i++) {
      x = x * 1664525u + 1013904223u;
      /* Rounds alternate between wide values and heavy repeats. */
      a[i] = b[i] = (int32_t)(round & 1 ? (x >> 28) : (x >> 1)) - (round == 4 ? (int32_t)i : 0);
    }
    hs__sort_i32(a, n);
    qsort(b, n, sizeof *b, cmp_i32);
    cr_expect_eq(memcmp(a, b, n * sizeof *a), 0, "round %d", round);
  }
  free(a);
  free(b);
}

Test(import, stratified_split_is_seeded_and_stratified) {
  enum { N = 1000 };
  int32_t lab[N];
  for (int v = 0; v < N; v++) lab[v] = v % 10 == 9 ? -1 : v % 3; /* 900 labelled */
  double frac[3] = {0.5, 0.25, 0.25};
  int32_t *a[3], *b[3], *c[3];
  int64_t na[3], nb[3], nc[3];
  cr_assert_eq(hs__split_stratified(lab, N, 3, frac, 7, a, na), HS_OK);
  cr_assert_eq(hs__split_stratified(lab, N, 3, frac, 7, b, nb), HS_OK);
  cr_assert_eq(hs__split_stratified(lab, N, 3, frac, 8, c, nc), HS_OK);
  cr_expect(na[0] == 450 && na[1] == 225 && na[2] == 225, "%lld %lld %lld", (long long)na[0],
            (long long)na[1], (long long)na[2]);
  cr_expect_eq(memcmp(a[0], b[0], (size_t)na[0] * 4), 0, "same seed, same split");
  cr_expect_neq(memcmp(a[0], c[0], (size_t)na[0] * 4), 0, "another seed, another split");
  int seen[N] = {0}, per_class[3] = {0};
  for (int s = 0; s < 3; s++)
    for (int64_t i = 0; i < na[s]; i++) {
      int32_t v = a[s][i];
      cr_expect(lab[v] >= 0);
      cr_expect_eq(seen[v]++, 0);
      if (i) cr_expect_gt(v, a[s][i - 1], "split not sorted");
      if (s == 0) per_class[lab[v]]++;
    }
  for (int k = 0; k < 3; k++) cr_expect_eq(per_class[k], 150);
  for (int s = 0; s < 3; s++) {
    free(a[s]);
    free(b[s]);
    free(c[s]);
  }
}

/* ---- the shared public datasets ------------------------------------- */

static char *shared(const char *name) {
  const char *root = getenv("HS_SHARED_DATASETS");
  if (!root) return NULL;
  char *p = tu_path(root, name);
  struct stat sb;
  if (stat(p, &sb) != 0) {
    free(p);
    return NULL;
  }
  return p;
}

Test(import, cora_shared_copy, .timeout = 120) {
  char *src = shared("cora");
  if (!src) cr_skip_test("HS_SHARED_DATASETS has no cora");
  char *root = tu_mkdtemp();
  char *dst = tu_path(root, "cora");
  hs_convert_opts o;
  hs_convert_opts_init(&o, HS_IMPORT_LINQS);
  o.undirected = o.dedup = true;
  hs_dataset_info info;
  hs_dataset_info_init(&info);
  cr_assert_eq(hs_convert(src, dst, &o, &info), HS_OK, "%s", hs_last_error());
  cr_expect_eq(info.num_vertices, 2708);
  cr_expect_eq(info.num_features, 1433);
  cr_expect_eq(info.num_classes, 7);
  cr_expect_eq(info.num_edges, 10556);
  cr_expect_eq(info.split_size[0] + info.split_size[1] + info.split_size[2], 2708);
  free(src);
  free(dst);
  tu_rmtree(root);
}

Test(import, cora_shipped_gzip_copy, .timeout = 120) {
  const char *srcroot = getenv("HS_SOURCE_ROOT");
  cr_assert(srcroot);
  char *src = tu_path(srcroot, "data/cora");
  char *root = tu_mkdtemp();
  char *dst = tu_path(root, "cora");
  hs_convert_opts o;
  hs_convert_opts_init(&o, HS_IMPORT_LINQS);
  o.undirected = o.dedup = true;
  hs_dataset_info info;
  hs_dataset_info_init(&info);
  cr_assert_eq(hs_convert(src, dst, &o, &info), HS_OK, "%s", hs_last_error());
  cr_expect_eq(info.num_vertices, 2708);
  cr_expect_eq(info.num_features, 1433);
  cr_expect_eq(info.num_classes, 7);
  cr_expect_eq(info.num_edges, 10556);
  free(src);
  free(dst);
  tu_rmtree(root);
}

Test(import, musae_facebook_shared_copy, .timeout = 300) {
  char *src = shared("musae_facebook");
  if (!src) cr_skip_test("HS_SHARED_DATASETS has no musae_facebook");
  char *root = tu_mkdtemp();
  char *dst = tu_path(root, "fb");
  hs_convert_opts o;
  hs_convert_opts_init(&o, HS_IMPORT_MUSAE);
  o.undirected = o.dedup = true;
  o.self_loops = HS_SELF_LOOPS_DROP;
  hs_dataset_info info;
  hs_dataset_info_init(&info);
  cr_assert_eq(hs_convert(src, dst, &o, &info), HS_OK, "%s", hs_last_error());
  cr_expect_eq(info.num_vertices, 22470);
  cr_expect_eq(info.num_classes, 4);
  cr_expect_eq(info.num_features, 4714);
  /* 170823 undirected non-loop pairs (SOURCE.md), both directions. */
  cr_expect_eq(info.num_edges, 2 * 170823);
  free(src);
  free(dst);
  tu_rmtree(root);
}

static void write_gz(const char *path, const char *text, int cut) {
  gzFile f = gzopen(path, "wb9");
  cr_assert(f);
  gzwrite(f, text, (unsigned)strlen(text));
  gzclose(f);
  if (cut) {
    struct stat sb;
    cr_assert_eq(stat(path, &sb), 0);
    cr_assert_eq(truncate(path, sb.st_size - cut), 0);
  }
}

Test(import, gzip_truncated_or_corrupt_is_a_format_error) {
  char *root = tu_mkdtemp();
  char *p = tu_path(root, "g.txt.gz");
  char text[4096] = "";
  for (int i = 0; i < 200; i++) sprintf(text + strlen(text), "%d %d\n", i, i + 1);
  write_gz(p, text, 0);
  hs_convert_opts o;
  hs_convert_opts_init(&o, HS_IMPORT_EDGELIST);
  char *dst = tu_path(root, "out");
  hs_dataset_info info;
  hs_dataset_info_init(&info);
  /* Named without ".gz": the twin is found. */
  char *plain = tu_path(root, "g.txt");
  cr_assert_eq(hs_convert(plain, dst, &o, &info), HS_OK, "%s", hs_last_error());
  cr_expect_eq(info.num_vertices, 201);
  write_gz(p, text, 12); /* cut the trailer and some data */
  o.force = true;
  TU_EXPECT_FAIL(hs_convert(p, dst, &o, NULL), HS_ERR_FORMAT, "g.txt.gz", "byte", "unexpected end");
  /* The existing dataset survives a failed replacement. */
  hs_dataset *ds;
  cr_expect_eq(hs_dataset_open(dst, &ds), HS_OK, "%s", hs_last_error());
  hs_dataset_close(ds);
  write_gz(p, text, 0);
  FILE *f = fopen(p, "r+b");
  cr_assert(f);
  fseek(f, -6, SEEK_END); /* inside the CRC-32 */
  fputc(0x5a, f);
  fclose(f);
  TU_EXPECT_FAIL(hs_convert(p, dst, &o, NULL), HS_ERR_FORMAT, "g.txt.gz", "byte", "check");
  cr_expect_eq(tu_count_prefix(root, "out.tmp-"), 0);
  free(p);
  free(plain);
  free(dst);
  tu_rmtree(root);
}
