/* The log's vocabulary: every word the JSON Lines log (docs/log-format.md)
 * holds as a value, one row each. A table gives the enum, the word the log
 * writes, the parse back to the enum, what the word means, and flags the
 * reports decide by. The shim writes through these names, the tools parse
 * each word once when they read a log and loop over the tables to report, so
 * adding a word (a verdict, say) is adding one row here.
 *
 * Rows are in the order the log has always written them (the summary's
 * "events" and "verdicts" objects follow row order, and the enum values of
 * capture modes are CUstreamCaptureMode's): add new rows at the end.
 *
 * Pure data: no I/O, no allocation, safe in the shim. */
#ifndef CAPGUARD_LOG_SCHEMA_H
#define CAPGUARD_LOG_SCHEMA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* What a row's flags say (each table uses the ones that apply to it). */
enum {
  CG_WORD_BREAKS = 1u << 0,  /* verdict: the call invalidated the captures that prohibited it;
                                status: the capture is broken */
  CG_WORD_ROUTINE = 1u << 1, /* verdict: the shim doing its job (one line on stderr per process) */
  CG_WORD_OPEN = 1u << 2,    /* status: the capture was still open (at exit) */
  CG_WORD_SKIPPED = 1u << 3, /* record type: readers skip it */
};

/* Each table's rows: X(ENUM, "word", flags, "what it means"). */

#define CG_RECORD_TYPES(X)                                                                          \
  X(CG_RECORD_START, "start", 0, "the shim started (run's child at once, others at CUDA use)")    \
  X(CG_RECORD_PROCESS, "process", 0, "the process first used the driver")                         \
  X(CG_RECORD_EVENT, "event", 0, "a call made while a capture prohibited the thread")              \
  X(CG_RECORD_CAPTURE, "capture", 0, "a capture ended (or the process exited with it open)")       \
  X(CG_RECORD_SUMMARY, "summary", 0, "the process exited")                                         \
  X(CG_RECORD_ERROR, "error", CG_WORD_SKIPPED,                                                     \
    "a formatter was handed nothing to format (a capguard bug); readers skip it")                  \
  X(CG_RECORD_ENDED, "ended", 0,                                                                   \
    "capguard run's command died of a signal (written by capguard run, not the shim)")

