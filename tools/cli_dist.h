/* The distributed options of the commands that train (hetsage/dist.h):
 * --distributed and how the ranks combine their work. */
#ifndef HS_CLI_DIST_H
#define HS_CLI_DIST_H

#include "cli.h"

typedef struct cli_dist_args {
  bool distributed;
  bool mode_options; /* a distributed option was given */
  hs_dist_config cfg;
} cli_dist_args;

void cli_dist_args_init(cli_dist_args *d);

/* Consume argv[*i] (and its value) if it is a distributed option. Returns
 * 1 if consumed, 0 if not one, -1 on a bad value (message printed). */
int cli_dist_arg(const char *cmd, cli_dist_args *d, int argc, char **argv, int *i);

void cli_dist_usage(FILE *f);

/* With --distributed: join the world (MPI) and put it and the options in
 * `cfg`; *world is NULL otherwise. Returns non-zero (the exit status) with
 * a message on failure; distributed options without --distributed are a
 * usage error. */
int cli_dist_start(const char *cmd, cli_dist_args *d, int *argc, char ***argv,
                   hs_session_config *cfg, hs_world **world);

/* Whether this process prints progress and results: rank 0, or no world. */
bool cli_dist_root(const hs_world *world);

/* Print text (lines) to f, each line prefixed "[rank R] " in a world of
 * several ranks (their outputs interleave). */
void cli_dist_print(FILE *f, const hs_world *world, const char *text);

/* After a failure on this rank: end every rank (they would wait for it). */
void cli_dist_fail(hs_world *world);

/* The "dist" member of an epoch's stats line (rank 0 of a distributed
 * session; nothing otherwise): every rank's steps, times and bytes. */
void cli_dist_stats_json(FILE *f, const hs_session *s, const hs_epoch_stats *st);

#endif
