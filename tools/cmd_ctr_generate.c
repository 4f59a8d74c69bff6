/* hetsage generate --kind ctr: Criteo-layout data with a planted signal. */
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
          "usage: hetsage generate --kind ctr [options] DST\n"
          "\n"
          "Generate click-through-rate data in the Criteo layout (label, 13 integers,\n"
          "26 hexadecimal categorical ids, tab-separated) into DST: train.txt,\n"
          "valid.txt, test.txt and meta.json (written beside DST and renamed when\n"
          "complete). Clicks are drawn from a planted logistic model: a first-order\n"
          "effect per id, factorisation-machine interactions among 8 fields, and\n"
          "terms of the log-transformed integers; ids follow power laws over\n"
          "Criteo-like vocabularies. meta.json records the model, the distinct ids\n"
          "per field and the Bayes AUC and logloss on the test split (scoring each\n"
          "example by its true click probability), which DeepFM and DLRM should\n"
          "approach. The files are a pure function of the options. Ctrl-C stops\n"
          "and removes what was written.\n"
          "\n"
          "  --rows N               examples in all (default 1000000)\n"
          "  --split TR,VA,TE       fractions by position (default 0.8,0.1,0.1)\n"
          "  --big-vocab N          ids of the largest field (default 2000000)\n"
          "  --signal S             scale of every planted effect (default 1)\n"
          "  --head-ranks H         an id's effects are at full scale among its\n"
          "                         field's H most popular ids (1..2^32, default 2000)\n"
          "  --tail-decay A         past them they shrink as (H / rank)^A (0..4,\n"
          "                         default 0.5); a smaller H or a larger A leaves\n"
          "                         less of the signal in ids a sample sees only a\n"
          "                         few times\n"
          "  --positive-rate P      mean click rate (default 0.25)\n"
          "  --gzip                 write .txt.gz files\n"
          "  --seed S               default 1\n"
          "  --threads T            default 2\n"
          "  --force                replace an existing dataset at DST\n"
          "  --json                 summary as JSON on stdout\n"
          "  -q, --quiet            no progress lines on stderr\n"
          "\n"
          "Exit status: 0 done, 1 failed, 2 usage error, 130 interrupted (nothing\n"
          "written).\n");
}

