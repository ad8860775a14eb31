/* fakecuda: graphs as chains of nodes, their executable form, and node inspection
 * (so tests can list the kernels a captured graph holds). */
#include "fake_internal.h"

#include <stdlib.h>
#include <string.h>

#define FC_MAX_NODES (1u << 20)   /* a bound, not a feature: no test needs more */

struct fc_exec {
  struct fc_handle h;
  size_t n;
  struct fc_function **fns;      /* kernel nodes' functions, checked at each launch */
};

struct fc_graph *fc_graph_new(void)
{
  struct fc_graph *g = calloc(1, sizeof(*g));
  if (g != NULL)
    fc_register(&g->h, g, FC_GRAPH);
  return g;
}

void fc_graph_free(struct fc_graph *g)
{
  for (size_t i = 0; i < g->n; i++) {
    fc_unregister(&g->nodes[i]->h);
    fc_params_drop(g->nodes[i]);
    free(g->nodes[i]);
  }
  free(g->nodes);
  fc_unregister(&g->h);
  free(g);
}

struct fc_node *fc_graph_add(struct fc_graph *g, CUgraphNodeType type)
{
  if (g->n == g->cap) {
    size_t cap = g->cap ? g->cap * 2 : 8;
    if (cap > FC_MAX_NODES)
      return NULL;
    struct fc_node **nodes = realloc(g->nodes, cap * sizeof(*nodes));
    if (nodes == NULL)
      return NULL;
    g->nodes = nodes;
    g->cap = cap;
  }
  struct fc_node *n = calloc(1, sizeof(*n));
  if (n == NULL)
    return NULL;
  n->graph = g;
  n->type = type;
  fc_register(&n->h, n, FC_NODE);
  g->nodes[g->n++] = n;
  return n;
}

FC_EXPORT CUresult CUDAAPI cuGraphCreate(CUgraph *phGraph, unsigned int flags)
{
  FC_BEGIN;
  CUresult rc = fc_need_ctx();
  struct fc_graph *g = NULL;
  if (rc == CUDA_SUCCESS && (phGraph == NULL || flags != 0))
    rc = CUDA_ERROR_INVALID_VALUE;
  if (rc == CUDA_SUCCESS && (g = fc_graph_new()) == NULL)
    rc = CUDA_ERROR_OUT_OF_MEMORY;
  if (rc == CUDA_SUCCESS)
    *phGraph = (CUgraph)g;
  FC_END(rc);
}

FC_EXPORT CUresult CUDAAPI cuGraphDestroy(CUgraph hGraph)
{
  FC_BEGIN;
  CUresult rc = fc_need_init();
  struct fc_graph *g = (struct fc_graph *)fc_lookup(hGraph, FC_GRAPH);
  if (rc == CUDA_SUCCESS && g == NULL)
    rc = CUDA_ERROR_INVALID_VALUE;
  else if (rc == CUDA_SUCCESS && g->capturing)
    rc = CUDA_ERROR_ILLEGAL_STATE;    /* a capture is still writing into it */
  if (rc == CUDA_SUCCESS)
    fc_graph_free(g);
  FC_END(rc);
}

FC_EXPORT CUresult CUDAAPI cuGraphGetNodes(CUgraph hGraph, CUgraphNode *nodes, size_t *numNodes)
{
  FC_BEGIN;
  CUresult rc = fc_need_init();
  struct fc_graph *g = (struct fc_graph *)fc_lookup(hGraph, FC_GRAPH);
  if (rc == CUDA_SUCCESS && (g == NULL || numNodes == NULL))
    rc = CUDA_ERROR_INVALID_VALUE;
  if (rc == CUDA_SUCCESS && nodes == NULL) {
    *numNodes = g->n;
  } else if (rc == CUDA_SUCCESS) {
    /* As documented: fill up to *numNodes; a larger array gets NULLs and the true count. */
    for (size_t i = 0; i < *numNodes; i++)
      nodes[i] = i < g->n ? (CUgraphNode)g->nodes[i] : NULL;
    if (*numNodes > g->n)
      *numNodes = g->n;
  }
  FC_END(rc);
}

FC_EXPORT CUresult CUDAAPI cuGraphNodeGetType(CUgraphNode hNode, CUgraphNodeType *type)
{
  FC_BEGIN;
  CUresult rc = fc_need_init();
  struct fc_node *n = (struct fc_node *)fc_lookup(hNode, FC_NODE);
  if (rc == CUDA_SUCCESS && (n == NULL || type == NULL))
    rc = CUDA_ERROR_INVALID_VALUE;
  if (rc == CUDA_SUCCESS)
    *type = n->type;
  FC_END(rc);
}

