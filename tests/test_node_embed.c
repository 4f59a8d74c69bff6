/* Learnable node embeddings (hs_session_config.node_embedding): a graph
 * without features trains from each vertex's row in the host store; the
 * rows learn the graph's communities; the same bits whatever the pipeline
 * driver and depth; checkpoints keep the rows (a resumed run ends with the
 * uninterrupted run's bits); rows beside features; clear refusals. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hetsage.h"
#include "hs_test_util.h"
#include "tool_run.h"

static hs_runtime *rt;
static char *root, *bare_dir, *feat_dir;
static hs_dataset *bare, *featured;

/* An SBM of 4 communities, strongly homophilous, with weak features; the
 * bare copy is the same graph with feat.npy removed. */
static void setup(void) {
  hs_status st = hs_runtime_open(&rt, NULL);
  if (st == HS_ERR_NO_DEVICE) cr_skip_test("no OpenCL device: %s", hs_last_error());
  cr_assert_eq(st, HS_OK, "%s", hs_last_error());
  root = tu_mkdtemp();
  hs_generate_opts o;
  hs_generate_opts_init(&o, HS_GENERATE_SBM);
  o.num_vertices = 3000;
  o.num_classes = 4;
  o.edge_factor = 8;
  o.homophily = 0.8;
  o.num_features = 8;
  o.seed = 5;
  feat_dir = tu_path(root, "sbm");
  cr_assert_eq(hs_generate(feat_dir, &o, NULL, NULL), HS_OK, "%s", hs_last_error());
  bare_dir = tu_path(root, "bare");
  cr_assert_eq(hs_generate(bare_dir, &o, NULL, NULL), HS_OK, "%s", hs_last_error());
  char *f = tu_path(bare_dir, "feat.npy");
  cr_assert_eq(unlink(f), 0, "%s", f);
  free(f);
  cr_assert_eq(hs_dataset_open(bare_dir, &bare), HS_OK, "%s", hs_last_error());
  cr_assert_eq(hs_dataset_open(feat_dir, &featured), HS_OK, "%s", hs_last_error());
}

static void teardown(void) {
  hs_dataset_close(bare);
  hs_dataset_close(featured);
  hs_runtime_close(rt);
  free(bare_dir);
  free(feat_dir);
  if (root) tu_rmtree(root);
}

TestSuite(node_embed, .init = setup, .fini = teardown, .timeout = 600);

static void base_cfg(hs_session_config *c) {
  hs_session_config_init(c);
  c->n_layers = 2;
  c->fanouts[0] = 10;
  c->fanouts[1] = 5;
  c->batch_size = 128;
  c->hidden = 32;
  c->dropout = 0;
  c->seed = 7;
  c->node_embedding = 16;
  c->node_embedding_lr = 0.1f;
}

static hs_session *make(hs_dataset *ds, const hs_session_config *c) {
  hs_session *s;
  cr_assert_eq(hs_session_create(rt, ds, c, &s), HS_OK, "%s", hs_last_error());
  return s;
}

static double test_acc(hs_session *s) {
  double acc;
  cr_assert_eq(hs_session_evaluate_full(s, HS_SPLIT_TEST, &acc), HS_OK, "%s", hs_last_error());
  return acc;
}

Test(node_embed, featureless_graph_learns_its_communities) {
  hs_session_config c;
  base_cfg(&c);
  hs_session *s = make(bare, &c);
  char desc[4096];
  hs_session_describe(s, desc, sizeof desc);
  cr_expect(strstr(desc, "node embeddings: 16 per vertex") != NULL, "%s", desc);
  double before = test_acc(s);
  for (int e = 0; e < 5; e++) cr_assert_eq(hs_session_train_epoch(s, NULL), HS_OK, "%s", hs_last_error());
  double after = test_acc(s), sampled;
  cr_assert_eq(hs_session_evaluate(s, HS_SPLIT_TEST, &sampled), HS_OK, "%s", hs_last_error());
  /* 4 balanced communities: chance is 0.25. */
  cr_expect_gt(after, 0.6, "test accuracy %.4f after 5 epochs (%.4f before)", after, before);
  cr_expect_gt(sampled, 0.6, "sampled test accuracy %.4f", sampled);
  cr_expect_lt(before, 0.4, "before training: %.4f", before);
  cr_log_info("featureless SBM: test accuracy %.4f before, %.4f after (sampled %.4f)", before,
              after, sampled);
  /* What the rows learn is what carries the communities: rows that barely
   * move leave the model random inputs, from which it cannot generalise. */
  hs_session_config frozen = c;
  frozen.node_embedding_lr = 1e-6f;
  hs_session *f = make(bare, &frozen);
  for (int e = 0; e < 5; e++) cr_assert_eq(hs_session_train_epoch(f, NULL), HS_OK, "%s", hs_last_error());
  double still = test_acc(f);
  hs_session_destroy(f);
  cr_expect_lt(still, 0.45, "rows at lr 1e-6: test accuracy %.4f", still);
  cr_log_info("rows at lr 1e-6: test accuracy %.4f", still);
  hs_session_destroy(s);
}

