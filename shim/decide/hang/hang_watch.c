#include "hang_watch.h"

#include "capture_time.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "capguard/env_value.h"
#include "capguard/clock.h"
#include "config.h"
#include "driver.h"
#include "hang_launches.h"
#include "hang_slots.h"
#include "live_captures.h"
#include "output.h"
#include "python_site.h"
#include "stack.h"
#include "readable_frame.h"
#include "warn.h"

/* Per slot, the watcher's own: the call (the slot's number, with the
 * thread) first seen when, and the one said already. */
typedef struct {
  uint64_t tid, seq, first_ns, said;
} sighting;
static sighting seen_call[CG_HANG_SLOTS];
/* The captures said open too long (the model's ids), the newest kept: each
 * is said once. */
#define SAID_CAPTURES 64
static uint64_t said_capture[SAID_CAPTURES];
static unsigned said_next;
static char who[64]; /* "rank 1 (pid 42)" or "pid 42" */

/* The thread's name (/proc/self/task/TID/comm: pthread_setname_np's, e.g.
 * NCCL's proxy threads, ProcessGroupNCCL's watchdog), "" when unreadable. */
static void thread_name(uint64_t tid, char *buf, size_t cap) {
  char path[64];
  snprintf(path, sizeof path, "/proc/self/task/%llu/comm", (unsigned long long)tid);
  buf[0] = '\0';
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return;
  ssize_t n = read(fd, buf, cap - 1);
  close(fd);
  if (n <= 0) {
    buf[0] = '\0';
    return;
  }
  buf[n] = '\0';
  char *nl = memchr(buf, '\n', (size_t)n);
  if (nl)
    *nl = '\0';
}

/* Who made the call, as the shim's other lines name a site
 * (readable_frame.h): "libtorch_cuda.so(ns::fn()+0x12)", "prog+0x1234 at
 * prog.c:12"; made now, without the cache's lock. */
static void caller_text(void *ra, char *buf, size_t cap) {
  cg_out w = cg_out_init(buf, cap);
  if (!ra || !cg_readable_frame_now(&w, ra)) {
    snprintf(buf, cap, "%p", ra);
    return;
  }
  cg_out_finish(&w);
}

/* What a slot held at one look, copied while its owner may write it. */
typedef struct {
  const char *call;
  uint64_t handle;
  void *caller, *caller_slot;
  void *py_state; /* the thread's Python state, NULL none */
  const cg_hang_slot *slot;
  uint64_t tid, seq; /* the thread, and the call's number in its slot */
} call_seen;

static bool still(const cg_hang_slot *s, uint64_t tid, const uint64_t *at, uint64_t t);

/* Who called, in the host's terms: the Python line that waits (the
 * innermost frame outside torch's and Triton's machinery, read while the
 * thread waits in the call) with the native caller after it, else the
 * native caller alone. */
/* The native caller in the host's terms: the first frame outside capguard,
 * libcuda and libcudart (a program calling libcudart is named, not
 * libcudart), from the return addresses on the waiting thread's stack;
 * the direct caller when none is found. */
static void native_text(const call_seen *c, char *buf, size_t cap) {
  void *frames[16];
  frames[0] = c->caller;
  size_t n = 1;
  if (still(c->slot, c->tid, &c->slot->call_seq, c->seq))
    n += cg_native_scan_callers(c->caller_slot, frames + 1, sizeof frames / sizeof frames[0] - 1);
  if (!c->caller || !cg_native_where_frames(frames, n, buf, cap))
    caller_text(c->caller, buf, cap);
}

static void waiter_text(const call_seen *c, char *buf, size_t cap) {
  char py[200] = "", native[200];
  /* read only while the thread is still in the call: its frames do not
   * change meanwhile */
  if (c->py_state && still(c->slot, c->tid, &c->slot->call_seq, c->seq))
    cg_python_site_of(c->py_state, py, sizeof py);
  native_text(c, native, sizeof native);
  if (py[0])
    snprintf(buf, cap, "%s (%s)", py, native);
  else
    snprintf(buf, cap, "%s", native);
}

