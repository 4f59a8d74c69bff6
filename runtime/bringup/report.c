/* The bring-up report: checks and figures as they are made, accessors, and
 * the JSON and JUnit renderings. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/hs_engine.h"
#include "hs_bringup_int.h"

hs_bringup_report *hs__bu_report_new(void) { return calloc(1, sizeof(hs_bringup_report)); }

void hs_bringup_report_free(hs_bringup_report *r) {
  if (!r) return;
  for (size_t i = 0; i < r->n_checks; i++) {
    free((char *)r->checks[i].name);
    free((char *)r->checks[i].scope);
    free((char *)r->checks[i].detail);
  }
  for (size_t i = 0; i < r->n_meas; i++) {
    free((char *)r->meas[i].name);
    free((char *)r->meas[i].scope);
    free((char *)r->meas[i].metric);
    free((char *)r->meas[i].unit);
  }
  free(r->checks);
  free(r->meas);
  free(r->devices);
  free(r);
}

static char *join(const char *scope, const char *name) {
  size_t n = strlen(scope) + strlen(name) + 2;
  char *s = malloc(n);
  if (s) snprintf(s, n, "%s.%s", scope, name);
  return s;
}

void hs__bu_record(hs__bu *b, const char *scope, const char *name, hs_check_result res,
                   double seconds, const char *detail) {
  hs_bringup_report *r = b->rep;
  if (r->n_checks == r->cap_checks) {
    size_t cap = r->cap_checks ? 2 * r->cap_checks : 64;
    hs_bringup_check *c = realloc(r->checks, cap * sizeof *c);
    if (!c) {
      r->nomem = true;
      return;
    }
    r->checks = c;
    r->cap_checks = cap;
  }
  hs_bringup_check *c = &r->checks[r->n_checks];
  c->name = join(scope, name);
  c->scope = strdup(scope);
  c->detail = strdup(detail ? detail : "");
  c->result = res;
  c->seconds = seconds;
  if (!c->name || !c->scope || !c->detail) {
    free((char *)c->name), free((char *)c->scope), free((char *)c->detail);
    r->nomem = true;
    return;
  }
  r->n_checks++;
  hs__log(HS_LOG_DEVICE, "bring-up: %s: %s (%.2f s) %s", c->name, hs_check_result_name(res),
          seconds, c->detail);
  if (b->fn) b->fn(b->user, c);
}

void hs__bu_recordf(hs__bu *b, const char *scope, const char *name, hs_check_result r,
                    double seconds, const char *fmt, ...) {
  char detail[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(detail, sizeof detail, fmt, ap);
  va_end(ap);
  hs__bu_record(b, scope, name, r, seconds, detail);
}

void hs__bu_measure(hs__bu *b, const char *scope, const char *metric, const char *unit,
                    double median, double min, double max, double threshold, bool upper) {
  hs_bringup_report *r = b->rep;
  if (r->n_meas == r->cap_meas) {
    size_t cap = r->cap_meas ? 2 * r->cap_meas : 32;
    hs_bringup_measurement *m = realloc(r->meas, cap * sizeof *m);
    if (!m) {
      r->nomem = true;
      return;
    }
    r->meas = m;
    r->cap_meas = cap;
  }
  hs_bringup_measurement *m = &r->meas[r->n_meas];
  m->name = join(scope, metric);
  m->scope = strdup(scope);
  m->metric = strdup(metric);
  m->unit = strdup(unit);
  m->median = median, m->min = min, m->max = max;
  m->threshold = threshold;
  m->upper_bound = upper;
  if (!m->name || !m->scope || !m->metric || !m->unit) {
    free((char *)m->name), free((char *)m->scope), free((char *)m->metric), free((char *)m->unit);
    r->nomem = true;
    return;
  }
  r->n_meas++;
}

/* ---- accessors --------------------------------------------------------------- */

size_t hs_bringup_report_check_count(const hs_bringup_report *r) { return r ? r->n_checks : 0; }

const hs_bringup_check *hs_bringup_report_check(const hs_bringup_report *r, size_t i) {
  return r && i < r->n_checks ? &r->checks[i] : NULL;
}

size_t hs_bringup_report_measurement_count(const hs_bringup_report *r) {
  return r ? r->n_meas : 0;
}

