/* hetsage generate: synthetic R-MAT / SBM datasets in the native format. */
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "cli_ctr.h"
#include "cli_data.h"

static void usage(FILE *f) {
  fprintf(f,
          "usage: hetsage generate --kind rmat|sbm [options] DST\n"
          "       hetsage generate --kind ctr [options] DST   (see --kind ctr --help)\n"
          "\n"
          "Generate a synthetic node-classification dataset into DST (native format,\n"
          "written to DST.tmp-XXXXXX and renamed when complete). The result is a pure\n"
          "function of the options: the same seed gives the same bytes, whatever the\n"
          "thread count. Classes are id blocks, class(v) = floor(v * K / N); features\n"
          "are K class means margin apart plus N(0, sigma^2) noise; meta.json records\n"
          "the parameters, the measured homophily and two predicted accuracies: the\n"
          "Bayes accuracy of the features alone, and (SBM) that of the features with\n"
          "the neighbours' mean, which a one-layer GraphSAGE over full neighbourhoods\n"
          "(--fanouts -1) should come within two points of.\n"
          "\n"
          "graph:\n"
          "  --kind rmat|sbm        R-MAT (Graph500-style) or stochastic block model\n"
          "  --scale S              R-MAT ids are drawn in [0, 2^S) (default 16)\n"
          "  --vertices N           vertex count (default 2^scale)\n"
          "  --edges M              edges to draw (default N * edge factor)\n"
          "  --edge-factor F        edges drawn per vertex (default 16)\n"
          "  --a A --b B --c C      R-MAT quadrant probabilities (0.57, 0.19, 0.19)\n"
          "  --classes K            classes (default 8)\n"
          "  --homophily H          SBM: fraction of drawn edges inside a class (0.8)\n"
          "  --p-in P --p-out Q     SBM: edge probabilities inside / across classes\n"
          "                         instead of --edges/--homophily\n"
          "  --directed             store drawn edges one way (default: both ways)\n"
          "  --keep-duplicates      keep repeated edges (default: dropped)\n"
          "  --self-loops keep|drop default drop\n"
          "features and split:\n"
          "  --features F           features per vertex, >= K (default 32)\n"
          "  --feat-dtype f32|f16   default f32\n"
          "  --margin D             distance between class means (default 1.5)\n"
          "  --sigma S              noise per feature (default 1)\n"
          "  --words W              binary bag-of-words features instead: about W\n"
          "                         distinct words per vertex out of --features\n"
          "  --topic P              words: fraction drawn from the class's own block of\n"
          "                         the vocabulary (default 0.25)\n"
          "  --feat-format auto|dense|sparse  how to store them (auto: sparse at <= 10%%)\n"
          "  --split TR,VA,TE       stratified split (default 0.6,0.2,0.2)\n"
          "other:\n"
          "  --seed S               default 1\n"
          "  --threads T            default 2\n"
          "  --force                replace an existing dataset at DST\n"
          "  --json                 summary as JSON on stdout\n"
          "  -q, --quiet            no progress lines on stderr\n"
          "\n"
          "Ctrl-C or SIGTERM stops it and removes the temporary; temporaries of runs\n"
          "that were killed (SIGKILL) are removed by the next run into DST.\n"
          "ogbn-products scale: --kind sbm --vertices 2449029 --edges 61859140\n"
          "  --classes 47 --features 100 (about 1 GiB of features).\n"
          "CiteSeer-like (bag-of-words citation graph): --kind sbm --vertices 3327\n"
          "  --edges 4552 --homophily 0.74 --classes 6 --features 3703 --words 32 --topic 0.12.\n"
          "Exit status: 0 done, 1 failed, 2 usage error, 130 interrupted.\n");
}

/* A number in [lo, hi] (an end open where lo_open / hi_open say). */
static bool num_arg(const char *cmd, int argc, char **argv, int *i, double lo, bool lo_open,
                    double hi, bool hi_open, double *out, int *rc) {
  *rc = 2;
  if (*i + 1 >= argc) {
    cli_usage_error(cmd, "option %s needs a value", argv[*i]);
    return false;
  }
  (*i)++;
  return cli_opt_number(cmd, argv[*i - 1], argv[*i], lo, lo_open, hi, hi_open, out);
}

static bool int_arg(const char *cmd, int argc, char **argv, int *i, int64_t lo, int64_t hi,
                    int64_t *out, int *rc) {
  *rc = 2;
  if (*i + 1 >= argc) {
    cli_usage_error(cmd, "option %s needs a value", argv[*i]);
    return false;
  }
  (*i)++;
  return cli_opt_int(cmd, argv[*i - 1], argv[*i], lo, hi, out);
}

