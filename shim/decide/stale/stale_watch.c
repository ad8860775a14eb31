/* The stale-pointer check's tables and reports (stale_watch.h).
 *
 * Cost, by design: nothing unless CAPGUARD_STALE=1. Then a capture end
 * copies its begin site into a ring; an instantiation walks the graph
 * (stale_walk.c: the queries, once per exec) and indexes its reads by
 * address; a free that returned success makes one load (no exec watched:
 * nothing), else one lookup of its address in that index under this file's
 * lock, whatever the number of live execs; a map or unmap also updates the
 * record of mapped pieces (stale_vmm.c). A launch loads its own exec's slot
 * of cg_stale_suspect_slots (no free touched its memory: nothing more), else
 * a lookup of its exec and one check per allocation a free touched. The lock
 * is this file's own, held across nothing but its tables and those
 * queries; reports are written after it is released. */
#include "locks.h"
#include "stale_watch.h"

#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capguard/kernel_name.h"
#include "config.h"
#include "driver.h"
#include "report.h"
#include "stale_index.h"
#include "stale_layouts.h"
#include "stale_params.h"
#include "stale_vmm.h"
#include "stack.h"
#include "stale_walk.h"
#include "warn.h"

#define MAX_READS 4096  /* per exec; past it the rest are counted, not watched */
#define MAX_EXECS 4096  /* past it a new exec is not watched (said once) */
#define RING 256        /* graphs whose capture site is kept until instantiated */
#define MAX_FINDINGS 64 /* reports one free or launch makes; past it, counted */
#define GRANULE ((uint64_t)2 << 20)

unsigned cg_stale_live;
static uint64_t stale_reads; /* cg_stale_reads() */
unsigned cg_stale_suspect_slots[CG_STALE_SLOTS];
unsigned cg_stale_suspects_any;

typedef struct watched_alloc watched_alloc;
typedef struct watched_exec watched_exec;

typedef struct {
  cg_stale_read r;
  watched_alloc *alloc;
  bool suspect;         /* a free touched it since its exec's last launch check */
  bool free_reported;   /* a free of it reported for this exec */
  bool launch_reported; /* a launch reading it, freed, reported for this exec */
} watched_read;

struct watched_exec {
  uint64_t exec, capture_id;
  bool by_hand;
  cg_begin_site site;
  size_t n;
  watched_read *reads;
  size_t suspects; /* reads suspect; nonzero: counted in its slot */
};

/* One allocation (or mapped piece) some exec reads, indexed by its start:
 * the execs reading it. */
struct watched_alloc {
  uint64_t start, size, buffer_id;
  bool piece;
  size_t n, cap;
  watched_exec **readers;
};

typedef struct {
  uint64_t graph, capture_id;
  cg_begin_site site;
} captured_graph;

/* One lock for the tables. Taken with cg_lock (cancellation off) where it is
 * held across a driver call (a launch's check, an instantiation's); a free,
 * map or unmap holds it across nothing but its tables and malloc, no
 * cancellation point, so takes it plainly: raw_lock, which costs such a call
 * half as much. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static void raw_lock(void) { pthread_mutex_lock(&lock); }
static void raw_unlock(void) { pthread_mutex_unlock(&lock); }
/* Watched allocations counted by a hash of their start: a free at an
 * address no exec reads (nearly all of a program's) looks at one slot and
 * takes no lock. */
#define START_SLOTS (1u << 18)
/* A byte a slot, so that four times as many slots take no more memory (at
 * 4,096 execs one unmap in fourteen of a piece no exec reads took the lock
 * for nothing with 65,536 slots). Changed only under the lock; a count that
 * reaches its top stays there (a free or unmap there then takes the lock,
 * never misses). */
