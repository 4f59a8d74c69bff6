/* hetsage — status codes, error detail and logging.
 *
 * Every fallible function returns hs_status. On failure it also leaves a
 * human-readable detail message (file, position, OpenCL call and device,
 * what was wrong) in a thread-local buffer read by hs_last_error(). */
#ifndef HETSAGE_STATUS_H
#define HETSAGE_STATUS_H

#ifdef __cplusplus
extern "C" {
#endif

#include "hetsage/version.h"

/* One list, expanded into the enum and into hs_strerror(). */
#define HS_STATUS_LIST(X)                                                   \
  X(HS_OK, 0, "success")                                                    \
  X(HS_ERR_NOMEM, 1, "out of memory")                                       \
  X(HS_ERR_INVALID_ARG, 2, "invalid argument")                              \
  X(HS_ERR_IO, 3, "input/output error")                                     \
  X(HS_ERR_FORMAT, 4, "malformed input")                                    \
  X(HS_ERR_OPENCL, 5, "OpenCL error")                                       \
  X(HS_ERR_BUILD, 6, "OpenCL program build failed")                         \
  X(HS_ERR_NO_DEVICE, 7, "no suitable device")                              \
  X(HS_ERR_UNSUPPORTED, 8, "not supported on this device")                  \
  X(HS_ERR_RANGE, 9, "value out of range")                                  \
  X(HS_ERR_PROFILE, 10, "bad board profile")                                \
  X(HS_ERR_PLACEMENT, 11, "placement impossible")                           \
  X(HS_ERR_CHECKSUM, 12, "checksum mismatch")                               \
  X(HS_ERR_INTERRUPTED, 13, "interrupted")                                  \
  X(HS_ERR_BUDGET, 14, "memory budget exceeded")                            \
  X(HS_ERR_STATE, 15, "call not valid in the current state")                \
  X(HS_ERR_NOT_FOUND, 16, "not found")                                      \
  X(HS_ERR_PEER, 17, "another process of the run failed or stopped answering")

typedef enum hs_status {
#define HS_X_ENUM(name, value, text) name = value,
  HS_STATUS_LIST(HS_X_ENUM)
#undef HS_X_ENUM
} hs_status;

/* Static English text for a status; never NULL ("unknown status" for
 * values outside the list). Thread-safe. */
HS_API const char *hs_strerror(hs_status status);

/* Detail of the last error set on the calling thread ("" if none). The
 * pointer stays valid until the next hetsage call on this thread. */
HS_API const char *hs_last_error(void);

/* The library's version string, e.g. "0.2.0" (HS_VERSION_STRING of the
 * headers it was built with). */
HS_API const char *hs_version(void);

#ifdef __cplusplus
}
#endif
#endif
