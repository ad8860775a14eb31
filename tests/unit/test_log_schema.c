/* The log's vocabulary (capguard/log_schema.h): every word of every table
 * round-trips through its parse, words are unique, every word is documented
 * in docs/log-format.md, and the start and process records come out byte for
 * byte as the log has always had them. */
#include <check.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capguard/event.h"
#include "capguard/log_schema.h"
#include "check_run.h"

static const struct {
  const char *name;
  const cg_words *t;
  size_t count; /* the enum's *_COUNT */
} tables[] = {
    {"record types", &cg_record_types, CG_RECORD_TYPE_COUNT},
    {"event kinds", &cg_event_kinds, CG_EV_KIND_COUNT},
    {"verdicts", &cg_verdicts, CG_VERDICT_COUNT},
    {"run modes", &cg_run_modes, CG_RUN_MODE_COUNT},
    {"capture modes", &cg_capture_modes, CG_CAPTURE_MODE_COUNT},
    {"capture statuses", &cg_capture_statuses, CG_CAPTURE_STATUS_COUNT},
    {"image kinds", &cg_image_kinds, CG_IMAGE_KIND_COUNT},
};
#define N_TABLES (sizeof tables / sizeof tables[0])

START_TEST(every_word_round_trips) {
  for (size_t i = 0; i < N_TABLES; i++) {
    const cg_words *t = tables[i].t;
    ck_assert_msg(t->n == tables[i].count, "%s: %zu rows, enum has %zu", tables[i].name, t->n,
                  tables[i].count);
    for (unsigned v = 0; v < t->n; v++) {
      const char *w = cg_word_name(t, v);
      ck_assert_msg(w && *w, "%s row %u has no word", tables[i].name, v);
      ck_assert_msg(*cg_word_what(t, v), "%s: %s has no description", tables[i].name, w);
      ck_assert_uint_eq(cg_word_parse(t, w, (size_t)-1), v);
      ck_assert_uint_eq(cg_word_parse(t, w, strlen(w)), v);
      /* a word cut short, or one with more after it, is not the word */
      ck_assert_uint_eq(cg_word_parse(t, w, strlen(w) - 1), t->n);
      char longer[64];
      snprintf(longer, sizeof longer, "%sx", w);
      ck_assert_uint_eq(cg_word_parse(t, longer, (size_t)-1), t->n);
      for (unsigned u = 0; u < v; u++)
        ck_assert_msg(strcmp(cg_word_name(t, u), w), "%s: %s twice", tables[i].name, w);
    }
    ck_assert_uint_eq(cg_word_parse(t, NULL, (size_t)-1), t->n);
    ck_assert_uint_eq(cg_word_parse(t, "", (size_t)-1), t->n);
    ck_assert_str_eq(cg_word_name(t, (unsigned)t->n), "unknown");
    ck_assert_str_eq(cg_word_what(t, (unsigned)t->n), "");
    ck_assert(!cg_word_is(t, (unsigned)t->n, 0));
  }
}
END_TEST

START_TEST(typed_names_are_the_tables) {
  for (unsigned v = 0; v < CG_VERDICT_COUNT; v++)
    ck_assert_uint_eq(cg_word_parse(&cg_verdicts, cg_verdict_name(v), (size_t)-1), v);
  ck_assert_uint_eq(cg_word_parse(&cg_verdicts, "quarantined", (size_t)-1), CG_VERDICT_COUNT);
  for (unsigned m = 0; m < CG_RUN_MODE_COUNT; m++) {
    cg_run_mode back = CG_RUN_MODE_COUNT;
    ck_assert(cg_run_mode_parse(cg_run_mode_name(m), &back));
    ck_assert_uint_eq(back, m);
  }
  cg_run_mode m = CG_RUN_REPORT;
  ck_assert(!cg_run_mode_parse("gaurd", &m));
  ck_assert_uint_eq(m, CG_RUN_REPORT); /* untouched */
  ck_assert_str_eq(cg_event_kind_name(CG_EV_MODULE_LOAD), cg_word_name(&cg_event_kinds, 0));
  ck_assert_str_eq(cg_record_type_name(CG_RECORD_SUMMARY), "summary");
  ck_assert_str_eq(cg_capture_mode_name(CG_MODE_THREAD_LOCAL), "thread-local");
}
END_TEST