static unsigned char start_slots[START_SLOTS];
static unsigned start_slot(uint64_t start) { return (unsigned)(((start >> 4) * 0x9E3779B97F4A7C15ull) >> 46); }
static void start_count(uint64_t start, int by) {
  unsigned char *c = &start_slots[start_slot(start)];
  unsigned char now = __atomic_load_n(c, __ATOMIC_RELAXED);
  if (now != UCHAR_MAX)
    __atomic_store_n(c, (unsigned char)(now + by), __ATOMIC_RELAXED);
}
static cg_index execs;  /* exec handle -> watched_exec */
static cg_index allocs; /* start -> watched_alloc (several per start: other sizes, buffers) */
static cg_vmm vmm;
static unsigned vmm_pieces; /* nonzero: the walk asks the record (a relaxed load first) */
/* The record of mapped pieces has a lock of its own, a flag, taken inside the
 * tables' lock where both are needed: an allocator maps and unmaps pieces
 * that no exec reads over and over, and such a map or unmap takes only this
 * one (a mutex's lock and unlock cost about 55 instructions, the flag 10).
 * It is held across nothing but the record's own tables and malloc, so a
 * waiter spins briefly, then yields. */
static unsigned char vmm_busy;
static __attribute__((noinline, cold)) void vmm_wait(void) {
  for (unsigned spins = 0; __atomic_exchange_n(&vmm_busy, 1, __ATOMIC_ACQUIRE);)
    while (__atomic_load_n(&vmm_busy, __ATOMIC_RELAXED))
      if (++spins > 64)
        sched_yield();
}
static inline void vmm_take(void) {
  if (__builtin_expect(__atomic_exchange_n(&vmm_busy, 1, __ATOMIC_ACQUIRE), 0))
    vmm_wait();
}
static inline void vmm_give(void) { __atomic_store_n(&vmm_busy, 0, __ATOMIC_RELEASE); }
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

typedef struct {
  finding *fs;
  size_t n, more;
  bool oom;
} findings;

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

/* Under the lock: x counted suspect (or no longer) in its slot. */
static void suspect_slot(const watched_exec *x, int by) {
  __atomic_add_fetch(&cg_stale_suspect_slots[cg_stale_slot((const void *)(uintptr_t)x->exec)], (unsigned)by,
                     __ATOMIC_RELAXED);
  __atomic_add_fetch(&cg_stale_suspects_any, (unsigned)by, __ATOMIC_RELAXED);
}

static void mark_suspect(watched_exec *x, watched_read *w) {
  if (w->suspect)
    return;
  w->suspect = true;
  if (x->suspects++ == 0)
    suspect_slot(x, 1);
}

/* Under the lock: x unlinked from every allocation it reads, and freed. */
static void drop(watched_exec *x) {
  for (size_t i = 0; i < x->n; i++) {
    watched_alloc *a = x->reads[i].alloc;
    if (!a)
      continue;
    for (size_t k = 0; k < a->n; k++)
      if (a->readers[k] == x) {
        a->readers[k] = a->readers[--a->n];
        break;
      }
    for (size_t j = i; j < x->n; j++) /* its other reads of a: unlinked already */
      if (x->reads[j].alloc == a)
        x->reads[j].alloc = NULL;
    if (a->n == 0) {
      (void)cg_index_del(&allocs, a->start, a);
      start_count(a->start, -1);
      free(a->readers);
      free(a);
    }
  }
  if (x->suspects)
    suspect_slot(x, -1);
  free(x->reads);
  free(x);
}

/* Under the lock: the record of x's read w in the index (made when new). */
static watched_alloc *alloc_for(const cg_stale_read *r) {
  size_t pos = 0;
  watched_alloc *a;
  while ((a = cg_index_next(&allocs, r->start, &pos)))
    if (a->size == r->size && a->buffer_id == r->buffer_id && a->piece == r->piece)
      return a;
  a = calloc(1, sizeof *a);
  if (!a)
    return NULL;
  a->start = r->start;
  a->size = r->size;
  a->buffer_id = r->buffer_id;
  a->piece = r->piece;
  if (!cg_index_put(&allocs, a->start, a)) {
    free(a);
    return NULL;
  }
  start_count(a->start, 1);
  return a;
}

