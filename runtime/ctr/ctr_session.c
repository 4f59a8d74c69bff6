/* CTR session set-up: the trainer's placement, device, program and model,
 * the embedding store, the pipeline's slots; description; checkpoints. */
#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "board/hs_board.h"
#include "ctr/ctr_session_int.h"
#include "hs_launch.h"

/* ---- names and defaults --------------------------------------------------------- */

static const char *const sparse_names[] = {"adagrad", "sgd", "adam", "ftrl",
                                           "elementwise-adagrad"};
/* Public order -> the store's. */
static const hs_embed_optim sparse_kinds[] = {HS_EMBED_ADAGRAD, HS_EMBED_SGD, HS_EMBED_ADAM,
                                              HS_EMBED_FTRL, HS_EMBED_ADAGRAD_EW};
_Static_assert(HS_ARRAY_LEN(sparse_names) == HS_ARRAY_LEN(sparse_kinds), "one store kind per name");

const char *hs_sparse_optimizer_name(hs_sparse_optimizer o) {
  return (unsigned)o < HS_ARRAY_LEN(sparse_names) ? sparse_names[o] : NULL;
}

hs_status hs_sparse_optimizer_parse(const char *name, hs_sparse_optimizer *out) {
  for (unsigned i = 0; i < HS_ARRAY_LEN(sparse_names); i++)
    if (name && strcmp(name, sparse_names[i]) == 0) {
      *out = (hs_sparse_optimizer)i;
      return HS_OK;
    }
  return hs__fail(HS_ERR_INVALID_ARG, "sparse optimizer '%s': expected adagrad, sgd, adam, ftrl "
                  "or elementwise-adagrad",
                  name ? name : "(null)");
}

const char *hs_ctr_stage_name(hs_ctr_stage stage) {
  switch (stage) {
    case HS_CTR_STAGE_READ: return "read";
    case HS_CTR_STAGE_LOOKUP: return "lookup";
    case HS_CTR_STAGE_TRAIN: return "train";
    default: return "unknown";
  }
}

void hs_ctr_config_init_sized(hs_ctr_config *user, size_t struct_size) {
  hs_ctr_config full, *c = &full;
  memset(c, 0, sizeof *c);
  c->struct_size = sizeof *c;
  c->model = HS_CTR_DEEPFM;
  c->dim = 16;
  c->hidden[0] = 256;
  c->hidden[1] = 128;
  c->n_hidden = 2;
  c->bottom[0] = 64;
  c->n_bottom = 1;
  c->batch_size = 4096;
  c->lr = 1e-3f;
  c->sparse_optimizer = HS_SPARSE_ADAGRAD;
  c->sparse_lr = 0.05f;
  c->init_range = 0.05f;
  c->seed = 1;
  c->pipeline = HS_PIPELINE_AUTO;
  c->host_nice = 10;
  hs__sized_init(user, struct_size, c, sizeof *c);
}

static hs_status check_config(const hs_ctr_config *c) {
  if (!hs_ctr_model_name(c->model))
    return hs__fail(HS_ERR_INVALID_ARG, "CTR config: model %d", (int)c->model);
  if (!hs_sparse_optimizer_name(c->sparse_optimizer))
    return hs__fail(HS_ERR_INVALID_ARG, "CTR config: sparse optimizer %d", (int)c->sparse_optimizer);
  if (c->batch_size < 1 || c->batch_size > (1 << 20))
    return hs__fail(HS_ERR_INVALID_ARG, "CTR config: batch_size %d (1..2^20)", c->batch_size);
  if (!(c->sparse_initial_accumulator >= 0 && c->sparse_initial_accumulator < 1e30f))
    return hs__fail(HS_ERR_INVALID_ARG, "CTR config: sparse_initial_accumulator %g",
                    (double)c->sparse_initial_accumulator);
  if (!(c->lr > 0 && c->lr < 10) || !(c->sparse_lr > 0 && c->sparse_lr < 100))
    return hs__fail(HS_ERR_INVALID_ARG, "CTR config: lr %g, sparse_lr %g", (double)c->lr,
                    (double)c->sparse_lr);
  if (c->n_hidden < 0 || c->n_hidden > HS_CTR_MAX_HIDDEN || c->n_bottom < 0 ||
      c->n_bottom > HS_CTR_MAX_HIDDEN)
    return hs__fail(HS_ERR_INVALID_ARG, "CTR config: %d hidden, %d bottom layers (0..%d)",
                    c->n_hidden, c->n_bottom, HS_CTR_MAX_HIDDEN);
  if (c->depth < 0 || c->depth > 16)
    return hs__fail(HS_ERR_INVALID_ARG, "CTR config: depth %d (0..16)", c->depth);
  if (c->threads < 0 || c->threads > 256 || c->gemm_threads < 0 || c->gemm_threads > 256)
    return hs__fail(HS_ERR_INVALID_ARG, "CTR config: %d threads, %d GEMM threads (0..256)",
                    c->threads, c->gemm_threads);
  if (c->host_nice < 0 || c->host_nice > 19)
    return hs__fail(HS_ERR_INVALID_ARG, "CTR config: host_nice %d (0..19)", c->host_nice);
  if ((unsigned)c->pipeline > HS_PIPELINE_OFF)
    return hs__fail(HS_ERR_INVALID_ARG, "CTR config: pipeline mode %d", (int)c->pipeline);
  if (c->standardize_dense != 0 && c->standardize_dense != 1)
    return hs__fail(HS_ERR_INVALID_ARG, "CTR config: standardize_dense %d (0 or 1)",
                    c->standardize_dense);
  return HS_OK;
}

