/* The wrappers of the BREAKER, DEFERRABLE, EVENT_RECORD and EVENT_DESTROY families
 * (entry_point_rows.h): the calls that break captures on every driver (the
 * module and library unloads among them), and the event records the 907
 * rule needs. These are hot (torch's caching
 * allocator records and queries events constantly, NCCL's watchdog polls):
 * with nothing capturing, or in off mode, each is one atomic load and the
 * driver's call, a tail call for the polled ones (bench/run_bench_hot.sh),
 * inside the breakers' fence for most others (written out on x86-64:
 * route/fast_path.h, CG_FAST_BREAKER); an unload, which is rare, also
 * takes the capture gate (cg_gate_lock_if_idle); breakers.c decides only while
 * something captures. */
#include "breakers.h"

#include <stddef.h>
#include "hang_launches.h"
#include "hang_slots.h"

#include "priming.h"
#include "breaker_targets.h"
#include "fast_path.h"
#include "query_fence.h"
#include "stale_layouts.h"
#include "stale_watch.h"
#include "wrapper.h"

static inline bool off(void) { return cg_cfg.mode == CG_RUN_OFF; }

/* What the driver answered a call passed straight through: a capture may
 * have begun on another thread after the wrapper looked; a refusal is then
 * reported after the fact (off mode reports nothing), and attributed to the
 * capture it broke before the call leaves the breakers' fence (an end of
 * that capture, failed with no first offender known, waits for it). */
static __attribute__((noinline, cold)) void refused_unseen(CUresult r, cg_entry_point ep, cg_event_kind kind,
                                                           cg_rule rule) {
  if (!off())
    cg_breaker_refused_unseen(ep, kind, rule, r);
}
/* ep, kind and rule are the row's constants: nothing of the call's
 * arguments is kept across the driver's call. */
static inline CUresult passed(CUresult r, cg_entry_point ep, cg_event_kind kind, cg_rule rule) {
  if (__builtin_expect(r == CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED || r == CUDA_ERROR_CAPTURED_EVENT, 0))
    refused_unseen(r, ep, kind, rule);
  return r;
}

/* An unload (fix CG_FIX_DEFER_UNLOAD) with nothing capturing when its
 * wrapper looked is made under the capture gate (cg_gate_lock_if_idle):
 * a capture another thread began before it reached the driver would be
 * broken by it. If something captures by then, breakers.c's path. Not for
 * the hot calls: an unload is rare.
 * What the driver answered such an unload: the gate released, priming told
 * (a served image the program unloads is loaded again before the next
 * begin), a refusal reported. */
static CUresult unloaded(CUresult r, cg_entry_point ep, void *handle) {
  cg_gate_unlock();
  if (r == CUDA_SUCCESS && cg_cfg.mode == CG_RUN_GUARD)
    cg_priming_unloaded(handle);
  if (r == CUDA_SUCCESS && cg_cfg.stale)
    cg_stale_layouts_forget(); /* its functions' handles may come back as others */
  return passed(r, ep, CG_EV_MODULE_UNLOAD, CG_RULE_PROHIBITED);
}

/* A free or an exec destroy that returned success, told to the stale-pointer
 * check (one load when it watches nothing): the program gave the memory up,
 * or no longer replays the exec (a deferred one too: the program's word). */
static __attribute__((noinline, cold)) void stale_after(cg_fix fix, const char *call, uint64_t handle) {
  if (off())
    return;
  if (fix == CG_FIX_DEFER_DESTROY) {
    if (cg_stale_watching())
      cg_stale_exec_destroyed((CUgraphExec)(uintptr_t)handle);
    if (__atomic_load_n(&cg_hang_execs_live, __ATOMIC_RELAXED))
      cg_hang_exec_destroyed((CUgraphExec)(uintptr_t)handle);
  }
  else
    cg_stale_freed(call, handle, 0, CG_STALE_AT, 0);
}
#define CG_STALE_AFTER(fix, sname, target, r)                                                        \
  if (((fix) == CG_FIX_DEFER_FREE || (fix) == CG_FIX_DEFER_DESTROY) && (r) == CUDA_SUCCESS &&         \
      (__builtin_expect(cg_stale_watching(), 0) ||                                                   \
       ((fix) == CG_FIX_DEFER_DESTROY && __atomic_load_n(&cg_hang_execs_live, __ATOMIC_RELAXED))))    \
    stale_after((fix), (sname), (uint64_t)(uintptr_t)(target));

