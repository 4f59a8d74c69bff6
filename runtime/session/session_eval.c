/* Evaluation, prediction and checkpoints of a session. */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "data/hs_npy.h"
#include "hs_session_int.h"
#include "nn/checkpoint.h"
#include "nn/model_ops.h"

/* Evaluation batches are keyed apart from every training epoch. */
#define EVAL_EPOCH_KEY 0xfffffff0u

static int32_t argmax(const float *row, int n) {
  int32_t best = 0;
  for (int c = 1; c < n; c++)
    if (row[c] > row[best]) best = c;
  return best;
}

static hs_status eval_sampled_on_root(hs_session *s, int split, double *accuracy) {
  return hs_session_evaluate(s, (hs_split)split, accuracy);
}

static hs_status eval_full_on_root(hs_session *s, int split, double *accuracy) {
  return hs_session_evaluate_full(s, (hs_split)split, accuracy);
}

/* The stop flag an evaluation or a prediction starting now watches, to end
 * between batches (or layers) once it is raised: NULL where one is up
 * already (a program evaluating the model of an epoch it stopped) and
 * when distributed (the other ranks wait on rank 0's answer). */
static const volatile sig_atomic_t *watched_stop(const hs_session *s) {
  return !s->comm && s->stop && !*s->stop ? s->stop : NULL;
}

/* Whether a loop over n vertices, `done` of them behind it, stops here:
 * looked at before each batch and after the last, so that a signal during
 * the last batch stops it too. HS_ERR_INTERRUPTED naming `what`. */
static hs_status stop_check(const volatile sig_atomic_t *stop, int64_t done, int64_t n,
                            const char *what) {
  if (!stop || !*stop) return HS_OK;
  return hs__fail(HS_ERR_INTERRUPTED, "%s stopped after %lld of %lld vertices", what,
                  (long long)(done < n ? done : n), (long long)n);
}

static hs_status no_split(const hs_session *s, hs_split split) {
  static const char *const files[] = {"train_idx.npy", "valid_idx.npy", "test_idx.npy"};
  return hs__fail(HS_ERR_FORMAT, "%s/%s is %s: the dataset has no such split",
                  hs__dataset_dir(s->ds), files[split], s->g->split[split] ? "empty" : "missing");
}

hs_status hs_session_evaluate(hs_session *s, hs_split split, double *accuracy) {
  if (!s || !accuracy || split < 0 || split >= HS_SPLIT_COUNT_)
    return hs__fail(HS_ERR_INVALID_ARG, "hs_session_evaluate: bad argument");
  /* Distributed: the workers hold the same parameters; rank 0 evaluates
   * for everyone. */
  if (s->comm && !s->dist_local)
    return hs__session_dist_on_root(s, eval_sampled_on_root, (int)split, accuracy);
  const int32_t *ids = s->g->split[split];
  int64_t n = s->g->split_n[split];
  if (!ids || n == 0) return no_split(s, split);
  int classes = s->g->num_classes;
  float *logits = malloc((size_t)s->cfg.batch_size * (size_t)classes * sizeof *logits);
  if (!logits) return hs__fail(HS_ERR_NOMEM, "out of memory for logits");
  hs_slot_data *d = &s->slots[0];
  int64_t correct = 0;
  hs_status st = HS_OK;
  const volatile sig_atomic_t *stop = watched_stop(s);
  for (int64_t first = 0; st == HS_OK; first += s->cfg.batch_size) {
    if ((st = stop_check(stop, first, n, "evaluation")) != HS_OK || first >= n) break;
    int32_t m = (int32_t)(n - first < s->cfg.batch_size ? n - first : s->cfg.batch_size);
    st = hs__session_sample_gather(s, ids + first, m, EVAL_EPOCH_KEY + (uint32_t)split,
                                   (uint32_t)(first / s->cfg.batch_size), d);
    hs_nn_batch nb;
    hs__session_nn_batch(d, &nb);
    if (st == HS_OK) st = hs__trainer_upload(s->trainer, &nb);
    if (st == HS_OK) st = hs__trainer_predict(s->trainer, logits);
    for (int32_t i = 0; st == HS_OK && i < m; i++)
      correct += argmax(logits + (size_t)i * classes, classes) == d->labels[i];
  }
  free(logits);
  if (st == HS_OK) *accuracy = (double)correct / (double)n;
  return st;
}

