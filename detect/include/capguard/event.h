/* One reported event (a forbidden call made during capture, a capture that
 * ended, the process summary) and its two renderings: the text a person reads
 * on stderr, and one JSON object per line for the log. Pure formatting: no
 * I/O, no allocation; docs/log-format.md specifies the JSON. */
#ifndef CAPGUARD_EVENT_H
#define CAPGUARD_EVENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "capguard/capture_model.h"
#include "capguard/image.h"

typedef enum {
  CG_EV_MODULE_LOAD = 0,  /* cuModuleLoad*, cuLibraryLoad* while prohibited */
  CG_EV_MODULE_UNLOAD = 1,/* cuModuleUnload, cuLibraryUnload while prohibited */
  CG_EV_KIND_COUNT
} cg_event_kind;

typedef enum {
  CG_VERDICT_REFUSED = 0,   /* the driver returned 900; captures that prohibited the thread are invalid */
  CG_VERDICT_ALLOWED,       /* this driver (>= 12.3) allowed it; older drivers refuse it */
  CG_VERDICT_EMULATED,      /* capguard refused it, emulating an older driver (CAPGUARD_EMULATE_DRIVER) */
  CG_VERDICT_SERVED,        /* served from the priming pool; no loader call reached the driver */
  CG_VERDICT_RESCUED,       /* made in relaxed mode for that one call (CAPGUARD_RESCUE) */
  CG_VERDICT_DEFERRED,      /* unload returned success and was queued until the capture ends */
  CG_VERDICT_FAILED,        /* the driver returned another error */
  CG_VERDICT_COUNT
} cg_verdict;

typedef struct {
  const char *file;
  int line;
  const char *func;
} cg_py_frame;

#define CG_MAX_NATIVE_FRAMES 32
#define CG_MAX_PY_FRAMES 48

typedef struct {
  cg_event_kind kind;
  cg_verdict verdict;
  const char *call;     /* "cuModuleLoadData" */
  int result;           /* CUresult handed back to the caller */
  int driver_result;    /* what the driver itself returned (-1: not called) */
  int driver_version;   /* cuDriverGetVersion, 0 unknown */
  int emulated_version; /* CAPGUARD_EMULATE_DRIVER, 0 when off */
  uint64_t pid, tid;
  uint64_t time_ns;     /* CLOCK_REALTIME */
  cg_capture_mode thread_mode;
  /* the capture that prohibited the call (the oldest if several) */
  cg_capture capture;
  const char *capture_began; /* one line: where it began, e.g. "model_runner.py:1234 in capture" */
  size_t n_prohibitors;      /* how many open captures prohibited the call */
  const cg_image_info *image; /* NULL for unloads, or when not inspected */
  uint64_t module;           /* CUmodule/CUlibrary handle, 0 if none */
  const char *const *native; /* symbolized frames, innermost first */
  size_t n_native;
  const cg_py_frame *py;     /* Python frames, innermost first */
  size_t n_py;
} cg_event;

typedef struct {
  uint64_t pid;
  uint64_t captures_begun, captures_broken;
  uint64_t events[CG_EV_KIND_COUNT];
  uint64_t verdicts[CG_VERDICT_COUNT];
  uint64_t primed_loaded, primed_served, primed_unused, recorded;
  /* Priming records not preloaded because they were built for another GPU
   * architecture: how many, one arch they were for, and this device's. */
  uint64_t primed_skipped_arch;
  unsigned skipped_sm, device_sm;
  const char *log_path; /* NULL when no log */
} cg_summary;

const char *cg_event_kind_name(cg_event_kind k);  /* "module-load", "module-unload" */
const char *cg_verdict_name(cg_verdict v);        /* "refused", "allowed", ... */

/* Each writes at most cap bytes including the NUL and returns the length it
 * would have written (like snprintf), so callers can detect truncation. */
size_t cg_event_format_text(const cg_event *e, char *buf, size_t cap); /* several lines, ends in \n */
size_t cg_event_format_json(const cg_event *e, char *buf, size_t cap); /* one line, ends in \n */
size_t cg_capture_format_json(const cg_capture *c, uint64_t pid, const char *began, char *buf, size_t cap);
size_t cg_summary_format_text(const cg_summary *s, char *buf, size_t cap); /* one line */
size_t cg_summary_format_json(const cg_summary *s, char *buf, size_t cap);

/* JSON string escaping into buf (no quotes added); returns the length it would need. */
size_t cg_json_escape(const char *s, char *buf, size_t cap);

#endif
