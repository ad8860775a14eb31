/* The words every rendering (run's summary, the text, JSON, HTML and trace
 * reports) uses for what broke a capture, so that all of them, and the
 * shim's own stderr line (cg_capture_format_broken_text), say it the same
 * way: "first offender cuMemAlloc_v2 at model.py:77 in forward (refused: 900
 * operation not permitted when stream is capturing, thread 12)", or "broken
 * by a call capguard does not watch (began at model.py:50 in capture)". A
 * log that does not say (an older capguard's) gets no offender: never a
 * guess. */
#ifndef CAPGUARD_REPORT_OFFENDER_H
#define CAPGUARD_REPORT_OFFENDER_H

#include <stddef.h>

#include "log_reader.h"

/* An event that counts against the workload: everything but loads served from the priming pool. */
bool cgr_offending(const cgl_event *e);

/* The plain phrase for a capture whose offender is not known. */
#define CGR_UNWATCHED "broken by a call capguard does not watch"
#define CGR_NOT_SAID "the log does not say which call broke it (an older capguard wrote it)"
#define CGR_NO_RECORD                                                                             \
  "the log holds no record of its end (its process did not exit through capguard), so it does " \
  "not say which call broke it"

/* "900 operation not permitted when stream is capturing": the code, then its
 * words (meaning, as the log gave them, else capguard's table), or the code
 * alone when there are none. */
void cgr_result_words(long long code, const char *meaning, char *buf, size_t cap);
/* An event's result with its words: the log's "meaning" when it is about that
 * result (it describes the driver's answer, which may differ), else the table's. */
void cgr_event_result(const cgl_event *e, char *buf, size_t cap);
/* Where the offender was called: its Python line when there is one (what a
 * person edits), else where the log says ("" when neither). */
const char *cgr_offender_at(const cgl_offender *f);
/* What the log says broke capture c (first_event: the first call logged in
 * it with a breaking verdict, -1 if none): the record's "broken_by" object;
 * "broken_by": null (CGL_BY_UNWATCHED: the shim saw nothing break it while
 * it was valid, so a call logged after the break is not named); for a log
 * too old to have the key, that logged call (the event itself says it broke
 * the capture: a record, not a guess); else CGL_BY_UNKNOWN. *out is set for
 * CGL_BY_CALL. */
cgl_broken_by cgr_first_offender(const cgl_log *log, size_t capture, long first_event,
                                 cgl_offender *out);
/* The phrase for a capture: its first offender (cgr_first_offender), or that
 * none was seen with where it began, or why the log does not say. */
void cgr_offender_phrase(const cgl_log *log, size_t capture, long first_event, char *buf,
                         size_t cap);

#endif
