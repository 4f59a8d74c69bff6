/* Bring-up of a board (see hetsage/bringup.h): the board checks (device
 * rules, placement, [require]), the kernel checks on every device scope,
 * peaks, end-to-end runs and the soak, in that order. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "bench/hs_measure.h"
#include "hs_bringup_int.h"
#include "core/hs_engine.h"

static const char *const level_names[] = {"quick", "standard", "long"};
static const char *const result_names[] = {"pass", "fail", "skip"};

const char *hs_bringup_level_name(hs_bringup_level level) {
  return (unsigned)level < HS_ARRAY_LEN(level_names) ? level_names[level] : "unknown";
}

hs_status hs_bringup_level_parse(const char *name, hs_bringup_level *out) {
  if (!out) return hs__fail(HS_ERR_INVALID_ARG, "hs_bringup_level_parse: NULL out");
  for (unsigned i = 0; name && i < HS_ARRAY_LEN(level_names); i++)
    if (strcasecmp(name, level_names[i]) == 0) {
      *out = (hs_bringup_level)i;
      return HS_OK;
    }
  return hs__fail(HS_ERR_INVALID_ARG, "bring-up level '%s': quick, standard or long",
                  name ? name : "(null)");
}

const char *hs_check_result_name(hs_check_result r) {
  return (unsigned)r < HS_ARRAY_LEN(result_names) ? result_names[r] : "unknown";
}

void hs_bringup_options_init(hs_bringup_options *o) {
  if (!o) return;
  memset(o, 0, sizeof *o);
  o->level = HS_BRINGUP_STANDARD;
  o->soak_seconds = 120;
}

/* ---- data --------------------------------------------------------------------- */

/* Edge weights, mostly in (0, 4), with zero, negative, subnormal and NaN
 * ones sprinkled in so that the eligibility rules of the weighted modes
 * are exercised. A pure function of the edge index. */
static float *make_weights(int64_t e) {
  float *w = malloc(sizeof *w * (size_t)(e > 0 ? e : 1));
  if (!w) return NULL;
  for (int64_t i = 0; i < e; i++) {
    uint32_t x = hs_philox_draw(0xb1e55edull, 0x3e1u, (uint32_t)(i >> 32), (uint32_t)i, 0).v[0];
    float v = (float)((x >> 8) + 1u) * (4.0f / 16777216.0f);
    switch (x & 63u) {
      case 0: v = 0.0f; break;
      case 1: v = -v; break;
      case 2: v = 1e-40f; break;
      case 3: v = nanf(""); break;
      default: break;
    }
    w[i] = v;
  }
  return w;
}

static hs_status open_generated(const hs_runtime *rt, hs_dataset **out) {
  char cache[900], dir[1024];
  hs_status st = hs__cache_dir_at(hs_runtime_settings(rt)->cache_dir, cache, sizeof cache);
  if (st != HS_OK) return st;
  /* Bump the suffix when the options below change. */
  snprintf(dir, sizeof dir, "%s/bringup-rmat-s11-v1", cache);
  if (hs_dataset_open(dir, out) == HS_OK) return HS_OK;
  hs__clear_error();
  hs_generate_opts o;
  hs_generate_opts_init(&o, HS_GENERATE_RMAT);
  o.scale = 11;
  o.edge_factor = 8;
  o.num_classes = 4;
  o.num_features = 24;
  o.seed = 7;
  o.force = true;
  st = hs_generate(dir, &o, NULL, NULL);
  if (st != HS_OK) return hs__fail_context(st, "generating bring-up's R-MAT graph");
  return hs_dataset_open(dir, out);
}