/* Receptive fields cost, per chunk of ids, their L-hop neighbourhoods, and
 * chunks recompute what they share: about n * dbar^L entries for mean
 * degree dbar. Layer-wise inference costs L passes over the whole graph
 * (L * E entries) and needs every feature row resident as float32 (no
 * host tier) and 32-bit edge offsets. The cheaper one runs;
 * the full_inference setting (HETSAGE_FULL_INFERENCE) forces one (tests
 * compare them). A model whose outputs depend on the block beyond the
 * receptive field (GCN's normalisation: model_ops.h) runs layer-wise
 * whenever it can, so that a vertex's prediction is its whole-graph output
 * however many vertices are asked for. */
static bool use_layerwise(const hs_session *s, int64_t n) {
  const hs_graph *g = s->g;
  bool can = !s->tier && (s->emb_dim > 0 || (g->feat && g->feat_dtype == HS_DTYPE_FLOAT32)) &&
             !g->feat_sparse && g->indptr[g->n] <= INT32_MAX;
  hs_full_inference force = s->rt->settings.full_inference;
  if (force == HS_FULL_INFERENCE_FIELDS) return false;
  if (force == HS_FULL_INFERENCE_LAYERWISE) return can;
  if (!can) return false;
  if (s->model.shape.ops->block_normalised) return true;
  int L = s->model.shape.n_layers;
  double e = (double)g->indptr[g->n], dbar = g->n ? e / (double)g->n : 0, fields = (double)n;
  for (int l = 0; l < L; l++) fields *= dbar > 1 ? dbar : 1;
  return fields > (double)L * e;
}

static hs_status layerwise_logits(hs_session *s, const int32_t *ids, int64_t n, float *logits) {
  const int classes = s->g->num_classes;
  hs_csr_view g = {.n_vertices = s->g->n, .indptr = s->g->indptr, .indices = s->g->indices};
  float *all = malloc((size_t)s->g->n * (size_t)classes * sizeof *all + 1);
  if (!all)
    return hs__fail(HS_ERR_NOMEM, "out of memory for %lld x %d logits", (long long)s->g->n,
                    classes);
  const float *x = NULL;
  bool owned = false;
  hs_status st = hs__session_check_all_rows(s);
  if (st == HS_OK) st = hs__session_all_rows(s, &x, &owned);
  if (st == HS_OK)
    st = hs__trainer_infer_layers_stop(s->trainer, &g, x, s->model.shape.n_layers, all,
                                       watched_stop(s));
  if (owned) free((void *)x);
  for (int64_t i = 0; st == HS_OK && i < n; i++)
    memcpy(logits + (size_t)i * classes, all + (size_t)ids[i] * classes,
           sizeof(float) * (size_t)classes);
  free(all);
  return st;
}

/* Logits (n x classes) of `ids` from their full neighbourhoods, computed
 * on the trainer device chunk by chunk: each chunk's receptive field is
 * built as full-neighbour blocks (every neighbour, numbered as the sampler
 * numbers them) and run through the trainer's forward pass; or layer-wise
 * over the whole graph when that costs less (use_layerwise). */
