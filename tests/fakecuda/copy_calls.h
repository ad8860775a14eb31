/* The copies and memsets of the third matrix's legacy-stream rule, each as a call
 * made on a prepared cell, shared by the fake's ground-truth test (test_copies.c) and
 * capguard's route test (tests/routes/copy_probe.c). Include it with
 * __CUDA_API_VERSION_INTERNAL defined before cuda.h: each call is made to the exported
 * name itself (cuMemcpyHtoD is the 32-bit v1 entry point here). */
#ifndef FAKECUDA_COPY_CALLS_H
#define FAKECUDA_COPY_CALLS_H

#include <cuda.h>
#include <stdint.h>
#include <string.h>

#define N 64

struct cell {
  CUcontext ctx;                 /* for the peer copies */
  CUstream stream;
  CUfunction add_one;
  CUdeviceptr mem, src;          /* device: zeroed, and filled with 0x11 */
  CUdeviceptr_v1 lo, lo_src;     /* the same below 4 GiB (v1 cuMemAlloc) */
  CUarray arr, arr_src;          /* arrays of N bytes: zeroed, and filled with 0x11 */
  unsigned char host_src[N];     /* pageable, 0x11 */
  unsigned char host_dst[N];     /* pageable, zeroed */
};

typedef CUresult (*copy_fn)(struct cell *c, CUstream s);

/* where a row writes */
enum { TO_MEM, TO_LO, TO_HOST, TO_ARR };

static CUDA_MEMCPY2D m2d(struct cell *c)
{
  CUDA_MEMCPY2D p;
  memset(&p, 0, sizeof(p));
  p.srcMemoryType = CU_MEMORYTYPE_HOST;
  p.srcHost = c->host_src;
  p.dstMemoryType = CU_MEMORYTYPE_DEVICE;
  p.dstDevice = c->mem;
  p.WidthInBytes = N;
  p.Height = 1;
  return p;
}
static CUDA_MEMCPY2D_v1 m2d_v1(struct cell *c)
{
  CUDA_MEMCPY2D_v1 p;
  memset(&p, 0, sizeof(p));
  p.srcMemoryType = CU_MEMORYTYPE_HOST;
  p.srcHost = c->host_src;
  p.dstMemoryType = CU_MEMORYTYPE_DEVICE;
  p.dstDevice = c->lo;
  p.WidthInBytes = N;
  p.Height = 1;
  return p;
}
static CUDA_MEMCPY3D m3d(struct cell *c)
{
  CUDA_MEMCPY3D p;
  memset(&p, 0, sizeof(p));
  p.srcMemoryType = CU_MEMORYTYPE_HOST;
  p.srcHost = c->host_src;
  p.dstMemoryType = CU_MEMORYTYPE_DEVICE;
  p.dstDevice = c->mem;
  p.WidthInBytes = N;
  p.Height = p.Depth = 1;
  return p;
}
static CUDA_MEMCPY3D_v1 m3d_v1(struct cell *c)
{
  CUDA_MEMCPY3D_v1 p;
  memset(&p, 0, sizeof(p));
  p.srcMemoryType = CU_MEMORYTYPE_HOST;
  p.srcHost = c->host_src;
  p.dstMemoryType = CU_MEMORYTYPE_DEVICE;
  p.dstDevice = c->lo;
  p.WidthInBytes = N;
  p.Height = p.Depth = 1;
  return p;
}
static CUDA_MEMCPY3D_PEER m3d_peer(struct cell *c)
{
  CUDA_MEMCPY3D_PEER p;
  memset(&p, 0, sizeof(p));
  p.srcMemoryType = CU_MEMORYTYPE_DEVICE;
  p.srcDevice = c->src;
  p.srcContext = c->ctx;
  p.dstMemoryType = CU_MEMORYTYPE_DEVICE;
  p.dstDevice = c->mem;
  p.dstContext = c->ctx;
  p.WidthInBytes = N;
  p.Height = p.Depth = 1;
  return p;
}

