#include "hs_base.h"
#include "hs_config.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <dirent.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
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
  if (!dst || size < HS__SIZED_MIN) return;
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
    "device", "build", "data", "sample", "train", "pipeline", "cache", "place", "dist",
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

int hs__thread_nicer(int by) {
#ifdef __linux__
  if (by <= 0) return INT_MIN;
  id_t tid = (id_t)syscall(SYS_gettid);
  errno = 0;
  int cur = getpriority(PRIO_PROCESS, tid);
  if (cur == -1 && errno) return INT_MIN;
  int want = cur > 19 - by ? 19 : cur + by;
  if (want != cur && setpriority(PRIO_PROCESS, tid, want) != 0) return INT_MIN;
  return want;
#else
  (void)by;
  return INT_MIN;
#endif
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

static const char *file_kind(mode_t m) {
  if (S_ISFIFO(m)) return "a FIFO";
  if (S_ISDIR(m)) return "a directory";
  if (S_ISCHR(m)) return "a character device";
  if (S_ISBLK(m)) return "a block device";
  if (S_ISSOCK(m)) return "a socket";
  return "a special file";
}

int hs__open_regular(const char *path, const char *what, hs_status *st) {
  const char *w = what ? what : "", *sep = what ? " " : "";
  hs_status s = HS_OK;
  int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  struct stat sb;
  if (fd < 0) {
    s = hs__fail(HS_ERR_IO, "%s%s%s: cannot open: %s", w, sep, path, strerror(errno));
  } else if (fstat(fd, &sb) != 0) {
    s = hs__fail(HS_ERR_IO, "%s%s%s: cannot stat: %s", w, sep, path, strerror(errno));
  } else if (!S_ISREG(sb.st_mode)) {
    s = hs__fail(HS_ERR_IO, "%s%s%s: not a regular file (%s)", w, sep, path,
                 file_kind(sb.st_mode));
  } else {
    int fl = fcntl(fd, F_GETFL);
    if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) != 0)
      s = hs__fail(HS_ERR_IO, "%s%s%s: fcntl: %s", w, sep, path, strerror(errno));
  }
  if (s != HS_OK && fd >= 0) {
    close(fd);
    fd = -1;
    errno = EINVAL; /* for callers that report errno: not a file we read */
  }
  if (st) *st = s;
  return fd;
}

FILE *hs__fopen_regular(const char *path, const char *what, hs_status *st) {
  int fd = hs__open_regular(path, what, st);
  if (fd < 0) return NULL;
  FILE *f = fdopen(fd, "rb");
  if (!f) {
    hs_status s = hs__fail(HS_ERR_NOMEM, "%s: no memory for a stream", path);
    if (st) *st = s;
    close(fd);
  }
  return f;
}

char *hs__fmt_bytes(uint64_t bytes, char *buf, size_t cap) {
  static const char *const units[] = {"KiB", "MiB", "GiB", "TiB", "PiB"};
  if (bytes < 1024) {
    snprintf(buf, cap, "%" PRIu64 " B", bytes);
    return buf;
  }
  double v = (double)bytes / 1024.0;
  size_t u = 0;
  while (v >= 1024.0 && u + 1 < sizeof units / sizeof units[0]) {
    v /= 1024.0;
    u++;
  }
  snprintf(buf, cap, "%.1f %s", v, units[u]);
  return buf;
}

/* ---- temporaries ----------------------------------------------------------- */

