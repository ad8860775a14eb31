#include "output.h"

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
#include "capguard/log_file.h"
#include "capguard/write_whole.h"
#include "config.h"
#include "seen_set.h"
#include "warn.h"

#ifndef CAPGUARD_VERSION
#define CAPGUARD_VERSION "unknown"
#endif

static int log_fd = -1;
static char log_path[4096];   /* CAPGUARD_LOG with %p expanded */
static int process_written;
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
  if (log_fd < 0)
    return;
  if (__atomic_load_n(&log_failed, __ATOMIC_ACQUIRE)) {
    __atomic_add_fetch(&lines_lost, 1, __ATOMIC_RELAXED);
    return;
  }
  int torn = 0;
  int err = cg_append_whole(log_fd, buf, len, &torn);
  if (!err)
    return;
  __atomic_add_fetch(&lines_lost, 1, __ATOMIC_RELAXED);
  if (torn)
    __atomic_store_n(&log_cut_mid_line, 1, __ATOMIC_RELAXED);
  if (__atomic_exchange_n(&log_failed, 1, __ATOMIC_ACQ_REL) == 0)
    cg_warn("cannot write to the log %s (%s): the log is incomplete from here on; "
            "reports continue on stderr", log_path, strerror(err));
}

static void write_record(cg_record_type type, int driver_version);
static void pay_identity(void);

/* CAPGUARD_LOG with "%p" replaced by the pid ("%%" is a '%'), as sanitizers and
 * nsys allow: one file per process. Returns -1 when it does not fit. */
static int expand_log_path(const char *tmpl, char *out, size_t cap) {
  size_t n = 0;
  for (const char *p = tmpl; *p; p++) {
    char pid[24];
    const char *put = NULL;
    size_t k = 1;
    if (p[0] == '%' && p[1] == 'p') {
      snprintf(pid, sizeof pid, "%d", (int)getpid());
      put = pid;
      k = strlen(pid);
      p++;
    } else if (p[0] == '%' && p[1] == '%') {
      put = "%";
      p++;
    } else {
      put = p;
    }
    if (n + k >= cap)
      return -1;
    memcpy(out + n, put, k);
    n += k;
  }
  out[n] = '\0';
  return 0;
}

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

/* The log is opened under the priming file's rules (capguard/log_file.h):
 * no symbolic link followed, a regular file only (a FIFO or device could
 * block the host in open or write), ours and writable by nobody else. */
static void open_log(void) {
  if (expand_log_path(cg_cfg.log_path, log_path, sizeof log_path) != 0) {
    log_warn("log path %.200s... is too long; reporting on stderr only", cg_cfg.log_path);
    return;
  }
  char why[256];
  int fd = cg_log_open(log_path, why, sizeof why);
  if (fd < 0) {
    log_warn("cannot open log %s: it %s; reporting on stderr only", log_path, why);
    return;
  }
  log_fd = fd;
}

void cg_output_open_log(void) {
  if (!cg_cfg.log_path || log_fd >= 0)
    return;
  in_constructor = true; /* init.c calls this from the constructor only */
  open_log();
  in_constructor = false;
  if (log_fd >= 0)
    write_record(CG_RECORD_START, 0);
}

/* Format with f into small (cap bytes), or into the heap when it does not
 * fit: no record is lost to a buffer's size. NULL when out of memory. */
typedef size_t (*formatter)(const void *obj, char *buf, size_t cap);
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
  if (fd < 0)
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

static cg_hash128 event_identity(const cg_event *e) {
  char key[2048];
  int n = snprintf(key, sizeof key, "%d|%d|%s|%llx%llx|", (int)e->kind, (int)e->verdict, e->call,
                   e->image ? (unsigned long long)e->image->hash.hi : 0ULL,
                   e->image ? (unsigned long long)e->image->hash.lo : 0ULL);
  if (e->n_py)
    n += snprintf(key + n, sizeof key - (size_t)n, "%s:%d|", e->py[0].file, e->py[0].line);
  for (size_t i = 0; i < e->n_native && i < 6 && n < (int)sizeof key; i++)
    n += snprintf(key + n, sizeof key - (size_t)n, "%s|", e->native[i]);
  if (n > (int)sizeof key)
    n = (int)sizeof key;
  return cg_hash_bytes(key, (size_t)n);
}

/* True the first time a report with identity k is seen; a repeat is counted. */
static int first_sighting_of(cg_hash128 k, uint64_t *repeats) {
  if (cg_seen_first(&seen, k))
    return 1;
  (*repeats)++;
  return 0;
}

static int first_sighting(const cg_event *e) { return first_sighting_of(event_identity(e), &repeats_hidden); }

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
  char kernels[160] = "";
  if (e->image && e->image->n_kernels)
    snprintf(kernels, sizeof kernels, " (%.*s%s)", 120, e->image->kernel_names,
             e->image->n_kernels > 1 ? ", ..." : "");
  for (char *k = kernels; *k; k++)
    if ((unsigned char)*k < 0x20 || *k == 0x7f)
      *k = '?';
  const char *what = cg_verdict_routine_line(e->verdict); /* the verdict table's routine column */
  if (!what)
    what = "handled by capguard";
  cg_warn("pid %llu: %.64s during capture: %s%s; further calls handled this way in this process are "
          "counted at exit%s",
          (unsigned long long)e->pid, e->call ? e->call : "?", what, kernels, log_fd >= 0 ? " and logged" : "");
}

