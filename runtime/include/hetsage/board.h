/* hetsage — board profiles and role placement.
 *
 * A board profile (boards/<name>.ini, documented in boards/README.md) says
 * which devices a board is expected to have, where the sampler and trainer
 * roles go, memory budgets, the pipeline mode, cache sizes and prebuilt
 * kernel binaries. Placement combines a profile with a device inventory and
 * a dataset's footprint into a plan, and gives a human-readable reason for
 * every choice it makes. Placement is a pure function of its inputs: it
 * touches no device, so it can be run on inventories that are not present.
 *
 * Precedence of settings: API > command-line flags > HETSAGE_* environment
 * (hetsage/settings.h) > board profile > built-in defaults. Role overrides
 * (flags, settings) travel in hs_placement_request. */
#ifndef HETSAGE_BOARD_H
#define HETSAGE_BOARD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hetsage/device.h"
#include "hetsage/settings.h"
#include "hetsage/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- profiles ------------------------------------------------------------ */

typedef struct hs_board_profile hs_board_profile;

/* The profile used when none is named. */
#define HS_BOARD_DEFAULT "generic-cpu"

/* Load a profile by name or path.
 *
 * `name_or_path` NULL or "" means HS_BOARD_DEFAULT. A value containing '/'
 * or ending in ".ini" is a file path; anything else is a name looked up as
 * <dir>/<name>.ini in, in order: every folder of `dirs` (colon-separated;
 * NULL: none; the runtime passes its boards_dir setting,
 * HETSAGE_BOARDS_DIR), the boards/ folder of the source tree the library
 * was built from, and <datadir>/hetsage/boards of the installation.
 *
 * On success *out owns the profile (free with hs_board_profile_free).
 * Errors: HS_ERR_NOT_FOUND (no such name; the detail lists the folders
 * searched), HS_ERR_IO (unreadable file), HS_ERR_PROFILE (the detail names
 * the file, the line and the key or section at fault), HS_ERR_NOMEM,
 * HS_ERR_INVALID_ARG (out is NULL). Thread-safe. */
HS_API hs_status hs_board_profile_load_from(const char *dirs, const char *name_or_path,
                                            hs_board_profile **out);
/* The same with no folders of the caller's. */
HS_API hs_status hs_board_profile_load(const char *name_or_path, hs_board_profile **out);

/* Parse a profile held in memory. `origin` names it in error messages
 * (NULL: "<string>"); relative [binaries] paths are resolved against
 * `base_dir` (NULL: the current directory). The text is not kept. Errors as
 * for hs_board_profile_load, without HS_ERR_NOT_FOUND and HS_ERR_IO. */
HS_API hs_status hs_board_profile_parse(const char *text, const char *origin,
                                        const char *base_dir,
                                        hs_board_profile **out);

/* Free a profile; NULL is ignored. */
HS_API void hs_board_profile_free(hs_board_profile *profile);

/* [board] name, [board] description ("" if absent), and the file the
 * profile came from (its origin for parsed strings). The strings live as
 * long as the profile. */
HS_API const char *hs_board_profile_name(const hs_board_profile *profile);
HS_API const char *hs_board_profile_description(
    const hs_board_profile *profile);
HS_API const char *hs_board_profile_path(const hs_board_profile *profile);

/* ---- placement ----------------------------------------------------------- */

typedef enum hs_pipeline_mode {
  HS_PIPELINE_AUTO = 0,    /* threads, or async on boards with <= 2 cores */
  HS_PIPELINE_THREADS = 1, /* one host thread per stage */
  HS_PIPELINE_ASYNC = 2,   /* one host thread drives every stage by events */
  HS_PIPELINE_OFF = 3,     /* one batch at a time, no overlap */
} hs_pipeline_mode;

typedef enum hs_cache_fill {
  HS_CACHE_FILL_FIRST = 0,     /* the first rows fetched fill the cache */
  HS_CACHE_FILL_DEGREE = 1,    /* highest in-degree vertices first */
  HS_CACHE_FILL_PRESAMPLE = 2, /* most sampled in a pre-sampling pass first */
} hs_cache_fill;

/* How sampled blocks reach the trainer. */
typedef enum hs_role_link {
  HS_LINK_HOST = 0,        /* distinct contexts: device -> host -> device */
  HS_LINK_SAME_DEVICE = 1, /* both roles on one device, two queues */
  HS_LINK_SUB_DEVICES = 2, /* two sub-devices of one device, one context */
  HS_LINK_CONTEXT = 3,     /* two devices of one platform, one context */
} hs_role_link;

/* Static names: "auto"/"threads"/"async"/"off", "first"/"degree"/
 * "presample", "host"/"same-device"/"sub-devices"/"context". Never NULL. */
HS_API const char *hs_pipeline_mode_name(hs_pipeline_mode mode);
HS_API const char *hs_cache_fill_name(hs_cache_fill fill);
HS_API const char *hs_role_link_name(hs_role_link link);

/* What placement is asked: hs_placement_request_init, then set what is
 * known. */
