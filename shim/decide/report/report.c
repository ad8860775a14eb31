#include "report.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "capguard/image.h" /* cg_hash_bytes */
#include "python_site.h"
#include "config.h"
#include "driver.h"
#include "fleet_counts.h"
#include "output.h"
#include "seen_set.h"
#include "warn.h"
#include "locks.h"
#include "signals_held.h"

static uint64_t counters_events[CG_EV_KIND_COUNT];
static uint64_t counters_verdicts[CG_VERDICT_COUNT];

static void count(cg_event_kind k, cg_verdict v) {
  if ((unsigned)k < CG_EV_KIND_COUNT)
    __atomic_add_fetch(&counters_events[k], 1, __ATOMIC_RELAXED);
  if ((unsigned)v < CG_VERDICT_COUNT)
    __atomic_add_fetch(&counters_verdicts[v], 1, __ATOMIC_RELAXED);
}

void cg_report(cg_event *e, cg_report_scratch *s) {
  cg_signals held; /* a handler must not interrupt dladdr or malloc here (signals_held.h) */
  cg_signals_hold(&held);
  e->pid = cg_self_pid();
  e->tid = cg_self_tid();
  e->time_ns = cg_now_ns();
  e->thread_mode = cg_self_mode();
  e->driver_version = cg_driver_version();
  e->emulated_version = cg_cfg.emulate_driver;
  cg_begin_site_text(&s->site, s->began, sizeof s->began); /* dladdr: never under the model's lock or the gate */
  e->capture_began = s->began;
  /* From the caller of the driver entry point: capguard's own frames
   * (inlined or not) say nothing to the person reading the report. Names
   * only if the event is written (cg_output_event). */
  if (!s->frames_taken)
    cg_report_take_stack(s);
  e->native = NULL;
  e->n_native = 0;
  e->n_py = cg_python_stack(s->py, CG_MAX_PY_FRAMES, s->py_buf, sizeof s->py_buf);
  e->py = s->py;
  /* NCCL's communicator set-up is told from the frames' names: decided
   * where they are made (cg_output_event), only for an event written. */
  e->nccl_setup = NULL;
  /* A call from another thread than the capture's: its name says whose it
   * is (NCCL's proxy, a watchdog). prctl reads it without a file. */
  e->thread_name = NULL;
  if (e->capture.tid && e->tid != e->capture.tid &&
      syscall(SYS_prctl, PR_GET_NAME, (unsigned long)s->thread_name, 0UL, 0UL, 0UL) == 0) {
    s->thread_name[sizeof s->thread_name - 1] = '\0';
    e->thread_name = s->thread_name;
  }
  if (e->kind != CG_EV_REQUEST_LOAD) { /* not a call during capture: counted by serving.c */
    count(e->kind, e->verdict);
    cg_fleet_count(e);
  }
  cg_output_native raw = {s->frames, s->n_frames, s->native, s->native_buf, sizeof s->native_buf};
  cg_output_event(e, &raw);
  cg_signals_release(&held);
}

void cg_report_take_stack(cg_report_scratch *s) {
  s->n_frames = cg_native_frames(s->frames, CG_MAX_NATIVE_FRAMES);
  s->frames_taken = true;
}

cg_begin_site *cg_report_site(const cg_report_scratch *s) {
  cg_begin_site *site = malloc(sizeof *site);
  if (!site) {
    cg_warn_oom("where a call was made");
    return NULL;
  }
  size_t n = s->n_frames < CG_BEGIN_SITE_FRAMES ? s->n_frames : CG_BEGIN_SITE_FRAMES;
  memset(site->frames, 0, sizeof site->frames);
  memcpy(site->frames, s->frames, n * sizeof s->frames[0]);
  site->n = (int)n;
  cg_python_site(site->python, sizeof site->python);
  return site;
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

/* malloc, not calloc: the buffers (tens of KB) are written before they are
 * read; only what may be read unwritten is cleared. */
cg_report_scratch *cg_report_room(const char *what) {
  cg_report_scratch *s = malloc(sizeof *s);
  if (!s) {
    cg_warn_oom(what);
    return NULL;
  }
  s->frames_taken = false;
  s->n_frames = 0;
  s->began[0] = 0;
  memset(&s->site, 0, sizeof s->site); /* s->image: cg_image_inspect clears it */
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
  cg_signals held;
  cg_signals_hold(&held);
  s = room_for(s, site, what);
  if (s)
    cg_report(e, s);
  free(s);
  cg_signals_release(&held);
}

void cg_report_refusal_and_free(cg_event *e, cg_report_scratch *s, const cg_begin_site *site, CUresult r,
                                const char *what) {
  cg_signals held;
  cg_signals_hold(&held);
  s = room_for(s, site, what);
  if (s)
    cg_report_refusal(e, s, r);
  free(s);
  cg_signals_release(&held);
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
  cg_lock(&seen_lock);
  bool first = cg_seen_first(&seen, k);
  cg_unlock(&seen_lock);
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
