/* Load options in the priming file (format version 2): an entry is its bytes
 * and its options, canonical (detect/prime/load_options.c); the same bytes with
 * other options are another entry. Version-1 files still load, and become
 * version 2 only once a record with options is written into them. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capguard/load_options.h"
#include "capguard/prime_file.h"
#include "prime_records.h"
#include "check_run.h"

static char dir[64], path[128];

static void setup(void) {
  make_test_dir(dir, sizeof dir, "cgopts");
  snprintf(path, sizeof path, "%s/prime.cgp", dir);
}

static void teardown(void) { remove_test_dir(dir); }

/* The canonical bytes of a JIT register cap (and optionally binary-is-preserved). */
static uint32_t encode(unsigned regs, bool preserved, uint8_t *out) {
  int jit[] = {0 /* CU_JIT_MAX_REGISTERS */}, lib[] = {1 /* CU_LIBRARY_BINARY_IS_PRESERVED */};
  void *jv[] = {(void *)(uintptr_t)regs}, *lv[] = {(void *)(uintptr_t)1};
  cg_load_opts_raw raw = {regs ? 1 : 0, preserved ? 1 : 0, jit, lib, jv, lv};
  cg_load_opts o;
  ck_assert_int_eq(cg_load_opts_canon(&raw, &o).verdict, CG_OPTS_SERVABLE);
  cg_load_opts_encode(&o, out);
  return o.n;
}

static unsigned version_of(const char *p) {
  FILE *f = fopen(p, "rb");
  uint8_t h[10] = {0};
  ck_assert_ptr_nonnull(f);
  ck_assert_uint_eq(fread(h, 1, sizeof h, f), sizeof h);
  fclose(f);
  return (unsigned)(h[8] | h[9] << 8);
}

static cg_prime_set *load(void) {
  warnings w = {0};
  cg_prime_set *s = NULL;
  ck_assert_int_eq(cg_prime_load(path, &s, collect_warning, &w), 0);
  ck_assert_int_eq(w.n, 0);
  return s;
}

START_TEST(options_are_part_of_the_key) {
  cg_prime_record plain = make_record(1, 300), r32 = plain, r64 = plain;
  uint8_t o32[64], o64[64];
  r32.n_options = encode(32, false, o32), r32.options = o32;
  r64.n_options = encode(64, true, o64), r64.options = o64;
  warnings w = {0};
  ck_assert_int_eq(cg_prime_append(path, &plain, CG_PRIME_DEFAULT_MAX_BYTES, collect_warning, &w), 0);
  ck_assert_uint_eq(version_of(path), 1); /* no options yet: every capguard reads it */
  ck_assert_int_eq(cg_prime_append(path, &r32, CG_PRIME_DEFAULT_MAX_BYTES, collect_warning, &w), 0);
  ck_assert_uint_eq(version_of(path), 2);
  ck_assert_int_eq(cg_prime_append(path, &r64, CG_PRIME_DEFAULT_MAX_BYTES, collect_warning, &w), 0);
  ck_assert_int_eq(cg_prime_append(path, &r32, CG_PRIME_DEFAULT_MAX_BYTES, collect_warning, &w), 0); /* a hit */
  ck_assert_int_eq(w.n, 0);
  cg_prime_set *s = load();
  ck_assert_uint_eq(cg_prime_count(s), 3);
  const cg_prime_record *a = cg_prime_find_hashed(s, plain.hash, plain.bytes, plain.size, NULL, 0);
  const cg_prime_record *b = cg_prime_find_hashed(s, plain.hash, plain.bytes, plain.size, o32, r32.n_options);
  const cg_prime_record *c = cg_prime_find_hashed(s, plain.hash, plain.bytes, plain.size, o64, r64.n_options);
  ck_assert_ptr_nonnull(a);
  ck_assert_ptr_nonnull(b);
  ck_assert_ptr_nonnull(c);
  ck_assert_ptr_ne(a, b);
  ck_assert_ptr_ne(b, c);
  ck_assert_uint_eq(a->n_options, 0);
  ck_assert_uint_eq(b->n_options, 1);
  ck_assert_mem_eq(b->options, o32, CG_LOAD_OPT_BYTES);
  ck_assert_uint_eq(c->n_options, 2);
  ck_assert_uint_eq(b->hits, 2);
  ck_assert_ptr_eq(cg_prime_find_bytes(s, plain.hash, plain.bytes, plain.size), a);
  uint8_t o16[64];
  uint32_t n16 = encode(16, false, o16);
  ck_assert_ptr_null(cg_prime_find_hashed(s, plain.hash, plain.bytes, plain.size, o16, n16));
  cg_prime_free(s);
  free_record(&plain);
}
END_TEST