typedef struct hs_placement_request {
  size_t struct_size; /* set by hs_placement_request_init */
  /* The inventory: device_count devices, each struct_size bytes after the
   * previous (hs_device_info_init, or as the runtime reports them: see
   * hs_runtime_device); not kept. */
  const hs_device_info *devices;
  int device_count;
  const hs_board_profile *profile; /* NULL: built-in defaults only; not kept */

  /* Dataset footprint in bytes; 0 = unknown (no fit check, no sizing). */
  uint64_t topology_bytes;    /* CSR offsets + neighbour ids (+ weights) */
  uint64_t feature_bytes;     /* the whole feature matrix */
  uint64_t feature_row_bytes; /* one vertex's feature row */

  /* Cores of the host; <= 0: unknown, then taken from the CPU device's
   * compute units, else 1. */
  int host_cores;

  /* Role overrides, stronger than the profile: an inventory index ("1"), a
   * device type ("cpu", "gpu", "accelerator"), a profile device id, or a
   * case-insensitive substring of the device name. NULL: none. `*_source`
   * names where the override came from in reasons and errors ("--sampler",
   * "HETSAGE_SAMPLER"); NULL: "override". */
  const char *sampler;
  const char *sampler_source;
  const char *trainer;
  const char *trainer_source;

  /* The model the trainer runs, as the program registry names its training
   * program ("sage": GraphSAGE-mean); NULL: "sage". Placement checks that a
   * device which does not compile has prebuilt binaries for the programs
   * its role needs, the trainer's training program among them. */
  const char *model;
} hs_placement_request;

HS_API void hs_placement_request_init_sized(hs_placement_request *req, size_t struct_size);
/* Every field zero (NULL, unknown). */
static inline void hs_placement_request_init(hs_placement_request *req) {
  hs_placement_request_init_sized(req, sizeof *req);
}

/* Fill the role overrides that are still NULL from the sampler and trainer
 * settings (HETSAGE_SAMPLER, HETSAGE_TRAINER; sources set to those names),
 * e.g. hs_runtime_settings(rt). Set command-line flags first, then call
 * this: flags win over the settings. The strings are borrowed from
 * `settings`. NULL settings: nothing. */
HS_API void hs_placement_request_settings(hs_placement_request *req, const hs_settings *settings);

/* One role's place. Embedded in hs_placement: never changes (see
 * hetsage/version.h); what a later release adds goes to hs_placement. */
typedef struct hs_role_plan {
  int device;            /* inventory index */
  char profile_id[32];   /* the profile's device id for it, "" if none */
  uint32_t cores;        /* > 0: a sub-device of this many compute units;
                            0: the whole device */
  uint64_t budget_bytes; /* device memory this role may use */
  const char *binary;    /* the profile's bundle of prebuilt programs for
                            the device ([binaries] <id>), NULL: none (programs
                            named one by one are listed in the reasons);
                            owned by the plan */
  char selector[48];     /* the device's stable name ("pocl:0"; see
                            hs_device_info.selector) */
  bool simulator;        /* the device is a simulator (hs_device_info) */
} hs_role_plan;

/* Handed out as an array: never changes. */
typedef struct hs_placement_reason {
  const char *topic; /* "sampler", "trainer", "link", "split", "gather",
                        "pipeline", "memory", "cache", "zero-copy" */
  const char *text;  /* one sentence with the numbers behind the choice */
} hs_placement_reason;

/* A placement plan, owned by the library (it grows only at its end).
 * Every field is read-only for the caller. */
typedef struct hs_placement {
  char board[64]; /* profile name, "defaults" without a profile */
  hs_role_plan sampler;
  hs_role_plan trainer;
  hs_role_link link;
  bool shared_context; /* link != HS_LINK_HOST: blocks go device to device */
  bool zero_copy;      /* staging buffers mapped, not copied */

  int host_cores;          /* as resolved */
  int host_reserved_cores; /* cores kept off CPU sub-devices for host
                              threads; 0: host threads share cores */
  int gather_threads;

  hs_pipeline_mode pipeline; /* never HS_PIPELINE_AUTO */
  int depth;                 /* batch slots in flight */

  uint64_t cache_trainer_rows; /* feature rows cached on the trainer */
  uint64_t cache_host_bytes;   /* host cache in front of the slow tier */
  hs_cache_fill cache_fill;

  uint64_t host_budget_bytes; /* 0: no host budget */

  size_t reason_count;
  const hs_placement_reason *reasons; /* owned by the plan */
} hs_placement;

/* Place the roles. On success *out owns a plan (free with
 * hs_placement_free). The request and everything it points to is only read
 * during the call.
 *
 * Errors: HS_ERR_INVALID_ARG (NULL request/out, negative count),
 * HS_ERR_NO_DEVICE (no available device), HS_ERR_PROFILE (no device
 * matches a required [device.*] rule: the detail names the profile file,
 * the line and the rule), HS_ERR_PLACEMENT (an override names no usable
 * device, the topology fits no candidate, a device without a compiler has
 * no binary, an explicit split or budget does not fit: the detail gives the
 * sizes), HS_ERR_NOMEM. Thread-safe: no shared state. */
HS_API hs_status hs_placement_make(const hs_placement_request *req,
                                   hs_placement **out);

/* Free a plan; NULL is ignored. */
HS_API void hs_placement_free(hs_placement *plan);

/* Write a multi-line description (summary, then one "why" line per reason)
 * into buf, snprintf-style: at most `cap` bytes including the terminating
 * NUL (buf may be NULL when cap is 0). Returns the length the full text
 * needs, without the NUL. */
HS_API size_t hs_placement_describe(const hs_placement *plan, char *buf,
                                    size_t cap);

#ifdef __cplusplus
}
#endif
#endif
