/* The wrappers of the GRAPH_INSTANTIATE, GRAPH_LAUNCH and WATCHED_FREE
 * families (entry_point_rows.h): what the stale-pointer check needs to see
 * (decide/stale_watch.h). Each calls the driver exactly as the caller asked;
 * with CAPGUARD_STALE unset, an instantiation and a free cost one load more
 * than the driver's call, a launch one load more than stream work's fast
 * path. A graph launch is
 * also judged as stream work (900 into a capture), by breakers.c. */
#include "breakers.h"

#include "fleet_metrics.h"
#include "hang_launches.h"
#include "hang_slots.h"
#include "stale_watch.h"
#include "wrapper.h"

static inline bool off(void) { return cg_cfg.mode == CG_RUN_OFF; }

#define CG_WRAP_GRAPH_INSTANTIATE(cname, sname, ep, params, exec, graph)                           \
  CG_WRAPPER_HEAD(cname, sname, params) {                                                          \
    CG_REAL_OR_RETURN(ep, params, real);                                                           \
    CUresult r_ = real(CG_ARGS(params));                                                           \
    if (__builtin_expect(cg_cfg.stale, 0) && r_ == CUDA_SUCCESS && (exec) && !off())               \
      cg_stale_instantiated(*(exec), (graph));                                                     \
    if (__builtin_expect(cg_hang_s != 0, 0) && r_ == CUDA_SUCCESS && (exec) && !off())              \
      cg_hang_instantiated(*(exec), (graph));                                                      \
    return r_;                                                                                     \
  }

/* The launch checked first: a replay of memory freed since its capture is
 * named before the driver runs it. With nothing capturing and no free
 * touched watched memory (every replay of a healthy program), the x86-64
 * fast path is stream work's (stream_work_wrappers.c) with two loads more:
 * the driver's pointer, the capture activity, cg_stale_suspects and the
 * fleet's cg_launch_watch (set before the first replay and while a metrics
 * file is due, fleet_metrics.h) loaded, and one jump to the driver. */
#define CG_WRAP_GRAPH_LAUNCH(cname, sname, ep_, params, exec, stream_, ptsz_)                      \
  typedef struct {                                                                                 \
    CG_MEMBERS(params)                                                                             \
  } cname##_args;                                                                                  \
  static CUresult cname##_invoke(const void *a) {                                                  \
    const cname##_args *args_ = a;                                                                 \
    return ((CUresult(*)(CG_PARAMS(params)))cg_ep_real[ep_])(CG_FIELDS(params));                    \
  }                                                                                                \
  static __attribute__((noinline)) CUresult cname##_slow(CG_PARAMS(params)) {                     \
    cname##_args args_ = {CG_ARGS(params)};                                                        \
    cg_call c_ = {.ep = (ep_), .kind = CG_EV_GRAPH_LAUNCH, .rule = CG_RULE_CAPTURING,              \
                  .fix = CG_FIX_NONE, .target = (uint64_t)(uintptr_t)(stream_), .has_target = true,  \
                  .ptsz = (ptsz_), .invoke = cname##_invoke, .args = &args_, .aux = 0};            \
    return cg_breaker_call(&c_);                                                                   \
  }                                                                                                \
  CUresult cname##_other(CG_PARAMS(params)) __asm__(sname "_cg_other") __attribute__((noinline, used)); \
  CUresult cname##_other(CG_PARAMS(params)) {                                                      \
    CG_REAL_OR_RETURN(ep_, params, real);                                                          \
    if (__atomic_load_n(&cg_launch_watch, __ATOMIC_RELAXED))                                       \
      cg_fleet_graph_launch();                                                                     \
    if (__builtin_expect(cg_stale_launch_due(), 0) && !off())                                      \
      cg_stale_launch(sname, (exec));                                                              \
    if (off())                                                                                     \
      return real(CG_ARGS(params));                                                                \
    if (__builtin_expect(cg_nothing_captures(), 1)) {                                              \
      if (__builtin_expect(cg_hang_s == 0, 1))                                                     \
        return real(CG_ARGS(params));                                                              \
      /* the hang watch: counted, and its completion marker recorded after it */                   \
      CUresult r_ = real(CG_ARGS(params));                                                         \
      if (r_ == CUDA_SUCCESS)                                                                      \
        cg_hang_launched((exec), (stream_), (ptsz_));                                              \
      return r_;                                                                                   \
    }                                                                                              \
    return cname##_slow(CG_ARGS(params));                                                          \
  }                                                                                                \
  CG_GRAPH_LAUNCH_FAST(cname, sname, ep_, params)

