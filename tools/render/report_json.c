/* --json: the analysis for machines, one JSON document (schema "capguard-report", v 1). */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "ended_early.h"
#include "findings.h"
#include "report_hang.h"
#include "report_stale.h"
#include "log_pool.h"
#include "offender.h"

#include "report_ranks.h"
#include "report_capture_time.h"
#include "report_render.h"
#include "report_runs.h"
#include "process_order.h"
#include "request_path.h"
#include "capguard/log_keys.h"

static json_t *jtext(const char *s) { return cgl_json_text(s); }

static json_t *jstr(const char *s) { return s ? jtext(s) : json_null(); }

static json_t *event_json(const cgr_report *rep, const cgl_event *e) {
  char site[512];
  cgl_event_site(e, site, sizeof site);
  json_t *o = json_pack("{s:I, s:o, s:o, s:o, s:I, s:I, s:o, s:o, s:I}", CG_KEY_PID,
                        (json_int_t)rep->rows.procs[e->proc].pid, CG_KEY_EVENT,
                        jstr(cgl_word(&cg_event_kinds, e->kind)), CG_KEY_CALL, jstr(e->call), CG_KEY_VERDICT,
                        jstr(cgl_word(&cg_verdicts, e->verdict)), CG_KEY_RESULT, (json_int_t)e->result,
                        CG_KEY_TIME_NS, (json_int_t)e->time_ns, "site", jtext(site), CG_KEY_LOG,
                        jtext(e->src_file), CG_KEY_LINE, (json_int_t)e->src_line);
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
static void offender_json(const cgr_report *rep, size_t capture, long first_event, json_t *o) {
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
                  "result_words", result, CG_KEY_TID, (json_int_t)f.tid, CG_KEY_TIME_NS, (json_int_t)f.time_ns,
                  CG_KEY_PYTHON, f.python, CG_KEY_WHERE, f.where, "from",
                  rep->rows.caps[capture].by == CGL_BY_CALL ? "capture record" : "logged event"));
  } else if (by == CGL_BY_UNWATCHED) {
    json_object_set_new(o, CG_KEY_BROKEN_BY, json_null());
  }
  json_object_set_new(o, "offender",
                      json_string(by == CGL_BY_CALL ? "named" : by == CGL_BY_UNWATCHED ? "unwatched"
                                                                                    : "not-said"));
  json_object_set_new(o, "offender_text", jtext(phrase));
}

static json_t *capture_json(const cgr_report *rep, const cgl_capture *c) {
  json_t *o = json_pack("{s:I, s:I, s:o, s:o, s:o, s:o, s:I, s:I, s:I}", CG_KEY_PID,
                   (json_int_t)rep->rows.procs[c->proc].pid, CG_KEY_ID, (json_int_t)c->id, CG_KEY_STREAM,
                   jstr(c->stream), CG_KEY_MODE, jstr(cgl_word(&cg_capture_modes, c->mode)), CG_KEY_STATUS,
                   jstr(cgl_word(&cg_capture_statuses, c->status)), CG_KEY_BEGAN,
                   jstr(c->began), CG_KEY_BEGIN_NS, (json_int_t)c->begin_ns, CG_KEY_END_NS,
                   (json_int_t)c->end_ns, CG_KEY_EVENTS, (json_int_t)c->events);
  json_object_set_new(o, CG_KEY_END_RESULT,
                      c->has_end_result ? json_integer((json_int_t)c->end_result) : json_null());
  json_object_set_new(o, CG_KEY_REPEATS, json_integer((json_int_t)c->repeats));
  size_t ci = (size_t)(c - rep->rows.caps);
  if (cgr_report_capture_broken(rep, ci))
    offender_json(rep, ci, c->by == CGL_BY_UNWATCHED ? -1 : c->first_break, o);
  return o;
}

/* Each process's broken captures: id, where it began, what broke it. */
static json_t **broken_by_process(const cgr_report *rep) {
  const cgr_analysis *a = &rep->a;
  const cgr_rows *rows = &rep->rows;
  json_t **per = calloc(rows->n_procs + 1, sizeof *per);
  if (!per)
    return NULL;
  for (size_t p = 0; p < rows->n_procs; p++)
    per[p] = json_array();
  for (size_t b = 0; b < a->n_broken; b++) {
    const cgl_capture *c = &rows->caps[a->broken[b].capture];
    json_t *o = json_pack("{s:I, s:o}", CG_KEY_ID, (json_int_t)c->id, CG_KEY_BEGAN, jstr(c->began));
    offender_json(rep, a->broken[b].capture, a->broken[b].first_event, o);
    json_array_append_new(per[c->proc], o);
  }
  return per;
}

