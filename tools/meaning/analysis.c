#include "analysis.h"

#include "ended_early.h"
#include "findings.h"
#include "kernel_display.h"
#include "name_cut.h"
#include "offender.h"
#include "xalloc.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define xrealloc(p, n) cg_xrealloc((p), (n), "analysing the log")


static const cgl_log *sort_log;
static int cmp_broken(const void *pa, const void *pb) {
  const cgr_broken *x = pa, *y = pb;
  const cgl_capture *cx = &sort_log->caps[x->capture], *cy = &sort_log->caps[y->capture];
  if (cx->begin_ns != cy->begin_ns)
    return cx->begin_ns < cy->begin_ns ? -1 : 1;
  return x->capture < y->capture ? -1 : x->capture > y->capture;
}
static int cmp_kernel(const void *pa, const void *pb) {
  const cgr_kernel *x = pa, *y = pb;
  if (x->loads != y->loads)
    return x->loads > y->loads ? -1 : 1;
  return strcmp(x->name, y->name);
}
static int cmp_site(const void *pa, const void *pb) {
  const cgr_site *x = pa, *y = pb;
  if (x->count != y->count)
    return x->count > y->count ? -1 : 1;
  return x->first_event < y->first_event ? -1 : x->first_event > y->first_event;
}

static void find_broken(const cgl_log *log, cgr_analysis *a) {
  a->broken = xrealloc(NULL, log->n_caps * sizeof *a->broken);
  for (size_t c = 0; c < log->n_caps; c++) {
    if (!cgl_capture_broken(log, c))
      continue;
    /* a capture the shim says nothing it saw broke: a refused call logged
     * in it came after the break, and is not its offender */
    long first = log->caps[c].by == CGL_BY_UNWATCHED ? -1 : log->caps[c].first_break;
    a->broken[a->n_broken++] = (cgr_broken){c, first};
  }
  sort_log = log;
  if (a->n_broken)
    qsort(a->broken, a->n_broken, sizeof *a->broken, cmp_broken);
}

/* Pointer-keyed tables: interned strings are equal exactly when their
 * pointers are. Open addressing in one array of 24-byte slots, at most
 * three quarters full: a pair of a site and a kernel loaded there costs
 * 32 to 64 bytes, where an entry of its own with uthash's handle cost 96
 * (about a tenth of a large log's peak). */
typedef struct {
  const void *key[2];
  size_t value; /* the index + 1; 0: an empty slot */
} ptr_entry;
typedef struct {
  ptr_entry *slots;
  size_t n, cap; /* cap a power of two, or 0 */
} ptr_table;

static size_t ptr_hash(const void *a, const void *b) {
  unsigned long long h = (unsigned long long)(uintptr_t)a * 0x9e3779b97f4a7c15ull;
  h ^= (unsigned long long)(uintptr_t)b * 0xc2b2ae3d27d4eb4full;
  return (size_t)(h ^ (h >> 29));
}
/* The slot of (a, b): its entry, or the empty slot where it goes. */
static ptr_entry *ptr_slot(const ptr_table *t, const void *a, const void *b) {
  for (size_t i = ptr_hash(a, b) & (t->cap - 1);; i = (i + 1) & (t->cap - 1)) {
    ptr_entry *e = &t->slots[i];
    if (!e->value || (e->key[0] == a && e->key[1] == b))
      return e;
  }
}
/* The index (a, b) was added with, SIZE_MAX when it was not. */
static size_t ptr_find(const ptr_table *t, const void *a, const void *b) {
  return t->cap ? ptr_slot(t, a, b)->value - 1 : SIZE_MAX;
}
/* Add (a, b), which is not there. */
static void ptr_add(ptr_table *t, const void *a, const void *b, size_t index) {
  if (4 * (t->n + 1) > 3 * t->cap) {
    ptr_table big = {NULL, t->n, t->cap ? 2 * t->cap : 64};
    big.slots = xrealloc(NULL, big.cap * sizeof *big.slots);
    memset(big.slots, 0, big.cap * sizeof *big.slots);
    for (size_t i = 0; i < t->cap; i++)
      if (t->slots[i].value)
        *ptr_slot(&big, t->slots[i].key[0], t->slots[i].key[1]) = t->slots[i];
    free(t->slots);
    *t = big;
  }
  *ptr_slot(t, a, b) = (ptr_entry){{a, b}, index + 1};
  t->n++;
}
static void ptr_free(ptr_table *t) {
  free(t->slots);
  *t = (ptr_table){NULL, 0, 0};
}

