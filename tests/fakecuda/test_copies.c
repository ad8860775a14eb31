/* fakecuda: every copy and memset entry point against the third matrix's legacy-stream
 * rule (capture-semantics.md), cell by cell, in the four columns of test_third.c:
 * - a synchronous copy or memset (v2 and the 32-bit v1 forms), and an asynchronous one
 *   on the legacy stream (NULL, or CU_STREAM_LEGACY for a _ptsz form): 906 and the
 *   capture invalidated while a blocking stream captures, every mode; run at once,
 *   outside the graph, while only a non-blocking one does;
 * - an asynchronous one on the capturing stream: captured (a memcpy or memset node, not
 *   run now), every column;
 * - a _ptsz form on stream 0 (the per-thread stream): neither refused nor captured.
 * Each row's work leaves 0x11 bytes where it writes (device memory, host memory or an
 * array), so a cell also says whether it ran now. This file calls the exported names
 * themselves (cuda.h's internal prototypes: cuMemcpyHtoD is the v1 entry point here). */
#define __CUDA_API_VERSION_INTERNAL 1
#include "test_util.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define N 64

struct cell {
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
  p.srcContext = test_ctx;
  p.dstMemoryType = CU_MEMORYTYPE_DEVICE;
  p.dstDevice = c->mem;
  p.dstContext = test_ctx;
  p.WidthInBytes = N;
  p.Height = p.Depth = 1;
  return p;
}

