/* Embedding hetsage: train GraphSAGE on a dataset, then predict, through the
 * public API only. Build: cc embed.c $(pkg-config --cflags --libs hetsage)
 * Run:   ./embed [DATASET_DIR]   (default: the bundled Cora) */
#include <hetsage.h>
#include <stdio.h>

static int fail(const char *what, hs_status st) {
  fprintf(stderr, "embed: %s: %s: %s\n", what, hs_strerror(st), hs_last_error());
  return 1;
}

int main(int argc, char **argv) {
  char bundled[1024];
  const char *path = argc > 1 ? argv[1] : NULL;
  hs_status st;
  hs_runtime *rt = NULL;
  hs_dataset *ds = NULL;
  hs_session *s = NULL;
  int rc = 1;
  if ((st = hs_runtime_open(&rt, NULL)) != HS_OK) return fail("devices", st);
  if (!path) {
    if ((st = hs_dataset_bundled(rt, "cora", bundled, sizeof bundled)) != HS_OK) {
      rc = fail("bundled Cora", st);
      goto out;
    }
    path = bundled;
  }
  if ((st = hs_dataset_open(path, &ds)) != HS_OK) {
    rc = fail(path, st);
    goto out;
  }

  hs_session_config cfg;
  hs_session_config_init(&cfg); /* 2 layers, fanouts 25,10, hidden 128, Adam */
  cfg.batch_size = 256;
  if ((st = hs_session_create(rt, ds, &cfg, &s)) != HS_OK) {
    rc = fail("session", st);
    goto out;
  }

  for (int epoch = 0; epoch < 10; epoch++) {
    hs_epoch_stats es;
    hs_epoch_stats_init(&es);
    if ((st = hs_session_train_epoch(s, &es)) != HS_OK) {
      rc = fail("training", st);
      goto out;
    }
    printf("epoch %d: loss %.4f, %.2f s\n", epoch + 1, es.loss, es.wall_s);
  }

  double acc;
  if ((st = hs_session_evaluate_full(s, HS_SPLIT_TEST, &acc)) != HS_OK) {
    rc = fail("evaluation", st);
    goto out;
  }
  printf("test accuracy %.4f\n", acc);

  /* An appliance that only predicts would load a checkpoint and do this. */
  int64_t ids[3] = {0, 1, 2};
  int32_t classes[3];
  if ((st = hs_session_predict(s, ids, 3, classes, NULL)) != HS_OK) {
    rc = fail("prediction", st);
    goto out;
  }
  for (int i = 0; i < 3; i++) printf("vertex %lld -> class %d\n", (long long)ids[i], classes[i]);
  rc = 0;
out:
  hs_session_destroy(s);
  hs_dataset_close(ds);
  hs_runtime_close(rt);
  return rc;
}
