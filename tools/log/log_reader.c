#include "log_reader.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "capguard/log_keys.h"
#include "frame_source.h"
#include "image_source.h"
#include "log_pool.h"
#include "log_site.h"
#include "log_json.h"
#include "xalloc.h" /* cg_out_of_memory */

enum { BY_PID = 0, BY_CAPTURE = 1 };

/* The words an event and a capture keep as bytes (log_reader.h), with
 * their count (absent, unknown) among them. */
_Static_assert(CG_EV_KIND_COUNT <= 255 && CG_VERDICT_COUNT <= 255 && CG_IMAGE_KIND_COUNT <= 255 &&
                   CG_CAPTURE_MODE_COUNT <= 255 && CG_CAPTURE_STATUS_COUNT <= 255,
               "a word of the log does not fit in a byte");

/* The types of a line's values (log_json.h), NULL for absent. */
#define OBJ(v) cgl_jis((v), CGL_J_OBJECT)
#define ARR(v) cgl_jis((v), CGL_J_ARRAY)
#define STR(v) cgl_jis((v), CGL_J_STRING)
#define INT(v) cgl_jis((v), CGL_J_INTEGER)
#define TRUE_(v) cgl_jis((v), CGL_J_TRUE)
#define NUL_(v) cgl_jis((v), CGL_J_NULL)

/* Growth of the model's arrays by half again: amortised constant per line,
 * and at most a third of the array unused (a million captures are 100 MB).
 * The room is not cleared: each element is, when it is taken (NEW_ITEM),
 * so that the unused third of a large array is never touched, and costs
 * no resident memory. */
static void *grow(void *p, size_t *cap, size_t need, size_t elem) {
  if (need <= *cap)
    return p;
  /* The records' links are 4-byte indices (log_reader.h): a log of 2^31
   * processes, captures or calls (hundreds of GB of memory) is refused as
   * a log too large for memory is, in one line. */
  if (need > INT32_MAX)
    cg_out_of_memory("reading the log (more than 2^31 records of one kind)");
  size_t n = *cap ? *cap + *cap / 2 : 16;
  while (n < need)
    n += n / 2;
  void *q = cgl_xrealloc(p, n * elem);
  *cap = n;
  return q;
}

/* The next element of an array grown by grow (its count n, its room cap), cleared. */
#define NEW_ITEM(arr, n, cap) \
  ((arr) = grow((arr), &(cap), (n) + 1, sizeof *(arr)), memset(&(arr)[(n)++], 0, sizeof *(arr)))

void cgl_init(cgl_log *log) {
  memset(log, 0, sizeof *log);
  log->pool = cgl_pool_new();
  log->index = cgl_index_new();
}

void cgl_free(cgl_log *log) {
  if (!log->is_view) {
    for (size_t i = 0; i < log->n_caps; i++)
      free(log->caps[i].more);
    for (size_t i = 0; i < log->n_procs; i++) {
      if (log->cprocs)
        free(log->cprocs[i].ids);
      free(log->procs[i].slowest);
      if (log->procs[i].more)
        free(log->procs[i].more->nums);
      free(log->procs[i].more);
    }
    for (size_t i = 0; i < log->n_evs; i++) {
      if (log->evs[i].more)
        free(log->evs[i].more->nums);
      free(log->evs[i].more);
    }
    for (size_t i = 0; i < log->n_files; i++)
      free((char *)log->files[i]);
    free(log->files);
    cgl_pool_free(log->pool);
    cgl_frame_source_reset();
  }
  if (log->json)
    cgl_json_free(log->json);
  free(log->json);
  cgl_index_free(log->index);
  free(log->procs);
  free(log->caps);
  free(log->evs);
  free(log->stale);
  free(log->hangs);
  free(log->reqs);
  free(log->runs);
  free(log->ccaps);
  free(log->cprocs);
  free(log->firsts);
  memset(log, 0, sizeof *log);
}

/* Field accessors that tolerate absent or mistyped keys (readers ignore what they do not know). */
static const char *str(cgl_log *log, const cgl_jv *o, const char *k) {
  const cgl_jv *v = cgl_jget(o, k);
  return STR(v) ? cgl_intern(log->pool, cgl_jstr(v), v->len)
                           : NULL;
}
static long long num(const cgl_jv *o, const char *k, long long dflt) {
  const cgl_jv *v = cgl_jget(o, k);
  return INT(v) ? (long long)v->u.i : dflt;
}
/* The row of t that o's key k names; t->n when absent or unknown. */
static unsigned word(const cg_words *t, const cgl_jv *o, const char *k) {
  const cgl_jv *v = cgl_jget(o, k);
  return STR(v) ? cg_word_parse(t, cgl_jstr(v), v->len)
                           : (unsigned)t->n;
}
static const cgl_jv *arr(const cgl_jv *o, const char *k) {
  const cgl_jv *v = cgl_jget(o, k);
  return ARR(v) ? v : NULL;
}

/* The message holds the log's own bytes (jansson's "near '...'" quotes the
 * line): made printable, as the log's strings are (cgl_intern). */
static void malformed(cgl_log *log, size_t file, long long lineno, const char *why) {
  if (log->malformed++ == 0) {
    snprintf(log->first_malformed, sizeof log->first_malformed, "%s:%lld: %s", log->files[file],
             lineno, why);
    cgl_make_printable(log->first_malformed, strlen(log->first_malformed));
  }
}

/* A process's span, clamped to 2^62 ns (year 2116): what is added to it later
 * (a second of slack) cannot overflow, whatever a log says. */
static void seen_at(cgl_process *p, long long t) {
  if (t <= 0)
    return;
  if (t > 1LL << 62)
    t = 1LL << 62;
  if (!p->first_ns || t < p->first_ns)
    p->first_ns = t;
  if (t > p->last_ns)
    p->last_ns = t;
}

void cgl_log_key(const void *ctx, int t, size_t value, long long *a, long long *b) {
  const cgl_log *log = ctx;
  if (t == BY_PID) {
    *a = (long long)log->procs[value].file;
    *b = log->procs[value].pid;
  } else if (log->census) {
    *a = (long long)log->ccaps[value].proc;
    *b = log->ccaps[value].id;
  } else {
    *a = (long long)log->caps[value].proc;
    *b = log->caps[value].id;
  }
}