static void count_kernel(cgr_analysis *a, ptr_table *index, const char *name, size_t ev, bool served,
                         bool broke, bool with_options) {
  size_t f = ptr_find(index, name, NULL);
  if (f == SIZE_MAX) {
    a->kernels = xrealloc(a->kernels, (a->n_kernels + 1) * sizeof *a->kernels);
    a->kernels[a->n_kernels] = (cgr_kernel){name, 0, 0, ev, false, 0};
    ptr_add(index, name, NULL, a->n_kernels++);
    f = a->n_kernels - 1;
  }
  cgr_kernel *k = &a->kernels[f];
  k->loads++;
  k->served += served;
  k->broke |= broke;
  k->with_options += !served && with_options;
}

/* The sites' lists of calls and kernels, in blocks of an arena of the
 * analysis's own: most sites (a large log has about one a call) list one
 * call and a kernel or two, which an allocation each made 32 bytes and
 * more. A list full at a power of two moves to twice its room; the room
 * it leaves is at most what it holds. */
struct cgr_site_block {
  struct cgr_site_block *prev;
  size_t used, cap;
  const char *v[];
};
static const char **site_room(cgr_analysis *a, size_t n) {
  struct cgr_site_block *b = a->site_blocks;
  if (!b || b->cap - b->used < n) {
    size_t cap = n > 8192 ? n : 8192;
    struct cgr_site_block *nb = xrealloc(NULL, sizeof *nb + cap * sizeof *nb->v);
    nb->used = 0;
    nb->cap = cap;
    nb->prev = b;
    a->site_blocks = b = nb;
  }
  b->used += n;
  return &b->v[b->used - n];
}
static void site_push(cgr_analysis *a, const char ***v, size_t *n, const char *x) {
  if ((*n & (*n - 1)) == 0) { /* 0 or a power of two: full */
    const char **nv = site_room(a, *n ? 2 * *n : 1);
    if (*n)
      memcpy(nv, *v, *n * sizeof *nv);
    *v = nv;
  }
  (*v)[(*n)++] = x;
}

/* Whether site s loaded kernel name already. Most sites load a few kernels:
 * their own list is searched, and only the sites past FEW_KERNELS have
 * their pairs in site_kernels (a table of every pair was a tenth of the
 * peak of `report --all` of a large log). */
enum { FEW_KERNELS = 8 };
static bool site_has_kernel(const ptr_table *site_kernels, const cgr_site *s, const char *name) {
  if (s->n_kernels > FEW_KERNELS)
    return ptr_find(site_kernels, s->site, name) != SIZE_MAX;
  for (size_t k = 0; k < s->n_kernels; k++)
    if (s->kernels[k] == name)
      return true;
  return false;
}

/* The sites by their (interned) site: open addressing over 4-byte slots
 * holding a site's index + 1 (0: empty), its key a->sites[index].site, at
 * most 0.7 full. A large log has about a site a call: slots holding their
 * key were 24 bytes, and with the old table alive while the new one filled,
 * the peak of `report --all`. */
