/* fakecuda: names and descriptions of the result codes the fake can return (and a few
 * more that callers commonly print). */
#include "fake_internal.h"

struct fc_error { CUresult code; const char *name; const char *text; };

#define E(code, text) { code, #code, text }
static const struct fc_error errors[] = {
  E(CUDA_SUCCESS, "no error"),
  E(CUDA_ERROR_INVALID_VALUE, "invalid argument"),
  E(CUDA_ERROR_OUT_OF_MEMORY, "out of memory"),
  E(CUDA_ERROR_NOT_INITIALIZED, "initialization error"),
  E(CUDA_ERROR_DEINITIALIZED, "driver shutting down"),
  E(CUDA_ERROR_NO_DEVICE, "no CUDA-capable device is detected"),
  E(CUDA_ERROR_INVALID_DEVICE, "invalid device ordinal"),
  E(CUDA_ERROR_INVALID_IMAGE, "device kernel image is invalid"),
  E(CUDA_ERROR_INVALID_CONTEXT, "invalid device context"),
  E(CUDA_ERROR_NO_BINARY_FOR_GPU, "no kernel image is available for execution on the device"),
  E(CUDA_ERROR_INVALID_PTX, "a PTX JIT compilation failed"),
  E(CUDA_ERROR_INVALID_SOURCE, "device kernel image is invalid"),
  E(CUDA_ERROR_FILE_NOT_FOUND, "file not found"),
  E(CUDA_ERROR_INVALID_HANDLE, "invalid resource handle"),
  E(CUDA_ERROR_ILLEGAL_STATE, "the operation cannot be performed in the present state"),
  E(CUDA_ERROR_NOT_FOUND, "named symbol not found"),
  E(CUDA_ERROR_NOT_READY, "device not ready"),
  E(CUDA_ERROR_LAUNCH_FAILED, "unspecified launch failure"),
  E(CUDA_ERROR_NOT_PERMITTED, "operation not permitted"),
  E(CUDA_ERROR_NOT_SUPPORTED, "operation not supported"),
  E(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, "operation not permitted when stream is capturing"),
  E(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, "operation failed due to a previous error during capture"),
  E(CUDA_ERROR_STREAM_CAPTURE_MERGE, "operation would result in a merge of separate capture sequences"),
  E(CUDA_ERROR_STREAM_CAPTURE_UNMATCHED, "capture was not ended in the same stream as it began"),
  E(CUDA_ERROR_STREAM_CAPTURE_UNJOINED, "capturing stream has unjoined work"),
  E(CUDA_ERROR_STREAM_CAPTURE_ISOLATION, "dependency created on uncaptured work in another stream"),
  E(CUDA_ERROR_STREAM_CAPTURE_IMPLICIT, "operation would make the legacy stream depend on a capturing blocking stream"),
  E(CUDA_ERROR_CAPTURED_EVENT, "operation not permitted on an event last recorded in a capturing stream"),
  E(CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD, "attempt to terminate a thread-local capture sequence from another thread"),
  E(CUDA_ERROR_UNKNOWN, "unknown error"),
};
#undef E

static const struct fc_error *find(CUresult code)
{
  for (size_t i = 0; i < sizeof(errors) / sizeof(errors[0]); i++)
    if (errors[i].code == code)
      return &errors[i];
  return NULL;
}

FC_EXPORT CUresult CUDAAPI cuGetErrorName(CUresult error, const char **pStr)
{
  FC_BEGIN;
  const struct fc_error *e = find(error);
  CUresult rc = (pStr != NULL && e != NULL) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
  if (pStr != NULL)
    *pStr = e != NULL ? e->name : NULL;
  FC_END(rc);
}

FC_EXPORT CUresult CUDAAPI cuGetErrorString(CUresult error, const char **pStr)
{
  FC_BEGIN;
  const struct fc_error *e = find(error);
  CUresult rc = (pStr != NULL && e != NULL) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
  if (pStr != NULL)
    *pStr = e != NULL ? e->text : NULL;
  FC_END(rc);
}
