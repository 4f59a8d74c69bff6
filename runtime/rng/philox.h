/* Host side of the counter-based RNG: the same code the kernels compile
 * (cl_kernels/hs_philox.h), so that host references draw the same bits. */
#ifndef HS_RUNTIME_PHILOX_H
#define HS_RUNTIME_PHILOX_H

#include "../../cl_kernels/hs_philox.h"

#endif
