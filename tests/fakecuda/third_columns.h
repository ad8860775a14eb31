/* The third matrix's four columns (driver-semantics.md): the capturing stream's
 * flags and the capture's mode. Shared by the fake driver's tests of the matrix
 * (test_third.c) and of every copy and memset row (test_copies.c). */
#ifndef FAKECUDA_THIRD_COLUMNS_H
#define FAKECUDA_THIRD_COLUMNS_H

#include <cuda.h>

struct column {
  const char *name;
  unsigned stream_flags;
  CUstreamCaptureMode mode;
};
static const struct column columns[] = {
  { "blocking, global", 0, CU_STREAM_CAPTURE_MODE_GLOBAL },
  { "blocking, thread-local", 0, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL },
  { "blocking, relaxed", 0, CU_STREAM_CAPTURE_MODE_RELAXED },
  { "nonblock, global", CU_STREAM_NON_BLOCKING, CU_STREAM_CAPTURE_MODE_GLOBAL },
};
#define NCOLS ((int)(sizeof(columns) / sizeof(columns[0])))

#endif
