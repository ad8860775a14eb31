/* Generates the wrappers of the families a file implements, one per row.
 *
 * A file that implements families defines, for each, before including this:
 *   #define CG_WRAP_<FAMILY>(cname, sname, ep, params, traits...)  <definition>
 * where cname is the wrapper's C name (cg_w_<name>), sname its exported name
 * as a string, ep its row's cg_entry_point, params the row's parameter pairs
 * (params.h turns them into declarations and arguments; CG_WRAPPER_HEAD and
 * CG_REAL_OR_RETURN below do the common part), and the traits are the
 * row's (entry_point_rows.h). Every family it does not define generates
 * nothing here. A family with rows and no definition anywhere leaves its
 * wrappers undefined, and libcapguard.so fails to link (-z defs).
 *
 * Included once, at the end of each implementing file; no include guard on
 * purpose. */
#include "wrapper.h"

#ifndef CG_WRAP_GETPROC
#define CG_WRAP_GETPROC(...)
#endif
#ifndef CG_WRAP_CAPTURE_BEGIN
#define CG_WRAP_CAPTURE_BEGIN(...)
#endif
#ifndef CG_WRAP_CAPTURE_END
#define CG_WRAP_CAPTURE_END(...)
#endif
#ifndef CG_WRAP_MODE_EXCHANGE
#define CG_WRAP_MODE_EXCHANGE(...)
#endif
#ifndef CG_WRAP_LOAD
#define CG_WRAP_LOAD(...)
#endif
#ifndef CG_WRAP_BREAKER
#define CG_WRAP_BREAKER(...)
#endif
#ifndef CG_WRAP_DEFERRABLE
#define CG_WRAP_DEFERRABLE(...)
#endif
#ifndef CG_WRAP_EVENT_RECORD
#define CG_WRAP_EVENT_RECORD(...)
#endif
#ifndef CG_WRAP_STREAM_WORK
#define CG_WRAP_STREAM_WORK(...)
#endif
#ifndef CG_WRAP_EVENT_DESTROY
#define CG_WRAP_EVENT_DESTROY(...)
#endif
#ifndef CG_WRAP_STREAM_DESTROY
#define CG_WRAP_STREAM_DESTROY(...)
#endif
#ifndef CG_WRAP_GRAPH_INSTANTIATE
#define CG_WRAP_GRAPH_INSTANTIATE(...)
#endif
#ifndef CG_WRAP_GRAPH_LAUNCH
#define CG_WRAP_GRAPH_LAUNCH(...)
#endif
#ifndef CG_WRAP_WATCHED_FREE
#define CG_WRAP_WATCHED_FREE(...)
#endif
#ifndef CG_WRAP_CONTEXT_END
#define CG_WRAP_CONTEXT_END(...)
#endif

#define CG_WRAP_ROW(family, name, params, ...) CG_WRAP_##family(cg_w_##name, #name, CG_EP_##name, params, __VA_ARGS__)
CG_ENTRY_POINTS(CG_WRAP_ROW)
#undef CG_WRAP_ROW
