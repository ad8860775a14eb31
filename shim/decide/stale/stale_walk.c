/* The walk: cuGraphGetNodes, then each kernel node's parameters
 * (cuGraphKernelNodeGetParams_v2: the values as captured, as an array of
 * pointers or as one buffer, `extra`), split by the function's layout
 * (stale_layouts.c: kept per function). Every aligned pointer-sized word of
 * a parameter that is not obviously no address is looked up: in capguard's
 * own record (mapped pieces), then among the allocations this walk already
 * found (a graph's kernels read the same few buffers over and over), and
 * only then asked of cuPointerGetAttribute. */
#include "stale_walk.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "driver.h"
#include "stale_layouts.h"

#define MAX_NODES ((size_t)1 << 20) /* no real graph comes near it; bounds the array */
#define MAX_PARAMS 1024             /* CUDA's limit is 32764 bytes of parameters */
#define LOWEST_ADDRESS 0x10000u     /* below it, a size or a flag, never a device address */

bool cg_stale_walk_ready(void) {
  return cg_drv.GraphGetNodes && cg_drv.GraphNodeGetType && cg_drv.GraphKernelNodeGetParams &&
         cg_drv.PointerGetAttribute && cg_stale_layouts_ready();
}

/* The distinct allocations this walk found: a graph's kernels read a few
 * buffers (a caching allocator's segments) over and over, so a short list,
 * searched from the newest, answers most values without the driver. */
#define KNOWN_MAX 1024
#define MISSES 32 /* values the driver said are no allocation's (sizes, strides repeated kernel after kernel) */
typedef struct {
  cg_stale_read a[KNOWN_MAX];
  size_t n;
  cg_stale_own_record own;
  uint64_t miss[MISSES];
  unsigned next_miss;
} known_allocs;

static bool missed(const known_allocs *k, uint64_t v) {
  for (unsigned i = 0; i < MISSES; i++)
    if (k->miss[i] == v)
      return true;
  return false;
}

static const cg_stale_read *known(const known_allocs *k, uint64_t v) {
  for (size_t i = k->n; i-- > 0;)
    if (v >= k->a[i].start && v - k->a[i].start < k->a[i].size)
      return &k->a[i];
  return NULL;
}

/* Asks the driver which allocation holds v: true and *r filled when one does. */
static bool ask(uint64_t v, cg_stale_read *r, cg_stale_walk_counts *c) {
  CUdeviceptr start = 0;
  size_t size = 0;
  unsigned long long id = 0;
  c->queries++;
  if (cg_drv.PointerGetAttributes) { /* one call for the three (zeros: no allocation of the driver's) */
    CUpointer_attribute what[3] = {CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, CU_POINTER_ATTRIBUTE_RANGE_SIZE,
                                   CU_POINTER_ATTRIBUTE_BUFFER_ID};
    void *into[3] = {&start, &size, &id};
    /* Buffer id 0 with a range: an address in a reserved range where nothing
     * is mapped (measured, H200, CUDA 13.0: the plural call names the whole
     * range there). No memory a kernel can read: a library kernel's packed
     * integers can look like one, and were named as the 168 GB range. */
    if (cg_drv.PointerGetAttributes(3, what, into, (CUdeviceptr)v) != CUDA_SUCCESS || !start || !size ||
        v - start >= size || !id)
      return false;
    r->start = start;
    r->size = size;
    r->buffer_id = id;
    return true;
  }
  if (cg_drv.PointerGetAttribute(&start, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, (CUdeviceptr)v) != CUDA_SUCCESS)
    return false;
  c->queries += 2;
  if (cg_drv.PointerGetAttribute(&size, CU_POINTER_ATTRIBUTE_RANGE_SIZE, (CUdeviceptr)v) != CUDA_SUCCESS ||
      cg_drv.PointerGetAttribute(&id, CU_POINTER_ATTRIBUTE_BUFFER_ID, (CUdeviceptr)v) != CUDA_SUCCESS)
    return false;
  r->start = start;
  r->size = size;
  r->buffer_id = id;
  return true;
}

