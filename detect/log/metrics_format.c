#include "capguard/metrics_format.h"

#include "capguard/text_out.h"

#include <string.h>

/* The length of the valid UTF-8 sequence at s (1 to 4), 0 when the bytes
 * there are none (a stray continuation byte, a character cut short, an
 * overlong form, a surrogate, past U+10FFFF). */
static size_t utf8_length(const unsigned char *s) {
  unsigned c = s[0];
  size_t n = c < 0x80 ? 1 : (c & 0xe0) == 0xc0 ? 2 : (c & 0xf0) == 0xe0 ? 3 : (c & 0xf8) == 0xf0 ? 4 : 0;
  if (n == 0 || (n == 2 && c < 0xc2) || (n == 4 && c > 0xf4))
    return 0;
  for (size_t i = 1; i < n; i++)
    if ((s[i] & 0xc0) != 0x80)
      return 0;
  if ((n == 3 && c == 0xe0 && s[1] < 0xa0) || (n == 3 && c == 0xed && s[1] >= 0xa0) ||
      (n == 4 && c == 0xf0 && s[1] < 0x90) || (n == 4 && c == 0xf4 && s[1] >= 0x90))
    return 0;
  return n;
}

/* A label value: valid UTF-8, each byte that is not replaced by U+FFFD (a
 * program name the kernel cut mid-character, a host name in another
 * encoding: promtool and node_exporter reject the whole file otherwise);
 * backslash, double quote and newline escaped, as the exposition format
 * asks; nothing dropped. */
static void put_label_value(cg_out *o, const char *s) {
  for (const unsigned char *p = (const unsigned char *)s; *p;) {
    size_t n = utf8_length(p);
    if (n == 0) {
      cg_out_str(o, "\xef\xbf\xbd");
      p++;
    } else if (*p == '\\' || *p == '"') {
      cg_out_char(o, '\\');
      cg_out_char(o, (char)*p++);
    } else if (*p == '\n') {
      cg_out_str(o, "\\n");
      p++;
    } else {
      for (; n; n--)
        cg_out_char(o, (char)*p++);
    }
  }
}

static void put_label(cg_out *o, bool *first, const char *name, const char *value) {
  if (!value || !*value)
    return;
  cg_out_str(o, *first ? "{" : ",");
  *first = false;
  cg_out_str(o, name);
  cg_out_str(o, "=\"");
  put_label_value(o, value);
  cg_out_char(o, '"');
}

static void put_label_u64(cg_out *o, bool *first, const char *name, uint64_t v) {
  char digits[24];
  cg_out d = cg_out_init(digits, sizeof digits);
  cg_out_u64(&d, v);
  cg_out_finish(&d);
  put_label(o, first, name, digits);
}

/* The labels every series carries, then one of its own (extra_name NULL:
 * none), then the value. */
static void put_sample(const cg_metrics *m, cg_out *o, const char *name, const char *extra_name,
                       const char *extra_value, uint64_t whole, uint64_t nanos) {
  cg_out_str(o, name);
  bool first = true;
  put_label(o, &first, "host", m->host);
  put_label_u64(o, &first, "pid", m->sum->pid);
  put_label(o, &first, "program", m->program);
  if (m->sum->rank_known)
    put_label_u64(o, &first, "rank", m->sum->rank);
  put_label(o, &first, "mode", m->mode);
  if (m->driver_version > 0)
    put_label_u64(o, &first, "driver_version", (uint64_t)m->driver_version);
  if (m->sm) {
    char arch[16];
    cg_out a = cg_out_init(arch, sizeof arch);
    cg_out_str(&a, "sm_");
    cg_out_u64(&a, m->sm);
    cg_out_finish(&a);
    put_label(o, &first, "gpu_arch", arch);
  }
  if (extra_name)
    put_label(o, &first, extra_name, extra_value);
  if (!first)
    cg_out_char(o, '}');
  cg_out_char(o, ' ');
  cg_out_u64(o, whole);
  if (nanos != UINT64_MAX) { /* seconds: nine decimals, as many as the clock has */
    char frac[10];
    for (int i = 8; i >= 0; i--, nanos /= 10)
      frac[i] = (char)('0' + nanos % 10);
    frac[9] = 0;
    cg_out_char(o, '.');
    cg_out_str(o, frac);
  }
  cg_out_char(o, '\n');
}

static void put_family(cg_out *o, const char *name, const char *type, const char *help) {
  cg_out_str(o, "# HELP ");
  cg_out_str(o, name);
  cg_out_char(o, ' ');
  cg_out_str(o, help);
  cg_out_str(o, "\n# TYPE ");
  cg_out_str(o, name);
  cg_out_char(o, ' ');
  cg_out_str(o, type);
  cg_out_char(o, '\n');
}

