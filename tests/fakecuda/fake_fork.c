/* fakecuda: streams forked into a capture, and whether their work was joined back.
 * Ground truth (third matrix): a fork into a second stream (event record + cuStreamWaitEvent)
 * never joined back lets every call succeed, and cuStreamEndCapture returns 904
 * (CUDA_ERROR_STREAM_CAPTURE_UNJOINED). Second matrix: a stream that waited on an event of
 * the capture and did no work after it does not stop the capture from ending well. So a
 * forked stream is unjoined from its first piece of work until a stream of the capture
 * waits on an event recorded on it after that work (fake_event.c). */
#include "fake_internal.h"

void fc_fork_work(struct fc_stream *st)
{
  if (st->cap != NULL && st->cap->stream != st) {
    st->gen++;
    st->unjoined = 1;
  }
}

struct fork_scan {
  const struct fc_capture *c;
  int unjoined;
  int detach;
};

static void scan(struct fc_handle *h, void *arg)
{
  struct fc_stream *st = (struct fc_stream *)h;
  struct fork_scan *s = arg;
  if (st->cap != s->c || st == s->c->stream)
    return;
  if (st->unjoined)
    s->unjoined = 1;
  if (s->detach) {
    st->cap = NULL;
    st->unjoined = 0;
  }
}

CUresult fc_fork_check_end(const struct fc_capture *c)
{
  struct fork_scan s = { c, 0, 0 };
  fc_foreach(FC_STREAM, scan, &s);
  return s.unjoined ? CUDA_ERROR_STREAM_CAPTURE_UNJOINED : CUDA_SUCCESS;
}

void fc_fork_detach(const struct fc_capture *c)
{
  struct fork_scan s = { c, 0, 1 };
  fc_foreach(FC_STREAM, scan, &s);
}