/* One value a node reads or writes through (a kernel's argument arg; a
 * copy's side: 0 destination, 1 source), appended when it lies in an
 * allocation. */
static void add_read(uint64_t v, unsigned char what, int arg, CUfunction fn, unsigned node, known_allocs *seen,
                     cg_stale_read *out, size_t max, size_t *n, cg_stale_walk_counts *c) {
  if (v < LOWEST_ADDRESS)
    return;
  c->candidates++;
  cg_stale_read r;
  memset(&r, 0, sizeof r);
  const cg_stale_read *had = NULL;
  if (seen->own && seen->own(v, &r)) {
    /* a mapped piece: asked first, the driver names only its whole reserved range */
  } else if ((had = known(seen, v))) {
    r = *had;
  } else if (missed(seen, v)) {
    return;
  } else if (!ask(v, &r, c)) {
    seen->miss[seen->next_miss++ % MISSES] = v;
    return;
  } else if (seen->n < KNOWN_MAX) {
    seen->a[seen->n++] = r;
  }
  r.fn = fn;
  r.node = node;
  r.arg = arg;
  r.what = what;
  if (*n < max)
    out[(*n)++] = r;
  else
    c->dropped++;
}

/* The argument buffer of a launch made with `extra`
 * (CU_LAUNCH_PARAM_BUFFER_POINTER, _SIZE), or NULL. */
static const unsigned char *extra_buffer(void **extra, size_t *size) {
  const unsigned char *buf = NULL;
  bool sized = false;
  for (size_t i = 0; i < 16 && extra[i] != CU_LAUNCH_PARAM_END; i += 2) {
    if (extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER)
      buf = extra[i + 1];
    else if (extra[i] == CU_LAUNCH_PARAM_BUFFER_SIZE && extra[i + 1]) {
      memcpy(size, extra[i + 1], sizeof *size);
      sized = true;
    } else
      return NULL; /* not a documented pair: not read */
  }
  return sized && *size <= 32764 ? buf : NULL;
}

static void note_unsplit(CUfunction fn, cg_stale_walk_counts *c) {
  c->unsplit++;
  for (size_t i = 0; i < c->n_unsplit_fn; i++)
    if (c->unsplit_fn[i] == fn)
      return;
  if (c->n_unsplit_fn < CG_STALE_UNSPLIT_NAMED)
    c->unsplit_fn[c->n_unsplit_fn++] = fn;
}

/* The reads of one kernel node's parameters, appended to out[*n..max): each
 * parameter's words, from the array of pointers or from the one buffer
 * (where each lies at its layout's offset). */
static void kernel_reads(const CUDA_KERNEL_NODE_PARAMS *p, unsigned node, cg_param_slot *slots, known_allocs *seen,
                         cg_stale_read *out, size_t max, size_t *n, cg_stale_walk_counts *c) {
  size_t buf_size = 0;
  const unsigned char *buf = !p->kernelParams && p->extra ? extra_buffer(p->extra, &buf_size) : NULL;
  int np = p->func && (p->kernelParams || buf) ? cg_stale_layout(p->func, slots, MAX_PARAMS) : -1;
  if (np < 0) {
    note_unsplit(p->func, c);
    return;
  }
  c->buffers += buf != NULL;
  for (size_t i = 0; i < (size_t)np; i++) {
    const unsigned char *bytes = buf ? (slots[i].offset + slots[i].size <= buf_size ? buf + slots[i].offset : NULL)
                                     : p->kernelParams[i];
    /* Every pointer-sized word: a pointer alone, or in a struct passed by value. */
    for (size_t k = 0; bytes && k + sizeof(uint64_t) <= slots[i].size; k += sizeof(uint64_t)) {
      uint64_t v;
      memcpy(&v, bytes + k, sizeof v);
      add_read(v, CG_STALE_KERNEL, (int)i, p->func, node, seen, out, max, n, c);
    }
  }
}