static hs_status prepare_data(const hs_runtime *rt, hs__bu_data *d) {
  char dir[1024];
  hs_status st = hs_dataset_bundled(rt, "cora", dir, sizeof dir);
  if (st == HS_OK) st = hs_dataset_open(dir, &d->cora_ds);
  if (st == HS_OK) st = open_generated(rt, &d->gen_ds);
  if (st != HS_OK) return st;
  d->cora = hs__dataset_graph(d->cora_ds);
  d->gen = hs__dataset_graph(d->gen_ds);
  d->cora_w = make_weights(d->cora->e);
  d->gen_w = make_weights(d->gen->e);
  if (!d->cora_w || !d->gen_w) return hs__fail(HS_ERR_NOMEM, "bring-up edge weights");
  d->cora_csr = (hs_csr){d->cora->n, d->cora->e, d->cora->indptr, d->cora->indices, d->cora_w};
  d->gen_csr = (hs_csr){d->gen->n, d->gen->e, d->gen->indptr, d->gen->indices, d->gen_w};
  return HS_OK;
}

static void free_data(hs__bu_data *d) {
  hs_dataset_close(d->cora_ds);
  hs_dataset_close(d->gen_ds);
  free(d->cora_w);
  free(d->gen_w);
}

/* ---- board checks ------------------------------------------------------------------ */

static void rule_checks(hs__bu *b, int match[HS__BOARD_MAX_DEVICES]) {
  const hs_board_profile *p = b->prof;
  const hs_device_info *devs = hs_runtime_device(b->rt, 0);
  for (int r = 0; r < p->device_count; r++) {
    const hs__board_device *rule = &p->devices[r];
    char name[48];
    snprintf(name, sizeof name, "device.%s", rule->id);
    if (match[r] >= 0) {
      const hs_device_info *d = &devs[match[r]];
      hs__bu_recordf(b, "board", name, HS_CHECK_PASS, 0, "%s '%s' (device %d, %s)",
                     hs_device_type_name(d->type), d->name, d->index, d->platform_name);
    } else {
      hs__bu_recordf(b, "board", name, rule->required ? HS_CHECK_FAIL : HS_CHECK_SKIP, 0,
                     "%s: no device matches %s[device.%s] (%s:%d)%s",
                     rule->required ? "absent" : "absent, optional",
                     rule->required ? "the required rule " : "the rule ", rule->id, p->path,
                     rule->line, rule->required ? "" : ": its checks are skipped");
    }
  }
}

static bool has_extension(const char *list, const char *ext, size_t n) {
  for (const char *s = list; (s = strstr(s, ext)) != NULL; s += n)
    if ((s == list || s[-1] == ' ') && (s[n] == ' ' || s[n] == '\0')) return true;
  return false;
}

/* [require] on one device that takes a role. Only keys the profile sets
 * make checks. */
static void require_checks(hs__bu *b, const hs_dev *dev) {
  const hs_board_profile *p = b->prof;
  const hs_device_info *d = &dev->info;
  char scope[32];
  snprintf(scope, sizeof scope, "dev%d", d->index);
  struct {
    const char *key;
    uint64_t have, want;
  } sizes[] = {
      {"min_global_memory", d->global_mem_bytes, (uint64_t)p->require.min_global_memory},
      {"min_max_alloc", d->max_alloc_bytes, (uint64_t)p->require.min_max_alloc},
      {"min_local_memory", d->local_mem_bytes, (uint64_t)p->require.min_local_memory},
      {"min_compute_units", d->compute_units, (uint64_t)p->require.min_compute_units},
  };
  for (size_t i = 0; i < HS_ARRAY_LEN(sizes); i++) {
    if (sizes[i].want == 0) continue;
    char name[64];
    snprintf(name, sizeof name, "require.%s", sizes[i].key);
    bool ok = sizes[i].have >= sizes[i].want;
    char have[32], want[32];
    if (i < 3) {
      hs__fmt_bytes(sizes[i].have, have, sizeof have);
      hs__fmt_bytes(sizes[i].want, want, sizeof want);
    } else {
      snprintf(have, sizeof have, "%" PRIu64, sizes[i].have);
      snprintf(want, sizeof want, "%" PRIu64, sizes[i].want);
    }
    hs__bu_recordf(b, scope, name, ok ? HS_CHECK_PASS : HS_CHECK_FAIL, 0,
                   "'%s' has %s, the profile requires at least %s", d->name, have, want);
  }
  for (const char *s = p->require.extensions; *s;) {
    size_t n = strcspn(s, " ");
    char ext[128], name[160];
    snprintf(ext, sizeof ext, "%.*s", (int)n, s);
    snprintf(name, sizeof name, "require.%s", ext);
    bool ok = has_extension(d->extensions, ext, strlen(ext));
    hs__bu_recordf(b, scope, name, ok ? HS_CHECK_PASS : HS_CHECK_FAIL, 0,
                   "'%s' %s %s", d->name, ok ? "reports" : "does not report", ext);
    s += n;
    while (*s == ' ') s++;
  }
  if (p->require.sub_devices && d->type == HS_DEVICE_CPU) {
    double t0 = hs__now();
    hs_dev subs[2];
    unsigned counts[2] = {1, d->compute_units > 1 ? d->compute_units - 1 : 1};
    hs_status st = d->compute_units >= 2 ? hs__subdevices_create(dev, counts, 2, subs)
                                         : hs__fail(HS_ERR_UNSUPPORTED, "one compute unit");
    if (st == HS_OK) hs__subdevices_release(subs, 2);
    hs__bu_recordf(b, scope, "require.sub_devices", st == HS_OK ? HS_CHECK_PASS : HS_CHECK_FAIL,
                   hs__now() - t0, "%s: partition by counts into %u + %u compute units%s%s",
                   d->name, counts[0], counts[1], st == HS_OK ? ": made" : ": ",
                   st == HS_OK ? "" : hs_last_error());
  }
}

