/* Reader of capguard's JSON Lines logs (docs/log-format.md) into one model
 * that spans several files (several runs) and processes. Tolerant by design:
 * unknown keys and unknown "type"s are ignored, lines with a newer "v" are
 * skipped and counted, malformed lines are counted, never fatal.
 *
 * Linear in the log's size, in time and memory: each line is parsed, the
 * fields the report uses are copied out (strings interned once, control
 * characters replaced), and the parsed line is freed; processes and captures
 * are found through hash tables, not searched.
 *
 * The log's words (record types, event kinds, verdicts, modes, statuses) are
 * parsed into log_schema.h's enums here, once: a word that is absent, or that
 * this reader does not know (a newer capguard's), reads as the table's count
 * (e.g. CG_VERDICT_COUNT), which cgl_word prints as NULL. */
#ifndef CAPGUARD_LOG_READER_H
#define CAPGUARD_LOG_READER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "capguard/log_schema.h"
#include "log_pool.h" /* cgl_strs */

#define CGL_VERSION 1 /* newest log version understood */
/* The longest line read (docs/reports.md): a longer one is skipped, said as
 * malformed, and in a file that is not a regular file (a pipe, a device
 * without end) stops its reading. Memory per line stays bounded. */
#define CGL_LINE_MAX (16 << 20)

/* The three slowest captures a process's summary named. */
typedef struct {
  long long id, ns;
  const char *began; /* "" when not said */
} cgl_slowest;

#define CGL_ARGV_MAX 16 /* the shim logs a process's first 16 words */

/* What few processes log, apart from their record (cgl_process.more): an
 * allocation made only for a process that says one of them is not zero
 * (the priming file's counts, the images skipped for their architecture,
 * the hang watch's execs left, a signal, a command line with control
 * characters). A whole read holds a million processes, most of which set
 * none of these; one that sets some pays a pointer and this block. */
typedef struct {
  long long primed_loaded, primed_unused, recorded;
  long long primed_skipped_arch, skipped_sm, device_sm;
  /* Graph execs holding collectives still alive at exit (CAPGUARD_HANG_S). */
  long long collective_execs;
  const cgl_strs *argv_exact; /* the argc words byte for byte, for commands to paste: NULL when
                                 argv is already exact (no control character, valid UTF-8) */
  int signal;                 /* the signal it died of, from capguard run's "ended" record (0: not said) */
  /* Its numbers (cgl_process_num) when one does not fit the process's 4
   * bytes (cgl_process.wide), CGL_PR_NUMS of them; NULL when they fit. */
  long long *nums;
} cgl_process_more;

/* A process's numbers, in cgl_process.nums (cgl_process_num reads them,
 * the reader sets them through cgl_process_set): 4 bytes each, as every
 * value a shim writes fits (a driver version, a rank, a count of
 * captures); a log that says one that does not keeps all of them in the
 * process's cgl_process_more. */
enum {
  CGL_PR_DRIVER_VERSION,
  CGL_PR_EMULATE_DRIVER,
  CGL_PR_RANK,            /* the launcher's rank (rank_known) */
  CGL_PR_WORLD_SIZE,      /* 0 when not said */
  CGL_PR_CAPTURES,        /* the summary's captures begun, */
  CGL_PR_CAPTURES_BROKEN, /* broken */
  CGL_PR_CAPTURES_TIMED,  /* and timed (capture_ns covers them) */
  CGL_PR_NUMS
};

/* A process. Kept small (a census holds one per process of every run, a
 * whole read a million of them): its numbers 4 bytes (cgl_process_num),
 * the command line is an interned list, the
 * slowest captures and what few processes log (cgl_process_more)
 * allocations of their own, the indices 4 bytes (a log holds fewer than
 * 2^31 processes: the reader stops there, cgl_xrealloc's one line). */