int cmd_generate_ctr(int argc, char **argv) {
  const char *cmd = "generate";
  if (cli_wants_help(argc, argv)) {
    usage(stdout);
    return 0;
  }
  hs_ctr_generate_opts o;
  hs_ctr_generate_opts_init(&o);
  bool json = false, quiet = false;
  const char *dst = NULL;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    bool has = i + 1 < argc;
    int64_t v;
    uint64_t u;
    if (strcmp(a, "--kind") == 0 && has) {
      i++;
    } else if (strcmp(a, "--rows") == 0 && has) {
      if (!cli_parse_i64(argv[++i], &v) || v < 10)
        return cli_usage_error(cmd, "--rows '%s': expected an integer >= 10", argv[i]);
      o.rows = v;
    } else if (strcmp(a, "--split") == 0 && has) {
      if (!cli_parse_split(argv[++i], o.split_frac))
        return cli_usage_error(cmd, "--split needs three fractions in [0,1] summing to 1");
    } else if (strcmp(a, "--big-vocab") == 0 && has) {
      if (!cli_parse_i64(argv[++i], &v) || v < 100)
        return cli_usage_error(cmd, "--big-vocab '%s': expected an integer >= 100", argv[i]);
      o.big_vocab = v;
    } else if (strcmp(a, "--signal") == 0 && has) {
      if (!cli_parse_double(argv[++i], &o.signal))
        return cli_usage_error(cmd, "--signal '%s': expected a number", argv[i]);
    } else if (strcmp(a, "--head-ranks") == 0 && has) {
      if (!cli_parse_i64(argv[++i], &v) || v < 1 || v > ((int64_t)1 << 32))
        return cli_usage_error(cmd, "--head-ranks '%s': expected an integer in 1..2^32", argv[i]);
      o.head_ranks = v;
    } else if (strcmp(a, "--tail-decay") == 0 && has) {
      if (!cli_parse_double(argv[++i], &o.tail_decay) || !(o.tail_decay >= 0 && o.tail_decay <= 4))
        return cli_usage_error(cmd, "--tail-decay '%s': expected a number in 0..4", argv[i]);
    } else if (strcmp(a, "--positive-rate") == 0 && has) {
      if (!cli_parse_double(argv[++i], &o.positive_rate))
        return cli_usage_error(cmd, "--positive-rate '%s': expected a number", argv[i]);
    } else if (strcmp(a, "--seed") == 0 && has) {
      if (!cli_parse_u64(argv[++i], &u)) return cli_usage_error(cmd, "--seed '%s'", argv[i]);
      o.seed = u;
    } else if (strcmp(a, "--threads") == 0 && has) {
      if (!cli_parse_i64(argv[++i], &v) || v < 1 || v > 256)
        return cli_usage_error(cmd, "--threads '%s': expected 1..256", argv[i]);
      o.threads = (int)v;
    } else if (strcmp(a, "--gzip") == 0) {
      o.gzip = true;
    } else if (strcmp(a, "--force") == 0) {
      o.force = true;
    } else if (strcmp(a, "--json") == 0) {
      json = true;
    } else if (strcmp(a, "--quiet") == 0 || strcmp(a, "-q") == 0) {
      quiet = true;
    } else if (a[0] == '-' && a[1]) {
      return cli_usage_error(cmd, has ? "unknown option '%s'" : "unknown option '%s' (or it needs a value)", a);
    } else {
      if (dst) return cli_usage_error(cmd, "unexpected argument '%s'", a);
      dst = a;
    }
  }
  if (!dst) return cli_usage_error(cmd, "expected DST");
  if (!quiet) {
    o.progress = cli_progress;
    o.progress_ctx = (void *)cmd;
  }
  static volatile sig_atomic_t stop;
  o.stop = &stop;
  cli_catch_stop(&stop);
  hs_ctr_generate_summary s;
  hs_ctr_generate_summary_init(&s);
  hs_status st = hs_ctr_generate(dst, &o, &s);
  if (st == HS_ERR_INTERRUPTED) {
    fprintf(stderr, "hetsage %s: interrupted: nothing was written\n", cmd);
    return 130;
  }
  if (st != HS_OK) {
    cli_report(cmd, dst, st);
    return st == HS_ERR_INVALID_ARG ? 2 : 1;
  }
  int64_t most = 0;
  for (int f = 0; f < HS_CTR_SPARSE; f++)
    if (s.distinct[f] > most) most = s.distinct[f];
  if (json) {
    printf("{\n  \"path\": ");
    cli_json_string(stdout, dst);
    printf(",\n  \"rows\": {\"train\": %" PRId64 ", \"valid\": %" PRId64 ", \"test\": %" PRId64
           "},\n  \"positive_rate\": {\"train\": ", s.rows[0], s.rows[1], s.rows[2]);
    cli_json_number(stdout, s.positive_rate[0], 6);
    printf(", \"valid\": ");
    cli_json_number(stdout, s.positive_rate[1], 6);
    printf(", \"test\": ");
    cli_json_number(stdout, s.positive_rate[2], 6);
    printf("},\n  \"distinct\": [");
    for (int f = 0; f < HS_CTR_SPARSE; f++) printf("%s%" PRId64, f ? ", " : "", s.distinct[f]);
    printf("],\n  \"bayes_auc\": ");
    cli_json_number(stdout, s.bayes_auc, 6);
    printf(",\n  \"bayes_auc_expected\": ");
    cli_json_number(stdout, s.bayes_auc_expected, 6);
    printf(",\n  \"bayes_logloss\": ");
    cli_json_number(stdout, s.bayes_logloss, 6);
    printf(",\n  \"seconds\": %.3f\n}\n", s.seconds);
  } else {
    printf("%s: %" PRId64 " train, %" PRId64 " valid, %" PRId64 " test examples; ", dst, s.rows[0],
           s.rows[1], s.rows[2]);
    if (isfinite(s.positive_rate[0])) printf("click rate %.3f; ", s.positive_rate[0]);
    printf("largest field %" PRId64 " distinct ids\n", most);
    if (isfinite(s.bayes_auc))
      printf("  test split, scored by the true click probability (Bayes): AUC %.4f (expected %.4f), "
             "logloss %.4f; %.1f s\n", s.bayes_auc, s.bayes_auc_expected, s.bayes_logloss,
             s.seconds);
    else
      printf("  no Bayes AUC: the test split %s; %.1f s\n",
             s.rows[2] ? "has examples of one label only" : "is empty", s.seconds);
  }
  return 0;
}
