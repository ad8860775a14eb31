/* Where a driver call was made, natively, without unwinding on every call.
 *
 * A full unwind (glibc's backtrace through libgcc) costs about a microsecond
 * a frame, more through big C++ libraries: 4 to 7 us for a capture begun by
 * torch. The report only needs the first frame outside capguard,
 * libcuda and libcudart (cg_native_where_frames), so:
 *
 * - the wrapper's own return address comes free. When it lies outside the
 *   plumbing (a program or library calling the driver itself: ctypes,
 *   Triton's launcher, a C program), it is the site, and nothing is unwound.
 *   Whether an address is plumbing is asked of the loader once per address
 *   (_dl_find_object: no symbol-table scan) and kept.
 * - through the plumbing (torch -> libcudart -> the driver), the first call
 *   from a return address is unwound, and the return addresses found are
 *   kept with the stack slots that held them, as offsets from the slot of
 *   the wrapper's own return address. A later call from the same return
 *   address checks that each kept address is in its slot of the current
 *   stack, innermost first: the first matches exactly (it is the wrapper's
 *   return address), and a match at slot k means frame k+1 is the function
 *   that frame k's layout (fixed, for a given return address) says, so the
 *   chain is the current one. Any mismatch (another caller of the same
 *   libcudart function, a frame of variable size) unwinds, as before. Slots
 *   are read only inside the calling thread's own stack (its bounds, asked
 *   once per thread), above the wrapper's frame: memory that is mapped.
 */
#include "stack.h"
#include "loader_gate.h"

#include <dlfcn.h>
#include <execinfo.h>
#include <link.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "capguard/frame_filter.h"
#include "locks.h"

/* ---- which object an address is in, without dladdr's symbol scan ------ */

/* glibc 2.35's _dl_find_object, looked up at run time (older glibc: NULL,
 * and dl_iterate_phdr does it). */
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 35))
#define CG_HAVE_DL_FIND_OBJECT 1
typedef int (*find_object_fn)(void *, struct dl_find_object *);
static _Atomic(void *) g_find_object;
#endif

typedef struct {
  uintptr_t addr;
  const char *name;
  uintptr_t start;
  bool found;
} object_query;

static int object_of_cb(struct dl_phdr_info *pi, size_t size, void *data) {
  (void)size;
  object_query *q = data;
  for (int i = 0; i < pi->dlpi_phnum; i++) {
    const ElfW(Phdr) *ph = &pi->dlpi_phdr[i];
    if (ph->p_type != PT_LOAD)
      continue;
    uintptr_t lo = pi->dlpi_addr + ph->p_vaddr;
    if (q->addr >= lo && q->addr < lo + ph->p_memsz) {
      q->name = pi->dlpi_name;
      q->start = pi->dlpi_addr;
      q->found = true;
      return 1;
    }
  }
  return 0;
}

/* The file name of the object holding addr ("" for the main program) and
 * its load address; false when no object holds it. */
static bool object_of(uintptr_t addr, const char **name, uintptr_t *start) {
#ifdef CG_HAVE_DL_FIND_OBJECT
  find_object_fn find = (find_object_fn)atomic_load_explicit(&g_find_object, memory_order_acquire);
  if (find) {
    struct dl_find_object fo;
    if (find((void *)addr, &fo) != 0 || !fo.dlfo_link_map)
      return false;
    *name = fo.dlfo_link_map->l_name ? fo.dlfo_link_map->l_name : "";
    *start = fo.dlfo_link_map->l_addr;
    return true;
  }
#endif
  object_query q = {.addr = addr};
  cg_dl_iterate_phdr(object_of_cb, &q);
  *name = q.name ? q.name : "";
  *start = q.start;
  return q.found;
}

static uintptr_t own_start(void) {
  static _Atomic uintptr_t own;
  uintptr_t s = atomic_load_explicit(&own, memory_order_relaxed);
  if (!s) {
    const char *name;
    if (object_of((uintptr_t)&own_start, &name, &s))
      atomic_store_explicit(&own, s, memory_order_relaxed);
  }
  return s;
}

