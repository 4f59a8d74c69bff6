/* Placement of the sampler and trainer roles: match the profile's device
 * rules against the inventory, pick each role's device (override > profile
 * > automatic rules), then decide how the two are linked and how a shared
 * CPU device is split. Pure: no OpenCL, no files, no environment. The rules
 * are documented in boards/README.md ("Placement"). */
#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hs_place.h"

typedef enum role { ROLE_SAMPLER = 0, ROLE_TRAINER = 1 } role;
static const char *const role_names[] = {"sampler", "trainer"};

/* ---- profile device rules ------------------------------------------------ */

static const char *type_text(int type) {
  switch (type) {
    case 0: return "any";
    case HS_DEVICE_CPU: return "cpu";
    case HS_DEVICE_GPU: return "gpu";
    case HS_DEVICE_ACCELERATOR: return "accelerator";
    case HS_DEVICE_CUSTOM: return "custom";
  }
  return "unknown";
}

static bool rule_matches(const hs__board_device *r, const hs_device_info *d) {
  if (!d->available) return false;
  if (r->type && (int)d->type != r->type) return false;
  if (r->vendor[0] && !strcasestr(d->vendor, r->vendor) &&
      !strcasestr(d->platform_vendor, r->vendor))
    return false;
  if (r->name[0] && !strcasestr(d->name, r->name)) return false;
  if (r->platform[0] && !hs__platform_matches(d, r->platform)) return false;
  if (r->min_memory > 0 && d->global_mem_bytes < (uint64_t)r->min_memory)
    return false;
  if (r->unified_memory != HS__AUTO && d->unified_memory != r->unified_memory)
    return false;
  return true;
}

/* Kuhn's augmenting path: give rule `r` a device, moving other rules to
 * other devices if that frees one. A free device is taken first, in
 * inventory order, so that rules read top to bottom take devices in order
 * wherever nothing forces otherwise. */
static bool augment(hs__placer *pc, int r, bool *seen) {
  for (int i = 0; i < pc->n; i++) {
    if (pc->owner[i] >= 0 || !rule_matches(&pc->prof->devices[r], &pc->devs[i]))
      continue;
    pc->owner[i] = r;
    pc->match[r] = i;
    return true;
  }
  for (int i = 0; i < pc->n; i++) {
    if (seen[i] || !rule_matches(&pc->prof->devices[r], &pc->devs[i]))
      continue;
    seen[i] = true;
    if (pc->owner[i] < 0 || augment(pc, pc->owner[i], seen)) {
      pc->owner[i] = r;
      pc->match[r] = i;
      return true;
    }
  }
  return false;
}

static void rule_text(const hs__board_device *r, char *buf, size_t cap) {
  size_t n = (size_t)snprintf(buf, cap, "type %s",
                              type_text(r->type));
  if (r->vendor[0] && n < cap)
    n += (size_t)snprintf(buf + n, cap - n, ", vendor ~ '%s'", r->vendor);
  if (r->name[0] && n < cap)
    n += (size_t)snprintf(buf + n, cap - n, ", name ~ '%s'", r->name);
  if (r->platform[0] && n < cap)
    n += (size_t)snprintf(buf + n, cap - n, ", platform ~ '%s'", r->platform);
  if (r->min_memory > 0 && n < cap)
    n += (size_t)snprintf(buf + n, cap - n, ", min_memory %" PRId64,
                          r->min_memory);
  if (r->unified_memory != HS__AUTO && n < cap)
    snprintf(buf + n, cap - n, ", unified_memory %s",
             r->unified_memory ? "true" : "false");
}

static void inventory_text(const hs__placer *pc, char *buf, size_t cap) {
  size_t n = 0;
  buf[0] = '\0';
  for (int i = 0; i < pc->n && n < cap; i++) {
    const hs_device_info *d = &pc->devs[i];
    n += (size_t)snprintf(buf + n, cap - n, "%s%d %s%s'%s' (%s%s%s%s%s)",
                          i ? "; " : "", i, d->selector, d->selector[0] ? " " : "",
                          d->name, type_text((int)d->type),
                          d->vendor[0] ? ", " : "", d->vendor,
                          d->simulator ? ", simulator" : "",
                          d->available ? "" : ", unavailable");
  }
  if (pc->n == 0) snprintf(buf, cap, "no device");
}