/* Placement tells which devices take a role; [require] applies to those.
 * When placement fails, to every device a rule matched. */
hs_status hs__bu_place(hs__bu *b, hs_placement **out) {
  const hs_device_info *devs = hs_runtime_device(b->rt, 0);
  int n = hs_runtime_device_count(b->rt);
  hs_placement_request req;
  hs_placement_request_init(&req);
  req.devices = devs;
  req.device_count = n;
  req.profile = b->prof;
  req.topology_bytes = b->data.cora->topology_bytes;
  req.feature_bytes = b->data.cora->feature_bytes;
  req.feature_row_bytes = b->data.cora->feat_row_bytes;
  req.host_cores = hs_runtime_host_cores(b->rt);
  hs_placement_request_settings(&req, hs_runtime_settings(b->rt)); /* as the sessions place roles */
  *out = NULL;
  return hs_placement_make(&req, out);
}

/* `in_board[i]` (n entries) is set for the devices bring-up checks: those
 * the profile's device rules matched and those that take a role (an
 * override may name any device); every device when the profile declares
 * none. Others, such as a second OpenCL implementation installed beside
 * the one the board uses, are none of the board's business. */
static void board_checks(hs__bu *b, const int match[HS__BOARD_MAX_DEVICES], bool *in_board) {
  int n = hs_runtime_device_count(b->rt);
  for (int i = 0; i < n; i++) in_board[i] = b->prof->device_count == 0;
  for (int r = 0; r < b->prof->device_count; r++)
    if (match[r] >= 0 && match[r] < n) in_board[match[r]] = true;
  hs_placement *pl = NULL;
  hs_status st = hs__bu_place(b, &pl);
  bool role[64] = {false};
  if (st == HS_OK) {
    role[pl->sampler.device] = role[pl->trainer.device] = true;
    in_board[pl->sampler.device] = in_board[pl->trainer.device] = true;
    hs__bu_recordf(b, "board", "placement", HS_CHECK_PASS, 0,
                   "sampler on device %d%s, trainer on device %d%s, link %s, pipeline %s",
                   pl->sampler.device, pl->sampler.cores ? " (sub-device)" : "",
                   pl->trainer.device, pl->trainer.cores ? " (sub-device)" : "",
                   hs_role_link_name(pl->link), hs_pipeline_mode_name(pl->pipeline));
    hs_placement_free(pl);
  } else {
    hs__bu_recordf(b, "board", "placement", HS_CHECK_FAIL, 0, "%s: %s", hs_strerror(st),
                   hs_last_error());
    for (int r = 0; r < b->prof->device_count; r++)
      if (match[r] >= 0 && match[r] < 64) role[match[r]] = true;
  }
  for (int i = 0; i < n && i < 64; i++)
    if (role[i]) require_checks(b, hs__runtime_dev(b->rt, i));
}

