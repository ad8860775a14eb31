/* A line of the log looked at without building it: a strict JSON scanner that
 * says whether jansson would surely accept the line (capguard's reader loads
 * with JSON_REJECT_DUPLICATES) and where the top-level members' values and
 * those of the "capture" object are. It is sure only of plain input: a
 * string with a \u escape or a byte above 0x7f, a number with an exponent or
 * an integer beyond a long long, an object of more than 48 members or nesting deeper
 * than 32 leave it unsure, and the line is then read by jansson, which also
 * says why a malformed line is. A census (cgl_log.census) reads its events
 * and captures so: parsing them whole was most of its time. */
#ifndef CAPGUARD_LOG_SKIM_H
#define CAPGUARD_LOG_SKIM_H

#include <stdbool.h>
#include <stddef.h>

enum { CGL_SKIM_MEMBERS = 48 };

typedef enum { CGL_SKIM_STRING, CGL_SKIM_INTEGER, CGL_SKIM_OTHER } cgl_skim_kind;

typedef struct {
  const char *key, *value; /* value: a string's bytes inside its quotes, else its text */
  size_t key_len, value_len;
  cgl_skim_kind kind;
  bool escaped;            /* a string with an escape: its bytes are not its value */
  long long integer;       /* CGL_SKIM_INTEGER's value */
} cgl_skim_member;

typedef struct {
  cgl_skim_member top[CGL_SKIM_MEMBERS], capture[CGL_SKIM_MEMBERS];
  size_t n_top, n_capture;
  bool capture_is_object;
} cgl_skim;

/* Whether text is surely one JSON object jansson accepts; s then says
 * where its members are. */
bool cgl_skim_line(const char *text, size_t len, cgl_skim *s);

/* The member key of m (n of them), NULL if absent. */
const cgl_skim_member *cgl_skim_get(const cgl_skim_member *m, size_t n, const char *key);

#endif
