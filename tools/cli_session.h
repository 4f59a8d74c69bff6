/* Options shared by the commands that build a training session (train,
 * eval, predict): dataset, board, model and sampling flags. */
#ifndef HS_CLI_SESSION_H
#define HS_CLI_SESSION_H

#include "cli.h"

typedef struct cli_session_args {
  const char *dataset; /* NULL: the bundled Cora */
  hs_session_config cfg;
  bool fanouts_set, layers_set;
  bool model_set; /* --model given: a checkpoint of another model is refused */
  int thresholds_set; /* values --threshold gave (1: every layer's) */
} cli_session_args;

void cli_session_args_init(cli_session_args *a);

/* Consume argv[*i] (and its value) if it is a session option. Returns 1 if
 * consumed, 0 if not a session option, -1 on a bad value (message printed). */
int cli_session_arg(const char *cmd, cli_session_args *a, int argc, char **argv, int *i);

/* The help text of the session options. */
void cli_session_usage(FILE *f);

/* Open the runtime and the dataset (importing the bundled Cora when no
 * dataset is named) and create the session. On failure prints why and
 * returns non-zero (the exit status). */
int cli_session_open(const char *cmd, cli_session_args *a, hs_runtime **rt, hs_dataset **ds,
                     hs_session **s);
void cli_session_close(hs_runtime *rt, hs_dataset *ds, hs_session *s);

#endif
