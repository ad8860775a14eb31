/* libFuzzer target for the log's records (detect/event_format.c) and words
 * (detect/log_schema.c): a start or process record of any command line
 * (the bytes of /proc/self/cmdline, cut anywhere, not UTF-8, any words) into
 * a buffer of any size keeps snprintf's contract: it returns the same length
 * whatever the room, writes inside the buffer, NUL-terminates, and at full
 * size writes one line. Any word parses to a row or to "none", never reads
 * past its length. Built as a libFuzzer binary with -Dfuzz=true and clang,
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
  size_t need = cg_process_format_json(&r, NULL, 0);
  REQUIRE(need > 0);
  char *full = malloc(need + 1);
  REQUIRE(full);
  REQUIRE(cg_process_format_json(&r, full, need + 1) == need);
  REQUIRE(strlen(full) == need && full[need - 1] == '\n');
  REQUIRE(memchr(full, '\n', need) == full + need - 1); /* one line */
  size_t room = (size_t)(ctl >> 2) % (need + 1);
  char *cut = malloc(room + 1);
  REQUIRE(cut);
  cut[room] = 'Z'; /* one byte past the room: never written */
  REQUIRE(cg_process_format_json(&r, room ? cut : NULL, room) == need);
  if (room) {
    REQUIRE(strlen(cut) == room - 1);
    REQUIRE(memcmp(cut, full, room - 1) == 0);
  }
  REQUIRE(cut[room] == 'Z');
  free(cut);
  free(full);
  return 0;
}