/* The event's common fields, for the log (what stderr says in words). */
static void log_event(cg_event_kind kind, const char *call, uint64_t tid, uint64_t capture_id,
                      const char *began, const cg_hang_info *h) {
  cg_event e;
  memset(&e, 0, sizeof e);
  e.kind = kind;
  e.verdict = CG_VERDICT_WAITING;
  e.call = call;
  e.driver_result = -1;
  e.pid = (uint64_t)getpid();
  e.tid = tid;
  e.time_ns = cg_now_ns();
  e.driver_version = cg_driver_version();
  e.capture.id = capture_id;
  e.capture.status = CG_CAPTURE_ENDED;
  e.capture_began = began;
  e.has_handle = h->exec != 0;
  e.handle = h->exec;
  e.hang = h;
  cg_output_event_to_log(&e);
}

/* A call waits while execs holding collectives are alive and none of their
 * launches is pending: a teardown they hold (a communicator's destroy waits
 * for its graphs). Said with how many and where the first was captured. */
static bool say_teardown(const call_seen *c, uint64_t tid, uint64_t waited_ns, const char *caller) {
  cg_hang_launch_seen first;
  unsigned n = cg_hang_collective_execs(&first);
  if (!n || cg_hang_launch_pending())
    return false;
  cg_warn("%s waits in %s for %.1f s (called from %s) while %u graph exec%s holding collectives %s alive "
          "(the first captured at %s, capture %llu, holding %s): %s",
          who, c->call ? c->call : "?", waited_ns / 1e9, caller, n, n == 1 ? "" : "s", n == 1 ? "is" : "are",
          first.site[0] ? first.site : "a site not known", (unsigned long long)first.capture_id,
          first.collective, cg_hang_advice(CG_EV_HANG_TEARDOWN, false));
  cg_hang_info h = {.waited_ns = waited_ns,
                    .collectives = first.collectives,
                    .collective = first.collective,
                    .execs = n,
                    .where = caller};
  log_event(CG_EV_HANG_TEARDOWN, c->call, tid, first.capture_id, first.site, &h);
  return true;
}

/* The main thread's system call now (/proc/self/task/PID/syscall's first
 * word; -1 when it runs or cannot be read) and its CPU ticks so far (stat's
 * utime + stime). */
static bool main_thread_state(long *nr, unsigned long long *ticks) {
  char path[64], buf[512];
  int pid = (int)getpid();
  snprintf(path, sizeof path, "/proc/self/task/%d/syscall", pid);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  ssize_t n = fd >= 0 ? read(fd, buf, sizeof buf - 1) : -1;
  if (fd >= 0)
    close(fd);
  if (n <= 0)
    return false;
  buf[n] = '\0';
  *nr = (buf[0] >= '0' && buf[0] <= '9') ? strtol(buf, NULL, 10) : -1;
  snprintf(path, sizeof path, "/proc/self/task/%d/stat", pid);
  fd = open(path, O_RDONLY | O_CLOEXEC);
  n = fd >= 0 ? read(fd, buf, sizeof buf - 1) : -1;
  if (fd >= 0)
    close(fd);
  if (n <= 0)
    return false;
  buf[n] = '\0';
  const char *p = strrchr(buf, ')'); /* the name may hold anything but this last ')' */
  unsigned long long utime = 0, stime = 0;
  if (!p || sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &utime, &stime) != 2)
    return false;
  *ticks = utime + stime;
  return true;
}

/* A teardown held outside the driver: NCCL's communicator destroy waits on
 * a condition of its own (a futex) for the graphs holding its collectives
 * to go, a wait no watched call sees. Said once, when the main thread has
 * sat in a futex without running for the limit while execs holding
 * collectives are alive, nothing was launched for the limit and no launch
 * is pending: worded as what it may be, with the fix. */
