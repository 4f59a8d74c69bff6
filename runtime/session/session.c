/* Session set-up: placement for the dataset, devices and queues, the
 * sampler with the topology resident, the trainer with the model, and the
 * pipeline's slots — everything allocated here, nothing per batch. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "board/hs_board.h"
#include "hs_launch.h"
#include "hs_session_int.h"
#include "nn/model_ops.h"

void hs_session_config_init_sized(hs_session_config *user, size_t struct_size) {
  hs_session_config full, *cfg = &full;
  memset(cfg, 0, sizeof *cfg);
  cfg->struct_size = sizeof *cfg;
  cfg->n_layers = 2;
  cfg->fanouts[0] = 25;
  cfg->fanouts[1] = 10;
  cfg->batch_size = 1024;
  cfg->hidden = 128;
  cfg->dropout = 0.5f;
  cfg->optimizer = HS_OPTIMIZER_ADAM;
  cfg->lr = 0.01f;
  cfg->weight_decay = 5e-4f;
  cfg->seed = 0;
  cfg->pipeline = HS_PIPELINE_AUTO;
  cfg->depth = 0;
  cfg->cache_rows = -1;
  cfg->cache_fill = HS_CACHE_FILL_FIRST;
  cfg->model = HS_MODEL_SAGE;
  cfg->heads = 4;
  cfg->node_embedding_lr = 0.05f;
  hs__sized_init(user, struct_size, cfg, sizeof *cfg);
}

/* The public kinds are the model tables' kinds (nn/model.h). */
_Static_assert((int)HS_MODEL_SAGE == (int)HS_NN_SAGE && (int)HS_MODEL_GCN == (int)HS_NN_GCN &&
                   (int)HS_MODEL_GAT == (int)HS_NN_GAT,
               "hs_model_kind and hs_nn_kind must agree");

const char *hs_model_kind_name(hs_model_kind kind) { return hs__nn_kind_name((int)kind); }

const char *hs_sampling_name(hs_sampling s) {
  switch (s) {
    case HS_SAMPLING_UNIFORM: return "uniform";
    case HS_SAMPLING_WEIGHTED: return "weighted";
    case HS_SAMPLING_THRESHOLD: return "threshold";
    default: return "unknown";
  }
}

hs_status hs_sampling_parse(const char *name, hs_sampling *out) {
  if (!out) return hs__fail(HS_ERR_INVALID_ARG, "hs_sampling_parse: NULL out");
  for (int m = HS_SAMPLING_UNIFORM; m <= HS_SAMPLING_THRESHOLD; m++)
    if (name && strcmp(name, hs_sampling_name((hs_sampling)m)) == 0) {
      *out = (hs_sampling)m;
      return HS_OK;
    }
  return hs__fail(HS_ERR_INVALID_ARG, "sampling '%s': expected uniform, weighted or threshold",
                  name ? name : "(null)");
}

/* The public modes are the sampler's (sample/hs_sample.h). */
_Static_assert((int)HS_SAMPLING_UNIFORM == (int)HS_SAMPLE_UNIFORM &&
                   (int)HS_SAMPLING_WEIGHTED == (int)HS_SAMPLE_WEIGHTED &&
                   (int)HS_SAMPLING_THRESHOLD == (int)HS_SAMPLE_THRESHOLD,
               "hs_sampling and hs_sample_mode must agree");

hs_status hs_model_kind_parse(const char *name, hs_model_kind *out) {
  if (!out) return hs__fail(HS_ERR_INVALID_ARG, "hs_model_kind_parse: NULL out");
  const hs_model_ops *ops = hs__model_ops_by_name(name);
  if (!ops)
    return hs__fail(HS_ERR_INVALID_ARG, "model '%s': expected sage, gcn or gat",
                    name ? name : "(null)");
  *out = (hs_model_kind)ops->kind;
  return HS_OK;
}

const char *hs_stage_name(hs_stage stage) {
  switch (stage) {
    case HS_STAGE_SAMPLE: return "sample";
    case HS_STAGE_GATHER: return "gather";
    case HS_STAGE_TRAIN: return "train";
    default: return "unknown";
  }
}

const char *hs_transfer_name(hs_transfer t) {
  switch (t) {
    case HS_TRANSFER_AUTO: return "auto";
    case HS_TRANSFER_HOST: return "host";
    case HS_TRANSFER_DEVICE: return "device";
    default: return "unknown";
  }
}

const char *hs_feature_pages_name(hs_feature_pages p) {
  switch (p) {
    case HS_FEATURE_PAGES_AUTO: return "auto";
    case HS_FEATURE_PAGES_FILE: return "file";
    case HS_FEATURE_PAGES_HUGE: return "huge";
    default: return "unknown";
  }
}

static hs_status bad_field(const char *field, const char *value, const char *range) {
  return hs__fail(HS_ERR_INVALID_ARG, "hs_session_config.%s = %s: expected %s", field, value,
                  range);
}

static hs_status check_int(const char *field, int64_t v, int64_t lo, int64_t hi) {
  if (v >= lo && v <= hi) return HS_OK;
  char val[32], range[64];
  snprintf(val, sizeof val, "%lld", (long long)v);
  snprintf(range, sizeof range, "an integer in [%lld, %lld]", (long long)lo, (long long)hi);
  return bad_field(field, val, range);
}

/* A finite float in [lo, hi) (or (lo, hi) when lo_open). */
static hs_status check_float(const char *field, float v, double lo, bool lo_open, double hi) {
  if (isfinite(v) && (lo_open ? v > lo : v >= lo) && v < hi) return HS_OK;
  char val[32], range[64];
  snprintf(val, sizeof val, "%g", (double)v);
  snprintf(range, sizeof range, "a finite number in %c%g, %g)", lo_open ? '(' : '[', lo, hi);
  return bad_field(field, val, range);
}