/* The polled queries (torch's caching allocator, NCCL's watchdog) end in a
 * tail call to the driver, checking nothing after it: on the H100 a check of
 * the answer kept the wrapper's frame under the driver's call and cost
 * cuStreamQuery 6-7 ns, the tail call 1-3 ns (bench/run_bench_hot.sh). What
 * is given up: a query refused because another thread began a capture in
 * the nanoseconds between the wrapper's look and the driver's answer is not
 * reported (its capture is then "broken by a call capguard does not
 * watch"). Every other breaker keeps the check. */
#define CG_POLLED(ep) ((ep) == CG_EP_cuEventQuery || (ep) == CG_EP_cuStreamQuery || (ep) == CG_EP_cuStreamQuery_ptsz)
/* cuEventQuery, which guard mode may answer for the driver, is the
 * exception to that: its fast path says it is in flight (query_fence.h: two
 * plain stores to the thread's slot around the driver's call), so that no
 * capture begins in the driver while a query that saw nothing capturing is
 * on its way there. That costs the tail call (bench/run_bench_hot.sh), and
 * buys more than the check would: such a query cannot be refused at all,
 * since every begin waits for it. */
#define CG_FENCED(ep) ((ep) == CG_EP_cuEventQuery)
/* The calls that block until the GPU is done: with CAPGUARD_HANG_S set, each
 * is in its thread's hang slot while it lasts (decide/hang/hang_watch.c says one
 * that lasts too long); with it unset, the wrapper pays one load of
 * cg_hang_s, and the other rows nothing (the test is a constant). */
#define CG_BLOCKS(ep)                                                                                \
  ((ep) == CG_EP_cuStreamSynchronize || (ep) == CG_EP_cuStreamSynchronize_ptsz ||                   \
   (ep) == CG_EP_cuEventSynchronize || (ep) == CG_EP_cuCtxSynchronize || (ep) == CG_EP_cuCtxSynchronize_v2)
/* The rows whose nothing-capturing path is the breakers' fast path
 * (route/fast_path.h, CG_FAST_BREAKER), and what their target depends on
 * (driver/breaker_targets.c): not the polled queries (a tail call), not
 * cuEventQuery (the queries' fence), not the unloads (the capture gate)
 * nor an exec's destroy (the hang watch's and the stale check's execs,
 * which come and go). */
#define CG_BREAKER_NPARAMS_(...) CG_PP_NPAIRS(__VA_ARGS__)
#define CG_BREAKER_FLAGS(ep, fix, params)                                                            \
  (!CG_POLLED(ep) && !CG_FENCED(ep) && (fix) != CG_FIX_DEFER_UNLOAD && (fix) != CG_FIX_DEFER_DESTROY \
           /* the fast path calls the driver from a frame of its own: only arguments in registers */ \
           && CG_BREAKER_NPARAMS_(CG_PP_UNPAREN params) <= 6                                           \
       ? CG_BT_FAST | (CG_BLOCKS(ep) ? CG_BT_BLOCKS : 0) | ((fix) == CG_FIX_DEFER_FREE ? CG_BT_FREES : 0) \
       : 0)
#if defined(__x86_64__)
/* What the breakers' fast path (route/fast_path.h) writes out. */
_Static_assert(CG_QUERY_UNCLAIMED == 0xFFFFFFFFu && sizeof cg_breaker_seq == 4,
               "the breakers' fast path enters with addl on cg_breaker_seq, whose result 0 says no slot yet");
_Static_assert(offsetof(cg_hang_slot, call) == 8 && offsetof(cg_hang_slot, call_seq) == 16 &&
                   offsetof(cg_hang_slot, handle) == 24 && offsetof(cg_hang_slot, caller) == 32 &&
                   offsetof(cg_hang_slot, caller_slot) == 40 && offsetof(cg_hang_slot, count) == 48,
               "the synchronizes' fast path writes the hang slot at these offsets");
#endif
/* What the ineligible rows' unused fast code names as its target. */
void *cg_breaker_no_target __attribute__((used));

/* Where the x86-64 fast path's divert goes with the capture activity at
 * zero (route/fast_path.h), the query in flight: the driver's cuEventQuery
 * found (inside the query's fence, with nothing capturing, as the call it
 * stands for), put back as the target (query_fence.h), and called. */
CUresult cg_query_restore(CUevent event) __attribute__((used));
CUresult cg_query_restore(CUevent event) {
  CUresult (*real)(CUevent) = (CUresult(*)(CUevent))__atomic_load_n(&cg_ep_real[CG_EP_cuEventQuery], __ATOMIC_ACQUIRE);
  if (!real && (!cg_driver_ready() || !(real = (CUresult(*)(CUevent))cg_ep_real[CG_EP_cuEventQuery])))
    return CUDA_ERROR_NOT_INITIALIZED;
  cg_query_restore_target((void *)real);
  return real(event);
}
#if defined(__x86_64__)
void *cg_query_target = cg_query_divert_code;
#endif

