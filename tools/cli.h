/* Shared helpers of the hetsage command-line tool: argument parsing,
 * JSON output, error reporting. Tools include only hetsage.h. */
#ifndef HS_CLI_H
#define HS_CLI_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "hetsage.h"

typedef struct cli_command {
  const char *name;
  const char *summary;
  int (*run)(int argc, char **argv); /* argv[0] is the command name */
} cli_command;

/* The settings of the environment (HETSAGE_*), read once by main before
 * any command runs. */
const hs_settings *cli_settings(void);

/* Print "hetsage <cmd>: <what>: <status text>: <detail>" to stderr. */
void cli_report(const char *cmd, const char *what, hs_status st);
/* Print a usage error and a hint to run --help; returns 2. */
int cli_usage_error(const char *cmd, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* True if argv has -h/--help. */
bool cli_wants_help(int argc, char **argv);

/* Strict number parsing: whole string, range-checked. */
bool cli_parse_u64(const char *s, uint64_t *out);
bool cli_parse_i64(const char *s, int64_t *out);
bool cli_parse_double(const char *s, double *out);
/* Sizes with an optional K/M/G/T suffix (powers of 1024), e.g. "512M". */
bool cli_parse_size(const char *s, uint64_t *out);

/* Subcommands (tools/cmd_<name>.c). */
int cmd_info(int argc, char **argv);
int cmd_place(int argc, char **argv);

/* Minimal JSON writer: strings are escaped. */
void cli_json_string(FILE *f, const char *s);

/* Subcommands (cmd_<name>.c). */
int cmd_convert(int argc, char **argv);
int cmd_generate(int argc, char **argv);
int cmd_stats(int argc, char **argv);
int cmd_train(int argc, char **argv);
int cmd_eval(int argc, char **argv);
int cmd_predict(int argc, char **argv);
int cmd_embed(int argc, char **argv);
int cmd_bringup(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_kernels(int argc, char **argv);


#endif