/* Every field of the configuration, before anything is set up. */
static hs_status check_config(const hs_session_config *c) {
  hs_status st;
  if ((st = check_int("n_layers", c->n_layers, 1,
                      HS_MAX_LAYERS < HS_SAMPLE_MAX_LAYERS ? HS_MAX_LAYERS
                                                           : HS_SAMPLE_MAX_LAYERS)))
    return st;
  for (int l = 0; l < c->n_layers; l++) {
    char field[32], val[32], range[64];
    snprintf(field, sizeof field, "fanouts[%d]", l);
    snprintf(val, sizeof val, "%d", (int)c->fanouts[l]);
    snprintf(range, sizeof range, "-1 (every neighbour) or an integer in [1, %d]", HS_MAX_FANOUT);
    if (c->fanouts[l] != -1 && (c->fanouts[l] < 1 || c->fanouts[l] > HS_MAX_FANOUT))
      return bad_field(field, val, range);
  }
  if ((st = check_int("batch_size", c->batch_size, 1, HS_MAX_BATCH)) ||
      (st = check_int("hidden", c->hidden, 1, HS_MAX_HIDDEN)) ||
      (st = check_float("dropout", c->dropout, 0, false, 1)) ||
      (st = check_float("lr", c->lr, 0, true, HS_MAX_LR)) ||
      (st = check_float("weight_decay", c->weight_decay, 0, false, 1)) ||
      (st = check_int("depth", c->depth, 0, HS_MAX_DEPTH)) ||
      (st = check_int("cache_rows", c->cache_rows, -1, INT64_MAX)))
    return st;
  char val[32];
  snprintf(val, sizeof val, "%d", (int)c->optimizer);
  if (c->optimizer != HS_OPTIMIZER_ADAM && c->optimizer != HS_OPTIMIZER_SGD)
    return bad_field("optimizer", val, "HS_OPTIMIZER_ADAM or HS_OPTIMIZER_SGD");
  snprintf(val, sizeof val, "%d", (int)c->pipeline);
  if ((unsigned)c->pipeline > HS_PIPELINE_OFF)
    return bad_field("pipeline", val, "HS_PIPELINE_AUTO, _THREADS, _ASYNC or _OFF");
  snprintf(val, sizeof val, "%d", (int)c->cache_fill);
  if ((unsigned)c->cache_fill > HS_CACHE_FILL_PRESAMPLE)
    return bad_field("cache_fill", val, "HS_CACHE_FILL_FIRST, _DEGREE or _PRESAMPLE");
  snprintf(val, sizeof val, "%d", (int)c->transfer);
  if ((unsigned)c->transfer > HS_TRANSFER_DEVICE)
    return bad_field("transfer", val, "HS_TRANSFER_AUTO, _HOST or _DEVICE");
  snprintf(val, sizeof val, "%d", (int)c->feature_pages);
  if ((unsigned)c->feature_pages > HS_FEATURE_PAGES_HUGE)
    return bad_field("feature_pages", val, "HS_FEATURE_PAGES_AUTO, _FILE or _HUGE");
  if ((st = check_int("gemm_threads", c->gemm_threads, 0, 4096))) return st;
  snprintf(val, sizeof val, "%d", (int)c->model);
  if (!hs__model_ops((int)c->model))
    return bad_field("model", val, "HS_MODEL_SAGE, _GCN or _GAT");
  if (c->model == HS_MODEL_GAT &&
      (st = check_int("heads", c->heads, 1, HS_NN_MAX_HEADS)) != HS_OK)
    return st;
  if (c->model == HS_MODEL_GAT && c->n_layers > 1 && c->hidden % c->heads != 0) {
    char range[64];
    snprintf(val, sizeof val, "%d", c->hidden);
    snprintf(range, sizeof range, "a multiple of the %d heads", c->heads);
    return bad_field("hidden", val, range);
  }
  if ((st = check_int("node_embedding", c->node_embedding, 0, 4096)) != HS_OK) return st;
  if (c->node_embedding > 0 &&
      (st = check_float("node_embedding_lr", c->node_embedding_lr, 0, true, 100)) != HS_OK)
    return st;
  snprintf(val, sizeof val, "%d", (int)c->sampling);
  if ((unsigned)c->sampling > HS_SAMPLING_THRESHOLD)
    return bad_field("sampling", val, "HS_SAMPLING_UNIFORM, _WEIGHTED or _THRESHOLD");
  if (c->replace && c->sampling == HS_SAMPLING_THRESHOLD)
    return bad_field("replace", "true", "false with HS_SAMPLING_THRESHOLD (it draws without "
                     "replacement)");
  if (c->vertex_budget != 0 && (c->vertex_budget < c->batch_size || c->vertex_budget < 0)) {
    char range[64];
    snprintf(val, sizeof val, "%lld", (long long)c->vertex_budget);
    snprintf(range, sizeof range, "0 (none) or at least the batch size %d", (int)c->batch_size);
    return bad_field("vertex_budget", val, range);
  }
  for (int l = 0; c->sampling == HS_SAMPLING_THRESHOLD && l < c->n_layers; l++)
    if (!isfinite(c->thresholds[l])) {
      char field[32];
      snprintf(field, sizeof field, "thresholds[%d]", l);
      snprintf(val, sizeof val, "%g", (double)c->thresholds[l]);
      return bad_field(field, val, "a finite number");
    }
  return HS_OK;
}

/* Weighted modes draw from the edge weights: a dataset without them is
 * refused before anything is placed or built. */
static hs_status check_sampling(const hs_graph *g, const hs_session_config *c) {
  if (c->sampling == HS_SAMPLING_UNIFORM || g->weights) return HS_OK;
  return hs__fail(HS_ERR_INVALID_ARG, "%s sampling draws from edge weights, and the dataset "
                  "has none (no weights.npy)", hs_sampling_name(c->sampling));
}

