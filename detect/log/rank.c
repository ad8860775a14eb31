#include "capguard/rank.h"

#include <stdio.h>
#include <string.h>

/* A decimal in [0, 1<<30), the whole string; -1 otherwise (unset, empty,
 * a sign, junk, too large): a rank variable set to something else is not a
 * rank. */
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

/* The first thing wrong with a launcher's value, said once in why. */
static void say(char *why, size_t cap, const char *fmt, const char *a, const char *b, const char *c) {
  if (why && cap && !why[0])
    snprintf(why, cap, fmt, a, b, c);
}

cg_rank_info cg_rank_from_env(const char *(*get)(const char *name), char *why, size_t cap) {
  /* The innermost launcher first (docs/fleet.md, "Ranks"): torchrun's RANK
   * when torch's elastic agent set it (TORCHELASTIC_RUN_ID), then the MPI
   * launchers' and Slurm's own variables, then a plain RANK, which a shell or
   * an outer job may have left stale. */
  /* Arrays, not pointers ("" for none): a table of pointers is relocated
   * at every start-up of every process the shim is in. */
  static const char launchers[][4][32] = {
      {"RANK", "LOCAL_RANK", "WORLD_SIZE", "TORCHELASTIC_RUN_ID"},
      {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_SIZE", ""},
      {"PMI_RANK", "", "PMI_SIZE", ""},
      {"PMIX_RANK", "", "", ""},
      {"SLURM_PROCID", "SLURM_LOCALID", "SLURM_NTASKS", ""},
      {"RANK", "LOCAL_RANK", "WORLD_SIZE", ""},
  };
  cg_rank_info r = {-1, -1, 0};
  if (why && cap)
    why[0] = 0;
  for (size_t i = 0; get && i < sizeof launchers / sizeof launchers[0]; i++) {
    const char(*l)[32] = launchers[i];
    if (l[3][0] && !get(l[3]))
      continue;
    const char *v = get(l[0]);
    if (!v)
      continue;
    int rank = number(v);
    if (rank < 0) {
      say(why, cap, "%s='%.40s' is not a rank (a whole number from 0)%s", l[0], v, "");
      continue;
    }
    const char *sv = l[2][0] ? get(l[2]) : NULL;
    int size = number(sv);
    if (sv && size <= 0)
      say(why, cap, "%s='%.40s' is not a world size (a whole number from 1)%s", l[2], sv, "");
    if (size > 0 && rank >= size) {
      char n[16];
      snprintf(n, sizeof n, "%d", size);
      say(why, cap, "%s='%.40s' is not a rank of a world of %s", l[0], v, n);
      continue;
    }
    r.rank = rank;
    r.local_rank = l[1][0] ? number(get(l[1])) : -1;
    r.world_size = size > 0 ? size : 0;
    break;
  }
  return r;
}
