/* shim/route/copy_v1.h mirrors cuda.h's internal v1 copy structures: every
 * field at the same offset, the same size. Checked at compile time; the
 * program itself only says so. */
#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>
#include <stddef.h>
#include <stdio.h>

#include "copy_v1.h"

#define SAME(mine, theirs, f)                                                                      \
  _Static_assert(offsetof(mine, f) == offsetof(theirs, f), #mine "." #f " is not where cuda.h has it");
#define FIELDS_2D(X, m, t)                                                                         \
  X(m, t, srcXInBytes) X(m, t, srcY) X(m, t, srcMemoryType) X(m, t, srcHost) X(m, t, srcDevice)      \
  X(m, t, srcArray) X(m, t, srcPitch) X(m, t, dstXInBytes) X(m, t, dstY) X(m, t, dstMemoryType)      \
  X(m, t, dstHost) X(m, t, dstDevice) X(m, t, dstArray) X(m, t, dstPitch) X(m, t, WidthInBytes)      \
  X(m, t, Height)
#define FIELDS_3D(X, m, t)                                                                         \
  FIELDS_2D(X, m, t) X(m, t, srcZ) X(m, t, srcLOD) X(m, t, reserved0) X(m, t, srcHeight)             \
  X(m, t, dstZ) X(m, t, dstLOD) X(m, t, reserved1) X(m, t, dstHeight) X(m, t, Depth)
FIELDS_2D(SAME, cg_memcpy2d_v1, CUDA_MEMCPY2D_v1)
FIELDS_3D(SAME, cg_memcpy3d_v1, CUDA_MEMCPY3D_v1)
_Static_assert(sizeof(cg_memcpy2d_v1) == sizeof(CUDA_MEMCPY2D_v1), "cg_memcpy2d_v1's size");
_Static_assert(sizeof(cg_memcpy3d_v1) == sizeof(CUDA_MEMCPY3D_v1), "cg_memcpy3d_v1's size");

int main(void) {
  printf("copy_v1.h: the v1 copy structures match cuda.h (%zu and %zu bytes)\n", sizeof(CUDA_MEMCPY2D_v1),
         sizeof(CUDA_MEMCPY3D_v1));
  return 0;
}