/* One function per entry point; s is the stream of the asynchronous ones. */
#define F(fn, body) static CUresult fn(struct cell *c, CUstream s) { (void)s; body }
/* synchronous, v2 */
F(s_memcpy, return cuMemcpy(c->mem, c->src, N);)
F(s_dtod_v2, return cuMemcpyDtoD_v2(c->mem, c->src, N);)
F(s_peer, return cuMemcpyPeer(c->mem, c->ctx, c->src, c->ctx, N);)
F(s_htoa_v2, return cuMemcpyHtoA_v2(c->arr, 0, c->host_src, N);)
F(s_atoh_v2, return cuMemcpyAtoH_v2(c->host_dst, c->arr_src, 0, N);)
F(s_dtoa_v2, return cuMemcpyDtoA_v2(c->arr, 0, c->src, N);)
F(s_atod_v2, return cuMemcpyAtoD_v2(c->mem, c->arr_src, 0, N);)
F(s_atoa_v2, return cuMemcpyAtoA_v2(c->arr, 0, c->arr_src, 0, N);)
F(s_2d_v2, CUDA_MEMCPY2D p = m2d(c); return cuMemcpy2D_v2(&p);)
F(s_2du_v2, CUDA_MEMCPY2D p = m2d(c); return cuMemcpy2DUnaligned_v2(&p);)
F(s_3d_v2, CUDA_MEMCPY3D p = m3d(c); return cuMemcpy3D_v2(&p);)
F(s_3dpeer, CUDA_MEMCPY3D_PEER p = m3d_peer(c); return cuMemcpy3DPeer(&p);)
F(s_d16_v2, return cuMemsetD16_v2(c->mem, 0x1111, N / 2);)
F(s_d32_v2, return cuMemsetD32_v2(c->mem, 0x11111111u, N / 4);)
F(s_d2d8_v2, return cuMemsetD2D8_v2(c->mem, N, 0x11, N, 1);)
F(s_d2d16_v2, return cuMemsetD2D16_v2(c->mem, N, 0x1111, N / 2, 1);)
F(s_d2d32_v2, return cuMemsetD2D32_v2(c->mem, N, 0x11111111u, N / 4, 1);)
/* synchronous, v1 */
F(s_htod, return cuMemcpyHtoD(c->lo, c->host_src, N);)
F(s_dtoh, return cuMemcpyDtoH(c->host_dst, c->lo_src, N);)
F(s_dtod, return cuMemcpyDtoD(c->lo, c->lo_src, N);)
F(s_htoa, return cuMemcpyHtoA(c->arr, 0, c->host_src, N);)
F(s_atoh, return cuMemcpyAtoH(c->host_dst, c->arr_src, 0, N);)
F(s_dtoa, return cuMemcpyDtoA(c->arr, 0, c->lo_src, N);)
F(s_atod, return cuMemcpyAtoD(c->lo, c->arr_src, 0, N);)
F(s_atoa, return cuMemcpyAtoA(c->arr, 0, c->arr_src, 0, N);)
F(s_2d, CUDA_MEMCPY2D_v1 p = m2d_v1(c); return cuMemcpy2D(&p);)
F(s_2du, CUDA_MEMCPY2D_v1 p = m2d_v1(c); return cuMemcpy2DUnaligned(&p);)
F(s_3d, CUDA_MEMCPY3D_v1 p = m3d_v1(c); return cuMemcpy3D(&p);)
F(s_d8, return cuMemsetD8(c->lo, 0x11, N);)
F(s_d16, return cuMemsetD16(c->lo, 0x1111, N / 2);)
F(s_d32, return cuMemsetD32(c->lo, 0x11111111u, N / 4);)
F(s_d2d8, return cuMemsetD2D8(c->lo, N, 0x11, N, 1);)
F(s_d2d16, return cuMemsetD2D16(c->lo, N, 0x1111, N / 2, 1);)
F(s_d2d32, return cuMemsetD2D32(c->lo, N, 0x11111111u, N / 4, 1);)
/* asynchronous (x: the _ptsz form) */
F(a_memcpy, return cuMemcpyAsync(c->mem, c->src, N, s);)
F(a_memcpy_x, return cuMemcpyAsync_ptsz(c->mem, c->src, N, s);)
F(a_memcpy_host, return cuMemcpyAsync(c->mem, (CUdeviceptr)(uintptr_t)c->host_src, N, s);)
F(a_dtoh_v2, return cuMemcpyDtoHAsync_v2(c->host_dst, c->src, N, s);)
F(a_dtoh_v2_x, return cuMemcpyDtoHAsync_v2_ptsz(c->host_dst, c->src, N, s);)
F(a_dtod_v2, return cuMemcpyDtoDAsync_v2(c->mem, c->src, N, s);)
F(a_dtod_v2_x, return cuMemcpyDtoDAsync_v2_ptsz(c->mem, c->src, N, s);)
F(a_peer, return cuMemcpyPeerAsync(c->mem, c->ctx, c->src, c->ctx, N, s);)
F(a_peer_x, return cuMemcpyPeerAsync_ptsz(c->mem, c->ctx, c->src, c->ctx, N, s);)
F(a_htoa_v2, return cuMemcpyHtoAAsync_v2(c->arr, 0, c->host_src, N, s);)
F(a_htoa_v2_x, return cuMemcpyHtoAAsync_v2_ptsz(c->arr, 0, c->host_src, N, s);)
F(a_atoh_v2, return cuMemcpyAtoHAsync_v2(c->host_dst, c->arr_src, 0, N, s);)
F(a_atoh_v2_x, return cuMemcpyAtoHAsync_v2_ptsz(c->host_dst, c->arr_src, 0, N, s);)
F(a_2d_v2, CUDA_MEMCPY2D p = m2d(c); return cuMemcpy2DAsync_v2(&p, s);)
F(a_2d_v2_x, CUDA_MEMCPY2D p = m2d(c); return cuMemcpy2DAsync_v2_ptsz(&p, s);)
F(a_3d_v2, CUDA_MEMCPY3D p = m3d(c); return cuMemcpy3DAsync_v2(&p, s);)
F(a_3d_v2_x, CUDA_MEMCPY3D p = m3d(c); return cuMemcpy3DAsync_v2_ptsz(&p, s);)
F(a_3dpeer, CUDA_MEMCPY3D_PEER p = m3d_peer(c); return cuMemcpy3DPeerAsync(&p, s);)
F(a_3dpeer_x, CUDA_MEMCPY3D_PEER p = m3d_peer(c); return cuMemcpy3DPeerAsync_ptsz(&p, s);)
F(a_d8, return cuMemsetD8Async(c->mem, 0x11, N, s);)
F(a_d8_x, return cuMemsetD8Async_ptsz(c->mem, 0x11, N, s);)
F(a_d16, return cuMemsetD16Async(c->mem, 0x1111, N / 2, s);)
F(a_d16_x, return cuMemsetD16Async_ptsz(c->mem, 0x1111, N / 2, s);)
F(a_d32, return cuMemsetD32Async(c->mem, 0x11111111u, N / 4, s);)
F(a_d32_x, return cuMemsetD32Async_ptsz(c->mem, 0x11111111u, N / 4, s);)
F(a_d2d8, return cuMemsetD2D8Async(c->mem, N, 0x11, N, 1, s);)
F(a_d2d8_x, return cuMemsetD2D8Async_ptsz(c->mem, N, 0x11, N, 1, s);)
F(a_d2d16, return cuMemsetD2D16Async(c->mem, N, 0x1111, N / 2, 1, s);)
F(a_d2d16_x, return cuMemsetD2D16Async_ptsz(c->mem, N, 0x1111, N / 2, 1, s);)
F(a_d2d32, return cuMemsetD2D32Async(c->mem, N, 0x11111111u, N / 4, 1, s);)
F(a_d2d32_x, return cuMemsetD2D32Async_ptsz(c->mem, N, 0x11111111u, N / 4, 1, s);)
/* asynchronous v1 */
F(a_htod1, return cuMemcpyHtoDAsync(c->lo, c->host_src, N, s);)
F(a_dtoh1, return cuMemcpyDtoHAsync(c->host_dst, c->lo_src, N, s);)
F(a_dtod1, return cuMemcpyDtoDAsync(c->lo, c->lo_src, N, s);)
F(a_htoa1, return cuMemcpyHtoAAsync(c->arr, 0, c->host_src, N, s);)
F(a_atoh1, return cuMemcpyAtoHAsync(c->host_dst, c->arr_src, 0, N, s);)
F(a_2d1, CUDA_MEMCPY2D_v1 p = m2d_v1(c); return cuMemcpy2DAsync(&p, s);)
F(a_3d1, CUDA_MEMCPY3D_v1 p = m3d_v1(c); return cuMemcpy3DAsync(&p, s);)

