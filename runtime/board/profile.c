/* Board profile parser. inih does the INI syntax; we feed it lines through
 * a reader callback so that every message can name the line (the packaged
 * inih is built without line numbers in its handler), and we check every
 * section, key and value against the tables below. */
#include <ctype.h>
#include <ini.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "hs_base.h"
#include "hs_board.h"

typedef enum vkind {
  V_STR,       /* text, up to `len` - 1 bytes */
  V_BOOL,      /* true|false (yes|no|on|off|1|0) -> bool */
  V_TRI,       /* auto|any|true|false -> int HS__AUTO/0/1 */
  V_COUNT,     /* auto|integer in [min, max] -> int */
  V_INT,       /* integer in [min, max] -> int */
  V_COUNT64,   /* auto|integer in [min, max] -> int64_t */
  V_SIZE,      /* size -> int64_t */
  V_SIZE_AUTO, /* auto|size -> int64_t */
  V_ENUM,      /* one of `names` -> int */
  V_TYPE,      /* any|cpu|gpu|accelerator|custom -> int */
  V_DEVREF,    /* auto|<device id> -> char[HS__BOARD_ID_MAX], "" = auto */
  V_EXTLIST,   /* extension names, space or comma separated */
  V_GBPS,      /* positive number -> double */
} vkind;

typedef struct key_spec {
  const char *key;
  vkind kind;
  size_t off; /* into the profile, or into hs__board_device for devices */
  size_t len;
  long long min, max;
  const char *const *names;
} key_spec;

static const char *const pipeline_names[] = {"auto", "threads", "async",
                                             "off", NULL};
static const char *const fill_names[] = {"first", "degree", "presample",
                                         NULL};

#define P(f) offsetof(hs_board_profile, f)
#define D(f) offsetof(hs__board_device, f)

static const key_spec board_keys[] = {
    {"name", V_STR, P(name), sizeof(((hs_board_profile *)0)->name), 0, 0, NULL},
    {"description", V_STR, P(description),
     sizeof(((hs_board_profile *)0)->description), 0, 0, NULL},
};
static const key_spec device_keys[] = {
    {"type", V_TYPE, D(type), 0, 0, 0, NULL},
    {"vendor", V_STR, D(vendor), HS__BOARD_RULE_MAX, 0, 0, NULL},
    {"name", V_STR, D(name), HS__BOARD_RULE_MAX, 0, 0, NULL},
    {"platform", V_STR, D(platform), HS__BOARD_RULE_MAX, 0, 0, NULL},
    {"required", V_BOOL, D(required), 0, 0, 0, NULL},
    {"min_memory", V_SIZE, D(min_memory), 0, 0, 0, NULL},
    {"unified_memory", V_TRI, D(unified_memory), 0, 0, 0, NULL},
    {"compiler", V_TRI, D(compiler), 0, 0, 0, NULL},
};
static const key_spec roles_keys[] = {
    {"sampler", V_DEVREF, P(roles.sampler), 0, 0, 0, NULL},
    {"trainer", V_DEVREF, P(roles.trainer), 0, 0, 0, NULL},
    {"gather_threads", V_COUNT, P(roles.gather_threads), 0, 1, 1024, NULL},
    {"shared_context", V_TRI, P(roles.shared_context), 0, 0, 0, NULL},
    {"fallback", V_BOOL, P(roles.fallback), 0, 0, 0, NULL},
};
static const key_spec split_keys[] = {
    {"sampler_cores", V_COUNT, P(split.sampler_cores), 0, 1, 4096, NULL},
    {"trainer_cores", V_COUNT, P(split.trainer_cores), 0, 1, 4096, NULL},
    {"host_cores", V_COUNT, P(split.host_cores), 0, 0, 4096, NULL},
    {"sub_devices", V_BOOL, P(split.sub_devices), 0, 0, 0, NULL},
};
static const key_spec memory_keys[] = {
    {"sampler", V_SIZE_AUTO, P(memory.sampler), 0, 0, 0, NULL},
    {"trainer", V_SIZE_AUTO, P(memory.trainer), 0, 0, 0, NULL},
    {"host", V_SIZE_AUTO, P(memory.host), 0, 0, 0, NULL},
    {"headroom_percent", V_INT, P(memory.headroom_percent), 0, 0, 90, NULL},
    {"zero_copy", V_TRI, P(memory.zero_copy), 0, 0, 0, NULL},
};
static const key_spec pipeline_keys[] = {
    {"mode", V_ENUM, P(pipeline.mode), 0, 0, 0, pipeline_names},
    {"depth", V_COUNT, P(pipeline.depth), 0, 1, 64, NULL},
};
static const key_spec cache_keys[] = {
    {"trainer_rows", V_COUNT64, P(cache.trainer_rows), 0, 0, INT64_MAX, NULL},
    {"trainer_percent", V_INT, P(cache.trainer_percent), 0, 0, 90, NULL},
    {"host_bytes", V_SIZE_AUTO, P(cache.host_bytes), 0, 0, 0, NULL},
    {"fill", V_ENUM, P(cache.fill), 0, 0, 0, fill_names},
};
static const key_spec require_keys[] = {
    {"min_global_memory", V_SIZE, P(require.min_global_memory), 0, 0, 0, NULL},
    {"min_max_alloc", V_SIZE, P(require.min_max_alloc), 0, 0, 0, NULL},
    {"min_local_memory", V_SIZE, P(require.min_local_memory), 0, 0, 0, NULL},
    {"min_compute_units", V_INT, P(require.min_compute_units), 0, 0, 1 << 20,
     NULL},
    {"extensions", V_EXTLIST, P(require.extensions),
     sizeof(((hs_board_profile *)0)->require.extensions), 0, 0, NULL},
    {"sub_devices", V_BOOL, P(require.sub_devices), 0, 0, 0, NULL},
};
/* Offsets into hs__thresholds: [thresholds] applies them to the profile's
 * defaults or, with an "<id>." prefix, to one device. */
