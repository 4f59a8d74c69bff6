/* hetsage train|eval|predict --task ctr: click-through-rate models on
 * Criteo-layout files, their embedding tables on the host. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "cli_ctr.h"
#include "cli_dist.h"

#define MAX_FILES 64

static volatile sig_atomic_t interrupted;

static void on_sigint(int sig) {
  (void)sig;
  interrupted = 1;
}

/* Files of a split: given one by one, or found in a generated dataset
 * folder (<split>.txt or <split>.txt.gz). */
typedef struct file_list {
  const char *path[MAX_FILES];
  char *owned[MAX_FILES];
  int n;
} file_list;

static void files_free(file_list *f) {
  for (int i = 0; i < MAX_FILES; i++) free(f->owned[i]);
  memset(f, 0, sizeof *f);
}

static bool is_dir(const char *p) {
  struct stat st;
  return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

/* (cli_ctr.h) */
char *cli_ctr_split_file(const char *dir, const char *name, bool arrays) {
  const char *ext[3] = {".txt", ".txt.gz", "_ids.npy"};
  for (int k = 0; k < (arrays ? 3 : 2); k++) {
    size_t n = strlen(dir) + strlen(name) + 16;
    char *p = malloc(n);
    if (!p) return NULL;
    snprintf(p, n, "%s/%s%s", dir, name, ext[k]);
    if (access(p, R_OK) == 0) return p;
    free(p);
  }
  return NULL;
}

static bool files_add(file_list *f, const char *p, bool own) {
  if (f->n == MAX_FILES) return false;
  if (own) f->owned[f->n] = (char *)p;
  f->path[f->n++] = p;
  return true;
}

/* files_add of a file of ours (NULL: none), freed when it does not fit. */
static bool files_add_owned(file_list *f, char *p) {
  if (!p) return true;
  if (files_add(f, p, true)) return true;
  free(p);
  return false;
}

/* The Bayes AUC a generated dataset recorded in its meta.json, NaN if
 * none. */
static double recorded_bayes(const char *dir) {
  if (!dir) return NAN;
  char p[4200];
  snprintf(p, sizeof p, "%s/meta.json", dir);
  FILE *f = cli_fopen_regular(p);
  if (!f) return NAN;
  char buf[16384];
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = '\0';
  const char *k = strstr(buf, "\"bayes_auc\":");
  return k ? strtod(k + 12, NULL) : NAN;
}

typedef struct ctr_args {
  hs_ctr_config cfg;
  file_list train, valid, test;
  /* eval and predict: every --data in order, a folder by its test file
   * (its train file where it has none); borrowed from train and test */
  file_list eval;
  const char *data_dir; /* a generated dataset folder, if one was given */
  int n_dirs;           /* --data folders given */
  bool given_valid, given_test; /* --valid, --test given */
  const char *given_pipe;       /* --pipeline, --depth or --host-nice given (training only) */
  const char *ckpt;     /* train: folder; eval/predict: file or folder */
  const char *stats_path, *log_path, *output;
  int64_t epochs;
  bool resume, force, json, quiet, labelled;
  unsigned set; /* CTR_SET_* bits: the recorded options given on the command line */
} ctr_args;

/* Options a CTR checkpoint records (hs_ctr_config_from_checkpoint): a
 * resumed run takes them from it and refuses one given that differs. */
enum {
  CTR_SET_MODEL = 1u << 0,
  CTR_SET_DIM = 1u << 1,
  CTR_SET_HIDDEN = 1u << 2,
  CTR_SET_BOTTOM = 1u << 3,
  CTR_SET_LR = 1u << 4,
  CTR_SET_SPARSE_OPTIMIZER = 1u << 5,
  CTR_SET_SPARSE_LR = 1u << 6,
  CTR_SET_INIT_RANGE = 1u << 7,
  CTR_SET_ADMIT_AFTER = 1u << 8,
  CTR_SET_SEED = 1u << 9,
  CTR_SET_BATCH = 1u << 10,
  CTR_SET_INITIAL_ACC = 1u << 11,
  CTR_SET_EXPIRE_AFTER = 1u << 12,
  CTR_SET_EMBED_BUDGET = 1u << 13,
  CTR_SET_GEMM_THREADS = 1u << 14,
  CTR_SET_STANDARDIZE = 1u << 15,
};

static bool parse_widths(const char *v, int32_t *w, int *n) {
  int k = 0;
  const char *p = v;
  while (*p) {
    char *end;
    long x = strtol(p, &end, 10);
    if (end == p || x < 1 || x > 65536 || k == HS_CTR_MAX_HIDDEN) return false;
    w[k++] = (int32_t)x;
    if (*end == ',') end++;
    else if (*end) return false;
    p = end;
  }
  *n = k;
  return true;
}

/* Consume one option shared by train, eval and predict. 1: consumed, 0:
 * not ours, -1: bad value (reported). */
static int common_arg(const char *cmd, ctr_args *a, int argc, char **argv, int *i) {
  const char *o = argv[*i];
  bool has = *i + 1 < argc;
  const char *v = has ? argv[*i + 1] : NULL;
  uint64_t u;
  int64_t x;
  if (strcmp(o, "--task") == 0 && has) {
    if (strcmp(v, "ctr") != 0) {
      cli_usage_error(cmd, "--task '%s': this is the ctr task", v);
      return -1;
    }
  } else if (strcmp(o, "--data") == 0 && has) {
    if (is_dir(v)) {
      a->data_dir = v;
      char *tr = cli_ctr_split_file(v, "train", true), *va = cli_ctr_split_file(v, "valid", true),
           *te = cli_ctr_split_file(v, "test", true);
      if (!tr && !te) {
        free(va);
        cli_usage_error(cmd, "--data %s: a folder without train.txt or test.txt (or their "
                        "array sets, train_ids.npy or test_ids.npy)", v);
        return -1;
      }
      a->n_dirs++;
      const char *own = te ? te : tr;
      bool fits = files_add_owned(&a->train, tr);
      fits = files_add_owned(&a->valid, va) && fits;
      fits = files_add_owned(&a->test, te) && fits;
      if (!fits || !files_add(&a->eval, own, false)) {
        cli_usage_error(cmd, "--data %s: more than %d files of a split", v, MAX_FILES);
        return -1;
      }
    } else if (!files_add(&a->train, v, false) || !files_add(&a->eval, v, false)) {
      cli_usage_error(cmd, "more than %d --data files", MAX_FILES);
      return -1;
    }
  } else if (strcmp(o, "--valid") == 0 && has) {
    a->given_valid = true;
    if (!files_add(&a->valid, v, false)) {
      cli_usage_error(cmd, "more than %d --valid files", MAX_FILES);
      return -1;
    }
  } else if (strcmp(o, "--test") == 0 && has) {
    a->given_test = true;
    if (!files_add(&a->test, v, false)) {
      cli_usage_error(cmd, "more than %d --test files", MAX_FILES);
      return -1;
    }
  } else if (strcmp(o, "--batch-size") == 0 && has) {
    if (!cli_parse_i64(v, &x) || x < 1 || x > (1 << 20))
      {
      cli_usage_error(cmd, "--batch-size '%s': expected 1..1048576", v);
      return -1;
    }
    a->cfg.batch_size = (int32_t)x;
    a->set |= CTR_SET_BATCH;
  } else if (strcmp(o, "--threads") == 0 && has) {
    if (!cli_parse_i64(v, &x) || x < 1 || x > 256)
      {
      cli_usage_error(cmd, "--threads '%s': expected 1..256", v);
      return -1;
    }
    a->cfg.threads = (int)x;
  } else if (strcmp(o, "--gemm-threads") == 0 && has) {
    if (!cli_parse_i64(v, &x) || x < 1 || x > 256) {
      cli_usage_error(cmd, "--gemm-threads '%s': expected 1..256", v);
      return -1;
    }
    a->cfg.gemm_threads = (int)x;
    a->set |= CTR_SET_GEMM_THREADS;
  } else if (strcmp(o, "--pipeline") == 0 && has) {
    a->given_pipe = o;
    if (strcmp(v, "off") == 0) a->cfg.pipeline = HS_PIPELINE_OFF;
    else if (strcmp(v, "threads") == 0) a->cfg.pipeline = HS_PIPELINE_THREADS;
    else if (strcmp(v, "async") == 0) a->cfg.pipeline = HS_PIPELINE_ASYNC;
    else {
      cli_usage_error(cmd, "--pipeline '%s': expected off, threads or async", v);
      return -1;
    }
  } else if (strcmp(o, "--depth") == 0 && has) {
    a->given_pipe = o;
    if (!cli_parse_i64(v, &x) || x < 1 || x > 16)
      {
      cli_usage_error(cmd, "--depth '%s': expected 1..16", v);
      return -1;
    }
    a->cfg.depth = (int)x;
  } else if (strcmp(o, "--host-nice") == 0 && has) {
    a->given_pipe = o;
    if (!cli_parse_i64(v, &x) || x < 0 || x > 19) {
      cli_usage_error(cmd, "--host-nice '%s': expected 0..19", v);
      return -1;
    }
    a->cfg.host_nice = (int)x;
  } else if (strcmp(o, "--board") == 0 && has) {
    a->cfg.board = v;
  } else if (strcmp(o, "--trainer") == 0 && has) {
    a->cfg.trainer = v;
  } else if (strcmp(o, "--embed-budget") == 0 && has) {
    if (!cli_parse_size(v, &u)) {
      cli_usage_error(cmd, "--embed-budget '%s': expected a size such as 512M", v);
      return -1;
    }
    a->cfg.embed_budget = u;
    a->set |= CTR_SET_EMBED_BUDGET;
  } else if (strcmp(o, "--json") == 0) {
    a->json = true;
    return 1;
  } else if (strcmp(o, "-q") == 0 || strcmp(o, "--quiet") == 0) {
    a->quiet = true;
    return 1;
  } else {
    return 0;
  }
  (*i)++;
  return 1;
}

/* The data options and the ones common_arg takes; `train` false: eval's
 * and predict's (no --valid, --test). */
static void common_usage(FILE *f, bool train, bool json) {
  if (train)
    fprintf(f,
            "data:\n"
            "  --data FILE|DIR      Criteo-layout files (plain or .gz) or array sets (any of\n"
            "                       NAME_label.npy, NAME_dense.npy, NAME_ids.npy names its\n"
            "                       set: 'convert --from criteo'), repeatable, or a folder\n"
            "                       from 'generate --kind ctr' or 'convert --from criteo'\n"
            "                       (its train, valid and test files or sets)\n"
            "  --valid FILE         --test FILE   (repeatable, up to %d each)\n",
            MAX_FILES);
  else
    fprintf(f,
            "data:\n"
            "  --data FILE|DIR      Criteo-layout files (plain or .gz) or array sets (any of\n"
            "                       NAME_label.npy, NAME_dense.npy, NAME_ids.npy names its\n"
            "                       set), repeatable, or a folder from 'generate --kind ctr'\n"
            "                       or 'convert --from criteo' (its test file or set)\n");
  fprintf(f,
          "pipeline:\n"
          "  --batch-size N       examples per batch (default 4096)\n"
          "  --threads T          host threads for lookups and for updates\n"
          "                       (default: the host's cores)\n"
          "  --gemm-threads T     threads of the trainer's BLAS products (default: the\n"
          "                       trainer's compute units; the result is the same)\n"
          "%s"
          "  --board NAME|FILE    board profile; --trainer DEV   trainer device\n"
          "  --embed-budget SIZE  most bytes of the embedding store (e.g. 512M;\n"
          "                       default none): the least recently used rows go\n",
          train ? "  --pipeline off|threads|async   (default: threads on Linux, where\n"
                  "                       --host-nice applies; else the board's plan)\n"
                  "  --depth N            batches in flight (default 3)\n"
                  "  --host-nice N        threads driver: the read and lookup threads run N\n"
                  "                       nicer than the trainer (0..19, default 10), taking\n"
                  "                       the CPU time it leaves; the result is the same\n"
                : "");
  fprintf(f, json ? "  --json               result as JSON;  -q, --quiet   no progress\n"
                  : "  -q, --quiet          no progress\n");
}

/* `ckpt`: the checkpoint the options came from (NULL: the command line),
 * to blame for options no session takes. */
static int open_session(const char *cmd, ctr_args *a, const char *ckpt, hs_runtime **rt,
                        hs_ctr_session **s) {
  hs_status st = hs_runtime_open(rt, NULL);
  if (st != HS_OK) {
    cli_report(cmd, "opening the runtime", st);
    return 1;
  }
  if ((st = hs_ctr_session_create(*rt, &a->cfg, s)) != HS_OK) {
    if (ckpt && st == HS_ERR_INVALID_ARG)
      fprintf(stderr, "hetsage %s: %s: not a valid CTR checkpoint (its header is corrupt: %s)\n",
              cmd, ckpt, hs_last_error());
    else
      cli_report(cmd, "creating the CTR session", st);
    hs_runtime_close(*rt);
    return st == HS_ERR_INVALID_ARG && !ckpt ? 2 : 1;
  }
  return 0;
}

/* ---- train --------------------------------------------------------------------------- */

static void train_usage(FILE *f) {
  fprintf(f,
          "usage: hetsage train --task ctr --data FILE|DIR [options]\n"
          "\n"
          "Train a click-through-rate model: batches of Criteo-layout examples are\n"
          "read, their categorical ids looked up in embedding tables on the host\n"
          "(rows created on first use), the trainer device runs the dense part, and\n"
          "the rows' gradients are applied on the host while the next batch is\n"
          "looked up. Reports AUC and logloss on the validation and test files (and\n"
          "the Bayes AUC a generated dataset recorded).\n"
          "\n"
          "model:\n"
          "  --model lr|deepfm|dlrm   (default deepfm)\n"
          "  --dim D              embedding width (default 16)\n"
          "  --hidden W,W,..      DeepFM's deep part / DLRM's top MLP (default 256,128)\n"
          "  --bottom W,..        DLRM's bottom MLP before its D outputs (default 64)\n"
          "  --lr X               dense parameters, Adam (default 0.001)\n"
          "  --sparse-optimizer adagrad|sgd|adam|ftrl|elementwise-adagrad\n"
          "                       embedding rows (default adagrad: one accumulator per row;\n"
          "                       elementwise-adagrad: one per coordinate, D floats per row)\n"
          "  --sparse-lr X        (default 0.05)\n"
          "  --sparse-init-acc A  Adagrad's accumulator(s) of a new row (default 0)\n"
          "  --init-range R       new rows draw U(-R, R) (default 0.05)\n"
          "  --admit-after K      create a row once its id was seen K times (default 1)\n"
          "  --expire-after N     drop rows unused for max(N, 3) batches (default never)\n"
          "  --standardize-dense  the 13 integers (log1p) enter standardized by the\n"
          "                       mean and sd of the first batch (kept in checkpoints);\n"
          "                       keeps ReLUs of DLRM's bottom MLP from starting off\n"
          "                       for every example (default: log1p(x) as it is)\n"
          "  --seed S             (default 1)\n"
          "training:\n"
          "  --epochs N           passes over the training files (default 1)\n"
          "  --checkpoint DIR     DIR/last.ckpt after each epoch, DIR/best.ckpt on a\n"
          "                       better validation AUC; Ctrl-C saves DIR/last.ckpt\n"
          "  --resume             continue from DIR/last.ckpt: the options it records\n"
          "                       (model, widths, rates, optimizers, seed, admission,\n"
          "                       batch, expiry, budget, standardization) come from\n"
          "                       it; one given that differs is refused\n"
          "                       (--gemm-threads may)\n"
          "  --force              train afresh into a --checkpoint DIR that holds the\n"
          "                       checkpoints of an earlier run (its best.ckpt,\n"
          "                       best.json and last.ckpt are removed at the start)\n"
          "  --stats-json F       one JSON object per epoch: stage times, rates,\n"
          "                       bytes, the store's rows and memory\n"
          "  --log-json F         one JSON object per epoch: loss, validation AUC\n"
          "                       (epochs from 1 in both, as printed)\n"
          "                       (JSON outputs write null for a figure that is not a\n"
          "                       finite number, e.g. AUC without validation files)\n"
          "distributed (mpiexec -n N hetsage train --task ctr --distributed ...):\n"
          "  --distributed        one rank of an MPI job: the embedding tables shard over\n"
          "                       the ranks by id hash (each rank serves its shard's\n"
          "                       rows); in each step rank r trains on the r-th of N\n"
          "                       consecutive batches, its rows' gradients summed at\n"
          "                       their owners in rank order, the dense gradients\n"
          "                       all-reduced; the same bits for a given N and seed;\n"
          "                       rank 0 prints. Every rank needs the same files.\n"
          "                       Not with --checkpoint.\n"
          "  --sync allreduce     how dense gradients combine (the only mode for CTR)\n"
          "  --bucket-kb N        all-reduce bucket size (default 1024)\n"
          "  --dist-timeout S     a rank silent this long during training is named and\n"
          "                       the run ends (default 60)\n"
          "  --dist-start-timeout S  the same at start-up (default 900)\n");
  common_usage(f, true, true);
  fprintf(f, "\nExit status: 0 done, 1 failure, 2 bad usage, 130 interrupted (a\n"
             "checkpoint was saved).\n");
}

static void on_progress(void *user, int64_t examples, double loss) {
  (void)user;
  if (!isatty(2)) return;
  fprintf(stderr, "\r\033[K%lld examples  loss %.4f", (long long)examples, loss);
  fflush(stderr);
}

/* JSON member `key` (after a comma): null where x is not finite. */
static void jnum(FILE *f, const char *key, double x, int digits) {
  fprintf(f, ", \"%s\": ", key);
  cli_json_number(f, x, digits);
}

static void write_stats(FILE *f, const hs_ctr_epoch_stats *st) {
  fprintf(f, "{\"epoch\": %lld, \"examples\": %lld, \"batches\": %lld", (long long)st->epoch + 1,
          (long long)st->examples, (long long)st->batches);
  jnum(f, "loss", st->loss, 6);
  jnum(f, "wall_s", st->wall_s, 4);
  jnum(f, "examples_per_s", st->examples_per_s, 1);
  fprintf(f, ", \"pipeline\": \"%s\", \"depth\": %d, \"stages\": {",
          hs_pipeline_mode_name(st->pipeline), st->depth);
  for (int i = 0; i < HS_CTR_STAGE_COUNT_; i++) {
    fprintf(f, "%s\"%s\": {\"busy_s\": ", i ? ", " : "", hs_ctr_stage_name((hs_ctr_stage)i));
    cli_json_number(f, st->stage_busy_s[i], 4);
    jnum(f, "wait_s", st->stage_wait_s[i], 4);
    fputc('}', f);
  }
  fputc('}', f);
  jnum(f, "lookup_s", st->lookup_s, 4);
  jnum(f, "update_s", st->update_s, 4);
  fprintf(f, ", \"unique_rows\": %llu, "
             "\"deferred_rows\": %llu, \"bytes_uploaded\": %llu, \"bytes_to_host\": %llu, "
             "\"embed_rows\": %llu, \"embed_bytes\": %llu, \"embed_row_bytes\": %llu, "
             "\"embed_created\": %llu, \"embed_evicted\": %llu, \"embed_expired\": %llu, "
             "\"embed_pending\": %llu, \"peak_rss_bytes\": %llu, \"interrupted\": %s}\n",
          (unsigned long long)st->unique_rows,
          (unsigned long long)st->deferred_rows, (unsigned long long)st->bytes_uploaded,
          (unsigned long long)st->bytes_to_host, (unsigned long long)st->embed_rows,
          (unsigned long long)st->embed_bytes, (unsigned long long)st->embed_row_bytes,
          (unsigned long long)st->embed_created, (unsigned long long)st->embed_evicted,
          (unsigned long long)st->embed_expired, (unsigned long long)st->embed_pending,
          (unsigned long long)st->peak_rss_bytes, st->interrupted ? "true" : "false");
}

/* The value of recorded option `bit` in `c`, as text, for comparison and
 * messages. */
static void ctr_opt_text(const hs_ctr_config *c, unsigned bit, char *buf, size_t len) {
  const int32_t *w = NULL;
  int n = 0;
  buf[0] = '\0';
  switch (bit) {
    case CTR_SET_MODEL: snprintf(buf, len, "%s", hs_ctr_model_name(c->model)); return;
    case CTR_SET_DIM: snprintf(buf, len, "%d", (int)c->dim); return;
    case CTR_SET_HIDDEN: w = c->hidden, n = c->n_hidden; break;
    case CTR_SET_BOTTOM: w = c->bottom, n = c->n_bottom; break;
    case CTR_SET_LR: snprintf(buf, len, "%g", (double)c->lr); return;
    case CTR_SET_SPARSE_OPTIMIZER:
      snprintf(buf, len, "%s", hs_sparse_optimizer_name(c->sparse_optimizer));
      return;
    case CTR_SET_SPARSE_LR: snprintf(buf, len, "%g", (double)c->sparse_lr); return;
    case CTR_SET_INIT_RANGE: snprintf(buf, len, "%g", (double)c->init_range); return;
    case CTR_SET_ADMIT_AFTER: snprintf(buf, len, "%u", (unsigned)c->admit_after); return;
    case CTR_SET_SEED: snprintf(buf, len, "%llu", (unsigned long long)c->seed); return;
    case CTR_SET_BATCH: snprintf(buf, len, "%d", (int)c->batch_size); return;
    case CTR_SET_INITIAL_ACC:
      snprintf(buf, len, "%g", (double)c->sparse_initial_accumulator);
      return;
    case CTR_SET_EXPIRE_AFTER: snprintf(buf, len, "%u", (unsigned)c->expire_after); return;
    case CTR_SET_EMBED_BUDGET:
      snprintf(buf, len, "%llu bytes", (unsigned long long)c->embed_budget);
      return;
    case CTR_SET_GEMM_THREADS: snprintf(buf, len, "%d", c->gemm_threads); return;
    case CTR_SET_STANDARDIZE: snprintf(buf, len, "%s", c->standardize_dense ? "on" : "off"); return;
    default: return;
  }
  size_t at = 0;
  for (int i = 0; i < n && at < len; i++)
    at += (size_t)snprintf(buf + at, len - at, i ? ",%d" : "%d", (int)w[i]);
}

/* A decimal option to 9 significant digits (enough to tell floats apart). */
static void ctr_opt_text9(const hs_ctr_config *c, unsigned bit, char *buf, size_t len) {
  float v = bit == CTR_SET_LR ? c->lr : bit == CTR_SET_SPARSE_LR ? c->sparse_lr
            : bit == CTR_SET_INIT_RANGE ? c->init_range : c->sparse_initial_accumulator;
  snprintf(buf, len, "%.9g", (double)v);
}

/* Whether recorded option `bit` has the same value in both: the values
 * the run uses (floats as stored, exactly; admission 0 and 1 alike, both
 * admitting an id at its first sight). */
static bool ctr_opt_same(const hs_ctr_config *a, const hs_ctr_config *b, unsigned bit) {
  switch (bit) {
    case CTR_SET_LR: return a->lr == b->lr;
    case CTR_SET_SPARSE_LR: return a->sparse_lr == b->sparse_lr;
    case CTR_SET_INIT_RANGE: return a->init_range == b->init_range;
    case CTR_SET_INITIAL_ACC: return a->sparse_initial_accumulator == b->sparse_initial_accumulator;
    case CTR_SET_ADMIT_AFTER:
      return (a->admit_after > 1 ? a->admit_after : 1) == (b->admit_after > 1 ? b->admit_after : 1);
    default: {
      char x[160], y[160];
      ctr_opt_text(a, bit, x, sizeof x);
      ctr_opt_text(b, bit, y, sizeof y);
      return strcmp(x, y) == 0;
    }
  }
}

/* --resume: the options the checkpoint records replace the defaults; one
 * given on the command line that differs is refused, naming it (2). */
static int resume_config(const char *cmd, ctr_args *a, const char *path) {
  static const struct {
    unsigned bit;
    const char *name;
  } opts[] = {
      {CTR_SET_MODEL, "--model"},   {CTR_SET_DIM, "--dim"},
      {CTR_SET_HIDDEN, "--hidden"}, {CTR_SET_BOTTOM, "--bottom"},
      {CTR_SET_LR, "--lr"},         {CTR_SET_SPARSE_OPTIMIZER, "--sparse-optimizer"},
      {CTR_SET_SPARSE_LR, "--sparse-lr"}, {CTR_SET_INIT_RANGE, "--init-range"},
      {CTR_SET_ADMIT_AFTER, "--admit-after"}, {CTR_SET_SEED, "--seed"},
      {CTR_SET_BATCH, "--batch-size"}, {CTR_SET_INITIAL_ACC, "--sparse-init-acc"},
      {CTR_SET_EXPIRE_AFTER, "--expire-after"}, {CTR_SET_EMBED_BUDGET, "--embed-budget"},
      {CTR_SET_STANDARDIZE, "--standardize-dense"},
  };
  hs_ctr_config ck = a->cfg;
  hs_status st = hs_ctr_config_from_checkpoint(path, &ck);
  if (st != HS_OK) {
    cli_report(cmd, path, st);
    return 1;
  }
  for (size_t i = 0; i < sizeof opts / sizeof opts[0]; i++) {
    if (!(a->set & opts[i].bit) || ctr_opt_same(&a->cfg, &ck, opts[i].bit)) continue;
    char mine[160], theirs[160];
    ctr_opt_text(&a->cfg, opts[i].bit, mine, sizeof mine);
    ctr_opt_text(&ck, opts[i].bit, theirs, sizeof theirs);
    if (strcmp(mine, theirs) == 0) { /* apart beyond %g's 6 digits */
      ctr_opt_text9(&a->cfg, opts[i].bit, mine, sizeof mine);
      ctr_opt_text9(&ck, opts[i].bit, theirs, sizeof theirs);
    }
    return cli_usage_error(cmd, "%s %s conflicts with the checkpoint %s, whose run used %s: "
                             "--resume continues that run with its options (leave %s out)",
                             opts[i].name, mine, path, theirs, opts[i].name);
  }
  /* The products' bits do not depend on their thread count (the trainer
   * cuts them by shape): a resumed run may take another. */
  if (a->set & CTR_SET_GEMM_THREADS) ck.gemm_threads = a->cfg.gemm_threads;
  a->cfg = ck;
  return 0;
}

/* Every file of a split opened and its first line read before any work,
 * so that a missing, unreadable or malformed --valid or --test file is said
 * now, not after an epoch. A plain file's first line must have the 40
 * columns of labelled Criteo layout; an array set its three headers; a
 * gzip file (by its magic, as the reader tells them apart, whatever its
 * name) is left to the reader. 0 or 1. */
static int check_files(const char *cmd, const file_list *f, const char *opt) {
  for (int i = 0; i < f->n; i++) {
    const char *p = f->path[i];
    if (hs_ctr_is_arrays(p)) { /* an array set: its headers */
      if (hs_ctr_check_arrays(p, true) == HS_OK) continue;
      fprintf(stderr, "hetsage %s: %s %s\n", cmd, opt, hs_last_error());
      return 1;
    }
    FILE *fp = cli_fopen_regular(p);
    if (!fp) {
      fprintf(stderr, "hetsage %s: %s %s: %s\n", cmd, opt, p,
              errno == EINVAL ? "not a regular file" : strerror(errno));
      return 1;
    }
    char line[8192];
    size_t n = fread(line, 1, sizeof line - 1, fp);
    bool err = ferror(fp) != 0;
    int e = errno;
    fclose(fp);
    if (err) {
      fprintf(stderr, "hetsage %s: %s %s: cannot read: %s\n", cmd, opt, p, strerror(e));
      return 1;
    }
    line[n] = '\0';
    /* gzip (by its magic, whatever the name, as the reader decides): its
     * lines are the reader's to check. */
    if (n >= 2 && (unsigned char)line[0] == 0x1f && (unsigned char)line[1] == 0x8b) continue;
    if (n == 0) continue; /* an empty file: no examples */
    char *nl = memchr(line, '\n', n);
    if (!nl && n == sizeof line - 1) continue; /* a long line: the reader says */
    size_t end = nl ? (size_t)(nl - line) : n;
    if (end && line[end - 1] == '\r') end--;
    int cols = 1;
    for (size_t k = 0; k < end; k++) cols += line[k] == '\t';
    if (end == 0 || (line[0] != '0' && line[0] != '1') || (end > 1 && line[1] != '\t') ||
        cols != 40) {
      fprintf(stderr, "hetsage %s: %s %s:1: not labelled Criteo-layout text (%d columns, "
              "expected 40: a label 0 or 1, 13 integers, 26 hexadecimal ids)\n", cmd, opt, p,
              end ? cols : 0);
      return 1;
    }
  }
  return 0;
}

/* A JSON-lines output opened at its first record: a run that fails before
 * one leaves an existing file as it was. NULL (said) if it cannot be. */
static FILE *lines_file(const char *cmd, FILE **f, const char *path) {
  if (!*f && !(*f = fopen(path, "w")))
    fprintf(stderr, "hetsage %s: cannot write %s: %s\n", cmd, path, strerror(errno));
  return *f;
}

/* An empty file at `path` (a marker); false (said) if it cannot be made. */
static bool touch_file(const char *cmd, const char *path) {
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0 || close(fd) != 0) {
    fprintf(stderr, "hetsage %s: cannot write %s: %s\n", cmd, path, strerror(errno));
    return false;
  }
  return true;
}

