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
  char path[1024]; /* the dataset opened (set by cli_session_open) */
  unsigned set;    /* CLI_SET_* bits: the options given on the command line */
  int thresholds_set; /* values --threshold gave (1: every layer's) */
} cli_session_args;

/* Options a checkpoint records (see hs_session_save). */
enum {
  CLI_SET_FANOUTS = 1u << 0,
  CLI_SET_BATCH = 1u << 1,
  CLI_SET_HIDDEN = 1u << 2,
  CLI_SET_DROPOUT = 1u << 3,
  CLI_SET_OPTIMIZER = 1u << 4,
  CLI_SET_LR = 1u << 5,
  CLI_SET_WEIGHT_DECAY = 1u << 6,
  CLI_SET_SEED = 1u << 7,
  CLI_SET_MODEL = 1u << 8,
  CLI_SET_HEADS = 1u << 9,
  CLI_SET_MEMORY_BUDGET = 1u << 10,
  CLI_SET_SAMPLING = 1u << 11,
  CLI_SET_REPLACE = 1u << 12,
  CLI_SET_VERTEX_BUDGET = 1u << 13,
  CLI_SET_THRESHOLD = 1u << 14,
  CLI_SET_GEMM_THREADS = 1u << 15,
};

void cli_session_args_init(cli_session_args *a);

/* Consume argv[*i] (and its value) if it is a session option. Returns 1 if
 * consumed, 0 if not a session option, -1 on a bad value (message printed). */
int cli_session_arg(const char *cmd, cli_session_args *a, int argc, char **argv, int *i);

/* The help text of the session options. */
void cli_session_usage(FILE *f, bool training);

/* Open the runtime and the dataset (importing the bundled Cora when no
 * dataset is named) and create the session. On failure prints why and
 * returns non-zero (the exit status). */
int cli_session_open(const char *cmd, cli_session_args *a, hs_runtime **rt, hs_dataset **ds,
                     hs_session **s);
void cli_session_close(hs_runtime *rt, hs_dataset *ds, hs_session *s);

/* Take the options a checkpoint records into a->cfg. To resume its run
 * (`resume`), an option given on the command line that differs from the
 * checkpoint's is refused (a usage error naming both values and returning
 * 2), except --lr when `new_lr` (then said on stderr); otherwise (eval,
 * predict) an option given wins. Returns 0, or the exit status after
 * printing why. */
int cli_session_from_checkpoint(const char *cmd, cli_session_args *a, const char *path,
                                bool resume, bool new_lr);

#endif
