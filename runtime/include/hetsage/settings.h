/* hetsage — settings: everything the HETSAGE_* environment variables set,
 * each with its field here, so that an embedding application can set them
 * by API or keep the environment out altogether.
 *
 * The environment is read in one place: hs_settings_from_env(), which
 * hs_runtime_open() calls unless told not to (HS_RUNTIME_IGNORE_ENV). A
 * value the library does not understand is an error that names the
 * variable and what it accepts, never ignored. Precedence: a field set by
 * the API (hs_runtime_options.settings) wins over the environment, which
 * wins over the built-in default; configurations (hs_session_config) and
 * command-line flags win over both. README.md lists the variables. */
#ifndef HETSAGE_SETTINGS_H
#define HETSAGE_SETTINGS_H

#include <stddef.h>
#include <stdint.h>

#include "hetsage/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* How sampled blocks reach the trainer. */
typedef enum hs_transfer {
  HS_TRANSFER_AUTO = 0,   /* device to device when both roles share a context
                             (sub-devices of one device, two queues on one
                             device, one context over two devices), else host */
  HS_TRANSFER_HOST = 1,   /* read back to the host, written to the trainer */
  HS_TRANSFER_DEVICE = 2, /* device to device; session creation fails with
                             HS_ERR_UNSUPPORTED when the roles' contexts differ */
} hs_transfer;

/* "auto", "host", "device"; never NULL. */
HS_API const char *hs_transfer_name(hs_transfer t);

/* Where the host gathers feature rows from (features held in memory, not
 * through the host tier). */
typedef enum hs_feature_pages {
  HS_FEATURE_PAGES_AUTO = 0, /* HUGE when the features are larger than the
                                last-level cache, the kernel grants huge
                                pages on request, and they take at most half
                                of the memory available; else FILE */
  HS_FEATURE_PAGES_FILE = 1, /* the file mapping of feat.npy (4 KiB pages) */
  HS_FEATURE_PAGES_HUGE = 2, /* a copy on 2 MiB pages (transparent huge pages,
                                madvise): a random row costs a page walk per
                                2 MiB rather than per 4 KiB; where the kernel
                                has none, or the copy would not fit the memory
                                available, the file mapping stays */
} hs_feature_pages;

/* "auto", "file", "huge"; never NULL. */
HS_API const char *hs_feature_pages_name(hs_feature_pages p);

/* How full-neighbour evaluation and prediction run. */
typedef enum hs_full_inference {
  HS_FULL_INFERENCE_AUTO = 0,      /* whichever costs less */
  HS_FULL_INFERENCE_LAYERWISE = 1, /* layer by layer over the whole graph
                                      (where it can: features in memory as
                                      float32, 32-bit edge offsets) */
  HS_FULL_INFERENCE_FIELDS = 2,    /* each chunk's receptive field */
} hs_full_inference;

/* "auto", "layerwise", "fields"; never NULL. */
HS_API const char *hs_full_inference_name(hs_full_inference f);

/* Who computes the trainer's matrix products. */
typedef enum hs_gemm_provider {
  HS_GEMM_PROVIDER_AUTO = 0,    /* CBLAS on CPU devices with native kernels,
                                   else CLBlast, else the built-in kernel */
  HS_GEMM_PROVIDER_CBLAS = 1,   /* OpenBLAS through a native kernel */
  HS_GEMM_PROVIDER_CLBLAST = 2, /* CLBlast */
  HS_GEMM_PROVIDER_BUILTIN = 3, /* the built-in tiled kernel (program "gemm") */
} hs_gemm_provider;

/* "auto", "cblas", "clblast", "builtin"; never NULL. */
HS_API const char *hs_gemm_provider_name(hs_gemm_provider g);

/* Every field's "unset" is NULL, 0 or AUTO: the environment (unless
 * ignored), then the default, decide it. */
