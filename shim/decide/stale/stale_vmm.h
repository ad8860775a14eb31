/* The stale-pointer check's record of memory mapped with the virtual memory
 * API (cuMemMap, cuMemUnmap, cuMemRelease; docs/stale.md): which physical
 * allocation each mapped piece of a reserved range holds. The driver names
 * only the whole reserved range for an address in it (expandable segments:
 * 168 GB), so the piece, the unit a graph reads, is known only from here.
 * Not thread-safe: stale_watch.c calls it under its lock. */
#ifndef CAPGUARD_STALE_VMM_H
#define CAPGUARD_STALE_VMM_H

#include <stdbool.h>
#include <stdint.h>

#include "stale_index.h"

typedef struct {
  uint64_t start, size;
  uint64_t phys; /* the physical allocation: a number capguard gave its handle, never given twice */
} cg_vmm_piece;

typedef struct {
  cg_index by_granule; /* each 2 MiB granule a piece covers -> the piece */
  cg_index handles;    /* a live handle -> its number */
  uint64_t next_phys;
  uint64_t pieces;
  cg_vmm_piece *spare; /* pieces unmapped, kept for the next maps (linked through start) */
} cg_vmm;

/* cuMemMap(ptr, size, ..., handle) succeeded: false out of memory (the
 * piece is then not known, and reads of it are watched as the driver names them). */
bool cg_vmm_map(cg_vmm *v, uint64_t ptr, uint64_t size, uint64_t handle);
/* cuMemUnmap(ptr, size) succeeded: every piece overlapping it forgotten. */
void cg_vmm_unmap(cg_vmm *v, uint64_t ptr, uint64_t size);
/* cuMemRelease(handle) succeeded: a handle the driver may give out again
 * gets a new number at its next map. */
void cg_vmm_release(cg_vmm *v, uint64_t handle);
/* The mapped piece holding addr, or NULL. */
const cg_vmm_piece *cg_vmm_find(const cg_vmm *v, uint64_t addr);
/* Calls fn on each piece overlapping [lo, lo + len). */
void cg_vmm_each_in(const cg_vmm *v, uint64_t lo, uint64_t len, void (*fn)(const cg_vmm_piece *, void *),
                    void *arg);

#endif
