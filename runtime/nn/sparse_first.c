/* The sparse first layer on the trainer device (see sparse_first.h): the
 * batch's sparse rows, the products of the forward pass, and the weight
 * gradient through the rows' column lists, all on the trainer's in-order
 * queue. */
#include <string.h>

#include "hs_launch.h"
#include "hs_programs.h"
#include "../../cl_kernels/hs_sparse.h"
#include "nn/trainer_internal.h"

static const char *const sp_names[SK_COUNT] = {
    [SK_MM] = "hs_sp_mm",           [SK_FWD_MF] = "hs_sp_fwd_mf", [SK_FWD_AF] = "hs_sp_fwd_af",
    [SK_GSUM] = "hs_sp_gsum",       [SK_ENTRY_ROWS] = "hs_sp_entry_rows",
    [SK_TR_FILL] = "hs_sp_tr_fill", [SK_WGRAD] = "hs_sp_wgrad",
    [SK_WGRAD_COLS] = "hs_sp_wgrad_cols",
};

static hs_status build(hs_trainer *t) {
  if (t->sp_program) return HS_OK;
  hs_status st = hs__program_get(t->ctx, &t->dev, HS_PROG_TRAIN_SPARSE, &t->sp_program);
  for (int i = 0; st == HS_OK && i < SK_COUNT; i++) {
    st = hs__kernel_create(t->sp_program, sp_names[i], &t->dev, &t->sk[i]);
    if (st != HS_OK) break;
    size_t lim = hs__kernel_max_wg(t->sk[i], &t->dev), want = t->opts.wg ? t->opts.wg : 64;
    t->swg[i] = want > lim ? lim : want;
  }
  return st;
}

void hs__sparse_first_release(hs_trainer *t) {
  hs_dbuf *all[] = {&t->x_ptr, &t->x_col, &t->x_val, &t->x_tmp, &t->x_tptr, &t->x_tent,
                 &t->x_erow, &t->x_cursor, &t->x_sums, &t->x_tmid, &t->x_tval};
  for (size_t i = 0; i < HS_ARRAY_LEN(all); i++) hs__trainer_drop(all[i]);
  for (int i = 0; i < SK_COUNT; i++) hs__kernel_release(&t->sk[i]);
  hs__program_release(&t->sp_program);
}

/* Work-items along a row of d outputs (hs_sparse.h). */
static size_t chunks(const hs_trainer *t, int d) {
  size_t c = t->dev.info.type == HS_DEVICE_CPU ? HS_SP_CHUNK_CPU : HS_SP_CHUNK_OTHER;
  return ((size_t)d + c - 1) / c;
}

static hs_status run(hs_trainer *t, hs_train_phase ph, int id, size_t g0, size_t g1,
                     const hs_karg *args, int n) {
  return hs__trainer_run_k(t, ph, sp_names[id], t->sk[id], t->swg[id], g0, g1, args, n);
}

