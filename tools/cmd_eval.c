/* hetsage eval / predict / embed: a saved model on a dataset. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli_ctr.h"
#include "cli_session.h"

/* A checkpoint file, or a training --checkpoint folder (its best.ckpt). */
static const char *resolve_checkpoint(const char *arg, char *buf, size_t len) {
  struct stat st;
  if (stat(arg, &st) == 0 && S_ISDIR(st.st_mode)) {
    snprintf(buf, len, "%s/best.ckpt", arg);
    return buf;
  }
  return arg;
}

/* The session takes the checkpoint's model; a --model given on the command
 * line stays, so that a checkpoint of another model is refused by name. */
static int open_from_checkpoint(const char *cmd, cli_session_args *a, const char *ckpt,
                                hs_runtime **rt, hs_dataset **ds, hs_session **s) {
  /* A click-through-rate model's checkpoint (its magic): said as one. */
  FILE *f = cli_fopen_regular(ckpt); /* (a FIFO is refused below, without blocking) */
  if (f) {
    char m[8];
    bool ctr = fread(m, 1, sizeof m, f) == sizeof m && memcmp(m, "HSCTRCK1", sizeof m) == 0;
    fclose(f);
    if (ctr) {
      fprintf(stderr, "hetsage %s: %s is a CTR model's checkpoint: %s\n", cmd, ckpt,
              strcmp(cmd, "embed") ? "add --task ctr" : "embed reads GNN checkpoints only");
      return 1;
    }
  }
  int rc = cli_session_from_checkpoint(cmd, a, ckpt, false, false);
  if (rc != 0) return rc;
  hs_status st;
  rc = cli_session_open(cmd, a, rt, ds, s);
  if (rc != 0) return rc;
  if ((st = hs_session_load(*s, ckpt)) != HS_OK) {
    cli_report(cmd, "loading the checkpoint", st);
    cli_session_close(*rt, *ds, *s);
    return 1;
  }
  return 0;
}

static void eval_usage(FILE *f) {
  fprintf(f,
          "usage: hetsage eval --checkpoint FILE|DIR [options]\n"
          "       hetsage eval --task ctr --checkpoint FILE|DIR --data FILE|DIR [options]\n"
          "\n"
          "Accuracy of a saved model on a split of a dataset (a DIR is a training\n"
          "--checkpoint folder: its best.ckpt is used). A click-through-rate model:\n"
          "--task ctr (see 'hetsage eval --task ctr --help').\n"
          "\n"
          "  --split train|valid|test   (default test)\n"
          "  --sampled                  sampled neighbourhoods (default: full, but\n"
          "                             sampled under --sampling weighted|threshold)\n"
          "  --full                     full neighbourhoods whatever the sampling\n"
          "  --json                     result as JSON\n");
  cli_session_usage(f, false);
}