/* Evaluation of the model after a finished epoch: a Ctrl-C that came
 * before it starts stops it too (the session's evaluation watches only a
 * flag raised while it runs, so that a program may evaluate the model of
 * an epoch it stopped). */
static hs_status evaluate_after_epoch(hs_ctr_session *s, const file_list *f, hs_ctr_eval *e) {
  return interrupted ? HS_ERR_INTERRUPTED : hs_ctr_session_evaluate(s, f->path, f->n, e);
}

/* Validation of epoch `epoch` (0-based) of the model `s` holds (none
 * without --valid: its figures NaN): its line
 * (`es`: the epoch's figures; NULL for an epoch trained by an earlier run),
 * its --log-json record, and best.ckpt and best.json when better than
 * *best_auc. 0, 1 (said) or 130 (stopped: said). */
static int validate_epoch(const char *cmd, const ctr_args *a, hs_ctr_session *s, int64_t epoch,
                          const hs_ctr_epoch_stats *es, const char *best, double *best_auc,
                          FILE **log_f, hs_ctr_eval *ve) {
  hs_status st = a->valid.n ? evaluate_after_epoch(s, &a->valid, ve) : HS_OK;
  if (st == HS_ERR_INTERRUPTED) {
    if (!a->quiet) fputc('\n', stderr);
    fprintf(stderr, "hetsage train: interrupted during the validation after epoch %lld%s%s%s\n",
            (long long)epoch + 1, a->ckpt ? "; saved " : "", a->ckpt ? a->ckpt : "",
            a->ckpt ? "/last.ckpt, which --resume validates first" : "");
    return 130;
  }
  if (st != HS_OK) {
    cli_report(cmd, "validation", st);
    return 1;
  }
  if (!a->quiet && es)
    fprintf(stderr, "\r\033[Kepoch %lld: %lld examples, loss %.4f, %.0f examples/s; valid AUC %.4f, "
            "logloss %.4f; %llu rows (%.1f MB)\n", (long long)epoch + 1,
            (long long)es->examples, es->loss, es->examples_per_s, ve->auc, ve->logloss,
            (unsigned long long)es->embed_rows, (double)es->embed_bytes / 1e6);
  else if (!a->quiet)
    fprintf(stderr, "epoch %lld (trained before the resume): valid AUC %.4f, logloss %.4f\n",
            (long long)epoch + 1, ve->auc, ve->logloss);
  if (a->log_path) {
    if (!lines_file(cmd, log_f, a->log_path)) return 1;
    fprintf(*log_f, "{\"epoch\": %lld", (long long)epoch + 1);
    jnum(*log_f, "loss", es ? es->loss : NAN, 6);
    jnum(*log_f, "valid_auc", ve->auc, 6);
    jnum(*log_f, "valid_logloss", ve->logloss, 6);
    fputs("}\n", *log_f);
    if (!cli_file_check(cmd, *log_f, a->log_path)) {
      fclose(*log_f); /* said once */
      *log_f = NULL;
      return 1;
    }
  }
  if (a->ckpt && ve->auc > *best_auc) {
    if ((st = hs_ctr_session_save(s, best)) != HS_OK) {
      cli_report(cmd, best, st);
      return 1;
    }
    if (!cli_best_write(cmd, a->ckpt, "valid_auc", ve->auc, epoch)) return 1;
  }
  if (ve->auc > *best_auc) *best_auc = ve->auc;
  return 0;
}

