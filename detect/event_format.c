/* Rendering of events, captures and the process summary: the text a person
 * reads on stderr, and the JSON Lines of docs/log-format.md. Every function
 * follows the snprintf contract (returns the length it needed, writes at most
 * cap bytes, NUL-terminates whenever cap > 0) and allocates nothing, so it is
 * safe inside the shim. Strings from the process (kernel names, file names,
 * stack frames) are untrusted: JSON gets them escaped and made valid UTF-8,
 * text gets control characters replaced so they cannot drive a terminal. */
#include "capguard/event.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

/* At most this many native frames in the text; the JSON keeps them all. */
#define TEXT_NATIVE_FRAMES 12
/* At most this many kernel names in the text line. */
#define TEXT_KERNELS 8

/* ---- bounded output ------------------------------------------------------ */

typedef struct {
  char *buf;
  size_t cap;
  size_t len; /* bytes needed so far; only the first cap - 1 are stored */
} out_t;

static out_t out_init(char *buf, size_t cap) {
  out_t o = {buf ? buf : NULL, buf ? cap : 0, 0};
  return o;
}

static void put_n(out_t *o, const char *s, size_t n) {
  if (o->cap > 0 && o->len < o->cap - 1) {
    size_t room = o->cap - 1 - o->len;
    memcpy(o->buf + o->len, s, n < room ? n : room);
  }
  o->len += n;
}

static void put(out_t *o, const char *s) { put_n(o, s, strlen(s)); }

static void put_c(out_t *o, char c) { put_n(o, &c, 1); }

static size_t out_finish(out_t *o) {
  if (o->cap > 0) o->buf[o->len < o->cap - 1 ? o->len : o->cap - 1] = '\0';
  return o->len;
}

static void put_u64(out_t *o, uint64_t v) {
  char tmp[24];
  int n = snprintf(tmp, sizeof tmp, "%" PRIu64, v);
  put_n(o, tmp, (size_t)n);
}

static void put_int(out_t *o, long long v) {
  char tmp[24];
  int n = snprintf(tmp, sizeof tmp, "%lld", v);
  put_n(o, tmp, (size_t)n);
}

static void put_hex(out_t *o, uint64_t v) {
  char tmp[24];
  int n = snprintf(tmp, sizeof tmp, "0x%" PRIx64, v);
  put_n(o, tmp, (size_t)n);
}

/* 13000 -> "13.0", 12020 -> "12.2" (CUDA's 1000 * major + 10 * minor) */
static void put_cuda_version(out_t *o, int v) {
  put_int(o, v / 1000);
  put_c(o, '.');
  put_int(o, (v % 1000) / 10);
}

/* Bytes of the valid UTF-8 sequence at p (1-4), or 0 if p starts an invalid
 * one. Checks byte by byte, so it never reads past a NUL terminator. The
 * ranges are Unicode's well-formed sequences: no overlongs, no surrogates,
 * nothing above U+10FFFF. */
static size_t utf8_len(const unsigned char *p) {
  unsigned c = p[0];
  if (c < 0x80) return 1;
  if (c >= 0xC2 && c <= 0xDF) return (p[1] & 0xC0) == 0x80 ? 2 : 0;
  if (c >= 0xE0 && c <= 0xEF) {
    unsigned lo = c == 0xE0 ? 0xA0 : 0x80, hi = c == 0xED ? 0x9F : 0xBF;
    if (p[1] < lo || p[1] > hi) return 0;
    return (p[2] & 0xC0) == 0x80 ? 3 : 0;
  }
  if (c >= 0xF0 && c <= 0xF4) {
    unsigned lo = c == 0xF0 ? 0x90 : 0x80, hi = c == 0xF4 ? 0x8F : 0xBF;
    if (p[1] < lo || p[1] > hi) return 0;
    if ((p[2] & 0xC0) != 0x80) return 0;
    return (p[3] & 0xC0) == 0x80 ? 4 : 0;
  }
  return 0;
}

/* JSON string body: quotes, backslash and control characters escaped, each
 * byte that is not part of valid UTF-8 replaced by U+FFFD. */
