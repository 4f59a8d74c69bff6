/* Every model kind there is, through the trainer: the device passes
 * against the kind's reference, the same bits at every work-group size,
 * prediction and layer-wise inference against the host's; and the seams
 * for other modules: the step in parts (gradients, a replaced gradient, the
 * update), the per-layer readiness hook, input gradients, and layer 0's
 * input transform standing in for the dense features. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cl_fixture.h"
#include "nn/infer.h"
#include "nn/model_ops.h"
#include "nn/ref_nn.h"
#include "nn/trainer.h"
#include "nn/trainer_internal.h"
#include "nn_check.h"
#include "nn_fixtures.h"

enum { IN_DIM = 24, CLASSES = 5 };

static bool model_of(hs_nn_kind kind, int n_layers, uint64_t seed, hs_model *m) {
  if (!hs__model_ops(kind)) return false;
  hs_model_cfg cfg;
  hs__model_cfg_defaults(&cfg);
  cfg.kind = kind;
  cfg.heads = 4;
  cfg.n_layers = n_layers;
  cfg.in_dim = IN_DIM;
  cfg.hidden = 32;
  cfg.n_classes = CLASSES;
  cfg.dropout = 0.3f;
  cfg.seed = seed;
  cfg.optim.weight_decay = 5e-4f;
  cr_assert_eq(hs__model_create(&cfg, m), HS_OK, "%s", hs_last_error());
  uint64_t s = seed;
  for (int l = 0; l < n_layers; l++)
    fx_fill(m->params + m->shape.b_off[l], (size_t)m->shape.dims[l + 1], &s, 0.1f);
  return true;
}

static hs_trainer *trainer_of(cl_fixture *f, const hs_model *m, bool input_grad) {
  hs_trainer_opts o = {.wg = 16, .input_grad = input_grad};
  hs_trainer *t;
  cr_assert_eq(hs__trainer_create(&f->ctx, &f->dev, f->q, m, &o, &t), HS_OK, "%s",
               hs_last_error());
  return t;
}

static void batch_of(fx_batch *fb, uint64_t seed) {
  int fan[2] = {5, 3};
  fx_batch_make(fb, 2, 48, fan, IN_DIM, CLASSES, seed);
}

Test(models, device_passes_match_the_reference) {
  cl_fixture f;
  clf_open(&f);
  for (int kind = 0; kind < HS_NN_KIND_COUNT_; kind++)
    for (int sgd = 0; sgd < 2; sgd++) {
      hs_model ref, dev;
      if (!model_of(kind, 2, 21, &ref)) break;
      model_of(kind, 2, 21, &dev);
      /* SGD with momentum, and Adam */
      hs_optim_kind ok = sgd ? HS_OPTIM_SGD : HS_OPTIM_ADAM;
      ref.cfg.optim.kind = dev.cfg.optim.kind = ok;
      ref.cfg.optim.momentum = dev.cfg.optim.momentum = sgd ? 0.9f : 0.0f;
      ref.cfg.optim.lr = dev.cfg.optim.lr = sgd ? 0.1f : 0.01f;
      hs_trainer *t = trainer_of(&f, &dev, false);
      size_t n = ref.shape.n_params;
      float *g_ref = malloc(4 * n), *g_dev = malloc(4 * n);
      const char *name = hs__nn_kind_name(kind);
      char what[96];
      for (uint32_t step = 0; step < 3; step++) {
        fx_batch fb;
        batch_of(&fb, 300 + step);
        hs_nn_batch b = fx_batch_view(&fb);
        cr_assert_eq(hs__trainer_upload(t, &b), HS_OK, "%s", hs_last_error());
        if (step == 0) {
          cr_assert_eq(hs__trainer_gradients(t, 1, step, true), HS_OK, "%s", hs_last_error());
          cr_assert_eq(hs__trainer_read_grads(t, g_dev), HS_OK);
          cr_assert_eq(hs__ref_gradients(&ref, &b, 1, step, true, g_ref, NULL), HS_OK);
          snprintf(what, sizeof what, "%s: gradients", name);
          expect_rel(what, g_dev, g_ref, n, 1e-5);
          hs_train_stats skip = {0};
          cr_assert_eq(hs__trainer_drain_stats(t, &skip), HS_OK);
        }
        cr_assert_eq(hs__trainer_step(t, 1, step), HS_OK, "%s", hs_last_error());
        cr_assert_eq(hs__ref_train_step(&ref, &b, 1, step, NULL), HS_OK);
        cr_assert_eq(hs__trainer_sync_model(t, &dev), HS_OK);
        snprintf(what, sizeof what, "%s, %s: parameters after step %u", name, sgd ? "sgd" : "adam",
                 step + 1);
        expect_rel(what, dev.params, ref.params, n, 1e-5);
        fx_batch_free(&fb);
      }
      free(g_ref), free(g_dev);
      hs__trainer_destroy(t);
      hs__model_destroy(&ref), hs__model_destroy(&dev);
    }
  clf_close(&f);
}