/* Ctrl-C and SIGTERM stop the session's epoch, evaluation or prediction
 * between batches (an evaluation or prediction with HS_ERR_INTERRUPTED, so
 * that --output's temporary is removed). */
static void catch_stop(hs_ctr_session *s) {
  hs_ctr_session_set_stop_flag(s, &interrupted);
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_sigint;
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
}

static int train_ctr(int argc, char **argv, hs_world **world);

int cmd_train_ctr(int argc, char **argv) {
  hs_world *world = NULL;
  int rc = train_ctr(argc, argv, &world);
  /* A rank that fails leaves the others waiting for it: end them all. */
  if (rc != 0 && rc != 130) cli_dist_fail(world);
  hs_world_destroy(world);
  return rc;
}

static int train_ctr(int argc, char **argv, hs_world **world) {
  const char *cmd = "train";
  ctr_args a;
  memset(&a, 0, sizeof a);
  hs_ctr_config_init(&a.cfg);
  a.epochs = 1;
  bool made_dir = false; /* --checkpoint DIR created here: removed if it stays empty */
  cli_dist_args da;
  cli_dist_args_init(&da);
  for (int i = 1; i < argc; i++) {
    const char *o = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    int r = common_arg(cmd, &a, argc, argv, &i);
    if (r == 0) r = cli_dist_arg(cmd, &da, argc, argv, &i);
    if (r < 0) goto usage_fail;
    if (r > 0) continue;
    double d;
    int64_t x;
    if (!strcmp(o, "-h") || !strcmp(o, "--help")) {
      train_usage(stdout);
      files_free(&a.train), files_free(&a.valid), files_free(&a.test);
      return 0;
    } else if (!strcmp(o, "--model") && v) {
      if (hs_ctr_model_parse(v, &a.cfg.model) != HS_OK) {
        cli_usage_error(cmd, "--model '%s': expected lr, deepfm or dlrm", v);
        goto usage_fail;
      }
      a.set |= CTR_SET_MODEL;
    } else if (!strcmp(o, "--dim") && v) {
      if (!cli_parse_i64(v, &x) || x < 1 || x > 1024) {
        cli_usage_error(cmd, "--dim '%s': expected 1..1024", v);
        goto usage_fail;
      }
      a.cfg.dim = (int32_t)x;
      a.set |= CTR_SET_DIM;
    } else if (!strcmp(o, "--hidden") && v) {
      if (!parse_widths(v, a.cfg.hidden, &a.cfg.n_hidden)) {
        cli_usage_error(cmd, "--hidden '%s': expected up to %d widths such as 256,128", v,
                        HS_CTR_MAX_HIDDEN);
        goto usage_fail;
      }
      a.set |= CTR_SET_HIDDEN;
    } else if (!strcmp(o, "--bottom") && v) {
      if (!parse_widths(v, a.cfg.bottom, &a.cfg.n_bottom)) {
        cli_usage_error(cmd, "--bottom '%s': expected up to %d widths such as 64", v,
                        HS_CTR_MAX_HIDDEN);
        goto usage_fail;
      }
      a.set |= CTR_SET_BOTTOM;
    } else if (!strcmp(o, "--lr") && v) {
      if (!cli_parse_double(v, &d) || !(d > 0)) {
        cli_usage_error(cmd, "--lr '%s': expected a positive number", v);
        goto usage_fail;
      }
      a.cfg.lr = (float)d;
      a.set |= CTR_SET_LR;
    } else if (!strcmp(o, "--sparse-lr") && v) {
      if (!cli_parse_double(v, &d) || !(d > 0)) {
        cli_usage_error(cmd, "--sparse-lr '%s': expected a positive number", v);
        goto usage_fail;
      }
      a.cfg.sparse_lr = (float)d;
      a.set |= CTR_SET_SPARSE_LR;
    } else if (!strcmp(o, "--sparse-init-acc") && v) {
      if (!cli_parse_double(v, &d) || !(d >= 0)) {
        cli_usage_error(cmd, "--sparse-init-acc '%s': expected a number >= 0", v);
        goto usage_fail;
      }
      a.cfg.sparse_initial_accumulator = (float)d;
      a.set |= CTR_SET_INITIAL_ACC;
    } else if (!strcmp(o, "--init-range") && v) {
      if (!cli_parse_double(v, &d) || !(d >= 0)) {
        cli_usage_error(cmd, "--init-range '%s': expected a number >= 0", v);
        goto usage_fail;
      }
      a.cfg.init_range = (float)d;
      a.set |= CTR_SET_INIT_RANGE;
    } else if (!strcmp(o, "--sparse-optimizer") && v) {
      if (hs_sparse_optimizer_parse(v, &a.cfg.sparse_optimizer) != HS_OK) {
        cli_usage_error(cmd, "--sparse-optimizer '%s': expected adagrad, sgd, adam, ftrl or "
                        "elementwise-adagrad", v);
        goto usage_fail;
      }
      a.set |= CTR_SET_SPARSE_OPTIMIZER;
    } else if (!strcmp(o, "--admit-after") && v) {
      if (!cli_parse_i64(v, &x) || x < 1 || x > 1000000) {
        cli_usage_error(cmd, "--admit-after '%s': expected 1..1000000", v);
        goto usage_fail;
      }
      a.cfg.admit_after = (uint32_t)x;
      a.set |= CTR_SET_ADMIT_AFTER;
    } else if (!strcmp(o, "--expire-after") && v) {
      if (!cli_parse_i64(v, &x) || x < 1 || x > 1000000000) {
        cli_usage_error(cmd, "--expire-after '%s': expected 1..1e9 batches", v);
        goto usage_fail;
      }
      a.cfg.expire_after = (uint32_t)x;
      a.set |= CTR_SET_EXPIRE_AFTER;
    } else if (!strcmp(o, "--seed") && v) {
      uint64_t u;
      if (!cli_parse_u64(v, &u)) {
        cli_usage_error(cmd, "--seed '%s'", v);
        goto usage_fail;
      }
      a.cfg.seed = u;
      a.set |= CTR_SET_SEED;
    } else if (!strcmp(o, "--epochs") && v) {
      if (!cli_parse_i64(v, &a.epochs) || a.epochs < 1 || a.epochs > 100000) {
        cli_usage_error(cmd, "--epochs '%s': expected 1..100000", v);
        goto usage_fail;
      }
    } else if (!strcmp(o, "--checkpoint") && v) {
      a.ckpt = v;
    } else if (!strcmp(o, "--stats-json") && v) {
      a.stats_path = v;
    } else if (!strcmp(o, "--log-json") && v) {
      a.log_path = v;
    } else if (!strcmp(o, "--resume")) {
      a.resume = true;
      continue;
    } else if (!strcmp(o, "--force")) {
      a.force = true;
      continue;
    } else if (!strcmp(o, "--standardize-dense")) {
      a.cfg.standardize_dense = 1;
      a.set |= CTR_SET_STANDARDIZE;
      continue;
    } else {
      cli_usage_error(cmd, v ? "unknown option '%s'" : "unknown option '%s' (or it needs a value)", o);
      goto usage_fail;
    }
    i++;
  }
  if (!a.train.n) {
    cli_usage_error(cmd, "--task ctr needs training files: --data FILE|DIR");
    goto usage_fail;
  }
  if (a.resume && !a.ckpt) {
    cli_usage_error(cmd, "--resume needs --checkpoint DIR");
    goto usage_fail;
  }
  if (a.force && (!a.ckpt || a.resume)) {
    cli_usage_error(cmd, a.resume ? "--force and --resume exclude each other"
                                  : "--force needs --checkpoint DIR");
    goto usage_fail;
  }
  if (da.mode_options && !da.distributed) {
    cli_usage_error(cmd, "the distributed options (--sync, --compress, ...) need --distributed");
    goto usage_fail;
  }
  if (da.distributed && (da.cfg.sync != HS_SYNC_ALLREDUCE || da.cfg.compress != HS_COMPRESS_NONE)) {
    cli_usage_error(cmd, "--sync %s%s: distributed CTR training all-reduces its dense gradients "
                    "uncompressed (--sync allreduce --compress none) only",
                    hs_sync_mode_name(da.cfg.sync),
                    da.cfg.compress != HS_COMPRESS_NONE ? " --compress 1bit" : "");
    goto usage_fail;
  }
  if (da.distributed && a.ckpt) {
    cli_usage_error(cmd, "--checkpoint is not supported with --distributed for CTR models (the "
                    "embedding tables are sharded over the ranks); train without it");
    goto usage_fail;
  }
  if (da.distributed) {
    hs_status ws = hs_world_init(&argc, &argv, world);
    if (ws != HS_OK) {
      cli_report(cmd, "joining the distributed run", ws);
      goto fail;
    }
    a.cfg.world = *world;
    a.cfg.dist = &da.cfg;
  }
  /* Rank 0 prints and writes the files; the others train beside it. */
  bool root = cli_dist_root(*world);
  if (!root) {
    a.quiet = true;
    a.stats_path = a.log_path = NULL;
  }
  /* Every input and output checked before any work. */
  if (check_files(cmd, &a.train, "--data") || check_files(cmd, &a.valid, "--valid") ||
      check_files(cmd, &a.test, "--test"))
    goto fail;
  if ((a.stats_path && !cli_writable(cmd, "--stats-json", a.stats_path)) ||
      (a.log_path && !cli_writable(cmd, "--log-json", a.log_path)))
    goto fail;
  /* pending: there while an epoch saved in last.ckpt waits for its
   * validation (stopped, or failed: --resume runs it first). */
  char last[4200] = "", best[4200] = "", best_json[4200] = "", pending[4200] = "";
  if (a.ckpt) {
    if (mkdir(a.ckpt, 0755) == 0) {
      made_dir = true;
    } else if (errno != EEXIST || !is_dir(a.ckpt)) {
      fprintf(stderr, "hetsage train: --checkpoint %s: %s\n", a.ckpt,
              errno == EEXIST ? "not a folder" : strerror(errno));
      goto fail;
    }
    snprintf(last, sizeof last, "%s/last.ckpt", a.ckpt);
    snprintf(best, sizeof best, "%s/best.ckpt", a.ckpt);
    snprintf(best_json, sizeof best_json, "%s/best.json", a.ckpt);
    snprintf(pending, sizeof pending, "%s/validation.pending", a.ckpt);
    if (a.resume && access(last, R_OK) != 0) {
      fprintf(stderr, "hetsage train: --resume: no checkpoint %s: %s\n", last, strerror(errno));
      goto fail;
    }
    /* A fresh run would replace an earlier run's models, maybe better ones. */
    const char *held = access(best, F_OK) == 0 ? best : access(last, F_OK) == 0 ? last : NULL;
    if (held && !a.resume && !a.force) {
      cli_usage_error(cmd, "--checkpoint %s holds the checkpoints of an earlier run (%s): "
                      "--resume continues that run, --force replaces them", a.ckpt, held);
      goto usage_fail;
    }
    /* The run's options come from its checkpoint. */
    int r = a.resume ? resume_config(cmd, &a, last) : 0;
    if (r == 2) goto usage_fail;
    if (r != 0) goto fail;
  }
  /* (Opened at their first record.) */
  FILE *stats_f = NULL, *log_f = NULL;
  hs_runtime *rt = NULL;
  hs_ctr_session *s = NULL;
  int rc = open_session(cmd, &a, a.resume ? last : NULL, &rt, &s);
  if (rc) {
    if (made_dir) rmdir(a.ckpt);
    files_free(&a.train), files_free(&a.valid), files_free(&a.test);
    return rc;
  }
  hs_status st = HS_OK;
  if (a.resume && (st = hs_ctr_session_load(s, last)) != HS_OK) {
    cli_report(cmd, last, st);
    rc = 1;
    goto done;
  }
  /* --force: the earlier run's checkpoints go, so that none of them is
   * taken for this run's (a best.ckpt this run may never write), nor an
   * earlier epoch's validation left pending. */
  const char *const earlier[] = {best, best_json, last, pending};
  if (a.force && !cli_remove_files(cmd, "--force", earlier, 4)) {
    rc = 1;
    goto done;
  }
  if (!a.quiet) {
    char desc[4096];
    hs_ctr_session_describe(s, desc, sizeof desc);
    fprintf(stderr, "%s", desc);
    hs_ctr_session_set_progress(s, on_progress, NULL);
  }
  /* (Distributed: the launcher ends every rank on Ctrl-C; a stop would
   * need every rank's agreement, and there is no checkpoint to save.) */
  if (!*world) catch_stop(s);
  /* A resumed run's best so far is its checkpoint's (DIR/best.json). */
  double best_auc = a.resume && a.valid.n ? cli_best_read(a.ckpt, "valid_auc") : -1, train_s = 0;
  hs_ctr_epoch_stats es;
  hs_ctr_epoch_stats_init(&es);
  hs_ctr_eval ve;
  hs_ctr_eval_init(&ve);
  ve.auc = ve.logloss = NAN;
  int64_t ran = 0; /* epochs (or parts) trained by this run */
  /* Resumed after a validation that did not finish: that epoch's first. */
  if (a.resume && a.valid.n && access(pending, F_OK) == 0 && hs_ctr_session_epoch(s) > 0) {
    if ((rc = validate_epoch(cmd, &a, s, hs_ctr_session_epoch(s) - 1, NULL, best, &best_auc,
                             &log_f, &ve)) != 0)
      goto done;
    if (unlink(pending) != 0 && errno != ENOENT) {
      fprintf(stderr, "hetsage train: cannot remove %s: %s\n", pending, strerror(errno));
      rc = 1;
      goto done;
    }
  }
  while (hs_ctr_session_epoch(s) < a.epochs) {
    if ((st = hs_ctr_session_train_epoch(s, a.train.path, a.train.n, &es)) != HS_OK) {
      if (!a.quiet) fputc('\n', stderr);
      cli_report(cmd, "training", st);
      rc = 1;
      break;
    }
    ran++;
    train_s += es.wall_s;
    if (a.stats_path) {
      if (!lines_file(cmd, &stats_f, a.stats_path)) {
        rc = 1;
        break;
      }
      write_stats(stats_f, &es);
      if (!cli_file_check(cmd, stats_f, a.stats_path)) {
        fclose(stats_f); /* said once */
        stats_f = NULL;
        rc = 1;
        break;
      }
    }
    if (es.interrupted) {
      if (!a.quiet) fputc('\n', stderr);
      if (a.ckpt && (st = hs_ctr_session_save(s, last)) != HS_OK) cli_report(cmd, last, st);
      fprintf(stderr, "hetsage train: interrupted after %lld examples of epoch %lld%s%s\n",
              (long long)es.examples, (long long)es.epoch + 1, a.ckpt ? "; saved " : "",
              a.ckpt ? last : "");
      rc = 130;
      break;
    }
    /* The epoch's checkpoint before its validation, which may fail or be
     * stopped (the marker says so to --resume). */
    if (a.ckpt && a.valid.n && !touch_file(cmd, pending)) {
      rc = 1;
      break;
    }
    if (a.ckpt && (st = hs_ctr_session_save(s, last)) != HS_OK) {
      cli_report(cmd, last, st);
      rc = 1;
      break;
    }
    if ((rc = validate_epoch(cmd, &a, s, es.epoch, &es, best, &best_auc, &log_f, &ve)) != 0)
      break;
    if (a.ckpt && a.valid.n && unlink(pending) != 0) {
      fprintf(stderr, "hetsage train: cannot remove %s: %s\n", pending, strerror(errno));
      rc = 1;
      break;
    }
  }
  if (rc == 0) {
    hs_ctr_eval te;
    hs_ctr_eval_init(&te);
    te.auc = te.logloss = NAN;
    if (a.test.n && (st = evaluate_after_epoch(s, &a.test, &te)) != HS_OK) {
      if (st == HS_ERR_INTERRUPTED) {
        fprintf(stderr, "hetsage train: interrupted during the test evaluation%s%s\n",
                a.ckpt ? "; the trained model is in " : "", a.ckpt ? last : "");
        rc = 130;
      } else {
        cli_report(cmd, "test", st);
        rc = 1;
      }
      goto done;
    }
    /* The Bayes AUC a generated folder recorded is its own test file's. */
    bool own_test = a.n_dirs == 1 && !a.given_test && a.test.n == 1;
    double bayes = own_test ? recorded_bayes(a.data_dir) : NAN;
    /* No epoch run here (resumed at the end): the store as loaded. */
    if (!ran && (st = hs_ctr_session_store_stats(s, &es)) != HS_OK) {
      cli_report(cmd, "the embedding store", st);
      rc = 1;
      goto done;
    }
    if (root && a.json) {
      /* No epoch run here (resumed at the end): no rate, loss or
       * validation of this run. */
      printf("{\n  \"task\": \"ctr\",\n  \"model\": \"%s\",\n  \"epochs\": %lld",
             hs_ctr_model_name(a.cfg.model), (long long)hs_ctr_session_epoch(s));
      static const char *const keys[] = {"train_examples_per_s", "train_s", "loss",
                                         "valid_auc", "valid_logloss"};
      const double vals[] = {ran ? es.examples_per_s : NAN, ran ? train_s : NAN,
                             ran ? es.loss : NAN, ve.auc, ve.logloss};
      const int digits[] = {1, 3, 6, 6, 6};
      for (int k = 0; k < 5; k++) {
        printf(",\n  \"%s\": ", keys[k]);
        cli_json_number(stdout, vals[k], digits[k]);
      }
      printf(",\n  \"test_examples\": %lld,\n  \"test_auc\": ", (long long)te.examples);
      cli_json_number(stdout, te.auc, 6);
      printf(",\n  \"test_logloss\": ");
      cli_json_number(stdout, te.logloss, 6);
      printf(",\n");
      if (isfinite(bayes)) {
        printf("  \"bayes_auc\": %.6f,\n  \"gap_to_bayes\": ", bayes);
        cli_json_number(stdout, bayes - te.auc, 6);
        printf(",\n");
      }
      printf("  \"embed_rows\": %llu,\n  \"embed_bytes\": %llu,\n  \"embed_evicted\": %llu\n}\n",
             (unsigned long long)es.embed_rows, (unsigned long long)es.embed_bytes,
             (unsigned long long)es.embed_evicted);
    } else if (root) {
      const char *name = hs_ctr_model_name(a.cfg.model);
      if (te.examples > 0) {
        printf("%s: test AUC %.4f, logloss %.4f on %lld examples", name, te.auc, te.logloss,
               (long long)te.examples);
        if (isfinite(bayes)) printf(" (Bayes AUC %.4f, gap %.4f)", bayes, bayes - te.auc);
      } else {
        printf("%s: %s", name, a.test.n ? "no test AUC: the test files hold no examples"
                                        : "no test AUC: no --test files");
      }
      if (ran) printf("; %.0f examples/s", es.examples_per_s);
      printf("\n");
    }
  }
done:
  if (stats_f && !cli_file_close(cmd, stats_f, a.stats_path) && rc == 0) rc = 1;
  if (log_f && !cli_file_close(cmd, log_f, a.log_path) && rc == 0) rc = 1;
  hs_ctr_session_destroy(s);
  hs_runtime_close(rt);
  if (made_dir && rc != 0) rmdir(a.ckpt); /* (only while empty) */
  files_free(&a.train), files_free(&a.valid), files_free(&a.test);
  return rc;
usage_fail:
  if (made_dir) rmdir(a.ckpt);
  files_free(&a.train), files_free(&a.valid), files_free(&a.test);
  return 2;
fail:
  if (made_dir) rmdir(a.ckpt);
  files_free(&a.train), files_free(&a.valid), files_free(&a.test);
  return 1;
}