#if defined(__x86_64__)
#define CG_GRAPH_LAUNCH_FAST(cname, sname, ep_, params)                                       \
  static __attribute__((used)) void cname##_fast_holder(void) {                              \
    __asm__ volatile(".globl " sname "\n\t.type " sname ", @function\n" sname ":\n\t"           \
                     ".byte 0xf3, 0x0f, 0x1e, 0xfa\n\t" /* endbr64: an indirect call's target */ \
                     "movq cg_ep_real+%c0(%%rip), %%rax\n\t"                                  \
                     "testq %%rax, %%rax\n\t"                                                 \
                     "jz 1f\n\t"                                                              \
                     "movq cg_activity(%%rip), %%r10\n\t"                                     \
                     "testq %%r10, %%r10\n\t"                                                 \
                     "jnz 1f\n\t"                                                             \
                     "movl cg_stale_suspects(%%rip), %%r10d\n\t"                              \
                     "testl %%r10d, %%r10d\n\t"                                               \
                     "jnz 1f\n\t"                                                             \
                     "cmpl $0, cg_launch_watch(%%rip)\n\t" /* the fleet's first replay */      \
                     "jnz 1f\n\t"                                                             \
                     "cmpl $0, cg_hang_s(%%rip)\n\t" /* the hang watch's markers */            \
                     "jnz 1f\n\t"                                                             \
                     "jmp *%%rax\n"                                                            \
                     "1:\tjmp " sname "_cg_other\n\t"                                          \
                     ".size " sname ", .-" sname "\n" ::"i"((ep_) * sizeof(void *)));          \
  }
#else
#define CG_GRAPH_LAUNCH_FAST(cname, sname, ep_, params)                                       \
  CG_WRAPPER_HEAD(cname, sname, params) {                                                    \
    CUresult (*real)(CG_PARAMS(params)) =                                                    \
        (CUresult(*)(CG_PARAMS(params)))__atomic_load_n(&cg_ep_real[ep_], __ATOMIC_ACQUIRE); \
    if (__builtin_expect(real != NULL, 1) && __builtin_expect(cg_nothing_captures(), 1) &&   \
        !cg_stale_launch_due() && !__atomic_load_n(&cg_launch_watch, __ATOMIC_RELAXED) &&    \
        !cg_hang_s)                                                                          \
      return real(CG_ARGS(params));                                                          \
    return cname##_other(CG_ARGS(params));                                                   \
  }
#endif

/* A free the driver accepted, told to the stale-pointer check; one captured
 * into a graph (its stream captures) frees nothing now: the graph's free
 * node does, at each replay. */
static __attribute__((noinline, cold)) void watched_free(const char *call, uint64_t addr, uint64_t len,
                                                          cg_stale_how how, bool has_stream, CUstream s,
                                                          bool ptsz) {
  if (off())
    return;
  if (has_stream && !cg_nothing_captures() && cg_captures_has(cg_stream_key(s, ptsz)))
    return;
  cg_stale_freed(call, addr, len, how);
}

#define CG_WRAP_WATCHED_FREE(cname, sname, ep, params, addr, len, how, stream, has_stream, ptsz)     \
  CG_WRAPPER_HEAD(cname, sname, params) {                                                          \
    CG_REAL_OR_RETURN(ep, params, real);                                                           \
    CUresult r_ = real(CG_ARGS(params));                                                           \
    if (__builtin_expect(cg_stale_watching(), 0) && r_ == CUDA_SUCCESS)                            \
      watched_free(sname, (uint64_t)(addr), (uint64_t)(len), (how), (has_stream), (CUstream)(stream), \
                   (ptsz));                                                                        \
    return r_;                                                                                     \
  }

#include "wrap_rows.h"
