/* The priming file (detect/prime/prime_file.c, detect/prime/prime_format.c) against what
 * production does to it: concurrent appenders, torn writes, corruption of any
 * byte, newer versions, foreign owners, symlinks, a size cap. */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <xxhash.h>

#include "capguard/prime_file.h"
#include "prime_records.h"
#include "check_run.h"

/* ---- helpers ---- */

static char dir[64], path[128];

static void setup(void) {
  make_test_dir(dir, sizeof dir, "cgprime");
  snprintf(path, sizeof path, "%s/cache/capguard/prime.cgp", dir);
}

/* The directories of path, for tests that plant something there. */
static void make_dirs(void) {
  char d[160];
  snprintf(d, sizeof d, "%s/cache", dir);
  ck_assert_int_eq(mkdir(d, 0700), 0);
  snprintf(d, sizeof d, "%s/cache/capguard", dir);
  ck_assert_int_eq(mkdir(d, 0700), 0);
}

static void teardown(void) { remove_test_dir(dir); }

static int append(const cg_prime_record *r, warnings *w) {
  return cg_prime_append(path, r, CG_PRIME_DEFAULT_MAX_BYTES, collect_warning, w);
}

static uint8_t *read_file(const char *p, size_t *len) {
  FILE *f = fopen(p, "rb");
  ck_assert_ptr_nonnull(f);
  fseek(f, 0, SEEK_END);
  *len = (size_t)ftell(f);
  fseek(f, 0, SEEK_SET);
  uint8_t *b = malloc(*len ? *len : 1);
  ck_assert_uint_eq(fread(b, 1, *len, f), *len);
  fclose(f);
  return b;
}

static void write_file(const char *p, const uint8_t *b, size_t len) {
  int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  ck_assert_int_ge(fd, 0);
  ck_assert_int_eq(write(fd, b, len), (ssize_t)len);
  close(fd);
}

typedef struct {
  cg_prime_walk_entry e[2048];
  int n;
} walk_log;

static void log_entry(void *ctx, const cg_prime_walk_entry *e) {
  walk_log *l = ctx;
  ck_assert_int_lt(l->n, 2048);
  l->e[l->n++] = *e;
}

static int verify(walk_log *l) {
  memset(l, 0, sizeof *l);
  warnings w = {0};
  return cg_prime_verify(path, log_entry, NULL, l, collect_warning, &w);
}

static cg_prime_set *load_ok(warnings *w) {
  cg_prime_set *s = NULL;
  ck_assert_int_eq(cg_prime_load(path, &s, collect_warning, w), 0);
  ck_assert_ptr_nonnull(s);
  return s;
}

/* Three images A, B, C appended in that order; returns file bytes and the offsets. */
static uint8_t *three_records(cg_prime_record rec[3], size_t *len, uint64_t off[3]) {
  warnings w = {0};
  for (int i = 0; i < 3; i++) {
    rec[i] = make_record(100 + i, 40 + 13 * i);
    ck_assert_int_eq(append(&rec[i], &w), 0);
  }
  ck_assert_int_eq(w.n, 0);
  walk_log l;
  ck_assert_int_eq(verify(&l), 0);
  ck_assert_int_eq(l.n, 3);
  for (int i = 0; i < 3; i++) off[i] = l.e[i].offset;
  return read_file(path, len);
}

/* ---- round trip ---- */

START_TEST(round_trip_keeps_every_field) {
  umask(0);
  cg_prime_record r[3];
  for (int i = 0; i < 3; i++) {
    r[i] = make_record(i, 100 + 37 * i);
    r[i].hits = 3 + i;
    ck_assert_int_eq(append(&r[i], &(warnings){0}), 0);
  }
  struct stat st;
  ck_assert_int_eq(stat(path, &st), 0);
  ck_assert_uint_eq(st.st_mode & 0777, 0600);
  char d[160];
  snprintf(d, sizeof d, "%s/cache/capguard", dir);
  ck_assert_int_eq(stat(d, &st), 0);
  ck_assert_uint_eq(st.st_mode & 0777, 0700);

  warnings w = {0};
  cg_prime_set *s = load_ok(&w);
  ck_assert_int_eq(w.n, 0);
  ck_assert_uint_eq(cg_prime_count(s), 3);
  for (int i = 0; i < 3; i++) {
    const cg_prime_record *g = cg_prime_get(s, (size_t)i);
    ck_assert_int_eq(g->kind, r[i].kind);
    ck_assert_uint_eq(g->sm_arch, r[i].sm_arch);
    ck_assert_uint_eq(g->size, r[i].size);
    ck_assert_mem_eq(g->bytes, r[i].bytes, r[i].size);
    ck_assert(g->hash.hi == r[i].hash.hi && g->hash.lo == r[i].hash.lo);
    ck_assert_uint_eq(g->n_kernels, 2);
    ck_assert_uint_eq(g->names_len, 15);
    ck_assert_mem_eq(g->kernel_names, "kern_a\0kern_bb\0", 15);
    ck_assert_uint_eq(g->hits, r[i].hits);
    ck_assert_uint_eq(g->first_ns, r[i].first_ns);
    ck_assert_uint_eq(g->last_ns, r[i].last_ns);
    /* find by bytes in another buffer */
    uint8_t *copy = malloc(r[i].size);
    memcpy(copy, r[i].bytes, r[i].size);
    ck_assert_ptr_eq(prime_find(s, copy, r[i].size), g);
    copy[r[i].size / 2] ^= 1;
    ck_assert_ptr_null(prime_find(s, copy, r[i].size));
    ck_assert_ptr_null(prime_find(s, r[i].bytes, r[i].size - 1));
    free(copy);
  }
  ck_assert_ptr_null(cg_prime_get(s, 3));
  cg_prime_free(s);

  /* Needed again: same record, hits added, last time moved, first kept. */
  cg_prime_record again = r[1];
  again.hits = 2;
  again.first_ns = 5;
  again.last_ns = 99999;
  ck_assert_int_eq(append(&again, &w), 0);
  s = load_ok(&w);
  ck_assert_uint_eq(cg_prime_count(s), 3);
  const cg_prime_record *g = prime_find(s, r[1].bytes, r[1].size);
  ck_assert_ptr_nonnull(g);
  ck_assert_uint_eq(g->hits, r[1].hits + 2);
  ck_assert_uint_eq(g->last_ns, 99999);
  ck_assert_uint_eq(g->first_ns, r[1].first_ns);
  cg_prime_free(s);
  for (int i = 0; i < 3; i++) free_record(&r[i]);
}
END_TEST

