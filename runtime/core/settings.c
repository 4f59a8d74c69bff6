/* Settings (hetsage/settings.h): the only place that reads the
 * environment. Every HETSAGE_* variable is one row of the table below,
 * with the field it sets and what it accepts. */
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "board/hs_board.h"
#include "gemm.h"
#include "hetsage/runtime.h"
#include "hetsage/settings.h"
#include "hs_base.h"
#include "hs_settings.h"

extern char **environ;

_Static_assert((int)HS_GEMM_PROVIDER_CBLAS == (int)HS_GEMM_CBLAS &&
                   (int)HS_GEMM_PROVIDER_CLBLAST == (int)HS_GEMM_CLBLAST &&
                   (int)HS_GEMM_PROVIDER_BUILTIN == (int)HS_GEMM_BUILTIN,
               "public GEMM providers are the device layer's kinds");

const char *hs_full_inference_name(hs_full_inference f) {
  switch (f) {
    case HS_FULL_INFERENCE_AUTO: return "auto";
    case HS_FULL_INFERENCE_LAYERWISE: return "layerwise";
    case HS_FULL_INFERENCE_FIELDS: return "fields";
  }
  return "unknown";
}

const char *hs_gemm_provider_name(hs_gemm_provider g) {
  return hs__gemm_kind_name((hs_gemm_kind)g);
}

static const char *transfer_name(int v) { return hs_transfer_name((hs_transfer)v); }
static const char *pages_name(int v) { return hs_feature_pages_name((hs_feature_pages)v); }
static const char *inference_name(int v) { return hs_full_inference_name((hs_full_inference)v); }
static const char *gemm_name(int v) { return hs_gemm_provider_name((hs_gemm_provider)v); }
static const char *inject_name(int v) { return v == 0 ? "" : v == 1 ? "gather" : "unknown"; }

typedef enum kind {
  K_TEXT,   /* any non-empty string */
  K_LOG,    /* log categories */
  K_SIZE,   /* bytes with an optional suffix */
  K_ENUM,   /* one of names(0..max); 0 is "auto" (unset) */
  K_INJECT, /* a fault-injection name */
  K_COUNT,  /* an int in 1..max; 0 is unset */
} kind;

typedef struct var {
  const char *name;
  kind k;
  size_t off;
  const char *what; /* the field, for API errors */
  const char *(*names)(int);
  int max;
} var;

#define F(f) offsetof(hs_settings, f), #f
static const var vars[] = {
    {"HETSAGE_DEBUG", K_LOG, F(debug), NULL, 0},
    {"HETSAGE_CACHE_DIR", K_TEXT, F(cache_dir), NULL, 0},
    {"HETSAGE_BOARDS_DIR", K_TEXT, F(boards_dir), NULL, 0},
    {"HETSAGE_MAX_ALLOC", K_SIZE, F(max_alloc), NULL, 0},
    {"HETSAGE_GEMM", K_ENUM, F(gemm), gemm_name, HS_GEMM_PROVIDER_BUILTIN},
    {"HETSAGE_SAMPLER", K_TEXT, F(sampler), NULL, 0},
    {"HETSAGE_TRAINER", K_TEXT, F(trainer), NULL, 0},
    {"HETSAGE_TRANSFER", K_ENUM, F(transfer), transfer_name, HS_TRANSFER_DEVICE},
    {"HETSAGE_FEATURE_PAGES", K_ENUM, F(feature_pages), pages_name, HS_FEATURE_PAGES_HUGE},
    {"HETSAGE_FULL_INFERENCE", K_ENUM, F(full_inference), inference_name,
     HS_FULL_INFERENCE_FIELDS},
    {"HETSAGE_BRINGUP_INJECT", K_INJECT, F(bringup_inject), inject_name, 1},
    {"HETSAGE_BENCH_DIR", K_TEXT, F(bench_dir), NULL, 0},
    {"HETSAGE_GEMM_THREADS", K_COUNT, F(gemm_threads), NULL, 4096},
    {"HS_PEER_PYTHON", K_TEXT, F(peer_python), NULL, 0},
};
#undef F

void hs_settings_init_sized(hs_settings *s, size_t struct_size) {
  hs_settings z;
  memset(&z, 0, sizeof z);
  z.struct_size = sizeof z;
  hs__sized_init(s, struct_size, &z, sizeof z);
}

static bool is_set(const hs_settings *s, const var *v) {
  const char *p = (const char *)s + v->off;
  switch (v->k) {
    case K_SIZE: return *(const uint64_t *)(const void *)p != 0;
    case K_ENUM:
    case K_COUNT: return *(const int *)(const void *)p != 0;
    default: return *(const char *const *)(const void *)p != NULL;
  }
}

