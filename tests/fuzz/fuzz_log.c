/* libFuzzer target for the capguard command's log reader and report
 * (tools/log/, tools/meaning/ and the reports of tools/render/:
 * tool_report_sources in tools/meson.build): any bytes are a log's text, read as
 * `capguard report` reads a file (cgl_read_stream on an fmemopen'ed buffer;
 * a form feed byte starts another file, up to 4, as when several logs are
 * given), then, when it holds a capguard record, grouped into runs and
 * analysed both as --all and as the latest run alone, and rendered every way
 * (text with and without colour, --json, --html, --trace) into memory, then
 * everything freed (LeakSanitizer checks it).
 *
 * Every line the reader's own JSON parser (log_json.h) takes as sure must
 * be one jansson accepts, with the same values: the parser only spares
 * jansson's work, it never reads a line otherwise.
 *
 * What the renderings must hold whatever the log says:
 * - --json and --trace print one JSON document that jansson parses, and return 0;
 * - --html returns 0 and writes a page that ends its document;
 * - the text without colour holds no control character but newlines: nothing
 *   read from a log drives a terminal.
 * Built as a libFuzzer binary with -Dfuzz=true and clang, and always linked
 * into the replay runner. */
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log_json.h"
#include "report_render.h"
#include "sections.h"