/* The fields added after host_nice lie past the struct's former size. */
_Static_assert(sizeof(void *) != 8 || offsetof(hs_ctr_config, standardize_dense) >= 200,
               "standardize_dense within an older hs_ctr_config");

static void model_cfg(const hs_ctr_config *c, hs_ctr_model_cfg *m) {
  hs__ctr_model_cfg_defaults(c->model, m);
  m->dim = c->dim;
  m->n_deep = c->n_hidden;
  memcpy(m->deep, c->hidden, sizeof c->hidden);
  m->n_bottom = c->n_bottom;
  memcpy(m->bottom, c->bottom, sizeof c->bottom);
  m->seed = c->seed;
  m->optim.lr = c->lr;
}

/* ---- set-up ------------------------------------------------------------------------- */

static hs_status place(hs_ctr_session *s, const hs_ctr_config *cfg) {
  hs_board_profile *prof = NULL;
  const hs_board_profile *use = NULL;
  hs_status st = hs__runtime_session_profile(s->rt, cfg->profile, cfg->board, &use, &prof);
  if (st != HS_OK) return st;
  hs_placement_request req;
  hs_placement_request_init(&req);
  const hs_device_info *devs = s->rt->infos;
  req.device_count = s->rt->inv.n_devs;
  req.devices = devs;
  req.profile = use;
  req.host_cores = hs_runtime_host_cores(s->rt);
  req.trainer = cfg->trainer;
  req.trainer_source = "trainer option";
  req.model = "ctr";
  hs_placement_request_settings(&req, &s->rt->settings);
  st = hs_placement_make(&req, &s->plan);
  if (st == HS_OK) {
    const hs_role_plan *rp = &s->plan->trainer;
    const hs__board_device *bd =
        req.profile && rp->profile_id[0] ? hs__board_device_find(req.profile, rp->profile_id) : NULL;
    const hs_device_info *d = &devs[rp->device];
    st = hs__board_prog_files(bd, d, &s->tprogs);
    if (st == HS_OK) st = hs__prog_files_check(&s->tprogs, HS_PROG_ROLE_TRAINER, "ctr", d->name);
  }
  hs_board_profile_free(prof);
  return st;
}

static hs_status make_slots(hs_ctr_session *s) {
  s->pslots = calloc((size_t)s->depth, sizeof *s->pslots);
  s->slots = calloc((size_t)s->depth, sizeof *s->slots);
  if (!s->pslots || !s->slots) return hs__fail(HS_ERR_NOMEM, "CTR batch slots");
  int32_t B = s->cfg.batch_size, F = s->mcfg.n_fields, R = s->lay.row;
  for (int i = 0; i < s->depth; i++) {
    ctr_slot *d = &s->slots[i];
    hs_status st = hs__ctr_rows_alloc(&d->rows, B);
    if (st == HS_OK) st = hs__embed_batch_init(&d->eb, B * F, R);
    if (st != HS_OK) return st;
    d->labels = malloc((size_t)B * sizeof *d->labels);
    d->row_grads = malloc((size_t)B * (size_t)F * (size_t)R * sizeof *d->row_grads);
    if (!d->labels || !d->row_grads) return hs__fail(HS_ERR_NOMEM, "CTR batch slot %d", i);
    s->pslots[i].user = d;
  }
  return HS_OK;
}

