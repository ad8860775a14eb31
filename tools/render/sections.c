/* The section table (sections.h): every section of the report, one row
 * each, with its place in each format's page (text, JSON, HTML, trace; 0:
 * not shown there) and its printers. */
#include "sections.h"

/* clang-format off */
const cgr_section cgr_sections[] = {
  /* name            text json html trace */
  {"runs",           {1,   9,   3,   0}, cgr_runs_text,         cgr_runs_json,         cgr_runs_html,         NULL},
  {"timeline",       {0,   0,   4,   0}, NULL,                  NULL,                  cgr_timeline_html,     NULL},
  {"processes",      {2,   1,   5,   0}, cgr_processes_text,    cgr_processes_json,    cgr_processes_html,    NULL},
  {"ended",          {3,   0,   6,   0}, cgr_ended_text,        NULL,                  cgr_ended_html,        NULL},
  {"ranks",          {4,   2,   7,   0}, cgr_ranks_text,        cgr_ranks_json,        cgr_ranks_html,        NULL},
  {"capture-time",   {5,   3,   8,   3}, cgr_capture_time_text, cgr_capture_time_json, cgr_capture_time_html, cgr_capture_time_trace},
  {"captures",       {0,   4,   0,   1}, NULL,                  cgr_captures_json,     NULL,                  cgr_captures_trace},
  {"broken",         {6,   5,   9,   0}, cgr_broken_text,       cgr_broken_json,       cgr_broken_html,       NULL},
  {"escapes",        {7,   0,   0,   0}, cgr_escapes_text,      NULL,                  NULL,                  NULL},
  {"open-at-exit",   {8,   0,   0,   0}, cgr_open_text,         NULL,                  NULL,                  NULL},
  {"kernels",        {9,   6,  10,   0}, cgr_kernels_text,      cgr_kernels_json,      cgr_kernels_html,      NULL},
  {"sites",          {10,  7,  11,   0}, cgr_sites_text,        cgr_sites_json,        cgr_sites_html,        NULL},
  {"totals",         {0,   8,   0,   0}, NULL,                  cgr_totals_json,       NULL,                  NULL},
  {"stale",          {11, 11,   2,   4}, cgr_stale_text,        cgr_stale_json,        cgr_stale_html,        cgr_stale_trace},
  {"hangs",          {12, 12,  12,   5}, cgr_hangs_text,        cgr_hangs_json,        cgr_hangs_html,        cgr_hangs_trace},
  {"request-path",   {0,   0,  13,   6}, NULL,                  NULL,                  cgr_requests_html,     cgr_requests_trace},
  {"calls",          {0,   0,  14,   2}, NULL,                  NULL,                  cgr_calls_html,        cgr_calls_trace},
  {"what-to-do",     {13, 10,   1,   0}, cgr_advice_text,       cgr_advice_json,       cgr_advice_html,       NULL},
};
/* clang-format on */
const size_t cgr_n_sections = sizeof cgr_sections / sizeof cgr_sections[0];

/* The rows of format f in its order: place k is the row whose at[f] is k. */
static const cgr_section *at(cgr_format f, unsigned k) {
  for (size_t i = 0; i < cgr_n_sections; i++)
    if (cgr_sections[i].at[f] == k)
      return &cgr_sections[i];
  return NULL;
}

void cgr_sections_text(FILE *out, const cgr_report *r, cg_palette pal) {
  for (unsigned k = 1; k <= cgr_n_sections; k++)
    if (at(CGR_TEXT, k))
      at(CGR_TEXT, k)->text(out, r, pal);
}

void cgr_sections_json(json_t *root, const cgr_report *r) {
  for (unsigned k = 1; k <= cgr_n_sections; k++)
    if (at(CGR_JSON, k))
      at(CGR_JSON, k)->json(root, r);
}

void cgr_sections_html(FILE *o, const cgr_report *r) {
  for (unsigned k = 1; k <= cgr_n_sections; k++)
    if (at(CGR_HTML, k))
      at(CGR_HTML, k)->html(o, r);
}

void cgr_sections_trace(json_t *evs, const cgr_report *r, long long t0) {
  for (unsigned k = 1; k <= cgr_n_sections; k++)
    if (at(CGR_TRACE, k))
      at(CGR_TRACE, k)->trace(evs, r, t0);
}

/* The difference taken in integers, exact to the nanosecond (converting each
 * time to a double first rounded them to 256 ns); in floating point only
 * when it would overflow (a hostile log's times). */
double cgr_us_since(long long t, long long t0) {
  long long d;
  if (__builtin_sub_overflow(t, t0, &d))
    return ((double)t - (double)t0) / 1e3;
  /* whole microseconds and the nanoseconds apart: each exact in a double */
  return (double)(d / 1000) + (double)(d % 1000) / 1e3;
}