/* "a, b or c" of names(from..max). */
static void accepted(const var *v, int from, char *buf, size_t len) {
  buf[0] = '\0';
  for (int i = from; i <= v->max; i++)
    snprintf(buf + strlen(buf), len - strlen(buf), "%s%s", i == from ? "" : i == v->max ? " or " : ", ",
             v->names(i));
}

/* Parse `value` of variable `v` (`who` names it in messages) into `s`. */
static hs_status parse(const var *v, const char *who, const char *value, hs_settings *s) {
  char list[160];
  char *p = (char *)s + v->off;
  switch (v->k) {
    case K_TEXT:
      *(const char **)(void *)p = value;
      return HS_OK;
    case K_LOG: {
      unsigned mask;
      if (!hs__log_parse(value, &mask, list, sizeof list))
        return hs__fail(HS_ERR_INVALID_ARG, "%s '%s': %s", who, value, list);
      *(const char **)(void *)p = value;
      return HS_OK;
    }
    case K_SIZE: {
      int64_t bytes;
      if (!hs__parse_size(value, &bytes) || bytes <= 0)
        return hs__fail(HS_ERR_INVALID_ARG,
                        "%s '%s': expected a size in bytes above 0, with an optional K, M, G "
                        "or T suffix (4096, 512M, 2G)",
                        who, value);
      *(uint64_t *)(void *)p = (uint64_t)bytes;
      return HS_OK;
    }
    case K_ENUM:
      for (int i = 0; i <= v->max; i++)
        if (strcmp(value, v->names(i)) == 0) {
          *(int *)(void *)p = i;
          return HS_OK;
        }
      accepted(v, 0, list, sizeof list);
      return hs__fail(HS_ERR_INVALID_ARG, "%s '%s': expected %s", who, value, list);
    case K_COUNT: {
      char *end;
      long n = strtol(value, &end, 10);
      if (end == value || *end || n < 1 || n > v->max)
        return hs__fail(HS_ERR_INVALID_ARG, "%s '%s': expected a count, 1..%d", who, value,
                        v->max);
      *(int *)(void *)p = (int)n;
      return HS_OK;
    }
    case K_INJECT:
      if (strcmp(value, "gather") == 0) {
        *(const char **)(void *)p = value;
        return HS_OK;
      }
      return hs__fail(HS_ERR_INVALID_ARG,
                      "%s '%s': expected gather (the only kernel with a faulty variant)", who,
                      value);
  }
  return hs__fail(HS_ERR_INVALID_ARG, "%s: internal error", who);
}

static const var *find_var(const char *name, size_t len) {
  for (size_t i = 0; i < HS_ARRAY_LEN(vars); i++)
    if (strlen(vars[i].name) == len && memcmp(vars[i].name, name, len) == 0) return &vars[i];
  return NULL;
}

hs_status hs_settings_from_env(hs_settings *user) {
  if (!user) return hs__fail(HS_ERR_INVALID_ARG, "hs_settings_from_env: NULL settings");
  hs_settings s;
  hs_settings_init(&s);
  hs_status st = hs__sized_in(&s, sizeof s, user, "hs_settings");
  if (st != HS_OK) return st;
  /* Every HETSAGE_* variable must be one of ours: a misspelt name would
   * otherwise be silently without effect. */
  for (char **e = environ; e && *e; e++) {
    if (strncmp(*e, "HETSAGE_", 8) != 0) continue;
    const char *eq = strchr(*e, '=');
    size_t len = eq ? (size_t)(eq - *e) : strlen(*e);
    if (!find_var(*e, len)) {
      char known[512] = "";
      for (size_t i = 0; i < HS_ARRAY_LEN(vars); i++)
        snprintf(known + strlen(known), sizeof known - strlen(known), "%s%s", i ? ", " : "",
                 vars[i].name);
      return hs__fail(HS_ERR_INVALID_ARG, "unknown environment variable %.*s (hetsage reads %s)",
                      (int)len, *e, known);
    }
  }
  for (size_t i = 0; i < HS_ARRAY_LEN(vars); i++) {
    const var *v = &vars[i];
    const char *value = getenv(v->name);
    if (!value || !*value) continue;
    /* Every value is checked; one the API has set already stays. */
    hs_settings scratch = s;
    if ((st = parse(v, v->name, value, &scratch)) != HS_OK) return st;
    if (!is_set(&s, v)) s = scratch;
  }
  return hs__sized_out(user, &s, sizeof s, "hs_settings");
}

