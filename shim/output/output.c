#include "output.h"
#include "capguard/char_class.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "capguard/image.h"
#include "capguard/path_dir.h"
#include "capguard/kernel_name.h"
#include "capguard/log_file.h"
#include "capguard/log_name.h"
#include "capguard/nccl_frames.h"
#include "capguard/write_whole.h"
#include "signals_held.h"
#include "absolute_path.h"
#include "config.h"
#include "log_descriptor.h"
#include "seen_set.h"
#include "stack.h"
#include "warn.h"
#include "locks.h"

#ifndef CAPGUARD_VERSION
#define CAPGUARD_VERSION "unknown"
#endif

static bool log_opened; /* a log was opened: a line that cannot be written is lost */
static bool log_deferred;     /* a log to create at the first use of the driver (open_log) */
static char log_path[4096];   /* CAPGUARD_LOG expanded (%p, %h, %q{VAR}, %%) */
static int process_written;
/* This process's "start" record is written (or owed to no one: a forked
 * child has its parent's). Written at start-up only by capguard run's own
 * child; every other process writes it at its first use of the driver, so
 * that helpers that never use CUDA write nothing. */
static int start_written;
static int process_driver_version;
/* A forked child inherits its parent's driver but never resolves it again,
 * so it would write records under a pid no "process" record names: no run,
 * no parent, and a reader takes it for a run of its own. It owes its
 * "process" record, written before its first other record. */
static int identity_owed;
static uint64_t repeats_hidden;
static uint64_t broken_hidden; /* broken captures not reprinted (same begin, same offender) */
/* The log lost a line (short write, ENOSPC, EFBIG, EIO): warned about once,
 * then no more lines are written, so the log holds whole lines and a known
 * gap. The part of a line a failed write left is cut off again
 * (cg_append_whole), so the log ends on a whole line, as log-format.md says. */
static int log_failed;
static int log_cut_mid_line;  /* a failed write left part of a line that could not be taken back */
static uint64_t lines_lost;
/* Calls guard mode handled as its job (routine verdicts: served, deferred,
 * not ready): one line per verdict per process on stderr, then counted. */
static unsigned quiet_kinds_said; /* a bit per verdict */
static pthread_mutex_t out_lock = PTHREAD_MUTEX_INITIALIZER;

/* Seen reports for stderr de-duplication, keyed by a hash of what makes two
 * the same to a person: call, verdict, image and call site (seen_set.h). */
static cg_seen_set seen;

/* One line of the log, whole or not at all: after the first failure nothing
 * more is written (one warning says so). */
static void log_line(const char *buf, size_t len) {
  if (!log_opened)
    return;
  int fd = cg_log_fd(); /* proven capguard's (log_descriptor.h) */
  if (fd < 0 || __atomic_load_n(&log_failed, __ATOMIC_ACQUIRE)) {
    __atomic_add_fetch(&lines_lost, 1, __ATOMIC_RELAXED);
    return;
  }
  int torn = 0;
  const sigset_t *host_mask = cg_signals_host_mask(); /* held: no mask of the write's own */
  int err = host_mask ? cg_append_whole_held(fd, buf, len, &torn, host_mask) : cg_append_whole(fd, buf, len, &torn);
  if (!err)
    return;
  __atomic_add_fetch(&lines_lost, 1, __ATOMIC_RELAXED);
  if (torn)
    __atomic_store_n(&log_cut_mid_line, 1, __ATOMIC_RELAXED);
  if (__atomic_exchange_n(&log_failed, 1, __ATOMIC_ACQ_REL) == 0)
    cg_warn("cannot write to the log %s (%s): the log is incomplete from here on; %s", log_path,
            strerror(err),
            cg_cfg.quiet ? "reports are quiet (CAPGUARD_QUIET=1), so what follows is said nowhere"
                         : "reports continue on stderr");
}

static void write_record(cg_record_type type, int driver_version);
static void pay_identity(void);

/* Whether lines go to a log: one was opened and has not been given up on. */
static bool has_log(void) { return log_opened && cg_log_fd_kept(); }

