/* Kernel launches, plain buffers and events (see hs_launch.h). */
#include <stdio.h>
#include <string.h>

#include "hs_launch.h"

cl_device_id hs__queue_device(cl_command_queue q) {
  cl_device_id dev = NULL;
  if (!q || clGetCommandQueueInfo(q, CL_QUEUE_DEVICE, sizeof dev, &dev, NULL) != CL_SUCCESS)
    return NULL;
  return dev;
}

static const char *kernel_name(cl_kernel k, char *buf, size_t len) {
  buf[0] = '\0';
  if (clGetKernelInfo(k, CL_KERNEL_FUNCTION_NAME, len, buf, NULL) != CL_SUCCESS)
    snprintf(buf, len, "?");
  buf[len - 1] = '\0';
  return buf;
}

hs_status hs__kernel_arg(cl_kernel k, cl_uint index, size_t size, const void *value) {
  cl_int err = clSetKernelArg(k, index, size, value);
  if (err != CL_SUCCESS) {
    char name[128], call[200];
    snprintf(call, sizeof call, "clSetKernelArg(%s, %u)", kernel_name(k, name, sizeof name),
             index);
    return hs__cl_fail(err, call, NULL);
  }
  return HS_OK;
}

hs_status hs__kernel_args(cl_kernel k, const hs_karg *args, int n) {
  for (int i = 0; i < n; i++) {
    hs_status st = hs__kernel_arg(k, (cl_uint)i, args[i].size, args[i].value);
    if (st != HS_OK) return st;
  }
  return HS_OK;
}

size_t hs__kernel_max_wg(cl_kernel k, const hs_dev *dev) {
  size_t wg = 0;
  if (clGetKernelWorkGroupInfo(k, dev->id, CL_KERNEL_WORK_GROUP_SIZE, sizeof wg, &wg, NULL) !=
          CL_SUCCESS ||
      wg == 0)
    return 1;
  return wg;
}

void hs__kernel_release(cl_kernel *k) {
  if (*k) clReleaseKernel(*k);
  *k = NULL;
}

void hs__program_release(cl_program *p) {
  if (*p) clReleaseProgram(*p);
  *p = NULL;
}

hs_status hs__launch(cl_command_queue q, cl_kernel k, int dims, const size_t *global,
                     const size_t *local, cl_uint n_wait, const cl_event *wait, cl_event *ev) {
  if (dims < 1 || dims > 3) return hs__fail(HS_ERR_INVALID_ARG, "launch over %d dimensions", dims);
  size_t g[3];
  bool empty = false;
  bool use_local = local && local[0] > 0;
  for (int i = 0; i < dims; i++) {
    g[i] = global[i];
    if (g[i] == 0) empty = true;
    if (use_local && g[i] % local[i]) g[i] += local[i] - g[i] % local[i];
  }
  cl_int err;
  if (empty)
    err = clEnqueueMarkerWithWaitList(q, n_wait, n_wait ? wait : NULL, ev);
  else
    err = clEnqueueNDRangeKernel(q, k, (cl_uint)dims, NULL, g, use_local ? local : NULL, n_wait,
                                 n_wait ? wait : NULL, ev);
  if (err != CL_SUCCESS) {
    char name[128], call[200];
    snprintf(call, sizeof call, "clEnqueueNDRangeKernel(%s)", kernel_name(k, name, sizeof name));
    return hs__cl_fail(err, call, hs__queue_device(q));
  }
  return HS_OK;
}

hs_status hs__mem_create(const hs_ctx *ctx, cl_mem_flags flags, size_t bytes, cl_mem *out) {
  return hs__buffer_create(ctx, flags, bytes, out);
}

void hs__mem_release(cl_mem *m) {
  if (*m) clReleaseMemObject(*m);
  *m = NULL;
}

hs_status hs__mem_reserve(const hs_ctx *ctx, cl_mem_flags flags, size_t bytes, cl_mem *m,
                          size_t *cap) {
  if (*m && *cap >= bytes) return HS_OK;
  hs__mem_release(m);
  *cap = 0;
  hs_status st = hs__mem_create(ctx, flags, bytes, m);
  if (st == HS_OK) *cap = bytes;
  return st;
}

hs_status hs__mem_write(cl_command_queue q, cl_mem m, bool blocking, size_t offset, size_t bytes,
                        const void *src, cl_uint n_wait, const cl_event *wait, cl_event *ev) {
  cl_int err = bytes == 0 ? clEnqueueMarkerWithWaitList(q, n_wait, n_wait ? wait : NULL, ev)
                          : clEnqueueWriteBuffer(q, m, blocking ? CL_TRUE : CL_FALSE, offset,
                                                 bytes, src, n_wait, n_wait ? wait : NULL, ev);
  if (err != CL_SUCCESS) return hs__cl_fail(err, "clEnqueueWriteBuffer", hs__queue_device(q));
  return HS_OK;
}

