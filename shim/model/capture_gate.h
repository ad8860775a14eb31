/* The capture gate (live_captures.h says what it keeps): capture begins and
 * ends hold it shared from before the driver's call until the model has the
 * result; a decision holds it exclusive from its check until the driver has
 * answered.
 *
 * Shared holders count themselves on one of CG_GATE_SHARDS lines, picked by
 * their thread, not on one word: with many threads capturing at once, the
 * reader count of a pthread rwlock was written by every begin and every end
 * (four times a capture), and each write took the line from every other
 * core. A shared hold costs one locked add on a line few others write, then
 * a read of the exclusive flag.
 *
 * Writer-preferring: once a decision wants the gate, new shared holders wait
 * for it (a stream of begins cannot starve a load). Nothing takes the gate
 * twice on one thread. Every hold, shared or exclusive, is a capguard lock
 * region (locks.h: cancellation off). */
#ifndef CAPGUARD_CAPTURE_GATE_H
#define CAPGUARD_CAPTURE_GATE_H

#include <stdbool.h>

void cg_gate_share(void);
void cg_gate_unshare(void);
void cg_gate_lock(void); /* exclusive */
void cg_gate_unlock(void);

/* Fork (live_captures.c's handlers): held exclusive across the fork, set
 * free in the child. */
void cg_gate_atfork_prepare(void);
void cg_gate_atfork_parent(void);
void cg_gate_atfork_child(void);

#endif
