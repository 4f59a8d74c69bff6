/* Placement text: enum names, device labels, reasons, plan descriptions,
 * and reading role overrides from the environment. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hs_place.h"

const char *hs_pipeline_mode_name(hs_pipeline_mode mode) {
  switch (mode) {
    case HS_PIPELINE_AUTO: return "auto";
    case HS_PIPELINE_THREADS: return "threads";
    case HS_PIPELINE_ASYNC: return "async";
    case HS_PIPELINE_OFF: return "off";
  }
  return "unknown";
}

const char *hs_cache_fill_name(hs_cache_fill fill) {
  switch (fill) {
    case HS_CACHE_FILL_FIRST: return "first";
    case HS_CACHE_FILL_DEGREE: return "degree";
    case HS_CACHE_FILL_PRESAMPLE: return "presample";
  }
  return "unknown";
}

const char *hs_role_link_name(hs_role_link link) {
  switch (link) {
    case HS_LINK_HOST: return "host";
    case HS_LINK_SAME_DEVICE: return "same-device";
    case HS_LINK_SUB_DEVICES: return "sub-devices";
    case HS_LINK_CONTEXT: return "context";
  }
  return "unknown";
}

void hs_placement_request_settings(hs_placement_request *req, const hs_settings *settings) {
  /* The overrides are fields of every layout; a struct_size that is no
   * size leaves the request alone (placement then refuses it). */
  if (!req || !settings ||
      req->struct_size < offsetof(hs_placement_request, trainer_source) + sizeof(char *) ||
      req->struct_size > sizeof *req)
    return;
  if (!req->sampler && settings->sampler) {
    req->sampler = settings->sampler;
    req->sampler_source = "HETSAGE_SAMPLER";
  }
  if (!req->trainer && settings->trainer) {
    req->trainer = settings->trainer;
    req->trainer_source = "HETSAGE_TRAINER";
  }
}

bool hs__platform_matches(const hs_device_info *d, const char *what) {
  return strcasecmp(d->platform_key, what) == 0 || strcasestr(d->platform_name, what) ||
         strcasestr(d->platform_vendor, what);
}

const char *hs__place_dev(const hs_device_info *d, char *buf, size_t cap) {
  const char *kind = d->type == HS_DEVICE_CPU           ? "CPU"
                     : d->type == HS_DEVICE_GPU         ? "GPU"
                     : d->type == HS_DEVICE_ACCELERATOR ? "accelerator"
                                                        : "device";
  if (d->selector[0])
    snprintf(buf, cap, "%s '%s' (%s, index %d%s)", kind, d->name, d->selector, d->index,
             d->simulator ? ", a simulator: correct results, not real speed" : "");
  else
    snprintf(buf, cap, "%s '%s' (index %d%s)", kind, d->name, d->index,
             d->simulator ? ", a simulator: correct results, not real speed" : "");
  return buf;
}

void hs__place_reason(hs__placer *pc, const char *topic, const char *fmt,
                      ...) {
  hs__plan_box *box = pc->box;
  if (box->nomem) return;
  if (box->pub.reason_count == box->cap) {
    size_t cap = box->cap ? 2 * box->cap : 16;
    hs_placement_reason *r = realloc(box->reasons, cap * sizeof *r);
    if (!r) {
      box->nomem = true;
      return;
    }
    box->reasons = r;
    box->cap = cap;
    box->pub.reasons = r;
  }
  va_list ap;
  va_start(ap, fmt);
  char *text = NULL;
  int n = vasprintf(&text, fmt, ap);
  va_end(ap);
  if (n < 0) {
    box->nomem = true;
    return;
  }
  hs__log(HS_LOG_PLACE, "%s: %s", topic, text);
  box->reasons[box->pub.reason_count++] =
      (hs_placement_reason){.topic = topic, .text = text};
}

