/* The wrappers of the capture families (entry_point_rows.h): capture begin
 * (every variant), capture end, the thread's capture-interaction mode, and
 * stream destroys (a capturing stream's capture ends with it).
 * Each calls the driver exactly as the caller asked and tells guard.c what
 * happened. */
#include "guard.h"

#include "wrapper.h"

static bool off(void) { return cg_cfg.mode == CG_RUN_OFF; }

/* A begin: the driver's call between cg_capture_begin_enter and _leave.
 * Version 1 (CUDA 10.0) takes no mode; its row says global, the default. */
#define CG_WRAP_CAPTURE_BEGIN(cname, sname, ep, params, stream, ptsz, mode, into_graph)              \
  CG_WRAPPER_HEAD(cname, sname, params) {                                                          \
    CG_REAL_OR_RETURN(ep, params, real);                                                           \
    if (off())                                                                                     \
      return real(CG_ARGS(params));                                                                \
    void *site_ = cg_capture_begin_enter(__builtin_return_address(0),                              \
                                         (char *)__builtin_dwarf_cfa() - sizeof(void *), (stream), \
                                         (ptsz));                                                  \
    CUresult r_ = real(CG_ARGS(params));                                                           \
    cg_capture_begin_leave(site_, r_, (stream), (ptsz), (cg_capture_mode)(mode), (into_graph));     \
    return r_;                                                                                     \
  }

#define CG_WRAP_CAPTURE_END(cname, sname, ep, params, stream, ptsz, graph)                         \
  CG_WRAPPER_HEAD(cname, sname, params) {                                                          \
    CG_REAL_OR_RETURN(ep, params, real);                                                           \
    if (off())                                                                                     \
      return real(CG_ARGS(params));                                                                \
    cg_capture_end_enter((stream), (ptsz));                                                        \
    /* An end that waits is the hang watch's too, with nothing marked: its */                     \
    /* capture stays open in the model until then, said as one open too long */                    \
    CUresult d_ = real(CG_ARGS(params));                                                           \
    return cg_capture_end_leave((stream), (ptsz), d_, (graph));                                    \
  }

/* A stream destroyed: with nothing capturing, a tail call; otherwise guard.c
 * drops a capture on it (the driver ends it) and never asks the driver about
 * it again. The per-thread and legacy streams are never destroyed. */
#define CG_WRAP_STREAM_DESTROY(cname, sname, ep, params, stream)                                   \
  CG_WRAPPER_HEAD(cname, sname, params) {                                                          \
    CG_REAL_OR_RETURN(ep, params, real);                                                           \
    if (__builtin_expect(cg_nothing_captures(), 1) || off())                                       \
      return cg_stream_destroyed(real(CG_ARGS(params)));                                           \
    return cg_stream_destroyed(cg_capture_stream_destroy(ep, (stream), real));                     \
  }

/* The mode the thread asked for is recorded once the driver accepted it. */
#define CG_WRAP_MODE_EXCHANGE(cname, sname, ep, params, mode)                                      \
  CG_WRAPPER_HEAD(cname, sname, params) {                                                          \
    CG_REAL_OR_RETURN(ep, params, real);                                                           \
    if (!(mode))                                                                                   \
      return real(CG_ARGS(params));                                                                \
    CUstreamCaptureMode wanted_ = *(mode);                                                         \
    CUresult r_ = real(CG_ARGS(params));                                                           \
    if (r_ == CUDA_SUCCESS)                                                                        \
      cg_set_self_mode((cg_capture_mode)wanted_);                                                  \
    return r_;                                                                                     \
  }

#include "wrap_rows.h"
