/* Every sampling mode reaches training: an epoch of a session on Cora with
 * edge weights, in each mode (uniform, weighted, threshold, with
 * replacement, under a vertex budget), equals bit for bit the same epoch
 * replayed from the plain-C reference sampler through the trainer; the
 * modes give different models; weighted modes on a dataset without weights
 * are refused before any work. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "data/hs_npy.h"
#include "hetsage.h"
#include "hs_test_util.h"
#include "session/hs_session_int.h"
#include "tool_run.h"

static hs_runtime *rt;
static hs_dataset *plain, *weighted;
static char *dir;

/* The bundled Cora with weights.npy beside its files (symbolic links):
 * each edge's weight a fixed function of its position, in (0, 1]. */
static void setup(void) {
  hs_status st = hs_runtime_open(&rt, NULL);
  if (st == HS_ERR_NO_DEVICE) cr_skip_test("no OpenCL device: %s", hs_last_error());
  cr_assert_eq(st, HS_OK, "%s", hs_last_error());
  char cora[1024];
  cr_assert_eq(hs_dataset_bundled(rt, "cora", cora, sizeof cora), HS_OK, "%s", hs_last_error());
  cr_assert_eq(hs_dataset_open(cora, &plain), HS_OK, "%s", hs_last_error());
  dir = tu_mkdtemp();
  static const char *const files[] = {"indptr.npy",    "indices.npy",   "feat.npy",
                                      "label.npy",     "train_idx.npy", "valid_idx.npy",
                                      "test_idx.npy"};
  for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
    char *from = tu_path(cora, files[i]), *to = tu_path(dir, files[i]);
    cr_assert_eq(symlink(from, to), 0, "symlink %s", to);
    free(from), free(to);
  }
  hs_dataset_info info;
  hs_dataset_info_init(&info);
  cr_assert_eq(hs_dataset_get_info(plain, &info), HS_OK, "%s", hs_last_error());
  uint64_t e = (uint64_t)info.num_edges;
  float *w = malloc(sizeof(float) * (e ? e : 1));
  for (uint64_t k = 0; k < e; k++) w[k] = (float)((k * 2654435761u) % 1000u + 1u) / 1000.0f;
  char *path = tu_path(dir, "weights.npy");
  cr_assert_eq(hs__npy_write(path, HS_DTYPE_FLOAT32, 1, &e, w), HS_OK, "%s", hs_last_error());
  free(path);
  free(w);
  cr_assert_eq(hs_dataset_open(dir, &weighted), HS_OK, "%s", hs_last_error());
}

static void teardown(void) {
  hs_dataset_close(weighted);
  hs_dataset_close(plain);
  hs_runtime_close(rt);
  tu_rmtree(dir);
}

TestSuite(sampling_train, .init = setup, .fini = teardown, .timeout = 600);

static hs_session_config small(hs_sampling mode) {
  hs_session_config c;
  hs_session_config_init(&c);
  c.batch_size = 128;
  c.hidden = 32;
  c.seed = 3;
  c.sampling = mode;
  c.thresholds[0] = 0.3f;
  c.thresholds[1] = 0.6f;
  return c;
}

static float *params_of(hs_session *s, size_t *n) {
  cr_assert_eq(hs_session_parameters(s, NULL, 0, n), HS_OK);
  float *p = malloc(*n * sizeof *p);
  cr_assert_eq(hs_session_parameters(s, p, *n, n), HS_OK);
  return p;
}

/* The epoch replayed: the session's own shuffle, each batch sampled by the
 * plain-C reference with the session's sampling configuration, gathered on
 * the host, and stepped through a fresh session's trainer. */