hs_status hs__board_match(const hs_board_profile *p, const hs_device_info *devs, int n,
                          int match[HS__BOARD_MAX_DEVICES]) {
  hs__placer pc = {.prof = p, .devs = devs, .n = n};
  for (int r = 0; r < HS__BOARD_MAX_DEVICES; r++) pc.match[r] = match[r] = -1;
  pc.owner = malloc(((size_t)n + 1) * sizeof *pc.owner);
  bool *seen = calloc((size_t)n + 1, sizeof *seen);
  if (!pc.owner || !seen) {
    free(pc.owner);
    free(seen);
    return hs__fail(HS_ERR_NOMEM, "device rules: no memory");
  }
  for (int i = 0; i < n; i++) pc.owner[i] = -1;
  for (int pass = 0; pass < 2; pass++)
    for (int r = 0; r < p->device_count; r++) {
      if (p->devices[r].required != (pass == 0)) continue;
      memset(seen, 0, (size_t)n * sizeof *seen);
      augment(&pc, r, seen);
    }
  for (int r = 0; r < p->device_count; r++) match[r] = pc.match[r];
  free(pc.owner);
  free(seen);
  return HS_OK;
}

static hs_status match_rules(hs__placer *pc) {
  const hs_board_profile *p = pc->prof;
  bool *seen = calloc((size_t)pc->n + 1, sizeof *seen);
  if (!seen) return hs__fail(HS_ERR_NOMEM, "placement: no memory");
  hs_status st = HS_OK;
  /* Required rules first: an optional rule never takes a device a required
   * one needs (augmenting paths keep matched rules matched). */
  for (int pass = 0; pass < 2; pass++) {
    for (int r = 0; r < p->device_count; r++) {
      if (p->devices[r].required != (pass == 0)) continue;
      memset(seen, 0, (size_t)pc->n * sizeof *seen);
      if (augment(pc, r, seen)) continue;
      char rule[256], inv[1536];
      rule_text(&p->devices[r], rule, sizeof rule);
      if (pass == 0) {
        inventory_text(pc, inv, sizeof inv);
        st = hs__fail(HS_ERR_PROFILE,
                      "%s:%d: [device.%s]: no device matches "
                      "this required rule (%s) that another rule does not "
                      "need; the inventory has: %s",
                      p->path, p->devices[r].line, p->devices[r].id, rule, inv);
        goto fail;
      }
      hs__place_reason(pc, "devices",
                       "[device.%s] (optional: %s) matches no free device: "
                       "skipped",
                       p->devices[r].id, rule);
    }
  }
  for (int r = 0; r < p->device_count; r++) {
    if (pc->match[r] < 0) continue;
    char dev[HS__PLACE_DEV_MAX];
    hs__place_reason(pc, "devices", "[device.%s] is %s", p->devices[r].id,
                     hs__place_dev(&pc->devs[pc->match[r]], dev, sizeof dev));
  }
  /* A profile that names devices confines the automatic rules to them. */
  for (int i = 0; i < pc->n; i++)
    pc->candidate[i] = pc->devs[i].available &&
                       (p->device_count == 0 || pc->owner[i] >= 0);
fail:
  free(seen);
  return st;
}

/* ---- what a device can do for a role -------------------------------------- */

static const hs__board_device *rule_of(const hs__placer *pc, int i) {
  int o = pc->owner[i];
  return o < 0 ? NULL : &pc->prof->devices[o];
}

static const char *binary_of(const hs__placer *pc, int i) {
  const hs__board_device *bd = rule_of(pc, i);
  return bd ? bd->binary : NULL;
}

static unsigned role_programs(role r) {
  return r == ROLE_SAMPLER ? HS_PROG_ROLE_SAMPLER : HS_PROG_ROLE_TRAINER;
}

uint64_t hs__place_usable(const hs__placer *pc, const hs_device_info *d) {
  uint64_t g = d->global_mem_bytes;
  uint64_t u = g - g / 100 * (uint64_t)pc->prof->memory.headroom_percent;
  /* A CPU device's global memory is the host's; the limits in force on
   * this process bind first. */
  if (pc->mem_limited && d->type == HS_DEVICE_CPU && pc->mem_room < u) u = pc->mem_room;
  return u;
}

/* Whether the topology fits on device i; `why` gets the numbers either
 * way. */
static bool topology_fits(const hs__placer *pc, int i, char *why, size_t cap) {
  const hs_device_info *d = &pc->devs[i];
  uint64_t topo = pc->req->topology_bytes;
  char t[32], u[32], g[32], m[32];
  if (topo == 0) {
    snprintf(why, cap, "topology size unknown: not checked against its %s "
             "global memory",
             hs__fmt_bytes(d->global_mem_bytes, g, sizeof g));
    return true;
  }
  uint64_t usable = hs__place_usable(pc, d);
  hs__fmt_bytes(topo, t, sizeof t);
  hs__fmt_bytes(usable, u, sizeof u);
  hs__fmt_bytes(d->global_mem_bytes, g, sizeof g);
  hs__fmt_bytes(d->max_alloc_bytes, m, sizeof m);
  bool fits = topo <= usable;
  snprintf(why, cap,
           "topology %s %s %s usable (%s global memory, %d%% headroom)%s%s%s",
           t, fits ? "fits in" : "does not fit in", u, g,
           pc->prof->memory.headroom_percent,
           fits ? (topo > d->max_alloc_bytes ? "; above its " : "; within its ")
                : "",
           fits ? m : "",
           fits ? (topo > d->max_alloc_bytes
                       ? " max allocation, so its arrays are split"
                       : " max allocation")
                : "");
  return fits;
}