#define CG_EVENT_KINDS(X)                                                                           \
  X(CG_EV_MODULE_LOAD, "module-load", 0, "cuModuleLoad*, cuLibraryLoad* while prohibited")          \
  X(CG_EV_MODULE_UNLOAD, "module-unload", 0, "cuModuleUnload, cuLibraryUnload while prohibited")      \
  X(CG_EV_ALLOCATION, "allocation", 0,                                                              \
    "cuMemAlloc, cuMemAllocPitch, cuMemAllocHost, cuMemHostAlloc, cuMemHostRegister, "               \
    "cuMemAllocManaged while prohibited")                                                          \
  X(CG_EV_FREE, "free", 0, "cuMemFree, cuMemFreeHost, cuMemHostUnregister while prohibited")        \
  X(CG_EV_GRAPH_EXEC_DESTROY, "graph-exec-destroy", 0,                                               \
    "cuGraphExecDestroy (an executable graph destroyed) while prohibited")                         \
  X(CG_EV_SET_LIMIT, "set-limit", 0, "cuCtxSetLimit while prohibited")                              \
  X(CG_EV_SYNCHRONIZE, "synchronize", 0,                                                            \
    "cuCtxSynchronize (any capture, every mode), cuStreamSynchronize or cuStreamQuery of a "         \
    "capturing stream (every mode) or of another stream while prohibited")                        \
  X(CG_EV_EVENT_WAIT, "event-wait", 0,                                                              \
    "cuEventQuery, cuEventSynchronize of an event recorded in a capturing stream (every mode, "    \
    "every thread) or of another event while prohibited")                                         \
  X(CG_EV_LEGACY_STREAM, "legacy-stream", 0,                                                        \
    "a launch, copy or memset on the legacy stream while a stream of the context captures: 906 "    \
    "when a blocking stream captures; run outside the graph when only non-blocking ones do")       \
  X(CG_EV_STREAM_WAIT, "stream-wait", 0,                                                            \
    "cuStreamWaitEvent of a capturing stream on an event recorded outside the capture (905)")      \
  X(CG_EV_GRAPH_LAUNCH, "graph-launch", 0, "cuGraphLaunch into a capturing stream (900)")           \
  X(CG_EV_UNJOINED, "unjoined", 0,                                                                  \
    "a stream forked into a capture and never joined back: the end returned 904")                  \
  X(CG_EV_WRONG_THREAD, "wrong-thread", 0,                                                          \
    "a capture ended from a thread that did not begin it, in global or thread-local mode (908)")   \
  X(CG_EV_DRIVER_LOG, "driver-log", 0,                                                              \
    "a call capguard does not wrap, named by the driver's own log (drivers 12.9 and later)")       \
  X(CG_EV_PAGEABLE_COPY, "pageable-copy", 0,                                                        \
    "an asynchronous copy to or from pageable host memory captured into a graph: each replay "     \
    "reads or writes that host memory as it is then")                                                       \
  X(CG_EV_STREAM_DESTROY, "stream-destroy", 0,                                                      \
    "cuStreamDestroy of a capturing stream: the driver ends the capture (no graph); named as the " \
    "capture's first offender")                                                                    \
  X(CG_EV_STALE_FREE, "stale-free", 0,                                                              \
    "cuMemFree, cuMemFreeHost, cuMemFreeAsync, cuMemUnmap of memory a live graph exec reads "       \
    "(CAPGUARD_STALE): each replay reads or writes freed memory; after cuMemRelease or "             \
    "cuMemPoolTrimTo, the next launch checks")                                   \
  X(CG_EV_STALE_LAUNCH, "stale-launch", 0,                                                          \
    "cuGraphLaunch of a graph exec whose memory was freed since its capture, or freed and "         \
    "allocated again as another buffer at the same address (CAPGUARD_STALE)")                       \
  X(CG_EV_REQUEST_LOAD, "request-path-load", 0,                                                     \
    "cuModuleLoad*, cuLibraryLoad* after serving began (the first graph launch after the start-up's " \
    "last capture, or CAPGUARD_SERVING_AFTER): it costs a request its latency, not a capture")    \
  X(CG_EV_HANG_LAUNCH, "hang-launch", 0,                                                            \
    "cuGraphLaunch whose graph had not finished after CAPGUARD_HANG_S seconds (its completion "     \
    "marker not reached): its exec, capture, launch count and collectives")                       \
  X(CG_EV_HANG_WAIT, "hang-wait", 0,                                                                \
    "a synchronize or capture end that had lasted more than CAPGUARD_HANG_S seconds")               \
  X(CG_EV_HANG_TEARDOWN, "hang-teardown", 0,                                                        \
    "a call that had lasted more than CAPGUARD_HANG_S seconds while graph execs holding "           \
    "collectives were alive and none of their launches was pending (a teardown they hold)")        \
  X(CG_EV_LAUNCH_COUNT, "launch-count", 0,                                                          \
    "how many times a graph exec had been launched, written when the process launched nothing for " \
    "CAPGUARD_HANG_S seconds (CAPGUARD_HANG_S): ranks lined up by their launches")                  \
  X(CG_EV_HANG_CAPTURE, "hang-capture", 0,                                                          \
    "a capture open for more than CAPGUARD_HANG_S seconds (cuStreamBeginCapture* without its end)")

/* Verdicts have two columns more than the other tables:
 *   said     the event line's sentence on stderr (event_format.c), ""
 *            where the formatter composes it from the call's numbers (the
 *            driver's error, the driver versions);
 *   routine  the one line a routine verdict gets on stderr per process
 *            (the shim's output.c), "" for the others.
 * Each verdict's colour is the HTML report's (tools/render/report_html.c),
 * which the build makes name every verdict. */
