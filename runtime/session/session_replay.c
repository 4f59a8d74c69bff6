/* Replaying an epoch's batches on a profiling trainer (hs_replay.h). */
#include <stdlib.h>

#include "hs_launch.h"
#include "hs_replay.h"
#include "hs_session_int.h"

struct hs__replay {
  hs_session *s;
  cl_command_queue q;
  hs_trainer *t;
  int64_t epoch;
};

hs_status hs__replay_open(hs_session *s, int64_t epoch, hs__replay **out) {
  *out = NULL;
  hs__replay *r = calloc(1, sizeof *r);
  if (!r) return hs__fail(HS_ERR_NOMEM, "replay");
  r->s = s;
  r->epoch = epoch;
  hs_trainer_opts to = {.gemm = HS_GEMM_AUTO, .gemm_threads = (int)s->tdev.info.compute_units,
                        .profile = true};
  hs_status st;
  if ((st = hs__queue_create(&s->tctx, &s->tdev, HS_QUEUE_PROFILING, &r->q)) != HS_OK ||
      (st = hs__trainer_sync_model(s->trainer, &s->model)) != HS_OK ||
      (st = hs__trainer_create(&s->tctx, &s->tdev, r->q, &s->model, &to, &r->t)) != HS_OK ||
      (st = hs__session_shuffle(s, epoch)) != HS_OK) {
    hs__replay_close(r);
    return st;
  }
  *out = r;
  return HS_OK;
}

int64_t hs__replay_batches(const hs__replay *r) { return r->s->n_batches; }

hs_status hs__replay_batch(hs__replay *r, int64_t b, hs__replay_batch_times *t) {
  hs_session *s = r->s;
  const int32_t *seeds;
  int32_t n = hs__session_batch_seeds(s, b, &seeds);
  hs_slot_data *d = &s->slots[0];
  double a = hs__now();
  hs_status st = hs__session_sample_gather(s, seeds, n, (uint32_t)r->epoch, (uint32_t)b, d);
  if (st != HS_OK) return st;
  double u = hs__now();
  hs_nn_batch bt;
  hs__session_nn_batch(d, &bt);
  if ((st = hs__trainer_upload(r->t, &bt)) != HS_OK) return st;
  double e0 = hs__now();
  if ((st = hs__trainer_step(r->t, (uint32_t)r->epoch, (uint32_t)b)) != HS_OK) return st;
  double e1 = hs__now();
  if ((st = hs__queue_finish(r->q)) != HS_OK) return st;
  double e2 = hs__now();
  *t = (hs__replay_batch_times){u - a, e0 - u, e1 - e0, e2 - e0};
  return HS_OK;
}

hs_status hs__replay_times(hs__replay *r, hs_train_times *out) {
  return hs__trainer_times(r->t, out);
}

void hs__replay_close(hs__replay *r) {
  if (!r) return;
  hs__trainer_destroy(r->t);
  hs__queue_release(&r->q);
  free(r);
}