/* A log that cannot be used is said once per process tree, as configuration
 * warnings are (config.c): every child inherits the same CAPGUARD_LOG, and a
 * script of five commands would say it five times. The first process leaves
 * LOG_MARK, a hash of what it said; a child that would say the same stays
 * quiet. setenv only in the constructor, before the program's threads. */
#define LOG_MARK "CAPGUARD_LOG_WARNED"
static bool in_constructor;

__attribute__((format(printf, 1, 2))) static void log_warn(const char *fmt, ...) {
  char msg[768], mark[33];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  cg_hash_format(cg_hash_bytes(msg, strlen(msg)), mark);
  const char *seen = getenv(LOG_MARK);
  if (seen && strcmp(seen, mark) == 0)
    return;
  cg_warn("%s", msg);
  if (in_constructor)
    setenv(LOG_MARK, mark, 1);
}

/* Whether capguard run started this process itself: run names its own pid
 * first in CAPGUARD_RUN ("PID-TIME", tools/cmd/cmd_run.c). Its summary tells
 * a command that never used CUDA from one the shim never started in by
 * this process's "start" record. */
static bool started_by_run(void) {
  const char *id = cg_cfg.run_id;
  if (!id)
    return false;
  char *end;
  long pid = strtol(id, &end, 10);
  return end != id && *end == '-' && pid > 0 && pid == (long)getppid();
}

/* Whether the log file is not there yet, in a directory that is: then its
 * creation can wait. Anything else (a file there, a directory missing) is
 * opened, or said, at start-up as before. */
static bool creation_can_wait(const char *path) {
  struct stat st;
  if (lstat(path, &st) == 0 || errno != ENOENT)
    return false;
  char dir[sizeof log_path];
  cg_path_dir(path, dir, sizeof dir);
  return stat(dir, &st) == 0 && S_ISDIR(st.st_mode);
}

/* The file capguard run gave for records whose log cannot be placed
 * (CAPGUARD_LOG_FALLBACK): a name refused, a directory missing. The run
 * reads it with the rest and says why, so nothing is lost; elsewhere the
 * reports stay on stderr. true when it is open. */
static bool open_fallback(const char *what) {
  char why[256];
  if (cg_cfg.log_fallback && strlen(cg_cfg.log_fallback) < sizeof log_path &&
      cg_log_fd_open(cg_cfg.log_fallback, why, sizeof why) == 0) {
    snprintf(log_path, sizeof log_path, "%s", cg_cfg.log_fallback);
    log_warn("%s; this process's records go to %s, which capguard run reads", what, log_path);
    return true;
  }
  log_warn("%s; reporting on stderr only", what);
  return false;
}

/* The log is opened under the priming file's rules (capguard/log_file.h):
 * no symbolic link followed, a regular file only (a FIFO or device could
 * block the host in open or write), ours and writable by nobody else. */
static void open_log(void) {
  /* %p, %h, %q{VAR} and %% as valgrind and nsys write them (capguard/log_name.h) */
  char bad[160], what[768];
  if (cg_log_name_check(cg_cfg.log_path, bad, sizeof bad) != 0) {
    log_warn("log name %.200s %s; reporting on stderr only", cg_cfg.log_path, bad);
    return;
  }
  int e = cg_log_name_expand(cg_cfg.log_path, log_path, sizeof log_path);
  if (e == -2 && cg_log_name_refusal(cg_cfg.log_path, false, bad, sizeof bad) == 0)
    snprintf(bad, sizeof bad, "is refused");
  if (e != 0) {
    if (e == -2)
      snprintf(what, sizeof what, "log name %.200s %s", cg_cfg.log_path, bad);
    else
      snprintf(what, sizeof what, "log path %.200s... is too long", cg_cfg.log_path);
    log_opened = open_fallback(what);
    return;
  }
  /* A file not there yet is created when the process first uses the
   * driver (its path made absolute now: the program may chdir), so that a
   * helper that never uses CUDA leaves no file (%p: one per process). */
  if (!started_by_run() && creation_can_wait(log_path) && cg_path_absolute(log_path, sizeof log_path) == 0) {
    log_deferred = true;
    return;
  }
  char why[256];
  if (cg_log_fd_open(log_path, why, sizeof why) != 0) {
    snprintf(what, sizeof what, "cannot open log %.300s: it %s", log_path, why);
    log_opened = open_fallback(what);
    return;
  }
  log_opened = true;
}

