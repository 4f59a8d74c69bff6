#include "cli_session.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void cli_session_args_init(cli_session_args *a) {
  memset(a, 0, sizeof *a);
  hs_session_config_init(&a->cfg);
}

void cli_session_usage(FILE *f, bool training) {
  fprintf(f,
          "  --dataset DIR        native dataset (default: the bundled Cora)\n"
          "  --board B            board profile name or file (default: generic-cpu)\n"
          "  --sampler X, --trainer X\n"
          "                       put a role on a device: index, type, selector\n"
          "                       (pocl:0, rusticl, oclgrind: see hetsage info) or name\n"
          "  --mode threads|async|off\n"
          "                       pipeline driver (default: the board's plan)\n"
          "  --pipeline off       same as --mode off (one batch at a time)\n"
          "  --depth N            batch slots in flight (default: the plan's)\n"
          "  --fanouts 25,10      neighbours per layer from the seeds out (-1: all)\n"
          "  --sampling uniform|weighted|threshold\n"
          "                       how neighbours are drawn (default uniform): in\n"
          "                       proportion to the edge weights (weights.npy), or\n"
          "                       uniformly among edges above a weight threshold;\n"
          "                       sampled evaluation draws the same way\n"
          "  --replace            draw with replacement (uniform, weighted)\n"
          "  --vertex-budget N    at most N vertices per batch (>= the batch size)\n"
          "  --threshold X[,Y..]  threshold mode's edge weight threshold, one for\n"
          "                       every layer or one per layer from the seeds out\n"
          "  --batch N            seeds per batch (default 1024)\n"
          "  --model sage|gcn|gat GraphSAGE-mean (default), graph convolution\n"
          "                       (symmetric normalisation, self loops) or graph\n"
          "                       attention\n"
          "  --heads N            GAT's attention heads (default 4; the hidden\n"
          "                       width must be a multiple of N)\n"
          "  --hidden N           hidden width (default 128)\n");
  if (training)
    fprintf(f, "  --dropout P          (default 0.5)\n"
               "  --optimizer adam|sgd (default adam)\n"
               "  --lr X               learning rate (default 0.01)\n"
               "  --weight-decay X     L2 weight decay (default 5e-4)\n");
  fprintf(f,
          "  --seed S             seeds init, shuffles, sampling, dropout (default 0)\n"
          "  --cache-rows N       trainer-side feature cache rows (default: plan)\n"
          "  --cache-fill first|degree|presample\n"
          "                       how the trainer cache is filled (default: plan)\n"
          "  --memory-budget SIZE host memory budget, e.g. 512M (default: plan);\n"
          "                       larger features are read from disk through a\n"
          "                       cache of half of it, seeds in block order\n"
          "  --transfer auto|host|device\n"
          "                       how sampled blocks reach the trainer: device to\n"
          "                       device when the roles share a context (auto, the\n"
          "                       default; HETSAGE_TRANSFER), or through the host\n"
          "  --feature-pages auto|file|huge\n"
          "                       gather feature rows from the file mapping or from\n"
          "                       a copy on 2 MiB pages (auto, the default: the copy\n"
          "                       when features exceed the last-level cache and fit\n"
          "                       half the free memory; HETSAGE_FEATURE_PAGES)\n"
          "  --gemm-threads N     OpenBLAS threads of a CPU trainer's GEMM (default:\n"
          "                       its compute units; HETSAGE_GEMM_THREADS); a fixed\n"
          "                       N gives the same parameters on a whole CPU and on\n"
          "                       any sub-device of it\n");
}

static const char *value(const char *cmd, int argc, char **argv, int *i) {
  if (*i + 1 >= argc) {
    cli_usage_error(cmd, "option %s needs a value", argv[*i]);
    return NULL;
  }
  return argv[++*i];
}

/* --threshold's items: finite numbers, at most cap of them. */
typedef struct threshold_ctx {
  float *out;
  int cap;
} threshold_ctx;

static bool threshold_item(void *ctx, const char *item, int index) {
  threshold_ctx *t = ctx;
  double d;
  if (index >= t->cap || !cli_parse_double(item, &d) || !isfinite(d)) return false;
  t->out[index] = (float)d;
  return true;
}