/* p's block of rarely set fields, made on first need (zeroed). */
static cgl_process_more *more_of(cgl_process *p) {
  if (!p->more) {
    p->more = cgl_xrealloc(NULL, sizeof *p->more);
    memset(p->more, 0, sizeof *p->more);
  }
  return p->more;
}

void cgl_process_set(cgl_process *p, int k, long long v) {
  if (!p->wide && v >= INT32_MIN && v <= INT32_MAX) {
    p->nums[k] = (int32_t)v;
    return;
  }
  if (!p->wide) { /* a value no shim writes: all of them kept whole, apart */
    long long *w = cgl_xrealloc(NULL, CGL_PR_NUMS * sizeof *w);
    for (size_t i = 0; i < CGL_PR_NUMS; i++)
      w[i] = p->nums[i];
    more_of(p)->nums = w;
    p->wide = true;
  }
  p->more->nums[k] = v;
}

static size_t new_proc(cgl_log *log, size_t file, long long pid) {
  cgl_process *p = NEW_ITEM(log->procs, log->n_procs, log->cap_procs);
  p->file = (uint32_t)file;
  p->pid = pid;
  p->cuda = true;
  p->mode = CG_RUN_MODE_COUNT;
  if (log->census || log->keep_firsts) {
    log->firsts = grow(log->firsts, &log->cap_firsts, log->n_procs, sizeof *log->firsts);
    log->firsts[log->n_procs - 1] = (cgl_first_line){log->cur_offset, log->cur_lineno};
  }
  if (log->census) {
    log->cprocs = grow(log->cprocs, &log->cap_cprocs, log->n_procs, sizeof *log->cprocs);
    memset(&log->cprocs[log->n_procs - 1], 0, sizeof *log->cprocs);
  }
  cgl_index_put(log->index, BY_PID, (long long)file, pid, log->n_procs - 1, cgl_log_key, log);
  return log->n_procs - 1;
}

void cgl_seal(cgl_log *log) {
  if (log->is_view || log->sealed)
    return;
  cgl_index_clear(log->index);
  cgl_pool_seal(log->pool);
  log->sealed = true;
}

void cgl_unseal(cgl_log *log) {
  if (!log->sealed)
    return;
  log->sealed = false;
  /* in the order made: a pid's latest process is the one its key keeps */
  for (size_t p = 0; p < log->n_procs; p++)
    cgl_index_put(log->index, BY_PID, (long long)log->procs[p].file, log->procs[p].pid, p, cgl_log_key, log);
  size_t n = log->census ? log->n_ccaps : log->n_caps;
  for (size_t c = 0; c < n; c++) {
    long long a, b;
    cgl_log_key(log, BY_CAPTURE, c, &a, &b);
    cgl_index_put(log->index, BY_CAPTURE, a, b, c, cgl_log_key, log);
  }
}

const cgl_first_line *cgl_first_of(const cgl_log *log, size_t proc) {
  static const cgl_first_line none;
  return log->firsts ? &log->firsts[proc] : &none;
}

const cgl_census_proc *cgl_census_of(const cgl_log *log, size_t proc) {
  static const cgl_census_proc none;
  return log->cprocs ? &log->cprocs[proc] : &none;
}

/* The process a line belongs to: the latest one of that pid in the same file
 * (a pid reused by a later run writes a new "process" line first). */
static size_t proc_for(cgl_log *log, size_t file, long long pid) {
  long i = cgl_index_get(log->index, BY_PID, (long long)file, pid, cgl_log_key, log);
  return i >= 0 ? (size_t)i : new_proc(log, file, pid);
}

static size_t capture_for(cgl_log *log, size_t proc, long long id) {
  long i = cgl_index_get(log->index, BY_CAPTURE, (long long)proc, id, cgl_log_key, log);
  if (i >= 0)
    return (size_t)i;
  cgl_capture *c = NEW_ITEM(log->caps, log->n_caps, log->cap_caps);
  c->proc = (uint32_t)proc;
  c->id = id;
  c->first_break = -1;
  c->mode = CG_CAPTURE_MODE_COUNT;
  c->status = CG_CAPTURE_STATUS_COUNT;
  cgl_index_put(log->index, BY_CAPTURE, (long long)proc, id, log->n_caps - 1, cgl_log_key, log);
  return log->n_caps - 1;
}

/* A census's capture (proc, id): its flags, the capture made on first sight. */
static unsigned char *census_capture(cgl_log *log, size_t proc, long long id) {
  cgl_census_proc *p = &log->cprocs[proc];
  size_t small = sizeof p->small;
  unsigned char *ids = p->cap > small ? p->ids : p->small;
  if (id >= 0 && (unsigned long long)id < p->cap && (ids[id] & CGL_CENSUS_SEEN))
    return &ids[id];
  long i = cgl_index_get(log->index, BY_CAPTURE, (long long)proc, id, cgl_log_key, log);
  if (i >= 0)
    return &log->ccaps[i].flags;
  /* capguard numbers a process's captures from 1: ids up to twice as many as
   * it has plus 1024 are kept by id (a hostile id costs a hash entry) */
  if (id >= 0 && (unsigned long long)id <= 2 * p->dense + 1024) {
    size_t need = (size_t)id + 1;
    if (need > p->cap) {
      size_t cap = p->cap ? p->cap : small;
      while (cap < need)
        cap *= 2;
      if (cap > small) { /* out of small: an allocation, its flags copied over */
        unsigned char *heap = cgl_xrealloc(p->cap > small ? p->ids : NULL, cap);
        if (p->cap <= small)
          memcpy(heap, p->small, p->cap);
        memset(heap + p->cap, 0, cap - p->cap);
        p->ids = ids = heap;
      }
      p->cap = cap;
    }
    p->dense++;
    ids[id] = CGL_CENSUS_SEEN;
    return &ids[id];
  }
  cgl_census_capture *cc = NEW_ITEM(log->ccaps, log->n_ccaps, log->cap_ccaps);
  cc->proc = proc;
  cc->id = id;
  cgl_index_put(log->index, BY_CAPTURE, (long long)proc, id, log->n_ccaps - 1, cgl_log_key, log);
  return &cc->flags;
}

