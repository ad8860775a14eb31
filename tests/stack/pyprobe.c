/* A tiny library a Python test loads with ctypes: it runs the stack code the
 * way the shim would (inside a foreign call, the GIL released) and reports
 * what it saw as text. The stack code is compiled into this library, so for
 * cg_stack_where this library is "capguard itself". */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "stack.h"
#include "stack_where.h"

__attribute__((constructor)) static void probe_init(void) { cg_stack_init(); }

/* Writes "py\t<file>\t<line>\t<func>\n" per Python frame, innermost first,
 * then "where\t<line>\n". max_frames and bufcap go to cg_python_stack.
 * Returns the number of Python frames, or -1 when out is too small. */
int probe_ex(char *out, int cap, int max_frames, int bufcap);
int probe_ex(char *out, int cap, int max_frames, int bufcap) {
  cg_py_frame frames[CG_MAX_PY_FRAMES * 4];
  char buf[65536];
  if (max_frames < 0 || (size_t)max_frames > sizeof frames / sizeof frames[0]) return -1;
  if (bufcap < 0 || (size_t)bufcap > sizeof buf) return -1;
  size_t n = cg_python_stack(frames, (size_t)max_frames, buf, (size_t)bufcap);
  char where[512];
  cg_stack_where(where, sizeof where);
  size_t len = 0;
  for (size_t i = 0; i < n; i++) {
    int w = snprintf(out + len, (size_t)cap - len, "py\t%s\t%d\t%s\n", frames[i].file, frames[i].line,
                     frames[i].func);
    if (w < 0 || (size_t)w >= (size_t)cap - len) return -1;
    len += (size_t)w;
  }
  int w = snprintf(out + len, (size_t)cap - len, "where\t%s\n", where);
  if (w < 0 || (size_t)w >= (size_t)cap - len) return -1;
  return (int)n;
}

int probe(char *out, int cap);
int probe(char *out, int cap) { return probe_ex(out, cap, CG_MAX_PY_FRAMES, 16384); }

static double now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

/* Microseconds per call of each capture, averaged over n calls from the
 * current (Python) stack. */
double bench_python(int n);
double bench_python(int n) {
  cg_py_frame frames[CG_MAX_PY_FRAMES];
  char buf[16384];
  double t0 = now_us();
  for (int i = 0; i < n; i++) (void)cg_python_stack(frames, CG_MAX_PY_FRAMES, buf, sizeof buf);
  return (now_us() - t0) / n;
}

double bench_native(int n);
double bench_native(int n) {
  const char *frames[CG_MAX_NATIVE_FRAMES];
  char buf[8192];
  double t0 = now_us();
  for (int i = 0; i < n; i++) (void)cg_native_stack(0, frames, CG_MAX_NATIVE_FRAMES, buf, sizeof buf);
  return (now_us() - t0) / n;
}

double bench_where(int n);
double bench_where(int n) {
  char buf[512];
  double t0 = now_us();
  for (int i = 0; i < n; i++) (void)cg_stack_where(buf, sizeof buf);
  return (now_us() - t0) / n;
}
