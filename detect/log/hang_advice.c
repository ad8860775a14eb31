/* What to do about a hang event (docs/hangs.md): one sentence by kind, for
 * the event's text and the report's renderers alike, as stale_advice.c is
 * for the stale-pointer check. */
#include "capguard/event.h"

const char *cg_hang_advice(cg_event_kind kind, bool busy) {
  if (kind == CG_EV_HANG_LAUNCH)
    return busy ? "busy: no collective is in this graph, so it waits for no peer; its own kernels are still "
                  "running (a long kernel, a spin)"
                : "waiting for a peer: the graph holds collectives, and a rank that has not launched this "
                  "graph as often (capguard report on every rank's log names it) keeps them from finishing";
  if (kind == CG_EV_HANG_TEARDOWN)
    return "live graph execs that hold collectives keep the communicator's teardown waiting: reset or delete "
           "them (torch: graph.reset()) before destroy_process_group (docs/hangs.md gives the order)";
  return NULL;
}
