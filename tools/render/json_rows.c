/* json_rows.h. */
#include "json_rows.h"

#include <stdlib.h>

#include "capguard/log_keys.h"
#include "findings.h"
#include "offender.h"

json_t *cgr_json_event(const cgr_report *rep, const cgl_event *e) {
  char site[512];
  cgl_event_site(e, site, sizeof site);
  json_t *o = json_pack(
      "{s:I, s:o, s:o, s:o, s:I, s:I, s:o, s:o, s:I}", CG_KEY_PID, (json_int_t)rep->rows.procs[e->proc].pid,
      CG_KEY_EVENT, jstr(cgl_word(&cg_event_kinds, e->kind)), CG_KEY_CALL, jstr(e->call), CG_KEY_VERDICT,
      jstr(cgl_word(&cg_verdicts, e->verdict)), CG_KEY_RESULT, (json_int_t)cgl_event_num(e, CGL_EV_RESULT),
      CG_KEY_TIME_NS, (json_int_t)e->time_ns, "site", jtext(site), CG_KEY_LOG,
      jtext(cgl_event_file(rep->rows.files, rep->rows.procs, e)), CG_KEY_LINE, (json_int_t)e->src_line);
  json_t *k = json_array();
  for (size_t i = 0; i < e->kernels->n; i++)
    json_array_append_new(k, jtext(e->kernels->v[i]));
  json_object_set_new(o, CG_KEY_KERNELS, k);
  char result[160];
  cgr_event_result(e, result, sizeof result);
  json_object_set_new(o, "result_words", jtext(result));
  json_object_set_new(o, CG_KEY_MEANING, jstr(e->meaning));
  json_object_set_new(o, CG_KEY_HANDLE, jstr(e->handle));
  return o;
}

/* What broke a broken capture: "broken_by" as cgr_first_offender reads it (an
 * object, or null: a call capguard does not watch; absent when the log does
 * not say), "offender" (named, unwatched, not-said) and the phrase every
 * rendering uses. */
void cgr_json_offender(const cgr_report *rep, size_t capture, long first_event, json_t *o) {
  cgl_offender f;
  cgl_broken_by by = cgr_report_first_offender(rep, capture, first_event, &f);
  char phrase[1024], result[160];
  cgr_report_offender_phrase(rep, capture, first_event, phrase, sizeof phrase);
  if (by == CGL_BY_CALL) {
    cgr_result_words(f.result, NULL, result, sizeof result);
    json_object_set_new(
        o, CG_KEY_BROKEN_BY,
        json_pack("{s:s, s:o, s:o, s:I, s:s, s:I, s:I, s:s, s:s, s:s}", CG_KEY_CALL, f.call, CG_KEY_EVENT,
                  jstr(cgl_word(&cg_event_kinds, f.kind)), CG_KEY_VERDICT,
                  jstr(cgl_word(&cg_verdicts, f.verdict)), CG_KEY_RESULT, (json_int_t)f.result,
                  "result_words", result, CG_KEY_TID, (json_int_t)f.tid, CG_KEY_TIME_NS,
                  (json_int_t)f.time_ns, CG_KEY_PYTHON, f.python, CG_KEY_WHERE, f.where, "from",
                  rep->rows.caps[capture].by == CGL_BY_CALL ? "capture record" : "logged event"));
  } else if (by == CGL_BY_UNWATCHED) {
    json_object_set_new(o, CG_KEY_BROKEN_BY, json_null());
  }
  json_object_set_new(o, "offender",
                      json_string(by == CGL_BY_CALL        ? "named"
                                  : by == CGL_BY_UNWATCHED ? "unwatched"
                                                           : "not-said"));
  json_object_set_new(o, "offender_text", jtext(phrase));
}

json_t *cgr_json_capture(const cgr_report *rep, const cgl_capture *c) {
  json_t *o = json_pack("{s:I, s:I, s:o, s:o, s:o, s:o, s:I, s:I, s:I}", CG_KEY_PID,
                        (json_int_t)rep->rows.procs[c->proc].pid, CG_KEY_ID, (json_int_t)c->id, CG_KEY_STREAM,
                        jstr(c->stream), CG_KEY_MODE, jstr(cgl_word(&cg_capture_modes, c->mode)),
                        CG_KEY_STATUS, jstr(cgl_word(&cg_capture_statuses, c->status)), CG_KEY_BEGAN,
                        jstr(c->began), CG_KEY_BEGIN_NS, (json_int_t)c->begin_ns, CG_KEY_END_NS,
                        (json_int_t)c->end_ns, CG_KEY_EVENTS, (json_int_t)c->events);
  json_object_set_new(o, CG_KEY_END_RESULT,
                      c->has_end_result ? json_integer((json_int_t)cgl_capture_end_result(c)) : json_null());
  json_object_set_new(o, CG_KEY_REPEATS, json_integer((json_int_t)cgl_capture_repeats(c)));
  size_t ci = (size_t)(c - rep->rows.caps);
  if (cgr_report_capture_broken(rep, ci))
    cgr_json_offender(rep, ci, c->by == CGL_BY_UNWATCHED ? -1 : c->first_break, o);
  return o;
}

/* The findings taken apart: which row, its sentence, each command alone. */
json_t *cgr_json_findings(const cgf_list *advice) {
  json_t *findings = json_array();
  for (size_t i = 0; i < advice->n; i++) {
    const cgf_finding *x = &advice->v[i];
    json_t *cmds = json_array();
    for (size_t k = 0; k < x->n_commands; k++) {
      json_t *c = json_object();
      json_object_set_new(c, "what", jtext(x->commands[k].lead ? x->commands[k].lead : ""));
      json_object_set_new(c, "command", jtext(x->commands[k].text));
      json_array_append_new(cmds, c);
    }
    json_t *f = json_object();
    json_object_set_new(f, "finding", jtext(x->key));
    json_object_set_new(f, "sentence", jtext(x->sentence));
    json_object_set_new(f, "commands", cmds);
    json_array_append_new(findings, f);
  }
  return findings;
}

/* What to do, one line a finding (the text report's words). */
json_t *cgr_json_advice(const cgf_list *advice) {
  json_t *lines = json_array();
  for (size_t i = 0; i < advice->n; i++) {
    char *line = cgf_line(&advice->v[i]);
    json_array_append_new(lines, jtext(line));
    free(line);
  }
  return lines;
}