/* One function per entry point; s is the stream of the asynchronous ones. */
#define F(fn, body) static CUresult fn(struct cell *c, CUstream s) { (void)s; body }
/* synchronous, v2 */
F(s_memcpy, return cuMemcpy(c->mem, c->src, N);)
F(s_dtod_v2, return cuMemcpyDtoD_v2(c->mem, c->src, N);)
F(s_peer, return cuMemcpyPeer(c->mem, test_ctx, c->src, test_ctx, N);)
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
F(a_peer, return cuMemcpyPeerAsync(c->mem, test_ctx, c->src, test_ctx, N, s);)
F(a_peer_x, return cuMemcpyPeerAsync_ptsz(c->mem, test_ctx, c->src, test_ctx, N, s);)
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
  const char *name;
  copy_fn call;
  char how;
  int where;
  CUgraphNodeType node;   /* what a capture of it holds */
};
#define CP CU_GRAPH_NODE_TYPE_MEMCPY
#define MS CU_GRAPH_NODE_TYPE_MEMSET
static const struct row rows[] = {
  { "cuMemcpy", s_memcpy, 'S', TO_MEM, CP },
  { "cuMemcpyDtoD_v2", s_dtod_v2, 'S', TO_MEM, CP },
  { "cuMemcpyPeer", s_peer, 'S', TO_MEM, CP },
  { "cuMemcpyHtoA_v2", s_htoa_v2, 'S', TO_ARR, CP },
  { "cuMemcpyAtoH_v2", s_atoh_v2, 'S', TO_HOST, CP },
  { "cuMemcpyDtoA_v2", s_dtoa_v2, 'S', TO_ARR, CP },
  { "cuMemcpyAtoD_v2", s_atod_v2, 'S', TO_MEM, CP },
  { "cuMemcpyAtoA_v2", s_atoa_v2, 'S', TO_ARR, CP },
  { "cuMemcpy2D_v2", s_2d_v2, 'S', TO_MEM, CP },
  { "cuMemcpy2DUnaligned_v2", s_2du_v2, 'S', TO_MEM, CP },
  { "cuMemcpy3D_v2", s_3d_v2, 'S', TO_MEM, CP },
  { "cuMemcpy3DPeer", s_3dpeer, 'S', TO_MEM, CP },
  { "cuMemsetD16_v2", s_d16_v2, 'S', TO_MEM, MS },
  { "cuMemsetD32_v2", s_d32_v2, 'S', TO_MEM, MS },
  { "cuMemsetD2D8_v2", s_d2d8_v2, 'S', TO_MEM, MS },
  { "cuMemsetD2D16_v2", s_d2d16_v2, 'S', TO_MEM, MS },
  { "cuMemsetD2D32_v2", s_d2d32_v2, 'S', TO_MEM, MS },
  { "cuMemcpyHtoD (v1)", s_htod, 'S', TO_LO, CP },
  { "cuMemcpyDtoH (v1)", s_dtoh, 'S', TO_HOST, CP },
  { "cuMemcpyDtoD (v1)", s_dtod, 'S', TO_LO, CP },
  { "cuMemcpyHtoA (v1)", s_htoa, 'S', TO_ARR, CP },
  { "cuMemcpyAtoH (v1)", s_atoh, 'S', TO_HOST, CP },
  { "cuMemcpyDtoA (v1)", s_dtoa, 'S', TO_ARR, CP },
  { "cuMemcpyAtoD (v1)", s_atod, 'S', TO_LO, CP },
  { "cuMemcpyAtoA (v1)", s_atoa, 'S', TO_ARR, CP },
  { "cuMemcpy2D (v1)", s_2d, 'S', TO_LO, CP },
  { "cuMemcpy2DUnaligned (v1)", s_2du, 'S', TO_LO, CP },
  { "cuMemcpy3D (v1)", s_3d, 'S', TO_LO, CP },
  { "cuMemsetD8 (v1)", s_d8, 'S', TO_LO, MS },
  { "cuMemsetD16 (v1)", s_d16, 'S', TO_LO, MS },
  { "cuMemsetD32 (v1)", s_d32, 'S', TO_LO, MS },
  { "cuMemsetD2D8 (v1)", s_d2d8, 'S', TO_LO, MS },
  { "cuMemsetD2D16 (v1)", s_d2d16, 'S', TO_LO, MS },
  { "cuMemsetD2D32 (v1)", s_d2d32, 'S', TO_LO, MS },
  { "cuMemcpyAsync", a_memcpy, 'A', TO_MEM, CP },
  { "cuMemcpyAsync_ptsz", a_memcpy_x, 'X', TO_MEM, CP },
  { "cuMemcpyAsync from a host pointer", a_memcpy_host, 'A', TO_MEM, CP },
  { "cuMemcpyDtoHAsync_v2", a_dtoh_v2, 'A', TO_HOST, CP },
  { "cuMemcpyDtoHAsync_v2_ptsz", a_dtoh_v2_x, 'X', TO_HOST, CP },
  { "cuMemcpyDtoDAsync_v2", a_dtod_v2, 'A', TO_MEM, CP },
  { "cuMemcpyDtoDAsync_v2_ptsz", a_dtod_v2_x, 'X', TO_MEM, CP },
  { "cuMemcpyPeerAsync", a_peer, 'A', TO_MEM, CP },
  { "cuMemcpyPeerAsync_ptsz", a_peer_x, 'X', TO_MEM, CP },
  { "cuMemcpyHtoAAsync_v2", a_htoa_v2, 'A', TO_ARR, CP },
  { "cuMemcpyHtoAAsync_v2_ptsz", a_htoa_v2_x, 'X', TO_ARR, CP },
  { "cuMemcpyAtoHAsync_v2", a_atoh_v2, 'A', TO_HOST, CP },
  { "cuMemcpyAtoHAsync_v2_ptsz", a_atoh_v2_x, 'X', TO_HOST, CP },
  { "cuMemcpy2DAsync_v2", a_2d_v2, 'A', TO_MEM, CP },
  { "cuMemcpy2DAsync_v2_ptsz", a_2d_v2_x, 'X', TO_MEM, CP },
  { "cuMemcpy3DAsync_v2", a_3d_v2, 'A', TO_MEM, CP },
  { "cuMemcpy3DAsync_v2_ptsz", a_3d_v2_x, 'X', TO_MEM, CP },
  { "cuMemcpy3DPeerAsync", a_3dpeer, 'A', TO_MEM, CP },
  { "cuMemcpy3DPeerAsync_ptsz", a_3dpeer_x, 'X', TO_MEM, CP },
  { "cuMemsetD8Async", a_d8, 'A', TO_MEM, MS },
  { "cuMemsetD8Async_ptsz", a_d8_x, 'X', TO_MEM, MS },
  { "cuMemsetD16Async", a_d16, 'A', TO_MEM, MS },
  { "cuMemsetD16Async_ptsz", a_d16_x, 'X', TO_MEM, MS },
  { "cuMemsetD32Async", a_d32, 'A', TO_MEM, MS },
  { "cuMemsetD32Async_ptsz", a_d32_x, 'X', TO_MEM, MS },
  { "cuMemsetD2D8Async", a_d2d8, 'A', TO_MEM, MS },
  { "cuMemsetD2D8Async_ptsz", a_d2d8_x, 'X', TO_MEM, MS },
  { "cuMemsetD2D16Async", a_d2d16, 'A', TO_MEM, MS },
  { "cuMemsetD2D16Async_ptsz", a_d2d16_x, 'X', TO_MEM, MS },
  { "cuMemsetD2D32Async", a_d2d32, 'A', TO_MEM, MS },
  { "cuMemsetD2D32Async_ptsz", a_d2d32_x, 'X', TO_MEM, MS },
  { "cuMemcpyHtoDAsync (v1)", a_htod1, 'A', TO_LO, CP },
  { "cuMemcpyDtoHAsync (v1)", a_dtoh1, 'A', TO_HOST, CP },
  { "cuMemcpyDtoDAsync (v1)", a_dtod1, 'A', TO_LO, CP },
  { "cuMemcpyHtoAAsync (v1)", a_htoa1, 'A', TO_ARR, CP },
  { "cuMemcpyAtoHAsync (v1)", a_atoh1, 'A', TO_HOST, CP },
  { "cuMemcpy2DAsync (v1)", a_2d1, 'A', TO_LO, CP },
  { "cuMemcpy3DAsync (v1)", a_3d1, 'A', TO_LO, CP },
};
#define NROWS ((int)(sizeof(rows) / sizeof(rows[0])))

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
/* Where a row's call is made: the legacy stream, the capturing stream, stream 0 of a
 * _ptsz form (the per-thread stream), and the legacy stream from a second thread. */