/* The findings taken apart: which row, its sentence, each command alone. */
static json_t *findings_json(const cgf_list *advice) {
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

static json_t *processes_json(const cgr_report *rep) {
  const cgr_analysis *a = &rep->a;
  const cgr_rows *rows = &rep->rows;
  json_t *procs = json_array(), **per = broken_by_process(rep);
  const size_t *requests = rep->requests_by_proc; /* NULL: none counted */
  const size_t *order = rep->order;              /* by run, then pid */
  for (size_t i = 0; i < rows->n_procs; i++) {
    size_t p = order[i];
    const cgl_process *pr = &rows->procs[p];
    json_t *argv = json_array();
    for (size_t i = 0; i < pr->argc; i++)
      json_array_append_new(argv, jtext(pr->argv[i]));
    json_array_append_new(procs, json_pack("{s:I, s:I, s:o, s:o, s:I, s:I, s:b, s:o}", CG_KEY_PID,
                                           (json_int_t)pr->pid, CG_KEY_PPID, (json_int_t)pr->ppid,
                                           CG_KEY_ARGV, argv, CG_KEY_MODE,
                                           jstr(cgl_word(&cg_run_modes, pr->mode)), CG_KEY_DRIVER_VERSION,
                                           (json_int_t)pr->driver_version, CG_KEY_EMULATE_DRIVER,
                                           (json_int_t)pr->emulate_driver, "exited", pr->has_summary,
                                           CG_KEY_LOG, jtext(rows->files[pr->file])));
    json_object_set_new(json_array_get(procs, json_array_size(procs) - 1), "broken_captures",
                        per ? per[p] : json_array());
    if (cgr_ended_early(pr)) { /* no exit record: the last thing it logged, in words */
      char last[1024];
      cgr_report_ended_last(rep, p, last, sizeof last);
      json_object_set_new(json_array_get(procs, json_array_size(procs) - 1), "last_logged", jtext(last));
      if (pr->signal) /* capguard run's "ended" record: the signal that killed it */
        json_object_set_new(json_array_get(procs, json_array_size(procs) - 1), CG_KEY_SIGNAL,
                            json_integer(pr->signal));
    }
    if (a->n_runs > 1) /* which run of runs[] it belongs to */
      json_object_set_new(
          json_array_get(procs, json_array_size(procs) - 1), CG_KEY_RUN,
          json_integer((json_int_t)(a->shown_run == SIZE_MAX ? pr->run_index + 1 : a->shown_run + 1)));
    json_t *ct = cgr_capture_time_process_json(pr);
    if (ct)
      json_object_set_new(json_array_get(procs, json_array_size(procs) - 1), "capture_time", ct);
    if (requests && requests[p]) /* counted per process, and so per rank */
      json_object_set_new(json_array_get(procs, json_array_size(procs) - 1), CG_KEY_REQUEST_LOADS,
                          json_integer((json_int_t)requests[p]));
    if (pr->rank_known) {
      json_object_set_new(json_array_get(procs, json_array_size(procs) - 1), CG_KEY_RANK, json_integer(pr->rank));
      if (pr->world_size > 0)
        json_object_set_new(json_array_get(procs, json_array_size(procs) - 1), CG_KEY_WORLD_SIZE,
                            json_integer(pr->world_size));
    }
  }
  free(per);
  return procs;
}

static json_t *kernels_json(const cgr_report *rep) {
  const cgr_analysis *a = &rep->a;
  const cgr_rows *rows = &rep->rows;
  json_t *kernels = json_array();
  for (size_t k = 0; k < a->n_kernels; k++) {
    char site[512];
    cgl_event_site(&rows->evs[a->kernels[k].first_event], site, sizeof site);
    json_array_append_new(kernels, json_pack("{s:o, s:I, s:I, s:o, s:b}", "name",
                                             jtext(a->kernels[k].name), "loads",
                                             (json_int_t)a->kernels[k].loads, "served",
                                             (json_int_t)a->kernels[k].served, "site", jtext(site),
                                             "broke_capture", a->kernels[k].broke));
  }
  return kernels;
}

static json_t *sites_json(const cgr_report *rep) {
  const cgr_analysis *a = &rep->a;
  json_t *sites = json_array();
  for (size_t s = 0; s < a->n_sites; s++) {
    const cgr_site *st = &a->sites[s];
    json_t *calls = json_array(), *names = json_array();
    for (size_t i = 0; i < st->n_calls; i++)
      json_array_append_new(calls, jtext(st->calls[i]));
    for (size_t i = 0; i < st->n_kernels; i++)
      json_array_append_new(names, jtext(st->kernels[i]));
    json_array_append_new(sites, json_pack("{s:o, s:I, s:o, s:o}", "site", jtext(st->site), "count",
                                           (json_int_t)st->count, "calls", calls, CG_KEY_KERNELS,
                                           names));
  }
  return sites;
}

static json_t *totals_json(const cgr_report *rep) {
  const cgr_analysis *a = &rep->a;
  /* Counts by event kind ("module_load": the word with '_') and by verdict,
   * each in the schema's row order; "other": words this reader does not know. */
  json_t *totals = json_pack("{s:I, s:I, s:I, s:I, s:I}", CG_KEY_CAPTURES, (json_int_t)a->captures,
                             CG_KEY_CAPTURES_BROKEN, (json_int_t)a->n_broken, "captures_open_at_exit",
                             (json_int_t)a->open_at_exit, "calls_during_capture", (json_int_t)a->calls,
                             "stale_reads", (json_int_t)a->n_stale_reads);
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
  json_object_set_new(totals, CG_KEY_VERDICTS, verdicts);
  json_object_set_new(totals, CG_KEY_REPEATS, json_integer((json_int_t)a->repeats));
  json_object_set_new(totals, CG_KEY_RECORDED, json_integer((json_int_t)a->recorded));
  /* offending loads made with options: never recorded (the advice says why) */
  json_object_set_new(totals, "loads_with_options", json_integer((json_int_t)a->loads_with_options));
  json_object_set_new(totals, CG_KEY_PRIMED_LOADED, json_integer((json_int_t)a->primed_loaded));
  json_object_set_new(totals, CG_KEY_LOG_INCOMPLETE, json_boolean(a->log_incomplete));
  /* processes that used CUDA and wrote no summary (each has "exited": false) */
  json_object_set_new(totals, "ended_without_exit_record", json_integer((json_int_t)a->ended_early));
  /* loads after serving began (docs/request-path.md), as the report counts them */
  const cgr_request_totals rq = rep->requests;
  json_object_set_new(totals, CG_KEY_REQUEST_LOADS, json_integer((json_int_t)rq.loads));
  json_object_set_new(totals, CG_KEY_REQUEST_LOAD_NS, json_integer((json_int_t)rq.load_ns));
  json_object_set_new(totals, "request_path_loads_served", json_integer((json_int_t)rq.served));
  return totals;
}

/* What to do, one line a finding (the text report's words). */
static json_t *advice_json(const cgf_list *advice) {
  json_t *lines = json_array();
  for (size_t i = 0; i < advice->n; i++) {
    char *line = cgf_line(&advice->v[i]);
    json_array_append_new(lines, jtext(line));
    free(line);
  }
  return lines;
}

/* Every run in the logs, and which one the rest of this document is about;
 * with --all over several runs, each run's own headline, processes and
 * advice (one run's advice is never said of another). */
static json_t *runs_json(const cgr_report *rep) {
  const cgr_analysis *a = &rep->a;
  const cgr_rows *whole = &rep->whole;
  json_t *runs = json_array();
  size_t *order = cgr_report_all_order(rep), at = 0; /* by run: run r's processes follow run r - 1's */
  for (size_t r = 0; r < a->n_runs; r++) {
    const cgl_process *top = &whole->procs[whole->runs[r].first_proc];
    const struct cgr_run_stats *st = &a->runs[r];
    json_t *o = json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:b}", CG_KEY_RUN, (json_int_t)(r + 1),
                          CG_KEY_PID, (json_int_t)top->pid, "processes", (json_int_t)st->procs,
                          CG_KEY_CAPTURES, (json_int_t)st->captures, CG_KEY_CAPTURES_BROKEN,
                          (json_int_t)st->broken, "calls_during_capture", (json_int_t)st->calls, "served",
                          (json_int_t)st->served, "reported", a->shown_run == SIZE_MAX || a->shown_run == r);
    json_object_set_new(o, "processes_with_cuda", json_integer((json_int_t)st->cuda));
    json_object_set_new(o, "ended_without_exit_record", json_integer((json_int_t)st->ended_early));
    char line[1024];
    cgr_run_headline(rep, r, (cg_palette){"", "", "", "", "", ""}, line, sizeof line);
    json_object_set_new(o, "headline", jtext(line));
    json_t *pids = json_array(); /* sorted: order is by run, then pid */
    for (; at < whole->n_procs && whole->procs[order[at]].run_index == r; at++)
      json_array_append_new(pids, json_integer((json_int_t)whole->procs[order[at]].pid));
    json_object_set_new(o, "pids", pids);
    if (a->run_advice) {
      json_object_set_new(o, "advice", advice_json(&a->run_advice[r]));
      json_object_set_new(o, "findings", findings_json(&a->run_advice[r]));
    }
    json_array_append_new(runs, o);
  }
  free(order);
  return runs;
}

