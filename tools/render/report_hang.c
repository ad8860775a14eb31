/* report_hang.h. Each hang is one sentence, with what to do where the
 * shim has a sentence for it (cg_hang_advice). */
#include "report_hang.h"
#include "html_text.h"

#include <stdlib.h>
#include <string.h>

#include "capguard/event.h"
#include "capguard/log_keys.h"
#include "hang_lineup.h"

static const char * or (const char *s, const char *dflt) { return s && *s ? s : dflt; }

/* Whether the log has anything to say about hangs. */
static bool any(const cgl_log *log) {
  for (size_t i = 0; i < log->n_hangs; i++)
    if (log->hangs[i].kind != CG_EV_LAUNCH_COUNT)
      return true;
  for (size_t p = 0; p < log->n_procs; p++)
    if (log->procs[p].collective_execs)
      return true;
  return false;
}

/* One hang event as a sentence. */
static void hang_words(const cgl_log *log, const cgl_hang *h, char *buf, size_t cap) {
  char who[64];
  cgm_hang_who(log, h->proc, who, sizeof who);
  bool unknown = h->kind == CG_EV_HANG_LAUNCH && h->kernel_nodes == 0;
  const char *advice = unknown ? "its kernels are not known, so whether it waits for a peer is not either"
                               : cg_hang_advice(h->kind, h->collectives == 0);
  if (h->kind == CG_EV_HANG_LAUNCH)
    snprintf(buf, cap,
             "%s (pid %lld): launch %lld of graph exec %s (capture %lld, captured at %s) not finished after "
             "%.1f s; %lld collective%s in it%s%s: %s",
             who, log->procs[h->proc].pid, h->launches, h->exec, h->capture_id,
             or (h->began, "an unknown site"), h->waited_ns / 1e9, h->collectives,
             h->collectives == 1 ? "" : "s", *h->collective ? ", " : "", h->collective, advice);
  else if (h->kind == CG_EV_HANG_TEARDOWN)
    snprintf(buf, cap,
             "%s (pid %lld): %s waited %.1f s (called from %s) while %lld graph exec%s holding "
             "collectives %s alive (the first captured at %s, capture %lld): %s",
             who, log->procs[h->proc].pid, h->call, h->waited_ns / 1e9, or (h->where, "?"), h->execs,
             h->execs == 1 ? "" : "s", h->execs == 1 ? "was" : "were", or (h->began, "an unknown site"),
             h->capture_id, advice);
  else if (h->kind == CG_EV_HANG_CAPTURE)
    snprintf(buf, cap, "%s (pid %lld): a capture open for %.1f s (thread %lld, begun at %s)", who,
             log->procs[h->proc].pid, h->waited_ns / 1e9, h->tid, or (h->began, "an unknown site"));
  else
    snprintf(buf, cap, "%s (pid %lld): %s waited %.1f s (called from %s)%s%s", who, log->procs[h->proc].pid,
             h->call, h->waited_ns / 1e9, or (h->where, "?"),
             h->capture_id ? "; the latest graph captured there began at " : "",
             h->capture_id ? or (h->began, "an unknown site") : "");
}

static void exit_words(const cgl_log *log, size_t p, char *buf, size_t cap) {
  char who[64];
  cgm_hang_who(log, p, who, sizeof who);
  long long n = log->procs[p].collective_execs;
  snprintf(buf, cap, "%s (pid %lld): %lld graph exec%s holding collectives still alive at exit: %s", who,
           log->procs[p].pid, n, n == 1 ? "" : "s", cg_hang_advice(CG_EV_HANG_TEARDOWN, false));
}

void cgr_print_hang_text(FILE *out, const cgl_log *log, cg_palette pal) {
  if (!any(log))
    return;
  char buf[2048];
  fprintf(out, "\n%sHangs (CAPGUARD_HANG_S)%s\n", pal.bold, pal.reset);
  cgm_lineup *l;
  size_t n = cgm_hang_lineup(log, &l);
  for (size_t i = 0; i < n; i++)
    fprintf(out, "  %s%s%s\n", l[i].busy ? "" : pal.red, l[i].text, l[i].busy ? "" : pal.reset);
  cgm_lineup_free(l, n);
  for (size_t i = 0; i < log->n_hangs; i++)
    if (log->hangs[i].kind != CG_EV_LAUNCH_COUNT) {
      hang_words(log, &log->hangs[i], buf, sizeof buf);
      fprintf(out, "  %s\n", buf);
    }
  for (size_t p = 0; p < log->n_procs; p++)
    if (log->procs[p].collective_execs) {
      exit_words(log, p, buf, sizeof buf);
      fprintf(out, "  %s\n", buf);
    }
}

