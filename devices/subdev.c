/* Sub-devices: a CPU device split by counts, e.g. one core for the sampler
 * and one for the trainer. */
#include <stdlib.h>
#include <string.h>

#include "hs_dev.h"

hs_status hs__subdevices_create(const hs_dev *parent, const unsigned *counts, int n,
                                hs_dev *out) {
  if (n <= 0 || n > 16) return hs__fail(HS_ERR_INVALID_ARG, "%d sub-devices requested", n);
  if (!parent->info.partition_by_counts)
    return hs__fail(HS_ERR_UNSUPPORTED,
                    "device '%s' cannot be partitioned by counts", parent->info.name);
  unsigned total = 0;
  cl_device_partition_property props[20];
  int k = 0;
  props[k++] = CL_DEVICE_PARTITION_BY_COUNTS;
  for (int i = 0; i < n; i++) {
    if (counts[i] == 0)
      return hs__fail(HS_ERR_INVALID_ARG, "sub-device %d would have 0 compute units", i);
    total += counts[i];
    props[k++] = (cl_device_partition_property)counts[i];
  }
  props[k++] = CL_DEVICE_PARTITION_BY_COUNTS_LIST_END;
  props[k++] = 0;
  if (total > parent->info.compute_units)
    return hs__fail(HS_ERR_RANGE,
                    "sub-devices need %u compute units but device '%s' has %u", total,
                    parent->info.name, parent->info.compute_units);

  cl_device_id ids[16];
  cl_uint got = 0;
  cl_int err = clCreateSubDevices(parent->id, props, (cl_uint)n, ids, &got);
  if (err != CL_SUCCESS) return hs__cl_fail(err, "clCreateSubDevices", parent->id);
  if (got != (cl_uint)n) {
    for (cl_uint i = 0; i < got; i++) clReleaseDevice(ids[i]);
    return hs__fail(HS_ERR_OPENCL, "clCreateSubDevices made %u sub-devices, not %d", got, n);
  }
  for (int i = 0; i < n; i++) {
    memset(&out[i], 0, sizeof out[i]);
    out[i].platform = parent->platform;
    out[i].id = ids[i];
    out[i].progs = parent->progs; /* a part of a device takes its programs */
    out[i].settings = parent->settings;
    hs_status st = hs__device_query(parent->platform, ids[i], &out[i].info);
    if (st != HS_OK) {
      for (int j = 0; j < n; j++) clReleaseDevice(ids[j]);
      return st;
    }
    out[i].info.index = parent->info.index;
    out[i].info.platform_index = parent->info.platform_index;
  }
  return HS_OK;
}

void hs__subdevices_release(hs_dev *subs, int n) {
  for (int i = 0; i < n; i++) {
    if (subs[i].id) clReleaseDevice(subs[i].id);
    subs[i].id = NULL;
  }
}
