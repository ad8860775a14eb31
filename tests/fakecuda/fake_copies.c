/* fakecuda: the copies and memsets of the third matrix beyond cuMemcpyHtoD/DtoH and
 * cuMemsetD8 (fake_memory.c): every synchronous
 * cuMemcpy* and cuMemset* (v2, and the 32-bit v1 forms libcuda still exports), the
 * array copies (with a minimal cuArrayCreate), and the asynchronous ones (+ `_ptsz`).
 * Ground truth (third matrix, driver-semantics.md, measured for cuMemcpyHtoD and
 * cuMemsetD8): a synchronous copy or memset is work on the legacy stream, refused with
 * 906 and every blocking capture of the context invalidated, in every mode and from
 * every thread; while only non-blocking streams capture it runs at once, outside the
 * graph. Measured since for cuMemsetD8Async and cuMemcpyPeer too (driver-semantics.md); chosen by
 * the fake as the same rule: the other copies and memsets, synchronous, and
 * asynchronous on the legacy stream. An
 * asynchronous one on a capturing stream is captured (a memcpy or memset node, run at
 * replay, which the fake does not do); on any other stream it runs at once.
 * Memory is host memory: device pointers must lie in an allocation, host pointers are
 * taken as they are, a unified (UVA) pointer may be either. */
#include "fake_internal.h"

#include <stdlib.h>
#include <string.h>

/* ---- arrays: a buffer of width x height elements, rows packed (no tiling) */
struct fc_array {
  struct fc_handle h;
  unsigned char *buf;
  size_t row_bytes, height;
};

static size_t format_bytes(CUarray_format f) {
  switch (f) {
  case CU_AD_FORMAT_UNSIGNED_INT8: case CU_AD_FORMAT_SIGNED_INT8: return 1;
  case CU_AD_FORMAT_UNSIGNED_INT16: case CU_AD_FORMAT_SIGNED_INT16: case CU_AD_FORMAT_HALF: return 2;
  case CU_AD_FORMAT_UNSIGNED_INT32: case CU_AD_FORMAT_SIGNED_INT32: case CU_AD_FORMAT_FLOAT: return 4;
  default: return 0;
  }
}

FC_EXPORT CUresult CUDAAPI cuArrayCreate_v2(CUarray *pHandle, const CUDA_ARRAY_DESCRIPTOR *d) {
  FC_BEGIN;
  CUresult rc = fc_need_ctx();
  size_t elem = d != NULL ? format_bytes(d->Format) * d->NumChannels : 0;
  if (rc == CUDA_SUCCESS && (pHandle == NULL || elem == 0 || d->Width == 0 || d->Width > (1u << 16) ||
                             d->Height > (1u << 16)))
    rc = CUDA_ERROR_INVALID_VALUE;
  struct fc_array *a = rc == CUDA_SUCCESS ? calloc(1, sizeof(*a)) : NULL;
  if (rc == CUDA_SUCCESS) {
    size_t h = d->Height ? d->Height : 1;
    if (a != NULL && (a->buf = calloc(h, d->Width * elem)) == NULL) {
      free(a);
      a = NULL;
    }
    if (a == NULL) {
      rc = CUDA_ERROR_OUT_OF_MEMORY;
    } else {
      a->row_bytes = d->Width * elem;
      a->height = h;
      fc_register(&a->h, a, FC_ARRAY);
      *pHandle = (CUarray)a;
    }
  }
  FC_END(rc);
}

FC_EXPORT CUresult CUDAAPI cuArrayDestroy(CUarray hArray) {
  FC_BEGIN;
  CUresult rc = fc_need_ctx();
  struct fc_array *a = rc == CUDA_SUCCESS ? (struct fc_array *)fc_lookup(hArray, FC_ARRAY) : NULL;
  if (rc == CUDA_SUCCESS && a == NULL)
    rc = CUDA_ERROR_INVALID_HANDLE;
  if (a != NULL) {
    fc_unregister(&a->h);
    free(a->buf);
    free(a);
  }
  FC_END(rc);
}

/* n bytes of array a from byte offset off, or NULL. */
static unsigned char *array_span(CUarray h, size_t off, size_t n) {
  struct fc_array *a = (struct fc_array *)fc_lookup(h, FC_ARRAY);
  size_t size = a != NULL ? a->row_bytes * a->height : 0;
  return a != NULL && off <= size && n <= size - off ? a->buf + off : NULL;
}

