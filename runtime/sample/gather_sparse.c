/* Host gather of sparse feature rows (see hs_gather.h): a batch's rows as
 * CSR, only their non-zeros copied. */
#include <stdatomic.h>
#include <string.h>

#include "hs_base.h"
#include "hs_gather.h"

typedef struct sp_job {
  const hs_gather_sparse_req *r;
  atomic_int bad;
} sp_job;

/* out_ptr[i + 1] = length of row ids[i] (slice of the rows). */
static void lengths(void *arg, int t, int n_threads) {
  sp_job *job = arg;
  const hs_gather_sparse_req *r = job->r;
  int32_t b = (int32_t)((int64_t)r->n * t / n_threads);
  int32_t e = (int32_t)((int64_t)r->n * (t + 1) / n_threads);
  for (int32_t i = b; i < e; i++) {
    int32_t id = r->ids[i];
    if (id < 0 || id >= r->n_rows) {
      atomic_store(&job->bad, 1);
      r->out_ptr[i + 1] = 0;
      continue;
    }
    r->out_ptr[i + 1] = (int32_t)(r->ptr[id + 1] - r->ptr[id]);
  }
}

static void copies(void *arg, int t, int n_threads) {
  sp_job *job = arg;
  const hs_gather_sparse_req *r = job->r;
  int32_t b = (int32_t)((int64_t)r->n * t / n_threads);
  int32_t e = (int32_t)((int64_t)r->n * (t + 1) / n_threads);
  for (int32_t i = b; i < e; i++) {
    int64_t src = r->ptr[r->ids[i]];
    int32_t dst = r->out_ptr[i], len = r->out_ptr[i + 1] - dst;
    memcpy(r->out_col + dst, r->col + src, (size_t)len * sizeof(int32_t));
    if (!r->val) continue;
    if (!r->val_half) {
      memcpy(r->out_val + dst, (const float *)r->val + src, (size_t)len * sizeof(float));
      continue;
    }
    const uint16_t *h = (const uint16_t *)r->val + src;
    for (int32_t k = 0; k < len; k++) r->out_val[dst + k] = hs__half_to_float(h[k]);
  }
}

hs_status hs__gather_sparse(hs_gather_pool *p, const hs_gather_sparse_req *r) {
  if (r->n < 0 || !r->out_ptr || (r->n > 0 && (!r->ids || !r->ptr)))
    return hs__fail(HS_ERR_INVALID_ARG, "sparse gather of %d rows", r->n);
  sp_job job = {.r = r, .bad = 0};
  r->out_ptr[0] = 0;
  if (r->n == 0) return HS_OK;
  hs__gather_pool_run(p, lengths, &job);
  if (atomic_load(&job.bad))
    return hs__fail(HS_ERR_RANGE, "sparse gather: an id is outside the %lld rows of the table",
                    (long long)r->n_rows);
  /* The prefix sum: one pass over n counts, cheaper than the handoff of a
   * parallel scan at batch sizes. */
  int64_t run = 0;
  for (int32_t i = 0; i < r->n; i++) {
    run += r->out_ptr[i + 1];
    if (run > r->cap || run > INT32_MAX)
      return hs__fail(HS_ERR_RANGE, "sparse gather: %d rows hold more than %lld entries", r->n,
                      (long long)(r->cap < INT32_MAX ? r->cap : INT32_MAX));
    r->out_ptr[i + 1] = (int32_t)run;
  }
  hs__gather_pool_run(p, copies, &job);
  return HS_OK;
}