hs_status hs_settings_check(const hs_settings *user) {
  if (!user) return hs__fail(HS_ERR_INVALID_ARG, "hs_settings_check: NULL settings");
  hs_settings s;
  hs_settings_init(&s);
  hs_status st = hs__sized_in(&s, sizeof s, user, "hs_settings");
  if (st != HS_OK) return st;
  char who[64], list[160];
  for (size_t i = 0; i < HS_ARRAY_LEN(vars); i++) {
    const var *v = &vars[i];
    snprintf(who, sizeof who, "hs_settings.%s", v->what);
    const char *p = (const char *)&s + v->off;
    if (v->k == K_ENUM) {
      int e = *(const int *)(const void *)p;
      if (e < 0 || e > v->max) {
        accepted(v, 0, list, sizeof list);
        return hs__fail(HS_ERR_INVALID_ARG, "%s %d: expected %s", who, e, list);
      }
      continue;
    }
    if (v->k == K_SIZE) continue;
    if (v->k == K_COUNT) {
      int n = *(const int *)(const void *)p;
      if (n < 0 || n > v->max)
        return hs__fail(HS_ERR_INVALID_ARG, "%s %d: expected 0 (unset) or 1..%d", who, n,
                        v->max);
      continue;
    }
    const char *str = *(const char *const *)(const void *)p;
    if (!str) continue;
    if (v->k == K_TEXT && !*str)
      return hs__fail(HS_ERR_INVALID_ARG, "%s: empty (NULL leaves it unset)", who);
    if (v->k == K_LOG || (v->k == K_INJECT && *str))
      if ((st = parse(v, who, str, &s)) != HS_OK) return st;
  }
  return HS_OK;
}

hs_status hs_log_enable(const char *categories) {
  unsigned mask = 0;
  char why[160];
  if (categories && !hs__log_parse(categories, &mask, why, sizeof why))
    return hs__fail(HS_ERR_INVALID_ARG, "log categories '%s': %s", categories, why);
  hs__log_set_mask(mask);
  return HS_OK;
}

bool hs__settings_default_cache_dir(char *buf, size_t len) {
  const char *xdg = getenv("XDG_CACHE_HOME");
  const char *home = getenv("HOME");
  int n;
  if (xdg && *xdg) n = snprintf(buf, len, "%s/hetsage", xdg);
  else if (home && *home) n = snprintf(buf, len, "%s/.cache/hetsage", home);
  else return false;
  return n > 0 && (size_t)n < len;
}

const char *hs__settings_icd_vendors_dir(void) {
  /* The ICD loader's own variable: read here so that the environment is
   * read in one place. */
  const char *dir = getenv("OCL_ICD_VENDORS");
  return dir && *dir ? dir : "/etc/OpenCL/vendors";
}

int hs__settings_launcher_size(void) {
  /* Launchers' variables, read here so that the environment is read in one
   * place (a build without MPI refuses to run as one of several). */
  static const char *const launcher_vars[] = {"PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "PMIX_SIZE",
                                              "MPI_LOCALNRANKS", "SLURM_NTASKS"};
  for (size_t i = 0; i < sizeof launcher_vars / sizeof launcher_vars[0]; i++) {
    const char *v = getenv(launcher_vars[i]);
    if (v && atoi(v) > 1) return atoi(v);
  }
  return 1;
}

void hs__settings_pmi_endpoints(int *fd, int *port) {
  *fd = -1;
  *port = -1;
  const char *f = getenv("PMI_FD");
  if (f && *f) {
    char *end;
    long v = strtol(f, &end, 10);
    if (*end == '\0' && v >= 0 && v <= INT_MAX) *fd = (int)v;
  }
  const char *p = getenv("PMI_PORT");
  const char *colon = p ? strrchr(p, ':') : NULL;
  if (colon) {
    char *end;
    long v = strtol(colon + 1, &end, 10);
    if (end != colon + 1 && *end == '\0' && v > 0 && v < 65536) *port = (int)v;
  }
}

/* ---- OpenBLAS's kernel set ---------------------------------------------------- */

const char *hs_blas_kernels(void) { return hs__gemm_cblas_core(); }

const char *hs_blas_kernels_suggested(void) { return hs__gemm_cblas_core_suggested(); }

/* OPENBLAS_CORETYPE is OpenBLAS's variable, read here only to leave a
 * value the user set alone. */
void hs_blas_reexec(char **argv) {
  const char *set = hs__gemm_cblas_core_suggested();
  if (!set || !argv || !argv[0] || getenv("OPENBLAS_CORETYPE")) return;
  /* The program's own path, so that it keeps its name in ps and top (a
   * program executed as /proc/self/exe is named "exe"). */
  char self[4096];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0 || (size_t)n >= sizeof self - 1) return;
  self[n] = '\0';
  if (setenv("OPENBLAS_CORETYPE", set, 1) != 0) return;
  execv(self, argv);
  /* The exec failed: go on as this process is, the environment as it was. */
  unsetenv("OPENBLAS_CORETYPE");
}
