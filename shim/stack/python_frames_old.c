#include "python_frames_old.h"

#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

/* Where things are in 3.9 and 3.10 (the same in both; checked against their
 * headers, LP64): PyThreadState.frame; PyFrameObject's f_back and f_code;
 * PyCodeObject's co_filename and co_name; a str's length, state bits and
 * characters (after the PyASCIIObject header when compact and ASCII, after
 * the PyCompactUnicodeObject one when compact, else behind data.any). */
enum {
  OB_TYPE = 8,
  TS_FRAME = 24,
  F_BACK = 24,
  F_CODE = 32,
  CO_FILENAME = 104,
  CO_NAME = 112,
  U_LENGTH = 16,
  U_STATE = 32,
  U_ASCII_CHARS = 48,
  U_COMPACT_CHARS = 72,
  U_DATA_ANY = 72,
};
enum { U_KIND_SHIFT = 2, U_KIND_MASK = 7, U_COMPACT = 0x20, U_ASCII = 0x40, U_READY = 0x80 };

/* Like the dump: at most this many characters of a name, and frames. */
#define CG_PY_OLD_MAX_CHARS 500
#define CG_PY_OLD_MAX_DEPTH 100

typedef int (*lineno_fn)(const void *frame);

/* Atomic: two threads may resolve at once (the same values). */
static _Atomic(const void *) frame_type, code_type, str_type;
static _Atomic(void *) g_lineno; /* set last: the reader is ready */

bool cg_py_dump_takes_refs(unsigned version) { return version == 0x0309 || version == 0x030a; }

bool cg_py_old_resolve(void *handle) {
  if (atomic_load(&g_lineno))
    return true;
  /* A debug build's objects start with two more pointers (Py_TRACE_REFS). */
  if (cg_real_dlsym(handle, "_Py_NegativeRefcount") || cg_real_dlsym(handle, "_Py_RefTotal"))
    return false;
  void *lineno = cg_real_dlsym(handle, "PyFrame_GetLineNumber"); /* reads only, in both versions */
  const void *frame = cg_real_dlsym(handle, "PyFrame_Type"), *code = cg_real_dlsym(handle, "PyCode_Type"),
             *str = cg_real_dlsym(handle, "PyUnicode_Type");
  if (!lineno || !frame || !code || !str)
    return false;
  atomic_store(&frame_type, frame);
  atomic_store(&code_type, code);
  atomic_store(&str_type, str);
  atomic_store(&g_lineno, lineno);
  return true;
}

static inline const void *word_at(const void *base, size_t off) {
  return *(const void *const *)((const char *)base + off);
}

typedef struct {
  char *buf;
  size_t cap, len;
} text_sink;

static bool put_bytes(text_sink *t, const char *s, size_t n) {
  if (t->len + n > t->cap)
    return false;
  memcpy(t->buf + t->len, s, n);
  t->len += n;
  return true;
}

static bool put_code_point(text_sink *t, uint32_t c) {
  char u[4];
  size_t n;
  if (c < 0x80) {
    u[0] = (char)c;
    n = 1;
  } else if (c < 0x800) {
    u[0] = (char)(0xc0 | c >> 6);
    u[1] = (char)(0x80 | (c & 0x3f));
    n = 2;
  } else if (c < 0x10000) {
    u[0] = (char)(0xe0 | c >> 12);
    u[1] = (char)(0x80 | ((c >> 6) & 0x3f));
    u[2] = (char)(0x80 | (c & 0x3f));
    n = 3;
  } else {
    u[0] = (char)(0xf0 | (c >> 18 & 7));
    u[1] = (char)(0x80 | ((c >> 12) & 0x3f));
    u[2] = (char)(0x80 | ((c >> 6) & 0x3f));
    u[3] = (char)(0x80 | (c & 0x3f));
    n = 4;
  }
  return put_bytes(t, u, n);
}

/* A str as UTF-8 with its NUL, "???" for anything that is not a ready
 * str (as the dump writes); NULL when buf has no room left. */
static const char *put_str(text_sink *t, const void *s) {
  size_t start = t->len;
  const void *chars = NULL;
  uint32_t state = 0;
  size_t len = 0;
  if (s && word_at(s, OB_TYPE) == atomic_load_explicit(&str_type, memory_order_relaxed)) {
    memcpy(&state, (const char *)s + U_STATE, sizeof state);
    memcpy(&len, (const char *)s + U_LENGTH, sizeof len);
    if (state & U_READY)
      chars = (state & U_COMPACT) ? (const char *)s + ((state & U_ASCII) ? U_ASCII_CHARS : U_COMPACT_CHARS)
                                  : word_at(s, U_DATA_ANY);
  }
  unsigned kind = (state >> U_KIND_SHIFT) & U_KIND_MASK;
  bool ok = true;
  if (!chars || (kind != 1 && kind != 2 && kind != 4)) {
    ok = put_bytes(t, "???", 3);
  } else {
    size_t n = len < CG_PY_OLD_MAX_CHARS ? len : CG_PY_OLD_MAX_CHARS;
    for (size_t i = 0; i < n && ok; i++) {
      uint32_t c = kind == 1   ? ((const uint8_t *)chars)[i]
                   : kind == 2 ? ((const uint16_t *)chars)[i]
                               : ((const uint32_t *)chars)[i];
      ok = put_code_point(t, c);
    }
  }
  if (!ok || !put_bytes(t, "", 1)) {
    t->len = start;
    return NULL;
  }
  return t->buf + start;
}

size_t cg_py_old_frames(const void *tstate, cg_py_frame *out, size_t max, char *buf, size_t bufcap) {
  lineno_fn lineno = (lineno_fn)atomic_load(&g_lineno);
  if (!lineno || !tstate)
    return 0;
  const void *frame_t = atomic_load_explicit(&frame_type, memory_order_relaxed);
  const void *code_t = atomic_load_explicit(&code_type, memory_order_relaxed);
  text_sink t = {buf, bufcap, 0};
  size_t n = 0;
  const void *f = word_at(tstate, TS_FRAME);
  /* The frames are the calling thread's, and it is inside this call: none
   * changes or goes away while they are read. Anything of the wrong type
   * ends the walk. */
  for (int depth = 0; f && n < max && depth < CG_PY_OLD_MAX_DEPTH; depth++) {
    const void *code = word_at(f, OB_TYPE) == frame_t ? word_at(f, F_CODE) : NULL;
    if (!code || word_at(code, OB_TYPE) != code_t)
      break;
    const char *file = put_str(&t, word_at(code, CO_FILENAME));
    const char *func = file ? put_str(&t, word_at(code, CO_NAME)) : NULL;
    if (!func)
      break;
    out[n++] = (cg_py_frame){.file = file, .line = lineno(f), .func = func};
    f = word_at(f, F_BACK);
  }
  return n;
}
