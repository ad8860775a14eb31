/* How a wrapper is defined: the C name is cg_w_<name>, the exported symbol is
 * <name> itself (an asm label, so cuda.h's renaming macros such as
 * "#define cuStreamBeginCapture cuStreamBeginCapture_v2" cannot touch it). */
#ifndef CAPGUARD_WRAPPER_H
#define CAPGUARD_WRAPPER_H

#include <cuda.h>

#include "config.h"
#include "driver.h"
#include "entry_points.h"

#define CG_WRAPPER(ret, name, params)                                                      \
  ret cg_w_##name params __asm__(#name) __attribute__((visibility("default"), used));       \
  ret cg_w_##name params

/* The driver's pointer for this wrapper, or return from the wrapper: with no
 * driver (or a driver without this variant) the caller gets the error it
 * would get from a driver that does not initialise. */
/* name is pasted here, not passed on to CG_REAL: passed on, it would be
 * macro-expanded first, and cuda.h maps e.g. cuGetProcAddress to
 * cuGetProcAddress_v2 -- the wrong variant with the wrong arguments. */
#define CG_REAL_OR_RETURN(name, type, var)                                                 \
  type var = (cg_driver_ready() ? (type)cg_ep_real[CG_EP_##name] : (type)0);              \
  if (!var)                                                                                \
    return CUDA_ERROR_NOT_INITIALIZED

#endif
