/* The identity record of the priming file (type 5, docs/priming-format.md):
 * what a file is for, written once per learn, kept by every rewrite, the last
 * one read winning; a damaged one is skipped as damage, never misread; and
 * the program's name as both the command and the shim derive it. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "capguard/prime_file.h"
#include "prime_records.h"
#include "check_run.h"

static char dir[64], path[128];

static void setup(void) {
  make_test_dir(dir, sizeof dir, "cgident");
  snprintf(path, sizeof path, "%s/prime.cgp", dir);
}

static void teardown(void) { remove_test_dir(dir); }

static cg_prime_identity ident(const char *program, const char *label, unsigned driver) {
  cg_prime_identity id = {.format_version = cg_prime_format_version(), .driver_version = driver,
                          .device_sm = 90, .written_ns = 1234567890123456789ull};
  snprintf(id.program, sizeof id.program, "%s", program);
  snprintf(id.label, sizeof id.label, "%s", label);
  return id;
}

static cg_prime_set *load_clean(void) {
  warnings w = {0};
  cg_prime_set *s = NULL;
  ck_assert_int_eq(cg_prime_load(path, &s, collect_warning, &w), 0);
  ck_assert_msg(w.n == 0, "warned: %s", w.last);
  return s;
}

static void *read_file(size_t *len) {
  FILE *f = fopen(path, "rb");
  ck_assert_ptr_nonnull(f);
  fseek(f, 0, SEEK_END);
  *len = (size_t)ftell(f);
  rewind(f);
  void *b = malloc(*len);
  ck_assert_uint_eq(fread(b, 1, *len, f), *len);
  fclose(f);
  return b;
}

START_TEST(identity_round_trip_and_kept_by_rewrites) {
  cg_prime_record r = make_record(1, 300), r2 = make_record(2, 77);
  ck_assert_int_eq(cg_prime_add_records(path, &r, 1, NULL, NULL), 0);
  cg_prime_set *s = load_clean();
  ck_assert_ptr_null(cg_prime_identity_of(s)); /* a file learned before identities */
  cg_prime_free(s);
  cg_prime_identity id = ident("vllm_like", "model=llama-8b,tp=2", 13000);
  ck_assert_int_eq(cg_prime_set_identity(path, &id, NULL, NULL), 0);
  s = load_clean();
  const cg_prime_identity *got = cg_prime_identity_of(s);
  ck_assert_ptr_nonnull(got);
  ck_assert_uint_eq(got->format_version, 2);
  ck_assert_uint_eq(got->driver_version, 13000);
  ck_assert_uint_eq(got->device_sm, 90);
  ck_assert_uint_eq(got->written_ns, 1234567890123456789ull);
  ck_assert_str_eq(got->program, "vllm_like");
  ck_assert_str_eq(got->label, "model=llama-8b,tp=2");
  ck_assert_uint_eq(cg_prime_count(s), 1);
  cg_prime_free(s);
  /* a rewrite (here: records added) keeps it, and the images */
  ck_assert_int_eq(cg_prime_add_records(path, &r2, 1, NULL, NULL), 0);
  s = load_clean();
  ck_assert_ptr_nonnull(cg_prime_identity_of(s));
  ck_assert_str_eq(cg_prime_identity_of(s)->label, "model=llama-8b,tp=2");
  ck_assert_uint_eq(cg_prime_count(s), 2);
  cg_prime_free(s);
  /* an append after it (the shim recording) leaves it be */
  cg_prime_record r3 = make_record(3, 41);
  ck_assert_int_eq(cg_prime_append(path, &r3, CG_PRIME_DEFAULT_MAX_BYTES, NULL, NULL), 0);
  s = load_clean();
  ck_assert_str_eq(cg_prime_identity_of(s)->program, "vllm_like");
  ck_assert_uint_eq(cg_prime_count(s), 3);
  cg_prime_free(s);
  free_record(&r), free_record(&r2), free_record(&r3);
}
END_TEST

/* Two files concatenated by hand (or a record appended after a later
 * learn): the last identity is the one read. */
START_TEST(last_identity_wins) {
  cg_prime_record r = make_record(4, 120);
  ck_assert_int_eq(cg_prime_add_records(path, &r, 1, NULL, NULL), 0);
  cg_prime_identity a = ident("first", "", 12020), b = ident("second", "x=1", 13000);
  ck_assert_int_eq(cg_prime_set_identity(path, &a, NULL, NULL), 0);
  size_t len_a;
  uint8_t *file_a = read_file(&len_a);
  ck_assert_int_eq(cg_prime_set_identity(path, &b, NULL, NULL), 0);
  size_t len_b;
  uint8_t *file_b = read_file(&len_b);
  /* a's file, then b's records (its header dropped) */
  uint8_t *both = malloc(len_a + len_b);
  memcpy(both, file_a, len_a);
  memcpy(both + len_a, file_b + 32, len_b - 32);
  warnings w = {0};
  cg_prime_set *s = NULL;
  ck_assert_int_eq(cg_prime_parse_memory(both, len_a + len_b - 32, "both", &s, collect_warning, &w), 0);
  ck_assert_int_eq(w.n, 0);
  ck_assert_str_eq(cg_prime_identity_of(s)->program, "second");
  ck_assert_uint_eq(cg_prime_count(s), 1); /* the same image twice is folded */
  cg_prime_free(s);
  free(both), free(file_a), free(file_b);
  free_record(&r);
}
END_TEST