int cmd_generate(int argc, char **argv) {
  for (int i = 1; i + 1 < argc; i++)
    if (strcmp(argv[i], "--kind") == 0 && strcmp(argv[i + 1], "ctr") == 0)
      return cmd_generate_ctr(argc, argv);
  if (cli_wants_help(argc, argv)) {
    usage(stdout);
    return 0;
  }
  const char *cmd = "generate";
  hs_generate_opts o;
  hs_generate_kind kind = 0;
  for (int i = 1; i + 1 < argc; i++)
    if (strcmp(argv[i], "--kind") == 0) {
      if (strcmp(argv[i + 1], "rmat") == 0) kind = HS_GENERATE_RMAT;
      else if (strcmp(argv[i + 1], "sbm") == 0) kind = HS_GENERATE_SBM;
      else return cli_usage_error(cmd, "--kind '%s': expected rmat, sbm or ctr", argv[i + 1]);
    }
  if (!kind) return cli_usage_error(cmd, "--kind rmat|sbm|ctr is required");
  hs_generate_opts_init(&o, kind);
  bool json = false, quiet = false;
  const char *drawn_by = NULL; /* --edges or --homophily given (--p-in replaces both) */
  const char *dst = NULL;
  int rc = 2;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    int64_t v;
    if (strcmp(a, "--kind") == 0) {
      i++;
    } else if (strcmp(a, "--scale") == 0) {
      if (!int_arg(cmd, argc, argv, &i, 1, 31, &v, &rc)) return rc;
      o.scale = (int)v;
    } else if (strcmp(a, "--vertices") == 0) {
      if (!int_arg(cmd, argc, argv, &i, 1, INT32_MAX, &v, &rc)) return rc;
      o.num_vertices = v;
    } else if (strcmp(a, "--edges") == 0) {
      /* (0 is the options' "not given": an edgeless graph is not drawn.) */
      if (!int_arg(cmd, argc, argv, &i, 1, INT64_MAX / 4, &v, &rc)) return rc;
      o.num_edges = v;
      drawn_by = "--edges";
    } else if (strcmp(a, "--edge-factor") == 0) {
      if (!num_arg(cmd, argc, argv, &i, 0, false, 1e9, false, &o.edge_factor, &rc)) return rc;
    } else if (strcmp(a, "--a") == 0) {
      if (!num_arg(cmd, argc, argv, &i, 0, false, 1, false, &o.rmat_a, &rc)) return rc;
    } else if (strcmp(a, "--b") == 0) {
      if (!num_arg(cmd, argc, argv, &i, 0, false, 1, false, &o.rmat_b, &rc)) return rc;
    } else if (strcmp(a, "--c") == 0) {
      if (!num_arg(cmd, argc, argv, &i, 0, false, 1, false, &o.rmat_c, &rc)) return rc;
    } else if (strcmp(a, "--classes") == 0) {
      if (!int_arg(cmd, argc, argv, &i, 1, INT32_MAX, &v, &rc)) return rc;
      o.num_classes = (int32_t)v;
    } else if (strcmp(a, "--homophily") == 0) {
      if (!num_arg(cmd, argc, argv, &i, 0, false, 1, false, &o.homophily, &rc)) return rc;
      drawn_by = "--homophily";
    } else if (strcmp(a, "--p-in") == 0) {
      if (!num_arg(cmd, argc, argv, &i, 0, false, 1, false, &o.p_in, &rc)) return rc;
    } else if (strcmp(a, "--p-out") == 0) {
      if (!num_arg(cmd, argc, argv, &i, 0, false, 1, false, &o.p_out, &rc)) return rc;
    } else if (strcmp(a, "--directed") == 0) {
      o.undirected = false;
    } else if (strcmp(a, "--keep-duplicates") == 0) {
      o.dedup = false;
    } else if (strcmp(a, "--self-loops") == 0) {
      const char *val = i + 1 < argc ? argv[++i] : "";
      if (strcmp(val, "keep") == 0) o.self_loops = HS_SELF_LOOPS_KEEP;
      else if (strcmp(val, "drop") == 0) o.self_loops = HS_SELF_LOOPS_DROP;
      else return cli_usage_error(cmd, "--self-loops '%s': expected keep or drop", val);
    } else if (strcmp(a, "--features") == 0) {
      if (!int_arg(cmd, argc, argv, &i, 1, INT32_MAX, &v, &rc)) return rc;
      o.num_features = v;
    } else if (strcmp(a, "--feat-dtype") == 0) {
      const char *val = i + 1 < argc ? argv[++i] : "";
      if (strcmp(val, "f32") == 0 || strcmp(val, "float32") == 0) o.feature_dtype = HS_DTYPE_FLOAT32;
      else if (strcmp(val, "f16") == 0 || strcmp(val, "float16") == 0) o.feature_dtype = HS_DTYPE_FLOAT16;
      else return cli_usage_error(cmd, "--feat-dtype '%s': expected f32 or f16", val);
    } else if (strcmp(a, "--margin") == 0) {
      if (!num_arg(cmd, argc, argv, &i, 0, false, INFINITY, true, &o.margin, &rc)) return rc;
    } else if (strcmp(a, "--sigma") == 0) {
      if (!num_arg(cmd, argc, argv, &i, 0, true, INFINITY, true, &o.sigma, &rc)) return rc;
    } else if (strcmp(a, "--words") == 0) {
      if (!num_arg(cmd, argc, argv, &i, 1, false, 1e6, false, &o.words, &rc)) return rc;
      o.features = HS_GENERATE_WORDS;
    } else if (strcmp(a, "--topic") == 0) {
      if (!num_arg(cmd, argc, argv, &i, 0, false, 1, false, &o.topic, &rc)) return rc;
    } else if (strcmp(a, "--feat-format") == 0) {
      if (i + 1 >= argc || hs_feat_format_parse(argv[i + 1], &o.feat_format) != HS_OK)
        return cli_usage_error(cmd, "--feat-format '%s': expected auto, dense or sparse",
                               i + 1 < argc ? argv[i + 1] : "");
      i++;
    } else if (strcmp(a, "--split") == 0) {
      if (i + 1 >= argc || !cli_parse_split(argv[i + 1], o.split_frac))
        return cli_usage_error(cmd, "--split '%s': expected three fractions in [0, 1] summing "
                               "to at most 1", i + 1 < argc ? argv[i + 1] : "");
      i++;
    } else if (strcmp(a, "--seed") == 0) {
      if (!int_arg(cmd, argc, argv, &i, 0, INT64_MAX, &v, &rc)) return rc;
      o.seed = (uint64_t)v;
    } else if (strcmp(a, "--threads") == 0) {
      if (!int_arg(cmd, argc, argv, &i, 1, 16, &v, &rc)) return rc;
      o.threads = (int)v;
    } else if (strcmp(a, "--force") == 0) {
      o.force = true;
    } else if (strcmp(a, "--json") == 0) {
      json = true;
    } else if (strcmp(a, "--quiet") == 0 || strcmp(a, "-q") == 0) {
      quiet = true;
    } else if (a[0] == '-' && a[1]) {
      return cli_usage_error(cmd, "unknown option '%s'", a);
    } else {
      if (dst) return cli_usage_error(cmd, "unexpected argument '%s'", a);
      dst = a;
    }
  }
  if (!dst) return cli_usage_error(cmd, "expected DST");
  if (o.p_in > 0 && drawn_by)
    return cli_usage_error(cmd, "--p-in and --p-out replace --edges and --homophily, and %s was "
                           "given too: give one or the other", drawn_by);
  if (o.features == HS_GENERATE_WORDS && o.words > (double)o.num_features)
    return cli_usage_error(cmd, "--words %g is more than --features %" PRId64 ": a vertex's "
                           "words are drawn from the features", o.words, o.num_features);
  if (!quiet) {
    o.progress = cli_progress;
    o.progress_ctx = (void *)cmd;
  }
  static volatile sig_atomic_t stop;
  o.stop = &stop;
  cli_catch_stop(&stop);
  hs_generate_summary s;
  hs_generate_summary_init(&s);
  hs_dataset_info info;
  hs_dataset_info_init(&info);
  hs_status st = hs_generate(dst, &o, &info, &s);
  if (st == HS_ERR_INTERRUPTED) {
    fprintf(stderr, "hetsage %s: interrupted: nothing was written\n", cmd);
    return 130;
  }
  if (st == HS_ERR_INVALID_ARG && !hs_last_error()[0]) return cli_usage_error(cmd, "bad options");
  if (st != HS_OK) {
    cli_report(cmd, dst, st);
    return st == HS_ERR_INVALID_ARG ? 2 : 1;
  }
  if (info.has_split[HS_SPLIT_TRAIN] && info.split_size[HS_SPLIT_TRAIN] == 0)
    fprintf(stderr, "hetsage %s: warning: the split has no training vertex (--split's first "
            "fraction): train refuses %s; eval and predict take it\n", cmd, dst);
  if (json) {
    printf("{\n  \"path\": ");
    cli_json_string(stdout, dst);
    printf(",\n");
    cli_info_json(stdout, &info);
    printf(",\n  \"homophily\": %.6f,\n  \"bayes_accuracy\": ", s.homophily);
    if (isfinite(s.bayes_accuracy)) printf("%.6f", s.bayes_accuracy);
    else printf("null");
    printf(",\n  \"one_hop_accuracy\": ");
    if (isfinite(s.onehop_accuracy)) printf("%.6f", s.onehop_accuracy);
    else printf("null");
    printf(",\n  \"seconds\": %.3f\n}\n", s.seconds);
  } else {
    cli_info_print(stdout, dst, &info);
    printf("  homophily %.3f", s.homophily);
    if (isfinite(s.bayes_accuracy))
      printf("; predicted accuracy (Bayes): features alone %.3f", s.bayes_accuracy);
    if (isfinite(s.onehop_accuracy))
      printf(", with the neighbours' mean %.3f (one layer, --fanouts -1)", s.onehop_accuracy);
    printf("; %.1f s\n", s.seconds);
  }
  return 0;
}