/* The arguments kept in a struct (its first member only so that a call
 * without parameters, cuCtxSynchronize, has a struct too) and a thunk that
 * makes the real call from them (breakers.c may make it, make it in relaxed
 * mode, or not make it). handle_thunk is the call on one handle, for
 * deferral, or NULL. The slow path is a function of its own, so that the
 * wrapper's frame holds nothing whose address is taken (no stack-protector
 * canary, no struct to set up) on the path taken when nothing captures. */
#define CG_BREAKER_BODY(cname, sname, ep, params, kind, rule, target, has_target, ptsz, fix, handle_thunk) \
  CG_ARGS_THUNK(cname, ep, params)                                                                    \
  /* The fast path's answers above 899, a refusal (900 or 907) among them:                        \
   * attributed while the call is still in the fence. */                                            \
  CUresult cname##_refused(CUresult r) __asm__(sname "_cg_refused") __attribute__((used, noinline, cold)); \
  CUresult cname##_refused(CUresult r) { return passed(r, ep, kind, rule); }                          \
  CG_BREAKER_HOLDER(cname, sname, ep, CG_BREAKER_FLAGS(ep, fix, params), (ep) == CG_EP_cuCtxSynchronize ? 0 : -1) \
  CG_BREAKER_FAST_PATH(sname);                                                                        \
  static __attribute__((noinline)) CUresult cname##_slow(CG_PARAMS(params)) {                        \
    cname##_args args_ = CG_ARGS_KEPT(params);                                                        \
    cg_call c_ = {(ep),      (kind),       (rule),         (fix), (uint64_t)(uintptr_t)(target),      \
                  (has_target), (ptsz),    cname##_invoke, &args_, (handle_thunk), 0};                \
    return cg_breaker_call(&c_);                                                                      \
  }                                                                                                   \
  static inline __attribute__((always_inline)) CUresult cname##_body(CG_PARAMS(params));             \
  /* A blocking call with the hang watch on: in the thread's slot while it                          \
   * lasts (a few stores inline, hang_slots.h). */                                                    \
  CG_OTHER_HEAD(cname, sname, params) {                                                               \
    if (CG_BLOCKS(ep) && __builtin_expect(cg_hang_s != 0, 0)) {                                       \
      cg_hang_call_enter(sname, (uint64_t)(uintptr_t)(target), __builtin_return_address(0),            \
                         (char *)__builtin_dwarf_cfa() - sizeof(void *));                             \
      CUresult r_ = cname##_body(CG_ARGS(params));                                                    \
      cg_hang_call_leave();                                                                           \
      return r_;                                                                                      \
    }                                                                                                 \
    return cname##_body(CG_ARGS(params));                                                             \
  }                                                                                                   \
  static inline __attribute__((always_inline)) CUresult cname##_body(CG_PARAMS(params)) {            \
    CG_REAL_OR_RETURN(ep, params, real);                                                              \
    if ((fix) == CG_FIX_DEFER_UNLOAD) {                                                               \
      if (off())                                                                                      \
        return real(CG_ARGS(params));                                                                 \
      if (cg_nothing_captures() && cg_gate_lock_if_idle())                                            \
        return unloaded(real(CG_ARGS(params)), ep, (void *)(uintptr_t)(target));                      \
      return cname##_slow(CG_ARGS(params));                                                           \
    }                                                                                                 \
    if (CG_FENCED(ep)) {                                                                              \
      unsigned *q_ = cg_query_enter();                                                                \
      if (__builtin_expect(cg_nothing_captures(), 1)) {                                               \
        CUresult r_ = real(CG_ARGS(params));                                                          \
        cg_query_leave(q_);                                                                           \
        return r_;                                                                                    \
      }                                                                                               \
      cg_query_leave(q_);                                                                             \
      if (off())                                                                                      \
        return real(CG_ARGS(params));                                                                 \
      return cname##_slow(CG_ARGS(params));                                                           \
    }                                                                                                 \
    if (__builtin_expect(cg_nothing_captures(), 1) || off()) {                                        \
      if (CG_POLLED(ep))                                                                              \
        return real(CG_ARGS(params));                                                                 \
      unsigned *b_ = cg_breaker_enter();                                                              \
      CUresult r_ = passed(real(CG_ARGS(params)), ep, (kind), (rule));                                \
      cg_breaker_leave(b_);                                                                           \
      CG_STALE_AFTER(fix, sname, target, r_)                                                          \
      return r_;                                                                                      \
    }                                                                                                 \
    CUresult s_ = cname##_slow(CG_ARGS(params));                                                      \
    CG_STALE_AFTER(fix, sname, target, s_)                                                            \
    return s_;                                                                                        \
  }                                                                                                   \
  CG_FAST_PATH(cname, sname, ep, params,                                                              \
               CG_FENCED(ep)                      ? CG_FAST_QUERY                                     \
               : CG_POLLED(ep)                    ? CG_FAST_PLAIN                                     \
               : CG_BREAKER_FLAGS(ep, fix, params) & CG_BT_FAST ? (CG_BLOCKS(ep) ? CG_FAST_BREAKER_BLOCKS : CG_FAST_BREAKER) \
                                                  : CG_FAST_NONE)

