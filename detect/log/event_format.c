/* Rendering of events, captures and the process summary: the text a person
 * reads on stderr, and the JSON Lines of docs/log-format.md. Every function
 * follows the snprintf contract (returns the length it needed, writes at most
 * cap bytes, NUL-terminates whenever cap > 0) and allocates nothing, so it is
 * safe inside the shim. Strings from the process (kernel names, file names,
 * stack frames) are untrusted: JSON gets them escaped and made valid UTF-8,
 * text gets control characters replaced so they cannot drive a terminal. */
#include "capguard/event.h"
#include "capguard/char_class.h"

#include <string.h>

#include "capguard/clock.h"
#include "capguard/log_keys.h"
#include "capguard/text_out.h"

/* At most this many native frames in the text (event.h); the JSON keeps them all. */
#define TEXT_NATIVE_FRAMES CG_TEXT_NATIVE_FRAMES
/* At most this many kernel names in the text line. */
#define TEXT_KERNELS 8

/* 13000 -> "13.0", 12020 -> "12.2" (CUDA's 1000 * major + 10 * minor) */
static void put_cuda_version(cg_out *o, int v) {
  cg_out_int(o, v / 1000);
  cg_out_char(o, '.');
  cg_out_int(o, (v % 1000) / 10);
}


/* JSON string body of s[0..n): quotes, backslash and control characters
 * escaped, each byte that is not part of valid UTF-8 replaced by U+FFFD. */
static void put_escaped_n(cg_out *o, const char *s, size_t n) {
  static const char hex[] = "0123456789abcdef";
  const unsigned char *p = (const unsigned char *)s, *end = p + n;
  while (p < end) {
    unsigned c = *p;
    if (c == '"' || c == '\\') {
      cg_out_char(o, '\\');
      cg_out_char(o, (char)c);
      p++;
    } else if (c < 0x20) {
      switch (c) {
      case '\n': cg_out_str(o, "\\n"); break;
      case '\r': cg_out_str(o, "\\r"); break;
      case '\t': cg_out_str(o, "\\t"); break;
      case '\b': cg_out_str(o, "\\b"); break;
      case '\f': cg_out_str(o, "\\f"); break;
      default: {
        char u[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};
        cg_out_mem(o, u, 6);
      }
      }
      p++;
    } else if (c < 0x80) {
      /* A run of printable ASCII, the most of any name or path: one copy. */
      const unsigned char *q = p + 1;
      while (q < end && *q >= 0x20 && *q < 0x80 && *q != '"' && *q != '\\')
        q++;
      cg_out_mem(o, (const char *)p, (size_t)(q - p));
      p = q;
    } else {
      size_t k = cg_utf8_len(p, (size_t)(end - p));
      if (k == 0) {
        cg_out_str(o, "\xEF\xBF\xBD");
        p++;
      } else {
        cg_out_mem(o, (const char *)p, k);
        p += k;
      }
    }
  }
}

/* The same for a NUL-terminated string; NULL writes nothing. */
static void put_escaped(cg_out *o, const char *s) {
  if (s) put_escaped_n(o, s, strlen(s));
}

static void put_jstr(cg_out *o, const char *s) {
  cg_out_char(o, '"');
  put_escaped(o, s);
  cg_out_char(o, '"');
}

/* A string from the process as a JSON string, cut after CG_RECORD_FIELD_MAX
 * bytes (on a character boundary) with a visible mark saying how much was
 * left out, so that a record stays whole and bounded: a 20,000-byte
 * CAPGUARD_RUN or an argv of control characters (six bytes each, escaped)
 * must not push the record past its buffer and lose it. more: the text was
 * already cut before it came here (how much is unknown). */
static void put_jstr_cut(cg_out *o, const char *s, size_t n, bool more) {
  size_t keep = n;
  if (keep > CG_RECORD_FIELD_MAX) {
    keep = CG_RECORD_FIELD_MAX;
    while (keep && ((unsigned char)s[keep] & 0xC0) == 0x80) /* not inside a UTF-8 character */
      keep--;
  }
  cg_out_char(o, '"');
  put_escaped_n(o, s, keep);
  if (keep < n) {
    cg_out_str(o, CG_CUT_MARK);
    cg_out_u64(o, n - keep);
    cg_out_str(o, more ? "+ bytes]" : " bytes]");
  } else if (more) {
    cg_out_str(o, CG_CUT_MARK "more bytes]");
  }
  cg_out_char(o, '"');
}

/* ,"key": */
static void put_key(cg_out *o, const char *key) {
  char k[64];
  size_t n = strlen(key);
  if (n > sizeof k - 4) { /* no key is this long; kept whole all the same */
    cg_out_str(o, ",\"");
    cg_out_str(o, key);
    cg_out_str(o, "\":");
    return;
  }
  k[0] = ',';
  k[1] = '"';
  memcpy(k + 2, key, n);
  k[n + 2] = '"';
  k[n + 3] = ':';
  cg_out_mem(o, k, n + 4); /* one copy: a record has tens of keys */
}

static void put_kv_str(cg_out *o, const char *key, const char *v) {
  put_key(o, key);
  put_jstr(o, v);
}

static void put_kv_u64(cg_out *o, const char *key, uint64_t v) {
  put_key(o, key);
  cg_out_u64(o, v);
}

static void put_kv_int(cg_out *o, const char *key, long long v) {
  put_key(o, key);
  cg_out_int(o, v);
}

static void put_kv_hex(cg_out *o, const char *key, uint64_t v) {
  put_key(o, key);
  cg_out_char(o, '"');
  cg_out_hex(o, v);
  cg_out_char(o, '"');
}

/* Text from the process for a terminal: control characters become '?'. */
static void put_clean(cg_out *o, const char *s) {
  if (!s) return;
  for (; *s; s++) cg_out_char(o, cg_is_control((unsigned char)*s) ? '?' : *s);
}

