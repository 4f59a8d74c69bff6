#include <criterion/criterion.h>
#include <string.h>

#include "hs_base.h"

Test(base, strerror_covers_every_status) {
#define CHECK(name, value, text) cr_expect_str_eq(hs_strerror(name), text);
  HS_STATUS_LIST(CHECK)
#undef CHECK
  cr_expect_str_eq(hs_strerror((hs_status)9999), "unknown status");
}

Test(base, fail_records_thread_local_detail) {
  hs__clear_error();
  cr_expect_str_eq(hs_last_error(), "");
  hs_status st = hs__fail(HS_ERR_FORMAT, "%s: byte %d: bad magic", "x.npy", 3);
  cr_expect_eq(st, HS_ERR_FORMAT);
  cr_expect_str_eq(hs_last_error(), "x.npy: byte 3: bad magic");
  hs__fail_context(st, "opening %s", "dir");
  cr_expect_str_eq(hs_last_error(), "opening dir: x.npy: byte 3: bad magic");
}

Test(base, checked_size_arithmetic) {
  size_t r;
  cr_expect(hs__mul_size(3, 4, &r) && r == 12);
  cr_expect_not(hs__mul_size(SIZE_MAX / 2 + 1, 2, &r));
  cr_expect_not(hs__add_size(SIZE_MAX, 1, &r));
}
