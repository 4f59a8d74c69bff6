#include "cli_data.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

const char *cli_bytes(char *buf, size_t cap, uint64_t bytes) {
  static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = (double)bytes;
  int u = 0;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    u++;
  }
  if (u == 0) snprintf(buf, cap, "%" PRIu64 " B", bytes);
  else snprintf(buf, cap, "%.1f %s", v, units[u]);
  return buf;
}

void cli_info_print(FILE *f, const char *path, const hs_dataset_info *in) {
  char b1[32], b2[32], b3[32];
  char form[64] = "";
  if (in->feature_format == HS_FEAT_FORMAT_SPARSE)
    snprintf(form, sizeof form, ", sparse%s, %" PRId64 " non-zeros",
             in->feature_binary ? " binary" : "", in->feature_nnz);
  fprintf(f, "%s: %" PRId64 " vertices, %" PRId64 " edges, %" PRId64 " features (%s%s), %" PRId32
             " classes (%" PRId64 " labelled)\n",
          path, in->num_vertices, in->num_edges, in->num_features,
          hs_dtype_name(in->feature_dtype), form, in->num_classes, in->num_labelled);
  if (in->has_split[0] || in->has_split[1] || in->has_split[2])
    fprintf(f, "  split: train %" PRId64 ", valid %" PRId64 ", test %" PRId64 "\n",
            in->split_size[0], in->split_size[1], in->split_size[2]);
  else
    fprintf(f, "  split: none\n");
  fprintf(f, "  bytes: topology %s (sampler), features %s (host), labels %s\n",
          cli_bytes(b1, sizeof b1, in->topology_bytes), cli_bytes(b2, sizeof b2, in->feature_bytes),
          cli_bytes(b3, sizeof b3, in->label_bytes));
}

void cli_info_json(FILE *f, const hs_dataset_info *in) {
  fprintf(f,
          "  \"vertices\": %" PRId64 ",\n  \"edges\": %" PRId64 ",\n  \"features\": %" PRId64
          ",\n  \"feature_dtype\": \"%s\",\n  \"feature_format\": \"%s\",\n"
          "  \"feature_binary\": %s,\n  \"classes\": %" PRId32 ",\n  \"labelled\": %" PRId64
          ",\n  \"weights\": %s,\n",
          in->num_vertices, in->num_edges, in->num_features, hs_dtype_name(in->feature_dtype),
          in->num_features ? hs_feat_format_name(in->feature_format) : "none",
          in->feature_binary ? "true" : "false", in->num_classes, in->num_labelled,
          in->has_weights ? "true" : "false");
  fprintf(f, "  \"split\": {");
  static const char *const names[3] = {"train", "valid", "test"};
  bool any = false;
  for (int s = 0; s < 3; s++) {
    if (!in->has_split[s]) continue;
    fprintf(f, "%s\"%s\": %" PRId64, any ? ", " : "", names[s], in->split_size[s]);
    any = true;
  }
  fprintf(f, "},\n");
  fprintf(f,
          "  \"bytes\": {\"topology\": %" PRIu64 ", \"features\": %" PRIu64 ", \"labels\": %" PRIu64
          "}",
          in->topology_bytes, in->feature_bytes, in->label_bytes);
}

void cli_progress(void *cmd_name, const char *line) {
  fprintf(stderr, "hetsage %s: %s\n", (const char *)cmd_name, line);
}

static bool split_item(void *ctx, const char *item, int index) {
  double *out = ctx;
  return index < 3 && cli_parse_double(item, &out[index]) && out[index] >= 0 && out[index] <= 1;
}

bool cli_parse_split(const char *s, double out[3]) {
  double v[3];
  if (cli_list_each(s, split_item, v) != 3 || v[0] + v[1] + v[2] > 1 + 1e-9) return false;
  memcpy(out, v, sizeof v);
  return true;
}
