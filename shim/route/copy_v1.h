/* The 32-bit v1 copy structures (CUDA_MEMCPY2D_v1, CUDA_MEMCPY3D_v1), which
 * cuda.h declares only for NVIDIA's own build of the driver
 * (__CUDA_API_VERSION_INTERNAL): the v1 cuMemcpy2DAsync and cuMemcpy3DAsync
 * rows read their host sides from them (entry_point_rows.h, CG_HOST_ND).
 * The same layout field for field; tests/shim/check_copy_v1.c checks every
 * offset against cuda.h's own. */
#ifndef CAPGUARD_COPY_V1_H
#define CAPGUARD_COPY_V1_H

#include <cuda.h>

typedef struct {
  unsigned int srcXInBytes, srcY;
  CUmemorytype srcMemoryType;
  const void *srcHost;
  unsigned int srcDevice;
  CUarray srcArray;
  unsigned int srcPitch;
  unsigned int dstXInBytes, dstY;
  CUmemorytype dstMemoryType;
  void *dstHost;
  unsigned int dstDevice;
  CUarray dstArray;
  unsigned int dstPitch;
  unsigned int WidthInBytes, Height;
} cg_memcpy2d_v1;

typedef struct {
  unsigned int srcXInBytes, srcY, srcZ, srcLOD;
  CUmemorytype srcMemoryType;
  const void *srcHost;
  unsigned int srcDevice;
  CUarray srcArray;
  void *reserved0;
  unsigned int srcPitch, srcHeight;
  unsigned int dstXInBytes, dstY, dstZ, dstLOD;
  CUmemorytype dstMemoryType;
  void *dstHost;
  unsigned int dstDevice;
  CUarray dstArray;
  void *reserved1;
  unsigned int dstPitch, dstHeight;
  unsigned int WidthInBytes, Height, Depth;
} cg_memcpy3d_v1;

#endif