/* The status's broken bit of flags set from the status key of o. */
static void census_status(unsigned char *flags, const cgl_jv *o) {
  cg_capture_status st = (cg_capture_status)word(&cg_capture_statuses, o, CG_KEY_STATUS);
  *flags = (unsigned char)((*flags & ~CGL_CENSUS_STATUS_BROKEN) |
                           (cg_capture_status_broken(st) ? CGL_CENSUS_STATUS_BROKEN : 0));
}

/* A census's reading of a "capture" line: what read_capture would make of
 * its process's span and of whether it broke (cgl_capture_broken). */
static void census_capture_line(cgl_log *log, size_t proc, const cgl_jv *o) {
  unsigned char *flags = census_capture(log, proc, num(o, CG_KEY_ID, 0));
  *flags |= CGL_CENSUS_ENDED;
  census_status(flags, o);
  seen_at(&log->procs[proc], num(o, CG_KEY_BEGIN_NS, 0));
  seen_at(&log->procs[proc], num(o, CG_KEY_END_NS, 0));
}

/* A census's reading of an "event" line, as read_event counts it. */
static void census_event(cgl_log *log, size_t proc, const cgl_jv *o) {
  cgl_process *p = &log->procs[proc];
  seen_at(p, num(o, CG_KEY_TIME_NS, 0));
  cg_event_kind kind = (cg_event_kind)word(&cg_event_kinds, o, CG_KEY_EVENT);
  if (kind == CG_EV_STALE_FREE || kind == CG_EV_STALE_LAUNCH || kind == CG_EV_REQUEST_LOAD || cgl_hang_kind(kind))
    return;
  cg_verdict verdict = (cg_verdict)word(&cg_verdicts, o, CG_KEY_VERDICT);
  log->cprocs[proc].calls++;
  log->cprocs[proc].served += verdict == CG_VERDICT_SERVED;
  const cgl_jv *cap = cgl_jget(o, CG_KEY_CAPTURE);
  unsigned char *flags = census_capture(log, proc, OBJ(cap) ? num(cap, CG_KEY_ID, 0) : 0);
  if (!(*flags & CGL_CENSUS_ENDED) && OBJ(cap))
    census_status(flags, cap);
  if (cg_verdict_breaks(verdict))
    *flags |= CGL_CENSUS_BREAK;
}

/* What "start" and "process" records both say about a process. */
static void read_identity(cgl_log *log, cgl_process *p, const cgl_jv *o) {
  p->ppid = num(o, CG_KEY_PPID, 0);
  p->mode = (unsigned char)word(&cg_run_modes, o, CG_KEY_MODE);
  p->run = str(log, o, CG_KEY_RUN);
  p->prime = str(log, o, CG_KEY_PRIME);
  p->time_ns = num(o, CG_KEY_TIME_NS, 0);
  seen_at(p, p->time_ns);
  if (INT(cgl_jget(o, CG_KEY_RANK))) {
    p->rank_known = true;
    cgl_process_set(p, CGL_PR_RANK, num(o, CG_KEY_RANK, 0));
    cgl_process_set(p, CGL_PR_WORLD_SIZE, num(o, CG_KEY_WORLD_SIZE, 0));
  }
  const cgl_jv *argv = arr(o, CG_KEY_ARGV), *w;
  size_t argc = 0;
  const char *words[CGL_ARGV_MAX], *exact[CGL_ARGV_MAX];
  bool differs = false;
  for (w = cgl_jfirst(argv); w; w = cgl_jnext(w)) {
    if (argc < CGL_ARGV_MAX && STR(w)) {
      const char *raw = cgl_jstr(w);
      size_t n = w->len;
      words[argc] = cgl_intern(log->pool, raw, n);
      /* kept apart only when made printable: a command to paste gives back the very bytes */
      bool same = !memchr(raw, '\0', n) && !memcmp(words[argc], raw, n);
      exact[argc] = same ? words[argc] : cgl_intern_exact(log->pool, raw, n);
      differs |= !same;
      argc++;
    }
  }
  /* one interned list: the processes of a launcher share their command line */
  p->argc = (unsigned char)argc;
  p->argv = argc ? cgl_intern_list(log->pool, words, argc)->v : NULL;
  if (differs || p->more)
    more_of(p)->argv_exact = differs ? cgl_intern_list(log->pool, exact, argc) : NULL;
}

/* A line of a pid already seen is another process (the pid was reused) when
 * that one exited, or belongs to another capguard run. */
static bool reused(cgl_log *log, const cgl_process *p, const cgl_jv *o) {
  const char *run = str(log, o, CG_KEY_RUN);
  return p->has_summary || (p->run && run && p->run != run);
}

/* "start": the shim started in this process; it has not used CUDA (yet). */
static void read_start(cgl_log *log, size_t file, long long pid, const cgl_jv *o) {
  size_t i = proc_for(log, file, pid);
  if (reused(log, &log->procs[i], o) || log->procs[i].seen_process)
    i = new_proc(log, file, pid);
  cgl_process *p = &log->procs[i];
  /* a second start of one pid: it exec'd another program; the latest names it */
  p->seen_start = true;
  p->cuda = false;
  read_identity(log, p, o);
}

static void read_process(cgl_log *log, size_t file, long long pid, const cgl_jv *o) {
  /* A second "process" line for a pid already seen means a new process reused it. */
  size_t i = proc_for(log, file, pid);
  if (log->procs[i].seen_process || reused(log, &log->procs[i], o))
    i = new_proc(log, file, pid);
  cgl_process *p = &log->procs[i];
  p->seen_process = true;
  p->cuda = true;
  read_identity(log, p, o);
  cgl_process_set(p, CGL_PR_DRIVER_VERSION, num(o, CG_KEY_DRIVER_VERSION, 0));
  cgl_process_set(p, CGL_PR_EMULATE_DRIVER, num(o, CG_KEY_EMULATE_DRIVER, 0));
}

/* "broken_by": an object names the first offender, null says none was seen,
 * absent (or any other type: a damaged line) says nothing. */
/* A site string of the log (where a capture began, where its offender was
 * called), read as a person reads an event's: demangled, with file:line. */
static const char *site_str(cgl_log *log, size_t proc, const cgl_jv *o, const char *key) {
  const char *s = str(log, o, key);
  if (!s || !*s)
    return s;
  char buf[1024];
  const cgl_process *pr = &log->procs[proc];
  cgl_readable_site(s, pr->argc ? pr->argv[0] : NULL, buf, sizeof buf);
  return strcmp(buf, s) ? cgl_intern(log->pool, buf, strlen(buf)) : s;
}

