/* A line of the log parsed without building a jansson tree (log_json.h). */
#include "log_json.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "log_pool.h" /* cgl_xrealloc */

enum { MAX_DEPTH = 32, MAX_MEMBERS = 48, MAX_DIGITS = 19, MAX_FRACTION = 300 };
#define KEEP_BYTES ((size_t)1 << 20) /* buffers kept from line to line up to this size */

typedef struct {
  const char *p, *end;
  cgl_json *j;
} scan;

/* A new node (its index: the array may move while a line is parsed). */
static size_t add(cgl_json *j, unsigned char type, const char *key, size_t key_len) {
  if (j->n == j->cap) {
    j->cap = j->cap ? j->cap * 2 : 256;
    j->nodes = cgl_xrealloc(j->nodes, j->cap * sizeof *j->nodes);
  }
  cgl_jv *v = &j->nodes[j->n];
  memset(v, 0, sizeof *v);
  v->type = type;
  v->key = key;
  v->key_len = (uint32_t)key_len;
  return j->n++;
}

static void ws(scan *c) {
  while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' || *c->p == '\r'))
    c->p++;
}

/* A string from its opening quote, copied into j->text (room for the whole
 * line was made): printable ASCII and the simple escapes only; keys take no
 * escape at all (an escaped key may equal another once unescaped). */
static bool string(scan *c, bool key, const char **out, size_t *len) {
  c->p++;
  char *dst = c->j->text + c->j->text_len, *start = dst;
  while (c->p < c->end) {
    unsigned char ch = (unsigned char)*c->p++;
    if (ch == '"') {
      *dst = '\0';
      *out = start;
      *len = (size_t)(dst - start);
      c->j->text_len += *len + 1;
      return true;
    }
    if (ch < 0x20 || ch > 0x7f)
      return false; /* jansson refuses control bytes and checks UTF-8: let it say */
    if (ch == '\\') {
      if (key || c->p >= c->end)
        return false;
      switch (*c->p++) {
      case '"':
        ch = '"';
        break;
      case '\\':
        ch = '\\';
        break;
      case '/':
        ch = '/';
        break;
      case 'b':
        ch = '\b';
        break;
      case 'f':
        ch = '\f';
        break;
      case 'n':
        ch = '\n';
        break;
      case 'r':
        ch = '\r';
        break;
      case 't':
        ch = '\t';
        break;
      default:
        return false; /* \u (a NUL, a lone surrogate) or a bad escape: jansson decides */
      }
    }
    *dst++ = (char)ch;
  }
  return false;
}

static bool digit(const scan *c) { return c->p < c->end && *c->p >= '0' && *c->p <= '9'; }

/* A number: an integer that fits a long long, or a fraction without exponent. */
static bool number(scan *c, size_t node) {
  bool neg = *c->p == '-';
  if (neg)
    c->p++;
  if (!digit(c))
    return false;
  unsigned long long v = 0;
  if (*c->p == '0') {
    c->p++;
    if (digit(c))
      return false;
  } else {
    for (int digits = 0; digit(c);) {
      if (++digits > MAX_DIGITS)
        return false;
      v = v * 10 + (unsigned)(*c->p++ - '0');
    }
    if (v > LLONG_MAX)
      return false; /* jansson says too big, or reads LLONG_MIN: it decides */
  }
  cgl_jv *n = &c->j->nodes[node];
  n->type = CGL_J_INTEGER;
  n->u.i = neg ? -(long long)v : (long long)v;
  if (c->p < c->end && *c->p == '.') {
    c->p++;
    if (!digit(c))
      return false;
    for (int k = 0; digit(c); k++, c->p++)
      if (k > MAX_FRACTION)
        return false;
    n->type = CGL_J_REAL;
    n->u.i = 0;
  }
  return !(c->p < c->end && (*c->p == 'e' || *c->p == 'E'));
}

static bool word(scan *c, const char *w, size_t n) {
  if ((size_t)(c->end - c->p) < n || memcmp(c->p, w, n))
    return false;
  c->p += n;
  return true;
}

static bool value(scan *c, int depth, const char *key, size_t key_len);

/* An object's members or an array's elements, from its opening bracket. */
static bool children(scan *c, int depth, size_t self, bool object) {
  char close = object ? '}' : ']';
  const char *keys[MAX_MEMBERS];
  size_t lens[MAX_MEMBERS], n = 0, prev = 0;
  c->p++;
  ws(c);
  if (c->p < c->end && *c->p == close) {
    c->p++;
    return true;
  }
  for (;;) {
    const char *key = NULL;
    size_t key_len = 0;
    if (object) {
      if (c->p >= c->end || *c->p != '"' || n == MAX_MEMBERS || !string(c, true, &key, &key_len))
        return false;
      for (size_t k = 0; k < n; k++)
        if (lens[k] == key_len && !memcmp(keys[k], key, key_len))
          return false; /* a key twice: jansson's to refuse */
      keys[n] = key;
      lens[n] = key_len;
      ws(c);
      if (c->p >= c->end || *c->p != ':')
        return false;
      c->p++;
      ws(c);
    }
    size_t child = c->j->n;
    if (!value(c, depth, key, key_len))
      return false;
    if (n++)
      c->j->nodes[prev].next = (uint32_t)(child - prev);
    prev = child;
    ws(c);
    if (c->p < c->end && *c->p == ',') {
      c->p++;
      ws(c);
      continue;
    }
    if (c->p < c->end && *c->p == close) {
      c->p++;
      c->j->nodes[self].len = (uint32_t)n;
      return true;
    }
    return false;
  }
}

