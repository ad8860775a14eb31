/* The GETPROC family (entry_point_rows.h): cuGetProcAddress and
 * cuGetProcAddress_v2, the route cudart (and so torch) takes to nearly every
 * driver entry point. The driver answers first, with the caller's own
 * symbol, version and flags; capguard then swaps in its wrapper only if the
 * pointer handed back is one of the driver's entry points it wraps (compared
 * by address, so the version and per-thread-stream choice is always the
 * driver's). Anything else is the driver's own pointer. */
#include "wrapper.h"

#define CG_WRAP_GETPROC(cname, sname, ep, params, pfn)                                             \
  CG_WRAPPER_HEAD(cname, sname, params) {                                                          \
    CG_REAL_OR_RETURN(ep, params, real);                                                           \
    CUresult r_ = real(CG_ARGS(params));                                                           \
    if (r_ == CUDA_SUCCESS && (pfn))                                                               \
      *(pfn) = cg_wrap_pointer(*(pfn));                                                            \
    return r_;                                                                                     \
  }

#include "wrap_rows.h"
