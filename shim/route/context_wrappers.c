/* The wrappers of the CONTEXT_END family (entry_point_rows.h): a context
 * destroyed, or the primary context reset or released. Each is the driver's
 * call, with what capguard preloaded on the context forgotten once it ends
 * (decide/guard/context_end.c). Rare calls: no fast path. */
#include "context_end.h"
#include "wrapper.h"

#define CG_WRAP_CONTEXT_END(cname, sname, ep, params, ctx, dev, how) \
  CG_WRAPPER_HEAD(cname, sname, params) {                             \
    CG_REAL_OR_RETURN(ep, params, real);                              \
    if (cg_cfg.mode == CG_RUN_OFF)                                    \
      return real(CG_ARGS(params));                                   \
    CUcontext ending_ = cg_context_end_enter((ctx), (dev), (how));    \
    CUresult r_ = real(CG_ARGS(params));                              \
    cg_context_end_leave(ending_, (dev), (how), r_);                  \
    return r_;                                                        \
  }

#include "wrap_rows.h"
