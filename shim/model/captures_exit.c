#include "captures_exit.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "live_captures.h"
#include "model_lock.h"
#include "output.h"
#include "warn.h"

/* What a record needs of one open capture, copied under the model's lock:
 * another thread may still end the capture (and free its attachments)
 * while this one writes, since destructors run with the program's threads
 * alive. */
typedef struct {
  cg_capture c;
  cg_begin_site site;
  cg_break broke;
  bool has_site, has_break;
} open_copy;

size_t cg_captures_write_open_at_exit(void) {
  cg_capture *open[CG_OPEN_AT_EXIT_MAX];
  bool had;
  cg_model *m = cg_captures_model_lock_at_exit("the records of captures open at exit", &had);
  if (!had)
    return 0;
  size_t total = m ? cg_model_open_captures(m, open, CG_OPEN_AT_EXIT_MAX) : 0;
  size_t n = total < CG_OPEN_AT_EXIT_MAX ? total : CG_OPEN_AT_EXIT_MAX;
  open_copy *copies = n ? calloc(n, sizeof *copies) : NULL;
  for (size_t i = 0; copies && i < n; i++) {
    copies[i].c = *open[i];
    copies[i].c.user = copies[i].c.broken_by = copies[i].c.maybe_by = NULL;
    if ((copies[i].has_site = open[i]->user != NULL))
      copies[i].site = *(const cg_begin_site *)open[i]->user;
    /* no call surely broke it: the one that may have (live_captures.c) */
    const cg_break *by = open[i]->broken_by ? open[i]->broken_by
                         : open[i]->status != CG_CAPTURE_ACTIVE ? open[i]->maybe_by : NULL;
    if ((copies[i].has_break = by != NULL))
      copies[i].broke = *by;
  }
  cg_captures_model_unlock();
  if (n && !copies) {
    cg_warn_oom("the records of captures open at exit");
    return total;
  }
  /* Symbolized (dladdr) outside the lock, as at a capture's end (guard.c). */
  for (size_t i = 0; i < n; i++) {
    open_copy *o = &copies[i];
    char began[512], where[512];
    cg_begin_site_text(o->has_site ? &o->site : NULL, began, sizeof began);
    cg_offender off;
    cg_capture_record rec = {.capture = &o->c, .pid = (uint64_t)getpid(), .began = began, .ended = false,
                             .repeats = o->c.repeats};
    if (o->has_break) {
      cg_begin_site_text(&o->broke.site, where, sizeof where);
      off = o->broke.who;
      off.python = o->broke.site.python;
      off.where = where;
      rec.broken_by = &off;
    }
    cg_output_capture(&rec);
  }
  free(copies);
  return total;
}
