/* The tables the entry-point rows (entry_point_rows.h) give: each row's
 * enum value, exported name, capguard's wrapper and the driver's pointer.
 * Every entry point not in the rows is never touched: callers get the
 * driver's pointer. */
#ifndef CAPGUARD_ENTRY_POINTS_H
#define CAPGUARD_ENTRY_POINTS_H

#include <stddef.h>

#include "entry_point_rows.h"

/* A row's name is only ever pasted (CG_EP_##name) or quoted (#name), never
 * passed on to another macro: passed on, it would be expanded first, and
 * cuda.h maps e.g. cuGetProcAddress to cuGetProcAddress_v2 -- the wrong
 * variant with the wrong arguments. */
typedef enum {
#define CG_EP_ENUM(family, name, ...) CG_EP_##name,
  CG_ENTRY_POINTS(CG_EP_ENUM)
#undef CG_EP_ENUM
  CG_EP_COUNT
} cg_entry_point;

/* A row's exported name. */
const char *cg_ep_name(cg_entry_point ep);
/* capguard's wrapper for each row (what callers get instead of the driver's). */
void *cg_ep_wrapper(cg_entry_point ep);
/* The driver's own pointer for each row, filled by cg_driver_ready(); NULL
 * when this driver lacks that variant. */
extern void *cg_ep_real[CG_EP_COUNT];

/* The real function behind a row, as a typed pointer. */
#define CG_REAL(name, type) ((type)cg_ep_real[CG_EP_##name])

/* Row for an exported name, or -1. */
int cg_ep_find(const char *name);

#endif
