/* detect/capture/driver_log_parse.c: the driver's log lines as measured on driver 580
 * (driver-semantics.md, third matrix) are read, with any prefix; every other
 * line, a cut line or hostile bytes give false and write nothing. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "capguard/driver_log_parse.h"
#include "check_run.h"

static bool parse(const char *m, int *code, char *call, size_t cap) {
  return cg_driver_log_parse(m, strlen(m), code, call, cap);
}

START_TEST(measured_lines) {
  int code = -1;
  char call[64];
  ck_assert(parse("Returning 906 (CUDA_ERROR_STREAM_CAPTURE_IMPLICIT) from cuLaunchKernel", &code, call, sizeof call));
  ck_assert_int_eq(code, 906);
  ck_assert_str_eq(call, "cuLaunchKernel");
  ck_assert(parse("[2026-11-23 12:00:00][CUDA][E] Returning 901 (CUDA_ERROR_STREAM_CAPTURE_INVALIDATED) from "
                  "cuStreamEndCapture\n", &code, call, sizeof call));
  ck_assert_int_eq(code, 901);
  ck_assert_str_eq(call, "cuStreamEndCapture");
  ck_assert(parse("Returning 900 (CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED) from cuMemAlloc_v2", &code, call, sizeof call));
  ck_assert_str_eq(call, "cuMemAlloc_v2");
}
END_TEST

START_TEST(other_lines_are_not_read) {
  static const char *const lines[] = {
      "Call cannot be made against CU_STREAM_LEGACY while a blocking stream in the same context is capturing",
      "Capture was invalidated by a prior API call",
      "Returning",
      "Returning ",
      "Returning x (A) from cuFoo",
      "Returning 906 (A) from ",
      "Returning 906 (A) fro cuFoo",
      "Returning 906 (A) from  cuFoo",
      "",
  };
  for (size_t i = 0; i < sizeof lines / sizeof lines[0]; i++) {
    int code = -7;
    char call[8] = "keep";
    ck_assert_msg(!parse(lines[i], &code, call, sizeof call), "%s", lines[i]);
    ck_assert_int_eq(code, -7);
    ck_assert_str_eq(call, "keep");
  }
  int code = 0;
  char call[8];
  ck_assert(!cg_driver_log_parse(NULL, 10, &code, call, sizeof call));
  ck_assert(!cg_driver_log_parse("Returning 1 (A) from cuX", 24, &code, call, 0));
}
END_TEST

START_TEST(bounds) {
  /* The length bounds the read: no NUL needed, none read past. */
  static const char line[] = "Returning 905 (CUDA_ERROR_STREAM_CAPTURE_ISOLATION) from cuStreamWaitEvent";
  size_t n = sizeof line - 1;
  char *exact = malloc(n);
  memcpy(exact, line, n);
  int code = 0;
  char call[64];
  ck_assert(cg_driver_log_parse(exact, n, &code, call, sizeof call));
  ck_assert_str_eq(call, "cuStreamWaitEvent");
  ck_assert(cg_driver_log_parse(exact, n - 5, &code, call, sizeof call));
  ck_assert_str_eq(call, "cuStreamWait");
  ck_assert(!cg_driver_log_parse(exact, 20, &code, call, sizeof call));
  free(exact);
  /* A NUL before the length ends the line. */
  ck_assert(!cg_driver_log_parse("Returning 905\0 (X) from cuY", 27, &code, call, sizeof call));
  /* The name is cut to the buffer; the code to 9 digits. */
  char small[5];
  ck_assert(parse("Returning 1234567890123 (X) from cuLaunchKernel", &code, small, sizeof small));
  ck_assert_int_eq(code, 123456789);
  ck_assert_str_eq(small, "cuLa");
}
END_TEST

int main(void) {
  Suite *s = suite_create("driver log");
  TCase *tc = tcase_create("parse");
  tcase_add_test(tc, measured_lines);
  tcase_add_test(tc, other_lines_are_not_read);
  tcase_add_test(tc, bounds);
  suite_add_tcase(s, tc);
  return tk_check_run(s);
}
