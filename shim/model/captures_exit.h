/* Captures still open when the process exits (docs/reliability.md, attack 7): each gets
 * its capture record, status active or invalidated, with no end, so that
 * the log, the run summary and capguard report show them as open at exit. */
#ifndef CAPGUARD_CAPTURES_EXIT_H
#define CAPGUARD_CAPTURES_EXIT_H

#include <stddef.h>

/* Writes a capture record for each capture the model holds open (the first
 * CG_OPEN_AT_EXIT_MAX of them; the count covers all) and returns how many
 * were open. At exit only. */
#define CG_OPEN_AT_EXIT_MAX 256
size_t cg_captures_write_open_at_exit(void);

#endif