/* A damaged identity (any byte of it changed, checksum fixed or not) is
 * skipped as damage with a warning; its strings are never read past. */
START_TEST(damaged_identity_is_skipped) {
  cg_prime_record r = make_record(5, 64);
  ck_assert_int_eq(cg_prime_add_records(path, &r, 1, NULL, NULL), 0);
  cg_prime_identity id = ident("prog", "lbl", 13000);
  ck_assert_int_eq(cg_prime_set_identity(path, &id, NULL, NULL), 0);
  size_t len;
  uint8_t *file = read_file(&len);
  /* the identity is written first, right after the 32-byte header */
  ck_assert_uint_eq(file[32 + 4], 5);
  uint32_t program_len;
  memcpy(&program_len, file + 32 + 40, 4);
  ck_assert_uint_eq(program_len, 4);
  uint64_t rec_len;
  memcpy(&rec_len, file + 32 + 8, 8);
  /* byte changed, and whether the checksum is made right again after */
  static const struct {
    size_t at;
    uint8_t x;
    bool reseal;
  } cases[] = {{40, 0x40, false}, {44, 0x40, false}, {48, 0x40, false}, {28, 1, false},
               {28, 1, true},     {40, 1, true},     {44, 0x10, true},  {49, 'r', true}, {52, 1, true}};
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    uint8_t *copy = malloc(len);
    memcpy(copy, file, len);
    copy[32 + cases[k].at] ^= cases[k].x; /* 49 ^ 'r': a NUL inside the program's name */
    if (cases[k].reseal) {
      uint64_t sum = XXH3_64bits(copy + 32, rec_len - 8);
      memcpy(copy + 32 + rec_len - 8, &sum, 8);
    }
    warnings w = {0};
    cg_prime_set *s = NULL;
    ck_assert_int_eq(cg_prime_parse_memory(copy, len, "bad", &s, collect_warning, &w), 0);
    ck_assert_ptr_null(cg_prime_identity_of(s));
    ck_assert_uint_eq(cg_prime_count(s), 1); /* the image after it still loads */
    ck_assert_int_eq(w.n, 1);
    ck_assert_ptr_nonnull(strstr(w.last, "damaged"));
    cg_prime_free(s);
    free(copy);
  }
  free(file);
  free_record(&r);
}
END_TEST

/* Longest strings fit; the record's length is what its strings need. */
START_TEST(longest_strings) {
  cg_prime_record r = make_record(6, 10);
  ck_assert_int_eq(cg_prime_add_records(path, &r, 1, NULL, NULL), 0);
  cg_prime_identity id = ident("", "", 0);
  memset(id.program, 'p', sizeof id.program - 1);
  memset(id.label, 'l', sizeof id.label - 1);
  ck_assert_int_eq(cg_prime_set_identity(path, &id, NULL, NULL), 0);
  cg_prime_set *s = load_clean();
  ck_assert_uint_eq(strlen(cg_prime_identity_of(s)->program), CG_PRIME_PROGRAM_MAX - 1);
  ck_assert_uint_eq(strlen(cg_prime_identity_of(s)->label), CG_PRIME_LABEL_MAX - 1);
  cg_prime_free(s);
  free_record(&r);
}
END_TEST

static void program_of(const char *words, size_t len, const char *want) {
  char out[CG_PRIME_PROGRAM_MAX];
  cg_prime_program_name(words, len, out, sizeof out);
  ck_assert_str_eq(out, want);
}

START_TEST(program_names) {
  program_of("/usr/bin/vllm_like\0--workers\0" "1", 29, "vllm_like");
  program_of("./serve\0", 8, "serve");
  program_of("python3\0-u\0/srv/app/serve.py\0--port\0" "80", 37, "serve.py");
  program_of("/usr/bin/python3.11\0-m\0vllm.entrypoints.openai.api_server\0", 58,
             "vllm.entrypoints.openai.api_server");
  program_of("python3\0-m", 10, "python3"); /* a cut command line: -m without its module */
  program_of("python3\0", 8, "python3");
  program_of("python3\0-W\0ignore\0serve.py\0", 27, "serve.py");
  program_of("python3\0-c\0from multiprocessing.spawn import spawn_main\0", 56, "");
  program_of("", 0, "");
  program_of("no-nul", 6, ""); /* not a command line */
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("prime_identity");
  TCase *t = tcase_create("core");
  tcase_add_checked_fixture(t, setup, teardown);
  tcase_add_test(t, identity_round_trip_and_kept_by_rewrites);
  tcase_add_test(t, last_identity_wins);
  tcase_add_test(t, damaged_identity_is_skipped);
  tcase_add_test(t, longest_strings);
  tcase_add_test(t, program_names);
  suite_add_tcase(s, t);
  return s;
}

int main(void) { return tk_check_run(suite()); }
