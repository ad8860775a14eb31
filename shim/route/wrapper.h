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
 * would get from a driver that does not initialise. One load once the
 * driver is found: driver.c publishes the pointers after everything else it
 * sets up, so a wrapper that sees its pointer sees a driver that is ready
 * (an acquire load: a plain load on x86). */
#define CG_REAL_OR_RETURN(ep, params, var)                                                     \
  CUresult (*var)(CG_PARAMS(params)) =                                                         \
      (CUresult(*)(CG_PARAMS(params)))__atomic_load_n(&cg_ep_real[ep], __ATOMIC_ACQUIRE);      \
  if (__builtin_expect(!var, 0)) {                                                             \
    if (!cg_driver_ready())                                                                    \
      return CUDA_ERROR_NOT_INITIALIZED;                                                       \
    var = (CUresult(*)(CG_PARAMS(params)))cg_ep_real[ep];                                      \
    if (!var)                                                                                  \
      return CUDA_ERROR_NOT_INITIALIZED;                                                       \
  }

/* A call kept to be made later (guard.c, breakers.c may make it, make it in
 * relaxed mode, or not at all): its arguments in a struct, and a thunk that
 * makes the driver's call from them. The first member keeps a row without
 * parameters legal C; take the arguments with CG_ARGS_KEPT. */
#define CG_ARGS_THUNK(cname, ep, params)                                                       \
  typedef struct {                                                                             \
    int unused_;                                                                               \
    CG_MEMBERS(params)                                                                         \
  } cname##_args;                                                                              \
  static CUresult cname##_invoke(const void *a) {                                              \
    const cname##_args *args_ = a;                                                             \
    (void)args_;                                                                               \
    return ((CUresult(*)(CG_PARAMS(params)))cg_ep_real[ep])(CG_FIELDS(params));                \
  }
#define CG_ARGS_KEPT(params) {0, CG_ARGS(params)}

#endif
