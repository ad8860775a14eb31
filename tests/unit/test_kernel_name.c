/* Kernel names for a person (detect/image/kernel_name.c): real mangled names in,
 * the display form out. The torch names are entry kernels of
 * tests/data/torch_flash_bwd_sm75_0.zstd.entry (its cubin decompressed with
 * the zstd command, the names read with readelf -s); the others were made by
 * g++ from a file shaped like at::native's (an anonymous namespace, a
 * template, an operator< and a lambda). The expected forms are written by
 * hand. libstdc++'s __cxa_demangle is the demangler, as in the command. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "capguard/kernel_name.h"
#include "check_run.h"

extern char *__cxa_demangle(const char *mangled, char *out, size_t *len, int *status);

static const char *display(const char *name, cg_demangle_fn dm) {
  static char buf[512];
  size_t n = cg_kernel_display_name(name, dm, buf, sizeof buf);
  ck_assert_uint_eq(n, strlen(buf));
  return buf;
}
static const char *shorten(const char *demangled) {
  static char buf[512];
  size_t n = cg_kernel_name_shorten(demangled, buf, sizeof buf);
  ck_assert_uint_eq(n, strlen(buf));
  return buf;
}

START_TEST(torch_flash_kernels) {
  ck_assert_str_eq(
      display("_ZN13pytorch_flash25flash_bwd_dot_do_o_kernelILb0E23Flash_bwd_kernel_traitsILi128ELi64EL"
              "i128ELi8ELi2ELi4ELi2ELb0ELb0EN7cutlass10bfloat16_tE19Flash_kernel_traitsILi128ELi64ELi"
              "128ELi8ES3_EEEEvNS_16Flash_bwd_paramsE",
              __cxa_demangle),
      "pytorch_flash::flash_bwd_dot_do_o_kernel<...>");
  ck_assert_str_eq(
      display("_ZN13pytorch_flash27flash_bwd_convert_dq_kernelI23Flash_bwd_kernel_traitsILi128ELi64ELi1"
              "28ELi8ELi2ELi4ELi2ELb0ELb0EN7cutlass6half_tE19Flash_kernel_traitsILi128ELi64ELi128ELi8E"
              "S3_EEEEvNS_16Flash_bwd_paramsEi",
              __cxa_demangle),
      "pytorch_flash::flash_bwd_convert_dq_kernel<...>");
  ck_assert_str_eq(
      display("_ZN13pytorch_flash44flash_bwd_dq_dk_dv_loop_seqk_parallel_kernelI23Flash_bwd_kernel_trai"
              "tsILi128ELi64ELi64ELi8ELi4ELi2ELi2ELb1ELb0EN7cutlass10bfloat16_tE19Flash_kernel_traits"
              "ILi128ELi64ELi64ELi8ES3_EELb0ELb1ELb0ELb0ELb0ELb0ELb0EEEvNS_16Flash_bwd_paramsE",
              __cxa_demangle),
      "pytorch_flash::flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel<...>");
}
END_TEST

START_TEST(anonymous_namespace_operator_lambda) {
  /* the return type (void) goes, "(anonymous namespace)" stays whole */
  ck_assert_str_eq(
      display("_ZN2at6native12_GLOBAL__N_119CatArrayBatchedCopyINS1_10OpaqueTypeIfLi4EEElLi2ELi128ELi1E"
              "EEvPT_T0_i",
              __cxa_demangle),
      "at::native::(anonymous namespace)::CatArrayBatchedCopy<...>");
  /* operator< is a name, not template arguments */
  ck_assert_str_eq(display("_ZNK2at6native12_GLOBAL__N_13CmpltERKS2_", __cxa_demangle),
                   "at::native::(anonymous namespace)::Cmp::operator<");
  /* a lambda's enclosing function is its scope: kept, its parameters not */
  ck_assert_str_eq(display("_ZZN2at6native8launcherEiENKUliE_clEi", __cxa_demangle),
                   "at::native::launcher(...)::{lambda(int)#1}::operator()");
  ck_assert_str_eq(display("_ZN2at6native3useEv", __cxa_demangle), "at::native::use");
}
END_TEST