/* ---- one copy or memset, described once for every entry point */
struct side {
  unsigned char *base;
  size_t pitch, height;     /* bytes per row, rows per slice */
  size_t x, y, z;           /* where the copy starts (bytes, rows, slices) */
};
struct work {
  int memset;               /* a memset: elem-byte value over w elements x h rows */
  int nd;                   /* a 2D/3D copy: sides, width bytes x height x depth */
  CUgraphNodeType node;
  unsigned char *dst;
  const unsigned char *src;
  size_t n;                 /* linear copy: bytes */
  unsigned value, elem;
  size_t pitch, w, h;
  struct side s, d;
  size_t width, height, depth;
};

static void fill(unsigned char *p, unsigned value, unsigned elem, size_t count) {
  for (size_t i = 0; i < count; i++)
    memcpy(p + i * elem, &value, elem);   /* little-endian: the low elem bytes */
}

static void perform(const struct work *w) {
  if (w->memset) {
    for (size_t r = 0; r < w->h; r++)
      fill(w->dst + r * w->pitch, w->value, w->elem, w->w);
  } else if (w->nd) {
    for (size_t z = 0; z < w->depth; z++)
      for (size_t y = 0; y < w->height; y++)
        memmove(w->d.base + w->d.x + (w->d.y + y) * w->d.pitch + (w->d.z + z) * w->d.pitch * w->d.height,
                w->s.base + w->s.x + (w->s.y + y) * w->s.pitch + (w->s.z + z) * w->s.pitch * w->s.height,
                w->width);
  } else {
    memmove(w->dst, w->src, w->n);
  }
}

/* A synchronous one: the legacy stream's rule, then done at once. */
static CUresult sync_work(CUresult valid, const struct work *w) {
  CUresult rc = fc_need_ctx();
  if (rc == CUDA_SUCCESS)
    rc = valid;
  if (rc == CUDA_SUCCESS)
    rc = fc_legacy_work(fc_stream_resolve(NULL, 0));
  if (rc == CUDA_SUCCESS)
    perform(w);
  return rc;
}

/* An asynchronous one on hs: the legacy stream's rule there; a node of a capture on a
 * capturing stream; else done at once. */
static CUresult async_work(CUresult valid, const struct work *w, CUstream hs, int ptsz) {
  struct fc_stream *st;
  CUresult rc = fc_stream_in_ctx(hs, ptsz, &st);
  if (rc != CUDA_SUCCESS)
    return rc;
  if (valid != CUDA_SUCCESS)
    return valid;
  if ((rc = fc_legacy_work(st)) != CUDA_SUCCESS)
    return rc;
  struct fc_capture *cap;
  if ((rc = fc_stream_work(st, &cap)) != CUDA_SUCCESS)
    return rc;
  if (cap != NULL)
    return fc_capture_add(cap, w->node) != NULL ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
  perform(w);
  return CUDA_SUCCESS;
}

static unsigned char *dev(CUdeviceptr d, size_t n) { return fc_mem_span(d, n); }

/* A linear copy; NULL dst or src (an address outside every allocation, an unknown
 * array) makes it invalid. */