hs_status hs_ctr_session_create(hs_runtime *rt, const hs_ctr_config *user, hs_ctr_session **out) {
  if (!rt || !out) return hs__fail(HS_ERR_INVALID_ARG, "hs_ctr_session_create: NULL argument");
  *out = NULL;
  /* The caller's configuration, the fields it may lack at their defaults. */
  hs_ctr_config full;
  hs_ctr_config_init(&full);
  hs_status st;
  if (user && (st = hs__sized_in(&full, sizeof full, user, "hs_ctr_config")) != HS_OK) return st;
  const hs_ctr_config *cfg = &full;
  st = check_config(cfg);
  if (st != HS_OK) return st;
  hs_ctr_session *s = calloc(1, sizeof *s);
  if (!s) return hs__fail(HS_ERR_NOMEM, "CTR session");
  s->rt = rt;
  s->cfg = *cfg;
  s->cfg.board = s->cfg.trainer = NULL; /* borrowed during creation only */
  s->cfg.profile = NULL;
  model_cfg(cfg, &s->mcfg);
  if ((st = hs__ctr_layout(&s->mcfg, &s->lay)) != HS_OK) goto fail;
  if ((st = place(s, cfg)) != HS_OK) goto fail;
  /* Nicer host stages need threads of their own: AUTO takes the threads
   * driver where they apply (on the project's 2-core box the plan's async
   * driver ran DLRM ~6% slower than threads with them, bench/ctr-vs-pytorch.md). */
#ifdef __linux__
  bool nice_ok = cfg->host_nice > 0 && !cfg->world;
#else
  bool nice_ok = false;
#endif
  hs_pipeline_mode pm = cfg->pipeline != HS_PIPELINE_AUTO ? cfg->pipeline
                        : nice_ok                         ? HS_PIPELINE_THREADS
                                                          : s->plan->pipeline;
  s->mode = pm == HS_PIPELINE_THREADS ? HS_PIPE_THREADS
            : pm == HS_PIPELINE_OFF   ? HS_PIPE_OFF
                                      : HS_PIPE_ASYNC;
  s->depth = s->mode == HS_PIPE_OFF ? 1 : cfg->depth > 0 ? cfg->depth : 3;
  /* The whole trainer device: the CTR pipeline's host work runs on host
   * threads beside it, and there is no sampler to split a CPU with. */
  s->tdev = s->rt->inv.devs[s->plan->trainer.device];
  s->tdev.progs = &s->tprogs;
  if ((st = hs__ctx_create(&s->tdev, 1, &s->tctx)) != HS_OK) goto fail;
  if ((st = hs__queue_create(&s->tctx, &s->tdev, 0, &s->tq)) != HS_OK) goto fail;
  hs_ctr_trainer_opts to = {.gemm = HS_GEMM_AUTO,
                            .gemm_threads = cfg->gemm_threads > 0 ? cfg->gemm_threads
                                                                  : (int)s->tdev.info.compute_units};
  if ((st = hs__ctr_trainer_create(&s->tctx, &s->tdev, s->tq, &s->mcfg, NULL, &to, &s->trainer)) != HS_OK)
    goto fail;
  hs_embed_cfg ec;
  hs__embed_cfg_defaults(&ec);
  ec.dim = s->lay.row;
  ec.n_tables = s->mcfg.n_fields;
  ec.optim.kind = sparse_kinds[cfg->sparse_optimizer];
  ec.optim.lr = cfg->sparse_lr;
  ec.optim.ftrl_alpha = cfg->sparse_lr;
  ec.optim.initial_accumulator = cfg->sparse_initial_accumulator;
  ec.init_range = cfg->init_range;
  /* Rows draw from a stream apart from the dense parameters'. */
  ec.seed = cfg->seed ^ 0x6a09e667f3bcc909ull;
  ec.admit_after = cfg->admit_after;
  ec.memory_budget = cfg->embed_budget;
  ec.expire_after = cfg->expire_after;
  int cores = hs_runtime_host_cores(rt);
  ec.threads = cfg->threads > 0 ? cfg->threads : cores > 0 ? cores : 1;
  if (cfg->world) {
    /* This rank's shard of the tables; the dense model all-reduced. */
    if ((st = hs__ctr_dist_open(s, cfg, &ec)) != HS_OK) goto fail;
  } else if ((st = hs__embed_create(&ec, &s->store)) != HS_OK) {
    goto fail;
  }
  s->cfg.dist = NULL; /* borrowed during creation only (taken into s->dist) */
  /* (A thread cannot be made less nice again without privilege: the
   * lookup's threads serve this session's store alone.) */
  if (nice_ok && s->mode == HS_PIPE_THREADS) {
    s->host_nice = cfg->host_nice;
    (void)hs__embed_lookup_nicer(s->store, cfg->host_nice);
  }
  if ((st = make_slots(s)) != HS_OK) goto fail;
  *out = s;
  return HS_OK;
fail:
  hs_ctr_session_destroy(s);
  return st;
}

