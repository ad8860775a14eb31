/* A line of the log looked at without building it (log_skim.h). */
#include "log_skim.h"

#include <limits.h>
#include <string.h>

enum { MAX_DEPTH = 32, MAX_DIGITS = 19 };

typedef struct {
  const char *p, *end;
  cgl_skim *s;
} scan;

static void ws(scan *c) {
  while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' || *c->p == '\r'))
    c->p++;
}

/* A string from its opening quote: plain bytes and simple escapes only. */
static bool string(scan *c, const char **start, size_t *len, bool *escaped) {
  c->p++;
  *start = c->p;
  *escaped = false;
  while (c->p < c->end) {
    unsigned char ch = (unsigned char)*c->p;
    if (ch == '"') {
      *len = (size_t)(c->p - *start);
      c->p++;
      return true;
    }
    if (ch < 0x20 || ch > 0x7f)
      return false; /* jansson refuses control bytes and checks UTF-8: let it say */
    if (ch == '\\') {
      if (c->p + 1 >= c->end || !strchr("\"\\/bfnrt", c->p[1]) || !c->p[1])
        return false; /* \u (a NUL, a lone surrogate) or a bad escape: jansson decides */
      *escaped = true;
      c->p++;
    }
    c->p++;
  }
  return false;
}

static bool digit(scan *c) { return c->p < c->end && *c->p >= '0' && *c->p <= '9'; }

/* A number: an integer that fits a long long, or a fraction without exponent. */
static bool number(scan *c, cgl_skim_member *m) {
  const char *start = c->p;
  bool neg = *c->p == '-';
  if (neg)
    c->p++;
  if (!digit(c))
    return false;
  unsigned long long v = 0;
  int digits = 0;
  if (*c->p == '0') {
    c->p++;
    digits = 1;
    if (digit(c))
      return false;
  } else {
    while (digit(c)) {
      if (++digits > MAX_DIGITS)
        return false;
      v = v * 10 + (unsigned)(*c->p++ - '0');
    }
    if (v > LLONG_MAX)
      return false; /* jansson says too big, or reads LLONG_MIN: it decides */
  }
  cgl_skim_kind kind = CGL_SKIM_INTEGER;
  if (c->p < c->end && *c->p == '.') {
    c->p++;
    if (!digit(c))
      return false;
    for (int n = 0; digit(c); n++, c->p++)
      if (n > 300)
        return false;
    kind = CGL_SKIM_OTHER;
  }
  if (c->p < c->end && (*c->p == 'e' || *c->p == 'E'))
    return false;
  if (m) {
    m->kind = kind;
    m->integer = neg ? -(long long)v : (long long)v;
    m->value = start;
    m->value_len = (size_t)(c->p - start);
  }
  return true;
}

static bool word(scan *c, const char *w) {
  size_t n = strlen(w);
  if ((size_t)(c->end - c->p) < n || memcmp(c->p, w, n))
    return false;
  c->p += n;
  return true;
}

static bool value(scan *c, int depth, cgl_skim_member *m, cgl_skim_member *out, size_t *n_out);

/* An object from its '{': members with no key twice; when out, they are kept there. */
static bool object(scan *c, int depth, cgl_skim_member *out, size_t *n_out) {
  const char *keys[CGL_SKIM_MEMBERS];
  size_t lens[CGL_SKIM_MEMBERS], n = 0;
  c->p++;
  ws(c);
  if (c->p < c->end && *c->p == '}') {
    c->p++;
    return true;
  }
  for (;;) {
    if (c->p >= c->end || *c->p != '"' || n == CGL_SKIM_MEMBERS)
      return false;
    bool escaped;
    if (!string(c, &keys[n], &lens[n], &escaped) || escaped)
      return false; /* an escaped key may equal another once unescaped: jansson decides */
    for (size_t k = 0; k < n; k++)
      if (lens[k] == lens[n] && !memcmp(keys[k], keys[n], lens[n]))
        return false;
    ws(c);
    if (c->p >= c->end || *c->p != ':')
      return false;
    c->p++;
    ws(c);
    cgl_skim_member *m = out ? &out[n] : NULL;
    if (m) {
      m->key = keys[n];
      m->key_len = lens[n];
    }
    /* the top level's "capture" object is kept too */
    bool capture = depth == 1 && lens[n] == 7 && !memcmp(keys[n], "capture", 7);
    cgl_skim *s = c->s;
    if (capture && c->p < c->end && *c->p == '{') {
      s->capture_is_object = true;
      s->n_capture = 0;
      if (!object(c, depth + 1, s->capture, &s->n_capture))
        return false;
      if (m)
        m->kind = CGL_SKIM_OTHER;
    } else if (!value(c, depth, m, NULL, NULL)) {
      return false;
    }
    n++;
    if (out)
      *n_out = n;
    ws(c);
    if (c->p < c->end && *c->p == ',') {
      c->p++;
      ws(c);
      continue;
    }
    if (c->p < c->end && *c->p == '}') {
      c->p++;
      return true;
    }
    return false;
  }
}

static bool array(scan *c, int depth) {
  c->p++;
  ws(c);
  if (c->p < c->end && *c->p == ']') {
    c->p++;
    return true;
  }
  for (;;) {
    if (!value(c, depth, NULL, NULL, NULL))
      return false;
    ws(c);
    if (c->p < c->end && *c->p == ',') {
      c->p++;
      ws(c);
      continue;
    }
    if (c->p < c->end && *c->p == ']') {
      c->p++;
      return true;
    }
    return false;
  }
}

static bool value(scan *c, int depth, cgl_skim_member *m, cgl_skim_member *out, size_t *n_out) {
  if (c->p >= c->end)
    return false;
  if (m) {
    m->kind = CGL_SKIM_OTHER;
    m->escaped = false;
  }
  switch (*c->p) {
  case '{':
    return depth < MAX_DEPTH && object(c, depth + 1, out, n_out);
  case '[':
    return depth < MAX_DEPTH && array(c, depth + 1);
  case '"': {
    const char *start;
    size_t len;
    bool escaped;
    if (!string(c, &start, &len, &escaped))
      return false;
    if (m) {
      m->kind = CGL_SKIM_STRING;
      m->value = start;
      m->value_len = len;
      m->escaped = escaped;
    }
    return true;
  }
  case 't': return word(c, "true");
  case 'f': return word(c, "false");
  case 'n': return word(c, "null");
  default: return number(c, m);
  }
}

bool cgl_skim_line(const char *text, size_t len, cgl_skim *s) {
  scan c = {text, text + len, s};
  s->n_top = s->n_capture = 0;
  s->capture_is_object = false;
  ws(&c);
  if (c.p >= c.end || *c.p != '{')
    return false;
  if (!value(&c, 0, NULL, s->top, &s->n_top))
    return false;
  ws(&c);
  return c.p == c.end;
}

const cgl_skim_member *cgl_skim_get(const cgl_skim_member *m, size_t n, const char *key) {
  size_t len = strlen(key);
  for (size_t i = 0; i < n; i++)
    if (m[i].key_len == len && !memcmp(m[i].key, key, len))
      return &m[i];
  return NULL;
}