const hs_bringup_measurement *hs_bringup_report_measurement(const hs_bringup_report *r,
                                                            size_t i) {
  return r && i < r->n_meas ? &r->meas[i] : NULL;
}

const hs_bringup_check *hs_bringup_report_find(const hs_bringup_report *r, const char *name) {
  for (size_t i = 0; r && name && i < r->n_checks; i++)
    if (strcmp(r->checks[i].name, name) == 0) return &r->checks[i];
  return NULL;
}

void hs_bringup_report_counts(const hs_bringup_report *r, int *pass, int *fail, int *skip) {
  int n[3] = {0, 0, 0};
  for (size_t i = 0; r && i < r->n_checks; i++) n[r->checks[i].result]++;
  if (pass) *pass = n[HS_CHECK_PASS];
  if (fail) *fail = n[HS_CHECK_FAIL];
  if (skip) *skip = n[HS_CHECK_SKIP];
}

const char *hs_bringup_report_board(const hs_bringup_report *r) { return r ? r->board : ""; }
hs_bringup_level hs_bringup_report_level(const hs_bringup_report *r) {
  return r ? r->level : HS_BRINGUP_QUICK;
}
double hs_bringup_report_seconds(const hs_bringup_report *r) { return r ? r->seconds : 0.0; }

/* ---- JSON ------------------------------------------------------------------------ */

static void indent(FILE *f, int n) {
  for (int i = 0; i < n; i++) fputc(' ', f);
}

static void kv_str(FILE *f, int ind, const char *k, const char *v, bool comma) {
  indent(f, ind);
  hs__json_write_string(f, k);
  fputs(": ", f);
  hs__json_write_string(f, v);
  fputs(comma ? ",\n" : "\n", f);
}

static void kv_bool(FILE *f, int ind, const char *k, bool v) {
  indent(f, ind);
  fprintf(f, "\"%s\": %s,\n", k, v ? "true" : "false");
}

void hs_device_info_write_json(FILE *f, const hs_device_info *d, int ind) {
  if (!f || !d) return;
  int in = ind + 2;
  indent(f, ind);
  fputs("{\n", f);
  indent(f, in);
  fprintf(f, "\"index\": %d,\n", d->index);
  indent(f, in);
  fprintf(f, "\"platform_index\": %d,\n", d->platform_index);
  kv_str(f, in, "selector", d->selector, true);
  kv_str(f, in, "platform_key", d->platform_key, true);
  kv_str(f, in, "platform", d->platform_name, true);
  kv_bool(f, in, "simulator", d->simulator);
  kv_str(f, in, "type", hs_device_type_name(d->type), true);
  kv_str(f, in, "name", d->name, true);
  kv_str(f, in, "vendor", d->vendor, true);
  indent(f, in);
  fprintf(f, "\"vendor_id\": %u,\n", d->vendor_id);
  kv_str(f, in, "driver_version", d->driver_version, true);
  kv_str(f, in, "device_version", d->device_version, true);
  kv_str(f, in, "opencl_c_version", d->opencl_c_version, true);
  indent(f, in);
  fprintf(f, "\"compute_units\": %u,\n", d->compute_units);
  indent(f, in);
  fprintf(f, "\"clock_mhz\": %u,\n", d->clock_mhz);
  indent(f, in);
  fprintf(f, "\"global_mem_bytes\": %" PRIu64 ",\n", d->global_mem_bytes);
  indent(f, in);
  fprintf(f, "\"local_mem_bytes\": %" PRIu64 ",\n", d->local_mem_bytes);
  indent(f, in);
  fprintf(f, "\"max_alloc_bytes\": %" PRIu64 ",\n", d->max_alloc_bytes);
  indent(f, in);
  fprintf(f, "\"global_cache_bytes\": %" PRIu64 ",\n", d->global_cache_bytes);
  indent(f, in);
  fprintf(f, "\"max_work_group_size\": %zu,\n", d->max_work_group_size);
  indent(f, in);
  fprintf(f, "\"max_work_item_sizes\": [%zu, %zu, %zu],\n", d->max_work_item_sizes[0],
          d->max_work_item_sizes[1], d->max_work_item_sizes[2]);
  kv_bool(f, in, "int64_atomics", d->int64_atomics);
  kv_bool(f, in, "fp16", d->fp16);
  kv_bool(f, in, "fp64", d->fp64);
  kv_bool(f, in, "queue_out_of_order", d->queue_out_of_order);
  kv_bool(f, in, "queue_profiling", d->queue_profiling);
  kv_bool(f, in, "native_kernels", d->native_kernels);
  indent(f, in);
  fprintf(f,
          "\"partition\": {\"max_sub_devices\": %u, \"equally\": %s, \"by_counts\": %s, "
          "\"by_affinity\": %s},\n",
          d->max_sub_devices, d->partition_equally ? "true" : "false",
          d->partition_by_counts ? "true" : "false", d->partition_by_affinity ? "true" : "false");
  kv_bool(f, in, "unified_memory", d->unified_memory);
  kv_bool(f, in, "compiler_available", d->compiler_available);
  kv_bool(f, in, "available", d->available);
  indent(f, in);
  fputs("\"pci_bus_id\": ", f);
  if (d->has_pci_bus_id) hs__json_write_string(f, d->pci_bus_id);
  else fputs("null", f);
  fputs(",\n", f);
  indent(f, in);
  fputs("\"cpuset\": ", f);
  if (d->cpuset[0]) hs__json_write_string(f, d->cpuset);
  else fputs("null", f);
  fputs(",\n", f);
  kv_str(f, in, "extensions", d->extensions, false);
  indent(f, ind);
  fputs("}", f);
}

