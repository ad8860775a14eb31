#include "ended_early.h"

#include <stdio.h>
#include <string.h>

#include "capture_totals.h"
#include "process_command.h"
#include "signal_name.h"

/* A process that used the driver writes its summary from its exit handler;
 * one that did not use it writes none, and is not missing anything. */
bool cgr_ended_early(const cgl_process *p) { return p->cuda && !p->has_summary; }

void cgr_signal_words(int signal, char *buf, size_t cap) {
  const char *name = cg_signal_name(signal);
  if (name)
    snprintf(buf, cap, "signal %d (%s)", signal, name);
  else
    snprintf(buf, cap, "signal %d", signal);
}

void cgr_ended_list(const cgl_log *log, size_t max, long long signal_pid, int signal, char *buf,
                    size_t cap) {
  size_t used = 0, n = 0, more = 0;
  buf[0] = '\0';
  for (size_t p = 0; p < log->n_procs; p++) {
    const cgl_process *pr = &log->procs[p];
    if (!cgr_ended_early(pr))
      continue;
    if (n == max) {
      more++;
      continue;
    }
    char cmd[96], sig[64] = "";
    cgr_process_command(pr, cmd, sizeof cmd);
    /* the log's "ended" record, else run's wait status */
    int died_of = cgl_process_rare(pr)->signal      ? cgl_process_rare(pr)->signal
                  : signal && pr->pid == signal_pid ? signal
                                                    : 0;
    if (died_of) {
      char words[40];
      cgr_signal_words(died_of, words, sizeof words);
      snprintf(sig, sizeof sig, ", killed by %s", words);
    }
    int k = snprintf(buf + used, cap - used, "%spid %lld (%s)%s", n ? "; " : "", pr->pid,
                     cmd[0] ? cmd : "?", sig);
    if (k < 0 || (size_t)k >= cap - used) {
      buf[used] = '\0';
      more++;
      continue;
    }
    used += (size_t)k;
    n++;
  }
  if (more)
    snprintf(buf + used, cap - used, "%sand %zu more", n ? "; " : "", more);
}

static const char *or_unknown(const char *s) { return s && *s ? s : "?"; }

void cgr_ended_last(const cgl_log *log, size_t p, char *buf, size_t cap) {
  const cgl_process *pr = &log->procs[p];
  /* its latest call during capture and its latest capture begun: whichever came last */
  const cgl_event *ev = NULL;
  const cgl_capture *cp = NULL;
  for (size_t i = 0; i < log->n_evs; i++)
    if (log->evs[i].proc == p && (!ev || log->evs[i].time_ns >= ev->time_ns))
      ev = &log->evs[i];
  for (size_t c = 0; c < log->n_caps; c++) {
    const cgl_capture *k = &log->caps[c];
    long long t = k->end_ns > k->begin_ns ? k->end_ns : k->begin_ns;
    if (k->proc == p && t > 0 && (!cp || t >= (cp->end_ns > cp->begin_ns ? cp->end_ns : cp->begin_ns)))
      cp = k;
  }
  long long cp_t = cp ? (cp->end_ns > cp->begin_ns ? cp->end_ns : cp->begin_ns) : 0;
  char after[64] = "";
  if (pr->first_ns > 0 && pr->last_ns >= pr->first_ns) {
    char d[32];
    cgr_duration(pr->last_ns - pr->first_ns, d, sizeof d);
    snprintf(after, sizeof after, ", %s after its first line", d);
  }
  if (ev && (!cp || ev->time_ns >= cp_t)) {
    char site[512];
    cgl_event_site(ev, site, sizeof site);
    snprintf(buf, cap, "%s (%s, %s) during capture %lld at %s%s", or_unknown(ev->call),
             or_unknown(cgl_word(&cg_event_kinds, ev->kind)), or_unknown(cgl_word(&cg_verdicts, ev->verdict)),
             log->caps[ev->capture].id, site[0] ? site : "an unknown site", after);
  } else if (cp) {
    bool ended = cp->end_ns > cp->begin_ns;
    snprintf(buf, cap, "capture %lld %s (stream %s, began at %s)%s", cp->id, ended ? "ended" : "began",
             or_unknown(cp->stream), cp->began && *cp->began ? cp->began : "an unknown site", after);
  } else {
    snprintf(buf, cap, "%s%s", pr->seen_process ? "its first use of the driver" : "its start", after);
  }
}
