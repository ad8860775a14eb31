#include "report.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "capguard/image.h" /* cg_hash_bytes */
#include "config.h"
#include "driver.h"
#include "fleet_counts.h"
#include "output.h"
#include "seen_set.h"
#include "warn.h"

static uint64_t counters_events[CG_EV_KIND_COUNT];
static uint64_t counters_verdicts[CG_VERDICT_COUNT];

static void count(cg_event_kind k, cg_verdict v) {
  if ((unsigned)k < CG_EV_KIND_COUNT)
    __atomic_add_fetch(&counters_events[k], 1, __ATOMIC_RELAXED);
  if ((unsigned)v < CG_VERDICT_COUNT)
    __atomic_add_fetch(&counters_verdicts[v], 1, __ATOMIC_RELAXED);
}

void cg_report(cg_event *e, cg_report_scratch *s) {
  e->pid = cg_self_pid();
  e->tid = cg_self_tid();
  e->time_ns = cg_now_ns();
  e->thread_mode = cg_self_mode();
  e->driver_version = cg_driver_version();
  e->emulated_version = cg_cfg.emulate_driver;
  cg_begin_site_text(&s->site, s->began, sizeof s->began); /* dladdr: never under the model's lock or the gate */
  e->capture_began = s->began;
  size_t n = cg_native_stack(0, s->native, CG_MAX_NATIVE_FRAMES, s->native_buf, sizeof s->native_buf);
  /* Start at the caller of the driver entry point: capguard's own frames
   * (inlined or not) say nothing to the person reading the report. */
  size_t first = 0;
  while (first < n && strncmp(s->native[first], "libcapguard", 11) == 0)
    first++;
  e->native = s->native + first;
  e->n_native = n - first;
  e->n_py = cg_python_stack(s->py, CG_MAX_PY_FRAMES, s->py_buf, sizeof s->py_buf);
  e->py = s->py;
  count(e->kind, e->verdict);
  cg_fleet_count(e);
  cg_output_event(e);
}

cg_verdict cg_report_verdict_of(CUresult r) {
  if (r == CUDA_SUCCESS)
    return CG_VERDICT_ALLOWED;
  if (r == CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED || r == CUDA_ERROR_CAPTURED_EVENT ||
      r == CUDA_ERROR_STREAM_CAPTURE_ISOLATION || r == CUDA_ERROR_STREAM_CAPTURE_IMPLICIT)
    return CG_VERDICT_REFUSED;
  return CG_VERDICT_FAILED;
}

void cg_report_refusal(cg_event *e, cg_report_scratch *s, CUresult r) {
  e->driver_result = (int)r;
  e->result = (int)r;
  e->verdict = CG_VERDICT_REFUSED;
  cg_report(e, s);
}

cg_report_scratch *cg_report_room(const char *what) {
  cg_report_scratch *s = calloc(1, sizeof *s);
  if (!s)
    cg_warn_oom(what);
  return s;
}

static cg_report_scratch *room_for(cg_report_scratch *s, const cg_begin_site *site, const char *what) {
  if (!s)
    s = cg_report_room(what);
  if (s && site)
    s->site = *site;
  return s;
}

void cg_report_and_free(cg_event *e, cg_report_scratch *s, const cg_begin_site *site, const char *what) {
  s = room_for(s, site, what);
  if (s)
    cg_report(e, s);
  free(s);
}

void cg_report_refusal_and_free(cg_event *e, cg_report_scratch *s, const cg_begin_site *site, CUresult r,
                                const char *what) {
  s = room_for(s, site, what);
  if (s)
    cg_report_refusal(e, s, r);
  free(s);
}

/* ---- repeats: a watchdog polling an event, an allocation in a loop */

static pthread_mutex_t seen_lock = PTHREAD_MUTEX_INITIALIZER;
static cg_seen_set seen;

bool cg_report_first_sighting(const char *call, cg_event_kind kind, cg_verdict v, uint64_t capture_id,
                              const cg_begin_site *where) {
  struct {
    uintptr_t call;
    uint64_t capture;
    int verdict, n;
    void *frames[CG_BEGIN_SITE_FRAMES];
    char python[256];
  } id;
  memset(&id, 0, sizeof id);
  id.call = (uintptr_t)call; /* a row's name: one string per entry point */
  id.capture = capture_id;
  id.verdict = (int)v;
  if (where) {
    id.n = where->n;
    memcpy(id.frames, where->frames, sizeof id.frames);
    memcpy(id.python, where->python, sizeof id.python);
  }
  cg_hash128 k = cg_hash_bytes(&id, sizeof id);
  pthread_mutex_lock(&seen_lock);
  bool first = cg_seen_first(&seen, k);
  pthread_mutex_unlock(&seen_lock);
  if (!first)
    count(kind, v);
  return first;
}

void cg_report_counts(uint64_t events[CG_EV_KIND_COUNT], uint64_t verdicts[CG_VERDICT_COUNT]) {
  for (int i = 0; i < CG_EV_KIND_COUNT; i++)
    events[i] = __atomic_load_n(&counters_events[i], __ATOMIC_RELAXED);
  for (int i = 0; i < CG_VERDICT_COUNT; i++)
    verdicts[i] = __atomic_load_n(&counters_verdicts[i], __ATOMIC_RELAXED);
}

/* Fork: the child is a process of its own, with nothing counted yet. The
 * parent's table is leaked rather than freed (another thread may have held
 * its lock at the fork). */
void cg_report_atfork_child(void) {
  memset(counters_events, 0, sizeof counters_events);
  memset(counters_verdicts, 0, sizeof counters_verdicts);
  pthread_mutex_init(&seen_lock, NULL);
  seen.head = NULL;
}