/* Under the lock: x's reads linked to their allocations; false out of memory. */
static bool index_reads(watched_exec *x) {
  for (size_t i = 0; i < x->n; i++) {
    watched_alloc *a = alloc_for(&x->reads[i].r);
    if (!a)
      return false;
    x->reads[i].alloc = a;
    if (a->n && a->readers[a->n - 1] == x)
      continue; /* x's reads are linked one after the other: x is a's last reader if at all */
    if (a->n == a->cap) {
      size_t cap = a->cap ? a->cap * 2 : 4;
      watched_exec **r = realloc(a->readers, cap * sizeof *r);
      if (!r)
        return false;
      a->readers = r;
      a->cap = cap;
    }
    a->readers[a->n++] = x;
  }
  return true;
}

/* The walk's look at capguard's own record: a mapped piece. */
static bool own_record(uint64_t v, cg_stale_read *r) {
  if (!__atomic_load_n(&vmm_pieces, __ATOMIC_RELAXED))
    return false;
  vmm_take();
  const cg_vmm_piece *p = cg_vmm_find(&vmm, v);
  if (p) {
    r->start = p->start;
    r->size = p->size;
    r->buffer_id = p->phys;
    r->piece = true;
  }
  vmm_give();
  return p != NULL;
}

/* What the walk could not read, said once per run: how many kernel nodes, and which kernels. */
static void say_unsplit(const cg_stale_walk_counts *c) {
  static bool said;
  if (__atomic_exchange_n(&said, true, __ATOMIC_RELAXED))
    return;
  char names[600] = "";
  size_t used = 0;
  for (size_t i = 0; i < c->n_unsplit_fn && used + 2 < sizeof names; i++) {
    const char *name = NULL;
    char buf[128] = "(unknown)";
    if (c->unsplit_fn[i] && cg_drv.FuncGetName && cg_drv.FuncGetName(&name, c->unsplit_fn[i]) == CUDA_SUCCESS &&
        name)
      cg_kernel_display_name(name, cg_host_demangler(), buf, sizeof buf);
    int k = snprintf(names + used, sizeof names - used, "%s%s", i ? ", " : "", buf);
    used = k > 0 && (size_t)k < sizeof names - used ? used + (size_t)k : sizeof names - 1;
  }
  cg_warn("stale check: %zu kernel node%s of a graph could not be read (no parameter layout on driver %d; "
          "docs/stale.md): %s%s; the memory they read is not watched",
          c->unsplit, c->unsplit == 1 ? "" : "s", cg_driver_version(), names,
          c->n_unsplit_fn == CG_STALE_UNSPLIT_NAMED ? ", ..." : "");
}

/* Walks g: the exec's record, not yet linked (NULL when it reads nothing watched). */
static watched_exec *walked(CUgraph g) {
  static bool said_driver, said_full;
  cg_stale_read *reads = malloc(MAX_READS * sizeof *reads);
  if (!reads) {
    cg_warn_oom("a graph exec the stale check would watch");
    return NULL;
  }
  cg_stale_walk_counts counts;
  int n = cg_stale_walk(g, reads, MAX_READS, &counts, own_record);
  if (n == -2)
    cg_warn_oom("a graph exec the stale check would watch");
  if (counts.unsplit)
    say_unsplit(&counts);
  if (counts.dropped)
    say_once(&said_full, "stale check: a graph exec reads more than 4096 allocations; the rest are not watched");
  if (n == -1)
    say_once(&said_driver, "stale check: this driver cannot split kernel parameters (cuFuncGetParamInfo is "
                           "CUDA 12.4 and later); no graph is watched");
  watched_exec *x = n > 0 ? calloc(1, sizeof *x) : NULL;
  watched_read *w = x ? calloc((size_t)n, sizeof *w) : NULL;
  if (n > 0 && !w)
    cg_warn_oom("a graph exec the stale check would watch");
  for (int i = 0; w && i < n; i++)
    w[i].r = reads[i];
  free(reads);
  if (!w) {
    free(x);
    return NULL;
  }
  x->n = (size_t)n;
  x->reads = w;
  x->by_hand = true;
  return x;
}