/* capguard itself, libcuda, libcudart...: frames the report looks past. */
static bool plumbing_now(uintptr_t ra) {
  const char *name;
  uintptr_t start;
  if (ra <= 1 || !object_of(ra - 1, &name, &start))
    return false;
  if (start == own_start())
    return true;
  const char *slash = strrchr(name, '/');
  return cg_frame_is_plumbing(slash ? slash + 1 : name);
}

/* Verdicts by return address: a word each, (address << 1) | plumbing, so
 * that a reader never sees half an entry. A slot lost to another address
 * is asked again. */
#define CG_PLUMBING_VERDICTS 512
static _Atomic uintptr_t g_verdicts[CG_PLUMBING_VERDICTS];

static size_t slot_of(uintptr_t ra, size_t n) { return (size_t)((ra >> 2) ^ (ra >> 13)) % n; }

static bool is_plumbing(uintptr_t ra) {
  _Atomic uintptr_t *v = &g_verdicts[slot_of(ra, CG_PLUMBING_VERDICTS)];
  uintptr_t seen = atomic_load_explicit(v, memory_order_relaxed);
  if (seen >> 1 == ra)
    return seen & 1;
  bool p = plumbing_now(ra);
  atomic_store_explicit(v, (ra << 1) | (p ? 1u : 0u), memory_order_relaxed);
  return p;
}

/* ---- the calling thread's stack bounds (asked once per thread) --------- */

static __thread uintptr_t t_stack_lo __attribute__((tls_model("initial-exec")));
static __thread uintptr_t t_stack_hi __attribute__((tls_model("initial-exec")));
static __thread int t_stack_state __attribute__((tls_model("initial-exec"))); /* 0 unasked, 1 known, -1 unknown */

static bool stack_bounds(uintptr_t *lo, uintptr_t *hi) {
  if (t_stack_state == 0) {
    pthread_attr_t a;
    void *base = NULL;
    size_t size = 0;
    t_stack_state = -1;
    if (pthread_getattr_np(pthread_self(), &a) == 0) {
      if (pthread_attr_getstack(&a, &base, &size) == 0 && base && size) {
        t_stack_lo = (uintptr_t)base;
        t_stack_hi = (uintptr_t)base + size;
        t_stack_state = 1;
      }
      pthread_attr_destroy(&a);
    }
  }
  *lo = t_stack_lo;
  *hi = t_stack_hi;
  return t_stack_state == 1;
}

/* ---- unwinding once, with the slots ------------------------------------ */

/* libgcc's unwinder, found in the libgcc_s that glibc's backtrace loaded
 * (cg_stack_init warms it up); the shim links nothing but glibc. */
struct _Unwind_Context;
typedef int (*unwind_trace_fn)(struct _Unwind_Context *, void *);
typedef int (*unwind_backtrace_fn)(unwind_trace_fn, void *);
typedef uintptr_t (*unwind_get_fn)(struct _Unwind_Context *);
static _Atomic(void *) g_unwind_backtrace, g_unwind_get_ip, g_unwind_get_cfa;

#define CG_SITE_MAX 12 /* frames kept a path, the caller first */
typedef struct {
  uintptr_t ra0;             /* the wrapper's return address: the key */
  int n;                     /* frames, ra0 included */
  void *frames[CG_SITE_MAX]; /* frames[0] == ra0 */
  uint32_t off[CG_SITE_MAX]; /* frames[k]'s slot minus ra0's */
} site_path;

typedef struct {
  uintptr_t ra0, ra0_slot;
  site_path *out;
  int skipped;
  bool started, ok;
} unwind_walk;

/* libgcc hands each frame's return address (_Unwind_GetIP) with the CFA of
 * the frame it returns from (_Unwind_GetCFA): the return address sits in
 * the word just below that CFA. */
