#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include <unistd.h>

#include "hs_base.h"
#include "hs_test_util.h"

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

/* The last-level cache size, where the host reports one: somewhere between
 * an L1 and a few GiB, and at least what the kernel lists for any cache of
 * cpu0 (it is the largest of them). */
Test(base, llc_bytes_is_the_largest_cache) {
  size_t llc = hs__llc_bytes();
  if (llc == 0) cr_skip_test("the host reports no cache size");
  cr_expect_geq(llc, (size_t)16 << 10);
  cr_expect_leq(llc, (size_t)4 << 30);
  FILE *f = fopen("/sys/devices/system/cpu/cpu0/cache/index0/size", "r");
  if (f) {
    unsigned long kb = 0;
    if (fscanf(f, "%luK", &kb) == 1) cr_expect_geq(llc, (size_t)kb << 10);
    fclose(f);
  }
}

/* A "FIELD: N kB" line in bytes: the field named exactly (not one it is a
 * prefix of), 0 for a missing field or file. */
Test(base, proc_kb_field_reads_one_field) {
  char *dir = tu_mkdtemp();
  static const char text[] = "MemTotal:       24684148 kB\nMemAvailableX:  5 kB\n"
                             "MemAvailable:   21971236 kB\nOdd: many kB\n";
  tu_write_bytes(dir, "meminfo", text, sizeof text - 1);
  char *path = tu_path(dir, "meminfo");
  cr_expect_eq(hs__proc_kb_field(path, "MemAvailable"), 21971236ull * 1024);
  cr_expect_eq(hs__proc_kb_field(path, "MemTotal"), 24684148ull * 1024);
  cr_expect_eq(hs__proc_kb_field(path, "Mem"), 0);
  cr_expect_eq(hs__proc_kb_field(path, "Odd"), 0);
  cr_expect_eq(hs__proc_kb_field(path, "Cached"), 0);
  unlink(path);
  cr_expect_eq(hs__proc_kb_field(path, "MemTotal"), 0);
  free(path);
  tu_rmtree(dir);
  cr_expect_gt(hs__proc_kb_field("/proc/meminfo", "MemTotal"), 0);
}
