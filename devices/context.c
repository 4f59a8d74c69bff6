/* clCreateCommandQueue is the only queue constructor on OpenCL 1.x devices. */
#define CL_USE_DEPRECATED_OPENCL_1_2_APIS
#include <string.h>
#include <threads.h>
#include <time.h>

#include "hs_dev.h"

hs_status hs__ctx_create(const hs_dev *devs, int n, hs_ctx *out) {
  memset(out, 0, sizeof *out);
  if (n <= 0 || n > 16) return hs__fail(HS_ERR_INVALID_ARG, "context over %d devices", n);
  cl_device_id ids[16];
  for (int i = 0; i < n; i++) {
    if (devs[i].platform != devs[0].platform)
      return hs__fail(HS_ERR_INVALID_ARG,
                      "devices '%s' and '%s' are on different platforms and cannot "
                      "share a context",
                      devs[0].info.name, devs[i].info.name);
    ids[i] = devs[i].id;
  }
  cl_context_properties props[] = {CL_CONTEXT_PLATFORM,
                                   (cl_context_properties)devs[0].platform, 0};
  cl_int err = CL_SUCCESS;
  out->ctx = clCreateContext(props, (cl_uint)n, ids, NULL, NULL, &err);
  if (err != CL_SUCCESS) {
    out->ctx = NULL;
    return hs__cl_fail(err, "clCreateContext", ids[0]);
  }
  out->platform = devs[0].platform;
  out->host_memory = true;
  for (int i = 0; i < n; i++) {
    size_t a = (size_t)devs[i].info.max_alloc_bytes;
    if (a && (!out->max_alloc || a < out->max_alloc)) out->max_alloc = a;
    /* Host memory of our own behind buffers on PoCL's CPU devices (PoCL
     * allocates lazily and asserts when that fails). Not on rusticl: its
     * CL_MEM_USE_HOST_PTR buffers lost a resumed trainer's bits when the
     * heap held junk (nn_cl resume_from_checkpoint_is_bit_identical under
     * MALLOC_PERTURB_), while its own allocations keep them. */
    out->host_memory &= devs[i].info.type == HS_DEVICE_CPU &&
                        strncmp(devs[i].info.platform_key, "pocl", 4) == 0;
  }
  return HS_OK;
}

void hs__ctx_release(hs_ctx *ctx) {
  if (ctx->ctx) clReleaseContext(ctx->ctx);
  ctx->ctx = NULL;
}

hs_status hs__queue_create(const hs_ctx *ctx, const hs_dev *dev, int flags,
                           cl_command_queue *out) {
  cl_command_queue_properties p = 0;
  if ((flags & HS_QUEUE_PROFILING) && dev->info.queue_profiling)
    p |= CL_QUEUE_PROFILING_ENABLE;
  if ((flags & HS_QUEUE_OUT_OF_ORDER) && dev->info.queue_out_of_order)
    p |= CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE;
  bool dropped = ((flags & HS_QUEUE_PROFILING) && !dev->info.queue_profiling) ||
                 ((flags & HS_QUEUE_OUT_OF_ORDER) && !dev->info.queue_out_of_order);
  if (dropped)
    hs__log(HS_LOG_DEVICE, "queue on '%s': requested properties unsupported, dropped",
            dev->info.name);
  cl_int err = CL_SUCCESS;
  if (strncmp(dev->info.device_version, "OpenCL 1.", 9) == 0) {
    *out = clCreateCommandQueue(ctx->ctx, dev->id, p, &err);
  } else {
    cl_queue_properties props[] = {CL_QUEUE_PROPERTIES, p, 0};
    *out = clCreateCommandQueueWithProperties(ctx->ctx, dev->id, p ? props : NULL, &err);
  }
  if (err != CL_SUCCESS) {
    *out = NULL;
    return hs__cl_fail(err, "clCreateCommandQueue", dev->id);
  }
  return HS_OK;
}

/* Platforms whose timestamps were probed (hs__queue_timestamps_real). */
static mtx_t probed_lock;
static once_flag probed_once = ONCE_FLAG_INIT;
static struct {
  cl_platform_id platform;
  bool real;
} probed[16];
static int n_probed;

static void probed_init(void) { mtx_init(&probed_lock, mtx_plain); }

bool hs__queue_timestamps_real(const hs_ctx *ctx, cl_command_queue q) {
  call_once(&probed_once, probed_init);
  mtx_lock(&probed_lock);
  for (int i = 0; i < n_probed; i++)
    if (probed[i].platform == ctx->platform) {
      bool r = probed[i].real;
      mtx_unlock(&probed_lock);
      return r;
    }
  mtx_unlock(&probed_lock);
  enum { BYTES = 4 << 20 };
  cl_int err;
  cl_mem m = clCreateBuffer(ctx->ctx, CL_MEM_READ_WRITE, BYTES, NULL, &err);
  cl_event ev = NULL;
  cl_uint zero = 0;
  cl_ulong t0 = 0, t1 = 0;
  if (err == CL_SUCCESS)
    err = clEnqueueFillBuffer(q, m, &zero, sizeof zero, 0, BYTES, 0, NULL, &ev);
  if (err == CL_SUCCESS) err = clWaitForEvents(1, &ev);
  if (err == CL_SUCCESS)
    err = clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_START, sizeof t0, &t0, NULL);
  if (err == CL_SUCCESS)
    err = clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_END, sizeof t1, &t1, NULL);
  if (ev) clReleaseEvent(ev);
  if (m) clReleaseMemObject(m);
  bool real = err == CL_SUCCESS && t1 >= t0 + 100;
  hs__log(HS_LOG_DEVICE, "profiling timestamps on this platform %s (a 4 MiB fill: %llu ns)",
          real ? "are real" : "are not real time", (unsigned long long)(t1 - t0));
  mtx_lock(&probed_lock);
  if (n_probed < 16) {
    probed[n_probed].platform = ctx->platform;
    probed[n_probed++].real = real;
  }
  mtx_unlock(&probed_lock);
  return real;
}

cl_command_queue hs__queue_retain(cl_command_queue q) {
  if (q) clRetainCommandQueue(q);
  return q;
}

void hs__queue_release(cl_command_queue *q) {
  if (!*q) return;
  clFinish(*q);
  /* PoCL 3.1's pthread device drops its own event references on a worker
   * thread just after it reports completion; a context or sub-device
   * released in that window crashes the worker (seen at process exit). Give
   * the worker its moment: 2 ms once per queue, outside any hot path. */
  struct timespec settle = {0, 2000000};
  nanosleep(&settle, NULL);
  clReleaseCommandQueue(*q);
  *q = NULL;
}
