/* The "ended" record (docs/log-format.md): when capguard run's command dies
 * of a signal, the process writes no summary, and only run's wait status
 * knows the signal. Run appends it to the log file that holds that
 * process's own lines, so that capguard report, read later, says it too. */
#ifndef CAPGUARD_ENDED_RECORD_H
#define CAPGUARD_ENDED_RECORD_H

#include <stddef.h>

#include "run_end.h" /* cg_run_log_file */

/* Appends {"type":"ended","pid":pid,...,"signal":sig} to the first of files
 * whose part written by this run (from its offset) has pid's start or
 * process record; nothing when none has (the shim never started in it).
 * Opened as the shim opens its log (cg_log_open); one write of one line. */
void cg_record_ended(const cg_run_log_file *files, size_t n, long long pid, int sig);

#endif
