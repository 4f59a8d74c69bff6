/* Training kernels, GEMM providers and a full training step on a device
 * against the plain-C references (runtime/nn/ref_*.c). The kernels are
 * launched one by one with the trainer's arguments, on blocks sampled from
 * the bundled Cora and the generated graph. Bit for bit where the
 * reference associates exactly as the kernel (block transpose, mean
 * aggregation forward and backward, column sums, the dropout mask); within
 * tolerances where libm or a provider's summation order may differ
 * (bias/activation 1e-6, loss 1e-5, optimizer 1e-6, GEMM 1e-5 of
 * sum |a b|, the full step 1e-5 relative as the trainer's tests use). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/hs_engine.h"
#include "hs_bringup_int.h"

/* ---- test data ------------------------------------------------------------------ */

static uint64_t mix(uint64_t *s) {
  uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

static void fill(float *x, size_t n, uint64_t *s, float scale) {
  for (size_t i = 0; i < n; i++)
    x[i] = scale * (float)((double)(mix(s) >> 11) * (2.0 / 9007199254740992.0) - 1.0);
}

/* A batch sampled by the reference from the training split of `g`, with
 * its features and labels, in the trainer's form. */
typedef struct sbatch {
  hs_batch b;
  hs_nn_block nb[HS_SAMPLE_MAX_LAYERS];
  float *feat;
  int32_t *labels;
} sbatch;

static void sbatch_free(sbatch *s) {
  hs__batch_free(&s->b);
  free(s->feat);
  free(s->labels);
  memset(s, 0, sizeof *s);
}

static hs_status sbatch_make(const hs_graph *g, const hs_csr *csr, int n_layers,
                             const int32_t *fanouts, int32_t n_seeds, uint32_t salt, sbatch *out) {
  memset(out, 0, sizeof *out);
  hs_sample_cfg cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.n_layers = n_layers;
  memcpy(cfg.fanout, fanouts, sizeof *fanouts * (size_t)n_layers);
  cfg.seed = 0x5eedull + salt;
  int32_t *seeds = malloc(sizeof *seeds * (size_t)n_seeds);
  if (!seeds) return hs__fail(HS_ERR_NOMEM, "sampled batch");
  hs__bu_seeds(seeds, n_seeds, g->split_n[HS_SPLIT_TRAIN], salt);
  for (int32_t i = 0; i < n_seeds; i++) seeds[i] = g->split[HS_SPLIT_TRAIN][seeds[i]];
  hs_batch_caps caps;
  hs_status st = hs__batch_caps(&cfg, csr, hs__csr_max_degree(csr), n_seeds, &caps);
  if (st == HS_OK) st = hs__batch_alloc(&caps, &out->b);
  if (st == HS_OK) st = hs__ref_sample_batch(csr, &cfg, seeds, n_seeds, 0, salt, &out->b);
  free(seeds);
  if (st != HS_OK) return st;
  int32_t n = out->b.n_vertices;
  out->feat = malloc(sizeof(float) * (size_t)n * (size_t)g->f + 1);
  out->labels = malloc(sizeof(int32_t) * (size_t)n_seeds);
  if (!out->feat || !out->labels) {
    sbatch_free(out);
    return hs__fail(HS_ERR_NOMEM, "sampled batch features");
  }
  hs__bu_feature_rows(g, out->b.ids, n, out->feat);
  for (int32_t i = 0; i < n_seeds; i++) out->labels[i] = g->labels[out->b.ids[i]];
  for (int l = 0; l < n_layers; l++) {
    const hs_block *k = &out->b.blocks[l];
    out->nb[l] = (hs_nn_block){k->n_dst, k->n_src, k->row_ptr, k->col};
  }
  return HS_OK;
}

static hs_nn_batch sbatch_view(const sbatch *s) {
  return (hs_nn_batch){.n_layers = s->b.n_layers, .blocks = s->nb, .feat = s->feat,
                       .labels = s->labels};
}

/* ---- launching ------------------------------------------------------------------- */

static hs_status up(hs__scope *s, const void *host, size_t bytes, cl_mem *m) {
  hs_status st = hs__mem_create(&s->ctx, CL_MEM_READ_WRITE, bytes, m);
  if (st == HS_OK && host && bytes)
    st = hs__mem_write(s->q, *m, true, 0, bytes, host, 0, NULL, NULL);
  return st;
}

static hs_status down(hs__scope *s, cl_mem m, void *host, size_t bytes) {
  hs_status st = hs__queue_finish(s->q);
  if (st == HS_OK && bytes) st = hs__mem_read(s->q, m, true, 0, bytes, host, 0, NULL, NULL);
  return st;
}

/* The kernel set of `kind`'s training program on the scope's queue, with
 * the trainer's default local size; kernels are launched through the same
 * typed launchers the trainer uses. */
static hs_status open_ks(hs__scope *s, hs_nn_kind kind, hs_kset *ks) {
  return hs__kset_create(&s->ctx, &s->dev, s->q, &hs__model_ops(kind)->program, 0, ks);
}

/* A block with a hub: the hop-0 block of a Cora batch whose first
 * neighbour of every row is made local source 0, so that one transposed
 * list is long (the sort's heap path). The arrays are owned by `fb`. */
typedef struct hub_block {
  sbatch sb;
  int32_t *col;
  hs_nn_block blk;
} hub_block;

static hs_status hub_make(hs__bu *b, hub_block *h) {
  memset(h, 0, sizeof *h);
  static const int32_t fan[] = {10, 10};
  hs_status st = sbatch_make(b->data.cora, &b->data.cora_csr, 2, fan, 64, 3, &h->sb);
  if (st != HS_OK) return st;
  h->blk = h->sb.nb[0];
  int32_t ne = hs__nn_block_edges(&h->blk);
  h->col = malloc(sizeof(int32_t) * (size_t)ne + 4);
  if (!h->col) return hs__fail(HS_ERR_NOMEM, "hub block");
  memcpy(h->col, h->blk.col, sizeof(int32_t) * (size_t)ne);
  for (int32_t i = 0; i < h->blk.n_dst; i++)
    if (h->blk.row_ptr[i + 1] > h->blk.row_ptr[i]) h->col[h->blk.row_ptr[i]] = 0;
  h->blk.col = h->col;
  return HS_OK;
}

static void hub_free(hub_block *h) {
  sbatch_free(&h->sb);
  free(h->col);
}

/* ---- transpose and aggregation --------------------------------------------------- */

static hs_check_result transpose(hs__bu *b, hs__scope *s, hs__out *o) {
  hub_block h;
  hs_kset ks = {0};
  cl_mem rp = NULL, col = NULL, cur = NULL, sums = NULL, tp = NULL, td = NULL;
  int32_t *want_p = NULL, *want_d = NULL, *got_p = NULL, *got_d = NULL;
  hs_check_result res = HS_CHECK_FAIL;
  hs_status st = hub_make(b, &h);
  const hs_nn_block *k = &h.blk;
  cl_int n_src = k->n_src, n_dst = k->n_dst, n_edges = hs__nn_block_edges(k);
  cl_int n_chunks = (cl_int)hs__scan_chunks((size_t)n_src);
  size_t sp = 4 * ((size_t)n_src + 1), se = 4 * (size_t)n_edges;
  if (st == HS_OK) {
    want_p = malloc(sp), want_d = malloc(se + 4), got_p = malloc(sp), got_d = malloc(se + 4);
    if (!want_p || !want_d || !got_p || !got_d) st = hs__fail(HS_ERR_NOMEM, "transpose check");
  }
  if (st == HS_OK) st = open_ks(s, HS_NN_SAGE, &ks);
  if (st == HS_OK) st = up(s, k->row_ptr, 4 * ((size_t)n_dst + 1), &rp);
  if (st == HS_OK) st = up(s, k->col, se, &col);
  if (st == HS_OK) st = up(s, NULL, 4 * (size_t)n_src, &cur);
  if (st == HS_OK) st = up(s, NULL, 4 * (size_t)n_chunks, &sums);
  if (st == HS_OK) st = up(s, NULL, sp, &tp);
  if (st == HS_OK) st = up(s, NULL, se, &td);
  hs_tr_bufs tb = {.cursor = cur, .sums = sums, .t_ptr = tp, .t_list = td};
  if (st == HS_OK) st = hs__nn_transpose(&ks, rp, col, n_dst, n_src, n_edges, &tb, false, false);
  if (st == HS_OK) st = down(s, tp, got_p, sp);
  if (st == HS_OK) st = down(s, td, got_d, se);
  if (st != HS_OK) {
    hs__bu_error(o, "block transpose", st);
    goto done;
  }
  hs__nn_block_transpose(k, want_p, want_d);
  if (memcmp(got_p, want_p, sp) != 0 || memcmp(got_d, want_d, se) != 0) {
    snprintf(o->detail, sizeof o->detail, "transposed block of %d x %d (%d edges) differs",
             n_dst, n_src, n_edges);
    goto done;
  }
  o->digest = hs__fnv(hs__fnv(HS__FNV_SEED, got_p, sp), got_d, se);
  snprintf(o->detail, sizeof o->detail,
           "Cora block %d x %d, %d edges, a %d-long list: equal to the reference bit for bit",
           n_dst, n_src, n_edges, want_p[1] - want_p[0]);
  res = HS_CHECK_PASS;
done:
  hs__mem_release(&rp), hs__mem_release(&col), hs__mem_release(&cur), hs__mem_release(&sums);
  hs__mem_release(&tp), hs__mem_release(&td);
  hs__kset_release(&ks);
  free(want_p), free(want_d), free(got_p), free(got_d);
  hub_free(&h);
  return res;
}

/* Forward (`bwd` false) or backward (plain and masked) aggregation on the
 * hub block, two widths: vector path and tail. */
static hs_check_result aggregation(hs__bu *b, hs__scope *s, hs__out *o, bool bwd) {
  hub_block h;
  hs_kset ks = {0};
  hs_check_result res = HS_CHECK_FAIL;
  o->digest = HS__FNV_SEED;
  hs_status st = hub_make(b, &h);
  if (st == HS_OK) st = open_ks(s, HS_NN_SAGE, &ks);
  if (st != HS_OK) {
    hub_free(&h);
    return hs__bu_error(o, bwd ? "aggregation backward" : "aggregation forward", st);
  }
  const hs_nn_block *k = &h.blk;
  cl_int n_dst = k->n_dst, n_src = k->n_src, n_edges = hs__nn_block_edges(k);
  uint64_t seed = 11;
  static const cl_int widths[] = {5, 37};
  for (size_t wi = 0; wi < HS_ARRAY_LEN(widths); wi++) {
    cl_int d = widths[wi];
    size_t nh = (size_t)n_src * (size_t)d, nc = (size_t)n_dst * 2 * (size_t)d;
    float *hx = malloc(4 * nh), *want = malloc(4 * (nc > nh ? nc : nh)),
          *got = malloc(4 * (nc > nh ? nc : nh)), *dcat = malloc(4 * nc), *act = malloc(4 * nh);
    int32_t *tp = malloc(4 * ((size_t)n_src + 1)), *td = malloc(4 * (size_t)n_edges + 4);
    cl_mem drp = NULL, dcol = NULL, dh = NULL, dout = NULL, dtp = NULL, dtd = NULL, dg = NULL,
           dact = NULL;
    bool ok = false;
    char why[256];
    if (!hx || !want || !got || !dcat || !act || !tp || !td) {
      st = hs__fail(HS_ERR_NOMEM, "aggregation check");
      goto next;
    }
    fill(hx, nh, &seed, 1.0f);
    fill(dcat, nc, &seed, 1.0f);
    for (size_t e = 0; e < nh; e++) act[e] = hx[e] > 0.0f ? hx[e] : 0.0f;
    cl_int base = 0; /* first destination row: the whole block */
    if ((st = up(s, k->row_ptr, 4 * ((size_t)n_dst + 1), &drp)) != HS_OK ||
        (st = up(s, k->col, 4 * (size_t)n_edges, &dcol)) != HS_OK)
      goto next;
    if (!bwd) {
      if ((st = up(s, hx, 4 * nh, &dh)) != HS_OK || (st = up(s, NULL, 4 * nc, &dout)) != HS_OK ||
          (st = hs__k_agg_fwd(&ks, drp, dcol, dh, base, n_dst, d, dout)) != HS_OK ||
          (st = down(s, dout, got, 4 * nc)) != HS_OK)
        goto next;
      hs__ref_agg_fwd(k, hx, d, want);
      if (!hs__bu_floats("cat", got, want, nc, 0.0f, why, sizeof why)) goto differ;
      o->digest = hs__fnv(o->digest, got, 4 * nc);
    } else {
      hs__nn_block_transpose(k, tp, td);
      if ((st = up(s, tp, 4 * ((size_t)n_src + 1), &dtp)) != HS_OK ||
          (st = up(s, td, 4 * (size_t)n_edges, &dtd)) != HS_OK ||
          (st = up(s, dcat, 4 * nc, &dg)) != HS_OK || (st = up(s, act, 4 * nh, &dact)) != HS_OK ||
          (st = up(s, NULL, 4 * nh, &dout)) != HS_OK)
        goto next;
      for (cl_int masked = 0; masked < 2; masked++) {
        float scale = masked ? 1.25f : 1.0f;
        if ((st = hs__k_agg_bwd(&ks, drp, dtp, dtd, dg, dact, n_dst, n_src, d, masked, scale,
                                dout)) != HS_OK ||
            (st = down(s, dout, got, 4 * nh)) != HS_OK)
          goto next;
        hs__ref_agg_bwd(k, tp, td, dcat, d, want);
        if (masked) hs__ref_act_bwd(act, n_src, d, scale, want);
        if (!hs__bu_floats(masked ? "dh (masked)" : "dh", got, want, nh, 0.0f, why, sizeof why))
          goto differ;
        o->digest = hs__fnv(o->digest, got, 4 * nh);
      }
    }
    ok = true;
    goto next;
  differ:
    snprintf(o->detail, sizeof o->detail, "width %d: %s", d, why);
  next:
    hs__mem_release(&drp), hs__mem_release(&dcol), hs__mem_release(&dh), hs__mem_release(&dout);
    hs__mem_release(&dtp), hs__mem_release(&dtd), hs__mem_release(&dg), hs__mem_release(&dact);
    free(hx), free(want), free(got), free(dcat), free(act), free(tp), free(td);
    if (st != HS_OK) hs__bu_error(o, bwd ? "aggregation backward" : "aggregation forward", st);
    if (!ok) goto done;
  }
  snprintf(o->detail, sizeof o->detail,
           "Cora block %d x %d (%d edges), widths 5 and 37%s: equal to the reference bit for bit",
           n_dst, n_src, n_edges, bwd ? ", plain and with the ReLU/dropout mask" : "");
  res = HS_CHECK_PASS;
done:
  hs__kset_release(&ks);
  hub_free(&h);
  return res;
}

static hs_check_result agg_fwd(hs__bu *b, hs__scope *s, hs__out *o) {
  return aggregation(b, s, o, false);
}
static hs_check_result agg_bwd(hs__bu *b, hs__scope *s, hs__out *o) {
  return aggregation(b, s, o, true);
}

/* ---- element-wise, column sums, loss ------------------------------------------------ */

static hs_check_result elementwise(hs__bu *b, hs__scope *s, hs__out *o) {
  (void)b;
  enum { N = 137, D = 13, OFF = 5 };
  static float z[N * D], params[OFF + D], want[N * D], got[N * D];
  uint64_t seed = 9;
  fill(z, N * D, &seed, 1.0f);
  fill(params, OFF + D, &seed, 0.5f);
  memcpy(want, z, sizeof z);
  hs__ref_bias_act_fwd(want, N, D, params + OFF, true, 0.4f, 1234, 3, 7, 1);
  hs_kset ks = {0};
  cl_mem dz = NULL, dp = NULL;
  cl_int n = N, d = D, relu = 1;
  cl_ulong off = OFF, dseed = 1234;
  cl_uint ep = 3, ba = 7, layer = 1;
  float p = 0.4f, scale = hs__dropout_scale(p);
  hs_status st = open_ks(s, HS_NN_SAGE, &ks);
  if (st == HS_OK) st = up(s, z, sizeof z, &dz);
  if (st == HS_OK) st = up(s, params, sizeof params, &dp);
  if (st == HS_OK)
    st = hs__k_bias_act(&ks, dz, n, d, dp, off, relu, p, scale, dseed, ep, ba, layer);
  if (st == HS_OK) st = down(s, dz, got, sizeof got);
  hs__mem_release(&dz), hs__mem_release(&dp);
  hs__kset_release(&ks);
  if (st != HS_OK) return hs__bu_error(o, "bias, ReLU and dropout", st);
  for (int e = 0; e < N * D; e++)
    if ((got[e] == 0.0f) != (want[e] == 0.0f)) {
      snprintf(o->detail, sizeof o->detail, "dropout/ReLU mask differs at element %d", e);
      return HS_CHECK_FAIL;
    }
  if (!hs__bu_floats("h", got, want, N * D, 1e-6f, o->detail, sizeof o->detail))
    return HS_CHECK_FAIL;
  o->digest = hs__fnv(HS__FNV_SEED, got, sizeof got);
  snprintf(o->detail, sizeof o->detail,
           "bias + ReLU + dropout (p 0.4) on %d x %d: same mask bit for bit, values within 1e-6",
           N, D);
  return HS_CHECK_PASS;
}

static hs_check_result colsum(hs__bu *b, hs__scope *s, hs__out *o) {
  (void)b;
  enum { R = 600, D = 13, OFF = 5 };
  static float tall[R * D], got[OFF + D], want[D], before[OFF + D];
  uint64_t seed = 10;
  fill(tall, R * D, &seed, 1.0f);
  fill(before, OFF + D, &seed, 1.0f);
  hs__ref_colsum(tall, R, D, want);
  cl_int rows = R, d = D, chunks = (cl_int)hs__colsum_chunks(R);
  cl_ulong off = OFF;
  hs_kset ks = {0};
  cl_mem dx = NULL, dpart = NULL, dcs = NULL;
  hs_status st = open_ks(s, HS_NN_SAGE, &ks);
  if (st == HS_OK) st = up(s, tall, sizeof tall, &dx);
  if (st == HS_OK) st = up(s, NULL, 4 * (size_t)chunks * D, &dpart);
  if (st == HS_OK) st = up(s, before, sizeof before, &dcs);
  if (st == HS_OK)
    st = hs__nn_colsum(&ks, dx, rows, d, dpart, dcs, off);
  if (st == HS_OK) st = down(s, dcs, got, sizeof got);
  hs__mem_release(&dx), hs__mem_release(&dpart), hs__mem_release(&dcs);
  hs__kset_release(&ks);
  if (st != HS_OK) return hs__bu_error(o, "column sums", st);
  if (memcmp(got, before, OFF * sizeof(float)) != 0) {
    snprintf(o->detail, sizeof o->detail, "column sums wrote before their offset");
    return HS_CHECK_FAIL;
  }
  if (!hs__bu_floats("sum", got + OFF, want, D, 0.0f, o->detail, sizeof o->detail))
    return HS_CHECK_FAIL;
  o->digest = hs__fnv(HS__FNV_SEED, got, sizeof got);
  snprintf(o->detail, sizeof o->detail,
           "two-stage column sums of %d x %d into an offset: equal to the reference bit for bit",
           R, D);
  return HS_CHECK_PASS;
}

static hs_check_result loss(hs__bu *b, hs__scope *s, hs__out *o) {
  (void)b;
  enum { N = 57, C = 7, OFF = 3 };
  static float logits[N * C], params[OFF + C], wdz[N * C], gdz[N * C], wl[N], gl[N];
  float loss_w, loss_g[4];
  int32_t y[N], wc[N], gc[N], correct_w, correct_g[4];
  uint64_t seed = 12;
  fill(logits, N * C, &seed, 3.0f);
  fill(params, OFF + C, &seed, 0.5f);
  for (int i = 0; i < N; i++) y[i] = (int32_t)(mix(&seed) % C);
  hs__ref_softmax_ce(logits, params + OFF, y, N, C, wdz, wl, wc);
  hs__ref_loss_reduce(wl, wc, N, &loss_w, &correct_w);
  hs_kset ks = {0};
  cl_mem dl = NULL, dp = NULL, dy = NULL, ddz = NULL, drows = NULL, dhits = NULL, dsl = NULL,
         dsc = NULL;
  cl_int n = N, c = C, slot = 2;
  cl_ulong off = OFF;
  float inv_n = 1.0f / N;
  hs_status st = open_ks(s, HS_NN_SAGE, &ks);
  if (st == HS_OK) st = up(s, logits, sizeof logits, &dl);
  if (st == HS_OK) st = up(s, params, sizeof params, &dp);
  if (st == HS_OK) st = up(s, y, sizeof y, &dy);
  if (st == HS_OK) st = up(s, NULL, sizeof gdz, &ddz);
  if (st == HS_OK) st = up(s, NULL, sizeof gl, &drows);
  if (st == HS_OK) st = up(s, NULL, sizeof gc, &dhits);
  if (st == HS_OK) st = up(s, NULL, sizeof loss_g, &dsl);
  if (st == HS_OK) st = up(s, NULL, sizeof correct_g, &dsc);
  if (st == HS_OK)
    st = hs__k_softmax_ce(&ks, dl, dp, off, dy, n, c, inv_n, ddz, drows, dhits);
  if (st == HS_OK) st = hs__k_loss_reduce(&ks, drows, dhits, n, dsl, dsc, slot);
  if (st == HS_OK) st = down(s, ddz, gdz, sizeof gdz);
  if (st == HS_OK) st = down(s, drows, gl, sizeof gl);
  if (st == HS_OK) st = down(s, dhits, gc, sizeof gc);
  if (st == HS_OK) st = down(s, dsl, loss_g, sizeof loss_g);
  if (st == HS_OK) st = down(s, dsc, correct_g, sizeof correct_g);
  cl_mem all[] = {dl, dp, dy, ddz, drows, dhits, dsl, dsc};
  for (size_t i = 0; i < HS_ARRAY_LEN(all); i++) hs__mem_release(&all[i]);
  hs__kset_release(&ks);
  if (st != HS_OK) return hs__bu_error(o, "softmax cross-entropy", st);
  if (!hs__bu_floats("dz", gdz, wdz, N * C, 1e-5f, o->detail, sizeof o->detail) ||
      !hs__bu_floats("loss", gl, wl, N, 1e-5f, o->detail, sizeof o->detail) ||
      !hs__bu_floats("mean loss", &loss_g[2], &loss_w, 1, 1e-5f, o->detail, sizeof o->detail))
    return HS_CHECK_FAIL;
  if (memcmp(gc, wc, sizeof wc) != 0 || correct_g[2] != correct_w) {
    snprintf(o->detail, sizeof o->detail, "hits differ: %d, reference %d", correct_g[2],
             correct_w);
    return HS_CHECK_FAIL;
  }
  o->digest = hs__fnv(hs__fnv(HS__FNV_SEED, gdz, sizeof gdz), gl, sizeof gl);
  snprintf(o->detail, sizeof o->detail,
           "softmax cross-entropy of %d x %d and its reduction: within 1e-5, hits equal", N, C);
  return HS_CHECK_PASS;
}

/* ---- optimizer ------------------------------------------------------------------------ */

static hs_check_result optimizer(hs__bu *b, hs__scope *s, hs__out *o) {
  (void)b;
  enum { N = 1000 };
  static float p[N], g[N], m[N], v[N], gp[N], gm[N], gv[N];
  uint64_t seed = 4;
  hs_kset ks = {0};
  hs_status st = open_ks(s, HS_NN_SAGE, &ks);
  o->digest = HS__FNV_SEED;
  for (int kind = 0; st == HS_OK && kind < 2; kind++) {
    hs_optim_cfg oc = {.kind = kind ? HS_OPTIM_ADAM : HS_OPTIM_SGD,
                       .wd_mode = kind ? HS_WD_DECOUPLED : HS_WD_L2, .lr = 0.01f,
                       .weight_decay = 0.01f, .beta1 = 0.9f, .beta2 = 0.999f, .eps = 1e-8f,
                       .momentum = 0.9f};
    fill(p, N, &seed, 1.0f);
    memset(m, 0, sizeof m), memset(v, 0, sizeof v);
    cl_mem dp = NULL, dg = NULL, dm = NULL, dv = NULL;
    if ((st = up(s, p, sizeof p, &dp)) == HS_OK && (st = up(s, NULL, sizeof g, &dg)) == HS_OK &&
        (st = up(s, m, sizeof m, &dm)) == HS_OK)
      st = up(s, v, sizeof v, &dv);
    for (uint64_t t = 1; st == HS_OK && t <= 3; t++) {
      fill(g, N, &seed, 0.1f);
      if ((st = hs__mem_write(s->q, dg, true, 0, sizeof g, g, 0, NULL, NULL)) != HS_OK) break;
      hs_optim_coef c;
      hs__optim_coef(&oc, t, &c);
      hs__ref_optim(oc.kind, &c, N, p, g, m, v);
      cl_ulong n = N;
      st = kind ? hs__k_adam(&ks, dp, dg, dm, dv, n, &c) : hs__k_sgd(&ks, dp, dg, dm, n, &c);
    }
    if (st == HS_OK) st = down(s, dp, gp, sizeof gp);
    if (st == HS_OK) st = down(s, dm, gm, sizeof gm);
    if (st == HS_OK) st = down(s, dv, gv, sizeof gv);
    hs__mem_release(&dp), hs__mem_release(&dg), hs__mem_release(&dm), hs__mem_release(&dv);
    if (st != HS_OK) break;
    const char *name = kind ? "adam" : "sgd";
    char what[32];
    snprintf(what, sizeof what, "%s parameters", name);
    if (!hs__bu_floats(what, gp, p, N, 1e-6f, o->detail, sizeof o->detail)) goto fail;
    snprintf(what, sizeof what, "%s first moment", name);
    if (!hs__bu_floats(what, gm, m, N, 1e-6f, o->detail, sizeof o->detail)) goto fail;
    if (kind && !hs__bu_floats("adam second moment", gv, v, N, 1e-6f, o->detail, sizeof o->detail))
      goto fail;
    o->digest = hs__fnv(o->digest, gp, sizeof gp);
  }
  hs__kset_release(&ks);
  if (st != HS_OK) return hs__bu_error(o, "optimizer", st);
  snprintf(o->detail, sizeof o->detail,
           "3 steps of SGD (momentum, L2) and Adam (decoupled decay) on %d parameters: within 1e-6",
           N);
  return HS_CHECK_PASS;
fail:
  hs__kset_release(&ks);
  return HS_CHECK_FAIL;
}

/* ---- GEMM per provider --------------------------------------------------------------- */

static hs_check_result gemm_kind(hs__bu *b, hs__scope *s, hs__out *o, hs_gemm_kind kind) {
  hs_gemm *g = NULL;
  hs_status st = hs__gemm_create(&s->ctx, &s->dev, s->q, kind, 0, &g);
  if (st == HS_ERR_UNSUPPORTED) {
    snprintf(o->detail, sizeof o->detail, "%s", hs_last_error());
    return HS_CHECK_SKIP;
  }
  if (st != HS_OK) return hs__bu_error(o, "GEMM provider", st);
  hs_gemm_kind used = hs__gemm_kind_of(g);
  if (used == HS_GEMM_CLBLAST && s->dev.info.simulator) {
    /* CLBlast's kernels are CLBlast's, and simulating its tuned tiles with
     * every access checked takes many minutes: left to real devices. */
    hs__gemm_destroy(g);
    snprintf(o->detail, sizeof o->detail,
             "'%s' is a simulator: CLBlast's kernels are left to real devices (gemm.builtin "
             "runs hetsage's own)",
             s->dev.info.name);
    return HS_CHECK_SKIP;
  }
  static const size_t shapes[][3] = {{37, 29, 53}, {64, 64, 64}, {1, 17, 5}, {200, 16, 300}};
  size_t n_shapes = b->opts.level >= HS_BRINGUP_STANDARD ? HS_ARRAY_LEN(shapes) : 2;
  uint64_t seed = 17;
  int products = 0;
  o->digest = HS__FNV_SEED;
  hs_check_result res = HS_CHECK_PASS;
  for (size_t si = 0; si < n_shapes && res == HS_CHECK_PASS; si++)
    for (int t = 0; t < 4 && res == HS_CHECK_PASS; t++) {
      bool ta = t & 2, tb = t & 1;
      size_t m = shapes[si][0], n = shapes[si][1], k = shapes[si][2];
      size_t ar = ta ? k : m, ac = ta ? m : k, br = tb ? n : k, bc = tb ? k : n;
      size_t lda = ac + 3, ldb = bc + 1, ldc = n + 2, ao = 5, bo = 7, co = 11;
      size_t na = ao + ar * lda + 1, nb = bo + br * ldb + 1, nc = co + m * ldc + 1;
      float *a = malloc(na * 4), *bm = malloc(nb * 4), *c = malloc(nc * 4),
            *want = malloc(nc * 4), *got = malloc(nc * 4);
      cl_mem da = NULL, db = NULL, dc = NULL;
      if (!a || !bm || !c || !want || !got) st = hs__fail(HS_ERR_NOMEM, "GEMM check");
      float alpha = 1.5f, beta = (si % 2) ? 0.0f : -0.5f;
      if (st == HS_OK) {
        fill(a, na, &seed, 1.0f), fill(bm, nb, &seed, 1.0f), fill(c, nc, &seed, 1.0f);
        memcpy(want, c, nc * 4);
        hs__ref_gemm(ta, tb, m, n, k, alpha, a + ao, lda, bm + bo, ldb, beta, want + co, ldc);
        st = up(s, a, na * 4, &da);
      }
      if (st == HS_OK) st = up(s, bm, nb * 4, &db);
      if (st == HS_OK) st = up(s, c, nc * 4, &dc);
      hs_gemm_op op = {.trans_a = ta, .trans_b = tb, .m = m, .n = n, .k = k, .alpha = alpha,
                       .beta = beta, .a = da, .b = db, .c = dc, .a_off = ao, .b_off = bo,
                       .c_off = co, .lda = lda, .ldb = ldb, .ldc = ldc};
      if (st == HS_OK) st = hs__gemm_run(g, &op, 0, NULL, NULL);
      if (st == HS_OK) st = down(s, dc, got, nc * 4);
      if (st != HS_OK) {
        res = hs__bu_error(o, hs__gemm_kind_name(kind), st);
      } else {
        for (size_t e = 0; e < nc && res == HS_CHECK_PASS; e++) {
          bool inside = e >= co && (e - co) / ldc < m && (e - co) % ldc < n;
          double bound = 0.0;
          if (inside) {
            size_t i = (e - co) / ldc, j = (e - co) % ldc;
            double sum = 0.0;
            for (size_t q = 0; q < k; q++)
              sum += fabs((double)(ta ? a[ao + q * lda + i] : a[ao + i * lda + q]) *
                          (tb ? bm[bo + j * ldb + q] : bm[bo + q * ldb + j]));
            bound = 1e-5 * (fabs(alpha) * sum + fabs(beta)) + 1e-6;
          }
          if (!(fabs((double)got[e] - want[e]) <= bound)) {
            snprintf(o->detail, sizeof o->detail,
                     "%s %zux%zux%zu trans %d%d: c[%zu] = %.8g, reference %.8g%s",
                     hs__gemm_kind_name(kind), m, n, k, ta, tb, e, (double)got[e],
                     (double)want[e], inside ? "" : " (outside C: must be untouched)");
            res = HS_CHECK_FAIL;
          }
        }
        products++;
      }
      hs__mem_release(&da), hs__mem_release(&db), hs__mem_release(&dc);
      free(a), free(bm), free(c), free(want), free(got);
    }
  hs__gemm_destroy(g);
  if (res == HS_CHECK_PASS)
    snprintf(o->detail, sizeof o->detail,
             "%s: %d products (every transpose, offsets, padded leading dimensions, beta 0 and -0.5) "
             "within 1e-5 of sum |a b|; outside C untouched",
             hs__gemm_kind_name(used), products);
  return res;
}

static hs_check_result gemm_default(hs__bu *b, hs__scope *s, hs__out *o) {
  return gemm_kind(b, s, o, HS_GEMM_AUTO);
}
static hs_check_result gemm_cblas(hs__bu *b, hs__scope *s, hs__out *o) {
  return gemm_kind(b, s, o, HS_GEMM_CBLAS);
}
static hs_check_result gemm_clblast(hs__bu *b, hs__scope *s, hs__out *o) {
  return gemm_kind(b, s, o, HS_GEMM_CLBLAST);
}
static hs_check_result gemm_builtin(hs__bu *b, hs__scope *s, hs__out *o) {
  return gemm_kind(b, s, o, HS_GEMM_BUILTIN);
}

/* ---- the full step ---------------------------------------------------------------------- */

static const int32_t step_fanouts[] = {10, 5};

/* The device side of step_on again, on a fresh model and trainer with
 * work-group size `wg`: its parameters after the 3 steps into *out. */
static hs_status replay(hs__scope *s, const hs_model_cfg *cfg, const hs_graph *g,
                        const hs_csr *csr, size_t wg, hs_model *out) {
  hs_trainer *t = NULL;
  hs_trainer_opts to = {.wg = wg};
  hs_status st = hs__model_create(cfg, out);
  if (st == HS_OK) st = hs__trainer_create(&s->ctx, &s->dev, s->q, out, &to, &t);
  for (uint32_t k = 0; st == HS_OK && k < 3; k++) {
    sbatch sb;
    if ((st = sbatch_make(g, csr, 2, step_fanouts, 64, 40 + k, &sb)) != HS_OK) break;
    hs_nn_batch nb = sbatch_view(&sb);
    if (k == 0) { /* as step_on does: gradients first, then the step */
      hs_train_stats skip = {0};
      if ((st = hs__trainer_upload(t, &nb)) == HS_OK &&
          (st = hs__trainer_gradients(t, 1, k, true)) == HS_OK)
        st = hs__trainer_drain_stats(t, &skip);
    }
    if (st == HS_OK) st = hs__trainer_upload(t, &nb);
    if (st == HS_OK) st = hs__trainer_step(t, 1, k);
    if (st == HS_OK) st = hs__queue_finish(s->q);
    sbatch_free(&sb);
  }
  if (st == HS_OK) st = hs__trainer_sync_model(t, out);
  hs__trainer_destroy(t);
  return st;
}

/* Three training steps through the device trainer and the reference on
 * batches sampled from `g`: parameters after each within 1e-5 relative. */
static hs_check_result step_on(hs__bu *b, hs__scope *s, hs__out *o, const hs_graph *g,
                               const hs_csr *csr, const char *gname, hs_optim_kind kind,
                               hs_nn_kind model) {
  (void)b;
  hs_model_cfg cfg;
  hs__model_cfg_defaults(&cfg);
  cfg.kind = model;
  cfg.heads = 4;
  cfg.n_layers = 2;
  cfg.in_dim = (int)g->f;
  cfg.hidden = 32;
  cfg.n_classes = g->num_classes;
  cfg.dropout = 0.3f;
  cfg.seed = 21;
  cfg.optim.kind = kind;
  cfg.optim.weight_decay = 5e-4f;
  cfg.optim.momentum = kind == HS_OPTIM_SGD ? 0.9f : 0.0f;
  cfg.optim.lr = kind == HS_OPTIM_SGD ? 0.1f : 0.01f;
  hs_model ref, dev, again;
  memset(&ref, 0, sizeof ref);
  memset(&dev, 0, sizeof dev);
  memset(&again, 0, sizeof again);
  hs_trainer *t = NULL;
  hs_check_result res = HS_CHECK_FAIL;
  hs_status st = hs__model_create(&cfg, &ref);
  if (st == HS_OK) st = hs__model_create(&cfg, &dev);
  hs_trainer_opts to = {.wg = 0};
  if (st == HS_OK) st = hs__trainer_create(&s->ctx, &s->dev, s->q, &dev, &to, &t);
  if (st != HS_OK) {
    hs__bu_error(o, gname, st);
    goto done;
  }
  char what[96];
  for (uint32_t k = 0; k < 3; k++) {
    sbatch sb;
    if ((st = sbatch_make(g, csr, 2, step_fanouts, 64, 40 + k, &sb)) != HS_OK) {
      hs__bu_error(o, gname, st);
      goto done;
    }
    hs_nn_batch nb = sbatch_view(&sb);
    hs_step_stats ss;
    if (k == 0) {
      /* Gradients alone first (dropout on), against the reference's. */
      size_t np = ref.shape.n_params;
      float *gd = malloc(sizeof(float) * np), *gr = malloc(sizeof(float) * np);
      hs_train_stats skip = {0};
      st = gd && gr ? HS_OK : hs__fail(HS_ERR_NOMEM, "gradients");
      if (st == HS_OK) st = hs__trainer_upload(t, &nb);
      if (st == HS_OK) st = hs__trainer_gradients(t, 1, k, true);
      if (st == HS_OK) st = hs__trainer_read_grads(t, gd);
      if (st == HS_OK) st = hs__trainer_drain_stats(t, &skip);
      if (st == HS_OK) st = hs__ref_gradients(&ref, &nb, 1, k, true, gr, NULL);
      snprintf(what, sizeof what, "%s: gradients", gname);
      bool same = st == HS_OK && hs__bu_rel(what, gd, gr, np, 1e-5, o->detail, sizeof o->detail);
      free(gd), free(gr);
      if (st != HS_OK) hs__bu_error(o, gname, st);
      if (!same) {
        sbatch_free(&sb);
        goto done;
      }
    }
    if ((st = hs__trainer_upload(t, &nb)) != HS_OK || (st = hs__trainer_step(t, 1, k)) != HS_OK ||
        (st = hs__ref_train_step(&ref, &nb, 1, k, &ss)) != HS_OK ||
        (st = hs__trainer_sync_model(t, &dev)) != HS_OK) {
      sbatch_free(&sb);
      hs__bu_error(o, gname, st);
      goto done;
    }
    sbatch_free(&sb);
    snprintf(what, sizeof what, "%s: parameters after step %u", gname, k + 1);
    if (!hs__bu_rel(what, dev.params, ref.params, ref.shape.n_params, 1e-5, o->detail,
                    sizeof o->detail))
      goto done;
  }
  hs_train_stats ts = {0};
  if ((st = hs__trainer_drain_stats(t, &ts)) != HS_OK) {
    hs__bu_error(o, gname, st);
    goto done;
  }
  /* The same steps at another work-group size give the same bits. */
  if ((st = replay(s, &cfg, g, csr, 16, &again)) != HS_OK) {
    hs__bu_error(o, gname, st);
    goto done;
  }
  if (memcmp(again.params, dev.params, sizeof(float) * dev.shape.n_params) != 0) {
    snprintf(o->detail, sizeof o->detail,
             "%s: parameters after 3 steps differ between work-group sizes 64 and 16 (the step "
             "must be bit-identical)",
             gname);
    goto done;
  }
  o->digest = hs__fnv(HS__FNV_SEED, dev.params, sizeof(float) * dev.shape.n_params);
  snprintf(o->detail, sizeof o->detail,
           "%s: gradients, then 3 %s steps of a 2-layer %s (%d -> 32 -> %d) on sampled "
           "batches of 64 seeds, gemm %s: within 1e-5 relative of the reference, and "
           "bit-identical at work-group sizes 64 and 16; last loss %.4f",
           gname, kind == HS_OPTIM_ADAM ? "Adam" : "SGD", hs__model_ops(model)->title,
           (int)g->f, g->num_classes,
           hs__gemm_kind_name(hs__trainer_gemm_kind(t)), (double)ts.last_loss);
  res = HS_CHECK_PASS;
done:
  hs__trainer_destroy(t);
  hs__model_destroy(&ref);
  hs__model_destroy(&dev);
  hs__model_destroy(&again);
  return res;
}

static hs_check_result step_generated(hs__bu *b, hs__scope *s, hs__out *o) {
  return step_on(b, s, o, b->data.gen, &b->data.gen_csr, "generated R-MAT", HS_OPTIM_ADAM,
                 HS_NN_SAGE);
}
static hs_check_result step_cora(hs__bu *b, hs__scope *s, hs__out *o) {
  if (s->dev.info.simulator) {
    snprintf(o->detail, sizeof o->detail,
             "'%s' is a simulator: Cora's 1433-feature step is left to real devices "
             "(train.step.generated runs the same kernels)",
             s->dev.info.name);
    return HS_CHECK_SKIP;
  }
  /* Cora's sparse binary features leave many gradients near zero, where
   * Adam's g / (|g| + eps) turns their last-bit differences into
   * parameter differences of order 1e-3: plain SGD with momentum keeps the
   * comparison about the step itself. */
  return step_on(b, s, o, b->data.cora, &b->data.cora_csr, "Cora", HS_OPTIM_SGD, HS_NN_SAGE);
}
static hs_check_result step_gcn(hs__bu *b, hs__scope *s, hs__out *o) {
  return step_on(b, s, o, b->data.cora, &b->data.cora_csr, "Cora", HS_OPTIM_SGD, HS_NN_GCN);
}
static hs_check_result step_gat(hs__bu *b, hs__scope *s, hs__out *o) {
  return step_on(b, s, o, b->data.cora, &b->data.cora_csr, "Cora", HS_OPTIM_SGD, HS_NN_GAT);
}

const hs__kernel_check hs__bu_train_checks[] = {
    {"train.transpose", HS_BRINGUP_STANDARD, transpose, HS_PROG_TRAIN_SAGE},
    {"train.agg_fwd", HS_BRINGUP_STANDARD, agg_fwd, HS_PROG_TRAIN_SAGE},
    {"train.agg_bwd", HS_BRINGUP_STANDARD, agg_bwd, HS_PROG_TRAIN_SAGE},
    {"train.elementwise", HS_BRINGUP_STANDARD, elementwise, HS_PROG_TRAIN_SAGE},
    {"train.colsum", HS_BRINGUP_STANDARD, colsum, HS_PROG_TRAIN_SAGE},
    {"train.loss", HS_BRINGUP_STANDARD, loss, HS_PROG_TRAIN_SAGE},
    {"train.optimizer", HS_BRINGUP_STANDARD, optimizer, HS_PROG_TRAIN_SAGE},
    {"gemm.default", HS_BRINGUP_QUICK, gemm_default, HS_PROG_GEMM},
    {"gemm.cblas", HS_BRINGUP_STANDARD, gemm_cblas, -1},
    {"gemm.clblast", HS_BRINGUP_STANDARD, gemm_clblast, -1},
    {"gemm.builtin", HS_BRINGUP_STANDARD, gemm_builtin, HS_PROG_GEMM},
    {"train.step.generated", HS_BRINGUP_STANDARD, step_generated, HS_PROG_TRAIN_SAGE},
    {"train.step.cora", HS_BRINGUP_STANDARD, step_cora, HS_PROG_TRAIN_SAGE},
    {"train.step.gcn", HS_BRINGUP_STANDARD, step_gcn, HS_PROG_TRAIN_GCN},
    {"train.step.gat", HS_BRINGUP_STANDARD, step_gat, HS_PROG_TRAIN_GAT},
};
const size_t hs__bu_train_check_count = HS_ARRAY_LEN(hs__bu_train_checks);
