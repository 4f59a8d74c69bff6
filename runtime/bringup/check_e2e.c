/* End-to-end: one epoch of the bundled Cora through a training session
 * (sampler, gather and trainer stages on the pipeline) for each role
 * placement the profile allows: the profile's own, and, where it cuts a
 * CPU into sub-devices, both roles on the whole device as well. A role on a
 * simulator trains bring-up's generated graph instead (24 features against
 * Cora's 1433: the same kernels, small enough to simulate). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "hetsage/session.h"
#include "hs_bringup_int.h"

static void run_one(hs__bu *b, const hs_board_profile *prof, const char *what, bool small) {
  hs_dataset *ds = small ? b->data.gen_ds : b->data.cora_ds;
  const hs_graph *g = small ? b->data.gen : b->data.cora;
  double t0 = hs__now();
  hs_session_config cfg;
  hs_session_config_init(&cfg);
  cfg.fanouts[0] = 10;
  cfg.fanouts[1] = 5;
  cfg.batch_size = 256;
  cfg.hidden = 64;
  cfg.seed = 1;
  cfg.profile = prof;
  hs_session *s = NULL;
  hs_epoch_stats es;
  hs_epoch_stats_init(&es);
  double acc = 0.0;
  char plan[256] = "";
  char name[64];
  snprintf(name, sizeof name, "%s", what);
  hs_status st = hs_session_create(b->rt, ds, &cfg, &s);
  if (st == HS_OK) {
    /* lines 2-4 of the plan say where the roles went and how they link */
    char full[4096];
    hs_session_describe(s, full, sizeof full);
    const char *line = full;
    for (int i = 0; i < 4 && *line; i++) {
      size_t n = strcspn(line, "\n");
      if (i > 0) {
        const char *cut = strstr(line, ", budget");
        size_t keep = cut && (size_t)(cut - line) < n ? (size_t)(cut - line) : n;
        size_t used = strlen(plan);
        snprintf(plan + used, sizeof plan - used, "%s%.*s", i > 1 ? "; " : "", (int)keep, line);
      }
      line += n + (line[n] == '\n');
    }
    st = hs_session_train_epoch(s, &es);
  }
  if (st == HS_OK) st = hs_session_evaluate_full(s, HS_SPLIT_VALID, &acc);
  if (st != HS_OK) {
    hs__bu_recordf(b, "e2e", name, HS_CHECK_FAIL, hs__now() - t0, "%s: %s", hs_strerror(st),
                   hs_last_error());
    hs_session_destroy(s);
    return;
  }
  int64_t want = (g->split_n[HS_SPLIT_TRAIN] + cfg.batch_size - 1) / cfg.batch_size;
  double busiest = 0;
  for (int i = 0; i < HS_STAGE_COUNT_; i++)
    if (es.stage_busy_s[i] > busiest) busiest = es.stage_busy_s[i];
  char metric[64];
  snprintf(metric, sizeof metric, "%s.epoch_s", what);
  hs__bu_measure(b, "e2e", metric, "s", es.wall_s, es.wall_s, es.wall_s, 0, true);
  if (busiest > 0) {
    double r = es.wall_s / busiest;
    snprintf(metric, sizeof metric, "%s.wall_over_busiest_stage", what);
    hs__bu_measure(b, "e2e", metric, "ratio", r, r, r, 0, true);
  }
  /* One epoch of Cora reaches far above chance (1/7) on the validation
   * split; 0.3 leaves room for any honest device. The generated graph's 4
   * classes (chance 0.25) are separable to 0.57 by a vertex's features
   * alone (its meta.json): 0.3 is above chance there too. */
  bool ok = es.batches == want && isfinite(es.loss) && es.loss > 0 && acc >= 0.3;
  hs__bu_recordf(b, "e2e", name, ok ? HS_CHECK_PASS : HS_CHECK_FAIL, hs__now() - t0,
                 "%s; 1 epoch of %s, %lld of %lld batches of 256, loss %.4f, validation "
                 "accuracy %.3f (needs >= 0.3), %s pipeline, epoch %.2f s, wall / busiest stage "
                 "%.2f",
                 plan, small ? "the generated R-MAT graph (a simulator takes a role)" : "Cora",
                 (long long)es.batches, (long long)want, es.loss, acc,
                 hs_pipeline_mode_name(es.pipeline), es.wall_s,
                 busiest > 0 ? es.wall_s / busiest : 0.0);
  hs_session_destroy(s);
}

void hs__bu_e2e(hs__bu *b) {
  hs_placement *pl = NULL;
  double t0 = hs__now();
  hs_status st = hs__bu_place(b, &pl);
  if (st != HS_OK) {
    hs__bu_recordf(b, "e2e", "placement", HS_CHECK_FAIL, hs__now() - t0, "%s: %s",
                   hs_strerror(st), hs_last_error());
    return;
  }
  hs_role_link link = pl->link;
  bool small = pl->sampler.simulator || pl->trainer.simulator;
  hs_placement_free(pl);
  run_one(b, b->prof, hs_role_link_name(link), small);
  if (link == HS_LINK_SUB_DEVICES) {
    /* Borrowed fields only: the copy is never freed. */
    hs_board_profile whole = *b->prof;
    whole.split.sub_devices = false;
    run_one(b, &whole, hs_role_link_name(HS_LINK_SAME_DEVICE), small);
  }
}
