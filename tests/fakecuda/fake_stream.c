/* fakecuda: streams, stream synchronisation, and host functions launched on a stream.
 * There is no device, so all work is complete as soon as it is queued: a query or sync
 * that is allowed always succeeds. What the fake models is whether it is allowed. */
#include "fake_internal.h"

#include <stdlib.h>
#include <string.h>

/* Handle reuse: a destroyed stream's handle is handed out again by the next
 * cuStreamCreate, as drivers recycle their stream objects (and as glibc's
 * malloc happens to; a sanitizer's quarantine would not, so the fake keeps
 * its own list, as it does for events and contexts). */
static struct fc_stream *recycled;

static struct fc_stream *stream_new(void) {
  struct fc_stream *st = recycled;
  if (st == NULL)
    return calloc(1, sizeof(*st));
  recycled = *(struct fc_stream **)st;
  memset(st, 0, sizeof(*st));
  return st;
}

static void stream_recycle(struct fc_stream *st) {
  memset(st, 0, sizeof(*st));
  *(struct fc_stream **)st = recycled;
  recycled = st;
}

FC_EXPORT CUresult CUDAAPI cuStreamCreate(CUstream *phStream, unsigned int Flags) {
  FC_BEGIN;
  CUresult rc = fc_need_ctx();
  if (rc == CUDA_SUCCESS && (phStream == NULL || (Flags & ~(unsigned)CU_STREAM_NON_BLOCKING) != 0))
    rc = CUDA_ERROR_INVALID_VALUE;
  struct fc_stream *st = NULL;
  if (rc == CUDA_SUCCESS && (st = stream_new()) == NULL)
    rc = CUDA_ERROR_OUT_OF_MEMORY;
  if (rc == CUDA_SUCCESS) {
    st->flags = Flags;
    fc_register(&st->h, st, FC_STREAM);
    *phStream = (CUstream)st;
  }
  FC_END(rc);
}

static CUresult stream_destroy(CUstream hs) {
  CUresult rc = fc_need_ctx();
  if (rc != CUDA_SUCCESS)
    return rc;
  struct fc_stream *st = (struct fc_stream *)fc_lookup(hs, FC_STREAM);
  if (st == NULL)
    return CUDA_ERROR_INVALID_HANDLE;
  if (st->cap != NULL && st->cap->stream == st) {
    fc_stream_destroy_capturing(st);   /* the capture is over; the handle a tombstone */
    return CUDA_SUCCESS;
  }
  /* (a stream forked into a capture just leaves it) */
  fc_unregister(&st->h);
  stream_recycle(st);
  return CUDA_SUCCESS;
}

FC_EXPORT CUresult CUDAAPI cuStreamDestroy(CUstream hStream) {
  FC_BEGIN;
  FC_END(stream_destroy(hStream));
}

FC_EXPORT CUresult CUDAAPI cuStreamDestroy_v2(CUstream hStream) {
  FC_BEGIN;
  FC_END(stream_destroy(hStream));
}

/* Ground truth: syncing or querying the capturing stream itself is refused and breaks
 * its capture in every mode; syncing any other stream follows the prohibition rule. */
static CUresult stream_wait(CUstream hs, int ptsz) {
  struct fc_stream *st;
  CUresult rc = fc_stream_in_ctx(hs, ptsz, &st);
  if (rc != CUDA_SUCCESS)
    return rc;
  if (st->cap != NULL) {
    if (st->cap->invalidated)
      return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
    fc_invalidate(st->cap);
    (void)fc_refuse_if_prohibited();
    return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  }
  return fc_refuse_if_prohibited();
}

FC_EXPORT CUresult CUDAAPI cuStreamSynchronize(CUstream hStream) {
  fc_sync_block();
  fc_hold_wait(hStream);
  FC_BEGIN;
  FC_END(stream_wait(hStream, 0));
}

FC_EXPORT CUresult CUDAAPI cuStreamSynchronize_ptsz(CUstream hStream) {
  fc_sync_block();
  fc_hold_wait(hStream);
  FC_BEGIN;
  FC_END(stream_wait(hStream, 1));
}

FC_EXPORT CUresult CUDAAPI cuStreamQuery(CUstream hStream) {
  FC_BEGIN;
  FC_END(stream_wait(hStream, 0));
}

FC_EXPORT CUresult CUDAAPI cuStreamQuery_ptsz(CUstream hStream) {
  FC_BEGIN;
  FC_END(stream_wait(hStream, 1));
}

/* Ground truth (second matrix): allowed on the capturing stream in every mode, where it
 * adds a host node. Outside a capture the function runs at once, in the calling thread,
 * after the fake's lock is released (a host function must not call the driver anyway). */
static CUresult launch_host_func(CUstream hs, int ptsz, CUhostFn fn, void *data, int *run_now) {
  *run_now = 0;
  struct fc_stream *st;
  CUresult rc = fc_stream_in_ctx(hs, ptsz, &st);
  if (rc != CUDA_SUCCESS)
    return rc;
  if (fn == NULL)
    return CUDA_ERROR_INVALID_VALUE;
  /* A host function on the legacy stream is legacy-stream work like a launch
   * there: 906 while a blocking stream captures, run at once while only
   * non-blocking ones do (measured on the H100: docs/driver-semantics.md). capguard does not wrap
   * it: the route tests' real call that only the driver's log names. */
  if ((rc = fc_legacy_work(st)) != CUDA_SUCCESS)
    return rc;
  struct fc_capture *cap;
  if ((rc = fc_stream_work(st, &cap)) != CUDA_SUCCESS)
    return rc;
  if (cap == NULL) {
    *run_now = 1;
    return CUDA_SUCCESS;
  }
  struct fc_node *n = fc_capture_add(cap, CU_GRAPH_NODE_TYPE_HOST);
  if (n == NULL)
    return CUDA_ERROR_OUT_OF_MEMORY;
  n->host_fn = fn;
  n->host_data = data;
  return CUDA_SUCCESS;
}

FC_EXPORT CUresult CUDAAPI cuLaunchHostFunc(CUstream hStream, CUhostFn fn, void *userData) {
  FC_BEGIN;
  int run_now;
  CUresult rc = fc_leave(&fc_call_, __func__, launch_host_func(hStream, 0, fn, userData, &run_now));
  if (run_now)
    fn(userData);
  return rc;
}

FC_EXPORT CUresult CUDAAPI cuLaunchHostFunc_ptsz(CUstream hStream, CUhostFn fn, void *userData) {
  FC_BEGIN;
  int run_now;
  CUresult rc = fc_leave(&fc_call_, __func__, launch_host_func(hStream, 1, fn, userData, &run_now));
  if (run_now)
    fn(userData);
  return rc;
}