static int bad(const char *cmd, const char *opt, const char *v, const char *what) {
  cli_usage_error(cmd, "%s '%s': %s", opt, v, what);
  return -1;
}

int cli_session_arg(const char *cmd, cli_session_args *a, int argc, char **argv, int *i) {
  const char *o = argv[*i], *v;
  hs_session_config *c = &a->cfg;
  uint64_t u;
  double d;
  int k;
#define VAL()                                    \
  do {                                           \
    if (!(v = value(cmd, argc, argv, i))) return -1; \
  } while (0)
  /* Evaluating a saved model (eval, predict, embed) does not train: the
   * options of training alone are refused there, not taken and ignored. */
  static const char *const training_only[] = {"--lr", "--weight-decay", "--optimizer",
                                              "--dropout"};
  if (strcmp(cmd, "train") != 0)
    for (size_t t = 0; t < sizeof training_only / sizeof training_only[0]; t++)
      if (strcmp(o, training_only[t]) == 0) {
        cli_usage_error(cmd, "%s applies to training only: %s does not train", o, cmd);
        return -1;
      }
  if (strcmp(o, "--dataset") == 0) {
    VAL();
    a->dataset = v;
  } else if (strcmp(o, "--board") == 0) {
    VAL();
    c->board = v;
  } else if (strcmp(o, "--sampler") == 0) {
    VAL();
    c->sampler = v;
  } else if (strcmp(o, "--trainer") == 0) {
    VAL();
    c->trainer = v;
  } else if (strcmp(o, "--mode") == 0 || strcmp(o, "--pipeline") == 0) {
    VAL();
    static const char *const names[] = {"threads", "async", "off", "auto", "on"};
    static const hs_pipeline_mode modes[] = {HS_PIPELINE_THREADS, HS_PIPELINE_ASYNC,
                                             HS_PIPELINE_OFF, HS_PIPELINE_AUTO,
                                             HS_PIPELINE_AUTO};
    if (!cli_opt_choice(cmd, o, v, names, 5, &k)) return -1;
    c->pipeline = modes[k];
  } else if (strcmp(o, "--depth") == 0) {
    VAL();
    if (!cli_opt_u64(cmd, o, v, 1, HS_MAX_DEPTH, &u)) return -1;
    c->depth = (int)u;
  } else if (strcmp(o, "--fanouts") == 0) {
    VAL();
    int n = cli_parse_fanouts(v, c->fanouts, HS_MAX_LAYERS);
    if (n < 1) {
      char what[160];
      snprintf(what, sizeof what, "expected 1 to %d comma-separated fanouts, each -1 (all) "
               "or in [1, %d]", HS_MAX_LAYERS, HS_MAX_FANOUT);
      return bad(cmd, o, v, what);
    }
    c->n_layers = n;
    a->fanouts_set = true;
    a->set |= CLI_SET_FANOUTS;
  } else if (strcmp(o, "--sampling") == 0) {
    VAL();
    static const char *const names[] = {"uniform", "weighted", "threshold"};
    static const hs_sampling modes[] = {HS_SAMPLING_UNIFORM, HS_SAMPLING_WEIGHTED,
                                        HS_SAMPLING_THRESHOLD};
    if (!cli_opt_choice(cmd, o, v, names, 3, &k)) return -1;
    c->sampling = modes[k];
    a->set |= CLI_SET_SAMPLING;
  } else if (strcmp(o, "--replace") == 0) {
    c->replace = true;
    a->set |= CLI_SET_REPLACE;
  } else if (strcmp(o, "--vertex-budget") == 0) {
    VAL();
    if (!cli_opt_u64(cmd, o, v, 1, INT32_MAX, &u)) return -1;
    c->vertex_budget = (int64_t)u;
    a->set |= CLI_SET_VERTEX_BUDGET;
  } else if (strcmp(o, "--threshold") == 0) {
    VAL();
    threshold_ctx t = {c->thresholds, HS_MAX_LAYERS};
    int n = cli_list_each(v, threshold_item, &t);
    if (n < 1) {
      char what[160];
      snprintf(what, sizeof what, "expected 1 to %d comma-separated finite numbers",
               HS_MAX_LAYERS);
      return bad(cmd, o, v, what);
    }
    a->thresholds_set = n;
    a->set |= CLI_SET_THRESHOLD;
  } else if (strcmp(o, "--batch") == 0) {
    VAL();
    if (!cli_opt_u64(cmd, o, v, 1, HS_MAX_BATCH, &u)) return -1;
    c->batch_size = (int32_t)u;
    a->set |= CLI_SET_BATCH;
  } else if (strcmp(o, "--model") == 0) {
    VAL();
    if (hs_model_kind_parse(v, &c->model) != HS_OK)
      return bad(cmd, o, v, "expected sage, gcn or gat");
    a->model_set = true;
    a->set |= CLI_SET_MODEL;
  } else if (strcmp(o, "--heads") == 0) {
    VAL();
    if (!cli_opt_u64(cmd, o, v, 1, 64, &u)) return -1;
    c->heads = (int)u;
    a->set |= CLI_SET_HEADS;
  } else if (strcmp(o, "--hidden") == 0) {
    VAL();
    if (!cli_opt_u64(cmd, o, v, 1, HS_MAX_HIDDEN, &u)) return -1;
    c->hidden = (int)u;
    a->set |= CLI_SET_HIDDEN;
  } else if (strcmp(o, "--dropout") == 0) {
    VAL();
    if (!cli_opt_number(cmd, o, v, 0, false, 1, true, &d)) return -1;
    c->dropout = (float)d;
    a->set |= CLI_SET_DROPOUT;
  } else if (strcmp(o, "--optimizer") == 0) {
    VAL();
    static const char *const names[] = {"adam", "sgd"};
    static const hs_optimizer opts[] = {HS_OPTIMIZER_ADAM, HS_OPTIMIZER_SGD};
    if (!cli_opt_choice(cmd, o, v, names, 2, &k)) return -1;
    c->optimizer = opts[k];
    a->set |= CLI_SET_OPTIMIZER;
  } else if (strcmp(o, "--lr") == 0) {
    VAL();
    if (!cli_opt_number(cmd, o, v, 0, true, HS_MAX_LR, true, &d)) return -1;
    c->lr = (float)d;
    a->set |= CLI_SET_LR;
  } else if (strcmp(o, "--weight-decay") == 0) {
    VAL();
    if (!cli_opt_number(cmd, o, v, 0, false, 1, true, &d)) return -1;
    c->weight_decay = (float)d;
    a->set |= CLI_SET_WEIGHT_DECAY;
  } else if (strcmp(o, "--seed") == 0) {
    VAL();
    if (!cli_opt_u64(cmd, o, v, 0, UINT64_MAX, &u)) return -1;
    c->seed = u;
    a->set |= CLI_SET_SEED;
  } else if (strcmp(o, "--cache-rows") == 0) {
    VAL();
    if (!cli_opt_u64(cmd, o, v, 0, INT64_MAX, &u)) return -1;
    c->cache_rows = (int64_t)u;
  } else if (strcmp(o, "--cache-fill") == 0) {
    VAL();
    static const char *const names[] = {"first", "degree", "presample"};
    static const hs_cache_fill fills[] = {HS_CACHE_FILL_FIRST, HS_CACHE_FILL_DEGREE,
                                          HS_CACHE_FILL_PRESAMPLE};
    if (!cli_opt_choice(cmd, o, v, names, 3, &k)) return -1;
    c->cache_fill = fills[k];
  } else if (strcmp(o, "--transfer") == 0) {
    VAL();
    const char *names[] = {hs_transfer_name(HS_TRANSFER_AUTO), hs_transfer_name(HS_TRANSFER_HOST),
                           hs_transfer_name(HS_TRANSFER_DEVICE)};
    if (!cli_opt_choice(cmd, o, v, names, 3, &k)) return -1;
    c->transfer = (hs_transfer)k;
  } else if (strcmp(o, "--feature-pages") == 0) {
    VAL();
    const char *names[] = {hs_feature_pages_name(HS_FEATURE_PAGES_AUTO),
                           hs_feature_pages_name(HS_FEATURE_PAGES_FILE),
                           hs_feature_pages_name(HS_FEATURE_PAGES_HUGE)};
    if (!cli_opt_choice(cmd, o, v, names, 3, &k)) return -1;
    c->feature_pages = (hs_feature_pages)k;
  } else if (strcmp(o, "--gemm-threads") == 0) {
    VAL();
    if (!cli_parse_u64(v, &u) || u < 1 || u > 4096) return bad(cmd, o, v, "expected 1..4096");
    c->gemm_threads = (int)u;
    a->set |= CLI_SET_GEMM_THREADS;
  } else if (strcmp(o, "--memory-budget") == 0) {
    VAL();
    if (!cli_parse_size(v, &u) || u == 0)
      return bad(cmd, o, v, "expected a size of at least 1 byte, such as 512M (K, M, G, T: "
                 "powers of 1024)");
    c->memory_budget = u;
    a->set |= CLI_SET_MEMORY_BUDGET;
  } else {
    return 0;
  }
#undef VAL
  return 1;
}