typedef struct {
  uint32_t file;      /* index into cgl_log.files */
  uint32_t run_index; /* set by cgl_group_runs */
  long long pid, ppid;
  bool seen_process;    /* a "process" line was read (else only its other lines) */
  bool seen_start;      /* a "start" line was read: the shim started in it */
  bool cuda;            /* it used the driver (false: a "start" line and no "process" line) */
  bool has_summary, log_incomplete;
  /* Capture time (the summary's capture_ns and what follows it; absent in
   * older logs: has_capture_time false). */
  bool has_capture_time;
  /* The launcher's rank, from the start, process or summary record (absent:
   * rank_known false; world_size 0 when not said). What no report shows is
   * not kept: the shim's version, the local rank, the summary's count of
   * primed loads served (the calls' verdicts count them). */
  bool rank_known;
  unsigned char n_slowest; /* how many slowest captures the summary named (at most 3) */
  unsigned char mode;      /* a cg_run_mode; CG_RUN_MODE_COUNT: not logged */
  unsigned char argc;      /* argv's words (at most CGL_ARGV_MAX) */
  bool wide;               /* a number did not fit nums: all of them are more->nums */
  int32_t nums[CGL_PR_NUMS]; /* read them with cgl_process_num */
  const char *run, *prime; /* run: capguard run's id; prime: the priming file */
  long long time_ns;
  long long first_ns, last_ns; /* span of everything it logged */
  const char *const *argv;     /* its first argc words; NULL when argc is 0 */
  long long capture_ns, first_capture_ns, first_replay_ns;
  cgl_slowest *slowest; /* n_slowest of them; owned by the log, shared by its views */
  cgl_process_more *more; /* NULL: all its fields zero; owned by the log, shared by its views */
} cgl_process;

/* Where a process's first line is (byte offset and line number in its
 * file): kept (cgl_log.firsts) only by a census and by the reading of one
 * run that it starts (log_latest.h), which read from there. */
typedef struct {
  long long offset, lineno;
} cgl_first_line;

/* p's rarely set fields: all zero (NULL) when it logged none. */
static inline const cgl_process_more *cgl_process_rare(const cgl_process *p) {
  static const cgl_process_more none;
  return p->more ? p->more : &none;
}

/* p's number k (CGL_PR_DRIVER_VERSION ... CGL_PR_CAPTURES_TIMED). */
static inline long long cgl_process_num(const cgl_process *p, int k) {
  return p->wide ? p->more->nums[k] : p->nums[k];
}
/* Sets p's number k to v (the reader's). */
void cgl_process_set(cgl_process *p, int k, long long v);

/* What a census (cgl_log.census) holds of a process beside its record, in
 * cgl_log.cprocs, so that a whole read's records do not carry it: its calls
 * made during capture and those served (what the runs' table counts without
 * keeping the events), and its captures of small ids, by id (CGL_CENSUS_*
 * flags; the others are cgl_log.ccaps): a byte a capture, not a hash
 * table's entry. cap of them, in small while they fit (most processes begin
 * a few captures: no allocation of their own), else in ids; read them with
 * cgl_census_ids. */
typedef struct {
  long long calls, served;
  unsigned char *ids;
  size_t cap, dense;
  unsigned char small[8];
} cgl_census_proc;

/* A census's flags of a process's captures by id, c->cap of them. */
static inline const unsigned char *cgl_census_ids(const cgl_census_proc *c) {
  return c->cap > sizeof c->small ? c->ids : c->small;
}

/* What a capture record says broke it ("broken_by"): older capguards did
 * not say (UNKNOWN: readers name no offender, they never guess), null means
 * capguard saw no call break it (a call it does not watch did), an object
 * names the first call it saw break it. */
typedef enum { CGL_BY_UNKNOWN = 0, CGL_BY_UNWATCHED, CGL_BY_CALL } cgl_broken_by;

