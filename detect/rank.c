#include "capguard/rank.h"

#include <stddef.h>

/* A decimal in [0, 1<<30), the whole string; -1 otherwise (unset, empty,
 * a sign, junk): a rank variable set to something else is not a rank. */
static int number(const char *s) {
  if (!s || !*s)
    return -1;
  long v = 0;
  for (; *s; s++) {
    if (*s < '0' || *s > '9' || v >= (1L << 30) / 10)
      return -1;
    v = v * 10 + (*s - '0');
  }
  return (int)v;
}

cg_rank_info cg_rank_from_env(const char *(*get)(const char *name)) {
  static const char *const launchers[][3] = {
      {"RANK", "LOCAL_RANK", "WORLD_SIZE"},
      {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_SIZE"},
      {"PMI_RANK", NULL, "PMI_SIZE"},
      {"SLURM_PROCID", "SLURM_LOCALID", "SLURM_NTASKS"},
  };
  cg_rank_info r = {-1, -1, 0};
  for (size_t i = 0; get && i < sizeof launchers / sizeof launchers[0]; i++) {
    int rank = number(get(launchers[i][0]));
    if (rank < 0)
      continue;
    r.rank = rank;
    r.local_rank = launchers[i][1] ? number(get(launchers[i][1])) : -1;
    int size = number(get(launchers[i][2]));
    r.world_size = size > 0 ? size : 0;
    break;
  }
  return r;
}