#define REQUIRE(cond)                                                      \
  do {                                                                     \
    if (!(cond)) {                                                         \
      fprintf(stderr, "fuzz_log: %s:%d: %s\n", __FILE__, __LINE__, #cond); \
      abort();                                                             \
    }                                                                      \
  } while (0)

#define MAX_FILES 4

#ifdef CG_FUZZ_LOG_RESET_EVERY
/* The libFuzzer binary is linked with --wrap=cgl_frame_source_reset: opening
 * an object a native frame names (libc.so.6 and its detached debug info,
 * say) takes tens of milliseconds, once a report, which would be once an
 * input. cgl_free's reset of frame_source's caches is done every
 * CG_FUZZ_LOG_RESET_EVERY inputs instead: the reset is still exercised, the
 * caches stay bounded, and an input alone replays as it ran. */
void __real_cgl_frame_source_reset(void);
void __wrap_cgl_frame_source_reset(void);
void __wrap_cgl_frame_source_reset(void) {
  static unsigned calls;
  if (++calls % CG_FUZZ_LOG_RESET_EVERY == 0)
    __real_cgl_frame_source_reset();
}
#endif

static const char *const names[MAX_FILES] = {"run.jsonl", "/tmp/logs/worker.jsonl", "-",
                                             "(stdin)"};

/* One rendering into memory: its text (malloc'd, NUL-terminated) and length. */
typedef struct {
  char *text;
  size_t len;
} page;

static FILE *page_open(page *p) {
  p->text = NULL;
  p->len = 0;
  FILE *f = open_memstream(&p->text, &p->len);
  REQUIRE(f);
  return f;
}

static void page_close(FILE *f, page *p) {
  REQUIRE(fclose(f) == 0);
  REQUIRE(p->text && strlen(p->text) == p->len); /* no NUL written */
}

static json_t *require_json(const page *p, const char *what) {
  json_error_t err;
  json_t *doc = json_loadb(p->text, p->len, 0, &err);
  if (!doc) {
    fprintf(stderr, "fuzz_log: %s is not JSON: %s (line %d, column %d)\n%.*s\n", what, err.text,
            err.line, err.column, (int)(p->len < 4000 ? p->len : 4000), p->text);
    abort();
  }
  return doc;
}

/* --json holds one entry per thing analysed, each whole: none dropped (jansson
 * refuses a string that is not UTF-8, and a dropped entry would be silent). */
static void require_array(json_t *doc, const char *key, size_t n, const char *member) {
  json_t *v = json_object_get(doc, key);
  if (!json_is_array(v) || json_array_size(v) != n) {
    fprintf(stderr, "fuzz_log: --json \"%s\" has %zu entries, the analysis %zu\n", key,
            json_is_array(v) ? json_array_size(v) : (size_t)0, n);
    abort();
  }
  size_t i;
  json_t *e;
  json_array_foreach(v, i, e) {
    if (member && !json_object_get(e, member)) {
      fprintf(stderr, "fuzz_log: --json \"%s\"[%zu] lacks \"%s\"\n", key, i, member);
      abort();
    }
  }
}

static void require_report_json(json_t *doc, const cgr_analysis *a) {
  const cgl_log *log = a->log;
  require_array(doc, "logs", log->n_files, NULL);
  require_array(doc, "processes", log->n_procs, "broken_captures");
  require_array(doc, "captures", log->n_caps, "repeats");
  require_array(doc, "broken", a->n_broken, "first_call");
  require_array(doc, "kernels", a->n_kernels, "site");
  require_array(doc, "sites", a->n_sites, "kernels");
  require_array(doc, "runs", a->n_runs, "reported");
  if (!a->run_advice) {
    require_array(doc, "advice", a->advice.n, NULL);
    require_array(doc, "findings", a->advice.n, "finding");
  } else { /* several runs reported: each run's own advice, none merged at the top */
    REQUIRE(!json_object_get(doc, "advice") && !json_object_get(doc, "findings"));
    size_t r;
    json_t *run;
    json_array_foreach(json_object_get(doc, "runs"), r, run) {
      require_array(run, "advice", a->run_advice[r].n, NULL);
      require_array(run, "findings", a->run_advice[r].n, "finding");
      REQUIRE(json_is_string(json_object_get(run, "headline")));
    }
  }
  size_t per_proc = 0, i;
  json_t *pr;
  json_array_foreach(json_object_get(doc, "processes"), i, pr)
    per_proc += json_array_size(json_object_get(pr, "broken_captures"));
  REQUIRE(per_proc == a->n_broken);
  json_t *b;
  json_array_foreach(json_object_get(doc, "broken"), i, b) {
    REQUIRE(json_object_get(b, "offender_text"));
    json_t *f = json_object_get(b, "first_call");
    REQUIRE(json_is_null(f) || json_object_get(f, "handle"));
  }
  REQUIRE(json_object_get(json_object_get(doc, "lines"), "first_malformed"));
  REQUIRE(json_object_get(json_object_get(doc, "totals"), "log_incomplete"));
}

static void render(const cgr_report *r) {
  const cgr_analysis *a = &r->a;
  page p;
  FILE *f;

  f = page_open(&p);
  cgr_print_text(f, r, (cg_palette){"", "", "", "", "", ""});
  page_close(f, &p);
  for (size_t i = 0; i < p.len; i++) {
    unsigned char c = (unsigned char)p.text[i];
    if ((c < 0x20 && c != '\n') || c == 0x7f) {
      fprintf(stderr, "fuzz_log: control character 0x%02x at %zu of the text report:\n%s\n", c, i,
              p.text);
      abort();
    }
  }
  free(p.text);

  f = page_open(&p);
  cgr_print_text(f, r,
                 (cg_palette){"\033[1m", "\033[31m", "\033[33m", "\033[32m", "\033[2m", "\033[0m"});
  page_close(f, &p);
  free(p.text);

  f = page_open(&p);
  REQUIRE(cgr_print_json(f, r) == 0);
  page_close(f, &p);
  json_t *doc = require_json(&p, "--json");
  require_report_json(doc, a);
  json_decref(doc);
  free(p.text);

  f = page_open(&p);
  REQUIRE(cgr_print_html(f, r) == 0);
  page_close(f, &p);
  REQUIRE(strstr(p.text, "</html>"));
  free(p.text);

  f = page_open(&p);
  REQUIRE(cgr_print_trace(f, r) == 0);
  page_close(f, &p);
  doc = require_json(&p, "--trace");
  /* one event a process (its name), a capture and a call, none dropped; a
   * thread's name at most once for each capture or call on it */
  json_t *evs = json_object_get(doc, "traceEvents");
  size_t i, threads = 0;
  json_t *ev;
  json_array_foreach(evs, i, ev) {
    REQUIRE(json_object_get(ev, "args") && json_object_get(ev, "name"));
    threads += !strcmp(json_string_value(json_object_get(ev, "name")), "thread_name");
  }
  REQUIRE(threads <= a->log->n_caps + a->log->n_evs);
  REQUIRE(json_array_size(evs) - threads == a->log->n_procs + a->log->n_caps + a->log->n_evs);
  json_decref(doc);
  free(p.text);
}

/* Read data as files split at form feeds (JSON escapes one inside a string,
 * so none of a real log's). */
static void read_files(cgl_log *log, const uint8_t *data, size_t size) {
  size_t at = 0;
  for (size_t nf = 0; nf < MAX_FILES && (at < size || nf == 0); nf++) {
    const uint8_t *ff = nf + 1 < MAX_FILES ? memchr(data + at, '\f', size - at) : NULL;
    size_t end = ff ? (size_t)(ff - data) : size;
    if (end > at) {
      /* fmemopen reads in place; "r" never writes the buffer */
      FILE *f = fmemopen((void *)(uintptr_t)(data + at), end - at, "r");
      REQUIRE(f);
      REQUIRE(cgl_read_stream(log, f, names[nf]) == 0);
      fclose(f);
    } else {
      /* an empty file (fmemopen may refuse size 0): read as nothing */
      FILE *f = fopen("/dev/null", "r");
      REQUIRE(f);
      REQUIRE(cgl_read_stream(log, f, names[nf]) == 0);
      fclose(f);
    }
    at = ff ? end + 1 : size;
  }
}

/* A census (what capguard report reads first, log_latest.h), which keeps
 * only what the runs' table counts of events and captures, says of the
 * lines, the processes and the runs what the whole read, log, says. */
static void check_census(const uint8_t *data, size_t size, const cgl_log *log,
                         const cgr_analysis *a) {
  cgl_log c;
  cgl_init(&c);
  c.census = true;
  read_files(&c, data, size);
  REQUIRE(c.lines == log->lines && c.records == log->records && c.malformed == log->malformed &&
          c.newer == log->newer && c.unknown == log->unknown);
  REQUIRE(!strcmp(c.first_malformed, log->first_malformed));
  size_t caps = c.n_ccaps;
  for (size_t i = 0; i < c.n_procs; i++)
    caps += cgl_census_of(&c, i)->dense;
  REQUIRE(c.n_procs == log->n_procs && caps == log->n_caps && c.n_evs == 0 && c.n_caps == 0);
  for (size_t i = 0; i < c.n_procs; i++) {
    const cgl_process *x = &c.procs[i], *y = &log->procs[i];
    REQUIRE(x->file == y->file && x->pid == y->pid && x->ppid == y->ppid && x->first_ns == y->first_ns &&
            x->last_ns == y->last_ns && x->has_summary == y->has_summary &&
            cgl_first_of(&c, i)->offset == cgl_first_of(log, i)->offset &&
            cgl_first_of(&c, i)->lineno == cgl_first_of(log, i)->lineno);
  }
  cgl_group_runs(&c);
  REQUIRE(c.n_runs == log->n_runs);
  cgr_analysis ca;
  memset(&ca, 0, sizeof ca);
  cgr_count_runs(&c, SIZE_MAX, &ca);
  for (size_t r = 0; r < c.n_runs; r++)
    REQUIRE(!memcmp(&ca.runs[r], &a->runs[r], sizeof ca.runs[r]));
  cgr_free(&ca); /* the runs, and each run's advice counted with them */
  cgl_free(&c);
}

/* What a sealed log dropped (cgl_seal: its index, the pool's table) is
 * made again when needed: the runs grouped again are the same, and a
 * string interned again is the one already there. */
static void check_seal(cgl_log *log) {
  size_t runs = log->n_runs, first = log->n_runs ? log->runs[0].first_proc : 0;
  cgl_seal(log);
  cgl_group_runs(log);
  REQUIRE(log->n_runs == runs && (!runs || log->runs[0].first_proc == first));
  cgl_seal(log);
  for (size_t i = 0; i < log->n_procs && i < 4; i++) {
    const char *run = log->procs[i].run;
    if (run)
      REQUIRE(cgl_intern(log->pool, run, strlen(run)) == run);
  }
}

/* Whether the parser's node v and jansson's value j are the same value. */
static bool same_value(const cgl_jv *v, json_t *j) {
  switch (v->type) {
  case CGL_J_NULL: return json_is_null(j);
  case CGL_J_TRUE: return json_is_true(j);
  case CGL_J_FALSE: return json_is_false(j);
  case CGL_J_REAL: return json_is_real(j);
  case CGL_J_INTEGER: return json_is_integer(j) && json_integer_value(j) == v->u.i;
  case CGL_J_STRING:
    return json_is_string(j) && json_string_length(j) == v->len && strlen(v->u.s) == v->len &&
           !memcmp(json_string_value(j), v->u.s, v->len);
  case CGL_J_ARRAY: {
    if (!json_is_array(j) || json_array_size(j) != v->len)
      return false;
    size_t i = 0;
    for (const cgl_jv *e = cgl_jfirst(v); e; e = cgl_jnext(e), i++)
      if (i >= v->len || e->key || !same_value(e, json_array_get(j, i)))
        return false;
    return i == v->len;
  }
  case CGL_J_OBJECT: {
    if (!json_is_object(j) || json_object_size(j) != v->len)
      return false;
    size_t i = 0;
    for (const cgl_jv *m = cgl_jfirst(v); m; m = cgl_jnext(m), i++) {
      json_t *jm = m->key ? json_object_get(j, m->key) : NULL;
      if (i >= v->len || !jm || strlen(m->key) != m->key_len || cgl_jget(v, m->key) != m ||
          !same_value(m, jm))
        return false;
    }
    return i == v->len;
  }
  }
  return false;
}

/* Each line the parser is sure of, jansson accepts with the same values. */
static void check_parser(const uint8_t *data, size_t size) {
  cgl_json j;
  memset(&j, 0, sizeof j);
  for (size_t at = 0; at < size;) {
    const uint8_t *nl = memchr(data + at, '\n', size - at);
    size_t end = nl ? (size_t)(nl - data) : size;
    const char *line = (const char *)data + at;
    const cgl_jv *top;
    if (cgl_json_parse_own(&j, line, end - at, &top)) {
      json_error_t err;
      json_t *o = json_loadb(line, end - at, JSON_REJECT_DUPLICATES, &err);
      REQUIRE(o);
      REQUIRE(top->type == CGL_J_OBJECT && !top->key && same_value(top, o));
      json_decref(o);
    }
    cgl_json_release(&j);
    at = end + 1;
  }
  cgl_json_free(&j);
}

/* The section table holds together: in each format, the sections shown
 * stand at places 1, 2, ... with none twice and none skipped, and a section
 * has a printer for a format exactly where it has a place in it. */
static void check_section_table(void) {
  for (int f = 0; f < CGR_FORMATS; f++) {
    size_t shown = 0;
    for (size_t i = 0; i < cgr_n_sections; i++) {
      const cgr_section *s = &cgr_sections[i];
      const void *printer = f == CGR_TEXT   ? (const void *)s->text
                            : f == CGR_JSON ? (const void *)s->json
                            : f == CGR_HTML ? (const void *)s->html
                                            : (const void *)s->trace;
      REQUIRE((s->at[f] != 0) == (printer != NULL));
      shown += s->at[f] != 0;
      for (size_t j = i + 1; j < cgr_n_sections; j++)
        REQUIRE(!s->at[f] || s->at[f] != cgr_sections[j].at[f]);
    }
    for (size_t i = 0; i < cgr_n_sections; i++)
      REQUIRE(cgr_sections[i].at[f] <= shown);
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static bool table_checked;
  if (!table_checked) {
    check_section_table();
    table_checked = true;
  }
  check_parser(data, size);
  cgl_log log;
  cgl_init(&log);
  log.keep_firsts = true; /* compared with the census's (check_census) */
  read_files(&log, data, size);
  REQUIRE(log.malformed <= log.lines);
  REQUIRE(log.records <= log.lines);
  if (!cgl_is_capguard_log(&log)) { /* report stops here: not a capguard log */
    cgl_free(&log);
    return 0;
  }
  cgl_group_runs(&log);
  REQUIRE(log.n_procs == 0 || log.n_runs > 0);
  for (size_t i = 0; i < log.n_procs; i++)
    REQUIRE(log.procs[i].run_index < log.n_runs);

  /* --all */
  cgr_report r;
  cgr_report_build(&r, &log, &log, SIZE_MAX);
  render(&r);
  check_census(data, size, &log, &r.a);
  cgr_report_free(&r);
  check_seal(&log);

  /* the default: the latest run alone, when there are several */
  if (log.n_runs > 1) {
    cgl_log view;
    cgl_view(&log, log.n_runs - 1, &view);
    cgr_report_build(&r, &view, &log, log.n_runs - 1);
    render(&r);
    cgr_report_free(&r);
    cgl_free(&view);
  }
  cgl_free(&log);
  return 0;
}
