/* --trace: the log as a Chrome/Perfetto trace (the JSON trace-event format:
 * {"traceEvents":[...]}, "ts" and "dur" in microseconds). One track per process
 * (named by its command) and thread; captures are complete events ("X") on the
 * thread that began them, calls during capture are instants ("i") on the
 * calling thread, with their details in "args". Times are from the first thing
 * in the log; otherData.capguard_epoch_ns says when that was. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "log_pool.h"
#include "report_offender.h"
#include "report_render.h"

/* Microseconds from t0, computed in floating point: no signed overflow on extreme times. */
static double us_since(long long t, long long t0) { return ((double)t - (double)t0) / 1e3; }

static json_t *jstr(const char *s) { return cgl_json_text(s); }

static void name_process(json_t *evs, const cgr_analysis *a, size_t p) {
  const cgl_process *pr = &a->log->procs[p];
  char cmd[96], who[160];
  cgr_process_command(pr, cmd, sizeof cmd);
  snprintf(who, sizeof who, "%s (pid %lld, %s mode)", cmd[0] ? cmd : "?", pr->pid,
           pr->mode < CG_RUN_MODE_COUNT ? cg_run_mode_name(pr->mode) : "?");
  json_array_append_new(evs, json_pack("{s:s, s:s, s:I, s:I, s:{s:o}}", "ph", "M", "name",
                                       "process_name", "pid", (json_int_t)pr->pid, "tid",
                                       (json_int_t)0, "args", "name", jstr(who)));
}

int cgr_print_trace(FILE *out, const cgr_analysis *a) {
  const cgl_log *log = a->log;
  long long t0 = INT64_MAX;
  for (size_t c = 0; c < log->n_caps; c++)
    if (log->caps[c].begin_ns > 0 && log->caps[c].begin_ns < t0)
      t0 = log->caps[c].begin_ns;
  for (size_t i = 0; i < log->n_evs; i++)
    if (log->evs[i].time_ns > 0 && log->evs[i].time_ns < t0)
      t0 = log->evs[i].time_ns;
  for (size_t p = 0; p < log->n_procs; p++)
    if (log->procs[p].first_ns > 0 && log->procs[p].first_ns < t0)
      t0 = log->procs[p].first_ns;
  if (t0 == INT64_MAX)
    t0 = 0;

  json_t *evs = json_array();
  for (size_t p = 0; p < log->n_procs; p++)
    name_process(evs, a, p);
  for (size_t c = 0; c < log->n_caps; c++) {
    const cgl_capture *cp = &log->caps[c];
    const cgl_process *pr = &log->procs[cp->proc];
    long long b = cp->begin_ns > 0 ? cp->begin_ns : pr->first_ns;
    /* still open at exit: drawn up to the last thing its process logged */
    long long e = cp->end_ns > 0 ? cp->end_ns : pr->last_ns;
    double dur = e > b ? us_since(e, b) : 0;
    char name[64];
    bool broken = cgl_capture_broken(log, c);
    snprintf(name, sizeof name, "capture %lld%s", cp->id, broken ? " (broken)" : "");
    json_array_append_new(
        evs, json_pack("{s:s, s:s, s:s, s:f, s:f, s:I, s:I, s:{s:o, s:o, s:o, s:o, s:b, s:I}}",
                       "ph", "X", "cat", "capture", "name", name, "ts", us_since(b, t0), "dur", dur,
                       "pid", (json_int_t)pr->pid, "tid", (json_int_t)cp->tid, "args", "status",
                       jstr(cgl_word(&cg_capture_statuses, cp->status)), "mode",
                       jstr(cgl_word(&cg_capture_modes, cp->mode)), "stream", jstr(cp->stream),
                       "began", jstr(cp->began), "broken", broken, "calls_during",
                       (json_int_t)cp->events));
    /* what broke it, in the words the other reports use */
    json_t *args = json_object_get(json_array_get(evs, json_array_size(evs) - 1), "args");
    if (broken && args) {
      char phrase[1024];
      cgr_offender_phrase(log, c, cp->first_break, phrase, sizeof phrase);
      json_object_set_new(args, "first_offender", jstr(phrase));
    }
    if (args && cp->repeats > 0)
      json_object_set_new(args, "repeats", json_integer((json_int_t)cp->repeats));
  }
  for (size_t i = 0; i < log->n_evs; i++) {
    const cgl_event *e = &log->evs[i];
    const cgl_process *pr = &log->procs[e->proc];
    char name[160];
    const char *verdict = cgl_word(&cg_verdicts, e->verdict);
    snprintf(name, sizeof name, "%s %s", e->call ? e->call : "?", verdict ? verdict : "?");
    json_t *kernels = json_array();
    for (size_t k = 0; k < e->kernels->n; k++)
      json_array_append_new(kernels, jstr(e->kernels->v[k]));
    long long t = e->time_ns > 0 ? e->time_ns : log->caps[e->capture].begin_ns;
    json_array_append_new(
        evs, json_pack("{s:s, s:s, s:s, s:o, s:f, s:I, s:I, s:{s:o, s:o, s:o, s:I, s:o, s:o, s:I}}",
                       "ph", "i", "s", "t", "cat", "call", "name", jstr(name), "ts", us_since(t, t0),
                       "pid", (json_int_t)pr->pid, "tid", (json_int_t)e->tid, "args", "event",
                       jstr(cgl_word(&cg_event_kinds, e->kind)), "verdict", jstr(verdict), "site",
                       jstr(e->site),
                       "result", (json_int_t)e->result, "kernels", kernels, "log",
                       jstr(e->src_file), "line", (json_int_t)e->src_line));
    json_t *args = json_object_get(json_array_get(evs, json_array_size(evs) - 1), "args");
    if (args) {
      char result[160];
      cgr_event_result(e, result, sizeof result);
      json_object_set_new(args, "result_words", jstr(result));
      if (e->handle)
        json_object_set_new(args, "handle", jstr(e->handle));
    }
  }
  json_t *root = json_pack("{s:o, s:s, s:{s:I, s:s}}", "traceEvents", evs, "displayTimeUnit", "ms",
                           "otherData", "capguard_epoch_ns", (json_int_t)t0, "generator",
                           "capguard report --trace");
  if (!root)
    return -1;
  int rc = json_dumpf(root, out, JSON_COMPACT);
  fputc('\n', out);
  json_decref(root);
  return rc != 0 || ferror(out) ? -1 : 0;
}
