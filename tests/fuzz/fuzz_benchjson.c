/* libFuzzer harness: the benchmark results reader behind
 * `hetsage bench --compare` and `--load`: the strict JSON parser, then the
 * checks of a saved run, then a comparison of the run with itself. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "util/hs_json.h"
#include "hetsage.h"
#include "hetsage/bench.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char path[64];

static void cleanup(void) { unlink(path); }

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (!path[0]) {
    snprintf(path, sizeof path, "/tmp/hs-fuzz-bench-%d.json", (int)getpid());
    atexit(cleanup);
  }
  hs_json *v = NULL;
  if (hs__json_parse((const char *)data, size, "fuzz.json", &v) == HS_OK) hs__json_free(v);
  FILE *f = fopen(path, "wb");
  if (!f) return 0;
  if (size) fwrite(data, 1, size, f);
  fclose(f);
  hs_bench_results *r = NULL;
  if (hs_bench_results_load(path, &r) == HS_OK) {
    hs_bench_delta d[16];
    hs_bench_compare(r, r, d, 16);
    FILE *null = fopen("/dev/null", "w");
    if (null) {
      hs_bench_results_write_json(r, null);
      fclose(null);
    }
  }
  hs_bench_results_free(r);
  return 0;
}