/* Whether device i can take role r; `why` says why not. */
static bool can_take(const hs__placer *pc, role r, int i, char *why,
                     size_t cap) {
  const hs_device_info *d = &pc->devs[i];
  if (!d->available) {
    snprintf(why, cap, "it is not available");
    return false;
  }
  const hs__board_device *bd = rule_of(pc, i);
  int missing = hs__board_device_compiles(bd, d)
                    ? -1
                    : hs__board_missing_program(bd, role_programs(r), pc->req->model);
  if (missing >= 0) {
    const char *id = bd ? bd->id : "<device id>";
    const char *name = hs__program_def_of((hs_prog)missing)->name;
    snprintf(why, cap,
             "it %s and the profile names no prebuilt binary for its program '%s' "
             "([binaries] %s.%s = <file>, or %s = <bundle>)",
             bd && bd->compiler == 0       ? "does not compile (profile: compiler = false)"
             : !d->compiler_available      ? "has no compiler"
                                           : "is an accelerator",
             name, id, name, id);
    return false;
  }
  if (r == ROLE_SAMPLER) return topology_fits(pc, i, why, cap);
  why[0] = '\0';
  return true;
}

/* ---- automatic rules -------------------------------------------------------- */

static uint64_t speed(const hs_device_info *d) {
  return (uint64_t)d->compute_units * (d->clock_mhz ? d->clock_mhz : 1);
}

/* Higher is better. Trainer: a real device > a simulator, then GPU > CPU >
 * accelerator, then compute units x clock, then memory. */
static bool trainer_better(const hs_device_info *a, const hs_device_info *b) {
  if (a->simulator != b->simulator) return !a->simulator;
  static const int cls[] = {[HS_DEVICE_GPU] = 3, [HS_DEVICE_CPU] = 2,
                            [HS_DEVICE_ACCELERATOR] = 1};
  int ca = a->type <= HS_DEVICE_ACCELERATOR ? cls[a->type] : 0;
  int cb = b->type <= HS_DEVICE_ACCELERATOR ? cls[b->type] : 0;
  if (ca != cb) return ca > cb;
  if (speed(a) != speed(b)) return speed(a) > speed(b);
  return a->global_mem_bytes > b->global_mem_bytes;
}

/* Sampler: a real device > a simulator, then GPU or accelerator (not the
 * trainer's device if there is a choice, an accelerator before a GPU, then
 * more memory) > CPU (the trainer's CPU first, so that one CPU is split). */
static int sampler_rank(const hs__placer *pc, int i, int trainer) {
  const hs_device_info *d = &pc->devs[i];
  int real = d->simulator ? 0 : 16;
  if (d->type == HS_DEVICE_GPU || d->type == HS_DEVICE_ACCELERATOR)
    return real + 8 + (i != trainer ? 4 : 0) + (d->type == HS_DEVICE_ACCELERATOR ? 2 : 0);
  if (d->type == HS_DEVICE_CPU) return real + 2 + (i == trainer ? 1 : 0);
  return real;
}

/* Pick a device for role r among the candidates (or, for an override by
 * type, among every device of `type`). Rejections are given as reasons. */