typedef struct {
  uint32_t *slots;
  size_t cap; /* a power of two, or 0 */
} site_table;
static uint32_t *site_slot(const site_table *t, const cgr_site *sites, const char *site) {
  for (size_t i = ptr_hash(site, NULL) & (t->cap - 1);; i = (i + 1) & (t->cap - 1))
    if (!t->slots[i] || sites[t->slots[i] - 1].site == site)
      return &t->slots[i];
}
/* a->sites[index] added to t (its site is not there yet) */
static void site_add(site_table *t, const cgr_analysis *a, size_t index) {
  if ((index + 2) * 10 > t->cap * 7) {
    site_table big = {NULL, t->cap ? 2 * t->cap : 256};
    big.slots = xrealloc(NULL, big.cap * sizeof *big.slots);
    memset(big.slots, 0, big.cap * sizeof *big.slots);
    for (size_t i = 0; i < t->cap; i++)
      if (t->slots[i])
        *site_slot(&big, a->sites, a->sites[t->slots[i] - 1].site) = t->slots[i];
    free(t->slots);
    *t = big;
  }
  *site_slot(t, a->sites, a->sites[index].site) = (uint32_t)(index + 1);
}

static void count_site(cgr_analysis *a, site_table *index, ptr_table *site_kernels, const cgl_event *e,
                       size_t ev) {
  uint32_t got = index->cap ? *site_slot(index, a->sites, e->site) : 0;
  size_t f = got ? got - 1 : SIZE_MAX;
  if (f == SIZE_MAX) {
    a->sites = xrealloc(a->sites, (a->n_sites + 1) * sizeof *a->sites);
    memset(&a->sites[a->n_sites], 0, sizeof *a->sites);
    a->sites[a->n_sites].site = e->site;
    a->sites[a->n_sites].first_event = ev;
    site_add(index, a, a->n_sites++);
    f = a->n_sites - 1;
  }
  cgr_site *s = &a->sites[f];
  s->count++;
  bool have = false;
  for (size_t k = 0; k < s->n_calls; k++)
    have |= s->calls[k] == e->call;
  if (!have && e->call)
    site_push(a, &s->calls, &s->n_calls, e->call);
  for (size_t i = 0; i < e->kernels->n; i++) {
    const char *name = e->kernels->v[i];
    if (site_has_kernel(site_kernels, s, name))
      continue;
    /* a site's first few kernels are looked for in its own list; the
     * table holds the pairs of the sites that load more */
    if (s->n_kernels == FEW_KERNELS)
      for (size_t k = 0; k < s->n_kernels; k++)
        ptr_add(site_kernels, s->site, s->kernels[k], 0);
    if (s->n_kernels >= FEW_KERNELS)
      ptr_add(site_kernels, s->site, name, 0);
    site_push(a, &s->kernels, &s->n_kernels, name);
  }
}