/* The log whose creation waited for the first use of the driver. */
void cg_output_open_deferred_log(void) {
  if (!__atomic_exchange_n(&log_deferred, false, __ATOMIC_ACQ_REL))
    return;
  char why[256];
  if (cg_log_fd_open(log_path, why, sizeof why) != 0) {
    cg_warn("cannot open log %s: it %s; reporting on stderr only", log_path, why);
    return;
  }
  log_opened = true;
}

void cg_output_open_log(void) {
  if (!cg_cfg.log_path || log_opened)
    return;
  in_constructor = true; /* init.c calls this from the constructor only */
  open_log();
  in_constructor = false;
  if (log_opened && started_by_run()) {
    start_written = 1;
    write_record(CG_RECORD_START, 0);
  }
}

/* Format with f into small (cap bytes), or into the heap when it does not
 * fit: no record is lost to a buffer's size. NULL when out of memory. */
typedef size_t (*formatter)(const void *obj, char *buf, size_t cap);
enum { TO_LOG = -2 }; /* emit's other destination: 2 is stderr */
static char *format_into(formatter f, const void *obj, char *small, size_t cap, size_t *len) {
  *len = f(obj, small, cap);
  if (*len < cap)
    return small;
  char *big = malloc(*len + 1);
  if (big)
    *len = f(obj, big, *len + 1);
  return big;
}

/* Format and hand the result to stderr (fd 2) or the log. */
static void emit(int fd, formatter f, const void *obj) {
  if (fd == TO_LOG && !log_opened)
    return;
  char small[8192];
  size_t need;
  char *text = format_into(f, obj, small, sizeof small, &need);
  if (!text) {
    cg_warn_oom("a report too long for the stack: this one is left out");
    if (fd != 2) /* the summary says the log is incomplete */
      __atomic_add_fetch(&lines_lost, 1, __ATOMIC_RELAXED);
    return;
  }
  if (fd == 2)
    cg_write_all(fd, text, need, NULL);
  else
    log_line(text, need);
  if (text != small)
    free(text);
}

static size_t fmt_event_json(const void *e, char *b, size_t c) { return cg_event_format_json(e, b, c); }

/* An event as a person tells it apart: kind, verdict, call, image, the
 * innermost Python line and six native frames, by address (each frame's
 * written name carries its address, so two frames with one name have one
 * address). */
static cg_hash128 event_identity(const cg_event *e, const cg_output_native *raw) {
  struct {
    int kind, verdict;
    const char *call;
    cg_hash128 image;
    const void *frames[6];
  } id;
  memset(&id, 0, sizeof id);
  id.kind = (int)e->kind;
  id.verdict = (int)e->verdict;
  id.call = e->call; /* a row's name: one string per entry point */
  if (e->image)
    id.image = e->image->hash;
  for (size_t i = 0; raw && i < raw->n && i < 6; i++)
    id.frames[i] = raw->frames[i];
  cg_hash128 k = cg_hash_bytes(&id, sizeof id);
  if (!e->n_py)
    return k;
  char key[600];
  int n = snprintf(key, sizeof key, "%llx%llx|%s:%d", (unsigned long long)k.hi, (unsigned long long)k.lo,
                   e->py[0].file, e->py[0].line);
  return cg_hash_bytes(key, n < (int)sizeof key ? (size_t)n : sizeof key);
}

/* True the first time a report with identity k is seen; a repeat is counted. */
static int first_sighting_of(cg_hash128 k, uint64_t *repeats) {
  if (cg_seen_first(&seen, k))
    return 1;
  (*repeats)++;
  return 0;
}

static int first_sighting(const cg_event *e, const cg_output_native *raw) {
  return first_sighting_of(event_identity(e, raw), &repeats_hidden);
}

/* Broken captures are the same to a person when they began at the same
 * place and the same call broke them the same way (a start-up that breaks
 * every size's capture says it once). */
