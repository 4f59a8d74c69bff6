/* The engine's interface for what is built on it beside the public API:
 * bring-up and the benchmarks (runtime/bringup, runtime/bench: the
 * libhetsage-harness library, and bench/) and the tests include this
 * header, never a module's private one, and never the runtime's struct.
 * What it names is what checking and measuring every kernel on every
 * device needs: the device layer (devices, contexts, queues, launches, the
 * program registry, GEMM providers), the sampler and the device gather,
 * the caches and the host tier, the trainer and the model tables, the
 * plain-C references they are compared with, an epoch replayed on a
 * profiling trainer, datasets' graph view, importers and npy writer, board
 * profiles' parsed form, the embedding store and the CTR reader, the
 * communication module of distributed training with its 1-bit codes and
 * exchanges, and the small utilities (JSON, XML). */
#ifndef HS_ENGINE_H
#define HS_ENGINE_H

#include "board/hs_board.h"
#include "cache/hs_cache.h"
#include "cache/hs_host_tier.h"
#include "cache/hs_sparse_tier.h"
#include "ctr/hs_ctr.h"
#include "data/hs_graph.h"
#include "data/hs_import.h"
#include "data/hs_npy.h"
#include "dist/hs_comm.h"
#include "dist/hs_dist.h"
#include "dist/hs_onebit.h"
#include "embed/hs_embed.h"
#include "gemm.h"
#include "hetsage.h"
#include "hs_dev.h"
#include "hs_launch.h"
#include "hs_programs.h"
#include "nn/model_ops.h"
#include "nn/nn_rng.h"
#include "nn/ref_nn.h"
#include "nn/sage.h"
#include "nn/trainer.h"
#include "rng/philox.h"
#include "sample/hs_csr.h"
#include "sample/hs_gather.h"
#include "sample/hs_sample.h"
#include "sample/hs_sampler.h"
#include "session/hs_replay.h"
#include "util/hs_json.h"
#include "util/hs_xml.h"

/* The runtime's inventory: its devices carry the runtime's settings (the
 * binary cache, max_alloc, the GEMM provider). Valid until
 * hs_runtime_close. */
const hs_inventory *hs__runtime_inventory(const hs_runtime *rt);
/* Device i of the inventory, NULL out of range. */
const hs_dev *hs__runtime_dev(const hs_runtime *rt, int i);

#endif
