/* The wrappers of the LOAD and UNLOAD families (entry_point_rows.h): module
 * and library loads and unloads. With nothing capturing (or in off mode)
 * each is one atomic load and a call to the driver; while something
 * captures, guard.c decides. */
#include "guard.h"

#include "wrapper.h"

static bool pass(void) { return cg_nothing_captures() || cg_cfg.mode == CG_RUN_OFF; }

/* What the driver answered a call passed straight through. A capture may have
 * begun on another thread after pass() looked: a refusal is then reported
 * (off mode reports nothing). */
static CUresult passed(CUresult r, cg_entry_point ep, bool unload) {
  if (__builtin_expect(r == CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, 0) && cg_cfg.mode != CG_RUN_OFF)
    cg_guard_refused_unseen(ep, unload);
  return r;
}

/* A load hands guard.c its arguments, kept in a struct of the row's
 * parameters, and a thunk that makes the real call from them (guard.c may
 * make it, make it in relaxed mode, or not make it at all). */
#define CG_WRAP_LOAD(cname, sname, ep, params, image, path, library, out)                          \
  typedef struct {                                                                                 \
    CG_MEMBERS(params)                                                                             \
  } cname##_args;                                                                                  \
  static CUresult cname##_invoke(const cg_load *l) {                                              \
    const cname##_args *args_ = l->args;                                                          \
    return ((CUresult(*)(CG_PARAMS(params)))cg_ep_real[ep])(CG_FIELDS(params));                    \
  }                                                                                                \
  CG_WRAPPER_HEAD(cname, sname, params) {                                                          \
    CG_REAL_OR_RETURN(ep, params, real);                                                           \
    if (pass() || ((const void *)(image) == NULL && (const void *)(path) == NULL))                 \
      return passed(real(CG_ARGS(params)), ep, false);                                             \
    cname##_args args_ = {CG_ARGS(params)};                                                        \
    cg_load l = {ep, (image), (path), (library), (void **)(out), cname##_invoke, &args_};          \
    return cg_guard_load(&l);                                                                      \
  }

/* An unload hands guard.c the handle and a thunk that unloads it (now, or
 * deferred until the capture ends). */
#define CG_PP_HANDLE_OF(t, n) (t)h
#define CG_WRAP_UNLOAD(cname, sname, ep, params, handle, library)                                 \
  static CUresult cname##_invoke(void *h) {                                                        \
    return ((CUresult(*)(CG_PARAMS(params)))cg_ep_real[ep])(                                       \
        CG_PP_PAIRS(CG_PP_HANDLE_OF, CG_PP_COMMA, params));                                        \
  }                                                                                                \
  CG_WRAPPER_HEAD(cname, sname, params) {                                                          \
    CG_REAL_OR_RETURN(ep, params, real);                                                           \
    if (pass())                                                                                    \
      return passed(real(CG_ARGS(params)), ep, true);                                              \
    cg_unload u = {ep, (void *)(handle), (library), cname##_invoke};                               \
    return cg_guard_unload(&u);                                                                    \
  }

#include "wrap_rows.h"
