/* fakecuda: the bracket around every entry point — the process-wide lock and the
 * optional trace line (FAKECUDA_TRACE=path) that tests read to see which calls reached
 * the driver and whether a capture was open at the time; with FAKECUDA_TRACE_RULE=1 each
 * line also says whether an open capture prohibited the calling thread when the call
 * arrived (the fake's own rule), and FAKECUDA_STATS=path gets the live module count at
 * exit, for leak checks. */
#include "fake_internal.h"

#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static pthread_mutex_t fc_lock = PTHREAD_MUTEX_INITIALIZER;

static _Thread_local pid_t cached_tid;

pid_t fc_tid(void)
{
  if (cached_tid == 0)
    cached_tid = (pid_t)syscall(SYS_gettid);
  return cached_tid;
}

/* fork(): hold the lock across it so the child never inherits it mid-call, and let the
 * child's thread learn its own tid. */
static void before_fork(void) { pthread_mutex_lock(&fc_lock); }
static void after_fork_parent(void) { pthread_mutex_unlock(&fc_lock); }
static void after_fork_child(void)
{
  cached_tid = 0;
  pthread_mutex_unlock(&fc_lock);
}

__attribute__((constructor)) static void fc_call_init(void)
{
  pthread_atfork(before_fork, after_fork_parent, after_fork_child);
}

static void count_live(struct fc_handle *h, void *arg)
{
  const struct fc_module *m = (const struct fc_module *)h;
  if (m->lib == NULL)
    ++*(int *)arg;
}

/* FAKECUDA_STATS=path: "modules_live=<n>" at exit (modules loaded and not unloaded;
 * libraries' modules are not counted). */
__attribute__((destructor)) static void fc_call_fini(void)
{
  const char *path = getenv("FAKECUDA_STATS");
  if (path == NULL || *path == '\0')
    return;
  pthread_mutex_lock(&fc_lock);
  int live = 0;
  fc_foreach(FC_MODULE, count_live, &live);
  pthread_mutex_unlock(&fc_lock);
  FILE *f = fopen(path, "w");
  if (f != NULL) {
    fprintf(f, "modules_live=%d\n", live);
    fclose(f);
  }
}

/* FAKECUDA_TRACE_CAPTURES=1: whether trace lines say which captures a call
 * opened, closed and broke (read at every call, as the other settings). */
static int trace_captures(void)
{
  const char *v = getenv("FAKECUDA_TRACE_CAPTURES");
  return v != NULL && strcmp(v, "1") == 0 && getenv("FAKECUDA_TRACE") != NULL;
}

struct fc_call fc_enter(void)
{
  pthread_mutex_lock(&fc_lock);
  struct fc_call c = { fc_open_captures(), fc_prohibited(), -1, { 0 }, { 0 }, { 0 } };
  if (trace_captures() && c.captures_at_entry <= FC_TRACE_CAPS) {
    c.n_caps = 0;
    for (struct fc_capture *k = fc_captures_head(); k != NULL; k = k->next, c.n_caps++) {
      c.cap_id[c.n_caps] = k->id;
      c.cap_active[c.n_caps] = !k->invalidated;
      c.cap_hits[c.n_caps] = k->hits;
    }
  }
  return c;
}

static void add_id(char *list, size_t cap, uint64_t id)
{
  size_t n = strlen(list);
  snprintf(list + n, cap - n, "%s%llu", n ? "," : "", (unsigned long long)id);
}

/* " opened=ID closed=ID broke=ID,ID hit=ID,ID": the captures the call
 * began, ended, invalidated (active when it arrived, invalidated now: the
 * call is their first offender), and invalidated whether or not they were
 * already (every capture the call was refused for), by the fake's capture
 * ids. Empty fields are left out. */
