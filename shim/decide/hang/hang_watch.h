/* CAPGUARD_HANG_S=N: a watcher thread that says, once each, a blocking call
 * (stream, event or context synchronize, a capture's end) that has lasted
 * more than N seconds and a capture open for more than N seconds: the rank,
 * the thread (its name), the stream or event, who called, and the latest
 * graph captured in the process with where its capture began. Never started
 * unless asked, and then at the first use of the driver; every signal
 * blocked in it; detached, so it never keeps the process from exiting; it
 * reads the threads' slots (model/hang_slots.h), /proc and dladdr, and calls
 * nothing in the driver. */
#ifndef CAPGUARD_HANG_WATCH_H
#define CAPGUARD_HANG_WATCH_H

/* Takes CAPGUARD_HANG_S's value (NULL: unset), at start-up: from then on
 * the wrappers keep the slots. A bad value is said in one line and the
 * watch stays off. No thread yet. */
void cg_hang_watch_setup(const char *value);
/* Starts the watcher, with every signal blocked in it, when the watch is
 * on: at the process's first use of the driver, never before, so that a
 * process that never uses CUDA (or one that calls unshare(CLONE_NEWUSER),
 * which a process of two threads may not, before it does) has no thread of
 * capguard's. */
void cg_hang_watch_start(void);

#endif