/* Parameters and every vertex's first-layer output (which reads every
 * row). */
static float *session_bits(hs_session *s, size_t *n) {
  size_t np;
  cr_assert_eq(hs_session_parameters(s, NULL, 0, &np), HS_OK);
  int d = hs_session_embed_dim(s, 1);
  size_t ne = 3000 * (size_t)d;
  float *out = malloc((np + ne) * sizeof *out);
  cr_assert_eq(hs_session_parameters(s, out, np, &np), HS_OK);
  cr_assert_eq(hs_session_embed(s, 1, out + np, ne), HS_OK, "%s", hs_last_error());
  *n = np + ne;
  return out;
}

/* The bits after two epochs. */
static float *run_bits(const hs_session_config *c, size_t *n) {
  hs_session *s = make(bare, c);
  for (int e = 0; e < 2; e++) cr_assert_eq(hs_session_train_epoch(s, NULL), HS_OK, "%s", hs_last_error());
  float *out = session_bits(s, n);
  hs_session_destroy(s);
  return out;
}

Test(node_embed, same_bits_whatever_the_driver_and_depth) {
  hs_session_config c;
  base_cfg(&c);
  c.pipeline = HS_PIPELINE_OFF;
  size_t n0;
  float *ref = run_bits(&c, &n0);
  const hs_pipeline_mode modes[2] = {HS_PIPELINE_THREADS, HS_PIPELINE_ASYNC};
  for (int k = 0; k < 2; k++) {
    c.pipeline = modes[k];
    c.depth = 4;
    size_t n1;
    float *b = run_bits(&c, &n1);
    cr_assert_eq(n0, n1);
    cr_expect_eq(memcmp(ref, b, n0 * sizeof *b), 0, "%s driver at depth 4 differs from one "
                 "batch at a time", hs_pipeline_mode_name(modes[k]));
    free(b);
  }
  /* Another seed draws other rows. */
  c.seed = 8;
  size_t n2;
  float *o = run_bits(&c, &n2);
  cr_expect_neq(memcmp(ref, o, n0 * sizeof *o), 0);
  free(o);
  free(ref);
}

/* The rows travel with the checkpoint: a run stopped after its first
 * epoch and resumed from the file ends with the uninterrupted run's bits,
 * and a session created from the file alone predicts as the trained one. */
Test(node_embed, checkpoint_keeps_the_rows) {
  hs_session_config c;
  base_cfg(&c);
  size_t n0;
  float *ref = run_bits(&c, &n0);
  char *p1 = tu_path(root, "epoch1.ckpt"), *p2 = tu_path(root, "epoch2.ckpt");
  hs_session *a = make(bare, &c);
  cr_assert_eq(hs_session_train_epoch(a, NULL), HS_OK, "%s", hs_last_error());
  cr_assert_eq(hs_session_save(a, p1), HS_OK, "%s", hs_last_error());
  hs_session_destroy(a);

  /* The file restores the option, width and rate. */
  hs_session_config r;
  hs_session_config_init(&r);
  r.pipeline = c.pipeline;
  cr_assert_eq(hs_session_config_from_checkpoint(p1, &r), HS_OK, "%s", hs_last_error());
  cr_expect_eq(r.node_embedding, 16);
  cr_expect_eq(r.node_embedding_lr, 0.1f);
  hs_session *b = make(bare, &r);
  cr_assert_eq(hs_session_resume(b, p1, 0), HS_OK, "%s", hs_last_error());
  cr_assert_eq(hs_session_train_epoch(b, NULL), HS_OK, "%s", hs_last_error());
  size_t n1;
  float *got = session_bits(b, &n1);
  cr_assert_eq(n0, n1);
  cr_expect_eq(memcmp(ref, got, n0 * sizeof *got), 0, "the resumed run differs from the "
               "uninterrupted one");
  double acc_b = test_acc(b);
  cr_assert_eq(hs_session_save(b, p2), HS_OK, "%s", hs_last_error());
  hs_session_destroy(b);

  /* Evaluation from the file: the same rows, so the same outputs. */
  hs_session *e = make(bare, &r);
  cr_assert_eq(hs_session_load(e, p2), HS_OK, "%s", hs_last_error());
  size_t n2;
  float *ev = session_bits(e, &n2);
  cr_expect_eq(memcmp(ref, ev, n0 * sizeof *ev), 0, "a session loaded from the file differs");
  cr_expect_eq(test_acc(e), acc_b);
  cr_expect_gt(acc_b, 0.5, "test accuracy %.4f after 2 epochs", acc_b);
  hs_session_destroy(e);
  free(ev);
  free(got);
  free(ref);
  free(p1);
  free(p2);
}

