/* hetsage — the public API. Include this header only.
 *
 * Conventions: opaque handles with create/destroy pairs; every fallible
 * function returns hs_status and sets hs_last_error(); a function that keeps
 * a pointer it is given says so. Functions are thread-compatible (distinct
 * handles may be used from distinct threads) unless a contract says more. */
#ifndef HETSAGE_H
#define HETSAGE_H

#include "hetsage/status.h"
#include "hetsage/device.h"
#include "hetsage/runtime.h"
#include "hetsage/board.h"
#include "hetsage/dataset.h"
#include "hetsage/dist.h"
#include "hetsage/session.h"
#include "hetsage/settings.h"
#include "hetsage/kernels.h"
#include "hetsage/ctr.h"

#endif
