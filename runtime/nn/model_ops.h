/* A model's table of operations: everything that differs between model
 * kinds. The trainer, the plain-C reference step, full-neighbour inference,
 * checkpoints and bring-up drive every kind through this table and know
 * nothing else of it.
 *
 * Adding a model means: its kernels (a .cl file, if it needs new ones), its
 * table and the functions the table names (layout, initial parameters, the
 * plain-C reference, the device passes and its kernels' launchers), one line
 * in the list of tables (models.c), its program in the registry
 * (devices/programs.c), and its tests.
 *
 * What the entries agree on:
 *  - Blocks, batches and local ids are as hs_nn_block.h says. The output of
 *    the last layer, before its bias, is the n_seeds x n_classes "out"; the
 *    shared code adds the bias (at b_off[L-1]) inside the softmax
 *    cross-entropy and hands back d(loss)/d(out).
 *  - Hidden layers end in hs__ref_bias_act_fwd / hs_bias_act_fwd (bias at
 *    b_off[l], ReLU, dropout keyed by (seed, epoch, batch, layer,
 *    element)), so their outputs are what the next layer reads, and the
 *    ReLU/dropout backward needs only those outputs.
 *  - Layer 0 reads the batch's input rows X (blocks[0].n_src x in_dim)
 *    and nothing else of the batch's features. On the device a model may
 *    multiply X by a block of its layer-0 weights only through the input
 *    transform (trainer_internal.h: hs__nn_input_mul and its transpose),
 *    so that another representation of X (sparse rows, embeddings looked
 *    up elsewhere) can stand in for the dense matrix.
 *  - Gradients land in the flat gradient array at the layout's offsets;
 *    every entry of a layer's range [layer_off, layer_off + layer_n) is
 *    written (not accumulated) by the backward pass, last layer first.
 *  - The same inputs give the same bits: no float atomics, sums in a fixed
 *    order that the reference follows. */
#ifndef HS_NN_MODEL_OPS_H
#define HS_NN_MODEL_OPS_H

#include "nn/hs_nn_block.h"
#include "nn/model.h"
#include "nn/nn_kernels.h"

struct hs_trainer;
struct hs_dbuf;

/* The dropout keys of one pass: p == 0 turns dropout off (inference). */
typedef struct hs_nn_keys {
  float p;
  uint64_t seed;
  uint32_t epoch, batch;
} hs_nn_keys;

/* A whole graph on the trainer device, as one block whose destinations
 * are every vertex (layer-wise inference): CSR dst -> src, 32-bit. */
typedef struct hs_dev_graph {
  cl_int n, n_edges;
  cl_mem row_ptr; /* n + 1 */
  cl_mem col;     /* n_edges */
} hs_dev_graph;

/* Scratch buffers a model's layer-wise inference may grow; owned and
 * released by the caller after the whole inference. */
#define HS_NN_INFER_SCRATCH 8

typedef struct hs_model_ops {
  hs_nn_kind kind;
  const char *name;  /* "sage": what --model, checkpoints and logs say */
  const char *title; /* "GraphSAGE-mean" */
  /* A vertex's output depends on its block beyond the values of its
   * receptive field (GCN's degrees count the block's edges): over
   * full-neighbour blocks of a few vertices it is not what the whole graph
   * gives, so full-neighbour inference runs layer-wise. */
  bool block_normalised;

  /* ---- layout ---------------------------------------------------------- */

  /* Check the kind's own fields of `cfg` (HS_ERR_INVALID_ARG naming the
   * field) and fill sh's offsets, heads and n_params; kind, ops, n_layers
   * and dims are set already. */
  hs_status (*layout)(const hs_model_cfg *cfg, hs_model_shape *sh);
  /* Initial parameters (every entry of the flat array). */
  void (*init)(const hs_model_shape *sh, uint64_t seed, float *params);

  /* ---- plain-C reference ---------------------------------------------- */

  /* Forward of a validated batch: `*out` points at the last layer's
   * output before its bias (n_seeds x n_classes), inside `*ws`, which
   * holds whatever backward needs; free it with ref_free (also after a
   * failure). */
  hs_status (*ref_forward)(const hs_model_shape *sh, const float *params, const hs_nn_batch *b,
                           const hs_nn_keys *k, void **ws, const float **out);
  /* Backward from dout = d(loss)/d(out): every parameter's gradient into
   * `grads`, and when `dx` is not NULL the gradient with respect to the
   * input rows X (blocks[0].n_src x in_dim). */
  hs_status (*ref_backward)(const hs_model_shape *sh, const float *params, const hs_nn_batch *b,
                            const hs_nn_keys *k, void *ws, const float *dout, float *grads,
                            float *dx);
  void (*ref_free)(void *ws);
  /* Layer l over a whole graph with every neighbour (no dropout): out
   * (n x dims[l+1]) from in (n x dims[l]), bias added, ReLU on hidden
   * layers. */
  hs_status (*ref_layer)(const hs_model_shape *sh, const float *params, int l,
                         const hs_csr_view *g, const float *in, float *out);

  /* ---- device ------------------------------------------------------------ */

  /* The training program: its registry entry (devices/programs.c lists the
   * shared training sources, then the kind's own), and its own kernels'
   * names (ids HS_K_MODEL + i). */
  hs_train_program program;
  /* Grow the kind's buffers for the batch whose shapes the trainer
   * recorded (trainer_internal.h). */
  hs_status (*dev_reserve)(struct hs_trainer *t);
  /* Enqueue the forward pass: t->logits = out (before the last bias). */
  hs_status (*dev_forward)(struct hs_trainer *t, const hs_nn_keys *k);
  /* Enqueue the backward pass from t->dz[L-1] = dout: t->grads (calling
   * hs__trainer_layer_done as each layer's range is complete) and, when the
   * trainer computes input gradients, t->dx. */
  hs_status (*dev_backward)(struct hs_trainer *t, const hs_nn_keys *k);
  /* Enqueue layer l over the whole graph `g`: out (g->n x dims[l+1]) from
   * in (g->n x dims[l]), bias added, ReLU on hidden layers (as ref_layer). */
  hs_status (*dev_layer)(struct hs_trainer *t, int l, const hs_dev_graph *g, cl_mem in,
                         cl_mem out, struct hs_dbuf *scratch);
} hs_model_ops;

/* The table of `kind`, or NULL. */
const hs_model_ops *hs__model_ops(int kind);
/* The table named `name` ("sage", "gcn", "gat"), or NULL. */
const hs_model_ops *hs__model_ops_by_name(const char *name);

#endif
