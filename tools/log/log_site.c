#include "log_site.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capguard/frame_filter.h"
#include "capguard/log_keys.h"
#include "cxa_demangle.h"
#include "frame_source.h"

static const char *str(const cgl_jv *o, const char *k) {
  return cgl_jstr(cgl_jget(o, k));
}

static void python_frame(const cgl_jv *fr, char *buf, size_t cap) {
  const char *file = str(fr, CG_KEY_FILE), *func = str(fr, CG_KEY_FUNC);
  const cgl_jv *line = cgl_jget(fr, CG_KEY_LINE);
  snprintf(buf, cap, "%s:%lld in %s", file ? file : "?", cgl_jis(line, CGL_J_INTEGER) ? line->u.i : 0LL,
           func ? func : "?");
}

void cgl_python_top(const cgl_jv *python, char *buf, size_t cap) {
  const cgl_jv *fr = cgl_jsize(python) ? cgl_jfirst(python) : NULL;
  if (cgl_jis(fr, CGL_J_OBJECT))
    python_frame(fr, buf, cap);
  else if (cap)
    buf[0] = '\0';
}

/* Length of frame without a trailing " [0x...]" absolute address. */
static size_t without_address(const char *frame) {
  size_t n = strlen(frame);
  if (n >= 5 && frame[n - 1] == ']') {
    size_t open = n - 1;
    while (open > 0 && frame[open - 1] != '[')
      open--;
    bool hex = open >= 2 && frame[open - 2] == ' ' && n - open >= 4 && frame[open] == '0' &&
               frame[open + 1] == 'x';
    for (size_t i = open + 2; hex && i < n - 1; i++)
      hex = strchr("0123456789abcdefABCDEF", frame[i]) != NULL;
    if (hex)
      n = open - 2;
  }
  return n;
}

void cgl_readable_frame(const char *frame, char *buf, size_t cap) {
  size_t n = without_address(frame);
  /* "obj(sym+0xoff)": demangle sym when it is a C++ name */
  const char *open = memchr(frame, '(', n);
  const char *plus = open ? memchr(open, '+', (size_t)(frame + n - open)) : NULL;
  if (open && plus && open[1] == '_' && open[2] == 'Z' && frame[n - 1] == ')') {
    size_t slen = (size_t)(plus - open - 1);
    char *sym = malloc(slen + 1);
    char *pretty = NULL;
    int status = -1;
    if (sym) {
      memcpy(sym, open + 1, slen);
      sym[slen] = '\0';
      pretty = __cxa_demangle(sym, NULL, NULL, &status);
    }
    free(sym);
    if (pretty && status == 0) {
      snprintf(buf, cap, "%.*s(%s%.*s", (int)(open - frame), frame, pretty,
               (int)(frame + n - plus), plus);
      free(pretty);
      return;
    }
    free(pretty);
  }
  snprintf(buf, cap, "%.*s", (int)n, frame);
}

/* The readable frame, and " at file.c:123" when the object's debug info says. */
static void native_site(const char *frame, const char *argv0, char *buf, size_t cap) {
  char bare[1024], where[512], named[1024];
  size_t n = without_address(frame);
  snprintf(bare, sizeof bare, "%.*s", (int)n, frame);
  /* a function the object does not export: named from its symbol table */
  if (cgl_frame_named(bare, argv0, named, sizeof named))
    frame = named;
  cgl_readable_frame(frame, buf, cap);
  size_t used = strlen(buf);
  if (cgl_frame_source(bare, argv0, where, sizeof where) && used < cap)
    snprintf(buf + used, cap - used, " at %s", where);
}

void cgl_site_from_stacks(const cgl_jv *python, const cgl_jv *native, const char *argv0, char *buf,
                          size_t cap) {
  const cgl_jv *fr = cgl_jsize(python) ? cgl_jfirst(python) : NULL, *f;
  for (f = fr; f; f = cgl_jnext(f)) {
    if (cgl_jis(f, CGL_J_OBJECT) && !cg_py_file_is_machinery(str(f, CG_KEY_FILE))) {
      fr = f;
      break;
    }
  }
  if (cgl_jis(fr, CGL_J_OBJECT)) {
    python_frame(fr, buf, cap);
    return;
  }
  const char *fallback = NULL;
  for (f = cgl_jsize(native) ? cgl_jfirst(native) : NULL; f; f = cgl_jnext(f)) {
    if (!cgl_jis(f, CGL_J_STRING))
      continue;
    if (!fallback)
      fallback = f->u.s;
    if (!cg_frame_is_plumbing(f->u.s)) {
      native_site(f->u.s, argv0, buf, cap);
      return;
    }
  }
  if (fallback)
    native_site(fallback, argv0, buf, cap);
  else
    snprintf(buf, cap, "(no stack)");
}

/* A native frame as the shim writes it: "obj+0x1a" or "obj(sym+0x1a)", maybe
 * with " [0x...]" after it; a Python site ("file.py:12 in f") has spaces. */
static bool native_frame(const char *text) {
  size_t n = without_address(text);
  if (!n || memchr(text, ' ', n))
    return false;
  for (size_t i = 0; i + 3 <= n; i++)
    if (text[i] == '+' && text[i + 1] == '0' && text[i + 2] == 'x')
      return true;
  return false;
}

void cgl_readable_site(const char *text, const char *argv0, char *buf, size_t cap) {
  if (native_frame(text)) {
    native_site(text, argv0, buf, cap);
    return;
  }
  /* "model.py:50 in f (lib.so(_ZN...+0x29c))": the Python line, and its
   * native frame made readable in the parentheses */
  size_t n = strlen(text);
  const char *open = NULL;
  for (const char *p = strstr(text, " ("); p; p = strstr(p + 1, " ("))
    open = p;
  if (open && n && text[n - 1] == ')') {
    char inner[1024], readable[1024];
    snprintf(inner, sizeof inner, "%.*s", (int)(text + n - 1 - (open + 2)), open + 2);
    if (native_frame(inner)) {
      native_site(inner, argv0, readable, sizeof readable);
      snprintf(buf, cap, "%.*s (%s)", (int)(open - text), text, readable);
      return;
    }
  }
  /* "obj+0x1a at file.c:12", the shim's own line lookup done: the frame named
   * from the symbol table where the object does not export its function */
  const char *at = strstr(text, " at ");
  if (at && !strstr(at + 4, " ")) {
    char frame[1024], named[1024], readable[1024];
    snprintf(frame, sizeof frame, "%.*s", (int)(at - text), text);
    if (native_frame(frame)) {
      /* named by the shim already (its own symbol-table lookup), or named here */
      cgl_readable_frame(cgl_frame_named(frame, argv0, named, sizeof named) ? named : frame, readable,
                         sizeof readable);
      snprintf(buf, cap, "%s%s", readable, at);
      return;
    }
  }
  snprintf(buf, cap, "%s", text);
}

bool cgl_stack_runtime_lazy(const cgl_jv *native) {
  for (const cgl_jv *f = cgl_jsize(native) ? cgl_jfirst(native) : NULL; f; f = cgl_jnext(f)) {
    const char *s = cgl_jstr(f);
    if (!s)
      continue;
    if (strstr(s, "__cudaGetKernel") || strstr(s, "cudaGetFuncBySymbol") ||
        (strstr(s, "libcudart") && (strstr(s, "azy") || strstr(s, "LAZY"))))
      return true;
  }
  return false;
}