/* ---- scopes ------------------------------------------------------------------------- */

static hs_status scope_open(hs__scope *s) {
  hs_status st = hs__ctx_create(&s->dev, 1, &s->ctx);
  if (st == HS_OK) st = hs__queue_create(&s->ctx, &s->dev, HS_QUEUE_PROFILING, &s->q);
  return st;
}

static void scope_close(hs__scope *s) {
  hs__queue_release(&s->q);
  hs__ctx_release(&s->ctx);
  hs__board_prog_files_free(&s->files);
}

/* The device compiles, launches and moves data: fill (exact) and axpy
 * (a*x+y, with or without a fused multiply-add). */
static hs_check_result selftest(hs__bu *b, hs__scope *s, hs__out *o) {
  (void)b;
  enum { N = 1000 };
  static float x[N], y[N], got[N];
  uint32_t fill_got[N];
  for (int i = 0; i < N; i++) x[i] = (float)i * 0.25f - 3.0f, y[i] = 1.0f / (float)(i + 1);
  cl_program prog = NULL;
  cl_kernel ka = NULL, kf = NULL;
  cl_mem dx = NULL, dy = NULL, du = NULL;
  float a = 1.75f;
  cl_uint n = N, value = 1000;
  size_t global = N;
  hs_status st = hs__program_get(&s->ctx, &s->dev, HS_PROG_SELFTEST, &prog);
  if (st == HS_OK) st = hs__kernel_create(prog, "hs_selftest_axpy", &s->dev, &ka);
  if (st == HS_OK) st = hs__kernel_create(prog, "hs_selftest_fill_u32", &s->dev, &kf);
  if (st == HS_OK) st = hs__mem_create(&s->ctx, CL_MEM_READ_WRITE, sizeof x, &dx);
  if (st == HS_OK) st = hs__mem_create(&s->ctx, CL_MEM_READ_WRITE, sizeof y, &dy);
  if (st == HS_OK) st = hs__mem_create(&s->ctx, CL_MEM_READ_WRITE, sizeof fill_got, &du);
  if (st == HS_OK) st = hs__mem_write(s->q, dx, true, 0, sizeof x, x, 0, NULL, NULL);
  if (st == HS_OK) st = hs__mem_write(s->q, dy, true, 0, sizeof y, y, 0, NULL, NULL);
  hs_karg aa[] = {HS_KARG(a), HS_KARG(dx), HS_KARG(dy), HS_KARG(n)};
  hs_karg fa[] = {HS_KARG(du), HS_KARG(value), HS_KARG(n)};
  if (st == HS_OK) st = hs__kernel_args(ka, aa, 4);
  if (st == HS_OK) st = hs__kernel_args(kf, fa, 3);
  if (st == HS_OK) st = hs__launch(s->q, ka, 1, &global, NULL, 0, NULL, NULL);
  if (st == HS_OK) st = hs__launch(s->q, kf, 1, &global, NULL, 0, NULL, NULL);
  if (st == HS_OK) st = hs__queue_finish(s->q);
  if (st == HS_OK) st = hs__mem_read(s->q, dy, true, 0, sizeof got, got, 0, NULL, NULL);
  if (st == HS_OK) st = hs__mem_read(s->q, du, true, 0, sizeof fill_got, fill_got, 0, NULL, NULL);
  hs__mem_release(&dx), hs__mem_release(&dy), hs__mem_release(&du);
  hs__kernel_release(&ka), hs__kernel_release(&kf);
  hs__program_release(&prog);
  if (st != HS_OK) return hs__bu_error(o, "self-test", st);
  for (int i = 0; i < N; i++) {
    float plain = a * x[i] + y[i], fused = fmaf(a, x[i], y[i]);
    if (fill_got[i] != value + (uint32_t)i || (got[i] != plain && got[i] != fused)) {
      snprintf(o->detail, sizeof o->detail, "element %d: fill %u (want %u), axpy %.9g (want %.9g)",
               i, fill_got[i], value + (uint32_t)i, (double)got[i], (double)plain);
      return HS_CHECK_FAIL;
    }
  }
  o->digest = hs__fnv(HS__FNV_SEED, fill_got, sizeof fill_got);
  snprintf(o->detail, sizeof o->detail, "compiled, launched, %d-element fill and axpy correct", N);
  return HS_CHECK_PASS;
}