/* {"v":1,"type":"...","pid":N */
static void json_type_pid(cg_out *o, cg_record_type type, uint64_t pid) {
  cg_out_str(o, "{\"" CG_KEY_V "\":1,\"" CG_KEY_TYPE "\":\"");
  cg_out_str(o, cg_record_type_name(type));
  cg_out_char(o, '"');
  put_kv_u64(o, CG_KEY_PID, pid);
}

static void json_head(cg_out *o, cg_record_type type, uint64_t pid, uint64_t time_ns) {
  json_type_pid(o, type, pid);
  put_kv_u64(o, CG_KEY_TIME_NS, time_ns);
}

static void put_hash(cg_out *o, cg_hash128 h) {
  char tmp[33];
  cg_hash_format(h, tmp);
  cg_out_mem(o, tmp, 32);
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

static void put_image_json(cg_out *o, const cg_image_info *im) {
  cg_out_str(o, ",\"" CG_KEY_IMAGE "\":{\"" CG_KEY_KIND "\":");
  put_jstr(o, cg_image_kind_name(im->kind));
  put_kv_u64(o, CG_KEY_SIZE, im->size);
  put_kv_u64(o, CG_KEY_SM, im->sm_arch);
  cg_out_str(o, ",\"" CG_KEY_ARCHS "\":[");
  for (unsigned i = 0; i < clamp_archs(im); i++) {
    if (i) cg_out_char(o, ',');
    cg_out_u64(o, im->archs[i]);
  }
  cg_out_str(o, "],\"" CG_KEY_HASH "\":\"");
  put_hash(o, im->hash);
  cg_out_str(o, "\",\"" CG_KEY_KERNELS "\":[");
  size_t pos = 0;
  unsigned seen = 0;
  for (const char *k; (k = next_kernel(im, &pos, &seen));) {
    if (seen > 1) cg_out_char(o, ',');
    put_jstr(o, k);
  }
  /* a walk cut short by a corrupt buffer also lost names */
  bool truncated = im->names_truncated || seen < im->n_kernels;
  cg_out_str(o, "],\"" CG_KEY_KERNELS_TRUNCATED "\":");
  cg_out_str(o, truncated ? "true" : "false");
  if (im->kind == CG_IMAGE_UNKNOWN && im->why_unknown) put_kv_str(o, CG_KEY_WHY_UNKNOWN, im->why_unknown);
  cg_out_char(o, '}');
}

/* ,"stale":{...}: the graph exec and the allocation it reads. */
static void put_stale_json(cg_out *o, const cg_stale_read_info *s) {
  put_key(o, CG_KEY_STALE);
  cg_out_str(o, "{\"" CG_KEY_EXEC "\":\"");
  cg_out_hex(o, s->exec);
  cg_out_char(o, '"');
  put_kv_hex(o, CG_KEY_START, s->start);
  put_kv_u64(o, CG_KEY_SIZE, s->size);
  put_kv_u64(o, CG_KEY_BUFFER_ID, s->buffer_id);
  put_kv_u64(o, CG_KEY_NOW_BUFFER_ID, s->now_buffer_id);
  put_kv_str(o, CG_KEY_KERNEL, s->kernel ? s->kernel : "");
  put_kv_u64(o, CG_KEY_NODE, s->node);
  put_kv_int(o, CG_KEY_ARG, s->arg);
  put_kv_u64(o, CG_KEY_READS, s->reads);
  put_key(o, CG_KEY_BY_HAND);
  cg_out_str(o, s->by_hand ? "true" : "false");
  if (s->piece)
    cg_out_str(o, ",\"" CG_KEY_PIECE "\":true");
  cg_out_char(o, '}');
}

/* ,"hang":{...}: the launch or call not done after CAPGUARD_HANG_S. */
static void put_hang_json(cg_out *o, const cg_hang_info *h) {
  put_key(o, CG_KEY_HANG);
  cg_out_str(o, "{\"" CG_KEY_EXEC "\":\"");
  cg_out_hex(o, h->exec);
  cg_out_char(o, '"');
  put_kv_u64(o, CG_KEY_LAUNCHES, h->launches);
  put_kv_u64(o, CG_KEY_WAITED_NS, h->waited_ns);
  put_kv_u64(o, CG_KEY_COLLECTIVES, h->collectives);
  put_kv_u64(o, CG_KEY_KERNEL_NODES, h->kernel_nodes);
  put_kv_str(o, CG_KEY_COLLECTIVE, h->collective ? h->collective : "");
  put_kv_u64(o, CG_KEY_EXECS, h->execs);
  put_kv_str(o, CG_KEY_WHERE, h->where ? h->where : "");
  cg_out_char(o, '}');
}

size_t cg_event_format_json(const cg_event *e, char *buf, size_t cap) {
  cg_out o = cg_out_init(buf, cap);
  if (!e) {
    cg_out_str(&o, "{\"" CG_KEY_V "\":1,\"" CG_KEY_TYPE "\":\"error\",\"" CG_KEY_ERROR "\":\"no event\"}\n");
    return cg_out_finish(&o);
  }
  json_head(&o, CG_RECORD_EVENT, e->pid, e->time_ns);
  put_kv_str(&o, CG_KEY_EVENT, cg_event_kind_name(e->kind));
  put_kv_str(&o, CG_KEY_CALL, e->call ? e->call : "");
  put_kv_str(&o, CG_KEY_VERDICT, cg_verdict_name(e->verdict));
  put_kv_int(&o, CG_KEY_RESULT, e->result);
  put_kv_int(&o, CG_KEY_DRIVER_RESULT, e->driver_result);
  put_kv_int(&o, CG_KEY_DRIVER_VERSION, e->driver_version);
  put_kv_int(&o, CG_KEY_EMULATE_DRIVER, e->emulated_version);
  put_kv_u64(&o, CG_KEY_TID, e->tid);
  put_kv_str(&o, CG_KEY_THREAD_MODE, cg_capture_mode_name(e->thread_mode));
  if (e->thread_name) put_kv_str(&o, CG_KEY_THREAD_NAME, e->thread_name);
  if (e->nccl_setup) put_kv_str(&o, CG_KEY_NCCL_SETUP, e->nccl_setup);
  if (e->with_options) cg_out_str(&o, ",\"" CG_KEY_OPTIONS "\":true");
  if (e->load_options && *e->load_options) put_kv_str(&o, CG_KEY_LOAD_OPTIONS, e->load_options);
  if (e->options_foreign) put_kv_str(&o, CG_KEY_OPTIONS_FOREIGN, e->options_foreign);
  if (e->options_differ && *e->options_differ) put_kv_str(&o, CG_KEY_OPTIONS_DIFFER, e->options_differ);
  cg_out_str(&o, ",\"" CG_KEY_CAPTURE "\":{\"" CG_KEY_ID "\":");
  cg_out_u64(&o, e->capture.id);
  put_kv_hex(&o, CG_KEY_STREAM, e->capture.stream);
  put_kv_str(&o, CG_KEY_MODE, cg_capture_mode_name(e->capture.mode));
  put_kv_u64(&o, CG_KEY_TID, e->capture.tid);
  put_kv_str(&o, CG_KEY_STATUS, cg_capture_status_name(e->capture.status));
  put_kv_str(&o, CG_KEY_BEGAN, e->capture_began ? e->capture_began : "");
  cg_out_char(&o, '}');
  put_kv_u64(&o, CG_KEY_PROHIBITORS, e->n_prohibitors);
  if (e->module) put_kv_hex(&o, CG_KEY_MODULE, e->module);
  if (e->has_handle) put_kv_hex(&o, CG_KEY_HANDLE, e->handle);
  {
    int code = e->driver_result >= 0 ? e->driver_result : e->result;
    const char *meaning = code ? cg_cuda_result_words(code) : NULL; /* success needs no words */
    if (meaning) put_kv_str(&o, CG_KEY_MEANING, meaning);
  }
  if (e->image) put_image_json(&o, e->image);
  if (e->stale) put_stale_json(&o, e->stale);
  if (e->hang) put_hang_json(&o, e->hang);
  if (e->kind == CG_EV_REQUEST_LOAD) {
    put_kv_u64(&o, CG_KEY_LOAD_NS, e->load_ns);
    put_kv_u64(&o, CG_KEY_AFTER_SERVING_NS, e->after_serving_ns);
    if (e->provisional) cg_out_str(&o, ",\"" CG_KEY_PROVISIONAL "\":true");
    if (e->image_object) {
      cg_out_str(&o, ",\"" CG_KEY_IMAGE_SOURCE "\":{\"" CG_KEY_OBJECT "\":");
      put_jstr(&o, e->image_object);
      put_kv_u64(&o, CG_KEY_OFFSET, e->image_offset);
      cg_out_char(&o, '}');
    }
  }
  cg_out_str(&o, ",\"" CG_KEY_NATIVE_STACK "\":[");
  for (size_t i = 0; i < clamp_native(e); i++) {
    if (i) cg_out_char(&o, ',');
    put_jstr(&o, e->native[i] ? e->native[i] : "");
  }
  cg_out_str(&o, "],\"" CG_KEY_PYTHON_STACK "\":[");
  for (size_t i = 0; i < clamp_py(e); i++) {
    if (i) cg_out_char(&o, ',');
    cg_out_str(&o, "{\"" CG_KEY_FILE "\":");
    put_jstr(&o, e->py[i].file ? e->py[i].file : "");
    put_kv_int(&o, CG_KEY_LINE, e->py[i].line);
    put_kv_str(&o, CG_KEY_FUNC, e->py[i].func ? e->py[i].func : "");
    cg_out_char(&o, '}');
  }
  cg_out_str(&o, "]}\n");
  return cg_out_finish(&o);
}

/* What happened to the call, after "...): " on the first text line. */
/* "900 operation not permitted when stream is capturing" */
static void put_result_words(cg_out *o, int code) {
  cg_out_int(o, code);
  const char *w = cg_cuda_result_words(code);
  if (w) {
    cg_out_char(o, ' ');
    cg_out_str(o, w);
  }
}

static void put_verdict_text(cg_out *o, const cg_event *e) {
  bool several = e->n_prohibitors > 1;
  const char *now_broken = several ? "; the captures are now broken" : "; the capture is now broken";
  int err = e->driver_result >= 0 ? e->driver_result : e->result;
  const char *said = cg_verdict_said(e->verdict); /* the verdicts whose sentence is fixed */
  if (said) {
    cg_out_str(o, said);
    return;
  }
  switch (e->verdict) {
  case CG_VERDICT_REFUSED:
    cg_out_str(o, "refused by the driver with error ");
    put_result_words(o, err);
    cg_out_str(o, now_broken);
    return;
  case CG_VERDICT_ALLOWED:
    cg_out_str(o, "allowed by this driver");
    if (e->kind != CG_EV_MODULE_LOAD)
      return;
    if (e->driver_version > 0) {
      cg_out_str(o, " (");
      put_cuda_version(o, e->driver_version);
      cg_out_str(o, " >= 12.3)");
    }
    cg_out_str(o, "; drivers before 12.3 refuse it");
    return;
  case CG_VERDICT_EMULATED:
    cg_out_str(o, "refused by capguard emulating driver ");
    put_cuda_version(o, e->emulated_version);
    cg_out_str(o, " (CAPGUARD_EMULATE_DRIVER=");
    cg_out_int(o, e->emulated_version);
    cg_out_str(o, ")");
    cg_out_str(o, now_broken);
    return;
  case CG_VERDICT_FAILED:
    cg_out_str(o, "the driver returned error ");
    put_result_words(o, err);
    return;
  case CG_VERDICT_ESCAPED:
    if (e->kind == CG_EV_PAGEABLE_COPY)
      cg_out_str(o, "captured with pageable host memory on one side: each replay of the graph copies "
                    "from or into that host memory as it is then, not now");
    else
      cg_out_str(o, "run now by the driver, outside the graph (only non-blocking streams capture): "
                    "replaying the graph will not do it");
    return;
  case CG_VERDICT_RESCUED:
    /* what was rescued, and by which setting: one reason, not all three */
    cg_out_str(o, "made in relaxed mode for this one call (");
    if (e->kind == CG_EV_MODULE_LOAD)
      cg_out_str(o, "CAPGUARD_RESCUE=1: a driver before 12.3 refuses a load during capture)");
    else if (e->kind == CG_EV_ALLOCATION)
      cg_out_str(o, "CAPGUARD_RESCUE=1: an allocation during capture breaks it)");
    else
      cg_out_str(o, "guard mode: a query of an event in no capture, from a thread a capture "
                    "prohibits)");
    return;
  case CG_VERDICT_BROKE:
    cg_out_str(o, "named by the driver's own log as the call that broke the capture, error ");
    put_result_words(o, err);
    cg_out_str(o, now_broken);
    return;
  default: /* a verdict with a fixed sentence (above), or none of the table's */
    break;
  }
  cg_out_str(o, "unknown verdict; result ");
  cg_out_int(o, e->result);
}

/* Each name in its display form where a demangler is given (kernel_name.h;
 * a template's instances, which then read alike, named once when listed one
 * after the other), cut at TEXT_KERNEL_CHARS. */
#define TEXT_KERNEL_CHARS 256
static void put_kernels_text(cg_out *o, const cg_image_info *im, cg_demangle_fn dm, const char *source) {
  cg_out_str(o, "  kernels: ");
  size_t pos = 0;
  unsigned seen = 0, shown = 0;
  char disp[TEXT_KERNEL_CHARS], prev[TEXT_KERNEL_CHARS] = "";
  for (const char *k; im && (k = next_kernel(im, &pos, &seen));) {
    if (shown == TEXT_KERNELS) break;
    if (dm) {
      cg_kernel_display_name(k, dm, disp, sizeof disp);
      if (shown && !strcmp(disp, prev)) continue;
      memcpy(prev, disp, sizeof prev);
      k = disp;
    }
    if (shown) cg_out_str(o, ", ");
    put_clean(o, k);
    shown++;
  }
  if (shown == 0 && source) { /* left compressed on the request path (cg_event's image_object) */
    cg_out_str(o, "(compressed: capguard report reads their names from ");
    put_clean(o, source);
    cg_out_str(o, ")\n");
    return;
  }
  if (shown == 0) {
    cg_out_str(o, "(names unavailable)\n");
    return;
  }
  if (im->n_kernels > shown) {
    cg_out_str(o, ", ... (");
    cg_out_u64(o, im->n_kernels);
    cg_out_str(o, " in all)");
  } else if (im->names_truncated) {
    cg_out_str(o, ", ...");
  }
  cg_out_char(o, '\n');
}

static void put_image_text(cg_out *o, const cg_image_info *im) {
  cg_out_str(o, "  image: ");
  cg_out_str(o, cg_image_kind_name(im->kind));
  if (im->kind == CG_IMAGE_UNKNOWN) {
    if (im->why_unknown) {
      cg_out_str(o, " (");
      put_clean(o, im->why_unknown);
      cg_out_str(o, ")");
    }
    cg_out_char(o, '\n');
    return;
  }
  cg_out_str(o, ", ");
  cg_out_u64(o, im->size);
  cg_out_str(o, " bytes");
  unsigned na = clamp_archs(im);
  if (na > 1) {
    cg_out_str(o, ", ");
    for (unsigned i = 0; i < na; i++) {
      if (i) cg_out_char(o, '/');
      cg_out_str(o, "sm_");
      cg_out_u64(o, im->archs[i]);
    }
  } else if (im->sm_arch) {
    cg_out_str(o, ", sm_");
    cg_out_u64(o, im->sm_arch);
  }
  if (im->kind == CG_IMAGE_FATBIN && im->has_ptx) cg_out_str(o, " +ptx");
  if (im->kind == CG_IMAGE_FATBIN && im->on_device) { /* which of them this GPU runs */
    cg_out_str(o, " (sm_");
    cg_out_u64(o, im->on_device);
    cg_out_str(o, " on this device)");
  }
  cg_out_str(o, ", xxh3 ");
  put_hash(o, im->hash);
  cg_out_char(o, '\n');
}

/* The Python and native stacks of an event's text. */
static void put_stacks_text(cg_out *o, const cg_event *e) {
  size_t npy = clamp_py(e);
  if (npy) {
    cg_out_str(o, "  python stack (most recent call first):\n");
    for (size_t i = 0; i < npy; i++) {
      cg_out_str(o, "    File \"");
      put_clean(o, e->py[i].file ? e->py[i].file : "?");
      cg_out_str(o, "\", line ");
      cg_out_int(o, e->py[i].line);
      cg_out_str(o, ", in ");
      put_clean(o, e->py[i].func ? e->py[i].func : "?");
      cg_out_char(o, '\n');
    }
  }
  size_t nn = clamp_native(e);
  if (nn) {
    cg_out_str(o, "  native stack:\n");
    for (size_t i = 0; i < nn && i < TEXT_NATIVE_FRAMES; i++) {
      cg_out_str(o, "    #");
      cg_out_u64(o, i);
      cg_out_char(o, ' ');
      put_clean(o, e->native[i] ? e->native[i] : "?");
      cg_out_char(o, '\n');
    }
    if (nn > TEXT_NATIVE_FRAMES) {
      cg_out_str(o, "    ... (");
      cg_out_u64(o, nn - TEXT_NATIVE_FRAMES);
      cg_out_str(o, " more frames in the log)\n");
    }
  }
}

/* A stale-pointer event's lines, up to the stacks: "capguard: cuMemFree_v2:
 * freed while graph exec 0x.. (captured at x.py:3 in f) reads it: kernel k,
 * argument 0", the memory, and what to do. */
static void put_stale_text(cg_out *o, const cg_event *e) {
  const cg_stale_read_info *s = e->stale;
  cg_out_str(o, "capguard: ");
  put_clean(o, e->call ? e->call : "(unknown call)");
  bool launch = e->kind == CG_EV_STALE_LAUNCH;
  cg_out_str(o, launch ? ": graph exec " : ": freed while graph exec ");
  cg_out_hex(o, s->exec);
  if (s->by_hand) {
    cg_out_str(o, " (built by hand, not captured)");
  } else {
    cg_out_str(o, " (captured at ");
    put_clean(o, e->capture_began && e->capture_began[0] ? e->capture_began : "an unknown site");
    cg_out_char(o, ')');
  }
  if (launch && s->piece)
    cg_out_str(o, s->now_buffer_id ? " reads a mapped piece mapped since its capture to another physical "
                                     "allocation: kernel "
                                   : " reads a mapped piece unmapped since its capture: kernel ");
  else if (launch)
    cg_out_str(o, s->now_buffer_id ? " reads memory freed since its capture and allocated again as another "
                                     "buffer: kernel "
                                   : " reads memory freed since its capture: kernel ");
  else
    cg_out_str(o, " reads it: kernel ");
  char disp[TEXT_KERNEL_CHARS];
  const char *k = s->kernel && s->kernel[0] ? s->kernel : "(name unknown)";
  if (e->demangle && s->kernel && s->kernel[0]) { /* as a load's kernels: the text's form */
    cg_kernel_display_name(k, e->demangle, disp, sizeof disp);
    k = disp;
  }
  put_clean(o, k);
  cg_out_str(o, ", argument ");
  cg_out_int(o, s->arg);
  cg_out_str(o, "\n  memory: ");
  cg_out_hex(o, s->start);
  cg_out_str(o, ", ");
  cg_out_u64(o, s->size);
  cg_out_str(o, s->piece ? " bytes mapped (cuMemMap), physical allocation " : " bytes, buffer ");
  cg_out_u64(o, s->buffer_id);
  if (launch && s->now_buffer_id) {
    cg_out_str(o, s->piece ? " (now physical allocation " : " (now buffer ");
    cg_out_u64(o, s->now_buffer_id);
    cg_out_char(o, ')');
  }
  if (s->reads > 1) {
    cg_out_str(o, "; ");
    cg_out_u64(o, s->reads);
    cg_out_str(o, " reads by this exec");
  }
  cg_out_char(o, '\n'); /* facts only: what to do is capguard report's (tools/meaning/findings.c) */
}

/* A duration as a person reads it: "840 us", "4.1 ms", "12.3 s". */
static void put_ms(cg_out *o, uint64_t ns) {
  if (ns < 1000000) {
    cg_out_u64(o, ns / 1000);
    cg_out_str(o, " us");
    return;
  }
  uint64_t unit = ns < 1000000000ull ? 1000000 : 1000000000ull; /* tenths, without floating point */
  cg_out_u64(o, ns / unit);
  cg_out_char(o, '.');
  cg_out_u64(o, ns / (unit / 10) % 10);
  cg_out_str(o, unit == 1000000 ? " ms" : " s");
}

/* "capguard: cuModuleLoadData on the request path, 12.3 s after serving
 * began: 4.1 ms in the driver" (served: "served from the priming file"). */
static void put_request_text(cg_out *o, const cg_event *e) {
  cg_out_str(o, "capguard: ");
  put_clean(o, e->call ? e->call : "(unknown call)");
  cg_out_str(o, " on the request path, ");
  put_ms(o, e->after_serving_ns);
  cg_out_str(o, e->provisional ? " after the first replay (serving began then, unless a capture follows)"
                               : " after serving began");
  if (e->verdict == CG_VERDICT_SERVED) {
    cg_out_str(o, ": served from the priming file in ");
  } else {
    cg_out_str(o, ": ");
  }
  put_ms(o, e->load_ns);
  cg_out_str(o, e->verdict == CG_VERDICT_SERVED ? "\n" : " in the load call\n");
}

/* A load's options, and why they kept it from being served: facts only
 * (the advice is the command's, findings.c). */
static void put_options_text(cg_out *o, const cg_event *e) {
  if (e->load_options && *e->load_options) {
    cg_out_str(o, "  load options: ");
    put_clean(o, e->load_options);
    cg_out_char(o, '\n');
  }
  if (e->options_foreign) {
    cg_out_str(o, "  not served: option ");
    put_clean(o, e->options_foreign);
    cg_out_str(o, " is not one capguard can reproduce (its value is the caller's memory, or unknown)\n");
  }
  if (e->options_differ && *e->options_differ) {
    cg_out_str(o, "  not served: its options differ from those recorded for these bytes: ");
    put_clean(o, e->options_differ);
    cg_out_char(o, '\n');
  }
}

size_t cg_event_format_text(const cg_event *e, char *buf, size_t cap) {
  cg_out o = cg_out_init(buf, cap);
  if (!e) {
    cg_out_str(&o, "capguard: (no event)\n");
    return cg_out_finish(&o);
  }
  if (e->stale) {
    put_stale_text(&o, e);
    put_stacks_text(&o, e);
    return cg_out_finish(&o);
  }
  if (e->kind == CG_EV_REQUEST_LOAD) {
    put_request_text(&o, e);
    put_kernels_text(&o, e->image, e->demangle, e->image_object);
    if (e->image) put_image_text(&o, e->image);
    put_options_text(&o, e);
    put_stacks_text(&o, e);
    return cg_out_finish(&o);
  }
  cg_out_str(&o, "capguard: ");
  put_clean(&o, e->call ? e->call : "(unknown call)");
  cg_out_str(&o, " during capture ");
  cg_out_u64(&o, e->capture.id);
  cg_out_str(&o, " (stream ");
  cg_out_hex(&o, e->capture.stream);
  cg_out_str(&o, ", ");
  cg_out_str(&o, cg_capture_mode_name(e->capture.mode));
  cg_out_str(&o, " mode, begun by thread ");
  cg_out_u64(&o, e->capture.tid);
  cg_out_str(&o, ")");
  if (e->n_prohibitors > 1) {
    cg_out_str(&o, " (+");
    cg_out_u64(&o, e->n_prohibitors - 1);
    cg_out_str(&o, e->n_prohibitors > 2 ? " more captures)" : " more capture)");
  }
  cg_out_str(&o, ": ");
  put_verdict_text(&o, e);
  cg_out_char(&o, '\n');

  if (e->thread_name) {
    /* not the capturing thread: a helper of a library's (NCCL's proxy, a
     * watchdog), caught by a global capture */
    cg_out_str(&o, "  made by thread ");
    cg_out_u64(&o, e->tid);
    cg_out_str(&o, " '");
    put_clean(&o, e->thread_name);
    cg_out_str(&o, "', not the capturing thread\n");
  }
  if (e->nccl_setup) {
    cg_out_str(&o, "  NCCL communicator set-up during capture (");
    put_clean(&o, e->nccl_setup);
    cg_out_str(&o, "): set the communicator up before capturing (an eager collective first)\n");
  }
  if (e->kind == CG_EV_MODULE_LOAD) put_kernels_text(&o, e->image, e->demangle, NULL);
  if (e->image) put_image_text(&o, e->image);
  put_options_text(&o, e);
  if (e->capture_began && e->capture_began[0]) {
    cg_out_str(&o, "  capture began: ");
    put_clean(&o, e->capture_began);
    cg_out_char(&o, '\n');
  }
  put_stacks_text(&o, e);
  return cg_out_finish(&o);
}

/* ---- capture -------------------------------------------------------------- */

static void put_offender_json(cg_out *o, const cg_offender *b) {
  cg_out_str(o, ",\"" CG_KEY_BROKEN_BY "\":");
  if (!b) {
    cg_out_str(o, "null");
    return;
  }
  cg_out_char(o, '{');
  put_jstr(o, CG_KEY_CALL);
  cg_out_char(o, ':');
  put_jstr(o, b->call ? b->call : "");
  put_kv_str(o, CG_KEY_EVENT, cg_event_kind_name(b->kind));
  put_kv_str(o, CG_KEY_VERDICT, cg_verdict_name(b->verdict));
  put_kv_int(o, CG_KEY_RESULT, b->result);
  put_kv_u64(o, CG_KEY_TID, b->tid);
  put_kv_u64(o, CG_KEY_TIME_NS, b->time_ns);
  put_kv_str(o, CG_KEY_PYTHON, b->python ? b->python : "");
  put_kv_str(o, CG_KEY_WHERE, b->where ? b->where : "");
  cg_out_char(o, '}');
}

size_t cg_capture_format_json(const cg_capture_record *r, char *buf, size_t cap) {
  cg_out o = cg_out_init(buf, cap);
  const cg_capture *c = r ? r->capture : NULL;
  if (!c) {
    cg_out_str(&o, "{\"" CG_KEY_V "\":1,\"" CG_KEY_TYPE "\":\"error\",\"" CG_KEY_ERROR "\":\"no capture\"}\n");
    return cg_out_finish(&o);
  }
  /* the record's time: when the capture ended, or now for one still open at exit */
  json_head(&o, CG_RECORD_CAPTURE, r->pid, c->end_ns ? c->end_ns : cg_now_ns());
  put_kv_u64(&o, CG_KEY_ID, c->id);
  put_kv_hex(&o, CG_KEY_STREAM, c->stream);
  put_kv_str(&o, CG_KEY_MODE, cg_capture_mode_name(c->mode));
  put_kv_u64(&o, CG_KEY_TID, c->tid);
  put_kv_str(&o, CG_KEY_STATUS, cg_capture_status_name(c->status));
  put_kv_u64(&o, CG_KEY_BEGIN_NS, c->begin_ns);
  put_kv_u64(&o, CG_KEY_END_NS, c->end_ns);
  put_kv_u64(&o, CG_KEY_EVENTS, c->events);
  put_kv_str(&o, CG_KEY_BEGAN, r->began ? r->began : "");
  if (r->ended)
    put_kv_int(&o, CG_KEY_END_RESULT, r->end_result);
  if (r->repeats)
    put_kv_u64(&o, CG_KEY_REPEATS, r->repeats);
  if (cg_capture_status_broken(c->status))
    put_offender_json(&o, r->broken_by);
  cg_out_str(&o, "}\n");
  return cg_out_finish(&o);
}

size_t cg_capture_format_broken_text(const cg_capture_record *r, char *buf, size_t cap) {
  cg_out o = cg_out_init(buf, cap);
  const cg_capture *c = r ? r->capture : NULL;
  if (!c) {
    cg_out_str(&o, "capguard: (no capture)\n");
    return cg_out_finish(&o);
  }
  cg_out_str(&o, "capguard: capture ");
  cg_out_u64(&o, c->id);
  cg_out_str(&o, " (stream ");
  cg_out_hex(&o, c->stream);
  cg_out_str(&o, ", ");
  cg_out_str(&o, cg_capture_mode_name(c->mode));
  if (r->began && r->began[0]) {
    cg_out_str(&o, ", began at ");
    put_clean(&o, r->began);
  }
  cg_out_str(&o, ") broke");
  if (r->ended && r->end_result) {
    cg_out_str(&o, " (its end returned ");
    put_result_words(&o, r->end_result);
    cg_out_char(&o, ')');
  }
  const cg_offender *b = r->broken_by;
  if (!b) {
    cg_out_str(&o, ": ");
    put_clean(&o, r->no_offender ? r->no_offender : "broken by a call capguard does not watch");
    cg_out_char(&o, '\n');
    return cg_out_finish(&o);
  }
  cg_out_str(&o, ": first offender ");
  put_clean(&o, b->call ? b->call : "(unknown call)");
  if (b->where && b->where[0]) {
    cg_out_str(&o, " at ");
    put_clean(&o, b->where);
  }
  cg_out_str(&o, " (");
  cg_out_str(&o, cg_verdict_name(b->verdict));
  cg_out_str(&o, ": ");
  put_result_words(&o, b->result);
  cg_out_str(&o, ", thread ");
  cg_out_u64(&o, b->tid);
  cg_out_str(&o, ")\n");
  return cg_out_finish(&o);
}

/* ---- summary -------------------------------------------------------------- */

size_t cg_summary_format_json(const cg_summary *s, char *buf, size_t cap) {
  cg_out o = cg_out_init(buf, cap);
  if (!s) {
    cg_out_str(&o, "{\"" CG_KEY_V "\":1,\"" CG_KEY_TYPE "\":\"error\",\"" CG_KEY_ERROR "\":\"no summary\"}\n");
    return cg_out_finish(&o);
  }
  json_head(&o, CG_RECORD_SUMMARY, s->pid, cg_now_ns());
  put_kv_u64(&o, CG_KEY_CAPTURES, s->captures_begun);
  put_kv_u64(&o, CG_KEY_CAPTURES_BROKEN, s->captures_broken);
  if (s->captures_open)
    put_kv_u64(&o, CG_KEY_CAPTURES_OPEN, s->captures_open);
  cg_out_str(&o, ",\"" CG_KEY_EVENTS "\":{");
  for (int k = 0; k < CG_EV_KIND_COUNT; k++) {
    if (k) cg_out_char(&o, ',');
    put_jstr(&o, cg_event_kind_name((cg_event_kind)k));
    cg_out_char(&o, ':');
    cg_out_u64(&o, s->events[k]);
  }
  cg_out_str(&o, "},\"" CG_KEY_VERDICTS "\":{");
  for (int v = 0; v < CG_VERDICT_COUNT; v++) {
    if (v) cg_out_char(&o, ',');
    put_jstr(&o, cg_verdict_name((cg_verdict)v));
    cg_out_char(&o, ':');
    cg_out_u64(&o, s->verdicts[v]);
  }
  cg_out_char(&o, '}');
  put_kv_u64(&o, CG_KEY_PRIMED_LOADED, s->primed_loaded);
  put_kv_u64(&o, CG_KEY_PRIMED_SERVED, s->primed_served);
  put_kv_u64(&o, CG_KEY_PRIMED_UNUSED, s->primed_unused);
  put_kv_u64(&o, CG_KEY_RECORDED, s->recorded);
  if (s->device_sm) put_kv_u64(&o, CG_KEY_DEVICE_SM, s->device_sm);
  if (s->primed_skipped_arch) {
    put_kv_u64(&o, CG_KEY_PRIMED_SKIPPED_ARCH, s->primed_skipped_arch);
    put_kv_u64(&o, CG_KEY_SKIPPED_SM, s->skipped_sm);
  }
  if (s->serving_began) cg_out_str(&o, ",\"" CG_KEY_SERVING_BEGAN "\":true");
  /* 0 included: the metrics file states the same series (cli-metrics) */
  put_kv_u64(&o, CG_KEY_REQUEST_LOADS, s->request_loads);
  put_kv_u64(&o, CG_KEY_REQUEST_LOAD_NS, s->request_load_ns);
  if (s->request_loads) put_kv_u64(&o, CG_KEY_FIRST_REQUEST_AFTER_NS, s->first_request_after_ns);
  put_kv_u64(&o, CG_KEY_CAPTURES_TIMED, s->captures_timed);
  put_kv_u64(&o, CG_KEY_CAPTURE_NS, s->capture_ns);
  if (s->first_capture_ns) put_kv_u64(&o, CG_KEY_FIRST_CAPTURE_NS, s->first_capture_ns);
  if (s->first_replay_ns) put_kv_u64(&o, CG_KEY_FIRST_REPLAY_NS, s->first_replay_ns);
  if (s->n_slowest) {
    cg_out_str(&o, ",\"" CG_KEY_SLOWEST "\":[");
    for (size_t i = 0; i < s->n_slowest && i < CG_SLOWEST_CAPTURES; i++) {
      cg_out_str(&o, i ? ",{" : "{");
      cg_out_str(&o, "\"" CG_KEY_ID "\":");
      cg_out_u64(&o, s->slowest[i].id);
      put_kv_u64(&o, CG_KEY_NS, s->slowest[i].ns);
      put_kv_str(&o, CG_KEY_BEGAN, s->slowest[i].began ? s->slowest[i].began : "");
      cg_out_char(&o, '}');
    }
    cg_out_char(&o, ']');
  }
  if (s->rank_known) {
    put_kv_u64(&o, CG_KEY_RANK, s->rank);
    if (s->world_size) put_kv_u64(&o, CG_KEY_WORLD_SIZE, s->world_size);
  }
  if (s->collective_execs) put_kv_u64(&o, CG_KEY_COLLECTIVE_EXECS, s->collective_execs);
  put_kv_str(&o, CG_KEY_LOG, s->log_path ? s->log_path : "");
  if (s->log_incomplete) {
    put_key(&o, CG_KEY_LOG_INCOMPLETE);
    cg_out_str(&o, "true");
  }
  cg_out_str(&o, "}\n");
  return cg_out_finish(&o);
}

/* ---- start and process ---------------------------------------------------- */

size_t cg_process_format_json(const cg_process_record *r, char *buf, size_t cap) {
  cg_out o = cg_out_init(buf, cap);
  if (!r) {
    cg_out_str(&o, "{\"" CG_KEY_V "\":1,\"" CG_KEY_TYPE "\":\"error\",\"" CG_KEY_ERROR "\":\"no process\"}\n");
    return cg_out_finish(&o);
  }
  bool process = r->type == CG_RECORD_PROCESS;
  /* the keys in the order the log has always had them */
  json_type_pid(&o, process ? CG_RECORD_PROCESS : CG_RECORD_START, r->pid);
  put_kv_u64(&o, CG_KEY_PPID, r->ppid);
  put_kv_u64(&o, CG_KEY_TIME_NS, r->time_ns);
  put_kv_str(&o, CG_KEY_MODE, cg_run_mode_name(r->mode));
  if (process) {
    put_kv_int(&o, CG_KEY_DRIVER_VERSION, r->driver_version);
    put_kv_int(&o, CG_KEY_EMULATE_DRIVER, r->emulate_driver);
  }
  put_kv_str(&o, CG_KEY_VERSION, r->version ? r->version : "");
  put_key(&o, CG_KEY_PRIME);
  put_jstr_cut(&o, r->prime ? r->prime : "", r->prime ? strlen(r->prime) : 0, false);
  if (r->run && *r->run) {
    put_key(&o, CG_KEY_RUN);
    put_jstr_cut(&o, r->run, strlen(r->run), false);
  }
  if (r->rank && r->rank->rank >= 0) {
    put_kv_int(&o, CG_KEY_RANK, r->rank->rank);
    if (r->rank->local_rank >= 0) put_kv_int(&o, CG_KEY_LOCAL_RANK, r->rank->local_rank);
    if (r->rank->world_size > 0) put_kv_int(&o, CG_KEY_WORLD_SIZE, r->rank->world_size);
  }
  cg_out_str(&o, ",\"" CG_KEY_ARGV "\":[");
  /* the words, up to CG_RECORD_MAX_ARGV, each ending at its NUL or the end;
   * when more are left than fit, the last place says so instead */
  size_t at = 0;
  for (unsigned w = 0; r->cmdline && at < r->cmdline_len && w < CG_RECORD_MAX_ARGV; w++) {
    const char *word = r->cmdline + at;
    const char *nul = memchr(word, '\0', r->cmdline_len - at);
    size_t n = nul ? (size_t)(nul - word) : r->cmdline_len - at;
    bool more_after = nul && (at + n + 1 < r->cmdline_len || r->cmdline_cut);
    if (w) cg_out_char(&o, ',');
    if (w == CG_RECORD_MAX_ARGV - 1 && more_after) {
      cg_out_str(&o, "\"" CG_CUT_MARK "more words]\"");
      break;
    }
    /* the last word of a command line read only in part is cut too */
    put_jstr_cut(&o, word, n, !nul && r->cmdline_cut);
    at += n + 1;
  }
  cg_out_str(&o, "]}\n");
  return cg_out_finish(&o);
}

size_t cg_summary_format_text(const cg_summary *s, char *buf, size_t cap) {
  cg_out o = cg_out_init(buf, cap);
  if (!s) {
    cg_out_str(&o, "capguard: (no summary)\n");
    return cg_out_finish(&o);
  }
  cg_out_str(&o, "capguard: ");
  cg_out_u64(&o, s->captures_begun);
  cg_out_str(&o, s->captures_begun == 1 ? " capture" : " captures");
  if (s->captures_broken || s->captures_open) {
    cg_out_str(&o, " (");
    if (s->captures_broken) {
      cg_out_u64(&o, s->captures_broken);
      cg_out_str(&o, " broken");
    }
    if (s->captures_open) {
      cg_out_str(&o, s->captures_broken ? ", " : "");
      cg_out_u64(&o, s->captures_open);
      cg_out_str(&o, " open at exit");
    }
    cg_out_char(&o, ')');
  }
  cg_out_str(&o, ", ");
  bool any = false;
  for (int k = 0; k < CG_EV_KIND_COUNT; k++) {
    if (!s->events[k]) continue;
    cg_out_str(&o, any ? ", " : "events: ");
    cg_out_u64(&o, s->events[k]);
    cg_out_char(&o, ' ');
    cg_out_str(&o, cg_event_kind_name((cg_event_kind)k));
    any = true;
  }
  if (!any) cg_out_str(&o, "no events");
  if (any) { /* what became of them: did anything actually break? */
    bool first = true;
    for (int v = 0; v < CG_VERDICT_COUNT; v++) {
      if (!s->verdicts[v]) continue;
      cg_out_str(&o, first ? " (" : ", ");
      cg_out_u64(&o, s->verdicts[v]);
      cg_out_char(&o, ' ');
      cg_out_str(&o, cg_verdict_name((cg_verdict)v));
      first = false;
    }
    if (!first) cg_out_char(&o, ')');
  }
  if (s->primed_loaded || s->primed_served || s->primed_unused || s->recorded) {
    cg_out_str(&o, "; priming: ");
    cg_out_u64(&o, s->primed_loaded);
    cg_out_str(&o, " preloaded, ");
    cg_out_u64(&o, s->primed_served);
    cg_out_str(&o, " served, ");
    cg_out_u64(&o, s->primed_unused);
    cg_out_str(&o, " unused, ");
    cg_out_u64(&o, s->recorded);
    cg_out_str(&o, " recorded");
  }
  if (s->primed_skipped_arch) {
    cg_out_str(&o, s->primed_loaded || s->primed_served || s->primed_unused || s->recorded ? ", " : "; priming: ");
    cg_out_u64(&o, s->primed_skipped_arch);
    cg_out_str(&o, " skipped: built for sm_");
    cg_out_u64(&o, s->skipped_sm);
    cg_out_str(&o, ", this device is sm_");
    cg_out_u64(&o, s->device_sm);
  }
  if (s->request_loads) {
    cg_out_str(&o, "; ");
    cg_out_u64(&o, s->request_loads);
    cg_out_str(&o, s->request_loads == 1 ? " load on the request path (" : " loads on the request path (");
    put_ms(&o, s->request_load_ns);
    cg_out_str(&o, ")");
  }
  if (s->collective_execs) {
    cg_out_str(&o, "; ");
    cg_out_u64(&o, s->collective_execs);
    cg_out_str(&o, s->collective_execs == 1 ? " graph exec holding collectives still alive"
                                            : " graph execs holding collectives still alive");
  }
  if (s->log_path) {
    cg_out_str(&o, "; log: ");
    put_clean(&o, s->log_path);
  } else if (s->secure) {
    cg_out_str(&o, "; no log (secure execution)");
  } else {
    cg_out_str(&o, "; no log (set CAPGUARD_LOG=path)");
  }
  cg_out_char(&o, '\n');
  return cg_out_finish(&o);
}

/* ---- ended: written by capguard run, not the shim ---------------------------- */

size_t cg_ended_format_json(uint64_t pid, uint64_t time_ns, int sig, char *buf, size_t cap) {
  cg_out o = cg_out_init(buf, cap);
  json_head(&o, CG_RECORD_ENDED, pid, time_ns);
  put_kv_int(&o, CG_KEY_SIGNAL, sig);
  cg_out_str(&o, "}\n");
  return cg_out_finish(&o);
}