#define T(f) offsetof(hs__thresholds, f)
static const key_spec threshold_keys[] = {
    {"h2d_gbps", V_GBPS, T(h2d_gbps), 0, 0, 0, NULL},
    {"d2h_gbps", V_GBPS, T(d2h_gbps), 0, 0, 0, NULL},
    {"device_copy_gbps", V_GBPS, T(device_copy_gbps), 0, 0, 0, NULL},
    {"launch_latency_us", V_GBPS, T(launch_latency_us), 0, 0, 0, NULL},
    {"sgemm_gflops", V_GBPS, T(sgemm_gflops), 0, 0, 0, NULL},
    {"random_read_mops", V_GBPS, T(random_read_mops), 0, 0, 0, NULL},
};
#undef T
#undef P
#undef D

typedef enum section_id {
  S_BOARD, S_ROLES, S_SPLIT, S_MEMORY, S_PIPELINE, S_CACHE, S_REQUIRE,
  S_BINARIES, S_THRESHOLDS, S_FIXED_COUNT_,
  S_DEVICE = S_FIXED_COUNT_, S_UNKNOWN
} section_id;

typedef struct section_spec {
  const char *name;
  const key_spec *keys;
  size_t n_keys;
} section_spec;

#define KEYS(a) a, sizeof a / sizeof a[0]
static const section_spec sections[S_FIXED_COUNT_] = {
    [S_BOARD] = {"board", KEYS(board_keys)},
    [S_ROLES] = {"roles", KEYS(roles_keys)},
    [S_SPLIT] = {"split", KEYS(split_keys)},
    [S_MEMORY] = {"memory", KEYS(memory_keys)},
    [S_PIPELINE] = {"pipeline", KEYS(pipeline_keys)},
    [S_CACHE] = {"cache", KEYS(cache_keys)},
    [S_REQUIRE] = {"require", KEYS(require_keys)},
    [S_BINARIES] = {"binaries", NULL, 0},
    [S_THRESHOLDS] = {"thresholds", KEYS(threshold_keys)},
};
#undef KEYS

typedef struct parse_ctx {
  hs_board_profile *p;
  const char *text;
  size_t pos;
  int line;
  int section_line[S_FIXED_COUNT_]; /* header lines, 0 = absent */
  bool device_seen[HS__BOARD_MAX_DEVICES];
  bool failed;   /* the first error is in hs_last_error() */
  int fail_line; /* its line */
} parse_ctx;