#define CG_VERDICTS(X)                                                                              \
  X(CG_VERDICT_REFUSED, "refused", CG_WORD_BREAKS,                                                  \
    "the driver refused it (900: not permitted during capture; 905: a wait on an event recorded "  \
    "outside the capture; 906: legacy-stream work while a blocking stream captures; 907: an "      \
    "event recorded in a capturing stream): the capture is invalid",                               \
    "", "")                                                                                     \
  X(CG_VERDICT_ALLOWED, "allowed", 0,                                                               \
    "the driver let it through (loads: drivers 12.3 and newer do; older drivers refuse them)",     \
    "", "")                                                                                     \
  X(CG_VERDICT_EMULATED, "emulated", CG_WORD_BREAKS,                                                \
    "capguard refused it as a driver before 12.3 would (CAPGUARD_EMULATE_DRIVER): the capture is "  \
    "invalid",                                                                                      \
    "", "")                                                                                     \
  X(CG_VERDICT_SERVED, "served", CG_WORD_ROUTINE,                                                   \
    "handed out from the priming file: no loader call reached the driver",                          \
    "served from the priming file: no loader call reached the driver",                              \
    "served from the priming file")                                                                 \
  X(CG_VERDICT_RESCUED, "rescued", 0,                                                               \
    "made in relaxed mode for that one call: in guard mode, a query of an event in no capture "    \
    "from a thread a capture prohibits; with CAPGUARD_RESCUE, a load on an old driver or an "      \
    "allocation",                                                                                  \
    "", "")                                                                                    \
  X(CG_VERDICT_DEFERRED, "deferred", CG_WORD_ROUTINE,                                               \
    "the unload returned success and runs when the capture ends",                                  \
    "returned success; the unload runs when the capture ends",                                     \
    "deferred until the capture ends")                                                              \
  X(CG_VERDICT_FAILED, "failed", 0, "the driver returned another error", "", "")                \
  X(CG_VERDICT_DEFERRED_FREE, "deferred-free", CG_WORD_ROUTINE,                                      \
    "the free returned success; the memory stays allocated until the capture ends, then is freed", \
    "returned success; the memory stays allocated until the capture ends, then is freed",           \
    "returned success; the memory is freed when the capture ends")                                 \
  X(CG_VERDICT_DEFERRED_DESTROY, "deferred-destroy", CG_WORD_ROUTINE,                                \
    "the executable graph's destroy returned success and runs when the capture ends",              \
    "returned success; the executable graph is destroyed when the capture ends",                    \
    "returned success; the graph is destroyed when the capture ends")                              \
  X(CG_VERDICT_NOT_READY, "not-ready", CG_WORD_ROUTINE,                                              \
    "capguard answered CUDA_ERROR_NOT_READY for an event recorded in a still-capturing stream, "   \
    "without calling the driver: the capture survives",                                            \
    "answered 600 (not ready) by capguard without calling the driver: the event was recorded in a " \
    "still-capturing stream, where the driver would answer 907 and break the capture",             \
    "answered not ready by capguard (the event is in a still-capturing stream)")                    \
  X(CG_VERDICT_ESCAPED, "escaped", 0,                                                               \
    "the driver ran it now, outside the graph: replaying the graph will not do it (legacy-stream " \
    "work while only non-blocking streams capture), or will read or write host memory as it is "  \
    "then (a captured copy to or from pageable memory)",                                                      \
    "", "")                                                                                     \
  X(CG_VERDICT_BROKE, "broke", CG_WORD_BREAKS,                                                      \
    "the driver's own log named it as the call that broke the capture (a call capguard does not " \
    "wrap, or a capture end that failed: 904, 908)",                                               \
    "", "")                                                                                    \
  X(CG_VERDICT_STALE, "stale", 0,                                                                   \
    "the call went through unchanged; a live graph exec still reads the memory it freed (a free), " \
    "or reads memory freed since its capture (a launch)",                                          \
    "went through unchanged; a live graph exec reads the memory: each replay reads or writes "      \
    "memory that is no longer its own",                                                            \
    "")                                                                                             \
  X(CG_VERDICT_WAITING, "waiting", 0,                                                               \
    "the call went through unchanged and had not returned, or the launch had not finished, after " \
    "CAPGUARD_HANG_S seconds (a launch count: what the process had launched when it went quiet)",  \
    "had not finished after CAPGUARD_HANG_S seconds", "")

/* capguard's run modes (CAPGUARD_MODE). */
#define CG_RUN_MODES(X)                                                                             \
  X(CG_RUN_GUARD, "guard", 0, "report, record, replay, defer unloads (the default)")               \
  X(CG_RUN_REPORT, "report", 0, "observe and report; the process behaves as without capguard")     \
  X(CG_RUN_OFF, "off", 0, "pure pass-through")

/* Capture modes, in CUstreamCaptureMode's order (its values are the enum's). */
#define CG_CAPTURE_MODES(X)                                                                         \
  X(CG_MODE_GLOBAL, "global", 0, "prohibits its own thread and every other thread in global mode") \
  X(CG_MODE_THREAD_LOCAL, "thread-local", 0, "prohibits only its own thread")                      \
  X(CG_MODE_RELAXED, "relaxed", 0, "prohibits no thread")

#define CG_CAPTURE_STATUSES(X)                                                                      \
  X(CG_CAPTURE_ACTIVE, "active", CG_WORD_OPEN, "still open at exit")                                \
  X(CG_CAPTURE_INVALIDATED, "invalidated", CG_WORD_OPEN | CG_WORD_BREAKS,                           \
    "broken by the driver (or emulation), still open at exit")                                     \
  X(CG_CAPTURE_ENDED, "ended", 0, "ended and the driver returned a graph")                         \
  X(CG_CAPTURE_FAILED, "failed", CG_WORD_BREAKS, "its end returned an error (e.g. invalidated)")

/* A module image's kind (an event's image.kind; priming records store the
 * enum's values, so rows keep their places). */