static hs_status full_logits(hs_session *s, const int32_t *ids, int64_t n, float *logits) {
  const int classes = s->g->num_classes;
  const size_t f = (size_t)s->in_dim;
  hs_csr_view g = {.n_vertices = s->g->n, .indptr = s->g->indptr, .indices = s->g->indices};
  float *feat = NULL, *out = NULL;
  size_t cap_rows = 0;
  /* Full neighbourhoods come from the host copy of the topology. */
  hs_status st = hs__graph_topology(s->g, "full-neighbour inference");
  if (st != HS_OK) return st;
  if (use_layerwise(s, n)) return layerwise_logits(s, ids, n, logits);
  out = malloc((size_t)s->cfg.batch_size * (size_t)classes * sizeof *out);
  if (!out) return hs__fail(HS_ERR_NOMEM, "out of memory for logits");
  const volatile sig_atomic_t *stop = watched_stop(s);
  for (int64_t first = 0; st == HS_OK; first += s->cfg.batch_size) {
    if ((st = stop_check(stop, first, n, "inference")) != HS_OK || first >= n) break;
    int32_t m = (int32_t)(n - first < s->cfg.batch_size ? n - first : s->cfg.batch_size);
    hs_nn_block_set set = {0};
    if ((st = hs__full_blocks_build(&g, ids + first, m, s->model.shape.n_layers, &set)) != HS_OK)
      break;
    size_t rows = (size_t)set.blocks[0].n_src;
    if (s->g->feat_sparse) {
      /* Slot 0's CSR arrays, grown to the receptive field if needed. */
      hs_slot_data *d = &s->slots[0];
      if ((st = hs__session_sparse_alloc(s, d, (int64_t)rows)) == HS_OK)
        st = hs__session_rows_sparse(s, set.ids, (int32_t)rows, -1, d);
      hs_nn_batch nb = {.n_layers = set.n_layers, .blocks = set.blocks, .sfeat = &d->sx};
      if (st == HS_OK) st = hs__trainer_upload(s->trainer, &nb);
      if (st == HS_OK) st = hs__trainer_predict(s->trainer, out);
      for (int32_t i = 0; st == HS_OK && i < m; i++)
        memcpy(logits + (size_t)(first + i) * classes, out + (size_t)set.seed_local[i] * classes,
               sizeof(float) * (size_t)classes);
      hs__block_set_free(&set);
      continue;
    }
    if (rows > cap_rows) {
      free(feat);
      feat = malloc(rows * f * sizeof *feat + 1);
      cap_rows = rows;
      if (!feat) {
        st = hs__fail(HS_ERR_NOMEM, "out of memory for %zu feature rows", rows);
        hs__block_set_free(&set);
        break;
      }
    }
    st = hs__session_rows_in(s, set.ids, (int32_t)rows, feat);
    hs_nn_batch nb = {.n_layers = set.n_layers, .blocks = set.blocks, .feat = feat, .labels = NULL};
    if (st == HS_OK) st = hs__trainer_upload(s->trainer, &nb);
    if (st == HS_OK) st = hs__trainer_predict(s->trainer, out);
    for (int32_t i = 0; st == HS_OK && i < m; i++)
      memcpy(logits + (size_t)(first + i) * classes, out + (size_t)set.seed_local[i] * classes,
             sizeof(float) * (size_t)classes);
    hs__block_set_free(&set);
  }
  free(out);
  free(feat);
  return st;
}

hs_status hs_session_evaluate_full(hs_session *s, hs_split split, double *accuracy) {
  if (!s || !accuracy || split < 0 || split >= HS_SPLIT_COUNT_)
    return hs__fail(HS_ERR_INVALID_ARG, "hs_session_evaluate_full: bad argument");
  if (s->comm && !s->dist_local)
    return hs__session_dist_on_root(s, eval_full_on_root, (int)split, accuracy);
  const int32_t *ids = s->g->split[split];
  int64_t n = s->g->split_n[split];
  if (!ids || n == 0) return no_split(s, split);
  const int classes = s->g->num_classes;
  float *logits = malloc((size_t)n * (size_t)classes * sizeof *logits);
  if (!logits) return hs__fail(HS_ERR_NOMEM, "out of memory for %lld x %d logits", (long long)n, classes);
  hs_status st = full_logits(s, ids, n, logits);
  if (st == HS_OK) {
    int64_t correct = 0;
    for (int64_t i = 0; i < n; i++)
      correct += argmax(logits + (size_t)i * classes, classes) == s->g->labels[ids[i]];
    *accuracy = (double)correct / (double)n;
  }
  free(logits);
  return st;
}

