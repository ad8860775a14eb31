#include "request_path.h"

#include <string.h>

bool cgr_request_counts(const cgl_log *log, size_t i) {
  const cgl_request *q = &log->reqs[i];
  if (!q->provisional)
    return true;
  long long from = q->time_ns - q->after_ns, to = from + CGR_SERVING_QUIET_NS;
  for (size_t c = 0; c < log->n_caps; c++) {
    const cgl_capture *cap = &log->caps[c];
    if (cap->proc == q->proc && cap->begin_ns > from && cap->begin_ns <= to)
      return false; /* a wave of the start-up: the load was between two */
  }
  return true;
}

void cgr_request_totals_of(const cgl_log *log, cgr_request_totals *t) {
  memset(t, 0, sizeof *t);
  t->first_after_ns = -1;
  for (size_t i = 0; i < log->n_reqs; i++) {
    if (!cgr_request_counts(log, i))
      continue;
    const cgl_request *q = &log->reqs[i];
    if (!t->loads || q->after_ns < t->first_after_ns) {
      t->first_after_ns = q->after_ns;
      t->first = i;
    }
    t->loads++;
    t->served += q->served;
    t->lazy += q->runtime_lazy;
    t->load_ns += q->load_ns;
  }
}