static void put_escaped(out_t *o, const char *s) {
  static const char hex[] = "0123456789abcdef";
  if (!s) return;
  const unsigned char *p = (const unsigned char *)s;
  while (*p) {
    unsigned c = *p;
    if (c == '"' || c == '\\') {
      put_c(o, '\\');
      put_c(o, (char)c);
      p++;
    } else if (c < 0x20) {
      switch (c) {
      case '\n': put(o, "\\n"); break;
      case '\r': put(o, "\\r"); break;
      case '\t': put(o, "\\t"); break;
      case '\b': put(o, "\\b"); break;
      case '\f': put(o, "\\f"); break;
      default: {
        char u[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};
        put_n(o, u, 6);
      }
      }
      p++;
    } else {
      size_t n = utf8_len(p);
      if (n == 0) {
        put(o, "\xEF\xBF\xBD");
        p++;
      } else {
        put_n(o, (const char *)p, n);
        p += n;
      }
    }
  }
}

static void put_jstr(out_t *o, const char *s) {
  put_c(o, '"');
  put_escaped(o, s);
  put_c(o, '"');
}

/* ,"key": */
static void put_key(out_t *o, const char *key) {
  put_c(o, ',');
  put_c(o, '"');
  put(o, key);
  put(o, "\":");
}

static void put_kv_str(out_t *o, const char *key, const char *v) {
  put_key(o, key);
  put_jstr(o, v);
}

static void put_kv_u64(out_t *o, const char *key, uint64_t v) {
  put_key(o, key);
  put_u64(o, v);
}

static void put_kv_int(out_t *o, const char *key, long long v) {
  put_key(o, key);
  put_int(o, v);
}

static void put_kv_hex(out_t *o, const char *key, uint64_t v) {
  put_key(o, key);
  put_c(o, '"');
  put_hex(o, v);
  put_c(o, '"');
}

/* Text from the process for a terminal: control characters become '?'. */
static void put_clean(out_t *o, const char *s) {
  if (!s) return;
  for (; *s; s++) put_c(o, ((unsigned char)*s < 0x20 || *s == 0x7f) ? '?' : *s);
}

static void json_head(out_t *o, const char *type, uint64_t pid, uint64_t time_ns) {
  put(o, "{\"v\":1,\"type\":\"");
  put(o, type);
  put_c(o, '"');
  put_kv_u64(o, "pid", pid);
  put_kv_u64(o, "time_ns", time_ns);
}

