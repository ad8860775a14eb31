#include "ended_early.h"

#include <stdio.h>
#include <string.h>

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
    if (signal && pr->pid == signal_pid) {
      char words[40];
      cgr_signal_words(signal, words, sizeof words);
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
