/* The stale-pointer check's scenarios of bench_instr (bench_instr_stale.c). */
#ifndef CAPGUARD_BENCH_INSTR_STALE_H
#define CAPGUARD_BENCH_INSTR_STALE_H

#include <cuda.h>

/* Sets up scenario what (stale_free_K, stale_map_K, stale_unmap_K,
 * stale_launch_K) on stream s for n counted calls and warms it up; -1 when
 * what is none of them. */
int stale_setup(const char *what, CUstream s, long n);
/* n of the scenario's counted calls (called inside instr_measured). */
CUresult stale_measured(long n);

#endif
