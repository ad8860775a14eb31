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
#include "driver.h"
#include "fleet_counts.h"
#include "live_captures.h"
#include "metrics_file.h"
#include "priming.h"
#include "report.h"
#include "warn.h"

#define WRITE_EVERY_NS 1000000000ull
#define MAX_REFUSED_CALLS 72
#define TEXT_MAX (64 * 1024)

static uint64_t last_write_ns;
static pthread_mutex_t write_lock = PTHREAD_MUTEX_INITIALIZER;
static char host[256], program[64]; /* read once, at the first write */
static char text[TEXT_MAX];         /* the file's text: one writer at a time (write_lock) */

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

/* Formats and writes the file; with write_lock held. */
static void write_metrics(const cg_summary *s) {
  if (!host[0] && !program[0]) {
    read_line("/proc/sys/kernel/hostname", host, sizeof host);
    read_line("/proc/self/comm", program, sizeof program);
  }
  cg_metrics m = {.sum = s, .host = host, .program = program, .mode = cg_run_mode_name(cg_cfg.mode),
                  .driver_version = cg_driver_version(), .sm = s->device_sm};
  cg_metrics_call calls[MAX_REFUSED_CALLS];
  m.refusals = calls;
  m.n_refusals = cg_fleet_counts_read(m.loads, calls, MAX_REFUSED_CALLS);
  cg_priming_fleet(&m.prime);
  size_t n = cg_metrics_format(&m, text, TEXT_MAX);
  if (n < TEXT_MAX)
    cg_metrics_file_write(cg_cfg.metrics_dir, text, n);
}

/* The figures as they are now (the exit's summary has its own). */
static void write_now(void) {
  cg_summary s = {.pid = (uint64_t)getpid()};
  cg_captures_counts(&s.captures_begun, &s.captures_broken);
  cg_report_counts(s.events, s.verdicts);
  cg_priming_summary(&s);
  cg_fleet_summary(&s, NULL);
  write_metrics(&s);
}

/* At most once a second, and while nothing captures: else the write is left
 * pending for the next end or graph launch (CG_WATCH_METRICS). One writer at
 * a time; another thread finding one at work leaves it be. */
static void maybe_write(uint64_t now_ns) {
  uint64_t last = __atomic_load_n(&last_write_ns, __ATOMIC_RELAXED);
  if (!cg_nothing_captures() || (last && now_ns - last < WRITE_EVERY_NS)) {
    /* a locked instruction only the first time in a second */
    if (!(__atomic_load_n(&cg_launch_watch, __ATOMIC_RELAXED) & CG_WATCH_METRICS))
      __atomic_fetch_or(&cg_launch_watch, CG_WATCH_METRICS, __ATOMIC_RELAXED);
    return;
  }
  if (cg_trylock(&write_lock) != 0)
    return;
  __atomic_fetch_and(&cg_launch_watch, ~(unsigned)CG_WATCH_METRICS, __ATOMIC_RELAXED);
  __atomic_store_n(&last_write_ns, now_ns, __ATOMIC_RELAXED);
  write_now();
  cg_unlock(&write_lock);
}

void cg_fleet_after_capture(uint64_t now_ns) {
  if (cg_cfg.metrics_dir)
    maybe_write(now_ns);
}

void cg_fleet_graph_launch(void) {
  unsigned watch = __atomic_load_n(&cg_launch_watch, __ATOMIC_RELAXED);
  uint64_t now = cg_now_ns();
  if (watch & CG_WATCH_REPLAY)
    cg_capture_time_launch(now);
  if ((watch & CG_WATCH_METRICS) && cg_cfg.metrics_dir)
    maybe_write(now);
}

void cg_fleet_metrics_at_exit(const cg_summary *s) {
  if (!cg_cfg.metrics_dir)
    return;
  if (!cg_exit_lock(&write_lock, "the metrics file")) /* never a wait that could hang the exit */
    return;
  write_metrics(s);
  cg_unlock(&write_lock);
}

void cg_fleet_atfork_child(void) {
  pthread_mutex_init(&write_lock, NULL);
  last_write_ns = 0;
  program[0] = 0; /* a forked child may exec, or be named otherwise */
  host[0] = 0;
  cg_capture_time_atfork_child();
  cg_fleet_counts_atfork_child();
  cg_metrics_file_atfork_child();
}
