/* NumPy .npy files: header parsing and writing, checked reads and maps.
 * Every error names the file and the byte offset or element index. */
#ifndef HS_NPY_H
#define HS_NPY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hetsage/dataset.h"
#include "hs_base.h"

/* The longest header accepted (numpy's own reader stops at 10000 bytes). */
#define HS_NPY_MAX_HEADER 65536

typedef struct hs__npy_header {
  int major, minor;
  char descr[24];     /* as written, e.g. "<i8" */
  hs_dtype dtype;     /* HS_DTYPE_NONE when descr is none of ours */
  size_t elem_size;   /* from descr */
  bool fortran_order;
  int ndim;           /* 0, 1 or 2 (more is a format error) */
  uint64_t shape[2];
  uint64_t count;     /* product of the shape */
  size_t dict_offset; /* where the header dict starts (10 or 12) */
  size_t data_offset; /* bytes before the payload */
  uint64_t data_bytes;
} hs__npy_header;

/* Parse a header from the first `len` bytes of a file named `name` (for
 * messages). Checks magic, version, the dict syntax and keys, byte order
 * and shape overflow; not dtype roles or the file size. */
hs_status hs__npy_parse(const char *name, const void *buf, size_t len,
                        hs__npy_header *out);

/* Open `path`, parse its header and check that the file holds exactly the
 * payload the header promises. On success *fd_out is an open descriptor. */
hs_status hs__npy_open(const char *path, hs__npy_header *h, int *fd_out);

/* Parse and size-check an already open descriptor (used by the fuzzer). */
hs_status hs__npy_open_fd(const char *path, int fd, hs__npy_header *h);

/* Require dtype and rank: `allowed` is a bit set of (1u << hs_dtype). */
hs_status hs__npy_expect(const char *path, const hs__npy_header *h,
                         unsigned allowed, int ndim);

/* A read-only mapping of a whole file. */
typedef struct hs__map {
  void *base;
  size_t len;
} hs__map;

/* Map the file read-only and point *data at the payload. `populate` faults
 * every page in now (for data that is about to be read in full). The data
 * offset must be a multiple of the element size (HS_ERR_UNSUPPORTED). */
hs_status hs__npy_map(const char *path, int fd, const hs__npy_header *h,
                      bool populate, hs__map *m, const void **data);
void hs__map_release(hs__map *m);

/* Read elements [0, count) of an int32/int64 array into int32 `dst`,
 * requiring lo <= value <= hi (element index and byte offset named in the
 * error, with `what` saying which rule). */
hs_status hs__npy_read_i32(const char *path, int fd, const hs__npy_header *h,
                           int32_t *dst, int64_t lo, int64_t hi,
                           const char *what);
/* Read the payload by pread, 1 MiB at a time, handing each piece to `fn`:
 * elements [first, first + n) at `chunk` (valid during the call only). The
 * first status that is not HS_OK stops the reading and is returned; a
 * failed or short read is an HS_ERR_IO naming the file and the byte. */
typedef hs_status (*hs__npy_chunk_fn)(void *ctx, const void *chunk, size_t first, size_t n);
hs_status hs__npy_read_chunks(const char *path, int fd, const hs__npy_header *h,
                              hs__npy_chunk_fn fn, void *ctx);
/* Read an int32/int64 array into int64 `dst` (no range rule). */
hs_status hs__npy_read_i64(const char *path, int fd, const hs__npy_header *h,
                           int64_t *dst);

/* Format a version-1.0 header (2.0 if it would not fit) for the array into
 * buf (at least 128 bytes); returns its length (a multiple of 64). */
size_t hs__npy_format_header(char *buf, size_t cap, hs_dtype dtype, int ndim,
                             const uint64_t *shape);

size_t hs__dtype_size(hs_dtype dtype);
const char *hs__dtype_descr(hs_dtype dtype);

/* A file being written: header first, then the payload in pieces. */
typedef struct hs__npy_out {
  int fd;
  char *path;
  uint64_t expect, written;
} hs__npy_out;

hs_status hs__npy_out_open(hs__npy_out *o, const char *path, hs_dtype dtype,
                           int ndim, const uint64_t *shape);
hs_status hs__npy_out_write(hs__npy_out *o, const void *data, size_t bytes);
/* Checks that the promised payload was written, fsyncs and closes. */
hs_status hs__npy_out_close(hs__npy_out *o);
/* Close without checks (on a failure path). */
void hs__npy_out_discard(hs__npy_out *o);

/* Write a whole array to `path`. */
hs_status hs__npy_write(const char *path, hs_dtype dtype, int ndim,
                        const uint64_t *shape, const void *data);

/* write(2) all of `bytes`, retrying on EINTR and short writes. */
hs_status hs__write_all(const char *path, int fd, const void *data,
                        size_t bytes, uint64_t at);

#endif
