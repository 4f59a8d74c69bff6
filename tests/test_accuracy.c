/* Accuracy against a prediction made before training: on a generated SBM,
 * a one-layer mean-aggregator GraphSAGE over full neighbourhoods reaches
 * the accuracy its generator predicts for "features + neighbours' mean"
 * within two points, and a two-layer model, which sees two hops, beats
 * that prediction. */
#include <math.h>

#include "hetsage.h"
#include "hs_test_util.h"

static hs_runtime *rt;
static char *root;

static void setup(void) {
  hs_status st = hs_runtime_open(&rt, NULL);
  if (st == HS_ERR_NO_DEVICE) cr_skip_test("no OpenCL device: %s", hs_last_error());
  cr_assert_eq(st, HS_OK, "%s", hs_last_error());
  root = tu_mkdtemp();
}

static void teardown(void) {
  hs_runtime_close(rt);
  if (root) tu_rmtree(root);
}

TestSuite(accuracy, .init = setup, .fini = teardown, .timeout = 600);

static double train_and_test(hs_dataset *ds, int layers, int epochs) {
  hs_session_config c;
  hs_session_config_init(&c);
  c.n_layers = layers;
  for (int l = 0; l < layers; l++) c.fanouts[l] = l == 0 ? -1 : 10;
  c.hidden = 64;
  c.dropout = 0;
  c.weight_decay = 0;
  c.seed = 3;
  hs_session *s;
  cr_assert_eq(hs_session_create(rt, ds, &c, &s), HS_OK, "%s", hs_last_error());
  for (int e = 0; e < epochs; e++)
    cr_assert_eq(hs_session_train_epoch(s, NULL), HS_OK, "%s", hs_last_error());
  double acc;
  cr_assert_eq(hs_session_evaluate_full(s, HS_SPLIT_TEST, &acc), HS_OK, "%s", hs_last_error());
  hs_session_destroy(s);
  return acc;
}

Test(accuracy, sbm_matches_the_generators_prediction) {
  hs_generate_opts o;
  hs_generate_opts_init(&o, HS_GENERATE_SBM);
  o.num_vertices = 20000;
  o.num_classes = 8;
  o.edge_factor = 10;
  o.homophily = 0.5;
  hs_generate_summary sum;
  hs_generate_summary_init(&sum);
  char *dst = tu_path(root, "sbm");
  cr_assert_eq(hs_generate(dst, &o, NULL, &sum), HS_OK, "%s", hs_last_error());
  hs_dataset *ds;
  cr_assert_eq(hs_dataset_open(dst, &ds), HS_OK, "%s", hs_last_error());
  double one = train_and_test(ds, 1, 40);
  cr_expect(fabs(one - sum.onehop_accuracy) <= 0.02,
            "one layer: test accuracy %.4f, predicted %.4f (features alone %.4f)", one,
            sum.onehop_accuracy, sum.bayes_accuracy);
  double two = train_and_test(ds, 2, 10);
  cr_expect_gt(two, sum.onehop_accuracy + 0.02, "two layers: %.4f, one-hop prediction %.4f", two,
               sum.onehop_accuracy);
  cr_log_info("SBM: predicted %.4f (features alone %.4f); one layer %.4f, two layers %.4f",
              sum.onehop_accuracy, sum.bayes_accuracy, one, two);
  hs_dataset_close(ds);
  free(dst);
}
