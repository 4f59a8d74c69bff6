/* hetsage stats: describe a native dataset. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "cli_data.h"

static void usage(FILE *f) {
  fprintf(f,
          "usage: hetsage stats [--json] DIR\n"
          "\n"
          "Open and validate the native dataset DIR and describe it: vertices, edges,\n"
          "features, classes, split sizes, the out-degree distribution (min, median,\n"
          "p99, max, mean), self-loops, isolated vertices (no edge in or out), the\n"
          "features' storage (dense feat.npy or sparse CSR), density (non-zeros over\n"
          "N x F) and values that are NaN or infinite (a warning: training on them gives\n"
          "NaN; the features are read once to count them), and the bytes each role\n"
          "holds: the topology on the sampler device (indptr int64 + indices int32 +\n"
          "weights), the features on the host, the labels.\n"
          "\n"
          "options:\n"
          "  --json   machine-readable output on stdout\n"
          "\n"
          "Exit status: 0 done, 1 the dataset is invalid or unreadable, 2 usage error.\n");
}

int cmd_stats(int argc, char **argv) {
  if (cli_wants_help(argc, argv)) {
    usage(stdout);
    return 0;
  }
  const char *cmd = "stats";
  bool json = false;
  const char *dir = NULL;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--json") == 0) json = true;
    else if (argv[i][0] == '-' && argv[i][1]) return cli_usage_error(cmd, "unknown option '%s'", argv[i]);
    else if (dir) return cli_usage_error(cmd, "unexpected argument '%s'", argv[i]);
    else dir = argv[i];
  }
  if (!dir) return cli_usage_error(cmd, "expected a dataset directory");
  hs_dataset *ds;
  hs_status st = hs_dataset_open(dir, &ds);
  if (st) {
    cli_report(cmd, dir, st);
    return 1;
  }
  hs_dataset_stats s;
  hs_dataset_stats_init(&s);
  hs_dataset_info info;
  hs_dataset_info_init(&info);
  st = hs_dataset_get_info(ds, &info);
  if (st == HS_OK) st = hs_dataset_stats_compute(ds, &s);
  hs_dataset_close(ds);
  if (st) {
    cli_report(cmd, dir, st);
    return 1;
  }
  if (json) {
    printf("{\n  \"path\": ");
    cli_json_string(stdout, dir);
    printf(",\n");
    cli_info_json(stdout, &info);
    printf(",\n  \"degree\": {\"min\": %" PRId64 ", \"median\": %" PRId64 ", \"p99\": %" PRId64
           ", \"max\": %" PRId64 ", \"mean\": %.4f},\n",
           s.degree_min, s.degree_median, s.degree_p99, s.degree_max, s.degree_mean);
    printf("  \"feature_nnz\": %" PRId64 ",\n  \"feature_density\": %.6g,\n"
           "  \"feature_row_nnz_max\": %" PRId64 ",\n  \"feature_nonfinite\": %" PRId64
           ",\n  \"feature_nonfinite_first_vertex\": ",
           s.feature_nnz, s.feature_density, s.feature_row_nnz_max, s.feature_nonfinite);
    if (s.feature_nonfinite_first >= 0) printf("%" PRId64 ",\n", s.feature_nonfinite_first);
    else printf("null,\n");
    printf("  \"self_loops\": %" PRId64 ",\n  \"isolated\": %" PRId64
           ",\n  \"largest_class\": %" PRId64 "\n}\n",
           s.self_loops, s.isolated, s.class_size_max);
    return 0;
  }
  cli_info_print(stdout, dir, &info);
  printf("  out-degree: min %" PRId64 ", median %" PRId64 ", p99 %" PRId64 ", max %" PRId64
         ", mean %.2f\n",
         s.degree_min, s.degree_median, s.degree_p99, s.degree_max, s.degree_mean);
  if (info.num_features)
    printf("  features: %s, %" PRId64 " non-zeros, density %.4g%% (%.1f per row, at most %" PRId64
           ")\n",
           hs_feat_format_name(info.feature_format), s.feature_nnz, 100.0 * s.feature_density,
           info.num_vertices ? (double)s.feature_nnz / (double)info.num_vertices : 0.0,
           s.feature_row_nnz_max);
  if (s.feature_nonfinite)
    printf("  warning: %" PRId64 " feature values are NaN or infinite (the first in vertex %" PRId64
           "): training on them gives NaN\n",
           s.feature_nonfinite, s.feature_nonfinite_first);
  printf("  self-loops %" PRId64 ", isolated vertices %" PRId64, s.self_loops, s.isolated);
  if (info.num_classes)
    printf(", largest class %" PRId64 " (%.1f%% of labelled)", s.class_size_max,
           info.num_labelled ? 100.0 * (double)s.class_size_max / (double)info.num_labelled : 0.0);
  printf("\n");
  return 0;
}
