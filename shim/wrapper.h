/* What every generated wrapper needs (wrap_rows.h says how wrappers are
 * generated from the rows). */
#ifndef CAPGUARD_WRAPPER_H
#define CAPGUARD_WRAPPER_H

#include <cuda.h>

#include "config.h"
#include "driver.h"
#include "entry_points.h"
#include "params.h"

/* The wrapper's C name is cg_w_<name>, its exported symbol <name> itself
 * (an asm label, so cuda.h's renaming macros cannot touch it). */
#define CG_WRAPPER_HEAD(cname, sname, params)                                                     \
  CUresult cname(CG_PARAMS(params)) __asm__(sname) __attribute__((visibility("default"), used)); \
  CUresult cname(CG_PARAMS(params))

/* The driver's pointer for this row, or return from the wrapper: with no
 * driver (or a driver without this variant) the caller gets the error it
 * would get from a driver that does not initialise. */
#define CG_REAL_OR_RETURN(ep, params, var)                                                     \
  CUresult (*var)(CG_PARAMS(params)) =                                                         \
      cg_driver_ready() ? (CUresult(*)(CG_PARAMS(params)))cg_ep_real[ep] : NULL;               \
  if (!var)                                                                                    \
  return CUDA_ERROR_NOT_INITIALIZED

#endif