hs_status hs_bringup_report_write_json(const hs_bringup_report *r, FILE *f) {
  if (!r || !f) return hs__fail(HS_ERR_INVALID_ARG, "hs_bringup_report_write_json: NULL argument");
  int pass, fail, skip;
  hs_bringup_report_counts(r, &pass, &fail, &skip);
  fputs("{\n  \"hetsage_bringup\": 1,\n  \"version\": ", f);
  hs__json_write_string(f, hs_version());
  fputs(",\n  \"board\": ", f);
  hs__json_write_string(f, r->board);
  fputs(",\n  \"level\": ", f);
  hs__json_write_string(f, hs_bringup_level_name(r->level));
  fprintf(f, ",\n  \"seconds\": %.3f,\n", r->seconds);
  fprintf(f, "  \"summary\": {\"pass\": %d, \"fail\": %d, \"skip\": %d, \"total\": %zu},\n", pass,
          fail, skip, r->n_checks);
  fputs("  \"results\": {", f);
  for (size_t i = 0; i < r->n_checks; i++) {
    fputs(i ? ",\n    " : "\n    ", f);
    hs__json_write_string(f, r->checks[i].name);
    fputs(": ", f);
    hs__json_write_string(f, hs_check_result_name(r->checks[i].result));
  }
  fputs(r->n_checks ? "\n  },\n" : "},\n", f);
  fputs("  \"details\": {", f);
  for (size_t i = 0; i < r->n_checks; i++) {
    const hs_bringup_check *c = &r->checks[i];
    fputs(i ? ",\n    " : "\n    ", f);
    hs__json_write_string(f, c->name);
    fputs(": {\"scope\": ", f);
    hs__json_write_string(f, c->scope);
    fputs(", \"result\": ", f);
    hs__json_write_string(f, hs_check_result_name(c->result));
    fprintf(f, ", \"seconds\": %.3f, \"detail\": ", c->seconds);
    hs__json_write_string(f, c->detail);
    fputs("}", f);
  }
  fputs(r->n_checks ? "\n  },\n" : "},\n", f);
  fputs("  \"measurements\": {", f);
  for (size_t i = 0; i < r->n_meas; i++) {
    const hs_bringup_measurement *m = &r->meas[i];
    fputs(i ? ",\n    " : "\n    ", f);
    hs__json_write_string(f, m->name);
    fputs(": {\"scope\": ", f);
    hs__json_write_string(f, m->scope);
    fputs(", \"metric\": ", f);
    hs__json_write_string(f, m->metric);
    fputs(", \"unit\": ", f);
    hs__json_write_string(f, m->unit);
    fputs(", \"median\": ", f);
    hs__json_write_number(f, m->median);
    fputs(", \"min\": ", f);
    hs__json_write_number(f, m->min);
    fputs(", \"max\": ", f);
    hs__json_write_number(f, m->max);
    fputs(", \"threshold\": ", f);
    if (m->threshold > 0) hs__json_write_number(f, m->threshold);
    else fputs("null", f);
    fprintf(f, ", \"bound\": \"%s\"}", m->upper_bound ? "upper" : "lower");
  }
  fputs(r->n_meas ? "\n  },\n" : "},\n", f);
  fputs("  \"devices\": [", f);
  for (int i = 0; i < r->n_devices; i++) {
    fputs(i ? ",\n" : "\n", f);
    hs_device_info_write_json(f, &r->devices[i], 4);
  }
  fputs(r->n_devices ? "\n  ]\n}\n" : "]\n}\n", f);
  if (fflush(f) != 0 || ferror(f)) return hs__fail(HS_ERR_IO, "writing the bring-up JSON failed");
  return HS_OK;
}