void hs__board_defaults(hs_board_profile *p) {
  memset(&p->name, 0,
         offsetof(hs_board_profile, keys) - offsetof(hs_board_profile, name));
  p->roles.gather_threads = HS__AUTO;
  p->roles.shared_context = HS__AUTO;
  p->roles.fallback = true;
  p->split.sampler_cores = HS__AUTO;
  p->split.trainer_cores = HS__AUTO;
  p->split.host_cores = HS__AUTO;
  p->split.sub_devices = true;
  p->memory.sampler = HS__AUTO;
  p->memory.trainer = HS__AUTO;
  p->memory.host = HS__AUTO;
  p->memory.headroom_percent = 10;
  p->memory.zero_copy = HS__AUTO;
  p->pipeline.mode = HS_PIPELINE_AUTO;
  p->pipeline.depth = HS__AUTO;
  p->cache.trainer_rows = HS__AUTO;
  p->cache.trainer_percent = 50;
  p->cache.host_bytes = HS__AUTO;
  p->cache.fill = HS_CACHE_FILL_FIRST;
}

static bool valid_id(const char *s, size_t n) {
  if (n == 0 || n >= HS__BOARD_ID_MAX) return false;
  for (size_t i = 0; i < n; i++)
    if (!isalnum((unsigned char)s[i]) && s[i] != '_' && s[i] != '-')
      return false;
  return true;
}

/* Next raw line of the text (without its '\n'), leading blanks skipped so
 * that inih never sees an indented line: it would take one for the
 * continuation of the previous value. */
static bool next_line(const char *text, size_t *pos, const char **start,
                      size_t *len) {
  if (!text[*pos]) return false;
  const char *s = text + *pos;
  const char *nl = strchr(s, '\n');
  size_t n = nl ? (size_t)(nl - s) : strlen(s);
  *pos += n + (nl ? 1 : 0);
  while (n && (*s == ' ' || *s == '\t')) {
    s++;
    n--;
  }
  *start = s;
  *len = n;
  return true;
}

/* The name between '[' and ']' of a header line, NULL if not a header. */
static const char *header_name(const char *s, size_t len, size_t *n) {
  if (len < 2 || s[0] != '[') return NULL;
  const char *close = memchr(s, ']', len);
  if (!close) return NULL;
  *n = (size_t)(close - s - 1);
  return s + 1;
}

/* Device sections are created before the main pass, so that [roles] and
 * [binaries] may name devices declared further down. */
static void prescan_devices(parse_ctx *c) {
  size_t pos = 0, len, n;
  const char *s;
  int line = 0;
  while (next_line(c->text, &pos, &s, &len)) {
    line++;
    const char *name = header_name(s, len, &n);
    if (!name || n < 7 || strncmp(name, "device.", 7) != 0) continue;
    if (!valid_id(name + 7, n - 7)) continue;
    hs_board_profile *p = c->p;
    bool dup = false;
    for (int i = 0; i < p->device_count; i++)
      if (strlen(p->devices[i].id) == n - 7 &&
          memcmp(p->devices[i].id, name + 7, n - 7) == 0)
        dup = true;
    if (dup || p->device_count == HS__BOARD_MAX_DEVICES) continue;
    hs__board_device *d = &p->devices[p->device_count++];
    memcpy(d->id, name + 7, n - 7);
    d->line = line;
    d->required = true;
    d->min_memory = HS__AUTO;
    d->unified_memory = HS__AUTO;
    d->compiler = HS__AUTO;
  }
}

static int device_slot(const hs_board_profile *p, const char *id, size_t n) {
  for (int i = 0; i < p->device_count; i++)
    if (strlen(p->devices[i].id) == n && memcmp(p->devices[i].id, id, n) == 0)
      return i;
  return -1;
}

const hs__board_device *hs__board_device_find(const hs_board_profile *p,
                                              const char *id) {
  int i = device_slot(p, id, strlen(id));
  return i < 0 ? NULL : &p->devices[i];
}

static bool fail_at(parse_ctx *c, int line, const char *fmt, ...)
    HS_PRINTF(3, 4);
static bool fail_at(parse_ctx *c, int line, const char *fmt, ...) {
  if (c->failed) return false;
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  hs__fail(HS_ERR_PROFILE, "%s:%d: %s", c->p->path, line, msg);
  c->failed = true;
  c->fail_line = line;
  return false;
}