/* ---- eval and predict ---------------------------------------------------------------------- */

static const char *resolve(const char *arg, char *buf, size_t len) {
  if (is_dir(arg)) {
    snprintf(buf, len, "%s/best.ckpt", arg);
    if (access(buf, R_OK) != 0) snprintf(buf, len, "%s/last.ckpt", arg);
    return buf;
  }
  return arg;
}

/* A session with a checkpoint's model loaded. */
static int from_checkpoint(const char *cmd, ctr_args *a, hs_runtime **rt, hs_ctr_session **s) {
  char buf[4200];
  const char *path = resolve(a->ckpt, buf, sizeof buf);
  hs_ctr_config given = a->cfg;
  hs_status st = hs_ctr_config_from_checkpoint(path, &a->cfg);
  if (st != HS_OK) {
    cli_report(cmd, path, st);
    return 1;
  }
  /* Evaluating, what the command line asks for wins. */
  if (a->set & CTR_SET_BATCH) a->cfg.batch_size = given.batch_size;
  if (a->set & CTR_SET_EMBED_BUDGET) a->cfg.embed_budget = given.embed_budget;
  if (a->set & CTR_SET_GEMM_THREADS) a->cfg.gemm_threads = given.gemm_threads;
  int rc = open_session(cmd, a, path, rt, s);
  if (rc) return rc;
  if ((st = hs_ctr_session_load(*s, path)) != HS_OK) {
    cli_report(cmd, path, st);
    hs_ctr_session_destroy(*s);
    hs_runtime_close(*rt);
    return 1;
  }
  return 0;
}

