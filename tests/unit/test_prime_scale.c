/* The priming file at production scale and under hostile or stuck peers:
 * a loaded (mapped) file holds no lock; an appender follows other writers
 * and rewrites; a crafted file of record markers is walked in linear time and
 * damage never costs the records before it; 64 recorders on a 256 MB file
 * lose nothing; a waiter gives up on a stuck lock holder and names it, but
 * waits on while the queue moves. */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>

#include "capguard/prime_file.h"
#include "prime_records.h"
#include "check_run.h"

static char dir[64], path[128];

static void setup(void) {
  make_test_dir(dir, sizeof dir, "cgscale");
  snprintf(path, sizeof path, "%s/prime.cgp", dir);
}
static void teardown(void) { remove_test_dir(dir); }

static double seconds(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static cg_prime_set *load(void) {
  cg_prime_set *s = NULL;
  ck_assert_int_eq(cg_prime_load(path, &s, NULL, NULL), 0);
  return s;
}

START_TEST(a_loaded_file_holds_no_lock) {
  cg_prime_record a = make_record(1, 100), b = make_record(2, 100);
  ck_assert_int_eq(cg_prime_append(path, &a, CG_PRIME_DEFAULT_MAX_BYTES, NULL, NULL), 0);
  cg_prime_set *s = load(); /* mapped: the mapping keeps the open file alive */
  double t0 = seconds();
  warnings w = {0};
  ck_assert_int_eq(cg_prime_append(path, &b, CG_PRIME_DEFAULT_MAX_BYTES, collect_warning, &w), 0);
  ck_assert_msg(seconds() - t0 < 5, "the append waited on this process's own mapping's lock");
  ck_assert_int_eq(w.n, 0);
  ck_assert_ptr_nonnull(prime_find(s, a.bytes, a.size)); /* the old mapping still reads */
  cg_prime_free(s);
  free_record(&a);
  free_record(&b);
}
END_TEST

static int keep_all(void *ctx, const cg_prime_set *cur, bool *keep) {
  (void)ctx, (void)cur, (void)keep;
  return 0;
}

START_TEST(an_appender_follows_other_writers_and_rewrites) {
  cg_prime_record x = make_record(10, 64), y = make_record(11, 64), z = make_record(12, 64);
  cg_prime_appender *a = cg_prime_appender_new(path, CG_PRIME_DEFAULT_MAX_BYTES, NULL, NULL, NULL);
  ck_assert_ptr_nonnull(a);
  ck_assert_int_eq(cg_prime_appender_add(a, &x), 0);
  /* Another writer appends between two appends of a: y, and x needing 2 loads. */
  ck_assert_int_eq(cg_prime_append(path, &y, CG_PRIME_DEFAULT_MAX_BYTES, NULL, NULL), 0);
  x.module_loads = 2;
  ck_assert_int_eq(cg_prime_append(path, &x, CG_PRIME_DEFAULT_MAX_BYTES, NULL, NULL), 0);
  /* a has not seen those: it must not store x again, nor lower its loads. */
  x.module_loads = 1;
  ck_assert_int_eq(cg_prime_appender_add(a, &x), 0);
  cg_prime_set *s = load();
  ck_assert_uint_eq(cg_prime_count(s), 2);
  ck_assert_uint_eq(prime_find(s, x.bytes, x.size)->module_loads, 2);
  ck_assert_uint_eq(prime_find(s, x.bytes, x.size)->hits, 3);
  cg_prime_free(s);
  /* A rewrite puts a new file (inode) in place, with other offsets. */
  ck_assert_int_eq(cg_prime_rewrite(path, keep_all, NULL, NULL, 0, NULL, NULL), 0);
  x.module_loads = 3;
  ck_assert_int_eq(cg_prime_appender_add(a, &x), 0);
  ck_assert_int_eq(cg_prime_appender_add(a, &z), 0);
  s = load();
  ck_assert_uint_eq(cg_prime_count(s), 3);
  ck_assert_uint_eq(prime_find(s, x.bytes, x.size)->module_loads, 3);
  ck_assert_uint_eq(prime_find(s, x.bytes, x.size)->hits, 4);
  ck_assert_ptr_nonnull(prime_find(s, y.bytes, y.size));
  ck_assert_ptr_nonnull(prime_find(s, z.bytes, z.size));
  /* Seeded from a loaded set, an appender starts where the load stopped. */
  cg_prime_appender *b = cg_prime_appender_new(path, CG_PRIME_DEFAULT_MAX_BYTES, s, NULL, NULL);
  y.library_loads = 1;
  ck_assert_int_eq(cg_prime_appender_add(b, &y), 0);
  cg_prime_free(s);
  s = load();
  ck_assert_uint_eq(cg_prime_count(s), 3);
  ck_assert_uint_eq(prime_find(s, y.bytes, y.size)->module_loads, 1);
  ck_assert_uint_eq(prime_find(s, y.bytes, y.size)->library_loads, 1);
  cg_prime_free(s);
  cg_prime_appender_free(a);
  cg_prime_appender_free(b);
  free_record(&x);
  free_record(&y);
  free_record(&z);
}
END_TEST

/* After the file's current end: n fake image-record heads every 16 bytes,
 * each claiming a record that runs to the end of the file (the shape that
 * made resynchronisation quadratic), then the bytes of rest. */
static size_t write_crafted(size_t junk_bytes, const uint8_t *rest, size_t rest_len) {
  int fd = open(path, O_WRONLY | O_APPEND);
  ck_assert_int_ge(fd, 0);
  struct stat st;
  fstat(fd, &st);
  uint8_t *junk = calloc(1, junk_bytes);
  uint64_t total = (uint64_t)st.st_size + junk_bytes + rest_len;
  for (size_t off = 0; off + 48 <= junk_bytes; off += 16) {
    uint64_t here = (uint64_t)st.st_size + off, l = (total - here) & ~(uint64_t)7;
    memcpy(junk + off, "CGPR\1\0\0\0", 8);
    memcpy(junk + off + 8, &l, 8);
  }
  ck_assert_int_eq(write(fd, junk, junk_bytes), (ssize_t)junk_bytes);
  if (rest_len) ck_assert_int_eq(write(fd, rest, rest_len), (ssize_t)rest_len);
  close(fd);
  free(junk);
  return junk_bytes;
}

START_TEST(a_crafted_file_is_walked_in_linear_time) {
  cg_prime_record a = make_record(20, 128);
  ck_assert_int_eq(cg_prime_append(path, &a, CG_PRIME_DEFAULT_MAX_BYTES, NULL, NULL), 0);
  write_crafted(4u << 20, NULL, 0);
  warnings w = {0};
  cg_prime_set *s = NULL;
  double t0 = seconds();
  ck_assert_int_eq(cg_prime_load(path, &s, collect_warning, &w), 0);
  double t = seconds() - t0;
  ck_assert_uint_eq(cg_prime_count(s), 1); /* the record before the junk */
  ck_assert_ptr_nonnull(prime_find(s, a.bytes, a.size));
  ck_assert_int_ge(w.n, 1);
  cg_prime_free(s);
  /* Quadratic took 71 s for 4 MiB; linear is well under a second. The bound
   * only catches the regression, generously for a slow machine. */
  ck_assert_msg(t < 10, "4 MiB crafted file took %.1f s to load", t);
  free_record(&a);
}
END_TEST

START_TEST(damage_in_the_middle_costs_no_record_after_it) {
  cg_prime_record a = make_record(30, 128), b = make_record(31, 128);
  ck_assert_int_eq(cg_prime_append(path, &a, CG_PRIME_DEFAULT_MAX_BYTES, NULL, NULL), 0);
  /* b's record, as it would stand in a file, after a few bad markers. */
  char other[160];
  snprintf(other, sizeof other, "%s/b.cgp", dir);
  ck_assert_int_eq(cg_prime_append(other, &b, CG_PRIME_DEFAULT_MAX_BYTES, NULL, NULL), 0);
  int fd = open(other, O_RDONLY);
  struct stat st;
  fstat(fd, &st);
  size_t rec_len = (size_t)st.st_size - 32;
  uint8_t *rec = malloc(rec_len);
  ck_assert_int_eq(pread(fd, rec, rec_len, 32), (ssize_t)rec_len);
  close(fd);
  write_crafted(256, rec, rec_len);
  warnings w = {0};
  cg_prime_set *s = NULL;
  ck_assert_int_eq(cg_prime_load(path, &s, collect_warning, &w), 0);
  ck_assert_uint_eq(cg_prime_count(s), 2);
  ck_assert_ptr_nonnull(prime_find(s, b.bytes, b.size));
  ck_assert_int_eq(w.n, 1); /* one damaged range */
  cg_prime_free(s);
  free(rec);
  free_record(&a);
  free_record(&b);
}
END_TEST

#define RECORDERS 64

START_TEST(sixty_four_recorders_on_a_256_MB_file_lose_nothing) {
  /* One big image takes the file to 250 MB, under the default 256 MiB cap. */
  cg_prime_record big = make_record(40, (size_t)250 << 20);
  ck_assert_ptr_nonnull(big.bytes);
  ck_assert_int_eq(cg_prime_add_records(path, &big, 1, NULL, NULL), 0);
  free_record(&big);
  int go[2];
  ck_assert_int_eq(pipe(go), 0);
  pid_t kids[RECORDERS];
  for (int i = 0; i < RECORDERS; i++) {
    kids[i] = fork();
    ck_assert_int_ge(kids[i], 0);
    if (kids[i] == 0) {
      close(go[1]);
      char c;
      if (read(go[0], &c, 1) < 0) _exit(3);
      cg_prime_record own = make_record(1000 + (uint32_t)i, 96), shared = make_record(999, 80);
      warnings w = {0};
      int rc = cg_prime_append(path, &own, CG_PRIME_DEFAULT_MAX_BYTES, collect_warning, &w) |
               cg_prime_append(path, &shared, CG_PRIME_DEFAULT_MAX_BYTES, collect_warning, &w);
      if (rc || w.n) fprintf(stderr, "recorder %d: %s\n", i, w.last);
      _exit(rc || w.n ? 1 : 0);
    }
  }
  close(go[0]);
  double t0 = seconds();
  close(go[1]); /* everyone starts at once */
  for (int i = 0; i < RECORDERS; i++) {
    int status;
    ck_assert_int_eq(waitpid(kids[i], &status, 0), kids[i]);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "recorder %d failed", i);
  }
  fprintf(stderr, "64 recorders on a %d MB file: %.2f s\n", 250, seconds() - t0);
  cg_prime_set *s = load();
  ck_assert_uint_eq(cg_prime_count(s), 2 + RECORDERS);
  for (int i = 0; i < RECORDERS; i++) {
    cg_prime_record own = make_record(1000 + (uint32_t)i, 96);
    ck_assert_ptr_nonnull(prime_find(s, own.bytes, own.size));
    free_record(&own);
  }
  cg_prime_record shared = make_record(999, 80);
  ck_assert_uint_eq(prime_find(s, shared.bytes, shared.size)->hits, RECORDERS);
  free_record(&shared);
  cg_prime_free(s);
}
END_TEST