static hs_status check_dataset(const hs_graph *g, int32_t node_embedding) {
  hs_status st = hs__graph_topology(g, "a new session (the sampler's upload)");
  if (st != HS_OK) return st;
  bool has_feat = (g->feat || g->feat_sparse) && g->f > 0;
  if (!has_feat && node_embedding <= 0)
    return hs__fail(HS_ERR_FORMAT, "the dataset has no features (feat.npy, or the sparse "
                    "feat_indptr.npy and its kin); learnable node embeddings "
                    "(node_embedding, --node-embedding D) can stand in for them, and a model "
                    "trained so needs them (a checkpoint saved with them restores them)");
  if (g->feat_sparse && node_embedding > 0)
    return hs__fail(HS_ERR_UNSUPPORTED, "node embeddings beside sparse features: convert them "
                    "to dense (hetsage convert --from native --feat-format dense)");
  if (!g->labels || g->num_classes < 2)
    return hs__fail(HS_ERR_FORMAT, "the dataset has no labels with at least 2 classes");
  if (!g->split[HS_SPLIT_TRAIN] || g->split_n[HS_SPLIT_TRAIN] == 0)
    return hs__fail(HS_ERR_FORMAT, "the dataset has no training split (train_idx.npy)");
  if (has_feat && g->feat_dtype != HS_DTYPE_FLOAT32 && g->feat_dtype != HS_DTYPE_FLOAT16)
    return hs__fail(HS_ERR_UNSUPPORTED, "features of type %s", hs_dtype_name(g->feat_dtype));
  return HS_OK;
}

/* What the profile provides for the programs of each role's device; a
 * device that does not compile must have them all (placement checked the
 * profile's keys; a bundle is opened here, before anything is built). */
static hs_status role_programs(hs_session *s, const hs_board_profile *prof,
                               const hs_device_info *devs) {
  const hs_role_plan *rp[2] = {&s->plan->sampler, &s->plan->trainer};
  hs__prog_files *pf[2] = {&s->sprogs, &s->tprogs};
  unsigned roles[2] = {HS_PROG_ROLE_SAMPLER, HS_PROG_ROLE_TRAINER};
  for (int r = 0; r < 2; r++) {
    const hs__board_device *bd =
        prof && rp[r]->profile_id[0] ? hs__board_device_find(prof, rp[r]->profile_id) : NULL;
    const hs_device_info *d = &devs[rp[r]->device];
    hs_status st = hs__board_prog_files(bd, d, pf[r]);
    if (st == HS_OK)
      st = hs__prog_files_check(pf[r], roles[r], hs_model_kind_name(s->cfg.model), d->name);
    if (st != HS_OK) return st;
  }
  return HS_OK;
}

static hs_status place(hs_session *s, const hs_session_config *cfg) {
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
  req.topology_bytes = s->g->topology_bytes;
  req.feature_bytes = s->g->feature_bytes;
  /* Sparse rows: their mean size, for the caches' sizing. */
  req.feature_row_bytes = s->g->feat_sparse
                              ? (s->g->n ? (s->g->feature_bytes + (uint64_t)s->g->n - 1) /
                                               (uint64_t)s->g->n
                                         : 0)
                              : s->g->feat_row_bytes;
  req.host_cores = hs_runtime_host_cores(s->rt);
  req.sampler = cfg->sampler;
  req.sampler_source = "sampler option";
  req.trainer = cfg->trainer;
  req.trainer_source = "trainer option";
  req.model = hs_model_kind_name(cfg->model);
  hs_placement_request_settings(&req, &s->rt->settings);
  st = hs_placement_make(&req, &s->plan);
  if (st == HS_OK) st = role_programs(s, req.profile, devs);
  hs_board_profile_free(prof);
  return st;
}

/* Devices, contexts and queues as the plan says. */
static hs_status open_devices(hs_session *s) {
  const hs_placement *p = s->plan;
  hs_inventory *inv = &s->rt->inv;
  const hs_dev *sd = &inv->devs[p->sampler.device];
  const hs_dev *td = &inv->devs[p->trainer.device];
  hs_status st;
  if (p->link == HS_LINK_SUB_DEVICES) {
    unsigned counts[2] = {p->sampler.cores, p->trainer.cores};
    st = hs__subdevices_create(sd, counts, 2, s->subs);
    if (st != HS_OK) return st;
    s->n_subs = 2;
    s->sdev = s->subs[0];
    s->tdev = s->subs[1];
  } else {
    s->sdev = *sd;
    s->tdev = *td;
  }
  if (p->link == HS_LINK_HOST) {
    st = hs__ctx_create(&s->sdev, 1, &s->sctx);
    if (st == HS_OK) st = hs__ctx_create(&s->tdev, 1, &s->tctx);
  } else {
    hs_dev both[2] = {s->sdev, s->tdev};
    int n = p->link == HS_LINK_SAME_DEVICE ? 1 : 2;
    st = hs__ctx_create(both, n, &s->sctx);
    s->tctx = s->sctx;
    s->one_ctx = true;
  }
  if (st != HS_OK) return st;
  s->sdev.progs = &s->sprogs;
  s->tdev.progs = &s->tprogs;
  st = hs__queue_create(&s->sctx, &s->sdev, 0, &s->sq);
  if (st == HS_OK) st = hs__queue_create(&s->tctx, &s->tdev, 0, &s->tq);
  return st;
}

/* Under AUTO (0), the runtime's setting `setting` (that of environment
 * variable `var`) decides: *want becomes it and *source the variable's
 * name. */
static void setting_choice(int setting, const char *var, int *want, const char **source) {
  if (*want != 0 || setting == 0) return;
  *want = setting;
  *source = var;
}

/* The pages the host gathers features from (hs_feature_pages): after the
 * caches are open, so that the host tier's choice is known. Sets s->feat
 * (the file mapping or the dataset's copy on huge pages). */