static void eval_usage(FILE *f) {
  fprintf(f,
          "usage: hetsage eval --task ctr --checkpoint FILE|DIR --data FILE|DIR [options]\n"
          "\n"
          "AUC and logloss of a saved CTR model on labelled Criteo-layout files (a\n"
          "DIR checkpoint is a training --checkpoint folder: its best.ckpt, else\n"
          "last.ckpt; a DIR of data: its test file). Files given with --data are\n"
          "evaluated together, in order.\n\n");
  common_usage(f, false, true);
}

static int parse_eval_like(const char *cmd, ctr_args *a, int argc, char **argv,
                           void (*usage)(FILE *), bool predict) {
  for (int i = 1; i < argc; i++) {
    const char *o = argv[i];
    int r = common_arg(cmd, a, argc, argv, &i);
    if (r < 0) return 2;
    if (r > 0) continue;
    if (!strcmp(o, "-h") || !strcmp(o, "--help")) {
      usage(stdout);
      return -1;
    } else if (!strcmp(o, "--checkpoint") && i + 1 < argc) {
      a->ckpt = argv[++i];
    } else if (predict && !strcmp(o, "--no-label")) {
      a->labelled = false;
    } else if (predict && !strcmp(o, "--output") && i + 1 < argc) {
      a->output = argv[++i];
    } else {
      return cli_usage_error(cmd, "unknown option '%s' (or it needs a value)", o);
    }
  }
  if (a->given_valid || a->given_test)
    return cli_usage_error(cmd, "%s: a training option; give the files to %s with --data",
                           a->given_valid ? "--valid" : "--test",
                           predict ? "predict" : "evaluate");
  if (a->given_pipe)
    return cli_usage_error(cmd, "%s: a training option (%s reads one batch at a time)",
                           a->given_pipe, predict ? "predict" : "eval");
  if (predict && a->json)
    return cli_usage_error(cmd, "--json: predict --task ctr writes one probability per line "
                           "(no JSON)");
  if (!a->ckpt) return cli_usage_error(cmd, "--task ctr needs --checkpoint FILE|DIR");
  return 0;
}