static bool value(scan *c, int depth, const char *key, size_t key_len) {
  if (c->p >= c->end)
    return false;
  size_t self = add(c->j, CGL_J_NULL, key, key_len);
  switch (*c->p) {
  case '{':
  case '[': {
    bool object = *c->p == '{';
    c->j->nodes[self].type = object ? CGL_J_OBJECT : CGL_J_ARRAY;
    return depth < MAX_DEPTH && children(c, depth + 1, self, object);
  }
  case '"': {
    const char *s;
    size_t len;
    if (!string(c, false, &s, &len))
      return false;
    c->j->nodes[self].type = CGL_J_STRING;
    c->j->nodes[self].u.s = s;
    c->j->nodes[self].len = (uint32_t)len;
    return true;
  }
  case 't':
    c->j->nodes[self].type = CGL_J_TRUE;
    return word(c, "true", 4);
  case 'f':
    c->j->nodes[self].type = CGL_J_FALSE;
    return word(c, "false", 5);
  case 'n':
    return word(c, "null", 4);
  default:
    return number(c, self);
  }
}

bool cgl_json_parse_own(cgl_json *j, const char *text, size_t len, const cgl_jv **top) {
  cgl_json_release(j);
  j->n = j->text_len = 0;
  if (len >= UINT32_MAX / 2)
    return false;
  if (j->text_cap < len + 1) {
    free(j->text);
    j->text = cgl_xrealloc(NULL, len + 1);
    j->text_cap = len + 1;
  }
  scan c = {text, text + len, j};
  ws(&c);
  if (c.p >= c.end || *c.p != '{' || !value(&c, 0, NULL, 0))
    return false;
  ws(&c);
  *top = j->nodes;
  return c.p == c.end;
}

/* jansson's tree of v copied into nodes (strings and keys stay jansson's). */
static void from_jansson(cgl_json *j, json_t *v, const char *key) {
  static const unsigned char types[] = {
      [JSON_OBJECT] = CGL_J_OBJECT,   [JSON_ARRAY] = CGL_J_ARRAY, [JSON_STRING] = CGL_J_STRING,
      [JSON_INTEGER] = CGL_J_INTEGER, [JSON_REAL] = CGL_J_REAL,   [JSON_TRUE] = CGL_J_TRUE,
      [JSON_FALSE] = CGL_J_FALSE,     [JSON_NULL] = CGL_J_NULL};
  size_t self = add(j, types[json_typeof(v)], key, key ? strlen(key) : 0), prev = 0, n = 0;
  if (json_is_string(v)) {
    j->nodes[self].u.s = json_string_value(v);
    j->nodes[self].len = (uint32_t)json_string_length(v);
  } else if (json_is_integer(v)) {
    j->nodes[self].u.i = (long long)json_integer_value(v);
  } else if (json_is_array(v) || json_is_object(v)) {
    const char *k;
    json_t *child;
    size_t i;
    void *tmp;
    if (json_is_array(v)) {
      json_array_foreach(v, i, child) {
        size_t at = j->n;
        from_jansson(j, child, NULL);
        if (n++)
          j->nodes[prev].next = (uint32_t)(at - prev);
        prev = at;
      }
    } else {
      json_object_foreach_safe(v, tmp, k, child) {
        size_t at = j->n;
        from_jansson(j, child, k);
        if (n++)
          j->nodes[prev].next = (uint32_t)(at - prev);
        prev = at;
      }
    }
    j->nodes[self].len = (uint32_t)n;
  }
}

const cgl_jv *cgl_json_parse(cgl_json *j, const char *text, size_t len, json_error_t *err) {
  const cgl_jv *top;
  if (cgl_json_parse_own(j, text, len, &top))
    return top;
  j->n = 0;
  j->held = json_loadb(text, len, JSON_REJECT_DUPLICATES, err);
  if (!j->held)
    return NULL;
  from_jansson(j, j->held, NULL);
  return j->nodes;
}

void cgl_json_release(cgl_json *j) {
  if (j->held)
    json_decref(j->held);
  j->held = NULL;
  if (j->cap * sizeof *j->nodes > KEEP_BYTES) {
    free(j->nodes);
    j->nodes = NULL;
    j->cap = 0;
  }
  if (j->text_cap > KEEP_BYTES) {
    free(j->text);
    j->text = NULL;
    j->text_cap = 0;
  }
  j->n = j->text_len = 0;
}

void cgl_json_free(cgl_json *j) {
  if (j->held)
    json_decref(j->held);
  free(j->nodes);
  free(j->text);
  memset(j, 0, sizeof *j);
}

const cgl_jv *cgl_jget(const cgl_jv *o, const char *key) {
  if (!cgl_jis(o, CGL_J_OBJECT))
    return NULL;
  size_t len = strlen(key);
  for (const cgl_jv *m = cgl_jfirst(o); m; m = cgl_jnext(m))
    if (m->key_len == len && m->key[0] == key[0] && !memcmp(m->key, key, len))
      return m;
  return NULL;
}
