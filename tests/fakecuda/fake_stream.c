/* fakecuda: streams, events and the synchronising calls.
 * There is no device, so all work is complete as soon as it is queued: a query or sync
 * that is allowed always succeeds. What the fake models is whether it is allowed. */
#include "fake_internal.h"

#include <stdlib.h>

struct fc_event {
  struct fc_handle h;
  unsigned flags;
  uint64_t captured_in;   /* id of the capture it was last recorded in, 0 if none */
};

FC_EXPORT CUresult CUDAAPI cuStreamCreate(CUstream *phStream, unsigned int Flags)
{
  FC_BEGIN;
  CUresult rc = fc_need_ctx();
  if (rc == CUDA_SUCCESS && (phStream == NULL || (Flags & ~(unsigned)CU_STREAM_NON_BLOCKING) != 0))
    rc = CUDA_ERROR_INVALID_VALUE;
  struct fc_stream *st = NULL;
  if (rc == CUDA_SUCCESS && (st = calloc(1, sizeof(*st))) == NULL)
    rc = CUDA_ERROR_OUT_OF_MEMORY;
  if (rc == CUDA_SUCCESS) {
    st->flags = Flags;
    fc_register(&st->h, st, FC_STREAM);
    *phStream = (CUstream)st;
  }
  FC_END(rc);
}

static CUresult stream_destroy(CUstream hs)
{
  CUresult rc = fc_need_ctx();
  if (rc != CUDA_SUCCESS)
    return rc;
  struct fc_stream *st = (struct fc_stream *)fc_lookup(hs, FC_STREAM);
  if (st == NULL)
    return CUDA_ERROR_INVALID_HANDLE;
  if (st->cap != NULL)
    fc_capture_close(st->cap, 1);   /* the capture dies with its stream */
  fc_unregister(&st->h);
  free(st);
  return CUDA_SUCCESS;
}

FC_EXPORT CUresult CUDAAPI cuStreamDestroy(CUstream hStream)
{
  FC_BEGIN;
  FC_END(stream_destroy(hStream));
}

FC_EXPORT CUresult CUDAAPI cuStreamDestroy_v2(CUstream hStream)
{
  FC_BEGIN;
  FC_END(stream_destroy(hStream));
}

/* Ground truth: syncing or querying the capturing stream itself is refused and breaks
 * its capture in every mode; syncing any other stream follows the prohibition rule. */
static CUresult stream_wait(CUstream hs, int ptsz)
{
  CUresult rc = fc_need_ctx();
  if (rc != CUDA_SUCCESS)
    return rc;
  struct fc_stream *st = fc_stream_resolve(hs, ptsz);
  if (st == NULL)
    return CUDA_ERROR_INVALID_HANDLE;
  if (st->cap != NULL) {
    if (st->cap->invalidated)
      return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
    st->cap->invalidated = 1;
    (void)fc_refuse_if_prohibited();
    return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  }
  return fc_refuse_if_prohibited();
}

FC_EXPORT CUresult CUDAAPI cuStreamSynchronize(CUstream hStream)
{
  FC_BEGIN;
  FC_END(stream_wait(hStream, 0));
}

FC_EXPORT CUresult CUDAAPI cuStreamSynchronize_ptsz(CUstream hStream)
{
  FC_BEGIN;
  FC_END(stream_wait(hStream, 1));
}

FC_EXPORT CUresult CUDAAPI cuStreamQuery(CUstream hStream)
{
  FC_BEGIN;
  FC_END(stream_wait(hStream, 0));
}

FC_EXPORT CUresult CUDAAPI cuStreamQuery_ptsz(CUstream hStream)
{
  FC_BEGIN;
  FC_END(stream_wait(hStream, 1));
}

FC_EXPORT CUresult CUDAAPI cuEventCreate(CUevent *phEvent, unsigned int Flags)
{
  FC_BEGIN;
  CUresult rc = fc_need_ctx();
  unsigned known = CU_EVENT_BLOCKING_SYNC | CU_EVENT_DISABLE_TIMING | CU_EVENT_INTERPROCESS;
  if (rc == CUDA_SUCCESS && (phEvent == NULL || (Flags & ~known) != 0))
    rc = CUDA_ERROR_INVALID_VALUE;
  struct fc_event *ev = NULL;
  if (rc == CUDA_SUCCESS && (ev = calloc(1, sizeof(*ev))) == NULL)
    rc = CUDA_ERROR_OUT_OF_MEMORY;
  if (rc == CUDA_SUCCESS) {
    ev->flags = Flags;
    fc_register(&ev->h, ev, FC_EVENT);
    *phEvent = (CUevent)ev;
  }
  FC_END(rc);
}

static CUresult event_record(CUevent e, CUstream hs, int ptsz)
{
  CUresult rc = fc_need_ctx();
  if (rc != CUDA_SUCCESS)
    return rc;
  struct fc_event *ev = (struct fc_event *)fc_lookup(e, FC_EVENT);
  struct fc_stream *st = fc_stream_resolve(hs, ptsz);
  if (ev == NULL || st == NULL)
    return CUDA_ERROR_INVALID_HANDLE;
  struct fc_capture *cap;
  rc = fc_stream_work(st, &cap);
  if (rc == CUDA_SUCCESS)
    ev->captured_in = cap != NULL ? cap->id : 0;
  return rc;
}

FC_EXPORT CUresult CUDAAPI cuEventRecord(CUevent hEvent, CUstream hStream)
{
  FC_BEGIN;
  FC_END(event_record(hEvent, hStream, 0));
}

FC_EXPORT CUresult CUDAAPI cuEventRecord_ptsz(CUevent hEvent, CUstream hStream)
{
  FC_BEGIN;
  FC_END(event_record(hEvent, hStream, 1));
}

/* Ground truth (event recorded before the capture): follows the prohibition rule.
 * An event last recorded inside a still-open capture cannot be waited on from the host. */
static CUresult event_wait(CUevent e)
{
  CUresult rc = fc_need_ctx();
  if (rc != CUDA_SUCCESS)
    return rc;
  struct fc_event *ev = (struct fc_event *)fc_lookup(e, FC_EVENT);
  if (ev == NULL)
    return CUDA_ERROR_INVALID_HANDLE;
  rc = fc_refuse_if_prohibited();
  if (rc == CUDA_SUCCESS && ev->captured_in != 0 && fc_capture_is_open(ev->captured_in))
    rc = CUDA_ERROR_CAPTURED_EVENT;
  return rc;
}

FC_EXPORT CUresult CUDAAPI cuEventQuery(CUevent hEvent)
{
  FC_BEGIN;
  FC_END(event_wait(hEvent));
}

FC_EXPORT CUresult CUDAAPI cuEventSynchronize(CUevent hEvent)
{
  FC_BEGIN;
  FC_END(event_wait(hEvent));
}

static CUresult event_destroy(CUevent e)
{
  CUresult rc = fc_need_ctx();
  if (rc != CUDA_SUCCESS)
    return rc;
  struct fc_event *ev = (struct fc_event *)fc_lookup(e, FC_EVENT);
  if (ev == NULL)
    return CUDA_ERROR_INVALID_HANDLE;
  fc_unregister(&ev->h);
  free(ev);
  return CUDA_SUCCESS;
}

FC_EXPORT CUresult CUDAAPI cuEventDestroy(CUevent hEvent)
{
  FC_BEGIN;
  FC_END(event_destroy(hEvent));
}

FC_EXPORT CUresult CUDAAPI cuEventDestroy_v2(CUevent hEvent)
{
  FC_BEGIN;
  FC_END(event_destroy(hEvent));
}
