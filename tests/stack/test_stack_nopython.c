/* cg_python_stack outside Python: a plain C process gets 0 frames and no
 * crash, before and after loading libpython. With CG_TEST_LIBPYTHON set (the
 * path of a shared libpython3), also: a libpython loaded RTLD_LOCAL and never
 * initialized gives 0, and an interpreter embedded after start-up is found
 * by the lazy re-lookup and its frames come back. */
#include <check.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "stack.h"
#include "stack_where.h"
#include "check_run.h"

#define MAXF 8

static void assert_no_python_frames(int calls) {
  for (int c = 0; c < calls; c++) {
    cg_py_frame out[MAXF];
    char buf[1024];
    static char untouched[1024];
    memset(untouched, 0x5a, sizeof untouched);
    memset(out, 0x5a, sizeof out);
    memset(buf, 0x5a, sizeof buf);
    ck_assert_uint_eq(cg_python_stack(out, MAXF, buf, sizeof buf), 0);
    ck_assert(memcmp(buf, untouched, sizeof buf) == 0);
    ck_assert(memcmp(out, untouched, sizeof out) == 0);
  }
}

static char where[256];
__attribute__((noinline)) size_t where_probe(void) {
  size_t n = cg_stack_where(where, sizeof where);
  return n + (where[0] != 0);
}

START_TEST(plain_process_has_no_python_stack) {
  /* more calls than the re-lookup interval, so the retry path runs too */
  assert_no_python_frames(200);
  ck_assert_uint_eq(cg_python_stack(NULL, MAXF, where, sizeof where), 0);
}
END_TEST

START_TEST(where_falls_back_to_native) {
  where_probe();
  ck_assert_msg(strncmp(where, "test_stack_nopython(where_probe+0x", 34) == 0, "where is '%s'", where);
}
END_TEST

START_TEST(libpython_local_uninitialized_gives_nothing) {
  const char *path = getenv("CG_TEST_LIBPYTHON");
  void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  ck_assert_msg(h != NULL, "dlopen %s: %s", path, dlerror());
  ck_assert_ptr_null(dlsym(RTLD_DEFAULT, "PyGILState_GetThisThreadState"));
  assert_no_python_frames(200);
}
END_TEST

/* Scratch-file failures on demand: this program's syscall (memfd_create) and open
 * interpose libc's for the stack code in libcgstack_test.so. */
static int fail_memfd, fail_tmpfile;
/* memfd_create is made through syscall (shim/stack/stack_python.c): every
 * other call passes on with its six arguments. Like glibc's own, it reads
 * six whatever the caller passed (the sixth from the caller's stack), which
 * AddressSanitizer would take for an overflow. */
__attribute__((no_sanitize("address"))) long syscall(long number, ...) {
  va_list ap;
  va_start(ap, number);
  long a[6];
  for (int i = 0; i < 6; i++)
    a[i] = va_arg(ap, long);
  va_end(ap);
  if (number == SYS_memfd_create && fail_memfd) {
    errno = ENOSYS;
    return -1;
  }
  long (*real)(long, ...) = (long (*)(long, ...))dlsym(RTLD_NEXT, "syscall");
  return real(number, a[0], a[1], a[2], a[3], a[4], a[5]);
}
int open(const char *path, int flags, ...) {
  mode_t mode = 0;
  if ((flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE) {
    va_list ap;
    va_start(ap, flags);
    mode = (mode_t)va_arg(ap, unsigned);
    va_end(ap);
  }
  if (fail_tmpfile && (flags & O_TMPFILE) == O_TMPFILE) {
    errno = EOPNOTSUPP;
    return -1;
  }
  int (*real)(const char *, int, ...) = (int (*)(const char *, int, ...))dlsym(RTLD_NEXT, "open");
  return real(path, flags, mode);
}

/* Called back from the embedded interpreter through ctypes (which releases
 * the GIL around the call). */
static cg_py_frame emb_frames[MAXF];
static char emb_buf[4096];
static size_t emb_n;
static int emb_calls;
static char emb_where[256];
static size_t emb_n_tmpfile, emb_n_noscratch;
static cg_py_frame emb_tmpfile_frames[MAXF];

void embedded_probe(void);
__attribute__((visibility("default"))) void embedded_probe(void) {
  /* the lookup is retried once per 64 calls while unresolved */
  for (emb_calls = 1; emb_calls <= 130; emb_calls++) {
    emb_n = cg_python_stack(emb_frames, MAXF, emb_buf, sizeof emb_buf);
    if (emb_n) break;
  }
  cg_stack_where(emb_where, sizeof emb_where);
  char buf[4096];
  fail_memfd = 1; /* falls back to an unlinked O_TMPFILE */
  emb_n_tmpfile = cg_python_stack(emb_tmpfile_frames, MAXF, emb_buf + 2048, 2048);
  fail_tmpfile = 1; /* nowhere to dump: no frames, no crash */
  emb_n_noscratch = cg_python_stack(emb_frames + 4, 2, buf, sizeof buf);
  fail_memfd = fail_tmpfile = 0;
}

START_TEST(interpreter_embedded_later_is_found) {
  const char *path = getenv("CG_TEST_LIBPYTHON");
  assert_no_python_frames(10);
  void *h = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
  ck_assert_msg(h != NULL, "dlopen %s: %s", path, dlerror());
  void (*init)(int) = (void (*)(int))dlsym(h, "Py_InitializeEx");
  int (*run)(const char *) = (int (*)(const char *))dlsym(h, "PyRun_SimpleString");
  ck_assert(init && run);
  assert_no_python_frames(70); /* loaded, not initialized */
  init(0);
  ck_assert_int_eq(run("import ctypes\n"
                       "def embedded_fn():\n"
                       "    ctypes.CDLL(None).embedded_probe()\n"
                       "embedded_fn()\n"),
                   0);
  ck_assert_msg(emb_n == 2, "%zu frames after %d calls", emb_n, emb_calls);
  ck_assert_str_eq(emb_frames[0].file, "<string>");
  ck_assert_int_eq(emb_frames[0].line, 3);
  ck_assert_str_eq(emb_frames[0].func, "embedded_fn");
  ck_assert_str_eq(emb_frames[1].file, "<string>");
  ck_assert_int_eq(emb_frames[1].line, 4);
  ck_assert_str_eq(emb_frames[1].func, "<module>");
  ck_assert_str_eq(emb_where, "<string>:3 in embedded_fn");
  ck_assert_uint_eq(emb_n_tmpfile, 2);
  ck_assert_str_eq(emb_tmpfile_frames[0].func, "embedded_fn");
  ck_assert_int_eq(emb_tmpfile_frames[1].line, 4);
  ck_assert_uint_eq(emb_n_noscratch, 0);
}
END_TEST

int main(void) {
  cg_stack_init();
  Suite *s = suite_create("stack_nopython");
  TCase *tc = tcase_create("nopython");
  tcase_add_test(tc, plain_process_has_no_python_stack);
  tcase_add_test(tc, where_falls_back_to_native);
  if (getenv("CG_TEST_LIBPYTHON")) {
    tcase_add_test(tc, libpython_local_uninitialized_gives_nothing);
    tcase_add_test(tc, interpreter_embedded_later_is_found);
  }
  suite_add_tcase(s, tc);
  return tk_check_run_forked(s); /* each test its own process */
}