hs_status hs_session_predict(hs_session *s, const int64_t *ids, int64_t n, int32_t *classes,
                             float *logits_out) {
  if (!s || (!ids && n > 0) || !classes || n < 0 || n > INT32_MAX)
    return hs__fail(HS_ERR_INVALID_ARG, "hs_session_predict: bad argument");
  if (s->server)
    return hs__fail(HS_ERR_STATE, "rank %d is a parameter server: it holds no model to predict "
                    "with", s->rank);
  const int c = s->g->num_classes;
  int32_t *ids32 = calloc((size_t)n + 1, sizeof *ids32);
  float *logits = malloc((size_t)n * (size_t)c * sizeof *logits + 1);
  hs_status st = HS_OK;
  if (!ids32 || !logits) {
    st = hs__fail(HS_ERR_NOMEM, "out of memory predicting %lld vertices", (long long)n);
    goto done;
  }
  for (int64_t i = 0; i < n; i++) {
    if (ids[i] < 0 || ids[i] >= s->g->n) {
      st = hs__fail(HS_ERR_RANGE,
                    "vertex id %lld (position %lld) is outside the graph of %lld vertices",
                    (long long)ids[i], (long long)i, (long long)s->g->n);
      goto done;
    }
    ids32[i] = (int32_t)ids[i];
  }
  if ((st = full_logits(s, ids32, n, logits)) != HS_OK) goto done;
  for (int64_t i = 0; i < n; i++) classes[i] = argmax(logits + (size_t)i * c, c);
  if (logits_out) memcpy(logits_out, logits, (size_t)n * (size_t)c * sizeof *logits);
done:
  free(ids32);
  free(logits);
  return st;
}

/* The options of this session's run beyond the model (hs_ckpt_run). */
void hs__session_run(const hs_session *s, hs_ckpt_run *r) {
  memset(r, 0, sizeof *r);
  r->set = true;
  r->n_layers = s->cfg.n_layers;
  for (int l = 0; l < s->cfg.n_layers; l++) r->fanouts[l] = s->cfg.fanouts[l];
  r->batch_size = s->cfg.batch_size;
  r->memory_budget = s->cfg.memory_budget;
  if (s->tier) {
    hs_host_tier_info ti;
    hs__host_tier_info(s->tier, &ti);
    r->order = 1;
    r->rows_per_block = (uint64_t)ti.rows_per_block;
  }
  r->n_vertices = (uint64_t)s->g->n;
  r->n_edges = (uint64_t)s->g->e;
  r->n_train = (uint64_t)s->g->split_n[HS_SPLIT_TRAIN];
  r->sampling_set = true;
  r->sampling = (uint32_t)s->cfg.sampling;
  r->replace = s->cfg.replace;
  r->vertex_budget = s->cfg.vertex_budget;
  /* Thresholds mean something in threshold mode only. */
  for (int l = 0; l < s->cfg.n_layers && s->cfg.sampling == HS_SAMPLING_THRESHOLD; l++)
    r->thresholds[l] = s->cfg.thresholds[l];
  r->gemm_set = true;
  int t = s->cfg.gemm_threads > 0 ? s->cfg.gemm_threads : s->rt->settings.gemm_threads;
  r->gemm_threads = t > 0 ? (uint32_t)t : 0;
  if (s->emb_dim > 0) {
    r->node_embedding = s->emb_dim;
    r->node_embedding_lr = s->cfg.node_embedding_lr;
    r->node_embedding_tick = s->emb_tick;
  }
}

/* The node embeddings' store, after the parameters in the same file. */
static hs_status write_store(void *ctx, hs_afile *a) {
  return hs__embed_write((const hs_embed *)ctx, a);
}

hs_status hs_session_save(hs_session *s, const char *path) {
  if (!s || !path) return hs__fail(HS_ERR_INVALID_ARG, "hs_session_save: NULL argument");
  if (s->comm) return hs__session_dist_save(s, path);
  hs_status st = hs__trainer_sync_model(s->trainer, &s->model);
  if (st != HS_OK) return st;
  s->model.epoch = (uint64_t)s->epoch;
  s->model.rng_counter = (uint64_t)s->batch_pos;
  hs_ckpt_run run;
  hs__session_run(s, &run);
  /* Between epochs every looked-up batch was applied or released, so the
   * store holds what the next batch would read. */
  return hs__checkpoint_save_tail(&s->model, &run, path, s->emb ? write_store : NULL, s->emb);
}

