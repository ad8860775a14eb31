/* The shim's walks of the loader's list of objects (dl_iterate_phdr), kept
 * out of the moment of a fork. dl_iterate_phdr holds the loader's write
 * lock while it walks, and glibc (2.36) does not reset that lock in a
 * child: a fork made while another thread of the parent walked leaves the
 * child's first walk waiting forever (measured: 1 child in about 3 runs of
 * 2,000 forks beside 3 threads reporting broken captures, each report a
 * walk, on a loaded 2-core machine; tests/lifecycle/test_forks.py). So the
 * shim walks only through cg_dl_iterate_phdr, which counts the walkers,
 * and the prepare handler of a fork marks the fork and waits for the
 * walkers to leave (bounded: 100 ms, then the fork goes on as before);
 * a walk that would begin during the fork waits for it (bounded the same).
 * Walks by the host itself are the host's, as they would be without
 * capguard. Nothing here sleeps: sched_yield is not a cancellation point,
 * and no lock is taken. */
#ifndef CAPGUARD_LOADER_GATE_H
#define CAPGUARD_LOADER_GATE_H

#include <link.h>

int cg_dl_iterate_phdr(int (*cb)(struct dl_phdr_info *, size_t, void *), void *data);

void cg_loader_gate_atfork_prepare(void);
void cg_loader_gate_atfork_parent(void);
void cg_loader_gate_atfork_child(void);

#endif
