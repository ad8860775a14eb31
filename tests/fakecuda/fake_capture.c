/* fakecuda: stream capture — the open captures, each thread's capture-interaction mode,
 * the prohibition rule, and the capture entry points.
 *
 * Prohibition rule (CUDA programming guide, confirmed by the ground-truth table): a
 * thread in GLOBAL mode is prohibited by its own non-RELAXED capture and by any other
 * thread's GLOBAL capture; a THREAD_LOCAL thread only by its own non-RELAXED capture;
 * a RELAXED thread never. A capture stays "open" (and keeps prohibiting) after it was
 * invalidated, until cuStreamEndCapture ends it. */
#include "fake_internal.h"

#include <stdlib.h>

static struct fc_capture *open_captures;
static int n_open;
static uint64_t next_capture_id = 1;
static _Thread_local CUstreamCaptureMode thread_mode = CU_STREAM_CAPTURE_MODE_GLOBAL;

static struct fc_stream legacy_stream = { .special = 1 };
static _Thread_local struct fc_stream *per_thread_stream;

struct fc_stream *fc_stream_resolve(CUstream s, int ptsz)
{
  if (s == NULL)
    s = ptsz ? CU_STREAM_PER_THREAD : CU_STREAM_LEGACY;
  if (s == CU_STREAM_LEGACY)
    return &legacy_stream;
  if (s == CU_STREAM_PER_THREAD) {
    if (per_thread_stream == NULL) {
      /* Lives as long as the process: an open capture may still point at it. */
      per_thread_stream = calloc(1, sizeof(*per_thread_stream));
      if (per_thread_stream != NULL)
        per_thread_stream->special = 2;
    }
    return per_thread_stream;
  }
  struct fc_handle *h = fc_lookup(s, FC_STREAM);
  return (struct fc_stream *)h;
}