static hs_status choose_feature_pages(hs_session *s, hs_dataset *ds,
                                      const hs_session_config *cfg) {
  int want = (int)cfg->feature_pages;
  const char *source = "the feature pages option";
  setting_choice((int)s->rt->settings.feature_pages, "HETSAGE_FEATURE_PAGES", &want, &source);
  hs_status st;
  s->feat = s->g->feat;
  char b[32], c[32];
  char *why = s->feat_pages_why;
  size_t wl = sizeof s->feat_pages_why;
  uint64_t bytes = s->g->feature_bytes;
  if (s->tier) {
    snprintf(why, wl, "read through the host tier (over the memory budget)");
    return HS_OK;
  }
  if (s->stier) {
    snprintf(why, wl, "sparse rows (%lld non-zeros, %s) read through the sparse host tier "
             "(over the memory budget)", (long long)s->g->feat_nnz,
             hs__fmt_bytes(bytes, b, sizeof b));
    return HS_OK;
  }
  if (s->g->feat_sparse) {
    snprintf(why, wl, "sparse rows (%lld non-zeros, %s) gathered from memory as CSR",
             (long long)s->g->feat_nnz, hs__fmt_bytes(bytes, b, sizeof b));
    return HS_OK;
  }
  if (want == HS_FEATURE_PAGES_FILE) {
    snprintf(why, wl, "the file mapping (%s asks for it)", source);
    return HS_OK;
  }
  size_t llc = hs__llc_bytes();
  if (want == HS_FEATURE_PAGES_AUTO && bytes <= (llc ? llc : (size_t)32 << 20)) {
    snprintf(why, wl, "the file mapping (%s of features fit the last-level cache)",
             hs__fmt_bytes(bytes, b, sizeof b));
    return HS_OK;
  }
  if (!hs__thp_available()) {
    snprintf(why, wl, "the file mapping (the kernel grants no huge pages on request)");
    return HS_OK;
  }
  /* AUTO copies into at most half of the memory available, HUGE into all
   * of it; not knowing what is available, only HUGE copies. */
  uint64_t avail = hs__proc_kb_field("/proc/meminfo", "MemAvailable");
  uint64_t room = want == HS_FEATURE_PAGES_AUTO ? avail / 2 : avail;
  if ((want == HS_FEATURE_PAGES_AUTO || avail) && bytes > room) {
    snprintf(why, wl, "the file mapping (%s of features, %s of memory available: a copy "
             "would take %s)", hs__fmt_bytes(bytes, b, sizeof b), hs__fmt_bytes(avail, c, sizeof c),
             want == HS_FEATURE_PAGES_AUTO ? "over half" : "more");
    return HS_OK;
  }
  const void *copy;
  uint64_t moved;
  st = hs__dataset_features_huge(ds, &copy, &moved);
  if (st != HS_OK) return st;
  if (!copy) {
    snprintf(why, wl, "the file mapping (the kernel grants no huge pages on request)");
    return HS_OK;
  }
  s->feat = copy;
  s->feat_huge = bytes;
  snprintf(why, wl, "a copy on 2 MiB pages (%s, %s; %s)", hs__fmt_bytes(bytes, b, sizeof b),
           want == HS_FEATURE_PAGES_HUGE ? source : "larger than the last-level cache",
           moved ? "copied now" : "copied by an earlier session");
  return HS_OK;
}

/* The block path: device to device whenever the roles share a context,
 * unless the configuration (or HETSAGE_TRANSFER under AUTO) asks for the
 * host path. */
static hs_status choose_transfer(hs_session *s, const hs_session_config *cfg) {
  int want = (int)cfg->transfer;
  const char *source = "the transfer option";
  setting_choice((int)s->rt->settings.transfer, "HETSAGE_TRANSFER", &want, &source);
  const char *link = hs_role_link_name(s->plan->link);
  if (want == HS_TRANSFER_DEVICE && !s->one_ctx)
    return hs__fail(HS_ERR_UNSUPPORTED, "%s asks for device-to-device block transfers, but "
                    "the sampler and the trainer do not share a context (link %s)", source,
                    link);
  if (!s->one_ctx) {
    s->transfer = HS_TRANSFER_HOST;
    snprintf(s->transfer_why, sizeof s->transfer_why,
             "the roles have separate contexts (link %s)", link);
  } else if (want == HS_TRANSFER_HOST) {
    s->transfer = HS_TRANSFER_HOST;
    snprintf(s->transfer_why, sizeof s->transfer_why,
             "%s asks for it although the roles share a context (link %s)", source, link);
  } else {
    s->transfer = HS_TRANSFER_DEVICE;
    snprintf(s->transfer_why, sizeof s->transfer_why,
             "the roles share one context (link %s); only ids and counts are read back", link);
  }
  return HS_OK;
}

/* The node embeddings' store: one table keyed by vertex id, row-wise
 * Adagrad; rows draw from a stream apart from the parameters' and the
 * sampler's. One thread each for lookups and updates: a batch's rows are
 * a few thousand, and the pipeline's stages already keep the cores busy. */
static hs_status make_store(hs_session *s) {
  if (s->emb_dim <= 0) return HS_OK;
  hs_embed_cfg ec;
  hs__embed_cfg_defaults(&ec);
  ec.dim = s->emb_dim;
  ec.n_tables = 1;
  ec.optim.kind = HS_EMBED_ADAGRAD;
  ec.optim.lr = s->cfg.node_embedding_lr;
  ec.seed = s->cfg.seed ^ 0x3c6ef372fe94f82bull;
  ec.threads = 1;
  return hs__embed_create(&ec, &s->emb);
}

static hs_status make_model(hs_session *s) {
  hs_model_cfg mc;
  hs__model_cfg_defaults(&mc);
  mc.kind = (hs_nn_kind)s->cfg.model;
  mc.heads = s->cfg.heads;
  mc.n_layers = s->cfg.n_layers;
  mc.in_dim = s->in_dim;
  mc.hidden = s->cfg.hidden;
  mc.n_classes = s->g->num_classes;
  mc.dropout = s->cfg.dropout;
  mc.seed = s->cfg.seed;
  mc.optim.kind = s->cfg.optimizer == HS_OPTIMIZER_SGD ? HS_OPTIM_SGD : HS_OPTIM_ADAM;
  mc.optim.lr = s->cfg.lr;
  mc.optim.weight_decay = s->cfg.weight_decay;
  mc.optim.wd_mode = HS_WD_L2;
  return hs__model_create(&mc, &s->model);
}

