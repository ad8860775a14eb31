#include "locks.h"
#include "fleet_metrics.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "capguard/clock.h"
#include "capguard/metrics_format.h"
#include "config.h"
#include "device_arch.h"
#include "driver.h"
#include "fleet_counts.h"
#include "live_captures.h"
#include "metrics_file.h"
#include "priming.h"
#include "report.h"
#include "serving.h"
#include "stale_watch.h"
#include "warn.h"

#define WRITE_EVERY_NS 1000000000ull
#define MAX_REFUSED_CALLS 72
#define TEXT_MAX (64 * 1024)

static uint64_t last_write_ns;
static pthread_mutex_t write_lock = PTHREAD_MUTEX_INITIALIZER;
static char host[256], program[64]; /* read once, at the first write */
static char text[TEXT_MAX];         /* the file's text: one writer at a time (write_lock) */
/* The GPU's architecture of the first write, kept for every later one: a
 * label that appeared or changed would start another series, and rate()
 * and increase() need one series from the process's start (write_lock). */
static unsigned sm_first;
bool cg_fleet_started;

void cg_fleet_summary(cg_summary *s, char (*began)[CG_BEGAN_TEXT]) {
  cg_capture_time_read(s, began);
  s->rank_known = cg_cfg.rank.rank >= 0;
  s->rank = s->rank_known ? (unsigned)cg_cfg.rank.rank : 0;
  s->world_size = cg_cfg.rank.world_size > 0 ? (unsigned)cg_cfg.rank.world_size : 0;
}

/* One line of a file of /proc (the host's name, the program's), its newline
 * cut; "" when it cannot be read. */
static void read_line(const char *path, char *buf, size_t cap) {
  buf[0] = 0;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return;
  ssize_t n = read(fd, buf, cap - 1);
  close(fd);
  buf[n > 0 ? n : 0] = 0;
  char *nl = memchr(buf, '\n', n > 0 ? (size_t)n : 0);
  if (nl)
    *nl = 0;
}

/* Formats and writes the file; with write_lock held. false when it could
 * not be written (the next chance tries again). */
static bool write_metrics(const cg_summary *s, bool at_exit) {
  if (!host[0] && !program[0]) {
    read_line("/proc/sys/kernel/hostname", host, sizeof host);
    read_line("/proc/self/comm", program, sizeof program);
  }
  if (!sm_first)
    sm_first = s->device_sm;
  cg_metrics m = {.sum = s, .host = host, .program = program, .mode = cg_run_mode_name(cg_cfg.mode),
                  .driver_version = cg_driver_version(), .sm = sm_first};
  cg_metrics_call calls[MAX_REFUSED_CALLS];
  m.refusals = calls;
  m.n_refusals = cg_fleet_counts_read(m.loads, calls, MAX_REFUSED_CALLS);
  cg_priming_fleet(&m.prime);
  m.stale_reads = cg_stale_reads();
  size_t n = cg_metrics_format(&m, text, TEXT_MAX);
  return n >= TEXT_MAX || cg_metrics_file_write(cg_cfg.metrics_dir, text, n, at_exit);
}

/* The figures as they are now (the exit's summary has its own). */
static bool write_now(void) {
  cg_summary s = {.pid = (uint64_t)getpid()};
  cg_captures_counts(&s.captures_begun, &s.captures_broken);
  cg_report_counts(s.events, s.verdicts);
  cg_priming_summary(&s);
  cg_serving_summary(&s, false);
  cg_fleet_summary(&s, NULL);
  return write_metrics(&s, false);
}

/* At most once a second, and while nothing captures: else the write is left
 * pending for the next end or graph launch (CG_WATCH_METRICS). One writer at
 * a time; another thread finding one at work leaves it be. */
static void maybe_write(uint64_t now_ns) {
  uint64_t last = __atomic_load_n(&last_write_ns, __ATOMIC_RELAXED);
  if (!cg_nothing_captures() || (last && now_ns - last < WRITE_EVERY_NS)) {
    /* a locked instruction only the first time in a second */
    if (!(__atomic_load_n(&cg_launch_watch, __ATOMIC_RELAXED) & CG_WATCH_METRICS))
      cg_launch_watch_set(CG_WATCH_METRICS);
    return;
  }
  if (cg_trylock(&write_lock) != 0)
    return;
  cg_launch_watch_clear(CG_WATCH_METRICS);
  __atomic_store_n(&last_write_ns, now_ns, __ATOMIC_RELAXED);
  if (!write_now()) /* a full disk, say: tried again at the next end or launch, a second on */
    cg_launch_watch_set(CG_WATCH_METRICS);
  cg_unlock(&write_lock);
}

void cg_fleet_start(void) {
  if (!cg_cfg.metrics_dir || cg_cfg.mode == CG_RUN_OFF) {
    __atomic_store_n(&cg_fleet_started, true, __ATOMIC_RELAXED);
    return;
  }
  /* while something captures, the next load or begin tries again */
  if (!cg_nothing_captures() || cg_trylock(&write_lock) != 0)
    return;
  if (!__atomic_load_n(&cg_fleet_started, __ATOMIC_RELAXED)) {
    if (!sm_first)
      sm_first = cg_device_arch(); /* a query allowed during capture; 0 when it cannot tell */
    __atomic_store_n(&last_write_ns, cg_monotonic_ns(), __ATOMIC_RELAXED);
    write_now();
    __atomic_store_n(&cg_fleet_started, true, __ATOMIC_RELAXED);
  }
  cg_unlock(&write_lock);
}

void cg_fleet_after_capture(void) {
  if (cg_cfg.metrics_dir)
    maybe_write(cg_monotonic_ns());
}

void cg_fleet_graph_launch(void) {
  unsigned watch = __atomic_load_n(&cg_launch_watch, __ATOMIC_RELAXED);
  uint64_t now = cg_monotonic_ns(); /* durations: never the wall clock, which steps */
  if (watch & CG_WATCH_REPLAY)
    cg_capture_time_launch(now);
  if (watch & CG_WATCH_SERVING)
    cg_serving_graph_launch();
  if ((watch & CG_WATCH_METRICS) && cg_cfg.metrics_dir)
    maybe_write(now);
}

void cg_fleet_metrics_at_exit(const cg_summary *s) {
  if (!cg_cfg.metrics_dir)
    return;
  if (!cg_exit_lock(&write_lock, "the metrics file")) /* never a wait that could hang the exit */
    return;
  write_metrics(s, true);
  cg_unlock(&write_lock);
}

void cg_fleet_atfork_child(void) {
  pthread_mutex_init(&write_lock, NULL);
  last_write_ns = 0;
  /* the child's own file starts at its next load or begin, with its own labels */
  cg_fleet_started = false;
  sm_first = 0;
  program[0] = 0; /* a forked child may exec, or be named otherwise */
  host[0] = 0;
  cg_capture_time_atfork_child();
  cg_fleet_counts_atfork_child();
  cg_metrics_file_atfork_child();
}