void hs_ctr_session_destroy(hs_ctr_session *s) {
  if (!s) return;
  hs__ctr_reader_close(s->reader);
  hs__ctr_trainer_destroy(s->trainer);
  hs__queue_release(&s->tq);
  hs__ctx_release(&s->tctx);
  for (int i = 0; s->slots && i < s->depth; i++) {
    ctr_slot *d = &s->slots[i];
    hs__ctr_rows_free(&d->rows);
    hs__embed_batch_free(&d->eb);
    free(d->labels);
    free(d->row_grads);
  }
  free(s->slots);
  free(s->pslots);
  hs__ctr_dist_close(s);
  hs__embed_destroy(s->store);
  hs__board_prog_files_free(&s->tprogs);
  hs_placement_free(s->plan);
  free(s);
}

int64_t hs_ctr_session_epoch(const hs_ctr_session *s) { return s->epoch; }

void hs_ctr_session_set_progress(hs_ctr_session *s, hs_ctr_progress_fn fn, void *user) {
  s->progress = fn;
  s->progress_user = user;
}

void hs_ctr_session_set_stop_flag(hs_ctr_session *s, volatile sig_atomic_t *flag) {
  s->stop = flag;
}

static int widths(char *b, size_t n, const int32_t *w, int k) {
  int at = 0;
  for (int i = 0; i < k && at >= 0 && (size_t)at < n; i++)
    at += snprintf(b + at, n - (size_t)at, "%s%d", i ? "-" : "", w[i]);
  if (k == 0 && n) b[0] = '\0';
  return at;
}

size_t hs_ctr_session_describe(const hs_ctr_session *s, char *buf, size_t len) {
  const hs_device_info *d = &s->tdev.info;
  const hs_ctr_config *c = &s->cfg;
  char hid[96], bot[96];
  widths(hid, sizeof hid, c->hidden, c->n_hidden);
  widths(bot, sizeof bot, c->bottom, c->n_bottom);
  char reasons[2048] = "";
  size_t at = 0;
  for (size_t i = 0; i < s->plan->reason_count && at < sizeof reasons; i++)
    if (strcmp(s->plan->reasons[i].topic, "trainer") == 0)
      at += (size_t)snprintf(reasons + at, sizeof reasons - at, "  %s\n", s->plan->reasons[i].text);
  const hs_embed_cfg *ec = hs__embed_cfg(s->store);
  hs_gemm_kind gk = hs__ctr_trainer_gemm_kind(s->trainer);
  const char *core = gk == HS_GEMM_CBLAS ? hs__gemm_cblas_core() : NULL;
  char dist[160] = "", nice[64] = "";
  if (s->host_nice)
    snprintf(nice, sizeof nice, ", read and lookup threads nice +%d", s->host_nice);
  if (s->comm)
    snprintf(dist, sizeof dist, " per rank\ndistributed: rank %d of %d, tables sharded by id hash, "
             "dense gradients all-reduced", s->rank, s->world_size);
  return (size_t)snprintf(
      buf, len,
      "trainer: %s '%s' (index %d), whole device; GEMM %s%s%s%s\n%s"
      "model: %s, embedding dim %d (rows of %d floats), %s%s%s%s%s, %d dense parameters, "
      "Adam lr %g%s\n"
      "embedding store: %d tables, %s lr %g, rows start U(-%g, %g), admitted after %u "
      "sighting(s), budget %llu bytes%s, expiry after %u batches, %d threads per pool\n"
      "pipeline: %s, depth %d, batches of %d%s%s\n",
      hs_device_type_name(d->type), d->name, s->plan->trainer.device,
      hs__gemm_kind_name(gk), core ? " (OpenBLAS kernels: " : "", core ? core : "",
      core ? ")" : "", reasons,
      hs_ctr_model_name(c->model), c->dim, s->lay.row,
      c->model == HS_CTR_DLRM ? "bottom " : "", c->model == HS_CTR_DLRM ? bot : "",
      c->model == HS_CTR_DLRM ? ", top " : c->model == HS_CTR_DEEPFM ? "deep " : "",
      c->model == HS_CTR_LR ? "no MLP" : hid, c->model == HS_CTR_LR ? "" : "-1",
      (int)s->lay.n_params, (double)c->lr,
      c->standardize_dense ? ", integers standardized by their first batch's statistics" : "",
      ec->n_tables,
      hs_sparse_optimizer_name(c->sparse_optimizer), (double)c->sparse_lr,
      (double)c->init_range, (double)c->init_range, ec->admit_after > 1 ? ec->admit_after : 1,
      (unsigned long long)ec->memory_budget, ec->memory_budget ? "" : " (none)",
      ec->expire_after, ec->threads,
      s->mode == HS_PIPE_THREADS ? "threads" : s->mode == HS_PIPE_OFF ? "off" : "async",
      s->depth, c->batch_size, nice, dist);
}

