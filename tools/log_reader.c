#include "log_reader.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

/* Growth of the model's arrays; a log too large for memory ends the program
 * with one line rather than a crash. */
static void *grow(void *p, size_t *cap, size_t need, size_t elem) {
  if (need <= *cap)
    return p;
  size_t n = *cap ? *cap * 2 : 16;
  while (n < need)
    n *= 2;
  void *q = realloc(p, n * elem);
  if (!q) {
    fputs("capguard: out of memory reading the log\n", stderr);
    exit(2);
  }
  memset((char *)q + *cap * elem, 0, (n - *cap) * elem);
  *cap = n;
  return q;
}

void cgl_init(cgl_log *log) {
  memset(log, 0, sizeof *log);
  log->roots = json_array();
}

void cgl_free(cgl_log *log) {
  for (size_t i = 0; i < log->n_files; i++)
    free((char *)log->files[i]);
  free(log->files);
  free(log->procs);
  free(log->caps);
  free(log->evs);
  json_decref(log->roots);
  memset(log, 0, sizeof *log);
}

/* Field accessors that tolerate absent or mistyped keys (readers ignore what they do not know). */
static const char *str(json_t *o, const char *k) {
  json_t *v = json_object_get(o, k);
  return json_is_string(v) ? json_string_value(v) : NULL;
}
static long long num(json_t *o, const char *k, long long dflt) {
  json_t *v = json_object_get(o, k);
  return json_is_integer(v) ? (long long)json_integer_value(v) : dflt;
}
static json_t *arr(json_t *o, const char *k) {
  json_t *v = json_object_get(o, k);
  return json_is_array(v) ? v : NULL;
}

/* Text from a log reaches terminals and one-line reports: control characters
 * (escape sequences, newlines) become '?', in place, everywhere in the line. */
static void sanitize(json_t *v) {
  if (json_is_string(v)) {
    const char *t = json_string_value(v);
    size_t n = json_string_length(v);
    bool bad = false;
    for (size_t i = 0; i < n && !bad; i++)
      bad = (unsigned char)t[i] < 0x20 || t[i] == 0x7f;
    if (!bad)
      return;
    char *c = malloc(n + 1);
    if (!c)
      return;
    for (size_t i = 0; i < n; i++)
      c[i] = (unsigned char)t[i] < 0x20 || t[i] == 0x7f ? '?' : t[i];
    c[n] = '\0';
    json_string_setn(v, c, n);
    free(c);
  } else if (json_is_array(v)) {
    size_t i;
    json_t *e;
    json_array_foreach(v, i, e) sanitize(e);
  } else if (json_is_object(v)) {
    const char *k;
    json_t *e;
    json_object_foreach(v, k, e) sanitize(e);
  }
}

static void malformed(cgl_log *log, size_t file, long long lineno, const char *why) {
  if (log->malformed++ == 0)
    snprintf(log->first_malformed, sizeof log->first_malformed, "%s:%lld: %s", log->files[file],
             lineno, why);
}

/* The process a line belongs to: the latest one of that pid in the same file
 * (a pid reused by a later run writes a new "process" line first). */
static size_t proc_for(cgl_log *log, size_t file, long long pid, bool fresh) {
  if (!fresh)
    for (size_t i = log->n_procs; i-- > 0;)
      if (log->procs[i].file == file && log->procs[i].pid == pid)
        return i;
  log->procs = grow(log->procs, &log->cap_procs, log->n_procs + 1, sizeof *log->procs);
  cgl_process *p = &log->procs[log->n_procs];
  p->file = file;
  p->pid = pid;
  return log->n_procs++;
}

static size_t capture_for(cgl_log *log, size_t proc, long long id) {
  for (size_t i = log->n_caps; i-- > 0;)
    if (log->caps[i].proc == proc && log->caps[i].id == id)
      return i;
  log->caps = grow(log->caps, &log->cap_caps, log->n_caps + 1, sizeof *log->caps);
  cgl_capture *c = &log->caps[log->n_caps];
  c->proc = proc;
  c->id = id;
  return log->n_caps++;
}