void cg_stale_instantiated(CUgraphExec exec, CUgraph g) {
  static bool said_capturing, said_execs, said_oom;
  if (!cg_cfg.stale || !exec || !g)
    return;
  if (!cg_nothing_captures()) {
    say_once(&said_capturing, "stale check: a graph instantiated while a capture is open is not walked (its "
                              "queries wait for no capture); frees of the memory it reads are not checked");
    return;
  }
  watched_exec *x = walked(g);
  if (!x)
    return;
  x->exec = (uint64_t)(uintptr_t)exec;
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
  size_t pos = 0;
  watched_exec *old = cg_index_next(&execs, x->exec, &pos); /* a handle given out again, its destroy unseen */
  if (old) {
    (void)cg_index_del(&execs, old->exec, old);
    drop(old);
    __atomic_sub_fetch(&cg_stale_live, 1, __ATOMIC_RELAXED);
  }
  bool full = execs.n >= MAX_EXECS, ok = !full && index_reads(x) && cg_index_put(&execs, x->exec, x);
  if (!ok)
    drop(x);
  else
    __atomic_add_fetch(&cg_stale_live, 1, __ATOMIC_RELAXED);
  cg_unlock(&lock);
  if (full)
    say_once(&said_execs, "stale check: 4096 graph execs watched; newer ones are not");
  else if (!ok)
    say_once(&said_oom, "stale check: out of memory: a graph exec is not watched");
}

void cg_stale_exec_destroyed(CUgraphExec exec) {
  if (!cg_stale_watching())
    return;
  uint64_t key = (uint64_t)(uintptr_t)exec;
  cg_lock(&lock);
  size_t pos = 0;
  watched_exec *x = cg_index_next(&execs, key, &pos);
  if (x) {
    (void)cg_index_del(&execs, key, x);
    drop(x);
    __atomic_sub_fetch(&cg_stale_live, 1, __ATOMIC_RELAXED);
  }
  cg_unlock(&lock);
}

/* Under the lock: a finding for read i of x (how many of x's reads read the
 * same allocation counted in). */
static void found(findings *out, cg_event_kind kind, const watched_exec *x, size_t i, uint64_t now_id) {
  if (!out->fs && !(out->fs = malloc(MAX_FINDINGS * sizeof *out->fs))) {
    out->oom = true;
    return;
  }
  if (out->n >= MAX_FINDINGS) {
    out->more++;
    return;
  }
  finding *f = &out->fs[out->n++];
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
  f->info.piece = r->piece;
  for (size_t k = 0; k < x->n; k++)
    f->info.reads += x->reads[k].alloc == x->reads[i].alloc;
}

/* The kernel's name for a finding into kernel (a query, only for a report). */
static void name_kernel(const finding *f, char *kernel, size_t cap) {
  const char *name = NULL;
  if (f->what != CG_STALE_KERNEL) {
    name = f->what == CG_STALE_MEMCPY ? "(a memcpy node)" : "(a memset node)";
  } else if (f->fn && ((cg_drv.FuncGetName && cg_drv.FuncGetName(&name, f->fn) == CUDA_SUCCESS) ||
                       (cg_drv.KernelGetName && cg_drv.KernelGetName(&name, (CUkernel)f->fn) == CUDA_SUCCESS))) {
    /* named below */
  } else if (f->fn) {
    name = NULL;
    (void)cg_stale_params_name(f->fn, kernel, cap); /* a driver before 12.3: the image's name */
  }
  if (name) {
    size_t len = strlen(name);
    if (len >= cap)
      len = cap - 1;
    memcpy(kernel, name, len);
    kernel[len] = 0;
  }
}