enum place { LEGACY, CAPTURING, PER_THREAD, LEGACY_OTHER, NPLACES };
static const char *const place_names[] = { "legacy stream", "capturing stream", "stream 0 of _ptsz",
                                           "legacy stream, another thread" };

static const unsigned char zero[N];

static void setup_cell(struct cell *c, unsigned flags, CUmodule *m)
{
  memset(c, 0, sizeof(*c));
  *m = test_load_module("kernels_sm90.cubin");
  CU_OK(cuModuleGetFunction(&c->add_one, *m, "fake_add_one"));
  CU_OK(cuStreamCreate(&c->stream, flags));
  CU_OK(cuMemAlloc_v2(&c->mem, N));
  CU_OK(cuMemAlloc_v2(&c->src, N));
  CU_OK(cuMemAlloc(&c->lo, N));
  CU_OK(cuMemAlloc(&c->lo_src, N));
  CUDA_ARRAY_DESCRIPTOR d = { .Width = N, .Height = 1, .Format = CU_AD_FORMAT_UNSIGNED_INT8, .NumChannels = 1 };
  CU_OK(cuArrayCreate_v2(&c->arr, &d));
  CU_OK(cuArrayCreate_v2(&c->arr_src, &d));
  memset(c->host_src, 0x11, N);
  CU_OK(cuMemcpyHtoD_v2(c->src, c->host_src, N));
  CU_OK(cuMemcpyHtoD_v2((CUdeviceptr)c->lo_src, c->host_src, N));
  CU_OK(cuMemcpyHtoA_v2(c->arr_src, 0, c->host_src, N));
}

static void cleanup_cell(struct cell *c, CUmodule m)
{
  CU_OK(cuArrayDestroy(c->arr));
  CU_OK(cuArrayDestroy(c->arr_src));
  CU_OK(cuMemFree(c->lo));
  CU_OK(cuMemFree(c->lo_src));
  CU_OK(cuMemFree_v2(c->mem));
  CU_OK(cuMemFree_v2(c->src));
  CU_OK(cuStreamDestroy_v2(c->stream));
  CU_OK(cuModuleUnload(m));
}

/* Whether the row's work ran: 0x11 where it writes, or still zero. */
static int ran(struct cell *c, int where, const char *what)
{
  unsigned char back[N];
  switch (where) {
  case TO_MEM: CU_OK(cuMemcpyDtoH_v2(back, c->mem, N)); break;
  case TO_LO: CU_OK(cuMemcpyDtoH_v2(back, (CUdeviceptr)c->lo, N)); break;
  case TO_ARR: CU_OK(cuMemcpyAtoH_v2(back, c->arr, 0, N)); break;
  default: memcpy(back, c->host_dst, N);
  }
  unsigned char full[N];
  memset(full, 0x11, N);
  ck_assert_msg(memcmp(back, zero, N) == 0 || memcmp(back, full, N) == 0,
                "[%s] memory neither untouched nor written whole", what);
  return back[0] == 0x11;
}

