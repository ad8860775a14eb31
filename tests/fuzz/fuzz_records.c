/* libFuzzer target for the log's records (detect/log/event_format.c) and words
 * (detect/log/log_schema.c): a start or process record of any command line
 * (the bytes of /proc/self/cmdline, cut anywhere, not UTF-8, any words) into
 * a buffer of any size keeps snprintf's contract: it returns the same length
 * whatever the room, writes inside the buffer, NUL-terminates, and at full
 * size writes one line. Any word parses to a row or to "none", never reads
 * past its length. A capture record with any strings and codes (where it
 * began, its first offender) keeps the same contract, as JSON and as the
 * line a person reads. Built as a libFuzzer binary with -Dfuzz=true and clang,
 * and always linked into the replay runner. */
#include "capguard/event.h"
#include "capguard/log_schema.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define REQUIRE(cond)                                                          \
  do {                                                                         \
    if (!(cond)) {                                                             \
      fprintf(stderr, "fuzz_records: %s:%d: %s\n", __FILE__, __LINE__, #cond); \
      abort();                                                                 \
    }                                                                          \
  } while (0)

static const cg_words *const tables[] = {&cg_record_types, &cg_event_kinds, &cg_verdicts,
                                         &cg_run_modes, &cg_capture_modes, &cg_capture_statuses,
                                         &cg_image_kinds};

/* A formatter's contract on one object: the same length whatever the room,
 * nothing written past the room, NUL-terminated, the full text one line
 * (json) or ending in a newline (text). */
typedef size_t (*formatter)(const void *obj, char *buf, size_t cap);
static void check_contract(formatter f, const void *obj, uint8_t ctl, int one_line) {
  size_t need = f(obj, NULL, 0);
  REQUIRE(need > 0);
  char *full = malloc(need + 1);
  REQUIRE(full);
  REQUIRE(f(obj, full, need + 1) == need);
  REQUIRE(strlen(full) == need && full[need - 1] == '\n');
  if (one_line)
    REQUIRE(memchr(full, '\n', need) == full + need - 1);
  size_t room = (size_t)(ctl >> 2) % (need + 1);
  char *cut = malloc(room + 1);
  REQUIRE(cut);
  cut[room] = 'Z'; /* one byte past the room: never written */
  REQUIRE(f(obj, room ? cut : NULL, room) == need);
  if (room) {
    REQUIRE(strlen(cut) == room - 1);
    REQUIRE(memcmp(cut, full, room - 1) == 0);
  }
  REQUIRE(cut[room] == 'Z');
  free(cut);
  free(full);
}

static size_t process_json(const void *r, char *b, size_t c) { return cg_process_format_json(r, b, c); }
static size_t capture_json(const void *r, char *b, size_t c) { return cg_capture_format_json(r, b, c); }
static size_t capture_text(const void *r, char *b, size_t c) { return cg_capture_format_broken_text(r, b, c); }

/* A capture record whose strings (where it began, the offender's call and
 * lines) and numbers come from the input: any bytes, any codes. */
static void check_capture(const char *text, size_t len, uint8_t ctl) {
  char began[96], call[48], where[96];
  size_t a = len < sizeof began - 1 ? len : sizeof began - 1;
  memcpy(began, text, a);
  began[a] = '\0';
  size_t b = len / 2 < sizeof call - 1 ? len / 2 : sizeof call - 1;
  memcpy(call, text + len - b, b);
  call[b] = '\0';
  size_t w = len / 3 < sizeof where - 1 ? len / 3 : sizeof where - 1;
  memcpy(where, text + len / 3, w);
  where[w] = '\0';
  cg_capture c = {.id = ctl, .stream = (uint64_t)len << 3, .tid = ctl, .mode = (cg_capture_mode)(ctl % 4),
                  .status = (cg_capture_status)((ctl >> 2) % (CG_CAPTURE_STATUS_COUNT + 1)),
                  .begin_ns = len, .end_ns = len * 3 + 1, .events = ctl}; /* ended: no clock in the record */
  cg_offender off = {.call = call, .kind = (cg_event_kind)((ctl >> 3) % (CG_EV_KIND_COUNT + 1)),
                     .verdict = (cg_verdict)((ctl >> 1) % (CG_VERDICT_COUNT + 1)),
                     .result = (int)(900 + (ctl % 12)) * (ctl & 64 ? -1 : 1), .tid = len,
                     .python = where, .where = ctl & 4 ? where : began};
  cg_capture_record r = {.capture = &c, .pid = ctl, .began = began, .ended = ctl & 16,
                         .end_result = (int)(ctl % 910), .repeats = ctl & 32 ? len : 0,
                         .broken_by = ctl & 128 ? &off : NULL};
  check_contract(capture_json, &r, ctl, 1);
  check_contract(capture_text, &r, ctl, 1);
  REQUIRE(cg_cuda_result_words(off.result) == NULL || strlen(cg_cuda_result_words(off.result)) > 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1)
    return 0;
  /* byte 0: the record's type, mode and the buffer's room; the rest: the command line */
  uint8_t ctl = data[0];
  const char *cmdline = (const char *)data + 1;
  size_t len = size - 1;
  for (size_t t = 0; t < sizeof tables / sizeof tables[0]; t++) {
    unsigned v = cg_word_parse(tables[t], cmdline, len < 32 ? len : 32);
    REQUIRE(v <= tables[t]->n);
    if (v < tables[t]->n)
      REQUIRE(len >= strlen(cg_word_name(tables[t], v)));
  }
  char prime[64];
  size_t pn = len < sizeof prime - 1 ? len : sizeof prime - 1;
  memcpy(prime, cmdline, pn);
  prime[pn] = '\0'; /* a C string with whatever came before its first NUL */
  cg_process_record r = {.type = ctl & 1 ? CG_RECORD_PROCESS : CG_RECORD_START,
                         .pid = (uint64_t)size * 977u, .ppid = ctl, .time_ns = UINT64_MAX - ctl,
                         .mode = (cg_run_mode)((ctl >> 1) % (CG_RUN_MODE_COUNT + 1)),
                         .driver_version = -(int)ctl, .emulate_driver = ctl << 8,
                         .version = "0.1.0", .prime = prime, .run = ctl & 2 ? prime : NULL,
                         .cmdline = cmdline, .cmdline_len = len};
  check_contract(process_json, &r, ctl, 1);
  check_capture(cmdline, len, ctl);
  return 0;
}