static void tally(const cgl_log *log, cgr_analysis *a) {
  ptr_table kernel_index = {NULL, 0, 0}, site_kernels = {NULL, 0, 0};
  site_table site_index = {NULL, 0};
  a->procs = xrealloc(NULL, (log->n_procs + 1) * sizeof *a->procs);
  memset(a->procs, 0, (log->n_procs + 1) * sizeof *a->procs);
  for (size_t i = 0; i < log->n_evs; i++) {
    const cgl_event *e = &log->evs[i];
    cg_verdict v = e->verdict < CG_VERDICT_COUNT ? e->verdict : CG_VERDICT_COUNT;
    cg_event_kind kind = e->kind < CG_EV_KIND_COUNT ? e->kind : CG_EV_KIND_COUNT;
    bool served = v == CG_VERDICT_SERVED;
    a->calls++;
    a->verdicts[v]++;
    a->events[kind]++;
    a->procs[e->proc].calls++;
    a->procs[e->proc].served += served;
    if (kind == CG_EV_MODULE_LOAD) {
      a->loads_refused += cg_verdict_breaks(v);
      a->offending_loads += cgr_offending(e);
      a->loads_with_options += cgr_offending(e) && e->with_options;
    } else if (kind == CG_EV_MODULE_UNLOAD) {
      a->unloads_deferred += v == CG_VERDICT_DEFERRED;
    } else if (v < CG_VERDICT_COUNT && cg_word_is(&cg_verdicts, v, CG_WORD_ROUTINE)) {
      a->kept++;
      a->kept_by[v]++;
    }
    /* a rescued load would have broken the capture too: its kernel needs warming up */
    for (size_t k = 0; k < e->kernels->n; k++)
      count_kernel(a, &kernel_index, e->kernels->v[k], i, served,
                   cg_verdict_breaks(v) || v == CG_VERDICT_RESCUED, e->with_options);
    count_site(a, &site_index, &site_kernels, e, i);
  }
  ptr_free(&kernel_index);
  free(site_index.slots);
  ptr_free(&site_kernels);
  if (a->n_kernels) /* qsort of NULL, even of 0 elements, is undefined */
    qsort(a->kernels, a->n_kernels, sizeof *a->kernels, cmp_kernel);
  if (a->n_sites)
    qsort(a->sites, a->n_sites, sizeof *a->sites, cmp_site);
  for (size_t c = 0; c < log->n_caps; c++) {
    a->procs[log->caps[c].proc].seen++;
    long long r = cgl_capture_repeats(&log->caps[c]);
    a->repeats += r > 0 && (unsigned long long)r < SIZE_MAX - a->repeats ? (size_t)r : 0;
  }
  for (size_t b = 0; b < a->n_broken; b++)
    a->procs[log->caps[a->broken[b].capture].proc].broken++;
  /* Processes that exited cleanly say how many captures they began; others count what was seen. */
  for (size_t p = 0; p < log->n_procs; p++) {
    const cgl_process *pr = &log->procs[p];
    a->captures += cgr_proc_captures(a, p);
    a->recorded +=
        pr->has_summary && cgl_process_rare(pr)->recorded > 0 ? (size_t)cgl_process_rare(pr)->recorded : 0;
    a->primed_loaded += pr->has_summary && cgl_process_rare(pr)->primed_loaded > 0
                            ? (size_t)cgl_process_rare(pr)->primed_loaded
                            : 0;
    if (pr->has_summary && cgl_process_rare(pr)->primed_unused > 0 &&
        (size_t)cgl_process_rare(pr)->primed_unused > a->primed_unused)
      a->primed_unused = (size_t)cgl_process_rare(pr)->primed_unused;
    /* Every process reads the same file: the most any skipped, not a sum. */
    if (pr->has_summary && (size_t)cgl_process_rare(pr)->primed_skipped_arch > a->skipped_arch) {
      a->skipped_arch = (size_t)cgl_process_rare(pr)->primed_skipped_arch;
      a->skipped_sm = cgl_process_rare(pr)->skipped_sm;
      a->device_sm = cgl_process_rare(pr)->device_sm;
    }
    a->log_incomplete |= pr->log_incomplete;
    a->ended_early += pr->cuda && !pr->has_summary;
  }
  /* A process gone without its summary recorded only its refused loads:
   * the shim writes those at once (their captures are broken already); an
   * allowed load waits in its queue for the capture's end or the exit, and
   * died with it. A load with options is never recorded. */
  for (size_t i = 0; i < log->n_evs; i++) {
    const cgl_event *e = &log->evs[i];
    const cgl_process *pr = &log->procs[e->proc];
    bool refused = e->verdict == CG_VERDICT_REFUSED || e->verdict == CG_VERDICT_EMULATED;
    a->recorded_unsaid += !pr->has_summary && pr->mode == CG_RUN_GUARD && e->kind == CG_EV_MODULE_LOAD &&
                          refused && e->image_hash && !e->with_options;
  }
}

static void cuda_version(long long v, char *buf, size_t cap) {
  if (v > 0)
    snprintf(buf, cap, "CUDA %lld.%lld", v / 1000, (v % 1000) / 10);
  else
    snprintf(buf, cap, "version unknown");
}

