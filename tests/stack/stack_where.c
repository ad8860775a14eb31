/* cg_stack_where and cg_native_where (stack_where.h), built into the stack
 * tests' library beside shim/stack_*.c. */
#include "stack_where.h"

#include <execinfo.h>
#include <string.h>

#include "capguard/text_out.h"
#include "stack.h"

#define CG_BT_DEPTH 128

/* Index of our caller's frame: the one holding our own return address.
 * Usually 1, but a wrapper around backtrace() (a sanitizer's interceptor)
 * adds frames of its own in front. */
static size_t caller_index(void *const *frames, int got, const void *ret) {
  for (int i = 0; i < got && i < 8; i++)
    if (frames[i] == ret) return (size_t)i;
  return 1;
}

__attribute__((noinline)) size_t cg_native_where(char *buf, size_t cap) {
  if (!buf || cap == 0) return 0;
  void *frames[CG_BT_DEPTH];
  int got = backtrace(frames, CG_BT_DEPTH);
  if (got <= 0) {
    buf[0] = '\0';
    return 0;
  }
  size_t first = caller_index(frames, got, __builtin_return_address(0));
  return cg_native_where_frames(frames + first, (size_t)got - first, buf, cap);
}


/* ---- where ------------------------------------------------------------- */

/* Drops the site-packages prefix: "vllm/worker/model_runner.py". */
static const char *short_path(const char *file) {
  const char *best = file;
  static const char *const roots[] = {"site-packages/", "dist-packages/"};
  for (size_t r = 0; r < 2; r++) {
    const char *p = file, *hit;
    while ((hit = strstr(p, roots[r])) != NULL) {
      p = hit + strlen(roots[r]);
      if (p > best) best = p;
    }
  }
  return best;
}

size_t cg_stack_where(char *buf, size_t cap) {
  if (!buf || cap == 0) return 0;
  buf[0] = '\0';
  cg_py_frame f;
  char sb[2048];
  if (cg_python_stack(&f, 1, sb, sizeof sb) == 1) {
    cg_out w = cg_out_init(buf, cap); /* too long for cap: keep what fits */
    cg_out_str(&w, short_path(f.file));
    cg_out_char(&w, ':');
    cg_out_u64(&w, f.line > 0 ? (unsigned)f.line : 0);
    cg_out_str(&w, " in ");
    cg_out_str(&w, f.func);
    cg_out_finish(&w);
    return cg_out_stored(&w);
  }
  return cg_native_where(buf, cap);
}