/* One --threshold value stands for every layer. */
static void spread_threshold(cli_session_args *a) {
  if (a->thresholds_set == 1)
    for (int l = 1; l < HS_MAX_LAYERS; l++) a->cfg.thresholds[l] = a->cfg.thresholds[0];
}

int cli_session_open(const char *cmd, cli_session_args *a, hs_runtime **rt, hs_dataset **ds,
                     hs_session **s) {
  *rt = NULL;
  *ds = NULL;
  *s = NULL;
  spread_threshold(a);
  if (a->thresholds_set > 1 && a->thresholds_set != a->cfg.n_layers)
    return cli_usage_error(cmd, "--threshold has %d values for %d layers (give one, or one "
                           "per layer)", a->thresholds_set, a->cfg.n_layers);
  if (a->thresholds_set && a->cfg.sampling != HS_SAMPLING_THRESHOLD)
    return cli_usage_error(cmd, "--threshold applies to --sampling threshold only");
  char bundled[1024];
  const char *path = a->dataset;
  hs_status st;
  if ((st = hs_runtime_open(rt, NULL)) != HS_OK) {
    cli_report(cmd, "device discovery", st);
    return 1;
  }
  if (!path) {
    /* Distributed: rank 0 imports the bundled copy, then the others find
     * it (concurrent imports would replace one another's). */
    hs_world *w = a->cfg.world;
    bool first = !w || hs_world_rank(w) == 0;
    if (!first && (st = hs_world_barrier(w, a->cfg.dist)) != HS_OK) {
      cli_report(cmd, "waiting for rank 0's bundled Cora", st);
      cli_session_close(*rt, NULL, NULL);
      *rt = NULL;
      return 1;
    }
    if ((st = hs_dataset_bundled(*rt, "cora", bundled, sizeof bundled)) != HS_OK) {
      cli_report(cmd, "preparing the bundled Cora", st);
      cli_session_close(*rt, NULL, NULL);
      *rt = NULL;
      return 1;
    }
    if (w && first && (st = hs_world_barrier(w, a->cfg.dist)) != HS_OK) {
      cli_report(cmd, "waiting for the other ranks", st);
      cli_session_close(*rt, NULL, NULL);
      *rt = NULL;
      return 1;
    }
    path = bundled;
  }
  snprintf(a->path, sizeof a->path, "%s", path);
  if ((st = hs_dataset_open(path, ds)) != HS_OK) {
    cli_report(cmd, path, st);
    cli_session_close(*rt, NULL, NULL);
    *rt = NULL;
    return 1;
  }
  if ((st = hs_session_create(*rt, *ds, &a->cfg, s)) != HS_OK) {
    cli_report(cmd, "setting up the session", st);
    cli_session_close(*rt, *ds, NULL);
    *rt = NULL;
    *ds = NULL;
    return st == HS_ERR_INVALID_ARG ? 2 : 1;
  }
  return 0;
}