static void fanouts_text(const int32_t *f, int n, char *buf, size_t len) {
  size_t at = 0;
  buf[0] = '\0';
  for (int l = 0; l < n && at < len; l++)
    at += (size_t)snprintf(buf + at, len - at, l ? ",%d" : "%d", f[l]);
}

static hs_status differs(const char *path, const char *what, const char *file_v,
                         const char *session_v) {
  return hs__fail(HS_ERR_INVALID_ARG, "%s: %s %s in the checkpoint, %s in this session: a resumed "
                  "run keeps the options of the run it continues", path, what, file_v, session_v);
}

static hs_status differs_f(const char *path, const char *what, double a, double b) {
  char x[32], y[32];
  snprintf(x, sizeof x, "%g", a);
  snprintf(y, sizeof y, "%g", b);
  return differs(path, what, x, y);
}

/* Every option the file records against the session's own. */
static hs_status check_resume(const hs_session *s, const char *path, unsigned flags) {
  hs_model_cfg mc;
  hs_ckpt_run run;
  uint64_t pos[3];
  hs_status st = hs__checkpoint_read_run(path, &mc, &run, pos);
  if (st != HS_OK) return st;
  const hs_model_cfg *c = &s->model.cfg;
  char x[96], y[96];
  if (mc.seed != c->seed) {
    snprintf(x, sizeof x, "%llu", (unsigned long long)mc.seed);
    snprintf(y, sizeof y, "%llu", (unsigned long long)c->seed);
    return differs(path, "seed", x, y);
  }
  if (mc.dropout != c->dropout) return differs_f(path, "dropout", mc.dropout, c->dropout);
  if (mc.optim.weight_decay != c->optim.weight_decay)
    return differs_f(path, "weight decay", mc.optim.weight_decay, c->optim.weight_decay);
  if (mc.optim.wd_mode != c->optim.wd_mode)
    return differs_f(path, "weight decay mode", mc.optim.wd_mode, c->optim.wd_mode);
  if (mc.optim.beta1 != c->optim.beta1 || mc.optim.beta2 != c->optim.beta2 ||
      mc.optim.eps != c->optim.eps || mc.optim.momentum != c->optim.momentum)
    return differs(path, "optimizer settings (betas, eps, momentum)", "as saved", "others");
  if (mc.optim.lr != c->optim.lr && !(flags & HS_RESUME_NEW_LR))
    return differs_f(path, "learning rate", mc.optim.lr, c->optim.lr);
  if (!run.set) return HS_OK;
  hs_ckpt_run now;
  hs__session_run(s, &now);
  if (run.node_embedding > 0 && now.node_embedding == run.node_embedding &&
      run.node_embedding_lr != now.node_embedding_lr && !(flags & HS_RESUME_NEW_LR))
    return differs_f(path, "node embedding learning rate", run.node_embedding_lr,
                     now.node_embedding_lr);
  bool same = run.n_layers == now.n_layers;
  for (int l = 0; same && l < run.n_layers; l++) same = run.fanouts[l] == now.fanouts[l];
  if (!same) {
    fanouts_text(run.fanouts, run.n_layers, x, sizeof x);
    fanouts_text(now.fanouts, now.n_layers, y, sizeof y);
    return differs(path, "fanouts", x, y);
  }
  if (run.batch_size != now.batch_size)
    return differs_f(path, "batch size", run.batch_size, now.batch_size);
  if (run.n_vertices != now.n_vertices || run.n_edges != now.n_edges ||
      run.n_train != now.n_train) {
    snprintf(x, sizeof x, "%llu vertices, %llu edges, %llu training seeds",
             (unsigned long long)run.n_vertices, (unsigned long long)run.n_edges,
             (unsigned long long)run.n_train);
    snprintf(y, sizeof y, "%llu, %llu, %llu", (unsigned long long)now.n_vertices,
             (unsigned long long)now.n_edges, (unsigned long long)now.n_train);
    return differs(path, "dataset of", x, y);
  }
  if (run.order != now.order || run.rows_per_block != now.rows_per_block) {
    snprintf(x, sizeof x, "%s", run.order ? "block order (features read through the host tier)"
                                          : "a full shuffle");
    snprintf(y, sizeof y, "%s", now.order ? "block order (the memory budget sends the features "
                                            "through the host tier)"
                                          : "a full shuffle");
    if (run.order == now.order) {
      snprintf(x, sizeof x, "blocks of %llu rows", (unsigned long long)run.rows_per_block);
      snprintf(y, sizeof y, "blocks of %llu rows", (unsigned long long)now.rows_per_block);
    }
    return differs(path, "seed order", x, y);
  }
  /* Files written before these were recorded are resumed without them. */
  if (run.sampling_set) {
    if (run.sampling != now.sampling || run.replace != now.replace) {
      snprintf(x, sizeof x, "%s%s", hs_sampling_name((hs_sampling)run.sampling),
               run.replace ? " with replacement" : "");
      snprintf(y, sizeof y, "%s%s", hs_sampling_name((hs_sampling)now.sampling),
               now.replace ? " with replacement" : "");
      return differs(path, "sampling", x, y);
    }
    if (run.vertex_budget != now.vertex_budget)
      return differs_f(path, "vertex budget", (double)run.vertex_budget,
                       (double)now.vertex_budget);
    for (int l = 0; l < run.n_layers; l++)
      if (run.thresholds[l] != now.thresholds[l]) {
        snprintf(x, sizeof x, "%g at layer %d", (double)run.thresholds[l], l);
        snprintf(y, sizeof y, "%g", (double)now.thresholds[l]);
        return differs(path, "threshold", x, y);
      }
  }
  if (run.gemm_set && run.gemm_threads != now.gemm_threads) {
    snprintf(x, sizeof x, "%u", run.gemm_threads);
    snprintf(y, sizeof y, "%u", now.gemm_threads);
    return differs(path, "GEMM threads (0: the trainer's compute units)", x, y);
  }
  return HS_OK;
}