/* A section header, checked as the reader hands its line to inih. */
static bool check_header(parse_ctx *c, const char *name, size_t n) {
  for (int s = 0; s < S_FIXED_COUNT_; s++) {
    if (strlen(sections[s].name) != n || memcmp(sections[s].name, name, n))
      continue;
    if (c->section_line[s])
      return fail_at(c, c->line, "duplicate section [%s] (first at line %d)",
                     sections[s].name, c->section_line[s]);
    c->section_line[s] = c->line;
    return true;
  }
  if (n > 7 && strncmp(name, "device.", 7) == 0) {
    if (!valid_id(name + 7, n - 7))
      return fail_at(c, c->line,
                     "[%.*s]: bad device id '%.*s' (1 to %d of A-Z a-z 0-9 _ -)",
                     (int)n, name, (int)(n - 7), name + 7,
                     HS__BOARD_ID_MAX - 1);
    int i = device_slot(c->p, name + 7, n - 7);
    if (i < 0)
      return fail_at(c, c->line, "[%.*s]: too many device sections (at most %d)",
                     (int)n, name, HS__BOARD_MAX_DEVICES);
    if (c->device_seen[i])
      return fail_at(c, c->line, "duplicate section [%.*s] (first at line %d)",
                     (int)n, name, c->p->devices[i].line);
    c->device_seen[i] = true;
    return true;
  }
  return fail_at(c, c->line,
                 "unknown section [%.*s] (known: board, device.<id>, roles, "
                 "split, memory, pipeline, cache, binaries, require, "
                 "thresholds)",
                 (int)n, name);
}

static char *reader(char *str, int num, void *stream) {
  parse_ctx *c = stream;
  const char *s;
  size_t len, n;
  if (c->failed || !next_line(c->text, &c->pos, &s, &len)) return NULL;
  c->line++;
  /* inih needs room for the newline and the NUL; a longer line would be
   * split and counted twice. */
  if (len + 2 > (size_t)num) {
    fail_at(c, c->line, "line longer than %d characters", num - 2);
    return NULL;
  }
  const char *name = header_name(s, len, &n);
  if (name && !check_header(c, name, n)) return NULL;
  memcpy(str, s, len);
  str[len] = '\n';
  str[len + 1] = '\0';
  return str;
}

static bool record_key(parse_ctx *c, const char *section, const char *key) {
  hs_board_profile *p = c->p;
  for (int i = 0; i < p->key_count; i++)
    if (strcmp(p->keys[i].section, section) == 0 &&
        strcmp(p->keys[i].key, key) == 0)
      return fail_at(c, c->line, "[%s] %s: duplicate key (first set at line %d)",
                     section, key, p->keys[i].line);
  if (p->key_count == p->key_cap) {
    int cap = p->key_cap ? 2 * p->key_cap : 32;
    hs__board_key *k = realloc(p->keys, (size_t)cap * sizeof *k);
    if (!k) {
      hs__fail(HS_ERR_NOMEM, "%s: no memory for profile keys", p->path);
      c->failed = true;
      return false;
    }
    p->keys = k;
    p->key_cap = cap;
  }
  hs__board_key *k = &p->keys[p->key_count++];
  snprintf(k->section, sizeof k->section, "%s", section);
  snprintf(k->key, sizeof k->key, "%s", key);
  k->line = c->line;
  return true;
}

int hs__board_key_line(const hs_board_profile *p, const char *section,
                       const char *key) {
  for (int i = 0; i < p->key_count; i++)
    if (strcmp(p->keys[i].section, section) == 0 &&
        strcmp(p->keys[i].key, key) == 0)
      return p->keys[i].line;
  return 0;
}

static bool set_extensions(parse_ctx *c, const char *sec, const char *key,
                           const char *v, char *out, size_t cap) {
  size_t used = 0;
  out[0] = '\0';
  const char *s = v;
  while (*s) {
    while (*s == ' ' || *s == ',' || *s == '\t') s++;
    if (!*s) break;
    size_t n = 0;
    while (s[n] && s[n] != ' ' && s[n] != ',' && s[n] != '\t') n++;
    for (size_t i = 0; i < n; i++)
      if (!isalnum((unsigned char)s[i]) && s[i] != '_')
        return fail_at(c, c->line,
                       "[%s] %s: bad extension name '%.*s' (letters, digits, _)",
                       sec, key, (int)n, s);
    if (used + n + 2 > cap)
      return fail_at(c, c->line, "[%s] %s: list longer than %zu characters",
                     sec, key, cap - 1);
    if (used) out[used++] = ' ';
    memcpy(out + used, s, n);
    used += n;
    out[used] = '\0';
    s += n;
  }
  return true;
}

