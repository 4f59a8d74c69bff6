/* Every model kind through the public session API on the bundled Cora:
 * training, a checkpoint that names its model and loads into a new session
 * (evaluation and prediction equal the original's), node embeddings (the
 * right shape, the same bits every time, written atomically), and the
 * command line's embed. */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cora_fixture.h"
#include "data/hs_npy.h"
#include "hetsage.h"
#include "hs_test_util.h"
#include "tool_run.h"

TestSuite(model_sessions, .init = cora_setup, .fini = cora_teardown, .timeout = 600);

enum { CORA_N = 2708 };

static hs_session_config small(hs_model_kind kind) {
  hs_session_config c;
  hs_session_config_init(&c);
  c.model = kind;
  c.batch_size = 256;
  c.hidden = 32;
  c.heads = 4;
  c.seed = 5;
  return c;
}

Test(model_sessions, checkpoints_evaluation_prediction_and_embeddings) {
  static const hs_model_kind kinds[] = {HS_MODEL_SAGE, HS_MODEL_GCN, HS_MODEL_GAT};
  char *dir = tu_mkdtemp();
  for (size_t ki = 0; ki < sizeof kinds / sizeof kinds[0]; ki++) {
    const char *name = hs_model_kind_name(kinds[ki]);
    hs_session_config c = small(kinds[ki]);
    hs_session *s, *again;
    cr_assert_eq(hs_session_create(rt, ds, &c, &s), HS_OK, "%s: %s", name, hs_last_error());
    char desc[4096];
    hs_session_describe(s, desc, sizeof desc);
    cr_expect(strstr(desc, "model: ") != NULL, "%s", desc);
    hs_epoch_stats st;
    hs_epoch_stats_init(&st);
    for (int e = 0; e < 2; e++)
      cr_assert_eq(hs_session_train_epoch(s, &st), HS_OK, "%s: %s", name, hs_last_error());
    cr_expect(isfinite(st.loss), "%s: loss %g", name, st.loss);
    double acc, acc2;
    cr_assert_eq(hs_session_evaluate_full(s, HS_SPLIT_TEST, &acc), HS_OK, "%s", hs_last_error());
    cr_expect_gt(acc, 0.5, "%s: test accuracy %.3f after 2 epochs", name, acc);
    char *ckpt = tu_path(dir, "model.ckpt");
    cr_assert_eq(hs_session_save(s, ckpt), HS_OK, "%s", hs_last_error());

    /* A session made from the checkpoint's configuration is of its model
     * and gives the same answers. */
    hs_session_config from;
    hs_session_config_init(&from);
    cr_assert_eq(hs_session_config_from_checkpoint(ckpt, &from), HS_OK, "%s", hs_last_error());
    cr_expect_eq(from.model, kinds[ki], "%s: the checkpoint's model", name);
    if (kinds[ki] == HS_MODEL_GAT) cr_expect_eq(from.heads, 4);
    cr_assert_eq(hs_session_create(rt, ds, &from, &again), HS_OK, "%s", hs_last_error());
    cr_assert_eq(hs_session_load(again, ckpt), HS_OK, "%s: %s", name, hs_last_error());
    cr_assert_eq(hs_session_evaluate_full(again, HS_SPLIT_TEST, &acc2), HS_OK);
    cr_expect_eq(acc2, acc, "%s: loaded %.4f, trained %.4f", name, acc2, acc);
    int64_t ids[] = {0, 5, 2707, 5};
    int32_t cls[4], cls2[4];
    cr_assert_eq(hs_session_predict(s, ids, 4, cls, NULL), HS_OK, "%s", hs_last_error());
    cr_assert_eq(hs_session_predict(again, ids, 4, cls2, NULL), HS_OK);
    cr_expect_arr_eq(cls, cls2, sizeof cls, "%s: predictions differ after loading", name);
    cr_expect_eq(cls[1], cls[3]);

    /* Embeddings: every vertex, the hidden width, the same bits twice, and
     * the same from the loaded session. */
    int d = hs_session_embed_dim(s, 1);
    cr_expect_eq(d, 32, "%s: hidden layer width %d", name, d);
    cr_expect_eq(hs_session_embed_dim(s, 2), hs_session_num_classes(s));
    cr_expect_eq(hs_session_embed_dim(s, 3), 0);
    size_t count = (size_t)CORA_N * (size_t)d;
    float *e1 = malloc(count * 4), *e2 = malloc(count * 4), *e3 = malloc(count * 4);
    cr_assert_eq(hs_session_embed(s, 1, e1, count), HS_OK, "%s: %s", name, hs_last_error());
    cr_assert_eq(hs_session_embed(s, 1, e2, count), HS_OK);
    cr_assert_eq(hs_session_embed(again, 1, e3, count), HS_OK);
    cr_expect_arr_eq(e1, e2, count * 4, "%s: embeddings differ between two runs", name);
    cr_expect_arr_eq(e1, e3, count * 4, "%s: embeddings differ after loading", name);
    size_t zeros = 0;
    for (size_t i = 0; i < count; i++) {
      cr_assert(isfinite(e1[i]) && e1[i] >= 0.0f, "%s: hidden value %g is not a ReLU output",
                name, (double)e1[i]);
      zeros += e1[i] == 0.0f;
    }
    cr_expect_lt(zeros, count, "%s: every embedding is 0", name);
    cr_expect_eq(hs_session_embed(s, 0, e1, count), HS_ERR_INVALID_ARG);
    cr_expect_eq(hs_session_embed(s, 1, e1, count - 1), HS_ERR_INVALID_ARG);

    /* Written as .npy: the shape and the values, nothing else left. */
    char *out = tu_path(dir, "emb.npy");
    cr_assert_eq(hs_session_embed_save(s, 1, out), HS_OK, "%s", hs_last_error());
    hs__npy_header h;
    int fd;
    cr_assert_eq(hs__npy_open(out, &h, &fd), HS_OK, "%s", hs_last_error());
    cr_expect_eq(h.dtype, HS_DTYPE_FLOAT32);
    cr_expect_eq(h.ndim, 2);
    cr_expect_eq(h.shape[0], (uint64_t)CORA_N);
    cr_expect_eq(h.shape[1], (uint64_t)d);
    cr_assert_eq(pread(fd, e2, count * 4, (off_t)h.data_offset), (ssize_t)(count * 4));
    close(fd);
    cr_expect_arr_eq(e2, e1, count * 4, "%s: the file's values", name);
    cr_expect_eq(tu_count_prefix(dir, "emb.npy"), 1, "%s: temporary files left behind", name);
    char *bad = tu_path(dir, "no-such-dir/emb.npy");
    cr_expect_eq(hs_session_embed_save(s, 1, bad), HS_ERR_IO);
    cr_expect(strstr(hs_last_error(), bad) != NULL, "%s", hs_last_error());
    cr_expect_eq(tu_count_prefix(dir, "emb.npy"), 1);
    /* A failure after the temporary file was written (the target is a
     * directory) leaves it behind neither. */
    char *taken = tu_path(dir, "taken");
    cr_assert_eq(mkdir(taken, 0755), 0);
    tu_write_bytes(taken, "inside", "x", 1);
    cr_expect_eq(hs_session_embed_save(s, 1, taken), HS_ERR_IO);
    cr_expect_eq(tu_count_prefix(dir, "taken"), 1, "%s: the temporary file was left", name);
    char *inside = tu_path(taken, "inside");
    unlink(inside);
    rmdir(taken);
    free(inside), free(taken);
    unlink(out);
    unlink(ckpt);
    free(out), free(bad), free(ckpt), free(e1), free(e2), free(e3);
    hs_session_destroy(again);
    hs_session_destroy(s);
  }
  tu_rmtree(dir);
}

