/* Wrappers for capture begin (every variant), end, and the thread's
 * capture-interaction mode. Each calls the driver exactly as the caller asked
 * and tells guard.c what happened. */
#include "guard.h"
#include "wrapper.h"

/* Each begin: the driver's call between cg_capture_begin_enter and _leave. */
#define BEGIN(call, s, ptsz, mode, into_graph)                                                           \
  do {                                                                                                   \
    void *site_ = cg_capture_begin_enter();                                                              \
    CUresult r_ = (call);                                                                                \
    cg_capture_begin_leave(site_, r_, cg_stream_key((s), (ptsz)), (cg_capture_mode)(mode), (into_graph)); \
    return r_;                                                                                           \
  } while (0)

typedef CUresult (*begin_v1_fn)(CUstream);
typedef CUresult (*begin_v2_fn)(CUstream, CUstreamCaptureMode);
typedef CUresult (*end_fn)(CUstream, CUgraph *);
typedef CUresult (*exchange_fn)(CUstreamCaptureMode *);

static bool off(void) { return cg_cfg.mode == CG_RUN_OFF; }

/* Version 1 (CUDA 10.0) takes no mode; it behaves as global mode, the default. */
CG_WRAPPER(CUresult, cuStreamBeginCapture, (CUstream s)) {
  CG_REAL_OR_RETURN(cuStreamBeginCapture, begin_v1_fn, real);
  if (off())
    return real(s);
  BEGIN(real(s), s, false, CU_STREAM_CAPTURE_MODE_GLOBAL, false);
}

CG_WRAPPER(CUresult, cuStreamBeginCapture_ptsz, (CUstream s)) {
  CG_REAL_OR_RETURN(cuStreamBeginCapture_ptsz, begin_v1_fn, real);
  if (off())
    return real(s);
  BEGIN(real(s), s, true, CU_STREAM_CAPTURE_MODE_GLOBAL, false);
}

CG_WRAPPER(CUresult, cuStreamBeginCapture_v2, (CUstream s, CUstreamCaptureMode mode)) {
  CG_REAL_OR_RETURN(cuStreamBeginCapture_v2, begin_v2_fn, real);
  if (off())
    return real(s, mode);
  BEGIN(real(s, mode), s, false, mode, false);
}

CG_WRAPPER(CUresult, cuStreamBeginCapture_v2_ptsz, (CUstream s, CUstreamCaptureMode mode)) {
  CG_REAL_OR_RETURN(cuStreamBeginCapture_v2_ptsz, begin_v2_fn, real);
  if (off())
    return real(s, mode);
  BEGIN(real(s, mode), s, true, mode, false);
}

typedef CUresult (*begin_to_graph_fn)(CUstream, CUgraph, const CUgraphNode *, const CUgraphEdgeData *,
                                      size_t, CUstreamCaptureMode);

CG_WRAPPER(CUresult, cuStreamBeginCaptureToGraph,
           (CUstream s, CUgraph g, const CUgraphNode *deps, const CUgraphEdgeData *data, size_t n,
            CUstreamCaptureMode mode)) {
  CG_REAL_OR_RETURN(cuStreamBeginCaptureToGraph, begin_to_graph_fn, real);
  if (off())
    return real(s, g, deps, data, n, mode);
  BEGIN(real(s, g, deps, data, n, mode), s, false, mode, true);
}

CG_WRAPPER(CUresult, cuStreamBeginCaptureToGraph_ptsz,
           (CUstream s, CUgraph g, const CUgraphNode *deps, const CUgraphEdgeData *data, size_t n,
            CUstreamCaptureMode mode)) {
  CG_REAL_OR_RETURN(cuStreamBeginCaptureToGraph_ptsz, begin_to_graph_fn, real);
  if (off())
    return real(s, g, deps, data, n, mode);
  BEGIN(real(s, g, deps, data, n, mode), s, true, mode, true);
}

CG_WRAPPER(CUresult, cuStreamEndCapture, (CUstream s, CUgraph *graph)) {
  CG_REAL_OR_RETURN(cuStreamEndCapture, end_fn, real);
  if (off())
    return real(s, graph);
  cg_capture_end_enter();
  return cg_capture_end_leave(cg_stream_key(s, false), real(s, graph), graph);
}

CG_WRAPPER(CUresult, cuStreamEndCapture_ptsz, (CUstream s, CUgraph *graph)) {
  CG_REAL_OR_RETURN(cuStreamEndCapture_ptsz, end_fn, real);
  if (off())
    return real(s, graph);
  cg_capture_end_enter();
  return cg_capture_end_leave(cg_stream_key(s, true), real(s, graph), graph);
}

CG_WRAPPER(CUresult, cuThreadExchangeStreamCaptureMode, (CUstreamCaptureMode * mode)) {
  CG_REAL_OR_RETURN(cuThreadExchangeStreamCaptureMode, exchange_fn, real);
  if (!mode)
    return real(mode);
  CUstreamCaptureMode wanted = *mode;
  CUresult r = real(mode);
  if (r == CUDA_SUCCESS)
    cg_set_self_mode((cg_capture_mode)wanted);
  return r;
}
