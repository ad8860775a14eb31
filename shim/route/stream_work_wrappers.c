/* The wrappers of the STREAM_WORK family (entry_point_rows.h): launches,
 * copies and memsets that may go to the legacy stream, waits on events, and
 * graph launches (driver-semantics.md, third matrix). Launches are the
 * hottest calls a program makes: with nothing capturing, in off mode, or on
 * a stream the row's rule cannot touch (a launch on any stream but the
 * legacy one), the wrapper is the load of the driver's pointer, one atomic
 * load and a tail call to the driver (bench/run_bench_hot.sh). A refusal
 * the wrapper did not see coming (a capture begun on another thread in
 * between) is not reported here: on drivers 12.9 and later the driver's log
 * names it (driver_log_callback.c). breakers.c decides the rest. */
#include "breakers.h"

#include "copy_v1.h"
#include "fast_path.h"
#include "wrapper.h"

static inline bool off(void) { return cg_cfg.mode == CG_RUN_OFF; }

/* The legacy stream: the NULL handle of a non-_ptsz entry point, or
 * CU_STREAM_LEGACY by name. */
static inline bool is_legacy(CUstream s, bool ptsz) { return (s == NULL && !ptsz) || s == CU_STREAM_LEGACY; }

/* Whether the call can meet its rule at all: legacy-stream rows only on the
 * legacy stream; waits and graph launches whenever something captures. */
#define CG_MAY_HIT(rule, stream, ptsz) ((rule) != CG_RULE_LEGACY || is_legacy((stream), (ptsz)))

#define CG_WRAP_STREAM_WORK(cname, sname, ep_, params, kind_, rule_, stream_, ptsz_, aux_)                 \
  CG_ARGS_THUNK(cname, ep_, params)                                                                 \
  static __attribute__((noinline)) CUresult cname##_slow(CG_PARAMS(params)) {                      \
    cname##_args args_ = CG_ARGS_KEPT(params);                                                         \
    cg_call c_ = {.ep = (ep_), .kind = (kind_), .rule = (rule_), .fix = CG_FIX_NONE,                   \
                  .target = (uint64_t)(uintptr_t)(stream_), .has_target = true, .ptsz = (ptsz_),      \
                  .invoke = cname##_invoke, .args = &args_, .aux = (uint64_t)(uintptr_t)(aux_)};     \
    return cg_breaker_call(&c_);                                                                    \
  }                                                                                                 \
  /* Everything but the fast path: finding the driver, off mode, a stream   \
   * the rule cannot touch, the decision. Named for the x86-64 fast path. */ \
  CG_OTHER_HEAD(cname, sname, params) {                                       \
    CG_REAL_OR_RETURN(ep_, params, real);                                     \
    if (cg_nothing_captures() || off() || !CG_MAY_HIT((rule_), (stream_), (ptsz_))) \
      return real(CG_ARGS(params));                                           \
    return cname##_slow(CG_ARGS(params));                                     \
  }                                                                           \
  CG_FAST_PATH(cname, sname, ep_, params, CG_FAST_PLAIN)

#include "wrap_rows.h"
