/* What to do about a stale-pointer event (docs/stale.md): one sentence by
 * kind, for the event's text and the report's renderers alike. Its own file,
 * so that what renders a report needs none of the event formatter. */
#include "capguard/event.h"

const char *cg_stale_advice(cg_event_kind kind) {
  return kind == CG_EV_STALE_LAUNCH
             ? "re-capture the graph after the buffer is replaced (a resize, a new tensor), or keep the "
               "buffer alive as long as the graph exec"
             : "keep the buffer alive as long as the graph exec, re-capture after a resize, or destroy the "
               "exec (cuGraphExecDestroy) before the free";
}
