/* Device gather from a resident table (see hs_gather.h). */
#include <stdlib.h>

#include "hs_gather.h"

struct hs_gather_cl {
  hs_dev dev;
  cl_program prog;
  cl_kernel k32, k8;
};

static const char *const gather_sources[] = {"hs_common.h", "gather.cl"};

hs_status hs__gather_cl_create(const hs_ctx *ctx, const hs_dev *dev, hs_gather_cl **out) {
  return hs__gather_cl_create_opts(ctx, dev, "", out);
}

hs_status hs__gather_cl_create_opts(const hs_ctx *ctx, const hs_dev *dev, const char *options,
                                    hs_gather_cl **out) {
  *out = NULL;
  hs_gather_cl *g = calloc(1, sizeof *g);
  if (!g) return hs__fail(HS_ERR_NOMEM, "device gather");
  g->dev = *dev;
  hs_status st =
      hs__program_build(ctx, dev, gather_sources, 2, options ? options : "", &g->prog, NULL);
  if (st == HS_OK) st = hs__kernel_create(g->prog, "hs_gather_rows_u32", dev, &g->k32);
  if (st == HS_OK) st = hs__kernel_create(g->prog, "hs_gather_rows_u8", dev, &g->k8);
  if (st != HS_OK) {
    hs__gather_cl_destroy(g);
    return st;
  }
  *out = g;
  return HS_OK;
}

void hs__gather_cl_destroy(hs_gather_cl *g) {
  if (!g) return;
  if (g->k32) clReleaseKernel(g->k32);
  if (g->k8) clReleaseKernel(g->k8);
  if (g->prog) clReleaseProgram(g->prog);
  free(g);
}

hs_status hs__gather_cl_enqueue(hs_gather_cl *g, cl_command_queue q, cl_mem table,
                                size_t row_bytes, cl_mem ids, uint32_t n, cl_mem out, size_t wg,
                                bool single, cl_event *ev) {
  if (ev) *ev = NULL;
  if (n == 0 || row_bytes == 0) return HS_OK;
  bool words = row_bytes % 4 == 0;
  cl_kernel k = words ? g->k32 : g->k8;
  cl_ulong row_elems = words ? row_bytes / 4 : row_bytes;
  cl_int err = clSetKernelArg(k, 0, sizeof table, &table);
  if (err == CL_SUCCESS) err = clSetKernelArg(k, 1, sizeof row_elems, &row_elems);
  if (err == CL_SUCCESS) err = clSetKernelArg(k, 2, sizeof ids, &ids);
  if (err == CL_SUCCESS) err = clSetKernelArg(k, 3, sizeof n, &n);
  if (err == CL_SUCCESS) err = clSetKernelArg(k, 4, sizeof out, &out);
  if (err != CL_SUCCESS) return hs__cl_fail(err, "clSetKernelArg", g->dev.id);
  /* dimension 0 along a row (coalesced on GPUs), dimension 1 over rows;
   * the kernel strides over whatever the grid does not cover */
  size_t global[2] = {1, 1}, local[2] = {1, 1};
  if (!single) {
    size_t w0 = row_elems < 256 ? (size_t)row_elems : 256;
    size_t l0 = wg ? (wg < w0 ? wg : w0) : 0;
    global[0] = l0 ? (w0 + l0 - 1) / l0 * l0 : w0;
    global[1] = n < 65536 ? n : 65536;
    local[0] = l0;
  }
  err = clEnqueueNDRangeKernel(q, k, 2, NULL, global, single || local[0] ? local : NULL, 0, NULL,
                               ev);
  return err == CL_SUCCESS ? HS_OK : hs__cl_fail(err, "clEnqueueNDRangeKernel", g->dev.id);
}
