#include "env_table.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capguard/env_value.h"
#include "capguard/log_name.h"
#include "capguard/log_schema.h"
#include "capguard/prime_file.h"
#include "cli.h"

static int check_mode(const char *v, char *why, size_t cap) {
  if (cg_run_mode_parse(v, &(cg_run_mode){0}))
    return 0;
  char modes[128];
  cg_word_list(&cg_run_modes, modes, sizeof modes);
  snprintf(why, cap, "is not a mode: %s", modes);
  return -1;
}

static int check_driver(const char *v, char *why, size_t cap) {
  if (cg_parse_driver_version(v, &(int){0}) == 0)
    return 0;
  snprintf(why, cap, "is not a driver version like 12020 (12.2)");
  return -1;
}

static int check_bool(const char *v, char *why, size_t cap) {
  if (cg_parse_bool(v, &(bool){0}) == 0)
    return 0;
  snprintf(why, cap, "is not 1 or 0 (yes/no, true/false, on/off)");
  return -1;
}

static int check_size(const char *v, char *why, size_t cap) {
  uint64_t n;
  if (cg_prime_parse_size(v, &n) == 0)
    return 0;
  snprintf(why, cap, "is not a size like 256M");
  return -1;
}

static int check_log(const char *v, char *why, size_t cap) {
  char what[256];
  if (cg_log_name_check(v, what, sizeof what) == 0)
    return 0;
  snprintf(why, cap, "is not a log name: it %s", what);
  return -1;
}

static int check_hang(const char *v, char *why, size_t cap) {
  if (cg_parse_hang_seconds(v, &(unsigned){0}) == 0)
    return 0;
  snprintf(why, cap, "is not a number of seconds from 1 to 86400");
  return -1;
}

/* The variables the shim reads (shim/base/config.c; the hang watch's in
 * shim/decide/hang_watch.c), and what it takes of each. */
const cg_env_var cg_env_vars[] = {
    {"CAPGUARD_MODE", "--mode", check_mode},
    {"CAPGUARD_LOG", "--log", check_log},
    {"CAPGUARD_PRIME", "--prime", NULL},
    {"CAPGUARD_PRIME_MAX", NULL, check_size},
    {"CAPGUARD_EMULATE_DRIVER", "--emulate-driver", check_driver},
    {"CAPGUARD_RESCUE", "--rescue", check_bool},
    {"CAPGUARD_PRIME_READONLY", NULL, check_bool},
    {"CAPGUARD_QUIET", "--quiet", check_bool},
    {"CAPGUARD_SUMMARY", NULL, check_bool},
    {"CAPGUARD_RUN", NULL, NULL},
    {"CAPGUARD_METRICS", "--metrics", NULL}, /* a directory, made or said when first written */
    {"CAPGUARD_STALE", "--stale", check_bool},
    {"CAPGUARD_HANG_S", NULL, check_hang},
    {"CAPGUARD_SERVING_AFTER", NULL, check_hang}, /* whole seconds, as CAPGUARD_HANG_S */
    /* set by capguard run for its processes: how the priming file was named,
     * and that run said already why it cannot be used */
    {"CAPGUARD_PRIME_OPTION", NULL, NULL},
    {"CAPGUARD_PRIME_SAID", NULL, NULL},
    /* set by capguard run: the file for the records of a process whose log
     * name is refused or whose log cannot be opened */
    {"CAPGUARD_LOG_FALLBACK", NULL, NULL},
};
const size_t cg_env_n_vars = sizeof cg_env_vars / sizeof cg_env_vars[0];

int cg_env_bad(const cg_env_var *row, char *line, size_t cap) {
  const char *v = getenv(row->name);
  char why[256];
  /* an empty value is the default for every variable, as in the shim */
  if (!v || !*v || !row->check || row->check(v, why, sizeof why) == 0)
    return 0;
  char shown[256];
  snprintf(line, cap, "%s=%s %s", row->name, cg_printable(v, shown, sizeof shown), why);
  return -1;
}

bool cg_env_true(const char *name) {
  const char *v = getenv(name);
  bool on = false;
  return v && cg_parse_bool(v, &on) == 0 && on;
}