static const hs__kernel_check selftest_check[] = {{"selftest", HS_BRINGUP_QUICK, selftest, HS_PROG_SELFTEST}};

typedef struct check_list {
  const hs__kernel_check *checks;
  size_t n;
} check_list;

static const check_list families[] = {
    {selftest_check, 1},
    {hs__bu_sample_checks, 0}, /* counts filled at run time (extern sizes) */
    {hs__bu_train_checks, 0},
};

static size_t family_count(size_t f) {
  return f == 0 ? 1 : f == 1 ? hs__bu_sample_check_count : hs__bu_train_check_count;
}

/* Digests of every (scope, check) of the standard pass, for the soak. */
typedef struct digest_table {
  uint64_t *v;
  bool *have;
  size_t per_scope;
} digest_table;

static size_t checks_per_scope(void) {
  size_t n = 0;
  for (size_t f = 0; f < HS_ARRAY_LEN(families); f++) n += family_count(f);
  return n;
}

static hs_check_result run_check(hs__bu *b, hs__scope *s, const hs__kernel_check *c,
                                 hs__out *o, double *seconds) {
  memset(o, 0, sizeof *o);
  hs__clear_error();
  double t0 = hs__now();
  hs_check_result r = c->fn(b, s, o);
  *seconds = hs__now() - t0;
  return r;
}

static void scope_checks(hs__bu *b, hs__scope *s, size_t scope_i, digest_table *dt) {
  size_t k = 0;
  for (size_t f = 0; f < HS_ARRAY_LEN(families); f++)
    for (size_t i = 0; i < family_count(f); i++, k++) {
      const hs__kernel_check *c = &families[f].checks[i];
      if (c->level > b->opts.level) continue;
      if (c->program >= 0 && !hs__dev_compiles(&s->dev) &&
          !hs__prog_files_provide(s->dev.progs, (hs_prog)c->program)) {
        hs__bu_recordf(b, s->name, c->name, HS_CHECK_SKIP, 0,
                       "'%s' does not compile and the profile's [binaries] provide no program "
                       "'%s'",
                       s->dev.info.name, hs__program_def_of((hs_prog)c->program)->name);
        continue;
      }
      hs__out o;
      double secs;
      hs_check_result r = run_check(b, s, c, &o, &secs);
      hs__bu_record(b, s->name, c->name, r, secs, o.detail);
      if (r == HS_CHECK_PASS && dt->v) {
        dt->v[scope_i * dt->per_scope + k] = o.digest;
        dt->have[scope_i * dt->per_scope + k] = true;
      }
    }
}

/* ---- soak --------------------------------------------------------------------------- */

