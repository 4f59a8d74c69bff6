/* Helpers shared by tests that need an OpenCL device: find the first CPU
 * device (PoCL here), or the first device of any type where a test runs
 * on whatever implementation it is given, or skip the test when there is
 * none. */
#ifndef HS_TEST_CL_H
#define HS_TEST_CL_H

#include <criterion/criterion.h>

#include "hetsage/settings.h"
#include "hs_dev.h"

/* The device settings a runtime would give the devices in this
 * environment (the tests' binary cache: HETSAGE_CACHE_DIR), for devices
 * discovered without a runtime. */
static inline const hs__dev_settings *hs_test_dev_settings(void) {
  static hs__dev_settings ds;
  hs_settings s;
  hs_settings_init(&s);
  cr_assert_eq(hs_settings_from_env(&s), HS_OK, "%s", hs_last_error());
  ds = (hs__dev_settings){s.cache_dir, s.max_alloc, (int)s.gemm};
  return &ds;
}

/* Discover the inventory, its devices with the environment's settings. */
static inline hs_status hs_test_discover(hs_inventory *inv) {
  hs_status st = hs__inventory_discover(inv);
  for (int i = 0; st == HS_OK && i < inv->n_devs; i++) inv->devs[i].settings = hs_test_dev_settings();
  return st;
}

/* Discover and pick the first device of `type`, else (when `any`) the
 * first device of any type; skips the test when there is none. The caller
 * releases `inv` with hs__inventory_release. */
static inline const hs_dev *hs_test_pick(hs_inventory *inv, hs_device_type type, bool any) {
  if (hs_test_discover(inv) != HS_OK) {
    cr_skip_test("no OpenCL platform: %s", hs_last_error());
    return NULL;
  }
  for (int i = 0; i < inv->n_devs; i++)
    if (inv->devs[i].info.type == type) return &inv->devs[i];
  if (any && inv->n_devs > 0) return &inv->devs[0];
  hs__inventory_release(inv);
  if (any) cr_skip_test("no OpenCL device on this machine");
  cr_skip_test("no %s OpenCL device on this machine", hs_device_type_name(type));
  return NULL;
}

/* The first device of `type`; skips the test if absent. */
static inline const hs_dev *hs_test_pick_device(hs_inventory *inv, hs_device_type type) {
  return hs_test_pick(inv, type, false);
}

/* The first device of `type`, else the first device of any type (a
 * simulator such as oclgrind presents itself as a GPU). */
static inline const hs_dev *hs_test_pick_device_or_any(hs_inventory *inv, hs_device_type type) {
  return hs_test_pick(inv, type, true);
}

#endif