CUresult fc_stream_in_ctx(CUstream s, int ptsz, struct fc_stream **st)
{
  CUresult rc = fc_need_ctx();
  if (rc != CUDA_SUCCESS)
    return rc;
  *st = fc_stream_resolve(s, ptsz);
  return *st != NULL ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

void fc_invalidate(struct fc_capture *c)
{
  c->invalidated = 1;
  c->hits++;
}

int fc_open_captures(void)
{
  return n_open;
}

static int prohibits(const struct fc_capture *c, pid_t tid, CUstreamCaptureMode mode)
{
  if (mode == CU_STREAM_CAPTURE_MODE_RELAXED)
    return 0;
  if (c->owner == tid)
    return c->mode != CU_STREAM_CAPTURE_MODE_RELAXED;
  return mode == CU_STREAM_CAPTURE_MODE_GLOBAL && c->mode == CU_STREAM_CAPTURE_MODE_GLOBAL;
}

int fc_prohibited(void)
{
  for (struct fc_capture *c = open_captures; c != NULL; c = c->next)
    if (prohibits(c, fc_tid(), thread_mode))
      return 1;
  return 0;
}

CUresult fc_refuse_if_prohibited(void)
{
  int refused = 0;
  for (struct fc_capture *c = open_captures; c != NULL; c = c->next) {
    if (prohibits(c, fc_tid(), thread_mode)) {
      fc_invalidate(c);
      refused = 1;
    }
  }
  if (refused)
    fc_logs_cause("API call conflicts with a stream capture sequence initiated from the calling thread");
  return refused ? CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED : CUDA_SUCCESS;
}

CUresult fc_refuse_in_ctx(struct fc_ctx *ctx)
{
  int refused = 0;
  for (struct fc_capture *c = open_captures; c != NULL; c = c->next) {
    if (c->ctx == ctx) {
      fc_invalidate(c);
      refused = 1;
    }
  }
  return refused ? CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED : CUDA_SUCCESS;
}

struct fc_capture *fc_capture_find(uint64_t id)
{
  for (struct fc_capture *c = open_captures; c != NULL; c = c->next)
    if (c->id == id)
      return c;
  return NULL;
}

struct fc_capture *fc_captures_head(void)
{
  return open_captures;
}

void fc_capture_close(struct fc_capture *c, int discard_graph)
{
  fc_fork_detach(c);
  for (struct fc_capture **p = &open_captures; *p != NULL; p = &(*p)->next) {
    if (*p == c) {
      *p = c->next;
      n_open--;
      break;
    }
  }
  c->stream->cap = NULL;
  c->graph->capturing = 0;
  if (discard_graph && !c->graph_external)
    fc_graph_free(c->graph);
  free(c);
}

CUresult fc_stream_work(struct fc_stream *st, struct fc_capture **cap)
{
  *cap = NULL;
  if (st->cap != NULL && st->cap->invalidated)
    return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
  *cap = st->cap;
  if (st->cap != NULL)
    fc_fork_work(st);
  return CUDA_SUCCESS;
}

struct fc_node *fc_capture_add(struct fc_capture *c, CUgraphNodeType type)
{
  struct fc_node *n = fc_graph_add(c->graph, type);
  if (n != NULL)
    c->last = n;
  return n;
}

static CUresult begin_capture(CUstream hs, int ptsz, CUstreamCaptureMode mode, CUgraph into)
{
  struct fc_stream *st;
  CUresult rc = fc_stream_in_ctx(hs, ptsz, &st);
  if (rc != CUDA_SUCCESS)
    return rc;
  if ((unsigned)mode > CU_STREAM_CAPTURE_MODE_RELAXED)
    return CUDA_ERROR_INVALID_VALUE;
  if (st->special == 1)
    return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;   /* the legacy stream cannot capture */
  if (st->cap != NULL)
    return CUDA_ERROR_ILLEGAL_STATE;
  struct fc_graph *g = NULL;
  if (into != NULL) {
    g = (struct fc_graph *)fc_lookup(into, FC_GRAPH);
    if (g == NULL || g->capturing)
      return CUDA_ERROR_INVALID_VALUE;
  }
  struct fc_capture *c = calloc(1, sizeof(*c));
  if (c == NULL)
    return CUDA_ERROR_OUT_OF_MEMORY;
  c->graph_external = g != NULL;
  if (g == NULL && (g = fc_graph_new()) == NULL) {
    free(c);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  c->id = next_capture_id++;
  c->mode = mode;
  c->owner = fc_tid();
  c->ctx = fc_current_ctx();
  c->graph = g;
  c->last = g->n > 0 ? g->nodes[g->n - 1] : NULL;
  c->stream = st;
  g->capturing = 1;
  st->cap = c;
  c->next = open_captures;
  open_captures = c;
  n_open++;
  return CUDA_SUCCESS;
}

/* The 10.0 entry points have no mode argument; the driver treats them as GLOBAL. */
FC_EXPORT CUresult CUDAAPI cuStreamBeginCapture(CUstream hStream)
{
  FC_BEGIN;
  FC_END(begin_capture(hStream, 0, CU_STREAM_CAPTURE_MODE_GLOBAL, NULL));
}

FC_EXPORT CUresult CUDAAPI cuStreamBeginCapture_ptsz(CUstream hStream)
{
  FC_BEGIN;
  FC_END(begin_capture(hStream, 1, CU_STREAM_CAPTURE_MODE_GLOBAL, NULL));
}

FC_EXPORT CUresult CUDAAPI cuStreamBeginCapture_v2(CUstream hStream, CUstreamCaptureMode mode)
{
  FC_BEGIN;
  FC_END(begin_capture(hStream, 0, mode, NULL));
}

FC_EXPORT CUresult CUDAAPI cuStreamBeginCapture_v2_ptsz(CUstream hStream, CUstreamCaptureMode mode)
{
  FC_BEGIN;
  FC_END(begin_capture(hStream, 1, mode, NULL));
}

/* Dependencies given here are accepted and not modelled: the fake's graphs are chains. */
FC_EXPORT CUresult CUDAAPI cuStreamBeginCaptureToGraph(CUstream hStream, CUgraph hGraph,
    const CUgraphNode *dependencies, const CUgraphEdgeData *dependencyData,
    size_t numDependencies, CUstreamCaptureMode mode)
{
  FC_BEGIN;
  (void)dependencies; (void)dependencyData; (void)numDependencies;
  FC_END(hGraph == NULL ? CUDA_ERROR_INVALID_VALUE : begin_capture(hStream, 0, mode, hGraph));
}

FC_EXPORT CUresult CUDAAPI cuStreamBeginCaptureToGraph_ptsz(CUstream hStream, CUgraph hGraph,
    const CUgraphNode *dependencies, const CUgraphEdgeData *dependencyData,
    size_t numDependencies, CUstreamCaptureMode mode)
{
  FC_BEGIN;
  (void)dependencies; (void)dependencyData; (void)numDependencies;
  FC_END(hGraph == NULL ? CUDA_ERROR_INVALID_VALUE : begin_capture(hStream, 1, mode, hGraph));
}

static CUresult end_capture(CUstream hs, int ptsz, CUgraph *phGraph, const char *call)
{
  CUresult rc = fc_need_ctx();
  if (rc != CUDA_SUCCESS)
    return rc;
  struct fc_stream *st = fc_stream_resolve(hs, ptsz);
  if (st == NULL) {
    rc = fc_destroyed_stream_call(hs, call, 1);
    return rc != CUDA_SUCCESS ? rc : CUDA_ERROR_INVALID_HANDLE;
  }
  struct fc_capture *c = st->cap;
  if (c == NULL)
    return CUDA_ERROR_ILLEGAL_STATE;
  if (c->stream != st)
    return CUDA_ERROR_STREAM_CAPTURE_UNMATCHED;   /* a stream forked into it */
  int done;
  rc = fc_end_refused_or_made(c, phGraph, &done);
  if (done)
    return rc;
  if (fc_fork_check_end(c) != CUDA_SUCCESS) {
    *phGraph = NULL;
    fc_capture_close(c, 1);
    fc_logs_cause("Capture sequence contains a fork that was not joined to the primary stream");
    return CUDA_ERROR_STREAM_CAPTURE_UNJOINED;
  }
  *phGraph = (CUgraph)c->graph;
  fc_capture_close(c, 0);
  return CUDA_SUCCESS;
}

FC_EXPORT CUresult CUDAAPI cuStreamEndCapture(CUstream hStream, CUgraph *phGraph)
{
  FC_BEGIN;
  FC_END(end_capture(hStream, 0, phGraph, __func__));
}

FC_EXPORT CUresult CUDAAPI cuStreamEndCapture_ptsz(CUstream hStream, CUgraph *phGraph)
{
  FC_BEGIN;
  FC_END(end_capture(hStream, 1, phGraph, __func__));
}

static CUstreamCaptureStatus status_of(const struct fc_stream *st)
{
  if (st->cap == NULL)
    return CU_STREAM_CAPTURE_STATUS_NONE;
  return st->cap->invalidated ? CU_STREAM_CAPTURE_STATUS_INVALIDATED
                              : CU_STREAM_CAPTURE_STATUS_ACTIVE;
}

static CUresult is_capturing(CUstream hs, int ptsz, CUstreamCaptureStatus *status)
{
  CUresult rc = fc_need_ctx();
  if (rc != CUDA_SUCCESS)
    return rc;
  struct fc_stream *st = fc_stream_resolve(hs, ptsz);
  if (st == NULL) {
    fc_destroyed_stream_call(hs, "a capture query", 0);
    return CUDA_ERROR_INVALID_HANDLE;
  }
  if (status == NULL)
    return CUDA_ERROR_INVALID_VALUE;
  *status = status_of(st);
  return CUDA_SUCCESS;
}

FC_EXPORT CUresult CUDAAPI cuStreamIsCapturing(CUstream hStream, CUstreamCaptureStatus *captureStatus)
{
  FC_BEGIN;
  FC_END(is_capturing(hStream, 0, captureStatus));
}

FC_EXPORT CUresult CUDAAPI cuStreamIsCapturing_ptsz(CUstream hStream, CUstreamCaptureStatus *captureStatus)
{
  FC_BEGIN;
  FC_END(is_capturing(hStream, 1, captureStatus));
}

/* One implementation of the three generations; outputs other than the status are
 * written only while the capture is active (the id also while it is invalidated). */
static CUresult capture_info(CUstream hs, int ptsz, CUstreamCaptureStatus *status, cuuint64_t *id,
                             CUgraph *graph, const CUgraphNode **deps,
                             const CUgraphEdgeData **edges, size_t *ndeps)
{
  CUresult rc = is_capturing(hs, ptsz, status);
  if (rc != CUDA_SUCCESS)
    return rc;
  struct fc_capture *c = fc_stream_resolve(hs, ptsz)->cap;
  if (c != NULL && id != NULL)
    *id = c->id;
  if (c == NULL || c->invalidated)
    return CUDA_SUCCESS;
  if (graph != NULL)
    *graph = (CUgraph)c->graph;
  if (deps != NULL)
    *deps = c->last != NULL ? (const CUgraphNode *)&c->last : NULL;
  if (edges != NULL)
    *edges = NULL;      /* all edges are default edges */
  if (ndeps != NULL)
    *ndeps = c->last != NULL ? 1 : 0;
  return CUDA_SUCCESS;
}

FC_EXPORT CUresult CUDAAPI cuStreamGetCaptureInfo(CUstream hStream,
    CUstreamCaptureStatus *captureStatus_out, cuuint64_t *id_out)
{
  FC_BEGIN;
  FC_END(capture_info(hStream, 0, captureStatus_out, id_out, NULL, NULL, NULL, NULL));
}

FC_EXPORT CUresult CUDAAPI cuStreamGetCaptureInfo_ptsz(CUstream hStream,
    CUstreamCaptureStatus *captureStatus_out, cuuint64_t *id_out)
{
  FC_BEGIN;
  FC_END(capture_info(hStream, 1, captureStatus_out, id_out, NULL, NULL, NULL, NULL));
}

FC_EXPORT CUresult CUDAAPI cuStreamGetCaptureInfo_v2(CUstream hStream,
    CUstreamCaptureStatus *captureStatus_out, cuuint64_t *id_out, CUgraph *graph_out,
    const CUgraphNode **dependencies_out, size_t *numDependencies_out)
{
  FC_BEGIN;
  FC_END(capture_info(hStream, 0, captureStatus_out, id_out, graph_out, dependencies_out, NULL,
                      numDependencies_out));
}

FC_EXPORT CUresult CUDAAPI cuStreamGetCaptureInfo_v2_ptsz(CUstream hStream,
    CUstreamCaptureStatus *captureStatus_out, cuuint64_t *id_out, CUgraph *graph_out,
    const CUgraphNode **dependencies_out, size_t *numDependencies_out)
{
  FC_BEGIN;
  FC_END(capture_info(hStream, 1, captureStatus_out, id_out, graph_out, dependencies_out, NULL,
                      numDependencies_out));
}

FC_EXPORT CUresult CUDAAPI cuStreamGetCaptureInfo_v3(CUstream hStream,
    CUstreamCaptureStatus *captureStatus_out, cuuint64_t *id_out, CUgraph *graph_out,
    const CUgraphNode **dependencies_out, const CUgraphEdgeData **edgeData_out,
    size_t *numDependencies_out)
{
  FC_BEGIN;
  FC_END(capture_info(hStream, 0, captureStatus_out, id_out, graph_out, dependencies_out,
                      edgeData_out, numDependencies_out));
}

FC_EXPORT CUresult CUDAAPI cuStreamGetCaptureInfo_v3_ptsz(CUstream hStream,
    CUstreamCaptureStatus *captureStatus_out, cuuint64_t *id_out, CUgraph *graph_out,
    const CUgraphNode **dependencies_out, const CUgraphEdgeData **edgeData_out,
    size_t *numDependencies_out)
{
  FC_BEGIN;
  FC_END(capture_info(hStream, 1, captureStatus_out, id_out, graph_out, dependencies_out,
                      edgeData_out, numDependencies_out));
}

FC_EXPORT CUresult CUDAAPI cuThreadExchangeStreamCaptureMode(CUstreamCaptureMode *mode)
{
  FC_BEGIN;
  CUresult rc = CUDA_ERROR_INVALID_VALUE;
  if (mode != NULL && (unsigned)*mode <= CU_STREAM_CAPTURE_MODE_RELAXED) {
    CUstreamCaptureMode old = thread_mode;
    thread_mode = *mode;
    *mode = old;
    rc = CUDA_SUCCESS;
  }
  FC_END(rc);
}

/* Not a driver entry point: a test hook standing for "a call capguard does
 * not watch" that breaks every open capture (as a failed launch into a
 * capture does on a real driver), so that capguard's "broken by a call
 * capguard does not watch" can be tested. Its cu prefix only gets it through
 * the fake's export map. */
FC_EXPORT CUresult CUDAAPI cuFakeBreakCaptures(void);
FC_EXPORT CUresult CUDAAPI cuFakeBreakCaptures(void)
{
  FC_BEGIN;
  for (struct fc_capture *c = open_captures; c != NULL; c = c->next)
    fc_invalidate(c);
  FC_END(CUDA_SUCCESS);
}