static int unwind_step(struct _Unwind_Context *ctx, void *data) {
  unwind_walk *w = data;
  unwind_get_fn get_ip = (unwind_get_fn)atomic_load(&g_unwind_get_ip);
  unwind_get_fn get_cfa = (unwind_get_fn)atomic_load(&g_unwind_get_cfa);
  uintptr_t ip = get_ip(ctx), slot = get_cfa(ctx) - sizeof(void *);
  if (!w->started) {
    /* capguard's own frames, up to the one the wrapper returns into */
    if (ip != w->ra0)
      return ++w->skipped > 16 ? 5 /* _URC_END_OF_STACK */ : 0;
    /* the slot the wrapper named, or this is not its frame */
    if (slot != w->ra0_slot)
      return 5;
    w->started = true;
  }
  site_path *p = w->out;
  if (slot < w->ra0_slot || slot - w->ra0_slot > UINT32_MAX)
    return 5;
  p->frames[p->n] = (void *)ip;
  p->off[p->n] = (uint32_t)(slot - w->ra0_slot);
  p->n++;
  /* Enough once the first frame outside the plumbing is in. */
  if (!is_plumbing(ip)) {
    w->ok = true;
    return 5;
  }
  return p->n >= CG_SITE_MAX ? 5 : 0;
}

/* Unwinds from the wrapper's caller: true when it got there (p holds the
 * frames from ra0 on), *reached when it went on to a frame outside the
 * plumbing (then p is worth keeping). */
__attribute__((noinline)) static bool unwind_path(uintptr_t ra0, uintptr_t ra0_slot, site_path *p, bool *reached) {
  unwind_backtrace_fn bt = (unwind_backtrace_fn)atomic_load(&g_unwind_backtrace);
  if (!bt)
    return false;
  memset(p, 0, sizeof *p);
  p->ra0 = ra0;
  unwind_walk w = {.ra0 = ra0, .ra0_slot = ra0_slot, .out = p};
  bt(unwind_step, &w);
  *reached = w.ok;
  return p->n > 0;
}

/* ---- kept paths --------------------------------------------------------- */

#define CG_PATH_SETS 64
#define CG_PATH_WAYS 4
static site_path g_paths[CG_PATH_SETS][CG_PATH_WAYS];
static unsigned g_path_next[CG_PATH_SETS];
static pthread_mutex_t g_paths_lock = PTHREAD_MUTEX_INITIALIZER;

/* How far a kept address may have moved from where the frame below it
 * says: a function that realigns its stack (and rsp, -64) puts its caller's
 * return address at a distance that depends on the alignment it was
 * entered with. */
#define CG_SLOT_SLACK 64

/* Reads words of the callers' live frames, redzones of a sanitized caller's
 * locals among them: mapped memory, which a sanitizer must not flag. */
#define CG_READS_CALLER_FRAMES __attribute__((no_sanitize_address))

/* True when every kept address is in its slot now, or (a frame that
 * realigns its stack) within CG_SLOT_SLACK of it and above the one below. */
CG_READS_CALLER_FRAMES static bool path_holds(const site_path *p, uintptr_t ra0_slot, uintptr_t hi) {
  uintptr_t prev = ra0_slot; /* where frame k-1's address was found */
  for (int k = 1; k < p->n; k++) {
    uintptr_t want = prev + (p->off[k] - p->off[k - 1]);
    if (want <= prev || want + sizeof(void *) > hi)
      return false;
    if (*(void *const *)want == p->frames[k]) {
      prev = want;
      continue;
    }
    uintptr_t found = 0;
    for (uintptr_t d = sizeof(void *); d <= CG_SLOT_SLACK && !found; d += sizeof(void *)) {
      if (want - d > prev && *(void *const *)(want - d) == p->frames[k])
        found = want - d;
      else if (want + d + sizeof(void *) <= hi && *(void *const *)(want + d) == p->frames[k])
        found = want + d;
    }
    if (!found)
      return false;
    prev = found;
  }
  return true;
}