static cg_hash128 broken_identity(const cg_capture_record *r) {
  char key[1400];
  const cg_offender *b = r->broken_by;
  int n = snprintf(key, sizeof key, "capture|%s|%d|%s|%s|%d", r->began ? r->began : "", r->end_result,
                   b && b->call ? b->call : "", b && b->where ? b->where : "", b ? b->result : -1);
  if (n < 0)
    n = 0;
  return cg_hash_bytes(key, (size_t)n < sizeof key ? (size_t)n : sizeof key);
}

/* "capguard: pid 4242, 12:00:01.234 UTC: " in place of the text's "capguard: ",
 * so the block still leaves in one write. The clock is done by hand: gmtime
 * takes glibc's time-zone lock. */
static size_t fmt_event_text_stamped(const void *obj, char *b, size_t c) {
  const cg_event *e = obj;
  static const char plain[] = "capguard: ";
  char stamp[80];
  uint64_t secs = e->time_ns / 1000000000u, ms = (e->time_ns / 1000000u) % 1000u;
  int sn = snprintf(stamp, sizeof stamp, "capguard: pid %llu, %02u:%02u:%02u.%03u UTC: ",
                    (unsigned long long)e->pid, (unsigned)(secs / 3600 % 24),
                    (unsigned)(secs / 60 % 60), (unsigned)(secs % 60), (unsigned)ms);
  size_t extra = (size_t)sn - (sizeof plain - 1);
  if (c <= extra)
    return cg_event_format_text(e, NULL, 0) + extra;
  size_t need = cg_event_format_text(e, b + extra, c - extra) + extra;
  if (need < c && !strncmp(b + extra, plain, sizeof plain - 1))
    memcpy(b, stamp, (size_t)sn);
  else if (need < c)
    memmove(b, b + extra, need - extra + 1), need -= extra;
  return need;
}

/* A served load or a deferred unload is the shim doing its job: the first of a
 * process gets one line on stderr, the rest only the log and the exit counts. */
static bool routine(const cg_event *e) {
  return cg_word_is(&cg_verdicts, e->verdict, CG_WORD_ROUTINE);
}

static void say_routine(const cg_event *e) {
  char kernels[160] = "", first[121];
  if (e->image && e->image->n_kernels) {
    /* its display form where the host has a demangler (the log keeps the symbol) */
    cg_kernel_display_name(e->image->kernel_names, cg_host_demangler(), first, sizeof first);
    snprintf(kernels, sizeof kernels, " (%s%s)", first, e->image->n_kernels > 1 ? ", ..." : "");
  }
  for (char *k = kernels; *k; k++)
    if (cg_is_control((unsigned char)*k))
      *k = '?';
  const char *what = cg_verdict_routine_line(e->verdict); /* the verdict table's routine column */
  if (!what)
    what = "handled by capguard";
  cg_warn("pid %llu: %.64s during capture: %s%s; further calls handled this way in this process are "
          "counted at exit%s",
          (unsigned long long)e->pid, e->call ? e->call : "?", what, kernels, has_log() ? " and logged" : "");
}

void cg_output_event(cg_event *e, const cg_output_native *raw) {
  pay_identity();
  cg_lock(&out_lock);
  int show = first_sighting(e, raw) && !cg_cfg.quiet;
  unsigned bit = 1u << ((unsigned)e->verdict % 32);
  int first_routine = routine(e) && !(quiet_kinds_said & bit);
  if (routine(e))
    quiet_kinds_said |= bit;
  cg_unlock(&out_lock);
  /* Written: symbolised now (dladdr, outside out_lock); stderr's frames as a
   * person reads them, the log's as capguard report parses them. */
  bool said = raw && show && !routine(e);
  /* A load on the request path is paid for by a request: its frames are
   * objects and offsets, found without a symbol lookup or a line table
   * (stack.h), on stderr and in the log alike; capguard report names them. */
  bool lean = e->kind == CG_EV_REQUEST_LOAD;
  if (lean && raw && (said || has_log())) {
    e->native = raw->names;
    e->n_native = cg_native_offsets(raw->frames, raw->n, raw->names, raw->buf, raw->cap);
  } else if (said || (raw && has_log())) {
    e->native = raw->names;
    e->n_native = (said ? cg_native_symbolize_readable : cg_native_symbolize)(raw->frames, raw->n, raw->names,
                                                                                raw->buf, raw->cap);
    /* NCCL's communicator set-up is named from the frames' names, so where
     * they are made: an event only counted is never symbolised for it. */
    e->nccl_setup = cg_nccl_setup_frame(e->native, e->n_native);
  }
  if (routine(e)) {
    if (first_routine && !cg_cfg.quiet)
      say_routine(e);
  } else if (show) {
    e->demangle = cg_host_demangler(); /* kernel names as a person reads them: this text only */
    emit(2, fmt_event_text_stamped, e);
    e->demangle = NULL;
  }
  if (said && has_log() && !lean) {
    e->n_native = cg_native_symbolize(raw->frames, raw->n, raw->names, raw->buf, raw->cap);
    e->nccl_setup = cg_nccl_setup_frame(e->native, e->n_native);
  }
  emit(TO_LOG, fmt_event_json, e);
}


