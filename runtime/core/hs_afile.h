/* Files written atomically: a temporary file beside the target, fsynced,
 * renamed over it, and the directory fsynced, so that a reader sees the
 * old file or the new one, never a torn one, and a failure leaves the
 * target untouched and no temporary file behind. The temporary is one of
 * ours (hs__temp_create: the umask's mode, locked while written), so the
 * next write of the same file removes what a killed one left. Writes go
 * through a
 * stdio stream with a running CRC-32 (zlib) for formats that end with
 * one. */
#ifndef HS_AFILE_H
#define HS_AFILE_H

#include <stdint.h>
#include <stdio.h>

#include "hs_base.h"

typedef struct hs_afile {
  FILE *f;
  char *tmp;
  const char *path;
  unsigned long crc;
  hs_status st; /* the first write error, kept until commit */
} hs_afile;

hs_status hs__afile_open(hs_afile *a, const char *path);
/* Append bytes (and fold them into the CRC); errors are kept for commit. */
void hs__afile_write(hs_afile *a, const void *p, size_t n);
void hs__afile_u32(hs_afile *a, uint32_t v);
void hs__afile_u64(hs_afile *a, uint64_t v);
void hs__afile_f32(hs_afile *a, const float *x, size_t n);
/* Append the CRC of everything written since the start or the last
 * hs__afile_crc / hs__afile_crc_reset, and start a new one. */
void hs__afile_crc(hs_afile *a);
void hs__afile_crc_reset(hs_afile *a);
/* Flush, fsync, rename, fsync the directory; on any error (or a kept
 * one) remove the temporary file and return the error naming the path. */
hs_status hs__afile_commit(hs_afile *a);
void hs__afile_abort(hs_afile *a);

/* Reading the same encodings from a stream with a running CRC. */
typedef struct hs_rfile {
  FILE *f;
  const char *name;
  unsigned long crc;
  hs_status st;
} hs_rfile;

void hs__rfile_init(hs_rfile *r, FILE *f, const char *name);
/* false (and r->st set, the detail naming the file and offset) on a short
 * read. */
bool hs__rfile_read(hs_rfile *r, void *p, size_t n);
bool hs__rfile_u32(hs_rfile *r, uint32_t *v);
bool hs__rfile_u64(hs_rfile *r, uint64_t *v);
bool hs__rfile_f32(hs_rfile *r, float *x, size_t n);
/* Read the stored CRC and compare (HS_ERR_CHECKSUM); restarts the CRC. */
bool hs__rfile_crc(hs_rfile *r);
void hs__rfile_crc_reset(hs_rfile *r);

#endif
