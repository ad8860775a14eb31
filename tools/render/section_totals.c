/* The report's counts for machines (--json "totals"). */
#include <stdlib.h>
#include <string.h>

#include "sections.h"
#include "json_rows.h"
#include "capguard/log_keys.h"

static json_t *totals_json(const cgr_report *rep) {
  const cgr_analysis *a = &rep->a;
  /* Counts by event kind ("module_load": the word with '_') and by verdict,
   * each in the schema's row order; "other": words this reader does not know. */
  json_t *totals =
      json_pack("{s:I, s:I, s:I, s:I, s:I}", CG_KEY_CAPTURES, (json_int_t)a->captures, CG_KEY_CAPTURES_BROKEN,
                (json_int_t)a->n_broken, "captures_open_at_exit", (json_int_t)a->open_at_exit,
                "calls_during_capture", (json_int_t)a->calls, "stale_reads", (json_int_t)a->n_stale_reads);
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

void cgr_totals_json(json_t *root, const cgr_report *rep) {
  json_object_set_new(root, "totals", totals_json(rep));
}
