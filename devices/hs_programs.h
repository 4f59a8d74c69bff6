/* The program registry: every OpenCL program hetsage runs, named, with its
 * sources and build options, in one table (programs.c). Modules ask for a
 * program on a device; the registry finds it, in order:
 *
 *   1. in the files the board profile names for the device ([binaries]: one
 *      bundle holding every program, or one binary per program);
 *   2. in the binary cache (hs__program_build);
 *   3. by building the embedded sources, where the device compiles.
 *
 * A device that does not compile (it reports no compiler, or its profile
 * says so) gets its programs from 1 and 2 only; placement refuses such a
 * device for a role whose programs the profile does not provide.
 *
 * Adding a program: one value in hs_prog and one row in the table. */
#ifndef HS_PROGRAMS_H
#define HS_PROGRAMS_H

#include <stdbool.h>
#include <stddef.h>

#include "hs_dev.h"

typedef enum hs_prog {
  HS_PROG_SAMPLE = 0, /* sampling, prefix sums and reindexing: the sampler */
  HS_PROG_GATHER,     /* feature rows from a resident table (trainer cache) */
  HS_PROG_CACHE,      /* the trainer cache's row scatter */
  HS_PROG_TRAIN_SAGE, /* GraphSAGE-mean training: aggregation, activations,
                         loss, optimizers */
  HS_PROG_TRAIN_GCN,  /* GCN training: the shared training kernels and GCN's */
  HS_PROG_TRAIN_GAT,  /* GAT training: the shared training kernels and GAT's */
  HS_PROG_TRAIN_SPARSE, /* the first layer over sparse input rows (any
                           model's first layer) */
  HS_PROG_GEMM,       /* the built-in GEMM provider's tiled kernel */
  HS_PROG_PROBE,      /* random-read and copy probes (bring-up, benchmarks) */
  HS_PROG_SELFTEST,   /* bring-up's self-test and launch latency */
  HS_PROG_TRAIN_CTR,  /* CTR training (LR, DeepFM, DLRM): heads, interactions,
                         per-row gradient sums, and the shared activations,
                         column sums and optimizers */
  HS_PROG_COUNT_
} hs_prog;

/* Who needs a program: the roles placement gives, and bring-up. */
enum {
  HS_PROG_ROLE_SAMPLER = 1,
  HS_PROG_ROLE_TRAINER = 2,
  HS_PROG_ROLE_BRINGUP = 4,
};

typedef struct hs__program_def {
  const char *name;            /* stable: [binaries] keys, bundles, manifests */
  const char *const *sources;  /* embedded cl_kernels/ files, concatenated in
                                  order; NULL-terminated */
  const char *const *kernels;  /* every kernel of a standard build;
                                  NULL-terminated */
  const char *options;         /* build options on every device */
  const char *cpu_options;     /* added on CPU devices */
  /* Speed-ups: options that only make the program faster, added after
   * the above (on every device; on CPU devices). A device whose compiler
   * rejects the program with them gets it built without them, and the
   * caller is told (hs__program_build_fast). */
  const char *speedups;
  const char *cpu_speedups;
  unsigned roles;              /* HS_PROG_ROLE_* bits */
  const char *model;           /* training programs: the model ("sage") the
                                  trainer role needs it for; NULL: any model */
  const char *what;            /* one line for people */
} hs__program_def;

/* The entry of `id` (0 <= id < HS_PROG_COUNT_). */
const hs__program_def *hs__program_def_of(hs_prog id);
/* The program called `name`, or -1. */
int hs__program_find(const char *name);
/* Whether role bits `roles` need program `id` when the trainer runs
 * `model` (NULL: "sage"). */
bool hs__program_needed(hs_prog id, unsigned roles, const char *model);

/* The options of a standard build of `id` on a device like `info`, speed-ups
 * included. */
void hs__program_options(hs_prog id, const hs_device_info *info, char *buf, size_t len);

/* The program's complete source: every embedded file concatenated, each
 * preceded by a #line directive, so that it compiles stand-alone. Owned by
 * the caller (free). */
hs_status hs__program_source(hs_prog id, char **text, size_t *len);

/* What a board profile provides for one device. Strings are borrowed (the
 * owner keeps them alive as long as a device points here). */
typedef struct hs__prog_files {
  bool no_compiler;                 /* the profile says it does not compile */
  const char *bundle;               /* one file holding every program, NULL: none */
  const char *file[HS_PROG_COUNT_]; /* one program's binary, NULL: none */
} hs__prog_files;

/* For a device that does not compile: whether `f` provides every program
 * role bits `roles` need (trainer programs for `model`), opening a bundle
 * to see whether it holds them. HS_ERR_PLACEMENT naming the first program
 * missing (and `dev_name`), or the error reading the bundle; HS_OK for a
 * device that compiles. */
hs_status hs__prog_files_check(const hs__prog_files *f, unsigned roles, const char *model,
                               const char *dev_name);
/* Whether `f` (NULL: nothing) provides program `id`, in a file of its own
 * or in a bundle that holds it. */
bool hs__prog_files_provide(const hs__prog_files *f, hs_prog id);

/* Whether the registry may build sources on `dev`: it reports a compiler
 * and its profile does not say otherwise. */
bool hs__dev_compiles(const hs_dev *dev);

/* A standard build of program `id` for `dev`, from the profile's files,
 * the binary cache or the sources, in that order. Errors: HS_ERR_FORMAT or
 * HS_ERR_IO for a named file that cannot be loaded (the detail names it:
 * a bad prebuilt binary is never passed over), HS_ERR_UNSUPPORTED when the
 * device does not compile and nothing provides the program (the detail
 * names it), HS_ERR_BUILD. */
hs_status hs__program_get(const hs_ctx *ctx, const hs_dev *dev, hs_prog id, cl_program *out);
/* hs__program_get telling how a program built from source was built:
 * note->without_speedups when the device's compiler rejected the speed-ups
 * and the program runs without them (`note` may be NULL). */
hs_status hs__program_get_noted(const hs_ctx *ctx, const hs_dev *dev, hs_prog id,
                                cl_program *out, hs_build_note *note);

/* A build of `id` with `options` instead of the standard ones (test and
 * bring-up variants): from the binary cache or the sources only, since
 * prebuilt files hold standard builds. */
hs_status hs__program_get_variant(const hs_ctx *ctx, const hs_dev *dev, hs_prog id,
                                  const char *options, cl_program *out);

/* Write the binary of a standard build of `id` for `dev` to `path`
 * (atomically): what `[binaries] <device>.<program>` names. */
hs_status hs__program_save(const hs_ctx *ctx, const hs_dev *dev, hs_prog id, const char *path);

/* ---- bundles: one file holding several programs' binaries --------------- */

/* Build every program that role bits `roles` need (trainer programs for
 * `model`, NULL: "sage") for `dev` and write them into one bundle at `path`
 * (atomically). `names` (may be NULL) receives a comma-separated list of
 * the programs written. */
hs_status hs__bundle_build(const hs_ctx *ctx, const hs_dev *dev, unsigned roles,
                           const char *model, const char *path, char *names, size_t names_len);

/* Whether the bundle at `path` holds program `name`: HS_OK with *has set,
 * or the error reading or checking the file (HS_ERR_IO, HS_ERR_FORMAT). */
hs_status hs__bundle_has(const char *path, const char *name, bool *has);

/* Whether `path` starts like a bundle (a plain device binary does not). */
bool hs__bundle_is(const char *path);

#endif
