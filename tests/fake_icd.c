/* A fake OpenCL platform for discovery tests, loaded by the ICD loader
 * beside the real ones. FAKE_ICD_MODE chooses how it misbehaves:
 *   "nodevice"  clGetDeviceIDs reports CL_DEVICE_NOT_FOUND
 *   "fail"      clGetDeviceIDs fails with CL_OUT_OF_HOST_MEMORY */
#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl_icd.h>
#include <stdlib.h>
#include <string.h>

struct _cl_platform_id {
  cl_icd_dispatch *dispatch;
};

static cl_icd_dispatch table;
static struct _cl_platform_id platform = {&table};

static cl_int CL_API_CALL fake_platform_info(cl_platform_id p, cl_platform_info what,
                                             size_t size, void *value, size_t *ret) {
  (void)p;
  const char *s;
  switch (what) {
    case CL_PLATFORM_NAME: s = "hetsage fake platform"; break;
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
  (void)n;
  (void)devs;
  const char *mode = getenv("FAKE_ICD_MODE");
  if (num) *num = 0;
  if (mode && strcmp(mode, "fail") == 0) return CL_OUT_OF_HOST_MEMORY;
  return CL_DEVICE_NOT_FOUND;
}

CL_API_ENTRY cl_int CL_API_CALL clIcdGetPlatformIDsKHR(cl_uint n, cl_platform_id *plats,
                                                       cl_uint *num);
CL_API_ENTRY cl_int CL_API_CALL clIcdGetPlatformIDsKHR(cl_uint n, cl_platform_id *plats,
                                                       cl_uint *num) {
  table.clGetPlatformInfo = fake_platform_info;
  table.clGetDeviceIDs = fake_device_ids;
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
