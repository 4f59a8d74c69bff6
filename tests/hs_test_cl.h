/* Helpers shared by tests that need an OpenCL device: find the first CPU
 * device (PoCL here) or skip the test when there is none. */
#ifndef HS_TEST_CL_H
#define HS_TEST_CL_H

#include <criterion/criterion.h>

#include "hs_dev.h"

/* Discover and pick the first device of `type`; skips the test if absent.
 * The caller releases `inv` with hs__inventory_release. */
static inline const hs_dev *hs_test_pick_device(hs_inventory *inv, hs_device_type type) {
  if (hs__inventory_discover(inv) != HS_OK) {
    cr_skip_test("no OpenCL platform: %s", hs_last_error());
    return NULL;
  }
  for (int i = 0; i < inv->n_devs; i++)
    if (inv->devs[i].info.type == type) return &inv->devs[i];
  hs__inventory_release(inv);
  cr_skip_test("no %s OpenCL device on this machine", hs_device_type_name(type));
  return NULL;
}

#endif
