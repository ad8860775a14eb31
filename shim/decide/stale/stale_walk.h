/* The stale-pointer check's walk of a graph: which allocations its kernel
 * nodes read, found in the values of their parameters (docs/stale.md). */
#ifndef CAPGUARD_STALE_WALK_H
#define CAPGUARD_STALE_WALK_H

#include <cuda.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* One (node, argument) that points into an allocation the driver knows. */
typedef struct {
  uint64_t start, size, buffer_id; /* the allocation, as the driver said at the walk */
  CUfunction fn;                   /* the node's kernel (named only when reported); NULL for copies */
  unsigned node;                   /* the node's place in cuGraphGetNodes' order */
  int arg;                         /* the parameter holding the pointer; a copy: 0 destination, 1 source */
  unsigned char what;              /* CG_STALE_KERNEL, CG_STALE_MEMCPY, CG_STALE_MEMSET */
  bool piece;                      /* a piece mapped with cuMemMap: buffer_id is its physical
                                      allocation's number (stale_vmm.h), start and size the piece's */
} cg_stale_read;

/* capguard's own record, asked before the driver: true and r's start, size,
 * buffer_id and piece filled when it holds v (stale_watch.c: mapped pieces). */
typedef bool (*cg_stale_own_record)(uint64_t v, cg_stale_read *r);

#define CG_STALE_UNSPLIT_NAMED 8 /* kernels a walk names among those it could not read */

enum { CG_STALE_KERNEL, CG_STALE_MEMCPY, CG_STALE_MEMSET };

typedef struct {
  size_t nodes, kernels;  /* nodes walked, kernel nodes among them */
  size_t unsplit;         /* kernel nodes whose parameters the driver could not split */
  size_t candidates;      /* pointer-sized values asked about */
  size_t queries;         /* cuPointerGetAttribute calls made */
  size_t dropped;         /* reads past max, not kept */
  size_t buffers;         /* kernel nodes whose arguments came as one buffer (`extra`) */
  CUfunction unsplit_fn[CG_STALE_UNSPLIT_NAMED]; /* distinct kernels among the unsplit nodes */
  size_t n_unsplit_fn;
} cg_stale_walk_counts;

/* Whether this driver can be walked: the graph queries, a way to split
 * parameters (stale_layouts.h) and cuPointerGetAttribute are there. */
bool cg_stale_walk_ready(void);
/* Walks g: fills out with at most max reads and returns how many, or -1
 * when this driver cannot be walked (no cuGraphGetNodes, or no way to split
 * parameters: cuFuncGetParamInfo is CUDA 12.4+). Calls only queries of the
 * graph, its functions and pointers (no stream work, nothing a capture
 * forbids); allocates one array of node handles, freed before it returns. */
int cg_stale_walk(CUgraph g, cg_stale_read *out, size_t max, cg_stale_walk_counts *counts, cg_stale_own_record own);

#endif