/* The first offender of a capture (broken_by's object). */
typedef struct {
  const char *call, *python, *where; /* never NULL once read: "" when absent */
  cg_event_kind kind;   /* CG_EV_KIND_COUNT: absent or unknown */
  cg_verdict verdict;   /* CG_VERDICT_COUNT: likewise */
  long long result, tid, time_ns;
} cgl_offender;

/* What few captures log, apart from their record (cgl_capture.more): the
 * first offender a call that broke it names (set when by is CGL_BY_CALL,
 * else all zero), and the events counted and not written again. Most
 * captures break nowhere and repeat nothing, and do not carry these 64
 * bytes. */
typedef struct {
  cgl_offender offender;
  long long repeats;
  long long end_result; /* when it does not fit cgl_capture.end_result (end_result_wide) */
} cgl_capture_more;

/* A capture: 80 bytes (a whole read of a large log holds millions). */
typedef struct {
  uint32_t proc;       /* index into cgl_log.procs */
  int32_t first_break; /* index into cgl_log.evs of the earliest breaking call, -1 if none (a log
                          holds fewer than 2^31 calls: the reader stops there) */
  long long id, tid, begin_ns, end_ns, events;
  /* What cuStreamEndCapture returned to the caller (a CUresult, 4 bytes):
   * read it with cgl_capture_end_result, which finds a value the log says
   * that does not fit in more. */
  int32_t end_result;
  /* bytes, not enums of 4: by a cgl_broken_by, mode a cg_capture_mode,
   * status a cg_capture_status */
  unsigned char by;
  unsigned char mode;   /* CG_CAPTURE_MODE_COUNT: not logged */
  unsigned char status; /* CG_CAPTURE_STATUS_COUNT: not logged */
  bool has_end_result : 1;  /* "end_result" was logged (absent while open at exit, or older logs) */
  bool ended_line : 1;      /* a "capture" line was read (else known from events only) */
  bool end_result_wide : 1; /* end_result is more's */
  /* NULL: no offender, no repeats, no wide end result; owned by the log,
   * shared by its views. Read it with cgl_capture_offender,
   * cgl_capture_repeats and cgl_capture_end_result. */
  cgl_capture_more *more;
  const char *stream, *began;
} cgl_capture;

/* c's first offender: all zero (NULL strings) when it has none. */
static inline const cgl_offender *cgl_capture_offender(const cgl_capture *c) {
  static const cgl_offender none;
  return c->more ? &c->more->offender : &none;
}
/* What c's end returned (0 when has_end_result is false). */
static inline long long cgl_capture_end_result(const cgl_capture *c) {
  return c->end_result_wide ? c->more->end_result : c->end_result;
}
/* The events c counted and did not write again (0 when the log says none). */
static inline long long cgl_capture_repeats(const cgl_capture *c) { return c->more ? c->more->repeats : 0; }

/* What few calls during capture log, apart from their record
 * (cgl_event.more): an allocation made only for a call that says one. */
typedef struct {
  const char *thread_name; /* the calling thread's name when not the capturing thread, NULL if not said */
  const char *nccl_setup;  /* the NCCL communicator set-up frame it was called from, NULL if none */
  /* The load passed an option capguard cannot reproduce (options_foreign
   * names it, NULL when none); options_differ: how its options differed
   * from those recorded for its bytes, NULL. */
  const char *options_foreign, *options_differ;
  /* The call's numbers (cgl_event_num) when one does not fit the event's 4
   * bytes (cgl_event.wide), CGL_EV_NUMS of them; NULL when they fit. */
  long long *nums;
} cgl_event_more;

/* An event's numbers, in cgl_event.nums (cgl_event_num reads them): 4
 * bytes each, as every value a shim writes fits (a CUresult, a driver
 * version, a Linux thread id, an SM architecture); a log that says one
 * that does not keeps all of them in the event's cgl_event_more. */