static hs_status make_sampler(hs_session *s) {
  memset(&s->scfg, 0, sizeof s->scfg);
  s->scfg.n_layers = s->cfg.n_layers;
  for (int l = 0; l < s->cfg.n_layers; l++) s->scfg.fanout[l] = s->cfg.fanouts[l];
  s->scfg.mode = (hs_sample_mode)s->cfg.sampling;
  s->scfg.replace = s->cfg.replace;
  s->scfg.max_vertices = s->cfg.vertex_budget;
  for (int l = 0; l < s->cfg.n_layers; l++) s->scfg.threshold[l] = s->cfg.thresholds[l];
  /* Sampling draws from a stream of its own, apart from dropout's. */
  s->scfg.seed = s->cfg.seed ^ 0x9e3779b97f4a7c15ull;
  hs_csr csr = {.n = s->g->n, .e = s->g->e, .indptr = s->g->indptr,
                .indices = s->g->indices, .weights = s->g->weights};
  hs_sampler_opts so = {.style = HS_STYLE_AUTO, .work_group_size = 0,
                        .max_seeds = s->cfg.batch_size, .profile = false};
  return hs__sampler_create(&s->sctx, &s->sdev, s->sq, &csr, &s->scfg, &so, &s->sampler);
}

/* The plan as it runs: where the session's configuration overrode a choice
 * (pipeline, depth, memory budget, caches), the plan's fields and reasons
 * are revised, so that what is described is what runs. */
static hs_status revise_plan(hs_session *s, const hs_session_config *cfg) {
  hs_placement *pl = s->plan;
  char a[32], b[32];
  hs_status st = HS_OK;
  hs_pipeline_mode mode = s->mode == HS_PIPE_THREADS ? HS_PIPELINE_THREADS
                          : s->mode == HS_PIPE_OFF   ? HS_PIPELINE_OFF
                                                     : HS_PIPELINE_ASYNC;
  if (mode != pl->pipeline) {
    st = hs__placement_revise(pl, "pipeline", hs_pipeline_mode_name(pl->pipeline),
                              "%s: the session's configuration (pipeline)",
                              hs_pipeline_mode_name(mode));
    pl->pipeline = mode;
  }
  if (st == HS_OK && s->depth != pl->depth) {
    st = hs__placement_revise(pl, "pipeline", "depth", "depth %d: %s", s->depth,
                              mode == HS_PIPELINE_OFF ? "no overlap, one batch at a time"
                                                      : "the session's configuration (depth)");
    pl->depth = s->depth;
  }
  if (st == HS_OK && cfg->memory_budget) {
    pl->host_budget_bytes = cfg->memory_budget;
    st = hs__placement_revise(pl, "memory", "host", "host %s: the session's memory budget "
                              "(memory_budget)", hs__fmt_bytes(cfg->memory_budget, a, sizeof a));
  }
  uint64_t keep = s->tier || s->stier ? s->tier_keep_bytes : 0;
  if (st == HS_OK && (cfg->memory_budget || keep != pl->cache_host_bytes)) {
    hs__fmt_bytes(s->g->feature_bytes, a, sizeof a);
    hs__fmt_bytes(pl->host_budget_bytes, b, sizeof b);
    if (s->stier) {
      char c[32];
      st = hs__placement_revise(pl, "cache", "host", "host %s: the sparse features (%s) "
                                "exceed the host budget %s, so their column ids and values "
                                "are read from disk through a cache of %s",
                                hs__fmt_bytes(keep, c, sizeof c), a, b,
                                hs__fmt_bytes(keep, c, sizeof c));
    } else if (s->tier) {
      char c[32];
      st = hs__placement_revise(pl, "cache", "host", "host %s: the features (%s) exceed the "
                                "host budget %s, so they are read from feat.npy through a "
                                "cache of %s", hs__fmt_bytes(keep, c, sizeof c), a, b,
                                hs__fmt_bytes(keep, c, sizeof c));
    } else {
      st = hs__placement_revise(pl, "cache", "host", "host 0 B: the features (%s) fit in the "
                                "host budget %s, so they stay in memory", a, b);
    }
    pl->cache_host_bytes = keep;
  }
  uint64_t rows = s->coo ? (uint64_t)hs__coo_capacity(s->coo) : 0;
  if (st == HS_OK && rows != pl->cache_trainer_rows) {
    st = hs__placement_revise(pl, "cache", "trainer", "trainer %llu row(s): %s",
                              (unsigned long long)rows,
                              cfg->cache_rows >= 0 ? "the session's configuration (cache_rows), "
                                                     "cut to the rows there are and to one "
                                                     "device allocation"
                                                   : "the plan's, cut to the rows there are and "
                                                     "to one device allocation");
    pl->cache_trainer_rows = rows;
  }
  if (st == HS_OK && s->coo && s->coo_fill != pl->cache_fill) {
    st = hs__placement_revise(pl, "cache", "fill", "fill %s: the session's configuration "
                              "(cache_fill)", hs_cache_fill_name(s->coo_fill));
    pl->cache_fill = s->coo_fill;
  }
  return st;
}

/* Slots are sized by the sampler's capacities: the largest batch these
 * fanouts and this batch size can produce on this graph (hs__batch_caps:
 * every sampled neighbour new, cut at N, E and the largest degree), not a
 * fixed worst case. That bound is kept on purpose: a batch can reach it
 * (a graph whose neighbourhoods do not overlap does), and growing buffers
 * when a batch outgrows a smaller guess would allocate in the pipeline.
 * It costs address space, not resident memory: the host arrays are only
 * touched up to the largest batch actually seen. Measured, fanouts
 * 15,10,5, batch 1024, 100 float32 features, a generated SBM graph of
 * ogbn-products' size (2.45M vertices, 62M edges): capacity 1,081,344
 * vertices, 432 MB of feature rows and 9.4 MB of block arrays per slot;
 * batches averaged 802k vertices (74%), 321 MB. The trainer-side cache's
 * device staging (hs__coo_slot_create) is sized the same way, and there,
 * on a discrete trainer, the reservation is device memory. */