/* ---- checkpoints ---------------------------------------------------------------------- */

/* Format, every field little-endian:
 *   char[8] "HSCTRCK1"
 *   u32 version 2, model, dim, n_fields, n_dense, n_hidden, hidden[7],
 *       n_bottom, bottom[7], sparse optimizer, admit_after
 *   f32 lr, sparse_lr, init_range
 *   u64 seed, epoch, examples done in it, next tick, n_params, dense step
 *   version 2: the rest of the run's options that decide its result:
 *     u32 batch size, f32 sparse initial accumulator, u32 expire_after,
 *     u64 embed_budget, u32 GEMM threads asked for (0: compute units)
 *   version 3 (written only by a session with standardize_dense, so the
 *     files of every other run are version 2 as before): u32 1, then
 *     u32 statistics known (0: no batch read yet), f32 mean[13], 1/sd[13]
 *   f32 params[n_params], m[n_params], v[n_params]
 *   u32 CRC-32 of the above
 *   the embedding store's section (embed_io.c), with its own CRC */
static const char ckpt_magic[8] = {'H', 'S', 'C', 'T', 'R', 'C', 'K', '1'};
#define CTR_CKPT_VERSION 2u /* version 1 (without the run's options) is still read */
#define CTR_CKPT_VERSION_STD 3u /* version 2 and standardized integers */
#define N_U32 (6 + HS_CTR_MAX_HIDDEN + 1 + HS_CTR_MAX_HIDDEN + 2)

typedef struct ckpt_head {
  uint32_t u[N_U32];
  float f[3];
  uint64_t q[6];
  /* Version 2's run options (run false in a version 1 file). */
  bool run;
  uint32_t batch, expire_after, gemm_threads;
  float initial_accumulator;
  uint64_t embed_budget;
  /* Version 3: standardize_dense and its statistics (std false before). */
  bool std, std_ready;
  float std_mu[HS_CTR_DENSE], std_inv[HS_CTR_DENSE];
} ckpt_head;

static void encode(const hs_ctr_session *s, uint64_t step, ckpt_head *h) {
  const hs_ctr_config *c = &s->cfg;
  memset(h, 0, sizeof *h);
  uint32_t *u = h->u;
  int k = 0;
  u[k++] = c->standardize_dense ? CTR_CKPT_VERSION_STD : CTR_CKPT_VERSION;
  u[k++] = (uint32_t)c->model;
  u[k++] = (uint32_t)c->dim;
  u[k++] = (uint32_t)s->mcfg.n_fields;
  u[k++] = (uint32_t)s->mcfg.n_dense;
  u[k++] = (uint32_t)c->n_hidden;
  for (int i = 0; i < HS_CTR_MAX_HIDDEN; i++) u[k++] = (uint32_t)c->hidden[i];
  u[k++] = (uint32_t)c->n_bottom;
  for (int i = 0; i < HS_CTR_MAX_HIDDEN; i++) u[k++] = (uint32_t)c->bottom[i];
  u[k++] = (uint32_t)c->sparse_optimizer;
  u[k++] = c->admit_after;
  h->f[0] = c->lr;
  h->f[1] = c->sparse_lr;
  h->f[2] = c->init_range;
  h->q[0] = c->seed;
  h->q[1] = (uint64_t)s->epoch;
  h->q[2] = (uint64_t)s->done;
  h->q[3] = s->next_tick;
  h->q[4] = s->lay.n_params;
  h->q[5] = step;
  h->run = true;
  h->batch = (uint32_t)c->batch_size;
  h->initial_accumulator = c->sparse_initial_accumulator;
  h->expire_after = c->expire_after;
  h->embed_budget = c->embed_budget;
  h->gemm_threads = (uint32_t)c->gemm_threads;
  h->std = c->standardize_dense != 0;
  h->std_ready = s->std_ready;
  memcpy(h->std_mu, s->std_mu, sizeof h->std_mu);
  memcpy(h->std_inv, s->std_inv, sizeof h->std_inv);
}