static void soak(hs__bu *b, hs__scope *scopes, int n_scopes, digest_table *dt) {
  double limit = b->opts.soak_seconds > 0 ? b->opts.soak_seconds : 120;
  double t0 = hs__now();
  uint64_t rss_first = 0, rss_last = 0;
  int rounds = 0, runs = 0, errors = 0, drifts = 0;
  char first_drift[512] = "", first_error[512] = "";
  while (hs__now() - t0 < limit) {
    for (int si = 0; si < n_scopes && hs__now() - t0 < limit; si++) {
      size_t k = 0;
      for (size_t f = 0; f < HS_ARRAY_LEN(families); f++)
        for (size_t i = 0; i < family_count(f); i++, k++) {
          const hs__kernel_check *c = &families[f].checks[i];
          size_t at = (size_t)si * dt->per_scope + k;
          if (!dt->have[at]) continue;
          hs__out o;
          double secs;
          hs_check_result r = run_check(b, &scopes[si], c, &o, &secs);
          runs++;
          if (r != HS_CHECK_PASS) {
            if (!errors++)
              snprintf(first_error, sizeof first_error, "round %d: %s.%s: %s", rounds + 1,
                       scopes[si].name, c->name, o.detail);
          } else if (o.digest != dt->v[at]) {
            if (!drifts++)
              snprintf(first_drift, sizeof first_drift,
                       "round %d: %s.%s: output digest %016" PRIx64 ", first run %016" PRIx64,
                       rounds + 1, scopes[si].name, c->name, o.digest, dt->v[at]);
          }
        }
    }
    rounds++;
    rss_last = hs__rss_bytes();
    if (rounds == 1) rss_first = rss_last;
  }
  double secs = hs__now() - t0;
  hs__bu_measure(b, "soak", "rounds", "rounds", rounds, rounds, rounds, 0, false);
  if (runs == 0) {
    hs__bu_record(b, "soak", "drift", HS_CHECK_SKIP, secs, "no kernel check passed to repeat");
    return;
  }
  if (drifts)
    hs__bu_recordf(b, "soak", "drift", HS_CHECK_FAIL, secs,
                   "%d of %d repeated results differ from the first run; first: %s", drifts, runs,
                   first_drift);
  else
    hs__bu_recordf(b, "soak", "drift", HS_CHECK_PASS, secs,
                   "%d repeated kernel results in %d rounds, every one bit-identical to the "
                   "first run",
                   runs, rounds);
  if (errors)
    hs__bu_recordf(b, "soak", "errors", HS_CHECK_FAIL, 0,
                   "%d of %d repeated checks failed; first: %s", errors, runs, first_error);
  else
    hs__bu_recordf(b, "soak", "errors", HS_CHECK_PASS, 0, "%d repeated checks, no error", runs);
  /* Round one warms every cache (programs, pools); after it, resident
   * memory should stay flat. */
  double growth = rss_last > rss_first ? (double)(rss_last - rss_first) : 0.0;
  double allowed = 16.0 * 1048576.0 + 0.05 * (double)rss_first;
  hs__bu_measure(b, "soak", "rss_growth_bytes", "B", growth, growth, growth, allowed, true);
  if (rounds < 2) {
    hs__bu_recordf(b, "soak", "memory", HS_CHECK_SKIP, 0,
                   "one round in %.0f s: growth needs two (raise --soak-seconds)", limit);
    return;
  }
  hs__bu_recordf(b, "soak", "memory", growth <= allowed ? HS_CHECK_PASS : HS_CHECK_FAIL, 0,
                 "resident memory %.1f MiB after round 1, %.1f MiB after round %d: growth %.1f MiB "
                 "(allowed %.1f MiB)",
                 (double)rss_first / 1048576.0, (double)rss_last / 1048576.0, rounds,
                 growth / 1048576.0, allowed / 1048576.0);
}

/* ---- the run ------------------------------------------------------------------------- */

static hs_status resolve_inject(hs__bu *b, const char *inject) {
  if (!inject) inject = hs_runtime_settings(b->rt)->bringup_inject;
  if (!inject || !*inject) return HS_OK;
  if (strcmp(inject, "gather") == 0) {
    b->inject_gather = true;
    return HS_OK;
  }
  return hs__fail(HS_ERR_INVALID_ARG,
                  "fault injection '%s': the only faulty variant is 'gather' "
                  "(HETSAGE_BRINGUP_INJECT)",
                  inject);
}

static void discovery_check(hs__bu *b) {
  int n = hs_runtime_device_count(b->rt);
  int np = hs_runtime_platform_count(b->rt), skipped = 0;
  char notes[512] = "";
  for (int p = 0; p < np; p++) {
    const hs_platform_info *pi = hs_runtime_platform(b->rt, p);
    if (!pi || !pi->error[0]) continue;
    skipped++;
    size_t used = strlen(notes);
    snprintf(notes + used, sizeof notes - used, "; platform '%s' skipped: %s", pi->name, pi->error);
  }
  hs__bu_recordf(b, "board", "discovery", n > 0 ? HS_CHECK_PASS : HS_CHECK_FAIL, 0,
                 "%d device(s) on %d platform(s)%s", n, np - skipped, notes);
}