/* S: synchronous; A: asynchronous (non-_ptsz; also tried on the capturing stream);
 * X: a _ptsz form (tried on CU_STREAM_LEGACY, on the capturing stream and on 0). */
struct row {
  const char *name;       /* the exported name, then what is special about the row */
  copy_fn call;
  char how;
  int where;
  CUgraphNodeType node;   /* what a capture of it holds */
  int pageable;           /* on a capturing stream: a copy with a pageable host side that
                             capguard reports (pageable-copy) */
};
#define CP CU_GRAPH_NODE_TYPE_MEMCPY
#define MS CU_GRAPH_NODE_TYPE_MEMSET
static const struct row rows[] = {
  { "cuMemcpy", s_memcpy, 'S', TO_MEM, CP, 0 },
  { "cuMemcpyDtoD_v2", s_dtod_v2, 'S', TO_MEM, CP, 0 },
  { "cuMemcpyPeer", s_peer, 'S', TO_MEM, CP, 0 },
  { "cuMemcpyHtoA_v2", s_htoa_v2, 'S', TO_ARR, CP, 0 },
  { "cuMemcpyAtoH_v2", s_atoh_v2, 'S', TO_HOST, CP, 0 },
  { "cuMemcpyDtoA_v2", s_dtoa_v2, 'S', TO_ARR, CP, 0 },
  { "cuMemcpyAtoD_v2", s_atod_v2, 'S', TO_MEM, CP, 0 },
  { "cuMemcpyAtoA_v2", s_atoa_v2, 'S', TO_ARR, CP, 0 },
  { "cuMemcpy2D_v2", s_2d_v2, 'S', TO_MEM, CP, 0 },
  { "cuMemcpy2DUnaligned_v2", s_2du_v2, 'S', TO_MEM, CP, 0 },
  { "cuMemcpy3D_v2", s_3d_v2, 'S', TO_MEM, CP, 0 },
  { "cuMemcpy3DPeer", s_3dpeer, 'S', TO_MEM, CP, 0 },
  { "cuMemsetD16_v2", s_d16_v2, 'S', TO_MEM, MS, 0 },
  { "cuMemsetD32_v2", s_d32_v2, 'S', TO_MEM, MS, 0 },
  { "cuMemsetD2D8_v2", s_d2d8_v2, 'S', TO_MEM, MS, 0 },
  { "cuMemsetD2D16_v2", s_d2d16_v2, 'S', TO_MEM, MS, 0 },
  { "cuMemsetD2D32_v2", s_d2d32_v2, 'S', TO_MEM, MS, 0 },
  { "cuMemcpyHtoD (v1)", s_htod, 'S', TO_LO, CP, 0 },
  { "cuMemcpyDtoH (v1)", s_dtoh, 'S', TO_HOST, CP, 0 },
  { "cuMemcpyDtoD (v1)", s_dtod, 'S', TO_LO, CP, 0 },
  { "cuMemcpyHtoA (v1)", s_htoa, 'S', TO_ARR, CP, 0 },
  { "cuMemcpyAtoH (v1)", s_atoh, 'S', TO_HOST, CP, 0 },
  { "cuMemcpyDtoA (v1)", s_dtoa, 'S', TO_ARR, CP, 0 },
  { "cuMemcpyAtoD (v1)", s_atod, 'S', TO_LO, CP, 0 },
  { "cuMemcpyAtoA (v1)", s_atoa, 'S', TO_ARR, CP, 0 },
  { "cuMemcpy2D (v1)", s_2d, 'S', TO_LO, CP, 0 },
  { "cuMemcpy2DUnaligned (v1)", s_2du, 'S', TO_LO, CP, 0 },
  { "cuMemcpy3D (v1)", s_3d, 'S', TO_LO, CP, 0 },
  { "cuMemsetD8 (v1)", s_d8, 'S', TO_LO, MS, 0 },
  { "cuMemsetD16 (v1)", s_d16, 'S', TO_LO, MS, 0 },
  { "cuMemsetD32 (v1)", s_d32, 'S', TO_LO, MS, 0 },
  { "cuMemsetD2D8 (v1)", s_d2d8, 'S', TO_LO, MS, 0 },
  { "cuMemsetD2D16 (v1)", s_d2d16, 'S', TO_LO, MS, 0 },
  { "cuMemsetD2D32 (v1)", s_d2d32, 'S', TO_LO, MS, 0 },
  { "cuMemcpyAsync", a_memcpy, 'A', TO_MEM, CP, 0 },
  { "cuMemcpyAsync_ptsz", a_memcpy_x, 'X', TO_MEM, CP, 0 },
  { "cuMemcpyAsync from a host pointer", a_memcpy_host, 'A', TO_MEM, CP, 1 },
  { "cuMemcpyDtoHAsync_v2", a_dtoh_v2, 'A', TO_HOST, CP, 1 },
  { "cuMemcpyDtoHAsync_v2_ptsz", a_dtoh_v2_x, 'X', TO_HOST, CP, 1 },
  { "cuMemcpyDtoDAsync_v2", a_dtod_v2, 'A', TO_MEM, CP, 0 },
  { "cuMemcpyDtoDAsync_v2_ptsz", a_dtod_v2_x, 'X', TO_MEM, CP, 0 },
  { "cuMemcpyPeerAsync", a_peer, 'A', TO_MEM, CP, 0 },
  { "cuMemcpyPeerAsync_ptsz", a_peer_x, 'X', TO_MEM, CP, 0 },
  { "cuMemcpyHtoAAsync_v2", a_htoa_v2, 'A', TO_ARR, CP, 1 },
  { "cuMemcpyHtoAAsync_v2_ptsz", a_htoa_v2_x, 'X', TO_ARR, CP, 1 },
  { "cuMemcpyAtoHAsync_v2", a_atoh_v2, 'A', TO_HOST, CP, 1 },
  { "cuMemcpyAtoHAsync_v2_ptsz", a_atoh_v2_x, 'X', TO_HOST, CP, 1 },
  { "cuMemcpy2DAsync_v2", a_2d_v2, 'A', TO_MEM, CP, 1 },
  { "cuMemcpy2DAsync_v2_ptsz", a_2d_v2_x, 'X', TO_MEM, CP, 1 },
  { "cuMemcpy3DAsync_v2", a_3d_v2, 'A', TO_MEM, CP, 1 },
  { "cuMemcpy3DAsync_v2_ptsz", a_3d_v2_x, 'X', TO_MEM, CP, 1 },
  { "cuMemcpy3DPeerAsync", a_3dpeer, 'A', TO_MEM, CP, 0 },
  { "cuMemcpy3DPeerAsync_ptsz", a_3dpeer_x, 'X', TO_MEM, CP, 0 },
  { "cuMemsetD8Async", a_d8, 'A', TO_MEM, MS, 0 },
  { "cuMemsetD8Async_ptsz", a_d8_x, 'X', TO_MEM, MS, 0 },
  { "cuMemsetD16Async", a_d16, 'A', TO_MEM, MS, 0 },
  { "cuMemsetD16Async_ptsz", a_d16_x, 'X', TO_MEM, MS, 0 },
  { "cuMemsetD32Async", a_d32, 'A', TO_MEM, MS, 0 },
  { "cuMemsetD32Async_ptsz", a_d32_x, 'X', TO_MEM, MS, 0 },
  { "cuMemsetD2D8Async", a_d2d8, 'A', TO_MEM, MS, 0 },
  { "cuMemsetD2D8Async_ptsz", a_d2d8_x, 'X', TO_MEM, MS, 0 },
  { "cuMemsetD2D16Async", a_d2d16, 'A', TO_MEM, MS, 0 },
  { "cuMemsetD2D16Async_ptsz", a_d2d16_x, 'X', TO_MEM, MS, 0 },
  { "cuMemsetD2D32Async", a_d2d32, 'A', TO_MEM, MS, 0 },
  { "cuMemsetD2D32Async_ptsz", a_d2d32_x, 'X', TO_MEM, MS, 0 },
  { "cuMemcpyHtoDAsync (v1)", a_htod1, 'A', TO_LO, CP, 1 },
  { "cuMemcpyDtoHAsync (v1)", a_dtoh1, 'A', TO_HOST, CP, 1 },
  { "cuMemcpyDtoDAsync (v1)", a_dtod1, 'A', TO_LO, CP, 0 },
  { "cuMemcpyHtoAAsync (v1)", a_htoa1, 'A', TO_ARR, CP, 1 },
  { "cuMemcpyAtoHAsync (v1)", a_atoh1, 'A', TO_HOST, CP, 1 },
  { "cuMemcpy2DAsync (v1)", a_2d1, 'A', TO_LO, CP, 1 },
  { "cuMemcpy3DAsync (v1)", a_3d1, 'A', TO_LO, CP, 1 },
};
#define NROWS ((int)(sizeof(rows) / sizeof(rows[0])))