#define CG_IMAGE_KINDS(X)                                                                           \
  X(CG_IMAGE_UNKNOWN, "unknown", 0, "not an image capguard recognises")                             \
  X(CG_IMAGE_CUBIN, "cubin", 0, "an ELF image for one GPU architecture (e_machine EM_CUDA)")        \
  X(CG_IMAGE_FATBIN, "fatbin", 0, "a fat binary: images for several architectures, PTX maybe")     \
  X(CG_IMAGE_PTX, "ptx", 0, "PTX text, compiled by the driver when loaded")

#define CG_WORD_ENUM(id, word, flags, what) id,
typedef enum { CG_RECORD_TYPES(CG_WORD_ENUM) CG_RECORD_TYPE_COUNT } cg_record_type;
typedef enum { CG_EVENT_KINDS(CG_WORD_ENUM) CG_EV_KIND_COUNT } cg_event_kind;
#define CG_VERDICT_ENUM(id, word, flags, what, said, routine) id,
typedef enum { CG_VERDICTS(CG_VERDICT_ENUM) CG_VERDICT_COUNT } cg_verdict;
#undef CG_VERDICT_ENUM
typedef enum { CG_RUN_MODES(CG_WORD_ENUM) CG_RUN_MODE_COUNT } cg_run_mode;
typedef enum { CG_CAPTURE_MODES(CG_WORD_ENUM) CG_CAPTURE_MODE_COUNT } cg_capture_mode;
typedef enum { CG_CAPTURE_STATUSES(CG_WORD_ENUM) CG_CAPTURE_STATUS_COUNT } cg_capture_status;
typedef enum { CG_IMAGE_KINDS(CG_WORD_ENUM) CG_IMAGE_KIND_COUNT } cg_image_kind;
#undef CG_WORD_ENUM

/* One row: where its word and its meaning start in the tables' text
 * (log_schema.c), offsets rather than pointers, which the loader would
 * relocate at the start-up of every process the shim is in. */
typedef struct {
  uint16_t word, what;
  unsigned flags;
} cg_word;

/* A table: its rows, in order; n rows. */
typedef struct {
  const cg_word *rows;
  size_t n;
} cg_words;

extern const cg_words cg_record_types, cg_event_kinds, cg_verdicts, cg_run_modes,
    cg_capture_modes, cg_capture_statuses, cg_image_kinds;

/* The row's word, or "unknown" for a value outside the table. */
const char *cg_word_name(const cg_words *t, unsigned v);
/* What the row means, or "" outside the table. */
const char *cg_word_what(const cg_words *t, unsigned v);
/* Whether the row carries every flag of flags (false outside the table). */
bool cg_word_is(const cg_words *t, unsigned v, unsigned flags);
/* The row whose word is s (NUL-terminated, or the first len bytes when len is
 * not (size_t)-1); t->n (one past the last row) when there is none. */
unsigned cg_word_parse(const cg_words *t, const char *s, size_t len);

/* Typed names and parses (parse: true and *out set when s is a word of the table). */
const char *cg_record_type_name(cg_record_type t);
const char *cg_event_kind_name(cg_event_kind k);   /* "module-load", "module-unload", "allocation", ... */
const char *cg_verdict_name(cg_verdict v);         /* "refused", "allowed", ... */
const char *cg_run_mode_name(cg_run_mode m);       /* "guard", "report", "off" */
const char *cg_capture_mode_name(cg_capture_mode mode); /* "global", "thread-local", "relaxed" */
const char *cg_capture_status_name(cg_capture_status s); /* "active", "invalidated", "ended", "failed" */
const char *cg_image_kind_name(cg_image_kind kind);    /* "unknown", "cubin", "fatbin", "ptx" */
bool cg_run_mode_parse(const char *s, cg_run_mode *out);

/* A verdict that invalidated the captures that prohibited the call. */
bool cg_verdict_breaks(cg_verdict v);
/* The verdict's columns past the common ones (CG_VERDICTS): its event-line
 * sentence and its routine line (NULL where it has none, and outside the
 * table). */
const char *cg_verdict_said(cg_verdict v);
const char *cg_verdict_routine_line(cg_verdict v);
/* A status of a broken capture (its end failed, or it was invalidated). */
bool cg_capture_status_broken(cg_capture_status s);

/* What a CUresult the log holds means, in words a person reads: the
 * driver's own description for the codes capture breaks produce ("operation
 * not permitted when stream is capturing" for 900) and the common ones
 * around them; NULL for a code not in the table. No driver call: the
 * tools read logs on machines without one. */
const char *cg_cuda_result_words(int code);

#endif
