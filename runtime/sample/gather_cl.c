/* Device gather from a resident table (see hs_gather.h). */
#include <stdlib.h>

#include "hs_gather.h"
#include "hs_launch.h"
#include "hs_programs.h"

/* Work-group size when CPU devices copy whole rows per work-item (grid
 * strides cover any number of rows; HS_CPU_GROUPS_PER_CU groups a unit). */
#define CPU_WG 64

struct hs_gather_cl {
  hs_dev dev;
  cl_program prog;
  cl_kernel k128, k32, k8;
  bool whole_rows; /* a work-item per row (CPU devices), else rows along dimension 0 */
};

hs_status hs__gather_cl_create(const hs_ctx *ctx, const hs_dev *dev, hs_gather_cl **out) {
  return hs__gather_cl_create_opts(ctx, dev, NULL, out);
}

hs_status hs__gather_cl_create_opts(const hs_ctx *ctx, const hs_dev *dev, const char *options,
                                    hs_gather_cl **out) {
  *out = NULL;
  hs_gather_cl *g = calloc(1, sizeof *g);
  if (!g) return hs__fail(HS_ERR_NOMEM, "device gather");
  g->dev = *dev;
  g->whole_rows = dev->info.type == HS_DEVICE_CPU;
  hs_status st = options && *options ? hs__program_get_variant(ctx, dev, HS_PROG_GATHER, options, &g->prog)
                         : hs__program_get(ctx, dev, HS_PROG_GATHER, &g->prog);
  if (st == HS_OK) st = hs__kernel_create(g->prog, "hs_gather_rows_u128", dev, &g->k128);
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
  hs__kernel_release(&g->k128);
  hs__kernel_release(&g->k32);
  hs__kernel_release(&g->k8);
  hs__program_release(&g->prog);
  free(g);
}

void hs__gather_cl_whole_rows(hs_gather_cl *g, bool whole_rows) { g->whole_rows = whole_rows; }

hs_status hs__gather_cl_enqueue(hs_gather_cl *g, cl_command_queue q, cl_mem table,
                                size_t row_bytes, cl_mem ids, uint32_t n, cl_mem out, size_t wg,
                                bool single, cl_event *ev) {
  if (ev) *ev = NULL;
  if (n == 0 || row_bytes == 0) return HS_OK;
  size_t elem = row_bytes % 16 == 0 ? 16 : row_bytes % 4 == 0 ? 4 : 1;
  cl_kernel k = elem == 16 ? g->k128 : elem == 4 ? g->k32 : g->k8;
  cl_ulong row_elems = row_bytes / elem;
  hs_karg args[] = {HS_KARG(table), HS_KARG(row_elems), HS_KARG(ids), HS_KARG(n), HS_KARG(out)};
  hs_status st = hs__kernel_args(k, args, 5);
  if (st != HS_OK) return st;
  size_t global[2] = {1, 1}, local[2] = {1, 1};
  if (single) {
    /* one work-item walks every row */
  } else if (g->whole_rows) {
    /* a work-item per row; enough groups to balance the device's threads */
    size_t cu = g->dev.info.compute_units > 0 ? (size_t)g->dev.info.compute_units : 1;
    size_t l1 = wg ? wg : CPU_WG;
    size_t max_rows = cu * l1 * HS_CPU_GROUPS_PER_CU;
    global[1] = n < max_rows ? n : max_rows;
    local[1] = l1;
  } else {
    /* dimension 0 along a row (coalesced on GPUs), dimension 1 over rows;
     * the kernel strides over whatever the grid does not cover */
    size_t w0 = row_elems < 256 ? (size_t)row_elems : 256;
    size_t l0 = wg ? (wg < w0 ? wg : w0) : 0;
    global[0] = w0;
    global[1] = n < 65536 ? n : 65536;
    local[0] = l0;
  }
  return hs__launch(q, k, 2, global, single || local[0] ? local : NULL, 0, NULL, ev);
}
