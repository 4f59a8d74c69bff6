/* Host side of training's RNG keys: the same code the training kernels
 * compile (cl_kernels/hs_train.h). */
#ifndef HS_NN_RNG_H
#define HS_NN_RNG_H

#include "rng/philox.h"
#include "../../cl_kernels/hs_train.h"

#endif