void cgr_why(const cgl_event *e, char *buf, size_t cap) {
  char ver[48];
  bool load = e->kind == CG_EV_MODULE_LOAD, unload = e->kind == CG_EV_MODULE_UNLOAD;
  bool refused = e->verdict == CG_VERDICT_REFUSED;
  if (refused && load) {
    cuda_version(cgl_event_num(e, CGL_EV_DRIVER_VERSION), ver, sizeof ver);
    snprintf(buf, cap, "the driver (%s) refused it: drivers before 12.3 refuse module loads during "
                       "capture", ver);
  } else if (refused && unload) {
    snprintf(buf, cap, "the driver refused it: every driver refuses module unloads during capture");
  } else if (e->verdict == CG_VERDICT_EMULATED) {
    cuda_version(cgl_event_num(e, CGL_EV_EMULATE_DRIVER), ver, sizeof ver);
    snprintf(buf, cap,
             "capguard refused it the way %s would (--emulate-driver %lld): drivers "
             "before 12.3 refuse module loads during capture",
             ver, cgl_event_num(e, CGL_EV_EMULATE_DRIVER));
  } else {
    /* the result in words: what the driver (or capguard for it) answered */
    char result[160];
    cgr_result_words(cgl_event_num(e, CGL_EV_DRIVER_RESULT) >= 0 ? cgl_event_num(e, CGL_EV_DRIVER_RESULT)
                                                                 : cgl_event_num(e, CGL_EV_RESULT),
                     e->meaning, result, sizeof result);
    if (refused)
      snprintf(buf, cap, "the driver refused it during capture (CUresult %s)", result);
    else
      snprintf(buf, cap, "it %s during capture (CUresult %s)",
               e->verdict == CG_VERDICT_FAILED ? "failed" : "was made", result);
  }
}

void cgr_kernel_list(const cgl_event *e, size_t max, char *buf, size_t cap) {
  size_t used = 0, shown = 0;
  char disp[CG_KERNEL_DISPLAY_MAX], prev[CG_KERNEL_DISPLAY_MAX] = "";
  buf[0] = '\0';
  for (size_t i = 0; i < e->kernels->n; i++) {
    cg_kernel_display(e->kernels->v[i], disp, sizeof disp);
    if (shown && !strcmp(disp, prev)) /* a template's instances read alike: named once */
      continue;
    memcpy(prev, disp, sizeof prev);
    if (shown == max) {
      shown++;
      break;
    }
    int n = snprintf(buf + used, cap - used, "%s%s", shown ? ", " : "", disp);
    if (n < 0 || (size_t)n >= cap - used) {
      buf[used] = '\0';
      if (!shown && cap > 6) /* the first name's start, never none: room left for ", ..." */
        used = cg_name_cut(buf, cap - 6, disp);
      shown = shown || i + 1 < e->kernels->n ? max + 1 : 1;
      break;
    }
    used += (size_t)n;
    shown++;
  }
  if ((shown > max || e->kernels_truncated) && used + 6 < cap)
    memcpy(buf + used, ", ...", 6);
}

/* One per (process, graph exec, allocation): the events' strings are
 * interned, so equal ones are equal pointers. */
static size_t stale_reads(const cgl_log *log) {
  size_t n = 0;
  for (size_t i = 0; i < log->n_stale; i++) {
    const cgl_stale *s = &log->stale[i];
    size_t k = 0;
    while (k < i && !(log->stale[k].proc == s->proc && log->stale[k].exec == s->exec &&
                      log->stale[k].start == s->start))
      k++;
    n += k == i;
  }
  return n;
}

void cgr_analyse(const cgl_log *log, cgr_analysis *a) {
  memset(a, 0, sizeof *a);
  a->log = log;
  a->all = log;
  a->shown_run = SIZE_MAX;
  find_broken(log, a);
  a->n_stale_reads = stale_reads(log);
  for (size_t c = 0; c < log->n_caps; c++)
    if (cg_word_is(&cg_capture_statuses, log->caps[c].status, CG_WORD_OPEN)) {
      a->open_at_exit++;
      a->open_unbroken += !cgl_capture_broken(log, c);
    }
  tally(log, a);
  /* what it means: the table of findings, every row that holds */
  cgf_facts facts = {.a = a, .mode = CG_RUN_MODE_COUNT};
  cgf_collect(&facts, CGF_REPORT, false, &a->advice);
  cgf_collect(&facts, CGF_ESCAPES, false, &a->escapes_note);
}