enum {
  CGL_EV_RESULT,         /* what the call returned to the caller */
  CGL_EV_DRIVER_RESULT,  /* what the driver returned (-1: not said) */
  CGL_EV_DRIVER_VERSION, /* the driver's version the shim saw */
  CGL_EV_EMULATE_DRIVER, /* CAPGUARD_EMULATE_DRIVER's version, 0 none */
  CGL_EV_TID,            /* the calling thread */
  CGL_EV_IMAGE_SM,       /* the image's SM architecture (90: sm_90), 0 unknown */
  CGL_EV_NUMS
};

/* A call during capture. Kept small (a whole read of a large log holds
 * millions): 4-byte indices (fewer than 2^31 processes and captures: the
 * reader stops there) and numbers (cgl_event_num), its order read its
 * index in cgl_log.evs (a view keeps the order), its file its process's,
 * and what few calls log in an allocation of its own. */
typedef struct {
  uint32_t proc, capture; /* indices into cgl_log.procs and cgl_log.caps */
  /* The words as bytes, not enums of 4, next to the flags, so that they
   * fill one word: kind a cg_event_kind, verdict a cg_verdict, image_kind a
   * cg_image_kind. */
  unsigned char kind;       /* CG_EV_KIND_COUNT: not one this reader knows */
  unsigned char verdict;    /* CG_VERDICT_COUNT: likewise */
  unsigned char image_kind; /* CG_IMAGE_KIND_COUNT: no image logged */
  bool kernels_truncated;
  bool runtime_lazy;    /* its native stack shows the CUDA runtime loading lazily (__cudaGetKernel,
                           cudaGetFuncBySymbol, libcudart's lazy loading): a first launch */
  /* The load passed an option capguard cannot reproduce (more's
   * options_foreign names it): never served, so never recorded. A load
   * whose options it can reproduce is recorded with them and served like
   * any other. */
  bool with_options;
  bool wide; /* a number did not fit nums: all of them are more->nums */
  long long time_ns;
  int32_t nums[CGL_EV_NUMS]; /* read them with cgl_event_num */
  const char *call;
  const char *handle;  /* hex: what the call worked on (stream, event, pointer), NULL if absent */
  const char *meaning; /* the result in words, as the shim wrote it, NULL if absent */
  const char *image_hash;
  const cgl_strs *kernels;     /* never NULL: an empty list when none */
  const char *site;     /* see cgl_event_site */
  const char *python_top; /* innermost Python frame "file:line in func", NULL if none */
  cgl_event_more *more;   /* NULL: none of its fields said; owned by the log, shared by its views */
  long long src_line;     /* its line in its process's file */
} cgl_event;

/* The file e was read from (its process's), in log's files. */
static inline const char *cgl_event_file(const char *const *files, const cgl_process *procs,
                                         const cgl_event *e) {
  return files[procs[e->proc].file];
}

/* e's rarely set fields: all NULL when it logged none. */
static inline const cgl_event_more *cgl_event_rare(const cgl_event *e) {
  static const cgl_event_more none;
  return e->more ? e->more : &none;
}

/* e's number k (CGL_EV_RESULT ... CGL_EV_IMAGE_SM). */
static inline long long cgl_event_num(const cgl_event *e, int k) {
  return e->wide ? e->more->nums[k] : e->nums[k];
}

/* A stale-pointer event (stale-free, stale-launch: docs/stale.md), kept
 * apart from the calls made during capture: it is about a graph exec and the
 * memory it reads, not about a capture. Strings are "" when absent. */
typedef struct {
  size_t proc;
  cg_event_kind kind;
  long long time_ns, tid, capture_id, size, buffer_id, now_buffer_id, node, arg, reads;
  bool by_hand;
  bool piece; /* a piece mapped with cuMemMap */
  const char *call, *exec, *start, *kernel;
  const char *began;      /* where the graph's capture began */
  const char *site;       /* the free's or the launch's site (cgl_event_site's form) */
  const char *python_top; /* its innermost Python frame, NULL if none */
} cgl_stale;