int cmd_eval(int argc, char **argv) {
  if (cli_is_ctr(argc, argv)) return cmd_eval_ctr(argc, argv);
  cli_session_args a;
  cli_session_args_init(&a);
  const char *ckpt_arg = NULL;
  hs_split split = HS_SPLIT_TEST;
  bool sampled = false, json = false, full = false;
  for (int i = 1; i < argc; i++) {
    const char *o = argv[i];
    int r = cli_session_arg("eval", &a, argc, argv, &i);
    if (r < 0) return 2;
    if (r > 0) continue;
    if (!strcmp(o, "-h") || !strcmp(o, "--help")) {
      eval_usage(stdout);
      return 0;
    } else if (!strcmp(o, "--checkpoint") && i + 1 < argc) {
      ckpt_arg = argv[++i];
    } else if (!strcmp(o, "--split") && i + 1 < argc) {
      static const char *const names[] = {"train", "valid", "test"};
      int k;
      if (!cli_opt_choice("eval", o, argv[++i], names, 3, &k)) return 2;
      split = (hs_split)k;
    } else if (!strcmp(o, "--sampled")) {
      sampled = true;
    } else if (!strcmp(o, "--full")) {
      full = true;
    } else if (!strcmp(o, "--json")) {
      json = true;
    } else {
      return cli_usage_error("eval", "unknown option or missing value '%s'", o);
    }
  }
  if (!ckpt_arg) return cli_usage_error("eval", "--checkpoint is required");
  if (sampled && full) return cli_usage_error("eval", "give one of --sampled and --full");
  if (!full && a.cfg.sampling != HS_SAMPLING_UNIFORM) sampled = true;
  char buf[1100];
  const char *ckpt = resolve_checkpoint(ckpt_arg, buf, sizeof buf);
  hs_runtime *rt;
  hs_dataset *ds;
  hs_session *s;
  int rc = open_from_checkpoint("eval", &a, ckpt, &rt, &ds, &s);
  if (rc) return rc;
  double acc;
  hs_status st = sampled ? hs_session_evaluate(s, split, &acc) : hs_session_evaluate_full(s, split, &acc);
  const char *names[] = {"train", "valid", "test"};
  if (st != HS_OK) {
    cli_report("eval", "evaluation", st);
    rc = 1;
  } else if (json) {
    printf("{\"checkpoint\": ");
    cli_json_string(stdout, ckpt);
    printf(", \"split\": \"%s\", \"neighbourhoods\": \"%s\", \"accuracy\": ", names[split],
           sampled ? "sampled" : "full");
    cli_json_number(stdout, acc, 6);
    printf("}\n");
  } else {
    printf("%s accuracy %.4f (%s neighbourhoods, %s)\n", names[split], acc,
           sampled ? "sampled" : "full", ckpt);
  }
  cli_session_close(rt, ds, s);
  return rc;
}

static void predict_usage(FILE *f) {
  fprintf(f,
          "usage: hetsage predict --checkpoint FILE|DIR (--ids 1,2,3 | --ids-file F) [options]\n"
          "       hetsage predict --task ctr --checkpoint FILE|DIR --data FILE [options]\n"
          "\n"
          "Predicted class of each vertex id from its full neighbourhood. Click\n"
          "probabilities of a click-through-rate model: --task ctr (see 'hetsage\n"
          "predict --task ctr --help').\n"
          "\n"
          "  --ids LIST       comma-separated vertex ids\n"
          "  --ids-file F     one vertex id per line ('-': standard input)\n"
          "  --json           one JSON object with ids, classes and logits\n");
  cli_session_usage(f, false);
}

typedef struct id_list {
  int64_t *ids;
  int64_t n;
  size_t cap;
} id_list;

static bool id_push(id_list *l, int64_t v) {
  if ((size_t)l->n == l->cap) {
    size_t cap = l->cap ? 2 * l->cap : 64;
    int64_t *g = realloc(l->ids, cap * sizeof *g);
    if (!g) return false;
    l->ids = g;
    l->cap = cap;
  }
  l->ids[l->n++] = v;
  return true;
}

/* Vertex ids from "--ids 1,2,3" or a file of one id a line ('-': stdin). */
static int read_ids(const char *cmd, const char *list, const char *file, int64_t **ids, int64_t *n) {
  id_list l = {0};
  *ids = NULL;
  *n = 0;
  if (list) {
    if (!cli_parse_id_list(list, ids, n))
      return cli_usage_error(cmd, "--ids '%s': expected comma-separated vertex ids, each an "
                             "integer in [0, %d]", list, INT32_MAX);
    return 0;
  }
  FILE *f = strcmp(file, "-") == 0 ? stdin : fopen(file, "r");
  if (!f) {
    fprintf(stderr, "hetsage %s: cannot read %s: %s\n", cmd, file, strerror(errno));
    return 1;
  }
  char line[128];
  long lineno = 0;
  int rc = 0;
  while (fgets(line, sizeof line, f)) {
    lineno++;
    line[strcspn(line, "\r\n")] = '\0';
    if (!line[0]) continue;
    int64_t v;
    if (!cli_parse_i64(line, &v) || v < 0 || v > INT32_MAX) {
      fprintf(stderr, "hetsage %s: --ids-file %s:%ld: '%s': expected a vertex id, an integer in "
              "[0, %d]\n", cmd, file, lineno, line, INT32_MAX);
      rc = 2;
      break;
    }
    if (!id_push(&l, v)) {
      fprintf(stderr, "hetsage %s: out of memory for %lld ids\n", cmd, (long long)l.n);
      rc = 1;
      break;
    }
  }
  if (!rc && ferror(f)) {
    fprintf(stderr, "hetsage %s: reading %s: %s\n", cmd, file, strerror(errno));
    rc = 1;
  }
  if (f != stdin) fclose(f);
  if (rc) {
    free(l.ids);
    return rc;
  }
  *ids = l.ids;
  *n = l.n;
  return 0;
}