hs_status hs__sparse_first_upload(hs_trainer *t, const hs_nn_sparse *x) {
  hs_status st = build(t);
  if (st != HS_OK) return st;
  int32_t n_src = t->n_src[0], d_in = t->shape.dims[0], d_out = t->shape.dims[1];
  if (x->n_rows != n_src)
    return hs__fail(HS_ERR_FORMAT, "trainer: %d sparse rows for %d src of block 0", x->n_rows,
                    n_src);
  size_t nnz = (size_t)hs__nn_sparse_nnz(x), rows = (size_t)n_src;
  bool valued = x->col ? x->val != NULL : x->valued;
  if ((st = hs__trainer_reserve(t, &t->x_ptr, rows + 1, 4)) != HS_OK ||
      (st = hs__trainer_reserve(t, &t->x_col, nnz + 1, 4)) != HS_OK ||
      (st = hs__trainer_reserve(t, &t->x_erow, nnz + 1, 4)) != HS_OK ||
      (st = hs__trainer_reserve(t, &t->x_tent, nnz + 1, 4)) != HS_OK ||
      (st = hs__trainer_reserve(t, &t->x_tmp, rows + 1, (size_t)d_out * 4)) != HS_OK ||
      (st = hs__trainer_reserve(t, &t->x_tptr, (size_t)d_in + 1, 4)) != HS_OK ||
      (st = hs__trainer_reserve(t, &t->x_cursor, (size_t)d_in + 1, 4)) != HS_OK ||
      (st = hs__trainer_reserve(t, &t->x_sums, hs__scan_chunks((size_t)d_in) + 1, 4)) != HS_OK ||
      (valued && (st = hs__trainer_reserve(t, &t->x_val, nnz + 1, 4)) != HS_OK))
    return st;
  /* Without col the caller assembles the entries on the device
   * (hs__trainer_sparse_entries): only the offsets cross here. */
  if ((st = hs__mem_write(t->q, t->x_ptr.m, true, 0, (rows + 1) * 4, x->ptr, 0, NULL, NULL)) !=
          HS_OK ||
      (nnz && x->col &&
       (st = hs__mem_write(t->q, t->x_col.m, true, 0, nnz * 4, x->col, 0, NULL, NULL)) != HS_OK) ||
      (nnz && x->val &&
       (st = hs__mem_write(t->q, t->x_val.m, true, 0, nnz * 4, x->val, 0, NULL, NULL)) != HS_OK))
    return st;
  /* Column lists built by the host ride along (they save the device the
   * counting sort); else the step builds them. */
  t->x_cols = x->t_ptr != NULL;
  if (t->x_cols &&
      ((st = hs__trainer_reserve(t, &t->x_tmid, (size_t)d_in + 1, 4)) != HS_OK ||
       (x->val && (st = hs__trainer_reserve(t, &t->x_tval, nnz + 1, 4)) != HS_OK) ||
       (st = hs__mem_write(t->q, t->x_tptr.m, true, 0, ((size_t)d_in + 1) * 4, x->t_ptr, 0, NULL,
                           NULL)) != HS_OK ||
       (st = hs__mem_write(t->q, t->x_tmid.m, true, 0, (size_t)d_in * 4, x->t_mid, 0, NULL,
                           NULL)) != HS_OK ||
       (nnz && (st = hs__mem_write(t->q, t->x_tent.m, true, 0, nnz * 4, x->t_row, 0, NULL,
                                   NULL)) != HS_OK) ||
       (nnz && x->val &&
        (st = hs__mem_write(t->q, t->x_tval.m, true, 0, nnz * 4, x->t_val, 0, NULL, NULL)) !=
            HS_OK)))
    return st;
  t->x_sparse = true;
  t->x_has_val = valued;
  t->x_nnz = (int32_t)nnz;
  t->x_order = x->order != HS_SPARSE_AUTO
                   ? x->order
                   : hs__sparse_first_choose(t->n_dst[0], n_src, t->n_edges[0], (int64_t)nnz);
  return HS_OK;
}

hs_status hs__trainer_sparse_entries(hs_trainer *t, cl_mem *ptr, cl_mem *col, cl_mem *val) {
  if (!t->uploaded || !t->x_sparse)
    return hs__fail(HS_ERR_STATE, "trainer: no batch of sparse rows uploaded");
  *ptr = t->x_ptr.m;
  *col = t->x_col.m;
  *val = t->x_has_val ? t->x_val.m : NULL;
  return HS_OK;
}

hs_status hs__sparse_first_forward(hs_trainer *t, cl_mem out) {
  const hs_model_shape *sh = &t->shape;
  cl_int d_in = sh->dims[0], d_out = sh->dims[1], n_dst = t->n_dst[0], n_src = t->n_src[0];
  cl_int has_val = t->x_has_val, base = 0;
  cl_ulong w_self = sh->w_off[0], w_neigh = sh->w_off[0] + (size_t)d_in * (size_t)d_out;
  /* A binary batch binds the column ids where values would go: the kernel
   * never reads them. */
  cl_mem val = t->x_has_val ? t->x_val.m : t->x_col.m;
  size_t vecs = chunks(t, d_out);
  hs_status st;
  if (t->x_order == HS_SPARSE_AGGREGATE_FIRST) {
    hs_karg af[] = {HS_KARG(t->x_ptr.m), HS_KARG(t->x_col.m), HS_KARG(val), HS_KARG(has_val),
                    HS_KARG(t->params.m), HS_KARG(w_self), HS_KARG(w_neigh),
                    HS_KARG(t->blk_rp[0]), HS_KARG(t->blk_col[0]), HS_KARG(base),
                    HS_KARG(n_dst), HS_KARG(d_out), HS_KARG(out)};
    return run(t, HS_PHASE_GEMM, SK_FWD_AF, vecs, (size_t)n_dst, af, 13);
  }
  hs_karg mm[] = {HS_KARG(t->x_ptr.m), HS_KARG(t->x_col.m), HS_KARG(val), HS_KARG(has_val),
                  HS_KARG(base), HS_KARG(n_src), HS_KARG(t->params.m), HS_KARG(w_neigh),
                  HS_KARG(d_out), HS_KARG(t->x_tmp.m)};
  hs_karg mf[] = {HS_KARG(t->x_ptr.m), HS_KARG(t->x_col.m), HS_KARG(val), HS_KARG(has_val),
                  HS_KARG(t->params.m), HS_KARG(w_self), HS_KARG(t->blk_rp[0]),
                  HS_KARG(t->blk_col[0]), HS_KARG(t->x_tmp.m), HS_KARG(base), HS_KARG(n_dst),
                  HS_KARG(d_out), HS_KARG(out)};
  if ((st = run(t, HS_PHASE_GEMM, SK_MM, vecs, (size_t)n_src, mm, 10)) != HS_OK) return st;
  return run(t, HS_PHASE_GEMM, SK_FWD_MF, vecs, (size_t)n_dst, mf, 13);
}

