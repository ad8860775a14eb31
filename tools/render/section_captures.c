/* Every capture: a record each in --json ("captures"), a span each in the trace. */
#include <stdlib.h>
#include <string.h>

#include "sections.h"
#include "json_rows.h"
#include "capguard/log_keys.h"

static json_t *jtrace(const char *s) { return cgl_json_text(s); }

void cgr_captures_json(json_t *root, const cgr_report *rep) {
  const cgr_rows *rows = &rep->rows;
  json_t *caps = json_array();
  for (size_t c = 0; c < rows->n_caps; c++)
    json_array_append_new(caps, cgr_json_capture(rep, &rows->caps[c]));
  json_object_set_new(root, CG_KEY_CAPTURES, caps);
}

/* Each capture a span ("X") on the thread that began it; still open at
 * exit: drawn up to the last thing its process logged. */
void cgr_captures_trace(json_t *evs, const cgr_report *rep, long long t0) {
  const cgr_rows *rows = &rep->rows;
  for (size_t c = 0; c < rows->n_caps; c++) {
    const cgl_capture *cp = &rows->caps[c];
    const cgl_process *pr = &rows->procs[cp->proc];
    long long b = cp->begin_ns > 0 ? cp->begin_ns : pr->first_ns;
    /* still open at exit: drawn up to the last thing its process logged */
    long long e = cp->end_ns > 0 ? cp->end_ns : pr->last_ns;
    double dur = e > b ? cgr_us_since(e, b) : 0;
    char name[64];
    bool broken = cgr_report_capture_broken(rep, c);
    snprintf(name, sizeof name, "capture %lld%s", cp->id, broken ? " (broken)" : "");
    json_array_append_new(evs,
                          json_pack("{s:s, s:s, s:s, s:f, s:f, s:I, s:I, s:{s:o, s:o, s:o, s:o, s:b, s:I}}",
                                    "ph", "X", "cat", "capture", "name", name, "ts", cgr_us_since(b, t0),
                                    "dur", dur, "pid", (json_int_t)pr->pid, "tid", (json_int_t)cp->tid,
                                    "args", CG_KEY_STATUS, jtrace(cgl_word(&cg_capture_statuses, cp->status)),
                                    CG_KEY_MODE, jtrace(cgl_word(&cg_capture_modes, cp->mode)), CG_KEY_STREAM,
                                    jtrace(cp->stream), CG_KEY_BEGAN, jtrace(cp->began), "broken", broken,
                                    "calls_during", (json_int_t)cp->events));
    /* what broke it, in the words the other reports use */
    json_t *args = json_object_get(json_array_get(evs, json_array_size(evs) - 1), "args");
    if (broken && args) {
      char phrase[1024];
      cgr_report_offender_phrase(rep, c, cp->first_break, phrase, sizeof phrase);
      json_object_set_new(args, "first_offender", jtrace(phrase));
    }
    if (args && cgl_capture_repeats(cp) > 0)
      json_object_set_new(args, CG_KEY_REPEATS, json_integer((json_int_t)cgl_capture_repeats(cp)));
  }
}