static CUresult linear(struct work *w, void *dst, const void *src, size_t n) {
  memset(w, 0, sizeof(*w));
  w->node = CU_GRAPH_NODE_TYPE_MEMCPY;
  w->dst = dst;
  w->src = src;
  w->n = n;
  return dst != NULL && src != NULL ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/* A memset of h rows of count elements of elem bytes, pitch bytes apart. */
static CUresult set(struct work *w, CUdeviceptr d, size_t pitch, unsigned value, unsigned elem,
                    size_t count, size_t h) {
  memset(w, 0, sizeof(*w));
  w->memset = 1;
  w->node = CU_GRAPH_NODE_TYPE_MEMSET;
  w->value = value;
  w->elem = elem;
  w->w = count;
  w->h = h;
  w->pitch = pitch ? pitch : count * elem;
  if (count == 0 || h == 0)
    return CUDA_SUCCESS;
  if (w->pitch < count * elem)
    return CUDA_ERROR_INVALID_VALUE;
  w->dst = dev(d, w->pitch * (h - 1) + count * elem);
  return w->dst != NULL ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/* A side of a 2D/3D copy, by its memory type. */
static CUresult nd_side(struct side *s, CUmemorytype type, const void *host, CUdeviceptr device,
                        CUarray array, size_t pitch, size_t height) {
  switch (type) {
  case CU_MEMORYTYPE_HOST: s->base = (unsigned char *)(uintptr_t)host; break;
  case CU_MEMORYTYPE_DEVICE: s->base = dev(device, 1); break;
  case CU_MEMORYTYPE_UNIFIED: s->base = (unsigned char *)(uintptr_t)device; break;
  case CU_MEMORYTYPE_ARRAY: {
    struct fc_array *a = (struct fc_array *)fc_lookup(array, FC_ARRAY);
    s->base = a != NULL ? a->buf : NULL;
    pitch = a != NULL ? a->row_bytes : 0;
    height = a != NULL ? a->height : 0;
    break;
  }
  default: s->base = NULL;
  }
  s->pitch = pitch;
  s->height = height;
  return s->base != NULL ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/* Every copy structure (2D, 3D, 3D peer; v1 and v2) has these fields. */
#define FC_ND_SIDES(w, p, depth_, s_z, d_z, s_h, d_h)                                               \
  do {                                                                                              \
    memset((w), 0, sizeof(*(w)));                                                                   \
    (w)->nd = 1;                                                                                    \
    (w)->node = CU_GRAPH_NODE_TYPE_MEMCPY;                                                          \
    if ((p) == NULL) {                                                                              \
      rc_ = CUDA_ERROR_INVALID_VALUE;                                                               \
      break;                                                                                        \
    }                                                                                               \
    (w)->width = (p)->WidthInBytes;                                                                 \
    (w)->height = (p)->Height ? (p)->Height : 1;                                                    \
    (w)->depth = (depth_);                                                                          \
    rc_ = nd_side(&(w)->s, (p)->srcMemoryType, (p)->srcHost, (p)->srcDevice, (p)->srcArray,           \
                  (p)->srcPitch ? (p)->srcPitch : (p)->WidthInBytes, (s_h));                          \
    if (rc_ == CUDA_SUCCESS)                                                                        \
      rc_ = nd_side(&(w)->d, (p)->dstMemoryType, (p)->dstHost, (p)->dstDevice, (p)->dstArray,         \
                    (p)->dstPitch ? (p)->dstPitch : (p)->WidthInBytes, (d_h));                        \
    (w)->s.x = (p)->srcXInBytes, (w)->s.y = (p)->srcY, (w)->s.z = (s_z);                            \
    (w)->d.x = (p)->dstXInBytes, (w)->d.y = (p)->dstY, (w)->d.z = (d_z);                            \
  } while (0)

static CUresult copy2d(struct work *w, const CUDA_MEMCPY2D *p) {
  CUresult rc_;
  FC_ND_SIDES(w, p, 1, 0, 0, 0, 0);
  return rc_;
}
static CUresult copy2d_v1(struct work *w, const CUDA_MEMCPY2D_v1 *p) {
  CUresult rc_;
  FC_ND_SIDES(w, p, 1, 0, 0, 0, 0);
  return rc_;
}
static CUresult copy3d(struct work *w, const CUDA_MEMCPY3D *p) {
  CUresult rc_;
  FC_ND_SIDES(w, p, p->Depth ? p->Depth : 1, p->srcZ, p->dstZ, p->srcHeight, p->dstHeight);
  return rc_;
}
static CUresult copy3d_v1(struct work *w, const CUDA_MEMCPY3D_v1 *p) {
  CUresult rc_;
  FC_ND_SIDES(w, p, p->Depth ? p->Depth : 1, p->srcZ, p->dstZ, p->srcHeight, p->dstHeight);
  return rc_;
}
static CUresult copy3d_peer(struct work *w, const CUDA_MEMCPY3D_PEER *p) {
  CUresult rc_;
  FC_ND_SIDES(w, p, p->Depth ? p->Depth : 1, p->srcZ, p->dstZ, p->srcHeight, p->dstHeight);
  return rc_;
}

/* ---- the entry points. S: synchronous, A: asynchronous (+ _ptsz). */
#define FC_SYNC(name, params, prepare)                                                              \
  FC_EXPORT CUresult CUDAAPI name params                                                            \
  {                                                                                                 \
    FC_BEGIN;                                                                                       \
    struct work w_;                                                                                 \
    CUresult v_ = (prepare);                                                                        \
    FC_END(sync_work(v_, &w_));                                                                     \
  }
#define FC_ASYNC_ONE(name, params, prepare, ptsz)                                                   \
  FC_EXPORT CUresult CUDAAPI name params                                                            \
  {                                                                                                 \
    FC_BEGIN;                                                                                       \
    struct work w_;                                                                                 \
    CUresult v_ = (prepare);                                                                        \
    FC_END(async_work(v_, &w_, hStream, ptsz));                                                     \
  }
#define FC_ASYNC(name, params, prepare)                                                             \
  FC_ASYNC_ONE(name, params, prepare, 0)                                                            \
  FC_ASYNC_ONE(name##_ptsz, params, prepare, 1)

#define D(p) ((CUdeviceptr)(p))
#define U(p) ((unsigned char *)(uintptr_t)(p))
#define A(a, off, n) array_span((a), (off), (n))

/* v2 (and the calls that never had a v1) */
FC_SYNC(cuMemcpy, (CUdeviceptr dst, CUdeviceptr src, size_t n), linear(&w_, U(dst), U(src), n))
FC_SYNC(cuMemcpyDtoD_v2, (CUdeviceptr dst, CUdeviceptr src, size_t n), linear(&w_, dev(dst, n), dev(src, n), n))
FC_SYNC(cuMemcpyPeer, (CUdeviceptr dst, CUcontext dc, CUdeviceptr src, CUcontext sc, size_t n),
        (fc_ctx_resolve(dc) && fc_ctx_resolve(sc)) ? linear(&w_, dev(dst, n), dev(src, n), n)
                                                   : (linear(&w_, NULL, NULL, 0), CUDA_ERROR_INVALID_CONTEXT))
FC_SYNC(cuMemcpyHtoA_v2, (CUarray dst, size_t off, const void *src, size_t n), linear(&w_, A(dst, off, n), src, n))
FC_SYNC(cuMemcpyAtoH_v2, (void *dst, CUarray src, size_t off, size_t n), linear(&w_, dst, A(src, off, n), n))
FC_SYNC(cuMemcpyDtoA_v2, (CUarray dst, size_t off, CUdeviceptr src, size_t n),
        linear(&w_, A(dst, off, n), dev(src, n), n))
FC_SYNC(cuMemcpyAtoD_v2, (CUdeviceptr dst, CUarray src, size_t off, size_t n),
        linear(&w_, dev(dst, n), A(src, off, n), n))
FC_SYNC(cuMemcpyAtoA_v2, (CUarray dst, size_t doff, CUarray src, size_t soff, size_t n),
        linear(&w_, A(dst, doff, n), A(src, soff, n), n))
FC_SYNC(cuMemcpy2D_v2, (const CUDA_MEMCPY2D *p), copy2d(&w_, p))
FC_SYNC(cuMemcpy2DUnaligned_v2, (const CUDA_MEMCPY2D *p), copy2d(&w_, p))
FC_SYNC(cuMemcpy3D_v2, (const CUDA_MEMCPY3D *p), copy3d(&w_, p))
FC_SYNC(cuMemcpy3DPeer, (const CUDA_MEMCPY3D_PEER *p), copy3d_peer(&w_, p))
FC_SYNC(cuMemsetD16_v2, (CUdeviceptr d, unsigned short v, size_t n), set(&w_, d, 0, v, 2, n, 1))
FC_SYNC(cuMemsetD32_v2, (CUdeviceptr d, unsigned int v, size_t n), set(&w_, d, 0, v, 4, n, 1))
FC_SYNC(cuMemsetD2D8_v2, (CUdeviceptr d, size_t pitch, unsigned char v, size_t w, size_t h),
        set(&w_, d, pitch, v, 1, w, h))
FC_SYNC(cuMemsetD2D16_v2, (CUdeviceptr d, size_t pitch, unsigned short v, size_t w, size_t h),
        set(&w_, d, pitch, v, 2, w, h))
FC_SYNC(cuMemsetD2D32_v2, (CUdeviceptr d, size_t pitch, unsigned int v, size_t w, size_t h),
        set(&w_, d, pitch, v, 4, w, h))

/* v1: 32-bit device pointers and sizes */
FC_SYNC(cuMemcpyHtoD, (CUdeviceptr_v1 dst, const void *src, unsigned int n), linear(&w_, dev(D(dst), n), src, n))
FC_SYNC(cuMemcpyDtoH, (void *dst, CUdeviceptr_v1 src, unsigned int n), linear(&w_, dst, dev(D(src), n), n))
FC_SYNC(cuMemcpyDtoD, (CUdeviceptr_v1 dst, CUdeviceptr_v1 src, unsigned int n),
        linear(&w_, dev(D(dst), n), dev(D(src), n), n))
FC_SYNC(cuMemcpyHtoA, (CUarray dst, unsigned int off, const void *src, unsigned int n),
        linear(&w_, A(dst, off, n), src, n))
FC_SYNC(cuMemcpyAtoH, (void *dst, CUarray src, unsigned int off, unsigned int n), linear(&w_, dst, A(src, off, n), n))
FC_SYNC(cuMemcpyDtoA, (CUarray dst, unsigned int off, CUdeviceptr_v1 src, unsigned int n),
        linear(&w_, A(dst, off, n), dev(D(src), n), n))
FC_SYNC(cuMemcpyAtoD, (CUdeviceptr_v1 dst, CUarray src, unsigned int off, unsigned int n),
        linear(&w_, dev(D(dst), n), A(src, off, n), n))
FC_SYNC(cuMemcpyAtoA, (CUarray dst, unsigned int doff, CUarray src, unsigned int soff, unsigned int n),
        linear(&w_, A(dst, doff, n), A(src, soff, n), n))
FC_SYNC(cuMemcpy2D, (const CUDA_MEMCPY2D_v1 *p), copy2d_v1(&w_, p))
FC_SYNC(cuMemcpy2DUnaligned, (const CUDA_MEMCPY2D_v1 *p), copy2d_v1(&w_, p))
FC_SYNC(cuMemcpy3D, (const CUDA_MEMCPY3D_v1 *p), copy3d_v1(&w_, p))
FC_SYNC(cuMemsetD8, (CUdeviceptr_v1 d, unsigned char v, unsigned int n), set(&w_, D(d), 0, v, 1, n, 1))
FC_SYNC(cuMemsetD16, (CUdeviceptr_v1 d, unsigned short v, unsigned int n), set(&w_, D(d), 0, v, 2, n, 1))
FC_SYNC(cuMemsetD32, (CUdeviceptr_v1 d, unsigned int v, unsigned int n), set(&w_, D(d), 0, v, 4, n, 1))
FC_SYNC(cuMemsetD2D8, (CUdeviceptr_v1 d, unsigned int pitch, unsigned char v, unsigned int w, unsigned int h),
        set(&w_, D(d), pitch, v, 1, w, h))
FC_SYNC(cuMemsetD2D16, (CUdeviceptr_v1 d, unsigned int pitch, unsigned short v, unsigned int w, unsigned int h),
        set(&w_, D(d), pitch, v, 2, w, h))
FC_SYNC(cuMemsetD2D32, (CUdeviceptr_v1 d, unsigned int pitch, unsigned int v, unsigned int w, unsigned int h),
        set(&w_, D(d), pitch, v, 4, w, h))

/* asynchronous, v2 and versionless (each with its _ptsz) */
FC_ASYNC(cuMemcpyHtoDAsync_v2, (CUdeviceptr dst, const void *src, size_t n, CUstream hStream),
         linear(&w_, dev(dst, n), src, n))
FC_ASYNC(cuMemcpyAsync, (CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream hStream),
         linear(&w_, U(dst), U(src), n))
FC_ASYNC(cuMemcpyDtoHAsync_v2, (void *dst, CUdeviceptr src, size_t n, CUstream hStream),
         linear(&w_, dst, dev(src, n), n))
FC_ASYNC(cuMemcpyDtoDAsync_v2, (CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream hStream),
         linear(&w_, dev(dst, n), dev(src, n), n))
FC_ASYNC(cuMemcpyPeerAsync, (CUdeviceptr dst, CUcontext dc, CUdeviceptr src, CUcontext sc, size_t n, CUstream hStream),
         (fc_ctx_resolve(dc) && fc_ctx_resolve(sc)) ? linear(&w_, dev(dst, n), dev(src, n), n)
                                                    : (linear(&w_, NULL, NULL, 0), CUDA_ERROR_INVALID_CONTEXT))
FC_ASYNC(cuMemcpyHtoAAsync_v2, (CUarray dst, size_t off, const void *src, size_t n, CUstream hStream),
         linear(&w_, A(dst, off, n), src, n))
FC_ASYNC(cuMemcpyAtoHAsync_v2, (void *dst, CUarray src, size_t off, size_t n, CUstream hStream),
         linear(&w_, dst, A(src, off, n), n))
FC_ASYNC(cuMemcpy2DAsync_v2, (const CUDA_MEMCPY2D *p, CUstream hStream), copy2d(&w_, p))
FC_ASYNC(cuMemcpy3DAsync_v2, (const CUDA_MEMCPY3D *p, CUstream hStream), copy3d(&w_, p))
FC_ASYNC(cuMemcpy3DPeerAsync, (const CUDA_MEMCPY3D_PEER *p, CUstream hStream), copy3d_peer(&w_, p))
FC_ASYNC(cuMemsetD8Async, (CUdeviceptr d, unsigned char v, size_t n, CUstream hStream), set(&w_, d, 0, v, 1, n, 1))
FC_ASYNC(cuMemsetD16Async, (CUdeviceptr d, unsigned short v, size_t n, CUstream hStream), set(&w_, d, 0, v, 2, n, 1))
FC_ASYNC(cuMemsetD32Async, (CUdeviceptr d, unsigned int v, size_t n, CUstream hStream), set(&w_, d, 0, v, 4, n, 1))
FC_ASYNC(cuMemsetD2D8Async, (CUdeviceptr d, size_t pitch, unsigned char v, size_t w, size_t h, CUstream hStream),
         set(&w_, d, pitch, v, 1, w, h))
FC_ASYNC(cuMemsetD2D16Async, (CUdeviceptr d, size_t pitch, unsigned short v, size_t w, size_t h, CUstream hStream),
         set(&w_, d, pitch, v, 2, w, h))
FC_ASYNC(cuMemsetD2D32Async, (CUdeviceptr d, size_t pitch, unsigned int v, size_t w, size_t h, CUstream hStream),
         set(&w_, d, pitch, v, 4, w, h))

/* asynchronous v1 (no _ptsz: the per-thread stream came after them) */
FC_ASYNC_ONE(cuMemcpyHtoDAsync, (CUdeviceptr_v1 dst, const void *src, unsigned int n, CUstream hStream),
             linear(&w_, dev(D(dst), n), src, n), 0)
FC_ASYNC_ONE(cuMemcpyDtoHAsync, (void *dst, CUdeviceptr_v1 src, unsigned int n, CUstream hStream),
             linear(&w_, dst, dev(D(src), n), n), 0)
FC_ASYNC_ONE(cuMemcpyDtoDAsync, (CUdeviceptr_v1 dst, CUdeviceptr_v1 src, unsigned int n, CUstream hStream),
             linear(&w_, dev(D(dst), n), dev(D(src), n), n), 0)
FC_ASYNC_ONE(cuMemcpyHtoAAsync, (CUarray dst, unsigned int off, const void *src, unsigned int n, CUstream hStream),
             linear(&w_, A(dst, off, n), src, n), 0)
FC_ASYNC_ONE(cuMemcpyAtoHAsync, (void *dst, CUarray src, unsigned int off, unsigned int n, CUstream hStream),
             linear(&w_, dst, A(src, off, n), n), 0)
FC_ASYNC_ONE(cuMemcpy2DAsync, (const CUDA_MEMCPY2D_v1 *p, CUstream hStream), copy2d_v1(&w_, p), 0)
FC_ASYNC_ONE(cuMemcpy3DAsync, (const CUDA_MEMCPY3D_v1 *p, CUstream hStream), copy3d_v1(&w_, p), 0)
