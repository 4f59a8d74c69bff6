/* Board profiles inside the library: the parsed form of a board profile file,
 * shared by the parser, placement and (later) bring-up. The meaning of every
 * field is documented with its key in boards/README.md. */
#ifndef HS_BOARD_H
#define HS_BOARD_H

#include <stdbool.h>
#include <stdint.h>

#include "hetsage/board.h"
#include "hs_base.h"
#include "hs_programs.h"

#define HS__AUTO (-1)        /* "auto" for counts, sizes and tri-states */
#define HS__BOARD_ID_MAX 25  /* device ids: up to 24 of [A-Za-z0-9_-] */
#define HS__BOARD_MAX_DEVICES 16
#define HS__BOARD_RULE_MAX 64 /* substring match rules */

/* Peak figures bring-up compares against; 0 = not set. */
typedef struct hs__thresholds {
  double h2d_gbps;
  double d2h_gbps;
  double device_copy_gbps;
  double launch_latency_us; /* an upper bound, unlike the others */
  double sgemm_gflops;
  double random_read_mops;
} hs__thresholds;

typedef struct hs__board_device {
  char id[HS__BOARD_ID_MAX];
  int line;             /* line of the [device.<id>] header */
  int type;             /* hs_device_type, 0 = any */
  char vendor[HS__BOARD_RULE_MAX];   /* substrings; "" = any */
  char name[HS__BOARD_RULE_MAX];
  char platform[HS__BOARD_RULE_MAX];
  bool required;
  int64_t min_memory;   /* HS__AUTO = any */
  int unified_memory;   /* HS__AUTO = any, else 0/1 */
  int compiler;         /* HS__AUTO = as the device reports, else 0/1 */
  char *binary;         /* [binaries] <id>: a bundle, resolved; NULL = none */
  char *program_binary[HS_PROG_COUNT_]; /* [binaries] <id>.<program>, resolved */
  hs__thresholds thresholds; /* [thresholds] <id>.<metric> */
} hs__board_device;

/* Where a key was set, for messages raised after parsing. */
typedef struct hs__board_key {
  char section[HS__BOARD_ID_MAX + 8];
  char key[64];
  int line;
} hs__board_key;

struct hs_board_profile {
  char *path; /* file (or origin label) for messages */
  char *dir;  /* base for relative paths */
  int last_line;

  char name[64];
  char description[256];

  hs__board_device devices[HS__BOARD_MAX_DEVICES];
  int device_count;

  struct {
    char sampler[HS__BOARD_ID_MAX]; /* "" = auto */
    char trainer[HS__BOARD_ID_MAX];
    int gather_threads; /* HS__AUTO or >= 1 */
    int shared_context; /* HS__AUTO or 0/1 */
    bool fallback;
  } roles;

  struct {
    int sampler_cores; /* HS__AUTO or >= 1 */
    int trainer_cores;
    int host_cores;    /* HS__AUTO or >= 0 */
    bool sub_devices;  /* false: roles sharing a CPU use the whole device */
  } split;

  struct {
    int64_t sampler; /* bytes or HS__AUTO */
    int64_t trainer;
    int64_t host;
    int headroom_percent;
    int zero_copy; /* HS__AUTO or 0/1 */
  } memory;

  struct {
    hs_pipeline_mode mode;
    int depth; /* HS__AUTO or 1.. */
  } pipeline;

  struct {
    int64_t trainer_rows; /* HS__AUTO or count */
    int trainer_percent;
    int64_t host_bytes;   /* HS__AUTO or bytes */
    hs_cache_fill fill;
  } cache;

  struct {
    int64_t min_global_memory; /* 0 = none */
    int64_t min_max_alloc;
    int64_t min_local_memory;
    int min_compute_units;
    char extensions[512]; /* space-separated */
    bool sub_devices;
  } require;

  hs__thresholds thresholds; /* for every device, unless overridden */

  hs__board_key *keys; /* every key seen, with its line */
  int key_count;
  int key_cap;
};

/* Line where [section] key was set, 0 if it was not. */
int hs__board_key_line(const hs_board_profile *p, const char *section,
                       const char *key);
/* The device rule with this id, NULL if none. */
const hs__board_device *hs__board_device_find(const hs_board_profile *p,
                                              const char *id);
/* Match the profile's device rules against an inventory as placement
 * does (required rules first, then optional ones; each device to at most
 * one rule) without failing: match[r] receives the inventory index of rule
 * r, or -1 when no device is left for it. HS_ERR_NOMEM only. */
hs_status hs__board_match(const hs_board_profile *p, const hs_device_info *devs, int n,
                          int match[HS__BOARD_MAX_DEVICES]);
/* Whether device `d` (matched by profile rule `bd`, NULL: none) builds
 * kernels: the rule's `compiler` when set; else it reports a compiler and
 * is no accelerator (FPGA bitstreams take hours to build: even a driver
 * that reports a compiler, an emulator, is not used that way on a board). */
bool hs__board_device_compiles(const hs__board_device *bd, const hs_device_info *d);
/* What rule `bd` (NULL: none) provides for the programs of device `d`, for
 * the program registry: paths copied, released with
 * hs__board_prog_files_free. HS_ERR_NOMEM only. */
hs_status hs__board_prog_files(const hs__board_device *bd, const hs_device_info *d,
                               hs__prog_files *out);
void hs__board_prog_files_free(hs__prog_files *f);
/* The first program that role bits `roles` need (trainer programs for
 * `model`) which rule `bd` provides no file for, neither in a bundle nor
 * alone; -1 when none is missing. A bundle is taken to hold every program
 * (hs__bundle_has checks one when it is opened). */
int hs__board_missing_program(const hs__board_device *bd, unsigned roles, const char *model);

/* A copy of profile `p` that owns everything it holds (free with
 * hs_board_profile_free), for a caller that changes a setting of its own
 * (the benchmarks run a board's sessions whole and on sub-devices).
 * HS_ERR_NOMEM only. */
hs_status hs__board_profile_dup(const hs_board_profile *p, hs_board_profile **out);

/* Set every setting to its built-in default (no devices, everything auto).
 * Leaves path, dir and keys alone; the devices must own no binary path. */
void hs__board_defaults(hs_board_profile *p);

/* ---- value syntax shared by profiles and their tests ---------------------- */

/* Strict parsers: the whole string must match. */
bool hs__parse_bool(const char *s, bool *out);
bool hs__parse_int(const char *s, long long min, long long max,
                   long long *out);
/* Bytes with an optional K/M/G/T suffix (powers of 1024; "Ki", "KiB", "KB"
 * accepted), up to INT64_MAX. */
bool hs__parse_size(const char *s, int64_t *out);
bool hs__parse_double(const char *s, double *out);


/* Revise a plan after the fact, where a session's configuration overrides
 * it, so that the plan describes what runs: the reason of `topic` whose
 * text starts with the word(s) `subject` ("depth", "host", "fill") is
 * replaced by the new text, or the text is appended when there is none.
 * The caller updates the plan's fields. HS_ERR_NOMEM only. */
hs_status hs__placement_revise(hs_placement *pl, const char *topic, const char *subject,
                               const char *fmt, ...) HS_PRINTF(4, 5);

#endif
