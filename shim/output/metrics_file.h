/* The metrics file (CAPGUARD_METRICS=DIR): one per process,
 * DIR/capguard_<pid namespace>_<pid>.prom, replaced whole (written under a
 * name the textfile collector ignores, then renamed over it), so that a
 * reader sees the old file or the new one, never part of one, mode 0644
 * whatever the umask. Each write after the first, and the last, removes a
 * slice of the files of exited processes (docs/fleet.md's rule). */
#ifndef CAPGUARD_METRICS_FILE_H
#define CAPGUARD_METRICS_FILE_H

#include <stdbool.h>
#include <stddef.h>

/* Minutes a file of an exited process is kept (for the scrapes after its
 * end) before the next process of its pid namespace removes it. */
#define CG_METRICS_KEEP_MINUTES 10

/* Writes text as this process's file in dir (at_exit: the process's last
 * write). false when it cannot: one warning until a write succeeds again,
 * and the caller tries again at its next chance. */
bool cg_metrics_file_write(const char *dir, const char *text, size_t len, bool at_exit);
/* After fork: the child is a process of its own, with a file of its own. */
void cg_metrics_file_atfork_child(void);

#endif
