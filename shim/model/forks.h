/* Streams forked into a capture (a stream outside every capture waits on an
 * event recorded in one: driver-semantics.md, third matrix) and whether
 * they were joined back, so that an end the driver refuses with 904 names
 * the fork never joined: its stream, and the call and site that forked it.
 * And the end refused with 908: the thread that ended it. */
#ifndef CAPGUARD_FORKS_H
#define CAPGUARD_FORKS_H

#include <cuda.h>
#include <stdint.h>

#include "live_captures.h"

/* A fork of stream_key into the capture capture_id, made by call at site
 * (owned by the table from here on; NULL allowed). Bounded: past 256 forks
 * open at once, one is not remembered (its 904 is then said without it). */
void cg_fork_add(uint64_t capture_id, uint64_t stream_key, const char *call, cg_begin_site *site);
/* An event recorded on stream_key: if it is a forked stream, a wait on this
 * event joins it back. */
void cg_fork_event_recorded(uint64_t stream_key, uint64_t event);
/* A stream of capture capture_id waited on event: a fork whose last event it
 * is, is joined. */
void cg_fork_joined(uint64_t capture_id, uint64_t event);
/* The capture ended with result r: for 904 its first fork never joined, for
 * 908 the calling thread's end, as a first offender (on the heap, the
 * caller's); NULL otherwise. Forgets the capture's forks either way. */
cg_break *cg_end_offender(uint64_t capture_id, CUresult r);
/* Fork: the lock starts released in the child (another thread may have held
 * it), and the parent's forks are forgotten: the child's captures are new,
 * and their ids start again. The sites are leaked, not freed. */
void cg_forks_atfork_child(void);

#endif
