/* A private OpenCL vendors folder for a test: the ICD loader (ocl-icd)
 * loads the libraries named by the *.icd files of $OCL_ICD_VENDORS instead
 * of /etc/OpenCL/vendors, so a test chooses which implementations it sees
 * (the fake one of fake_icd.c, PoCL, rusticl, oclgrind). Set it before the
 * process's first OpenCL call: Criterion runs each test in its own process.
 * Header-only. */
#ifndef HS_TEST_ICD_DIR_H
#define HS_TEST_ICD_DIR_H

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Where each implementation's ICD library is on Debian: the vendors file
 * its package installs, or (oclgrind, whose package registers none) its
 * library. */
static inline bool icd_library(const char *impl, char *buf, size_t cap) {
  char path[256];
  snprintf(path, sizeof path, "/etc/OpenCL/vendors/%s.icd", impl);
  FILE *f = fopen(path, "r");
  buf[0] = '\0';
  if (f) {
    if (!fgets(buf, (int)cap, f)) buf[0] = '\0';
    fclose(f);
    buf[strcspn(buf, "\r\n")] = '\0';
  }
  if (!buf[0] && strcmp(impl, "oclgrind") == 0 &&
      access("/usr/lib/oclgrind/liboclgrind-rt-icd.so", R_OK) == 0)
    snprintf(buf, cap, "/usr/lib/oclgrind/liboclgrind-rt-icd.so");
  return buf[0] != '\0';
}

typedef struct icd_dir {
  char path[64];
  int n;
  char files[8][96];
} icd_dir;

/* A folder holding `n` vendors files: files[i] (e.g. "0-pocl.icd") naming
 * libs[i]; OCL_ICD_VENDORS points at it from now on. */
static inline void icd_dir_open(icd_dir *d, const char *const *files, const char *const *libs,
                                int n) {
  memset(d, 0, sizeof *d);
  snprintf(d->path, sizeof d->path, "/tmp/hs-icd-XXXXXX");
  cr_assert(mkdtemp(d->path));
  cr_assert_leq(n, 8);
  for (int i = 0; i < n; i++) {
    snprintf(d->files[i], sizeof d->files[i], "%s/%s", d->path, files[i]);
    FILE *f = fopen(d->files[i], "w");
    cr_assert_not_null(f);
    fprintf(f, "%s\n", libs[i]);
    fclose(f);
  }
  d->n = n;
  setenv("OCL_ICD_VENDORS", d->path, 1);
}

static inline void icd_dir_close(icd_dir *d) {
  for (int i = 0; i < d->n; i++) unlink(d->files[i]);
  rmdir(d->path);
}

/* Only implementation `impl` (pocl, rusticl, oclgrind) is visible, with
 * what it needs to show its device: rusticl lists llvmpipe only when asked
 * to. Skips the test when the implementation is not installed. */
static inline void icd_only(icd_dir *d, const char *impl) {
  char lib[256];
  if (!icd_library(impl, lib, sizeof lib)) cr_skip_test("%s is not installed", impl);
  char file[64];
  snprintf(file, sizeof file, "%s.icd", impl);
  const char *files[] = {file}, *libs[] = {lib};
  icd_dir_open(d, files, libs, 1);
  setenv("RUSTICL_ENABLE", "llvmpipe", 1);
}

#endif
