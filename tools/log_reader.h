/* Reader of capguard's JSON Lines logs (docs/log-format.md) into one model
 * that spans several files (several runs) and processes. Tolerant by design:
 * unknown keys and unknown "type"s are ignored, lines with a newer "v" are
 * skipped and counted, malformed lines are counted, never fatal. */
#ifndef CAPGUARD_LOG_READER_H
#define CAPGUARD_LOG_READER_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#define CGL_VERSION 1 /* newest log version understood */

typedef struct {
  size_t file;          /* index into cgl_log.files */
  long long pid, ppid;
  bool seen_process;    /* a "process" line was read (else only its other lines) */
  const char *mode, *version;
  long long driver_version, emulate_driver, time_ns;
  const char *argv[16];
  size_t argc;
  bool has_summary;
  long long captures, captures_broken, primed_loaded, primed_served, primed_unused, recorded;
  long long primed_skipped_arch, skipped_sm, device_sm;
  json_t *events_by_kind, *verdicts; /* summary objects, borrowed; may be NULL */
} cgl_process;

typedef struct {
  size_t proc;          /* index into cgl_log.procs */
  long long id, tid, begin_ns, end_ns, events;
  const char *stream, *mode, *status, *began;
  bool ended_line;      /* a "capture" line was read (else known from events only) */
} cgl_capture;

typedef struct {
  size_t proc, capture; /* capture: index into cgl_log.caps */
  size_t seq;           /* order read, breaks time ties */
  long long time_ns, result, driver_result, driver_version, emulate_driver, tid;
  const char *event, *call, *verdict, *thread_mode, *module;
  const char *image_kind, *image_hash;
  /* borrowed JSON arrays (NULL when absent or not an array): strings, strings,
   * {"file","line","func"} objects; innermost first */
  json_t *kernels, *native, *python;
  bool kernels_truncated;
  const char *src_file;
  long long src_line;
} cgl_event;

typedef struct {
  const char **files;
  size_t n_files;
  cgl_process *procs;
  size_t n_procs, cap_procs;
  cgl_capture *caps;
  size_t n_caps, cap_caps;
  cgl_event *evs;
  size_t n_evs, cap_evs;
  json_t *roots;        /* every parsed line, keeps borrowed strings alive */
  size_t lines, malformed, newer, unknown;
  char first_malformed[512]; /* "file:line: why" of the first malformed line */
} cgl_log;

void cgl_init(cgl_log *log);
void cgl_free(cgl_log *log);

/* Read path (or stdin when path is "-") from byte offset on. Returns 0, or -1
 * when the file cannot be opened or read (errno set); what was read stays. */
int cgl_read_file(cgl_log *log, const char *path, long long offset);
int cgl_read_stream(cgl_log *log, FILE *f, const char *name);

/* Feed one line (without its newline); exposed for tests and the run summary. */
void cgl_read_line(cgl_log *log, size_t file, const char *text, size_t len, long long lineno);

/* "broken" verdicts: the call invalidated its capture. */
bool cgl_verdict_breaks(const char *verdict);
/* A capture that broke: its end failed, it was invalidated, or a call refused inside it. */
bool cgl_capture_broken(const cgl_log *log, size_t capture);

/* Where an event was made, one line: innermost Python frame "file:line in func",
 * else the innermost native frame outside capguard and libcuda without its absolute
 * " [0x...]" address (which ASLR makes differ between processes), else "(no stack)". */
void cgl_event_site(const cgl_event *e, char *buf, size_t cap);

#endif
