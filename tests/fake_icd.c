/* A fake OpenCL platform for discovery tests, loaded by the ICD loader
 * beside the real ones. FAKE_ICD_MODE chooses how it misbehaves:
 *   "nodevice"  clGetDeviceIDs reports CL_DEVICE_NOT_FOUND
 *   "fail"      clGetDeviceIDs fails with CL_OUT_OF_HOST_MEMORY
 *   "device"    one GPU ("hetsage fake GPU") that answers queries but
 *               cannot be used: clCreateContext fails with
 *               CL_OUT_OF_RESOURCES (a device outside a board, which
 *               nothing should touch)
 * FAKE_ICD_PLATFORM renames the platform (default "hetsage fake platform"). */
#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl_icd.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

struct _cl_platform_id {
  cl_icd_dispatch *dispatch;
};

struct _cl_device_id {
  cl_icd_dispatch *dispatch;
};

static cl_icd_dispatch table;
static struct _cl_platform_id platform = {&table};
static struct _cl_device_id device = {&table};

static bool mode_is(const char *m) {
  const char *mode = getenv("FAKE_ICD_MODE");
  return mode && strcmp(mode, m) == 0;
}

static cl_int put(const void *v, size_t n, size_t size, void *value, size_t *ret) {
  if (ret) *ret = n;
  if (value) {
    if (size < n) return CL_INVALID_VALUE;
    memcpy(value, v, n);
  }
  return CL_SUCCESS;
}

static cl_int CL_API_CALL fake_device_info(cl_device_id d, cl_device_info what, size_t size,
                                           void *value, size_t *ret) {
  (void)d;
  cl_device_type type = CL_DEVICE_TYPE_GPU;
  cl_bool yes = CL_TRUE;
  cl_ulong mem = 1ull << 30;
  cl_uint units = 4;
  const char *s = NULL;
  switch (what) {
    case CL_DEVICE_TYPE: return put(&type, sizeof type, size, value, ret);
    case CL_DEVICE_AVAILABLE:
    case CL_DEVICE_COMPILER_AVAILABLE: return put(&yes, sizeof yes, size, value, ret);
    case CL_DEVICE_GLOBAL_MEM_SIZE:
    case CL_DEVICE_MAX_MEM_ALLOC_SIZE: return put(&mem, sizeof mem, size, value, ret);
    case CL_DEVICE_MAX_COMPUTE_UNITS: return put(&units, sizeof units, size, value, ret);
    case CL_DEVICE_NAME: s = "hetsage fake GPU"; break;
    case CL_DEVICE_VENDOR: s = "hetsage tests"; break;
    case CL_DEVICE_VERSION: s = "OpenCL 1.2 fake"; break;
    case CL_DRIVER_VERSION: s = "0.0"; break;
    case CL_DEVICE_OPENCL_C_VERSION: s = "OpenCL C 1.2"; break;
    case CL_DEVICE_EXTENSIONS: s = ""; break;
    default: return CL_INVALID_VALUE;
  }
  return put(s, strlen(s) + 1, size, value, ret);
}

static cl_context CL_API_CALL fake_create_context(const cl_context_properties *props,
                                                  cl_uint n, const cl_device_id *devs,
                                                  void(CL_CALLBACK *notify)(const char *,
                                                                            const void *,
                                                                            size_t, void *),
                                                  void *user, cl_int *err) {
  (void)props, (void)n, (void)devs, (void)notify, (void)user;
  if (err) *err = CL_OUT_OF_RESOURCES;
  return NULL;
}

static cl_int CL_API_CALL fake_platform_info(cl_platform_id p, cl_platform_info what,
                                             size_t size, void *value, size_t *ret) {
  (void)p;
  const char *s;
  switch (what) {
    case CL_PLATFORM_NAME:
      s = getenv("FAKE_ICD_PLATFORM") ? getenv("FAKE_ICD_PLATFORM") : "hetsage fake platform";
      break;
    case CL_PLATFORM_VENDOR: s = "hetsage tests"; break;
    case CL_PLATFORM_VERSION: s = "OpenCL 1.2 fake"; break;
    case CL_PLATFORM_PROFILE: s = "FULL_PROFILE"; break;
    case CL_PLATFORM_EXTENSIONS: s = "cl_khr_icd"; break;
    case CL_PLATFORM_ICD_SUFFIX_KHR: s = "FAKE"; break;
    default: return CL_INVALID_VALUE;
  }
  size_t n = strlen(s) + 1;
  if (ret) *ret = n;
  if (value) {
    if (size < n) return CL_INVALID_VALUE;
    memcpy(value, s, n);
  }
  return CL_SUCCESS;
}

static cl_int CL_API_CALL fake_device_ids(cl_platform_id p, cl_device_type t, cl_uint n,
                                          cl_device_id *devs, cl_uint *num) {
  (void)p;
  (void)t;
  if (num) *num = 0;
  if (mode_is("fail")) return CL_OUT_OF_HOST_MEMORY;
  if (!mode_is("device")) return CL_DEVICE_NOT_FOUND;
  if (num) *num = 1;
  if (devs && n > 0) devs[0] = &device;
  return CL_SUCCESS;
}

CL_API_ENTRY cl_int CL_API_CALL clIcdGetPlatformIDsKHR(cl_uint n, cl_platform_id *plats,
                                                       cl_uint *num);
CL_API_ENTRY cl_int CL_API_CALL clIcdGetPlatformIDsKHR(cl_uint n, cl_platform_id *plats,
                                                       cl_uint *num) {
  table.clGetPlatformInfo = fake_platform_info;
  table.clGetDeviceIDs = fake_device_ids;
  table.clGetDeviceInfo = fake_device_info;
  table.clCreateContext = fake_create_context;
  if (num) *num = 1;
  if (plats && n > 0) plats[0] = &platform;
  return CL_SUCCESS;
}

CL_API_ENTRY void *CL_API_CALL clGetExtensionFunctionAddress(const char *name) {
  /* The ICD ABI returns function pointers as void *; POSIX guarantees the
   * round trip, ISO C does not, hence the memcpy. */
  void *p = NULL;
  if (strcmp(name, "clIcdGetPlatformIDsKHR") == 0) {
    cl_int (*fn)(cl_uint, cl_platform_id *, cl_uint *) = clIcdGetPlatformIDsKHR;
    memcpy(&p, &fn, sizeof p);
  }
  return p;
}

CL_API_ENTRY cl_int CL_API_CALL clGetPlatformInfo(cl_platform_id p, cl_platform_info what,
                                                  size_t size, void *value, size_t *ret) {
  return fake_platform_info(p, what, size, value, ret);
}
