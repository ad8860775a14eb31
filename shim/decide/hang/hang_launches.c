#include "hang_launches.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "driver.h"
#include "entry_points.h"
#include "hang_slots.h" /* cg_hang_now */
#include "locks.h"

#define EXECS 4096  /* a power of two: engines hold thousands (sizes x pieces) */
#define TOMB 1u     /* a destroyed exec's key: probing goes on past it */
#define MARKERS 256 /* launches in flight told apart; a stuck one stays the oldest of its stream */
#define GRAPHS CG_HANG_GRAPHS

typedef struct {
  uint64_t capture_id;
  uint64_t launches;  /* atomic: the launching threads add */
  uint64_t census_at; /* launches at the last census (the watcher's) */
  unsigned collectives, kernels;
  char collective[96], kernel[96]; /* the first NCCL kernel, the first kernel */
  char site[256];
} exec_info;

/* Keys probed without a lock at each launch; written under the lock. */
static uint64_t keys[EXECS];
static exec_info infos[EXECS];
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
unsigned cg_hang_execs_live;

/* The ring of captured graphs, the newest GRAPHS, read at an instantiation
 * and by the watcher. Where a graph's capture began is not copied at the
 * capture's end: the ring takes the capture's own site, which then holds
 * the graph and the capture's id, and gives back the one it held (the end
 * frees it as it freed its own): an index taken and a pointer exchanged. A
 * reader takes a site out (an exchange for NULL), copies it and puts it
 * back, or frees it when a writer has put another there meanwhile: a site
 * is owned by one at a time, never read while it is written or freed. */
cg_begin_site *cg_hang_graph_sites[CG_HANG_GRAPHS];
unsigned cg_hang_graphs_next;

/* The site k back from the newest (1: the newest), copied; false when there
 * is none or another reader holds it this moment. */
