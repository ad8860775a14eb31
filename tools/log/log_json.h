/* A line of the log parsed without building a jansson tree: a strict JSON
 * parser made for the log's records, into one array of nodes and one buffer
 * of the line's strings, both reused from line to line (no allocation per
 * value; jansson's per-value allocations and copies were most of a large
 * report's time).
 *
 * It parses only what it is sure jansson accepts as capguard's reader loads
 * a line (JSON_REJECT_DUPLICATES): a string with a \u escape or a byte above
 * 0x7f, a number with an exponent or an integer beyond a long long, an
 * object of more than 48 members, nesting deeper than 32, or anything
 * malformed leave it unsure, and the line is then parsed by jansson, which
 * says why a malformed line is (the one-line error the report gives), and
 * whose tree, when it accepts the line, is copied into nodes: every line
 * reads the same whichever parsed it (the fuzz target `log` compares the
 * two on every line it is given).
 *
 * Memory is bounded by the line (CGL_LINE_MAX): a node is 32 bytes for at
 * least 2 bytes of text, the strings at most the line's length; what a long
 * line grew past 1 MiB is given back after it (cgl_json_release). */
#ifndef CAPGUARD_LOG_JSON_H
#define CAPGUARD_LOG_JSON_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum {
  CGL_J_NULL,
  CGL_J_FALSE,
  CGL_J_TRUE,
  CGL_J_INTEGER,
  CGL_J_REAL,
  CGL_J_STRING,
  CGL_J_ARRAY,
  CGL_J_OBJECT
} cgl_jtype;

/* A value. Its children (an array's elements, an object's members) are the
 * nodes after it, each next nodes from the one before. */
typedef struct {
  const char *key; /* a member's key, NUL-terminated; NULL in an array and at the top */
  union {
    const char *s; /* a string's bytes, NUL-terminated (none inside: \u0000 is jansson's to refuse) */
    long long i;   /* an integer */
  } u;
  uint32_t len;  /* a string's length in bytes; an array's or object's number of children */
  uint32_t next; /* how many nodes on its next sibling is; 0 for the last */
  uint32_t key_len;
  unsigned char type; /* cgl_jtype */
} cgl_jv;

typedef struct cgl_json {
  cgl_jv *nodes;
  size_t n, cap;
  char *text; /* the strings and keys, each NUL-terminated */
  size_t text_len, text_cap;
  json_t *held; /* jansson's tree the nodes point into, when jansson parsed the line */
} cgl_json;

/* The top value of text[0..len) (NULL when jansson refuses it: err says why;
 * it may be any value jansson accepts at the top, an array too). Valid until
 * the next parse or cgl_json_release. */
const cgl_jv *cgl_json_parse(cgl_json *j, const char *text, size_t len, json_error_t *err);
/* Whether text[0..len) is, for this parser alone, surely an object jansson
 * accepts (the fuzz target compares it with jansson); its top value in *top. */
bool cgl_json_parse_own(cgl_json *j, const char *text, size_t len, const cgl_jv **top);
/* The line's nodes released: jansson's tree freed, buffers past 1 MiB given back. */
void cgl_json_release(cgl_json *j);
void cgl_json_free(cgl_json *j);

/* Member key of o (NULL when o is NULL, not an object, or has no such key). */
const cgl_jv *cgl_jget(const cgl_jv *o, const char *key);
/* The first child of an array or object, NULL when none (or v not one). */
static inline const cgl_jv *cgl_jfirst(const cgl_jv *v) {
  return v && (v->type == CGL_J_ARRAY || v->type == CGL_J_OBJECT) && v->len ? v + 1 : NULL;
}
static inline const cgl_jv *cgl_jnext(const cgl_jv *v) { return v->next ? v + v->next : NULL; }
static inline bool cgl_jis(const cgl_jv *v, cgl_jtype t) { return v && v->type == t; }
/* A string's value, NULL for anything else. */
static inline const char *cgl_jstr(const cgl_jv *v) { return cgl_jis(v, CGL_J_STRING) ? v->u.s : NULL; }
/* An array's size, 0 for anything else. */
static inline size_t cgl_jsize(const cgl_jv *v) { return cgl_jis(v, CGL_J_ARRAY) ? v->len : 0; }

#endif
