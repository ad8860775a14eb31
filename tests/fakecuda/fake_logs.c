/* fakecuda: the driver's log callback (cuLogsRegisterCallback, drivers 12.9 and later).
 * Ground truth (third matrix): for every refusal the driver calls the callback
 * synchronously, on the thread that made the offending call, with that call on the stack.
 * The messages, in order: a cause line where the driver has one (906, 900 for a
 * prohibited thread, 907, 904, 908), then "Returning N (NAME) from CALL"; an end of an
 * invalidated capture logs "Capture was invalidated by a prior API call" and then
 * "Returning 901 (...) from cuStreamEndCapture". 905 and a refused cuGraphLaunch log
 * only the "Returning" line.
 * The fake calls the callbacks with its own lock held (fc_leave), the worst a real driver
 * may do: a callback that calls back into the driver deadlocks here, as it may there. */
#include "fake_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct CUlogsCallbackEntry_st {
  CUlogsCallback fn;
  void *data;
  struct CUlogsCallbackEntry_st *next;
};

static struct CUlogsCallbackEntry_st *callbacks;   /* under the fake's lock */
static _Thread_local const char *cause;

void fc_logs_cause(const char *c)
{
  cause = c;
}

static const char *error_name(CUresult rc)
{
  switch (rc) {
  case CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED: return "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED";
  case CUDA_ERROR_STREAM_CAPTURE_INVALIDATED: return "CUDA_ERROR_STREAM_CAPTURE_INVALIDATED";
  case CUDA_ERROR_STREAM_CAPTURE_MERGE: return "CUDA_ERROR_STREAM_CAPTURE_MERGE";
  case CUDA_ERROR_STREAM_CAPTURE_UNMATCHED: return "CUDA_ERROR_STREAM_CAPTURE_UNMATCHED";
  case CUDA_ERROR_STREAM_CAPTURE_UNJOINED: return "CUDA_ERROR_STREAM_CAPTURE_UNJOINED";
  case CUDA_ERROR_STREAM_CAPTURE_ISOLATION: return "CUDA_ERROR_STREAM_CAPTURE_ISOLATION";
  case CUDA_ERROR_STREAM_CAPTURE_IMPLICIT: return "CUDA_ERROR_STREAM_CAPTURE_IMPLICIT";
  case CUDA_ERROR_CAPTURED_EVENT: return "CUDA_ERROR_CAPTURED_EVENT";
  case CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD: return "CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD";
  default: return NULL;
  }
}

static void say(const char *msg)
{
  char buf[512];   /* the callback gets a writable copy, as from the real driver */
  size_t n = strlen(msg);
  if (n >= sizeof(buf))
    n = sizeof(buf) - 1;
  memcpy(buf, msg, n);
  buf[n] = '\0';
  for (struct CUlogsCallbackEntry_st *e = callbacks; e != NULL; e = e->next)
    e->fn(e->data, CU_LOG_LEVEL_ERROR, buf, n);
}

void fc_logs_emit(const char *call, CUresult rc)
{
  const char *c = cause;
  cause = NULL;
  const char *name = error_name(rc);
  if (callbacks == NULL || name == NULL)
    return;
  if (c != NULL)
    say(c);
  char line[256];
  snprintf(line, sizeof(line), "Returning %d (%s) from %s", (int)rc, name, call);
  say(line);
}

static int supported(void)
{
  return fc_env_driver_version() >= 12090;
}

FC_EXPORT CUresult CUDAAPI cuLogsRegisterCallback(CUlogsCallback callbackFunc, void *userData,
                                                  CUlogsCallbackHandle *callback_out)
{
  FC_BEGIN;
  CUresult rc = CUDA_SUCCESS;
  struct CUlogsCallbackEntry_st *e = NULL;
  if (!supported())
    rc = CUDA_ERROR_NOT_SUPPORTED;
  else if (callbackFunc == NULL)
    rc = CUDA_ERROR_INVALID_VALUE;
  else if ((e = calloc(1, sizeof(*e))) == NULL)
    rc = CUDA_ERROR_OUT_OF_MEMORY;
  if (rc == CUDA_SUCCESS) {
    e->fn = callbackFunc;
    e->data = userData;
    e->next = callbacks;
    callbacks = e;
    if (callback_out != NULL)
      *callback_out = e;
  }
  FC_END(rc);
}

FC_EXPORT CUresult CUDAAPI cuLogsUnregisterCallback(CUlogsCallbackHandle callback)
{
  FC_BEGIN;
  CUresult rc = supported() ? CUDA_ERROR_INVALID_VALUE : CUDA_ERROR_NOT_SUPPORTED;
  for (struct CUlogsCallbackEntry_st **p = &callbacks; supported() && *p != NULL; p = &(*p)->next) {
    if (*p == callback) {
      *p = callback->next;
      free(callback);
      rc = CUDA_SUCCESS;
      break;
    }
  }
  FC_END(rc);
}

/* Not a driver entry point: a test hook standing for a refusal by a call
 * capguard does not wrap (every open capture invalidated, 900 returned and
 * logged like any refusal), so that naming such calls through the driver's
 * log can be tested. Its cu prefix only gets it through the fake's export map. */
FC_EXPORT CUresult CUDAAPI cuFakeUnwatchedRefusal(void);
FC_EXPORT CUresult CUDAAPI cuFakeUnwatchedRefusal(void)
{
  FC_BEGIN;
  CUresult rc = CUDA_SUCCESS;
  for (struct fc_capture *c = fc_captures_head(); c != NULL; c = c->next) {
    fc_invalidate(c);
    rc = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  }
  if (rc != CUDA_SUCCESS)
    fc_logs_cause("API call conflicts with a stream capture sequence initiated from the calling thread");
  FC_END(rc);
}
