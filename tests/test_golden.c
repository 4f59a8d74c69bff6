/* GraphSAGE's results must not move when the code around them changes: the
 * parameters after one epoch of the bundled Cora (seed 0, every other
 * setting at its default) are hashed and compared with the hash recorded
 * for this machine's trainer in tests/data/golden/sage_cora_epoch1.txt.
 *
 * Training is bit-exact run to run on one device, but not across devices
 * (another CPU's code generation or BLAS kernels change the last bits), so
 * the file holds one line per trainer fingerprint:
 *   <fnv1a-64 hex> <compute units> <BLAS> <device name>
 * A machine with no recorded line skips (never passes), printing the line
 * to add once the hash has been checked against a build of the recorded
 * revision. */
#include <criterion/criterion.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cora_fixture.h"
#include "hetsage.h"
#include "hs_config.h"

TestSuite(golden, .init = cora_setup, .fini = cora_teardown, .timeout = 600);

static uint64_t fnv1a(const void *p, size_t n) {
  const unsigned char *b = p;
  uint64_t h = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 0x100000001b3ull;
  return h;
}

Test(golden, graphsage_cora_epoch_is_bit_identical_to_the_recorded_one) {
  int n_devs = hs_runtime_device_count(rt);
  hs_session_config c;
  hs_session_config_init(&c);
  hs_session *s;
  cr_assert_eq(hs_session_create(rt, ds, &c, &s), HS_OK, "%s", hs_last_error());
  hs_epoch_stats st;
  hs_epoch_stats_init(&st);
  cr_assert_eq(hs_session_train_epoch(s, &st), HS_OK, "%s", hs_last_error());
  size_t n;
  cr_assert_eq(hs_session_parameters(s, NULL, 0, &n), HS_OK);
  float *p = malloc(n * sizeof *p);
  cr_assert_eq(hs_session_parameters(s, p, n, &n), HS_OK);
  hs_session_destroy(s);
  uint64_t h = fnv1a(p, n * sizeof *p);
  free(p);

  /* The default board trains on the first CPU device. */
  const hs_device_info *d = NULL;
  for (int i = 0; i < n_devs && !d; i++)
    if (hs_runtime_device(rt, i)->type == HS_DEVICE_CPU) d = hs_runtime_device(rt, i);
  cr_assert(d, "no CPU device, yet a session was created on the default board");
  const char *blas = HS_HAVE_CBLAS ? "cblas" : "noblas";
  char want[512];
  snprintf(want, sizeof want, "%u %s %s", d->compute_units, blas, d->name);

  char path[1024];
  snprintf(path, sizeof path, "%s/golden/sage_cora_epoch1.txt", getenv("HS_TEST_DATA"));
  FILE *f = fopen(path, "r");
  cr_assert(f, "cannot open %s", path);
  char line[1024];
  bool found = false;
  uint64_t rec = 0;
  while (fgets(line, sizeof line, f)) {
    line[strcspn(line, "\n")] = '\0';
    char *sp = strchr(line, ' ');
    if (line[0] == '#' || !sp) continue;
    if (strcmp(sp + 1, want) == 0) {
      rec = strtoull(line, NULL, 16);
      found = true;
    }
  }
  fclose(f);
  if (!found)
    cr_skip_test("no hash recorded for this trainer; line: %016" PRIx64 " %s", h, want);
  cr_expect_eq(h, rec, "parameters hash %016" PRIx64 ", recorded %016" PRIx64 " (%s)", h, rec,
               want);
}