hs_status hs__mem_read(cl_command_queue q, cl_mem m, bool blocking, size_t offset, size_t bytes,
                       void *dst, cl_uint n_wait, const cl_event *wait, cl_event *ev) {
  cl_int err = bytes == 0 ? clEnqueueMarkerWithWaitList(q, n_wait, n_wait ? wait : NULL, ev)
                          : clEnqueueReadBuffer(q, m, blocking ? CL_TRUE : CL_FALSE, offset,
                                                bytes, dst, n_wait, n_wait ? wait : NULL, ev);
  if (err == CL_SUCCESS && bytes == 0 && blocking) err = clFinish(q);
  if (err != CL_SUCCESS) return hs__cl_fail(err, "clEnqueueReadBuffer", hs__queue_device(q));
  return HS_OK;
}

hs_status hs__mem_fill(cl_command_queue q, cl_mem m, const void *pattern, size_t pattern_size,
                       size_t offset, size_t bytes, cl_uint n_wait, const cl_event *wait,
                       cl_event *ev) {
  cl_int err = bytes == 0 ? clEnqueueMarkerWithWaitList(q, n_wait, n_wait ? wait : NULL, ev)
                          : clEnqueueFillBuffer(q, m, pattern, pattern_size, offset, bytes,
                                                n_wait, n_wait ? wait : NULL, ev);
  if (err != CL_SUCCESS) return hs__cl_fail(err, "clEnqueueFillBuffer", hs__queue_device(q));
  return HS_OK;
}

hs_status hs__mem_copy(cl_command_queue q, cl_mem src, cl_mem dst, size_t src_offset,
                       size_t dst_offset, size_t bytes, cl_uint n_wait, const cl_event *wait,
                       cl_event *ev) {
  cl_int err = bytes == 0 ? clEnqueueMarkerWithWaitList(q, n_wait, n_wait ? wait : NULL, ev)
                          : clEnqueueCopyBuffer(q, src, dst, src_offset, dst_offset, bytes,
                                                n_wait, n_wait ? wait : NULL, ev);
  if (err != CL_SUCCESS) return hs__cl_fail(err, "clEnqueueCopyBuffer", hs__queue_device(q));
  return HS_OK;
}

hs_status hs__queue_finish(cl_command_queue q) {
  cl_int err = clFinish(q);
  if (err != CL_SUCCESS) return hs__cl_fail(err, "clFinish", hs__queue_device(q));
  return HS_OK;
}

hs_status hs__queue_flush(cl_command_queue q) {
  cl_int err = clFlush(q);
  if (err != CL_SUCCESS) return hs__cl_fail(err, "clFlush", hs__queue_device(q));
  return HS_OK;
}

hs_status hs__queue_in_order(cl_command_queue q, bool *in_order) {
  cl_command_queue_properties props = 0;
  cl_int err = clGetCommandQueueInfo(q, CL_QUEUE_PROPERTIES, sizeof props, &props, NULL);
  if (err != CL_SUCCESS)
    return hs__cl_fail(err, "clGetCommandQueueInfo(CL_QUEUE_PROPERTIES)", hs__queue_device(q));
  *in_order = !(props & CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE);
  return HS_OK;
}

hs_status hs__queue_wait_for(cl_command_queue q, cl_uint n_wait, const cl_event *wait) {
  if (n_wait == 0) return HS_OK;
  cl_int err = clEnqueueBarrierWithWaitList(q, n_wait, wait, NULL);
  if (err != CL_SUCCESS)
    return hs__cl_fail(err, "clEnqueueBarrierWithWaitList", hs__queue_device(q));
  return HS_OK;
}

hs_status hs__queue_marker(cl_command_queue q, cl_uint n_wait, const cl_event *wait, cl_event *ev) {
  cl_int err = clEnqueueMarkerWithWaitList(q, n_wait, n_wait ? wait : NULL, ev);
  if (err != CL_SUCCESS)
    return hs__cl_fail(err, "clEnqueueMarkerWithWaitList", hs__queue_device(q));
  return HS_OK;
}

hs_status hs__event_times(cl_event ev, uint64_t *start_ns, uint64_t *end_ns) {
  cl_ulong s = 0, e = 0;
  cl_int err = clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_START, sizeof s, &s, NULL);
  if (err == CL_SUCCESS)
    err = clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_END, sizeof e, &e, NULL);
  if (err != CL_SUCCESS) return hs__cl_fail(err, "clGetEventProfilingInfo", NULL);
  *start_ns = s;
  *end_ns = e;
  return HS_OK;
}
