#include "cli_session.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void cli_session_args_init(cli_session_args *a) {
  memset(a, 0, sizeof *a);
  hs_session_config_init(&a->cfg);
}

void cli_session_usage(FILE *f) {
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
          "  --hidden N           hidden width (default 128)\n"
          "  --dropout P          (default 0.5)\n"
          "  --optimizer adam|sgd (default adam)\n"
          "  --lr X               learning rate (default 0.01)\n"
          "  --weight-decay X     L2 weight decay (default 5e-4)\n"
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

static int bad(const char *cmd, const char *opt, const char *v, const char *what) {
  cli_usage_error(cmd, "%s '%s': %s", opt, v, what);
  return -1;
}

int cli_session_arg(const char *cmd, cli_session_args *a, int argc, char **argv, int *i) {
  const char *o = argv[*i], *v;
  hs_session_config *c = &a->cfg;
  uint64_t u;
  int64_t x;
  double d;
#define VAL()                                    \
  do {                                           \
    if (!(v = value(cmd, argc, argv, i))) return -1; \
  } while (0)
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
    if (strcmp(v, "threads") == 0) c->pipeline = HS_PIPELINE_THREADS;
    else if (strcmp(v, "async") == 0) c->pipeline = HS_PIPELINE_ASYNC;
    else if (strcmp(v, "off") == 0) c->pipeline = HS_PIPELINE_OFF;
    else if (strcmp(v, "auto") == 0 || strcmp(v, "on") == 0) c->pipeline = HS_PIPELINE_AUTO;
    else return bad(cmd, o, v, "expected threads, async, off or auto");
  } else if (strcmp(o, "--depth") == 0) {
    VAL();
    if (!cli_parse_u64(v, &u) || u < 1 || u > 64) return bad(cmd, o, v, "expected 1..64");
    c->depth = (int)u;
  } else if (strcmp(o, "--fanouts") == 0) {
    VAL();
    int n = 0;
    char buf[256];
    snprintf(buf, sizeof buf, "%s", v);
    char *save = NULL;
    for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
      if (n == HS_MAX_LAYERS) return bad(cmd, o, v, "at most 8 layers");
      if (!cli_parse_i64(t, &x) || x == 0 || x < -1 || x > 1000000)
        return bad(cmd, o, v, "each fanout must be >= 1 or -1 (all)");
      c->fanouts[n++] = (int32_t)x;
    }
    if (n == 0) return bad(cmd, o, v, "expected a comma-separated list");
    c->n_layers = n;
    a->fanouts_set = true;
  } else if (strcmp(o, "--sampling") == 0) {
    VAL();
    if (hs_sampling_parse(v, &c->sampling) != HS_OK)
      return bad(cmd, o, v, "expected uniform, weighted or threshold");
  } else if (strcmp(o, "--replace") == 0) {
    c->replace = true;
  } else if (strcmp(o, "--vertex-budget") == 0) {
    VAL();
    if (!cli_parse_u64(v, &u) || u < 1 || u > INT32_MAX)
      return bad(cmd, o, v, "expected a vertex count >= 1");
    c->vertex_budget = (int64_t)u;
  } else if (strcmp(o, "--threshold") == 0) {
    VAL();
    int n = 0;
    char buf[256];
    snprintf(buf, sizeof buf, "%s", v);
    char *save = NULL;
    for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
      if (n == HS_MAX_LAYERS) return bad(cmd, o, v, "at most 8 layers");
      if (!cli_parse_double(t, &d) || !isfinite(d)) return bad(cmd, o, v, "expected numbers");
      c->thresholds[n++] = (float)d;
    }
    if (n == 0) return bad(cmd, o, v, "expected a comma-separated list");
    a->thresholds_set = n;
  } else if (strcmp(o, "--batch") == 0) {
    VAL();
    if (!cli_parse_u64(v, &u) || u < 1 || u > (1u << 24)) return bad(cmd, o, v, "expected 1..16777216");
    c->batch_size = (int32_t)u;
  } else if (strcmp(o, "--model") == 0) {
    VAL();
    if (hs_model_kind_parse(v, &c->model) != HS_OK) return bad(cmd, o, v, "expected sage, gcn or gat");
    a->model_set = true;
  } else if (strcmp(o, "--heads") == 0) {
    VAL();
    if (!cli_parse_u64(v, &u) || u < 1 || u > 64) return bad(cmd, o, v, "expected 1..64");
    c->heads = (int)u;
  } else if (strcmp(o, "--hidden") == 0) {
    VAL();
    if (!cli_parse_u64(v, &u) || u < 1 || u > 65536) return bad(cmd, o, v, "expected 1..65536");
    c->hidden = (int)u;
  } else if (strcmp(o, "--dropout") == 0) {
    VAL();
    if (!cli_parse_double(v, &d) || !(d >= 0 && d < 1)) return bad(cmd, o, v, "expected [0, 1)");
    c->dropout = (float)d;
  } else if (strcmp(o, "--optimizer") == 0) {
    VAL();
    if (strcmp(v, "adam") == 0) c->optimizer = HS_OPTIMIZER_ADAM;
    else if (strcmp(v, "sgd") == 0) c->optimizer = HS_OPTIMIZER_SGD;
    else return bad(cmd, o, v, "expected adam or sgd");
  } else if (strcmp(o, "--lr") == 0) {
    VAL();
    if (!cli_parse_double(v, &d) || !(d > 0 && d < 100)) return bad(cmd, o, v, "expected a rate > 0");
    c->lr = (float)d;
  } else if (strcmp(o, "--weight-decay") == 0) {
    VAL();
    if (!cli_parse_double(v, &d) || !(d >= 0 && d < 1)) return bad(cmd, o, v, "expected [0, 1)");
    c->weight_decay = (float)d;
  } else if (strcmp(o, "--seed") == 0) {
    VAL();
    if (!cli_parse_u64(v, &u)) return bad(cmd, o, v, "expected a non-negative integer");
    c->seed = u;
  } else if (strcmp(o, "--cache-rows") == 0) {
    VAL();
    if (!cli_parse_u64(v, &u) || u > INT64_MAX) return bad(cmd, o, v, "expected a row count");
    c->cache_rows = (int64_t)u;
  } else if (strcmp(o, "--cache-fill") == 0) {
    VAL();
    if (strcmp(v, "first") == 0) c->cache_fill = HS_CACHE_FILL_FIRST;
    else if (strcmp(v, "degree") == 0) c->cache_fill = HS_CACHE_FILL_DEGREE;
    else if (strcmp(v, "presample") == 0) c->cache_fill = HS_CACHE_FILL_PRESAMPLE;
    else return bad(cmd, o, v, "expected first, degree or presample");
  } else if (strcmp(o, "--transfer") == 0) {
    VAL();
    int t = HS_TRANSFER_DEVICE;
    while (t >= 0 && strcmp(v, hs_transfer_name((hs_transfer)t)) != 0) t--;
    if (t < 0) return bad(cmd, o, v, "expected auto, host or device");
    c->transfer = (hs_transfer)t;
  } else if (strcmp(o, "--feature-pages") == 0) {
    VAL();
    int p = HS_FEATURE_PAGES_HUGE;
    while (p >= 0 && strcmp(v, hs_feature_pages_name((hs_feature_pages)p)) != 0) p--;
    if (p < 0) return bad(cmd, o, v, "expected auto, file or huge");
    c->feature_pages = (hs_feature_pages)p;
  } else if (strcmp(o, "--gemm-threads") == 0) {
    VAL();
    if (!cli_parse_u64(v, &u) || u < 1 || u > 4096) return bad(cmd, o, v, "expected 1..4096");
    c->gemm_threads = (int)u;
  } else if (strcmp(o, "--memory-budget") == 0) {
    VAL();
    if (!cli_parse_size(v, &u) || u == 0) return bad(cmd, o, v, "expected a size such as 512M");
    c->memory_budget = u;
  } else {
    return 0;
  }
#undef VAL
  return 1;
}

int cli_session_open(const char *cmd, cli_session_args *a, hs_runtime **rt, hs_dataset **ds,
                     hs_session **s) {
  *rt = NULL;
  *ds = NULL;
  *s = NULL;
  /* One threshold stands for every layer. */
  if (a->thresholds_set == 1)
    for (int l = 1; l < HS_MAX_LAYERS; l++) a->cfg.thresholds[l] = a->cfg.thresholds[0];
  else if (a->thresholds_set > 1 && a->thresholds_set != a->cfg.n_layers)
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
    if ((st = hs_dataset_bundled(*rt, "cora", bundled, sizeof bundled)) != HS_OK) {
      cli_report(cmd, "preparing the bundled Cora", st);
      cli_session_close(*rt, NULL, NULL);
      *rt = NULL;
      return 1;
    }
    path = bundled;
  }
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
