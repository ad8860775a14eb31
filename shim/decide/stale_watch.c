/* The stale-pointer check's tables and reports (stale_watch.h).
 *
 * Cost, by design: nothing unless CAPGUARD_STALE=1. Then a capture end
 * copies its begin site into a ring; an instantiation walks the graph
 * (stale_walk.c: the queries, once per exec); a free that returned success
 * makes one load (no exec watched: nothing), else a pass over the watched
 * reads under this file's lock; a launch makes one load (no free touched
 * watched memory: nothing), else a lookup of its exec and one buffer-id
 * query per allocation a free touched. The lock is this file's own, held
 * across nothing but its tables and those queries; reports are written
 * after it is released. */
#include "locks.h"
#include "stale_watch.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "driver.h"
#include "report.h"
#include "stale_params.h"
#include "stale_walk.h"
#include "warn.h"

#define MAX_READS 4096     /* per exec; past it the rest are counted, not watched */
#define MAX_EXECS 4096     /* past it a new exec is not watched (said once) */
#define RING 256           /* graphs whose capture site is kept until instantiated */
#define MAX_FINDINGS 64    /* reports one free or launch makes; past it, counted */

unsigned cg_stale_live, cg_stale_suspects;

typedef struct {
  cg_stale_read r;
  bool suspect;         /* a free touched it since its exec's last launch check */
  bool free_reported;   /* a free of it reported for this exec */
  bool launch_reported; /* a launch reading it, freed, reported for this exec */
} watched_read;

typedef struct watched_exec {
  uint64_t exec, capture_id;
  bool by_hand;
  cg_begin_site site;
  size_t n;
  watched_read *reads;
  struct watched_exec *next;
} watched_exec;

typedef struct {
  uint64_t graph, capture_id;
  cg_begin_site site;
} captured_graph;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static watched_exec *execs;
static unsigned n_execs;
static captured_graph ring[RING];
static unsigned ring_next;

/* One report to make once the lock is released. */
typedef struct {
  cg_event_kind kind;
  cg_stale_read_info info;
  CUfunction fn;
  unsigned char what; /* stale_walk.h's CG_STALE_KERNEL, _MEMCPY, _MEMSET */
  uint64_t capture_id;
  bool has_site;
  cg_begin_site site;
} finding;

static void say_once(bool *said, const char *what) {
  if (!__atomic_exchange_n(said, true, __ATOMIC_RELAXED))
    cg_warn("%s", what);
}

void cg_stale_captured(CUgraph g, const cg_begin_site *site, uint64_t capture_id) {
  if (!cg_cfg.stale || !g)
    return;
  cg_lock(&lock);
  captured_graph *c = &ring[ring_next++ % RING];
  c->graph = (uint64_t)(uintptr_t)g;
  c->capture_id = capture_id;
  if (site)
    c->site = *site;
  else
    memset(&c->site, 0, sizeof c->site);
  cg_unlock(&lock);
}

/* Under the lock: the exec's record and the link that points at it. */
static watched_exec **find(uint64_t exec) {
  watched_exec **p = &execs;
  while (*p && (*p)->exec != exec)
    p = &(*p)->next;
  return p;
}

static void drop(watched_exec **p) {
  watched_exec *x = *p;
  *p = x->next;
  unsigned suspects = 0;
  for (size_t i = 0; i < x->n; i++)
    suspects += x->reads[i].suspect;
  __atomic_sub_fetch(&cg_stale_suspects, suspects, __ATOMIC_RELAXED);
  __atomic_sub_fetch(&cg_stale_live, 1, __ATOMIC_RELAXED);
  n_execs--;
  free(x->reads);
  free(x);
}