static void read_process(cgl_log *log, size_t file, long long pid, json_t *o) {
  /* A second "process" line for a pid already seen means a new process reused it. */
  size_t existing = proc_for(log, file, pid, false);
  bool fresh = log->procs[existing].seen_process;
  size_t i = fresh ? proc_for(log, file, pid, true) : existing;
  cgl_process *p = &log->procs[i];
  p->seen_process = true;
  p->ppid = num(o, "ppid", 0);
  p->mode = str(o, "mode");
  p->version = str(o, "version");
  p->driver_version = num(o, "driver_version", 0);
  p->emulate_driver = num(o, "emulate_driver", 0);
  p->time_ns = num(o, "time_ns", 0);
  json_t *argv = arr(o, "argv"), *w;
  size_t k;
  p->argc = 0;
  json_array_foreach(argv, k, w) {
    if (p->argc < sizeof p->argv / sizeof p->argv[0] && json_is_string(w))
      p->argv[p->argc++] = json_string_value(w);
  }
}

static void read_capture(cgl_log *log, size_t proc, json_t *o) {
  /* index first: capture_for may move log->caps */
  size_t ci = capture_for(log, proc, num(o, "id", 0));
  cgl_capture *c = &log->caps[ci];
  c->ended_line = true;
  c->stream = str(o, "stream");
  c->mode = str(o, "mode");
  c->status = str(o, "status");
  c->began = str(o, "began");
  c->tid = num(o, "tid", 0);
  c->begin_ns = num(o, "begin_ns", 0);
  c->end_ns = num(o, "end_ns", 0);
  c->events = num(o, "events", 0);
}

static void read_event(cgl_log *log, size_t file, long long lineno, size_t proc, json_t *o) {
  log->evs = grow(log->evs, &log->cap_evs, log->n_evs + 1, sizeof *log->evs);
  cgl_event *e = &log->evs[log->n_evs];
  e->proc = proc;
  e->seq = log->n_evs++;
  e->time_ns = num(o, "time_ns", 0);
  e->event = str(o, "event");
  e->call = str(o, "call");
  e->verdict = str(o, "verdict");
  e->thread_mode = str(o, "thread_mode");
  e->module = str(o, "module");
  e->result = num(o, "result", 0);
  e->driver_result = num(o, "driver_result", -1);
  e->driver_version = num(o, "driver_version", 0);
  e->emulate_driver = num(o, "emulate_driver", 0);
  e->tid = num(o, "tid", 0);
  e->native = arr(o, "native_stack");
  e->python = arr(o, "python_stack");
  json_t *img = json_object_get(o, "image");
  if (json_is_object(img)) {
    e->image_kind = str(img, "kind");
    e->image_hash = str(img, "hash");
    e->kernels = arr(img, "kernels");
    e->kernels_truncated = json_is_true(json_object_get(img, "kernels_truncated"));
  }
  e->src_file = log->files[file];
  e->src_line = lineno;
  /* The capture it names; known from the event alone if its "capture" line never came
   * (the process was killed with the capture open). */
  json_t *cap = json_object_get(o, "capture");
  long long id = json_is_object(cap) ? num(cap, "id", 0) : 0;
  size_t ci = capture_for(log, proc, id);
  e = &log->evs[e->seq];
  e->capture = ci;
  cgl_capture *c = &log->caps[ci];
  if (!c->ended_line && json_is_object(cap)) {
    c->stream = str(cap, "stream");
    c->mode = str(cap, "mode");
    c->status = str(cap, "status");
    c->began = str(cap, "began");
    c->tid = num(cap, "tid", 0);
    if (!c->begin_ns || (e->time_ns && e->time_ns < c->begin_ns))
      c->begin_ns = e->time_ns;
    c->events++;
  }
}

