/* Captures for the null driver (tests/fakecuda/nullcap's libcuda.so.1): streams of
 * their own that begin and end captures, with no lock and nothing shared
 * between threads but a counter of capture ids. bench_threads over it
 * measures what capguard itself adds to many threads capturing at once,
 * without the fake driver's process-wide mutex (every fake call takes it,
 * and walks every capture open), which dominates there. Not a model of the
 * driver: no rule is checked, nothing refused. */
/* the entry points under their exported names, not cuda.h's newest versions */
#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>
#include <stdint.h>
#include <stdlib.h>

#define NULLDRV_EXPORT __attribute__((visibility("default")))

typedef struct {
  unsigned flags;
  uint64_t capture_id; /* 0: not capturing; written by its own thread only */
} null_stream;

static uint64_t next_capture_id;

static null_stream *stream_of(CUstream s) {
  return s == NULL || s == CU_STREAM_LEGACY || s == CU_STREAM_PER_THREAD ? NULL : (null_stream *)s;
}

NULLDRV_EXPORT CUresult CUDAAPI cuStreamCreate(CUstream *s, unsigned int flags) {
  null_stream *n = calloc(1, sizeof *n);
  if (!n)
    return CUDA_ERROR_OUT_OF_MEMORY;
  n->flags = flags;
  *s = (CUstream)n;
  return CUDA_SUCCESS;
}
NULLDRV_EXPORT CUresult CUDAAPI cuStreamDestroy_v2(CUstream s) {
  free(stream_of(s));
  return CUDA_SUCCESS;
}
NULLDRV_EXPORT CUresult CUDAAPI cuStreamGetFlags(CUstream s, unsigned int *flags) {
  null_stream *n = stream_of(s);
  *flags = n ? n->flags : 0;
  return CUDA_SUCCESS;
}
NULLDRV_EXPORT CUresult CUDAAPI cuCtxGetCurrent(CUcontext *c) {
  *c = (CUcontext)(uintptr_t)0x1000;
  return CUDA_SUCCESS;
}
static CUresult begin(CUstream s) {
  null_stream *n = stream_of(s);
  if (!n)
    return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  if (__atomic_load_n(&n->capture_id, __ATOMIC_ACQUIRE))
    return CUDA_ERROR_ILLEGAL_STATE;
  __atomic_store_n(&n->capture_id, __atomic_add_fetch(&next_capture_id, 1, __ATOMIC_RELAXED), __ATOMIC_RELEASE);
  return CUDA_SUCCESS;
}
NULLDRV_EXPORT CUresult CUDAAPI cuStreamBeginCapture(CUstream s) { return begin(s); }
NULLDRV_EXPORT CUresult CUDAAPI cuStreamBeginCapture_v2(CUstream s, CUstreamCaptureMode mode) {
  (void)mode;
  return begin(s);
}
NULLDRV_EXPORT CUresult CUDAAPI cuStreamEndCapture(CUstream s, CUgraph *g) {
  null_stream *n = stream_of(s);
  if (!n || !__atomic_load_n(&n->capture_id, __ATOMIC_ACQUIRE))
    return CUDA_ERROR_ILLEGAL_STATE;
  __atomic_store_n(&n->capture_id, 0, __ATOMIC_RELEASE);
  *g = (CUgraph)(uintptr_t)0x4000;
  return CUDA_SUCCESS;
}
NULLDRV_EXPORT CUresult CUDAAPI cuGraphDestroy(CUgraph g) {
  (void)g;
  return CUDA_SUCCESS;
}
NULLDRV_EXPORT CUresult CUDAAPI cuStreamGetCaptureInfo(CUstream s, CUstreamCaptureStatus *st, cuuint64_t *id) {
  null_stream *n = stream_of(s);
  uint64_t c = n ? __atomic_load_n(&n->capture_id, __ATOMIC_ACQUIRE) : 0;
  *st = c ? CU_STREAM_CAPTURE_STATUS_ACTIVE : CU_STREAM_CAPTURE_STATUS_NONE;
  if (id)
    *id = c;
  return CUDA_SUCCESS;
}
