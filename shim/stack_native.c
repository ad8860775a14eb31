/* Native stack capture: glibc backtrace() into a local array, dladdr for names.
 * No backtrace_symbols (it mallocs) and no stdio (vfprintf may allocate):
 * formatting is done by hand into the caller's buffer. backtrace() itself
 * allocates only on its first call (it dlopens libgcc_s), which
 * cg_stack_init (stack_python.c, with the Python lookups) makes early. */
#include "stack.h"

#include <dlfcn.h>
#include <execinfo.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

/* Deepest stack walked; frames past it are not reported. */
#define CG_BT_DEPTH 128

/* An append-only writer over a caller's buffer that never overflows: it keeps
 * len < cap so a NUL always fits, copies what fits, and says when it cut. */
typedef struct {
  char *buf;
  size_t cap;
  size_t len;
} sbuf;

static bool put_mem(sbuf *w, const char *s, size_t n) {
  size_t room = w->cap - w->len - 1;
  size_t k = n < room ? n : room;
  memcpy(w->buf + w->len, s, k);
  w->len += k;
  return k == n;
}

static bool put_str(sbuf *w, const char *s) { return put_mem(w, s, strlen(s)); }

static bool put_hex(sbuf *w, uintptr_t v) {
  char tmp[2 + 2 * sizeof v];
  size_t i = sizeof tmp;
  do {
    tmp[--i] = "0123456789abcdef"[v & 0xf];
    v >>= 4;
  } while (v);
  tmp[--i] = 'x';
  tmp[--i] = '0';
  return put_mem(w, tmp + i, sizeof tmp - i);
}

static const char *base_name(const char *path) {
  if (!path || !*path) return "?";
  const char *slash = strrchr(path, '/');
  return slash ? slash + 1 : path;
}

/* Symbolizes one return address into w as "obj(sym+0x1a)" or "obj+0x1234"
 * (and " [0x7f..]" when with_addr). Looks up addr-1: a return address can
 * point past the end of a function that ends in a call to a noreturn one. */
static bool put_frame(sbuf *w, void *addr, bool with_addr) {
  Dl_info info;
  uintptr_t a = (uintptr_t)addr;
  bool ok;
  if (a > 1 && dladdr((void *)(a - 1), &info) && info.dli_fname) {
    ok = put_str(w, base_name(info.dli_fname));
    if (info.dli_sname && info.dli_saddr) {
      ok = ok && put_str(w, "(") && put_str(w, info.dli_sname) && put_str(w, "+") &&
           put_hex(w, a - (uintptr_t)info.dli_saddr) && put_str(w, ")");
    } else {
      ok = ok && put_str(w, "+") && put_hex(w, a - (uintptr_t)info.dli_fbase);
    }
  } else {
    ok = put_str(w, "??");
  }
  if (with_addr) ok = ok && put_str(w, " [") && put_hex(w, a) && put_str(w, "]");
  return ok;
}

/* Index of our caller's frame: the one holding our own return address.
 * Usually 1, but a wrapper around backtrace() (a sanitizer's interceptor)
 * adds frames of its own in front. */
static size_t caller_index(void *const *frames, int got, const void *ret) {
  for (int i = 0; i < got && i < 8; i++)
    if (frames[i] == ret) return (size_t)i;
  return 1;
}

__attribute__((noinline)) size_t cg_native_stack(int skip, const char **out, size_t max,
                                                 char *buf, size_t bufcap) {
  if (!out || !buf || max == 0 || bufcap == 0) return 0;
  if (skip < 0) skip = 0;
  void *frames[CG_BT_DEPTH];
  /* Walk deep enough for a few wrapper frames, our caller, skip and max. */
  if ((size_t)skip >= CG_BT_DEPTH - 8) return 0;
  size_t want = max > CG_BT_DEPTH - 8 - (size_t)skip ? CG_BT_DEPTH : 8 + (size_t)skip + max;
  int got = backtrace(frames, (int)want);
  size_t first = caller_index(frames, got, __builtin_return_address(0)) + (size_t)skip;
  if (got <= 0 || (size_t)got <= first) return 0;

  sbuf w = {buf, bufcap, 0};
  size_t n = 0;
  for (size_t i = first; i < (size_t)got && n < max; i++) {
    if (w.len + 1 >= w.cap) break; /* put_mem needs len < cap - 1 to write anything */
    size_t start = w.len;
    /* out of room: stop rather than hand back a cut frame */
    if (!put_frame(&w, frames[i], true)) break;
    w.buf[w.len++] = '\0'; /* put_frame left len <= cap - 1 */
    out[n++] = w.buf + start;
  }
  return n;
}

/* Frames to skip for "where": capguard's own, the CUDA libraries the call
 * went through (driver libcuda.so.1, runtime libcudart.so.12 or a wheel's
 * libcudart-<hash>.so.12), and a sanitizer runtime's interceptor of
 * backtrace() in a sanitized build. */
static bool uninteresting(const Dl_info *info, const void *own_base) {
  if (info->dli_fbase == own_base) return true;
  const char *b = base_name(info->dli_fname);
  return strncmp(b, "libcuda.so", 10) == 0 || strncmp(b, "libcudart", 9) == 0 ||
         strncmp(b, "libclang_rt.", 12) == 0 || strncmp(b, "libasan.so", 10) == 0;
}

size_t cg_native_where_frames(void *const *frames, size_t n, char *buf, size_t cap) {
  if (!buf || cap == 0) return 0;
  buf[0] = '\0';
  Dl_info self;
  const void *own_base = NULL;
  if (dladdr((void *)(uintptr_t)&cg_native_where_frames, &self)) own_base = self.dli_fbase;
  for (size_t i = 0; i < n; i++) {
    Dl_info info;
    uintptr_t a = (uintptr_t)frames[i];
    if (a <= 1 || !dladdr((void *)(a - 1), &info) || !info.dli_fname) continue;
    if (uninteresting(&info, own_base)) continue;
    sbuf w = {buf, cap, 0};
    (void)put_frame(&w, frames[i], false); /* too long for cap: keep what fits */
    buf[w.len] = '\0';
    return w.len;
  }
  return 0;
}