int cmd_eval_ctr(int argc, char **argv) {
  const char *cmd = "eval";
  ctr_args a;
  memset(&a, 0, sizeof a);
  hs_ctr_config_init(&a.cfg);
  int rc = parse_eval_like(cmd, &a, argc, argv, eval_usage, false);
  /* A data folder is evaluated on its test file; files given are. */
  const file_list *files = &a.eval;
  if (rc == 0 && !files->n) rc = cli_usage_error(cmd, "--task ctr needs --data FILE|DIR");
  hs_runtime *rt = NULL;
  hs_ctr_session *s = NULL;
  if (rc == 0) rc = from_checkpoint(cmd, &a, &rt, &s);
  if (rc == 0) {
    catch_stop(s);
    hs_ctr_eval e;
    hs_ctr_eval_init(&e);
    hs_status st = hs_ctr_session_evaluate(s, files->path, files->n, &e);
    if (st == HS_ERR_INTERRUPTED) {
      fprintf(stderr, "hetsage eval: interrupted\n");
      rc = 130;
    } else if (st != HS_OK) {
      cli_report(cmd, "evaluation", st);
      rc = 1;
    } else if (e.examples == 0) {
      /* Nothing to measure: a mistake, not a model with no AUC. */
      fprintf(stderr, "hetsage eval: the files hold no examples (%s%s)\n", files->path[0],
              files->n > 1 ? " and the others" : "");
      rc = 1;
    } else if (a.json) {
      printf("{\"examples\": %lld", (long long)e.examples);
      jnum(stdout, "auc", e.auc, 6);
      jnum(stdout, "logloss", e.logloss, 6);
      jnum(stdout, "positive_rate", e.positive_rate, 6);
      jnum(stdout, "mean_prob", e.mean_prob, 6);
      jnum(stdout, "seconds", e.seconds, 3);
      printf("}\n");
    } else {
      if (isfinite(e.auc)) printf("AUC %.4f, ", e.auc);
      else printf("no AUC (the labels are all %d), ", e.positive_rate > 0.5 ? 1 : 0);
      printf("logloss %.4f on %lld examples (click rate %.4f, mean prediction %.4f)\n",
             e.logloss, (long long)e.examples, e.positive_rate, e.mean_prob);
    }
    hs_ctr_session_destroy(s);
    hs_runtime_close(rt);
  }
  files_free(&a.train), files_free(&a.valid), files_free(&a.test);
  return rc < 0 ? 0 : rc;
}