void cli_session_close(hs_runtime *rt, hs_dataset *ds, hs_session *s) {
  hs_session_destroy(s);
  hs_dataset_close(ds);
  hs_runtime_close(rt);
}

typedef struct ckpt_opt {
  unsigned bit;
  const char *name;
} ckpt_opt;

/* The value of option `bit` in `c`, as text, for messages and comparison. */
static void opt_text(const hs_session_config *c, unsigned bit, char *buf, size_t len) {
  switch (bit) {
    case CLI_SET_FANOUTS: {
      size_t at = 0;
      buf[0] = '\0';
      for (int l = 0; l < c->n_layers && at < len; l++)
        at += (size_t)snprintf(buf + at, len - at, l ? ",%d" : "%d", (int)c->fanouts[l]);
      return;
    }
    case CLI_SET_BATCH: snprintf(buf, len, "%d", (int)c->batch_size); return;
    case CLI_SET_HIDDEN: snprintf(buf, len, "%d", c->hidden); return;
    case CLI_SET_DROPOUT: snprintf(buf, len, "%g", (double)c->dropout); return;
    case CLI_SET_OPTIMIZER:
      snprintf(buf, len, "%s", c->optimizer == HS_OPTIMIZER_SGD ? "sgd" : "adam");
      return;
    case CLI_SET_LR: snprintf(buf, len, "%g", (double)c->lr); return;
    case CLI_SET_WEIGHT_DECAY: snprintf(buf, len, "%g", (double)c->weight_decay); return;
    case CLI_SET_SEED: snprintf(buf, len, "%llu", (unsigned long long)c->seed); return;
    case CLI_SET_MODEL: snprintf(buf, len, "%s", hs_model_kind_name(c->model)); return;
    case CLI_SET_HEADS: snprintf(buf, len, "%d", c->model == HS_MODEL_GAT ? c->heads : 1); return;
    case CLI_SET_MEMORY_BUDGET:
      snprintf(buf, len, "%llu bytes", (unsigned long long)c->memory_budget);
      return;
    case CLI_SET_SAMPLING: snprintf(buf, len, "%s", hs_sampling_name(c->sampling)); return;
    case CLI_SET_REPLACE: snprintf(buf, len, "%s", c->replace ? "on" : "off"); return;
    case CLI_SET_VERTEX_BUDGET:
      if (c->vertex_budget > 0)
        snprintf(buf, len, "%lld", (long long)c->vertex_budget);
      else
        snprintf(buf, len, "none");
      return;
    case CLI_SET_THRESHOLD: {
      size_t at = 0;
      buf[0] = '\0';
      for (int l = 0; l < c->n_layers && at < len; l++)
        at += (size_t)snprintf(buf + at, len - at, l ? ",%g" : "%g", (double)c->thresholds[l]);
      return;
    }
    case CLI_SET_GEMM_THREADS:
      if (c->gemm_threads > 0)
        snprintf(buf, len, "%d", c->gemm_threads);
      else
        snprintf(buf, len, "the trainer's compute units");
      return;
    default: buf[0] = '\0';
  }
}