/* Parameters after 3 steps of a 3-layer model at local size `wg`. */
static float *three_steps(cl_fixture *f, hs_nn_kind kind, size_t wg) {
  hs_model m;
  model_of(kind, 3, 5, &m);
  hs_trainer_opts o = {.wg = wg};
  hs_trainer *t;
  cr_assert_eq(hs__trainer_create(&f->ctx, &f->dev, f->q, &m, &o, &t), HS_OK, "%s",
               hs_last_error());
  int fan[3] = {3, 4, 5};
  for (uint32_t step = 0; step < 3; step++) {
    fx_batch fb;
    fx_batch_make(&fb, 3, 40, fan, IN_DIM, CLASSES, 900 + step);
    hs_nn_batch b = fx_batch_view(&fb);
    cr_assert_eq(hs__trainer_upload(t, &b), HS_OK, "%s", hs_last_error());
    cr_assert_eq(hs__trainer_step(t, 0, step), HS_OK, "%s", hs_last_error());
    fx_batch_free(&fb);
  }
  cr_assert_eq(hs__trainer_sync_model(t, &m), HS_OK);
  float *out = malloc(4 * m.shape.n_params);
  memcpy(out, m.params, 4 * m.shape.n_params);
  hs__trainer_destroy(t);
  hs__model_destroy(&m);
  return out;
}

Test(models, the_same_bits_at_every_work_group_size) {
  cl_fixture f;
  clf_open(&f);
  static const size_t sizes[] = {0, 1, 3, 16, 64};
  for (int kind = 0; kind < HS_NN_KIND_COUNT_; kind++) {
    hs_model m;
    if (!model_of(kind, 3, 5, &m)) continue;
    size_t n = m.shape.n_params;
    hs__model_destroy(&m);
    float *first = three_steps(&f, kind, 64);
    for (size_t w = 0; w < sizeof sizes / sizeof sizes[0]; w++) {
      float *again = three_steps(&f, kind, sizes[w]);
      cr_expect_arr_eq(again, first, 4 * n, "%s: parameters differ at work-group size %zu",
                       hs__nn_kind_name(kind), sizes[w]);
      free(again);
    }
    free(first);
  }
  clf_close(&f);
}

/* Prediction on a batch against the reference forward, and layer-wise
 * inference over a whole graph against the host's. */
