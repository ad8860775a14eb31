/* One run of a log read on its own (log_latest.h). */
#include "log_latest.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "log_pool.h"

static bool same_string(const char *a, const char *b) {
  return a == b || (a && b && !strcmp(a, b));
}

/* Whether the census's process ci and part's process pi, read again, are one. */
static bool same_process(const cgl_log *census, size_t ci, const cgl_log *part, size_t pi) {
  const cgl_process *c = &census->procs[ci], *p = &part->procs[pi];
  return c->file == p->file && c->pid == p->pid && c->ppid == p->ppid && c->first_ns == p->first_ns &&
         c->last_ns == p->last_ns && c->seen_process == p->seen_process && c->seen_start == p->seen_start &&
         c->has_summary == p->has_summary && c->time_ns == p->time_ns &&
         cgl_first_of(census, ci)->offset == cgl_first_of(part, pi)->offset && same_string(c->run, p->run);
}

/* The run of part that is the census's run, process for process and with
 * as many calls; SIZE_MAX if none is. */
static size_t matching_run(const cgl_log *census, size_t run, const cgl_log *part) {
  size_t want = 0;
  for (size_t p = 0; p < census->n_procs; p++)
    want += census->procs[p].run_index == run;
  size_t top = census->runs[run].first_proc;
  for (size_t r = 0; r < part->n_runs; r++) {
    if (!same_process(census, top, part, part->runs[r].first_proc) || part->runs[r].n_procs != want)
      continue;
    size_t p = 0, q = 0, *calls = cgl_xrealloc(NULL, (part->n_procs + 1) * sizeof *calls);
    memset(calls, 0, (part->n_procs + 1) * sizeof *calls);
    for (size_t i = 0; i < part->n_evs; i++)
      calls[part->evs[i].proc]++;
    bool same = true;
    for (; same && p < census->n_procs; p++) {
      if (census->procs[p].run_index != run)
        continue;
      while (q < part->n_procs && part->procs[q].run_index != r)
        q++;
      same = q < part->n_procs && same_process(census, p, part, q) &&
             (long long)calls[q] == cgl_census_of(census, p)->calls;
      q++;
    }
    free(calls);
    return same ? r : SIZE_MAX;
  }
  return SIZE_MAX;
}

int cgl_read_run(const cgl_log *census, size_t run, cgl_log *part, cgl_log *view) {
  cgl_init(part);
  part->keep_firsts = true; /* its processes are matched with the census's by where they begin */
  for (size_t f = 0; f < census->n_files; f++) {
    /* from the run's first line in this file: every line of its processes */
    const cgl_first_line *first = NULL;
    for (size_t p = 0; p < census->n_procs; p++) {
      const cgl_process *pr = &census->procs[p];
      const cgl_first_line *at = cgl_first_of(census, p);
      if (pr->file == f && pr->run_index == run && (!first || at->offset < first->offset))
        first = at;
    }
    if (!first) {
      cgl_add_file(part, census->files[f]);
      continue;
    }
    if (cgl_read_file_at(part, census->files[f], first->offset, first->lineno) != 0) {
      int e = errno;
      cgl_free(part);
      errno = e;
      return -1;
    }
  }
  cgl_group_runs(part);
  size_t r = matching_run(census, run, part);
  if (r == SIZE_MAX) {
    cgl_free(part);
    errno = 0;
    return -1;
  }
  /* the whole log's counts of lines, as a whole read says them */
  part->lines = census->lines;
  part->records = census->records;
  part->malformed = census->malformed;
  part->newer = census->newer;
  part->unknown = census->unknown;
  memcpy(part->first_malformed, census->first_malformed, sizeof part->first_malformed);
  cgl_view(part, r, view);
  return 0;
}