static int capture_fields(const struct fc_call *c, char *out, size_t cap)
{
  char opened[128] = "", closed[128] = "", broke[128] = "", hit[128] = "";
  int now_n = 0;
  uint64_t now_id[FC_TRACE_CAPS];
  int now_inv[FC_TRACE_CAPS];
  unsigned now_hits[FC_TRACE_CAPS];
  for (struct fc_capture *k = fc_captures_head(); k != NULL; k = k->next) {
    if (now_n == FC_TRACE_CAPS)
      return 0;
    now_id[now_n] = k->id;
    now_hits[now_n] = k->hits;
    now_inv[now_n++] = k->invalidated;
  }
  for (int i = 0; i < now_n; i++) {
    int was = -1;
    for (int j = 0; j < c->n_caps; j++)
      if (c->cap_id[j] == now_id[i])
        was = j;
    if (was < 0) {
      add_id(opened, sizeof(opened), now_id[i]);
      continue;
    }
    if (c->cap_active[was] && now_inv[i])
      add_id(broke, sizeof(broke), now_id[i]);
    if (now_hits[i] != c->cap_hits[was])
      add_id(hit, sizeof(hit), now_id[i]);
  }
  for (int j = 0; j < c->n_caps; j++) {
    int still = 0;
    for (int i = 0; i < now_n; i++)
      still |= now_id[i] == c->cap_id[j];
    if (!still)
      add_id(closed, sizeof(closed), c->cap_id[j]);
  }
  return snprintf(out, cap, "%s%s%s%s%s%s%s%s", opened[0] ? " opened=" : "", opened, closed[0] ? " closed=" : "",
                  closed, broke[0] ? " broke=" : "", broke, hit[0] ? " hit=" : "", hit);
}

/* The trace file descriptor for the current FAKECUDA_TRACE, reopened when it changes. */
static int trace_fd(void)
{
  static char path[PATH_MAX];
  static int fd = -1;
  static int warned;
  const char *want = getenv("FAKECUDA_TRACE");
  if (want == NULL || *want == '\0' || strlen(want) >= sizeof(path))
    return -1;
  if (fd >= 0 && strcmp(path, want) == 0)
    return fd;
  if (fd >= 0)
    close(fd);
  snprintf(path, sizeof(path), "%s", want);
  fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0 && !warned) {
    fprintf(stderr, "fakecuda: cannot open FAKECUDA_TRACE=%s, not tracing\n", path);
    warned = 1;
  }
  if (fd < 0)
    path[0] = '\0';
  return fd;
}

CUresult fc_leave(const struct fc_call *c, const char *name, CUresult rc)
{
  int fd = trace_fd();
  if (fd >= 0) {
    char line[512];
    const char *rule = getenv("FAKECUDA_TRACE_RULE");
    int n = rule != NULL && strcmp(rule, "1") == 0
                ? snprintf(line, sizeof(line), "%s tid=%d capturing=%d result=%d prohibited=%d\n", name,
                           (int)fc_tid(), c->captures_at_entry, (int)rc, c->prohibited_at_entry)
                : snprintf(line, sizeof(line), "%s tid=%d capturing=%d result=%d\n", name,
                           (int)fc_tid(), c->captures_at_entry, (int)rc);
    if (c->n_caps >= 0 && n > 0 && (size_t)n < sizeof(line)) {
      n--; /* the fields go before the newline */
      int k = capture_fields(c, line + n, sizeof(line) - (size_t)n - 1);
      n = k >= 0 && (size_t)(n + k) < sizeof(line) - 1 ? n + k : n;
      line[n++] = '\n';
      line[n] = 0;
    }
    if (n > 0 && (size_t)n < sizeof(line)) {
      /* One write per line: O_APPEND keeps lines from several processes whole. */
      ssize_t w = write(fd, line, (size_t)n);
      (void)w;
    }
  }
  fc_logs_emit(name, rc);   /* with the lock held, as a real driver may hold its own */
  pthread_mutex_unlock(&fc_lock);
  return rc;
}
