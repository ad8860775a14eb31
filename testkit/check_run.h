/* How every Check test program ends: its suite run, and main's exit status
 * (0 when every check passed). Header-only: the tests link Check, not the
 * testkit's library. */
#ifndef CAPGUARD_TESTKIT_CHECK_RUN_H
#define CAPGUARD_TESTKIT_CHECK_RUN_H

#include <check.h>
#include <stdlib.h>

static inline int tk_check_run(Suite *s) {
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

#endif
