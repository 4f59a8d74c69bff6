/* libFuzzer harness: .npy header parsing, size checks, mapping and the
 * checked int reads, on a memory file holding the input. */
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "data/hs_npy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  hs__npy_header h;
  hs__npy_parse("fuzz.npy", data, size, &h);
  int fd = memfd_create("fuzz.npy", MFD_CLOEXEC);
  if (fd < 0) return 0;
  if (size && write(fd, data, size) != (ssize_t)size) {
    close(fd);
    return 0;
  }
  if (hs__npy_open_fd("fuzz.npy", fd, &h) == HS_OK) {
    unsigned ints = (1u << HS_DTYPE_INT32) | (1u << HS_DTYPE_INT64);
    if (hs__npy_expect("fuzz.npy", &h, ints, 1) == HS_OK && h.count < (1u << 20)) {
      int32_t *a = malloc((size_t)h.count * 4 + 4);
      int64_t *b = malloc((size_t)h.count * 8 + 8);
      if (a && b) {
        hs__npy_read_i32("fuzz.npy", fd, &h, a, 0, 1000, "id");
        hs__npy_read_i64("fuzz.npy", fd, &h, b);
      }
      free(a);
      free(b);
    }
    hs__map m;
    const void *p;
    if (h.data_bytes < (1u << 24) && hs__npy_map("fuzz.npy", fd, &h, false, &m, &p) == HS_OK) {
      volatile uint8_t sink = 0;
      for (uint64_t i = 0; i < h.data_bytes; i++) sink ^= ((const uint8_t *)p)[i];
      (void)sink;
      hs__map_release(&m);
    }
  }
  close(fd);
  return 0;
}
