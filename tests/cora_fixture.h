/* A runtime on this machine's devices and the bundled Cora, opened before
 * each test of a suite and closed after it (TestSuite(name, .init =
 * cora_setup, .fini = cora_teardown)); a test is skipped where there is no
 * OpenCL device. Header-only (static state and functions). */
#ifndef HS_TEST_CORA_FIXTURE_H
#define HS_TEST_CORA_FIXTURE_H

#include <criterion/criterion.h>

#include "hetsage.h"

static hs_runtime *rt;
static hs_dataset *ds;

static void cora_setup(void) {
  hs_status st = hs_runtime_open(&rt, NULL);
  if (st == HS_ERR_NO_DEVICE) cr_skip_test("no OpenCL device: %s", hs_last_error());
  cr_assert_eq(st, HS_OK, "%s", hs_last_error());
  char dir[1024];
  cr_assert_eq(hs_dataset_bundled(rt, "cora", dir, sizeof dir), HS_OK, "%s", hs_last_error());
  cr_assert_eq(hs_dataset_open(dir, &ds), HS_OK, "%s", hs_last_error());
}

static void cora_teardown(void) {
  hs_dataset_close(ds);
  hs_runtime_close(rt);
}

#endif
