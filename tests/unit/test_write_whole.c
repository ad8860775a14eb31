/* capguard's own writes (detect/base/write_whole.c) under a file-size limit and
 * on a full device: no SIGXFSZ for the process (its default action would
 * kill this test), the process's own mask and pending signals as they were,
 * and an append cut short by the limit taken back, so the file ends on the
 * last whole line. Each case forks, so that RLIMIT_FSIZE and signal state
 * are the child's alone (Check runs each test in a child too). */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "capguard/write_whole.h"
#include "check_run.h"

static char path[64];
static void unlimit(void);

static void setup(void) {
  snprintf(path, sizeof path, "/tmp/cg-write-whole-XXXXXX");
  int fd = mkstemp(path);
  ck_assert_int_ge(fd, 0);
  close(fd);
}
static void teardown(void) {
  unlimit();
  unlink(path);
}

/* The soft limit only, raised again by unlimit() before each test ends:
 * Check reports a result through a file of its own, which the limit would
 * cut (a failed assertion under the limit still fails, as an error). */
static void limit_to(rlim_t bytes) {
  struct rlimit rl;
  ck_assert_int_eq(getrlimit(RLIMIT_FSIZE, &rl), 0);
  rl.rlim_cur = bytes;
  if (setrlimit(RLIMIT_FSIZE, &rl) != 0)
    abort(); /* no ck_assert from here on: see below */
}
static void unlimit(void) {
  struct rlimit rl;
  getrlimit(RLIMIT_FSIZE, &rl);
  rl.rlim_cur = rl.rlim_max;
  setrlimit(RLIMIT_FSIZE, &rl);
}

static off_t size_of(const char *p) {
  struct stat st;
  ck_assert_int_eq(stat(p, &st), 0);
  return st.st_size;
}

/* No ck_assert while the limit is in place: Check writes each assertion's
 * place to a file of its own, which the limit would stop (with SIGXFSZ).
 * Results are kept and asserted after unlimit(). */
START_TEST(append_past_the_limit_is_taken_back_without_a_signal) {
  int fd = open(path, O_WRONLY | O_APPEND);
  char line[100];
  memset(line, 'a', sizeof line - 1);
  line[sizeof line - 1] = '\n';
  int torn1 = -1, torn2 = -1;
  int first = cg_append_whole(fd, line, sizeof line, &torn1);
  limit_to(150); /* the next line straddles the limit: 50 bytes fit, then EFBIG */
  int straddle = cg_append_whole(fd, line, sizeof line, &torn1);
  off_t after_straddle = lseek(fd, 0, SEEK_END);
  int trunc = ftruncate(fd, 150); /* at the limit exactly: EFBIG at once */
  int at_limit = cg_append_whole(fd, line, sizeof line, &torn2);
  sigset_t mask, pending;
  sigprocmask(SIG_BLOCK, NULL, &mask);
  sigpending(&pending);
  unlimit();
  ck_assert_int_eq(first, 0);
  ck_assert_int_eq(straddle, EFBIG);
  ck_assert_int_eq(torn1, 0);
  ck_assert_int_eq(after_straddle, 100); /* the part written was taken back */
  ck_assert_int_eq(trunc, 0);
  ck_assert_int_eq(at_limit, EFBIG);
  ck_assert_int_eq(torn2, 0);
  ck_assert_int_eq(size_of(path), 150);
  ck_assert(!sigismember(&mask, SIGXFSZ));    /* the mask is restored */
  ck_assert(!sigismember(&pending, SIGXFSZ)); /* ours was taken back */
  close(fd);
}
END_TEST

START_TEST(pwrite_past_the_limit_fails_without_a_signal) {
  int fd = open(path, O_RDWR);
  char buf[8192] = {0};
  size_t done = 0;
  limit_to(4096);
  int err = cg_write_whole(fd, buf, sizeof buf, 0, &done);
  unlimit();
  ck_assert_int_eq(err, EFBIG);
  ck_assert_uint_eq(done, 4096);
  close(fd);
}
END_TEST

/* The host blocked SIGXFSZ itself and has one pending from its own write:
 * it keeps exactly that one (ours merged into it, and is not taken). */
START_TEST(the_hosts_own_pending_sigxfsz_is_left_alone) {
  sigset_t x, pending_before, pending_after, mask;
  sigemptyset(&x);
  sigaddset(&x, SIGXFSZ);
  sigprocmask(SIG_BLOCK, &x, NULL);
  int fd = open(path, O_WRONLY | O_APPEND);
  char buf[20] = {0};
  limit_to(10);
  ssize_t own1 = write(fd, buf, sizeof buf); /* the host's own: 10 bytes */
  ssize_t own2 = write(fd, buf, sizeof buf); /* and its SIGXFSZ */
  sigpending(&pending_before);
  int ours = cg_write_whole(fd, buf, sizeof buf, -1, NULL);
  sigpending(&pending_after);
  sigprocmask(SIG_BLOCK, NULL, &mask);
  unlimit();
  ck_assert_int_eq(own1, 10);
  ck_assert_int_eq(own2, -1);
  ck_assert(sigismember(&pending_before, SIGXFSZ));
  ck_assert_int_eq(ours, EFBIG);
  ck_assert(sigismember(&pending_after, SIGXFSZ)); /* still the host's */
  ck_assert(sigismember(&mask, SIGXFSZ));          /* its mask as it set it */
  close(fd);
}
END_TEST