static struct fc_node *kernel_node(CUgraphNode hNode)
{
  struct fc_node *n = (struct fc_node *)fc_lookup(hNode, FC_NODE);
  return (n != NULL && n->type == CU_GRAPH_NODE_TYPE_KERNEL) ? n : NULL;
}

FC_EXPORT CUresult CUDAAPI cuGraphKernelNodeGetParams_v2(CUgraphNode hNode,
                                                        CUDA_KERNEL_NODE_PARAMS *p)
{
  FC_BEGIN;
  CUresult rc = fc_need_init();
  struct fc_node *n = kernel_node(hNode);
  if (rc == CUDA_SUCCESS && (n == NULL || p == NULL))
    rc = CUDA_ERROR_INVALID_VALUE;
  if (rc == CUDA_SUCCESS) {
    memset(p, 0, sizeof(*p));
    p->func = (CUfunction)n->fn;
    p->gridDimX = n->grid[0]; p->gridDimY = n->grid[1]; p->gridDimZ = n->grid[2];
    p->blockDimX = n->block[0]; p->blockDimY = n->block[1]; p->blockDimZ = n->block[2];
    p->sharedMemBytes = n->shmem;
    p->kernelParams = n->param_ptrs;   /* the values captured, as the driver keeps them */
    p->extra = n->extra_bytes != NULL ? n->extra_arr : NULL;   /* or the argument buffer */
  }
  FC_END(rc);
}

FC_EXPORT CUresult CUDAAPI cuGraphKernelNodeGetParams(CUgraphNode hNode,
                                                     CUDA_KERNEL_NODE_PARAMS_v1 *p)
{
  FC_BEGIN;
  CUresult rc = fc_need_init();
  struct fc_node *n = kernel_node(hNode);
  if (rc == CUDA_SUCCESS && (n == NULL || p == NULL))
    rc = CUDA_ERROR_INVALID_VALUE;
  if (rc == CUDA_SUCCESS) {
    memset(p, 0, sizeof(*p));
    p->func = (CUfunction)n->fn;
    p->gridDimX = n->grid[0]; p->gridDimY = n->grid[1]; p->gridDimZ = n->grid[2];
    p->blockDimX = n->block[0]; p->blockDimY = n->block[1]; p->blockDimZ = n->block[2];
    p->sharedMemBytes = n->shmem;
    p->kernelParams = n->param_ptrs;   /* the values captured, as the driver keeps them */
    p->extra = n->extra_bytes != NULL ? n->extra_arr : NULL;   /* or the argument buffer */
  }
  FC_END(rc);
}

/* A kernel node added by hand (cuGraphAddKernelNode): the fake's graphs are chains, so
 * the dependencies are accepted and not modelled; the parameters are kept as a captured
 * launch's are. */
static CUresult add_kernel_node(CUgraphNode *out, CUgraph hGraph, CUfunction func, const unsigned grid[3],
                                const unsigned block[3], unsigned shmem, void **params)
{
  CUresult rc = fc_need_ctx();
  if (rc != CUDA_SUCCESS)
    return rc;
  struct fc_graph *g = (struct fc_graph *)fc_lookup(hGraph, FC_GRAPH);
  struct fc_function *fn = fc_function_or_kernel(func);
  if (g == NULL || out == NULL || fn == NULL)
    return CUDA_ERROR_INVALID_VALUE;
  struct fc_node *n = fc_graph_add(g, CU_GRAPH_NODE_TYPE_KERNEL);
  if (n == NULL)
    return CUDA_ERROR_OUT_OF_MEMORY;
  n->fn = fn;
  memcpy(n->grid, grid, sizeof(n->grid));
  memcpy(n->block, block, sizeof(n->block));
  n->shmem = shmem;
  if (fc_params_keep(n, fn, params) != 0)
    return CUDA_ERROR_OUT_OF_MEMORY;
  *out = (CUgraphNode)n;
  return CUDA_SUCCESS;
}

FC_EXPORT CUresult CUDAAPI cuGraphAddKernelNode_v2(CUgraphNode *phGraphNode, CUgraph hGraph,
    const CUgraphNode *dependencies, size_t numDependencies, const CUDA_KERNEL_NODE_PARAMS *p)
{
  FC_BEGIN;
  (void)dependencies; (void)numDependencies;
  CUresult rc = CUDA_ERROR_INVALID_VALUE;
  if (p != NULL) {
    const unsigned grid[3] = { p->gridDimX, p->gridDimY, p->gridDimZ };
    const unsigned block[3] = { p->blockDimX, p->blockDimY, p->blockDimZ };
    rc = add_kernel_node(phGraphNode, hGraph, p->func, grid, block, p->sharedMemBytes, p->kernelParams);
  }
  FC_END(rc);
}