static hs_status make_slots(hs_session *s) {
  s->pslots = calloc((size_t)s->depth, sizeof *s->pslots);
  s->slots = calloc((size_t)s->depth, sizeof *s->slots);
  if (!s->pslots || !s->slots) return hs__fail(HS_ERR_NOMEM, "out of memory for batch slots");
  const hs_batch_caps *caps = hs__sampler_caps(s->sampler);
  size_t rows = (size_t)caps->vertices, feat_bytes, raw_bytes;
  bool sparse = s->g->feat_sparse, half = !sparse && s->g->feat_dtype == HS_DTYPE_FLOAT16;
  if (!hs__mul_size(rows, (size_t)s->g->f * sizeof(float), &feat_bytes) ||
      !hs__mul_size(rows, s->g->feat_row_bytes, &raw_bytes))
    return hs__fail(HS_ERR_RANGE, "a batch of %zu vertices x %lld features overflows", rows,
                    (long long)s->g->f);
  if (sparse) feat_bytes = 0; /* the rows travel as CSR (sx) */
  for (int i = 0; i < s->depth; i++) {
    hs_slot_data *d = &s->slots[i];
    hs_status st = hs__batch_alloc(caps, &d->batch);
    if (st != HS_OK) return st;
    d->feat = malloc(feat_bytes ? feat_bytes : 1);
    d->labels = malloc((size_t)caps->seeds * sizeof *d->labels + 1);
    if (half) d->raw = malloc(raw_bytes ? raw_bytes : 1);
    if (!d->feat || !d->labels || (half && !d->raw))
      return hs__fail(HS_ERR_NOMEM, "out of memory for batch slot %d (%zu bytes of features)",
                      i, feat_bytes);
    if ((st = hs__session_sparse_alloc(s, d, (int64_t)rows)) != HS_OK) return st;
    if (s->emb_dim > 0) {
      /* The model's input rows (features, then the row), their gradient,
       * and the rows' gradients in the store's order. */
      size_t in_bytes;
      if (!hs__mul_size(rows, (size_t)s->in_dim * sizeof(float), &in_bytes) || rows > INT32_MAX)
        return hs__fail(HS_ERR_RANGE, "a batch of %zu vertices x %d inputs overflows", rows,
                        (int)s->in_dim);
      d->xe = malloc(in_bytes + 1);
      d->dx = malloc(in_bytes + 1);
      d->eg = malloc(rows * (size_t)s->emb_dim * sizeof(float) + 1);
      d->eids = malloc(rows * sizeof *d->eids + 1);
      if (!d->xe || !d->dx || !d->eg || !d->eids)
        return hs__fail(HS_ERR_NOMEM, "out of memory for the node embeddings of batch slot %d",
                        i);
      if ((st = hs__embed_batch_init(&d->eb, (int32_t)rows, s->emb_dim)) != HS_OK) return st;
    }
    /* Device-to-device blocks land here, in trainer order, sized for the
     * sampler's capacities (hop h is block L-1-h). */
    for (int h = 0; s->transfer == HS_TRANSFER_DEVICE && h < caps->n_layers; h++) {
      int l = caps->n_layers - 1 - h;
      if ((st = hs__mem_create(&s->tctx, CL_MEM_READ_WRITE, 4 * ((size_t)caps->dst[h] + 1),
                               &d->blk_rp[l])) != HS_OK ||
          (st = hs__mem_create(&s->tctx, CL_MEM_READ_WRITE, 4 * (size_t)caps->edges[h],
                               &d->blk_col[l])) != HS_OK)
        return hs__fail_context(st, "block buffers of batch slot %d", i);
    }
    s->pslots[i].user = d;
  }
  return HS_OK;
}

/* OpenBLAS threads for the trainer's GEMM (hs_session_config.gemm_threads). */
static int gemm_threads(const hs_session *s, const hs_session_config *cfg) {
  if (cfg->gemm_threads > 0) return cfg->gemm_threads;
  if (s->rt->settings.gemm_threads > 0) return s->rt->settings.gemm_threads;
  return (int)(s->tdev.info.compute_units ? s->tdev.info.compute_units : 1);
}