static hs_status choose_auto(hs__placer *pc, role r, int type, int trainer,
                             const char *lead, int *out) {
  char why[512], dev[HS__PLACE_DEV_MAX], rejected[2048] = "";
  int best = -1, gpus = 0;
  for (int i = 0; i < pc->n; i++) {
    const hs_device_info *d = &pc->devs[i];
    if (type ? (int)d->type != type || !d->available : !pc->candidate[i])
      continue;
    if (!type && d->type == HS_DEVICE_CUSTOM) continue;
    if (!can_take(pc, r, i, why, sizeof why)) {
      hs__place_reason(pc, role_names[r], "not %s: %s",
                       hs__place_dev(d, dev, sizeof dev), why);
      size_t n = strlen(rejected);
      snprintf(rejected + n, sizeof rejected - n, "%s%s: %s", n ? "; " : "",
               dev, why);
      continue;
    }
    gpus += d->type == HS_DEVICE_GPU;
    if (best < 0) {
      best = i;
    } else if (r == ROLE_TRAINER) {
      if (trainer_better(d, &pc->devs[best])) best = i;
    } else {
      int a = sampler_rank(pc, i, trainer), b = sampler_rank(pc, best, trainer);
      if (a > b || (a == b && d->global_mem_bytes >
                                  pc->devs[best].global_mem_bytes))
        best = i;
    }
  }
  if (best < 0) {
    char t[32] = "", none[64];
    if (r == ROLE_SAMPLER && pc->req->topology_bytes)
      snprintf(t, sizeof t, " with a %s topology",
               hs__fmt_bytes(pc->req->topology_bytes, none, sizeof none));
    snprintf(none, sizeof none, "no available %s device",
             type ? type_text(type) : "candidate");
    return hs__fail(HS_ERR_PLACEMENT, "%s: no device can take the %s role%s: %s",
                    lead, role_names[r], t, rejected[0] ? rejected : none);
  }
  const hs_device_info *d = &pc->devs[best];
  hs__place_dev(d, dev, sizeof dev);
  if (type) {
    if (r == ROLE_SAMPLER) can_take(pc, r, best, why, sizeof why);
    hs__place_reason(pc, role_names[r], "%s: %s; the %s %s device%s%s", dev,
                     lead, r == ROLE_TRAINER ? "fastest" : "best",
                     type_text(type),
                     r == ROLE_TRAINER ? " (compute units x clock)"
                                       : " for the sampler; ",
                     r == ROLE_SAMPLER ? why : "");
  } else if (r == ROLE_TRAINER) {
    if (d->type == HS_DEVICE_GPU)
      hs__place_reason(pc, "trainer",
                       "%s: %s; the fastest of %d GPU(s) by compute units x "
                       "clock (%" PRIu32 " x %" PRIu32 " MHz)",
                       dev, lead, gpus, d->compute_units, d->clock_mhz);
    else
      hs__place_reason(pc, "trainer", "%s: %s; no usable GPU, so the %s",
                       dev, lead,
                       d->type == HS_DEVICE_CPU ? "CPU" : "best remaining device");
  } else {
    can_take(pc, r, best, why, sizeof why);
    const char *rule =
        d->type == HS_DEVICE_CPU
            ? (best == trainer ? "no GPU or accelerator holds it, so the "
                                 "trainer's CPU, split between both roles"
                               : "no GPU or accelerator holds it, so a CPU")
        : best == trainer
            ? "a GPU/accelerator that holds it; it is also the trainer "
              "(no other one holds it), so two queues share it"
            : "a GPU/accelerator that holds it, apart from the trainer";
    hs__place_reason(pc, "sampler", "%s: %s; %s; rule: %s", dev, lead, why,
                     rule);
  }
  *out = best;
  return HS_OK;
}

/* ---- overrides and profile roles -------------------------------------------- */

/* The device a "PLATFORM:DEVICE" selector names (DEVICE: a position within
 * the platform, a name substring, or empty for its first device), -1 if
 * none. */
static int find_selector(const hs__placer *pc, const char *spec) {
  const char *colon = strchr(spec, ':');
  char plat[HS_NAME_MAX];
  snprintf(plat, sizeof plat, "%.*s", (int)(colon - spec), spec);
  const char *dev = colon + 1;
  bool digits = *dev != '\0';
  for (const char *s = dev; *s; s++) digits &= isdigit((unsigned char)*s) != 0;
  for (int i = 0; i < pc->n; i++) {
    const hs_device_info *d = &pc->devs[i];
    if (!plat[0] || !hs__platform_matches(d, plat)) continue;
    if (!*dev || (digits ? d->platform_device == atoi(dev) : strcasestr(d->name, dev) != NULL))
      return i;
  }
  return -1;
}

/* Resolve an override: an index, a type, a profile device id, a selector
 * ("pocl:0", "rusticl:llvmpipe", "oclgrind:"), a platform key ("rusticl":
 * its first device), a name substring or a platform name substring. *type
 * is set instead of *out for a type. */
