/* The engine's interface for what is built on it beside the public API:
 * bring-up, the benchmarks and the tests reach the runtime's devices (with
 * their settings attached) through these functions, never through the
 * runtime's struct. */
#ifndef HS_ENGINE_H
#define HS_ENGINE_H

#include "hetsage/runtime.h"
#include "hs_dev.h"

/* The runtime's inventory: its devices carry the runtime's settings (the
 * binary cache, max_alloc, the GEMM provider). Valid until
 * hs_runtime_close. */
const hs_inventory *hs__runtime_inventory(const hs_runtime *rt);
/* Device i of the inventory, NULL out of range. */
const hs_dev *hs__runtime_dev(const hs_runtime *rt, int i);

#endif