hs_status hs_session_resume(hs_session *s, const char *path, unsigned flags) {
  if (!s || !path) return hs__fail(HS_ERR_INVALID_ARG, "hs_session_resume: NULL argument");
  hs_status st = check_resume(s, path, flags);
  return st == HS_OK ? hs_session_load(s, path) : st;
}

/* The node embeddings a file holds against the session's own: both or
 * neither, of one width. */
static hs_status check_node_embed(const hs_session *s, const char *path, const hs_ckpt_run *run) {
  if (run->node_embedding == s->emb_dim) return HS_OK;
  if (s->emb_dim > 0 && run->node_embedding <= 0)
    return hs__fail(HS_ERR_INVALID_ARG, "%s holds no node embeddings (saved by a session "
                    "without them, or by a hetsage that did not keep them in checkpoints); "
                    "this session needs its %d-wide rows per vertex: train anew", path,
                    (int)s->emb_dim);
  if (s->emb_dim <= 0)
    return hs__fail(HS_ERR_INVALID_ARG, "%s holds node embeddings of %d per vertex, which this "
                    "session does not learn (create it from the checkpoint, or set "
                    "node_embedding / --node-embedding %d)", path, (int)run->node_embedding,
                    (int)run->node_embedding);
  return hs__fail(HS_ERR_INVALID_ARG, "%s holds node embeddings of %d per vertex, this session "
                  "learns %d", path, (int)run->node_embedding, (int)s->emb_dim);
}

/* The node embeddings' store from where it starts in the file; the store
 * checks the whole section before it changes. */
static hs_status load_store(hs_session *s, const char *path, uint64_t at) {
  hs_status st;
  FILE *f = hs__fopen_regular(path, "checkpoint", &st);
  if (!f) return st;
  if (fseeko(f, (off_t)at, SEEK_SET) != 0) {
    st = hs__fail(HS_ERR_IO, "%s: seek to byte %llu failed: %s", path, (unsigned long long)at,
                  strerror(errno));
  } else {
    hs_rfile r;
    hs__rfile_init(&r, f, path);
    st = hs__embed_read_section(s->emb, &r, true);
  }
  fclose(f);
  return st;
}

