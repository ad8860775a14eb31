/* cg_native_stack and cg_native_where, with the stack code in its own shared
 * library (as in the shim) and this program built with -rdynamic, so dladdr
 * can name the functions below. Built with -fno-optimize-sibling-calls and
 * every call followed by work, so no frame is folded away. */
#include <check.h>
#include <regex.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stack.h"
#include "stack_where.h"
#include "check_run.h"

#define MAXF 32
static const char *frames[MAXF];
static char fbuf[8192];
static size_t nframes;
static int depth_seen;

__attribute__((noinline)) int probe_inner(int skip) {
  nframes = cg_native_stack(skip, frames, MAXF, fbuf, sizeof fbuf);
  return (int)nframes + depth_seen++;
}
__attribute__((noinline)) int probe_middle(int skip) { return probe_inner(skip) + depth_seen++; }
__attribute__((noinline)) int probe_outer(int skip) { return probe_middle(skip) + depth_seen++; }

/* Index of the first frame naming `fn` as its symbol, or -1. */
static int find_frame(const char *fn) {
  char pat[128];
  snprintf(pat, sizeof pat, "(%s+0x", fn);
  for (size_t i = 0; i < nframes; i++)
    if (strstr(frames[i], pat)) return (int)i;
  return -1;
}

START_TEST(names_in_order_innermost_first) {
  probe_outer(0);
  ck_assert_uint_ge(nframes, 4);
  ck_assert_int_eq(find_frame("probe_inner"), 0);
  ck_assert_int_eq(find_frame("probe_middle"), 1);
  ck_assert_int_eq(find_frame("probe_outer"), 2);
  ck_assert_int_gt(find_frame("main"), 2);
}
END_TEST

START_TEST(skip_drops_innermost) {
  probe_outer(1);
  ck_assert_int_eq(find_frame("probe_middle"), 0);
  ck_assert_int_eq(find_frame("probe_outer"), 1);
  ck_assert_int_eq(find_frame("probe_inner"), -1);
}
END_TEST

START_TEST(frame_format) {
  regex_t re;
  ck_assert_int_eq(regcomp(&re, "^test_stack_native\\(probe_inner\\+0x[0-9a-f]+\\) \\[0x[0-9a-f]+\\]$",
                           REG_EXTENDED | REG_NOSUB), 0);
  probe_outer(0);
  ck_assert_uint_ge(nframes, 1);
  ck_assert_msg(regexec(&re, frames[0], 0, NULL, 0) == 0, "frame 0 is '%s'", frames[0]);
  regfree(&re);
  /* the address printed is the return address, inside probe_inner */
  const char *a = strstr(frames[0], "[0x");
  ck_assert_ptr_nonnull(a);
  unsigned long addr = strtoul(a + 1, NULL, 16);
  ck_assert_uint_gt(addr, (unsigned long)(uintptr_t)&probe_inner);
  ck_assert_uint_lt(addr, (unsigned long)(uintptr_t)&probe_inner + 4096);
  /* every frame is one of the two documented forms, or ?? when unknown */
  regex_t any;
  ck_assert_int_eq(regcomp(&any, "^([^ ()]+\\([^ ]+\\+0x[0-9a-f]+\\)|[^ ()]+\\+0x[0-9a-f]+|\\?\\?) \\[0x[0-9a-f]+\\]$",
                           REG_EXTENDED | REG_NOSUB), 0);
  for (size_t i = 0; i < nframes; i++)
    ck_assert_msg(regexec(&any, frames[i], 0, NULL, 0) == 0, "frame %zu is '%s'", i, frames[i]);
  regfree(&any);
}
END_TEST

START_TEST(max_limits_frames) {
  const char *out[2];
  char buf[1024];
  ck_assert_uint_eq(cg_native_stack(0, out, 2, buf, sizeof buf), 2);
  ck_assert_uint_eq(cg_native_stack(0, out, 0, buf, sizeof buf), 0);
  ck_assert_uint_eq(cg_native_stack(0, out, 2, buf, 0), 0);
  ck_assert_uint_eq(cg_native_stack(0, NULL, 2, buf, sizeof buf), 0);
  ck_assert_uint_eq(cg_native_stack(1000, out, 2, buf, sizeof buf), 0);
  ck_assert_uint_eq(cg_native_stack(-5, out, 2, buf, sizeof buf), 2);
}
END_TEST

/* A small buffer: fewer frames, each whole and NUL-terminated, nothing
 * written past bufcap. */
START_TEST(small_buffer_truncates) {
  for (size_t cap = 1; cap < 200; cap++) {
    char buf[256];
    const char *out[MAXF];
    memset(buf, 'Z', sizeof buf);
    size_t n = cg_native_stack(0, out, MAXF, buf, cap);
    char zs[256];
    memset(zs, 'Z', sizeof zs);
    ck_assert(memcmp(buf + cap, zs, sizeof buf - cap) == 0);
    size_t used = 0;
    for (size_t i = 0; i < n; i++) {
      ck_assert_ptr_eq(out[i], buf + used);
      used += strlen(out[i]) + 1;
      ck_assert_uint_le(used, cap);
      ck_assert_ptr_nonnull(strstr(out[i], " [0x"));
    }
  }
}
END_TEST

static char where[256];
static size_t where_len;
__attribute__((noinline)) int where_probe(void) {
  where_len = cg_native_where(where, sizeof where);
  return (int)where_len + depth_seen++;
}

/* The stack code lives in libcgstack_test.so, "capguard itself" here, so the
 * first frame outside it is where_probe in this program. */
START_TEST(where_is_first_frame_outside_capguard) {
  where_probe();
  ck_assert_uint_eq(where_len, strlen(where));
  ck_assert_msg(strncmp(where, "test_stack_native(where_probe+0x", 32) == 0, "where is '%s'", where);
  ck_assert_ptr_null(strchr(where, '['));
  char tiny[12];
  ck_assert_uint_eq(cg_stack_where(tiny, sizeof tiny), sizeof tiny - 1);
  ck_assert_uint_eq(strlen(tiny), sizeof tiny - 1);
  ck_assert_uint_eq(cg_stack_where(tiny, 0), 0);
}
END_TEST

int main(void) {
  cg_stack_init();
  Suite *s = suite_create("stack_native");
  TCase *tc = tcase_create("native");
  tcase_add_test(tc, names_in_order_innermost_first);
  tcase_add_test(tc, skip_drops_innermost);
  tcase_add_test(tc, frame_format);
  tcase_add_test(tc, max_limits_frames);
  tcase_add_test(tc, small_buffer_truncates);
  tcase_add_test(tc, where_is_first_frame_outside_capguard);
  suite_add_tcase(s, tc);
  return tk_check_run(s);
}
