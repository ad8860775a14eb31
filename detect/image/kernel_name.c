/* Kernel names for a person (capguard/kernel_name.h). The shortening walks
 * the demangled name once, at the outermost level only: what is inside
 * "<...>" goes, so do the parameters ("(" not followed by "::": the local
 * scope of a lambda's function stays), and the return type that a template
 * function's name starts with (the text before the last space outside any
 * bracket). "(anonymous namespace)", operator names (operator<, operator())
 * and lambdas ("{lambda(int)#1}") are copied whole. Anything it cannot read
 * (brackets that do not close, nothing left) gives the demangled name whole. */
#include "capguard/kernel_name.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* The shortened name's characters are numbered as they are produced; the
 * writer keeps those in [from, to) (to: SIZE_MAX on the counting walk). */
typedef struct {
  char *out;
  size_t cap, at, from, to;
  size_t name_start; /* first character after the last outer space */
  size_t last;       /* one past the last character that is not a space */
} writer;

static void put(writer *w, char c) {
  if (w->at >= w->from && w->at < w->to) {
    size_t k = w->at - w->from;
    if (k + 1 < w->cap)
      w->out[k] = c;
  }
  w->at++;
  if (c != ' ')
    w->last = w->at;
}

static void put_n(writer *w, const char *s, size_t n) {
  for (size_t i = 0; i < n; i++)
    put(w, s[i]);
}

static bool ident_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '$';
}

/* Index one past the bracket that closes s[i] (open, close), counting only
 * those two; 0 when it never closes. Parentheses inside template arguments
 * ("(a>b)", "void (int)") are counted when open is '<'. */
static size_t closing(const char *s, size_t n, size_t i, char open, char close) {
  int depth = 0, parens = 0;
  for (size_t k = i; k < n; k++) {
    char c = s[k];
    if (open == '<' && c == '(')
      parens++;
    else if (open == '<' && c == ')')
      parens--;
    else if (parens > 0)
      continue;
    else if (c == open)
      depth++;
    else if (c == close && --depth == 0)
      return k + 1;
  }
  return 0;
}

/* The operator tokens after "operator", longest first. Arrays, not
 * pointers: a table of pointers is relocated at every start-up of every
 * process the shim is in. */
static const char op_tokens[][4] = {
    "<=>", "<<=", ">>=", "->*", "()", "[]", "<<", ">>", "<=", ">=", "->", "==", "!=",
    "&&",  "||",  "++",  "--",  "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "<",
    ">",   "+",   "-",   "*",   "/",  "%",  "&",  "|",  "^",  "~",  "!",  "=",  ","};

/* At s[i] == 'o': the length of "operator" and what names it, or 0. */
static size_t operator_len(const char *s, size_t n, size_t i) {
  static const char kw[] = "operator";
  size_t k = sizeof kw - 1;
  if (n - i < k || memcmp(s + i, kw, k) || (i > 0 && ident_char(s[i - 1])) ||
      (i + k < n && ident_char(s[i + k])))
    return 0;
  for (size_t t = 0; t < sizeof op_tokens / sizeof op_tokens[0]; t++) {
    size_t tl = strlen(op_tokens[t]);
    if (n - i - k >= tl && !memcmp(s + i + k, op_tokens[t], tl))
      return k + tl;
  }
  if (i + k < n && s[i + k] == ' ') { /* operator new, operator delete[], operator int */
    size_t e = i + k + 1;
    while (e < n && (ident_char(s[e]) || s[e] == ':'))
      e++;
    if (n - e >= 2 && s[e] == '[' && s[e + 1] == ']')
      e += 2;
    return e - i;
  }
  return k;
}

/* One walk; false when a bracket does not close. */
static bool walk(const char *s, size_t n, writer *w) {
  static const char anon[] = "(anonymous namespace)";
  size_t i = 0;
  while (i < n) {
    char c = s[i];
    size_t k;
    if (c == '(' && n - i >= sizeof anon - 1 && !memcmp(s + i, anon, sizeof anon - 1)) {
      put_n(w, anon, sizeof anon - 1);
      i += sizeof anon - 1;
    } else if (c == 'o' && (k = operator_len(s, n, i)) != 0) {
      put_n(w, s + i, k);
      i += k;
    } else if (c == '<') {
      if (!(k = closing(s, n, i, '<', '>')))
        return false;
      put_n(w, "<...>", 5);
      i = k;
    } else if (c == '{') { /* {lambda(int)#1}, {unnamed type#1} */
      if (!(k = closing(s, n, i, '{', '}')))
        return false;
      put_n(w, s + i, k - i);
      i = k;
    } else if (c == '(') {
      if (!(k = closing(s, n, i, '(', ')')))
        return false;
      if (n - k < 2 || s[k] != ':' || s[k + 1] != ':')
        return true; /* the parameters: the name ends here */
      /* a function's local scope: f(int)::{lambda()#1} */
      if (k == i + 2)
        put_n(w, "()", 2);
      else
        put_n(w, "(...)", 5);
      i = k;
    } else if (c == ' ') {
      put(w, c);
      w->name_start = w->at;
      i++;
    } else {
      put(w, c);
      i++;
    }
  }
  return true;
}

static size_t copy_whole(const char *s, char *out, size_t cap) {
  size_t n = strlen(s);
  if (cap) {
    size_t k = n < cap ? n : cap - 1;
    memcpy(out, s, k);
    out[k] = '\0';
  }
  return n;
}

size_t cg_kernel_name_shorten(const char *demangled, char *out, size_t cap) {
  size_t n = strlen(demangled);
  writer count = {.out = out, .cap = 0, .to = 0};
  if (!walk(demangled, n, &count) || count.last <= count.name_start)
    return copy_whole(demangled, out, cap);
  writer w = {.out = out, .cap = cap, .from = count.name_start, .to = count.last};
  walk(demangled, n, &w);
  size_t len = count.last - count.name_start;
  if (cap)
    out[len < cap ? len : cap - 1] = '\0';
  return len;
}

size_t cg_kernel_display_name(const char *name, cg_demangle_fn dm, char *out, size_t cap) {
  if (dm && name[0] == '_' && name[1] == 'Z') {
    int status = -1;
    char *pretty = dm(name, NULL, NULL, &status);
    if (pretty && status == 0) {
      size_t len = cg_kernel_name_shorten(pretty, out, cap);
      free(pretty);
      return len;
    }
    free(pretty);
  }
  return copy_whole(name, out, cap);
}
