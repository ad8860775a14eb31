/* The driver's log callback (driver_log_callback.h): a refusal the driver logs
 * names its call as the first offender of the captures it broke, when that
 * call is one capguard does not wrap (a wrapped call names itself, with its
 * verdict and handle, in breakers.c and guard.c). The stacks are taken here,
 * on the offending thread, while the call is on the stack; they are
 * symbolized only when the capture's record is written (dladdr takes the
 * loader's lock, which a thread waiting for the driver may hold). */
#include "driver_log_callback.h"

#include <stdlib.h>
#include <string.h>

#include "capguard/driver_log_parse.h"
#include "break_rules.h"
#include "live_captures.h"
#include "entry_points.h"
#include "names.h"

/* The codes of refusals that break a capture (an end's 901 only reports an
 * earlier break; 904 and 908 are ends, which capguard wraps). */
static _Bool breaks(int code) {
  return code == CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED || code == CUDA_ERROR_STREAM_CAPTURE_ISOLATION ||
         code == CUDA_ERROR_STREAM_CAPTURE_IMPLICIT || code == CUDA_ERROR_CAPTURED_EVENT;
}

void cg_driver_log_callback(void *data, CUlogLevel level, char *message, size_t length) {
  (void)data;
  (void)level;
  int code;
  char call[96];
  if (cg_nothing_captures() || !cg_driver_log_parse(message, length, &code, call, sizeof call) || !breaks(code))
    return;
  if (cg_ep_find(call) >= 0) {
    /* A wrapped call: named by its wrapper, after it returns; counted now,
     * inside the call, so that an end that comes after it in the driver
     * waits for its mark, and ordered as the driver made it. */
    cg_captures_refusal_in_driver(code);
    return;
  }
  cg_begin_site *site = cg_site_take(CG_SITE_MAX_FRAMES);
  cg_break b = cg_break_of(cg_name_intern(call, "a call capguard does not wrap"), CG_EV_DRIVER_LOG, CG_VERDICT_BROKE, (CUresult)code, site);
  cg_captures_break_logged(code, &b);
  free(site);
}