/* Column lists of the batch's rows (x's transpose by entry index, each
 * list in increasing row order) and every entry's row: the same counting
 * sort as the block transpose (train_block.cl's count, scan and sort). */
static hs_status columns(hs_trainer *t) {
  cl_int n_rows = t->n_src[0], d_in = t->shape.dims[0], nnz = t->x_nnz, zero = 0;
  size_t cursor_bytes = (size_t)d_in * 4;
  cl_mem cur = t->x_cursor.m, sums = t->x_sums.m, tp = t->x_tptr.m, te = t->x_tent.m;
  hs_karg fill[] = {HS_KARG(t->x_ptr.m), HS_KARG(t->x_col.m), HS_KARG(n_rows), HS_KARG(tp),
                    HS_KARG(cur), HS_KARG(te)};
  hs_karg rows[] = {HS_KARG(t->x_ptr.m), HS_KARG(n_rows), HS_KARG(t->x_erow.m)};
  hs_kset *ks = &t->ks;
  hs_status st;
  if ((st = hs__mem_fill(t->q, cur, &zero, 4, 0, cursor_bytes, 0, NULL, NULL)) != HS_OK ||
      (nnz && (st = hs__k_tr_count(ks, t->x_col.m, nnz, cur)) != HS_OK) ||
      (st = hs__k_scan_sums(ks, cur, d_in, sums)) != HS_OK ||
      (st = hs__k_scan_offsets(ks, sums, d_in, tp)) != HS_OK ||
      (st = hs__k_scan_apply(ks, cur, d_in, sums, tp)) != HS_OK ||
      (st = hs__mem_fill(t->q, cur, &zero, 4, 0, cursor_bytes, 0, NULL, NULL)) != HS_OK ||
      (st = run(t, HS_PHASE_AGG, SK_TR_FILL, (size_t)n_rows, 0, fill, 6)) != HS_OK ||
      (st = hs__k_tr_sort(ks, tp, d_in, te)) != HS_OK)
    return st;
  return run(t, HS_PHASE_AGG, SK_ENTRY_ROWS, (size_t)n_rows, 0, rows, 3);
}

hs_status hs__sparse_first_wgrad(hs_trainer *t) {
  const hs_model_shape *sh = &t->shape;
  cl_int d_in = sh->dims[0], d_out = sh->dims[1], n_dst = t->n_dst[0], n_src = t->n_src[0];
  cl_int has_val = t->x_has_val;
  cl_ulong w_off = sh->w_off[0];
  cl_mem val = t->x_has_val ? t->x_val.m : t->x_col.m;
  size_t vecs = chunks(t, d_out);
  hs_status st;
  if ((st = hs__trainer_transpose(t, 0, false)) != HS_OK) return st;
  if (!t->x_cols && (st = columns(t)) != HS_OK) return st;
  hs_karg gs[] = {HS_KARG(t->blk_rp[0]), HS_KARG(t->t_ptr[0].m), HS_KARG(t->t_list[0].m),
                  HS_KARG(t->dz[0].m), HS_KARG(n_src), HS_KARG(d_out), HS_KARG(t->x_tmp.m)};
  if (t->x_cols) {
    cl_mem tval = t->x_has_val ? t->x_tval.m : t->x_tent.m;
    hs_karg wc[] = {HS_KARG(t->x_tptr.m), HS_KARG(t->x_tmid.m), HS_KARG(t->x_tent.m),
                    HS_KARG(tval), HS_KARG(has_val), HS_KARG(t->dz[0].m), HS_KARG(t->x_tmp.m),
                    HS_KARG(d_in), HS_KARG(d_out), HS_KARG(t->grads.m), HS_KARG(w_off)};
    if ((st = run(t, HS_PHASE_AGG, SK_GSUM, vecs, (size_t)n_src, gs, 7)) != HS_OK) return st;
    return run(t, HS_PHASE_GEMM, SK_WGRAD_COLS, vecs, (size_t)d_in, wc, 11);
  }
  hs_karg wg[] = {HS_KARG(t->x_tptr.m), HS_KARG(t->x_tent.m), HS_KARG(t->x_erow.m), HS_KARG(val),
                  HS_KARG(has_val), HS_KARG(n_dst), HS_KARG(t->dz[0].m), HS_KARG(t->x_tmp.m),
                  HS_KARG(d_in), HS_KARG(d_out), HS_KARG(t->grads.m), HS_KARG(w_off)};
  if ((st = run(t, HS_PHASE_AGG, SK_GSUM, vecs, (size_t)n_src, gs, 7)) != HS_OK) return st;
  return run(t, HS_PHASE_GEMM, SK_WGRAD, vecs, (size_t)d_in, wg, 12);
}
