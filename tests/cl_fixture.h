/* One OpenCL device, context and in-order profiling queue for a test:
 * the first CPU device (PoCL here), else the first device; the test is
 * skipped when there is none. Header-only (static functions). */
#ifndef HS_TEST_CL_FIXTURE_H
#define HS_TEST_CL_FIXTURE_H

#include <criterion/criterion.h>

#include "hs_dev.h"
#include "hs_launch.h"
#include "hs_test_cl.h"

typedef struct cl_fixture {
  hs_inventory inv;
  hs_dev dev;
  hs_ctx ctx;
  cl_command_queue q;
} cl_fixture;

static inline void clf_open(cl_fixture *f) {
  memset(f, 0, sizeof *f);
  if (hs_test_discover(&f->inv) != HS_OK || f->inv.n_devs == 0)
    cr_skip_test("no OpenCL device: %s", hs_last_error());
  int pick = 0;
  for (int i = 0; i < f->inv.n_devs; i++)
    if (f->inv.devs[i].info.type == HS_DEVICE_CPU) {
      pick = i;
      break;
    }
  f->dev = f->inv.devs[pick];
  cr_assert_eq(hs__ctx_create(&f->dev, 1, &f->ctx), HS_OK, "%s", hs_last_error());
  cr_assert_eq(hs__queue_create(&f->ctx, &f->dev, HS_QUEUE_PROFILING, &f->q), HS_OK, "%s",
               hs_last_error());
}

static inline void clf_close(cl_fixture *f) {
  if (f->q) clReleaseCommandQueue(f->q);
  hs__ctx_release(&f->ctx);
  hs__inventory_release(&f->inv);
}

/* A device buffer holding a copy of `n` host bytes (uninitialised when
 * `host` is NULL). */
static inline cl_mem clf_upload(cl_fixture *f, const void *host, size_t n) {
  cl_mem m;
  cr_assert_eq(hs__mem_create(&f->ctx, CL_MEM_READ_WRITE, n, &m), HS_OK);
  if (n && host) cr_assert_eq(hs__mem_write(f->q, m, true, 0, n, host, 0, NULL, NULL), HS_OK);
  return m;
}

/* References held on `q` (CL_QUEUE_REFERENCE_COUNT; for checking that a
 * module retains what it keeps). */
static inline cl_uint clf_queue_refs(cl_command_queue q) {
  cl_uint n = 0;
  cr_assert_eq(clGetCommandQueueInfo(q, CL_QUEUE_REFERENCE_COUNT, sizeof n, &n, NULL),
               CL_SUCCESS);
  return n;
}

static inline void clf_download(cl_fixture *f, cl_mem m, void *host, size_t n) {
  cr_assert_eq(hs__queue_finish(f->q), HS_OK, "%s", hs_last_error());
  cr_assert_eq(hs__mem_read(f->q, m, true, 0, n, host, 0, NULL, NULL), HS_OK);
}

#endif
