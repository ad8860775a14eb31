#include "output.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <uthash.h>

#include "capguard/image.h"
#include "config.h"

#ifndef CAPGUARD_VERSION
#define CAPGUARD_VERSION "unknown"
#endif

static int log_fd = -1;
static int process_written;
static uint64_t repeats_hidden;
static pthread_mutex_t out_lock = PTHREAD_MUTEX_INITIALIZER;

/* Seen events for stderr de-duplication, keyed by a hash of what makes two
 * events the same to a person: call, verdict, image and call site. */
typedef struct {
  cg_hash128 key;
  uint64_t count;
  UT_hash_handle hh;
} seen_event;
static seen_event *seen;

uint64_t cg_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void write_all(int fd, const char *buf, size_t len) {
  while (len) {
    ssize_t n = write(fd, buf, len);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return; /* nowhere to complain to: the report is best effort */
    buf += n;
    len -= (size_t)n;
  }
}

/* A warning is one line, whatever it quotes: values from the environment
 * (CAPGUARD_MODE, paths) may hold newlines or terminal escape sequences, so
 * control characters are written as \xNN, never raw. */
void cg_warn(const char *fmt, ...) {
  char msg[1024], line[4 * sizeof msg + 16];
  va_list ap;
  va_start(ap, fmt);
  int m = vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  size_t mlen = m < 0 ? 0 : (size_t)m < sizeof msg ? (size_t)m : sizeof msg - 1;
  size_t len = (size_t)snprintf(line, sizeof line, "capguard: ");
  for (size_t i = 0; i < mlen; i++) {
    unsigned char c = (unsigned char)msg[i];
    if (c < 0x20 || c == 0x7f) {
      line[len++] = '\\';
      line[len++] = 'x';
      line[len++] = "0123456789abcdef"[c >> 4];
      line[len++] = "0123456789abcdef"[c & 0xf];
    } else {
      line[len++] = (char)c;
    }
  }
  line[len++] = '\n';
  write_all(2, line, len);
}

void cg_output_open_log(void) {
  if (!cg_cfg.log_path || log_fd >= 0)
    return;
  log_fd = open(cg_cfg.log_path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (log_fd < 0)
    cg_warn("cannot open log %s (%s); reporting on stderr only", cg_cfg.log_path, strerror(errno));
}

/* Format with fmt into a stack buffer, or a heap one when it does not fit, and
 * hand the result to sink. */
typedef size_t (*formatter)(const void *obj, char *buf, size_t cap);
static void emit(int fd, formatter f, const void *obj) {
  if (fd < 0)
    return;
  char small[8192];
  size_t need = f(obj, small, sizeof small);
  if (need < sizeof small) {
    write_all(fd, small, need);
    return;
  }
  char *big = malloc(need + 1);
  if (!big)
    return;
  f(obj, big, need + 1);
  write_all(fd, big, need);
  free(big);
}

static size_t fmt_event_text(const void *e, char *b, size_t c) { return cg_event_format_text(e, b, c); }
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

/* True the first time an event like e is seen. */
static int first_sighting(const cg_event *e) {
  cg_hash128 k = event_identity(e);
  seen_event *s;
  HASH_FIND(hh, seen, &k, sizeof k, s);
  if (s) {
    s->count++;
    repeats_hidden++;
    return 0;
  }
  s = calloc(1, sizeof *s);
  if (s) {
    s->key = k;
    s->count = 1;
    HASH_ADD(hh, seen, key, sizeof s->key, s);
  }
  return 1;
}

void cg_output_event(const cg_event *e) {
  pthread_mutex_lock(&out_lock);
  int show = first_sighting(e) && !cg_cfg.quiet;
  pthread_mutex_unlock(&out_lock);
  if (show)
    emit(2, fmt_event_text, e);
  emit(log_fd, fmt_event_json, e);
}

bool cg_output_has_log(void) { return log_fd >= 0; }

void cg_output_capture(const cg_capture *c, const char *began) {
  if (log_fd < 0)
    return;
  char buf[4096];
  size_t n = cg_capture_format_json(c, (uint64_t)getpid(), began ? began : "", buf, sizeof buf);
  if (n < sizeof buf)
    write_all(log_fd, buf, n);
}

static size_t json_string(const char *s, char *buf, size_t cap) {
  size_t n = 0;
  if (cap > 1)
    buf[n] = '"';
  n++;
  n += cg_json_escape(s, n < cap ? buf + n : NULL, n < cap ? cap - n : 0);
  if (n < cap)
    buf[n] = '"';
  n++;
  if (n < cap)
    buf[n] = 0;
  return n;
}

void cg_output_process(int driver_version) {
  pthread_mutex_lock(&out_lock);
  int first = !process_written;
  process_written = 1;
  pthread_mutex_unlock(&out_lock);
  if (!first || log_fd < 0)
    return;
  char buf[8192];
  size_t n = (size_t)snprintf(buf, sizeof buf,
                              "{\"v\":1,\"type\":\"process\",\"pid\":%d,\"ppid\":%d,\"time_ns\":%llu,"
                              "\"mode\":\"%s\",\"driver_version\":%d,\"emulate_driver\":%d,"
                              "\"version\":\"%s\",\"argv\":[",
                              (int)getpid(), (int)getppid(), (unsigned long long)cg_now_ns(),
                              cg_run_mode_name(cg_cfg.mode), driver_version, cg_cfg.emulate_driver,
                              CAPGUARD_VERSION);
  /* argv from /proc: capguard has no other portable way to it from a library. */
  int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    char args[2048];
    ssize_t len = read(fd, args, sizeof args - 1);
    close(fd);
    if (len > 0) {
      args[len] = 0;
      int words = 0;
      for (char *p = args; p < args + len && words < 16; p += strlen(p) + 1, words++) {
        if (words && n < sizeof buf)
          buf[n++] = ',';
        if (n < sizeof buf)
          n += json_string(p, buf + n, sizeof buf - n);
      }
    }
  }
  if (n + 3 < sizeof buf) {
    memcpy(buf + n, "]}\n", 3);
    write_all(log_fd, buf, n + 3);
  }
}

void cg_output_summary(cg_summary *s) {
  s->log_path = log_fd >= 0 ? cg_cfg.log_path : NULL;
  char buf[2048];
  size_t n = cg_summary_format_text(s, buf, sizeof buf);
  if (n < sizeof buf && !cg_cfg.quiet && cg_cfg.summary) {
    write_all(2, buf, n);
    if (repeats_hidden) {
      int m = snprintf(buf, sizeof buf, "capguard: %llu repeated events were counted, not reprinted%s\n",
                       (unsigned long long)repeats_hidden, log_fd >= 0 ? " (all are in the log)" : "");
      write_all(2, buf, (size_t)m);
    }
  }
  if (log_fd >= 0) {
    n = cg_summary_format_json(s, buf, sizeof buf);
    if (n < sizeof buf)
      write_all(log_fd, buf, n);
  }
}

void cg_output_after_fork_child(void) {
  pthread_mutex_init(&out_lock, NULL);
  seen_event *s, *tmp;
  HASH_ITER(hh, seen, s, tmp) {
    HASH_DEL(seen, s);
    free(s);
  }
  repeats_hidden = 0;
  process_written = 0; /* a forked worker is a process of its own in the log */
}
