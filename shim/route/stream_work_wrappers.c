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
#include "fleet_metrics.h"

#include "copy_v1.h"
#include "wrapper.h"

static inline bool off(void) { return cg_cfg.mode == CG_RUN_OFF; }

/* The legacy stream: the NULL handle of a non-_ptsz entry point, or
 * CU_STREAM_LEGACY by name. */
static inline bool is_legacy(CUstream s, bool ptsz) { return (s == NULL && !ptsz) || s == CU_STREAM_LEGACY; }

/* Whether the call can meet its rule at all: legacy-stream rows only on the
 * legacy stream; waits and graph launches whenever something captures. */
#define CG_MAY_HIT(rule, stream, ptsz) ((rule) != CG_RULE_LEGACY || is_legacy((stream), (ptsz)))

/* Graph launches also leave the fast path while cg_launch_watch is set: the
 * first replay after a capture began, a metrics file left due (fleet_metrics.h). */
#define CG_WATCHES_LAUNCH(kind) ((kind) == CG_EV_GRAPH_LAUNCH)

#define CG_WRAP_STREAM_WORK(cname, sname, ep_, params, kind_, rule_, stream_, ptsz_, aux_)                 \
  typedef struct {                                                                                  \
    CG_MEMBERS(params)                                                                              \
  } cname##_args;                                                                                   \
  static CUresult cname##_invoke(const void *a) {                                                   \
    const cname##_args *args_ = a;                                                                  \
    return ((CUresult(*)(CG_PARAMS(params)))cg_ep_real[ep_])(CG_FIELDS(params));                     \
  }                                                                                                 \
  static __attribute__((noinline)) CUresult cname##_slow(CG_PARAMS(params)) {                      \
    cname##_args args_ = {CG_ARGS(params)};                                                         \
    cg_call c_ = {.ep = (ep_), .kind = (kind_), .rule = (rule_), .fix = CG_FIX_NONE,                   \
                  .target = (uint64_t)(uintptr_t)(stream_), .has_target = true, .ptsz = (ptsz_),      \
                  .invoke = cname##_invoke, .args = &args_, .aux = (uint64_t)(uintptr_t)(aux_)};     \
    return cg_breaker_call(&c_);                                                                    \
  }                                                                                                 \
  /* Everything but the fast path: finding the driver, off mode, a stream   \
   * the rule cannot touch, the decision. Named for the x86-64 fast path. */ \
  CUresult cname##_other(CG_PARAMS(params)) __asm__(sname "_cg_other") __attribute__((noinline, used)); \
  CUresult cname##_other(CG_PARAMS(params)) {                                 \
    CG_REAL_OR_RETURN(ep_, params, real);                                     \
    if (CG_WATCHES_LAUNCH(kind_) && __atomic_load_n(&cg_launch_watch, __ATOMIC_RELAXED)) \
      cg_fleet_graph_launch();                                                \
    if (cg_nothing_captures() || off() || !CG_MAY_HIT((rule_), (stream_), (ptsz_))) \
      return real(CG_ARGS(params));                                           \
    return cname##_slow(CG_ARGS(params));                                     \
  }                                                                           \
  CG_STREAM_WORK_FAST(cname, sname, ep_, params, CG_WATCHES_LAUNCH(kind_))

/* The fast path: the driver's pointer and the capture activity loaded, and
 * one jump, to the driver or to everything else (cname##_other). On x86-64
 * it is written out, since gcc reloads and stores back the stack parameters
 * around a tail call (cuLaunchKernel passes 5 on the stack): +1-2 ns that the
 * launches' budget (1 ns) has no room for. The stack and registers reach the
 * driver exactly as the caller left them. Elsewhere, the same in C. */
#if defined(__x86_64__)
#define CG_STREAM_WORK_FAST(cname, sname, ep_, params, watch_)                               \
  static __attribute__((used)) void cname##_fast_holder(void) {                              \
    __asm__ volatile(".globl " sname "\n\t.type " sname ", @function\n" sname ":\n\t"           \
                     ".byte 0xf3, 0x0f, 0x1e, 0xfa\n\t" /* endbr64: an indirect call's target */ \
                     "movq cg_ep_real+%c0(%%rip), %%rax\n\t"                                  \
                     "testq %%rax, %%rax\n\t"                                                 \
                     "jz 1f\n\t"                                                              \
                     "movq cg_activity(%%rip), %%r10\n\t"                                     \
                     "testq %%r10, %%r10\n\t"                                                 \
                     "jnz 1f\n\t"                                                             \
                     ".if %c1\n\t" /* graph launches: cg_launch_watch too */                   \
                     "cmpl $0, cg_launch_watch(%%rip)\n\t"                                    \
                     "jnz 1f\n\t"                                                             \
                     ".endif\n\t"                                                             \
                     "jmp *%%rax\n"                                                            \
                     "1:\tjmp " sname "_cg_other\n\t"                                          \
                     ".size " sname ", .-" sname "\n" ::"i"((ep_) * sizeof(void *)),          \
                     "i"((int)(watch_)));                                                     \
  }
#else
#define CG_STREAM_WORK_FAST(cname, sname, ep_, params, watch_)                               \
  CG_WRAPPER_HEAD(cname, sname, params) {                                                    \
    CUresult (*real)(CG_PARAMS(params)) =                                                    \
        (CUresult(*)(CG_PARAMS(params)))__atomic_load_n(&cg_ep_real[ep_], __ATOMIC_ACQUIRE); \
    if (__builtin_expect(real != NULL, 1) && __builtin_expect(cg_nothing_captures(), 1) &&   \
        !((watch_) && __atomic_load_n(&cg_launch_watch, __ATOMIC_RELAXED)))                  \
      return real(CG_ARGS(params));                                                          \
    return cname##_other(CG_ARGS(params));                                                   \
  }
#endif

#include "wrap_rows.h"