static void decode_cfg(const ckpt_head *h, hs_ctr_config *c) {
  const uint32_t *u = h->u;
  int k = 1;
  c->model = (hs_ctr_model)u[k++];
  c->dim = (int32_t)u[k++];
  k += 2; /* fields, integers: fixed by the layout */
  c->n_hidden = (int)u[k++];
  for (int i = 0; i < HS_CTR_MAX_HIDDEN; i++) c->hidden[i] = (int32_t)u[k++];
  c->n_bottom = (int)u[k++];
  for (int i = 0; i < HS_CTR_MAX_HIDDEN; i++) c->bottom[i] = (int32_t)u[k++];
  c->sparse_optimizer = (hs_sparse_optimizer)u[k++];
  c->admit_after = u[k++];
  c->lr = h->f[0];
  c->sparse_lr = h->f[1];
  c->init_range = h->f[2];
  c->seed = h->q[0];
  if (h->run) {
    c->batch_size = (int32_t)h->batch;
    c->sparse_initial_accumulator = h->initial_accumulator;
    c->expire_after = h->expire_after;
    c->embed_budget = h->embed_budget;
    c->gemm_threads = (int)h->gemm_threads;
  }
  c->standardize_dense = h->std ? 1 : 0;
}

hs_status hs_ctr_session_save(hs_ctr_session *s, const char *path) {
  if (!s || !path) return hs__fail(HS_ERR_INVALID_ARG, "hs_ctr_session_save: NULL argument");
  if (s->comm)
    return hs__fail(HS_ERR_UNSUPPORTED, "%s: checkpoints of distributed CTR training are not "
                    "supported (the tables are sharded over the ranks)", path);
  size_t n = s->lay.n_params;
  float *p = malloc((n ? n : 1) * 3 * sizeof *p);
  if (!p) return hs__fail(HS_ERR_NOMEM, "%s", path);
  uint64_t step;
  hs_status st = hs__ctr_trainer_read_state(s->trainer, p, p + n, p + 2 * n, &step);
  if (st != HS_OK) {
    free(p);
    return st;
  }
  ckpt_head h;
  encode(s, step, &h);
  hs_afile a;
  if ((st = hs__afile_open(&a, path)) != HS_OK) {
    free(p);
    return st;
  }
  hs__afile_write(&a, ckpt_magic, sizeof ckpt_magic);
  for (int i = 0; i < N_U32; i++) hs__afile_u32(&a, h.u[i]);
  hs__afile_f32(&a, h.f, 3);
  for (int i = 0; i < 6; i++) hs__afile_u64(&a, h.q[i]);
  hs__afile_u32(&a, h.batch);
  hs__afile_f32(&a, &h.initial_accumulator, 1);
  hs__afile_u32(&a, h.expire_after);
  hs__afile_u64(&a, h.embed_budget);
  hs__afile_u32(&a, h.gemm_threads);
  if (h.std) {
    hs__afile_u32(&a, 1);
    hs__afile_u32(&a, h.std_ready ? 1u : 0u);
    hs__afile_f32(&a, h.std_mu, HS_CTR_DENSE);
    hs__afile_f32(&a, h.std_inv, HS_CTR_DENSE);
  }
  hs__afile_f32(&a, p, 3 * n);
  hs__afile_crc(&a);
  free(p);
  if ((st = hs__embed_write(s->store, &a)) != HS_OK) {
    hs__afile_abort(&a);
    return st;
  }
  return hs__afile_commit(&a);
}