hs_status hs_session_create(hs_runtime *rt, hs_dataset *ds, const hs_session_config *cfg,
                            hs_session **out) {
  if (!rt || !ds || !out)
    return hs__fail(HS_ERR_INVALID_ARG, "hs_session_create: NULL argument");
  *out = NULL;
  /* The caller's configuration, the fields it may lack at their defaults. */
  hs_session_config full;
  hs_session_config_init(&full);
  hs_status st;
  if (cfg && (st = hs__sized_in(&full, sizeof full, cfg, "hs_session_config")) != HS_OK) return st;
  cfg = &full;
  st = check_config(cfg);
  if (st != HS_OK) return st;
  hs_session *s = calloc(1, sizeof *s);
  if (!s) return hs__fail(HS_ERR_NOMEM, "out of memory for a session");
  s->rt = rt;
  s->ds = ds;
  s->g = hs__dataset_graph(ds);
  s->feat = s->g->feat; /* until choose_feature_pages, after the caches are filled */
  s->cfg = *cfg;
  s->cfg.board = NULL; /* borrowed strings are used during creation only */
  s->cfg.sampler = s->cfg.trainer = NULL;
  s->cfg.profile = NULL;
  s->cfg.profile = NULL;
  s->order_epoch = -1;
  if ((st = check_dataset(s->g, cfg->node_embedding)) != HS_OK || (st = check_sampling(s->g, cfg)) != HS_OK) goto fail;
  /* A batch larger than the graph is one batch of every seed there is: the
   * splits are sets of distinct vertices, so each chunk of a split (and the
   * sampler's capacity) is the same as with the size asked for. */
  if (s->cfg.batch_size > s->g->n) s->cfg.batch_size = (int32_t)s->g->n;
  s->feat_checked = calloc((size_t)(s->g->n + 63) / 64 + 1, sizeof *s->feat_checked);
  if (!s->feat_checked) {
    st = hs__fail(HS_ERR_NOMEM, "out of memory for the feature check bitmap");
    goto fail;
  }
  /* Sparse feature values are checked when the dataset is opened; a
   * dataset without features has none to check. */
  s->feat_all_checked = s->g->feat_sparse || s->g->f <= 0;
  if (s->g->feat_sparse && cfg->model != HS_MODEL_SAGE) {
    st = hs__fail(HS_ERR_UNSUPPORTED, "the dataset's features are stored sparse, which only "
                  "GraphSAGE's first layer reads so far; for %s, convert them to dense "
                  "(hetsage convert --from native --feat-format dense)",
                  hs_model_kind_name(cfg->model));
    goto fail;
  }
  if (cfg->world && cfg->node_embedding > 0) {
    /* Each rank would hold and train its own rows: not combined yet. */
    st = hs__fail(HS_ERR_UNSUPPORTED, "hs_session_config.node_embedding: node embeddings are "
                  "not trained in distributed sessions yet");
    goto fail;
  }
  if ((st = hs__session_dist_join(s, cfg)) != HS_OK) goto fail;
  /* Batches per epoch: of the largest worker slice (every worker trains
   * as many steps). */
  int64_t per_worker = (s->g->split_n[HS_SPLIT_TRAIN] + s->workers - 1) / s->workers;
  s->n_batches = (per_worker + cfg->batch_size - 1) / cfg->batch_size;
  /* The model's input: the features, then the node embedding's row. */
  s->emb_dim = cfg->node_embedding;
  s->in_dim = (int32_t)s->g->f + s->emb_dim;
  if (s->server) {
    /* A parameter server rank holds a shard of the model: no devices. */
    if ((st = make_model(s)) != HS_OK || (st = hs__session_dist_open(s)) != HS_OK) goto fail;
    *out = s;
    return HS_OK;
  }
  if ((st = place(s, cfg)) != HS_OK) goto fail;
  switch (cfg->pipeline != HS_PIPELINE_AUTO ? cfg->pipeline : s->plan->pipeline) {
    case HS_PIPELINE_THREADS: s->mode = HS_PIPE_THREADS; break;
    case HS_PIPELINE_OFF: s->mode = HS_PIPE_OFF; break;
    default: s->mode = HS_PIPE_ASYNC; break;
  }
  s->depth = cfg->depth > 0 ? cfg->depth : s->plan->depth;
  if (s->mode == HS_PIPE_OFF) s->depth = 1;
  if (s->depth < 1) s->depth = 1;

  if ((st = open_devices(s)) != HS_OK) goto fail;
  if ((st = choose_transfer(s, cfg)) != HS_OK) goto fail;
  s->emb_dim = cfg->node_embedding;
  s->in_dim = (int32_t)s->g->f + s->emb_dim;
  if ((st = make_store(s)) != HS_OK) goto fail;
  if ((st = make_model(s)) != HS_OK) goto fail;
  if ((st = make_sampler(s)) != HS_OK) goto fail;
  hs_trainer_opts to = {.wg = 0, .gemm = HS_GEMM_AUTO,
                        .gemm_threads = gemm_threads(s, cfg), .profile = false,
                        .input_grad = s->emb_dim > 0};
  if ((st = hs__trainer_create(&s->tctx, &s->tdev, s->tq, &s->model, &to, &s->trainer)) != HS_OK)
    goto fail;
  if ((st = hs__gather_pool_create(s->plan->gather_threads > 0 ? s->plan->gather_threads : 1,
                                   &s->pool)) != HS_OK)
    goto fail;
  if ((st = make_slots(s)) != HS_OK) goto fail;
  s->order = malloc((size_t)s->g->split_n[HS_SPLIT_TRAIN] * sizeof *s->order);
  if (!s->order) {
    st = hs__fail(HS_ERR_NOMEM, "out of memory for the training order");
    goto fail;
  }
  if ((st = hs__session_cache_open(s, cfg)) != HS_OK) goto fail;
  if ((st = choose_feature_pages(s, ds, cfg)) != HS_OK) goto fail;
  if ((st = revise_plan(s, cfg)) != HS_OK) goto fail;
  /* Everything that reads the host topology (the sampler's upload, the
   * degree and presample cache fills) has run. */
  if (cfg->free_host_topology) s->topology_freed = hs__dataset_free_topology(ds);
  if ((st = hs__session_dist_open(s)) != HS_OK) goto fail;
  *out = s;
  return HS_OK;
fail:
  hs_session_destroy(s);
  return st;
}

void hs_session_destroy(hs_session *s) {
  if (!s) return;
  hs__session_dist_close(s);
  /* Nothing may still run on the device when the buffers go; the queues
   * themselves are released last, after every module that keeps them. */
  if (s->sq) hs__queue_finish(s->sq);
  if (s->tq) hs__queue_finish(s->tq);
  hs__session_cache_close(s);
  for (int i = 0; s->slots && i < s->depth; i++) {
    hs_slot_data *d = &s->slots[i];
    hs__events_release(&d->blk_ev, 1);
    for (int l = 0; l < HS_SAMPLE_MAX_LAYERS; l++) {
      hs__mem_release(&d->blk_rp[l]);
      hs__mem_release(&d->blk_col[l]);
    }
    hs__batch_free(&s->slots[i].batch);
    free(s->slots[i].feat);
    free(s->slots[i].raw);
    free(s->slots[i].labels);
    hs__session_sparse_free(&s->slots[i]);
    free(d->xe);
    free(d->dx);
    free(d->eg);
    free(d->eids);
    hs__embed_batch_free(&d->eb);
  }
  hs__embed_destroy(s->emb);
  free(s->slots);
  free(s->pslots);
  free(s->order);
  free((void *)s->feat_checked);
  hs__gather_pool_destroy(s->pool);
  hs__trainer_destroy(s->trainer);
  hs__sampler_destroy(s->sampler);
  hs__queue_release(&s->sq);
  hs__queue_release(&s->tq);
  hs__model_destroy(&s->model);
  if (!s->one_ctx) hs__ctx_release(&s->tctx);
  hs__ctx_release(&s->sctx);
  hs__subdevices_release(s->subs, s->n_subs);
  hs__board_prog_files_free(&s->sprogs);
  hs__board_prog_files_free(&s->tprogs);
  hs_placement_free(s->plan);
  free(s);
}

