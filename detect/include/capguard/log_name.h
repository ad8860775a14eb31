/* Log names as valgrind and nsys write them: %p the process id, %h the host
 * name, %q{VAR} the value of the environment variable VAR, %% a '%'. Any
 * other '%' is an error, said before a run. An expansion that is empty
 * (VAR unset: a launcher's parent has no RANK, its workers do) or holds '/'
 * or '..' is refused: that process opens no log by that name. The shim expands the name where
 * it opens its log (shim/output/output.c); capguard run and capguard report
 * read the files back through cg_log_name_glob, so that both agree. */
#ifndef CAPGUARD_LOG_NAME_H
#define CAPGUARD_LOG_NAME_H

#include <stdbool.h>
#include <stddef.h>

/* 0, or -1 with one phrase in why ("has '%x', which is not %p, %h, %q{VAR} or %%"). */
int cg_log_name_check(const char *name, char *why, size_t cap);

/* Whether the name differs between the processes of a run (%p or %q{VAR}):
 * then it is a pattern, read back as every file it matches. */
bool cg_log_name_varies(const char *name);
/* Whether the name holds %p: a file per process, reopened after fork. */
bool cg_log_name_has_pid(const char *name);

/* The name for this process. 0; -1 when it is not valid or does not fit;
 * -2 when an expansion is refused (cg_log_name_refusal says why). */
int cg_log_name_expand(const char *name, char *out, size_t cap);

/* An expansion that would lose or misplace a log: %q{VAR} or %h that
 * expands to nothing, or to something holding '/' or '..' (RANK=../escape).
 * set_only: only variables set to a value are judged (capguard run, whose
 * command's launcher may set the rest: a variable set empty there, RANK=,
 * says that its workers each set their own). 0, or -1 with one phrase in why
 * ("expands %q{RANK} to nothing (RANK is unset)"). */
int cg_log_name_refusal(const char *name, bool set_only, char *why, size_t cap);

/* A glob(3) pattern for every file the name expands to on this host: %p and
 * %q{VAR} match anything, %h is this host's name, %% a '%', and the name's
 * own *, ?, [ and \ are literal. 0, or -1 when not valid or too long. */
int cg_log_name_glob(const char *name, char *out, size_t cap);

#endif