/* The header of an open checkpoint, checked as far as it goes alone. */
static hs_status read_head(hs_rfile *r, ckpt_head *h) {
  memset(h, 0, sizeof *h);
  char m[8];
  if (!hs__rfile_read(r, m, sizeof m)) return r->st;
  if (memcmp(m, ckpt_magic, sizeof m) != 0)
    return hs__fail(HS_ERR_FORMAT, "%s: not a hetsage CTR checkpoint", r->name);
  for (int i = 0; i < N_U32; i++)
    if (!hs__rfile_u32(r, &h->u[i])) return r->st;
  if (h->u[0] < 1 || h->u[0] > CTR_CKPT_VERSION_STD)
    return hs__fail(HS_ERR_UNSUPPORTED, "%s: CTR checkpoint version %u (this build reads 1 "
                    "to %u)", r->name, h->u[0], CTR_CKPT_VERSION_STD);
  if (!hs__rfile_f32(r, h->f, 3)) return r->st;
  for (int i = 0; i < 6; i++)
    if (!hs__rfile_u64(r, &h->q[i])) return r->st;
  h->run = h->u[0] >= 2;
  if (h->run) {
    if (!hs__rfile_u32(r, &h->batch) || !hs__rfile_f32(r, &h->initial_accumulator, 1) ||
        !hs__rfile_u32(r, &h->expire_after) || !hs__rfile_u64(r, &h->embed_budget) ||
        !hs__rfile_u32(r, &h->gemm_threads))
      return r->st;
    /* The session's own ranges (check_config). */
    if (h->batch < 1 || h->batch > (1u << 20) ||
        !(h->initial_accumulator >= 0 && h->initial_accumulator < 1e30f) ||
        h->gemm_threads > 256)
      return hs__fail(HS_ERR_FORMAT, "%s: CTR checkpoint run options out of range: batch %u "
                      "(1..2^20), sparse initial accumulator %g (finite, >= 0), %u GEMM "
                      "threads (0..256)", r->name, h->batch, (double)h->initial_accumulator,
                      h->gemm_threads);
  }
  h->std = h->std_ready = false;
  if (h->u[0] >= CTR_CKPT_VERSION_STD) {
    uint32_t on, ready;
    if (!hs__rfile_u32(r, &on) || !hs__rfile_u32(r, &ready) ||
        !hs__rfile_f32(r, h->std_mu, HS_CTR_DENSE) || !hs__rfile_f32(r, h->std_inv, HS_CTR_DENSE))
      return r->st;
    bool finite = true;
    for (int j = 0; j < HS_CTR_DENSE; j++)
      finite = finite && isfinite(h->std_mu[j]) && isfinite(h->std_inv[j]) && h->std_inv[j] > 0;
    if (on != 1 || ready > 1 || (ready && !finite))
      return hs__fail(HS_ERR_FORMAT, "%s: CTR checkpoint's standardization out of range (flag "
                      "%u, statistics known %u, each mean finite and each 1/sd finite and > 0)",
                      r->name, on, ready);
    h->std = true;
    h->std_ready = ready == 1;
  }
  hs_ctr_config c;
  hs_ctr_config_init(&c);
  decode_cfg(h, &c);
  if (!hs_ctr_model_name(c.model) || !hs_sparse_optimizer_name(c.sparse_optimizer) ||
      c.n_hidden < 0 || c.n_hidden > HS_CTR_MAX_HIDDEN || c.n_bottom < 0 ||
      c.n_bottom > HS_CTR_MAX_HIDDEN || h->q[4] > ((uint64_t)1 << 34))
    return hs__fail(HS_ERR_FORMAT, "%s: inconsistent CTR checkpoint header", r->name);
  /* The ranges a session takes (check_config, the model's layout), so that
   * a corrupt header is said to be one, not a bad option. */
  bool widths = true;
  for (int i = 0; i < c.n_hidden; i++) widths = widths && c.hidden[i] >= 1 && c.hidden[i] <= 65536;
  for (int i = 0; i < c.n_bottom; i++) widths = widths && c.bottom[i] >= 1 && c.bottom[i] <= 65536;
  if ((c.model != HS_CTR_LR && (c.dim < 1 || c.dim > 1024)) || !widths ||
      !(c.lr > 0 && c.lr < 10) || !(c.sparse_lr > 0 && c.sparse_lr < 100) ||
      !(c.init_range >= 0 && c.init_range <= FLT_MAX))
    return hs__fail(HS_ERR_FORMAT, "%s: not a valid CTR checkpoint (corrupt header: dim %d, "
                    "lr %g, sparse lr %g, init range %g or a layer width out of range)", r->name,
                    c.dim, (double)c.lr, (double)c.sparse_lr, (double)c.init_range);
  return HS_OK;
}

hs_status hs_ctr_session_store_stats(hs_ctr_session *s, hs_ctr_epoch_stats *user) {
  if (!s || !user) return hs__fail(HS_ERR_INVALID_ARG, "hs_ctr_session_store_stats: NULL argument");
  hs_status st = hs__sized_check(user->struct_size, sizeof *user, "hs_ctr_epoch_stats");
  if (st != HS_OK) return st;
  hs_embed_stats es;
  if (s->comm) {
    if ((st = hs__ctr_dist_store_stats(s, &es)) != HS_OK) return st;
  } else {
    hs__embed_stats(s->store, &es);
  }
  hs_ctr_epoch_stats z;
  hs_ctr_epoch_stats_init(&z);
  z.embed_rows = es.rows;
  z.embed_bytes = es.bytes;
  z.embed_row_bytes = es.row_bytes;
  z.embed_created = es.created;
  z.embed_evicted = es.evicted;
  z.embed_expired = es.expired;
  z.embed_pending = es.pending;
  hs__sized_out(user, &z, sizeof z, "hs_ctr_epoch_stats");
  return HS_OK;
}