/* What breaks a capture is said once, in the rows. */
START_TEST(breaking_words_are_the_documented_ones) {
  for (unsigned v = 0; v < CG_VERDICT_COUNT; v++)
    ck_assert_int_eq(cg_verdict_breaks(v), v == CG_VERDICT_REFUSED || v == CG_VERDICT_EMULATED || v == CG_VERDICT_BROKE);
  ck_assert(!cg_verdict_breaks(CG_VERDICT_COUNT));
  for (unsigned s = 0; s < CG_CAPTURE_STATUS_COUNT; s++)
    ck_assert_int_eq(cg_capture_status_broken(s),
                     s == CG_CAPTURE_INVALIDATED || s == CG_CAPTURE_FAILED);
  ck_assert(cg_word_is(&cg_verdicts, CG_VERDICT_SERVED, CG_WORD_ROUTINE));
  ck_assert(cg_word_is(&cg_verdicts, CG_VERDICT_DEFERRED, CG_WORD_ROUTINE));
  ck_assert(!cg_word_is(&cg_verdicts, CG_VERDICT_REFUSED, CG_WORD_ROUTINE));
}
END_TEST

/* docs/log-format.md names every word as `word` (a reader learns them there). */
/* The verdict table's own columns: a routine verdict has its one line, and
 * the verdicts whose event sentence is composed from
 * the call's numbers (the driver's error, the driver versions) no fixed one. */
START_TEST(verdict_columns_are_filled) {
  for (unsigned v = 0; v < CG_VERDICT_COUNT; v++) {
    bool routine = cg_word_is(&cg_verdicts, v, CG_WORD_ROUTINE);
    ck_assert_msg((cg_verdict_routine_line(v) != NULL) == routine, "%s: routine line", cg_verdict_name(v));
    bool composed = v == CG_VERDICT_REFUSED || v == CG_VERDICT_ALLOWED || v == CG_VERDICT_EMULATED ||
                    v == CG_VERDICT_FAILED || v == CG_VERDICT_ESCAPED || v == CG_VERDICT_BROKE ||
                    v == CG_VERDICT_RESCUED;
    ck_assert_msg((cg_verdict_said(v) == NULL) == composed, "%s: sentence", cg_verdict_name(v));
  }
  ck_assert_ptr_null(cg_verdict_said(CG_VERDICT_COUNT));
  ck_assert_ptr_null(cg_verdict_routine_line(CG_VERDICT_COUNT));
}
END_TEST

START_TEST(every_word_is_documented) {
  const char *path = getenv("CG_LOG_FORMAT_DOC");
  ck_assert_msg(path, "CG_LOG_FORMAT_DOC unset");
  FILE *f = fopen(path, "r");
  ck_assert_msg(f, "cannot open %s", path);
  static char doc[1 << 16];
  size_t n = fread(doc, 1, sizeof doc - 1, f);
  fclose(f);
  doc[n] = '\0';
  for (size_t i = 0; i < N_TABLES; i++)
    for (unsigned v = 0; v < tables[i].t->n; v++) {
      char quoted[80];
      snprintf(quoted, sizeof quoted, "`%s`", cg_word_name(tables[i].t, v));
      char typed[80];
      snprintf(typed, sizeof typed, "\"type\": \"%s\"", cg_word_name(tables[i].t, v));
      ck_assert_msg(strstr(doc, quoted) || strstr(doc, typed), "%s: %s is not in %s",
                    tables[i].name, quoted, path);
    }
}
END_TEST

/* The records as shim/output.c wrote them by hand before they moved here. */
START_TEST(process_and_start_records_are_byte_compatible) {
  static const char cmdline[] = "python3\0-c\0print(\"x\")\0";
  cg_process_record r = {.type = CG_RECORD_PROCESS, .pid = 42, .ppid = 1, .time_ns = 123,
                         .mode = CG_RUN_GUARD, .driver_version = 12020, .emulate_driver = 0,
                         .version = "0.1.0", .prime = "/p/x.cgp", .run = "r-1",
                         .cmdline = cmdline, .cmdline_len = sizeof cmdline - 1};
  char buf[1024];
  size_t n = cg_process_format_json(&r, buf, sizeof buf);
  ck_assert_str_eq(buf, "{\"v\":1,\"type\":\"process\",\"pid\":42,\"ppid\":1,\"time_ns\":123,"
                        "\"mode\":\"guard\",\"driver_version\":12020,\"emulate_driver\":0,"
                        "\"version\":\"0.1.0\",\"prime\":\"/p/x.cgp\",\"run\":\"r-1\","
                        "\"argv\":[\"python3\",\"-c\",\"print(\\\"x\\\")\"]}\n");
  ck_assert_uint_eq(n, strlen(buf));
  r.type = CG_RECORD_START;
  r.mode = CG_RUN_REPORT;
  r.run = NULL;
  r.prime = "";
  n = cg_process_format_json(&r, buf, sizeof buf);
  ck_assert_str_eq(buf, "{\"v\":1,\"type\":\"start\",\"pid\":42,\"ppid\":1,\"time_ns\":123,"
                        "\"mode\":\"report\",\"version\":\"0.1.0\",\"prime\":\"\","
                        "\"argv\":[\"python3\",\"-c\",\"print(\\\"x\\\")\"]}\n");
  /* snprintf's contract: the length needed, whatever the room */
  char small[16];
  ck_assert_uint_eq(cg_process_format_json(&r, small, sizeof small), n);
  ck_assert_uint_eq(strlen(small), sizeof small - 1);
  ck_assert_uint_eq(cg_process_format_json(&r, NULL, 0), n);
}
END_TEST