int cgr_print_json(FILE *out, const cgr_report *rep) {
  const cgr_analysis *a = &rep->a;
  const cgr_rows *rows = &rep->rows;
  json_t *root = json_object();
  json_object_set_new(root, "schema", json_string("capguard-report"));
  json_object_set_new(root, CG_KEY_V, json_integer(1));
  json_t *logs = json_array();
  for (size_t i = 0; i < rows->n_files; i++)
    json_array_append_new(logs, jtext(rows->files[i]));
  json_object_set_new(root, "logs", logs);
  json_object_set_new(root, "lines",
                      json_pack("{s:I, s:I, s:I, s:I, s:I, s:o}", "read", (json_int_t)rows->lines,
                                "malformed", (json_int_t)rows->malformed, "newer_version",
                                (json_int_t)rows->newer, "unknown_type", (json_int_t)rows->unknown,
                                "files_cut_short", (json_int_t)rows->cut_files,
                                "first_malformed",
                                rows->malformed ? jtext(rows->first_malformed) : json_null()));

  json_object_set_new(root, "processes", processes_json(rep));
  json_t *ranks = cgr_ranks_json(rep); /* a job of several ranks side by side; absent otherwise */
  if (ranks)
    json_object_set_new(root, "ranks", ranks);
  json_t *ct = cgr_capture_time_json(rep);
  if (ct)
    json_object_set_new(root, "capture_time", ct);

  json_t *caps = json_array();
  for (size_t c = 0; c < rows->n_caps; c++)
    json_array_append_new(caps, capture_json(rep, &rows->caps[c]));
  json_object_set_new(root, CG_KEY_CAPTURES, caps);

  json_t *broken = json_array();
  for (size_t b = 0; b < a->n_broken; b++) {
    json_t *o = capture_json(rep, &rows->caps[a->broken[b].capture]);
    long f = a->broken[b].first_event;
    json_object_set_new(o, "first_call", f < 0 ? json_null() : event_json(rep, &rows->evs[f]));
    json_array_append_new(broken, o);
  }
  json_object_set_new(root, "broken", broken);

  json_object_set_new(root, CG_KEY_KERNELS, kernels_json(rep));
  json_object_set_new(root, "sites", sites_json(rep));
  json_object_set_new(root, "totals", totals_json(rep));
  json_object_set_new(root, "runs", runs_json(rep));

  /* Several runs reported: the advice is each run's, in runs[] (the text
   * report gives it under each run); one list for all would mix them. */
  if (!a->run_advice) {
    json_object_set_new(root, "advice", advice_json(&a->advice));
    json_object_set_new(root, "findings", findings_json(&a->advice));
  }
  json_object_set_new(root, CG_KEY_STALE, cgr_stale_json(rep));
  json_t *hangs = cgr_hang_json(rep);
  if (hangs)
    json_object_set_new(root, CG_KEY_HANG, hangs);

  int rc = json_dumpf(root, out, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
  fputc('\n', out);
  json_decref(root);
  return rc;
}