static json_t *jtext(const char *s) { return cgl_json_text(s ? s : ""); }

json_t *cgr_hang_json(const cgl_log *log) {
  if (!any(log))
    return NULL;
  json_t *root = json_object(), *lineup = json_array(), *evs = json_array(), *alive = json_array();
  cgm_lineup *l;
  size_t n = cgm_hang_lineup(log, &l);
  for (size_t i = 0; i < n; i++)
    json_array_append_new(
        lineup, json_pack("{s:o, s:o, s:b}", "text", jtext(l[i].text), "behind_pid",
                          l[i].behind >= 0 ? json_integer(log->procs[l[i].behind].pid) : json_null(), "busy",
                          l[i].busy));
  cgm_lineup_free(l, n);
  char buf[2048];
  for (size_t i = 0; i < log->n_hangs; i++) {
    const cgl_hang *h = &log->hangs[i];
    if (h->kind == CG_EV_LAUNCH_COUNT)
      continue;
    hang_words(log, h, buf, sizeof buf);
    json_array_append_new(
        evs,
        json_pack("{s:s, s:I, s:o, s:o, s:I, s:o, s:I, s:I, s:I, s:o}", CG_KEY_EVENT,
                  cg_event_kind_name(h->kind), CG_KEY_PID, (json_int_t)log->procs[h->proc].pid, CG_KEY_CALL,
                  jtext(h->call), CG_KEY_EXEC, jtext(h->exec), CG_KEY_LAUNCHES, (json_int_t)h->launches,
                  CG_KEY_BEGAN, jtext(h->began), CG_KEY_COLLECTIVES, (json_int_t)h->collectives, CG_KEY_EXECS,
                  (json_int_t)h->execs, CG_KEY_WAITED_NS, (json_int_t)h->waited_ns, "text", jtext(buf)));
  }
  for (size_t p = 0; p < log->n_procs; p++)
    if (log->procs[p].collective_execs) {
      exit_words(log, p, buf, sizeof buf);
      json_array_append_new(alive, json_pack("{s:I, s:I, s:o}", CG_KEY_PID, (json_int_t)log->procs[p].pid,
                                             CG_KEY_COLLECTIVE_EXECS,
                                             (json_int_t)log->procs[p].collective_execs, "text", jtext(buf)));
    }
  json_object_set_new(root, "lineup", lineup);
  json_object_set_new(root, CG_KEY_EVENTS, evs);
  json_object_set_new(root, "alive_at_exit", alive);
  return root;
}

void cgr_print_hang_html(FILE *o, const cgl_log *log) {
  if (!any(log))
    return;
  char buf[2048];
  fputs("<h2>Hangs (CAPGUARD_HANG_S)</h2>\n<ul>\n", o);
  cgm_lineup *l;
  size_t n = cgm_hang_lineup(log, &l);
  for (size_t i = 0; i < n; i++) {
    fputs("<li><b>", o);
    cgr_html_text(o, l[i].text);
    fputs("</b></li>\n", o);
  }
  cgm_lineup_free(l, n);
  for (size_t i = 0; i < log->n_hangs; i++)
    if (log->hangs[i].kind != CG_EV_LAUNCH_COUNT) {
      hang_words(log, &log->hangs[i], buf, sizeof buf);
      fputs("<li>", o);
      cgr_html_text(o, buf);
      fputs("</li>\n", o);
    }
  for (size_t p = 0; p < log->n_procs; p++)
    if (log->procs[p].collective_execs) {
      exit_words(log, p, buf, sizeof buf);
      fputs("<li>", o);
      cgr_html_text(o, buf);
      fputs("</li>\n", o);
    }
  fputs("</ul>\n", o);
}

void cgr_hang_trace(json_t *evs, const cgl_log *log, long long t0) {
  for (size_t i = 0; i < log->n_hangs; i++) {
    const cgl_hang *h = &log->hangs[i];
    double ts = h->time_ns > t0 ? (double)(h->time_ns - t0) / 1000.0 : 0;
    json_array_append_new(
        evs, json_pack("{s:s, s:s, s:s, s:s, s:f, s:I, s:I, s:{s:o, s:o, s:I, s:I, s:o}}", "ph", "i", "s",
                       "p", "cat", "hang", "name", cg_event_kind_name(h->kind), "ts", ts, "pid",
                       (json_int_t)log->procs[h->proc].pid, "tid", (json_int_t)h->tid, "args", CG_KEY_CALL,
                       jtext(h->call), CG_KEY_EXEC, jtext(h->exec), CG_KEY_LAUNCHES, (json_int_t)h->launches,
                       CG_KEY_WAITED_NS, (json_int_t)h->waited_ns, CG_KEY_BEGAN, jtext(h->began)));
  }
}