static hs_status resolve_override(hs__placer *pc, role r, const char *spec,
                                  const char *src, int *out, int *type) {
  *out = -1;
  *type = 0;
  char inv[1536];
  bool digits = *spec != '\0';
  for (const char *s = spec; *s; s++) digits &= isdigit((unsigned char)*s) != 0;
  if (digits) {
    long v = strtol(spec, NULL, 10);
    if (strlen(spec) > 6 || v >= pc->n) {
      inventory_text(pc, inv, sizeof inv);
      return hs__fail(HS_ERR_PLACEMENT,
                      "%s: %s=%s: no device with that index (the inventory "
                      "has %d: %s)",
                      role_names[r], src, spec, pc->n, inv);
    }
    *out = (int)v;
    return HS_OK;
  }
  static const struct { const char *name; int type; } types[] = {
      {"cpu", HS_DEVICE_CPU}, {"gpu", HS_DEVICE_GPU},
      {"accelerator", HS_DEVICE_ACCELERATOR}, {"fpga", HS_DEVICE_ACCELERATOR}};
  for (size_t i = 0; i < HS_ARRAY_LEN(types); i++)
    if (strcasecmp(spec, types[i].name) == 0) {
      *type = types[i].type;
      return HS_OK;
    }
  const hs__board_device *pd = hs__board_device_find(pc->prof, spec);
  if (pd) {
    int m = pc->match[pd - pc->prof->devices];
    if (m < 0)
      return hs__fail(HS_ERR_PLACEMENT,
                      "%s: %s=%s: the profile's [device.%s] matched no device",
                      role_names[r], src, spec, spec);
    *out = m;
    return HS_OK;
  }
  if (strchr(spec, ':')) {
    *out = find_selector(pc, spec);
    if (*out >= 0) return HS_OK;
    inventory_text(pc, inv, sizeof inv);
    return hs__fail(HS_ERR_PLACEMENT,
                    "%s: %s=%s: no device of a platform matching '%.*s' is '%s' "
                    "(PLATFORM:DEVICE: a platform key or part of its name or vendor, "
                    "then a position within it or part of a device name); the "
                    "inventory has: %s",
                    role_names[r], src, spec, (int)(strchr(spec, ':') - spec), spec,
                    strchr(spec, ':') + 1, inv);
  }
  for (int i = 0; i < pc->n; i++)
    if (strcasecmp(pc->devs[i].platform_key, spec) == 0) {
      *out = i;
      return HS_OK;
    }
  for (int i = 0; i < pc->n; i++)
    if (strcasestr(pc->devs[i].name, spec)) {
      *out = i;
      return HS_OK;
    }
  for (int i = 0; i < pc->n; i++)
    if (hs__platform_matches(&pc->devs[i], spec)) {
      *out = i;
      return HS_OK;
    }
  inventory_text(pc, inv, sizeof inv);
  return hs__fail(HS_ERR_PLACEMENT,
                  "%s: %s=%s: matches no device by index, type (cpu, gpu, "
                  "accelerator), profile device id, selector (pocl:0), platform "
                  "or device name; the inventory has: %s",
                  role_names[r], src, spec, inv);
}

static hs_status place_role(hs__placer *pc, role r, int trainer, int *out) {
  const hs_placement_request *q = pc->req;
  const char *spec = r == ROLE_SAMPLER ? q->sampler : q->trainer;
  const char *src = r == ROLE_SAMPLER ? q->sampler_source : q->trainer_source;
  char why[512], dev[HS__PLACE_DEV_MAX], lead[256];
  int idx, type;
  hs_status st;
  if (spec && *spec) {
    if (!src) src = "override";
    st = resolve_override(pc, r, spec, src, &idx, &type);
    if (st != HS_OK) return st;
    snprintf(lead, sizeof lead, "chosen by %s=%s", src, spec);
    if (type) return choose_auto(pc, r, type, trainer, lead, out);
    if (!can_take(pc, r, idx, why, sizeof why))
      return hs__fail(HS_ERR_PLACEMENT, "%s: %s=%s names %s, but %s",
                      role_names[r], src, spec,
                      hs__place_dev(&pc->devs[idx], dev, sizeof dev), why);
    hs__place_reason(pc, role_names[r], "%s: %s%s%s",
                     hs__place_dev(&pc->devs[idx], dev, sizeof dev), lead,
                     why[0] ? "; " : "", why);
    *out = idx;
    return HS_OK;
  }
  const hs_board_profile *p = pc->prof;
  const char *id = r == ROLE_SAMPLER ? p->roles.sampler : p->roles.trainer;
  if (!id[0])
    return choose_auto(pc, r, 0, trainer, "automatic rules", out);
  int line = hs__board_key_line(p, "roles", role_names[r]);
  const hs__board_device *pd = hs__board_device_find(p, id);
  idx = pd ? pc->match[pd - p->devices] : -1;
  char full[1024];
  if (idx < 0) {
    snprintf(full, sizeof full, "[device.%s] matched no device", id);
  } else if (can_take(pc, r, idx, why, sizeof why)) {
    hs__place_reason(pc, role_names[r], "%s: the profile's [roles] %s = %s%s%s",
                     hs__place_dev(&pc->devs[idx], dev, sizeof dev),
                     role_names[r], id, why[0] ? "; " : "", why);
    *out = idx;
    return HS_OK;
  } else {
    snprintf(full, sizeof full, "%s: %s",
             hs__place_dev(&pc->devs[idx], dev, sizeof dev), why);
  }
  if (!p->roles.fallback)
    return hs__fail(HS_ERR_PLACEMENT,
                    "%s: board profile %s:%d: [roles] %s = %s cannot be used "
                    "([roles] fallback = false): %s",
                    role_names[r], p->path, line, role_names[r], id, full);
  hs__place_reason(pc, role_names[r],
                   "the profile's [roles] %s = %s cannot be used (%s); "
                   "falling back to the automatic rules",
                   role_names[r], id, full);
  snprintf(lead, sizeof lead, "automatic rules after [roles] %s = %s failed",
           role_names[r], id);
  return choose_auto(pc, r, 0, trainer, lead, out);
}

/* ---- link and CPU split ----------------------------------------------------- */

