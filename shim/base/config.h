/* capguard's settings, read once from the environment at start-up. A bad
 * value is reported in one line and replaced by its default: an unknown
 * CAPGUARD_MODE keeps guard (protection stays on), an unusable CAPGUARD_LOG
 * is said at start-up and reports go to stderr only. Each such line is said
 * once per process, and a child process with the same settings stays quiet
 * (config.c). capguard run refuses both before it starts the command. */
#ifndef CAPGUARD_CONFIG_H
#define CAPGUARD_CONFIG_H

#include <stdbool.h>
#include <stdint.h>

#include "capguard/log_schema.h" /* cg_run_mode: guard, report, off, and their names */
#include "capguard/rank.h"

typedef struct {
  cg_run_mode mode;
  const char *log_path;      /* CAPGUARD_LOG, NULL when unset */
  const char *log_fallback;  /* CAPGUARD_LOG_FALLBACK (capguard run's), NULL when unset */
  char prime_path[4096];     /* CAPGUARD_PRIME or the default, "" when none */
  uint64_t prime_max;        /* CAPGUARD_PRIME_MAX */
  int emulate_driver;        /* CAPGUARD_EMULATE_DRIVER (e.g. 12020), 0 when off */
  bool rescue;               /* CAPGUARD_RESCUE=1 */
  bool prime_readonly;       /* CAPGUARD_PRIME_READONLY=1: serve from the priming file, never write it */
  bool quiet;                /* CAPGUARD_QUIET=1: no stderr reports, log only */
  bool summary;              /* CAPGUARD_SUMMARY (default 1): the exit line on stderr */
  bool stale;                /* CAPGUARD_STALE=1: memory a live graph exec reads, freed (docs/stale.md) */
  const char *run_id;        /* CAPGUARD_RUN: capguard run's id for its processes, NULL when unset */
  const char *metrics_dir;   /* CAPGUARD_METRICS: the metrics file's directory, NULL when unset */
  cg_rank_info rank;         /* the launcher's rank variables (RANK, SLURM_PROCID...) */
  const char *hang_s;        /* CAPGUARD_HANG_S as set (decide/hang/hang_watch.c parses it), NULL when unset */
  const char *serving_after; /* CAPGUARD_SERVING_AFTER as set (decide/serving/serving.c parses it), NULL when unset */
  /* Set by capguard run, which knows how the file was chosen: */
  bool prime_option;         /* CAPGUARD_PRIME_OPTION=--prime: the user named it with --prime */
  bool prime_said;           /* CAPGUARD_PRIME_SAID=1: run said before the start why the file
                                cannot be used; each process need not say it again */
  bool secure;               /* AT_SECURE (set-user-ID...): nothing above was read from the
                                environment, every setting is its default, no file written */
} cg_config;

extern cg_config cg_cfg;

/* Parse the environment into cg_cfg; warnings go through cg_warn. */
void cg_config_load(void);

/* The values' parsers are capguard/env_value.h's, shared with the command's
 * table of the variables (tools/base/env_table.c): every variable read here
 * is a row there, and the cli-env-agree test holds the two to it. */

#endif
