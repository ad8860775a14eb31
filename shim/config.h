/* capguard's settings, read once from the environment at start-up. A bad
 * value is reported in one line and replaced by its default. */
#ifndef CAPGUARD_CONFIG_H
#define CAPGUARD_CONFIG_H

#include <stdbool.h>
#include <stdint.h>

typedef enum {
  CG_RUN_GUARD = 0,  /* report, record, replay, defer unloads (default) */
  CG_RUN_REPORT = 1, /* observe and report; the process behaves as without capguard */
  CG_RUN_OFF = 2,    /* pure pass-through */
} cg_run_mode;

typedef struct {
  cg_run_mode mode;
  const char *log_path;      /* CAPGUARD_LOG, NULL when unset */
  char prime_path[4096];     /* CAPGUARD_PRIME or the default, "" when none */
  uint64_t prime_max;        /* CAPGUARD_PRIME_MAX */
  int emulate_driver;        /* CAPGUARD_EMULATE_DRIVER (e.g. 12020), 0 when off */
  bool rescue;               /* CAPGUARD_RESCUE=1 */
  bool prime_readonly;       /* CAPGUARD_PRIME_READONLY=1: serve from the priming file, never write it */
  bool quiet;                /* CAPGUARD_QUIET=1: no stderr reports, log only */
  bool summary;              /* CAPGUARD_SUMMARY (default 1): the exit line on stderr */
} cg_config;

extern cg_config cg_cfg;

/* Parse the environment into cg_cfg; warnings go through cg_warn. */
void cg_config_load(void);
const char *cg_run_mode_name(cg_run_mode m);

/* Parsers, exposed for tests. Each returns 0 on success, -1 on a bad value. */
int cg_parse_run_mode(const char *s, cg_run_mode *out);
int cg_parse_driver_version(const char *s, int *out);
int cg_parse_bool(const char *s, bool *out);

#endif