FC_EXPORT CUresult CUDAAPI cuGraphAddKernelNode(CUgraphNode *phGraphNode, CUgraph hGraph,
    const CUgraphNode *dependencies, size_t numDependencies, const CUDA_KERNEL_NODE_PARAMS_v1 *p)
{
  FC_BEGIN;
  (void)dependencies; (void)numDependencies;
  CUresult rc = CUDA_ERROR_INVALID_VALUE;
  if (p != NULL) {
    const unsigned grid[3] = { p->gridDimX, p->gridDimY, p->gridDimZ };
    const unsigned block[3] = { p->blockDimX, p->blockDimY, p->blockDimZ };
    rc = add_kernel_node(phGraphNode, hGraph, p->func, grid, block, p->sharedMemBytes, p->kernelParams);
  }
  FC_END(rc);
}

static CUresult instantiate(CUgraphExec *out, CUgraph hGraph)
{
  CUresult rc = fc_need_ctx();
  if (rc != CUDA_SUCCESS)
    return rc;
  struct fc_graph *g = (struct fc_graph *)fc_lookup(hGraph, FC_GRAPH);
  if (g == NULL || out == NULL)
    return CUDA_ERROR_INVALID_VALUE;
  struct fc_exec *x = calloc(1, sizeof(*x));
  if (x == NULL)
    return CUDA_ERROR_OUT_OF_MEMORY;
  x->fns = calloc(g->n ? g->n : 1, sizeof(*x->fns));
  if (x->fns == NULL) {
    free(x);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  for (size_t i = 0; i < g->n; i++)
    if (g->nodes[i]->type == CU_GRAPH_NODE_TYPE_KERNEL)
      x->fns[x->n++] = g->nodes[i]->fn;
  fc_register(&x->h, x, FC_EXEC);
  *out = (CUgraphExec)x;
  return CUDA_SUCCESS;
}

FC_EXPORT CUresult CUDAAPI cuGraphInstantiateWithFlags(CUgraphExec *phGraphExec, CUgraph hGraph,
                                                       unsigned long long flags)
{
  FC_BEGIN;
  (void)flags;
  FC_END(instantiate(phGraphExec, hGraph));
}

FC_EXPORT CUresult CUDAAPI cuGraphInstantiate(CUgraphExec *phGraphExec, CUgraph hGraph,
    CUgraphNode *phErrorNode, char *logBuffer, size_t bufferSize)
{
  FC_BEGIN;
  (void)phErrorNode;
  if (logBuffer != NULL && bufferSize > 0)
    logBuffer[0] = '\0';
  FC_END(instantiate(phGraphExec, hGraph));
}

FC_EXPORT CUresult CUDAAPI cuGraphInstantiate_v2(CUgraphExec *phGraphExec, CUgraph hGraph,
    CUgraphNode *phErrorNode, char *logBuffer, size_t bufferSize)
{
  FC_BEGIN;
  (void)phErrorNode;
  if (logBuffer != NULL && bufferSize > 0)
    logBuffer[0] = '\0';
  FC_END(instantiate(phGraphExec, hGraph));
}

/* Launching runs nothing; what it checks is that every kernel's module is still loaded,
 * the fake's stand-in for the crash a real graph gets when its module was unloaded. */
static CUresult graph_launch(CUgraphExec hExec, CUstream hs, int ptsz)
{
  CUresult rc = fc_need_ctx();
  if (rc != CUDA_SUCCESS)
    return rc;
  struct fc_exec *x = (struct fc_exec *)fc_lookup(hExec, FC_EXEC);
  struct fc_stream *st = fc_stream_resolve(hs, ptsz);
  if (x == NULL || st == NULL)
    return CUDA_ERROR_INVALID_HANDLE;
  struct fc_capture *cap;
  rc = fc_stream_work(st, &cap);
  if (rc != CUDA_SUCCESS)
    return rc;
  for (size_t i = 0; i < x->n; i++)
    if (!x->fns[i]->h.alive)
      return CUDA_ERROR_INVALID_HANDLE;
  if (cap != NULL) {
    /* Ground truth (third matrix): launching a graph into a capturing stream is refused
     * and invalidates the capture; the driver logs no cause line for it. */
    fc_invalidate(cap);
    return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  }
  fc_launch_hold(hs);
  return CUDA_SUCCESS;
}

FC_EXPORT CUresult CUDAAPI cuGraphLaunch(CUgraphExec hGraphExec, CUstream hStream)
{
  FC_BEGIN;
  FC_END(graph_launch(hGraphExec, hStream, 0));
}

FC_EXPORT CUresult CUDAAPI cuGraphLaunch_ptsz(CUgraphExec hGraphExec, CUstream hStream)
{
  FC_BEGIN;
  FC_END(graph_launch(hGraphExec, hStream, 1));
}

/* Ground truth (second matrix): destroying an executable graph, even one unrelated to the
 * capture, follows the prohibition rule. */
FC_EXPORT CUresult CUDAAPI cuGraphExecDestroy(CUgraphExec hGraphExec)
{
  FC_BEGIN;
  CUresult rc = fc_need_init();
  struct fc_exec *x = (struct fc_exec *)fc_lookup(hGraphExec, FC_EXEC);
  if (rc == CUDA_SUCCESS && x == NULL)
    rc = CUDA_ERROR_INVALID_VALUE;
  if (rc == CUDA_SUCCESS)
    rc = fc_refuse_if_prohibited();
  if (rc == CUDA_SUCCESS) {
    fc_unregister(&x->h);
    free(x->fns);
    free(x);
  }
  FC_END(rc);
}

CUresult fc_launch_kernel(CUfunction f, const unsigned grid[3], const unsigned block[3],
                          unsigned shmem, CUstream hs, int ptsz, void **params, void **extra)
{
  CUresult rc = fc_need_ctx();
  if (rc != CUDA_SUCCESS)
    return rc;
  struct fc_function *fn = fc_function_or_kernel(f);   /* a CUkernel may be passed too */
  struct fc_stream *st = fc_stream_resolve(hs, ptsz);
  if (fn == NULL || st == NULL)
    return CUDA_ERROR_INVALID_HANDLE;
  unsigned long long threads = (unsigned long long)block[0] * block[1] * block[2];
  if (grid[0] == 0 || grid[1] == 0 || grid[2] == 0 || threads == 0 || threads > 1024)
    return CUDA_ERROR_INVALID_VALUE;
  unsigned shmem_limit = fn->max_dynamic_shmem > 49152 ? (unsigned)fn->max_dynamic_shmem : 49152;
  if (shmem > shmem_limit)
    return CUDA_ERROR_INVALID_VALUE;
  if ((rc = fc_legacy_work(st)) != CUDA_SUCCESS)
    return rc;
  struct fc_capture *cap;
  rc = fc_stream_work(st, &cap);
  if (rc != CUDA_SUCCESS || cap == NULL)
    return rc;
  struct fc_node *n = fc_capture_add(cap, CU_GRAPH_NODE_TYPE_KERNEL);
  if (n == NULL)
    return CUDA_ERROR_OUT_OF_MEMORY;
  n->fn = fn;
  memcpy(n->grid, grid, sizeof(n->grid));
  memcpy(n->block, block, sizeof(n->block));
  n->shmem = shmem;
  if (params == NULL && extra != NULL) {   /* one argument buffer (cuBLAS's launches) */
    int k = fc_params_keep_extra(n, extra);
    return k == 0 ? CUDA_SUCCESS : k == -1 ? CUDA_ERROR_OUT_OF_MEMORY : CUDA_ERROR_INVALID_VALUE;
  }
  return fc_params_keep(n, fn, params) == 0 ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

FC_EXPORT CUresult CUDAAPI cuLaunchKernel(CUfunction f, unsigned int gridDimX,
    unsigned int gridDimY, unsigned int gridDimZ, unsigned int blockDimX,
    unsigned int blockDimY, unsigned int blockDimZ, unsigned int sharedMemBytes,
    CUstream hStream, void **kernelParams, void **extra)
{
  FC_BEGIN;
  const unsigned grid[3] = { gridDimX, gridDimY, gridDimZ };
  const unsigned block[3] = { blockDimX, blockDimY, blockDimZ };
  FC_END(fc_launch_kernel(f, grid, block, sharedMemBytes, hStream, 0, kernelParams, extra));
}

FC_EXPORT CUresult CUDAAPI cuLaunchKernel_ptsz(CUfunction f, unsigned int gridDimX,
    unsigned int gridDimY, unsigned int gridDimZ, unsigned int blockDimX,
    unsigned int blockDimY, unsigned int blockDimZ, unsigned int sharedMemBytes,
    CUstream hStream, void **kernelParams, void **extra)
{
  FC_BEGIN;
  const unsigned grid[3] = { gridDimX, gridDimY, gridDimZ };
  const unsigned block[3] = { blockDimX, blockDimY, blockDimZ };
  FC_END(fc_launch_kernel(f, grid, block, sharedMemBytes, hStream, 1, kernelParams, extra));
}