Test(model_sessions, embed_on_the_command_line) {
  char ckdir[512], npy[512], out[4096];
  tool_tmp(ckdir, sizeof ckdir, "ckpt");
  tool_tmp(npy, sizeof npy, "emb.npy");
  char args[2048];
  snprintf(args, sizeof args,
           "train --model gat --heads 2 --hidden 16 --epochs 1 --batch 512 -q --checkpoint %s",
           ckdir);
  cr_assert_eq(tool_run("", args, out, sizeof out), 0, "%s", out);
  /* The GAT checkpoint loads into eval: the test accuracy train printed. */
  const char *at = strstr(out, "test accuracy ");
  double trained = -1.0, evaluated = -2.0;
  cr_assert(at && sscanf(at, "test accuracy %lf", &trained) == 1, "%s", out);
  snprintf(args, sizeof args, "eval --checkpoint %s --json", ckdir);
  cr_assert_eq(tool_run("", args, out, sizeof out), 0, "%s", out);
  at = strstr(out, "\"accuracy\": ");
  cr_assert(at && sscanf(at, "\"accuracy\": %lf", &evaluated) == 1, "%s", out);
  cr_expect(fabs(evaluated - trained) < 1e-4, "eval %f, train %f", evaluated, trained);
  snprintf(args, sizeof args, "embed --checkpoint %s --out %s --json", ckdir, npy);
  cr_assert_eq(tool_run("", args, out, sizeof out), 0, "%s", out);
  cr_expect(strstr(out, "\"rows\": 2708, \"dim\": 16, \"model\": \"gat\"") != NULL, "%s", out);
  hs__npy_header h;
  int fd;
  cr_assert_eq(hs__npy_open(npy, &h, &fd), HS_OK, "%s", hs_last_error());
  close(fd);
  cr_expect_eq(h.shape[0], 2708u);
  cr_expect_eq(h.shape[1], 16u);
  snprintf(args, sizeof args, "embed --checkpoint %s --out %s --layer 5", ckdir, npy);
  cr_expect_eq(tool_run("", args, out, sizeof out), 2, "%s", out);
  cr_expect(strstr(out, "layers 1..2") != NULL, "%s", out);
  snprintf(args, sizeof args, "eval --checkpoint %s --model gcn", ckdir);
  cr_expect_eq(tool_run("", args, out, sizeof out), 1, "%s", out);
  cr_expect(strstr(out, "holds a gat (2 heads) model, this one is gcn") != NULL, "%s", out);
  snprintf(args, sizeof args, "predict --checkpoint %s --ids 1,2 --json", ckdir);
  cr_expect_eq(tool_run("", args, out, sizeof out), 0, "%s", out);
  cr_expect(tool_run("", "embed --help", out, sizeof out) == 0 && strstr(out, "--layer"), "%s",
            out);
  unlink(npy);
  char *d = strdup(ckdir);
  tu_rmtree(d);
}