int cmd_predict(int argc, char **argv) {
  if (cli_is_ctr(argc, argv)) return cmd_predict_ctr(argc, argv);
  cli_session_args a;
  cli_session_args_init(&a);
  const char *ckpt_arg = NULL, *list = NULL, *file = NULL;
  bool json = false;
  for (int i = 1; i < argc; i++) {
    const char *o = argv[i];
    int r = cli_session_arg("predict", &a, argc, argv, &i);
    if (r < 0) return 2;
    if (r > 0) continue;
    if (!strcmp(o, "-h") || !strcmp(o, "--help")) {
      predict_usage(stdout);
      return 0;
    } else if (!strcmp(o, "--checkpoint") && i + 1 < argc) {
      ckpt_arg = argv[++i];
    } else if (!strcmp(o, "--ids") && i + 1 < argc) {
      list = argv[++i];
    } else if (!strcmp(o, "--ids-file") && i + 1 < argc) {
      file = argv[++i];
    } else if (!strcmp(o, "--json")) {
      json = true;
    } else {
      return cli_usage_error("predict", "unknown option or missing value '%s'", o);
    }
  }
  if (!ckpt_arg) return cli_usage_error("predict", "--checkpoint is required");
  if (!list == !file) return cli_usage_error("predict", "give exactly one of --ids and --ids-file");
  int64_t *ids = NULL, n = 0;
  int rc = read_ids("predict", list, file, &ids, &n);
  if (rc) {
    free(ids);
    return rc;
  }
  char buf[1100];
  const char *ckpt = resolve_checkpoint(ckpt_arg, buf, sizeof buf);
  hs_runtime *rt;
  hs_dataset *ds;
  hs_session *s;
  if ((rc = open_from_checkpoint("predict", &a, ckpt, &rt, &ds, &s)) != 0) {
    free(ids);
    return rc;
  }
  int c = hs_session_num_classes(s);
  int32_t *cls = malloc((size_t)n * sizeof *cls + 1);
  float *logits = malloc((size_t)n * (size_t)c * sizeof *logits + 1);
  hs_status st = cls && logits ? hs_session_predict(s, ids, n, cls, logits) : HS_ERR_NOMEM;
  if (st != HS_OK) {
    cli_report("predict", "prediction", st);
    rc = 1;
  } else if (json) {
    printf("{\"predictions\": [");
    for (int64_t i = 0; i < n; i++) {
      printf("%s\n  {\"id\": %lld, \"class\": %d, \"logits\": [", i ? "," : "", (long long)ids[i], cls[i]);
      for (int k = 0; k < c; k++) {
        if (k) printf(", ");
        cli_json_number(stdout, (double)logits[i * c + k], -6);
      }
      printf("]}");
    }
    printf("\n]}\n");
  } else {
    for (int64_t i = 0; i < n; i++) printf("%lld\t%d\n", (long long)ids[i], cls[i]);
  }
  free(cls);
  free(logits);
  free(ids);
  cli_session_close(rt, ds, s);
  return rc;
}

/* `out` would be written into the dataset folder `dir` (the folder that
 * holds it is `dir`, by real path): the embeddings would replace or sit
 * among the dataset's files. */
static bool in_dataset(const char *out, const char *dir) {
  char parent[4200];
  cli_parent_dir(out, parent, sizeof parent);
  char *a = realpath(parent, NULL), *b = realpath(dir, NULL);
  bool same = a && b && strcmp(a, b) == 0;
  free(a), free(b);
  return same;
}