/* Parse `v` for `k` into base + k->off. */
static bool set_value(parse_ctx *c, const char *sec, const key_spec *k,
                      char *base, const char *v) {
  void *dst = base + k->off;
  bool is_auto = strcasecmp(v, "auto") == 0;
  long long ll;
  int64_t sz;
  bool b;
  switch (k->kind) {
    case V_STR:
      if (strlen(v) >= k->len)
        return fail_at(c, c->line, "[%s] %s: longer than %zu characters", sec,
                       k->key, k->len - 1);
      memcpy(dst, v, strlen(v) + 1);
      return true;
    case V_BOOL:
      if (!hs__parse_bool(v, &b))
        return fail_at(c, c->line, "[%s] %s: bad boolean '%s' (true or false)",
                       sec, k->key, v);
      *(bool *)dst = b;
      return true;
    case V_TRI:
      if (is_auto || strcasecmp(v, "any") == 0) {
        *(int *)dst = HS__AUTO;
        return true;
      }
      if (!hs__parse_bool(v, &b))
        return fail_at(c, c->line,
                       "[%s] %s: bad value '%s' (true, false or auto)", sec,
                       k->key, v);
      *(int *)dst = b;
      return true;
    case V_COUNT:
    case V_INT:
    case V_COUNT64:
      if (is_auto && k->kind != V_INT) {
        if (k->kind == V_COUNT64) *(int64_t *)dst = HS__AUTO;
        else *(int *)dst = HS__AUTO;
        return true;
      }
      if (!hs__parse_int(v, k->min, k->max, &ll))
        return fail_at(c, c->line,
                       "[%s] %s: bad number '%s' (an integer from %lld to "
                       "%lld%s)",
                       sec, k->key, v, k->min, k->max,
                       k->kind == V_INT ? "" : ", or auto");
      if (k->kind == V_COUNT64) *(int64_t *)dst = ll;
      else *(int *)dst = (int)ll;
      return true;
    case V_SIZE:
    case V_SIZE_AUTO:
      if (is_auto && k->kind == V_SIZE_AUTO) {
        *(int64_t *)dst = HS__AUTO;
        return true;
      }
      if (!hs__parse_size(v, &sz))
        return fail_at(c, c->line,
                       "[%s] %s: bad size '%s' (bytes with an optional K, M, "
                       "G or T suffix%s)",
                       sec, k->key, v, k->kind == V_SIZE_AUTO ? ", or auto" : "");
      *(int64_t *)dst = sz;
      return true;
    case V_ENUM:
      for (int i = 0; k->names[i]; i++)
        if (strcasecmp(v, k->names[i]) == 0) {
          *(int *)dst = i;
          return true;
        }
      {
        char list[128] = "";
        for (int i = 0; k->names[i]; i++)
          snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s",
                   i ? ", " : "", k->names[i]);
        return fail_at(c, c->line, "[%s] %s: bad value '%s' (one of: %s)", sec,
                       k->key, v, list);
      }
    case V_TYPE: {
      static const struct { const char *name; int type; } types[] = {
          {"any", 0}, {"cpu", HS_DEVICE_CPU}, {"gpu", HS_DEVICE_GPU},
          {"accelerator", HS_DEVICE_ACCELERATOR}, {"custom", HS_DEVICE_CUSTOM}};
      for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
        if (strcasecmp(v, types[i].name) == 0) {
          *(int *)dst = types[i].type;
          return true;
        }
      return fail_at(c, c->line,
                     "[%s] %s: bad device type '%s' (any, cpu, gpu, "
                     "accelerator or custom)",
                     sec, k->key, v);
    }
    case V_DEVREF:
      if (is_auto) {
        *(char *)dst = '\0';
        return true;
      }
      if (device_slot(c->p, v, strlen(v)) < 0)
        return fail_at(c, c->line,
                       "[%s] %s: '%s' is not a device of this profile (auto or "
                       "the <id> of a [device.<id>] section)",
                       sec, k->key, v);
      snprintf(dst, HS__BOARD_ID_MAX, "%s", v);
      return true;
    case V_EXTLIST:
      return set_extensions(c, sec, k->key, v, dst, k->len);
    case V_GBPS: {
      double d;
      if (!hs__parse_double(v, &d) || !(d > 0))
        return fail_at(c, c->line, "[%s] %s: bad number '%s' (a positive number)",
                       sec, k->key, v);
      *(double *)dst = d;
      return true;
    }
  }
  return fail_at(c, c->line, "[%s] %s: internal error", sec, k->key);
}

