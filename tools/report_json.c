/* --json: the analysis for machines, one JSON document (schema "capguard-report", v 1). */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "log_pool.h"
#include "report_offender.h"

#include "report_render.h"

static json_t *jtext(const char *s) { return cgl_json_text(s); }

static json_t *jstr(const char *s) { return s ? jtext(s) : json_null(); }

static json_t *event_json(const cgr_analysis *a, const cgl_event *e) {
  char site[512];
  cgl_event_site(e, site, sizeof site);
  json_t *o = json_pack("{s:I, s:o, s:o, s:o, s:I, s:I, s:o, s:o, s:I}", "pid",
                        (json_int_t)a->log->procs[e->proc].pid, "event",
                        jstr(cgl_word(&cg_event_kinds, e->kind)), "call", jstr(e->call), "verdict",
                        jstr(cgl_word(&cg_verdicts, e->verdict)), "result", (json_int_t)e->result,
                        "time_ns", (json_int_t)e->time_ns, "site", jtext(site), "log", jtext(e->src_file), "line",
                        (json_int_t)e->src_line);
  json_t *k = json_array();
  for (size_t i = 0; i < e->kernels->n; i++)
    json_array_append_new(k, jtext(e->kernels->v[i]));
  json_object_set_new(o, "kernels", k);
  char result[160];
  cgr_event_result(e, result, sizeof result);
  json_object_set_new(o, "result_words", jtext(result));
  json_object_set_new(o, "meaning", jstr(e->meaning));
  json_object_set_new(o, "handle", jstr(e->handle));
  return o;
}

/* What broke a broken capture: "broken_by" as cgr_first_offender reads it (an
 * object, or null: a call capguard does not watch; absent when the log does
 * not say), "offender" (named, unwatched, not-said) and the phrase every
 * rendering uses. */
static void offender_json(const cgr_analysis *a, size_t capture, long first_event, json_t *o) {
  cgl_offender f;
  cgl_broken_by by = cgr_first_offender(a->log, capture, first_event, &f);
  char phrase[1024], result[160];
  cgr_offender_phrase(a->log, capture, first_event, phrase, sizeof phrase);
  if (by == CGL_BY_CALL) {
    cgr_result_words(f.result, NULL, result, sizeof result);
    json_object_set_new(
        o, "broken_by",
        json_pack("{s:s, s:o, s:o, s:I, s:s, s:I, s:I, s:s, s:s, s:s}", "call", f.call, "event",
                  jstr(cgl_word(&cg_event_kinds, f.kind)), "verdict",
                  jstr(cgl_word(&cg_verdicts, f.verdict)), "result", (json_int_t)f.result,
                  "result_words", result, "tid", (json_int_t)f.tid, "time_ns", (json_int_t)f.time_ns,
                  "python", f.python, "where", f.where, "from",
                  a->log->caps[capture].by == CGL_BY_CALL ? "capture record" : "logged event"));
  } else if (by == CGL_BY_UNWATCHED) {
    json_object_set_new(o, "broken_by", json_null());
  }
  json_object_set_new(o, "offender",
                      json_string(by == CGL_BY_CALL ? "named" : by == CGL_BY_UNWATCHED ? "unwatched"
                                                                                    : "not-said"));
  json_object_set_new(o, "offender_text", jtext(phrase));
}

static json_t *capture_json(const cgr_analysis *a, const cgl_capture *c) {
  json_t *o = json_pack("{s:I, s:I, s:o, s:o, s:o, s:o, s:I, s:I, s:I}", "pid",
                   (json_int_t)a->log->procs[c->proc].pid, "id", (json_int_t)c->id, "stream",
                   jstr(c->stream), "mode", jstr(cgl_word(&cg_capture_modes, c->mode)), "status",
                   jstr(cgl_word(&cg_capture_statuses, c->status)), "began",
                   jstr(c->began), "begin_ns", (json_int_t)c->begin_ns, "end_ns",
                   (json_int_t)c->end_ns, "events", (json_int_t)c->events);
  json_object_set_new(o, "end_result",
                      c->has_end_result ? json_integer((json_int_t)c->end_result) : json_null());
  json_object_set_new(o, "repeats", json_integer((json_int_t)c->repeats));
  size_t ci = (size_t)(c - a->log->caps);
  if (cgl_capture_broken(a->log, ci))
    offender_json(a, ci, c->by == CGL_BY_UNWATCHED ? -1 : c->first_break, o);
  return o;
}

