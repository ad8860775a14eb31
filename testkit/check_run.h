/* How every Check test program ends: its suite run, and main's exit status
 * (0 when every check passed). Header-only: the tests link Check, not the
 * testkit's library. */
#ifndef CAPGUARD_TESTKIT_CHECK_RUN_H
#define CAPGUARD_TESTKIT_CHECK_RUN_H

#include <check.h>
#include <stdbool.h>
#include <stdlib.h>

/* forked: each test in a process of its own even where CK_FORK=no asks
 * otherwise (tests that set limits, signals or process state). */
static inline int tk_check_run_as(Suite *s, bool forked) {
  SRunner *sr = srunner_create(s);
  if (forked)
    srunner_set_fork_status(sr, CK_FORK);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

static inline int tk_check_run(Suite *s) { return tk_check_run_as(s, false); }
static inline int tk_check_run_forked(Suite *s) { return tk_check_run_as(s, true); }

#endif
