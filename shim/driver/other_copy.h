/* Two copies of the shim in one process (LD_PRELOAD naming libcapguard.so
 * twice, by two paths, or a wheel's copy and a system one). */
#ifndef CAPGUARD_OTHER_COPY_H
#define CAPGUARD_OTHER_COPY_H

#include <stdbool.h>

/* Whether another copy of capguard comes before this one in the process's
 * symbol lookup order: that copy's wrappers are the ones the program's calls
 * reach, and it writes the records; this copy then stays silent and passes
 * everything through (it may still be reached, as the first copy's "next"
 * driver). */
bool cg_other_copy_first(void);

#endif