static float *replay(const hs_session_config *c, size_t *n) {
  hs_session *s;
  cr_assert_eq(hs_session_create(rt, weighted, c, &s), HS_OK, "%s", hs_last_error());
  cr_assert_eq(hs__session_shuffle(s, 0), HS_OK);
  const hs_graph *g = s->g;
  hs_csr csr = {.n = g->n, .e = g->e, .indptr = g->indptr, .indices = g->indices,
                .weights = g->weights};
  hs_batch_caps caps;
  hs_batch b;
  cr_assert_eq(hs__batch_caps(&s->scfg, &csr, hs__csr_max_degree(&csr), c->batch_size, &caps),
               HS_OK, "%s", hs_last_error());
  cr_assert_eq(hs__batch_alloc(&caps, &b), HS_OK);
  float *feat = malloc(sizeof(float) * (size_t)caps.vertices * (size_t)g->f);
  int32_t *labels = malloc(sizeof(int32_t) * (size_t)c->batch_size);
  const float *table = g->feat;
  for (int64_t k = 0; k < s->n_batches; k++) {
    const int32_t *seeds;
    int32_t m = hs__session_batch_seeds(s, k, &seeds);
    cr_assert_eq(hs__ref_sample_batch(&csr, &s->scfg, seeds, m, 0, (uint32_t)k, &b), HS_OK, "%s",
                 hs_last_error());
    for (int32_t i = 0; i < b.n_vertices; i++)
      memcpy(feat + (size_t)i * (size_t)g->f, table + (size_t)b.ids[i] * (size_t)g->f,
             sizeof(float) * (size_t)g->f);
    for (int32_t i = 0; i < m; i++) labels[i] = g->labels[b.ids[i]];
    hs_nn_block nb[HS_SAMPLE_MAX_LAYERS];
    for (int l = 0; l < b.n_layers; l++)
      nb[l] = (hs_nn_block){.n_dst = b.blocks[l].n_dst, .n_src = b.blocks[l].n_src,
                            .row_ptr = b.blocks[l].row_ptr, .col = b.blocks[l].col};
    hs_nn_batch batch = {.n_layers = b.n_layers, .blocks = nb, .feat = feat, .labels = labels};
    cr_assert_eq(hs__trainer_upload(s->trainer, &batch), HS_OK, "%s", hs_last_error());
    cr_assert_eq(hs__trainer_step(s->trainer, 0, (uint32_t)k), HS_OK, "%s", hs_last_error());
  }
  float *p = params_of(s, n);
  hs__batch_free(&b);
  free(feat);
  free(labels);
  hs_session_destroy(s);
  return p;
}

static float *session_epoch(const hs_session_config *c, size_t *n) {
  hs_session *s;
  cr_assert_eq(hs_session_create(rt, weighted, c, &s), HS_OK, "%s", hs_last_error());
  hs_epoch_stats st;
  hs_epoch_stats_init(&st);
  cr_assert_eq(hs_session_train_epoch(s, &st), HS_OK, "%s", hs_last_error());
  cr_expect(isfinite(st.loss));
  double acc;
  cr_assert_eq(hs_session_evaluate(s, HS_SPLIT_VALID, &acc), HS_OK, "%s", hs_last_error());
  float *p = params_of(s, n);
  hs_session_destroy(s);
  return p;
}

Test(sampling_train, each_mode_equals_its_reference_over_an_epoch) {
  struct {
    const char *name;
    hs_sampling mode;
    bool replace;
    int64_t budget;
  } modes[] = {
      {"uniform", HS_SAMPLING_UNIFORM, false, 0},
      {"uniform with replacement", HS_SAMPLING_UNIFORM, true, 0},
      {"weighted", HS_SAMPLING_WEIGHTED, false, 0},
      {"weighted with replacement", HS_SAMPLING_WEIGHTED, true, 0},
      {"threshold", HS_SAMPLING_THRESHOLD, false, 0},
      {"uniform under a budget of 600 vertices", HS_SAMPLING_UNIFORM, false, 600},
  };
  size_t n_modes = sizeof modes / sizeof modes[0];
  float *got[8];
  size_t n = 0;
  for (size_t i = 0; i < n_modes; i++) {
    hs_session_config c = small(modes[i].mode);
    c.replace = modes[i].replace;
    c.vertex_budget = modes[i].budget;
    size_t n_s, n_r;
    got[i] = session_epoch(&c, &n_s);
    float *want = replay(&c, &n_r);
    cr_assert_eq(n_s, n_r);
    n = n_s;
    cr_expect_arr_eq(got[i], want, n * sizeof(float),
                     "%s: the session's epoch differs from the reference sampler's", modes[i].name);
    free(want);
  }
  /* Each mode trains a model of its own. */
  for (size_t i = 1; i < n_modes; i++)
    cr_expect_neq(memcmp(got[i], got[0], n * sizeof(float)), 0, "%s trained the uniform model",
                  modes[i].name);
  for (size_t i = 0; i < n_modes; i++) free(got[i]);
}