/* Each process's broken captures: id, where it began, what broke it. */
static json_t **broken_by_process(const cgr_analysis *a) {
  const cgl_log *log = a->log;
  json_t **per = calloc(log->n_procs + 1, sizeof *per);
  if (!per)
    return NULL;
  for (size_t p = 0; p < log->n_procs; p++)
    per[p] = json_array();
  for (size_t b = 0; b < a->n_broken; b++) {
    const cgl_capture *c = &log->caps[a->broken[b].capture];
    json_t *o = json_pack("{s:I, s:o}", "id", (json_int_t)c->id, "began", jstr(c->began));
    offender_json(a, a->broken[b].capture, a->broken[b].first_event, o);
    json_array_append_new(per[c->proc], o);
  }
  return per;
}

int cgr_print_json(FILE *out, const cgr_analysis *a) {
  const cgl_log *log = a->log;
  json_t *root = json_object();
  json_object_set_new(root, "schema", json_string("capguard-report"));
  json_object_set_new(root, "v", json_integer(1));
  json_t *logs = json_array();
  for (size_t i = 0; i < log->n_files; i++)
    json_array_append_new(logs, jtext(log->files[i]));
  json_object_set_new(root, "logs", logs);
  json_object_set_new(root, "lines",
                      json_pack("{s:I, s:I, s:I, s:I, s:o}", "read", (json_int_t)log->lines,
                                "malformed", (json_int_t)log->malformed, "newer_version",
                                (json_int_t)log->newer, "unknown_type", (json_int_t)log->unknown,
                                "first_malformed",
                                log->malformed ? jtext(log->first_malformed) : json_null()));

  json_t *procs = json_array(), **per = broken_by_process(a);
  for (size_t p = 0; p < log->n_procs; p++) {
    const cgl_process *pr = &log->procs[p];
    json_t *argv = json_array();
    for (size_t i = 0; i < pr->argc; i++)
      json_array_append_new(argv, jtext(pr->argv[i]));
    json_array_append_new(procs, json_pack("{s:I, s:I, s:o, s:o, s:I, s:I, s:b, s:o}", "pid",
                                           (json_int_t)pr->pid, "ppid", (json_int_t)pr->ppid,
                                           "argv", argv, "mode",
                                           jstr(cgl_word(&cg_run_modes, pr->mode)), "driver_version",
                                           (json_int_t)pr->driver_version, "emulate_driver",
                                           (json_int_t)pr->emulate_driver, "exited", pr->has_summary,
                                           "log", jtext(log->files[pr->file])));
    json_object_set_new(json_array_get(procs, json_array_size(procs) - 1), "broken_captures",
                        per ? per[p] : json_array());
  }
  free(per);
  json_object_set_new(root, "processes", procs);

  json_t *caps = json_array();
  for (size_t c = 0; c < log->n_caps; c++)
    json_array_append_new(caps, capture_json(a, &log->caps[c]));
  json_object_set_new(root, "captures", caps);

  json_t *broken = json_array();
  for (size_t b = 0; b < a->n_broken; b++) {
    json_t *o = capture_json(a, &log->caps[a->broken[b].capture]);
    long f = a->broken[b].first_event;
    json_object_set_new(o, "first_call", f < 0 ? json_null() : event_json(a, &log->evs[f]));
    json_array_append_new(broken, o);
  }
  json_object_set_new(root, "broken", broken);

  json_t *kernels = json_array();
  for (size_t k = 0; k < a->n_kernels; k++) {
    char site[512];
    cgl_event_site(&log->evs[a->kernels[k].first_event], site, sizeof site);
    json_array_append_new(kernels, json_pack("{s:o, s:I, s:I, s:o, s:b}", "name",
                                             jtext(a->kernels[k].name), "loads",
                                             (json_int_t)a->kernels[k].loads, "served",
                                             (json_int_t)a->kernels[k].served, "site", jtext(site),
                                             "broke_capture", a->kernels[k].broke));
  }
  json_object_set_new(root, "kernels", kernels);

  json_t *sites = json_array();
  for (size_t s = 0; s < a->n_sites; s++) {
    const cgr_site *st = &a->sites[s];
    json_t *calls = json_array(), *names = json_array();
    for (size_t i = 0; i < st->n_calls; i++)
      json_array_append_new(calls, jtext(st->calls[i]));
    for (size_t i = 0; i < st->n_kernels; i++)
      json_array_append_new(names, jtext(st->kernels[i]));
    json_array_append_new(sites, json_pack("{s:o, s:I, s:o, s:o}", "site", jtext(st->site), "count",
                                           (json_int_t)st->count, "calls", calls, "kernels",
                                           names));
  }
  json_object_set_new(root, "sites", sites);

  /* Counts by event kind ("module_load": the word with '_') and by verdict,
   * each in the schema's row order; "other": words this reader does not know. */
  json_t *totals = json_pack("{s:I, s:I, s:I, s:I}", "captures", (json_int_t)a->captures,
                             "captures_broken", (json_int_t)a->n_broken, "captures_open_at_exit",
                             (json_int_t)a->open_at_exit, "calls_during_capture", (json_int_t)a->calls);
  for (unsigned k = 0; k < CG_EV_KIND_COUNT; k++) {
    char key[64];
    snprintf(key, sizeof key, "%s", cg_event_kind_name(k));
    for (char *c = key; *c; c++)
      *c = *c == '-' ? '_' : *c;
    json_object_set_new(totals, key, json_integer((json_int_t)a->events[k]));
  }
  json_object_set_new(totals, "other_calls", json_integer((json_int_t)a->events[CG_EV_KIND_COUNT]));
  json_t *verdicts = json_object();
  for (unsigned v = 0; v <= CG_VERDICT_COUNT; v++)
    json_object_set_new(verdicts, v < CG_VERDICT_COUNT ? cg_verdict_name(v) : "other",
                        json_integer((json_int_t)a->verdicts[v]));
  json_object_set_new(totals, "verdicts", verdicts);
  json_object_set_new(totals, "repeats", json_integer((json_int_t)a->repeats));
  json_object_set_new(totals, "recorded", json_integer((json_int_t)a->recorded));
  json_object_set_new(totals, "primed_loaded", json_integer((json_int_t)a->primed_loaded));
  json_object_set_new(totals, "log_incomplete", json_boolean(a->log_incomplete));
  json_object_set_new(root, "totals", totals);

  /* Every run in the logs, and which one the rest of this document is about. */
  json_t *runs = json_array();
  for (size_t r = 0; r < a->n_runs; r++) {
    const cgl_process *top = &a->all->procs[a->all->runs[r].first_proc];
    json_array_append_new(runs, json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:b}", "run",
                                          (json_int_t)(r + 1), "pid", (json_int_t)top->pid,
                                          "processes", (json_int_t)a->runs[r].procs, "captures",
                                          (json_int_t)a->runs[r].captures, "captures_broken",
                                          (json_int_t)a->runs[r].broken, "calls_during_capture",
                                          (json_int_t)a->runs[r].calls, "served",
                                          (json_int_t)a->runs[r].served, "reported",
                                          a->shown_run == SIZE_MAX || a->shown_run == r));
  }
  json_object_set_new(root, "runs", runs);

  json_t *advice = json_array();
  for (size_t i = 0; i < a->n_advice; i++)
    json_array_append_new(advice, jtext(a->advice[i]));
  json_object_set_new(root, "advice", advice);

  int rc = json_dumpf(root, out, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
  fputc('\n', out);
  json_decref(root);
  return rc;
}