static void read_summary(cgl_log *log, size_t proc, json_t *o) {
  cgl_process *p = &log->procs[proc];
  p->has_summary = true;
  p->captures = num(o, "captures", 0);
  p->captures_broken = num(o, "captures_broken", 0);
  p->primed_loaded = num(o, "primed_loaded", 0);
  p->primed_served = num(o, "primed_served", 0);
  p->primed_unused = num(o, "primed_unused", 0);
  p->recorded = num(o, "recorded", 0);
  p->primed_skipped_arch = num(o, "primed_skipped_arch", 0);
  p->skipped_sm = num(o, "skipped_sm", 0);
  p->device_sm = num(o, "device_sm", 0);
  json_t *ev = json_object_get(o, "events"), *vd = json_object_get(o, "verdicts");
  p->events_by_kind = json_is_object(ev) ? ev : NULL;
  p->verdicts = json_is_object(vd) ? vd : NULL;
}

void cgl_read_line(cgl_log *log, size_t file, const char *text, size_t len, long long lineno) {
  while (len && (text[len - 1] == '\r' || text[len - 1] == ' ' || text[len - 1] == '\t'))
    len--;
  size_t sp = 0;
  while (sp < len && (text[sp] == ' ' || text[sp] == '\t'))
    sp++;
  if (sp == len)
    return; /* blank lines are not lines of the log */
  log->lines++;
  json_error_t err;
  json_t *o = json_loadb(text, len, JSON_REJECT_DUPLICATES, &err);
  if (!o) {
    char why[300];
    snprintf(why, sizeof why, "not JSON (%s)", err.text);
    malformed(log, file, lineno, why);
    return;
  }
  if (!json_is_object(o)) {
    json_decref(o);
    malformed(log, file, lineno, "not a JSON object");
    return;
  }
  json_t *v = json_object_get(o, "v");
  const char *type = str(o, "type");
  json_t *pid = json_object_get(o, "pid");
  if (!json_is_integer(v) || json_integer_value(v) < 1 || !type || !json_is_integer(pid)) {
    json_decref(o);
    malformed(log, file, lineno, "missing \"v\", \"type\" or \"pid\"");
    return;
  }
  if (json_integer_value(v) > CGL_VERSION) {
    json_decref(o);
    log->newer++;
    return;
  }
  bool known = !strcmp(type, "process") || !strcmp(type, "event") || !strcmp(type, "capture") ||
               !strcmp(type, "summary");
  if (!known) {
    json_decref(o);
    log->unknown++;
    return;
  }
  sanitize(o);
  json_array_append_new(log->roots, o); /* keeps the borrowed strings alive */
  long long p = (long long)json_integer_value(pid);
  if (!strcmp(type, "process")) {
    read_process(log, file, p, o);
    return;
  }
  size_t proc = proc_for(log, file, p, false);
  if (!strcmp(type, "event"))
    read_event(log, file, lineno, proc, o);
  else if (!strcmp(type, "capture"))
    read_capture(log, proc, o);
  else
    read_summary(log, proc, o);
}

static size_t add_file(cgl_log *log, const char *name) {
  const char **f = realloc(log->files, (log->n_files + 1) * sizeof *f);
  char *copy = strdup(name);
  if (!f || !copy) {
    fputs("capguard: out of memory reading the log\n", stderr);
    exit(2);
  }
  log->files = f;
  f[log->n_files] = copy;
  return log->n_files++;
}

int cgl_read_stream(cgl_log *log, FILE *f, const char *name) {
  size_t file = add_file(log, name);
  char *line = NULL;
  size_t cap = 0;
  ssize_t n;
  long long lineno = 0;
  while ((n = getline(&line, &cap, f)) >= 0) {
    lineno++;
    size_t len = (size_t)n;
    if (len && line[len - 1] == '\n')
      len--;
    if (memchr(line, '\0', len)) {
      log->lines++;
      malformed(log, file, lineno, "contains a NUL byte");
      continue;
    }
    cgl_read_line(log, file, line, len, lineno);
  }
  int bad = ferror(f);
  int saved = errno;
  free(line);
  if (bad) {
    errno = saved;
    return -1;
  }
  return 0;
}

