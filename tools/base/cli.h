/* Shared conventions of the capguard command: one-line errors, exit codes,
 * colour (only on a terminal, never with NO_COLOR). */
#ifndef CAPGUARD_CLI_H
#define CAPGUARD_CLI_H

#include <glob.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>

#include "capguard/log_schema.h"

/* Exit codes of every capguard command (run passes its command's status on). */
enum {
  CG_EXIT_OK = 0,
  CG_EXIT_FINDING = 1, /* a broken capture in a report, a problem the doctor found */
  CG_EXIT_USAGE = 2,   /* bad arguments, unreadable input */
  CG_EXIT_RUN_FAILED = 125, /* run: capguard itself failed before the command ran */
};

#ifndef CAPGUARD_VERSION
#define CAPGUARD_VERSION "unknown"
#endif

/* "capguard run: missing command after --; usage: capguard run ..." on stderr.
 * usage may be NULL. Returns CG_EXIT_USAGE so callers can `return cg_usage_error(...)`. */
int cg_usage_error(const char *cmd, const char *usage, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* A new, private, empty log file $TMPDIR/PREFIX-XXXXXX.jsonl (/tmp without
 * TMPDIR), its name in buf. 0, or -1 with errno set. Of the temporary logs
 * kept before, this user's 10 newest stay; older ones go once an hour old. */
int cg_temp_log(const char *prefix, char *buf, size_t cap);

/* One line "capguard CMD: message" on stderr. */
void cg_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The same from a va_list, ending with tail (a newline, or "; what to do\n"). */
void cg_error_v(const char *cmd, const char *tail, const char *fmt, va_list ap);

/* s with control characters replaced by '?', in buf (cut to fit): for echoing
 * names (paths, commands) that could otherwise drive the terminal. */
const char *cg_printable(const char *s, char *buf, size_t cap);

/* The priming file in effect for this environment (CAPGUARD_PRIME,
 * XDG_CACHE_HOME, HOME), as the shim chooses it. 0, or -1 when none is known. */
int cg_cli_prime_default(char *buf, size_t cap);

/* The files a log name (capguard run --log, CAPGUARD_LOG: %p a pid, %h this
 * host, %q{VAR} a variable's value in each process, %% a '%';
 * capguard/log_name.h) names, by glob(3) into g: 0, or glob's error
 * (GLOB_NOMATCH: none, or a name that is not valid). Free g with globfree. */
int cg_log_pattern_glob(const char *log, glob_t *g);

/* The priming file for a command when the user named none: CAPGUARD_PRIME
 * when set, else a file of the program's own, prime.d/PROGRAM.cgp beside the
 * shared default (docs/priming.md, "One file per program"), so that a program
 * never preloads another's images. 0, or -1 when none is known. */
int cg_cli_prime_for(char *const *cmd, char *buf, size_t cap);

/* Every word of a schema table, in row order, for a message: "guard, report or off". */
void cg_word_list(const cg_words *t, char *buf, size_t cap);

/* Whether to colour output written to f: a terminal and NO_COLOR unset or empty. */
bool cg_use_colour(FILE *f);

/* Colour escape or "" when colour is off. */
typedef struct {
  const char *bold, *red, *yellow, *green, *dim, *reset;
} cg_palette;
cg_palette cg_palette_for(FILE *f);

#endif
