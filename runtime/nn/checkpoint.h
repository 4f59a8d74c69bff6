/* Checkpoints: model parameters, optimizer state and training position.
 *
 * Format, version 1, every field little-endian:
 *   0   char[8] magic "HSCKPT1\n"
 *   8   u32 version (1)
 *   12  u32 n_layers
 *   16  u32 dims[9]         (n_layers + 1 used, the rest 0)
 *   52  u32 optimizer kind  (hs_optim_kind)
 *   56  u32 weight decay mode
 *   60  f32 lr, weight_decay, beta1, beta2, eps, momentum, dropout
 *   88  u64 seed, step, epoch, rng_counter, n_params
 *   128 f32 params[n_params], m[n_params], v[n_params]
 *   end u32 CRC-32 (zlib) of every byte before it
 * Files are written to a temporary file in the same directory, fsynced,
 * then renamed over the target, so a reader sees the old file or the new
 * one, never a torn one. */
#ifndef HS_NN_CHECKPOINT_H
#define HS_NN_CHECKPOINT_H

#include "nn/model.h"

#define HS_CHECKPOINT_VERSION 1u

/* Save `m` to `path` atomically. HS_ERR_IO (with the path and errno text)
 * when the directory is not writable or the disk fills; the target is then
 * untouched and no temporary file is left behind. */
hs_status hs__checkpoint_save(const hs_model *m, const char *path);

/* Restore a checkpoint into `m`, which was created with the same layer
 * sizes and optimizer kind: parameters, moments, step, epoch, RNG position
 * and seed (so a resumed run draws the masks the uninterrupted one would);
 * the other hyperparameters stay as `m` has them. Refused, with the file
 * named and `m` unchanged: HS_ERR_IO (unreadable), HS_ERR_FORMAT (foreign
 * file, truncated, inconsistent header), HS_ERR_UNSUPPORTED (other
 * version), HS_ERR_CHECKSUM, HS_ERR_INVALID_ARG (shape or optimizer differs
 * from `m`). */
hs_status hs__checkpoint_load(const char *path, hs_model *m);

/* Check a checkpoint fully (as load does) and return the configuration it
 * was saved with (in_dim, hidden, n_classes, layers, optimizer, dropout,
 * seed), to create a model to load it into. */
hs_status hs__checkpoint_read_cfg(const char *path, hs_model_cfg *cfg);

#endif