START_TEST(missing_file_loads_empty) {
  warnings w = {0};
  cg_prime_set *s = load_ok(&w);
  ck_assert_uint_eq(cg_prime_count(s), 0);
  ck_assert_int_eq(w.n, 0);
  ck_assert_ptr_null(prime_find(s, "x", 1));
  cg_prime_free(s);
  ck_assert_int_eq(access(path, F_OK), -1); /* loading created nothing */
}
END_TEST

START_TEST(append_refuses_inconsistent_record) {
  cg_prime_record r = make_record(1, 64);
  r.hash.lo ^= 1;
  warnings w = {0};
  ck_assert_int_eq(append(&r, &w), -1);
  ck_assert_int_eq(w.n, 1);
  r.hash.lo ^= 1;
  r.n_kernels = 3;
  ck_assert_int_eq(append(&r, &w), -1);
  ck_assert_int_eq(w.n, 2);
  ck_assert_int_eq(access(path, F_OK), -1);
  free_record(&r);
}
END_TEST

/* ---- concurrency ---- */

enum { WRITERS = 8, ROUNDS = 100, SHARED = 5, OWN = 5 };

static uint32_t shared_seed(int j) { return 1000 + (uint32_t)j; }
static uint32_t own_seed(int w, int j) { return 2000 + (uint32_t)(w * 100 + j); }

/* Children block on the pipe until the parent closes it, so all start at once. */
static void wait_for_start(int fds[2]) {
  char c;
  close(fds[1]);
  if (read(fds[0], &c, 1) != 0) _exit(3);
}

static void writer(int id, int start[2]) {
  wait_for_start(start);
  for (int k = 0; k < ROUNDS; k++) {
    cg_prime_record a = make_record(shared_seed(k % SHARED), 200 + (k % SHARED) * 8);
    cg_prime_record b = make_record(own_seed(id, k % OWN), 64 + (k % OWN));
    int rc = cg_prime_append(path, &a, CG_PRIME_DEFAULT_MAX_BYTES, NULL, NULL) |
             cg_prime_append(path, &b, CG_PRIME_DEFAULT_MAX_BYTES, NULL, NULL);
    free_record(&a);
    free_record(&b);
    if (rc) _exit(1);
  }
  _exit(0);
}

