/* Small helpers shared by the tests: scratch directories, raw file writes,
 * the check that an error detail names a file and a position, and the
 * calling thread's nice value. */
#ifndef HS_TEST_UTIL_H
#define HS_TEST_UTIL_H

#include <criterion/criterion.h>
#include <dirent.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "hetsage.h"

static inline char *tu_mkdtemp(void) {
  const char *base = getenv("TMPDIR");
  if (!base || !*base) base = "/tmp";
  char *p = malloc(strlen(base) + 32);
  cr_assert(p);
  sprintf(p, "%s/hs-test-XXXXXX", base);
  cr_assert(mkdtemp(p), "mkdtemp failed");
  return p;
}

static inline int tu_rm_cb(const char *path, const struct stat *sb, int flag,
                           struct FTW *ftw) {
  (void)sb;
  (void)flag;
  (void)ftw;
  return remove(path);
}

static inline void tu_rmtree(char *dir) {
  if (!dir) return;
  nftw(dir, tu_rm_cb, 16, FTW_DEPTH | FTW_PHYS);
  free(dir);
}

static inline char *tu_path(const char *dir, const char *name) {
  char *p = malloc(strlen(dir) + strlen(name) + 2);
  cr_assert(p);
  sprintf(p, "%s/%s", dir, name);
  return p;
}

static inline void tu_write_bytes(const char *dir, const char *name, const void *data,
                                  size_t len) {
  char *p = tu_path(dir, name);
  FILE *f = fopen(p, "wb");
  cr_assert(f, "cannot write %s", p);
  if (len) cr_assert_eq(fwrite(data, 1, len, f), len);
  fclose(f);
  free(p);
}

static inline bool tu_exists(const char *dir, const char *name) {
  char *p = tu_path(dir, name);
  struct stat sb;
  bool r = stat(p, &sb) == 0;
  free(p);
  return r;
}

/* Entries in `dir` whose name starts with `prefix`. */
static inline int tu_count_prefix(const char *dir, const char *prefix) {
  DIR *d = opendir(dir);
  cr_assert(d);
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d)))
    if (strncmp(e->d_name, prefix, strlen(prefix)) == 0) n++;
  closedir(d);
  return n;
}

/* The status is `want` and the detail names `file` and contains `pos`
 * ("byte 12", "element 3", ":4:7:") and `what`. */
#define TU_EXPECT_FAIL(st, want, file, pos, what)                                    \
  do {                                                                               \
    hs_status st_ = (st);                                                            \
    const char *d_ = hs_last_error();                                                \
    cr_expect_eq(st_, want, "status %s, expected %s (%s)", hs_strerror(st_),        \
                 hs_strerror(want), d_);                                             \
    cr_expect(strstr(d_, file) != NULL, "detail does not name %s: %s", file, d_);    \
    cr_expect(strstr(d_, pos) != NULL, "detail lacks '%s': %s", pos, d_);            \
    cr_expect(strstr(d_, what) != NULL, "detail lacks '%s': %s", what, d_);          \
  } while (0)

static inline const char *tu_data_dir(void) {
  const char *d = getenv("HS_TEST_DATA");
  cr_assert(d, "HS_TEST_DATA is not set");
  return d;
}

/* The calling thread's nice value (Linux keeps one per thread). */
static inline int tu_thread_nice(void) {
  return getpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid));
}

#endif