static void look_quiet_teardown(uint64_t now, uint64_t limit) {
  static bool said;
  static uint64_t since;
  static unsigned long long ticks_then;
  long nr;
  unsigned long long ticks;
  cg_hang_launch_seen first;
  unsigned n;
  if (said || cg_hang_launching(now, limit) || cg_hang_launch_pending() ||
      !(n = cg_hang_collective_execs(&first)) || !main_thread_state(&nr, &ticks) || nr != SYS_futex) {
    since = 0;
    return;
  }
  if (!since || ticks != ticks_then) {
    since = now;
    ticks_then = ticks;
    return;
  }
  if (now - since <= limit)
    return;
  said = true;
  cg_warn(
      "%s: the main thread has waited %.1f s outside the driver (in a futex), nothing launched, while %u "
      "graph "
      "exec%s holding collectives %s alive (the first captured at %s, capture %llu, holding %s); if it is "
      "tearing down (destroy_process_group): %s",
      who, (now - since) / 1e9, n, n == 1 ? "" : "s", n == 1 ? "is" : "are",
      first.site[0] ? first.site : "a site not known", (unsigned long long)first.capture_id, first.collective,
      cg_hang_advice(CG_EV_HANG_TEARDOWN, false));
  cg_hang_info h = {.waited_ns = now - since,
                    .collectives = first.collectives,
                    .collective = first.collective,
                    .execs = n,
                    .where = "a futex (outside the driver)"};
  log_event(CG_EV_HANG_TEARDOWN, "", (uint64_t)getpid(), first.capture_id, first.site, &h);
}

static void say_call(const call_seen *c, uint64_t tid, uint64_t waited_ns) {
  char name[32], caller[512], graph[256], after[256 + 96] = "";
  thread_name(tid, name, sizeof name);
  waiter_text(c, caller, sizeof caller);
  if (say_teardown(c, tid, waited_ns, caller))
    return;
  const char *call = c->call;
  uint64_t id = cg_hang_latest_graph(graph, sizeof graph);
  cg_hang_info h = {.waited_ns = waited_ns, .where = caller};
  log_event(CG_EV_HANG_WAIT, call, tid, id, graph, &h);
  if (id)
    snprintf(after, sizeof after, "; the latest graph captured here is capture %llu's, captured at %s",
             (unsigned long long)id, graph[0] ? graph : "a site not known");
  cg_warn("%s waits in %s for %.1f s (thread %llu%s%s%s, %s 0x%llx, called from %s)%s", who,
          call ? call : "?", waited_ns / 1e9, (unsigned long long)tid, name[0] ? " '" : "", name,
          name[0] ? "'" : "",
          call && strstr(call, "Event") ? "event"
          : call && strstr(call, "Ctx") ? "context"
                                        : "stream",
          (unsigned long long)c->handle, caller, after);
}

static bool thread_alive(uint64_t tid) {
  char path[64];
  snprintf(path, sizeof path, "/proc/self/task/%llu", (unsigned long long)tid);
  int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0)
    return false;
  close(fd);
  return true;
}

static void say_capture(const cg_open_capture *c, uint64_t open_ns) {
  char name[32], site[256] = "";
  thread_name(c->tid, name, sizeof name);
  cg_begin_site where;
  if (cg_captures_site_of(c->key, &where))
    cg_begin_site_text(&where, site, sizeof site); /* dladdr: outside the model's lock */
  /* the handle the program named: a per-thread default stream's key is not one */
  uint64_t stream = cg_stream_key_per_thread(c->key) ? (uint64_t)(uintptr_t)CU_STREAM_PER_THREAD : c->key;
  cg_warn("%s has had a capture open for %.1f s (thread %llu%s%s%s, stream 0x%llx, begun at %s): a capture "
          "that does not end waits for something that never comes (a peer's collective, a lock)",
          who, open_ns / 1e9, (unsigned long long)c->tid, name[0] ? " '" : "", name, name[0] ? "'" : "",
          (unsigned long long)stream, site[0] ? site : "a site not known");
  cg_hang_info h = {.waited_ns = open_ns};
  log_event(CG_EV_HANG_CAPTURE, "cuStreamBeginCapture", c->tid, 0, site, &h);
}

