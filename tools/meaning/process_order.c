#include <stdlib.h>

#include "process_order.h"
#include "xalloc.h"

static const cgl_log *order_log; /* for qsort; the command is single-threaded */

static int by_run_then_pid(const void *x, const void *y) {
  uint32_t i = *(const uint32_t *)x, j = *(const uint32_t *)y;
  const cgl_process *p = &order_log->procs[i], *q = &order_log->procs[j];
  if (p->run_index != q->run_index)
    return p->run_index < q->run_index ? -1 : 1;
  if (p->pid != q->pid)
    return p->pid < q->pid ? -1 : 1;
  return i < j ? -1 : i > j;
}

uint32_t *cgr_process_order(const cgl_log *log) {
  uint32_t *order = cg_xrealloc(NULL, (log->n_procs + 1) * sizeof *order, "listing the processes");
  for (size_t p = 0; p < log->n_procs; p++)
    order[p] = (uint32_t)p;
  order_log = log;
  if (log->n_procs)
    qsort(order, log->n_procs, sizeof *order, by_run_then_pid);
  return order;
}
