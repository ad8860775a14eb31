/* Load options in canonical form (detect/prime/load_options.c): the key a served
 * load must match exactly, and the words that say what differs. */
#include <check.h>
#include <stdint.h>
#include <string.h>

#include "capguard/load_options.h"
#include "check_run.h"

static cg_opts_check canon(unsigned n_jit, const int *jit, void **jv, unsigned n_lib, const int *lib, void **lv,
                           cg_load_opts *o) {
  cg_load_opts_raw raw = {n_jit, n_lib, jit, lib, jv, lv};
  return cg_load_opts_canon(&raw, o);
}

START_TEST(sorted_inputs_kept_outputs_by_key) {
  /* log size, max registers, wall time, binary-is-preserved; values in the low 32 bits */
  int jit[] = {4, 0, 2, 3};
  char buf[8];
  void *jv[] = {(void *)(uintptr_t)256, (void *)(((uintptr_t)7 << 32) | 32), (void *)(uintptr_t)0x3f800000, buf};
  int lib[] = {1};
  void *lv[] = {(void *)(uintptr_t)1};
  cg_load_opts o;
  ck_assert_int_eq(canon(4, jit, jv, 1, lib, lv, &o).verdict, CG_OPTS_SERVABLE);
  ck_assert_uint_eq(o.n, 5);
  ck_assert_uint_eq(o.o[0].key, 0);
  ck_assert_uint_eq(o.o[0].value, 32);
  ck_assert_uint_eq(o.o[1].key, 2);
  ck_assert_uint_eq(o.o[1].value, 0); /* an output: by key */
  ck_assert_uint_eq(o.o[2].key, 3);
  ck_assert_uint_eq(o.o[2].value, 0); /* the buffer's address is not the key */
  ck_assert_uint_eq(o.o[3].key, 4);
  ck_assert_uint_eq(o.o[3].value, 256);
  ck_assert_uint_eq(o.o[4].scope, CG_OPT_LIBRARY);
  ck_assert_uint_eq(o.o[4].value, 1);
  char text[256];
  cg_load_opts_format(&o, text, sizeof text);
  ck_assert_str_eq(text, "CU_JIT_MAX_REGISTERS=32,CU_JIT_WALL_TIME,CU_JIT_INFO_LOG_BUFFER,"
                         "CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES=256,CU_LIBRARY_BINARY_IS_PRESERVED=1");
  uint8_t enc[CG_LOAD_OPTS_MAX * CG_LOAD_OPT_BYTES];
  cg_load_opts_encode(&o, enc);
  cg_load_opts back;
  ck_assert_int_eq(cg_load_opts_decode(enc, o.n, &back), 0);
  ck_assert(cg_load_opts_equal(&o, &back));
  ck_assert_uint_ne(cg_load_opts_hash(&o), 0);
  cg_load_opts none = {0};
  ck_assert_uint_eq(cg_load_opts_hash(&none), 0);
}
END_TEST

START_TEST(foreign_and_malformed_named) {
  int jit[] = {0, 18}; /* max registers, then a symbol address table */
  void *jv[] = {(void *)(uintptr_t)32, (void *)jv};
  cg_load_opts o;
  cg_opts_check c = canon(2, jit, jv, 0, NULL, NULL, &o);
  ck_assert_int_eq(c.verdict, CG_OPTS_FOREIGN);
  ck_assert_uint_eq(c.why_key, 18);
  char name[64];
  ck_assert_str_eq(cg_load_opt_name(c.why_scope, c.why_key, name, sizeof name), "CU_JIT_GLOBAL_SYMBOL_ADDRESSES");
  int lib[] = {0}; /* the host table */
  void *lv[] = {(void *)jv};
  c = canon(0, NULL, NULL, 1, lib, lv, &o);
  ck_assert_int_eq(c.verdict, CG_OPTS_FOREIGN);
  ck_assert_str_eq(cg_load_opt_name(c.why_scope, c.why_key, name, sizeof name),
                   "CU_LIBRARY_HOST_UNIVERSAL_FUNCTION_AND_DATA_TABLE");
  int unknown[] = {99};
  c = canon(1, unknown, jv, 0, NULL, NULL, &o);
  ck_assert_int_eq(c.verdict, CG_OPTS_FOREIGN); /* never guessed */
  ck_assert_str_eq(cg_load_opt_name(c.why_scope, c.why_key, name, sizeof name), "CU_JIT_OPTION_99");
  int twice[] = {0, 0};
  void *tv[] = {(void *)(uintptr_t)32, (void *)(uintptr_t)64};
  ck_assert_int_eq(canon(2, twice, tv, 0, NULL, NULL, &o).verdict, CG_OPTS_MALFORMED);
  ck_assert_int_eq(canon(1, NULL, NULL, 0, NULL, NULL, &o).verdict, CG_OPTS_MALFORMED);
  ck_assert_uint_eq(o.n, 0);
}
END_TEST

START_TEST(differences_said) {
  int a_keys[] = {0, 7};
  void *a_vals[] = {(void *)(uintptr_t)32, (void *)(uintptr_t)4};
  int b_keys[] = {0};
  void *b_vals[] = {(void *)(uintptr_t)64};
  cg_load_opts a, b;
  canon(2, a_keys, a_vals, 0, NULL, NULL, &a);
  canon(1, b_keys, b_vals, 0, NULL, NULL, &b);
  char d[128];
  cg_load_opts_diff(&a, &b, d, sizeof d);
  ck_assert_str_eq(d, "CU_JIT_MAX_REGISTERS recorded 32, asked 64");
  ck_assert_uint_eq(cg_load_opts_distance(&a, &b), 2);
  b_vals[0] = (void *)(uintptr_t)32;
  canon(1, b_keys, b_vals, 0, NULL, NULL, &b);
  cg_load_opts_diff(&a, &b, d, sizeof d);
  ck_assert_str_eq(d, "CU_JIT_OPTIMIZATION_LEVEL recorded 4, not asked");
  cg_load_opts_diff(&b, &a, d, sizeof d);
  ck_assert_str_eq(d, "CU_JIT_OPTIMIZATION_LEVEL asked 4, not recorded");
  cg_load_opts_diff(&a, &a, d, sizeof d);
  ck_assert_str_eq(d, "");
  ck_assert_uint_eq(cg_load_opts_distance(&a, &a), 0);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("load_options");
  TCase *t = tcase_create("core");
  tcase_add_test(t, sorted_inputs_kept_outputs_by_key);
  tcase_add_test(t, foreign_and_malformed_named);
  tcase_add_test(t, differences_said);
  suite_add_tcase(s, t);
  return s;
}

int main(void) { return tk_check_run(suite()); }
