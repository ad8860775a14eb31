/* CAPGUARD_HANG_S=N: a watcher thread that says, once each, a blocking call
 * (stream, event or context synchronize, a capture's end) that has lasted
 * more than N seconds and a capture open for more than N seconds: the rank,
 * the thread (its name), the stream or event, who called, and the latest
 * graph captured in the process with where its capture began. Never started
 * unless asked; detached, so it never keeps the process from exiting; it
 * reads the threads' slots (model/hang_slots.h), /proc and dladdr, and calls
 * nothing in the driver. */
#ifndef CAPGUARD_HANG_WATCH_H
#define CAPGUARD_HANG_WATCH_H

/* Reads CAPGUARD_HANG_S and, when set, starts the watcher. A bad value is
 * said in one line and the watch stays off. */
void cg_hang_watch_start(void);

#endif
