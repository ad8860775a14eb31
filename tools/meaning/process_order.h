/* The order every rendering lists processes in: by run, then by pid. Logs
 * read one after the other (--all over several files, or a file whose runs
 * were appended out of order) are otherwise listed as read. */
#ifndef CAPGUARD_PROCESS_ORDER_H
#define CAPGUARD_PROCESS_ORDER_H

#include <stddef.h>
#include <stdint.h>

#include "log_reader.h"

/* The indices of log->procs by run index, then pid, then index: n_procs
 * entries of 4 bytes (a log holds fewer than 2^31 processes, log_reader.h;
 * at least one allocated), to free(). Ends the command on running out of
 * memory (xalloc.h). */
uint32_t *cgr_process_order(const cgl_log *log);

#endif