typedef struct hs_settings {
  size_t struct_size; /* set by hs_settings_init */
  /* HETSAGE_DEBUG: log categories, comma-separated (device, build, data,
   * sample, train, pipeline, cache, place) or "all"; "" none. Logs go to
   * stderr. Process-wide: see hs_log_enable. */
  const char *debug;
  /* HETSAGE_CACHE_DIR: where built kernel binaries and imported bundled
   * datasets are cached. Unset: $XDG_CACHE_HOME/hetsage, else
   * ~/.cache/hetsage, when the environment is read; with the environment
   * ignored, no binary cache (and no bundled dataset). */
  const char *cache_dir;
  /* HETSAGE_BOARDS_DIR: colon-separated folders searched first for board
   * profiles named without a path. */
  const char *boards_dir;
  /* HETSAGE_MAX_ALLOC: bytes (optional K, M, G, T suffix); device arrays
   * are split at this size when it is below the device's max allocation
   * (tests exercise split buffers with it). 0: the device's. */
  uint64_t max_alloc;
  /* HETSAGE_GEMM: the GEMM provider when a trainer asks for AUTO. */
  hs_gemm_provider gemm;
  /* HETSAGE_SAMPLER, HETSAGE_TRAINER: role overrides for placement (an
   * inventory index, a selector, a type, a profile device id or part of a
   * device name) when a session's configuration names none. */
  const char *sampler;
  const char *trainer;
  /* HETSAGE_TRANSFER: the block path of sessions whose configuration says
   * AUTO. */
  hs_transfer transfer;
  /* HETSAGE_FEATURE_PAGES: the feature pages of sessions whose
   * configuration says AUTO. */
  hs_feature_pages feature_pages;
  /* HETSAGE_FULL_INFERENCE: how full-neighbour evaluation runs. */
  hs_full_inference full_inference;
  /* HETSAGE_BRINGUP_INJECT: "gather" makes bring-up run a deliberately
   * wrong gather kernel (built with -DHS_INJECT_FAULT, never otherwise), to
   * show that it catches one; "" none. */
  const char *bringup_inject;
  /* HETSAGE_BENCH_DIR: where `hetsage bench` finds its peer scripts
   * (peer_sample.py); unset: the source tree's bench/. */
  const char *bench_dir;
  /* HETSAGE_GEMM_THREADS: OpenBLAS threads of a CPU trainer's GEMM when a
   * session's configuration sets none (1..4096; 0: the trainer device's
   * compute units). A fixed count makes the trainer's results independent
   * of the device's compute units (hs_session_config.gemm_threads). */
  int gemm_threads;
  /* HS_PEER_PYTHON: the python that runs `hetsage bench`'s peers (DGL,
   * PyG) and bench_epoch's; unset: python3. (The name is the benchmarks'
   * own, shared with bench/bench_epoch.) */
  const char *peer_python;
} hs_settings;

HS_API void hs_settings_init_sized(hs_settings *s, size_t struct_size);
/* Every field unset; struct_size set. */
static inline void hs_settings_init(hs_settings *s) { hs_settings_init_sized(s, sizeof *s); }

/* Fill the fields of `s` that are still unset from the HETSAGE_*
 * environment variables (an empty variable is unset), checking every
 * HETSAGE_* variable present: an unknown one, or a value that is not one
 * the variable takes, is HS_ERR_INVALID_ARG naming the variable and what
 * it accepts (and `s` is left as it was). Strings point into the
 * environment and stay valid while it is unchanged. */
HS_API hs_status hs_settings_from_env(hs_settings *s);

/* Check the values of `s` as hs_runtime_open does: HS_ERR_INVALID_ARG
 * naming the field and what it accepts. */
HS_API hs_status hs_settings_check(const hs_settings *s);

/* Enable log categories process-wide (the syntax of `debug` above; NULL
 * or "" turns logging off). Logging is the library's only global state.
 * HS_ERR_INVALID_ARG naming an unknown category. */
HS_API hs_status hs_log_enable(const char *categories);

#ifdef __cplusplus
}
#endif
#endif