static bool path_lookup(uintptr_t ra0, uintptr_t ra0_slot, uintptr_t hi, site_path *out) {
  bool hit = false;
  size_t set = slot_of(ra0, CG_PATH_SETS);
  cg_lock(&g_paths_lock);
  for (int w = 0; w < CG_PATH_WAYS && !hit; w++) {
    const site_path *p = &g_paths[set][w];
    if (p->n && p->ra0 == ra0 && path_holds(p, ra0_slot, hi)) {
      *out = *p;
      hit = true;
    }
  }
  cg_unlock(&g_paths_lock);
  return hit;
}

static void path_keep(const site_path *p) {
  size_t set = slot_of(p->ra0, CG_PATH_SETS);
  cg_lock(&g_paths_lock);
  g_paths[set][g_path_next[set]++ % CG_PATH_WAYS] = *p;
  cg_unlock(&g_paths_lock);
}

/* Fork: the child's lock starts released (another thread may have held it). */
void cg_native_site_atfork_child(void) { pthread_mutex_init(&g_paths_lock, NULL); }

void cg_native_site_init(void) {
#ifdef CG_HAVE_DL_FIND_OBJECT
  atomic_store(&g_find_object, cg_real_dlsym ? cg_real_dlsym(RTLD_DEFAULT, "_dl_find_object") : NULL);
#endif
  if (!cg_real_dlsym)
    return;
  void *gcc = dlopen("libgcc_s.so.1", RTLD_LAZY | RTLD_NOLOAD);
  if (!gcc)
    return;
  void *bt = cg_real_dlsym(gcc, "_Unwind_Backtrace");
  void *ip = cg_real_dlsym(gcc, "_Unwind_GetIP");
  void *cfa = cg_real_dlsym(gcc, "_Unwind_GetCFA");
  if (bt && ip && cfa) {
    atomic_store(&g_unwind_get_ip, ip);
    atomic_store(&g_unwind_get_cfa, cfa);
    atomic_store(&g_unwind_backtrace, bt);
  }
  /* kept open: we hold pointers into it */
}

/* A caller capguard has not judged yet, plumbing, or none given: the
 * unwind (or the verdict) is worked out apart from the common answer,
 * whose frame then holds no path. */
static __attribute__((noinline)) CG_READS_CALLER_FRAMES size_t native_site_slow(void *ra0, void *ra0_slot,
                                                                                void **frames, size_t max) {
  uintptr_t ra = (uintptr_t)ra0, slot = (uintptr_t)ra0_slot, lo, hi;
  if (ra && !is_plumbing(ra)) {
    frames[0] = ra0;
    return 1;
  }
  site_path p;
  bool bounded = ra && slot && stack_bounds(&lo, &hi) && slot >= lo && slot + sizeof(void *) <= hi &&
                 *(void *const *)slot == ra0;
  bool reached = false;
  if (bounded && (path_lookup(ra, slot, hi, &p) || unwind_path(ra, slot, &p, &reached))) {
    if (reached)
      path_keep(&p);
    size_t n = (size_t)p.n < max ? (size_t)p.n : max;
    memcpy(frames, p.frames, n * sizeof *frames);
    return n;
  }
  /* No return address given, no stack bounds, no unwinder, or an unwind
   * that did not reach the wrapper's caller: glibc's backtrace, capguard's
   * frames and all (never after an unwind that got somewhere: one unwind a
   * call at most). */
  int got = backtrace(frames, (int)max);
  return got > 0 ? (size_t)got : 0;
}

CG_READS_CALLER_FRAMES size_t cg_native_site(void *ra0, void *ra0_slot, void **frames, size_t max) {
  if (!frames || max == 0)
    return 0;
  /* A caller already judged not to be plumbing (is_plumbing's verdict):
   * the site is the caller, no unwind. */
  uintptr_t ra = (uintptr_t)ra0,
            seen = ra ? atomic_load_explicit(&g_verdicts[slot_of(ra, CG_PLUMBING_VERDICTS)], memory_order_relaxed) : 0;
  if (ra && seen >> 1 == ra && !(seen & 1)) {
    frames[0] = ra0;
    return 1;
  }
  return native_site_slow(ra0, ra0_slot, frames, max);
}