/* A hang event (hang-launch, hang-wait, hang-teardown, launch-count:
 * docs/hangs.md), kept apart from the calls made during capture: it is
 * about a launch or a call not done after CAPGUARD_HANG_S. Strings are ""
 * when absent. */
typedef struct {
  size_t proc;
  cg_event_kind kind;
  long long time_ns, tid, capture_id, launches, waited_ns, collectives, execs;
  long long kernel_nodes; /* 0: the exec's kernels are not known */
  const char *call, *exec, *collective, *where;
  const char *began; /* where the graph's capture began */
} cgl_hang;

/* A load on the request path (request-path-load: docs/request-path.md),
 * kept apart from the calls made during capture. provisional: made within
 * the quiet window after the launch that may have begun serving; it counts
 * unless a capture of its process began within that window (cgr_analysis). */
typedef struct {
  size_t proc;
  long long time_ns, load_ns, after_ns;
  bool provisional, served, runtime_lazy;
  const char *call;
  const cgl_strs *kernels; /* never NULL */
  bool kernels_from_source; /* read from the object the image lies in (image_source.h), not logged */
  const char *image_hash;  /* NULL when no image was logged */
  cg_image_kind image_kind;
  const char *site, *python_top;
  const char *framework; /* who loaded it, when its stacks tell: "Triton", "CuPy", "the CUDA runtime's
                            lazy loading"; NULL when unknown */
} cgl_request;

typedef struct {
  size_t first_proc;    /* the run's top-level process (earliest) */
  size_t n_procs;
  long long first_ns, last_ns;
} cgl_run;

/* A capture as a census keeps it: its process and whether it broke. */
typedef struct {
  size_t proc;
  long long id;
  unsigned char flags; /* CGL_CENSUS_* */
} cgl_census_capture;
enum { CGL_CENSUS_ENDED = 1, CGL_CENSUS_BREAK = 2, CGL_CENSUS_STATUS_BROKEN = 4, CGL_CENSUS_SEEN = 8 };

struct cgl_pool;
struct cgl_index;
struct cgl_json;

typedef struct {
  const char **files;
  size_t n_files;
  cgl_process *procs;
  size_t n_procs, cap_procs;
  cgl_capture *caps;
  size_t n_caps, cap_caps;
  cgl_event *evs;
  size_t n_evs, cap_evs;
  cgl_stale *stale;
  size_t n_stale, cap_stale;
  cgl_hang *hangs;
  size_t n_hangs, cap_hangs;
  cgl_request *reqs;
  size_t n_reqs, cap_reqs;
  cgl_run *runs;        /* set by cgl_group_runs */
  size_t n_runs;
  struct cgl_pool *pool;   /* interned strings and lists */
  struct cgl_index *index; /* (file, pid) -> process, (process, id) -> capture */
  bool is_view;         /* a cgl_view: shares files and pool with the log it came from */
  bool sealed;          /* cgl_seal dropped the index and the pool's table */
  size_t lines, records, malformed, newer, unknown;
  size_t cut_files;     /* files whose last line has no newline: cut short (truncated, or a
                           writer killed mid-line) */
  char first_malformed[512]; /* "file:line: why" of the first malformed line */
  size_t over_lines;         /* lines longer than CGL_LINE_MAX, skipped */
  size_t stopped_files;      /* inputs not regular files whose reading an over-long line stopped */
  char first_over[96];
  /* A census reads every line but keeps, of events and captures, only what
   * the runs' table counts (cgl_census_capture, cgl_census_proc):
   * the processes, their runs and the counts in memory bounded by the
   * number of processes and captures, not by the number of events. */
  bool census;
  cgl_census_capture *ccaps;
  size_t n_ccaps, cap_ccaps;
  cgl_census_proc *cprocs; /* a census's, one a process (cap_cprocs of room); NULL in a whole read */
  size_t cap_cprocs;
  bool keep_firsts;       /* keep firsts in a read that is not a census */
  cgl_first_line *firsts; /* one a process (cap_firsts of room) when census or keep_firsts, else NULL */
  size_t cap_firsts;
  long long cur_offset, cur_lineno; /* the line being read */
  struct cgl_json *json; /* the line's parser and its buffers (log_json.h) */
} cgl_log;