static void predict_usage(FILE *f) {
  fprintf(f,
          "usage: hetsage predict --task ctr --checkpoint FILE|DIR --data FILE [options]\n"
          "\n"
          "Click probabilities of every example of Criteo-layout files, one per line\n"
          "in file order.\n\n"
          "  --no-label           the files have no label column (39 columns)\n"
          "  --output F           write the probabilities to F (default stdout), atomically:\n"
          "                       the old file or the whole new one, never a partial one\n");
  common_usage(f, false, false);
}

typedef struct prob_out {
  FILE *f;
  int err; /* errno of a failed write, 0: none */
} prob_out;

static hs_status print_probs(void *user, const float *prob, const uint8_t *labels, int32_t n) {
  (void)labels;
  prob_out *o = user;
  for (int32_t i = 0; i < n; i++)
    if (fprintf(o->f, "%.6f\n", (double)prob[i]) < 0) {
      o->err = errno ? errno : EIO;
      return HS_ERR_IO;
    }
  return HS_OK;
}

/* --output F: a regular file (or a new one) is written to a temporary
 * beside it, F.tmp.XXXXXX, renamed over F when complete, so that a failed
 * run leaves no file and an existing one untouched (and the input may be
 * the output); anything else (a device, a pipe) is written directly. An
 * existing F is replaced where it lies (a symbolic link's target, the
 * link kept) and keeps its permissions. */
