/* One reported event (a forbidden call made during capture, a capture that
 * ended, the process summary) and its two renderings: the text a person reads
 * on stderr, and one JSON object per line for the log. Pure formatting: no
 * I/O, no allocation (save a demangler's, which the caller gives the text
 * for kernel names); docs/log-format.md specifies the JSON. */
#ifndef CAPGUARD_EVENT_H
#define CAPGUARD_EVENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "capguard/capture_model.h"
#include "capguard/image.h"
#include "capguard/kernel_name.h"
#include "capguard/log_schema.h"
#include "capguard/rank.h"

/* cg_event_kind and cg_verdict, with their names, are rows of log_schema.h. */

typedef struct {
  const char *file;
  int line;
  const char *func;
} cg_py_frame;

#define CG_MAX_NATIVE_FRAMES 32
/* Native frames an event's text shows (the rest are in the log): the shim
 * names only these for a person (readable_frame.h). */
#define CG_TEXT_NATIVE_FRAMES 12
#define CG_MAX_PY_FRAMES 48

/* What a stale-pointer event (stale-free, stale-launch) is about: a graph
 * exec alive in the process reads memory that was freed. */
typedef struct {
  uint64_t exec;          /* the CUgraphExec */
  uint64_t start, size;   /* the allocation as captured (its range) */
  uint64_t buffer_id;     /* its CU_POINTER_ATTRIBUTE_BUFFER_ID at capture */
  uint64_t now_buffer_id; /* a launch: the buffer at that address now, 0 when none (freed) */
  const char *kernel;     /* the kernel reading it, "" when unknown */
  unsigned node;          /* its node's place in the graph */
  int arg;                /* the kernel's argument that holds the pointer */
  unsigned reads;         /* how many (node, argument) of the exec read the allocation */
  bool by_hand;           /* the graph was not captured (built with cuGraphAdd*) */
  bool piece;             /* a piece mapped with cuMemMap: buffer ids are its physical allocation's
                             number (capguard's), now 0 when unmapped */
} cg_stale_read_info;

/* What a hang event (hang-launch, hang-wait, hang-teardown, launch-count)
 * is about: a graph exec's launch, or a call, not done after CAPGUARD_HANG_S. */
typedef struct {
  uint64_t exec;          /* the CUgraphExec, 0 for a call */
  uint64_t launches;      /* which launch of the exec (hang-launch), how many (launch-count) */
  uint64_t waited_ns;     /* how long it had lasted when said */
  unsigned collectives;   /* NCCL kernels in the exec; hang-teardown: in the first live one */
  unsigned kernel_nodes;  /* kernels the driver named in the exec (0: its kernels are not known) */
  const char *collective; /* the first of them, "" none */
  unsigned execs;         /* hang-teardown: live execs holding collectives */
  const char *where;      /* hang-wait, hang-teardown: who called, "" unknown */
} cg_hang_info;

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
  bool has_handle;           /* what the call worked on (stream, event, pointer, graph exec) */
  uint64_t handle;
  const char *const *native; /* symbolized frames, innermost first */
  size_t n_native;
  const cg_py_frame *py;     /* Python frames, innermost first */
  size_t n_py;
  const cg_stale_read_info *stale; /* stale-free and stale-launch events, NULL for the others */
  const cg_hang_info *hang;        /* hang events (CAPGUARD_HANG_S), NULL for the others */
  /* The calling thread's name when it is not the thread that began the
   * capture (an NCCL proxy thread, a watchdog), NULL otherwise. */
  const char *thread_name;
  /* The frame of NCCL's communicator set-up the call was made from
   * (capguard/nccl_frames.h), NULL when none. */
  const char *nccl_setup;
  /* The text's demangler for kernel names (capguard/kernel_name.h: shown
   * demangled and shortened); NULL: as they are. The JSON keeps them as they are. */
  cg_demangle_fn demangle;
  /* A load passed JIT or library options (the CUDA runtime's lazy loading
   * does): a copy preloaded with the same options serves it. */
  bool with_options;
  const char *load_options;     /* its options, "NAME=VALUE,..." (load_options.h), or NULL */
  const char *options_foreign;  /* the option capguard cannot reproduce (never served nor recorded), or NULL */
  const char *options_differ;   /* how its options differ from those recorded for its bytes, or NULL */
  /* A load on the request path (CG_EV_REQUEST_LOAD): how long the load call
   * took, and how long after serving began it was made (while serving is not
   * yet sure, after the first graph launch that may start it: provisional). */
  uint64_t load_ns, after_serving_ns;
  bool provisional;
  /* Where the image's bytes lie in a loaded object's file, when its
   * compressed entries were not read for their kernel names on the request
   * path (capguard report reads them there): the file, and the offset. */
  const char *image_object;
  uint64_t image_offset;
} cg_event;

/* How many of the slowest captures a summary names. */
#define CG_SLOWEST_CAPTURES 3