static void put_counter(const cg_metrics *m, cg_out *o, const char *name, const char *help, uint64_t v) {
  put_family(o, name, "counter", help);
  put_sample(m, o, name, NULL, NULL, v, UINT64_MAX);
}

static void put_seconds(const cg_metrics *m, cg_out *o, const char *name, const char *type, const char *help,
                        uint64_t ns) {
  put_family(o, name, type, help);
  put_sample(m, o, name, NULL, NULL, ns / 1000000000u, ns % 1000000000u);
}

size_t cg_metrics_format(const cg_metrics *m, char *buf, size_t cap) {
  cg_out o = cg_out_init(buf, cap);
  if (!m || !m->sum)
    return cg_out_finish(&o);
  const cg_summary *s = m->sum;
  put_counter(m, &o, "capguard_captures_total", "CUDA graph captures begun.", s->captures_begun);
  put_counter(m, &o, "capguard_captures_broken_total", "Captures whose end failed (no graph).",
              s->captures_broken);
  put_seconds(m, &o, "capguard_capture_seconds_total", "counter",
              "Wall time spent inside captures that ended, in seconds.", s->capture_ns);
  put_counter(m, &o, "capguard_request_path_loads_total",
              "Module and library loads made after serving began (each cost a request its latency).",
              s->request_loads);
  put_seconds(m, &o, "capguard_request_path_load_seconds_total", "counter",
              "Time spent in the load calls made after serving began, in seconds.", s->request_load_ns);
  if (s->first_capture_ns && s->first_replay_ns >= s->first_capture_ns)
    put_seconds(m, &o, "capguard_first_replay_seconds", "gauge",
                "Time from the first capture's begin to the first graph launch, in seconds.",
                s->first_replay_ns - s->first_capture_ns);
  /* The four fates of a load made while a capture prohibited the thread;
   * every one is written, 0 included, so that a rate() never lacks a series. */
  static const cg_verdict fates[] = {CG_VERDICT_SERVED, CG_VERDICT_REFUSED, CG_VERDICT_ALLOWED,
                                     CG_VERDICT_RESCUED};
  put_family(&o, "capguard_loads_during_capture_total", "counter",
             "Module and library loads made during capture, by what became of them.");
  for (size_t i = 0; i < sizeof fates / sizeof fates[0]; i++)
    put_sample(m, &o, "capguard_loads_during_capture_total", "verdict", cg_verdict_name(fates[i]),
               m->loads[fates[i]], UINT64_MAX);
  if (m->n_refusals) {
    put_family(&o, "capguard_refusals_total", "counter",
               "Calls refused during capture (by the driver, or by capguard emulating one), by call.");
    for (size_t i = 0; i < m->n_refusals; i++)
      put_sample(m, &o, "capguard_refusals_total", "call", m->refusals[i].call, m->refusals[i].n, UINT64_MAX);
  }
  if (m->prime.read) {
    put_family(&o, "capguard_prime_images", "gauge", "Images in the priming file this process read.");
    put_sample(m, &o, "capguard_prime_images", NULL, NULL, m->prime.images, UINT64_MAX);
    put_family(&o, "capguard_prime_images_usable", "gauge",
               "Images of the priming file built for this GPU's architecture (loadable here).");
    put_sample(m, &o, "capguard_prime_images_usable", NULL, NULL, m->prime.usable, UINT64_MAX);
    put_counter(m, &o, "capguard_prime_loads_served_total", "Loads during capture served from the priming file.",
                m->prime.served);
    put_family(&o, "capguard_prime_cannot_serve", "gauge",
               "1 when the priming file cannot serve this process, by why: arch, format or program.");
    static const char reasons[][8] = {"arch", "format", "program"};
    for (size_t i = 0; i < sizeof reasons / sizeof reasons[0]; i++) /* each written, as the verdicts are */
      put_sample(m, &o, "capguard_prime_cannot_serve", "reason", reasons[i],
                 m->prime.cannot_serve && !strcmp(m->prime.cannot_serve, reasons[i]), UINT64_MAX);
  }
  put_counter(m, &o, "capguard_escapes_total",
              "Work that escaped a capture: run at once outside the graph, or captured from pageable memory.",
              s->verdicts[CG_VERDICT_ESCAPED]);
  put_counter(m, &o, "capguard_stale_reads_total",
              "Graph execs reading memory freed under them (CAPGUARD_STALE): one per exec and allocation.",
              m->stale_reads);
  return cg_out_finish(&o);
}
