/* fakecuda: ends the driver refuses, or makes for you, and a capturing stream that is
 * destroyed (measured on the H100, driver 580.159.04: tests/fakecuda/README.md, "Ends").
 *   - cuStreamEndCapture from a thread other than the one that began a GLOBAL or
 *     THREAD_LOCAL capture: 908 (CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD), and the capture
 *     is OVER (the stream no longer captures); the capturing thread's own end then gets
 *     401 (CUDA_ERROR_ILLEGAL_STATE). RELAXED: the other thread's end succeeds.
 *   - cuStreamEndCapture(stream, NULL): 0, and the capture is over (its graph discarded).
 *   - A thread that exits with its capture open: the capture stays open; another
 *     thread's end of it (after a prohibited call invalidated it) returns 901 and ends it.
 *   - cuStreamDestroy of a capturing stream: 0, and the capture is over. Any later call
 *     on the handle is undefined: cuStreamIsCapturing segfaulted, cuStreamEndCapture from
 *     the capturing thread segfaulted, from another thread returned 709. The fake keeps
 *     such a stream as a tombstone and aborts where the driver segfaulted, so that a test
 *     catches anyone (capguard) asking the driver about a stream after its destroy.
 * Kept apart from fake_capture.c so that each measured cell is one function here. */
#include "fake_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

CUresult fc_end_refused_or_made(struct fc_capture *c, CUgraph *phGraph, int *done)
{
  *done = 1;
  /* Invalidated: the end fails and ends it, whoever calls (measured with the capturing
   * thread gone; the order against the wrong-thread check is the fake's choice). */
  if (c->invalidated) {
    if (phGraph != NULL)
      *phGraph = NULL;
    fc_capture_close(c, 1);
    fc_logs_cause("Capture was invalidated by a prior API call");
    return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
  }
  if (c->mode != CU_STREAM_CAPTURE_MODE_RELAXED && c->owner != fc_tid()) {
    fc_logs_cause("CU_STREAM_CAPTURE_MODE_RELAXED is required to begin and end the capture on different threads");
    fc_capture_close(c, 1);   /* refused, and over all the same */
    return CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD;
  }
  if (phGraph == NULL) {
    fc_capture_close(c, 1);   /* success, with nowhere to put the graph */
    return CUDA_SUCCESS;
  }
  *done = 0;
  return CUDA_SUCCESS;
}

void fc_stream_destroy_capturing(struct fc_stream *st)
{
  st->destroyed_owner = st->cap->owner;
  fc_capture_close(st->cap, 1);
  st->h.alive = 0;            /* a tombstone: the address is never handed out again */
}

/* What a capture call on a stream handle that is no longer live does: 0 to carry on
 * (never a stream, or destroyed while idle: the caller answers INVALID_HANDLE). */
CUresult fc_destroyed_stream_call(CUstream hs, const char *call, int is_end)
{
  struct fc_stream *st = (struct fc_stream *)fc_lookup_any(hs, FC_STREAM);
  if (st == NULL || st->h.alive || st->destroyed_owner == 0)
    return CUDA_SUCCESS;
  if (is_end && st->destroyed_owner != fc_tid())
    return CUDA_ERROR_CONTEXT_IS_DESTROYED;   /* 709, as measured */
  fprintf(stderr, "fakecuda: %s on stream %p, destroyed while it captured: the real driver "
                  "segfaults here\n", call, (void *)hs);
  abort();
}
