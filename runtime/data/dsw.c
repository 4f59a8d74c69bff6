#include "hs_dsw.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct hs__dsw {
  char *dst;
  char *tmp;
  int tmp_fd; /* holds the temporary's lock (hs__temp_create) */
  bool force;
};

char *hs__path_join(const char *a, const char *b) {
  size_t la = strlen(a), lb = strlen(b);
  char *p = malloc(la + lb + 2);
  if (!p) return NULL;
  memcpy(p, a, la);
  size_t at = la;
  if (la && a[la - 1] != '/') p[at++] = '/';
  memcpy(p + at, b, lb + 1);
  return p;
}

/* The text splits of a CTR dataset: {train,valid,test}.txt[.gz]. */
static bool ctr_split_name(const char *n) {
  static const char *const names[] = {"train.txt", "valid.txt", "test.txt",
                                      "train.txt.gz", "valid.txt.gz", "test.txt.gz"};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    if (strcmp(n, names[i]) == 0) return true;
  return false;
}

/* Files a dataset directory may hold; with force, nothing else is deleted. */
static bool dataset_file_name(const char *n) {
  size_t l = strlen(n);
  return strcmp(n, "meta.json") == 0 || (l > 4 && strcmp(n + l - 4, ".npy") == 0) ||
         ctr_split_name(n);
}

/* Remove a directory that holds only dataset files (or, with `any`, only
 * regular files, for our own temporaries). */
static hs_status remove_dataset_dir(const char *dir, bool any, bool dry_run) {
  DIR *d = opendir(dir);
  if (!d) return hs__fail(HS_ERR_IO, "%s: cannot open directory: %s", dir, strerror(errno));
  hs_status st = HS_OK;
  struct dirent *e;
  while ((e = readdir(d))) {
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
    if (!any && !dataset_file_name(e->d_name)) {
      st = hs__fail(HS_ERR_INVALID_ARG,
                    "%s: refusing to replace: it holds '%s', which is not a dataset file",
                    dir, e->d_name);
      break;
    }
    if (dry_run) continue;
    if (unlinkat(dirfd(d), e->d_name, 0) != 0) {
      st = hs__fail(HS_ERR_IO, "%s/%s: cannot remove: %s", dir, e->d_name,
                    strerror(errno));
      break;
    }
  }
  closedir(d);
  if (!st && !dry_run && rmdir(dir) != 0)
    st = hs__fail(HS_ERR_IO, "%s: cannot remove: %s", dir, strerror(errno));
  return st;
}

static hs_status check_dst(const char *dst, bool force) {
  struct stat sb;
  if (lstat(dst, &sb) != 0) {
    if (errno == ENOENT) return HS_OK;
    return hs__fail(HS_ERR_IO, "%s: cannot stat: %s", dst, strerror(errno));
  }
  if (!force)
    return hs__fail(HS_ERR_INVALID_ARG, "%s: already exists (force replaces it)", dst);
  if (!S_ISDIR(sb.st_mode))
    return hs__fail(HS_ERR_INVALID_ARG, "%s: exists and is not a dataset directory", dst);
  return remove_dataset_dir(dst, false, true);
}

hs_status hs__dsw_begin(const char *dst, bool force, hs__dsw **out) {
  *out = NULL;
  if (!dst || !*dst) return hs__fail(HS_ERR_INVALID_ARG, "empty destination path");
  hs__dsw *w = calloc(1, sizeof *w);
  if (!w) return hs__fail(HS_ERR_NOMEM, "no memory for the dataset writer");
  hs_status st = HS_OK;
  w->force = force;
  w->dst = strdup(dst);
  if (!w->dst) goto nomem;
  size_t l = strlen(w->dst);
  while (l > 1 && w->dst[l - 1] == '/') w->dst[--l] = '\0';
  w->tmp_fd = -1;
  if ((st = check_dst(w->dst, force))) goto fail;
  /* Temporaries of earlier runs that were killed (SIGKILL, a crash) go
   * first; those of runs still going are locked and stay. */
  hs__temp_sweep(w->dst, ".tmp-", true);
  if ((st = hs__temp_create(w->dst, ".tmp-", true, &w->tmp, &w->tmp_fd))) goto fail;
  hs__log(HS_LOG_DATA, "writing dataset %s via %s", w->dst, w->tmp);
  *out = w;
  return HS_OK;
nomem:
  st = hs__fail(HS_ERR_NOMEM, "no memory for the dataset writer");
fail:
  free(w->dst);
  free(w);
  return st;
}