static hs_status split_cpu(hs__placer *pc, const hs_device_info *d) {
  hs_placement *pl = &pc->box->pub;
  int c = (int)d->compute_units;
  int s = pc->prof->split.sampler_cores, t = pc->prof->split.trainer_cores;
  int h = pc->prof->split.host_cores;
  char dev[HS__PLACE_DEV_MAX];
  hs__place_dev(d, dev, sizeof dev);
  bool explicit_h = h != HS__AUTO;
  if (!explicit_h) {
    /* Small CPUs give every core to the roles and let host threads share;
     * bigger ones keep a quarter for gathering. */
    h = s != HS__AUTO && t != HS__AUTO ? (c > s + t ? c - s - t : 0)
                                       : (c >= 4 ? c / 4 : 0);
  }
  int rest = c - h;
  if (s == HS__AUTO && t == HS__AUTO) {
    s = rest / 2;
    t = rest - s;
  } else if (s == HS__AUTO) {
    s = rest - t;
  } else if (t == HS__AUTO) {
    t = rest - s;
  }
  if (s < 1 || t < 1 || s + t + h > c)
    return hs__fail(HS_ERR_PLACEMENT,
                    "split: sampler %d + trainer %d + host %d core(s) do not "
                    "fit the %d compute unit(s) of %s (each role needs at "
                    "least 1)",
                    s, t, h, c, dev);
  pl->sampler.cores = (uint32_t)s;
  pl->trainer.cores = (uint32_t)t;
  pl->host_reserved_cores = h;
  pl->link = HS_LINK_SUB_DEVICES;
  hs__place_reason(pc, "split",
                   "%s has %d compute unit(s) and partitions by counts: "
                   "sampler sub-device %d, trainer sub-device %d, %d kept "
                   "for host threads (%s)",
                   dev, c, s, t, h,
                   pc->prof->split.sampler_cores == HS__AUTO &&
                           pc->prof->split.trainer_cores == HS__AUTO &&
                           !explicit_h
                       ? "auto: a quarter for the host from 4 units up, the "
                         "rest halved"
                       : "[split] of the profile");
  return HS_OK;
}

static bool can_split(const hs_device_info *d) {
  return d->partition_by_counts && d->max_sub_devices >= 2 &&
         d->compute_units >= 2;
}

/* One role alone on a CPU: a sub-device that leaves host cores free. */
static void shrink_single_cpu_role(hs__placer *pc, role r,
                                   const hs_device_info *d) {
  hs_placement *pl = &pc->box->pub;
  int c = (int)d->compute_units;
  int want = r == ROLE_SAMPLER ? pc->prof->split.sampler_cores
                               : pc->prof->split.trainer_cores;
  int h = pc->prof->split.host_cores;
  if (want == HS__AUTO) want = c - (h != HS__AUTO ? h : c >= 4 ? c / 4 : 0);
  char dev[HS__PLACE_DEV_MAX];
  hs__place_dev(d, dev, sizeof dev);
  if (want >= c || want < 1 || !can_split(d) || !pc->prof->split.sub_devices) {
    pl->host_reserved_cores = 0;
    hs__place_reason(pc, "split",
                     "the %s uses the whole of %s (%d compute unit(s)); host "
                     "threads share its cores",
                     role_names[r], dev, c);
    return;
  }
  hs_role_plan *rp = r == ROLE_SAMPLER ? &pl->sampler : &pl->trainer;
  rp->cores = (uint32_t)want;
  pl->host_reserved_cores = c - want;
  hs__place_reason(pc, "split",
                   "the %s gets a sub-device of %d of the %d compute units "
                   "of %s; %d kept for host threads",
                   role_names[r], want, c, dev, c - want);
}