hs_status hs_session_load(hs_session *s, const char *path) {
  if (!s || !path) return hs__fail(HS_ERR_INVALID_ARG, "hs_session_load: NULL argument");
  if (s->comm) return hs__session_dist_load(s, path);
  hs_model_cfg mc;
  hs_ckpt_run run;
  uint64_t pos[3];
  hs_status st = hs__checkpoint_read_run(path, &mc, &run, pos);
  if (st != HS_OK) return st;
  if ((st = check_node_embed(s, path, &run)) != HS_OK) return st;
  hs_model m;
  if ((st = hs__model_create(&s->model.cfg, &m)) != HS_OK) return st;
  /* Refuses a file of another shape or optimizer, naming it. */
  if ((st = hs__checkpoint_load(path, &m)) != HS_OK) goto fail;
  if (m.rng_counter > (uint64_t)s->n_batches) {
    st = hs__fail(HS_ERR_FORMAT, "%s: position batch %llu of an epoch of %lld batches", path,
                  (unsigned long long)m.rng_counter, (long long)s->n_batches);
    goto fail;
  }
  if (s->emb && (st = load_store(s, path, run.tail_at)) != HS_OK) goto fail;
  if ((st = hs__trainer_load_model(s->trainer, &m)) != HS_OK) goto fail;
  hs__model_destroy(&s->model);
  s->model = m;
  s->epoch = (int64_t)m.epoch;
  s->batch_pos = (int64_t)m.rng_counter;
  if (s->emb) s->emb_tick = run.node_embedding_tick;
  return HS_OK;
fail:
  hs__model_destroy(&m);
  return st;
}

hs_status hs_session_config_from_checkpoint(const char *path, hs_session_config *user) {
  if (!path || !user)
    return hs__fail(HS_ERR_INVALID_ARG, "hs_session_config_from_checkpoint: NULL argument");
  hs_session_config full, *cfg = &full;
  hs_session_config_init(cfg);
  hs_status st = hs__sized_in(cfg, sizeof *cfg, user, "hs_session_config");
  if (st != HS_OK) return st;
  hs_model_cfg mc;
  hs_ckpt_run run;
  uint64_t pos[3];
  st = hs__checkpoint_read_run(path, &mc, &run, pos);
  if (st != HS_OK) return st;
  if (mc.n_layers > HS_MAX_LAYERS)
    return hs__fail(HS_ERR_FORMAT, "%s: %d layers", path, mc.n_layers);
  for (int l = cfg->n_layers; l < mc.n_layers; l++) cfg->fanouts[l] = 10;
  if (run.set) {
    for (int l = 0; l < run.n_layers; l++) cfg->fanouts[l] = run.fanouts[l];
    cfg->batch_size = run.batch_size;
    cfg->memory_budget = run.memory_budget;
    cfg->node_embedding = run.node_embedding;
    if (run.node_embedding > 0) cfg->node_embedding_lr = run.node_embedding_lr;
  }
  if (run.sampling_set) {
    cfg->sampling = (hs_sampling)run.sampling;
    cfg->replace = run.replace;
    cfg->vertex_budget = run.vertex_budget;
    for (int l = 0; l < run.n_layers; l++) cfg->thresholds[l] = run.thresholds[l];
  }
  if (run.gemm_set) cfg->gemm_threads = (int)run.gemm_threads;
  cfg->model = (hs_model_kind)mc.kind;
  if (mc.kind == HS_NN_GAT) cfg->heads = mc.heads;
  cfg->n_layers = mc.n_layers;
  cfg->hidden = mc.hidden;
  cfg->dropout = mc.dropout;
  cfg->optimizer = mc.optim.kind == HS_OPTIM_SGD ? HS_OPTIMIZER_SGD : HS_OPTIMIZER_ADAM;
  cfg->lr = mc.optim.lr;
  cfg->weight_decay = mc.optim.weight_decay;
  cfg->seed = mc.seed;
  return hs__sized_out(user, cfg, sizeof *cfg, "hs_session_config");
}