Test(models, prediction_and_layerwise_inference_match_the_reference) {
  cl_fixture f;
  clf_open(&f);
  fx_graph g;
  fx_graph_make(&g, 700, CLASSES, IN_DIM, 6, 3);
  hs_csr_view view = {.n_vertices = g.n, .indptr = g.indptr, .indices = g.indices};
  for (int kind = 0; kind < HS_NN_KIND_COUNT_; kind++) {
    hs_model m;
    if (!model_of(kind, 2, 29, &m)) continue;
    hs_trainer *t = trainer_of(&f, &m, false);
    const char *name = hs__nn_kind_name(kind);
    char what[64];
    fx_batch fb;
    batch_of(&fb, 17);
    hs_nn_batch b = fx_batch_view(&fb);
    size_t nl = (size_t)fb.blocks[1].n_dst * CLASSES;
    float *got = malloc(4 * nl), *want = malloc(4 * nl);
    cr_assert_eq(hs__trainer_upload(t, &b), HS_OK);
    cr_assert_eq(hs__trainer_predict(t, got), HS_OK, "%s", hs_last_error());
    cr_assert_eq(hs__ref_forward(&m.shape, m.params, &b, want), HS_OK, "%s", hs_last_error());
    snprintf(what, sizeof what, "%s: predicted logits", name);
    expect_rel(what, got, want, nl, 1e-5);
    size_t nall = (size_t)g.n * CLASSES, nh = (size_t)g.n * 32;
    float *dev_all = malloc(4 * nall), *host_all = malloc(4 * nall);
    float *dev_h = malloc(4 * nh), *host_h = malloc(4 * nh);
    cr_assert_eq(hs__trainer_infer_full(t, &view, g.feat, dev_all), HS_OK, "%s", hs_last_error());
    cr_assert_eq(hs__infer_full(&m.shape, m.params, &view, g.feat, host_all), HS_OK, "%s",
                 hs_last_error());
    snprintf(what, sizeof what, "%s: layer-wise logits", name);
    expect_rel(what, dev_all, host_all, nall, 1e-5);
    /* Stopped after the hidden layer: its representation. */
    cr_assert_eq(hs__trainer_infer_layers(t, &view, g.feat, 1, dev_h), HS_OK, "%s",
                 hs_last_error());
    cr_assert_eq(m.shape.ops->ref_layer(&m.shape, m.params, 0, &view, g.feat, host_h), HS_OK);
    snprintf(what, sizeof what, "%s: hidden representation", name);
    expect_rel(what, dev_h, host_h, nh, 1e-5);
    cr_expect_eq(hs__trainer_infer_layers(t, &view, g.feat, 3, dev_h), HS_ERR_INVALID_ARG);
    free(got), free(want), free(dev_all), free(host_all), free(dev_h), free(host_h);
    fx_batch_free(&fb);
    hs__trainer_destroy(t);
    hs__model_destroy(&m);
  }
  fx_graph_free(&g);
  clf_close(&f);
}

/* gradients + read + write back + apply is the step, bit for bit; and the
 * update applies what was written, not what was computed. */
Test(models, the_step_in_parts_is_the_step) {
  cl_fixture f;
  clf_open(&f);
  for (int kind = 0; kind < HS_NN_KIND_COUNT_; kind++) {
    hs_model a, b, c;
    if (!model_of(kind, 2, 11, &a)) continue;
    model_of(kind, 2, 11, &b);
    model_of(kind, 2, 11, &c);
    hs_trainer *ta = trainer_of(&f, &a, false), *tb = trainer_of(&f, &b, false),
               *tc = trainer_of(&f, &c, false);
    size_t n = a.shape.n_params;
    float *g = malloc(4 * n), *half = malloc(4 * n), *p0 = malloc(4 * n);
    memcpy(p0, c.params, 4 * n);
    for (uint32_t step = 0; step < 3; step++) {
      fx_batch fb;
      batch_of(&fb, 40 + step);
      hs_nn_batch nb = fx_batch_view(&fb);
      cr_assert_eq(hs__trainer_upload(ta, &nb), HS_OK, "%s", hs_last_error());
      cr_assert_eq(hs__trainer_step(ta, 0, step), HS_OK, "%s", hs_last_error());
      cr_assert_eq(hs__trainer_upload(tb, &nb), HS_OK);
      cr_assert_eq(hs__trainer_gradients(tb, 0, step, true), HS_OK, "%s", hs_last_error());
      cr_assert_eq(hs__trainer_read_grads(tb, g), HS_OK);
      cr_assert_eq(hs__trainer_write_grads(tb, g), HS_OK);
      cr_assert_eq(hs__trainer_apply(tb), HS_OK, "%s", hs_last_error());
      fx_batch_free(&fb);
    }
    cr_assert_eq(hs__trainer_sync_model(ta, &a), HS_OK);
    cr_assert_eq(hs__trainer_sync_model(tb, &b), HS_OK);
    cr_expect_arr_eq(b.params, a.params, 4 * n, "%s: parts differ from the step",
                     hs__nn_kind_name(kind));
    cr_expect_eq(b.step, 3u);
    /* Half the gradient written: SGD moves half as far. */
    c.cfg.optim.kind = HS_OPTIM_SGD;
    hs__trainer_destroy(tc);
    tc = trainer_of(&f, &c, false);
    fx_batch fb;
    batch_of(&fb, 77);
    hs_nn_batch nb = fx_batch_view(&fb);
    cr_assert_eq(hs__trainer_upload(tc, &nb), HS_OK);
    cr_assert_eq(hs__trainer_gradients(tc, 0, 0, true), HS_OK);
    cr_assert_eq(hs__trainer_read_grads(tc, g), HS_OK);
    for (size_t i = 0; i < n; i++) half[i] = 0.5f * g[i];
    cr_assert_eq(hs__trainer_write_grads(tc, half), HS_OK);
    cr_assert_eq(hs__trainer_apply(tc), HS_OK);
    cr_assert_eq(hs__trainer_sync_model(tc, &c), HS_OK);
    hs_optim_coef k;
    hs__optim_coef(&tc->cfg.optim, 1, &k);
    float *want = malloc(4 * n), *m = calloc(n, 4), *v = calloc(n, 4);
    memcpy(want, p0, 4 * n);
    hs__ref_optim(HS_OPTIM_SGD, &k, n, want, half, m, v);
    expect_rel("update from the written gradient", c.params, want, n, 1e-6);
    fx_batch_free(&fb);
    free(want), free(m), free(v);
    free(g), free(half), free(p0);
    hs__trainer_destroy(ta), hs__trainer_destroy(tb), hs__trainer_destroy(tc);
    hs__model_destroy(&a), hs__model_destroy(&b), hs__model_destroy(&c);
  }
  clf_close(&f);
}

