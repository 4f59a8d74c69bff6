/* hetsage — command-line front end. Each subcommand lives in cmd_<name>.c
 * and uses only the public API (hetsage.h). */
#include <stdio.h>
#include <string.h>

#include "cli.h"

static int cmd_version(int argc, char **argv) {
  (void)argc;
  (void)argv;
  printf("hetsage %s\n", hs_version());
  return 0;
}

static hs_settings settings;

const hs_settings *cli_settings(void) { return &settings; }

static const cli_command commands[] = {
    {"info", "list OpenCL platforms, devices and the host topology", cmd_info},
    {"place", "place the sampler and trainer on this board, and say why", cmd_place},
    {"train", "train GraphSAGE, GCN or GAT (default: GraphSAGE on the bundled Cora)", cmd_train},
    {"eval", "accuracy of a saved model on a split", cmd_eval},
    {"predict", "predict the class of vertices with a saved model", cmd_predict},
    {"embed", "every vertex's hidden representation from a saved model, as .npy", cmd_embed},
    {"bringup", "check every kernel on every device of this board against its reference",
     cmd_bringup},
    {"bench", "the same workloads on every device, each beside its same-run limit", cmd_bench},
    {"kernels", "the OpenCL programs: sources for offline compilers, prebuilt bundles",
     cmd_kernels},
    {"version", "print the version", cmd_version},
    {"convert", "import a published graph format into a native dataset", cmd_convert},
    {"generate", "generate a synthetic dataset (R-MAT, SBM)", cmd_generate},
    {"stats", "describe a native dataset", cmd_stats},
};

static void usage(FILE *f) {
  fprintf(f,
          "usage: hetsage <command> [options]\n"
          "\n"
          "GNN training (GraphSAGE, GCN, GAT) by neighbour sampling on heterogeneous OpenCL "
          "boards.\n\ncommands:\n");
  for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
    fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].summary);
  fprintf(f, "\nRun 'hetsage <command> --help' for a command's options.\n");
}

int main(int argc, char **argv) {
  /* OpenBLAS on the kernel set this CPU runs best where it fell back to an older one. */
  hs_blas_reexec(argv);
  /* A bad HETSAGE_* variable stops every command before it starts. */
  hs_settings_init(&settings);
  hs_status st = hs_settings_from_env(&settings);
  if (st == HS_OK) st = hs_log_enable(settings.debug);
  if (st != HS_OK) {
    fprintf(stderr, "hetsage: %s\n", hs_last_error());
    return 2;
  }
  if (argc < 2) {
    usage(stderr);
    return 2;
  }
  if (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0 ||
      strcmp(argv[1], "help") == 0) {
    usage(stdout);
    return cli_exit("help", 0);
  }
  if (strcmp(argv[1], "--version") == 0) return cli_exit("version", cmd_version(0, NULL));
  /* Every command's standard output is flushed and checked on the way out:
   * a full disk or a closed pipe is a failure, not a silent success. */
  for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
    if (strcmp(argv[1], commands[i].name) == 0)
      return cli_exit(commands[i].name, commands[i].run(argc - 1, argv + 1));
  fprintf(stderr, "hetsage: unknown command '%s'\n", argv[1]);
  usage(stderr);
  return 2;
}
