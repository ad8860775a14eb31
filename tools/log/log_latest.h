/* One run of a log read on its own: a census of every line (cgl_log.census)
 * finds the runs and counts them, then only the part of each file from the
 * run's first line on is read whole. A report of the latest run holds that
 * run in memory, not the older runs before it in the same files. */
#ifndef CAPGUARD_LOG_LATEST_H
#define CAPGUARD_LOG_LATEST_H

#include "log_reader.h"

/* Read run (of census, grouped by cgl_group_runs) again from census's files
 * into part, and make view of it (cgl_view). Returns 0, or -1 when a file
 * cannot be read again (errno set) or when what was read does not give the
 * census's run back process for process (a pid reused across runs whose
 * lines interleave): part is then freed and the caller reads the files
 * whole. Free view, then part, before census. */
int cgl_read_run(const cgl_log *census, size_t run, cgl_log *part, cgl_log *view);

#endif