static hs_status place_link(hs__placer *pc) {
  hs_placement *pl = &pc->box->pub;
  const hs_device_info *sd = &pc->devs[pl->sampler.device];
  const hs_device_info *td = &pc->devs[pl->trainer.device];
  char a[HS__PLACE_DEV_MAX], b[HS__PLACE_DEV_MAX];
  hs__place_dev(sd, a, sizeof a);
  hs__place_dev(td, b, sizeof b);
  pl->host_reserved_cores = pc->host_cores;
  if (sd == td) {
    if (sd->type == HS_DEVICE_CPU && can_split(sd) && pc->prof->split.sub_devices) {
      hs_status st = split_cpu(pc, sd);
      if (st != HS_OK) return st;
      hs__place_reason(pc, "link",
                       "sub-devices of one CPU share a context: blocks go "
                       "device to device");
    } else {
      pl->link = HS_LINK_SAME_DEVICE;
      if (sd->type == HS_DEVICE_CPU) pl->host_reserved_cores = 0;
      if (sd->type == HS_DEVICE_CPU && !pc->prof->split.sub_devices)
        hs__place_reason(pc, "split",
                         "the profile sets [split] sub_devices = false: both "
                         "roles share the whole of %s with two queues",
                         a);
      else if (sd->type == HS_DEVICE_CPU)
        hs__place_reason(pc, "split",
                         "%s cannot be partitioned by counts into two (max "
                         "sub-devices %" PRIu32 ", %" PRIu32 " compute "
                         "unit(s)): both roles share it with two queues",
                         a, sd->max_sub_devices, sd->compute_units);
      hs__place_reason(pc, "link",
                       "both roles on %s, two queues: blocks stay on the "
                       "device",
                       a);
    }
  } else {
    int want = pc->prof->roles.shared_context;
    if (want == 1 && sd->platform_index == td->platform_index) {
      pl->link = HS_LINK_CONTEXT;
      hs__place_reason(pc, "link",
                       "%s and %s are on one platform and the profile asks "
                       "for a shared context: blocks go device to device",
                       a, b);
    } else {
      pl->link = HS_LINK_HOST;
      hs__place_reason(
          pc, "link", "%s and %s are separate devices%s: blocks go through "
          "the host",
          a, b,
          want == 1   ? " on different platforms, which cannot share a context"
          : want == 0 ? " and the profile sets shared_context = false"
                      : " (a shared context only where the profile sets "
                        "[roles] shared_context = true)");
    }
    if (sd->type == HS_DEVICE_CPU) shrink_single_cpu_role(pc, ROLE_SAMPLER, sd);
    if (td->type == HS_DEVICE_CPU) shrink_single_cpu_role(pc, ROLE_TRAINER, td);
  }
  pl->shared_context = pl->link != HS_LINK_HOST;
  return HS_OK;
}

/* ---- entry ------------------------------------------------------------------ */

static hs_status set_binary(hs__placer *pc, role r, int idx) {
  hs_role_plan *rp = r == ROLE_SAMPLER ? &pc->box->pub.sampler
                                       : &pc->box->pub.trainer;
  rp->device = idx;
  snprintf(rp->selector, sizeof rp->selector, "%s", pc->devs[idx].selector);
  rp->simulator = pc->devs[idx].simulator;
  int o = pc->owner[idx];
  if (o >= 0)
    snprintf(rp->profile_id, sizeof rp->profile_id, "%s",
             pc->prof->devices[o].id);
  const hs__board_device *bd = rule_of(pc, idx);
  int singles = 0;
  for (int k = 0; bd && k < HS_PROG_COUNT_; k++)
    if (bd->program_binary[k] && hs__program_needed((hs_prog)k, role_programs(r), pc->req->model) &&
        ++singles)
      hs__place_reason(pc, role_names[r], "loads program '%s' from the prebuilt binary %s "
                       "([binaries] %s.%s)", hs__program_def_of((hs_prog)k)->name,
                       bd->program_binary[k], rp->profile_id, hs__program_def_of((hs_prog)k)->name);
  const char *bin = binary_of(pc, idx);
  if (!bin) return HS_OK;
  pc->box->binaries[r] = strdup(bin);
  if (!pc->box->binaries[r]) return hs__fail(HS_ERR_NOMEM, "placement: no memory");
  rp->binary = pc->box->binaries[r];
  hs__place_reason(pc, role_names[r], "loads its %sprograms from the prebuilt binary bundle %s "
                   "([binaries] %s)", singles ? "other " : "", bin, rp->profile_id);
  return HS_OK;
}

void hs_placement_request_init_sized(hs_placement_request *req, size_t struct_size) {
  hs_placement_request z;
  memset(&z, 0, sizeof z);
  z.struct_size = sizeof z;
  hs__sized_init(req, struct_size, &z, sizeof z);
}

/* The caller's request and inventory as this library lays them out: `req`
 * with every field, `*devs` (malloc'd) an array of full hs_device_info,
 * read with the caller's stride. */
static hs_status check_request(const hs_placement_request *user, hs_placement_request *req,
                               hs_device_info **devs, hs_placement **out) {
  if (!out) return hs__fail(HS_ERR_INVALID_ARG, "hs_placement_make: NULL out");
  *out = NULL;
  if (!user) return hs__fail(HS_ERR_INVALID_ARG, "hs_placement_make: NULL request");
  hs_placement_request_init(req);
  hs_status st = hs__sized_in(req, sizeof *req, user, "hs_placement_request");
  if (st != HS_OK) return st;
  if (req->device_count < 0 || (req->device_count > 0 && !req->devices))
    return hs__fail(HS_ERR_INVALID_ARG,
                    "hs_placement_make: %d devices at %p", req->device_count,
                    (const void *)req->devices);
  size_t stride = req->device_count ? req->devices[0].struct_size : 0;
  if (req->device_count &&
      (st = hs__sized_check(stride, sizeof **devs, "hs_device_info of the request")) != HS_OK)
    return st;
  /* A compiler pads a struct to its alignment: any other stride is no
   * struct's size (and would misalign the elements after the first). */
  if (stride % _Alignof(hs_device_info) != 0)
    return hs__fail(HS_ERR_INVALID_ARG,
                    "hs_placement_make: hs_device_info struct_size %zu is not a multiple of "
                    "its alignment %zu",
                    stride, (size_t)_Alignof(hs_device_info));
  *devs = calloc((size_t)req->device_count + 1, sizeof **devs);
  if (!*devs) return hs__fail(HS_ERR_NOMEM, "placement: no memory");
  for (int i = 0; i < req->device_count; i++) {
    const hs_device_info *d =
        (const hs_device_info *)((const char *)req->devices + (size_t)i * stride);
    hs_device_info *full = &(*devs)[i];
    full->struct_size = sizeof *full;
    if (d->struct_size != stride)
      return hs__fail(HS_ERR_INVALID_ARG,
                      "hs_placement_make: device %d has struct_size %zu, device 0 %zu", i,
                      d->struct_size, stride);
    if ((st = hs__sized_in(full, sizeof *full, d, "hs_device_info")) != HS_OK) return st;
    if (full->index != i)
      return hs__fail(HS_ERR_INVALID_ARG,
                      "hs_placement_make: device %d says it is index %d", i, full->index);
  }
  req->devices = *devs;
  return HS_OK;
}

