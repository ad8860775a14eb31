/* The wrappers of the LOAD family (entry_point_rows.h): module and library
 * loads. With nothing capturing (or in off mode) each is one atomic load and
 * a call to the driver; while something captures, guard.c decides. (The
 * unloads are DEFERRABLE rows, like a free: breaker_wrappers.c.) */
#include "fleet_metrics.h"
#include "guard.h"

#include "serving.h"
#include "stale_params.h"

#include "wrapper.h"

static bool pass(void) { return cg_nothing_captures() || cg_cfg.mode == CG_RUN_OFF; }

/* Nothing captured when the wrapper looked, but a capture may begin on
 * another thread before the call reaches the driver: a load would then be
 * one the driver saw during capture and capguard did not report (and, on a
 * driver before 12.3, would break it). So it is made under the capture gate
 * (cg_gate_lock_if_idle). If something captures by then, it goes down
 * guard.c's path, even if that capture ends meanwhile: the call must not
 * reach the driver ungated, where the next begin could slip in before it
 * (guard.c decides under the gate, and finds nothing prohibiting cheaply).
 * Only these skip the gate: off mode, and a load from a file on a driver
 * that never refuses loads (reading a file can block: a FIFO, a hung
 * network file system; no begin may wait on it). */
static bool ungated_ok(bool from_file) {
  return cg_cfg.mode == CG_RUN_OFF || (from_file && !cg_driver_rules_loads());
}

/* What the driver answered a call passed straight through. A capture may have
 * begun on another thread after pass() looked: a refusal is then reported
 * (off mode reports nothing). */
static CUresult passed(CUresult r, cg_entry_point ep) {
  if (__builtin_expect(r == CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, 0) && cg_cfg.mode != CG_RUN_OFF)
    cg_guard_refused_unseen(ep);
  return r;
}

/* With CAPGUARD_STALE=1, a load from memory also tells the stale-pointer
 * check (stale_params.c: on drivers before 12.4, where its parameter layouts
 * come from). */
/* A load hands guard.c its arguments, kept in a struct of the row's
 * parameters, and a thunk that makes the real call from them (guard.c may
 * make it, make it in relaxed mode, or not make it at all). */
#define CG_WRAP_LOAD(cname, sname, ep, params, image, path, library, out, options)                 \
  CG_ARGS_THUNK(cname, ep, params)                                                                 \
  static CUresult cname##_load_invoke(const cg_load *l) { return cname##_invoke(l->args); }        \
  static inline __attribute__((always_inline)) CUresult cname##_go(CUresult (*real)(CG_PARAMS(params)), \
                                                                    CG_PARAMS(params)) {          \
    if ((const void *)(image) == NULL && (const void *)(path) == NULL)                             \
      return real(CG_ARGS(params));                                                                \
    cg_fleet_start_once();                                                                         \
    cname##_args args_ = CG_ARGS_KEPT(params);                                                        \
    cg_load_opts_raw o_ = (options);                                                               \
    cg_load l = {ep, (image), (path), (library), (void **)(out), o_.n_jit || o_.n_lib, o_,          \
                 cname##_load_invoke, &args_};                                                          \
    if (pass()) {                                                                                  \
      CUresult rs_;                                                                                \
      if (__builtin_expect(__atomic_load_n(&cg_serving_watch, __ATOMIC_RELAXED), 0) &&             \
          cg_cfg.mode != CG_RUN_OFF && (const void *)(image) && cg_serving_load(&l, &rs_))         \
        return rs_;                                                                                \
      if (ungated_ok((const void *)(path) != NULL))                                                \
        return passed(real(CG_ARGS(params)), ep);                                                  \
      if (cg_gate_lock_if_idle()) {                                                                \
        CUresult r_ = real(CG_ARGS(params));                                                       \
        cg_gate_unlock();                                                                          \
        return passed(r_, ep);                                                                     \
      }                                                                                            \
    }                                                                                              \
    return cg_guard_load(&l);                                                                      \
  }                                                                                                \
  CG_WRAPPER_HEAD(cname, sname, params) {                                                          \
    CG_REAL_OR_RETURN(ep, params, real);                                                           \
    CUresult r_ = cname##_go(real, CG_ARGS(params));                                               \
    if (__builtin_expect(cg_cfg.stale, 0) && r_ == CUDA_SUCCESS && (const void *)(image) && (out))  \
      cg_stale_module_loaded(*(void **)(out), (library), (const void *)(image));                   \
    return r_;                                                                                     \
  }

#include "wrap_rows.h"
