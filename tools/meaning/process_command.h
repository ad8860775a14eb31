/* A process's command line as the report shows it, shared by the findings
 * (which name the command a run ran) and every rendering. */
#ifndef CAPGUARD_PROCESS_COMMAND_H
#define CAPGUARD_PROCESS_COMMAND_H

#include <stddef.h>

#include "log_reader.h"

/* A process's command line, argv[0] without its directory, cut with "..." to fit. */
void cgr_process_command(const cgl_process *pr, char *buf, size_t cap);

#endif