/* The captures open longer than the limit, from the model (the capture
 * path marks nothing for the watch), each said once; not one whose thread
 * is gone, which is never said to wait. */
static void look_captures(uint64_t now, uint64_t limit) {
  cg_open_capture open[64];
  size_t n = cg_captures_open_now(open, 64);
  for (size_t i = 0; i < n; i++) {
    const cg_open_capture *c = &open[i];
    uint64_t d = c->begin_mono_ns && now > c->begin_mono_ns ? now - c->begin_mono_ns : 0;
    if (d <= limit)
      continue;
    bool said = false;
    for (unsigned k = 0; k < SAID_CAPTURES && !said; k++)
      said = said_capture[k] == c->id;
    if (said || !thread_alive(c->tid))
      continue;
    said_capture[said_next++ % SAID_CAPTURES] = c->id;
    say_capture(c, d);
  }
}

/* How long the slot's call or capture numbered seq has lasted, as far as
 * the watcher can tell (from its first sighting); 0 when it is new or was
 * said already. */
static uint64_t lasted(sighting *w, uint64_t tid, uint64_t seq, uint64_t now) {
  if (w->tid != tid || w->seq != seq) {
    *w = (sighting){tid, seq, now, 0};
    return 0;
  }
  return w->said == seq ? 0 : now - w->first_ns;
}

/* Whether slot s still holds what was read at tid and t: a thread that
 * left (its slot given back, model/hang_slots.c) or began another call
 * since is never said. */
static bool still(const cg_hang_slot *s, uint64_t tid, const uint64_t *at, uint64_t t) {
  __atomic_thread_fence(__ATOMIC_ACQUIRE);
  return __atomic_load_n(at, __ATOMIC_RELAXED) == t && __atomic_load_n(&s->tid, __ATOMIC_RELAXED) == tid;
}

/* A graph launch not finished after the limit: its exec, capture, count and
 * collectives, on stderr and in the log. */
static void say_launch(const cg_hang_launch_seen *l) {
  bool busy = l->collectives == 0 && l->kernels > 0, unknown = l->kernels == 0;
  char holds[256];
  if (busy && l->kernels)
    snprintf(holds, sizeof holds, "it holds no collective (%u kernel%s, the first %s)", l->kernels,
             l->kernels == 1 ? "" : "s", l->kernel);
  else if (unknown)
    snprintf(holds, sizeof holds, "its kernels are not known (the driver named none)");
  else
    snprintf(holds, sizeof holds, "it holds %u collective%s (%s)", l->collectives,
             l->collectives == 1 ? "" : "s", l->collective);
  cg_warn("%s: launch %llu of graph exec 0x%llx (capture %llu, captured at %s) has not finished after %.1f s "
          "(stream 0x%llx); %s: %s",
          who, (unsigned long long)l->launch, (unsigned long long)l->exec, (unsigned long long)l->capture_id,
          l->site[0] ? l->site : "a site not known", l->waited_ns / 1e9, (unsigned long long)l->stream, holds,
          unknown ? "whether it waits for a peer is not known" : cg_hang_advice(CG_EV_HANG_LAUNCH, busy));
  cg_hang_info h = {.exec = l->exec,
                    .launches = l->launch,
                    .waited_ns = l->waited_ns,
                    .collectives = l->collectives,
                    .kernel_nodes = l->kernels,
                    .collective = l->collective};
  log_event(CG_EV_HANG_LAUNCH, "cuGraphLaunch", 0, l->capture_id, l->site, &h);
}

/* Once the process has launched nothing for the limit: each exec's launch
 * count, in the log only (a healthy pause says nothing on stderr), so that
 * the report can line the ranks up. */
static void census(void) {
  static cg_hang_launch_seen rows[64];
  int n = cg_hang_launch_census(rows, 64);
  for (int i = 0; i < n; i++) {
    cg_hang_info h = {.exec = rows[i].exec,
                      .launches = rows[i].launch,
                      .collectives = rows[i].collectives,
                      .kernel_nodes = rows[i].kernels,
                      .collective = rows[i].collective};
    log_event(CG_EV_LAUNCH_COUNT, "cuGraphLaunch", 0, rows[i].capture_id, rows[i].site, &h);
  }
}

