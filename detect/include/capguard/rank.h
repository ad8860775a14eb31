/* Which rank of a distributed job this process is, from the variables the
 * launchers set: torchrun and torch.distributed (RANK, LOCAL_RANK,
 * WORLD_SIZE), Open MPI (OMPI_COMM_WORLD_RANK, OMPI_COMM_WORLD_SIZE,
 * OMPI_COMM_WORLD_LOCAL_RANK), MPICH and Intel MPI (PMI_RANK, PMI_SIZE),
 * Slurm (SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID). The first launcher
 * that names a rank wins, in that order. Pure: the caller hands in getenv. */
#ifndef CAPGUARD_RANK_H
#define CAPGUARD_RANK_H

typedef struct {
  int rank;       /* -1 when no launcher names one */
  int local_rank; /* -1 when unknown */
  int world_size; /* 0 when unknown */
} cg_rank_info;

cg_rank_info cg_rank_from_env(const char *(*get)(const char *name));

#endif