static int drop_options(void *ctx, const cg_prime_set *cur, bool *keep) {
  (void)ctx;
  for (size_t i = 0; i < cg_prime_count(cur); i++)
    keep[i] = cg_prime_get(cur, i)->n_options == 0;
  return 0;
}

START_TEST(rewrite_keeps_options_and_version) {
  cg_prime_record r = make_record(2, 200), plain = make_record(3, 100);
  uint8_t o[64];
  r.n_options = encode(32, true, o), r.options = o;
  warnings w = {0};
  ck_assert_int_eq(cg_prime_append(path, &r, CG_PRIME_DEFAULT_MAX_BYTES, collect_warning, &w), 0);
  ck_assert_uint_eq(version_of(path), 2); /* a new file with options starts at version 2 */
  ck_assert_int_eq(cg_prime_append(path, &r, CG_PRIME_DEFAULT_MAX_BYTES, collect_warning, &w), 0);
  ck_assert_int_eq(cg_prime_append(path, &plain, CG_PRIME_DEFAULT_MAX_BYTES, collect_warning, &w), 0);
  ck_assert_int_eq(cg_prime_rewrite(path, NULL, NULL, NULL, 0, collect_warning, &w), 0);
  ck_assert_int_eq(w.n, 0);
  ck_assert_uint_eq(version_of(path), 2);
  cg_prime_set *s = load();
  ck_assert_uint_eq(cg_prime_count(s), 2);
  const cg_prime_record *b = cg_prime_find_hashed(s, r.hash, r.bytes, r.size, o, r.n_options);
  ck_assert_ptr_nonnull(b);
  ck_assert_uint_eq(b->hits, 2);
  ck_assert_ptr_null(cg_prime_find_hashed(s, r.hash, r.bytes, r.size, NULL, 0));
  cg_prime_free(s);
  /* a rewrite that keeps no record with options writes version 1 again */
  ck_assert_int_eq(cg_prime_rewrite(path, drop_options, NULL, NULL, 0, collect_warning, &w), 0);
  ck_assert_uint_eq(version_of(path), 1);
  s = load();
  ck_assert_uint_eq(cg_prime_count(s), 1);
  cg_prime_free(s);
  free_record(&r);
  free_record(&plain);
}
END_TEST

/* Options bytes that are not canonical (unsorted, a key twice, padding set)
 * make the record damaged: skipped with a warning, never served. */
START_TEST(non_canonical_options_are_damage) {
  cg_prime_record r = make_record(4, 64);
  uint8_t o[64];
  uint32_t n = encode(32, true, o);
  uint8_t swapped[64];
  memcpy(swapped, o + CG_LOAD_OPT_BYTES, CG_LOAD_OPT_BYTES); /* library option first: unsorted */
  memcpy(swapped + CG_LOAD_OPT_BYTES, o, CG_LOAD_OPT_BYTES);
  /* written by hand (an appender writes only canonical options), then read */
  r.n_options = n, r.options = swapped;
  ck_assert_int_eq(cg_prime_add_records(path, &r, 1, NULL, NULL), 0);
  warnings w = {0};
  cg_prime_set *s = NULL;
  ck_assert_int_eq(cg_prime_load(path, &s, collect_warning, &w), 0);
  ck_assert_uint_eq(cg_prime_count(s), 0);
  ck_assert_int_eq(w.n, 1);
  ck_assert_ptr_nonnull(strstr(w.last, "load options not in canonical form"));
  cg_prime_free(s);
  cg_load_opts dec;
  ck_assert_int_eq(cg_load_opts_decode(swapped, n, &dec), -1);
  ck_assert_int_eq(cg_load_opts_decode(o, n, &dec), 0);
  o[1] = 1; /* padding */
  ck_assert_int_eq(cg_load_opts_decode(o, n, &dec), -1);
  free_record(&r);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("prime_options");
  TCase *t = tcase_create("core");
  tcase_add_checked_fixture(t, setup, teardown);
  tcase_add_test(t, options_are_part_of_the_key);
  tcase_add_test(t, rewrite_keeps_options_and_version);
  tcase_add_test(t, non_canonical_options_are_damage);
  suite_add_tcase(s, t);
  return s;
}

int main(void) { return tk_check_run(suite()); }
