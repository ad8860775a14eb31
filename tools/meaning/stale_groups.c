/* stale_groups.h. A group is one (process, graph exec, allocation): the
 * shim reports each at most once per kind, so a group holds a free, a
 * launch, or both. */
#include "stale_groups.h"

#include "log_pool.h" /* cgl_xrealloc */

static bool same(const cgl_stale *a, const cgl_stale *b) {
  return a->proc == b->proc && a->exec == b->exec && a->start == b->start; /* interned strings */
}

size_t cgr_stale_groups(const cgl_log *log, cgr_stale_group **out) {
  *out = NULL;
  size_t n = 0;
  cgr_stale_group *g = log->n_stale ? cgl_xrealloc(NULL, log->n_stale * sizeof *g) : NULL;
  for (size_t i = 0; i < log->n_stale; i++) {
    const cgl_stale *s = &log->stale[i];
    size_t k = 0;
    while (k < n && !same(&log->stale[g[k].first], s))
      k++;
    if (k == n)
      g[n++] = (cgr_stale_group){i, 0, 0, -1, -1, NULL};
    if (s->kind == CG_EV_STALE_LAUNCH) {
      g[k].launches++;
      if (g[k].first_launch < 0)
        g[k].first_launch = (long)i;
    } else {
      g[k].frees++;
      if (g[k].first_free < 0)
        g[k].first_free = (long)i;
    }
  }
  *out = g;
  return n;
}