/* c's block of rarely set fields, made on first need (zeroed). */
static cgl_capture_more *capture_more(cgl_capture *c) {
  if (!c->more) {
    c->more = cgl_xrealloc(NULL, sizeof *c->more);
    memset(c->more, 0, sizeof *c->more);
  }
  return c->more;
}

static void read_broken_by(cgl_log *log, cgl_capture *c, const cgl_jv *o) {
  const cgl_jv *b = cgl_jget(o, CG_KEY_BROKEN_BY);
  c->by = CGL_BY_UNKNOWN;
  if (c->more)
    memset(&c->more->offender, 0, sizeof c->more->offender);
  if (NUL_(b)) {
    c->by = CGL_BY_UNWATCHED;
  } else if (OBJ(b)) {
    cgl_offender *f = &capture_more(c)->offender;
    c->by = CGL_BY_CALL;
    const char *s;
    f->call = (s = str(log, b, CG_KEY_CALL)) ? s : "";
    f->python = (s = str(log, b, CG_KEY_PYTHON)) ? s : "";
    f->where = (s = site_str(log, c->proc, b, CG_KEY_WHERE)) ? s : "";
    f->kind = (cg_event_kind)word(&cg_event_kinds, b, CG_KEY_EVENT);
    f->verdict = (cg_verdict)word(&cg_verdicts, b, CG_KEY_VERDICT);
    f->result = num(b, CG_KEY_RESULT, 0);
    f->tid = num(b, CG_KEY_TID, 0);
    f->time_ns = num(b, CG_KEY_TIME_NS, 0);
  }
}

static void read_capture(cgl_log *log, size_t proc, const cgl_jv *o) {
  /* index first: capture_for may move log->caps */
  size_t ci = capture_for(log, proc, num(o, CG_KEY_ID, 0));
  cgl_capture *c = &log->caps[ci];
  c->ended_line = true;
  c->stream = str(log, o, CG_KEY_STREAM);
  c->mode = (cg_capture_mode)word(&cg_capture_modes, o, CG_KEY_MODE);
  c->status = (cg_capture_status)word(&cg_capture_statuses, o, CG_KEY_STATUS);
  c->began = site_str(log, proc, o, CG_KEY_BEGAN);
  c->tid = num(o, CG_KEY_TID, 0);
  long long b = num(o, CG_KEY_BEGIN_NS, 0);
  if (b > 0 || !c->begin_ns)
    c->begin_ns = b;
  c->end_ns = num(o, CG_KEY_END_NS, 0);
  c->events = num(o, CG_KEY_EVENTS, 0);
  const cgl_jv *er = cgl_jget(o, CG_KEY_END_RESULT);
  c->has_end_result = INT(er);
  long long end = c->has_end_result ? (long long)er->u.i : 0;
  c->end_result_wide = end < INT32_MIN || end > INT32_MAX;
  c->end_result = c->end_result_wide ? 0 : (int32_t)end;
  if (c->end_result_wide)
    capture_more(c)->end_result = end;
  long long repeats = num(o, CG_KEY_REPEATS, 0);
  if (repeats > 0 || c->more)
    capture_more(c)->repeats = repeats > 0 ? repeats : 0;
  read_broken_by(log, c, o);
  seen_at(&log->procs[proc], c->begin_ns);
  seen_at(&log->procs[proc], c->end_ns);
}

/* Earlier time first; the order read (the index in log->evs) breaks ties
 * (lines of one process are in order). */
static bool before(const cgl_event *x, const cgl_event *y) {
  if (x->time_ns != y->time_ns)
    return x->time_ns < y->time_ns;
  return x < y;
}

static const cgl_strs *kernel_list(cgl_log *log, const cgl_jv *names) {
  const char *small[64] = {NULL};
  size_t n = cgl_jsize(names), k = 0;
  const char **v = n <= 64 ? small : cgl_xrealloc(NULL, n * sizeof *v);
  const cgl_jv *w;
  for (w = cgl_jfirst(names); w; w = cgl_jnext(w)) {
    if (STR(w))
      v[k++] = cgl_intern(log->pool, cgl_jstr(w), w->len);
  }
  const cgl_strs *l = cgl_intern_list(log->pool, v, k);
  if (v != small)
    free(v);
  return l;
}

static const char *str_or_empty(cgl_log *log, const cgl_jv *o, const char *k) {
  const char *s = str(log, o, k);
  return s ? s : "";
}

/* A record's call site (cgl_event_site's form) and its innermost Python frame
 * (NULL if none), from its stacks. */
static void stack_sites(cgl_log *log, size_t proc, const cgl_jv *o, const char **site, const char **python_top) {
  char where[512];
  const cgl_process *pr = &log->procs[proc];
  cgl_site_from_stacks(arr(o, CG_KEY_PYTHON_STACK), arr(o, CG_KEY_NATIVE_STACK),
                       pr->argc ? pr->argv[0] : NULL, where, sizeof where);
  *site = cgl_intern(log->pool, where, strlen(where));
  cgl_python_top(arr(o, CG_KEY_PYTHON_STACK), where, sizeof where);
  *python_top = where[0] ? cgl_intern(log->pool, where, strlen(where)) : NULL;
}

static void read_stale(cgl_log *log, size_t proc, cg_event_kind kind, const cgl_jv *o) {
  cgl_stale *s = NEW_ITEM(log->stale, log->n_stale, log->cap_stale);
  s->proc = proc;
  s->kind = kind;
  s->time_ns = num(o, CG_KEY_TIME_NS, 0);
  s->tid = num(o, CG_KEY_TID, 0);
  s->call = str_or_empty(log, o, CG_KEY_CALL);
  const cgl_jv *cap = cgl_jget(o, CG_KEY_CAPTURE);
  s->capture_id = OBJ(cap) ? num(cap, CG_KEY_ID, 0) : 0;
  s->began = OBJ(cap) ? str_or_empty(log, cap, CG_KEY_BEGAN) : "";
  const cgl_jv *st = cgl_jget(o, CG_KEY_STALE);
  if (OBJ(st)) {
    s->exec = str_or_empty(log, st, CG_KEY_EXEC);
    s->start = str_or_empty(log, st, CG_KEY_START);
    s->kernel = str_or_empty(log, st, CG_KEY_KERNEL);
    s->size = num(st, CG_KEY_SIZE, 0);
    s->buffer_id = num(st, CG_KEY_BUFFER_ID, 0);
    s->now_buffer_id = num(st, CG_KEY_NOW_BUFFER_ID, 0);
    s->node = num(st, CG_KEY_NODE, 0);
    s->arg = num(st, CG_KEY_ARG, -1);
    s->reads = num(st, CG_KEY_READS, 1);
    s->by_hand = TRUE_(cgl_jget(st, CG_KEY_BY_HAND));
    s->piece = TRUE_(cgl_jget(st, CG_KEY_PIECE));
  } else {
    s->exec = s->start = s->kernel = "";
  }
  stack_sites(log, proc, o, &s->site, &s->python_top);
  seen_at(&log->procs[proc], s->time_ns);
}