typedef struct out_file {
  FILE *f;
  char *tmp;    /* NULL: written directly */
  char *target; /* the file renamed over: F, or the file F links to */
} out_file;

static bool out_open(const char *cmd, out_file *o, const char *path) {
  memset(o, 0, sizeof *o);
  struct stat sb;
  bool exists = stat(path, &sb) == 0;
  if (exists && !S_ISREG(sb.st_mode)) {
    if (!(o->f = fopen(path, "w"))) goto fail;
    return true;
  }
  mode_t mask = umask(0); /* the mode a plain fopen would give a new file */
  umask(mask);
  mode_t mode = exists ? sb.st_mode & 07777 : 0666 & ~mask;
  if (!(o->target = exists ? realpath(path, NULL) : strdup(path))) goto fail;
  size_t n = strlen(o->target) + 16;
  if (!(o->tmp = malloc(n))) {
    errno = ENOMEM;
    goto fail;
  }
  snprintf(o->tmp, n, "%s.tmp.XXXXXX", o->target);
  int fd = mkstemp(o->tmp);
  if (fd < 0) goto fail;
  if (fchmod(fd, mode) != 0 || !(o->f = fdopen(fd, "w"))) {
    int e = errno;
    close(fd);
    unlink(o->tmp);
    errno = e;
    goto fail;
  }
  return true;
fail:
  fprintf(stderr, "hetsage %s: cannot write %s: %s\n", cmd, path, strerror(errno));
  free(o->tmp);
  free(o->target);
  o->tmp = o->target = NULL;
  return false;
}

/* Close; `ok`: complete, so put in place (false: the temporary removed).
 * False on any failure, said naming the path. */
static bool out_close(const char *cmd, out_file *o, const char *path, bool ok) {
  if (!o->tmp) return cli_file_close(cmd, o->f, path) && ok;
  bool done = ok;
  if (ok && (fflush(o->f) != 0 || fsync(fileno(o->f)) != 0)) {
    fprintf(stderr, "hetsage %s: cannot write %s: %s\n", cmd, path, strerror(errno));
    done = false;
  }
  if (fclose(o->f) != 0 && done) {
    fprintf(stderr, "hetsage %s: cannot write %s: %s\n", cmd, path, strerror(errno));
    done = false;
  }
  if (done && rename(o->tmp, o->target) != 0) {
    fprintf(stderr, "hetsage %s: cannot rename %s to %s: %s\n", cmd, o->tmp, o->target,
            strerror(errno));
    done = false;
  }
  if (!done) unlink(o->tmp);
  free(o->tmp);
  free(o->target);
  o->f = NULL;
  o->tmp = o->target = NULL;
  return done;
}

int cmd_predict_ctr(int argc, char **argv) {
  const char *cmd = "predict";
  ctr_args a;
  memset(&a, 0, sizeof a);
  hs_ctr_config_init(&a.cfg);
  a.labelled = true;
  int rc = parse_eval_like(cmd, &a, argc, argv, predict_usage, true);
  const file_list *files = &a.eval;
  if (rc == 0 && !files->n) rc = cli_usage_error(cmd, "--task ctr needs --data FILE");
  hs_runtime *rt = NULL;
  hs_ctr_session *s = NULL;
  /* The checkpoint first: a bad one writes nothing. */
  if (rc == 0) rc = from_checkpoint(cmd, &a, &rt, &s);
  /* Ctrl-C caught before the temporary exists, so that it never outlives
   * the run (the prediction then stops at once). */
  if (rc == 0) catch_stop(s);
  out_file out = {stdout, NULL, NULL};
  bool opened = false;
  if (rc == 0 && a.output) {
    if ((opened = out_open(cmd, &out, a.output)) == false) {
      hs_ctr_session_destroy(s);
      hs_runtime_close(rt);
      rc = 1;
    }
  }
  if (rc == 0) {
    prob_out po = {out.f, 0};
    hs_status st = hs_ctr_session_predict(s, files->path, files->n, a.labelled, print_probs, &po);
    if (st == HS_OK && fflush(out.f) != 0) po.err = errno ? errno : EIO;
    if (st == HS_ERR_INTERRUPTED) {
      fprintf(stderr, "hetsage predict: interrupted%s\n", opened ? "; nothing written" : "");
      rc = 130;
    } else if (po.err) {
      fprintf(stderr, "hetsage predict: cannot write %s: %s\n", a.output ? a.output : "the output",
              strerror(po.err));
      rc = 1;
    } else if (st != HS_OK) {
      cli_report(cmd, "prediction", st);
      rc = 1;
    }
    hs_ctr_session_destroy(s);
    hs_runtime_close(rt);
  }
  if (opened && !out_close(cmd, &out, a.output, rc == 0) && rc == 0) rc = 1;
  files_free(&a.train), files_free(&a.valid), files_free(&a.test);
  return rc < 0 ? 0 : rc;
}