static const key_spec *find_key(const key_spec *keys, size_t n,
                                const char *key) {
  for (size_t i = 0; i < n; i++)
    if (strcmp(keys[i].key, key) == 0) return &keys[i];
  return NULL;
}

static bool unknown_key(parse_ctx *c, const char *sec, const char *key,
                        const key_spec *keys, size_t n) {
  char list[256] = "";
  for (size_t i = 0; i < n; i++)
    snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s",
             i ? ", " : "", keys[i].key);
  return fail_at(c, c->line, "[%s] %s: unknown key (known: %s)", sec, key, list);
}

/* <id> = a bundle of every program; <id>.<program> = one program's binary. */
static bool set_binary(parse_ctx *c, const char *key, const char *v) {
  hs_board_profile *p = c->p;
  const char *dot = strchr(key, '.');
  int i = device_slot(p, key, dot ? (size_t)(dot - key) : strlen(key));
  if (i < 0)
    return fail_at(c, c->line,
                   "[binaries] %s: unknown key: '%.*s' is not a device of this profile "
                   "(keys are <id> or <id>.<program>, <id> that of a [device.<id>] section)",
                   key, dot ? (int)(dot - key) : (int)strlen(key), key);
  int prog = dot ? hs__program_find(dot + 1) : -1;
  if (dot && prog < 0) {
    char list[256] = "";
    for (int k = 0; k < HS_PROG_COUNT_; k++)
      snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", k ? ", " : "",
               hs__program_def_of((hs_prog)k)->name);
    return fail_at(c, c->line, "[binaries] %s: unknown program '%s' (known: %s)", key,
                   dot + 1, list);
  }
  if (!*v) return fail_at(c, c->line, "[binaries] %s: empty path", key);
  size_t n = strlen(v) + (v[0] == '/' ? 0 : strlen(p->dir) + 1) + 1;
  char *path = malloc(n);
  if (!path) {
    hs__fail(HS_ERR_NOMEM, "%s: no memory for a path", p->path);
    c->failed = true;
    return false;
  }
  if (v[0] == '/') snprintf(path, n, "%s", v);
  else snprintf(path, n, "%s/%s", p->dir, v);
  char **slot = prog >= 0 ? &p->devices[i].program_binary[prog] : &p->devices[i].binary;
  free(*slot);
  *slot = path;
  return true;
}

static bool set_threshold(parse_ctx *c, const char *key, const char *v) {
  hs_board_profile *p = c->p;
  hs__thresholds *t = &p->thresholds;
  const char *metric = key;
  const char *dot = strchr(key, '.');
  if (dot) {
    int i = device_slot(p, key, (size_t)(dot - key));
    if (i < 0)
      return fail_at(c, c->line,
                     "[thresholds] %s: unknown key: '%.*s' is not a device of "
                     "this profile",
                     key, (int)(dot - key), key);
    t = &p->devices[i].thresholds;
    metric = dot + 1;
  }
  const key_spec *k = find_key(threshold_keys, HS_ARRAY_LEN(threshold_keys),
                               metric);
  if (!k)
    return unknown_key(c, "thresholds", key, threshold_keys,
                       HS_ARRAY_LEN(threshold_keys));
  return set_value(c, "thresholds", k, (char *)t, v);
}