/* A memcpy node's device sides, a memset node's destination. */
static void copy_reads(CUgraphNode node, CUgraphNodeType type, unsigned i, known_allocs *seen, cg_stale_read *out,
                       size_t max, size_t *n, cg_stale_walk_counts *c) {
  if (type == CU_GRAPH_NODE_TYPE_MEMCPY && cg_drv.GraphMemcpyNodeGetParams) {
    CUDA_MEMCPY3D p;
    memset(&p, 0, sizeof p);
    if (cg_drv.GraphMemcpyNodeGetParams(node, &p) != CUDA_SUCCESS)
      return;
    if (p.dstMemoryType == CU_MEMORYTYPE_DEVICE || p.dstMemoryType == CU_MEMORYTYPE_UNIFIED)
      add_read(p.dstDevice, CG_STALE_MEMCPY, 0, NULL, i, seen, out, max, n, c);
    if (p.srcMemoryType == CU_MEMORYTYPE_DEVICE || p.srcMemoryType == CU_MEMORYTYPE_UNIFIED)
      add_read(p.srcDevice, CG_STALE_MEMCPY, 1, NULL, i, seen, out, max, n, c);
  } else if (type == CU_GRAPH_NODE_TYPE_MEMSET && cg_drv.GraphMemsetNodeGetParams) {
    CUDA_MEMSET_NODE_PARAMS p;
    memset(&p, 0, sizeof p);
    if (cg_drv.GraphMemsetNodeGetParams(node, &p) == CUDA_SUCCESS)
      add_read(p.dst, CG_STALE_MEMSET, 0, NULL, i, seen, out, max, n, c);
  }
}

int cg_stale_walk(CUgraph g, cg_stale_read *out, size_t max, cg_stale_walk_counts *c, cg_stale_own_record own) {
  memset(c, 0, sizeof *c);
  if (!cg_stale_walk_ready())
    return -1;
  size_t count = 0;
  if (cg_drv.GraphGetNodes(g, NULL, &count) != CUDA_SUCCESS || count > MAX_NODES)
    return 0;
  if (count == 0)
    return 0;
  CUgraphNode *nodes = malloc(count * sizeof *nodes);
  cg_param_slot *slots = malloc(MAX_PARAMS * sizeof *slots);
  known_allocs *k = malloc(sizeof *k);
  if (!nodes || !slots || !k) {
    free(nodes);
    free(slots);
    free(k);
    return -2;
  }
  memset(k->miss, 0, sizeof k->miss); /* 0 is below LOWEST_ADDRESS: never looked up */
  k->n = 0;
  k->next_miss = 0;
  k->own = own;
  size_t got = count;
  if (cg_drv.GraphGetNodes(g, nodes, &got) != CUDA_SUCCESS)
    got = 0;
  size_t n = 0;
  for (size_t i = 0; i < got && i < count; i++) {
    /* A graph is mostly kernel nodes: their parameters asked first, the
     * node's type only when that fails (the driver answers
     * CUDA_ERROR_INVALID_VALUE for a node of another type): one query a
     * kernel node, not two. */
    CUDA_KERNEL_NODE_PARAMS p;
    memset(&p, 0, sizeof p);
    if (cg_drv.GraphKernelNodeGetParams(nodes[i], &p) == CUDA_SUCCESS) {
      c->nodes++;
      c->kernels++;
      kernel_reads(&p, (unsigned)i, slots, k, out, max, &n, c);
      continue;
    }
    CUgraphNodeType type;
    if (cg_drv.GraphNodeGetType(nodes[i], &type) != CUDA_SUCCESS)
      continue;
    c->nodes++;
    if (type == CU_GRAPH_NODE_TYPE_MEMCPY || type == CU_GRAPH_NODE_TYPE_MEMSET) {
      copy_reads(nodes[i], type, (unsigned)i, k, out, max, &n, c);
    } else if (type == CU_GRAPH_NODE_TYPE_KERNEL) { /* a kernel node the driver would not describe */
      c->kernels++;
      note_unsplit(NULL, c);
    }
  }
  free(nodes);
  free(slots);
  free(k);
  return (int)n;
}