struct caller { const struct row *r; struct cell *c; CUstream s; CUresult rc; };
static void *call_thread(void *arg)
{
  struct caller *k = arg;
  k->rc = cuCtxSetCurrent(test_ctx);
  if (k->rc == CUDA_SUCCESS)
    k->rc = k->r->call(k->c, k->s);
  return NULL;
}

START_TEST(test_copy_cell)
{
  const int place = _i % NPLACES, col_i = (_i / NPLACES) % NCOLS;
  const struct row *r = &rows[_i / NPLACES / NCOLS];
  const struct column *col = &columns[col_i];
  /* Synchronous calls have no stream: only the legacy cells; non-_ptsz calls have no
   * per-thread stream 0. */
  if ((r->how == 'S' && (place == CAPTURING || place == PER_THREAD)) || (r->how == 'A' && place == PER_THREAD))
    return;
  char what[256];
  snprintf(what, sizeof(what), "%s on the %s | %s", r->name, place_names[place], col->name);
  struct cell c;
  CUmodule m;
  setup_cell(&c, col->stream_flags, &m);
  CU_OK(cuStreamBeginCapture_v2(c.stream, col->mode));
  CU_OK(cuLaunchKernel(c.add_one, 1, 1, 1, 32, 1, 1, 0, c.stream, NULL, NULL));

  CUstream s = place == CAPTURING ? c.stream
               : place == PER_THREAD ? NULL
               : r->how == 'X' ? CU_STREAM_LEGACY : NULL;
  struct caller k = { r, &c, s, CUDA_ERROR_UNKNOWN };
  if (place == LEGACY_OTHER) {
    pthread_t t;
    ck_assert_int_eq(pthread_create(&t, NULL, call_thread, &k), 0);
    ck_assert_int_eq(pthread_join(t, NULL), 0);
  } else {
    call_thread(&k);
  }
  const int legacy = place == LEGACY || place == LEGACY_OTHER;
  const int refused = legacy && col->stream_flags == 0;   /* ground truth: 906 + inv */
  const int captured = place == CAPTURING;
  ck_assert_msg(k.rc == (refused ? CUDA_ERROR_STREAM_CAPTURE_IMPLICIT : CUDA_SUCCESS),
                "[%s] call returned %d, want %s", what, (int)k.rc, refused ? "906" : "0");
  CUstreamCaptureStatus st;
  CU_OK(cuStreamIsCapturing(c.stream, &st));
  ck_assert_msg(st == (refused ? CU_STREAM_CAPTURE_STATUS_INVALIDATED : CU_STREAM_CAPTURE_STATUS_ACTIVE),
                "[%s] capture status %d", what, (int)st);
  CUgraph g = NULL;
  CUresult end = cuStreamEndCapture(c.stream, &g);
  ck_assert_msg(end == (refused ? CUDA_ERROR_STREAM_CAPTURE_INVALIDATED : CUDA_SUCCESS), "[%s] end %d", what,
                (int)end);
  if (g != NULL) {
    char names[64];
    test_kernel_names(g, names, sizeof(names));
    ck_assert_msg(strcmp(names, "fake_add_one") == 0, "[%s] graph kernels %s", what, names);
    ck_assert_msg(test_count_nodes(g, r->node) == (size_t)captured, "[%s] %zu %s nodes, want %d", what,
                  test_count_nodes(g, r->node), r->node == CP ? "memcpy" : "memset", captured);
    CU_OK(cuGraphDestroy(g));
  }
  /* Refused: nothing done; captured: not done now; otherwise done now (outside the
   * graph, when it was the legacy stream). */
  ck_assert_msg(ran(&c, r->where, what) == (!refused && !captured), "[%s] the work %s", what,
                refused || captured ? "ran now" : "did not run now");
  cleanup_cell(&c, m);
}
END_TEST

Suite *suite_copies(void)
{
  Suite *s = suite_create("copies and memsets");
  TCase *tc = tcase_create("legacy stream, capturing stream, per-thread stream");
  tcase_add_checked_fixture(tc, test_setup, NULL);
  tcase_add_loop_test(tc, test_copy_cell, 0, NROWS * NCOLS * NPLACES);
  suite_add_tcase(s, tc);
  return s;
}
