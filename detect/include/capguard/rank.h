/* Which rank of a distributed job this process is, from the variables the
 * launchers set: torchrun and torch.distributed (RANK, LOCAL_RANK,
 * WORLD_SIZE), Open MPI (OMPI_COMM_WORLD_RANK, OMPI_COMM_WORLD_SIZE,
 * OMPI_COMM_WORLD_LOCAL_RANK), MPICH and Intel MPI (PMI_RANK, PMI_SIZE),
 * PMIx (PMIX_RANK), Slurm (SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID). The
 * innermost launcher wins: torchrun's RANK (with TORCHELASTIC_RUN_ID), then
 * Open MPI, MPICH, PMIx, Slurm, and a plain RANK last, which a shell may have
 * left stale (docs/fleet.md, "Ranks"). A value that is no rank (abc, -1,
 * 2^63, a rank not below its world size) is skipped and said in why (NULL:
 * not said). Pure: the caller hands in getenv. */
#ifndef CAPGUARD_RANK_H
#define CAPGUARD_RANK_H

#include <stddef.h>

typedef struct {
  int rank;       /* -1 when no launcher names one */
  int local_rank; /* -1 when unknown */
  int world_size; /* 0 when unknown */
} cg_rank_info;

cg_rank_info cg_rank_from_env(const char *(*get)(const char *name), char *why, size_t cap);

#endif
