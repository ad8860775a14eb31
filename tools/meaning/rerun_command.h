/* The exact command that runs a logged run again under capguard, built from
 * what its top-level process logged (argv, priming file, emulated driver), so
 * that advice can be pasted into a shell as it is. */
#ifndef CAPGUARD_RERUN_COMMAND_H
#define CAPGUARD_RERUN_COMMAND_H

#include <stdbool.h>
#include <stddef.h>

#include "log_reader.h"

/* "capguard run [--mode M] --prime P [--emulate-driver V] -- ARGV..." for the
 * run's top-level process (log->runs[run].first_proc; call cgl_group_runs
 * first). mode CG_RUN_MODE_COUNT: leave the mode out (guard, the default). Returns false
 * when the logged command line was cut (16 words) or is unknown: the text
 * then ends in " ..." or "CMD". */
bool cgr_rerun_command(const cgl_log *log, size_t run, cg_run_mode mode, char *buf, size_t cap);
/* The same with options (e.g. "--rescue") right after "capguard run". */
bool cgr_rerun_command_with(const cgl_log *log, size_t run, const char *options, char *buf,
                            size_t cap);
/* The same for another capguard command: head ("capguard prime learn"),
 * options, the priming file, the emulated driver only when emulation is
 * true, then -- and the run's command line. */
bool cgr_command_for(const cgl_log *log, size_t run, const char *head, const char *options,
                     bool emulation, char *buf, size_t cap);
/* The options of this capguard run that its log does not keep (--log, -q,
 * --error-exitcode), as shell words: every "capguard run" command said after
 * the run then keeps them. capguard run sets them before its summary; NULL
 * or "" forgets them. */
void cgr_rerun_keep_options(const char *words);
/* The priming file the run used ("" when not logged). */
const char *cgr_run_prime_path(const cgl_log *log, size_t run);
/* The word that runs this capguard from a shell: "capguard" when PATH finds
 * this executable, else its full path (quoted where it must be). A command
 * capguard prints starts with it, so that it pastes and runs. */
const char *cgr_self_word(void);
/* s quoted for a shell when it needs it, so that a paste gives back exactly
 * its bytes; appended to buf at *used. A word with a control character (a
 * newline, a tab) or a byte that is not UTF-8 is written as bash's $'...'
 * (\n, \t, \xNN), every other word that needs quoting as '...'. */
void cgr_shell_word(const char *s, char *buf, size_t cap, size_t *used);

#endif
