#include "cli.h"
int cmd_generate(int argc, char **argv) {
  (void)argc;
  (void)argv;
  return cli_usage_error("generate", "not yet");
}