static uint64_t realtime_ns(void) {
  struct timespec ts;
  if (clock_gettime(CLOCK_REALTIME, &ts) != 0) return 0;
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ---- names ---------------------------------------------------------------- */

const char *cg_event_kind_name(cg_event_kind k) {
  switch (k) {
  case CG_EV_MODULE_LOAD: return "module-load";
  case CG_EV_MODULE_UNLOAD: return "module-unload";
  case CG_EV_KIND_COUNT: break;
  }
  return "unknown";
}

const char *cg_verdict_name(cg_verdict v) {
  switch (v) {
  case CG_VERDICT_REFUSED: return "refused";
  case CG_VERDICT_ALLOWED: return "allowed";
  case CG_VERDICT_EMULATED: return "emulated";
  case CG_VERDICT_SERVED: return "served";
  case CG_VERDICT_RESCUED: return "rescued";
  case CG_VERDICT_DEFERRED: return "deferred";
  case CG_VERDICT_FAILED: return "failed";
  case CG_VERDICT_COUNT: break;
  }
  return "unknown";
}

static void put_hash(out_t *o, cg_hash128 h) {
  char tmp[33];
  cg_hash_format(h, tmp);
  put_n(o, tmp, 32);
}

/* Kernel names: n_kernels NUL-terminated strings packed in kernel_names.
 * Walks only inside the buffer, even if the struct is corrupt. Returns the
 * next name or NULL; *pos carries the offset. */
static const char *next_kernel(const cg_image_info *im, size_t *pos, unsigned *seen) {
  if (*seen >= im->n_kernels || *pos >= sizeof im->kernel_names) return NULL;
  const char *start = im->kernel_names + *pos;
  const char *nul = memchr(start, '\0', sizeof im->kernel_names - *pos);
  if (!nul) return NULL;
  *pos = (size_t)(nul - im->kernel_names) + 1;
  (*seen)++;
  return start;
}

static unsigned clamp_archs(const cg_image_info *im) {
  return im->n_archs < CG_IMAGE_MAX_ARCHS ? im->n_archs : CG_IMAGE_MAX_ARCHS;
}

/* ---- event ---------------------------------------------------------------- */

static size_t clamp_native(const cg_event *e) {
  if (!e->native) return 0;
  return e->n_native < CG_MAX_NATIVE_FRAMES ? e->n_native : CG_MAX_NATIVE_FRAMES;
}

static size_t clamp_py(const cg_event *e) {
  if (!e->py) return 0;
  return e->n_py < CG_MAX_PY_FRAMES ? e->n_py : CG_MAX_PY_FRAMES;
}

static void put_image_json(out_t *o, const cg_image_info *im) {
  put(o, ",\"image\":{\"kind\":");
  put_jstr(o, cg_image_kind_name(im->kind));
  put_kv_u64(o, "size", im->size);
  put_kv_u64(o, "sm", im->sm_arch);
  put(o, ",\"archs\":[");
  for (unsigned i = 0; i < clamp_archs(im); i++) {
    if (i) put_c(o, ',');
    put_u64(o, im->archs[i]);
  }
  put(o, "],\"hash\":\"");
  put_hash(o, im->hash);
  put(o, "\",\"kernels\":[");
  size_t pos = 0;
  unsigned seen = 0;
  for (const char *k; (k = next_kernel(im, &pos, &seen));) {
    if (seen > 1) put_c(o, ',');
    put_jstr(o, k);
  }
  /* a walk cut short by a corrupt buffer also lost names */
  bool truncated = im->names_truncated || seen < im->n_kernels;
  put(o, "],\"kernels_truncated\":");
  put(o, truncated ? "true" : "false");
  if (im->kind == CG_IMAGE_UNKNOWN && im->why_unknown) put_kv_str(o, "why_unknown", im->why_unknown);
  put_c(o, '}');
}

size_t cg_event_format_json(const cg_event *e, char *buf, size_t cap) {
  out_t o = out_init(buf, cap);
  if (!e) {
    put(&o, "{\"v\":1,\"type\":\"error\",\"error\":\"no event\"}\n");
    return out_finish(&o);
  }
  json_head(&o, "event", e->pid, e->time_ns);
  put_kv_str(&o, "event", cg_event_kind_name(e->kind));
  put_kv_str(&o, "call", e->call ? e->call : "");
  put_kv_str(&o, "verdict", cg_verdict_name(e->verdict));
  put_kv_int(&o, "result", e->result);
  put_kv_int(&o, "driver_result", e->driver_result);
  put_kv_int(&o, "driver_version", e->driver_version);
  put_kv_int(&o, "emulate_driver", e->emulated_version);
  put_kv_u64(&o, "tid", e->tid);
  put_kv_str(&o, "thread_mode", cg_capture_mode_name(e->thread_mode));
  put(&o, ",\"capture\":{\"id\":");
  put_u64(&o, e->capture.id);
  put_kv_hex(&o, "stream", e->capture.stream);
  put_kv_str(&o, "mode", cg_capture_mode_name(e->capture.mode));
  put_kv_u64(&o, "tid", e->capture.tid);
  put_kv_str(&o, "status", cg_capture_status_name(e->capture.status));
  put_kv_str(&o, "began", e->capture_began ? e->capture_began : "");
  put_c(&o, '}');
  put_kv_u64(&o, "prohibitors", e->n_prohibitors);
  if (e->module) put_kv_hex(&o, "module", e->module);
  if (e->image) put_image_json(&o, e->image);
  put(&o, ",\"native_stack\":[");
  for (size_t i = 0; i < clamp_native(e); i++) {
    if (i) put_c(&o, ',');
    put_jstr(&o, e->native[i] ? e->native[i] : "");
  }
  put(&o, "],\"python_stack\":[");
  for (size_t i = 0; i < clamp_py(e); i++) {
    if (i) put_c(&o, ',');
    put(&o, "{\"file\":");
    put_jstr(&o, e->py[i].file ? e->py[i].file : "");
    put_kv_int(&o, "line", e->py[i].line);
    put_kv_str(&o, "func", e->py[i].func ? e->py[i].func : "");
    put_c(&o, '}');
  }
  put(&o, "]}\n");
  return out_finish(&o);
}

/* What happened to the call, after "...): " on the first text line. */
static void put_verdict_text(out_t *o, const cg_event *e) {
  bool several = e->n_prohibitors > 1;
  const char *now_broken = several ? "; the captures are now broken" : "; the capture is now broken";
  int err = e->driver_result >= 0 ? e->driver_result : e->result;
  switch (e->verdict) {
  case CG_VERDICT_REFUSED:
    put(o, "refused by the driver with error ");
    put_int(o, err);
    put(o, now_broken);
    return;
  case CG_VERDICT_ALLOWED:
    put(o, "allowed by this driver");
    if (e->driver_version > 0) {
      put(o, " (");
      put_cuda_version(o, e->driver_version);
      put(o, " >= 12.3)");
    }
    put(o, "; drivers before 12.3 refuse it");
    return;
  case CG_VERDICT_EMULATED:
    put(o, "refused by capguard emulating driver ");
    put_cuda_version(o, e->emulated_version);
    put(o, " (CAPGUARD_EMULATE_DRIVER=");
    put_int(o, e->emulated_version);
    put(o, ")");
    put(o, now_broken);
    return;
  case CG_VERDICT_SERVED:
    put(o, "served from the priming file: no loader call reached the driver");
    return;
  case CG_VERDICT_RESCUED:
    put(o, "made in relaxed mode for this one call (CAPGUARD_RESCUE=1)");
    return;
  case CG_VERDICT_DEFERRED:
    put(o, "returned success; the unload runs when the capture ends");
    return;
  case CG_VERDICT_FAILED:
    put(o, "the driver returned error ");
    put_int(o, err);
    return;
  case CG_VERDICT_COUNT:
    break;
  }
  put(o, "unknown verdict; result ");
  put_int(o, e->result);
}

static void put_kernels_text(out_t *o, const cg_image_info *im) {
  put(o, "  kernels: ");
  size_t pos = 0;
  unsigned seen = 0, shown = 0;
  for (const char *k; im && (k = next_kernel(im, &pos, &seen));) {
    if (shown == TEXT_KERNELS) break;
    if (shown) put(o, ", ");
    put_clean(o, k);
    shown++;
  }
  if (shown == 0) {
    put(o, "(names unavailable)\n");
    return;
  }
  if (im->n_kernels > shown) {
    put(o, ", ... (");
    put_u64(o, im->n_kernels);
    put(o, " in all)");
  } else if (im->names_truncated) {
    put(o, ", ...");
  }
  put_c(o, '\n');
}

static void put_image_text(out_t *o, const cg_image_info *im) {
  put(o, "  image: ");
  put(o, cg_image_kind_name(im->kind));
  if (im->kind == CG_IMAGE_UNKNOWN) {
    if (im->why_unknown) {
      put(o, " (");
      put_clean(o, im->why_unknown);
      put(o, ")");
    }
    put_c(o, '\n');
    return;
  }
  put(o, ", ");
  put_u64(o, im->size);
  put(o, " bytes");
  unsigned na = clamp_archs(im);
  if (na > 1) {
    put(o, ", ");
    for (unsigned i = 0; i < na; i++) {
      if (i) put_c(o, '/');
      put(o, "sm_");
      put_u64(o, im->archs[i]);
    }
  } else if (im->sm_arch) {
    put(o, ", sm_");
    put_u64(o, im->sm_arch);
  }
  if (im->kind == CG_IMAGE_FATBIN && im->has_ptx) put(o, " +ptx");
  put(o, ", xxh3 ");
  put_hash(o, im->hash);
  put_c(o, '\n');
}

size_t cg_event_format_text(const cg_event *e, char *buf, size_t cap) {
  out_t o = out_init(buf, cap);
  if (!e) {
    put(&o, "capguard: (no event)\n");
    return out_finish(&o);
  }
  put(&o, "capguard: ");
  put_clean(&o, e->call ? e->call : "(unknown call)");
  put(&o, " during capture ");
  put_u64(&o, e->capture.id);
  put(&o, " (stream ");
  put_hex(&o, e->capture.stream);
  put(&o, ", ");
  put(&o, cg_capture_mode_name(e->capture.mode));
  put(&o, " mode, begun by thread ");
  put_u64(&o, e->capture.tid);
  put(&o, ")");
  if (e->n_prohibitors > 1) {
    put(&o, " (+");
    put_u64(&o, e->n_prohibitors - 1);
    put(&o, e->n_prohibitors > 2 ? " more captures)" : " more capture)");
  }
  put(&o, ": ");
  put_verdict_text(&o, e);
  put_c(&o, '\n');

  if (e->kind == CG_EV_MODULE_LOAD) put_kernels_text(&o, e->image);
  if (e->image) put_image_text(&o, e->image);
  if (e->capture_began && e->capture_began[0]) {
    put(&o, "  capture began: ");
    put_clean(&o, e->capture_began);
    put_c(&o, '\n');
  }
  size_t npy = clamp_py(e);
  if (npy) {
    put(&o, "  python stack (most recent call first):\n");
    for (size_t i = 0; i < npy; i++) {
      put(&o, "    File \"");
      put_clean(&o, e->py[i].file ? e->py[i].file : "?");
      put(&o, "\", line ");
      put_int(&o, e->py[i].line);
      put(&o, ", in ");
      put_clean(&o, e->py[i].func ? e->py[i].func : "?");
      put_c(&o, '\n');
    }
  }
  size_t nn = clamp_native(e);
  if (nn) {
    put(&o, "  native stack:\n");
    for (size_t i = 0; i < nn && i < TEXT_NATIVE_FRAMES; i++) {
      put(&o, "    #");
      put_u64(&o, i);
      put_c(&o, ' ');
      put_clean(&o, e->native[i] ? e->native[i] : "?");
      put_c(&o, '\n');
    }
    if (nn > TEXT_NATIVE_FRAMES) {
      put(&o, "    ... (");
      put_u64(&o, nn - TEXT_NATIVE_FRAMES);
      put(&o, " more frames in the log)\n");
    }
  }
  return out_finish(&o);
}

/* ---- capture -------------------------------------------------------------- */

size_t cg_capture_format_json(const cg_capture *c, uint64_t pid, const char *began, char *buf,
                              size_t cap) {
  out_t o = out_init(buf, cap);
  if (!c) {
    put(&o, "{\"v\":1,\"type\":\"error\",\"error\":\"no capture\"}\n");
    return out_finish(&o);
  }
  /* the record's time: when the capture ended, or now for one still open at exit */
  json_head(&o, "capture", pid, c->end_ns ? c->end_ns : realtime_ns());
  put_kv_u64(&o, "id", c->id);
  put_kv_hex(&o, "stream", c->stream);
  put_kv_str(&o, "mode", cg_capture_mode_name(c->mode));
  put_kv_u64(&o, "tid", c->tid);
  put_kv_str(&o, "status", cg_capture_status_name(c->status));
  put_kv_u64(&o, "begin_ns", c->begin_ns);
  put_kv_u64(&o, "end_ns", c->end_ns);
  put_kv_u64(&o, "events", c->events);
  put_kv_str(&o, "began", began ? began : "");
  put(&o, "}\n");
  return out_finish(&o);
}

/* ---- summary -------------------------------------------------------------- */

size_t cg_summary_format_json(const cg_summary *s, char *buf, size_t cap) {
  out_t o = out_init(buf, cap);
  if (!s) {
    put(&o, "{\"v\":1,\"type\":\"error\",\"error\":\"no summary\"}\n");
    return out_finish(&o);
  }
  json_head(&o, "summary", s->pid, realtime_ns());
  put_kv_u64(&o, "captures", s->captures_begun);
  put_kv_u64(&o, "captures_broken", s->captures_broken);
  put(&o, ",\"events\":{");
  for (int k = 0; k < CG_EV_KIND_COUNT; k++) {
    if (k) put_c(&o, ',');
    put_jstr(&o, cg_event_kind_name((cg_event_kind)k));
    put_c(&o, ':');
    put_u64(&o, s->events[k]);
  }
  put(&o, "},\"verdicts\":{");
  for (int v = 0; v < CG_VERDICT_COUNT; v++) {
    if (v) put_c(&o, ',');
    put_jstr(&o, cg_verdict_name((cg_verdict)v));
    put_c(&o, ':');
    put_u64(&o, s->verdicts[v]);
  }
  put_c(&o, '}');
  put_kv_u64(&o, "primed_loaded", s->primed_loaded);
  put_kv_u64(&o, "primed_served", s->primed_served);
  put_kv_u64(&o, "primed_unused", s->primed_unused);
  put_kv_u64(&o, "recorded", s->recorded);
  if (s->device_sm) put_kv_u64(&o, "device_sm", s->device_sm);
  if (s->primed_skipped_arch) {
    put_kv_u64(&o, "primed_skipped_arch", s->primed_skipped_arch);
    put_kv_u64(&o, "skipped_sm", s->skipped_sm);
  }
  put_kv_str(&o, "log", s->log_path ? s->log_path : "");
  put(&o, "}\n");
  return out_finish(&o);
}

size_t cg_summary_format_text(const cg_summary *s, char *buf, size_t cap) {
  out_t o = out_init(buf, cap);
  if (!s) {
    put(&o, "capguard: (no summary)\n");
    return out_finish(&o);
  }
  put(&o, "capguard: ");
  put_u64(&o, s->captures_begun);
  put(&o, s->captures_begun == 1 ? " capture" : " captures");
  if (s->captures_broken) {
    put(&o, " (");
    put_u64(&o, s->captures_broken);
    put(&o, " broken)");
  }
  put(&o, ", ");
  bool any = false;
  for (int k = 0; k < CG_EV_KIND_COUNT; k++) {
    if (!s->events[k]) continue;
    put(&o, any ? ", " : "events: ");
    put_u64(&o, s->events[k]);
    put_c(&o, ' ');
    put(&o, cg_event_kind_name((cg_event_kind)k));
    any = true;
  }
  if (!any) put(&o, "no events");
  if (any) { /* what became of them: did anything actually break? */
    bool first = true;
    for (int v = 0; v < CG_VERDICT_COUNT; v++) {
      if (!s->verdicts[v]) continue;
      put(&o, first ? " (" : ", ");
      put_u64(&o, s->verdicts[v]);
      put_c(&o, ' ');
      put(&o, cg_verdict_name((cg_verdict)v));
      first = false;
    }
    if (!first) put_c(&o, ')');
  }
  if (s->primed_loaded || s->primed_served || s->primed_unused || s->recorded) {
    put(&o, "; priming: ");
    put_u64(&o, s->primed_loaded);
    put(&o, " preloaded, ");
    put_u64(&o, s->primed_served);
    put(&o, " served, ");
    put_u64(&o, s->primed_unused);
    put(&o, " unused, ");
    put_u64(&o, s->recorded);
    put(&o, " recorded");
  }
  if (s->primed_skipped_arch) {
    put(&o, s->primed_loaded || s->primed_served || s->primed_unused || s->recorded ? ", " : "; priming: ");
    put_u64(&o, s->primed_skipped_arch);
    put(&o, " skipped: built for sm_");
    put_u64(&o, s->skipped_sm);
    put(&o, ", this device is sm_");
    put_u64(&o, s->device_sm);
    put(&o, " (learn the priming file on this GPU architecture)");
  }
  if (s->log_path) {
    put(&o, "; log: ");
    put_clean(&o, s->log_path);
  } else {
    put(&o, "; no log (set CAPGUARD_LOG=path)");
  }
  put_c(&o, '\n');
  return out_finish(&o);
}

size_t cg_json_escape(const char *s, char *buf, size_t cap) {
  out_t o = out_init(buf, cap);
  put_escaped(&o, s);
  return out_finish(&o);
}
