#include "hs_base.h"
#include "hs_config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <threads.h>
#include <time.h>
#include <unistd.h>

#define HS_ERR_DETAIL_MAX 2048

static _Thread_local char tl_detail[HS_ERR_DETAIL_MAX];

const char *hs_strerror(hs_status status) {
  switch (status) {
#define HS_X_CASE(name, value, text) \
  case name:                         \
    return text;
    HS_STATUS_LIST(HS_X_CASE)
#undef HS_X_CASE
  }
  return "unknown status";
}

const char *hs_last_error(void) { return tl_detail; }

const char *hs_version(void) { return HS_VERSION; }

unsigned hs_version_hex(void) { return HS_VERSION_HEX; }

void hs__clear_error(void) { tl_detail[0] = '\0'; }

hs_status hs__sized_check(size_t size, size_t full, const char *what) {
  if (size >= HS__SIZED_MIN && size <= full) return HS_OK;
  if (size > full && size < ((size_t)1 << 20))
    return hs__fail(HS_ERR_INVALID_ARG,
                    "%s: struct_size %zu is larger than this library's %zu: the program was "
                    "built against newer headers (library %s; check hs_version_hex())",
                    what, size, full, HS_VERSION);
  return hs__fail(HS_ERR_INVALID_ARG,
                  "%s: struct_size %zu is not a size (this library's is %zu): initialise the "
                  "struct with its *_init function",
                  what, size, full);
}

hs_status hs__sized_in(void *dst, size_t full, const void *src, const char *what) {
  size_t size;
  memcpy(&size, src, sizeof size);
  hs_status st = hs__sized_check(size, full, what);
  if (st != HS_OK) return st;
  memcpy((char *)dst + sizeof size, (const char *)src + sizeof size, size - sizeof size);
  memcpy(dst, &full, sizeof full);
  return HS_OK;
}

hs_status hs__sized_out(void *dst, const void *src, size_t full, const char *what) {
  size_t size;
  memcpy(&size, dst, sizeof size);
  hs_status st = hs__sized_check(size, full, what);
  if (st != HS_OK) return st;
  memcpy((char *)dst + sizeof size, (const char *)src + sizeof size, size - sizeof size);
  return HS_OK;
}

void hs__sized_init(void *dst, size_t size, const void *src, size_t full) {
  if (size < HS__SIZED_MIN) return;
  size_t n = size < full ? size : full;
  memcpy(dst, src, n);
  if (size > n) memset((char *)dst + n, 0, size - n);
  memcpy(dst, &size, sizeof size);
}

hs_status hs__fail(hs_status st, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(tl_detail, sizeof tl_detail, fmt, ap);
  va_end(ap);
  hs__log(HS_LOG_DEVICE, "error %s: %s", hs_strerror(st), tl_detail);
  return st;
}

hs_status hs__fail_context(hs_status st, const char *fmt, ...) {
  char prefix[512];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(prefix, sizeof prefix - 2, fmt, ap);
  va_end(ap);
  if (n < 0) return st;
  size_t plen = strlen(prefix);
  memcpy(prefix + plen, ": ", 3);
  plen += 2;
  /* Shift the old detail right (truncating its tail) and put the prefix in
   * front of it. */
  size_t old_len = strnlen(tl_detail, sizeof tl_detail - 1);
  if (plen + old_len > sizeof tl_detail - 1) old_len = sizeof tl_detail - 1 - plen;
  memmove(tl_detail + plen, tl_detail, old_len);
  memcpy(tl_detail, prefix, plen);
  tl_detail[plen + old_len] = '\0';
  return st;
}

static const char *const cat_names[HS_LOG_COUNT_] = {
    "device", "build", "data", "sample", "train", "pipeline", "cache", "place",
};

/* The one piece of global state: which categories log. */
static atomic_uint log_mask;

bool hs__log_parse(const char *list, unsigned *mask, char *why, size_t why_len) {
  *mask = 0;
  char buf[256];
  if (snprintf(buf, sizeof buf, "%s", list) >= (int)sizeof buf) {
    snprintf(why, why_len, "too long");
    return false;
  }
  char *save = NULL;
  for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
    if (strcmp(tok, "all") == 0 || strcmp(tok, "1") == 0) {
      *mask = ~0u;
      continue;
    }
    int found = -1;
    for (int i = 0; i < HS_LOG_COUNT_; i++)
      if (strcmp(tok, cat_names[i]) == 0) found = i;
    if (found < 0) {
      char known[160] = "";
      for (int i = 0; i < HS_LOG_COUNT_; i++)
        snprintf(known + strlen(known), sizeof known - strlen(known), "%s, ", cat_names[i]);
      snprintf(why, why_len, "unknown log category '%s' (expected %sor all, comma-separated)",
               tok, known);
      return false;
    }
    *mask |= 1u << found;
  }
  return true;
}

void hs__log_set_mask(unsigned mask) { atomic_store(&log_mask, mask); }

bool hs__log_enabled(hs_log_cat cat) { return (atomic_load(&log_mask) >> cat) & 1u; }