void cg_output_event_to_log(cg_event *e) {
  pay_identity();
  emit(TO_LOG, fmt_event_json, e);
}

static size_t fmt_capture_json(const void *obj, char *b, size_t c) { return cg_capture_format_json(obj, b, c); }

static size_t fmt_capture_broken_text(const void *obj, char *b, size_t c) {
  return cg_capture_format_broken_text(obj, b, c);
}

bool cg_output_wants_capture(bool broken) { return has_log() || (broken && !cg_cfg.quiet); }

/* A capture that broke is said on stderr, naming its first offender (or
 * that capguard saw none), since that is the line a person reading a
 * start-up failure needs; every capture goes to the log. Under capguard run
 * (CAPGUARD_RUN) with a log, its closing summary says the same line from
 * the log, with the process: said there once, not twice. */
void cg_output_capture(const cg_capture_record *r) {
  pay_identity();
  bool summarised = cg_cfg.run_id && has_log();
  if (cg_capture_status_broken(r->capture->status) && !cg_cfg.quiet && !summarised) {
    int show = 0;
    if (cg_lock_or_exit_lock(&out_lock, "a broken capture's line on stderr")) {
      show = first_sighting_of(broken_identity(r), &broken_hidden);
      cg_unlock(&out_lock);
    }
    if (show)
      emit(2, fmt_capture_broken_text, r);
  }
  emit(TO_LOG, fmt_capture_json, r); /* nothing when the log was given up on: log_line counts it lost */
}

/* The "start" record (capguard run's own child at start-up, so that a
 * command that never touches CUDA is told apart from a shim that never
 * loaded; every other process when it first uses the driver) and the
 * "process" record (when the process first uses the driver). The words
 * are detect/'s (cg_process_format_json); this only gathers and writes them. */
static size_t fmt_process_json(const void *obj, char *b, size_t c) { return cg_process_format_json(obj, b, c); }

static void write_record(cg_record_type type, int driver_version) {
  /* argv from /proc: capguard has no other portable way to it from a library. */
  char args[4096];
  ssize_t len = -1;
  int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    len = read(fd, args, sizeof args);
    close(fd);
  }
  cg_process_record r = {
      .type = type,
      .pid = (uint64_t)getpid(),
      .ppid = (uint64_t)getppid(),
      .time_ns = cg_now_ns(),
      .mode = cg_cfg.mode,
      .driver_version = driver_version,
      .emulate_driver = cg_cfg.emulate_driver,
      .version = CAPGUARD_VERSION,
      .prime = cg_cfg.prime_path,
      .run = cg_cfg.run_id, /* capguard run's id: a run is told apart from the next in one log */
      .cmdline = len > 0 ? args : NULL,
      .cmdline_len = len > 0 ? (size_t)len : 0,
      .rank = &cg_cfg.rank, /* the launcher's: the ranks of one job told apart and compared */
      .cmdline_cut = len == (ssize_t)sizeof args, /* said in the record, as a cut field is */
  };
  emit(TO_LOG, fmt_process_json, &r);
}

/* The forked child's "process" record, before its first other record. */
static void pay_identity(void) {
  if (__atomic_load_n(&identity_owed, __ATOMIC_RELAXED) && __atomic_exchange_n(&identity_owed, 0, __ATOMIC_ACQ_REL))
    cg_output_process(process_driver_version);
}