bool cgl_hang_kind(cg_event_kind kind) {
  return kind == CG_EV_HANG_LAUNCH || kind == CG_EV_HANG_WAIT || kind == CG_EV_HANG_TEARDOWN ||
         kind == CG_EV_LAUNCH_COUNT || kind == CG_EV_HANG_CAPTURE;
}

static void read_hang(cgl_log *log, size_t proc, cg_event_kind kind, const cgl_jv *o) {
  cgl_hang *h = NEW_ITEM(log->hangs, log->n_hangs, log->cap_hangs);
  h->proc = proc;
  h->kind = kind;
  h->time_ns = num(o, CG_KEY_TIME_NS, 0);
  h->tid = num(o, CG_KEY_TID, 0);
  h->call = str_or_empty(log, o, CG_KEY_CALL);
  const cgl_jv *cap = cgl_jget(o, CG_KEY_CAPTURE);
  h->capture_id = OBJ(cap) ? num(cap, CG_KEY_ID, 0) : 0;
  h->began = OBJ(cap) ? str_or_empty(log, cap, CG_KEY_BEGAN) : "";
  const cgl_jv *x = cgl_jget(o, CG_KEY_HANG);
  bool is = OBJ(x);
  h->exec = is ? str_or_empty(log, x, CG_KEY_EXEC) : "";
  h->collective = is ? str_or_empty(log, x, CG_KEY_COLLECTIVE) : "";
  h->where = is ? str_or_empty(log, x, CG_KEY_WHERE) : "";
  h->launches = is ? num(x, CG_KEY_LAUNCHES, 0) : 0;
  h->waited_ns = is ? num(x, CG_KEY_WAITED_NS, 0) : 0;
  h->collectives = is ? num(x, CG_KEY_COLLECTIVES, 0) : 0;
  h->kernel_nodes = is ? num(x, CG_KEY_KERNEL_NODES, 0) : 0;
  h->execs = is ? num(x, CG_KEY_EXECS, 0) : 0;
  seen_at(&log->procs[proc], h->time_ns);
}

/* The Python package a load came through, from its frames' files. */
static const char *framework_of(const cgl_jv *py) {
  static const struct {
    const char *dir, *name;
  } known[] = {{"/triton/", "Triton"}, {"/cupy/", "CuPy"}, {"/cuda/core/", "cuda.core"}, {"/numba/", "Numba"}};
  for (const cgl_jv *fr = ARR(py) ? cgl_jfirst(py) : NULL; fr; fr = cgl_jnext(fr)) {
    const char *f = cgl_jstr(cgl_jget(fr, CG_KEY_FILE));
    for (size_t k = 0; f && k < sizeof known / sizeof known[0]; k++)
      if (strstr(f, known[k].dir))
        return known[k].name;
  }
  return NULL;
}

/* The kernels a request-path load left compressed, read from the object
 * its image lies in (image_source.h); the list stays empty when they
 * cannot be read there. */
static void name_from_source(cgl_log *log, cgl_request *q, const cgl_jv *img, const cgl_jv *src) {
  const char *object = cgl_jstr(cgl_jget(src, CG_KEY_OBJECT));
  const cgl_jv *off = cgl_jget(src, CG_KEY_OFFSET), *size = cgl_jget(img, CG_KEY_SIZE);
  if (!object || !INT(off) || !INT(size) || off->u.i < 0 ||
      size->u.i <= 0 || !q->image_hash)
    return;
  cg_image_info *im = malloc(sizeof *im);
  if (im && cgl_image_source_inspect(object, (uint64_t)off->u.i, (uint64_t)size->u.i,
                                     q->image_hash, im) == 0 && im->n_kernels) {
    const char *v[256];
    size_t k = 0;
    for (const char *n = cg_image_first_kernel(im); n && k < sizeof v / sizeof v[0]; n = cg_image_next_kernel(im, n))
      v[k++] = cgl_intern(log->pool, n, strlen(n));
    q->kernels = cgl_intern_list(log->pool, v, k);
    q->kernels_from_source = true;
  }
  free(im);
}

static void read_request(cgl_log *log, size_t proc, const cgl_jv *o) {
  cgl_request *q = NEW_ITEM(log->reqs, log->n_reqs, log->cap_reqs);
  q->proc = proc;
  q->time_ns = num(o, CG_KEY_TIME_NS, 0);
  q->load_ns = num(o, CG_KEY_LOAD_NS, 0);
  q->after_ns = num(o, CG_KEY_AFTER_SERVING_NS, 0);
  q->provisional = TRUE_(cgl_jget(o, CG_KEY_PROVISIONAL));
  q->served = word(&cg_verdicts, o, CG_KEY_VERDICT) == CG_VERDICT_SERVED;
  q->call = str_or_empty(log, o, CG_KEY_CALL);
  const cgl_jv *img = cgl_jget(o, CG_KEY_IMAGE);
  q->kernels = kernel_list(log, OBJ(img) ? arr(img, CG_KEY_KERNELS) : NULL);
  q->image_kind = CG_IMAGE_KIND_COUNT;
  if (OBJ(img)) {
    q->image_kind = (cg_image_kind)word(&cg_image_kinds, img, CG_KEY_KIND);
    q->image_hash = str(log, img, CG_KEY_HASH);
  }
  if (OBJ(img) && q->kernels->n == 0)
    name_from_source(log, q, img, cgl_jget(o, CG_KEY_IMAGE_SOURCE));
  q->runtime_lazy = cgl_stack_runtime_lazy(arr(o, CG_KEY_NATIVE_STACK));
  q->framework = q->runtime_lazy ? "the CUDA runtime's lazy loading" : framework_of(arr(o, CG_KEY_PYTHON_STACK));
  stack_sites(log, proc, o, &q->site, &q->python_top);
  seen_at(&log->procs[proc], q->time_ns);
}

