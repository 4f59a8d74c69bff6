/* hetsage convert: import a published graph format into a native dataset. */
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "cli_ctr.h"
#include "cli_data.h"

static void usage(FILE *f) {
  fprintf(f,
          "usage: hetsage convert --from FORMAT [options] SRC DST\n"
          "\n"
          "Import SRC into a new native dataset directory DST (written to DST.tmp-XXXXXX,\n"
          "then renamed into place; nothing is left behind on failure).\n"
          "\n"
          "formats (text files may be gzip-compressed, with or without .gz):\n"
          "  linqs     SRC is a folder with NAME.content and NAME.cites (or the .content\n"
          "            file). Ids are tokens, renumbered in content order; classes are\n"
          "            numbered by name, byte-wise; a cites line 'A B' is the edge B -> A.\n"
          "  musae     SRC holds edges/*.csv, features/*.json, target/*.csv; the class is\n"
          "            the target's last field; features are 0/1 (a vertex's listed ids).\n"
          "  ogb       SRC is an OGB node-property folder: raw/edge.csv, raw/node-feat.csv,\n"
          "            raw/node-label.csv, raw/num-node-list.csv, split/NAME/{train,valid,test}.csv\n"
          "  edgelist  SRC is a whitespace edge list ('a b' lines, '#' comments); ids are\n"
          "            renumbered in order of first appearance unless --keep-ids.\n"
          "  native    SRC is a native dataset: copied as it is (edge and split options do\n"
          "            not apply) with its features written as --feat-format asks, e.g.\n"
          "            'convert --from native --feat-format sparse cora cora-sparse'.\n"
          "  criteo    CTR data (not a graph): Criteo-layout text as NumPy array sets that\n"
          "            'train --task ctr' reads without parsing; see\n"
          "            'hetsage convert --from criteo --help'.\n"
          "\n"
          "options:\n"
          "  --from FORMAT          one of the formats above (required)\n"
          "  --undirected           add the reverse of every edge\n"
          "  --dedup                drop repeated edges\n"
          "  --self-loops keep|drop keep (default) or drop v -> v edges\n"
          "  --keep-ids             edgelist: use the ids as vertex ids (N = max id + 1)\n"
          "  --split TR,VA,TE|none  stratified split by class (default 0.6,0.2,0.2 when\n"
          "                         the source has none; given, it replaces the source's)\n"
          "  --seed S               seed of the split (default 0)\n"
          "  --feat-format auto|dense|sparse\n"
          "                         how to store the features: dense feat.npy, or sparse\n"
          "                         CSR (feat_shape, feat_indptr, feat_indices and, unless\n"
          "                         every non-zero is 1, feat_values .npy); auto (default)\n"
          "                         writes sparse at density <= 10%%\n"
          "  --force                replace an existing dataset at DST\n"
          "  --json                 print the summary as JSON on stdout\n"
          "  --quiet                no progress lines on stderr\n"
          "\n"
          "Each row of the CSR is sorted by neighbour id. Ctrl-C or SIGTERM stops it and\n"
          "removes the temporary; temporaries of runs that were killed (SIGKILL) are\n"
          "removed by the next run into DST. Exit status: 0 done, 1 failed, 2 usage\n"
          "error (bad options, DST exists without --force), 130 interrupted.\n");
}

int cmd_convert(int argc, char **argv) {
  for (int i = 1; i + 1 < argc; i++)
    if (strcmp(argv[i], "--from") == 0 && strcmp(argv[i + 1], "criteo") == 0)
      return cmd_convert_criteo(argc, argv);
  if (cli_wants_help(argc, argv)) {
    usage(stdout);
    return 0;
  }
  const char *cmd = "convert";
  hs_convert_opts o;
  hs_convert_opts_init(&o, HS_IMPORT_LINQS);
  bool have_from = false, json = false, quiet = false;
  const char *pos[2];
  int npos = 0;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    const char *val = i + 1 < argc ? argv[i + 1] : NULL;
    if (strcmp(a, "--from") == 0) {
      if (!val) return cli_usage_error(cmd, "--from needs a format");
      if (hs_import_format_parse(val, &o.from) != HS_OK)
        return cli_usage_error(cmd, "%s", hs_last_error());
      have_from = true;
      i++;
    } else if (strcmp(a, "--undirected") == 0) {
      o.undirected = true;
    } else if (strcmp(a, "--dedup") == 0) {
      o.dedup = true;
    } else if (strcmp(a, "--keep-ids") == 0) {
      o.keep_ids = true;
    } else if (strcmp(a, "--self-loops") == 0) {
      if (!val) return cli_usage_error(cmd, "--self-loops needs keep or drop");
      if (strcmp(val, "keep") == 0) o.self_loops = HS_SELF_LOOPS_KEEP;
      else if (strcmp(val, "drop") == 0) o.self_loops = HS_SELF_LOOPS_DROP;
      else return cli_usage_error(cmd, "--self-loops '%s': expected keep or drop", val);
      i++;
    } else if (strcmp(a, "--split") == 0) {
      if (!val) return cli_usage_error(cmd, "--split needs TR,VA,TE or none");
      if (strcmp(val, "none") == 0) {
        o.make_split = false;
      } else if (!cli_parse_split(val, o.split_frac)) {
        return cli_usage_error(cmd, "--split '%s': expected three fractions in [0, 1] summing "
                               "to at most 1, or none", val);
      } else {
        o.split_override = true;
      }
      i++;
    } else if (strcmp(a, "--seed") == 0) {
      if (!val) return cli_usage_error(cmd, "option --seed needs a value");
      if (!cli_opt_u64(cmd, a, val, 0, UINT64_MAX, &o.split_seed)) return 2;
      i++;
    } else if (strcmp(a, "--feat-format") == 0) {
      if (!val) return cli_usage_error(cmd, "--feat-format needs auto, dense or sparse");
      if (hs_feat_format_parse(val, &o.feat_format) != HS_OK)
        return cli_usage_error(cmd, "--feat-format: %s", hs_last_error());
      i++;
    } else if (strcmp(a, "--force") == 0) {
      o.force = true;
    } else if (strcmp(a, "--json") == 0) {
      json = true;
    } else if (strcmp(a, "--quiet") == 0) {
      quiet = true;
    } else if (a[0] == '-' && a[1]) {
      return cli_usage_error(cmd, "unknown option '%s'", a);
    } else {
      if (npos == 2) return cli_usage_error(cmd, "unexpected argument '%s'", a);
      pos[npos++] = a;
    }
  }
  if (!have_from) return cli_usage_error(cmd, "--from FORMAT is required");
  if (npos != 2) return cli_usage_error(cmd, "expected SRC and DST");
  if (!quiet) {
    o.progress = cli_progress;
    o.progress_ctx = (void *)cmd;
  }
  static volatile sig_atomic_t stop;
  o.stop = &stop;
  cli_catch_stop(&stop);
  hs_dataset_info info;
  hs_dataset_info_init(&info);
  hs_status st = hs_convert(pos[0], pos[1], &o, &info);
  if (st == HS_ERR_INTERRUPTED) {
    fprintf(stderr, "hetsage %s: interrupted: nothing was written\n", cmd);
    return 130;
  }
  if (st != HS_OK) {
    cli_report(cmd, pos[0], st);
    return st == HS_ERR_INVALID_ARG ? 2 : 1;
  }
  if (json) {
    printf("{\n  \"path\": ");
    cli_json_string(stdout, pos[1]);
    printf(",\n");
    cli_info_json(stdout, &info);
    printf("\n}\n");
  } else {
    cli_info_print(stdout, pos[1], &info);
  }
  return 0;
}
