/* The wrappers of the GRAPH_INSTANTIATE, GRAPH_LAUNCH and WATCHED_FREE
 * families (entry_point_rows.h): what the stale-pointer check needs to see
 * (decide/stale/stale_watch.h). Each calls the driver exactly as the caller asked;
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
 * fast path is stream work's (stream_work_wrappers.c) with one compare
 * more: the capture activity and cg_stale_suspects_any, and a jump through
 * the launch's target (6 instructions), which is the C body while the
 * fleet's cg_launch_watch is set (before the first replay, while a metrics
 * file is due: capture_time.h, driver.c's retarget_launches), the driver's
 * function otherwise. While some exec is suspect, a launch loads its own
 * exec's slot of cg_stale_suspect_slots (5 more): other execs being suspect
 * do not send it to the C body. */
#define CG_WRAP_GRAPH_LAUNCH(cname, sname, ep_, params, exec, stream_, ptsz_)                      \
  CG_ARGS_THUNK(cname, ep_, params)                                                                 \
  static __attribute__((noinline)) CUresult cname##_slow(CG_PARAMS(params)) {                     \
    cname##_args args_ = CG_ARGS_KEPT(params);                                                        \
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
    if (__builtin_expect(cg_stale_launch_due((exec)), 0) && !off())                                \
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
                     "cmpq $0, cg_activity(%%rip)\n\t"                                        \
                     "jne 1f\n\t"                                                              \
                     "cmpl $0, cg_stale_suspects_any(%%rip)\n\t"                             \
                     "jne 2f\n\t"                                                              \
                     /* fast_path.h; the C body while the fleet watches launches */            \
                     "jmp *" sname "_cg_target(%%rip)\n"                                       \
                     "2:\timull $0x9E3779B1, %%edi, %%r10d\n\t" /* cg_stale_slot(exec) */     \
                     "shrl $16, %%r10d\n\t"                                                   \
                     "leaq cg_stale_suspect_slots(%%rip), %%r11\n\t"                          \
                     "cmpl $0, (%%r11,%%r10,4)\n\t"                                            \
                     "jnz 1f\n\t"                                                             \
                     "jmp *" sname "_cg_target(%%rip)\n"                                       \
                     "1:\tjmp " sname "_cg_other\n\t"                                          \
                     ".pushsection .data.rel.local.cg_fast,\"aw\"\n\t.balign 8\n"              \
                     sname "_cg_target:\n\t.quad " sname "_cg_other\n\t"                       \
                     ".popsection\n\t"                                                         \
                     ".pushsection cg_fast_targets,\"a\"\n\t.balign 4\n\t"                    \
                     ".long %c0, " sname "_cg_target - ., " sname "_cg_other - .\n\t"                   \
                     ".popsection\n\t"                                                         \
                     ".size " sname ", .-" sname "\n" ::"i"((ep_) * sizeof(void *)));          \
  }
#else
#define CG_GRAPH_LAUNCH_FAST(cname, sname, ep_, params)                                       \
  CG_WRAPPER_HEAD(cname, sname, params) {                                                    \
    CUresult (*real)(CG_PARAMS(params)) =                                                    \
        (CUresult(*)(CG_PARAMS(params)))__atomic_load_n(&cg_ep_real[ep_], __ATOMIC_ACQUIRE); \
    if (__builtin_expect(real != NULL, 1) && __builtin_expect(cg_nothing_captures(), 1) &&   \
        !cg_stale_launch_due((exec)) && !__atomic_load_n(&cg_launch_watch, __ATOMIC_RELAXED)) \
      return real(CG_ARGS(params));                                                          \
    return cname##_other(CG_ARGS(params));                                                   \
  }
#endif

/* A free the driver accepted, told to the stale-pointer check; one captured
 * into a graph (its stream captures) frees nothing now: the graph's free
 * node does, at each replay. A map, unmap or release is told whenever the
 * check is on (the record of mapped pieces must be whole); aux: the stream,
 * or the physical allocation's handle. */
static __attribute__((noinline, cold)) void watched_free(const char *call, uint64_t addr, uint64_t len,
                                                          cg_stale_how how, bool has_stream, uint64_t aux,
                                                          bool ptsz) {
  if (off())
    return;
  if (has_stream && !cg_nothing_captures() && cg_captures_has(cg_stream_key((CUstream)(uintptr_t)aux, ptsz)))
    return;
  cg_stale_freed(call, addr, len, how, has_stream ? 0 : aux);
}

#define CG_WRAP_WATCHED_FREE(cname, sname, ep, params, addr, len, how, aux, has_stream, ptsz)        \
  CG_WRAPPER_HEAD(cname, sname, params) {                                                          \
    CG_REAL_OR_RETURN(ep, params, real);                                                           \
    CUresult r_ = real(CG_ARGS(params));                                                           \
    if (__builtin_expect(CG_STALE_KEEPS_RECORD(how) ? cg_cfg.stale : cg_stale_watching(), 0) &&     \
        r_ == CUDA_SUCCESS)                                                                        \
      watched_free(sname, (uint64_t)(addr), (uint64_t)(len), (how), (has_stream),                  \
                   (uint64_t)(uintptr_t)(aux), (ptsz));                                            \
    return r_;                                                                                     \
  }

#include "wrap_rows.h"