void cg_stale_instantiated(CUgraphExec exec, CUgraph g) {
  static bool said_capturing, said_driver, said_full, said_unsplit, said_execs;
  if (!cg_cfg.stale || !exec || !g)
    return;
  if (!cg_nothing_captures()) {
    say_once(&said_capturing, "stale check: a graph instantiated while a capture is open is not walked (its "
                              "queries wait for no capture); frees of the memory it reads are not checked");
    return;
  }
  cg_stale_read *reads = malloc(MAX_READS * sizeof *reads);
  if (!reads) {
    cg_warn_oom("a graph exec the stale check would watch");
    return;
  }
  cg_stale_walk_counts counts;
  int n = cg_stale_walk(g, reads, MAX_READS, &counts);
  if (n == -2)
    cg_warn_oom("a graph exec the stale check would watch");
  if (counts.unsplit)
    say_once(&said_unsplit, "stale check: a graph holds kernel nodes whose parameters the driver cannot split "
                            "(docs/stale.md); the memory they read is not watched");
  if (counts.dropped)
    say_once(&said_full, "stale check: a graph exec reads more than 4096 allocations; the rest are not watched");
  if (n == -1)
    say_once(&said_driver, "stale check: this driver cannot split kernel parameters (cuFuncGetParamInfo is "
                           "CUDA 12.4 and later); no graph is watched");
  watched_exec *x = n > 0 ? calloc(1, sizeof *x) : NULL;
  watched_read *w = x ? calloc((size_t)n, sizeof *w) : NULL;
  if (n > 0 && !w) {
    cg_warn_oom("a graph exec the stale check would watch");
    n = 0;
  }
  for (int i = 0; i < n; i++)
    w[i].r = reads[i];
  free(reads);
  if (n <= 0) {
    free(x);
    free(w);
    return;
  }
  x->exec = (uint64_t)(uintptr_t)exec;
  x->n = (size_t)n;
  x->reads = w;
  x->by_hand = true;
  cg_lock(&lock);
  /* The newest capture that ended with this graph handle (the driver hands
   * out a destroyed graph's handle again). */
  for (unsigned k = 1; k <= RING; k++) {
    const captured_graph *c = &ring[(ring_next - k) % RING];
    if (c->graph == (uint64_t)(uintptr_t)g) {
      x->by_hand = false;
      x->capture_id = c->capture_id;
      x->site = c->site;
      break;
    }
  }
  watched_exec **old = find(x->exec); /* a handle the driver gave out again, its destroy unseen */
  if (*old)
    drop(old);
  if (n_execs >= MAX_EXECS) {
    cg_unlock(&lock);
    say_once(&said_execs, "stale check: 4096 graph execs watched; newer ones are not");
    free(x->reads);
    free(x);
    return;
  }
  x->next = execs;
  execs = x;
  n_execs++;
  __atomic_add_fetch(&cg_stale_live, 1, __ATOMIC_RELAXED);
  cg_unlock(&lock);
}

void cg_stale_exec_destroyed(CUgraphExec exec) {
  if (!cg_stale_watching())
    return;
  cg_lock(&lock);
  watched_exec **p = find((uint64_t)(uintptr_t)exec);
  if (*p)
    drop(p);
  cg_unlock(&lock);
}

/* Under the lock: a finding for read i of x (how many of x's reads read the
 * same allocation counted in). */
static void found(finding *f, cg_event_kind kind, const watched_exec *x, size_t i, uint64_t now_id) {
  const cg_stale_read *r = &x->reads[i].r;
  memset(f, 0, sizeof *f);
  f->kind = kind;
  f->fn = r->fn;
  f->what = r->what;
  f->capture_id = x->capture_id;
  f->has_site = !x->by_hand;
  f->site = x->site;
  f->info.exec = x->exec;
  f->info.start = r->start;
  f->info.size = r->size;
  f->info.buffer_id = r->buffer_id;
  f->info.now_buffer_id = now_id;
  f->info.node = r->node;
  f->info.arg = r->arg;
  f->info.by_hand = x->by_hand;
  for (size_t k = 0; k < x->n; k++)
    f->info.reads += x->reads[k].r.start == r->start;
}

