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

struct fc_call fc_enter(void)
{
  pthread_mutex_lock(&fc_lock);
  struct fc_call c = { fc_open_captures(), fc_prohibited() };
  return c;
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
    char line[256];
    const char *rule = getenv("FAKECUDA_TRACE_RULE");
    int n = rule != NULL && strcmp(rule, "1") == 0
                ? snprintf(line, sizeof(line), "%s tid=%d capturing=%d result=%d prohibited=%d\n", name,
                           (int)fc_tid(), c->captures_at_entry, (int)rc, c->prohibited_at_entry)
                : snprintf(line, sizeof(line), "%s tid=%d capturing=%d result=%d\n", name,
                           (int)fc_tid(), c->captures_at_entry, (int)rc);
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
