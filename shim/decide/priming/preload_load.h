/* A priming record's load, made before capture exactly as the recorded
 * call made it: cuModuleLoadDataEx or cuLibraryLoadData with the record's
 * JIT and library options (capguard/load_options.h), log buffers of the
 * sizes the caller gave. What the driver wrote into the output options is
 * kept, and handed to each load served that copy, so a served load's
 * outputs are the ones its own call would have had (docs/priming.md). */
#ifndef CAPGUARD_PRELOAD_LOAD_H
#define CAPGUARD_PRELOAD_LOAD_H

#include <cuda.h>
#include <stdbool.h>

#include "capguard/load_options.h"
#include "capguard/prime_file.h"

/* What the driver wrote into a preload's output options. */
typedef struct cg_load_outputs cg_load_outputs;

/* Loads r (as a library when library) into *out; *outputs gets what the
 * driver wrote, or NULL when r has no output options (or no memory for
 * them: said once, and the load is not served to a caller that asks for
 * outputs). A record whose options this capguard cannot make (a library
 * option on a module load) is CUDA_ERROR_NOT_SUPPORTED, never tried. */
CUresult cg_preload_load(const cg_prime_record *r, bool library, void **out, cg_load_outputs **outputs);
/* Whether a load asking raw can be served a copy whose outputs are o:
 * every output it asks for was kept. */
bool cg_load_outputs_cover(const cg_load_outputs *o, const cg_load_opts_raw *raw);
/* Writes o into the caller's output slots as the driver wrote them into the
 * preload's: the wall time, the logs (cut to the caller's buffer size), the
 * size slots replaced by the bytes written, the threads per block used. */
void cg_load_outputs_write(const cg_load_outputs *o, const cg_load_opts_raw *raw);
void cg_load_outputs_free(cg_load_outputs *o);

#endif