/* What the hook saw: each call's layer and range, and the gradient range
 * read on the trainer's queue right after the call (so after exactly the
 * commands enqueued before it). */
typedef struct hook_log {
  cl_command_queue q;
  cl_mem grads;
  int calls, layer[HS_NN_MAX_LAYERS];
  size_t off[HS_NN_MAX_LAYERS], n[HS_NN_MAX_LAYERS];
  float *seen; /* n_params */
  bool ready_ok;
} hook_log;

static void on_layer(void *user, int layer, size_t off, size_t n, cl_event ready) {
  hook_log *h = user;
  if (h->calls < HS_NN_MAX_LAYERS) {
    h->layer[h->calls] = layer;
    h->off[h->calls] = off;
    h->n[h->calls] = n;
  }
  h->calls++;
  h->ready_ok = h->ready_ok && ready != NULL;
  hs__mem_read(h->q, h->grads, false, off * 4, n * 4, h->seen + off, 1, &ready, NULL);
}

Test(models, the_layer_hook_hears_each_layer_once_its_gradients_are_final) {
  cl_fixture f;
  clf_open(&f);
  for (int kind = 0; kind < HS_NN_KIND_COUNT_; kind++) {
    hs_model m;
    if (!model_of(kind, 3, 5, &m)) continue;
    hs_trainer *t = trainer_of(&f, &m, false);
    size_t n = m.shape.n_params;
    hook_log h = {.q = f.q, .grads = hs__trainer_grad_buffer(t), .seen = calloc(n, 4),
                  .ready_ok = true};
    float *final = malloc(4 * n);
    int fan[3] = {3, 3, 2};
    for (uint32_t step = 0; step < 2; step++) {
      fx_batch fb;
      fx_batch_make(&fb, 3, 30, fan, IN_DIM, CLASSES, 60 + step);
      hs_nn_batch nb = fx_batch_view(&fb);
      /* The second batch's gradients differ from the first's: a hook
       * called too early would read the first's. */
      if (step == 1) hs__trainer_set_layer_hook(t, on_layer, &h);
      cr_assert_eq(hs__trainer_upload(t, &nb), HS_OK);
      cr_assert_eq(hs__trainer_gradients(t, 0, step, true), HS_OK, "%s", hs_last_error());
      cr_assert_eq(hs__queue_finish(f.q), HS_OK);
      fx_batch_free(&fb);
    }
    cr_assert_eq(hs__trainer_read_grads(t, final), HS_OK);
    const char *name = hs__nn_kind_name(kind);
    cr_expect_eq(h.calls, 3, "%s: %d calls for 3 layers", name, h.calls);
    cr_expect(h.ready_ok, "%s: a call without an event", name);
    size_t covered = 0;
    for (int i = 0; i < 3 && i < h.calls; i++) {
      int l = 2 - i;
      cr_expect_eq(h.layer[i], l, "%s: call %d names layer %d", name, i, h.layer[i]);
      cr_expect_eq(h.off[i], m.shape.layer_off[l]);
      cr_expect_eq(h.n[i], m.shape.layer_n[l]);
      covered += h.n[i];
    }
    cr_expect_eq(covered, n, "%s: the layers' ranges cover %zu of %zu parameters", name, covered,
                 n);
    cr_expect_arr_eq(h.seen, final, 4 * n, "%s: a range was read before it was final", name);
    hs__trainer_set_layer_hook(t, NULL, NULL);
    free(h.seen), free(final);
    hs__trainer_destroy(t);
    hs__model_destroy(&m);
  }
  clf_close(&f);
}