void cg_output_event(const cg_event *e) {
  pay_identity();
  pthread_mutex_lock(&out_lock);
  int show = first_sighting(e) && !cg_cfg.quiet;
  unsigned bit = 1u << ((unsigned)e->verdict % 32);
  int first_routine = routine(e) && !(quiet_kinds_said & bit);
  if (routine(e))
    quiet_kinds_said |= bit;
  pthread_mutex_unlock(&out_lock);
  if (routine(e)) {
    if (first_routine && !cg_cfg.quiet)
      say_routine(e);
  } else if (show) {
    emit(2, fmt_event_text_stamped, e);
  }
  emit(log_fd, fmt_event_json, e);
}


static size_t fmt_capture_json(const void *obj, char *b, size_t c) { return cg_capture_format_json(obj, b, c); }

static size_t fmt_capture_broken_text(const void *obj, char *b, size_t c) {
  return cg_capture_format_broken_text(obj, b, c);
}

bool cg_output_wants_capture(bool broken) { return log_fd >= 0 || (broken && !cg_cfg.quiet); }

/* A capture that broke is said on stderr, naming its first offender (or
 * that capguard saw none), since that is the line a person reading a
 * start-up failure needs; every capture goes to the log. Under capguard run
 * (CAPGUARD_RUN) with a log, its closing summary says the same line from
 * the log, with the process: said there once, not twice. */
void cg_output_capture(const cg_capture_record *r) {
  pay_identity();
  bool summarised = cg_cfg.run_id && log_fd >= 0;
  if (cg_capture_status_broken(r->capture->status) && !cg_cfg.quiet && !summarised) {
    pthread_mutex_lock(&out_lock);
    int show = first_sighting_of(broken_identity(r), &broken_hidden);
    pthread_mutex_unlock(&out_lock);
    if (show)
      emit(2, fmt_capture_broken_text, r);
  }
  emit(log_fd, fmt_capture_json, r);
}

/* The "start" record (every process the shim starts in, so that a command
 * that never touches CUDA is told apart from a shim that never loaded) and
 * the "process" record (when the process first uses the driver). The words
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
      .cmdline_cut = len == (ssize_t)sizeof args, /* said in the record, as a cut field is */
  };
  emit(log_fd, fmt_process_json, &r);
}

/* The forked child's "process" record, before its first other record. */
static void pay_identity(void) {
  if (__atomic_load_n(&identity_owed, __ATOMIC_RELAXED) && __atomic_exchange_n(&identity_owed, 0, __ATOMIC_ACQ_REL))
    cg_output_process(process_driver_version);
}

void cg_output_process(int driver_version) {
  pthread_mutex_lock(&out_lock);
  int first = !process_written;
  process_written = 1;
  process_driver_version = driver_version;
  pthread_mutex_unlock(&out_lock);
  if (first && log_fd >= 0)
    write_record(CG_RECORD_PROCESS, driver_version);
}

static size_t fmt_summary_text(const void *obj, char *b, size_t c) { return cg_summary_format_text(obj, b, c); }
static size_t fmt_summary_json(const void *obj, char *b, size_t c) { return cg_summary_format_json(obj, b, c); }

void cg_output_summary(cg_summary *s) {
  pay_identity();
  s->log_path = log_fd >= 0 ? log_path : NULL;
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
                       (unsigned long long)repeats_hidden, log_fd >= 0 ? " (all are in the log)" : "");
      cg_write_all(2, buf, (size_t)m, NULL);
    }
    if (broken_hidden) {
      int m = snprintf(buf, sizeof buf,
                       "capguard: %llu more capture%s broke the same way (same start, same first offender)%s\n",
                       (unsigned long long)broken_hidden, broken_hidden == 1 ? "" : "s",
                       log_fd >= 0 ? "; all are in the log" : "");
      cg_write_all(2, buf, (size_t)m, NULL);
    }
  }
  if (log_fd < 0)
    return;
  /* Last line: "log_incomplete" added when lines were lost; tried even then
   * (the disk may have room again), on a fresh line if a write was cut. */
  s->log_incomplete = lost != 0;
  char *line = format_into(fmt_summary_json, s, buf + 1, sizeof buf - 1, &n);
  if (!line)
    return;
  if (lost) {
    int torn = 0;
    if (__atomic_load_n(&log_cut_mid_line, __ATOMIC_RELAXED))
      cg_append_whole(log_fd, "\n", 1, &torn);
    cg_append_whole(log_fd, line, n, &torn);
  } else
    log_line(line, n);
  if (line != buf + 1)
    free(line);
}

void cg_output_atfork_child(void) {
  pthread_mutex_init(&out_lock, NULL);
  cg_seen_clear(&seen);
  repeats_hidden = 0;
  broken_hidden = 0;
  quiet_kinds_said = 0;
  lines_lost = 0;
  identity_owed = process_written; /* a forked worker is a process of its own in the log */
  process_written = 0;
  /* With %p in CAPGUARD_LOG, each process writes a file of its own. */
  if (log_fd >= 0 && cg_cfg.log_path && strstr(cg_cfg.log_path, "%p")) {
    close(log_fd);
    log_fd = -1;
    log_failed = 0; /* a new file: whatever failed was the parent's */
    log_cut_mid_line = 0;
    open_log();
  }
}