hs_status hs_ctr_config_from_checkpoint(const char *path, hs_ctr_config *user) {
  if (!path || !user) return hs__fail(HS_ERR_INVALID_ARG, "hs_ctr_config_from_checkpoint: NULL argument");
  hs_ctr_config cfg;
  hs_ctr_config_init(&cfg);
  hs_status st = hs__sized_in(&cfg, sizeof cfg, user, "hs_ctr_config");
  if (st != HS_OK) return st;
  FILE *f = hs__fopen_regular(path, "CTR checkpoint", &st);
  if (!f) return st;
  hs_rfile r;
  hs__rfile_init(&r, f, path);
  ckpt_head h;
  st = read_head(&r, &h);
  fclose(f);
  if (st != HS_OK) return st;
  decode_cfg(&h, &cfg);
  return hs__sized_out(user, &cfg, sizeof cfg, "hs_ctr_config");
}

hs_status hs_ctr_session_load(hs_ctr_session *s, const char *path) {
  if (!s || !path) return hs__fail(HS_ERR_INVALID_ARG, "hs_ctr_session_load: NULL argument");
  if (s->comm)
    return hs__fail(HS_ERR_UNSUPPORTED, "%s: checkpoints of distributed CTR training are not "
                    "supported (the tables are sharded over the ranks)", path);
  hs_status st;
  FILE *f = hs__fopen_regular(path, "CTR checkpoint", &st);
  if (!f) return st;
  hs_rfile r;
  hs__rfile_init(&r, f, path);
  ckpt_head h, mine;
  float *p = NULL;
  st = read_head(&r, &h);
  if (st != HS_OK) goto done;
  encode(s, 0, &mine);
  /* Everything that shapes the model and the rows must agree. */
  /* (The version aside: a version 1 file loads too.) */
  if (memcmp(h.u + 1, mine.u + 1, sizeof h.u - sizeof h.u[0]) != 0 ||
      h.q[4] != s->lay.n_params) {
    hs_ctr_config c;
    hs_ctr_config_init(&c);
    decode_cfg(&h, &c);
    st = hs__fail(HS_ERR_INVALID_ARG, "%s: a %s model (dim %d, %u parameters, %s rows) does not "
                  "fit this session's %s (dim %d, %zu parameters, %s rows)", path,
                  hs_ctr_model_name(c.model), c.dim, (unsigned)h.q[4],
                  hs_sparse_optimizer_name(c.sparse_optimizer), hs_ctr_model_name(s->cfg.model),
                  s->cfg.dim, s->lay.n_params, hs_sparse_optimizer_name(s->cfg.sparse_optimizer));
    goto done;
  }
  if (h.std != (s->cfg.standardize_dense != 0)) {
    st = hs__fail(HS_ERR_INVALID_ARG, "%s: a model trained %s standardized integers does not fit "
                  "this session, which %s them", path, h.std ? "on" : "without",
                  s->cfg.standardize_dense ? "standardizes" : "does not standardize");
    goto done;
  }
  size_t n = s->lay.n_params;
  p = malloc((n ? n : 1) * 3 * sizeof *p);
  if (!p) {
    st = hs__fail(HS_ERR_NOMEM, "%s", path);
    goto done;
  }
  if (!hs__rfile_f32(&r, p, 3 * n) || !hs__rfile_crc(&r)) {
    st = r.st;
    goto done;
  }
  /* The store checks its section whole before it changes; then the dense
   * state, which cannot fail on a checked file but for the device. */
  if ((st = hs__embed_read_section(s->store, &r, true)) != HS_OK) goto done;
  if ((st = hs__ctr_trainer_write_state(s->trainer, p, p + n, p + 2 * n, h.q[5])) != HS_OK) goto done;
  s->epoch = (int64_t)h.q[1];
  s->done = (int64_t)h.q[2];
  s->next_tick = (uint32_t)h.q[3];
  s->std_ready = h.std_ready;
  memcpy(s->std_mu, h.std_mu, sizeof s->std_mu);
  memcpy(s->std_inv, h.std_inv, sizeof s->std_inv);
done:
  free(p);
  fclose(f);
  return st;
}