/* The command line reaches the same sampler: `hetsage train --sampling
 * weighted` for an epoch saves the parameters of the reference's epoch, and
 * on a dataset without weights it stops as for bad usage, naming the
 * missing file. */
Test(sampling_train, the_command_line_trains_weighted_like_the_reference) {
  char *ckdir = tu_path(dir, "ck"), args[4096], out[8192];
  snprintf(args, sizeof args,
           "train --dataset %s --sampling weighted --epochs 1 --batch 128 --hidden 32 --seed 3 "
           "-q --checkpoint %s",
           dir, ckdir);
  cr_assert_eq(tool_run("", args, out, sizeof out), 0, "%s", out);
  hs_session_config c = small(HS_SAMPLING_WEIGHTED);
  char *ckpt = tu_path(ckdir, "last.ckpt");
  hs_session *s;
  cr_assert_eq(hs_session_create(rt, weighted, &c, &s), HS_OK, "%s", hs_last_error());
  cr_assert_eq(hs_session_load(s, ckpt), HS_OK, "%s", hs_last_error());
  size_t n_cli, n_ref;
  float *cli = params_of(s, &n_cli);
  hs_session_destroy(s);
  float *want = replay(&c, &n_ref);
  cr_assert_eq(n_cli, n_ref);
  cr_expect_arr_eq(cli, want, n_ref * sizeof(float),
                   "hetsage train --sampling weighted differs from the reference sampler's epoch");
  free(cli), free(want), free(ckpt), free(ckdir);
  char cora[1024];
  cr_assert_eq(hs_dataset_bundled(rt, "cora", cora, sizeof cora), HS_OK, "%s", hs_last_error());
  snprintf(args, sizeof args, "train --dataset %s --sampling weighted --epochs 1 -q", cora);
  cr_expect_eq(tool_run("", args, out, sizeof out), 2, "%s", out); /* a setting the data refuse */
  cr_expect(strstr(out, "no weights.npy") != NULL, "%s", out);
}

Test(sampling_train, weighted_modes_need_weights_and_bad_settings_are_refused) {
  hs_session *s = NULL;
  static const hs_sampling need[] = {HS_SAMPLING_WEIGHTED, HS_SAMPLING_THRESHOLD};
  for (int i = 0; i < 2; i++) {
    hs_session_config c = small(need[i]);
    cr_expect_eq(hs_session_create(rt, plain, &c, &s), HS_ERR_INVALID_ARG);
    cr_expect(strstr(hs_last_error(), "no weights.npy") != NULL, "%s", hs_last_error());
    cr_expect(strstr(hs_last_error(), hs_sampling_name(need[i])) != NULL, "%s", hs_last_error());
    cr_expect_null(s);
  }
  hs_session_config c = small(HS_SAMPLING_THRESHOLD);
  c.replace = true;
  cr_expect_eq(hs_session_create(rt, weighted, &c, &s), HS_ERR_INVALID_ARG);
  cr_expect(strstr(hs_last_error(), "without replacement") != NULL, "%s", hs_last_error());
  c = small(HS_SAMPLING_UNIFORM);
  c.vertex_budget = 100; /* less than a batch of 128 seeds */
  cr_expect_eq(hs_session_create(rt, weighted, &c, &s), HS_ERR_INVALID_ARG);
  cr_expect(strstr(hs_last_error(), "vertex_budget = 100") != NULL, "%s", hs_last_error());
  c = small((hs_sampling)9);
  cr_expect_eq(hs_session_create(rt, weighted, &c, &s), HS_ERR_INVALID_ARG);
  hs_sampling m;
  cr_expect_eq(hs_sampling_parse("weighted", &m), HS_OK);
  cr_expect_eq(m, HS_SAMPLING_WEIGHTED);
  cr_expect_eq(hs_sampling_parse("random", &m), HS_ERR_INVALID_ARG);
}