/* Copy option `bit` from `from` into `to`. */
static void opt_copy(hs_session_config *to, const hs_session_config *from, unsigned bit) {
  switch (bit) {
    case CLI_SET_FANOUTS:
      to->n_layers = from->n_layers;
      memcpy(to->fanouts, from->fanouts, sizeof to->fanouts);
      break;
    case CLI_SET_BATCH: to->batch_size = from->batch_size; break;
    case CLI_SET_HIDDEN: to->hidden = from->hidden; break;
    case CLI_SET_DROPOUT: to->dropout = from->dropout; break;
    case CLI_SET_OPTIMIZER: to->optimizer = from->optimizer; break;
    case CLI_SET_LR: to->lr = from->lr; break;
    case CLI_SET_WEIGHT_DECAY: to->weight_decay = from->weight_decay; break;
    case CLI_SET_SEED: to->seed = from->seed; break;
    case CLI_SET_MODEL: to->model = from->model; break;
    case CLI_SET_HEADS: to->heads = from->heads; break;
    case CLI_SET_MEMORY_BUDGET: to->memory_budget = from->memory_budget; break;
    case CLI_SET_SAMPLING: to->sampling = from->sampling; break;
    case CLI_SET_REPLACE: to->replace = from->replace; break;
    case CLI_SET_VERTEX_BUDGET: to->vertex_budget = from->vertex_budget; break;
    case CLI_SET_THRESHOLD: memcpy(to->thresholds, from->thresholds, sizeof to->thresholds); break;
    case CLI_SET_GEMM_THREADS: to->gemm_threads = from->gemm_threads; break;
    default: break;
  }
}

