/* The tables of log_schema.h, and the lookups every user of the log's words
 * goes through. */
#include "capguard/log_schema.h"

#include <string.h>

/* Every table's words and meanings (and the verdicts' two columns more) as
 * the fields of one block of text: a row holds where its strings start
 * (offsetof, which the compiler computes), not pointers, which the loader
 * would relocate at the start-up of every process the shim is in (about 13
 * instructions each, 131 of them). A field's name is its row's id pasted
 * after a letter saying which string it holds. */
#define CG_WORD_FIELDS(id, word, flags, what)                                                             \
  char w_##id[sizeof word];                                                                              \
  char d_##id[sizeof what];
#define CG_VERDICT_FIELDS(id, word, flags, what, said, routine)                                           \
  CG_WORD_FIELDS(id, word, flags, what)                                                                  \
  char s_##id[sizeof said];                                                                              \
  char r_##id[sizeof routine];
#define CG_WORD_TEXT(id, word, flags, what) word, what,
#define CG_VERDICT_TEXT(id, word, flags, what, said, routine) word, what, said, routine,
#define CG_ALL_TABLES(X, VERDICT_X)                                                                       \
  CG_RECORD_TYPES(X)                                                                                     \
  CG_EVENT_KINDS(X) CG_VERDICTS(VERDICT_X) CG_RUN_MODES(X) CG_CAPTURE_MODES(X) CG_CAPTURE_STATUSES(X)    \
      CG_IMAGE_KINDS(X)

static const struct words_text {
  CG_ALL_TABLES(CG_WORD_FIELDS, CG_VERDICT_FIELDS)
} text = {CG_ALL_TABLES(CG_WORD_TEXT, CG_VERDICT_TEXT)};
_Static_assert(sizeof(struct words_text) <= UINT16_MAX, "the words outgrew their 16-bit offsets");
#define AT(field) offsetof(struct words_text, field)
static const char *text_at(uint16_t at) { return (const char *)&text + at; }

#define CG_WORD_ROW(id, word, flags, what) {AT(w_##id), AT(d_##id), flags},
#define CG_VERDICTS_WORDS(X) CG_VERDICTS(CG_VERDICT_WORD)
#define CG_TABLE(name, ROWS, count)                                                                       \
  static const cg_word name##_rows[] = {ROWS(CG_WORD_ROW)};                                              \
  _Static_assert(sizeof name##_rows / sizeof name##_rows[0] == (count), "one row per enum value");       \
  const cg_words name = {name##_rows, sizeof name##_rows / sizeof name##_rows[0]};

CG_TABLE(cg_record_types, CG_RECORD_TYPES, CG_RECORD_TYPE_COUNT)
CG_TABLE(cg_event_kinds, CG_EVENT_KINDS, CG_EV_KIND_COUNT)
#define CG_VERDICT_WORD(id, word, flags, what, said, routine) CG_WORD_ROW(id, word, flags, what)
CG_TABLE(cg_verdicts, CG_VERDICTS_WORDS, CG_VERDICT_COUNT)
CG_TABLE(cg_run_modes, CG_RUN_MODES, CG_RUN_MODE_COUNT)
CG_TABLE(cg_capture_modes, CG_CAPTURE_MODES, CG_CAPTURE_MODE_COUNT)
CG_TABLE(cg_capture_statuses, CG_CAPTURE_STATUSES, CG_CAPTURE_STATUS_COUNT)
CG_TABLE(cg_image_kinds, CG_IMAGE_KINDS, CG_IMAGE_KIND_COUNT)

/* The driver's CUstreamCaptureMode values are the enum's: the shim passes them through. */
_Static_assert(CG_MODE_GLOBAL == 0 && CG_MODE_THREAD_LOCAL == 1 && CG_MODE_RELAXED == 2,
               "capture modes are CUstreamCaptureMode's values");
/* Priming files store image kinds by value. */
_Static_assert(CG_IMAGE_UNKNOWN == 0 && CG_IMAGE_CUBIN == 1 && CG_IMAGE_FATBIN == 2 && CG_IMAGE_PTX == 3,
               "image kinds keep the values priming files hold");

const char *cg_word_name(const cg_words *t, unsigned v) {
  return v < t->n ? text_at(t->rows[v].word) : "unknown";
}

const char *cg_word_what(const cg_words *t, unsigned v) { return v < t->n ? text_at(t->rows[v].what) : ""; }

bool cg_word_is(const cg_words *t, unsigned v, unsigned flags) {
  return v < t->n && (t->rows[v].flags & flags) == flags;
}

/* By hand, not strlen and memcmp: the shim's constructor parses
 * CAPGUARD_MODE, and each glibc function it calls first there is bound then
 * (about 800 instructions of every process's start-up). */
static bool word_is(const char *w, const char *s, size_t len) {
  size_t i = 0;
  if (len == (size_t)-1) {
    while (w[i] && w[i] == s[i])
      i++;
    return !w[i] && !s[i];
  }
  while (i < len && w[i] && w[i] == s[i])
    i++;
  return i == len && !w[i];
}

unsigned cg_word_parse(const cg_words *t, const char *s, size_t len) {
  if (!s)
    return (unsigned)t->n;
  for (size_t i = 0; i < t->n; i++)
    if (word_is(text_at(t->rows[i].word), s, len))
      return (unsigned)i;
  return (unsigned)t->n;
}

const char *cg_record_type_name(cg_record_type t) { return cg_word_name(&cg_record_types, t); }
const char *cg_event_kind_name(cg_event_kind k) { return cg_word_name(&cg_event_kinds, k); }
const char *cg_verdict_name(cg_verdict v) { return cg_word_name(&cg_verdicts, v); }
const char *cg_run_mode_name(cg_run_mode m) { return cg_word_name(&cg_run_modes, m); }
const char *cg_capture_mode_name(cg_capture_mode m) { return cg_word_name(&cg_capture_modes, m); }
const char *cg_capture_status_name(cg_capture_status s) {
  return cg_word_name(&cg_capture_statuses, s);
}

const char *cg_image_kind_name(cg_image_kind k) { return cg_word_name(&cg_image_kinds, k); }

bool cg_run_mode_parse(const char *s, cg_run_mode *out) {
  unsigned v = cg_word_parse(&cg_run_modes, s, (size_t)-1);
  if (v >= CG_RUN_MODE_COUNT)
    return false;
  *out = (cg_run_mode)v;
  return true;
}

bool cg_verdict_breaks(cg_verdict v) { return cg_word_is(&cg_verdicts, v, CG_WORD_BREAKS); }

typedef struct {
  uint16_t said, routine; /* "" in the table: none */
} verdict_columns;
#define CG_VERDICT_COLUMNS(id, word, flags, what, said, routine) [id] = {AT(s_##id), AT(r_##id)},
static const verdict_columns verdict_cols[CG_VERDICT_COUNT] = {CG_VERDICTS(CG_VERDICT_COLUMNS)};

static const char *column(cg_verdict v, size_t which) {
  if ((unsigned)v >= CG_VERDICT_COUNT)
    return NULL;
  const char *s = text_at(which ? verdict_cols[v].routine : verdict_cols[v].said);
  return *s ? s : NULL;
}
const char *cg_verdict_said(cg_verdict v) { return column(v, 0); }
const char *cg_verdict_routine_line(cg_verdict v) { return column(v, 1); }

bool cg_capture_status_broken(cg_capture_status s) {
  return cg_word_is(&cg_capture_statuses, s, CG_WORD_BREAKS);
}
