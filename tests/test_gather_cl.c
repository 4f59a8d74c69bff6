/* Device gather from a resident table equals the reference, for 16-byte,
 * word and byte rows, several work-group sizes, both launch shapes (whole
 * rows per work-item as on CPUs, rows spread along dimension 0 as on
 * GPUs) and the single work-item style. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "hs_test_cl.h"
#include "rng/philox.h"
#include "sample/hs_gather.h"
#include "sample/hs_sample.h"

static void check_device_gather(const hs_ctx *ctx, const hs_dev *dev, cl_command_queue q,
                                hs_gather_cl *g, size_t row_bytes, int32_t n_rows, int32_t n) {
  size_t tb = row_bytes * (size_t)n_rows, ob = row_bytes * (size_t)n;
  unsigned char *table = malloc(tb), *out = malloc(ob), *ref = malloc(ob);
  int32_t *ids = malloc(sizeof(int32_t) * (size_t)n);
  cr_assert(table && out && ref && ids);
  for (size_t i = 0; i < tb; i++) table[i] = (unsigned char)(i * 131u + (i >> 9));
  for (int32_t i = 0; i < n; i++)
    ids[i] = (int32_t)hs_philox_below(hs_philox_draw(5, 0, 0, 0, (uint32_t)i).v[1], (uint32_t)n_rows);
  hs__ref_gather(table, row_bytes, ids, n, ref);
  cl_int err;
  cl_mem t = clCreateBuffer(ctx->ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, tb, table, &err);
  cr_assert_eq(err, CL_SUCCESS);
  cl_mem di = clCreateBuffer(ctx->ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR,
                             sizeof(int32_t) * (size_t)n, ids, &err);
  cr_assert_eq(err, CL_SUCCESS);
  cl_mem o = clCreateBuffer(ctx->ctx, CL_MEM_WRITE_ONLY, ob, NULL, &err);
  cr_assert_eq(err, CL_SUCCESS);
  const size_t wgs[] = {0, 1, 7, 64};
  for (int shape = 0; shape < 2; shape++) {
    hs__gather_cl_whole_rows(g, shape == 1);
    for (int v = 0; v < 5; v++) {
      bool single = v == 4;
      if (!single && wgs[v] > dev->info.max_work_group_size) continue;
      memset(out, 0, ob);
      cr_assert_eq(hs__gather_cl_enqueue(g, q, t, row_bytes, di, (uint32_t)n, o,
                                         single ? 0 : wgs[v], single, NULL),
                   HS_OK, "%s", hs_last_error());
      cr_assert_eq(clEnqueueReadBuffer(q, o, CL_TRUE, 0, ob, out, 0, NULL, NULL), CL_SUCCESS);
      cr_assert(memcmp(out, ref, ob) == 0, "row bytes %zu, shape %d, variant %d", row_bytes,
                shape, v);
    }
  }
  clReleaseMemObject(t);
  clReleaseMemObject(di);
  clReleaseMemObject(o);
  free(table);
  free(out);
  free(ref);
  free(ids);
}

Test(gather_cl, equals_reference, .timeout = 300) {
  hs_inventory inv;
  if (hs_test_discover(&inv) != HS_OK || inv.n_devs == 0)
    cr_skip_test("no OpenCL device: %s", hs_last_error());
  const hs_dev *dev = &inv.devs[0];
  hs_ctx ctx;
  cl_command_queue q;
  cr_assert_eq(hs__ctx_create(dev, 1, &ctx), HS_OK, "%s", hs_last_error());
  cr_assert_eq(hs__queue_create(&ctx, dev, 0, &q), HS_OK);
  hs_gather_cl *g;
  cr_assert_eq(hs__gather_cl_create(&ctx, dev, &g), HS_OK, "%s", hs_last_error());
  check_device_gather(&ctx, dev, q, g, 4 * 100, 3000, 1500); /* float32 rows, 16-byte vectors */
  check_device_gather(&ctx, dev, q, g, 4 * 101, 3000, 1500); /* float32 rows, words */
  check_device_gather(&ctx, dev, q, g, 2 * 7, 500, 333);     /* float16, odd count */
  check_device_gather(&ctx, dev, q, g, 4096, 64, 300);       /* wide rows, repeats */
  hs__gather_cl_destroy(g);
  clReleaseCommandQueue(q);
  hs__ctx_release(&ctx);
  hs__inventory_release(&inv);
}