hs_status hs__placement_revise(hs_placement *pl, const char *topic, const char *subject,
                               const char *fmt, ...) {
  hs__plan_box *box = (hs__plan_box *)pl;
  va_list ap;
  va_start(ap, fmt);
  char *text = NULL;
  int n = vasprintf(&text, fmt, ap);
  va_end(ap);
  if (n < 0) return hs__fail(HS_ERR_NOMEM, "out of memory for a placement reason");
  hs__log(HS_LOG_PLACE, "%s: %s (revised)", topic, text);
  size_t sl = strlen(subject);
  for (size_t i = 0; i < pl->reason_count; i++) {
    const char *t = box->reasons[i].text;
    if (strcmp(box->reasons[i].topic, topic) == 0 && strncmp(t, subject, sl) == 0 &&
        (t[sl] == ' ' || t[sl] == ':' || t[sl] == '\0')) {
      free((char *)t);
      box->reasons[i].text = text;
      return HS_OK;
    }
  }
  if (pl->reason_count == box->cap) {
    size_t cap = box->cap ? 2 * box->cap : 16;
    hs_placement_reason *r = realloc(box->reasons, cap * sizeof *r);
    if (!r) {
      free(text);
      return hs__fail(HS_ERR_NOMEM, "out of memory for a placement reason");
    }
    box->reasons = r;
    box->cap = cap;
    pl->reasons = r;
  }
  box->reasons[pl->reason_count++] = (hs_placement_reason){.topic = topic, .text = text};
  return HS_OK;
}

void hs_placement_free(hs_placement *plan) {
  if (!plan) return;
  hs__plan_box *box = (hs__plan_box *)plan;
  for (size_t i = 0; i < plan->reason_count; i++)
    free((char *)box->reasons[i].text);
  free(box->reasons);
  free(box->binaries[0]);
  free(box->binaries[1]);
  free(box);
}

/* Appends to buf like snprintf, counting what did not fit. */
typedef struct out_buf {
  char *buf;
  size_t cap, len;
} out_buf;

static void put(out_buf *o, const char *fmt, ...) HS_PRINTF(2, 3);
static void put(out_buf *o, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char *dst = o->len < o->cap ? o->buf + o->len : NULL;
  size_t room = o->len < o->cap ? o->cap - o->len : 0;
  int n = vsnprintf(dst, room, fmt, ap);
  va_end(ap);
  if (n > 0) o->len += (size_t)n;
}

static void put_role(out_buf *o, const char *name, const hs_role_plan *r) {
  char b[32];
  put(o, "%s: device %d", name, r->device);
  if (r->selector[0]) put(o, " (%s%s)", r->selector, r->simulator ? ", simulator" : "");
  if (r->profile_id[0]) put(o, " ([device.%s])", r->profile_id);
  if (r->cores) put(o, ", sub-device of %" PRIu32 " compute unit(s)", r->cores);
  else put(o, ", whole device");
  put(o, ", budget %s", hs__fmt_bytes(r->budget_bytes, b, sizeof b));
  if (r->binary) put(o, ", prebuilt binary %s", r->binary);
  put(o, "\n");
}

size_t hs_placement_describe(const hs_placement *pl, char *buf, size_t cap) {
  out_buf o = {.buf = buf, .cap = buf ? cap : 0};
  if (o.cap) buf[0] = '\0';
  if (!pl) return 0;
  char a[32], b[32];
  put(&o, "board: %s\n", pl->board);
  put_role(&o, "sampler", &pl->sampler);
  put_role(&o, "trainer", &pl->trainer);
  put(&o, "link: %s (%s)\n", hs_role_link_name(pl->link),
      pl->shared_context ? "blocks go device to device"
                         : "blocks go through the host");
  put(&o, "pipeline: %s, depth %d\n", hs_pipeline_mode_name(pl->pipeline),
      pl->depth);
  put(&o, "host: %d core(s), %d reserved for host threads, %d gather "
          "thread(s), budget %s\n",
      pl->host_cores, pl->host_reserved_cores, pl->gather_threads,
      pl->host_budget_bytes ? hs__fmt_bytes(pl->host_budget_bytes, a, sizeof a)
                            : "none");
  put(&o, "cache: %" PRIu64 " trainer row(s), host %s, fill %s\n",
      pl->cache_trainer_rows, hs__fmt_bytes(pl->cache_host_bytes, b, sizeof b),
      hs_cache_fill_name(pl->cache_fill));
  put(&o, "zero-copy: %s\n", pl->zero_copy ? "yes" : "no");
  put(&o, "why:\n");
  for (size_t i = 0; i < pl->reason_count; i++)
    put(&o, "  %s: %s\n", pl->reasons[i].topic, pl->reasons[i].text);
  return o.len;
}