static void look_launches(uint64_t now, uint64_t limit) {
  static cg_hang_launch_seen stuck[16];
  int n = cg_hang_launches_stuck(now, limit, stuck, 16);
  for (int i = 0; i < n; i++)
    say_launch(&stuck[i]);
  if (!cg_hang_launching(now, limit))
    census();
}

static void look(void) {
  uint64_t now = cg_hang_now(), limit = (uint64_t)cg_hang_s * 1000000000ull;
  look_launches(now, limit);
  look_quiet_teardown(now, limit);
  for (int i = 0; i < CG_HANG_SLOTS; i++) {
    cg_hang_slot *s = &cg_hang_slots[i];
    uint64_t tid = __atomic_load_n(&s->tid, __ATOMIC_ACQUIRE);
    if (!tid)
      continue;
    uint64_t t = __atomic_load_n(&s->call_seq, __ATOMIC_ACQUIRE), d;
    if (t && (d = lasted(&seen_call[i], tid, t, now)) > limit) {
      call_seen c = {__atomic_load_n(&s->call, __ATOMIC_RELAXED),
                     __atomic_load_n(&s->handle, __ATOMIC_RELAXED),
                     __atomic_load_n(&s->caller, __ATOMIC_RELAXED),
                     __atomic_load_n(&s->caller_slot, __ATOMIC_RELAXED),
                     __atomic_load_n(&s->py_state, __ATOMIC_RELAXED),
                     s,
                     tid,
                     t};
      seen_call[i].said = t;
      if (still(s, tid, &s->call_seq, t))
        say_call(&c, tid, d);
    }
  }
  look_captures(now, limit);
}

static void *watch(void *arg) {
  (void)arg;
  /* a quarter of the limit between looks, within [250 ms, 1 s]: said at most
   * that late */
  long ms = (long)cg_hang_s * 250;
  if (ms > 1000)
    ms = 1000;
  struct timespec nap = {ms / 1000, (ms % 1000) * 1000000L};
  for (;;) {
    nanosleep(&nap, NULL);
    look();
  }
  return NULL;
}

void cg_hang_watch_setup(const char *value) {
  if (!value || !*value)
    return;
  unsigned n;
  if (cg_parse_hang_seconds(value, &n) != 0) { /* the command's table takes the same (env_value.h) */
    cg_warn("CAPGUARD_HANG_S=%s is not a number of seconds from 1 to 86400: the hang watch is off", value);
    return;
  }
  cg_rank_info r = cg_cfg.rank;
  if (r.rank >= 0)
    snprintf(who, sizeof who, "rank %d (pid %d)", r.rank, (int)getpid());
  else
    snprintf(who, sizeof who, "pid %d", (int)getpid());
  cg_hang_s = n;
  /* every graph launch then takes its C body, which records its marker */
  cg_launch_watch_set(CG_WATCH_HANG);
}

void cg_hang_watch_start(void) {
  if (!cg_hang_s)
    return;
  /* Every signal blocked in the watcher from its first instruction (a
   * thread inherits its creator's mask): a signal sent to the process is
   * then never delivered to it, so a host that blocks SIGTERM in its own
   * threads and takes it through a signalfd or a sigwait thread still gets
   * it, not the default action in capguard's thread. The creating thread's
   * mask is as it was once pthread_create returns; a signal sent meanwhile
   * waits, pending, for that. (A fault in the watcher, blocked or not,
   * ends the process as it would have anyway.) */
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  pthread_t t;
  int rc = pthread_create(&t, NULL, watch, NULL);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  if (rc == 0) {
    pthread_detach(t); /* never joined: the process exits without it */
    pthread_setname_np(t, "capguard-hang");
    return;
  }
  cg_hang_s = 0;
  cg_launch_watch_clear(CG_WATCH_HANG);
  cg_warn("the hang watch could not start its thread: CAPGUARD_HANG_S is off");
}