static void copy_prefix(const char *from, const char *to, long drop) {
  FILE *f = fopen(from, "rb");
  cr_assert(f != NULL);
  fseek(f, 0, SEEK_END);
  long n = ftell(f) - drop;
  fseek(f, 0, SEEK_SET);
  char *buf = malloc((size_t)n + 1);
  cr_assert_eq(fread(buf, 1, (size_t)n, f), (size_t)n);
  fclose(f);
  FILE *g = fopen(to, "wb");
  cr_assert(g != NULL);
  cr_assert_eq(fwrite(buf, 1, (size_t)n, g), (size_t)n);
  fclose(g);
  free(buf);
}

/* Checkpoints without rows (every featured run's, and those of builds that
 * did not keep them) still load where no rows are needed and are refused
 * by name where they are; files with rows load only into sessions that
 * learn them; a torn store is refused. */
Test(node_embed, checkpoints_with_and_without_rows) {
  hs_session_config plain, with;
  base_cfg(&plain);
  plain.node_embedding = 0;
  base_cfg(&with);
  with.node_embedding = 8;
  char *np = tu_path(root, "plain.ckpt"), *wp = tu_path(root, "rows.ckpt"),
       *cut = tu_path(root, "cut.ckpt");
  hs_session *s = make(featured, &plain);
  cr_assert_eq(hs_session_train_epoch(s, NULL), HS_OK, "%s", hs_last_error());
  cr_assert_eq(hs_session_save(s, np), HS_OK, "%s", hs_last_error());
  hs_session_destroy(s);
  s = make(featured, &with);
  cr_assert_eq(hs_session_train_epoch(s, NULL), HS_OK, "%s", hs_last_error());
  cr_assert_eq(hs_session_save(s, wp), HS_OK, "%s", hs_last_error());
  hs_session_destroy(s);

  hs_session_config r;
  hs_session_config_init(&r);
  cr_assert_eq(hs_session_config_from_checkpoint(np, &r), HS_OK, "%s", hs_last_error());
  cr_expect_eq(r.node_embedding, 0);
  s = make(featured, &r);
  cr_expect_eq(hs_session_load(s, np), HS_OK, "%s", hs_last_error());
  cr_expect_eq(hs_session_load(s, wp), HS_ERR_INVALID_ARG);
  cr_expect(strstr(hs_last_error(), "node embeddings of 8 per vertex") != NULL, "%s",
            hs_last_error());
  hs_session_destroy(s);

  s = make(featured, &with);
  cr_expect_eq(hs_session_load(s, np), HS_ERR_INVALID_ARG);
  cr_expect(strstr(hs_last_error(), "holds no node embeddings") != NULL, "%s", hs_last_error());
  cr_expect_eq(hs_session_load(s, wp), HS_OK, "%s", hs_last_error());
  /* The store's last bytes torn off, or all of it. */
  copy_prefix(wp, cut, 3);
  cr_expect_neq(hs_session_load(s, cut), HS_OK);
  cr_expect(strstr(hs_last_error(), cut) != NULL, "%s", hs_last_error());
  hs_session_config_init(&r);
  cr_assert_eq(hs_session_config_from_checkpoint(wp, &r), HS_OK, "%s", hs_last_error());
  cr_expect_eq(r.node_embedding, 8);
  hs_session_destroy(s);
  free(np);
  free(wp);
  free(cut);
}