static void report_all(const char *call, findings *out) {
  static bool said_more;
  if (out->oom)
    cg_warn_oom("a stale-pointer report");
  for (size_t i = 0; i < out->n; i++) {
    finding *f = &out->fs[i];
    char kernel[512] = "";
    name_kernel(f, kernel, sizeof kernel);
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
  if (out->more)
    say_once(&said_more, "stale check: a call touched more than 64 watched allocations; the rest are counted, "
                         "not reported");
  free(out->fs);
}

/* Under the lock: a freed (or unmapped) allocation's readers marked for
 * their next launch; a free at its start reported now, once per exec. */
static void touched(watched_alloc *a, bool report_now, findings *out) {
  for (size_t k = 0; k < a->n; k++) {
    watched_exec *x = a->readers[k];
    bool first = true;
    for (size_t i = 0; i < x->n; i++) {
      watched_read *w = &x->reads[i];
      if (w->alloc != a)
        continue;
      mark_suspect(x, w);
      if (!report_now || w->free_reported)
        continue;
      if (first && !w->launch_reported)
        __atomic_add_fetch(&stale_reads, 1, __ATOMIC_RELAXED);
      w->free_reported = true; /* every read of a counts as reported */
      if (first)
        found(out, CG_EV_STALE_FREE, x, i, 0);
      first = false;
    }
  }
}

/* Under the lock: every watched allocation starting at addr. */
static void freed_at(uint64_t addr, findings *out) {
  size_t pos = 0;
  watched_alloc *a;
  while ((a = cg_index_next(&allocs, addr, &pos)))
    if (!a->piece)
      touched(a, true, out);
}

/* Under the lock: every watched allocation overlapping [lo, lo + len)
 * (pieces start at granule boundaries: looked up there; a range of more
 * granules than the index has slots to look at, the whole index). */
static void freed_range(uint64_t lo, uint64_t len, findings *out) {
  uint64_t hi = lo + len < lo ? UINT64_MAX : lo + len;
  if (len / GRANULE > allocs.cap / 4) { /* a lookup costs about what four slots looked at do */
    for (size_t i = 0; i < allocs.cap; i++) {
      watched_alloc *a = allocs.slots[i].val;
      if (allocs.slots[i].key && a->start < hi && lo < a->start + a->size)
        touched(a, false, out);
    }
    return;
  }
  for (uint64_t at = lo, next; at < hi; at = next) {
    if (__atomic_load_n(&start_slots[start_slot(at)], __ATOMIC_RELAXED)) { /* else nothing watched starts there */
      size_t pos = 0;
      watched_alloc *a;
      while ((a = cg_index_next(&allocs, at, &pos)))
        touched(a, false, out);
    }
    next = (at / GRANULE + 1) * GRANULE;
    if (next <= at)
      break; /* the top of the address space */
  }
}

/* Whether a watched allocation may start in [lo, lo + len) at a granule
 * (where freed_range looks): true when unsure (a range of many granules). */
static bool may_start_in(uint64_t lo, uint64_t len) {
  if (len <= GRANULE && !(lo & (GRANULE - 1))) /* one piece of an allocator's: one slot */
    return __atomic_load_n(&start_slots[start_slot(lo)], __ATOMIC_RELAXED) != 0;
  if (len / GRANULE > 64)
    return true;
  uint64_t hi = lo + len < lo ? UINT64_MAX : lo + len;
  for (uint64_t at = lo; at < hi && at >= lo; at = (at / GRANULE + 1) * GRANULE)
    if (__atomic_load_n(&start_slots[start_slot(at)], __ATOMIC_RELAXED))
      return true;
  return false;
}

/* The record of mapped pieces changed alone: a map, a release, or an unmap
 * (of pieces no exec reads, or after freed_range marked their readers).
 * Inlined: it is most of the common map and unmap. */
static inline __attribute__((always_inline)) void record_only(cg_stale_how how, uint64_t addr, uint64_t len,
                                                              uint64_t aux) {
  bool oom = false;
  vmm_take();
  if (how == CG_STALE_MAP)
    oom = !cg_vmm_map(&vmm, addr, len, aux);
  else if (how == CG_STALE_RELEASE)
    cg_vmm_release(&vmm, aux);
  else
    cg_vmm_unmap(&vmm, addr, len);
  __atomic_store_n(&vmm_pieces, vmm.pieces != 0, __ATOMIC_RELAXED);
  vmm_give();
  if (oom)
    cg_warn_oom("a mapped piece the stale check would know");
}

/* A free or an unmap of memory some exec may read, under the tables' lock;
 * apart from cg_stale_freed, so that its common paths save no registers for
 * this one. */
static __attribute__((noinline)) void freed_watched(const char *call, uint64_t addr, uint64_t len,
                                                     cg_stale_how how) {
  findings out = {0};
  raw_lock();
  if (how == CG_STALE_RANGE) {
    /* The record changed under the tables' lock too: a launch (which holds
     * it) sees the piece unmapped only once its readers are marked. */
    freed_range(addr, len, &out);
    record_only(CG_STALE_RANGE, addr, len, 0);
  } else if (how == CG_STALE_AT) {
    freed_at(addr, &out);
  } else { /* memory capguard cannot place: every read not of a mapped piece, at its next launch */
    for (size_t i = 0; i < allocs.cap; i++)
      if (allocs.slots[i].key && !((watched_alloc *)allocs.slots[i].val)->piece)
        touched(allocs.slots[i].val, false, &out);
  }
  raw_unlock();
  if (out.n || out.more || out.oom)
    report_all(call, &out);
}

void cg_stale_freed(const char *call, uint64_t addr, uint64_t len, cg_stale_how how, uint64_t aux) {
  if (!cg_cfg.stale || (!CG_STALE_KEEPS_RECORD(how) && !cg_stale_watching()))
    return;
  if (how == CG_STALE_AT && !__atomic_load_n(&start_slots[start_slot(addr)], __ATOMIC_RELAXED))
    return; /* no watched allocation starts there */
  if (how == CG_STALE_MAP || how == CG_STALE_RELEASE || (how == CG_STALE_RANGE && !may_start_in(addr, len)))
    record_only(how, addr, len, aux);
  else
    freed_watched(call, addr, len, how);
}

/* Under the lock: what is at w's memory now: its buffer id, a mapped
 * piece's physical allocation, 0 when nothing. */
static uint64_t now_at(const watched_read *w) {
  if (w->r.piece) {
    vmm_take();
    const cg_vmm_piece *p = cg_vmm_find(&vmm, w->r.start);
    uint64_t phys = p ? p->phys : 0;
    vmm_give();
    return phys;
  }
  unsigned long long now = 0;
  if (cg_drv.PointerGetAttribute(&now, CU_POINTER_ATTRIBUTE_BUFFER_ID, (CUdeviceptr)w->r.start) != CUDA_SUCCESS)
    now = 0; /* freed, and nothing there now */
  return now;
}

void cg_stale_launch(const char *call, CUgraphExec exec) {
  findings out = {0};
  cg_lock(&lock);
  size_t pos = 0;
  watched_exec *x = cg_index_next(&execs, (uint64_t)(uintptr_t)exec, &pos);
  for (size_t i = 0; x && x->suspects && i < x->n; i++) {
    watched_read *w = &x->reads[i];
    if (!w->suspect)
      continue;
    w->suspect = false;
    if (--x->suspects == 0)
      suspect_slot(x, -1);
    if (w->launch_reported)
      continue;
    uint64_t now = now_at(w);
    if (now == w->r.buffer_id)
      continue; /* still its own memory */
    if (!w->free_reported)
      __atomic_add_fetch(&stale_reads, 1, __ATOMIC_RELAXED);
    for (size_t k = 0; k < x->n; k++)
      if (x->reads[k].alloc == w->alloc)
        x->reads[k].launch_reported = true;
    found(&out, CG_EV_STALE_LAUNCH, x, i, now);
  }
  cg_unlock(&lock);
  report_all(call, &out);
}

uint64_t cg_stale_reads(void) { return __atomic_load_n(&stale_reads, __ATOMIC_RELAXED); }

void cg_stale_atfork_child(void) {
  pthread_mutex_init(&lock, NULL);
  vmm_busy = 0;
  cg_stale_params_atfork_child();
  cg_stale_layouts_atfork_child();
}