int cli_session_from_checkpoint(const char *cmd, cli_session_args *a, const char *path,
                                bool resume, bool new_lr) {
  static const ckpt_opt opts[] = {
      {CLI_SET_FANOUTS, "--fanouts"},   {CLI_SET_BATCH, "--batch"},
      {CLI_SET_HIDDEN, "--hidden"},     {CLI_SET_DROPOUT, "--dropout"},
      {CLI_SET_OPTIMIZER, "--optimizer"}, {CLI_SET_LR, "--lr"},
      {CLI_SET_WEIGHT_DECAY, "--weight-decay"}, {CLI_SET_SEED, "--seed"},
      {CLI_SET_MODEL, "--model"},       {CLI_SET_HEADS, "--heads"},
      {CLI_SET_MEMORY_BUDGET, "--memory-budget"},
      {CLI_SET_SAMPLING, "--sampling"}, {CLI_SET_REPLACE, "--replace"},
      {CLI_SET_VERTEX_BUDGET, "--vertex-budget"}, {CLI_SET_THRESHOLD, "--threshold"},
      {CLI_SET_GEMM_THREADS, "--gemm-threads"},
  };
  spread_threshold(a);
  hs_session_config given = a->cfg, ck = a->cfg;
  hs_status st = hs_session_config_from_checkpoint(path, &ck);
  if (st != HS_OK) {
    cli_report(cmd, path, st);
    return 1;
  }
  /* Evaluating a model (eval, predict, embed), the command line chooses
   * how neighbours are drawn and the GEMM's threads: the dataset may have
   * no edge weights, and the bits of an evaluation are its own. */
  if (!resume) {
    static const unsigned own[] = {CLI_SET_SAMPLING, CLI_SET_REPLACE, CLI_SET_VERTEX_BUDGET,
                                   CLI_SET_THRESHOLD, CLI_SET_GEMM_THREADS};
    for (size_t i = 0; i < sizeof own / sizeof own[0]; i++) opt_copy(&ck, &given, own[i]);
  }
  for (size_t i = 0; i < sizeof opts / sizeof opts[0]; i++) {
    unsigned bit = opts[i].bit;
    if (!(a->set & bit)) continue;
    /* The budget decides the seed order only through the features' size:
     * the library compares the order itself. */
    if (bit == CLI_SET_MEMORY_BUDGET) {
      opt_copy(&ck, &given, bit);
      continue;
    }
    char mine[160], theirs[160];
    /* Thresholds compare over the checkpoint's layers (one value given
     * stands for each). */
    hs_session_config as_given = given;
    if (bit == CLI_SET_THRESHOLD) as_given.n_layers = ck.n_layers;
    opt_text(&as_given, bit, mine, sizeof mine);
    opt_text(&ck, bit, theirs, sizeof theirs);
    if (strcmp(mine, theirs) == 0) continue;
    if (!resume) {
      opt_copy(&ck, &given, bit); /* evaluating: what is asked for */
    } else if (bit == CLI_SET_LR && new_lr) {
      opt_copy(&ck, &given, bit);
      fprintf(stderr, "note: resuming with learning rate %s (the checkpoint's run used %s)\n",
              mine, theirs);
    } else {
      return cli_usage_error(cmd, "%s %s conflicts with the checkpoint %s, whose run used %s: "
                             "--resume continues that run with its options (leave %s out%s)",
                             opts[i].name, mine, path, theirs, opts[i].name,
                             bit == CLI_SET_LR ? ", or give --new-lr X for a new rate" : "");
    }
  }
  a->cfg = ck;
  return 0;
}
