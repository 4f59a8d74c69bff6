/* libFuzzer harness: the checkpoint reader. The input is a checkpoint
 * file; its configuration is read and, when valid, a model of that shape
 * is created and the file loaded into it. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "nn/checkpoint.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char path[64];

static void cleanup(void) { unlink(path); }

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (!path[0]) {
    snprintf(path, sizeof path, "/tmp/hs-fuzz-ckpt-%d.ckpt", (int)getpid());
    atexit(cleanup);
  }
  FILE *f = fopen(path, "wb");
  if (!f) return 0;
  if (size) fwrite(data, 1, size, f);
  fclose(f);
  hs_model_cfg cfg;
  if (hs__checkpoint_read_cfg(path, &cfg) != HS_OK) return 0;
  hs_model m;
  if (hs__model_create(&cfg, &m) != HS_OK) return 0;
  hs__checkpoint_load(path, &m);
  hs__model_destroy(&m);
  return 0;
}