static int handler(void *user, const char *section, const char *name,
                   const char *value) {
  parse_ctx *c = user;
  if (c->failed) return 0;
  if (!*section)
    return fail_at(c, c->line, "%s: key outside any section", name);
  if (!record_key(c, section, name)) return 0;
  if (strncmp(section, "device.", 7) == 0) {
    int i = device_slot(c->p, section + 7, strlen(section + 7));
    const key_spec *k = find_key(device_keys, HS_ARRAY_LEN(device_keys), name);
    if (i < 0) return fail_at(c, c->line, "[%s]: internal error", section);
    if (!k)
      return unknown_key(c, section, name, device_keys,
                         HS_ARRAY_LEN(device_keys));
    return set_value(c, section, k, (char *)&c->p->devices[i], value);
  }
  for (int s = 0; s < S_FIXED_COUNT_; s++) {
    if (strcmp(section, sections[s].name) != 0) continue;
    if (s == S_BINARIES) return set_binary(c, name, value);
    if (s == S_THRESHOLDS) return set_threshold(c, name, value);
    const key_spec *k = find_key(sections[s].keys, sections[s].n_keys, name);
    if (!k)
      return unknown_key(c, section, name, sections[s].keys,
                         sections[s].n_keys);
    return set_value(c, section, k, (char *)c->p, value);
  }
  return fail_at(c, c->line, "unknown section [%s]", section);
}

/* What the per-key checks cannot see: required sections and keys, and keys
 * that only make sense together. */
static bool check_whole(parse_ctx *c) {
  hs_board_profile *p = c->p;
  if (!c->section_line[S_BOARD])
    return fail_at(c, p->last_line,
                   "(end of file): missing required section [board] "
                   "(with key 'name')");
  if (!hs__board_key_line(p, "board", "name"))
    return fail_at(c, c->section_line[S_BOARD],
                   "[board] name: missing required key");
  if (!p->name[0])
    return fail_at(c, hs__board_key_line(p, "board", "name"),
                   "[board] name: empty");
  for (int i = 0; i < p->device_count; i++) {
    char sec[HS__BOARD_ID_MAX + 8];
    snprintf(sec, sizeof sec, "device.%s", p->devices[i].id);
    if (!hs__board_key_line(p, sec, "type"))
      return fail_at(c, p->devices[i].line,
                     "[%s] type: missing required key (any, cpu, gpu, "
                     "accelerator or custom)",
                     sec);
  }
  int depth_line = hs__board_key_line(p, "pipeline", "depth");
  if (p->pipeline.mode == HS_PIPELINE_OFF && p->pipeline.depth > 1)
    return fail_at(c, depth_line,
                   "[pipeline] depth: %d with mode = off (off runs one batch "
                   "at a time: depth 1 or auto)",
                   p->pipeline.depth);
  return true;
}

static hs_status parse_text(hs_board_profile *p, const char *text) {
  parse_ctx c = {.p = p, .text = text};
  /* inih strips a byte-order mark itself, but our header check runs first. */
  if (strncmp(text, "\xEF\xBB\xBF", 3) == 0) c.text += 3;
  prescan_devices(&c);
  for (const char *s = c.text; *s; s++)
    if (*s == '\n') p->last_line++;
  if (c.text[0] && c.text[strlen(c.text) - 1] != '\n') p->last_line++;

  int rc = ini_parse_stream(reader, &c, handler, &c);
  /* inih goes on after a syntax error; report whichever error came first. */
  if (c.failed && !(rc > 0 && rc < c.fail_line))
    return HS_ERR_PROFILE;
  if (rc > 0)
    return hs__fail(HS_ERR_PROFILE,
                    "%s:%d: syntax error (expected [section], "
                    "key = value, or a comment starting with ; or #)",
                    p->path, rc);
  if (rc < 0)
    return hs__fail(HS_ERR_NOMEM, "%s: board profile parser out of memory",
                    p->path);
  if (!check_whole(&c)) return HS_ERR_PROFILE;
  return HS_OK;
}

static hs_status profile_new(const char *origin, const char *dir,
                             hs_board_profile **out) {
  hs_board_profile *p = calloc(1, sizeof *p);
  if (!p) return hs__fail(HS_ERR_NOMEM, "no memory for a board profile");
  hs__board_defaults(p);
  p->path = strdup(origin);
  p->dir = strdup(dir);
  if (!p->path || !p->dir) {
    hs_board_profile_free(p);
    return hs__fail(HS_ERR_NOMEM, "no memory for a board profile");
  }
  *out = p;
  return HS_OK;
}

void hs_board_profile_free(hs_board_profile *p) {
  if (!p) return;
  for (int i = 0; i < p->device_count; i++) {
    free(p->devices[i].binary);
    for (int k = 0; k < HS_PROG_COUNT_; k++) free(p->devices[i].program_binary[k]);
  }
  free(p->keys);
  free(p->path);
  free(p->dir);
  free(p);
}