/* A command line as /proc gives it, cut anywhere, with bytes that are not
 * UTF-8 and more words than are kept: valid JSON, at most 16 words. */
START_TEST(process_record_of_any_command_line_is_json) {
  char cmdline[300];
  size_t len = 0;
  for (int w = 0; w < 20; w++)
    len += (size_t)snprintf(cmdline + len, sizeof cmdline - len, "w%d\xff\xe2\x82%c", w, 0);
  for (size_t cut = 0; cut <= len; cut++) {
    cg_process_record r = {.type = CG_RECORD_START, .mode = CG_RUN_OFF, .cmdline = cmdline,
                           .cmdline_len = cut};
    char buf[2048];
    size_t n = cg_process_format_json(&r, buf, sizeof buf);
    ck_assert_uint_lt(n, sizeof buf);
    json_error_t err;
    json_t *o = json_loads(buf, 0, &err);
    ck_assert_msg(o, "cut %zu: %s: %s", cut, err.text, buf);
    json_t *argv = json_object_get(o, "argv");
    ck_assert(json_is_array(argv));
    ck_assert_uint_le(json_array_size(argv), CG_RECORD_MAX_ARGV);
    ck_assert_str_eq(json_string_value(json_object_get(o, "type")), "start");
    ck_assert_str_eq(json_string_value(json_object_get(o, "mode")), "off");
    json_decref(o);
  }
}
END_TEST

/* The summary's "verdicts" and "events" objects list every row, in row order. */
START_TEST(summary_lists_words_in_row_order) {
  cg_summary s = {.pid = 7, .log_path = "/l", .log_incomplete = true};
  char buf[4096];
  cg_summary_format_json(&s, buf, sizeof buf);
  json_t *o = json_loads(buf, JSON_PRESERVE_ORDER, NULL);
  ck_assert(o);
  const char *key;
  json_t *val;
  unsigned i = 0;
  json_object_foreach(json_object_get(o, "verdicts"), key, val) {
    ck_assert_str_eq(key, cg_verdict_name(i++));
  }
  ck_assert_uint_eq(i, CG_VERDICT_COUNT);
  i = 0;
  json_object_foreach(json_object_get(o, "events"), key, val) {
    ck_assert_str_eq(key, cg_event_kind_name(i++));
  }
  ck_assert_uint_eq(i, CG_EV_KIND_COUNT);
  ck_assert(json_is_true(json_object_get(o, "log_incomplete")));
  /* the flag comes last, where output.c used to splice it in */
  ck_assert(strstr(buf, ",\"log\":\"/l\",\"log_incomplete\":true}\n"));
  json_decref(o);
}
END_TEST

int main(void) {
  Suite *s = suite_create("log_schema");
  TCase *tc = tcase_create("schema");
  tcase_add_test(tc, every_word_round_trips);
  tcase_add_test(tc, typed_names_are_the_tables);
  tcase_add_test(tc, breaking_words_are_the_documented_ones);
  tcase_add_test(tc, every_word_is_documented);
  tcase_add_test(tc, verdict_columns_are_filled);
  tcase_add_test(tc, process_and_start_records_are_byte_compatible);
  tcase_add_test(tc, process_record_of_any_command_line_is_json);
  tcase_add_test(tc, summary_lists_words_in_row_order);
  suite_add_tcase(s, tc);
  return tk_check_run(s);
}
