/* Opening the JSON Lines log under the priming file's rules
 * (docs/priming-format.md, "Safety"): never through a symbolic link, only a
 * regular file (a FIFO or device is refused without blocking), owned by the
 * effective user and writable by nobody else. The shim opens its log with
 * cg_log_open; capguard run checks the same path with cg_log_check before it
 * starts the command, so that a log that cannot be used is said before the
 * engine runs, not after. */
#ifndef CAPGUARD_LOG_FILE_H
#define CAPGUARD_LOG_FILE_H

#include <stddef.h>

/* Opens path for appending, creating it (mode 0644) when missing; never
 * creates directories. Returns the descriptor (O_APPEND, O_CLOEXEC), or -1
 * with one sentence in why saying what is wrong ("is a symbolic link, which
 * capguard does not follow"). */
int cg_log_open(const char *path, char *why, size_t cap);

/* Whether cg_log_open would succeed, without creating anything: 0, or -1
 * with why filled. A path holding "%p" (one file per process) is checked as
 * a file not yet there, in its directory. */
int cg_log_check(const char *path, char *why, size_t cap);

#endif