const char *hs__dsw_dir(const hs__dsw *w) { return w->tmp; }

hs_status hs__dsw_stream(hs__dsw *w, const char *name, hs_dtype dtype, int ndim,
                         const uint64_t *shape, hs__npy_out *o) {
  char *p = hs__path_join(w->tmp, name);
  if (!p) return hs__fail(HS_ERR_NOMEM, "no memory");
  hs_status st = hs__npy_out_open(o, p, dtype, ndim, shape);
  free(p);
  return st;
}

hs_status hs__dsw_array(hs__dsw *w, const char *name, hs_dtype dtype, int ndim,
                        const uint64_t *shape, const void *data) {
  char *p = hs__path_join(w->tmp, name);
  if (!p) return hs__fail(HS_ERR_NOMEM, "no memory");
  hs_status st = hs__npy_write(p, dtype, ndim, shape, data);
  free(p);
  return st;
}

hs_status hs__dsw_text(hs__dsw *w, const char *name, const char *text) {
  char *p = hs__path_join(w->tmp, name);
  if (!p) return hs__fail(HS_ERR_NOMEM, "no memory");
  hs_status st = HS_OK;
  int fd = open(p, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666); /* the umask decides */
  if (fd < 0) {
    st = hs__fail(HS_ERR_IO, "%s: cannot create: %s", p, strerror(errno));
    goto fail;
  }
  st = hs__write_all(p, fd, text, strlen(text), 0);
  if (!st && fsync(fd) != 0) st = hs__fail(HS_ERR_IO, "%s: fsync: %s", p, strerror(errno));
  if (close(fd) != 0 && !st) st = hs__fail(HS_ERR_IO, "%s: close: %s", p, strerror(errno));
fail:
  free(p);
  return st;
}

hs_status hs__dsw_commit(hs__dsw *w) {
  hs_status st = HS_OK;
  char *aside = NULL;
  struct stat sb;
  if (lstat(w->dst, &sb) == 0) {
    /* Checked again: the destination may have appeared meanwhile. */
    if ((st = check_dst(w->dst, w->force))) goto fail;
    size_t l = strlen(w->dst) + 16;
    aside = malloc(l);
    if (!aside) {
      st = hs__fail(HS_ERR_NOMEM, "no memory");
      goto fail;
    }
    snprintf(aside, l, "%s.old-XXXXXX", w->dst);
    if (!mkdtemp(aside)) {
      st = hs__fail(HS_ERR_IO, "%s: cannot create: %s", aside, strerror(errno));
      free(aside);
      aside = NULL;
      goto fail;
    }
    if (rename(w->dst, aside) != 0) {
      st = hs__fail(HS_ERR_IO, "%s: cannot move aside to %s: %s", w->dst, aside,
                    strerror(errno));
      rmdir(aside);
      free(aside);
      aside = NULL;
      goto fail;
    }
  }
  if (rename(w->tmp, w->dst) != 0) {
    st = hs__fail(HS_ERR_IO, "%s: cannot rename to %s: %s", w->tmp, w->dst,
                  strerror(errno));
    if (aside) rename(aside, w->dst);
    goto fail;
  }
  hs__sync_parent_dir(w->dst);
  if (aside) {
    hs_status rst = remove_dataset_dir(aside, false, false);
    if (rst) hs__log(HS_LOG_DATA, "left the replaced dataset in %s", aside);
  }
  free(aside);
  if (w->tmp_fd >= 0) close(w->tmp_fd);
  free(w->tmp);
  free(w->dst);
  free(w);
  return HS_OK;
fail:
  free(aside);
  hs__dsw_abort(w);
  return st;
}

void hs__dsw_abort(hs__dsw *w) {
  if (!w) return;
  if (w->tmp) {
    /* Keep the detail of the failure that brought us here. */
    char saved[2048];
    snprintf(saved, sizeof saved, "%s", hs_last_error());
    if (remove_dataset_dir(w->tmp, true, false))
      hs__log(HS_LOG_DATA, "could not remove %s: %s", w->tmp, hs_last_error());
    hs__fail(HS_OK, "%s", saved);
  }
  if (w->tmp_fd >= 0) close(w->tmp_fd);
  free(w->tmp);
  free(w->dst);
  free(w);
}