hs_status hs_placement_make(const hs_placement_request *user_req,
                            hs_placement **out) {
  hs_placement_request request;
  hs_device_info *devs = NULL;
  const hs_placement_request *req = &request;
  hs_status st = check_request(user_req, &request, &devs, out);
  if (st != HS_OK) {
    free(devs);
    return st;
  }
  static char defaults_name[] = "built-in defaults";
  hs_board_profile defaults = {.path = defaults_name, .dir = defaults_name};
  hs__board_defaults(&defaults);
  hs__placer pc = {.req = req, .prof = req->profile ? req->profile : &defaults,
                   .devs = req->devices, .n = req->device_count};
  pc.box = calloc(1, sizeof *pc.box);
  pc.owner = malloc(((size_t)pc.n + 1) * sizeof *pc.owner);
  pc.candidate = calloc((size_t)pc.n + 1, sizeof *pc.candidate);
  if (!pc.box || !pc.owner || !pc.candidate) {
    st = hs__fail(HS_ERR_NOMEM, "placement: no memory");
    goto fail;
  }
  for (int i = 0; i < pc.n; i++) pc.owner[i] = -1;
  for (int r = 0; r < HS__BOARD_MAX_DEVICES; r++) pc.match[r] = -1;
  pc.mem_room = hs__mem_room(pc.mem_why, sizeof pc.mem_why);
  pc.mem_limited = pc.mem_room != UINT64_MAX;
  hs_placement *pl = &pc.box->pub;
  snprintf(pl->board, sizeof pl->board, "%s",
           req->profile ? pc.prof->name : "defaults");

  int available = 0, cpu_units = 0;
  for (int i = 0; i < pc.n; i++) {
    available += pc.devs[i].available;
    if (!cpu_units && pc.devs[i].type == HS_DEVICE_CPU)
      cpu_units = (int)pc.devs[i].compute_units;
  }
  if (!available) {
    st = hs__fail(HS_ERR_NO_DEVICE, "placement: %s",
                  pc.n ? "no device is available" : "the inventory is empty");
    goto fail;
  }
  pc.host_cores = req->host_cores > 0 ? req->host_cores
                  : cpu_units > 0     ? cpu_units
                                      : 1;
  pl->host_cores = pc.host_cores;

  st = match_rules(&pc);
  if (st != HS_OK) goto fail;
  int trainer = -1, sampler = -1;
  st = place_role(&pc, ROLE_TRAINER, -1, &trainer);
  if (st != HS_OK) goto fail;
  st = place_role(&pc, ROLE_SAMPLER, trainer, &sampler);
  if (st != HS_OK) goto fail;
  st = set_binary(&pc, ROLE_SAMPLER, sampler);
  if (st != HS_OK) goto fail;
  st = set_binary(&pc, ROLE_TRAINER, trainer);
  if (st != HS_OK) goto fail;
  st = place_link(&pc);
  if (st != HS_OK) goto fail;
  if (pc.mem_limited) {
    char r[32];
    hs__place_reason(&pc, "memory", "limit: %s may still be allocated under %s; CPU devices, "
                     "whose memory is the host's, get no more", hs__fmt_bytes(pc.mem_room, r,
                     sizeof r), pc.mem_why);
  }
  st = hs__place_sizing(&pc);
  if (st != HS_OK) goto fail;
  if (pc.box->nomem) {
    st = hs__fail(HS_ERR_NOMEM, "placement: no memory for the reasons");
    goto fail;
  }
  free(pc.owner);
  free(pc.candidate);
  free(devs);
  *out = pl;
  return HS_OK;
fail:
  free(pc.owner);
  free(pc.candidate);
  free(devs);
  if (pc.box) hs_placement_free(&pc.box->pub);
  return st;
}