static void read_event(cgl_log *log, size_t file, long long lineno, size_t proc, const cgl_jv *o) {
  cg_event_kind kind = (cg_event_kind)word(&cg_event_kinds, o, CG_KEY_EVENT);
  if (kind == CG_EV_STALE_FREE || kind == CG_EV_STALE_LAUNCH) {
    read_stale(log, proc, kind, o);
    return;
  }
  if (kind == CG_EV_REQUEST_LOAD) {
    read_request(log, proc, o);
    return;
  }
  if (cgl_hang_kind(kind)) {
    read_hang(log, proc, kind, o);
    return;
  }
  cgl_event *e = NEW_ITEM(log->evs, log->n_evs, log->cap_evs);
  size_t ei = log->n_evs - 1;
  e->proc = (uint32_t)proc;
  e->time_ns = num(o, CG_KEY_TIME_NS, 0);
  e->kind = (cg_event_kind)word(&cg_event_kinds, o, CG_KEY_EVENT);
  e->call = str(log, o, CG_KEY_CALL);
  e->handle = str(log, o, CG_KEY_HANDLE);
  e->meaning = str(log, o, CG_KEY_MEANING);
  e->verdict = (cg_verdict)word(&cg_verdicts, o, CG_KEY_VERDICT);
  long long nums[CGL_EV_NUMS] = {num(o, CG_KEY_RESULT, 0),
                                 num(o, CG_KEY_DRIVER_RESULT, -1),
                                 num(o, CG_KEY_DRIVER_VERSION, 0),
                                 num(o, CG_KEY_EMULATE_DRIVER, 0),
                                 num(o, CG_KEY_TID, 0),
                                 0};
  cgl_event_more more = {str(log, o, CG_KEY_THREAD_NAME), str(log, o, CG_KEY_NCCL_SETUP), NULL, NULL, NULL};
  const cgl_jv *img = cgl_jget(o, CG_KEY_IMAGE);
  e->kernels = kernel_list(log, OBJ(img) ? arr(img, CG_KEY_KERNELS) : NULL);
  e->image_kind = CG_IMAGE_KIND_COUNT;
  if (OBJ(img)) {
    e->image_kind = (cg_image_kind)word(&cg_image_kinds, img, CG_KEY_KIND);
    e->image_hash = str(log, img, CG_KEY_HASH);
    nums[CGL_EV_IMAGE_SM] = num(img, CG_KEY_SM, 0);
    e->kernels_truncated = TRUE_(cgl_jget(img, CG_KEY_KERNELS_TRUNCATED));
  }
  e->runtime_lazy = cgl_stack_runtime_lazy(arr(o, CG_KEY_NATIVE_STACK));
  /* A log of a capguard before load options were recorded says only
   * "options": true, and that capguard never served nor recorded such a load. */
  more.options_foreign = str(log, o, CG_KEY_OPTIONS_FOREIGN);
  if (!more.options_foreign && TRUE_(cgl_jget(o, CG_KEY_OPTIONS)) && !cgl_jget(o, CG_KEY_LOAD_OPTIONS))
    more.options_foreign = "JIT or library options (this capguard's log predates their recording)";
  e->with_options = more.options_foreign != NULL;
  more.options_differ = str(log, o, CG_KEY_OPTIONS_DIFFER);
  for (size_t k = 0; k < CGL_EV_NUMS; k++) {
    e->nums[k] = (int32_t)nums[k];
    e->wide |= nums[k] < INT32_MIN || nums[k] > INT32_MAX;
  }
  if (e->wide) /* a value no shim writes: kept whole, apart */
    more.nums = memcpy(cgl_xrealloc(NULL, sizeof nums), nums, sizeof nums);
  if (more.thread_name || more.nccl_setup || more.options_foreign || more.options_differ || more.nums)
    e->more = memcpy(cgl_xrealloc(NULL, sizeof more), &more, sizeof more);
  stack_sites(log, proc, o, &e->site, &e->python_top);
  (void)file; /* its file is its process's */
  e->src_line = lineno;
  seen_at(&log->procs[proc], e->time_ns);
  /* The capture it names; known from the event alone if its "capture" line never came
   * (the process was killed with the capture open). */
  const cgl_jv *cap = cgl_jget(o, CG_KEY_CAPTURE);
  long long id = OBJ(cap) ? num(cap, CG_KEY_ID, 0) : 0;
  size_t ci = capture_for(log, proc, id);
  e->capture = (uint32_t)ci;
  cgl_capture *c = &log->caps[ci];
  if (!c->ended_line && OBJ(cap)) {
    c->stream = str(log, cap, CG_KEY_STREAM);
    c->mode = (cg_capture_mode)word(&cg_capture_modes, cap, CG_KEY_MODE);
    c->status = (cg_capture_status)word(&cg_capture_statuses, cap, CG_KEY_STATUS);
    c->began = site_str(log, proc, cap, CG_KEY_BEGAN);
    c->tid = num(cap, CG_KEY_TID, 0);
    if (!c->begin_ns || (e->time_ns && e->time_ns < c->begin_ns))
      c->begin_ns = e->time_ns;
    c->events++;
  }
  if (cg_verdict_breaks(e->verdict) && (c->first_break < 0 || before(e, &log->evs[c->first_break])))
    c->first_break = (int32_t)ei;
}