START_TEST(unmangled_kept_as_they_are) {
  /* Triton's and extern "C" kernels, with the demangler or without */
  const char *plain[] = {"_causal_conv1d_update_kernel", "cg_test_fill", "triton_poi_fused_add_0",
                         "kernel<with> (odd) text", "_Z"};
  for (size_t i = 0; i < sizeof plain / sizeof plain[0]; i++) {
    ck_assert_str_eq(display(plain[i], __cxa_demangle), plain[i]);
    ck_assert_str_eq(display(plain[i], NULL), plain[i]);
  }
  /* mangled but not demangled (no demangler, or a name it refuses): whole */
  ck_assert_str_eq(display("_ZN2at6native3useEv", NULL), "_ZN2at6native3useEv");
  ck_assert_str_eq(display("_Zfoo_not_a_name", __cxa_demangle), "_Zfoo_not_a_name");
}
END_TEST

START_TEST(shortening_edges) {
  ck_assert_str_eq(shorten("operator new(unsigned long)"), "operator new");
  ck_assert_str_eq(shorten("ns::S::operator<<=(int)"), "ns::S::operator<<=");
  ck_assert_str_eq(shorten("ns::S::operator<=>(ns::S const&) const"), "ns::S::operator<=>");
  ck_assert_str_eq(shorten("void ns::f<int>::operator()<float>(float)"), "ns::f<...>::operator()<...>");
  ck_assert_str_eq(shorten("ns::S::operator int() const"), "ns::S::operator int");
  /* template arguments with parentheses and comparisons inside */
  ck_assert_str_eq(shorten("void k<(3)>(2), void (int)>(int)"), "k<...>");
  ck_assert_str_eq(shorten("unsigned int ns::k<std::pair<int, int> >(int) [clone .cold]"), "ns::k<...>");
  ck_assert_str_eq(shorten("f(int) [clone .constprop.0]"), "f");
  /* brackets that never close, or nothing left: the demangled name whole */
  ck_assert_str_eq(shorten("ns::k<int(int"), "ns::k<int(int");
  ck_assert_str_eq(shorten("ns::k({lambda"), "ns::k({lambda");
  ck_assert_str_eq(shorten("(int)"), "(int)");
  ck_assert_str_eq(shorten(""), "");
}
END_TEST

START_TEST(short_buffers) {
  char b[8];
  memset(b, 'x', sizeof b);
  /* the whole length is returned, as much as fits is written, NUL-terminated */
  ck_assert_uint_eq(cg_kernel_name_shorten("void ns::kernel<int>(int)", b, sizeof b),
                    strlen("ns::kernel<...>"));
  ck_assert_str_eq(b, "ns::ker");
  ck_assert_uint_eq(cg_kernel_display_name("cg_test_fill", NULL, b, sizeof b), 12);
  ck_assert_str_eq(b, "cg_test");
  ck_assert_uint_eq(cg_kernel_display_name("cg_test_fill", NULL, b, 0), 12);
  ck_assert_uint_eq(cg_kernel_name_shorten("void ns::kernel<int>(int)", NULL, 0), strlen("ns::kernel<...>"));
}
END_TEST

int main(void) {
  Suite *s = suite_create("kernel_name");
  TCase *tc = tcase_create("core");
  tcase_add_test(tc, torch_flash_kernels);
  tcase_add_test(tc, anonymous_namespace_operator_lambda);
  tcase_add_test(tc, unmangled_kept_as_they_are);
  tcase_add_test(tc, shortening_edges);
  tcase_add_test(tc, short_buffers);
  suite_add_tcase(s, tc);
  return tk_check_run(s);
}
