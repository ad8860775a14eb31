/* A call as its wrapper (route/) hands it to the floor that decides
 * (decide/): a breaker, an unload among them (cg_call, with the fix guard mode may
 * apply), or a module load (cg_load). They live below both, so
 * the deciders share them without including one another. */
#ifndef CAPGUARD_CALLS_H
#define CAPGUARD_CALLS_H

#include <cuda.h>
#include <stdbool.h>
#include <stdint.h>

#include "capguard/load_options.h"
#include "capguard/log_schema.h"
#include "entry_points.h"
#include "break_rules.h"
#include "live_captures.h"

/* What guard mode may do instead of letting the driver break the capture
 * (each fix is its own verdict). */
typedef enum {
  CG_FIX_NONE,          /* reported only */
  CG_FIX_RESCUE,        /* CAPGUARD_RESCUE=1: made in relaxed mode (allocations) */
  CG_FIX_DEFER_FREE,    /* returns success, runs when the capture ends (frees) */
  CG_FIX_DEFER_DESTROY, /* the same for cuGraphExecDestroy */
  CG_FIX_DEFER_UNLOAD,  /* the same for module and library unloads, made under the capture gate */
  CG_FIX_NOT_READY,     /* an event recorded in a still-capturing stream is not ready (cuEventQuery) */
} cg_fix;

/* A breaker as its wrapper hands it over. */
typedef struct {
  cg_entry_point ep;
  cg_event_kind kind;
  cg_rule rule;
  cg_fix fix;
  uint64_t target; /* the stream, event, pointer, executable graph or module it works on (0: none) */
  bool has_target, ptsz;
  CUresult (*invoke)(const void *args); /* makes the real call from args */
  const void *args;
  /* the call on its one handle, for deferral (NULL when not deferrable) */
  CUresult (*invoke_handle)(void *handle);
  uint64_t aux; /* CG_RULE_WAIT_EVENT: the event waited on; CG_RULE_COPY_ASYNC: the pageable host side, or 0 */
} cg_call;

/* A load: what to inspect, and how to make the real call. */
typedef struct cg_load {
  cg_entry_point ep;
  const void *image;  /* in-memory image, or NULL */
  const char *path;   /* file name for cuModuleLoad / cuLibraryLoadFromFile */
  bool is_library;    /* out receives a CUlibrary */
  void **out;         /* CUmodule* or CUlibrary* */
  bool with_options;  /* JIT or library options (the row's options trait) */
  cg_load_opts_raw opts; /* as the caller passed them: served only a copy preloaded with the same */
  CUresult (*invoke)(const struct cg_load *self);
  const void *args;   /* the wrapper's arguments, for invoke */
} cg_load;

#endif
