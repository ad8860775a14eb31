/* fakecuda: events — create, record, host waits (query, synchronize), stream waits,
 * destroy.
 * Ground truth: a host wait on an event recorded before the capture follows the
 * prohibition rule (first matrix); on an event last recorded into a capture that is still
 * open it answers CUDA_ERROR_CAPTURED_EVENT and invalidates that capture, in every mode
 * and from every thread (second matrix). A stream waiting on an event recorded in the
 * capture is allowed (the fake does not make that stream join the capture). */
#include "fake_internal.h"

#include <stdlib.h>
#include <string.h>

struct fc_event {
  struct fc_handle h;
  unsigned flags;
  uint64_t captured_in;   /* id of the capture it was last recorded in, 0 if none */
  int recorded;           /* ever recorded (a wait on a never-recorded event is a no-op) */
  struct fc_stream *rec_stream;   /* the stream of its last record, and that stream's */
  uint64_t rec_gen;               /* work generation then (joins: fake_fork.c) */
};

static struct fc_event *event_live(CUevent e) {
  return (struct fc_event *)fc_lookup(e, FC_EVENT);
}

/* Handle reuse: a destroyed event's handle is handed out again by the next
 * cuEventCreate, as drivers recycle their event objects (attack 2 of docs/reliability.md: a
 * new, never recorded event under the handle of one recorded into a capture). */
static struct fc_event *recycled;

static struct fc_event *event_new(void) {
  struct fc_event *ev = recycled;
  if (ev == NULL)
    return calloc(1, sizeof(*ev));
  recycled = *(struct fc_event **)ev;
  memset(ev, 0, sizeof(*ev));
  return ev;
}

static void event_recycle(struct fc_event *ev) {
  memset(ev, 0, sizeof(*ev));
  *(struct fc_event **)ev = recycled;
  recycled = ev;
}

FC_EXPORT CUresult CUDAAPI cuEventCreate(CUevent *phEvent, unsigned int Flags) {
  FC_BEGIN;
  CUresult rc = fc_need_ctx();
  unsigned known = CU_EVENT_BLOCKING_SYNC | CU_EVENT_DISABLE_TIMING | CU_EVENT_INTERPROCESS;
  if (rc == CUDA_SUCCESS && (phEvent == NULL || (Flags & ~known) != 0))
    rc = CUDA_ERROR_INVALID_VALUE;
  struct fc_event *ev = NULL;
  if (rc == CUDA_SUCCESS && (ev = event_new()) == NULL)
    rc = CUDA_ERROR_OUT_OF_MEMORY;
  if (rc == CUDA_SUCCESS) {
    ev->flags = Flags;
    fc_register(&ev->h, ev, FC_EVENT);
    *phEvent = (CUevent)ev;
  }
  FC_END(rc);
}

/* Into a capture, a record makes the event stand for the capture's current point (for
 * cross-stream waits) and, like the real driver, adds a node only when recorded with
 * CU_EVENT_RECORD_EXTERNAL. Either way the event is "last recorded in that capture"
 * until it is recorded again outside it. */
static CUresult event_record(CUevent e, CUstream hs, int ptsz, unsigned flags) {
  CUresult rc = fc_need_ctx();
  if (rc != CUDA_SUCCESS)
    return rc;
  struct fc_event *ev = event_live(e);
  struct fc_stream *st = fc_stream_resolve(hs, ptsz);
  if (ev == NULL || st == NULL)
    return CUDA_ERROR_INVALID_HANDLE;
  if ((flags & ~(unsigned)CU_EVENT_RECORD_EXTERNAL) != 0)
    return CUDA_ERROR_INVALID_VALUE;
  struct fc_capture *cap;
  if ((rc = fc_stream_work(st, &cap)) != CUDA_SUCCESS)
    return rc;
  if (cap != NULL && (flags & CU_EVENT_RECORD_EXTERNAL) &&
      fc_capture_add(cap, CU_GRAPH_NODE_TYPE_EVENT_RECORD) == NULL)
    return CUDA_ERROR_OUT_OF_MEMORY;
  if (cap == NULL)
    fc_hold_recorded(e, hs);
  ev->captured_in = cap != NULL ? cap->id : 0;
  ev->recorded = 1;
  ev->rec_stream = st;
  ev->rec_gen = st->gen;
  return CUDA_SUCCESS;
}

FC_EXPORT CUresult CUDAAPI cuEventRecord(CUevent hEvent, CUstream hStream) {
  FC_BEGIN;
  FC_END(event_record(hEvent, hStream, 0, CU_EVENT_RECORD_DEFAULT));
}

FC_EXPORT CUresult CUDAAPI cuEventRecord_ptsz(CUevent hEvent, CUstream hStream) {
  FC_BEGIN;
  FC_END(event_record(hEvent, hStream, 1, CU_EVENT_RECORD_DEFAULT));
}

FC_EXPORT CUresult CUDAAPI cuEventRecordWithFlags(CUevent hEvent, CUstream hStream, unsigned int flags) {
  FC_BEGIN;
  FC_END(event_record(hEvent, hStream, 0, flags));
}

