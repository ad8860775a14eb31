/* The report's sections, one row each in the section table (sections.c):
 * its printers for the text, JSON, HTML and trace renderings, and where in
 * each format's page it stands. The four format files (report_text.c,
 * report_json.c, report_html.c, report_trace.c) print only their page's
 * frame and walk the table; a section prints from the report value
 * (meaning/report.h) and nothing else. A new section is one builder in
 * meaning/report.c and one row here (HACKING.md, "Adding a report section"). */
#ifndef CAPGUARD_SECTIONS_H
#define CAPGUARD_SECTIONS_H

#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>

#include "cli.h"
#include "report.h"

/* A trace event's time: microseconds since t0 (nanoseconds), 0 before it. */
static inline double cgr_trace_us(long long t_ns, long long t0) {
  return t_ns > t0 ? (double)(t_ns - t0) / 1000.0 : 0;
}

typedef enum { CGR_TEXT, CGR_JSON, CGR_HTML, CGR_TRACE, CGR_FORMATS } cgr_format;

typedef struct {
  const char *name;
  /* Where it stands in each format's page, counted from 1 (0: that format
   * does not show it): the formats order their sections differently (the
   * page puts what to do first, the text last). */
  unsigned char at[CGR_FORMATS];
  void (*text)(FILE *out, const cgr_report *r, cg_palette pal);
  void (*json)(json_t *root, const cgr_report *r); /* sets its keys in the document */
  void (*html)(FILE *o, const cgr_report *r);
  void (*trace)(json_t *evs, const cgr_report *r, long long t0); /* appends its trace events */
} cgr_section;

extern const cgr_section cgr_sections[];
extern const size_t cgr_n_sections;

/* Each format's sections, in its order. */
void cgr_sections_text(FILE *out, const cgr_report *r, cg_palette pal);
void cgr_sections_json(json_t *root, const cgr_report *r);
void cgr_sections_html(FILE *o, const cgr_report *r);
void cgr_sections_trace(json_t *evs, const cgr_report *r, long long t0);

/* Microseconds from t0, the trace's times: exact to the nanosecond. */
double cgr_us_since(long long t, long long t0);

/* The printers, by section (section_NAME.c). */
void cgr_runs_text(FILE *out, const cgr_report *r, cg_palette pal);
void cgr_runs_json(json_t *root, const cgr_report *r);
void cgr_runs_html(FILE *o, const cgr_report *r);
void cgr_processes_text(FILE *out, const cgr_report *r, cg_palette pal);
void cgr_processes_json(json_t *root, const cgr_report *r);
void cgr_processes_html(FILE *o, const cgr_report *r);
void cgr_ended_text(FILE *out, const cgr_report *r, cg_palette pal);
void cgr_ended_html(FILE *o, const cgr_report *r);
/* "Ranks (2 of a world of 2)" (after a blank line when indent is "") and its
 * table, then "Differences between ranks" and one line each; every line
 * begins with indent (run's summary gives "capguard: "). Returns whether it
 * printed anything: nothing when the log holds fewer than two ranks. */
bool cgr_print_ranks_text(FILE *out, const cgr_report *r, cg_palette pal, const char *indent);
void cgr_ranks_text(FILE *out, const cgr_report *r, cg_palette pal);
void cgr_ranks_json(json_t *root, const cgr_report *r);
void cgr_ranks_html(FILE *o, const cgr_report *r);
/* The process's capture time as an object, NULL when it did not say. */
json_t *cgr_capture_time_process_json(const cgl_process *pr);
void cgr_capture_time_text(FILE *out, const cgr_report *r, cg_palette pal);
void cgr_capture_time_json(json_t *root, const cgr_report *r);
void cgr_capture_time_html(FILE *o, const cgr_report *r);
void cgr_capture_time_trace(json_t *evs, const cgr_report *r, long long t0);
void cgr_captures_json(json_t *root, const cgr_report *r);
void cgr_captures_trace(json_t *evs, const cgr_report *r, long long t0);
void cgr_timeline_html(FILE *o, const cgr_report *r);
void cgr_broken_text(FILE *out, const cgr_report *r, cg_palette pal);
void cgr_broken_json(json_t *root, const cgr_report *r);
void cgr_broken_html(FILE *o, const cgr_report *r);
void cgr_escapes_text(FILE *out, const cgr_report *r, cg_palette pal);
void cgr_open_text(FILE *out, const cgr_report *r, cg_palette pal);
void cgr_kernels_text(FILE *out, const cgr_report *r, cg_palette pal);
void cgr_kernels_json(json_t *root, const cgr_report *r);
void cgr_kernels_html(FILE *o, const cgr_report *r);
void cgr_sites_text(FILE *out, const cgr_report *r, cg_palette pal);
void cgr_sites_json(json_t *root, const cgr_report *r);
void cgr_sites_html(FILE *o, const cgr_report *r);
void cgr_totals_json(json_t *root, const cgr_report *r);
void cgr_stale_text(FILE *out, const cgr_report *r, cg_palette pal);
void cgr_stale_json(json_t *root, const cgr_report *r);
void cgr_stale_html(FILE *o, const cgr_report *r);
void cgr_stale_trace(json_t *evs, const cgr_report *r, long long t0);
void cgr_hangs_text(FILE *out, const cgr_report *r, cg_palette pal);
void cgr_hangs_json(json_t *root, const cgr_report *r);
void cgr_hangs_html(FILE *o, const cgr_report *r);
void cgr_hangs_trace(json_t *evs, const cgr_report *r, long long t0);
void cgr_requests_html(FILE *o, const cgr_report *r);
void cgr_requests_trace(json_t *evs, const cgr_report *r, long long t0);
void cgr_calls_html(FILE *o, const cgr_report *r);
void cgr_calls_trace(json_t *evs, const cgr_report *r, long long t0);
void cgr_advice_text(FILE *out, const cgr_report *r, cg_palette pal);
void cgr_advice_json(json_t *root, const cgr_report *r);
void cgr_advice_html(FILE *o, const cgr_report *r);

#endif