/* d(loss)/dX on the device against the reference's, which the reference
 * tests check against finite differences. */
Test(models, input_gradients_match_the_reference) {
  cl_fixture f;
  clf_open(&f);
  for (int kind = 0; kind < HS_NN_KIND_COUNT_; kind++) {
    hs_model m;
    if (!model_of(kind, 2, 13, &m)) continue;
    hs_trainer *t = trainer_of(&f, &m, true);
    fx_batch fb;
    batch_of(&fb, 91);
    hs_nn_batch nb = fx_batch_view(&fb);
    size_t rows = (size_t)fb.blocks[0].n_src, nx = rows * IN_DIM, np = m.shape.n_params;
    float *dx = malloc(4 * nx), *want = malloc(4 * nx), *g = malloc(4 * np), *gw = malloc(4 * np);
    cr_assert_eq(hs__trainer_upload(t, &nb), HS_OK);
    cr_assert_eq(hs__trainer_gradients(t, 2, 3, true), HS_OK, "%s", hs_last_error());
    cr_assert_eq(hs__trainer_read_input_grad(t, dx), HS_OK, "%s", hs_last_error());
    cr_assert_eq(hs__trainer_read_grads(t, g), HS_OK);
    cl_mem buf;
    size_t got_rows;
    cr_assert_eq(hs__trainer_input_grad(t, &buf, &got_rows), HS_OK);
    cr_expect_eq(got_rows, rows);
    cr_assert_eq(hs__ref_gradients_x(&m, &nb, 2, 3, true, gw, want, NULL), HS_OK, "%s",
                 hs_last_error());
    char what[64];
    snprintf(what, sizeof what, "%s: dX", hs__nn_kind_name(kind));
    expect_rel(what, dx, want, nx, 1e-4);
    snprintf(what, sizeof what, "%s: parameter gradients beside dX", hs__nn_kind_name(kind));
    expect_rel(what, g, gw, np, 1e-4);
    /* Without the option there is none. */
    hs_trainer *plain = trainer_of(&f, &m, false);
    cr_expect_eq(hs__trainer_read_input_grad(plain, dx), HS_ERR_STATE);
    hs__trainer_destroy(plain);
    fx_batch_free(&fb);
    free(dx), free(want), free(g), free(gw);
    hs__trainer_destroy(t);
    hs__model_destroy(&m);
  }
  clf_close(&f);
}

/* A provider of layer 0's products: here the same dense rows in its own
 * buffer, multiplied through the trainer's GEMM provider, counting calls. */
typedef struct dense_input {
  cl_mem x;
  size_t rows, dim;
  int muls, mul_ts;
} dense_input;

static hs_status in_mul(void *user, hs_trainer *t, cl_mem params, size_t w_off, size_t ldw,
                        size_t n, cl_mem out) {
  dense_input *d = user;
  d->muls++;
  hs_gemm_op op = {.m = d->rows, .n = n, .k = d->dim, .alpha = 1.0f, .a = d->x, .lda = d->dim,
                   .b = params, .b_off = w_off, .ldb = ldw, .c = out, .ldc = n};
  return hs__trainer_gemm(t, &op);
}