void hs__log(hs_log_cat cat, const char *fmt, ...) {
  if (!hs__log_enabled(cat)) return;
  char line[2048];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  fprintf(stderr, "hetsage[%s] %s\n", cat_names[cat], line);
}

double hs__now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Read one sysfs attribute of cpu0's cache `index`; false if absent. */
static bool cache_attr(int index, const char *attr, char *buf, size_t len) {
  char path[96];
  snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/%s", index, attr);
  FILE *f = fopen(path, "r");
  if (!f) return false;
  bool ok = fgets(buf, (int)len, f) != NULL;
  fclose(f);
  return ok;
}

uint64_t hs__proc_kb_field(const char *path, const char *field) {
  FILE *f = fopen(path, "r");
  if (!f) return 0;
  char line[256];
  size_t k = strlen(field);
  unsigned long long kb = 0;
  while (fgets(line, sizeof line, f))
    if (strncmp(line, field, k) == 0 && line[k] == ':' &&
        sscanf(line + k + 1, "%llu kB", &kb) == 1)
      break;
  fclose(f);
  return (uint64_t)kb * 1024;
}

bool hs__thp_available(void) {
  FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
  if (!f) return false;
  char line[128] = "";
  bool ok = fgets(line, sizeof line, f) &&
            (strstr(line, "[always]") != NULL || strstr(line, "[madvise]") != NULL);
  fclose(f);
  return ok;
}

#define HUGE_PAGE ((size_t)2 << 20)

void *hs__huge_map(size_t bytes, size_t *len, bool *advised) {
  *len = 0;
  *advised = false;
  if (bytes > SIZE_MAX - 2 * HUGE_PAGE) {
    errno = ENOMEM;
    return NULL;
  }
  size_t n = (bytes + HUGE_PAGE - 1) / HUGE_PAGE * HUGE_PAGE;
  /* map one huge page more and trim the ends to a 2 MiB boundary */
  char *raw = mmap(NULL, n + HUGE_PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1,
                   0);
  if (raw == MAP_FAILED) return NULL;
  char *p = (char *)(((uintptr_t)raw + HUGE_PAGE - 1) & ~(uintptr_t)(HUGE_PAGE - 1));
  if (p > raw) munmap(raw, (size_t)(p - raw));
  size_t tail = (size_t)(raw + n + HUGE_PAGE - (p + n));
  if (tail) munmap(p + n, tail);
#ifdef MADV_HUGEPAGE
  *advised = madvise(p, n, MADV_HUGEPAGE) == 0;
#endif
  *len = n;
  return p;
}

void hs__huge_unmap(void *p, size_t len) {
  if (p) munmap(p, len);
}

static size_t llc_bytes_read(void) {
  size_t best = 0;
  for (int i = 0; i < 16; i++) {
    char type[32], size[32];
    if (!cache_attr(i, "type", type, sizeof type) || !cache_attr(i, "size", size, sizeof size))
      continue;
    if (strncmp(type, "Instruction", 11) == 0) continue;
    char *end = NULL;
    unsigned long long v = strtoull(size, &end, 10);
    if (end && (*end == 'K' || *end == 'k')) v <<= 10;
    else if (end && *end == 'M') v <<= 20;
    else if (end && *end == 'G') v <<= 30;
    if (v > best) best = (size_t)v;
  }
  if (best) return best;
#ifdef _SC_LEVEL3_CACHE_SIZE
  long llc = sysconf(_SC_LEVEL3_CACHE_SIZE);
  if (llc > 0) return (size_t)llc;
#endif
  return 0;
}

/* Read once: sessions and gather pools ask on creation. */
size_t hs__llc_bytes(void) {
  static atomic_size_t known; /* 0: not read yet (or unknown: read again) */
  size_t v = atomic_load(&known);
  if (v == 0) atomic_store(&known, v = llc_bytes_read());
  return v;
}

float hs__half_to_float(uint16_t h) {
  uint32_t sign = (uint32_t)(h >> 15) << 31, exp = (h >> 10) & 0x1f, man = h & 0x3ff, bits;
  if (exp == 0) {
    if (man == 0) {
      bits = sign;
    } else { /* subnormal: renormalise */
      exp = 113;
      while (!(man & 0x400)) {
        man <<= 1;
        exp--;
      }
      bits = sign | (exp << 23) | ((man & 0x3ff) << 13);
    }
  } else if (exp == 31) {
    bits = sign | 0x7f800000u | (man << 13);
  } else {
    bits = sign | ((exp + 112) << 23) | (man << 13);
  }
  float f;
  memcpy(&f, &bits, sizeof f);
  return f;
}

void hs__sync_parent_dir(const char *path) {
  char *copy = strdup(path);
  if (!copy) return;
  char *slash = strrchr(copy, '/');
  const char *dir = ".";
  if (slash == copy)
    dir = "/";
  else if (slash) {
    *slash = '\0';
    dir = copy;
  }
  int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd >= 0) {
    fsync(fd);
    close(fd);
  }
  free(copy);
}