static void read_summary(cgl_log *log, size_t proc, const cgl_jv *o) {
  cgl_process *p = &log->procs[proc];
  p->has_summary = true;
  p->log_incomplete = TRUE_(cgl_jget(o, CG_KEY_LOG_INCOMPLETE));
  cgl_process_set(p, CGL_PR_CAPTURES, num(o, CG_KEY_CAPTURES, 0));
  cgl_process_set(p, CGL_PR_CAPTURES_BROKEN, num(o, CG_KEY_CAPTURES_BROKEN, 0));
  /* the fields most processes leave zero: a block only when one is not */
  long long rare[7] = {num(o, CG_KEY_PRIMED_LOADED, 0),   num(o, CG_KEY_PRIMED_UNUSED, 0),
                       num(o, CG_KEY_RECORDED, 0),        num(o, CG_KEY_PRIMED_SKIPPED_ARCH, 0),
                       num(o, CG_KEY_SKIPPED_SM, 0),      num(o, CG_KEY_DEVICE_SM, 0),
                       num(o, CG_KEY_COLLECTIVE_EXECS, 0)};
  bool any = false;
  for (size_t i = 0; i < 7; i++)
    any = any || rare[i];
  if (any || p->more) {
    cgl_process_more *m = more_of(p);
    m->primed_loaded = rare[0];
    m->primed_unused = rare[1];
    m->recorded = rare[2];
    m->primed_skipped_arch = rare[3];
    m->skipped_sm = rare[4];
    m->device_sm = rare[5];
    m->collective_execs = rare[6];
  }
  p->has_capture_time = INT(cgl_jget(o, CG_KEY_CAPTURE_NS));
  cgl_process_set(p, CGL_PR_CAPTURES_TIMED, num(o, CG_KEY_CAPTURES_TIMED, 0));
  p->capture_ns = num(o, CG_KEY_CAPTURE_NS, 0);
  p->first_capture_ns = num(o, CG_KEY_FIRST_CAPTURE_NS, 0);
  p->first_replay_ns = num(o, CG_KEY_FIRST_REPLAY_NS, 0);
  const cgl_jv *slow = arr(o, CG_KEY_SLOWEST);
  p->n_slowest = 0;
  for (const cgl_jv *c = cgl_jfirst(slow); c && p->n_slowest < 3; c = cgl_jnext(c)) {
    if (!OBJ(c))
      continue;
    if (!p->slowest)
      p->slowest = cgl_xrealloc(NULL, 3 * sizeof *p->slowest);
    p->slowest[p->n_slowest].id = num(c, CG_KEY_ID, 0);
    p->slowest[p->n_slowest].ns = num(c, CG_KEY_NS, 0);
    const char *began = site_str(log, proc, c, CG_KEY_BEGAN); /* demangled, file:line */
    p->slowest[p->n_slowest].began = began ? began : ""; /* "" when not said, as cgl_slowest promises */
    p->n_slowest++;
  }
  /* the summary says the rank again (the start and process records said it
   * first, with the local rank): a summary without one leaves theirs */
  if (INT(cgl_jget(o, CG_KEY_RANK))) {
    p->rank_known = true;
    cgl_process_set(p, CGL_PR_RANK, num(o, CG_KEY_RANK, 0));
    cgl_process_set(p, CGL_PR_WORLD_SIZE, num(o, CG_KEY_WORLD_SIZE, 0));
  }
  seen_at(p, num(o, CG_KEY_TIME_NS, 0));
}

/* A parsed line's record, as its "type" says. */
static void read_record(cgl_log *log, size_t file, long long lineno, const cgl_jv *o) {
  if (!OBJ(o)) {
    malformed(log, file, lineno, "not a JSON object");
    return;
  }
  const cgl_jv *v = cgl_jget(o, CG_KEY_V), *pid = cgl_jget(o, CG_KEY_PID);
  const cgl_jv *type_v = cgl_jget(o, CG_KEY_TYPE);
  if (!INT(v) || v->u.i < 1 || !STR(type_v) || !INT(pid)) {
    malformed(log, file, lineno, "missing \"v\", \"type\" or \"pid\"");
    return;
  }
  if (v->u.i > CGL_VERSION) {
    log->newer++;
    return;
  }
  cg_record_type type = (cg_record_type)word(&cg_record_types, o, CG_KEY_TYPE);
  if (type >= CG_RECORD_TYPE_COUNT || cg_word_is(&cg_record_types, type, CG_WORD_SKIPPED)) {
    log->unknown++;
    return;
  }
  log->records++;
  long long p = pid->u.i;
  switch (type) {
  case CG_RECORD_PROCESS: read_process(log, file, p, o); break;
  case CG_RECORD_START: read_start(log, file, p, o); break;
  case CG_RECORD_EVENT:
    if (log->census)
      census_event(log, proc_for(log, file, p), o);
    else
      read_event(log, file, lineno, proc_for(log, file, p), o);
    break;
  case CG_RECORD_CAPTURE:
    if (log->census)
      census_capture_line(log, proc_for(log, file, p), o);
    else
      read_capture(log, proc_for(log, file, p), o);
    break;
  case CG_RECORD_SUMMARY: read_summary(log, proc_for(log, file, p), o); break;
  case CG_RECORD_ENDED: { /* capguard run's, not the process's: its span is left as it logged it */
    const cgl_jv *sig = cgl_jget(o, CG_KEY_SIGNAL);
    if (INT(sig) && sig->u.i > 0 && sig->u.i < 256) {
      size_t i = proc_for(log, file, p); /* before log->procs is read: it may make the first, or move it */
      more_of(&log->procs[i])->signal = (int)sig->u.i;
    }
    break;
  }
  case CG_RECORD_ERROR:
  case CG_RECORD_TYPE_COUNT: break; /* skipped above */
  }
}

void cgl_read_line(cgl_log *log, size_t file, const char *text, size_t len, long long lineno) {
  while (len && (text[len - 1] == '\r' || text[len - 1] == ' ' || text[len - 1] == '\t'))
    len--;
  size_t sp = 0;
  while (sp < len && (text[sp] == ' ' || text[sp] == '\t'))
    sp++;
  if (sp == len)
    return; /* blank lines are not lines of the log */
  log->lines++;
  cgl_unseal(log);
  if (!log->json) {
    log->json = cgl_xrealloc(NULL, sizeof *log->json);
    memset(log->json, 0, sizeof *log->json);
  }
  json_error_t err;
  const cgl_jv *o = cgl_json_parse(log->json, text, len, &err);
  if (!o) {
    char why[300];
    snprintf(why, sizeof why, "not JSON (%s)", err.text);
    malformed(log, file, lineno, why);
  } else {
    read_record(log, file, lineno, o);
  }
  cgl_json_release(log->json); /* what the report needs was copied out */
}

size_t cgl_add_file(cgl_log *log, const char *name) {
  log->files = cgl_xrealloc(log->files, (log->n_files + 1) * sizeof *log->files);
  char *copy = strdup(name);
  if (!copy)
    copy = cgl_xrealloc(NULL, 0); /* exits */
  log->files[log->n_files] = copy;
  return log->n_files++;
}

