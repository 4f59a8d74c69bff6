/* Internal base of every layer: error detail, logging, small helpers.
 * Lives at the bottom (devices/) so that arrows keep pointing down. */
#ifndef HS_BASE_H
#define HS_BASE_H

#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

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
  HS_LOG_DIST,
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
/* IEEE binary32 -> binary16, rounded to nearest even (NaN stays NaN,
 * overflow is infinity). */
uint16_t hs__float_to_half(float x);

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

/* Lower the calling thread's scheduling priority: its nice value raised
 * by `by` (at most to 19), the thread alone (Linux, where nice values are
 * per thread; elsewhere nothing is done). Returns the nice value the
 * thread runs at, or INT_MIN where nothing was changed (not Linux, `by`
 * 0 or less, or the kernel refused). A thread cannot raise its priority
 * back without privilege: meant for threads that end, or that serve only
 * work that should take the CPU time others leave. */
int hs__thread_nicer(int by);

/* "1.5 GiB" style text of a byte count (powers of 1024). Returns buf. */
char *hs__fmt_bytes(uint64_t bytes, char *buf, size_t cap);

/* Bytes the process may still allocate under the limits in force: the
 * address-space and data-segment rlimits (ulimit -v, -d) less what is
 * mapped, and the memory cgroup's limit (memory.max; v1
 * memory.limit_in_bytes) less its usage (reclaimable page cache not
 * counted), at each level of the cgroup tree; UINT64_MAX when no limit is
 * in force. `why` (may be NULL) receives the binding limit in words. */
uint64_t hs__mem_room(char *why, size_t len);
/* HS_ERR_NOMEM, "WHAT of N would exceed LIMIT (M left)", when `bytes`
 * exceed hs__mem_room. */
hs_status hs__mem_room_check(uint64_t bytes, const char *what);

/* Open an input file read-only without ever blocking: the open is
 * non-blocking (a FIFO with no writer, a terminal or a device would
 * otherwise hang the caller in open or read), anything but a regular file
 * is refused, then the descriptor is made blocking again for ordinary
 * reads. `what` names the file in errors ("board profile"; NULL: none).
 * Returns the descriptor (O_CLOEXEC), or -1 with HS_ERR_IO recorded
 * ("PATH: not a regular file (a FIFO)"); *st receives the status when not
 * NULL. hs__fopen_regular wraps the descriptor in a FILE opened "rb". */
int hs__open_regular(const char *path, const char *what, hs_status *st);
FILE *hs__fopen_regular(const char *path, const char *what, hs_status *st);

/* Temporaries of our own naming: "<base><tag>XXXXXX" beside `base`, the
 * X six characters of [A-Za-z0-9]. They are created with the umask's mode
 * (open's 0666 for files, mkdir's 0777 for directories) and held under an
 * exclusive flock while *fd stays open, so that a temporary whose lock can
 * be taken belongs to a process that is gone (killed, crashed). *path is
 * the new name (free it); *fd is the file opened read-write, or the
 * directory opened read-only. */
hs_status hs__temp_create(const char *base, const char *tag, bool dir, char **path, int *fd);
/* Remove the temporaries "<base><tag>XXXXXX" of processes that are gone
 * (their lock is free); directories only when they hold nothing but
 * regular files. Temporaries in use are left alone. Returns how many were
 * removed. */
int hs__temp_sweep(const char *base, const char *tag, bool dir);

/* The stop flag of the long call running on this thread (a conversion, a
 * generation), set for the duration of the call (NULL ends it). */
void hs__stop_scope(volatile sig_atomic_t *flag);
/* True when the current scope's flag is set. */
bool hs__stopped(void);
/* HS_ERR_INTERRUPTED, "interrupted (a stop was asked for)". */
hs_status hs__fail_stopped(void);

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