/* Written while the caller holds every signal (the shim's reports): no mask
 * of the write's own. Ours taken back when the host's mask blocked neither
 * signal; the host's own pending one left when it blocked SIGXFSZ. */
START_TEST(held_append_past_the_limit_leaves_no_signal) {
  sigset_t all, host, pending, mask;
  sigfillset(&all);
  sigprocmask(SIG_BLOCK, &all, &host); /* the hold; host: the mask before */
  int fd = open(path, O_WRONLY | O_APPEND);
  char line[20] = {0};
  int torn = -1;
  limit_to(10);
  int ours = cg_append_whole_held(fd, line, sizeof line, &torn, &host);
  sigpending(&pending);
  sigprocmask(SIG_SETMASK, &host, NULL);
  sigprocmask(SIG_BLOCK, NULL, &mask);
  unlimit();
  ck_assert_int_eq(ours, EFBIG);
  ck_assert_int_eq(torn, 0);
  ck_assert_int_eq(size_of(path), 0); /* the 10 bytes that fitted were taken back */
  ck_assert(!sigismember(&pending, SIGXFSZ));
  ck_assert(!sigismember(&mask, SIGXFSZ));
  close(fd);
}
END_TEST

START_TEST(held_write_leaves_the_hosts_pending_sigxfsz) {
  sigset_t x, all, host, pending;
  sigemptyset(&x);
  sigaddset(&x, SIGXFSZ);
  sigprocmask(SIG_BLOCK, &x, NULL); /* the host's own */
  int fd = open(path, O_WRONLY | O_APPEND);
  char buf[20] = {0};
  limit_to(10);
  ssize_t own1 = write(fd, buf, sizeof buf), own2 = write(fd, buf, sizeof buf); /* its SIGXFSZ */
  sigfillset(&all);
  sigprocmask(SIG_BLOCK, &all, &host);
  int ours = cg_write_whole_held(fd, buf, sizeof buf, -1, NULL, &host);
  sigpending(&pending);
  sigprocmask(SIG_SETMASK, &host, NULL);
  unlimit();
  ck_assert_int_eq(own1, 10);
  ck_assert_int_eq(own2, -1);
  ck_assert_int_eq(ours, EFBIG);
  ck_assert(sigismember(&pending, SIGXFSZ)); /* still the host's */
  close(fd);
}
END_TEST

/* A handler the host installed is its own: capguard's writes never run it. */
static volatile sig_atomic_t host_handler_ran;
static void host_handler(int sig) { (void)sig; host_handler_ran++; }

START_TEST(the_hosts_handler_is_not_run_by_our_write) {
  struct sigaction sa = {0};
  sa.sa_handler = host_handler;
  sigaction(SIGXFSZ, &sa, NULL);
  int fd = open(path, O_WRONLY | O_APPEND);
  char buf[20] = {0};
  limit_to(10);
  int ours = cg_write_whole(fd, buf, sizeof buf, -1, NULL);
  int ran_after_ours = host_handler_ran;
  ssize_t own = write(fd, buf, sizeof buf); /* the host's own write still reaches it */
  unlimit();
  ck_assert_int_eq(ours, EFBIG);
  ck_assert_int_eq(ran_after_ours, 0);
  ck_assert_int_eq(own, -1);
  ck_assert_int_eq(host_handler_ran, 1);
  struct sigaction now;
  sigaction(SIGXFSZ, NULL, &now);
  ck_assert_ptr_eq((void *)now.sa_handler, (void *)host_handler);
  close(fd);
}
END_TEST

START_TEST(full_device_says_enospc) {
  int fd = open("/dev/full", O_WRONLY | O_APPEND);
  if (fd < 0)
    return; /* no /dev/full in this container: nothing to check */
  int torn = -1;
  ck_assert_int_eq(cg_append_whole(fd, "line\n", 5, &torn), ENOSPC);
  ck_assert_int_eq(torn, 0);
  close(fd);
}
END_TEST

int main(void) {
  Suite *s = suite_create("write_whole");
  TCase *tc = tcase_create("core");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_add_test(tc, append_past_the_limit_is_taken_back_without_a_signal);
  tcase_add_test(tc, pwrite_past_the_limit_fails_without_a_signal);
  tcase_add_test(tc, the_hosts_own_pending_sigxfsz_is_left_alone);
  tcase_add_test(tc, the_hosts_handler_is_not_run_by_our_write);
  tcase_add_test(tc, held_append_past_the_limit_leaves_no_signal);
  tcase_add_test(tc, held_write_leaves_the_hosts_pending_sigxfsz);
  tcase_add_test(tc, full_device_says_enospc);
  suite_add_tcase(s, tc);
  return tk_check_run_forked(s); /* each case's limit and signals its own */
}
