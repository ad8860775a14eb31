#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "capguard/prime_file.h"
#include "output.h"

cg_config cg_cfg;

/* A driver version as cuDriverGetVersion spells it: 1000*major + 10*minor,
 * e.g. 12020. Anything else is a typo worth saying so. */
int cg_parse_driver_version(const char *s, int *out) {
  char *end;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (errno || end == s || *end || v < 9000 || v > 99990 || v % 10)
    return -1;
  *out = (int)v;
  return 0;
}

int cg_parse_bool(const char *s, bool *out) {
  if (!strcmp(s, "1") || !strcmp(s, "yes") || !strcmp(s, "true") || !strcmp(s, "on")) {
    *out = true;
    return 0;
  }
  if (!strcmp(s, "0") || !strcmp(s, "no") || !strcmp(s, "false") || !strcmp(s, "off") || !*s) {
    *out = false;
    return 0;
  }
  return -1;
}

static void load_bool(const char *var, bool *out, bool dflt) {
  const char *s = getenv(var);
  *out = dflt;
  if (s && *s && cg_parse_bool(s, out)) {
    cg_warn("%s=%s is not understood (use 1 or 0); treating it as %d", var, s, (int)dflt);
    *out = dflt;
  }
}

void cg_config_load(void) {
  const char *s;
  cg_cfg.mode = CG_RUN_GUARD;
  if ((s = getenv("CAPGUARD_MODE")) && *s && !cg_run_mode_parse(s, &cg_cfg.mode)) {
    cg_warn("CAPGUARD_MODE=%s is not a mode (guard, report, off); using report", s);
    cg_cfg.mode = CG_RUN_REPORT;
  }
  s = getenv("CAPGUARD_LOG");
  cg_cfg.log_path = (s && *s) ? s : NULL;

  cg_cfg.prime_max = CG_PRIME_DEFAULT_MAX_BYTES;
  if ((s = getenv("CAPGUARD_PRIME_MAX")) && *s && cg_prime_parse_size(s, &cg_cfg.prime_max)) {
    cg_warn("CAPGUARD_PRIME_MAX=%s is not a size (e.g. 256M); using %llu MiB", s,
            (unsigned long long)(CG_PRIME_DEFAULT_MAX_BYTES >> 20));
    cg_cfg.prime_max = CG_PRIME_DEFAULT_MAX_BYTES;
  }
  /* CAPGUARD_PRIME, else the XDG cache, else ~/.cache: read here, like every variable */
  if (cg_prime_default_path(getenv("CAPGUARD_PRIME"), getenv("XDG_CACHE_HOME"), getenv("HOME"),
                            cg_cfg.prime_path, sizeof cg_cfg.prime_path))
    cg_cfg.prime_path[0] = 0;

  cg_cfg.emulate_driver = 0;
  if ((s = getenv("CAPGUARD_EMULATE_DRIVER")) && *s &&
      cg_parse_driver_version(s, &cg_cfg.emulate_driver)) {
    cg_warn("CAPGUARD_EMULATE_DRIVER=%s is not a driver version like 12020; not emulating", s);
    cg_cfg.emulate_driver = 0;
  }
  load_bool("CAPGUARD_RESCUE", &cg_cfg.rescue, false);
  load_bool("CAPGUARD_PRIME_READONLY", &cg_cfg.prime_readonly, false);
  load_bool("CAPGUARD_QUIET", &cg_cfg.quiet, false);
  load_bool("CAPGUARD_SUMMARY", &cg_cfg.summary, true);
  s = getenv("CAPGUARD_RUN");
  cg_cfg.run_id = (s && *s) ? s : NULL;
}