Test(node_embed, rows_beside_features) {
  hs_session_config c;
  base_cfg(&c);
  c.node_embedding = 8;
  hs_session *s = make(featured, &c);
  cr_expect_eq(hs_session_embed_dim(s, 2), 4);
  for (int e = 0; e < 3; e++) cr_assert_eq(hs_session_train_epoch(s, NULL), HS_OK, "%s", hs_last_error());
  double with = test_acc(s);
  hs_session_destroy(s);
  cr_expect_gt(with, 0.6, "features and rows: test accuracy %.4f", with);
  cr_log_info("SBM with features and 8-wide rows: test accuracy %.4f", with);
}

Test(node_embed, refusals) {
  hs_session_config c;
  hs_session_config_init(&c);
  hs_session *s;
  cr_expect_eq(hs_session_create(rt, bare, &c, &s), HS_ERR_FORMAT);
  cr_expect(strstr(hs_last_error(), "node_embedding") != NULL, "%s", hs_last_error());
  c.node_embedding = -1;
  cr_expect_eq(hs_session_create(rt, bare, &c, &s), HS_ERR_INVALID_ARG);
  cr_expect(strstr(hs_last_error(), "node_embedding") != NULL, "%s", hs_last_error());
  c.node_embedding = 8;
  c.node_embedding_lr = 0;
  cr_expect_eq(hs_session_create(rt, bare, &c, &s), HS_ERR_INVALID_ARG);
  cr_expect(strstr(hs_last_error(), "node_embedding_lr") != NULL, "%s", hs_last_error());
}

Test(node_embed, command_line) {
  char args[2048], out[16384];
  snprintf(args, sizeof args, "train --dataset %s --node-embedding 8 --fanouts 5,5 --batch 256 "
           "--hidden 16 --epochs 1 --json -q", bare_dir);
  cr_assert_eq(tool_run("", args, out, sizeof out), 0, "%s", out);
  cr_expect(strstr(out, "\"test_acc\"") != NULL, "%s", out);
  snprintf(args, sizeof args, "train --dataset %s --epochs 1 -q", bare_dir);
  cr_expect_eq(tool_run("", args, out, sizeof out), 1, "%s", out);
  cr_expect(strstr(out, "--node-embedding") != NULL, "%s", out);
  /* Checkpoints keep the rows: a resumed run and evaluation from the
   * folder work on the bare graph. */
  snprintf(args, sizeof args, "train --dataset %s --node-embedding 8 --fanouts 5,5 --batch 256 "
           "--hidden 16 --epochs 1 --checkpoint %s/ck -q", bare_dir, root);
  cr_expect_eq(tool_run("", args, out, sizeof out), 0, "%s", out);
  snprintf(args, sizeof args, "train --dataset %s --epochs 2 --checkpoint %s/ck --resume -q",
           bare_dir, root);
  cr_expect_eq(tool_run("", args, out, sizeof out), 0, "%s", out);
  snprintf(args, sizeof args, "eval --dataset %s --checkpoint %s/ck --json", bare_dir, root);
  cr_expect_eq(tool_run("", args, out, sizeof out), 0, "%s", out);
  cr_expect(strstr(out, "acc") != NULL, "%s", out);
  /* A run without rows cannot be resumed with them. */
  snprintf(args, sizeof args, "train --dataset %s --fanouts 5,5 --batch 256 --hidden 16 "
           "--epochs 1 --checkpoint %s/plain -q", feat_dir, root);
  cr_expect_eq(tool_run("", args, out, sizeof out), 0, "%s", out);
  snprintf(args, sizeof args, "train --dataset %s --node-embedding 8 --epochs 2 --checkpoint "
           "%s/plain --resume -q", feat_dir, root);
  cr_expect_eq(tool_run("", args, out, sizeof out), 2, "%s", out);
  cr_expect(strstr(out, "holds no node embeddings") != NULL, "%s", out);
  snprintf(args, sizeof args, "train --dataset %s --node-embedding 0 -q", bare_dir);
  cr_expect_eq(tool_run("", args, out, sizeof out), 2, "%s", out);
}