/* The key of log->index's value in table t (cgl_index_key; ctx is the log):
 * 0 a process's (file, pid), 1 a capture's (process, id). */
void cgl_log_key(const void *ctx, int t, size_t value, long long *a, long long *b);
/* Where process proc's first line is (all zero when log keeps none). */
const cgl_first_line *cgl_first_of(const cgl_log *log, size_t proc);
/* What a census holds of process proc beside its record (all zero when
 * log is not a census). */
const cgl_census_proc *cgl_census_of(const cgl_log *log, size_t proc);
/* The hang watch's event kinds (kept in log->hangs). */
bool cgl_hang_kind(cg_event_kind kind);
void cgl_init(cgl_log *log);
/* Once log is read and its runs grouped: drops what only reading needs
 * (the index, the pool's table of strings; a million processes' 30 MB),
 * before the report is built on top of the records. Reading more lines, or
 * grouping the runs again, makes them again (cgl_unseal). */
void cgl_seal(cgl_log *log);
void cgl_unseal(cgl_log *log);
void cgl_free(cgl_log *log);

/* How long a FIFO is waited on for a writer before it is given up
 * (ETIMEDOUT): one started just before the report has long opened it. */
#define CGL_FIFO_WAIT_MS 5000
/* Read path (or stdin when path is "-") from byte offset on. Returns 0, or -1
 * when the file cannot be opened or read (errno set; ETIMEDOUT: a FIFO no
 * writer opened); what was read stays. */
int cgl_read_file(cgl_log *log, const char *path, long long offset);
int cgl_read_stream(cgl_log *log, FILE *f, const char *name);
/* Read path from byte offset on, its first line numbered lineno. */
int cgl_read_file_at(cgl_log *log, const char *path, long long offset, long long lineno);
/* Add a file's name to log without reading it (its index for later files). */
size_t cgl_add_file(cgl_log *log, const char *name);

/* Feed one line (without its newline); exposed for tests and the run summary. */
void cgl_read_line(cgl_log *log, size_t file, const char *text, size_t len, long long lineno);

/* Whether anything read was a capguard record (of this or a newer version). */
bool cgl_is_capguard_log(const cgl_log *log);

/* Runs: one `capguard run` (processes sharing its run id), else one top-level
 * process and its descendants (by ppid, in the same file). Sets log->runs,
 * ordered by start time, and each process's run_index. */
void cgl_group_runs(cgl_log *log);
/* A log of one run only (indices remapped), sharing strings with log; free it
 * with cgl_free. Call cgl_group_runs first. */
void cgl_view(const cgl_log *log, size_t run, cgl_log *view);
/* fn called with each run's view in turn (run 0 first), each freed after:
 * the log is bucketed by run once, so all of them cost the log's size, not
 * its size times its runs as a cgl_view of each would. */
void cgl_each_run(const cgl_log *log, void (*fn)(const cgl_log *view, size_t run, void *ctx), void *ctx);

/* A word of the log for printing: row v of table t, NULL for a value outside
 * it (absent from the log, or unknown to this reader). */
const char *cgl_word(const cg_words *t, unsigned v);
/* A capture that broke: its end failed, it was invalidated, or a call refused inside it. */
bool cgl_capture_broken(const cgl_log *log, size_t capture);

/* Where an event was made, one line: the innermost Python frame outside Triton's
 * and torch's machinery "file:line in func", else the innermost native frame outside
 * capguard and libcuda without its absolute " [0x...]" address (which ASLR makes
 * differ between processes) and with C++ names demangled, else "(no stack)". */
void cgl_event_site(const cgl_event *e, char *buf, size_t cap);

#endif