START_TEST(eight_concurrent_writers_lose_nothing) {
  pid_t kids[WRITERS];
  int start[2];
  ck_assert_int_eq(pipe(start), 0);
  for (int i = 0; i < WRITERS; i++) {
    kids[i] = fork();
    ck_assert_int_ge(kids[i], 0);
    if (kids[i] == 0) writer(i, start);
  }
  close(start[0]);
  close(start[1]);
  for (int i = 0; i < WRITERS; i++) {
    int status;
    ck_assert_int_eq(waitpid(kids[i], &status, 0), kids[i]);
    ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  /* The raw file: every distinct image stored exactly once, no damage. */
  static walk_log l;
  ck_assert_int_eq(verify(&l), 0);
  int images = 0, hits = 0;
  for (int i = 0; i < l.n; i++) {
    ck_assert_int_eq(l.e[i].state, CG_PRIME_REC_OK);
    images += l.e[i].type == CG_PRIME_REC_IMAGE;
    hits += l.e[i].type == CG_PRIME_REC_HIT;
  }
  const int distinct = SHARED + WRITERS * OWN;
  ck_assert_int_eq(images, distinct);
  ck_assert_int_eq(images + hits, WRITERS * ROUNDS * 2);

  warnings w = {0};
  cg_prime_set *s = load_ok(&w);
  ck_assert_int_eq(w.n, 0);
  ck_assert_uint_eq(cg_prime_count(s), (size_t)distinct);
  uint64_t total = 0;
  for (int j = 0; j < SHARED; j++) {
    cg_prime_record a = make_record(shared_seed(j), 200 + j * 8);
    const cg_prime_record *g = prime_find(s, a.bytes, a.size);
    ck_assert_ptr_nonnull(g);
    ck_assert_uint_eq(g->hits, WRITERS * ROUNDS / SHARED);
    total += g->hits;
    free_record(&a);
  }
  for (int i = 0; i < WRITERS; i++)
    for (int j = 0; j < OWN; j++) {
      cg_prime_record b = make_record(own_seed(i, j), 64 + j);
      const cg_prime_record *g = prime_find(s, b.bytes, b.size);
      ck_assert_ptr_nonnull(g);
      ck_assert_uint_eq(g->hits, ROUNDS / OWN);
      total += g->hits;
      free_record(&b);
    }
  ck_assert_uint_eq(total, WRITERS * ROUNDS * 2);
  cg_prime_free(s);
}
END_TEST

static void print_warning(void *ctx, const char *line) {
  (void)ctx;
  fprintf(stderr, "%s\n", line);
}

/* Rewrites (what prune and rm do) racing appenders: an append that waited on
 * the old file's lock must land in the new file. */
static int keep_all(void *ctx, const cg_prime_set *cur, bool *keep) {
  (void)ctx, (void)cur, (void)keep;
  return 0;
}

START_TEST(rewrite_racing_appenders_loses_nothing) {
  cg_prime_record first = make_record(1, 50);
  ck_assert_int_eq(append(&first, &(warnings){0}), 0);
  pid_t kids[4];
  int start[2];
  ck_assert_int_eq(pipe(start), 0);
  for (int i = 0; i < 4; i++) {
    kids[i] = fork();
    if (kids[i] == 0) {
      wait_for_start(start);
      for (int k = 0; k < 30; k++) {
        cg_prime_record r = make_record(own_seed(i, k), 80);
        if (cg_prime_append(path, &r, CG_PRIME_DEFAULT_MAX_BYTES, print_warning, NULL)) _exit(1);
        free_record(&r);
      }
      _exit(0);
    }
  }
  close(start[0]);
  close(start[1]);
  for (int k = 0; k < 20; k++) ck_assert_int_eq(cg_prime_rewrite(path, keep_all, NULL, NULL, 0, NULL, NULL), 0);
  for (int i = 0; i < 4; i++) {
    int status;
    waitpid(kids[i], &status, 0);
    ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  warnings w = {0};
  cg_prime_set *s = load_ok(&w);
  ck_assert_uint_eq(cg_prime_count(s), 1 + 4 * 30);
  cg_prime_free(s);
  free_record(&first);
}
END_TEST

/* ---- torn writes ---- */

START_TEST(torn_last_record_is_skipped_and_healed) {
  cg_prime_record rec[3];
  size_t len;
  uint64_t off[3];
  uint8_t *orig = three_records(rec, &len, off);
  cg_prime_record d = make_record(777, 33);
  for (size_t cut = off[2]; cut < len; cut++) {
    write_file(path, orig, cut);
    warnings w = {0};
    cg_prime_set *s = load_ok(&w);
    ck_assert_uint_eq(cg_prime_count(s), 2);
    ck_assert_ptr_nonnull(prime_find(s, rec[0].bytes, rec[0].size));
    ck_assert_ptr_nonnull(prime_find(s, rec[1].bytes, rec[1].size));
    ck_assert_int_eq(w.n, cut > off[2] ? 1 : 0);
    if (cut > off[2]) ck_assert_ptr_nonnull(strstr(w.last, "incomplete"));
    cg_prime_free(s);

    /* The next append drops the torn bytes and is itself intact. */
    ck_assert_int_eq(append(&d, &w), 0);
    w.n = 0;
    s = load_ok(&w);
    ck_assert_int_eq(w.n, 0);
    ck_assert_uint_eq(cg_prime_count(s), 3);
    ck_assert_ptr_nonnull(prime_find(s, d.bytes, d.size));
    cg_prime_free(s);
    walk_log l;
    ck_assert_int_eq(verify(&l), 0);
  }
  free(orig);
  free_record(&d);
  for (int i = 0; i < 3; i++) free_record(&rec[i]);
}
END_TEST

START_TEST(torn_header_is_skipped_and_healed) {
  cg_prime_record rec[3];
  size_t len;
  uint64_t off[3];
  uint8_t *orig = three_records(rec, &len, off);
  for (size_t cut = 1; cut < CG_PRIME_HEADER_BYTES; cut++) {
    write_file(path, orig, cut);
    warnings w = {0};
    cg_prime_set *s = load_ok(&w);
    ck_assert_uint_eq(cg_prime_count(s), 0);
    ck_assert_int_eq(w.n, 1);
    cg_prime_free(s);
    ck_assert_int_eq(append(&rec[0], &w), 0);
    s = load_ok(&w);
    ck_assert_uint_eq(cg_prime_count(s), 1);
    cg_prime_free(s);
  }
  free(orig);
  for (int i = 0; i < 3; i++) free_record(&rec[i]);
}
END_TEST

/* ---- corruption ---- */

static void corrupt_each_byte(uint8_t flip) {
  cg_prime_record rec[3];
  size_t len;
  uint64_t off[3];
  uint8_t *orig = three_records(rec, &len, off);
  uint8_t *bad = malloc(len);
  for (int victim = 1; victim <= 2; victim++) { /* the middle one and the last one */
    uint64_t end = victim == 2 ? len : off[victim + 1];
    for (uint64_t i = off[victim]; i < end; i++) {
      memcpy(bad, orig, len);
      bad[i] ^= flip;
      write_file(path, bad, len);
      warnings w = {0};
      cg_prime_set *s = load_ok(&w);
      ck_assert_msg(w.n == 1, "byte %llu of record %d: %d warnings", (unsigned long long)i,
                    victim, w.n);
      ck_assert_uint_eq(cg_prime_count(s), 2);
      for (int k = 0; k < 3; k++) {
        const cg_prime_record *g = prime_find(s, rec[k].bytes, rec[k].size);
        if (k == victim) ck_assert_ptr_null(g);
        else ck_assert_ptr_nonnull(g);
      }
      cg_prime_free(s);
      walk_log l;
      ck_assert_int_eq(verify(&l), 1);
    }
  }
  free(bad);
  free(orig);
  for (int i = 0; i < 3; i++) free_record(&rec[i]);
}

START_TEST(corrupt_record_byte_is_skipped) { corrupt_each_byte(0xff); }
END_TEST
START_TEST(corrupt_record_bit_is_skipped) { corrupt_each_byte(0x01); }
END_TEST

START_TEST(corrupt_header_byte_refuses_file_untouched) {
  cg_prime_record rec[3];
  size_t len;
  uint64_t off[3];
  uint8_t *orig = three_records(rec, &len, off);
  uint8_t *bad = malloc(len);
  for (size_t i = 0; i < CG_PRIME_HEADER_BYTES; i++) {
    memcpy(bad, orig, len);
    bad[i] ^= 0x01;
    write_file(path, bad, len);
    warnings w = {0};
    cg_prime_set *s = (cg_prime_set *)1;
    ck_assert_int_eq(cg_prime_load(path, &s, collect_warning, &w), -1);
    ck_assert_ptr_null(s);
    ck_assert_int_eq(w.n, 1);
    ck_assert_ptr_nonnull(strstr(w.last, "left untouched"));
    ck_assert_int_eq(append(&rec[0], &w), -1);
    size_t now_len;
    uint8_t *now = read_file(path, &now_len);
    ck_assert_uint_eq(now_len, len);
    ck_assert_mem_eq(now, bad, len);
    free(now);
  }
  free(bad);
  free(orig);
  for (int i = 0; i < 3; i++) free_record(&rec[i]);
}
END_TEST

START_TEST(corrupt_hit_record_loses_only_the_hit) {
  cg_prime_record a = make_record(5, 90), b = make_record(6, 70);
  warnings w = {0};
  ck_assert_int_eq(append(&a, &w), 0);
  a.hits = 4;
  ck_assert_int_eq(append(&a, &w), 0); /* a hit record */
  ck_assert_int_eq(append(&b, &w), 0);
  walk_log l;
  ck_assert_int_eq(verify(&l), 0);
  ck_assert_int_eq(l.n, 3);
  ck_assert_uint_eq(l.e[1].type, CG_PRIME_REC_HIT);
  size_t len;
  uint8_t *orig = read_file(path, &len), *bad = malloc(len);
  for (uint64_t i = l.e[1].offset; i < l.e[1].offset + l.e[1].length; i++) {
    memcpy(bad, orig, len);
    bad[i] ^= 0x80;
    write_file(path, bad, len);
    w.n = 0;
    cg_prime_set *s = load_ok(&w);
    ck_assert_int_eq(w.n, 1);
    ck_assert_uint_eq(cg_prime_count(s), 2);
    ck_assert_uint_eq(prime_find(s, a.bytes, a.size)->hits, 1);
    ck_assert_ptr_nonnull(prime_find(s, b.bytes, b.size));
    cg_prime_free(s);
  }
  free(bad);
  free(orig);
  free_record(&a);
  free_record(&b);
}
END_TEST

START_TEST(unknown_record_type_is_ignored_with_warning) {
  cg_prime_record rec[3];
  size_t len;
  uint64_t off[3];
  uint8_t *orig = three_records(rec, &len, off);
  /* A well-formed record of a type this version does not know, at the end. */
  uint8_t *f = malloc(len + 32);
  memcpy(f, orig, len);
  uint8_t *r = f + len;
  memset(r, 0, 32);
  memcpy(r, "CGPR", 4);
  r[4] = 7;
  r[8] = 32;
  uint64_t sum = XXH3_64bits(r, 24);
  for (int i = 0; i < 8; i++) r[24 + i] = (uint8_t)(sum >> (8 * i));
  write_file(path, f, len + 32);
  warnings w = {0};
  cg_prime_set *s = load_ok(&w);
  ck_assert_int_eq(w.n, 1);
  ck_assert_ptr_nonnull(strstr(w.last, "type 7"));
  ck_assert_uint_eq(cg_prime_count(s), 3);
  cg_prime_free(s);
  walk_log l;
  ck_assert_int_eq(verify(&l), 0);
  ck_assert_int_eq(l.n, 4);
  ck_assert_uint_eq(l.e[3].type, 7);
  free(f);
  free(orig);
  for (int i = 0; i < 3; i++) free_record(&rec[i]);
}
END_TEST

/* Records with a valid checksum but a length too short for their type, at the
 * very end of the file: reading their fields would run past the buffer (the
 * fuzzer found this; ASan builds of this test catch a regression). */
START_TEST(short_records_with_valid_checksums_are_rejected) {
  cg_prime_record rec[3];
  size_t len;
  uint64_t off[3];
  uint8_t *orig = three_records(rec, &len, off);
  for (unsigned type = 1; type <= 2; type++)
    for (unsigned l = 24; l < (type == 1 ? 96u : 64u); l += 8) {
      uint8_t *f = malloc(len + l);
      memcpy(f, orig, len);
      uint8_t *r = f + len;
      memset(r, 0, l);
      memcpy(r, "CGPR", 4);
      r[4] = (uint8_t)type;
      r[8] = (uint8_t)l;
      uint64_t sum = XXH3_64bits(r, l - 8);
      for (int i = 0; i < 8; i++) r[l - 8 + i] = (uint8_t)(sum >> (8 * i));
      write_file(path, f, len + l);
      warnings w = {0};
      cg_prime_set *s = load_ok(&w);
      ck_assert_msg(w.n == 1, "type %u length %u: %d warnings", type, l, w.n);
      ck_assert_uint_eq(cg_prime_count(s), 3);
      cg_prime_free(s);
      free(f);
    }
  free(orig);
  for (int i = 0; i < 3; i++) free_record(&rec[i]);
}
END_TEST

START_TEST(duplicate_images_fold_on_load) {
  cg_prime_record rec[3];
  size_t len;
  uint64_t off[3];
  uint8_t *orig = three_records(rec, &len, off);
  /* Append record B's bytes again, as a hand-made concatenation would. */
  uint64_t blen = off[2] - off[1];
  uint8_t *f = malloc(len + blen);
  memcpy(f, orig, len);
  memcpy(f + len, orig + off[1], blen);
  write_file(path, f, len + blen);
  warnings w = {0};
  cg_prime_set *s = load_ok(&w);
  ck_assert_uint_eq(cg_prime_count(s), 3);
  ck_assert_uint_eq(prime_find(s, rec[1].bytes, rec[1].size)->hits, 2 * rec[1].hits);
  cg_prime_free(s);
  free(f);
  free(orig);
  for (int i = 0; i < 3; i++) free_record(&rec[i]);
}
END_TEST

/* ---- refusals ---- */

static void assert_refused_untouched(const char *what) {
  size_t len0;
  uint8_t *before = read_file(path, &len0);
  warnings w = {0};
  cg_prime_set *s = (cg_prime_set *)1;
  ck_assert_int_eq(cg_prime_load(path, &s, collect_warning, &w), -1);
  ck_assert_ptr_null(s);
  ck_assert_int_eq(w.n, 1);
  ck_assert_msg(strstr(w.last, what) != NULL, "want '%s' in: %s", what, w.last);
  ck_assert_ptr_nonnull(strstr(w.last, path));
  cg_prime_record r = make_record(42, 30);
  ck_assert_int_eq(append(&r, &w), -1);
  ck_assert_int_eq(cg_prime_rewrite(path, NULL, NULL, NULL, 0, collect_warning, &w), -1);
  ck_assert_int_eq(cg_prime_verify(path, NULL, NULL, NULL, collect_warning, &w), -1);
  ck_assert_int_eq(w.n, 4);
  size_t len1;
  uint8_t *after = read_file(path, &len1);
  ck_assert_uint_eq(len0, len1);
  ck_assert_mem_eq(before, after, len0);
  free(before);
  free(after);
  free_record(&r);
}

START_TEST(newer_version_refused_untouched) {
  cg_prime_record rec[3];
  size_t len;
  uint64_t off[3];
  uint8_t *f = three_records(rec, &len, off);
  f[8] = 3; /* version 3: newer than this capguard reads */
  write_file(path, f, len);
  assert_refused_untouched("newer capguard");
  write_file(path, f, 12); /* even a short one */
  assert_refused_untouched("newer capguard");
  free(f);
  for (int i = 0; i < 3; i++) free_record(&rec[i]);
}
END_TEST

START_TEST(foreign_file_refused_untouched) {
  cg_prime_record r = make_record(1, 20);
  ck_assert_int_eq(append(&r, &(warnings){0}), 0);
  write_file(path, (const uint8_t *)"#!/bin/sh\necho hello\n", 21);
  assert_refused_untouched("not a capguard priming file");
  free_record(&r);
}
END_TEST

START_TEST(other_owner_refused) {
  cg_prime_record r = make_record(1, 20);
  ck_assert_int_eq(append(&r, &(warnings){0}), 0);
  if (geteuid() != 0) {
    /* Not root, so no chown: a file that is surely root's is trusted as
     * ssh trusts it (owner root), and refused only for what it holds. */
    warnings w = {0};
    cg_prime_set *s;
    ck_assert_int_eq(cg_prime_load("/etc/passwd", &s, collect_warning, &w), -1);
    ck_assert_ptr_null(strstr(w.last, "owned by uid"));
    ck_assert_ptr_nonnull(strstr(w.last, "not a capguard priming file"));
    free_record(&r);
    return;
  }
  ck_assert_int_eq(chown(path, 65534, 65534), 0);
  assert_refused_untouched("owned by uid 65534");
  free_record(&r);
}
END_TEST

START_TEST(group_or_other_writable_refused) {
  cg_prime_record r = make_record(1, 20);
  ck_assert_int_eq(append(&r, &(warnings){0}), 0);
  ck_assert_int_eq(chmod(path, 0620), 0);
  assert_refused_untouched("writable by group or others");
  ck_assert_int_eq(chmod(path, 0602), 0);
  assert_refused_untouched("chmod go-w");
  ck_assert_int_eq(chmod(path, 0644), 0); /* readable by others is fine */
  warnings w = {0};
  cg_prime_free(load_ok(&w));
  ck_assert_int_eq(w.n, 0);
  free_record(&r);
}
END_TEST

START_TEST(symlink_refused_and_not_followed) {
  char target[160];
  make_dirs();
  /* A dangling link: creating through it would make target. */
  snprintf(target, sizeof target, "%s/target.cgp", dir);
  ck_assert_int_eq(symlink(target, path), 0);
  warnings w = {0};
  cg_prime_set *s;
  ck_assert_int_eq(cg_prime_load(path, &s, collect_warning, &w), -1);
  ck_assert_ptr_nonnull(strstr(w.last, "symbolic link"));
  cg_prime_record r = make_record(9, 25);
  ck_assert_int_eq(append(&r, &w), -1);
  ck_assert_ptr_nonnull(strstr(w.last, "symbolic link"));
  ck_assert_int_eq(access(target, F_OK), -1);
  /* A link to a real priming file is refused too, and the file untouched. */
  char real[160];
  snprintf(real, sizeof real, "%s/real.cgp", dir);
  ck_assert_int_eq(cg_prime_append(real, &r, CG_PRIME_DEFAULT_MAX_BYTES, NULL, NULL), 0);
  size_t len0;
  uint8_t *before = read_file(real, &len0);
  ck_assert_int_eq(unlink(path), 0);
  ck_assert_int_eq(symlink(real, path), 0);
  ck_assert_int_eq(cg_prime_load(path, &s, collect_warning, &w), -1);
  ck_assert_int_eq(append(&r, &w), -1);
  size_t len1;
  uint8_t *after = read_file(real, &len1);
  ck_assert_uint_eq(len0, len1);
  ck_assert_mem_eq(before, after, len0);
  free(before);
  free(after);
  free_record(&r);
}
END_TEST

START_TEST(fifo_refused_without_blocking) {
  make_dirs();
  ck_assert_int_eq(mkfifo(path, 0600), 0);
  warnings w = {0};
  cg_prime_set *s;
  ck_assert_int_eq(cg_prime_load(path, &s, collect_warning, &w), -1);
  ck_assert_ptr_nonnull(strstr(w.last, "not a regular file"));
}
END_TEST

/* ---- size cap ---- */

START_TEST(size_cap_is_never_exceeded) {
  cg_prime_record a = make_record(1, 300), b = make_record(2, 300);
  uint64_t one = CG_PRIME_HEADER_BYTES + cg_prime_record_disk_size(&a);
  uint64_t max = one + cg_prime_record_disk_size(&b) - 1;
  warnings w = {0};
  ck_assert_int_eq(cg_prime_append(path, &a, max, collect_warning, &w), 0);
  ck_assert_int_eq(cg_prime_append(path, &b, max, collect_warning, &w), -1);
  ck_assert_int_eq(w.n, 1);
  ck_assert_ptr_nonnull(strstr(w.last, "CAPGUARD_PRIME_MAX"));
  struct stat st;
  ck_assert_int_eq(stat(path, &st), 0);
  ck_assert_uint_eq((uint64_t)st.st_size, one);
  /* A hit (64 bytes) still fits and counts. */
  ck_assert_int_eq(cg_prime_append(path, &a, max, collect_warning, &w), 0);
  cg_prime_set *s = load_ok(&w);
  ck_assert_uint_eq(prime_find(s, a.bytes, a.size)->hits, 2);
  ck_assert_ptr_null(prime_find(s, b.bytes, b.size));
  cg_prime_free(s);
  /* A file already over a lowered cap is left alone. */
  w.n = 0;
  ck_assert_int_eq(cg_prime_append(path, &b, 100, collect_warning, &w), -1);
  ck_assert_int_eq(w.n, 1);
  ck_assert_ptr_nonnull(strstr(w.last, "over the 100-byte cap"));
  ck_assert_int_eq(stat(path, &st), 0);
  ck_assert_uint_le((uint64_t)st.st_size, max);
  free_record(&a);
  free_record(&b);
}
END_TEST

/* ---- rewrite and verify ---- */

static int drop_second(void *ctx, const cg_prime_set *cur, bool *keep) {
  *(size_t *)ctx = cg_prime_count(cur);
  keep[1] = false;
  return 0;
}

static int refuse(void *ctx, const cg_prime_set *cur, bool *keep) {
  (void)ctx, (void)cur, (void)keep;
  return -1;
}

START_TEST(rewrite_keeps_subset_folds_hits_drops_damage) {
  cg_prime_record rec[3];
  size_t len;
  uint64_t off[3];
  uint8_t *f = three_records(rec, &len, off);
  ck_assert_int_eq(append(&rec[0], &(warnings){0}), 0); /* a hit record */
  free(f);
  f = read_file(path, &len);
  f[off[2] + 90] ^= 0x40; /* damage C */
  write_file(path, f, len);

  ck_assert_int_eq(cg_prime_rewrite(path, refuse, NULL, NULL, 0, NULL, NULL), -1);
  size_t len2;
  uint8_t *same = read_file(path, &len2);
  ck_assert_uint_eq(len2, len);
  ck_assert_mem_eq(same, f, len);
  free(same);

  size_t seen = 0;
  warnings w = {0};
  ck_assert_int_eq(cg_prime_rewrite(path, drop_second, &seen, NULL, 0, collect_warning, &w), 0);
  ck_assert_uint_eq(seen, 2); /* C was damaged, so select saw A and B */
  ck_assert_int_eq(w.n, 1);   /* ...and the damage was reported */
  walk_log l;
  ck_assert_int_eq(verify(&l), 0);
  ck_assert_int_eq(l.n, 1); /* only A, its hit folded in */
  ck_assert_uint_eq(l.e[0].type, CG_PRIME_REC_IMAGE);
  struct stat st;
  ck_assert_int_eq(stat(path, &st), 0);
  ck_assert_uint_eq(st.st_mode & 0777, 0600);
  w.n = 0;
  cg_prime_set *s = load_ok(&w);
  ck_assert_int_eq(w.n, 0);
  ck_assert_uint_eq(cg_prime_count(s), 1);
  ck_assert_uint_eq(cg_prime_get(s, 0)->hits, 2);
  cg_prime_free(s);
  free(f);
  for (int i = 0; i < 3; i++) free_record(&rec[i]);
}
END_TEST

START_TEST(rewrite_merges_sets_by_bytes) {
  char other[160];
  snprintf(other, sizeof other, "%s/other.cgp", dir);
  cg_prime_record a = make_record(1, 100), b = make_record(2, 100), c = make_record(3, 100);
  ck_assert_int_eq(append(&a, &(warnings){0}), 0);
  ck_assert_int_eq(append(&b, &(warnings){0}), 0);
  a.hits = 5;
  a.first_ns = 1;
  a.last_ns = 1u << 30;
  ck_assert_int_eq(cg_prime_append(other, &a, CG_PRIME_DEFAULT_MAX_BYTES, NULL, NULL), 0);
  ck_assert_int_eq(cg_prime_append(other, &c, CG_PRIME_DEFAULT_MAX_BYTES, NULL, NULL), 0);
  cg_prime_set *in;
  ck_assert_int_eq(cg_prime_load(other, &in, NULL, NULL), 0);
  const cg_prime_set *add[] = {in, in}; /* the same set twice: still once each */
  ck_assert_int_eq(cg_prime_rewrite(path, NULL, NULL, add, 2, NULL, NULL), 0);
  cg_prime_free(in);
  warnings w = {0};
  cg_prime_set *s = load_ok(&w);
  ck_assert_uint_eq(cg_prime_count(s), 3);
  const cg_prime_record *g = prime_find(s, a.bytes, a.size);
  ck_assert_uint_eq(g->hits, 1 + 5 + 5);
  ck_assert_uint_eq(g->first_ns, 1);
  ck_assert_uint_eq(g->last_ns, 1u << 30);
  ck_assert_uint_eq(prime_find(s, c.bytes, c.size)->hits, 2);
  cg_prime_free(s);
  /* Into a file that does not exist yet. */
  char fresh[160];
  snprintf(fresh, sizeof fresh, "%s/new/dir/fresh.cgp", dir);
  ck_assert_int_eq(cg_prime_load(path, &in, NULL, NULL), 0);
  const cg_prime_set *one[] = {in};
  ck_assert_int_eq(cg_prime_rewrite(fresh, NULL, NULL, one, 1, NULL, NULL), 0);
  ck_assert_int_eq(cg_prime_load(fresh, &s, NULL, NULL), 0);
  ck_assert_uint_eq(cg_prime_count(s), 3);
  cg_prime_free(s);
  cg_prime_free(in);
  free_record(&a);
  free_record(&b);
  free_record(&c);
}
END_TEST


/* ---- loads records: how many loads of one image a process needed ---- */

static void loads_of(const cg_prime_record *r, uint32_t *m, uint32_t *l) {
  warnings w = {0};
  cg_prime_set *s = load_ok(&w);
  ck_assert_int_eq(w.n, 0);
  const cg_prime_record *g = prime_find(s, r->bytes, r->size);
  ck_assert_ptr_nonnull(g);
  *m = g->module_loads;
  *l = g->library_loads;
  cg_prime_free(s);
}

START_TEST(version1_file_reads_as_one_module_load) {
  cg_prime_record a = make_record(7, 64);
  ck_assert_int_eq(append(&a, &(warnings){0}), 0);
  walk_log l;
  ck_assert_int_eq(verify(&l), 0);
  ck_assert_int_eq(l.n, 1); /* no loads record for the default: version-1 readers see nothing new */
  uint32_t m, lib;
  loads_of(&a, &m, &lib);
  ck_assert_uint_eq(m, 1);
  ck_assert_uint_eq(lib, 0);
  free_record(&a);
}
END_TEST

START_TEST(loads_grow_to_the_most_one_process_needed) {
  cg_prime_record a = make_record(8, 64);
  a.module_loads = 2;
  ck_assert_int_eq(append(&a, &(warnings){0}), 0);
  uint32_t m, lib;
  loads_of(&a, &m, &lib);
  ck_assert_uint_eq(m, 2);
  ck_assert_uint_eq(lib, 0);
  /* Fewer loads later change nothing and write no loads record. */
  a.module_loads = 1;
  ck_assert_int_eq(append(&a, &(warnings){0}), 0);
  walk_log l;
  ck_assert_int_eq(verify(&l), 0);
  ck_assert_int_eq(l.n, 3); /* image, loads, hit */
  ck_assert_uint_eq(l.e[1].type, CG_PRIME_REC_LOADS);
  ck_assert_uint_eq(l.e[2].type, CG_PRIME_REC_HIT);
  loads_of(&a, &m, &lib);
  ck_assert_uint_eq(m, 2);
  /* More loads, and as a library too: both kept, the larger wins. */
  a.module_loads = 3;
  a.library_loads = 0;
  ck_assert_int_eq(append(&a, &(warnings){0}), 0);
  a.module_loads = 0;
  a.library_loads = 2;
  ck_assert_int_eq(append(&a, &(warnings){0}), 0);
  loads_of(&a, &m, &lib);
  ck_assert_uint_eq(m, 3);
  ck_assert_uint_eq(lib, 2);
  warnings w = {0};
  cg_prime_set *s = load_ok(&w);
  ck_assert_uint_eq(cg_prime_get(s, 0)->hits, 4);
  cg_prime_free(s);
  free_record(&a);
}
END_TEST

START_TEST(find_with_a_known_hash_still_compares_bytes) {
  cg_prime_record a = make_record(12, 64), b = make_record(13, 64);
  ck_assert_int_eq(append(&a, &(warnings){0}), 0);
  warnings w = {0};
  cg_prime_set *s = load_ok(&w);
  ck_assert_ptr_eq(cg_prime_find_hashed(s, a.hash, a.bytes, a.size, NULL, 0), prime_find(s, a.bytes, a.size));
  ck_assert_ptr_nonnull(cg_prime_find_hashed(s, a.hash, a.bytes, a.size, NULL, 0));
  /* a's hash with other bytes of the same size: the bytes decide */
  ck_assert_ptr_null(cg_prime_find_hashed(s, a.hash, b.bytes, b.size, NULL, 0));
  ck_assert_ptr_null(cg_prime_find_hashed(s, b.hash, a.bytes, a.size, NULL, 0));
  cg_prime_free(s);
  free_record(&a);
  free_record(&b);
}
END_TEST

START_TEST(library_only_image_is_not_a_module_image) {
  cg_prime_record a = make_record(9, 80);
  a.library_loads = 1;
  ck_assert_int_eq(append(&a, &(warnings){0}), 0);
  uint32_t m, lib;
  loads_of(&a, &m, &lib);
  ck_assert_uint_eq(m, 0);
  ck_assert_uint_eq(lib, 1);
  free_record(&a);
}
END_TEST

START_TEST(damaged_loads_record_falls_back_to_the_default) {
  cg_prime_record a = make_record(10, 64);
  a.module_loads = 4;
  ck_assert_int_eq(append(&a, &(warnings){0}), 0);
  walk_log l;
  ck_assert_int_eq(verify(&l), 0);
  ck_assert_int_eq(l.n, 2);
  size_t len;
  uint8_t *f = read_file(path, &len);
  f[l.e[1].offset + 40] ^= 1; /* the module count, under the checksum */
  write_file(path, f, len);
  warnings w = {0};
  cg_prime_set *s = NULL;
  ck_assert_int_eq(cg_prime_load(path, &s, collect_warning, &w), 0);
  ck_assert_int_eq(w.n, 1);
  ck_assert_uint_eq(cg_prime_count(s), 1);
  ck_assert_uint_eq(cg_prime_get(s, 0)->module_loads, 1);
  cg_prime_free(s);
  free(f);
  free_record(&a);
}
END_TEST

START_TEST(rewrite_and_merge_keep_the_largest_loads) {
  char other[160];
  snprintf(other, sizeof other, "%s/other.cgp", dir);
  cg_prime_record a = make_record(11, 64), b = make_record(12, 64);
  a.module_loads = 3;
  ck_assert_int_eq(append(&a, &(warnings){0}), 0);
  b.library_loads = 1;
  ck_assert_int_eq(append(&b, &(warnings){0}), 0);
  a.module_loads = 2; /* the other file: fewer loads of a, more of b */
  a.library_loads = 1;
  ck_assert_int_eq(cg_prime_append(other, &a, CG_PRIME_DEFAULT_MAX_BYTES, NULL, NULL), 0);
  b.library_loads = 5;
  ck_assert_int_eq(cg_prime_append(other, &b, CG_PRIME_DEFAULT_MAX_BYTES, NULL, NULL), 0);
  cg_prime_set *in;
  ck_assert_int_eq(cg_prime_load(other, &in, NULL, NULL), 0);
  const cg_prime_set *add[] = {in};
  ck_assert_int_eq(cg_prime_rewrite(path, NULL, NULL, add, 1, NULL, NULL), 0);
  cg_prime_free(in);
  uint32_t m, lib;
  loads_of(&a, &m, &lib);
  ck_assert_uint_eq(m, 3);
  ck_assert_uint_eq(lib, 1);
  loads_of(&b, &m, &lib);
  ck_assert_uint_eq(m, 0);
  ck_assert_uint_eq(lib, 5);
  /* The rewritten file states the loads in records of its own. */
  walk_log l;
  ck_assert_int_eq(verify(&l), 0);
  ck_assert_int_eq(l.n, 4);
  ck_assert_uint_eq(l.e[1].type, CG_PRIME_REC_LOADS);
  ck_assert_uint_eq(l.e[3].type, CG_PRIME_REC_LOADS);
  free_record(&a);
  free_record(&b);
}
END_TEST

START_TEST(add_records_writes_a_batch) {
  cg_prime_record r[3];
  for (int i = 0; i < 3; i++) {
    r[i] = make_record(20 + i, 48 + i);
    r[i].module_loads = (uint32_t)i + 1;
  }
  ck_assert_int_eq(cg_prime_add_records(path, r, 3, NULL, NULL), 0);
  for (int i = 0; i < 3; i++) {
    uint32_t m, lib;
    loads_of(&r[i], &m, &lib);
    ck_assert_uint_eq(m, (uint32_t)i + 1);
  }
  cg_prime_record bad = r[0];
  bad.size -= 1; /* hash no longer matches */
  warnings w = {0};
  ck_assert_int_eq(cg_prime_add_records(path, &bad, 1, collect_warning, &w), -1);
  ck_assert_int_eq(w.n, 1);
  for (int i = 0; i < 3; i++) free_record(&r[i]);
}
END_TEST

START_TEST(verify_reports_offsets_and_states) {
  cg_prime_record rec[3];
  size_t len;
  uint64_t off[3];
  uint8_t *f = three_records(rec, &len, off);
  ck_assert_uint_eq(off[0], CG_PRIME_HEADER_BYTES);
  f[off[1] + 20] ^= 1;
  write_file(path, f, len); /* B damaged, C intact after it */
  walk_log l;
  ck_assert_int_eq(verify(&l), 1);
  ck_assert_int_eq(l.n, 3);
  ck_assert_int_eq(l.e[0].state, CG_PRIME_REC_OK);
  ck_assert_uint_eq(l.e[0].type, CG_PRIME_REC_IMAGE);
  ck_assert_int_eq(l.e[1].state, CG_PRIME_REC_DAMAGED);
  ck_assert_uint_eq(l.e[1].offset, off[1]);
  ck_assert_uint_eq(l.e[1].length, off[2] - off[1]);
  ck_assert_ptr_nonnull(l.e[1].why);
  ck_assert_int_eq(l.e[2].state, CG_PRIME_REC_OK);
  ck_assert_uint_eq(l.e[2].offset, off[2]);
  /* With C torn as well, nothing intact follows B: one torn range from B on. */
  write_file(path, f, len - 3);
  ck_assert_int_eq(verify(&l), 1);
  ck_assert_int_eq(l.n, 2);
  ck_assert_int_eq(l.e[1].state, CG_PRIME_REC_TORN);
  ck_assert_uint_eq(l.e[1].offset, off[1]);
  ck_assert_uint_eq(l.e[1].length, len - 3 - off[1]);
  f[off[1] + 20] ^= 1; /* only C torn */
  write_file(path, f, len - 3);
  ck_assert_int_eq(verify(&l), 1);
  ck_assert_int_eq(l.n, 3);
  ck_assert_int_eq(l.e[2].state, CG_PRIME_REC_TORN);
  ck_assert_uint_eq(l.e[2].offset, off[2]);
  ck_assert_uint_eq(l.e[2].length, len - 3 - off[2]);
  warnings w = {0};
  unlink(path);
  ck_assert_int_eq(cg_prime_verify(path, NULL, NULL, NULL, collect_warning, &w), -1);
  ck_assert_ptr_nonnull(strstr(w.last, "does not exist"));
  free(f);
  for (int i = 0; i < 3; i++) free_record(&rec[i]);
}
END_TEST

START_TEST(parse_memory_matches_load) {
  cg_prime_record rec[3];
  size_t len;
  uint64_t off[3];
  uint8_t *f = three_records(rec, &len, off);
  cg_prime_set *s;
  ck_assert_int_eq(cg_prime_parse_memory(f, len, "mem", &s, NULL, NULL), 0);
  ck_assert_uint_eq(cg_prime_count(s), 3);
  cg_prime_free(s);
  ck_assert_int_eq(cg_prime_parse_memory(f, 0, "mem", &s, NULL, NULL), 0);
  ck_assert_uint_eq(cg_prime_count(s), 0);
  cg_prime_free(s);
  warnings w = {0};
  ck_assert_int_eq(cg_prime_parse_memory("junk", 4, "mem", &s, collect_warning, &w), -1);
  ck_assert_int_eq(w.n, 1);
  free(f);
  for (int i = 0; i < 3; i++) free_record(&rec[i]);
}
END_TEST

/* ---- configuration ---- */

START_TEST(default_path_from_environment) {
  /* detect/ reads no environment: the shim (config.c) and the CLI pass
   * CAPGUARD_PRIME, XDG_CACHE_HOME and HOME in. */
  char buf[256];
  ck_assert_int_eq(cg_prime_default_path(NULL, NULL, "/home/u", buf, sizeof buf), 0);
  ck_assert_str_eq(buf, "/home/u/.cache/capguard/prime.cgp");
  ck_assert_int_eq(cg_prime_default_path(NULL, "/xdg", "/home/u", buf, sizeof buf), 0);
  ck_assert_str_eq(buf, "/xdg/capguard/prime.cgp");
  /* invalid per the XDG spec: ignored */
  ck_assert_int_eq(cg_prime_default_path(NULL, "relative", "/home/u", buf, sizeof buf), 0);
  ck_assert_str_eq(buf, "/home/u/.cache/capguard/prime.cgp");
  ck_assert_int_eq(cg_prime_default_path("/p/x.cgp", "relative", "/home/u", buf, sizeof buf), 0);
  ck_assert_str_eq(buf, "/p/x.cgp");
  ck_assert_int_eq(cg_prime_default_path("/p/x.cgp", NULL, NULL, buf, 5), -1); /* too small */
  ck_assert_int_eq(cg_prime_default_path(NULL, NULL, NULL, buf, sizeof buf), -1);
  ck_assert_int_eq(cg_prime_default_path("", "", "", buf, sizeof buf), -1);
}
END_TEST

START_TEST(parse_size_accepts_units_rejects_junk) {
  static const struct {
    const char *s;
    uint64_t v;
  } good[] = {{"0", 0}, {"4096", 4096}, {"64K", 64 << 10}, {"64k", 64 << 10},
              {"256M", 256u << 20}, {"2G", 2ull << 30}, {"18446744073709551615", UINT64_MAX},
              {"17179869183G", 17179869183ull << 30}};
  for (size_t i = 0; i < sizeof good / sizeof *good; i++) {
    uint64_t v = 1;
    ck_assert_msg(cg_prime_parse_size(good[i].s, &v) == 0, "%s", good[i].s);
    ck_assert_uint_eq(v, good[i].v);
  }
  static const char *bad[] = {"", "K", "-1", "+1", " 1", "1 ", "1KB", "1T", "1.5M", "0x10",
                              "18446744073709551616", "17179869184G", "12a", "M1"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    uint64_t v = 7;
    ck_assert_msg(cg_prime_parse_size(bad[i], &v) == -1, "accepted '%s'", bad[i]);
    ck_assert_uint_eq(v, 7);
  }
  uint64_t v;
  ck_assert_int_eq(cg_prime_parse_size(NULL, &v), -1);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("prime_file");
  TCase *t = tcase_create("prime_file");
  tcase_add_checked_fixture(t, setup, teardown);
  tcase_set_timeout(t, 120);
  tcase_add_test(t, round_trip_keeps_every_field);
  tcase_add_test(t, missing_file_loads_empty);
  tcase_add_test(t, append_refuses_inconsistent_record);
  tcase_add_test(t, eight_concurrent_writers_lose_nothing);
  tcase_add_test(t, rewrite_racing_appenders_loses_nothing);
  tcase_add_test(t, torn_last_record_is_skipped_and_healed);
  tcase_add_test(t, torn_header_is_skipped_and_healed);
  tcase_add_test(t, corrupt_record_byte_is_skipped);
  tcase_add_test(t, corrupt_record_bit_is_skipped);
  tcase_add_test(t, corrupt_header_byte_refuses_file_untouched);
  tcase_add_test(t, corrupt_hit_record_loses_only_the_hit);
  tcase_add_test(t, unknown_record_type_is_ignored_with_warning);
  tcase_add_test(t, short_records_with_valid_checksums_are_rejected);
  tcase_add_test(t, duplicate_images_fold_on_load);
  tcase_add_test(t, newer_version_refused_untouched);
  tcase_add_test(t, foreign_file_refused_untouched);
  tcase_add_test(t, other_owner_refused);
  tcase_add_test(t, group_or_other_writable_refused);
  tcase_add_test(t, symlink_refused_and_not_followed);
  tcase_add_test(t, fifo_refused_without_blocking);
  tcase_add_test(t, size_cap_is_never_exceeded);
  tcase_add_test(t, rewrite_keeps_subset_folds_hits_drops_damage);
  tcase_add_test(t, rewrite_merges_sets_by_bytes);
  tcase_add_test(t, version1_file_reads_as_one_module_load);
  tcase_add_test(t, loads_grow_to_the_most_one_process_needed);
  tcase_add_test(t, find_with_a_known_hash_still_compares_bytes);
  tcase_add_test(t, library_only_image_is_not_a_module_image);
  tcase_add_test(t, damaged_loads_record_falls_back_to_the_default);
  tcase_add_test(t, rewrite_and_merge_keep_the_largest_loads);
  tcase_add_test(t, add_records_writes_a_batch);
  tcase_add_test(t, verify_reports_offsets_and_states);
  tcase_add_test(t, parse_memory_matches_load);
  tcase_add_test(t, default_path_from_environment);
  tcase_add_test(t, parse_size_accepts_units_rejects_junk);
  suite_add_tcase(s, t);
  return s;
}

int main(void) {
  return tk_check_run(suite());
}
