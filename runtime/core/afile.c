/* Atomic files and CRC-checked streams (see hs_afile.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "core/hs_afile.h"

hs_status hs__afile_open(hs_afile *a, const char *path) {
  memset(a, 0, sizeof *a);
  a->path = path;
  /* Temporaries of writes that were killed go first (a write in progress
   * holds its lock and stays). The new one takes the umask's mode, and its
   * lock lasts as long as the stream. */
  hs__temp_sweep(path, ".tmp.", false);
  int fd;
  hs_status st = hs__temp_create(path, ".tmp.", false, &a->tmp, &fd);
  if (st != HS_OK) return st;
  a->f = fdopen(fd, "wb");
  if (!a->f) {
    close(fd);
    unlink(a->tmp);
    free(a->tmp);
    a->tmp = NULL;
    return hs__fail(HS_ERR_NOMEM, "%s: stream", path);
  }
  a->crc = crc32(0L, Z_NULL, 0);
  return HS_OK;
}

void hs__afile_write(hs_afile *a, const void *p, size_t n) {
  if (a->st != HS_OK || n == 0) return;
  a->crc = crc32_z(a->crc, p, n);
  if (fwrite(p, 1, n, a->f) != n)
    a->st = hs__fail(HS_ERR_IO, "%s: write failed: %s", a->path, strerror(errno));
}

void hs__afile_u32(hs_afile *a, uint32_t v) {
  unsigned char b[4] = {(unsigned char)v, (unsigned char)(v >> 8), (unsigned char)(v >> 16),
                        (unsigned char)(v >> 24)};
  hs__afile_write(a, b, 4);
}

void hs__afile_u64(hs_afile *a, uint64_t v) {
  hs__afile_u32(a, (uint32_t)v);
  hs__afile_u32(a, (uint32_t)(v >> 32));
}

void hs__afile_f32(hs_afile *a, const float *x, size_t n) {
  unsigned char buf[4096];
  while (n > 0) {
    size_t k = n < sizeof buf / 4 ? n : sizeof buf / 4;
    for (size_t i = 0; i < k; i++) {
      uint32_t v;
      memcpy(&v, &x[i], 4);
      buf[4 * i] = (unsigned char)v;
      buf[4 * i + 1] = (unsigned char)(v >> 8);
      buf[4 * i + 2] = (unsigned char)(v >> 16);
      buf[4 * i + 3] = (unsigned char)(v >> 24);
    }
    hs__afile_write(a, buf, 4 * k);
    x += k;
    n -= k;
  }
}

void hs__afile_crc(hs_afile *a) {
  uint32_t c = (uint32_t)a->crc;
  hs__afile_u32(a, c);
  a->crc = crc32(0L, Z_NULL, 0);
}

void hs__afile_crc_reset(hs_afile *a) { a->crc = crc32(0L, Z_NULL, 0); }

void hs__rfile_crc_reset(hs_rfile *r) { r->crc = crc32(0L, Z_NULL, 0); }

void hs__afile_abort(hs_afile *a) {
  if (a->f) fclose(a->f);
  if (a->tmp) {
    unlink(a->tmp);
    free(a->tmp);
  }
  a->f = NULL;
  a->tmp = NULL;
}

hs_status hs__afile_commit(hs_afile *a) {
  hs_status st = a->st;
  if (st == HS_OK && fflush(a->f) != 0)
    st = hs__fail(HS_ERR_IO, "%s: write failed: %s", a->path, strerror(errno));
  if (st == HS_OK && fsync(fileno(a->f)) != 0)
    st = hs__fail(HS_ERR_IO, "%s: fsync failed: %s", a->path, strerror(errno));
  if (st != HS_OK) {
    hs__afile_abort(a);
    return st;
  }
  FILE *f = a->f;
  a->f = NULL;
  if (fclose(f) != 0) {
    st = hs__fail(HS_ERR_IO, "%s: close failed: %s", a->path, strerror(errno));
    hs__afile_abort(a);
    return st;
  }
  if (rename(a->tmp, a->path) != 0) {
    st = hs__fail(HS_ERR_IO, "%s: rename from %s failed: %s", a->path, a->tmp, strerror(errno));
    hs__afile_abort(a);
    return st;
  }
  /* Make the rename itself durable. */
  hs__sync_parent_dir(a->path);
  free(a->tmp);
  a->tmp = NULL;
  return HS_OK;
}

void hs__rfile_init(hs_rfile *r, FILE *f, const char *name) {
  r->f = f;
  r->name = name;
  r->crc = crc32(0L, Z_NULL, 0);
  r->st = HS_OK;
}

bool hs__rfile_read(hs_rfile *r, void *p, size_t n) {
  if (r->st != HS_OK) return false;
  long long at = (long long)ftello(r->f);
  if (fread(p, 1, n, r->f) != n) {
    r->st = hs__fail(HS_ERR_FORMAT, "%s: truncated at byte %lld (wanted %zu more bytes)", r->name,
                     at, n);
    return false;
  }
  r->crc = crc32_z(r->crc, p, n);
  return true;
}

bool hs__rfile_u32(hs_rfile *r, uint32_t *v) {
  unsigned char b[4];
  if (!hs__rfile_read(r, b, 4)) return false;
  *v = (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
  return true;
}

bool hs__rfile_u64(hs_rfile *r, uint64_t *v) {
  uint32_t lo, hi;
  if (!hs__rfile_u32(r, &lo) || !hs__rfile_u32(r, &hi)) return false;
  *v = (uint64_t)lo | (uint64_t)hi << 32;
  return true;
}

bool hs__rfile_f32(hs_rfile *r, float *x, size_t n) {
  unsigned char buf[4096];
  while (n > 0) {
    size_t k = n < sizeof buf / 4 ? n : sizeof buf / 4;
    if (!hs__rfile_read(r, buf, 4 * k)) return false;
    for (size_t i = 0; i < k; i++) {
      uint32_t v = (uint32_t)buf[4 * i] | (uint32_t)buf[4 * i + 1] << 8 |
                   (uint32_t)buf[4 * i + 2] << 16 | (uint32_t)buf[4 * i + 3] << 24;
      memcpy(&x[i], &v, 4);
    }
    x += k;
    n -= k;
  }
  return true;
}

bool hs__rfile_crc(hs_rfile *r) {
  uint32_t want = (uint32_t)r->crc, got;
  long long at = (long long)ftello(r->f);
  if (!hs__rfile_u32(r, &got)) return false;
  if (got != want) {
    r->st = hs__fail(HS_ERR_CHECKSUM, "%s: CRC-32 at byte %lld is %08x, the data give %08x",
                     r->name, at, got, want);
    return false;
  }
  r->crc = crc32(0L, Z_NULL, 0);
  return true;
}