hs_status hs_session_parameters(hs_session *s, float *out, size_t cap, size_t *n) {
  if (!s || !n) return hs__fail(HS_ERR_INVALID_ARG, "hs_session_parameters: NULL argument");
  if (s->server)
    return hs__fail(HS_ERR_STATE, "rank %d is a parameter server: it holds a shard", s->rank);
  hs_status st = hs__trainer_sync_model(s->trainer, &s->model);
  if (st != HS_OK) return st;
  *n = s->model.shape.n_params;
  if (out) memcpy(out, s->model.params, (cap < *n ? cap : *n) * sizeof *out);
  return HS_OK;
}

/* ---- node embeddings -------------------------------------------------------------- */

int hs_session_embed_dim(const hs_session *s, int layer) {
  if (!s || layer < 1 || layer > s->model.shape.n_layers) return 0;
  return s->model.shape.dims[layer];
}

hs_status hs_session_embed(hs_session *s, int layer, float *out, size_t cap) {
  if (!s || !out) return hs__fail(HS_ERR_INVALID_ARG, "hs_session_embed: NULL argument");
  int L = s->model.shape.n_layers;
  if (layer < 1 || layer > L)
    return hs__fail(HS_ERR_INVALID_ARG, "embedding layer %d: the model has layers 1..%d", layer,
                    L);
  const hs_graph *g = s->g;
  size_t want = (size_t)g->n * (size_t)s->model.shape.dims[layer];
  if (cap < want)
    return hs__fail(HS_ERR_INVALID_ARG, "embeddings: %zu floats needed (%lld x %d), %zu given",
                    want, (long long)g->n, s->model.shape.dims[layer], cap);
  hs_status st = hs__graph_topology(g, "embeddings (full neighbourhoods)");
  if (st != HS_OK) return st;
  if (s->tier || g->feat_sparse ||
      (s->emb_dim <= 0 && (!g->feat || g->feat_dtype != HS_DTYPE_FLOAT32)))
    return hs__fail(HS_ERR_UNSUPPORTED, "embeddings need the features held dense as float32 "
                    "(these are %s)",
                    s->tier ? "read from disk through the host tier"
                    : g->feat_sparse ? "stored sparse" : "float16");
  if (g->indptr[g->n] > INT32_MAX)
    return hs__fail(HS_ERR_UNSUPPORTED, "embeddings: %lld edges exceed 32-bit offsets",
                    (long long)g->indptr[g->n]);
  hs_csr_view view = {.n_vertices = g->n, .indptr = g->indptr, .indices = g->indices};
  const float *x;
  bool owned;
  if ((st = hs__session_all_rows(s, &x, &owned)) != HS_OK) return st;
  st = hs__trainer_infer_layers(s->trainer, &view, x, layer, out);
  if (owned) free((void *)x);
  return st;
}

hs_status hs_session_embed_save(hs_session *s, int layer, const char *path) {
  if (!s || !path) return hs__fail(HS_ERR_INVALID_ARG, "hs_session_embed_save: NULL argument");
  int d = hs_session_embed_dim(s, layer);
  size_t n = (size_t)s->g->n, count = n * (size_t)d;
  float *emb = malloc(count * sizeof *emb + 1);
  if (!emb) return hs__fail(HS_ERR_NOMEM, "out of memory for %zu x %d embeddings", n, d);
  char *tmp = malloc(strlen(path) + 48);
  hs_status st = tmp ? hs_session_embed(s, layer, emb, count)
                     : hs__fail(HS_ERR_NOMEM, "%s: temporary name", path);
  if (st == HS_OK) {
    /* A name no other writer uses; the npy writer creates it exclusively. */
    static atomic_uint counter;
    snprintf(tmp, strlen(path) + 48, "%s.tmp.%ld.%u", path, (long)getpid(),
             atomic_fetch_add(&counter, 1u));
    uint64_t shape[2] = {n, (uint64_t)d};
    st = hs__npy_write(tmp, HS_DTYPE_FLOAT32, 2, shape, emb);
    if (st == HS_OK && rename(tmp, path) != 0)
      st = hs__fail(HS_ERR_IO, "%s: rename from %s failed: %s", path, tmp, strerror(errno));
    if (st != HS_OK)
      unlink(tmp);
    else
      hs__sync_parent_dir(path);
  }
  free(tmp);
  free(emb);
  return st;
}