hs_status hs_board_profile_parse(const char *text, const char *origin,
                                 const char *base_dir,
                                 hs_board_profile **out) {
  if (!text || !out)
    return hs__fail(HS_ERR_INVALID_ARG, "hs_board_profile_parse: NULL %s",
                    text ? "out" : "text");
  *out = NULL;
  hs_board_profile *p = NULL;
  hs_status st = profile_new(origin ? origin : "<string>",
                             base_dir ? base_dir : ".", &p);
  if (st != HS_OK) return st;
  st = parse_text(p, text);
  if (st != HS_OK) goto fail;
  *out = p;
  return HS_OK;
fail:
  hs_board_profile_free(p);
  return st;
}

const char *hs_board_profile_name(const hs_board_profile *p) {
  return p ? p->name : "";
}

const char *hs_board_profile_description(const hs_board_profile *p) {
  return p ? p->description : "";
}

const char *hs_board_profile_path(const hs_board_profile *p) {
  return p ? p->path : "";
}

bool hs__board_device_compiles(const hs__board_device *bd, const hs_device_info *d) {
  if (bd && bd->compiler != HS__AUTO) return bd->compiler == 1;
  return d->compiler_available && d->type != HS_DEVICE_ACCELERATOR;
}

static bool dup_path(const char *s, const char **out) {
  *out = s ? strdup(s) : NULL;
  return !s || *out;
}

hs_status hs__board_prog_files(const hs__board_device *bd, const hs_device_info *d,
                               hs__prog_files *out) {
  memset(out, 0, sizeof *out);
  out->no_compiler = !hs__board_device_compiles(bd, d);
  if (!bd) return HS_OK;
  bool ok = dup_path(bd->binary, &out->bundle);
  for (int k = 0; k < HS_PROG_COUNT_; k++) ok = dup_path(bd->program_binary[k], &out->file[k]) && ok;
  if (ok) return HS_OK;
  hs__board_prog_files_free(out);
  return hs__fail(HS_ERR_NOMEM, "no memory for the paths of prebuilt binaries");
}

void hs__board_prog_files_free(hs__prog_files *f) {
  free((char *)f->bundle);
  for (int k = 0; k < HS_PROG_COUNT_; k++) free((char *)f->file[k]);
  memset(f, 0, sizeof *f);
}

int hs__board_missing_program(const hs__board_device *bd, unsigned roles, const char *model) {
  for (int k = 0; k < HS_PROG_COUNT_; k++) {
    if (!hs__program_needed((hs_prog)k, roles, model)) continue;
    if (!bd || (!bd->binary && !bd->program_binary[k])) return k;
  }
  return -1;
}

hs_status hs__board_profile_dup(const hs_board_profile *p, hs_board_profile **out) {
  *out = NULL;
  hs_board_profile *c = malloc(sizeof *c);
  if (!c) return hs__fail(HS_ERR_NOMEM, "no memory for a board profile");
  *c = *p;
  /* Nothing shared with `p`: every pointer below is replaced or cleared
   * before the first failure can free the copy. */
  c->path = c->dir = NULL;
  c->keys = NULL;
  c->key_cap = c->key_count = 0;
  for (int i = 0; i < c->device_count; i++) {
    c->devices[i].binary = NULL;
    for (int k = 0; k < HS_PROG_COUNT_; k++) c->devices[i].program_binary[k] = NULL;
  }
  bool ok = (c->path = strdup(p->path)) && (c->dir = strdup(p->dir));
  if (ok && p->key_count) {
    c->keys = malloc((size_t)p->key_count * sizeof *c->keys);
    if ((ok = c->keys != NULL)) {
      memcpy(c->keys, p->keys, (size_t)p->key_count * sizeof *c->keys);
      c->key_count = c->key_cap = p->key_count;
    }
  }
  for (int i = 0; ok && i < c->device_count; i++) {
    const hs__board_device *d = &p->devices[i];
    ok = !d->binary || (c->devices[i].binary = strdup(d->binary));
    for (int k = 0; ok && k < HS_PROG_COUNT_; k++)
      ok = !d->program_binary[k] || (c->devices[i].program_binary[k] = strdup(d->program_binary[k]));
  }
  if (!ok) {
    hs_board_profile_free(c);
    return hs__fail(HS_ERR_NOMEM, "no memory for a board profile");
  }
  *out = c;
  return HS_OK;
}
