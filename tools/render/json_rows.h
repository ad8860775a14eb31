/* The JSON pieces several sections of --json share: a call during capture,
 * a capture and what broke it, the advice and the findings. */
#ifndef CAPGUARD_JSON_ROWS_H
#define CAPGUARD_JSON_ROWS_H

#include <jansson.h>

#include "finding_types.h"
#include "log_pool.h" /* cgl_json_text */
#include "report.h"

static inline json_t *jtext(const char *s) { return cgl_json_text(s); }
static inline json_t *jstr(const char *s) { return s ? jtext(s) : json_null(); }

json_t *cgr_json_event(const cgr_report *rep, const cgl_event *e);
/* What broke a broken capture, set into o: "broken_by", "offender", "offender_text". */
void cgr_json_offender(const cgr_report *rep, size_t capture, long first_event, json_t *o);
json_t *cgr_json_capture(const cgr_report *rep, const cgl_capture *c);
/* The findings taken apart: which row, its sentence, each command alone. */
json_t *cgr_json_findings(const cgf_list *advice);
/* What to do, one line a finding (the text report's words). */
json_t *cgr_json_advice(const cgf_list *advice);

#endif