/* The cell: memory, arrays and a stream with flags; 0 when all went well. */
static inline CUresult copy_cell_setup(struct cell *c, CUcontext ctx, unsigned flags)
{
  memset(c, 0, sizeof(*c));
  c->ctx = ctx;
  memset(c->host_src, 0x11, N);
  CUDA_ARRAY_DESCRIPTOR d = { .Width = N, .Height = 1, .Format = CU_AD_FORMAT_UNSIGNED_INT8, .NumChannels = 1 };
  CUresult rc = cuStreamCreate(&c->stream, flags);
  if (rc == CUDA_SUCCESS) rc = cuMemAlloc_v2(&c->mem, N);
  if (rc == CUDA_SUCCESS) rc = cuMemAlloc_v2(&c->src, N);
  if (rc == CUDA_SUCCESS) rc = cuMemAlloc(&c->lo, N);
  if (rc == CUDA_SUCCESS) rc = cuMemAlloc(&c->lo_src, N);
  if (rc == CUDA_SUCCESS) rc = cuArrayCreate_v2(&c->arr, &d);
  if (rc == CUDA_SUCCESS) rc = cuArrayCreate_v2(&c->arr_src, &d);
  if (rc == CUDA_SUCCESS) rc = cuMemcpyHtoD_v2(c->src, c->host_src, N);
  if (rc == CUDA_SUCCESS) rc = cuMemcpyHtoD_v2((CUdeviceptr)c->lo_src, c->host_src, N);
  if (rc == CUDA_SUCCESS) rc = cuMemcpyHtoA_v2(c->arr_src, 0, c->host_src, N);
  return rc;
}

/* The row named name (its first word), or NULL. */
static inline const struct row *copy_row(const char *name)
{
  for (int i = 0; i < NROWS; i++)
    if (strcmp(rows[i].name, name) == 0)
      return &rows[i];
  return NULL;
}

#endif