static const char temp_chars[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";

/* Lock the new temporary; false (and removed) if a sweeper removed it
 * first, between its creation and the lock. */
static bool temp_lock(const char *path, bool dir, int fd) {
  struct stat sb;
  if (flock(fd, LOCK_EX) == 0 && fstat(fd, &sb) == 0 && sb.st_nlink > 0) return true;
  if (dir) rmdir(path);
  else unlink(path);
  return false;
}

hs_status hs__temp_create(const char *base, const char *tag, bool dir, char **path, int *fd) {
  *path = NULL;
  *fd = -1;
  size_t bl = strlen(base), tl = strlen(tag);
  char *p = malloc(bl + tl + 7);
  if (!p) return hs__fail(HS_ERR_NOMEM, "%s: no memory for a temporary name", base);
  memcpy(p, base, bl);
  memcpy(p + bl, tag, tl);
  char *x = p + bl + tl;
  x[6] = '\0';
  for (int attempt = 0; attempt < 100; attempt++) {
    unsigned char r[6];
    if (getrandom(r, sizeof r, 0) != (ssize_t)sizeof r) {
      uint64_t t = (uint64_t)(hs__now() * 1e9) ^ ((uint64_t)getpid() << 32) ^ (uint64_t)attempt;
      for (int i = 0; i < 6; i++) r[i] = (unsigned char)(t >> (8 * i));
    }
    for (int i = 0; i < 6; i++) x[i] = temp_chars[r[i] % (sizeof temp_chars - 1)];
    int f;
    if (dir) {
      if (mkdir(p, 0777) != 0) goto retry;
      f = open(p, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
      if (f < 0) {
        int e = errno;
        rmdir(p);
        errno = e;
        break;
      }
    } else {
      f = open(p, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
      if (f < 0) goto retry;
    }
    if (temp_lock(p, dir, f)) {
      *path = p;
      *fd = f;
      return HS_OK;
    }
    close(f);
    continue;
  retry:
    if (errno != EEXIST) break;
  }
  hs_status st = hs__fail(HS_ERR_IO, "%s: cannot create a temporary beside it: %s", base,
                          strerror(errno));
  free(p);
  return st;
}

/* Remove a directory holding only regular files, through its descriptor. */
static bool remove_flat_dir(int dfd, const char *path) {
  int d2 = dup(dfd);
  DIR *d = d2 >= 0 ? fdopendir(d2) : NULL;
  if (!d) {
    if (d2 >= 0) close(d2);
    return false;
  }
  bool ok = true;
  struct dirent *e;
  while (ok && (e = readdir(d))) {
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
    struct stat sb;
    ok = fstatat(dfd, e->d_name, &sb, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(sb.st_mode) &&
         unlinkat(dfd, e->d_name, 0) == 0;
  }
  closedir(d);
  return ok && rmdir(path) == 0;
}

int hs__temp_sweep(const char *base, const char *tag, bool dir) {
  const char *slash = strrchr(base, '/');
  char *parent = slash ? strndup(base, (size_t)(slash - base) + (slash == base)) : strdup(".");
  const char *name = slash ? slash + 1 : base;
  size_t nl = strlen(name), tl = strlen(tag);
  DIR *d = parent ? opendir(parent) : NULL;
  int removed = 0;
  struct dirent *e;
  while (d && (e = readdir(d))) {
    const char *n = e->d_name;
    if (strlen(n) != nl + tl + 6 || strncmp(n, name, nl) != 0 || strncmp(n + nl, tag, tl) != 0 ||
        strspn(n + nl + tl, temp_chars) != 6)
      continue;
    int f = openat(dirfd(d), n, (dir ? O_RDONLY | O_DIRECTORY : O_RDWR) | O_NOFOLLOW |
                                    O_NONBLOCK | O_CLOEXEC);
    if (f < 0) continue;
    struct stat sb;
    if (fstat(f, &sb) == 0 && (dir ? S_ISDIR(sb.st_mode) : S_ISREG(sb.st_mode)) &&
        flock(f, LOCK_EX | LOCK_NB) == 0) {
      char *full = malloc(strlen(parent) + strlen(n) + 2);
      if (full) {
        sprintf(full, "%s/%s", parent, n);
        bool ok = dir ? remove_flat_dir(f, full) : unlinkat(dirfd(d), n, 0) == 0;
        if (ok) {
          removed++;
          hs__log(HS_LOG_DATA, "removed %s, a temporary left by a process that is gone", full);
        }
        free(full);
      }
    }
    close(f);
  }
  if (d) closedir(d);
  free(parent);
  return removed;
}

/* ---- stop flags ------------------------------------------------------------- */

static _Thread_local volatile sig_atomic_t *tl_stop;

void hs__stop_scope(volatile sig_atomic_t *flag) { tl_stop = flag; }

bool hs__stopped(void) { return tl_stop && *tl_stop; }

hs_status hs__fail_stopped(void) {
  return hs__fail(HS_ERR_INTERRUPTED, "interrupted (a stop was asked for)");
}

/* ---- memory the process may still use ----------------------------------------- */

/* A number from a one-line file ("max" or absent: none). */
static bool read_u64_file(const char *path, uint64_t *out) {
  FILE *f = fopen(path, "r");
  if (!f) return false;
  char line[64] = "";
  bool ok = fgets(line, sizeof line, f) != NULL;
  fclose(f);
  if (!ok || strncmp(line, "max", 3) == 0) return false;
  char *end;
  unsigned long long v = strtoull(line, &end, 10);
  if (end == line) return false;
  *out = (uint64_t)v;
  return true;
}

/* "inactive_file N" of a cgroup's memory.stat: page cache it can reclaim. */
static uint64_t cgroup_reclaimable(const char *dir) {
  char path[600];
  snprintf(path, sizeof path, "%s/memory.stat", dir);
  FILE *f = fopen(path, "r");
  if (!f) return 0;
  char line[128];
  unsigned long long v = 0;
  while (fgets(line, sizeof line, f))
    if (sscanf(line, "inactive_file %llu", &v) == 1 ||
        sscanf(line, "total_inactive_file %llu", &v) == 1)
      break;
  fclose(f);
  return (uint64_t)v;
}

static void room_min(uint64_t *room, uint64_t limit, uint64_t used, const char *name, char *why,
                     size_t len) {
  uint64_t left = used < limit ? limit - used : 0;
  if (left >= *room) return;
  *room = left;
  if (why) {
    char a[32], b[32];
    snprintf(why, len, "%s of %s (%s in use)", name, hs__fmt_bytes(limit, a, sizeof a),
             hs__fmt_bytes(used, b, sizeof b));
  }
}

/* The memory cgroup of this process and its ancestors (v2: one line
 * "0::/path"; v1: the "memory" controller's line). */
static void cgroup_room(uint64_t *room, char *why, size_t len) {
  FILE *f = fopen("/proc/self/cgroup", "r");
  if (!f) return;
  char line[512], path[512] = "";
  bool v2 = false, found = false;
  while (!found && fgets(line, sizeof line, f)) {
    line[strcspn(line, "\n")] = '\0';
    char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
    if (!c2) continue;
    *c2 = '\0';
    const char *ctrl = c1 + 1;
    if (strcmp(line, "0") == 0 && *ctrl == '\0') {
      v2 = true;
      snprintf(path, sizeof path, "%s", c2 + 1);
    } else if (strstr(ctrl, "memory") != NULL) {
      v2 = false;
      snprintf(path, sizeof path, "%s", c2 + 1);
      found = true;
    }
  }
  fclose(f);
  if (!path[0]) return;
  const char *base = v2 ? "/sys/fs/cgroup" : "/sys/fs/cgroup/memory";
  const char *lim_file = v2 ? "memory.max" : "memory.limit_in_bytes";
  const char *use_file = v2 ? "memory.current" : "memory.usage_in_bytes";
  /* Every level up to the root can bind. */
  for (;;) {
    char dir[600], p[700];
    snprintf(dir, sizeof dir, "%s%s", base, strcmp(path, "/") == 0 ? "" : path);
    uint64_t limit, used;
    snprintf(p, sizeof p, "%s/%s", dir, lim_file);
    bool has_limit = read_u64_file(p, &limit) && limit < ((uint64_t)1 << 62);
    snprintf(p, sizeof p, "%s/%s", dir, use_file);
    if (has_limit && read_u64_file(p, &used)) {
      uint64_t reclaim = cgroup_reclaimable(dir);
      char name[256];
      snprintf(name, sizeof name, "the memory cgroup limit (%s/%s)", dir, lim_file);
      room_min(room, limit, used > reclaim ? used - reclaim : 0, name, why, len);
    }
    char *slash = strrchr(path, '/');
    if (!slash || strcmp(path, "/") == 0) break;
    if (slash == path) path[1] = '\0';
    else *slash = '\0';
  }
}

uint64_t hs__mem_room(char *why, size_t len) {
  uint64_t room = UINT64_MAX;
  if (why && len) why[0] = '\0';
  struct rlimit rl;
  if (getrlimit(RLIMIT_AS, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
    room_min(&room, (uint64_t)rl.rlim_cur, hs__proc_kb_field("/proc/self/status", "VmSize"),
             "the address-space limit (ulimit -v, RLIMIT_AS)", why, len);
  if (getrlimit(RLIMIT_DATA, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
    room_min(&room, (uint64_t)rl.rlim_cur, hs__proc_kb_field("/proc/self/status", "VmData"),
             "the data-segment limit (ulimit -d, RLIMIT_DATA)", why, len);
  cgroup_room(&room, why, len);
  return room;
}

hs_status hs__mem_room_check(uint64_t bytes, const char *what) {
  char why[700];
  uint64_t room = hs__mem_room(why, sizeof why);
  if (bytes <= room) return HS_OK;
  char a[32], b[32];
  return hs__fail(HS_ERR_NOMEM, "%s of %s would exceed %s: %s left", what,
                  hs__fmt_bytes(bytes, a, sizeof a), why, hs__fmt_bytes(room, b, sizeof b));
}

uint16_t hs__float_to_half(float x) {
  uint32_t b;
  memcpy(&b, &x, 4);
  uint32_t sign = (b >> 16) & 0x8000u;
  int32_t exp = (int32_t)((b >> 23) & 0xff) - 127 + 15;
  uint32_t man = b & 0x7fffffu;
  if (((b >> 23) & 0xff) == 0xff) return (uint16_t)(sign | 0x7c00u | (man ? 0x200u : 0));
  if (exp >= 31) return (uint16_t)(sign | 0x7c00u);
  if (exp <= 0) {
    if (exp < -10) return (uint16_t)sign;
    man |= 0x800000u;
    uint32_t shift = (uint32_t)(14 - exp);
    uint32_t h = man >> shift;
    uint32_t rem = man & ((1u << shift) - 1), half = 1u << (shift - 1);
    if (rem > half || (rem == half && (h & 1))) h++;
    return (uint16_t)(sign | h);
  }
  uint32_t h = (uint32_t)exp << 10 | man >> 13;
  uint32_t rem = man & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1))) h++; /* may carry into the exponent */
  return (uint16_t)(sign | h);
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