/* A run's advice, from an analysis of that run alone (cgl_each_run's fn). */
static void advise_run(const cgl_log *view, size_t run, void *ctx) {
  cgr_analysis *a = ctx, one;
  cgr_analyse(view, &one);
  a->run_advice[run] = one.advice; /* its strings are its own: they outlive the view */
  memset(&one.advice, 0, sizeof one.advice);
  cgr_free(&one);
}

void cgr_count_runs(const cgl_log *all, size_t shown, cgr_analysis *a) {
  a->all = all;
  a->shown_run = shown;
  a->n_runs = all->n_runs;
  a->runs = xrealloc(NULL, (all->n_runs + 1) * sizeof *a->runs);
  memset(a->runs, 0, (all->n_runs + 1) * sizeof *a->runs);
  size_t *seen = xrealloc(NULL, (all->n_procs + 1) * sizeof *seen);
  memset(seen, 0, (all->n_procs + 1) * sizeof *seen);
  for (size_t c = 0; c < all->n_caps; c++) {
    size_t r = all->procs[all->caps[c].proc].run_index;
    seen[all->caps[c].proc]++;
    a->runs[r].broken += cgl_capture_broken(all, c);
  }
  /* A census kept its captures' flags and its calls' counts instead. */
  for (size_t c = 0; c < all->n_ccaps; c++) {
    size_t r = all->procs[all->ccaps[c].proc].run_index;
    seen[all->ccaps[c].proc]++;
    a->runs[r].broken += (all->ccaps[c].flags & (CGL_CENSUS_BREAK | CGL_CENSUS_STATUS_BROKEN)) != 0;
  }
  for (size_t p = 0; p < all->n_procs; p++) {
    const cgl_process *pr = &all->procs[p];
    struct cgr_run_stats *r = &a->runs[pr->run_index];
    r->procs++;
    r->cuda += pr->cuda;
    r->ended_early += cgr_ended_early(pr);
    const cgl_census_proc *cp = cgl_census_of(all, p);
    const unsigned char *ids = cgl_census_ids(cp);
    for (size_t id = 0; id < cp->cap; id++)
      if (ids[id] & CGL_CENSUS_SEEN) {
        seen[p]++;
        r->broken += (ids[id] & (CGL_CENSUS_BREAK | CGL_CENSUS_STATUS_BROKEN)) != 0;
      }
    r->calls += (size_t)cp->calls;
    r->served += (size_t)cp->served;
    long long said = cgl_process_num(pr, CGL_PR_CAPTURES);
    r->captures += pr->has_summary && said > 0 && (size_t)said > seen[p] ? (size_t)said : seen[p];
  }
  for (size_t i = 0; i < all->n_evs; i++) {
    struct cgr_run_stats *r = &a->runs[all->procs[all->evs[i].proc].run_index];
    r->calls++;
    r->served += all->evs[i].verdict == CG_VERDICT_SERVED;
  }
  free(seen);
  /* Every run reported: each run's advice from an analysis of that run alone. */
  if (shown == SIZE_MAX && all->n_runs > 1) {
    a->run_advice = xrealloc(NULL, all->n_runs * sizeof *a->run_advice);
    cgl_each_run(all, advise_run, a);
  }
}

void cgr_free(cgr_analysis *a) {
  free(a->runs);
  free(a->broken);
  free(a->kernels);
  for (struct cgr_site_block *b = a->site_blocks, *prev; b; b = prev) {
    prev = b->prev;
    free(b);
  }
  free(a->sites);
  free(a->procs);
  cgf_list_free(&a->advice);
  for (size_t r = 0; a->run_advice && r < a->n_runs; r++)
    cgf_list_free(&a->run_advice[r]);
  free(a->run_advice);
  cgf_list_free(&a->escapes_note);
  memset(a, 0, sizeof *a);
}