/* The rank's part in a distributed run, as a line of describe. */
static int describe_rank(const hs_session *s, char *buf, size_t len) {
  if (!s->comm) return snprintf(buf, len, "%s", "");
  char host[128] = "";
  hs__comm_host(s->comm, host, sizeof host);
  const hs_dist_config *d = &s->dcfg;
  char mode[96];
  if (d->sync == HS_SYNC_PS)
    snprintf(mode, sizeof mode, "ps, %d servers, %s, quorum %d", d->servers,
             d->staleness ? "asynchronous" : "synchronous", d->quorum);
  else if (d->sync == HS_SYNC_LOCAL)
    snprintf(mode, sizeof mode, "local, average every %d steps", d->period);
  else
    snprintf(mode, sizeof mode, "allreduce");
  if (s->server)
    return snprintf(buf, len, "rank:     %d of %d on %s (pid %d): parameter server %d of %d "
                    "(%s; compression %s), no devices\n", s->rank, s->world_size, host,
                    (int)getpid(), s->rank - s->workers, d->servers, mode,
                    hs_compress_name(d->compress));
  return snprintf(buf, len, "rank:     %d of %d on %s (pid %d): worker %d of %d, seeds %lld..%lld "
                  "of each epoch, %lld steps (%s; compression %s)\n", s->rank, s->world_size,
                  host, (int)getpid(), s->worker, s->workers, (long long)s->slice_lo,
                  (long long)(s->slice_lo + s->slice_len), (long long)s->n_batches, mode,
                  hs_compress_name(d->compress));
}

size_t hs_session_describe(const hs_session *s, char *buf, size_t len) {
  if (!s) {
    if (buf && len) buf[0] = '\0';
    return 0;
  }
  char rank[512];
  int rk = describe_rank(s, rank, sizeof rank);
  size_t r = rk > 0 ? (size_t)rk : 0;
  if (buf && len) snprintf(buf, len, "%s", rank);
  if (s->server) return r;
  size_t n = r + hs_placement_describe(s->plan, buf && len > r ? buf + r : NULL,
                                       buf && len > r ? len - r : 0);
  char more[1280], b[32];
  int k = snprintf(more, sizeof more, "transfer: %s (%s)\n",
                   s->transfer == HS_TRANSFER_DEVICE ? "blocks device to device"
                                                     : "blocks through the host",
                   s->transfer_why);
  if (k > 0 && (size_t)k < sizeof more)
    k += snprintf(more + k, sizeof more - (size_t)k, "features: %s\n", s->feat_pages_why);
  const hs_build_note *bn = s->sampler ? hs__sampler_build_note(s->sampler) : NULL;
  if (bn && bn->without_speedups && k > 0 && (size_t)k < sizeof more)
    k += snprintf(more + k, sizeof more - (size_t)k,
                  "sampler kernels: built without their CPU prefetches, which the device's "
                  "compiler rejected (%s)\n",
                  bn->why);
  if (s->topology_freed && k > 0 && (size_t)k < sizeof more)
    k += snprintf(more + k, sizeof more - (size_t)k,
                  "host topology: %s released after the upload to the sampler\n",
                  hs__fmt_bytes(s->topology_freed, b, sizeof b));
  if (k > 0 && (size_t)k < sizeof more)
    k += snprintf(more + k, sizeof more - (size_t)k, "model: %s", s->model.shape.ops->title);
  if (s->model.shape.kind == HS_NN_GAT && k > 0 && (size_t)k < sizeof more)
    k += snprintf(more + k, sizeof more - (size_t)k, " (%d heads)", s->model.shape.heads);
  if (k > 0 && (size_t)k < sizeof more)
    k += snprintf(more + k, sizeof more - (size_t)k, "; sampling %s%s",
                  hs_sampling_name(s->cfg.sampling), s->cfg.replace ? " with replacement" : "");
  if (s->cfg.vertex_budget > 0 && k > 0 && (size_t)k < sizeof more)
    k += snprintf(more + k, sizeof more - (size_t)k, ", at most %lld vertices a batch",
                  (long long)s->cfg.vertex_budget);
  if (s->emb_dim > 0 && k > 0 && (size_t)k < sizeof more)
    k += snprintf(more + k, sizeof more - (size_t)k,
                  "; node embeddings: %d per vertex on the host (row-wise Adagrad, lr %g)%s",
                  (int)s->emb_dim, (double)s->cfg.node_embedding_lr,
                  s->g->f > 0 ? ", after the features" : ", the whole input");
  if (k > 0 && (size_t)k < sizeof more) snprintf(more + k, sizeof more - (size_t)k, "\n");
  size_t m = strlen(more);
  if (buf && n < len) snprintf(buf + n, len - n, "%s", more);
  return n + m;
}

void hs_session_set_progress(hs_session *s, hs_batch_progress_fn fn, void *user) {
  if (!s) return;
  s->progress = fn;
  s->progress_user = user;
}

void hs_session_set_stop_flag(hs_session *s, volatile sig_atomic_t *flag) {
  if (s) s->stop = flag;
}

int64_t hs_session_epoch(const hs_session *s) { return s ? s->epoch : 0; }

int hs_session_num_classes(const hs_session *s) { return s ? s->g->num_classes : 0; }