hs_status hs_bringup_run(hs_runtime *rt, const hs_board_profile *profile,
                         const hs_bringup_options *opts, hs_bringup_progress_fn fn, void *user,
                         hs_bringup_report **out) {
  if (!rt || !out) return hs__fail(HS_ERR_INVALID_ARG, "hs_bringup_run: NULL argument");
  *out = NULL;
  hs__bu b;
  memset(&b, 0, sizeof b);
  b.rt = rt;
  b.fn = fn;
  b.user = user;
  b.t0 = hs__now();
  hs_bringup_options_init(&b.opts);
  if (opts) b.opts = *opts;
  if ((unsigned)b.opts.level > HS_BRINGUP_LONG)
    return hs__fail(HS_ERR_INVALID_ARG, "bring-up level %d", (int)b.opts.level);
  hs_status st = resolve_inject(&b, b.opts.inject);
  if (st != HS_OK) return st;
  if (hs_runtime_device_count(rt) == 0) return hs__fail(HS_ERR_NO_DEVICE, "bring-up: no OpenCL device");
  hs_board_profile *own = NULL;
  if (!profile) profile = hs_runtime_board(rt);
  if (!profile) {
    if ((st = hs_board_profile_load_from(hs_runtime_settings(rt)->boards_dir, NULL, &own)) != HS_OK)
      return st;
    profile = own;
  }
  b.prof = profile;
  const hs_device_info *devs = hs_runtime_device(rt, 0);
  int n_devs = hs_runtime_device_count(rt);
  hs__scope *scopes = NULL;
  int n_scopes = 0;
  hs_dev(*subs)[2] = NULL;
  bool *have_subs = NULL, *in_board = NULL;
  digest_table dt = {0};
  b.rep = hs__bu_report_new();
  if (!b.rep) {
    st = hs__fail(HS_ERR_NOMEM, "bring-up report");
    goto fail;
  }
  snprintf(b.rep->board, sizeof b.rep->board, "%s", hs_board_profile_name(profile));
  b.rep->level = b.opts.level;
  b.rep->devices = malloc(sizeof *devs * (size_t)n_devs);
  if (!b.rep->devices) {
    st = hs__fail(HS_ERR_NOMEM, "bring-up report");
    goto fail;
  }
  memcpy(b.rep->devices, devs, sizeof *devs * (size_t)n_devs);
  b.rep->n_devices = n_devs;
  if ((st = prepare_data(rt, &b.data)) != HS_OK) goto fail;

  discovery_check(&b);
  int match[HS__BOARD_MAX_DEVICES];
  if ((st = hs__board_match(profile, devs, n_devs, match)) != HS_OK) goto fail;
  rule_checks(&b, match);
  in_board = calloc((size_t)n_devs, sizeof *in_board);
  if (!in_board) {
    st = hs__fail(HS_ERR_NOMEM, "bring-up scopes");
    goto fail;
  }
  board_checks(&b, match, in_board);

  /* Scopes: every device of the board whole; from the standard level, for
   * a CPU that partitions by counts, a sub-device of half its units as
   * well. */
  scopes = calloc((size_t)n_devs * 2, sizeof *scopes);
  subs = calloc((size_t)n_devs, sizeof *subs);
  have_subs = calloc((size_t)n_devs, sizeof *have_subs);
  if (!scopes || !subs || !have_subs) {
    st = hs__fail(HS_ERR_NOMEM, "bring-up scopes");
    goto fail;
  }
  for (int i = 0; i < n_devs; i++) {
    const hs_dev *d = hs__runtime_dev(rt, i);
    hs__scope *s = &scopes[n_scopes];
    snprintf(s->name, sizeof s->name, "dev%d", i);
    if (!in_board[i]) {
      hs__bu_recordf(&b, s->name, "open", HS_CHECK_SKIP, 0,
                     "'%s' (%s) is outside board profile '%s': no rule matches it and it "
                     "takes no role",
                     d->info.name, d->info.platform_name, hs_board_profile_name(profile));
      continue;
    }
    s->dev = *d;
    s->index = i;
    const hs__board_device *rule = NULL;
    for (int k = 0; k < profile->device_count; k++)
      if (match[k] == i) rule = &profile->devices[k];
    if (!d->info.available) {
      hs__bu_recordf(&b, s->name, "open", HS_CHECK_SKIP, 0, "'%s' reports it is not available",
                     d->info.name);
      continue;
    }
    if ((st = hs__board_prog_files(rule, &d->info, &s->files)) != HS_OK) goto fail;
    s->dev.progs = &s->files;
    double t0 = hs__now();
    if ((st = scope_open(s)) != HS_OK) {
      hs__bu_recordf(&b, s->name, "open", HS_CHECK_FAIL, hs__now() - t0, "%s: %s",
                     hs_strerror(st), hs_last_error());
      scope_close(s);
      continue;
    }
    n_scopes++;
    unsigned cu = d->info.compute_units;
    if (b.opts.level >= HS_BRINGUP_STANDARD && d->info.type == HS_DEVICE_CPU &&
        d->info.partition_by_counts && cu >= 2) {
      unsigned counts[2] = {cu / 2, cu - cu / 2};
      hs__scope *u = &scopes[n_scopes];
      snprintf(u->name, sizeof u->name, "dev%d.sub%u", i, counts[0]);
      u->index = i;
      u->sub = true;
      t0 = hs__now();
      st = hs__board_prog_files(rule, &d->info, &u->files);
      if (st == HS_OK) st = hs__subdevices_create(d, counts, 2, subs[i]);
      if (st == HS_OK) {
        have_subs[i] = true;
        u->dev = subs[i][0];
        u->dev.progs = &u->files;
        st = scope_open(u);
      }
      if (st != HS_OK) {
        hs__bu_recordf(&b, u->name, "open", HS_CHECK_FAIL, hs__now() - t0, "%s: %s",
                       hs_strerror(st), hs_last_error());
        scope_close(u);
      } else {
        n_scopes++;
      }
    }
  }
  st = HS_OK;
  if (b.opts.level >= HS_BRINGUP_LONG) {
    dt.per_scope = checks_per_scope();
    dt.v = calloc((size_t)n_scopes * dt.per_scope + 1, sizeof *dt.v);
    dt.have = calloc((size_t)n_scopes * dt.per_scope + 1, sizeof *dt.have);
    if (!dt.v || !dt.have) {
      st = hs__fail(HS_ERR_NOMEM, "bring-up digests");
      goto fail;
    }
  }
  for (int si = 0; si < n_scopes; si++) scope_checks(&b, &scopes[si], (size_t)si, &dt);
  if (b.opts.level >= HS_BRINGUP_STANDARD) {
    hs__out o;
    memset(&o, 0, sizeof o);
    double t0 = hs__now();
    hs_check_result r = hs__bu_gather_host(&b, &o);
    hs__bu_record(&b, "host", "gather", r, hs__now() - t0, o.detail);
    for (int si = 0; si < n_scopes; si++) {
      if (scopes[si].sub) continue;
      int rule = -1;
      for (int k = 0; k < profile->device_count; k++)
        if (match[k] == scopes[si].index) rule = k;
      hs__bu_peaks(&b, &scopes[si], rule);
    }
    hs__bu_e2e(&b);
  }
  if (b.opts.level >= HS_BRINGUP_LONG) soak(&b, scopes, n_scopes, &dt);
  if (b.rep->nomem) st = hs__fail(HS_ERR_NOMEM, "bring-up report: no memory for a check");
fail:
  for (int si = 0; si < n_scopes; si++) scope_close(&scopes[si]);
  for (int i = 0; have_subs && i < n_devs; i++)
    if (have_subs[i]) hs__subdevices_release(subs[i], 2);
  free(subs);
  free(have_subs);
  free(in_board);
  free(scopes);
  free(dt.v);
  free(dt.have);
  free_data(&b.data);
  hs_board_profile_free(own);
  if (st != HS_OK) {
    hs_bringup_report_free(b.rep);
    return st;
  }
  b.rep->seconds = hs__now() - b.t0;
  *out = b.rep;
  return HS_OK;
}