/* A child that takes the exclusive lock and keeps it for hold_s seconds,
 * touching the file's time every second when busy (work moving through). */
static pid_t holder(int hold_s, bool busy, int ready[2]) {
  pid_t p = fork();
  if (p == 0) {
    int fd = open(path, O_RDWR);
    if (fd < 0 || flock(fd, LOCK_EX)) _exit(2);
    if (write(ready[1], "x", 1) != 1) _exit(2);
    for (int s = 0; s < hold_s; s++) {
      sleep(1);
      if (busy) futimens(fd, NULL);
    }
    _exit(0);
  }
  char c;
  ck_assert_int_eq(read(ready[0], &c, 1), 1);
  return p;
}

START_TEST(a_waiter_gives_up_on_a_stuck_holder_and_names_it) {
  cg_prime_record a = make_record(50, 64), b = make_record(51, 64);
  ck_assert_int_eq(cg_prime_append(path, &a, CG_PRIME_DEFAULT_MAX_BYTES, NULL, NULL), 0);
  int ready[2];
  ck_assert_int_eq(pipe(ready), 0);
  pid_t h = holder(30, false, ready);
  warnings w = {0};
  double t0 = seconds();
  ck_assert_int_eq(cg_prime_append(path, &b, CG_PRIME_DEFAULT_MAX_BYTES, collect_warning, &w), -1);
  double t = seconds() - t0;
  kill(h, SIGKILL);
  waitpid(h, NULL, 0);
  ck_assert_int_eq(w.n, 1);
  char want[128];
  snprintf(want, sizeof want, "process %d has held its lock for 10 s without changing it", (int)h);
  ck_assert_msg(strstr(w.last, want), "warning: %s", w.last);
  ck_assert_msg(t >= 9.5 && t < 20, "gave up after %.1f s", t);
  free_record(&a);
  free_record(&b);
}
END_TEST

