#include <stdio.h>

#include "plural.h"
#include "process_command.h"
#include "report_runs.h"

/* Appends to buf at *used; a line too long for buf is cut, never overrun. */
#define ADD(...)                                                    \
  do {                                                              \
    int n_ = snprintf(buf + used, cap - used, __VA_ARGS__);         \
    if (n_ > 0)                                                     \
      used = (size_t)n_ < cap - used ? used + (size_t)n_ : cap - 1; \
  } while (0)

void cgr_run_headline(const cgr_report *rep, size_t r, cg_palette pal, char *buf, size_t cap) {
  const cgr_analysis *a = &rep->a;
  const struct cgr_run_stats *st = &a->runs[r];
  const cgl_process *top = &rep->whole.procs[rep->whole.runs[r].first_proc];
  char cmd[96];
  size_t used = 0;
  if (!cap)
    return;
  buf[0] = '\0';
  cgr_process_command(top, cmd, sizeof cmd);
  ADD("run %zu: pid %lld %s (%zu process%s): %zu capture%s%s, %s%zu broken%s", r + 1, top->pid,
      cmd[0] ? cmd : "?", st->procs, cg_plural_es(st->procs), st->captures, cg_plural(st->captures),
      st->ended_early ? " logged" : "",
      st->broken ? pal.red : pal.green, st->broken, pal.reset);
  if (st->ended_early)
    ADD(", %s%zu ended without an exit record%s", pal.red, st->ended_early, pal.reset);
  if (st->served)
    ADD(", %zu load%s served from the priming file", st->served, cg_plural(st->served));
}
