/* Whether the shim will be able to write the log and record into the
 * priming file, said before a command starts (capguard run refuses the run)
 * and by capguard doctor. Tried, not guessed: access(2) says yes to root in
 * /proc, and only a file made and removed shows what a filesystem allows. */
#ifndef CAPGUARD_PATH_CHECK_H
#define CAPGUARD_PATH_CHECK_H

#include <stdbool.h>
#include <stddef.h>

/* name: a log name (%p, %h, %q{VAR}, %%). 0, or -1 with why ("cannot be
 * created in /proc (No such file or directory)"). */
/* A log name's %q{VAR} whose VAR is unset: -1 with why (set empty, it is
 * asked for: a launcher's workers each set their own). */
int cg_log_unset_var(const char *name, char *why, size_t cap);
int cg_log_usable(const char *name, char *why, size_t cap);

/* The priming file as guard mode uses it: read, and recorded into unless
 * readonly. named: the user named it with --prime, so its directory must
 * exist (a typo would otherwise make a tree, as root); else (CAPGUARD_PRIME,
 * the default) the shim makes the missing levels, and the nearest directory
 * that exists must take new ones.
 * 0, or -1 with why, which ends in what to do. */
int cg_prime_usable(const char *path, bool named, bool readonly, char *why, size_t cap);

#endif