#define CG_WRAP_BREAKER(cname, sname, ep, params, kind, rule, target, has_target, ptsz, fix)         \
  CG_BREAKER_BODY(cname, sname, ep, params, kind, rule, target, has_target, ptsz, fix, NULL)

/* One parameter, the handle: the target, and the thunk deferral runs (an
 * unload's tells priming, as the wrapper's fast path does). */
#define CG_PP_FROM_HANDLE(t, n) (t)(uintptr_t)h
#define CG_WRAP_DEFERRABLE(cname, sname, ep, params, kind, fix)                                      \
  static CUresult cname##_on_handle(void *h) {                                                        \
    CUresult r_ = ((CUresult(*)(CG_PARAMS(params)))cg_ep_real[ep])(                                   \
        CG_PP_PAIRS(CG_PP_FROM_HANDLE, CG_PP_COMMA, params));                                         \
    if ((fix) == CG_FIX_DEFER_UNLOAD && r_ == CUDA_SUCCESS)                                           \
      cg_priming_unloaded(h);                                                                         \
    return r_;                                                                                        \
  }                                                                                                   \
  CG_BREAKER_BODY(cname, sname, ep, params, kind, CG_RULE_PROHIBITED, CG_ARGS(params), true, false,   \
                  fix, cname##_on_handle)

/* A record on a capturing stream puts the event into the capture; one on
 * any other stream takes it out. Nothing capturing: nothing to remember (an
 * event recorded into a capture that ended is the driver's again), and the
 * driver's call is the wrapper's last act. Otherwise the model is told
 * before the driver records into a capture (cg_captures_event_record_begin:
 * no query of the event may reach the driver once it is captured) and after
 * it records outside any (the event is the driver's again only then). */
#define CG_WRAP_EVENT_RECORD(cname, sname, ep, params, event, stream, ptsz)                          \
  CG_OTHER_HEAD(cname, sname, params) {                                                               \
    CG_REAL_OR_RETURN(ep, params, real);                                                              \
    if (cg_nothing_captures() || off())                                                               \
      return real(CG_ARGS(params));                                                                   \
    cg_record_mark mk_;                                                                               \
    cg_captures_event_record_begin((uint64_t)(uintptr_t)(event), (stream), (ptsz), &mk_);             \
    CUresult r_ = real(CG_ARGS(params));                                                              \
    cg_captures_event_record_end(&mk_, r_);                                                           \
    return r_;                                                                                        \
  }                                                                                                   \
  CG_FAST_PATH(cname, sname, ep, params, CG_FAST_PLAIN)

/* An event destroyed while something captures is forgotten by the model once
 * the driver destroyed it (before, a query of the still captured event would
 * reach the driver): the driver may hand its handle out again, for an event
 * that is the driver's to answer (docs/reliability.md, attack 2). With nothing capturing
 * the model tracks no event: a tail call. */
#define CG_WRAP_EVENT_DESTROY(cname, sname, ep, params, event)                                       \
  static __attribute__((noinline)) CUresult cname##_slow(CUresult (*real)(CG_PARAMS(params)),          \
                                                         CG_PARAMS(params)) {                         \
    CUresult r_ = real(CG_ARGS(params));                                                              \
    if (r_ == CUDA_SUCCESS)                                                                           \
      cg_captures_event_destroyed((uint64_t)(uintptr_t)(event));                                      \
    return r_;                                                                                        \
  }                                                                                                   \
  CG_WRAPPER_HEAD(cname, sname, params) {                                                             \
    CG_REAL_OR_RETURN(ep, params, real);                                                              \
    if (__builtin_expect(cg_nothing_captures(), 1))                                                   \
      return real(CG_ARGS(params));                                                                   \
    return cname##_slow(real, CG_ARGS(params));                                                       \
  }

#include "wrap_rows.h"

CG_QUERY_FAST_PATH("cuEventQuery");