static bool graph_back(unsigned k, cg_begin_site *out) {
  unsigned next = __atomic_load_n(&cg_hang_graphs_next, __ATOMIC_ACQUIRE);
  if (k > next || k > GRAPHS)
    return false;
  cg_begin_site **at = &cg_hang_graph_sites[(next - k) % GRAPHS];
  cg_begin_site *site = __atomic_exchange_n(at, NULL, __ATOMIC_ACQ_REL);
  if (!site)
    return false;
  *out = *site;
  cg_begin_site *none = NULL;
  if (!__atomic_compare_exchange_n(at, &none, site, false, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
    cg_begin_site_free(site); /* a writer put a newer one there */
  return out->graph != 0;
}

/* A marker: the event recorded after one launch. gen is odd while it is
 * being filled (a seqlock: the watcher copies, then checks gen again). */
typedef struct {
  CUevent ev;
  CUcontext ctx;
  uint32_t gen;
  uint64_t seq; /* the launch's place among all launches; 0: not armed */
  uint64_t exec, stream, launch, at_ns;
  int info; /* its exec's row, -1 unknown */
} marker;
static marker markers[MARKERS];
static uint64_t launch_seq, last_launch_ns;

static unsigned home(uint64_t exec) {
  return (unsigned)(((exec >> 4) * 0x9E3779B97F4A7C15ull) >> 52) & (EXECS - 1);
}

/* The exec's row, -1 when not known: no lock (keys change under it only). */
static int find(uint64_t exec) {
  unsigned h = home(exec);
  for (unsigned k = 0; k < EXECS; k++) {
    unsigned i = (h + k) & (EXECS - 1);
    uint64_t key = __atomic_load_n(&keys[i], __ATOMIC_ACQUIRE);
    if (key == exec)
      return (int)i;
    if (!key)
      return -1;
  }
  return -1;
}

static void copy_text(char *dst, size_t cap, const char *src) {
  const char *nul = src ? memchr(src, '\0', cap - 1) : NULL;
  size_t n = !src ? 0 : nul ? (size_t)(nul - src) : cap - 1;
  memcpy(dst, src ? src : "", n);
  dst[n] = '\0';
}

/* A kernel's name as a person reads its identifier: NCCL's kernels are C++
 * functions, so the driver names them mangled
 * ("_Z39ncclDevKernel_AllReduce_Sum_f32_RING_LL19ncclDevKernelArgs4K");
 * the identifier is the name after "_Z" and its length, or the whole name
 * when it is not mangled so. Copied into buf. */
static void identifier(const char *name, char *buf, size_t cap) {
  const char *id = name;
  size_t len = strlen(name);
  if (name[0] == '_' && name[1] == 'Z' && name[2] >= '1' && name[2] <= '9') {
    const char *p = name + 2;
    size_t n = 0;
    while (*p >= '0' && *p <= '9' && n < 4096)
      n = n * 10 + (size_t)(*p++ - '0');
    size_t k = 0;
    while (k < n && p[k]) /* the whole identifier is there */
      k++;
    if (n && k == n) {
      id = p;
      len = n;
    }
  }
  if (len >= cap)
    len = cap - 1;
  memcpy(buf, id, len);
  buf[len] = '\0';
}

static bool is_collective(const char *id) { return strncmp(id, "nccl", 4) == 0; }

/* g's NCCL kernels: how many, and the first one's name. Queries of the
 * graph and its functions only, made while nothing captures. */
/* The name the driver gives a kernel node's function, NULL unknown. */
static const char *node_kernel(CUgraphNode node) {
  CUDA_KERNEL_NODE_PARAMS p;
  const char *name = NULL;
  if (cg_drv.GraphKernelNodeGetParams(node, &p) != CUDA_SUCCESS)
    return NULL;
  if (p.func && cg_drv.FuncGetName && cg_drv.FuncGetName(&name, p.func) != CUDA_SUCCESS)
    name = NULL;
  /* a node launched with a CUkernel (cuLaunchKernel accepts one) */
  CUkernel k = p.kern ? p.kern : (CUkernel)p.func;
  if (!name && k && cg_drv.KernelGetName && cg_drv.KernelGetName(&name, k) != CUDA_SUCCESS)
    name = NULL;
  return name;
}

/* g's kernels (child graphs' too, a few levels down): how many, the NCCL
 * ones counted and the first of each named. Queries of the graph and its
 * functions only, made while nothing captures. */
static void count_collectives(CUgraph g, exec_info *x, int depth) {
  size_t n = 0;
  if (!cg_drv.GraphGetNodes || !cg_drv.GraphNodeGetType || !cg_drv.GraphKernelNodeGetParams || depth > 4 ||
      !cg_nothing_captures() || cg_drv.GraphGetNodes(g, NULL, &n) != CUDA_SUCCESS || !n || n > (1u << 20))
    return;
  CUgraphNode *nodes = malloc(n * sizeof *nodes);
  if (!nodes || cg_drv.GraphGetNodes(g, nodes, &n) != CUDA_SUCCESS) {
    free(nodes);
    return;
  }
  for (size_t i = 0; i < n; i++) {
    CUgraphNodeType t;
    CUgraph child;
    if (cg_drv.GraphNodeGetType(nodes[i], &t) != CUDA_SUCCESS)
      continue;
    if (t == CU_GRAPH_NODE_TYPE_GRAPH && cg_drv.GraphChildGraphNodeGetGraph &&
        cg_drv.GraphChildGraphNodeGetGraph(nodes[i], &child) == CUDA_SUCCESS)
      count_collectives(child, x, depth + 1);
    const char *name = t == CU_GRAPH_NODE_TYPE_KERNEL ? node_kernel(nodes[i]) : NULL;
    if (!name)
      continue;
    char id[sizeof x->collective];
    identifier(name, id, sizeof id);
    if (x->kernels++ == 0)
      copy_text(x->kernel, sizeof x->kernel, id);
    if (is_collective(id) && x->collectives++ == 0)
      copy_text(x->collective, sizeof x->collective, id);
  }
  free(nodes);
}

void cg_hang_instantiated(CUgraphExec exec, CUgraph g) {
  uint64_t e = (uint64_t)(uintptr_t)exec;
  if (e <= TOMB)
    return;
  exec_info x;
  memset(&x, 0, sizeof x);
  cg_begin_site c;
  bool known = false;
  for (unsigned k = 1; k <= GRAPHS && !known && g; k++) /* the newest capture with this graph handle */
    known = graph_back(k, &c) && c.graph == (uint64_t)(uintptr_t)g;
  if (known)
    x.capture_id = c.capture_id;
  if (known)
    cg_begin_site_text(&c, x.site, sizeof x.site);
  count_collectives(g, &x, 0);
  cg_lock(&lock);
  int at = find(e);
  if (at < 0) {
    unsigned h = home(e);
    for (unsigned k = 0; k < EXECS && at < 0; k++) {
      unsigned i = (h + k) & (EXECS - 1);
      if (keys[i] <= TOMB)
        at = (int)i;
    }
    if (at >= 0)
      __atomic_add_fetch(&cg_hang_execs_live, 1, __ATOMIC_RELAXED);
  }
  if (at >= 0) {
    __atomic_store_n(&keys[at], 0 + TOMB, __ATOMIC_RELEASE); /* not found while refilled */
    infos[at] = x;
    __atomic_store_n(&keys[at], e, __ATOMIC_RELEASE);
  }
  cg_unlock(&lock);
}

void cg_hang_exec_destroyed(CUgraphExec exec) {
  cg_lock(&lock);
  int at = find((uint64_t)(uintptr_t)exec);
  if (at >= 0) {
    __atomic_store_n(&keys[at], 0 + TOMB, __ATOMIC_RELEASE);
    __atomic_sub_fetch(&cg_hang_execs_live, 1, __ATOMIC_RELAXED);
  }
  cg_unlock(&lock);
}

/* The marker's event, made on the launching thread's context while nothing
 * captures (an event created during capture is allowed, but nothing of
 * capguard's is made then that need not be). */
static bool marker_event(marker *m) {
  if (m->ev)
    return true;
  if (!cg_drv.EventCreate || !cg_drv.CtxGetCurrent || !cg_nothing_captures())
    return false;
  CUcontext ctx = NULL;
  CUevent ev = NULL;
  if (cg_drv.CtxGetCurrent(&ctx) != CUDA_SUCCESS || !ctx ||
      cg_drv.EventCreate(&ev, CU_EVENT_DISABLE_TIMING) != CUDA_SUCCESS)
    return false;
  m->ctx = ctx;
  m->ev = ev;
  return true;
}

void cg_hang_launched(CUgraphExec exec, CUstream s, bool ptsz) {
  uint64_t e = (uint64_t)(uintptr_t)exec, now = cg_hang_now();
  int at = find(e);
  uint64_t n = at >= 0 ? __atomic_add_fetch(&infos[at].launches, 1, __ATOMIC_RELAXED) : 0;
  __atomic_store_n(&last_launch_ns, now, __ATOMIC_RELAXED);
  uint64_t seq = __atomic_add_fetch(&launch_seq, 1, __ATOMIC_RELAXED);
  marker *m = &markers[seq % MARKERS];
  CUresult (*record)(CUevent, CUstream) = (CUresult(*)(CUevent, CUstream))cg_ep_real[CG_EP_cuEventRecord];
  if (!record || !cg_nothing_captures() || !marker_event(m))
    return;
  bool legacy = (s == NULL && !ptsz) || s == CU_STREAM_LEGACY;
  if (legacy && !cg_gate_lock_if_idle())
    return;
  __atomic_add_fetch(&m->gen, 1, __ATOMIC_ACQ_REL); /* odd: being filled */
  m->exec = e;
  m->stream = (uint64_t)(uintptr_t)s;
  m->launch = n;
  m->at_ns = now;
  m->info = at;
  m->seq = record(m->ev, s) == CUDA_SUCCESS ? seq : 0;
  __atomic_add_fetch(&m->gen, 1, __ATOMIC_RELEASE);
  if (legacy)
    cg_gate_unlock();
}

bool cg_hang_launching(uint64_t now, uint64_t limit_ns) {
  return now < __atomic_load_n(&last_launch_ns, __ATOMIC_RELAXED) + limit_ns;
}

static void seen_exec(int at, cg_hang_launch_seen *o) {
  if (at < 0)
    return;
  const exec_info *x = &infos[at];
  o->capture_id = x->capture_id;
  o->collectives = x->collectives;
  o->kernels = x->kernels;
  memcpy(o->collective, x->collective, sizeof o->collective);
  memcpy(o->kernel, x->kernel, sizeof o->kernel);
  o->kernel[sizeof o->kernel - 1] = '\0';
  memcpy(o->site, x->site, sizeof o->site);
  o->collective[sizeof o->collective - 1] = o->site[sizeof o->site - 1] = '\0';
}

/* The watcher's own: what each marker was found to be, and whether the
 * last look found a launch older than the limit still running. */
static bool any_pending;

bool cg_hang_launch_pending(void) { return any_pending; }
static uint64_t done_seq[MARKERS], said_seq[MARKERS];
static CUcontext watcher_ctx;

/* One marker's launch, copied whole or not at all. */
static bool copy_marker(int i, marker *out) {
  const marker *m = &markers[i];
  uint32_t g = __atomic_load_n(&m->gen, __ATOMIC_ACQUIRE);
  if (g & 1)
    return false;
  *out = *m;
  __atomic_thread_fence(__ATOMIC_ACQUIRE);
  return __atomic_load_n(&m->gen, __ATOMIC_RELAXED) == g && out->seq;
}

/* Whether the marker's launch is still running; asked while nothing
 * captures, on the marker's context. */
static bool pending(const marker *m) {
  CUresult (*query)(CUevent) = (CUresult(*)(CUevent))cg_ep_real[CG_EP_cuEventQuery];
  if (!query || !cg_drv.CtxSetCurrent || !cg_nothing_captures())
    return false;
  static bool relaxed; /* the watcher's thread: no capture prohibits it, whatever begins meanwhile */
  CUresult (*exchange)(CUstreamCaptureMode *) =
      (CUresult(*)(CUstreamCaptureMode *))cg_ep_real[CG_EP_cuThreadExchangeStreamCaptureMode];
  if (!relaxed) {
    CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_RELAXED;
    if (!exchange || exchange(&mode) != CUDA_SUCCESS)
      return false;
    relaxed = true;
  }
  if (watcher_ctx != m->ctx && cg_drv.CtxSetCurrent(m->ctx) == CUDA_SUCCESS)
    watcher_ctx = m->ctx;
  return query(m->ev) == CUDA_ERROR_NOT_READY;
}

int cg_hang_launches_stuck(uint64_t now, uint64_t limit_ns, cg_hang_launch_seen *out, int max) {
  static marker old[MARKERS]; /* each stream's oldest pending launch, by index in out */
  int n = 0;
  any_pending = false;
  for (int i = 0; i < MARKERS; i++) {
    marker m;
    if (!copy_marker(i, &m) || m.seq == done_seq[i] || now < m.at_ns + limit_ns)
      continue;
    if (!pending(&m)) {
      done_seq[i] = m.seq;
      continue;
    }
    any_pending = true;
    int k = 0;
    while (k < n && old[k].stream != m.stream)
      k++;
    if (k == n) {
      if (n == max)
        continue;
      n++;
    } else if (old[k].seq < m.seq) {
      continue;
    }
    old[k] = m;
  }
  int said = 0;
  for (int k = 0; k < n; k++) {
    int i = (int)(old[k].seq % MARKERS);
    if (said_seq[i] == old[k].seq)
      continue;
    said_seq[i] = old[k].seq;
    cg_hang_launch_seen *o = &out[said++];
    memset(o, 0, sizeof *o);
    o->exec = old[k].exec;
    o->stream = old[k].stream;
    o->launch = old[k].launch;
    o->waited_ns = now - old[k].at_ns;
    seen_exec(old[k].info, o);
  }
  return said;
}

int cg_hang_launch_census(cg_hang_launch_seen *out, int max) {
  int n = 0;
  for (int i = 0; i < EXECS && n < max; i++) {
    uint64_t e = __atomic_load_n(&keys[i], __ATOMIC_ACQUIRE);
    uint64_t launches = __atomic_load_n(&infos[i].launches, __ATOMIC_RELAXED);
    if (e <= TOMB || launches == infos[i].census_at)
      continue;
    infos[i].census_at = launches;
    cg_hang_launch_seen *o = &out[n++];
    memset(o, 0, sizeof *o);
    o->exec = e;
    o->launch = launches;
    seen_exec(i, o);
  }
  return n;
}

unsigned cg_hang_collective_execs(cg_hang_launch_seen *first) {
  unsigned n = 0;
  for (int i = 0; i < EXECS; i++) {
    uint64_t e = __atomic_load_n(&keys[i], __ATOMIC_ACQUIRE);
    if (e <= TOMB || !infos[i].collectives)
      continue;
    if (n++ == 0 && first) {
      memset(first, 0, sizeof *first);
      first->exec = e;
      first->launch = __atomic_load_n(&infos[i].launches, __ATOMIC_RELAXED);
      seen_exec(i, first);
    }
  }
  return n;
}

uint64_t cg_hang_latest_graph(char *buf, unsigned cap) {
  cg_begin_site c;
  if (cap)
    buf[0] = '\0';
  if (!graph_back(1, &c))
    return 0;
  if (cap)
    cg_begin_site_text(&c, buf, cap);
  return c.capture_id;
}
