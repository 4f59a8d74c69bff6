/* Replaying an epoch's batches on a profiling trainer: where the training
 * step's time goes, kernel by kernel, for the benchmarks (bench_profile)
 * through the engine's interface (core/hs_engine.h). The batches are
 * sampled and gathered as the session does, one at a time, and trained by
 * a second trainer of the session's model and device whose queue records
 * profiling events. */
#ifndef HS_REPLAY_H
#define HS_REPLAY_H

#include "hetsage/session.h"
#include "nn/trainer.h"

typedef struct hs__replay hs__replay;

/* Times of one replayed batch, in seconds of host time. */
typedef struct hs__replay_batch_times {
  double sample_gather_s; /* sampling and gathering the batch */
  double upload_s;        /* handing it to the trainer */
  double enqueue_s;       /* enqueueing the step */
  double step_s;          /* the step, enqueued and finished */
} hs__replay_batch_times;

/* Replay epoch `epoch` of `s` (borrowed; it must outlive the replay): the
 * epoch's order is drawn, the model copied from the session's trainer. */
hs_status hs__replay_open(hs_session *s, int64_t epoch, hs__replay **out);
int64_t hs__replay_batches(const hs__replay *r);
/* Replay batch `b` (0 <= b < hs__replay_batches). */
hs_status hs__replay_batch(hs__replay *r, int64_t b, hs__replay_batch_times *t);
/* The profiling trainer's kernel times so far (hs__trainer_times). */
hs_status hs__replay_times(hs__replay *r, hs_train_times *out);
void hs__replay_close(hs__replay *r);

#endif
