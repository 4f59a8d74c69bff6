/* Arrays larger than one allocation: split into parts at the device's max
 * allocation size, every part but the last holding exactly part_bytes. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "hs_dev.h"

size_t hs__max_alloc(const hs_dev *dev) {
  size_t lim = (size_t)dev->info.max_alloc_bytes;
  uint64_t v = dev->settings ? dev->settings->max_alloc : 0;
  if (v > 0 && (lim == 0 || v < lim)) lim = (size_t)v;
  return lim;
}

static void CL_CALLBACK free_host_backing(cl_mem m, void *p) {
  (void)m;
  free(p);
}

hs_status hs__buffer_create(const hs_ctx *ctx, cl_mem_flags flags, size_t bytes, cl_mem *out) {
  *out = NULL;
  if (bytes == 0) bytes = 4; /* OpenCL forbids empty buffers */
  char a[32], b[32];
  if (ctx->max_alloc && bytes > ctx->max_alloc)
    return hs__fail(HS_ERR_NOMEM, "a device buffer of %s exceeds the device's largest "
                    "allocation (CL_DEVICE_MAX_MEM_ALLOC_SIZE) of %s",
                    hs__fmt_bytes(bytes, a, sizeof a), hs__fmt_bytes(ctx->max_alloc, b, sizeof b));
  void *host = NULL;
  if (ctx->host_memory) {
    hs_status st = hs__mem_room_check(bytes, "a device buffer in host memory");
    if (st != HS_OK) return st;
    size_t rounded = (bytes + 4095) & ~(size_t)4095;
    host = aligned_alloc(4096, rounded);
    if (!host)
      return hs__fail(HS_ERR_NOMEM, "a device buffer of %s in host memory: %s",
                      hs__fmt_bytes(bytes, a, sizeof a), strerror(errno));
    flags |= CL_MEM_USE_HOST_PTR;
  }
  cl_int err;
  *out = clCreateBuffer(ctx->ctx, flags, bytes, host, &err);
  if (err == CL_SUCCESS && host &&
      (err = clSetMemObjectDestructorCallback(*out, free_host_backing, host)) != CL_SUCCESS) {
    clReleaseMemObject(*out);
    *out = NULL;
  }
  if (err != CL_SUCCESS) {
    free(host);
    *out = NULL;
    char call[96];
    snprintf(call, sizeof call, "clCreateBuffer(%zu bytes)", bytes);
    return hs__cl_fail(err, call, NULL);
  }
  return HS_OK;
}

hs_status hs__split_buf_create(const hs_ctx *ctx, const hs_dev *dev, cl_mem_flags flags,
                               size_t total_bytes, size_t elem_size, hs_split_buf *out) {
  memset(out, 0, sizeof *out);
  if (elem_size == 0 || total_bytes % elem_size != 0)
    return hs__fail(HS_ERR_INVALID_ARG, "buffer of %zu bytes is not a whole number of %zu-byte elements",
                    total_bytes, elem_size);
  size_t lim = hs__max_alloc(dev);
  size_t part = lim - lim % elem_size;
  if (part == 0)
    return hs__fail(HS_ERR_UNSUPPORTED, "device '%s' cannot allocate one %zu-byte element",
                    dev->info.name, elem_size);
  size_t n_parts = total_bytes == 0 ? 1 : (total_bytes + part - 1) / part;
  if (n_parts > HS_BUF_MAX_PARTS)
    return hs__fail(HS_ERR_BUDGET,
                    "an array of %zu bytes needs %zu allocations of at most %zu bytes on "
                    "device '%s' (limit %d)",
                    total_bytes, n_parts, part, dev->info.name, HS_BUF_MAX_PARTS);
  out->part_bytes = total_bytes < part ? total_bytes : part;
  out->total_bytes = total_bytes;
  out->elem_size = elem_size;
  for (size_t i = 0; i < n_parts; i++) {
    size_t bytes = i + 1 < n_parts ? part : total_bytes - i * part;
    if (bytes == 0) bytes = elem_size; /* OpenCL forbids empty buffers */
    hs_status st = hs__buffer_create(ctx, flags, bytes, &out->parts[i]);
    if (st != HS_OK) {
      hs__split_buf_release(out);
      return hs__fail_context(st, "part %zu of %zu of an array of %zu bytes on '%s'", i + 1,
                              n_parts, total_bytes, dev->info.name);
    }
    out->n_parts = (int)i + 1;
  }
  hs__log(HS_LOG_DEVICE, "buffer of %zu bytes on '%s' in %d part(s)", total_bytes,
          dev->info.name, out->n_parts);
  return HS_OK;
}

void hs__split_buf_release(hs_split_buf *buf) {
  for (int i = 0; i < buf->n_parts; i++)
    if (buf->parts[i]) clReleaseMemObject(buf->parts[i]);
  memset(buf, 0, sizeof *buf);
}

typedef enum { XFER_WRITE, XFER_READ } xfer_dir;

static hs_status transfer(cl_command_queue q, const hs_split_buf *buf, size_t offset,
                          size_t bytes, void *host, xfer_dir dir) {
  if (offset > buf->total_bytes || bytes > buf->total_bytes - offset)
    return hs__fail(HS_ERR_RANGE, "transfer of %zu bytes at %zu past a %zu-byte buffer",
                    bytes, offset, buf->total_bytes);
  char *p = host;
  while (bytes > 0) {
    size_t part = offset / buf->part_bytes;
    size_t in_part = offset % buf->part_bytes;
    size_t n = buf->part_bytes - in_part;
    if (n > bytes) n = bytes;
    cl_int err = dir == XFER_WRITE
                     ? clEnqueueWriteBuffer(q, buf->parts[part], CL_TRUE, in_part, n, p, 0,
                                            NULL, NULL)
                     : clEnqueueReadBuffer(q, buf->parts[part], CL_TRUE, in_part, n, p, 0,
                                           NULL, NULL);
    if (err != CL_SUCCESS) {
      cl_device_id dev = NULL;
      clGetCommandQueueInfo(q, CL_QUEUE_DEVICE, sizeof dev, &dev, NULL);
      return hs__cl_fail(err, dir == XFER_WRITE ? "clEnqueueWriteBuffer" : "clEnqueueReadBuffer",
                         dev);
    }
    p += n;
    offset += n;
    bytes -= n;
  }
  return HS_OK;
}

hs_status hs__split_buf_write(cl_command_queue q, hs_split_buf *buf, size_t offset,
                              size_t bytes, const void *src) {
  return transfer(q, buf, offset, bytes, (void *)(uintptr_t)src, XFER_WRITE);
}

hs_status hs__split_buf_read(cl_command_queue q, const hs_split_buf *buf, size_t offset,
                             size_t bytes, void *dst) {
  return transfer(q, buf, offset, bytes, dst, XFER_READ);
}