static void report_all(const char *call, finding *fs, size_t n, size_t more) {
  static bool said_more;
  for (size_t i = 0; i < n; i++) {
    finding *f = &fs[i];
    char kernel[128] = "";
    const char *name = NULL;
    /* Named now, not at the walk: a query, and only for a report. */
    if (f->what != CG_STALE_KERNEL) {
      name = f->what == CG_STALE_MEMCPY ? "(a memcpy node)" : "(a memset node)";
    } else if (f->fn && ((cg_drv.FuncGetName && cg_drv.FuncGetName(&name, f->fn) == CUDA_SUCCESS) ||
                         (cg_drv.KernelGetName && cg_drv.KernelGetName(&name, (CUkernel)f->fn) == CUDA_SUCCESS))) {
      /* named below */
    } else if (f->fn) {
      name = NULL;
      (void)cg_stale_params_name(f->fn, kernel, sizeof kernel); /* a driver before 12.3: the image's name */
    }
    if (name) {
      size_t len = strlen(name);
      if (len >= sizeof kernel)
        len = sizeof kernel - 1;
      memcpy(kernel, name, len);
      kernel[len] = 0;
    }
    f->info.kernel = kernel;
    cg_event e;
    memset(&e, 0, sizeof e);
    e.kind = f->kind;
    e.verdict = CG_VERDICT_STALE;
    e.call = call;
    e.driver_result = 0;
    e.capture.id = f->capture_id;
    e.capture.status = CG_CAPTURE_ENDED;
    e.has_handle = true;
    e.handle = f->info.exec;
    e.stale = &f->info;
    cg_report_and_free(&e, NULL, f->has_site ? &f->site : NULL, "a stale-pointer report");
  }
  if (more)
    say_once(&said_more, "stale check: a call touched more than 64 watched allocations; the rest are counted, "
                         "not reported");
}

void cg_stale_freed(const char *call, uint64_t addr, uint64_t len, cg_stale_how how) {
  if (!cg_stale_watching())
    return;
  finding *fs = NULL;
  size_t n = 0, more = 0;
  bool oom = false;
  cg_lock(&lock);
  for (watched_exec *x = execs; x; x = x->next) {
    for (size_t i = 0; i < x->n; i++) {
      watched_read *w = &x->reads[i];
      bool hit = how == CG_STALE_ANY ||
                 (how == CG_STALE_AT ? w->r.start == addr
                                     : addr < w->r.start + w->r.size && w->r.start < addr + len);
      if (!hit)
        continue;
      if (!w->suspect) {
        w->suspect = true;
        __atomic_add_fetch(&cg_stale_suspects, 1, __ATOMIC_RELAXED);
      }
      if (how == CG_STALE_ANY || w->free_reported)
        continue;
      /* Once per exec and allocation: every read of it counts as reported. */
      for (size_t k = 0; k < x->n; k++)
        if (x->reads[k].r.start == w->r.start)
          x->reads[k].free_reported = true;
      if (!fs && !(fs = malloc(MAX_FINDINGS * sizeof *fs)))
        oom = true;
      else if (n < MAX_FINDINGS)
        found(&fs[n++], CG_EV_STALE_FREE, x, i, 0);
      else
        more++;
    }
  }
  cg_unlock(&lock);
  if (oom)
    cg_warn_oom("a stale-pointer report");
  report_all(call, fs, n, more);
  free(fs);
}

void cg_stale_launch(const char *call, CUgraphExec exec) {
  finding *fs = NULL;
  size_t n = 0, more = 0;
  bool oom = false;
  cg_lock(&lock);
  watched_exec *x = *find((uint64_t)(uintptr_t)exec);
  for (size_t i = 0; x && i < x->n; i++) {
    watched_read *w = &x->reads[i];
    if (!w->suspect)
      continue;
    w->suspect = false;
    __atomic_sub_fetch(&cg_stale_suspects, 1, __ATOMIC_RELAXED);
    if (w->launch_reported)
      continue;
    unsigned long long now = 0;
    if (cg_drv.PointerGetAttribute(&now, CU_POINTER_ATTRIBUTE_BUFFER_ID, (CUdeviceptr)w->r.start) != CUDA_SUCCESS)
      now = 0; /* freed, and nothing there now */
    if (now == w->r.buffer_id)
      continue; /* still its own memory */
    for (size_t k = 0; k < x->n; k++)
      if (x->reads[k].r.start == w->r.start)
        x->reads[k].launch_reported = true;
    if (!fs && !(fs = malloc(MAX_FINDINGS * sizeof *fs)))
      oom = true;
    else if (n < MAX_FINDINGS)
      found(&fs[n++], CG_EV_STALE_LAUNCH, x, i, now);
    else
      more++;
  }
  cg_unlock(&lock);
  if (oom)
    cg_warn_oom("a stale-pointer report");
  report_all(call, fs, n, more);
  free(fs);
}

void cg_stale_atfork_child(void) {
  pthread_mutex_init(&lock, NULL);
  cg_stale_params_atfork_child();
}