static void embed_usage(FILE *f) {
  fprintf(f,
          "usage: hetsage embed --checkpoint FILE|DIR --out F.npy [--layer L] [options]\n"
          "\n"
          "Every vertex's representation after layer L of a saved model (default: the\n"
          "last hidden layer), from full neighbourhoods layer by layer, dropout off:\n"
          "float32, one row per vertex id (N x d), written as a NumPy .npy file\n"
          "atomically (the old file or the new one, never a partial one). Hidden\n"
          "layers give their output after bias and ReLU; the last layer, the logits.\n"
          "\n"
          "  --layer L        1..layers (default: layers - 1, or 1 for one layer)\n"
          "  --out F.npy      where to write (not in the dataset's folder)\n"
          "  --json           the result as JSON\n");
  cli_session_usage(f, false);
}

int cmd_embed(int argc, char **argv) {
  cli_session_args a;
  cli_session_args_init(&a);
  const char *ckpt_arg = NULL, *out = NULL;
  bool json = false;
  uint64_t layer = 0;
  for (int i = 1; i < argc; i++) {
    const char *o = argv[i];
    int r = cli_session_arg("embed", &a, argc, argv, &i);
    if (r < 0) return 2;
    if (r > 0) continue;
    if (!strcmp(o, "-h") || !strcmp(o, "--help")) {
      embed_usage(stdout);
      return 0;
    } else if (!strcmp(o, "--checkpoint") && i + 1 < argc) {
      ckpt_arg = argv[++i];
    } else if (!strcmp(o, "--out") && i + 1 < argc) {
      out = argv[++i];
    } else if (!strcmp(o, "--layer") && i + 1 < argc) {
      if (!cli_parse_u64(argv[++i], &layer) || layer < 1 || layer > HS_MAX_LAYERS)
        return cli_usage_error("embed", "--layer '%s': expected 1..%d", argv[i], HS_MAX_LAYERS);
    } else if (!strcmp(o, "--json")) {
      json = true;
    } else {
      return cli_usage_error("embed", "unknown option or missing value '%s'", o);
    }
  }
  if (!ckpt_arg) return cli_usage_error("embed", "--checkpoint is required");
  if (!out) return cli_usage_error("embed", "--out is required");
  char buf[1100];
  const char *ckpt = resolve_checkpoint(ckpt_arg, buf, sizeof buf);
  hs_runtime *rt;
  hs_dataset *ds;
  hs_session *s;
  int rc = open_from_checkpoint("embed", &a, ckpt, &rt, &ds, &s);
  if (rc) return rc;
  int layers = a.cfg.n_layers;
  if (layer == 0) layer = layers > 1 ? (uint64_t)layers - 1 : 1;
  if ((int)layer > layers) {
    fprintf(stderr, "hetsage embed: --layer %llu: the model has layers 1..%d\n",
            (unsigned long long)layer, layers);
    cli_session_close(rt, ds, s);
    return 2;
  }
  if (in_dataset(out, a.path)) {
    fprintf(stderr, "hetsage embed: --out %s: it is in the dataset's folder %s: write the "
            "embeddings elsewhere\n", out, a.path);
    cli_session_close(rt, ds, s);
    return 2;
  }
  hs_status st = hs_session_embed_save(s, (int)layer, out);
  if (st != HS_OK) {
    cli_report("embed", out, st);
    rc = 1;
  } else {
    hs_dataset_info info;
    hs_dataset_info_init(&info);
    hs_dataset_get_info(ds, &info);
    int d = hs_session_embed_dim(s, (int)layer);
    if (json) {
      printf("{\"out\": ");
      cli_json_string(stdout, out);
      printf(", \"layer\": %d, \"rows\": %lld, \"dim\": %d, \"model\": \"%s\"}\n",
             (int)layer, (long long)info.num_vertices, d, hs_model_kind_name(a.cfg.model));
    } else {
      printf("%s: %lld x %d float32 (layer %d of %d, %s)\n", out, (long long)info.num_vertices, d,
             (int)layer, layers, hs_model_kind_name(a.cfg.model));
    }
  }
  cli_session_close(rt, ds, s);
  return rc;
}
