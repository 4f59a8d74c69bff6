/* Shared helpers of the hetsage command-line tool: argument parsing,
 * JSON output, error reporting. Tools include only hetsage.h. */
#ifndef HS_CLI_H
#define HS_CLI_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "hetsage.h"
#include "hetsage/bench.h"
#include "hetsage/bringup.h"
#include "hetsage/harness.h"

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
/* SIGINT and SIGTERM set *flag instead of killing the process, so that
 * a long call given the flag as its stop flag cleans up and returns
 * HS_ERR_INTERRUPTED; the command then exits with 130. */
void cli_catch_stop(volatile sig_atomic_t *flag);

/* True if argv has -h/--help. */
bool cli_wants_help(int argc, char **argv);

/* Strict number parsing: the whole string (no white space), in range of
 * the type; doubles must be finite. */
bool cli_parse_u64(const char *s, uint64_t *out);
bool cli_parse_i64(const char *s, int64_t *out);
bool cli_parse_double(const char *s, double *out);
/* Sizes with an optional K/M/G/T suffix (powers of 1024), e.g. "512M". */
bool cli_parse_size(const char *s, uint64_t *out);

/* Option values, one rule for every command: a value that does not parse
 * or is out of range is a usage error naming the option, the value and the
 * accepted range ("--lr '0': expected a number in (0, 100]"). They return
 * false after printing it. Integers are in [lo, hi]; numbers in the
 * interval whose ends are open where lo_open / hi_open say so. */
bool cli_opt_int(const char *cmd, const char *opt, const char *v, int64_t lo, int64_t hi,
                 int64_t *out);
bool cli_opt_u64(const char *cmd, const char *opt, const char *v, uint64_t lo, uint64_t hi,
                 uint64_t *out);
bool cli_opt_number(const char *cmd, const char *opt, const char *v, double lo, bool lo_open,
                    double hi, bool hi_open, double *out);
/* One of `names` (n of them): *out receives its index. */
bool cli_opt_choice(const char *cmd, const char *opt, const char *v, const char *const *names,
                    int n, int *out);

/* Comma-separated lists, strictly: every item non-empty (no leading,
 * trailing or doubled comma). Calls fn for each item in order; stops at
 * the first false. Returns the item count, or -1 for an empty list or
 * item, or when fn returned false. */
int cli_list_each(const char *s, bool (*fn)(void *ctx, const char *item, int index), void *ctx);

/* The list options, parsed without printing (the fuzzers call them):
 * fanouts "25,10" (each -1 or 1..HS_MAX_FANOUT, at most `cap` of them;
 * returns the count, -1 when malformed) and vertex ids "1,2,3" (each
 * 0..2^31-1; a new array in *ids, free it; false when malformed or out of
 * memory). */
int cli_parse_fanouts(const char *s, int32_t *out, int cap);
bool cli_parse_id_list(const char *s, int64_t **ids, int64_t *n);

/* A small input file the command reads on its own (meta.json, best.json),
 * opened without blocking: NULL (errno set; ENOENT when absent) unless it
 * is a regular file, so that a FIFO in its place cannot hang the command. */
FILE *cli_fopen_regular(const char *path);

/* Output files. Every write a command makes is checked: a write error
 * (a full disk, a closed pipe) makes the command fail. cli_file_check
 * flushes and reports a stream error once; cli_file_close does so and
 * closes. Both print "hetsage CMD: writing PATH: why" and return false on
 * failure. */
bool cli_file_check(const char *cmd, FILE *f, const char *path);
bool cli_file_close(const char *cmd, FILE *f, const char *path);
/* An output file that can be written (it, or a new one in its folder),
 * said at the start of a run rather than after its first epoch; false
 * (said, naming `opt`) if not. */
bool cli_writable(const char *cmd, const char *opt, const char *path);
/* The folder that holds `path` (".", "/" or the part before its last '/')
 * into dir[cap]. */
void cli_parent_dir(const char *path, char *dir, size_t cap);
/* Remove the files that exist of paths[0..n) (e.g. an earlier run's
 * checkpoints under --force); false (said, naming `opt`) on the first that
 * cannot be. */
bool cli_remove_files(const char *cmd, const char *opt, const char *const *paths, int n);
/* DIR/best.json: the validation figure `key` (accuracy, AUC) and epoch of
 * DIR/best.ckpt, so that a resumed run replaces best.ckpt only with a
 * better model. Written beside it (temporary, then renamed; false after
 * saying why); read back on --resume (-1 when absent or unreadable). */
bool cli_best_write(const char *cmd, const char *dir, const char *key, double valid,
                    int64_t epoch);
double cli_best_read(const char *dir, const char *key);
/* The exit status of a command after flushing and closing standard
 * output: `rc`, or 1 when rc was 0 and standard output could not be
 * written. */
int cli_exit(const char *cmd, int rc);

/* Subcommands (tools/cmd_<name>.c). */
int cmd_info(int argc, char **argv);
int cmd_place(int argc, char **argv);

/* Minimal JSON writer: strings are escaped. */
void cli_json_string(FILE *f, const char *s);
/* A number with `digits` decimals ("%.*f"), or, when digits < 0, -digits
 * significant digits ("%.*g"); null when it is NaN or infinite, which JSON
 * has no numbers for. */
void cli_json_number(FILE *f, double x, int digits);

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