FC_EXPORT CUresult CUDAAPI cuEventRecordWithFlags_ptsz(CUevent hEvent, CUstream hStream,
                                                      unsigned int flags) {
  FC_BEGIN;
  FC_END(event_record(hEvent, hStream, 1, flags));
}

static CUresult event_wait(CUevent e) {
  CUresult rc = fc_need_ctx();
  if (rc != CUDA_SUCCESS)
    return rc;
  struct fc_event *ev = event_live(e);
  if (ev == NULL)
    return CUDA_ERROR_INVALID_HANDLE;
  struct fc_capture *c = ev->captured_in != 0 ? fc_capture_find(ev->captured_in) : NULL;
  if (c != NULL) {
    fc_invalidate(c);
    return CUDA_ERROR_CAPTURED_EVENT;
  }
  return fc_refuse_if_prohibited();
}

FC_EXPORT CUresult CUDAAPI cuEventQuery(CUevent hEvent) {
  fc_query_delay();
  int held = fc_held(hEvent);
  FC_BEGIN;
  CUresult rc = event_wait(hEvent);
  FC_END(rc == CUDA_SUCCESS && held ? CUDA_ERROR_NOT_READY : rc);
}

FC_EXPORT CUresult CUDAAPI cuEventSynchronize(CUevent hEvent) {
  fc_sync_block();
  fc_hold_wait(hEvent);
  FC_BEGIN;
  FC_END(event_wait(hEvent));
}

/* The waiting stream, if capturing, gets a wait node only for CU_EVENT_WAIT_EXTERNAL.
 * Third matrix: a capturing stream waiting on an event recorded outside every open
 * capture (before it began) is refused with 905 and its capture invalidated; on an event
 * never recorded the wait is a no-op. A stream outside any capture that waits on an event
 * recorded in an active capture is forked into it; a stream of the capture waiting on an
 * event recorded on a forked stream after its last work joins that work back. */
static CUresult stream_wait_event(CUstream hs, int ptsz, CUevent e, unsigned flags) {
  CUresult rc = fc_need_ctx();
  if (rc != CUDA_SUCCESS)
    return rc;
  struct fc_stream *st = fc_stream_resolve(hs, ptsz);
  struct fc_event *ev = event_live(e);
  if (st == NULL || ev == NULL)
    return CUDA_ERROR_INVALID_HANDLE;
  if ((flags & ~(unsigned)CU_EVENT_WAIT_EXTERNAL) != 0)
    return CUDA_ERROR_INVALID_VALUE;
  /* A wait is not work of its own: it leaves a forked stream as joined as it was. */
  const int unjoined = st->unjoined;
  const uint64_t gen = st->gen;
  struct fc_capture *cap;
  rc = fc_stream_work(st, &cap);
  st->unjoined = unjoined;
  st->gen = gen;
  if (rc != CUDA_SUCCESS)
    return rc;
  struct fc_capture *from = ev->captured_in != 0 ? fc_capture_find(ev->captured_in) : NULL;
  if (cap != NULL && ev->recorded && from == NULL) {
    fc_invalidate(cap);
    return CUDA_ERROR_STREAM_CAPTURE_ISOLATION;
  }
  if (cap == NULL && from != NULL && !from->invalidated && st->special == 0) {
    st->cap = from;      /* forked into the capture */
    st->unjoined = 0;
    cap = from;
  } else if (cap != NULL && from == cap && ev->rec_stream != st &&
             fc_lookup(ev->rec_stream, FC_STREAM) != NULL && ev->rec_stream->cap == cap &&
             ev->rec_gen == ev->rec_stream->gen) {
    ev->rec_stream->unjoined = 0;   /* its work joined back */
  }
  if (cap != NULL && (flags & CU_EVENT_WAIT_EXTERNAL) &&
      fc_capture_add(cap, CU_GRAPH_NODE_TYPE_WAIT_EVENT) == NULL)
    return CUDA_ERROR_OUT_OF_MEMORY;
  return CUDA_SUCCESS;
}

FC_EXPORT CUresult CUDAAPI cuStreamWaitEvent(CUstream hStream, CUevent hEvent, unsigned int Flags) {
  FC_BEGIN;
  FC_END(stream_wait_event(hStream, 0, hEvent, Flags));
}

FC_EXPORT CUresult CUDAAPI cuStreamWaitEvent_ptsz(CUstream hStream, CUevent hEvent, unsigned int Flags) {
  FC_BEGIN;
  FC_END(stream_wait_event(hStream, 1, hEvent, Flags));
}

/* Allowed mid-capture (second matrix), also for an event recorded in the capture. */
static CUresult event_destroy(CUevent e) {
  CUresult rc = fc_need_ctx();
  if (rc != CUDA_SUCCESS)
    return rc;
  struct fc_event *ev = event_live(e);
  if (ev == NULL)
    return CUDA_ERROR_INVALID_HANDLE;
  fc_unregister(&ev->h);
  event_recycle(ev);
  return CUDA_SUCCESS;
}

FC_EXPORT CUresult CUDAAPI cuEventDestroy(CUevent hEvent) {
  FC_BEGIN;
  FC_END(event_destroy(hEvent));
}

FC_EXPORT CUresult CUDAAPI cuEventDestroy_v2(CUevent hEvent) {
  FC_BEGIN;
  FC_END(event_destroy(hEvent));
}