void cg_output_process(int driver_version) {
  cg_lock(&out_lock);
  int first = !process_written, start = !start_written;
  process_written = 1;
  start_written = 1;
  process_driver_version = driver_version;
  cg_unlock(&out_lock);
  if (first)
    cg_output_open_deferred_log(); /* a forked child's: its parent opened the one it had */
  if (first && start && log_opened)
    write_record(CG_RECORD_START, 0);
  if (first && log_opened)
    write_record(CG_RECORD_PROCESS, driver_version);
}

static size_t fmt_summary_text(const void *obj, char *b, size_t c) { return cg_summary_format_text(obj, b, c); }
static size_t fmt_summary_json(const void *obj, char *b, size_t c) { return cg_summary_format_json(obj, b, c); }

void cg_output_summary(cg_summary *s) {
  pay_identity();
  s->log_path = log_opened ? log_path : NULL; /* given up on: the next line says it is incomplete */
  s->secure = cg_cfg.secure;
  char buf[4096]; /* the slowest captures' sites: up to 3 x 512 */
  size_t n;
  uint64_t lost = __atomic_load_n(&lines_lost, __ATOMIC_RELAXED);
  if (cg_cfg.summary) {
    /* a long log path makes a long line: the heap then, not a lost summary */
    char *text = format_into(fmt_summary_text, s, buf, sizeof buf, &n);
    if (text)
      cg_write_all(2, text, n, NULL);
    if (text && text != buf)
      free(text);
    if (lost) {
      int m = snprintf(buf, sizeof buf, "capguard: the log %.1800s is incomplete: %llu line%s could "
                       "not be written\n", log_path, (unsigned long long)lost, lost == 1 ? "" : "s");
      cg_write_all(2, buf, (size_t)m < sizeof buf ? (size_t)m : sizeof buf - 1, NULL);
    }
    if (repeats_hidden) {
      int m = snprintf(buf, sizeof buf, "capguard: %llu repeated events were counted, not reprinted%s\n",
                       (unsigned long long)repeats_hidden, has_log() ? " (all are in the log)" : "");
      cg_write_all(2, buf, (size_t)m, NULL);
    }
    if (broken_hidden) {
      int m = snprintf(buf, sizeof buf,
                       "capguard: %llu more capture%s broke the same way (same start, same first offender)%s\n",
                       (unsigned long long)broken_hidden, broken_hidden == 1 ? "" : "s",
                       has_log() ? "; all are in the log" : "");
      cg_write_all(2, buf, (size_t)m, NULL);
    }
  }
  if (!has_log())
    return;
  /* Last line: "log_incomplete" added when lines were lost; tried even then
   * (the disk may have room again), on a fresh line if a write was cut. */
  s->log_incomplete = lost != 0;
  char *line = format_into(fmt_summary_json, s, buf + 1, sizeof buf - 1, &n);
  if (!line)
    return;
  int fd;
  if (lost && (fd = cg_log_fd()) >= 0) {
    int torn = 0;
    if (__atomic_load_n(&log_cut_mid_line, __ATOMIC_RELAXED))
      cg_append_whole(fd, "\n", 1, &torn);
    cg_append_whole(fd, line, n, &torn);
  } else if (!lost)
    log_line(line, n);
  if (line != buf + 1)
    free(line);
}

void cg_output_atfork_child(void) {
  pthread_mutex_init(&out_lock, NULL);
  cg_log_fd_atfork_child();
  cg_seen_clear(&seen);
  repeats_hidden = 0;
  broken_hidden = 0;
  quiet_kinds_said = 0;
  lines_lost = 0;
  identity_owed = process_written; /* a forked worker is a process of its own in the log */
  process_written = 0;
  start_written = 1; /* a forked child never started the shim: its "process" record names it */
  /* With %p in CAPGUARD_LOG, each process writes a file of its own (one
   * whose creation still waits is named again, with the child's pid). */
  if ((log_opened || log_deferred) && cg_cfg.log_path && cg_log_name_has_pid(cg_cfg.log_path)) {
    if (log_opened)
      cg_log_fd_close();
    log_opened = false;
    log_deferred = false;
    log_failed = 0; /* a new file: whatever failed was the parent's */
    log_cut_mid_line = 0;
    open_log();
  }
}