/* ---- JUnit ----------------------------------------------------------------------- */

hs_status hs_bringup_report_write_junit(const hs_bringup_report *r, FILE *f) {
  if (!r || !f) return hs__fail(HS_ERR_INVALID_ARG, "hs_bringup_report_write_junit: NULL argument");
  int pass, fail, skip;
  hs_bringup_report_counts(r, &pass, &fail, &skip);
  fputs("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"", f);
  hs__xml_write_text(f, "hetsage bringup ");
  hs__xml_write_text(f, r->board);
  fprintf(f, "\" tests=\"%zu\" failures=\"%d\" skipped=\"%d\" errors=\"0\" time=\"%.3f\">\n",
          r->n_checks, fail, skip, r->seconds);
  /* One suite per scope, in order of first appearance. */
  for (size_t i = 0; i < r->n_checks; i++) {
    const char *scope = r->checks[i].scope;
    bool seen = false;
    for (size_t j = 0; j < i && !seen; j++) seen = strcmp(r->checks[j].scope, scope) == 0;
    if (seen) continue;
    size_t n = 0;
    int nf = 0, ns = 0;
    double t = 0;
    for (size_t j = i; j < r->n_checks; j++) {
      if (strcmp(r->checks[j].scope, scope) != 0) continue;
      n++;
      nf += r->checks[j].result == HS_CHECK_FAIL;
      ns += r->checks[j].result == HS_CHECK_SKIP;
      t += r->checks[j].seconds;
    }
    fputs("  <testsuite name=\"", f);
    hs__xml_write_text(f, scope);
    fprintf(f, "\" tests=\"%zu\" failures=\"%d\" skipped=\"%d\" errors=\"0\" time=\"%.3f\">\n", n,
            nf, ns, t);
    for (size_t j = i; j < r->n_checks; j++) {
      const hs_bringup_check *c = &r->checks[j];
      if (strcmp(c->scope, scope) != 0) continue;
      fputs("    <testcase classname=\"", f);
      hs__xml_write_text(f, scope);
      fputs("\" name=\"", f);
      hs__xml_write_text(f, c->name);
      fprintf(f, "\" time=\"%.3f\"", c->seconds);
      if (c->result == HS_CHECK_PASS) {
        fputs(">\n      <system-out>", f);
        hs__xml_write_text(f, c->detail);
        fputs("</system-out>\n    </testcase>\n", f);
      } else {
        fputs(c->result == HS_CHECK_FAIL ? ">\n      <failure message=\"" : ">\n      <skipped message=\"", f);
        hs__xml_write_text(f, c->detail);
        fputs(c->result == HS_CHECK_FAIL ? "\" type=\"mismatch\">" : "\">", f);
        hs__xml_write_text(f, c->detail);
        fputs(c->result == HS_CHECK_FAIL ? "</failure>\n    </testcase>\n" : "</skipped>\n    </testcase>\n", f);
      }
    }
    fputs("  </testsuite>\n", f);
  }
  fputs("</testsuites>\n", f);
  if (fflush(f) != 0 || ferror(f)) return hs__fail(HS_ERR_IO, "writing the JUnit XML failed");
  return HS_OK;
}