/* A line reader that keeps at most CGL_LINE_MAX bytes of a line: a longer
 * one is read to its end and dropped (said as malformed), so that memory per
 * line is bounded whatever the input (a 100 MB line, /dev/zero). */
typedef struct {
  FILE *f;
  char chunk[1 << 16];
  size_t pos, len;
  char *line;
  size_t line_len, line_cap;
  bool over;    /* the line in hand is longer than CGL_LINE_MAX */
  bool newline; /* it ended with '\n' */
} line_reader;

/* The next line into r->line (r->line_len bytes, no '\n'); the bytes it
 * took from the input (0 at the end). stop_over: give up at the first
 * over-long line's cap (an input without end), returning what was taken. */
static size_t next_line(line_reader *r, bool stop_over) {
  size_t taken = 0;
  r->line_len = 0;
  r->over = r->newline = false;
  for (;;) {
    if (r->pos == r->len) {
      r->len = fread(r->chunk, 1, sizeof r->chunk, r->f);
      r->pos = 0;
      if (!r->len)
        return taken;
    }
    char *at = r->chunk + r->pos, *nl = memchr(at, '\n', r->len - r->pos);
    size_t n = nl ? (size_t)(nl - at) : r->len - r->pos;
    r->pos += n + (nl != NULL);
    taken += n + (nl != NULL);
    if (!r->over && r->line_len + n > CGL_LINE_MAX) {
      r->over = true;
      free(r->line);
      r->line = NULL;
      r->line_cap = r->line_len = 0;
    }
    if (!r->over && n) {
      if (r->line_len + n + 1 > r->line_cap) {
        size_t cap = r->line_cap ? r->line_cap : 4096;
        while (cap < r->line_len + n + 1)
          cap *= 2;
        r->line = cgl_xrealloc(r->line, cap);
        r->line_cap = cap;
      }
      memcpy(r->line + r->line_len, at, n);
      r->line_len += n;
    }
    if (nl) {
      r->newline = true;
      return taken;
    }
    if (r->over && stop_over)
      return taken;
  }
}

static int read_stream_at(cgl_log *log, FILE *f, const char *name, long long offset,
                          long long lineno) {
  size_t file = cgl_add_file(log, name);
  /* an input that is not a regular file may have no end (/dev/zero): its
   * first over-long line stops it */
  struct stat st;
  bool endless = fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode);
  line_reader *r = cgl_xrealloc(NULL, sizeof *r);
  memset(r, 0, sizeof *r);
  r->f = f;
  bool cut = false;
  size_t n;
  lineno--;
  for (; (n = next_line(r, endless)) > 0; offset += (long long)n) {
    lineno++;
    log->cur_offset = offset;
    log->cur_lineno = lineno;
    cut = !r->newline;
    if (r->over) {
      log->lines++;
      char why[96];
      snprintf(why, sizeof why, "longer than %d MiB%s", CGL_LINE_MAX >> 20,
               endless ? ", in a file that is not a regular file: not read further" : "");
      malformed(log, file, lineno, why);
      if (!log->first_over[0])
        snprintf(log->first_over, sizeof log->first_over, "%s", why);
      log->over_lines++;
      if (endless) {
        log->stopped_files++;
        cut = false;
        break;
      }
      continue;
    }
    if (r->line_len && memchr(r->line, '\0', r->line_len)) {
      log->lines++;
      malformed(log, file, lineno, "contains a NUL byte");
      continue;
    }
    cgl_read_line(log, file, r->line ? r->line : "", r->line_len, lineno);
  }
  int bad = ferror(f);
  int saved = errno;
  log->cut_files += cut;
  free(r->line);
  free(r);
  if (bad) {
    errno = saved;
    return -1;
  }
  return 0;
}

int cgl_read_stream(cgl_log *log, FILE *f, const char *name) {
  return read_stream_at(log, f, name, 0, 1);
}

int cgl_read_file(cgl_log *log, const char *path, long long offset) {
  return cgl_read_file_at(log, path, offset, 1);
}

/* A FIFO read before its writer opened it reads as empty at once, and the
 * writer (`zcat log.gz > fifo &`, started just before) then blocks for
 * ever: such a FIFO is waited on for a writer, CGL_FIFO_WAIT_MS at most
 * (Linux reports no hang-up on a FIFO no writer has opened since the read
 * end was; data, or a writer come and gone, ends the wait). False when
 * none came. Anything but a FIFO: true at once. */
static bool writer_came(int fd) {
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISFIFO(st.st_mode))
    return true;
  struct pollfd p = {.fd = fd, .events = POLLIN};
  int n;
  while ((n = poll(&p, 1, CGL_FIFO_WAIT_MS)) < 0 && errno == EINTR)
    ;
  return n != 0;
}

int cgl_read_file_at(cgl_log *log, const char *path, long long offset, long long lineno) {
  if (!strcmp(path, "-"))
    return cgl_read_stream(log, stdin, "(stdin)");
  /* O_NONBLOCK: a FIFO with no writer would block the open for ever; once
   * open, reads block again */
  int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0)
    return -1;
  if (!writer_came(fd)) {
    close(fd);
    errno = ETIMEDOUT;
    return -1;
  }
  int fl = fcntl(fd, F_GETFL);
  FILE *f = fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) != 0 ? NULL : fdopen(fd, "r");
  if (!f) {
    int e = errno;
    close(fd);
    errno = e;
    return -1;
  }
  if (offset > 0 && fseeko(f, offset, SEEK_SET) != 0) {
    int e = errno;
    fclose(f);
    errno = e;
    return -1;
  }
  int rc = read_stream_at(log, f, path, offset > 0 ? offset : 0, lineno);
  int e = errno;
  fclose(f);
  errno = e;
  return rc;
}

bool cgl_is_capguard_log(const cgl_log *log) { return log->records + log->newer > 0; }

const char *cgl_word(const cg_words *t, unsigned v) { return v < t->n ? cg_word_name(t, v) : NULL; }

bool cgl_capture_broken(const cgl_log *log, size_t capture) {
  const cgl_capture *c = &log->caps[capture];
  return cg_capture_status_broken(c->status) || c->first_break >= 0;
}

void cgl_event_site(const cgl_event *e, char *buf, size_t cap) {
  snprintf(buf, cap, "%s", e->site ? e->site : "(no stack)");
}