START_TEST(a_waiter_waits_on_while_the_queue_moves) {
  cg_prime_record a = make_record(60, 64), b = make_record(61, 64);
  ck_assert_int_eq(cg_prime_append(path, &a, CG_PRIME_DEFAULT_MAX_BYTES, NULL, NULL), 0);
  int ready[2];
  ck_assert_int_eq(pipe(ready), 0);
  pid_t h = holder(13, true, ready); /* longer than the stall limit, but never still */
  warnings w = {0};
  ck_assert_int_eq(cg_prime_append(path, &b, CG_PRIME_DEFAULT_MAX_BYTES, collect_warning, &w), 0);
  ck_assert_int_eq(w.n, 0);
  waitpid(h, NULL, 0);
  cg_prime_set *s = load();
  ck_assert_ptr_nonnull(prime_find(s, b.bytes, b.size));
  cg_prime_free(s);
  free_record(&a);
  free_record(&b);
}
END_TEST

int main(void) {
  Suite *su = suite_create("prime_scale");
  TCase *t = tcase_create("scale");
  tcase_add_checked_fixture(t, setup, teardown);
  tcase_set_timeout(t, 240);
  tcase_add_test(t, a_loaded_file_holds_no_lock);
  tcase_add_test(t, an_appender_follows_other_writers_and_rewrites);
  tcase_add_test(t, a_crafted_file_is_walked_in_linear_time);
  tcase_add_test(t, damage_in_the_middle_costs_no_record_after_it);
  tcase_add_test(t, sixty_four_recorders_on_a_256_MB_file_lose_nothing);
  tcase_add_test(t, a_waiter_gives_up_on_a_stuck_holder_and_names_it);
  tcase_add_test(t, a_waiter_waits_on_while_the_queue_moves);
  suite_add_tcase(su, t);
  return tk_check_run(su);
}
