/* Internal base of every layer: error detail, logging, small helpers.
 * Lives at the bottom (devices/) so that arrows keep pointing down. */
#ifndef HS_BASE_H
#define HS_BASE_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hetsage/status.h"

#if defined(__GNUC__)
#define HS_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define HS_PRINTF(a, b)
#endif

/* Record `st` with a formatted detail in the thread-local error slot and
 * return `st`, so that callers can write `return hs__fail(st, ...)`. */
hs_status hs__fail(hs_status st, const char *fmt, ...) HS_PRINTF(2, 3);
/* Prepend context ("while opening X: ") to the current detail; returns st. */
hs_status hs__fail_context(hs_status st, const char *fmt, ...) HS_PRINTF(2, 3);
void hs__clear_error(void);

/* Log categories, enabled process-wide by hs_log_enable (the runtime's
 * `debug` setting, HETSAGE_DEBUG: cat1,cat2 or "all"). */
typedef enum hs_log_cat {
  HS_LOG_DEVICE = 0,
  HS_LOG_BUILD,
  HS_LOG_DATA,
  HS_LOG_SAMPLE,
  HS_LOG_TRAIN,
  HS_LOG_PIPELINE,
  HS_LOG_CACHE,
  HS_LOG_PLACE,
  HS_LOG_COUNT_
} hs_log_cat;

bool hs__log_enabled(hs_log_cat cat);
/* Parse "cat1,cat2" or "all" ("1" too) into a mask; false with the reason
 * (the unknown category and the known ones) in `why`. */
bool hs__log_parse(const char *list, unsigned *mask, char *why, size_t why_len);
void hs__log_set_mask(unsigned mask);
void hs__log(hs_log_cat cat, const char *fmt, ...) HS_PRINTF(2, 3);

/* Overflow-checked size arithmetic: false on overflow. */
static inline bool hs__mul_size(size_t a, size_t b, size_t *out) {
  return !__builtin_mul_overflow(a, b, out);
}
static inline bool hs__add_size(size_t a, size_t b, size_t *out) {
  return !__builtin_add_overflow(a, b, out);
}

/* Monotonic clock in seconds. */
double hs__now(void);

/* Bytes of the largest data cache of the CPU running the caller (the
 * last-level cache), from what the kernel reports (sysfs), else the C
 * library's figure; 0 when neither knows. The C library's may be wrong in
 * virtual machines (it reads CPUID: 320 MiB for a 32 MiB cache seen). */
size_t hs__llc_bytes(void);

/* fsync the directory holding `path`, so that a rename that published the
 * file there survives a crash (best effort: failures are ignored, the
 * rename itself having succeeded). */
void hs__sync_parent_dir(const char *path);

/* IEEE binary16 -> binary32, exact. */
float hs__half_to_float(uint16_t h);

/* The "FIELD: N kB" line of a /proc file such as /proc/meminfo or
 * /proc/self/smaps_rollup, in bytes; 0 when the file or the field is
 * missing. */
uint64_t hs__proc_kb_field(const char *path, const char *field);

/* The host's transparent huge page mode for madvise'd memory: true when
 * /sys/kernel/mm/transparent_hugepage/enabled is "always" or "madvise". */
bool hs__thp_available(void);

/* Anonymous read-write memory of `bytes` rounded up to 2 MiB (*len),
 * 2 MiB aligned and advised MADV_HUGEPAGE; *advised false when the kernel
 * refused the advice (the memory is still usable, on 4 KiB pages). NULL
 * (errno set) when it cannot be mapped. Release with hs__huge_unmap. */
void *hs__huge_map(size_t bytes, size_t *len, bool *advised);
void hs__huge_unmap(void *p, size_t len);

#define HS_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* ---- sized structs of the public API (hetsage/version.h) ----------------- */

/* The smallest struct_size accepted: the field itself. */
#define HS__SIZED_MIN sizeof(size_t)

/* Check a caller's struct_size `size` against the `full` size this library
 * knows; HS_ERR_INVALID_ARG naming `what` otherwise. */
hs_status hs__sized_check(size_t size, size_t full, const char *what);
/* A caller's struct `src` (struct_size first) into `dst`, a struct of
 * `full` bytes already holding the defaults: the caller's bytes replace
 * them, the rest keep theirs; dst's struct_size becomes `full`. */
hs_status hs__sized_in(void *dst, size_t full, const void *src, const char *what);
/* A result `src` of `full` bytes into the caller's struct `dst`, whose
 * struct_size says how much of it there is room for (and stays as it
 * is). */
hs_status hs__sized_out(void *dst, const void *src, size_t full, const char *what);
/* Defaults `src` (`full` bytes) into a caller's struct of `size` bytes,
 * whose struct_size becomes `size`: what a public *_init does. */
void hs__sized_init(void *dst, size_t size, const void *src, size_t full);

#endif
