/* --trace: the log as a Chrome/Perfetto trace (the JSON trace-event format:
 * {"traceEvents":[...]}, "ts" and "dur" in microseconds). One track per process
 * (named by its command) and thread; captures are complete events ("X") on the
 * thread that began them, calls during capture are instants ("i") on the
 * calling thread, with their details in "args"; threads are named by what the
 * log knows of them. Times are exact to the nanosecond from the first thing in
 * the log; otherData.capguard_epoch_ns says when that was (docs/trace.md:
 * lining it up with an nsys export). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "log_pool.h"
#include "report_render.h"
#include "sections.h"

static json_t *jstr(const char *s) { return cgl_json_text(s); }

static void name_process(json_t *evs, const cgr_report *rep, size_t p) {
  const cgl_process *pr = &rep->rows.procs[p];
  char cmd[96], who[160];
  cgr_process_command(pr, cmd, sizeof cmd);
  snprintf(who, sizeof who, "%s (pid %lld, %s mode)", cmd[0] ? cmd : "?", pr->pid,
           pr->mode < CG_RUN_MODE_COUNT ? cg_run_mode_name(pr->mode) : "?");
  json_array_append_new(evs,
                        json_pack("{s:s, s:s, s:I, s:I, s:{s:o}}", "ph", "M", "name", "process_name", "pid",
                                  (json_int_t)pr->pid, "tid", (json_int_t)0, "args", "name", jstr(who)));
}

/* Each thread the log names, named on its track: the process's main thread,
 * the threads that began captures (and which), the others by their id. The
 * log holds no thread names of the program's own. One sort of (process,
 * thread, capture) over every capture and call: linear in the log however
 * many processes it holds. */
typedef struct {
  size_t proc;
  long long tid;
  long long cap_id; /* the capture it began, -1 for a call */
  size_t order;
} thread_seen;

static int cmp_seen(const void *pa, const void *pb) {
  const thread_seen *x = pa, *y = pb;
  if (x->proc != y->proc)
    return x->proc < y->proc ? -1 : 1;
  if (x->tid != y->tid)
    return x->tid < y->tid ? -1 : 1;
  return x->order < y->order ? -1 : x->order > y->order;
}

static void name_threads(json_t *evs, const cgr_report *rep) {
  const cgr_rows *rows = &rep->rows;
  size_t n = rows->n_caps + rows->n_evs;
  thread_seen *v = malloc((n ? n : 1) * sizeof *v);
  if (!v)
    return;
  for (size_t c = 0; c < rows->n_caps; c++)
    v[c] = (thread_seen){rows->caps[c].proc, rows->caps[c].tid, rows->caps[c].id, c};
  for (size_t i = 0; i < rows->n_evs; i++)
    v[rows->n_caps + i] =
        (thread_seen){rows->evs[i].proc, cgl_event_num(&rows->evs[i], CGL_EV_TID), -1, rows->n_caps + i};
  qsort(v, n, sizeof *v, cmp_seen);
  for (size_t i = 0; i < n;) {
    size_t j = i, shown = 0, used = 0;
    char caps[160] = "";
    for (; j < n && v[j].proc == v[i].proc && v[j].tid == v[i].tid; j++) {
      if (v[j].cap_id < 0 || shown++ >= 8)
        continue;
      int w = snprintf(caps + used, sizeof caps - used, "%s%lld", used ? ", " : "", v[j].cap_id);
      used = w > 0 && (size_t)w < sizeof caps - used ? used + (size_t)w : used;
    }
    long long pid = rows->procs[v[i].proc].pid;
    char name[256];
    snprintf(name, sizeof name, "%s %lld%s%s%s", v[i].tid == pid ? "main thread" : "thread", v[i].tid,
             shown ? shown == 1 ? ", began capture " : ", began captures " : "", caps,
             shown > 8 ? ", ..." : "");
    json_array_append_new(evs, json_pack("{s:s, s:s, s:I, s:I, s:{s:o}}", "ph", "M", "name", "thread_name",
                                         "pid", (json_int_t)pid, "tid", (json_int_t)v[i].tid, "args", "name",
                                         jstr(name)));
    i = j;
  }
  free(v);
}

int cgr_print_trace(FILE *out, const cgr_report *rep) {
  const cgr_rows *rows = &rep->rows;
  long long t0 = INT64_MAX;
  for (size_t c = 0; c < rows->n_caps; c++)
    if (rows->caps[c].begin_ns > 0 && rows->caps[c].begin_ns < t0)
      t0 = rows->caps[c].begin_ns;
  for (size_t i = 0; i < rows->n_evs; i++)
    if (rows->evs[i].time_ns > 0 && rows->evs[i].time_ns < t0)
      t0 = rows->evs[i].time_ns;
  for (size_t p = 0; p < rows->n_procs; p++)
    if (rows->procs[p].first_ns > 0 && rows->procs[p].first_ns < t0)
      t0 = rows->procs[p].first_ns;
  if (t0 == INT64_MAX)
    t0 = 0;

  json_t *evs = json_array();
  for (size_t p = 0; p < rows->n_procs; p++)
    name_process(evs, rep, p);
  name_threads(evs, rep);
  cgr_sections_trace(evs, rep, t0);
  /* ts 0 is capguard_epoch_ns of the shim's clock (CLOCK_REALTIME, UTC): the
   * offset to another trace of the same machine, e.g. an nsys export
   * (docs/trace.md says how) */
  json_t *root =
      json_pack("{s:o, s:s, s:{s:I, s:s, s:s}}", "traceEvents", evs, "displayTimeUnit", "ms", "otherData",
                "capguard_epoch_ns", (json_int_t)t0, "clock", "CLOCK_REALTIME (UTC nanoseconds since 1970)",
                "generator", "capguard report --trace");
  if (!root)
    return -1;
  int rc = json_dumpf(root, out, JSON_COMPACT);
  fputc('\n', out);
  json_decref(root);
  return rc != 0 || ferror(out) ? -1 : 0;
}