static hs_status in_mul_t(void *user, hs_trainer *t, cl_mem dout, size_t n, cl_mem grads,
                          size_t g_off, size_t ldg) {
  dense_input *d = user;
  d->mul_ts++;
  hs_gemm_op op = {.trans_a = true, .m = d->dim, .n = n, .k = d->rows, .alpha = 1.0f, .a = d->x,
                   .lda = d->dim, .b = dout, .ldb = n, .c = grads, .c_off = g_off, .ldc = ldg};
  return hs__trainer_gemm(t, &op);
}

Test(models, an_input_provider_stands_in_for_the_features) {
  cl_fixture f;
  clf_open(&f);
  for (int kind = 0; kind < HS_NN_KIND_COUNT_; kind++) {
    hs_model m;
    if (!model_of(kind, 2, 17, &m)) continue;
    hs_trainer *t = trainer_of(&f, &m, true), *plain = trainer_of(&f, &m, false);
    fx_batch fb;
    batch_of(&fb, 123);
    hs_nn_batch nb = fx_batch_view(&fb);
    size_t rows = (size_t)fb.blocks[0].n_src, np = m.shape.n_params, nx = rows * IN_DIM;
    dense_input d = {.x = clf_upload(&f, fb.feat, 4 * nx), .rows = rows, .dim = IN_DIM};
    hs_nn_input in = {.mul = in_mul, .mul_t = in_mul_t, .user = &d};
    hs__trainer_set_input(t, &in);
    /* The features never reach the trainer: only the provider has them. */
    hs_nn_batch no_feat = nb;
    no_feat.feat = NULL;
    float *g = malloc(4 * np), *gw = malloc(4 * np), *dx = malloc(4 * nx), *dxw = malloc(4 * nx);
    float *g_plain = malloc(4 * np), *g_again = malloc(4 * np);
    cr_assert_eq(hs__trainer_upload(t, &no_feat), HS_OK, "%s", hs_last_error());
    cl_mem fbuf;
    cr_assert_eq(hs__trainer_feat_buffer(t, rows, &fbuf), HS_OK);
    float nan = NAN;
    cr_assert_eq(hs__mem_fill(f.q, fbuf, &nan, 4, 0, 4 * nx, 0, NULL, NULL), HS_OK);
    cr_assert_eq(hs__trainer_gradients(t, 1, 4, true), HS_OK, "%s", hs_last_error());
    cr_assert_eq(hs__trainer_read_grads(t, g), HS_OK);
    cr_assert_eq(hs__trainer_read_input_grad(t, dx), HS_OK);
    cr_assert_eq(hs__ref_gradients_x(&m, &nb, 1, 4, true, gw, dxw, NULL), HS_OK);
    const char *name = hs__nn_kind_name(kind);
    cr_expect_gt(d.muls, 0, "%s: layer 0 never multiplied through the provider", name);
    cr_expect_gt(d.mul_ts, 0, "%s: layer 0's weight gradient bypassed the provider", name);
    char what[64];
    snprintf(what, sizeof what, "%s: gradients through the provider", name);
    expect_rel(what, g, gw, np, 1e-4);
    snprintf(what, sizeof what, "%s: dX through the provider", name);
    expect_rel(what, dx, dxw, nx, 1e-4);
    /* Removing it restores the dense path, bit for bit. */
    hs__trainer_set_input(t, NULL);
    cr_assert_eq(hs__trainer_upload(t, &nb), HS_OK);
    cr_assert_eq(hs__trainer_gradients(t, 1, 4, true), HS_OK);
    cr_assert_eq(hs__trainer_read_grads(t, g_again), HS_OK);
    cr_assert_eq(hs__trainer_upload(plain, &nb), HS_OK);
    cr_assert_eq(hs__trainer_gradients(plain, 1, 4, true), HS_OK);
    cr_assert_eq(hs__trainer_read_grads(plain, g_plain), HS_OK);
    cr_expect_arr_eq(g_again, g_plain, 4 * np, "%s: the dense path changed", name);
    hs__mem_release(&d.x);
    fx_batch_free(&fb);
    free(g), free(gw), free(dx), free(dxw), free(g_plain), free(g_again);
    hs__trainer_destroy(t), hs__trainer_destroy(plain);
    hs__model_destroy(&m);
  }
  clf_close(&f);
}