int cgl_read_file(cgl_log *log, const char *path, long long offset) {
  if (!strcmp(path, "-"))
    return cgl_read_stream(log, stdin, "(stdin)");
  FILE *f = fopen(path, "r");
  if (!f)
    return -1;
  if (offset > 0 && fseeko(f, offset, SEEK_SET) != 0) {
    int e = errno;
    fclose(f);
    errno = e;
    return -1;
  }
  int rc = cgl_read_stream(log, f, path);
  int e = errno;
  fclose(f);
  errno = e;
  return rc;
}

bool cgl_verdict_breaks(const char *verdict) {
  return verdict && (!strcmp(verdict, "refused") || !strcmp(verdict, "emulated"));
}

bool cgl_capture_broken(const cgl_log *log, size_t capture) {
  const cgl_capture *c = &log->caps[capture];
  if (c->status && (!strcmp(c->status, "failed") || !strcmp(c->status, "invalidated")))
    return true;
  for (size_t i = 0; i < log->n_evs; i++)
    if (log->evs[i].capture == capture && cgl_verdict_breaks(log->evs[i].verdict))
      return true;
  return false;
}

/* Frames of capguard itself and of the driver say nothing about who made the call. */
static bool uninteresting_native(const char *frame) {
  return strstr(frame, "libcapguard") || strstr(frame, "libcuda.so");
}

/* A native frame without its trailing absolute address: "app(main+0x343) [0x5579b1f04453]"
 * becomes "app(main+0x343)". The address differs between processes (ASLR), the
 * symbol or module offset before it does not: sites are compared and shown this way. */
static void frame_without_address(const char *frame, char *buf, size_t cap) {
  size_t n = strlen(frame);
  if (n >= 5 && frame[n - 1] == ']') {
    size_t open = n - 1;
    while (open > 0 && frame[open - 1] != '[')
      open--;
    bool hex = open >= 2 && frame[open - 2] == ' ' && n - open >= 4 && frame[open] == '0' &&
               frame[open + 1] == 'x';
    for (size_t i = open + 2; hex && i < n - 1; i++)
      hex = strchr("0123456789abcdefABCDEF", frame[i]) != NULL;
    if (hex)
      n = open - 2;
  }
  snprintf(buf, cap, "%.*s", (int)(n < (size_t)INT_MAX ? n : (size_t)INT_MAX), frame);
}

/* Frames inside the JIT and framework machinery that makes the driver call
 * (Triton's launcher, torch's compile and graph code) are the same for every
 * kernel; the frame a person can act on is the first one outside them. */
static bool machinery_frame(const char *file) {
  static const char *const dirs[] = {"/triton/", "/torch/"};
  for (size_t i = 0; file && i < sizeof dirs / sizeof dirs[0]; i++)
    if (strstr(file, dirs[i]))
      return true;
  return false;
}

void cgl_event_site(const cgl_event *e, char *buf, size_t cap) {
  size_t k;
  json_t *fr = json_array_get(e->python, 0), *f;
  json_array_foreach(e->python, k, f) {
    if (json_is_object(f) && !machinery_frame(str(f, "file"))) {
      fr = f;
      break;
    }
  }
  if (json_is_object(fr)) {
    const char *file = str(fr, "file"), *func = str(fr, "func");
    snprintf(buf, cap, "%s:%lld in %s", file ? file : "?", num(fr, "line", 0), func ? func : "?");
    return;
  }
  size_t i;
  json_t *n;
  const char *fallback = NULL;
  json_array_foreach(e->native, i, n) {
    if (!json_is_string(n))
      continue;
    if (!fallback)
      fallback = json_string_value(n);
    if (!uninteresting_native(json_string_value(n))) {
      frame_without_address(json_string_value(n), buf, cap);
      return;
    }
  }
  if (fallback)
    frame_without_address(fallback, buf, cap);
  else
    snprintf(buf, cap, "(no stack)");
}
