#include "offender.h"

#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

void cgr_result_words(long long code, const char *meaning, char *buf, size_t cap) {
  /* a code outside int is no CUresult: its number alone */
  const char *w = meaning && *meaning ? meaning
                  : code >= INT_MIN && code <= INT_MAX ? cg_cuda_result_words((int)code)
                                                       : NULL;
  if (w)
    snprintf(buf, cap, "%lld %s", code, w);
  else
    snprintf(buf, cap, "%lld", code);
}

void cgr_event_result(const cgl_event *e, char *buf, size_t cap) {
  long long result = cgl_event_num(e, CGL_EV_RESULT), driver = cgl_event_num(e, CGL_EV_DRIVER_RESULT);
  bool about_result = driver < 0 || driver == result;
  cgr_result_words(result, about_result ? e->meaning : NULL, buf, cap);
}

const char *cgr_offender_at(const cgl_offender *f) {
  if (f->python && *f->python)
    return f->python;
  return f->where ? f->where : "";
}

cgl_broken_by cgr_first_offender(const cgl_log *log, size_t capture, long first_event,
                                 cgl_offender *out) {
  const cgl_capture *c = &log->caps[capture];
  if (c->by == CGL_BY_CALL) {
    *out = *cgl_capture_offender(c);
    return CGL_BY_CALL;
  }
  /* null: the shim saw no call break the capture while it was still valid
   * (a call it does not watch did first); a refused call logged in it
   * after that is not its offender. Only a log too old to say either way
   * falls back to the first breaking event logged in the capture. */
  if (c->by == CGL_BY_UNWATCHED)
    return CGL_BY_UNWATCHED;
  if (first_event >= 0 && (size_t)first_event < log->n_evs) {
    const cgl_event *e = &log->evs[first_event];
    *out = (cgl_offender){.call = e->call ? e->call : "",
                          .python = e->python_top ? e->python_top : "",
                          .where = e->site ? e->site : "",
                          .kind = e->kind,
                          .verdict = e->verdict,
                          .result = cgl_event_num(e, CGL_EV_RESULT),
                          .tid = cgl_event_num(e, CGL_EV_TID),
                          .time_ns = e->time_ns};
    return CGL_BY_CALL;
  }
  return c->by;
}

void cgr_offender_phrase(const cgl_log *log, size_t capture, long first_event, char *buf,
                         size_t cap) {
  if (!cap)
    return;
  buf[0] = '\0';
  const cgl_capture *c = &log->caps[capture];
  cgl_offender f;
  cgl_broken_by by = cgr_first_offender(log, capture, first_event, &f);
  if (by == CGL_BY_UNWATCHED) {
    snprintf(buf, cap, CGR_UNWATCHED " (began at %s)",
             c->began && *c->began ? c->began : "a place the log does not give");
    return;
  }
  if (by != CGL_BY_CALL) {
    /* never a guess: why the log cannot say */
    snprintf(buf, cap, "%s", c->ended_line ? CGR_NOT_SAID : CGR_NO_RECORD);
    return;
  }
  const char *at = cgr_offender_at(&f), *verdict = cgl_word(&cg_verdicts, f.verdict);
  char result[160], thread[96] = "", setup[320] = "";
  cgr_result_words(f.result, NULL, result, sizeof result);
  /* the logged event of the same call and thread: a helper thread's name,
   * NCCL's communicator set-up around it */
  const cgl_event *e = first_event >= 0 && (size_t)first_event < log->n_evs ? &log->evs[first_event] : NULL;
  if (e && cgl_event_num(e, CGL_EV_TID) == f.tid && e->call && !strcmp(e->call, f.call)) {
    if (cgl_event_rare(e)->thread_name)
      snprintf(thread, sizeof thread, " '%s', not the capturing thread", cgl_event_rare(e)->thread_name);
    if (cgl_event_rare(e)->nccl_setup)
      snprintf(setup, sizeof setup, "; NCCL communicator set-up during capture (%s)",
               cgl_event_rare(e)->nccl_setup);
  }
  snprintf(buf, cap, "first offender %s%s%s (%s: %s, thread %lld%s)%s", *f.call ? f.call : "(unknown call)",
           *at ? " at " : "", at, verdict ? verdict : "unknown", result, f.tid, thread, setup);
}

bool cgr_offending(const cgl_event *e) { return e->verdict != CG_VERDICT_SERVED; }