typedef struct {
  uint64_t pid;
  uint64_t captures_begun, captures_broken;
  uint64_t captures_open; /* still open when the process exited (each has its capture record) */
  uint64_t events[CG_EV_KIND_COUNT];
  uint64_t verdicts[CG_VERDICT_COUNT];
  uint64_t primed_loaded, primed_served, primed_unused, recorded;
  /* Priming records not preloaded because they were built for another GPU
   * architecture: how many, one arch they were for, and this device's. */
  uint64_t primed_skipped_arch;
  unsigned skipped_sm, device_sm;
  const char *log_path; /* NULL when no log */
  bool log_incomplete;  /* lines of this process could not be written (JSON: "log_incomplete") */
  bool secure;          /* secure execution (AT_SECURE): no log whatever CAPGUARD_LOG says */
  /* Capture time (docs/log-format.md): the captures that ended (a graph or
   * not) and the wall time spent inside them; the first begin and the first
   * cuGraphLaunch after it (CLOCK_REALTIME, 0: none); the slowest captures,
   * slowest first, with where each began. */
  uint64_t captures_timed, capture_ns;
  uint64_t first_capture_ns, first_replay_ns;
  size_t n_slowest;
  struct {
    uint64_t id, ns;
    const char *began;
  } slowest[CG_SLOWEST_CAPTURES];
  /* The rank of a distributed job (capguard/rank.h), when a launcher named
   * one; world_size 0 when unknown. */
  bool rank_known;
  unsigned rank, world_size;
  /* Loads on the request path (after serving began): how many, the time
   * spent in those load calls, and how long after serving began the first
   * came; serving_began: serving began (loads after it count). */
  uint64_t request_loads, request_load_ns, first_request_after_ns;
  bool serving_began;
  /* Graph execs holding collectives (NCCL kernels) still alive at exit,
   * counted with CAPGUARD_HANG_S set: what holds a communicator's teardown. */
  uint64_t collective_execs;
} cg_summary;

/* The "start" record (the shim started in a process) and the "process" record
 * (the process first used the driver): who the process is. */
typedef struct {
  cg_record_type type;       /* CG_RECORD_START or CG_RECORD_PROCESS */
  uint64_t pid, ppid, time_ns;
  cg_run_mode mode;
  int driver_version;        /* process record only: cuDriverGetVersion, 0 unknown */
  int emulate_driver;        /* process record only: CAPGUARD_EMULATE_DRIVER, 0 off */
  const char *version;       /* capguard's */
  const char *prime;         /* the priming file, "" or NULL when none */
  const char *run;           /* CAPGUARD_RUN; NULL or "" leaves the key out */
  const char *cmdline;       /* /proc/self/cmdline: NUL-separated words (the last may lack its NUL) */
  size_t cmdline_len;
  const cg_rank_info *rank;  /* the launcher's rank (capguard/rank.h); NULL or rank < 0: not said */
  bool cmdline_cut;          /* the command line is longer than cmdline_len: read only in part */
} cg_process_record;

/* Most words of the command line a start or process record keeps; when
 * there are more, the last of them is "...[cut: more words]". */
#define CG_RECORD_MAX_ARGV 16
/* Most bytes of one string field (run, prime, each argv word) a start or
 * process record keeps; a longer one is cut, ending in CG_CUT_MARK and how
 * many bytes were left out: "...[cut: 18976 bytes]". Escaped, the record
 * stays under 64 KiB whatever the process's environment and argv hold. */
#define CG_RECORD_FIELD_MAX 1024
#define CG_CUT_MARK "...[cut: "

/* Each writes at most cap bytes including the NUL and returns the length it
 * would have written (like snprintf), so callers can detect truncation. */
size_t cg_event_format_text(const cg_event *e, char *buf, size_t cap); /* several lines, ends in \n */
size_t cg_event_format_json(const cg_event *e, char *buf, size_t cap); /* one line, ends in \n */
/* The first call capguard saw break a capture (the capture record's
 * "broken_by"; docs/log-format.md). */
typedef struct {
  const char *call;
  cg_event_kind kind;
  cg_verdict verdict;
  int result;
  uint64_t tid, time_ns;
  const char *python; /* "file.py:12 in f", "" when not CPython */
  const char *where;  /* python (native caller), as a capture's "began" */
} cg_offender;

/* A capture record: the capture, where it began, what its end returned, how
 * many events were counted and not written again, and for a broken capture
 * the first offender (NULL: capguard saw none). */
typedef struct {
  const cg_capture *capture;
  uint64_t pid;
  const char *began;
  bool ended;             /* cuStreamEndCapture answered (end_result holds what the caller got) */
  int end_result;
  uint64_t repeats;
  const cg_offender *broken_by;
  /* The text line only, when broken_by is NULL: what to say instead of
   * "broken by a call capguard does not watch" (a reader of an older log,
   * which does not say); NULL for that. */
  const char *no_offender;
} cg_capture_record;

size_t cg_capture_format_json(const cg_capture_record *r, char *buf, size_t cap);
/* One line for a person, for a broken capture: "capguard: capture 3 (stream
 * 0x.., global, began at x.py:1 in f) broke: first offender cuMemAlloc_v2 at
 * y.py:9 in g (refused: 900 operation not permitted when stream is
 * capturing)", or "... broken by a call capguard does not watch". Ends in \n. */
size_t cg_capture_format_broken_text(const cg_capture_record *r, char *buf, size_t cap);
size_t cg_summary_format_text(const cg_summary *s, char *buf, size_t cap); /* one line */
size_t cg_summary_format_json(const cg_summary *s, char *buf, size_t cap);
size_t cg_process_format_json(const cg_process_record *r, char *buf, size_t cap);
/* The "ended" record capguard run appends when its command died of signal
 * sig (its wait status): the process wrote no summary, and the log says why. */
size_t cg_ended_format_json(uint64_t pid, uint64_t time_ns, int sig, char *buf, size_t cap);

/* What to do about a hang event: one sentence by kind (hang_advice.c), for
 * the event's text and the report alike; NULL where the fact is the whole
 * message. busy: a launch with no collective in it. */
const char *cg_hang_advice(cg_event_kind kind, bool busy);

#endif
