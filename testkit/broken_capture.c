#include "broken_capture.h"

#include "driver_open.h"

void tk_broken_capture(CUstream s) {
  static CUresult (*begin)(CUstream, CUstreamCaptureMode);
  static CUresult (*end)(CUstream, CUgraph *);
  static CUresult (*alloc)(CUdeviceptr *, size_t);
  static CUresult (*graph_destroy)(CUgraph);
  if (!begin) { /* the hosts call this from one thread at a time */
    end = tk_driver_get("cuStreamEndCapture");
    alloc = tk_driver_get("cuMemAlloc");
    graph_destroy = tk_driver_get("cuGraphDestroy");
    begin = tk_driver_get("cuStreamBeginCapture");
  }
  CUdeviceptr p;
  CUgraph g = NULL;
  if (begin(s, CU_STREAM_CAPTURE_MODE_GLOBAL) != CUDA_SUCCESS)
    return;
  (void)alloc(&p, 256);
  if (end(s, &g) == CUDA_SUCCESS && g)
    graph_destroy(g);
}
